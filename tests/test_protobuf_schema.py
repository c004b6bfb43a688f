"""Protobuf schemas (formats/protobuf): .proto text through protoc, references, Pulsar PROTOBUF_NATIVE
data, descriptor sets, Confluent message indexes, the cache key and the .proto printer."""

from __future__ import annotations

import base64
import json
import pickle
import string
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("grpc_tools")
from google.protobuf import descriptor_pb2, message_factory  # noqa: E402

from pulsar_codec.errors import SchemaError  # noqa: E402
from pulsar_codec.formats.protobuf import (  # noqa: E402
    ProtobufSchemaModel,
    dependency_texts,
    parse,
    pulsar_native_data,
    resolve_references,
    schema_key,
    schema_text,
)
from pulsar_codec.formats.protobuf._printer import print_file  # noqa: E402
from pulsar_codec.formats.protobuf._protoc import compile_files  # noqa: E402
from pulsar_codec.registry import LocalRegistry  # noqa: E402

with warnings.catch_warnings():
    try:  # authlib installs an "always" filter for its notices when first imported: do it first
        import authlib.deprecate  # noqa: F401
    except ImportError:
        pass
    warnings.simplefilter("ignore")
    try:
        from confluent_kafka.schema_registry.common import protobuf as ck_protobuf
        from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    except ImportError:  # confluent-kafka without its protobuf dependencies
        ck_protobuf = ProtobufDeserializer = None

ORDER = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";

// comments and layout are not part of the schema
message Order {
  message Note { string text = 1; }
  int64 id = 1;
  map<string, int32> counts = 2;
  message Item {
    string sku = 1;
    message Detail { bytes raw = 1; }
    map<int32, Detail> details = 2;
    Detail main = 3;
  }
  repeated Item items = 3;
  google.protobuf.Timestamp at = 4;
  optional string comment = 5;
  oneof payment { string card = 6; int64 cash = 7; }
  Status status = 8;
  enum Status { UNKNOWN = 0; PAID = 1; }
}
message Refund { int64 order_id = 1; }
"""

ORDER_MESSAGES = ["shop.Order", "shop.Order.Note", "shop.Order.Item", "shop.Order.Item.Detail", "shop.Refund"]


def runtime_class(model: ProtobufSchemaModel, name: str | None = None):
    return message_factory.GetMessageClass(model.descriptor(name))


# -- .proto text ---------------------------------------------------------------------------------


def test_text_compiles_with_well_known_types():
    model = parse(ORDER)
    assert model.message is None and model.text == ORDER
    assert model.file_name == "schema.proto"
    assert [f.name for f in model.files()] == ["google/protobuf/timestamp.proto", "schema.proto"]
    assert model.message_names() == ORDER_MESSAGES  # map entries left out
    assert model.descriptor().full_name == "shop.Order"  # the first message when none is chosen
    assert model.descriptor("Refund").full_name == "shop.Refund"  # relative to the package
    assert model.descriptor(".shop.Order.Item").fields_by_name["sku"].number == 1


def test_message_option_selects_and_checks():
    model = parse(ORDER, message="Order.Item")
    assert model.message == "shop.Order.Item"
    assert model.descriptor().full_name == "shop.Order.Item"
    with pytest.raises(SchemaError, match=r"defines no message 'shop.Nope'; its messages: shop.Order, shop.Order.Note"):
        parse(ORDER, message="shop.Nope")
    assert parse(model) is model
    assert parse(model, message="shop.Refund").message == "shop.Refund"


def test_bad_proto_raises_protoc_lines():
    with pytest.raises(SchemaError) as err:
        parse('syntax = "proto3";\nmessage A {\n  strin name = 1;\n}\n')
    assert 'schema.proto:3:3: "strin" is not defined.' in str(err.value)
    with pytest.raises(SchemaError, match=r'schema.proto:1:\d+: Expected "{"'):
        parse("message A [")
    with pytest.raises(SchemaError, match=r"Import \"other/thing.proto\" was not found"):
        parse('syntax = "proto3";\nimport "other/thing.proto";\nmessage A {}\n')


def test_parallel_compilations_keep_their_own_errors():
    texts = [ORDER.replace("Refund", f"Refund{i}") for i in range(8)] + [
        'syntax = "proto3";\nmessage B { nope x = 1; }'
    ]

    def attempt(text: str) -> str:
        try:
            return parse(text).message_names()[-1]
        except SchemaError as exc:
            return str(exc).splitlines()[-1]

    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(attempt, texts))
    assert found == [f"shop.Refund{i}" for i in range(8)] + ['schema.proto:2:13: "nope" is not defined.']


def test_file_without_messages():
    model = parse('syntax = "proto3";\nenum Only { ZERO = 0; }\n')
    assert model.message_names() == []
    with pytest.raises(SchemaError, match="defines no message"):
        model.descriptor()


def test_google_type_and_confluent_imports_are_bundled():
    pytest.importorskip("google.type.date_pb2")
    text = 'syntax = "proto3";\nimport "google/type/date.proto";\nmessage A { google.type.Date d = 1; }\n'
    model = parse(text)
    assert "google/type/date.proto" in [f.name for f in model.files()]
    assert model.descriptor().fields_by_name["d"].message_type.full_name == "google.type.Date"


# -- Confluent message indexes -------------------------------------------------------------------


def test_message_indexes_count_map_entries_like_confluent_kafka():
    model = parse(ORDER)
    assert model.indexes_for("shop.Order") == [0]
    assert model.indexes_for("shop.Order.Note") == [0, 0]
    assert model.indexes_for("shop.Order.Item") == [0, 2]  # [0, 1] is the CountsEntry of the map
    assert model.indexes_for("shop.Order.Item.Detail") == [0, 2, 0]
    assert model.indexes_for("shop.Refund") == [1]
    assert model.message_for_indexes([]) == model.message_for_indexes([0]) == "shop.Order"
    assert model.message_for_indexes([0, 2, 0]) == "shop.Order.Item.Detail"
    assert model.message_for_indexes([0, 1]) == "shop.Order.CountsEntry"  # what a writer may name


@pytest.mark.skipif(ck_protobuf is None, reason="confluent-kafka's protobuf serdes are not importable")
def test_message_indexes_match_confluent_kafka():
    model = parse(ORDER)
    reader = ProtobufDeserializer.__new__(ProtobufDeserializer)  # only its index walk is used
    for name in model.message_names():
        desc = model.descriptor(name)
        path = ck_protobuf._create_index_array(desc)
        assert model.indexes_for(name) == path, name
        found, _ = reader._get_message_desc_proto("", model.root_file(), path)
        assert model.message_for_indexes(path) == f"shop.{found}"


@pytest.mark.parametrize(
    ("path", "match"),
    [
        ([2], r"index 2 at depth 0 is out of range \(2 top-level messages\)"),
        ([0, 3], r"index 3 at depth 1 is out of range \(3 messages nested in shop.Order\)"),
        ([-1], r"index -1 at depth 0"),
        ([1, 0], r"index 0 at depth 1 is out of range \(0 messages nested in shop.Refund\)"),
    ],
)
def test_bad_message_index_path(path, match):
    with pytest.raises(SchemaError, match=match):
        parse(ORDER).message_for_indexes(path)


def test_a_long_bad_message_index_path_is_shown_up_to_its_bad_index():
    """A garbage prefix may declare 100k indexes: the message names the path as far as it went."""
    with pytest.raises(SchemaError) as caught:
        parse(ORDER).message_for_indexes([1] + [0] * 100_000)
    assert "path [1, 0, ...] names no message" in str(caught.value) and len(str(caught.value)) < 300
    with pytest.raises(SchemaError, match=r"path \[0, 3\] names no message"):
        parse(ORDER).message_for_indexes([0, 3])


# -- references ----------------------------------------------------------------------------------

MONEY = 'syntax = "proto3";\npackage common;\nmessage Money { int64 units = 1; string currency = 2; }\n'
ADDRESS = (
    'syntax = "proto3";\npackage common;\nimport "common/money.proto";\n'
    "message Address { string city = 1; common.Money fee = 2; }\n"
)
INVOICE = (
    'syntax = "proto3";\npackage billing;\nimport "common/address.proto";\nimport "common/money.proto";\n'
    "message Invoice { common.Address to = 1; common.Money total = 2; }\n"
)


@pytest.mark.parametrize(
    "references",
    [
        {"common/address.proto": ADDRESS, "common/money.proto": MONEY},
        [("common/money.proto", MONEY), ("common/address.proto", ADDRESS)],
        [
            {"name": "common/address.proto", "subject": "address", "version": 1, "schema": ADDRESS},
            {"name": "common/money.proto", "schema": MONEY.encode()},
        ],
        # a reference carrying its own references; and a file given as a descriptor
        [{"name": "common/address.proto", "schema": ADDRESS, "references": [("common/money.proto", MONEY)]}],
    ],
    ids=["mapping", "pairs", "dicts", "nested"],
)
def test_references_forms(references):
    model = parse(INVOICE, references)
    assert model.message_names() == ["billing.Invoice"]
    assert sorted(f.name for f in model.files()) == ["common/address.proto", "common/money.proto", "schema.proto"]
    to = model.descriptor().fields_by_name["to"].message_type
    assert to.fields_by_name["fee"].message_type.full_name == "common.Money"


def test_reference_as_descriptor_has_the_same_key():
    money = next(f for f in parse(MONEY).files() if f.name == "schema.proto")
    as_text = parse(INVOICE, {"common/address.proto": ADDRESS, "common/money.proto": MONEY})
    as_b64 = parse(
        INVOICE,
        {"common/address.proto": ADDRESS, "common/money.proto": base64.b64encode(money.SerializeToString()).decode()},
    )
    as_message = parse(INVOICE, {"common/address.proto": ADDRESS, "common/money.proto": money})
    assert schema_key(as_text) == schema_key(as_b64) == schema_key(as_message)
    other = parse(INVOICE, {"common/address.proto": ADDRESS, "common/money.proto": MONEY.replace("units", "cents")})
    assert schema_key(other) != schema_key(as_text)  # the referenced files are part of the schema


def test_reference_errors():
    SchemaReference = pytest.importorskip("confluent_kafka.schema_registry").SchemaReference
    with pytest.raises(SchemaError, match=r"comes without its schema text.*resolve_references"):
        parse(INVOICE, [SchemaReference("common/address.proto", "address", 1)])
    with pytest.raises(SchemaError, match=r"invalid .proto import name '../money.proto'"):
        parse(INVOICE, {"../money.proto": MONEY})
    with pytest.raises(SchemaError, match=r"invalid .proto import name '/abs.proto'"):
        parse(INVOICE, {"/abs.proto": MONEY})
    with pytest.raises(SchemaError, match="needs a name"):
        parse(INVOICE, [{"schema": MONEY}])
    with pytest.raises(SchemaError, match=r'Import "common/money.proto" was not found'):
        parse(INVOICE, {"common/address.proto": ADDRESS})


def test_resolve_references_through_the_embedded_registry():
    with LocalRegistry(":memory:") as reg:
        reg.register("money", MONEY, "PROTOBUF")
        reg.register(
            "money", MONEY.replace("string currency = 2;", "string currency = 2; int32 nanos = 3;"), "PROTOBUF"
        )
        refs = [
            {"name": "common/money.proto", "subject": "money", "version": 1},
            # a reference whose own references are listed with it, as confluent-kafka's Schema carries them
            {"name": "common/address.proto", "schema": ADDRESS, "references": [{"name": "common/money.proto"}]},
        ]
        resolved = resolve_references(reg, refs)
    assert [(r["name"], r["version"]) for r in resolved] == [("common/money.proto", 1), ("common/address.proto", None)]
    assert resolved[0]["schema"] == MONEY
    model = parse(INVOICE, resolved)
    money = model.pool().FindMessageTypeByName("common.Money")
    assert [f.name for f in money.fields] == ["units", "currency"]  # version 1, not the latest


def test_resolve_references_through_the_rest_facade():
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    from pulsar_codec.registry.server import serve

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ck_sr = pytest.importorskip("confluent_kafka.schema_registry")
    with LocalRegistry(":memory:") as reg, serve(reg) as server:
        reg.register("money", MONEY, "PROTOBUF")
        client = ck_sr.SchemaRegistryClient({"url": server.url, "max.retries": 0})
        try:
            refs = [ck_sr.SchemaReference("common/money.proto", "money", -1)]
            resolved = resolve_references(client, refs)
        finally:
            client.close()
    assert resolved[0]["schema"] == MONEY
    assert parse('syntax = "proto3";\nimport "common/money.proto";\nmessage P { common.Money m = 1; }', resolved)


def test_resolve_references_depth_limit():
    chain: dict = {"name": "f40.proto", "schema": MONEY}
    for n in range(39, -1, -1):  # each reference carries the next one as its own reference
        chain = {"name": f"f{n}.proto", "schema": MONEY, "references": [chain]}
    with pytest.raises(SchemaError, match="nested deeper than 32 levels"):
        resolve_references(LocalRegistry(":memory:"), [chain])


# -- Pulsar PROTOBUF_NATIVE ----------------------------------------------------------------------


@pytest.fixture
def order_file(tmp_path):
    """ORDER as the file shop/order.proto, as generated classes are usually compiled."""
    (tmp_path / "shop").mkdir()
    path = tmp_path / "shop" / "order.proto"
    path.write_text(ORDER)
    return path


def native_schema_data(model: ProtobufSchemaModel, name: str) -> str:
    """The schema data pulsar-client's ProtobufNativeSchema sends for the generated class of ``name``."""
    schema_module = pytest.importorskip("pulsar.schema")
    return schema_module.ProtobufNativeSchema(runtime_class(model, name)).schema_info().schema()


def test_pulsar_native_schema_of_pulsar_client(order_file):
    data = native_schema_data(parse(order_file), "shop.Order.Item")
    doc = json.loads(data)
    assert set(doc) == {"fileDescriptorSet", "rootMessageTypeName", "rootFileDescriptorName"}
    for form in (data, data.encode(), doc):
        model = parse(form)
        assert model.message == "shop.Order.Item"
        assert model.file_name == "order.proto" and model.text is None
        assert [f.name for f in model.files()] == ["google/protobuf/timestamp.proto", "order.proto"]
    # the same schema as registry text (another file name, json_name spelled out by protoc): same key
    assert schema_key(model) == schema_key(parse(ORDER, message="shop.Order.Item"))
    assert schema_key(model) != schema_key(parse(ORDER, message="shop.Order"))


def test_pulsar_native_data_round_trip():
    model = parse(ORDER, message="Refund")
    data = pulsar_native_data(model)
    doc = json.loads(data)
    assert list(doc) == ["fileDescriptorSet", "rootMessageTypeName", "rootFileDescriptorName"]  # Java's order
    assert (doc["rootMessageTypeName"], doc["rootFileDescriptorName"]) == ("shop.Refund", "schema.proto")
    assert b" " not in data  # compact, as the Java client writes it
    again = parse(data)
    assert schema_key(again) == schema_key(model)
    assert json.loads(pulsar_native_data(parse(ORDER)))["rootMessageTypeName"] == "shop.Order"


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda d: d.pop("rootMessageTypeName"), "lacks rootMessageTypeName"),
        (lambda d: d.update(fileDescriptorSet="not base64!"), "not valid base64"),
        (lambda d: d.update(fileDescriptorSet=base64.b64encode(b"\x0a\xff").decode()), "not a serialized FileDes"),
        (lambda d: d.update(rootFileDescriptorName="other.proto"), "has no file 'other.proto'"),
        (lambda d: d.update(rootMessageTypeName="shop.Gone"), "root message 'shop.Gone' is not a message of"),
    ],
)
def test_pulsar_native_errors(change, match):
    doc = json.loads(pulsar_native_data(parse(ORDER)))
    change(doc)
    with pytest.raises(SchemaError, match=match):
        parse(json.dumps(doc))


# -- descriptors and files -----------------------------------------------------------------------


def test_file_descriptor_set_with_message():
    invoice = 'syntax = "proto3";\nimport "common/money.proto";\nmessage Invoice { common.Money total = 1; }\n'
    files = compile_files({"common/money.proto": MONEY, "inv.proto": invoice}, ["inv.proto"])
    assert parse(files).file_name == "inv.proto"  # the file no other file imports
    model = parse(files.SerializeToString(), message="common.Money")
    assert (model.file_name, model.message) == ("common/money.proto", "common.Money")
    with pytest.raises(SchemaError, match="no file of the descriptor set defines message 'x.Y'"):
        parse(files, message="x.Y")
    only_root = descriptor_pb2.FileDescriptorSet(file=[f for f in files.file if f.name == "inv.proto"])
    with pytest.raises(SchemaError, match="lacks 'common/money.proto', imported by 'inv.proto'"):
        parse(only_root)
    with pytest.raises(SchemaError, match="not a serialized FileDescriptorSet"):
        parse(b"\x0a\x05\x0a\xff")
    F = descriptor_pb2.FieldDescriptorProto
    dangling = descriptor_pb2.FileDescriptorProto(
        name="x.proto",
        message_type=[
            descriptor_pb2.DescriptorProto(
                name="A", field=[F(name="b", number=1, label=F.LABEL_OPTIONAL, type=F.TYPE_MESSAGE, type_name=".Nope")]
            )
        ],
    )
    with pytest.raises(SchemaError, match=r"invalid descriptor for 'x.proto'.*Nope"):
        parse(descriptor_pb2.FileDescriptorSet(file=[dangling]))


def test_well_known_files_are_filled_in():
    files = compile_files({"schema.proto": ORDER}, ["schema.proto"])
    root_only = descriptor_pb2.FileDescriptorSet(file=[files.file[-1]])
    assert schema_key(parse(root_only)) == schema_key(parse(ORDER))


def test_runtime_descriptors_and_classes():
    cls = runtime_class(parse(ORDER), "shop.Order.Item")
    for source in (cls, cls.DESCRIPTOR):
        model = parse(source)
        assert model.message == "shop.Order.Item"
        assert schema_key(model) == schema_key(parse(ORDER, message="shop.Order.Item"))
    assert parse(cls.DESCRIPTOR.file).message is None


def test_confluent_kafka_base64_descriptor_text():
    cls = runtime_class(parse(ORDER))
    text = base64.b64encode(cls.DESCRIPTOR.file.serialized_pb).decode("ascii")
    if ck_protobuf is not None:
        assert text == ck_protobuf._schema_to_str(cls.DESCRIPTOR.file)  # what its serializer registers
    model = parse(text)
    assert model.text == text and model.message_names() == ORDER_MESSAGES
    assert schema_key(model) == schema_key(parse(ORDER))


def test_path_of_a_proto_file(order_file, tmp_path):
    for source in (order_file, str(order_file)):
        model = parse(source)
        assert model.file_name == "order.proto" and model.message_names() == ORDER_MESSAGES
    (tmp_path / "shop" / "money.proto").write_text(MONEY)
    bill = 'syntax = "proto3";\nimport "money.proto";\nmessage Bill { common.Money total = 1; }\n'
    (tmp_path / "shop" / "bill.proto").write_text(bill)
    model = parse(tmp_path / "shop" / "bill.proto")  # the imports next to the file are found
    assert [f.name for f in model.files()] == ["money.proto", "bill.proto"]
    with pytest.raises(SchemaError, match="cannot read .proto file"):
        parse(str(tmp_path / "missing.proto"))


# -- the model -----------------------------------------------------------------------------------


def test_model_equality_hash_and_pickle():
    a, b = parse(ORDER), parse(ORDER)
    assert a == b and hash(a) == hash(b)
    assert a.pool() is a.pool()  # built once per model
    item = a.with_message("shop.Order.Item")
    assert item != a and item.pool() is a.pool()  # the files are the same: so is what is cached
    again = pickle.loads(pickle.dumps(item))
    assert again == item and schema_key(again) == schema_key(item)
    assert again.descriptor().full_name == "shop.Order.Item"
    with pytest.raises(AttributeError):
        a.message = "x"  # type: ignore[misc]


def test_schema_text_and_dependency_texts_register_descriptor_models():
    model = parse(INVOICE, {"common/address.proto": ADDRESS, "common/money.proto": MONEY})
    assert schema_text(model) == INVOICE
    native = parse(pulsar_native_data(model))
    assert native.text is None
    deps = dependency_texts(native)
    assert [name for name, _ in deps] == ["common/money.proto", "common/address.proto"]
    printed = schema_text(native)
    assert printed.startswith('syntax = "proto3";\npackage billing;\nimport "common/address.proto";')
    assert schema_key(parse(printed, deps, message="billing.Invoice")) == schema_key(native)


def test_registry_identity_ignores_layout_and_form():
    cls = runtime_class(parse(ORDER))
    compact = " ".join(line.split("//")[0].strip() for line in ORDER.splitlines())
    with LocalRegistry(":memory:") as reg:
        first = reg.register("orders-value", ORDER, "PROTOBUF")
        assert reg.register("orders-value", compact, "PROTOBUF") == first
        assert reg.register("other", base64.b64encode(cls.DESCRIPTOR.file.serialized_pb).decode(), "PROTOBUF") == first
        assert reg.register("other2", ORDER.replace("int64 id = 1", "int64 ident = 1"), "PROTOBUF") != first
        with pytest.raises(SchemaError, match="protoc cannot compile"):
            reg.register("bad", "message {", "PROTOBUF")


# -- printing descriptors as .proto ----------------------------------------------------------------

PROTO2 = r"""
syntax = "proto2";
package p2.x;
import "google/protobuf/descriptor.proto";
option java_package = "com.example";
option optimize_for = SPEED;
message M {
  option deprecated = true;
  required int32 a = 1 [default = -5];
  optional string s = 2 [default = "he said \"hi\"\n\t\001 é"];
  optional bytes b = 3 [default = "\000\001\377abc"];
  optional double d = 4 [default = inf];
  optional float f = 5 [default = -inf];
  optional double n = 6 [default = nan];
  optional float g2 = 7 [default = 1.5e10];
  optional E e = 8 [default = TWO];
  optional bool t = 9 [default = true];
  repeated int32 packed_ints = 10 [packed = true];
  optional group Result = 11 { optional string url = 12; repeated group Inner = 13 { optional int32 z = 14; } }
  oneof choice { int32 c1 = 15; group G = 16 { optional int32 gg = 17; } }
  extensions 100 to 199, 300, 1000 to max;
  map<int32, M> children = 18;
  optional uint64 big = 19 [default = 18446744073709551615];
  optional int64 neg = 20 [default = -9223372036854775808, deprecated = true, jstype = JS_STRING];
  enum E { option allow_alias = true; ONE = 1; TWO = 2; DOS = 2 [deprecated = true]; }
  reserved 50 to 60;
  reserved "gone", "old";
  extend M { optional int32 inner_ext = 150; }
}
extend M { optional string ext_s = 101; repeated int32 ext_r = 102; }
extend google.protobuf.FieldOptions { optional string my_opt = 50001; }
service S {
  option deprecated = true;
  rpc A(M) returns (M);
  rpc B(stream M) returns (stream M) { option deprecated = true; option idempotency_level = NO_SIDE_EFFECTS; }
}
"""

PROTO3 = """
syntax = "proto3";
import public "dep.proto";
import "google/protobuf/any.proto";
message Z {
  message Early {}
  map<string, string> m1 = 1;
  message Mid { map<uint32, bytes> mm = 1; }
  map<bool, Mid> m2 = 2;
  optional int32 o = 3;
  oneof x { string xa = 4; Early xb = 5; }
  optional string o2 = 6;
  oneof y { sint64 ya = 7; }
  repeated float fl = 8 [packed = false];
  google.protobuf.Any any = 9;
  Dep dep = 10;
  string weird_name_ = 11 [json_name = "weird"];
  string _lead = 12;
  string a__b = 13;
  enum Open { ZERO = 0; reserved 3 to 5, 9 to max; reserved "GONE"; }
}
"""

EDITIONS = """
edition = "2023";
package ed;
option features.field_presence = IMPLICIT;
message A {
  int32 x = 1;
  int32 y = 2 [features.field_presence = EXPLICIT];
  repeated int32 z = 3 [features.repeated_field_encoding = EXPANDED];
  B delimited = 4 [features.message_encoding = DELIMITED];
  string req = 5 [features.field_presence = LEGACY_REQUIRED];
  message B { int32 q = 1; }
  reserved foo, bar;
  enum Closed { option features.enum_type = CLOSED; A0 = 0; A1 = 1; }
}
"""


def reprinted(text: str, others: dict[str, str] | None = None) -> tuple[descriptor_pb2.FileDescriptorProto, ...]:
    """The root file compiled from ``text``, and compiled again from its printed form."""
    sources = dict(others or {})
    first = compile_files({**sources, "a.proto": text}, ["a.proto"]).file[-1]
    printed = print_file(first)
    second = compile_files({**sources, "a.proto": printed}, ["a.proto"]).file[-1]
    return first, second


@pytest.mark.parametrize(
    ("text", "others"),
    [
        (PROTO2, None),
        (PROTO3, {"dep.proto": 'syntax = "proto3";\nmessage Dep { int32 v = 1; }\n'}),
        (EDITIONS, None),
        (ORDER, None),
    ],
    ids=["proto2", "proto3", "editions", "order"],
)
def test_printed_file_compiles_to_the_same_descriptor(text, others):
    first, second = reprinted(text, others)
    assert first == second


def test_printed_file_keeps_message_indexes():
    first, second = reprinted(ORDER)
    assert [m.name for m in second.message_type[0].nested_type] == ["Note", "CountsEntry", "Item"]
    assert second == first


# hypothesis-generated schemas: messages with scalar, enum, message and map fields, nested types,
# oneofs, groups, defaults, options and reserved ranges, in the three syntaxes

SCALARS = ["double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64",
           "sfixed32", "sfixed64", "bool", "string", "bytes"]  # fmt: skip
NUMERIC = SCALARS[:13]
MAP_KEYS = ["int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64",
            "bool", "string"]  # fmt: skip
TEXT = st.text(alphabet=string.ascii_letters + ' "\\\n\té€', max_size=6)


def _quote(value: str) -> str:
    return (
        '"'
        + "".join("\\" + c if c in '"\\' else "\\n" if c == "\n" else "\\t" if c == "\t" else c for c in value)
        + '"'
    )


@st.composite
def proto_files(draw) -> str:
    syntax = draw(st.sampled_from(["proto2", "proto3", "editions"]))
    counter = iter(range(10_000))
    messages: list[str] = []  # full names, for message-typed fields
    enums: list[tuple[str, str]] = []  # (full name, first value name)

    def names(prefix: str) -> str:
        return f"{prefix}{next(counter)}"

    def enum(depth: int, scope: str) -> str:
        name = names("E")
        values = [f"{name}_V{i}" for i in range(draw(st.integers(1, 4)))]
        numbers = [
            0,
            *draw(st.lists(st.integers(1, 100), min_size=len(values) - 1, max_size=len(values) - 1, unique=True)),
        ]
        body = [f"{v} = {n}{' [deprecated = true]' if draw(st.booleans()) else ''};" for v, n in zip(values, numbers)]
        if draw(st.booleans()):
            body.append(f"reserved {max(numbers) + 1} to {max(numbers) + 5};")
        enums.append((f"{scope}.{name}", values[0]))
        return "  " * depth + f"enum {name} {{ " + " ".join(body) + " }"

    def field(depth: int, number: int, in_oneof: bool) -> str:
        name = names("f")
        kinds = ["scalar", "scalar", "enum", "message", "map"] + (["group", "group"] if syntax == "proto2" else [])
        kind = draw(st.sampled_from(kinds if not in_oneof else ["scalar", "enum", "message"]))
        if kind == "enum" and not enums or kind == "message" and not messages:
            kind = "scalar"
        opts: list[str] = []
        if kind == "map":
            value = draw(st.sampled_from(SCALARS + [m for m in messages]))
            return "  " * depth + f"map<{draw(st.sampled_from(MAP_KEYS))}, {value}> {name} = {number};"
        if kind == "group":
            label = "" if in_oneof else draw(st.sampled_from(["optional ", "repeated "]))
            inner = names("G")
            return "  " * depth + f"{label}group {inner} = {number} {{ optional int32 {names('f')} = {number + 1}; }}"
        if kind == "scalar":
            type_ = draw(st.sampled_from(SCALARS))
        elif kind == "enum":
            type_, first = draw(st.sampled_from(enums))
        else:
            type_ = draw(st.sampled_from(messages))
        if in_oneof:
            label = ""
        elif syntax == "proto2":
            label = draw(st.sampled_from(["optional ", "required ", "repeated "]))
        elif syntax == "proto3":
            label = draw(st.sampled_from(["", "optional ", "repeated "]))
        else:
            label = draw(st.sampled_from(["", "repeated "]))
        if label == "repeated " and type_ in NUMERIC and draw(st.booleans()):
            if syntax == "editions":
                opts.append("features.repeated_field_encoding = EXPANDED")
            else:
                opts.append(f"packed = {'true' if syntax == 'proto2' else 'false'}")
        singular = label in ("optional ", "required ") or (syntax == "editions" and not label and not in_oneof)
        if singular and kind == "scalar" and syntax != "proto3" and draw(st.integers(0, 2)) > 0:
            if type_ == "string":
                opts.append(f"default = {_quote(draw(TEXT))}")
            elif type_ == "bool":
                opts.append("default = true")
            elif type_ in ("float", "double"):
                opts.append(f"default = {draw(st.sampled_from(['inf', '-inf', 'nan', '1.5', '-0.25', '1e10']))}")
            elif type_ in NUMERIC:
                opts.append(f"default = {draw(st.integers(0 if type_.startswith(('u', 'fixed')) else -100, 100))}")
        has_default = any(o.startswith("default") for o in opts)
        if (
            syntax == "editions"
            and not label
            and not in_oneof
            and kind == "scalar"
            and not has_default
            and draw(st.booleans())
        ):
            opts.append("features.field_presence = IMPLICIT")
        if draw(st.integers(0, 5)) == 0:
            opts.append(f"json_name = {_quote(draw(st.sampled_from(['J', 'the_', 'x'])) + name)}")  # unique per message
        if draw(st.integers(0, 5)) == 0:
            opts.append("deprecated = true")
        suffix = f" [{', '.join(opts)}]" if opts else ""
        return "  " * depth + f"{label}{type_} {name} = {number}{suffix};"

    def message(depth: int, scope: str) -> str:
        name = names("M")
        full = f"{scope}.{name}"
        lines = ["  " * depth + f"message {name} {{"]
        numbers = iter(draw(st.lists(st.integers(1, 400), min_size=12, max_size=12, unique=True).map(sorted)) * 1)
        used = []
        items = draw(
            st.lists(st.sampled_from(["field", "field", "oneof", "nested", "enum"]), max_size=6 if depth < 2 else 3)
        )
        messages.append(full)
        for item in items:
            if item == "field":
                number = next(numbers, None)
                if number is not None:
                    used.append(number)
                    lines.append(field(depth + 1, number * 2, False))
            elif item == "oneof":
                members = [
                    field(depth + 2, n * 2, True) for n in [next(numbers, None) for _ in range(2)] if n is not None
                ]
                if members:
                    lines += ["  " * (depth + 1) + f"oneof {names('o')} {{", *members, "  " * (depth + 1) + "}"]
            elif item == "nested" and depth < 2:
                lines.append(message(depth + 1, full))
            elif item == "enum":
                lines.append(enum(depth + 1, full))
        if draw(st.booleans()):
            lines.append("  " * (depth + 1) + f"reserved 1000 to 1010, {draw(st.integers(2000, 3000))};")
        if draw(st.booleans()):
            reserved = names("gone")
            lines.append(
                "  " * (depth + 1) + (f"reserved {reserved};" if syntax == "editions" else f'reserved "{reserved}";')
            )
        lines.append("  " * depth + "}")
        return "\n".join(lines)

    package = draw(st.sampled_from(["", "pkg", "a.b.c"]))
    head = ['edition = "2023";' if syntax == "editions" else f'syntax = "{syntax}";']
    if package:
        head.append(f"package {package};")
    scope = f".{package}" if package else ""
    body = [message(0, scope) for _ in range(draw(st.integers(1, 3)))]
    if draw(st.booleans()):
        body.append(enum(0, scope))
    return "\n".join(head + body) + "\n"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(proto_files())
def test_printed_generated_files_compile_to_the_same_descriptor(text):
    try:
        compile_files({"a.proto": text}, ["a.proto"])
    except SchemaError as exc:  # the generator's own mistakes must not pass silently
        pytest.fail(f"generated schema does not compile: {exc}\n{text}")
    first, second = reprinted(text)
    assert first == second, print_file(first)
