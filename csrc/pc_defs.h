/* Constants the kernels share with Python: protocol kinds, KeyValue modes, primitive kinds, Avro
 * slot kinds and op codes, Avro encode node codes and statuses, limits. Only constants, so every
 * compiled twin can include it (through _kernels/defs.pxd) without pulling in a decoder.
 *
 * pulsar_codec/_kernels/defs.py holds the same values for Python; tests/test_kernels_defs.py parses
 * this header and pc_status.h and checks the two agree, name by name (PC_X here is defs.X there;
 * the Avro names K_*, O_*, E_* are the same on both sides;
 * the JSON transcode codes are PC_J_* here and J_* there). */
#ifndef PC_DEFS_H
#define PC_DEFS_H

#include <stdint.h>

/* Registry wire-prefix protocols (pulsar_codec.wire.Protocol.kind) */
enum {
    PC_KIND_CONFLUENT = 1,
    PC_KIND_CONFLUENT_PROTOBUF = 2,
    PC_KIND_CONFLUENT_GUID = 3,
    PC_KIND_CONFLUENT_GUID_PROTOBUF = 4,
    PC_KIND_HORTONWORKS = 5,
    PC_KIND_APICURIO = 6,
    PC_KIND_APICURIO_V3 = 7,
    PC_KIND_AWS_GLUE = 8
};

/* AWS Glue Schema Registry prefix: header version byte, compression byte (none or zlib), then a
 * 16-byte schema version UUID; the body starts at byte 18 */
enum {
    PC_GLUE_HEADER_VERSION = 3,
    PC_GLUE_NO_COMPRESSION = 0,
    PC_GLUE_ZLIB = 5,
    PC_GLUE_PREFIX_SIZE = 18
};

/* Longest Protobuf message-index array a prefix may declare */
#define PC_MAX_INDEXES 100000

/* What a negative or zero length means in a two-part KeyValue layout */
enum {
    PC_MODE_INLINE = 1,     /* Java KeyValue: -1 is null */
    PC_MODE_INLINE_CPP = 2, /* C++ KeyValueImpl: -1 reads as empty */
    PC_MODE_SCHEMA_ID = 3   /* PIP-420 KeyValue schema id: 0 and -1 are "no id" */
};

/* Pulsar primitive payload kinds */
enum {
    PC_KIND_BOOLEAN = 1,
    PC_KIND_INT8 = 2,
    PC_KIND_INT16 = 3,
    PC_KIND_INT32 = 4,
    PC_KIND_INT64 = 5,
    PC_KIND_FLOAT = 6,
    PC_KIND_DOUBLE = 7,
    PC_KIND_TIME = 8,
    PC_KIND_INSTANT = 9,
    PC_KIND_LOCAL_DATE = 10,
    PC_KIND_LOCAL_TIME = 11,
    PC_KIND_LOCAL_DATE_TIME = 12
};

/* compile-time constants, so divisions by them become multiplications */
#define PC_MS_PER_DAY INT64_C(86400000)
#define PC_NS_PER_S INT64_C(1000000000)
#define PC_NS_PER_DAY INT64_C(86400000000000)

/* Avro column builder (slot) kinds */
enum {
    K_NULL = 0, K_BOOL = 1, K_I32 = 2, K_I64 = 3, K_F32 = 4, K_F64 = 5, K_RAW = 6, K_BIN = 7, K_LIST = 8,
    K_MAP = 9, K_STRUCT = 10, K_UNION = 11
};

/* Avro decode op codes (pulsar_codec.formats.avro.plan builds programs of them) */
enum {
    O_NULL = 1, O_BOOL = 2, O_INT = 3, O_LONG = 4, O_FLOAT = 5, O_DOUBLE = 6, O_INT_L = 7, O_INT_F = 8,
    O_INT_D = 9, O_LONG_F = 10, O_LONG_D = 11, O_FLOAT_D = 12, O_STRING = 13, O_BYTES = 14, O_FIXED = 15,
    O_ENUM = 16, O_DEC_BYTES = 17, O_DEC_FIXED = 18, O_DURATION = 19, O_RECORD = 20, O_ARRAY = 21, O_MAP = 22,
    O_UNION = 23, O_SELECT = 24, O_NULLFILL = 25, O_DEFAULT = 26, O_BRANCH_ERR = 27,
    /* a reader time-millis (int32 slot) / time-micros (int64 slot): 0 <= v < arg, else an error */
    O_TIME_MS = 28, O_TIME_US = 29,
    /* skips of writer-only data */
    O_SK_NOP = 30, O_SK_BOOL = 31, O_SK_VARINT = 32, O_SK_F32 = 33, O_SK_F64 = 34, O_SK_BYTES = 35,
    O_SK_FIXED = 36, O_SK_ARRAY = 37, O_SK_MAP = 38, O_SK_RECORD = 39, O_SK_UNION = 40
};

/* Items that occupy no bytes (null, empty records, fixed(0)) cannot be bounded by the bytes left,
 * so one message may hold at most this many of them in all its arrays and maps. */
#define PC_ZERO_SIZE_ITEM_LIMIT (1 << 20)

/* Avro encode node codes (pulsar_codec.formats.avro.encoder binds them to a batch) */
enum {
    E_NULL = 1, E_BOOL = 2, E_INT = 3, E_LONG = 4, E_FLOAT = 5, E_DOUBLE = 6, E_BYTES = 7, E_FIXED = 8,
    E_ENUM = 9, E_RECORD = 10, E_ARRAY = 11, E_MAP = 12, E_OPTION = 13, E_DEC_BYTES = 14, E_DEC_FIXED = 15,
    E_UNION = 16
};

/* Avro encode statuses (the encoder turns them into EncodeError) */
enum {
    PC_ENC_NULL_VALUE = 1,   /* null where the schema has no null */
    PC_ENC_NOT_NULL = 2,     /* a value where the schema is "null" */
    PC_ENC_INT_RANGE = 3,    /* outside the Avro int range */
    PC_ENC_FLOAT_RANGE = 4,  /* finite double that overflows a float */
    PC_ENC_FIXED_SIZE = 5,   /* fixed_size_binary width differs from the Avro fixed size */
    PC_ENC_ENUM_SYMBOL = 6,  /* a string that is not a symbol of the enum */
    PC_ENC_DECIMAL_SIZE = 7, /* unscaled decimal does not fit the Avro fixed */
    PC_ENC_TOO_LARGE = 8     /* output over 2 GiB (int32 offsets) */
};

/* JSON -> Avro transcode node codes (pulsar_codec.formats.json.mapping builds program trees of them) */
enum {
    PC_J_NULL = 1, PC_J_BOOL = 2, PC_J_INT = 3, PC_J_LONG = 4, PC_J_FLOAT = 5, PC_J_DOUBLE = 6,
    PC_J_STRING = 7, PC_J_BYTES_B64 = 8, PC_J_FIXED_B64 = 9, PC_J_ENUM = 10, PC_J_TIMESTAMP = 11,
    PC_J_DATE = 12, PC_J_TIME = 13, PC_J_TEXT = 14, PC_J_NULLABLE = 15, PC_J_ARRAY = 16, PC_J_MAP = 17,
    PC_J_OBJECT = 18, PC_J_TIME_MILLIS = 19, PC_J_TIME_MICROS = 20
};

/* Deepest nesting of JSON arrays and objects in one payload (skipped values included) */
#define PC_JSON_MAX_DEPTH 256

/* Protobuf -> Avro transcode node codes (pulsar_codec.formats.protobuf.mapping builds programs of them) */
enum {
    PC_P_INT32 = 1, PC_P_INT64 = 2, PC_P_UINT32 = 3, PC_P_UINT64 = 4, PC_P_SINT32 = 5, PC_P_SINT64 = 6,
    PC_P_FIXED32 = 7, PC_P_FIXED64 = 8, PC_P_SFIXED32 = 9, PC_P_SFIXED64 = 10, PC_P_FLOAT = 11,
    PC_P_DOUBLE = 12, PC_P_BOOL = 13, PC_P_STRING = 14, PC_P_BYTES = 15, PC_P_MESSAGE = 16,
    PC_P_TIMESTAMP = 17, PC_P_DURATION = 18, PC_P_RAW = 19
};

/* Protobuf message field shapes: how a field's occurrences become its Avro value */
enum {
    PC_PF_IMPLICIT = 1, PC_PF_OPTIONAL = 2, PC_PF_REQUIRED = 3, PC_PF_REPEATED = 4, PC_PF_MAP = 5,
    PC_PF_ONEOF = 6, PC_PF_CASE = 7
};

/* Deepest nesting of Protobuf messages (and unknown groups) in one payload, the root counting one */
#define PC_PROTO_MAX_DEPTH 100

#endif
