"""The Avro Encoder: the columnar path (encode kernel twins) against the row path, byte for byte
and error for error, plus the Arrow types the binding rescales (timestamps, dates, times, decimals)."""

from __future__ import annotations

import datetime
import decimal
import io

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_codec import avro
from pulsar_codec._kernels import _backend
from pulsar_codec.errors import EncodeError
from pulsar_codec.formats.avro import encoder as encoder_mod
from test_avro_support import encode, schemas, values


def row_path(enc: avro.Encoder, batch) -> pa.Array:
    """Encode with the row writer only (what every pairing the binding refuses goes through)."""
    original = encoder_mod._Binder.bind

    def refuse(self, *a, **k):
        raise encoder_mod._Unbindable("forced")

    encoder_mod._Binder.bind = refuse
    try:
        return enc.encode(batch)
    finally:
        encoder_mod._Binder.bind = original


def outcome(fn):
    try:
        return ("ok", fn().to_pylist())
    except EncodeError as exc:
        return ("error", type(exc), str(exc), exc.index)


def record_of(schema):
    if isinstance(schema, dict) and schema.get("type") == "record":
        return schema
    return {"type": "record", "name": "Top", "fields": [{"name": "value", "type": schema}]}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_columnar_and_row_paths_agree(both_backends, data):
    schema = record_of(data.draw(schemas()))
    records = data.draw(st.lists(values(schema), min_size=0, max_size=6))
    batch = avro.Decoder(schema).decode(encode(schema, records))
    if data.draw(st.booleans()) and batch.num_rows > 1:
        batch = batch.slice(1)  # offsets inside every array
        records = records[1:]
    enc = avro.Encoder(schema)
    got = []
    for b in both_backends:
        with _backend.use(b.name):
            got.append(outcome(lambda: enc.encode(batch)))
    with _backend.use("python"):
        got.append(outcome(lambda: row_path(enc, batch)))
    assert got[0] == got[1] == got[2]
    assert got[0][0] == "ok"
    # and the bodies read back as what was written
    parsed = fastavro.parse_schema(schema, _write_hint=False)
    for body, rec in zip(got[0][1], records):
        assert fastavro.schemaless_reader(io.BytesIO(body), parsed, None) == fastavro.schemaless_reader(
            io.BytesIO(encode(schema, [rec])[0]), parsed, None
        )


def strip_null(schema):
    """The schema with every ["null", T] replaced by T: nulls in the data become errors."""
    if isinstance(schema, list):
        others = [strip_null(b) for b in schema if b != "null"]
        return others[0] if len(others) == 1 else others
    if isinstance(schema, dict):
        out = dict(schema)
        if "fields" in out:
            out["fields"] = [dict(f, type=strip_null(f["type"])) for f in out["fields"]]
        if "items" in out:
            out["items"] = strip_null(out["items"])
        if "values" in out:
            out["values"] = strip_null(out["values"])
        return out
    return schema


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_errors_agree(both_backends, data):
    schema = record_of(data.draw(schemas()))
    records = data.draw(st.lists(values(schema), min_size=1, max_size=5))
    batch = avro.Decoder(schema).decode(encode(schema, records))
    try:
        enc = avro.Encoder(strip_null(schema))
    except Exception:  # stripping can make a union with duplicate branches: not this test's business
        return
    got = []
    for b in both_backends:
        with _backend.use(b.name):
            got.append(outcome(lambda: enc.encode(batch)))
    with _backend.use("python"):
        got.append(outcome(lambda: row_path(enc, batch)))
    assert got[0] == got[1] == got[2]


def both(enc, batch, both_backends):
    out = []
    for b in both_backends:
        with _backend.use(b.name):
            out.append(outcome(lambda: enc.encode(batch)))
    assert out[0] == out[1]
    return out[0]


def test_int_range_and_float_overflow(both_backends):
    batch = pa.record_batch({"i": pa.array([1, 2**31], pa.int64()), "f": pa.array([1.0, 1e39])})
    enc = avro.Encoder(
        {"type": "record", "name": "R", "fields": [{"name": "i", "type": "int"}, {"name": "f", "type": "float"}]}
    )
    res = both(enc, batch, both_backends)
    assert res[0] == "error" and res[3] == 1 and "R.i" in res[2] and "2147483648" in res[2]
    ok = pa.record_batch({"i": pa.array([3], pa.int8()), "f": pa.array([1e39])})
    res = both(enc, ok, both_backends)
    assert res[0] == "error" and "R.f" in res[2]
    assert res == outcome(lambda: row_path(enc, ok))


def test_timestamps_dates_and_times_are_rescaled(both_backends):
    schema = {
        "type": "record",
        "name": "T",
        "fields": [
            {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "ns", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
            {"name": "d", "type": {"type": "int", "logicalType": "date"}},
            {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}},
        ],
    }
    ns = np.array([-1_500_000_001, 0, 1_700_000_000_123_456_789], dtype=np.int64)
    batch = pa.record_batch(
        {
            "ms": pa.array(ns, pa.timestamp("ns", tz="UTC")),
            "us": pa.array(ns // 1000, pa.timestamp("us")),
            "ns": pa.array(ns // 10**9, pa.timestamp("s")),
            "d": pa.array(np.array([-86_400_001, 0, 86_400_000 * 3], dtype=np.int64), pa.date64()),
            "t": pa.array([1_000_999, 0, 86_399_999_999], pa.time64("us")),
        }
    )
    res = both(avro.Encoder(schema), batch, both_backends)
    assert res[0] == "ok"
    parsed = fastavro.parse_schema({**schema, "fields": [dict(f, type=f["type"]["type"]) for f in schema["fields"]]})
    rows = [fastavro.schemaless_reader(io.BytesIO(b), parsed, None) for b in res[1]]
    assert [r["ms"] for r in rows] == [-1501, 0, 1_700_000_000_123]  # floor division
    assert [r["us"] for r in rows] == [-1_500_001, 0, 1_700_000_000_123_456]
    assert [r["ns"] for r in rows] == [-2 * 10**9, 0, 1_700_000_000 * 10**9]
    assert [r["d"] for r in rows] == [-2, 0, 3]
    assert [r["t"] for r in rows] == [1000, 0, 86_399_999]


def _logical(name, typ):
    return {"type": "record", "name": "T", "fields": [{"name": "v", "type": {"type": typ, "logicalType": name}}]}


def test_rescale_overflow_is_an_error_not_a_wrapped_value(both_backends):
    # 9999-12-31 in microseconds is past int64 in nanoseconds: the multiplication used to wrap
    # silently (the body then decoded as 1816-03-29)
    enc = avro.Encoder(_logical("timestamp-nanos", "long"))
    batch = pa.record_batch(
        {"v": pa.array([datetime.datetime(2020, 1, 1), datetime.datetime(9999, 12, 31)], pa.timestamp("us"))}
    )
    for res in (both(enc, batch, both_backends), outcome(lambda: row_path(enc, batch))):
        assert res[0] == "error" and res[1] is EncodeError and res[3] == 1, res
        assert "timestamp-nanos" in res[2]
    # nulls and in-range values still take the columnar path and round-trip
    ok = pa.record_batch({"v": pa.array([datetime.datetime(2020, 1, 1), None], pa.timestamp("us"))})
    assert avro.Decoder(enc.schema).decode(both(enc, ok, both_backends)[1]).column(0).cast(pa.int64()).to_pylist() == [
        1_577_836_800 * 10**9,
        None,
    ]
    # beyond what datetime can hold: still an EncodeError, never an OverflowError
    far = pa.record_batch({"v": pa.array([2**62], pa.timestamp("s"))})
    assert both(avro.Encoder(_logical("timestamp-millis", "long")), far, both_backends)[0] == "error"


@pytest.mark.parametrize(
    "logical, column",
    [
        ("date", pa.array([0, 2**40], pa.int64())),
        ("time-millis", pa.array([0, 10**16], pa.time64("ns"))),
        ("time-millis", pa.array([0, 2**31 - 1], pa.time32("s"))),
    ],
)
def test_int_based_logical_types_stay_in_the_int_range(both_backends, logical, column):
    # date and time-millis are Avro ints: a 64-bit varint is a body no reader accepts
    enc = avro.Encoder(_logical(logical, "int"))
    batch = pa.record_batch({"v": column})
    res = both(enc, batch, both_backends)
    assert res[0] == "error" and res[3] == 1, res
    if logical == "date":  # (pyarrow's to_pylist folds times past a day into the day first)
        assert outcome(lambda: row_path(enc, batch))[0] == "error"


@pytest.mark.parametrize("fixed", [False, True])
def test_decimals(both_backends, fixed):
    dec = {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 2}
    if fixed:
        dec = {"type": "fixed", "name": "D", "size": 3, "logicalType": "decimal", "precision": 6, "scale": 2}
    schema = {"type": "record", "name": "R", "fields": [{"name": "x", "type": dec}]}
    vals = ["0", "-0.01", "-1.28", "1.27", "-1.29", "-327.68", "12.34"]
    arr = pa.array([decimal.Decimal(v) for v in vals], pa.decimal128(30 if not fixed else 6, 2))
    batch = pa.record_batch({"x": arr})
    res = both(avro.Encoder(schema), batch, both_backends)
    assert res == outcome(lambda: row_path(avro.Encoder(schema), batch))
    assert res[0] == "ok"
    back = avro.Decoder(schema).decode(res[1]).column("x").to_pylist()
    assert back == [decimal.Decimal(v) for v in vals]
    if fixed:  # 2**23 / 100 does not fit 3 bytes
        big = pa.record_batch({"x": pa.array([decimal.Decimal("83886.08")], pa.decimal128(7, 2))})
        res = both(avro.Encoder(schema), big, both_backends)
        assert res[0] == "error" and res == outcome(lambda: row_path(avro.Encoder(schema), big))


def test_enum_from_strings_and_dictionaries(both_backends):
    schema = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}}],
    }
    enc = avro.Encoder(schema)
    for col in (pa.array(["B", "A"]), pa.array(["B", "A"]).dictionary_encode()):
        res = both(enc, pa.record_batch({"e": col}), both_backends)
        assert res == ("ok", [b"\x02", b"\x00"])
    bad = pa.record_batch({"e": pa.array(["A", "C"]).dictionary_encode()})
    res = both(enc, bad, both_backends)
    assert res[0] == "error" and res[3] == 1 and res == outcome(lambda: row_path(enc, bad))


def test_tombstones_and_chunked_tables(both_backends):
    schema = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "a", "type": "long"}, {"name": "m", "type": {"type": "map", "values": "int"}}],
    }
    t = pa.table(
        {
            "a": pa.chunked_array([pa.array([1, None], pa.int64()), pa.array([3], pa.int64())]),
            "m": pa.chunked_array(
                [
                    pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int32())),
                    pa.array([[]], pa.map_(pa.string(), pa.int32())),
                ]
            ),
        }
    )
    res = both(avro.Encoder(schema), t, both_backends)
    assert res[0] == "ok" and res[1][1] is None
    assert res == outcome(lambda: row_path(avro.Encoder(schema), t))


def test_unbindable_pairings_use_the_row_writer(both_backends):
    # a general union and a uint64 column: the row path, same result on both backends
    schema = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "u", "type": ["null", "long", "string"]}, {"name": "n", "type": "long"}],
    }
    batch = pa.record_batch({"u": pa.array([None, None]), "n": pa.array([1, 2], pa.uint64())})
    res = both(avro.Encoder(schema), batch, both_backends)
    assert res == ("ok", [b"\x00\x02", b"\x00\x04"])


@pytest.mark.parametrize("wide", [False, True], ids=["32-bit buffers", "64-bit buffers"])
@pytest.mark.parametrize("start", [0, 1, 3])
def test_value_and_offset_widths_give_the_same_bytes(both_backends, wide, start):
    # The compiled twin reads int32 / float32 values and 32-bit offsets where Arrow holds them, and
    # the 64-bit forms likewise: both layouts, sliced or not, must write what the row writer writes.
    schema = {
        "type": "record",
        "name": "W",
        "fields": [
            {"name": "i", "type": "int"},
            {"name": "l", "type": "long"},
            {"name": "f", "type": "float"},
            {"name": "d", "type": "double"},
            {"name": "s", "type": ["null", "string"]},
            {"name": "b", "type": "bytes"},
            {"name": "a", "type": {"type": "array", "items": ["null", "int"]}},
            {"name": "m", "type": {"type": "map", "values": "double"}},
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y", "Z"]}},
            {"name": "u", "type": ["int", "string"]},
        ],
    }
    ints = [0, -1, 2**31 - 1, -(2**31), 5, 64, -65]
    floats = [0.0, -1.5, 3.25, 1e30, -2.5e-10, 7.0, 0.1]
    string = pa.large_string() if wide else pa.string()
    binary = pa.large_binary() if wide else pa.binary()
    list_of = pa.large_list if wide else pa.list_
    union = pa.UnionArray.from_dense(
        pa.array([0, 1, 0, 1, 1, 0, 0], pa.int8()),
        pa.array([0, 0, 1, 1, 2, 2, 3], pa.int32()),
        [pa.array([1, 2, 3, 4], pa.int32()), pa.array(["p", "q", "r"], pa.string())],
        ["i", "s"],
    )
    batch = pa.record_batch(
        {
            "i": pa.array(ints, pa.int64() if wide else pa.int32()),
            "l": pa.array([v * 3 for v in ints], pa.int64()),
            "f": pa.array(floats, pa.float64() if wide else pa.float32()),
            "d": pa.array(floats, pa.float64() if wide else pa.float32()),
            "s": pa.array(["", None, "héllo", "x" * 200, "a", None, "z"], string),
            "b": pa.array([b"", b"\x00", b"\xff" * 3, b"q", b"", b"r", b"s"], binary),
            "a": pa.array([[1, None], [], None, [2], [3, 4, 5], [], [None]], list_of(pa.int32())).fill_null([]),
            "m": pa.array(
                [[("k", 1.5)], [], [("a", 2.0), ("b", -3.0)], [], [("c", 0.25)], [], [("z", 1.0)]],
                pa.map_(string, pa.float64()),
            ),
            "e": pa.array(["X", "Z", "Y", "X", "Z", "Y", "X"]).dictionary_encode(),
            "u": union,
        }
    ).slice(start)
    enc = avro.Encoder(schema)
    res = both(enc, batch, both_backends)
    assert res[0] == "ok"
    assert res == outcome(lambda: row_path(enc, batch))
    parsed = fastavro.parse_schema(schema, _write_hint=False)
    rows = [fastavro.schemaless_reader(io.BytesIO(body), parsed, None) for body in res[1]]
    assert [r["i"] for r in rows] == ints[start:]
    assert [r["s"] for r in rows] == batch.column("s").to_pylist()
    assert [r["u"] for r in rows] == union.slice(start).to_pylist()
    assert [r["f"] for r in rows] == pa.array(floats[start:], pa.float32()).to_pylist()


def test_offsets_at_a_misaligned_address(both_backends):
    # a buffer built by hand can start at any address; the compiled twin indexes offsets directly,
    # so such a view is copied first: the bytes are the same as for an aligned array
    raw = b"\x00" + np.array([0, 1, 3, 6], dtype="<i4").tobytes()
    offsets = pa.py_buffer(raw)[1:]
    strings = pa.Array.from_buffers(pa.string(), 3, [None, offsets, pa.py_buffer(b"abcdef")])
    schema = {"type": "record", "name": "R", "fields": [{"name": "s", "type": "string"}]}
    res = both(avro.Encoder(schema), pa.record_batch({"s": strings}), both_backends)
    assert res == ("ok", [b"\x02a", b"\x04bc", b"\x06def"])


def test_row_writer_refuses_text_and_mappings_as_arrays_or_maps():
    # str, bytes and dict iterate, but a string written as an array of its characters (what
    # fastavro does) or a dict as an array of its keys is never what was meant
    encoder = encoder_mod.Encoder(
        avro.parse(
            {
                "type": "record",
                "name": "R",
                "fields": [
                    {"name": "tags", "type": {"type": "array", "items": "string"}},
                    {"name": "attrs", "type": {"type": "map", "values": "int"}},
                ],
            }
        )
    )
    for tags in ("abc", b"ab", {"a": 1}, 5):
        with pytest.raises(EncodeError, match=r"R\.tags: .* is not an array"):
            encoder.encode_value({"tags": tags, "attrs": {}})
    for attrs in ("ab", [1, 2], [("a", 1, 2)], 7):
        with pytest.raises(EncodeError, match=r"R\.attrs: .* is not a map"):
            encoder.encode_value({"tags": [], "attrs": attrs})
    # any other iterable of items still is an array; pairs still are a map
    assert encoder.encode_value({"tags": (t for t in ["x"]), "attrs": [("k", 1)]}) == b"\x02\x02x\x00\x02\x02k\x02\x00"
