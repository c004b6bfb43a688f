"""``decode``: a column of framed messages (or PIP-420 bodies) into a struct column, in a Spark job.

The driver resolves the writer schemas it can (a pre-pass over the prefixes, ``subjects``), builds
one :class:`~pulsar_codec.pipeline.MessageDecoder` over them and ships it inside the job. Each
executor process keeps one decoder per configuration (:mod:`.executor`) and hands it the binary
column of every ``mapInArrow`` batch as it arrives.

Where a row's schema id comes from (``schema_id_from``):

* ``"payload"``: the wire prefix of the message, in any protocol :mod:`pulsar_codec.wire` reads
  (Confluent's ``00`` + id and ``01`` + GUID forms, with the Protobuf message-index array for the
  ``*_PROTOBUF`` ones, Hortonworks, Apicurio v2 / v3, AWS Glue);
* ``"column"``: ``schema_id_column`` (PIP-420 bodies);
* ``"headers"``: a record header of a DataFrame shaped like Spark's Kafka source (``headers``:
  ``array<struct<key: string, value: binary>>``), the payload then carrying no prefix, as
  :class:`HeaderIds` describes for each registry family. A row without the header is read from
  its payload prefix, as the registries' own deserializers fall back.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import uuid
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ... import wire
from ..._arrow import binary_chunks
from ..._kernels import _backend
from ...errors import DecodeError, SchemaError, SchemaNotFoundError
from ...formats import format_of_model, get_format
from ...pipeline import MessageDecoder
from ...registry import FetchedSchema, RegisteredSchema, RegistryConfig, fetch_schema, schema_text
from .batches import RowError, error_column, local_text, replace_columns, walk_bad_rows
from .executor import ShippedSchemas, count_batch, schema_key, shared_decoder, use_backend
from .types import ERROR_TYPE, reader_struct, spark_type

__all__ = ["DecodeJob", "HeaderIds", "decode", "header_values"]


def check_protocol(protocol: Any) -> wire.Protocol:
    """The :mod:`pulsar_codec.wire` protocol named ``protocol``, if it frames Avro with integer ids."""
    found = wire.protocol_by_name(protocol)
    if getattr(found, "guid", False) or getattr(found, "protobuf", False):
        raise ValueError(f"{found.name} is not an Avro protocol with integer schema ids; spark.decode reads Avro")
    return found


def decode_protocol(protocol: Any) -> wire.Protocol:
    """The :mod:`pulsar_codec.wire` protocol named ``protocol``: :func:`decode` reads every one."""
    return wire.protocol_by_name(protocol)


def _id_twin(protocol: wire.Protocol) -> wire.Protocol:
    """The protocol that reads a prefix cut after the id: the Protobuf ones without their
    message-index array (a cut prefix may end inside it)."""
    if protocol is wire.CONFLUENT_PROTOBUF:
        return wire.CONFLUENT
    if protocol is wire.CONFLUENT_GUID_PROTOBUF:
        return wire.CONFLUENT_GUID
    return protocol


def _valid(arr: Any) -> Any:
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def schema_keys(ids: Any) -> list[Any]:
    """The distinct registry keys of ``wire.unframe(...).schema_ids``: ints, ``uuid.UUID`` s for
    the GUID protocols, and ``(metadata_id, version)`` for Hortonworks protocol-1 messages (as
    :class:`MessageDecoder` asks for them)."""
    if pa.types.is_fixed_size_binary(ids.type):
        return [uuid.UUID(bytes=g) for g in pc.unique(ids.drop_null()).to_pylist()]
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
    protocol = _id_twin(protocol)
    if isinstance(protocol, wire.GlueProtocol):
        # the id is bytes 2 to 18; a cut prefix holds no body to inflate, so it is not unframed
        for m in messages.to_pylist():
            if m is not None and len(m) >= 18 and m[0] == 3 and m[1] in (0, 5):
                found.add(uuid.UUID(bytes=m[2:18]))
        return found

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


def header_values(headers: Any, name: str, last: bool = False, value_type: Any = None) -> Any:
    """Per row, the value of the record header ``name`` (null where the row has none, or only a
    null one).

    Parameters
    ----------
    headers : pa.Array
        ``list<struct<key: string, value: binary>>``, the ``headers`` column of Spark's Kafka
        source (large list / string / binary variants too).
    name : str
    last : bool
        Take the last header of that name (Kafka's ``lastHeader``, which Hortonworks' and
        Apicurio's deserializers use); else the first (confluent-kafka's deserializer).
    value_type : pa.DataType, optional
        The binary type to return (default: the headers' value type).
    """
    if isinstance(headers, pa.ChunkedArray):
        headers = headers.combine_chunks()
    n = len(headers)
    flat = pc.list_flatten(headers)
    keys, values = pc.struct_field(flat, "key"), pc.struct_field(flat, "value")
    value_type = value_type or values.type
    match = pc.and_(pc.equal(keys, name), values.is_valid()).fill_null(False).to_numpy(zero_copy_only=False)
    positions = np.flatnonzero(match)
    chosen = np.full(n, -1, dtype=np.int64)
    if len(positions):
        parents = pc.list_parent_indices(headers).to_numpy()[positions]
        if last:
            rows, at = np.unique(parents[::-1], return_index=True)
            chosen[rows] = positions[::-1][at]
        else:
            rows, at = np.unique(parents, return_index=True)
            chosen[rows] = positions[at]
    out = values.take(pa.array(chosen, pa.int64(), mask=chosen < 0))
    return out if out.type == value_type else out.cast(value_type)


@dataclass(frozen=True)
class HeaderIds:
    """Where a row's schema id is when it travels in a record header, for one registry family.

    * Confluent (``__value_schema_id`` / ``__key_schema_id``): the header holds ``01`` + GUID, or
      ``00`` + id, then for Protobuf the message-index array; the payload has no prefix. Header +
      payload is therefore a ``CONFLUENT_GUID(_PROTOBUF)`` or ``CONFLUENT(_PROTOBUF)`` frame, told
      apart by the first byte as confluent-kafka's ``dual_schema_id_deserializer`` does, which
      takes the first header of the name.
    * Hortonworks (``value.schema.version.id`` / ``key.schema.version.id``): the header holds
      exactly the payload prefix it replaces (protocol byte and ids): header + payload is a
      ``HORTONWORKS`` frame. The last header of the name counts.
    * Apicurio (``apicurio.value.globalId``, ``apicurio.value.contentId`` and the ``key`` forms):
      an 8-byte big-endian id: ``00`` + header + payload is an ``APICURIO`` frame. The last header
      counts; a header of another length is an error row (``WIRE_BAD_HEADER_LENGTH``).

    A row without the header is read from its payload prefix in ``protocol``.

    Attributes
    ----------
    column : str
        The headers column.
    name : str
        The header name.
    kind : {"confluent", "hortonworks", "apicurio"}
    last : bool
        Whether the last header of the name counts (else the first).
    """

    column: str
    name: str
    kind: str
    last: bool

    @classmethod
    def of(cls, protocol: wire.Protocol, column: str, headers_column: str, name: str | None = None) -> HeaderIds:
        """The header that carries ``column`` 's ids (``"key"``: the key's header) in ``protocol`` 's family."""
        key = column == "key"
        if isinstance(protocol, wire.ConfluentProtocol):
            default = wire.CONFLUENT_KEY_SCHEMA_ID_HEADER if key else wire.CONFLUENT_VALUE_SCHEMA_ID_HEADER
            return cls(headers_column, name or default, "confluent", False)
        if isinstance(protocol, wire.HortonworksProtocol):
            default = wire.HORTONWORKS_KEY_HEADER if key else wire.HORTONWORKS_VALUE_HEADER
            return cls(headers_column, name or default, "hortonworks", True)
        if isinstance(protocol, wire.ApicurioProtocol):
            if protocol.id_bytes == 8:  # v2: globalId by default
                default = wire.APICURIO_KEY_GLOBAL_ID_HEADER if key else wire.APICURIO_VALUE_GLOBAL_ID_HEADER
            else:  # v3: contentId by default
                default = wire.APICURIO_KEY_CONTENT_ID_HEADER if key else wire.APICURIO_VALUE_CONTENT_ID_HEADER
            return cls(headers_column, name or default, "apicurio", True)
        raise ValueError(f"{protocol.name} carries its schema ids in the payload only, not in record headers")

    def protocols(self, protocol: wire.Protocol) -> tuple[wire.Protocol, ...]:
        """The protocols the frames of a batch may be in, by route (see :meth:`frames`)."""
        if self.kind == "confluent":
            if protocol.protobuf:
                return (wire.CONFLUENT_PROTOBUF, wire.CONFLUENT_GUID_PROTOBUF)
            return (wire.CONFLUENT, wire.CONFLUENT_GUID)
        if self.kind == "apicurio":
            return (protocol, wire.APICURIO)
        return (protocol,)

    def frames(self, headers: Any, values: Any) -> tuple[Any, np.ndarray, list[RowError]]:
        """(frames, route per row: an index into :meth:`protocols`, rows found bad here).

        A frame is the header's id bytes in front of the payload (the payload alone where the row
        has no header); a null payload stays null."""
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        n = len(values)
        header = header_values(headers, self.name, self.last, values.type)
        has = _valid(header)
        bad: list[RowError] = []
        if self.kind == "apicurio":
            lengths = pc.binary_length(header).fill_null(8).to_numpy(zero_copy_only=False)
            wrong = has & (lengths != 8) & _valid(values)  # a tombstone stays a null row
            for i in np.flatnonzero(wrong).tolist():
                try:
                    wire.apicurio_header_id(header[i].as_py())
                except DecodeError as exc:
                    bad.append((i, int(exc.code), 0, f"header {self.name}: {local_text(str(exc))}"))
            if wrong.any():
                values = pc.if_else(pa.array(~wrong), values, pa.scalar(None, values.type))
                has &= ~wrong
            head = pc.binary_join_element_wise(pa.scalar(b"\x00", values.type), header, pa.scalar(b"", values.type))
        else:
            head = header
        joined = pc.binary_join_element_wise(head, values, pa.scalar(b"", values.type))
        frames = pc.if_else(pa.array(has), joined, values) if has.any() else values
        routes = np.zeros(n, dtype=np.int64)
        if self.kind == "apicurio":
            routes[has] = 1
        elif self.kind == "confluent":
            first = pc.binary_slice(frames, 0, 1)
            routes[pc.equal(first, pa.scalar(b"\x01", first.type)).fill_null(False).to_numpy(zero_copy_only=False)] = 1
        return frames, routes, bad


def _decode_routed(frames: Any, routes: np.ndarray, decoders: Sequence[MessageDecoder]) -> tuple[Any, Any]:
    """(batch, errors) of frames whose protocol varies by row: each group goes to its decoder, and
    the rows (and the error indexes) come back in input order."""
    used = np.unique(routes)
    if len(used) <= 1:
        return decoders[int(used[0]) if len(used) else 0].decode(frames)
    batches, tables, order = [], [], []
    for r in used.tolist():
        rows = np.flatnonzero(routes == r)
        batch, errors = decoders[r].decode(frames.take(pa.array(rows)))
        batches.append(batch)
        at = errors.schema.get_field_index("index")
        index = errors.column(at).to_numpy()
        tables.append(errors.set_column(at, "index", pa.array(rows[index], pa.int64())))
        order.append(rows)
    inverse = np.argsort(np.concatenate(order), kind="stable")
    merged = pa.concat_batches(batches).take(pa.array(inverse))
    errors = pa.concat_tables(tables).sort_by("index")
    return merged, errors


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
    headers : HeaderIds, optional
        Ids in record headers (``schema_id_from="headers"``).
    variants : tuple of MessageDecoder
        With ``headers``: the decoders of the other protocols a frame may be in (route 1 on;
        ``decoder`` reads route 0), with the same reader.
    """

    decoder: MessageDecoder
    cache_key: Hashable
    column: str
    id_column: str | None
    output: str
    error_column: str
    backend: str
    headers: HeaderIds | None = None
    variants: tuple[MessageDecoder, ...] = ()
    keep: tuple[str, ...] | None = None
    flatten: bool = False

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        """Decode every batch's column with this process's decoder; other columns pass through
        (those of ``keep`` only, when it is given)."""
        decoder = shared_decoder(self.cache_key, self.decoder, self.decoder.registry)
        variants = tuple(shared_decoder((self.cache_key, d.protocol.name), d, d.registry) for d in self.variants)
        target, converters = reader_struct(decoder.arrow_schema)
        fields = list(target)
        with use_backend(self.backend):
            for batch in batches:
                count_batch()
                yield self.decode_batch(batch, decoder, fields, converters, variants)

    def decode_batch(
        self,
        batch: Any,
        decoder: MessageDecoder,
        fields: list[Any],
        converters: list[Any],
        variants: Sequence[MessageDecoder] = (),
    ) -> Any:
        """One batch: the struct column (null for null and bad rows) and the error column."""
        n = batch.num_rows
        messages = given = batch.column(self.column)
        found: list[RowError] = []  # bad rows the decoder does not see
        if self.headers is not None:
            messages, routes, found = self.headers.frames(batch.column(self.headers.column), messages)
            decoded, errors = _decode_routed(messages, routes, (decoder, *variants))
        elif self.id_column is None:
            decoded, errors = decoder.decode(messages)
        else:
            ids = id_column(batch.column(self.id_column))
            id_valid = _valid(ids)
            orphans = np.flatnonzero(_valid(messages) & ~id_valid)
            if len(orphans):  # a body without an id is a bad row: decode it as null
                messages = pc.if_else(pa.array(id_valid), messages, pa.scalar(None, messages.type))
                found = [(i, None, 0, f"no schema id for the payload of message {i}") for i in orphans.tolist()]
            decoded, errors = decoder.decode_payloads(messages, ids.fill_null(0))
        bad = ~_valid(messages)
        rows = np.asarray(errors.column("index").to_numpy(), dtype=np.int64)
        texts = [local_text(t) for t in errors.column("message").to_pylist()]
        codes = errors.column("code").to_numpy()
        offsets = errors.column("offset").to_numpy()
        code_valid = None
        if found:
            texts += [t for _, _, _, t in found]
            code_valid = np.concatenate([np.ones(len(rows), dtype=bool), [c is not None for _, c, _, _ in found]])
            codes = np.concatenate([codes, np.array([c or 0 for _, c, _, _ in found], dtype=np.int32)])
            offsets = np.concatenate([offsets, np.array([o for _, _, o, _ in found], dtype=np.int64)])
            rows = np.concatenate([rows, np.array([r for r, _, _, _ in found], dtype=np.int64)])
        bad[rows] = True
        children = [decoded.column(k) if fn is None else fn(decoded.column(k)) for k, fn in enumerate(converters)]
        struct = pa.StructArray.from_arrays(children, fields=fields, mask=pa.array(bad) if bad.any() else None)
        if self.keep is not None:
            batch = batch.select(list(self.keep))
        # flattened, a bad or null row is null in every field (flatten() folds the struct's mask in)
        outputs = dict(zip(struct.type.names, struct.flatten())) if self.flatten else {self.output: struct}
        outputs[self.error_column] = error_column(n, rows, codes, offsets, texts, code_valid, given)
        return replace_columns(batch, outputs)


def _prefix_shape(protocol: wire.Protocol) -> tuple[int, tuple[int, ...]]:
    """(bytes to cut, first bytes a valid prefix may start with) for the id pre-pass."""
    protocol = _id_twin(protocol)
    if isinstance(protocol, wire.HortonworksProtocol):
        return 13, (0, 1, 2, 3, 4)
    if isinstance(protocol, wire.GlueProtocol):
        return 18, (3,)
    if isinstance(protocol, wire.ApicurioProtocol):
        return (9 if protocol.id_bytes == 8 else 5), (0,)
    if protocol.guid:
        return 17, (1,)
    return 5, (0,)


def _distinct_prefix_ids(df: Any, column: str, protocol: wire.Protocol) -> set[Any]:
    """The distinct schema ids of a column of framed messages, found inside the JVM: the prefixes
    are cut with ``substring`` and deduplicated by Spark, so no message travels to Python; the
    driver then parses the few distinct prefixes (malformed ones are skipped: the decode job
    reports those rows)."""
    from pyspark.sql import functions as F

    col = F.col(column)
    first = F.substring(col, 1, 1)
    size, magics = _prefix_shape(protocol)
    if isinstance(protocol, wire.HortonworksProtocol):
        # protocol byte 1: i64 metadata id + i32 version; 2: i64 version id; 0, 3, 4: i32 id
        prefix = (
            F.when(first == F.lit(bytearray(b"\x01")), F.substring(col, 1, 13))
            .when(first == F.lit(bytearray(b"\x02")), F.substring(col, 1, 9))
            .otherwise(F.substring(col, 1, 5))
        )
    else:
        prefix = F.substring(col, 1, size)
    magic = first.isin(*[F.lit(bytearray([b])) for b in magics])
    rows = df.where(col.isNotNull() & magic).select(prefix.alias("prefix")).distinct().collect()
    return frame_ids(pa.array([bytes(r["prefix"]) for r in rows], pa.binary()), protocol)


def _distinct_header_ids(df: Any, column: str, protocol: wire.Protocol, headers: HeaderIds) -> set[Any]:
    """:func:`_distinct_prefix_ids` for ids in record headers: the frame heads (header, else the
    payload's own prefix) are cut and deduplicated inside the JVM, then parsed on the driver by
    the protocol each one is in (see :class:`HeaderIds`)."""
    from pyspark.sql import functions as F

    col = F.col(column)
    named = F.filter(F.col(headers.column), lambda h: (h["key"] == F.lit(headers.name)) & h["value"].isNotNull())
    picked = F.try_element_at(named, F.lit(-1 if headers.last else 1))["value"]
    if headers.kind == "apicurio":  # an 8-byte id: the frame is 00 + header + payload
        picked = F.when(F.length(picked) == 8, F.concat(F.lit(bytearray(b"\x00")), picked))
    head = F.substring(F.concat(F.coalesce(picked, F.lit(bytearray())), F.substring(col, 1, 18)), 1, 18)
    rows = df.where(col.isNotNull()).select(head.alias("head"), picked.isNotNull().alias("had")).distinct().collect()
    frames = pa.array([bytes(r["head"]) for r in rows], pa.binary())
    had = pa.array([bool(r["had"]) for r in rows])
    routes = np.zeros(len(rows), dtype=np.int64)
    if headers.kind == "apicurio":
        routes = had.to_numpy(zero_copy_only=False).astype(np.int64)
    elif headers.kind == "confluent":
        routes = np.array([1 if f[:1] == b"\x01" else 0 for f in frames.to_pylist()], dtype=np.int64)
    found: set[Any] = set()
    for r, variant in enumerate(headers.protocols(protocol)):
        found |= frame_ids(frames.filter(pa.array(routes == r)), variant)
    return found


def _ids_in_column(df: Any, column: str, id_column_name: str) -> set[Any]:
    ids_df = df.select(column, id_column_name).where(f"`{column}` IS NOT NULL")
    values = [r[0] for r in ids_df.select(id_column_name).distinct().collect() if r[0] is not None]
    if ids_df.schema[id_column_name].dataType.typeName() in ("integer", "long", "short", "byte"):
        return {int(v) for v in values}
    return set(id_column(pa.array([bytes(v) for v in values], pa.binary())).drop_null().to_pylist())


def _self_contained(client: Any, found: Any) -> Any:
    """``found`` as shipped: a schema with references gets their texts (and their references'),
    fetched here, so the executors parse it without asking the registry."""
    references = tuple(getattr(found, "references", None) or ())
    if not references or isinstance(client, Mapping):
        return found
    kind = getattr(found, "schema_type", None)
    resolve = getattr(get_format(kind), "resolve_references", None)
    if resolve is None:
        return found
    text = schema_text(found)
    # a GUID's schema keeps the registry's id beside it: it orders the schemas (see _newest)
    number = getattr(found, "id", None)
    if isinstance(number, int) and isinstance(kind, str):
        return RegisteredSchema(number, text, kind.upper(), references=tuple(resolve(client, references)))
    return FetchedSchema(text, kind.upper() if isinstance(kind, str) else None, tuple(resolve(client, references)))


def _writer(client: Any, schema_id: Any) -> Any:
    """The registry's answer for ``schema_id`` as the executors' decoder reads it (see
    :func:`_self_contained`); for a GUID the client's own answer (this package's carries the
    registry's integer id, which orders it)."""
    if isinstance(schema_id, uuid.UUID) and not isinstance(client, Mapping):
        by_guid = getattr(client, "get_schema_by_guid", None)
        if callable(by_guid):
            found = by_guid(str(schema_id))
            if found is None:
                raise SchemaNotFoundError(f"schema id {schema_id} is not in the registry")
            return _self_contained(client, found)
    return _self_contained(client, fetch_schema(client, schema_id))


def wants_prepass(prefetch: bool | None, streaming: bool, executors_resolve: bool, reader_fixed: bool) -> bool:
    """Whether :func:`decode` runs the distinct-id pre-pass (a scan of the column before the job).

    ``prefetch`` True or False decides. By default (None) the pre-pass runs only when the job
    cannot do without it: when the output struct depends on the ids in the column (no
    ``reader_schema``, ``reader_subject`` or ``subjects``, and no Mapping to take the newest
    schema from), or when the executors cannot resolve an id themselves (a client without a
    :class:`~pulsar_codec.registry.RegistryConfig`, an in-memory registry). Otherwise each
    executor process asks the registry for each id it meets, once. A streaming DataFrame is never
    scanned ahead of its query.
    """
    if streaming:
        return False
    if prefetch is not None:
        return bool(prefetch)
    return not (executors_resolve and reader_fixed)


def _resolve_on_driver(
    df: Any,
    column: str,
    protocol: wire.Protocol,
    client: Any,
    id_column_name: str | None,
    subjects: list[str] | None,
    prefetch: bool,
    headers: HeaderIds | None = None,
) -> tuple[dict[Any, Any], set[Any]]:
    """The writer schemas the job ships (every id in the column when ``prefetch`` runs the
    pre-pass, and every version of ``subjects``), and the ids of the pre-pass that the registry
    does not know (their rows are error rows)."""
    shipped: dict[Any, Any] = {}
    missing: set[Any] = set()
    if prefetch:
        if id_column_name is not None:
            ids = _ids_in_column(df, column, id_column_name)
        elif headers is not None:
            ids = _distinct_header_ids(df, column, protocol, headers)
        else:
            ids = _distinct_prefix_ids(df, column, protocol)
        for schema_id in sorted(ids, key=_order):
            try:
                shipped[schema_id] = _writer(client, schema_id)
            except SchemaNotFoundError:
                missing.add(schema_id)
    for subject in subjects or ():
        for version in client.list_versions(subject):
            found = _self_contained(client, client.get_version(subject, version))  # the decoder reads it as it is
            shipped[int(found.schema_id)] = found
            missing.discard(int(found.schema_id))
            guid = getattr(client.get_version(subject, version), "guid", None)
            if isinstance(guid, str):  # GUID frames name the same schema by its GUID
                shipped[uuid.UUID(guid)] = found
                missing.discard(uuid.UUID(guid))
    return shipped, missing


def _order(key: Any) -> tuple[int, Any]:
    # ints first (by id), then Hortonworks (metadata id, version) pairs, then GUIDs (by text)
    if isinstance(key, uuid.UUID):
        return (2, (str(key), 0))
    return (0, (key, 0)) if isinstance(key, int) else (1, key)


def _newest(shipped: Mapping[Any, Any]) -> Any:
    """The key of the newest shipped schema: the highest registry id (a GUID's schema counts by the
    id the registry gave with it, else after every numbered one, by text)."""

    def rank(key: Any) -> tuple[int, Any]:
        if isinstance(key, uuid.UUID):
            number = getattr(shipped[key], "id", None)
            if isinstance(number, int) and not isinstance(number, bool) and number >= 0:
                return (0, (number, 1))
        return _order(key)

    return max(shipped, key=rank)


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
    protocol: Any = None,
    reader_schema: Any = None,
    schema_id_column: str | None = None,
    output: str = "decoded",
    error_column: str = "decode_error",
    subjects: list[str] | None = None,
    prefetch: bool | None = None,
    format: str | None = None,
    schema_id_from: str | None = None,
    headers_column: str = "headers",
    schema_id_header: str | None = None,
    reader_subject: str | None = None,
    message: str | None = None,
    keep_columns: Sequence[str] | None = None,
    flatten: bool = False,
) -> Any:
    """Decode a column of framed messages (or of PIP-420 bodies) into a struct column.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    column : str
        Binary column of framed messages (``protocol``) or, with ``schema_id_column``, of bare
        Avro bodies; with ``schema_id_from="headers"``, of payloads whose id is in a header.
    registry : Registry client, Mapping of id -> schema, RegistryConfig, or URL / path
        Used on the driver to resolve ids; executors rebuild the client from its
        :class:`~pulsar_codec.registry.RegistryConfig` for ids the driver did not resolve.
        GUIDs are looked up by GUID (``get_schema_by_guid``, ``GET /schemas/guids/{guid}``); a
        Mapping may be keyed by the ``uuid.UUID`` or its text.
    protocol : wire.Protocol or str, optional
        The prefix format (default Confluent's, ``CONFLUENT_PROTOBUF`` with ``format="PROTOBUF"``):
        any protocol of :mod:`pulsar_codec.wire` (CONFLUENT, CONFLUENT_PROTOBUF,
        CONFLUENT_GUID, CONFLUENT_GUID_PROTOBUF, HORTONWORKS, APICURIO, APICURIO_V3, AWS_GLUE).
        With ``schema_id_from="headers"`` it names the registry family (see :class:`HeaderIds`)
        and the prefix of rows without the header.
    reader_schema : schema, optional
        The schema every row is read as; it fixes the output struct. Default: the latest
        version of ``reader_subject``; else the writer schema with the highest id among those
        resolved on the driver: the Mapping's, ``subjects`` ' versions, or those the pre-pass
        found in the column (GUIDs rank by the id the registry gives with them, else by text:
        pass ``reader_schema`` when GUID-keyed schemas of a registry that gives no ids mix).
    schema_id_column : str, optional
        A column with each row's schema id (integers, or PIP-420 ``schema_id`` bytes: optional
        ``FF`` magic byte, then a big-endian id); ``column`` then holds bare Avro bodies.
    output, error_column : str
        Names of the struct column and of the error column (existing columns with those names are
        replaced).
    subjects : list of str, optional
        Also ship every version of these subjects to the executors.
    prefetch : bool, optional
        Run the distinct-id pre-pass: a scan of the column's prefixes (inside the JVM) before the
        job, whose ids are resolved on the driver and shipped. By default it runs only when it is
        needed (see :func:`wants_prepass`): not with ``reader_schema``, ``reader_subject`` or
        ``subjects`` and a registry the executors can open (a URL, a registry file, a client with
        a :class:`~pulsar_codec.registry.RegistryConfig`), nor with a Mapping; each executor
        process then fetches each id it meets once. True forces it, False skips it (give
        ``reader_schema``, ``reader_subject`` or ``subjects`` then). Never run for streaming
        DataFrames.
    format : str, optional
        The payload format (``"AVRO"``, ``"JSON"``, ``"PROTOBUF"``): default the registry's
        ``schemaType`` of the newest resolved schema (a Mapping registry of plain text is Avro
        unless this says otherwise).
    schema_id_from : {"payload", "column", "headers"}, optional
        Where each row's schema id is: the message's prefix (the default), ``schema_id_column``
        (the default when it is given), or a record header of ``headers_column`` (Spark's Kafka
        source output: ``key``, ``value``, ``topic``, ``partition``, ``offset``, ``timestamp``,
        ``headers``), the payload then carrying no prefix: Confluent's ``__value_schema_id`` /
        ``__key_schema_id`` (``01`` + GUID or ``00`` + id, then Protobuf message indexes),
        Hortonworks' ``value.schema.version.id`` / ``key.schema.version.id``, Apicurio's
        ``apicurio.value.globalId`` (``APICURIO``) or ``apicurio.value.contentId``
        (``APICURIO_V3``), chosen by ``protocol``; the key's header when ``column`` is ``"key"``.
        A row without the header is read from its payload prefix.
    headers_column : str, default "headers"
        The ``array<struct<key: string, value: binary>>`` column of record headers.
    schema_id_header : str, optional
        Another header name than the family's default (registries let it be renamed).
    reader_subject : str, optional
        Read every row as the latest version of this subject (asked of the registry on the
        driver, once); every version of it is shipped.
    message : str, optional
        Protobuf: the full name of the message every row is read as (the output struct); default
        the reader schema's own message (Pulsar ``PROTOBUF_NATIVE``'s root), else its file's first.
        Rows of another message type are error rows (code ``SCHEMA_OTHER_MESSAGE``).

    keep_columns : list of str, optional
        The input columns the result keeps beside ``output`` and ``error_column``. Default: every
        one but ``column``, whose bytes the error column keeps for the rows that failed
        (``error_column.payload``). Name ``column`` here (``keep_columns=df.columns``: all) to get
        every row's bytes back. A ``mapInArrow`` stage hands every column it returns back to the
        JVM, which cannot prune them afterwards: every message's bytes cost Spark about as much
        as the decoded struct. ``keep_columns=[]`` returns the struct and the error column alone.
    flatten : bool, default False
        Return the reader schema's fields as columns of their own instead of the ``output``
        struct (what ``.select("decoded.*")`` gives, without Spark copying every row's struct
        once more: about a fifth faster on complex-12). A bad or null message is null in every
        field. A field named as a kept column or ``error_column`` is an error: pass
        ``keep_columns`` or leave the fields in their struct.

    Returns
    -------
    pyspark.sql.DataFrame
        The input columns (``keep_columns`` when given, else all but ``column``, in the input's
        order), then ``output`` (or, with ``flatten``, the reader's fields) and ``error_column``
        (``struct<code:int, offset:bigint, message:string, payload:binary>``, null for a good or a
        null message; ``payload``: the bad row's ``column`` bytes).

    Raises
    ------
    SchemaError
        No reader schema can be chosen (nothing resolved on the driver and none given).

    A row whose schema id the registry does not know is an error row (code
    ``ErrorCode.SCHEMA_NOT_FOUND``), as with :class:`~pulsar_codec.pipeline.MessageDecoder`'s
    ``on_error="null"``; the ids the pre-pass found missing (and, with a Mapping, every id not in
    it) are not asked for on the executors.
    """
    from pyspark.sql.types import StructField, StructType

    kept = None if keep_columns is None else tuple(keep_columns)
    if kept is not None:
        unknown = [name for name in kept if name not in df.columns]
        if unknown:
            raise ValueError(f"keep_columns names columns the DataFrame does not have: {unknown}; it has {df.columns}")
    auto_protocol = protocol is None
    if protocol is None:
        protocol = wire.CONFLUENT_PROTOBUF if (format or "").upper() == "PROTOBUF" else wire.CONFLUENT
    wire_protocol = decode_protocol(protocol)
    source = schema_id_from or ("column" if schema_id_column is not None else "payload")
    if source not in ("payload", "column", "headers"):
        raise ValueError(f"schema_id_from must be 'payload', 'column' or 'headers', not {schema_id_from!r}")
    if (source == "column") != (schema_id_column is not None):
        raise ValueError("schema_id_column goes with schema_id_from='column' (its default), and only with it")
    headers = HeaderIds.of(wire_protocol, column, headers_column, schema_id_header) if source == "headers" else None
    client, fallback, given = _registry_parts(registry)
    complete = isinstance(registry, Mapping)  # shipped whole: an id not in it is in no registry
    if reader_subject is not None and complete:
        raise ValueError("reader_subject needs a registry client, not a Mapping of id -> schema")
    every = list(subjects or ()) + (
        [reader_subject] if reader_subject and reader_subject not in (subjects or ()) else []
    )
    reader_fixed = reader_schema is not None or bool(every) or (complete and bool(given))
    prepass = wants_prepass(prefetch, df.isStreaming, complete or fallback is not None, reader_fixed)
    try:
        resolved, missing = _resolve_on_driver(
            df, column, wire_protocol, client, schema_id_column, every, prepass, headers
        )
        shipped = {schema_key(k): v for k, v in {**given, **resolved}.items()}
        latest = None
        if reader_schema is None and reader_subject is not None:
            latest = _self_contained(client, client.get_version(reader_subject, "latest"))
    finally:
        if client is not registry and hasattr(client, "close"):
            client.close()
    if reader_schema is not None:
        reader = reader_schema
        format = format or format_of_model(reader)  # a parsed reader (a Protobuf model) names its format
    elif shipped:
        newest = fetch_schema(shipped, _newest(shipped) if latest is None else schema_key(latest.schema_id))
        format = format or newest.schema_type
        reader = newest.schema
        if newest.references:  # shipped with their texts: parsed here with them
            reader = get_format(format).parse(newest.schema, newest.references)
    else:
        raise SchemaError(
            "no reader schema: no schema id was resolved on the driver; pass reader_schema, reader_subject or subjects"
        )
    if auto_protocol and wire_protocol is wire.CONFLUENT and (format or "").upper() == "PROTOBUF":
        wire_protocol = wire.CONFLUENT_PROTOBUF  # Confluent's Protobuf prefix holds a message-index path
    schemas = ShippedSchemas(shipped, fallback, missing, complete=complete)
    protocols = headers.protocols(wire_protocol) if headers is not None else (wire_protocol,)
    options: dict[str, Any] = {"reader_schema": reader, "on_error": "null", "format": format}
    if message is not None:
        options["message"] = message
    decoders = [MessageDecoder(schemas, protocol=p, **options) for p in protocols]
    decoder = decoders[0]
    target, _ = reader_struct(decoder.arrow_schema)
    if kept is None:  # the messages' bytes come back in the errors of the rows that failed only
        kept = tuple(name for name in df.columns if name != column)
    keep = [f for f in df.schema.fields if f.name not in (output, error_column) and f.name in kept]
    if flatten:
        taken = {f.name for f in keep} | {error_column}
        clashes = [f.name for f in target if f.name in taken]
        if clashes:
            raise ValueError(
                f"flatten=True: the reader's fields {clashes} are named as columns the result keeps"
                f" ({sorted(taken)}); pass keep_columns without them, or leave flatten off"
            )
        decoded = [StructField(f.name, spark_type(f.type), True) for f in target]
    else:
        decoded = [StructField(output, spark_type(target), True)]
    out_schema = StructType(keep + decoded + [StructField(error_column, spark_type(ERROR_TYPE), True)])
    job = DecodeJob(
        decoder=decoder,
        cache_key=(_cache_key(fallback, protocols[0], reader, shipped, format), message),
        column=column,
        id_column=schema_id_column,
        output=output,
        error_column=error_column,
        backend=_backend.active().name,
        headers=headers,
        variants=tuple(decoders[1:]),
        keep=tuple(f.name for f in keep),
        flatten=flatten,
    )
    return df.mapInArrow(job, out_schema)
