/* Status codes shared by every kernel; pulsar_codec/_kernels/defs.py holds the same values (PC_X
 * here is defs.X there) and pulsar_codec.errors.ErrorCode takes its values from defs.py
 * (tests/test_kernels_defs.py checks all three agree). Kernels never format text: they return
 * one of these with the message index, the byte offset and an integer detail. */
#ifndef PC_STATUS_H
#define PC_STATUS_H

#include <stdint.h>

typedef enum {
    PC_OK = 0,
    /* wire prefixes */
    PC_WIRE_BAD_MAGIC = 1,
    PC_WIRE_SHORT_PREFIX = 2,
    PC_WIRE_UNKNOWN_PROTOCOL = 3,
    PC_WIRE_INDEX_COUNT = 4,
    PC_WIRE_VARINT_TOO_LONG = 5,
    PC_WIRE_TRUNCATED_INDEXES = 6,
    PC_WIRE_EMPTY = 7,
    PC_WIRE_BAD_HEADER_LENGTH = 8,
    PC_WIRE_UNKNOWN_COMPRESSION = 9,
    PC_WIRE_DECOMPRESSION_FAILED = 10,
    /* Pulsar KeyValue */
    PC_KV_TRUNCATED_LENGTH = 20,
    PC_KV_NEGATIVE_LENGTH = 21,
    PC_KV_LENGTH_PAST_END = 22,
    PC_KV_TRAILING_BYTES = 23,
    PC_KV_INVALID_BASE64 = 24,
    /* Pulsar primitives */
    PC_PRIM_BAD_LENGTH = 30,
    PC_PRIM_INVALID_UTF8 = 31,
    PC_PRIM_OUT_OF_RANGE = 32,
    PC_PRIM_UNDECODABLE = 33,
    /* Avro */
    PC_AVRO_TRUNCATED = 40,
    PC_AVRO_VARINT_TOO_LONG = 41,
    PC_AVRO_INT_OUT_OF_RANGE = 42,
    PC_AVRO_BAD_UNION_INDEX = 43,
    PC_AVRO_BAD_ENUM_INDEX = 44,
    PC_AVRO_INVALID_UTF8 = 45,
    PC_AVRO_TRAILING_BYTES = 46,
    PC_AVRO_NEGATIVE_LENGTH = 47,
    PC_AVRO_LENGTH_PAST_END = 48,
    PC_AVRO_BLOCK_COUNT_TOO_LARGE = 49,
    PC_AVRO_DECIMAL_OVERFLOW = 50,
    PC_AVRO_UNKNOWN_ENUM_SYMBOL = 51,
    PC_AVRO_UNRESOLVED_UNION_BRANCH = 52,
    PC_AVRO_NEGATIVE_BLOCK_SIZE = 53,
    PC_AVRO_BAD_BOOLEAN = 54,
    PC_AVRO_DEPTH_EXCEEDED = 55,
    PC_AVRO_DURATION_OUT_OF_RANGE = 56,
    PC_AVRO_OUTPUT_TOO_LARGE = 57,
    PC_AVRO_DECIMAL_PRECISION = 58,
    PC_AVRO_TOO_MANY_EMPTY_ITEMS = 59,
    PC_AVRO_NO_PYTHON_VALUE = 60, /* set by the one-value path in Python, never by a kernel */
    PC_AVRO_TIME_OUT_OF_RANGE = 61, /* a time-millis / time-micros value outside [0, one day) */
    /* JSON payloads (external JSON schemas; no kernel uses it yet) */
    PC_JSON_INVALID = 80,
    PC_JSON_UNEXPECTED_BYTE = 81,
    PC_JSON_TRUNCATED = 82,
    PC_JSON_WRONG_TYPE = 83,
    PC_JSON_MISSING_REQUIRED = 84,
    PC_JSON_NUMBER_RANGE = 85,
    PC_JSON_BAD_FORMAT = 86,
    PC_JSON_UNKNOWN_ENUM = 87,
    PC_JSON_DEPTH_EXCEEDED = 88,
    PC_JSON_INVALID_UTF8 = 89,
    /* schema lookups per row (set by the pipeline, never by a kernel) */
    PC_SCHEMA_NOT_FOUND = 90,
    PC_SCHEMA_UNRESOLVABLE = 91,
    PC_SCHEMA_OTHER_MESSAGE = 92,
    /* JSON constraints beyond the Arrow mapping (optional validation, set by formats/json) */
    PC_JSON_CONSTRAINT = 100,
    /* a JSON message holding more items of no size than the column builders take (set by the JSON kernels) */
    PC_JSON_TOO_MANY_EMPTY_ITEMS = 101,
    /* Protobuf payloads */
    PC_PROTO_TRUNCATED = 110,
    PC_PROTO_VARINT_TOO_LONG = 111,
    PC_PROTO_WRONG_WIRE_TYPE = 112,
    PC_PROTO_LENGTH_PAST_END = 113,
    PC_PROTO_INVALID_UTF8 = 114,
    PC_PROTO_DEPTH_EXCEEDED = 115,
    PC_PROTO_INVALID_TAG = 116,
    PC_PROTO_MISSING_REQUIRED = 117,
    PC_PROTO_VALUE_RANGE = 118,
    PC_PROTO_TOO_MANY_EMPTY_ITEMS = 119
} pc_status;

/* Where and why a kernel stopped. */
typedef struct {
    int32_t code;
    int64_t index;
    int64_t offset;
    int64_t detail;
} pc_error;

static inline int pc_fail(pc_error *err, int32_t code, int64_t index, int64_t offset, int64_t detail)
{
    err->code = code;
    err->index = index;
    err->offset = offset;
    err->detail = detail;
    return code;
}

#endif
