"""JsonEncoder: Arrow rows -> compact JSON, byte for byte what confluent-kafka's JSONSerializer writes.

confluent-kafka serialises with ``json.dumps(obj, separators=(",", ":"), ensure_ascii=False)`` when
orjson is not importable (the case in this environment), so that call on the row's JSON-shaped dict
(keys in schema order) is the oracle for the bytes; ``json.loads`` is the oracle for the values.
"""

from __future__ import annotations

import datetime
import json
import math

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_codec.errors import EncodeError
from pulsar_codec.formats.json import FORMAT
from pulsar_codec.formats.json.encoder import JsonEncoder, _floats

UTC = datetime.UTC

SCHEMA = {
    "type": "object",
    "title": "Event",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "score": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
        "at": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "clock": {"type": "string", "format": "time"},
        "blob": {"type": "string", "contentEncoding": "base64"},
        "color": {"enum": ["red", "green"]},
        "inner": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]},
        "anything": {},
        "note": {"type": ["string", "null"]},
    },
    "required": ["id", "name"],
}

ROWS = [
    {
        "id": 1,
        "name": 'quote " backslash \\ newline \n tab \t bell \x07 é 漢 \u2028 \x7f',
        "score": 1.0,
        "tags": ["x", "y"],
        "attrs": [("k", 1), ("é", -2)],
        "at": datetime.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
        "day": datetime.date(2024, 1, 2),
        "clock": datetime.time(23, 59, 58, 5),
        "blob": b"\x00\xffhi",
        "color": "red",
        "inner": {"x": 1e16},
        "anything": '{"a": [1, 2.5, null]}',
        "note": None,
    },
    {
        "id": -(2**63),
        "name": "",
        "score": 1e-05,
        "tags": [],
        "attrs": [],
        "at": datetime.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC),
        "day": datetime.date(1, 1, 1),
        "clock": datetime.time(0, 0),
        "blob": b"",
        "color": "green",
        "inner": None,
        "anything": None,
        "note": "n",
    },
]


def _arrow_schema(schema):
    model = FORMAT.parse(schema)
    return FORMAT.plan(model, model).arrow_schema


def _as_json(row):
    """The dict a confluent-kafka user would pass for ``row`` (JSON's own shapes, schema order)."""
    out = dict(row)
    out["attrs"] = dict(row["attrs"])
    out["at"] = row["at"].isoformat()
    out["day"] = row["day"].isoformat()
    out["clock"] = row["clock"].isoformat()
    out["blob"] = __import__("base64").b64encode(row["blob"]).decode()
    out["anything"] = None if row["anything"] is None else json.loads(row["anything"])
    # an optional property whose schema refuses null is absent, not null (null would break the schema)
    return {k: v for k, v in out.items() if v is not None or k in ("anything", "note")}


def _dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def test_batch_bytes_equal_json_dumps_of_the_dict():
    encoder = JsonEncoder(SCHEMA)
    batch = pa.RecordBatch.from_pylist(ROWS, schema=_arrow_schema(SCHEMA))
    payloads = encoder.encode(batch)
    assert payloads.type == pa.binary()
    assert payloads.to_pylist() == [_dumps(_as_json(r)) for r in ROWS]
    assert [encoder.encode_value(r) for r in ROWS] == payloads.to_pylist()
    assert [encoder.encode_value(_as_json(r)) for r in ROWS] == payloads.to_pylist()  # JSON's own shapes too
    assert json.loads(payloads[0].as_py())["at"] == "2024-01-02T03:04:05.123456+00:00"


def test_columns_in_another_order_and_extra_columns_are_ignored():
    encoder = JsonEncoder(SCHEMA)
    batch = pa.RecordBatch.from_pylist(ROWS, schema=_arrow_schema(SCHEMA))
    shuffled = batch.select(list(reversed(batch.schema.names))).append_column("other", pa.array([1, 2]))
    assert encoder.encode(shuffled).equals(encoder.encode(batch))


def test_optional_property_without_a_column_is_left_out_and_required_is_an_error():
    encoder = JsonEncoder(SCHEMA)
    batch = pa.RecordBatch.from_pydict({"id": [1], "name": ["a"], "note": [None]})
    assert encoder.encode(batch).to_pylist() == [b'{"id":1,"name":"a","note":null}']
    with pytest.raises(EncodeError, match="'name'"):
        encoder.encode(pa.RecordBatch.from_pydict({"id": [1]}))
    with pytest.raises(EncodeError, match="name.*row 1.*null"):
        encoder.encode(pa.RecordBatch.from_pydict({"id": [1, 2], "name": ["a", None]}))
    with pytest.raises(EncodeError, match="required property 'name'"):
        encoder.encode_value({"id": 1})


def test_a_null_optional_property_its_schema_refuses_is_left_out():
    """Decoding ``{"id": 1}`` gives ``tags`` null; writing ``"tags": null`` back would break the
    schema (confluent-kafka's deserializer refuses it), so such a property is left out."""
    import jsonschema

    schema = {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "c": {"enum": ["A", "B"]},
            "note": {"type": ["string", "null"]},
        },
        "required": ["id"],
    }
    encoder = JsonEncoder(schema)
    batch = pa.RecordBatch.from_pydict(
        {
            "id": [1, 2, 3],
            "tags": pa.array([None, ["x"], None], pa.list_(pa.string())),
            "c": pa.array([None, "B", None], pa.string()),
            "note": pa.array([None, None, "n"], pa.string()),
        }
    )
    payloads = encoder.encode(batch).to_pylist()
    assert payloads == [b'{"id":1,"note":null}', b'{"id":2,"tags":["x"],"c":"B","note":null}', b'{"id":3,"note":"n"}']
    for payload in payloads:
        jsonschema.validate(json.loads(payload), schema)
    assert [encoder.encode_value(r) for r in batch.to_pylist()] == payloads  # one value at a time too
    # a row whose every member is left out is an empty object, with the keep_extra column too
    first = pa.RecordBatch.from_pydict({"tags": pa.array([None], pa.list_(pa.string()))})
    assert JsonEncoder({k: v for k, v in schema.items() if k != "required"}).encode(first).to_pylist() == [b"{}"]


def test_all_null_row_is_a_null_payload():
    encoder = JsonEncoder(SCHEMA)
    batch = pa.RecordBatch.from_pydict({"id": pa.array([1, None]), "name": pa.array(["a", None])})
    assert encoder.encode(batch).to_pylist() == [b'{"id":1,"name":"a"}', None]


def test_nan_and_infinity_are_refused():
    encoder = JsonEncoder(SCHEMA)
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(EncodeError, match="NaN"):
            encoder.encode(pa.RecordBatch.from_pydict({"id": [1], "name": ["a"], "score": [bad]}))
        with pytest.raises(EncodeError, match="NaN"):
            encoder.encode_value({"id": 1, "name": "a", "score": bad})


def test_enum_symbol_and_range_checks():
    encoder = JsonEncoder(SCHEMA)
    with pytest.raises(EncodeError, match="symbol"):
        encoder.encode(pa.RecordBatch.from_pydict({"id": [1], "name": ["a"], "color": ["blue"]}))
    with pytest.raises(EncodeError, match="symbol"):
        encoder.encode_value({"id": 1, "name": "a", "color": "blue"})
    with pytest.raises(EncodeError, match="long range"):
        encoder.encode(pa.RecordBatch.from_pydict({"id": pa.array([2**64 - 1], pa.uint64()), "name": ["a"]}))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.floats(allow_nan=False, allow_infinity=False) | st.floats(width=32, allow_nan=False, allow_infinity=False),
        max_size=40,
    )
)
def test_floats_are_written_as_repr(values):
    got = _floats(pa.array(values, pa.float64()), "x").to_pylist()
    assert got == [repr(v) for v in values]


@pytest.mark.parametrize(
    "value",
    [0.0, -0.0, 1.0, 100.0, 1e15, 1e16, 1.5e16, 1e-4, 1e-5, 2.5e-7, 1e300, 5e-324, 123456789.125, 0.1, 1 / 3],
)
def test_float_edges(value):
    assert _floats(pa.array([value, None]), "x").to_pylist() == [repr(value), None]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text() | st.none(), max_size=20))
def test_strings_escape_as_json_dumps(values):
    encoder = JsonEncoder({"type": "object", "properties": {"s": {"type": ["string", "null"]}}})
    out = encoder.encode(pa.RecordBatch.from_pydict({"s": pa.array(values, pa.string())})).to_pylist()
    assert out == [_dumps({"s": v}) for v in values]


def test_timestamps_units_zones_and_fractions():
    schema = {"type": "object", "properties": {"t": {"type": "string", "format": "date-time"}}}
    encoder = JsonEncoder(schema)
    ns = pa.array([1_700_000_000_123_456_789, 1_700_000_000_123_456_000, -1], pa.timestamp("ns", "Europe/Paris"))
    out = [json.loads(p)["t"] for p in encoder.encode(pa.RecordBatch.from_pydict({"t": ns})).to_pylist()]
    assert out == [
        "2023-11-14T22:13:20.123456789+00:00",
        "2023-11-14T22:13:20.123456+00:00",
        "1969-12-31T23:59:59.999999999+00:00",
    ]
    ms = pa.array([-1, 0], pa.timestamp("ms"))  # naive: read as UTC
    out = [json.loads(p)["t"] for p in encoder.encode(pa.RecordBatch.from_pydict({"t": ms})).to_pylist()]
    assert out == ["1969-12-31T23:59:59.999000+00:00", "1970-01-01T00:00:00+00:00"]
    naive = datetime.datetime(2020, 5, 6, 7, 8, 9)
    assert encoder.encode_value({"t": naive}) == b'{"t":"2020-05-06T07:08:09+00:00"}'
    assert encoder.encode_value({"t": "2020-05-06T07:08:09Z"}) == b'{"t":"2020-05-06T07:08:09Z"}'


def test_non_object_schema_takes_one_column():
    encoder = JsonEncoder({"type": "array", "items": {"type": "integer"}})
    out = encoder.encode(pa.RecordBatch.from_pydict({"value": pa.array([[1, 2], [], None])}))
    assert out.to_pylist() == [b"[1,2]", b"[]", None]
    assert encoder.encode_value([3]) == b"[3]"
    with pytest.raises(EncodeError, match="one column"):
        encoder.encode(pa.RecordBatch.from_pydict({"a": [1], "b": [2]}))


def test_sliced_and_chunked_inputs():
    encoder = JsonEncoder(SCHEMA)
    batch = pa.RecordBatch.from_pylist(ROWS * 3, schema=_arrow_schema(SCHEMA))
    whole = encoder.encode(batch).to_pylist()
    assert encoder.encode(batch.slice(1, 4)).to_pylist() == whole[1:5]
    table = pa.Table.from_batches([batch.slice(0, 2), batch.slice(2)])
    assert encoder.encode(table).to_pylist() == whole


PULSAR_JSON = {
    "type": "record",
    "name": "Reading",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "raw", "type": "bytes"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "ratio", "type": "float"},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}


def test_pulsar_json_is_written_as_jackson_does():
    encoder = JsonEncoder(PULSAR_JSON)
    row = {
        "id": 7,
        "at": datetime.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
        "day": datetime.date(1970, 1, 11),
        "raw": b"hi",
        "kind": "B",
        "ratio": 0.5,
        "note": None,
    }
    expected = b'{"id":7,"at":1704164645678,"day":10,"raw":"aGk=","kind":"B","ratio":0.5,"note":null}'
    assert encoder.encode_value(row) == expected
    batch = pa.RecordBatch.from_pylist([row], schema=_arrow_schema(PULSAR_JSON))
    assert encoder.encode(batch).to_pylist() == [expected]


def test_round_trip_through_the_decoder():
    model = FORMAT.parse(SCHEMA)
    plan = FORMAT.plan(model, model)
    payloads = JsonEncoder(model).encode(pa.RecordBatch.from_pylist(ROWS, schema=plan.arrow_schema))
    decoded = [FORMAT.decode_value(plan, p) for p in payloads.to_pylist()]
    assert [JsonEncoder(model).encode_value(v) for v in decoded] == payloads.to_pylist()
