"""One message through the batch plans: ``MessageDecoder.decode_value`` (the decode kernel's row variant)
gives exactly the row ``decode`` gives (``to_pylist``), raises exactly its errors, and
``MessageEncoder.encode_value`` (the row writer) writes what the batch encoder writes, on both twins."""

from __future__ import annotations

import datetime
import decimal
import threading
import uuid
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_codec import wire
from pulsar_codec._kernels import _backend
from pulsar_codec.errors import (
    AvroDecodeError,
    EncodeError,
    ErrorCode,
    PulsarCodecError,
    SchemaError,
    SchemaNotFoundError,
    WireFormatError,
)
from pulsar_codec.formats.avro import FORMAT
from pulsar_codec.formats.avro.format import kernel_layout
from pulsar_codec.pipeline import MessageDecoder, MessageEncoder
from test_avro_support import encode, norm, schemas, values

LOGICAL = {
    "type": "record",
    "name": "Logical",
    "namespace": "t",
    "fields": [
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tod_ms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tod_us", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "at_ns", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
        {"name": "local_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "local_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "huge", "type": {"type": "bytes", "logicalType": "decimal", "precision": 60, "scale": 5}},
        {
            "name": "fixed_dec",
            "type": {"type": "fixed", "name": "D8", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 3},
        },
        {"name": "wait", "type": {"type": "fixed", "name": "Wait", "size": 12, "logicalType": "duration"}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
        {"name": "digest", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "f", "type": "float"},
        {"name": "nothing", "type": "null"},
        {"name": "either", "type": ["null", "string", "long", {"type": "array", "items": "int"}]},
        {"name": "attrs", "type": {"type": "map", "values": ["null", "double"]}},
        {
            "name": "inner",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Inner",
                    "fields": [{"name": "tags", "type": {"type": "array", "items": "string"}}],
                },
            ],
        },
    ],
}
LOGICAL_VALUES = [
    {
        "day": datetime.date(2024, 2, 29),
        "tod_ms": datetime.time(23, 59, 59, 999000),
        "tod_us": datetime.time(0, 0, 0, 1),
        "at_ms": datetime.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=datetime.UTC),
        "at_us": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.UTC),
        "at_ns": 1_700_000_000_123_456_789,
        "local_ms": datetime.datetime(2000, 1, 1, 0, 0, 0, 1000),
        "local_us": datetime.datetime(1900, 6, 1, 12),
        "price": decimal.Decimal("-12.30"),
        "huge": decimal.Decimal("-1234567890123456789012345678901234567890.12345"),
        "fixed_dec": decimal.Decimal("0.000"),
        "wait": b"\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00",
        "uid": str(uuid.UUID(int=7)),
        "kind": "C",
        "digest": b"\x00\xff\x10\x20",
        "f": 0.1,
        "nothing": None,
        "either": [1, -2],
        "attrs": {"x": 1.5, "y": None},
        "inner": {"tags": ["a", "ü"]},
    },
    {
        "day": datetime.date(1969, 12, 31),
        "tod_ms": datetime.time(0, 0),
        "tod_us": datetime.time(23, 59, 59, 999999),
        "at_ms": datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC),
        "at_us": datetime.datetime(2200, 1, 1, tzinfo=datetime.UTC),
        "at_ns": -5,
        "local_ms": datetime.datetime(1970, 1, 1),
        "local_us": datetime.datetime(2038, 1, 19, 3, 14, 8),
        "price": decimal.Decimal("99999999.99"),
        "huge": decimal.Decimal("0.00001"),
        "fixed_dec": decimal.Decimal("-999999999999999.999"),
        "wait": b"\xff\xff\xff\x7f" * 3,
        "uid": str(uuid.UUID(int=2**128 - 1)),
        "kind": "A",
        "digest": b"abcd",
        "f": -3.0e38,
        "nothing": None,
        "either": None,
        "attrs": {},
        "inner": None,
    },
]
SCALARS = [
    ("string", ["", "héllo"]),
    ({"type": "array", "items": ["null", "long"]}, [[], [1, None, -(2**63)]]),
    ({"type": "map", "values": "bytes"}, [{}, {"k": b"\x00"}]),
    (["null", "int", "string"], [None, 3, "x"]),
    ({"type": "enum", "name": "E", "symbols": ["X", "Y"]}, ["Y"]),
    ({"type": "long", "logicalType": "timestamp-millis"}, [datetime.datetime(2020, 5, 5, tzinfo=datetime.UTC)]),
    ({"type": "record", "name": "Empty", "fields": []}, [{}]),
]


def _full_logical_values() -> list[dict[str, Any]]:
    third = {**LOGICAL_VALUES[1], "either": "s", "attrs": {"n": None}, "inner": {"tags": []}}
    fourth = {**LOGICAL_VALUES[0], "either": 7}
    return [LOGICAL_VALUES[0], LOGICAL_VALUES[1], third, fourth]


def _framed(schema: Any, records: list[Any], schema_id: int = 1) -> list[bytes]:
    return [wire.CONFLUENT.pack(schema_id, body) for body in encode(schema, records)]


def _same_types(a: Any, b: Any) -> bool:
    """Equal and of the same Python types all the way down (tzinfo classes included)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_types(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_types(x, y) for x, y in zip(a, b))
    if isinstance(a, datetime.datetime):
        return a == b and type(a.tzinfo) is type(b.tzinfo)
    return bool(a == b)


def test_one_value_is_the_batch_row_for_every_logical_type(backend):
    records = _full_logical_values()
    messages = _framed(LOGICAL, records)
    decoder = MessageDecoder({1: LOGICAL})
    expected = decoder.decode(messages).to_pylist()
    got = [decoder.decode_value(m) for m in messages]
    assert all(_same_types(g, e) for g, e in zip(got, expected)), (got, expected)


@pytest.mark.parametrize(("schema", "records"), SCALARS)
def test_one_value_of_a_non_record_or_empty_schema(backend, schema, records):
    messages = _framed(schema, records)
    decoder = MessageDecoder({1: schema})
    batch = decoder.decode(messages)
    is_record = isinstance(schema, dict) and schema["type"] == "record"
    expected = batch.to_pylist() if is_record else batch.column(0).to_pylist()
    got = [decoder.decode_value(m) for m in messages]
    assert all(_same_types(g, e) for g, e in zip(got, expected)), (got, expected)


def test_one_value_with_a_reader_schema_and_unframed_payloads(backend):
    v1 = {"type": "record", "name": "U", "fields": [{"name": "id", "type": "int"}]}
    v2 = {
        "type": "record",
        "name": "U",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "tags", "type": {"type": "array", "items": "string"}, "default": ["a"]},
        ],
    }
    registry = {1: v1, 2: v2}
    decoder = MessageDecoder(registry, reader_schema=v2)
    old = _framed(v1, [{"id": 5}], 1)[0]
    new = _framed(v2, [{"id": 6, "tags": []}], 2)[0]
    assert decoder.decode_value(old) == {"id": 5, "tags": ["a"]} == decoder.decode([old]).to_pylist()[0]
    assert decoder.decode_value(new) == {"id": 6, "tags": []}
    assert decoder.decode_value(old[5:], 1) == {"id": 5, "tags": ["a"]}
    assert decoder.decode_value(memoryview(bytearray(new))[5:], schema_id=2) == {"id": 6, "tags": []}
    assert decoder.decode_value(bytearray(old)) == {"id": 5, "tags": ["a"]}
    assert decoder.decode_value(None) is None
    assert MessageDecoder(registry).decode_value(old) == {"id": 5}  # no reader: the message's own writer


def _outcome(call: Any) -> tuple[Any, ...]:
    """What a call gives: its value, its library error, or "no Python value": a value past what
    ``datetime`` holds, which the batch holds but its ``to_pylist()`` cannot give (pyarrow raises)
    and one value reports as AVRO_NO_PYTHON_VALUE."""
    try:
        return ("ok", norm(call()))
    except PulsarCodecError as exc:
        if getattr(exc, "code", None) == ErrorCode.AVRO_NO_PYTHON_VALUE:
            return ("no Python value",)
        return ("err", type(exc), exc.code, getattr(exc, "index", None), exc.offset, exc.detail, str(exc))
    except (ValueError, OverflowError, pa.ArrowException):  # pyarrow's own conversion corners
        return ("no Python value",)


def _batch_row(decoder: MessageDecoder, message: bytes, is_record: bool) -> Any:
    batch = decoder.decode([message])
    return batch.to_pylist()[0] if is_record else batch.column(0)[0].as_py()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_one_value_equals_the_batch_on_valid_and_mutated_payloads(backend, data):
    schema = data.draw(schemas())
    record = data.draw(values(schema))
    body = encode(schema, [record])[0]
    op = data.draw(st.sampled_from(["keep", "keep", "truncate", "flip", "insert", "random"]))
    if op == "truncate" and body:
        body = body[: data.draw(st.integers(0, len(body) - 1))]
    elif op == "flip" and body:
        i = data.draw(st.integers(0, len(body) - 1))
        body = body[:i] + bytes([data.draw(st.integers(0, 255))]) + body[i + 1 :]
    elif op == "insert":
        i = data.draw(st.integers(0, len(body)))
        body = body[:i] + data.draw(st.binary(min_size=1, max_size=3)) + body[i:]
    elif op == "random":
        body = data.draw(st.binary(max_size=30))
    message = wire.CONFLUENT.pack(9, body)
    decoder = MessageDecoder({9: schema})
    is_record = isinstance(schema, dict) and schema.get("type") == "record"
    one = _outcome(lambda: decoder.decode_value(message))
    assert one == _outcome(lambda: _batch_row(decoder, message, is_record))
    if op == "keep":
        assert one[0] == "ok"


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (b"\x00\x00\x00", WireFormatError),  # short prefix
        (b"\x07\x00\x00\x00\x01\x02", WireFormatError),  # bad magic byte
        (b"\x00\x00\x00\x00\x01", AvroDecodeError),  # empty body: truncated
        (b"\x00\x00\x00\x00\x01\x02\x00\x00", AvroDecodeError),  # trailing bytes
        (b"\x00\x00\x00\x00\x01\x02\x04\xff\xfe", AvroDecodeError),  # invalid UTF-8
        (b"\x00\x00\x00\x00\x02\x02", SchemaNotFoundError),
    ],
)
def test_errors_are_the_batch_errors(backend, message, error):
    schema = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}, {"name": "s", "type": "string"}]}
    decoder = MessageDecoder({1: schema})
    with pytest.raises(error) as batch_error:
        decoder.decode([message])
    with pytest.raises(error) as one_error:
        decoder.decode_value(message)
    for attribute in ("code", "index", "offset", "detail"):
        assert getattr(one_error.value, attribute, None) == getattr(batch_error.value, attribute, None)
    assert str(one_error.value) == str(batch_error.value)


def test_other_protocols_and_a_schema_the_reader_cannot_read(backend):
    schema = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}]}
    body = encode(schema, [{"n": 3}])[0]
    for protocol, schema_id in ((wire.HORTONWORKS, 4), (wire.CONFLUENT_GUID, uuid.UUID(int=4)), (wire.APICURIO, 4)):
        decoder = MessageDecoder({schema_id: schema}, protocol=protocol)
        assert decoder.decode_value(protocol.pack(schema_id, body)) == {"n": 3}
        with pytest.raises(WireFormatError) as batch_error:
            decoder.decode([b"\x09"])
        with pytest.raises(WireFormatError) as one_error:
            decoder.decode_value(b"\x09")
        assert (one_error.value.code, one_error.value.offset, str(one_error.value)) == (
            batch_error.value.code,
            batch_error.value.offset,
            str(batch_error.value),
        )
    strings = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "string"}]}
    with pytest.raises(SchemaError):
        MessageDecoder({1: schema}, reader_schema=strings).decode_value(wire.CONFLUENT.pack(1, body))


def test_one_value_from_many_threads(backend):
    schema = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "n", "type": "long"}, {"name": "tags", "type": {"type": "array", "items": "string"}}],
    }
    records = [{"n": i, "tags": [str(i)] * (i % 4)} for i in range(200)]
    messages = _framed(schema, records)
    decoder = MessageDecoder({1: schema})
    results: list[list[Any]] = []

    def work() -> None:
        results.append([decoder.decode_value(m) for m in messages])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [records] * 4


def test_the_kernel_checks_its_inputs(backend):
    model = FORMAT.parse({"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}]})
    plan = FORMAT.plan(model, model)
    kernels = _backend.active().avro
    program = plan.kernel_program(kernels)
    assert plan.kernel_program(kernels) is program and kernel_layout(plan.layout, kernels) is kernel_layout(
        plan.layout, kernels
    )
    with pytest.raises(ValueError, match="row shapes"):
        kernels.decode_row(kernels.Layout(plan.layout.specs), program, b"\x02", 0, 1)
    with pytest.raises(ValueError, match="bounds"):
        kernels.decode_row(kernel_layout(plan.layout, kernels), program, b"\x02", 0, 2)
    with pytest.raises(ValueError, match="one row shape per slot"):
        kernels.Layout(plan.layout.specs, [])
    assert kernels.decode_row(kernel_layout(plan.layout, kernels), program, b"\x00\x02", 1, 2) == (None, {"n": 1})


def test_encode_value_takes_defaults_durations_and_writes_unframed(backend):
    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "n", "type": "int"},
            {"name": "team", "type": "string", "default": "none"},
            {"name": "opt", "type": ["null", "long"], "default": None},
            {"name": "wait", "type": {"type": "fixed", "name": "W", "size": 12, "logicalType": "duration"}},
            # Avro Java's parser takes any string as an enum default; it fails only when used
            {"name": "bad", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}, "default": "Z"},
        ],
    }
    registry: dict[int, Any] = {}
    encoder = MessageEncoder(registry, "r", schema=schema)
    wait = b"\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00"
    message = encoder.encode_value({"n": 1, "wait": wait, "bad": "B"})
    assert encoder.encode_value({"n": 1, "wait": wait, "bad": "B"}, framed=False) == message[5:]
    decoded = MessageDecoder(registry).decode_value(message)
    assert decoded == {"n": 1, "team": "none", "opt": None, "wait": pa.MonthDayNano([1, 2, 3_000_000]), "bad": "B"}
    assert encoder.encode_value({**decoded}) == message  # the decoder's own values go back the same
    with pytest.raises(EncodeError, match="invalid default"):
        encoder.encode_value({"n": 1, "wait": wait})
    with pytest.raises(EncodeError):
        encoder.encode_value({"n": "x", "wait": wait, "bad": "A"})


@pytest.mark.parametrize(
    ("schema", "body", "value"),
    [
        ({"type": "int", "logicalType": "date"}, "feffffff0f", 2**31 - 1),
        ({"type": "long", "logicalType": "timestamp-millis"}, "80808080808080808001", 2**62),
        ({"type": "long", "logicalType": "local-timestamp-millis"}, "80808080808080808001", 2**62),
        ({"type": "long", "logicalType": "timestamp-micros"}, "ffffffffffffffff7f", -(2**62)),
        (
            {"type": "record", "name": "R", "fields": [{"name": "d", "type": {"type": "int", "logicalType": "date"}}]},
            "feffffff0f",
            2**31 - 1,
        ),
    ],
)
def test_a_value_past_pythons_datetime_is_a_decode_error(backend, schema, body, value):
    """Arrow holds these values and the batch decodes; one value has no Python form, which is the
    message's AvroDecodeError (60), not pyarrow's bare OverflowError (probe22)."""
    import json

    from pulsar_codec.external import AvroExternalSchema

    registry = {1: json.dumps(schema)}
    message = bytes.fromhex("0000000001" + body)
    decoder = MessageDecoder(registry)
    assert decoder.decode([message]).num_rows == 1
    with pytest.raises(AvroDecodeError) as caught:
        decoder.decode_value(message)
    assert (caught.value.code, caught.value.index, caught.value.detail) == (ErrorCode.AVRO_NO_PYTHON_VALUE, 0, value)
    assert "past the range of Python's datetime" in str(caught.value)
    with pytest.raises(AvroDecodeError):
        AvroExternalSchema(registry, json.dumps(schema), topic="t", schema_id=1).decode(None, message)
