"""The Arrow side of the Avro encoder's columnar binding: the buffers of a batch's arrays as the
encode kernels read them (validity bytes, int32 / int64 / float values and offsets in place where
Arrow holds them, rescaled times, exact decimals) and the shapes refused for a whole batch before
any row is written (times outside one day, struct fields or map keys the record cannot hold,
duplicate names).

Apart from :mod:`.encoder`, which builds the node program from these and runs the kernels; a
pairing these helpers cannot express raises :class:`_Unbindable`, and the encoder takes the row
path instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import arrow_family, is_text_type
from ...errors import EncodeError
from ._arrow_unions import union_branches
from .schema import Array, Enum, Fixed, Map, Primitive, Record, Schema, Union


class _Unbindable(Exception):
    """Internal: this Arrow/Avro pairing takes the row path."""


_UNIT_PER_S = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
_AVRO_UNIT = {"millis": 1000, "micros": 1_000_000, "nanos": 1_000_000_000}
_SIGNED_OK = (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32())


def _validity(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=np.uint8)


def _fixed(arr: pa.Array, dtype: Any) -> np.ndarray:
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
    """The values of an integer array: an int32 or int64 one as the view of its Arrow buffer (the
    kernels read both widths and only read), the other widths widened to int64."""
    values = _fixed(arr, arr.type.to_pandas_dtype())
    return values if values.dtype == np.int32 else values.astype(np.int64, copy=False)


def _binary(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(data bytes, n + 1 offsets into them: int32 or int64 as the array holds them) of a
    binary/string array."""
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
    return data, offs


def _rescale(values: np.ndarray, src_per_s: int, dst_per_s: int, path: str) -> np.ndarray:
    if dst_per_s >= src_per_s:
        factor = dst_per_s // src_per_s
        limit = np.iinfo(np.int64).max // factor
        if factor > 1 and len(values) and (values.max() > limit or values.min() < -limit):
            raise _Unbindable(path)  # int64 would wrap silently: the row path checks each value
        scaled: np.ndarray = values * factor
        return scaled
    floored: np.ndarray = np.floor_divide(values, src_per_s // dst_per_s)
    return floored


# time-millis / time-micros: one day in their unit (the decoders refuse values outside [0, day))
_AVRO_DAY = {"time-millis": 86_400_000, "time-micros": 86_400_000_000}


def _outside_day(values: np.ndarray, valid: np.ndarray | None, day: int) -> bool:
    """Whether a non-null value lies outside [0, day)."""
    bad = (values < 0) | (values >= day)
    if valid is not None:
        bad &= valid.astype(bool)
    return bool(bad.any())


def _has_time(t: pa.DataType) -> bool:
    return pa.types.is_time(t) or any(_has_time(t.field(i).type) for i in range(t.num_fields))


def _valid_times(col: pa.Array, path: str) -> None:
    """A column holding an Arrow time outside one day is invalid Arrow, and ``to_pylist`` would fold
    that time into the day: refuse it (Arrow's full validation checks exactly that), naming its row
    when the column is a time column itself."""
    try:
        col.validate(full=True)
    except pa.ArrowInvalid as exc:
        if pa.types.is_time(col.type):
            values = _fixed(col, np.int32 if pa.types.is_time32(col.type) else np.int64)
            bad = (values < 0) | (values >= _UNIT_PER_S[col.type.unit] * 86_400)
            if col.null_count:
                bad &= np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise EncodeError(f"row {row}: {path}: {exc}", index=row) from None
        raise EncodeError(f"{path}: {exc}") from None


def _is_int(t: pa.DataType) -> bool:
    return any(t == k for k in _SIGNED_OK)


def _duplicates(names: list[str]) -> list[str]:
    if len(set(names)) == len(names):
        return []
    seen: set[str] = set()
    twice: set[str] = set()
    for n in names:
        (twice if n in seen else seen).add(n)
    return sorted(twice)


# The Arrow families whose values an Avro type without a logical type can hold (the columnar binding
# or the row writer takes them); any other family fails on every non-null row, so a column of it is
# refused before the first row: a misnamed or mistyped column is one error, not one per row.
_FITS: dict[str, frozenset[str]] = {
    "int": frozenset({"null", "int", "other"}),
    "long": frozenset({"null", "int", "other"}),
    "boolean": frozenset({"null", "bool", "other"}),
    "float": frozenset({"null", "int", "float", "decimal", "bool", "other"}),
    "double": frozenset({"null", "int", "float", "decimal", "bool", "other"}),
    "string": frozenset({"null", "text", "other"}),
    "bytes": frozenset({"null", "binary", "other"}),
    "enum": frozenset({"null", "text", "other"}),
    "record": frozenset({"null", "struct", "other"}),
    "array": frozenset({"null", "list", "other"}),
    "map": frozenset({"null", "map", "list", "struct", "other"}),
}


def _check_kind(node: Schema, t: pa.DataType, path: str) -> None:
    """Refuse an Arrow type none of whose values the Avro type can hold (see :data:`_FITS`)."""
    if isinstance(node, (Primitive, Fixed)) and node.logical is not None:
        return  # logical types take several Arrow spellings (dates as ints, uuids as text...)
    fits = _FITS.get(node.type)
    kind = arrow_family(t)
    if fits is not None and kind not in fits:
        name = f" {node.fullname}" if isinstance(node, (Record, Enum)) else ""
        raise EncodeError(f"{path}: a column of Arrow type {t} cannot be written as Avro {node.type}{name}")


def _check_fit(node: Schema, t: pa.DataType, path: str) -> None:
    """Refuse Arrow shapes whose values the Avro type would lose or garble, whatever the rows hold:
    an Arrow type of another family (text for a long, a number for a record), struct fields the
    record has no field for (as top-level columns are), duplicate field names, map keys that are not
    text. Only where the Avro type of the Arrow type is known (no value-chosen union branch)."""
    if not isinstance(node, Union):
        _check_kind(node, t, path)
    if isinstance(node, Union):
        if pa.types.is_union(t):
            branch = union_branches(t, node)
            for i, b in enumerate(branch or ()):
                _check_fit(node.branches[b], t.field(i).type, f"{path}[{b}]")
        elif node.nullable_of is not None:
            _check_fit(node.nullable_of, t, path)
        return
    if isinstance(node, Record) and pa.types.is_struct(t):
        names = [t.field(i).name for i in range(t.num_fields)]
        twice = _duplicates(names)
        if twice:
            raise EncodeError(f"{path}: the Arrow struct has duplicate field name(s) {twice}")
        wanted = {f.name for f in node.fields}
        extra = [n for n in names if n not in wanted]
        if extra:
            raise EncodeError(
                f"{path}: the Arrow struct has field(s) {extra} that {node.fullname} has no field for; "
                "their values would be lost"
            )
        for f in node.fields:
            if f.name in names:
                _check_fit(f.type, t.field(f.name).type, f"{path}.{f.name}")
    elif isinstance(node, Array) and (
        pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
    ):
        _check_fit(node.items, t.value_type, f"{path}[]")
    elif isinstance(node, Map) and pa.types.is_map(t):
        key = t.key_type
        if not (is_text_type(key) or (pa.types.is_dictionary(key) and is_text_type(key.value_type))):
            raise EncodeError(f"{path}: Avro map keys are strings, the Arrow map's keys are {key}")
        _check_fit(node.values, t.item_type, f"{path}{{}}")


def _decimal128(arr: pa.Array, node: Primitive | Fixed, path: str) -> pa.Array:
    """``arr`` as decimal128 at the schema's scale, every value within its precision. Arrow's safe
    cast rescales exactly (a value that would lose digits fails it); any failure takes the row path,
    whose writer names the row."""
    t = arr.type
    if not pa.types.is_decimal(t):
        raise _Unbindable(path)
    if not (pa.types.is_decimal128(t) and t.scale == node.scale):
        digits = max(1, min(38, t.precision - t.scale + node.scale))
        try:
            arr = arr.cast(pa.decimal128(digits, node.scale))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise _Unbindable(path) from None
    if arr.type.precision > node.precision and not _within_precision(arr, node.precision):
        raise _Unbindable(path)
    return arr


def _within_precision(arr: pa.Array, precision: int) -> bool:
    """Whether every valid value of a decimal128 array has at most ``precision`` digits (vectorised
    compare of the unscaled values with +-10**precision: on int64 when the values fit it, else on
    the 128-bit words)."""
    n = len(arr)
    if n == 0 or arr.buffers()[1] is None:
        return True
    words = np.frombuffer(arr.buffers()[1], dtype="<i8", count=2 * (arr.offset + n))[2 * arr.offset :]
    lo, hi = words[0::2], words[1::2]
    valid = _validity(arr)
    limit = 10**precision
    if precision <= 18:  # |v| < 10**precision <= 10**18 < 2**63: v must be an int64
        bad = (hi != (lo >> 63)) | (lo >= limit) | (lo <= -limit)
    else:
        ulo = lo.view(np.uint64)
        top_hi, top_lo = divmod(limit, 1 << 64)
        low_hi, low_lo = divmod((1 << 128) - limit, 1 << 64)  # -limit in two's complement
        th, tl, lh, ll = np.int64(top_hi), np.uint64(top_lo), np.int64(low_hi - (1 << 64)), np.uint64(low_lo)
        bad = ~((hi < th) | ((hi == th) & (ulo < tl)))
        bad |= ~((hi > lh) | ((hi == lh) & (ulo > ll)))
    if valid is not None:
        bad &= valid.astype(bool)
    return not bool(bad.any())


_INTERVAL_PARTS = ("months", "days", "nanoseconds")


def duration_bytes(arr: pa.Array) -> np.ndarray | None:
    """The 12 bytes per element of an Avro ``duration`` (months, days, milliseconds as little-endian
    uint32) from a month_day_nano_interval column, or Spark's form of it (a struct of months, days
    and nanoseconds), as one uint8 array; None when ``arr`` is neither, or a valid element has a
    part no uint32 holds or a null part (the row writer's EncodeError then)."""
    t = arr.type
    n = len(arr)
    if pa.types.is_interval(t):
        buf = arr.buffers()[1]
        parts = np.frombuffer(buf, dtype=np.dtype([("m", "<i4"), ("d", "<i4"), ("ns", "<i8")]), count=arr.offset + n)
        parts = parts[arr.offset :]
        months, days, nanos = parts["m"].astype(np.int64), parts["d"].astype(np.int64), parts["ns"]
    elif pa.types.is_struct(t) and [t.field(i).name for i in range(t.num_fields)] == list(_INTERVAL_PARTS):
        children = [arr.field(i) for i in range(3)]
        if not all(pa.types.is_integer(c.type) for c in children):
            return None
        valid = arr.is_valid()
        if any(pc.any(pc.and_(valid, c.is_null())).as_py() for c in children):
            return None  # a part missing where the duration is not null
        months, days, nanos = (
            np.asarray(c.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64) for c in children
        )
    else:
        return None
    millis = np.floor_divide(nanos, 1_000_000)
    live = np.ones(n, dtype=bool) if arr.null_count == 0 else np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))
    for part in (months, days, millis):
        if n and ((part[live] < 0).any() or (part[live] > 0xFFFFFFFF).any()):
            return None
    raw = np.zeros((n, 3), dtype="<u4")
    raw[:, 0], raw[:, 1], raw[:, 2] = (np.where(live, p, 0) for p in (months, days, millis))
    return raw.reshape(-1).view(np.uint8)
