"""Long topics read once: the readers drop messages a broker delivers again.

pulsar-lite at times rewinds a reader of a long topic (a hundred batch entries and more) to an
earlier entry, so the same messages arrive twice; ``read_batches`` (``pulsar-codec dump``) and the
``format("pulsar")`` source's ``read_range`` must still give every message exactly once, in order.
The rewind does not happen on every read, so each reader reads the topic several times.
"""

from __future__ import annotations

import os
import uuid

import pytest

pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")

import pulsar

from pulsar_codec.cli._broker import produce
from pulsar_codec.pulsar import read_batches

pytest_plugins = ["pulsar_fixtures"]
pytestmark = pytest.mark.slow

MESSAGES = 100_000


@pytest.fixture(scope="module")
def long_topic(pulsar_broker):
    """A topic of MESSAGES batched messages (about 120 entries); their payloads in order."""
    topic = f"persistent://public/default/long-{uuid.uuid4().hex[:8]}"
    payloads = [i.to_bytes(4, "big") + os.urandom(140) for i in range(MESSAGES)]
    assert produce(pulsar_broker.url, topic, payloads) == MESSAGES
    return topic, payloads


def _ids(message_ids):
    out = []
    for raw in message_ids:
        m = pulsar.MessageId.deserialize(raw)
        out.append((m.ledger_id(), m.entry_id(), m.batch_index()))
    return out


def test_dump_reader_gives_each_message_once(pulsar_broker, long_topic):
    topic, payloads = long_topic
    for _ in range(3):
        batches = list(read_batches(pulsar_broker.url, topic, batch_size=25_000))
        read = [p for b in batches for p in b.column("payload").to_pylist()]
        ids = _ids(m for b in batches for m in b.column("message_id").to_pylist())
        assert len(read) == MESSAGES and read == payloads
        assert ids == sorted(set(ids))


def test_source_ranges_give_each_message_once(pulsar_broker, pulsar_client, long_topic):
    from pulsar_codec.integrations.spark.pulsar_offsets import EARLIEST, encode_offset, last_message_id, read_range

    topic, payloads = long_topic
    end = encode_offset(last_message_id(pulsar_client, topic))
    for _ in range(3):
        batches = list(read_range(pulsar_client, topic, EARLIEST, end, batch_size=25_000, timeout_ms=10_000))
        read = [p for b in batches for p in b.column("payload").to_pylist()]
        ids = _ids(m for b in batches for m in b.column("message_id").to_pylist())
        assert len(read) == MESSAGES and read == payloads
        assert ids == sorted(set(ids))


def test_produce_sends_a_null_payload_as_a_tombstone(pulsar_broker, pulsar_topic):
    """The helper the demo and the tests produce with: None is a null-value message, not b""."""
    assert produce(pulsar_broker.url, pulsar_topic, [b"a", None, b""]) == 3
    payloads = [
        p for batch in read_batches(pulsar_broker.url, pulsar_topic) for p in batch.column("payload").to_pylist()
    ]
    assert payloads == [b"a", None, b""]
