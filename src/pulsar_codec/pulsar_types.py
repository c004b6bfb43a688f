"""Pulsar's schema model (SchemaType, SchemaInfo, EncodeData) and its primitive encodings.

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
import dataclasses
import datetime as _dt
import enum
import json
import math
import operator
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._kernels import _backend
from ._arrow import (
    as_binary_array,
    binary_chunks,
    bool_mask,
    validity_buffer,
    validity_of,
)
from .errors import EncodeError, ErrorCode, SchemaError, raise_for

__all__ = [
    "SchemaType",
    "KeyValueEncodingType",
    "SchemaInfo",
    "EncodeData",
    "NanoDateTime",
    "NanoTime",
    "CHARSET_PROPERTY",
    "primitive_schema_info",
    "external_schema_info",
    "encode_keyvalue_schema_info",
    "decode_keyvalue_schema_info",
    "decode_keyvalue_encoding_type",
    "arrow_type",
    "encode",
    "decode",
    "encode_array",
    "decode_array",
]

CHARSET_PROPERTY = "__charset"


# -- schema types -------------------------------------------------------------------------------


class SchemaType(enum.Enum):
    """Pulsar schema types: ``.value`` is the Java code, ``.wire`` the ``Schema.Type`` protobuf code.

    They differ for EXTERNAL (Java 21, wire 22), AUTO_CONSUME (Java -3, wire 21) and the other
    negative Java codes, which go on the wire as ``None`` (0), like Java's ``Commands.getSchemaType``.
    """

    NONE = (0, 0)
    STRING = (1, 1)
    JSON = (2, 2)
    PROTOBUF = (3, 3)
    AVRO = (4, 4)
    BOOLEAN = (5, 5)
    INT8 = (6, 6)
    INT16 = (7, 7)
    INT32 = (8, 8)
    INT64 = (9, 9)
    FLOAT = (10, 10)
    DOUBLE = (11, 11)
    DATE = (12, 12)
    TIME = (13, 13)
    TIMESTAMP = (14, 14)
    KEY_VALUE = (15, 15)
    INSTANT = (16, 16)
    LOCAL_DATE = (17, 17)
    LOCAL_TIME = (18, 18)
    LOCAL_DATE_TIME = (19, 19)
    PROTOBUF_NATIVE = (20, 20)
    EXTERNAL = (21, 22)
    BYTES = (-1, 0)
    AUTO = (-2, 0)
    AUTO_CONSUME = (-3, 21)
    AUTO_PUBLISH = (-4, 0)

    def __new__(cls, java: int, wire: int) -> SchemaType:
        member = object.__new__(cls)
        member._value_ = java
        member.wire = wire
        return member

    @classmethod
    def from_wire(cls, code: int) -> SchemaType:
        """The type for a wire ``Schema.Type`` code; 0 gives NONE (BYTES also travels as 0)."""
        try:
            return _BY_WIRE[int(code)]
        except KeyError:
            raise ValueError(f"unknown wire schema type {code}") from None

    @classmethod
    def from_name(cls, name: str) -> SchemaType:
        """Look up by name, case-insensitively, with or without underscores: ``"INT32"``,
        ``"key_value"``, ``"KeyValue"``, ``"LocalDateTime"``; the wire name ``"Bool"`` works too."""
        key = str(name).strip().upper().replace("_", "").replace("-", "")
        try:
            return _BY_NAME[key]
        except KeyError:
            raise ValueError(f"unknown schema type {name!r}") from None

    @classmethod
    def parse(cls, value: SchemaType | int | str) -> SchemaType:
        """A SchemaType from itself, a Java code (int) or a name (str)."""
        if isinstance(value, SchemaType):
            return value
        if isinstance(value, str):
            return cls.from_name(value)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return cls(int(value))
        raise TypeError(f"expected a SchemaType, a Java type code or a name, got {value!r}")

    @property
    def is_primitive(self) -> bool:
        """True for the types Java's ``SchemaType.isPrimitiveType`` lists (including BYTES and NONE)."""
        return self in _PRIMITIVES

    @property
    def is_struct(self) -> bool:
        """True for AVRO, JSON, PROTOBUF and PROTOBUF_NATIVE."""
        return self in (SchemaType.AVRO, SchemaType.JSON, SchemaType.PROTOBUF, SchemaType.PROTOBUF_NATIVE)


# wire codes 0-20 equal the Java codes; 21 and 22 are AUTO_CONSUME and EXTERNAL
_BY_WIRE = {**{t.value: t for t in SchemaType if 0 <= t.value <= 20}, 21: SchemaType.AUTO_CONSUME, 22: SchemaType.EXTERNAL}
_BY_NAME = {t.name.replace("_", ""): t for t in SchemaType}
_BY_NAME["BOOL"] = SchemaType.BOOLEAN
_PRIMITIVES = frozenset(
    SchemaType[n]
    for n in (
        "NONE", "STRING", "BOOLEAN", "INT8", "INT16", "INT32", "INT64", "FLOAT", "DOUBLE", "DATE", "TIME",
        "TIMESTAMP", "INSTANT", "LOCAL_DATE", "LOCAL_TIME", "LOCAL_DATE_TIME", "BYTES",
    )
)


class KeyValueEncodingType(enum.Enum):
    """Where a KeyValue schema puts the key: INLINE (in the payload) or SEPARATED (in the metadata)."""

    INLINE = "INLINE"
    SEPARATED = "SEPARATED"

    @classmethod
    def parse(cls, value: KeyValueEncodingType | str) -> KeyValueEncodingType:
        if isinstance(value, KeyValueEncodingType):
            return value
        try:
            return cls[str(value).strip().upper()]
        except KeyError:
            raise ValueError(f"unknown KeyValue encoding type {value!r}, expected INLINE or SEPARATED") from None


# -- SchemaInfo, EncodeData ---------------------------------------------------------------------


@dataclasses.dataclass
class SchemaInfo:
    """A Pulsar ``SchemaInfo``: name, type, schema data bytes and string properties.

    ``type`` accepts a SchemaType, a Java code or a name; ``schema`` accepts bytes or text (stored
    as UTF-8 bytes).
    """

    name: str
    type: SchemaType
    schema: bytes = b""
    properties: dict[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        self.name = "" if self.name is None else str(self.name)
        self.type = SchemaType.parse(self.type)
        if self.schema is None:
            self.schema = b""
        elif isinstance(self.schema, str):
            self.schema = self.schema.encode("utf-8")
        else:
            self.schema = bytes(self.schema)
        self.properties = {str(k): str(v) for k, v in dict(self.properties or {}).items()}

    @property
    def schema_definition(self) -> str:
        """The schema data as text (UTF-8), as Java's ``getSchemaDefinition``."""
        return self.schema.decode("utf-8", errors="replace")


@dataclasses.dataclass(frozen=True)
class EncodeData:
    """What a PIP-420 schema's ``encode(topic, value)`` returns: the payload and an optional schema id."""

    data: bytes
    schema_id: bytes | None = None

    def has_schema_id(self) -> bool:
        """True when the schema id is present and non-empty (Java ``EncodeData.hasSchemaId``)."""
        return self.is_valid_schema_id(self.schema_id)

    @staticmethod
    def is_valid_schema_id(schema_id: bytes | None) -> bool:
        """Java ``EncodeData.isValidSchemaId``: not None and not empty."""
        return schema_id is not None and len(schema_id) > 0


_PRIMITIVE_NAMES = {
    SchemaType.NONE: "Bytes",
    SchemaType.BYTES: "Bytes",
    SchemaType.STRING: "String",
    SchemaType.BOOLEAN: "Boolean",
    SchemaType.INT8: "INT8",
    SchemaType.INT16: "INT16",
    SchemaType.INT32: "INT32",
    SchemaType.INT64: "INT64",
    SchemaType.FLOAT: "Float",
    SchemaType.DOUBLE: "Double",
    SchemaType.DATE: "Date",
    SchemaType.TIME: "Time",
    SchemaType.TIMESTAMP: "Timestamp",
    SchemaType.INSTANT: "Instant",
    SchemaType.LOCAL_DATE: "LocalDate",
    SchemaType.LOCAL_TIME: "LocalTime",
    SchemaType.LOCAL_DATE_TIME: "LocalDateTime",
}


def primitive_schema_info(schema_type: SchemaType | int | str, *, charset: str | None = None) -> SchemaInfo:
    """The SchemaInfo a Java client registers for a primitive schema (empty schema data, Java's name).

    ``charset`` (STRING only) adds the ``__charset`` property, as ``new StringSchema(charset)`` does.
    """
    st = SchemaType.parse(schema_type)
    if st not in _PRIMITIVE_NAMES:
        raise SchemaError(f"{st.name} is not a primitive schema type")
    props = {}
    if charset is not None:
        if st is not SchemaType.STRING:
            raise SchemaError("only STRING schemas have a charset")
        props[CHARSET_PROPERTY] = charset
    st = SchemaType.BYTES if st is SchemaType.NONE else st
    return SchemaInfo(_PRIMITIVE_NAMES[st], st, b"", props)


def external_schema_info(name: str = "") -> SchemaInfo:
    """The SchemaInfo of a PIP-420 external schema: type EXTERNAL and empty schema data."""
    return SchemaInfo(name, SchemaType.EXTERNAL, b"", {})


# -- KeyValue SchemaInfo (KeyValueSchemaInfo.java) ----------------------------------------------

_KV_ENCODING = "kv.encoding.type"
_GSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "=": "\\u003d", "'": "\\u0027",
                 "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _gson_properties(properties: Mapping[str, str]) -> str:
    """Properties as Pulsar's ``SchemaUtils.serializeSchemaProperties`` writes them: a compact JSON
    object with sorted keys and Gson's default HTML-safe escapes, so the bytes match Java's."""
    text = json.dumps(dict(sorted(properties.items())), separators=(",", ":"), ensure_ascii=False)
    # these characters can only occur inside JSON strings, so replacing them is safe
    for ch, esc in _GSON_ESCAPES.items():
        text = text.replace(ch, esc)
    return text


def _parse_properties(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise SchemaError(f"sub-schema properties are not a JSON object: {exc}") from None
    if not isinstance(obj, dict):
        raise SchemaError("sub-schema properties are not a JSON object")
    out = {}
    for k, v in obj.items():
        if v is None:
            continue
        out[k] = v if isinstance(v, str) else json.dumps(v)
    return out


def encode_keyvalue_schema_info(
    key: SchemaInfo,
    value: SchemaInfo,
    encoding: KeyValueEncodingType | str = KeyValueEncodingType.INLINE,
    *,
    name: str = "KeyValue",
) -> SchemaInfo:
    """The KEY_VALUE SchemaInfo Java's ``KeyValueSchemaInfo.encodeKeyValueSchemaInfo`` builds.

    Schema data is the INLINE layout of the two sub-schemas' schema bytes; properties carry
    ``key.schema.name`` / ``.type`` / ``.properties`` (JSON text), the same for ``value.``, and
    ``kv.encoding.type``.
    """
    from .keyvalue import encode_inline  # keyvalue imports this module

    encoding = KeyValueEncodingType.parse(encoding)
    props = {}
    for prefix, info in (("key", key), ("value", value)):
        props[f"{prefix}.schema.name"] = info.name
        props[f"{prefix}.schema.type"] = info.type.name
        props[f"{prefix}.schema.properties"] = _gson_properties(info.properties)
    props[_KV_ENCODING] = encoding.value
    return SchemaInfo(name, SchemaType.KEY_VALUE, encode_inline(key.schema, value.schema), props)


def decode_keyvalue_schema_info(info: SchemaInfo) -> tuple[SchemaInfo, SchemaInfo]:
    """The key and value SchemaInfos inside a KEY_VALUE SchemaInfo.

    A missing sub-schema name reads as ``""``, a missing type as BYTES, missing properties as
    ``{}``; a null (-1) sub-schema reads as empty schema data.

    Raises
    ------
    SchemaError
        ``info`` is not KEY_VALUE, or a sub-schema type or properties text is invalid.
    KeyValueFormatError
        The schema data is not a valid INLINE KeyValue layout.
    """
    from .keyvalue import decode_inline

    if info.type is not SchemaType.KEY_VALUE:
        raise SchemaError(f"not a KeyValue schema: {info.type.name}")
    key_bytes, value_bytes = decode_inline(info.schema)
    out = []
    for prefix, data in (("key", key_bytes), ("value", value_bytes)):
        props = info.properties
        type_name = props.get(f"{prefix}.schema.type") or SchemaType.BYTES.name
        try:
            st = SchemaType[type_name]
        except KeyError:
            raise SchemaError(f"unknown {prefix} schema type {type_name!r}") from None
        out.append(
            SchemaInfo(
                props.get(f"{prefix}.schema.name", ""),
                st,
                data or b"",
                _parse_properties(props.get(f"{prefix}.schema.properties")),
            )
        )
    return out[0], out[1]


def decode_keyvalue_encoding_type(info: SchemaInfo) -> KeyValueEncodingType:
    """``kv.encoding.type`` of a KEY_VALUE SchemaInfo; missing or empty means INLINE."""
    if info.type is not SchemaType.KEY_VALUE:
        raise SchemaError(f"not a KeyValue schema: {info.type.name}")
    value = info.properties.get(_KV_ENCODING)
    if not value:
        return KeyValueEncodingType.INLINE
    try:
        return KeyValueEncodingType[value]
    except KeyError:
        raise SchemaError(f"unknown kv.encoding.type {value!r}") from None


# -- nanosecond-keeping datetime / time ---------------------------------------------------------


class _Nanoseconds:
    """What :class:`NanoDateTime` and :class:`NanoTime` share: the ``nanosecond`` below the
    microseconds (0-999), and equality, hashing and ordering that take it into account.
    ``_base`` is the standard class extended (``datetime`` or ``time``)."""

    __slots__ = ()
    _base: type

    def __new__(cls, *args: Any, nanosecond: int = 0, **kwargs: Any):
        self = super().__new__(cls, *args, **kwargs)
        if not 0 <= nanosecond <= 999:
            raise ValueError(f"nanosecond must be in 0..999, got {nanosecond}")
        self._ns = int(nanosecond)
        return self

    @property
    def nanosecond(self) -> int:
        return getattr(self, "_ns", 0)

    def __repr__(self) -> str:
        text = super().__repr__()
        return text if not self.nanosecond else f"{text[:-1]}, nanosecond={self.nanosecond})"

    def _key(self, other: Any):
        if not isinstance(other, self._base):
            return NotImplemented
        return getattr(other, "nanosecond", 0)

    def __eq__(self, other: object) -> bool:
        ns = self._key(other)
        if ns is NotImplemented:
            return NotImplemented
        return self._base.__eq__(self, other) is True and self.nanosecond == ns

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        base = self._base.__hash__(self)
        return base if not self.nanosecond else hash((base, self.nanosecond))

    def _compare(self, other: Any, op) -> bool:
        ns = self._key(other)
        if ns is NotImplemented:
            return NotImplemented
        if self._base.__eq__(self, other) is True:
            return op(self.nanosecond, ns)
        return op(self._plain(), other._plain() if isinstance(other, _Nanoseconds) else other)

    def __lt__(self, other: Any) -> bool:
        return self._compare(other, operator.lt)

    def __le__(self, other: Any) -> bool:
        return self._compare(other, operator.le)

    def __gt__(self, other: Any) -> bool:
        return self._compare(other, operator.gt)

    def __ge__(self, other: Any) -> bool:
        return self._compare(other, operator.ge)


class NanoDateTime(_Nanoseconds, _dt.datetime):
    """A ``datetime`` that also keeps the nanoseconds below its microseconds (0-999).

    ``nanosecond`` is read by :func:`encode` (``pandas.Timestamp`` has the same attribute).
    Equality, hashing and ordering take it into account; arithmetic returns values without it.
    """

    __slots__ = ("_ns",)
    _base = _dt.datetime

    def _plain(self) -> _dt.datetime:
        return _dt.datetime(
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.microsecond,
            tzinfo=self.tzinfo, fold=self.fold,
        )

    def __reduce_ex__(self, protocol):  # datetime defines __reduce_ex__, which pickle prefers
        return (_rebuild_nano_datetime, (self._plain(), self.nanosecond))

    def isoformat(self, sep: str = "T", timespec: str = "auto") -> str:
        if not self.nanosecond or timespec not in ("auto", "nanoseconds"):
            return super().isoformat(sep, timespec if timespec != "nanoseconds" else "microseconds")
        text = super().isoformat(sep, "microseconds")
        cut = len(text) - (len(text) - text.rindex(".") - 7)
        return f"{text[:cut]}{self.nanosecond:03d}{text[cut:]}"


def _rebuild_nano_datetime(plain: _dt.datetime, nanosecond: int) -> NanoDateTime:
    return NanoDateTime(
        plain.year, plain.month, plain.day, plain.hour, plain.minute, plain.second, plain.microsecond,
        tzinfo=plain.tzinfo, fold=plain.fold, nanosecond=nanosecond,
    )


class NanoTime(_Nanoseconds, _dt.time):
    """A ``time`` that also keeps the nanoseconds below its microseconds (0-999); see :class:`NanoDateTime`."""

    __slots__ = ("_ns",)
    _base = _dt.time

    def _plain(self) -> _dt.time:
        return _dt.time(self.hour, self.minute, self.second, self.microsecond, tzinfo=self.tzinfo, fold=self.fold)

    def __reduce_ex__(self, protocol):
        return (_rebuild_nano_time, (self._plain(), self.nanosecond))

    def isoformat(self, timespec: str = "auto") -> str:
        if not self.nanosecond or timespec not in ("auto", "nanoseconds"):
            return super().isoformat(timespec if timespec != "nanoseconds" else "microseconds")
        text = super().isoformat("microseconds")
        cut = text.rindex(".") + 7
        return f"{text[:cut]}{self.nanosecond:03d}{text[cut:]}"

    __str__ = isoformat


def _rebuild_nano_time(plain: _dt.time, nanosecond: int) -> NanoTime:
    return NanoTime(plain.hour, plain.minute, plain.second, plain.microsecond, tzinfo=plain.tzinfo,
                    fold=plain.fold, nanosecond=nanosecond)


# -- primitive codecs: shared tables ---------------------------------------------------------------

_UTC = _dt.UTC
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_UTC)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_MS_PER_DAY = 86_400_000
_NS_PER_DAY = 86_400_000_000_000
_NS_PER_S = 1_000_000_000
_I64 = (-(2**63), 2**63 - 1)
_TIME_OF_DAY = f"a time of day (0 to {_NS_PER_DAY - 1} ns)"

_k = _backend.default().primitives  # the KIND_* numbers are identical in both twins
_KIND = {
    SchemaType.BOOLEAN: _k.KIND_BOOLEAN,
    SchemaType.INT8: _k.KIND_INT8,
    SchemaType.INT16: _k.KIND_INT16,
    SchemaType.INT32: _k.KIND_INT32,
    SchemaType.INT64: _k.KIND_INT64,
    SchemaType.FLOAT: _k.KIND_FLOAT,
    SchemaType.DOUBLE: _k.KIND_DOUBLE,
    SchemaType.DATE: _k.KIND_INT64,
    SchemaType.TIMESTAMP: _k.KIND_INT64,
    SchemaType.TIME: _k.KIND_TIME,
    SchemaType.INSTANT: _k.KIND_INSTANT,
    SchemaType.LOCAL_DATE: _k.KIND_LOCAL_DATE,
    SchemaType.LOCAL_TIME: _k.KIND_LOCAL_TIME,
    SchemaType.LOCAL_DATE_TIME: _k.KIND_LOCAL_DATE_TIME,
}
_WIDTH = {st: _k.WIDTHS[kind] for st, kind in _KIND.items()}
_DTYPE = {st: np.dtype(_k.DTYPES[kind]) for st, kind in _KIND.items()}
del _k

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


def arrow_type(schema_type: SchemaType | int | str) -> pa.DataType:
    """The Arrow type :func:`decode_array` returns for a primitive schema type."""
    st = SchemaType.parse(schema_type)
    try:
        return _ARROW[st]
    except KeyError:
        raise SchemaError(f"{st.name} is not a primitive schema type") from None


def _primitive(schema_type: Any) -> SchemaType:
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
    except LookupError:
        raise SchemaError(f"unknown charset {name!r} in the {CHARSET_PROPERTY} schema property") from None
    return None if info.name == "utf-8" else info.name


def _range_target(st: SchemaType, offset: int, bulk: bool) -> str:
    if st is SchemaType.LOCAL_TIME or (st is SchemaType.LOCAL_DATE_TIME and offset == 8):
        return _TIME_OF_DAY
    if not bulk:
        return "datetime.date" if st is SchemaType.LOCAL_DATE else "datetime.datetime"
    return str(_ARROW[st])


def _raise_error(st: SchemaType, error, row_base: int, bulk: bool, charset: str = "UTF-8"):
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


# -- per value: decode ------------------------------------------------------------------------------

_unpack = {1: struct.Struct(">b").unpack, 2: struct.Struct(">h").unpack, 4: struct.Struct(">i").unpack,
           8: struct.Struct(">q").unpack}
_f32 = struct.Struct(">f")
_f64 = struct.Struct(">d")
_instant = struct.Struct(">qi")
_two_longs = struct.Struct(">qq")


def _out_of_range(st: SchemaType, offset: int, value: int):
    _raise_error(st, (ErrorCode.PRIM_OUT_OF_RANGE, 0, offset, value), 0, bulk=False)


def _millis_to_datetime(st: SchemaType, ms: int) -> _dt.datetime:
    try:
        return _EPOCH + _dt.timedelta(milliseconds=ms)
    except OverflowError:
        _out_of_range(st, 0, ms)


def _ns_to_datetime(st: SchemaType, ns: int, epoch: _dt.datetime, offset: int, detail: int) -> NanoDateTime:
    us, rest = divmod(ns, 1000)
    try:
        plain = epoch + _dt.timedelta(microseconds=us)
    except OverflowError:
        _out_of_range(st, offset, detail)
    return NanoDateTime(
        plain.year, plain.month, plain.day, plain.hour, plain.minute, plain.second, plain.microsecond,
        tzinfo=plain.tzinfo, nanosecond=rest,
    )


def _nanos_to_time(nod: int) -> NanoTime:
    us, rest = divmod(nod, 1000)
    s, us = divmod(us, 1_000_000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return NanoTime(h, m, s, us, nanosecond=rest)


def decode(schema_type: SchemaType | int | str, data: bytes | None, *, properties: Mapping[str, str] | None = None):
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
    if st in (SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64):
        return _unpack[width](raw)[0]
    if st is SchemaType.FLOAT:
        return _f32.unpack(raw)[0]
    if st is SchemaType.DOUBLE:
        return _f64.unpack(raw)[0]
    if st is SchemaType.INSTANT:
        seconds, nanos = _instant.unpack(raw)
        return _ns_to_datetime(st, seconds * _NS_PER_S + nanos, _EPOCH, 0, seconds)
    if st is SchemaType.LOCAL_DATE_TIME:
        day, nod = _two_longs.unpack(raw)
        if not 0 <= nod < _NS_PER_DAY:
            _out_of_range(st, 8, nod)
        return _ns_to_datetime(st, day * _NS_PER_DAY + nod, _EPOCH_NAIVE, 0, day)
    value = _unpack[8](raw)[0]
    if st in (SchemaType.DATE, SchemaType.TIMESTAMP):
        return _millis_to_datetime(st, value)
    if st is SchemaType.TIME:
        ms = value % _MS_PER_DAY
        return _dt.time(ms // 3_600_000, ms // 60_000 % 60, ms // 1000 % 60, ms % 1000 * 1000)
    if st is SchemaType.LOCAL_DATE:
        try:
            return _dt.date.fromordinal(_EPOCH_ORDINAL + value)
        except (ValueError, OverflowError):
            _out_of_range(st, 0, value)
    # LOCAL_TIME
    if not 0 <= value < _NS_PER_DAY:
        _out_of_range(st, 0, value)
    return _nanos_to_time(value)


# -- per value: encode ------------------------------------------------------------------------------


def _int_in(value: Any, lo: int, hi: int, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise EncodeError(f"{what} takes an int, got {type(value).__name__}")
    value = int(value)
    if not lo <= value <= hi:
        raise EncodeError(f"{value} is out of range for {what} ({lo} to {hi})")
    return value


def _datetime_ns(value: _dt.datetime, *, local: bool) -> int:
    """Nanoseconds since the epoch (UTC for aware values, naive taken as UTC; wall clock if local)."""
    if local or value.tzinfo is None:
        delta = value.replace(tzinfo=None) - _EPOCH_NAIVE
    else:
        delta = value - _EPOCH
    us = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return us * 1000 + int(getattr(value, "nanosecond", 0))


def _time_ns(value: _dt.time) -> int:
    us = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    return us * 1000 + int(getattr(value, "nanosecond", 0))


def _bad_type(st: SchemaType, value: Any, expected: str):
    raise EncodeError(f"{st.name} takes {expected}, got {type(value).__name__}")


def encode(schema_type: SchemaType | int | str, value: Any, *, properties: Mapping[str, str] | None = None):
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
    if st in (SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64):
        bits = 8 * _WIDTH[st]
        v = _int_in(value, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1, st.name)
        return v.to_bytes(_WIDTH[st], "big", signed=True)
    if st in (SchemaType.FLOAT, SchemaType.DOUBLE):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            _bad_type(st, value, "a float")
        if st is SchemaType.DOUBLE:
            f = float(value)
            return b"\x7f\xf8\x00\x00\x00\x00\x00\x00" if math.isnan(f) else _f64.pack(f)
        if isinstance(value, np.float32):
            return int(value.view(np.uint32)).to_bytes(4, "big")  # bit exact, NaN payload included
        try:
            return _f32.pack(float(value))
        except OverflowError:
            raise EncodeError(f"{value!r} is out of range for FLOAT") from None
    if st in (SchemaType.DATE, SchemaType.TIMESTAMP):
        if isinstance(value, _dt.datetime):
            ms = _datetime_ns(value, local=False) // 1_000_000
        elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            ms = int(value)
        else:
            _bad_type(st, value, "a datetime or int milliseconds")
        return _int_in(ms, *_I64, st.name).to_bytes(8, "big", signed=True)
    if st is SchemaType.TIME:
        if isinstance(value, _dt.time):
            ms = _time_ns(value) // 1_000_000
            offset = value.utcoffset()
            if offset is not None:
                ms = (ms - offset // _dt.timedelta(milliseconds=1)) % _MS_PER_DAY
        elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            ms = int(value)
        else:
            _bad_type(st, value, "a time or int milliseconds")
        return _int_in(ms, *_I64, st.name).to_bytes(8, "big", signed=True)
    if st is SchemaType.INSTANT:
        if isinstance(value, _dt.datetime):
            ns = _datetime_ns(value, local=False)
        elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            ns = int(value)
        else:
            _bad_type(st, value, "a datetime or int nanoseconds")
        seconds, nanos = divmod(ns, _NS_PER_S)
        return _instant.pack(_int_in(seconds, *_I64, st.name), nanos)
    if st is SchemaType.LOCAL_DATE:
        if isinstance(value, _dt.datetime):
            _bad_type(st, value, "a date (not a datetime) or int days")
        if isinstance(value, _dt.date):
            day = value.toordinal() - _EPOCH_ORDINAL
        elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            day = int(value)
        else:
            _bad_type(st, value, "a date or int days")
        return _int_in(day, *_I64, st.name).to_bytes(8, "big", signed=True)
    if st is SchemaType.LOCAL_TIME:
        if isinstance(value, _dt.time):
            if value.tzinfo is not None:
                raise EncodeError("LOCAL_TIME takes a naive time (it has no zone)")
            nod = _time_ns(value)
        elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            nod = _int_in(value, 0, _NS_PER_DAY - 1, "LOCAL_TIME nanoseconds of the day")
        else:
            _bad_type(st, value, "a time or int nanoseconds of the day")
        return nod.to_bytes(8, "big", signed=True)
    # LOCAL_DATE_TIME
    if isinstance(value, _dt.datetime):
        ns = _datetime_ns(value, local=True)
    elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        ns = int(value)
    else:
        _bad_type(st, value, "a datetime or int nanoseconds")
    day, nod = divmod(ns, _NS_PER_DAY)
    return _two_longs.pack(_int_in(day, *_I64, st.name), nod)


# -- bulk decode ------------------------------------------------------------------------------------


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
        return _as_plain_binary(as_binary_array(payloads))
    if st is SchemaType.STRING:
        return _decode_strings(payloads, _charset(properties), st)
    kernels = _backend.active().primitives
    kind = _KIND[st]
    chunks, total = binary_chunks(payloads)
    parts = []
    for chunk in chunks:
        error, values = kernels.decode_fixed(chunk.data, chunk.offsets, chunk.validity, kind)
        if error is not None:
            _raise_error(st, error, chunk.row, True)
        parts.append(values)
    mask = bool_mask(chunks, total)
    typ = _ARROW[st]
    dtype = _DTYPE[st]
    values = np.concatenate(parts) if len(parts) > 1 else (parts[0] if parts else np.empty(0, dtype=dtype))
    null_count = 0 if mask is None else int(total - np.count_nonzero(mask))
    if st is SchemaType.BOOLEAN:
        data = pa.py_buffer(np.packbits(values.astype(bool), bitorder="little"))
    else:
        data = pa.py_buffer(values)
    return pa.Array.from_buffers(typ, total, [validity_buffer(mask), data], null_count=null_count)


def _as_plain_binary(arr: pa.Array) -> pa.Array:
    if arr.type in (pa.string(), pa.large_string()):
        arr = arr.cast(pa.binary() if arr.type == pa.string() else pa.large_binary())
    if arr.type == pa.large_binary():
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)
        if len(arr) == 0 or int(offsets[arr.offset + len(arr)]) - int(offsets[arr.offset]) <= 2**31 - 1:
            arr = arr.cast(pa.binary())
    return arr


def _decode_strings(payloads: Any, charset: str | None, st: SchemaType) -> pa.Array:
    if charset is not None:
        arr = as_binary_array(payloads)
        out = []
        for i, item in enumerate(arr.to_pylist()):
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
    size = sum(c.offsets[-1] for c in chunks)
    return combined.cast(pa.string()) if size <= 2**31 - 1 else combined


# -- bulk encode ------------------------------------------------------------------------------------

_UNIT_NS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _arrow_input(values: Any) -> pa.Array:
    arr = values
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], arr.type)
    return arr


def _ints(arr: pa.Array, valid: np.ndarray) -> np.ndarray:
    """int64 numbers of an integer / temporal array (nulls as 0)."""
    t = arr.type
    if pa.types.is_timestamp(t) or pa.types.is_date64(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        arr = arr.cast(pa.int64())
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        arr = arr.cast(pa.int32())
    if pa.types.is_uint64(arr.type):
        raw = arr.fill_null(0).to_numpy(zero_copy_only=False)
        too_big = (raw > np.uint64(2**63 - 1)) & valid
        if too_big.any():
            i = int(np.flatnonzero(too_big)[0])
            raise EncodeError(f"value {int(raw[i])} of row {i} does not fit 64 bits", index=i)
        return raw.astype(np.int64)
    return np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)


def _rescale(v: np.ndarray, from_ns: int, to_ns: int, valid: np.ndarray, what: str) -> np.ndarray:
    """Change unit (floor towards minus infinity when getting coarser; overflow is an error)."""
    if from_ns == to_ns:
        return v
    if from_ns < to_ns:
        return np.floor_divide(v, to_ns // from_ns)
    factor = from_ns // to_ns
    limit = (2**63 - 1) // factor
    bad = ((v > limit) | (v < -limit)) & valid
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise EncodeError(f"{what} value of row {i} overflows 64-bit nanoseconds", index=i)
    return v * factor


def _require(arr: pa.Array, ok: bool, st: SchemaType, expected: str) -> None:
    if not ok:
        raise EncodeError(f"{st.name} cannot be encoded from Arrow type {arr.type}; expected {expected}")


def _fixed_output(matrix: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    n, width = matrix.shape
    if valid is None:
        data = np.ascontiguousarray(matrix).reshape(-1)
        offsets = np.arange(n + 1, dtype=np.int64) * width
    else:
        data = np.ascontiguousarray(matrix[valid]).reshape(-1)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(valid.astype(np.int64) * width, out=offsets[1:])
    large = int(offsets[-1]) > 2**31 - 1
    null_count = 0 if valid is None else int(n - np.count_nonzero(valid))
    return pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(),
        n,
        [validity_buffer(valid), pa.py_buffer(offsets if large else offsets.astype(np.int32)), pa.py_buffer(data)],
        null_count=null_count,
    )


def _be(values: np.ndarray, dtype: str) -> np.ndarray:
    out = values.astype(dtype)
    return out.view(np.uint8).reshape(len(values), out.dtype.itemsize)


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
        out = []
        for i, v in enumerate(values):
            try:
                out.append(encode(st, v, properties=properties))
            except EncodeError as exc:
                raise EncodeError(f"row {i}: {exc}", index=i) from None
        return pa.array(out, pa.binary())
    arr = _arrow_input(values)
    t = arr.type
    n = len(arr)
    valid_or_none = validity_of(arr)
    valid = np.ones(n, dtype=bool) if valid_or_none is None else valid_or_none
    if st in (SchemaType.BYTES, SchemaType.NONE):
        _require(arr, pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
                 or pa.types.is_fixed_size_binary(t), st, "binary")
        return _as_plain_binary(as_binary_array(arr))
    if st is SchemaType.STRING:
        _require(arr, pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t), st, "string")
        charset = _charset(properties)
        if charset is None:
            return _as_plain_binary(as_binary_array(arr))
        return encode_array(st, arr.to_pylist(), properties=properties)
    if st is SchemaType.BOOLEAN:
        _require(arr, pa.types.is_boolean(t), st, "bool")
        bits = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint8)
        return _fixed_output(bits.reshape(n, 1), valid_or_none)
    if st in (SchemaType.INT8, SchemaType.INT16, SchemaType.INT32, SchemaType.INT64):
        _require(arr, pa.types.is_integer(t), st, "an integer type")
        v = _ints(arr, valid)
        bits = 8 * _WIDTH[st]
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        bad = ((v < lo) | (v > hi)) & valid
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise EncodeError(f"{int(v[i])} of row {i} is out of range for {st.name} ({lo} to {hi})", index=i)
        return _fixed_output(_be(v, f">i{_WIDTH[st]}"), valid_or_none)
    if st in (SchemaType.FLOAT, SchemaType.DOUBLE):
        _require(arr, pa.types.is_floating(t) or pa.types.is_integer(t), st, "a numeric type")
        if st is SchemaType.FLOAT:
            if t == pa.float32():
                f = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float32)
            else:
                wide = np.asarray(arr.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False))
                with np.errstate(over="ignore"):
                    f = wide.astype(np.float32)
                bad = np.isinf(f) & np.isfinite(wide) & valid
                if bad.any():
                    i = int(np.flatnonzero(bad)[0])
                    raise EncodeError(f"{wide[i]!r} of row {i} is out of range for FLOAT", index=i)
            return _fixed_output(_be(f.view(np.uint32), ">u4"), valid_or_none)
        d = np.asarray(arr.cast(pa.float64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64)
        bits64 = d.view(np.uint64).copy()
        bits64[np.isnan(d)] = np.uint64(0x7FF8000000000000)
        return _fixed_output(_be(bits64, ">u8"), valid_or_none)
    if st in (SchemaType.DATE, SchemaType.TIMESTAMP):
        if pa.types.is_timestamp(t):
            ms = _rescale(_ints(arr, valid), _UNIT_NS[t.unit], _UNIT_NS["ms"], valid, st.name)
        elif pa.types.is_date32(t):
            ms = _rescale(_ints(arr, valid), _MS_PER_DAY, 1, valid, st.name)
        elif pa.types.is_date64(t) or pa.types.is_integer(t):
            ms = _ints(arr, valid)
        else:
            _require(arr, False, st, "timestamp, date or int64 milliseconds")
        return _fixed_output(_be(ms, ">i8"), valid_or_none)
    if st is SchemaType.TIME:
        if pa.types.is_time32(t) or pa.types.is_time64(t):
            ms = _rescale(_ints(arr, valid), _UNIT_NS[t.unit], _UNIT_NS["ms"], valid, st.name)
        elif pa.types.is_integer(t):
            ms = _ints(arr, valid)
        else:
            _require(arr, False, st, "time32/time64 or int64 milliseconds")
        return _fixed_output(_be(ms, ">i8"), valid_or_none)
    if st is SchemaType.INSTANT:
        if pa.types.is_timestamp(t):
            ns = _rescale(_ints(arr, valid), _UNIT_NS[t.unit], 1, valid, st.name)
        elif pa.types.is_integer(t):
            ns = _ints(arr, valid)
        else:
            _require(arr, False, st, "timestamp or int64 nanoseconds")
        seconds, nanos = np.divmod(ns, _NS_PER_S)
        matrix = np.empty((n, 12), dtype=np.uint8)
        matrix[:, :8] = _be(seconds, ">i8")
        matrix[:, 8:] = _be(nanos, ">i4")
        return _fixed_output(matrix, valid_or_none)
    if st is SchemaType.LOCAL_DATE:
        if pa.types.is_date32(t) or pa.types.is_integer(t):
            days = _ints(arr, valid)
        elif pa.types.is_date64(t):
            days = np.floor_divide(_ints(arr, valid), _MS_PER_DAY)
        else:
            _require(arr, False, st, "date32, date64 or int days")
        return _fixed_output(_be(days, ">i8"), valid_or_none)
    if st is SchemaType.LOCAL_TIME:
        if pa.types.is_time32(t) or pa.types.is_time64(t):
            nod = _rescale(_ints(arr, valid), _UNIT_NS[t.unit], 1, valid, st.name)
        elif pa.types.is_integer(t):
            nod = _ints(arr, valid)
        else:
            _require(arr, False, st, "time32/time64 or int64 nanoseconds of the day")
        bad = ((nod < 0) | (nod >= _NS_PER_DAY)) & valid
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise EncodeError(f"{int(nod[i])} of row {i} is not a nanosecond of the day", index=i)
        return _fixed_output(_be(nod, ">i8"), valid_or_none)
    # LOCAL_DATE_TIME
    if pa.types.is_timestamp(t):
        if t.tz is not None:
            arr = pc.local_timestamp(arr)  # the wall-clock time in the value's zone
        ns = _rescale(_ints(arr, valid), _UNIT_NS[t.unit], 1, valid, st.name)
    elif pa.types.is_integer(t):
        ns = _ints(arr, valid)
    else:
        _require(arr, False, st, "timestamp or int64 nanoseconds")
    days, nod = np.divmod(ns, _NS_PER_DAY)
    matrix = np.empty((n, 16), dtype=np.uint8)
    matrix[:, :8] = _be(days, ">i8")
    matrix[:, 8:] = _be(nod, ">i8")
    return _fixed_output(matrix, valid_or_none)
