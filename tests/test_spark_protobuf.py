"""spark.decode of Protobuf messages: unsigned integers and durations, which Spark has no Arrow form
for, arrive widened (uint32 -> long, uint64 -> decimal(20, 0)) and as day-time intervals."""

from __future__ import annotations

import datetime
import decimal

import pytest

pytest.importorskip("pyspark")

from google.protobuf import message_factory  # noqa: E402

from pulsar_codec import wire  # noqa: E402
from pulsar_codec.formats.protobuf import parse  # noqa: E402
from pulsar_codec.integrations import spark as pcs  # noqa: E402

pytest_plugins = ["spark_fixtures"]

PROTO = """
syntax = "proto3";
package t;
import "google/protobuf/duration.proto";
message Counters {
  uint32 small = 1;
  uint64 big = 2;
  fixed64 fixed = 3;
  google.protobuf.Duration took = 4;
}
"""


def test_unsigned_and_duration_columns(spark):
    model = parse(PROTO)
    cls = message_factory.GetMessageClass(model.descriptor("t.Counters"))
    m = cls(small=2**32 - 1, big=2**64 - 1, fixed=5)
    m.took.seconds = 90
    m.took.nanos = 5_000
    payload = wire.CONFLUENT_PROTOBUF.pack(1, m.SerializeToString(deterministic=True), message_indexes=[0])
    df = spark.createDataFrame([(payload,)], "value binary")
    out = pcs.decode(df, registry={1: PROTO}, format="PROTOBUF")
    types = dict((f.name, f.dataType.simpleString()) for f in out.schema["decoded"].dataType.fields)
    assert types == {
        "small": "bigint",
        "big": "decimal(20,0)",
        "fixed": "decimal(20,0)",
        "took": "interval day to second",
    }
    first = out.collect()[0]
    assert first["decode_error"] is None, first["decode_error"]
    row = first["decoded"]
    assert row["small"] == 2**32 - 1
    assert row["big"] == decimal.Decimal(2**64 - 1)
    assert row["took"] == datetime.timedelta(seconds=90, microseconds=5)


ORDER = """
syntax = "proto3";
package shop;
message Customer {
  string name = 1;
}
message Order {
  int64 id = 1;
  repeated string tags = 2;
  Customer customer = 3;
}
"""


def test_encode_then_decode_round_trip(spark, tmp_path):
    from pulsar_codec.registry import LocalRegistry

    reg = LocalRegistry(str(tmp_path / "schemas.db"))
    df = spark.createDataFrame(
        [(1, ["a"], ("x",)), (2, [], ("y",))], "id long, tags array<string>, customer struct<name: string>"
    )
    framed = pcs.encode(
        df.selectExpr("struct(*) AS order"),
        "order",
        registry=reg,
        subject="orders-value",
        format="PROTOBUF",
        schema=ORDER,
        message="shop.Order",
    )
    payloads = [r["value"] for r in framed.collect()]
    assert all(p[5:7] == b"\x02\x02" for p in payloads)  # the message-index path [1]: Order is the second
    back = pcs.decode(framed, registry=reg, message="shop.Order")
    rows = sorted((r["decoded"]["id"], r["decoded"]["tags"], r["decoded"]["customer"]["name"]) for r in back.collect())
    assert rows == [(1, ["a"], "x"), (2, [], "y")]
    reg.close()


def test_spark_s_widened_unsigned_columns_encode_back(spark, tmp_path):
    """Spark holds a uint64 / fixed64 as decimal(20, 0) and a Duration as a day-time interval: a
    decoded DataFrame written back gives the original bytes."""
    from pulsar_codec.registry import LocalRegistry

    model = parse(PROTO)
    cls = message_factory.GetMessageClass(model.descriptor("t.Counters"))
    m = cls(small=2**32 - 1, big=2**64 - 1, fixed=5)
    m.took.seconds = 90
    m.took.nanos = 5_000
    original = m.SerializeToString(deterministic=True)
    payload = wire.CONFLUENT_PROTOBUF.pack(1, original, message_indexes=[0])
    decoded = pcs.decode(spark.createDataFrame([(payload,)], "value binary"), registry={1: PROTO}, format="PROTOBUF")
    reg = LocalRegistry(str(tmp_path / "schemas.db"))
    framed = pcs.encode(decoded, "decoded", registry=reg, subject="c-value", format="PROTOBUF", schema=PROTO)
    written = framed.collect()[0]["value"]
    assert wire.CONFLUENT_PROTOBUF.unpack_indexes(written)[2] == original
    reg.close()


def test_a_topic_of_every_field_kind_read_with_spark_writes_back_as_it_was(spark, tmp_path):
    """spark.decode then spark.encode(use_latest=True): maps of every key type (Spark makes the
    keys strings), uint64 (decimal), enums, oneofs with their case column, wrappers, Timestamp and
    Duration, repeated messages: the original bytes."""
    from pulsar_codec.registry import LocalRegistry
    from test_protobuf_columnar import PROTO3, _fill

    model = parse(PROTO3, message="h.All")
    cls = message_factory.GetMessageClass(model.descriptor())
    values = [
        {
            "i32": -5, "u64": 2**64 - 1, "f64": 2**63, "sf64": -3, "fl": 1.5, "db": -0.0, "b": True, "s": "é",
            "by": b"\x00", "color": 2, "inner": {"name": "n", "z": -2, "blobs": [b"a"], "c": 1},
            "r_i32": [1, -1], "r_s": ["x"], "r_inner": [{"name": "q"}], "m_s": [("b", 1), ("a", 2)],
            "m_i": [(3, {"name": "v"}), (-4, {})], "m_b": [(True, 1.0), (False, 0.0)], "m_u64": [(2**64 - 1, True)],
            "o_i32": 0, "p_s": "pick", "ts": {"seconds": 5, "nanos": 7000}, "du": {"seconds": -5, "nanos": -7000},
            "w_i64": {"value": 0}, "w_s": {"value": "w"}, "r_ts": [{"seconds": 1, "nanos": 0}], "far": 9,
        },
        {"p_inner": {"name": "x"}, "m_z": [(-1, b"z")], "m_u": [(7, 1)]},
        {},
    ]  # fmt: skip
    bodies = []
    for value in values:
        msg = cls()
        _fill(msg, value)
        bodies.append(msg.SerializeToString(deterministic=True))
    reg = LocalRegistry(str(tmp_path / "schemas.db"))
    sid = reg.register("h-value", PROTO3, schema_type="PROTOBUF")
    framed = [(i, wire.CONFLUENT_PROTOBUF.pack(sid, b, message_indexes=[0])) for i, b in enumerate(bodies)]
    decoded = pcs.decode(spark.createDataFrame(framed, "i int, value binary"), registry=reg, keep_columns=["i"])
    written = pcs.encode(decoded, "decoded", registry=reg, subject="h-value", use_latest=True)
    back = {r["i"]: wire.CONFLUENT_PROTOBUF.unpack_indexes(r["value"]) for r in written.collect()}
    assert [bytes(back[i][2]) for i in range(len(bodies))] == bodies
    assert {back[i][0] for i in back} == {sid}
    reg.close()
