"""The column-at-a-time Protobuf encoder (formats/protobuf/_columnar.py) against the runtime.

Random messages of every field kind are serialized by the protobuf runtime
(``SerializeToString(deterministic=True)``), decoded into Arrow by our decoder, and encoded back:
the bytes must be the runtime's, and the columnar path must have written them itself (not left
them to the row path). Batches it leaves to the row path must give what the row path gives,
bytes or the same EncodeError.
"""

from __future__ import annotations

import decimal
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute below
import pytest
from google.protobuf import message_factory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_codec.errors import EncodeError
from pulsar_codec.formats.protobuf import ProtobufEncoder, _columnar, _map_order, parse
from pulsar_codec.pipeline import MessageDecoder

# the columns path runs the protobuf_encode kernel: both twins
pytestmark = pytest.mark.usefixtures("backend")

PROTO3 = """
syntax = "proto3";
package h;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";

enum Color { RED = 0; GREEN = 1; BLUE = 2; }
message All {
  int32 i32 = 1; int64 i64 = 2; uint32 u32 = 3; uint64 u64 = 4;
  sint32 s32 = 5; sint64 s64 = 6; fixed32 f32 = 7; fixed64 f64 = 8;
  sfixed32 sf32 = 9; sfixed64 sf64 = 10; float fl = 11; double db = 12;
  bool b = 13; string s = 14; bytes by = 15; Color color = 16;
  Inner inner = 17;
  repeated int32 r_i32 = 18; repeated sint64 r_s64 = 19; repeated double r_db = 20;
  repeated string r_s = 21; repeated Inner r_inner = 22; repeated Color r_color = 23;
  repeated bool r_b = 24; repeated fixed32 r_f32 = 25;
  map<string, int64> m_s = 26; map<int32, Inner> m_i = 27; map<int64, string> m_l = 28;
  map<bool, double> m_b = 29; map<uint32, Color> m_u = 30; map<sint64, bytes> m_z = 31;
  map<uint64, bool> m_u64 = 32;
  optional int32 o_i32 = 33; optional string o_s = 34; optional double o_db = 35;
  oneof pick { int64 p_n = 40; string p_s = 41; Inner p_inner = 42; }
  google.protobuf.Timestamp ts = 50; google.protobuf.Duration du = 51;
  google.protobuf.Int64Value w_i64 = 52; google.protobuf.StringValue w_s = 53;
  google.protobuf.BoolValue w_b = 54; google.protobuf.DoubleValue w_d = 55;
  repeated google.protobuf.Timestamp r_ts = 56;
  int32 far = 536870911;
}
message Inner { string name = 1; sint32 z = 2; repeated bytes blobs = 3; Color c = 4; }
"""
PROTO2 = """
syntax = "proto2";
package h2;
message P2 {
  required int32 id = 1;
  optional string name = 2 [default = "x"];
  repeated int32 unpacked = 3;
  repeated int32 packed = 4 [packed = true];
  optional int64 n = 5 [default = 7];
  repeated string names = 6;
  optional Q next = 7;
  optional Kind kind = 8;
  repeated Kind kinds = 9;
  enum Kind { K0 = 0; K1 = 1; K7 = 7; }
}
message Q { required int32 id = 1; optional string name = 2; optional int64 n = 3 [default = 7]; }
"""
ALL = parse(PROTO3, message="h.All")
P2 = parse(PROTO2, message="h2.P2")

I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
U32 = st.integers(0, 2**32 - 1)
U64 = st.integers(0, 2**64 - 1)
F32 = st.floats(width=32, allow_nan=False)
F64 = st.floats() | st.sampled_from([-0.0, 0.0, math.inf, -math.inf])
TEXT = st.text(max_size=6)
BLOB = st.binary(max_size=6)
COLOR = st.integers(0, 2)
SCALARS = {
    "i32": I32, "i64": I64, "u32": U32, "u64": U64, "s32": I32, "s64": I64, "f32": U32, "f64": U64,
    "sf32": I32, "sf64": I64, "fl": F32, "db": F64, "b": st.booleans(), "s": TEXT, "by": BLOB,
    "color": COLOR, "o_i32": I32, "o_s": TEXT, "o_db": F64, "far": I32,
}  # fmt: skip
REPEATED = {
    "r_i32": I32, "r_s64": I64, "r_db": F64, "r_s": TEXT, "r_color": COLOR, "r_b": st.booleans(), "r_f32": U32,
}  # fmt: skip
MAPS = {
    "m_s": (TEXT, I64), "m_l": (I64, TEXT), "m_b": (st.booleans(), F64), "m_u": (U32, COLOR),
    "m_z": (I64, BLOB), "m_u64": (U64, st.booleans()),
}  # fmt: skip
INNER = st.fixed_dictionaries(
    {},
    optional={"name": TEXT, "z": I32, "blobs": st.lists(BLOB, max_size=3), "c": COLOR},
)
SECONDS = st.integers(-9_223_372_035, 9_223_372_035)  # what the decoder's int64 nanoseconds hold
NANOS = st.integers(0, 999_999_999)


def _fill(msg, values):
    for name, value in values.items():
        field = msg.DESCRIPTOR.fields_by_name[name]
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            target = getattr(msg, name)
            for k, v in value:
                if isinstance(v, dict):
                    _fill(target[k], v)
                else:
                    target[k] = v
        elif field.message_type is not None and field.is_repeated:
            for item in value:
                _fill(getattr(msg, name).add(), item)
        elif field.is_repeated:
            getattr(msg, name).extend(value)
        elif field.message_type is not None:
            getattr(msg, name).SetInParent()
            _fill(getattr(msg, name), value)
        else:
            setattr(msg, name, value)


@st.composite
def all_messages(draw):
    values = {}
    for name, strategy in SCALARS.items():
        if draw(st.booleans()):
            values[name] = draw(strategy)
    for name, strategy in REPEATED.items():
        if draw(st.booleans()):
            values[name] = draw(st.lists(strategy, max_size=4))
    for name, (keys, items) in MAPS.items():
        if draw(st.booleans()):
            values[name] = list(draw(st.dictionaries(keys, items, max_size=4)).items())
    if draw(st.booleans()):
        values["m_i"] = list(draw(st.dictionaries(I32, INNER, max_size=3)).items())
    if draw(st.booleans()):
        values["inner"] = draw(INNER)
    if draw(st.booleans()):
        values["r_inner"] = draw(st.lists(INNER, max_size=3))
    pick = draw(st.sampled_from([None, "p_n", "p_s", "p_inner"]))
    if pick is not None:
        values[pick] = draw({"p_n": I64, "p_s": TEXT, "p_inner": INNER}[pick])
    for name, strategy in (("w_i64", I64), ("w_s", TEXT), ("w_b", st.booleans()), ("w_d", F64)):
        if draw(st.booleans()):
            values[name] = {"value": draw(strategy)}
    if draw(st.booleans()):
        values["ts"] = {"seconds": draw(SECONDS), "nanos": draw(NANOS)}
    if draw(st.booleans()):
        seconds = draw(SECONDS)
        nanos = draw(NANOS) * (1 if seconds > 0 else -1 if seconds < 0 else draw(st.sampled_from([1, -1])))
        values["du"] = {"seconds": seconds, "nanos": nanos}
    if draw(st.booleans()):
        values["r_ts"] = [{"seconds": draw(SECONDS), "nanos": draw(NANOS)} for _ in range(draw(st.integers(0, 2)))]
    return values


def _columns(batch: pa.RecordBatch) -> list[tuple[str, pa.Array]]:
    return list(zip(batch.schema.names, batch.columns))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(all_messages(), min_size=1, max_size=6))
def test_columns_write_the_runtime_s_bytes(messages):
    expected, batch, encoder = _round_trip_text(PROTO3, "h.All", messages)
    written = _columnar.encode_columns(encoder.descriptor, _columns(batch), batch.num_rows)  # settled
    assert written.cast(pa.binary()).to_pylist() == expected
    assert encoder.encode(batch).to_pylist() == expected
    # sliced: the arrays' offsets are honoured
    if batch.num_rows > 2:
        part = batch.slice(1, batch.num_rows - 2)
        assert encoder.encode(part).to_pylist() == expected[1:-1]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(all_messages(), min_size=1, max_size=5), st.integers(0, 2**32 - 1))
def test_nulls_anywhere_give_the_row_path_s_bytes(messages, seed):
    """Nulls the decoder never writes (an implicit-presence scalar, a whole nested message, a
    list or map) read as unset fields on both paths."""
    _, batch, encoder = _round_trip_text(PROTO3, "h.All", messages)
    rng = np.random.default_rng(seed)
    columns = []
    for column in batch.columns:
        mask = pa.array(rng.random(len(column)) < 0.4)
        columns.append(pa.compute.if_else(mask, pa.nulls(len(column), column.type), column))
    nulled = pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
    written = _columnar.encode_columns(encoder.descriptor, _columns(nulled), nulled.num_rows)
    assert written.cast(pa.binary()).to_pylist() == encoder._by_rows(nulled).to_pylist()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(all_messages(), min_size=1, max_size=5))
def test_spark_s_forms_write_the_runtime_s_bytes(messages):
    """What Spark hands back of a decoded batch (every map key as text, uint64 as decimal(20, 0),
    enums as names, timestamps in microseconds) encodes to the original bytes, by columns."""
    from pulsar_codec.integrations.spark.types import spark_arrow_type

    expected, batch, encoder = _round_trip_text(PROTO3, "h.All", messages)
    struct = pa.StructArray.from_arrays(batch.columns, names=batch.schema.names)
    _, convert = spark_arrow_type(struct.type)
    sparkish = convert(struct) if convert is not None else struct
    columns = [(sparkish.type.field(i).name, sparkish.field(i)) for i in range(sparkish.type.num_fields)]
    written = _columnar.encode_columns(encoder.descriptor, columns, len(sparkish))
    if any(
        m.get("ts", {}).get("nanos", 0) % 1000 or any(t["nanos"] % 1000 for t in m.get("r_ts", [])) for m in messages
    ):
        return  # Spark keeps microseconds: finer Timestamps do not come back
    if any(m.get("du", {}).get("nanos", 0) % 1000 for m in messages):
        return
    assert written.cast(pa.binary()).to_pylist() == expected
    rows = encoder._by_rows(pa.RecordBatch.from_struct_array(sparkish)).to_pylist()
    assert rows == expected


def test_map_keys_given_as_text():
    """Spark gives every map key as a string: an integer key's decimal digits, a bool key's
    true / false are read back; other text is the row path's EncodeError."""
    encoder = ProtobufEncoder(ALL)
    good = pa.RecordBatch.from_pydict(
        {
            "m_l": pa.array([[("-1", "n"), ("3", "p")]], pa.map_(pa.string(), pa.string())),
            "m_b": pa.array([[("true", 1.0), ("false", 2.0)]], pa.map_(pa.string(), pa.float64())),
            "m_u64": pa.array([[("18446744073709551615", True)]], pa.map_(pa.string(), pa.bool_())),
        }
    )
    written = _columnar.encode_columns(encoder.descriptor, _columns(good), 1)
    typed = pa.RecordBatch.from_pydict(
        {
            "m_l": pa.array([[(-1, "n"), (3, "p")]], pa.map_(pa.int64(), pa.string())),
            "m_b": pa.array([[(True, 1.0), (False, 2.0)]], pa.map_(pa.bool_(), pa.float64())),
            "m_u64": pa.array([[(2**64 - 1, True)]], pa.map_(pa.uint64(), pa.bool_())),
        }
    )
    assert (
        written.cast(pa.binary()).to_pylist() == encoder._by_rows(good).to_pylist() == encoder.encode(typed).to_pylist()
    )
    for column, value in (("m_l", " 3"), ("m_l", "3.0"), ("m_b", "1"), ("m_u64", "-1")):
        value_type = {"m_l": pa.string(), "m_b": pa.float64(), "m_u64": pa.bool_()}[column]
        item = {"m_l": "x", "m_b": 1.0, "m_u64": True}[column]
        bad = pa.RecordBatch.from_pydict({column: pa.array([[(value, item)]], pa.map_(pa.string(), value_type))})
        with pytest.raises(_columnar.Unsettled):
            _columnar.encode_columns(encoder.descriptor, _columns(bad), 1)
        with pytest.raises(EncodeError, match=rf"row 0: h.All.{column}"):
            encoder.encode(bad)


def _round_trip_text(text: str, name: str, messages: list[dict]):
    model = parse(text, message=name)
    cls = message_factory.GetMessageClass(model.descriptor())
    expected = []
    for values in messages:
        msg = cls()
        _fill(msg, values)
        expected.append(msg.SerializeToString(deterministic=True))
    batch = MessageDecoder({1: text}, format="PROTOBUF", message=name).decode_payloads(expected, 1)
    return expected, batch, ProtobufEncoder(model)


P2_VALUES = st.fixed_dictionaries(
    {"id": I32},
    optional={
        "name": TEXT,
        "unpacked": st.lists(I32, max_size=3),
        "packed": st.lists(I32, max_size=3),
        "n": I64,
        "names": st.lists(TEXT, max_size=3),
        "kind": st.sampled_from([0, 1, 7]),
        "kinds": st.lists(st.sampled_from([0, 1, 7]), max_size=3),
        "next": st.fixed_dictionaries({"id": I32}, optional={"name": TEXT, "n": I64}),
    },
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(P2_VALUES, min_size=1, max_size=6))
def test_proto2_packed_unpacked_and_defaults(messages):
    _, batch, encoder = _round_trip_text(PROTO2, "h2.P2", messages)
    written = _columnar.encode_columns(encoder.descriptor, _columns(batch), batch.num_rows)
    # the decoder fills an absent proto2 field with its [default], which is then written: the row
    # path (the runtime) is the reference here, not the original bytes
    assert written.cast(pa.binary()).to_pylist() == encoder._by_rows(batch).to_pylist()


def test_null_struct_rows_are_null_payloads_and_the_rest_written_by_columns():
    encoder = ProtobufEncoder(parse(PROTO3, message="h.Inner"))
    column = pa.array(
        [{"name": "a", "z": -3, "blobs": [b"x"], "c": "GREEN"}, None, {"name": "", "z": 0, "blobs": [], "c": "RED"}],
        pa.struct([("name", pa.string()), ("z", pa.int32()), ("blobs", pa.list_(pa.binary())), ("c", pa.string())]),
    )
    batch = pa.RecordBatch.from_arrays([column], names=["value"])
    got = encoder.encode(batch).to_pylist()
    assert got == encoder._by_rows(batch).to_pylist()
    assert got[1] is None and got[2] == b""


@pytest.mark.parametrize(
    ("columns", "why"),
    [
        ({"i32": pa.array([2**31], pa.int64())}, "a value out of the int32 range"),
        ({"u32": pa.array([-1], pa.int64())}, "a negative uint32"),
        ({"r_i32": pa.array([[1, 2]], pa.list_(pa.int32(), 2))}, "a fixed-size list for a repeated field"),
        ({"color": pa.array(["PURPLE"])}, "an unknown enum name"),
        ({"p_n": pa.array([1]), "p_s": pa.array(["x"])}, "two members of a oneof without a case"),
        ({"r_i32": pa.array([[1, None]], pa.list_(pa.int32()))}, "a null item"),
        ({"m_s": pa.array([[("k", None)]], pa.map_(pa.string(), pa.int64()))}, "a null map value"),
        ({"m_s": pa.array([[("k", 1), ("k", 2)]], pa.map_(pa.string(), pa.int64()))}, "a repeated map key"),
        ({"ts": pa.array([2**62], pa.timestamp("s"))}, "a time past year 9999"),
    ],
)
def test_what_columns_leave_is_the_row_path_s(columns, why):
    encoder = ProtobufEncoder(ALL)
    batch = pa.RecordBatch.from_pydict(columns)
    with pytest.raises(_columnar.Unsettled):
        _columnar.encode_columns(encoder.descriptor, _columns(batch), batch.num_rows)
    try:
        expected = encoder._by_rows(batch).to_pylist()
    except EncodeError as exc:
        with pytest.raises(EncodeError) as raised:
            encoder.encode(batch)
        assert str(raised.value) == str(exc) and raised.value.index == exc.index, why
    else:  # the row path writes it (the last value of a repeated map key wins)
        assert encoder.encode(batch).to_pylist() == expected, why


def test_oneof_case_column_picks_the_member_written():
    encoder = ProtobufEncoder(ALL)
    batch = pa.RecordBatch.from_pydict(
        {
            "p_n": pa.array([5, 6, None, 0]),
            "p_s": pa.array(["x", None, "y", None]),
            "pick_case": pa.array(["p_s", "p_n", None, "p_n"]),
        }
    )
    written = _columnar.encode_columns(encoder.descriptor, _columns(batch), batch.num_rows)
    assert written.cast(pa.binary()).to_pylist() == encoder._by_rows(batch).to_pylist()


def test_inputs_of_other_arrow_types():
    """Integer widths, decimal(20, 0), float32, large / view strings, dictionaries, fixed-size
    binary, large lists: each as the row path reads it."""
    encoder = ProtobufEncoder(ALL)
    batch = pa.RecordBatch.from_pydict(
        {
            "i32": pa.array([-5, 7], pa.int8()),
            "u64": pa.array([2**64 - 1, 0], pa.uint64()),
            "f64": pa.array([decimal.Decimal(2**64 - 1), None], pa.decimal128(20, 0)),  # Spark's uint64
            "i64": pa.array([3, 2**40], pa.uint64()),
            "fl": pa.array([1.5, -0.0], pa.float32()),
            "db": pa.array([1, -(2**60)], pa.int64()),
            "s": pa.array(["é", ""], pa.large_string()),
            "by": pa.array([b"ab", b"\x00\x01"], pa.binary(2)),
            "color": pa.array(["BLUE", "7"]).dictionary_encode(),
            "r_s": pa.array([["a"], []], pa.large_list(pa.string())),
            "m_l": pa.array([[(-1, "n"), (3, "p")], []], pa.map_(pa.int64(), pa.large_string())),
        }
    )
    written = _columnar.encode_columns(encoder.descriptor, _columns(batch), batch.num_rows)
    assert written.cast(pa.binary()).to_pylist() == encoder._by_rows(batch).to_pylist()
    # a decimal with a fraction is no integer: the error shows the value
    fraction = pa.RecordBatch.from_pydict({"f64": pa.array([decimal.Decimal("12.50")], pa.decimal128(20, 2))})
    with pytest.raises(EncodeError, match=r"an integer field needs a whole number, got Decimal\('12.50'\)"):
        encoder.encode(fraction)


def test_map_order_is_checked_against_the_runtime_for_each_key_type():
    fields = ALL.descriptor().fields_by_name
    for name in ("m_s", "m_i", "m_l", "m_b", "m_u", "m_z", "m_u64"):
        assert _map_order._runtime_order_is_ours(fields[name]), name


def test_a_large_batch_matches_the_row_path():
    rng = np.random.default_rng(3)
    n = 5000
    encoder = ProtobufEncoder(ALL)
    batch = pa.RecordBatch.from_pydict(
        {
            "i64": pa.array(rng.integers(-(2**62), 2**62, n)),
            "s32": pa.array(rng.integers(-1000, 1000, n).astype(np.int32)),
            "db": pa.array(rng.normal(size=n)),
            "s": pa.array([f"w{i % 17}" * (i % 3) for i in range(n)]),
            "r_i32": pa.array([list(range(i % 5)) for i in range(n)], pa.list_(pa.int32())),
            "m_s": pa.array(
                [[(f"k{(i * 7 + j) % 11}", j) for j in range(i % 4)] for i in range(n)],
                pa.map_(pa.string(), pa.int64()),
            ),
        }
    )
    written = _columnar.encode_columns(encoder.descriptor, _columns(batch), batch.num_rows)
    assert written.cast(pa.binary()).to_pylist() == encoder._by_rows(batch).to_pylist()


def test_a_closed_enum_s_unknown_number_is_left_to_the_row_path():
    """proto2 enums are closed: the runtime refuses a number they do not define, wherever the
    field is (singular, repeated, map value), so the columnar path must not write it either."""
    encoder = ProtobufEncoder(
        parse(
            'syntax = "proto2"; package c; enum E { A = 0; B = 1; } '
            "message M { optional E e = 1; repeated E r = 2; map<string, E> m = 3; }"
        )
    )
    for name, column in (
        ("e", pa.array([1, 5], pa.int32())),
        ("r", pa.array([[1], [5, 1]], pa.list_(pa.int32()))),
        ("m", pa.array([[("k", 1)], [("k", 5)]], pa.map_(pa.string(), pa.int32()))),
        ("e", pa.array(["B", "5"])),
    ):
        batch = pa.RecordBatch.from_arrays([column], names=[name])
        with pytest.raises(_columnar.Unsettled):
            _columnar.encode_columns(encoder.descriptor, _columns(batch), batch.num_rows)
        with pytest.raises(EncodeError, match="row 1: c.M.*invalid enumerator 5"):
            encoder.encode(batch)
        good = batch.slice(0, 1)
        written = _columnar.encode_columns(encoder.descriptor, _columns(good), 1)
        assert written.cast(pa.binary()).to_pylist() == encoder._by_rows(good).to_pylist()


def test_maps_in_a_message_with_required_fields(monkeypatch):
    """The map-order check builds the map's message with only the map set: a proto2 message with
    required fields must not make that check fail."""
    monkeypatch.setattr(_map_order, "_ORDER_HOLDS", {})  # the check runs here, not cached by an earlier test
    text = 'syntax = "proto2"; package r; message R { required int32 id = 1; map<string, int32> m = 2; }'
    encoder = ProtobufEncoder(parse(text))
    batch = pa.RecordBatch.from_pydict(
        {
            "id": pa.array([1, 2], pa.int32()),
            "m": pa.array([[("b", 1), ("a", 2)], []], pa.map_(pa.string(), pa.int32())),
        }
    )
    assert _map_order._runtime_order_is_ours(encoder.descriptor.fields_by_name["m"])  # asked, not failed
    written = _columnar.encode_columns(encoder.descriptor, _columns(batch), batch.num_rows)
    assert written.cast(pa.binary()).to_pylist() == encoder._by_rows(batch).to_pylist()


# -- probe25: parity findings of a fuzz of both paths -------------------------------------------------

PROBED = """
syntax = "proto2";
package d;
import "google/protobuf/wrappers.proto";

message M {
  required int32 id = 1;
  repeated string rs = 2;
  map<string, string> ms = 3;
  optional google.protobuf.StringValue ws = 4;
  optional google.protobuf.BytesValue wb = 5;
  optional double d = 6;
}
"""


def _same_on_both_paths(encoder, batch):
    """encode() gives what the row path gives: the bytes, or the same EncodeError."""
    try:
        expected = encoder._by_rows(batch).to_pylist()
    except EncodeError as exc:
        with pytest.raises(EncodeError) as raised:
            encoder.encode(batch)
        assert str(raised.value) == str(exc) and raised.value.index == exc.index
        return None
    assert encoder.encode(batch).to_pylist() == expected
    return expected


def test_a_bytes_value_wrapper_from_binary_is_its_value_on_both_paths():
    encoder = ProtobufEncoder(parse(PROBED))
    batch = pa.RecordBatch.from_pydict({"id": [1], "wb": [b"\n\x01x"]})
    assert _same_on_both_paths(encoder, batch) == [b"\x08\x01*\x05\n\x03\n\x01x"]


def test_nulls_among_a_dictionary_s_values_are_nulls():
    encoder = ProtobufEncoder(parse(PROBED))

    def null_dictionary(value_type=None):
        values = pa.array([None], value_type or pa.string())
        return pa.DictionaryArray.from_arrays(pa.array([0], pa.int32()), values)

    offsets = pa.array([0, 1], pa.int32())
    cases = [
        {"id": null_dictionary(pa.int32())},  # a required field: the runtime's EncodeError, with the row
        {"id": [1], "rs": pa.ListArray.from_arrays(offsets, null_dictionary())},
        {"id": [1], "ms": pa.MapArray.from_arrays(offsets, pa.array(["k"]), null_dictionary())},
        {"id": [1], "ws": null_dictionary()},  # unset, not an empty wrapper
    ]
    for columns in cases:
        batch = pa.RecordBatch.from_pydict(columns)
        _same_on_both_paths(encoder, batch)
    with pytest.raises(EncodeError, match="row 0: .*missing required fields: id") as raised:
        encoder.encode(pa.RecordBatch.from_pydict({"rs": [["a"]]}))
    assert raised.value.index == 0


def test_view_and_null_typed_columns_are_written_by_columns():
    encoder = ProtobufEncoder(
        parse('syntax = "proto3"; package a; message M { string s = 1; map<string, int64> m = 2; }')
    )
    column = pa.array([{"s": "x"}, None, {"s": "y"}], pa.struct([("s", pa.string_view())]))
    written = _columnar.encode_columns(encoder.descriptor, [("s", column.field(0))], 3, column.is_valid())
    assert written.cast(pa.binary()).to_pylist() == [b"\n\x01x", None, b"\n\x01y"]
    assert encoder.encode(pa.RecordBatch.from_arrays([column], ["value"])).to_pylist() == written.to_pylist()
    keys = pa.array(["b", "a"], pa.string_view())
    batch = pa.RecordBatch.from_pydict(
        {"s": pa.nulls(1), "m": pa.MapArray.from_arrays(pa.array([0, 2], pa.int32()), keys, pa.array([1, 2]))}
    )
    written = _columnar.encode_columns(encoder.descriptor, _columns(batch), 1)
    assert written.cast(pa.binary()).to_pylist() == encoder._by_rows(batch).to_pylist()


def test_the_row_path_refuses_shapes_it_used_to_misread():
    """Text into a repeated field was split into characters, a number's text or a bool read into
    a double; a list of {key, value} structs (how other tools write maps) is a map."""
    encoder = ProtobufEncoder(parse(PROBED))
    for columns, match in (
        ({"id": [1], "rs": ["abc"]}, "rs: a repeated field needs a list, got str"),
        ({"id": [1], "d": ["1.5"]}, "d: a floating-point field needs a number, got str"),
        ({"id": [1], "d": [True]}, "d: a floating-point field needs a number, got bool"),
    ):
        with pytest.raises(EncodeError, match=match):  # (encode() refuses such a column before any row)
            encoder._by_rows(pa.RecordBatch.from_pydict(columns))
    entries = pa.array([[{"key": "k1", "value": "v1"}, {"key": "k0", "value": "v0"}]])
    as_map = pa.array([[("k1", "v1"), ("k0", "v0")]], pa.map_(pa.string(), pa.string()))
    as_entries = pa.RecordBatch.from_pydict({"id": [1], "ms": entries})
    got = encoder.encode(as_entries).to_pylist()
    assert got == encoder.encode(pa.RecordBatch.from_pydict({"id": [1], "ms": as_map})).to_pylist()
    assert got == encoder._by_rows(as_entries).to_pylist()
    written = _columnar.encode_columns(encoder.descriptor, _columns(as_entries), 1)  # by columns too
    assert written.cast(pa.binary()).to_pylist() == got
    holes = pa.array([[{"key": "k", "value": "v"}, None]], entries.type)
    with pytest.raises(_columnar.Unsettled):
        _columnar.encode_columns(encoder.descriptor, [("id", pa.array([1])), ("ms", holes)], 1)
    with pytest.raises(EncodeError, match="row 0: d.M.ms: a map entry needs a key and a value, got None"):
        encoder.encode(pa.RecordBatch.from_pydict({"id": [1], "ms": holes}))


def test_times_from_integer_nanoseconds():
    """Timestamp and Duration from an integer column of nanoseconds, as the row path reads one."""
    encoder = ProtobufEncoder(ALL)
    nanos = [0, 1, -1, 1_500_000_000, -1_500_000_000, None, 2**63 - 1]
    batch = pa.RecordBatch.from_pydict({"ts": pa.array(nanos, pa.int64()), "du": pa.array(nanos, pa.int64())})
    written = _columnar.encode_columns(encoder.descriptor, _columns(batch), batch.num_rows)
    assert written.cast(pa.binary()).to_pylist() == encoder._by_rows(batch).to_pylist()


def test_a_column_the_message_does_not_name_refuses_the_batch():
    """Not one row's error: the whole batch's shape, raised without a row index (also with
    on_error="null", which steps around rows only)."""
    encoder = ProtobufEncoder(ALL)
    batch = pa.RecordBatch.from_pydict({"i32": [1, 2], "nope": [1, 2]})
    with pytest.raises(_columnar.Unsettled):
        _columnar.encode_columns(encoder.descriptor, _columns(batch), batch.num_rows)
    with pytest.raises(
        EncodeError, match=r"the batch has column\(s\) \['nope'\] that h.All has no field for"
    ) as raised:
        encoder.encode(batch)
    assert raised.value.index is None
