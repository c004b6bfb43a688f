"""Arrow rows -> compact JSON payloads, byte for byte what confluent-kafka's ``JSONSerializer`` writes.

confluent-kafka serialises a dict with ``orjson.dumps`` when orjson imports, else with
``json.dumps(obj, separators=(",", ":"), ensure_ascii=False)``. This encoder writes the stdlib form
(the one confluent-kafka uses without orjson), for the dict whose keys are in schema order:

- strings as ``json.dumps`` escapes them without ``ensure_ascii``: ``\\" \\\\ \\n \\r \\t \\b \\f``,
  other control characters as ``\\u00xx``, everything else (non-ASCII, U+2028, DEL) as raw UTF-8;
- integers in decimal; floats as Python's ``repr`` (``1.0``, ``1e+16``, ``1e-05``). orjson would
  differ here only: it writes ``1e16`` / ``1e-5`` where ``repr`` writes ``1e+16`` / ``1e-05``;
- NaN and infinities are an :class:`~pulsar_codec.errors.EncodeError` (``json.dumps`` would write
  ``NaN``, which is not JSON and no JSON reader, this package's included, accepts; orjson writes ``null``);
- ``date-time`` properties as ``datetime.isoformat()`` of the UTC instant
  (``2024-01-02T03:04:05.123456+00:00``, no fraction when it is zero, nine digits for a
  nanosecond remainder) -- the text orjson writes for an aware datetime; ``date`` as
  ``YYYY-MM-DD`` (a date64 must hold whole days), ``time`` as ``HH:MM:SS[.ffffff]`` (time32 or
  time64, within one day); ``contentEncoding: base64`` as standard base64 with padding; maps as
  objects (binary keys must be UTF-8), lists as arrays, enums (dictionary columns) as their strings;
  a JSON-text column (what the decoder gives for schemas Arrow cannot type) as that JSON, compacted;
- a string given for a ``date-time`` / ``date`` / ``time`` / base64 property is written as is when
  this package's decoder reads it back (the JSON kernels' rules: RFC 3339 with valid fields and
  days, padded standard base64, a fixed's size), else it is an EncodeError;
- Pulsar JSON (an Avro definition) the way Jackson writes it: bytes and fixed as base64, enums by
  name, logical types as their Avro numbers (timestamp-millis as epoch milliseconds, date as days...).

The batch path is columnar: each column becomes an array of JSON fragments with pyarrow compute
(integers cast, strings escaped with substring replacement only when some value needs it, floats
cast and repaired into ``repr`` form, the rare value the repair cannot prove falls back to ``repr``),
and fragments are joined row-wise; lists and maps join their items with ``binary_join``.
"""

from __future__ import annotations

import binascii
import datetime
import json
import uuid
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring  # json.dumps' string escaper when ensure_ascii=False
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import as_table_like
from ..._kernels import json_py as _kernel
from ..._kernels.defs import (
    J_ARRAY,
    J_BOOL,
    J_BYTES_B64,
    J_DATE,
    J_DOUBLE,
    J_ENUM,
    J_FIXED_B64,
    J_FLOAT,
    J_INT,
    J_LONG,
    J_MAP,
    J_NULL,
    J_NULLABLE,
    J_OBJECT,
    J_STRING,
    J_TEXT,
    J_TIME,
    J_TIME_MICROS,
    J_TIME_MILLIS,
    J_TIMESTAMP,
)
from ...errors import EncodeError
from ..avro import schema as av
from .mapping import JsonMapping, map_model
from .schema import JsonSchemaModel, parse

__all__ = ["JsonEncoder", "dumps_text"]

# the pure JSON kernel's readers of format strings: what one value must pass to read back
_kernel_base64 = _kernel._base64
_timestamp_micros = _kernel._timestamp_micros
_date_days = _kernel._date_days
_time_micros = _kernel._time_micros

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
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_EPOCH_DAY = datetime.date(1970, 1, 1)
_UTC_SUFFIX = "+00:00"


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
        return EncodeError(f"{self.path}: row {self.row}: {self.text}", index=self.row)


def _fail_at(mask: Any, path: str, text: str) -> None:
    """Raise :class:`_RowError` at the first true (not null) row of ``mask``, if any."""
    mask = pc.fill_null(mask, False)
    if pc.any(mask).as_py():
        raise _RowError(path, _first(mask), text)


def _join(*parts: Any) -> pa.Array:
    """Row-wise concatenation of fragment arrays and constant texts (null if any part is null)."""
    return pc.binary_join_element_wise(*[_c(p) if isinstance(p, str) else p for p in parts], _EMPTY)


def dumps_text(value: Any) -> str:
    """Compact JSON text of a Python value, as confluent-kafka writes it without orjson.

    Raises
    ------
    EncodeError
        NaN or an infinity, or a value JSON cannot hold.
    """
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise EncodeError(f"value cannot be written as JSON: {exc}") from None


def _compact(text: str, path: str) -> str:
    """A JSON-text value (the decoder's form for untyped schemas) re-written compactly."""
    try:
        return dumps_text(json.loads(text))
    except ValueError:
        raise EncodeError(f"{path}: {text[:40]!r} is not JSON text") from None


# -- the columnar path --------------------------------------------------------------------------------


def _as_array(col: Any) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


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


def _floats(arr: pa.Array, path: str) -> pa.Array:
    """Fragments of a float array in Python ``repr`` form (what ``json.dumps`` writes)."""
    values = arr.cast(pa.float64())
    _fail_at(pc.invert(pc.is_finite(values)), path, "NaN and infinities cannot be written as JSON")
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


def _clock(
    values: np.ndarray, per_s: int, pattern: str, path: str, what: str = "a timestamp"
) -> tuple[pa.Array, pa.Array]:
    """(whole-second text by ``pattern``, fraction) of integers ``values`` counted in 1/per_s seconds."""
    secs, rem = _split_time(values, per_s)
    _fail_at(
        pa.array((secs < -62135596800) | (secs > 253402300799)),
        path,
        f"{what} outside the years 1-9999 cannot be written as RFC 3339",
    )
    whole = pc.strftime(pa.array(secs, pa.timestamp("s")), pattern).cast(_LS)
    return whole, _fraction(rem, per_s)


def _temporal(op: int, arr: pa.Array, path: str) -> pa.Array:
    t = arr.type
    if op == J_TIMESTAMP and pa.types.is_timestamp(t):
        whole, frac = _clock(_int64(arr), _UNIT_PER_S[t.unit], "%Y-%m-%dT%H:%M:%S", path)
        out = _join('"', whole, frac, _UTC_SUFFIX + '"')
    elif op == J_DATE and (pa.types.is_date32(t) or pa.types.is_date64(t)):
        whole, _ = _clock(_days(arr, path) * 86_400, 1, "%Y-%m-%d", path, "a date")
        out = _join('"', whole, '"')
    elif op == J_TIME and (pa.types.is_time32(t) or pa.types.is_time64(t)):
        per_s = _UNIT_PER_S[t.unit]
        values = _int64(arr)
        # a time of day: the decoder (and RFC 3339) reads 00:00:00 to 23:59:59.999999999 only
        _fail_at(pa.array((values < 0) | (values >= 86_400 * per_s)), path, "a time outside one day is not a time")
        whole, frac = _clock(values, per_s, "%H:%M:%S", path)
        out = _join('"', whole, frac, '"')
    elif _is_text(t):
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


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


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
    """Map keys as strings: binary keys must be UTF-8 (JSON object names are text)."""
    if pa.types.is_dictionary(keys.type):
        keys = keys.dictionary_decode()
    try:
        return keys.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    for i, key in enumerate(keys.to_pylist()):
        if isinstance(key, bytes):
            try:
                key.decode("utf-8")
            except UnicodeDecodeError:
                raise _RowError(path, i, f"map key {key[:40]!r} is not UTF-8 text") from None
    raise EncodeError(f"{path}: map keys of Arrow type {keys.type} cannot be written as JSON object names")


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
    if _is_text(t):
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


class _Columns:
    """Builds the fragment array of one program node over one Arrow array."""

    def __init__(self, extra_column: str | None, absent_if_null: Mapping[int, frozenset[str]] | None = None) -> None:
        self.extra_column = extra_column
        self.absent_if_null = absent_if_null or {}

    def nulls_ok(self, program: tuple[Any, ...]) -> bool:
        return program[0] in (J_NULLABLE, J_NULL)

    def check_present(self, arr: pa.Array, live: Any, path: str) -> None:
        if not arr.null_count:
            return
        _fail_at(arr.is_null() if live is None else pc.and_(arr.is_null(), live), path, "null is not allowed here")

    def fragments(self, program: tuple[Any, ...], shadow: av.Schema, arr: pa.Array, path: str, live: Any) -> pa.Array:
        """Fragments of ``arr`` (null where ``arr`` is null; the caller decides whether that is allowed)."""
        op = program[0]
        t = arr.type
        if pa.types.is_null(t) and op != J_NULLABLE:  # an all-null column of no type
            return pa.nulls(len(arr), _LS)
        if pa.types.is_dictionary(t) and op not in (J_ENUM, J_STRING):
            arr = arr.dictionary_decode()
            t = arr.type
        if op == J_NULLABLE:
            inner = shadow.branches[1] if isinstance(shadow, av.Union) else shadow
            return pc.fill_null(self.fragments(program[1], inner, arr, path, live), _NULL_TEXT)
        if op == J_NULL:
            return pa.array(["null"] * len(arr), _LS)
        if op == J_OBJECT:
            if not pa.types.is_struct(t):
                raise EncodeError(f"{path}: an Arrow {t} column cannot be written as a JSON object")
            valid = arr.is_valid()
            here = valid if live is None else pc.and_(valid, live)
            body = self.object(program, shadow, lambda name: _child(arr, name), len(arr), path, here)
            return pc.if_else(valid, body, pa.nulls(len(arr), _LS))
        if op == J_ARRAY:
            if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
                raise EncodeError(f"{path}: an Arrow {t} column cannot be written as a JSON array")
            items, offsets = _list_parts(arr)
            item_program = program[1]
            item_shadow = shadow.items if isinstance(shadow, av.Array) else shadow
            try:
                frags = self.fragments(item_program, item_shadow, items, f"{path}[]", None)
                if not self.nulls_ok(item_program):
                    self.check_present(items, None, f"{path}[]")
            except _RowError as exc:  # at an item: report the row of its list
                raise exc.up(offsets) from None
            joined = pc.binary_join(pa.LargeListArray.from_arrays(offsets, frags), _c(","))
            return pc.if_else(arr.is_valid(), _join("[", joined, "]"), pa.nulls(len(arr), _LS))
        if op == J_MAP:
            if not pa.types.is_map(t):
                raise EncodeError(f"{path}: an Arrow {t} column cannot be written as a JSON object")
            items, offsets = _list_parts(arr)
            value_program = program[1]
            value_shadow = shadow.values if isinstance(shadow, av.Map) else shadow
            keys, values = items.field(0), items.field(1)
            try:
                frags = self.fragments(value_program, value_shadow, values, f"{path}{{}}", None)
                if not self.nulls_ok(value_program):
                    self.check_present(values, None, f"{path}{{}}")
                names = _key_text(keys, f"{path}{{}}")
            except _RowError as exc:  # at an entry: report the row of its map
                raise exc.up(offsets) from None
            pairs = _join(_quote(names), ":", frags)
            joined = pc.binary_join(pa.LargeListArray.from_arrays(offsets, pairs), _c(","))
            return pc.if_else(arr.is_valid(), _join("{", joined, "}"), pa.nulls(len(arr), _LS))
        if op == J_BOOL:
            if not pa.types.is_boolean(t):
                raise EncodeError(f"{path}: an Arrow {t} column cannot be written as a JSON boolean")
            return pc.if_else(arr, _c("true"), _c("false"))
        if op in _INT_RANGE:
            ints = _avro_number(shadow, arr, path)
            lo, hi = _INT_RANGE[op]
            if len(ints) - ints.null_count and (pc.min(ints).as_py() < lo or pc.max(ints).as_py() > hi):
                # the bounds as 64-bit scalars of the column's sign (uint64 has no common type with -2^63;
                # only a signed column can be below a bound)
                wide = pa.uint64() if pa.types.is_unsigned_integer(ints.type) else pa.int64()
                outside = pc.greater(ints, pa.scalar(hi, wide))
                if pc.min(ints).as_py() < lo:
                    outside = pc.or_(outside, pc.less(ints, pa.scalar(lo, pa.int64())))
                row = _first(pc.fill_null(outside, False))
                raise _RowError(path, row, f"{ints[row].as_py()} is out of the {_INT_WORD[op]} range")
            return ints.cast(pa.string()).cast(_LS)
        if op in (J_FLOAT, J_DOUBLE):
            if pa.types.is_integer(t):
                return arr.cast(pa.string()).cast(_LS)
            if not pa.types.is_floating(t):
                raise EncodeError(f"{path}: an Arrow {t} column cannot be written as a JSON number")
            return _floats(arr, path)
        if op in (J_STRING, J_ENUM):
            if pa.types.is_dictionary(t):
                arr = arr.dictionary_decode()
                t = arr.type
            if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)):
                raise EncodeError(f"{path}: an Arrow {t} column cannot be written as a JSON string")
            if op == J_ENUM:
                symbols = pa.array(list(program[1]), pa.string())
                unknown = pc.and_(arr.is_valid(), pc.invert(pc.is_in(arr.cast(pa.string()), symbols)))
                _fail_at(unknown, path, "not a symbol of the enum")
            return _quote(arr)
        if op in (J_BYTES_B64, J_FIXED_B64):
            return _base64(arr, program[1] if op == J_FIXED_B64 else None, path)
        if op in (J_TIMESTAMP, J_DATE, J_TIME):
            return _temporal(op, arr, path)
        if op == J_TEXT:
            return self.text(arr, path)
        raise EncodeError(f"{path}: unknown program op {op}")  # pragma: no cover - mapping makes only the above

    def text(self, arr: pa.Array, path: str) -> pa.Array:
        """A JSON-text column (string) compacted; any other column written as its Python values."""
        t = arr.type
        write = _compact if _is_text(t) else (lambda v, _: dumps_text(v))
        out: list[str | None] = []
        for i, v in enumerate(arr.to_pylist()):
            try:
                out.append(None if v is None else write(v, path))
            except EncodeError as exc:
                raise _RowError(path, i, str(exc).removeprefix(f"{path}: ")) from None
        return pa.array(out, _LS)

    def object(
        self,
        program: tuple[Any, ...],
        shadow: av.Schema,
        column: Callable[[str], pa.Array | None],
        n: int,
        path: str,
        live: Any,
    ) -> pa.Array:
        """Fragments of a JSON object per row from its property columns (``column(name)``)."""
        fields = program[1]
        shadow_fields = shadow.fields if isinstance(shadow, av.Record) else []
        absent = self.absent_if_null.get(id(shadow), frozenset())
        members: list[_Member] = []
        for i, (name, child, missing) in enumerate(fields):
            arr = column(name)
            if arr is None:
                if missing is None:
                    raise EncodeError(f"{path}: the batch has no column for required property {name!r}")
                continue  # an optional property without a column is left out, as from a dict without it
            child_shadow = shadow_fields[i].type if i < len(shadow_fields) else shadow
            frags = self.fragments(child, child_shadow, arr, f"{path}.{name}", live)
            if not self.nulls_ok(child):
                self.check_present(arr, live, f"{path}.{name}")
                frags = pc.fill_null(frags, _NULL_TEXT)  # rows outside ``live`` (null parents) only
            # null here means absent where "name": null would break the schema
            left_out = arr.is_null() if name in absent and arr.null_count else None
            members.append((encode_basestring(name) + ":", frags, left_out))
        if program[2] and self.extra_column is not None:
            extra = column(self.extra_column)
            if extra is not None and extra.null_count < len(extra):
                texts = self.text(extra, f"{path}.{self.extra_column}")
                inner = pc.utf8_slice_codeunits(texts, 1, -1)  # the members of the object text
                members.append(("", inner, pc.fill_null(pc.equal(inner, ""), True)))
        return _join("{", _members(members, n), "}")


_Member = tuple[str, pa.Array, Any]
"""One member of an object per row: the ``"name":`` text, the value texts, and the rows that leave
it out (a bool array, or None when every row has it)."""


def _members(members: list[_Member], n: int) -> pa.Array:
    """Row-wise ``,``-join of the members each row has ("" where it has none).

    Not ``binary_join_element_wise(null_handling="skip")``: pyarrow 26 drops the rows whose inputs
    are all null from its result."""
    if not members:
        return pa.array([""] * n, _LS)
    if all(left_out is None for _, _, left_out in members):  # the common case: one join of every row
        return _join(*[x for i, (key, texts, _) in enumerate(members) for x in (("," if i else "") + key, texts)])
    joined: Any = pa.nulls(n, _LS)
    for key, texts, left_out in members:
        part = _join(key, texts)
        if left_out is not None:
            part = pc.if_else(left_out, pa.scalar(None, _LS), part)
        both = _join(joined, ",", part)
        joined = pc.if_else(pc.is_null(joined), part, pc.if_else(pc.is_null(part), joined, both))
    return pc.fill_null(joined, _EMPTY)


def _branch(shadow: av.Schema) -> av.Schema:
    """The branch of a ``[null, T]`` shadow union that is not null."""
    assert isinstance(shadow, av.Union)
    return next(b for b in shadow.branches if b.type != "null")


def _child(arr: pa.StructArray, name: str) -> pa.Array | None:
    index = arr.type.get_field_index(name)
    return None if index < 0 else arr.field(index)


def _list_parts(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(values, int64 offsets rebased to 0) of a list or map array, slices applied."""
    t = arr.type
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        offsets = np.arange(len(arr) + 1, dtype=np.int64) * size
        return arr.values.slice(arr.offset * size, len(arr) * size), pa.array(offsets)
    offsets = np.asarray(arr.offsets.to_numpy(), dtype=np.int64)
    start = int(offsets[0]) if len(offsets) else 0
    end = int(offsets[-1]) if len(offsets) else 0
    return arr.values.slice(start, end - start), pa.array(offsets - start)


_OP_WORD = {J_TIMESTAMP: "date-time", J_DATE: "date", J_TIME: "time"}


class JsonEncoder:
    """Encode Arrow rows (or one value) as compact JSON payloads with one writer schema.

    Parameters
    ----------
    model : JsonSchemaModel, str or dict
        The writer schema: a JSON Schema document or a Pulsar JSON (Avro record) definition.
        For an object schema, columns are matched to properties by name and properties are
        written in schema order (a batch without a column for an optional property leaves it
        out); for any other schema the batch has one column. A root object that admits null takes
        either: the decoder's one ``value`` column (a null row is written ``null``) or the
        properties' columns. A column the object has no property for is an EncodeError (its
        values would be lost), except the ``keep_extra`` column of a schema parsed with it.

    Notes
    -----
    The bytes are those of ``json.dumps(row, separators=(",", ":"), ensure_ascii=False)`` for the
    row as a dict in schema order (see the module docstring for each type's text). A row whose
    columns are all null, where the schema cannot hold that, is a null payload.
    """

    def __init__(self, model: Any) -> None:
        self.model: JsonSchemaModel = parse(model)
        self.mapping: JsonMapping = map_model(self.model)
        self._program = self.mapping.program
        self._shadow = self.mapping.shadow
        self._top = self.model.name

    # -- batches -------------------------------------------------------------------------------------

    def encode(self, batch: Any) -> pa.Array:
        """One payload per row of ``batch`` (a RecordBatch or Table).

        Returns
        -------
        pa.BinaryArray

        Raises
        ------
        EncodeError
            A value the schema cannot hold (the message names the property path and the row, and
            ``index`` is the row), or a column the schema has no property for (its values would be
            lost).
        """
        data = as_table_like(batch)
        if isinstance(data, pa.Table):
            data = data.combine_chunks()
        try:
            return self._encode(data)
        except _RowError as exc:
            raise exc.encode_error() from None

    def _encode(self, data: pa.Table | pa.RecordBatch) -> pa.Array:
        n = data.num_rows
        columns = _Columns(self.mapping.extra_column, self.mapping.absent_if_null)
        program, shadow = self._program, self._shadow
        names = set(data.schema.names)
        if len(names) != data.num_columns:
            twice = sorted({c for c in data.schema.names if data.schema.names.count(c) > 1})
            raise EncodeError(f"the batch has more than one column named {', '.join(map(repr, twice))}")
        root_may_be_null = program[0] == J_NULLABLE and program[1][0] == J_OBJECT
        if root_may_be_null and names <= self._properties(program[1]):
            # a root object that may be null, given as its properties' columns (the form a root that
            # cannot be null takes): every row is an object; the one-column form writes null rows as null
            program, shadow = program[1], _branch(shadow)
        elif root_may_be_null and data.num_columns > 1:
            self._refuse_extra(program[1], data.schema.names)
        if program[0] == J_OBJECT:
            self._refuse_extra(program, data.schema.names)
            wanted = [name for name, _, _ in program[1]]
            cols = [_as_array(data.column(c)) for c in wanted if c in names]
            skip = self._null_rows(program, cols, n)
            live = None if skip is None else pa.array(~skip)
            out = columns.object(
                program,
                shadow,
                lambda name: _as_array(data.column(name)) if name in names else None,
                n,
                self._top,
                live,
            )
        else:
            if data.num_columns != 1:
                raise EncodeError("a schema that is not an object needs a batch with exactly one column")
            arr = _as_array(data.column(0))
            skip = None
            out = columns.fragments(self._program, self._shadow, arr, self._top, None)
            if not columns.nulls_ok(self._program):
                skip = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool) if arr.null_count else None
        if skip is not None:
            out = pc.if_else(pa.array(~skip), out, pa.nulls(n, _LS))
        return out.cast(pa.binary())

    def _refuse_extra(self, program: tuple[Any, ...], names: list[str]) -> None:
        """Columns the object has no property for would be dropped without a word: refuse them, as
        the Avro and Protobuf encoders do (the ``keep_extra`` column is one the object takes)."""
        taken = self._properties(program)
        extra = [name for name in names if name not in taken]
        if extra:
            raise EncodeError(
                f"the batch has column(s) {extra} that {self._top} has no property for; select the "
                f"schema's properties {[name for name, _, _ in program[1]]} first"
            )

    def _properties(self, program: tuple[Any, ...]) -> set[str]:
        """The column names an object program takes: its properties and the ``keep_extra`` column."""
        names = {name for name, _, _ in program[1]}
        return names | {self.mapping.extra_column} if self.mapping.extra_column else names

    @staticmethod
    def _null_rows(program: tuple[Any, ...], cols: list[pa.Array], n: int) -> np.ndarray | None:
        """Rows whose property columns are all null, when the object cannot be all null."""
        fields = program[1]
        if all(child[0] in (J_NULLABLE, J_NULL) for _, child, _ in fields) or not cols:
            return None
        if not all(c.null_count for c in cols):
            return None
        rows = np.logical_and.reduce([np.asarray(c.is_null().to_numpy(zero_copy_only=False)) for c in cols])
        return rows if rows.any() else None

    # -- one value -----------------------------------------------------------------------------------

    def encode_value(self, value: Any) -> bytes:
        """One payload for one Python value: a dict for an object schema.

        Takes the decoder's values (``datetime``, ``date``, ``time``, bytes, a map as a dict or a
        list of pairs, a JSON-text column's value as its text) and JSON's own (RFC 3339 strings,
        base64 strings, written as given). Properties the schema does not name are written after
        the schema's, as ``json.dumps`` would.

        Raises
        ------
        EncodeError
            The value does not fit the schema (the message names the property path).
        """
        out: list[str] = []
        _write(
            self._program, self._shadow, value, out, self._top, self.mapping.extra_column, self.mapping.absent_if_null
        )
        return "".join(out).encode("utf-8")

    def __repr__(self) -> str:
        return f"JsonEncoder({self.model!r})"


# -- one value ----------------------------------------------------------------------------------------


def _utc_iso(v: datetime.datetime) -> str:
    if v.tzinfo is None:
        v = v.replace(tzinfo=datetime.UTC)
    text = v.astimezone(datetime.UTC).isoformat()
    return text


def _write_number(op: int, shadow: av.Schema, v: Any, path: str) -> str:
    if op in (J_FLOAT, J_DOUBLE):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise EncodeError(f"{path}: {v!r} is not a number")
        if isinstance(v, float):
            if v != v or v in (float("inf"), float("-inf")):
                raise EncodeError(f"{path}: NaN and infinities cannot be written as JSON")
            return float.__repr__(v)
        return int.__repr__(v)
    logical = getattr(shadow, "logical", None)
    if isinstance(v, datetime.datetime) and logical and "timestamp" in logical:
        aware = v if v.tzinfo is not None else v.replace(tzinfo=datetime.UTC)
        delta = aware - _EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        per_s = _AVRO_UNIT[logical.rsplit("-", 1)[1]]
        v = micros // (1_000_000 // per_s) if per_s <= 1_000_000 else micros * 1000
    elif isinstance(v, datetime.date) and not isinstance(v, datetime.datetime) and logical == "date":
        v = (v - _EPOCH_DAY).days
    elif isinstance(v, datetime.time) and logical in ("time-millis", "time-micros"):
        micros = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
        v = micros // 1000 if logical == "time-millis" else micros
    if isinstance(v, bool) or not isinstance(v, int):
        raise EncodeError(f"{path}: {v!r} is not an integer")
    lo, hi = _INT_RANGE[op]
    if not lo <= v <= hi:
        raise EncodeError(f"{path}: {v} is out of the {_INT_WORD[op]} range")
    return int.__repr__(v)


def _readable(op: int, size: int | None, text: str) -> bool:
    """Whether the decoder reads ``text`` in a property of ``op`` (its own functions decide)."""
    raw = text.encode("utf-8", "replace")  # a lone surrogate is no digit or base64 letter either
    if op in (J_BYTES_B64, J_FIXED_B64):
        decoded = _kernel_base64(raw)
        return decoded is not None and (size is None or len(decoded) == size)
    parse = _timestamp_micros if op == J_TIMESTAMP else _date_days if op == J_DATE else _time_micros
    return parse(raw) is not None


def _write_string(op: int, program: tuple[Any, ...], v: Any, path: str) -> str:  # noqa: C901 - one case per op
    if isinstance(v, str):
        if op == J_ENUM and v not in program[1]:
            raise EncodeError(f"{path}: {v!r} is not a symbol of the enum")
        uuid_text = op == J_FIXED_B64 and program[1] == 16 and len(v) == 36
        if uuid_text:
            try:
                v = uuid.UUID(v).bytes
            except ValueError:
                uuid_text = False
        if not uuid_text:
            if op in _FORMAT_TEXT or op in (J_BYTES_B64, J_FIXED_B64):
                size = program[1] if op == J_FIXED_B64 else None
                if not _readable(op, size, v):
                    what = _FORMAT_TEXT.get(op) or "padded standard base64" + (f" of {size} bytes" if size else "")
                    raise EncodeError(f"{path}: {v[:40]!r} is not {what}")
            return str(encode_basestring(v))
    if op in (J_BYTES_B64, J_FIXED_B64) and isinstance(v, (bytes, bytearray, memoryview)):
        raw = bytes(v)
        if op == J_FIXED_B64 and len(raw) != program[1]:
            raise EncodeError(f"{path}: {len(raw)} bytes where the fixed size is {program[1]}")
        return '"' + binascii.b2a_base64(raw, newline=False).decode("ascii") + '"'
    if op == J_TIMESTAMP and isinstance(v, datetime.datetime):
        return '"' + _utc_iso(v) + '"'
    if op == J_DATE and isinstance(v, datetime.date) and not isinstance(v, datetime.datetime):
        return '"' + v.isoformat() + '"'
    if op == J_TIME and isinstance(v, datetime.time):
        return '"' + v.replace(tzinfo=None).isoformat() + '"'
    raise EncodeError(f"{path}: {v!r} does not fit a {_WORDS.get(op, 'string')}")


_WORDS = {
    J_ENUM: "enum symbol",
    J_BYTES_B64: "base64 string",
    J_FIXED_B64: "base64 string",
    J_TIMESTAMP: "date-time",
    J_DATE: "date",
    J_TIME: "time",
}


def _write(  # noqa: C901 - one case per op
    program: tuple[Any, ...],
    shadow: av.Schema,
    v: Any,
    out: list[str],
    path: str,
    extra_column: str | None = None,
    absent: Mapping[int, frozenset[str]] | None = None,
) -> None:
    op = program[0]
    if op == J_NULLABLE:
        if v is None:
            out.append("null")
            return
        inner = shadow.branches[1] if isinstance(shadow, av.Union) else shadow
        _write(program[1], inner, v, out, path, absent=absent)
        return
    if v is None:
        if op in (J_NULL, J_TEXT):
            out.append("null")
            return
        raise EncodeError(f"{path}: null is not allowed here")
    if op == J_OBJECT:
        if not isinstance(v, Mapping):
            raise EncodeError(f"{path}: {type(v).__name__} is not an object (a dict)")
        shadow_fields = shadow.fields if isinstance(shadow, av.Record) else []
        out.append("{")
        first = True
        named = set()
        left_out = (absent or {}).get(id(shadow), frozenset())
        for i, (name, child, missing) in enumerate(program[1]):
            named.add(name)
            if name not in v or (v[name] is None and name in left_out):  # null where null breaks the schema: absent
                if missing is None:
                    raise EncodeError(f"{path}: required property {name!r} is missing")
                continue
            out.append((encode_basestring(name) if first else "," + encode_basestring(name)) + ":")
            first = False
            child_shadow = shadow_fields[i].type if i < len(shadow_fields) else shadow
            _write(child, child_shadow, v[name], out, f"{path}.{name}", absent=absent)
        extra = v.get(extra_column) if program[2] and extra_column is not None else None
        if extra_column is not None and program[2]:
            named.add(extra_column)
        for key, item in v.items():  # properties the schema does not name, as json.dumps writes them
            if key not in named:
                if not isinstance(key, str):
                    raise EncodeError(f"{path}: property name {key!r} is not a string")
                out.append(("" if first else ",") + encode_basestring(key) + ":" + dumps_text(item))
                first = False
        if extra is not None:
            members = _compact(extra, f"{path}.{extra_column}")[1:-1] if isinstance(extra, str) else None
            if members is None:
                raise EncodeError(f"{path}.{extra_column}: expected the JSON text of an object")
            if members:
                out.append(("" if first else ",") + members)
        out.append("}")
        return
    if op == J_ARRAY:
        if isinstance(v, (str, bytes, Mapping)) or not hasattr(v, "__iter__"):
            raise EncodeError(f"{path}: {type(v).__name__} is not an array (a list)")
        item_shadow = shadow.items if isinstance(shadow, av.Array) else shadow
        out.append("[")
        for j, item in enumerate(v):
            if j:
                out.append(",")
            _write(program[1], item_shadow, item, out, f"{path}[{j}]", absent=absent)
        out.append("]")
        return
    if op == J_MAP:
        pairs = v.items() if isinstance(v, Mapping) else v  # the decoder gives a list of (key, value)
        value_shadow = shadow.values if isinstance(shadow, av.Map) else shadow
        out.append("{")
        try:
            for j, (key, item) in enumerate(pairs):
                if not isinstance(key, str):
                    raise EncodeError(f"{path}: map key {key!r} is not a string")
                out.append(("," if j else "") + encode_basestring(key) + ":")
                _write(program[1], value_shadow, item, out, f"{path}{{{key}}}", absent=absent)
        except (TypeError, ValueError):
            raise EncodeError(f"{path}: {type(v).__name__} is not a map (a dict)") from None
        out.append("}")
        return
    if op == J_NULL:
        raise EncodeError(f"{path}: expected null")
    if op == J_BOOL:
        if not isinstance(v, bool):
            raise EncodeError(f"{path}: {v!r} is not a boolean")
        out.append("true" if v else "false")
        return
    if op in _INT_RANGE or op in (J_FLOAT, J_DOUBLE):
        out.append(_write_number(op, shadow, v, path))
        return
    if op == J_TEXT:
        out.append(_compact(v, path) if isinstance(v, str) else dumps_text(v))
        return
    if op in (J_STRING, J_ENUM, J_BYTES_B64, J_FIXED_B64, J_TIMESTAMP, J_DATE, J_TIME):
        out.append(_write_string(op, program, v, path))
        return
    raise EncodeError(f"{path}: unknown program op {op}")  # pragma: no cover
