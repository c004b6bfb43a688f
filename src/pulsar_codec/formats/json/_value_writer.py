"""The one-value path: one Python value -> its compact JSON text, walking the program recursively.

:meth:`.encoder.JsonEncoder.encode_value` writes a payload with :func:`_write`; the batch path
(:mod:`.encoder` with :mod:`._column_fragments`) writes the same bytes column by column. Kept apart
because the two paths share little beyond a few constants, :func:`dumps_text` and :func:`_compact`:
this one reads Python values (the decoder's and JSON's own shapes), the other Arrow arrays. A string
given for a ``format`` / ``contentEncoding`` property is checked with the pure JSON kernel's own readers.
"""

from __future__ import annotations

import binascii
import datetime
import json
import struct
import uuid
from collections.abc import Mapping
from json.encoder import encode_basestring  # json.dumps' string escaper when ensure_ascii=False
from typing import Any

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
    J_MAP,
    J_NULL,
    J_NULLABLE,
    J_OBJECT,
    J_STRING,
    J_TEXT,
    J_TIME,
    J_TIMESTAMP,
)
from ...errors import EncodeError
from ..avro import schema as av
from ._column_fragments import _AVRO_UNIT, _FORMAT_TEXT, _INT_RANGE, _INT_WORD
from .mapping import ITEMS

__all__ = ["dumps_text"]

# the pure JSON kernel's readers of format strings: what one value must pass to read back
_kernel_base64 = _kernel._base64
_timestamp_micros = _kernel._timestamp_micros
_date_days = _kernel._date_days
_time_micros = _kernel._time_micros

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_EPOCH_DAY = datetime.date(1970, 1, 1)


def dumps_text(value: Any) -> str:
    """Compact JSON text of a Python value, as confluent-kafka writes it without orjson.

    Raises
    ------
    EncodeError
        NaN or an infinity, or a value JSON cannot hold.
    """
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise EncodeError(f"value cannot be written as JSON: {exc}") from None
    return _utf8_ready(text)


def _utf8_ready(text: str) -> str:
    """``text``, refused when it holds a lone surrogate (no UTF-8 form: the payload could not be
    written)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodeError(f"value cannot be written as JSON: {exc.reason} at {exc.start} (a lone surrogate)") from None
    return text


class _NumberText(str):
    """A JSON number as its text: written back as read, so no digit is lost to ``float``."""


class _Members(list[tuple[str, Any]]):
    """A JSON object's members in order, repeated names kept: written back as read."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _compact(text: str, path: str) -> str:
    """A JSON-text value (the decoder's form for untyped schemas) re-written compactly: its
    numbers, member order and repeated names as they are in the text (only the whitespace goes)."""
    try:
        value = json.loads(
            text,
            parse_float=_NumberText,
            parse_int=_NumberText,
            parse_constant=_refuse_constant,
            object_pairs_hook=_Members,
        )
        return _utf8_ready("".join(_text_parts(value, [])))
    except (ValueError, RecursionError):
        raise EncodeError(f"{path}: {text[:40]!r} is not JSON text") from None


def _text_parts(value: Any, out: list[str]) -> list[str]:
    if isinstance(value, _NumberText):
        out.append(str.__str__(value))
    elif isinstance(value, str):
        out.append(encode_basestring(value))
    elif value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, _Members):
        out.append("{")
        for i, (name, item) in enumerate(value):
            out.append(("," if i else "") + encode_basestring(name) + ":")
            _text_parts(item, out)
        out.append("}")
    else:  # a list
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _text_parts(item, out)
        out.append("]")
    return out


def _utc_iso(v: datetime.datetime) -> str:
    if v.tzinfo is None:
        v = v.replace(tzinfo=datetime.UTC)
    text = v.astimezone(datetime.UTC).isoformat()
    return text


def _write_number(op: int, shadow: av.Schema, v: Any, path: str) -> str:
    if op in (J_FLOAT, J_DOUBLE):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise EncodeError(f"{path}: {v!r} is not a number")
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            raise EncodeError(f"{path}: NaN and infinities cannot be written as JSON")
        # the reader takes the number as a double (a float32 for op J_FLOAT): past that range it is refused
        try:
            as_double = float(v)  # an int past the double range: OverflowError
            if op == J_FLOAT:
                struct.pack("<f", as_double)  # past float32's range after rounding: OverflowError
        except OverflowError:
            shown = repr(v) if isinstance(v, float) or abs(v) < 10**40 else f"an integer of {len(str(abs(v)))} digits"
            raise EncodeError(f"{path}: {shown} is past the {'float32' if op == J_FLOAT else 'double'} range") from None
        return float.__repr__(v) if isinstance(v, float) else int.__repr__(v)
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
    refused: Mapping[int, frozenset[str]] | None = None,
) -> None:
    op = program[0]
    if op == J_NULLABLE:
        if v is None:
            out.append("null")
            return
        inner = shadow.branches[1] if isinstance(shadow, av.Union) else shadow
        _write(program[1], inner, v, out, path, absent=absent, refused=refused)
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
        not_null = (refused or {}).get(id(shadow), frozenset())  # JSON-text properties whose schema refuses null
        for i, (name, child, missing) in enumerate(program[1]):
            named.add(name)
            if name not in v or (v[name] is None and name in left_out):  # null where null breaks the schema: absent
                if missing is None:
                    raise EncodeError(f"{path}: required property {name!r} is missing")
                continue
            if v[name] is None and name in not_null:
                raise EncodeError(f"{path}.{name}: null is not allowed here")
            out.append((encode_basestring(name) if first else "," + encode_basestring(name)) + ":")
            first = False
            child_shadow = shadow_fields[i].type if i < len(shadow_fields) else shadow
            _write(child, child_shadow, v[name], out, f"{path}.{name}", absent=absent, refused=refused)
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
        no_null = ITEMS in (refused or {}).get(id(shadow), frozenset())  # JSON-text items refusing null
        out.append("[")
        for j, item in enumerate(v):
            if j:
                out.append(",")
            if item is None and no_null:
                raise EncodeError(f"{path}[{j}]: null is not allowed here")
            _write(program[1], item_shadow, item, out, f"{path}[{j}]", absent=absent, refused=refused)
        out.append("]")
        return
    if op == J_MAP:
        pairs = v.items() if isinstance(v, Mapping) else v  # the decoder gives a list of (key, value)
        value_shadow = shadow.values if isinstance(shadow, av.Map) else shadow
        no_null = ITEMS in (refused or {}).get(id(shadow), frozenset())  # JSON-text values refusing null
        out.append("{")
        try:
            for j, (key, item) in enumerate(pairs):
                if isinstance(key, (bytes, bytearray)):  # binary keys that are UTF-8, as the batch path takes them
                    try:
                        key = bytes(key).decode("utf-8")
                    except UnicodeDecodeError:
                        raise EncodeError(f"{path}{{}}: map key {bytes(key)[:40]!r} is not UTF-8 text") from None
                if not isinstance(key, str):
                    raise EncodeError(f"{path}: map key {key!r} is not a string")
                if item is None and no_null:
                    raise EncodeError(f"{path}{{{key}}}: null is not allowed here")
                out.append(("," if j else "") + encode_basestring(key) + ":")
                _write(program[1], value_shadow, item, out, f"{path}{{{key}}}", absent=absent, refused=refused)
        except EncodeError:  # a key's or a value's own error (an EncodeError is a ValueError too)
            raise
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
