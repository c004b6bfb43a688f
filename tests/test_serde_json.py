"""pulsar_codec.serde's JSON pair against confluent-kafka's own JSONSerializer / JSONDeserializer.

Both sides use one embedded registry (confluent-kafka through the REST facade), so schema ids
agree and framed bytes compare byte for byte.
"""

from __future__ import annotations

import decimal
import json
import warnings

import pyarrow as pa
import pytest

pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from pulsar_codec import serde  # noqa: E402
from pulsar_codec.errors import EncodeError, WireFormatError  # noqa: E402
from pulsar_codec.registry import LocalRegistry  # noqa: E402
from pulsar_codec.registry.server import serve  # noqa: E402

with warnings.catch_warnings():
    try:
        import authlib.deprecate  # noqa: F401
    except ImportError:
        pass
    warnings.simplefilter("ignore", DeprecationWarning)
    ck_sr = pytest.importorskip("confluent_kafka.schema_registry")
    ck_json = pytest.importorskip("confluent_kafka.schema_registry.json_schema")
    from confluent_kafka.serialization import MessageField, SerializationContext

ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "customer": {"type": "string"},
        "total": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
        "at": {"type": "string", "format": "date-time"},
        "blob": {"type": "string", "contentEncoding": "base64"},
        "status": {"enum": ["NEW", "PAID"]},
        "extra": {},
        "note": {"type": ["string", "null"]},
    },
    "required": ["id", "customer"],
}
VALUES = [
    {
        "id": 1,
        "customer": 'Zoë "Q" \n 漢字',
        "total": 12.5,
        "tags": ["a", "b"],
        "attrs": {"k": 1},
        "at": "2024-01-02T03:04:05.123456+00:00",
        "blob": "aGk=",
        "status": "PAID",
        "extra": {"free": [1, "x", None]},
        "note": None,
    },
    {
        "id": 2,
        "customer": "",
        "total": 1e-05,
        "tags": [],
        "attrs": {},
        "at": "1970-01-01T00:00:00+00:00",
        "blob": "",
        "status": "NEW",
        "extra": "just a string",
        "note": "n",
    },
]


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


def ctx(topic: str = "orders") -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def test_bytes_equal_confluent_kafka_and_each_reads_the_other(reg, ck_client):
    theirs = ck_json.JSONSerializer(json.dumps(ORDER), ck_client)
    ours = serde.JSONSerializer(reg, json.dumps(ORDER))
    for value in VALUES:
        expected = theirs(value, ctx())
        assert ours(value, ctx()) == expected
    assert reg.get_latest("orders-value").schema_type == "JSON"
    their_reader = ck_json.JSONDeserializer(None, schema_registry_client=ck_client)
    our_reader = serde.JSONDeserializer(reg)
    for value in VALUES:
        assert their_reader(ours(value, ctx()), ctx()) == value
        assert our_reader(theirs(value, ctx()), ctx()) == value


def test_confluent_kafka_client_works_as_our_registry(ck_client):
    ours = serde.JSONSerializer(ck_client, ORDER)
    theirs = ck_json.JSONSerializer(json.dumps(ORDER), ck_client)
    assert ours(VALUES[0], ctx("t2")) == theirs(VALUES[0], ctx("t2"))


def test_decode_batch_gives_typed_columns(reg, ck_client):
    theirs = ck_json.JSONSerializer(json.dumps(ORDER), ck_client)
    messages = [theirs(v, ctx()) for v in VALUES] + [None]
    batch = serde.JSONDeserializer(reg).decode_batch(messages)
    assert batch.num_rows == 3
    assert batch.schema.field("at").type == pa.timestamp("us", "UTC")
    assert batch.column("blob").to_pylist() == [b"hi", b"", None]
    assert batch.column("customer").to_pylist() == [VALUES[0]["customer"], "", None]


def test_validation_and_config(reg):
    ours = serde.JSONSerializer(reg, ORDER)
    with pytest.raises(EncodeError):
        ours({"id": "not a number", "customer": "x"}, ctx())
    with pytest.raises(EncodeError, match="customer"):
        serde.JSONSerializer(reg, ORDER, {"validate": False})({"id": 1}, ctx())
    with pytest.raises(ValueError, match="Unrecognized"):
        serde.JSONSerializer(reg, ORDER, {"no.such.key": 1})
    with pytest.raises(ValueError, match="both"):
        serde.JSONSerializer(reg, ORDER, {"use.latest.version": True})
    assert ours(None, ctx()) is None
    record = serde.JSONSerializer(reg, ORDER, {"subject.name.strategy": serde.record_subject_name_strategy})
    record(VALUES[0], ctx())
    assert "Order" in reg.list_subjects()


def test_an_integer_past_pythons_digit_limit_in_free_json_is_exact(reg):
    # "extra" is free JSON (kept as text by the kernel); json.loads alone refuses > 4300 digits
    big = "9" * 5000
    ours = serde.JSONSerializer(reg, ORDER)
    framed = ours(VALUES[1], ctx())
    body = framed[5:].decode().replace('"just a string"', big)
    value = serde.JSONDeserializer(reg)(framed[:5] + body.encode(), ctx())
    assert value["extra"] == decimal.Decimal(big) and isinstance(value["extra"], decimal.Decimal)


OTHER = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Other", "type": "object",
         "properties": {"x": {"type": "string"}}, "required": ["x"]}  # fmt: skip


def test_use_schema_id_validates_with_that_ids_schema(reg):
    # confluent-kafka validates against the id's schema: the frame names it, not the schema given
    other = reg.register("elsewhere", json.dumps(OTHER), "JSON")
    ser = serde.JSONSerializer(reg, ORDER, {"use.schema.id": other, "auto.register.schemas": False})
    with pytest.raises(EncodeError, match="'x' is a required property"):
        ser(VALUES[0], ctx())
    assert ser({"x": "q"}, ctx()) == b"\x00" + other.to_bytes(4, "big") + b'{"x":"q"}'


def test_use_latest_version_reader_with_a_record_strategy_or_no_context(reg, ck_client):
    # the record strategy names the subject by the writer schema's title (confluent-kafka's order);
    # with no context the message's own schema is read
    strategy = {"subject.name.strategy": ck_sr.record_subject_name_strategy}
    framed = ck_json.JSONSerializer(json.dumps(ORDER), ck_client, conf=strategy)(VALUES[0], ctx())
    conf = {"use.latest.version": True}
    theirs = ck_json.JSONDeserializer(None, schema_registry_client=ck_client, conf={**conf, **strategy})
    ours = serde.JSONDeserializer(reg, conf={**conf, "subject.name.strategy": serde.record_subject_name_strategy})
    assert ours(framed, ctx()) == theirs(framed, ctx()) == VALUES[0]
    assert ours.decode_batch([framed], ctx()).num_rows == 1
    assert serde.JSONDeserializer(reg, conf=conf)(framed, None) == VALUES[0]


def test_a_short_or_unframed_message_raises_its_own_wire_error(reg):
    de = serde.JSONDeserializer(reg)
    with pytest.raises(WireFormatError, match="message of 2 bytes"):
        de(b"\x00\x00", ctx())
    with pytest.raises(WireFormatError, match="invalid magic byte 0x07"):  # not a lookup of id 0x7fffffff
        de(b"\x07\x7f\xff\xff\xff{}", ctx())
