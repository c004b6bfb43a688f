"""Offsets of the ``format("pulsar")`` source: message ids, the broker's latest ids, bounded reads.

An offset is one topic-partition's position: the Base64 text of a serialized Pulsar message id
(``MessageId.serialize()``, what the ``message_id`` column holds as bytes). A source offset is a
JSON object of them, one per topic-partition (the partition's own topic name, such as
``persistent://public/default/orders-partition-0``).

Ordering and bounds
-------------------
Positions compare by ``(ledger, entry, batch index)``. A message id without a batch index (``-1``:
a message sent without batching, the broker's last id, an offset this source computed) stands for
the *whole entry*, so it sorts after every message of a batched entry. A range ``(start, end]``
holds the messages after ``start`` up to ``end`` included: an offset names the last message
already delivered. ``earliest`` is the id before the first message (``MessageId.earliest``).

What the Python client offers
-----------------------------
The latest id of a partition comes from the broker (``Consumer.get_last_message_id``) through a
short-lived subscription that is removed again; no message is read for it. A broker that cannot
answer for a partition without messages (pulsar-lite replies with an error) is taken at its word
only after a short read finds nothing. Entry ids are contiguous within a ledger, which lets
:func:`plan_ends` bound a micro-batch by entries without reading the topic.
"""

from __future__ import annotations

import base64
import binascii
import threading
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

__all__ = [
    "EARLIEST",
    "LATEST",
    "Position",
    "decode_offset",
    "encode_offset",
    "last_message_id",
    "plan_ends",
    "position",
    "entry_batch_size",
    "read_range",
    "shared_client",
    "split_partition",
]

EARLIEST = "earliest"
LATEST = "latest"

# a batch index above any real one: a message id without a batch index stands for its whole entry
_WHOLE_ENTRY = 1 << 62
_PROBE_MS = 500
_REOPENS = 2  # readers reopened after a stall before a bounded read gives up

Position = tuple[int, int, int]
"""``(ledger, entry, batch index)`` of a message id, the whole-entry index for ``-1``."""


def _sdk() -> tuple[Any, Any]:
    from ...pulsar._sdk import native, pulsar

    return native, pulsar


def position(message_id: Any) -> Position:
    """The order of a ``_pulsar.MessageId`` among messages (see the module notes)."""
    batch = int(message_id.batch_index())
    return int(message_id.ledger_id()), int(message_id.entry_id()), batch if batch >= 0 else _WHOLE_ENTRY


def encode_offset(message_id: Any) -> str:
    """The offset text of a ``_pulsar.MessageId`` (Base64 of its serialized form)."""
    return base64.b64encode(message_id.serialize()).decode("ascii")


def decode_offset(text: str) -> Any:
    """The ``_pulsar.MessageId`` of an offset text (or of ``"earliest"``).

    Raises
    ------
    ValueError
        ``text`` is neither ``"earliest"`` nor the Base64 text of a serialized message id.
    """
    native, _ = _sdk()
    if text == EARLIEST:
        return native.MessageId.earliest
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
        return native.MessageId.deserialize(raw)
    except (binascii.Error, UnicodeEncodeError, ValueError, RuntimeError) as exc:
        raise ValueError(f"not a message id offset (Base64 of MessageId.serialize()): {text!r} ({exc})") from None


def split_partition(topic: str) -> tuple[str, int]:
    """``(topic, partition index)`` of a partition's topic name; ``(topic, -1)`` when not a partition."""
    stem, sep, index = topic.rpartition("-partition-")
    if sep and index.isdigit():
        return stem, int(index)
    return topic, -1


# -- clients ------------------------------------------------------------------------------------

_CLIENTS: dict[tuple[str, int], Any] = {}
_LOCK = threading.Lock()


def new_client(service_url: str, timeout_ms: int) -> Any:
    """A ``pulsar.Client`` whose connection attempts and operations give up after ``timeout_ms``."""
    native, pulsar = _sdk()
    return pulsar.Client(
        service_url,
        operation_timeout_seconds=max(1, -(-timeout_ms // 1000)),
        connection_timeout_ms=timeout_ms,
        logger=pulsar.ConsoleLogger(native.LoggerLevel.Warn),
    )


def shared_client(service_url: str, timeout_ms: int) -> Any:
    """This process's client for ``service_url``: executors reuse one across tasks (a client holds
    connections and I/O threads; it lives as long as the Python worker)."""
    key = (service_url, timeout_ms)
    with _LOCK:
        found = _CLIENTS.get(key)
        if found is None:
            found = _CLIENTS[key] = new_client(service_url, timeout_ms)
        return found


# -- the broker's latest ids --------------------------------------------------------------------


def _first_message(client: Any, topic: str, start: Any, timeout_ms: int) -> Any:
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

    Asked of the broker through a subscription made for the question and removed right after.
    """
    native, pulsar = _sdk()
    consumer = client.subscribe(topic, f"pulsar-codec-offsets-{uuid.uuid4().hex}", receiver_queue_size=1)
    try:
        found = consumer.get_last_message_id()
    except pulsar.UnknownError:
        # pulsar-lite answers "Topic has no messages" with an error: believe it once a read agrees
        if _first_message(client, topic, native.MessageId.earliest, _PROBE_MS) is not None:
            raise
        found = native.MessageId.earliest
    finally:
        try:
            consumer.unsubscribe()
        except pulsar.PulsarException:
            consumer.close()
    if int(found.entry_id()) < 0:  # an empty ledger: no message yet
        return native.MessageId.earliest
    return found


# -- admission control --------------------------------------------------------------------------


def _pending(client: Any, topic: str, start: Any, last: Any) -> tuple[int, int, int | None]:
    """``(ledger, first entry, entries available or None when unknown)`` after ``start``.

    Within one ledger entry ids are contiguous, so counting needs no read. When the start lies in
    an older ledger (or is ``earliest``), the first pending message is read to find its ledger and
    entry (the one read of this module, and only under a read limit)."""
    s_ledger, s_entry, s_batch = position(start)
    l_ledger, l_entry, _ = position(last)
    if s_ledger == l_ledger and s_ledger >= 0:
        first = s_entry if s_batch != _WHOLE_ENTRY else s_entry + 1  # a half-read batch entry counts
        return s_ledger, first, l_entry - first + 1
    msg = _first_message(client, topic, start, _PROBE_MS * 20)
    if msg is None:
        return l_ledger, l_entry, None
    f_ledger, f_entry, _ = position(msg.message_id())
    if f_ledger == l_ledger:
        return f_ledger, f_entry, l_entry - f_entry + 1
    return f_ledger, f_entry, None


def plan_ends(
    client: Any, starts: Mapping[str, Any], lasts: Mapping[str, Any], max_entries: int | None
) -> dict[str, Any]:
    """The end message id of every partition for one micro-batch.

    Parameters
    ----------
    client : pulsar.Client
    starts, lasts : mapping of partition topic -> ``_pulsar.MessageId``
        Where each partition's range starts (exclusive) and the broker's last id.
    max_entries : int or None
        At most this many entries in all (None: no limit, every range ends at its last id). The
        budget is shared out evenly among the partitions with pending entries; a partition's
        range then ends ``k`` entries after its start. A batched entry counts once, whatever its
        number of messages. In a ledger older than the last one the number of entries is not
        known: its range ends ``k`` entries on, possibly past the ledger's end (then it reads
        fewer, and the next micro-batch continues in the next ledger).

    Returns
    -------
    dict of partition topic -> ``_pulsar.MessageId``
        The start itself for a partition with nothing to read.
    """
    ends: dict[str, Any] = {}
    todo: dict[str, tuple[int, int, int | None]] = {}
    for topic, last in lasts.items():
        start = starts[topic]
        if position(last) <= position(start):
            ends[topic] = start
        elif max_entries is None:
            ends[topic] = last
        else:
            todo[topic] = _pending(client, topic, start, last)
    if max_entries is None or not todo:
        return ends
    grant = dict.fromkeys(todo, 0)
    budget = max_entries
    while budget > 0:
        open_topics = [t for t, (_, _, n) in todo.items() if n is None or grant[t] < n]
        if not open_topics:
            break
        share = max(1, budget // len(open_topics))
        for topic in open_topics:
            n = todo[topic][2]
            take = min(share, budget, share if n is None else n - grant[topic])
            grant[topic] += take
            budget -= take
            if budget == 0:
                break
    native, _ = _sdk()
    for topic, (ledger, first, available) in todo.items():
        k = grant[topic]
        if k == 0:
            ends[topic] = starts[topic]
        elif available is not None and k >= available:
            ends[topic] = lasts[topic]
        else:
            ends[topic] = native.MessageId(int(lasts[topic].partition()), ledger, first + k - 1, -1)
    return ends


# -- bounded reads on the executors ------------------------------------------------------------


def entry_batch_size(message_id: Any) -> int:
    """The number of messages in the entry of a batched message id (0 when not batched).

    The Python client does not expose it, but a received message's serialized id carries it
    (``MessageIdData.batch_size``, field 6): it tells a reader that the last message of an entry
    has been read without asking the broker."""
    raw = message_id.serialize()
    i, n = 0, len(raw)
    while i < n:
        key, i = _varint(raw, i)
        field, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, i = _varint(raw, i)
            if field == 6:
                return value
        elif wire_type == 2:
            length, i = _varint(raw, i)
            i += length
        else:  # not written by any client: no batch size to find
            return 0
    return 0


def _varint(raw: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while i < len(raw):
        byte = raw[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i
    return value, i


def _ends_range(message_id: Any, at: Position, end_at: Position) -> bool:
    """True if ``message_id`` (at ``at``) is the last message of the range ending at ``end_at``."""
    if at == end_at:
        return True
    if end_at[2] != _WHOLE_ENTRY or at[:2] != end_at[:2]:
        return False
    return at[2] == entry_batch_size(message_id) - 1  # the last message of the end entry


def _has_more(reader: Any) -> bool:
    _, pulsar = _sdk()
    try:
        return bool(reader.has_message_available())
    except pulsar.UnknownError:  # pulsar-lite's answer for a partition without messages
        return False


def read_range(
    client: Any,
    topic: str,
    start: str,
    end: str,
    *,
    batch_size: int,
    timeout_ms: int,
    key_encoding: str = "raw",
) -> Iterator[pa.RecordBatch]:
    """The messages of one partition in ``(start, end]`` as batches of raw messages
    (:data:`pulsar_codec.pulsar.MESSAGE_SCHEMA`), each once and in order.

    The reader starts at ``start``: after it for a whole-entry id, at it (then skipped) for a
    message inside a batch, whose rest must still be read. The read ends with the message at
    ``end`` or, for a whole-entry end, with the last message of that entry (the batch size in the
    message's id says which one), so it never depends on ``has_message_available``, whose answer
    the C++ client can get wrong inside a batched entry. A message at or before one already read
    (a broker that rewinds a reader delivers part of a partition again, as pulsar-lite does on long
    topics) is dropped. A reader that stalls while the broker still reports messages is reopened
    after the last message read, twice; when the broker has nothing more (the range's end was
    removed by retention) the read ends with what was there.

    Raises
    ------
    TimeoutError
        Messages the broker reported available did not arrive within ``timeout_ms``, three
        times in a row.
    """
    from ...pulsar.reader import _Columns

    native, pulsar = _sdk()
    start_id = decode_offset(start)
    start_at, end_at = position(start_id), position(decode_offset(end))
    if end_at <= start_at:
        return
    inclusive = start_at[2] != _WHOLE_ENTRY and start_at[0] >= 0
    reader = client.create_reader(topic, start_id, start_message_id_inclusive=inclusive)
    columns = _Columns(key_encoding)
    last_at, stalls = start_at, 0
    last_id = None
    try:
        while True:
            try:
                msg = reader.read_next(timeout_ms)
            except pulsar.Timeout:
                if not _has_more(reader):
                    break
                stalls += 1
                if stalls > _REOPENS:
                    raise TimeoutError(
                        f"no message from {topic} within {timeout_ms} ms although the broker reported one"
                        f" available ({_REOPENS} readers reopened)"
                    ) from None
                reader.close()
                resume = start_id if last_id is None else last_id
                reader = client.create_reader(topic, resume, start_message_id_inclusive=True)
                continue
            message_id = msg.message_id()
            at = position(message_id)
            if at <= last_at:
                continue
            if at > end_at:
                break
            last_at, last_id, stalls = at, message_id, 0
            columns.add(msg)
            if len(columns) >= batch_size:
                yield columns.flush()
            if _ends_range(message_id, at, end_at):
                break
        if len(columns):
            yield columns.flush()
    finally:
        reader.close()
