"""Pulsar's schema model: SchemaType, SchemaInfo, EncodeData and the KeyValue SchemaInfo layout.

These mirror the Java client's ``SchemaType``, ``SchemaInfo`` and PIP-420's ``EncodeData``, so a
SchemaInfo built here has the bytes and properties a Java client registers. Nothing here needs
``pulsar-client``. The codecs of the primitive types live in :mod:`pulsar_codec.primitives`; both
are re-exported together as :mod:`pulsar_codec.pulsar_types`.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import numbers
from collections.abc import Mapping

from ..errors import SchemaError
from ..keyvalue import KeyValueEncodingType, decode_inline, encode_inline

__all__ = [
    "SchemaType",
    "KeyValueEncodingType",
    "SchemaInfo",
    "EncodeData",
    "CHARSET_PROPERTY",
    "primitive_schema_info",
    "external_schema_info",
    "encode_keyvalue_schema_info",
    "decode_keyvalue_schema_info",
    "decode_keyvalue_encoding_type",
]

#: The SchemaInfo property naming a STRING schema's charset (Java ``StringSchema``); UTF-8 without it.
CHARSET_PROPERTY = "__charset"


# -- schema types -------------------------------------------------------------------------------


class SchemaType(enum.Enum):
    """Pulsar schema types: ``.value`` is the Java code, ``.wire`` the ``Schema.Type`` protobuf code.

    They differ for EXTERNAL (Java 21, wire 22), AUTO_CONSUME (Java -3, wire 21) and the other
    negative Java codes, which go on the wire as ``None`` (0), like Java's ``Commands.getSchemaType``.
    """

    wire: int

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
        """Look up by name, case-insensitively, with or without underscores.

        ``"INT32"``, ``"key_value"``, ``"KeyValue"`` and ``"LocalDateTime"`` all work, and so does
        the wire name ``"Bool"``.
        """
        key = str(name).strip().upper().replace("_", "").replace("-", "")
        try:
            return _BY_NAME[key]
        except KeyError:
            raise ValueError(f"unknown schema type {name!r}") from None

    @classmethod
    def parse(cls, value: SchemaType | int | str) -> SchemaType:
        """A SchemaType from itself, a Java code (an int, numpy's included) or a name (str)."""
        if isinstance(value, SchemaType):
            return value
        if isinstance(value, str):
            return cls.from_name(value)
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
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
_BY_WIRE = {
    **{t.value: t for t in SchemaType if 0 <= t.value <= 20},
    21: SchemaType.AUTO_CONSUME,
    22: SchemaType.EXTERNAL,
}
_BY_NAME = {t.name.replace("_", ""): t for t in SchemaType}
_BY_NAME["BOOL"] = SchemaType.BOOLEAN
# Java's name for the SchemaInfo of each primitive schema (``BytesSchema`` registers "Bytes", ...)
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
_PRIMITIVES = frozenset(_PRIMITIVE_NAMES)


# -- SchemaInfo, EncodeData ---------------------------------------------------------------------


@dataclasses.dataclass(init=False)
class SchemaInfo:
    """A Pulsar ``SchemaInfo``: name, type, schema data bytes and string properties.

    Parameters
    ----------
    name : str or None
        None reads as ``""``.
    type : SchemaType, Java code or name
    schema : bytes-like, str or None
        The schema data; text is stored as UTF-8, None as ``b""``.
    properties : mapping, optional
        Keys and values are stored as ``str``.
    """

    name: str
    type: SchemaType
    schema: bytes
    properties: dict[str, str]

    def __init__(
        self,
        name: str | None,
        type: SchemaType | int | str,
        schema: bytes | bytearray | memoryview | str | None = b"",
        properties: Mapping[str, object] | None = None,
    ) -> None:
        self.name = "" if name is None else str(name)
        self.type = SchemaType.parse(type)
        if schema is None:
            self.schema = b""
        elif isinstance(schema, str):
            self.schema = schema.encode("utf-8")
        else:
            self.schema = bytes(schema)
        self.properties = {str(k): str(v) for k, v in dict(properties or {}).items()}

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


def primitive_schema_info(schema_type: SchemaType | int | str, *, charset: str | None = None) -> SchemaInfo:
    """The SchemaInfo a Java client registers for a primitive schema (empty schema data, Java's name).

    ``charset`` (STRING only) adds the ``__charset`` property, as ``new StringSchema(charset)`` does.

    Raises
    ------
    SchemaError
        Not a primitive type, or a charset for a type other than STRING.
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


# -- KeyValue SchemaInfo (Java's KeyValueSchemaInfo) ----------------------------------------------

_KV_ENCODING = "kv.encoding.type"
# Gson's default HTML-safe escapes, which Java applies when it writes sub-schema properties
_GSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "=": "\\u003d",
    "'": "\\u0027",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def _gson_properties(properties: Mapping[str, str]) -> str:
    """Properties as Pulsar's ``SchemaUtils.serializeSchemaProperties`` writes them.

    A compact JSON object with sorted keys and Gson's escapes, so the bytes match Java's.
    """
    text = json.dumps(dict(sorted(properties.items())), separators=(",", ":"), ensure_ascii=False)
    # these characters can only occur inside JSON strings, so replacing them is safe
    for ch, esc in _GSON_ESCAPES.items():
        text = text.replace(ch, esc)
    return text


def _parse_properties(text: str | None) -> dict[str, str]:
    """Sub-schema properties from their JSON text; null values are dropped, non-strings kept as JSON."""
    if not text:
        return {}
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise SchemaError(f"sub-schema properties are not a JSON object: {exc}") from None
    if not isinstance(obj, dict):
        raise SchemaError("sub-schema properties are not a JSON object")
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in obj.items() if v is not None}


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
    kv_encoding = KeyValueEncodingType.parse(encoding)
    props = {}
    for prefix, info in (("key", key), ("value", value)):
        props[f"{prefix}.schema.name"] = info.name
        props[f"{prefix}.schema.type"] = info.type.name
        props[f"{prefix}.schema.properties"] = _gson_properties(info.properties)
    props[_KV_ENCODING] = kv_encoding.value
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
    if info.type is not SchemaType.KEY_VALUE:
        raise SchemaError(f"not a KeyValue schema: {info.type.name}")
    key_bytes, value_bytes = decode_inline(info.schema)
    props = info.properties
    out = []
    for prefix, data in (("key", key_bytes), ("value", value_bytes)):
        type_name = props.get(f"{prefix}.schema.type") or SchemaType.BYTES.name
        try:
            st = SchemaType[type_name]
        except KeyError:
            raise SchemaError(f"unknown {prefix} schema type {type_name!r}") from None
        properties = _parse_properties(props.get(f"{prefix}.schema.properties"))
        out.append(SchemaInfo(props.get(f"{prefix}.schema.name", ""), st, data or b"", properties))
    return out[0], out[1]


def decode_keyvalue_encoding_type(info: SchemaInfo) -> KeyValueEncodingType:
    """``kv.encoding.type`` of a KEY_VALUE SchemaInfo; missing or empty means INLINE.

    Raises
    ------
    SchemaError
        ``info`` is not KEY_VALUE, or the property names no known encoding.
    """
    if info.type is not SchemaType.KEY_VALUE:
        raise SchemaError(f"not a KeyValue schema: {info.type.name}")
    value = info.properties.get(_KV_ENCODING)
    if not value:
        return KeyValueEncodingType.INLINE
    try:
        return KeyValueEncodingType[value]
    except KeyError:
        raise SchemaError(f"unknown kv.encoding.type {value!r}") from None
