"""Python values <-> Arrow columns, in the shapes confluent-kafka's Avro serdes use.

confluent-kafka reads and writes Avro with fastavro, so its dicts follow fastavro's conventions.
The pipeline speaks Arrow; these converters bridge the two, one compiled per schema and reused:

- :func:`rows_reader` turns a decoded batch into fastavro-shaped values. ``to_pylist`` is already
  right for most types; the converters only step in where pyarrow differs (maps are dicts, not
  lists of pairs; ``uuid`` strings are ``uuid.UUID``; timestamps carry ``datetime.timezone.utc``;
  nanosecond timestamps and ``duration`` stay raw, an int and 12 bytes, as fastavro leaves them).
- :func:`rows_builder` turns values into the Arrow batch the encoder takes, accepting what
  fastavro's writer accepts for the same schema (a missing field takes its default, a general
  union's branch is chosen by the value).
"""

from __future__ import annotations

import datetime
import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from ..errors import EncodeError
from ..formats.avro._rows import accepts
from ..formats.avro.plan import arrow_type
from ..formats.avro.schema import Array, Fixed, Map, Primitive, Record, Schema, Union

__all__ = ["needs_builder", "rows_builder", "rows_reader"]

ColumnReader = Callable[[pa.Array], list[Any]]
ColumnBuilder = Callable[[Sequence[Any]], pa.Array]

_UTC = datetime.UTC
_DURATION = struct.Struct("<III")


def _pylist(arr: pa.Array) -> list[Any]:
    return arr.to_pylist()  # type: ignore[no-any-return]


def _nulls(arr: pa.Array) -> list[bool] | None:
    return arr.is_null().to_pylist() if arr.null_count else None


# -- reading: Arrow -> fastavro-shaped values ---------------------------------------------------------


def column_reader(node: Schema) -> ColumnReader | None:  # noqa: C901 - one case per type
    """A converter for a column of ``node``'s Arrow type, or None when ``to_pylist`` is already right."""
    if isinstance(node, Union):
        inner = node.nullable_of
        if inner is not None:
            return column_reader(inner)
        branch_readers = [column_reader(b) for b in node.branches]
        if all(r is None for r in branch_readers):
            return None
        readers = [r or _pylist for r in branch_readers]

        def read_union(arr: pa.Array) -> list[Any]:
            kids = [readers[i](arr.field(i)) for i in range(len(readers))]
            codes = arr.type_codes.to_pylist()
            offsets = arr.offsets.to_pylist()
            return [kids[c][o] for c, o in zip(codes, offsets)]

        return read_union
    if isinstance(node, Record):
        field_readers = [column_reader(f.type) for f in node.fields]
        if all(r is None for r in field_readers):
            return None
        names = [f.name for f in node.fields]
        fields = [r or _pylist for r in field_readers]

        def read_record(arr: pa.Array) -> list[Any]:
            cols = [read(child) for read, child in zip(fields, arr.flatten())]
            rows: list[Any] = [dict(zip(names, values)) for values in zip(*cols)]
            nulls = _nulls(arr)
            return rows if nulls is None else [None if n else r for r, n in zip(rows, nulls)]

        return read_record
    if isinstance(node, Array):
        item_reader = column_reader(node.items)
        if item_reader is None:
            return None
        read_items = item_reader

        def read_array(arr: pa.Array) -> list[Any]:
            items = read_items(arr.flatten())
            offsets = arr.offsets.to_pylist()
            base = offsets[0]
            rows: list[Any] = [items[a - base : b - base] for a, b in zip(offsets, offsets[1:])]
            nulls = _nulls(arr)
            return rows if nulls is None else [None if n else r for r, n in zip(rows, nulls)]

        return read_array
    if isinstance(node, Map):
        read_values = column_reader(node.values) or _pylist

        def read_map(arr: pa.Array) -> list[Any]:
            offsets = arr.offsets.to_pylist()  # absolute: .keys / .items ignore a slice
            base = offsets[0]
            keys = arr.keys.slice(base, offsets[-1] - base).to_pylist()
            values = read_values(arr.items.slice(base, offsets[-1] - base))
            rows: list[Any] = [
                dict(zip(keys[a - base : b - base], values[a - base : b - base])) for a, b in zip(offsets, offsets[1:])
            ]
            nulls = _nulls(arr)
            return rows if nulls is None else [None if n else r for r, n in zip(rows, nulls)]

        return read_map
    if isinstance(node, Fixed) and node.logical == "duration":

        def read_duration(arr: pa.Array) -> list[Any]:
            # fastavro has no duration type: it returns the 12 raw bytes (months, days, millis)
            return [
                None if v is None else _DURATION.pack(v.months, v.days, v.nanoseconds // 1_000_000)
                for v in arr.to_pylist()
            ]

        return read_duration
    if isinstance(node, Primitive):
        lt = node.logical
        if lt == "uuid" and node.type == "string":
            return lambda arr: [None if v is None else uuid.UUID(v) for v in arr.to_pylist()]
        if lt in ("timestamp-nanos", "local-timestamp-nanos"):
            # fastavro knows no nanosecond timestamps: the long itself
            return lambda arr: arr.cast(pa.int64()).to_pylist()
        if lt in ("timestamp-millis", "timestamp-micros"):
            # pyarrow attaches zoneinfo's UTC; fastavro (and so confluent-kafka) datetime.timezone.utc
            return lambda arr: [None if v is None else v.replace(tzinfo=_UTC) for v in arr.to_pylist()]
    return None


def rows_reader(node: Schema) -> Callable[[pa.RecordBatch], list[Any]]:
    """A converter from a decoded batch (reader schema ``node``) to one value per row.

    A record schema gives one dict per row (columns are its fields); any other schema gives the
    values of the batch's single ``value`` column.
    """
    if isinstance(node, Record):
        field_readers = [column_reader(f.type) for f in node.fields]
        if all(r is None for r in field_readers):
            return lambda batch: batch.to_pylist()
        names = [f.name for f in node.fields]
        readers = [r or _pylist for r in field_readers]

        def read_rows(batch: pa.RecordBatch) -> list[Any]:
            cols = [read(col) for read, col in zip(readers, batch.columns)]
            return [dict(zip(names, values)) for values in zip(*cols)]

        return read_rows
    read_value = column_reader(node) or _pylist
    return lambda batch: read_value(batch.column(0))


# -- writing: fastavro-shaped values -> Arrow --------------------------------------------------------


def _default_value(node: Schema, default: Any) -> Any:
    """A field default (JSON form) as the Python value fastavro would write for it."""
    if default is None:
        return None
    if isinstance(node, Union):
        return _default_value(node.branches[0], default)
    if isinstance(node, Record) and isinstance(default, dict):
        return {f.name: _default_value(f.type, default.get(f.name, f.default)) for f in node.fields}
    if isinstance(node, Array) and isinstance(default, list):
        return [_default_value(node.items, v) for v in default]
    if isinstance(node, Map) and isinstance(default, dict):
        return {k: _default_value(node.values, v) for k, v in default.items()}
    if isinstance(default, str) and (node.type == "bytes" or isinstance(node, Fixed)):
        return default.encode("latin-1")  # the Avro spec writes byte defaults as ISO-8859-1 text
    return default


def needs_builder(node: Schema) -> bool:
    """Whether ``pa.array(values, type)`` cannot take fastavro-shaped values for ``node`` as they are."""
    if isinstance(node, Union):
        inner = node.nullable_of
        return True if inner is None else needs_builder(inner)
    if isinstance(node, Record):
        # a missing key reads as None, which is right only where the default is null
        return any((f.has_default and f.default is not None) or needs_builder(f.type) for f in node.fields)
    if isinstance(node, Array):
        return needs_builder(node.items)
    if isinstance(node, Map):
        return needs_builder(node.values)
    if isinstance(node, Fixed):
        return node.logical == "duration"
    return isinstance(node, Primitive) and node.logical == "uuid"


def _mask(values: Sequence[Any]) -> pa.Array | None:
    return pa.array([v is None for v in values], pa.bool_()) if any(v is None for v in values) else None


def column_builder(node: Schema) -> ColumnBuilder:  # noqa: C901 - one case per type
    """A converter from fastavro-shaped values of ``node`` to an Arrow column of its Arrow type."""
    typ = arrow_type(node)
    if not needs_builder(node):
        return lambda values: pa.array(values, typ)
    if isinstance(node, Union) and node.nullable_of is not None:
        return column_builder(node.nullable_of)
    if isinstance(node, Union):
        branches = node.branches
        builders = [column_builder(b) for b in branches]
        names = [typ.field(i).name for i in range(len(branches))]

        def build_union(values: Sequence[Any]) -> pa.Array:
            groups: list[list[Any]] = [[] for _ in branches]
            codes: list[int] = []
            offsets: list[int] = []
            for v in values:
                i = next((k for k, b in enumerate(branches) if accepts(b, v)), None)
                if i is None:
                    raise EncodeError(f"{v!r} matches no branch of the union {[b.type for b in branches]}")
                codes.append(i)
                offsets.append(len(groups[i]))
                groups[i].append(v)
            children = [build(group) for build, group in zip(builders, groups)]
            return pa.UnionArray.from_dense(
                pa.array(codes, pa.int8()), pa.array(offsets, pa.int32()), children, names, list(range(len(branches)))
            )

        return build_union
    if isinstance(node, Record):
        fields = [
            (f.name, column_builder(f.type), _default_value(f.type, f.default) if f.has_default else None)
            for f in node.fields
        ]
        struct_fields = list(typ)

        def build_record(values: Sequence[Any]) -> pa.Array:
            rows = [{} if v is None else v for v in values]
            for v in rows:
                if not isinstance(v, dict):
                    raise EncodeError(f"expected a record (dict), got {v!r}")
            children = [build([r.get(name, default) for r in rows]) for name, build, default in fields]
            return pa.StructArray.from_arrays(children, fields=struct_fields, mask=_mask(values))

        return build_record
    if isinstance(node, (Array, Map)):
        inner = column_builder(node.items if isinstance(node, Array) else node.values)

        def build_nested(values: Sequence[Any]) -> pa.Array:
            offsets = [0]
            flat: list[Any] = []
            keys: list[Any] = []
            for v in values:
                if v is not None:
                    if isinstance(v, dict):
                        keys.extend(v.keys())
                        flat.extend(v.values())
                    else:
                        flat.extend(v)
                offsets.append(len(flat))
            offs = pa.array(offsets, pa.int32())
            if isinstance(node, Map):
                keys_arr = pa.array(keys, pa.string())
                return pa.MapArray.from_arrays(offs, keys_arr, inner(flat), type=typ, mask=_mask(values))
            return pa.ListArray.from_arrays(offs, inner(flat), type=typ, mask=_mask(values))

        return build_nested
    if isinstance(node, Fixed):  # duration: fastavro's 12 bytes (or a (months, days, millis) tuple)

        def build_duration(values: Sequence[Any]) -> pa.Array:
            out = []
            for v in values:
                if isinstance(v, (bytes, bytearray)) and len(v) == 12:
                    months, days, millis = _DURATION.unpack(v)
                    out.append((months, days, millis * 1_000_000))
                else:
                    out.append(v)
            return pa.array(out, typ)

        return build_duration
    # a uuid string: fastavro writes uuid.UUID objects as their text
    return lambda values: pa.array([str(v) if isinstance(v, uuid.UUID) else v for v in values], typ)


def rows_builder(node: Schema) -> Callable[[Sequence[Any]], pa.RecordBatch]:
    """A converter from values of schema ``node`` to the RecordBatch the encoder takes.

    A record schema takes dicts (one column per field; a missing key takes the field's default);
    any other schema takes bare values and gives one column named ``value``.
    """
    if isinstance(node, Record):
        schema = pa.schema([pa.field(f.name, arrow_type(f.type)) for f in node.fields])
        if not needs_builder(node):
            return lambda values: pa.RecordBatch.from_pylist(list(values), schema=schema)
        fields = [
            (f.name, column_builder(f.type), _default_value(f.type, f.default) if f.has_default else None)
            for f in node.fields
        ]

        def build_rows(values: Sequence[Any]) -> pa.RecordBatch:
            for v in values:
                if not isinstance(v, dict):
                    raise EncodeError(f"expected a record (dict), got {v!r}")
            cols = [build([v.get(name, default) for v in values]) for name, build, default in fields]
            return pa.RecordBatch.from_arrays(cols, schema=schema)

        return build_rows
    build = column_builder(node)
    return lambda values: pa.RecordBatch.from_arrays([build(values)], names=["value"])
