"""Protobuf compatibility: Confluent's rules (formats/protobuf/compat) through pulsar_codec.compat and the
embedded registry, and Pulsar's PROTOBUF_NATIVE check (PIP-44 producer and consumer)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings

pytest.importorskip("grpc_tools")
from google.protobuf import message_factory  # noqa: E402

from pulsar_codec import compat  # noqa: E402
from pulsar_codec.errors import IncompatibleSchemaError, SchemaError  # noqa: E402
from pulsar_codec.formats.protobuf import compat as pc_compat  # noqa: E402
from pulsar_codec.formats.protobuf import parse, pulsar_native_data  # noqa: E402
from pulsar_codec.registry import LocalRegistry  # noqa: E402
from test_protobuf_schema import proto_files  # noqa: E402


def proto3(body: str, package: str = "shop", head: str = "") -> str:
    return f'syntax = "proto3";\npackage {package};\n{head}{body}\n'


def proto2(body: str) -> str:
    return f'syntax = "proto2";\npackage shop;\n{body}\n'


def rules(writer: str, reader: str, **refs: str) -> list[str]:
    """``RULE location`` of every difference from writer to reader."""
    references = {k.replace("__", "/").replace("_proto", ".proto"): v for k, v in refs.items()} or None
    found = pc_compat.differences(parse(writer, references), parse(reader, references))
    return [f"{d.rule} {d.location}" for d in found]


ORDER = proto3("message Order { int64 id = 1; string note = 2; }")

# (writer, reader, compatible, every difference as "RULE location")
CASES = [
    (ORDER, ORDER, True, []),
    (ORDER, proto3("message Order { int64 id = 1; string note = 2; bool paid = 3; }"), True, ["FIELD_ADDED #/Order/3"]),
    (ORDER, proto3("message Order { int64 id = 1; }"), True, ["FIELD_REMOVED #/Order/2"]),
    (ORDER, proto3("message Order { int64 ident = 1; string note = 2; }"), True, ["FIELD_NAME_CHANGED #/Order/1"]),
    # scalar wire groups
    (ORDER, proto3("message Order { int32 id = 1; string note = 2; }"), True, []),
    (ORDER, proto3("message Order { uint64 id = 1; bytes note = 2; }"), True, []),
    (
        ORDER,
        proto3("message Order { sint64 id = 1; string note = 2; }"),
        False,
        ["FIELD_SCALAR_KIND_CHANGED #/Order/1"],
    ),
    (
        ORDER,
        proto3("message Order { fixed64 id = 1; string note = 2; }"),
        False,
        ["FIELD_SCALAR_KIND_CHANGED #/Order/1"],
    ),
    (
        proto3("message A { fixed32 x = 1; float f = 2; }"),
        proto3("message A { sfixed32 x = 1; double f = 2; }"),
        False,
        ["FIELD_SCALAR_KIND_CHANGED #/A/2"],
    ),
    (
        proto3("message A { int32 x = 1; }"),
        proto3("message A { E x = 1; } enum E { Z = 0; }"),
        True,
        ["ENUM_ADDED #/E"],
    ),
    # kinds and named types
    (
        ORDER,
        proto3("message Order { Money id = 1; string note = 2; } message Money { int64 units = 1; }"),
        False,
        ["FIELD_KIND_CHANGED #/Order/1", "MESSAGE_ADDED #/Money"],
    ),
    (
        proto3("message A { map<string, int32> m = 1; }"),
        proto3("message A { repeated E m = 1; message E { string key = 1; int32 value = 2; } }"),
        False,
        ["FIELD_KIND_CHANGED #/A/1", "MESSAGE_ADDED #/A/E"],
    ),
    (
        proto3("message A { map<string, int32> m = 1; }"),
        proto3("message A { map<string, string> m = 1; }"),
        False,
        ["FIELD_SCALAR_KIND_CHANGED #/A/1"],
    ),
    (
        proto3("message A { B b = 1; } message B {} message C {}"),
        proto3("message A { C b = 1; } message B {} message C {}"),
        False,
        ["FIELD_NAMED_TYPE_CHANGED #/A/1"],
    ),
    # messages, enums, package
    (proto3("message A {} message B {}"), proto3("message A {}"), False, ["MESSAGE_REMOVED #/B"]),
    (
        proto3("message A {} message B {}"),
        proto3("message B {} message A {}"),
        True,
        ["MESSAGE_MOVED #/A", "MESSAGE_MOVED #/B"],
    ),
    (ORDER, proto3("message Order { int64 id = 1; string note = 2; }", package="other"), False, ["PACKAGE_CHANGED #/"]),
    (
        proto3("enum S { A = 0; B = 1; C = 2; } message M { S s = 1; }"),
        proto3("enum S { A = 0; BEE = 1; D = 3; } message M { S s = 1; }"),
        True,
        ["ENUM_CONST_CHANGED #/S/1", "ENUM_CONST_REMOVED #/S/2", "ENUM_CONST_ADDED #/S/3"],
    ),
    # required fields and labels (proto2)
    (
        proto2("message A { optional int32 x = 1; }"),
        proto2("message A { optional int32 x = 1; required string y = 2; }"),
        False,
        ["REQUIRED_FIELD_ADDED #/A/2"],
    ),
    (
        proto2("message A { optional int32 x = 1; required string y = 2; }"),
        proto2("message A { optional int32 x = 1; }"),
        False,
        ["REQUIRED_FIELD_REMOVED #/A/2"],
    ),
    (
        proto2("message A { optional int32 x = 1; optional string s = 2; }"),
        proto2("message A { repeated int32 x = 1; repeated string s = 2; }"),
        False,
        ["FIELD_NUMERIC_LABEL_CHANGED #/A/1", "FIELD_STRING_OR_BYTES_LABEL_CHANGED #/A/2"],
    ),
    # proto3: implicit presence has no label in the text, optional is a plain field (not a oneof)
    (proto3("message A { int32 x = 1; }"), proto3("message A { repeated int32 x = 1; }"), True, []),
    (proto3("message A { int32 x = 1; }"), proto3("message A { optional int32 x = 1; }"), True, []),
    # oneofs
    (
        proto3("message A { oneof o { int32 x = 1; string y = 2; } }"),
        proto3("message A { oneof o { int32 x = 1; } }"),
        False,
        ["ONEOF_FIELD_REMOVED #/A/o/2"],
    ),
    (
        proto3("message A { int32 k = 9; oneof o { int32 x = 1; string y = 2; } }"),
        proto3("message A { int32 k = 9; }"),
        True,
        ["ONEOF_REMOVED #/A/o"],
    ),
    (
        proto3("message A { oneof o { int32 x = 1; } }"),
        proto3("message A { oneof o { int32 x = 1; string y = 2; } }"),
        True,
        ["ONEOF_FIELD_ADDED #/A/o/2"],
    ),
    (
        proto3("message A { oneof o { int32 x = 1; string y = 2; } }"),
        proto3("message A { int32 x = 1; oneof o { string y = 2; } }"),
        True,
        ["ONEOF_FIELD_MOVED_TO_TOP_LEVEL #/A/1"],
    ),
    (
        proto3("message A { int32 x = 1; string y = 2; }"),
        proto3("message A { oneof o { int32 x = 1; string y = 2; } }"),
        False,
        ["MULTIPLE_FIELDS_MOVED_TO_ONEOF #/A/o", "ONEOF_ADDED #/A/o"],
    ),
    (
        proto3("message A { int32 x = 1; oneof o { string y = 2; } }"),
        proto3("message A { oneof o { int32 x = 1; string y = 2; } }"),
        False,
        ["FIELD_MOVED_TO_EXISTING_ONEOF #/A/o"],
    ),
    (
        proto3("message A { oneof o { int32 x = 1; } }"),
        proto3("message A { oneof p { int64 x = 1; } }"),
        True,
        ["ONEOF_REMOVED #/A/o", "ONEOF_ADDED #/A/p"],
    ),
    # nested messages are compared where they are defined; a recursive message terminates
    (
        proto3("message A { message B { int32 v = 1; A back = 2; } B b = 1; }"),
        proto3("message A { message B { string v = 1; A back = 2; } B b = 1; }"),
        False,
        ["FIELD_SCALAR_KIND_CHANGED #/A/B/1"],
    ),
]


@pytest.mark.parametrize(("writer", "reader", "compatible", "expected"), CASES)
def test_confluent_differences(writer, reader, compatible, expected):
    assert rules(writer, reader) == expected
    result = compat.check(reader, writer, "PROTOBUF")
    assert result.compatible is compatible
    bad = {e.split()[0] for e in expected} - pc_compat.COMPATIBLE_CHANGES
    assert {i.kind for i in result.incompatibilities} == bad


# Confluent's protobuf-provider reference cases (diff-schema-examples.json) on oneof membership, restated
# with smaller messages: (case description, writer, reader, compatible, sorted "RULE location" list)
ONEOF_REFERENCE = [
    (
        "incompatible field type change when enclosing oneof is renamed",
        proto3("message M { oneof a { float f = 1; int32 g = 2; } }"),
        proto3("message M { oneof b { float f = 1; string g = 2; } }"),
        False,
        ["FIELD_SCALAR_KIND_CHANGED #/M/b/2", "ONEOF_ADDED #/M/b", "ONEOF_REMOVED #/M/a"],
    ),
    (
        "incompatible field type change when field is moved out of a removed oneof",
        proto3("message M { oneof a { float f = 1; int32 g = 2; } }"),
        proto3("message M { float f = 1; sint64 g = 2; }"),
        False,
        [
            "FIELD_SCALAR_KIND_CHANGED #/M/2",
            "ONEOF_FIELD_MOVED_TO_TOP_LEVEL #/M/1",
            "ONEOF_FIELD_MOVED_TO_TOP_LEVEL #/M/2",
            "ONEOF_REMOVED #/M/a",
        ],
    ),
    (
        "incompatible field move between two differently-named oneofs",
        proto3("message M { oneof a { int32 x = 1; int32 y = 2; } oneof b { int32 z = 3; } }"),
        proto3("message M { oneof a { int32 x = 1; } oneof b { int32 z = 3; int32 y = 2; } }"),
        False,
        ["FIELD_MOVED_TO_EXISTING_ONEOF #/M/b"],
    ),
    (
        "incompatible move of a field from a deleted oneof into an existing oneof",
        proto3("message M { oneof a { int32 x = 1; } oneof b { int32 z = 3; } }"),
        proto3("message M { oneof b { int32 z = 3; int32 x = 1; } }"),
        False,
        ["FIELD_MOVED_TO_EXISTING_ONEOF #/M/b", "ONEOF_REMOVED #/M/a"],
    ),
    (
        "incompatible merge of two oneofs into a new oneof",
        proto3("message M { oneof a { int32 x = 1; } oneof b { int32 y = 2; } }"),
        proto3("message M { oneof c { int32 x = 1; int32 y = 2; } }"),
        False,
        ["FIELD_MOVED_TO_EXISTING_ONEOF #/M/c", "ONEOF_ADDED #/M/c", "ONEOF_REMOVED #/M/a", "ONEOF_REMOVED #/M/b"],
    ),
    (
        "compatible move of a single field into a new singleton oneof from a surviving oneof",
        proto3("message M { oneof a { int32 x = 1; int32 y = 2; } }"),
        proto3("message M { oneof a { int32 y = 2; } oneof b { int32 x = 1; } }"),
        True,
        ["ONEOF_ADDED #/M/b"],
    ),
    (
        "incompatible drop of a oneof member while renaming the oneof",
        proto3("message M { oneof g { int32 x = 1; int32 y = 2; } }"),
        proto3("message M { oneof h { int32 x = 1; } }"),
        False,
        ["ONEOF_ADDED #/M/h", "ONEOF_FIELD_REMOVED #/M/g/2", "ONEOF_REMOVED #/M/g"],
    ),
    (
        "incompatible type change when field moved out of a oneof to top level",
        proto3("message M { oneof o { int32 x = 1; int32 y = 2; } }"),
        proto3("message M { oneof o { int32 x = 1; } string y = 2; }"),
        False,
        ["FIELD_SCALAR_KIND_CHANGED #/M/2", "ONEOF_FIELD_MOVED_TO_TOP_LEVEL #/M/2"],
    ),
]


@pytest.mark.parametrize(
    ("case", "writer", "reader", "compatible", "expected"), ONEOF_REFERENCE, ids=[c[0] for c in ONEOF_REFERENCE]
)
def test_confluent_oneof_reference_cases(case, writer, reader, compatible, expected):
    assert sorted(rules(writer, reader)) == expected
    assert bool(compat.check_strategy(reader, [writer], "BACKWARD", schema_type="PROTOBUF")) is compatible
    # the same pair seen from the other side is a FORWARD check of the writer as the new schema
    assert bool(compat.check_strategy(writer, [reader], "FORWARD", schema_type="PROTOBUF")) is compatible


# (writer, reader, the rule, what its reason must say about the two sides)
REASON_DETAILS = [
    (
        ORDER,
        proto3("message Order { sint64 id = 1; string note = 2; }"),
        "FIELD_SCALAR_KIND_CHANGED",
        "(writer int64, reader sint64)",
    ),
    (
        ORDER,
        proto3("message Order { Money id = 1; string note = 2; } message Money {}"),
        "FIELD_KIND_CHANGED",
        "(writer int64, reader message shop.Money)",
    ),
    (
        proto3("message A { map<string, int32> m = 1; }"),
        proto3("message A { map<string, bytes> m = 1; }"),
        "FIELD_SCALAR_KIND_CHANGED",
        "(map value: writer int32, reader bytes)",
    ),
    (
        proto3("message A { B b = 1; } message B {} message C {}"),
        proto3("message A { C b = 1; } message B {} message C {}"),
        "FIELD_NAMED_TYPE_CHANGED",
        "(writer message shop.B, reader message shop.C)",
    ),
    (
        proto2("message A { optional int32 x = 1; }"),
        proto2("message A { repeated int32 x = 1; }"),
        "FIELD_NUMERIC_LABEL_CHANGED",
        "(writer optional, reader repeated)",
    ),
    (
        ORDER,
        proto3("message Order { int64 id = 1; string note = 2; }", package="other"),
        "PACKAGE_CHANGED",
        "(writer package shop, reader package other)",
    ),
    (
        ORDER,
        'syntax = "proto3";\nmessage Order { int64 id = 1; string note = 2; }\n',
        "PACKAGE_CHANGED",
        "(writer package shop, reader no package)",
    ),
]


@pytest.mark.parametrize(("writer", "reader", "rule", "detail"), REASON_DETAILS, ids=[c[2] for c in REASON_DETAILS])
def test_reasons_name_both_sides(writer, reader, rule, detail):
    result = compat.check(reader, writer, "PROTOBUF")
    (reason,) = [r for r in result.reasons if r.startswith(rule)]
    assert detail in reason


def test_reason_names_an_imported_message_that_changed():
    result = compat.check(
        parse(PRICE, {"common/money.proto": MONEY_V2}), parse(PRICE, {"common/money.proto": MONEY_V1}), "PROTOBUF"
    )
    assert [i.kind for i in result.incompatibilities] == ["FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"]
    assert "(writer int64, reader string)" in result.reasons[0]
    assert "(message common.Money, changed incompatibly)" in result.reasons[1]


def test_reasons_name_the_rule_and_the_field():
    result = compat.check(proto3("message Order { sint64 id = 1; }"), ORDER, "PROTOBUF")
    (reason,) = result.reasons
    assert reason.startswith("FIELD_SCALAR_KIND_CHANGED at #/Order/1 (Order.id(1)): ")
    assert "sint32/sint64" in reason


MONEY_V1 = proto3("message Money { int64 units = 1; }", package="common")
MONEY_V2 = proto3("message Money { string units = 1; }", package="common")
PRICE = proto3("message Price { common.Money amount = 1; }", head='import "common/money.proto";\n')


def test_imported_message_is_compared_through_the_field():
    found = pc_compat.differences(
        parse(PRICE, {"common/money.proto": MONEY_V1}), parse(PRICE, {"common/money.proto": MONEY_V2})
    )
    assert [(d.rule, d.location) for d in found] == [
        ("FIELD_SCALAR_KIND_CHANGED", "#/Money/1"),
        ("FIELD_NAMED_TYPE_CHANGED", "#/Price/1"),
    ]
    same = pc_compat.differences(
        parse(PRICE, {"common/money.proto": MONEY_V1}), parse(PRICE, {"common/money.proto": MONEY_V1})
    )
    assert same == []


def test_well_known_types_and_descriptor_forms_compare_equal():
    text = proto3(
        "message E { google.protobuf.Timestamp at = 1; map<string, int64> m = 2; optional string s = 3; }",
        head='import "google/protobuf/timestamp.proto";\n',
    )
    model = parse(text, message="shop.E")
    cls = message_factory.GetMessageClass(model.descriptor())
    assert pc_compat.differences(text, cls) == []
    assert pc_compat.differences(pulsar_native_data(model), text) == []
    assert (
        pc_compat.canonical_form(text)
        == pc_compat.canonical_form(cls)
        == pc_compat.canonical_form(pulsar_native_data(model))
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(proto_files())
def test_a_generated_schema_has_no_difference_with_itself(text):
    model = parse(text)
    assert pc_compat.differences(model, model) == []
    assert pc_compat.differences(text, pulsar_native_data(model)) == []  # printed/descriptor forms alike


def test_canonical_form_keeps_what_matters():
    spaced = "syntax='proto3';  package shop ;\n// note\nmessage Order {int64 id=1 ;string note=2;}"
    assert compat.canonical_form(spaced, "PROTOBUF") == compat.canonical_form(ORDER, "PROTOBUF")
    assert compat.fingerprint(spaced, "PROTOBUF") == compat.fingerprint(ORDER, "PROTOBUF")
    renamed = ORDER.replace("note", "comment")
    assert compat.canonical_form(renamed, "PROTOBUF") != compat.canonical_form(ORDER, "PROTOBUF")
    v1 = pc_compat.canonical_form(parse(PRICE, {"common/money.proto": MONEY_V1}))
    v2 = pc_compat.canonical_form(parse(PRICE, {"common/money.proto": MONEY_V2}))
    assert v1 != v2 and "common/money.proto" in v1  # the imported files are part of the identity


# -- strategies and the embedded registry --------------------------------------------------------

WIDER = proto3("message Order { int64 id = 1; string note = 2; } message Refund { int64 id = 1; }")


@pytest.mark.parametrize(
    ("strategy", "compatible"),
    [("BACKWARD", True), ("FORWARD", False), ("FULL", False), ("NONE", True), ("BACKWARD_TRANSITIVE", True)],
)
def test_strategies(strategy, compatible):
    # WIDER adds a message: a reader with it reads ORDER data (BACKWARD), ORDER as reader lacks it
    result = compat.check_strategy(WIDER, [ORDER], strategy, schema_type="PROTOBUF")
    assert result.compatible is compatible
    if not compatible:
        assert [i.kind for i in result.incompatibilities] == ["MESSAGE_REMOVED"]


def test_registry_applies_the_rules():
    with LocalRegistry(":memory:") as reg:
        reg.register("orders-value", ORDER, "PROTOBUF")
        assert reg.register("orders-value", WIDER, "PROTOBUF") == 2
        with pytest.raises(IncompatibleSchemaError, match="FIELD_SCALAR_KIND_CHANGED at #/Order/1") as err:
            reg.register("orders-value", WIDER.replace("int64 id = 1; string", "sint64 id = 1; string"), "PROTOBUF")
        assert any("FIELD_SCALAR_KIND_CHANGED" in r for r in err.value.reasons)
        reg.set_compatibility("FULL", "orders-value")
        with pytest.raises(IncompatibleSchemaError, match="MESSAGE_REMOVED"):
            reg.register("orders-value", ORDER.replace("string note = 2;", ""), "PROTOBUF")


def test_unparsable_schema_is_a_schema_error():
    with pytest.raises(SchemaError, match="protoc cannot compile"):
        compat.check("message {", ORDER, "PROTOBUF")


# -- Pulsar PROTOBUF_NATIVE (PIP-44) ---------------------------------------------------------------

NATIVE = proto3("message Order { int64 id = 1; } message Refund { int64 id = 1; }")


def native(text: str, message: str) -> tuple[str, bytes]:
    """The (type, data) pulsar-client's ProtobufNativeSchema registers for the generated class."""
    schema_module = pytest.importorskip("pulsar.schema")
    cls = message_factory.GetMessageClass(parse(text).descriptor(message))
    return ("PROTOBUF_NATIVE", schema_module.ProtobufNativeSchema(cls).schema_info().schema().encode())


def test_pulsar_native_checks_only_the_root_message():
    order = native(NATIVE, "shop.Order")
    # any change inside the message passes: Pulsar does not compare fields of PROTOBUF_NATIVE schemas
    changed = native(NATIVE.replace("int64 id = 1; }", "string id = 1; bool x = 2; }", 1), "shop.Order")
    refund = native(NATIVE, "shop.Refund")
    for strategy in ("BACKWARD", "FORWARD", "FULL", "BACKWARD_TRANSITIVE", "FULL_TRANSITIVE"):
        assert compat.check_producer(changed, [order], strategy)
        result = compat.check_producer(refund, [order], strategy)
        assert [i.kind for i in result.incompatibilities] == ["ROOT_MESSAGE_CHANGED"]
        assert "shop.Order -> shop.Refund" in result.reasons[0]
    assert compat.check_producer(refund, [order], "ALWAYS_COMPATIBLE")
    assert not compat.check_producer(refund, [order], "ALWAYS_INCOMPATIBLE")
    assert compat.check_producer(order, [order], "ALWAYS_INCOMPATIBLE")  # already registered


def test_pulsar_native_consumer():
    order, refund = native(NATIVE, "shop.Order"), native(NATIVE, "shop.Refund")
    assert compat.check_consumer(order, [order], "BACKWARD")
    assert [i.kind for i in compat.check_consumer(refund, [order], "FORWARD").incompatibilities] == [
        "ROOT_MESSAGE_CHANGED"
    ]
    assert [i.kind for i in compat.check_consumer(order, [], "BACKWARD").incompatibilities] == ["NO_SCHEMA"]
    # transitive: every version is checked
    result = compat.check_consumer(order, [refund, order], "FULL_TRANSITIVE")
    assert [i.kind for i in result.incompatibilities] == ["ROOT_MESSAGE_CHANGED"]


def test_pulsar_native_bad_data_and_other_types():
    order = native(NATIVE, "shop.Order")
    broken = ("PROTOBUF_NATIVE", json.dumps({"fileDescriptorSet": "", "rootMessageTypeName": "x"}).encode())
    result = compat.check_producer(broken, [order], "BACKWARD")
    assert [i.kind for i in result.incompatibilities] == ["INVALID_SCHEMA"]
    assert "lacks fileDescriptorSet, rootFileDescriptorName" in result.reasons[0]
    mixed = compat.check_producer(("AVRO", b'"string"'), [order], "BACKWARD")
    assert [i.kind for i in mixed.incompatibilities] == ["SCHEMA_TYPE_MISMATCH"]
    assert pc_compat.check_pulsar_native(parse(NATIVE, message="Order"), order[1])
