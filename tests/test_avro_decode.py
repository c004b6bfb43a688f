"""Avro -> Arrow decoding: type mapping, golden vectors, errors, fastavro differential, twin parity."""

from __future__ import annotations

import datetime
import decimal
import json
import struct

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_codec import avro
from pulsar_codec._kernels import _backend
from pulsar_codec.errors import AvroDecodeError, ErrorCode, PulsarCodecError, SchemaError
from test_avro_support import encode, fastavro_read, norm_s, same_batch, schemas, values


def zz(n: int) -> bytes:
    v = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def rec(*fields):
    return {"type": "record", "name": "R", "fields": [{"name": n, "type": t} for n, t in fields]}


# -- §11.6 vectors and primitives -------------------------------------------------------------------


def test_spec_vectors(backend):
    dec = avro.Decoder(rec(("a", "long"), ("b", "string")))
    batch = dec.decode([bytes.fromhex("36 06 66 6F 6F")])
    assert batch.to_pylist() == [{"a": 27, "b": "foo"}]
    assert avro.Decoder({"type": "array", "items": "long"}).decode([bytes.fromhex("04 06 36 00")]).to_pylist() == [
        {"value": [3, 27]}
    ]
    u = avro.Decoder(["null", "string"]).decode([b"\x00", bytes.fromhex("02 02 61")])
    assert u.column(0).to_pylist() == [None, "a"]
    longs = avro.Decoder("long").decode([bytes.fromhex(h) for h in ("00", "01", "02", "03", "04", "7F", "80 01")])
    assert longs.column(0).to_pylist() == [0, -1, 1, -2, 2, -64, 64]


def test_varint_limits(backend):
    dec = avro.Decoder("long")
    vals = [2**63 - 1, -(2**63), 0, 1 << 62]
    out = dec.decode([zz(v) for v in vals]).column(0).to_pylist()
    assert out == vals
    assert len(zz(-(2**63))) == 10
    ints = avro.Decoder("int").decode([zz(2**31 - 1), zz(-(2**31))]).column(0).to_pylist()
    assert ints == [2**31 - 1, -(2**31)]
    with pytest.raises(AvroDecodeError) as e:
        avro.Decoder("int").decode([b"\x00", zz(2**31)])
    assert (e.value.code, e.value.index, e.value.offset, e.value.detail) == (
        ErrorCode.AVRO_INT_OUT_OF_RANGE,
        1,
        0,
        2**31,
    )
    with pytest.raises(AvroDecodeError) as e:
        dec.decode([b"\x80" * 10 + b"\x01"])
    assert e.value.code == ErrorCode.AVRO_VARINT_TOO_LONG and e.value.offset == 0


def test_floats_nan_and_signed_zero(backend):
    dec = avro.Decoder(rec(("f", "float"), ("d", "double")))
    bodies = [struct.pack("<fd", float("nan"), -0.0), struct.pack("<fd", -0.0, float("inf"))]
    b = dec.decode(bodies)
    f, d = b.column(0).to_pylist(), b.column(1).to_pylist()
    assert f[0] != f[0] and str(d[0]) == "-0.0"
    assert str(f[1]) == "-0.0" and d[1] == float("inf")


def test_empty_things(backend):
    dec = avro.Decoder(
        rec(
            ("s", "string"),
            ("b", "bytes"),
            ("a", {"type": "array", "items": "int"}),
            ("m", {"type": "map", "values": "int"}),
            ("e", {"type": "record", "name": "E", "fields": []}),
        )
    )
    b = dec.decode([b"\x00\x00\x00\x00"])
    assert b.to_pylist() == [{"s": "", "b": b"", "a": [], "m": [], "e": {}}]
    empty = avro.Decoder({"type": "record", "name": "X", "fields": []})
    assert empty.decode([b"", b""]).num_rows == 2
    assert avro.Decoder("null").decode([b""]).column(0).type == pa.null()


def test_blocks_with_negative_counts(backend):
    dec = avro.Decoder({"type": "array", "items": "long"})
    # block of 2 (count -2, size 2), then block of 1, then end
    body = zz(-2) + zz(2) + zz(1) + zz(2) + zz(1) + zz(3) + b"\x00"
    assert dec.decode([body]).column(0).to_pylist() == [[1, 2, 3]]
    mdec = avro.Decoder({"type": "map", "values": "string"})
    body = zz(-1) + zz(6) + zz(1) + b"a" + zz(2) + b"xy" + zz(1) + zz(1) + b"b" + zz(0) + b"\x00"
    assert mdec.decode([body]).column(0).to_pylist() == [[("a", "xy"), ("b", "")]]


def test_type_mapping():
    schema = rec(
        ("e", {"type": "enum", "name": "E", "symbols": ["A", "B"]}),
        ("fx", {"type": "fixed", "name": "F", "size": 3}),
        ("d1", {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}),
        ("d2", {"type": "fixed", "name": "D", "size": 20, "logicalType": "decimal", "precision": 40, "scale": 0}),
        ("u", {"type": "string", "logicalType": "uuid"}),
        ("dt", {"type": "int", "logicalType": "date"}),
        ("tm", {"type": "int", "logicalType": "time-millis"}),
        ("tu", {"type": "long", "logicalType": "time-micros"}),
        ("ts", {"type": "long", "logicalType": "timestamp-nanos"}),
        ("lt", {"type": "long", "logicalType": "local-timestamp-micros"}),
        ("du", {"type": "fixed", "name": "Du", "size": 12, "logicalType": "duration"}),
        ("x", {"type": "long", "logicalType": "unknown"}),
        ("n", ["string", "null"]),
        ("un", ["int", "string"]),
        ("a", {"type": "array", "items": ["null", "int"]}),
        ("m", {"type": "map", "values": "long"}),
    )
    s = avro.Decoder(schema).arrow_schema
    assert s.field("e").type == pa.dictionary(pa.int32(), pa.string())
    assert s.field("fx").type == pa.binary(3)
    assert s.field("d1").type == pa.decimal128(10, 2)
    assert s.field("d2").type == pa.decimal256(40, 0)
    assert s.field("u").type == pa.string()
    assert s.field("dt").type == pa.date32()
    assert s.field("tm").type == pa.time32("ms")
    assert s.field("tu").type == pa.time64("us")
    assert s.field("ts").type == pa.timestamp("ns", tz="UTC")
    assert s.field("lt").type == pa.timestamp("us")
    assert s.field("du").type == pa.month_day_nano_interval()
    assert s.field("x").type == pa.int64()
    assert s.field("n").type == pa.string()
    assert s.field("un").type == pa.dense_union([pa.field("int", pa.int32()), pa.field("string", pa.string())], [0, 1])
    assert s.field("a").type == pa.list_(pa.field("item", pa.int32(), nullable=True))
    assert s.field("m").type == pa.map_(pa.string(), pa.field("value", pa.int64(), nullable=False))
    assert all(f.nullable for f in s)  # any message may be null
    assert avro.Decoder("int").arrow_schema.names == ["value"]


def test_logical_values(backend):
    schema = rec(
        ("d", {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}),
        ("d2", {"type": "fixed", "name": "D", "size": 20, "logicalType": "decimal", "precision": 40, "scale": 0}),
        ("du", {"type": "fixed", "name": "Du", "size": 12, "logicalType": "duration"}),
        ("ts", {"type": "long", "logicalType": "timestamp-nanos"}),
    )
    body = zz(2) + (-12345).to_bytes(2, "big", signed=True)
    body += (-(10**39)).to_bytes(20, "big", signed=True)
    body += struct.pack("<III", 14, 3, 1500)
    body += zz(1_500_000_000)
    b = avro.Decoder(schema).decode([body])
    row = b.to_pylist()[0]
    assert row["d"] == decimal.Decimal("-123.45")
    assert row["d2"] == decimal.Decimal(-(10**39))
    assert b.column(2)[0].value == pa.MonthDayNano([14, 3, 1_500_000_000])
    assert b.column(3).cast(pa.int64()).to_pylist() == [1_500_000_000]


def test_null_payloads_make_null_rows(backend):
    dec = avro.Decoder(
        rec(
            ("a", "long"),
            ("u", ["int", "string"]),
            ("r", {"type": "record", "name": "In", "fields": [{"name": "x", "type": "int"}]}),
        )
    )
    bodies = [zz(1) + zz(0) + zz(5) + zz(7), None, zz(2) + zz(1) + zz(1) + b"s" + zz(8)]
    b = dec.decode(pa.array(bodies, pa.binary()))
    assert b.to_pylist() == [
        {"a": 1, "u": 5, "r": {"x": 7}},
        {"a": None, "u": None, "r": None},
        {"a": 2, "u": "s", "r": {"x": 8}},
    ]


def test_input_forms(backend):
    dec = avro.Decoder("long")
    bodies = [zz(1), zz(2), None, zz(3)]
    expect = [1, 2, None, 3]
    for form in (
        bodies,
        pa.array(bodies, pa.binary()),
        pa.array(bodies, pa.large_binary()),
        pa.array(bodies, pa.binary_view()),
        pa.chunked_array([pa.array(bodies[:2], pa.binary()), pa.array(bodies[2:], pa.binary())]),
        pa.array(bodies, pa.binary()).slice(1),
    ):
        got = dec.decode(form).column(0).to_pylist()
        assert got == (expect[1:] if isinstance(form, pa.Array) and form.offset else expect)


def test_deep_nesting(backend):
    schema: object = "int"
    for i in range(40):
        schema = {
            "type": "record",
            "name": f"L{i}",
            "fields": [{"name": "x", "type": schema}, {"name": "a", "type": {"type": "array", "items": "int"}}],
        }
    body = zz(7) + b"\x00" * 39 + b"\x02\x04\x00"  # innermost first; only the outermost array has an item
    b = avro.Decoder(schema).decode([body])
    v = b.to_pylist()[0]
    assert v["a"] == [2]
    for _ in range(39):
        v = v["x"]
    assert v == {"x": 7, "a": []}


# -- schema errors ------------------------------------------------------------------------------------


def test_recursive_schema_refused():
    linked = {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}
    with pytest.raises(SchemaError, match="Node"):
        avro.Decoder(linked)


@pytest.mark.parametrize(
    "bad",
    [
        "nope",
        {"type": "record", "name": "R"},
        {"type": "enum", "name": "E", "symbols": ["A", "A"]},
        {"type": "fixed", "name": "F", "size": -1},
        ["int", "int"],
        ["null", ["int"]],
        {"type": "record", "name": "R", "fields": [{"name": "a", "type": "Missing"}]},
        "{not json",
    ],
)
def test_bad_schemas(bad):
    with pytest.raises(SchemaError):
        avro.Decoder(bad)


def test_named_references_and_namespaces(backend):
    schema = {
        "type": "record",
        "name": "Outer",
        "namespace": "a.b",
        "fields": [
            {"name": "p", "type": {"type": "record", "name": "Point", "fields": [{"name": "x", "type": "int"}]}},
            {"name": "q", "type": "Point"},
            {"name": "r", "type": "a.b.Point"},
            {"name": "e", "type": {"type": "enum", "name": "c.E", "symbols": ["X"]}},
            {"name": "f", "type": "c.E"},
        ],
    }
    b = avro.Decoder(json.dumps(schema)).decode([zz(1) + zz(2) + zz(3) + b"\x00\x00"])
    assert b.to_pylist() == [{"p": {"x": 1}, "q": {"x": 2}, "r": {"x": 3}, "e": "X", "f": "X"}]


# -- data errors -------------------------------------------------------------------------------------

_ERR_SCHEMA = rec(
    ("i", "int"),
    ("s", "string"),
    ("b", "boolean"),
    ("u", ["null", "long"]),
    ("e", {"type": "enum", "name": "E", "symbols": ["A", "B"]}),
    ("a", {"type": "array", "items": "long"}),
)
_GOOD = zz(1) + zz(2) + b"hi" + b"\x01" + zz(1) + zz(5) + zz(1) + zz(1) + zz(9) + b"\x00"


@pytest.mark.parametrize(
    "body, code, offset, detail",
    [
        (_GOOD[:3], ErrorCode.AVRO_LENGTH_PAST_END, 1, 2),
        (_GOOD + b"\x00\x00", ErrorCode.AVRO_TRAILING_BYTES, len(_GOOD), 2),
        (zz(1) + zz(-1), ErrorCode.AVRO_NEGATIVE_LENGTH, 1, -1),
        (zz(1) + zz(2) + b"\xff\xfe", ErrorCode.AVRO_INVALID_UTF8, 2, 0),
        (zz(1) + zz(0) + b"\x02", ErrorCode.AVRO_BAD_BOOLEAN, 2, 2),
        (zz(1) + zz(0) + b"\x01" + zz(2), ErrorCode.AVRO_BAD_UNION_INDEX, 3, 2),
        (zz(1) + zz(0) + b"\x01" + zz(0) + zz(2), ErrorCode.AVRO_BAD_ENUM_INDEX, 4, 2),
        (zz(1) + zz(0) + b"\x01" + zz(0) + zz(0) + zz(100), ErrorCode.AVRO_BLOCK_COUNT_TOO_LARGE, 5, 100),
        (zz(1) + zz(0) + b"\x01" + zz(0) + zz(0) + zz(-1) + zz(-3), ErrorCode.AVRO_NEGATIVE_BLOCK_SIZE, 6, -3),
        (zz(1) + zz(0) + b"\x01" + zz(0) + zz(0) + zz(1), ErrorCode.AVRO_BLOCK_COUNT_TOO_LARGE, 5, 1),
        (b"", ErrorCode.AVRO_TRUNCATED, 0, 1),
        (b"\x80", ErrorCode.AVRO_TRUNCATED, 0, 1),
    ],
)
def test_decode_errors(backend, body, code, offset, detail):
    dec = avro.Decoder(_ERR_SCHEMA)
    assert dec.decode([_GOOD]).num_rows == 1
    with pytest.raises(AvroDecodeError) as e:
        dec.decode([_GOOD, None, body])
    assert (e.value.code, e.value.index, e.value.offset, e.value.detail) == (code, 2, offset, detail)
    assert f"(message 2, byte {offset})" in str(e.value)


def test_zero_size_items_are_bounded(backend):
    dec = avro.Decoder({"type": "array", "items": "null"})
    assert dec.decode([zz(5) + b"\x00"]).column(0).to_pylist() == [[None] * 5]
    with pytest.raises(AvroDecodeError) as e:
        dec.decode([zz(2**40) + b"\x00"])
    assert e.value.code == ErrorCode.AVRO_TOO_MANY_EMPTY_ITEMS
    # the limit is per message, across blocks: 2**20 items pass, one more names the limit
    assert len(dec.decode([zz(2**19) + zz(2**19) + b"\x00"]).column(0)[0]) == 2**20
    with pytest.raises(AvroDecodeError, match="limit of 1048576 items that take no bytes") as e:
        dec.decode([zz(2**19) + zz(2**19 + 1) + b"\x00"])
    assert (e.value.code, e.value.offset, e.value.detail) == (ErrorCode.AVRO_TOO_MANY_EMPTY_ITEMS, 3, 2**19 + 1)
    assert "remaining bytes" not in str(e.value)
    empty = avro.Decoder({"type": "array", "items": {"type": "record", "name": "E", "fields": []}})
    with pytest.raises(AvroDecodeError, match="items that take no bytes"):
        empty.decode([zz(2**20 + 1) + b"\x00"])


def test_items_of_no_size_cost_no_python_object_each():
    """The pure twin keeps null and record-mark slots as counts and validity as one byte each, as
    the C builders do: 2^20 nulls per message, which the limit allows, once cost 9 bytes of Python
    list per item, so a few KB of messages grew past any memory."""
    import tracemalloc

    from pulsar_codec._kernels import _backend

    dec = avro.Decoder({"type": "array", "items": "null"})
    messages = [zz(2**20) + b"\x00"] * 3
    with _backend.use("python"):
        dec.decode([zz(1) + b"\x00"])  # plans and closures made before measuring
        tracemalloc.start()
        try:
            out = dec.decode(messages)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert [len(v) for v in out.column(0).to_pylist()] == [2**20] * 3
    assert peak < 3 * 3 * 2**20  # bytes: under 3 per item (a list of placeholders took 9)


def test_a_list_past_32_bit_offsets_is_output_too_large(monkeypatch):
    """Arrow lists have 32-bit offsets: the C builders stop a batch whose items pass 2^31 - 1 with
    AVRO_OUTPUT_TOO_LARGE at the end of the list (offset) and the item count (detail); the pure
    twin too (its bound lowered here: 2^31 items take minutes in Python)."""
    from pulsar_codec._kernels import _backend, avro_py

    monkeypatch.setattr(avro_py, "_INT32_MAX", 5)
    dec = avro.Decoder({"type": "array", "items": "null"})
    with _backend.use("python"):
        out = dec.decode([zz(3) + b"\x00", zz(2) + zz(1) + b"\x00", zz(1) + b"\x00"], on_error="null")
    assert out.batch.column(0).to_pylist() == [[None] * 3, None, [None]]
    assert out.errors.select(["index", "code", "offset"]).to_pylist() == [
        {"index": 1, "code": ErrorCode.AVRO_OUTPUT_TOO_LARGE, "offset": 3}
    ]


def test_on_error_null(backend):
    dec = avro.Decoder(_ERR_SCHEMA)
    bad = zz(1) + zz(0) + b"\x05"
    res = dec.decode([_GOOD, bad, None, _GOOD[:4], _GOOD], on_error="null")
    assert isinstance(res, avro.Decoded)
    rows = res.batch.to_pylist()
    assert rows[0] == rows[4] and rows[0]["s"] == "hi" and rows[0]["a"] == [9]
    assert rows[1] == rows[2] == rows[3] == {k: None for k in rows[0]}
    assert res.errors.column("index").to_pylist() == [1, 3]
    assert res.errors.column("code").to_pylist() == [ErrorCode.AVRO_BAD_BOOLEAN, ErrorCode.AVRO_TRUNCATED]
    assert res.errors.column("offset").to_pylist() == [2, 4]
    assert "invalid boolean byte 0x05 (message 1, byte 2)" == res.errors.column("message")[0].as_py()
    res.batch.validate(full=True)
    with pytest.raises(ValueError):
        dec.decode([_GOOD], on_error="ignore")


# -- fastavro differential -------------------------------------------------------------------------


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_against_fastavro(backend, data):
    schema = data.draw(schemas())
    records = data.draw(st.lists(values(schema), max_size=5))
    bodies = encode(schema, records)
    expected = [norm_s(schema, fastavro_read(b, schema)) for b in bodies]
    batch = avro.Decoder(schema).decode(bodies)
    batch.validate(full=True)
    if isinstance(schema, dict) and schema.get("type") == "record":
        got = [norm_s(schema, r) for r in batch.to_pylist()]
    else:
        got = [norm_s(schema, v) for v in batch.column(0).to_pylist()]
    assert got == expected


# -- twin parity on valid, mutated and truncated bodies --------------------------------------------


def _outcome(dec, bodies, on_error="raise"):
    try:
        return "ok", dec.decode(bodies, on_error=on_error)
    except PulsarCodecError as exc:
        assert isinstance(exc, AvroDecodeError), exc
        return "err", (type(exc), exc.code, exc.index, exc.offset, exc.detail, str(exc))


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_mutated_bodies_parity(both_backends, data):
    schema = data.draw(schemas())
    records = data.draw(st.lists(values(schema), min_size=1, max_size=4))
    bodies = encode(schema, records)
    mutated = []
    for b in bodies:
        op = data.draw(st.sampled_from(["keep", "truncate", "flip", "insert", "random"]))
        if op == "truncate" and b:
            b = b[: data.draw(st.integers(0, len(b) - 1))]
        elif op == "flip" and b:
            i = data.draw(st.integers(0, len(b) - 1))
            b = b[:i] + bytes([data.draw(st.integers(0, 255))]) + b[i + 1 :]
        elif op == "insert":
            i = data.draw(st.integers(0, len(b)))
            b = b[:i] + data.draw(st.binary(min_size=1, max_size=3)) + b[i:]
        elif op == "random":
            b = data.draw(st.binary(max_size=30))
        mutated.append(b)
    dec = avro.Decoder(schema)
    compiled, pure = both_backends
    for on_error in ("raise", "null"):
        with _backend.use(compiled.name):
            c = _outcome(dec, mutated, on_error)
        with _backend.use(pure.name):
            p = _outcome(dec, mutated, on_error)
        assert c[0] == p[0]
        if c[0] == "err":
            assert c[1] == p[1]
        elif on_error == "null":
            assert same_batch(c[1].batch, p[1].batch)
            assert c[1].errors.equals(p[1].errors)
            c[1].batch.validate(full=True)
        else:
            assert same_batch(c[1], p[1])
            # values too: a time outside one day, a decimal past its precision are bad rows, never invalid Arrow
            c[1].validate(full=True)


def test_dates_round_trip_against_fastavro(backend):
    schema = rec(
        ("d", {"type": "int", "logicalType": "date"}), ("t", {"type": "long", "logicalType": "timestamp-micros"})
    )
    records = [{"d": datetime.date(2024, 2, 29), "t": datetime.datetime(2024, 1, 1, 12, 0, 0, 5, tzinfo=datetime.UTC)}]
    assert avro.Decoder(schema).decode(encode(schema, records)).to_pylist() == records
