"""pc.decode / pc.encode over framed, mixed-schema batches, and the Avro Encoder."""

from __future__ import annotations

import datetime
import decimal
import io

import fastavro
import pyarrow as pa
import pytest

import pulsar_codec as pc
from pulsar_codec import avro, wire
from pulsar_codec.errors import AvroDecodeError, ErrorCode, SchemaError, SchemaNotFoundError, WireFormatError
from test_avro_support import encode

V1 = {"type": "record", "name": "User", "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}]}
V2 = {
    "type": "record",
    "name": "User",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "email", "type": ["null", "string"], "default": None},
    ],
}
REGISTRY = {1: V1, 2: V2}


def framed(schema_id, schema, record):
    return wire.CONFLUENT.pack(schema_id, encode(schema, [record])[0])


def test_mixed_ids_in_input_order(backend):
    msgs = [
        framed(1, V1, {"id": 1, "name": "a"}),
        framed(2, V2, {"id": 2, "name": "b", "email": "b@x"}),
        None,
        framed(1, V1, {"id": 3, "name": "c"}),
    ]
    batch = pc.decode(pa.array(msgs, pa.binary()), REGISTRY)
    assert batch.to_pylist() == [
        {"id": 1, "name": "a", "email": None},
        {"id": 2, "name": "b", "email": "b@x"},
        {"id": None, "name": None, "email": None},
        {"id": 3, "name": "c", "email": None},
    ]
    assert batch.schema.field("id").type == pa.int64()
    # an explicit reader schema: the old one cannot read the new writer's long id
    with pytest.raises(SchemaError, match="User.id"):
        pc.decode(msgs, REGISTRY, reader_schema=V1)
    names_only = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}
    assert pc.decode(msgs, REGISTRY, reader_schema=names_only).column(0).to_pylist() == ["a", "b", None, "c"]


class Client:
    def __init__(self):
        self.calls = []

    def get_schema(self, schema_id):
        self.calls.append(schema_id)
        return {1: V1, 2: V2}[schema_id]


def test_registry_client_looked_up_once(backend):
    client = Client()
    msgs = [framed(1, V1, {"id": i, "name": "x"}) for i in range(3)]
    pc.decode(msgs, client)
    pc.decode(msgs, client)
    assert client.calls == [1]
    with pytest.raises(SchemaNotFoundError):
        pc.decode([framed(9, V1, {"id": 1, "name": "x"})], REGISTRY)


def test_on_error_null_reports_wire_and_avro_errors(backend):
    good = framed(1, V1, {"id": 5, "name": "ok"})
    msgs = [good, b"\x07\x00\x00\x00\x01\x00", good[:-1], None, b"\x00\x00", good]
    res = pc.decode(msgs, REGISTRY, on_error="null")
    assert isinstance(res, avro.Decoded)
    assert res.batch.column("id").to_pylist() == [5, None, None, None, None, 5]
    errs = res.errors.to_pylist()
    assert [e["index"] for e in errs] == [1, 2, 4]
    assert errs[0]["code"] == ErrorCode.WIRE_BAD_MAGIC and errs[0]["message"].startswith("invalid magic byte 0x07")
    assert errs[1]["code"] == ErrorCode.AVRO_LENGTH_PAST_END
    assert errs[2]["code"] == ErrorCode.WIRE_SHORT_PREFIX
    assert res.errors.schema.names == ["index", "code", "offset", "message"]
    with pytest.raises(WireFormatError) as e:
        pc.decode(msgs, REGISTRY)
    assert e.value.index == 1
    with pytest.raises(AvroDecodeError) as e:
        pc.decode([good, good[:-1]], REGISTRY)
    assert e.value.index == 1


def test_on_error_null_many_bad_prefixes_stays_linear(backend, monkeypatch):
    # after each bad prefix the wire kernel resumes; it must not be handed the whole rest of the
    # batch every time (n bad rows made that O(n^2): minutes for a few hundred thousand rows)
    good = framed(1, V1, {"id": 5, "name": "ok"})
    n = 3000
    bad_rows = set(range(0, 1000)) | set(range(1000, n, 7))  # a run of bad rows, then scattered
    msgs = [b"\x07garbage" if i in bad_rows else (None if i % 11 == 0 else good) for i in range(n)]
    walked = []
    real = backend.wire.unframe

    def counting(data, offsets, *args, **kwargs):
        walked.append(len(offsets) - 1)
        return real(data, offsets, *args, **kwargs)

    monkeypatch.setattr(backend.wire, "unframe", counting)
    res = pc.decode(pa.array(msgs, pa.binary()), REGISTRY, on_error="null")
    assert sum(walked) <= 200 * n
    assert res.errors.column("index").to_pylist() == sorted(bad_rows)
    expected = [None if (i in bad_rows or i % 11 == 0) else 5 for i in range(n)]
    assert res.batch.column("id").to_pylist() == expected


def test_chunked_and_view_inputs(backend):
    msgs = [framed(1, V1, {"id": i, "name": "n" * i}) for i in range(6)]
    chunked = pa.chunked_array([pa.array(msgs[:2], pa.binary()), pa.array(msgs[2:], pa.binary())])
    assert pc.decode(chunked, REGISTRY).column("id").to_pylist() == list(range(6))
    payloads = wire.unframe(msgs, wire.CONFLUENT).payloads
    assert avro.Decoder(V1).decode(payloads).column("id").to_pylist() == list(range(6))


SCHEMA = {
    "type": "record",
    "name": "All",
    "fields": [
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "s", "type": "string"},
        {"name": "y", "type": "bytes"},
        {"name": "n", "type": ["null", "string"]},
        {"name": "u", "type": ["long", "string"]},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 2}},
        {"name": "a", "type": {"type": "array", "items": "int"}},
        {"name": "m", "type": {"type": "map", "values": "double"}},
        {"name": "r", "type": {"type": "record", "name": "In", "fields": [{"name": "x", "type": "int"}]}},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
        {"name": "dt", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    ],
}
RECORDS = [
    dict(
        b=True,
        i=-3,
        l=2**40,
        f=1.5,
        d=-2.25,
        s="héllo",
        y=b"\x00\xff",
        n=None,
        u=7,
        e="B",
        fx=b"ab",
        a=[1, 2],
        m={"k": 1.0},
        r={"x": 1},
        dec=decimal.Decimal("-12.34"),
        dt=datetime.date(2020, 5, 17),
        ts=datetime.datetime(2021, 1, 2, 3, 4, 5, 6, tzinfo=datetime.UTC),
    ),
    dict(
        b=False,
        i=0,
        l=-1,
        f=0.0,
        d=1e300,
        s="",
        y=b"",
        n="x",
        u="s",
        e="A",
        fx=b"\0\0",
        a=[],
        m={},
        r={"x": -1},
        dec=decimal.Decimal("0.00"),
        dt=datetime.date(1960, 1, 1),
        ts=datetime.datetime(1969, 12, 31, 23, 59, 59, tzinfo=datetime.UTC),
    ),
]


def test_encoder_round_trips(backend):
    bodies = encode(SCHEMA, RECORDS)
    batch = avro.Decoder(SCHEMA).decode(bodies + [None])
    again = avro.Encoder(SCHEMA).encode(batch)
    assert again.to_pylist() == bodies + [None]
    for body, rec in zip(again.to_pylist(), RECORDS):
        back = fastavro.schemaless_reader(io.BytesIO(body), fastavro.parse_schema(SCHEMA), None)
        assert back == rec


def test_pc_encode_then_decode(backend):
    batch = avro.Decoder(SCHEMA).decode(encode(SCHEMA, RECORDS))
    batch = batch.replace_schema_metadata(
        {b"avro.schema": pa.py_buffer(__import__("json").dumps(SCHEMA).encode()).to_pybytes()}
    )
    registry: dict = {}
    framed_msgs = pc.encode(batch, registry, "all-value")
    assert list(registry) == [1]
    assert wire.unframe(framed_msgs, wire.CONFLUENT).schema_ids.to_pylist() == [1, 1]
    assert pc.decode(framed_msgs, registry).equals(batch.replace_schema_metadata(None))
    assert pc.encode(batch, registry, "all-value").equals(framed_msgs) and list(registry) == [1]

    class Reg:
        def __init__(self):
            self.seen = []

        def register(self, subject, schema):
            self.seen.append(subject)
            return 42

    reg = Reg()
    assert wire.unframe(pc.encode(batch, reg, "s"), wire.CONFLUENT).schema_ids.to_pylist() == [42, 42]
    assert reg.seen == ["s"]


def test_derived_schema_from_arrow(backend):
    t = pa.table({"a": pa.array([1, 2], pa.int64()), "s": pa.array(["x", None]), "l": pa.array([[1.0], []])})
    registry: dict = {}
    out = pc.encode(t, registry, "t")
    assert pc.decode(out, registry).to_pylist() == t.to_pylist()
