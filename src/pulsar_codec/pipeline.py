"""Framed, mixed-schema batches: ``pulsar_codec.decode`` and ``pulsar_codec.encode``.

``decode`` strips the registry prefix of every message with the wire kernel, looks each unseen
schema id up once, compiles one decode plan per writer schema (cached per (writer, reader) pair)
and runs the Avro kernel once over all rows: each row picks the plan of its schema id, and every
plan writes into the same reader columns, so rows come back in input order without regrouping or
copying.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from . import wire
from ._kernels import _backend
from ._arrow import Chunk, binary_chunks
from .formats.avro import Decoded, _check_on_error, run
from .formats.avro._assemble import errors_table
from .formats.avro.plan import Layout, build_layout, build_plan
from .formats.avro.schema import Schema, parse, to_json
from .errors import EncodeError, SchemaError, SchemaNotFoundError, error_for, raise_for

__all__ = ["decode", "encode"]

_LOCK = threading.Lock()
_SCHEMAS: OrderedDict[tuple, tuple[Any, Schema]] = OrderedDict()  # (id(registry), schema id) -> (registry, schema)
_PLANS: OrderedDict[tuple[str, str], tuple] = OrderedDict()  # (writer json, reader json) -> plan
_LAYOUTS: OrderedDict[str, Layout] = OrderedDict()
_CACHE_SIZE = 256


def _cached(cache: OrderedDict, key: Any, make) -> Any:
    with _LOCK:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    value = make()
    with _LOCK:
        cache[key] = value
        while len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)
    return value


def _schema_text(found: Any) -> Any:
    """Accept what registries return: text, bytes, a dict, a parsed schema or an object with
    ``schema_str`` (confluent-kafka's ``Schema``) or ``schema`` attribute."""
    for attr in ("schema_str", "schema"):
        if not isinstance(found, (str, bytes, dict, list, Schema)) and hasattr(found, attr):
            found = getattr(found, attr)
    return found


def lookup_schema(registry: Any, schema_id: Any) -> Schema:
    """The parsed writer schema for ``schema_id``; each (registry, id) is looked up once (LRU)."""
    key = (id(registry), schema_id)
    with _LOCK:
        hit = _SCHEMAS.get(key)
        if hit is not None and hit[0] is registry:
            _SCHEMAS.move_to_end(key)
            return hit[1]
    if hasattr(registry, "get_schema") and not isinstance(registry, Mapping):
        found = registry.get_schema(schema_id)
    elif isinstance(registry, Mapping):
        found = registry.get(schema_id)
        if found is None and isinstance(schema_id, uuid.UUID):
            found = registry.get(str(schema_id))
    else:
        raise TypeError("registry must be a Mapping of schema id -> schema or have a get_schema(schema_id) method")
    if found is None:
        raise SchemaNotFoundError(f"schema id {schema_id} is not in the registry")
    parsed = parse(_schema_text(found))
    with _LOCK:
        _SCHEMAS[key] = (registry, parsed)
        while len(_SCHEMAS) > _CACHE_SIZE:
            _SCHEMAS.popitem(last=False)
    return parsed


def _key(node: Schema) -> str:
    return json.dumps(to_json(node), sort_keys=True, separators=(",", ":"))


_PREFIX_SIZE = {wire.CONFLUENT.kind: 5, wire.CONFLUENT_GUID.kind: 17, wire.APICURIO.kind: 9, wire.APICURIO_V3.kind: 5}
_GUID_KEY = np.dtype([("hi", "<u8"), ("lo", "<u8")])
_HW_KEY = np.dtype([("meta", "u1"), ("id", "<i8"), ("version", "<i4")])
# rows the wire kernel is first handed again after a bad prefix (see _unframe_parts)
_RESUME_WINDOW = 64


def _wide(chunk: Chunk) -> Chunk:
    if chunk.offsets.dtype == np.int64:
        return chunk
    return Chunk(chunk.data, chunk.offsets.astype(np.int64), chunk.validity, chunk.row)


def _unframe_parts(chunk: Chunk, protocol, keep_going: bool, wire_errors: list):
    """Schema-id fields and payload starts of one chunk: ``(ids, guids, versions, protocols, starts,
    valid)`` (guids / versions / protocols None when the protocol has none). With keep_going, a bad
    prefix makes its row null and the wire kernel resumes after it on a window of rows that doubles
    while the rows are clean, so the kernel walks O(n) rows in all, however many rows are bad)."""
    kernels = _backend.active().wire
    chunk = _wide(chunk)
    n = chunk.length
    result = kernels.unframe(chunk.data, chunk.offsets, chunk.validity, protocol.kind, 0, False)
    if result[0] is None:  # the common case: one pass, no copies
        return result[1], result[2], result[3], result[4], result[5], chunk.validity
    ids = np.zeros(n, dtype=np.int64)
    guids = None if result[2] is None else np.zeros(16 * n, dtype=np.uint8)
    versions = None if result[3] is None else np.zeros(n, dtype=np.int32)
    protos = None if result[4] is None else np.zeros(n, dtype=np.uint8)
    starts = chunk.offsets[1:].copy()
    valid = np.ones(n, dtype=bool) if chunk.validity is None else chunk.validity.copy()
    lo = 0
    hi = n
    window = _RESUME_WINDOW
    while lo < n:
        if lo:
            # resume on a window of rows, doubled after every clean window: handing the kernel the
            # whole rest after each bad row would make a batch of bad rows cost O(n^2)
            hi = min(n, lo + window)
            result = kernels.unframe(
                chunk.data,
                chunk.offsets[lo : hi + 1],
                None if chunk.validity is None else valid[lo:hi],
                protocol.kind,
                0,
                False,
            )
        error = result[0]
        stop = hi if error is None else lo + error[1]
        ids[lo:stop] = result[1][: stop - lo]
        if guids is not None:
            guids[16 * lo : 16 * stop] = result[2][: 16 * (stop - lo)]
        if versions is not None:
            versions[lo:stop] = result[3][: stop - lo]
            protos[lo:stop] = result[4][: stop - lo]
        starts[lo:stop] = result[5][: stop - lo]
        if error is None:
            lo = hi
            window *= 2
            continue
        code, index, offset, detail = error
        row = chunk.row + lo + index
        if not keep_going:
            raise_for(code, row, offset, detail, expected=protocol.expected, protocol=protocol.name)
        exc = error_for(code, row, offset, detail, expected=protocol.expected, protocol=protocol.name)
        wire_errors.append((code, row, offset, detail, str(exc)))
        valid[stop] = False
        starts[stop] = chunk.offsets[stop + 1]
        lo = stop + 1
        window = _RESUME_WINDOW
    return ids, guids, versions, protos, starts, (None if valid.all() else valid)


def _unframe_chunk(chunk: Chunk, protocol, keep_going: bool, wire_errors: list):
    """Integer schema ids, payload starts and validity of one chunk (see :func:`_unframe_parts`)."""
    ids, _, _, _, starts, valid = _unframe_parts(chunk, protocol, keep_going, wire_errors)
    return ids, starts, valid


def _row_keys(protocol, ids, guids, versions, protos) -> np.ndarray:
    """One sortable registry key per row: int64 ids, GUIDs as two big-endian words, Hortonworks
    rows as (is protocol 1, id, version)."""
    if guids is not None:
        words = guids.view(">u8").reshape(-1, 2)  # big-endian words sort like the GUID bytes
        keys = np.empty(len(words), dtype=_GUID_KEY)
        keys["hi"] = words[:, 0]
        keys["lo"] = words[:, 1]
        return keys
    if protos is not None and (protos == 1).any():
        keys = np.zeros(len(ids), dtype=_HW_KEY)
        keys["meta"] = protos == 1
        keys["id"] = ids
        keys["version"] = np.where(protos == 1, versions, 0)
        return keys
    return ids


def _registry_key(key: Any) -> Any:
    """What the registry is asked for: an int id, a ``uuid.UUID``, or ``(metadata_id, version)``."""
    if isinstance(key, (bytes, bytearray)):
        return uuid.UUID(bytes=bytes(key))
    if isinstance(key, np.void):
        if key.dtype.names == _GUID_KEY.names:
            return uuid.UUID(int=(int(key["hi"]) << 64) | int(key["lo"]))
        if key["meta"]:
            return (int(key["id"]), int(key["version"]))
        return int(key["id"])
    return int(key)


def _single_id(chunks: list, protocol) -> list | None:
    """The distinct schema ids of a batch whose prefixes all have one fixed size, all valid and at
    most one id; None when the general path is needed (an error, several ids, another protocol)."""
    if protocol.kind not in _PREFIX_SIZE:
        return None
    kernels = _backend.active().wire
    found: set = set()
    for c in chunks:
        error, ids = kernels.distinct_ids(c.data, c.offsets, c.validity, protocol.kind, 1)
        if error is not None or ids is None:
            return None
        found.update(ids)
        if len(found) > 1:
            return None
    return sorted(found)


def _plans_for(registry: Any, keys: list, reader_schema: Any):
    writers = [lookup_schema(registry, _registry_key(k)) for k in keys]
    if reader_schema is not None:
        reader = parse(reader_schema)
    elif writers:
        reader = writers[-1]
    else:
        raise SchemaError("no reader schema: the batch holds no non-null message; pass reader_schema")
    reader_key = _key(reader)
    layout = _cached(_LAYOUTS, reader_key, lambda: build_layout(reader))
    plans = [_cached(_PLANS, (_key(w), reader_key), lambda w=w: build_plan(w, reader, layout)) for w in writers]
    if not plans:  # only nulls: any plan will do, no row runs it
        plans = [_cached(_PLANS, (reader_key, reader_key), lambda: build_plan(reader, reader, layout))]
    return layout, plans


def decode(
    messages: Any,
    registry: Any,
    *,
    protocol: Any = wire.CONFLUENT,
    reader_schema: Any = None,
    on_error: str = "raise",
) -> pa.RecordBatch | Decoded:
    """Decode framed Avro messages with mixed schema ids into one RecordBatch, in input order.

    Parameters
    ----------
    messages : pa.BinaryArray, pa.LargeBinaryArray, pa.ChunkedArray or sequence of bytes / None
        Messages with a registry prefix (``protocol``). Null messages give null rows.
    registry : Mapping or registry client
        A mapping from schema id to schema (JSON text, dict or parsed), or any object with a
        ``get_schema(schema_id)`` method returning schema text, a dict or an object with
        ``schema_str``. Each unseen id is looked up once; results are cached (LRU of 256 entries
        keyed by the registry's identity and the id), so a registry is expected to keep an id's
        schema immutable, as real registries do. The id is an ``int``; for the GUID protocols a
        ``uuid.UUID`` (a mapping may also be keyed by its string form); for Hortonworks protocol-1
        messages a ``(metadata_id, version)`` tuple.
    protocol : wire.Protocol or str
        The prefix format (default Confluent: ``00`` + 4-byte id).
    reader_schema : schema, optional
        The schema to read every message as. Default: the newest writer schema in the batch (the
        highest schema id among the non-null messages; for GUIDs, which have no order, the highest
        GUID, so pass ``reader_schema`` when a GUID batch mixes schemas).
    on_error : {"raise", "null"}
        ``"raise"``: the first bad message raises (:class:`~pulsar_codec.errors.WireFormatError` or
        :class:`~pulsar_codec.errors.AvroDecodeError`). ``"null"``: a message with a bad prefix or a
        bad body becomes a null row and a :class:`~pulsar_codec.avro.Decoded` ``(batch, errors)``
        is returned; ``errors`` has one row per bad message: ``index`` (int64), ``code`` (int32),
        ``offset`` (int64: inside the message for prefix errors, inside the payload after the
        prefix for Avro errors) and ``message`` (string).

    Returns
    -------
    pa.RecordBatch or Decoded

    Raises
    ------
    SchemaNotFoundError
        A schema id the registry does not know (whatever ``on_error`` says: it is not bad data).
    SchemaError
        A writer schema the reader schema cannot read.
    """
    keep_going = _check_on_error(on_error)
    protocol = wire.protocol_by_name(protocol)
    chunks, total = binary_chunks(messages, native_offsets=True)
    wire_errors: list = []
    single = _single_id(chunks, protocol)
    if single is not None:
        # one schema id, every prefix valid: the Avro kernel skips the fixed prefix itself
        layout, plans = _plans_for(registry, single, reader_schema)
        skip = _PREFIX_SIZE[protocol.kind]
        segments = [(c.data, skip, c.offsets, c.validity, None) for c in chunks]
    else:
        parts = [_unframe_parts(c, protocol, keep_going, wire_errors) for c in chunks]
        keys = [_row_keys(protocol, *p[:4]) for p in parts]
        live = [k if p[5] is None else k[p[5]] for k, p in zip(keys, parts)]
        unique = np.unique(np.concatenate(live)) if live else np.zeros(0, dtype=np.int64)
        layout, plans = _plans_for(registry, list(unique), reader_schema)
        segments = []
        for chunk, k, (_, _, _, _, starts, valid) in zip(chunks, keys, parts):
            plan_ids = None
            if len(plans) > 1:
                plan_ids = np.searchsorted(unique, k).astype(np.int32)
                if valid is not None:
                    plan_ids[~valid] = 0
            segments.append((chunk.data, starts, _wide(chunk).offsets[1:], valid, plan_ids))
    errors, batch = run(layout, plans, segments, keep_going)
    if errors and not keep_going:
        code, index, offset, detail = errors[0]
        raise_for(code, index, offset, detail)
    if not keep_going:
        if total and batch.num_rows != total:  # pragma: no cover - the kernel reports every stop
            raise AssertionError("decoded row count differs from the input")
        return batch
    merged = sorted(wire_errors + [(*e, str(error_for(*e))) for e in errors], key=lambda e: e[1])
    return Decoded(batch, errors_table(merged))


def encode(batch: Any, registry: Any, subject: str, *, protocol: Any = wire.CONFLUENT) -> pa.Array:
    """Encode Arrow rows as framed Avro messages; the reverse of :func:`decode`.

    The Avro schema is derived from the Arrow schema (see :func:`pulsar_codec.avro.schema_from_arrow`)
    unless the batch's schema metadata carries one under ``b"avro.schema"``.

    Parameters
    ----------
    batch : pa.RecordBatch or pa.Table
    registry : registry client or MutableMapping
        With a ``register(subject, schema) -> id`` method, the schema is registered under
        ``subject`` and the returned id is used. Otherwise ``registry`` must be a mutable mapping of
        id -> schema: the id of an equal schema already in it is reused, else the next free id
        (highest + 1, starting at 1) is assigned and stored. ``subject`` is then informational.
    subject : str
    protocol : wire.Protocol or str

    Returns
    -------
    pa.BinaryArray
        One framed message per row.
    """
    from .formats.avro.encoder import Encoder, schema_for

    protocol = wire.protocol_by_name(protocol)
    schema = schema_for(batch)
    text = json.dumps(to_json(schema))
    if hasattr(registry, "register"):
        schema_id = registry.register(subject, text)
        schema_id = getattr(schema_id, "schema_id", schema_id)
    elif isinstance(registry, Mapping):
        key = _key(schema)
        schema_id = None
        for k, v in registry.items():
            try:
                if _key(parse(_schema_text(v))) == key:
                    schema_id = k
                    break
            except SchemaError:
                continue
        if schema_id is None:
            if not hasattr(registry, "__setitem__"):
                raise EncodeError("registry mapping is read-only and does not hold this schema")
            ints = [k for k in registry if isinstance(k, int)]
            schema_id = max(ints) + 1 if ints else 1
            registry[schema_id] = text
    else:
        raise TypeError("registry must have a register(subject, schema) method or be a mutable mapping")
    payloads = Encoder(schema).encode(batch)
    return wire.frame(payloads, int(schema_id), protocol)
