"""Our serializers with ``schema.id.serializer`` = confluent-kafka's ``header_schema_id_serializer``
(spec §4.3): the payload unprefixed and ``__value_schema_id`` / ``__key_schema_id`` = ``01`` + the
schema's GUID (+ the Protobuf message-index array) added to the context's headers. Checked byte for
byte against confluent-kafka's own header-mode serializers through one embedded registry (its REST
facade for confluent-kafka's client), and read back by confluent-kafka's default deserializer.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
import warnings

import pytest

pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

from pulsar_codec import serde  # noqa: E402
from pulsar_codec.errors import EncodeError, RegistryError  # noqa: E402
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
    from confluent_kafka.serialization import MessageField, SerializationContext

USER = {
    "type": "record",
    "name": "User",
    "namespace": "hw",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
}
KEY = {"type": "record", "name": "UserKey", "namespace": "hw", "fields": [{"name": "k", "type": "string"}]}
JSON_USER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "User",
    "type": "object",
    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
    "required": ["id", "name"],
}
JSON_KEY = {"title": "Key", "type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"]}
HEADER = {"schema.id.serializer": ck_sr.header_schema_id_serializer}
VALUE_HEADER, KEY_HEADER = "__value_schema_id", "__key_schema_id"


def _proto_classes():
    """``hw.First`` (index path [0]) and ``hw.Second`` (path [1]) built from a descriptor."""
    file = descriptor_pb2.FileDescriptorProto(name="hw_writer.proto", package="hw", syntax="proto3")
    first = file.message_type.add(name="First")
    first.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64, label=1)
    first.field.add(name="note", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, label=1)
    second = file.message_type.add(name="Second")
    second.field.add(name="name", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, label=1)
    second.field.add(name="n", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32, label=1)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return (
        message_factory.GetMessageClass(pool.FindMessageTypeByName("hw.First")),
        message_factory.GetMessageClass(pool.FindMessageTypeByName("hw.Second")),
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


def produce(serializer, value, field=MessageField.VALUE, topic="users"):
    """Serialize as confluent-kafka's SerializingProducer does (the headers list it was given in
    the context); ``(payload, headers)``."""
    headers: list = []
    return serializer(value, SerializationContext(topic, field, headers)), headers


def ctx(headers, field=MessageField.VALUE, topic="users"):
    return SerializationContext(topic, field, headers)


def guid_header(reg, subject, indexes=b""):
    return b"\x01" + uuid.UUID(reg.get_latest(subject).guid).bytes + indexes


def test_avro_value_and_key_as_confluent_kafka_writes_them(backend, reg, ck_client):
    value, key = {"id": 123456, "name": "annabel"}, {"k": "a longer key"}
    for registry in (reg, ck_client):  # our registry client, and confluent-kafka's as our registry
        ours_v = serde.AvroSerializer(registry, json.dumps(USER), conf=HEADER)
        ours_k = serde.AvroSerializer(registry, json.dumps(KEY), conf=HEADER)
        payload, headers = produce(ours_v, value)
        key_payload, key_headers = produce(ours_k, key, MessageField.KEY)
        theirs_v = ck_avro.AvroSerializer(ck_client, json.dumps(USER), conf=HEADER)
        theirs_k = ck_avro.AvroSerializer(ck_client, json.dumps(KEY), conf=HEADER)
        assert (payload, headers) == produce(theirs_v, value)
        assert (key_payload, key_headers) == produce(theirs_k, key, MessageField.KEY)
        assert headers == [(VALUE_HEADER, guid_header(reg, "users-value"))]
        assert key_headers == [(KEY_HEADER, guid_header(reg, "users-key"))]
        # the payload is all Avro: what the prefixed form carries after its 5 bytes
        assert payload == serde.AvroSerializer(reg, json.dumps(USER))(value, ctx(None))[5:]
        ck_reader = ck_avro.AvroDeserializer(ck_client)  # its default: dual_schema_id_deserializer
        both = key_headers + headers
        assert ck_reader(payload, ctx(both)) == value
        assert ck_reader(key_payload, ctx(both, MessageField.KEY)) == key
        our_reader = serde.AvroDeserializer(reg)
        assert our_reader(payload, ctx(both)) == value
        assert our_reader(key_payload, ctx(both, MessageField.KEY)) == key


def test_avro_bytes_schema_and_dict_headers(backend, reg, ck_client):
    ours = serde.AvroSerializer(reg, '"bytes"', conf=HEADER)
    theirs = ck_avro.AvroSerializer(ck_client, '"bytes"', conf=HEADER)
    raw = b"\x02\x03\x04\x05\x06\x07"
    assert produce(ours, raw) == produce(theirs, raw) == (raw, [(VALUE_HEADER, guid_header(reg, "users-value"))])
    # a dict of headers gets the entry set, as confluent-kafka's serializer does
    mine: dict = {"trace": b"t"}
    assert ours(raw, ctx(mine)) == raw
    assert mine == {"trace": b"t", VALUE_HEADER: guid_header(reg, "users-value")}
    assert ck_avro.AvroDeserializer(ck_client)(raw, ctx(mine)) == raw


def test_json_value_and_key_as_confluent_kafka_writes_them(reg, ck_client):
    value, key = {"id": 3, "name": "bo"}, {"k": "kk"}
    for registry in (reg, ck_client):
        ours_v = serde.JSONSerializer(registry, json.dumps(JSON_USER), conf=HEADER)
        ours_k = serde.JSONSerializer(registry, json.dumps(JSON_KEY), conf=HEADER)
        payload, headers = produce(ours_v, value)
        key_payload, key_headers = produce(ours_k, key, MessageField.KEY)
        theirs_v = ck_json.JSONSerializer(json.dumps(JSON_USER), ck_client, conf=HEADER)
        theirs_k = ck_json.JSONSerializer(json.dumps(JSON_KEY), ck_client, conf=HEADER)
        assert (payload, headers) == produce(theirs_v, value)
        assert (key_payload, key_headers) == produce(theirs_k, key, MessageField.KEY)
        assert payload.startswith(b"{")
        assert headers == [(VALUE_HEADER, guid_header(reg, "users-value"))]
        assert key_headers == [(KEY_HEADER, guid_header(reg, "users-key"))]
        both = headers + key_headers
        for reader in (ck_json.JSONDeserializer(None, schema_registry_client=ck_client), serde.JSONDeserializer(reg)):
            assert reader(payload, ctx(both)) == value
            assert reader(key_payload, ctx(both, MessageField.KEY)) == key


def test_protobuf_value_and_key_carry_the_index_array_in_the_header(reg, ck_client):
    conf = {**HEADER, "use.deprecated.format": False}
    for registry in (reg, ck_client):
        ours_v = serde.ProtobufSerializer(registry, Second, conf)
        ours_k = serde.ProtobufSerializer(registry, First, conf)
        theirs_v = ck_pb.ProtobufSerializer(Second, ck_client, conf)
        theirs_k = ck_pb.ProtobufSerializer(First, ck_client, conf)
        for value in (Second(name="two", n=2), {"name": "two", "n": 2}):  # an instance, or a dict
            payload, headers = produce(ours_v, value, topic="seconds")
            assert (payload, headers) == produce(theirs_v, Second(name="two", n=2), topic="seconds")
            assert headers == [(VALUE_HEADER, guid_header(reg, "seconds-value", b"\x02\x02"))]  # path [1]
        key_payload, key_headers = produce(ours_k, {"id": 9, "note": "key"}, MessageField.KEY, topic="firsts")
        assert (key_payload, key_headers) == produce(
            theirs_k, First(id=9, note="key"), MessageField.KEY, topic="firsts"
        )
        assert key_headers == [(KEY_HEADER, guid_header(reg, "firsts-key", b"\x00"))]  # [0]: one byte
        ck_v = ck_pb.ProtobufDeserializer(Second, {"use.deprecated.format": False})
        ck_k = ck_pb.ProtobufDeserializer(First, {"use.deprecated.format": False})
        assert ck_v(payload, ctx(headers, topic="seconds")) == Second(name="two", n=2)
        assert ck_k(key_payload, ctx(key_headers, MessageField.KEY, "firsts")) == First(id=9, note="key")
        our_reader = serde.ProtobufDeserializer(reg)
        assert our_reader(payload, ctx(headers, topic="seconds")) == {"name": "two", "n": 2}
        assert our_reader(key_payload, ctx(key_headers, MessageField.KEY, "firsts")) == {"id": 9, "note": "key"}


def test_use_schema_id_and_latest_version_write_the_guid_of_that_schema(backend, reg, ck_client):
    schema_id = reg.register("users-value", json.dumps(USER))
    expected = [(VALUE_HEADER, guid_header(reg, "users-value"))]
    value = {"id": 1, "name": "use-id"}
    for registry in (reg, ck_client):  # confluent-kafka's client: the GUID from a version of the id
        by_id = serde.AvroSerializer(registry, conf={**HEADER, "use.schema.id": schema_id})
        latest = serde.AvroSerializer(
            registry, conf={**HEADER, "use.latest.version": True, "auto.register.schemas": False}
        )
        looked_up = serde.AvroSerializer(registry, json.dumps(USER), conf={**HEADER, "auto.register.schemas": False})
        for ser in (by_id, latest, looked_up):
            payload, headers = produce(ser, value)
            assert headers == expected
            assert serde.AvroDeserializer(reg)(payload, ctx(headers)) == value


def test_the_guid_is_asked_once_per_subject(backend, reg):
    asked = []

    class Counting:
        def __getattr__(self, name):
            return getattr(reg, name)

        def get_schema(self, schema_id):
            asked.append(schema_id)
            return reg.get_schema(schema_id)

    ser = serde.AvroSerializer(Counting(), json.dumps(USER), conf=HEADER)
    for i in range(3):
        produce(ser, {"id": i, "name": "x"})
        produce(ser, {"id": i, "name": "x"}, topic="others")
    assert asked == [reg.get_latest("users-value").id]  # not per message; both subjects hold one schema
    assert produce(ser, {"id": 0, "name": "x"})[1] == [(VALUE_HEADER, guid_header(reg, "users-value"))]


def test_refusals_in_header_mode(backend, reg):
    ser = serde.AvroSerializer(reg, json.dumps(USER), conf=HEADER)
    value = {"id": 1, "name": "x"}
    with pytest.raises(ValueError, match="needs a SerializationContext"):
        serde.AvroSerializer(reg, json.dumps(USER), conf={**HEADER, "subject.name.strategy.type": "RECORD"})(
            value, None
        )
    # confluent-kafka refuses a context without headers too: a list made here would not reach the
    # message (SerializingProducer sends the headers it was given)
    with pytest.raises(ValueError, match="no headers to add __value_schema_id to"):
        ser(value, ctx(None))
    with pytest.raises(ValueError, match="must be a list or a dict.*got tuple"):
        ser(value, ctx(()))
    # a value that does not fit adds no header
    headers: list = []
    with pytest.raises(EncodeError):
        ser({"id": "not a long", "name": "x"}, ctx(headers))
    assert headers == []
    for cls, schema, fits in (
        (serde.JSONSerializer, json.dumps(JSON_USER), value),
        (serde.ProtobufSerializer, Second, {"name": "x", "n": 1}),
    ):
        with pytest.raises(ValueError, match="no headers to add __key_schema_id to"):
            cls(reg, schema, HEADER)(fits, ctx(None, MessageField.KEY, cls.__name__))
    with pytest.raises(ValueError, match="is not supported: use confluent-kafka's prefix_schema_id_serializer"):
        serde.AvroSerializer(reg, json.dumps(USER), conf={"schema.id.serializer": lambda p, c, s: p})


def test_a_registry_without_guids_is_a_clear_error(backend, reg):
    class NoGuids:
        def __getattr__(self, name):
            return getattr(reg, name)

        def get_schema(self, schema_id):
            return dataclasses.replace(reg.get_schema(schema_id), guid=None)

    for ser, value in (
        (serde.AvroSerializer(NoGuids(), json.dumps(USER), conf=HEADER), {"id": 1, "name": "x"}),
        (serde.JSONSerializer(NoGuids(), json.dumps(JSON_USER), conf=HEADER), {"id": 1, "name": "x"}),
        (serde.ProtobufSerializer(NoGuids(), Second, HEADER), {"name": "x", "n": 1}),
    ):
        headers: list = []
        with pytest.raises(RegistryError, match="gives no GUID for schema id .*use prefix_schema_id_serializer"):
            ser(value, ctx(headers, topic=type(ser).__name__))
        assert headers == []
    # the prefix form needs no GUID
    assert serde.AvroSerializer(NoGuids(), json.dumps(USER))({"id": 1, "name": "x"}, ctx(None))[:1] == b"\x00"
