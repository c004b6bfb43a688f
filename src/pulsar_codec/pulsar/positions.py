"""Where a message lies in a partition, where a partition ends, and when a bounded read is done.

Shared by the topic reader (:func:`pulsar_codec.pulsar.read_batches`, ``pulsar-codec dump``) and
the ``format("pulsar")`` Spark source, so both end their reads the same way.

Positions compare by ``(ledger, entry, batch index)``. A message id without a batch index (``-1``:
a message sent without batching, or the broker's last id) stands for its *whole entry*, so it sorts
after every message of a batched entry.

Bounded reads do not stop when ``Reader.has_message_available`` says "no": the C++ client can give
that answer inside a batched entry (its last-message id names the entry, the message read names a
batch index), which once cut a read to the first of 300 messages. They stop at the end message, or
for a whole-entry end at the entry's last message, which a received message's serialized id tells
(``MessageIdData.batch_size``; the Python client has no accessor for it). The broker is asked only
after a read times out, to tell a stalled reader from a partition that has nothing more.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = [
    "PROBE_MS",
    "BoundedReader",
    "REOPENS",
    "WHOLE_ENTRY",
    "Position",
    "entry_batch_size",
    "ends_at",
    "first_message",
    "has_more",
    "last_message_id",
    "last_message_ids",
    "position",
]

#: A batch index above any real one: a message id without one stands for its whole entry.
WHOLE_ENTRY = 1 << 62

Position = tuple[int, int, int]
"""``(ledger, entry, batch index)`` of a message id, :data:`WHOLE_ENTRY` for ``-1``."""

#: How long a short read waits to settle what a broker's error left open (an empty partition).
PROBE_MS = 500

#: How often :func:`last_message_id` asks a broker that answered with an error while the partition
#: got its first messages (each ask after a short read found one).
LAST_ID_ASKS = 3

#: At most this many partitions are asked for their last id at once (:func:`last_message_ids`).
LAST_ID_THREADS = 8

#: Readers reopened after a read times out, before the broker is asked whether it has more:
#: pulsar-lite at times stops dispatching to a reader of a long topic.
REOPENS = 2


def _sdk() -> tuple[Any, Any]:
    # imported when a broker is asked: positions alone work without pulsar-client (the Spark
    # source's options are checked on the driver before any client is needed)
    from ._sdk import native, pulsar

    return native, pulsar


def position(message_id: Any) -> Position:
    """The order of a ``native.MessageId`` among messages (see the module notes)."""
    batch = int(message_id.batch_index())
    return int(message_id.ledger_id()), int(message_id.entry_id()), batch if batch >= 0 else WHOLE_ENTRY


def _varint(raw: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while i < len(raw):
        byte = raw[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            break
    return value, i


def entry_batch_size(message_id: Any) -> int:
    """The number of messages in the entry of a received batched message (0 when not batched)."""
    raw = message_id.serialize()
    i = 0
    while i < len(raw):
        key, i = _varint(raw, i)
        field, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, i = _varint(raw, i)
            if field == 6:  # MessageIdData.batch_size
                return value
        elif wire_type == 2:  # ack_set (packed) and anything newer
            length, i = _varint(raw, i)
            i += length
        else:  # no client writes other wire types here
            return 0
    return 0


def ends_at(message_id: Any, end: Position) -> bool:
    """True if no message after ``message_id`` lies at or before ``end``: the message is ``end``
    itself, or past it, or the last message of ``end``'s entry when ``end`` is a whole entry."""
    at = position(message_id)
    if at >= end:
        return True
    if end[2] != WHOLE_ENTRY or at[:2] != end[:2]:
        return False
    return at[2] >= entry_batch_size(message_id) - 1


def has_more(reader: Any) -> bool:
    """After a read timed out: does the broker still hold messages for ``reader``? An error from
    the broker counts as "yes" (a stall, retried), so that no answer ever cuts a read short."""
    _, pulsar = _sdk()
    try:
        return bool(reader.has_message_available())
    except pulsar.PulsarException:
        return True


def first_message(client: Any, topic: str, start: Any, timeout_ms: int) -> Any:
    """The first message after ``start`` (exclusive), or None when none arrives within ``timeout_ms``."""
    _, pulsar = _sdk()
    reader = client.create_reader(topic, start, receiver_queue_size=1)
    try:
        return reader.read_next(timeout_ms)
    except pulsar.Timeout:
        return None
    finally:
        reader.close()


def last_message_id(client: Any, topic: str) -> Any:
    """The id of the last message of one partition (``MessageId.earliest`` when it has none).

    Asked of the broker through a subscription made for the question and removed right after; no
    message is read for it. A broker that cannot answer for a partition without messages
    (pulsar-lite replies with an error) is taken at its word only after a short read finds nothing;
    when that read finds a message (the partition's first ones arrived meanwhile), the broker is
    asked again, up to :data:`LAST_ID_ASKS` times in all.

    Raises
    ------
    pulsar.OperationNotSupported
        The broker says ``topic`` is itself partitioned (pulsar-lite says so of the partitions of
        a partitioned topic): its consumer would span partitions, which cannot answer, and the C++
        client can crash removing that subscription, so none is made.
    """
    native, pulsar = _sdk()
    if len(client.get_topic_partitions(topic)) > 1:
        raise pulsar.OperationNotSupported(f"{topic} is partitioned: ask for the last id of each partition")
    consumer = client.subscribe(topic, f"pulsar-codec-offsets-{uuid.uuid4().hex}", receiver_queue_size=1)
    try:
        for ask in range(1, LAST_ID_ASKS + 1):
            try:
                found = consumer.get_last_message_id()
                break
            except pulsar.UnknownError:
                if first_message(client, topic, native.MessageId.earliest, PROBE_MS) is None:
                    found = native.MessageId.earliest
                    break
                if ask == LAST_ID_ASKS:
                    raise
    finally:
        try:
            consumer.unsubscribe()
        except pulsar.PulsarException:
            consumer.close()
    if int(found.entry_id()) < 0:  # an empty ledger: no message yet
        return native.MessageId.earliest
    return found


def last_message_ids(client: Any, partitions: Sequence[str]) -> dict[str, Any]:
    """:func:`last_message_id` of each of ``partitions``, asked side by side (at most
    :data:`LAST_ID_THREADS` at once): each question is a round trip to the broker, and an empty
    partition on pulsar-lite costs a short read of :data:`PROBE_MS`, so a topic of many partitions
    asked one after the other makes every micro-batch wait their sum. The first error raised by
    any partition is raised (in the order of ``partitions``)."""
    names = list(dict.fromkeys(partitions))
    if len(names) <= 1:
        return {name: last_message_id(client, name) for name in names}
    with ThreadPoolExecutor(min(LAST_ID_THREADS, len(names)), thread_name_prefix="pulsar-codec-last-id") as pool:
        found = [pool.submit(last_message_id, client, name) for name in names]
        return {name: future.result() for name, future in zip(names, found)}


class BoundedReader:
    """A ``Reader`` for a bounded read that survives stalls: :meth:`next` gives the next message,
    or None once the broker has nothing more for it.

    A read that times out reopens the reader (at the last :meth:`accepted` message, else at the
    start; the caller drops what comes again), up to :data:`REOPENS` times without progress. Then the
    broker is asked: nothing more ends the read (a range whose end was removed by retention reads
    what is left), more is a ``TimeoutError``. Never does one answer of ``has_message_available``
    end a read on its own (see the module notes).
    """

    def __init__(self, client: Any, topic: str, start: Any, *, inclusive: bool, timeout_ms: int, **options: Any):
        self._client, self._topic, self._options = client, topic, options
        self._start, self._inclusive, self._timeout_ms = start, inclusive, timeout_ms
        self._resume: Any = None
        self._stalls = 0
        self.reopened = 0
        self.reader: Any = client.create_reader(topic, start, start_message_id_inclusive=inclusive, **options)

    def restart(self, start: Any, inclusive: bool = False) -> None:
        """Read from ``start`` with a new reader (and reopen there after a stall)."""
        self.close()
        self._start, self._inclusive, self._resume, self._stalls = start, inclusive, None, 0
        self.reader = self._client.create_reader(
            self._topic, start, start_message_id_inclusive=inclusive, **self._options
        )

    def accepted(self, message_id: Any = None) -> None:
        """The caller kept a message: the read made progress (stalls count from here again).
        With ``message_id``, a reader reopened after a stall starts there (included, so a batch's
        rest is read); without, at the start (a multi-partition reader has no single position)."""
        self._stalls = 0
        if message_id is not None:
            self._resume = message_id

    def next(self) -> Any:
        """The next message, or None when the broker has nothing more for this read.

        Messages delivered again after a reopen are the caller's to drop; only :meth:`accepted`
        resets the count of stalls, so a reader that keeps re-delivering what was read cannot
        loop forever.
        """
        _, pulsar = _sdk()
        while True:
            try:
                return self.reader.read_next(self._timeout_ms)
            except pulsar.Timeout:
                self._stalls += 1
            if self._stalls > REOPENS:
                if has_more(self.reader):
                    raise TimeoutError(
                        f"no message from {self._topic} within {self._timeout_ms} ms although the broker"
                        f" reported more ({REOPENS} readers reopened)"
                    )
                return None
            self.reader.close()
            self.reopened += 1
            if self._resume is None:
                start, inclusive = self._start, self._inclusive
            else:
                start, inclusive = self._resume, True
            self.reader = self._client.create_reader(
                self._topic, start, start_message_id_inclusive=inclusive, **self._options
            )

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None
