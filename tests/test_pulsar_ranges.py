"""Bounded reads on a pulsar-lite broker: the ``format("pulsar")`` source's ``read_range`` and the
dump reader's ``read_batches``.

A range ``(start, end]`` (for the dump reader: up to each partition's last message) must give each of its messages once, in order, whatever the batching of
the entries, without trusting ``has_message_available`` (which the C++ client can answer "no"
inside a batched entry: a CI run read 1 of a 300-message entry that way), and survive a reader
that stalls.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")

import _pulsar
import pulsar

from pulsar_codec.cli._broker import produce
from pulsar_codec.integrations.spark.pulsar_offsets import (
    EARLIEST,
    encode_offset,
    entry_batch_size,
    last_message_id,
    read_range,
)
from pulsar_codec.pulsar import read_batches

pytest_plugins = ["pulsar_fixtures"]

MESSAGES = 300


def _payloads(n: int = MESSAGES) -> list[bytes]:
    return [b"m%04d" % i for i in range(n)]


def _read(client, topic, start, end, **kw):
    kw.setdefault("timeout_ms", 5000)
    batches = list(read_range(client, topic, start, end, batch_size=kw.pop("batch_size", 64), **kw))
    return [p for b in batches for p in b.column("payload").to_pylist()], [
        m for b in batches for m in b.column("message_id").to_pylist()
    ]


def _all_ids(client, topic):
    reader = client.create_reader(topic, _pulsar.MessageId.earliest)
    try:
        return [reader.read_next(5000).message_id() for _ in range(MESSAGES)]
    finally:
        reader.close()


class _Reader:
    """A reader whose ``has_message_available`` always says "no", and whose ``read_next`` can be
    made to time out a given number of times before the real one answers."""

    def __init__(self, real, log):
        self.real, self.log = real, log

    def read_next(self, timeout_ms):
        if self.log["before_stall"] > 0:
            self.log["before_stall"] -= 1
        elif self.log["timeouts"] > 0:
            self.log["timeouts"] -= 1
            raise pulsar.Timeout("stalled (test)")
        msg = self.real.read_next(timeout_ms)
        self.log["last"] = msg.message_id()
        return msg

    def has_message_available(self):
        self.log["asked"] += 1
        if self.log["available"] == "early no":  # the real answer, but "no" inside a batched entry
            last = self.log.get("last")
            if last is not None and 0 <= last.batch_index() < entry_batch_size(last) - 1:
                return False
            return self.real.has_message_available()
        return self.log["available"]

    def close(self):
        self.real.close()


class _Client:
    def __init__(self, real, timeouts=0, available=False, before_stall=0):
        self.real = real
        self.log = {
            "before_stall": before_stall,
            "timeouts": timeouts,
            "asked": 0,
            "available": available,
            "readers": 0,
        }

    def create_reader(self, *args, **kwargs):
        self.log["readers"] += 1
        return _Reader(self.real.create_reader(*args, **kwargs), self.log)

    def __getattr__(self, name):  # subscribe, get_topic_partitions: the real client's
        return getattr(self.real, name)


class _NoLastIds(_Client):
    """A client of a broker that cannot give a partition's last message id (as pulsar-lite for
    the partitions of a partitioned topic)."""

    def subscribe(self, *args, **kwargs):
        consumer = self.real.subscribe(*args, **kwargs)

        class Consumer:
            def get_last_message_id(self):
                raise _pulsar.OperationNotSupported("no last ids (test)")

            def unsubscribe(self):
                consumer.unsubscribe()

            def close(self):
                consumer.close()

        return Consumer()


class _FirstMessagesArriving(_Client):
    """A client of a broker that answered "no last id" while the partition was empty, then got its
    first messages: the first question fails the way pulsar-lite's does, the next ones are real."""

    def subscribe(self, *args, **kwargs):
        consumer = self.real.subscribe(*args, **kwargs)
        log = self.log

        class Consumer:
            def get_last_message_id(self):
                log["asked"] += 1
                if log["asked"] == 1:
                    raise pulsar.UnknownError("no last id for an empty partition (test)")
                return consumer.get_last_message_id()

            def unsubscribe(self):
                consumer.unsubscribe()

            def close(self):
                consumer.close()

        return Consumer()


@pytest.fixture
def batched_topic(pulsar_broker, pulsar_client, pulsar_topic):
    """A topic of MESSAGES messages sent with batching (a few entries of many messages)."""
    assert produce(pulsar_broker.url, pulsar_topic, _payloads()) == MESSAGES
    return pulsar_topic


def test_entry_batch_size_comes_from_the_serialized_id(pulsar_client, batched_topic, pulsar_topic):
    ids = _all_ids(pulsar_client, batched_topic)
    sizes = [entry_batch_size(m) for m in ids]
    by_entry: dict[tuple[int, int], list[int]] = {}
    for m in ids:
        by_entry.setdefault((m.ledger_id(), m.entry_id()), []).append(m.batch_index())
    assert sum(len(v) for v in by_entry.values()) == MESSAGES
    for m, size in zip(ids, sizes):
        assert size == len(by_entry[(m.ledger_id(), m.entry_id())])
    producer = pulsar_client.create_producer(pulsar_topic + "-plain", batching_enabled=False)
    plain = producer.send(b"x")
    producer.close()
    assert entry_batch_size(plain) == 0
    assert entry_batch_size(_pulsar.MessageId(0, 5, 7, -1)) == 0


def test_the_last_id_of_a_partition_getting_its_first_messages(pulsar_client, batched_topic):
    """The broker's error meant "empty" when asked, but the short read finds messages: ask again
    (a stream on an empty topic must not fail when its first messages arrive)."""
    fake = _FirstMessagesArriving(pulsar_client)
    last = last_message_id(fake, batched_topic)
    assert fake.log["asked"] == 2
    final = _all_ids(pulsar_client, batched_topic)[-1]
    assert (last.ledger_id(), last.entry_id()) == (final.ledger_id(), final.entry_id())


def test_whole_topic_without_has_message_available(pulsar_client, batched_topic):
    end = encode_offset(last_message_id(pulsar_client, batched_topic))
    fake = _Client(pulsar_client)
    payloads, ids = _read(fake, batched_topic, EARLIEST, end)
    assert payloads == _payloads()
    assert fake.log["asked"] == 0  # the end entry's last message ends the read
    assert len(set(ids)) == MESSAGES


@pytest.mark.parametrize(("first", "last"), [(0, 0), (0, 1), (3, 150), (41, 299), (298, 299), (150, 150)])
def test_ranges_inside_and_across_batched_entries(pulsar_client, batched_topic, first, last):
    ids = _all_ids(pulsar_client, batched_topic)
    start = encode_offset(ids[first - 1]) if first else EARLIEST
    payloads, _ = _read(_Client(pulsar_client), batched_topic, start, encode_offset(ids[last]))
    assert payloads == _payloads()[first : last + 1]


def test_a_whole_entry_end_takes_the_entire_entry(pulsar_client, batched_topic):
    ids = _all_ids(pulsar_client, batched_topic)
    first = ids[0]
    end = _pulsar.MessageId(first.partition(), first.ledger_id(), first.entry_id(), -1)
    in_entry = sum(1 for m in ids if (m.ledger_id(), m.entry_id()) == (first.ledger_id(), first.entry_id()))
    payloads, _ = _read(_Client(pulsar_client), batched_topic, EARLIEST, encode_offset(end))
    assert payloads == _payloads()[:in_entry]


@pytest.mark.parametrize("before_stall", [0, 1, 77])
def test_a_stalled_reader_is_reopened_after_the_last_message(pulsar_client, batched_topic, before_stall):
    end = encode_offset(last_message_id(pulsar_client, batched_topic))
    fake = _Client(pulsar_client, timeouts=2, available=True, before_stall=before_stall)
    payloads, _ = _read(fake, batched_topic, EARLIEST, end, timeout_ms=200)
    assert payloads == _payloads()
    assert fake.log["readers"] == 3


def test_a_reader_stalled_three_times_is_a_timeout(pulsar_client, batched_topic):
    end = encode_offset(last_message_id(pulsar_client, batched_topic))
    fake = _Client(pulsar_client, timeouts=3, available=True)
    with pytest.raises(TimeoutError, match="readers reopened"):
        _read(fake, batched_topic, EARLIEST, end, timeout_ms=200)


def test_an_end_the_broker_no_longer_has_ends_the_read(pulsar_client, batched_topic):
    last = last_message_id(pulsar_client, batched_topic)
    beyond = _pulsar.MessageId(last.partition(), last.ledger_id(), last.entry_id() + 5, -1)
    payloads, _ = _read(pulsar_client, batched_topic, EARLIEST, encode_offset(beyond), timeout_ms=500)
    assert payloads == _payloads()


def test_dump_reader_without_has_message_available(pulsar_client, batched_topic):
    fake = _Client(pulsar_client)
    batches = list(read_batches(fake, batched_topic, batch_size=64, timeout_ms=5000))
    assert [p for b in batches for p in b.column("payload").to_pylist()] == _payloads()
    assert fake.log["asked"] == 0


@pytest.mark.parametrize("before_stall", [0, 120])
def test_dump_reader_reopens_a_stalled_reader(pulsar_client, batched_topic, before_stall):
    fake = _Client(pulsar_client, timeouts=2, available=True, before_stall=before_stall)
    batches = list(read_batches(fake, batched_topic, batch_size=64, timeout_ms=200))
    assert [p for b in batches for p in b.column("payload").to_pylist()] == _payloads()
    assert fake.log["readers"] == 3
    with pytest.raises(TimeoutError, match="readers reopened"):
        list(read_batches(_Client(pulsar_client, timeouts=3, available=True), batched_topic, timeout_ms=200))


def test_dump_reader_from_the_last_message_reads_nothing(pulsar_client, batched_topic):
    ids = _all_ids(pulsar_client, batched_topic)
    fake = _Client(pulsar_client, timeouts=99)  # a read would time out: none is made
    assert list(read_batches(fake, batched_topic, start=ids[-1], timeout_ms=200)) == []
    assert list(read_batches(fake, batched_topic, start="latest", timeout_ms=200)) == []
    tail = list(read_batches(pulsar_client, batched_topic, start=ids[-1], start_inclusive=True))
    assert [p for b in tail for p in b.column("payload").to_pylist()] == _payloads()[-1:]


def test_dump_reader_without_last_ids_reads_whole_entries(pulsar_client, batched_topic):
    """Where the broker gives no last ids, has_message_available ends the read, but is not asked
    inside a batched entry: a client that answers "no" there loses nothing."""
    fake = _NoLastIds(pulsar_client, available="early no")
    batches = list(read_batches(fake, batched_topic, batch_size=64, timeout_ms=5000))
    assert [p for b in batches for p in b.column("payload").to_pylist()] == _payloads()
    assert fake.log["asked"] >= 1


def test_last_message_ids_asks_the_partitions_side_by_side(monkeypatch):
    """Each partition's last id is a round trip (and an empty pulsar-lite partition a short read):
    asked side by side, a micro-batch over many partitions waits for the slowest, not their sum.
    The answers keep the partitions' order; a partition's error is raised."""
    import threading

    from pulsar_codec.pulsar import positions

    together = threading.Barrier(5, timeout=30)  # broken unless all five are asked at once

    def meeting(client, partition):
        if partition == "bad":
            raise pulsar.ConnectError("no broker")
        if partition.startswith("t-"):
            together.wait()
        return f"last of {partition}"

    monkeypatch.setattr(positions, "last_message_id", meeting)
    names = [f"t-partition-{i}" for i in range(5)]
    assert positions.last_message_ids(None, names) == {n: f"last of {n}" for n in names}
    with pytest.raises(pulsar.ConnectError):
        positions.last_message_ids(None, ["a", "bad", "c"])
