"""format("pulsar") writing KeyValue topics (INLINE and SEPARATED), on a real pulsar-lite broker.

Round trips go through the sink and back through the source with the same ``keyvalue`` option;
the bytes on the topic are checked with pulsar_codec's own reader (``read_batches`` +
``keyvalue_columns``) against fastavro (the oracle) behind a hand-made Confluent prefix, laid out
as Pulsar's Java client lays KeyValue messages out.
"""

from __future__ import annotations

import base64
import io
import json
import struct
import uuid

import fastavro
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")

import pyarrow as pa
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

from pulsar_codec import spark as pcs
from pulsar_codec.errors import EncodeError
from pulsar_codec.integrations.spark.pulsar_sink import SinkPlan, partition_keys
from pulsar_codec.pulsar.reader import keyvalue_columns, read_batches
from pulsar_codec.registry import LocalRegistry

pytest_plugins = ["spark_fixtures", "pulsar_fixtures"]

KEY_TYPE = "struct<k:string,shard:int>"
VALUE_TYPE = "struct<id:bigint,name:string>"
ROWS = [
    ({"k": "a", "shard": 1}, {"id": 1, "name": "one"}),
    ({"k": "b", "shard": None}, {"id": 2, "name": None}),
    ({"k": "c", "shard": 3}, None),  # a null value
    (None, {"id": 4, "name": "four"}),  # a null key
]


def columns(**types) -> StructType:
    """A Spark schema built by hand (``StructType.fromDDL`` needs a running session)."""
    return StructType([StructField(name, t, True) for name, t in types.items()])


KEY_SPARK = columns(k=StringType(), shard=IntegerType())
VALUE_SPARK = columns(id=LongType(), name=StringType())
SPARK_SCHEMA = columns(key=KEY_SPARK, value=VALUE_SPARK)


def local_name(topic: str) -> str:
    return topic.rsplit("/", 1)[-1]


def framed(registry: LocalRegistry, subject: str, record: dict | None) -> bytes | None:
    """What a Java producer with a Confluent-style external schema writes: ``00 || id || Avro``."""
    if record is None:
        return None
    latest = registry.get_latest(subject)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(latest.schema)), record)
    return b"\x00" + struct.pack(">I", latest.id) + out.getvalue()


def inline(key: bytes | None, value: bytes | None) -> bytes:
    """Java's ``KeyValue.encode``: ``i32 len || key || i32 len || value``, -1 for a null part."""
    parts = []
    for part in (key, value):
        parts.append(struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part)
    return b"".join(parts)


def topic_messages(url: str, topic: str, key_encoding: str) -> pa.RecordBatch:
    batches = list(read_batches(url, topic, key_encoding=key_encoding, timeout_ms=10_000))
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def options(broker, topic, registry_path, **more):
    return {"service_url": broker.url, "topic": topic, "registry": str(registry_path), **more}


# -- options, refused on the driver (no Spark session, no broker) ----------------------------------


def test_keyvalue_option_errors(tmp_path):
    base = {"service_url": "pulsar://127.0.0.1:1", "topic": "t", "registry": str(tmp_path / "schemas.db")}
    binary = columns(key=BinaryType(), value=BinaryType())
    with pytest.raises(ValueError, match="unknown KeyValue encoding type 'BOTH'"):
        SinkPlan.from_options({**base, "keyvalue": "BOTH"}, binary, False)
    with pytest.raises(ValueError, match="key_column and keyvalue exclude each other"):
        SinkPlan.from_options({**base, "keyvalue": "INLINE", "key_column": "key"}, binary, False)
    with pytest.raises(ValueError, match="no 'key' column"):
        SinkPlan.from_options({**base, "keyvalue": "INLINE"}, columns(k=BinaryType(), value=BinaryType()), False)
    with pytest.raises(ValueError, match="no 'key' or 'value' column"):
        SinkPlan.from_options({**base, "keyvalue": "SEPARATED"}, columns(id=LongType()), False)
    with pytest.raises(ValueError, match="key_encoding must be one of"):
        SinkPlan.from_options({**base, "keyvalue": "SEPARATED", "key_encoding": "hex"}, binary, False)
    with pytest.raises(ValueError, match="applies to SEPARATED"):
        SinkPlan.from_options({**base, "keyvalue": "INLINE", "key_encoding": "raw"}, binary, False)
    with pytest.raises(ValueError, match="'key_subject' applies to KeyValue topics"):
        SinkPlan.from_options({**base, "key_subject": "t-key"}, binary, False)
    no_registry = {k: v for k, v in base.items() if k != "registry"}
    with pytest.raises(ValueError, match='give the option "registry"'):
        SinkPlan.from_options({**no_registry, "keyvalue": "INLINE"}, SPARK_SCHEMA, False)
    assert not (tmp_path / "schemas.db").exists()  # nothing was registered by a refused write

    # binary parts are sent as they are: no registry needed, lower case accepted
    plan = SinkPlan.from_options({**no_registry, "keyvalue": "separated"}, binary, False)
    assert (plan.keyvalue, plan.key_encoding, plan.key_column) == ("SEPARATED", "base64", None)
    assert plan.key is not None and plan.key.encoder is None and plan.value.encoder is None


def test_key_registered_like_the_value(tmp_path):
    """The key is settled through the value's path: derived or ``key_schema``, ``use_latest``."""
    registry_path = tmp_path / "schemas.db"
    key_schema = {"type": "record", "name": "OrderKey", "namespace": "t", "fields": [{"name": "k", "type": "string"}]}
    base = {"service_url": "pulsar://127.0.0.1:1", "topic": "tenant/ns/orders", "registry": str(registry_path)}
    schema = columns(key=columns(k=StringType()), value=VALUE_SPARK)
    plan = SinkPlan.from_options({**base, "keyvalue": "INLINE", "key_schema": json.dumps(key_schema)}, schema, False)
    with LocalRegistry(registry_path) as reg:
        key, value = reg.get_latest("orders-key"), reg.get_latest("orders-value")
        assert json.loads(key.schema)["name"] == "t.OrderKey"  # key_schema wins over the derived one
        assert [f["name"] for f in json.loads(value.schema)["fields"]] == ["id", "name"]
        custom = reg.register("custom-key", json.dumps({"type": "string"}))
    assert plan.key is not None and plan.key.cache_key[1] == key.id and plan.value.cache_key[1] == value.id

    # use_latest applies to both parts; key_subject names the key's subject
    latest = SinkPlan.from_options(
        {**base, "keyvalue": "SEPARATED", "use_latest": "true", "key_subject": "custom-key"}, schema, False
    )
    assert latest.key is not None and latest.key.cache_key[1] == custom and latest.value.cache_key[1] == value.id

    # use_latest and a value with a column the version has no field for, or without one it has:
    # refused on the driver when the write is planned, not in every task
    latest_options = {**base, "keyvalue": "SEPARATED", "use_latest": "true", "key_subject": "custom-key"}
    extra = columns(key=columns(k=StringType()), value=columns(id=LongType(), name=StringType(), note=StringType()))
    with pytest.raises(EncodeError, match=r"column\(s\) \['note'\]"):
        SinkPlan.from_options(latest_options, extra, False)
    short = columns(key=columns(k=StringType()), value=columns(id=LongType()))
    with pytest.raises(EncodeError, match=r"no column for field\(s\) \['name'\]"):
        SinkPlan.from_options(latest_options, short, False)
    # and a column of a type the field can never hold (text for a long) is one error there too
    mistyped = columns(key=columns(k=StringType()), value=columns(id=StringType(), name=StringType()))
    with pytest.raises(EncodeError, match=r"\.id: a column of Arrow type string cannot be written as Avro long"):
        SinkPlan.from_options(latest_options, mistyped, False)


def test_partition_keys():
    keys = pa.array([b"\x00\x00\x00\x00\x01\x02ab", None, b"\xff\xfe"], pa.binary())
    assert partition_keys(keys, "base64") == ["AAAAAAECYWI=", None, "//4="]
    assert partition_keys(keys.slice(0, 2), "raw") == ["\x00\x00\x00\x00\x01\x02ab", None]
    with pytest.raises(EncodeError, match="key 2 is not UTF-8 text") as caught:
        partition_keys(keys, "raw")
    assert caught.value.index == 2


# -- through a real broker --------------------------------------------------------------------------


def test_separated_raw_keys_without_spark(pulsar_broker, tmp_path):
    """The executors' part on its own: a SEPARATED topic with ``key_encoding=raw`` (the C++ layout)."""
    topic = f"persistent://public/default/kv-raw-{uuid.uuid4().hex[:8]}"
    registry_path = tmp_path / "schemas.db"
    schema = columns(key=StringType(), value=BinaryType())
    plan = SinkPlan.from_options(
        options(pulsar_broker, topic, registry_path, keyvalue="SEPARATED", key_encoding="raw"), schema, False
    )
    batch = pa.RecordBatch.from_arrays(
        [pa.array(["k1", None, "k3"]), pa.array([b"v1", b"v2", None], pa.binary())], ["key", "value"]
    )
    done = plan.produce(iter([batch]))
    assert (done.messages, done.bytes) == (3, 4)
    with LocalRegistry(registry_path) as reg:
        keys = [framed(reg, f"{local_name(topic)}-key", k) for k in ("k1", None, "k3")]  # Avro "string"
    raw = topic_messages(pulsar_broker.url, topic, "raw")
    assert raw.column("key").to_pylist() == [None if k is None else k.decode() for k in keys]
    assert [b.to_pylist() for b in keyvalue_columns(raw, "SEPARATED")] == [keys, [b"v1", b"v2", None]]


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ["INLINE", "SEPARATED"])
def test_keyvalue_round_trip(spark, pulsar_broker, tmp_path, encoding):
    pcs.register(spark)
    topic = f"persistent://public/default/kv-sink-{encoding.lower()}-{uuid.uuid4().hex[:8]}"
    registry_path = tmp_path / "schemas.db"
    df = spark.createDataFrame(ROWS, SPARK_SCHEMA)
    df.write.format("pulsar").mode("append").options(
        **options(pulsar_broker, topic, registry_path, keyvalue=encoding)
    ).save()

    back = (
        spark.read.format("pulsar")
        .options(service_url=pulsar_broker.url, topics=topic, registry=str(registry_path), keyvalue=encoding)
        .load()
    )
    assert back.schema["key"].dataType.simpleString() == KEY_TYPE
    assert back.schema["value"].dataType.simpleString() == VALUE_TYPE
    rows = back.collect()
    assert all(r["decode_error"] is None for r in rows)

    def pairs(found):
        return sorted(
            ((None if k is None else k.asDict(), None if v is None else v.asDict()) for k, v in found), key=repr
        )

    assert pairs((r["key"], r["value"]) for r in rows) == sorted(ROWS, key=repr)

    # the bytes on the topic: what a Java KeyValue producer with framed external schemas writes
    with LocalRegistry(registry_path) as reg:
        expected = sorted(
            (
                (framed(reg, f"{local_name(topic)}-key", k), framed(reg, f"{local_name(topic)}-value", v))
                for k, v in ROWS
            ),
            key=repr,
        )
        value_id = reg.get_latest(f"{local_name(topic)}-value").id
    assert {r["schema_id"] for r in rows if r["value"] is not None} == {value_id}
    raw = topic_messages(pulsar_broker.url, topic, "base64")
    keys, values = keyvalue_columns(raw, encoding)
    assert sorted(zip(keys.to_pylist(), values.to_pylist()), key=repr) == expected
    if encoding == "INLINE":
        assert raw.column("key").null_count == raw.num_rows  # no partition key
        assert sorted(raw.column("payload").to_pylist(), key=repr) == sorted(
            (inline(k, v) for k, v in expected), key=repr
        )
    else:  # the key as Base64 text in the partition key, the value alone as the payload
        sent = sorted(zip(raw.column("key").to_pylist(), raw.column("payload").to_pylist()), key=repr)
        assert sent == sorted(((k and base64.b64encode(k).decode(), v) for k, v in expected), key=repr)

    # decode=false gives the same framed parts through the source's split
    undecoded = (
        spark.read.format("pulsar")
        .options(service_url=pulsar_broker.url, topics=topic, keyvalue=encoding, decode="false")
        .load()
        .collect()
    )
    assert sorted(((r["key"], r["value"]) for r in undecoded), key=repr) == expected


def test_a_separated_message_whose_key_is_not_base64_keeps_its_value():
    """Only the key failed: it is null beside the error (holding the partition key), and the value,
    which travels apart from it, is still read."""
    from pulsar_codec import wire
    from pulsar_codec.integrations.spark.pulsar_rows import RowMaker

    payloads = pa.array([wire.CONFLUENT.pack(1, b"\x02"), wire.CONFLUENT.pack(1, b"\x04")], pa.binary())
    keys = pa.array([base64.b64encode(b"k").decode(), "not base64!"], pa.string())
    rows = RowMaker(wire.CONFLUENT, None, None, "SEPARATED", "base64", "python")
    out = rows.columns(pa.record_batch({"payload": payloads, "key": keys}))
    assert out["key"].to_pylist() == [b"k", None]
    assert out["value"].to_pylist() == payloads.to_pylist()
    errors = out["decode_error"].to_pylist()
    assert errors[0] is None and errors[1]["payload"] == b"not base64!"
