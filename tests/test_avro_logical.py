"""Logical types at their edges: decimals past their precision, ``uuid`` on ``fixed(16)``."""

from __future__ import annotations

import decimal
import json
import uuid

import pyarrow as pa
import pytest

from pulsar_codec import avro, compat
from pulsar_codec.errors import AvroDecodeError, EncodeError, ErrorCode
from pulsar_codec.formats.avro.format import FORMAT


def zz(n: int) -> bytes:
    v = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def dec_bytes(unscaled: int, size: int | None = None) -> bytes:
    """A ``bytes`` decimal body: length, then big-endian two's complement."""
    data = unscaled.to_bytes(size or (unscaled.bit_length() + 8) // 8, "big", signed=True)
    return zz(len(data)) + data


# -- decimals wider than their precision --------------------------------------------------------------


@pytest.mark.parametrize("precision", [1, 5, 18, 38, 39, 76])
def test_decimal_bytes_past_the_precision_is_an_error_row(backend, precision):
    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "n", "type": "int"},
            {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": 0}},
        ],
    }
    top = 10**precision - 1
    bodies = [zz(1) + dec_bytes(top), zz(2) + dec_bytes(-top), zz(3) + dec_bytes(top + 1), zz(4) + dec_bytes(-top - 1)]
    res = avro.Decoder(schema).decode(bodies, on_error="null")
    res.batch.validate(full=True)  # what Arrow's own validation refused before
    assert res.batch.column("d").to_pylist() == [decimal.Decimal(top), decimal.Decimal(-top), None, None]
    errors = res.errors.to_pylist()
    assert [(e["index"], e["code"], e["offset"]) for e in errors] == [
        (2, ErrorCode.AVRO_DECIMAL_PRECISION, 1),
        (3, ErrorCode.AVRO_DECIMAL_PRECISION, 1),
    ]
    assert errors[0]["message"] == (
        f"decimal unscaled value has more digits than its precision {precision} (message 2, byte 1)"
    )
    with pytest.raises(AvroDecodeError) as e:
        avro.Decoder(schema).decode(bodies)
    assert (e.value.code, e.value.index, e.value.offset, e.value.detail) == (
        ErrorCode.AVRO_DECIMAL_PRECISION,
        2,
        1,
        precision,
    )


@pytest.mark.parametrize("size,precision", [(2, 4), (8, 10), (16, 38), (20, 40)])
def test_decimal_fixed_past_the_precision_is_an_error_row(backend, size, precision):
    schema = {"type": "fixed", "name": "D", "size": size, "logicalType": "decimal", "precision": precision, "scale": 2}
    top = 10**precision - 1
    bodies = [(-top).to_bytes(size, "big", signed=True), (top + 1).to_bytes(size, "big", signed=True)]
    res = avro.Decoder(schema).decode(bodies, on_error="null")
    res.batch.validate(full=True)
    assert res.batch.column(0).to_pylist() == [decimal.Decimal(-top).scaleb(-2, decimal.Context(prec=100)), None]
    assert res.errors.to_pylist()[0]["code"] == ErrorCode.AVRO_DECIMAL_PRECISION
    assert (res.errors.column("index").to_pylist(), res.errors.column("offset").to_pylist()) == ([1], [0])


def test_decimal_precision_is_the_readers(backend):
    # the writer allows 6 digits, the reader 4: the value is checked against the column's own precision
    writer = {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 0}
    reader = {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 0}
    res = avro.Decoder(reader, writer).decode([dec_bytes(9999), dec_bytes(10000)], on_error="null")
    assert res.batch.column(0).to_pylist() == [decimal.Decimal(9999), None]
    assert res.errors.column("message").to_pylist() == [
        "decimal unscaled value has more digits than its precision 4 (message 1, byte 0)"
    ]


def test_decimal_precision_in_one_message_decode(backend):
    plan = FORMAT.plan(*(avro.parse({"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 1}),) * 2)
    assert FORMAT.decode_value(plan, dec_bytes(-99)) == decimal.Decimal("-9.9")
    with pytest.raises(AvroDecodeError) as e:
        FORMAT.decode_value(plan, dec_bytes(100))
    assert (e.value.code, e.value.detail) == (ErrorCode.AVRO_DECIMAL_PRECISION, 2)


# -- uuid on fixed(16) --------------------------------------------------------------------------------

UUID_FIXED = {"type": "fixed", "name": "Id", "size": 16, "logicalType": "uuid"}
IDS = [
    uuid.UUID("00000000-0000-0000-0000-000000000000"),
    uuid.UUID("0123abcd-ef45-6789-ABCD-ef0123456789"),
    uuid.uuid4(),
]


def test_uuid_fixed_decodes_to_canonical_text(backend):
    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "id", "type": UUID_FIXED},
            {"name": "opt", "type": ["null", "Id"]},
            {"name": "many", "type": {"type": "array", "items": "Id"}},
            {"name": "either", "type": ["string", "Id"]},
        ],
    }
    bodies = [i.bytes + zz(1) + i.bytes + zz(2) + i.bytes + IDS[0].bytes + zz(0) + zz(1) + i.bytes for i in IDS] + [
        None,
        IDS[1].bytes + zz(0) + zz(0) + zz(0) + zz(1) + b"x",
    ]
    batch = avro.Decoder(schema).decode(bodies)
    batch.validate(full=True)
    assert batch.schema.field("id").type == pa.string()
    assert batch.schema.field("many").type == pa.list_(pa.field("item", pa.string(), nullable=False))
    texts = [str(i) for i in IDS]
    assert all(t == t.lower() and len(t) == 36 for t in texts)
    rows = batch.to_pylist()
    assert [r["id"] for r in rows] == [*texts, None, texts[1]]
    assert [r["opt"] for r in rows] == [*texts, None, None]
    assert [r["many"] for r in rows[:3]] == [[t, texts[0]] for t in texts]
    assert [r["either"] for r in rows] == [*texts, None, "x"]
    # one message at a time gives the same values as the batch
    plan = FORMAT.plan(avro.parse(schema), avro.parse(schema))
    for body, row in zip(bodies, rows):
        if body is not None:
            assert FORMAT.decode_value(plan, body) == row


def test_uuid_fixed_round_trips_through_the_encoder(backend):
    schema = {"type": "record", "name": "R", "fields": [{"name": "id", "type": ["null", UUID_FIXED]}]}
    texts = [str(i) for i in IDS]
    batch = pa.RecordBatch.from_pylist([{"id": t} for t in texts] + [{"id": None}])
    encoded = avro.Encoder(schema).encode(batch)
    assert encoded.to_pylist()[:3] == [zz(1) + i.bytes for i in IDS]
    assert avro.Decoder(schema).decode(encoded).to_pylist() == batch.to_pylist()
    encoder = avro.Encoder(UUID_FIXED)
    for value in (texts[1], texts[1].upper(), IDS[1], IDS[1].bytes):
        assert encoder.encode_value(value) == IDS[1].bytes
    # the raw 16 bytes of a fixed_size_binary column are still taken as they are
    raw = pa.table({"value": pa.array([i.bytes for i in IDS], pa.binary(16))})
    assert avro.Encoder(UUID_FIXED).encode(raw).to_pylist() == [i.bytes for i in IDS]


def test_uuid_fixed_text_that_is_no_uuid_is_an_encode_error(backend):
    schema = {"type": "record", "name": "R", "fields": [{"name": "id", "type": UUID_FIXED}]}
    with pytest.raises(EncodeError, match="id"):
        avro.Encoder(schema).encode(pa.table({"id": [str(IDS[0]), "not-a-uuid"]}))
    with pytest.raises(EncodeError):
        avro.Encoder(UUID_FIXED).encode_value("0123")


def test_uuid_fixed_keeps_its_schema_and_resolution(backend):
    assert json.loads(FORMAT.schema_text(avro.parse(UUID_FIXED)))["logicalType"] == "uuid"
    assert compat.canonical_form(UUID_FIXED) == compat.canonical_form(json.dumps(UUID_FIXED))
    plain = {"type": "fixed", "name": "Id", "size": 16}
    assert avro.Decoder(UUID_FIXED, plain).decode([IDS[1].bytes]).to_pylist() == [{"value": str(IDS[1])}]
    assert avro.Decoder(plain, UUID_FIXED).decode([IDS[1].bytes]).to_pylist() == [{"value": IDS[1].bytes}]
    # uuid annotates fixed(16) only: another size stays plain bytes, as the specification asks
    other = {"type": "fixed", "name": "Id", "size": 8, "logicalType": "uuid"}
    assert avro.Decoder(other).arrow_schema.field(0).type == pa.binary(8)
