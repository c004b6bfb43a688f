"""``time-millis`` and ``time-micros`` values outside one day: a bad row (``AVRO_TIME_OUT_OF_RANGE``),
never an Arrow time column that fails ``validate(full=True)`` or a value folded into the day.

Avro Java (``LocalTime.ofNanoOfDay``) and fastavro refuse such values as well; the encoders refuse
to write them.
"""

from __future__ import annotations

import datetime
import json
import re

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pulsar_codec as pc
from pulsar_codec import avro, wire
from pulsar_codec._kernels import _backend, defs
from pulsar_codec.errors import AvroDecodeError, EncodeError, ErrorCode, JsonDecodeError, PulsarCodecError, SchemaError
from pulsar_codec.formats.avro.format import FORMAT
from pulsar_codec.formats.json import parse as json_parse
from test_avro_logical import zz  # the zigzag varint of the Avro logical-type tests

TIME_MS = {"type": "int", "logicalType": "time-millis"}
TIME_US = {"type": "long", "logicalType": "time-micros"}
MS_DAY = 86_400_000
US_DAY = 86_400_000_000
TIME = ErrorCode.AVRO_TIME_OUT_OF_RANGE


def ms_time(v: int) -> datetime.time:
    return (datetime.datetime.min + datetime.timedelta(milliseconds=v)).time()


def rec(*fields, name="R"):
    return {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}


def errors_of(result):
    """(index, code, offset, detail) of every error row, the detail read back from its message."""
    out = []
    for e in result.errors.to_pylist():
        words = e["message"].split()
        detail = int(words[3] if e["code"] == TIME else words[2])
        assert e["message"].endswith(f"(message {e['index']}, byte {e['offset']})")
        out.append((e["index"], e["code"], e["offset"], detail))
    return out


def test_the_code_and_its_message():
    assert TIME == 61
    err = pc.errors.error_for(TIME, 3, 5, -5)
    assert isinstance(err, AvroDecodeError)
    assert str(err) == "time of day -5 is outside one day (message 3, byte 5)"


@pytest.mark.parametrize("body", ["feffffff0f", "09"])
def test_the_reported_messages_are_bad_rows(backend, body):
    schema = json.dumps(TIME_MS)
    value = -5 if body == "09" else 2**31 - 1
    msg = bytes.fromhex("0000000001" + body)
    with pytest.raises(AvroDecodeError) as e:
        pc.decode([msg], {1: schema})
    assert (e.value.code, e.value.index, e.value.offset, e.value.detail) == (TIME, 0, 0, value)
    assert str(e.value) == f"time of day {value} is outside one day (message 0, byte 0)"
    decoder = pc.MessageDecoder({1: schema}, on_error="null")
    res = decoder.decode([msg, bytes.fromhex("0000000001" + "02")])
    res.batch.validate(full=True)
    assert res.batch.column(0).to_pylist() == [None, datetime.time(0, 0, 0, 1000)]
    assert errors_of(res) == [(0, TIME, 0, value)]
    with pytest.raises(AvroDecodeError) as e:
        pc.MessageDecoder({1: schema}).decode_value(msg)
    assert (e.value.code, e.value.offset, e.value.detail) == (TIME, 0, value)


@pytest.mark.parametrize("schema, day", [(TIME_MS, MS_DAY), (TIME_US, US_DAY)])
def test_the_edges_of_the_day(backend, schema, day):
    good = [0, 1, day - 1]
    bad = [day, -1, day + 1, -(2**31), 2**31 - 1] if day == MS_DAY else [day, -1, -(2**63), 2**63 - 1, 2**20 * day]
    res = avro.Decoder(schema).decode([zz(v) for v in good + bad], on_error="null")
    res.batch.validate(full=True)
    unit = 1000 if day == MS_DAY else 1
    as_time = [datetime.time(0), datetime.time(0, 0, 0, unit), datetime.time(23, 59, 59, 1_000_000 - unit)]
    assert res.batch.column(0).to_pylist() == as_time + [None] * len(bad)
    assert errors_of(res) == [(len(good) + i, TIME, 0, v) for i, v in enumerate(bad)]
    for v in bad:
        with pytest.raises(AvroDecodeError) as e:
            avro.Decoder(schema).decode([zz(0), zz(v)])
        assert (e.value.code, e.value.index, e.value.offset, e.value.detail) == (TIME, 1, 0, v)
    plan = FORMAT.plan(*(avro.parse(schema),) * 2)
    assert FORMAT.decode_value(plan, zz(day - 1)) == as_time[-1]
    with pytest.raises(AvroDecodeError) as e:
        FORMAT.decode_value(plan, zz(-1))
    assert (e.value.code, e.value.offset, e.value.detail) == (TIME, 0, -1)


def test_an_int_past_32_bits_stays_an_int_error(backend):
    # the writer's int is checked first, as for a plain int
    res = avro.Decoder(TIME_MS).decode([zz(2**31), zz(-(2**31) - 1)], on_error="null")
    assert [e[1] for e in errors_of(res)] == [ErrorCode.AVRO_INT_OUT_OF_RANGE] * 2


NESTED = rec(
    ("n", "int"),
    ("ms", TIME_MS),
    ("us", TIME_US),
    ("items", {"type": "array", "items": TIME_MS}),
    ("opt", ["null", TIME_US]),
    ("either", ["string", TIME_MS]),
    ("by_key", {"type": "map", "values": TIME_US}),
    ("inner", rec(("t", TIME_MS), name="Inner")),
)


def nested_body(ms=5, us=6, items=(1, 2), opt=7, either=8, value=9, inner=10):
    return (
        zz(300)  # two bytes
        + zz(ms)
        + zz(us)
        + zz(len(items))
        + b"".join(zz(v) for v in items)
        + zz(0)
        + zz(1)
        + zz(opt)
        + zz(1)
        + zz(either)
        + zz(1)
        + zz(1)
        + b"k"
        + zz(value)
        + zz(0)
        + zz(inner)
    )


@pytest.mark.parametrize(
    "where, bad, offset",
    [
        ("ms", -5, 2),
        ("us", US_DAY, 3),
        ("items", (1, MS_DAY), 6),
        ("opt", -1, 9),
        ("either", MS_DAY + 1, 11),
        ("value", -2, 15),
        ("inner", 2**31 - 1, 17),
    ],
)
def test_every_position_in_a_record(backend, where, bad, offset):
    body = nested_body(**{where: bad})
    detail = bad[1] if isinstance(bad, tuple) else bad
    dec = avro.Decoder(NESTED)
    good = nested_body()
    res = dec.decode([good, body, good], on_error="null")
    res.batch.validate(full=True)
    assert errors_of(res) == [(1, TIME, offset, detail)]
    rows = res.batch.to_pylist()
    assert rows[0]["items"] == [datetime.time(0, 0, 0, 1000), datetime.time(0, 0, 0, 2000)]
    assert all(v is None for v in rows[1].values()) and rows[2] == rows[0]
    with pytest.raises(AvroDecodeError) as e:
        dec.decode([good, body])
    assert (e.value.code, e.value.index, e.value.offset, e.value.detail) == (TIME, 1, offset, detail)
    plan = FORMAT.plan(*(avro.parse(NESTED),) * 2)
    with pytest.raises(AvroDecodeError) as e:
        FORMAT.decode_value(plan, body)
    assert (e.value.code, e.value.offset, e.value.detail) == (TIME, offset, detail)


def test_the_offsets_of_the_nested_body():
    # the offsets above, from the body's own layout: every value of the good body is one byte
    good = nested_body()
    at = {"ms": 2, "us": 3, "items": 6, "opt": 9, "either": 11, "value": 15, "inner": 17}
    assert len(zz(300)) == 2 and len(good) == 18
    assert [good[i] for i in at.values()] == [zz(v)[0] for v in (5, 6, 2, 7, 8, 9, 10)]


# -- schema resolution --------------------------------------------------------------------------------


def test_resolution_checks_what_the_reader_reads_as_a_time(backend):
    writer = rec(("skip", TIME_MS), ("t", TIME_MS), ("u", "int"), ("w", "int"), ("x", TIME_MS))
    reader = rec(("t", TIME_MS), ("u", TIME_MS), ("w", TIME_US), ("x", "int"), ("y", {**TIME_MS}))
    reader["fields"][-1]["default"] = MS_DAY - 1
    dec = avro.Decoder(reader, writer)

    def body(skip=0, t=0, u=0, w=0, x=0):
        return zz(skip) + zz(t) + zz(u) + zz(w) + zz(x)

    bodies = [
        body(skip=-1, x=-5),  # writer-only and reader-int values are not times: read as they are
        body(t=-1),
        body(u=MS_DAY),
        body(w=-3),  # an int read as time-micros
        body(w=2**31),  # ... is still an int first
        body(t=MS_DAY - 1, u=7, w=2**31 - 1),
    ]
    res = dec.decode(bodies, on_error="null")
    res.batch.validate(full=True)
    assert errors_of(res) == [
        (1, TIME, 1, -1),
        (2, TIME, 2, MS_DAY),
        (3, TIME, 3, -3),
        (4, ErrorCode.AVRO_INT_OUT_OF_RANGE, 3, 2**31),
    ]
    rows = res.batch.to_pylist()
    assert rows[0]["x"] == -5 and rows[0]["t"] == datetime.time(0)
    assert rows[5] == {
        "t": datetime.time(23, 59, 59, 999000),
        "u": datetime.time(0, 0, 0, 7000),
        "w": datetime.time(0, 35, 47, 483647),
        "x": 0,
        "y": datetime.time(23, 59, 59, 999000),
    }
    # two writers in one batch (each row picks its program: the kernels' general row loop)
    two = pc.MessageDecoder(
        {1: json.dumps(writer), 2: json.dumps(rec(("x", "int"), ("w", TIME_US), ("u", "int"), ("t", TIME_MS)))},
        reader_schema=reader,
        on_error="null",
    )
    res = two.decode([bytes.fromhex("0000000001") + body(t=-1), bytes.fromhex("0000000002") + zz(0) * 3 + zz(MS_DAY)])
    res.batch.validate(full=True)
    assert errors_of(res) == [(0, TIME, 1, -1), (1, TIME, 3, MS_DAY)]
    # an int read as a long is no time: unchecked
    assert avro.Decoder("long", "int").decode([zz(-5)]).column(0).to_pylist() == [-5]
    # a writer union of null and a time, read as a nullable time
    opt = avro.Decoder(["null", TIME_US], ["null", TIME_US]).decode([b"\x02" + zz(US_DAY), b"\x00"], on_error="null")
    assert errors_of(opt) == [(0, TIME, 1, US_DAY)]


def test_a_reader_default_outside_the_day_is_a_schema_error(backend):
    reader = rec(("a", "int"), ("t", TIME_MS))
    reader["fields"][1]["default"] = MS_DAY
    with pytest.raises(SchemaError, match="outside one day"):
        avro.Decoder(reader, rec(("a", "int")))
    reader["fields"][1]["default"] = -1
    with pytest.raises(SchemaError, match="outside one day"):
        avro.Decoder(reader, rec(("a", "int")))
    reader["fields"][1] = {"name": "t", "type": ["null", TIME_US], "default": None}
    assert avro.Decoder(reader, rec(("a", "int"))).decode([zz(1)]).to_pylist() == [{"a": 1, "t": None}]


# -- twin parity ------------------------------------------------------------------------------------

PARITY = rec(("ms", TIME_MS), ("us", TIME_US), ("items", {"type": "array", "items": ["null", TIME_MS]}))


def _outcome(dec, bodies, on_error):
    try:
        res = dec.decode(bodies, on_error=on_error)
    except PulsarCodecError as exc:
        assert isinstance(exc, AvroDecodeError), exc
        return "err", (exc.code, exc.index, exc.offset, exc.detail, str(exc))
    batch = res if on_error == "raise" else res.batch
    batch.validate(full=True)
    return "ok", (batch.to_pylist(), None if on_error == "raise" else res.errors.to_pylist())


times = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-3, 3),
    st.integers(MS_DAY - 3, MS_DAY + 3),
    st.integers(US_DAY - 3, US_DAY + 3),
    st.integers(2**31 - 3, 2**31 + 3),
    st.integers(-(2**31) - 3, -(2**31) + 3),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(times, times, st.lists(st.one_of(st.none(), times), max_size=3)), max_size=6))
def test_twin_parity_over_random_values(both_backends, rows):
    bodies = []
    for ms, us, items in rows:
        body = zz(ms) + zz(us) + (zz(len(items)) if items else b"")
        body += b"".join(b"\x00" if v is None else b"\x02" + zz(v) for v in items) + b"\x00"
        bodies.append(body)
    dec = avro.Decoder(PARITY)
    plan = FORMAT.plan(*(avro.parse(PARITY),) * 2)
    compiled, pure = both_backends
    for on_error in ("raise", "null"):
        with _backend.use(compiled.name):
            c = _outcome(dec, bodies, on_error)
        with _backend.use(pure.name):
            p = _outcome(dec, bodies, on_error)
        assert c == p
    for body, (ms, us, items) in zip(bodies, rows):
        values = [ms] + [v for v in items if v is not None]
        ok = all(0 <= v < MS_DAY for v in values) and 0 <= us < US_DAY
        for b in both_backends:
            with _backend.use(b.name):
                try:
                    got = FORMAT.decode_value(plan, body)
                except AvroDecodeError as exc:
                    assert not ok and exc.code in (TIME, ErrorCode.AVRO_INT_OUT_OF_RANGE)
                else:
                    assert ok and got["items"] == [None if v is None else ms_time(v) for v in items]


# -- encoders ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("schema, day", [(TIME_MS, MS_DAY), (TIME_US, US_DAY)])
def test_the_encoder_refuses_times_outside_the_day(backend, schema, day):
    enc = avro.Encoder(rec(("n", "int"), ("t", schema)))
    assert enc.encode_value({"n": 1, "t": day - 1}) == zz(1) + zz(day - 1)
    for v in (day, -1):
        with pytest.raises(EncodeError, match="R.t"):
            enc.encode_value({"n": 1, "t": v})
        # plain integers (the columnar path, then the row writer on the bad row)
        with pytest.raises(EncodeError, match="R.t") as e:
            enc.encode(pa.table({"n": [1, 2], "t": pa.array([0, v], pa.int64())}))
        assert e.value.index == 1
    # an Arrow time column holding values past the day is invalid Arrow: refused, not folded into the day
    typ = pa.time32("ms") if day == MS_DAY else pa.time64("us")
    # (the row path too, where to_pylist would fold the value: uint64 columns take it)
    by_rows = avro.Encoder(rec(("n", "long"), ("t", schema)))
    for v in (day + 5, -5):
        storage = pa.array([0, v], pa.int32() if day == MS_DAY else pa.int64())
        column = pa.Array.from_buffers(typ, 2, storage.buffers())
        for encoder in (enc, by_rows):
            with pytest.raises(EncodeError, match=re.escape(f"R.t: {typ} {v} is not within the acceptable range")):
                encoder.encode(pa.table({"n": pa.array([1, 2], pa.uint64()), "t": column}))
    ok = pa.table({"n": [1, 2], "t": pa.array([0, day - 1], typ)})
    assert avro.Decoder(enc.schema).decode(enc.encode(ok)).column("t").equals(ok.column("t").chunk(0))


# -- Pulsar JSON (an Avro record definition): numbers for the time fields ------------------------------

PULSAR_JSON = rec(
    ("n", "int"), ("ms", TIME_MS), ("us", ["null", TIME_US]), ("items", {"type": "array", "items": TIME_MS})
)


def json_decode(payloads, on_error="raise"):
    model = json_parse(json.dumps(PULSAR_JSON))
    frames = [wire.CONFLUENT.pack(1, p.encode()) for p in payloads]
    return pc.MessageDecoder({1: model}, format="JSON", on_error=on_error).decode(frames)


@pytest.mark.parametrize(
    "payload, offset",
    [
        ('{"n": 1, "ms": 86400000, "us": 1, "items": []}', 15),
        ('{"n": 1, "ms": -5, "us": null, "items": []}', 15),
        ('{"n": 1, "ms": 0, "us": 86400000000, "items": []}', 24),
        ('{"n": 1, "ms": 0, "us": -1, "items": []}', 24),
        ('{"n": 1, "ms": 0, "us": 1, "items": [3, 2147483647]}', 40),
    ],
)
def test_pulsar_json_times_outside_the_day_are_bad_rows(backend, payload, offset):
    if not hasattr(backend, "json"):
        pytest.skip("the JSON kernel is not in this backend")
    good = '{"n": 1, "ms": 86399999, "us": 86399999999, "items": [0, 1.0, 2e3]}'
    assert payload[offset] in "-0123456789"
    with pytest.raises(JsonDecodeError, match="does not fit time-") as e:
        json_decode([good, payload])
    assert (e.value.code, e.value.index, e.value.offset) == (ErrorCode.JSON_NUMBER_RANGE, 1, offset)
    res = json_decode([good, payload, good], on_error="null")
    res.batch.validate(full=True)
    rows = res.batch.to_pylist()
    assert (
        rows[0]
        == rows[2]
        == {
            "n": 1,
            "ms": datetime.time(23, 59, 59, 999000),
            "us": datetime.time(23, 59, 59, 999999),
            "items": [datetime.time(0), datetime.time(0, 0, 0, 1000), datetime.time(0, 0, 2)],
        }
    )
    assert rows[1] == {"n": None, "ms": None, "us": None, "items": None}
    assert [(e["index"], e["code"], e["offset"]) for e in res.errors.to_pylist()] == [
        (1, ErrorCode.JSON_NUMBER_RANGE, offset)
    ]


def test_the_pulsar_json_encoder_refuses_times_outside_the_day(backend):
    encoder = pc.formats.get_format("JSON").encoder(json_parse(json.dumps(PULSAR_JSON)))
    table = pa.table({"n": [1], "ms": pa.array([MS_DAY], pa.int32()), "us": [None], "items": [[]]})
    with pytest.raises(EncodeError, match="time-millis"):
        encoder.encode(table)


@pytest.mark.parametrize(
    "op, text, expected",
    [
        ("ms", b"0", 0),
        ("ms", b"-0", 0),
        ("ms", b"86399999", MS_DAY - 1),
        ("ms", b"8.6399999e7", MS_DAY - 1),
        ("ms", b"1e3", 1000),
        ("ms", b"86400000", None),
        ("ms", b"8.64e7", None),
        ("ms", b"-1", None),
        ("ms", b"-1e30", None),
        ("ms", b"99999999999999999999", None),
        ("us", b"86399999999", US_DAY - 1),
        ("us", b"86400000000", None),
        ("us", b"-5", None),
        ("us", b"1.5", "wrong type"),
    ],
)
def test_the_json_kernel_reads_a_time_within_the_day(backend, op, text, expected):
    if not hasattr(backend, "json"):
        pytest.skip("the JSON kernel is not in this backend")
    node = defs.J_TIME_MILLIS if op == "ms" else defs.J_TIME_MICROS
    payload = b" " + text
    errors, out, offsets, _ = backend.json.transcode(
        backend.json.Program((node,)), payload, np.array([0]), np.array([len(payload)]), None, True
    )
    if isinstance(expected, int):
        assert errors == [] and bytes(out[offsets[0] : offsets[1]]) == zz(expected)
    elif expected is None:
        assert errors == [(ErrorCode.JSON_NUMBER_RANGE, 0, 1, node)]
    else:
        assert errors == [(ErrorCode.JSON_WRONG_TYPE, 0, 1, 2)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(times, min_size=1, max_size=8), exponent=st.booleans())
def test_json_twin_parity_over_random_times(both_backends, values, exponent):
    texts = [(f"{v}e0" if exponent else str(v)).encode() for v in values]
    data = b"".join(texts)
    ends = np.cumsum([len(t) for t in texts])
    results = []
    for b in both_backends:
        results.append(
            [
                b.json.transcode(b.json.Program((node,)), data, ends - [len(t) for t in texts], ends, None, True)[0]
                for node in (defs.J_TIME_MILLIS, defs.J_TIME_MICROS)
            ]
        )
    assert results[0] == results[1]
    for node, errors, day in zip((defs.J_TIME_MILLIS, defs.J_TIME_MICROS), results[0], (MS_DAY, US_DAY)):
        bad = [i for i, v in enumerate(values) if not 0 <= v < day]
        assert [(e[0], e[1], e[3]) for e in errors] == [(ErrorCode.JSON_NUMBER_RANGE, i, node) for i in bad]
