"""Read a Pulsar topic into Arrow: raw messages as RecordBatches, or straight into a Parquet file.

:func:`read_batches` walks a topic with the Python client's ``Reader`` and yields RecordBatches of
raw messages (:data:`MESSAGE_SCHEMA`); :func:`dump_to_parquet` writes them to a Parquet file. The
payload column goes straight into :func:`pulsar_codec.wire.unframe`,
:func:`pulsar_codec.keyvalue.split_inline` (see :func:`keyvalue_columns`) or a decoder.

Needs ``pulsar-client`` (the ``pulsar`` extra). Brokers without a schema registry (``pulsar-lite``)
stamp no schema version; the ``schema_version`` column is null then.

Limits of the Python client, and what they mean here
----------------------------------------------------
* It reports an absent partition key as ``""``, so an empty key and a null key look the same: both
  read as null.
* It can neither see ``partition_key_b64_encoded`` nor ``null_partition_key``, so reading keys of
  Java SEPARATED-KeyValue producers needs to be told they are Base64 (``key_encoding``).
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .. import keyvalue as _kv
from ..keyvalue import KeyValueEncodingType
from ._sdk import broker_calls, check_key_encoding
from ._sdk import native as _pulsar
from ._sdk import pulsar as _pulsar_client
from .positions import (
    PROBE_MS,
    WHOLE_ENTRY,
    BoundedReader,
    Position,
    ends_at,
    entry_batch_size,
    last_message_ids,
    position,
)

__all__ = ["MESSAGE_SCHEMA", "read_batches", "dump_to_parquet", "keyvalue_columns"]

#: Arrow schema of the batches :func:`read_batches` yields.
MESSAGE_SCHEMA = pa.schema(
    [
        pa.field("payload", pa.binary()),  # null for a null-value (tombstone) message
        pa.field("key", pa.string()),  # the partition key as the client gives it; null when absent or empty
        pa.field("key_bytes", pa.binary()),  # the key's bytes, Base64-decoded with key_encoding="base64"
        pa.field("properties", pa.map_(pa.string(), pa.string()), nullable=False),
        pa.field("publish_time", pa.timestamp("ms", tz="UTC"), nullable=False),
        pa.field("event_time", pa.timestamp("ms", tz="UTC")),  # null when the producer set none (0)
        pa.field("message_id", pa.binary(), nullable=False),  # MessageId.serialize(); see MessageId.deserialize
        pa.field("topic", pa.string(), nullable=False),
        pa.field("schema_version", pa.int64()),  # broker-assigned schema version; null when absent
        pa.field("redelivery_count", pa.int32(), nullable=False),
    ]
)


class _Columns:
    """Column lists for one batch of messages."""

    payload: list[bytes | None]
    key: list[str | None]
    properties: list[list[tuple[str, str]]]
    publish: list[int]
    event: list[int | None]
    ids: list[bytes]
    topic: list[str]
    version: list[int | None]
    redelivery: list[int]

    def __init__(self, key_encoding: str) -> None:
        self.key_encoding = key_encoding
        self.clear()

    def clear(self) -> None:
        """Start a new batch."""
        self.payload = []
        self.key = []
        self.properties = []
        self.publish = []
        self.event = []
        self.ids = []
        self.topic = []
        self.version = []
        self.redelivery = []

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, msg: Any) -> None:
        """Append one message (``pulsar.Message`` or ``_pulsar.Message``)."""
        self.payload.append(None if msg.has_null_value() else msg.data())
        self.key.append(msg.partition_key() or None)
        props = msg.properties()
        self.properties.append(list(props.items()) if props else [])
        self.publish.append(msg.publish_timestamp())
        event = msg.event_timestamp()
        self.event.append(event if event else None)
        self.ids.append(msg.message_id().serialize())
        self.topic.append(msg.topic_name())
        raw = getattr(msg, "_message", None)  # the _pulsar.Message behind pulsar.Message
        version = raw.int_schema_version() if raw is not None and hasattr(raw, "int_schema_version") else -1
        self.version.append(None if version < 0 else version)
        self.redelivery.append(msg.redelivery_count())

    def flush(self) -> pa.RecordBatch:
        """The batch of the messages added since the last flush; starts a new one."""
        keys = pa.array(self.key, pa.string())
        if self.key_encoding == "base64":
            key_bytes = _kv.decode_partition_keys(keys, True)
        else:
            key_bytes = keys.cast(pa.binary())
        ts = pa.timestamp("ms", tz="UTC")
        batch = pa.RecordBatch.from_arrays(
            [
                pa.array(self.payload, pa.binary()),
                keys,
                key_bytes,
                pa.array(self.properties, MESSAGE_SCHEMA.field("properties").type),
                pa.array(self.publish, pa.int64()).cast(ts),
                pa.array(self.event, pa.int64()).cast(ts),
                pa.array(self.ids, pa.binary()),
                pa.array(self.topic, pa.string()),
                pa.array(self.version, pa.int64()),
                pa.array(self.redelivery, pa.int32()),
            ],
            schema=MESSAGE_SCHEMA,
        )
        self.clear()
        return batch


def _timestamp_ms(value: Any, what: str) -> int:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            raise ValueError(f"{what} datetime must be timezone-aware")
        return int(value.timestamp() * 1000)
    return int(value)


def _message_id(value: Any) -> Any:
    if isinstance(value, _pulsar_client.MessageId):
        return value._msg_id
    if isinstance(value, _pulsar.MessageId):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _pulsar.MessageId.deserialize(bytes(value))
    return None


def _start_position(start: Any) -> tuple[Any, int | None]:
    """``(message id to create the reader at, publish time to seek to or None)``."""
    if isinstance(start, str):
        if start == "earliest":
            return _pulsar.MessageId.earliest, None
        if start == "latest":
            return _pulsar.MessageId.latest, None
        raise ValueError(f"start must be 'earliest', 'latest', a message id, or a publish time; got {start!r}")
    msg_id = _message_id(start)
    if msg_id is not None:
        return msg_id, None
    if isinstance(start, (int, _dt.datetime)) and not isinstance(start, bool):
        return _pulsar.MessageId.earliest, _timestamp_ms(start, "start")
    raise TypeError(f"unsupported start position {type(start).__name__}")


class _End:
    """When to stop: at the end of the topic, after a message id, at a publish time, or never."""

    def __init__(self, end: Any) -> None:
        self.follow = end is None
        self.id = None
        self.time = None
        self.partitions = 1
        self._late: set[str] = set()
        if end is None or (isinstance(end, str) and end == "latest"):
            return
        msg_id = _message_id(end)
        if msg_id is not None:
            self.id = msg_id
        elif isinstance(end, (int, _dt.datetime)) and not isinstance(end, bool):
            self.time = _timestamp_ms(end, "end")
        else:
            raise ValueError(f"end must be 'latest', None, a message id or a publish time; got {end!r}")

    def past(self, msg: Any) -> bool:
        """True if ``msg`` lies past the end (after the end id, or at/after the end time): not returned."""
        if self.time is not None:
            if msg.publish_timestamp() < self.time:
                return False
            self._late.add(msg.topic_name())
            return True
        return self.id is not None and self.id < msg.message_id()

    def finished(self) -> bool:
        """After a message :meth:`past` the end: True if nothing later can be inside the range.

        Partitions are interleaved, so a time bound is done only once every partition has gone
        past it (or the topic ends); publish times are taken as ordered within a partition.
        """
        return self.time is None or len(self._late) >= self.partitions

    def reached(self, msg: Any) -> bool:
        """True if ``msg`` is the last message to return (the end id itself)."""
        return self.id is not None and not (msg.message_id() < self.id)


def _first_after_seek(reader: Any, timeout_ms: int) -> Any:
    """The first message after a seek by publish time, or None if none arrives.

    After such a seek the C++ client answers ``has_message_available`` from the subscription's
    mark-delete position in the broker's reply; brokers that omit it (pulsar-lite) get a false
    "no". pulsar-lite also sometimes stops dispatching after a seek that raced with the first
    delivery. So a "no" is confirmed with a short read, and None sends the caller to a scan.
    """
    try:
        available = reader.has_message_available()
    except _pulsar_client.UnknownError:
        available = False
    try:
        return reader.read_next(timeout_ms if available else min(timeout_ms, PROBE_MS))
    except _pulsar_client.Timeout:
        return None


def _last_positions(client: Any, partitions: list[str]) -> dict[str, Position] | None:
    """Where each partition ends now, or None when the broker cannot say (pulsar-lite does not
    answer for the partitions of a partitioned topic)."""
    try:
        return {name: position(found) for name, found in last_message_ids(client, partitions).items()}
    except _pulsar_client.OperationNotSupported:
        return None


def _next_while_available(reader: BoundedReader, timeout_ms: int, inside_entry: bool) -> Any:
    """The next message while ``has_message_available`` says there is one: the end of a read on a
    broker that cannot give last message ids. The question is not asked while the last message
    read is not the last of its batched entry (``inside_entry``), where the C++ client can answer
    "no" too early. An error for a partition without messages (pulsar-lite's answer) is settled
    with a short read."""
    if inside_entry:
        return reader.next()
    try:
        if not reader.reader.has_message_available():
            return None
    except _pulsar_client.UnknownError:
        try:
            return reader.reader.read_next(min(timeout_ms, PROBE_MS))
        except _pulsar_client.Timeout:
            return None
    return reader.next()


def _client_for(client_or_url: Any, client_options: dict[str, Any] | None, timeout_ms: int) -> tuple[Any, bool]:
    if isinstance(client_or_url, str):
        # the client's own defaults wait 30 s for an unreachable broker, retrying and logging each
        # attempt; a read bounded by timeout_ms gives up connecting in the same time
        options: dict[str, Any] = {
            "logger": _pulsar_client.ConsoleLogger(_pulsar.LoggerLevel.Warn),
            "operation_timeout_seconds": max(1, -(-timeout_ms // 1000)),
            "connection_timeout_ms": timeout_ms,
        }
        options.update(client_options or {})
        return _pulsar_client.Client(client_or_url, **options), True
    if client_options:
        raise TypeError("client_options apply only when a service URL is given")
    return client_or_url, False


def read_batches(
    client_or_url: Any,
    topic: str,
    *,
    batch_size: int = 10_000,
    start: Any = "earliest",
    end: Any = "latest",
    start_inclusive: bool = False,
    timeout_ms: int = 10_000,
    key_encoding: str = "raw",
    limit: int | None = None,
    receiver_queue_size: int = 1000,
    client_options: dict[str, Any] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Read a topic's raw messages as Arrow RecordBatches (schema :data:`MESSAGE_SCHEMA`).

    Parameters
    ----------
    client_or_url : pulsar.Client or str
        A client, or a service URL (``pulsar://host:6650``) for a client that is created here and
        closed when the iterator ends.
    topic : str
    batch_size : int
        Messages per batch (the last batch may be shorter).
    start : "earliest", "latest", message id, int or datetime
        Where to begin: a ``pulsar.MessageId`` / ``_pulsar.MessageId`` or its ``serialize()`` bytes
        (the ``message_id`` column), or a publish time (epoch milliseconds or an aware datetime):
        the reader seeks to the first message published at or after it. If no message arrives
        after that seek (nothing that late, or a broker whose seek is unreliable, as pulsar-lite's
        is), and always on partitioned topics, the topic is scanned from the beginning and
        earlier messages are skipped.
    end : "latest", None, message id, int or datetime
        ``"latest"``: stop at the last message each partition held when the read started (asked
        of the broker; messages published later are left for the next read). A message id: stop
        after that message. A publish time: only messages published before it, stopping once
        every partition has reached it. Bounded reads also stop at that end of the topic.
        ``None``: follow the topic forever, yielding a partial batch whenever ``timeout_ms``
        passes without a message.
    start_inclusive : bool
        With a message-id ``start``, include that message (Pulsar's default is to start after it).
    timeout_ms : int
        How long to wait for the next message of a bounded read (a reader that waits longer is
        reopened, see ``TimeoutError``), or the idle time before a partial batch (``end=None``). With a
        service URL it also bounds connecting and each broker operation (``connection_timeout_ms``
        and ``operation_timeout_seconds`` of the client, unless ``client_options`` set them), so an
        unreachable broker fails within about this time.
    key_encoding : {"raw", "base64"}
        How ``key_bytes`` is derived from the partition key: its UTF-8 bytes, or Base64-decoded
        (keys of Java SEPARATED-KeyValue producers and of :func:`send_keyvalue`). The Python
        client cannot see the ``partition_key_b64_encoded`` flag, hence the option.
    limit : int, optional
        Stop after this many messages.
    receiver_queue_size : int
        The reader's prefetch queue.
    client_options : dict, optional
        Keyword arguments for ``pulsar.Client`` when a URL is given (``logger`` defaults to the
        client's console logger at warning level).

    Yields
    ------
    pa.RecordBatch

    Raises
    ------
    TimeoutError
        A bounded read did not receive a message the broker reported as available, three times:
        a reader that stalls is reopened twice (pulsar-lite at times stops dispatching to a
        reader of a long topic), and messages delivered again are dropped.
    KeyValueFormatError
        ``key_encoding="base64"`` and a partition key is not Base64 (index = row in the batch).

    Notes
    -----
    A partitioned topic is read across all its partitions (the client's multi-topic reader): the
    ``topic`` column names the partition, and order is kept within a partition only. Message-id
    bounds name a position in one partition, so on partitioned topics bound reads by publish time.
    Publish times are stamped by producers, so time bounds assume their clocks roughly agree.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be None or >= 0, got {limit}")
    check_key_encoding(key_encoding)
    start_id, seek_time = _start_position(start)
    stop = _End(end)
    client, owned = _client_for(client_or_url, client_options, timeout_ms)
    url = client_or_url if isinstance(client_or_url, str) else "of the given client"
    with broker_calls(url, timeout_ms, "timeout_ms sets the wait"):
        yield from _read(
            client,
            owned,
            topic,
            batch_size,
            start_id,
            seek_time,
            stop,
            start_inclusive,
            timeout_ms,
            key_encoding,
            limit,
            receiver_queue_size,
        )


def _read(
    client: Any,
    owned: bool,
    topic: str,
    batch_size: int,
    start_id: Any,
    seek_time: int | None,
    stop: _End,
    start_inclusive: bool,
    timeout_ms: int,
    key_encoding: str,
    limit: int | None,
    receiver_queue_size: int,
) -> Iterator[pa.RecordBatch]:
    """The body of :func:`read_batches` (which turns a broker that does not answer into one
    :class:`~pulsar_codec.errors.BrokerUnreachableError`); closes ``client`` when ``owned``."""
    reader: BoundedReader | None = None
    try:
        partitions = list(client.get_topic_partitions(topic))
        stop.partitions = len(partitions)
        # a bounded read ends at each partition's last message when it starts, asked of the broker
        # (has_message_available can say "no" inside a batched entry: see positions)
        ends = None if stop.follow else _last_positions(client, partitions)
        done = set() if ends is None else {name for name, last in ends.items() if last[1] < 0}  # no messages
        if len(partitions) == 1 and ends and seek_time is None:
            first, last = position(start_id), ends[partitions[0]]
            if first > last or (first == last and not start_inclusive):
                done = set(partitions)
        if ends is not None and len(done) >= len(ends):
            return
        reader = BoundedReader(
            client,
            topic,
            start_id,
            inclusive=start_inclusive,
            timeout_ms=timeout_ms,
            receiver_queue_size=receiver_queue_size,
        )
        pending = None  # a message already read while positioning
        # brokers do not always honour a seek by time (pulsar-lite may ignore one past the last
        # message), so messages published before the start are also dropped here
        skip_before = seek_time
        # a seek by time on a multi-partition reader cannot be verified partition by partition:
        # there the publish-time filter alone positions the read
        if seek_time is not None and len(partitions) == 1:
            reader.reader.seek(seek_time)
            pending = _first_after_seek(reader.reader, timeout_ms)
            if pending is None:
                reader.restart(_pulsar.MessageId.earliest)
        columns = _Columns(key_encoding)
        count = 0
        # the last position read per partition: a message at or before it was delivered again
        # (pulsar-lite at times rewinds a reader to an earlier entry of a long topic) and is dropped
        last_read: dict[str, Position] = {}
        inside_entry = False  # the last message read is not the last of its batched entry
        while limit is None or count < limit:
            if pending is not None:
                msg, pending = pending, None
            elif stop.follow:
                try:
                    msg = reader.reader.read_next(timeout_ms)
                except _pulsar_client.Timeout:
                    if len(columns):
                        yield columns.flush()
                    continue
            else:
                if ends is not None and len(done) >= len(ends):
                    break
                msg = reader.next() if ends is not None else _next_while_available(reader, timeout_ms, inside_entry)
                if msg is None:
                    break
            msg_id = msg.message_id()
            partition = partitions[0] if len(partitions) == 1 else msg.topic_name()
            at = position(msg_id)
            if partition in last_read and at <= last_read[partition]:
                continue
            last_read[partition] = at
            reader.accepted(msg_id if len(partitions) == 1 else None)
            inside_entry = 0 <= at[2] < WHOLE_ENTRY and at[2] < entry_batch_size(msg_id) - 1
            partition_end = None if ends is None else ends.get(partition)
            if partition_end is not None:
                if at > partition_end:  # published after the read began
                    done.add(partition)
                    continue
                if ends_at(msg_id, partition_end):
                    done.add(partition)
            if skip_before is not None and msg.publish_timestamp() < skip_before:
                continue
            if stop.past(msg):
                if stop.finished():
                    break
                continue
            columns.add(msg)
            count += 1
            if len(columns) >= batch_size:
                yield columns.flush()
            if stop.reached(msg):
                break
        if len(columns):
            yield columns.flush()
    finally:
        try:
            if reader is not None:
                reader.close()
        finally:
            if owned:
                client.close()


def dump_to_parquet(
    client_or_url: Any,
    topic: str,
    path: str | Path,
    *,
    compression: str = "zstd",
    on_batch: Callable[[int], None] | None = None,
    **read_options: Any,
) -> int:
    """Write a topic's raw messages to a Parquet file (schema :data:`MESSAGE_SCHEMA`).

    Parameters
    ----------
    client_or_url : pulsar.Client or str
        As in :func:`read_batches`.
    topic : str
    path : str or Path
        The Parquet file; written even when no message is read (zero rows). It appears only once
        the whole range was read: the rows go to a hidden file beside it first, renamed into place
        at the end, so a failed dump leaves no file a later reader would take for a complete one,
        and an existing file at ``path`` stays as it was.
    compression : str
        Parquet codec (``"zstd"``, ``"snappy"``, ``"none"``, ...).
    on_batch : callable, optional
        Called with the number of messages of each batch once it is written (progress reports).
    **read_options
        Passed to :func:`read_batches` (``start``, ``end``, ``batch_size``, ``key_encoding``,
        ``limit``, ``timeout_ms``, ...). ``end=None`` (follow) is refused: a dump is bounded.

    Returns
    -------
    int
        Number of messages written.
    """
    if "end" in read_options and read_options["end"] is None:
        raise ValueError("dump_to_parquet reads a bounded range; end=None (follow) is not allowed")
    rows = 0
    target = Path(path)
    # beside the target, so the rename is atomic; named after the process, so two dumps do not
    # collide; not from tempfile, whose files are private to the user (the output keeps the umask)
    partial = target.absolute().parent / f".{target.name}.{os.getpid()}.partial"
    try:
        with pq.ParquetWriter(str(partial), MESSAGE_SCHEMA, compression=compression) as writer:
            for batch in read_batches(client_or_url, topic, **read_options):
                writer.write_batch(batch)
                rows += batch.num_rows
                if on_batch is not None:
                    on_batch(batch.num_rows)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return rows


def keyvalue_columns(
    batch: pa.RecordBatch, encoding: KeyValueEncodingType | str, *, convention: str = _kv.JAVA
) -> tuple[pa.Array, pa.Array]:
    """Key and value bytes of every message in a :func:`read_batches` batch.

    INLINE splits the payload column (:func:`pulsar_codec.keyvalue.split_inline`); SEPARATED
    returns the ``key_bytes`` column (read it with ``key_encoding="base64"`` for Java producers)
    and the payload column. Null where a part is null.
    """
    enc = KeyValueEncodingType.parse(encoding)
    if enc == KeyValueEncodingType.SEPARATED:
        return batch.column("key_bytes"), batch.column("payload")
    return _kv.split_inline(batch.column("payload"), convention=convention)
