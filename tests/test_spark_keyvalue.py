"""KeyValue in Spark (probe30): ``pcs.split_keyvalue`` refuses bad arguments on the driver, and
``format("pulsar")`` writes a KeyValue key of a Pulsar primitive type (``key_format=STRING``,
``INT64``, ...) that its source reads with the same option.

The primitive keys on the topic are checked against Pulsar's own layouts written here by hand
(STRING: the UTF-8 bytes; INT64: 8 bytes big-endian; INLINE: ``i32 len || key || i32 len || value``).
"""

from __future__ import annotations

import base64
import struct
import uuid

import pytest

pytest.importorskip("pyspark")

import pyarrow as pa
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

from pulsar_codec import spark as pcs
from pulsar_codec.errors import EncodeError
from pulsar_codec.integrations.spark.pulsar_sink import SinkPlan

pytest_plugins = ["spark_fixtures", "pulsar_fixtures"]


def columns(**types) -> StructType:
    return StructType([StructField(name, t, True) for name, t in types.items()])


def inline(key: bytes | None, value: bytes | None) -> bytes:
    return b"".join(b"\xff\xff\xff\xff" if p is None else struct.pack(">i", len(p)) + p for p in (key, value))


# -- pcs.split_keyvalue ------------------------------------------------------------------------------


def test_split_keyvalue_refuses_bad_arguments_on_the_driver(spark):
    """A bad convention or payload column used to fail in the tasks, when an action ran."""
    df = spark.createDataFrame([(1, inline(b"k", b"v"))], "i int, value binary")
    with pytest.raises(ValueError, match="convention must be 'java' or 'cpp', got 'c'"):
        pcs.split_keyvalue(df, convention="c")
    with pytest.raises(ValueError, match="no column 'payload' of INLINE KeyValue payloads"):
        pcs.split_keyvalue(df, "payload")
    with pytest.raises(ValueError, match="column 'i' holds int"):
        pcs.split_keyvalue(df, "i")
    with pytest.raises(ValueError, match="convention must be"):
        pcs.decode_keyvalue(df, registry={}, convention="C++")
    (row,) = pcs.split_keyvalue(df, convention="cpp").collect()
    assert (row["key"], row["value"], row["keyvalue_error"]) == (b"k", b"v", None)


# -- format("pulsar"): a key of a Pulsar primitive type ------------------------------------------------

BASE = {"service_url": "pulsar://127.0.0.1:1", "topic": "t"}


def test_primitive_key_plan_needs_no_registry_and_checks_the_column():
    binary_value = columns(key=StringType(), value=BinaryType())
    plan = SinkPlan.from_options({**BASE, "keyvalue": "INLINE", "key_format": "string"}, binary_value, False)
    assert plan.key is not None and plan.key.primitive == "STRING"
    batch = pa.record_batch({"key": pa.array(["k", "", None]), "value": pa.array([b"v1", None, b"v3"])})
    payloads, keys, failed = plan.messages(batch, None, None)
    assert payloads == [inline(b"k", b"v1"), inline(b"", None), inline(None, b"v3")]
    assert keys == [None, None, None] and failed == {}

    plan = SinkPlan.from_options(
        {**BASE, "keyvalue": "SEPARATED", "key_format": "INT64"}, columns(key=LongType(), value=BinaryType()), False
    )
    batch = pa.record_batch({"key": pa.array([7, -1, None], pa.int64()), "value": pa.array([b"a", b"b", None])})
    payloads, keys, failed = plan.messages(batch, None, None)
    assert payloads == [b"a", b"b", None]
    assert keys == [base64.b64encode(struct.pack(">q", 7)).decode(), base64.b64encode(b"\xff" * 8).decode(), None]

    with pytest.raises(EncodeError, match="INT64 cannot be encoded from Arrow type string"):
        SinkPlan.from_options({**BASE, "keyvalue": "INLINE", "key_format": "INT64"}, binary_value, False)
    with pytest.raises(ValueError, match="not a struct"):
        SinkPlan.from_options(
            {**BASE, "keyvalue": "INLINE", "key_format": "STRING"},
            columns(key=columns(k=StringType()), value=BinaryType()),
            False,
        )
    with pytest.raises(ValueError, match="'key_subject' does not apply to a key_format=STRING key"):
        SinkPlan.from_options(
            {**BASE, "keyvalue": "INLINE", "key_format": "STRING", "key_subject": "t-key"}, binary_value, False
        )


def test_primitive_key_out_of_range():
    """A key the type cannot hold fails the batch, or with a dead-letter topic is reported for its row."""
    schema = columns(key=IntegerType(), value=BinaryType())
    batch = pa.record_batch({"key": pa.array([1, 300, None], pa.int32()), "value": pa.array([b"a", b"b", b"c"])})
    plan = SinkPlan.from_options({**BASE, "keyvalue": "INLINE", "key_format": "INT8"}, schema, False)
    with pytest.raises(EncodeError, match="300 of row 1 is out of range for INT8"):
        plan.messages(batch, None, None)
    dead = SinkPlan.from_options(
        {**BASE, "keyvalue": "INLINE", "key_format": "INT8", "dead_letter_topic": "dead"}, schema, False
    )
    payloads, _, failed = dead.messages(batch, None, None)
    assert payloads[0] == inline(b"\x01", b"a") and payloads[2] == inline(None, b"c")
    assert failed == {1: ("key", "300 is out of range for INT8 (-128 to 127)")}


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ["INLINE", "SEPARATED"])
def test_primitive_key_round_trip(spark, pulsar_broker, tmp_path, encoding):
    """key_format=STRING / INT64 on the sink: the source reads the keys back with the same option.
    (It was refused deep inside the sink: no payload format for schema type 'STRING'.)"""
    from pulsar_codec.pulsar.reader import keyvalue_columns, read_batches

    pcs.register(spark)
    registry = str(tmp_path / "schemas.db")
    for key_format, key_type, keys, packed in (
        ("STRING", "string", ["k1", "ü", None], [b"k1", "ü".encode(), None]),
        ("INT64", "bigint", [5, -2, None], [struct.pack(">q", 5), struct.pack(">q", -2), None]),
    ):
        topic = f"persistent://public/default/kv-prim-{uuid.uuid4().hex[:8]}"
        rows = [(k, {"id": i}) for i, k in enumerate(keys)]
        df = spark.createDataFrame(rows, f"key {key_type}, value struct<id:int>")
        options = {"service_url": pulsar_broker.url, "registry": registry, "keyvalue": encoding}
        df.write.format("pulsar").mode("append").options(topic=topic, key_format=key_format, **options).save()

        back = spark.read.format("pulsar").options(topics=topic, key_format=key_format, **options).load()
        assert back.schema["key"].dataType.simpleString() == key_type
        found = sorted((r["value"]["id"], r["key"], r["decode_error"]) for r in back.collect())
        assert found == [(i, k, None) for i, k in enumerate(keys)]

        batches = list(read_batches(pulsar_broker.url, topic, key_encoding="base64", timeout_ms=10_000))
        raw = pa.Table.from_batches(batches).combine_chunks().to_batches()[0]
        got_keys, _ = keyvalue_columns(raw, encoding)
        assert sorted(got_keys.to_pylist(), key=repr) == sorted(packed, key=repr)  # no registry prefix


# -- format("pulsar"): INLINE lengths of -1 as the C++ client writes them ---------------------------------


def test_inline_convention_option_is_checked():
    from pulsar_codec.integrations.spark.pulsar_source import SourcePlan

    base = {**BASE, "decode": "false"}
    plan = SourcePlan.from_options({**base, "keyvalue": "inline", "inline_convention": "CPP"})
    assert plan.inline_convention == "cpp"
    assert SourcePlan.from_options({**base, "keyvalue": "INLINE"}).inline_convention == "java"
    with pytest.raises(ValueError, match="'inline_convention' must be 'java' or 'cpp', got 'c'"):
        SourcePlan.from_options({**base, "keyvalue": "INLINE", "inline_convention": "c"})
    with pytest.raises(ValueError, match="applies to keyvalue=INLINE topics only"):
        SourcePlan.from_options({**base, "keyvalue": "SEPARATED", "inline_convention": "cpp"})
    with pytest.raises(ValueError, match="applies to keyvalue=INLINE topics only"):
        SourcePlan.from_options({**base, "inline_convention": "java"})


@pytest.mark.slow
def test_inline_convention_cpp_reads_minus_one_as_empty(spark, pulsar_broker):
    """The C++ client writes -1 for an empty key or value as for a null one: with
    inline_convention=cpp both read as empty (Java's reading, the default, gives null)."""
    import pulsar

    pcs.register(spark)
    topic = f"persistent://public/default/kv-cpp-{uuid.uuid4().hex[:8]}"
    client = pulsar.Client(pulsar_broker.url)
    try:
        producer = client.create_producer(topic)
        for payload in (inline(b"k", b"v"), inline(None, b"v2"), inline(b"k3", None)):
            producer.send(payload)
        producer.close()
    finally:
        client.close()
    options = {"service_url": pulsar_broker.url, "topics": topic, "keyvalue": "INLINE", "decode": "false"}

    def parts(**more):
        df = spark.read.format("pulsar").options(**options, **more).load()
        return sorted(((r["key"], r["value"], r["decode_error"]) for r in df.collect()), key=repr)

    assert parts() == sorted([(b"k", b"v", None), (None, b"v2", None), (b"k3", None, None)], key=repr)
    cpp = [(b"k", b"v", None), (b"", b"v2", None), (b"k3", b"", None)]
    assert parts(inline_convention="cpp") == sorted(cpp, key=repr)
