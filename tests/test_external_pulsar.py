"""pulsar_codec.external schemas end to end through a real broker (pulsar-lite) and the official
pulsar-client, via pulsar_codec.pulsar.ExternalSchemaAdapter: with the embedded registry, and with
the REST facade reached through the HTTP client."""

from __future__ import annotations

import json
import struct

import pytest

pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")

import pulsar

from pulsar_codec import errors, keyvalue, wire
from pulsar_codec import pulsar as pcp
from pulsar_codec.external import SchemaInfoProviderFactory
from pulsar_codec.registry import LocalRegistry

pytest_plugins = ["pulsar_fixtures"]

USER_V1 = {
    "type": "record",
    "name": "User",
    "namespace": "com.example",
    "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}],
}
USER_V2 = {
    "type": "record",
    "name": "User",
    "namespace": "com.example",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": "string"},
        {"name": "email", "type": ["null", "string"], "default": None},
    ],
}
USER_BAD = {
    "type": "record",
    "name": "User",
    "namespace": "com.example",
    "fields": [{"name": "id", "type": "string"}],
}


@pytest.fixture
def reg():
    with LocalRegistry(":memory:") as registry:
        yield registry


@pytest.fixture(params=["local", "rest"])
def factory(request, reg):
    """The same registry reached directly, or through the REST facade and the HTTP client."""
    if request.param == "local":
        with SchemaInfoProviderFactory(reg) as f:
            yield f
        return
    pytest.importorskip("httpx")
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    from pulsar_codec.registry.server import serve

    with (
        serve(reg) as server,
        SchemaInfoProviderFactory(url=server.url, retries=0) as f,
    ):
        yield f


def _read_all(client, topic, schema, n):
    reader = client.create_reader(topic, pulsar.MessageId.earliest, schema=schema)
    try:
        return [reader.read_next(10_000) for _ in range(n)]
    finally:
        reader.close()


def test_produce_and_consume_dicts(pulsar_client, pulsar_topic, factory, reg):
    schema = factory.avro_schema(pulsar_topic, USER_V1)
    adapter = pcp.ExternalSchemaAdapter(schema, pulsar_topic)
    producer = pulsar_client.create_producer(pulsar_topic, schema=adapter, batching_enabled=False)
    for i in range(3):
        producer.send({"id": i, "name": f"user-{i}"})
    producer.close()
    schema_id = reg.get_latest(f"{pulsar_topic}-value").id
    assert adapter.last_schema_id == struct.pack(">I", schema_id)

    consumer = pulsar_client.subscribe(
        pulsar_topic,
        "sub",
        schema=pcp.ExternalSchemaAdapter(factory.avro_schema(pulsar_topic, USER_V1)),
        initial_position=pulsar.InitialPosition.Earliest,
    )
    try:
        messages = [consumer.receive(10_000) for _ in range(3)]
        for m in messages:
            consumer.acknowledge(m)
    finally:
        consumer.close()
    assert [m.value() for m in messages] == [{"id": i, "name": f"user-{i}"} for i in range(3)]
    assert all(wire.CONFLUENT.unpack(m.data())[0] == schema_id for m in messages)  # framed payloads


def test_schema_evolution_two_producers_and_bulk_decode(pulsar_client, pulsar_topic, factory):
    old = pulsar_client.create_producer(
        pulsar_topic,
        schema=pcp.ExternalSchemaAdapter(factory.avro_schema(pulsar_topic, USER_V1), pulsar_topic),
        batching_enabled=False,
    )
    new = pulsar_client.create_producer(
        pulsar_topic,
        schema=pcp.ExternalSchemaAdapter(factory.avro_schema(pulsar_topic, USER_V2), pulsar_topic),
        batching_enabled=False,
    )
    old.send({"id": 1, "name": "a"})
    new.send({"id": 2, "name": "b", "email": "b@example.org"})
    old.send({"id": 3, "name": "c"})
    new.send({"id": 4, "name": "d", "email": None})
    old.close()
    new.close()
    expected = [
        {"id": 1, "name": "a", "email": None},
        {"id": 2, "name": "b", "email": "b@example.org"},
        {"id": 3, "name": "c", "email": None},
        {"id": 4, "name": "d", "email": None},
    ]
    v2 = factory.avro_schema(pulsar_topic, USER_V2)
    # per message, through the client
    messages = _read_all(pulsar_client, pulsar_topic, pcp.ExternalSchemaAdapter(v2), 4)
    assert [m.value() for m in messages] == expected
    # in bulk, from the Arrow reader
    (batch,) = pcp.read_batches(pulsar_client, pulsar_topic)
    assert len(set(wire.unframe(batch.column("payload")).schema_ids.to_pylist())) == 2
    assert v2.decode_batch(batch.column("payload")).to_pylist() == expected
    # the old reader drops the new field
    v1 = factory.avro_schema(pulsar_topic, USER_V1)
    assert v1.decode(pulsar_topic, messages[1].data()) == {"id": 2, "name": "b"}


def test_incompatible_schema_is_refused(pulsar_client, pulsar_topic, factory, reg):
    factory.avro_schema(pulsar_topic, USER_V1).register()
    bad = factory.avro_schema(pulsar_topic, USER_BAD)
    with pytest.raises(errors.IncompatibleSchemaError):
        bad.register()
    producer = pulsar_client.create_producer(
        pulsar_topic,
        schema=pcp.ExternalSchemaAdapter(bad, pulsar_topic),
        batching_enabled=False,
    )
    try:
        with pytest.raises(errors.IncompatibleSchemaError):
            producer.send({"id": "x"})
    finally:
        producer.close()
    assert reg.list_versions(f"{pulsar_topic}-value") == [1]


def test_keyvalue_external_schema_round_trip(pulsar_client, pulsar_topic, factory, reg):
    kv = factory.keyvalue_schema(pulsar_topic, {"type": "string"}, USER_V2)
    adapter = pcp.ExternalSchemaAdapter(kv, pulsar_topic)
    producer = pulsar_client.create_producer(pulsar_topic, schema=adapter, batching_enabled=False)
    producer.send(pcp.KeyValue("user-1", {"id": 1, "name": "n", "email": "e"}))
    producer.send((None, {"id": 2, "name": "m", "email": None}))
    producer.close()
    key_id = reg.get_latest(f"{pulsar_topic}-key").id
    value_id = reg.get_latest(f"{pulsar_topic}-value").id
    assert adapter.last_schema_id == keyvalue.pack_schema_id(None, struct.pack(">I", value_id))

    messages = _read_all(
        pulsar_client,
        pulsar_topic,
        pcp.ExternalSchemaAdapter(factory.keyvalue_schema(pulsar_topic, {"type": "string"}, USER_V2)),
        2,
    )
    assert messages[0].value() == pcp.KeyValue("user-1", {"id": 1, "name": "n", "email": "e"})
    assert messages[1].value() == (None, {"id": 2, "name": "m", "email": None})
    key_data, value_data = keyvalue.decode_inline(messages[0].data())  # INLINE, each side framed
    assert wire.CONFLUENT.unpack(key_data)[0] == key_id
    assert wire.CONFLUENT.unpack(value_data)[0] == value_id
    batch = kv.decode_batch([m.data() for m in messages])
    assert batch.column("value").to_pylist()[1] == {"id": 2, "name": "m", "email": None}


def test_json_external_schema_through_the_broker(pulsar_client, pulsar_topic, factory):
    person = {"title": "Person", "type": "object"}
    schema = factory.json_schema(pulsar_topic, person)
    producer = pulsar_client.create_producer(
        pulsar_topic,
        schema=pcp.ExternalSchemaAdapter(schema, pulsar_topic),
        batching_enabled=False,
    )
    producer.send({"name": "ada", "tags": ["x"]})
    producer.close()
    (message,) = _read_all(
        pulsar_client,
        pulsar_topic,
        pcp.ExternalSchemaAdapter(factory.json_schema(pulsar_topic, person)),
        1,
    )
    assert message.value() == {"name": "ada", "tags": ["x"]}
    assert json.loads(wire.CONFLUENT.unpack(message.data())[1].tobytes()) == {
        "name": "ada",
        "tags": ["x"],
    }
