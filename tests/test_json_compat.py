"""JSON Schema compatibility (Confluent's rules) through formats.json.compat, pulsar_codec.compat and the registry."""

from __future__ import annotations

import json

import pytest

from pulsar_codec import compat
from pulsar_codec.errors import IncompatibleSchemaError, SchemaError
from pulsar_codec.formats.json import compat as jc
from pulsar_codec.registry.local import LocalRegistry


def obj(props: dict | None = None, required: tuple[str, ...] = (), **extra: object) -> dict:
    out: dict = {"type": "object", "properties": props or {}}
    if required:
        out["required"] = list(required)
    out.update(extra)
    return out


STR, INT, NUM = {"type": "string"}, {"type": "integer"}, {"type": "number"}
CLOSED = {"additionalProperties": False}

# (old, new, level, compatible, incompatible rule names reported)
CASES = [
    # types
    (INT, NUM, "BACKWARD", True, set()),
    (NUM, INT, "BACKWARD", False, {"TYPE_NARROWED"}),
    (INT, NUM, "FORWARD", False, {"TYPE_NARROWED"}),
    (INT, NUM, "FULL", False, {"TYPE_NARROWED"}),
    (STR, INT, "BACKWARD", False, {"TYPE_CHANGED"}),
    (STR, {"type": ["string", "null"]}, "BACKWARD", True, set()),
    (STR, {"type": ["string", "null"]}, "FORWARD", False, {"TYPE_CHANGED"}),
    (STR, {}, "BACKWARD", True, set()),
    # open content model (no additionalProperties)
    (obj({"a": STR}), obj({"a": STR, "b": INT}), "BACKWARD", False, {"OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"}),
    (
        obj({"a": STR}),
        obj({"a": STR, "b": INT}, ("b",)),
        "BACKWARD",
        False,
        {"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
    ),
    (obj({"a": STR}), obj({"a": STR, "b": {}}), "BACKWARD", True, set()),
    (obj({"a": STR, "b": INT}), obj({"a": STR}), "BACKWARD", True, set()),  # PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
    # closed content model
    (obj({"a": STR}, **CLOSED), obj({"a": STR, "b": INT}, **CLOSED), "BACKWARD", True, set()),
    (
        obj({"a": STR}, **CLOSED),
        obj({"a": STR, "b": INT}, ("b",), **CLOSED),
        "BACKWARD",
        False,
        {"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"},
    ),
    (obj({"a": STR}, **CLOSED), obj({"a": STR, "b": {**INT, "default": 0}}, ("b",), **CLOSED), "BACKWARD", True, set()),
    (
        obj({"a": STR, "b": INT}, **CLOSED),
        obj({"a": STR}, **CLOSED),
        "BACKWARD",
        False,
        {"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
    ),
    (
        obj({"a": STR}, **CLOSED),
        obj({"a": STR, "b": INT}, **CLOSED),
        "FULL",
        False,
        {"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
    ),
    # partially open: additionalProperties is a schema
    (
        obj({"a": STR}, additionalProperties=STR),
        obj({"a": STR, "b": INT}, additionalProperties=STR),
        "BACKWARD",
        False,
        {"TYPE_CHANGED", "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
    ),
    (
        obj({"a": STR}, additionalProperties=STR),
        obj({"a": STR, "b": STR}, additionalProperties=STR),
        "BACKWARD",
        True,
        set(),
    ),
    (obj({"a": STR, "b": STR}, **CLOSED), obj({"a": STR}, additionalProperties=STR), "BACKWARD", True, set()),
    # additionalProperties itself
    (obj({"a": STR}, **CLOSED), obj({"a": STR}), "BACKWARD", True, set()),
    (obj({"a": STR}), obj({"a": STR}, **CLOSED), "BACKWARD", False, {"ADDITIONAL_PROPERTIES_REMOVED"}),
    (obj({"a": STR}), obj({"a": STR}, additionalProperties=NUM), "BACKWARD", False, {"ADDITIONAL_PROPERTIES_NARROWED"}),
    (obj(additionalProperties=INT), obj(additionalProperties=NUM), "BACKWARD", True, set()),
    # required
    (obj({"a": STR}, ("a",)), obj({"a": STR}), "BACKWARD", True, set()),
    (obj({"a": STR}), obj({"a": STR}, ("a",)), "BACKWARD", False, {"REQUIRED_ATTRIBUTE_ADDED"}),
    (obj({"a": STR}), obj({"a": {**STR, "default": "x"}}, ("a",)), "BACKWARD", True, set()),
    # enum
    ({"enum": ["A", "B"]}, {"enum": ["A", "B", "C"]}, "BACKWARD", True, set()),
    ({"enum": ["A", "B"]}, {"enum": ["A"]}, "BACKWARD", False, {"ENUM_ARRAY_NARROWED"}),
    ({"enum": ["A", "B"]}, {"enum": ["A", "C"]}, "BACKWARD", False, {"ENUM_ARRAY_CHANGED"}),
    ({"enum": ["A", "B"]}, {"enum": ["A", "B", "C"]}, "FORWARD", False, {"ENUM_ARRAY_NARROWED"}),
    ({**STR, "enum": ["A"]}, {**STR, "enum": ["A", "B"]}, "BACKWARD", True, set()),
    ({**STR, "enum": ["A", "B"]}, {**STR, "enum": ["A"]}, "BACKWARD", False, {"COMBINED_TYPE_SUBSCHEMAS_CHANGED"}),
    ({**STR, "enum": ["A"]}, STR, "BACKWARD", True, set()),  # PRODUCT_TYPE_NARROWED
    ({"const": "x"}, {"const": "y"}, "BACKWARD", False, {"ENUM_ARRAY_CHANGED"}),
    # string / number / array constraints
    ({**STR, "maxLength": 5}, {**STR, "maxLength": 9}, "BACKWARD", True, set()),
    ({**STR, "maxLength": 9}, {**STR, "maxLength": 5}, "BACKWARD", False, {"MAX_LENGTH_DECREASED"}),
    (STR, {**STR, "maxLength": 5}, "BACKWARD", False, {"MAX_LENGTH_ADDED"}),
    ({**STR, "minLength": 1}, {**STR, "minLength": 2}, "BACKWARD", False, {"MIN_LENGTH_INCREASED"}),
    ({**STR, "pattern": "^a"}, {**STR, "pattern": "^b"}, "BACKWARD", False, {"PATTERN_CHANGED"}),
    ({**STR, "pattern": "^a"}, STR, "BACKWARD", True, set()),
    ({**NUM, "minimum": 0}, {**NUM, "minimum": 1}, "BACKWARD", False, {"MINIMUM_INCREASED"}),
    ({**NUM, "maximum": 9}, {**NUM, "maximum": 5}, "BACKWARD", False, {"MAXIMUM_DECREASED"}),
    (
        {**NUM, "exclusiveMaximum": 9},
        {**NUM, "exclusiveMaximum": 5},
        "BACKWARD",
        False,
        {"EXCLUSIVE_MAXIMUM_DECREASED"},
    ),
    ({**NUM, "multipleOf": 10}, {**NUM, "multipleOf": 5}, "BACKWARD", True, set()),
    ({**NUM, "multipleOf": 5}, {**NUM, "multipleOf": 10}, "BACKWARD", False, {"MULTIPLE_OF_EXPANDED"}),
    (
        {"type": "array", "items": STR, "maxItems": 5},
        {"type": "array", "items": STR, "maxItems": 3},
        "BACKWARD",
        False,
        {"MAX_ITEMS_DECREASED"},
    ),
    (
        {"type": "array", "items": STR},
        {"type": "array", "items": STR, "minItems": 1},
        "BACKWARD",
        False,
        {"MIN_ITEMS_ADDED"},
    ),
    (
        {"type": "array", "items": STR},
        {"type": "array", "items": STR, "uniqueItems": True},
        "BACKWARD",
        False,
        {"UNIQUE_ITEMS_ADDED"},
    ),
    ({"type": "array"}, {"type": "array", "items": STR}, "BACKWARD", False, {"SCHEMA_ADDED"}),
    ({"type": "array", "items": INT}, {"type": "array", "items": NUM}, "BACKWARD", True, set()),
    # combined schemas
    ({"oneOf": [STR]}, {"oneOf": [STR, NUM]}, "BACKWARD", True, set()),
    ({"oneOf": [STR, NUM]}, {"oneOf": [STR]}, "BACKWARD", False, {"SUM_TYPE_NARROWED"}),
    ({"oneOf": [STR, INT]}, {"anyOf": [STR, NUM]}, "BACKWARD", True, set()),
    ({"anyOf": [STR, NUM]}, {"oneOf": [STR]}, "BACKWARD", False, {"COMBINED_TYPE_CHANGED"}),
    ({"allOf": [STR]}, {"allOf": [STR, {"maxLength": 3}]}, "BACKWARD", False, {"PRODUCT_TYPE_EXTENDED"}),
    (
        {"oneOf": [{"type": "null"}, STR]},
        {"oneOf": [{"type": "null"}, INT]},
        "BACKWARD",
        False,
        {"COMBINED_TYPE_SUBSCHEMAS_CHANGED"},
    ),
    (STR, {"oneOf": [{"type": "null"}, STR]}, "BACKWARD", True, set()),
    ({"not": NUM}, {"not": INT}, "BACKWARD", True, set()),
    ({"not": INT}, {"not": NUM}, "BACKWARD", False, {"NOT_TYPE_EXTENDED"}),
    # metadata only
    (
        {**STR, "title": "a", "description": "x", "default": "1"},
        {**STR, "title": "b", "default": "2"},
        "FULL",
        True,
        set(),
    ),
]


@pytest.mark.parametrize(("old", "new", "level", "compatible", "rules"), CASES)
def test_rule_table(old, new, level, compatible, rules):
    result = compat.check_strategy(new, [old], level, schema_type="JSON")
    assert bool(result) is compatible
    assert {i.kind for i in result.incompatibilities} == rules
    # the same through the rules module directly, BACKWARD = (reader new, writer old)
    if level == "BACKWARD":
        assert bool(jc.check(new, old)) is compatible


def test_nested_paths_name_the_place():
    old = obj({"address": obj({"zip": STR}, **CLOSED), "tags": {"type": "array", "items": obj({"v": NUM})}})
    new = obj({"address": obj({"zip": INT}, **CLOSED), "tags": {"type": "array", "items": obj({"v": INT})}})
    result = jc.check(new, old)
    found = {(i.kind, i.location, i.path) for i in result.incompatibilities}
    assert found == {
        ("TYPE_CHANGED", "#/properties/address/properties/zip", "$.address.zip"),
        ("TYPE_NARROWED", "#/properties/tags/items/properties/v", "$.tags[].v"),
    }
    assert "TYPE_CHANGED at #/properties/address/properties/zip ($.address.zip)" in result.reasons[0]


def test_differences_lists_compatible_ones_too():
    diffs = jc.differences(obj({"a": INT, "b": STR}, ("a",)), obj({"a": NUM}))
    assert [(d.rule, d.location) for d in diffs] == [
        ("REQUIRED_ATTRIBUTE_REMOVED", "#/required/a"),
        ("TYPE_EXTENDED", "#/properties/a"),
        ("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", "#/properties/b"),
    ]
    assert {d.rule for d in diffs} <= jc.COMPATIBLE_CHANGES_STRICT


def test_lenient_policy():
    old, new = obj({"a": STR}), obj({"a": STR, "b": INT})
    assert not jc.check(new, old)
    assert jc.check(new, old, lenient=True)
    # a required property without default stays incompatible; a property dropped from a closed model is allowed
    assert not jc.check(obj({"a": STR, "b": INT}, ("b",)), old, lenient=True)
    assert jc.check(obj({"a": STR}, **CLOSED), obj({"a": STR, "b": INT}, **CLOSED), lenient=True)
    assert not jc.check(obj({"a": STR}, **CLOSED), obj({"a": STR, "b": INT}, **CLOSED))


def test_local_refs_are_resolved():
    def doc(zip_type: dict, bucket: str) -> dict:
        return {
            "type": "object",
            "properties": {"home": {"$ref": f"#/{bucket}/Addr"}},
            bucket: {"Addr": obj({"zip": zip_type})},
        }

    assert jc.check(doc(NUM, "definitions"), doc(INT, "$defs"))
    result = jc.check(doc(INT, "definitions"), doc(NUM, "definitions"))
    assert [(i.kind, i.location) for i in result.incompatibilities] == [
        ("TYPE_NARROWED", "#/properties/home/properties/zip")
    ]
    # moving a subschema behind a $ref changes nothing
    assert not jc.differences(
        obj({"z": STR}), {"type": "object", "properties": {"z": {"$ref": "#/$defs/Z"}}, "$defs": {"Z": STR}}
    )


def test_references_and_ids():
    shared = {"$id": "https://example.com/addr.json", **obj({"zip": STR})}
    doc = {"type": "object", "properties": {"a": {"$ref": "https://example.com/addr.json"}}}
    parsed = jc.parse(doc, references={"https://example.com/addr.json": shared})
    assert jc.check(parsed, parsed)
    with pytest.raises(SchemaError, match="cannot resolve"):
        jc.parse(doc)


def test_recursive_schemas_terminate():
    def tree(value: dict) -> dict:
        return {
            "$ref": "#/$defs/Node",
            "$defs": {"Node": obj({"value": value, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}})},
        }

    assert jc.check(tree(NUM), tree(INT))
    assert {i.kind for i in jc.check(tree(INT), tree(NUM)).incompatibilities} == {"TYPE_NARROWED"}


@pytest.mark.parametrize(
    ("schema", "match"),
    [
        ("{not json", "not valid JSON"),
        ("[1]", "object or a boolean"),
        ({"type": "record", "fields": []}, "unknown type"),
        ({"properties": {"a": 3}}, "object or a boolean"),
        ({"$ref": "#/$defs/missing"}, "cannot resolve"),
    ],
)
def test_malformed_schemas(schema, match):
    with pytest.raises(SchemaError, match=match):
        jc.parse(schema)


def test_canonical_form_keeps_property_order():
    text = '{"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}'
    assert jc.canonical_form(text) == '{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}}}'
    assert compat.canonical_form(text, "JSON") == jc.canonical_form(text)
    assert compat.rules_for("JSON") is jc


def test_transitive_levels():
    v1, v2, v3 = obj({"a": INT}), obj({"a": NUM}), obj({"a": NUM, "b": {}})
    assert compat.check_strategy(v3, [v1, v2], "BACKWARD_TRANSITIVE", schema_type="JSON")
    # v1 (integer) cannot read data of v3 (number); only the transitive level sees v1
    assert not compat.check_strategy(v3, [v1, v2], "FORWARD_TRANSITIVE", schema_type="JSON")
    assert not compat.check_strategy(v2, [v1], "FORWARD_TRANSITIVE", schema_type="JSON")
    assert compat.check_strategy(v3, [v2], "FULL", schema_type="JSON")


def test_local_registry_applies_the_rules():
    reg = LocalRegistry()
    v1 = json.dumps(obj({"id": INT, "name": STR}, ("id",), **CLOSED))
    first = reg.register("orders-value", v1, schema_type="JSON")
    # an optional property added to a closed model is BACKWARD compatible
    v2 = json.dumps(obj({"id": INT, "name": STR, "note": STR}, ("id",), **CLOSED))
    assert reg.register("orders-value", v2, schema_type="JSON") > first
    # a required one without default is not
    v3 = json.dumps(obj({"id": INT, "name": STR, "note": STR, "qty": INT}, ("id", "qty"), **CLOSED))
    assert not reg.check_compatibility("orders-value", v3, schema_type="JSON")
    with pytest.raises(IncompatibleSchemaError, match="REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL") as info:
        reg.register("orders-value", v3, schema_type="JSON")
    assert any("$.qty" in r for r in info.value.reasons)
    reg.set_compatibility("FORWARD", "orders-value")
    v4 = json.dumps(obj({"id": NUM, "name": STR, "note": STR}, ("id",), **CLOSED))
    result = reg.check_compatibility("orders-value", v4, schema_type="JSON")
    assert [i.kind for i in result.incompatibilities] == ["TYPE_NARROWED"]
    with pytest.raises(SchemaError):
        reg.register("orders-value", '{"type": "nope"}', schema_type="JSON")


def _cycle_doc(t0_id: str, t1_id: str) -> dict:
    # T0 -> T2 -> T0 is a cycle and T1 -> T2; the root property is a oneOf of T0 and T1
    # (after Confluent's SchemaDiffTest testRecursiveOneOfMemoizationDoesNotMaskIncompatibility)
    def node(id_type: str, target: str) -> dict:
        return {
            "type": "object",
            "properties": {"id": {"type": id_type}, "ref": {"oneOf": [{"$ref": f"#/definitions/{target}"}]}},
        }

    return {
        "type": "object",
        "definitions": {"T0": node(t0_id, "T2"), "T1": node(t1_id, "T2"), "T2": node("integer", "T0")},
        "properties": {"root": {"oneOf": [{"$ref": "#/definitions/T0"}, {"$ref": "#/definitions/T1"}]}},
    }


def test_recursive_pairs_assumed_compatible_do_not_hide_an_incompatibility():
    # writer T0.id integer -> reader boolean is a TYPE_CHANGED reached again through T2; pairing
    # T0 with the reader's T1 (number) or T1 with the reader's T0 both go through T2 -> T0 as well
    writer, reader = _cycle_doc("integer", "boolean"), _cycle_doc("boolean", "number")
    result = jc.check(reader, writer)
    assert not result
    assert "COMBINED_TYPE_SUBSCHEMAS_CHANGED" in {i.kind for i in result.incompatibilities}
    assert not jc.check(reader, writer, lenient=True)
    assert not compat.check_strategy(reader, [writer], "BACKWARD", schema_type="JSON")
    # the same recursive document still reads itself
    assert jc.check(writer, writer)
    assert jc.differences(writer, _cycle_doc("integer", "boolean")) == []


def test_connect_bytes_types_are_interchangeable():
    # Kafka Connect's Decimal ("connect.type": "bytes") may be written as a string or a number;
    # Confluent treats the two as one type (SchemaDiffTest testConnectTypeAsBytes)
    decimal = {
        "title": "org.apache.kafka.connect.data.Decimal",
        "connect.version": 1,
        "connect.type": "bytes",
        "connect.parameters": {"scale": "2"},
    }
    as_string, as_number = {**decimal, "type": "string"}, {**decimal, "type": "number"}
    assert jc.differences(as_string, as_number) == []
    assert compat.check_strategy(as_number, [as_string], "FULL", schema_type="JSON")
    # both sides must say bytes
    plain = {"type": "number", "title": decimal["title"]}
    assert [d.rule for d in jc.differences(as_string, plain)] == ["TYPE_CHANGED"]
    assert not jc.check({**as_number, "connect.type": "float64"}, as_string)
