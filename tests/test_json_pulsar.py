"""Pulsar JSON topics into Arrow and back (issue 11): the pulsar-client adapter
(:class:`pulsar_codec.pulsar.TopicDecoder`, :func:`~pulsar_codec.pulsar.read_decoded`) on topics of
pulsar-client's ``JsonSchema`` and ``AvroSchema`` and of a PIP-420 external JSON schema, through the
pulsar-lite broker; and pulsar-client's ``JsonSchema`` reading payloads this package's JSON encoder
wrote.

pulsar-lite stores no schemas, so, as for Avro topics, the schema comes from the client's own
schema object (``schema.schema_info()``), never from the broker.
"""

from __future__ import annotations

import base64
import datetime as dt
import enum
import json

import pyarrow as pa
import pytest

pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")

import pulsar
from pulsar.schema import (
    Array,
    AvroSchema,
    Boolean,
    Bytes,
    CustomEnum,
    Double,
    Float,
    Integer,
    JsonSchema,
    Long,
    Map,
    Record,
    String,
    StringSchema,
)

import pulsar_codec as pc
from pulsar_codec import errors, wire
from pulsar_codec import pulsar as pcp
from pulsar_codec import pulsar_types as pt
from pulsar_codec.external import SchemaInfoProviderFactory
from pulsar_codec.registry import LocalRegistry

pytest_plugins = ["pulsar_fixtures"]


class Color(enum.Enum):  # int values: the Python client writes 1, 2, 3
    RED = 1
    GREEN = 2
    BLUE = 3


class Size(enum.Enum):  # values equal to the names: written by name, as Java does
    S = "S"
    L = "L"


class Point(Record):
    x = Double()
    color = Color
    tag = Bytes()


class Shape(Record):
    id = Long(required=True)
    name = String()
    size = Size
    color = Color
    blob = Bytes()
    count = Integer()
    ratio = Float()
    ok = Boolean()
    origin = Point()
    points = Array(Point())
    by_name = Map(Point())
    labels = Array(String())
    weights = Map(Double())


SHAPES = [
    Shape(
        id=1,
        name='Zoë "q"\n漢字',
        size=Size.L,
        color=Color.BLUE,
        blob=b"raw text \xc3\xa9",
        count=-7,
        ratio=0.5,
        ok=True,
        origin=Point(x=1.5, color=Color.RED, tag=b"o"),
        points=[Point(x=-2.0, color=Color.GREEN, tag=b""), Point(x=0.0)],
        by_name={"a": Point(x=3.25, color=Color.BLUE, tag=b"abcd")},
        labels=["x", ""],
        weights={"w": 1e-300, "v": -0.0},
    ),
    Shape(id=2**53, size=Size.S, blob=b"abcd", points=[], by_name={}, labels=[], weights={}),  # "abcd": valid Base64
    Shape(id=-1),
]


def _point(point):
    if point is None:
        return None
    return {"x": point.x, "color": None if point.color is None else point.color.name, "tag": point.tag}


def _shape_row(shape):
    """The Arrow row of a Shape: the Avro mapping of its Pulsar definition, enums by name."""
    return {
        "id": shape.id,
        "name": shape.name,
        "size": None if shape.size is None else shape.size.name,
        "color": None if shape.color is None else shape.color.name,
        "blob": shape.blob,
        "count": shape.count,
        "ratio": shape.ratio,
        "ok": shape.ok,
        "origin": _point(shape.origin),
        "points": None if shape.points is None else [_point(p) for p in shape.points],
        "by_name": None if shape.by_name is None else [(k, _point(v)) for k, v in shape.by_name.items()],
        "labels": shape.labels,
        "weights": None if shape.weights is None else list(shape.weights.items()),
    }


def _base64_bytes(value):
    """``value`` with every bytes value replaced by its Base64 text's bytes."""
    if isinstance(value, bytes):
        return base64.b64encode(value)
    if isinstance(value, dict):
        return {k: _base64_bytes(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_base64_bytes(v) for v in value)
    return value


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


# -- pulsar-client's JsonSchema topics into Arrow ---------------------------------------------------------


def test_python_json_schema_topic_into_arrow(pulsar_client, pulsar_topic):
    schema = JsonSchema(Shape)
    _produce(pulsar_client, pulsar_topic, SHAPES, schema)
    _produce(pulsar_client, pulsar_topic, [None])  # a tombstone

    (raw,) = pcp.read_batches(pulsar_client, pulsar_topic)
    # the client's own payloads: pretty-printed JSON, int enum values, bytes as their UTF-8 text
    first = json.loads(raw.column("payload")[0].as_py())
    assert (first["color"], first["size"], first["blob"]) == (3, "L", "raw text é")
    assert first["by_name"]["a"]["tag"] == "abcd"

    decoder = pcp.TopicDecoder(schema)
    assert decoder.convention == "python" and decoder.schema_type is pt.SchemaType.JSON
    decoded = decoder.decode(raw)
    dictionary = pa.dictionary(pa.int32(), pa.string())
    assert decoded.schema.field("color").type == dictionary
    assert decoded.schema.field("blob").type == pa.binary()
    assert decoded.schema.field("count").type == pa.int32() and decoded.schema.field("ratio").type == pa.float32()
    assert decoded.schema.field("origin").type.field("color").type == dictionary
    assert decoded.column("color").dictionary.to_pylist() == ["RED", "GREEN", "BLUE"]  # symbols in schema order
    assert decoded.to_pylist() == [_shape_row(s) for s in SHAPES] + [dict.fromkeys(decoded.schema.names)]
    assert decoder.arrow_schema() == decoded.schema

    # read_decoded is the same, batch by batch; a pulsar.schema.JsonSchema consumer agrees
    batches = list(pcp.read_decoded(pulsar_client, pulsar_topic, schema, batch_size=2))
    assert [b.num_rows for b in batches] == [2, 2]
    assert pa.Table.from_batches(batches).to_pylist() == decoded.to_pylist()
    consumed = _consume(pulsar_client, pulsar_topic, schema, len(SHAPES))
    assert [_shape_row(m.value()) for m in consumed] == decoded.to_pylist()[: len(SHAPES)]


def test_python_json_payloads_are_decoded_in_bulk(monkeypatch):
    schema = JsonSchema(Shape)
    payloads = [schema.encode(s) for s in SHAPES] * 50
    decoder = pcp.TopicDecoder(schema)
    decoder.decode(payloads[:1])  # the schema is parsed on first use
    calls = []
    real_loads = json.loads

    def counting_loads(*args, **kwargs):
        calls.append(args)
        return real_loads(*args, **kwargs)

    monkeypatch.setattr(json, "loads", counting_loads)
    decoded = decoder.decode(payloads)
    assert calls == []
    assert decoded.num_rows == len(payloads)


def test_java_written_json_reads_with_the_jackson_convention():
    """The same definition, payloads as Jackson writes them: Base64 bytes, enum names."""
    definition = JsonSchema(Shape).schema_info().schema()
    jackson = [
        b'{"id": 5, "color": "GREEN", "blob": "AP8=", "origin": {"x": 1, "color": "RED", "tag": "eA=="}}',
        b'{"id": 6, "points": [{"x": 2.5, "color": null, "tag": null}], "size": "S"}',
    ]
    for schema in (pt.SchemaInfo("Shape", "JSON", definition), JsonSchema(Shape)):
        decoder = pcp.TopicDecoder(schema, convention=None if isinstance(schema, pt.SchemaInfo) else "jackson")
        assert decoder.convention == "jackson"
        rows = decoder.decode(jackson).to_pylist()
        assert (rows[0]["color"], rows[0]["blob"], rows[0]["origin"]) == (
            "GREEN",
            b"\x00\xff",
            {"x": 1.0, "color": "RED", "tag": b"x"},
        )
        assert rows[1]["points"] == [{"x": 2.5, "color": None, "tag": None}] and rows[1]["size"] == "S"
    # the Python convention refuses Jackson's enum names for an int-valued enum, as an error row
    result = pcp.TopicDecoder(JsonSchema(Shape), on_error="null").decode(jackson)
    assert result.errors.column("code").to_pylist() == [errors.ErrorCode.JSON_WRONG_TYPE]
    assert result.errors.column("index").to_pylist() == [0]


def test_python_convention_errors_keep_input_order():
    schema = JsonSchema(Shape)
    good = schema.encode(SHAPES[0])
    unknown_value = b'{"id": 3, "origin": {"x": 1, "color": 9}}'  # no Color member has the value 9
    nested_unknown = b'{"id": 4, "by_name": {"k": {"x": 0, "color": 4}}, "points": [{"x": 1, "color": 7}]}'
    not_json = b'{"id": 5,'
    payloads = [good, unknown_value, not_json, None, nested_unknown, good]

    result = pcp.TopicDecoder(schema, on_error="null").decode(payloads)
    assert result.errors.column("index").to_pylist() == [1, 2, 4]
    assert result.errors.column("code").to_pylist() == [
        errors.ErrorCode.JSON_CONSTRAINT,
        errors.ErrorCode.JSON_TRUNCATED,
        errors.ErrorCode.JSON_CONSTRAINT,
    ]
    messages = result.errors.column("message").to_pylist()
    assert "9 is not a value of enum Color" in messages[0] and "(message 1, byte 0)" in messages[0]
    rows = result.batch.to_pylist()
    assert rows[1:5] == [dict.fromkeys(result.batch.schema.names)] * 4 and rows[0] == rows[5] == _shape_row(SHAPES[0])

    strict = pcp.TopicDecoder(schema)
    with pytest.raises(errors.JsonDecodeError, match="9 is not a value of enum Color") as info:
        strict.decode(payloads)
    assert (info.value.index, info.value.offset, info.value.code) == (1, 0, errors.ErrorCode.JSON_CONSTRAINT)
    with pytest.raises(errors.JsonDecodeError) as info:  # the kernel's error comes first here
        strict.decode([good, not_json, unknown_value])
    assert (info.value.index, info.value.offset, info.value.code) == (1, 9, errors.ErrorCode.JSON_TRUNCATED)
    with pytest.raises(errors.JsonDecodeError, match="enum Color") as info:
        strict.decode([good, nested_unknown])
    assert info.value.index == 1


def test_python_enum_defaults_and_repeated_named_types():
    class Flag(enum.Enum):
        ON = 10
        OFF = 20

    class Item(Record):
        flag = Flag
        data = Bytes()

    class Holder(Record):
        first = Item()
        rest = Array(Item())  # "Item" (and "Flag" inside it) are references the second time
        flag = Flag
        fallback = CustomEnum(Flag, default=Flag.OFF, required=True, required_default=True)

    schema = JsonSchema(Holder)
    definition = json.loads(schema.schema_info().schema())
    assert definition["fields"][1]["type"][1]["items"] == "Item"
    assert definition["fields"][3]["default"] == "OFF"
    value = Holder(first=Item(flag=Flag.ON, data=b"1"), rest=[Item(flag=Flag.OFF, data=b"22")], flag=Flag.ON)
    payloads = [schema.encode(value), b'{"rest": [], "flag": 20}']
    rows = pcp.TopicDecoder(schema).decode(payloads).to_pylist()
    assert rows[0] == {
        "first": {"flag": "ON", "data": b"1"},
        "rest": [{"flag": "OFF", "data": b"22"}],
        "flag": "ON",
        "fallback": "OFF",
    }
    assert rows[1] == {"first": None, "rest": [], "flag": "OFF", "fallback": "OFF"}  # the default, by name


# -- the same entry points for AvroSchema topics, and what they refuse ------------------------------------


def test_avro_schema_topic_through_the_same_entry_points(pulsar_client, pulsar_topic):
    schema = AvroSchema(Shape)
    _produce(pulsar_client, pulsar_topic, SHAPES, schema)
    (decoded,) = pcp.read_decoded(pulsar_client, pulsar_topic, schema)
    assert decoded.to_pylist() == [_shape_row(s) for s in SHAPES]
    avro_schema = pcp.TopicDecoder(schema).arrow_schema()
    assert avro_schema == decoded.schema
    # one Record class, two Pulsar schemas, one Arrow schema
    assert pcp.TopicDecoder(JsonSchema(Shape)).arrow_schema() == avro_schema


def test_refusals():
    with pytest.raises(errors.SchemaError, match="decode_array"):
        pcp.TopicDecoder(StringSchema())
    with pytest.raises(errors.SchemaError, match="keyvalue_columns"):
        pcp.TopicDecoder(pcp.KeyValueSchema(StringSchema(), JsonSchema(Shape)))
    with pytest.raises(ValueError, match="convention"):
        pcp.TopicDecoder(JsonSchema(Shape), convention="gson")
    with pytest.raises(ValueError, match="convention applies"):
        pcp.TopicDecoder(AvroSchema(Shape), convention="python")
    with pytest.raises(ValueError, match="on_error"):
        pcp.TopicDecoder(JsonSchema(Shape), on_error="skip")
    with pytest.raises(TypeError, match="SchemaInfo"):
        pcp.TopicDecoder({"type": "record"})


# -- a PIP-420 external JSON schema -------------------------------------------------------------------------

ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "at": {"type": "string", "format": "date-time"},
        "status": {"type": "string", "enum": ["NEW", "PAID"]},
        "lines": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}}}},
        "note": {"type": ["string", "null"]},
    },
    "required": ["id", "at"],
}


def test_external_json_schema_topic_into_arrow(pulsar_client, pulsar_topic):
    with LocalRegistry(":memory:") as reg:
        factory = SchemaInfoProviderFactory(registry=reg)
        adapter = pcp.ExternalSchemaAdapter(factory.json_schema(pulsar_topic, ORDER), pulsar_topic)
        values = [
            {"id": 1, "at": "2024-01-02T03:04:05Z", "status": "PAID", "lines": [{"sku": "a"}], "note": "n"},
            {"id": 2, "at": "2024-01-02T03:04:05.5+01:00"},
        ]
        _produce(pulsar_client, pulsar_topic, values, adapter)
        _produce(pulsar_client, pulsar_topic, [b"\x00\x00\x00\x00\x01{broken"])  # a bad message from elsewhere

        reader = pcp.ExternalSchemaAdapter(factory.json_schema(pulsar_topic, ORDER))
        (result,) = pcp.read_decoded(pulsar_client, pulsar_topic, reader, on_error="null")
        assert pcp.TopicDecoder(reader).schema_type is pt.SchemaType.EXTERNAL
        assert pcp.TopicDecoder(reader).arrow_schema() is None
    batch, errs = result
    assert batch.schema.field("at").type == pa.timestamp("us", "UTC")
    assert batch.schema.field("status").type == pa.dictionary(pa.int32(), pa.string())
    utc = dt.UTC
    assert batch.to_pylist() == [
        {
            "id": 1,
            "at": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=utc),
            "status": "PAID",
            "lines": [{"sku": "a"}],
            "note": "n",
        },
        {
            "id": 2,
            "at": dt.datetime(2024, 1, 2, 2, 4, 5, 500000, tzinfo=utc),
            "status": None,
            "lines": None,
            "note": None,
        },
        dict.fromkeys(ORDER["properties"]),
    ]
    assert errs.column("index").to_pylist() == [2]
    assert errs.column("code").to_pylist() == [errors.ErrorCode.JSON_UNEXPECTED_BYTE]


# -- pulsar-client's JsonSchema reads what this package's JSON encoder writes -------------------------------


def test_python_json_schema_reads_our_encoder(pulsar_client, pulsar_topic):
    definition = JsonSchema(Shape).schema_info().schema()
    rows = [_shape_row(s) for s in SHAPES]
    shape_type = pcp.TopicDecoder(pt.SchemaInfo("Shape", "JSON", definition)).arrow_schema()
    table = pa.Table.from_pylist(rows, schema=shape_type)
    framed = pc.encode(table, {}, "shapes-value", schema=definition, format="JSON")
    payloads = [bytes(wire.CONFLUENT.unpack(m)[1]) for m in framed.to_pylist()]
    # compact, in schema order, written the Jackson way: enum names and Base64 bytes
    assert payloads[1].startswith(b'{"id":9007199254740992,"name":null,"size":"S","color":null,"blob":"YWJjZA=="')
    _produce(pulsar_client, pulsar_topic, payloads)  # a plain bytes producer

    consumed = [m.value() for m in _consume(pulsar_client, pulsar_topic, JsonSchema(Shape), len(payloads))]
    assert all(isinstance(got, Shape) for got in consumed)
    # every value comes back as the Python client wrote it, enums included (it reads names), except
    # bytes: the Python client keeps Jackson's Base64 text, as the bytes of that text
    assert [_shape_row(got) for got in consumed] == [_base64_bytes(row) for row in rows]
    # the same payloads read back through the adapter (Jackson convention) give the rows again
    assert pcp.TopicDecoder(pt.SchemaInfo("Shape", "JSON", definition)).decode(payloads).to_pylist() == rows


def test_python_convention_from_schema_data_alone():
    """Without the Record class, the Python convention reads bytes from their UTF-8 text; enums stay
    names (their Python values are unknown), and other unions stay JSON text as written."""
    definition = {
        "type": "record",
        "name": "Blob",
        "fields": [
            {"name": "data", "type": ["null", "bytes"]},
            {"name": "level", "type": {"type": "enum", "name": "Level", "symbols": ["LOW", "HIGH"]}},
            {"name": "either", "type": ["null", "bytes", "long"]},
            {"name": "parts", "type": {"type": "array", "items": "bytes"}},
        ],
    }
    info = pt.SchemaInfo("Blob", "JSON", json.dumps(definition))
    decoder = pcp.TopicDecoder(info, convention="python")
    payload = b'{"data": "h\\u00e9", "level": "HIGH", "either": "x", "parts": ["a", ""]}'
    batch = decoder.decode([payload])
    assert batch.schema.field("either").type == pa.string()
    assert batch.to_pylist() == [{"data": "hé".encode(), "level": "HIGH", "either": '"x"', "parts": [b"a", b""]}]
    jackson = pcp.TopicDecoder(info).decode([b'{"data": "aMOp", "level": "LOW", "either": 5, "parts": []}'])
    assert jackson.to_pylist() == [{"data": "hé".encode(), "level": "LOW", "either": "5", "parts": []}]
