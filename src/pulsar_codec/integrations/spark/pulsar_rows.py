"""Raw Pulsar messages into the ``format("pulsar")`` source's columns, on an executor.

A batch of :data:`pulsar_codec.pulsar.MESSAGE_SCHEMA` rows becomes ``key``, ``value``,
``decode_error`` and ``schema_id``; the message metadata columns pass through. Decoding runs
through the decode job of :func:`pulsar_codec.spark.decode` with the process's shared
:class:`~pulsar_codec.pipeline.MessageDecoder`, so bad messages become error rows the same way.

KeyValue topics
---------------
INLINE payloads (``i32 len || key || i32 len || value``) are split; SEPARATED messages carry the
value as the payload and the key in the partition key, as Base64 text (Java producers,
:func:`pulsar_codec.pulsar.send_keyvalue`) or as text (``key_encoding=raw``, the C++ client).
Both parts are decoded, each with its own reader schema. ``decode_error`` holds the first error
of the message: splitting it, then its key, then its value.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from ... import keyvalue, wire
from ..._arrow import around_bad_rows
from ...errors import DecodeError, KeyValueFormatError, PrimitiveDecodeError, SchemaError
from ...pipeline import MessageDecoder
from .batches import error_array, row_error
from .decode import DecodeJob
from .executor import count_batch, shared_decoder
from .keyvalue import SplitJob
from .types import ERROR_TYPE, reader_struct, spark_arrow_type, spark_type

__all__ = [
    "PartDecoder",
    "PrimitiveKey",
    "PrimitiveKeyPart",
    "RowMaker",
    "prefix_ids",
    "primitive_names",
    "separated_keys",
]


def prefix_ids(payloads: Any, protocol: wire.Protocol) -> pa.Array:
    """The integer schema id in each payload's wire prefix (int64; null for a null payload, a
    malformed prefix, a GUID, or a Hortonworks ``(metadata id, version)`` pair)."""
    n = len(payloads)
    if protocol.guid:
        return pa.nulls(n, pa.int64())

    def ids_of(lo: int, hi: int) -> pa.Array:
        ids = wire.unframe(payloads.slice(lo, hi - lo), protocol).schema_ids
        found: pa.Array = ids.field("version_id") if pa.types.is_struct(ids.type) else ids
        return found.cast(pa.int64())

    parts, _ = around_bad_rows(n, ids_of, pa.nulls(1, pa.int64()), DecodeError)  # a bad prefix: no id
    return pa.concat_arrays(parts) if parts else pa.array([], pa.int64())


def separated_keys(partition_keys: Any, base64: bool) -> tuple[pa.Array, pa.Array]:
    """The key bytes of SEPARATED KeyValue messages from their partition keys, and an error column
    (``ERROR_TYPE``) with the rows whose key is not Base64."""
    n = len(partition_keys)
    if not base64:
        return partition_keys.cast(pa.binary()), pa.nulls(n, ERROR_TYPE)
    keys, bad = around_bad_rows(
        n,
        lambda lo, hi: keyvalue.decode_partition_keys(partition_keys.slice(lo, hi - lo), True),
        pa.nulls(1, pa.binary()),
        KeyValueFormatError,
    )
    errors = [row_error(exc) for exc in bad]
    return (pa.concat_arrays(keys) if keys else pa.array([], pa.binary())), error_array(n, errors, partition_keys)


class PartReader(Protocol):
    """What decodes one part of the messages (a :class:`PartDecoder`, or a primitive key's)."""

    def decode(self, payloads: Any) -> tuple[pa.Array, pa.Array]:
        """``(column, errors)`` of a binary column."""
        ...


class PartDecoder:
    """Decodes one binary column (a value, or a KeyValue key) into a struct column and an error column."""

    def __init__(self, decoder: MessageDecoder, cache_key: Hashable, backend: str) -> None:
        self.decoder = shared_decoder(cache_key, decoder, decoder.registry)
        self.job = DecodeJob(self.decoder, cache_key, "payload", None, "value", "decode_error", backend)
        struct_type, self.converters = reader_struct(self.decoder.arrow_schema, self.decoder.non_null_columns)
        self.fields = list(struct_type)

    def decode(self, payloads: Any) -> tuple[pa.Array, pa.Array]:
        """``(struct, errors)`` of a binary column; null payloads give a null struct and no error."""
        count_batch()
        batch = pa.RecordBatch.from_arrays([payloads], ["payload"])
        out = self.job.decode_batch(batch, self.decoder, self.fields, self.converters)
        return out.column("value"), out.column("decode_error")


def primitive_names() -> list[str]:
    """The Pulsar primitive schema types a KeyValue key can be read as (``key_format``)."""
    from ...primitives import arrow_type
    from ...pulsar.schema_info import SchemaType

    names = []
    for schema_type in SchemaType:
        try:
            arrow_type(schema_type)
        except SchemaError:
            continue
        names.append(schema_type.name)
    return names


@dataclass(frozen=True)
class PrimitiveKey:
    """A KeyValue key of a Pulsar primitive schema (``key_format=STRING``, ``INT64``, ...): PIP-420
    lets a KeyValue's key be one, written in Pulsar's own encoding, with no registry id."""

    schema_type: str

    @classmethod
    def named(cls, name: str | None) -> PrimitiveKey | None:
        """The key of ``key_format`` ``name`` when it names a Pulsar primitive type; None for a
        registry format (``AVRO``, ``JSON``, ``PROTOBUF``: the key is read through the registry).

        Raises
        ------
        ValueError
            ``name`` is neither (a typo would otherwise be looked up as a registry subject).
        """
        if not name:
            return None
        from ...formats import get_format
        from ...primitives import arrow_type

        try:
            arrow_type(name)
        except (SchemaError, ValueError, KeyError):
            try:
                get_format(name)
            except SchemaError:
                raise ValueError(
                    f"option 'key_format' must name a registry format (AVRO, JSON, PROTOBUF) or a Pulsar "
                    f"primitive type ({', '.join(primitive_names())}), got {name!r}"
                ) from None
            return None
        return cls(name.upper())

    def spark_type(self) -> Any:
        """The Spark type of the decoded key."""
        from ...primitives import arrow_type

        return spark_type(spark_arrow_type(arrow_type(self.schema_type))[0])

    def part(self, backend: str) -> PrimitiveKeyPart:
        """This executor's decoder for it."""
        return PrimitiveKeyPart(self.schema_type)


@dataclass(frozen=True)
class PrimitiveKeyPart:
    """Decodes a column of primitive keys (Pulsar's encoding); a key that does not decode is null
    beside an error, as :class:`~.pulsar_rows.PartDecoder` gives them."""

    schema_type: str

    def decode(self, payloads: Any) -> tuple[pa.Array, pa.Array]:
        """``(keys, errors)`` of a binary column; null payloads give null keys and no error."""
        from ...primitives import arrow_type, decode_array

        target, convert = spark_arrow_type(arrow_type(self.schema_type))

        def run(lo: int, hi: int) -> pa.Array:
            decoded = decode_array(self.schema_type, payloads.slice(lo, hi - lo))
            return decoded if convert is None else convert(decoded)

        pieces, bad = around_bad_rows(len(payloads), run, pa.nulls(1, target), PrimitiveDecodeError)
        keys = pa.concat_arrays(pieces) if pieces else pa.array([], target)
        return keys, error_array(len(payloads), [row_error(exc) for exc in bad], payloads)


class RowMaker:
    """The ``key``, ``value``, ``decode_error`` and ``schema_id`` columns of raw message batches.

    Parameters
    ----------
    protocol : wire.Protocol
        The prefix ``schema_id`` is read from.
    value, key : PartDecoder or None
        The value's decoder (None: raw bytes) and a KeyValue key's.
    keyvalue : {"INLINE", "SEPARATED"} or None
    key_encoding : {"base64", "raw"}
        How SEPARATED keys are written in the partition key.
    backend : str
    convention : {"java", "cpp"}
        How INLINE lengths of -1 read (:mod:`pulsar_codec.keyvalue`).
    """

    def __init__(
        self,
        protocol: wire.Protocol,
        value: PartDecoder | None,
        key: PartReader | None,
        keyvalue: str | None,
        key_encoding: str,
        backend: str,
        convention: str = keyvalue.JAVA,
    ) -> None:
        self.protocol = protocol
        self.value = value
        self.key = key
        self.keyvalue = keyvalue
        self.key_encoding = key_encoding
        self.backend = backend
        self.convention = convention

    def columns(self, raw: pa.RecordBatch) -> dict[str, pa.Array]:
        """The columns this module makes for one raw batch (``decode_error`` only when decoding)."""
        payloads = raw.column("payload")
        split_errors = None
        if self.keyvalue is None:
            keys: pa.Array = raw.column("key")
            values = payloads
        elif self.keyvalue == "INLINE":
            job = SplitJob("payload", "kv_key", "kv_value", self.convention, "kv_error", self.backend)
            split = job.split_batch(pa.RecordBatch.from_arrays([payloads], ["payload"]))
            keys, values, split_errors = split.column("kv_key"), split.column("kv_value"), split.column("kv_error")
        else:
            keys, split_errors = separated_keys(raw.column("key"), self.key_encoding == "base64")
            values = payloads
        out: dict[str, pa.Array] = {"key": keys, "value": values}
        if self.value is None and split_errors is not None:  # raw KeyValue parts: only splitting can fail
            out["decode_error"] = split_errors
        if self.value is not None:
            errors = [] if split_errors is None else [split_errors]
            if self.key is not None:
                out["key"], key_errors = self.key.decode(keys)
                errors.append(key_errors)
            out["value"], value_errors = self.value.decode(values)
            errors.append(value_errors)
            out["decode_error"] = errors[0] if len(errors) == 1 else pc.coalesce(*errors)
        out["schema_id"] = prefix_ids(values, self.protocol)
        return out
