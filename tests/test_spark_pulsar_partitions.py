"""format("pulsar") on partitioned topics: partitions added while a stream runs, partitions named
beside their topic, and the driver's broker calls per micro-batch.

pulsar-lite creates partitioned topics only from its ``default_partitions`` setting, and a broker
started with it takes ``<topic>-partition-0`` for a partitioned topic of its own (the source refuses
it). It also keeps each partitioned topic's partition count in ``<db_path>.metadata.json`` and reads
it when it starts: a broker started with that file naming a topic serves it as a partitioned topic
whose partitions are addressable one by one, as a Pulsar broker does. Restarting the broker on the
same port with a larger count is what ``pulsar-admin topics update-partitioned-topic`` does to a
running Pulsar cluster: the clients reconnect and see the new partitions.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")
pytest.importorskip("pulsar_lite", reason="pulsar-lite is not installed (extra 'test')")

import _pulsar
import pulsar

from pulsar_codec import spark as pcs
from pulsar_codec.cli._broker import accepts, free_port, write_config
from pulsar_codec.integrations.spark.pulsar_offsets import plan_ends, position
from pulsar_codec.integrations.spark.pulsar_options import OffsetSpec
from pulsar_codec.integrations.spark.pulsar_source import PulsarStreamReader, SourcePlan
from pulsar_codec.pulsar import positions

pytest_plugins = ["spark_fixtures", "pulsar_fixtures"]
pytestmark = pytest.mark.slow


class PartitionedBroker:
    """pulsar-lite on a fixed port whose partitioned topics are set in its metadata file."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir.resolve()
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.config = write_config(self.workdir, self.port)  # creates <workdir>/data
        self.metadata = self.workdir / "data" / "store.metadata.json"

    @property
    def url(self) -> str:
        return f"pulsar://127.0.0.1:{self.port}"

    def start(self) -> None:
        import pulsar_fixtures

        env = {k: v for k, v in os.environ.items() if k != "RUST_LOG"}
        with open(self.workdir / "broker.log", "ab") as log:
            self.process = subprocess.Popen(
                [pulsar_fixtures.find_binary(), "--config", str(self.config), "--log-level", "warn"],
                cwd=self.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 30
        while not accepts(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError((self.workdir / "broker.log").read_text(errors="replace"))
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def partition(self, topic: str, count: int) -> None:
        """Make ``topic`` a partitioned topic of ``count`` partitions (the broker restarted if it runs)."""
        running = self.process is not None and self.process.poll() is None
        self.stop()
        meta = json.loads(self.metadata.read_text()) if self.metadata.exists() else {"version": 2}
        meta.setdefault("partitioned_topics", {})[topic] = {"partitions": count}
        self.metadata.write_text(json.dumps(meta))
        if running:
            self.start()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    found = PartitionedBroker(tmp_path_factory.mktemp("pulsar-lite-parted"))
    found.start()
    try:
        yield found
    finally:
        found.stop()


@pytest.fixture(scope="module")
def registered(spark):
    pcs.register(spark)


def new_client(broker: PartitionedBroker):
    return pulsar.Client(
        broker.url, operation_timeout_seconds=15, logger=pulsar.ConsoleLogger(_pulsar.LoggerLevel.Error)
    )


def send(client, topic: str, values: list[str]) -> None:
    """One message per value, its partition picked by the key (round robin over the partitions)."""
    producer = client.create_producer(topic, batching_enabled=False)
    try:
        for i, value in enumerate(values):
            producer.send(value.encode(), partition_key=f"key-{i}")
    finally:
        producer.close()


def test_a_partition_named_beside_its_topic_is_read_once(spark, registered, broker):
    # topics="orders,orders-partition-0": the batch read made two input partitions of
    # orders-partition-0, and every message of that partition came twice
    topic = f"persistent://public/default/beside-{uuid.uuid4().hex[:8]}"
    broker.partition(topic, 2)
    client = new_client(broker)
    try:
        values = [f"m{i}" for i in range(8)]
        send(client, topic, values)
        for topics in (f"{topic},{topic}-partition-0", f"{topic}-partition-1,{topic}"):
            df = (
                spark.read.format("pulsar")
                .option("service_url", broker.url)
                .option("topics", topics)
                .option("decode", "false")
                .load()
            )
            rows = df.selectExpr("CAST(value AS STRING) AS v", "partition").collect()
            assert sorted(r["v"] for r in rows) == values, topics
            assert {r["partition"] for r in rows} == {0, 1}
    finally:
        client.close()


def test_partitions_added_while_a_stream_runs_and_before_it_restarts(spark, registered, broker, tmp_path):
    # the new partitions are read from their first message, each message once: by the running
    # query, and by a query restarted from its checkpoint (with a read limit)
    topic = f"persistent://public/default/grow-{uuid.uuid4().hex[:8]}"
    broker.partition(topic, 2)
    sent: list[str] = []

    def produce(tag: str, n: int) -> None:
        client = new_client(broker)
        try:
            values = [f"{tag}-{i}" for i in range(n)]
            send(client, topic, values)
            sent.extend(values)
        finally:
            client.close()

    def source(**options):
        r = spark.readStream.format("pulsar").option("service_url", broker.url).option("topics", topic)
        for k, v in {"decode": "false", **options}.items():
            r = r.option(k, v)
        return r.load().selectExpr("CAST(value AS STRING) AS v", "partition")

    produce("a", 6)
    name = f"grow_{uuid.uuid4().hex[:8]}"
    query = (
        source()
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "memory-checkpoint"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
        broker.partition(topic, 4)  # the broker restarts: the query's clients reconnect
        produce("b", 12)
        query.processAllAvailable()
        rows = spark.table(name).collect()
    finally:
        query.stop()
    assert query.exception() is None
    assert sorted(r["v"] for r in rows) == sorted(sent)
    assert {r["partition"] for r in rows} == {0, 1, 2, 3}

    # a checkpointed query, restarted after the topic grew again
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run() -> None:
        q = (
            source(max_records_per_trigger="5")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination(120)
        assert q.exception() is None

    run()
    broker.partition(topic, 6)
    produce("c", 12)
    run()
    rows = spark.read.parquet(str(out)).collect()
    assert sorted(r["v"] for r in rows) == sorted(sent)
    assert {r["partition"] for r in rows} == set(range(6))


def test_report_latest_offset_does_not_ask_the_broker_again(broker, monkeypatch):
    # Spark asks reportLatestOffset right after latestOffset: each asked every partition's last id
    # (a subscription per partition), twice the driver's broker calls per micro-batch
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    topic = f"persistent://public/default/asks-{uuid.uuid4().hex[:8]}"
    broker.partition(topic, 3)
    client = new_client(broker)
    send(client, topic, [f"m{i}" for i in range(6)])
    asked: list[str] = []
    real = positions.last_message_id

    def counting(client, partition):
        asked.append(partition)
        return real(client, partition)

    monkeypatch.setattr(positions, "last_message_id", counting)  # what last_message_ids asks
    plan = SourcePlan.from_options({"service_url": broker.url, "topics": topic, "decode": "false"})
    reader = PulsarStreamReader(plan, plan.spark_schema())
    try:
        start = reader.initialOffset()
        end = reader.latestOffset(start, ReadAllAvailable())
        assert len(asked) == 3
        assert reader.reportLatestOffset() == end  # everything is read: the ends are the last ids
        assert len(asked) == 3
        assert reader.reportLatestOffset() == end  # asked on its own: the broker is asked
        assert len(asked) == 6
    finally:
        reader.stop()
        client.close()


class _SilentReader:
    def read_next(self, timeout_ms):
        raise pulsar.Timeout()

    def close(self):
        pass


class _StalledClient:
    """A broker whose readers deliver nothing in time (pulsar-lite at times stops dispatching)."""

    def create_reader(self, *args, **kwargs):
        return _SilentReader()


def test_a_limited_range_never_ends_past_the_last_message():
    # with the first pending message unread within its wait, the range ended max_records_per_trigger
    # entries after the last one: the read waited for messages that were not there, and the next
    # micro-batch started past them (or stopped the query as a recreated topic)
    last = _pulsar.MessageId(-1, 3, 5, -1)
    earliest = _pulsar.MessageId.earliest
    ends = plan_ends(_StalledClient(), {"t": earliest}, {"t": last}, 10)
    assert position(ends["t"]) == position(last)
    # a start in the last ledger counts its entries without reading: bounded by the limit
    start = _pulsar.MessageId(-1, 3, 1, -1)
    ends = plan_ends(_StalledClient(), {"t": start}, {"t": last}, 2)
    assert position(ends["t"]) == (3, 3, position(last)[2])


def offset_of(message_id) -> str:
    return base64.b64encode(message_id.serialize()).decode()


def test_a_message_id_for_a_whole_partitioned_topic_is_refused():
    # {"orders": "<id>"} gave every partition the id of one: the other partitions' reads started
    # at a position of another partition (pulsar-lite then waited 90 s and failed the task with a
    # TimeoutError; elsewhere a wrong range is read)
    orders = "persistent://public/default/orders"
    plain = "persistent://public/default/plain"
    listed = [f"{orders}-partition-{i}" for i in range(3)] + [plain]
    some_id = offset_of(_pulsar.MessageId(0, 4, 2, -1))
    with pytest.raises(ValueError, match=f"gives {orders} a message id, but it is a partitioned topic.*-partition-0"):
        OffsetSpec.parse(json.dumps({"orders": some_id}), "earliest", "starting_offsets").check_partitions(
            "starting_offsets", listed
        )
    # a partition's id, a word for the whole topic, an id for a topic that is not partitioned: fine
    for given in ({"orders-partition-0": some_id}, {"orders": "latest"}, {"plain": some_id}):
        OffsetSpec.parse(json.dumps(given), "earliest", "x").check_partitions("x", listed)


def test_a_stream_refuses_a_message_id_for_a_whole_partitioned_topic(broker):
    topic = f"persistent://public/default/whole-{uuid.uuid4().hex[:8]}"
    broker.partition(topic, 2)
    client = new_client(broker)
    try:
        send(client, topic, ["m0", "m1"])
        given = json.dumps({topic: offset_of(_pulsar.MessageId(0, 0, 0, -1))})
        plan = SourcePlan.from_options(
            {"service_url": broker.url, "topics": topic, "decode": "false", "starting_offsets": given}
        )
        reader = PulsarStreamReader(plan, plan.spark_schema())
        try:
            with pytest.raises(ValueError, match="a message id belongs to one partition"):
                reader.initialOffset()
        finally:
            reader.stop()
    finally:
        client.close()
