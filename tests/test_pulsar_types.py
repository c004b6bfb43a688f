"""Pulsar schema model and primitive encodings, on both twins.

Covers the type codes of spec §7.1, SchemaInfo / EncodeData / KeyValue SchemaInfo (§1.3, §2.1),
every primitive vector of §11.2, per-value and bulk round trips, bulk == per value, parity of the
twins on random and mutated bytes, error codes with index and offset, nulls, sliced / chunked /
empty inputs, charsets and the nanosecond-keeping datetime types.
"""

import ast
import datetime as dt
import math
import pickle
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_codec import keyvalue
from pulsar_codec import pulsar_types as pt
from pulsar_codec._kernels import _backend
from pulsar_codec.errors import (
    EncodeError,
    ErrorCode,
    PrimitiveDecodeError,
    SchemaError,
)
from pulsar_codec.pulsar_types import NanoDateTime, NanoTime, SchemaType

H = bytes.fromhex
UTC = dt.UTC
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
FIXED = [
    SchemaType.BOOLEAN,
    SchemaType.INT8,
    SchemaType.INT16,
    SchemaType.INT32,
    SchemaType.INT64,
    SchemaType.FLOAT,
    SchemaType.DOUBLE,
    SchemaType.DATE,
    SchemaType.TIME,
    SchemaType.TIMESTAMP,
    SchemaType.INSTANT,
    SchemaType.LOCAL_DATE,
    SchemaType.LOCAL_TIME,
    SchemaType.LOCAL_DATE_TIME,
]
WIDTH = {
    SchemaType.BOOLEAN: 1,
    SchemaType.INT8: 1,
    SchemaType.INT16: 2,
    SchemaType.INT32: 4,
    SchemaType.INT64: 8,
    SchemaType.FLOAT: 4,
    SchemaType.DOUBLE: 8,
    SchemaType.DATE: 8,
    SchemaType.TIME: 8,
    SchemaType.TIMESTAMP: 8,
    SchemaType.INSTANT: 12,
    SchemaType.LOCAL_DATE: 8,
    SchemaType.LOCAL_TIME: 8,
    SchemaType.LOCAL_DATE_TIME: 16,
}
NS_PER_DAY = 86_400_000_000_000


# -- type codes (§7.1) --------------------------------------------------------------------------

JAVA_AND_WIRE = {
    "NONE": (0, 0),
    "STRING": (1, 1),
    "JSON": (2, 2),
    "PROTOBUF": (3, 3),
    "AVRO": (4, 4),
    "BOOLEAN": (5, 5),
    "INT8": (6, 6),
    "INT16": (7, 7),
    "INT32": (8, 8),
    "INT64": (9, 9),
    "FLOAT": (10, 10),
    "DOUBLE": (11, 11),
    "DATE": (12, 12),
    "TIME": (13, 13),
    "TIMESTAMP": (14, 14),
    "KEY_VALUE": (15, 15),
    "INSTANT": (16, 16),
    "LOCAL_DATE": (17, 17),
    "LOCAL_TIME": (18, 18),
    "LOCAL_DATE_TIME": (19, 19),
    "PROTOBUF_NATIVE": (20, 20),
    "EXTERNAL": (21, 22),
    "BYTES": (-1, 0),
    "AUTO": (-2, 0),
    "AUTO_CONSUME": (-3, 21),
    "AUTO_PUBLISH": (-4, 0),
}


def test_schema_type_codes():
    assert {t.name: (t.value, t.wire) for t in SchemaType} == JAVA_AND_WIRE
    assert SchemaType.EXTERNAL.value == 21 and SchemaType.EXTERNAL.wire == 22
    assert SchemaType(8) is SchemaType.INT32 and SchemaType(-1) is SchemaType.BYTES


def test_schema_type_lookups():
    assert SchemaType.from_wire(22) is SchemaType.EXTERNAL
    assert SchemaType.from_wire(21) is SchemaType.AUTO_CONSUME
    assert SchemaType.from_wire(0) is SchemaType.NONE
    assert SchemaType.from_wire(15) is SchemaType.KEY_VALUE
    for t in SchemaType:
        if t.value >= 0 and t is not SchemaType.EXTERNAL:
            assert SchemaType.from_wire(t.wire) is t
    with pytest.raises(ValueError):
        SchemaType.from_wire(23)
    for name in ("INT32", "int32", "Int32"):
        assert SchemaType.from_name(name) is SchemaType.INT32
    for name in ("KEY_VALUE", "KeyValue", "keyvalue"):
        assert SchemaType.from_name(name) is SchemaType.KEY_VALUE
    assert SchemaType.from_name("LocalDateTime") is SchemaType.LOCAL_DATE_TIME
    assert SchemaType.from_name("Bool") is SchemaType.BOOLEAN
    assert SchemaType.from_name("ProtobufNative") is SchemaType.PROTOBUF_NATIVE
    assert SchemaType.parse("avro") is SchemaType.AVRO and SchemaType.parse(21) is SchemaType.EXTERNAL
    with pytest.raises(ValueError):
        SchemaType.from_name("INT128")
    with pytest.raises(TypeError):
        SchemaType.parse(True)


def test_schema_type_classes():
    assert SchemaType.INT32.is_primitive and SchemaType.BYTES.is_primitive and SchemaType.NONE.is_primitive
    assert not SchemaType.AVRO.is_primitive and not SchemaType.KEY_VALUE.is_primitive
    assert not SchemaType.EXTERNAL.is_primitive
    assert SchemaType.PROTOBUF_NATIVE.is_struct and SchemaType.JSON.is_struct and not SchemaType.STRING.is_struct


# -- SchemaInfo, EncodeData ---------------------------------------------------------------------


def test_schema_info_coercion():
    info = pt.SchemaInfo("n", "avro", '{"type": "string"}', {"a": 1})
    assert info.type is SchemaType.AVRO and info.schema == b'{"type": "string"}'
    assert info.properties == {"a": "1"} and info.schema_definition == '{"type": "string"}'
    assert pt.SchemaInfo("x", 8).type is SchemaType.INT32
    assert pt.SchemaInfo("x", SchemaType.INT32, None, None) == pt.SchemaInfo("x", SchemaType.INT32)


def test_encode_data():
    assert pt.EncodeData(b"d", b"\x01").has_schema_id()
    assert not pt.EncodeData(b"d", b"").has_schema_id()
    assert not pt.EncodeData(b"d").has_schema_id()
    assert pt.EncodeData.is_valid_schema_id(b"x") and not pt.EncodeData.is_valid_schema_id(None)


def test_external_and_primitive_schema_infos():
    assert pt.external_schema_info() == pt.SchemaInfo("", SchemaType.EXTERNAL, b"", {})
    names = {
        SchemaType.INT32: "INT32",
        SchemaType.INT16: "INT16",
        SchemaType.BOOLEAN: "Boolean",
        SchemaType.FLOAT: "Float",
        SchemaType.DATE: "Date",
        SchemaType.INSTANT: "Instant",
        SchemaType.LOCAL_DATE_TIME: "LocalDateTime",
        SchemaType.STRING: "String",
        SchemaType.BYTES: "Bytes",
    }
    for t, name in names.items():
        info = pt.primitive_schema_info(t)
        assert (info.name, info.type, info.schema, info.properties) == (name, t, b"", {})
    assert pt.primitive_schema_info("STRING", charset="UTF-16").properties == {"__charset": "UTF-16"}
    with pytest.raises(SchemaError):
        pt.primitive_schema_info("AVRO")
    with pytest.raises(SchemaError):
        pt.primitive_schema_info("INT32", charset="UTF-8")


def test_keyvalue_schema_info_layout():
    key = pt.primitive_schema_info("STRING")
    value = pt.SchemaInfo("User", "AVRO", b'{"type":"record"}', {"b": "2", "a": "<&>='"})
    info = pt.encode_keyvalue_schema_info(key, value, "SEPARATED")
    assert info.name == "KeyValue" and info.type is SchemaType.KEY_VALUE
    assert info.schema == H("00 00 00 00 00 00 00 11") + b'{"type":"record"}'
    assert info.properties == {
        "key.schema.name": "String",
        "key.schema.type": "STRING",
        "key.schema.properties": "{}",
        "value.schema.name": "User",
        "value.schema.type": "AVRO",
        # Gson: sorted keys, compact, HTML-safe escapes
        "value.schema.properties": '{"a":"\\u003c\\u0026\\u003e\\u003d\\u0027","b":"2"}',
        "kv.encoding.type": "SEPARATED",
    }
    assert pt.decode_keyvalue_schema_info(info) == (key, value)
    assert pt.decode_keyvalue_encoding_type(info) is pt.KeyValueEncodingType.SEPARATED
    inline = pt.encode_keyvalue_schema_info(key, value, name="kv")
    assert inline.name == "kv" and pt.decode_keyvalue_encoding_type(inline) is pt.KeyValueEncodingType.INLINE


def test_keyvalue_schema_info_defaults():
    bare = pt.SchemaInfo("KeyValue", "KEY_VALUE", keyvalue.encode_inline(b"", b"{}"), {})
    key, value = pt.decode_keyvalue_schema_info(bare)
    assert key == pt.SchemaInfo("", SchemaType.BYTES, b"", {})  # missing sub type -> BYTES
    assert value == pt.SchemaInfo("", SchemaType.BYTES, b"{}", {})
    assert pt.decode_keyvalue_encoding_type(bare) is pt.KeyValueEncodingType.INLINE  # missing -> INLINE
    nulls = pt.SchemaInfo(
        "KeyValue",
        "KEY_VALUE",
        H("FF FF FF FF FF FF FF FF"),
        {"key.schema.type": "INT32", "value.schema.properties": '{"n": 5, "s": "x"}'},
    )
    key, value = pt.decode_keyvalue_schema_info(nulls)
    assert key.type is SchemaType.INT32 and key.schema == b"" and value.properties == {"n": "5", "s": "x"}
    with pytest.raises(SchemaError):
        pt.decode_keyvalue_schema_info(pt.primitive_schema_info("INT32"))
    with pytest.raises(SchemaError):
        pt.decode_keyvalue_schema_info(
            pt.SchemaInfo("k", "KEY_VALUE", H("00 00 00 00 00 00 00 00"), {"key.schema.type": "NOPE"})
        )
    with pytest.raises(SchemaError):
        pt.decode_keyvalue_encoding_type(pt.SchemaInfo("k", "KEY_VALUE", b"", {"kv.encoding.type": "BOTH"}))
    assert pt.KeyValueEncodingType.parse("separated") is pt.KeyValueEncodingType.SEPARATED


@SETTINGS
@given(
    props=st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=4),
    schema=st.binary(max_size=30),
    name=st.text(max_size=10),
    sub=st.sampled_from(list(SchemaType)),
)
def test_keyvalue_schema_info_round_trip(props, schema, name, sub):
    key = pt.SchemaInfo(name, sub, schema, props)
    value = pt.primitive_schema_info("INT64")
    assert pt.decode_keyvalue_schema_info(pt.encode_keyvalue_schema_info(key, value)) == (key, value)


# -- spec §11.2 vectors ---------------------------------------------------------------------------

VECTORS = [
    (SchemaType.INT32, 1, H("00 00 00 01")),
    (SchemaType.INT16, -2, H("FF FE")),
    (SchemaType.INT64, -1, H("FF FF FF FF FF FF FF FF")),
    (SchemaType.FLOAT, 1.0, H("3F 80 00 00")),
    (SchemaType.DOUBLE, 1.0, H("3F F0 00 00 00 00 00 00")),
    (SchemaType.BOOLEAN, True, H("01")),
    (
        SchemaType.INSTANT,
        NanoDateTime(1970, 1, 1, 0, 0, 1, tzinfo=UTC, nanosecond=5),
        H("00 00 00 00 00 00 00 01 00 00 00 05"),
    ),
    (SchemaType.LOCAL_DATE_TIME, dt.datetime(1970, 1, 2, 1, 0), H("00 00 00 00 00 00 00 01 00 00 03 46 30 B8 A0 00")),
    (SchemaType.INT64, 3, H("00 00 00 00 00 00 00 03")),  # schema_version 3
]


@pytest.mark.parametrize("schema_type, value, data", VECTORS)
def test_primitive_vectors(backend, schema_type, value, data):
    assert pt.encode(schema_type, value) == data
    assert pt.decode(schema_type, data) == value
    arr = pt.decode_array(schema_type, [data, None])
    assert arr.type == pt.arrow_type(schema_type)
    assert pt.encode_array(schema_type, arr).to_pylist() == [data, None]


def test_vector_arrow_values(backend):
    assert pt.decode_array("INSTANT", [H("00 00 00 00 00 00 00 01 00 00 00 05")]).cast(pa.int64()).to_pylist() == [
        1_000_000_005
    ]
    ldt = pt.decode_array("LOCAL_DATE_TIME", [H("00 00 00 00 00 00 00 01 00 00 03 46 30 B8 A0 00")])
    assert ldt.cast(pa.int64()).to_pylist() == [90_000 * 10**9]
    assert pt.decode_array("BOOLEAN", [H("01"), H("00"), H("7F"), None]).to_pylist() == [True, False, True, None]


# -- per-value semantics ----------------------------------------------------------------------------


def test_boolean_reads_any_nonzero_as_true():
    assert pt.decode("BOOLEAN", b"\x02") is True and pt.decode("BOOLEAN", b"\x00") is False
    assert pt.encode("BOOLEAN", False) == b"\x00"


def test_dictionary_columns_encode_their_values():
    """A dictionary-encoded column writes its values, as the Avro and JSON encoders take it (probe23)."""
    words = pa.chunked_array([pa.array(["x", "y"]).dictionary_encode(), pa.array(["z", None]).dictionary_encode()])
    assert pt.encode_array("STRING", words).to_pylist() == [b"x", b"y", b"z", None]
    assert pt.encode_array("INT32", pa.array([1, 2]).dictionary_encode()).to_pylist() == [H("00000001"), H("00000002")]
    latin = {"__charset": "ISO-8859-1"}
    assert pt.encode_array("STRING", pa.array(["caf\u00e9"]).dictionary_encode(), properties=latin).to_pylist() == [
        b"caf\xe9"
    ]


def test_double_nan_is_canonical_float_keeps_payload(backend):
    weird = struct.unpack(">d", H("7F F0 00 00 00 00 00 01"))[0]
    assert math.isnan(weird)
    assert pt.encode("DOUBLE", weird) == H("7F F8 00 00 00 00 00 00")
    assert pt.encode_array("DOUBLE", pa.array([weird, 1.5])).to_pylist()[0] == H("7F F8 00 00 00 00 00 00")
    payload = H("7F C0 00 01")
    f = pt.decode_array("FLOAT", [payload])
    assert np.frombuffer(f.buffers()[1], dtype=np.uint32)[0] == 0x7FC00001
    assert pt.encode_array("FLOAT", f).to_pylist() == [payload]
    assert pt.encode("FLOAT", np.frombuffer(H("01 00 C0 7F"), dtype=np.float32)[0]) == payload
    assert pt.decode_array("DOUBLE", [H("7F F0 00 00 00 00 00 01")]).buffers()[1].to_pybytes() == H(
        "01 00 00 00 00 00 F0 7F"
    )


def test_temporal_python_types():
    assert pt.decode("DATE", H("00 00 00 00 00 00 03 E8")) == dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert pt.decode("TIMESTAMP", H("FF FF FF FF FF FF FF FF")) == dt.datetime(
        1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC
    )
    # java.sql.Time: the UTC time of day of the instant; a date part is dropped
    assert pt.decode("TIME", pt.encode("INT64", 86_400_000 + 3_600_000 + 5)) == dt.time(1, 0, 0, 5000)
    assert pt.decode("TIME", pt.encode("INT64", -1)) == dt.time(23, 59, 59, 999000)
    assert pt.decode("LOCAL_DATE", pt.encode("INT64", -1)) == dt.date(1969, 12, 31)
    t = pt.decode("LOCAL_TIME", pt.encode("INT64", 3_600_000_000_123))
    assert isinstance(t, NanoTime) and (t.hour, t.microsecond, t.nanosecond) == (1, 0, 123)
    i = pt.decode("INSTANT", struct.pack(">qi", -1, 1_500_000_001))  # nanos beyond a second normalise
    assert i == NanoDateTime(1970, 1, 1, 0, 0, 0, 500000, tzinfo=UTC, nanosecond=1)


def test_encode_accepts_ints_in_the_arrow_unit():
    assert pt.encode("DATE", 1000) == pt.encode("DATE", dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC))
    assert pt.encode("TIMESTAMP", dt.datetime(1970, 1, 1, 0, 0, 1)) == pt.encode("INT64", 1000)  # naive = UTC
    assert pt.encode("INSTANT", 1_000_000_005) == H("00 00 00 00 00 00 00 01 00 00 00 05")
    assert pt.encode("INSTANT", -1) == struct.pack(">qi", -1, 999_999_999)
    assert pt.encode("LOCAL_DATE", 1) == pt.encode("LOCAL_DATE", dt.date(1970, 1, 2))
    assert pt.encode("LOCAL_TIME", 5) == pt.encode("INT64", 5)
    assert pt.encode("LOCAL_DATE_TIME", -1) == struct.pack(">qq", -1, NS_PER_DAY - 1)
    assert pt.encode("TIME", 123) == pt.encode("INT64", 123)


def test_encode_zones_and_nanoseconds():
    plus2 = dt.timezone(dt.timedelta(hours=2))
    assert pt.encode("INSTANT", dt.datetime(1970, 1, 1, 2, tzinfo=plus2)) == pt.encode("INSTANT", 0)
    # LOCAL_DATE_TIME keeps the wall clock of an aware value
    assert pt.encode("LOCAL_DATE_TIME", dt.datetime(1970, 1, 2, 1, tzinfo=plus2)) == VECTORS[7][2]
    assert pt.encode("TIME", dt.time(3, 0, tzinfo=plus2)) == pt.encode("INT64", 3_600_000)
    assert pt.encode("INSTANT", NanoDateTime(1970, 1, 1, tzinfo=UTC, nanosecond=7)) == struct.pack(">qi", 0, 7)

    class PandasLike(dt.datetime):  # pandas.Timestamp-style nanosecond attribute
        nanosecond = 9

    assert pt.encode("LOCAL_DATE_TIME", PandasLike(1970, 1, 1)) == struct.pack(">qq", 0, 9)
    with pytest.raises(EncodeError):
        pt.encode("LOCAL_TIME", dt.time(1, tzinfo=UTC))


@pytest.mark.parametrize(
    "schema_type, value",
    [
        ("INT8", 128),
        ("INT8", -129),
        ("INT16", 2**15),
        ("INT32", -(2**31) - 1),
        ("INT64", 2**63),
        ("INT32", 1.0),
        ("INT32", True),
        ("BOOLEAN", 1),
        ("FLOAT", 1e300),
        ("FLOAT", "1"),
        ("STRING", b"x"),
        ("BYTES", "x"),
        ("BYTES", 5),
        ("DATE", dt.date(2020, 1, 1)),
        ("LOCAL_DATE", dt.datetime(2020, 1, 1)),
        ("LOCAL_TIME", NS_PER_DAY),
        ("LOCAL_TIME", -1),
        ("INSTANT", 2**63 * 10**9),
        ("DATE", 2**63),
        ("TIME", "noon"),
    ],
)
def test_encode_errors(schema_type, value):
    with pytest.raises(EncodeError):
        pt.encode(schema_type, value)


def test_non_primitive_types_are_refused():
    for t in ("AVRO", "KEY_VALUE", "EXTERNAL", "AUTO_CONSUME"):
        with pytest.raises(SchemaError):
            pt.encode(t, b"")
        with pytest.raises(SchemaError):
            pt.decode_array(t, [])
    assert pt.encode("NONE", b"x") == b"x" and pt.decode("NONE", b"x") == b"x"
    assert pt.encode("INT32", None) is None and pt.decode("INT32", None) is None


def test_charsets():
    props = {"__charset": "ISO-8859-1"}
    assert pt.encode("STRING", "caf\u00e9", properties=props) == b"caf\xe9"
    assert pt.decode("STRING", b"caf\xe9", properties=props) == "caf\u00e9"
    assert pt.decode_array("STRING", [b"caf\xe9", None], properties=props).to_pylist() == ["caf\u00e9", None]
    assert pt.encode_array("STRING", pa.array(["caf\u00e9", None]), properties=props).to_pylist() == [b"caf\xe9", None]
    u16 = {"__charset": "UTF-16BE"}
    assert pt.decode("STRING", H("00 61 00 62"), properties=u16) == "ab"
    with pytest.raises(PrimitiveDecodeError) as info:
        pt.decode_array("STRING", [H("00 61"), H("D8 00")], properties=u16)
    assert (info.value.code, info.value.index, info.value.offset) == (ErrorCode.PRIM_UNDECODABLE, 1, 0)
    assert "utf-16-be" in str(info.value)
    with pytest.raises(EncodeError):
        pt.encode("STRING", "\u20ac", properties={"__charset": "US-ASCII"})
    with pytest.raises(SchemaError):
        pt.decode("STRING", b"x", properties={"__charset": "klingon"})
    for codec in ("rot13", "hex", "base64"):  # Python codecs, but bytes-to-bytes ones: no charsets
        with pytest.raises(SchemaError, match="unknown charset"):
            pt.decode("STRING", b"abc", properties={"__charset": codec})
        with pytest.raises(SchemaError, match="unknown charset"):
            pt.decode_array("STRING", [b"abc"], properties={"__charset": codec})
    assert pt.decode("STRING", b"\xe2\x82\xac", properties={"__charset": "UTF8"}) == "\u20ac"


# -- errors ---------------------------------------------------------------------------------------

LENGTH_ERRORS = [(t, w - 1) for t, w in WIDTH.items()] + [(t, w + 3) for t, w in WIDTH.items()]


@pytest.mark.parametrize("schema_type, size", LENGTH_ERRORS)
def test_bad_length(backend, schema_type, size):
    width = WIDTH[schema_type]
    with pytest.raises(PrimitiveDecodeError) as info:
        pt.decode(schema_type, bytes(size))
    exc = info.value
    assert (exc.code, exc.index, exc.offset, exc.detail) == (ErrorCode.PRIM_BAD_LENGTH, 0, min(size, width), size)
    assert (
        str(exc) == f"{schema_type.name} value of {size} bytes, expected {width} (message 0, byte {min(size, width)})"
    )
    good = bytes(width)
    with pytest.raises(PrimitiveDecodeError) as info:
        pt.decode_array(schema_type, [good, None, bytes(size), bytes(size)])
    assert (info.value.code, info.value.index, info.value.offset) == (ErrorCode.PRIM_BAD_LENGTH, 2, min(size, width))
    assert str(info.value) == str(exc).replace("(message 0,", "(message 2,")


def test_empty_payload_is_a_length_error(backend):
    with pytest.raises(PrimitiveDecodeError) as info:
        pt.decode_array("INT32", [b""])
    assert info.value.offset == 0 and info.value.detail == 0


OUT_OF_RANGE = [
    ("LOCAL_TIME", struct.pack(">q", NS_PER_DAY), 0, NS_PER_DAY),
    ("LOCAL_TIME", struct.pack(">q", -1), 0, -1),
    ("LOCAL_DATE_TIME", struct.pack(">qq", 0, NS_PER_DAY), 8, NS_PER_DAY),
    ("LOCAL_DATE_TIME", struct.pack(">qq", 2**40, -5), 8, -5),
]


@pytest.mark.parametrize("schema_type, data, offset, detail", OUT_OF_RANGE)
def test_out_of_range_everywhere(backend, schema_type, data, offset, detail):
    for call in (lambda: pt.decode(schema_type, data), lambda: pt.decode_array(schema_type, [None, data])):
        with pytest.raises(PrimitiveDecodeError) as info:
            call()
        assert (info.value.code, info.value.offset, info.value.detail) == (ErrorCode.PRIM_OUT_OF_RANGE, offset, detail)
        assert "time of day" in str(info.value)


BULK_OUT_OF_RANGE = [
    ("INSTANT", struct.pack(">qi", 9_223_372_037, 0), 9_223_372_037),
    ("INSTANT", struct.pack(">qi", 9_223_372_036, 854_775_808), 9_223_372_036),
    ("INSTANT", struct.pack(">qi", -9_223_372_037, 145_224_191), -9_223_372_037),
    ("LOCAL_DATE_TIME", struct.pack(">qq", 106_752, 0), 106_752),
    ("LOCAL_DATE_TIME", struct.pack(">qq", -106_752, 0), -106_752),
    # the smallest int64 seconds / days (np.abs wraps it to itself: the pure twin once let it through)
    ("INSTANT", struct.pack(">qi", -(2**63), 0), -(2**63)),
    ("INSTANT", struct.pack(">qi", -(2**63), -(2**31)), -(2**63)),
    ("LOCAL_DATE_TIME", struct.pack(">qq", -(2**63), 0), -(2**63)),
    ("LOCAL_DATE", struct.pack(">q", 2**31), 2**31),
    ("LOCAL_DATE", struct.pack(">q", -(2**31) - 1), -(2**31) - 1),
]


@pytest.mark.parametrize("schema_type, data, detail", BULK_OUT_OF_RANGE)
def test_bulk_out_of_range(backend, schema_type, data, detail):
    with pytest.raises(PrimitiveDecodeError) as info:
        pt.decode_array(schema_type, [None, data])
    assert (info.value.code, info.value.index, info.value.offset, info.value.detail) == (
        ErrorCode.PRIM_OUT_OF_RANGE,
        1,
        0,
        detail,
    )
    assert str(pt.arrow_type(schema_type)) in str(info.value)


BULK_EDGES = [
    ("INSTANT", struct.pack(">qi", 9_223_372_036, 854_775_807), 2**63 - 1),
    ("INSTANT", struct.pack(">qi", -9_223_372_037, 145_224_192), -(2**63)),
    ("INSTANT", struct.pack(">qi", 9_223_372_037, -1_000_000_000), 9_223_372_036 * 10**9),
    ("LOCAL_DATE_TIME", struct.pack(">qq", 106_751, 85_636_854_775_807), 2**63 - 1),
    ("LOCAL_DATE_TIME", struct.pack(">qq", -106_752, 763_145_224_192), -(2**63)),
]


@pytest.mark.parametrize("schema_type, data, ns", BULK_EDGES)
def test_bulk_edges_fit(backend, schema_type, data, ns):
    assert pt.decode_array(schema_type, [data]).cast(pa.int64()).to_pylist() == [ns]


def test_per_value_range_is_datetimes():
    with pytest.raises(PrimitiveDecodeError) as info:
        pt.decode("DATE", struct.pack(">q", 2**62))
    assert info.value.code == ErrorCode.PRIM_OUT_OF_RANGE and "datetime.datetime" in str(info.value)
    with pytest.raises(PrimitiveDecodeError):
        pt.decode("LOCAL_DATE", struct.pack(">q", 10**9))
    with pytest.raises(PrimitiveDecodeError):
        pt.decode("INSTANT", struct.pack(">qi", 2**62, 0))
    # beyond timestamp[ns] but inside datetime: fine per value
    assert pt.decode("INSTANT", struct.pack(">qi", 10**10, 0)).year == 2286


UTF8_CASES = [
    (b"ok", -1),
    (b"\xc3\xa9", -1),
    (b"\xf0\x9f\x98\x80", -1),
    (b"\xef\xbb\xbf", -1),
    (b"\xf4\x8f\xbf\xbf", -1),
    (b"a\x80", 1),
    (b"\xc0\xaf", 0),
    (b"\xc1\xbf", 0),
    (b"\xe0\x80\xaf", 0),
    (b"\xed\xa0\x80", 0),
    (b"\xf0\x80\x80\xaf", 0),
    (b"\xf4\x90\x80\x80", 0),
    (b"\xf5\x80\x80\x80", 0),
    (b"abc\xe2\x82", 3),
    (b"\xe2\x28\xa1", 0),
    (b"x\xe2\x82\x28", 1),
    (b"12345678\xff", 8),
    (b"12345678901234\xc3", 14),
]


@pytest.mark.parametrize("data, bad", UTF8_CASES)
def test_utf8_validation(backend, data, bad):
    if bad < 0:
        assert pt.decode_array("STRING", [data]).to_pylist() == [data.decode()]
        return
    with pytest.raises(PrimitiveDecodeError) as info:
        pt.decode_array("STRING", [b"fine", None, data])
    assert (info.value.code, info.value.index, info.value.offset) == (ErrorCode.PRIM_INVALID_UTF8, 2, bad)
    with pytest.raises(PrimitiveDecodeError) as single:
        pt.decode("STRING", data)
    assert single.value.offset == bad


def test_utf8_split_character_across_rows(backend):
    # each row alone is invalid although the concatenated buffer is valid UTF-8
    with pytest.raises(PrimitiveDecodeError) as info:
        pt.decode_array("STRING", [b"a", b"\xc3", b"\xa9"])
    assert (info.value.index, info.value.offset) == (1, 0)


# -- input shapes ---------------------------------------------------------------------------------


def test_input_shapes(backend):
    values = list(range(-5, 15))
    payloads = [None if v % 4 == 0 else pt.encode("INT32", v) for v in values]
    expected = [None if p is None else v for v, p in zip(values, payloads)]
    arr = pa.array(payloads, pa.binary())
    for shape in (
        payloads,
        arr,
        arr.cast(pa.large_binary()),
        arr.cast(pa.binary_view()),
        pa.chunked_array([arr.slice(0, 3), arr.slice(3, 0), arr.slice(3)]),
    ):
        out = pt.decode_array("INT32", shape)
        out.validate(full=True)
        assert out.to_pylist() == expected
    assert pt.decode_array("INT32", arr.slice(5, 6)).to_pylist() == expected[5:11]
    strings = pa.array(["a", None, "\u00e9t\u00e9", ""], pa.string())
    for shape in (strings, strings.cast(pa.binary()), strings.slice(1), pa.chunked_array([strings[:1], strings[1:]])):
        got = pt.decode_array("STRING", shape)
        got.validate(full=True)
        assert got.to_pylist() == strings.to_pylist()[-len(shape) :] if len(shape) < 4 else strings.to_pylist()
    assert pt.decode_array("BYTES", strings).to_pylist() == [
        None if s is None else s.encode() for s in strings.to_pylist()
    ]


def test_string_decode_is_zero_copy(backend):
    arr = pa.array([b"hello", b"world"], pa.binary())
    out = pt.decode_array("STRING", arr)
    assert out.type == pa.string() and out.buffers()[2].address == arr.buffers()[2].address


def test_empty_and_all_null(backend):
    for t in FIXED + [SchemaType.STRING, SchemaType.BYTES]:
        for empty in ([], pa.array([], pa.binary()), pa.chunked_array([], pa.binary())):
            out = pt.decode_array(t, empty)
            assert len(out) == 0 and out.type == pt.arrow_type(t)
        out = pt.decode_array(t, [None, None])
        assert out.to_pylist() == [None, None] and out.type == pt.arrow_type(t)
        assert len(pt.encode_array(t, pa.array([], pt.arrow_type(t)))) == 0
        assert pt.encode_array(t, pa.array([None], pt.arrow_type(t))).to_pylist() == [None]


def test_encode_array_sources():
    ts = pa.array([1_500, None, -1], pa.timestamp("us", tz="Europe/Paris"))
    assert pt.decode_array("TIMESTAMP", pt.encode_array("TIMESTAMP", ts)).cast(pa.int64()).to_pylist() == [1, None, -1]
    assert pt.encode_array("INSTANT", ts).to_pylist()[0] == struct.pack(">qi", 0, 1_500_000)
    local = pt.encode_array("LOCAL_DATE_TIME", pa.array([0], pa.timestamp("s", tz="+02:00")))
    assert local.to_pylist() == [struct.pack(">qq", 0, 2 * 3600 * 10**9)]
    assert pt.encode_array("DATE", pa.array([1], pa.date32())).to_pylist() == [pt.encode("INT64", 86_400_000)]
    assert pt.encode_array("LOCAL_DATE", pa.array([86_400_000 * 3], pa.date64())).to_pylist() == [pt.encode("INT64", 3)]
    assert pt.encode_array("TIME", pa.array([1_000_001], pa.time64("us"))).to_pylist() == [pt.encode("INT64", 1000)]
    assert pt.encode_array("LOCAL_TIME", pa.array([2], pa.time32("s"))).to_pylist() == [pt.encode("INT64", 2 * 10**9)]
    assert pt.encode_array("INT16", pa.array([3], pa.uint8())).to_pylist() == [H("00 03")]
    assert pt.encode_array("DOUBLE", pa.array([2], pa.int32())).to_pylist() == [pt.encode("DOUBLE", 2.0)]
    assert pt.encode_array("INT32", [1, None]).to_pylist() == [H("00 00 00 01"), None]
    assert pt.encode_array("STRING", pa.chunked_array([["a"], ["b"]])).to_pylist() == [b"a", b"b"]


@pytest.mark.parametrize(
    "schema_type, values",
    [
        ("INT8", pa.array([1, 200], pa.int32())),
        ("INT64", pa.array([2**64 - 1], pa.uint64())),
        ("FLOAT", pa.array([1.0, 1e300])),
        ("LOCAL_TIME", pa.array([-1], pa.int64())),
        ("INSTANT", pa.array([2**62], pa.timestamp("s"))),
        ("INT32", pa.array(["1"])),
        ("BOOLEAN", pa.array([1])),
        ("STRING", pa.array([b"x"])),
        ("DATE", pa.array([1.0])),
        ("INT32", [1, "x"]),
    ],
)
def test_encode_array_errors(schema_type, values):
    with pytest.raises(EncodeError) as info:
        pt.encode_array(schema_type, values)
    if schema_type in ("INT8", "FLOAT"):
        assert info.value.index == 1


# -- round trips and parity -----------------------------------------------------------------------


def ms_floor(d):
    return d.replace(microsecond=d.microsecond // 1000 * 1000)


def nano_dt(d, ns):
    return NanoDateTime(
        d.year, d.month, d.day, d.hour, d.minute, d.second, d.microsecond, tzinfo=d.tzinfo, nanosecond=ns
    )


naive = st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30))
aware = naive.map(lambda d: d.replace(tzinfo=UTC))
VALUES = {
    SchemaType.BOOLEAN: st.booleans(),
    SchemaType.INT8: st.integers(-128, 127),
    SchemaType.INT16: st.integers(-(2**15), 2**15 - 1),
    SchemaType.INT32: st.integers(-(2**31), 2**31 - 1),
    SchemaType.INT64: st.integers(-(2**63), 2**63 - 1),
    SchemaType.FLOAT: st.floats(width=32, allow_nan=False),
    SchemaType.DOUBLE: st.floats(allow_nan=False),
    SchemaType.STRING: st.text(),
    SchemaType.BYTES: st.binary(),
    SchemaType.DATE: aware.map(ms_floor),
    SchemaType.TIMESTAMP: aware.map(ms_floor),
    SchemaType.TIME: st.times().map(ms_floor),
    SchemaType.INSTANT: st.builds(nano_dt, aware, st.integers(0, 999)),
    SchemaType.LOCAL_DATE: st.dates(),
    SchemaType.LOCAL_TIME: st.builds(
        lambda t, ns: NanoTime(t.hour, t.minute, t.second, t.microsecond, nanosecond=ns),
        st.times(),
        st.integers(0, 999),
    ),
    SchemaType.LOCAL_DATE_TIME: st.builds(nano_dt, naive, st.integers(0, 999)),
}


@SETTINGS
@given(data=st.data(), schema_type=st.sampled_from(sorted(VALUES, key=lambda t: t.value)))
def test_per_value_round_trip(data, schema_type):
    value = data.draw(VALUES[schema_type])
    encoded = pt.encode(schema_type, value)
    if schema_type in WIDTH:
        assert len(encoded) == WIDTH[schema_type]
    back = pt.decode(schema_type, encoded)
    assert back == value
    assert type(back) is type(value) or schema_type in (SchemaType.LOCAL_DATE_TIME,)


ARROW_INTS = {
    SchemaType.DATE: (pa.timestamp("ms", tz="UTC"), -(2**63), 2**63 - 1),
    SchemaType.TIMESTAMP: (pa.timestamp("ms", tz="UTC"), -(2**63), 2**63 - 1),
    SchemaType.TIME: (pa.time32("ms"), 0, 86_399_999),
    SchemaType.INSTANT: (pa.timestamp("ns", tz="UTC"), -(2**63), 2**63 - 1),
    SchemaType.LOCAL_DATE: (pa.date32(), -(2**31), 2**31 - 1),
    SchemaType.LOCAL_TIME: (pa.time64("ns"), 0, NS_PER_DAY - 1),
    SchemaType.LOCAL_DATE_TIME: (pa.timestamp("ns"), -(2**63), 2**63 - 1),
    SchemaType.INT8: (pa.int8(), -128, 127),
    SchemaType.INT16: (pa.int16(), -(2**15), 2**15 - 1),
    SchemaType.INT32: (pa.int32(), -(2**31), 2**31 - 1),
    SchemaType.INT64: (pa.int64(), -(2**63), 2**63 - 1),
}


def arrow_column(draw, schema_type):
    if schema_type in ARROW_INTS:
        typ, lo, hi = ARROW_INTS[schema_type]
        values = draw(st.lists(st.one_of(st.none(), st.integers(lo, hi)), max_size=25))
        storage = pa.array(values, pa.int64()).cast(pa.int32() if typ.bit_width == 32 else pa.int64())
        return storage.view(typ) if typ.bit_width in (32, 64) and not pa.types.is_integer(typ) else storage.cast(typ)
    if schema_type is SchemaType.BOOLEAN:
        return pa.array(draw(st.lists(st.one_of(st.none(), st.booleans()), max_size=25)), pa.bool_())
    if schema_type is SchemaType.FLOAT:
        bits = draw(st.lists(st.one_of(st.none(), st.integers(0, 2**32 - 1)), max_size=25))
        raw = np.array([b or 0 for b in bits], dtype=np.uint32).view(np.float32)
        return pa.array(raw, pa.float32(), mask=np.array([b is None for b in bits], dtype=bool))
    if schema_type is SchemaType.DOUBLE:
        return pa.array(draw(st.lists(st.one_of(st.none(), st.floats(allow_nan=False)), max_size=25)), pa.float64())
    if schema_type is SchemaType.STRING:
        return pa.array(draw(st.lists(st.one_of(st.none(), st.text(max_size=10)), max_size=25)), pa.string())
    return pa.array(draw(st.lists(st.one_of(st.none(), st.binary(max_size=10)), max_size=25)), pa.binary())


def same_arrow(a: pa.Array, b: pa.Array) -> bool:
    """Equal type, validity and bits (NaN payloads included)."""
    if a.type != b.type or len(a) != len(b) or a.is_null().to_pylist() != b.is_null().to_pylist():
        return False
    if pa.types.is_floating(a.type):
        width = a.type.bit_width

        def as_int(x):
            return np.frombuffer(x.buffers()[1], dtype=f"uint{width}")[x.offset : x.offset + len(x)]

        valid = ~np.asarray(a.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        return bool(np.array_equal(as_int(a)[valid], as_int(b)[valid]))
    return a.equals(b)


@SETTINGS
@given(data=st.data(), schema_type=st.sampled_from(FIXED + [SchemaType.STRING, SchemaType.BYTES]))
def test_bulk_round_trip(backend, data, schema_type):
    column = arrow_column(data.draw, schema_type)
    encoded = pt.encode_array(schema_type, column)
    assert encoded.type == pa.binary()
    back = pt.decode_array(schema_type, encoded)
    assert same_arrow(back, column)
    if len(column) > 2:  # sliced and chunked inputs give the same rows
        assert same_arrow(pt.decode_array(schema_type, encoded.slice(1)), column.slice(1))
        chunked = pa.chunked_array([encoded.slice(0, 2), encoded.slice(2)])
        assert same_arrow(pt.decode_array(schema_type, chunked), column)


def to_storage(schema_type, value):
    """A per-value result as the number the Arrow column stores (None stays None)."""
    if value is None or schema_type not in ARROW_INTS or pa.types.is_integer(ARROW_INTS[schema_type][0]):
        return value
    if schema_type in (SchemaType.DATE, SchemaType.TIMESTAMP):
        return (value - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(milliseconds=1)
    if schema_type is SchemaType.TIME:
        return (value.hour * 3600 + value.minute * 60 + value.second) * 1000 + value.microsecond // 1000
    if schema_type is SchemaType.LOCAL_DATE:
        return (value - dt.date(1970, 1, 1)).days
    if schema_type is SchemaType.LOCAL_TIME:
        return (
            (value.hour * 3600 + value.minute * 60 + value.second) * 10**6 + value.microsecond
        ) * 1000 + value.nanosecond
    epoch = dt.datetime(1970, 1, 1, tzinfo=value.tzinfo)
    return (value - epoch) // dt.timedelta(microseconds=1) * 1000 + value.nanosecond


def storage_list(arr: pa.Array):
    if pa.types.is_timestamp(arr.type) or pa.types.is_time64(arr.type):
        return arr.cast(pa.int64()).to_pylist()
    if pa.types.is_date32(arr.type) or pa.types.is_time32(arr.type):
        return arr.cast(pa.int32()).to_pylist()
    return arr.to_pylist()


def bulk_outcome(schema_type, payloads):
    try:
        arr = pt.decode_array(schema_type, payloads)
    except PrimitiveDecodeError as exc:
        return ("error", exc.code, exc.index, exc.offset, exc.detail, str(exc))
    return ("ok", arr)


def per_value_outcome(schema_type, payloads):
    out = []
    for i, p in enumerate(payloads):
        try:
            out.append(to_storage(schema_type, pt.decode(schema_type, p)))
        except PrimitiveDecodeError as exc:
            return ("error", exc.code, i, exc.offset, exc.detail, str(exc).replace("(message 0,", f"(message {i},"))
    return ("ok", out)


@st.composite
def payload_lists(draw, schema_type):
    width = WIDTH.get(schema_type, 4)
    if schema_type is SchemaType.INSTANT:  # mostly representable seconds, sometimes huge ones
        item = st.one_of(
            st.builds(
                lambda s, n: struct.pack(">qi", s, n), st.integers(-(2**34), 2**34), st.integers(-(2**31), 2**31 - 1)
            ),
            st.binary(min_size=width, max_size=width),
        )
    elif schema_type is SchemaType.LOCAL_DATE_TIME:
        item = st.one_of(
            st.builds(
                lambda d, n: struct.pack(">qq", d, n), st.integers(-200_000, 200_000), st.integers(-10, NS_PER_DAY + 10)
            ),
            st.binary(min_size=width, max_size=width),
        )
    elif schema_type in (SchemaType.DATE, SchemaType.TIMESTAMP, SchemaType.LOCAL_DATE, SchemaType.LOCAL_TIME):
        item = st.one_of(
            st.integers(-(2**40), 2**40).map(lambda v: struct.pack(">q", v)), st.binary(min_size=width, max_size=width)
        )
    elif schema_type is SchemaType.STRING:
        item = st.one_of(st.text(max_size=6).map(str.encode), st.binary(max_size=6))
    else:
        item = st.binary(min_size=width, max_size=width)
    rows = draw(st.lists(st.one_of(st.none(), item), max_size=12))
    for _ in range(draw(st.integers(0, 2))):  # mutate: truncate or extend a row
        if rows:
            i = draw(st.integers(0, len(rows) - 1))
            if rows[i] is not None:
                rows[i] = rows[i][:-1] if draw(st.booleans()) else rows[i] + b"\x00"
    return rows


@SETTINGS
@given(data=st.data(), schema_type=st.sampled_from(FIXED + [SchemaType.STRING]))
def test_twins_agree_and_bulk_equals_per_value(data, schema_type):
    if not _backend.compiled_available():
        pytest.skip("compiled kernels unavailable")
    payloads = data.draw(payload_lists(schema_type))
    with _backend.use("cython"):
        compiled = bulk_outcome(schema_type, payloads)
    with _backend.use("python"):
        pure = bulk_outcome(schema_type, payloads)
    if compiled[0] == "ok" and pure[0] == "ok":
        assert same_arrow(compiled[1], pure[1])
    else:
        assert compiled == pure
    single = per_value_outcome(schema_type, payloads)
    narrower = (
        SchemaType.DATE,
        SchemaType.TIMESTAMP,
        SchemaType.INSTANT,
        SchemaType.LOCAL_DATE,
        SchemaType.LOCAL_DATE_TIME,
    )
    if single[0] == "error" and single[1] == ErrorCode.PRIM_OUT_OF_RANGE and (pure[0] == "ok" or single[2] < pure[2]):
        # per value the datetime range (years 1-9999) is narrower than the Arrow column's
        assert schema_type in narrower
        return
    if pure[0] == "error":
        if pure[1] == ErrorCode.PRIM_OUT_OF_RANGE and schema_type in narrower:
            return  # int64 ns / date32 overflow: a datetime may still hold it
        assert single == pure
    elif schema_type in (SchemaType.FLOAT, SchemaType.DOUBLE):
        got = pure[1].to_pylist()
        assert all(
            (a is None and b is None) or a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(got, single[1])
        )
    else:
        assert storage_list(pure[1]) == single[1]


@SETTINGS
@given(rows=st.lists(st.one_of(st.none(), st.binary(max_size=12)), max_size=10))
def test_utf8_twins_match_python(rows):
    if not _backend.compiled_available():
        pytest.skip("compiled kernels unavailable")
    expected = ("ok",)
    for i, r in enumerate(rows):
        if r is None:
            continue
        try:
            r.decode("utf-8")
        except UnicodeDecodeError as exc:
            expected = ("error", i, exc.start)
            break
    for name in ("cython", "python"):
        with _backend.use(name):
            try:
                pt.decode_array("STRING", rows)
                got = ("ok",)
            except PrimitiveDecodeError as exc:
                got = ("error", exc.index, exc.offset)
        assert got == expected, name


# -- NanoDateTime / NanoTime ----------------------------------------------------------------------


def test_nano_datetime_behaviour():
    a = NanoDateTime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC, nanosecond=789)
    plain = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    assert isinstance(a, dt.datetime) and a.nanosecond == 789
    assert a != plain and plain != a and a > plain and plain < a
    assert NanoDateTime(2024, 5, 6, tzinfo=UTC) == dt.datetime(2024, 5, 6, tzinfo=UTC)
    assert hash(NanoDateTime(2024, 5, 6)) == hash(dt.datetime(2024, 5, 6))
    assert a.isoformat() == "2024-05-06T07:08:09.123456789+00:00"
    assert str(a) == "2024-05-06 07:08:09.123456789+00:00"
    assert "nanosecond=789" in repr(a)
    back = pickle.loads(pickle.dumps(a))
    assert back == a and back.nanosecond == 789 and type(back) is NanoDateTime
    assert (a + dt.timedelta(seconds=1)).nanosecond == 0
    assert a.replace(year=2020).nanosecond == 0
    assert max([a, plain, a - dt.timedelta(microseconds=1)]) is a
    with pytest.raises(ValueError):
        NanoDateTime(2024, 1, 1, nanosecond=1000)


def test_nano_time_behaviour():
    t = NanoTime(1, 2, 3, 4, nanosecond=5)
    assert isinstance(t, dt.time) and t.nanosecond == 5
    assert t != dt.time(1, 2, 3, 4) and t > dt.time(1, 2, 3, 4) and NanoTime(1) == dt.time(1)
    assert t.isoformat() == "01:02:03.000004005" and str(t) == "01:02:03.000004005"
    assert pickle.loads(pickle.dumps(t)) == t
    assert hash(NanoTime(1)) == hash(dt.time(1))


# -- speed (loose bound) ----------------------------------------------------------------------------


@pytest.mark.compiled
def test_compiled_decode_is_fast():
    if not _backend.compiled_available():
        pytest.skip("compiled kernels unavailable")
    import time

    n = 200_000
    payloads = pt.encode_array("INT64", pa.array(np.arange(n, dtype=np.int64)))
    with _backend.use("cython"):
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            out = pt.decode_array("INT64", payloads)
            best = min(best, time.perf_counter() - start)
    assert out.to_numpy()[-1] == n - 1
    assert best < 0.1  # about 2 ms on the reference machine


# -- module layout: pulsar_types gathers the schema model and the primitives ------------------------

DOCUMENTED_NAMES = [
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
# the modules of the Pulsar model; none of them may take part in an import cycle
MODEL_MODULES = [
    "pulsar_codec.keyvalue",
    "pulsar_codec._base64",
    "pulsar_codec._time",
    "pulsar_codec.primitives",
    "pulsar_codec._primitive_columns",
    "pulsar_codec.pulsar_types",
    "pulsar_codec.pulsar",
    "pulsar_codec.pulsar.schema_info",
    "pulsar_codec.pulsar._sdk",
    "pulsar_codec.pulsar.client",
    "pulsar_codec.pulsar.reader",
]


def test_pulsar_types_gathers_schema_info_and_primitives():
    from pulsar_codec import primitives
    from pulsar_codec.pulsar import schema_info

    assert pt.__all__ == DOCUMENTED_NAMES
    for name in DOCUMENTED_NAMES:
        home = schema_info if name in schema_info.__all__ else primitives
        assert name in home.__all__, name
        assert getattr(pt, name) is getattr(home, name), name
    # the encoding type lives below the schema model, which imports it
    assert schema_info.KeyValueEncodingType is keyvalue.KeyValueEncodingType


def _source(module: str):
    import pulsar_codec

    path = Path(pulsar_codec.__file__).parent.joinpath(*module.split(".")[1:])
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.exists():
            return candidate
    return None


def _package_imports(module: str) -> tuple[set[str], set[str]]:
    """(pulsar_codec modules imported when ``module`` loads, those imported inside functions)."""
    path = _source(module)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    nested_nodes = {
        id(node)
        for fn in ast.walk(tree)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(fn)
    }
    loaded, nested = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        # a parent package is always initialised before its children: no edge
        found = {t for t in targets if t.startswith("pulsar_codec") and _source(t) and not module.startswith(t + ".")}
        (nested if id(node) in nested_nodes else loaded).update(found - {module})
    return loaded, nested


def test_pulsar_model_modules_form_no_import_cycle():
    graph: dict[str, set[str]] = {}
    todo = list(MODEL_MODULES)
    while todo:
        module = todo.pop()
        if module not in graph:
            graph[module] = _package_imports(module)[0]
            todo.extend(graph[module])
    for start in MODEL_MODULES:
        seen, stack = set(), list(graph[start])
        while stack:
            module = stack.pop()
            assert module != start, f"{start} imports itself through {sorted(seen)}"
            if module not in seen:
                seen.add(module)
                stack.extend(graph[module])
        # and no import hidden in a function to dodge a cycle
        assert _package_imports(start)[1] == set(), start


def test_schema_model_works_without_pulsar_client():
    code = (
        "import sys\n"
        "sys.modules['pulsar'] = sys.modules['_pulsar'] = None\n"
        "from pulsar_codec import pulsar_types as pt\n"
        "from pulsar_codec.pulsar import SchemaInfo, KeyValueEncodingType\n"
        "assert SchemaInfo is pt.SchemaInfo and pt.encode('INT32', 1) == b'\\x00\\x00\\x00\\x01'\n"
        "for name in ('read_batches', 'KeyValueSchema'):\n"
        "    try:\n"
        "        getattr(__import__('pulsar_codec.pulsar', fromlist=[name]), name)\n"
        "    except ImportError as exc:\n"
        "        assert \"pip install 'pulsar-codec[pulsar]'\" in str(exc), exc\n"
        "    else:\n"
        "        raise AssertionError(name + ' imported without pulsar-client')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_nano_pickles_of_earlier_versions_still_load():
    # 0.1 defined the rebuild functions in pulsar_types; its protocol-0 pickles name them there
    for value in (NanoDateTime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC, nanosecond=7), NanoTime(1, 2, 3, 4, nanosecond=5)):
        written = pickle.dumps(value, protocol=0)
        assert b"pulsar_codec._time" in written
        earlier = written.replace(b"pulsar_codec._time", b"pulsar_codec.pulsar_types")
        back = pickle.loads(earlier)
        assert back == value and type(back) is type(value) and back.nanosecond == value.nanosecond
