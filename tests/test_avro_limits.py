"""Schema limits shared with Avro Java: nesting depth, names, wrapped types and field defaults.

Every walk over a parsed schema (layout, plan, both kernel twins, encoder, compatibility, canonical
form, fingerprint, Arrow derivation) must hold at the documented depth limit, and anything deeper must
be a SchemaError from the parser, never a RecursionError.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from pulsar_codec import avro, compat
from pulsar_codec.errors import SchemaError
from pulsar_codec.formats.avro.from_arrow import schema_from_arrow
from pulsar_codec.formats.avro.schema import MAX_DEPTH, parse

# -- nesting ---------------------------------------------------------------------------------------


def arrays(levels: int) -> Any:
    node: Any = "int"
    for _ in range(levels):
        node = {"type": "array", "items": node}
    return node


def maps(levels: int) -> Any:
    node: Any = "int"
    for _ in range(levels):
        node = {"type": "map", "values": node}
    return node


def records(levels: int) -> Any:
    node: Any = "int"
    for i in range(levels):
        node = {"type": "record", "name": f"R{i}", "fields": [{"name": "f", "type": node}]}
    return node


def unions_in_records(levels: int) -> Any:
    """A record and a nullable union per two levels (each counts one)."""
    node: Any = "int"
    for i in range(levels):
        if i % 2 == 0:
            node = {"type": "record", "name": f"R{i}", "fields": [{"name": "f", "type": node}]}
        else:
            node = ["null", node]
    return node


def value_of(schema: Any) -> Any:
    """A value of the nested schema, built without recursion."""
    chain = []
    node = schema
    while node != "int":
        chain.append(node)
        node = node[1] if isinstance(node, list) else node.get("items", node.get("values", None))
        if isinstance(chain[-1], dict) and chain[-1]["type"] == "record":
            node = chain[-1]["fields"][0]["type"]
    value: Any = 7
    for outer in reversed(chain):
        if isinstance(outer, list):
            continue  # the union's value is its branch's
        kind = outer["type"]
        value = [value] if kind == "array" else {"k": value} if kind == "map" else {"f": value}
    return value


SHAPES: dict[str, Callable[[int], Any]] = {
    "arrays": arrays,
    "maps": maps,
    "records": records,
    "unions_in_records": unions_in_records,
}


def _shallow_stack(fn: Callable[[], Any], spare: int = 300) -> Any:
    """Run ``fn`` with only ``spare`` frames above the current depth, so a walk that needs more than a
    few frames per level fails here rather than passing on a generous default limit."""

    def depth() -> int:
        frame, n = sys._getframe(), 0
        while frame is not None:
            frame, n = frame.f_back, n + 1
        return n

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(min(old, depth() + MAX_DEPTH * 6 + spare))
    try:
        return fn()
    finally:
        sys.setrecursionlimit(old)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_walk_holds_at_the_limit(backend, shape):
    text = json.dumps(SHAPES[shape](MAX_DEPTH))
    value = value_of(json.loads(text))

    def walk() -> None:
        decoder = avro.Decoder(text)
        encoder = avro.Encoder(text)
        payload = encoder.encode_value(value)
        batch = decoder.decode([payload, None])
        assert batch.num_rows == 2
        assert compat.check(text, text)
        assert compat.fingerprint(text) == compat.fingerprint(json.loads(text))
        assert encoder.encode(batch.slice(0, 1)).to_pylist() == [payload]

    _shallow_stack(walk)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 5000])
def test_deeper_schemas_are_schema_errors(shape, levels):
    schema = SHAPES[shape](levels)
    text = json.dumps(schema) if levels < 900 else None
    for form in (schema, text):
        if form is None:
            continue
        with pytest.raises(SchemaError, match="nested too deeply"):
            parse(form)
        with pytest.raises(SchemaError, match="nested too deeply"):
            avro.Decoder(form)
        with pytest.raises(SchemaError, match="nested too deeply"):
            compat.check(form, "int")
        with pytest.raises(SchemaError, match="nested too deeply"):
            compat.canonical_form(form)


def test_json_nested_past_the_stack_is_a_schema_error():
    # json.loads itself raises RecursionError on such text: the parser turns it into a SchemaError
    for text in ("[" * 100_000 + "]" * 100_000, '{"type": "array", "items": ' * 50_000 + '"int"' + "}" * 50_000):
        with pytest.raises(SchemaError, match="nested too deeply"):
            parse(text)
        with pytest.raises(SchemaError, match="nested too deeply"):
            compat.fingerprint(text)
        with pytest.raises(SchemaError, match="nested too deeply"):
            compat.check(text, "int")


def test_named_types_count_where_they_are_used():
    # each type alone is within the limit; used inside one another they pass it
    inner = records(MAX_DEPTH - 10)
    outer = arrays(20)
    leaf = outer
    while isinstance(leaf["items"], dict):
        leaf = leaf["items"]
    leaf["items"] = f"R{MAX_DEPTH - 11}"
    schema = {
        "type": "record",
        "name": "Top",
        "fields": [{"name": "a", "type": inner}, {"name": "b", "type": outer}],
    }
    with pytest.raises(SchemaError, match="nested too deeply"):
        parse(schema)


def test_arrow_types_past_the_limit_are_schema_errors():
    typ = pa.int32()
    for _ in range(5000):
        typ = pa.list_(pa.field("item", typ, nullable=False))
    with pytest.raises(SchemaError, match="nested too deeply"):
        schema_from_arrow(pa.schema([pa.field("x", typ, nullable=False)]))


# -- what Avro Java's parser refuses -----------------------------------------------------------------


def rec(*fields: dict[str, Any], name: str = "R") -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields)}


REFUSED = {
    # defaults that do not fit their type (Schema.isValidDefault)
    "string default on int": rec({"name": "a", "type": "int", "default": "d"}),
    "null default on int": rec({"name": "a", "type": "int", "default": None}),
    "float default on int": rec({"name": "a", "type": "int", "default": 1.5}),
    "int default past 32 bits": rec({"name": "a", "type": "int", "default": 2**31}),
    "long default past 64 bits": rec({"name": "a", "type": "long", "default": 2**63}),
    "bool default on long": rec({"name": "a", "type": "long", "default": True}),
    "number default on string": rec({"name": "a", "type": "string", "default": 5}),
    "number default on bytes": rec({"name": "a", "type": "bytes", "default": 5}),
    "string default on boolean": rec({"name": "a", "type": "boolean", "default": "true"}),
    "non-number text on double": rec({"name": "a", "type": "double", "default": "abc"}),
    "null default on string": rec({"name": "a", "type": "string", "default": None}),
    "default fits no branch": rec({"name": "a", "type": ["null", "int"], "default": "x"}),
    "number text inside a union": rec({"name": "a", "type": ["null", "double"], "default": "NaN"}),
    "array default item of the wrong type": rec(
        {"name": "a", "type": {"type": "array", "items": "int"}, "default": ["x"]}
    ),
    "array default not a list": rec({"name": "a", "type": {"type": "array", "items": "int"}, "default": {}}),
    "map default value of the wrong type": rec(
        {"name": "a", "type": {"type": "map", "values": "int"}, "default": {"k": "v"}}
    ),
    "record default lacks a field": rec(
        {"name": "a", "type": rec({"name": "x", "type": "int"}, name="In"), "default": {}}
    ),
    "number default on enum": rec({"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["A"]}, "default": 0}),
    "number default on fixed": rec({"name": "a", "type": {"type": "fixed", "name": "F", "size": 1}, "default": 0}),
    "null default on null-less record field": rec(
        {"name": "a", "type": rec({"name": "x", "type": "int"}, name="In"), "default": {"x": None}}
    ),
    # names ([A-Za-z_][A-Za-z0-9_]*)
    "record name starting with a digit": rec(name="1bad"),
    "record name with a dash": rec(name="a-b"),
    "namespace part with a dash": {"type": "record", "name": "R", "namespace": "com.my-org", "fields": []},
    "field name with a dash": rec({"name": "a-b", "type": "int"}),
    "field name starting with a digit": rec({"name": "1a", "type": "int"}),
    "enum symbol with a dash": {"type": "enum", "name": "E", "symbols": ["A-1"]},
    "enum symbol starting with a digit": {"type": "enum", "name": "E", "symbols": ["1A"]},
    "fixed name with a space": {"type": "fixed", "name": "F x", "size": 2},
    "alias with a dash": {"type": "record", "name": "R", "aliases": ["old-name"], "fields": []},
    # "type" must be a type name
    "wrapped primitive at the top": {"type": {"type": "int"}},
    "wrapped union at the top": {"type": ["null", "int"]},
    "wrapped type in a field": rec({"name": "a", "type": {"type": {"type": "int"}}}),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_java_refusals_are_refused_everywhere(name):
    schema = REFUSED[name]
    for form in (schema, json.dumps(schema)):
        with pytest.raises(SchemaError):
            parse(form)
        with pytest.raises(SchemaError):
            avro.Decoder(form)
        with pytest.raises(SchemaError):
            compat.check(form, form)
        with pytest.raises(SchemaError):
            compat.fingerprint(form)


ACCEPTED = {
    # Java 1.12 takes a union default fitting any branch, and reads float/double text defaults as numbers
    "union default of the second branch": rec({"name": "a", "type": ["null", "int"], "default": 3}),
    "NaN text on double": rec({"name": "a", "type": "double", "default": "NaN"}),
    "Infinity text on float": rec({"name": "a", "type": "float", "default": "-Infinity"}),
    "number text on double": rec({"name": "a", "type": "double", "default": "1.5e3"}),
    "int default on double": rec({"name": "a", "type": "double", "default": 2}),
    "int default at the 32-bit edges": rec(
        {"name": "a", "type": "int", "default": -(2**31)}, {"name": "b", "type": "int", "default": 2**31 - 1}
    ),
    "record default with the inner field's default": rec(
        {
            "name": "a",
            "type": rec({"name": "x", "type": "int"}, {"name": "y", "type": "string", "default": "z"}, name="In"),
            "default": {"x": 1},
        }
    ),
    "nested record default through a union": rec(
        {"name": "a", "type": ["null", rec({"name": "x", "type": ["null", "int"]}, name="In")], "default": None}
    ),
    "underscore names": {
        "type": "record",
        "name": "_R",
        "namespace": "_a._b",
        "fields": [{"name": "_", "type": "int"}],
    },
    "reference written as an object": rec(
        {"name": "a", "type": {"type": "fixed", "name": "F", "size": 1}},
        {"name": "b", "type": {"type": "F"}},
    ),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_what_java_accepts_still_parses(name):
    schema = ACCEPTED[name]
    parse(schema)
    assert compat.check(schema, schema)


def test_text_defaults_on_float_fields_are_read_as_numbers(backend):
    writer = rec({"name": "n", "type": "int"})
    reader = rec(
        {"name": "n", "type": "int"},
        {"name": "a", "type": "double", "default": "1.5e3"},
        {"name": "b", "type": "float", "default": "-Infinity"},
    )
    out = avro.Decoder(reader, writer).decode([b"\x02"]).to_pylist()
    assert out == [{"n": 1, "a": 1500.0, "b": float("-inf")}]


def test_union_default_of_a_later_branch_is_decoded(backend):
    writer = rec({"name": "n", "type": "int"})
    reader = rec({"name": "n", "type": "int"}, {"name": "a", "type": ["null", "int"], "default": 3})
    assert avro.Decoder(reader, writer).decode([b"\x02"]).to_pylist() == [{"n": 1, "a": 3}]


def test_default_errors_name_the_field_and_type():
    with pytest.raises(SchemaError, match=r'field R\.a: "d" does not fit int'):
        parse(rec({"name": "a", "type": "int", "default": "d"}))
    with pytest.raises(SchemaError, match=r"field R\.a: null does not fit union of int, string"):
        parse(rec({"name": "a", "type": ["int", "string"], "default": None}))
