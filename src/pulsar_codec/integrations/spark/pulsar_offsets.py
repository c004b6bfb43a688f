"""Offsets of the ``format("pulsar")`` source: message ids, the broker's latest ids, bounded reads.

An offset is one topic-partition's position: the Base64 text of a serialized Pulsar message id
(``MessageId.serialize()``, what the ``message_id`` column holds as bytes). A source offset is a
JSON object of them, one per topic-partition (the partition's own topic name, such as
``persistent://public/default/orders-partition-0``).

Ordering and bounds
-------------------
Positions and the broker's latest ids are those of :mod:`pulsar_codec.pulsar.positions` (a message
id without a batch index stands for its whole entry; an offset this source computes is one). A
range ``(start, end]`` holds the messages after ``start`` up to ``end`` included: an offset names
the last message already delivered. ``earliest`` is the id before the first message
(``MessageId.earliest``). Entry ids are contiguous within a ledger, which lets :func:`plan_ends`
bound a micro-batch by entries without reading the topic.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from ...pulsar.positions import (
    PROBE_MS,
    WHOLE_ENTRY,
    BoundedReader,
    Position,
    ends_at,
    entry_batch_size,
    first_message,
    last_message_id,
    last_message_ids,
    position,
)

__all__ = [
    "EARLIEST",
    "LATEST",
    "Position",
    "broker_calls",
    "decode_offset",
    "encode_offset",
    "last_message_id",
    "last_message_ids",
    "plan_ends",
    "position",
    "entry_batch_size",
    "read_range",
    "shared_client",
    "split_partition",
]

EARLIEST = "earliest"
LATEST = "latest"


def _sdk() -> tuple[Any, Any]:
    from ...pulsar._sdk import native, pulsar

    return native, pulsar


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


def broker_calls(service_url: str, timeout_ms: int) -> contextlib.AbstractContextManager[None]:
    """:func:`pulsar_codec.pulsar._sdk.broker_calls` (imported when used: pulsar-client is optional)."""
    from ...pulsar._sdk import broker_calls as calls

    return calls(service_url, timeout_ms, "the option timeout_ms sets the wait")


def shared_client(service_url: str, timeout_ms: int) -> Any:
    """This process's client for ``service_url``: executors reuse one across tasks (a client holds
    connections and I/O threads; it lives as long as the Python worker)."""
    key = (service_url, timeout_ms)
    with _LOCK:
        found = _CLIENTS.get(key)
        if found is None:
            found = _CLIENTS[key] = new_client(service_url, timeout_ms)
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
        first = s_entry if s_batch != WHOLE_ENTRY else s_entry + 1  # a half-read batch entry counts
        return s_ledger, first, l_entry - first + 1
    msg = first_message(client, topic, start, PROBE_MS * 20)
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
        fewer, and the next micro-batch continues in the next ledger). No range ends past the
        partition's last id.

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
            end = native.MessageId(int(lasts[topic].partition()), ledger, first + k - 1, -1)
            # never past the broker's last id: a range ending there would wait for messages
            # that do not exist yet, and the next one start after them (the first pending
            # message unread within its wait leaves the start's ledger and entry unknown)
            ends[topic] = end if position(end) <= position(lasts[topic]) else lasts[topic]
    return ends


# -- bounded reads on the executors ------------------------------------------------------------


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
    ``end`` or, for a whole-entry end, with the last message of that entry
    (:func:`~pulsar_codec.pulsar.positions.ends_at`). A message at or before one already read (a
    broker that rewinds a reader delivers part of a partition again, as pulsar-lite does on long
    topics) is dropped. Stalls and ends the broker no longer has are those of
    :class:`~pulsar_codec.pulsar.positions.BoundedReader`.

    Raises
    ------
    TimeoutError
        No message arrived within ``timeout_ms`` on three readers in a row although the broker
        reported more.
    """
    from ...pulsar.reader import _Columns

    start_id = decode_offset(start)
    start_at, end_at = position(start_id), position(decode_offset(end))
    if end_at <= start_at:
        return
    inclusive = start_at[2] != WHOLE_ENTRY and start_at[0] >= 0
    reader = BoundedReader(client, topic, start_id, inclusive=inclusive, timeout_ms=timeout_ms)
    columns = _Columns(key_encoding)
    last_at = start_at
    try:
        while (msg := reader.next()) is not None:
            message_id = msg.message_id()
            at = position(message_id)
            if at <= last_at:
                continue
            if at > end_at:
                break
            last_at = at
            reader.accepted(message_id)
            columns.add(msg)
            if len(columns) >= batch_size:
                yield columns.flush()
            if ends_at(message_id, end_at):
                break
        if len(columns):
            yield columns.flush()
    finally:
        reader.close()
