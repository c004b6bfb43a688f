"""Field defaults as Avro bytes: a reader-only field's default is encoded once, when the plan is
built, and decoded with the reader's own program for every row."""

from __future__ import annotations

import math
import struct
from typing import Any

from ...errors import SchemaError
from .schema import Array, Enum, Fixed, Map, Primitive, Record, Schema, Union, java_double

__all__ = ["DefaultError", "encode_default"]


class DefaultError(SchemaError):
    """A field default its own type cannot hold: a fault of the reader schema wherever it is used
    (a writer union's branch that would need it does not fail only its rows: the plan fails)."""


# time-millis / time-micros: the length of one day in their unit
_DAY = {"time-millis": 86_400_000, "time-micros": 86_400_000_000}


def _zz(n: int, out: bytearray) -> None:
    v = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _latin1(value: Any, what: str) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if not isinstance(value, str):
        raise ValueError(f"{what} default must be a string")
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:  # a JSON default of bytes or fixed is one character per byte
        raise ValueError(f"{what} default has a character above U+00FF") from None


def _check_decimal(node: Primitive | Fixed, data: bytes) -> None:
    """Refuse a decimal default with more digits than the precision: the decimal ops would refuse
    that unscaled value in every row (Arrow's decimals hold at most ``precision`` digits)."""
    if node.logical != "decimal":
        return
    unscaled = int.from_bytes(data, "big", signed=True)
    if not -(10**node.precision) < unscaled < 10**node.precision:
        raise ValueError(
            f"decimal default with unscaled value {unscaled} has more digits than its precision {node.precision}"
        )


def _enc(node: Schema, v: Any, out: bytearray) -> None:
    if isinstance(node, Union):
        errors = []
        for i, b in enumerate(node.branches):
            trial = bytearray()
            try:
                _zz(i, trial)
                _enc(b, v, trial)
            except (ValueError, TypeError, OverflowError, KeyError, struct.error) as exc:
                errors.append(str(exc))
                continue
            out += trial
            return
        raise ValueError("default matches no union branch")
    if isinstance(node, Record):
        if not isinstance(v, dict):
            raise ValueError("record default must be an object")
        for f in node.fields:
            if f.name in v:
                _enc(f.type, v[f.name], out)
            elif f.has_default:
                _enc(f.type, f.default, out)
            else:
                raise ValueError(f"record default lacks field {f.name!r}")
        return
    if isinstance(node, Enum):
        if v not in node.symbols:
            raise ValueError(f"{v!r} is not a symbol of enum {node.fullname!r}")
        _zz(node.symbols.index(v), out)
        return
    if isinstance(node, Array):
        if not isinstance(v, list):
            raise ValueError("array default must be a list")
        if v:
            _zz(len(v), out)
            for item in v:
                _enc(node.items, item, out)
        out.append(0)
        return
    if isinstance(node, Map):
        if not isinstance(v, dict):
            raise ValueError("map default must be an object")
        if v:
            _zz(len(v), out)
            for k, item in v.items():
                kb = str(k).encode("utf-8")
                _zz(len(kb), out)
                out += kb
                _enc(node.values, item, out)
        out.append(0)
        return
    if isinstance(node, Fixed):
        data = _latin1(v, "fixed")
        if len(data) != node.size:
            raise ValueError(f"fixed default of {len(data)} bytes, expected {node.size}")
        _check_decimal(node, data)
        out += data
        return
    t = node.type
    if t == "null":
        if v is not None:
            raise ValueError("null default must be null")
    elif t == "boolean":
        if not isinstance(v, bool):
            raise ValueError("boolean default must be true or false")
        out.append(1 if v else 0)
    elif t in ("int", "long"):
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueError(f"{t} default must be an integer")
        lim = 31 if t == "int" else 63
        if not -(2**lim) <= v < 2**lim:
            raise ValueError(f"{t} default {v} out of range")
        day = _DAY.get(getattr(node, "logical", None) or "")
        if day is not None and not 0 <= v < day:  # the decoders refuse such a time of day (AVRO_TIME_OUT_OF_RANGE)
            raise ValueError(f"time of day {v} is outside one day")
        _zz(v, out)
    elif t in ("float", "double"):
        if isinstance(v, str):  # Avro Java reads a string default of a float field as Java's parseDouble does
            number = java_double(v)
            if number is None:
                raise ValueError(f"{t} default {v!r} is not a number")
            v = number
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise ValueError(f"{t} default must be a number")
        try:
            out += struct.pack("<f" if t == "float" else "<d", float(v))
        except (OverflowError, struct.error):  # finite, and past the largest float / double
            raise ValueError(f"{t} default is outside the range of a {t}") from None
    elif t == "bytes":
        data = _latin1(v, "bytes")
        assert isinstance(node, Primitive)
        _check_decimal(node, data)
        _zz(len(data), out)
        out += data
    elif t == "string":
        if not isinstance(v, str):
            raise ValueError("string default must be a string")
        data = v.encode("utf-8")
        _zz(len(data), out)
        out += data
    else:  # pragma: no cover - parse() only produces the types above
        raise ValueError(f"unknown type {t}")


def encode_default(node: Schema, value: Any, path: str = "default") -> bytes:
    """Encode a JSON default value as Avro binary of ``node`` (union defaults: first branch that fits)."""
    out = bytearray()
    try:
        _enc(node, value, out)
    except (ValueError, TypeError, OverflowError, UnicodeEncodeError, struct.error) as exc:
        raise DefaultError(f"{path}: invalid default {value!r}: {exc}") from None
    return bytes(out)


del math
