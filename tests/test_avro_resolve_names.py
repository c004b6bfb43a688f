"""Avro resolution by name: union branches that share a short name, reader field aliases, and reader
defaults the decoder cannot hold. fastavro (or the Avro specification / Java, where fastavro strays)
is the oracle."""

from __future__ import annotations

import decimal
import io
import json

import fastavro
import pyarrow as pa
import pytest

import pulsar_codec as pc
from pulsar_codec import avro, wire
from pulsar_codec.errors import SchemaError
from pulsar_codec.formats.avro import compat as avro_compat
from test_avro_support import encode, fastavro_read


def rec(name, *fields, **extra):
    return {
        "type": "record",
        "name": name,
        "fields": [dict(name=f[0], type=f[1], **(f[2] if len(f) > 2 else {})) for f in fields],
        **extra,
    }


A_R = rec("R", ("x", "int"), namespace="a")
B_R = rec("R", ("x", "int"), namespace="b")
B_RY = rec("R", ("y", "string"), namespace="b")


# -- union branches: full name first -----------------------------------------------------------------


def test_same_short_name_branches_resolve_by_full_name_and_round_trip(backend):
    union = [A_R, B_R]
    bodies = encode(union, [("a.R", {"x": 1}), ("b.R", {"x": 2})])
    col = avro.Decoder(union).decode(bodies).column(0)
    assert col.type_codes.to_pylist() == [0, 1]
    assert col.to_pylist() == [{"x": 1}, {"x": 2}]
    parsed = fastavro.parse_schema(union)
    assert [fastavro.schemaless_reader(io.BytesIO(b), parsed, return_record_name=True)[0] for b in bodies] == [
        "a.R",
        "b.R",
    ]
    # writing the decoded column back gives the same bytes: the b.R value stays in branch 1
    again = avro.Encoder(union).encode(pa.table({"value": col}))
    assert again.to_pylist() == bodies


def test_same_short_name_branches_of_different_shapes_decode(backend):
    schema = rec("Ev", ("u", [A_R, B_RY]))
    bodies = encode(schema, [{"u": ("b.R", {"y": "s"})}, {"u": ("a.R", {"x": 7})}])
    batch = avro.Decoder(schema).decode(bodies)
    assert batch.column(0).type_codes.to_pylist() == [1, 0]
    assert batch.to_pylist() == [{"u": {"y": "s"}}, {"u": {"x": 7}}]
    assert [fastavro_read(b, schema) for b in bodies] == [{"u": {"y": "s"}}, {"u": {"x": 7}}]
    # the registry path (writer schema only, on_error="null") reads it too
    msgs = [wire.CONFLUENT.pack(1, b) for b in bodies]
    res = pc.MessageDecoder({1: json.dumps(schema)}, on_error="null").decode(msgs)
    assert res.batch.to_pylist() == [{"u": {"y": "s"}}, {"u": {"x": 7}}]
    assert res.errors.num_rows == 0


def test_plain_writer_picks_the_branch_with_its_full_name(backend):
    # record: a.R comes first and shares the short name, but b.R is the writer's type
    batch = avro.Decoder([A_R, B_RY], B_RY).decode(encode(B_RY, [{"y": "s"}]))
    assert batch.column(0).type_codes.to_pylist() == [1]
    assert batch.column(0).to_pylist() == [{"y": "s"}]
    # fixed
    fa = {"type": "fixed", "name": "F", "namespace": "a", "size": 1}
    fb = {"type": "fixed", "name": "F", "namespace": "b", "size": 2}
    col = avro.Decoder([fa, fb], fb).decode(encode(fb, [b"zz"])).column(0)
    assert col.type_codes.to_pylist() == [1] and col.to_pylist() == [b"zz"]
    # enum
    ea = {"type": "enum", "name": "E", "namespace": "a", "symbols": ["X"]}
    eb = {"type": "enum", "name": "E", "namespace": "b", "symbols": ["Y", "Z"]}
    col = avro.Decoder([ea, eb], eb).decode(encode(eb, ["Z", "Y"])).column(0)
    assert col.type_codes.to_pylist() == [1, 1] and col.to_pylist() == ["Z", "Y"]


def test_writer_union_of_same_short_names_maps_branch_by_branch(backend):
    # reader lists the branches in the other order: each writer branch finds its full name
    writer, reader = [A_R, B_R], [B_R, A_R]
    bodies = encode(writer, [("a.R", {"x": 1}), ("b.R", {"x": 2})])
    col = avro.Decoder(reader, writer).decode(bodies).column(0)
    assert col.type_codes.to_pylist() == [1, 0]


def test_short_name_and_alias_still_match_without_a_full_name_match(backend):
    writer = rec("R", ("x", "int"), namespace="c")
    col = avro.Decoder(["int", A_R], writer).decode(encode(writer, [{"x": 3}])).column(0)
    assert col.type_codes.to_pylist() == [1] and col.to_pylist() == [{"x": 3}]
    renamed = rec("New", ("x", "int"), namespace="a", aliases=["c.R"])
    col = avro.Decoder(["int", renamed], writer).decode(encode(writer, [{"x": 4}])).column(0)
    assert col.type_codes.to_pylist() == [1] and col.to_pylist() == [{"x": 4}]


def test_arrow_union_children_are_named_distinctly():
    # a short name two branches share becomes the full name; other branches keep their short name
    t = avro.Decoder([A_R, B_R, "int", rec("S", ("z", "int"), namespace="a")]).arrow_schema.field(0).type
    assert [t.field(i).name for i in range(t.num_fields)] == ["a.R", "b.R", "int", "S"]
    t = avro.Decoder([A_R, "string"]).arrow_schema.field(0).type
    assert [t.field(i).name for i in range(t.num_fields)] == ["R", "string"]


# -- reader defaults the reader type cannot hold -------------------------------------------------------

W = rec("R", ("a", "int"))


@pytest.mark.parametrize(
    "typ",
    [
        {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 0},
        {"type": "fixed", "name": "D", "size": 2, "logicalType": "decimal", "precision": 2, "scale": 0},
    ],
)
def test_decimal_default_beyond_precision_is_a_schema_error(backend, typ):
    reader = rec("R", ("a", "int"), ("b", typ, {"default": "\u0003\u00e8"}))  # 1000: four digits
    with pytest.raises(SchemaError, match=r"^R\.b: .*precision 2") as e:
        avro.Decoder(reader, W)
    assert e.value.index is None
    # the registry path refuses it the same way, not with a data error per row
    msgs = [wire.CONFLUENT.pack(1, b) for b in encode(W, [{"a": 1}])]
    with pytest.raises(SchemaError, match=r"R\.b: "):
        pc.decode(msgs, {1: json.dumps(W)}, reader_schema=json.dumps(reader))


def test_decimal_default_within_precision_is_read(backend):
    typ = {"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 1}
    ftyp = {"type": "fixed", "name": "D", "size": 2, "logicalType": "decimal", "precision": 3, "scale": 0}
    reader = rec("R", ("a", "int"), ("b", typ, {"default": "\u0003\u00e7"}), ("c", ftyp, {"default": "\u00fc\u0019"}))
    rows = avro.Decoder(reader, W).decode(encode(W, [{"a": 1}])).to_pylist()
    assert rows == [{"a": 1, "b": decimal.Decimal("99.9"), "c": decimal.Decimal("-999")}]


@pytest.mark.parametrize(
    "typ, default, words",
    [
        ("float", 1e300, "outside the range of a float"),
        ("float", 10**400, "outside the range of a float"),
        ("double", 10**400, "outside the range of a double"),
        ("bytes", "\u20ac", "above U+00FF"),
        ({"type": "fixed", "name": "F", "size": 1}, "\u20ac", "above U+00FF"),
    ],
    ids=["float-1e300", "float-1e400", "double-1e400", "bytes-euro", "fixed-euro"],
)
def test_defaults_python_cannot_pack_are_schema_errors_in_our_words(backend, typ, default, words):
    reader = rec("R", ("a", "int"), ("b", typ, {"default": default}))
    with pytest.raises(SchemaError) as e:
        avro.Decoder(reader, W)
    text = str(e.value)
    assert text.startswith("R.b: ") and repr(default) in text and words in text, text
    assert "pack" not in text and "codec" not in text, text


# -- reader field aliases: exact names first -----------------------------------------------------------


def test_alias_of_a_writer_field_taken_by_name_gives_the_default(backend):
    reader = rec("R", ("a", "int"), ("b", "int", {"aliases": ["a"], "default": 5}))
    bodies = encode(W, [{"a": 1}, {"a": -2}])
    assert avro.Decoder(reader, W).decode(bodies).to_pylist() == [{"a": 1, "b": 5}, {"a": -2, "b": 5}]
    assert [fastavro_read(b, W, reader) for b in bodies] == [{"a": 1, "b": 5}, {"a": -2, "b": 5}]
    assert avro_compat.check(reader, W)
    # the alias field listed first changes nothing
    first = rec("R", ("b", "int", {"aliases": ["a"], "default": 5}), ("a", "int"))
    assert avro.Decoder(first, W).decode(bodies).to_pylist() == [{"b": 5, "a": 1}, {"b": 5, "a": -2}]


def test_alias_of_a_taken_writer_field_without_default_agrees_in_compat_and_decoder():
    reader = rec("R", ("a", "int"), ("b", "int", {"aliases": ["a"]}))
    with pytest.raises(SchemaError, match=r"^R\.b: "):
        avro.Decoder(reader, W)
    result = avro_compat.check(reader, W)
    assert not result
    assert [(i.kind, i.location, i.path) for i in result.incompatibilities] == [
        ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1", "R.b")
    ]


def test_spark_form_of_same_short_name_branches_encodes(backend):
    # Spark holds the union as a struct of one field per branch, named as the decoder names them
    x = pa.array([{"x": 1}, None], pa.struct([pa.field("x", pa.int32(), nullable=False)]))
    y = pa.array([None, {"x": 2}], pa.struct([pa.field("x", pa.int32(), nullable=False)]))
    spark = pa.StructArray.from_arrays([x, y], names=["a.R", "b.R"])
    bodies = avro.Encoder([A_R, B_R]).encode(pa.table({"value": spark})).to_pylist()
    assert bodies == encode([A_R, B_R], [("a.R", {"x": 1}), ("b.R", {"x": 2})])
