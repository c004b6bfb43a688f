"""Pulsar PROTOBUF_NATIVE topics into Arrow and back (issue 12): the pulsar-client adapter
(:class:`pulsar_codec.pulsar.TopicDecoder`, :func:`~pulsar_codec.pulsar.read_decoded`) on a topic of
pulsar-client's ``ProtobufNativeSchema`` through the pulsar-lite broker, and pulsar-client's
``ProtobufNativeSchema`` consumer reading payloads this package's Protobuf encoder wrote.

The message class is built from a descriptor protoc compiled in the test
(``message_factory.GetMessageClass``), which ``ProtobufNativeSchema`` takes as it takes a generated
class. pulsar-lite stores no schemas, so the schema comes from the client's schema object.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")
pytest.importorskip("grpc_tools")

import pulsar  # noqa: E402
from pulsar.schema import ProtobufNativeSchema  # noqa: E402

import pulsar_codec as pc  # noqa: E402
from protobuf_fixtures import canonical_rows, compile_proto, expected_rows, message_class  # noqa: E402
from pulsar_codec import errors  # noqa: E402
from pulsar_codec import pulsar as pcp  # noqa: E402
from pulsar_codec import pulsar_types as pt  # noqa: E402
from pulsar_codec.formats.protobuf import ProtobufEncoder, parse, pulsar_native_data  # noqa: E402

pytest_plugins = ["pulsar_fixtures"]

TEXT = """syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Order {
  int64 id = 1;
  string customer = 2;
  enum Status { NEW = 0; PAID = 1; }
  Status status = 3;
  google.protobuf.Timestamp at = 4;
  map<string, sint32> attrs = 5;
  message Line { string sku = 1; fixed32 qty = 2; }
  repeated Line lines = 6;
  oneof pay { string card = 7; bytes token = 8; }
  google.protobuf.DoubleValue discount = 9;
  optional uint64 points = 10;
  repeated float weights = 11;
}
"""
POOL = compile_proto(TEXT, "order.proto")
Order = message_class(POOL, "shop.v1.Order")


def orders():
    first = Order(id=2**40, customer='Zoë "q"\n漢字', status=1, card="4111", points=0, weights=[0.5, -1.0])
    first.at.seconds, first.at.nanos = 1_700_000_000, 5
    first.attrs["a"] = -3
    first.attrs["b"] = 2**31 - 1
    first.lines.add(sku="s", qty=2**32 - 1)
    first.lines.add()
    first.discount.value = 0.0
    return [first, Order(), Order(id=-1, status=5, token=b"\x00\xff")]  # 5: an unknown enum number


def _produce(client, topic, values, schema=None):
    options = {} if schema is None else {"schema": schema}
    producer = client.create_producer(topic, batching_enabled=False, **options)
    try:
        for value in values:
            producer.send(value)
    finally:
        producer.close()


def _consume(client, topic, schema, n):
    consumer = client.subscribe(topic, "check", schema=schema, initial_position=pulsar.InitialPosition.Earliest)
    try:
        messages = [consumer.receive(10_000) for _ in range(n)]
        for msg in messages:
            consumer.acknowledge(msg)
        return messages
    finally:
        consumer.close()


def test_protobuf_native_topic_into_arrow(pulsar_client, pulsar_topic):
    schema = ProtobufNativeSchema(Order)
    messages = orders()
    _produce(pulsar_client, pulsar_topic, messages, schema)

    (raw,) = pcp.read_batches(pulsar_client, pulsar_topic)
    assert raw.column("payload").to_pylist() == [m.SerializeToString() for m in messages]
    decoder = pcp.TopicDecoder(schema)
    assert decoder.schema_type is pt.SchemaType.PROTOBUF_NATIVE
    decoded = decoder.decode(raw)
    assert decoded.schema.names[:3] == ["id", "customer", "status"]
    assert decoded.schema.field("at").type == pa.timestamp("ns", "UTC")
    assert decoded.schema.field("points").type == pa.uint64() and decoded.schema.field("points").nullable
    assert decoded.column("status").to_pylist() == ["PAID", "NEW", "5"]  # the unknown number kept
    assert canonical_rows(decoded.to_pylist(), decoded.schema) == canonical_rows(
        expected_rows(messages, decoded.schema), decoded.schema
    )
    assert decoder.arrow_schema() == decoded.schema

    # read_decoded is the same, batch by batch; the schema data alone (a SchemaInfo) too
    batches = list(pcp.read_decoded(pulsar_client, pulsar_topic, schema, batch_size=2))
    assert [b.num_rows for b in batches] == [2, 1]
    assert pa.Table.from_batches(batches).to_pylist() == decoded.to_pylist()
    info = schema.schema_info()
    document = json.loads(info.schema())
    assert document["rootMessageTypeName"] == "shop.v1.Order"
    from_info = pcp.TopicDecoder(pt.SchemaInfo("order", "PROTOBUF_NATIVE", info.schema().encode()))
    assert from_info.decode(raw).equals(decoded)


def test_bad_payloads_are_error_rows():
    decoder = pcp.TopicDecoder(ProtobufNativeSchema(Order), on_error="null")
    good = orders()[0].SerializeToString()
    result = decoder.decode([good, b"\x08", None, good[:-1] + b"\xff\xff"])
    assert result.batch.column("id").to_pylist() == [2**40, None, None, None]
    assert result.errors.column("index").to_pylist() == [1, 3]
    assert all(c in range(110, 119) for c in result.errors.column("code").to_pylist())
    with pytest.raises(errors.ProtobufDecodeError, match=r"message 1, byte 1"):
        pcp.TopicDecoder(ProtobufNativeSchema(Order)).decode([good, b"\x08"])


def test_protobuf_native_consumer_reads_our_encoder(pulsar_client, pulsar_topic):
    model = parse(TEXT, message="shop.v1.Order")
    decoded = pcp.TopicDecoder(pt.SchemaInfo("order", "PROTOBUF_NATIVE", pulsar_native_data(model))).decode(
        [m.SerializeToString() for m in orders()]
    )
    payloads = ProtobufEncoder(model).encode(decoded).to_pylist()
    _produce(pulsar_client, pulsar_topic, payloads)  # a plain bytes producer
    consumed = [m.value() for m in _consume(pulsar_client, pulsar_topic, ProtobufNativeSchema(Order), len(payloads))]
    assert consumed == orders()
    # the same rows through pc.encode / pc.decode with a registry mapping
    framed = pc.encode(decoded, {}, "orders-value", schema=TEXT, format="PROTOBUF")
    back = pc.decode(framed, {1: TEXT}, format="PROTOBUF")
    assert back.schema == decoded.schema
    # map entries: the runtime wrote them in its hash order, the encoder sorted by key
    assert canonical_rows(back.to_pylist(), back.schema) == canonical_rows(decoded.to_pylist(), decoded.schema)


def test_refusals():
    with pytest.raises(errors.SchemaError, match="PROTOBUF_NATIVE and external"):
        pcp.TopicDecoder(pt.SchemaInfo("p", "PROTOBUF", b'{"type": "record"}'))
    with pytest.raises(ValueError, match="convention applies"):
        pcp.TopicDecoder(ProtobufNativeSchema(Order), convention="python")
    with pytest.raises(errors.SchemaError, match="rootMessageTypeName"):
        pcp.TopicDecoder(pt.SchemaInfo("p", "PROTOBUF_NATIVE", b'{"fileDescriptorSet": ""}')).decode([b""])
