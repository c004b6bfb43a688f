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
``CONFLUENT``); ``format`` (``AVRO`` default, ``JSON``); ``schema`` (writer schema text);
``use_latest`` (write with the subject's latest version, default false); ``auto_register``
(default true; false only looks the schema up); ``key_column`` (a string column sent as the
partition key; null sends none); ``timeout_ms``.

What is encoded
---------------
The ``value`` column when there is one: a struct is a record, another type a message of that type,
and a binary ``value`` is sent as it is (already framed; no registry needed). Without a ``value``
column, every column but ``key_column`` makes the record. A null value is a null-value message
(a tombstone).

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

from ... import wire
from ..._kernels import _backend
from ...errors import PulsarCodecError
from ...pipeline import MessageEncoder
from ...pipeline._common import latest_version
from .encode import EncodeJob, _body_schema, _writer_text
from .executor import shared_encoder, use_backend
from .pulsar_offsets import shared_client, split_partition
from .pulsar_options import flag, full_topic, positive_int, registry_config, required

__all__ = ["PulsarBatchWriter", "PulsarCommitMessage", "PulsarStreamWriter", "SinkPlan"]

_log = logging.getLogger("pulsar_codec")

DEFAULT_TIMEOUT_MS = 30_000


class ProduceError(PulsarCodecError):
    """The broker did not acknowledge some messages of a task."""


@dataclass(frozen=True)
class PulsarCommitMessage(WriterCommitMessage):
    """What one task produced: ``messages`` acknowledged by the broker, ``bytes`` of payload."""

    topic: str
    messages: int
    bytes: int


@dataclass(frozen=True)
class SinkPlan:
    """Everything a write task needs, settled on the driver.

    Attributes
    ----------
    service_url, topic, key_column, timeout_ms
        The options (``topic`` in full).
    value_column : str or None
        The column encoded (``value``), or None: every column but ``key_column``.
    encoder : MessageEncoder or None
        Fixed to the writer schema and its id; None when ``value`` is binary (sent as it is).
    cache_key : tuple
        Equal keys share one encoder per executor process.
    backend : str
        The kernels the driver ran.
    """

    service_url: str
    topic: str
    key_column: str | None
    value_column: str | None
    encoder: MessageEncoder | None
    cache_key: tuple[Any, ...]
    timeout_ms: int
    backend: str = field(default_factory=lambda: _backend.active().name)

    @classmethod
    def from_options(cls, options: Mapping[str, str], schema: Any, overwrite: bool) -> SinkPlan:
        """Read the options and settle the writer schema (registered here, on the driver)."""
        from pyspark.sql.types import BinaryType, StringType, StructType

        if overwrite:
            raise ValueError('format("pulsar") appends to a topic; it cannot overwrite one (use mode "append")')
        topic = full_topic(required(options, "topic"))
        key_column = options.get("key_column") or None
        names = schema.fieldNames()
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
        timeout_ms = positive_int(options, "timeout_ms", DEFAULT_TIMEOUT_MS) or DEFAULT_TIMEOUT_MS
        service_url = required(options, "service_url")
        if isinstance(value_type, BinaryType):
            return cls(service_url, topic, key_column, value_column, None, (), timeout_ms)
        config = registry_config(options)
        if config is None:
            raise ValueError('format("pulsar") encodes with a registry: give the option "registry"')
        protocol = wire.protocol_by_name(options.get("protocol") or wire.CONFLUENT)
        fmt = options.get("format") or None
        subject = options.get("subject") or split_partition(topic)[0].rsplit("/", 1)[-1] + "-value"
        registry = config.build()
        try:
            if flag(options, "use_latest", False):
                schema_id, fetched = latest_version(registry, subject)
                text = fetched.schema if isinstance(fetched.schema, str) else str(fetched.schema)
                fmt = fmt or fetched.schema_type
            else:
                body, is_struct = _body_schema(value_type)
                text = _writer_text(body, is_struct, subject, options.get("schema"), fmt)
                registering = MessageEncoder(
                    registry,
                    subject,
                    protocol=protocol,
                    schema=text,
                    format=fmt,
                    auto_register=flag(options, "auto_register", True),
                )
                schema_id, _ = registering.encode_payloads(body.empty_table())
        finally:
            registry.close()
        schema_id = int(schema_id)
        encoder = MessageEncoder({}, subject, protocol=protocol, schema=text, schema_id=schema_id, format=fmt)
        return cls(
            service_url, topic, key_column, value_column, encoder, (text, schema_id, protocol.name, fmt), timeout_ms
        )

    # -- the executors' part --------------------------------------------------------------------

    def _framed(self, batch: pa.RecordBatch, encoder: MessageEncoder | None) -> pa.Array:
        if self.value_column is not None:
            values = batch.column(self.value_column)
        else:
            keep = [name for name in batch.schema.names if name != self.key_column]
            values = pa.StructArray.from_arrays([batch.column(name) for name in keep], names=keep)
        if encoder is None:
            return values
        job = EncodeJob(encoder, self.cache_key, "value", "value", self.backend)
        framed: pa.Array = job.encode_batch(pa.RecordBatch.from_arrays([values], ["value"]), encoder).column("value")
        return framed

    def produce(self, batches: Iterator[pa.RecordBatch]) -> PulsarCommitMessage:
        """Encode and send every row of one task; flush; fail unless every message was acknowledged."""
        from ...pulsar._sdk import pulsar

        encoder = None if self.encoder is None else shared_encoder(self.cache_key, self.encoder)
        client = shared_client(self.service_url, self.timeout_ms)
        producer = client.create_producer(
            self.topic,
            batching_enabled=True,
            block_if_queue_full=True,
            send_timeout_millis=self.timeout_ms,
        )
        lock = threading.Lock()
        failures: list[str] = []
        sent = acked = size = 0

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
                    framed = self._framed(batch, encoder).to_pylist()
                    keys = batch.column(self.key_column).to_pylist() if self.key_column else [None] * len(framed)
                    for payload, key in zip(framed, keys):
                        options = {"partition_key": key} if key else {}
                        producer.send_async(payload, done, **options)
                        sent += 1
                        size += len(payload) if payload is not None else 0
            producer.flush()
        finally:
            producer.close()
        if failures or acked != sent:
            raise ProduceError(
                f"{self.topic}: {sent - acked} of {sent} messages were not acknowledged"
                + (f" (first failure: {failures[0]})" if failures else "")
            )
        return PulsarCommitMessage(self.topic, acked, size)


def _report(messages: list[Any], what: str) -> None:
    done = [m for m in messages if isinstance(m, PulsarCommitMessage)]
    _log.info(
        "format('pulsar') %s: %d messages (%d bytes) to %s from %d tasks",
        what,
        sum(m.messages for m in done),
        sum(m.bytes for m in done),
        done[0].topic if done else "-",
        len(done),
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
