"""The one-id fast path reads only a batch's first and last prefixes; the payload formats check
every other prefix while they decode. Whatever the batch holds further in (another id, a bad
prefix, an unknown id, a short message), the result must be the general path's: equal batches and
error tables, or the same exception (class, code, index, offset), on one thread and split."""

from __future__ import annotations

import contextlib
import json

import pyarrow as pa
import pytest
from google.protobuf import message_factory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_codec import _unframe, wire
from pulsar_codec._arrow import binary_chunks
from pulsar_codec.errors import PulsarCodecError
from pulsar_codec.formats.protobuf.schema import parse as parse_proto
from pulsar_codec.pipeline import Decoded, MessageDecoder, _rows
from pulsar_codec.pipeline import decoder as decoder_module
from test_avro_support import encode

V1 = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None}],
}
V2 = {**V1, "fields": [*V1["fields"], {"name": "qty", "type": "int", "default": 1}]}
AVRO_REGISTRY = {1: json.dumps(V1), 2: json.dumps(V2)}

JSON_SCHEMA = json.dumps(
    {"type": "object", "properties": {"id": {"type": "integer"}, "note": {"type": "string"}}, "required": ["id"]}
)
PROTO = """
syntax = "proto3";
package t.v1;
message Order { int64 id = 1; string note = 2; }
message Other { string name = 1; }
"""
PROTO_MODEL = parse_proto(PROTO)

# row kinds a batch is drawn from; "v1" is the id of the fast path
KINDS = ["v1", "v1", "v1", "v2", "bad-body", "short", "null", "unknown-id", "bad-magic"]


def _avro(kind: str, i: int) -> bytes | None:
    if kind == "null":
        return None
    if kind == "short":
        return b"\x00\x00\x00"
    if kind == "bad-magic":
        return b"\x07" + wire.CONFLUENT.pack(1, b"")[1:] + b"\x02"
    if kind == "v2":
        return wire.CONFLUENT.pack(2, encode(V2, [{"id": i, "note": None, "qty": i % 5}])[0])
    body = encode(V1, [{"id": i, "note": "n" * (i % 4)}])[0]
    if kind == "bad-body":
        body = body[:1] + b"\x09"  # a union branch past the end
    return wire.CONFLUENT.pack(99 if kind == "unknown-id" else 1, body)


def _json(kind: str, i: int) -> bytes | None:
    if kind in ("null", "short", "bad-magic"):
        return _avro(kind, i)
    body = json.dumps({"id": i, "note": "x" * (i % 3)}).encode()
    if kind == "bad-body":
        body = body[:-1]
    sid = {"v2": 2, "unknown-id": 99}.get(kind, 1)
    return wire.CONFLUENT.pack(sid, body)


def _protobuf(kind: str, i: int) -> bytes | None:
    if kind in ("null", "short", "bad-magic"):
        return _avro(kind, i)
    order = message_factory.GetMessageClass(PROTO_MODEL.descriptor("t.v1.Order"))
    other = message_factory.GetMessageClass(PROTO_MODEL.descriptor("t.v1.Other"))
    if kind == "v2":  # the same schema id, another message type: another index path
        body = other(name=f"o{i}").SerializeToString()
        return wire.CONFLUENT_PROTOBUF.pack(1, body, message_indexes=PROTO_MODEL.indexes_for("t.v1.Other"))
    body = order(id=i, note="p" * (i % 3)).SerializeToString()
    if kind == "bad-body":
        body = b"\x0a\x05ab"  # a length past the end
    sid = 99 if kind == "unknown-id" else 1
    return wire.CONFLUENT_PROTOBUF.pack(sid, body, message_indexes=PROTO_MODEL.indexes_for("t.v1.Order"))


FORMATS = {
    "avro": (_avro, AVRO_REGISTRY, {}),
    "json": (_json, {1: (JSON_SCHEMA, "JSON"), 2: (JSON_SCHEMA, "JSON")}, {"format": "JSON"}),
    "protobuf": (_protobuf, {1: (PROTO, "PROTOBUF")}, {"format": "PROTOBUF", "message": "t.v1.Order"}),
}


def _outcome(messages: list[bytes | None], fmt: str, on_error: str, threads: int) -> object:
    build, registry, options = FORMATS[fmt]
    decoder = MessageDecoder(registry, on_error=on_error, threads=threads, **options)
    try:
        out = decoder.decode(pa.array(messages, pa.binary()))
    except PulsarCodecError as exc:
        return (
            type(exc).__name__,
            getattr(exc, "code", None),
            getattr(exc, "index", None),
            getattr(exc, "offset", None),
        )
    if isinstance(out, Decoded):
        return (out.batch, out.errors.to_pylist())
    return (out, None)


def _same(a: object, b: object) -> None:
    if isinstance(a, tuple) and isinstance(a[0], pa.RecordBatch):
        assert isinstance(b, tuple) and isinstance(b[0], pa.RecordBatch)
        assert a[0].equals(b[0]) and a[1] == b[1]
    else:
        assert a == b


@contextlib.contextmanager
def _general_path_only():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(decoder_module, "single_id", lambda chunks, protocol: None)
        yield


@pytest.fixture
def small_parts(monkeypatch):
    """Split batches of a few rows among threads, so the parts' prefix checks run side by side."""
    monkeypatch.setattr(_rows, "MIN_ROWS_PER_THREAD", 2)


def _compare(messages: list[bytes | None], fmt: str) -> None:
    for on_error in ("null", "raise"):
        with _general_path_only():
            want = _outcome(messages, fmt, on_error, 1)
        for threads in (1, 3):
            _same(_outcome(messages, fmt, on_error, threads), want)


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("middle", ["v2", "short", "unknown-id", "bad-magic", "bad-body"])
def test_a_different_message_inside_a_batch(backend, small_parts, fmt, middle):
    build = FORMATS[fmt][0]
    kinds = ["v1"] * 5 + [middle] + ["v1"] * 5
    messages = [build(k, i) for i, k in enumerate(kinds)]
    chunks, _ = binary_chunks(pa.array(messages, pa.binary()), native_offsets=True)
    protocol = wire.CONFLUENT_PROTOBUF if fmt == "protobuf" else wire.CONFLUENT
    assert _unframe.single_id(chunks, protocol) is not None  # first and last agree: the fast path is taken
    _compare(messages, fmt)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_bad_row_before_another_id_in_raise_mode(backend, small_parts, fmt):
    # on one thread the decode stops at the bad row 2; the id of row 8 is unknown, which the
    # general path reports first (an unknown id is not bad data)
    build = FORMATS[fmt][0]
    kinds = ["v1", "v1", "bad-body", "v1", "v1", "v1", "v1", "v1", "unknown-id", "v1", "v1"]
    _compare([build(k, i) for i, k in enumerate(kinds)], fmt)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_an_unknown_first_id_with_other_ids_further_in(backend, small_parts, fmt):
    build = FORMATS[fmt][0]
    kinds = ["unknown-id", "unknown-id", "v1", "bad-magic", "unknown-id"]
    _compare([build(k, i) for i, k in enumerate(kinds)], fmt)


@pytest.mark.parametrize("fmt", list(FORMATS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=14))
def test_fast_path_matches_general_path(backend, small_parts, fmt, kinds):
    build = FORMATS[fmt][0]
    _compare([build(k, i) for i, k in enumerate(kinds)], fmt)
