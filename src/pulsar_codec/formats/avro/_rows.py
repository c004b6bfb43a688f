"""The row path of the Avro encoder: one closure per schema node over Python values.

Used to encode one value (:meth:`Encoder.encode_value`, behind ``MessageEncoder.encode_value``), for
the Arrow/Avro pairings the columnar binding does not cover, and to word the error of a row the
encode kernel stopped at (so both paths raise the same :class:`~pulsar_codec.errors.EncodeError`
text). A record value may leave out fields that have a default (the default is written, as
fastavro and confluent-kafka do); a ``duration`` may also be given as its 12 Avro bytes, a ``uuid``
on ``fixed(16)`` as text, a ``uuid.UUID`` or its 16 bytes. A value for a union is written with the
first branch that accepts it, unless it is a :class:`Branch` (what the encoder makes of an Arrow union
element: its type code chose the branch). Decimals are written only when exact: a value with more
fractional digits than the schema's scale, or more digits than its precision, is an error (as in
Avro Java and fastavro), never rounded.
"""

from __future__ import annotations

import datetime
import decimal
import struct
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from ...errors import EncodeError, SchemaError
from .defaults import encode_default
from .schema import Array, Enum, Field, Fixed, Map, Primitive, Record, Schema, Union

__all__ = ["Branch", "accepts", "row_writer"]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
_EPOCH_DATE = datetime.date(1970, 1, 1)
_pack_f = struct.Struct("<f").pack
_pack_d = struct.Struct("<d").pack
_MISSING = object()


class Branch:
    """A union value whose branch is already chosen: ``index`` into the union's branches."""

    __slots__ = ("index", "value")

    def __init__(self, index: int, value: Any) -> None:
        self.index = index
        self.value = value

    def __repr__(self) -> str:
        return f"Branch({self.index}, {self.value!r})"


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
    if hasattr(v, "value") and isinstance(v.value, int):  # pandas Timestamp: exact nanoseconds
        return int(v.value) * unit // 1_000_000_000
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            delta = v - _EPOCH_NAIVE
        else:
            delta = v - _EPOCH
        return (delta.days * 86400 + delta.seconds) * unit + delta.microseconds * unit // 1_000_000
    raise TypeError(f"cannot write {v!r} as a timestamp")


def row_writer(node: Schema, path: str) -> Callable[[Any, bytearray], None]:  # noqa: C901 - one case per type
    if isinstance(node, Union):
        branches = [(b, row_writer(b, f"{path}[{i}]")) for i, b in enumerate(node.branches)]
        double_at = next((i for i, b in enumerate(node.branches) if b.type == "double" and b.logical is None), None)
        integers = [b for b in node.branches if b.type in ("int", "long") and b.logical is None]
        # Spark's form of a decoded union: a struct of one field per non-null branch, named as the
        # decoder's Arrow union names its children (Union.branch_names)
        by_name = {n: i for i, (n, b) in enumerate(zip(node.branch_names, node.branches)) if b.type != "null"}
        null_at = next((i for i, b in enumerate(node.branches) if b.type == "null"), None)

        def w_union(v: Any, out: bytearray) -> None:
            if isinstance(v, Branch):
                _zz(out, v.index)
                branches[v.index][1](v.value, out)
                return
            if double_at is not None and isinstance(v, (int, float)) and not isinstance(v, bool):
                # a Python float is a double: a float branch would round it (fastavro picks double too)
                if isinstance(v, float) or not any(accepts(b, v) for b in integers):
                    _zz(out, double_at)
                    branches[double_at][1](v, out)
                    return
            for i, (b, f) in enumerate(branches):
                if accepts(b, v):
                    _zz(out, i)
                    f(v, out)
                    return
            if isinstance(v, Mapping) and len(v) == len(by_name) and set(v) == set(by_name):
                given = [name for name, x in v.items() if x is not None]
                if len(given) == 1 or (not given and null_at is not None):
                    at = by_name[given[0]] if given else null_at
                    assert at is not None
                    _zz(out, at)
                    branches[at][1](v[given[0]] if given else None, out)
                    return
            kinds = [b.type for b, _ in branches if b.type in ("int", "long")]
            if isinstance(v, int) and not isinstance(v, bool) and kinds:
                if len(branches) - (null_at is not None) == 1:  # a nullable int or long: say which
                    raise EncodeError(f"{path}: {v!r} is out of the {kinds[0]} range")
                raise EncodeError(f"{path}: {v!r} is out of the range of the union's integer branches")
            raise EncodeError(f"{path}: {v!r} matches no branch of the union")

        return w_union
    if isinstance(node, Record):
        fields = [(f.name, row_writer(f.type, f"{path}.{f.name}"), _default_bytes(f, path)) for f in node.fields]

        def w_record(v: Any, out: bytearray) -> None:
            if not isinstance(v, dict):
                raise EncodeError(f"{path}: expected a record (dict), got {v!r}")
            for name, f, default in fields:
                item = v.get(name, _MISSING)
                if item is _MISSING:
                    if isinstance(default, bytes):  # a missing key takes the field's default, as fastavro does
                        out += default
                        continue
                    if default is not None:
                        raise EncodeError(default)
                    item = None
                f(item, out)

        return w_record
    if isinstance(node, Enum):
        index = {s: i for i, s in enumerate(node.symbols)}

        def w_enum(v: Any, out: bytearray) -> None:
            try:
                _zz(out, index[v])
            except (KeyError, TypeError):
                raise EncodeError(f"{path}: {v!r} is not a symbol of enum {node.fullname}") from None

        return w_enum
    if isinstance(node, Array):
        item = row_writer(node.items, f"{path}[]")

        def w_array(v: Any, out: bytearray) -> None:
            if v is None:
                raise EncodeError(f"{path}: null is not an array")
            v = _items_of(v, path)
            if len(v):
                _zz(out, len(v))
                for x in v:
                    item(x, out)
            out.append(0)

        return w_array
    if isinstance(node, Map):
        value = row_writer(node.values, f"{path}{{}}")

        def w_map(v: Any, out: bytearray) -> None:
            if v is None:
                raise EncodeError(f"{path}: null is not a map")
            items = _pairs_of(v, path)
            if items:
                _zz(out, len(items))
                for k, x in items:
                    if not isinstance(k, str):  # str(b"k") would write the text "b'k'"
                        raise EncodeError(f"{path}: map key {k!r} is not a string (Avro map keys are strings)")
                    kb = k.encode("utf-8")
                    _zz(out, len(kb))
                    out += kb
                    value(x, out)
            out.append(0)

        return w_map
    if isinstance(node, Fixed):
        size = node.size
        if node.logical == "decimal":
            scale, precision = node.scale, node.precision

            def w_dec_fixed(v: Any, out: bytearray) -> None:
                try:
                    out += _unscaled(v, scale, precision, path).to_bytes(size, "big", signed=True)
                except OverflowError:
                    raise EncodeError(f"{path}: {v!r} does not fit in {size} bytes") from None

            return w_dec_fixed
        if node.logical == "duration":

            def w_duration(v: Any, out: bytearray) -> None:
                if isinstance(v, (bytes, bytearray)) and len(v) == 12:  # fastavro's shape: the Avro bytes
                    out += v
                    return
                if isinstance(v, Mapping):  # Spark's form of a month_day_nano interval: a struct
                    v = (v["months"], v["days"], v["nanoseconds"])
                months, days, nanos = (v.months, v.days, v.nanoseconds) if hasattr(v, "months") else v
                out += struct.pack("<III", months, days, nanos // 1_000_000)

            return _guarded(w_duration, path, "duration")
        if node.logical == "uuid":

            def w_uuid(v: Any, out: bytearray) -> None:
                if isinstance(v, str):  # the decoder's text (uuid.UUID also reads other spellings)
                    v = uuid.UUID(v)
                if isinstance(v, uuid.UUID):
                    out += v.bytes
                elif isinstance(v, (bytes, bytearray)) and len(v) == 16:
                    out += v
                else:
                    raise EncodeError(f"{path}: expected a UUID, got {v!r}")

            return _guarded(w_uuid, path, "uuid")

        def w_fixed(v: Any, out: bytearray) -> None:
            if not isinstance(v, (bytes, bytearray)) or len(v) != size:
                raise EncodeError(f"{path}: expected {size} bytes, got {v!r}")
            out += v

        return w_fixed
    assert isinstance(node, Primitive)
    t, lt = node.type, node.logical
    if lt == "decimal":
        scale, precision = node.scale, node.precision

        def w_dec(v: Any, out: bytearray) -> None:
            n = _unscaled(v, scale, precision, path)
            data = n.to_bytes((n.bit_length() + 8) // 8 or 1, "big", signed=True)
            _zz(out, len(data))
            out += data

        return w_dec
    # date and time-millis annotate an Avro int: a value past 32 bits is not a valid encoding
    zz = _zz_int if t == "int" else _zz
    if lt == "date":
        return _guarded(
            lambda v, out: zz(out, (v - _EPOCH_DATE).days if isinstance(v, datetime.date) else int(v)), path, lt
        )
    if lt in ("time-millis", "time-micros"):
        unit = 1000 if lt == "time-millis" else 1_000_000

        def w_time(v: Any, out: bytearray) -> None:
            if isinstance(v, datetime.time):
                us = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
                v = us * unit // 1_000_000
            n = int(v)
            if -(1 << 63) <= n < (1 << 63) and not 0 <= n < 86_400 * unit:  # (past 64 bits: _zz's error)
                raise EncodeError(f"{path}: time of day {n} is outside one day")  # no decoder reads it
            zz(out, n)

        return _guarded(w_time, path, lt)
    if lt and "timestamp" in lt:
        unit = {"millis": 1000, "micros": 1_000_000, "nanos": 1_000_000_000}[lt.rsplit("-", 1)[1]]
        return _guarded(lambda v, out: _zz(out, _since_epoch(v, unit, True)), path, lt)
    if t == "null":

        def w_null(v: Any, out: bytearray) -> None:
            if v is not None:
                raise EncodeError(f"{path}: expected null, got {v!r}")

        return w_null
    if t == "boolean":

        def w_bool(v: Any, out: bytearray) -> None:
            if not isinstance(v, bool):
                raise EncodeError(f"{path}: expected a boolean, got {v!r}")
            out.append(1 if v else 0)

        return w_bool
    if t in ("int", "long"):
        lim = 2**31 if t == "int" else 2**63

        def w_int(v: Any, out: bytearray) -> None:
            if not isinstance(v, int) or isinstance(v, bool) or not -lim <= v < lim:
                raise EncodeError(f"{path}: {v!r} is not a valid {t}")
            _zz(out, v)

        return w_int
    if t in ("float", "double"):
        pack = _pack_f if t == "float" else _pack_d

        def w_float(v: Any, out: bytearray) -> None:
            try:
                out += pack(v)
            except (struct.error, TypeError, OverflowError):
                raise EncodeError(f"{path}: {v!r} is not a valid {t}") from None

        return w_float
    if t == "string":

        def w_string(v: Any, out: bytearray) -> None:
            if isinstance(v, uuid.UUID):
                v = str(v)
            if not isinstance(v, str):
                raise EncodeError(f"{path}: expected a string, got {v!r}")
            data = v.encode("utf-8")
            _zz(out, len(data))
            out += data

        return w_string

    def w_bytes(v: Any, out: bytearray) -> None:
        if not isinstance(v, (bytes, bytearray)):
            raise EncodeError(f"{path}: expected bytes, got {v!r}")
        _zz(out, len(v))
        out += v

    return w_bytes


def _default_bytes(f: Field, path: str) -> bytes | str | None:
    """The Avro bytes of a field's default; None when it has none, the message of the error to raise
    when a value leaves out a field whose default does not fit its type."""
    if not f.has_default:
        return None
    try:
        return encode_default(f.type, f.default, f"{path}.{f.name}")
    except SchemaError as exc:
        return str(exc)


def _guarded(fn: Callable[[Any, bytearray], None], path: str, what: str) -> Callable[[Any, bytearray], None]:
    """A writer whose conversion errors (None, wrong types, out of range) become EncodeError."""

    def w(v: Any, out: bytearray) -> None:
        try:
            fn(v, out)
        except EncodeError:
            raise
        except (TypeError, ValueError, OverflowError, struct.error):
            raise EncodeError(f"{path}: {v!r} is not a valid {what}") from None

    return w


def _unscaled(v: Any, scale: int, precision: int, path: str) -> int:
    """The unscaled integer of ``v`` at ``scale``, exactly (integer arithmetic: ``Decimal.scaleb``
    rounds to the context's 28 digits), refusing what would need rounding or more digits than
    ``precision``."""
    if isinstance(v, str):  # Spark's form of a decimal of more than 38 digits (its decimals stop there)
        try:
            v = decimal.Decimal(v)
        except decimal.InvalidOperation:
            raise EncodeError(f"{path}: {v!r} is not a decimal number") from None
    if not isinstance(v, decimal.Decimal):
        raise EncodeError(f"{path}: expected a Decimal, got {v!r}")
    if not v.is_finite():
        raise EncodeError(f"{path}: {v!r} is not a finite decimal")
    sign, digits, exponent = v.as_tuple()
    assert isinstance(exponent, int)  # finite
    coefficient = int("".join(map(str, digits)))
    shift = exponent + scale  # unscaled = coefficient * 10**shift
    if coefficient == 0:
        return 0
    if len(digits) + shift > precision:  # checked first: 10**shift may be huge
        raise EncodeError(f"{path}: {v!r} has more digits than the schema's precision {precision}")
    n: int
    if shift >= 0:
        n = coefficient * 10**shift
    else:  # past the coefficient's digits nothing is left but a remainder
        n, rest = divmod(coefficient, 10**-shift) if -shift <= len(digits) else (0, coefficient)
        if rest:
            raise EncodeError(f"{path}: {v!r} cannot be written with scale {scale} without rounding")
    return -n if sign else n


def _items_of(v: Any, path: str) -> Any:
    """``v`` as a sized sequence of array items. Text, bytes and mappings are iterable but are not
    arrays: written item by item they would give an array of characters or of keys."""
    if isinstance(v, (str, bytes, bytearray, memoryview, Mapping)):
        raise EncodeError(f"{path}: {_shown(v)} is not an array (give a list or tuple of items)")
    if hasattr(v, "__len__"):
        return v
    try:
        return list(v)  # a generator or another iterable: its items, in order
    except TypeError:
        raise EncodeError(f"{path}: {_shown(v)} is not an array (give a list or tuple of items)") from None


def _pairs_of(v: Any, path: str) -> list[Any]:
    """``v`` as a list of ``(key, value)`` pairs: a mapping's items, or pairs given as such."""
    if isinstance(v, Mapping):
        return list(v.items())
    bad = EncodeError(f"{path}: {_shown(v)} is not a map (give a dict or a list of (key, value) pairs)")
    if isinstance(v, (str, bytes, bytearray, memoryview)):
        raise bad
    try:
        pairs = list(v)
    except TypeError:
        raise bad from None
    if not all(isinstance(p, (tuple, list)) and len(p) == 2 for p in pairs):
        raise bad
    return pairs


def _shown(v: Any) -> str:
    text = repr(v)
    return f"{type(v).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def accepts(node: Schema, v: Any) -> bool:
    """Whether ``v`` is a Python value the row writer can write as ``node`` (picks union branches)."""
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
        if node.logical == "uuid" and isinstance(v, (str, uuid.UUID)):
            return True
        if node.logical == "duration" and (hasattr(v, "months") or _is_interval_struct(v)):
            return True  # pyarrow's MonthDayNano, or Spark's struct form of it
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
        return (
            isinstance(v, int)
            and not isinstance(v, bool)
            and -(2 ** (31 if t == "int" else 63)) <= v < 2 ** (31 if t == "int" else 63)
        )
    if t in ("float", "double"):
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "string":
        return isinstance(v, (str, uuid.UUID))
    if t == "bytes":
        return isinstance(v, (bytes, bytearray))
    return False


def _is_interval_struct(v: Any) -> bool:
    """Spark's form of a month_day_nano interval: ``{months, days, nanoseconds}``."""
    return isinstance(v, Mapping) and set(v) == {"months", "days", "nanoseconds"}
