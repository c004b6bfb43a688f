"""A top-level Avro ``bytes`` value under Confluent's framing is raw, as Confluent's serializers
write it (spec/wire-formats.md 4.1: ``b"\\x02\\x03\\x04"`` -> ``00 00000001 02 03 04``)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pulsar_codec as pc
from pulsar_codec import wire
from pulsar_codec.external import AvroExternalSchema
from pulsar_codec.pipeline import MessageDecoder, MessageEncoder
from test_serde import ck_client, ck_deserializer, ck_serializer, ctx, reg, server  # noqa: F401

BYTES = json.dumps("bytes")


def test_the_spec_vector(backend):
    """Tests first: the byte-exact vector of section 4.1, both ways."""
    framed = MessageEncoder({1: BYTES}, protocol=wire.CONFLUENT, schema=BYTES, schema_id=1).encode(
        pa.table({"value": pa.array([b"\x02\x03\x04"], pa.binary())})
    )
    assert framed.to_pylist() == [bytes.fromhex("00 00000001 020304")]
    assert pc.decode([bytes.fromhex("00 00000001 020304")], {1: BYTES}).to_pylist() == [{"value": b"\x02\x03\x04"}]


def test_confluent_kafka_reads_ours_and_we_read_theirs(backend, reg, ck_client):  # noqa: F811
    values = [b"", b"\x04ab", b"\x01\x02", bytes(range(256)) * 3]
    theirs = [ck_serializer(ck_client, "bytes")(v, ctx()) for v in values]  # type: ignore[arg-type]
    assert pc.decode(theirs, reg).column("value").to_pylist() == values
    ours = pc.encode(pa.table({"value": pa.array(values, pa.binary())}), reg, "orders-value", schema=BYTES)
    assert ours.to_pylist() == theirs
    deserialize = ck_deserializer(ck_client)  # it refuses a message of the prefix alone (b"")
    assert [deserialize(m, ctx()) for m in ours.to_pylist()[1:]] == values[1:]


def test_one_value_and_the_external_schema_agree_with_the_batch(backend, reg):  # noqa: F811
    external = AvroExternalSchema(reg, BYTES, topic="raw")
    messages = [external.encode(None, v).data for v in (b"\x06abcdef", b"\x01\x02", b"\x04ab")]
    decoder = MessageDecoder(reg)
    assert [decoder.decode_value(m) for m in messages] == [b"\x06abcdef", b"\x01\x02", b"\x04ab"]
    assert decoder.decode(messages).column("value").to_pylist() == [b"\x06abcdef", b"\x01\x02", b"\x04ab"]
    body_id = wire.CONFLUENT.unpack(messages[0])[0]
    assert decoder.decode_value(messages[0][5:], body_id) == b"\x06abcdef"
    assert decoder.decode_payloads([m[5:] for m in messages], body_id).column("value").to_pylist() == [
        b"\x06abcdef",
        b"\x01\x02",
        b"\x04ab",
    ]


def test_raw_and_avro_writers_in_one_batch(backend):
    """A bytes writer (raw) and a string writer (Avro binary) read together as string (Avro's
    bytes -> string promotion); a null, a bad prefix and an unknown id stay what they were."""
    registry = {1: BYTES, 2: json.dumps("string")}
    messages = [
        wire.CONFLUENT.pack(1, b"raw text"),
        wire.CONFLUENT.pack(2, b"\x08avro"),
        None,
        b"\x07bad",
        wire.CONFLUENT.pack(9, b"x"),
        wire.CONFLUENT.pack(1, "é".encode()),
    ]
    decoded, errors = pc.decode(messages, registry, reader_schema=json.dumps("string"), on_error="null")
    assert decoded.column("value").to_pylist() == ["raw text", "avro", None, None, None, "é"]
    assert errors.column("index").to_pylist() == [3, 4]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=300)), max_size=40), st.sampled_from([0, 2]))
def test_round_trip_on_both_twins_and_threads(both_backends, values, threads):
    from pulsar_codec._kernels import _backend

    table = pa.table({"value": pa.array(values, pa.binary())})
    encoder = MessageEncoder({1: BYTES}, schema=json.dumps(["null", "bytes"]), schema_id=1)
    raw = MessageEncoder({1: BYTES}, schema=BYTES, schema_id=1)
    present = pa.table({"value": pa.array([v for v in values if v is not None], pa.binary())})
    framed = raw.encode(present)
    assert [m[5:] for m in framed.to_pylist()] == present.column("value").to_pylist()
    outputs = []
    for name in both_backends:
        with _backend.use(name.name):
            decoder = MessageDecoder({1: BYTES}, threads=threads)
            outputs.append(decoder.decode(framed.to_pylist() + [None]).column("value").to_pylist())
    assert outputs[0] == outputs[1] == present.column("value").to_pylist() + [None]
    # a union with null is a record-less Avro value like any other: written with its branch index
    assert all(m is None or m[5] in (0, 2) for m in encoder.encode(table).to_pylist())


@pytest.mark.parametrize("protocol", [wire.APICURIO, wire.APICURIO_V3])
def test_other_registries_write_bytes_as_avro(backend, protocol):
    """Only Confluent's serializers write a top-level bytes raw here; Apicurio's write Avro binary."""
    encoder = MessageEncoder({1: BYTES}, protocol=protocol, schema=BYTES, schema_id=1)
    framed = encoder.encode(pa.table({"value": pa.array([b"ab"], pa.binary())}))
    assert bytes(framed[0].as_py()).endswith(b"\x04ab")
    assert pc.decode(framed, {1: BYTES}, protocol=protocol).column("value").to_pylist() == [b"ab"]
