"""pulsar_codec.serde against confluent-kafka's own AvroSerializer / AvroDeserializer.

Both sides talk to the same embedded registry (confluent-kafka through the REST facade), so schema
ids agree and framed bytes can be compared byte for byte. No broker is needed for serde calls.
"""

from __future__ import annotations

import datetime
import decimal
import json
import struct
import uuid
import warnings

import pyarrow as pa
import pytest

pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from pulsar_codec import serde  # noqa: E402
from pulsar_codec.errors import AvroDecodeError, EncodeError, SchemaNotFoundError, WireFormatError  # noqa: E402
from pulsar_codec.pipeline import Decoded  # noqa: E402
from pulsar_codec.registry import LocalRegistry, RegistryConfig  # noqa: E402
from pulsar_codec.registry.server import serve  # noqa: E402

with warnings.catch_warnings():
    # confluent-kafka's schema-registry module imports authlib's deprecated httpx integration (see
    # test_registry_server.py): import authlib first so its "always" filter sits behind ours
    try:
        import authlib.deprecate  # noqa: F401
    except ImportError:
        pass
    warnings.simplefilter("ignore", DeprecationWarning)
    ck_sr = pytest.importorskip("confluent_kafka.schema_registry")
    ck_avro = pytest.importorskip("confluent_kafka.schema_registry.avro")
    from confluent_kafka import KafkaError, Message, SerializingProducer
    from confluent_kafka.serialization import MessageField, SerializationContext

USER = {
    "type": "record",
    "name": "User",
    "namespace": "ex",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "score", "type": "double"},
        {"name": "active", "type": "boolean"},
        {"name": "email", "type": ["null", "string"], "default": None},
    ],
}
USER_V2 = {**USER, "fields": [*USER["fields"], {"name": "team", "type": "string", "default": "none"}]}

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "count", "type": "int"},
        {"name": "ratio", "type": "float"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "blob", "type": "bytes"},
        {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 4}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "at_ns", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
        {"name": "local_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "tod_ms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tod_us", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "wait", "type": {"type": "fixed", "name": "Wait", "size": 12, "logicalType": "duration"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "either", "type": ["string", "long"]},
        {
            "name": "address",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Address",
                    "fields": [
                        {"name": "city", "type": "string"},
                        {"name": "codes", "type": {"type": "map", "values": {"type": "string", "logicalType": "uuid"}}},
                    ],
                },
            ],
            "default": None,
        },
        {
            "name": "lines",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Line",
                    "fields": [
                        {"name": "sku", "type": "string"},
                        {"name": "meta", "type": {"type": "map", "values": "string"}},
                    ],
                },
            },
        },
    ],
}
UTC = datetime.UTC


def user(i: int) -> dict:
    return {
        "id": i,
        "name": f"user{i}",
        "score": i / 8,
        "active": i % 2 == 0,
        "email": None if i % 3 else f"u{i}@x.org",
    }


def order(i: int) -> dict:
    return {
        "id": 10_000_000_000 + i,
        "count": -i,
        "ratio": 0.5 + i,
        "price": decimal.Decimal(f"{i}.25"),
        "status": ["NEW", "PAID", "SHIPPED"][i % 3],
        "tags": [f"t{k}" for k in range(i % 3)],
        "attrs": {f"k{k}": k * i for k in range(i % 4)},
        "blob": bytes(range(i % 7)),
        "digest": b"\x01\x02\x03" + bytes([i % 256]),
        "day": datetime.date(2024, 2, 29) + datetime.timedelta(days=i),
        "at_ms": datetime.datetime(2024, 5, 1, 12, 30, 15, 123000, tzinfo=UTC) + datetime.timedelta(seconds=i),
        "at_us": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - datetime.timedelta(days=i),
        "at_ns": 1_700_000_000_123_456_789 + i,
        "local_ms": datetime.datetime(2023, 1, 2, 3, 4, 5, 6000) + datetime.timedelta(minutes=i),
        "tod_ms": datetime.time(8, 15, 30, 250000),
        "tod_us": datetime.time(23, 59, 59, 999999),
        "uid": uuid.UUID(int=i * 7919 + 1),
        "wait": struct.pack("<III", i, 2, 3000),
        "note": None if i % 2 else f"note {i}",
        "either": i if i % 2 else f"s{i}",
        "address": None if i % 3 == 0 else {"city": f"c{i}", "codes": {"a": uuid.UUID(int=i)}},
        "lines": [{"sku": f"s{k}", "meta": {"m": str(k)}} for k in range(i % 3)],
    }


def text(schema: dict) -> str:
    return json.dumps(schema)


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


def ctx(topic: str = "orders", field=MessageField.VALUE) -> SerializationContext:
    return SerializationContext(topic, field)


def ck_serializer(client, schema: dict, **conf):
    # confluent-kafka's default strategy asks the registry for topic associations first; name the
    # topic strategy it then falls back to, so nothing depends on the facade's 404 for that call
    return ck_avro.AvroSerializer(
        client, text(schema), conf={"subject.name.strategy": ck_sr.topic_subject_name_strategy, **conf}
    )


def ck_deserializer(client, reader: dict | None = None):
    return ck_avro.AvroDeserializer(
        client,
        None if reader is None else text(reader),
        conf={"subject.name.strategy": ck_sr.topic_subject_name_strategy},
    )


def assert_same_values(ours, theirs) -> None:
    """Equal, with the same Python types all the way down (a tz-aware datetime's zone included)."""
    assert ours == theirs
    assert type(ours) is type(theirs), (ours, theirs)
    if isinstance(ours, dict):
        for key in ours:
            assert_same_values(ours[key], theirs[key])
    elif isinstance(ours, list):
        for a, b in zip(ours, theirs):
            assert_same_values(a, b)
    elif isinstance(ours, datetime.datetime):
        assert ours.tzinfo is theirs.tzinfo


# -- interoperability with confluent-kafka ------------------------------------------------------------


@pytest.mark.parametrize("schema, make", [(USER, user), (ORDER, order)], ids=["user", "order"])
def test_bytes_identical_to_confluent_kafka(backend, reg, ck_client, schema, make):
    ours = serde.AvroSerializer(reg, text(schema))
    theirs = ck_serializer(ck_client, schema)
    for i in range(7):
        value = make(i)
        assert ours(value, ctx()) == theirs(value, ctx())
    assert reg.list_subjects() == ["orders-value"]


def test_serializer_on_confluent_kafka_client(backend, ck_client):
    ours = serde.AvroSerializer(ck_client, text(ORDER))
    theirs = ck_serializer(ck_client, ORDER)
    assert ours(order(4), ctx()) == theirs(order(4), ctx())


@pytest.mark.parametrize("schema, make", [(USER, user), (ORDER, order)], ids=["user", "order"])
def test_reads_what_confluent_kafka_writes_and_back(backend, reg, ck_client, schema, make):
    ck_ser, ck_de = ck_serializer(ck_client, schema), ck_deserializer(ck_client)
    ours_ser, ours_de = serde.AvroSerializer(reg, text(schema)), serde.AvroDeserializer(reg)
    for i in range(7):
        value = make(i)
        theirs_read = ck_de(ck_ser(value, ctx()), ctx())
        assert_same_values(ours_de(ck_ser(value, ctx()), ctx()), theirs_read)
        assert_same_values(ck_de(ours_ser(value, ctx()), ctx()), theirs_read)


MIXED = {
    "type": "record",
    "name": "Mixed",
    "namespace": "com.example",
    "fields": [
        {"name": "id", "type": "long"},
        {
            "name": "v",
            "type": [
                "null",
                {"type": "map", "values": "long"},
                {"type": "long", "logicalType": "timestamp-millis"},
                {"type": "string", "logicalType": "uuid"},
            ],
        },
        {"name": "team", "type": "string", "default": "none"},
    ],
}


def test_general_unions_and_missing_defaults_match_confluent_kafka(backend, reg, ck_client):
    # a union whose branches convert (map, timestamp, uuid): one value does not say its branch, so
    # these messages are read as a one-message batch; a missing field takes its default
    ck_ser, ck_de = ck_serializer(ck_client, MIXED), ck_deserializer(ck_client)
    ours_ser, ours_de = serde.AvroSerializer(reg, text(MIXED)), serde.AvroDeserializer(reg)
    stamp = datetime.datetime(2024, 5, 1, 12, 30, 15, 123000, tzinfo=UTC)
    for value in ({"id": 1, "v": {"a": 1}}, {"id": 2, "v": stamp}, {"id": 3, "v": uuid.UUID(int=3)}, {"id": 4}):
        full = {"v": None, "team": "none", **value}
        assert ours_ser(value, ctx()) == ck_ser(full, ctx())
        assert_same_values(ours_de(ours_ser(value, ctx()), ctx()), ck_de(ck_ser(full, ctx()), ctx()))


def test_deserializer_on_confluent_kafka_client(backend, ck_client):
    framed = ck_serializer(ck_client, ORDER)(order(2), ctx())
    assert_same_values(serde.AvroDeserializer(ck_client)(framed, ctx()), ck_deserializer(ck_client)(framed, ctx()))


def test_reader_schema_resolution_matches_confluent_kafka(backend, reg, ck_client):
    framed = ck_serializer(ck_client, USER)(user(3), ctx())
    ours = serde.AvroDeserializer(reg, reader_schema=USER_V2)(framed, ctx())
    assert ours == ck_deserializer(ck_client, USER_V2)(framed, ctx())
    assert ours["team"] == "none"


def test_drops_into_serializing_producer(backend, reg):
    received = []
    producer = SerializingProducer(
        {
            "bootstrap.servers": "127.0.0.1:9",  # never reached: produce() serializes and queues
            "key.serializer": serde.AvroSerializer(reg, '"string"'),
            "value.serializer": serde.AvroSerializer(reg, text(USER)),
            "log_level": 0,
        }
    )
    producer.produce("users", key="k1", value=user(1), on_delivery=lambda err, msg: received.append((err, msg)))
    producer.purge()
    producer.flush(5)
    [(err, msg)] = received  # queued, then purged before any broker saw it
    assert err.code() == KafkaError._PURGE_QUEUE
    assert serde.AvroDeserializer(reg)(msg.value(), ctx("users")) == user(1)
    assert sorted(reg.list_subjects()) == ["users-key", "users-value"]


# -- batches --------------------------------------------------------------------------------------------


def test_decode_batch_equals_per_message(backend, reg):
    ser = serde.AvroSerializer(reg, text(USER))
    values = [user(i) for i in range(50)]
    framed = [ser(v, ctx()) for v in values]
    framed[7] = None
    de = serde.AvroDeserializer(reg)
    batch = de.decode_batch(framed)
    assert isinstance(batch, pa.RecordBatch) and batch.num_rows == 50
    rows = batch.to_pylist()
    assert rows[7] == dict.fromkeys(rows[7])  # a None message is a null row
    assert [r for i, r in enumerate(rows) if i != 7] == [de(m, ctx()) for i, m in enumerate(framed) if i != 7]
    # an Arrow array and confluent-kafka Message objects give the same batch
    assert de.decode_batch(pa.array(framed, pa.binary())).equals(batch)
    assert de.decode_batch([Message(value=m, topic="orders") for m in framed]).equals(batch)


def test_decode_batch_rich_schema_matches_per_message(backend, reg):
    ser = serde.AvroSerializer(reg, text(ORDER))
    framed = [ser(order(i), ctx()) for i in range(12)]
    de = serde.AvroDeserializer(reg)
    batch = de.decode_batch(framed)
    assert batch.schema.field("status").type == pa.dictionary(pa.int32(), pa.string())
    per_message = [de(m, ctx()) for m in framed]
    assert batch.column("price").to_pylist() == [v["price"] for v in per_message]
    assert batch.column("attrs").to_pylist() == [list(v["attrs"].items()) for v in per_message]
    assert batch.column("uid").to_pylist() == [str(v["uid"]) for v in per_message]
    assert batch.column("at_ms").to_pylist() == [v["at_ms"] for v in per_message]


def test_decode_batch_mixed_schema_versions(backend, reg):
    v1 = serde.AvroSerializer(reg, text(USER))(user(1), ctx())
    v2 = serde.AvroSerializer(reg, text(USER_V2))({**user(2), "team": "red"}, ctx())
    de = serde.AvroDeserializer(reg)
    rows = de.decode_batch([v1, v2]).to_pylist()  # read as the newest writer schema
    assert [r["team"] for r in rows] == ["none", "red"]
    assert de(v1, ctx()) == user(1)  # one message alone reads as its own writer schema


def test_decode_batch_on_error_null(backend, reg):
    ser = serde.AvroSerializer(reg, text(USER))
    good = ser(user(4), ctx())
    de = serde.AvroDeserializer(reg)
    result = de.decode_batch([good, b"\x07bad", good[:-3]], on_error="null")
    assert isinstance(result, Decoded)
    assert result.batch.column("id").to_pylist() == [4, None, None]
    assert result.errors.column("index").to_pylist() == [1, 2]
    with pytest.raises(WireFormatError):
        de.decode_batch([good, b"\x07bad"])


# -- None, errors, configuration ------------------------------------------------------------------------


def test_none_in_none_out(reg):
    assert serde.AvroSerializer(reg, text(USER))(None, ctx()) is None
    assert serde.AvroDeserializer(reg)(None, ctx()) is None
    assert reg.list_subjects() == []  # nothing registered for a None value


def test_bad_messages_raise(backend, reg):
    framed = serde.AvroSerializer(reg, text(USER))(user(1), ctx())
    de = serde.AvroDeserializer(reg)
    with pytest.raises(WireFormatError):
        de(b"\x07" + framed[1:], ctx())
    with pytest.raises(SchemaNotFoundError):  # 01: a GUID prefix (as confluent-kafka reads it), unknown here
        de(b"\x01" + bytes(16) + framed[5:], ctx())
    with pytest.raises(AvroDecodeError):
        de(framed[:-4], ctx())
    with pytest.raises(SchemaNotFoundError):
        de(b"\x00\x00\x00\x00\x63" + framed[5:], ctx())


def test_values_that_do_not_fit_raise(backend, reg):
    ser = serde.AvroSerializer(reg, text(USER))
    with pytest.raises(EncodeError):
        ser({"id": "not a number", "name": "x", "score": 1.0, "active": True}, ctx())
    with pytest.raises(EncodeError):
        ser({"id": 1, "name": None, "score": 1.0, "active": True}, ctx())
    with pytest.raises(EncodeError):
        serde.AvroSerializer(reg, text(ORDER))({**order(1), "either": 1.5}, ctx("other"))


@pytest.mark.parametrize(
    "conf, message",
    [
        ({"no.such.key": 1}, "Unrecognized properties: no.such.key"),
        ({"auto.register.schemas": "yes"}, "auto.register.schemas must be a boolean"),
        ({"normalize.schemas": 1}, "normalize.schemas must be a boolean"),
        ({"use.latest.version": True}, "cannot enable both use.latest.version and auto.register.schemas"),
        ({"use.schema.id": "7"}, "use.schema.id must be an int"),
        ({"subject.name.strategy": "topic"}, "subject.name.strategy must be callable"),
        ({"subject.name.strategy.type": "ASSOCIATED"}, "is not supported"),
        ({"validate.strict": True}, "Unsupported properties: validate.strict"),
    ],
)
def test_serializer_conf_validation(reg, conf, message):
    with pytest.raises(ValueError, match=message):
        serde.AvroSerializer(reg, text(USER), conf=conf)


def test_unknown_keys_raise_like_confluent_kafka(reg, ck_client):
    with pytest.raises(ValueError, match="Unrecognized properties"):
        ck_avro.AvroSerializer(ck_client, text(USER), conf={"no.such.key": 1})
    with pytest.raises(ValueError, match="Unrecognized properties"):
        serde.AvroDeserializer(reg, conf={"auto.register.schemas": True})  # a serializer-only key


def test_schema_required_without_latest_or_id(reg):
    with pytest.raises(ValueError, match="a schema is needed"):
        serde.AvroSerializer(reg)


# -- subjects -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "strategy, subject",
    [
        (serde.topic_subject_name_strategy, "orders-value"),
        (serde.record_subject_name_strategy, "ex.User"),
        (serde.topic_record_subject_name_strategy, "orders-ex.User"),
        (ck_sr.record_subject_name_strategy, "ex.User"),
        (ck_sr.topic_record_subject_name_strategy, "orders-ex.User"),
    ],
)
def test_subject_name_strategies(reg, strategy, subject):
    ser = serde.AvroSerializer(reg, text(USER), conf={"subject.name.strategy": strategy})
    framed = ser(user(1), ctx())
    assert reg.list_subjects() == [subject]
    assert int.from_bytes(framed[1:5], "big") == reg.get_latest(subject).id


def test_strategy_type_and_key_field(reg):
    serde.AvroSerializer(reg, text(USER), conf={"subject.name.strategy.type": "record"})(user(1), ctx())
    serde.AvroSerializer(reg, '"string"')("k", ctx("orders", MessageField.KEY))
    serde.AvroSerializer(reg, '"long"')(5, serde.SerializationContext("clicks", serde.MessageField.KEY))
    assert sorted(reg.list_subjects()) == ["clicks-key", "ex.User", "orders-key"]


def test_topic_strategy_needs_a_context(reg):
    with pytest.raises(ValueError, match="SerializationContext"):
        serde.AvroSerializer(reg, text(USER))(user(1))


def test_ids_match_confluent_kafka_for_every_strategy(reg, ck_client):
    for strategy in (ck_sr.record_subject_name_strategy, ck_sr.topic_record_subject_name_strategy):
        ours = serde.AvroSerializer(reg, text(USER), conf={"subject.name.strategy": strategy})
        theirs = ck_avro.AvroSerializer(ck_client, text(USER), conf={"subject.name.strategy": strategy})
        assert ours(user(2), ctx()) == theirs(user(2), ctx())


def test_auto_register_off_looks_the_schema_up(reg):
    ser = serde.AvroSerializer(reg, text(USER), conf={"auto.register.schemas": False})
    with pytest.raises(SchemaNotFoundError):
        ser(user(1), ctx())
    schema_id = reg.register("orders-value", text(USER))
    assert serde.AvroSerializer(reg, text(USER), conf={"auto.register.schemas": False})(user(1), ctx())[1:5] == (
        schema_id.to_bytes(4, "big")
    )


def test_use_latest_version(backend, reg):
    reg.register("orders-value", text(USER))
    latest = reg.register("orders-value", text(USER_V2))
    ser = serde.AvroSerializer(reg, conf={"auto.register.schemas": False, "use.latest.version": True})
    framed = ser(user(1), ctx())  # "team" is missing: the latest schema's default is written
    assert int.from_bytes(framed[1:5], "big") == latest
    assert serde.AvroDeserializer(reg)(framed, ctx()) == {**user(1), "team": "none"}
    old = serde.AvroSerializer(reg, text(USER))(user(2), ctx())
    reader = serde.AvroDeserializer(reg, conf={"use.latest.version": True})
    assert reader(old, ctx()) == {**user(2), "team": "none"}
    assert reader.decode_batch([old], ctx()).column("team").to_pylist() == ["none"]


def test_use_schema_id(reg):
    schema_id = reg.register("anything", text(USER))
    framed = serde.AvroSerializer(reg, conf={"use.schema.id": schema_id, "auto.register.schemas": False})(
        user(3), ctx()
    )
    assert framed[1:5] == schema_id.to_bytes(4, "big") and reg.list_subjects() == ["anything"]


def test_normalize_schemas_registers_the_same_schema(reg):
    spaced = json.dumps(USER, indent=4)
    a = serde.AvroSerializer(reg, spaced, conf={"normalize.schemas": True})(user(1), ctx())
    b = serde.AvroSerializer(reg, text(USER))(user(1), ctx())
    assert a == b and reg.list_versions("orders-value") == [1]


# -- registries and callables ---------------------------------------------------------------------------


def test_registry_as_url_config_and_path(backend, reg, server, tmp_path):
    expected = serde.AvroSerializer(reg, text(USER))(user(5), ctx())
    for registry in (server.url, RegistryConfig(url=server.url)):
        with serde.AvroSerializer(registry, text(USER)) as ser, serde.AvroDeserializer(registry) as de:
            assert ser(user(5), ctx()) == expected
            assert de(expected, ctx()) == user(5)
    path = str(tmp_path / "registry.db")
    with serde.AvroSerializer(path, text(USER)) as ser, serde.AvroDeserializer(RegistryConfig(path=path)) as de:
        assert de(ser(user(6), ctx()), ctx()) == user(6)
    ser.close()  # closing twice, or a client the caller owns, is harmless
    serde.AvroSerializer(reg, text(USER)).close()
    assert reg.list_subjects() == ["orders-value"]


def test_to_dict_and_from_dict(reg):
    class User:
        def __init__(self, **fields):
            self.__dict__.update(fields)

    to_dict = lambda obj, c: dict(obj.__dict__)  # noqa: E731
    from_dict = lambda d, c: User(**d)  # noqa: E731
    framed = serde.AvroSerializer(reg, text(USER), to_dict=to_dict)(User(**user(1)), ctx())
    positional = serde.AvroSerializer(reg, text(USER), to_dict, {"auto.register.schemas": False})  # confluent's order
    assert positional(User(**user(1)), ctx()) == framed
    back = serde.AvroDeserializer(reg, from_dict=from_dict)(framed, ctx())
    assert isinstance(back, User) and back.__dict__ == user(1)
    with pytest.raises(ValueError, match="to_dict must be callable"):
        serde.AvroSerializer(reg, text(USER), to_dict=42)  # type: ignore[arg-type]


def test_non_record_schemas(backend, reg, ck_client):
    cases = [('"string"', "héllo"), ('"bytes"', b"\x00\x01"), ('{"type": "array", "items": "int"}', [1, 2])]
    for i, (schema, value) in enumerate(cases):
        ours = serde.AvroSerializer(reg, schema)(value, ctx(f"plain{i}"))
        theirs = ck_avro.AvroSerializer(
            ck_client, schema, conf={"subject.name.strategy": ck_sr.topic_subject_name_strategy}
        )
        assert ours == theirs(value, ctx(f"plain{i}"))
        assert serde.AvroDeserializer(reg)(ours, ctx(f"plain{i}")) == value


def test_bytes_schema_is_framed_raw_like_confluent_kafka(backend, reg, ck_client):
    # Confluent's serializers write a plain bytes value without the Avro length prefix
    ours = serde.AvroSerializer(reg, '"bytes"')(b"\x00raw", ctx("blobs"))
    assert ours == ck_serializer(ck_client, "bytes")(b"\x00raw", ctx("blobs"))
    assert ours[5:] == b"\x00raw"
    de = serde.AvroDeserializer(reg)
    assert de(ours, ctx("blobs")) == ck_deserializer(ck_client)(ours, ctx("blobs")) == b"\x00raw"
    assert de.decode_batch([ours, None]).column("value").to_pylist() == [b"\x00raw", None]
    assert serde.AvroDeserializer(reg, reader_schema="bytes").decode_batch([ours]).num_rows == 1


def test_an_unknown_id_through_confluent_kafka_s_client_is_an_error_row(backend, reg, ck_client):
    """confluent-kafka's client says "not found" with its own SchemaRegistryError (HTTP 404): the
    decoders read it as this package's clients' SchemaNotFoundError, an error row with
    on_error="null" (code SCHEMA_NOT_FOUND), not an exception for the whole batch."""
    import pulsar_codec as pc
    from pulsar_codec.errors import ErrorCode

    schema_id = reg.register("orders-value", json.dumps(USER))
    good = ck_serializer(ck_client, USER)(user(1), ctx())
    unknown = b"\x00" + (schema_id + 998).to_bytes(4, "big") + good[5:]
    batch, errors = pc.decode([good, unknown, good], ck_client, on_error="null")
    assert errors.column("index").to_pylist() == [1]
    assert errors.column("code").to_pylist() == [int(ErrorCode.SCHEMA_NOT_FOUND)]
    assert batch.column("name").to_pylist()[::2] == [user(1)["name"]] * 2
    with pytest.raises(SchemaNotFoundError) as raised:
        pc.decode([good, unknown], ck_client)
    assert raised.value.index == 1


# -- configuration parity with confluent-kafka ----------------------------------------------------------

OTHER = {"type": "record", "name": "Other", "namespace": "ex", "fields": [{"name": "x", "type": "string"}]}


def test_use_schema_id_writes_with_that_ids_schema_like_confluent_kafka(backend, reg, ck_client):
    # the frame names the id, so the body is written with the id's schema, not the one given
    schema_id = reg.register("orders-value", text(USER))
    conf = {"use.schema.id": schema_id, "auto.register.schemas": False}
    value = {**user(1), "team": "red"}
    ours = serde.AvroSerializer(reg, text(USER_V2), conf=conf)(value, ctx())
    assert ours == ck_serializer(ck_client, USER_V2, **conf)(value, ctx())
    assert serde.AvroDeserializer(reg)(ours, ctx()) == user(1)
    other = reg.register("elsewhere", text(OTHER))
    with pytest.raises(EncodeError):  # a USER value does not fit Other: no frame of id `other` holding a User
        serde.AvroSerializer(reg, text(USER), conf={**conf, "use.schema.id": other})(user(1), ctx())


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (serde.record_subject_name_strategy, ck_sr.record_subject_name_strategy),
        (serde.topic_record_subject_name_strategy, ck_sr.topic_record_subject_name_strategy),
    ],
    ids=["record", "topic_record"],
)
def test_use_latest_version_reader_with_a_record_strategy(backend, reg, ck_client, ours, theirs):
    # the strategy needs a record name: the writer schema's, as confluent-kafka's deserializer uses
    old = ck_avro.AvroSerializer(ck_client, text(USER), conf={"subject.name.strategy": theirs})(user(2), ctx())
    ck_avro.AvroSerializer(ck_client, text(USER_V2), conf={"subject.name.strategy": theirs})(user(3), ctx())
    conf = {"use.latest.version": True}
    expected = ck_avro.AvroDeserializer(ck_client, conf={**conf, "subject.name.strategy": theirs})(old, ctx())
    de = serde.AvroDeserializer(reg, conf={**conf, "subject.name.strategy": ours})
    assert de(old, ctx()) == expected == {**user(2), "team": "none"}
    assert de.decode_batch([old], ctx()).to_pylist() == [expected]


def test_use_latest_version_reader_without_a_context_reads_the_writer_schema(backend, reg, ck_client):
    old = ck_serializer(ck_client, USER)(user(4), ctx())
    ck_serializer(ck_client, USER_V2)(user(5), ctx())
    conf = {"use.latest.version": True}
    expected = ck_avro.AvroDeserializer(
        ck_client, conf={**conf, "subject.name.strategy": ck_sr.topic_subject_name_strategy}
    )(old, None)
    assert serde.AvroDeserializer(reg, conf=conf)(old, None) == expected == user(4)


def test_schema_id_placement_keys(backend, reg):
    framed = serde.AvroSerializer(reg, text(USER))(user(1), ctx())
    ser = serde.AvroSerializer(reg, text(USER), conf={"schema.id.serializer": ck_sr.prefix_schema_id_serializer})
    assert ser(user(1), ctx()) == framed
    de = serde.AvroDeserializer(reg, conf={"schema.id.deserializer": ck_sr.prefix_schema_id_deserializer})
    assert de(framed, ctx()) == user(1)
    # header_schema_id_serializer: the payload unprefixed, 01 + GUID in the header (tests/test_serde_header_writer.py)
    in_header = serde.AvroSerializer(reg, text(USER), conf={"schema.id.serializer": ck_sr.header_schema_id_serializer})
    headers: list = []
    assert in_header(user(1), SerializationContext("orders", MessageField.VALUE, headers)) == framed[5:]
    assert [(name, value[:1], len(value)) for name, value in headers] == [("__value_schema_id", b"\x01", 17)]
    dual = serde.AvroDeserializer(reg, conf={"schema.id.deserializer": ck_sr.dual_schema_id_deserializer})
    assert dual(framed, ctx()) == user(1)  # confluent-kafka's default: headers, then the prefix
    with pytest.raises(ValueError, match="Unrecognized properties: schema.id.deserializer"):
        serde.AvroSerializer(reg, text(USER), conf={"schema.id.deserializer": ck_sr.prefix_schema_id_deserializer})
    with pytest.raises(ValueError, match="is not supported"):
        serde.AvroSerializer(reg, text(USER), conf={"schema.id.serializer": lambda payload, c, schema_id: payload})


def test_deserializer_takes_confluent_kafka_s_positional_order(backend, reg):
    framed = serde.AvroSerializer(reg, text(USER))(user(1), ctx())
    # (client, schema_str, from_dict, return_record_name, conf)
    de = serde.AvroDeserializer(reg, text(USER_V2), None, False, {"use.latest.version": False})
    assert de(framed, ctx()) == {**user(1), "team": "none"}
    assert serde.AvroDeserializer(reg, return_record_name=False)(framed, ctx()) == user(1)
    with pytest.raises(ValueError, match="return_record_name=True is not supported"):
        serde.AvroDeserializer(reg, return_record_name=True)
    with pytest.raises(ValueError, match="Unrecognized properties"):
        serde.AvroDeserializer(reg, None, None, False, {"no.such.key": 1})
