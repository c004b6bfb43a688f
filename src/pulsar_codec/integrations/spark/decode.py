"""``decode``: a column of framed messages (or PIP-420 bodies) into a struct column, in a Spark job.

The driver resolves the writer schemas it can (a pre-pass over the prefixes, ``subjects``), builds
one :class:`~pulsar_codec.pipeline.MessageDecoder` over them and ships it inside the job. Each
executor process keeps one decoder per configuration (:mod:`.executor`) and hands it the binary
column of every ``mapInArrow`` batch as it arrives.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ... import wire
from ..._arrow import binary_chunks
from ..._kernels import _backend
from ...errors import DecodeError, SchemaError, SchemaNotFoundError
from ...formats import get_format
from ...pipeline import MessageDecoder
from ...registry import RegistryConfig, fetch_schema
from .batches import error_column, local_text, replace_columns, walk_bad_rows
from .executor import ShippedSchemas, count_batch, shared_decoder, use_backend
from .types import ERROR_TYPE, reader_struct, spark_type

__all__ = ["DecodeJob", "decode"]


def check_protocol(protocol: Any) -> wire.Protocol:
    """The :mod:`pulsar_codec.wire` protocol named ``protocol``, if it frames Avro with integer ids."""
    found = wire.protocol_by_name(protocol)
    if getattr(found, "guid", False) or getattr(found, "protobuf", False):
        raise ValueError(f"{found.name} is not an Avro protocol with integer schema ids; spark.decode reads Avro")
    return found


def _valid(arr: Any) -> Any:
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def schema_keys(ids: Any) -> list[Any]:
    """The distinct registry keys of ``wire.unframe(...).schema_ids``: ints, and ``(metadata_id,
    version)`` for Hortonworks protocol-1 messages (as :class:`MessageDecoder` asks for them)."""
    if not pa.types.is_struct(ids.type):
        return list(pc.unique(ids.drop_null()).to_pylist())
    found: set[Any] = set()
    for row in pc.unique(ids.drop_null()).to_pylist():
        if row["metadata_id"] is not None:
            found.add((int(row["metadata_id"]), int(row["version"])))
        elif row["version_id"] is not None:
            found.add(int(row["version_id"]))
    return list(found)


def frame_ids(messages: Any, protocol: wire.Protocol) -> set[Any]:
    """Distinct schema ids of framed messages; messages with a bad prefix are skipped (the decode
    job reports them). Reads only the prefixes."""
    found: set[Any] = set()

    def attempt(lo: int, hi: int) -> int | None:
        piece = messages.slice(lo, hi - lo)
        try:
            found.update(schema_keys(wire.unframe(piece, protocol).schema_ids))
            return None
        except DecodeError as exc:
            bad = exc.index or 0
            if bad:
                found.update(schema_keys(wire.unframe(piece.slice(0, bad), protocol).schema_ids))
            return bad

    walk_bad_rows(len(messages), attempt)
    return found


def id_column(arr: Any) -> Any:
    """An int64 schema-id array from an integer column, or from a binary one (PIP-420
    ``schema_id`` bytes: an optional ``FF`` magic byte, then a big-endian id of 1 to 8 bytes)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_integer(arr.type):
        return arr.cast(pa.int64())
    if not (
        pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type) or pa.types.is_fixed_size_binary(arr.type)
    ):
        raise TypeError(f"schema_id_column must hold integers or binary ids, not {arr.type}")
    chunks, total = binary_chunks(arr.cast(pa.binary()) if pa.types.is_fixed_size_binary(arr.type) else arr)
    out = np.zeros(total, dtype=np.int64)
    valid = np.ones(total, dtype=bool)
    for chunk in chunks:
        data = np.frombuffer(chunk.data, dtype=np.uint8) if chunk.data is not None else np.zeros(0, np.uint8)
        starts = chunk.offsets[:-1].astype(np.int64)
        ends = chunk.offsets[1:].astype(np.int64)
        rows = slice(chunk.row, chunk.row + chunk.length)
        ok = np.ones(chunk.length, dtype=bool) if chunk.validity is None else chunk.validity.copy()
        if len(data):
            has_magic = (ends > starts) & (data[np.minimum(starts, len(data) - 1)] == 0xFF)
        else:
            has_magic = np.zeros(chunk.length, dtype=bool)
        starts = starts + has_magic
        lengths = ends - starts
        ok &= (lengths >= 1) & (lengths <= 8)
        ids = np.zeros(chunk.length, dtype=np.uint64)
        for k in range(8):  # at most 8 vectorised passes, one per id byte
            take = ok & (lengths > k)
            if not take.any():
                break
            ids[take] = (ids[take] << np.uint64(8)) | data[starts[take] + k].astype(np.uint64)
        out[rows] = ids.view(np.int64)
        valid[rows] = ok
    return pa.array(out, pa.int64(), mask=~valid)


@dataclass(frozen=True)
class DecodeJob:
    """The ``mapInArrow`` function of :func:`decode` (pickled to the executors with its decoder).

    Attributes
    ----------
    decoder : MessageDecoder
        Reads a :class:`~.executor.ShippedSchemas`, has a reader schema, ``on_error="null"``.
    cache_key : hashable
        The decoder's configuration: equal keys share one decoder per executor process.
    column, id_column, output, error_column : str
        As :func:`decode`'s ``column``, ``schema_id_column``, ``output``, ``error_column``.
    backend : str
        The backend the driver ran.
    """

    decoder: MessageDecoder
    cache_key: Hashable
    column: str
    id_column: str | None
    output: str
    error_column: str
    backend: str

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        """Decode every batch's column with this process's decoder; other columns pass through."""
        decoder = shared_decoder(self.cache_key, self.decoder, self.decoder.registry)
        target, converters = reader_struct(decoder.arrow_schema)
        fields = list(target)
        with use_backend(self.backend):
            for batch in batches:
                count_batch()
                yield self.decode_batch(batch, decoder, fields, converters)

    def decode_batch(self, batch: Any, decoder: MessageDecoder, fields: list[Any], converters: list[Any]) -> Any:
        """One batch: the struct column (null for null and bad rows) and the error column."""
        n = batch.num_rows
        messages = batch.column(self.column)
        orphans = np.zeros(0, dtype=np.int64)
        if self.id_column is None:
            decoded, errors = decoder.decode(messages)
        else:
            ids = id_column(batch.column(self.id_column))
            id_valid = _valid(ids)
            orphans = np.flatnonzero(_valid(messages) & ~id_valid)
            if len(orphans):  # a body without an id is a bad row: decode it as null
                messages = pc.if_else(pa.array(id_valid), messages, pa.scalar(None, messages.type))
            decoded, errors = decoder.decode_payloads(messages, ids.fill_null(0))
        bad = ~_valid(messages)
        rows = np.asarray(errors.column("index").to_numpy(), dtype=np.int64)
        texts = [local_text(t) for t in errors.column("message").to_pylist()]
        bad[rows] = True
        if len(orphans):
            texts += [f"no schema id for the payload of message {i}" for i in orphans.tolist()]
            code_valid = np.concatenate([np.ones(len(rows), dtype=bool), np.zeros(len(orphans), dtype=bool)])
            codes = np.concatenate([errors.column("code").to_numpy(), np.zeros(len(orphans), dtype=np.int32)])
            offsets = np.concatenate([errors.column("offset").to_numpy(), np.zeros(len(orphans), dtype=np.int64)])
            rows = np.concatenate([rows, orphans])
        else:
            code_valid = None
            codes = errors.column("code").to_numpy()
            offsets = errors.column("offset").to_numpy()
        children = [decoded.column(k) if fn is None else fn(decoded.column(k)) for k, fn in enumerate(converters)]
        struct = pa.StructArray.from_arrays(children, fields=fields, mask=pa.array(bad) if bad.any() else None)
        return replace_columns(
            batch,
            {self.output: struct, self.error_column: error_column(n, rows, codes, offsets, texts, code_valid)},
        )


def _distinct_prefix_ids(df: Any, column: str, protocol: wire.Protocol) -> set[Any]:
    """The distinct schema ids of a column of framed messages, found inside the JVM: the prefixes
    are cut with ``substring`` and deduplicated by Spark, so no message travels to Python; the
    driver then parses the few distinct prefixes (malformed ones are skipped: the decode job
    reports those rows)."""
    from pyspark.sql import functions as F

    col = F.col(column)
    first = F.substring(col, 1, 1)
    if isinstance(protocol, wire.HortonworksProtocol):
        # protocol byte 1: i64 metadata id + i32 version; 2: i64 version id; 0, 3, 4: i32 id
        prefix = (
            F.when(first == F.lit(bytearray(b"\x01")), F.substring(col, 1, 13))
            .when(first == F.lit(bytearray(b"\x02")), F.substring(col, 1, 9))
            .otherwise(F.substring(col, 1, 5))
        )
        magic = first.isin(*[F.lit(bytearray([b])) for b in range(5)])
    else:
        size = 9 if isinstance(protocol, wire.ApicurioProtocol) and protocol.id_bytes == 8 else 5
        prefix = F.substring(col, 1, size)
        magic = first == F.lit(bytearray(b"\x00"))
    rows = df.where(col.isNotNull() & magic).select(prefix.alias("prefix")).distinct().collect()
    return frame_ids(pa.array([bytes(r["prefix"]) for r in rows], pa.binary()), protocol)


def _ids_in_column(df: Any, column: str, id_column_name: str) -> set[Any]:
    ids_df = df.select(column, id_column_name).where(f"`{column}` IS NOT NULL")
    values = [r[0] for r in ids_df.select(id_column_name).distinct().collect() if r[0] is not None]
    if ids_df.schema[id_column_name].dataType.typeName() in ("integer", "long", "short", "byte"):
        return {int(v) for v in values}
    return set(id_column(pa.array([bytes(v) for v in values], pa.binary())).drop_null().to_pylist())


def _resolve_on_driver(
    df: Any,
    column: str,
    protocol: wire.Protocol,
    client: Any,
    id_column_name: str | None,
    subjects: list[str] | None,
    prefetch: bool,
) -> tuple[dict[Any, Any], set[Any]]:
    """The writer schemas the job ships (every id in the column, the pre-pass, and ``subjects``),
    and the ids of the pre-pass that the registry does not know (their rows are error rows)."""
    shipped: dict[Any, Any] = {}
    missing: set[Any] = set()
    if prefetch and not df.isStreaming:  # a streaming source cannot be scanned ahead of the query
        if id_column_name is not None:
            ids = _ids_in_column(df, column, id_column_name)
        else:
            ids = _distinct_prefix_ids(df, column, protocol)
        for schema_id in sorted(ids, key=_order):
            try:
                shipped[schema_id] = fetch_schema(client, schema_id)
            except SchemaNotFoundError:
                missing.add(schema_id)
    for subject in subjects or ():
        for version in client.list_versions(subject):
            found = client.get_version(subject, version)  # a RegisteredSchema: the decoder reads it as it is
            shipped[int(found.schema_id)] = found
            missing.discard(int(found.schema_id))
    return shipped, missing


def _order(key: Any) -> tuple[int, Any]:
    # ints first (by id), then Hortonworks (metadata id, version) pairs
    return (0, (key, 0)) if isinstance(key, int) else (1, key)


def _registry_parts(registry: Any) -> tuple[Any, RegistryConfig | None, dict[Any, Any]]:
    """(client to ask on the driver, config the executors rebuild or None, schemas shipped as given)."""
    if isinstance(registry, Mapping):  # ships whole: the executors need nothing else
        return registry, None, dict(registry)
    if isinstance(registry, (RegistryConfig, str, os.PathLike)):
        config = RegistryConfig.of(registry)
        return config.build(), (None if config.is_memory else config), {}
    try:
        found: RegistryConfig | None = RegistryConfig.of(registry)
    except TypeError:
        found = None  # a client without a config (confluent-kafka's): only driver-resolved ids work
    return registry, (None if found is None or found.is_memory else found), {}


def _cache_key(
    fallback: RegistryConfig | None, protocol: wire.Protocol, reader: Any, shipped: dict[Any, Any], format: str | None
) -> Any:
    fmt = get_format(format)
    key: tuple[Any, ...] = (fallback, protocol.name, fmt.schema_key(fmt.parse(reader)))
    if fallback is None:
        # no registry behind the shipped schemas: two jobs may give one id different schemas
        digest = hashlib.sha256(pickle.dumps(sorted(shipped.items(), key=lambda kv: _order(kv[0]))))
        key += (digest.hexdigest(),)
    return key


def decode(
    df: Any,
    column: str = "value",
    *,
    registry: Any,
    protocol: Any = wire.CONFLUENT,
    reader_schema: Any = None,
    schema_id_column: str | None = None,
    output: str = "decoded",
    error_column: str = "decode_error",
    subjects: list[str] | None = None,
    prefetch: bool = True,
    format: str | None = None,
) -> Any:
    """Decode a column of framed messages (or of PIP-420 bodies) into a struct column.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    column : str
        Binary column of framed messages (``protocol``) or, with ``schema_id_column``, of bare
        Avro bodies.
    registry : Registry client, Mapping of id -> schema, RegistryConfig, or URL / path
        Used on the driver to resolve ids; executors rebuild the client from its
        :class:`~pulsar_codec.registry.RegistryConfig` for ids the driver did not resolve.
    protocol : wire.Protocol or str
        The prefix format (integer-id protocols: CONFLUENT, HORTONWORKS, APICURIO, APICURIO_V3).
    reader_schema : Avro schema, optional
        The schema every row is read as; it fixes the output struct. Default: the writer schema
        with the highest id among those resolved on the driver.
    schema_id_column : str, optional
        A column with each row's schema id (integers, or PIP-420 ``schema_id`` bytes: optional
        ``FF`` magic byte, then a big-endian id); ``column`` then holds bare Avro bodies.
    output, error_column : str
        Names of the struct column and of the error column (existing columns with those names are
        replaced).
    subjects : list of str, optional
        Also ship every version of these subjects to the executors.
    prefetch : bool
        Run the distinct-id pre-pass (default; skipped for streaming DataFrames). With False
        only ``subjects`` are resolved on the driver and executors fetch other ids themselves
        (once per process); give ``reader_schema`` or ``subjects`` then.
    format : str, optional
        The payload format (``"AVRO"``, ``"JSON"``): default the registry's ``schemaType`` of the
        newest resolved schema (a Mapping registry of plain text is Avro unless this says otherwise).

    Returns
    -------
    pyspark.sql.DataFrame
        The input columns, then ``output`` and ``error_column``.

    Raises
    ------
    SchemaError
        No reader schema can be chosen (nothing resolved on the driver and none given).

    A row whose schema id the registry does not know is an error row (code
    ``ErrorCode.SCHEMA_NOT_FOUND``), as with :class:`~pulsar_codec.pipeline.MessageDecoder`'s
    ``on_error="null"``; the ids the pre-pass found missing are not asked for again on the executors.
    """
    from pyspark.sql.types import StructField, StructType

    wire_protocol = check_protocol(protocol)
    client, fallback, given = _registry_parts(registry)
    try:
        resolved, missing = _resolve_on_driver(df, column, wire_protocol, client, schema_id_column, subjects, prefetch)
        shipped = {**given, **resolved}
    finally:
        if client is not registry and hasattr(client, "close"):
            client.close()
    if reader_schema is not None:
        reader = reader_schema
    elif shipped:
        newest = fetch_schema(shipped, max(shipped, key=_order))
        reader = newest.schema
        format = format or newest.schema_type
    else:
        raise SchemaError("no reader schema: no schema id was resolved on the driver; pass reader_schema or subjects")
    decoder = MessageDecoder(
        ShippedSchemas(shipped, fallback, missing),
        protocol=wire_protocol,
        reader_schema=reader,
        on_error="null",
        format=format,
    )
    target, _ = reader_struct(decoder.arrow_schema)
    keep = [f for f in df.schema.fields if f.name not in (output, error_column)]
    out_schema = StructType(
        keep + [StructField(output, spark_type(target), True), StructField(error_column, spark_type(ERROR_TYPE), True)]
    )
    job = DecodeJob(
        decoder=decoder,
        cache_key=_cache_key(fallback, wire_protocol, reader, shipped, format),
        column=column,
        id_column=schema_id_column,
        output=output,
        error_column=error_column,
        backend=_backend.active().name,
    )
    return df.mapInArrow(job, out_schema)
