"""Optional validation of JSON payloads against the constraints the Arrow mapping cannot express
(``validate=True``): off by default, an error row (``JSON_CONSTRAINT``) per breaking row, on both twins."""

from __future__ import annotations

import pytest

import pulsar_codec as pc
from pulsar_codec import wire
from pulsar_codec.errors import ErrorCode, JsonDecodeError, SchemaError
from pulsar_codec.formats import get_format
from pulsar_codec.pipeline import MessageDecoder

SCHEMA = {
    "type": "object",
    "properties": {
        "age": {"type": "integer", "minimum": 0},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}},
    },
    "required": ["age", "code"],
}
PAYLOADS = [
    b'{"age": 3, "code": "ABC", "tags": ["x"]}',
    b'{"age": -1, "code": "ABC"}',
    None,
    b'{"age": 4, "code": "abc"}',
    b'{"age": "old", "code": "ABC"}',  # a type error: the kernel's, before any constraint
    b'{"age": 5, "code": "XYZ", "tags": ["long"]}',
]
MESSAGES = [None if p is None else wire.CONFLUENT.pack(1, p) for p in PAYLOADS]


def reader(**options):
    return get_format("JSON").parse(SCHEMA, **options)


def test_constraints_are_not_checked_by_default(backend):
    out = pc.decode(MESSAGES, {1: SCHEMA}, format="JSON", on_error="null")
    assert out.errors.column("index").to_pylist() == [4]


def test_breaking_rows_are_error_rows(backend):
    out = pc.decode(MESSAGES, {1: SCHEMA}, format="JSON", on_error="null", reader_schema=reader(validate=True))
    errors = out.errors.to_pylist()
    assert [(e["index"], e["code"]) for e in errors] == [
        (1, ErrorCode.JSON_CONSTRAINT),
        (3, ErrorCode.JSON_CONSTRAINT),
        (4, ErrorCode.JSON_WRONG_TYPE),
        (5, ErrorCode.JSON_CONSTRAINT),
    ]
    assert "less than the minimum of 0" in errors[0]["message"] and "(at age)" in errors[0]["message"]
    assert "(at tags[0])" in errors[3]["message"]
    assert out.batch.column("age").to_pylist() == [3, None, None, None, None, None]


def test_first_breaking_row_raises_without_keep_going(backend):
    decoder = MessageDecoder({1: SCHEMA}, format="JSON", reader_schema=reader(validate=True))
    with pytest.raises(JsonDecodeError, match="breaks the schema") as info:
        decoder.decode(MESSAGES)
    assert (info.value.code, info.value.index) == (ErrorCode.JSON_CONSTRAINT, 1)
    assert decoder.decode(MESSAGES[:1]).column("code").to_pylist() == ["ABC"]
    with pytest.raises(JsonDecodeError, match="breaks the schema"):
        decoder.decode_value(MESSAGES[3])


def test_integers_past_pythons_digit_limit_are_validated(backend):
    """A row holding an integer of more digits than Python's ``int()`` takes (4300), where the kernel
    keeps it as text or skips it, is validated (as a Decimal), not a ValueError out of the batch."""
    schema = {
        "type": "object",
        "properties": {"any": {"maximum": 10}, "n": {"type": "integer"}},
    }
    huge = b"9" * 5000
    payloads = [b'{"any": ' + huge + b"}", b'{"other": ' + huge + b', "n": 1}', b'{"any": -' + huge + b"}"]
    messages = [wire.CONFLUENT.pack(1, p) for p in payloads]
    strict = get_format("JSON").parse(schema, validate=True)
    out = pc.decode(messages, {1: schema}, format="JSON", on_error="null", reader_schema=strict)
    errors = out.errors.to_pylist()
    assert [(e["index"], e["code"]) for e in errors] == [(0, ErrorCode.JSON_CONSTRAINT)]
    assert "greater than the maximum of 10" in errors[0]["message"]
    assert out.batch.column("n").to_pylist() == [None, 1, None]
    assert out.batch.column("any").to_pylist() == [None, None, "-" + "9" * 5000]


def test_validate_needs_a_json_schema_document():
    avro_record = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    with pytest.raises(SchemaError, match="validate=True"):
        get_format("JSON").parse(avro_record, validate=True)
    assert reader(validate=True) != reader()


def test_a_parsed_json_reader_needs_no_format_and_survives_pickling(backend):
    import pickle

    decoder = MessageDecoder({1: SCHEMA}, reader_schema=reader(validate=True), on_error="null")
    assert decoder.format == "JSON"
    copy = pickle.loads(pickle.dumps(decoder))
    assert copy.reader_schema == decoder.reader_schema and copy.reader_schema.validate
    assert copy.decode(MESSAGES).errors.column("index").to_pylist() == [1, 3, 4, 5]
