"""Encoding into a subject that already has a schema, as confluent-kafka does (issue 10, item 8):
``schema=``, ``use_latest=True``, ``schema_id=``, ``auto_register=False``, and a derived schema
named after the subject's record."""

from __future__ import annotations

import json
import pickle

import pyarrow as pa
import pytest

import pulsar_codec as pc
from pulsar_codec.errors import EncodeError, IncompatibleSchemaError, SchemaNotFoundError
from pulsar_codec.pipeline import Encoded, MessageEncoder
from pulsar_codec.registry import LocalRegistry
from test_serde import USER, ck_client, ck_deserializer, ck_serializer, ctx, reg, server, user  # noqa: F401


def _batch(rows: list[dict], schema: pa.Schema | None = None) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(rows, schema=schema)


def _seed_subject_with_confluent_kafka(ck_client, user_record) -> int:  # noqa: F811
    serializer = ck_serializer(ck_client, USER)
    serializer(user_record, ctx("orders"))
    return int(ck_client.get_latest_version("orders-value").schema_id)


def _full_user(i: int) -> dict:
    return user(i)


def test_use_latest_writes_confluent_kafka_s_version(backend, reg, ck_client):  # noqa: F811
    schema_id = _seed_subject_with_confluent_kafka(ck_client, _full_user(0))
    rows = [_full_user(i) for i in range(3)]
    batch = _batch(rows)
    framed = pc.encode(batch, ck_client, "orders-value", use_latest=True)
    assert [int.from_bytes(m[1:5], "big") for m in framed.to_pylist()] == [schema_id] * 3
    deserializer = ck_deserializer(ck_client)
    assert [deserializer(m, ctx("orders")) for m in framed.to_pylist()] == rows
    assert reg.list_versions("orders-value") == [1]  # nothing new registered
    # a column the version has no field for is an error, never silently dropped
    with pytest.raises(EncodeError, match=r"column\(s\) \['zzz'\] that ex.User has no field for"):
        pc.encode(_batch([{**r, "zzz": 1} for r in rows]), ck_client, "orders-value", use_latest=True)


def test_schema_given_finds_its_id_without_a_new_version(backend, reg, ck_client):  # noqa: F811
    schema_id = _seed_subject_with_confluent_kafka(ck_client, _full_user(0))
    rows = [_full_user(i) for i in range(2)]
    for auto_register in (True, False):
        framed = pc.encode(_batch(rows), ck_client, "orders-value", schema=USER, auto_register=auto_register)
        assert {int.from_bytes(m[1:5], "big") for m in framed.to_pylist()} == {schema_id}
    deserializer = ck_deserializer(ck_client)
    assert [deserializer(m, ctx("orders")) for m in framed.to_pylist()] == rows
    assert reg.list_versions("orders-value") == [1]


def test_schema_id_given(backend, reg, ck_client):  # noqa: F811
    schema_id = _seed_subject_with_confluent_kafka(ck_client, _full_user(0))
    rows = [_full_user(5)]
    framed = pc.encode(_batch(rows), reg, "orders-value", schema_id=schema_id)
    assert ck_deserializer(ck_client)(framed[0].as_py(), ctx("orders")) == rows[0]


def test_auto_register_false_refuses_an_unknown_schema(backend, reg):  # noqa: F811
    reg.register("orders-value", USER)
    other = dict(USER, fields=USER["fields"][:1])
    with pytest.raises(SchemaNotFoundError, match="subject 'orders-value' holds no version of the writer schema"):
        pc.encode(_batch([{"id": 1}]), reg, "orders-value", schema=other, auto_register=False)
    assert reg.list_versions("orders-value") == [1]
    with pytest.raises(SchemaNotFoundError):
        pc.encode(_batch([{"id": 1}]), {}, "orders-value", schema=other, auto_register=False)


def test_derived_schema_takes_the_subject_s_record_name(backend, reg):  # noqa: F811
    reg.register("orders-value", USER)  # record ex.User
    rows = [{"id": 1, "name": "a", "score": 0.5, "active": True}]
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("name", pa.string(), nullable=False),
            pa.field("score", pa.float64(), nullable=False),
            pa.field("active", pa.bool_(), nullable=False),
        ]
    )
    reg.set_compatibility("BACKWARD", "orders-value")
    framed = pc.encode(_batch(rows, schema), reg, "orders-value")
    written = json.loads(reg.get_schema(int.from_bytes(framed[0].as_py()[1:5], "big")).schema)
    full_name = written["name"] if "." in written["name"] else f"{written.get('namespace')}.{written['name']}"
    assert full_name == "ex.User"
    assert pc.decode(framed, reg).to_pylist() == rows


def test_derived_schema_for_a_new_subject_is_named_after_it(backend):
    with LocalRegistry() as registry:
        framed = pc.encode(_batch([{"x": 1}]), registry, "shop.orders-value")
        written = json.loads(registry.get_latest("shop.orders-value").schema)
        assert written["name"] == "shop_orders"
        assert pc.decode(framed, registry).to_pylist() == [{"x": 1}]
        framed = pc.encode(_batch([{"x": 1}]), registry, "9lives-key")
        assert json.loads(registry.get_latest("9lives-key").schema)["name"] == "_9lives"


def test_incompatible_derived_schema_is_refused_by_the_subject(backend, reg):  # noqa: F811
    reg.register("orders-value", USER)
    with pytest.raises(IncompatibleSchemaError):  # "id" was a long: a string cannot be read as one
        pc.encode(_batch([{"id": "x"}]), reg, "orders-value")
    required = pa.schema([pa.field("other", pa.string(), nullable=False)])
    with pytest.raises(IncompatibleSchemaError):  # a new field without a default cannot read the old rows
        pc.encode(_batch([{"other": "x"}], required), reg, "orders-value")


def test_derived_schema_does_not_depend_on_the_batch_s_nulls(backend, reg):  # noqa: F811
    """The batches of one stream derive one schema, whether or not each happens to hold nulls; a
    column added later is nullable with a null default, so the subject takes the new version."""
    encoder = pc.MessageEncoder(reg, "stream-value")
    first = encoder.encode(pa.table({"id": [1, None]}))
    second = encoder.encode(pa.table({"id": [3, 4]}))
    assert {m[:5] for m in first.to_pylist() + second.to_pylist()} == {first[0].as_py()[:5]}  # one schema id
    assert reg.list_versions("stream-value") == [1]
    assert json.loads(reg.get_latest("stream-value").schema)["fields"] == [
        {"name": "id", "type": ["null", "long"], "default": None}
    ]
    third = encoder.encode(pa.table({"id": [5], "tag": ["x"]}))
    assert reg.list_versions("stream-value") == [1, 2]
    decoded = pc.decode(pa.concat_arrays([first, second, third]), reg)
    assert decoded.to_pylist() == [
        {"id": 1, "tag": None},
        {"id": None, "tag": None},
        {"id": 3, "tag": None},
        {"id": 4, "tag": None},
        {"id": 5, "tag": "x"},
    ]
    strict = pa.schema([pa.field("id", pa.int64(), nullable=False)])  # Arrow's flag says: never null
    pc.encode(pa.table({"id": [1]}, strict), reg, "strict-value")
    assert json.loads(reg.get_latest("strict-value").schema)["fields"] == [{"name": "id", "type": "long"}]
    # ... but a field the subject's latest version lets be null stays nullable: "long" could not
    # read the versions before it
    strict = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("tag", pa.string(), nullable=False)])
    pc.encode(pa.table({"id": [6], "tag": ["y"]}, strict), reg, "stream-value")
    assert reg.list_versions("stream-value") == [1, 2]


@pytest.mark.parametrize("fmt", ["AVRO", "JSON"])
def test_one_encoder_keeps_what_it_registered_nullable(backend, reg, fmt):  # noqa: F811
    """The first batch of a new subject registers its first version; a later batch of the same
    encoder whose Arrow schema says "never null" derives from that version, as a new encoder on
    the subject does, instead of a version the subject refuses."""
    encoder = pc.MessageEncoder(reg, "fresh-value", format=fmt)
    first = encoder.encode(pa.table({"id": [1]}))
    strict = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    second = encoder.encode(pa.table({"id": [2]}, strict))
    assert reg.list_versions("fresh-value") == [1]
    assert {m[:5] for m in first.to_pylist() + second.to_pylist()} == {first[0].as_py()[:5]}
    assert pc.decode(pa.concat_arrays([first, second]), reg).column("id").to_pylist() == [1, 2]


def test_use_latest_arguments():
    with pytest.raises(ValueError, match="needs a subject"):
        MessageEncoder({}, use_latest=True)
    with pytest.raises(ValueError, match="do not pass schema"):
        MessageEncoder({}, "s", use_latest=True, schema=USER)
    with pytest.raises(ValueError, match="needs use_latest=True"):
        MessageEncoder({}, "s").latest_writer()


def test_latest_writer_is_the_subject_s_latest_version(backend, reg):  # noqa: F811
    """What spark.encode(use_latest=True) ships to its workers: the id and the parsed schema."""
    first = reg.register("users-value", json.dumps(USER))
    schema_id, model = MessageEncoder(reg, "users-value", use_latest=True).latest_writer()
    assert schema_id == first and model.fullname == "ex.User"


JSON_ORDER = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "note": {"type": "string"}},
    "required": ["id"],
}


def test_without_format_the_subject_s_format_is_written(backend, reg):  # noqa: F811
    """No ``format=``: the encoder writes what the subject holds (its latest version's schemaType),
    for use_latest, schema_id and a derived schema alike; Avro for a subject with no versions."""
    schema_id = reg.register("orders-value", json.dumps(JSON_ORDER), schema_type="JSON")
    batch = pa.table({"id": [1, 2], "note": [None, "x"]})
    latest = pc.encode(batch, reg, "orders-value", use_latest=True)
    # the JSON row writer, with the version's rules: "note" refuses null, so a null note is left out
    assert [m[5:] for m in latest.to_pylist()] == [b'{"id":1}', b'{"id":2,"note":"x"}']
    assert {int.from_bytes(m[1:5], "big") for m in latest.to_pylist()} == {schema_id}
    assert MessageEncoder(reg, "orders-value", schema_id=schema_id).format == "JSON"
    derived = MessageEncoder(reg, "orders-value")
    assert derived.format == "JSON"
    written = derived.encode(batch)
    assert pc.decode(written, reg).to_pylist() == [{"id": 1, "note": None}, {"id": 2, "note": "x"}]
    assert reg.get_latest("orders-value").schema_type == "JSON"
    assert MessageEncoder(reg, "new-value").format == "AVRO"
    assert MessageEncoder({}, "orders-value").format == "AVRO"  # a Mapping lists no subjects
    # a format given is the format written: into a JSON subject, an Avro version is refused
    with pytest.raises(IncompatibleSchemaError, match="SCHEMA_TYPE_MISMATCH"):
        pc.encode(batch, reg, "orders-value", format="AVRO")


def test_a_pickled_encoder_keeps_the_format_it_found(backend, tmp_path):
    """The format found in the registry travels with the encoder's configuration."""
    path = str(tmp_path / "registry.db")
    registry = LocalRegistry(path)
    try:
        registry.register("orders-value", json.dumps(JSON_ORDER), schema_type="JSON")
        encoder = pickle.loads(pickle.dumps(MessageEncoder(path, "orders-value")))
        assert encoder.format == "JSON"
        assert encoder.encode(pa.table({"id": [7]})).to_pylist()[0][5:] == b'{"id":7}'
    finally:
        registry.close()


def test_derived_json_schema_keeps_the_subject_s_optional_properties(backend, reg):  # noqa: F811
    """JSON: a property the latest version leaves optional stays optional in a derived version,
    so a batch whose Arrow schema says "never null" does not make a version the subject refuses."""
    first = pc.MessageEncoder(reg, "events-value", format="JSON")
    first.encode(pa.table({"id": [1, None]}))
    strict = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    pc.MessageEncoder(reg, "events-value", format="JSON").encode(pa.table({"id": [2]}, strict))
    assert reg.list_versions("events-value") == [1]
    latest = json.loads(reg.get_latest("events-value").schema)
    assert latest["properties"]["id"]["type"] == ["integer", "null"] and "id" not in latest.get("required", [])


@pytest.mark.parametrize("fmt", ["AVRO", "JSON", "PROTOBUF"])
def test_on_error_null_steps_around_rows_that_cannot_be_encoded(backend, fmt):
    """One row that does not fit the schema costs that row, not the batch: a null message and an
    errors row (index, the EncodeError's text counted in the batch); the other rows are the bytes a
    batch without it gives."""
    schemas = {
        "AVRO": {"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}]},
        "JSON": {"type": "object", "properties": {"n": {"type": "string", "format": "date"}}},
        "PROTOBUF": 'syntax = "proto3"; package p; message R { int32 n = 1; }',
    }
    schema = schemas[fmt]
    if fmt == "JSON":  # a date that is no date: a row's error
        values = ["2024-01-01", "yesterday", "2024-01-03", "soon", "never"] + [f"2024-02-{d:02}" for d in range(1, 29)]
        fits = [v.startswith("2024") for v in values]
        column = pa.array(values)
    else:  # a number past int32
        values = [1, 2**40, 3, 2**40, 2**40, 6] + list(range(7, 200))
        fits = [v < 2**31 for v in values]
        column = pa.array(values, pa.int64())
    batch = pa.table({"n": column})
    encoder = MessageEncoder({}, "r-value", schema=schema, format=fmt, schema_id=1, on_error="null")
    out = encoder.encode(batch)
    assert isinstance(out, Encoded)
    messages, errors = out
    assert errors.column("index").to_pylist() == [1, 3, 4]
    assert all(f"row {i}" in m for i, m in zip([1, 3, 4], errors.column("message").to_pylist()))
    good = column.filter(pa.array(fits))
    expected = MessageEncoder({}, "r-value", schema=schema, format=fmt, schema_id=1).encode(pa.table({"n": good}))
    assert [m for m in messages.to_pylist() if m is not None] == expected.to_pylist()
    assert [i for i, m in enumerate(messages.to_pylist()) if m is None] == [1, 3, 4]
    with pytest.raises(EncodeError, match="row 1"):
        MessageEncoder({}, "r-value", schema=schema, format=fmt, schema_id=1).encode(batch)
    # a batch the schema cannot take at all raises either way
    with pytest.raises(EncodeError):
        encoder.encode(pa.table({"n": [1], "zzz": [2]}))
    assert pickle.loads(pickle.dumps(encoder)).on_error == "null"


def test_on_error_checks_its_value():
    with pytest.raises(ValueError, match="on_error"):
        MessageEncoder({}, "s", on_error="skip")


def test_use_latest_on_a_subject_without_versions_says_what_to_do(backend, reg, ck_client):  # noqa: F811
    """No latest version to write with: a SchemaNotFoundError that says so and what to do, with this
    package's registries and with confluent-kafka's client (whose own "not found" it translates)."""
    for registry in (reg, ck_client):
        with pytest.raises(
            SchemaNotFoundError, match="subject 'nope-value' has no version to write with.*register one"
        ):
            pc.encode(pa.table({"a": [1]}), registry, "nope-value", use_latest=True)


@pytest.mark.parametrize("fmt", ["JSON", "PROTOBUF"])
def test_a_decimal_column_without_schema_is_refused_before_registering(backend, reg, fmt):  # noqa: F811
    """A derived JSON or Protobuf schema has no form for a decimal column: the encode fails before
    the subject gets a version (a failed write leaves the registry as it was)."""
    from decimal import Decimal

    from pulsar_codec.errors import SchemaError

    table = pa.table({"a": [1], "d": pa.array([Decimal("1.23")], pa.decimal128(6, 2))})
    with pytest.raises(SchemaError, match=r"decimal128\(6, 2\)"):
        pc.encode(table, reg, "dec-value", format=fmt)
    assert "dec-value" not in reg.list_subjects()
