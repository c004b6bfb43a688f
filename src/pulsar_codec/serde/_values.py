"""Python values <-> Arrow columns, in the shapes confluent-kafka's Avro serdes use.

confluent-kafka reads and writes Avro with fastavro, so its dicts follow fastavro's conventions.
The pipeline speaks Arrow; these converters bridge the two, one compiled per schema and reused:

- :func:`rows_reader` turns a decoded batch into fastavro-shaped values. ``to_pylist`` is already
  right for most types; the converters only step in where pyarrow differs (maps are dicts, not
  lists of pairs; ``uuid`` strings are ``uuid.UUID``; timestamps carry ``datetime.timezone.utc``;
  nanosecond timestamps and ``duration`` stay raw, an int and 12 bytes, as fastavro leaves them).
- :func:`value_reader` does the same to the one value ``MessageDecoder.decode_value`` gives (the
  row a batch would hold, as ``to_pylist`` gives it), for the per-message deserializer.

Values are written by the Avro format's row writer (``MessageEncoder.encode_value``), which already
takes fastavro's shapes (a missing field takes its default, a general union's branch is chosen by
the value, a ``duration`` may be its 12 bytes).
"""

from __future__ import annotations

import datetime
import struct
import uuid
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ..formats.avro.schema import Array, Fixed, Map, Primitive, Record, Schema, Union

__all__ = ["rows_reader", "value_reader"]

ColumnReader = Callable[[pa.Array], list[Any]]

_UTC = datetime.UTC
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=_UTC)
_EPOCH = datetime.datetime(1970, 1, 1)
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


# -- one value: MessageDecoder.decode_value's values -> fastavro-shaped values ------------------------

ValueReader = Callable[[Any], Any]


class _NoValueReader(Exception):
    """Internal: this schema's values cannot be converted one by one (see :func:`value_reader`)."""


def _value_reader(node: Schema) -> ValueReader | None:  # noqa: C901 - one case per type
    """What :func:`column_reader` does for a column, done to one value (None passes through)."""
    if isinstance(node, Union):
        inner = node.nullable_of
        if inner is not None:
            return _value_reader(inner)
        # a general union's value does not say which branch it came from: only when no branch
        # converts is the value right as it is
        if any(_value_reader(b) is not None for b in node.branches):
            raise _NoValueReader
        return None
    if isinstance(node, Record):
        fields = [(f.name, r) for f in node.fields if (r := _value_reader(f.type)) is not None]
        if not fields:
            return None

        def read_record(v: Any) -> Any:
            if v is not None:  # a fresh dict of the decoder: converted in place
                for name, read in fields:
                    v[name] = read(v[name])
            return v

        return read_record
    if isinstance(node, Array):
        read_item = _value_reader(node.items)
        if read_item is None:
            return None
        item = read_item
        return lambda v: None if v is None else [item(x) for x in v]
    if isinstance(node, Map):
        read_value = _value_reader(node.values)
        if read_value is None:
            return lambda v: None if v is None else dict(v)
        value = read_value
        return lambda v: None if v is None else {k: value(x) for k, x in v}
    if isinstance(node, Fixed) and node.logical == "duration":
        return lambda v: None if v is None else _DURATION.pack(v.months, v.days, v.nanoseconds // 1_000_000)
    if isinstance(node, Primitive):
        lt = node.logical
        if lt == "uuid" and node.type == "string":
            return lambda v: None if v is None else uuid.UUID(v)
        if lt in ("timestamp-nanos", "local-timestamp-nanos"):
            return _nanos
        if lt in ("timestamp-millis", "timestamp-micros"):
            return lambda v: None if v is None else v.replace(tzinfo=_UTC)
    return None


def _nanos(v: Any) -> Any:
    """fastavro's nanosecond timestamp: the long itself (pyarrow gives a pandas Timestamp)."""
    if v is None or isinstance(v, int):
        return v
    if hasattr(v, "value"):
        return int(v.value)
    delta = v - (_EPOCH_UTC if v.tzinfo is not None else _EPOCH)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def value_reader(node: Schema) -> tuple[bool, ValueReader | None]:
    """A converter from one value :meth:`~pulsar_codec.pipeline.MessageDecoder.decode_value` gives
    (reader schema ``node``) to fastavro's shape of it: ``(True, None)`` when the value is already
    right, ``(True, convert)``, or ``(False, None)`` when only a decoded batch says enough (a
    general union with a branch that converts): the caller then reads a one-message batch with
    :func:`rows_reader`.
    """
    try:
        return True, _value_reader(node)
    except _NoValueReader:
        return False, None
