"""Pulsar primitive payloads from whole Arrow columns, with numpy: the engine of ``encode_array``.

Every fixed-width primitive is a big-endian number (or two), so a column is encoded by converting
it to int64 / float numbers in the wire unit, checking the range once for the whole column, and
viewing the big-endian bytes as one ``rows x width`` matrix that becomes the payloads' data buffer.
:func:`pulsar_codec.primitives.encode_array` checks the schema type and handles STRING and plain
sequences; this module handles the Arrow columns of every other primitive type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ._arrow import as_binary_array, validity_buffer, validity_of
from ._kernels import defs
from .errors import EncodeError
from .pulsar.schema_info import SchemaType

__all__ = ["combined", "plain_binary", "require", "encode_column"]

_Bools = npt.NDArray[np.bool_]
_Ints = npt.NDArray[np.int64]

_UNIT_NS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
_INT_BYTES = {SchemaType.INT8: 1, SchemaType.INT16: 2, SchemaType.INT32: 4, SchemaType.INT64: 8}
_DOUBLE_NAN = np.uint64(0x7FF8000000000000)  # what Java's doubleToLongBits writes for every NaN
_INT64_MAX = 2**63 - 1
_INT32_MAX = 2**31 - 1


def combined(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One array from an array or a ChunkedArray (an empty one keeps its type)."""
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks else pa.array([], values.type)
    return values


def plain_binary(arr: pa.Array) -> pa.Array:
    """``binary`` payloads from binary-like or string data, ``large_binary`` only past 2 GiB."""
    if arr.type in (pa.string(), pa.large_string()):
        arr = arr.cast(pa.binary() if arr.type == pa.string() else pa.large_binary())
    if arr.type == pa.large_binary():
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)
        if len(arr) == 0 or int(offsets[arr.offset + len(arr)]) - int(offsets[arr.offset]) <= _INT32_MAX:
            arr = arr.cast(pa.binary())
    return arr


def require(arr: pa.Array, ok: bool, st: SchemaType, expected: str) -> None:
    """Refuse an Arrow type that ``st`` cannot be encoded from.

    Raises
    ------
    EncodeError
        ``ok`` is false; the message names the type found and ``expected``.
    """
    if not ok:
        raise EncodeError(f"{st.name} cannot be encoded from Arrow type {arr.type}; expected {expected}")


def _first_bad(bad: _Bools) -> int | None:
    rows = np.flatnonzero(bad)
    return int(rows[0]) if len(rows) else None


def _ints(arr: pa.Array, valid: _Bools) -> _Ints:
    """int64 numbers of an integer or temporal array, in its own unit (nulls as 0)."""
    t = arr.type
    if pa.types.is_timestamp(t) or pa.types.is_date64(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        arr = arr.cast(pa.int64())
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        arr = arr.cast(pa.int32())
    raw = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False))
    if pa.types.is_uint64(arr.type):
        i = _first_bad((raw > np.uint64(_INT64_MAX)) & valid)
        if i is not None:
            raise EncodeError(f"value {int(raw[i])} of row {i} does not fit 64 bits", index=i)
    return raw.astype(np.int64, copy=False)


def _rescale(v: _Ints, from_ns: int, to_ns: int, valid: _Bools, what: str) -> _Ints:
    """Change unit: floor towards minus infinity when getting coarser; overflow is an error."""
    if from_ns == to_ns:
        return v
    if from_ns < to_ns:
        return np.floor_divide(v, to_ns // from_ns)
    factor = from_ns // to_ns
    limit = _INT64_MAX // factor
    i = _first_bad(((v > limit) | (v < -limit)) & valid)
    if i is not None:
        raise EncodeError(f"{what} value of row {i} overflows 64-bit nanoseconds", index=i)
    return v * factor


def _big_endian(values: npt.NDArray[Any], dtype: str) -> npt.NDArray[np.uint8]:
    """Each value's bytes in ``dtype`` (a big-endian numpy type), one row per value."""
    out = values.astype(dtype)
    return out.view(np.uint8).reshape(len(values), out.dtype.itemsize)


def _payloads(matrix: npt.NDArray[np.uint8], valid: _Bools | None) -> pa.Array:
    """A binary array whose row i is ``matrix[i]``, null (and empty) where ``valid`` is False."""
    n, width = matrix.shape
    if valid is None:
        data = np.ascontiguousarray(matrix).reshape(-1)
        offsets = np.arange(n + 1, dtype=np.int64) * width
    else:
        data = np.ascontiguousarray(matrix[valid]).reshape(-1)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(valid.astype(np.int64) * width, out=offsets[1:])
    large = int(offsets[-1]) > _INT32_MAX
    null_count = 0 if valid is None else int(n - np.count_nonzero(valid))
    return pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(),
        n,
        [validity_buffer(valid), pa.py_buffer(offsets if large else offsets.astype(np.int32)), pa.py_buffer(data)],
        null_count=null_count,
    )


def _longs(*columns: _Ints) -> npt.NDArray[np.uint8]:
    """Rows of big-endian i64 fields, one field per column."""
    return np.hstack([_big_endian(c, ">i8") for c in columns])


def encode_column(st: SchemaType, arr: pa.Array) -> pa.Array:
    """Payloads of every value of ``arr`` for a primitive type other than STRING.

    Parameters
    ----------
    st : SchemaType
        BYTES, NONE, BOOLEAN, the INT, FLOAT and DOUBLE types, or a temporal type.
    arr : pa.Array
        One array (see :func:`combined`) of a type ``st`` can be encoded from; integers are taken
        in the unit of :func:`pulsar_codec.primitives.arrow_type`.

    Returns
    -------
    pa.Array
        ``binary`` (``large_binary`` past 2 GiB), null where the value is null.

    Raises
    ------
    EncodeError
        An incompatible Arrow type, or a value out of range (``index`` is its row).
    """
    t = arr.type
    valid_or_none = validity_of(arr)
    valid = np.ones(len(arr), dtype=bool) if valid_or_none is None else valid_or_none
    if st in (SchemaType.BYTES, SchemaType.NONE):
        binary_like = pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
        require(arr, binary_like or pa.types.is_fixed_size_binary(t), st, "binary")
        return plain_binary(as_binary_array(arr))
    if st is SchemaType.BOOLEAN:
        require(arr, pa.types.is_boolean(t), st, "bool")
        bits = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint8)
        return _payloads(bits.reshape(len(arr), 1), valid_or_none)
    if st in _INT_BYTES:
        require(arr, pa.types.is_integer(t), st, "an integer type")
        width = _INT_BYTES[st]
        v = _ints(arr, valid)
        lo, hi = -(2 ** (8 * width - 1)), 2 ** (8 * width - 1) - 1
        i = _first_bad(((v < lo) | (v > hi)) & valid)
        if i is not None:
            raise EncodeError(f"{int(v[i])} of row {i} is out of range for {st.name} ({lo} to {hi})", index=i)
        return _payloads(_big_endian(v, f">i{width}"), valid_or_none)
    if st is SchemaType.FLOAT:
        return _payloads(_big_endian(_float32_bits(arr, valid), ">u4"), valid_or_none)
    if st is SchemaType.DOUBLE:
        require(arr, pa.types.is_floating(t) or pa.types.is_integer(t), st, "a numeric type")
        d = np.asarray(arr.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64)
        double_bits = d.view(np.uint64).copy()
        double_bits[np.isnan(d)] = _DOUBLE_NAN
        return _payloads(_big_endian(double_bits, ">u8"), valid_or_none)
    return _payloads(_temporal(st, arr, valid), valid_or_none)


def _float32_bits(arr: pa.Array, valid: _Bools) -> npt.NDArray[np.uint32]:
    """The FLOAT bits of a numeric column: float32 input keeps its exact bits (NaN payloads too)."""
    require(arr, pa.types.is_floating(arr.type) or pa.types.is_integer(arr.type), SchemaType.FLOAT, "a numeric type")
    if arr.type == pa.float32():
        f = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float32)
        return f.view(np.uint32)
    wide = np.asarray(arr.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64)
    with np.errstate(over="ignore"):
        f = wide.astype(np.float32)
    i = _first_bad(np.isinf(f) & np.isfinite(wide) & valid)
    if i is not None:
        raise EncodeError(f"{wide[i]!r} of row {i} is out of range for FLOAT", index=i)
    return f.view(np.uint32)


def _temporal(st: SchemaType, arr: pa.Array, valid: _Bools) -> npt.NDArray[np.uint8]:
    """The payload matrix of a DATE, TIMESTAMP, TIME, INSTANT or LOCAL_* column."""
    t = arr.type
    is_int = pa.types.is_integer(t)
    ms_ns = _UNIT_NS["ms"]
    if st in (SchemaType.DATE, SchemaType.TIMESTAMP):
        if pa.types.is_timestamp(t):
            return _longs(_rescale(_ints(arr, valid), _UNIT_NS[t.unit], ms_ns, valid, st.name))
        if pa.types.is_date32(t):
            return _longs(_rescale(_ints(arr, valid), defs.MS_PER_DAY, 1, valid, st.name))
        require(arr, pa.types.is_date64(t) or is_int, st, "timestamp, date or int64 milliseconds")
        return _longs(_ints(arr, valid))
    if st is SchemaType.TIME:
        if pa.types.is_time32(t) or pa.types.is_time64(t):
            return _longs(_rescale(_ints(arr, valid), _UNIT_NS[t.unit], ms_ns, valid, st.name))
        require(arr, is_int, st, "time32/time64 or int64 milliseconds")
        return _longs(_ints(arr, valid))
    if st is SchemaType.LOCAL_DATE:
        if pa.types.is_date64(t):
            return _longs(np.floor_divide(_ints(arr, valid), defs.MS_PER_DAY))
        require(arr, pa.types.is_date32(t) or is_int, st, "date32, date64 or int days")
        return _longs(_ints(arr, valid))
    if st is SchemaType.LOCAL_TIME:
        if pa.types.is_time32(t) or pa.types.is_time64(t):
            nod = _rescale(_ints(arr, valid), _UNIT_NS[t.unit], 1, valid, st.name)
        else:
            require(arr, is_int, st, "time32/time64 or int64 nanoseconds of the day")
            nod = _ints(arr, valid)
        i = _first_bad(((nod < 0) | (nod >= defs.NS_PER_DAY)) & valid)
        if i is not None:
            raise EncodeError(f"{int(nod[i])} of row {i} is not a nanosecond of the day", index=i)
        return _longs(nod)
    # INSTANT (i64 seconds || i32 nanoseconds) and LOCAL_DATE_TIME (i64 day || i64 nanosecond of the day)
    if pa.types.is_timestamp(t):
        if st is SchemaType.LOCAL_DATE_TIME and t.tz is not None:
            arr = pc.local_timestamp(arr)  # the wall-clock time in the value's zone
        ns = _rescale(_ints(arr, valid), _UNIT_NS[t.unit], 1, valid, st.name)
    else:
        require(arr, is_int, st, "timestamp or int64 nanoseconds")
        ns = _ints(arr, valid)
    if st is SchemaType.LOCAL_DATE_TIME:
        days, nod = np.divmod(ns, defs.NS_PER_DAY)
        return _longs(days, nod)
    seconds, nanos = np.divmod(ns, defs.NS_PER_S)
    return np.hstack([_big_endian(seconds, ">i8"), _big_endian(nanos, ">i4")])
