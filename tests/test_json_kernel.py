"""The JSON -> Avro transcoder kernel (_kernels/json_py.py and json_c.pyx) on hand-built programs.

Byte vectors for every node kind, the JSON grammar (whitespace, escapes, UTF-8, numbers, depth,
truncation, trailing bytes), object semantics (key order, unknown and duplicate keys, missing
properties, keep_extra), rows (nulls, keep_going) and error offsets, on both twins; then hypothesis:
random programs and instances, whose Avro bytes fastavro decodes to what ``json.loads`` reads, and
twin parity on mutated payloads; and number texts (shortest reprs, 16-25 significant digits, exact
and near halfway cases, subnormals, the overflow edge) whose J_DOUBLE / J_FLOAT bytes must equal
``struct.pack`` of Python's ``float()`` (the compiled twin's Eisel-Lemire path and its fallback).
"""

import base64
import decimal
import io
import json
import math
import random
import struct
import sys

import fastavro
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pulsar_codec._kernels.defs import (
    J_ARRAY,
    J_BOOL,
    J_BYTES_B64,
    J_DATE,
    J_DOUBLE,
    J_ENUM,
    J_FIXED_B64,
    J_FLOAT,
    J_INT,
    J_LONG,
    J_MAP,
    J_NULL,
    J_NULLABLE,
    J_OBJECT,
    J_STRING,
    J_TEXT,
    J_TIME,
    J_TIMESTAMP,
    JSON_BAD_FORMAT,
    JSON_DEPTH_EXCEEDED,
    JSON_INVALID_UTF8,
    JSON_MAX_DEPTH,
    JSON_MISSING_REQUIRED,
    JSON_NUMBER_RANGE,
    JSON_TRUNCATED,
    JSON_UNEXPECTED_BYTE,
    JSON_UNKNOWN_ENUM,
    JSON_WRONG_TYPE,
)

H = bytes.fromhex


def zz(n):
    """Avro zigzag varint (reference, written from the spec)."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def avro_str(b):
    return zz(len(b)) + b


def transcode(kernels, tree, payloads, keep_going=True, validity=None):
    """Run the kernel on ``payloads`` laid out back to back with a gap byte; per-row bytes."""
    data = bytearray(b"#")
    starts, ends = [], []
    for p in payloads:
        starts.append(len(data))
        data += p
        ends.append(len(data))
        data += b"#"  # bytes outside a row must never be read
    errors, out, offsets, valid = kernels.json.transcode(
        kernels.json.Program(tree),
        bytes(data),
        np.array(starts, np.int64),
        np.array(ends, np.int64),
        validity,
        keep_going,
    )
    assert out.dtype == np.uint8 and offsets.dtype == np.int64 and len(offsets) == len(payloads) + 1
    rows = [bytes(out[offsets[i] : offsets[i + 1]]) for i in range(len(payloads))]
    return errors, rows, valid


def one(kernels, tree, payload):
    """The Avro bytes of one payload, or its error as (code, offset, detail)."""
    errors, rows, _ = transcode(kernels, tree, [payload])
    if errors:
        code, row, offset, detail = errors[0]
        assert row == 0 and rows == [b""]
        return code, offset, detail
    return rows[0]


def obj(*fields, keep_extra=False):
    return (J_OBJECT, tuple(fields), keep_extra)


# -- scalars -------------------------------------------------------------------------------------------

SCALAR_VECTORS = [
    ((J_NULL,), b"null", b""),
    ((J_BOOL,), b"true", b"\x01"),
    ((J_BOOL,), b"false", b"\x00"),
    ((J_INT,), b"0", b"\x00"),
    ((J_INT,), b"-1", b"\x01"),
    ((J_INT,), b"-0", b"\x00"),
    ((J_INT,), b"2147483647", H("feffffff0f")),
    ((J_INT,), b"-2147483648", H("ffffffff0f")),
    ((J_INT,), b"1.0", b"\x02"),
    ((J_INT,), b"1e3", zz(1000)),
    ((J_INT,), b"12.50e1", zz(125)),
    ((J_INT,), b"0.0e-999999999999999999999", b"\x00"),
    ((J_LONG,), b"9223372036854775807", H("feffffffffffffffff01")),
    ((J_LONG,), b"-9223372036854775808", H("ffffffffffffffffff01")),
    ((J_LONG,), b"92233720368547758.07e2", H("feffffffffffffffff01")),
    ((J_LONG,), b"-1E+2", zz(-100)),
    ((J_DOUBLE,), b"1.5", struct.pack("<d", 1.5)),
    ((J_DOUBLE,), b"-0", struct.pack("<d", -0.0)),
    ((J_DOUBLE,), b"-0.0e5", struct.pack("<d", -0.0)),
    ((J_DOUBLE,), b"7", struct.pack("<d", 7.0)),
    ((J_DOUBLE,), b"0.1", struct.pack("<d", 0.1)),
    ((J_DOUBLE,), b"3.141592653589793", struct.pack("<d", math.pi)),
    ((J_DOUBLE,), b"1e-400", struct.pack("<d", 0.0)),
    ((J_DOUBLE,), b"2.2250738585072011e-308", struct.pack("<d", 2.2250738585072011e-308)),
    ((J_DOUBLE,), b"1.7976931348623157e308", struct.pack("<d", 1.7976931348623157e308)),
    ((J_DOUBLE,), b"123456789012345678901234567890", struct.pack("<d", 123456789012345678901234567890.0)),
    ((J_DOUBLE,), b"9007199254740993", struct.pack("<d", 9007199254740993.0)),
    ((J_DOUBLE,), b"1e37", struct.pack("<d", 1e37)),
    ((J_FLOAT,), b"0.1", struct.pack("<f", 0.1)),
    ((J_FLOAT,), b"3.4028235e38", struct.pack("<f", 3.4028235e38)),
    ((J_FLOAT,), b"1e-50", struct.pack("<f", 0.0)),
    ((J_STRING,), b'""', b"\x00"),
    ((J_STRING,), b'"abc"', b"\x06abc"),
    ((J_STRING,), '"héllo €𝄞"'.encode(), avro_str("héllo €𝄞".encode())),
    ((J_STRING,), rb'"\"\\\/\b\f\n\r\t"', avro_str(b'"\\/\b\f\n\r\t')),
    ((J_STRING,), rb'"\u0000\u00e9\u20AC\ud834\uDD1E"', avro_str("\0é€𝄞".encode())),
    ((J_STRING,), b'"' + b"x" * 200 + b'"', H("9003") + b"x" * 200),
    ((J_STRING,), b'"\x7f"', b"\x02\x7f"),
    ((J_BYTES_B64,), b'""', b"\x00"),
    ((J_BYTES_B64,), b'"AAEC/w=="', b"\x08\x00\x01\x02\xff"),
    ((J_BYTES_B64,), b'"AAECAw=="', b"\x08\x00\x01\x02\x03"),
    ((J_BYTES_B64,), b'"AAE="', b"\x04\x00\x01"),
    ((J_BYTES_B64,), rb'"a+\/9"', b"\x06" + base64.b64decode("a+/9")),
    ((J_FIXED_B64, 2), b'"AAE="', b"\x00\x01"),
    ((J_FIXED_B64, 0), b'""', b""),
    ((J_ENUM, ("A", "B", "é")), b'"B"', b"\x02"),
    ((J_ENUM, ("A", "B", "é")), rb'"\u00e9"', b"\x04"),
    ((J_TIMESTAMP,), b'"1970-01-01T00:00:00Z"', b"\x00"),
    ((J_TIMESTAMP,), b'"2024-02-29T12:34:56.789012345+02:00"', zz(1709202896789012)),
    ((J_TIMESTAMP,), b'"2024-02-29 12:34:56.7z"', zz(1709210096700000)),
    ((J_TIMESTAMP,), b'"1969-12-31t23:59:59.999999-00:00"', zz(-1)),
    ((J_TIMESTAMP,), b'"0001-01-01T00:00:00Z"', zz(-62135596800000000)),
    ((J_TIMESTAMP,), b'"0000-03-01T00:00:00Z"', zz(-62162035200000000)),
    ((J_DATE,), b'"1970-01-02"', b"\x02"),
    ((J_DATE,), b'"1969-12-31"', b"\x01"),
    ((J_DATE,), b'"2000-02-29"', zz(11016)),
    ((J_TIME,), b'"00:00:00"', b"\x00"),
    ((J_TIME,), b'"23:59:59.999999999"', zz(86399999999)),
    ((J_TIME,), b'"12:00:00.5+05:30"', zz(43200500000)),
    ((J_TIME,), b'"12:00:00Z"', zz(43200000000)),
    ((J_TEXT,), b' {"a" : [1, "x"]} ', avro_str(b'{"a" : [1, "x"]}')),
    ((J_TEXT,), b"-1.5e3", avro_str(b"-1.5e3")),
    ((J_TEXT,), b"null", avro_str(b"null")),
    ((J_NULLABLE, (J_LONG,)), b"null", b"\x00"),
    ((J_NULLABLE, (J_LONG,)), b"5", b"\x02\x0a"),
    ((J_ARRAY, (J_INT,)), b"[]", b"\x00"),
    ((J_ARRAY, (J_INT,)), b"[1,2,3]", b"\x06\x02\x04\x06\x00"),
    ((J_ARRAY, (J_NULL,)), b"[null, null]", b"\x04\x00"),
    ((J_ARRAY, (J_INT,)), b"[" + b",".join([b"1"] * 64) + b"]", H("8001") + b"\x02" * 64 + b"\x00"),
    ((J_ARRAY, (J_ARRAY, (J_BOOL,))), b"[[true],[],[false,true]]", H("06 02 01 00 00 04 00 01 00 00")),
    ((J_MAP, (J_LONG,)), b"{}", b"\x00"),
    ((J_MAP, (J_LONG,)), b'{"a":1,"b":2,"a":3}', b"\x06\x02a\x02\x02b\x04\x02a\x06\x00"),
    ((J_MAP, (J_STRING,)), rb'{"\u00e9":"x"}', b"\x02\x04\xc3\xa9\x02x\x00"),
]


@pytest.mark.parametrize(("tree", "payload", "expected"), SCALAR_VECTORS)
def test_vectors(backend, tree, payload, expected):
    assert one(backend, tree, payload) == expected


ERROR_VECTORS = [
    # (tree, payload, (code, offset, detail))
    ((J_LONG,), b"", (JSON_TRUNCATED, 0, 0)),
    ((J_LONG,), b"  \n", (JSON_TRUNCATED, 3, 0)),
    ((J_LONG,), b"1 2", (JSON_UNEXPECTED_BYTE, 2, ord("2"))),
    ((J_LONG,), b"01", (JSON_UNEXPECTED_BYTE, 1, ord("1"))),
    ((J_LONG,), b"-", (JSON_TRUNCATED, 1, 0)),
    ((J_LONG,), b"-a", (JSON_UNEXPECTED_BYTE, 1, ord("a"))),
    ((J_LONG,), b"1.", (JSON_TRUNCATED, 2, 0)),
    ((J_LONG,), b"1.e5", (JSON_UNEXPECTED_BYTE, 2, ord("e"))),
    ((J_LONG,), b"1e+", (JSON_TRUNCATED, 3, 0)),
    ((J_LONG,), b"1e+x", (JSON_UNEXPECTED_BYTE, 3, ord("x"))),
    ((J_LONG,), b"1.5.3", (JSON_WRONG_TYPE, 0, 2)),
    # a "." after an exponent ends the number there: it is not "1." waiting for a digit
    ((J_LONG,), b"1e4.5", (JSON_UNEXPECTED_BYTE, 3, ord("."))),
    ((J_DOUBLE,), b"1E+2.", (JSON_UNEXPECTED_BYTE, 4, ord("."))),
    ((J_TEXT,), b"[0e1.0]", (JSON_UNEXPECTED_BYTE, 4, ord("."))),
    ((J_DOUBLE,), b"1.5.3", (JSON_UNEXPECTED_BYTE, 3, ord("."))),
    ((J_LONG,), b"+1", (JSON_UNEXPECTED_BYTE, 0, ord("+"))),
    ((J_LONG,), b".5", (JSON_UNEXPECTED_BYTE, 0, ord("."))),
    ((J_LONG,), b"1.5", (JSON_WRONG_TYPE, 0, 2)),
    ((J_LONG,), b"1e-1", (JSON_WRONG_TYPE, 0, 2)),
    ((J_LONG,), b"9223372036854775808", (JSON_NUMBER_RANGE, 0, J_LONG)),
    ((J_LONG,), b"-9223372036854775809", (JSON_NUMBER_RANGE, 0, J_LONG)),
    ((J_LONG,), b"1e19", (JSON_NUMBER_RANGE, 0, J_LONG)),
    ((J_LONG,), b"1e999999999999999999999", (JSON_NUMBER_RANGE, 0, J_LONG)),
    ((J_LONG,), b"123456789012345678901234567890", (JSON_NUMBER_RANGE, 0, J_LONG)),
    ((J_INT,), b"2147483648", (JSON_NUMBER_RANGE, 0, J_INT)),
    ((J_INT,), b" -2147483649", (JSON_NUMBER_RANGE, 1, J_INT)),
    ((J_DOUBLE,), b"1e400", (JSON_NUMBER_RANGE, 0, J_DOUBLE)),
    ((J_DOUBLE,), b"-1.8e308", (JSON_NUMBER_RANGE, 0, J_DOUBLE)),
    ((J_FLOAT,), b"3.5e38", (JSON_NUMBER_RANGE, 0, J_FLOAT)),
    ((J_FLOAT,), b"-1e39", (JSON_NUMBER_RANGE, 0, J_FLOAT)),
    ((J_LONG,), b'"1"', (JSON_WRONG_TYPE, 0, 3)),
    ((J_STRING,), b"1", (JSON_WRONG_TYPE, 0, 2)),
    ((J_STRING,), b"null", (JSON_WRONG_TYPE, 0, 0)),
    ((J_BOOL,), b"[true]", (JSON_WRONG_TYPE, 0, 4)),
    ((J_ARRAY, (J_INT,)), b"{}", (JSON_WRONG_TYPE, 0, 5)),
    ((J_NULL,), b"false", (JSON_WRONG_TYPE, 0, 1)),
    ((J_BOOL,), b"tru", (JSON_TRUNCATED, 3, 0)),
    ((J_BOOL,), b"trUe", (JSON_UNEXPECTED_BYTE, 2, ord("U"))),
    ((J_NULLABLE, (J_BOOL,)), b"nul", (JSON_TRUNCATED, 3, 0)),
    ((J_LONG,), b"x", (JSON_UNEXPECTED_BYTE, 0, ord("x"))),
    ((J_STRING,), b'"abc', (JSON_TRUNCATED, 4, 0)),
    ((J_STRING,), b'"a\nb"', (JSON_UNEXPECTED_BYTE, 2, 0x0A)),
    ((J_STRING,), b'"a\x00"', (JSON_UNEXPECTED_BYTE, 2, 0)),
    ((J_STRING,), rb'"\x"', (JSON_UNEXPECTED_BYTE, 2, ord("x"))),
    ((J_STRING,), rb'"\u12g4"', (JSON_UNEXPECTED_BYTE, 5, ord("g"))),
    ((J_STRING,), rb'"\u12', (JSON_TRUNCATED, 5, 0)),
    ((J_STRING,), b'"\\', (JSON_TRUNCATED, 2, 0)),
    ((J_STRING,), rb'"ab\ud800"', (JSON_INVALID_UTF8, 3, 0)),
    ((J_STRING,), rb'"ab\ud800\u0041"', (JSON_INVALID_UTF8, 3, 0)),
    ((J_STRING,), rb'"ab\ud800\n"', (JSON_INVALID_UTF8, 3, 0)),
    ((J_STRING,), rb'"\udc00\ud800"', (JSON_INVALID_UTF8, 1, 0)),
    ((J_STRING,), rb'"\ud800\uzzzz"', (JSON_UNEXPECTED_BYTE, 9, ord("z"))),
    ((J_STRING,), b'"a\xc0\x80"', (JSON_INVALID_UTF8, 2, 0)),  # overlong NUL
    ((J_STRING,), b'"a\xe0\x80\xaf"', (JSON_INVALID_UTF8, 2, 0)),  # overlong 3-byte
    ((J_STRING,), b'"a\xed\xa0\x80"', (JSON_INVALID_UTF8, 2, 0)),  # UTF-8 encoded surrogate
    ((J_STRING,), b'"a\xf4\x90\x80\x80"', (JSON_INVALID_UTF8, 2, 0)),  # past U+10FFFF
    ((J_STRING,), b'"a\xf5\x80\x80\x80"', (JSON_INVALID_UTF8, 2, 0)),
    ((J_STRING,), b'"ab\x80"', (JSON_INVALID_UTF8, 3, 0)),
    ((J_STRING,), b'"\xc3\xa9\xe2\x82"', (JSON_INVALID_UTF8, 3, 0)),  # cut by the quote
    ((J_STRING,), b'"\xe2\x82', (JSON_INVALID_UTF8, 1, 0)),  # cut by the end
    ((J_TEXT,), b'["\xff"]', (JSON_INVALID_UTF8, 2, 0)),
    ((J_BYTES_B64,), b'"AAE"', (JSON_BAD_FORMAT, 0, J_BYTES_B64)),
    ((J_BYTES_B64,), b'"AA=E"', (JSON_BAD_FORMAT, 0, J_BYTES_B64)),
    ((J_BYTES_B64,), b'"AA E"', (JSON_BAD_FORMAT, 0, J_BYTES_B64)),
    ((J_BYTES_B64,), b'"A==="', (JSON_BAD_FORMAT, 0, J_BYTES_B64)),
    ((J_BYTES_B64,), b'"AA-_"', (JSON_BAD_FORMAT, 0, J_BYTES_B64)),
    ((J_FIXED_B64, 3), b'"AAE="', (JSON_BAD_FORMAT, 0, J_FIXED_B64)),
    ((J_ENUM, ("A", "B")), b' "C"', (JSON_UNKNOWN_ENUM, 1, 0)),
    ((J_ENUM, ("A", "B")), b'"a"', (JSON_UNKNOWN_ENUM, 0, 0)),
    ((J_TIMESTAMP,), b'"2024-02-30T00:00:00Z"', (JSON_BAD_FORMAT, 0, J_TIMESTAMP)),
    ((J_TIMESTAMP,), b'"2023-02-29T00:00:00Z"', (JSON_BAD_FORMAT, 0, J_TIMESTAMP)),
    ((J_TIMESTAMP,), b'"2024-01-01T00:00:00"', (JSON_BAD_FORMAT, 0, J_TIMESTAMP)),
    ((J_TIMESTAMP,), b'"2024-01-01T24:00:00Z"', (JSON_BAD_FORMAT, 0, J_TIMESTAMP)),
    ((J_TIMESTAMP,), b'"2024-01-01T23:59:60Z"', (JSON_BAD_FORMAT, 0, J_TIMESTAMP)),
    ((J_TIMESTAMP,), b'"2024-01-01T00:00:00.Z"', (JSON_BAD_FORMAT, 0, J_TIMESTAMP)),
    ((J_TIMESTAMP,), b'"2024-01-01T00:00:00.1234567890Z"', (JSON_BAD_FORMAT, 0, J_TIMESTAMP)),
    ((J_TIMESTAMP,), b'"2024-01-01T00:00:00+2:00"', (JSON_BAD_FORMAT, 0, J_TIMESTAMP)),
    ((J_TIMESTAMP,), b'"2024-01-01T00:00:00+02:60"', (JSON_BAD_FORMAT, 0, J_TIMESTAMP)),
    ((J_TIMESTAMP,), b'"2024-01-01X00:00:00Z"', (JSON_BAD_FORMAT, 0, J_TIMESTAMP)),
    ((J_TIMESTAMP,), b'"2024-01-01T00:00:00Z "', (JSON_BAD_FORMAT, 0, J_TIMESTAMP)),
    ((J_TIMESTAMP,), '"2024-01-01T00:00:00\u00b2Z"'.encode(), (JSON_BAD_FORMAT, 0, J_TIMESTAMP)),
    ((J_DATE,), b'"2024-13-01"', (JSON_BAD_FORMAT, 0, J_DATE)),
    ((J_DATE,), b'"2024-1-01"', (JSON_BAD_FORMAT, 0, J_DATE)),
    ((J_DATE,), b'"2024-01-00"', (JSON_BAD_FORMAT, 0, J_DATE)),
    ((J_DATE,), b'"2024-01-01T"', (JSON_BAD_FORMAT, 0, J_DATE)),
    ((J_TIME,), b'"12:00"', (JSON_BAD_FORMAT, 0, J_TIME)),
    ((J_TIME,), b'"12:00:00+25:00"', (JSON_BAD_FORMAT, 0, J_TIME)),
    ((J_TIME,), b'"12:00:00 "', (JSON_BAD_FORMAT, 0, J_TIME)),
    ((J_ARRAY, (J_INT,)), b"[1,]", (JSON_UNEXPECTED_BYTE, 3, ord("]"))),
    ((J_ARRAY, (J_INT,)), b"[1 2]", (JSON_UNEXPECTED_BYTE, 3, ord("2"))),
    ((J_ARRAY, (J_INT,)), b"[1,", (JSON_TRUNCATED, 3, 0)),
    ((J_ARRAY, (J_INT,)), b"[", (JSON_TRUNCATED, 1, 0)),
    ((J_ARRAY, (J_INT,)), b"[,1]", (JSON_UNEXPECTED_BYTE, 1, ord(","))),
    ((J_MAP, (J_INT,)), b'{"a" 1}', (JSON_UNEXPECTED_BYTE, 5, ord("1"))),
    ((J_MAP, (J_INT,)), b"{1:1}", (JSON_UNEXPECTED_BYTE, 1, ord("1"))),
    ((J_MAP, (J_INT,)), b'{"a":1,}', (JSON_UNEXPECTED_BYTE, 7, ord("}"))),
    ((J_TEXT,), b"[1,{]", (JSON_UNEXPECTED_BYTE, 4, ord("]"))),
    ((J_TEXT,), b'{"a":1 "b":2}', (JSON_UNEXPECTED_BYTE, 7, ord('"'))),
    ((J_TEXT,), b'{"a":[}', (JSON_UNEXPECTED_BYTE, 6, ord("}"))),
    ((J_TEXT,), b'{"a"}', (JSON_UNEXPECTED_BYTE, 4, ord("}"))),
    ((J_TEXT,), b"[1] ]", (JSON_UNEXPECTED_BYTE, 4, ord("]"))),
    ((J_TEXT,), b"\xef\xbb\xbf1", (JSON_UNEXPECTED_BYTE, 0, 0xEF)),  # no byte-order mark
    ((J_TEXT,), b"NaN", (JSON_UNEXPECTED_BYTE, 0, ord("N"))),
    ((J_DOUBLE,), b"Infinity", (JSON_UNEXPECTED_BYTE, 0, ord("I"))),
]


@pytest.mark.parametrize(("tree", "payload", "expected"), ERROR_VECTORS)
def test_error_vectors(backend, tree, payload, expected):
    assert one(backend, tree, payload) == expected


def test_exponents_of_thousands_of_digits(backend):
    """An exponent longer than Python's ``int()`` takes (4300 digits) is read, saturated, by both twins:
    a value, a range error or a fraction as its size says, never a ValueError out of the pure twin."""
    long_zeros = b"0" * 5000
    assert one(backend, (J_LONG,), b"1e" + long_zeros + b"1") == zz(10)
    assert one(backend, (J_LONG,), b"10e-" + long_zeros + b"1") == zz(1)
    assert one(backend, (J_INT,), b"0e-" + b"9" * 5000) == b"\x00"
    assert one(backend, (J_LONG,), b"-0.0e+" + b"7" * 5000) == b"\x00"
    assert one(backend, (J_LONG,), b"1e" + b"9" * 5000) == (JSON_NUMBER_RANGE, 0, J_LONG)
    assert one(backend, (J_INT,), b" 1e-" + b"9" * 5000) == (JSON_WRONG_TYPE, 1, 2)
    assert one(backend, (J_DOUBLE,), b"1e-" + b"9" * 5000) == struct.pack("<d", 0.0)
    assert one(backend, (J_TEXT,), b"[1e" + b"9" * 5000 + b"]") == avro_str(b"[1e" + b"9" * 5000 + b"]")


def test_whitespace_anywhere(backend):
    tree = obj(("a", (J_ARRAY, (J_LONG,)), None), ("b", (J_MAP, (J_BOOL,)), None))
    tight = b'{"a":[1,2],"b":{"x":true}}'
    loose = b' \t\r\n{ "a" :\n[ 1 ,\t2 ] ,\r"b"\n:\t{ "x" : true }\n}\n\t '
    assert one(backend, tree, loose) == one(backend, tree, tight) == H("04 02 04 00 02 02 78 01 00")
    assert one(backend, tree, b'{"a":[1,2],"b":{"x":true}}\x0b') == (JSON_UNEXPECTED_BYTE, 26, 0x0B)


# -- objects ----------------------------------------------------------------------------------------

RECORD = obj(
    ("id", (J_LONG,), None),
    ("name", (J_NULLABLE, (J_STRING,)), b"\x00"),
    ("tags", (J_ARRAY, (J_STRING,)), b"\x00"),
)


def test_key_order_does_not_matter(backend):
    expected = zz(7) + b"\x02" + avro_str(b"x") + b"\x02" + avro_str(b"t") + b"\x00"
    for payload in (
        b'{"id":7,"name":"x","tags":["t"]}',
        b'{"tags":["t"],"name":"x","id":7}',
        b'{"name":"x","id":7,"tags":["t"]}',
    ):
        assert one(backend, RECORD, payload) == expected


def test_missing_optional_writes_its_bytes_and_required_is_an_error(backend):
    assert one(backend, RECORD, b'{"id":1}') == b"\x02\x00\x00"
    assert one(backend, RECORD, b'{"tags":[],"id":1}') == b"\x02\x00\x00"
    assert one(backend, RECORD, b'{"name":null,"id":1}') == b"\x02\x00\x00"
    assert one(backend, RECORD, b'{"name":"x"}') == (JSON_MISSING_REQUIRED, 11, 0)
    assert one(backend, RECORD, b"{ }") == (JSON_MISSING_REQUIRED, 2, 0)
    two_required = obj(("a", (J_INT,), None), ("b", (J_INT,), None))
    assert one(backend, two_required, b'{"a":1}') == (JSON_MISSING_REQUIRED, 6, 1)


def test_unknown_keys_are_checked_and_skipped(backend):
    deep = b"[" * 100 + b'{"k":[1,2.5e3,"s\\u00e9",true,false,null,{}]}' + b"]" * 100
    payload = b'{"x":' + deep + b',"id":3,"y":{"z":{"w":[]}}}'
    assert one(backend, RECORD, payload) == b"\x06\x00\x00"
    assert one(backend, RECORD, b'{"x":[1,"\xff"],"id":3}') == (JSON_INVALID_UTF8, 9, 0)
    assert one(backend, RECORD, b'{"x":01,"id":3}') == (JSON_UNEXPECTED_BYTE, 6, ord("1"))
    assert one(backend, RECORD, b'{"\xff":1,"id":3}') == (JSON_INVALID_UTF8, 2, 0)


def test_duplicate_keys_last_wins(backend):
    assert one(backend, RECORD, b'{"id":1,"id":2}') == b"\x04\x00\x00"
    assert one(backend, RECORD, b'{"id":1,"name":"a","id":2,"name":null}') == b"\x04\x00\x00"
    # an earlier occurrence is still checked against the schema
    assert one(backend, RECORD, b'{"id":"x","id":2}') == (JSON_WRONG_TYPE, 6, 3)


def test_keys_with_escapes_match_field_names(backend):
    tree = obj(('é/"', (J_INT,), None), ("𝄞", (J_INT,), None))
    assert one(backend, tree, rb'{"\u00e9\/\"":1,"\ud834\udd1e":2}') == b"\x02\x04"
    assert one(backend, tree, '{"𝄞":2,"é/\\"":1}'.encode()) == b"\x02\x04"


def test_keep_extra(backend):
    tree = obj(("a", (J_INT,), None), keep_extra=True)
    assert one(backend, tree, b'{"a":1}') == b"\x02\x00"
    text = b'{"x" :[1, 2],"a":1 ,"\\u00e9":{"q" : null}}'
    extra = b'{"x" :[1, 2],"\\u00e9":{"q" : null}}'  # each member as in the payload
    assert one(backend, tree, text) == b"\x02\x02" + avro_str(extra)
    # a nested object keeps its own extras; the outer ones stay in payload order around it
    nested = obj(("a", obj(("b", (J_INT,), None), keep_extra=True), None), keep_extra=True)
    payload = b'{"u":1,"a":{"v":2,"b":3,"w":4},"z":5}'
    assert one(backend, nested, payload) == b"\x06\x02" + avro_str(b'{"v":2,"w":4}') + b"\x02" + avro_str(
        b'{"u":1,"z":5}'
    )


def test_nested_records_reordered(backend):
    inner = obj(("p", (J_INT,), None), ("q", (J_NULLABLE, (J_INT,)), b"\x00"))
    tree = obj(("a", inner, None), ("b", (J_ARRAY, inner), None), ("c", (J_INT,), b"\x0a"))
    payload = b'{"b":[{"q":1,"p":2},{"p":3}],"a":{"q":null,"p":4}}'
    expected = b"\x08\x00" + b"\x04\x04\x02\x02\x06\x00\x00" + b"\x0a"
    assert one(backend, tree, payload) == expected


def test_empty_object_and_no_fields(backend):
    assert one(backend, obj(), b"{}") == b""
    assert one(backend, obj(), b'{"a":[{"b":1}]}') == b""
    assert one(backend, obj(keep_extra=True), b"{}") == b"\x00"


# -- depth -------------------------------------------------------------------------------------------


def test_depth_limit(backend):
    ok = b"[" * JSON_MAX_DEPTH + b"]" * JSON_MAX_DEPTH
    deep = b"[" * (JSON_MAX_DEPTH + 1) + b"]" * (JSON_MAX_DEPTH + 1)
    assert one(backend, (J_TEXT,), ok) == avro_str(ok)
    assert one(backend, (J_TEXT,), deep) == (JSON_DEPTH_EXCEEDED, JSON_MAX_DEPTH, JSON_MAX_DEPTH)
    # the record itself is level 1: unknown values inside it count
    skipped = b'{"x":' + b"[" * JSON_MAX_DEPTH + b"]" * JSON_MAX_DEPTH + b"}"
    assert one(backend, obj(), skipped) == (JSON_DEPTH_EXCEEDED, 5 + JSON_MAX_DEPTH - 1, JSON_MAX_DEPTH)
    nested = (J_ARRAY, (J_ARRAY, (J_TEXT,)))
    assert one(backend, nested, b"[[" + b"[" * (JSON_MAX_DEPTH - 1)) == (
        JSON_DEPTH_EXCEEDED,
        2 + JSON_MAX_DEPTH - 2,
        JSON_MAX_DEPTH,
    )
    # depth is per row: many shallow rows never add up
    errors, rows, _ = transcode(backend, (J_TEXT,), [b"[[]]"] * (JSON_MAX_DEPTH + 5))
    assert not errors


# -- rows ---------------------------------------------------------------------------------------------


def test_null_rows_and_validity(backend):
    tree = (J_LONG,)
    errors, rows, valid = transcode(backend, tree, [b"1", b"garbage", b"3"], validity=np.array([True, False, True]))
    assert errors == [] and rows == [b"\x02", b"", b"\x06"]
    assert valid.tolist() == [True, False, True]
    errors, rows, valid = transcode(backend, tree, [b"1", b"2"])
    assert valid is None and rows == [b"\x02", b"\x04"]
    errors, rows, valid = transcode(backend, tree, [])
    assert errors == [] and rows == [] and valid is None


def test_keep_going_reports_every_bad_row(backend):
    payloads = [b"1", b"x", b"2", b"1.5", b"3"]
    errors, rows, valid = transcode(backend, (J_LONG,), payloads, keep_going=True)
    assert errors == [(JSON_UNEXPECTED_BYTE, 1, 0, ord("x")), (JSON_WRONG_TYPE, 3, 0, 2)]
    assert rows == [b"\x02", b"", b"\x04", b"", b"\x06"]
    assert valid.tolist() == [True, False, True, False, True]


def test_without_keep_going_stops_at_the_first_bad_row(backend):
    payloads = [b"1", b"2", b"[]", b"3", b"x"]
    program = backend.json.Program((J_LONG,))
    data = b"".join(payloads)
    ends = np.cumsum([len(p) for p in payloads])
    starts = ends - [len(p) for p in payloads]
    errors, out, offsets, valid = backend.json.transcode(program, data, starts, ends, None, False)
    assert errors == [(JSON_WRONG_TYPE, 2, 0, 4)]
    assert bytes(out) == b"\x02\x04"
    assert offsets.tolist() == [0, 1, 2, 2, 2, 2]
    assert valid.tolist() == [True, True, False, False, False]


def test_inputs_bytes_memoryview_and_pyarrow(backend):
    import pyarrow as pa

    program = backend.json.Program((J_STRING,))
    for data in (b'"ab""c"', memoryview(b'"ab""c"'), pa.py_buffer(b'"ab""c"'), bytearray(b'"ab""c"')):
        errors, out, offsets, _ = backend.json.transcode(program, data, [0, 4], [4, 7], None, True)
        assert errors == [] and bytes(out) == b"\x04ab\x02c" and offsets.tolist() == [0, 3, 5]


def test_output_larger_than_input_grows(backend):
    # every missing property writes bytes: the output outgrows the payloads
    fields = tuple((f"f{i}", (J_NULLABLE, (J_STRING,)), b"\x02\x20" + b"x" * 16) for i in range(200))
    errors, rows, _ = transcode(backend, obj(*fields), [b"{}"] * 50)
    assert not errors and rows == [b"\x02\x20" + b"x" * 16] * 0 + [(b"\x02\x20" + b"x" * 16) * 200] * 50


@pytest.mark.parametrize(
    "tree",
    [
        (),
        ("x",),
        (99,),
        (J_LONG, 1),
        (J_ARRAY,),
        (J_FIXED_B64, -1),
        (J_ENUM, ["a"]),
        (J_ENUM, ("a", "a")),
        (J_OBJECT, (("a", (J_INT,), None),)),
        (J_OBJECT, (("a", (J_INT,), "x"),), False),
        (J_OBJECT, (("a", (J_INT,), None), ("a", (J_INT,), None)), False),
        (J_OBJECT, (("a", (J_INT,)),), False),
        (J_NULLABLE, (J_NULLABLE, (J_ARRAY, (99,)))),
    ],
)
def test_malformed_programs_are_value_errors(backend, tree):
    with pytest.raises(ValueError):
        backend.json.Program(tree)


def test_program_nesting_limit(backend):
    tree = (J_LONG,)
    for _ in range(JSON_MAX_DEPTH - 1):
        tree = (J_NULLABLE, tree)
    backend.json.Program(tree)
    with pytest.raises(ValueError, match="deeper"):
        backend.json.Program((J_NULLABLE, tree))


# -- hypothesis: random programs and instances ----------------------------------------------------------

names = st.text(max_size=6)
leaf_trees = st.one_of(
    st.sampled_from(
        [(J_NULL,), (J_BOOL,), (J_INT,), (J_LONG,), (J_FLOAT,), (J_DOUBLE,), (J_STRING,), (J_BYTES_B64,), (J_TEXT,)]
    ),
    st.lists(names, min_size=1, max_size=4, unique=True).map(lambda s: (J_ENUM, tuple(s))),
)


def _field(name, child, optional):
    """A record field; an optional one takes null, and is null when absent."""
    if not optional:
        return (name, child, None)
    if child[0] == J_NULL:
        return (name, child, b"")
    if child[0] == J_NULLABLE:
        return (name, child, b"\x00")
    return (name, (J_NULLABLE, child), b"\x00")


def _object_tree(children):
    field = st.tuples(names, children, st.booleans())
    return st.tuples(st.lists(field, max_size=5, unique_by=lambda f: f[0]), st.booleans()).map(
        lambda t: (J_OBJECT, tuple(_field(*f) for f in t[0]), t[1])
    )


trees = st.recursive(
    leaf_trees,
    lambda children: st.one_of(
        children.filter(lambda c: c[0] not in (J_NULL, J_NULLABLE)).map(lambda c: (J_NULLABLE, c)),
        children.map(lambda c: (J_ARRAY, c)),
        children.map(lambda c: (J_MAP, c)),
        _object_tree(children),
    ),
    max_leaves=12,
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda v: st.lists(v, max_size=3) | st.dictionaries(st.text(max_size=4), v, max_size=3),
    max_leaves=8,
)


def values_for(tree):
    """A strategy of Python JSON values valid for ``tree``."""
    op = tree[0]
    if op == J_NULL:
        return st.none()
    if op == J_BOOL:
        return st.booleans()
    if op == J_INT:
        return st.integers(-(2**31), 2**31 - 1)
    if op == J_LONG:
        return st.integers(-(2**63), 2**63 - 1)
    if op == J_FLOAT:
        return st.floats(width=32, allow_nan=False, allow_infinity=False) | st.integers(-(2**24), 2**24)
    if op == J_DOUBLE:
        return st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**80), 2**80)
    if op == J_STRING:
        return st.text(max_size=12)
    if op == J_BYTES_B64:
        return st.binary(max_size=10).map(lambda b: base64.b64encode(b).decode())
    if op == J_ENUM:
        return st.sampled_from(tree[1])
    if op == J_TEXT:
        return json_values
    if op == J_NULLABLE:
        return st.none() | values_for(tree[1])
    if op == J_ARRAY:
        return st.lists(values_for(tree[1]), max_size=3)
    if op == J_MAP:
        return st.dictionaries(st.text(max_size=4), values_for(tree[1]), max_size=3)
    fields, _ = tree[1], tree[2]
    known = {name for name, _, _ in fields}

    @st.composite
    def record(draw):
        items = []
        for name, child, missing in fields:
            if missing is None or draw(st.booleans()):
                items.append((name, draw(values_for(child))))
        extras = draw(st.dictionaries(st.text(max_size=4).filter(lambda k: k not in known), json_values, max_size=2))
        items += list(extras.items())
        return dict(draw(st.permutations(items)))

    return record()


def shadow(tree, counter):
    """The Avro schema of what ``tree`` writes (record and enum names made unique, fields f0, f1...)."""
    op = tree[0]
    simple = {J_NULL: "null", J_BOOL: "boolean", J_INT: "int", J_LONG: "long", J_FLOAT: "float", J_DOUBLE: "double"}
    if op in simple:
        return simple[op]
    if op in (J_STRING, J_TEXT):
        return "string"
    if op == J_BYTES_B64:
        return "bytes"
    counter[0] += 1
    number = counter[0]
    if op == J_ENUM:
        return {"type": "enum", "name": f"E{number}", "symbols": [f"S{i}" for i in range(len(tree[1]))]}
    if op == J_NULLABLE:
        child = shadow(tree[1], counter)
        return ["null", *child] if isinstance(child, list) else ["null", child]
    if op == J_ARRAY:
        return {"type": "array", "items": shadow(tree[1], counter)}
    if op == J_MAP:
        return {"type": "map", "values": shadow(tree[1], counter)}
    fields = [{"name": f"f{i}", "type": shadow(child, counter)} for i, (_, child, _) in enumerate(tree[1])]
    if tree[2]:
        fields.append({"name": "extra", "type": ["null", "string"]})
    return {"type": "record", "name": f"R{number}", "fields": fields}


def expected(tree, value):
    """What fastavro reads back for ``value`` (a json.loads result) under ``shadow(tree)``."""
    op = tree[0]
    if op == J_INT or op == J_LONG:
        return int(value)
    if op == J_FLOAT:
        return struct.unpack("<f", struct.pack("<f", float(value)))[0]
    if op == J_DOUBLE:
        return float(value)
    if op == J_BYTES_B64:
        return base64.b64decode(value)
    if op == J_ENUM:
        return f"S{tree[1].index(value)}"
    if op == J_TEXT:
        return ("json", value)
    if op == J_NULLABLE:
        return None if value is None else expected(tree[1], value)
    if op == J_ARRAY:
        return [expected(tree[1], v) for v in value]
    if op == J_MAP:
        return {k: expected(tree[1], v) for k, v in value.items()}
    if op == J_OBJECT:
        out = {}
        for i, (name, child, _) in enumerate(tree[1]):
            out[f"f{i}"] = expected(child, value[name]) if name in value else None
        if tree[2]:
            known = {name for name, _, _ in tree[1]}
            extra = {k: v for k, v in value.items() if k not in known}
            out["extra"] = ("json", extra) if extra else None
        return out
    return value


def normalise(want, got):
    """``got`` with the JSON texts parsed where ``want`` expects them."""
    if isinstance(want, tuple) and want[:1] == ("json",):
        return ("json", json.loads(got))
    if isinstance(want, dict) and isinstance(got, dict):
        return {k: normalise(want.get(k), v) for k, v in got.items()}
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [normalise(w, g) for w, g in zip(want, got)]
    return got


def dump(value, style):
    if style == 0:
        return json.dumps(value).encode()
    if style == 1:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    return json.dumps(value, indent="\t", ensure_ascii=False).encode()


@settings(max_examples=300)
@given(data=st.data(), tree=trees)
def test_random_instances_decode_to_what_json_loads_reads(both_backends, data, tree):
    values = data.draw(st.lists(values_for(tree), min_size=1, max_size=4))
    payloads = [dump(v, data.draw(st.integers(0, 2))) for v in values]
    compiled, pure = (transcode(b, tree, payloads) for b in both_backends)
    assert compiled[0] == pure[0] == [], compiled[0]
    assert compiled[1] == pure[1]
    schema = fastavro.parse_schema(shadow(tree, [0]))
    for payload, body in zip(payloads, pure[1]):
        stream = io.BytesIO(body)
        got = fastavro.schemaless_reader(stream, schema, None)
        assert stream.tell() == len(body)
        want = expected(tree, json.loads(payload))
        assert normalise(want, got) == want


@settings(max_examples=300)
@given(data=st.data(), tree=trees)
def test_twins_agree_on_mutated_payloads(both_backends, data, tree):
    payloads = []
    for _ in range(data.draw(st.integers(1, 4))):
        text = bytearray(dump(data.draw(values_for(tree) | json_values), data.draw(st.integers(0, 2))))
        for _ in range(data.draw(st.integers(0, 3))):
            action = data.draw(st.integers(0, 3))
            at = data.draw(st.integers(0, len(text)))
            if action == 0:
                del text[at:]
            elif action == 1 and at < len(text):
                text[at] = data.draw(st.sampled_from(list(b'{}[]",:\\ 0-.eE9tfnu\x00\x1f\x80\xc3\xe2\xed\xf0\xff')))
            elif action == 2:
                text[at:at] = data.draw(st.binary(min_size=1, max_size=3))
            elif at < len(text):
                del text[at]
        payloads.append(bytes(text))
    keep_going = data.draw(st.booleans())
    compiled, pure = (transcode(b, tree, payloads, keep_going=keep_going) for b in both_backends)
    assert compiled[0] == pure[0]
    assert compiled[1] == pure[1]
    assert (compiled[2] is None) == (pure[2] is None)
    if pure[2] is not None:
        assert compiled[2].tolist() == pure[2].tolist()


@settings(max_examples=200)
@given(text=st.from_regex(r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?", fullmatch=True))
def test_numbers_agree_with_python(both_backends, text):
    payload = text.encode()
    for tree in ((J_DOUBLE,), (J_FLOAT,), (J_LONG,), (J_INT,)):
        results = [one(b, tree, payload) for b in both_backends]
        assert results[0] == results[1], tree
    value = float(text)
    got = one(both_backends[0], (J_DOUBLE,), payload)
    if math.isinf(value):
        assert got == (JSON_NUMBER_RANGE, 0, J_DOUBLE)
    else:
        assert got == struct.pack("<d", value)


# -- decimal text -> double: correct rounding, bit for bit ----------------------------------------------

EXACT = decimal.Context(prec=2000, Emin=-9999, Emax=9999)  # holds any double and any midpoint exactly


def number_text(value, style, negative):
    """JSON text of the positive Decimal ``value`` in one of several spellings."""
    if style == "f" and -40 <= value.adjusted() <= 40:
        text = format(value, "f")
    elif style == "E":
        text = format(value, "E").replace("E+", "E")
    else:
        text = format(value, "e")
    return ("-" if negative else "") + text


def midpoint_above(x):
    """The exact Decimal halfway between the double ``x >= 0`` and the next double (2**1024 past DBL_MAX)."""
    upper = EXACT.power(2, 1024) if x == sys.float_info.max else decimal.Decimal(math.nextafter(x, math.inf))
    return EXACT.divide(EXACT.add(decimal.Decimal(x), upper), 2)


def significant(value, digits, rounding):
    """``value`` rounded to ``digits`` significant digits (unchanged when it has no more)."""
    return decimal.Context(prec=digits, rounding=rounding, Emin=-9999, Emax=9999).plus(value)


styles = st.sampled_from(["e", "E", "f"])
finite_doubles = st.floats(allow_nan=False, allow_infinity=False)
nonnegative_doubles = st.one_of(
    st.floats(min_value=0.0, allow_infinity=False),
    st.floats(min_value=0.0, max_value=2.2250738585072014e-308),  # subnormals
    st.floats(min_value=1e300, allow_infinity=False),  # near DBL_MAX
    st.sampled_from([0.0, 5e-324, 2.2250738585072014e-308, 9007199254740992.0, sys.float_info.max]),
)


@st.composite
def long_digit_texts(draw):
    """16-25 random significant digits at a decimal exponent anywhere from under 5e-324 to past DBL_MAX."""
    count = draw(st.integers(16, 25))
    digits = draw(st.sampled_from("123456789")) + draw(st.text("0123456789", min_size=count - 1, max_size=count - 1))
    exponent = draw(st.integers(-345, 310)) - count + 1
    return number_text(decimal.Decimal(f"{digits}e{exponent}"), draw(styles), draw(st.booleans()))


@st.composite
def near_halfway_texts(draw):
    """A midpoint between two adjacent doubles: exact, or cut to 16-25 digits (just below or above it)."""
    mid = midpoint_above(draw(nonnegative_doubles))
    rounding = draw(st.sampled_from([decimal.ROUND_DOWN, decimal.ROUND_UP, decimal.ROUND_HALF_EVEN]))
    value = mid if draw(st.booleans()) else significant(mid, draw(st.integers(16, 25)), rounding)
    return number_text(value, draw(styles), draw(st.booleans()))


@st.composite
def exact_tie_texts(draw):
    """Exact ties t * 2**k (t odd, 54 bits, with a factor 5**j) whose decimal form is short: the cases
    where the algorithm must round half to even (w <= 19 digits for small k and trailing zeros)."""
    j = draw(st.integers(0, 23))
    low, high = -(-(1 << 53) // 5**j), ((1 << 54) - 1) // 5**j
    r = draw(st.integers(low, high)) | 1
    if r > high:
        r -= 2
    k = draw(st.integers(-6, j + 12))
    value = EXACT.multiply(decimal.Decimal(5**j * r), EXACT.power(2, k))
    nudge = draw(st.sampled_from([0, 0, -1, 1]))  # one unit in the last digit off the tie
    if nudge:
        value = EXACT.add(value, decimal.Decimal((0, (1,), value.as_tuple().exponent)) * nudge)
    return number_text(value.normalize(EXACT), draw(styles), draw(st.booleans()))


def expected_bytes(text, op):
    """What the kernel must write for ``text`` under ``op``: struct.pack of float(), or the range error."""
    value = float(text)
    try:
        if math.isinf(value):
            raise OverflowError
        return struct.pack("<d", value) if op == J_DOUBLE else struct.pack("<f", value)
    except OverflowError:
        return (JSON_NUMBER_RANGE, 0, op)


def assert_numbers_exact(kernels, texts):
    payloads = [t.encode() for t in texts]
    for op in (J_DOUBLE, J_FLOAT):
        errors, rows, _ = transcode(kernels, (op,), payloads)
        errors_by_row = {row: (code, offset, detail) for code, row, offset, detail in errors}
        for i, text in enumerate(texts):
            got = errors_by_row.get(i, rows[i])
            assert got == expected_bytes(text, op), (text, op)


HARD_NUMBERS = [
    "9007199254740993",  # 2**53 + 1: a tie, rounds down to even
    "9007199254740995",  # 2**53 + 3: a tie, rounds up to even
    "9007199254740993.0000000001",
    "18014398509481988e0",
    "0.8444218515250481",
    "7.2057594037927933e16",
    "2.2250738585072011e-308",
    "2.2250738585072012e-308",
    "2.2250738585072014e-308",
    "4.9406564584124654e-324",
    "2.4703282292062327e-324",  # just under half the smallest subnormal: 0
    "2.4703282292062328e-324",  # just over: the smallest subnormal
    "1.7976931348623157e308",
    "1.7976931348623158e308",  # rounds to DBL_MAX
    "1.7976931348623159e308",  # past the midpoint to 2**1024: out of range
    "179769313486231580793728971405301e276",
    "1.00000000000000011102230246251565404236316680908203125",  # exactly 1 + 2**-53: ties to 1.0
    "1.00000000000000011102230246251565404236316680908203124",
    "1.00000000000000011102230246251565404236316680908203126",
    "9999999999999999999e-343",
    "9999999999999999999e290",
    "1e-400",
    "1e400",
    "18446744073709551615",
    "-0.000000000000000000000000000000000000000000001234567890123456789",
]


@example(texts=HARD_NUMBERS)
@settings(max_examples=300)
@given(
    texts=st.lists(
        st.one_of(finite_doubles.map(repr), long_digit_texts(), near_halfway_texts(), exact_tie_texts()),
        min_size=1,
        max_size=40,
    )
)
def test_decimal_to_double_is_correctly_rounded(backend, texts):
    assert_numbers_exact(backend, texts)


def test_decimal_to_double_on_a_large_seeded_sample(both_backends):
    """Many more numbers than hypothesis draws, in one batch, against float() (compiled twin)."""
    rng = random.Random(20240611)
    texts = []
    for _ in range(40_000):
        bits = rng.getrandbits(64)
        x = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if math.isfinite(x):
            texts.append(repr(x))
        texts.append(repr(rng.random()))
        count = rng.randint(16, 21)
        texts.append(f"{rng.randrange(10 ** (count - 1), 10**count)}e{rng.randint(-345, 310) - count + 1}")
        mid = midpoint_above(abs(x) if math.isfinite(x) else rng.random())
        texts.append(number_text(significant(mid, rng.randint(16, 19), decimal.ROUND_DOWN), "e", bits & 1))
    assert_numbers_exact(both_backends[0], texts)


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (b"nope", (JSON_UNEXPECTED_BYTE, 0, 1, ord("o"))),  # starts like null: invalid JSON, not null
        (b"nullx", (JSON_UNEXPECTED_BYTE, 0, 4, ord("x"))),
        (b"[", (JSON_TRUNCATED, 0, 1, 0)),
        (b"[1, 2] x", (JSON_UNEXPECTED_BYTE, 0, 7, ord("x"))),
        (b" [1, 2] ", (JSON_WRONG_TYPE, 0, 1, 4)),  # valid JSON of another kind: the wrong type
        (b'{"a": tru}', (JSON_UNEXPECTED_BYTE, 0, 9, ord("}"))),
    ],
)
def test_a_value_of_another_kind_is_checked_before_it_is_called_the_wrong_type(backend, payload, expected):
    """A payload that is no JSON at all is reported as invalid JSON (where it breaks), a valid one
    of another kind than the schema's as the wrong type (where it starts)."""
    errors, _, valid = transcode(backend, (J_LONG,), [payload], keep_going=True)
    assert errors == [expected] and valid.tolist() == [False]
