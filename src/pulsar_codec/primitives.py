"""Pulsar's primitive schema encodings, per value and in bulk over Arrow.

Primitive encodings (Java ``*Schema`` classes, all big-endian)
-------------------------------------------------------------
=================  =====  =================================================================
type               bytes  layout
=================  =====  =================================================================
BOOLEAN            1      ``01`` / ``00``; any non-zero byte reads true
INT8 .. INT64      1-8    two's complement
FLOAT / DOUBLE     4 / 8  IEEE bits; DOUBLE writes NaN as ``7FF8000000000000``
                          (``doubleToLongBits``), FLOAT keeps the NaN payload
STRING             n      UTF-8, or the charset of the ``__charset`` schema property
BYTES              n      as is (NONE is read and written the same way)
DATE / TIMESTAMP   8      epoch milliseconds (``java.util.Date`` / ``java.sql.Timestamp``)
TIME               8      epoch milliseconds of a ``java.sql.Time``
INSTANT            12     i64 epoch seconds || i32 nanoseconds
LOCAL_DATE         8      epoch day
LOCAL_TIME         8      nanosecond of the day
LOCAL_DATE_TIME    16     epoch day || nanosecond of the day
=================  =====  =================================================================

Python and Arrow types
----------------------
=================  ================================================  ==========================
type               :func:`decode` returns                            :func:`decode_array` type
=================  ================================================  ==========================
BOOLEAN            bool                                              bool
INT8 .. INT64      int                                               int8 .. int64
FLOAT / DOUBLE     float                                             float32 / float64
STRING / BYTES     str / bytes                                       string / binary
DATE, TIMESTAMP    ``datetime`` in UTC                               timestamp[ms, tz=UTC]
TIME               ``time`` (UTC time of day)                        time32[ms]
INSTANT            :class:`NanoDateTime` in UTC                      timestamp[ns, tz=UTC]
LOCAL_DATE         ``date``                                          date32
LOCAL_TIME         :class:`NanoTime`                                 time64[ns]
LOCAL_DATE_TIME    :class:`NanoDateTime` (naive)                     timestamp[ns]
=================  ================================================  ==========================

``java.util.Date`` and ``java.sql.Timestamp`` are points in time, so they read as UTC timestamps.
A ``java.sql.Time`` is epoch milliseconds too, but means a time of day: it reads as the UTC time
of day of that instant (``millis mod 86400000``, floored), which drops any date part a Java
producer left in it. The nanosecond types read as :class:`NanoDateTime` / :class:`NanoTime`, plain
``datetime`` / ``time`` subclasses that keep the sub-microsecond digits in ``.nanosecond`` (as
``pandas.Timestamp`` does), so nothing is lost. :func:`encode` takes the same types (any
``datetime``; a ``nanosecond`` attribute is honoured, so ``pandas.Timestamp`` works; a naive
``datetime`` for DATE / TIMESTAMP / INSTANT is taken as UTC; an aware one for LOCAL_DATE_TIME
contributes its wall-clock time) or an int in the unit of the Arrow column (milliseconds, days or
nanoseconds).

Strictness: lengths must be exact for the fixed-width types (Java checks only some of them), and
STRING must be valid in its charset (Java substitutes U+FFFD). Values that cannot be represented
are errors, never wrapped: a LOCAL_TIME outside the day, an INSTANT or LOCAL_DATE_TIME beyond the
int64 nanosecond range in bulk, a date beyond ``datetime``'s years 1-9999 per value.
"""

from __future__ import annotations

import codecs
import datetime as _dt
import math
import struct
from collections.abc import Iterable, Mapping
from typing import Any, NoReturn

import numpy as np
import pyarrow as pa

from . import _primitive_columns as _columns
from ._arrow import as_binary_array, binary_chunks, bool_mask, validity_buffer
from ._kernels import _backend, defs
from ._kernels._typing import KernelError
from ._time import (
    EPOCH,
    EPOCH_NAIVE,
    EPOCH_ORDINAL,
    NanoDateTime,
    NanoTime,
    datetime_ns,
    nano_datetime,
    nano_time,
    time_ns,
)
from .errors import EncodeError, ErrorCode, SchemaError, raise_for
from .pulsar.schema_info import CHARSET_PROPERTY, SchemaType

__all__ = [
    "NanoDateTime",
    "NanoTime",
    "arrow_type",
    "encode",
    "decode",
    "encode_array",
    "decode_array",
]

# -- tables ----------------------------------------------------------------------------------------

_KIND = {
    SchemaType.BOOLEAN: defs.KIND_BOOLEAN,
    SchemaType.INT8: defs.KIND_INT8,
    SchemaType.INT16: defs.KIND_INT16,
    SchemaType.INT32: defs.KIND_INT32,
    SchemaType.INT64: defs.KIND_INT64,
    SchemaType.FLOAT: defs.KIND_FLOAT,
    SchemaType.DOUBLE: defs.KIND_DOUBLE,
    SchemaType.DATE: defs.KIND_INT64,
    SchemaType.TIMESTAMP: defs.KIND_INT64,
    SchemaType.TIME: defs.KIND_TIME,
    SchemaType.INSTANT: defs.KIND_INSTANT,
    SchemaType.LOCAL_DATE: defs.KIND_LOCAL_DATE,
    SchemaType.LOCAL_TIME: defs.KIND_LOCAL_TIME,
    SchemaType.LOCAL_DATE_TIME: defs.KIND_LOCAL_DATE_TIME,
}
_WIDTH = {st: defs.WIDTHS[kind] for st, kind in _KIND.items()}
_DTYPE = {st: np.dtype(defs.DTYPES[kind]) for st, kind in _KIND.items()}
_ARROW = {
    SchemaType.BOOLEAN: pa.bool_(),
    SchemaType.INT8: pa.int8(),
    SchemaType.INT16: pa.int16(),
    SchemaType.INT32: pa.int32(),
    SchemaType.INT64: pa.int64(),
    SchemaType.FLOAT: pa.float32(),
    SchemaType.DOUBLE: pa.float64(),
    SchemaType.STRING: pa.string(),
    SchemaType.BYTES: pa.binary(),
    SchemaType.NONE: pa.binary(),
    SchemaType.DATE: pa.timestamp("ms", tz="UTC"),
    SchemaType.TIMESTAMP: pa.timestamp("ms", tz="UTC"),
    SchemaType.TIME: pa.time32("ms"),
    SchemaType.INSTANT: pa.timestamp("ns", tz="UTC"),
    SchemaType.LOCAL_DATE: pa.date32(),
    SchemaType.LOCAL_TIME: pa.time64("ns"),
    SchemaType.LOCAL_DATE_TIME: pa.timestamp("ns"),
}
_INTS = (SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64)
_I64 = (-(2**63), 2**63 - 1)
_TIME_OF_DAY = f"a time of day (0 to {defs.NS_PER_DAY - 1} ns)"
_JAVA_NAN = b"\x7f\xf8\x00\x00\x00\x00\x00\x00"  # Double.doubleToLongBits(NaN)

_unpack_int = {
    1: struct.Struct(">b").unpack,
    2: struct.Struct(">h").unpack,
    4: struct.Struct(">i").unpack,
    8: struct.Struct(">q").unpack,
}
_f32 = struct.Struct(">f")
_f64 = struct.Struct(">d")
_instant = struct.Struct(">qi")
_two_longs = struct.Struct(">qq")


def arrow_type(schema_type: SchemaType | int | str) -> pa.DataType:
    """The Arrow type :func:`decode_array` returns for a primitive schema type.

    Raises
    ------
    SchemaError
        Not a primitive type.
    """
    st = SchemaType.parse(schema_type)
    try:
        return _ARROW[st]
    except KeyError:
        raise SchemaError(f"{st.name} is not a primitive schema type") from None


def _primitive(schema_type: SchemaType | int | str) -> SchemaType:
    st = SchemaType.parse(schema_type)
    if st not in _ARROW:
        raise SchemaError(f"{st.name} is not a primitive schema type; use its own codec (Avro, JSON, ...)")
    return st


def _charset(properties: Mapping[str, str] | None) -> str | None:
    """The Python codec name of a STRING schema's charset; None for UTF-8 (the kernel path)."""
    name = (properties or {}).get(CHARSET_PROPERTY)
    if name is None:
        return None
    try:
        info = codecs.lookup(name)
        "".encode(info.name)  # refuses the bytes-to-bytes codecs (hex, base64, rot13): no charsets
    except LookupError:
        raise SchemaError(f"unknown charset {name!r} in the {CHARSET_PROPERTY} schema property") from None
    return None if info.name == "utf-8" else info.name


def _range_target(st: SchemaType, offset: int, bulk: bool) -> str:
    if st is SchemaType.LOCAL_TIME or (st is SchemaType.LOCAL_DATE_TIME and offset == 8):
        return _TIME_OF_DAY
    if not bulk:
        return "datetime.date" if st is SchemaType.LOCAL_DATE else "datetime.datetime"
    return str(_ARROW[st])


def _raise_error(st: SchemaType, error: KernelError, row_base: int, bulk: bool, charset: str = "UTF-8") -> NoReturn:
    code, index, offset, detail = error
    raise_for(
        code,
        row_base + index,
        offset,
        detail,
        type=st.name,
        expected=_WIDTH.get(st, "?"),
        target=_range_target(st, offset, bulk) if code == ErrorCode.PRIM_OUT_OF_RANGE else "",
        charset=charset,
    )


def _out_of_range(st: SchemaType, offset: int, value: int) -> NoReturn:
    _raise_error(st, (ErrorCode.PRIM_OUT_OF_RANGE, 0, offset, value), 0, bulk=False)


# -- per value: decode ------------------------------------------------------------------------------


def decode(schema_type: SchemaType | int | str, data: Any, *, properties: Mapping[str, str] | None = None) -> Any:
    """Decode one primitive payload (None gives None).

    Parameters
    ----------
    schema_type : SchemaType, Java code or name
    data : bytes-like or None
    properties : mapping, optional
        The SchemaInfo properties (STRING reads ``__charset``).

    Returns
    -------
    The Python value; see the module docstring for the types.

    Raises
    ------
    PrimitiveDecodeError
        Wrong length (``PRIM_BAD_LENGTH``), invalid text (``PRIM_INVALID_UTF8`` /
        ``PRIM_UNDECODABLE``), a value Python cannot represent (``PRIM_OUT_OF_RANGE``).
    """
    st = _primitive(schema_type)
    if data is None:
        return None
    raw = bytes(data)
    if st is SchemaType.STRING:
        charset = _charset(properties)
        try:
            return raw.decode(charset or "utf-8")
        except UnicodeDecodeError as exc:
            code = ErrorCode.PRIM_UNDECODABLE if charset else ErrorCode.PRIM_INVALID_UTF8
            _raise_error(st, (code, 0, exc.start, 0), 0, False, charset or "UTF-8")
    if st in (SchemaType.BYTES, SchemaType.NONE):
        return raw
    width = _WIDTH[st]
    if len(raw) != width:
        _raise_error(st, (ErrorCode.PRIM_BAD_LENGTH, 0, min(len(raw), width), len(raw)), 0, False)
    if st is SchemaType.BOOLEAN:
        return raw[0] != 0
    if st in _INTS:
        return _unpack_int[width](raw)[0]
    if st is SchemaType.FLOAT:
        return _f32.unpack(raw)[0]
    if st is SchemaType.DOUBLE:
        return _f64.unpack(raw)[0]
    if st is SchemaType.INSTANT:
        seconds, nanos = _instant.unpack(raw)
        try:
            return nano_datetime(EPOCH, seconds * defs.NS_PER_S + nanos)
        except OverflowError:
            _out_of_range(st, 0, seconds)
    if st is SchemaType.LOCAL_DATE_TIME:
        day, nod = _two_longs.unpack(raw)
        if not 0 <= nod < defs.NS_PER_DAY:
            _out_of_range(st, 8, nod)
        try:
            return nano_datetime(EPOCH_NAIVE, day * defs.NS_PER_DAY + nod)
        except OverflowError:
            _out_of_range(st, 0, day)
    value: int = _unpack_int[8](raw)[0]
    if st in (SchemaType.DATE, SchemaType.TIMESTAMP):
        try:
            return EPOCH + _dt.timedelta(milliseconds=value)
        except OverflowError:
            _out_of_range(st, 0, value)
    if st is SchemaType.TIME:
        ms = value % defs.MS_PER_DAY
        return _dt.time(ms // 3_600_000, ms // 60_000 % 60, ms // 1000 % 60, ms % 1000 * 1000)
    if st is SchemaType.LOCAL_DATE:
        try:
            return _dt.date.fromordinal(EPOCH_ORDINAL + value)
        except (ValueError, OverflowError):
            _out_of_range(st, 0, value)
    # LOCAL_TIME
    if not 0 <= value < defs.NS_PER_DAY:
        _out_of_range(st, 0, value)
    return nano_time(value)


# -- per value: encode ------------------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _int_in(value: Any, lo: int, hi: int, what: str) -> int:
    if not _is_int(value):
        raise EncodeError(f"{what} takes an int, got {type(value).__name__}")
    number = int(value)
    if not lo <= number <= hi:
        raise EncodeError(f"{number} is out of range for {what} ({lo} to {hi})")
    return number


def _bad_type(st: SchemaType, value: Any, expected: str) -> NoReturn:
    raise EncodeError(f"{st.name} takes {expected}, got {type(value).__name__}")


def _i64(st: SchemaType, number: int) -> bytes:
    return _int_in(number, *_I64, st.name).to_bytes(8, "big", signed=True)


def encode(
    schema_type: SchemaType | int | str, value: Any, *, properties: Mapping[str, str] | None = None
) -> bytes | None:
    """Encode one value as a Pulsar primitive payload (None gives None).

    Parameters
    ----------
    schema_type : SchemaType, Java code or name
    value : the Python value (see the module docstring), or None
    properties : mapping, optional
        The SchemaInfo properties (STRING reads ``__charset``).

    Returns
    -------
    bytes or None

    Raises
    ------
    EncodeError
        Wrong Python type or a value out of the type's range.
    """
    st = _primitive(schema_type)
    if value is None:
        return None
    if st is SchemaType.STRING:
        if not isinstance(value, str):
            _bad_type(st, value, "a str")
        charset = _charset(properties) or "utf-8"
        try:
            return value.encode(charset)
        except UnicodeEncodeError as exc:
            raise EncodeError(f"STRING value cannot be encoded in {charset}: {exc.reason}") from None
    if st in (SchemaType.BYTES, SchemaType.NONE):
        if isinstance(value, str):
            _bad_type(st, value, "bytes")
        try:
            return value if isinstance(value, bytes) else memoryview(value).cast("B").tobytes()
        except TypeError:
            _bad_type(st, value, "bytes")
    if st is SchemaType.BOOLEAN:
        if not isinstance(value, (bool, np.bool_)):
            _bad_type(st, value, "a bool")
        return b"\x01" if value else b"\x00"
    if st in _INTS:
        bits = 8 * _WIDTH[st]
        number = _int_in(value, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1, st.name)
        return number.to_bytes(_WIDTH[st], "big", signed=True)
    if st in (SchemaType.FLOAT, SchemaType.DOUBLE):
        return _encode_float(st, value)
    if st in (SchemaType.DATE, SchemaType.TIMESTAMP):
        if isinstance(value, _dt.datetime):
            return _i64(st, datetime_ns(value, local=False) // 1_000_000)
        if _is_int(value):
            return _i64(st, int(value))
        _bad_type(st, value, "a datetime or int milliseconds")
    if st is SchemaType.TIME:
        if isinstance(value, _dt.time):
            ms = time_ns(value) // 1_000_000
            offset = value.utcoffset()
            if offset is not None:
                ms = (ms - offset // _dt.timedelta(milliseconds=1)) % defs.MS_PER_DAY
            return _i64(st, ms)
        if _is_int(value):
            return _i64(st, int(value))
        _bad_type(st, value, "a time or int milliseconds")
    if st is SchemaType.LOCAL_DATE:
        if isinstance(value, _dt.datetime):
            _bad_type(st, value, "a date (not a datetime) or int days")
        if isinstance(value, _dt.date):
            return _i64(st, value.toordinal() - EPOCH_ORDINAL)
        if _is_int(value):
            return _i64(st, int(value))
        _bad_type(st, value, "a date or int days")
    if st is SchemaType.LOCAL_TIME:
        if isinstance(value, _dt.time):
            if value.tzinfo is not None:
                raise EncodeError("LOCAL_TIME takes a naive time (it has no zone)")
            return time_ns(value).to_bytes(8, "big", signed=True)
        if _is_int(value):
            nod = _int_in(value, 0, defs.NS_PER_DAY - 1, "LOCAL_TIME nanoseconds of the day")
            return nod.to_bytes(8, "big", signed=True)
        _bad_type(st, value, "a time or int nanoseconds of the day")
    # INSTANT and LOCAL_DATE_TIME: nanoseconds since the epoch (UTC, or the wall clock for LOCAL_)
    local = st is SchemaType.LOCAL_DATE_TIME
    if isinstance(value, _dt.datetime):
        ns = datetime_ns(value, local=local)
    elif _is_int(value):
        ns = int(value)
    else:
        _bad_type(st, value, "a datetime or int nanoseconds")
    if local:
        day, nod = divmod(ns, defs.NS_PER_DAY)
        return _two_longs.pack(_int_in(day, *_I64, st.name), nod)
    seconds, nanos = divmod(ns, defs.NS_PER_S)
    return _instant.pack(_int_in(seconds, *_I64, st.name), nanos)


def _encode_float(st: SchemaType, value: Any) -> bytes:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        _bad_type(st, value, "a float")
    if st is SchemaType.DOUBLE:
        f = float(value)
        return _JAVA_NAN if math.isnan(f) else _f64.pack(f)
    if isinstance(value, np.float32):
        return int(value.view(np.uint32)).to_bytes(4, "big")  # bit exact, NaN payload included
    try:
        return _f32.pack(float(value))
    except OverflowError:
        raise EncodeError(f"{value!r} is out of range for FLOAT") from None


# -- bulk -------------------------------------------------------------------------------------------


def decode_array(
    schema_type: SchemaType | int | str, payloads: Any, *, properties: Mapping[str, str] | None = None
) -> pa.Array:
    """Decode many primitive payloads into one typed Arrow array (nulls stay null).

    Parameters
    ----------
    schema_type : SchemaType, Java code or name
    payloads : pa.BinaryArray, pa.LargeBinaryArray, pa.ChunkedArray or sequence of bytes / None
    properties : mapping, optional
        The SchemaInfo properties (STRING reads ``__charset``).

    Returns
    -------
    pa.Array
        Of :func:`arrow_type` ``(schema_type)``. STRING (UTF-8) and BYTES reuse the input's data
        buffer when it is a single array.

    Raises
    ------
    PrimitiveDecodeError
        For the first bad payload, with its index and byte offset.
    """
    st = _primitive(schema_type)
    if st in (SchemaType.BYTES, SchemaType.NONE):
        return _columns.plain_binary(as_binary_array(payloads))
    if st is SchemaType.STRING:
        return _decode_strings(payloads, _charset(properties), st)
    kernels = _backend.active().primitives
    chunks, total = binary_chunks(payloads)
    parts = []
    for chunk in chunks:
        error, values = kernels.decode_fixed(chunk.data, chunk.offsets, chunk.validity, _KIND[st])
        if error is not None:
            _raise_error(st, error, chunk.row, True)
        parts.append(values)
    mask = bool_mask(chunks, total)
    if len(parts) == 1:
        values = parts[0]
    else:
        values = np.concatenate(parts) if parts else np.empty(0, dtype=_DTYPE[st])
    null_count = 0 if mask is None else int(total - np.count_nonzero(mask))
    if st is SchemaType.BOOLEAN:
        data = pa.py_buffer(np.packbits(values.astype(bool), bitorder="little"))
    else:
        data = pa.py_buffer(values)
    return pa.Array.from_buffers(_ARROW[st], total, [validity_buffer(mask), data], null_count=null_count)


def _decode_strings(payloads: Any, charset: str | None, st: SchemaType) -> pa.Array:
    if charset is not None:
        out: list[str | None] = []
        for i, item in enumerate(as_binary_array(payloads).to_pylist()):
            if item is None:
                out.append(None)
                continue
            try:
                out.append(item.decode(charset))
            except UnicodeDecodeError as exc:
                _raise_error(st, (ErrorCode.PRIM_UNDECODABLE, i, exc.start, 0), 0, True, charset)
        return pa.array(out, pa.string())
    kernels = _backend.active().primitives
    chunks, total = binary_chunks(payloads)
    arrays = []
    for chunk in chunks:
        error = kernels.validate_utf8(chunk.data, chunk.offsets, chunk.validity)
        if error is not None:
            _raise_error(st, error, chunk.row, True)
        valid = None if chunk.validity is None else np.asarray(chunk.validity, dtype=bool)
        arrays.append(
            pa.Array.from_buffers(
                pa.string(),
                chunk.length,
                [validity_buffer(valid), pa.py_buffer(chunk.offsets.astype(np.int32)), chunk.data],
                null_count=0 if valid is None else int(chunk.length - np.count_nonzero(valid)),
            )
        )
    if not arrays:
        return pa.array([None] * total, pa.string())
    if len(arrays) == 1:
        return arrays[0]
    combined = pa.concat_arrays([a.cast(pa.large_string()) for a in arrays])
    size = sum(int(c.offsets[-1]) for c in chunks)
    return combined.cast(pa.string()) if size <= 2**31 - 1 else combined


def _encode_each(st: SchemaType, values: Iterable[Any], properties: Mapping[str, str] | None) -> pa.Array:
    out = []
    for i, v in enumerate(values):
        try:
            out.append(encode(st, v, properties=properties))
        except EncodeError as exc:
            raise EncodeError(f"row {i}: {exc}", index=i) from None
    return pa.array(out, pa.binary())


def encode_array(
    schema_type: SchemaType | int | str, values: Any, *, properties: Mapping[str, str] | None = None
) -> pa.Array:
    """Encode many values as Pulsar primitive payloads; the reverse of :func:`decode_array`.

    Parameters
    ----------
    schema_type : SchemaType, Java code or name
    values : pa.Array, pa.ChunkedArray or sequence
        An Arrow array of a compatible type (integers for INT*, any numeric for FLOAT/DOUBLE,
        timestamps/dates/times of any unit for the temporal types, or int64 in the unit of
        :func:`arrow_type`), or a sequence of Python values (encoded with :func:`encode`).
    properties : mapping, optional
        The SchemaInfo properties (STRING reads ``__charset``).

    Returns
    -------
    pa.Array
        ``binary`` payloads (``large_binary`` past 2 GiB); null where the value is null.

    Raises
    ------
    EncodeError
        An incompatible Arrow type or a value out of range (``index`` is its row).
    """
    st = _primitive(schema_type)
    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        return _encode_each(st, values, properties)
    arr = _columns.combined(values)
    if pa.types.is_dictionary(arr.type):  # a dictionary-encoded column writes its values, as Avro's and JSON's do
        arr = arr.cast(arr.type.value_type)
    if st is not SchemaType.STRING:
        return _columns.encode_column(st, arr)
    t = arr.type
    _columns.require(
        arr, pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t), st, "string"
    )
    if _charset(properties) is None:
        return _columns.plain_binary(as_binary_array(arr))
    return _encode_each(st, arr.to_pylist(), properties)
