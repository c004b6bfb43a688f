"""read_batches / dump_to_parquet against a real broker (pulsar-lite on 127.0.0.1)."""

from __future__ import annotations

import base64
import datetime as dt
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")

import pulsar

from pulsar_codec import errors
from pulsar_codec import pulsar as pcp

pytest_plugins = ["pulsar_fixtures"]

UTC = dt.UTC


def _ms(ts: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ts / 1000, UTC)


def _produce(client, topic, messages, **producer_options):
    """Send ``(content, send_kwargs)`` pairs; returns the message ids."""
    producer = client.create_producer(topic, batching_enabled=False, **producer_options)
    try:
        return [producer.send(content, **kwargs) for content, kwargs in messages]
    finally:
        producer.close()


def _read_all(source, topic, **options):
    batches = list(pcp.read_batches(source, topic, **options))
    for batch in batches:
        assert batch.schema == pcp.MESSAGE_SCHEMA
    return batches


def test_every_column(pulsar_client, pulsar_topic):
    before = int(time.time() * 1000)
    ids = _produce(
        pulsar_client,
        pulsar_topic,
        [
            (b"\x00first", {"partition_key": "k1", "properties": {"a": "1", "b": "two"}, "event_timestamp": 1234}),
            (b"", {}),
            (None, {"partition_key": "tomb"}),
            (bytes(range(256)), {"properties": {"x": ""}}),
        ],
    )
    after = int(time.time() * 1000)
    (batch,) = _read_all(pulsar_client, pulsar_topic)
    assert batch.num_rows == 4
    cols = batch.to_pydict()
    assert cols["payload"] == [b"\x00first", b"", None, bytes(range(256))]
    assert cols["key"] == ["k1", None, "tomb", None]
    assert cols["key_bytes"] == [b"k1", None, b"tomb", None]
    assert [sorted(p) for p in cols["properties"]] == [[("a", "1"), ("b", "two")], [], [], [("x", "")]]
    for t in cols["publish_time"]:
        assert _ms(before - 1) <= t <= _ms(after + 1)
    assert cols["event_time"] == [_ms(1234), None, None, None]
    assert cols["message_id"] == [i.serialize() for i in ids]
    assert [pulsar.MessageId.deserialize(m) for m in cols["message_id"]] == ids
    assert cols["topic"] == [pulsar_topic] * 4
    assert cols["schema_version"] == [None] * 4  # pulsar-lite has no schema registry
    assert cols["redelivery_count"] == [0] * 4
    assert batch.schema.field("publish_time").type == pa.timestamp("ms", tz="UTC")


def test_batches_of_batch_size_in_order(pulsar_client, pulsar_topic):
    _produce(pulsar_client, pulsar_topic, [(b"m%d" % i, {}) for i in range(10)])
    batches = _read_all(pulsar_client, pulsar_topic, batch_size=4)
    assert [b.num_rows for b in batches] == [4, 4, 2]
    table = pa.Table.from_batches(batches)
    assert table.column("payload").to_pylist() == [b"m%d" % i for i in range(10)]
    ids = [pulsar.MessageId.deserialize(m) for m in table.column("message_id").to_pylist()]
    assert ids == sorted(ids) and len(set(map(str, ids))) == 10


def test_batching_producer(pulsar_client, pulsar_topic):
    producer = pulsar_client.create_producer(pulsar_topic, batching_enabled=True, batching_max_publish_delay_ms=20)
    for i in range(5):
        producer.send_async(b"b%d" % i, None, partition_key=f"key{i}", properties={"i": str(i)})
    producer.flush()
    producer.close()
    (batch,) = _read_all(pulsar_client, pulsar_topic)
    assert batch.column("payload").to_pylist() == [b"b%d" % i for i in range(5)]
    assert batch.column("key").to_pylist() == [f"key{i}" for i in range(5)]
    assert [dict(p) for p in batch.column("properties").to_pylist()] == [{"i": str(i)} for i in range(5)]
    ids = [pulsar.MessageId.deserialize(m) for m in batch.column("message_id").to_pylist()]
    assert len({(i.ledger_id(), i.entry_id(), i.batch_index()) for i in ids}) == 5


def test_base64_keys(pulsar_client, pulsar_topic):
    keys = [b"\x00\x04\x03\x04\x08", b"\xff\xfe", b"text", b"ab"]
    _produce(pulsar_client, pulsar_topic, [(b"v", {"partition_key": base64.b64encode(k).decode()}) for k in keys])
    _produce(pulsar_client, pulsar_topic, [(b"v", {})])
    (batch,) = _read_all(pulsar_client, pulsar_topic, key_encoding="base64")
    assert batch.column("key").to_pylist()[0] == "AAQDBAg="  # spec vector K7
    assert batch.column("key_bytes").to_pylist() == keys + [None]
    (raw,) = _read_all(pulsar_client, pulsar_topic, key_encoding="raw")
    assert raw.column("key_bytes").to_pylist()[0] == b"AAQDBAg="


def test_bad_base64_key_raises_codec_error(pulsar_client, pulsar_topic):
    _produce(pulsar_client, pulsar_topic, [(b"v", {"partition_key": "QUJD"}), (b"v", {"partition_key": "not base64!"})])
    with pytest.raises(errors.KeyValueFormatError) as info:
        _read_all(pulsar_client, pulsar_topic, key_encoding="base64")
    assert info.value.index == 1
    assert info.value.code == errors.ErrorCode.KV_INVALID_BASE64


def test_start_and_end_by_message_id(pulsar_client, pulsar_topic):
    ids = _produce(pulsar_client, pulsar_topic, [(b"m%d" % i, {}) for i in range(6)])

    def payloads(**options):
        return (
            pa.Table.from_batches(_read_all(pulsar_client, pulsar_topic, **options), pcp.MESSAGE_SCHEMA)
            .column("payload")
            .to_pylist()
        )

    assert payloads(start=ids[1]) == [b"m2", b"m3", b"m4", b"m5"]
    assert payloads(start=ids[1], start_inclusive=True) == [b"m1", b"m2", b"m3", b"m4", b"m5"]
    assert payloads(start=ids[1].serialize(), end=ids[3]) == [b"m2", b"m3"]
    assert payloads(start=pulsar.MessageId.wrap(ids[0]), end=ids[0].serialize()) == []  # end before start
    assert payloads(end=ids[2]) == [b"m0", b"m1", b"m2"]
    assert payloads(start="latest") == []
    assert payloads(limit=2) == [b"m0", b"m1"]
    assert payloads(limit=0) == []


def test_start_and_end_by_publish_time(pulsar_client, pulsar_topic):
    producer = pulsar_client.create_producer(pulsar_topic, batching_enabled=False)
    marks = []
    for i in range(4):
        producer.send(b"m%d" % i)
        time.sleep(0.02)
        marks.append(int(time.time() * 1000))
        time.sleep(0.02)
    producer.close()
    table = pa.Table.from_batches(_read_all(pulsar_client, pulsar_topic, start=marks[0], end=_ms(marks[2])))
    assert table.column("payload").to_pylist() == [b"m1", b"m2"]
    table = pa.Table.from_batches(_read_all(pulsar_client, pulsar_topic, start=_ms(marks[2])))
    assert table.column("payload").to_pylist() == [b"m3"]
    # nothing that late: the seek finds nothing, the fallback scan skips everything
    assert _read_all(pulsar_client, pulsar_topic, start=marks[3] + 3_600_000) == []
    # an end before the start
    assert _read_all(pulsar_client, pulsar_topic, start=marks[2], end=marks[0]) == []


def test_follow_yields_partial_batches(pulsar_client, pulsar_topic):
    producer = pulsar_client.create_producer(pulsar_topic, batching_enabled=False)
    for i in range(3):
        producer.send(b"a%d" % i)
    stream = pcp.read_batches(pulsar_client, pulsar_topic, end=None, timeout_ms=200, batch_size=100)
    try:
        first = next(stream)
        assert first.column("payload").to_pylist() == [b"a0", b"a1", b"a2"]
        producer.send(b"b0")
        second = next(stream)
        assert second.column("payload").to_pylist() == [b"b0"]
    finally:
        stream.close()
        producer.close()


def test_service_url_and_empty_topic(pulsar_broker, pulsar_client, pulsar_topic):
    assert _read_all(pulsar_broker.url, pulsar_topic, client_options={"operation_timeout_seconds": 10}) == []
    _produce(pulsar_client, pulsar_topic, [(b"x", {})])
    (batch,) = _read_all(pulsar_broker.url, pulsar_topic)
    assert batch.column("payload").to_pylist() == [b"x"]


def test_dump_to_parquet(pulsar_broker, pulsar_client, pulsar_topic, tmp_path):
    _produce(
        pulsar_client,
        pulsar_topic,
        [(b"p%d" % i, {"partition_key": f"k{i}", "properties": {"n": str(i)}}) for i in range(7)] + [(None, {})],
    )
    path = tmp_path / "dump.parquet"
    assert pcp.dump_to_parquet(pulsar_broker.url, pulsar_topic, path, batch_size=3) == 8
    table = pq.read_table(path)
    assert table.schema == pcp.MESSAGE_SCHEMA
    expected = pa.Table.from_batches(_read_all(pulsar_client, pulsar_topic))
    assert table.equals(expected)
    assert table.column("payload").to_pylist()[-1] is None

    empty = tmp_path / "empty.parquet"
    assert pcp.dump_to_parquet(pulsar_client, pulsar_topic + "-none", empty) == 0
    assert pq.read_table(empty).num_rows == 0
    with pytest.raises(ValueError, match="bounded"):
        pcp.dump_to_parquet(pulsar_client, pulsar_topic, tmp_path / "x.parquet", end=None)

    # a dump that fails half way (here: a read that cannot start) leaves the old file as it was
    # and nothing else
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(ValueError, match="limit"):
        pcp.dump_to_parquet(pulsar_client, pulsar_topic, path, limit=-1)
    assert pq.read_table(path).equals(table) and sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    ("options", "exc", "match"),
    [
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"key_encoding": "hex"}, ValueError, "key_encoding"),
        ({"start": "middle"}, ValueError, "start"),
        ({"start": 1.5}, TypeError, "start"),
        ({"end": "soon"}, ValueError, "end"),
        ({"limit": -1}, ValueError, "limit"),
        ({"start": dt.datetime(2024, 1, 1)}, ValueError, "timezone-aware"),
    ],
)
def test_bad_options(options, exc, match):
    with pytest.raises(exc, match=match):
        next(pcp.read_batches("pulsar://127.0.0.1:1", "t", **options))


def test_client_options_need_a_url(pulsar_client, pulsar_topic):
    with pytest.raises(TypeError, match="client_options"):
        next(pcp.read_batches(pulsar_client, pulsar_topic, client_options={"io_threads": 1}))


def test_broker_listens_on_loopback_only(pulsar_broker):
    config = (pulsar_broker.workdir / "pulsar-lite.toml").read_text()
    assert f'addr = "127.0.0.1:{pulsar_broker.port}"' in config
    assert "[metrics]\nenabled = false" in config
    log = pulsar_broker.log_text()
    assert f"Server listening on 127.0.0.1:{pulsar_broker.port}" in log
    assert "Metrics endpoint" not in log and "0.0.0.0" not in log


def test_start_broker_reports_a_dead_binary(tmp_path):
    import pulsar_fixtures

    with pytest.raises(RuntimeError, match="did not start") as info:
        pulsar_fixtures.start_broker(tmp_path, binary="/bin/false", timeout=5)
    assert "/bin/false --config" in str(info.value) and "exit code 1" in str(info.value)


@pytest.fixture(scope="module")
def partitioned_broker(tmp_path_factory):
    import pulsar_fixtures

    pytest.importorskip("pulsar_lite", reason="pulsar-lite is not installed (extra 'test')")
    broker = pulsar_fixtures.start_broker(tmp_path_factory.mktemp("pulsar-lite-partitioned"), default_partitions=3)
    try:
        yield broker
    finally:
        broker.stop()


def test_partitioned_topic(partitioned_broker, pulsar_topic):
    client = pulsar.Client(partitioned_broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        assert len(client.get_topic_partitions(pulsar_topic)) == 3
        _produce(client, pulsar_topic, [(b"m%d" % i, {"partition_key": f"key-{i}"}) for i in range(12)])
        table = pa.Table.from_batches(_read_all(client, pulsar_topic, batch_size=5))
    finally:
        client.close()
    assert table.num_rows == 12
    assert sorted(table.column("payload").to_pylist()) == sorted(b"m%d" % i for i in range(12))
    rows = table.to_pylist()
    assert {r["topic"] for r in rows} <= {f"{pulsar_topic}-partition-{p}" for p in range(3)}
    assert len({r["topic"] for r in rows}) > 1  # 12 keys over 3 partitions
    for r in rows:  # each message id names its partition
        assert pulsar.MessageId.deserialize(r["message_id"]).partition() == int(r["topic"].rsplit("-", 1)[1])
    per_partition = {}
    for r in rows:  # order is kept within a partition
        per_partition.setdefault(r["topic"], []).append(int(r["payload"][1:]))
    assert all(v == sorted(v) for v in per_partition.values())


def test_no_last_id_subscription_on_a_name_the_broker_calls_partitioned(partitioned_broker, pulsar_topic):
    """pulsar-lite calls a partition of a partitioned topic partitioned too: a consumer there spans
    partitions and cannot say its last id, and the C++ client could crash removing it, so the
    question is refused before any subscription is made."""
    from pulsar_codec.pulsar.positions import last_message_id

    client = pulsar.Client(partitioned_broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        name = client.get_topic_partitions(pulsar_topic)[0]
        assert len(client.get_topic_partitions(name)) > 1  # the broker's quirk this guards against
        for _ in range(5):
            with pytest.raises(pulsar.OperationNotSupported, match="partitioned"):
                last_message_id(client, name)
    finally:
        client.close()


def test_partitioned_topic_time_window(partitioned_broker, pulsar_topic):
    client = pulsar.Client(partitioned_broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(pulsar_topic, batching_enabled=False)
        marks = []
        for round_ in range(3):
            for i in range(6):  # six keys land on more than one partition
                producer.send(b"r%d-%d" % (round_, i), partition_key=f"key-{i}")
            time.sleep(0.03)
            marks.append(int(time.time() * 1000))
            time.sleep(0.03)
        producer.close()
        window = pa.Table.from_batches(
            _read_all(client, pulsar_topic, start=marks[0], end=marks[1], batch_size=4), pcp.MESSAGE_SCHEMA
        )
    finally:
        client.close()
    assert sorted(window.column("payload").to_pylist()) == sorted(b"r1-%d" % i for i in range(6))


def test_read_batches_from_a_broker_that_is_not_there_is_one_clear_error():
    """No broker at the URL: BrokerUnreachableError (pulsar_codec.errors) naming it, within about
    timeout_ms, not pulsar-client's bare Timeout / ConnectError."""
    import socket

    with socket.socket() as s:  # a port nothing listens on once it is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"pulsar://127.0.0.1:{port}"
    started = time.monotonic()
    with pytest.raises(errors.BrokerUnreachableError, match=f"{url} did not answer within 1500 ms") as caught:
        list(pcp.read_batches(url, "persistent://public/default/nowhere", timeout_ms=1500))
    assert caught.value.service_url == url
    assert time.monotonic() - started < 30
