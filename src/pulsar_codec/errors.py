"""Exceptions raised by pulsar_codec, and the one table that turns kernel statuses into them.

Kernels (compiled and pure) never format text: they report a numeric status code, the index of the
message and the byte offset inside it where decoding stopped, and an integer ``detail`` (the bad
byte, the bad length, ...). :func:`raise_for` is the single place that turns those numbers into an
exception, so both twins raise the same class with the same message.

The numeric codes are mirrored in ``csrc/pc_status.h``; ``tests/test_errors.py`` keeps the two in
step.
"""

from __future__ import annotations

import enum
from typing import NoReturn

__all__ = [
    "PulsarCodecError",
    "SchemaError",
    "DecodeError",
    "EncodeError",
    "WireFormatError",
    "KeyValueFormatError",
    "PrimitiveDecodeError",
    "AvroDecodeError",
    "SchemaNotFoundError",
    "IncompatibleSchemaError",
    "RegistryError",
    "ErrorCode",
    "raise_for",
    "error_for",
]


class PulsarCodecError(Exception):
    """Base class of every exception raised by pulsar_codec."""


class SchemaError(PulsarCodecError, ValueError):
    """A schema is malformed or unsupported; raised while planning, never in the middle of a batch."""


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

    def __reduce__(self):  # keep attributes across pickling (Spark ships exceptions between processes)
        return (
            _rebuild,
            (type(self), self.args[0], int(self.code), self.index, self.offset, self.detail),
        )


def _rebuild(cls, message, code, index, offset, detail):
    return cls(message, code=ErrorCode(code), index=index, offset=offset, detail=detail)


class WireFormatError(DecodeError):
    """A registry wire prefix is malformed: bad magic or protocol byte, short prefix, bad index array."""


class KeyValueFormatError(DecodeError):
    """A Pulsar KeyValue payload or KeyValue schema id is malformed."""


class PrimitiveDecodeError(DecodeError):
    """A Pulsar primitive payload has the wrong length."""


class AvroDecodeError(DecodeError):
    """An Avro body is malformed: truncated, over-long varint, bad index, bad length, bad UTF-8."""


class SchemaNotFoundError(PulsarCodecError, LookupError):
    """A schema id, subject or version is unknown to the registry."""


class IncompatibleSchemaError(PulsarCodecError):
    """A schema is incompatible with the versions it is checked against."""

    def __init__(self, message: str, *, reasons: list[str] | None = None) -> None:
        super().__init__(message)
        self.reasons = list(reasons or [])


class RegistryError(PulsarCodecError):
    """A schema registry answered with an error or could not be reached."""

    def __init__(self, message: str, *, status: int | None = None, error_code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code


class ErrorCode(enum.IntEnum):
    """Stable numeric codes shared by the compiled and the pure kernels (see ``csrc/pc_status.h``)."""

    OK = 0
    # wire prefixes: 1-19
    WIRE_BAD_MAGIC = 1
    WIRE_SHORT_PREFIX = 2
    WIRE_UNKNOWN_PROTOCOL = 3
    WIRE_INDEX_COUNT = 4
    WIRE_VARINT_TOO_LONG = 5
    WIRE_TRUNCATED_INDEXES = 6
    WIRE_EMPTY = 7
    WIRE_BAD_HEADER_LENGTH = 8
    # Pulsar KeyValue payloads and ids: 20-29
    KV_TRUNCATED_LENGTH = 20
    KV_NEGATIVE_LENGTH = 21
    KV_LENGTH_PAST_END = 22
    KV_TRAILING_BYTES = 23
    KV_INVALID_BASE64 = 24
    # Pulsar primitives: 30-39
    PRIM_BAD_LENGTH = 30
    PRIM_INVALID_UTF8 = 31
    PRIM_OUT_OF_RANGE = 32
    PRIM_UNDECODABLE = 33
    # Avro bodies: 40-79
    AVRO_TRUNCATED = 40
    AVRO_VARINT_TOO_LONG = 41
    AVRO_INT_OUT_OF_RANGE = 42
    AVRO_BAD_UNION_INDEX = 43
    AVRO_BAD_ENUM_INDEX = 44
    AVRO_INVALID_UTF8 = 45
    AVRO_TRAILING_BYTES = 46
    AVRO_NEGATIVE_LENGTH = 47
    AVRO_LENGTH_PAST_END = 48
    AVRO_BLOCK_COUNT_TOO_LARGE = 49
    AVRO_DECIMAL_OVERFLOW = 50
    AVRO_UNKNOWN_ENUM_SYMBOL = 51
    AVRO_UNRESOLVED_UNION_BRANCH = 52
    AVRO_NEGATIVE_BLOCK_SIZE = 53
    AVRO_BAD_BOOLEAN = 54
    AVRO_DEPTH_EXCEEDED = 55
    AVRO_DURATION_OUT_OF_RANGE = 56
    AVRO_OUTPUT_TOO_LARGE = 57
    # JSON payloads (external JSON schemas): 80-89
    JSON_INVALID = 80


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
        "message-index array length {detail} out of range (0 to 100000)",
    ),
    ErrorCode.WIRE_VARINT_TOO_LONG: (WireFormatError, "varint in the message-index array is longer than 10 bytes"),
    ErrorCode.WIRE_TRUNCATED_INDEXES: (WireFormatError, "message-index array is truncated"),
    ErrorCode.WIRE_EMPTY: (WireFormatError, "empty message has no {protocol} prefix"),
    ErrorCode.WIRE_BAD_HEADER_LENGTH: (WireFormatError, "{protocol} header value of {detail} bytes, expected {expected}"),
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
    ErrorCode.JSON_INVALID: (DecodeError, "invalid JSON payload: {reason}"),
}


class _Defaults(dict):
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
