"""The columnar path's per-type converters: an Arrow column -> an array of JSON text fragments.

One function per kind of column (strings escaped, floats in ``repr`` form, temporal columns as
RFC 3339 text, bytes as base64, Avro logical numbers of Pulsar JSON, map keys as object names), and
the checks a string column passes before it is written into a ``format`` or ``contentEncoding``
property (the JSON decoder's own rules, so that what is written reads back). :mod:`.encoder` walks
the program and joins these fragments into payloads; this module holds the leaves, kept apart so
that each type's text can be read (and tested) without the walk. The constants the one-value writer
(:mod:`._value_writer`) shares with it (integer ranges, Avro units, format names) live here too.
"""

from __future__ import annotations

import binascii
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import is_text_type
from ..._kernels.defs import (
    J_DATE,
    J_INT,
    J_LONG,
    J_TIME,
    J_TIME_MICROS,
    J_TIME_MILLIS,
    J_TIMESTAMP,
)
from ...errors import EncodeError
from ..avro import schema as av

_LS = pa.large_string()
_EMPTY = pa.scalar("", _LS)
_NULL_TEXT = pa.scalar("null", _LS)
_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'
_CONTROL = r"[\x00-\x1f]"
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_UNIT_PER_S = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
_AVRO_UNIT = {"millis": 1000, "micros": 1_000_000, "nanos": 1_000_000_000}
_INT_RANGE = {
    J_INT: (-(2**31), 2**31 - 1),
    J_LONG: (-(2**63), 2**63 - 1),
    J_TIME_MILLIS: (0, 86_400_000 - 1),  # a time of day: the decoders refuse others
    J_TIME_MICROS: (0, 86_400_000_000 - 1),
}
_INT_WORD = {J_INT: "int", J_LONG: "long", J_TIME_MILLIS: "time-millis", J_TIME_MICROS: "time-micros"}
_UTC_SUFFIX = "+00:00"
_OP_WORD = {J_TIMESTAMP: "date-time", J_DATE: "date", J_TIME: "time"}


def _c(text: str) -> pa.Scalar:
    return pa.scalar(text, _LS)


class _RowError(Exception):
    """A value that cannot be written, at position ``row`` of the array being encoded; each list or
    map level above moves ``row`` to its own row (:meth:`up`) until it is the batch's row."""

    def __init__(self, path: str, row: int, text: str) -> None:
        super().__init__(path, row, text)
        self.path, self.row, self.text = path, row, text

    def up(self, offsets: pa.Array) -> _RowError:
        """The same error at the row of the list (whose items start at ``offsets``) holding it."""
        starts = np.asarray(offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
        return _RowError(self.path, int(np.searchsorted(starts, self.row, side="right")) - 1, self.text)

    def encode_error(self) -> EncodeError:
        return EncodeError(f"row {self.row}: {self.path}: {self.text}", index=self.row)


def _fail_at(mask: Any, path: str, text: str) -> None:
    """Raise :class:`_RowError` at the first true (not null) row of ``mask``, if any."""
    mask = pc.fill_null(mask, False)
    if pc.any(mask).as_py():
        raise _RowError(path, _first(mask), text)


def _join(*parts: Any) -> pa.Array:
    """Row-wise concatenation of fragment arrays and constant texts (null if any part is null)."""
    return pc.binary_join_element_wise(*[_c(p) if isinstance(p, str) else p for p in parts], _EMPTY)


def _first(mask: Any) -> int:
    return int(np.flatnonzero(np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool))[0])


def _quote(arr: pa.Array) -> pa.Array:
    """JSON string fragments of a string array (nulls stay null)."""
    arr = arr.cast(_LS)
    if len(arr) and pc.any(pc.match_substring_regex(arr, _NEEDS_ESCAPE)).as_py():
        arr = pc.replace_substring(arr, "\\", "\\\\")
        arr = pc.replace_substring(arr, '"', '\\"')
        if pc.any(pc.match_substring_regex(arr, _CONTROL)).as_py():
            for code in range(0x20):
                ch = chr(code)
                if pc.any(pc.match_substring(arr, ch)).as_py():
                    arr = pc.replace_substring(arr, ch, _SHORT_ESCAPES.get(ch, f"\\u{code:04x}"))
    return _join('"', arr, '"')


def _floats(arr: pa.Array, path: str, single: bool = False) -> pa.Array:
    """Fragments of a float array in Python ``repr`` form (what ``json.dumps`` writes); ``single``:
    for a float32 (Pulsar JSON ``float``) property, whose reader refuses a number past its range."""
    values = arr.cast(pa.float64())
    _fail_at(pc.invert(pc.is_finite(values)), path, "NaN and infinities cannot be written as JSON")
    if single and len(values) - values.null_count:
        with np.errstate(over="ignore"):  # a double past float32's range rounds to inf, as the reader's
            narrowed = np.asarray(values.fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
            past = ~np.isfinite(narrowed.astype(np.float32))
        if past.any():
            row = int(np.flatnonzero(past)[0])
            raise _RowError(path, row, f"{values[row].as_py()!r} is past the float32 range")
    text = values.cast(pa.string()).cast(_LS)  # Arrow's shortest round-trip digits, in its own layout
    size = pc.abs(values)
    fixed = pc.and_(pc.greater_equal(size, 1e-4), pc.less(size, 1e16))  # where repr uses fixed notation
    plain = pc.and_(pc.match_substring_regex(text, r"^-?\d+\.\d+$"), fixed)
    whole = pc.and_(pc.match_substring_regex(text, r"^-?\d+$"), pc.less(size, 1e16))
    sci = pc.and_(
        pc.match_substring_regex(text, r"^-?\d(\.\d+)?e[+-]\d+$"),
        pc.and_(pc.invert(fixed), pc.not_equal(size, 0.0)),
    )
    text = pc.if_else(whole, _join(text, ".0"), text)
    text = pc.if_else(sci, pc.replace_substring_regex(text, r"e([+-])(\d)$", r"e\10\2"), text)
    known = pc.or_(pc.or_(plain, whole), sci)
    rest = np.flatnonzero(~np.asarray(pc.fill_null(known, True).to_numpy(zero_copy_only=False), dtype=bool))
    if len(rest):  # layouts the repair cannot prove equal to repr (e.g. Arrow's 1e+15): repr itself
        py = values.to_pylist()
        fixes = pa.array([float.__repr__(py[i]) for i in rest.tolist()], _LS)
        text = pc.replace_with_mask(text, pa.array(np.isin(np.arange(len(values)), rest)), fixes)
    return text


def _split_time(values: np.ndarray, per_s: int) -> tuple[np.ndarray, np.ndarray]:
    secs = np.floor_divide(values, per_s)
    return secs, values - secs * per_s


def _fraction(rem: np.ndarray, per_s: int) -> pa.Array:
    """``.ffffff`` (or nine digits for a sub-microsecond remainder; empty for zero) per value."""
    if per_s <= 1_000_000:
        micros = rem * (1_000_000 // per_s)
        digits = pc.utf8_lpad(pa.array(micros).cast(_LS), 6, "0")
        return pc.if_else(pa.array(micros != 0), _join(".", digits), _EMPTY)
    micros, nanos = np.divmod(rem, 1000)
    six = pc.utf8_lpad(pa.array(micros).cast(_LS), 6, "0")
    nine = pc.utf8_lpad(pa.array(rem).cast(_LS), 9, "0")
    out = pc.if_else(pa.array(nanos != 0), _join(".", nine), _join(".", six))
    return pc.if_else(pa.array(rem != 0), out, _EMPTY)


def _int64(arr: pa.Array) -> np.ndarray:
    """The integers under a temporal (or integer) array, nulls as 0. time32 and date32 go through
    int32: Arrow has no cast from them to int64."""
    t = arr.type
    if pa.types.is_time32(t) or pa.types.is_date32(t):
        arr = arr.cast(pa.int32())
    return np.asarray(arr.cast(pa.int64()).fill_null(0).to_numpy(), dtype=np.int64)


def _days(arr: pa.Array, path: str) -> np.ndarray:
    """Days since the epoch of a date32 or date64 array, nulls as 0. A date64 must hold whole days
    (Arrow's definition of date64); one that does not names no date and is refused."""
    values = _int64(arr)
    if pa.types.is_date32(arr.type):
        return values
    _fail_at(pa.array(values % 86_400_000 != 0), path, "a date64 value that is not a whole day is not a date")
    return values // 86_400_000


def _whole_seconds_text(secs: np.ndarray, kind: str) -> pa.Array:
    """``YYYY-MM-DDTHH:MM:SS`` (kind "date-time"), ``YYYY-MM-DD`` ("date": ``secs`` whole days) or
    ``HH:MM:SS`` ("time": within one day) of whole seconds since the epoch. Arrow's cast to string
    writes these ISO forms (a space for the ``T``) for the years 1-9999, the same text as
    ``strftime`` several times faster."""
    if kind == "date":
        text = pa.array((secs // 86_400).astype(np.int32), pa.date32()).cast(pa.string())
    elif kind == "time":
        text = pa.array(secs.astype(np.int32), pa.time32("s")).cast(pa.string())
    else:
        text = pc.binary_replace_slice(pa.array(secs, pa.timestamp("s")).cast(pa.string()), 10, 11, "T")
    return text.cast(_LS)


def _clock(
    values: np.ndarray, per_s: int, kind: str, path: str, what: str = "a timestamp"
) -> tuple[pa.Array, pa.Array]:
    """(whole-second text of ``kind`` (see :func:`_whole_seconds_text`), fraction) of integers
    ``values`` counted in 1/per_s seconds."""
    secs, rem = _split_time(values, per_s)
    _fail_at(
        pa.array((secs < -62135596800) | (secs > 253402300799)),
        path,
        f"{what} outside the years 1-9999 cannot be written as RFC 3339",
    )
    return _whole_seconds_text(secs, kind), _fraction(rem, per_s)


def _temporal(op: int, arr: pa.Array, path: str) -> pa.Array:
    t = arr.type
    if op == J_TIMESTAMP and pa.types.is_timestamp(t):
        whole, frac = _clock(_int64(arr), _UNIT_PER_S[t.unit], "date-time", path)
        out = _join('"', whole, frac, _UTC_SUFFIX + '"')
    elif op == J_DATE and (pa.types.is_date32(t) or pa.types.is_date64(t)):
        whole, _ = _clock(_days(arr, path) * 86_400, 1, "date", path, "a date")
        out = _join('"', whole, '"')
    elif op == J_TIME and (pa.types.is_time32(t) or pa.types.is_time64(t)):
        per_s = _UNIT_PER_S[t.unit]
        values = _int64(arr)
        # a time of day: the decoder (and RFC 3339) reads 00:00:00 to 23:59:59.999999999 only
        _fail_at(pa.array((values < 0) | (values >= 86_400 * per_s)), path, "a time outside one day is not a time")
        whole, frac = _clock(values, per_s, "time", path)
        out = _join('"', whole, frac, '"')
    elif is_text_type(t):
        _check_format(op, arr, path)
        return _quote(arr)  # already text: written as given, once the decoder would read it back
    else:
        raise EncodeError(f"{path}: an Arrow {t} column cannot be written as a {_OP_WORD[op]} string")
    return pc.if_else(arr.is_valid(), out, pa.nulls(len(arr), _LS))


# -- the decoder's rules for format and contentEncoding strings ------------------------------------------
# The JSON kernels refuse (JSON_BAD_FORMAT) any text outside these; a string column written into such
# a property is checked with them so that what is written reads back. RE2 (pyarrow) patterns with the
# kernels' field ranges; the day of the month is checked after, per month and leap year.

_DATE_RE = r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
_CLOCK_RE = r"([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?"
_OFFSET_RE = r"([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"
_FORMAT_RE = {
    J_TIMESTAMP: f"^{_DATE_RE}[Tt ]{_CLOCK_RE}{_OFFSET_RE}$",
    J_DATE: f"^{_DATE_RE}$",
    J_TIME: f"^{_CLOCK_RE}{_OFFSET_RE}?$",
}
_BASE64_RE = r"^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
_FORMAT_TEXT = {
    J_TIMESTAMP: "an RFC 3339 date-time",
    J_DATE: "an RFC 3339 full-date",
    J_TIME: "an RFC 3339 time",
}
_MONTH_DAYS = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)


def _check_format(op: int, arr: pa.Array, path: str) -> None:
    """Refuse the first string of ``arr`` the decoder would not read as a ``op`` (date-time, date, time)."""
    text = arr.cast(_LS)
    _fail_unmatched(text, _FORMAT_RE[op], path, f"is not {_FORMAT_TEXT[op]}")
    if op == J_TIME:
        return
    # the shape allows day 31 in every month: check the days past 28 against their month and year
    dated = pc.and_(arr.is_valid(), pc.greater(pc.utf8_slice_codeunits(pc.fill_null(text, "0000-00-00"), 8, 10), "28"))
    rows = np.flatnonzero(np.asarray(pc.fill_null(dated, False).to_numpy(zero_copy_only=False), dtype=bool))
    if not len(rows):
        return
    late = text.take(pa.array(rows))
    year, month, day = (
        np.asarray(pc.utf8_slice_codeunits(late, a, b).cast(pa.int64()).to_numpy(), dtype=np.int64)
        for a, b in ((0, 4), (5, 7), (8, 10))
    )
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    bad = day > _MONTH_DAYS[month] + ((month == 2) & leap)
    if bad.any():
        row = int(rows[int(np.argmax(bad))])
        raise _RowError(path, row, f"{text[row].as_py()[:40]!r} is not {_FORMAT_TEXT[op]} (no such day)")


def _check_base64(arr: pa.Array, size: int | None, path: str) -> None:
    """Refuse the first string the decoder would not read as padded standard base64 (of ``size``
    bytes when given)."""
    text = arr.cast(_LS)
    _fail_unmatched(text, _BASE64_RE, path, "is not padded standard base64")
    if size is None:
        return
    length = np.asarray(pc.utf8_length(text).fill_null(0).to_numpy(), dtype=np.int64)
    padding = np.asarray(pc.count_substring(text, "=").fill_null(0).to_numpy(), dtype=np.int64)
    _fail_at(
        pc.and_(arr.is_valid(), pa.array(length // 4 * 3 - padding != size)),
        path,
        f"base64 text not of {size} bytes (the fixed size)",
    )


def _fail_unmatched(text: pa.Array, pattern: str, path: str, what: str) -> None:
    """Raise :class:`_RowError` at the first string of ``text`` that ``pattern`` does not match."""
    bad = pc.invert(pc.fill_null(pc.match_substring_regex(text, pattern), True))
    if pc.any(bad).as_py():
        row = _first(bad)
        raise _RowError(path, row, f"{text[row].as_py()[:40]!r} {what}")


def _key_text(keys: pa.Array, path: str) -> pa.Array:
    """Map keys as strings: text, or binary that is UTF-8. Keys of another type (numbers, dates)
    are refused, as the one-value path refuses them: a JSON object name is text, and a 1 written
    as "1" would read back as another type."""
    t = keys.type
    if pa.types.is_dictionary(t):
        keys = keys.dictionary_decode()
        t = keys.type
    if is_text_type(t):
        return keys.cast(pa.string())
    if not (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)):
        raise EncodeError(f"{path}: map keys of Arrow type {t} are not strings (JSON object names are text)")
    for i, key in enumerate(keys.to_pylist()):
        try:
            key.decode("utf-8")
        except UnicodeDecodeError:
            raise _RowError(path, i, f"map key {key[:40]!r} is not UTF-8 text") from None
    return keys.cast(pa.string())


def _avro_number(shadow: av.Schema, arr: pa.Array, path: str) -> pa.Array:
    """An Avro logical int/long of Pulsar JSON as Jackson writes it: the Avro number."""
    t = arr.type
    logical = getattr(shadow, "logical", None)
    if pa.types.is_integer(t):
        return arr
    nulls = np.asarray(arr.is_null().to_numpy(zero_copy_only=False))
    if logical and "timestamp" in logical and pa.types.is_timestamp(t):
        src, dst = _UNIT_PER_S[t.unit], _AVRO_UNIT[logical.rsplit("-", 1)[1]]
    elif logical == "date" and (pa.types.is_date32(t) or pa.types.is_date64(t)):
        return pa.array(_days(arr, path), pa.int64(), mask=nulls)
    elif logical in ("time-millis", "time-micros") and (pa.types.is_time32(t) or pa.types.is_time64(t)):
        src, dst = _UNIT_PER_S[t.unit], 1000 if logical == "time-millis" else 1_000_000
    else:
        raise EncodeError(f"{path}: an Arrow {t} column cannot be written as a JSON integer")
    values = _int64(arr)
    if src < dst:
        _fail_at(pa.array(np.abs(values) > np.iinfo(np.int64).max // (dst // src)), path, "overflows the Avro long")
    scaled = np.floor_divide(values, src // dst) if src >= dst else values * (dst // src)
    return pa.array(scaled, pa.int64(), mask=nulls)


def _uuid_bytes(arr: pa.Array, path: str) -> pa.Array:
    """A uuid on fixed(16) given as text (the decoder gives the canonical string): its 16 bytes."""
    out: list[bytes | None] = []
    for i, v in enumerate(arr.to_pylist()):
        try:
            out.append(None if v is None else uuid.UUID(v).bytes)
        except ValueError:
            raise _RowError(path, i, f"{v[:40]!r} is not a UUID") from None
    return pa.array(out, pa.binary())


def _base64(arr: pa.Array, size: int | None, path: str) -> pa.Array:
    t = arr.type
    if is_text_type(t):
        if size == 16:
            arr = _uuid_bytes(arr, path)
        else:
            _check_base64(arr, size, path)
            return _quote(arr)  # base64 text already
    elif not (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_binary_view(t)
    ):
        raise EncodeError(f"{path}: an Arrow {t} column cannot be written as base64")
    out: list[str | None] = []
    for i, v in enumerate(arr.to_pylist()):
        if v is None:
            out.append(None)
            continue
        if size is not None and len(v) != size:
            raise _RowError(path, i, f"{len(v)} bytes where the fixed size is {size}")
        out.append('"' + binascii.b2a_base64(v, newline=False).decode("ascii") + '"')
    return pa.array(out, _LS)
