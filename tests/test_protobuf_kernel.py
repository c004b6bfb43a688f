"""The Protobuf -> Avro transcoder kernel (_kernels/protobuf_py.py and protobuf_c.pyx), on both twins.

Hand-made bytes for the reading rules (fields in any order, last value wins, message occurrences
merged, oneof switches, packed and unpacked, unknown fields of every wire type, 10-byte negative
int32, map keys repeated) and for every error with its offset and detail; the exact Avro bytes of
small programs; rows (nulls, keep_going); and hypothesis: twin parity on random mutations of valid
payloads (the same Avro bytes, or the same error code, row, offset and detail).
"""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protobuf_fixtures import FORMAT, compile_proto, decode, first_error, layout, message_class, rows
from pulsar_codec._kernels import _backend
from pulsar_codec._kernels.defs import (
    P_BOOL,
    P_BYTES,
    P_FIXED32,
    P_INT32,
    P_MESSAGE,
    P_SINT64,
    P_STRING,
    P_TIMESTAMP,
    P_UINT32,
    PF_CASE,
    PF_IMPLICIT,
    PF_MAP,
    PF_ONEOF,
    PF_OPTIONAL,
    PF_REPEATED,
    PROTO_DEPTH_EXCEEDED,
    PROTO_INVALID_TAG,
    PROTO_INVALID_UTF8,
    PROTO_LENGTH_PAST_END,
    PROTO_MAX_DEPTH,
    PROTO_MISSING_REQUIRED,
    PROTO_TRUNCATED,
    PROTO_VALUE_RANGE,
    PROTO_VARINT_TOO_LONG,
    PROTO_WRONG_WIRE_TYPE,
)
from pulsar_codec.errors import ProtobufDecodeError, error_for

WIRE = """
syntax = "proto3";
package wire;
import "google/protobuf/timestamp.proto";
import "google/protobuf/struct.proto";
enum Color { COLOR_UNSPECIFIED = 0; RED = 1; GREEN = 2; }
message Inner { int32 a = 1; string b = 2; repeated int32 c = 3; }
message Msg {
  int64 id = 1;
  Inner inner = 2;
  repeated int32 packed = 3;
  repeated int32 unpacked = 4 [packed = false];
  repeated fixed32 fixed = 5;
  int32 i32 = 6;
  sint32 s32 = 7;
  sint64 s64 = 8;
  uint32 u32 = 9;
  string text = 14;
  map<string, int32> counts = 15;
  oneof pick { int32 pick_n = 16; Inner pick_inner = 17; }
  google.protobuf.Timestamp ts = 18;
  repeated Inner inners = 19;
  google.protobuf.Value json = 20;
  map<int32, Inner> by_id = 21;
  Color color = 22;
  bool flag = 23;
  double real = 24;
  sfixed64 big = 536870911;
}
"""
P2 = """
syntax = "proto2";
package p2;
message Req { required int32 need = 1; optional int32 other = 2; }
"""


@pytest.fixture(scope="module")
def wire():
    pool = compile_proto(WIRE)
    desc = pool.FindMessageTypeByName("wire.Msg")
    return FORMAT.plan(desc, desc), message_class(pool, "wire.Msg")


def tag(number, wire_type):
    return varint(number << 3 | wire_type)


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def ld(number, body):
    return tag(number, 2) + varint(len(body)) + body


def zz(n):
    """Avro zigzag varint (reference, from the spec)."""
    return varint((n << 1) ^ (n >> 63))


# -- reading rules -----------------------------------------------------------------------------------


def test_fields_in_any_order(backend, wire):
    plan, Msg = wire
    parts = [tag(1, 0) + varint(7), ld(2, tag(1, 0) + varint(3)), ld(14, b"hi"), tag(6, 0) + varint(5)]
    forward = rows(plan, [b"".join(parts)])[0]
    backward = rows(plan, [b"".join(reversed(parts))])[0]
    assert forward == backward
    assert (forward["id"], forward["inner"]["a"], forward["text"], forward["i32"]) == (7, 3, "hi", 5)


def test_last_value_wins_for_scalars(backend, wire):
    plan, Msg = wire
    payload = tag(1, 0) + varint(1) + ld(14, b"first") + tag(1, 0) + varint(2) + ld(14, b"second")
    row = rows(plan, [payload])[0]
    assert (row["id"], row["text"]) == (2, "second")
    assert Msg.FromString(payload).id == 2


def test_message_occurrences_are_merged(backend, wire):
    plan, Msg = wire
    payload = ld(2, tag(1, 0) + varint(5) + tag(3, 0) + varint(1)) + tag(1, 0) + varint(9)
    payload += ld(2, ld(2, b"x") + tag(3, 0) + varint(2)) + ld(2, tag(1, 0) + varint(6))
    row = rows(plan, [payload])[0]
    assert row["inner"] == {"a": 6, "b": "x", "c": [1, 2]}
    runtime = Msg.FromString(payload).inner
    assert (runtime.a, runtime.b, list(runtime.c)) == (6, "x", [1, 2])


def test_oneof_member_change_drops_the_earlier_member(backend, wire):
    plan, Msg = wire
    a = ld(17, tag(1, 0) + varint(5))
    b = tag(16, 0) + varint(3)
    c = ld(17, tag(3, 0) + varint(7))
    row = rows(plan, [a + b + c])[0]
    assert (row["pick_n"], row["pick_inner"], row["pick_case"]) == (None, {"a": 0, "b": "", "c": [7]}, "pick_inner")
    assert Msg.FromString(a + b + c).pick_inner.a == 0
    row = rows(plan, [a + c])[0]  # the same member again: merged
    assert row["pick_inner"] == {"a": 5, "b": "", "c": [7]}


def test_packed_and_unpacked_are_both_read(backend, wire):
    plan, Msg = wire
    packed_body = varint(1) + varint(300) + varint(-2)
    payload = (
        ld(3, packed_body)  # packed as declared
        + tag(3, 0) + varint(4)  # an unpacked item of the packed field
        + ld(4, varint(10) + varint(11))  # packed items of the unpacked field
        + tag(4, 0) + varint(12)
        + ld(5, (1).to_bytes(4, "little") + (2**32 - 1).to_bytes(4, "little"))
        + tag(5, 5) + (3).to_bytes(4, "little")
    )  # fmt: skip
    row = rows(plan, [payload])[0]
    assert row["packed"] == [1, 300, -2, 4]
    assert row["unpacked"] == [10, 11, 12]
    assert row["fixed"] == [1, 2**32 - 1, 3]
    runtime = Msg.FromString(payload)
    assert (list(runtime.packed), list(runtime.unpacked), list(runtime.fixed)) == (
        row["packed"],
        row["unpacked"],
        row["fixed"],
    )


def test_unknown_fields_of_every_wire_type_are_skipped(backend, wire):
    plan, Msg = wire
    group = tag(99, 3) + tag(1, 0) + varint(1) + tag(98, 3) + ld(2, b"zz") + tag(98, 4) + tag(99, 4)
    unknown = tag(90, 0) + varint(-1) + tag(91, 1) + b"\0" * 8 + ld(92, b"abc") + tag(93, 5) + b"\0" * 4 + group
    payload = unknown + tag(1, 0) + varint(42) + unknown
    assert rows(plan, [payload])[0]["id"] == 42
    assert Msg.FromString(payload).id == 42


def test_integer_encodings(backend, wire):
    plan, Msg = wire
    payload = (
        tag(6, 0) + varint(-5)  # negative int32: 10 bytes
        + tag(7, 0) + varint(9)  # sint32 zigzag 9 = -5
        + tag(8, 0) + varint(2**64 - 1)  # sint64 zigzag max = -2**63
        + tag(9, 0) + varint(2**32 + 7)  # uint32 keeps the low 32 bits
        + tag(23, 0) + varint(2**40)  # bool: any non-zero varint
    )  # fmt: skip
    assert len(varint(-5)) == 10
    row = rows(plan, [payload])[0]
    runtime = Msg.FromString(payload)
    assert (row["i32"], row["s32"], row["s64"], row["u32"], row["flag"]) == (-5, -5, -(2**63), 7, True)
    assert (runtime.i32, runtime.s32, runtime.s64, runtime.u32, runtime.flag) == (-5, -5, -(2**63), 7, True)


def test_a_ten_byte_varint_drops_bits_past_64(backend, wire):
    plan, Msg = wire
    payload = tag(1, 0) + b"\xff" * 9 + b"\x7f"
    assert rows(plan, [payload])[0]["id"] == -1 == Msg.FromString(payload).id


def test_map_key_repeated_keeps_first_place_and_last_value(backend, wire):
    plan, Msg = wire

    def entry(key, value):
        return ld(15, ld(1, key) + tag(2, 0) + varint(value))

    payload = entry(b"a", 1) + entry(b"b", 2) + entry(b"a", 3) + ld(15, tag(2, 0) + varint(4))
    assert rows(plan, [payload])[0]["counts"] == [("a", 3), ("b", 2), ("", 4)]
    assert dict(Msg.FromString(payload).counts) == {"a": 3, "b": 2, "": 4}
    many = b"".join(entry(str(i % 20).encode(), i) for i in range(60))  # past the pairwise comparison
    got = rows(plan, [many])[0]["counts"]
    assert got == [(str(i), 40 + i) for i in range(20)]
    assert dict(Msg.FromString(many).counts) == dict(got)


def test_map_message_values_repeated_key_takes_the_last_entry_whole(backend, wire):
    plan, Msg = wire
    payload = ld(21, tag(1, 0) + varint(1) + ld(2, tag(1, 0) + varint(3)))
    payload += ld(21, tag(1, 0) + varint(1) + ld(2, ld(2, b"y")))
    assert rows(plan, [payload])[0]["by_id"] == [(1, {"a": 0, "b": "y", "c": []})]
    assert Msg.FromString(payload).by_id[1].a == 0


def test_field_numbers_past_the_direct_table(backend, wire):
    plan, Msg = wire
    payload = tag(536870911, 1) + (-3).to_bytes(8, "little", signed=True)
    assert len(tag(536870911, 1)) == 5
    assert rows(plan, [payload])[0]["big"] == -3 == Msg.FromString(payload).big


# -- errors --------------------------------------------------------------------------------------------

_ERRORS = [
    pytest.param(b"\x80", PROTO_TRUNCATED, 0, 0, id="tag-cut"),
    pytest.param(tag(1, 0) + b"\x80", PROTO_TRUNCATED, 1, 0, id="varint-cut"),
    pytest.param(tag(24, 1) + b"\0\0\0", PROTO_TRUNCATED, 2, 0, id="fixed64-cut"),
    pytest.param(tag(93, 5) + b"\0", PROTO_TRUNCATED, 2, 0, id="unknown-fixed32-cut"),
    pytest.param(tag(99, 3) + tag(1, 0) + varint(1), PROTO_TRUNCATED, 0, 0, id="group-cut"),
    pytest.param(ld(5, b"\0" * 5), PROTO_TRUNCATED, 6, 0, id="packed-fixed-cut"),
    pytest.param(ld(3, varint(1) + b"\x80"), PROTO_TRUNCATED, 3, 0, id="packed-varint-cut"),
    pytest.param(tag(1, 0) + b"\xff" * 10 + b"\x01", PROTO_VARINT_TOO_LONG, 1, 0, id="varint-11-bytes"),
    pytest.param(tag(1, 0) + b"\xff" * 10, PROTO_VARINT_TOO_LONG, 1, 0, id="varint-10-continued"),
    pytest.param(ld(3, b"\xff" * 11), PROTO_VARINT_TOO_LONG, 2, 0, id="packed-varint-long"),
    pytest.param(ld(1, b""), PROTO_WRONG_WIRE_TYPE, 0, 10, id="int64-as-bytes"),
    pytest.param(tag(2, 0) + varint(1), PROTO_WRONG_WIRE_TYPE, 0, 16, id="message-as-varint"),
    pytest.param(tag(14, 5) + b"\0" * 4, PROTO_WRONG_WIRE_TYPE, 0, 117, id="string-as-fixed32"),
    pytest.param(tag(1, 3) + tag(1, 4), PROTO_WRONG_WIRE_TYPE, 0, 11, id="known-field-as-group"),
    pytest.param(tag(2, 2) + varint(5) + b"ab", PROTO_LENGTH_PAST_END, 1, 5, id="length-past-end"),
    pytest.param(ld(2, tag(2, 2) + varint(9)), PROTO_LENGTH_PAST_END, 3, 9, id="length-past-message"),
    pytest.param(tag(14, 2) + varint(2**63), PROTO_LENGTH_PAST_END, 1, 2**63 - 1, id="huge-length"),
    pytest.param(ld(14, b"ok\xc3("), PROTO_INVALID_UTF8, 4, 0, id="utf8-bad-continuation"),
    pytest.param(ld(14, b"\xed\xa0\x80"), PROTO_INVALID_UTF8, 2, 0, id="utf8-surrogate"),
    pytest.param(ld(2, ld(2, b"abc\xf0\x9f\x98")), PROTO_INVALID_UTF8, 7, 0, id="utf8-cut-nested"),
    pytest.param(ld(15, ld(1, b"\xff")), PROTO_INVALID_UTF8, 4, 0, id="utf8-map-key"),
    pytest.param(b"\x00", PROTO_INVALID_TAG, 0, 0, id="field-0"),
    pytest.param(tag(3, 6), PROTO_INVALID_TAG, 0, 30, id="wire-type-6"),
    pytest.param(tag(3, 7), PROTO_INVALID_TAG, 0, 31, id="wire-type-7"),
    pytest.param(tag(1, 0) + varint(1) + tag(5, 4), PROTO_INVALID_TAG, 2, 44, id="end-group-alone"),
    pytest.param(tag(99, 3) + tag(98, 4), PROTO_INVALID_TAG, 2, 788, id="end-group-mismatch"),
    pytest.param(b"\x80\x80\x80\x80\x80\x01", PROTO_INVALID_TAG, 0, -1, id="tag-6-bytes"),
    pytest.param(b"\xf8\xff\xff\xff\x7f", PROTO_INVALID_TAG, 0, -1, id="tag-over-32-bits"),
    pytest.param(ld(18, tag(1, 0) + varint(2**62)), PROTO_VALUE_RANGE, 3, 0, id="timestamp-past-2262"),
    pytest.param(ld(18, tag(1, 0) + varint(-(2**40))), PROTO_VALUE_RANGE, 3, 0, id="timestamp-before-1677"),
]


@pytest.mark.parametrize(("payload", "code", "offset", "detail"), _ERRORS)
def test_errors_carry_code_offset_and_detail(backend, wire, payload, code, offset, detail):
    plan, _ = wire
    assert first_error(plan, payload) == (code, offset, plan.row_error(code, 0, offset, detail)[3])


def test_error_messages_name_the_field_and_wire_type(backend, wire):
    plan, _ = wire
    code, offset, detail = first_error(plan, ld(1, b""))
    assert str(error_for(code, 3, offset, detail)) == (
        "Protobuf field 1 with wire type 2 (length-delimited), which its type does not use (message 3, byte 0)"
    )
    code, offset, detail = first_error(plan, tag(99, 3) + tag(98, 4))
    assert detail == "end-group of field 98 without its start-group"
    code, offset, detail = first_error(plan, b"\x80\x80\x80\x80\x80\x01")
    assert detail == "longer than 5 bytes or over 32 bits"
    with pytest.raises(ProtobufDecodeError) as raised:
        FORMAT.decode_value(plan, b"#" + ld(14, b"\xff"), 1)
    assert (raised.value.code, raised.value.index, raised.value.offset) == (PROTO_INVALID_UTF8, 0, 2)


def test_timestamp_range_edges(backend, wire):
    plan, _ = wire
    edge = 2**63 - 1
    seconds, nanos = divmod(edge, 10**9)
    ok = ld(18, tag(1, 0) + varint(seconds) + tag(2, 0) + varint(nanos))
    assert rows(plan, [ok])[0]["ts"].value == edge
    over = ld(18, tag(1, 0) + varint(seconds) + tag(2, 0) + varint(nanos + 1))
    assert first_error(plan, over)[:2] == (PROTO_VALUE_RANGE, 3)  # the Timestamp's first byte
    low, low_nanos = divmod(-(2**63), 10**9)
    ok = ld(18, tag(1, 0) + varint(low) + tag(2, 0) + varint(low_nanos))
    assert rows(plan, [ok])[0]["ts"].value == -(2**63)
    # seconds past the clamp that nanos pull back into range, and one step too far
    for s, n, fits in ((seconds + 2, -(2 * 10**9) + nanos, True), (seconds + 4, -(2**31), False)):
        payload = ld(18, tag(1, 0) + varint(s) + tag(2, 0) + varint(n))
        if fits:
            assert rows(plan, [payload])[0]["ts"].value == s * 10**9 + n
        else:
            assert first_error(plan, payload)[0] == PROTO_VALUE_RANGE


def test_depth_limit_for_unknown_groups_and_nested_values(backend, wire):
    plan, _ = wire
    groups = tag(10, 3) * (PROTO_MAX_DEPTH - 1) + tag(10, 4) * (PROTO_MAX_DEPTH - 1)  # 10: unknown, 1-byte tags
    assert rows(plan, [groups])[0]["id"] == 0
    deeper = tag(10, 3) * PROTO_MAX_DEPTH
    assert first_error(plan, deeper) == (PROTO_DEPTH_EXCEEDED, PROTO_MAX_DEPTH - 1, PROTO_MAX_DEPTH)
    # google.protobuf.Value nests as Value -> ListValue -> Value ...: each is a message level
    value = b""
    for _ in range(60):
        value = ld(6, ld(1, value))
    code, offset, detail = first_error(plan, ld(20, value))
    assert (code, detail) == (PROTO_DEPTH_EXCEEDED, PROTO_MAX_DEPTH)


def test_missing_required_field(backend):
    pool = compile_proto(P2, "p2.proto")
    desc = pool.FindMessageTypeByName("p2.Req")
    plan = FORMAT.plan(desc, desc)
    assert rows(plan, [tag(1, 0) + varint(3)])[0] == {"need": 3, "other": None}
    code, offset, detail = first_error(plan, tag(2, 0) + varint(3))
    assert (code, offset, detail) == (PROTO_MISSING_REQUIRED, 2, "p2.Req.need (number 1)")
    errors, _, _, _ = backend.protobuf.transcode(
        plan.kernel_program(backend.protobuf), b"\x10\x03", [0], [2], None, True
    )
    assert errors == [(PROTO_MISSING_REQUIRED, 0, 2, 0 << 29 | 1)]  # the root is node 0


# -- exact Avro bytes of hand-built programs ------------------------------------------------------------

_PROGRAM = (
    (
        P_MESSAGE,
        (
            (1, PF_IMPLICIT, 1, b"\x00", -1, "n"),
            (2, PF_OPTIONAL, 2, b"\x00", -1, "s"),
            (3, PF_REPEATED, 3, None, -1, "r"),
            (4, PF_MAP, 4, None, -1, "m"),
            (5, PF_ONEOF, 5, b"\x00", 0, "o1"),
            (6, PF_ONEOF, 6, b"\x00", 0, "o2"),
            (0, PF_CASE, -1, None, 0, "o_case"),
            (7, PF_OPTIONAL, 7, b"\x02\x0e", -1, "d"),
            (8, PF_IMPLICIT, 8, b"\x00", -1, "t"),
        ),
    ),
    (P_INT32,),
    (P_STRING,),
    (P_SINT64,),
    (P_MESSAGE, ((1, PF_IMPLICIT, 2, b"\x00", -1, "key"), (2, PF_IMPLICIT, 9, b"\x00", -1, "value"))),
    (P_BOOL,),
    (P_BYTES,),
    (P_UINT32,),
    (P_TIMESTAMP,),
    (P_FIXED32,),
)


@pytest.mark.parametrize(
    ("payload", "avro"),
    [
        (b"", b"\x00" + b"\x00" + b"\x00" + b"\x00" + b"\x00\x00" + b"\x00" + b"\x02\x0e" + b"\x00"),
        (
            tag(1, 0) + varint(-1) + ld(2, b"hey") + ld(3, varint(3) + varint(4)) + tag(6, 2) + b"\x01z"
            + ld(4, ld(1, b"k") + tag(2, 5) + b"\xff\xff\xff\xff") + tag(7, 0) + varint(2**32 - 1)
            + ld(8, tag(1, 0) + varint(1) + tag(2, 0) + varint(5)),
            zz(-1) + b"\x02" + zz(3) + b"hey" + zz(2) + zz(-2) + zz(2) + b"\x00"
            + zz(1) + zz(1) + b"k" + zz(-1) + b"\x00"
            + b"\x00" + b"\x02" + zz(1) + b"z" + b"\x02" + zz(2) + b"o2"
            + b"\x02" + zz(-1) + zz(10**9 + 5),
        ),
    ],
)  # fmt: skip
def test_exact_avro_bytes(backend, payload, avro):
    kernels = backend.protobuf
    program = kernels.Program(_PROGRAM)
    errors, out, offsets, valid = kernels.transcode(program, payload, [0], [len(payload)], None, False)
    assert errors == [] and valid is None
    assert bytes(out[offsets[0] : offsets[1]]) == avro


@pytest.mark.parametrize(
    "nodes",
    [
        (),
        ((P_INT32,),),
        ((P_MESSAGE, ((1, PF_IMPLICIT, 5, b"\x00", -1, "x"),)),),
        ((P_MESSAGE, ((1, PF_IMPLICIT, 1, None, -1, "x"),)), (P_INT32,)),
        ((P_MESSAGE, ((1, PF_IMPLICIT, 1, b"\0", -1, "x"), (1, PF_IMPLICIT, 1, b"\0", -1, "y"))), (P_INT32,)),
        ((P_MESSAGE, ((0, PF_CASE, -1, None, 0, "c"),)),),
        ((P_MESSAGE, ((1, PF_MAP, 1, None, -1, "m"),)), (P_INT32,)),
        ((P_MESSAGE, ((1, 99, 1, None, -1, "x"),)), (P_INT32,)),
        ((P_MESSAGE, ((2**29, PF_IMPLICIT, 1, b"\0", -1, "x"),)), (P_INT32,)),
        ((P_MESSAGE, ()), (77,)),
    ],
)
def test_malformed_programs_are_value_errors(backend, nodes):
    with pytest.raises(ValueError):
        backend.protobuf.Program(nodes)


# -- rows ------------------------------------------------------------------------------------------------


def test_null_rows_and_keep_going(backend, wire):
    plan, _ = wire
    good = tag(1, 0) + varint(5)
    batch, errors = decode(plan, [good, None, b"\x80", good], keep_going=True)
    assert [r and r["id"] for r in batch.to_pylist()] == [5, None, None, 5]
    assert [(e[0], e[1], e[2]) for e in errors] == [(PROTO_TRUNCATED, 2, 0)]
    batch, errors = decode(plan, [good, None, b"\x80", good], keep_going=False)
    assert batch.num_rows == 2 and [(e[0], e[1]) for e in errors] == [(PROTO_TRUNCATED, 2)]


def test_rows_are_bounded_by_their_payload(backend, wire):
    plan, _ = wire
    # the gap byte after each payload would be a valid varint byte: a read past the end would take it
    batch, errors = decode(plan, [tag(1, 0), tag(1, 0) + b"\x85"], keep_going=True)
    assert [(e[0], e[1], e[2]) for e in errors] == [(PROTO_TRUNCATED, 0, 1), (PROTO_TRUNCATED, 1, 1)]


# -- twin parity -----------------------------------------------------------------------------------------


def _valid_payloads(Msg, seed, count):
    rng = random.Random(seed)
    out = []
    for i in range(count):
        m = Msg(id=rng.randint(-(2**63), 2**63 - 1), i32=rng.randint(-(2**31), 2**31 - 1), text="é" * rng.randint(0, 3))
        m.inner.a = rng.randint(0, 5)
        m.inner.c.extend(rng.randint(-9, 9) for _ in range(rng.randint(0, 3)))
        m.packed.extend(rng.randint(-(2**31), 2**31 - 1) for _ in range(rng.randint(0, 3)))
        m.unpacked.extend(rng.randint(0, 99) for _ in range(rng.randint(0, 3)))
        m.fixed.extend(rng.randint(0, 2**32 - 1) for _ in range(rng.randint(0, 2)))
        for k in range(rng.randint(0, 3)):
            m.counts[f"k{k}"] = k
            m.by_id[k].b = "v"
        if i % 2:
            m.pick_n = i
        else:
            m.pick_inner.b = "p"
        m.ts.seconds, m.ts.nanos = rng.randint(-(10**9), 10**9), rng.randint(0, 10**9 - 1)
        m.json.list_value.values.add().string_value = "s"
        m.color, m.flag, m.real = rng.choice([0, 1, 2, 7]), bool(i % 3), rng.random()
        out.append(m.SerializeToString())
    return out


def _transcode(kernels, program, payloads):
    seg = layout(payloads)
    starts, ends = seg.bounds()
    errors, out, offsets, valid = kernels.transcode(program, seg.data, starts, ends, seg.validity, True)
    per_row = [bytes(out[offsets[i] : offsets[i + 1]]) for i in range(len(payloads))]
    return [tuple(int(x) for x in e) for e in errors], per_row, None if valid is None else valid.tolist()


@settings(max_examples=150)
@given(
    seed=st.integers(0, 2**32 - 1),
    edits=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 10**6), st.integers(0, 255)), max_size=6),
)
def test_twins_agree_on_mutated_payloads(wire, both_backends, seed, edits):
    plan, Msg = wire
    payloads = []
    for payload in _valid_payloads(Msg, seed, 3):
        data = bytearray(payload)
        for kind, where, byte in edits:
            at = where % (len(data) + 1)
            if kind == 0 and data:
                data[at % len(data)] = byte
            elif kind == 1:
                data.insert(at, byte)
            elif kind == 2:
                del data[at:]
            elif kind == 3 and data:
                data[at % len(data)] ^= 1 << (byte % 8)
            else:
                data[at:at] = varint(byte << 20)
        payloads.append(bytes(data))
    compiled, pure = both_backends
    got = [_transcode(b.protobuf, plan.kernel_program(b.protobuf), payloads) for b in (compiled, pure)]
    assert got[0] == got[1]
    for b in (compiled, pure):  # and the whole decode: the Avro side reads every row the transcoder wrote
        with _backend.use(b.name):
            batch, errors = decode(plan, payloads)
            assert batch.num_rows == len(payloads)


def test_twins_agree_on_valid_payloads(wire, both_backends):
    plan, Msg = wire
    payloads = _valid_payloads(Msg, 7, 300)
    compiled, pure = both_backends
    got = [_transcode(b.protobuf, plan.kernel_program(b.protobuf), payloads) for b in (compiled, pure)]
    assert got[0] == got[1] and got[0][0] == []
    batches = []
    for b in (compiled, pure):
        with _backend.use(b.name):
            batches.append(decode(plan, payloads)[0])
    assert batches[0].equals(batches[1])
    assert np.array_equal(batches[0].column("id").to_numpy(), [Msg.FromString(p).id for p in payloads])


def _reordered(payload):
    """The same message with its top-level fields written last first (still valid Protobuf)."""
    fields, pos = [], 0
    while pos < len(payload):
        start = pos
        key, pos = _read_varint(payload, pos)
        wire = key & 7
        if wire == 0:
            pos = _read_varint(payload, pos)[1]
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            size, pos = _read_varint(payload, pos)
            pos += size
        fields.append(payload[start:pos])
    return b"".join(reversed(fields))


def _read_varint(data, pos):
    value = shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos


@pytest.mark.parametrize("every", [1, 2, 7])
def test_twins_agree_when_rows_are_not_in_field_order(wire, both_backends, every):
    # the compiled twin streams rows written in field order and reads the others in two passes;
    # a batch mixing both (and one where most rows are reordered, which stops the streaming) must
    # give the pure twin's bytes, and what the runtime reads
    plan, Msg = wire
    payloads = _valid_payloads(Msg, 11, 200)
    payloads = [_reordered(p) if i % every == 0 else p for i, p in enumerate(payloads)]
    compiled, pure = both_backends
    got = [_transcode(b.protobuf, plan.kernel_program(b.protobuf), payloads) for b in (compiled, pure)]
    assert got[0] == got[1] and got[0][0] == []
    with _backend.use("cython"):
        batch, _ = decode(plan, payloads)
    assert batch.column("id").to_pylist() == [Msg.FromString(p).id for p in payloads]
    assert batch.column("pick_case").to_pylist() == [Msg.FromString(p).WhichOneof("pick") for p in payloads]


def test_declaration_order_other_than_number_order(backend):
    pool = compile_proto(
        'syntax = "proto3"; package ord; message M { string b = 2; repeated int32 c = 3; int32 a = 1; }', "ord.proto"
    )
    desc = pool.FindMessageTypeByName("ord.M")
    plan = FORMAT.plan(desc, desc)
    M = message_class(pool, "ord.M")
    payloads = [M(a=1, b="x", c=[2, 3]).SerializeToString(), M(a=5).SerializeToString()]
    assert rows(plan, payloads) == [{"b": "x", "c": [2, 3], "a": 1}, {"b": "", "c": [], "a": 5}]
