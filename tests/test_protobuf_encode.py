"""ProtobufEncoder edge cases: Timestamp / Duration over Protobuf's whole range, oneof cases, and
errors naming the field path and the row (``index``). The protobuf runtime's own
``SerializeToString(deterministic=True)`` is the oracle for the bytes."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest
from google.protobuf import message_factory

from pulsar_codec.errors import EncodeError
from pulsar_codec.formats.protobuf import ProtobufEncoder, parse

PROTO = """
syntax = "proto3";
package t;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";

enum Color { RED = 0; GREEN = 1; }
message Times {
  google.protobuf.Timestamp at = 1;
  google.protobuf.Duration wait = 2;
  repeated google.protobuf.Timestamp history = 3;
  map<string, google.protobuf.Duration> waits = 4;
}
message Ints {
  int32 i32 = 1;
  uint32 u32 = 2;
  sint64 s64 = 3;
  fixed64 f64 = 4;
  repeated int32 many = 5;
  map<int32, uint32> table = 6;
  google.protobuf.UInt32Value wrapped = 7;
  Color color = 8;
  Ints inner = 9;
}
message Choice {
  int32 id = 1;
  oneof pick { string s = 2; int64 n = 3; }
}
"""
MODEL = parse(PROTO)
UTC = datetime.UTC


def _encoder(name: str) -> ProtobufEncoder:
    return ProtobufEncoder(parse(PROTO, message=name))


def _runtime(name: str):
    return message_factory.GetMessageClass(MODEL.descriptor(name))


def _set_time(target, seconds: int, nanos: int) -> None:
    target.seconds, target.nanos = seconds, nanos


YEAR_1 = -62_135_596_800  # 0001-01-01T00:00:00Z
YEAR_3000 = 32_503_680_000  # 3000-01-01T00:00:00Z
LAST = 253_402_300_799  # 9999-12-31T23:59:59Z


@pytest.mark.parametrize(
    "column, expected",
    [
        (pa.array([YEAR_1, LAST, None], pa.timestamp("s")), [(YEAR_1, 0), (LAST, 0), None]),
        (pa.array([YEAR_3000 * 1_000_000 + 5], pa.timestamp("us", "UTC")), [(YEAR_3000, 5000)]),
        (pa.array([datetime.datetime(3000, 1, 1, tzinfo=UTC)], pa.timestamp("ms")), [(YEAR_3000, 0)]),
        (
            pa.array([-1, 1_700_000_000_123_456_789], pa.timestamp("ns")),
            [(-1, 999_999_999), (1_700_000_000, 123_456_789)],
        ),
    ],
)
def test_timestamps_outside_the_nanosecond_range_are_written_exactly(column, expected):
    """timestamp[ns] holds the years 1677-2262 only; a column of another unit holds Protobuf's
    whole range (years 1-9999) and is written without passing through nanoseconds."""
    got = _encoder("t.Times").encode(pa.table({"at": column})).to_pylist()
    want = []
    for value in expected:
        message = _runtime("t.Times")()
        if value is not None:
            _set_time(message.at, *value)
        want.append(message.SerializeToString(deterministic=True))
    assert got == want


def test_durations_of_every_unit_share_the_sign_of_seconds_and_nanos():
    column = pa.array([-1, 1, -1_500, 315_576_000_000_000, None], pa.duration("ms"))
    got = _encoder("t.Times").encode(pa.table({"wait": column})).to_pylist()
    want = []
    for value in [(0, -1_000_000), (0, 1_000_000), (-1, -500_000_000), (315_576_000_000, 0), None]:
        message = _runtime("t.Times")()
        if value is not None:
            _set_time(message.wait, *value)
        want.append(message.SerializeToString(deterministic=True))
    assert got == want


def test_lists_and_maps_of_timestamps_keep_their_unit():
    """A list<timestamp[us]> was read as integer microseconds and written as nanoseconds (1000x off)."""
    history = pa.array(
        [[datetime.datetime(2020, 1, 1)], None, [datetime.datetime(3000, 1, 1)]], pa.list_(pa.timestamp("us"))
    )
    waits = pa.array([[("a", 2)], [], [("b", -3)]], pa.map_(pa.string(), pa.duration("s")))
    table = pa.table({"history": history, "waits": waits}).slice(1)  # sliced: the offsets are rebased
    got = _encoder("t.Times").encode(table).to_pylist()
    first, second = _runtime("t.Times")(), _runtime("t.Times")()
    _set_time(second.history.add(), YEAR_3000, 0)
    second.waits["b"].seconds = -3
    assert got == [first.SerializeToString(deterministic=True), second.SerializeToString(deterministic=True)]
    whole = _encoder("t.Times").encode(pa.table({"history": history, "waits": waits})).to_pylist()
    expected = _runtime("t.Times")()
    _set_time(expected.history.add(), 1_577_836_800, 0)
    expected.waits["a"].seconds = 2
    assert whole[0] == expected.SerializeToString(deterministic=True)


def test_times_past_what_protobuf_allows_are_refused_with_field_and_row():
    encoder = _encoder("t.Times")
    after = pa.array([0, LAST + 1], pa.timestamp("s"))
    with pytest.raises(
        EncodeError, match=r"row 1: t\.Times\.at: google\.protobuf\.Timestamp outside the years 1-9999"
    ) as exc:
        encoder.encode(pa.table({"at": after}))
    assert exc.value.index == 1
    with pytest.raises(EncodeError, match=r"row 0: t\.Times\.wait: google\.protobuf\.Duration outside") as exc:
        encoder.encode(pa.table({"wait": pa.array([2**62], pa.duration("s"))}))
    assert exc.value.index == 0
    with pytest.raises(EncodeError, match=r"t\.Times\.history\[\]: google\.protobuf\.Timestamp outside"):
        encoder.encode_value({"history": [(YEAR_1 - 1) * 10**9]})


def test_one_value_takes_datetimes_and_timedeltas_of_any_year():
    encoder = _encoder("t.Times")
    message = _runtime("t.Times")()
    _set_time(message.at, YEAR_1, 1000)
    _set_time(message.wait, -1, -500_000_000)
    value = {"at": datetime.datetime(1, 1, 1, 0, 0, 0, 1), "wait": datetime.timedelta(seconds=-1.5)}
    assert encoder.encode_value(value) == message.SerializeToString(deterministic=True)


def test_a_oneof_case_naming_no_member_is_refused():
    encoder = _encoder("t.Choice")
    table = pa.table({"s": ["x", "y"], "pick_case": ["s", "zz"]})
    with pytest.raises(
        EncodeError, match=r"row 1: t\.Choice\.pick_case: 'zz' names no member of oneof pick \(s, n\)"
    ) as exc:
        encoder.encode(table)
    assert exc.value.index == 1
    with pytest.raises(EncodeError, match="names no member"):
        encoder.encode(pa.table({"id": [1], "pick_case": ["id"]}))  # a field, but not of the oneof


def test_two_members_of_a_oneof_without_a_case_are_refused_and_a_case_picks_one():
    encoder = _encoder("t.Choice")
    with pytest.raises(EncodeError, match=r"row 0: t\.Choice: members \['s', 'n'\] of oneof pick are all set"):
        encoder.encode(pa.table({"s": ["x"], "n": [5]}))
    picked = encoder.encode(pa.table({"s": ["x"], "n": [5], "pick_case": ["n"]})).to_pylist()
    assert picked == [_runtime("t.Choice")(n=5).SerializeToString(deterministic=True)]
    one = encoder.encode(pa.table({"s": ["x", None], "n": pa.array([None, 7], pa.int64())})).to_pylist()
    assert one == [_runtime("t.Choice")(s=x).SerializeToString(deterministic=True) for x in ("x",)] + [
        _runtime("t.Choice")(n=7).SerializeToString(deterministic=True)
    ]


@pytest.mark.parametrize(
    "column, path, text",
    [
        ("i32", r"t\.Ints\.i32", "2147483648 is out of the int32 range"),
        ("u32", r"t\.Ints\.u32", "-1 is out of the uint32 range"),
        ("many", r"t\.Ints\.many\[\]", "2147483648 is out of the int32 range"),
        ("table", r"t\.Ints\.table\{\}", "2147483648 is out of the int32 range"),
        ("wrapped", r"t\.Ints\.wrapped", "-1 is out of the uint32 range"),
        ("color", r"t\.Ints\.color", "2147483648 is out of the enum \\(int32\\) range"),
        ("inner", r"t\.Ints\.inner\.i32", "2147483648 is out of the int32 range"),
        ("f64", r"t\.Ints\.f64", "-1 is out of the uint64 range"),
    ],
)
def test_range_errors_name_the_field_path_and_row(column, path, text):
    good = {
        "i32": 1,
        "u32": 1,
        "many": [1],
        "table": [(1, 1)],
        "wrapped": 1,
        "color": 1,
        "inner": {"i32": 1},
        "f64": 1,
    }[column]
    bad = {
        "i32": 2**31,
        "u32": -1,
        "many": [1, 2**31],
        "table": [(2**31, 1)],
        "wrapped": -1,
        "color": 2**31,
        "inner": {"i32": 2**31},
        "f64": -1,
    }[column]
    encoder = _encoder("t.Ints")
    with pytest.raises(EncodeError, match=rf"^row 2: {path}: {text}$") as exc:
        encoder.encode(pa.Table.from_pylist([{column: good}, {column: good}, {column: bad}]))
    assert exc.value.index == 2


KINDS = """
syntax = "proto3";
package k;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
enum Color { RED = 0; GREEN = 1; }
message Loc { double lat = 1; }
message Row {
  int64 id = 1;
  string name = 2;
  double score = 3;
  bool ok = 4;
  bytes raw = 5;
  Color color = 6;
  Loc loc = 7;
  repeated int32 tags = 8;
  map<string, int32> counts = 9;
  google.protobuf.Timestamp at = 10;
  google.protobuf.Int32Value wrapped = 11;
  oneof pick { string p_s = 12; int32 p_n = 13; }
}
"""


@pytest.mark.usefixtures("backend")
def test_a_column_of_another_type_family_is_refused_before_any_row():
    """Every row holding a value would fail (or, for bytes, be garbled): one EncodeError naming the
    field and no row, even for an empty or all-null batch, as the Avro encoder refuses one."""
    encoder = ProtobufEncoder(parse(KINDS, message="k.Row"))
    good = {
        "id": pa.array([1], pa.int32()),
        "name": pa.array(["a"]).dictionary_encode(),
        "score": pa.array([1], pa.int64()),  # integers and decimals write as doubles
        "ok": pa.array([True]),
        "raw": pa.array([b"x"], pa.binary(1)),
        "color": pa.array([1], pa.int8()),  # an enum takes numbers and names
        "loc": pa.array([{"lat": 1.0}]),
        "tags": pa.array([[1]], pa.large_list(pa.int64())),
        "counts": pa.array([[("-1", 2)]], pa.map_(pa.string(), pa.int64())),
        "at": pa.array([5], pa.int64()),  # integer nanoseconds
        "wrapped": pa.array([3], pa.int32()),
        "pick_case": pa.array(["p_n"]),
        "p_n": pa.array([4], pa.int32()),
        "p_s": pa.nulls(1),
    }
    assert len(encoder.encode(pa.table(good))) == 1
    wrong = {
        "id": (pa.array(["1"]), "int64 field"),
        "name": (pa.array([5], pa.int64()), "string field"),
        "score": (pa.array(["1.5"]), "double field"),
        "ok": (pa.array([1], pa.int8()), "bool field"),
        "raw": (pa.array([3], pa.int64()), "bytes field"),  # was bytes(3): three zero bytes
        "color": (pa.array([1.0]), "enum field"),
        "loc": (pa.array([1.0]), "message k.Loc"),
        "tags": (pa.array(["1,2"]), "repeated field"),
        "counts": (pa.array([1]), "map field"),
        "at": (pa.array(["2024-01-01"]), "message google.protobuf.Timestamp"),
        "wrapped": (pa.array(["3"]), "message google.protobuf.Int32Value"),
        "pick_case": (pa.array([1]), "the name of a member of oneof pick"),
    }
    for column, (arr, what) in wrong.items():
        table = pa.table({**good, column: arr})
        for batch in (table, table.slice(0, 0), pa.table({**good, column: pa.nulls(1, arr.type)})):
            with pytest.raises(
                EncodeError, match=rf"^k\.Row\.{column}: a column of Arrow type .* as (a Protobuf |Protobuf )?{what}$"
            ) as raised:
                encoder.encode(batch)
            assert raised.value.index is None
    nested = [
        ({"loc": pa.array([{"lat": "1"}])}, r"k\.Row\.loc\.lat: a column of Arrow type string .* double field"),
        (
            {"loc": pa.array([{"lat": 1.0, "lon": 2.0}])},
            r"k\.Row\.loc: the struct has field 'lon' that k\.Loc has no field",
        ),
        ({"tags": pa.array([["1"]])}, r"k\.Row\.tags\[\]: a column of Arrow type string .* int32 field"),
        ({"counts": pa.array([[(1, 2)]], pa.map_(pa.int64(), pa.int64()))}, r"k\.Row\.counts\{\}: .* string map key"),
        (
            {"counts": pa.array([[("a", "2")]], pa.map_(pa.string(), pa.string()))},
            r"k\.Row\.counts\{\}: .* int32 field",
        ),
    ]
    for columns, match in nested:
        with pytest.raises(EncodeError, match=match):
            encoder.encode(pa.table(columns).slice(0, 0))
    as_struct = pa.table({"value": pa.array([{"id": "1"}])})  # one struct column: the message
    with pytest.raises(EncodeError, match=r"^k\.Row\.id: a column of Arrow type string"):
        encoder.encode(as_struct)


@pytest.mark.usefixtures("backend")
def test_a_bytes_field_takes_binary_only():
    """bytes() of an int n is n zero bytes and of a list its items: such values were written."""
    encoder = ProtobufEncoder(parse(KINDS, message="k.Row"))
    for value, shown in ((3, "int"), ([1, 2], "list"), ("x", "text")):
        with pytest.raises(EncodeError, match=rf"^row 0: k\.Row\.raw: a bytes field needs binary, got {shown}$"):
            encoder.encode_value({"raw": value})
    with pytest.raises(EncodeError, match=r"^row 0: k\.Row\.raw: a bytes field needs binary, got int$"):
        encoder._by_rows(pa.table({"raw": pa.array([3])}))
    for value in (b"\x00\x01", bytearray(b"ab"), memoryview(b"c")):
        assert encoder.encode_value({"raw": value}) == b"*" + bytes([len(bytes(value))]) + bytes(value)


@pytest.mark.usefixtures("backend")
def test_an_enum_number_given_as_text_is_its_decimal_digits():
    """int() reads " 1", "+1", "1_0" and other scripts' digits; the decoder writes an unknown number
    as plain decimal digits, and only those are read as a number (on both paths)."""
    encoder = ProtobufEncoder(parse(KINDS, message="k.Row"))
    for text in (" 1", "+1", "1_0", "\uff15", "1\n"):
        batch = pa.table({"color": [text]})
        for encode in (encoder.encode, encoder._by_rows):
            with pytest.raises(EncodeError, match=r"^row 0: k\.Row\.color: .* is not a value of enum k\.Color"):
                encode(batch)
        with pytest.raises(EncodeError, match="is not a value of enum k.Color"):
            encoder.encode_value({"color": text})
    batch = pa.table({"color": ["GREEN", "7", "-3", None]})
    expected = [b"0\x01", b"0\x07", b"0" + b"\xfd" + b"\xff" * 8 + b"\x01", None]  # (a null row: a tombstone)
    assert encoder.encode(batch).to_pylist() == expected == encoder._by_rows(batch).to_pylist()
