"""Schema ids in message headers (spec §4.3): confluent-kafka's ``header_schema_id_serializer``
writes ``__value_schema_id`` / ``__key_schema_id`` = ``01`` + GUID (+ Protobuf index array) and an
unprefixed payload; our deserializers read them as its default ``dual_schema_id_deserializer``
does, per message and in ``decode_batch`` over ``Message`` objects.
"""

from __future__ import annotations

import json
import uuid
import warnings

import pytest

pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

from pulsar_codec import serde  # noqa: E402
from pulsar_codec.errors import ErrorCode, WireFormatError  # noqa: E402
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
    ck_avro = pytest.importorskip("confluent_kafka.schema_registry.avro")
    ck_json = pytest.importorskip("confluent_kafka.schema_registry.json_schema")
    ck_pb = pytest.importorskip("confluent_kafka.schema_registry.protobuf")
    from confluent_kafka import Message
    from confluent_kafka.serialization import MessageField, SerializationContext

USER = {
    "type": "record",
    "name": "User",
    "namespace": "ex",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
}
KEY = {"type": "record", "name": "UserKey", "namespace": "ex", "fields": [{"name": "k", "type": "string"}]}
JSON_USER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "User",
    "type": "object",
    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
    "required": ["id", "name"],
}
JSON_KEY = {"title": "Key", "type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"]}


def _proto_classes():
    """``hdr.First`` and ``hdr.Second`` (index path [1]) built from a descriptor: no generated code."""
    file = descriptor_pb2.FileDescriptorProto(name="hdr_test.proto", package="hdr", syntax="proto3")
    first = file.message_type.add(name="First")
    first.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64, label=1)
    second = file.message_type.add(name="Second")
    second.field.add(name="name", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, label=1)
    second.field.add(name="n", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32, label=1)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return (
        message_factory.GetMessageClass(pool.FindMessageTypeByName("hdr.First")),
        message_factory.GetMessageClass(pool.FindMessageTypeByName("hdr.Second")),
    )


First, Second = _proto_classes()


@pytest.fixture
def reg():
    with LocalRegistry(":memory:") as registry:
        yield registry


@pytest.fixture
def ck_client(reg):
    with serve(reg) as srv:
        client = ck_sr.SchemaRegistryClient({"url": srv.url, "max.retries": 0})
        yield client
        client.close()


def header_conf(**more):
    return {
        "subject.name.strategy": ck_sr.topic_subject_name_strategy,
        "schema.id.serializer": ck_sr.header_schema_id_serializer,
        **more,
    }


def produce(serializer, value, field=MessageField.VALUE, topic="users"):
    """What confluent-kafka's SerializingProducer does: serialize into a context whose headers
    the header serializer fills in; returns (payload, headers)."""
    headers: list = []
    payload = serializer(value, SerializationContext(topic, field, headers))
    return payload, headers


def consumed(headers, field=MessageField.VALUE, topic="users"):
    return SerializationContext(topic, field, headers)


def guid_of(reg, subject):
    return uuid.UUID(reg.get_schema(reg.get_latest(subject).id).guid)


# -- per message: each format, value and key ---------------------------------------------------------


def test_avro_reads_confluent_kafka_header_ids_for_value_and_key(backend, reg, ck_client):
    value_ser = ck_avro.AvroSerializer(ck_client, json.dumps(USER), conf=header_conf())
    key_ser = ck_avro.AvroSerializer(ck_client, json.dumps(KEY), conf=header_conf())
    de = serde.AvroDeserializer(reg)
    payload, headers = produce(value_ser, {"id": 7, "name": "ann"})
    key_payload, key_headers = produce(key_ser, {"k": "x"}, MessageField.KEY)
    assert headers[0][0] == "__value_schema_id" and key_headers[0][0] == "__key_schema_id"
    assert headers[0][1] == b"\x01" + guid_of(reg, "users-value").bytes
    assert payload[:1] != b"\x00"  # no prefix: the payload is all Avro
    assert de(payload, consumed(headers)) == {"id": 7, "name": "ann"}
    # a real message carries both headers: each field reads its own
    both = key_headers + headers
    assert de(payload, consumed(both)) == {"id": 7, "name": "ann"}
    assert de(key_payload, consumed(both, MessageField.KEY)) == {"k": "x"}
    # our own SerializationContext and a dict of headers work alike
    ours = serde.SerializationContext("users", serde.MessageField.KEY, dict(both))
    assert de(key_payload, ours) == {"k": "x"}
    # confluent-kafka's own deserializer agrees (it refuses any payload of 5 bytes or fewer, header
    # mode too: this one is longer)
    longer, longer_headers = produce(value_ser, {"id": 8, "name": "annabel"})
    theirs = ck_avro.AvroDeserializer(ck_client)
    assert (
        theirs(longer, consumed(longer_headers)) == de(longer, consumed(longer_headers)) == {"id": 8, "name": "annabel"}
    )


def test_json_reads_confluent_kafka_header_ids_for_value_and_key(reg, ck_client):
    value_ser = ck_json.JSONSerializer(json.dumps(JSON_USER), ck_client, conf=header_conf())
    key_ser = ck_json.JSONSerializer(json.dumps(JSON_KEY), ck_client, conf=header_conf())
    de = serde.JSONDeserializer(reg)
    payload, headers = produce(value_ser, {"id": 3, "name": "bo"})
    key_payload, key_headers = produce(key_ser, {"k": "kk"}, MessageField.KEY)
    assert payload.startswith(b"{")
    both = headers + key_headers
    assert de(payload, consumed(both)) == {"id": 3, "name": "bo"}
    assert de(key_payload, consumed(both, MessageField.KEY)) == {"k": "kk"}


def test_protobuf_reads_confluent_kafka_header_ids_with_index_paths(reg, ck_client):
    conf = header_conf(**{"use.deprecated.format": False})
    first_ser = ck_pb.ProtobufSerializer(First, ck_client, conf)
    second_ser = ck_pb.ProtobufSerializer(Second, ck_client, conf)
    de = serde.ProtobufDeserializer(reg)
    payload, headers = produce(second_ser, Second(name="two", n=2), topic="seconds")
    guid = guid_of(reg, "seconds-value")
    assert headers == [("__value_schema_id", b"\x01" + guid.bytes + b"\x02\x02")]  # index path [1]
    assert de(payload, consumed(headers, topic="seconds")) == {"name": "two", "n": 2}
    key_payload, key_headers = produce(first_ser, First(id=9), MessageField.KEY, topic="firsts")
    assert key_headers[0][1].endswith(b"\x00")  # [0]: the one byte 00
    assert de(key_payload, consumed(key_headers, MessageField.KEY, topic="firsts")) == {"id": 9}


def test_header_with_a_four_byte_id_and_a_guid_prefix(backend, reg):
    framed = serde.AvroSerializer(reg, json.dumps(USER))({"id": 1, "name": "a"}, consumed(None))
    guid = guid_of(reg, "users-value")
    de = serde.AvroDeserializer(reg)
    # a header may hold 00 + id as well (confluent-kafka's from_bytes reads both)
    assert de(framed[5:], consumed([("__value_schema_id", framed[:5])])) == {"id": 1, "name": "a"}
    # without a header, a 01 + GUID payload prefix is read too
    assert de(b"\x01" + guid.bytes + framed[5:], consumed(None)) == {"id": 1, "name": "a"}
    assert de(b"\x01" + guid.bytes + framed[5:], None) == {"id": 1, "name": "a"}
    # the first matching header wins, as in confluent-kafka; other headers are ignored
    headers = [("trace", b"t"), ("__value_schema_id", framed[:5]), ("__value_schema_id", b"\x07junk")]
    assert de(framed[5:], consumed(headers)) == {"id": 1, "name": "a"}
    # a key header does not name the value's schema: the value's prefix is read
    assert de(framed, consumed([("__key_schema_id", b"\x07")])) == {"id": 1, "name": "a"}
    # prefix_schema_id_deserializer reads the prefix only, as confluent-kafka's does
    prefix_only = serde.AvroDeserializer(reg, conf={"schema.id.deserializer": ck_sr.prefix_schema_id_deserializer})
    assert prefix_only(framed, consumed([("__value_schema_id", b"\x07")])) == {"id": 1, "name": "a"}


@pytest.mark.parametrize(
    "value, words",
    [
        (b"\x07" + bytes(16), "magic byte 0x07"),
        (b"\x01" + bytes(15), "of 16 bytes is shorter than its CONFLUENT_GUID prefix"),
        (b"\x01" + bytes(17), "is 18 bytes"),
        (b"\x00\x00\x00\x01", "of 4 bytes is shorter than its CONFLUENT prefix"),
        (b"", "empty message has no CONFLUENT prefix"),
        ("01abc", "must be bytes"),
    ],
)
def test_a_malformed_header_names_the_header(backend, reg, value, words):
    framed = serde.AvroSerializer(reg, json.dumps(USER))({"id": 1, "name": "a"}, consumed(None))
    for de in (serde.AvroDeserializer(reg), serde.JSONDeserializer(reg)):
        with pytest.raises(WireFormatError, match=f"schema id header '__value_schema_id'.*{words}"):
            de(framed[5:], consumed([("__value_schema_id", value)]))


def test_a_malformed_protobuf_header_names_the_header(reg):
    framed = serde.ProtobufSerializer(reg, Second)({"name": "x", "n": 1}, consumed(None))
    de = serde.ProtobufDeserializer(reg)
    guid_header = b"\x01" + guid_of(reg, "users-value").bytes
    for header, words in (
        (guid_header, "message-index array is truncated"),
        (guid_header + b"\x02\x02\x05", "is 20 bytes"),
    ):
        with pytest.raises(WireFormatError, match=f"schema id header '__value_schema_id'.*{words}"):
            de(framed[7:], consumed([("__value_schema_id", header)]))
    assert de(framed[7:], consumed([("__value_schema_id", guid_header + b"\x02\x02")])) == {"name": "x", "n": 1}


# -- batches of confluent-kafka Messages ---------------------------------------------------------------


def test_decode_batch_reads_each_message_s_header(backend, reg, ck_client):
    header_ser = ck_avro.AvroSerializer(ck_client, json.dumps(USER), conf=header_conf())
    prefixed = serde.AvroSerializer(reg, json.dumps(USER))
    messages = []
    for i in range(6):
        if i % 2:
            payload, headers = produce(header_ser, {"id": i, "name": f"n{i}"})
            headers = [("trace", b"x"), *headers]
        else:
            payload, headers = prefixed({"id": i, "name": f"n{i}"}, consumed(None)), [("trace", b"x")]
        messages.append(Message(value=payload, headers=headers, topic="users"))
    messages.append(Message(value=None, topic="users"))
    de = serde.AvroDeserializer(reg)
    rows = de.decode_batch(messages).to_pylist()
    assert rows[:6] == [{"id": i, "name": f"n{i}"} for i in range(6)]
    assert rows[6] == {"id": None, "name": None}
    # all from headers: one id kind
    only_headers = [m for i, m in enumerate(messages[:6]) if i % 2]
    assert de.decode_batch(only_headers).column("id").to_pylist() == [1, 3, 5]
    # a malformed header is its message's error (and raises with on_error="raise")
    bad = Message(value=messages[1].value(), headers=[("__value_schema_id", b"\x09")], topic="users")
    result = de.decode_batch([messages[0], bad, messages[1]], on_error="null")
    assert isinstance(result, Decoded)
    assert result.batch.column("id").to_pylist() == [0, None, 1]
    assert result.errors.column("index").to_pylist() == [1]
    assert result.errors.column("code").to_pylist() == [ErrorCode.WIRE_BAD_MAGIC]
    assert "__value_schema_id" in result.errors.column("message")[0].as_py()
    with pytest.raises(WireFormatError, match="__value_schema_id"):
        de.decode_batch([messages[0], bad])


def test_decode_batch_headers_json_and_protobuf(reg, ck_client):
    json_ser = ck_json.JSONSerializer(json.dumps(JSON_USER), ck_client, conf=header_conf())
    payload, headers = produce(json_ser, {"id": 5, "name": "j"})
    framed = serde.JSONSerializer(reg, json.dumps(JSON_USER))({"id": 6, "name": "k"}, consumed(None))
    batch = serde.JSONDeserializer(reg).decode_batch(
        [Message(value=payload, headers=headers), Message(value=framed, headers=None)]
    )
    assert batch.to_pylist() == [{"id": 5, "name": "j"}, {"id": 6, "name": "k"}]
    pb_ser = ck_pb.ProtobufSerializer(Second, ck_client, header_conf(**{"use.deprecated.format": False}))
    messages = [
        Message(value=p, headers=h)
        for p, h in (produce(pb_ser, Second(name=f"s{i}", n=i), topic="seconds") for i in range(3))
    ]
    batch = serde.ProtobufDeserializer(reg).decode_batch(messages)
    assert batch.to_pylist() == [{"name": f"s{i}", "n": i} for i in range(3)]


def test_decode_batch_of_bytes_reads_guid_prefixes(backend, reg):
    ser = serde.AvroSerializer(reg, json.dumps(USER))
    framed = [ser({"id": i, "name": "g"}, consumed(None)) for i in range(3)]
    guid = guid_of(reg, "users-value")
    mixed = [framed[0], b"\x01" + guid.bytes + framed[1][5:], framed[2]]
    de = serde.AvroDeserializer(reg)
    assert de.decode_batch(mixed).column("id").to_pylist() == [0, 1, 2]
    result = de.decode_batch([*mixed, b"\x07x"], on_error="null")
    assert result.batch.column("id").to_pylist() == [0, 1, 2, None]
    assert result.errors.column("index").to_pylist() == [3]
