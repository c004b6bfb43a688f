"""ExternalSchemaAdapter: a registry-backed schema through a real broker, including evolution.

The external schema here is a small but real one: JSON record values, writer schemas kept in a
dict keyed by integer id, payloads framed with the Confluent prefix ``00 || u32 BE id``, and reads
resolved against a reader schema (missing fields take their default, extra fields are dropped).
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")

import pulsar
from pulsar.schema import StringSchema

from pulsar_codec import errors, keyvalue, wire
from pulsar_codec import pulsar as pcp
from pulsar_codec.pulsar_types import EncodeData

pytest_plugins = ["pulsar_fixtures"]

V1 = {"fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}]}
V2 = {
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": "string"},
        {"name": "email", "type": "string", "default": "unknown"},
    ]
}
REGISTRY = {1: V1, 2: V2}
_TYPES = {"int": int, "string": str}


class JsonRegistrySchema:
    """Writes with one registered schema id; reads any registered id into the reader schema."""

    def __init__(self, registry, writer_id, reader=None):
        self.registry = registry
        self.writer_id = writer_id
        self.reader = reader or registry[writer_id]
        self.encoded_topics = []
        self.decode_calls = []
        self.closed = False

    def encode(self, topic, value):
        self.encoded_topics.append(topic)
        fields = self.registry[self.writer_id]["fields"]
        record = {}
        for field in fields:
            item = value[field["name"]]
            if not isinstance(item, _TYPES[field["type"]]):
                raise errors.EncodeError(f"field {field['name']} must be {field['type']}")
            record[field["name"]] = item
        body = json.dumps(record, separators=(",", ":")).encode()
        return EncodeData(wire.CONFLUENT.pack(self.writer_id, body), self.writer_id.to_bytes(4, "big"))

    def decode(self, topic, data, schema_id):
        self.decode_calls.append((topic, schema_id))
        writer_id, body = wire.CONFLUENT.unpack(data)
        if schema_id is not None and int.from_bytes(schema_id, "big") != writer_id:
            raise ValueError(f"metadata schema id {schema_id!r} does not match the prefix id {writer_id}")
        if writer_id not in self.registry:
            raise errors.SchemaNotFoundError(f"schema id {writer_id}")
        written = json.loads(bytes(body))
        out = {}
        for field in self.reader["fields"]:
            name = field["name"]
            out[name] = written[name] if name in written else field["default"]
        return out

    def close(self):
        self.closed = True


def test_round_trip_carries_the_id_in_the_payload(pulsar_client, pulsar_topic):
    external = JsonRegistrySchema(REGISTRY, 1)
    adapter = pcp.ExternalSchemaAdapter(external, pulsar_topic)
    producer = pulsar_client.create_producer(pulsar_topic, schema=adapter, batching_enabled=False)
    producer.send({"id": 7, "name": "ada"})
    producer.send(None)  # null value: never reaches the external schema
    producer.close()
    assert adapter.last_schema_id == b"\x00\x00\x00\x01"
    assert external.encoded_topics == [pulsar_topic]

    reader_external = JsonRegistrySchema(REGISTRY, 1)
    reader = pulsar_client.create_reader(
        pulsar_topic, pulsar.MessageId.earliest, schema=pcp.ExternalSchemaAdapter(reader_external)
    )
    msg = reader.read_next(10_000)
    tomb = reader.read_next(10_000)
    reader.close()
    assert msg.data() == b'\x00\x00\x00\x00\x01{"id":7,"name":"ada"}'
    assert msg.value() == {"id": 7, "name": "ada"}
    assert tomb.value() is None
    # decode gets the message's own topic, and no metadata schema id (the Python client has none)
    assert reader_external.decode_calls == [(pulsar_topic, None)]


def test_schema_evolution_two_producers_one_topic(pulsar_client, pulsar_topic):
    old = pulsar_client.create_producer(
        pulsar_topic,
        schema=pcp.ExternalSchemaAdapter(JsonRegistrySchema(REGISTRY, 1), pulsar_topic),
        batching_enabled=False,
    )
    new = pulsar_client.create_producer(
        pulsar_topic,
        schema=pcp.ExternalSchemaAdapter(JsonRegistrySchema(REGISTRY, 2), pulsar_topic),
        batching_enabled=False,
    )
    old.send({"id": 1, "name": "a"})
    new.send({"id": 2, "name": "b", "email": "b@example.org"})
    old.send({"id": 3, "name": "c"})
    new.send({"id": 4, "name": "d", "email": "d@example.org"})
    old.close()
    new.close()

    # the raw topic through the Arrow reader: two ids in the prefixes
    (batch,) = pcp.read_batches(pulsar_client, pulsar_topic)
    framed = wire.unframe(batch.column("payload"), wire.CONFLUENT)
    assert framed.schema_ids.to_pylist() == [1, 2, 1, 2]
    bodies = [json.loads(b) for b in framed.payloads.cast(pa.binary()).to_pylist()]
    assert [b["id"] for b in bodies] == [1, 2, 3, 4]

    # one consumer with the newest schema decodes both versions
    reader = pulsar_client.create_reader(
        pulsar_topic, pulsar.MessageId.earliest, schema=pcp.ExternalSchemaAdapter(JsonRegistrySchema(REGISTRY, 2))
    )
    values = [reader.read_next(10_000).value() for _ in range(4)]
    reader.close()
    assert values == [
        {"id": 1, "name": "a", "email": "unknown"},
        {"id": 2, "name": "b", "email": "b@example.org"},
        {"id": 3, "name": "c", "email": "unknown"},
        {"id": 4, "name": "d", "email": "d@example.org"},
    ]

    # an old reader drops the new field
    reader = pulsar_client.create_reader(
        pulsar_topic, pulsar.MessageId.earliest, schema=pcp.ExternalSchemaAdapter(JsonRegistrySchema(REGISTRY, 1))
    )
    assert [reader.read_next(10_000).value() for _ in range(4)][1] == {"id": 2, "name": "b"}
    reader.close()


def test_unknown_id_surfaces_the_external_schemas_error(pulsar_client, pulsar_topic):
    producer = pulsar_client.create_producer(
        pulsar_topic, schema=pcp.ExternalSchemaAdapter(JsonRegistrySchema({9: V1}, 9)), batching_enabled=False
    )
    producer.send({"id": 1, "name": "x"})
    producer.close()
    reader = pulsar_client.create_reader(
        pulsar_topic, pulsar.MessageId.earliest, schema=pcp.ExternalSchemaAdapter(JsonRegistrySchema(REGISTRY, 1))
    )
    msg = reader.read_next(10_000)
    reader.close()
    with pytest.raises(errors.SchemaNotFoundError, match="9"):
        msg.value()


def test_external_value_inside_a_keyvalue(pulsar_client, pulsar_topic):
    # PIP-420 allows a primitive key next to an external value
    value_schema = pcp.ExternalSchemaAdapter(JsonRegistrySchema(REGISTRY, 2), pulsar_topic)
    schema = pcp.KeyValueSchema(StringSchema(), value_schema, "INLINE")
    producer = pulsar_client.create_producer(pulsar_topic, schema=schema, batching_enabled=False)
    producer.send(pcp.KeyValue("user-1", {"id": 1, "name": "n", "email": "e"}))
    producer.close()
    reader = pulsar_client.create_reader(pulsar_topic, pulsar.MessageId.earliest, schema=schema)
    msg = reader.read_next(10_000)
    reader.close()
    assert msg.value() == pcp.KeyValue("user-1", {"id": 1, "name": "n", "email": "e"})
    _, value = keyvalue.decode_inline(msg.data())
    assert wire.CONFLUENT.unpack(value)[0] == 2


def test_adapter_checks():
    with pytest.raises(TypeError, match="encode"):
        pcp.ExternalSchemaAdapter(object())

    class NoEncodeData:
        def encode(self, topic, value):
            return b"raw bytes"

        def decode(self, topic, data, schema_id):
            return data

    with pytest.raises(errors.EncodeError, match="EncodeData"):
        pcp.ExternalSchemaAdapter(NoEncodeData()).encode("v")

    class NotBytes(NoEncodeData):
        def encode(self, topic, value):
            return EncodeData(data="text", schema_id=None)

    with pytest.raises(errors.EncodeError, match="bytes"):
        pcp.ExternalSchemaAdapter(NotBytes()).encode("v")

    external = JsonRegistrySchema(REGISTRY, 1)
    adapter = pcp.ExternalSchemaAdapter(external, "t")
    assert isinstance(external, pcp.ExternalSchema)
    assert adapter.decode(adapter.encode({"id": 1, "name": "z"})) == {"id": 1, "name": "z"}
    assert external.decode_calls == [("t", None)]
    assert adapter.schema_info().name() == "EXTERNAL" and adapter.schema_info().schema() == ""
    adapter.close()
    assert external.closed
