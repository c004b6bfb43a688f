"""The numbers both kernel twins agree on: status codes, protocol kinds, modes, op codes, limits.

The pure twins import them from here; the compiled twins cimport the same names from ``defs.pxd``,
which takes each value from the C headers in ``csrc/`` (``pc_status.h``, ``pc_defs.h``), so the C
loops, the Cython drivers and the Python code read one definition each. ``tests/test_kernels_defs.py``
parses those headers and checks this module against them name by name: ``PC_X`` in C is ``X`` here
(the Avro names ``K_*``, ``O_*`` and ``E_*`` are spelled the same on both sides), and every integer
here has its C counterpart. :class:`pulsar_codec.errors.ErrorCode` takes its values from this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = [
    # status codes (csrc/pc_status.h)
    "OK",
    "WIRE_BAD_MAGIC",
    "WIRE_SHORT_PREFIX",
    "WIRE_UNKNOWN_PROTOCOL",
    "WIRE_INDEX_COUNT",
    "WIRE_VARINT_TOO_LONG",
    "WIRE_TRUNCATED_INDEXES",
    "WIRE_EMPTY",
    "WIRE_BAD_HEADER_LENGTH",
    "WIRE_UNKNOWN_COMPRESSION",
    "WIRE_DECOMPRESSION_FAILED",
    "KV_TRUNCATED_LENGTH",
    "KV_NEGATIVE_LENGTH",
    "KV_LENGTH_PAST_END",
    "KV_TRAILING_BYTES",
    "KV_INVALID_BASE64",
    "PRIM_BAD_LENGTH",
    "PRIM_INVALID_UTF8",
    "PRIM_OUT_OF_RANGE",
    "PRIM_UNDECODABLE",
    "AVRO_TRUNCATED",
    "AVRO_VARINT_TOO_LONG",
    "AVRO_INT_OUT_OF_RANGE",
    "AVRO_BAD_UNION_INDEX",
    "AVRO_BAD_ENUM_INDEX",
    "AVRO_INVALID_UTF8",
    "AVRO_TRAILING_BYTES",
    "AVRO_NEGATIVE_LENGTH",
    "AVRO_LENGTH_PAST_END",
    "AVRO_BLOCK_COUNT_TOO_LARGE",
    "AVRO_DECIMAL_OVERFLOW",
    "AVRO_UNKNOWN_ENUM_SYMBOL",
    "AVRO_UNRESOLVED_UNION_BRANCH",
    "AVRO_NEGATIVE_BLOCK_SIZE",
    "AVRO_BAD_BOOLEAN",
    "AVRO_DEPTH_EXCEEDED",
    "AVRO_DURATION_OUT_OF_RANGE",
    "AVRO_OUTPUT_TOO_LARGE",
    "AVRO_DECIMAL_PRECISION",
    "AVRO_TOO_MANY_EMPTY_ITEMS",
    "AVRO_NO_PYTHON_VALUE",
    "AVRO_TIME_OUT_OF_RANGE",
    "JSON_INVALID",
    "JSON_UNEXPECTED_BYTE",
    "JSON_TRUNCATED",
    "JSON_WRONG_TYPE",
    "JSON_MISSING_REQUIRED",
    "JSON_NUMBER_RANGE",
    "JSON_BAD_FORMAT",
    "JSON_UNKNOWN_ENUM",
    "JSON_DEPTH_EXCEEDED",
    "JSON_INVALID_UTF8",
    "SCHEMA_NOT_FOUND",
    "SCHEMA_UNRESOLVABLE",
    "SCHEMA_OTHER_MESSAGE",
    "JSON_CONSTRAINT",
    "JSON_TOO_MANY_EMPTY_ITEMS",
    "PROTO_TRUNCATED",
    "PROTO_VARINT_TOO_LONG",
    "PROTO_WRONG_WIRE_TYPE",
    "PROTO_LENGTH_PAST_END",
    "PROTO_INVALID_UTF8",
    "PROTO_DEPTH_EXCEEDED",
    "PROTO_INVALID_TAG",
    "PROTO_MISSING_REQUIRED",
    "PROTO_VALUE_RANGE",
    "PROTO_TOO_MANY_EMPTY_ITEMS",
    # wire-prefix protocols (csrc/pc_defs.h from here on)
    "KIND_CONFLUENT",
    "KIND_CONFLUENT_PROTOBUF",
    "KIND_CONFLUENT_GUID",
    "KIND_CONFLUENT_GUID_PROTOBUF",
    "KIND_HORTONWORKS",
    "KIND_APICURIO",
    "KIND_APICURIO_V3",
    "KIND_AWS_GLUE",
    "GLUE_HEADER_VERSION",
    "GLUE_NO_COMPRESSION",
    "GLUE_ZLIB",
    "GLUE_PREFIX_SIZE",
    "MAX_INDEXES",
    # KeyValue layouts
    "MODE_INLINE",
    "MODE_INLINE_CPP",
    "MODE_SCHEMA_ID",
    # Pulsar primitives
    "KIND_BOOLEAN",
    "KIND_INT8",
    "KIND_INT16",
    "KIND_INT32",
    "KIND_INT64",
    "KIND_FLOAT",
    "KIND_DOUBLE",
    "KIND_TIME",
    "KIND_INSTANT",
    "KIND_LOCAL_DATE",
    "KIND_LOCAL_TIME",
    "KIND_LOCAL_DATE_TIME",
    "WIDTHS",
    "DTYPES",
    "MS_PER_DAY",
    "NS_PER_S",
    "NS_PER_DAY",
    # Avro decoding
    "K_NULL",
    "K_BOOL",
    "K_I32",
    "K_I64",
    "K_F32",
    "K_F64",
    "K_RAW",
    "K_BIN",
    "K_LIST",
    "K_MAP",
    "K_STRUCT",
    "K_UNION",
    "O_NULL",
    "O_BOOL",
    "O_INT",
    "O_LONG",
    "O_FLOAT",
    "O_DOUBLE",
    "O_INT_L",
    "O_INT_F",
    "O_INT_D",
    "O_LONG_F",
    "O_LONG_D",
    "O_FLOAT_D",
    "O_STRING",
    "O_BYTES",
    "O_FIXED",
    "O_ENUM",
    "O_DEC_BYTES",
    "O_DEC_FIXED",
    "O_DURATION",
    "O_RECORD",
    "O_ARRAY",
    "O_MAP",
    "O_UNION",
    "O_SELECT",
    "O_NULLFILL",
    "O_DEFAULT",
    "O_BRANCH_ERR",
    "O_TIME_MS",
    "O_TIME_US",
    "O_SK_NOP",
    "O_SK_BOOL",
    "O_SK_VARINT",
    "O_SK_F32",
    "O_SK_F64",
    "O_SK_BYTES",
    "O_SK_FIXED",
    "O_SK_ARRAY",
    "O_SK_MAP",
    "O_SK_RECORD",
    "O_SK_UNION",
    "ZERO_SIZE_ITEM_LIMIT",
    # Avro encoding
    "E_NULL",
    "E_BOOL",
    "E_INT",
    "E_LONG",
    "E_FLOAT",
    "E_DOUBLE",
    "E_BYTES",
    "E_FIXED",
    "E_ENUM",
    "E_RECORD",
    "E_ARRAY",
    "E_MAP",
    "E_OPTION",
    "E_DEC_BYTES",
    "E_DEC_FIXED",
    "E_UNION",
    "ENC_NULL_VALUE",
    "ENC_NOT_NULL",
    "ENC_INT_RANGE",
    "ENC_FLOAT_RANGE",
    "ENC_FIXED_SIZE",
    "ENC_ENUM_SYMBOL",
    "ENC_DECIMAL_SIZE",
    "ENC_TOO_LARGE",
    # JSON transcoding
    "J_NULL",
    "J_BOOL",
    "J_INT",
    "J_LONG",
    "J_FLOAT",
    "J_DOUBLE",
    "J_STRING",
    "J_BYTES_B64",
    "J_FIXED_B64",
    "J_ENUM",
    "J_TIMESTAMP",
    "J_DATE",
    "J_TIME",
    "J_TEXT",
    "J_NULLABLE",
    "J_ARRAY",
    "J_MAP",
    "J_OBJECT",
    "J_TIME_MILLIS",
    "J_TIME_MICROS",
    "JSON_MAX_DEPTH",
    # Protobuf transcoding
    "P_INT32",
    "P_INT64",
    "P_UINT32",
    "P_UINT64",
    "P_SINT32",
    "P_SINT64",
    "P_FIXED32",
    "P_FIXED64",
    "P_SFIXED32",
    "P_SFIXED64",
    "P_FLOAT",
    "P_DOUBLE",
    "P_BOOL",
    "P_STRING",
    "P_BYTES",
    "P_MESSAGE",
    "P_TIMESTAMP",
    "P_DURATION",
    "P_RAW",
    "PF_IMPLICIT",
    "PF_OPTIONAL",
    "PF_REQUIRED",
    "PF_REPEATED",
    "PF_MAP",
    "PF_ONEOF",
    "PF_CASE",
    "PROTO_MAX_DEPTH",
]

# -- status codes: what a kernel reports with (code, index, offset, detail) -------------------------
OK: Final = 0
# wire prefixes: 1-19
WIRE_BAD_MAGIC: Final = 1
WIRE_SHORT_PREFIX: Final = 2
WIRE_UNKNOWN_PROTOCOL: Final = 3
WIRE_INDEX_COUNT: Final = 4
WIRE_VARINT_TOO_LONG: Final = 5
WIRE_TRUNCATED_INDEXES: Final = 6
WIRE_EMPTY: Final = 7
WIRE_BAD_HEADER_LENGTH: Final = 8
WIRE_UNKNOWN_COMPRESSION: Final = 9
WIRE_DECOMPRESSION_FAILED: Final = 10
# Pulsar KeyValue payloads and ids: 20-29
KV_TRUNCATED_LENGTH: Final = 20
KV_NEGATIVE_LENGTH: Final = 21
KV_LENGTH_PAST_END: Final = 22
KV_TRAILING_BYTES: Final = 23
KV_INVALID_BASE64: Final = 24
# Pulsar primitives: 30-39
PRIM_BAD_LENGTH: Final = 30
PRIM_INVALID_UTF8: Final = 31
PRIM_OUT_OF_RANGE: Final = 32
PRIM_UNDECODABLE: Final = 33
# Avro bodies: 40-79
AVRO_TRUNCATED: Final = 40
AVRO_VARINT_TOO_LONG: Final = 41
AVRO_INT_OUT_OF_RANGE: Final = 42
AVRO_BAD_UNION_INDEX: Final = 43
AVRO_BAD_ENUM_INDEX: Final = 44
AVRO_INVALID_UTF8: Final = 45
AVRO_TRAILING_BYTES: Final = 46
AVRO_NEGATIVE_LENGTH: Final = 47
AVRO_LENGTH_PAST_END: Final = 48
AVRO_BLOCK_COUNT_TOO_LARGE: Final = 49
AVRO_DECIMAL_OVERFLOW: Final = 50
AVRO_UNKNOWN_ENUM_SYMBOL: Final = 51
AVRO_UNRESOLVED_UNION_BRANCH: Final = 52
AVRO_NEGATIVE_BLOCK_SIZE: Final = 53
AVRO_BAD_BOOLEAN: Final = 54
AVRO_DEPTH_EXCEEDED: Final = 55
AVRO_DURATION_OUT_OF_RANGE: Final = 56
AVRO_OUTPUT_TOO_LARGE: Final = 57
AVRO_DECIMAL_PRECISION: Final = 58
AVRO_TOO_MANY_EMPTY_ITEMS: Final = 59
AVRO_NO_PYTHON_VALUE: Final = 60  # a date or time past what Python's datetime holds (one-value decoding)
AVRO_TIME_OUT_OF_RANGE: Final = 61  # a time-millis / time-micros value outside [0, one day)
# JSON payloads (external JSON schemas): 80-89
JSON_INVALID: Final = 80
JSON_UNEXPECTED_BYTE: Final = 81
JSON_TRUNCATED: Final = 82
JSON_WRONG_TYPE: Final = 83
JSON_MISSING_REQUIRED: Final = 84
JSON_NUMBER_RANGE: Final = 85
JSON_BAD_FORMAT: Final = 86
JSON_UNKNOWN_ENUM: Final = 87
JSON_DEPTH_EXCEEDED: Final = 88
JSON_INVALID_UTF8: Final = 89
# schema lookups per row (set by the pipeline, never by a kernel): 90-99
SCHEMA_NOT_FOUND: Final = 90
SCHEMA_UNRESOLVABLE: Final = 91
SCHEMA_OTHER_MESSAGE: Final = 92  # a Protobuf row of another message type than the output's
# JSON constraints beyond the Arrow mapping (optional validation, set by formats/json): 100
JSON_CONSTRAINT: Final = 100
# a JSON message holding more items of no size than the column builders take (ZERO_SIZE_ITEM_LIMIT)
JSON_TOO_MANY_EMPTY_ITEMS: Final = 101
# Protobuf payloads: 110-119
PROTO_TRUNCATED: Final = 110
PROTO_VARINT_TOO_LONG: Final = 111
PROTO_WRONG_WIRE_TYPE: Final = 112
PROTO_LENGTH_PAST_END: Final = 113
PROTO_INVALID_UTF8: Final = 114
PROTO_DEPTH_EXCEEDED: Final = 115
PROTO_INVALID_TAG: Final = 116
PROTO_MISSING_REQUIRED: Final = 117
PROTO_VALUE_RANGE: Final = 118
PROTO_TOO_MANY_EMPTY_ITEMS: Final = 119  # as JSON_TOO_MANY_EMPTY_ITEMS

# -- registry wire-prefix protocols (pulsar_codec.wire.Protocol.kind) -------------------------------
KIND_CONFLUENT: Final = 1
KIND_CONFLUENT_PROTOBUF: Final = 2
KIND_CONFLUENT_GUID: Final = 3
KIND_CONFLUENT_GUID_PROTOBUF: Final = 4
KIND_HORTONWORKS: Final = 5
KIND_APICURIO: Final = 6
KIND_APICURIO_V3: Final = 7
KIND_AWS_GLUE: Final = 8
# AWS Glue prefix: header version, compression byte (none / zlib), 16-byte UUID; body at byte 18
GLUE_HEADER_VERSION: Final = 3
GLUE_NO_COMPRESSION: Final = 0
GLUE_ZLIB: Final = 5
GLUE_PREFIX_SIZE: Final = 18
# longest Protobuf message-index array a prefix may declare (and the encoder may write)
MAX_INDEXES: Final = 100_000

# -- two-part KeyValue layouts: what a negative or zero length means --------------------------------
MODE_INLINE: Final = 1  # Java KeyValue: -1 is null, 0 is empty
MODE_INLINE_CPP: Final = 2  # C++ KeyValueImpl: -1 reads as empty
MODE_SCHEMA_ID: Final = 3  # PIP-420 KeyValue schema id: 0 and -1 are "no id"

# -- Pulsar primitive payloads -----------------------------------------------------------------------
KIND_BOOLEAN: Final = 1  # uint8 0/1, any non-zero byte is true
KIND_INT8: Final = 2
KIND_INT16: Final = 3
KIND_INT32: Final = 4
KIND_INT64: Final = 5  # also DATE / TIMESTAMP (epoch milliseconds)
KIND_FLOAT: Final = 6  # bits kept exactly
KIND_DOUBLE: Final = 7
KIND_TIME: Final = 8  # epoch milliseconds -> int32 millisecond of the UTC day (floor modulo)
KIND_INSTANT: Final = 9  # i64 seconds || i32 nanos -> int64 nanoseconds
KIND_LOCAL_DATE: Final = 10  # i64 epoch day -> int32
KIND_LOCAL_TIME: Final = 11  # i64 nanosecond of the day, 0 <= v < 86400e9
KIND_LOCAL_DATE_TIME: Final = 12  # i64 epoch day || i64 nanosecond of the day -> int64 nanoseconds

# payload bytes per kind
WIDTHS: Final[Mapping[int, int]] = {
    KIND_BOOLEAN: 1,
    KIND_INT8: 1,
    KIND_INT16: 2,
    KIND_INT32: 4,
    KIND_INT64: 8,
    KIND_FLOAT: 4,
    KIND_DOUBLE: 8,
    KIND_TIME: 8,
    KIND_INSTANT: 12,
    KIND_LOCAL_DATE: 8,
    KIND_LOCAL_TIME: 8,
    KIND_LOCAL_DATE_TIME: 16,
}
# numpy dtype of the decoded column per kind
DTYPES: Final[Mapping[int, str]] = {
    KIND_BOOLEAN: "uint8",
    KIND_INT8: "int8",
    KIND_INT16: "int16",
    KIND_INT32: "int32",
    KIND_INT64: "int64",
    KIND_FLOAT: "float32",
    KIND_DOUBLE: "float64",
    KIND_TIME: "int32",
    KIND_INSTANT: "int64",
    KIND_LOCAL_DATE: "int32",
    KIND_LOCAL_TIME: "int64",
    KIND_LOCAL_DATE_TIME: "int64",
}
MS_PER_DAY: Final = 86_400_000
NS_PER_S: Final = 1_000_000_000
NS_PER_DAY: Final = 86_400_000_000_000

# -- Avro decoding: column builder (slot) kinds ------------------------------------------------------
K_NULL: Final = 0
K_BOOL: Final = 1
K_I32: Final = 2
K_I64: Final = 3
K_F32: Final = 4
K_F64: Final = 5
K_RAW: Final = 6
K_BIN: Final = 7
K_LIST: Final = 8
K_MAP: Final = 9
K_STRUCT: Final = 10
K_UNION: Final = 11

# -- Avro decoding: op codes of the flat program pulsar_codec.formats.avro.plan builds -------------
O_NULL: Final = 1
O_BOOL: Final = 2
O_INT: Final = 3
O_LONG: Final = 4
O_FLOAT: Final = 5
O_DOUBLE: Final = 6
O_INT_L: Final = 7
O_INT_F: Final = 8
O_INT_D: Final = 9
O_LONG_F: Final = 10
O_LONG_D: Final = 11
O_FLOAT_D: Final = 12
O_STRING: Final = 13
O_BYTES: Final = 14
O_FIXED: Final = 15
O_ENUM: Final = 16
O_DEC_BYTES: Final = 17
O_DEC_FIXED: Final = 18
O_DURATION: Final = 19
O_RECORD: Final = 20
O_ARRAY: Final = 21
O_MAP: Final = 22
O_UNION: Final = 23
O_SELECT: Final = 24
O_NULLFILL: Final = 25
O_DEFAULT: Final = 26
O_BRANCH_ERR: Final = 27
# a reader time-millis (int32 slot) / time-micros (int64 slot): arg bounds the values, see plan.py
O_TIME_MS: Final = 28
O_TIME_US: Final = 29
# skips of writer-only data
O_SK_NOP: Final = 30
O_SK_BOOL: Final = 31
O_SK_VARINT: Final = 32
O_SK_F32: Final = 33
O_SK_F64: Final = 34
O_SK_BYTES: Final = 35
O_SK_FIXED: Final = 36
O_SK_ARRAY: Final = 37
O_SK_MAP: Final = 38
O_SK_RECORD: Final = 39
O_SK_UNION: Final = 40

# Items that occupy no bytes (null, empty records, fixed(0)) cannot be bounded by the bytes left,
# so one message may hold at most this many of them in all its arrays and maps.
ZERO_SIZE_ITEM_LIMIT: Final = 1 << 20

# -- Avro encoding: node codes of the program pulsar_codec.formats.avro.encoder binds ---------------
E_NULL: Final = 1
E_BOOL: Final = 2
E_INT: Final = 3
E_LONG: Final = 4
E_FLOAT: Final = 5
E_DOUBLE: Final = 6
E_BYTES: Final = 7
E_FIXED: Final = 8
E_ENUM: Final = 9
E_RECORD: Final = 10
E_ARRAY: Final = 11
E_MAP: Final = 12
E_OPTION: Final = 13
E_DEC_BYTES: Final = 14
E_DEC_FIXED: Final = 15
E_UNION: Final = 16  # an Arrow union column: the branch comes from its type code
# Avro encoding: statuses (the encoder turns them into EncodeError)
ENC_NULL_VALUE: Final = 1  # null where the schema has no null
ENC_NOT_NULL: Final = 2  # a value where the schema is "null"
ENC_INT_RANGE: Final = 3  # outside the Avro int range
ENC_FLOAT_RANGE: Final = 4  # finite double that overflows a float
ENC_FIXED_SIZE: Final = 5  # fixed_size_binary width differs from the Avro fixed size
ENC_ENUM_SYMBOL: Final = 6  # a string that is not a symbol of the enum
ENC_DECIMAL_SIZE: Final = 7  # unscaled decimal does not fit the Avro fixed
ENC_TOO_LARGE: Final = 8  # output over 2 GiB (int32 offsets)

# -- JSON -> Avro transcoding: node codes of the program pulsar_codec.formats.json.mapping builds --
J_NULL: Final = 1
J_BOOL: Final = 2
J_INT: Final = 3
J_LONG: Final = 4
J_FLOAT: Final = 5
J_DOUBLE: Final = 6
J_STRING: Final = 7
J_BYTES_B64: Final = 8
J_FIXED_B64: Final = 9
J_ENUM: Final = 10
J_TIMESTAMP: Final = 11
J_DATE: Final = 12
J_TIME: Final = 13
J_TEXT: Final = 14
J_NULLABLE: Final = 15
J_ARRAY: Final = 16
J_MAP: Final = 17
J_OBJECT: Final = 18
# an integral number of milliseconds / microseconds since midnight, below one day (Pulsar JSON times)
J_TIME_MILLIS: Final = 19
J_TIME_MICROS: Final = 20
# deepest nesting of JSON arrays and objects in one payload (skipped values included)
JSON_MAX_DEPTH: Final = 256

# -- Protobuf -> Avro transcoding: node codes of the program pulsar_codec.formats.protobuf.mapping builds
P_INT32: Final = 1
P_INT64: Final = 2
P_UINT32: Final = 3
P_UINT64: Final = 4
P_SINT32: Final = 5
P_SINT64: Final = 6
P_FIXED32: Final = 7
P_FIXED64: Final = 8
P_SFIXED32: Final = 9
P_SFIXED64: Final = 10
P_FLOAT: Final = 11
P_DOUBLE: Final = 12
P_BOOL: Final = 13
P_STRING: Final = 14
P_BYTES: Final = 15
P_MESSAGE: Final = 16
P_TIMESTAMP: Final = 17
P_DURATION: Final = 18
P_RAW: Final = 19
# how a message field's occurrences become its Avro value (see _kernels/protobuf_py.py)
PF_IMPLICIT: Final = 1
PF_OPTIONAL: Final = 2
PF_REQUIRED: Final = 3
PF_REPEATED: Final = 4
PF_MAP: Final = 5
PF_ONEOF: Final = 6
PF_CASE: Final = 7
# deepest nesting of messages (and unknown groups) in one payload, the root counting one
PROTO_MAX_DEPTH: Final = 100
