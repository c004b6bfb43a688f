"""format("pulsar") on a real pulsar-lite broker, pulsar-client and a local Spark session.

Payloads are written by fastavro (the oracle) behind a hand-made Confluent prefix; the broker's own
message ids (from the producer) say which message is which.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import struct
import threading
import time
import uuid
from pathlib import Path

import fastavro
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")

import _pulsar
import pulsar
from pyspark.errors import StreamingQueryException

from pulsar_codec import spark as pcs
from pulsar_codec.errors import ErrorCode, SchemaError
from pulsar_codec.integrations.spark.pulsar_offsets import read_range as read_offsets
from pulsar_codec.integrations.spark.pulsar_options import SOURCE_OPTIONS, OffsetSpec, registry_config
from pulsar_codec.integrations.spark.pulsar_sink import PulsarCommitMessage, SinkPlan, _report
from pulsar_codec.integrations.spark.pulsar_source import (
    PulsarBatchReader,
    PulsarDataSource,
    PulsarStreamReader,
    SourcePlan,
)
from pulsar_codec.registry import LocalRegistry

pytest_plugins = ["spark_fixtures", "pulsar_fixtures"]
pytestmark = pytest.mark.slow

V1 = {
    "type": "record",
    "name": "User",
    "namespace": "t",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
}
V2 = {
    "type": "record",
    "name": "User",
    "namespace": "t",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "email", "type": ["null", "string"], "default": None},
    ],
}


def framed(schema_id: int, schema: dict, record: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return b"\x00" + struct.pack(">I", schema_id) + out.getvalue()


def local_name(topic: str) -> str:
    return topic.rsplit("/", 1)[-1]


def id_parts(message_id) -> tuple[int, int, int]:
    return message_id.ledger_id(), message_id.entry_id(), message_id.batch_index()


def offset_of(message_id) -> str:
    return base64.b64encode(message_id.serialize()).decode()


class Producer:
    """Sends and remembers each message's id as the broker acknowledged it."""

    def __init__(self, client, topic, batching):
        self.producer = client.create_producer(topic, batching_enabled=batching, batching_max_publish_delay_ms=20)
        self.ids: list = []
        self._lock = threading.Lock()

    def send_all(self, messages):
        """``(payload, send kwargs)`` pairs, sent asynchronously and flushed; ids in sending order."""
        slots: list = [None] * len(messages)

        def callback_for(i):
            def done(result, message_id):
                assert result == pulsar.Result.Ok
                slots[i] = message_id

            return done

        for i, (payload, kwargs) in enumerate(messages):
            self.producer.send_async(payload, callback_for(i), **kwargs)
        self.producer.flush()
        deadline = time.monotonic() + 10
        while any(s is None for s in slots) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.ids += slots
        return slots

    def close(self):
        self.producer.close()


@pytest.fixture(scope="module")
def registered(spark):
    pcs.register(spark)


def reader(spark, broker, registry_path=None, **options):
    r = spark.read.format("pulsar").option("service_url", broker.url)
    if registry_path is not None:
        r = r.option("registry", str(registry_path))
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def stream(spark, broker, registry_path, **options):
    r = spark.readStream.format("pulsar").option("service_url", broker.url).option("registry", str(registry_path))
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


# -- batch reads ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def users_topic(tmp_path_factory, pulsar_broker):
    """A topic of batched v1 messages, then single messages: a bad prefix, an unknown id, a tombstone,
    then v2 messages; its registry; what was sent."""
    workdir = tmp_path_factory.mktemp("users")
    topic = f"persistent://public/default/users-{uuid.uuid4().hex[:8]}"
    reg = LocalRegistry(workdir / "schemas.db")
    v1 = reg.register(f"{local_name(topic)}-value", json.dumps(V1))
    client = pulsar.Client(pulsar_broker.url, logger=pulsar.ConsoleLogger(_pulsar.LoggerLevel.Error))
    batched = Producer(client, topic, batching=True)
    single = Producer(client, topic, batching=False)
    sent = [
        (framed(v1, V1, {"id": i, "name": f"user{i}"}), {"partition_key": f"k{i}", "properties": {"n": str(i)}})
        for i in range(6)
    ]
    batched.send_all(sent)
    odd = [
        (b"\x07not framed", {"event_timestamp": 1_700_000_000_123}),
        (b"\x00\x00\x00\x03\xe7body", {}),  # schema id 999: not in the registry
        (None, {"partition_key": "gone"}),  # a tombstone
    ]
    single.send_all(odd)
    v2 = reg.register(f"{local_name(topic)}-value", json.dumps(V2))
    late = [(framed(v2, V2, {"id": 100 + i, "name": f"new{i}", "email": f"u{i}@x"}), {}) for i in range(3)]
    single.send_all(late)
    ids = batched.ids[:6] + single.ids
    batched.close()
    single.close()
    client.close()
    reg.close()
    yield topic, workdir / "schemas.db", sent + odd + late, ids, (v1, v2)


def test_batch_read_every_column(spark, registered, pulsar_broker, users_topic):
    topic, registry_path, sent, ids, (v1, v2) = users_topic
    before = time.time()
    df = reader(spark, pulsar_broker, registry_path, topics=local_name(topic))
    assert df.columns == [
        "key",
        "value",
        "decode_error",
        "topic",
        "partition",
        "message_id",
        "publish_time",
        "event_time",
        "properties",
        "schema_id",
    ]
    # the reader schema is the subject's newest version (v2), so v1 rows read email as its default
    assert df.schema["value"].dataType.simpleString() == "struct<id:bigint,name:string,email:string>"
    rows = df.collect()
    assert len(rows) == len(sent) == 12
    got_ids = [id_parts(_pulsar.MessageId.deserialize(bytes(r["message_id"]))) for r in rows]
    assert got_ids == [id_parts(i) for i in ids]  # every message once, in the partition's order
    values = [None if r["value"] is None else r["value"].asDict() for r in rows]
    assert values[:6] == [{"id": i, "name": f"user{i}", "email": None} for i in range(6)]
    assert values[6:9] == [None, None, None]
    assert values[9:] == [{"id": 100 + i, "name": f"new{i}", "email": f"u{i}@x"} for i in range(3)]
    errors = [r["decode_error"] for r in rows]
    assert errors[6]["code"] == ErrorCode.WIRE_BAD_MAGIC and errors[6]["offset"] == 0
    assert errors[7]["code"] == ErrorCode.SCHEMA_NOT_FOUND and "999" in errors[7]["message"]
    assert [i for i, e in enumerate(errors) if e is not None] == [6, 7]  # a tombstone is no error
    assert [errors[i]["payload"] for i in (6, 7)] == [sent[i][0] for i in (6, 7)]  # the bytes that failed
    assert [r["key"] for r in rows] == [f"k{i}" for i in range(6)] + [None, None, "gone", None, None, None]
    assert [r["properties"] for r in rows[:6]] == [{"n": str(i)} for i in range(6)]
    assert rows[6]["event_time"].timestamp() == 1_700_000_000.123
    assert all(r["event_time"] is None for r in rows[:6])
    assert all(before - 600 < r["publish_time"].timestamp() <= before for r in rows)
    assert {(r["topic"], r["partition"]) for r in rows} == {(topic, -1)}
    assert [r["schema_id"] for r in rows] == [v1] * 6 + [None, 999, None] + [v2] * 3

    # decode=false: the payloads as sent, no error column, no registry needed
    raw = reader(spark, pulsar_broker, topics=topic, decode="false")
    assert "decode_error" not in raw.columns
    assert [r["value"] for r in raw.collect()] == [payload for payload, _ in sent]


def test_batch_read_between_offsets(spark, registered, pulsar_broker, users_topic):
    topic, registry_path, sent, ids, _ = users_topic

    def read_range(**offsets):
        df = reader(spark, pulsar_broker, registry_path, topics=topic, decode="false", **offsets)
        return [id_parts(_pulsar.MessageId.deserialize(bytes(r["message_id"]))) for r in df.collect()]

    expected = [id_parts(i) for i in ids]
    # (start, end]: after message 2, which sits inside a producer batch, through message 7
    start, end = json.dumps({topic: offset_of(ids[2])}), json.dumps({local_name(topic): offset_of(ids[7])})
    assert read_range(starting_offsets=start, ending_offsets=end) == expected[3:8]
    assert read_range(ending_offsets=json.dumps({topic: offset_of(ids[0])})) == expected[:1]
    assert read_range(starting_offsets=json.dumps({topic: offset_of(ids[9])})) == expected[10:]
    assert read_range(starting_offsets="latest") == []
    assert read_range(starting_offsets=json.dumps({topic: "latest"}), ending_offsets="latest") == []

    # an end past the last message (an id of later entries) ends at the last message: the planned
    # range is cut there, so no reader waits for entries that do not exist
    last = ids[-1]
    beyond = _pulsar.MessageId(-1, last.ledger_id(), last.entry_id() + 5, -1)
    assert read_range(ending_offsets=json.dumps({topic: offset_of(beyond)})) == expected
    options = {"service_url": pulsar_broker.url, "topics": topic, "decode": "false"}
    plan = SourcePlan.from_options({**options, "ending_offsets": json.dumps({topic: offset_of(beyond)})})
    (planned,) = PulsarBatchReader(plan, None).partitions()
    assert id_parts(_pulsar.MessageId.deserialize(base64.b64decode(planned.end)))[:2] == id_parts(last)[:2]

    # planned on the driver, before any task: an end given before its start is refused (it would
    # read nothing), as is a partition the broker does not have (it would be ignored)
    backwards = {"starting_offsets": json.dumps({topic: offset_of(ids[7])})}
    plan = SourcePlan.from_options({**options, **backwards, "ending_offsets": json.dumps({topic: offset_of(ids[2])})})
    with pytest.raises(ValueError, match=f"ending_offsets of {topic} is before its starting_offsets"):
        PulsarBatchReader(plan, None).partitions()
    plan = SourcePlan.from_options({**options, **backwards, "ending_offsets": json.dumps({topic: offset_of(ids[7])})})
    assert PulsarBatchReader(plan, None).partitions() == []  # an empty range, not a backwards one
    plan = SourcePlan.from_options({**options, "starting_offsets": json.dumps({f"{topic}-partition-0": "latest"})})
    with pytest.raises(ValueError, match=f"names {topic}-partition-0, which the broker does not have: it is not"):
        PulsarBatchReader(plan, None).partitions()


def test_batch_read_of_a_topic_without_messages_says_so(pulsar_broker, caplog):
    # a misspelt name reads as an empty topic (the broker creates it): the read says which is empty
    typo = f"persistent://public/default/ordres-{uuid.uuid4().hex[:8]}"
    plan = SourcePlan.from_options({"service_url": pulsar_broker.url, "topics": typo, "decode": "false"})
    with caplog.at_level(logging.WARNING, logger="pulsar_codec"):
        assert PulsarBatchReader(plan, None).partitions() == []
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f'format("pulsar") (reading): {typo} holds no message (is the name right? Pulsar creates a topic a '
        "client names, empty)"
    ]


# -- KeyValue topics ---------------------------------------------------------------------------------

KEY = {"type": "record", "name": "Key", "namespace": "t", "fields": [{"name": "k", "type": "string"}]}


@pytest.mark.parametrize("encoding", ["INLINE", "SEPARATED"])
def test_keyvalue_topics_give_key_and_value_structs(spark, registered, pulsar_broker, tmp_path, encoding):
    from pulsar_codec.pulsar import KeyValue, KeyValueSchema, send_keyvalue

    topic = f"persistent://public/default/kv-{encoding.lower()}-{uuid.uuid4().hex[:8]}"
    reg = LocalRegistry(tmp_path / "schemas.db")
    key_id = reg.register(f"{local_name(topic)}-key", json.dumps(KEY))
    value_id = reg.register(f"{local_name(topic)}-value", json.dumps(V1))
    client = pulsar.Client(pulsar_broker.url, logger=pulsar.ConsoleLogger(_pulsar.LoggerLevel.Error))
    schema = KeyValueSchema(encoding=encoding)  # bytes parts: the framed key and value
    producer = client.create_producer(topic, schema=schema, batching_enabled=False)
    parts = [
        (framed(key_id, KEY, {"k": f"key{i}"}), framed(value_id, V1, {"id": i, "name": f"n{i}"})) for i in range(3)
    ]
    parts.append((b"\x00\x00\x00\x03\xe7", parts[0][1]))  # the key's schema id is unknown
    for key, value in parts:
        if encoding == "INLINE":
            producer.send(KeyValue(key, value))
        else:
            send_keyvalue(producer, key, value)
    producer.close()
    plain = client.create_producer(topic, batching_enabled=False)
    if encoding == "INLINE":
        plain.send(b"\x00\x00\x00\x09abc")  # a key length past the payload's end
    else:
        plain.send(parts[0][1], partition_key="not base64!")
    plain.close()
    client.close()
    reg.close()

    df = reader(spark, pulsar_broker, tmp_path / "schemas.db", topics=topic, keyvalue=encoding)
    assert df.schema["key"].dataType.simpleString() == "struct<k:string>"
    rows = df.collect()
    assert [None if r["key"] is None else r["key"]["k"] for r in rows] == ["key0", "key1", "key2", None, None]
    values = [None if r["value"] is None else r["value"].asDict() for r in rows]
    assert values[:4] == [{"id": i, "name": f"n{i}"} for i in (0, 1, 2, 0)]
    assert [r["schema_id"] for r in rows[:4]] == [value_id] * 4
    errors = [r["decode_error"] for r in rows]
    assert errors[:3] == [None, None, None]
    assert errors[3]["code"] == ErrorCode.SCHEMA_NOT_FOUND and "999" in errors[3]["message"]
    expected_code = ErrorCode.KV_LENGTH_PAST_END if encoding == "INLINE" else ErrorCode.KV_INVALID_BASE64
    assert errors[4]["code"] == expected_code
    # the bytes that failed: the INLINE payload, or the SEPARATED message's partition key
    assert errors[4]["payload"] == (b"\x00\x00\x00\x09abc" if encoding == "INLINE" else b"not base64!")
    if encoding == "SEPARATED":  # the value of a message whose key is bad is still read
        assert values[4] == {"id": 0, "name": "n0"}

    # decode=false: the key and value bytes, split
    raw = reader(spark, pulsar_broker, topics=topic, keyvalue=encoding, decode="false").collect()
    assert [(r["key"], r["value"]) for r in raw[:4]] == parts
    assert raw[4]["decode_error"]["code"] == expected_code


# -- several topic-partitions and admission control -------------------------------------------------


def test_stream_several_topics_with_max_records_per_trigger(spark, registered, pulsar_broker, tmp_path):
    stem = f"persistent://public/default/spread-{uuid.uuid4().hex[:8]}"
    topics = [f"{stem}-{k}" for k in range(3)]
    reg = LocalRegistry(tmp_path / "schemas.db")
    sid = reg.register("spread-value", json.dumps(V1))
    client = pulsar.Client(pulsar_broker.url, logger=pulsar.ConsoleLogger(_pulsar.LoggerLevel.Error))
    for k, topic in enumerate(topics):  # 6, 9 and 12 messages; the last topic's in producer batches of 3
        producer = Producer(client, topic, batching=k == 2)
        for first in range(0, 6 + 3 * k, 3):
            producer.send_all(
                [(framed(sid, V1, {"id": 100 * k + i, "name": topic}), {}) for i in range(first, first + 3)]
            )
        producer.close()
    expected = sorted(100 * k + i for k in range(3) for i in range(6 + 3 * k))
    options = {"topics": ",".join(topics), "subject": "spread-value"}

    batch = reader(spark, pulsar_broker, tmp_path / "schemas.db", **options)
    assert batch.rdd.getNumPartitions() == 3  # one input partition per topic-partition
    assert sorted(r["value"]["id"] for r in batch.collect()) == expected

    name = f"spread_{uuid.uuid4().hex[:8]}"
    query = (
        stream(spark, pulsar_broker, tmp_path / "schemas.db", max_records_per_trigger="4", **options)
        .select("value.id", "topic", "message_id")
        .writeStream.format("memory")
        .queryName(name)
        .trigger(availableNow=True)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    rows = spark.table(name).collect()
    assert sorted(r["id"] for r in rows) == expected
    assert {r["topic"] for r in rows} == set(topics)
    assert len({(r["topic"], bytes(r["message_id"])) for r in rows}) == len(expected)
    # at most 4 entries per micro-batch: 4 messages, or 4 producer batches of 3 from the last topic
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sum(sizes) == len(expected) and max(sizes) <= 4 * 3 and len(sizes) >= 5
    source = query.lastProgress["sources"][0]
    ends = json.loads(source["endOffset"])
    assert set(ends) == set(topics)
    assert json.loads(source["latestOffset"]) == ends  # the broker's last ids: all read
    client.close()
    reg.close()


@pytest.fixture(scope="module")
def partitioned_broker(tmp_path_factory):
    import pulsar_fixtures

    broker = pulsar_fixtures.start_broker(tmp_path_factory.mktemp("pulsar-lite-3"), default_partitions=3)
    yield broker
    broker.stop()


def test_partition_names_must_address_partitions(partitioned_broker, tmp_path):
    # pulsar-lite with default_partitions takes "<topic>-partition-0" for a partitioned topic of its
    # own: refused on the driver, before a reader of such a name can take an executor down
    from pulsar_codec.integrations.spark.pulsar_offsets import new_client

    plan = SourcePlan.from_options(
        {"service_url": partitioned_broker.url, "topics": f"parted-{uuid.uuid4().hex[:8]}", "decode": "false"}
    )
    client = new_client(partitioned_broker.url, 10_000)
    try:
        with pytest.raises(ValueError, match="single partitions cannot be read"):
            plan.partition_topics(client)
    finally:
        client.close()


# -- restart: every message once ---------------------------------------------------------------------


def _batch_ids(folder: Path) -> set[int]:
    return {int(p.name) for p in folder.glob("[0-9]*")} if folder.exists() else set()


def test_stream_restart_mid_batch_delivers_every_message_once(spark, registered, pulsar_broker, tmp_path):
    topic = f"persistent://public/default/restart-{uuid.uuid4().hex[:8]}"
    subject = f"{local_name(topic)}-value"
    registry_path = tmp_path / "schemas.db"
    reg = LocalRegistry(registry_path)
    v1 = reg.register(subject, json.dumps(V1))
    client = pulsar.Client(pulsar_broker.url, logger=pulsar.ConsoleLogger(_pulsar.LoggerLevel.Error))
    producer = Producer(client, topic, batching=False)
    n, m = 12, 24
    producer.send_all([(framed(v1, V1, {"id": i, "name": f"v1-{i}"}), {}) for i in range(n)])
    sink, checkpoint = tmp_path / "sink", tmp_path / "checkpoint"

    def start():
        df = stream(spark, pulsar_broker, registry_path, topics=topic, max_records_per_trigger="4")
        return (
            df.select("value.*", "message_id")
            .writeStream.format("parquet")
            .option("path", str(sink))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )

    start().awaitTermination(120)
    assert spark.read.parquet(str(sink)).count() == n

    # a new schema version, and messages written with it
    v2 = reg.register(subject, json.dumps(V2))
    producer.send_all([(framed(v2, V2, {"id": n + i, "name": f"v2-{i}", "email": f"{i}@v2"}), {}) for i in range(m)])

    # stop the query while a micro-batch is planned but not committed; try again if a stop lands
    # between two batches
    stopped_mid_batch = False
    for _ in range(5):
        query = start()
        committed = _batch_ids(checkpoint / "commits")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and query.isActive:
            pending = _batch_ids(checkpoint / "offsets") - _batch_ids(checkpoint / "commits")
            if pending and _batch_ids(checkpoint / "commits") != committed:
                break
            time.sleep(0.005)
        query.stop()
        uncommitted = _batch_ids(checkpoint / "offsets") - _batch_ids(checkpoint / "commits")
        if uncommitted:
            stopped_mid_batch = True
            break
    assert stopped_mid_batch, "the query never stopped inside a micro-batch"
    assert spark.read.option("mergeSchema", "true").parquet(str(sink)).count() < n + m

    start().awaitTermination(120)  # the restart re-runs the logged batch, then reads the rest
    rows = spark.read.option("mergeSchema", "true").parquet(str(sink)).collect()
    assert len(rows) == n + m
    assert len({bytes(r["message_id"]) for r in rows}) == n + m
    by_id = {r["id"]: r for r in rows}
    assert sorted(by_id) == list(range(n + m))
    assert all(by_id[i]["name"] == f"v1-{i}" and by_id[i]["email"] is None for i in range(n))
    assert all(by_id[n + i]["name"] == f"v2-{i}" and by_id[n + i]["email"] == f"{i}@v2" for i in range(m))
    producer.close()
    client.close()
    reg.close()


def _stream_reader(broker, topic, **options):
    plan = SourcePlan.from_options({"service_url": broker.url, "topics": topic, "decode": "false", **options})
    return PulsarStreamReader(plan, plan.spark_schema())


def test_stream_latest_is_settled_once_by_the_first_micro_batch(pulsar_broker):
    # Spark asks for the initial offset when it plans the first micro-batch, again when it runs it,
    # and again after a restart before that batch committed: the broker's last id each time moved the
    # first range's start past the messages sent in between, which were never read
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    topic = f"persistent://public/default/latest-{uuid.uuid4().hex[:8]}"
    client = pulsar.Client(pulsar_broker.url, logger=pulsar.ConsoleLogger(_pulsar.LoggerLevel.Error))
    producer = Producer(client, topic, batching=False)
    producer.send_all([(b"old-%d" % i, {}) for i in range(3)])
    source = _stream_reader(pulsar_broker, topic, starting_offsets="latest")
    restarted = _stream_reader(pulsar_broker, topic, starting_offsets="latest")
    try:
        initial = source.initialOffset()
        end = source.latestOffset(initial, ReadAllAvailable())  # the first micro-batch: where latest is
        producer.send_all([(b"new-%d" % i, {}) for i in range(2)])  # while it runs
        assert source.initialOffset() == initial == restarted.initialOffset()
        assert source.partitions(source.initialOffset(), end) == []
        end2 = source.latestOffset(end, ReadAllAvailable())
        (part,) = source.partitions(end, end2)
        batches = read_offsets(client, topic, part.start, part.end, batch_size=100, timeout_ms=10_000)
        assert [v for b in batches for v in b.column("payload").to_pylist()] == [b"new-0", b"new-1"]
    finally:
        source.stop()
        restarted.stop()
        producer.close()
        client.close()


def test_stream_refuses_a_checkpoint_past_the_last_message(pulsar_broker):
    # a topic deleted and created again (or a checkpoint of another broker) ends before the offset
    # the query goes on from: the stream waited silently and then skipped its messages up to there
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    topic = f"persistent://public/default/behind-{uuid.uuid4().hex[:8]}"
    empty = f"persistent://public/default/behind-empty-{uuid.uuid4().hex[:8]}"
    client = pulsar.Client(pulsar_broker.url, logger=pulsar.ConsoleLogger(_pulsar.LoggerLevel.Error))
    producer = Producer(client, topic, batching=False)
    ids = producer.send_all([(b"m-%d" % i, {}) for i in range(3)])
    last = ids[-1]
    past = offset_of(_pulsar.MessageId(-1, last.ledger_id(), last.entry_id() + 5, -1))
    source = _stream_reader(pulsar_broker, topic)
    source_empty = _stream_reader(pulsar_broker, empty)
    try:
        with pytest.raises(ValueError, match=r"lies before the offset the query goes on from .*new checkpoint"):
            source.latestOffset({topic: past}, ReadAllAvailable())
        assert source.latestOffset({topic: offset_of(last)}, ReadAllAvailable()) == {topic: offset_of(last)}
        # no message at all: as a broker answers whose retention removed every ledger; nothing is read
        assert source_empty.latestOffset({empty: past}, ReadAllAvailable()) == {empty: past}
    finally:
        source.stop()
        source_empty.stop()
        producer.close()
        client.close()


# -- the sink ----------------------------------------------------------------------------------------


def test_sink_round_trip_batch_and_stream(spark, registered, pulsar_broker, users_topic, tmp_path):
    from pyspark.sql import functions as F

    topic, registry_path, sent, _, _ = users_topic
    out_topic = f"persistent://public/default/out-{uuid.uuid4().hex[:8]}"
    good = reader(spark, pulsar_broker, registry_path, topics=topic).where("decode_error IS NULL AND value IS NOT NULL")
    transformed = good.select(
        "key",
        F.struct(
            (F.col("value.id") * 10).alias("id"),
            F.upper("value.name").alias("name"),
            F.col("value.email").alias("email"),
        ).alias("value"),
    )
    transformed.write.format("pulsar").mode("append").options(
        service_url=pulsar_broker.url, topic=out_topic, registry=str(registry_path), key_column="key"
    ).save()

    def rows_of(rows):
        return sorted(((r["value"]["id"], r["key"], r["value"]["name"], r["value"]["email"]) for r in rows), key=str)

    back = reader(spark, pulsar_broker, registry_path, topics=out_topic).collect()
    expected = rows_of(transformed.collect())
    assert rows_of(back) == expected
    assert len(expected) == 9 and all(r["decode_error"] is None for r in back)
    with LocalRegistry(registry_path) as reg:
        latest = reg.get_latest(f"{local_name(out_topic)}-value")  # registered by the sink, on the driver
    assert {r["schema_id"] for r in back} == {latest.id}

    # the streaming writer: the source's stream, re-encoded into a third topic
    third = f"persistent://public/default/third-{uuid.uuid4().hex[:8]}"
    query = (
        stream(spark, pulsar_broker, registry_path, topics=out_topic, subject=f"{local_name(out_topic)}-value")
        .select("key", "value")
        .writeStream.format("pulsar")
        .options(service_url=pulsar_broker.url, topic=third, registry=str(registry_path), key_column="key")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    again = reader(spark, pulsar_broker, registry_path, topics=third).collect()
    assert rows_of(again) == expected


def test_sink_flat_columns_and_binary_values(spark, registered, pulsar_broker, tmp_path):
    topic = f"persistent://public/default/flat-{uuid.uuid4().hex[:8]}"
    registry_path = tmp_path / "schemas.db"
    df = spark.createDataFrame([("a", 1, "x"), (None, 2, None)], "k string, id bigint, note string")
    df.write.format("pulsar").mode("append").options(
        service_url=pulsar_broker.url, topic=topic, registry=str(registry_path), key_column="k"
    ).save()
    rows = sorted(reader(spark, pulsar_broker, registry_path, topics=topic).collect(), key=lambda r: r["value"]["id"])
    assert [(r["key"], r["value"].asDict()) for r in rows] == [
        ("a", {"id": 1, "note": "x"}),
        (None, {"id": 2, "note": None}),
    ]
    # use_latest: written with the subject's latest version (registered by the first write) and its id
    latest_options = {"service_url": pulsar_broker.url, "topic": topic, "registry": str(registry_path)}
    with pytest.raises(Exception, match=r"column\(s\) \['k'\] that"):  # no key_column: k is no field of the value
        df.write.format("pulsar").mode("append").options(**latest_options, use_latest="true").save()
    df.where("id = 1").drop("k").write.format("pulsar").mode("append").options(
        **latest_options, use_latest="true"
    ).save()
    again = reader(spark, pulsar_broker, registry_path, topics=topic).collect()
    assert [r["value"].asDict() for r in again[2:]] == [{"id": 1, "note": "x"}] and again[2]["key"] is None
    assert len({r["schema_id"] for r in again}) == 1
    # a binary value column travels as it is (already framed elsewhere); no registry needed
    raw_topic = f"persistent://public/default/raw-{uuid.uuid4().hex[:8]}"
    spark.createDataFrame([(b"\x01\x02",), (None,)], "value binary").write.format("pulsar").mode("append").options(
        service_url=pulsar_broker.url, topic=raw_topic
    ).save()
    raw = reader(spark, pulsar_broker, topics=raw_topic, decode="false").collect()
    assert sorted((r["value"] for r in raw), key=lambda v: v is None) == [b"\x01\x02", None]  # two tasks: any order


NARROW = {
    "type": "record",
    "name": "Narrow",
    "namespace": "t",
    "fields": [{"name": "n", "type": "int"}, {"name": "note", "type": ["null", "string"], "default": None}],
}


def test_sink_sends_rows_it_cannot_encode_to_the_dead_letter_topic(spark, registered, pulsar_broker, tmp_path, caplog):
    """A row the writer schema cannot take (a long beyond an Avro int) fails the job, or, with
    dead_letter_topic, goes there as its JSON text with the error in its properties; the other rows
    are written and nothing is lost."""

    from pyspark.sql import functions as F

    topic = f"persistent://public/default/narrow-{uuid.uuid4().hex[:8]}"
    dead = f"persistent://public/default/narrow-dlq-{uuid.uuid4().hex[:8]}"
    registry_path = tmp_path / "schemas.db"
    subject = "narrow-value"
    with LocalRegistry(registry_path) as reg:
        schema_id = reg.register(subject, json.dumps(NARROW))
    big = 2**40
    rows = [(f"k{i}", big + i if i % 4 == 1 else i, None if i % 3 else f"note {i}") for i in range(12)]
    df = spark.createDataFrame(rows, "k string, n bigint, note string").repartition(2)
    options = {
        "service_url": pulsar_broker.url,
        "registry": str(registry_path),
        "subject": subject,
        "use_latest": "true",
        "key_column": "k",
    }
    failing = f"persistent://public/default/narrow-failing-{uuid.uuid4().hex[:8]}"
    with pytest.raises(Exception, match="EncodeError"):
        df.write.format("pulsar").mode("append").options(**options, topic=failing).save()
    df.write.format("pulsar").mode("append").options(**options, topic=topic, dead_letter_topic=dead).save()
    # the commit runs in a Python worker of its own; what it logs from the tasks' counts:
    with caplog.at_level(logging.WARNING, logger="pulsar_codec"):
        _report([PulsarCommitMessage(topic, 5, 50, 2), PulsarCommitMessage(topic, 4, 40, 1)], "wrote")
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"format('pulsar') wrote: 3 rows could not be encoded for {topic} and went to the dead-letter topic"
    ]

    written = reader(spark, pulsar_broker, registry_path, topics=topic, subject=subject).collect()
    assert sorted((r["key"], r["value"]["n"], r["value"]["note"]) for r in written) == sorted(
        (k, n, note) for k, n, note in rows if n < big
    )
    assert {r["schema_id"] for r in written} == {schema_id} and all(r["decode_error"] is None for r in written)
    letters = reader(spark, pulsar_broker, topics=dead, decode="false").orderBy(F.col("key")).collect()
    assert [(r["key"], json.loads(r["value"])) for r in letters] == sorted(
        (k, {"k": k, "n": n, "note": note}) for k, n, note in rows if n >= big
    )
    for letter in letters:
        properties = dict(letter["properties"])
        assert properties["pulsar_codec.topic"] == topic and properties["pulsar_codec.part"] == "value"
        error = properties["pulsar_codec.error"]
        assert "int" in error and str(json.loads(letter["value"])["n"]) in error and not error.startswith("row ")

    with pytest.raises(ValueError, match="dead_letter_topic must be another topic"):
        SinkPlan.from_options({**options, "topic": topic, "dead_letter_topic": local_name(topic)}, df.schema, False)


def test_dead_letters_are_the_rows_json_text():
    """Every Arrow type a Spark row brings, as JSON holds it."""
    import datetime
    import decimal

    import pyarrow as pa

    from pulsar_codec.integrations.spark.batches import local_encode_text
    from pulsar_codec.integrations.spark.pulsar_dead_letter import row_json

    batch = pa.RecordBatch.from_pylist(
        [
            {
                "b": b"\x00\xff",
                "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.UTC),
                "d": datetime.date(2024, 2, 29),
                "dec": decimal.Decimal("12.30"),
                "f": float("nan"),
                "m": [("a", 1), ("b", None)],
                "s": {"x": [1.5, float("-inf")], "t": "é\u2028"},
            }
        ],
        schema=pa.schema(
            [
                ("b", pa.binary()),
                ("ts", pa.timestamp("us", "UTC")),
                ("d", pa.date32()),
                ("dec", pa.decimal128(5, 2)),
                ("f", pa.float64()),
                ("m", pa.map_(pa.string(), pa.int64())),
                ("s", pa.struct([("x", pa.list_(pa.float64())), ("t", pa.string())])),
            ]
        ),
    )
    text = row_json(batch, 0)
    assert json.loads(text) == {
        "b": "AP8=",
        "ts": "2024-01-02T03:04:05.000006+00:00",
        "d": "2024-02-29",
        "dec": "12.30",
        "f": "nan",
        "m": {"a": 1, "b": None},
        "s": {"x": [1.5, "-inf"], "t": "é\u2028"},
    }
    assert "é".encode() in text  # UTF-8, not escaped
    assert local_encode_text("row 3: R.n: too big") == "R.n: too big"
    assert local_encode_text("Record.a: row 1: not a date") == "Record.a: not a date"


# -- options, refused before any task runs ----------------------------------------------------------


def test_an_unreachable_broker_is_one_error_naming_it(spark, registered):
    from pulsar_codec.cli._broker import free_port
    from pulsar_codec.errors import BrokerUnreachableError

    url = f"pulsar://127.0.0.1:{free_port()}"  # nothing listens there
    plan = SourcePlan.from_options({"service_url": url, "topics": "a", "decode": "false", "timeout_ms": "1500"})
    with pytest.raises(BrokerUnreachableError, match=f"{url} did not answer within 1500 ms") as caught:
        PulsarBatchReader(plan, None).partitions()
    assert caught.value.service_url == url
    df = spark.read.format("pulsar").options(service_url=url, topics="a", decode="false", timeout_ms="1500").load()
    with pytest.raises(Exception, match="BrokerUnreachableError"):
        df.count()


def test_option_errors(spark, registered, pulsar_broker, tmp_path):
    registry_path = str(tmp_path / "schemas.db")
    LocalRegistry(registry_path).close()
    base = {"service_url": pulsar_broker.url, "topics": "a", "registry": registry_path}
    with pytest.raises(ValueError, match="'topics' or the option 'topics_pattern', not both"):
        SourcePlan.from_options({**base, "topics_pattern": "a.*"})
    with pytest.raises(ValueError, match="registry"):
        SourcePlan.from_options({"service_url": pulsar_broker.url, "topics": "a"})
    with pytest.raises(SchemaError, match="no subject 'a-value'"):
        SourcePlan.from_options(base)
    with pytest.raises(SchemaError, match="several topics"):
        SourcePlan.from_options({**base, "topics": "a,b"})
    with pytest.raises(ValueError, match="not a message id"):
        OffsetSpec.parse('{"a": "nope"}', "earliest", "starting_offsets")
    with pytest.raises(ValueError, match="positive integer"):
        SourcePlan.from_options({**base, "decode": "false", "max_records_per_trigger": "0"})
    # a misspelt or Kafka-style option is refused, never ignored; 'topic' is the one-topic spelling
    with pytest.raises(ValueError, match=r"no option 'startingOffsets' \(did you mean 'starting_offsets'\?\)"):
        SourcePlan.from_options({**base, "decode": "false", "startingOffsets": "latest"})
    with pytest.raises(ValueError, match="takes no path"):
        SourcePlan.from_options({**base, "decode": "false", "path": "orders"})
    single = {"service_url": pulsar_broker.url, "topic": "a", "decode": "false"}
    assert SourcePlan.from_options(single).topics == ("persistent://public/default/a",)
    with pytest.raises(ValueError, match="not both"):
        SourcePlan.from_options({**single, "topics": "a,b"})
    with pytest.raises(ValueError, match=r"'starting_offsets' names persistent://public/default/other, which is not"):
        SourcePlan.from_options({**base, "decode": "false", "starting_offsets": '{"other": "earliest"}'})
    with pytest.raises(ValueError, match="'ending_offsets' names"):
        SourcePlan.from_options({**base, "decode": "false", "ending_offsets": '{"b-partition-0": "latest"}'})
    partition = SourcePlan.from_options({**base, "decode": "false", "starting_offsets": '{"a-partition-1": "latest"}'})
    assert partition.starting.for_partition("persistent://public/default/a-partition-1") == "latest"
    # a partition index the topic does not have is refused once the partitions are listed
    a = "persistent://public/default/a"
    listed = [f"{a}-partition-{i}" for i in range(11)] + ["persistent://public/default/b"]
    partition.starting.check_partitions("starting_offsets", listed)
    with pytest.raises(
        ValueError,
        match=f"names {a}-partition-11, which the broker does not have: its partitions "
        f"are {a}-partition-0 to {a}-partition-10",
    ):
        OffsetSpec.parse('{"a-partition-11": "latest"}', "earliest", "x").check_partitions("x", listed)
    OffsetSpec.parse('{"c-partition-3": "latest"}', "earliest", "x").check_partitions("x", listed)  # not listed yet
    # the words in any case, as Spark's Kafka source takes them
    assert OffsetSpec.parse(" LATEST ", "earliest", "x") == OffsetSpec("latest")
    assert OffsetSpec.parse('{"a": "Earliest"}', "latest", "x").for_partition(a) == "earliest"
    with pytest.raises(ValueError, match="needs the option 'topics' .*, or 'topics_pattern' with 'admin_url'"):
        SourcePlan.from_options({"service_url": pulsar_broker.url, "decode": "false"})
    with pytest.raises(ValueError, match="registry_auth"):
        registry_config({"registry": "http://127.0.0.1:1", "registry_auth": "nocolon"})
    config = registry_config({"registry": "http://127.0.0.1:1", "registry_auth": "me:secret"})
    assert config.auth == ("me:secret".split(":")[0], "secret") and "secret" not in repr(config)
    assert PulsarDataSource.name() == "pulsar"

    from pyspark.sql.types import StructType

    with pytest.raises(
        ValueError,
        match=r"no option 'topics' \(did you mean 'topic'\? 'topics' is an option of the source \(reading\)\)",
    ):
        SinkPlan.from_options(
            {"service_url": pulsar_broker.url, "topics": "t"}, StructType().add("value", "binary"), False
        )
    with pytest.raises(
        ValueError, match=r"no option 'key_column' \(.*'key_column' is an option of the sink \(writing\)\)"
    ):
        SourcePlan.from_options({**base, "decode": "false", "key_column": "k"})
    with pytest.raises(ValueError, match="no option 'on_error': .* unless the option dead_letter_topic"):
        SinkPlan.from_options(
            {"service_url": pulsar_broker.url, "topic": "t", "on_error": "null"},
            StructType().add("value", "binary"),
            False,
        )
    with pytest.raises(ValueError, match=r'cannot overwrite one \(use mode\("append"\)\)'):
        SinkPlan.from_options(
            {"service_url": pulsar_broker.url, "topic": "t"}, StructType().add("value", "binary"), True
        )
    with pytest.raises(ValueError, match=r'cannot overwrite one \(use outputMode\("append"\)\)'):
        SinkPlan.from_options(
            {"service_url": pulsar_broker.url, "topic": "t"}, StructType().add("value", "binary"), True, stream=True
        )
    # through Spark: the refusal reaches the user when the query starts
    query = (
        stream(spark, pulsar_broker, registry_path, topics="a", decode="false", ending_offsets='{"a": "earliest"}')
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    with pytest.raises(StreamingQueryException, match="ending_offsets applies to batch reads"):
        query.awaitTermination(60)


def test_what_a_side_accepts_but_does_not_use_is_a_warning(caplog):
    """max_records_per_trigger in a batch read, and columns the sink does not send (a Kafka-style
    ``key`` column beside ``value`` without key_column), are said, not silently dropped."""

    from pyspark.sql.types import StructType

    source = {"service_url": "pulsar://127.0.0.1:1", "topics": "a", "decode": "false"}
    sink = {"service_url": "pulsar://127.0.0.1:1", "topic": "t"}
    with caplog.at_level(logging.WARNING, logger="pulsar_codec"):
        PulsarDataSource(source).reader(None)
        PulsarDataSource(source).streamReader(None)
        PulsarDataSource({**source, "max_records_per_trigger": "5"}).streamReader(None)
        assert not caplog.records
        PulsarDataSource({**source, "max_records_per_trigger": "5"}).reader(None)
        SinkPlan.from_options(sink, StructType().add("k", "string").add("value", "binary"), False)
        SinkPlan.from_options(
            {**sink, "key_column": "k"}, StructType().add("k", "string").add("value", "binary"), False
        )
        three = StructType().add("key", "string").add("value", "binary").add("extra", "long")
        SinkPlan.from_options(sink, three, False)
    assert [r.getMessage() for r in caplog.records] == [
        "format(\"pulsar\") (reading) ignores the option 'max_records_per_trigger' in a batch read (spark.read): it "
        "bounds the micro-batches of spark.readStream; a batch read takes everything between starting_offsets and "
        "ending_offsets",
        "format(\"pulsar\") (writing) does not send the column 'k': only 'value' is written (key_column names a "
        "string column sent as the partition key)",
        "format(\"pulsar\") (writing) does not send the columns 'key', 'extra': only 'value' is written (key_column "
        "names a string column sent as the partition key)",
    ]


def test_an_option_no_side_reads_is_a_warning(caplog):
    """A name far from every option (Spark's own, another tool's) is not refused, but said."""

    options = {"service_url": "pulsar://127.0.0.1:1", "topics": "a", "decode": "false", "fetchsize": "10"}
    with caplog.at_level(logging.WARNING, logger="pulsar_codec"):
        SourcePlan.from_options({**options, "checkpointLocation": "/tmp/x"})
    assert [r.getMessage() for r in caplog.records if "ignores the option" in r.getMessage()] == [
        "format(\"pulsar\") (reading) ignores the option 'fetchsize'; its options: " + ", ".join(sorted(SOURCE_OPTIONS))
    ]


# -- Protobuf through format("pulsar") with Confluent's own serializers -----------------------------

ORDER_PROTO = 'syntax = "proto3";\npackage shop.v1;\nmessage Order { int64 id = 1; string name = 2; optional double amount = 3; }\n'


def test_protobuf_topics_meet_confluents_serializers_without_a_protocol_option(
    spark, registered, pulsar_broker, tmp_path
):
    """Without ``protocol`` the sink frames Protobuf as Confluent's serializers do (00 + id +
    message indexes) and the source reads what they write: each side meets confluent-kafka."""
    import warnings

    from pyspark.sql import functions as F

    from protobuf_fixtures import compile_proto, message_class
    from pulsar_codec.cli._broker import produce
    from pulsar_codec.pulsar import read_batches
    from pulsar_codec.registry.server import serve

    with warnings.catch_warnings():
        try:  # authlib (confluent-kafka imports it) adds an "always" filter for its warnings on import
            import authlib.deprecate  # noqa: F401
        except ImportError:
            pass
        warnings.simplefilter("ignore")  # then its warning of its own httpx module is not shown
        ck_sr = pytest.importorskip("confluent_kafka.schema_registry")
        ck_pb = pytest.importorskip("confluent_kafka.schema_registry.protobuf")
        from confluent_kafka.serialization import MessageField, SerializationContext
    order = message_class(compile_proto(ORDER_PROTO, "order.proto"), "shop.v1.Order")
    registry_path = tmp_path / "registry.db"
    sunk = f"persistent://public/default/pb-sink-{uuid.uuid4().hex[:8]}"
    rows = spark.createDataFrame([(1, "a", 1.5), (2, "b", None)], "id long, name string, amount double")
    rows.select(F.struct("id", "name", "amount").alias("value")).write.format("pulsar").mode("append").options(
        service_url=pulsar_broker.url, registry=str(registry_path), topic=sunk, format="PROTOBUF", schema=ORDER_PROTO
    ).save()
    payloads = [p for batch in read_batches(pulsar_broker.url, sunk) for p in batch.column("payload").to_pylist()]
    assert sorted(p[5] for p in payloads) == [0, 0]  # the message-index array of the first message type
    with LocalRegistry(registry_path) as registry, serve(registry) as server:
        deserialize = ck_pb.ProtobufDeserializer(order, {"use.deprecated.format": False})
        ctx = SerializationContext(local_name(sunk), MessageField.VALUE)
        got = sorted(
            (m.id, m.name, m.amount if m.HasField("amount") else None) for m in (deserialize(p, ctx) for p in payloads)
        )
        assert got == [(1, "a", 1.5), (2, "b", None)]

        theirs = f"persistent://public/default/pb-ck-{uuid.uuid4().hex[:8]}"
        tctx = SerializationContext(local_name(theirs), MessageField.VALUE)
        with ck_sr.SchemaRegistryClient({"url": server.url, "max.retries": 0}) as client:
            serialize = ck_pb.ProtobufSerializer(order, client, {"use.deprecated.format": False})
            framed = [serialize(order(id=7, name="x", amount=2.5), tctx), serialize(order(id=8, name="y"), tctx)]
        produce(pulsar_broker.url, theirs, framed)
    back = reader(spark, pulsar_broker, registry_path, topics=theirs).select("value", "decode_error").collect()
    assert [r["decode_error"] for r in back] == [None, None]
    assert sorted((r["value"]["id"], r["value"]["name"], r["value"]["amount"]) for r in back) == [
        (7, "x", 2.5),
        (8, "y", None),
    ]


@pytest.mark.parametrize("encoding", ["INLINE", "SEPARATED"])
def test_keyvalue_topics_with_a_primitive_key(spark, registered, pulsar_broker, tmp_path, encoding):
    """PIP-420 lets a KeyValue's key be a Pulsar primitive (no registry id): key_format names it."""
    from pulsar_codec.pulsar import KeyValue, KeyValueSchema, send_keyvalue

    topic = f"persistent://public/default/kvp-{encoding.lower()}-{uuid.uuid4().hex[:8]}"
    with LocalRegistry(tmp_path / "schemas.db") as reg:
        value_id = reg.register(f"{local_name(topic)}-value", json.dumps(V1))
    client = pulsar.Client(pulsar_broker.url, logger=pulsar.ConsoleLogger(_pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic, schema=KeyValueSchema(encoding=encoding), batching_enabled=False)
    for i in range(3):
        key, value = f"user-{i}".encode(), framed(value_id, V1, {"id": i, "name": f"n{i}"})
        if encoding == "INLINE":
            producer.send(KeyValue(key, value))
        else:
            send_keyvalue(producer, key, value)
    producer.close()
    client.close()
    df = reader(spark, pulsar_broker, tmp_path / "schemas.db", topics=topic, keyvalue=encoding, key_format="STRING")
    assert df.schema["key"].dataType.simpleString() == "string"
    rows = df.collect()
    assert [(r["key"], r["value"]["id"]) for r in rows] == [(f"user-{i}", i) for i in range(3)]
    assert all(r["decode_error"] is None for r in rows)


def test_a_primitive_key_that_does_not_decode_is_null_beside_its_error():
    import pyarrow as pa

    from pulsar_codec.integrations.spark.pulsar_rows import PrimitiveKey

    assert PrimitiveKey.named("AVRO") is None and PrimitiveKey.named(None) is None
    key = PrimitiveKey.named("int64")
    assert key is not None and key.spark_type().simpleString() == "bigint"
    part = key.part("python")
    keys, errors = part.decode(pa.array([(7).to_bytes(8, "big"), b"\x01", None], pa.binary()))
    assert keys.to_pylist() == [7, None, None]
    found = errors.to_pylist()
    assert found[0] is None and found[2] is None
    assert found[1]["code"] == ErrorCode.PRIM_BAD_LENGTH and found[1]["payload"] == b"\x01"
