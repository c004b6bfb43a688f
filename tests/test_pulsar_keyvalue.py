"""KeyValueSchema (INLINE and SEPARATED) and send_keyvalue, through a real broker."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")

import pulsar
from pulsar.schema import AvroSchema, BytesSchema, Integer, Record, String, StringSchema

from pulsar_codec import errors, keyvalue
from pulsar_codec import pulsar as pcp
from pulsar_codec import pulsar_types as pt
from pulsar_codec.pulsar import KeyValue, KeyValueSchema, send_keyvalue

pytest_plugins = ["pulsar_fixtures"]


class Point(Record):
    x = Integer()
    label = String()


def _read_values(client, topic, schema, n):
    reader = client.create_reader(topic, pulsar.MessageId.earliest, schema=schema)
    try:
        return [reader.read_next(10_000) for _ in range(n)]
    finally:
        reader.close()


# -- INLINE -----------------------------------------------------------------------------------------

INLINE_CASES = [
    (KeyValue("k", "v"), b"\x00\x00\x00\x01k\x00\x00\x00\x01v"),
    (KeyValue(None, "v"), bytes.fromhex("FFFFFFFF0000000176")),  # spec K9
    (KeyValue(None, None), bytes.fromhex("FFFFFFFFFFFFFFFF")),  # spec K10
    (KeyValue("", "v"), bytes.fromhex("000000000000000176")),  # spec K11, Java
    (KeyValue("k", None), b"\x00\x00\x00\x01k\xff\xff\xff\xff"),
    (KeyValue("", ""), bytes(8)),
]


def test_inline_round_trip(pulsar_client, pulsar_topic):
    schema = KeyValueSchema(StringSchema(), StringSchema(), "INLINE")
    producer = pulsar_client.create_producer(pulsar_topic, schema=schema, batching_enabled=False)
    for kv, _ in INLINE_CASES:
        producer.send(kv)
    producer.send(("tuple", "ok"))
    producer.send(None)  # a null KeyValue: a null-value message
    producer.close()
    messages = _read_values(
        pulsar_client, pulsar_topic, KeyValueSchema(StringSchema(), StringSchema()), len(INLINE_CASES) + 2
    )
    for msg, (kv, payload) in zip(messages, INLINE_CASES):
        assert msg.data() == payload
        assert msg.value() == kv
        assert isinstance(msg.value(), KeyValue)
    assert messages[-2].value() == KeyValue("tuple", "ok")
    assert messages[-1].has_null_value() and messages[-1].value() is None


def test_inline_with_avro_value_and_send_keyvalue(pulsar_client, pulsar_topic):
    schema = KeyValueSchema(StringSchema(), AvroSchema(Point), pcp.KeyValueEncodingType.INLINE)
    producer = pulsar_client.create_producer(pulsar_topic, schema=schema, batching_enabled=False)
    send_keyvalue(producer, "p1", Point(x=3, label="three"), properties={"src": "py"})
    send_keyvalue(producer, None, Point(x=-1, label=""), partition_key="routing")  # INLINE may route freely
    producer.close()
    first, second = _read_values(pulsar_client, pulsar_topic, schema, 2)
    assert first.value().key == "p1"
    assert (first.value().value.x, first.value().value.label) == (3, "three")
    assert first.properties() == {"src": "py"}
    key, value = keyvalue.decode_inline(first.data())
    assert key == b"p1" and value == AvroSchema(Point).encode(Point(x=3, label="three"))
    assert second.value().key is None and second.partition_key() == "routing"


def test_inline_cpp_convention(pulsar_client, pulsar_topic):
    schema = KeyValueSchema(StringSchema(), StringSchema(), convention="cpp")
    producer = pulsar_client.create_producer(pulsar_topic, schema=schema, batching_enabled=False)
    producer.send(KeyValue("", "v"))
    producer.close()
    (msg,) = _read_values(pulsar_client, pulsar_topic, schema, 1)
    assert msg.data() == bytes.fromhex("FFFFFFFF0000000176")  # spec K11, C++
    assert msg.value() == KeyValue("", "v")
    (java,) = _read_values(pulsar_client, pulsar_topic, KeyValueSchema(StringSchema(), StringSchema()), 1)
    assert java.value() == KeyValue(None, "v")  # what a Java consumer sees


def test_inline_reads_java_payload_and_rejects_garbage(pulsar_client, pulsar_topic):
    k1 = bytes.fromhex("000000050004030408000000050102030405")  # spec K1
    producer = pulsar_client.create_producer(pulsar_topic, batching_enabled=False)
    producer.send(k1)
    producer.send(b"\x00\x00\x00\x09short")
    producer.close()
    good, bad = _read_values(pulsar_client, pulsar_topic, KeyValueSchema(), 2)
    assert good.value() == KeyValue(bytes.fromhex("0004030408"), bytes.fromhex("0102030405"))
    with pytest.raises(errors.KeyValueFormatError):
        bad.value()


# -- SEPARATED --------------------------------------------------------------------------------------

SEPARATED_CASES = [
    (b"\x00\x04\x03\x04\x08", b"value", "AAQDBAg="),  # spec K7
    (b"text", b"", "dGV4dA=="),
    (None, b"no key", ""),
    (b"\xff", None, "/w=="),
    (None, None, ""),
]


def test_separated_round_trip(pulsar_client, pulsar_topic):
    schema = KeyValueSchema(BytesSchema(), BytesSchema(), "SEPARATED")
    producer = pulsar_client.create_producer(pulsar_topic, schema=schema, batching_enabled=False)
    ids = [send_keyvalue(producer, k, v) for k, v, _ in SEPARATED_CASES]
    producer.close()
    messages = _read_values(pulsar_client, pulsar_topic, schema, len(SEPARATED_CASES))
    for msg, (key, value, text) in zip(messages, SEPARATED_CASES):
        assert msg.partition_key() == text
        assert msg.has_null_value() == (value is None)
        if value is not None:
            assert msg.data() == value
        assert msg.value() == KeyValue(key, value)
    assert [m.message_id() for m in messages] == ids

    # the same topic through the Arrow reader
    (batch,) = pcp.read_batches(pulsar_client, pulsar_topic, key_encoding="base64")
    keys, values = pcp.keyvalue_columns(batch, "SEPARATED")
    assert keys.to_pylist() == [k for k, _, _ in SEPARATED_CASES]
    assert values.to_pylist() == [v for _, v, _ in SEPARATED_CASES]


def test_separated_typed_parts_and_empty_key(pulsar_client, pulsar_topic):
    schema = KeyValueSchema(StringSchema(), AvroSchema(Point), "separated")
    producer = pulsar_client.create_producer(pulsar_topic, schema=schema, batching_enabled=False)
    send_keyvalue(producer, "ключ", Point(x=1, label="a"), event_timestamp=42)
    send_keyvalue(producer, "", Point(x=2, label="b"))
    producer.close()
    first, second = _read_values(pulsar_client, pulsar_topic, schema, 2)
    assert first.value().key == "ключ" and first.value().value.x == 1
    assert first.event_timestamp() == 42
    # the Python client cannot send or see an empty partition key: it reads back as a null key
    assert second.partition_key() == "" and second.value().key is None and second.value().value.label == "b"


def test_separated_raw_keys_from_a_cpp_style_producer(pulsar_client, pulsar_topic):
    producer = pulsar_client.create_producer(pulsar_topic, batching_enabled=False)
    producer.send(b"v1", partition_key="plain-key")
    producer.close()
    raw = KeyValueSchema(StringSchema(), BytesSchema(), "SEPARATED", key_encoding="raw")
    (msg,) = _read_values(pulsar_client, pulsar_topic, raw, 1)
    assert msg.value() == KeyValue("plain-key", b"v1")
    (msg,) = _read_values(pulsar_client, pulsar_topic, KeyValueSchema(StringSchema(), BytesSchema(), "SEPARATED"), 1)
    with pytest.raises(errors.KeyValueFormatError):
        msg.value()  # "plain-key" is not Base64


def test_send_keyvalue_through_a_bytes_producer_and_async(pulsar_client, pulsar_topic):
    schema = KeyValueSchema(StringSchema(), StringSchema(), "SEPARATED", key_encoding="raw")
    producer = pulsar_client.create_producer(pulsar_topic, batching_enabled=False)
    send_keyvalue(producer, "k", "v", schema=schema)
    done = threading.Event()
    results = []

    def callback(result, msg_id):
        results.append(result)
        done.set()

    assert send_keyvalue(producer, "k2", "v2", schema=schema, callback=callback) is None
    producer.flush()
    assert done.wait(10) and results == [pulsar.Result.Ok]
    producer.close()
    messages = _read_values(pulsar_client, pulsar_topic, schema, 2)
    assert [m.partition_key() for m in messages] == ["k", "k2"]
    assert [m.value() for m in messages] == [KeyValue("k", "v"), KeyValue("k2", "v2")]


def test_separated_misuse(pulsar_client, pulsar_topic):
    schema = KeyValueSchema(StringSchema(), StringSchema(), "SEPARATED")
    producer = pulsar_client.create_producer(pulsar_topic, schema=schema, batching_enabled=False)
    with pytest.raises(errors.EncodeError, match="send_keyvalue"):
        producer.send(KeyValue("k", "v"))
    with pytest.raises(TypeError, match="partition_key"):
        send_keyvalue(producer, "k", "v", partition_key="other")
    with pytest.raises(errors.SchemaError, match="partition key"):
        schema.decode(b"v")
    producer.close()
    plain = pulsar_client.create_producer(pulsar_topic + "-plain", schema=StringSchema())
    with pytest.raises(TypeError, match="KeyValueSchema"):
        send_keyvalue(plain, "k", "v")
    with pytest.raises(TypeError, match="BytesSchema"):
        send_keyvalue(plain, "k", "v", schema=schema)
    plain.close()


# -- local behaviour ----------------------------------------------------------------------------------


def test_constructor_checks():
    with pytest.raises(TypeError, match="key_schema"):
        KeyValueSchema("not a schema")
    with pytest.raises(ValueError, match="INLINE or SEPARATED"):
        KeyValueSchema(encoding="SIDEWAYS")
    with pytest.raises(ValueError, match="key_encoding"):
        KeyValueSchema(key_encoding="hex")
    with pytest.raises(ValueError, match="convention"):
        KeyValueSchema(convention="rust")
    with pytest.raises(TypeError, match="KeyValue"):
        KeyValueSchema().encode(b"only one part")
    with pytest.raises(TypeError, match="bytes"):
        KeyValueSchema().encode(("str key", b"v"))


def test_raw_separated_key_that_is_not_text():
    schema = KeyValueSchema(encoding="SEPARATED", key_encoding="raw")
    assert schema.encode_message(b"k", b"v") == (b"v", "k")
    with pytest.raises(errors.EncodeError, match="base64"):
        schema.encode_message(b"\xff\x00", b"v")
    assert KeyValueSchema(encoding="SEPARATED").encode_message(b"\xff\x00", b"v") == (b"v", "/wA=")


def test_client_sees_a_bytes_schema():
    info = KeyValueSchema(StringSchema(), AvroSchema(Point), "SEPARATED").schema_info()
    assert info.schema_type() == pulsar.schema.BytesSchema().schema_info().schema_type()
    assert info.name() == "KeyValue" and info.schema() == ""


def test_java_schema_info():
    avro = AvroSchema(Point)
    info = KeyValueSchema(StringSchema(), avro, "SEPARATED").java_schema_info()
    assert info.type is pt.SchemaType.KEY_VALUE and info.name == "KeyValue"
    assert info.properties["kv.encoding.type"] == "SEPARATED"
    assert info.properties["key.schema.type"] == "STRING"
    assert info.properties["value.schema.type"] == "AVRO"
    assert info.properties["value.schema.name"] == avro.schema_info().name()
    key_data, value_data = keyvalue.decode_inline(info.schema)
    assert key_data == b""  # primitive sub-schemas carry no schema data
    assert value_data == avro.schema_info().schema().encode()
    key_info, value_info = pt.decode_keyvalue_schema_info(info)
    assert key_info.type is pt.SchemaType.STRING and value_info.type is pt.SchemaType.AVRO
    assert info.properties["key.schema.name"] == "String"  # Java StringSchema's name
    inline = KeyValueSchema().java_schema_info()
    assert inline.properties["kv.encoding.type"] == "INLINE"
    assert inline.schema == bytes(8)
    assert inline.properties["key.schema.name"] == "Bytes"


def test_java_schema_info_of_an_external_side():
    # the adapter is BYTES towards the client, but Java registers an external side as EXTERNAL
    from pulsar_codec.external import SchemaInfoProviderFactory
    from pulsar_codec.registry import LocalRegistry

    with LocalRegistry(":memory:") as registry:
        value = SchemaInfoProviderFactory(registry).avro_schema("t", {"type": "record", "name": "R", "fields": []})
        info = KeyValueSchema(StringSchema(), pcp.ExternalSchemaAdapter(value), "SEPARATED").java_schema_info()
    assert info.properties["value.schema.type"] == "EXTERNAL"
    _, value_info = pt.decode_keyvalue_schema_info(info)
    assert (value_info.type, value_info.schema) == (pt.SchemaType.EXTERNAL, b"")


def test_keyvalue_columns_inline(backend):
    import pyarrow as pa

    payloads = [keyvalue.encode_inline(b"k%d" % i, None if i == 2 else b"v%d" % i) for i in range(4)]
    batch = pa.RecordBatch.from_arrays(
        [pa.array(payloads + [None], pa.binary())], schema=pa.schema([pa.field("payload", pa.binary())])
    )
    keys, values = pcp.keyvalue_columns(batch, "INLINE")
    assert keys.to_pylist() == [b"k0", b"k1", b"k2", b"k3", None]
    assert values.to_pylist() == [b"v0", b"v1", None, b"v3", None]


def test_package_names_resolve_to_their_modules():
    from pulsar_codec.pulsar import admin, client, reader, schema_info, topic

    homes = {
        admin: ["PulsarAdminError", "TopicPattern", "matching_topics", "namespace_topics"],
        client: ["ExternalSchema", "ExternalSchemaAdapter", "KeyValue", "KeyValueSchema", "send_keyvalue"],
        reader: ["MESSAGE_SCHEMA", "dump_to_parquet", "keyvalue_columns", "read_batches"],
        topic: ["TopicDecoder", "read_decoded"],
        schema_info: ["SchemaType", "SchemaInfo", "EncodeData"],
        keyvalue: ["KeyValueEncodingType"],
    }
    assert sorted(pcp.__all__) == sorted(name for names in homes.values() for name in names)
    for module, names in homes.items():
        for name in names:
            assert getattr(pcp, name) is getattr(module, name), name
            assert name in module.__all__, name
    assert set(pcp.__all__) <= set(dir(pcp))
    assert client.KeyValueEncodingType is keyvalue.KeyValueEncodingType  # still importable from client
    with pytest.raises(AttributeError):
        pcp.no_such_name  # noqa: B018
