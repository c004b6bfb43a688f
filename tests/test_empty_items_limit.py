"""More items of no size in one JSON or Protobuf message than the column builders take.

The Avro column builders accept at most ``defs.ZERO_SIZE_ITEM_LIMIT`` items that occupy no bytes
(null, empty records) in one message; the JSON and Protobuf kernels feed them, so a message over
that limit (an array of 2^20 + 1 nulls, a repeated empty message) is a bad row of its own format:
``JSON_TOO_MANY_EMPTY_ITEMS`` / ``PROTO_TOO_MANY_EMPTY_ITEMS`` at offset 0 with the limit as
detail, a null row with ``on_error="null"`` and the error of that message with ``"raise"``, the same
in both twins, on one thread and split among threads. A message of exactly the limit decodes.
"""

from __future__ import annotations

import functools
import json

import pyarrow as pa
import pytest

from protobuf_fixtures import compile_proto, message_class
from pulsar_codec import wire
from pulsar_codec._kernels import _backend, defs
from pulsar_codec.errors import ErrorCode, JsonDecodeError, ProtobufDecodeError, PulsarCodecError
from pulsar_codec.formats import get_format
from pulsar_codec.formats.protobuf.schema import parse as parse_proto
from pulsar_codec.pipeline import Decoded, MessageDecoder, _rows

LIMIT = defs.ZERO_SIZE_ITEM_LIMIT
TEXT = f"more than {LIMIT} items of no size"

# -- JSON: a JSON Schema array of nulls, and a Pulsar JSON (Avro) record holding empty records ----------

JSON_NULLS = {"type": "array", "items": {"type": "null"}}
JSON_RECORDS = {
    "type": "record",
    "name": "R",
    "fields": [{"name": "e", "type": {"type": "array", "items": {"type": "record", "name": "E", "fields": []}}}],
}
JSON_CASES = {
    "nulls": (JSON_NULLS, lambda n: b"[" + b",".join([b"null"] * n) + b"]", lambda n: [None] * n),
    "empty-records": (
        JSON_RECORDS,
        lambda n: b'{"e":[' + b",".join([b"{}"] * n) + b"]}",
        lambda n: {"e": [{}] * n},
    ),
}

# -- Protobuf: a repeated empty message of the schema's own, and repeated google.protobuf.Empty ------------

PROTO_CASES = {
    "empty-message": ('syntax = "proto3";\nmessage E {}\nmessage M { repeated E e = 1; }\n', "E"),
    "google.protobuf.Empty": (
        'syntax = "proto3";\nimport "google/protobuf/empty.proto";\nmessage M { repeated google.protobuf.Empty e = 1; }\n',
        "google.protobuf.Empty",
    ),
}


@functools.cache
def _json_payload(case: str, n: int, tail: bytes = b"") -> bytes:
    return wire.CONFLUENT.pack(1, JSON_CASES[case][1](n) + tail)


@functools.cache
def _proto_payload(case: str, n: int, tail: bytes = b"") -> bytes:
    """``M`` with ``n`` items as the Protobuf runtime serializes it (compiled by protoc), framed."""
    text, item = PROTO_CASES[case]
    pool = compile_proto(text)
    message = message_class(pool, "M")()
    message.e.extend([message_class(pool, item)()] * n)
    body = message.SerializeToString()
    assert body == b"\x0a\x00" * n  # each item: its tag and a zero length
    return wire.CONFLUENT_PROTOBUF.pack(1, body + tail, message_indexes=parse_proto(text).indexes_for("M"))


def _json_decoder(case: str, on_error: str = "null", threads: int = 1, **options: object) -> MessageDecoder:
    registry = {1: json.dumps(JSON_CASES[case][0])}
    return MessageDecoder(registry, format="JSON", on_error=on_error, threads=threads, **options)


def _proto_decoder(case: str, on_error: str = "null", threads: int = 1) -> MessageDecoder:
    registry = {1: PROTO_CASES[case][0]}
    return MessageDecoder(registry, format="PROTOBUF", message="M", on_error=on_error, threads=threads)


def _errors(out: object) -> list[tuple[int, int, int]]:
    assert isinstance(out, Decoded)
    return [(e["index"], e["code"], e["offset"]) for e in out.errors.to_pylist()]


def _check_null_mode(decoder: MessageDecoder, good: bytes, over: bytes, exact: bytes, code: ErrorCode) -> list:
    out = decoder.decode([good, over, exact])
    assert isinstance(out, Decoded)
    assert _errors(out) == [(1, code, 0)]
    assert TEXT in out.errors.column("message")[0].as_py()
    alone = decoder.decode([good])
    assert isinstance(alone, Decoded) and alone.errors.num_rows == 0
    rows = out.batch.to_pylist()
    assert rows[0] == alone.batch.to_pylist()[0]  # the rows around the bad one are intact
    assert all(v is None for v in rows[1].values())
    return rows


# -- JSON -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(JSON_CASES))
def test_json_over_the_limit_is_an_error_row(backend, case):
    decoder = _json_decoder(case)
    good, over, exact = (_json_payload(case, n) for n in (3, LIMIT + 1, LIMIT))
    rows = _check_null_mode(decoder, good, over, exact, ErrorCode.JSON_TOO_MANY_EMPTY_ITEMS)
    value = JSON_CASES[case][2](LIMIT)
    assert rows[2] == (value if case == "empty-records" else {"value": value})  # a non-record reader's column
    assert decoder.decode_value(exact) == value


@pytest.mark.parametrize("case", list(JSON_CASES))
def test_json_raise_mode_raises_the_first_bad_message(backend, case):
    decoder = _json_decoder(case, on_error="raise")
    good, over = _json_payload(case, 3), _json_payload(case, LIMIT + 1)
    with pytest.raises(JsonDecodeError, match=TEXT) as info:
        decoder.decode([good, over, good])
    error = info.value
    assert (error.code, error.index, error.offset, error.detail) == (ErrorCode.JSON_TOO_MANY_EMPTY_ITEMS, 1, 0, LIMIT)
    # a bad message after it: the earlier one is reported
    with pytest.raises(JsonDecodeError) as info:
        decoder.decode([good, over, wire.CONFLUENT.pack(1, b"[")])
    assert (info.value.code, info.value.index) == (ErrorCode.JSON_TOO_MANY_EMPTY_ITEMS, 1)
    # a bad message before it: that one
    with pytest.raises(JsonDecodeError) as info:
        decoder.decode([wire.CONFLUENT.pack(1, b"[nul"), over])
    assert (info.value.code, info.value.index) == (ErrorCode.JSON_TRUNCATED, 0)


@pytest.mark.parametrize("case", list(JSON_CASES))
def test_json_syntax_error_later_in_the_message_wins(backend, case):
    # the parser reads the whole message before its items are counted, on both twins
    body = JSON_CASES[case][1](LIMIT + 1)
    out = _json_decoder(case).decode([_json_payload(case, LIMIT + 1, b" x")])
    assert _errors(out) == [(0, ErrorCode.JSON_UNEXPECTED_BYTE, len(body) + 1)]


def test_json_validated_over_the_limit_is_an_error_row(backend):
    reader = get_format("JSON").parse(JSON_NULLS, validate=True)
    decoder = _json_decoder("nulls", reader_schema=reader)
    good, over, exact = (_json_payload("nulls", n) for n in (3, LIMIT + 1, LIMIT))
    _check_null_mode(decoder, good, over, exact, ErrorCode.JSON_TOO_MANY_EMPTY_ITEMS)
    with pytest.raises(JsonDecodeError, match=TEXT) as info:
        _json_decoder("nulls", on_error="raise", reader_schema=reader).decode([good, over])
    assert (info.value.code, info.value.index, info.value.offset) == (ErrorCode.JSON_TOO_MANY_EMPTY_ITEMS, 1, 0)


@pytest.mark.parametrize("case", list(JSON_CASES))
def test_json_decode_value_raises(backend, case):
    with pytest.raises(JsonDecodeError, match=TEXT) as info:
        _json_decoder(case).decode_value(_json_payload(case, LIMIT + 1))
    error = info.value
    assert (error.code, error.index, error.offset, error.detail) == (ErrorCode.JSON_TOO_MANY_EMPTY_ITEMS, 0, 0, LIMIT)


# -- Protobuf ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(PROTO_CASES))
def test_protobuf_over_the_limit_is_an_error_row(backend, case):
    decoder = _proto_decoder(case)
    good, over, exact = (_proto_payload(case, n) for n in (3, LIMIT + 1, LIMIT))
    rows = _check_null_mode(decoder, good, over, exact, ErrorCode.PROTO_TOO_MANY_EMPTY_ITEMS)
    assert rows[2] == {"e": [{}] * LIMIT}
    assert decoder.decode_value(exact) == {"e": [{}] * LIMIT}


@pytest.mark.parametrize("case", list(PROTO_CASES))
def test_protobuf_raise_mode_raises_the_first_bad_message(backend, case):
    decoder = _proto_decoder(case, on_error="raise")
    good, over = _proto_payload(case, 3), _proto_payload(case, LIMIT + 1)
    with pytest.raises(ProtobufDecodeError, match=TEXT) as info:
        decoder.decode([good, over, good])
    error = info.value
    assert (error.code, error.index, error.offset, error.detail) == (ErrorCode.PROTO_TOO_MANY_EMPTY_ITEMS, 1, 0, LIMIT)
    with pytest.raises(ProtobufDecodeError) as info:
        decoder.decode([good, over, _proto_payload(case, 3, b"\x0a\x05")])
    assert (info.value.code, info.value.index) == (ErrorCode.PROTO_TOO_MANY_EMPTY_ITEMS, 1)
    with pytest.raises(ProtobufDecodeError) as info:
        decoder.decode([_proto_payload(case, 3, b"\x0a\x05"), over])
    assert (info.value.code, info.value.index) == (ErrorCode.PROTO_LENGTH_PAST_END, 0)


@pytest.mark.parametrize("case", list(PROTO_CASES))
def test_protobuf_malformed_bytes_later_in_the_message_win(backend, case):
    out = _proto_decoder(case).decode([_proto_payload(case, LIMIT + 1, b"\x0a\x05")])
    assert _errors(out) == [(0, ErrorCode.PROTO_LENGTH_PAST_END, 2 * (LIMIT + 1) + 1)]


@pytest.mark.parametrize("case", list(PROTO_CASES))
def test_protobuf_decode_value_raises(backend, case):
    with pytest.raises(ProtobufDecodeError, match=TEXT) as info:
        _proto_decoder(case).decode_value(_proto_payload(case, LIMIT + 1))
    error = info.value
    assert (error.code, error.index, error.offset, error.detail) == (ErrorCode.PROTO_TOO_MANY_EMPTY_ITEMS, 0, 0, LIMIT)


# -- the twins agree, on one thread and split -------------------------------------------------------------


def _outcome(decoder: MessageDecoder, messages: list[bytes]) -> object:
    try:
        out = decoder.decode(pa.array(messages, pa.binary()))
    except PulsarCodecError as exc:
        return (type(exc).__name__, getattr(exc, "code", None), getattr(exc, "index", None), exc.args)
    assert isinstance(out, Decoded)
    return (out.batch, out.errors.to_pylist())


def _same(a: object, b: object) -> None:
    if isinstance(a, tuple) and isinstance(a[0], pa.RecordBatch):
        assert isinstance(b, tuple) and isinstance(b[0], pa.RecordBatch)
        assert a[0].equals(b[0]) and a[1] == b[1]
    else:
        assert a == b


@pytest.mark.parametrize("fmt", ["json", "protobuf"])
def test_twins_agree_on_one_thread_and_split(both_backends, monkeypatch, fmt):
    monkeypatch.setattr(_rows, "MIN_ROWS_PER_THREAD", 2)
    if fmt == "json":
        make, build = functools.partial(_json_decoder, "nulls"), functools.partial(_json_payload, "nulls")
        bad, bad_error = wire.CONFLUENT.pack(1, b"[null,"), (ErrorCode.JSON_TRUNCATED, 6)
        code, cls = ErrorCode.JSON_TOO_MANY_EMPTY_ITEMS, JsonDecodeError
    else:
        make, build = (
            functools.partial(_proto_decoder, "empty-message"),
            functools.partial(_proto_payload, "empty-message"),
        )
        bad, bad_error = build(2, b"\x0a"), (ErrorCode.PROTO_TRUNCATED, 5)
        code, cls = ErrorCode.PROTO_TOO_MANY_EMPTY_ITEMS, ProtobufDecodeError
    # two parts of three rows on two threads: the bad rows are in the second, so their indexes move
    messages = [build(1), build(0), build(2), build(3), build(LIMIT + 1), bad]
    for on_error in ("null", "raise"):
        outcomes = []
        for name in ("cython", "python"):
            with _backend.use(name):
                outcomes.extend(_outcome(make(on_error=on_error, threads=threads), messages) for threads in (1, 2))
        for other in outcomes[1:]:
            _same(other, outcomes[0])
        first = outcomes[0]
        assert isinstance(first, tuple)
        if on_error == "null":
            assert [(e["index"], e["code"], e["offset"]) for e in first[1]] == [(4, code, 0), (5, *bad_error)]
        else:
            assert first[:3] == (cls.__name__, code, 4)
