"""``encode``: a struct column (or any column) into framed Avro messages, in a Spark job.

The writer schema is registered once, on the driver, through a
:class:`~pulsar_codec.pipeline.MessageEncoder`; the job carries an encoder fixed to that schema
and id, so the executors never call the registry.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ... import wire
from ..._kernels import _backend
from ...formats import get_format
from ...formats.base import Encoded, check_on_error
from ...pipeline import MessageEncoder
from ...pipeline._common import SubjectShape, subject_format
from ...registry.lookup import RegistrySource
from .batches import local_encode_text, replace_columns
from .decode import check_protocol
from .executor import shared_encoder, use_backend

__all__ = ["ENCODE_ERROR", "EncodeJob", "encode"]

ENCODE_ERROR = "encode_error"
"""The column ``encode(on_error="null")`` adds: the EncodeError text of a row it could not encode."""


@dataclass(frozen=True)
class EncodeJob:
    """The ``mapInArrow`` function of :func:`encode` (pickled to the executors with its encoder).

    Attributes
    ----------
    encoder : MessageEncoder
        Fixed to one writer schema and id (no registry calls).
    cache_key : hashable
        Equal keys share one encoder per executor process.
    column, output : str
        The column to encode and the binary output column.
    backend : str
        The backend the driver ran.
    """

    encoder: MessageEncoder
    cache_key: Hashable
    column: str
    output: str
    backend: str

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        """Encode every batch's column; other columns pass through, a null value is a null message."""
        encoder = shared_encoder(self.cache_key, self.encoder)
        with use_backend(self.backend):
            for batch in batches:
                yield self.encode_batch(batch, encoder)

    def encode_batch(self, batch: Any, encoder: MessageEncoder) -> Any:
        """One batch: the framed messages of the non-null rows, nulls kept in place."""
        col = batch.column(self.column)
        valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        every = bool(valid.all())
        rows = col if every else col.filter(pa.array(valid))
        if pa.types.is_struct(rows.type):
            body_batch = pa.RecordBatch.from_struct_array(rows)
        else:
            body_batch = pa.RecordBatch.from_arrays([rows], ["value"])
        result = encoder.encode(body_batch)
        errors = None
        if isinstance(result, Encoded):  # on_error="null": a row that could not be encoded is a null
            result, errors = result.messages, result.errors
        framed = result.cast(pa.binary())
        columns = {self.output: framed}
        if errors is not None:
            texts: list[str | None] = [None] * len(framed)
            for index, message in zip(errors.column("index").to_pylist(), errors.column("message").to_pylist()):
                texts[index] = local_encode_text(message)
            columns[ENCODE_ERROR] = pa.array(texts, pa.string())
        if not every:
            positions = pa.array(np.cumsum(valid) - 1, pa.int64(), mask=~valid)
            columns = {name: column.take(positions) for name, column in columns.items()}
        return replace_columns(batch, columns)


def _body_schema(spark_type: Any) -> tuple[Any, bool]:
    """The Arrow schema of the batches the job encodes (the struct's fields, or one ``value``
    column), and whether the column is a struct."""
    from pyspark.sql.pandas.types import to_arrow_type

    arrow = to_arrow_type(spark_type, timezone="UTC")
    if pa.types.is_struct(arrow):
        return pa.schema(list(arrow)), True
    return pa.schema([pa.field("value", arrow)]), False


def _writer_text(
    body: Any, is_struct: bool, subject: str, schema: Any, format: str | None = None, registry: Any = None
) -> Any:
    """The writer schema's text: ``schema``, or one derived from the batches' Arrow schema the way
    :class:`~pulsar_codec.pipeline.MessageEncoder` derives it (named and made nullable after the
    subject's latest version in ``registry``, a client); for Protobuf, the parsed model, which
    keeps the files it imports."""
    fmt = get_format(format)
    if schema is not None:
        if fmt.name == "PROTOBUF":
            return fmt.parse(schema)
        return fmt.schema_text(fmt.parse(schema))
    model = SubjectShape.of(registry, subject, fmt).derive(fmt, body)
    if not is_struct:  # one value per message: the schema of the single field, not a record around it
        if fmt.name != "AVRO":
            raise ValueError(f"encoding a non-struct column as {fmt.name} is not supported: encode a struct column")
        model = model.fields[0].type
    return fmt.schema_text(model)


def encode(
    df: Any,
    column: str,
    *,
    registry: Any,
    subject: str,
    protocol: Any = None,
    schema: Any = None,
    output: str = "value",
    format: str | None = None,
    message: str | None = None,
    use_latest: bool = False,
    on_error: str = "raise",
) -> Any:
    """Encode a struct column (or any column) into framed messages (Avro, or JSON with ``format="JSON"``).

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    column : str
        The column to encode: a struct becomes a record (one field per struct field); any other
        column a message of that type.
    registry : Registry client, RegistryConfig or MutableMapping
        The schema is registered on the driver under ``subject`` (``register(subject, schema)``);
        for a mapping, an equal schema's id is reused or the next free id is assigned. Executors
        never call the registry: the id travels with the job.
    subject : str
    protocol : wire.Protocol or str
    schema : Avro schema, optional
        The writer schema. Default: derived from the column's Spark type (nullable fields become
        ``["null", T]``, timestamps ``timestamp-micros``, timestamp_ntz ``local-timestamp-micros``,
        decimals ``bytes``/``decimal``), the record named after the subject.
    output : str
        Name of the binary output column (an existing column of that name is replaced).
    format : str, optional
        The payload format: ``"AVRO"``, ``"JSON"`` or ``"PROTOBUF"`` (a struct column only; the
        derived schema is a draft-07 JSON Schema titled after the subject, or a proto3 message
        named after it). Default: the subject's (its latest version's registry ``schemaType``),
        else ``"AVRO"``.
    message : str, optional
        Protobuf: the message written (default the schema's first); the frames carry its
        message-index path (``protocol`` defaults to ``CONFLUENT_PROTOBUF``).
    use_latest : bool, default False
        Write with the subject's latest version, registering nothing (confluent-kafka's
        ``use.latest.version``): what writes a topic read with :func:`decode` back under its own
        subject, enums, fixed and unions included. Not with ``schema``.
    on_error : {"raise", "null"}
        ``"raise"``: a value that does not fit the schema fails the task (and the job).
        ``"null"``: its row's ``output`` is null and a string column ``encode_error`` holds the
        EncodeError's text (null for the rows written), so one bad row does not cost the job.

    Returns
    -------
    pyspark.sql.DataFrame
        The input columns plus ``output``; a null struct gives a null message.

    Raises
    ------
    EncodeError
        (in the job) a value that does not fit the schema.
    """
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType

    check_on_error(on_error)
    if use_latest and schema is not None:
        raise ValueError("use_latest=True writes with the subject's latest version; do not pass schema=")
    body, is_struct = _body_schema(df.schema[column].dataType)
    client = RegistrySource(registry).get()
    try:
        if format is None:  # the subject says its format (a registry schemaType), if it has versions
            format = subject_format(client, subject)
        protobuf = get_format(format).name == "PROTOBUF"
        if protocol is None:
            protocol = wire.CONFLUENT_PROTOBUF if protobuf else wire.CONFLUENT
        wire_protocol = wire.protocol_by_name(protocol) if protobuf else check_protocol(protocol)
        options: dict[str, Any] = {"protocol": wire_protocol, "format": format}
        if message is not None:
            options["message"] = message
        if use_latest:
            schema_id, model = MessageEncoder(client, subject, use_latest=True, **options).latest_writer()
            fmt = get_format(format)
            text = model if fmt.name == "PROTOBUF" else fmt.schema_text(model)
            options["schema"] = text
        else:
            text = options["schema"] = _writer_text(body, is_struct, subject, schema, format, client)
            # register on the driver, through the encoder's own path (an empty batch registers, writes nothing)
            registering = MessageEncoder(client, subject, **options)
            schema_id, _ = registering.encode_payloads(body.empty_table())
        schema_id = int(schema_id)
    finally:
        if client is not registry and hasattr(client, "close"):  # built here from a URL, path or config
            client.close()
    encoder = MessageEncoder({}, subject, schema_id=schema_id, on_error=on_error, **options)
    added = [StructField(output, BinaryType(), True)]
    if on_error == "null":
        added.append(StructField(ENCODE_ERROR, StringType(), True))
    keep = [f for f in df.schema.fields if f.name not in {a.name for a in added}]
    out_schema = StructType(keep + added)
    key = text if isinstance(text, str) else get_format(format).schema_key(text)
    cache_key = (key, schema_id, wire_protocol.name, message, on_error)
    job = EncodeJob(encoder, cache_key, column, output, _backend.active().name)
    return df.mapInArrow(job, out_schema)
