"""Avro encoding refuses what the bytes could not hold exactly (probe23): decimals past their
precision or scale, map keys that are not strings, struct fields and columns that would be dropped;
and it writes an Arrow union's elements with the branch their type code names, so that decoded
unions encode back to the bytes they came from. Run on both kernel twins (the ``backend`` fixture),
with fastavro as the oracle for the bytes."""

from __future__ import annotations

import decimal
import io
import json

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pulsar_codec as pc
from pulsar_codec import avro
from pulsar_codec._kernels import _backend
from pulsar_codec.errors import EncodeError
from test_avro_encode import row_path  # the row writer alone

D = decimal.Decimal


def record(*fields) -> dict:
    return {"type": "record", "name": "R", "fields": [{"name": n, "type": t} for n, t in fields]}


def fastavro_bodies(schema, records) -> list[bytes]:
    parsed = fastavro.parse_schema(schema)
    out = []
    for r in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, r)
        out.append(buf.getvalue())
    return out


def both_paths(enc: avro.Encoder, batch) -> list:
    """The bodies from the columnar path and from the row path (they must agree)."""
    a = enc.encode(batch).to_pylist()
    assert row_path(enc, batch).to_pylist() == a
    return a


DEC_BYTES = {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2}
DEC_FIXED = {"type": "fixed", "name": "F3", "size": 3, "logicalType": "decimal", "precision": 5, "scale": 2}


# -- 1. a decimal with more digits than the schema's precision ------------------------------------


@pytest.mark.parametrize("dec", [DEC_BYTES, DEC_FIXED], ids=["bytes", "fixed"])
@pytest.mark.parametrize(
    "arrow_type, value",
    [
        (pa.decimal128(38, 2), "1234567.89"),
        (pa.decimal128(7, 2), "83886.07"),  # fits fixed(3), not precision 5
        (pa.decimal256(40, 2), "1234567.89"),
        (pa.decimal128(6, 2), "-1000.00"),
    ],
)
def test_decimal_past_the_precision_is_an_error(backend, dec, arrow_type, value):
    enc = avro.Encoder(record(("d", dec)))
    batch = pa.record_batch({"d": pa.array([D("999.99"), D(value)], arrow_type)})
    with pytest.raises(EncodeError, match=r"^row 1: R\.d: .* more digits than the schema's precision 5") as exc:
        enc.encode(batch)
    assert exc.value.index == 1
    good = pa.record_batch({"d": pa.array([D("999.99"), D("-999.99"), D("0")], arrow_type)})
    bodies = both_paths(enc, good)
    assert bodies == fastavro_bodies(record(("d", dec)), [{"d": D(v)} for v in ("999.99", "-999.99", "0.00")])


def test_decimal_past_the_precision_in_a_nested_column(backend):
    enc = avro.Encoder(record(("xs", {"type": "array", "items": ["null", DEC_BYTES]})))
    col = pa.array([[D("1.00")], [None, D("-1234567.89")]], pa.list_(pa.decimal128(38, 2)))
    with pytest.raises(EncodeError, match=r"^row 1: R\.xs\[\]\[1\]: .* more digits") as exc:
        enc.encode(pa.record_batch({"xs": col}))
    assert exc.value.index == 1


@pytest.mark.parametrize("dec", [DEC_BYTES, DEC_FIXED], ids=["bytes", "fixed"])
def test_encode_value_decimal_past_the_precision(dec):
    enc = avro.Encoder(record(("d", dec)))
    with pytest.raises(EncodeError, match=r"R\.d: Decimal\('123456\.78'\) has more digits"):
        enc.encode_value({"d": D("123456.78")})
    with pytest.raises(EncodeError, match="more digits"):
        enc.encode_value({"d": D("1E+10")})
    assert enc.encode_value({"d": D("-999.99")}) == fastavro_bodies(record(("d", dec)), [{"d": D("-999.99")}])[0]


# -- 2. a decimal of another scale: exact rescale, or an error -----------------------------------


@pytest.mark.parametrize("dec", [DEC_BYTES, DEC_FIXED], ids=["bytes", "fixed"])
def test_decimal_of_another_scale_is_never_rounded(backend, dec):
    enc = avro.Encoder(record(("d", dec)))
    batch = pa.record_batch({"d": pa.array([D("1.000"), D("1.005")], pa.decimal128(10, 3))})
    with pytest.raises(EncodeError, match=r"row 1: R\.d: Decimal\('1\.005'\) cannot be written with scale 2") as exc:
        enc.encode(batch)
    assert exc.value.index == 1
    with pytest.raises(EncodeError, match="without rounding"):
        enc.encode_value({"d": D("1.015")})
    # values that lose nothing are rescaled, from a larger or a smaller scale
    expected = fastavro_bodies(record(("d", dec)), [{"d": D("1.00")}, {"d": D("-2.50")}])
    for arrow_type, values in [
        (pa.decimal128(10, 3), ["1.000", "-2.500"]),
        (pa.decimal128(4, 1), ["1.0", "-2.5"]),
        (pa.decimal128(3, 0), ["1", None]),
        (pa.decimal256(40, 4), ["1.0000", "-2.5000"]),
    ]:
        col = pa.array([None if v is None else D(v) for v in values], arrow_type)
        if None in values:
            col = col.slice(0, 1)
        bodies = both_paths(enc, pa.record_batch({"d": col}))
        assert bodies == expected[: len(bodies)], arrow_type
    assert enc.encode_value({"d": D("-2.5")}) == expected[1]


def test_decimals_are_exact_past_28_digits(backend):
    # Decimal.scaleb rounds to the context's 28 digits: 31 digits came out as ...900 instead of ...901
    dec = {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}
    value = D("12345678901234567890123456789.01")
    enc = avro.Encoder(record(("d", dec)))
    expected = fastavro_bodies(record(("d", dec)), [{"d": value}])[0]
    assert enc.encode_value({"d": value}) == expected
    batch = pa.record_batch({"d": pa.array([value], pa.decimal256(40, 2))})
    assert both_paths(enc, batch) == [expected]


def test_decimal_text_is_spark_s_form_of_a_wide_decimal(backend):
    """Spark's decimals stop at 38 digits: it holds a wider Avro decimal as text (spark.decode's
    string column), which writes back to the same bytes; text that is no finite decimal is refused."""
    dec = {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}
    value = D("12345678901234567890123456789012345678.01")
    enc = avro.Encoder(record(("d", dec)))
    expected = fastavro_bodies(record(("d", dec)), [{"d": value}])[0]
    assert both_paths(enc, pa.record_batch({"d": pa.array([str(value)], pa.string())})) == [expected]
    assert enc.encode_value({"d": str(value)}) == expected
    for text, why in (
        ("12.345", "more digits|rounded|scale"),
        ("abc", "not a decimal number"),
        ("NaN", "not a finite"),
    ):
        with pytest.raises(EncodeError, match=why):
            enc.encode_value({"d": text})


@pytest.mark.parametrize("value", ["NaN", "sNaN", "-Infinity"])
@pytest.mark.parametrize("dec", [DEC_BYTES, DEC_FIXED], ids=["bytes", "fixed"])
def test_decimal_nan_and_infinity_are_encode_errors(dec, value):
    enc = avro.Encoder(record(("d", ["null", dec])))
    with pytest.raises(EncodeError, match=r"R\.d\[1\]: Decimal\('.*'\) is not a finite decimal"):
        enc.encode_value({"d": D(value)})


# -- 3. Arrow unions: the type code picks the branch ---------------------------------------------

A = {
    "type": "record",
    "name": "A",
    "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": ["null", "int"], "default": None}],
}
B = {"type": "record", "name": "B", "fields": [{"name": "a", "type": "int"}]}


@pytest.mark.parametrize(
    "branches, bodies",
    [
        (["int", "long"], [b"\x00\x04", b"\x02\x06", b"\x02\x80\x80\x80\x80\x10"]),
        (["double", "int"], [b"\x02\x06", b"\x00" + b"\x00" * 7 + b"\x40", b"\x02\x01"]),
        ([A, B], [b"\x00\x02\x00", b"\x02\x04", b"\x00\x06\x02\x08"]),
        (["null", "int", "long"], [b"\x00", b"\x02\x04", b"\x04\x04"]),
        (["long", "string", "null"], [b"\x04", b"\x02\x02x", b"\x00\x05"]),
    ],
    ids=["int-long", "double-int", "records", "null-int-long", "long-string-null"],
)
def test_decoded_unions_encode_to_the_same_bytes(backend, branches, bodies):
    schema = record(("u", branches))
    # the bytes are valid Avro: fastavro reads each of them
    parsed = fastavro.parse_schema(schema)
    for body in bodies:
        fastavro.schemaless_reader(io.BytesIO(body), parsed, None)
    batch = avro.Decoder(schema).decode(bodies)
    assert pa.types.is_union(batch.column(0).type)
    enc = avro.Encoder(schema)
    assert both_paths(enc, batch) == bodies
    assert both_paths(enc, batch.slice(1)) == bodies[1:]  # offsets into the union's buffers
    # the pipeline: decode -> encode with the registry's schema
    framed = [b"\x00\x00\x00\x00\x01" + b for b in bodies]
    decoded = pc.decode(framed, {1: json.dumps(schema)})
    assert pc.encode(decoded, {1: json.dumps(schema)}, "t-value", schema=json.dumps(schema)).to_pylist() == framed


_BRANCH_VALUES = {
    "null": st.none(),
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(width=32, allow_nan=False),
    "double": st.floats(allow_nan=False),
    "string": st.text(max_size=5),
    "A": st.fixed_dictionaries({"a": st.integers(-5, 5), "b": st.none() | st.integers(-5, 5)}),
    "B": st.fixed_dictionaries({"a": st.integers(-5, 5)}),
}
_UNIONS = [
    ["int", "long"],
    ["double", "int"],
    ["float", "double"],
    ["null", "int", "long"],
    ["long", "string", "int", "null"],
    [A, B],
    ["null", B, A],
]


def _key(branch) -> str:
    return branch if isinstance(branch, str) else branch["name"]


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_union_bytes_survive_decode_and_encode(both_backends, data):
    branches = data.draw(st.sampled_from(_UNIONS))
    in_array = data.draw(st.booleans())
    schema = record(("u", {"type": "array", "items": branches} if in_array else branches))
    choices = st.integers(0, len(branches) - 1).flatmap(
        lambda i: _BRANCH_VALUES[_key(branches[i])].map(lambda v: (i, v))
    )
    parsed = [fastavro.parse_schema(b, named_schemas={}) for b in branches]

    def union_body(i, v) -> bytes:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed[i], v)
        return bytes([i * 2]) + buf.getvalue()  # zig-zag branch index (below 64)

    bodies = []
    for _ in range(data.draw(st.integers(1, 5))):
        if in_array:
            items = data.draw(st.lists(choices, max_size=3))
            bodies.append((bytes([len(items) * 2]) if items else b"") + b"".join(union_body(*x) for x in items) + b"\0")
        else:
            bodies.append(union_body(*data.draw(choices)))
    batch = avro.Decoder(schema).decode(bodies)
    if data.draw(st.booleans()) and len(bodies) > 1:
        batch, bodies = batch.slice(1), bodies[1:]
    enc = avro.Encoder(schema)
    for b in both_backends:
        with _backend.use(b.name):
            assert enc.encode(batch).to_pylist() == bodies
            assert row_path(enc, batch).to_pylist() == bodies


def test_sparse_and_nested_unions(backend):
    sparse = pa.UnionArray.from_sparse(
        pa.array([1, 0, 1, 0], pa.int8()),
        [pa.array([1.5, 2.5, None, 4.0]), pa.array([7, None, 9, None], pa.int32())],
        ["double", "int"],
    )
    schema = record(("u", ["null", "double", "int"]))
    enc = avro.Encoder(schema)
    got = both_paths(enc, pa.record_batch({"u": sparse}))
    assert got == [
        b"\x04\x0e",
        b"\x02" + fastavro_bodies("double", [2.5])[0],
        b"\x04\x12",
        b"\x02" + b"\x00" * 6 + b"\x10\x40",
    ]
    assert both_paths(enc, pa.record_batch({"u": sparse.slice(1, 2)})) == got[1:3]
    # a null in a child of a union with a null branch is the null branch
    dense = pa.UnionArray.from_dense(
        pa.array([0, 1, 1], pa.int8()),
        pa.array([0, 0, 1], pa.int32()),
        [pa.array([1.5]), pa.array([None, 3], pa.int32())],
        ["double", "int"],
    )
    assert both_paths(enc, pa.record_batch({"u": dense})) == [b"\x02" + b"\x00" * 6 + b"\xf8\x3f", b"\x00", b"\x04\x06"]
    # ... and an error where the union has none (another column holds a value: not a tombstone)
    strict = avro.Encoder(record(("u", ["double", "int"]), ("x", "int")))
    rows = pa.record_batch({"u": dense, "x": pa.array([1, 2, 3], pa.int32())})
    for encode in (strict.encode, lambda b: row_path(strict, b)):
        with pytest.raises(EncodeError, match=r"^row 1: R\.u\[1\]: None is not a valid int") as exc:
            encode(rows)
        assert exc.value.index == 1
    # a row whose only column is a null union element is all null: a null message, as a decoded
    # tombstone's row is
    alone = avro.Encoder(record(("u", ["double", "int"])))
    assert both_paths(alone, pa.record_batch({"u": dense}))[1] is None
    # unions inside lists and records
    nested = record(("xs", {"type": "array", "items": ["int", "long"]}))
    bodies = [b"\x04\x00\x02\x02\x04\x00", b"\x00", b"\x02\x02\x80\x80\x80\x80\x10\x00"]
    batch = avro.Decoder(nested).decode(bodies)
    assert both_paths(avro.Encoder(nested), batch) == bodies


def test_a_column_that_is_no_union_still_picks_by_value(backend):
    enc = avro.Encoder(record(("u", ["null", "long"]), ("v", ["null", "int", "string"])))
    batch = pa.record_batch({"u": pa.array([None, 5]), "v": pa.array([3, 4])})
    assert both_paths(enc, batch) == [b"\x00\x02\x06", b"\x02\x0a\x02\x08"]


def test_derived_schema_of_a_nullable_union_puts_null_in_it(backend):
    u = pa.UnionArray.from_dense(
        pa.array([0, 1], pa.int8()),
        pa.array([0, 0], pa.int32()),
        [pa.array([1.5]), pa.array([3], pa.int32())],
        ["d", "i"],
    )
    reg: dict = {}
    out = pc.encode(pa.table({"c": u}), reg, "t-value")  # pyarrow fields are nullable
    (text,) = reg.values()
    assert json.loads(text)["fields"][0]["type"] == ["null", "double", "int"]
    back = pc.decode(out, reg).column("c")
    assert back.to_pylist() == [1.5, 3] and back.type_codes.to_pylist() == [1, 2]
    # not nullable: the members as they are, every int written as the int branch
    reg = {}
    table = pa.table({"c": u}, schema=pa.schema([pa.field("c", u.type, nullable=False)]))
    out = pc.encode(table, reg, "t-value")
    assert json.loads(next(iter(reg.values())))["fields"][0]["type"] == ["double", "int"]
    assert [m[5:] for m in out.to_pylist()] == [b"\x00" + b"\x00" * 6 + b"\xf8\x3f", b"\x02\x06"]


def test_nullable_duration(backend):
    dur = {"type": "fixed", "name": "W", "size": 12, "logicalType": "duration"}
    schema = record(("d", ["null", dur]))
    body = b"\x02" + b"\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00"
    batch = avro.Decoder(schema).decode([body, b"\x00"])
    enc = avro.Encoder(schema)
    assert both_paths(enc, batch) == [body, b"\x00"]
    # derived: month_day_nano_interval, nullable
    col = pa.array([pa.MonthDayNano([1, 2, 3_000_000]), None], pa.month_day_nano_interval())
    reg: dict = {}
    out = pc.encode(pa.table({"d": col}), reg, "t-value")
    assert pc.decode(out, reg).column("d").to_pylist() == col.to_pylist()


# -- 4. nothing dropped or garbled without a word ------------------------------------------------

S = {"type": "record", "name": "S", "fields": [{"name": "a", "type": "int"}]}


@pytest.mark.parametrize("field_type", [S, ["null", S]], ids=["required", "nullable"])
def test_extra_nested_struct_field_is_refused(backend, field_type):
    enc = avro.Encoder(record(("s", field_type)))
    col = pa.array([{"a": 1, "zz": 5}], pa.struct([("a", pa.int32()), ("zz", pa.int32())]))
    msg = r"R\.s: the Arrow struct has field\(s\) \['zz'\] that S has no field for"
    with pytest.raises(EncodeError, match=msg):
        enc.encode(pa.record_batch({"s": col}))
    with pytest.raises(EncodeError, match=msg):  # the row path (another column forces it) too
        row_path(enc, pa.record_batch({"s": col}))
    # in a list
    enc = avro.Encoder(record(("xs", {"type": "array", "items": S})))
    with pytest.raises(EncodeError, match=r"R\.xs\[\]: the Arrow struct has field\(s\) \['zz'\]"):
        enc.encode(pa.record_batch({"xs": pa.array([[{"a": 1, "zz": 5}]])}))


@pytest.mark.parametrize("key_type, key", [(pa.binary(), b"k"), (pa.int32(), 1), (pa.large_binary(), b"k")])
def test_map_keys_must_be_strings(backend, key_type, key):
    col = pa.array([[(key, 1)]], pa.map_(key_type, pa.int64()))
    with pytest.raises(EncodeError, match=rf"t\.m: Avro map keys are strings, the Arrow map's keys are {key_type}"):
        pc.encode(pa.table({"m": col}), {}, "t-value")  # derived schema
    enc = avro.Encoder(record(("m", {"type": "map", "values": "long"})))
    with pytest.raises(EncodeError, match="Avro map keys are strings"):
        enc.encode(pa.record_batch({"m": col}))
    with pytest.raises(EncodeError, match=r"R\.m: map key .* is not a string"):
        enc.encode_value({"m": {key: 1}})
    with pytest.raises(EncodeError, match=r"R\.m: map key None is not a string"):
        enc.encode_value({"m": {None: 1}})
    # string keys of every Arrow string type
    for kt in (pa.string(), pa.large_string(), pa.string_view()):
        good = pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())).cast(pa.map_(kt, pa.int64()))
        assert both_paths(enc, pa.record_batch({"m": good})) == [b"\x02\x02k\x02\x00"]


def test_duplicate_names_are_refused(backend):
    enc = avro.Encoder(record(("a", "long")))
    table = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    with pytest.raises(EncodeError, match=r"duplicate column name\(s\) \['a'\]"):
        enc.encode(table)
    enc = avro.Encoder(record(("s", S)))
    col = pa.StructArray.from_arrays([pa.array([1], pa.int32()), pa.array([2], pa.int32())], names=["a", "a"])
    with pytest.raises(EncodeError, match=r"R\.s: the Arrow struct has duplicate field name\(s\) \['a'\]"):
        enc.encode(pa.record_batch({"s": col}))


def test_a_date_past_9999_in_another_column_keeps_the_row(backend):
    schema = record(("x", "int"), ("d", {"type": "int", "logicalType": "date"}))
    batch = pa.record_batch({"x": pa.array([1, 2**31]), "d": pa.array([3_000_000, 3_000_000], pa.date32())})
    with pytest.raises(EncodeError, match=r"^row 1: R\.x") as exc:
        avro.Encoder(schema).encode(batch)
    assert exc.value.index == 1
    # on the row path the date itself cannot become a Python value: an EncodeError with its row
    schema = record(("u", ["int", "string"]), ("d", {"type": "int", "logicalType": "date"}))
    batch = pa.record_batch({"u": pa.array([1, 2]), "d": pa.array([0, 3_000_000], pa.date32())})
    with pytest.raises(EncodeError, match=r"^row 1: R\.d: ") as exc:
        avro.Encoder(schema).encode(batch)
    assert exc.value.index == 1


def test_a_float_branch_takes_what_float32_holds_and_a_double_branch_the_rest(backend):
    """["float", "double"]: a finite value past float32 is written in the double branch, as
    fastavro picks it (it was refused: "not a valid float"); infinities and NaN fit float."""
    schema = {"type": "record", "name": "R", "fields": [{"name": "f", "type": ["float", "double"]}]}
    encoder = avro.Encoder(schema)
    for value in (1e300, -1e300, 1.5, float("inf"), 3.4e38):
        ours = encoder.encode(pa.table({"f": [value]})).to_pylist()[0]
        theirs = io.BytesIO()
        fastavro.schemaless_writer(theirs, fastavro.parse_schema(schema), {"f": value})
        assert ours == theirs.getvalue()


def test_an_integer_past_every_integer_branch_says_so(backend):
    # a nullable int names its type; a union of several types says "the union's integer branches"
    for branches, words in ((["null", "int"], "the int range"), (["null", "int", "string"], "the range of the union")):
        schema = {"type": "record", "name": "R", "fields": [{"name": "i", "type": branches}]}
        with pytest.raises(EncodeError, match=rf"R.i: 2147483648 is out of {words}") as caught:
            avro.Encoder(schema).encode(pa.table({"i": pa.array([1, 2**31], pa.int64())}))
        assert caught.value.index == 1


def test_a_decoded_tombstone_of_union_columns_only_encodes_back(backend):
    schema = record(("u", ["double", "int"]))
    batch = avro.Decoder(schema).decode([b"\x02\x04", None])
    assert both_paths(avro.Encoder(schema), batch) == [b"\x02\x04", None]


def test_spark_s_struct_forms_of_a_duration_and_a_union(backend):
    """Spark has no interval or union type: a decoded duration arrives as struct<months, days,
    nanoseconds> and a union as a struct of one field per non-null branch (named as the decoder
    names them). Both encode to the bytes they were read from."""
    other = {"type": "record", "name": "Other", "fields": [{"name": "y", "type": "string"}]}
    schema = record(
        ("dur", {"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"}),
        ("un", ["null", "long", "string", other]),
    )
    records = [
        {"dur": (1).to_bytes(4, "little") + (2).to_bytes(4, "little") + (3).to_bytes(4, "little"), "un": 7},
        {"dur": bytes(12), "un": None},
        {"dur": bytes(12), "un": "s"},
        {"dur": bytes(12), "un": {"y": "why"}},
    ]
    interval = pa.struct([("months", pa.int32()), ("days", pa.int32()), ("nanoseconds", pa.int64())])
    branches = pa.struct([("long", pa.int64()), ("string", pa.string()), ("Other", pa.struct([("y", pa.string())]))])
    batch = pa.record_batch(
        {
            "dur": pa.array(
                [{"months": 1, "days": 2, "nanoseconds": 3_000_000}] + [{"months": 0, "days": 0, "nanoseconds": 0}] * 3,
                interval,
            ),
            "un": pa.array([{"long": 7}, None, {"string": "s"}, {"Other": {"y": "why"}}], branches),
        }
    )
    assert both_paths(avro.Encoder(schema), batch) == fastavro_bodies(schema, records)
    # two branches set is no value of the union
    two = batch.set_column(1, "un", pa.array([{"long": 7, "string": "s"}] * 4, branches))
    with pytest.raises(EncodeError, match="matches no branch of the union"):
        avro.Encoder(schema).encode(two)


def test_spark_s_union_struct_is_written_by_the_kernel(backend, monkeypatch):
    """Spark's struct of branches binds as the sparse union it stands for (no row path), with
    the null branch for a null struct or no branch set; two branches set is the row path's error."""
    other = {"type": "record", "name": "Other", "fields": [{"name": "y", "type": "string"}]}
    schema = record(("id", "long"), ("un", ["null", "long", "string", other]))
    branches = pa.struct([("long", pa.int64()), ("string", pa.string()), ("Other", pa.struct([("y", pa.string())]))])
    union_rows = [{"long": 7}, None, {"string": "s"}, {"Other": {"y": "why"}}, {}]
    batch = pa.record_batch({"id": pa.array(range(5)), "un": pa.array(union_rows, branches)})
    expected = fastavro_bodies(schema, [{"id": i, "un": v} for i, v in enumerate([7, None, "s", {"y": "why"}, None])])
    enc = avro.Encoder(schema)
    assert row_path(enc, batch).to_pylist() == expected

    def no_rows(*args, **kwargs):
        raise AssertionError("the row path was taken")

    monkeypatch.setattr(type(enc), "_encode_rows", no_rows)
    assert enc.encode(batch).to_pylist() == expected
    assert enc.encode(batch.slice(1, 3)).to_pylist() == expected[1:4]
    monkeypatch.undo()
    two = batch.set_column(1, "un", pa.array([{"long": 7, "string": "s"}] * 5, branches))
    with pytest.raises(EncodeError, match="row 0: .*matches no branch of the union"):
        avro.Encoder(schema).encode(two)


def test_durations_are_written_by_the_kernel(backend, monkeypatch):
    """A month_day_nano_interval column, Spark's struct of its parts and fastavro's 12 bytes all
    write Avro's duration (months, days, milliseconds: nanoseconds below the millisecond are
    truncated) without the row path; a part no uint32 holds is the row writer's EncodeError."""
    schema = record(("d", {"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"}))
    parts = [(1, 2, 3_999_999), (0, 0, 0), (2**31 - 1, 5, 2**40)]
    expected = [struct_bytes(m, d, ns // 1_000_000) for m, d, ns in parts] + [None]
    interval = pa.array([pa.MonthDayNano(p) for p in parts] + [None], pa.month_day_nano_interval())
    spark_form = pa.array(
        [dict(zip(("months", "days", "nanoseconds"), p)) for p in parts] + [None],
        pa.struct([("months", pa.int32()), ("days", pa.int32()), ("nanoseconds", pa.int64())]),
    )
    raw = pa.array([e for e in expected], pa.binary(12))
    enc = avro.Encoder(schema)
    batches = [pa.record_batch({"d": column}) for column in (interval, spark_form, raw)]
    for batch in batches:
        assert row_path(enc, batch).to_pylist()[:3] == expected[:3]

    def no_rows(*args, **kwargs):
        raise AssertionError("the row path was taken")

    monkeypatch.setattr(type(enc), "_encode_rows", no_rows)
    for batch in batches:
        assert enc.encode(batch).to_pylist()[:3] == expected[:3]
        assert enc.encode(batch.slice(1)).to_pylist()[:2] == expected[1:3]
    monkeypatch.undo()
    negative = pa.record_batch({"d": pa.array([pa.MonthDayNano((0, -1, 0))], pa.month_day_nano_interval())})
    with pytest.raises(EncodeError, match="row 0: R.d: .* is not a valid duration"):
        enc.encode(negative)


def struct_bytes(months: int, days: int, millis: int) -> bytes:
    return months.to_bytes(4, "little") + days.to_bytes(4, "little") + millis.to_bytes(4, "little")


@pytest.mark.usefixtures("backend")
def test_a_column_of_another_type_family_is_refused_before_any_row():
    # every non-null row would fail: one error naming the field, even for an empty or all-null batch
    schema = record(
        ("id", "long"),
        ("ok", "boolean"),
        ("score", "double"),
        ("name", ["null", "string"]),
        ("tags", {"type": "array", "items": "int"}),
        ("loc", {"type": "record", "name": "Loc", "fields": [{"name": "lat", "type": "double"}]}),
    )
    good = {
        "id": pa.array([1], pa.int64()),
        "ok": pa.array([True]),
        "score": pa.array([1], pa.int32()),  # ints and decimals write as doubles
        "name": pa.array(["a"]),
        "tags": pa.array([[1]], pa.list_(pa.int32())),
        "loc": pa.array([{"lat": 1.0}]),
    }
    encoder = avro.Encoder(schema)
    assert len(encoder.encode(pa.table(good))) == 1
    wrong = {
        "id": pa.array([None], pa.string()),
        "ok": pa.array([1], pa.int8()),
        "score": pa.array(["1.5"]),
        "name": pa.array([5], pa.int64()),
        "tags": pa.array(["1,2"]),
        "loc": pa.array([1.0]),
    }
    family = {"id": "long", "ok": "boolean", "score": "double", "name": "string", "tags": "array", "loc": "record Loc"}
    for column, arr in wrong.items():
        table = pa.table({**good, column: arr})
        for batch in (table, table.slice(0, 0)):
            with pytest.raises(
                EncodeError, match=rf"R\.{column}(\[1\])?: a column of Arrow type .* as Avro {family[column]}"
            ):
                encoder.encode(batch)
