"""Rows, not batches, fail; empty input is normal (issue 10, items 1 and 2).

With ``on_error="null"`` a message whose schema id the registry does not know, or whose writer
schema the reader cannot read, is an error row of its own and every other row decodes; only a
registry that cannot be reached raises. A batch with nothing readable still has one row per
message, with the reader's columns whenever a reader is known.
"""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pulsar_codec as pc
from pulsar_codec import wire
from pulsar_codec.errors import (
    ErrorCode,
    RegistryError,
    SchemaError,
    SchemaNotFoundError,
    SchemaResolutionError,
    error_for,
)
from pulsar_codec.pipeline import Decoded, MessageDecoder
from pulsar_codec.registry import LocalRegistry
from test_avro_support import encode

V1 = {"type": "record", "name": "User", "fields": [{"name": "id", "type": "int"}]}
V2 = {
    "type": "record",
    "name": "User",
    "fields": [{"name": "id", "type": "long"}, {"name": "tag", "type": ["null", "string"], "default": None}],
}
# same record name, a field the V1 and V2 writers cannot fill: no resolution possible
NEEDS_NAME = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}


def rows(batch):
    """The batch's rows, None for a null row (every column null)."""
    return [None if all(v is None for v in r.values()) else r for r in batch.to_pylist()]


def msg(schema_id, schema, record, protocol=wire.CONFLUENT):
    return protocol.pack(schema_id, encode(schema, [record])[0])


def test_unknown_id_is_an_error_row_and_the_rest_decodes(backend):
    messages = [msg(1, V1, {"id": 1}), msg(77, V1, {"id": 2}), None, msg(2, V2, {"id": 3, "tag": "t"}), b"\x07oops"]
    out = pc.decode(messages, {1: V1, 2: V2}, on_error="null")
    assert isinstance(out, Decoded)
    assert out.batch.num_rows == len(messages)
    assert rows(out.batch) == [{"id": 1, "tag": None}, None, None, {"id": 3, "tag": "t"}, None]
    errors = out.errors.to_pylist()
    assert [(e["index"], e["code"], e["offset"]) for e in errors] == [
        (1, ErrorCode.SCHEMA_NOT_FOUND, 0),
        (4, ErrorCode.WIRE_BAD_MAGIC, 0),
    ]
    assert errors[0]["message"] == "schema id 77 is not in the registry (message 1, byte 0)"
    # every input row is accounted for: good + error + null messages
    good = out.batch.num_rows - out.batch.column(0).null_count
    assert good + len(errors) + messages.count(None) == len(messages)


def test_unknown_id_raises_with_on_error_raise(backend):
    with pytest.raises(SchemaNotFoundError, match="77"):
        pc.decode([msg(1, V1, {"id": 1}), msg(77, V1, {"id": 2})], {1: V1})


def test_one_unknown_id_for_the_whole_batch(backend):
    messages = [msg(5, V1, {"id": i}) for i in range(3)] + [None]
    out = pc.decode(messages, {1: V1, 2: V2}, on_error="null")
    # no readable message and no configured reader: one row per message, no columns
    assert out.batch.num_rows == 4 and out.batch.num_columns == 0
    assert out.errors.column("index").to_pylist() == [0, 1, 2]
    assert set(out.errors.column("code").to_pylist()) == {ErrorCode.SCHEMA_NOT_FOUND}
    with_reader = pc.decode(messages, {1: V1, 2: V2}, reader_schema=V2, on_error="null")
    assert with_reader.batch.schema.names == ["id", "tag"]
    assert rows(with_reader.batch) == [None] * 4
    assert with_reader.errors.num_rows == 3


def test_unresolvable_writer_is_an_error_row(backend):
    messages = [msg(1, V1, {"id": 1}), msg(3, NEEDS_NAME, {"name": "n"}), msg(1, V1, {"id": 2})]
    out = pc.decode(messages, {1: V1, 3: NEEDS_NAME}, reader_schema=V2, on_error="null")
    assert rows(out.batch) == [{"id": 1, "tag": None}, None, {"id": 2, "tag": None}]
    (error,) = out.errors.to_pylist()
    assert error["index"] == 1 and error["code"] == ErrorCode.SCHEMA_UNRESOLVABLE
    assert error["message"].startswith("writer schema 3 cannot be read as the reader schema: ")
    with pytest.raises(SchemaError):
        pc.decode(messages, {1: V1, 3: NEEDS_NAME}, reader_schema=V2)


def test_unparsable_writer_schema_is_an_error_row(backend):
    registry = {1: V1, 2: '{"type": "record", "name": "Broken"}'}  # no fields
    out = pc.decode([msg(2, V1, {"id": 1}), msg(1, V1, {"id": 2})], registry, on_error="null")
    assert rows(out.batch) == [None, {"id": 2}]
    assert out.errors.column("code").to_pylist() == [ErrorCode.SCHEMA_UNRESOLVABLE]


PROTO_TEXT = 'syntax = "proto3";\npackage shop;\nmessage Address { string city = 1; }\n'
JSON_SCHEMA_TEXT = '{"type": "object", "properties": {"city": {"type": "string"}}}'
BROKEN_AVRO = '{"type": "record", "name": "Broken"}'  # no fields


class TextRegistry:
    """A registry client that answers schema text, with or without a schema type."""

    def __init__(self, text, schema_type=None):
        self.text, self.schema_type = text, schema_type

    def get_schema(self, schema_id):
        if self.schema_type is None:
            return self.text
        return type("Schema", (), {"schema_str": self.text, "schema_type": self.schema_type})()


@pytest.mark.parametrize(
    ("registry", "expected"),
    [
        (
            {1: PROTO_TEXT},
            "schema id 1 is not a valid AVRO schema (schema is not valid JSON: Expecting value: line 1 column 1"
            " (char 0)); a Mapping of schema texts is read as AVRO unless format= names its format; this one"
            " looks like a PROTOBUF schema: pass format='PROTOBUF'",
        ),
        (
            {1: JSON_SCHEMA_TEXT},
            "schema id 1 is not a valid AVRO schema (unknown Avro type 'object'); a Mapping of schema texts is"
            " read as AVRO unless format= names its format; this one looks like a JSON schema: pass format='JSON'",
        ),
        (
            {1: BROKEN_AVRO},
            "schema id 1 is not a valid AVRO schema (record 'Broken' needs a 'fields' list); a Mapping of schema"
            " texts is read as AVRO unless format= names its format",
        ),
        (
            TextRegistry(PROTO_TEXT),
            "schema id 1 is not a valid AVRO schema (schema is not valid JSON: Expecting value: line 1 column 1"
            " (char 0)); the registry gives no schema type, so its schemas are read as AVRO unless format= names"
            " their format; this one looks like a PROTOBUF schema: pass format='PROTOBUF'",
        ),
        # the registry says the type: the schema is bad, nothing to choose
        (
            TextRegistry(BROKEN_AVRO, "AVRO"),
            "schema id 1 is not a valid AVRO schema (record 'Broken' needs a 'fields' list)",
        ),
    ],
    ids=["proto-mapping", "json-schema-mapping", "broken-avro-mapping", "untyped-registry", "typed-registry"],
)
def test_an_invalid_writer_schema_says_what_is_wrong_and_what_to_do(backend, registry, expected):
    messages = [wire.CONFLUENT.pack(1, b"\x02"), None, wire.CONFLUENT.pack(1, b"\x04")]
    out = MessageDecoder(registry, on_error="null").decode(messages)
    assert out.errors.column("code").to_pylist() == [ErrorCode.SCHEMA_UNRESOLVABLE] * 2
    assert out.errors.column("message").to_pylist() == [
        f"{expected} (message 0, byte 0)",
        f"{expected} (message 2, byte 0)",
    ]
    with pytest.raises(SchemaError) as raised:
        MessageDecoder(registry).decode(messages)
    assert str(raised.value) == f"{expected} (message 0)" and raised.value.index == 0


def test_an_invalid_schema_of_the_given_format_names_the_format(backend):
    out = MessageDecoder({1: PROTO_TEXT}, format="JSON", on_error="null").decode([wire.CONFLUENT.pack(1, b"{}")])
    assert out.errors.column("message")[0].as_py() == (
        "schema id 1 is not a valid JSON schema (schema is not valid JSON: Expecting value: line 1 column 1"
        " (char 0)); it is read as JSON because format='JSON' says so; this one looks like a PROTOBUF schema:"
        " pass format='PROTOBUF' (message 0, byte 0)"
    )
    # and the advice works
    assert MessageDecoder({1: PROTO_TEXT}, format="PROTOBUF").decode(
        [wire.CONFLUENT_PROTOBUF.pack(1, b"\x0a\x01x", message_indexes=[0])]
    ).to_pylist() == [{"city": "x"}]


class Unreachable:
    """A registry whose transport fails: a retry later could succeed, so decoding must raise."""

    def get_schema(self, schema_id):
        raise RegistryError("connection refused: http://127.0.0.1:9/schemas/ids/1")


def test_unreachable_registry_raises_even_with_on_error_null(backend):
    with pytest.raises(RegistryError, match="connection refused"):
        pc.decode([msg(1, V1, {"id": 1})], Unreachable(), on_error="null")


def test_error_rows_in_the_general_path_keep_input_order(backend):
    # several ids and a bad prefix force the row-by-row unframing path
    messages = [msg(i % 4, V1, {"id": i}) for i in range(40)]
    messages[7] = b"\x00\x00"
    out = pc.decode(messages, {1: V1, 2: V1}, on_error="null")
    errors = out.errors.to_pylist()
    bad_ids = {i for i in range(40) if i % 4 in (0, 3)} | {7}
    assert [e["index"] for e in errors] == sorted(bad_ids)
    by_index = {e["index"]: e["code"] for e in errors}
    assert by_index[7] == ErrorCode.WIRE_SHORT_PREFIX and by_index[3] == ErrorCode.SCHEMA_NOT_FOUND
    assert [r["id"] if r else None for r in rows(out.batch)] == [
        i if i % 4 in (1, 2) and i != 7 else None for i in range(40)
    ]


def test_guid_ids_unknown(backend):
    known, unknown = uuid.uuid4(), uuid.uuid4()
    messages = [msg(known, V1, {"id": 1}, wire.CONFLUENT_GUID), msg(unknown, V1, {"id": 2}, wire.CONFLUENT_GUID)]
    out = pc.decode(messages, {known: V1}, protocol=wire.CONFLUENT_GUID, on_error="null")
    assert rows(out.batch) == [{"id": 1}, None]
    (error,) = out.errors.to_pylist()
    assert error["code"] == ErrorCode.SCHEMA_NOT_FOUND and str(unknown) in error["message"]


def test_decode_payloads_unknown_ids(backend):
    bodies = [encode(V1, [{"id": i}])[0] for i in range(4)]
    decoder = MessageDecoder({1: V1}, on_error="null")
    out = decoder.decode_payloads(bodies, [1, 9, 1, 9])
    assert rows(out.batch) == [{"id": 0}, None, {"id": 2}, None]
    assert out.errors.column("index").to_pylist() == [1, 3]
    assert out.errors.column("code").to_pylist() == [ErrorCode.SCHEMA_NOT_FOUND] * 2
    single = decoder.decode_payloads(bodies, 9)
    assert single.batch.num_rows == 4 and single.errors.num_rows == 4
    guid = uuid.uuid4()
    listed = MessageDecoder({1: V1}, on_error="null").decode_payloads(bodies[:2], [1, guid])
    assert rows(listed.batch) == [{"id": 0}, None]
    assert listed.errors.column("code").to_pylist() == [ErrorCode.SCHEMA_NOT_FOUND]


def test_schema_resolution_error_class():
    exc = error_for(ErrorCode.SCHEMA_NOT_FOUND, 3, 0, 12, schema_id=12)
    assert isinstance(exc, SchemaResolutionError) and exc.index == 3 and exc.detail == 12


# -- empty input ------------------------------------------------------------------------------------


def test_empty_input_without_a_reader_has_no_columns(backend):
    out = pc.decode([], {1: V1, 2: V2})
    assert isinstance(out, pa.RecordBatch) and out.num_rows == 0 and out.num_columns == 0
    nulls = pc.decode([None, None], {1: V1, 2: V2})
    assert nulls.num_rows == 2 and nulls.num_columns == 0
    decoded = pc.decode(pa.array([], pa.binary()), {1: V1, 2: V2}, on_error="null")
    assert decoded.batch.num_rows == 0 and decoded.errors.num_rows == 0


def test_empty_input_with_a_reader_schema_has_its_columns(backend):
    out = pc.decode([], {1: V1}, reader_schema=V2)
    assert out.schema.names == ["id", "tag"] and out.num_rows == 0
    assert MessageDecoder({1: V1}, reader_schema=V2).decode_payloads([], []).schema.names == ["id", "tag"]


def test_empty_input_with_the_registry_s_only_schema(backend):
    assert pc.decode([], {1: V2}).schema.names == ["id", "tag"]
    with LocalRegistry() as registry:
        registry.register("users-value", V1)
        registry.register("users-value", V2)
        out = pc.decode([], registry)
        assert out.schema.names == ["id", "tag"]  # the only subject's latest version
        registry.register("orders-value", V1)
        assert MessageDecoder(registry).decode([]).num_columns == 0  # two subjects: no guess


def test_reader_subject_reads_every_message_as_the_latest_version(backend):
    with LocalRegistry() as registry:
        first = registry.register("users-value", V1)
        registry.register("users-value", V2)
        registry.register("other-value", NEEDS_NAME)
        decoder = MessageDecoder(registry, reader_subject="users-value")
        assert decoder.arrow_schema is not None and decoder.arrow_schema.names == ["id", "tag"]
        out = decoder.decode([msg(first, V1, {"id": 4})])
        assert out.to_pylist() == [{"id": 4, "tag": None}]
        assert decoder.decode([]).schema.names == ["id", "tag"]
    with pytest.raises(ValueError, match="not both"):
        MessageDecoder({}, reader_schema=V1, reader_subject="users-value")


# -- every row accounted for, on both twins ---------------------------------------------------------

_KIND = st.sampled_from(["good1", "good2", "unknown", "null", "short", "magic", "truncated"])


def _message(kind: str, i: int) -> bytes | None:
    if kind == "good1":
        return msg(1, V1, {"id": i})
    if kind == "good2":
        return msg(2, V2, {"id": i, "tag": None})
    if kind == "unknown":
        return msg(40 + i % 3, V1, {"id": i})
    if kind == "short":
        return b"\x00\x00\x01"
    if kind == "magic":
        return b"\x05" + msg(1, V1, {"id": i})[1:]  # type: ignore[index]
    if kind == "truncated":
        return msg(2, V2, {"id": i, "tag": "x" * 20})[:-3]  # type: ignore[index]
    return None


@settings(max_examples=60, deadline=None)
@given(st.lists(_KIND, max_size=30))
def test_every_row_is_accounted_for_and_twins_agree(kinds):
    from pulsar_codec._kernels import _backend

    messages = [_message(k, i) for i, k in enumerate(kinds)]
    results = []
    for name in ("cython", "python") if _backend.compiled_available() else ("python",):
        with _backend.use(name):
            out = pc.decode(messages, {1: V1, 2: V2}, on_error="null")
        results.append(out)
        rows = out.batch.num_rows
        assert rows == len(messages)
        valid = rows - (out.batch.column(0).null_count if out.batch.num_columns else rows)
        assert valid + out.errors.num_rows + messages.count(None) == len(messages)
        bad = {i for i, k in enumerate(kinds) if k not in ("good1", "good2", "null")}
        assert set(out.errors.column("index").to_pylist()) == bad
    for other in results[1:]:
        assert other.batch.equals(results[0].batch) and other.errors.equals(results[0].errors)


def test_numpy_ids_with_an_unknown_one(backend):
    bodies = [encode(V1, [{"id": i}])[0] for i in range(3)]
    out = MessageDecoder({1: V1, 2: V1}, on_error="null").decode_payloads(bodies, np.array([2, 1, 8]))
    assert rows(out.batch) == [{"id": 0}, {"id": 1}, None]
    assert out.errors.column("code").to_pylist() == [ErrorCode.SCHEMA_NOT_FOUND]


def test_a_decoder_never_creates_a_registry_file(tmp_path, backend):
    missing = tmp_path / "typo.db"
    with pytest.raises(RegistryError, match="no registry database"):
        pc.decode([msg(1, V1, {"id": 1})], str(missing), on_error="null")
    assert not missing.exists()
