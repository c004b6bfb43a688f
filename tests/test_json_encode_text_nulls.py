"""A null in a property kept as JSON text (a schema Arrow cannot type: ``oneOf`` of two types, a
list of types, a ``$ref`` to such a schema) follows the typed properties' rule: where the
property's schema refuses null, an optional one is left out and a required one is an EncodeError
naming the row and the property, on the batch path and in ``encode_value`` alike. The
``jsonschema`` library validates every document written, and the package's own decoder with
``validate=True`` reads them back without an error row."""

from __future__ import annotations

import json

import jsonschema
import pyarrow as pa
import pytest

import pulsar_codec as pc
from pulsar_codec.errors import EncodeError
from pulsar_codec.formats.json import FORMAT
from pulsar_codec.formats.json.encoder import JsonEncoder
from pulsar_codec.registry import LocalRegistry

OPTIONAL = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "u": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        "multi": {"type": ["string", "integer"]},
        "ref": {"$ref": "#/definitions/either"},
        "nullable_u": {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
        "nullable_multi": {"type": ["string", "integer", "null"]},
        "anything": {},
        "box": {
            "type": "object",
            "properties": {"v": {"anyOf": [{"type": "boolean"}, {"type": "number"}]}, "w": {"type": "integer"}},
        },
    },
    "required": ["id"],
    "definitions": {"either": {"anyOf": [{"type": "boolean"}, {"type": "array"}]}},
}

TEXT_COLUMNS = ("u", "multi", "ref", "nullable_u", "nullable_multi", "anything")


def _batch(rows: list[dict]) -> pa.RecordBatch:
    arrow_schema = FORMAT.plan(FORMAT.parse(OPTIONAL), FORMAT.parse(OPTIONAL)).arrow_schema
    return pa.RecordBatch.from_pylist(rows, schema=arrow_schema)


def _row(id_: int, **values) -> dict:
    row: dict = {"id": id_, "box": None, **{name: None for name in TEXT_COLUMNS}}
    row.update(values)
    return row


def test_a_null_optional_text_property_whose_schema_refuses_null_is_left_out():
    rows = [
        _row(
            1,
            u='"s"',
            multi="7",
            ref="[1]",
            nullable_u="2",
            nullable_multi='"m"',
            anything="{}",
            box={"v": "true", "w": 1},
        ),
        _row(2),  # every text column null
        _row(3, box={"v": None, "w": 4}),  # a nested one too
    ]
    encoder = JsonEncoder(OPTIONAL)
    written = encoder.encode(_batch(rows)).to_pylist()
    assert written == [
        b'{"id":1,"u":"s","multi":7,"ref":[1],"nullable_u":2,"nullable_multi":"m","anything":{},'
        b'"box":{"v":true,"w":1}}',
        b'{"id":2,"nullable_u":null,"nullable_multi":null,"anything":null}',
        b'{"id":3,"nullable_u":null,"nullable_multi":null,"anything":null,"box":{"w":4}}',
    ]
    assert [encoder.encode_value(row) for row in rows] == written  # the one-value path: the same bytes
    for payload in written:
        jsonschema.validate(json.loads(payload), OPTIONAL)


def test_the_written_documents_pass_the_validating_decoder_and_round_trip(tmp_path):
    registry = LocalRegistry(str(tmp_path / "registry.db"))
    rows = [_row(1, u="5", ref="false"), _row(2), _row(3, box={"v": None, "w": None})]
    messages = pc.encode(_batch(rows), registry, "t-value", schema=json.dumps(OPTIONAL), format="JSON")
    reader = FORMAT.parse(OPTIONAL, validate=True)
    decoded = pc.decode(messages, registry, format="JSON", on_error="null", reader_schema=reader)
    assert decoded.errors.num_rows == 0
    assert pc.encode(decoded.batch, registry, "t-value", use_latest=True).to_pylist() == messages.to_pylist()
    # a document without the optional text properties decodes them null and writes them out again
    sparse = pc.encode(_batch([_row(4)]), registry, "t-value", use_latest=True)
    assert sparse.to_pylist()[0][5:] == b'{"id":4,"nullable_u":null,"nullable_multi":null,"anything":null}'


REQUIRED = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "u": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        "n": {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
    },
    "required": ["id", "u", "n"],
}


def test_a_null_required_text_property_whose_schema_refuses_null_is_an_error_naming_row_and_property():
    encoder = JsonEncoder(REQUIRED)
    batch = pa.RecordBatch.from_pydict({"id": [1, 2, 3], "u": ['"a"', "1", None], "n": [None, "2", "3"]})
    with pytest.raises(EncodeError, match=r"row 2.*\bu\b|\bu\b.*row 2") as raised:
        encoder.encode(batch)
    assert raised.value.index == 2
    assert "null" in str(raised.value)
    with pytest.raises(EncodeError, match=r"\.u: null is not allowed here"):
        encoder.encode_value({"id": 3, "u": None, "n": "3"})
    # the good rows are valid documents; a null in "n" is written (its schema admits null)
    good = encoder.encode(batch.slice(0, 2)).to_pylist()
    assert good == [b'{"id":1,"u":"a","n":null}', b'{"id":2,"u":1,"n":2}']
    assert [encoder.encode_value(row) for row in batch.slice(0, 2).to_pylist()] == good
    for payload in good:
        jsonschema.validate(json.loads(payload), REQUIRED)


def test_with_on_error_null_the_row_is_a_null_and_listed():
    registry: dict = {}
    batch = pa.table({"id": [1, 2], "u": [None, "1"], "n": ["1", None]})
    out = pc.encode(batch, registry, "r-value", schema=json.dumps(REQUIRED), format="JSON", on_error="null")
    assert out.messages.to_pylist()[0] is None
    assert out.messages.to_pylist()[1][5:] == b'{"id":2,"u":1,"n":null}'
    assert out.errors.column("index").to_pylist() == [0]
    assert ".u" in out.errors.column("message")[0].as_py()


def test_a_row_of_nulls_is_still_a_null_message_when_only_a_text_property_is_required():
    """An all-null row is a tombstone where the schema cannot hold it: a required JSON-text property
    that refuses null makes that so, as a required typed property does."""
    schema = {"type": "object", "properties": {"u": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}
    schema["required"] = ["u"]
    encoder = JsonEncoder(schema)
    assert encoder.encode(pa.table({"u": ["1", None]})).to_pylist() == [b'{"u":1}', None]
    # where the text property admits null, the row of nulls is a document ({"u": null})
    admits = {"type": "object", "properties": {"u": {"type": ["string", "integer", "null"]}}, "required": ["u"]}
    assert JsonEncoder(admits).encode(pa.table({"u": ["1", None]})).to_pylist() == [b'{"u":1}', b'{"u":null}']


ITEMS_SCHEMA = {
    "type": "object",
    "properties": {
        "xs": {"type": "array", "items": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
        "m": {"type": "object", "additionalProperties": {"type": ["string", "integer"]}},
        "ys": {"type": "array", "items": {"type": ["string", "integer", "null"]}},
    },
}


def test_a_null_item_or_map_value_kept_as_text_whose_schema_refuses_null_is_an_error():
    """An array item or map value kept as JSON text cannot be left out: where its schema refuses
    null, a null is an EncodeError naming the row and the path, on both paths; where it admits
    null, null is written and the document is valid."""
    encoder = JsonEncoder(ITEMS_SCHEMA)
    arrow_schema = FORMAT.plan(FORMAT.parse(ITEMS_SCHEMA), FORMAT.parse(ITEMS_SCHEMA)).arrow_schema
    good = {"xs": ['"a"', "1"], "m": [("k", "2")], "ys": ['"b"', None]}
    written = encoder.encode(pa.RecordBatch.from_pylist([good], schema=arrow_schema)).to_pylist()
    assert written == [b'{"xs":["a",1],"m":{"k":2},"ys":["b",null]}']
    jsonschema.validate(json.loads(written[0]), ITEMS_SCHEMA)
    assert encoder.encode_value(good) == written[0]
    for bad, where in (({**good, "xs": ['"a"', None]}, r"xs\[\]"), ({**good, "m": [("k", None)]}, r"m\{\}")):
        batch = pa.RecordBatch.from_pylist([good, bad], schema=arrow_schema)
        with pytest.raises(EncodeError, match=rf"row 1: .*{where}: null is not allowed here") as raised:
            encoder.encode(batch)
        assert raised.value.index == 1
        with pytest.raises(EncodeError, match="null is not allowed here"):
            encoder.encode_value(bad)
