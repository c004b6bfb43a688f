"""Compatibility checks: Avro reader/writer rules, strategies and PIP-44 producer/consumer checks.

The verdicts follow Avro Java's SchemaCompatibility (spec/wire-formats.md section 10.2); a
hypothesis test compares them with the independent port in the ``avro`` package on random schema
pairs.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_codec import compat
from pulsar_codec.compat import Strategy, check, check_consumer, check_producer, check_strategy
from pulsar_codec.errors import IncompatibleSchemaError, SchemaError


def rec(name, *fields, **extra):
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def f(name, type_, **extra):
    return {"name": name, "type": type_, **extra}


def enum_(name, symbols, **extra):
    return {"type": "enum", "name": name, "symbols": list(symbols), **extra}


def fixed(name, size, **extra):
    return {"type": "fixed", "name": name, "size": size, **extra}


# --------------------------------------------------------------------------------------------
# reader / writer table: (id, reader, writer, compatible, expected kinds with locations)

PRIMS = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
PROMOTABLE = {
    ("long", "int"),
    ("float", "int"),
    ("double", "int"),
    ("float", "long"),
    ("double", "long"),
    ("double", "float"),
    ("bytes", "string"),
    ("string", "bytes"),
}


@pytest.mark.parametrize("reader", PRIMS)
@pytest.mark.parametrize("writer", PRIMS)
def test_primitive_matrix(reader, writer):
    result = check(reader, writer)
    expected = reader == writer or (reader, writer) in PROMOTABLE
    assert bool(result) is expected
    if not expected:
        assert [i.kind for i in result.incompatibilities] == ["TYPE_MISMATCH"]
        assert result.incompatibilities[0].location == "/"


CASES = [
    # named types: unqualified names, reader aliases
    (
        "record-namespace-ignored",
        rec("R", f("a", "int"), namespace="x"),
        rec("R", f("a", "int"), namespace="y"),
        True,
        [],
    ),
    ("record-no-namespace-vs-namespace", rec("R", f("a", "int")), rec("n.R", f("a", "int")), True, []),
    ("record-name-mismatch", rec("R", f("a", "int")), rec("S", f("a", "int")), False, [("NAME_MISMATCH", "/name")]),
    ("record-reader-alias", rec("R", f("a", "int"), aliases=["S"]), rec("S", f("a", "int")), True, []),
    (
        "record-reader-alias-qualified-by-namespace",
        rec("R", f("a", "int"), namespace="n", aliases=["S"]),
        rec("S", f("a", "int"), namespace="n"),
        True,
        [],
    ),
    (
        "record-reader-alias-other-namespace",
        rec("R", f("a", "int"), namespace="n", aliases=["S"]),
        rec("S", f("a", "int"), namespace="m"),
        False,
        [("NAME_MISMATCH", "/name")],
    ),
    (
        "record-writer-alias-not-used",
        rec("R", f("a", "int")),
        rec("S", f("a", "int"), aliases=["R"]),
        False,
        [("NAME_MISMATCH", "/name")],
    ),
    # fields
    ("writer-extra-field", rec("R", f("a", "int")), rec("R", f("a", "int"), f("b", "string")), True, []),
    (
        "reader-extra-field-default",
        rec("R", f("a", "int"), f("b", "string", default="")),
        rec("R", f("a", "int")),
        True,
        [],
    ),
    (
        "reader-extra-field-null-default",
        rec("R", f("a", "int"), f("b", ["null", "string"], default=None)),
        rec("R", f("a", "int")),
        True,
        [],
    ),
    (
        "reader-extra-field-no-default",
        rec("R", f("a", "int"), f("b", "string")),
        rec("R", f("a", "int")),
        False,
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")],
    ),
    (
        "field-order-irrelevant",
        rec("R", f("b", "string"), f("a", "int")),
        rec("R", f("a", "int"), f("b", "string")),
        True,
        [],
    ),
    ("field-reader-alias", rec("R", f("new", "int", aliases=["old"])), rec("R", f("old", "int")), True, []),
    (
        "field-type-mismatch-location",
        rec("R", f("a", "int"), f("b", "int")),
        rec("R", f("a", "int"), f("b", "string")),
        False,
        [("TYPE_MISMATCH", "/fields/1/type")],
    ),
    ("field-promotion", rec("R", f("a", "double")), rec("R", f("a", "int")), True, []),
    # enums
    ("enum-writer-subset", enum_("E", "ABC"), enum_("E", "AB"), True, []),
    ("enum-writer-extra-symbol", enum_("E", "AB"), enum_("E", "ABC"), False, [("MISSING_ENUM_SYMBOLS", "/symbols")]),
    ("enum-reader-default", enum_("E", "AB", default="A"), enum_("E", "ABC"), True, []),
    ("enum-name-mismatch", enum_("E", "AB"), enum_("F", "AB"), False, [("NAME_MISMATCH", "/name")]),
    (
        "enum-in-record",
        rec("Event", f("id", "long"), f("status", enum_("S", "AB"))),
        rec("Event", f("id", "long"), f("status", enum_("S", "ABC"))),
        False,
        [("MISSING_ENUM_SYMBOLS", "/fields/1/type/symbols")],
    ),
    (
        # Avro Java quirk: a missing reader field with no default but an enum default is compared
        # with the whole writer record
        "enum-default-field-quirk",
        rec("R", f("a", "int"), f("e", enum_("E", "AB", default="A"))),
        rec("R", f("a", "int")),
        False,
        [("TYPE_MISMATCH", "/fields/1/type")],
    ),
    # fixed
    ("fixed-same", fixed("F", 4), fixed("F", 4), True, []),
    ("fixed-size", fixed("F", 4), fixed("F", 8), False, [("FIXED_SIZE_MISMATCH", "/size")]),
    ("fixed-name", fixed("F", 4), fixed("G", 4), False, [("NAME_MISMATCH", "/name")]),
    (
        "fixed-name-and-size",
        fixed("F", 4),
        fixed("G", 8),
        False,
        [("NAME_MISMATCH", "/name"), ("FIXED_SIZE_MISMATCH", "/size")],
    ),
    ("fixed-vs-bytes", fixed("F", 4), "bytes", False, [("TYPE_MISMATCH", "/")]),
    # arrays and maps, recursively
    ("array-promotion", {"type": "array", "items": "long"}, {"type": "array", "items": "int"}, True, []),
    (
        "array-items-mismatch",
        {"type": "array", "items": "int"},
        {"type": "array", "items": "long"},
        False,
        [("TYPE_MISMATCH", "/items")],
    ),
    (
        "map-values-mismatch",
        {"type": "map", "values": "int"},
        {"type": "map", "values": "string"},
        False,
        [("TYPE_MISMATCH", "/values")],
    ),
    (
        "array-vs-map",
        {"type": "array", "items": "int"},
        {"type": "map", "values": "int"},
        False,
        [("TYPE_MISMATCH", "/")],
    ),
    (
        "nested-array-of-records",
        {"type": "array", "items": rec("R", f("a", "int"), f("b", "int"))},
        {"type": "array", "items": rec("R", f("a", "int"))},
        False,
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/items/fields/1")],
    ),
    # unions
    ("writer-union-all-readable", "long", ["int", "long"], True, []),
    ("writer-union-one-unreadable", "int", ["null", "int"], False, [("TYPE_MISMATCH", "/0")]),
    ("reader-union-any-branch", ["null", "long"], "int", True, []),
    ("reader-union-no-branch", ["null", "string"], "int", False, [("MISSING_UNION_BRANCH", "/")]),
    ("union-union-superset", ["null", "int", "string"], ["int", "null"], True, []),
    ("union-union-missing", ["null", "int"], ["null", "int", "string"], False, [("MISSING_UNION_BRANCH", "/2")]),
    ("union-union-promotion", ["null", "double"], ["null", "int", "float"], True, []),
    (
        "optional-field-becomes-required",
        rec("R", f("a", "int")),
        rec("R", f("a", ["null", "int"], default=None)),
        False,
        [("TYPE_MISMATCH", "/fields/0/type/0")],
    ),
    ("logical-types-ignored", {"type": "long", "logicalType": "timestamp-millis"}, "long", True, []),
]


@pytest.mark.parametrize("name,reader,writer,compatible,expected", CASES, ids=[c[0] for c in CASES])
def test_reader_writer_rules(name, reader, writer, compatible, expected):
    result = check(reader, writer)
    assert bool(result) is compatible, result.reasons
    assert result.compatible is compatible
    assert [(i.kind, i.location) for i in result.incompatibilities] == expected
    assert len(result.reasons) == len(expected)
    for reason, (kind, location) in zip(result.reasons, expected, strict=True):
        assert kind in reason and location in reason


def test_reason_names_the_field_path():
    reader = rec("Event", f("id", "long"), f("status", enum_("S", "AB")), f("tags", {"type": "array", "items": "int"}))
    writer = rec(
        "Event", f("id", "long"), f("status", enum_("S", "ABC")), f("tags", {"type": "array", "items": "string"})
    )
    result = check(reader, writer)
    paths = {i.path for i in result.incompatibilities}
    assert paths == {"Event.status", "Event.tags[]"}
    assert any("['C']" in r for r in result.reasons)
    assert any(r.startswith("TYPE_MISMATCH at /fields/2/type/items (Event.tags[])") for r in result.reasons)


def test_union_branch_path():
    result = check(rec("R", f("x", "int")), rec("R", f("x", ["null", "int"], default=None)))
    assert result.incompatibilities[0].path == "R.x|0"


LINKED = rec("Node", f("value", "int"), f("next", ["null", "Node"], default=None))


def test_recursive_schema_compatible_with_itself_and_promotion():
    assert check(LINKED, LINKED)
    wider = rec("Node", f("value", "long"), f("next", ["null", "Node"], default=None))
    assert check(wider, LINKED)
    narrower = check(LINKED, wider)
    assert not narrower
    assert [i.location for i in narrower.incompatibilities] == ["/fields/0/type"]


def test_mutually_recursive_schemas():
    tree = rec("Tree", f("kids", {"type": "array", "items": rec("Leaf", f("up", ["null", "Tree"]), f("w", "int"))}))
    tree2 = rec("Tree", f("kids", {"type": "array", "items": rec("Leaf", f("up", ["null", "Tree"]), f("w", "string"))}))
    assert check(tree, tree)
    bad = check(tree, tree2)
    assert [i.location for i in bad.incompatibilities] == ["/fields/0/type/items/fields/1/type"]


def test_field_alias_matching_two_writer_fields_is_an_error():
    reader = rec("R", f("a", "int", aliases=["b"]))
    writer = rec("R", f("a", "int"), f("b", "int"))
    with pytest.raises(SchemaError, match="several fields"):
        check(reader, writer)


def test_named_reference_resolution_and_inputs():
    writer = rec(
        "R",
        f("a", fixed("MD5", 16)),
        f("b", "MD5"),
        f("c", enum_("E", "XY", namespace="other")),
        f("d", "other.E"),
        namespace="ns",
    )
    text = json.dumps(writer)
    for form in (text, text.encode(), writer, compat.parse(writer)):
        assert check(form, writer)
    assert check(["null", "int"], json.dumps(["int"]))
    assert check("string", '"string"')  # a bare primitive name


@pytest.mark.parametrize(
    "bad,match",
    [
        ('{"type": "record", "name": "R", "fields": [{"name": "a", "type": "Nope"}]}', "unknown Avro type"),
        (rec("R", f("a", rec("R", f("b", "int")))), "defined twice"),
        (enum_("E", "AB", default="C"), "not one of its symbols"),
        (["int", ["null", "long"]], "another union"),
        (["int", "int"], "duplicate"),
        ({"type": "record", "name": "R"}, "fields"),
        ({"type": "array"}, "items"),
        ({"type": "fixed", "name": "F", "size": -1}, "size"),
        ("{not json", "not valid JSON"),
        (b"\xff\xfe", "UTF-8"),
        (42, "cannot read"),
        ({"name": "x"}, "needs a string 'type'"),
        (rec("R", f("a", "int"), f("a", "long")), "twice"),
    ],
)
def test_malformed_schemas_raise_schema_error(bad, match):
    with pytest.raises(SchemaError, match=match):
        check(bad, "int")


def test_deeply_nested_schema_is_a_schema_error():
    deep = "int"
    for _ in range(3000):
        deep = {"type": "array", "items": deep}
    with pytest.raises(SchemaError, match="nested too deeply"):
        compat.parse(deep)


# --------------------------------------------------------------------------------------------
# canonical form


def test_canonical_form_ignores_layout_and_namespace_spelling():
    a = '{"type":"record","name":"R","namespace":"n","fields":[{"name":"x","type":{"type":"int"}}]}'
    b = '{ "fields": [ {"type": "int", "name": "x"} ], "name": "n.R", "type": "record" }'
    assert compat.canonical_form(a) == compat.canonical_form(b)
    assert compat.fingerprint(a) == compat.fingerprint(b)


@pytest.mark.parametrize(
    "other",
    [
        '{"type":"record","name":"n.R","fields":[{"name":"x","type":"int","default":0}]}',
        '{"type":"record","name":"n.R","fields":[{"name":"x","type":{"type":"int","logicalType":"date"}}]}',
        '{"type":"record","name":"n.R","aliases":["Old"],"fields":[{"name":"x","type":"int"}]}',
        '{"type":"record","name":"m.R","fields":[{"name":"x","type":"int"}]}',
    ],
)
def test_canonical_form_keeps_what_changes_meaning(other):
    base = '{"type":"record","name":"n.R","fields":[{"name":"x","type":"int"}]}'
    assert compat.canonical_form(base) != compat.canonical_form(other)


def test_canonical_form_other_types():
    # JSON Schema keeps its key order (property order is column and encoding order), compacted
    assert compat.canonical_form('{"b": 1, "a": [1, 2]}', "JSON") == '{"b":1,"a":[1,2]}'
    assert compat.canonical_form('  syntax = "proto3";\n', "THRIFT") == 'syntax = "proto3";'  # no rules: stripped
    assert compat.fingerprint("{}", "JSON") != compat.fingerprint("{}", "THRIFT")
    # Protobuf: the compiled schema printed back, whatever the layout
    spaced = 'syntax="proto3";  message A {int32 x=1;}'
    assert compat.canonical_form(spaced, "PROTOBUF") == 'syntax = "proto3";\nmessage A {\n  int32 x = 1;\n}\n'
    with pytest.raises(SchemaError):
        compat.canonical_form("{", "JSON")


# --------------------------------------------------------------------------------------------
# strategies

S0 = rec("R")  # drops field a, which has no default
S1 = rec("R", f("a", "int"))
S2 = rec("R", f("a", "int"), f("b", "string"))  # adds b without a default
S3 = rec("R", f("a", "int"), f("b", "string", default=""))

STRATEGY_TABLE = [
    # existing (oldest first), new, {strategy: compatible}
    (
        [S1, S3],
        S2,
        {
            "BACKWARD": True,
            "BACKWARD_TRANSITIVE": False,
            "FORWARD": True,
            "FORWARD_TRANSITIVE": True,
            "FULL": True,
            "FULL_TRANSITIVE": False,
            "ALWAYS_COMPATIBLE": True,
            "NONE": True,
            "ALWAYS_INCOMPATIBLE": False,
            "UNDEFINED": False,
        },
    ),
    (
        [S1, S3],
        S0,
        {
            "BACKWARD": True,
            "BACKWARD_TRANSITIVE": True,
            "FORWARD": False,
            "FORWARD_TRANSITIVE": False,
            "FULL": False,
            "FULL_TRANSITIVE": False,
            "ALWAYS_COMPATIBLE": True,
            "NONE": True,
            "ALWAYS_INCOMPATIBLE": False,
        },
    ),
    (
        [S3, S2],
        S1,  # latest S2 cannot read S1 (b has no default); S3 can
        {
            "BACKWARD": True,
            "FORWARD": False,
            "FORWARD_TRANSITIVE": False,
            "FULL": False,
            "FULL_TRANSITIVE": False,
            "BACKWARD_TRANSITIVE": True,
        },
    ),
    (
        [S2, S3],
        S1,  # only the oldest cannot read S1: non-transitive FORWARD passes, transitive fails
        {"FORWARD": True, "FORWARD_TRANSITIVE": False, "FULL": True, "FULL_TRANSITIVE": False},
    ),
    ([], S2, {s.value: True for s in Strategy}),
]


@pytest.mark.parametrize("existing,new,verdicts", STRATEGY_TABLE)
def test_strategy_table(existing, new, verdicts):
    for strategy, expected in verdicts.items():
        result = check_strategy(new, existing, strategy)
        assert bool(result) is expected, (strategy, result.reasons)
        if not expected:
            assert result.reasons


def test_every_strategy_is_covered():
    covered = set().union(*(v.keys() for _, _, v in STRATEGY_TABLE))
    assert covered == {s.value for s in Strategy}


def test_strategy_reasons_name_the_version_and_direction():
    result = check_strategy(S2, [S1, S3], "FULL_TRANSITIVE", labels=["version 1", "version 2"])
    assert result.reasons == [
        "READER_FIELD_MISSING_DEFAULT_VALUE at /fields/1 (R.b): new schema cannot read version 1: "
        "reader field 'b' has no default and the writer has no such field"
    ]
    result = check_strategy(S0, [S1], "FORWARD")
    assert "existing schema #0 cannot read the new schema" in result.reasons[0]


def test_strategy_parse():
    assert Strategy.parse("backward_transitive") is Strategy.BACKWARD_TRANSITIVE
    assert Strategy.parse(Strategy.NONE) is Strategy.NONE
    assert Strategy.FULL_TRANSITIVE.transitive and not Strategy.FULL.transitive
    assert Strategy.FULL.backward and Strategy.FULL.forward
    assert not Strategy.ALWAYS_COMPATIBLE.backward
    with pytest.raises(ValueError, match="unknown compatibility strategy"):
        Strategy.parse("SIDEWAYS")


def test_strategy_validates_the_new_schema_even_when_always_compatible():
    with pytest.raises(SchemaError):
        check_strategy('{"type": "nope"}', [], "NONE")


def test_raise_if_incompatible():
    result = check_strategy(S2, [S1], "BACKWARD")
    with pytest.raises(IncompatibleSchemaError) as info:
        result.raise_if_incompatible("cannot register")
    assert info.value.reasons == result.reasons
    assert str(info.value).startswith("cannot register: READER_FIELD_MISSING_DEFAULT_VALUE")
    check_strategy(S3, [S1], "BACKWARD").raise_if_incompatible()


# --------------------------------------------------------------------------------------------
# PIP-44 producer and consumer checks


class SchemaType(enum.Enum):  # stand-in shaped like pulsar_types.SchemaType
    STRING = 1
    JSON = 2
    PROTOBUF = 3
    AVRO = 4
    INT32 = 8
    KEY_VALUE = 15
    EXTERNAL = 21
    BYTES = -1


@dataclass
class Info:  # stand-in shaped like pulsar_types.SchemaInfo
    name: str
    type: SchemaType
    schema: bytes
    properties: dict = field(default_factory=dict)


def avro(schema):
    return Info("t", SchemaType.AVRO, json.dumps(schema).encode())


V1 = rec("R", f("a", "int"))
V2 = rec("R", f("a", "int"), f("b", "string", default=""))
V3 = rec("R", f("a", "int"), f("b", "string", default=""), f("c", "long", default=0))
N_MID = rec("R", f("a", "int"), f("b", "string"))  # reads V2 and V3, not V1; all of them read it
N_DROP = rec("R", f("b", "string", default=""))  # drops a: reads all; V1..V3 cannot read it
EXISTING = [avro(V1), avro(V2), avro(V3)]

ALL = [s.value for s in Strategy if s is not Strategy.UNDEFINED]

PRODUCER = {
    "N_MID": dict(
        BACKWARD=True,
        BACKWARD_TRANSITIVE=False,
        FORWARD=True,
        FORWARD_TRANSITIVE=True,
        FULL=True,
        FULL_TRANSITIVE=False,
        ALWAYS_COMPATIBLE=True,
        NONE=True,
        ALWAYS_INCOMPATIBLE=False,
    ),
    "N_DROP": dict(
        BACKWARD=True,
        BACKWARD_TRANSITIVE=True,
        FORWARD=False,
        FORWARD_TRANSITIVE=False,
        FULL=False,
        FULL_TRANSITIVE=False,
        ALWAYS_COMPATIBLE=True,
        NONE=True,
        ALWAYS_INCOMPATIBLE=False,
    ),
    # already registered: accepted as is, whatever the strategy
    "V1": {s: True for s in ALL},
}
CONSUMER = {
    # BACKWARD, FORWARD, FORWARD_TRANSITIVE, FULL: can read the latest; others: strategy vs all
    "N_MID": dict(
        BACKWARD=True,
        FORWARD=True,
        FORWARD_TRANSITIVE=True,
        FULL=True,
        BACKWARD_TRANSITIVE=False,
        FULL_TRANSITIVE=False,
        ALWAYS_COMPATIBLE=True,
        NONE=True,
        ALWAYS_INCOMPATIBLE=False,
    ),
    "N_DROP": dict(
        BACKWARD=True,
        FORWARD=True,
        FORWARD_TRANSITIVE=True,
        FULL=True,
        BACKWARD_TRANSITIVE=True,
        FULL_TRANSITIVE=False,
        ALWAYS_COMPATIBLE=True,
        NONE=True,
        ALWAYS_INCOMPATIBLE=False,
    ),
    # V1 reads every version, and every version reads V1 (b and c have defaults)
    "V1": dict(
        BACKWARD=True,
        FORWARD=True,
        FORWARD_TRANSITIVE=True,
        FULL=True,
        BACKWARD_TRANSITIVE=True,
        FULL_TRANSITIVE=True,
        ALWAYS_COMPATIBLE=True,
        NONE=True,
        ALWAYS_INCOMPATIBLE=False,
    ),
}
NEW = {"N_MID": N_MID, "N_DROP": N_DROP, "V1": V1}


@pytest.mark.parametrize("new", sorted(PRODUCER))
@pytest.mark.parametrize("strategy", ALL)
def test_pip44_producer_table(new, strategy):
    result = check_producer(avro(NEW[new]), EXISTING, strategy)
    assert bool(result) is PRODUCER[new][strategy], result.reasons


@pytest.mark.parametrize("new", sorted(CONSUMER))
@pytest.mark.parametrize("strategy", ALL)
def test_pip44_consumer_table(new, strategy):
    result = check_consumer(avro(NEW[new]), EXISTING, strategy)
    assert bool(result) is CONSUMER[new][strategy], result.reasons


def test_pip44_forward_consumer_versus_producer():
    # the PIP's motivating case: under FORWARD an old-style consumer schema must still connect
    assert not check_producer(avro(N_DROP), EXISTING, "FORWARD")
    assert check_consumer(avro(N_DROP), EXISTING, "FORWARD")


def test_producer_already_registered_uses_canonical_form():
    spaced = Info("t", SchemaType.AVRO, json.dumps(V1, indent=4).encode())
    assert check_producer(spaced, EXISTING, "ALWAYS_INCOMPATIBLE")
    with_default = avro(rec("R", f("a", "int", default=0)))
    assert not check_producer(with_default, EXISTING, "ALWAYS_INCOMPATIBLE")


def test_no_existing_schema():
    for strategy in ALL:
        assert check_producer(avro(V1), [], strategy)
    result = check_consumer(avro(V1), [], "BACKWARD")
    assert not result and result.reasons == ["NO_SCHEMA: Topic does not have schema to check"]
    assert check_consumer(avro(V1), [], "ALWAYS_COMPATIBLE")


EXTERNAL = Info("", SchemaType.EXTERNAL, b"")


@pytest.mark.parametrize("check_fn", [check_producer, check_consumer])
def test_external_only_with_external(check_fn):
    for strategy in ("BACKWARD", "FULL_TRANSITIVE", "FORWARD"):
        result = check_fn(EXTERNAL, EXISTING, strategy)
        assert not result
        assert "External schema is not compatible with the other schema types" in result.reasons[0]
        back = check_fn(avro(V1), [EXTERNAL], strategy)
        assert not back and "External schema is not compatible" in back.reasons[0]
        assert check_fn(EXTERNAL, [EXTERNAL], strategy)
    other_external = Info("", SchemaType.EXTERNAL, b"registry-a")
    assert check_fn(other_external, [EXTERNAL], "ALWAYS_INCOMPATIBLE")
    assert check_fn(EXTERNAL, EXISTING, "ALWAYS_COMPATIBLE")


def test_schema_type_change_is_incompatible():
    json_v1 = Info("t", SchemaType.JSON, json.dumps(V1).encode())
    result = check_producer(json_v1, EXISTING, "BACKWARD")
    assert not result
    assert "Incompatible schema: exists schema type AVRO, new schema type JSON" in result.reasons[0]


def test_json_with_avro_schema_data_uses_avro_rules():
    js = [Info("t", SchemaType.JSON, json.dumps(s).encode()) for s in (V1, V2, V3)]
    assert check_producer(Info("t", SchemaType.JSON, json.dumps(N_DROP).encode()), js, "BACKWARD_TRANSITIVE")
    assert not check_producer(Info("t", SchemaType.JSON, json.dumps(N_DROP).encode()), js, "FORWARD")
    legacy_a = Info("t", SchemaType.JSON, b'{"type": "object", "id": "urn:a"}')
    legacy_b = Info("t", SchemaType.JSON, b'{"type": "object", "id": "urn:b", "properties": {}}')
    assert not check_producer(legacy_b, [legacy_a], "BACKWARD")
    assert check_producer(js[0], [legacy_a], "BACKWARD")  # a change of format is allowed


def test_primitive_types_only_fail_always_incompatible():
    s = Info("s", SchemaType.STRING, b"")
    assert check_producer(s, [s], "ALWAYS_INCOMPATIBLE")  # already registered
    assert check_consumer(s, [s], "BACKWARD")
    assert not check_consumer(s, [s], "ALWAYS_INCOMPATIBLE")
    i = Info("i", SchemaType.INT32, b"")
    assert not check_producer(i, [s], "BACKWARD")


def test_invalid_avro_data_is_incompatible_not_a_crash():
    broken = Info("t", SchemaType.AVRO, b'{"type": "record"')
    result = check_producer(broken, EXISTING, "BACKWARD")
    assert not result and result.incompatibilities[0].kind == "INVALID_SCHEMA"


def kv(key_type, key_schema, value_type, value_schema):
    def blob(b):
        return len(b).to_bytes(4, "big") + b

    kb = json.dumps(key_schema).encode() if key_schema is not None else b""
    vb = json.dumps(value_schema).encode() if value_schema is not None else b""
    props = {"key.schema.type": key_type, "value.schema.type": value_type, "kv.encoding.type": "INLINE"}
    return Info("KeyValue", SchemaType.KEY_VALUE, blob(kb) + blob(vb), props)


def test_keyvalue_checked_key_and_value_apart():
    existing = [kv("STRING", None, "AVRO", V1), kv("STRING", None, "AVRO", V2)]
    assert check_producer(kv("STRING", None, "AVRO", V3), existing, "BACKWARD_TRANSITIVE")
    assert check_producer(kv("STRING", None, "AVRO", V2), existing, "ALWAYS_INCOMPATIBLE")  # registered
    bad_value = check_producer(kv("STRING", None, "AVRO", N_MID), existing, "BACKWARD_TRANSITIVE")
    assert not bad_value
    assert all(r.startswith("READER_FIELD_MISSING_DEFAULT_VALUE") and "value: " in r for r in bad_value.reasons)
    both_avro = [kv("AVRO", V1, "AVRO", V1)]
    bad_key = check_producer(kv("AVRO", N_MID, "AVRO", V1), both_avro, "BACKWARD")
    assert not bad_key and "key: " in bad_key.reasons[0]
    type_change = check_producer(kv("INT32", None, "AVRO", V2), existing, "BACKWARD")
    assert not type_change
    assert "Key schemas or Value schemas are different schema type" in type_change.reasons[0]
    assert check_producer(kv("INT32", None, "AVRO", V2), existing, "ALWAYS_COMPATIBLE")
    assert not check_producer(kv("STRING", None, "AVRO", V3), existing, "ALWAYS_INCOMPATIBLE")


def test_keyvalue_defaults_and_truncation():
    # a missing sub-type means BYTES
    plain = Info("KeyValue", SchemaType.KEY_VALUE, b"\x00\x00\x00\x00\x00\x00\x00\x00", {})
    assert check_consumer(plain, [plain], "BACKWARD")
    truncated = Info("KeyValue", SchemaType.KEY_VALUE, b"\x00\x00", {})
    with pytest.raises(SchemaError, match="truncated"):
        check_consumer(truncated, [plain], "BACKWARD")


def test_tuples_and_type_names_are_accepted():
    assert check_producer(("avro", json.dumps(V3)), [("AVRO", json.dumps(V1))], "BACKWARD")
    assert not check_producer(("AVRO", N_MID, {}), [("AVRO", V1)], "BACKWARD")
    with pytest.raises(SchemaError):
        check_producer(object(), [], "BACKWARD")


def test_pulsar_types_schema_info_if_present():
    pt = pytest.importorskip("pulsar_codec.pulsar_types")
    new = pt.SchemaInfo("t", pt.SchemaType.AVRO, json.dumps(N_DROP).encode(), {})
    old = [pt.SchemaInfo("t", pt.SchemaType.AVRO, json.dumps(V1).encode(), {})]
    assert not check_producer(new, old, "FORWARD")
    assert check_consumer(new, old, "FORWARD")
    ext = pt.SchemaInfo("", pt.SchemaType.EXTERNAL, b"", {})
    assert not check_producer(ext, old, "BACKWARD")
    # KeyValue SchemaInfos built by pulsar_types: key and value checked apart
    key = pt.SchemaInfo("k", pt.SchemaType.STRING, b"", {})

    def kv_of(schema):
        value = pt.SchemaInfo("v", pt.SchemaType.AVRO, json.dumps(schema).encode(), {})
        return pt.encode_keyvalue_schema_info(key, value)

    existing = [kv_of(V1), kv_of(V2)]
    assert check_producer(kv_of(V3), existing, "FULL_TRANSITIVE")
    assert not check_producer(kv_of(N_MID), existing, "BACKWARD_TRANSITIVE")
    assert check_consumer(kv_of(N_DROP), existing, "FORWARD")
    int_key = pt.encode_keyvalue_schema_info(
        pt.SchemaInfo("k", pt.SchemaType.INT32, b"", {}),
        pt.SchemaInfo("v", pt.SchemaType.AVRO, json.dumps(V3).encode(), {}),
    )
    result = check_producer(int_key, existing, "BACKWARD")
    assert not result and "different schema type" in result.reasons[0]


# --------------------------------------------------------------------------------------------
# differential test against the avro package's port of the same Java checker


def _default_for(schema):
    if isinstance(schema, list):
        return _default_for(schema[0])
    if isinstance(schema, str):
        return {
            "null": None,
            "boolean": False,
            "int": 0,
            "long": 0,
            "float": 0.0,
            "double": 0.0,
            "bytes": "",
            "string": "",
        }[schema]
    t = schema["type"]
    if t == "enum":
        return schema["symbols"][0]
    if t == "fixed":
        return "\u0000" * schema["size"]
    if t == "array":
        return []
    if t == "map":
        return {}
    if t == "record":
        return {fl["name"]: _default_for(fl["type"]) for fl in schema["fields"]}
    return _default_for(t)


@st.composite
def avro_schemas(draw):
    counter = {"R": 0, "E": 0, "F": 0}

    def named(kind):
        counter[kind] += 1
        return f"{kind}{counter[kind]}"

    def schema(depth):
        choices = ["prim"] * 4 + (["record", "enum", "fixed", "array", "map", "union"] if depth < 3 else [])
        kind = draw(st.sampled_from(choices))
        if kind == "prim":
            return draw(st.sampled_from(PRIMS))
        if kind == "enum":
            symbols = draw(st.lists(st.sampled_from("ABCD"), min_size=1, max_size=4, unique=True))
            out = enum_(named("E"), symbols)
            if draw(st.booleans()):
                out["default"] = draw(st.sampled_from(symbols))
            return out
        if kind == "fixed":
            return fixed(named("F"), draw(st.sampled_from([2, 4])))
        if kind == "array":
            return {"type": "array", "items": schema(depth + 1)}
        if kind == "map":
            return {"type": "map", "values": schema(depth + 1)}
        if kind == "union":
            branches = draw(st.lists(st.sampled_from(PRIMS), min_size=1, max_size=3, unique=True))
            return branches
        name = named("R")
        fields = []
        for fname in draw(st.lists(st.sampled_from("abc"), max_size=3, unique=True)):
            ftype = schema(depth + 1)
            fl = f(fname, ftype)
            if draw(st.booleans()):
                fl["default"] = _default_for(ftype)
            fields.append(fl)
        return rec(name, *fields)

    return schema(0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(avro_schemas(), avro_schemas())
def test_verdicts_match_avro_reference_port(reader, writer):
    avro_compat = pytest.importorskip("avro.compatibility")
    avro_schema = pytest.importorskip("avro.schema")
    ours = bool(check(reader, writer))
    r = avro_schema.parse(json.dumps(reader))
    w = avro_schema.parse(json.dumps(writer))
    theirs = avro_compat.ReaderWriterCompatibilityChecker().get_compatibility(r, w).compatibility
    assert ours is (theirs is avro_compat.SchemaCompatibilityType.compatible)
    assert bool(check(reader, reader))


@st.composite
def evolved_pairs(draw):
    """A schema and a small evolution of it (fields added or dropped, defaults toggled, types
    widened or changed, symbols added, unions grown), so that both verdicts are common."""
    original = draw(avro_schemas())

    def mutate(schema):
        if isinstance(schema, str):
            if draw(st.integers(0, 3)) == 0:
                return draw(st.sampled_from(PRIMS))
            if draw(st.integers(0, 4)) == 0:
                return ["null", schema] if schema != "null" else schema
            return schema
        if isinstance(schema, list):
            extra = draw(st.sampled_from(PRIMS))
            return schema + [extra] if extra not in schema and draw(st.booleans()) else schema[:]
        schema = dict(schema)
        kind = schema["type"]
        if kind == "record":
            fields = []
            for fl in schema["fields"]:
                if draw(st.integers(0, 5)) == 0:
                    continue  # drop the field
                fl = dict(fl, type=mutate(fl["type"]))
                fl.pop("default", None)
                if draw(st.booleans()):
                    fl["default"] = _default_for(fl["type"])
                fields.append(fl)
            if draw(st.integers(0, 3)) == 0:
                new = f("z", draw(st.sampled_from(PRIMS)))
                if draw(st.booleans()):
                    new["default"] = _default_for(new["type"])
                fields.append(new)
            schema["fields"] = fields
        elif kind == "enum":
            symbols = list(schema["symbols"])
            if draw(st.booleans()) and "E" not in symbols:
                symbols.append("E")
            schema["symbols"] = symbols
        elif kind == "fixed" and draw(st.integers(0, 3)) == 0:
            schema["size"] = schema["size"] * 2
        elif kind == "array":
            schema["items"] = mutate(schema["items"])
        elif kind == "map":
            schema["values"] = mutate(schema["values"])
        return schema

    evolved = mutate(original)
    return (original, evolved) if draw(st.booleans()) else (evolved, original)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(evolved_pairs())
def test_evolution_verdicts_match_avro_reference_port(pair):
    avro_compat = pytest.importorskip("avro.compatibility")
    avro_schema = pytest.importorskip("avro.schema")
    reader, writer = pair
    ours = check(reader, writer)
    r = avro_schema.parse(json.dumps(reader))
    w = avro_schema.parse(json.dumps(writer))
    theirs = avro_compat.ReaderWriterCompatibilityChecker().get_compatibility(r, w).compatibility
    assert bool(ours) is (theirs is avro_compat.SchemaCompatibilityType.compatible), ours.reasons


# --------------------------------------------------------------------------------------------
# one schema model: the rules run on the decoder's parsed schemas; rules are found per format

RICH = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "doc": "an order",
    "aliases": ["Old", "legacy.Order"],
    "x-owner": "team-a",
    "fields": [
        {"name": "id", "type": {"type": "long", "logicalType": "timestamp-millis"}, "doc": "when"},
        {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "DONE"], "default": "NEW"}},
        {"name": "prev", "type": ["null", "State"], "default": None, "aliases": ["previous"]},
        {"name": "err", "type": {"type": "error", "name": "Failure", "namespace": "", "fields": []}},
        {"name": "tags", "type": {"type": "map", "values": {"type": "string", "x": 1}}, "order": "ignore"},
    ],
}


def test_canonical_form_is_stable():
    # registries store this fingerprint (LocalRegistry's SQLite file): it must not drift
    assert compat.canonical_form(RICH) == (
        '{"aliases":["legacy.Order","shop.Old"],"doc":"an order","fields":[{"doc":"when","name":"id","type":'
        '{"logicalType":"timestamp-millis","type":"long"}},{"name":"state","type":{"default":"NEW","name":'
        '"shop.State","symbols":["NEW","DONE"],"type":"enum"}},{"aliases":["previous"],"default":null,"name":'
        '"prev","type":["null","shop.State"]},{"name":"err","type":{"fields":[],"name":"Failure","type":"record"}},'
        '{"name":"tags","order":"ignore","type":{"type":"map","values":{"type":"string","x":1}}}],"name":'
        '"shop.Order","type":"record","x-owner":"team-a"}'
    )
    assert compat.fingerprint(RICH) == "3040277e256e74c197c14e00ab1240829b7c30ed3f30c42f1a8cd7c8a6da5cbb"


def test_rules_run_on_the_decoder_schema_model():
    from pulsar_codec.formats.avro import schema as avro_schema

    reader = avro_schema.parse(rec("R", f("a", "long"), f("b", "string", default="")))
    writer = avro_schema.parse(rec("R", f("a", "int")))
    assert check(reader, writer)
    result = check(writer, reader)
    assert not result and [i.kind for i in result.incompatibilities] == ["TYPE_MISMATCH"]
    parsed = compat.parse(reader)
    assert parsed.root is reader and parsed.name == "R"
    # the canonical form of a parsed node is the one of its text (the model keeps these attributes)
    assert parsed.canonical == compat.canonical_form(rec("R", f("a", "long"), f("b", "string", default="")))


def test_recursive_schema_is_one_cyclic_model():
    from pulsar_codec.formats.avro import schema as avro_schema

    root = compat.parse(LINKED).root
    assert isinstance(root, avro_schema.Record)
    assert root.fields[1].type.branches[1] is root
    with pytest.raises(SchemaError, match="recursive"):
        avro_schema.parse(LINKED)  # the decoder still refuses it


def test_shared_parser_errors_reach_the_checks():
    # the decoder's parser validates names as Avro Java does
    with pytest.raises(SchemaError, match="invalid Avro name"):
        check(rec("my-record", f("a", "int")), "int")
    deep = "int"
    for _ in range(3000):
        deep = {"type": "map", "values": deep}
    with pytest.raises(SchemaError, match="nested too deeply"):
        check("int", deep)


def test_rules_are_found_per_schema_type():
    from pulsar_codec.formats.avro import compat as avro_rules
    from pulsar_codec.formats.json import compat as json_rules
    from pulsar_codec.formats.protobuf import compat as protobuf_rules

    assert compat.rules_for("AVRO") is avro_rules
    assert compat.rules_for("avro") is avro_rules
    assert compat.rules_for("JSON") is json_rules
    assert compat.rules_for("PROTOBUF") is protobuf_rules
    for without_rules in ("THRIFT", "KEY_VALUE", "../avro", ""):
        assert compat.rules_for(without_rules) is None
    with pytest.raises(SchemaError, match="no compatibility rules for THRIFT"):
        check("{}", "{}", schema_type="THRIFT")


def test_strategy_over_a_format_without_rules_checks_only_the_level():
    old, new = 'syntax = "proto3"; message A {}', 'syntax = "proto3"; message B {}'
    for strategy in Strategy:
        expected = not strategy.never_compatible
        assert bool(check_strategy(new, [old], strategy, schema_type="THRIFT")) is expected
    assert check_strategy("not even JSON", [], "BACKWARD", schema_type="THRIFT")


def test_strategy_is_a_str_enum():
    assert str(Strategy.FULL_TRANSITIVE) == "FULL_TRANSITIVE" and f"{Strategy.NONE}" == "NONE"
    assert json.dumps({"compatibility": Strategy.BACKWARD}) == '{"compatibility": "BACKWARD"}'


def test_format_rules_load_on_first_use():
    import subprocess
    import sys

    code = (
        "import sys, pulsar_codec.registry, pulsar_codec.compat as c\n"
        "assert 'pulsar_codec.formats.avro' not in sys.modules\n"
        "assert c.check('long', 'int') and 'pulsar_codec.formats.avro.compat' in sys.modules\n"
        "assert c.parse is sys.modules['pulsar_codec.formats.avro.compat'].parse\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
