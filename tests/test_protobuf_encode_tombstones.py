"""A row whose columns are all null is a null message (a tombstone) when one of those columns is a
field the decoder never reads as null (a proto3 implicit-presence field, a repeated field or map, a
proto2 ``required`` field or one with a ``[default = ...]``): only a decoded tombstone gives such a
row, so ``pc.decode`` -> ``pc.encode`` gives the null back, as Avro and JSON do. Where every column
is a field that reads null when unset, the row is the empty message, which decodes to that row
again. The columnar path and the row path write the same."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pulsar_codec as pc
from pulsar_codec.formats.protobuf import ProtobufEncoder, _columnar, parse
from pulsar_codec.registry import LocalRegistry

# the columns path runs the protobuf_encode kernel: both twins
pytestmark = pytest.mark.usefixtures("backend")

IMPLICIT = 'syntax = "proto3"; package p; message M { int64 id = 1; string name = 2; }'
PRESENCE = """
syntax = "proto3";
package p;
import "google/protobuf/wrappers.proto";

message Holds { optional int64 id = 1; Inner inner = 2; google.protobuf.StringValue w = 3; oneof o { int32 a = 4; string b = 5; } }
message Inner { int32 x = 1; }
"""


def _registry(tmp_path) -> LocalRegistry:
    return LocalRegistry(str(tmp_path / "registry.db"))


def test_a_decoded_tombstone_encodes_back_to_null(tmp_path):
    registry = _registry(tmp_path)
    first = pc.encode(
        pa.table({"id": [1, 0], "name": ["a", ""]}), registry, "p-value", format="PROTOBUF", schema=IMPLICIT
    )
    messages = pa.array([first[0].as_py(), None, first[1].as_py(), None], pa.binary())
    decoded = pc.decode(messages, registry)
    assert decoded.to_pylist()[1] == {"id": None, "name": None}
    back = pc.encode(decoded, registry, "p-value", use_latest=True)
    assert back.to_pylist() == messages.to_pylist()
    # with on_error="null" the tombstones are no errors
    kept = pc.encode(decoded, registry, "p-value", use_latest=True, on_error="null")
    assert kept.messages.to_pylist() == messages.to_pylist()
    assert kept.errors.num_rows == 0


@pytest.mark.parametrize(
    "proto, columns",
    [
        (IMPLICIT, {"id": pa.array([1, None, None], pa.int64()), "name": pa.array(["a", None, "b"])}),
        (
            'syntax = "proto3"; package p; message R { optional int32 a = 1; repeated string tags = 2; }',
            {"a": pa.array([1, None, None], pa.int32()), "tags": pa.array([None, None, ["t"]], pa.list_(pa.string()))},
        ),
        (
            'syntax = "proto3"; package p; message R { optional int32 a = 1; map<string, int32> m = 2; }',
            {
                "a": pa.array([1, None, None], pa.int32()),
                "m": pa.array([None, None, [("k", 1)]], pa.map_(pa.string(), pa.int32())),
            },
        ),
        (
            'syntax = "proto2"; package p; message R { optional int32 a = 1; required int32 r = 2; }',
            {"a": pa.array([1, None, None], pa.int32()), "r": pa.array([2, None, 5], pa.int32())},
        ),
        (
            'syntax = "proto2"; package p; message R { optional int32 a = 1; optional int32 d = 2 [default = 7]; }',
            {"a": pa.array([1, None, None], pa.int32()), "d": pa.array([2, None, 5], pa.int32())},
        ),
    ],
    ids=["implicit", "repeated", "map", "required", "proto2-default"],
)
def test_an_all_null_row_is_a_null_message_on_both_paths(proto, columns):
    encoder = ProtobufEncoder(parse(proto))
    batch = pa.RecordBatch.from_pydict(columns)
    written = encoder.encode(batch).to_pylist()
    assert written[1] is None
    assert written[0] is not None and written[2] is not None
    assert encoder._by_rows(batch).to_pylist() == written  # the row path: the same
    # the columnar path settles such a batch itself (encode does not fall back to the row path)
    valid = pa.array([payload is not None for payload in written])
    settled = _columnar.encode_columns(encoder.descriptor, list(zip(batch.schema.names, batch.columns)), 3, valid)
    assert settled.cast(pa.binary()).to_pylist() == written
    # sliced and chunked
    assert encoder.encode(batch.slice(1, 2)).to_pylist() == written[1:]
    table = pa.Table.from_batches([batch.slice(0, 2), batch.slice(2)])
    assert encoder.encode(table).to_pylist() == written


def test_a_message_whose_fields_all_read_null_when_unset_keeps_the_empty_message(tmp_path):
    encoder = ProtobufEncoder(parse(PRESENCE))
    names = ["id", "inner", "w", "a", "b", "o_case"]
    types = [pa.int64(), pa.struct([("x", pa.int32())]), pa.string(), pa.int32(), pa.string(), pa.string()]
    batch = pa.RecordBatch.from_arrays([pa.nulls(2, t) for t in types], names=names)
    assert encoder.encode(batch).to_pylist() == [b"", b""] == encoder._by_rows(batch).to_pylist()
    # an empty message decodes to that row and encodes back to itself (not to a tombstone)
    registry = _registry(tmp_path)
    one = pc.encode(pa.table({"id": [5]}), registry, "h-value", format="PROTOBUF", schema=PRESENCE)
    empty = one[0].as_py()[:6]  # the prefix and the message-index path, no body
    messages = pa.array([one[0].as_py(), empty], pa.binary())
    decoded = pc.decode(messages, registry)
    assert pc.encode(decoded, registry, "h-value", use_latest=True).to_pylist() == messages.to_pylist()
    # a tombstone of such a message decodes to the same row, so it comes back as the empty message
    # (as Avro writes a record whose fields all admit null)
    tombstone = pc.decode(pa.array([None], pa.binary()), registry, reader_schema=encoder.model)
    assert pc.encode(tombstone, registry, "h-value", use_latest=True).to_pylist() == [empty]


def test_a_oneof_case_column_counts_as_a_column():
    proto = 'syntax = "proto3"; package p; message C { int32 id = 1; oneof o { int32 a = 2; string b = 3; } }'
    encoder = ProtobufEncoder(parse(proto))
    batch = pa.RecordBatch.from_pydict(
        {
            "id": pa.array([None, None], pa.int32()),
            "a": pa.array([None, None], pa.int32()),
            "b": pa.array([None, None], pa.string()),
            "o_case": pa.array([None, "a"], pa.string()),
        }
    )
    # row 1 names a member (given null: left unset): a message, not a row of nulls
    written = encoder.encode(batch).to_pylist()
    assert written == [None, b""] == encoder._by_rows(batch).to_pylist()


def test_a_struct_column_s_non_null_row_of_null_fields_is_a_message():
    """The one-column form has its own null rows: a null struct is the tombstone, a struct whose
    fields are null is the message with nothing set."""
    encoder = ProtobufEncoder(parse(IMPLICIT))
    column = pa.array([{"id": None, "name": None}, None], pa.struct([("id", pa.int64()), ("name", pa.string())]))
    batch = pa.RecordBatch.from_arrays([column], names=["m"])
    assert encoder.encode(batch).to_pylist() == [b"", None] == encoder._by_rows(batch).to_pylist()


def test_nulls_in_fields_that_read_null_when_unset_are_unset_fields_beside_absent_columns():
    """A batch without a column for the implicit-presence field: a null in the columns it has is
    that field left unset (the empty message), as before; the row is no decoded tombstone."""
    encoder = ProtobufEncoder(parse(PRESENCE.replace("optional int64 id = 1;", "int64 id = 1;")))
    batch = pa.RecordBatch.from_pydict({"w": pa.array([None, "x"], pa.string())})
    assert encoder.encode(batch).to_pylist() == [b"", b"\x1a\x03\n\x01x"] == encoder._by_rows(batch).to_pylist()
    with_id = pa.RecordBatch.from_pydict({"id": pa.array([None, 0], pa.int64()), "w": pa.array([None, None])})
    assert encoder.encode(with_id).to_pylist() == [None, b""] == encoder._by_rows(with_id).to_pylist()
