"""Protobuf -> Arrow mapping (formats/protobuf/mapping.py, format.py) with the Protobuf runtime as oracle.

Schemas are compiled by protoc in the test; messages are built with the runtime, serialized with
``SerializeToString`` and decoded by both twins; the expected rows come from the runtime's own view
of the same bytes (``FromString``: merges, last values and oneof switches included) through the
mapping rules (protobuf_fixtures.row_of). Hypothesis builds random messages of a schema with every
kind of field, and payloads that are several messages concatenated (Protobuf's merge). Then the
mapping decisions one by one: the Arrow types, proto2 defaults and required fields, enums (unknown
numbers, aliases, ``enums_as``), well-known types, groups, recursion and ``max_depth``.
"""

import json
import math

import pyarrow as pa
import pytest
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st

from protobuf_fixtures import (
    FORMAT,
    canonical_rows,
    compile_proto,
    decode,
    expected_rows,
    first_error,
    message_class,
    rows,
)
from pulsar_codec.errors import SchemaError
from pulsar_codec.formats.protobuf.format import ProtobufFormat

RICH = """
syntax = "proto3";
package rich;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/any.proto";
import "google/protobuf/empty.proto";
enum Color { COLOR_UNSPECIFIED = 0; RED = 1; GREEN = 2; BLUE = -3; }
message Inner { int32 a = 1; string b = 2; repeated sint64 c = 3; Color color = 4; }
message Rich {
  int32 i32 = 1; int64 i64 = 2; uint32 u32 = 3; uint64 u64 = 4; sint32 s32 = 5; sint64 s64 = 6;
  fixed32 f32 = 7; fixed64 f64 = 8; sfixed32 sf32 = 9; sfixed64 sf64 = 10; float fl = 11; double db = 12;
  bool bo = 13; string st = 14; bytes by = 15; Color color = 16;
  optional int32 opt_i32 = 17; optional string opt_st = 18; optional Color opt_color = 19;
  Inner inner = 20; repeated Inner inners = 21;
  repeated int32 p_i32 = 22; repeated sint64 p_s64 = 23; repeated double p_db = 24; repeated fixed32 p_f32 = 25;
  repeated bool p_bo = 26; repeated Color colors = 27;
  repeated int32 u_i32 = 28 [packed = false]; repeated float u_fl = 29 [packed = false];
  repeated uint64 u_u64 = 30 [packed = false];
  repeated string strs = 31; repeated bytes blobs = 32;
  map<string, int32> m_si = 33; map<int64, Inner> m_im = 34; map<bool, string> m_bs = 35;
  map<uint32, Color> m_uc = 36; map<sint32, bytes> m_sb = 37; map<fixed64, double> m_fd = 38;
  oneof choice { int64 ch_i = 39; string ch_s = 40; Inner ch_inner = 41; }
  google.protobuf.Timestamp ts = 42; google.protobuf.Duration du = 43;
  google.protobuf.Int32Value w_i32 = 44; google.protobuf.UInt64Value w_u64 = 45;
  google.protobuf.StringValue w_st = 46; google.protobuf.BytesValue w_by = 47;
  google.protobuf.BoolValue w_bo = 48; google.protobuf.DoubleValue w_db = 49;
  google.protobuf.FloatValue w_fl = 50; google.protobuf.Int64Value w_i64 = 51;
  google.protobuf.UInt32Value w_u32 = 52;
  google.protobuf.Struct js = 53; google.protobuf.Value jv = 54; google.protobuf.ListValue jl = 55;
  google.protobuf.Any any = 56; google.protobuf.Empty empty = 57;
  repeated google.protobuf.Timestamp tss = 58; map<string, google.protobuf.Timestamp> m_ts = 59;
  repeated google.protobuf.Int32Value w_list = 60;
  sfixed32 far = 1000000;
}
"""

P2 = """
syntax = "proto2";
package p2;
enum Kind { K0 = 0; K1 = 1; K5 = 5; }
message Leaf { required int32 x = 1; optional string y = 2 [default = "why"]; }
message P2 {
  required int64 id = 1;
  optional int32 a = 2 [default = -7];
  optional string s = 3 [default = "hello"];
  optional bytes b = 4 [default = "\\001\\002"];
  optional double d = 5 [default = 2.5];
  optional float f = 6 [default = -1.5];
  optional bool t = 7 [default = true];
  optional Kind k = 8 [default = K5];
  optional uint32 u = 9 [default = 4294967295];
  optional uint64 u64 = 10 [default = 18446744073709551615];
  optional int32 plain = 11;
  optional Leaf leaf = 12;
  repeated int32 nums = 13;
  repeated int32 packed = 14 [packed = true];
  optional Kind k2 = 15;
  optional sint32 s32 = 16 [default = -100];
}
"""


@pytest.fixture(scope="module")
def rich():
    pool = compile_proto(RICH, "rich.proto")
    desc = pool.FindMessageTypeByName("rich.Rich")
    return FORMAT.plan(desc, desc), message_class(pool, "rich.Rich")


def check_against_runtime(plan, Msg, payloads, **options):
    """Decode ``payloads``; each row must be what the runtime reads from the same bytes."""
    got = rows(plan, payloads)
    messages = [Msg.FromString(p) for p in payloads]
    want = expected_rows(messages, plan.arrow_schema, **options)
    assert canonical_rows(got, plan.arrow_schema) == canonical_rows(want, plan.arrow_schema)
    for payload, row in zip(payloads, got):  # one payload alone gives the same value
        assert canonical_rows([FORMAT.decode_value(plan, payload)], plan.arrow_schema) == canonical_rows(
            [row], plan.arrow_schema
        )


# -- random messages of every kind -----------------------------------------------------------------

I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
U32 = st.integers(0, 2**32 - 1)
U64 = st.integers(0, 2**64 - 1)
FLOAT32 = st.floats(width=32, allow_nan=False)
DOUBLE = st.floats(allow_nan=False)
TEXT = st.text(max_size=6)
BLOB = st.binary(max_size=6)
COLOR = st.sampled_from([0, 1, 2, -3, 7, -100, 2**31 - 1])  # names and unknown numbers
JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
SCALARS = {
    "i32": I32, "i64": I64, "u32": U32, "u64": U64, "s32": I32, "s64": I64, "f32": U32, "f64": U64,
    "sf32": I32, "sf64": I64, "fl": FLOAT32, "db": DOUBLE, "bo": st.booleans(), "st": TEXT, "by": BLOB,
    "color": COLOR, "opt_i32": I32, "opt_st": TEXT, "opt_color": COLOR, "far": I32,
}  # fmt: skip
REPEATED = {
    "p_i32": I32, "p_s64": I64, "p_db": DOUBLE, "p_f32": U32, "p_bo": st.booleans(), "colors": COLOR,
    "u_i32": I32, "u_fl": FLOAT32, "u_u64": U64, "strs": TEXT, "blobs": BLOB,
}  # fmt: skip
MAPS = {
    "m_si": (TEXT, I32),
    "m_bs": (st.booleans(), TEXT),
    "m_uc": (U32, COLOR),
    "m_sb": (I32, BLOB),
    "m_fd": (U64, DOUBLE),
}
WRAPPERS = {
    "w_i32": I32, "w_u64": U64, "w_st": TEXT, "w_by": BLOB, "w_bo": st.booleans(), "w_db": DOUBLE,
    "w_fl": FLOAT32, "w_i64": I64, "w_u32": U32,
}  # fmt: skip
# seconds and nanos whose sum stays in int64 nanoseconds (1677-2262)
TIME = st.tuples(st.integers(-(9 * 10**9), 9 * 10**9), st.integers(0, 10**9 - 1))
DURATION = st.integers(-(9 * 10**9), 9 * 10**9).flatmap(
    lambda s: st.tuples(st.just(s), st.integers(0, 10**9 - 1) if s > 0 else st.integers(-(10**9) + 1, 0))
)


@st.composite
def inner_values(draw):
    return {"a": draw(I32), "b": draw(TEXT), "c": draw(st.lists(I64, max_size=3)), "color": draw(COLOR)}


def fill_inner(target, values):
    target.a, target.b, target.color = values["a"], values["b"], values["color"]
    target.c.extend(values["c"])


@st.composite
def rich_messages(draw, Msg):
    m = Msg()
    for name in draw(st.sets(st.sampled_from(sorted(SCALARS)))):
        setattr(m, name, draw(SCALARS[name]))
    for name in draw(st.sets(st.sampled_from(sorted(REPEATED)))):
        getattr(m, name).extend(draw(st.lists(REPEATED[name], min_size=1, max_size=4)))
    for name in draw(st.sets(st.sampled_from(sorted(MAPS)))):
        keys, values = MAPS[name]
        getattr(m, name).update(draw(st.dictionaries(keys, values, min_size=1, max_size=3)))
    for name in draw(st.sets(st.sampled_from(sorted(WRAPPERS)))):
        getattr(m, name).value = draw(WRAPPERS[name])
    if draw(st.booleans()):
        fill_inner(m.inner, draw(inner_values()))
    for values in draw(st.lists(inner_values(), max_size=2)):
        fill_inner(m.inners.add(), values)
    for key, values in draw(st.dictionaries(I64, inner_values(), max_size=2)).items():
        fill_inner(m.m_im[key], values)
    choice = draw(st.sampled_from(["", "ch_i", "ch_s", "ch_inner"]))
    if choice == "ch_i":
        m.ch_i = draw(I64)
    elif choice == "ch_s":
        m.ch_s = draw(TEXT)
    elif choice == "ch_inner":
        fill_inner(m.ch_inner, draw(inner_values()))
    if draw(st.booleans()):
        m.ts.seconds, m.ts.nanos = draw(TIME)
    if draw(st.booleans()):
        m.du.seconds, m.du.nanos = draw(DURATION)
    for seconds, nanos in draw(st.lists(TIME, max_size=2)):
        m.tss.add(seconds=seconds, nanos=nanos)
    for key, (seconds, nanos) in draw(st.dictionaries(TEXT, TIME, max_size=2)).items():
        m.m_ts[key].seconds, m.m_ts[key].nanos = seconds, nanos
    for value in draw(st.lists(I32, max_size=2)):
        m.w_list.add(value=value)
    if draw(st.booleans()):
        m.js.update(draw(st.dictionaries(TEXT, JSON, max_size=3)))
    if draw(st.booleans()):
        json_format.ParseDict(draw(JSON), m.jv)
    if draw(st.booleans()):
        m.jl.extend(draw(st.lists(JSON, max_size=3)))
    if draw(st.booleans()):
        m.any.type_url, m.any.value = "type.googleapis.com/rich.Inner", draw(BLOB)
    if draw(st.booleans()):
        m.empty.SetInParent()
    return m


@settings(max_examples=120)
@given(data=st.data())
def test_random_messages_decode_as_the_runtime_reads_them(backend, rich, data):
    plan, Msg = rich
    messages = data.draw(st.lists(rich_messages(Msg), min_size=1, max_size=3))
    payloads = [m.SerializeToString() for m in messages]
    check_against_runtime(plan, Msg, payloads)


@settings(max_examples=80)
@given(data=st.data())
def test_concatenated_messages_merge_as_the_runtime_merges_them(backend, rich, data):
    plan, Msg = rich
    parts = data.draw(st.lists(rich_messages(Msg), min_size=2, max_size=3))
    check_against_runtime(plan, Msg, [b"".join(m.SerializeToString() for m in parts)])


# -- the Arrow types -----------------------------------------------------------------------------------


def test_arrow_types(rich):
    plan, _ = rich
    schema = plan.arrow_schema
    types = {f.name: f.type for f in schema}
    assert types["i32"] == types["s32"] == types["sf32"] == pa.int32()
    assert types["u32"] == types["f32"] == pa.uint32()
    assert types["i64"] == types["s64"] == types["sf64"] == pa.int64()
    assert types["u64"] == types["f64"] == pa.uint64()
    assert (types["fl"], types["db"], types["bo"], types["st"], types["by"]) == (
        pa.float32(),
        pa.float64(),
        pa.bool_(),
        pa.string(),
        pa.binary(),
    )
    assert types["color"] == pa.dictionary(pa.int32(), pa.string())
    assert types["ts"] == pa.timestamp("ns", "UTC") and types["du"] == pa.duration("ns")
    assert types["w_u64"] == pa.uint64() and types["w_fl"] == pa.float32()
    assert types["js"] == types["jv"] == types["jl"] == pa.string()
    assert types["any"] == pa.struct([pa.field("type_url", pa.string(), False), pa.field("value", pa.binary(), False)])
    assert types["empty"] == pa.struct([])
    assert types["m_im"].key_type == pa.int64() and types["m_uc"].item_type == pa.dictionary(pa.int32(), pa.string())
    assert types["p_i32"] == pa.list_(pa.field("item", pa.int32(), nullable=False))
    assert types["tss"] == pa.list_(pa.field("item", pa.timestamp("ns", "UTC"), nullable=False))
    inner = types["inner"]
    assert [(f.name, f.nullable) for f in inner] == [("a", False), ("b", False), ("c", False), ("color", False)]
    names = schema.names
    assert names[names.index("ch_inner") + 1] == "choice_case" and "far" == names[-1]
    assert all(f.nullable for f in schema)  # top-level columns take null rows


def test_unknown_enum_numbers_extend_the_dictionary(backend, rich):
    plan, Msg = rich
    payloads = [Msg(color=c).SerializeToString() for c in (2, 9, -3, 0, -100, 9)]
    batch, errors = decode(plan, payloads)
    column = batch.column("color")
    assert column.dictionary.to_pylist() == ["COLOR_UNSPECIFIED", "RED", "GREEN", "BLUE", "-100", "9"]
    assert column.to_pylist() == ["GREEN", "9", "BLUE", "COLOR_UNSPECIFIED", "-100", "9"]


def test_enums_as_int32(backend, rich):
    _, Msg = rich
    desc = Msg.DESCRIPTOR
    fmt = ProtobufFormat(enums_as="int32")
    plan = fmt.plan(desc, desc)
    assert plan.arrow_schema.field("color").type == pa.int32()
    m = Msg(color=7, colors=[1, -3])
    m.m_uc[4] = 2
    assert rows(plan, [m.SerializeToString()], fmt)[0]["colors"] == [1, -3]
    check_payloads = [m.SerializeToString()]
    got = rows(plan, check_payloads, fmt)
    want = expected_rows([Msg.FromString(p) for p in check_payloads], plan.arrow_schema, enums_as="int32")
    assert canonical_rows(got, plan.arrow_schema) == canonical_rows(want, plan.arrow_schema)


def test_enum_aliases_take_the_first_name(backend):
    pool = compile_proto(
        'syntax = "proto3"; package al; enum E { option allow_alias = true; ZERO = 0; ONE = 1; UNO = 1; }'
        " message M { E e = 1; }",
        "al.proto",
    )
    desc = pool.FindMessageTypeByName("al.M")
    plan = FORMAT.plan(desc, desc)
    batch, _ = decode(plan, [b"\x08\x01"])
    assert batch.column("e").to_pylist() == ["ONE"]
    assert batch.column("e").dictionary.to_pylist() == ["ZERO", "ONE", "UNO"]


def test_struct_values_as_canonical_json(backend, rich):
    plan, Msg = rich
    m = Msg()
    m.js.update({"b": [1, "x", None, True], "a": {"z": 1.5}})
    m.jv.number_value = math.inf
    m.jl.values.add().number_value = math.nan
    unset = Msg()
    unset.jv.SetInParent()  # a Value with no kind: JSON null
    row = rows(plan, [m.SerializeToString(), unset.SerializeToString()])
    assert row[0]["js"] == '{"a":{"z":1.5},"b":[1.0,"x",null,true]}'
    assert (row[0]["jv"], row[0]["jl"]) == ('"Infinity"', '["NaN"]')
    assert row[1]["jv"] == "null" and row[1]["js"] is None
    assert json.loads(row[0]["js"]) == json_format.MessageToDict(m.js)


def test_wrappers_any_empty_and_duration(backend, rich):
    plan, Msg = rich
    m = Msg()
    m.w_st.value = ""  # a set wrapper with the default value is not null
    m.du.seconds, m.du.nanos = -5, -500
    m.any.type_url = "t/x"
    m.empty.SetInParent()
    row = rows(plan, [m.SerializeToString()])[0]
    assert (row["w_st"], row["w_i32"], row["any"], row["empty"]) == ("", None, {"type_url": "t/x", "value": b""}, {})
    assert row["du"].value == -5_000_000_500


# -- proto2 ---------------------------------------------------------------------------------------------


def test_proto2_defaults_presence_and_required(backend):
    pool = compile_proto(P2, "p2.proto")
    desc = pool.FindMessageTypeByName("p2.P2")
    Msg = message_class(pool, "p2.P2")
    plan = FORMAT.plan(desc, desc)
    types = {f.name: f.type for f in plan.arrow_schema}
    assert types["u"] == pa.uint32() and types["leaf"].field("x").nullable is False
    absent = Msg(id=1).SerializeToString()
    row = rows(plan, [absent])[0]
    assert row == {
        "id": 1, "a": -7, "s": "hello", "b": b"\x01\x02", "d": 2.5, "f": -1.5, "t": True, "k": "K5",
        "u": 2**32 - 1, "u64": 2**64 - 1, "plain": None, "leaf": None, "nums": [], "packed": [], "k2": None,
        "s32": -100,
    }  # fmt: skip
    full = Msg(id=2, a=0, s="", plain=0, nums=[1, 2], packed=[3], k2=1, s32=5)
    full.leaf.x = 4
    check_against_runtime(plan, Msg, [absent, full.SerializeToString()])
    assert rows(plan, [full.SerializeToString()])[0]["leaf"] == {"x": 4, "y": "why"}
    code, offset, detail = first_error(plan, b"\x10\x01")  # id (required) missing
    assert (code, offset, detail) == (117, 2, "p2.P2.id (number 1)")  # Leaf.x has number 1 too
    code, _, detail = first_error(plan, b"\x08\x01\x62\x00")  # leaf without its required x
    assert (code, detail) == (117, "p2.Leaf.x (number 1)")


def test_proto2_strings_must_be_utf8_too(backend):
    pool = compile_proto(P2, "p2.proto")
    desc = pool.FindMessageTypeByName("p2.P2")
    plan = FORMAT.plan(desc, desc)
    assert first_error(plan, b"\x08\x01\x1a\x01\xff")[:2] == (114, 4)


# -- schemas the mapping refuses, and max_depth ----------------------------------------------------------


def test_groups_are_refused_with_the_field_path():
    pool = compile_proto(
        'syntax = "proto2"; package g; message Outer { optional Mid mid = 1; }'
        " message Mid { optional group Grp = 2 { optional int32 z = 3; } }",
        "g.proto",
    )
    desc = pool.FindMessageTypeByName("g.Outer")
    with pytest.raises(SchemaError, match=r"g\.Outer\.mid\.grp: groups"):
        FORMAT.plan(desc, desc)


REC = """
syntax = "proto3";
package rec;
message Node { int32 v = 1; Node next = 2; repeated Node kids = 3; }
message A { B b = 1; int32 n = 2; }
message B { A a = 1; }
"""


def test_recursive_messages_are_refused_with_the_path():
    pool = compile_proto(REC, "rec.proto")
    for name, path in (("rec.Node", r"rec\.Node\.next -> rec\.Node"), ("rec.A", r"rec\.A\.b\.a -> rec\.A")):
        desc = pool.FindMessageTypeByName(name)
        with pytest.raises(SchemaError, match=path):
            FORMAT.plan(desc, desc)


def test_max_depth_cuts_recursion_into_bytes(backend):
    pool = compile_proto(REC, "rec.proto")
    desc = pool.FindMessageTypeByName("rec.Node")
    Node = message_class(pool, "rec.Node")
    fmt = ProtobufFormat(max_depth=2)
    plan = fmt.plan(desc, desc)
    next_type = plan.arrow_schema.field("next").type
    assert [f.name for f in next_type] == ["v", "next", "kids"]
    assert next_type.field("next").type == pa.binary()
    assert next_type.field("kids").type == pa.list_(pa.field("item", pa.binary(), nullable=False))
    n = Node(v=1)
    n.next.v = 2
    n.next.next.v = 3
    n.next.next.next.v = 4
    n.kids.add(v=5).kids.add(v=6)
    payload = n.SerializeToString()
    row = rows(plan, [payload], fmt)[0]
    assert row["next"]["next"] == n.next.next.SerializeToString()
    assert Node.FromString(row["next"]["next"]).next.v == 4
    assert row["kids"][0]["kids"] == [Node(v=6).SerializeToString()]
    got = rows(plan, [payload], fmt)
    want = expected_rows([Node.FromString(payload)], plan.arrow_schema, cut=2)
    assert got == want
    # two occurrences of a cut message are its merged bytes: both, in payload order
    twice = payload + Node(next=Node(next=Node(v=9))).SerializeToString()
    merged = rows(plan, [twice], fmt)[0]["next"]["next"]
    assert Node.FromString(merged) == Node.FromString(twice).next.next
    with pytest.raises(ValueError):
        ProtobufFormat(max_depth=0).plan(desc, desc)


def test_plan_checks_its_models(rich):
    plan, Msg = rich
    desc = Msg.DESCRIPTOR
    assert FORMAT.plan(desc, desc, base=plan) is plan
    with pytest.raises(SchemaError, match="not a Protobuf schema"):
        FORMAT.plan({"type": "record"}, desc)
    other = compile_proto(REC, "rec.proto").FindMessageTypeByName("rec.Node")
    with pytest.raises(SchemaError, match="base plan's reader"):
        ProtobufFormat(max_depth=3).plan(other, other, base=plan)
    with pytest.raises(ValueError, match="enums_as"):
        ProtobufFormat(enums_as="names")


def test_plans_from_schema_models(backend, rich):
    # the registry path: .proto text parsed into a ProtobufSchemaModel (formats/protobuf/schema.py)
    by_descriptor, Msg = rich
    model = FORMAT.parse(RICH, message="rich.Rich")
    plan = FORMAT.plan(model, model)
    assert plan.arrow_schema == by_descriptor.arrow_schema
    assert FORMAT.plan(model, FORMAT.parse(RICH, message="rich.Rich"), base=plan) is plan
    m = Msg(i32=-1, color=2, st="é")
    m.m_si["k"] = 1
    assert rows(plan, [m.SerializeToString()]) == rows(by_descriptor, [m.SerializeToString()])
    with pytest.raises(SchemaError, match=r"recursive message: rec\.A\.b\.a -> rec\.A"):
        FORMAT.plan(model, FORMAT.parse(REC, message="rec.A"))
