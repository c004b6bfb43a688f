"""``df.write.format("pulsar")`` and ``df.writeStream.format("pulsar")``: encode rows, produce them.

The writer schema is settled on the driver when Spark asks for the writer: derived from the value's
Spark type (or the ``schema`` option) and registered under ``subject``, or, with
``use_latest=true``, the subject's latest version. The job carries an encoder fixed to that schema
and id, so the executors never call the registry. Each task frames its rows with
:class:`~pulsar_codec.pipeline.MessageEncoder` (through the same batch path as
:func:`pulsar_codec.spark.encode`), produces them with pulsar-client (batching on, ``send_async``),
flushes once at the end and reports what it sent in its commit message.

Options
-------
``service_url``, ``topic`` (required); ``registry`` (+ ``registry_auth`` / ``registry_token``);
``subject`` (default ``<topic>-value``, the topic's local name); ``protocol`` (default
``CONFLUENT``, ``CONFLUENT_PROTOBUF`` for Protobuf); ``format`` (``AVRO``, ``JSON``,
``PROTOBUF``; default the subject's, its latest version's ``schemaType``, else ``AVRO``);
``schema`` (writer schema text); ``message`` (Protobuf: the full name of the message type
written, default the schema's first; the frames carry its message-index path; refused for Avro
and JSON);
``use_latest`` (write with the subject's latest version, default false); ``auto_register``
(default true; false only looks the schema up); ``key_column`` (a string column sent as the
partition key; null sends none); ``dead_letter_topic`` (where the rows that cannot be encoded go,
see below); ``timeout_ms``.

KeyValue topics: ``keyvalue`` (``INLINE`` or ``SEPARATED``, as the source reads them);
``key_subject`` (default ``<topic>-key``), ``key_schema`` (the key's writer schema text),
``key_format`` (default ``format``) and ``key_message`` settle the key as ``subject``, ``schema``,
``format`` and ``message`` do the value (``use_latest``, ``auto_register`` and ``protocol`` apply
to both); ``key_encoding`` (SEPARATED: ``base64``, the default, as Java writes the partition key,
or ``raw``, the key's UTF-8 text as the C++ client writes it). ``key_column`` is refused with ``keyvalue``.
A ``key_format`` naming a Pulsar primitive (``STRING``, ``INT64``, ...) writes the key in Pulsar's
own encoding of that type, with no registry schema and no prefix, as the source reads it back.

What is encoded
---------------
The ``value`` column when there is one: a struct is a record, another type a message of that type,
and a binary ``value`` is sent as it is (already framed; no registry needed). Without a ``value``
column, every column but ``key_column`` makes the record. A null value is a null-value message
(a tombstone). Columns that are not sent (beside ``value``, other than ``key_column``) are named
in a warning when the writer is planned.

With ``keyvalue``, the DataFrame needs a ``key`` and a ``value`` column (other columns are not
sent); each is encoded as above (a binary one is sent as it is) and framed with ``protocol``.
INLINE sends ``i32 len || key || i32 len || value`` as the payload (Java's layout: a null key or
value is length -1, the message itself is never null); SEPARATED sends the framed value as the
payload (a null value is a null-value message) and the framed key as the partition key (a null key
sends none). pulsar-client cannot set ``partition_key_b64_encoded``, so Base64 keys travel without
that flag: readers are told with ``key_encoding=base64`` (the source's default).

Rows that cannot be encoded
---------------------------
A value (or key) the writer schema cannot take fails its task, and with it the job (Spark retries
the task first), unless the option ``dead_letter_topic`` names a topic: such a row is then
produced there as its JSON text, with the error in its properties
(:mod:`.pulsar_dead_letter`), and the job goes on. Each task's commit message counts the rows it
dead-lettered; the driver logs them as a warning. Writing a null value instead would send a
tombstone, and dropping the row would lose it: neither is done.

Delivery
--------
A task fails when any of its messages is not acknowledged; Spark then runs it again, so a message
may be sent twice (at least once). Streaming writes are at least once for the same reason: a
micro-batch replayed after a restart is produced again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from ... import keyvalue, primitives, wire
from ..._kernels import _backend
from ...errors import EncodeError, PulsarCodecError
from ...formats import get_format
from ...keyvalue import KeyValueEncodingType
from ...pipeline import MessageEncoder
from ...pipeline._common import subject_format
from ...pulsar._sdk import check_key_encoding
from .encode import ENCODE_ERROR, EncodeJob, _body_schema, _writer_text
from .executor import shared_encoder, use_backend
from .pulsar_dead_letter import DeadLetters
from .pulsar_offsets import broker_calls, shared_client, split_partition
from .pulsar_options import (
    SINK_HINTS,
    SINK_OPTIONS,
    SOURCE_OPTIONS,
    check_names,
    flag,
    full_topic,
    positive_int,
    registry_config,
    required,
)
from .pulsar_rows import PrimitiveKey

__all__ = [
    "PartEncoder",
    "PulsarBatchWriter",
    "PulsarCommitMessage",
    "PulsarStreamWriter",
    "SinkPlan",
    "partition_keys",
]

_log = logging.getLogger("pulsar_codec")

DEFAULT_TIMEOUT_MS = 30_000


class ProduceError(PulsarCodecError):
    """The broker did not acknowledge some messages of a task."""


@dataclass(frozen=True)
class PulsarCommitMessage(WriterCommitMessage):
    """What one task produced: ``messages`` acknowledged by the broker, ``bytes`` of payload,
    and ``dead_lettered`` rows that could not be encoded, acknowledged on the dead-letter topic."""

    topic: str
    messages: int
    bytes: int
    dead_lettered: int = 0


@dataclass(frozen=True)
class PartEncoder:
    """How one part of the messages (the value, or a KeyValue key) becomes framed bytes.

    Attributes
    ----------
    encoder : MessageEncoder or None
        Fixed to the part's writer schema and its id; None when the column is binary (sent as it is).
    cache_key : tuple
        Equal keys share one encoder per executor process.
    """

    encoder: MessageEncoder | None
    cache_key: tuple[Any, ...] = ()
    primitive: str | None = None  # a KeyValue key of a Pulsar primitive type (key_format=STRING, ...)
    on_error: str = "raise"

    @classmethod
    def primitive_key(cls, schema_type: str, spark_type: Any, options: Mapping[str, str], on_error: str) -> PartEncoder:
        """A KeyValue key written in Pulsar's own encoding of a primitive type (``key_format=STRING``,
        ``INT64``, ...), as PIP-420 lets a key be and the source reads it: no registry, no id, no
        prefix. The column's type is checked here, on the driver."""
        for option in ("key_subject", "key_schema", "key_message"):
            if options.get(option):
                raise ValueError(
                    f"option {option!r} does not apply to a key_format={schema_type} key (no registry schema)"
                )
        body, is_struct = _body_schema(spark_type)
        if is_struct:
            raise ValueError(f"key_format={schema_type} writes a key column of one value, not a struct")
        primitives.encode_array(schema_type, body.empty_table().column(0))  # EncodeError: a type it cannot take
        return cls(None, ("primitive", schema_type, on_error), primitive=schema_type, on_error=on_error)

    @classmethod
    def settle(
        cls,
        registry: Any,
        options: Mapping[str, str],
        part: str,
        spark_type: Any,
        topic: str,
        protocol: wire.Protocol | None,
        on_error: str = "raise",
    ) -> PartEncoder:
        """Register the writer schema of one part (or take its subject's latest version), on the driver.

        The value reads the options ``subject``, ``schema``, ``format`` and ``message``; a KeyValue
        key reads ``key_subject``, ``key_schema``, ``key_format`` (default ``format``) and
        ``key_message``. ``message`` (Protobuf only) is passed to every encoder, as
        :func:`pulsar_codec.spark.encode` passes it. The subject
        defaults to ``<topic>-<part>``, the topic's local name. ``on_error="null"`` (a dead-letter
        topic): a row that cannot be encoded is reported by :meth:`framed` instead of raised.
        """
        prefix = "" if part == "value" else "key_"
        fmt = options.get(f"{prefix}format") or options.get("format") or None
        subject = options.get(f"{prefix}subject") or split_partition(topic)[0].rsplit("/", 1)[-1] + f"-{part}"
        if fmt is None:  # the subject says its format (a registry schemaType), if it has versions
            fmt = subject_format(registry, subject)
        message = str(options.get(f"{prefix}message") or "").strip() or None
        if message is not None and getattr(get_format(fmt), "select", None) is None:  # one type per schema
            raise ValueError(
                f"option '{prefix}message' applies to Protobuf schemas; {subject!r} is written as {get_format(fmt).name}"
            )
        if flag(options, "use_latest", False):
            # the version as the encoder parses it (a Protobuf schema's imports fetched as references)
            latest = MessageEncoder(registry, subject, protocol=protocol, format=fmt, use_latest=True, message=message)
            schema_id, model = latest.latest_writer()
            writer_format = get_format(fmt)
            text = model if writer_format.name == "PROTOBUF" else writer_format.schema_text(model)
        else:
            body, is_struct = _body_schema(spark_type)
            text = _writer_text(body, is_struct, subject, options.get(f"{prefix}schema"), fmt, registry)
            registering = MessageEncoder(
                registry,
                subject,
                protocol=protocol,
                schema=text,
                format=fmt,
                auto_register=flag(options, "auto_register", True),
                message=message,
            )
            schema_id, _ = registering.encode_payloads(body.empty_table())
        schema_id = int(schema_id)
        encoder = MessageEncoder(
            {},
            subject,
            protocol=protocol,
            schema=text,
            schema_id=schema_id,
            format=fmt,
            on_error=on_error,
            message=message,
        )
        if flag(options, "use_latest", False):
            # a column the version has no field for, or the reverse, fails here, not in every task
            encoder.encode_payloads(_body_schema(spark_type)[0].empty_table())
        key = text if isinstance(text, str) else get_format(fmt).schema_key(text)
        return cls(encoder, (key, schema_id, encoder.protocol.name, fmt, message, on_error))

    def local(self) -> MessageEncoder | None:
        """This executor process's encoder (shared by the tasks that bring equal ones)."""
        return None if self.encoder is None else shared_encoder(self.cache_key, self.encoder)

    def framed(
        self, column: pa.Array, encoder: MessageEncoder | None, backend: str
    ) -> tuple[pa.Array, list[tuple[int, str]]]:
        """The framed messages of a column (``encoder`` from :meth:`local`; a null row stays null),
        and the rows an ``on_error="null"`` encoder could not encode, with the error's text."""
        if self.primitive is not None:
            return _primitive_keys(self.primitive, column, self.on_error)
        if encoder is None:
            return column, []
        job = EncodeJob(encoder, self.cache_key, "value", "value", backend)
        out = job.encode_batch(pa.RecordBatch.from_arrays([column], ["value"]), encoder)
        failed: list[tuple[int, str]] = []
        if ENCODE_ERROR in out.schema.names:
            errors = out.column(ENCODE_ERROR)
            if errors.null_count < len(errors):
                failed = [(i, text) for i, text in enumerate(errors.to_pylist()) if text is not None]
        return out.column("value"), failed


def _primitive_keys(schema_type: str, column: pa.Array, on_error: str) -> tuple[pa.Array, list[tuple[int, str]]]:
    """Keys in Pulsar's encoding of ``schema_type`` (null stays null); with ``on_error="null"`` a key
    out of the type's range is a null beside its row and error text, as :meth:`PartEncoder.framed` gives them."""
    try:
        return primitives.encode_array(schema_type, column), []
    except EncodeError:
        if on_error == "raise":
            raise
    keys: list[bytes | None] = []
    failed: list[tuple[int, str]] = []
    for i, key in enumerate(column.to_pylist()):
        try:
            keys.append(None if key is None else primitives.encode(schema_type, key))
        except EncodeError as exc:
            keys.append(None)
            failed.append((i, str(exc)))
    return pa.array(keys, pa.binary()), failed


def _keyvalue_options(options: Mapping[str, str], names: list[str]) -> tuple[str | None, str]:
    """The KeyValue encoding (``keyvalue``) and ``key_encoding``, checked against the columns."""
    kv = options.get("keyvalue") or None
    if kv is None:
        for option in ("key_subject", "key_schema", "key_format", "key_message", "key_encoding"):
            if options.get(option):
                raise ValueError(f'the option {option!r} applies to KeyValue topics: give the option "keyvalue" too')
        return None, "base64"
    encoding = KeyValueEncodingType.parse(kv).name
    key_encoding = check_key_encoding(options.get("key_encoding") or "base64")
    if key_encoding != "base64" and encoding != "SEPARATED":
        raise ValueError(f"key_encoding={key_encoding!r} applies to SEPARATED KeyValue topics, not {encoding}")
    if options.get("key_column"):
        raise ValueError(
            'key_column and keyvalue exclude each other: a KeyValue topic\'s key is the "key" column, '
            "encoded with its schema (drop key_column)"
        )
    missing = [name for name in ("key", "value") if name not in names]
    if missing:
        raise ValueError(
            f'keyvalue={encoding} writes the columns "key" and "value"; the DataFrame has no '
            f"{' or '.join(repr(m) for m in missing)} column ({', '.join(names)})"
        )
    return encoding, key_encoding


def partition_keys(keys: pa.Array, key_encoding: str) -> list[str | None]:
    """The partition keys of SEPARATED KeyValue messages from their framed keys (None: a null key).

    ``base64``: standard Base64 text, as Java producers write it (the Python client cannot set
    ``partition_key_b64_encoded``, so readers are told with ``key_encoding=base64``). ``raw``: the
    key's UTF-8 text, as the C++ client writes it.

    Raises
    ------
    EncodeError
        ``raw`` and a key that is not UTF-8 text (index = row in the batch).
    """
    found: list[str | None] = []
    for i, key in enumerate(keys.to_pylist()):
        if key is None:
            found.append(None)
        elif key_encoding == "base64":
            found.append(keyvalue.encode_partition_key(key)[0])
        else:
            try:
                found.append(key.decode("utf-8"))
            except UnicodeDecodeError:
                raise EncodeError(
                    f"key {i} is not UTF-8 text, which key_encoding=raw sends as the partition key: "
                    "use key_encoding=base64",
                    index=i,
                ) from None
    return found


@dataclass(frozen=True)
class SinkPlan:
    """Everything a write task needs, settled on the driver.

    Attributes
    ----------
    service_url, topic, key_column, timeout_ms
        The options (``topic`` in full).
    value_column : str or None
        The column encoded (``value``), or None: every column but ``key_column``.
    value : PartEncoder
        How the value column becomes framed payloads.
    key : PartEncoder or None
        KeyValue topics: how the ``key`` column becomes framed keys.
    keyvalue : {"INLINE", "SEPARATED"} or None
        The KeyValue encoding (option ``keyvalue``).
    key_encoding : {"base64", "raw"}
        How SEPARATED keys are written in the partition key.
    dead_letter_topic : str or None
        Where the rows that cannot be encoded go (in full); None: such a row fails its task.
    backend : str
        The kernels the driver ran.
    """

    service_url: str
    topic: str
    key_column: str | None
    value_column: str | None
    value: PartEncoder
    timeout_ms: int
    key: PartEncoder | None = None
    keyvalue: str | None = None
    key_encoding: str = "base64"
    dead_letter_topic: str | None = None
    backend: str = field(default_factory=lambda: _backend.active().name)

    @classmethod
    def from_options(cls, options: Mapping[str, str], schema: Any, overwrite: bool, stream: bool = False) -> SinkPlan:
        """Read the options and settle the writer schemas (registered here, on the driver);
        ``stream``: a ``writeStream`` (whose ``overwrite`` is the complete output mode)."""
        from pyspark.sql.types import BinaryType, StringType, StructType

        check_names(
            options, SINK_OPTIONS, 'format("pulsar") (writing)', SINK_HINTS, (SOURCE_OPTIONS, "the source (reading)")
        )
        if overwrite:
            use = 'outputMode("append")' if stream else 'mode("append")'
            raise ValueError(f'format("pulsar") appends to a topic; it cannot overwrite one (use {use})')
        topic = full_topic(required(options, "topic"))
        names = schema.fieldNames()
        kv, key_encoding = _keyvalue_options(options, names)
        key_column = options.get("key_column") or None
        if key_column is not None:
            if key_column not in names:
                raise ValueError(f"key_column {key_column!r} is not a column ({', '.join(names)})")
            if not isinstance(schema[key_column].dataType, StringType):
                raise ValueError(f"key_column {key_column!r} must be a string column (Pulsar partition keys are text)")
        value_column = "value" if "value" in names else None
        if value_column is not None:
            value_type = schema[value_column].dataType
        else:
            rest = [f for f in schema.fields if f.name != key_column]
            if not rest:
                raise ValueError("nothing to encode: the DataFrame has no column besides the key")
            value_type = StructType(rest)
        parts = {"value": value_type}
        if kv is not None:
            parts = {"key": schema["key"].dataType, **parts}
        sent = set(parts) if value_column is not None else set(names)
        unsent = [name for name in names if name not in sent and name != key_column]
        if unsent:  # a Kafka-style "key" column, say, that is neither key_column nor part of the value
            _log.warning(
                'format("pulsar") (writing) does not send the column%s %s: only %s %s written%s',
                "s" if len(unsent) > 1 else "",
                ", ".join(repr(n) for n in unsent),
                " and ".join(repr(n) for n in parts),
                "are" if len(parts) > 1 else "is",
                "" if kv is not None or key_column else " (key_column names a string column sent as the partition key)",
            )
        timeout_ms = positive_int(options, "timeout_ms", DEFAULT_TIMEOUT_MS) or DEFAULT_TIMEOUT_MS
        service_url = required(options, "service_url")
        dead_letter_topic = full_topic(options["dead_letter_topic"]) if options.get("dead_letter_topic") else None
        if dead_letter_topic is not None and split_partition(dead_letter_topic)[0] == split_partition(topic)[0]:
            raise ValueError(f"dead_letter_topic must be another topic than the one written ({topic})")
        on_error = "raise" if dead_letter_topic is None else "null"
        encoders = {part: PartEncoder(None) for part, t in parts.items() if isinstance(t, BinaryType)}
        primitive_key = PrimitiveKey.named(options.get("key_format")) if kv is not None else None
        if primitive_key is not None and "key" not in encoders:
            encoders["key"] = PartEncoder.primitive_key(primitive_key.schema_type, parts["key"], options, on_error)
        if len(encoders) < len(parts):
            config = registry_config(options)
            if config is None:
                raise ValueError('format("pulsar") encodes with a registry: give the option "registry"')
            # unset: the encoder frames as the format's serializers do (Protobuf with message indexes)
            protocol = wire.protocol_by_name(options["protocol"]) if options.get("protocol") else None
            registry = config.build()
            try:
                for part, spark_type in parts.items():
                    if part not in encoders:
                        encoders[part] = PartEncoder.settle(
                            registry, options, part, spark_type, topic, protocol, on_error
                        )
            finally:
                registry.close()
        return cls(
            service_url,
            topic,
            key_column,
            value_column,
            encoders["value"],
            timeout_ms,
            key=encoders.get("key"),
            keyvalue=kv,
            key_encoding=key_encoding,
            dead_letter_topic=dead_letter_topic,
        )

    # -- the executors' part --------------------------------------------------------------------

    def messages(
        self, batch: pa.RecordBatch, value: MessageEncoder | None, key: MessageEncoder | None
    ) -> tuple[list[bytes | None], list[str | None], dict[int, tuple[str, str]]]:
        """The payloads (None: a null value) and partition keys (None: none) of one batch's rows,
        and the rows that could not be encoded (with a dead-letter topic): row -> (part, error)."""
        n = batch.num_rows
        if self.value_column is not None:
            values = batch.column(self.value_column)
        else:
            keep = [name for name in batch.schema.names if name != self.key_column]
            values = pa.StructArray.from_arrays([batch.column(name) for name in keep], names=keep)
        framed, bad_values = self.value.framed(values, value, self.backend)
        if self.key is None:
            keys = batch.column(self.key_column).to_pylist() if self.key_column else [None] * n
            return framed.to_pylist(), keys, {i: ("value", text) for i, text in bad_values}
        framed_keys, bad_keys = self.key.framed(batch.column("key"), key, self.backend)
        failed = {i: ("key", text) for i, text in bad_keys}
        failed.update((i, ("value", text)) for i, text in bad_values if i not in failed)
        if self.keyvalue == "INLINE":
            # a null key or value is length -1 inside the payload; the message itself is never null
            joined = keyvalue.join_inline(framed_keys, framed, convention=keyvalue.JAVA)
            return joined.to_pylist(), [None] * n, failed
        return framed.to_pylist(), partition_keys(framed_keys, self.key_encoding), failed

    def produce(self, batches: Iterator[pa.RecordBatch]) -> PulsarCommitMessage:
        """Encode and send every row of one task; flush; fail unless every message was acknowledged."""
        from ...pulsar._sdk import pulsar

        value_encoder = self.value.local()
        key_encoder = None if self.key is None else self.key.local()
        client = shared_client(self.service_url, self.timeout_ms)
        with broker_calls(self.service_url, self.timeout_ms):
            producer = client.create_producer(
                self.topic,
                batching_enabled=True,
                block_if_queue_full=True,
                send_timeout_millis=self.timeout_ms,
            )
        lock = threading.Lock()
        failures: list[str] = []
        sent = acked = size = 0
        dead = None
        if self.dead_letter_topic is not None:
            dead = DeadLetters(client, self.dead_letter_topic, self.topic, self.service_url, self.timeout_ms)

        def done(result: Any, _message_id: Any) -> None:
            nonlocal acked
            with lock:
                if result == pulsar.Result.Ok:
                    acked += 1
                else:
                    failures.append(str(result))

        try:
            with use_backend(self.backend):
                for batch in batches:
                    payloads, keys, failed = self.messages(batch, value_encoder, key_encoder)
                    for i, (payload, key) in enumerate(zip(payloads, keys)):
                        if i in failed:
                            assert dead is not None  # failed rows come from on_error="null" encoders only
                            part, error = failed[i]
                            dead.send(batch, i, part, error, self._row_key(batch, i))
                            continue
                        options = {"partition_key": key} if key else {}
                        producer.send_async(payload, done, **options)
                        sent += 1
                        size += len(payload) if payload is not None else 0
            producer.flush()
        finally:
            try:
                producer.close()
            finally:
                if dead is not None:
                    dead.finish()
        if dead is not None:
            failures += dead.failures
        dead_sent, dead_acked = (dead.sent, dead.acked) if dead is not None else (0, 0)
        if failures or acked != sent or dead_acked != dead_sent:
            missing = sent + dead_sent - acked - dead_acked
            raise ProduceError(
                f"{self.topic}: {missing} of {sent + dead_sent} messages were not acknowledged"
                + (f" ({dead_sent} of them to {self.dead_letter_topic})" if dead_sent else "")
                + (f" (first failure: {failures[0]})" if failures else "")
            )
        return PulsarCommitMessage(self.topic, acked, size, dead_acked)

    def _row_key(self, batch: pa.RecordBatch, row: int) -> str | None:
        """The ``key_column`` value of a row, the partition key of its dead letter."""
        if self.key_column is None:
            return None
        key: str | None = batch.column(self.key_column)[row].as_py()
        return key


def _report(messages: list[Any], what: str) -> None:
    done = [m for m in messages if isinstance(m, PulsarCommitMessage)]
    topic = done[0].topic if done else "-"
    _log.info(
        "format('pulsar') %s: %d messages (%d bytes) to %s from %d tasks",
        what,
        sum(m.messages for m in done),
        sum(m.bytes for m in done),
        topic,
        len(done),
    )
    dead = sum(m.dead_lettered for m in done)
    if dead:
        _log.warning(
            "format('pulsar') %s: %d rows could not be encoded for %s and went to the dead-letter topic",
            what,
            dead,
            topic,
        )


class PulsarBatchWriter(DataSourceArrowWriter):
    """``df.write.format("pulsar")``: each task produces its rows and reports them."""

    def __init__(self, plan: SinkPlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PulsarCommitMessage:
        """Produce one task's rows (on an executor)."""
        return self.plan.produce(iterator)

    def commit(self, messages: list[Any]) -> None:
        """Log what the tasks produced."""
        _report(messages, "wrote")

    def abort(self, messages: list[Any]) -> None:
        """Log what the finished tasks produced: it stays on the topic (Pulsar has no rollback)."""
        _report(messages, "aborted after producing")


class PulsarStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("pulsar")``: each micro-batch's tasks produce their rows."""

    def __init__(self, plan: SinkPlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PulsarCommitMessage:
        """Produce one task's rows (on an executor)."""
        return self.plan.produce(iterator)

    def commit(self, messages: list[Any], batchId: int) -> None:
        """Log what the micro-batch produced."""
        _report(messages, f"wrote micro-batch {batchId}")

    def abort(self, messages: list[Any], batchId: int) -> None:
        """Log what the finished tasks of a failed micro-batch produced."""
        _report(messages, f"aborted micro-batch {batchId} after producing")
