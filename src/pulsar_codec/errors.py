"""Exceptions raised by pulsar_codec, and the one table that turns kernel statuses into them.

Kernels (compiled and pure) never format text: they report a numeric status code, the index of the
message and the byte offset inside it where decoding stopped, and an integer ``detail`` (the bad
byte, the bad length, ...). :func:`raise_for` is the single place that turns those numbers into an
exception, so both twins raise the same class with the same message.

The numeric codes come from :mod:`pulsar_codec._kernels.defs`, which mirrors ``csrc/pc_status.h``;
``tests/test_kernels_defs.py`` keeps the three in step.
"""

from __future__ import annotations

import copy
import enum
import re
from typing import Any, NoReturn, Self

from ._kernels import defs

__all__ = [
    "PulsarCodecError",
    "BrokerUnreachableError",
    "SchemaError",
    "DecodeError",
    "EncodeError",
    "WireFormatError",
    "KeyValueFormatError",
    "PrimitiveDecodeError",
    "AvroDecodeError",
    "JsonDecodeError",
    "ProtobufDecodeError",
    "SchemaResolutionError",
    "SchemaNotFoundError",
    "IncompatibleSchemaError",
    "RegistryError",
    "RegistryUnreachableError",
    "ErrorCode",
    "raise_for",
    "error_for",
]


class PulsarCodecError(Exception):
    """Base class of every exception raised by pulsar_codec."""


class SchemaError(PulsarCodecError, ValueError):
    """A schema is malformed or unsupported; raised while planning, never in the middle of a batch."""

    status: int | None = None  # set when a schema registry refused the schema: its HTTP status
    error_code: int | None = None  # and Confluent's error code (42201)
    index: int | None = None  # a batch decode's first message that needed the schema (text: "(message i)")


class EncodeError(PulsarCodecError, ValueError):
    """A value cannot be encoded (out of range, wrong type, missing required field)."""

    def __init__(self, message: str, *, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


class DecodeError(PulsarCodecError, ValueError):
    """Bytes that cannot be decoded.

    Attributes
    ----------
    code : ErrorCode
        What went wrong, as a stable number.
    index : int
        Index of the message in the batch (0 for a single message).
    offset : int
        Byte offset inside that message where the problem was found.
    detail : int
        The offending value (a byte, a length, a count), when there is one.
    """

    def __init__(self, message: str, *, code: ErrorCode, index: int, offset: int, detail: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.index = index
        self.offset = offset
        self.detail = detail

    def moved(self, base: int) -> Self:
        """This error of a slice whose first row is row ``base`` of the whole batch: the same
        error, its index and its text's ``(message i, byte o)`` counted from the batch."""
        index = self.index + base
        text = re.sub(r"\(message \d+, byte", f"(message {index}, byte", self.args[0], count=1)
        return type(self)(text, code=self.code, index=index, offset=self.offset, detail=self.detail)

    def at_offset(self, offset: int) -> Self:
        """This error found at byte ``offset`` of its message instead: the same error, its offset
        and its text's ``(message i, byte o)`` moved (for bytes a caller added before decoding)."""
        text = re.sub(r"(\(message \d+, byte )\d+", rf"\g<1>{offset}", self.args[0], count=1)
        return type(self)(text, code=self.code, index=self.index, offset=offset, detail=self.detail)

    def __reduce__(self) -> tuple[Any, ...]:  # keep attributes across pickling (Spark ships exceptions)
        return (
            _rebuild,
            (type(self), self.args[0], int(self.code), self.index, self.offset, self.detail),
        )


def _rebuild(cls: type[DecodeError], message: str, code: int, index: int, offset: int, detail: int) -> DecodeError:
    return cls(message, code=ErrorCode(code), index=index, offset=offset, detail=detail)


class WireFormatError(DecodeError):
    """A registry wire prefix is malformed: bad magic or protocol byte, short prefix, bad index array."""


class KeyValueFormatError(DecodeError):
    """A Pulsar KeyValue payload or KeyValue schema id is malformed."""


class PrimitiveDecodeError(DecodeError):
    """A Pulsar primitive payload has the wrong length."""


class AvroDecodeError(DecodeError):
    """An Avro body is malformed: truncated, over-long varint, bad index, bad length, bad UTF-8."""


class JsonDecodeError(DecodeError):
    """A JSON payload is malformed or does not match its schema: bad syntax, a value of the wrong
    type, a missing required property, a number out of range, a string not in its format, more
    items of no size (nulls, empty objects) than one message may hold."""


class ProtobufDecodeError(DecodeError):
    """A Protobuf payload is malformed or breaks its message type: truncated, an over-long varint, a
    length past the end, a bad tag or wire type, invalid UTF-8, nesting too deep, a missing required
    field, a Timestamp or Duration out of the nanosecond range, more empty messages in repeated
    fields than one message may hold."""


class SchemaResolutionError(DecodeError):
    """A message's writer schema is unknown to the registry or cannot be read as the reader schema.

    Only error rows carry it (``on_error="null"``): with ``on_error="raise"`` the registry's
    :class:`SchemaNotFoundError` or the planner's :class:`SchemaError` is raised instead, its
    ``index`` the first message that needed the schema.
    """


class SchemaNotFoundError(PulsarCodecError, LookupError):
    """A schema id, subject or version is unknown to the registry."""

    error_code: int | None = None  # Confluent's code when a registry gives one: 40401, 40402, 40403
    status: int | None = None  # the HTTP status a registry answered with (404), as RegistryError has
    index: int | None = None  # a batch decode's first message of the unknown id (text: "(message i)")


def at_message(exc: SchemaError | SchemaNotFoundError, index: int) -> SchemaError | SchemaNotFoundError:
    """``exc``, raised while planning a batch, as the error of the batch's message ``index``: the
    same class and attributes, ``index`` set and ``(message i)`` at the end of its text, so a
    caller can find the row that needed the schema."""
    located = copy.copy(exc)  # the class and every attribute (status, error_code) kept
    located.args = (f"{exc.args[0] if exc.args else exc} (message {index})", *exc.args[1:])
    located.index = index
    return located


class IncompatibleSchemaError(PulsarCodecError):
    """A schema is incompatible with the versions it is checked against."""

    status: int | None = None  # set when a schema registry answered 409: its HTTP status
    error_code: int | None = None  # and Confluent's error code

    def __init__(self, message: str, *, reasons: list[str] | None = None) -> None:
        super().__init__(message)
        self.reasons = list(reasons or [])


class RegistryError(PulsarCodecError):
    """A schema registry answered with an error or could not be reached."""

    def __init__(self, message: str, *, status: int | None = None, error_code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code


class RegistryUnreachableError(RegistryError):
    """A schema registry could not be reached: connection refused or reset, DNS or TLS failure, a
    timeout, or an unavailable answer (502, 503, 504) after the bounded retries.

    A later retry may succeed, so callers treat it as transient (the CLI exits with code 5).
    """


class BrokerUnreachableError(PulsarCodecError, ConnectionError):
    """A Pulsar broker could not be reached, or did not answer within the timeout given.

    Attributes
    ----------
    service_url : str
        The broker asked.
    """

    def __init__(self, message: str, *, service_url: str) -> None:
        super().__init__(message)
        self.service_url = service_url


class ErrorCode(enum.IntEnum):
    """Stable numeric codes shared by the compiled and the pure kernels.

    The values are :mod:`pulsar_codec._kernels.defs`'s (which ``csrc/pc_status.h`` matches).
    """

    OK = defs.OK
    # wire prefixes: 1-19
    WIRE_BAD_MAGIC = defs.WIRE_BAD_MAGIC
    WIRE_SHORT_PREFIX = defs.WIRE_SHORT_PREFIX
    WIRE_UNKNOWN_PROTOCOL = defs.WIRE_UNKNOWN_PROTOCOL
    WIRE_INDEX_COUNT = defs.WIRE_INDEX_COUNT
    WIRE_VARINT_TOO_LONG = defs.WIRE_VARINT_TOO_LONG
    WIRE_TRUNCATED_INDEXES = defs.WIRE_TRUNCATED_INDEXES
    WIRE_EMPTY = defs.WIRE_EMPTY
    WIRE_BAD_HEADER_LENGTH = defs.WIRE_BAD_HEADER_LENGTH
    WIRE_UNKNOWN_COMPRESSION = defs.WIRE_UNKNOWN_COMPRESSION
    WIRE_DECOMPRESSION_FAILED = defs.WIRE_DECOMPRESSION_FAILED
    # Pulsar KeyValue payloads and ids: 20-29
    KV_TRUNCATED_LENGTH = defs.KV_TRUNCATED_LENGTH
    KV_NEGATIVE_LENGTH = defs.KV_NEGATIVE_LENGTH
    KV_LENGTH_PAST_END = defs.KV_LENGTH_PAST_END
    KV_TRAILING_BYTES = defs.KV_TRAILING_BYTES
    KV_INVALID_BASE64 = defs.KV_INVALID_BASE64
    # Pulsar primitives: 30-39
    PRIM_BAD_LENGTH = defs.PRIM_BAD_LENGTH
    PRIM_INVALID_UTF8 = defs.PRIM_INVALID_UTF8
    PRIM_OUT_OF_RANGE = defs.PRIM_OUT_OF_RANGE
    PRIM_UNDECODABLE = defs.PRIM_UNDECODABLE
    # Avro bodies: 40-79
    AVRO_TRUNCATED = defs.AVRO_TRUNCATED
    AVRO_VARINT_TOO_LONG = defs.AVRO_VARINT_TOO_LONG
    AVRO_INT_OUT_OF_RANGE = defs.AVRO_INT_OUT_OF_RANGE
    AVRO_BAD_UNION_INDEX = defs.AVRO_BAD_UNION_INDEX
    AVRO_BAD_ENUM_INDEX = defs.AVRO_BAD_ENUM_INDEX
    AVRO_INVALID_UTF8 = defs.AVRO_INVALID_UTF8
    AVRO_TRAILING_BYTES = defs.AVRO_TRAILING_BYTES
    AVRO_NEGATIVE_LENGTH = defs.AVRO_NEGATIVE_LENGTH
    AVRO_LENGTH_PAST_END = defs.AVRO_LENGTH_PAST_END
    AVRO_BLOCK_COUNT_TOO_LARGE = defs.AVRO_BLOCK_COUNT_TOO_LARGE
    AVRO_DECIMAL_OVERFLOW = defs.AVRO_DECIMAL_OVERFLOW
    AVRO_UNKNOWN_ENUM_SYMBOL = defs.AVRO_UNKNOWN_ENUM_SYMBOL
    AVRO_UNRESOLVED_UNION_BRANCH = defs.AVRO_UNRESOLVED_UNION_BRANCH
    AVRO_NEGATIVE_BLOCK_SIZE = defs.AVRO_NEGATIVE_BLOCK_SIZE
    AVRO_BAD_BOOLEAN = defs.AVRO_BAD_BOOLEAN
    AVRO_DEPTH_EXCEEDED = defs.AVRO_DEPTH_EXCEEDED
    AVRO_DURATION_OUT_OF_RANGE = defs.AVRO_DURATION_OUT_OF_RANGE
    AVRO_OUTPUT_TOO_LARGE = defs.AVRO_OUTPUT_TOO_LARGE
    AVRO_DECIMAL_PRECISION = defs.AVRO_DECIMAL_PRECISION
    AVRO_TOO_MANY_EMPTY_ITEMS = defs.AVRO_TOO_MANY_EMPTY_ITEMS
    AVRO_NO_PYTHON_VALUE = defs.AVRO_NO_PYTHON_VALUE
    AVRO_TIME_OUT_OF_RANGE = defs.AVRO_TIME_OUT_OF_RANGE
    # JSON payloads (external JSON schemas): 80-89
    JSON_INVALID = defs.JSON_INVALID
    JSON_UNEXPECTED_BYTE = defs.JSON_UNEXPECTED_BYTE
    JSON_TRUNCATED = defs.JSON_TRUNCATED
    JSON_WRONG_TYPE = defs.JSON_WRONG_TYPE
    JSON_MISSING_REQUIRED = defs.JSON_MISSING_REQUIRED
    JSON_NUMBER_RANGE = defs.JSON_NUMBER_RANGE
    JSON_BAD_FORMAT = defs.JSON_BAD_FORMAT
    JSON_UNKNOWN_ENUM = defs.JSON_UNKNOWN_ENUM
    JSON_DEPTH_EXCEEDED = defs.JSON_DEPTH_EXCEEDED
    JSON_INVALID_UTF8 = defs.JSON_INVALID_UTF8
    # schema lookups per row: 90-99
    SCHEMA_NOT_FOUND = defs.SCHEMA_NOT_FOUND
    SCHEMA_UNRESOLVABLE = defs.SCHEMA_UNRESOLVABLE
    SCHEMA_OTHER_MESSAGE = defs.SCHEMA_OTHER_MESSAGE
    # JSON constraints (optional validation) and limits: 100-109
    JSON_CONSTRAINT = defs.JSON_CONSTRAINT
    JSON_TOO_MANY_EMPTY_ITEMS = defs.JSON_TOO_MANY_EMPTY_ITEMS
    # Protobuf payloads: 110-119
    PROTO_TRUNCATED = defs.PROTO_TRUNCATED
    PROTO_VARINT_TOO_LONG = defs.PROTO_VARINT_TOO_LONG
    PROTO_WRONG_WIRE_TYPE = defs.PROTO_WRONG_WIRE_TYPE
    PROTO_LENGTH_PAST_END = defs.PROTO_LENGTH_PAST_END
    PROTO_INVALID_UTF8 = defs.PROTO_INVALID_UTF8
    PROTO_DEPTH_EXCEEDED = defs.PROTO_DEPTH_EXCEEDED
    PROTO_INVALID_TAG = defs.PROTO_INVALID_TAG
    PROTO_MISSING_REQUIRED = defs.PROTO_MISSING_REQUIRED
    PROTO_VALUE_RANGE = defs.PROTO_VALUE_RANGE
    PROTO_TOO_MANY_EMPTY_ITEMS = defs.PROTO_TOO_MANY_EMPTY_ITEMS


# code -> (exception class, message template). Templates may use {detail} and any keyword passed
# to raise_for (for instance {expected}); the location suffix is added by raise_for.
_TABLE: dict[ErrorCode, tuple[type[DecodeError], str]] = {
    ErrorCode.WIRE_BAD_MAGIC: (WireFormatError, "invalid magic byte 0x{detail:02x}, expected {expected}"),
    ErrorCode.WIRE_SHORT_PREFIX: (
        WireFormatError,
        "message of {detail} bytes is shorter than its {protocol} prefix",
    ),
    ErrorCode.WIRE_UNKNOWN_PROTOCOL: (
        WireFormatError,
        "unknown protocol byte 0x{detail:02x}, expected {expected}",
    ),
    ErrorCode.WIRE_INDEX_COUNT: (
        WireFormatError,
        "message-index array length {detail} out of range (0 to " + str(defs.MAX_INDEXES) + ")",
    ),
    ErrorCode.WIRE_VARINT_TOO_LONG: (WireFormatError, "varint in the message-index array is longer than 10 bytes"),
    ErrorCode.WIRE_TRUNCATED_INDEXES: (WireFormatError, "message-index array is truncated"),
    ErrorCode.WIRE_EMPTY: (WireFormatError, "empty message has no {protocol} prefix"),
    ErrorCode.WIRE_BAD_HEADER_LENGTH: (
        WireFormatError,
        "{protocol} header value of {detail} bytes, expected {expected}",
    ),
    ErrorCode.WIRE_UNKNOWN_COMPRESSION: (
        WireFormatError,
        "unknown {protocol} compression byte 0x{detail:02x}, expected {expected}",
    ),
    ErrorCode.WIRE_DECOMPRESSION_FAILED: (WireFormatError, "{protocol} payload does not decompress: {reason}"),
    ErrorCode.KV_TRUNCATED_LENGTH: (
        KeyValueFormatError,
        "truncated {part} length: {detail} bytes left, 4 needed",
    ),
    ErrorCode.KV_NEGATIVE_LENGTH: (KeyValueFormatError, "invalid {part} length {detail}"),
    ErrorCode.KV_LENGTH_PAST_END: (
        KeyValueFormatError,
        "{part} length {detail} runs past the end of the data",
    ),
    ErrorCode.KV_TRAILING_BYTES: (KeyValueFormatError, "{detail} trailing bytes after the value"),
    ErrorCode.KV_INVALID_BASE64: (
        KeyValueFormatError,
        "partition key of {detail} characters is not valid Base64",
    ),
    ErrorCode.PRIM_BAD_LENGTH: (PrimitiveDecodeError, "{type} value of {detail} bytes, expected {expected}"),
    ErrorCode.PRIM_INVALID_UTF8: (PrimitiveDecodeError, "invalid UTF-8 in {type} value"),
    ErrorCode.PRIM_OUT_OF_RANGE: (PrimitiveDecodeError, "{type} field value {detail} is out of range for {target}"),
    ErrorCode.PRIM_UNDECODABLE: (PrimitiveDecodeError, "{type} value is not valid {charset} text"),
    ErrorCode.AVRO_TRUNCATED: (AvroDecodeError, "truncated Avro data: {detail} more bytes needed"),
    ErrorCode.AVRO_VARINT_TOO_LONG: (AvroDecodeError, "varint longer than 10 bytes"),
    ErrorCode.AVRO_INT_OUT_OF_RANGE: (AvroDecodeError, "int value {detail} outside the 32-bit range"),
    ErrorCode.AVRO_BAD_UNION_INDEX: (AvroDecodeError, "union branch index {detail} out of range"),
    ErrorCode.AVRO_BAD_ENUM_INDEX: (AvroDecodeError, "enum symbol index {detail} out of range"),
    ErrorCode.AVRO_INVALID_UTF8: (AvroDecodeError, "invalid UTF-8 in string"),
    ErrorCode.AVRO_TRAILING_BYTES: (AvroDecodeError, "{detail} trailing bytes after the record"),
    ErrorCode.AVRO_NEGATIVE_LENGTH: (AvroDecodeError, "negative length {detail}"),
    ErrorCode.AVRO_LENGTH_PAST_END: (AvroDecodeError, "length {detail} runs past the end of the data"),
    ErrorCode.AVRO_BLOCK_COUNT_TOO_LARGE: (
        AvroDecodeError,
        "block count {detail} exceeds what the remaining bytes can hold",
    ),
    ErrorCode.AVRO_TOO_MANY_EMPTY_ITEMS: (
        AvroDecodeError,
        "block count {detail} passes the limit of " + str(defs.ZERO_SIZE_ITEM_LIMIT) + " items that take no bytes "
        "(null, empty records) in one message",
    ),
    ErrorCode.AVRO_NO_PYTHON_VALUE: (
        AvroDecodeError,
        "{target} value {detail} is past the range of Python's datetime (a decoded batch holds it)",
    ),
    ErrorCode.AVRO_TIME_OUT_OF_RANGE: (AvroDecodeError, "time of day {detail} is outside one day"),
    ErrorCode.AVRO_DECIMAL_OVERFLOW: (AvroDecodeError, "decimal of {detail} bytes does not fit its precision"),
    ErrorCode.AVRO_UNKNOWN_ENUM_SYMBOL: (
        AvroDecodeError,
        "writer enum symbol {detail} has no match in the reader enum and no default",
    ),
    ErrorCode.AVRO_UNRESOLVED_UNION_BRANCH: (
        AvroDecodeError,
        "writer union branch {detail} cannot be read by the reader schema",
    ),
    ErrorCode.AVRO_NEGATIVE_BLOCK_SIZE: (AvroDecodeError, "invalid block byte size {detail}"),
    ErrorCode.AVRO_BAD_BOOLEAN: (AvroDecodeError, "invalid boolean byte 0x{detail:02x}"),
    ErrorCode.AVRO_DEPTH_EXCEEDED: (AvroDecodeError, "nesting deeper than {detail} levels"),
    ErrorCode.AVRO_DURATION_OUT_OF_RANGE: (
        AvroDecodeError,
        "duration months or days value {detail} does not fit a signed 32-bit interval field",
    ),
    ErrorCode.AVRO_OUTPUT_TOO_LARGE: (
        AvroDecodeError,
        "decoded column passes the 2 GiB limit of 32-bit Arrow offsets ({detail} entries); decode fewer rows at once",
    ),
    ErrorCode.AVRO_DECIMAL_PRECISION: (
        AvroDecodeError,
        "decimal unscaled value has more digits than its precision {detail}",
    ),
    ErrorCode.JSON_INVALID: (JsonDecodeError, "invalid JSON payload: {reason}"),
    ErrorCode.JSON_UNEXPECTED_BYTE: (JsonDecodeError, "invalid JSON: unexpected byte 0x{detail:02x}"),
    ErrorCode.JSON_TRUNCATED: (JsonDecodeError, "invalid JSON: the text ends inside a value"),
    ErrorCode.JSON_WRONG_TYPE: (JsonDecodeError, "JSON {detail} where the schema expects another type"),
    ErrorCode.JSON_MISSING_REQUIRED: (JsonDecodeError, "required property {detail} is missing"),
    ErrorCode.JSON_NUMBER_RANGE: (JsonDecodeError, "number does not fit {detail}"),
    ErrorCode.JSON_BAD_FORMAT: (JsonDecodeError, "string is not a valid {detail}"),
    ErrorCode.JSON_UNKNOWN_ENUM: (JsonDecodeError, "string is not one of the enum's values"),
    ErrorCode.JSON_DEPTH_EXCEEDED: (JsonDecodeError, "JSON nested deeper than {detail} levels"),
    ErrorCode.JSON_INVALID_UTF8: (JsonDecodeError, "invalid UTF-8 or escape in a JSON string"),
    ErrorCode.JSON_CONSTRAINT: (JsonDecodeError, "JSON value breaks the schema: {detail}"),
    ErrorCode.JSON_TOO_MANY_EMPTY_ITEMS: (
        JsonDecodeError,
        "more than {detail} items of no size (null, empty objects) in one message",
    ),
    ErrorCode.PROTO_TRUNCATED: (
        ProtobufDecodeError,
        "truncated Protobuf data: a value runs past the end of its message",
    ),
    ErrorCode.PROTO_VARINT_TOO_LONG: (ProtobufDecodeError, "Protobuf varint longer than 10 bytes"),
    ErrorCode.PROTO_WRONG_WIRE_TYPE: (ProtobufDecodeError, "Protobuf field {detail}, which its type does not use"),
    ErrorCode.PROTO_LENGTH_PAST_END: (ProtobufDecodeError, "Protobuf length {detail} runs past the end of its message"),
    ErrorCode.PROTO_INVALID_UTF8: (ProtobufDecodeError, "invalid UTF-8 in a Protobuf string"),
    ErrorCode.PROTO_DEPTH_EXCEEDED: (ProtobufDecodeError, "Protobuf messages nested deeper than {detail} levels"),
    ErrorCode.PROTO_INVALID_TAG: (ProtobufDecodeError, "invalid Protobuf tag: {detail}"),
    ErrorCode.PROTO_MISSING_REQUIRED: (ProtobufDecodeError, "required Protobuf field {detail} is missing"),
    ErrorCode.PROTO_VALUE_RANGE: (
        ProtobufDecodeError,
        "Timestamp or Duration outside the int64 nanosecond range (about the years 1677 to 2262)",
    ),
    ErrorCode.PROTO_TOO_MANY_EMPTY_ITEMS: (
        ProtobufDecodeError,
        "more than {detail} items of no size (empty messages) in one message",
    ),
    ErrorCode.SCHEMA_NOT_FOUND: (SchemaResolutionError, "schema id {schema_id} is not in the registry"),
    ErrorCode.SCHEMA_UNRESOLVABLE: (
        SchemaResolutionError,
        "writer schema {schema_id} cannot be read as the reader schema: {reason}",
    ),
    ErrorCode.SCHEMA_OTHER_MESSAGE: (SchemaResolutionError, "schema id {schema_id}: {reason}"),
}


class _Defaults(dict[str, object]):
    """Format mapping that leaves unknown placeholders readable instead of raising KeyError."""

    def __missing__(self, key: str) -> str:
        return "?"


def error_for(code: int, index: int, offset: int, detail: int = 0, **context: object) -> DecodeError:
    """Build (without raising) the exception for a kernel status."""
    code = ErrorCode(code)
    cls, template = _TABLE[code]
    text = template.format_map(_Defaults(detail=detail, **context))
    message = f"{text} (message {index}, byte {offset})"
    return cls(message, code=code, index=index, offset=offset, detail=detail)


def raise_for(code: int, index: int, offset: int, detail: int = 0, **context: object) -> NoReturn:
    """Raise the exception for a kernel status. ``context`` fills template words such as ``expected``."""
    raise error_for(code, index, offset, detail, **context)
