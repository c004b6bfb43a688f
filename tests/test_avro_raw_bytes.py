"""A top-level Avro ``bytes`` value under Confluent's framing is raw, as Confluent's serializers
write it (spec/wire-formats.md 4.1: ``b"\\x02\\x03\\x04"`` -> ``00 00000001 02 03 04``); under
Hortonworks' protocols 0-3 a ``bytes`` value is raw, and a ``string`` under protocols 1-3 (5.2, 11.4)."""

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


# -- Hortonworks: the protocol byte says whether a value is raw ---------------------------------------

STRING = json.dumps("string")
HW_STRINGS = {7: STRING}


def test_the_hortonworks_spec_vectors(backend):
    """Section 11.4: protocol 3 writes a string as raw UTF-8, protocol 0 as an Avro string; one
    batch of each alone (one prefix) and both together read "hi"."""
    three, zero = bytes.fromhex("03 00000007 6869"), bytes.fromhex("00 00000007 04 6869")
    for messages in ([three, three], [zero, zero], [three, zero, None, three]):
        out = pc.decode(messages, HW_STRINGS, protocol=wire.HORTONWORKS)
        assert out.column("value").to_pylist() == ["hi" if m else None for m in messages]
    encoder = MessageEncoder(HW_STRINGS, protocol=wire.HORTONWORKS, schema=STRING, schema_id=7)
    assert encoder.encode(pa.table({"value": ["hi", None]})).to_pylist() == [three, None]
    assert encoder.encode_value("hi") == three
    decoder = MessageDecoder(HW_STRINGS, protocol=wire.HORTONWORKS)
    assert [decoder.decode_value(m) for m in (three, zero)] == ["hi", "hi"]


def test_every_hortonworks_avro_protocol(backend):
    """bytes raw under protocols 0-3, string raw under 1-3 (2: an 8-byte id; 1: metadata id and
    version), in one batch beside each other."""
    registry = {7: BYTES, 8: STRING, (5, 2): STRING}
    messages = [
        bytes.fromhex("00 00000007") + b"\x04ab",  # bytes, protocol 0: raw all the same
        bytes.fromhex("03 00000007") + b"\x04ab",
        bytes.fromhex("02 0000000000000007") + b"\x04ab",
        bytes.fromhex("00 00000008") + b"\x04ab",  # string, protocol 0: Avro
        bytes.fromhex("03 00000008") + b"\x04ab",
        bytes.fromhex("02 0000000000000008") + "é".encode(),
        bytes.fromhex("01 0000000000000005 00000002") + b"hi",
    ]
    out = pc.decode(messages, registry, protocol=wire.HORTONWORKS, reader_schema=BYTES)
    assert out.column("value").to_pylist() == [b"\x04ab", b"\x04ab", b"\x04ab", b"ab", b"\x04ab", "é".encode(), b"hi"]
    decoder = MessageDecoder(registry, protocol=wire.HORTONWORKS, reader_schema=BYTES)
    assert [decoder.decode_value(m) for m in messages] == out.column("value").to_pylist()


def test_bad_utf8_in_a_raw_string_is_found_at_its_byte_in_the_body(both_backends, monkeypatch):
    """The error of a raw row counts bytes in the payload as written (not in the copy given an
    Avro length), on both twins, split among threads too, and for one value."""
    from pulsar_codec._kernels import _backend
    from pulsar_codec.pipeline import _rows

    monkeypatch.setattr(_rows, "MIN_ROWS_PER_THREAD", 2)
    bad = bytes.fromhex("03 00000007") + b"ok\xff"
    messages = [bytes.fromhex("03 00000007") + b"fine"] * 5 + [bad] + [bytes.fromhex("00 00000007 04") + b"\xc3("]
    seen = []
    for name in both_backends:
        with _backend.use(name.name):
            for threads in (1, 3):
                decoder = MessageDecoder(HW_STRINGS, protocol=wire.HORTONWORKS, on_error="null", threads=threads)
                out = decoder.decode(messages)
                seen.append((out.batch.column("value").to_pylist(), out.errors.to_pylist()))
            with pytest.raises(pc.errors.AvroDecodeError) as caught:
                MessageDecoder(HW_STRINGS, protocol=wire.HORTONWORKS).decode_value(bad)
            assert (caught.value.index, caught.value.offset) == (0, 0)
            assert "byte 0)" in str(caught.value)
    values, errors = seen[0]
    assert all(s == seen[0] for s in seen)
    assert values == ["fine"] * 5 + [None, None]
    assert [(e["index"], e["offset"]) for e in errors] == [(5, 0), (6, 1)]  # raw: byte 0; Avro: after its length


def test_hortonworks_payloads_without_their_prefix_are_read_as_written(backend):
    """decode_payloads (the id from a header) reads a string as this package writes it: protocol 3, raw."""
    decoder = MessageDecoder(HW_STRINGS, protocol=wire.HORTONWORKS)
    assert decoder.decode_payloads([b"hi", None], 7).column("value").to_pylist() == ["hi", None]
    assert decoder.decode_value(b"hi", 7) == "hi"
    assert decoder.decode_value(b"\x04hi", 7, protocol_byte=0) == "hi"


def test_the_external_schema_reads_hortonworks_protocol_0_bytes_raw(backend):
    """Hortonworks' protocol-0 handler writes a byte array raw (spec 5.2), as the pipeline reads it."""
    external = AvroExternalSchema({7: BYTES}, BYTES, topic="t", protocol="HORTONWORKS", schema_id=7)
    message = bytes.fromhex("00 00000007") + b"\x04ab"
    assert external.decode(None, message) == b"\x04ab"
    assert pc.decode([message], {7: BYTES}, protocol=wire.HORTONWORKS).column("value").to_pylist() == [b"\x04ab"]
