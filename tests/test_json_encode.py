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
from pulsar_codec.formats.json._column_fragments import _floats
from pulsar_codec.formats.json.encoder import JsonEncoder

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


def test_columns_in_another_order_are_written_in_schema_order_and_extra_columns_refused():
    """A column the schema has no property for would be dropped without a word (Avro and Protobuf
    refuse it too); the keep_extra column is the one a keep_extra schema takes."""
    encoder = JsonEncoder(SCHEMA)
    batch = pa.RecordBatch.from_pylist(ROWS, schema=_arrow_schema(SCHEMA))
    shuffled = batch.select(list(reversed(batch.schema.names)))
    assert encoder.encode(shuffled).equals(encoder.encode(batch))
    with pytest.raises(EncodeError, match=r"column\(s\) \['other', 'zz'\] that Event has no property"):
        encoder.encode(shuffled.append_column("other", pa.array([1, 2])).append_column("zz", pa.array([1, 2])))
    nullable_root = JsonEncoder({"type": ["object", "null"], "properties": {"a": {"type": "integer"}}})
    with pytest.raises(EncodeError, match=r"\['zz'\]"):
        nullable_root.encode(pa.RecordBatch.from_pydict({"a": [1], "zz": [2]}))
    kept = FORMAT.parse({"type": "object", "properties": {"a": {"type": "integer"}}}, keep_extra=True)
    extra = JsonEncoder(kept).mapping.extra_column
    rows = pa.RecordBatch.from_pydict({"a": [1, 2], extra: ['{"b":true}', None]})
    assert JsonEncoder(kept).encode(rows).to_pylist() == [b'{"a":1,"b":true}', b'{"a":2}']
    with pytest.raises(EncodeError, match=extra):  # a schema without keep_extra has no such column
        JsonEncoder(kept.document).encode(rows)


def test_optional_property_without_a_column_is_left_out_and_required_is_an_error():
    encoder = JsonEncoder(SCHEMA)
    batch = pa.RecordBatch.from_pydict({"id": [1], "name": ["a"], "note": [None]})
    assert encoder.encode(batch).to_pylist() == [b'{"id":1,"name":"a","note":null}']
    with pytest.raises(EncodeError, match="'name'"):
        encoder.encode(pa.RecordBatch.from_pydict({"id": [1]}))
    with pytest.raises(EncodeError, match="row 1: .*name.*null"):
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


_EDGE_INSTANTS = [
    datetime.datetime(1, 1, 1, tzinfo=UTC),
    datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC),
    datetime.datetime(1600, 2, 29, 12, tzinfo=UTC),  # leap day of a century leap year
    datetime.datetime(1900, 3, 1, tzinfo=UTC) - datetime.timedelta(microseconds=1),  # 1900 is not one
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.datetimes(timezones=st.just(UTC), allow_imaginary=False) | st.sampled_from(_EDGE_INSTANTS) | st.none(),
        max_size=20,
    )
)
def test_dates_times_and_instants_are_written_as_isoformat(values):
    # the whole-second text is Arrow's own formatting: it must be isoformat's for the years 1-9999
    schema = {
        "type": "object",
        "properties": {
            "at": {"type": ["string", "null"], "format": "date-time"},
            "day": {"type": ["string", "null"], "format": "date"},
            "clock": {"type": ["string", "null"], "format": "time"},
        },
    }
    batch = pa.RecordBatch.from_pydict(
        {
            "at": pa.array(values, pa.timestamp("us", tz="UTC")),
            "day": pa.array([None if v is None else v.date() for v in values], pa.date32()),
            "clock": pa.array([None if v is None else v.time() for v in values], pa.time64("us")),
        }
    )
    expected = [
        _dumps(
            {"at": None, "day": None, "clock": None}
            if v is None
            else {"at": v.isoformat(), "day": v.date().isoformat(), "clock": v.time().isoformat()}
        )
        for v in values
    ]
    assert JsonEncoder(schema).encode(batch).to_pylist() == expected


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


# -- probe23: time32, date64, map keys, format strings, error rows --------------------------------------


def _one_property(schema):
    return JsonEncoder({"type": "object", "properties": {"t": schema}})


def _round_trip(table, schema=None):
    import pulsar_codec as pc

    registry = {}
    messages = pc.encode(table, registry, "t-value", schema=schema, format="JSON")
    return messages, pc.decode(messages, registry, format="JSON")


@pytest.mark.parametrize("unit, scale", [("s", 1), ("ms", 1000)])
def test_time32_columns_are_written_as_the_time64_path_writes_them(unit, scale):
    seconds = [0, 3661, 86_399, None]
    values = [None if s is None else s * scale + (7 if unit == "ms" and s else 0) for s in seconds]
    time32 = pa.array(values, pa.time32(unit))
    micros = pa.array([None if v is None else v * (1_000_000 // scale) for v in values], pa.time64("us"))
    encoder = _one_property({"type": ["string", "null"], "format": "time"})
    got = encoder.encode(pa.table({"t": time32})).to_pylist()
    assert got == encoder.encode(pa.table({"t": micros})).to_pylist()
    assert got[1] == (b'{"t":"01:01:01.007000"}' if unit == "ms" else b'{"t":"01:01:01"}')
    # a derived schema (format: time) reads them back as the same times
    _, back = _round_trip(pa.table({"t": time32}))
    assert back.column("t").to_pylist() == micros.to_pylist()


def test_times_outside_one_day_are_refused_with_their_row():
    encoder = _one_property({"type": "string", "format": "time"})
    for bad in (pa.array([0, -5], pa.time32("ms")), pa.array([0, 86_400_000_000_000], pa.time64("ns"))):
        with pytest.raises(EncodeError, match=r"row 1: .*\.t: a time outside one day") as exc:
            encoder.encode(pa.table({"t": bad}))
        assert exc.value.index == 1


def test_date64_of_whole_days_is_its_date_and_any_other_value_is_refused():
    """Arrow defines date64 as milliseconds that are whole days; another value names no date."""
    encoder = _one_property({"type": ["string", "null"], "format": "date"})
    good = pa.array([86_400_000, None, -86_400_000], pa.date64())
    assert encoder.encode(pa.table({"t": good})).to_pylist() == [
        b'{"t":"1970-01-02"}',
        b'{"t":null}',
        b'{"t":"1969-12-31"}',
    ]
    bad = pa.array([86_400_000, 86_400_001], pa.date64())
    with pytest.raises(EncodeError, match=r"row 1: .*T?\.t: a date64 value that is not a whole day") as exc:
        encoder.encode(pa.table({"t": bad}))
    assert exc.value.index == 1
    with pytest.raises(EncodeError, match="row 1: .*a date64") as exc:  # derived schema, through pc.encode
        _round_trip(pa.table({"t": bad}))
    pulsar = JsonEncoder(
        {"type": "record", "name": "R", "fields": [{"name": "t", "type": {"type": "int", "logicalType": "date"}}]}
    )
    with pytest.raises(EncodeError, match="row 1: .*R.t: a date64") as exc:
        pulsar.encode(pa.table({"t": bad}))
    assert exc.value.index == 1


def test_binary_map_keys_must_be_utf8_text():
    column = pa.array([[(b"k", 1)], [], [(b"a", 2), (b"\xff", 3)]], pa.map_(pa.binary(), pa.int32()))
    with pytest.raises(EncodeError, match=r"row 2: .*\.c\{\}: map key b'\\xff' is not UTF-8 text") as exc:
        _round_trip(pa.table({"c": column}))
    assert exc.value.index == 2
    messages, back = _round_trip(pa.table({"c": column.slice(0, 2)}))
    assert messages.to_pylist()[0].endswith(b'{"c":{"k":1}}')


FORMAT_CASES = [
    (
        {"format": "date-time"},
        ["2024-01-02T03:04:05Z", "2024-02-29t00:00:00.123456789+23:59", "0001-01-01 00:00:00-00:00"],
        [
            "yesterday",
            "2024-01-02T03:04:05",
            "2023-02-29T00:00:00Z",
            "2024-04-31T00:00:00Z",
            "2024-01-02T24:00:00Z",
            "2024-01-02T03:04:05.Z",
            "2024-01-02T03:04:05.1234567890Z",
            "2024-01-02T03:04:05+24:00",
            "2024-01-02T03:04:05Z\n",
        ],
    ),
    (
        {"format": "date"},
        ["2024-02-29", "2000-02-29", "9999-12-31"],
        ["x", "1900-02-29", "2024-13-01", "2024-00-10", "2024-06-31", "2024-1-01", "2024-01-01T00:00:00Z"],
    ),
    (
        {"format": "time"},
        ["23:59:59", "00:00:00.5", "12:00:00Z", "12:00:00-05:30"],
        ["x", "24:00:00", "12:60:00", "12:00:60", "12:00", "12:00:00+5:30", "12:00:00 "],
    ),
    (
        {"contentEncoding": "base64"},
        ["", "aGk=", "AAAA", "+/+/", "QQ=="],
        ["!!", "aGk", "aGk==", "aG=k", "a\nGk=", "aGk=aGk=", "-_-_"],
    ),
]


@pytest.mark.parametrize("keywords, good, bad", FORMAT_CASES)
def test_format_strings_the_decoder_refuses_are_refused_on_the_way_out(keywords, good, bad):
    """A string column written into a ``format`` / ``contentEncoding`` property: what the decoder
    reads back is written, what it refuses (JSON_BAD_FORMAT) is an EncodeError naming the row."""
    schema = {"type": "object", "title": "T", "properties": {"t": {"type": "string", **keywords}}}
    messages, back = _round_trip(pa.table({"t": pa.array(good + [None], pa.string())}), json.dumps(schema))
    assert back.num_rows == len(good) + 1
    encoder = JsonEncoder(schema)
    for value in bad:
        column = pa.array(good + [None, value], pa.large_string())
        with pytest.raises(EncodeError, match=rf"row {len(good) + 1}: .*T\.t: .* is not") as exc:
            encoder.encode(pa.table({"t": column}))
        assert exc.value.index == len(good) + 1
        with pytest.raises(EncodeError, match=r"T\.t: .* is not"):
            encoder.encode_value({"t": value})
    for value in good:
        assert json.loads(encoder.encode_value({"t": value})) == {"t": value}


def test_fixed_given_as_text_must_read_back_as_that_fixed():
    """Pulsar JSON fixed: base64 text of exactly the size; fixed(16) text is a UUID."""
    schema = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "f", "type": {"type": "fixed", "name": "F", "size": 2}}],
    }
    encoder = JsonEncoder(schema)
    assert encoder.encode(pa.table({"f": ["aGk="]})).to_pylist() == [b'{"f":"aGk="}']
    for bad in ("aGk+", "aA=="):  # three bytes, one byte
        with pytest.raises(EncodeError, match="row 1: .*R.f: base64 text not of 2 bytes") as exc:
            encoder.encode(pa.table({"f": ["aGk=", bad]}))
        assert exc.value.index == 1
        with pytest.raises(EncodeError, match="R.f: .* is not padded standard base64 of 2 bytes"):
            encoder.encode_value({"f": bad})
    uuid16 = {
        "type": "record",
        "name": "U",
        "fields": [{"name": "u", "type": {"type": "fixed", "name": "G", "size": 16}}],
    }
    with pytest.raises(EncodeError, match="row 0: .*U.u: 'nope' is not a UUID"):
        JsonEncoder(uuid16).encode(pa.table({"u": ["nope"]}))


_FORMAT_ALPHABET = "0123456789-:T Zz+.=/Aa"


@settings(max_examples=400, deadline=None)
@given(st.sampled_from([11, 12, 13, 8]), st.lists(st.text(_FORMAT_ALPHABET, max_size=32), min_size=1, max_size=8))
def test_the_columnar_format_check_is_the_decoders_own(op, values):
    """The vectorised check refuses exactly the strings the pure JSON kernel's readers refuse."""
    from pulsar_codec._kernels import json_py
    from pulsar_codec.formats.json._column_fragments import _check_base64, _check_format, _RowError

    readers = {11: json_py._timestamp_micros, 12: json_py._date_days, 13: json_py._time_micros, 8: json_py._base64}
    first_bad = next((i for i, v in enumerate(values) if readers[op](v.encode()) is None), None)
    arr = pa.array(values, pa.string())
    try:
        _check_base64(arr, None, "p") if op == 8 else _check_format(op, arr, "p")
        found = None
    except _RowError as exc:
        found = exc.row
    assert found == first_bad


def test_typed_temporal_and_binary_columns_need_no_text_check():
    schema = {
        "type": "object",
        "properties": {
            "at": {"type": "string", "format": "date-time"},
            "b": {"type": "string", "contentEncoding": "base64"},
        },
    }
    table = pa.table({"at": pa.array([0], pa.timestamp("s")), "b": pa.array([b"\x00"], pa.binary())})
    assert JsonEncoder(schema).encode(table).to_pylist() == [b'{"at":"1970-01-01T00:00:00+00:00","b":"AA=="}']


def test_errors_carry_the_batch_row_as_index_also_inside_lists_and_maps():
    schema = {
        "type": "object",
        "title": "T",
        "properties": {
            "xs": {"type": "array", "items": {"type": "number"}},
            "m": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "integer"}}},
            "e": {"enum": ["a"]},
            "i": {"type": "integer"},
        },
    }
    encoder = JsonEncoder(schema)
    xs = pa.array([[1.0], [], [2.0, 3.0], [4.0, math.nan]], pa.list_(pa.float64()))
    with pytest.raises(EncodeError, match=r"row 3: .*T\.xs\[\]: NaN") as exc:
        encoder.encode(pa.table({"xs": xs}))
    assert exc.value.index == 3
    with pytest.raises(EncodeError, match=r"row 2: .*T\.xs\[\]: NaN") as exc:  # a slice: rows count from it
        encoder.encode(pa.table({"xs": xs.slice(1)}))
    assert exc.value.index == 2
    m = pa.array([[("a", [1.0])], [("b", [2.0]), ("c", [3.0, math.inf])]], pa.map_(pa.string(), pa.list_(pa.float64())))
    floats = JsonEncoder(
        {
            "type": "object",
            "title": "T",
            "properties": {
                "m": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "number"}}}
            },
        }
    )
    with pytest.raises(EncodeError, match=r"row 1: .*T\.m\{\}\[\]: NaN") as exc:
        floats.encode(pa.table({"m": m}))
    assert exc.value.index == 1
    with pytest.raises(EncodeError, match=r"row 1: .*T\.e: not a symbol") as exc:
        encoder.encode(pa.table({"e": ["a", "b"]}))
    assert exc.value.index == 1
    with pytest.raises(EncodeError, match=r"row 1: .*T\.i: 18446744073709551615 is out of the long range") as exc:
        encoder.encode(pa.table({"i": pa.array([1, 2**64 - 1], pa.uint64())}))
    assert exc.value.index == 1
    with pytest.raises(EncodeError, match=r"row 1: .*T\.xs\[\]: null is not allowed") as exc:
        encoder.encode(pa.table({"xs": pa.array([[1.0], [None]], pa.list_(pa.float64()))}))
    assert exc.value.index == 1


# -- probe26: a fuzz of the batch path against encode_value ------------------------------------------


def _object(properties, required=()):
    return {"type": "object", "properties": properties, "required": list(required)}


def _both(encoder, table):
    """The batch path's payloads, each checked against encode_value of the same row."""
    out = encoder.encode(table).to_pylist()
    for payload, row in zip(out, table.to_pylist()):
        assert payload == encoder.encode_value(row)
    return out


def test_a_null_type_property_is_written_null_not_the_whole_row():
    encoder = JsonEncoder(_object({"n": {"type": "null"}, "s": {"type": "string"}}, ["n", "s"]))
    assert _both(encoder, pa.table({"n": pa.nulls(2), "s": ["a", "b"]})) == [
        b'{"n":null,"s":"a"}',
        b'{"n":null,"s":"b"}',
    ]
    nested = JsonEncoder(_object({"o": _object({"n": {"type": "null"}, "x": {"type": "number"}})}))
    column = pa.array([{"n": None, "x": 1.5}], pa.struct([("n", pa.null()), ("x", pa.float64())]))
    assert nested.encode(pa.table({"o": column})).to_pylist() == [b'{"o":{"n":null,"x":1.5}}']


def test_keep_extra_text_must_be_an_object_of_other_members():
    encoder = JsonEncoder(FORMAT.parse(_object({"a": {"type": "integer"}}), keep_extra=True))
    assert encoder.encode(pa.table({"a": [1], "_extra": ['{"b":[1]}']})).to_pylist() == [b'{"a":1,"b":[1]}']
    for text, match in (("[1,2]", "expected the JSON text of an object"), ('{"a":5}', r"members \['a'\] repeat")):
        with pytest.raises(EncodeError, match=match) as raised:
            encoder.encode(pa.table({"a": [1, 1], "_extra": ['{"b":2}', text]}))
        assert raised.value.index == 1


def test_nulls_among_a_dictionary_s_values_are_nulls():
    values = pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array([None, "a"]))
    encoder = JsonEncoder(_object({"s": {"type": "string"}}, ["s"]))
    with pytest.raises(EncodeError, match="row 1: .*null is not allowed here"):
        encoder.encode(pa.table({"s": values}))
    with pytest.raises(EncodeError, match="null is not allowed here"):
        encoder.encode_value({"s": None})


def test_a_struct_field_the_object_does_not_name_is_refused():
    encoder = JsonEncoder(_object({"o": _object({"x": {"type": "integer"}})}))
    with pytest.raises(EncodeError, match=r"\.o: the struct has field\(s\) \['y'\]"):
        encoder.encode(pa.table({"o": [{"x": 1, "y": 2}]}))
    twice = pa.StructArray.from_arrays([pa.array([1]), pa.array([2])], names=["x", "x"])
    with pytest.raises(EncodeError, match=r"names field\(s\) \['x'\] twice"):
        encoder.encode(pa.table({"o": twice}))


def test_json_text_values_keep_their_numbers_and_members():
    encoder = JsonEncoder(_object({"t": {}}))
    texts = ["0.10000000000000000001", "1E5", "1e400", '{ "a" : 1, "a" : 2 }', "[1, -0, 2.50]"]
    expected = [
        b'{"t":0.10000000000000000001}',
        b'{"t":1E5}',
        b'{"t":1e400}',
        b'{"t":{"a":1,"a":2}}',
        b'{"t":[1,-0,2.50]}',
    ]
    assert _both(encoder, pa.table({"t": texts})) == expected
    for bad in ("NaN", "[" * 5000 + "]" * 5000, '"\\ud800"'):
        with pytest.raises(EncodeError, match="is not JSON text|lone surrogate"):
            encoder.encode(pa.table({"t": [bad]}))


def test_a_lone_surrogate_is_an_encode_error():
    encoder = JsonEncoder(_object({"s": {"type": "string"}}))
    with pytest.raises(EncodeError, match="lone surrogate"):
        encoder.encode_value({"s": "\ud800"})


def test_values_under_a_null_object_or_list_are_not_checked():
    schema = _object({"o": {"type": ["object", "null"], "properties": {"x": {"type": "number"}}}})
    hidden_nan = pa.StructArray.from_arrays([pa.array([math.nan, 1.0])], names=["x"], mask=pa.array([True, False]))
    assert _both(JsonEncoder(schema), pa.table({"o": hidden_nan})) == [b'{"o":null}', b'{"o":{"x":1.0}}']
    lists = _object({"l": {"type": ["array", "null"], "items": {"type": "number"}}})
    spanning = pa.ListArray.from_arrays(
        pa.array([0, 2, 3], pa.int32()), pa.array([math.nan, 2.0, 3.0]), mask=pa.array([True, False])
    )
    assert _both(JsonEncoder(lists), pa.table({"l": spanning})) == [b'{"l":null}', b'{"l":[3.0]}']


def test_map_keys_that_are_not_text_are_refused_on_both_paths():
    encoder = JsonEncoder(_object({"m": {"type": "object", "additionalProperties": {"type": "integer"}}}))
    with pytest.raises(EncodeError, match="map keys of Arrow type int64 are not strings"):
        encoder.encode(pa.table({"m": pa.array([[(1, 2)]], pa.map_(pa.int64(), pa.int64()))}))
    with pytest.raises(EncodeError, match="map key 1 is not a string"):
        encoder.encode_value({"m": [(1, 2)]})
    with pytest.raises(EncodeError, match=r"m\{k\}: NaN|m\{k\}: .*not an integer"):
        encoder.encode_value({"m": {"k": math.nan}})  # the value's own error, not "not a map"


def test_the_batch_s_first_bad_row_is_the_one_named():
    """Columns are checked one after the other; the error names the batch's first bad row, in
    whichever column it is, as encoding row by row would."""
    encoder = JsonEncoder(_object({"a": {"type": "number"}, "b": {"type": "number"}}))
    with pytest.raises(EncodeError, match=r"row 0: .*\.b: NaN") as raised:
        encoder.encode(pa.table({"a": [1.0, math.nan], "b": [math.nan, 1.0]}))
    assert raised.value.index == 0


def test_a_value_in_a_null_type_property_is_refused_on_both_paths():
    """The batch path wrote null for any value and lost it; the one-value path refused it."""
    encoder = JsonEncoder(_object({"n": {"type": "null"}, "s": {"type": "string"}}, ["s"]))
    with pytest.raises(EncodeError, match=r"^row 1: Record\.n: expected null$") as raised:
        encoder.encode(pa.table({"n": pa.array([None, 5]), "s": ["a", "b"]}))
    assert raised.value.index == 1
    with pytest.raises(EncodeError, match=r"^Record\.n: expected null$"):
        encoder.encode_value({"n": 5, "s": "b"})
    in_list = JsonEncoder(_object({"l": {"type": "array", "items": {"type": "null"}}}))
    with pytest.raises(EncodeError, match=r"^row 1: Record\.l\[\]: expected null$"):
        in_list.encode(pa.table({"l": pa.array([[None], [None, "x"]])}))
    # a value under a null object is no value: nothing to lose
    nested = JsonEncoder(_object({"o": _object({"n": {"type": "null"}})}))
    column = pa.StructArray.from_arrays([pa.array([1, None])], names=["n"], mask=pa.array([True, False]))
    assert nested.encode(pa.table({"o": column})).to_pylist() == [b"{}", b'{"o":{"n":null}}']  # (left out)


def test_numbers_past_the_reader_s_range_are_refused_on_both_paths():
    """A Pulsar JSON float past float32's range (after rounding), or an integer past the double range
    for a number, was written, and the decoder refuses it (JSON_NUMBER_RANGE)."""
    schema = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "f", "type": "float"}, {"name": "d", "type": "double"}],
    }
    encoder = JsonEncoder(schema)
    biggest = 3.4028234663852886e38  # float32's largest value
    batch = pa.table({"f": [1.5, biggest, 3.5e38], "d": [1.0, 2.0, 3.0]})
    with pytest.raises(EncodeError, match=r"^row 2: R\.f: 3\.5e\+38 is past the float32 range$") as raised:
        encoder.encode(batch)
    assert raised.value.index == 2
    written = _both(encoder, batch.slice(0, 2))
    assert json.loads(written[1])["f"] == biggest
    with pytest.raises(EncodeError, match=r"^R\.f: 3\.5e\+38 is past the float32 range$"):
        encoder.encode_value({"f": 3.5e38, "d": 1.0})
    with pytest.raises(EncodeError, match=r"^R\.f: 340282366920938463463374607431768211456 is past the float32 range$"):
        encoder.encode_value({"f": 2**128, "d": 1.0})
    with pytest.raises(EncodeError, match=r"^R\.d: an integer of 400 digits is past the double range$"):
        encoder.encode_value({"f": 1.0, "d": 10**399})
    number = JsonEncoder(_object({"n": {"type": "number"}}))
    with pytest.raises(EncodeError, match=r"^Record\.n: an integer of 310 digits is past the double range$"):
        number.encode_value({"n": 2**1024 * 10})
    assert number.encode_value({"n": 2**1023}) == f'{{"n":{2**1023}}}'.encode()
    model = FORMAT.parse(schema)  # what is written reads back
    assert FORMAT.decode_value(FORMAT.plan(model, model), written[1]) == {"f": biggest, "d": 2.0}
