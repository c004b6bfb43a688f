"""pulsar_codec.serde's Protobuf pair against confluent-kafka's own ProtobufSerializer / ProtobufDeserializer.

Both sides use one embedded registry (confluent-kafka through the REST facade), so schema ids and
references agree and framed bytes compare byte for byte. The message classes are built from
descriptors compiled by protoc in the test (``message_factory.GetMessageClass``): no generated code.
"""

from __future__ import annotations

import datetime
import importlib.resources
import os
import tempfile
import warnings

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("grpc_tools")

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402
from grpc_tools import protoc  # noqa: E402

from protobuf_fixtures import canonical_rows, expected_rows  # noqa: E402
from pulsar_codec import serde  # noqa: E402
from pulsar_codec.errors import (  # noqa: E402
    EncodeError,
    ErrorCode,
    SchemaError,
    SchemaNotFoundError,
    WireFormatError,
)
from pulsar_codec.formats.protobuf import parse  # noqa: E402
from pulsar_codec.pipeline import Decoded  # noqa: E402
from pulsar_codec.registry import LocalRegistry  # noqa: E402
from pulsar_codec.registry.server import serve  # noqa: E402

with warnings.catch_warnings():
    try:
        import authlib.deprecate  # noqa: F401
    except ImportError:
        pass
    warnings.simplefilter("ignore", DeprecationWarning)
    ck_sr = pytest.importorskip("confluent_kafka.schema_registry")
    ck_pb = pytest.importorskip("confluent_kafka.schema_registry.protobuf")
    from confluent_kafka import Message
    from confluent_kafka.serialization import MessageField, SerializationContext

COMMON = """syntax = "proto3";
package common;
message Money { string currency = 1; int64 units = 2; sint32 nanos = 3; }
"""
SHOP = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "common.proto";

message Order {
  int64 id = 1;
  string customer = 2;
  map<string, int32> attrs = 3;
  repeated string tags = 4;
  enum Status { NEW = 0; PAID = 1; SHIPPED = 2; }
  Status status = 5;
  google.protobuf.Timestamp at = 6;
  google.protobuf.Duration wait = 7;
  google.protobuf.StringValue note = 8;
  optional double total = 9;
  message Line { string sku = 1; uint32 qty = 2; common.Money price = 3; }
  repeated Line lines = 10;
  oneof pay { string card = 11; bytes token = 12; }
  map<int64, Line> by_number = 13;
  common.Money sum = 14;
  repeated sint64 deltas = 15;
}
message Refund { int64 order = 1; string reason = 2; }
"""


def _compile(files: dict[str, str], root: str) -> descriptor_pool.DescriptorPool:
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    with tempfile.TemporaryDirectory() as folder:
        for name, text in files.items():
            with open(os.path.join(folder, name), "w") as handle:
                handle.write(text)
        out = os.path.join(folder, "set.bin")
        args = ["protoc", f"-I{include}", f"-I{folder}", "--include_imports", f"--descriptor_set_out={out}", root]
        assert protoc.main(args) == 0
        with open(out, "rb") as handle:
            file_set = descriptor_pb2.FileDescriptorSet.FromString(handle.read())
    pool = descriptor_pool.DescriptorPool()
    for proto in file_set.file:
        pool.Add(proto)
    return pool


POOL = _compile({"common.proto": COMMON, "shop.proto": SHOP}, "shop.proto")
Order = message_factory.GetMessageClass(POOL.FindMessageTypeByName("shop.Order"))
Line = message_factory.GetMessageClass(POOL.FindMessageTypeByName("shop.Order.Line"))
Refund = message_factory.GetMessageClass(POOL.FindMessageTypeByName("shop.Refund"))
MODEL = parse(SHOP, {"common.proto": COMMON}, message="shop.Order")


def full_order() -> object:
    m = Order(id=-(2**40), customer='Zoë "q"\n漢字', tags=["a", ""], status=2, total=0.0, card="4111")
    for i in range(12):  # enough entries that the runtime's hash order differs from key order
        m.attrs[f"k{i}"] = i * 7 - 30
    m.at.seconds, m.at.nanos = 1_700_000_000, 123_456_789
    m.wait.seconds, m.wait.nanos = -3, -500
    m.note.value = ""
    m.lines.add(sku="s1", qty=2**32 - 1).price.currency = "EUR"
    m.lines.add()
    m.by_number[-5].sku = "neg"
    m.by_number[2**40].qty = 1
    m.sum.units, m.sum.nanos = 12, -7
    m.deltas.extend([-1, 0, 2**62])
    return m


MESSAGES = [full_order(), Order(), Order(id=1, token=b"\x00\xff", status=7), Order(customer="x", attrs={"only": 1})]


def ctx(topic: str = "orders") -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


@pytest.fixture
def reg():
    with LocalRegistry(":memory:") as registry:
        yield registry


@pytest.fixture
def server(reg):
    with serve(reg) as srv:
        yield srv


@pytest.fixture
def ck_client(server):
    client = ck_sr.SchemaRegistryClient({"url": server.url, "max.retries": 0})
    yield client
    client.close()


def as_dicts(value, arrow_type: pa.DataType):
    """A decoded row (maps as lists of pairs) with maps as dicts: the deserializer's value shape."""
    if value is None:
        return None
    if isinstance(arrow_type, pa.MapType):
        return {k: as_dicts(v, arrow_type.item_type) for k, v in value}
    if pa.types.is_list(arrow_type):
        return [as_dicts(v, arrow_type.value_type) for v in value]
    if pa.types.is_struct(arrow_type):
        return {f.name: as_dicts(value[f.name], f.type) for f in arrow_type}
    return value


def expected_values(messages, schema: pa.Schema):
    """The runtime oracle's rows for ``messages`` in the deserializer's shape."""
    struct = pa.struct(list(schema))
    return [as_dicts(row, struct) for row in expected_rows(messages, schema)]


# -- bytes and registrations equal confluent-kafka's ---------------------------------------------------


def test_instances_frame_byte_identical_with_confluent_kafka(reg, ck_client):
    theirs = ck_pb.ProtobufSerializer(Order, ck_client)
    expected = [theirs(m, ctx()) for m in MESSAGES]
    registered = reg.get_latest("orders-value")
    ours = serde.ProtobufSerializer(reg, Order)
    assert [ours(m, ctx()) for m in MESSAGES] == expected
    # the same registration: no new version, the same references (imports of non-bundled files)
    assert reg.list_versions("orders-value") == [1]
    assert [r.name for r in registered.references] == ["common.proto"]
    assert reg.list_subjects() == ["common.proto", "orders-value"]
    assert expected[0][:6] == b"\x00" + registered.id.to_bytes(4, "big") + b"\x00"  # [0]: the one byte 00


def test_each_reads_the_other(reg, ck_client):
    theirs = ck_pb.ProtobufSerializer(Order, ck_client)
    their_reader = ck_pb.ProtobufDeserializer(Order, {}, ck_client)
    ours = serde.ProtobufSerializer(reg, MODEL)  # .proto text with its import as a reference
    our_reader = serde.ProtobufDeserializer(reg)
    framed = [theirs(m, ctx()) for m in MESSAGES]
    batch = our_reader.decode_batch(framed)
    values = [our_reader(f, ctx()) for f in framed]
    assert values == expected_values(MESSAGES, batch.schema)
    expected = canonical_rows(expected_rows(MESSAGES, batch.schema), batch.schema)
    assert canonical_rows(batch.to_pylist(), batch.schema) == expected
    assert isinstance(values[0]["attrs"], dict) and values[0]["by_number"][-5]["sku"] == "neg"
    assert values[0]["at"].value == 1_700_000_000_123_456_789  # nanoseconds kept
    # our dicts back through our serializer: confluent-kafka reads the same messages
    for message, value in zip(MESSAGES, values):
        assert their_reader(ours(value, ctx()), ctx()) == message


def test_dicts_serialize_deterministically(reg, ck_client):
    ours = serde.ProtobufSerializer(reg, MODEL)
    theirs = ck_pb.ProtobufSerializer(Order, ck_client)
    value = {
        "id": 5,
        "attrs": {f"k{i}": i for i in range(12)},
        "at": datetime.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC),
        "wait": datetime.timedelta(seconds=-1, microseconds=250),
        "lines": [{"sku": "a", "price": {"units": 3}}],
        "by_number": {7: {"qty": 2}},
        "status": "PAID",
        "pay_case": "token",
        "token": b"t",
        "card": None,
    }
    message = Order(id=5, status=1, token=b"t")
    for i in range(12):
        message.attrs[f"k{i}"] = i
    message.at.FromDatetime(datetime.datetime(2024, 1, 2, 3, 4, 5, 678901))
    message.wait.FromTimedelta(datetime.timedelta(seconds=-1, microseconds=250))
    message.lines.add(sku="a").price.units = 3
    message.by_number[7].qty = 2
    framed = ours(value, ctx())
    prefix = theirs(message, ctx())[:6]
    assert framed == prefix + message.SerializeToString(deterministic=True)
    # one map entry at most: no order to differ, so equal to confluent-kafka's bytes
    small = {"id": 1, "attrs": {"a": 1}, "by_number": {3: {"sku": "x"}}}
    assert ours(small, ctx()) == theirs(Order(id=1, attrs={"a": 1}, by_number={3: Line(sku="x")}), ctx())


def test_nested_message_index_path(reg, ck_client):
    line = Line(sku="q", qty=1)
    line.price.units = -2
    theirs = ck_pb.ProtobufSerializer(Line, ck_client)(line, ctx("lines"))
    ours = serde.ProtobufSerializer(reg, Line)(line, ctx("lines"))
    assert ours == theirs
    assert ours[5:8] == b"\x04\x00\x02"  # path [0, 1]: Order, then its second nested type (after AttrsEntry)
    two = 'syntax = "proto3"; package r; message A { int32 a = 1; } message B { int64 order = 1; }'
    from_text = serde.ProtobufSerializer(reg, two, message="r.B")
    assert from_text({"order": 3}, ctx("refunds"))[5:] == b"\x02\x02\x08\x03"  # path [1]: zigzag 1, 1; field 1 = 3
    assert serde.ProtobufDeserializer(reg)(ours) == {
        "sku": "q",
        "qty": 1,
        "price": {"currency": "", "units": -2, "nanos": 0},
    }
    assert ck_pb.ProtobufDeserializer(Line, {}, ck_client)(ours, ctx("lines")) == line


def test_confluent_kafka_client_as_our_registry(ck_client):
    ours = serde.ProtobufSerializer(ck_client, Order)
    theirs = ck_pb.ProtobufSerializer(Order, ck_client)
    assert ours(MESSAGES[0], ctx("t2")) == theirs(MESSAGES[0], ctx("t2"))
    assert serde.ProtobufDeserializer(ck_client)(theirs(MESSAGES[2], ctx("t2")))["token"] == b"\x00\xff"


def test_known_types_as_references_and_reference_subjects(reg, ck_client):
    conf = {"skip.known.types": False}
    theirs = ck_pb.ProtobufSerializer(Order, ck_client, conf)(MESSAGES[0], ctx())
    assert "google/protobuf/timestamp.proto" in reg.list_subjects()
    assert serde.ProtobufSerializer(reg, Order, conf)(MESSAGES[0], ctx()) == theirs
    text_refs = serde.ProtobufSerializer(reg, MODEL, conf)
    text_refs(MESSAGES[1], ctx("text"))
    names = [r.name for r in reg.get_latest("text-value").references]
    assert set(names) == {"google/protobuf/timestamp.proto", "google/protobuf/duration.proto", "common.proto"} | {
        "google/protobuf/wrappers.proto"
    }

    def subject(ctx_, dependency):
        return f"refs-{dependency.name}"

    custom = serde.ProtobufSerializer(reg, Order, {"reference.subject.name.strategy": subject})
    custom(MESSAGES[1], ctx("custom"))
    assert [(r.name, r.subject) for r in reg.get_latest("custom-value").references] == [
        ("common.proto", "refs-common.proto")
    ]


# -- configuration -------------------------------------------------------------------------------------


def test_use_latest_and_schema_id(reg, ck_client):
    ck_pb.ProtobufSerializer(Order, ck_client)(MESSAGES[1], ctx())
    schema_id = reg.get_latest("orders-value").id
    latest = serde.ProtobufSerializer(reg, conf={"use.latest.version": True, "auto.register.schemas": False})
    assert latest({"id": 9}, ctx()) == b"\x00" + schema_id.to_bytes(4, "big") + b"\x00\x08\x09"
    by_id = serde.ProtobufSerializer(reg, conf={"use.schema.id": schema_id}, message="shop.Refund")
    assert by_id({"order": 1}, ctx())[5:] == b"\x02\x02\x08\x01"
    lookup = serde.ProtobufSerializer(reg, Refund, {"auto.register.schemas": False})
    with pytest.raises(SchemaNotFoundError, match="nowhere-value"):
        lookup(Refund(order=1), ctx("nowhere"))
    reader = serde.ProtobufDeserializer(reg, conf={"use.latest.version": True})
    assert reader(latest({"id": 9}, ctx()), ctx())["id"] == 9
    assert reader.decode_batch([latest({"id": 4}, ctx())], ctx()).column("id").to_pylist() == [4]


def test_refused_configuration_and_values(reg):
    with pytest.raises(ValueError, match="no longer supported"):
        serde.ProtobufSerializer(reg, Order, {"use.deprecated.format": True})
    with pytest.raises(ValueError, match="no longer supported"):
        serde.ProtobufDeserializer(reg, conf={"use.deprecated.format": True})
    with pytest.raises(ValueError, match="Unrecognized"):
        serde.ProtobufSerializer(reg, Order, {"no.such.key": 1})
    with pytest.raises(ValueError, match="skip.known.types"):
        serde.ProtobufSerializer(reg, Order, {"skip.known.types": "yes"})
    with pytest.raises(ValueError, match="a schema is needed"):
        serde.ProtobufSerializer(reg)
    with pytest.raises(SchemaError, match="no message"):
        serde.ProtobufSerializer(reg, MODEL, message="shop.Nope")
    ours = serde.ProtobufSerializer(reg, Order)
    assert ours(None, ctx()) is None
    with pytest.raises(ValueError, match="must be of type shop.Order"):
        ours(Refund(order=1), ctx())
    with pytest.raises(EncodeError, match="no field"):
        ours({"idd": 1}, ctx())
    with pytest.raises(EncodeError, match="datetime"):
        ours({"at": "2024-01-01"}, ctx())
    record = serde.ProtobufSerializer(reg, Order, {"subject.name.strategy": serde.record_subject_name_strategy})
    record({"id": 1}, ctx())
    assert "shop.Order" in reg.list_subjects()


def test_message_selection_and_error_rows(reg, ck_client):
    order = ck_pb.ProtobufSerializer(Order, ck_client)(Order(id=1), ctx())
    line = ck_pb.ProtobufSerializer(Line, ck_client)(Line(sku="z"), ctx("lines"))
    only_orders = serde.ProtobufDeserializer(reg, message="shop.Order")
    assert only_orders(order)["id"] == 1
    with pytest.raises(SchemaError, match="shop.Order.Line"):
        only_orders(line)
    result = only_orders.decode_batch([line, order, None, b"\x07bad"], on_error="null")
    assert isinstance(result, Decoded)
    assert result.batch.column("id").to_pylist() == [None, 1, None, None]
    codes = dict(zip(result.errors.column("index").to_pylist(), result.errors.column("code").to_pylist()))
    assert codes[0] == ErrorCode.SCHEMA_OTHER_MESSAGE and 3 in codes
    # no message=: the first message's type is the batch's
    assert serde.ProtobufDeserializer(reg).decode_batch([line]).column_names == ["sku", "qty", "price"]
    with pytest.raises(WireFormatError):
        serde.ProtobufDeserializer(reg)(b"\x07bad")
    # confluent-kafka Message objects, as consume() returns them
    batch = serde.ProtobufDeserializer(reg).decode_batch([Message(value=order, topic="orders")])
    assert batch.column("id").to_pylist() == [1]


# -- random messages -------------------------------------------------------------------------------------

_INT64 = st.integers(-(2**63), 2**63 - 1)
_TEXT = st.text(max_size=8)


@st.composite
def orders(draw):
    m = Order(
        id=draw(_INT64),
        customer=draw(_TEXT),
        tags=draw(st.lists(_TEXT, max_size=4)),
        status=draw(st.integers(0, 5)),
        deltas=draw(st.lists(_INT64, max_size=4)),
    )
    for k, v in draw(st.dictionaries(_TEXT, st.integers(-(2**31), 2**31 - 1), max_size=10)).items():
        m.attrs[k] = v
    if draw(st.booleans()):
        m.at.seconds = draw(st.integers(-(2**33), 2**33))
        m.at.nanos = draw(st.integers(0, 999_999_999))
    if draw(st.booleans()):
        m.total = draw(st.floats(allow_nan=False))
    choice = draw(st.sampled_from(["card", "token", None]))
    if choice == "card":
        m.card = draw(_TEXT)
    elif choice == "token":
        m.token = draw(st.binary(max_size=6))
    for number in draw(st.lists(_INT64, max_size=3)):
        m.by_number[number].sku = draw(_TEXT)
    return m


@pytest.fixture(scope="module")
def shared():
    with LocalRegistry(":memory:") as registry, serve(registry) as srv:
        client = ck_sr.SchemaRegistryClient({"url": srv.url, "max.retries": 0})
        yield (
            ck_pb.ProtobufSerializer(Order, client),
            serde.ProtobufSerializer(registry, Order),
            serde.ProtobufDeserializer(registry),
            ck_pb.ProtobufDeserializer(Order, {}, client),
        )
        client.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(message=orders())
def test_random_messages_both_ways(shared, message):
    theirs, ours, our_reader, their_reader = shared
    framed = theirs(message, ctx())
    assert ours(message, ctx()) == framed
    value = our_reader(framed, ctx())
    assert their_reader(ours(value, ctx()), ctx()) == message


def test_use_schema_id_writes_with_that_ids_schema(reg, ck_client):
    # the frame names the id: a message of a schema that id does not hold is refused, not framed
    other = reg.register("elsewhere", 'syntax = "proto3";\npackage q;\nmessage B { string x = 1; }\n', "PROTOBUF")
    with pytest.raises(SchemaError, match="no message 'shop.Refund'"):
        serde.ProtobufSerializer(reg, Refund, {"use.schema.id": other})(Refund(order=1), ctx())
    assert serde.ProtobufSerializer(reg, conf={"use.schema.id": other})({"x": "a"}, ctx())[5:] == b"\x00\x0a\x01a"


def test_use_latest_version_reader_with_a_record_strategy_or_no_context(reg, ck_client):
    strategy = {"subject.name.strategy": ck_sr.record_subject_name_strategy}
    framed = ck_pb.ProtobufSerializer(Refund, ck_client, strategy)(Refund(order=3, reason="r"), ctx())
    conf = {"use.latest.version": True}
    theirs = ck_pb.ProtobufDeserializer(Refund, {**conf, **strategy}, ck_client)(framed, ctx())
    ours = serde.ProtobufDeserializer(reg, conf={**conf, "subject.name.strategy": serde.record_subject_name_strategy})
    assert ours(framed, ctx()) == {"order": theirs.order, "reason": theirs.reason}
    assert ours.decode_batch([framed], ctx()).column("reason").to_pylist() == ["r"]
    assert serde.ProtobufDeserializer(reg, conf=conf)(framed, None) == {"order": 3, "reason": "r"}
