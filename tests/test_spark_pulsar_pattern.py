"""``topics_pattern`` of format("pulsar"): topics listed through the Pulsar admin REST API.

pulsar-lite has no web service, so the admin API's topic list is served here by a small stdlib
HTTP server on 127.0.0.1: ``GET /admin/v2/namespaces/{tenant}/{namespace}/topics?mode=...``
answers, as a Pulsar broker does, the JSON list of the namespace's full topic names (partitions as
``<topic>-partition-<n>``), or 404 for an unknown namespace. The names it serves in the Spark tests
are those of topics that exist on the pulsar-lite broker, where the rows come from.
"""

from __future__ import annotations

import io
import json
import pickle
import re
import socket
import struct
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import fastavro
import pytest

from pulsar_codec.errors import SchemaError
from pulsar_codec.pulsar.admin import PulsarAdminError, TopicPattern, matching_topics, namespace_topics

pytest_plugins = ["spark_fixtures", "pulsar_fixtures"]

USER = {
    "type": "record",
    "name": "User",
    "namespace": "t",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
}
_TOPICS_PATH = re.compile(r"/admin/v2/namespaces/([^/]+)/([^/]+)/topics")
_DOMAIN_OF_MODE = {"PERSISTENT": ("persistent://",), "NON_PERSISTENT": ("non-persistent://",)}


class AdminStub:
    """The namespace topic lists of a Pulsar admin API, and the requests it was sent."""

    def __init__(self) -> None:
        self.namespaces: dict[str, list[str]] = {}
        self.requests: list[dict[str, Any]] = []
        self.status: int | None = None  # answer every request with this status instead
        self.body: bytes | None = None  # answer every request with these bytes (status 200) instead
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                url = urlsplit(self.path)
                query = parse_qs(url.query)
                with stub._lock:
                    stub.requests.append(
                        {"path": url.path, "query": query, "authorization": self.headers.get("Authorization")}
                    )
                    found = _TOPICS_PATH.fullmatch(url.path)
                    namespace = None if found is None else f"{unquote(found[1])}/{unquote(found[2])}"
                    names = None if namespace is None else stub.namespaces.get(namespace)
                    status, body = stub.status, stub.body
                if body is not None:
                    self._answer(200, None, body)
                elif status is not None:
                    self._answer(status, {"reason": "Don't have admin permission"})
                elif names is None:
                    self._answer(404, {"reason": "Namespace does not exist"})
                else:
                    mode = query.get("mode", ["PERSISTENT"])[0]
                    prefixes = _DOMAIN_OF_MODE.get(mode, ("persistent://", "non-persistent://"))
                    self._answer(200, [n for n in names if n.startswith(prefixes)])

            def _answer(self, status: int, body: Any, raw: bytes | None = None) -> None:
                data = json.dumps(body).encode() if raw is None else raw
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def list_topics(self, namespace: str, *names: str) -> None:
        with self._lock:
            self.namespaces.setdefault(namespace, []).extend(names)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def admin() -> Iterator[AdminStub]:
    stub = AdminStub()
    try:
        yield stub
    finally:
        stub.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the pattern and the listing ----------------------------------------------------------------------


def test_pattern_names_namespace_domain_and_regex():
    short = TopicPattern.parse("orders-.*")
    assert (short.regex, short.namespace, short.mode) == (
        "persistent://public/default/orders-.*",
        "public/default",
        "PERSISTENT",
    )
    assert TopicPattern.parse("acme/sales/orders-\\d+").regex == "persistent://acme/sales/orders-\\d+"
    assert TopicPattern.parse("non-persistent://acme/sales.eu/.*").namespace == "acme/sales.eu"
    assert TopicPattern.parse("non-persistent://acme/sales.eu/.*").mode == "NON_PERSISTENT"
    for regex_namespace in ("persistent://public/def.*/orders", "persistent://(a|b)/default/x", "acme/[a-z]+/x"):
        with pytest.raises(ValueError, match="must be written literally"):
            TopicPattern.parse(regex_namespace)
    with pytest.raises(ValueError, match="domain must be 'persistent' or 'non-persistent'"):
        TopicPattern.parse("(non-)?persistent://public/default/x")
    with pytest.raises(ValueError, match="not a valid regular expression"):
        TopicPattern.parse("orders-(")
    with pytest.raises(ValueError, match="tenant/namespace/topic-regex"):
        TopicPattern.parse("public/orders")


def test_listing_selects_matching_topics_and_collapses_partitions(admin):
    ns = "persistent://acme/sales"
    admin.list_topics(
        "acme/sales",
        f"{ns}/orders-eu-partition-0",
        f"{ns}/orders-eu-partition-1",
        f"{ns}/orders-us",
        f"{ns}/orders-us-archive",  # matched by a prefix, not entirely: excluded
        f"{ns}/payments",
        "non-persistent://acme/sales/orders-live",
    )
    assert matching_topics(admin.url, "acme/sales/orders-(eu|us)") == (f"{ns}/orders-eu", f"{ns}/orders-us")
    assert admin.requests[-1]["path"] == "/admin/v2/namespaces/acme/sales/topics"
    assert admin.requests[-1]["query"] == {"mode": ["PERSISTENT"]}
    assert admin.requests[-1]["authorization"] is None
    assert matching_topics(admin.url, "non-persistent://acme/sales/orders-.*") == (
        "non-persistent://acme/sales/orders-live",
    )
    assert admin.requests[-1]["query"] == {"mode": ["NON_PERSISTENT"]}
    assert matching_topics(admin.url + "/", "acme/sales/refunds-.*", token="s3cret") == ()
    assert admin.requests[-1]["authorization"] == "Bearer s3cret"
    assert len(namespace_topics(admin.url, "acme/sales", mode="ALL")) == 6


def test_listing_errors_name_the_url(admin):
    with pytest.raises(PulsarAdminError, match="answered 404 Not Found to GET .*/namespaces/acme/none/topics") as exc:
        matching_topics(admin.url, "acme/none/.*")
    assert exc.value.status == 404 and "Namespace does not exist" in str(exc.value)
    assert exc.value.url == f"{admin.url}/admin/v2/namespaces/acme/none/topics?mode=PERSISTENT"
    admin.list_topics("public/default", "persistent://public/default/a")
    admin.status = 401
    with pytest.raises(PulsarAdminError, match="answered 401") as exc:
        matching_topics(admin.url, "a", token="wrong")
    assert "wrong" not in str(exc.value)
    port = closed_port()
    with pytest.raises(PulsarAdminError, match=f"admin API at http://127.0.0.1:{port}/admin/v2/.* is unreachable"):
        matching_topics(f"http://127.0.0.1:{port}", "a", timeout_ms=2_000)
    with pytest.raises(ValueError, match="http"):
        namespace_topics("pulsar://127.0.0.1:6650", "public/default")


def test_answers_that_are_no_topic_list_are_errors(admin):
    admin.body = b'{"topics": []}'
    with pytest.raises(PulsarAdminError, match="answer of http://127.0.0.1:.* is not a JSON list of topic names"):
        matching_topics(admin.url, "a")
    admin.body = b'["persistent://public/default/a", 7]'
    with pytest.raises(PulsarAdminError, match="not a JSON list of topic names"):
        matching_topics(admin.url, "a")
    admin.body = b"<html>login</html>"
    with pytest.raises(PulsarAdminError, match="is not JSON"):
        matching_topics(admin.url, "a")


# -- options and the plan ----------------------------------------------------------------------------


@pytest.fixture
def source_module() -> Any:
    pytest.importorskip("pyspark")
    pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")
    from pulsar_codec.integrations.spark import pulsar_source

    return pulsar_source


def test_options_refused_before_any_listing(admin, source_module):
    SourcePlan = source_module.SourcePlan

    base = {"service_url": "pulsar://127.0.0.1:6650", "decode": "false"}
    with pytest.raises(ValueError, match="'topics_pattern' needs the option 'admin_url'"):
        SourcePlan.from_options({**base, "topics_pattern": "orders-.*"})
    with pytest.raises(ValueError, match="'topics' or the option 'topics_pattern', not both"):
        SourcePlan.from_options({**base, "topics": "a", "topics_pattern": "a.*", "admin_url": admin.url})
    with pytest.raises(ValueError, match="written literally"):
        SourcePlan.from_options({**base, "topics_pattern": "public/.*/a", "admin_url": admin.url})
    with pytest.raises(ValueError, match="admin_url"):
        SourcePlan.from_options({**base, "topics_pattern": "a.*", "admin_url": "127.0.0.1:8080"})
    assert admin.requests == []


def test_plan_lists_once_pickles_and_hides_the_token(admin, source_module, tmp_path):
    from pulsar_codec.registry import LocalRegistry

    SourcePlan, PulsarDataSource = source_module.SourcePlan, source_module.PulsarDataSource

    admin.list_topics(
        "public/default", "persistent://public/default/pat-one", "persistent://public/default/other-partition-0"
    )
    options = {
        "service_url": "pulsar://127.0.0.1:6650",
        "topics_pattern": "pat-.*",
        "admin_url": admin.url,
        "admin_token": "tok-123",
        "timeout_ms": "5000",
    }
    plan = SourcePlan.from_options({**options, "decode": "false"})
    assert plan.topics == ("persistent://public/default/pat-one",)
    assert plan.pattern is not None and plan.pattern.timeout_ms == 5000
    assert "tok-123" not in repr(plan)
    assert len(admin.requests) == 1 and admin.requests[0]["authorization"] == "Bearer tok-123"
    # one match: its <topic>-value subject is the reader schema, as for one named topic
    registry = tmp_path / "schemas.db"
    with LocalRegistry(registry) as reg:
        reg.register("pat-one-value", json.dumps(USER))
    decoded = SourcePlan.from_options({**options, "registry": str(registry)})
    assert decoded.value is not None and decoded.spark_schema()["value"].dataType.simpleString() == (
        "struct<id:bigint,name:string>"
    )
    again = pickle.loads(pickle.dumps(plan))
    assert again == plan
    admin.list_topics("public/default", "persistent://public/default/pat-two")
    assert again.current_topics() == ("persistent://public/default/pat-one", "persistent://public/default/pat-two")
    assert plan.topics == ("persistent://public/default/pat-one",)  # the batch plan keeps its list

    # several matches (pat-one, pat-two): the existing rule, the subject must be named
    with pytest.raises(SchemaError, match="several topics"):
        SourcePlan.from_options({**options, "registry": str(registry)})
    # no match: a batch read is refused; a default subject cannot exist
    nothing = {**options, "topics_pattern": "none-.*"}
    with pytest.raises(ValueError, match="topics_pattern 'none-.\\*' matches no topic of the namespace public/default"):
        PulsarDataSource({**nothing, "decode": "false"}).reader(None)
    with pytest.raises(SchemaError, match="no topic \\(topics_pattern matches none yet\\)"):
        SourcePlan.from_options({**nothing, "registry": str(registry)})


# -- through Spark on pulsar-lite ---------------------------------------------------------------------


def framed(schema_id: int, record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(USER), record)
    return b"\x00" + struct.pack(">I", schema_id) + out.getvalue()


def produce(client: Any, topic: str, schema_id: int, ids: range) -> None:
    producer = client.create_producer(topic, batching_enabled=False)
    for i in ids:
        producer.send(framed(schema_id, {"id": i, "name": topic}))
    producer.close()


@pytest.fixture
def registered(spark):
    from pulsar_codec import spark as pcs

    pcs.register(spark)


@pytest.mark.slow
def test_batch_read_of_a_pattern(spark, registered, pulsar_broker, pulsar_client, admin, tmp_path):
    from pulsar_codec.registry import LocalRegistry

    stem = f"persistent://public/default/pat-{uuid.uuid4().hex[:8]}"
    with LocalRegistry(tmp_path / "schemas.db") as reg:
        sid = reg.register("users-value", json.dumps(USER))
    sent = {f"{stem}-eu": range(0, 3), f"{stem}-us": range(10, 12), f"{stem}-archive": range(20, 22)}
    for topic, ids in sent.items():
        produce(pulsar_client, topic, sid, ids)
    admin.list_topics("public/default", *sent)
    df = (
        spark.read.format("pulsar")
        .option("service_url", pulsar_broker.url)
        .option("topics_pattern", f"{stem.rsplit('/', 1)[1]}-(eu|us)")
        .option("admin_url", admin.url)
        .option("registry", str(tmp_path / "schemas.db"))
        .option("subject", "users-value")
        .load()
    )
    rows = df.select("topic", "value.id", "value.name", "decode_error").collect()
    assert sorted((r["topic"], r["id"]) for r in rows) == [
        (topic, i) for topic in (f"{stem}-eu", f"{stem}-us") for i in sent[topic]
    ]
    assert all(r["name"] == r["topic"] and r["decode_error"] is None for r in rows)
    assert len(admin.requests) == 1  # listed once, when the query was planned


@pytest.mark.slow
def test_stream_picks_up_a_new_matching_topic(spark, registered, pulsar_broker, pulsar_client, admin, tmp_path):
    from pulsar_codec.registry import LocalRegistry

    stem = f"persistent://public/default/live-{uuid.uuid4().hex[:8]}"
    with LocalRegistry(tmp_path / "schemas.db") as reg:
        sid = reg.register("users-value", json.dumps(USER))
    first, second, unrelated = f"{stem}-a", f"{stem}-b", f"{stem}x-c"
    produce(pulsar_client, first, sid, range(0, 3))
    produce(pulsar_client, unrelated, sid, range(90, 92))
    admin.list_topics("public/default", first, unrelated)
    name = f"pattern_{uuid.uuid4().hex[:8]}"
    query = (
        spark.readStream.format("pulsar")
        .option("service_url", pulsar_broker.url)
        .option("topics_pattern", f"{stem.rsplit('/', 1)[1]}-[a-z]")
        .option("admin_url", admin.url)
        .option("admin_token", "stream-token")
        .option("registry", str(tmp_path / "schemas.db"))
        .option("subject", "users-value")
        .option("starting_offsets", "latest")  # for the topics of the start; a new one reads from earliest
        .load()
        .select("topic", "value.id")
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        query.processAllAvailable()
        assert spark.table(name).count() == 0  # the existing messages lie before 'latest'
        produce(pulsar_client, first, sid, range(3, 5))
        produce(pulsar_client, second, sid, range(10, 14))  # a topic created while the query runs
        admin.list_topics("public/default", second)
        query.processAllAvailable()
        rows = sorted((r["topic"], r["id"]) for r in spark.table(name).collect())
    finally:
        query.stop()
    assert query.exception() is None
    assert rows == [(first, 3), (first, 4)] + [(second, i) for i in range(10, 14)]
    assert len(admin.requests) > 2  # listed again for the micro-batches
    assert {r["authorization"] for r in admin.requests} == {"Bearer stream-token"}
