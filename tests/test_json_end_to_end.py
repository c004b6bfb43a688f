"""JSON payloads end to end (issue 11, item 6): Spark decode/encode, ``pulsar-codec decode``, Pulsar's
own ``JsonSchema`` through pulsar-lite, and confluent-kafka's ``JSONSerializer`` decoded in bulk.

Each part skips with its reason when its optional dependency (PySpark + Java, pulsar-client +
pulsar-lite, confluent-kafka + the REST facade) is missing.
"""

from __future__ import annotations

import datetime as dt
import json
import warnings

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pulsar_codec as pc
from pulsar_codec import wire
from pulsar_codec.cli import app as cli_app
from pulsar_codec.errors import ErrorCode
from pulsar_codec.registry import LocalRegistry

pytest_plugins = ["spark_fixtures", "pulsar_fixtures"]

UTC = dt.UTC
DRAFT7 = "http://json-schema.org/draft-07/schema#"

# one JSON Schema subject used by the Spark and CLI parts: nested object, array, map, date-time,
# enum and nullable properties
EVENT = {
    "$schema": DRAFT7,
    "title": "Event",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": ["string", "null"]},
        "at": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "place": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
            "required": ["city"],
        },
        "level": {"type": "string", "enum": ["LOW", "HIGH"]},
        "score": {"type": "number"},
    },
    "required": ["id", "at"],
}

EVENT_PAYLOADS = [
    b'{"id": 1, "name": "ann", "at": "2024-01-02T03:04:05.123456Z", "tags": ["a", "b"],'
    b' "counts": {"x": 1, "y": 2}, "place": {"city": "Delft", "zip": 2611}, "level": "HIGH", "score": 2.5}',
    # any key order, whitespace, escapes, unknown keys skipped, absent optional properties are null
    b'\n{ "at" : "1970-01-01T00:00:00+01:00", "unknown": {"deep": [1, 2, {"k": null}]},\n'
    b'  "id": 2, "name": "\\u00e9\\ud83d\\ude00", "tags": [] }  ',
    b'{"id": 3, "name": null, "at": "2000-02-29T12:00:00.5-02:30", "place": {"city": ""}, "level": "LOW"}',
]

EVENT_VALUES = [
    {
        "id": 1,
        "name": "ann",
        "at": dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
        "tags": ["a", "b"],
        "counts": [("x", 1), ("y", 2)],
        "place": {"city": "Delft", "zip": 2611},
        "level": "HIGH",
        "score": 2.5,
    },
    {
        "id": 2,
        "name": "\u00e9\U0001f600",
        "at": dt.datetime(1969, 12, 31, 23, 0, tzinfo=UTC),
        "tags": [],
        "counts": None,
        "place": None,
        "level": None,
        "score": None,
    },
    {
        "id": 3,
        "name": None,
        "at": dt.datetime(2000, 2, 29, 14, 30, 0, 500000, tzinfo=UTC),
        "tags": None,
        "counts": None,
        "place": {"city": "", "zip": None},
        "level": "LOW",
        "score": None,
    },
]


def _as_utc(value):
    """Timestamps compared as instants (Spark and Parquet may hand back another tzinfo object)."""
    if isinstance(value, dt.datetime):
        return value.astimezone(UTC)
    if isinstance(value, dict):
        return {k: _as_utc(v) for k, v in value.items()}
    return value


@pytest.fixture
def event_registry(tmp_path):
    """A registry file holding the Event JSON Schema (and one Avro subject, so ids are not all JSON)."""
    reg = LocalRegistry(tmp_path / "schemas.db")
    reg.register("other-value", '{"type": "record", "name": "O", "fields": [{"name": "a", "type": "long"}]}')
    sid = reg.register("events-value", json.dumps(EVENT), schema_type="JSON")
    yield reg, sid
    reg.close()


TRUNCATED = b'{"id": 4, "at": "2024-01-01T00:00:00Z"'


def event_messages(sid):
    """Good rows, a null row, a bad JSON row, a schema mismatch and an unknown id; and the errors."""
    good = [wire.CONFLUENT.pack(sid, p) for p in EVENT_PAYLOADS]
    messages = [
        good[0],
        None,
        wire.CONFLUENT.pack(sid, TRUNCATED),
        good[1],
        wire.CONFLUENT.pack(sid, b'{"id": "five", "at": "2024-01-01T00:00:00Z"}'),  # wrong type
        wire.CONFLUENT.pack(9999, EVENT_PAYLOADS[0]),  # an id no registry knows
        good[2],
    ]
    values = [EVENT_VALUES[0], None, None, EVENT_VALUES[1], None, None, EVENT_VALUES[2]]
    errors = {
        2: (ErrorCode.JSON_TRUNCATED, len(TRUNCATED)),  # the offset is the payload's end
        4: (ErrorCode.JSON_WRONG_TYPE, 7),
        5: (ErrorCode.SCHEMA_NOT_FOUND, 0),
    }
    return messages, values, errors


# -- pc.decode in bulk: the baseline every other path must equal ------------------------------------


def test_bulk_decode_of_the_event_messages(event_registry):
    reg, sid = event_registry
    messages, values, errors = event_messages(sid)
    result = pc.decode(messages, reg, on_error="null")
    assert result.batch.schema.field("at").type == pa.timestamp("us", "UTC")
    assert result.batch.schema.field("level").type == pa.dictionary(pa.int32(), pa.string())
    rows = result.batch.to_pylist()
    assert [None if i in errors or m is None else r for i, (r, m) in enumerate(zip(rows, messages))] == values
    found = {i: (c, o) for i, c, o in zip(*(result.errors[k].to_pylist() for k in ("index", "code", "offset")))}
    assert found == errors


# -- Spark ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_spark_decode_and_json_encode_round_trip(spark, event_registry):
    pytest.importorskip("pyspark")
    from pulsar_codec.integrations import spark as pcs

    reg, sid = event_registry
    messages, values, errors = event_messages(sid)
    df = spark.createDataFrame(list(enumerate(messages)), "k long, value binary").repartition(2)
    out = pcs.decode(df, "value", registry=reg)
    assert out.columns == ["k", "decoded", "decode_error"]  # the messages stay behind ...
    rows = sorted(out.collect(), key=lambda r: r["k"])
    # ... but a bad row's bytes are in its error
    assert {i: r["decode_error"]["payload"] for i, r in enumerate(rows) if r["decode_error"]} == {
        i: messages[i] for i in errors
    }
    decoded = [None if r["decoded"] is None else _as_utc(r["decoded"].asDict(recursive=True)) for r in rows]
    # Spark holds a map as a dict
    assert decoded == [None if v is None else {**v, "counts": v["counts"] and dict(v["counts"])} for v in values]
    found = {
        i: (r["decode_error"]["code"], r["decode_error"]["offset"]) for i, r in enumerate(rows) if r["decode_error"]
    }
    assert found == errors
    assert "schema id 9999" in rows[5]["decode_error"]["message"]

    # encode the decoded structs as JSON under a new subject, then decode those messages again
    good = out.where(out.decode_error.isNull() & out.decoded.isNotNull()).select("k", "decoded")
    encoded = pcs.encode(good, "decoded", registry=reg, subject="events-copy-value", format="JSON")
    latest = reg.get_latest("events-copy-value")
    assert latest.schema_type == "JSON"
    again = pcs.decode(encoded.select("k", "value"), "value", registry=reg, output="again")
    back = sorted(again.collect(), key=lambda r: r["k"])
    assert [r["decode_error"] for r in back] == [None] * 3
    assert [_as_utc(r["again"].asDict(recursive=True)) for r in back] == [d for d in decoded if d is not None]
    # the encoded payloads are compact JSON a plain json.loads reads
    payload = wire.CONFLUENT.unpack(sorted(encoded.collect(), key=lambda r: r["k"])[0]["value"])[1]
    assert json.loads(bytes(payload))["place"] == {"city": "Delft", "zip": 2611}


# -- the CLI ----------------------------------------------------------------------------------------


def test_cli_decode_json_schema_messages(tmp_path, event_registry, capsys):
    reg, sid = event_registry
    messages, values, errors = event_messages(sid)
    pq.write_table(pa.table({"value": pa.array(messages, pa.binary())}), tmp_path / "in.parquet")
    base = ["decode", str(tmp_path / "in.parquet"), "--registry", str(tmp_path / "schemas.db")]

    assert cli_app.main([*base, "-o", str(tmp_path / "all")]) == 0
    assert "decoded 3 of 7 rows" in capsys.readouterr().out
    table = pq.read_table(tmp_path / "all")
    assert table.column_names == [*EVENT["properties"], "decode_error"]
    assert table.schema.field("at").type == pa.timestamp("us", "UTC")
    rows = table.to_pylist()
    empty = dict.fromkeys(EVENT["properties"])
    expected = [empty if v is None else v for v in values]
    assert [_as_utc({k: r[k] for k in EVENT["properties"]}) for r in rows] == expected
    found = {
        i: (r["decode_error"]["code"], r["decode_error"]["offset"]) for i, r in enumerate(rows) if r["decode_error"]
    }
    assert found == errors
    assert rows[4]["decode_error"]["message"].endswith("(message 4, byte 7)")

    assert cli_app.main([*base, "-o", str(tmp_path / "good"), "--dead-letter", str(tmp_path / "dead")]) == 0
    good = pq.read_table(tmp_path / "good").to_pylist()
    assert [_as_utc(r) for r in good] == [expected[i] for i in range(len(messages)) if i not in errors]
    dead = pq.read_table(tmp_path / "dead").to_pylist()
    assert [d["index"] for d in dead] == sorted(errors)
    assert [d["payload"] for d in dead] == [messages[i] for i in sorted(errors)]
    assert [(d["code"], d["offset"]) for d in dead] == [errors[i] for i in sorted(errors)]
    assert [d["schema_id"] for d in dead] == [sid, sid, 9999]


# -- Pulsar: the Python client's JsonSchema through pulsar-lite --------------------------------------


def test_pulsar_json_schema_topic_into_arrow(pulsar_client, pulsar_topic):
    pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")
    from pulsar.schema import Array, Boolean, Double, Float, Integer, JsonSchema, Long, Map, Record, String

    from pulsar_codec import pulsar as pcp

    class Address(Record):
        street = String()
        zip = Integer()

    class User(Record):
        id = Long(required=True)
        name = String()
        age = Integer(required=True)
        score = Double(required=True)
        ratio = Float(required=True)
        active = Boolean(required=True)
        tags = Array(String())
        attrs = Map(Integer())
        address = Address()

    users = [
        User(
            id=2**40,
            name='Zoë "q"\n漢字',
            age=-3,
            score=0.1,
            ratio=0.25,
            active=True,
            tags=["a", ""],
            attrs={"k": 1, "j": -2},
            address=Address(street="Main", zip=1234),
        ),
        User(id=0, name=None, age=0, score=-1e300, ratio=-2.5, active=False, tags=[], attrs={}, address=None),
        User(id=-1, age=2**31 - 1, score=5, ratio=0.0, active=True, address=Address()),
    ]
    schema = JsonSchema(User)
    producer = pulsar_client.create_producer(pulsar_topic, schema=schema, batching_enabled=False)
    try:
        for user in users:
            producer.send(user)
    finally:
        producer.close()

    (batch,) = list(pcp.read_batches(pulsar_client, pulsar_topic))
    payloads = batch.column("payload")
    assert [json.loads(p) for p in payloads.to_pylist()] == [json.loads(schema.encode(u)) for u in users]
    definition = schema.schema_info().schema()  # the Avro record definition the client registers
    decoder = pc.MessageDecoder({1: definition}, format="JSON")
    decoded = decoder.decode_payloads(payloads, 1)
    assert decoded.schema.field("ratio").type == pa.float32()
    attrs = decoded.schema.field("attrs").type
    assert pa.types.is_map(attrs) and (attrs.key_type, attrs.item_type) == (pa.string(), pa.int32())
    expected = []
    for user in users:
        value = {f["name"]: getattr(user, f["name"]) for f in User.schema()["fields"]}
        value["attrs"] = None if value["attrs"] is None else list(value["attrs"].items())
        value["address"] = None if user.address is None else {"street": user.address.street, "zip": user.address.zip}
        expected.append(value)
    assert decoded.to_pylist() == expected


# -- confluent-kafka's JSONSerializer through the REST facade, decoded in bulk -----------------------

RICH = {
    "$schema": DRAFT7,
    "title": "Order",
    "type": "object",
    "definitions": {
        "Line": {
            "type": "object",
            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}, "price": {"type": "number"}},
            "required": ["sku", "qty"],
        }
    },
    "properties": {
        "id": {"type": "integer"},
        "customer": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "email": {"oneOf": [{"type": "null"}, {"type": "string"}]},
                "address": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "lines": {"type": "array", "items": {"type": "string"}}},
                },
            },
            "required": ["name"],
        },
        "lines": {"type": "array", "items": {"$ref": "#/definitions/Line"}},
        "attrs": {"type": "object", "additionalProperties": {"type": "string"}},
        "at": {"type": "string", "format": "date-time"},
        "status": {"type": "string", "enum": ["NEW", "PAID", "SHIPPED"]},
        "note": {"type": ["string", "null"]},
        "total": {"type": "number"},
        "paid": {"type": "boolean"},
    },
    "required": ["id", "customer", "at", "status"],
}

RICH_VALUES = [
    {
        "id": 10,
        "customer": {"name": "Ann", "email": "ann@example.com", "address": {"city": "Gent", "lines": ["1", "b"]}},
        "lines": [{"sku": "A-1", "qty": 2, "price": 9.99}, {"sku": "B", "qty": 1}],
        "attrs": {"channel": "web", "ünï": "cödé"},
        "at": "2024-05-06T07:08:09.010203+00:00",
        "status": "PAID",
        "note": None,
        "total": 19.98,
        "paid": True,
    },
    {
        "id": -(2**53),
        "customer": {"name": "", "email": None},
        "lines": [],
        "attrs": {},
        "at": "1999-12-31T23:59:59+05:30",
        "status": "NEW",
        "paid": False,
    },
    {"id": 0, "customer": {"name": "x"}, "at": "2024-01-01T00:00:00Z", "status": "SHIPPED", "note": "n"},
]


def _line(line):
    return {"sku": line["sku"], "qty": line["qty"], "price": line.get("price")}


def _rich_expected(value):
    """What the JSON Schema -> Arrow mapping makes of a json.loads value of RICH."""
    customer = value["customer"]
    address = customer.get("address")
    return {
        "id": value["id"],
        "customer": {
            "name": customer["name"],
            "email": customer.get("email"),
            "address": None if address is None else {"city": address.get("city"), "lines": address.get("lines")},
        },
        "lines": None if "lines" not in value else [_line(x) for x in value["lines"]],
        "attrs": None if "attrs" not in value else list(value["attrs"].items()),
        "at": dt.datetime.fromisoformat(value["at"]).astimezone(UTC),
        "status": value["status"],
        "note": value.get("note"),
        "total": value.get("total"),
        "paid": value.get("paid"),
    }


def test_confluent_kafka_json_serializer_decoded_in_bulk():
    pytest.importorskip("httpx")
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    from pulsar_codec.registry.server import serve

    with warnings.catch_warnings():
        try:  # authlib installs an "always" filter for its notices when first imported: do it first
            import authlib.deprecate  # noqa: F401
        except ImportError:
            pass
        warnings.simplefilter("ignore")
        ck_sr = pytest.importorskip("confluent_kafka.schema_registry")
        ck_json = pytest.importorskip("confluent_kafka.schema_registry.json_schema")
        from confluent_kafka.serialization import MessageField, SerializationContext

    with LocalRegistry(":memory:") as reg, serve(reg) as server:
        client = ck_sr.SchemaRegistryClient({"url": server.url, "max.retries": 0})
        try:
            serializer = ck_json.JSONSerializer(json.dumps(RICH), client)
            ctx = SerializationContext("orders", MessageField.VALUE)
            messages = [serializer(v, ctx) for v in RICH_VALUES] + [None]
        finally:
            client.close()
        assert reg.get_latest("orders-value").schema_type == "JSON"
        batch = pc.decode(messages, reg)
        # also through the REST facade as this package's HTTP registry client
        from pulsar_codec.registry import ConfluentRegistry

        with ConfluentRegistry(server.url) as http:
            over_http = pc.decode(messages, http)
    schema = batch.schema
    assert schema.field("status").type == pa.dictionary(pa.int32(), pa.string())
    attrs = schema.field("attrs").type
    assert pa.types.is_map(attrs) and (attrs.key_type, attrs.item_type) == (pa.string(), pa.string())
    assert schema.field("at").type == pa.timestamp("us", "UTC")
    assert schema.field("id").type == pa.int64()
    customer = schema.field("customer").type  # required properties are non-null inside a struct
    assert not customer.field("name").nullable and customer.field("email").nullable
    assert pa.types.is_list(schema.field("lines").type)
    expected = [_rich_expected(json.loads(bytes(wire.CONFLUENT.unpack(m)[1]))) for m in messages[:-1]] + [None]
    rows = batch.to_pylist()
    assert [None if m is None else r for r, m in zip(rows, messages)] == expected
    assert over_http.equals(batch)
