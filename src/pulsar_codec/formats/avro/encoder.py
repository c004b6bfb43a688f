"""Arrow rows -> schemaless Avro bodies (the reverse of :class:`pulsar_codec.avro.Decoder`).

Two paths, same bytes:

- the columnar path (the common one): the writer schema is bound to the batch's Arrow arrays as a
  flat program of nodes (validity, values, offsets, enum tables; timestamps, dates and times are
  rescaled to the Avro unit with numpy, floor division) and an encode kernel
  (``_avro_encode_c`` / ``_avro_encode_py``, the usual twins) writes every body into one buffer;
- the row path, for Arrow/Avro pairings the binding does not cover (general unions, durations,
  decimal256 or decimals of another scale, map keys that are not strings, uint64, float16, struct
  fields missing from the batch, int/float mismatches the row writer rejects): one closure per
  schema node over ``to_pylist`` values. Logical types are converted back to their Avro
  representation, dictionary (enum) values are written as symbol indexes, and a value for a union
  is written with the first branch whose type accepts it.

When the kernel stops at a bad value, the row writer is run on that row alone, so the
:class:`~pulsar_codec.errors.EncodeError` text is the same on both paths.
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

from ..._kernels import _backend
from ...errors import EncodeError, SchemaError
from .schema import Array, Enum, Fixed, Map, Primitive, Record, Schema, Union, parse

__all__ = ["Encoder", "schema_from_arrow", "schema_for"]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
_EPOCH_DATE = datetime.date(1970, 1, 1)
_pack_f = struct.Struct("<f").pack
_pack_d = struct.Struct("<d").pack


def _zz(out: bytearray, n: int) -> None:
    if not -(1 << 63) <= n < (1 << 63):  # masking would silently write another number
        raise OverflowError(f"{n} does not fit an Avro long")
    v = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _zz_int(out: bytearray, n: int) -> None:
    if not -(1 << 31) <= n < (1 << 31):
        raise OverflowError(f"{n} does not fit an Avro int")
    _zz(out, n)


def _since_epoch(v: Any, unit: int, tz: bool) -> int:
    if isinstance(v, int):
        return v
    if hasattr(v, "value") and isinstance(getattr(v, "value"), int):  # pandas Timestamp: exact nanoseconds
        return int(v.value) * unit // 1_000_000_000
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            delta = v - _EPOCH_NAIVE
        else:
            delta = v - _EPOCH
        return (delta.days * 86400 + delta.seconds) * unit + delta.microseconds * unit // 1_000_000
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
                try:
                    out += _unscaled(v, scale, path).to_bytes(size, "big", signed=True)
                except OverflowError:
                    raise EncodeError(f"{path}: {v!r} does not fit in {size} bytes") from None

            return w_dec_fixed
        if node.logical == "duration":

            def w_duration(v, out):
                months, days, nanos = (v.months, v.days, v.nanoseconds) if hasattr(v, "months") else v
                out += struct.pack("<III", months, days, nanos // 1_000_000)

            return _guarded(w_duration, path, "duration")

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
    # date and time-millis annotate an Avro int: a value past 32 bits is not a valid encoding
    zz = _zz_int if t == "int" else _zz
    if lt == "date":
        return _guarded(lambda v, out: zz(out, (v - _EPOCH_DATE).days if isinstance(v, datetime.date) else int(v)), path, lt)
    if lt in ("time-millis", "time-micros"):
        unit = 1000 if lt == "time-millis" else 1_000_000

        def w_time(v, out):
            if isinstance(v, datetime.time):
                us = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
                v = us * unit // 1_000_000
            zz(out, int(v))

        return _guarded(w_time, path, lt)
    if lt and "timestamp" in lt:
        unit = {"millis": 1000, "micros": 1_000_000, "nanos": 1_000_000_000}[lt.rsplit("-", 1)[1]]
        return _guarded(lambda v, out: _zz(out, _since_epoch(v, unit, True)), path, lt)
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


def _guarded(fn: Callable[[Any, bytearray], None], path: str, what: str) -> Callable[[Any, bytearray], None]:
    """A writer whose conversion errors (None, wrong types, out of range) become EncodeError."""

    def w(v, out):
        try:
            fn(v, out)
        except EncodeError:
            raise
        except (TypeError, ValueError, OverflowError, struct.error):
            raise EncodeError(f"{path}: {v!r} is not a valid {what}") from None

    return w


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


# -- columnar path: bind the schema to a batch's arrays ------------------------------------------------


class _Unbindable(Exception):
    """Internal: this Arrow/Avro pairing takes the row path."""


_UNIT_PER_S = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
_AVRO_UNIT = {"millis": 1000, "micros": 1_000_000, "nanos": 1_000_000_000}
_SIGNED_OK = (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32())


def _validity(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=np.uint8)


def _fixed(arr: pa.Array, dtype) -> np.ndarray:
    """The value buffer of a fixed-width array, offset applied (null slots hold whatever is there)."""
    buf = arr.buffers()[1]
    n = len(arr)
    if buf is None or n == 0:
        return np.zeros(n, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=arr.offset + n)[arr.offset :]


def _bits(arr: pa.Array) -> np.ndarray:
    buf = arr.buffers()[1]
    n = len(arr)
    if buf is None or n == 0:
        return np.zeros(n, dtype=np.uint8)
    return np.unpackbits(np.frombuffer(buf, dtype=np.uint8), bitorder="little")[arr.offset : arr.offset + n]


def _ints(arr: pa.Array) -> np.ndarray:
    return _fixed(arr, arr.type.to_pandas_dtype()).astype(np.int64)


def _binary(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(data bytes, int64 offsets n + 1 into them) of a binary/string array."""
    t = arr.type
    if pa.types.is_binary_view(t) or pa.types.is_string_view(t):
        arr = arr.cast(pa.large_binary())
        t = arr.type
    large = pa.types.is_large_binary(t) or pa.types.is_large_string(t)
    bufs = arr.buffers()
    n = len(arr)
    if bufs[1] is None:
        return np.zeros(1, dtype=np.uint8), np.zeros(n + 1, dtype=np.int64)
    offs = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32, count=arr.offset + n + 1)[arr.offset :]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None and bufs[2].size else np.zeros(1, np.uint8)
    return data, offs.astype(np.int64)


def _rescale(values: np.ndarray, src_per_s: int, dst_per_s: int, path: str) -> np.ndarray:
    if dst_per_s >= src_per_s:
        factor = dst_per_s // src_per_s
        limit = np.iinfo(np.int64).max // factor
        if factor > 1 and len(values) and (values.max() > limit or values.min() < -limit):
            raise _Unbindable(path)  # int64 would wrap silently: the row path checks each value
        return values * factor
    return np.floor_divide(values, src_per_s // dst_per_s)


def _is_int(t: pa.DataType) -> bool:
    return any(t == k for k in _SIGNED_OK)


class _Binder:
    """Builds the node list of the encode kernels for one batch (see ``_avro_encode_py``)."""

    def __init__(self, k) -> None:
        self.k = k
        self.nodes: list = []
        self.kids: list[int] = []
        self.paths: list[str] = []
        self.capacity = 0

    def node(self, code, path, valid=None, data=None, offs=None, table=None, arg=0, arg2=0, children=()) -> int:
        idx = len(self.nodes)
        self.nodes.append(None)
        self.paths.append(path)
        kids = [c() for c in children]  # children are built after their parent's slot is taken
        first = len(self.kids)
        self.kids.extend(kids)
        self.nodes[idx] = (code, first, len(kids), arg, arg2, valid, data, offs, table)
        return idx

    def bind(self, node: Schema, arr: pa.Array, path: str, strict: bool = False, own_valid: bool = True) -> int:  # noqa: C901
        k = self.k
        t = arr.type
        valid = _validity(arr) if own_valid else None
        if isinstance(node, Union):
            if len(node.branches) != 2 or node.null_index is None:
                raise _Unbindable(path)
            vb = 1 - node.null_index
            inner = node.branches[vb]
            return self.node(
                k.E_OPTION, path, valid=valid, arg=node.null_index, arg2=vb,
                children=[lambda: self.bind(inner, arr, f"{path}[{vb}]", strict=True, own_valid=False)],
            )
        if node.type == "null":
            return self.node(k.E_NULL, path, valid=valid)
        if isinstance(node, Record):
            if not pa.types.is_struct(t):
                raise _Unbindable(path)
            names = [t.field(i).name for i in range(t.num_fields)]
            wanted = {f.name for f in node.fields}
            if any(f.name not in names for f in node.fields) or (strict and any(n not in wanted for n in names)):
                raise _Unbindable(path)
            return self.node(
                k.E_RECORD, path, valid=valid,
                children=[lambda f=f: self.bind(f.type, arr.field(f.name), f"{path}.{f.name}") for f in node.fields],
            )
        if isinstance(node, Enum):
            if pa.types.is_string(t) or pa.types.is_large_string(t):
                arr = arr.dictionary_encode()
                t = arr.type
            if not pa.types.is_dictionary(t) or not (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)):
                raise _Unbindable(path)
            if not _is_int(t.index_type):
                raise _Unbindable(path)
            index = {s: i for i, s in enumerate(node.symbols)}
            table = np.array([index.get(s, -1) for s in arr.dictionary.to_pylist()] or [-1], dtype=np.int32)
            return self.node(k.E_ENUM, path, valid=valid, data=_ints(arr.indices), table=table)
        if isinstance(node, Array):
            if pa.types.is_list(t) or pa.types.is_large_list(t):
                offs = arr.offsets.to_numpy().astype(np.int64)
            elif pa.types.is_fixed_size_list(t):
                size = t.list_size
                offs = (np.arange(len(arr) + 1, dtype=np.int64) + arr.offset) * size
            else:
                raise _Unbindable(path)
            values = arr.values
            return self.node(k.E_ARRAY, path, valid=valid, offs=offs,
                             children=[lambda: self.bind(node.items, values, f"{path}[]")])
        if isinstance(node, Map):
            if not pa.types.is_map(t) or not (pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)):
                raise _Unbindable(path)
            offs = arr.offsets.to_numpy().astype(np.int64)
            entries = arr.values
            keys, items = entries.field(0), entries.field(1)

            def key_node():
                data, koffs = _binary(keys)
                self.capacity += int(koffs[-1] - koffs[0]) if len(koffs) else 0
                return self.node(k.E_BYTES, f"{path}{{key}}", valid=_validity(keys), data=data, offs=koffs)

            return self.node(k.E_MAP, path, valid=valid, offs=offs,
                             children=[key_node, lambda: self.bind(node.values, items, f"{path}{{}}")])
        if isinstance(node, Fixed):
            if node.logical == "decimal":
                if not pa.types.is_decimal128(t) or t.scale != node.scale:
                    raise _Unbindable(path)
                return self.node(k.E_DEC_FIXED, path, valid=valid, data=_fixed(arr, "V16").view(np.uint8), arg=node.size)
            if node.logical is not None or not pa.types.is_fixed_size_binary(t):
                raise _Unbindable(path)
            w = t.byte_width
            buf = arr.buffers()[1]
            data = np.frombuffer(buf, dtype=np.uint8)[arr.offset * w : (arr.offset + len(arr)) * w] if buf is not None and w else np.zeros(1, np.uint8)
            self.capacity += len(arr) * w
            return self.node(k.E_FIXED, path, valid=valid, data=data, arg=node.size, arg2=w)
        assert isinstance(node, Primitive)
        nt, lt = node.type, node.logical
        if lt == "decimal":
            if not pa.types.is_decimal128(t) or t.scale != node.scale:
                raise _Unbindable(path)
            return self.node(k.E_DEC_BYTES, path, valid=valid, data=_fixed(arr, "V16").view(np.uint8))
        if lt == "date" or lt in ("time-millis", "time-micros") or (lt and "timestamp" in lt):
            # date and time-millis annotate an Avro int: E_INT range-checks their values
            code = k.E_INT if nt == "int" else k.E_LONG
            if _is_int(t) and not strict:  # the row writer takes plain integers as they are
                return self.node(code, path, valid=valid, data=_ints(arr))
            if lt == "date":
                if pa.types.is_date32(t):
                    return self.node(code, path, valid=valid, data=_fixed(arr, np.int32).astype(np.int64))
                if pa.types.is_date64(t):
                    return self.node(code, path, valid=valid, data=np.floor_divide(_fixed(arr, np.int64), 86_400_000))
                raise _Unbindable(path)
            if lt.startswith("time-"):
                if not (pa.types.is_time32(t) or pa.types.is_time64(t)):
                    raise _Unbindable(path)
                src = _fixed(arr, np.int32 if pa.types.is_time32(t) else np.int64).astype(np.int64)
                dst = 1000 if lt == "time-millis" else 1_000_000
                return self.node(code, path, valid=valid, data=_rescale(src, _UNIT_PER_S[t.unit], dst, path))
            if not pa.types.is_timestamp(t):
                raise _Unbindable(path)
            dst = _AVRO_UNIT[lt.rsplit("-", 1)[1]]
            return self.node(k.E_LONG, path, valid=valid, data=_rescale(_fixed(arr, np.int64), _UNIT_PER_S[t.unit], dst, path))
        if nt == "boolean":
            if not pa.types.is_boolean(t):
                raise _Unbindable(path)
            return self.node(k.E_BOOL, path, valid=valid, data=_bits(arr))
        if nt in ("int", "long"):
            if not _is_int(t):
                raise _Unbindable(path)
            return self.node(k.E_INT if nt == "int" else k.E_LONG, path, valid=valid, data=_ints(arr))
        if nt in ("float", "double"):
            if pa.types.is_float32(t) or pa.types.is_float64(t):
                data = _fixed(arr, np.float32 if pa.types.is_float32(t) else np.float64).astype(np.float64)
            elif _is_int(t):
                data = _ints(arr).astype(np.float64)
            else:
                raise _Unbindable(path)
            return self.node(k.E_FLOAT if nt == "float" else k.E_DOUBLE, path, valid=valid, data=data)
        if nt == "string":
            if pa.types.is_dictionary(t) and (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)):
                arr = arr.dictionary_decode()
                t = arr.type
            if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)):
                raise _Unbindable(path)
        elif nt == "bytes":
            if not (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)):
                raise _Unbindable(path)
        else:  # pragma: no cover - parse() only produces the types above
            raise _Unbindable(path)
        data, offs = _binary(arr)
        self.capacity += int(offs[-1] - offs[0]) if len(offs) else 0
        return self.node(k.E_BYTES, path, valid=valid, data=data, offs=offs)


_GENERIC = {
    1: "null is not allowed here",
    2: "expected null",
    3: "value out of the Avro int range",
    4: "value out of the float range",
    5: "fixed size differs from the Arrow width",
    6: "not a symbol of the enum",
    7: "decimal does not fit the fixed size",
}


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
            cols = [_array(data.column(n)) for n in names]
        else:
            if data.num_columns != 1:
                raise EncodeError("a non-record schema needs a batch with exactly one column")
            cols = [_array(data.column(0))]
        n = data.num_rows
        null_rows = None
        if cols and any(c.null_count for c in cols):
            null_rows = np.logical_and.reduce([np.asarray(c.is_null().to_numpy(zero_copy_only=False)) for c in cols])
        # an all-null row that the schema cannot hold is a null message (a tombstone)
        all_null_ok = all(_admits_null(f.type) for f in self.schema.fields) if is_record else _admits_null(self.schema)
        skip = None if (null_rows is None or all_null_ok or not null_rows.any()) else null_rows
        try:
            binder = _Binder(_backend.active().avro_encode)
            if is_record:
                root = binder.node(
                    binder.k.E_RECORD, self._top,
                    children=[lambda f=f, c=c: binder.bind(f.type, c, f"{self._top}.{f.name}") for f, c in zip(self.schema.fields, cols)],
                )
            else:
                root = binder.bind(self.schema, cols[0], self._top)
        except _Unbindable:
            return self._encode_rows(cols, n, is_record, skip)
        error, body, offsets = binder.k.encode(binder.nodes, binder.kids, root, skip, n, binder.capacity + 16 * n)
        if error is not None:
            status, row, node, detail = error
            self._raise_for_row(cols, row, is_record)  # the row writer's own message, when it has one
            raise EncodeError(f"row {row}: {binder.paths[node]}: {_GENERIC.get(status, 'cannot be encoded')}", index=row)
        validity = None if skip is None else pa.py_buffer(np.packbits(~skip, bitorder="little"))
        return pa.Array.from_buffers(pa.binary(), n, [validity, offsets, body], null_count=0 if skip is None else int(skip.sum()))

    @property
    def _top(self) -> str:
        return self.schema.fullname if hasattr(self.schema, "fullname") else self.schema.type

    def _row(self, cols: list, i: int, is_record: bool) -> Any:
        if is_record:
            return {f.name: c[i].as_py() for f, c in zip(self.schema.fields, cols)}
        return cols[0][i].as_py()

    def _raise_for_row(self, cols: list, i: int, is_record: bool) -> None:
        try:
            self._write(self._row(cols, i, is_record), bytearray())
        except EncodeError as exc:
            raise EncodeError(f"row {i}: {exc}", index=i) from None

    def _encode_rows(self, cols: list, n: int, is_record: bool, skip: np.ndarray | None) -> pa.Array:
        """The row path: one closure per schema node over ``to_pylist`` values."""
        try:
            values = [c.to_pylist() for c in cols]
        except (OverflowError, ValueError) as exc:  # e.g. a timestamp far past what datetime holds
            raise EncodeError(f"{self._top}: a value cannot be encoded ({exc})") from None
        names = [f.name for f in self.schema.fields] if is_record else []
        skip_list = [False] * n if skip is None else skip.tolist()
        write = self._write
        out: list[bytes | None] = []
        for i in range(n):
            if skip_list[i]:
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


def _array(col: Any) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _admits_null(node: Schema) -> bool:
    return node.type == "null" or (isinstance(node, Union) and node.null_index is not None)
