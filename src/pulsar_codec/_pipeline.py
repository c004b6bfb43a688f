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
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from . import _backend, wire
from ._arrow import binary_chunks
from .avro import Decoded, _check_on_error, run
from .avro._assemble import errors_table
from .avro.plan import Layout, build_layout, build_plan
from .avro.schema import Schema, parse, to_json
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
        try:
            found = registry[schema_id]
        except KeyError:
            found = None
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


def _unframe_chunk(chunk, protocol, keep_going: bool, wire_errors: list):
    """Schema ids and payload starts of one chunk; with keep_going, a bad prefix makes its row null
    and the wire kernel resumes after it (each call walks only the rest, so this stays O(n))."""
    kernels = _backend.active().wire
    n = chunk.length
    result = kernels.unframe(chunk.data, chunk.offsets, chunk.validity, protocol.kind, 0)
    if result[0] is None:  # the common case: one pass, no copies
        return result[1], result[5], chunk.validity
    ids = np.zeros(n, dtype=np.int64)
    starts = chunk.offsets[1:].copy()
    valid = np.ones(n, dtype=bool) if chunk.validity is None else chunk.validity.copy()
    lo = 0
    while lo < n:
        if lo:
            result = kernels.unframe(
                chunk.data, chunk.offsets[lo:], None if chunk.validity is None else valid[lo:], protocol.kind, 0
            )
        error = result[0]
        stop = n if error is None else lo + error[1]
        ids[lo:stop] = result[1][: stop - lo]
        starts[lo:stop] = result[5][: stop - lo]
        if error is None:
            break
        code, index, offset, detail = error
        row = chunk.row + lo + index
        if not keep_going:
            raise_for(code, row, offset, detail, expected=protocol.expected, protocol=protocol.name)
        exc = error_for(code, row, offset, detail, expected=protocol.expected, protocol=protocol.name)
        wire_errors.append((code, row, offset, detail, str(exc)))
        valid[stop] = False
        starts[stop] = chunk.offsets[stop + 1]
        lo = stop + 1
    return ids, starts, (None if valid.all() else valid)


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
        schema immutable, as real registries do.
    protocol : wire.Protocol or str
        The prefix format (default Confluent: ``00`` + 4-byte id).
    reader_schema : schema, optional
        The schema to read every message as. Default: the newest writer schema in the batch (the
        highest schema id among the non-null messages).
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
    chunks, total = binary_chunks(messages)
    wire_errors: list = []
    parts = [_unframe_chunk(c, protocol, keep_going, wire_errors) for c in chunks]
    all_ids = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    masks = [np.ones(c.length, dtype=bool) if p[2] is None else p[2] for c, p in zip(chunks, parts)]
    all_valid = np.concatenate(masks) if masks else np.zeros(0, dtype=bool)
    live = all_ids if all_valid.all() else all_ids[all_valid]
    if len(live) and live.min() == live.max():  # one schema id: skip the sort
        unique_ids = live[:1].copy()
    else:
        unique_ids = np.unique(live)
    writers = [lookup_schema(registry, int(i)) for i in unique_ids]
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
    segments = []
    for chunk, (ids, starts, valid) in zip(chunks, parts):
        plan_ids = np.searchsorted(unique_ids, ids).astype(np.int32) if len(plans) > 1 else None
        if plan_ids is not None and valid is not None:
            plan_ids[~valid] = 0
        segments.append((chunk.data, starts, chunk.offsets[1:], valid, plan_ids))
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
    from .avro.encoder import Encoder, schema_for

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
