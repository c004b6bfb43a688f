"""Arrow rows -> schemaless Avro bodies (the reverse of :class:`pulsar_codec.avro.Decoder`).

The writer is compiled once per schema into one closure per schema node; values come from
``to_pylist`` (pyarrow's C conversion), logical types are converted back to their Avro
representation (epoch days / milli-, micro-, nanoseconds, unscaled big-endian decimals, 12-byte
durations), dictionary (enum) values are written as symbol indexes, and a value for a union is
written with the first branch whose type accepts it.
"""

from __future__ import annotations

import datetime
import decimal
import json
import struct
import uuid
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from ..errors import EncodeError, SchemaError
from .schema import Array, Enum, Fixed, Map, Primitive, Record, Schema, Union, parse

__all__ = ["Encoder", "schema_from_arrow", "schema_for"]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
_EPOCH_DATE = datetime.date(1970, 1, 1)
_pack_f = struct.Struct("<f").pack
_pack_d = struct.Struct("<d").pack


def _zz(out: bytearray, n: int) -> None:
    v = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _since_epoch(v: Any, unit: int, tz: bool) -> int:
    if isinstance(v, int):
        return v
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            delta = v - _EPOCH_NAIVE
        else:
            delta = v - _EPOCH
        return (delta.days * 86400 + delta.seconds) * unit + delta.microseconds * unit // 1_000_000
    if hasattr(v, "value"):  # pandas Timestamp (nanoseconds)
        return int(v.value) * unit // 1_000_000_000
    raise TypeError(f"cannot write {v!r} as a timestamp")


def _writer(node: Schema, path: str) -> Callable[[Any, bytearray], None]:  # noqa: C901 - one case per type
    if isinstance(node, Union):
        branches = [(b, _writer(b, f"{path}[{i}]")) for i, b in enumerate(node.branches)]

        def w_union(v, out):
            for i, (b, f) in enumerate(branches):
                if _accepts(b, v):
                    _zz(out, i)
                    f(v, out)
                    return
            raise EncodeError(f"{path}: {v!r} matches no branch of the union")

        return w_union
    if isinstance(node, Record):
        fields = [(f.name, _writer(f.type, f"{path}.{f.name}")) for f in node.fields]

        def w_record(v, out):
            if not isinstance(v, dict):
                raise EncodeError(f"{path}: expected a record (dict), got {v!r}")
            for name, f in fields:
                f(v.get(name), out)

        return w_record
    if isinstance(node, Enum):
        index = {s: i for i, s in enumerate(node.symbols)}

        def w_enum(v, out):
            try:
                _zz(out, index[v])
            except (KeyError, TypeError):
                raise EncodeError(f"{path}: {v!r} is not a symbol of enum {node.fullname}") from None

        return w_enum
    if isinstance(node, Array):
        item = _writer(node.items, f"{path}[]")

        def w_array(v, out):
            if v is None:
                raise EncodeError(f"{path}: null is not an array")
            if len(v):
                _zz(out, len(v))
                for x in v:
                    item(x, out)
            out.append(0)

        return w_array
    if isinstance(node, Map):
        value = _writer(node.values, f"{path}{{}}")

        def w_map(v, out):
            if v is None:
                raise EncodeError(f"{path}: null is not a map")
            items = v.items() if isinstance(v, dict) else v
            items = list(items)
            if items:
                _zz(out, len(items))
                for k, x in items:
                    kb = str(k).encode("utf-8")
                    _zz(out, len(kb))
                    out += kb
                    value(x, out)
            out.append(0)

        return w_map
    if isinstance(node, Fixed):
        size = node.size
        if node.logical == "decimal":
            scale = node.scale

            def w_dec_fixed(v, out):
                out += _unscaled(v, scale, path).to_bytes(size, "big", signed=True)

            return w_dec_fixed
        if node.logical == "duration":

            def w_duration(v, out):
                months, days, nanos = (v.months, v.days, v.nanoseconds) if hasattr(v, "months") else v
                out += struct.pack("<III", months, days, nanos // 1_000_000)

            return w_duration

        def w_fixed(v, out):
            if not isinstance(v, (bytes, bytearray)) or len(v) != size:
                raise EncodeError(f"{path}: expected {size} bytes, got {v!r}")
            out += v

        return w_fixed
    assert isinstance(node, Primitive)
    t, lt = node.type, node.logical
    if lt == "decimal":
        scale = node.scale

        def w_dec(v, out):
            n = _unscaled(v, scale, path)
            data = n.to_bytes((n.bit_length() + 8) // 8 or 1, "big", signed=True)
            _zz(out, len(data))
            out += data

        return w_dec
    if lt == "date":
        return lambda v, out: _zz(out, (v - _EPOCH_DATE).days if isinstance(v, datetime.date) else int(v))
    if lt in ("time-millis", "time-micros"):
        unit = 1000 if lt == "time-millis" else 1_000_000

        def w_time(v, out):
            if isinstance(v, datetime.time):
                us = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
                v = us * unit // 1_000_000
            _zz(out, int(v))

        return w_time
    if lt and "timestamp" in lt:
        unit = {"millis": 1000, "micros": 1_000_000, "nanos": 1_000_000_000}[lt.rsplit("-", 1)[1]]
        return lambda v, out: _zz(out, _since_epoch(v, unit, True))
    if t == "null":

        def w_null(v, out):
            if v is not None:
                raise EncodeError(f"{path}: expected null, got {v!r}")

        return w_null
    if t == "boolean":

        def w_bool(v, out):
            if not isinstance(v, bool):
                raise EncodeError(f"{path}: expected a boolean, got {v!r}")
            out.append(1 if v else 0)

        return w_bool
    if t in ("int", "long"):
        lim = 2**31 if t == "int" else 2**63

        def w_int(v, out):
            if not isinstance(v, int) or isinstance(v, bool) or not -lim <= v < lim:
                raise EncodeError(f"{path}: {v!r} is not a valid {t}")
            _zz(out, v)

        return w_int
    if t in ("float", "double"):
        pack = _pack_f if t == "float" else _pack_d

        def w_float(v, out):
            try:
                out += pack(v)
            except (struct.error, TypeError, OverflowError):
                raise EncodeError(f"{path}: {v!r} is not a valid {t}") from None

        return w_float
    if t == "string":

        def w_string(v, out):
            if isinstance(v, uuid.UUID):
                v = str(v)
            if not isinstance(v, str):
                raise EncodeError(f"{path}: expected a string, got {v!r}")
            data = v.encode("utf-8")
            _zz(out, len(data))
            out += data

        return w_string

    def w_bytes(v, out):
        if not isinstance(v, (bytes, bytearray)):
            raise EncodeError(f"{path}: expected bytes, got {v!r}")
        _zz(out, len(v))
        out += v

    return w_bytes


def _unscaled(v: Any, scale: int, path: str) -> int:
    if not isinstance(v, decimal.Decimal):
        raise EncodeError(f"{path}: expected a Decimal, got {v!r}")
    return int(v.scaleb(scale).to_integral_value())


def _accepts(node: Schema, v: Any) -> bool:
    t = node.type
    if v is None:
        return t == "null"
    if isinstance(node, Record):
        return isinstance(v, dict) and all(k in {f.name for f in node.fields} for k in v)
    if isinstance(node, Enum):
        return isinstance(v, str) and v in node.symbols
    if isinstance(node, Array):
        return isinstance(v, (list, tuple)) and not (v and isinstance(v[0], tuple))
    if isinstance(node, Map):
        return isinstance(v, dict) or (isinstance(v, list) and all(isinstance(x, tuple) for x in v))
    if isinstance(node, Fixed):
        if node.logical == "decimal":
            return isinstance(v, decimal.Decimal)
        return isinstance(v, (bytes, bytearray)) and len(v) == node.size
    lt = node.logical
    if lt == "decimal":
        return isinstance(v, decimal.Decimal)
    if lt == "date":
        return isinstance(v, datetime.date) and not isinstance(v, datetime.datetime)
    if lt and "timestamp" in lt:
        return isinstance(v, datetime.datetime)
    if lt and lt.startswith("time-"):
        return isinstance(v, datetime.time)
    if t == "boolean":
        return isinstance(v, bool)
    if t in ("int", "long"):
        return isinstance(v, int) and not isinstance(v, bool) and -(2 ** (31 if t == "int" else 63)) <= v < 2 ** (31 if t == "int" else 63)
    if t in ("float", "double"):
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "string":
        return isinstance(v, (str, uuid.UUID))
    if t == "bytes":
        return isinstance(v, (bytes, bytearray))
    return False


# -- Arrow schema -> Avro schema ----------------------------------------------------------------------


def _avro_of(t: pa.DataType, name: str, nullable: bool, names: set) -> Any:
    base = _avro_type(t, name, names)
    return ["null", base] if nullable else base


def _avro_type(t: pa.DataType, name: str, names: set) -> Any:  # noqa: C901
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t) or pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return "int"
    if pa.types.is_integer(t):
        return "long"
    if pa.types.is_float32(t) or pa.types.is_float16(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "bytes"
    if pa.types.is_fixed_size_binary(t):
        return {"type": "fixed", "name": _unique(name, names), "size": t.byte_width}
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(t):
        return {"type": "long", "logicalType": "time-micros"}
    if pa.types.is_timestamp(t):
        unit = {"s": "millis", "ms": "millis", "us": "micros", "ns": "nanos"}[t.unit]
        return {"type": "long", "logicalType": ("timestamp-" if t.tz else "local-timestamp-") + unit}
    if pa.types.is_decimal(t):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    if pa.types.is_interval(t):
        return {"type": "fixed", "name": _unique(name, names), "size": 12, "logicalType": "duration"}
    if pa.types.is_dictionary(t):
        return _avro_type(t.value_type, name, names)
    if pa.types.is_map(t):
        return {"type": "map", "values": _avro_of(t.item_type, name + "_value", t.item_field.nullable, names)}
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return {"type": "array", "items": _avro_of(t.value_type, name + "_item", t.value_field.nullable, names)}
    if pa.types.is_struct(t):
        return {
            "type": "record",
            "name": _unique(name, names),
            "fields": [{"name": f.name, "type": _avro_of(f.type, f.name, f.nullable, names)} for f in t],
        }
    if pa.types.is_union(t):
        return [_avro_type(f.type, f.name, names) for f in t]
    if pa.types.is_null(t):
        return "null"
    raise SchemaError(f"Arrow type {t} has no Avro equivalent")


def _unique(name: str, names: set) -> str:
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "T"
    if base[0].isdigit():
        base = "_" + base
    out, i = base, 1
    while out in names:
        i += 1
        out = f"{base}{i}"
    names.add(out)
    return out


def schema_from_arrow(schema: pa.Schema, name: str = "Record", nulls: dict[str, bool] | None = None) -> Schema:
    """An Avro record schema for an Arrow schema. A top-level field is ``["null", T]`` when it is
    nullable and (if ``nulls`` is given) actually holds nulls; nested fields follow Arrow's flag."""
    names: set = set()
    top = _unique(name, names)
    fields = []
    for f in schema:
        nullable = f.nullable and (nulls is None or nulls.get(f.name, False))
        fields.append({"name": f.name, "type": _avro_of(f.type, f.name, nullable, names)})
    return parse({"type": "record", "name": top, "fields": fields})


def schema_for(batch: Any) -> Schema:
    """The Avro schema to write ``batch`` with: ``b"avro.schema"`` metadata if present, else derived."""
    meta = batch.schema.metadata or {}
    if b"avro.schema" in meta:
        return parse(meta[b"avro.schema"].decode("utf-8"))
    nulls = {n: batch.column(n).null_count > 0 for n in batch.schema.names}
    return schema_from_arrow(batch.schema, nulls=nulls)


class Encoder:
    """Encode Arrow rows as schemaless Avro bodies.

    Parameters
    ----------
    schema : str, dict, list or Schema
        The writer schema. For a record schema, columns are matched to fields by name; for any
        other schema the batch must have one column (named ``value`` by the decoder).
    """

    def __init__(self, schema: Any) -> None:
        self.schema = parse(schema)
        self._write = _writer(self.schema, self.schema.fullname if hasattr(self.schema, "fullname") else self.schema.type)

    def encode(self, batch_or_table: Any) -> pa.Array:
        """Encode every row. A row whose columns are all null, where the schema cannot hold that
        (a null message as the decoder returns it), becomes a null body.

        Returns
        -------
        pa.BinaryArray

        Raises
        ------
        EncodeError
            A value that does not fit the schema (the message names the field path and the row).
        """
        data = batch_or_table
        if isinstance(data, pa.Table):
            data = data.combine_chunks()
        is_record = isinstance(self.schema, Record)
        if is_record:
            names = [f.name for f in self.schema.fields]
            missing = [n for n in names if n not in data.schema.names]
            if missing:
                raise EncodeError(f"the batch has no column for field(s) {missing}")
            cols = [data.column(n) for n in names]
        else:
            if data.num_columns != 1:
                raise EncodeError("a non-record schema needs a batch with exactly one column")
            cols = [data.column(0)]
        n = data.num_rows
        if cols:
            null_list = np.logical_and.reduce([np.asarray(c.is_null().to_numpy(zero_copy_only=False)) for c in cols]).tolist()
        else:
            null_list = [False] * n
        values = [c.to_pylist() for c in cols]
        write = self._write
        # an all-null row that the schema cannot hold is a null message (a tombstone)
        all_null_ok = all(_admits_null(f.type) for f in self.schema.fields) if is_record else _admits_null(self.schema)
        out: list[bytes | None] = []
        for i in range(n):
            if null_list[i] and not all_null_ok:
                out.append(None)
                continue
            buf = bytearray()
            try:
                if is_record:
                    write({name: values[j][i] for j, name in enumerate(names)}, buf)
                else:
                    write(values[0][i], buf)
            except EncodeError as exc:
                raise EncodeError(f"row {i}: {exc}", index=i) from None
            out.append(bytes(buf))
        return pa.array(out, pa.binary())

    @property
    def schema_json(self) -> str:
        from .schema import to_json

        return json.dumps(to_json(self.schema))


def _admits_null(node: Schema) -> bool:
    return node.type == "null" or (isinstance(node, Union) and node.null_index is not None)
