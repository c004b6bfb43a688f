"""The REST facade against clients nobody here wrote: confluent-kafka's SchemaRegistryClient,
AvroSerializer and AvroDeserializer, plus raw HTTP checks of the Confluent error contract."""

from __future__ import annotations

import hashlib
import io
import json
import socket
import struct
import uuid
import warnings

import fastavro
import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from pulsar_codec.registry import ConfluentRegistry, LocalRegistry  # noqa: E402
from pulsar_codec.registry.server import CONTENT_TYPE, Faults, RegistryServer, serve  # noqa: E402

with warnings.catch_warnings():
    # confluent-kafka's schema-registry module imports authlib's deprecated httpx integration, and
    # authlib installs an "always" filter for its warnings when imported: put ours in front of it
    try:
        import authlib.deprecate  # noqa: F401
    except ImportError:
        pass
    warnings.simplefilter("ignore", DeprecationWarning)
    ck_sr = pytest.importorskip("confluent_kafka.schema_registry")
    ck_avro = pytest.importorskip("confluent_kafka.schema_registry.avro")
    from confluent_kafka.serialization import MessageField, SerializationContext

    SchemaRegistryError = ck_sr.error.SchemaRegistryError

EVENT_V1 = {
    "type": "record",
    "name": "Event",
    "namespace": "com.example",
    "fields": [{"name": "id", "type": "long"}, {"name": "kind", "type": "string"}],
}
EVENT_V2 = {
    "type": "record",
    "name": "Event",
    "namespace": "com.example",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "kind", "type": "string"},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}
EVENT_BAD = {  # kind becomes an int: cannot read version 1
    "type": "record",
    "name": "Event",
    "namespace": "com.example",
    "fields": [{"name": "id", "type": "long"}, {"name": "kind", "type": "int"}],
}


def text(schema) -> str:
    return json.dumps(schema)


@pytest.fixture
def reg():
    with LocalRegistry(":memory:") as registry:
        yield registry


@pytest.fixture
def server(reg):
    with serve(reg) as srv:
        yield srv


_OPEN_CLIENTS: list = []


def client(url, **conf):
    """A confluent-kafka client without retries; closed after the test (it holds sockets)."""
    c = ck_sr.SchemaRegistryClient({"url": url, "max.retries": 0, **conf})
    _OPEN_CLIENTS.append(c)
    return c


@pytest.fixture(autouse=True)
def _close_clients():
    yield
    while _OPEN_CLIENTS:
        _OPEN_CLIENTS.pop().close()


def avro_schema(schema):
    return ck_sr.Schema(text(schema), "AVRO")


def test_confluent_client_full_cycle(server, reg):
    c = client(server.url)
    v1 = c.register_schema("events-value", avro_schema(EVENT_V1))
    v2 = c.register_schema("events-value", avro_schema(EVENT_V2))
    assert (v1, v2) == (1, 2)
    assert reg.list_versions("events-value") == [1, 2]  # it reached our registry
    fresh = client(server.url)  # no cache: every call goes over HTTP
    assert json.loads(fresh.get_schema(v1).schema_str) == EVENT_V1
    latest = fresh.get_latest_version("events-value")
    assert (latest.schema_id, latest.version, latest.subject) == (2, 2, "events-value")
    first = fresh.get_version("events-value", 1)
    assert first.schema_id == 1 and json.loads(first.schema.schema_str) == EVENT_V1
    assert fresh.get_subjects() == ["events-value"]
    assert fresh.get_versions("events-value") == [1, 2]
    found = fresh.lookup_schema("events-value", avro_schema(EVENT_V1))
    assert (found.schema_id, found.version) == (1, 1)
    versions = fresh.get_schema_versions(2)
    assert [(v.subject, v.version) for v in versions] == [("events-value", 2)]
    assert fresh.get_subjects_by_schema_id(1) == ["events-value"]

    assert fresh.get_compatibility() == "BACKWARD"
    # a subject without a level of its own: 40408, as Confluent answers (the global level only
    # with defaultToGlobal=true, which our own client sends)
    with pytest.raises(SchemaRegistryError) as caught:
        fresh.get_compatibility("events-value")
    assert (caught.value.http_status_code, caught.value.error_code) == (404, 40408)
    ours = ConfluentRegistry(server.url)
    try:
        assert ours.get_compatibility("events-value") == "BACKWARD"
    finally:
        ours.close()
    fresh.set_compatibility(level="FULL")
    assert fresh.get_compatibility() == "FULL"
    fresh.set_compatibility("events-value", "none")
    assert fresh.get_compatibility("events-value") == "NONE"
    assert reg.get_compatibility("events-value") == "NONE"
    fresh.set_compatibility("events-value", "BACKWARD")

    assert fresh.test_compatibility("events-value", avro_schema(EVENT_V2))
    assert not fresh.test_compatibility("events-value", avro_schema(EVENT_BAD), version=1)
    assert fresh.test_compatibility_all_versions("events-value", avro_schema(EVENT_V2))

    with pytest.raises(SchemaRegistryError) as info:
        fresh.register_schema("events-value", avro_schema(EVENT_BAD))
    assert info.value.http_status_code == 409 and info.value.error_code == 409
    assert "kind" in info.value.error_message

    assert fresh.delete_version("events-value", 2) == 2
    assert fresh.get_versions("events-value") == [1]
    assert fresh.get_versions("events-value", deleted=True) == [1, 2]
    assert fresh.delete_subject("events-value") == [1]
    assert fresh.get_subjects() == []
    assert fresh.get_subjects(deleted=True) == ["events-value"]
    assert json.loads(fresh.get_schema(2).schema_str) == EVENT_V2  # ids stay readable
    assert fresh.delete_subject("events-value", permanent=True) == [1, 2]
    assert reg.list_subjects(deleted=True) == []


def test_confluent_client_errors(server):
    c = client(server.url)
    for call, status, code in [
        (lambda: c.get_schema(77), 404, 40403),
        (lambda: c.get_latest_version("missing"), 404, 40401),
        (lambda: c.get_version("missing", 1), 404, 40401),
        (lambda: c.lookup_schema("missing", avro_schema(EVENT_V1)), 404, 40401),
    ]:
        with pytest.raises(SchemaRegistryError) as info:
            call()
        assert (info.value.http_status_code, info.value.error_code) == (status, code)
    c.register_schema("s", avro_schema(EVENT_V1))
    with pytest.raises(SchemaRegistryError) as info:
        c.get_version("s", 5)
    assert info.value.error_code == 40402
    with pytest.raises(SchemaRegistryError) as info:
        c.lookup_schema("s", avro_schema(EVENT_V2))
    assert info.value.error_code == 40403
    with pytest.raises(SchemaRegistryError) as info:
        c.register_schema("s", ck_sr.Schema('{"type": "record", "name": "X"}', "AVRO"))
    assert (info.value.http_status_code, info.value.error_code) == (422, 42201)
    with pytest.raises(SchemaRegistryError) as info:
        c.set_compatibility("s", "SIDEWAYS")
    assert (info.value.http_status_code, info.value.error_code) == (422, 42203)
    with pytest.raises(SchemaRegistryError) as info:
        c.delete_subject("s", permanent=True)
    assert info.value.error_code == 40405


def test_json_schema_type_round_trip(server, reg):
    c = client(server.url)
    doc = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    schema_id = c.register_schema("j", ck_sr.Schema(doc, "JSON"))
    got = client(server.url).get_schema(schema_id)
    assert got.schema_type == "JSON" and json.loads(got.schema_str) == json.loads(doc)
    assert reg.get_schema(schema_id).schema_type == "JSON"


def test_avro_serializer_writes_through_the_facade(server, reg):
    c = client(server.url)
    serializer = ck_avro.AvroSerializer(c, text(EVENT_V1))
    ctx = SerializationContext("events", MessageField.VALUE)
    framed = serializer({"id": 7, "kind": "click"}, ctx)
    schema_id = reg.get_latest("events-value").id  # TopicNameStrategy
    assert framed[:5] == b"\x00" + struct.pack(">I", schema_id)
    body = fastavro.schemaless_reader(io.BytesIO(framed[5:]), fastavro.parse_schema(EVENT_V1), None)
    assert body == {"id": 7, "kind": "click"}


def test_avro_deserializer_reads_ids_the_local_registry_assigned(server, reg):
    reg.register("other-value", text(EVENT_V1))  # id 1 goes elsewhere, so the ids differ
    schema_id = reg.register("events-value", text(EVENT_V2))
    assert schema_id == 2
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(EVENT_V2), {"id": 3, "kind": "view", "note": "hi"})
    framed = b"\x00" + struct.pack(">I", schema_id) + out.getvalue()
    deserializer = ck_avro.AvroDeserializer(client(server.url))
    value = deserializer(framed, SerializationContext("events", MessageField.VALUE))
    assert value == {"id": 3, "kind": "view", "note": "hi"}


def test_subject_with_slash(server, reg):
    c = client(server.url)
    schema_id = c.register_schema("team/a-value", avro_schema(EVENT_V1))
    assert reg.get_latest("team/a-value").id == schema_id
    assert client(server.url).get_latest_version("team/a-value").schema_id == schema_id


# --------------------------------------------------------------------------------------------
# raw HTTP: the error contract and the query parameters


@pytest.fixture
def http(server):
    with httpx.Client(base_url=server.url, timeout=10) as h:
        yield h


def test_error_bodies_and_content_type(http):
    r = http.get("/schemas/ids/5")
    assert r.status_code == 404
    assert r.headers["content-type"] == CONTENT_TYPE
    assert r.json() == {"error_code": 40403, "message": "Schema 5 not found"}
    r = http.get("/associations/resources/-/events", params={"resourceType": "topic", "associationType": "value"})
    assert r.status_code == 404 and r.json()["error_code"] == 404
    assert http.get("/no/such/route").status_code == 404
    r = http.patch("/subjects")
    assert r.status_code == 405
    r = http.post("/subjects/s/versions", content=b"{not json", headers={"content-type": CONTENT_TYPE})
    assert r.status_code == 400
    r = http.post("/subjects/s/versions", json={"nothing": 1})
    assert (r.status_code, r.json()["error_code"]) == (422, 42201)
    r = http.post("/subjects/s/versions", json={"schema": "{}", "schemaType": "THRIFT"})
    assert (r.status_code, r.json()["error_code"]) == (422, 42201)
    r = http.post("/subjects/s/versions", json={"schema": text(EVENT_V1), "references": [{"name": "x"}]})
    assert (r.status_code, r.json()["error_code"]) == (422, 42201)
    r = http.get("/subjects/s/versions/abc")
    assert (r.status_code, r.json()["error_code"]) == (422, 42202)
    r = http.put("/config", json={})
    assert (r.status_code, r.json()["error_code"]) == (422, 42203)
    assert http.get("/").json() == {}
    assert http.get("/schemas/types").json() == ["AVRO", "JSON", "PROTOBUF"]
    assert http.get("/mode").json() == {"mode": "READWRITE"}


def guid_of(schema_text: str) -> str:
    """Confluent's GUID of a schema without references: the MD5 of its text, read as a UUID."""
    return str(uuid.UUID(bytes=hashlib.md5(schema_text.encode()).digest()))


def test_register_lookup_versions_and_params(http, reg):
    g1, g2 = guid_of(text(EVENT_V1)), guid_of(text(EVENT_V2))
    r = http.post("/subjects/a/versions?normalize=false&unknown=1", json={"schema": text(EVENT_V1)})
    # Confluent's full register answer (its newer versions; older clients read only "id")
    assert r.status_code == 200 and r.json() == {"id": 1, "version": 1, "schema": text(EVENT_V1), "guid": g1}
    assert http.post("/subjects/b/versions", json={"schema": text(EVENT_V1)}).json()["id"] == 1
    assert http.post("/subjects/b/versions", json={"schema": text(EVENT_V2)}).json()["id"] == 2
    r = http.post("/subjects/b", json={"schema": text(EVENT_V2)})
    assert r.json() == {"subject": "b", "version": 2, "id": 2, "schema": text(EVENT_V2), "guid": g2}
    assert http.get("/subjects/b/versions/latest").json()["version"] == 2
    assert json.loads(http.get("/subjects/b/versions/1/schema").text) == EVENT_V1
    assert json.loads(http.get("/schemas/ids/2/schema").text) == EVENT_V2
    assert http.get("/schemas/ids/1").json() == {"schema": text(EVENT_V1), "guid": g1}  # no schemaType for AVRO
    assert http.get(f"/schemas/guids/{g2}").json() == {"schema": text(EVENT_V2), "guid": g2}
    assert http.get("/schemas/ids/1/versions").json() == [
        {"subject": "a", "version": 1},
        {"subject": "b", "version": 1},
    ]
    assert http.get("/schemas/ids/1/versions", params={"subject": "b"}).json() == [{"subject": "b", "version": 1}]
    assert http.get("/subjects", params={"offset": 1}).json() == ["b"]
    assert http.get("/subjects", params={"limit": 1}).json() == ["a"]
    assert http.get("/subjects", params={"subjectPrefix": "b"}).json() == ["b"]
    assert http.delete("/subjects/a").json() == [1]
    assert http.get("/subjects").json() == ["b"]
    assert http.get("/subjects", params={"deleted": "true"}).json() == ["a", "b"]
    assert http.get("/subjects", params={"deleted_only": "true"}).json() == ["a"]
    assert http.get("/schemas/ids/1/versions").json() == [{"subject": "b", "version": 1}]
    assert http.get("/schemas/ids/1/versions", params={"deleted": "true"}).json() == [
        {"subject": "a", "version": 1},
        {"subject": "b", "version": 1},
    ]
    assert http.delete("/subjects/b/versions/1").json() == 1
    assert http.get("/subjects/b/versions", params={"deleted_only": "true"}).json() == [1]
    assert http.get("/subjects/b/versions/1", params={"deleted": "true"}).json()["id"] == 1
    r = http.delete("/subjects/b/versions/1")
    assert (r.status_code, r.json()["error_code"]) == (404, 40406)
    assert http.delete("/subjects/b/versions/1", params={"permanent": "true"}).json() == 1
    r = http.delete("/subjects/a", params={"permanent": "true"})
    assert r.json() == [1]
    r = http.delete("/subjects/a")
    assert (r.status_code, r.json()["error_code"]) == (404, 40401)


def test_compatibility_endpoint_and_config(http):
    http.post("/subjects/s/versions", json={"schema": text(EVENT_V1)})
    r = http.post(
        "/compatibility/subjects/s/versions/latest", json={"schema": text(EVENT_BAD)}, params={"verbose": "true"}
    )
    body = r.json()
    assert body["is_compatible"] is False
    assert any("/fields/1/type" in m and "Event.kind" in m for m in body["messages"])
    r = http.post("/compatibility/subjects/s/versions/latest", json={"schema": text(EVENT_V2)})
    assert r.json() == {"is_compatible": True}
    r = http.post("/compatibility/subjects/s/versions", json={"schema": text(EVENT_V2)}, params={"verbose": "true"})
    assert r.json() == {"is_compatible": True, "messages": []}
    r = http.post("/compatibility/subjects/new/versions/latest", json={"schema": text(EVENT_V2)})
    assert r.json() == {"is_compatible": True}
    r = http.post("/compatibility/subjects/s/versions/9", json={"schema": text(EVENT_V2)})
    assert (r.status_code, r.json()["error_code"]) == (404, 40402)

    assert http.get("/config").json() == {"compatibilityLevel": "BACKWARD"}
    assert http.put("/config/s", json={"compatibility": "FORWARD"}).json() == {"compatibility": "FORWARD"}
    assert http.get("/config/s").json() == {"compatibilityLevel": "FORWARD"}
    assert http.delete("/config/s").json() == {"compatibilityLevel": "FORWARD"}
    gone = http.get("/config/s")  # no level of its own: Confluent's 40408 unless defaultToGlobal
    assert (gone.status_code, gone.json()["error_code"]) == (404, 40408)
    assert http.get("/config/s", params={"defaultToGlobal": "true"}).json() == {"compatibilityLevel": "BACKWARD"}
    http.put("/config", json={"compatibility": "FULL_TRANSITIVE"})
    assert http.delete("/config").json() == {"compatibilityLevel": "FULL_TRANSITIVE"}
    assert http.get("/config").json() == {"compatibilityLevel": "BACKWARD"}


# --------------------------------------------------------------------------------------------
# auth, deliberate failures, lifecycle


def test_basic_auth(reg):
    with serve(reg, auth=("alice", "s3cret")) as srv:
        with httpx.Client(base_url=srv.url) as h:
            r = h.get("/subjects")
            assert r.status_code == 401 and r.json()["error_code"] == 401
            assert "Basic" in r.headers["www-authenticate"]
            assert h.get("/subjects", auth=("alice", "wrong")).status_code == 401
            assert h.get("/subjects", auth=("bob", "s3cret")).status_code == 401
            assert h.get("/subjects", headers={"Authorization": "Basic !!!"}).status_code == 401
            assert h.get("/subjects", auth=("alice", "s3cret")).status_code == 200
        ok = client(srv.url, **{"basic.auth.user.info": "alice:s3cret"})
        assert ok.register_schema("s", avro_schema(EVENT_V1)) == 1
        with pytest.raises(SchemaRegistryError) as info:
            client(srv.url).get_subjects()
        assert info.value.http_status_code == 401


def test_bearer_token(reg):
    with serve(reg, token="tok-123") as srv, httpx.Client(base_url=srv.url) as h:
        assert h.get("/subjects").status_code == 401
        assert h.get("/subjects", headers={"Authorization": "Bearer nope"}).status_code == 401
        assert h.get("/subjects", headers={"Authorization": "Bearer tok-123"}).status_code == 200


def test_faults_fail_then_recover(reg):
    faults = Faults(fail_next=2)
    with serve(reg, faults=faults) as srv, httpx.Client(base_url=srv.url) as h:
        first, second, third = (h.get("/subjects") for _ in range(3))
        assert [first.status_code, second.status_code, third.status_code] == [503, 503, 200]
        assert first.json()["message"] == "injected failure"
        assert faults.requests == 3


def test_server_owning_a_database_path_stops_cleanly(tmp_path):
    path = tmp_path / "srv.db"
    srv = RegistryServer(path)
    srv.start()
    assert srv.start() is srv  # starting twice is harmless
    assert "127.0.0.1" in repr(srv)
    with httpx.Client(base_url=srv.url) as h:
        assert h.post("/subjects/s/versions", json={"schema": text(EVENT_V1)}).json()["id"] == 1
    port = srv.port
    srv.stop()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # nobody listens any more
    with LocalRegistry(path) as reopened:
        assert reopened.get_latest("s").id == 1


# --------------------------------------------------------------------------------------------
# hostile input: no 500, no unbounded memory


@pytest.mark.parametrize(
    "path",
    [
        "/schemas/ids/99999999999999999999999",
        "/schemas/ids/9223372036854775808",  # one past SQLite's integer range
        "/schemas/ids/99999999999999999999999/schema",
        "/schemas/ids/99999999999999999999999/versions",
        "/schemas/ids/99999999999999999999999/subjects",
        "/schemas/ids/-1",
        "/schemas/ids/abc",
        "/schemas/ids/1e3",
        "/schemas/ids/1_0",
        "/schemas/ids/%201",
    ],
)
def test_ids_out_of_range_or_not_integers_are_404(http, path):
    r = http.get(path)
    assert r.status_code == 404
    assert r.json()["error_code"] == 40403


def nested_arrays(depth):
    return '{"type": "array", "items": ' * depth + '"int"' + "}" * depth


def nested_records(depth):
    inner = '"int"'
    for i in range(depth):
        inner = f'{{"type": "record", "name": "R{i}", "fields": [{{"name": "f", "type": {inner}}}]}}'
    return inner


@pytest.mark.parametrize("schema", [nested_arrays(5000), nested_records(3000)], ids=["arrays", "records"])
def test_deeply_nested_schemas_are_422_not_500(http, reg, schema):
    reg.register("s", text(EVENT_V1))
    for path in ("/subjects/s/versions", "/subjects/s", "/compatibility/subjects/s/versions/latest"):
        r = http.post(path, json={"schema": schema})
        assert r.status_code == 422, (path, r.text)
        body = r.json()
        assert body["error_code"] == 42201 and body["message"].startswith("Invalid schema")
        assert "RecursionError" not in body["message"] and "Internal" not in body["message"]
    assert reg.list_versions("s") == [1]


def test_deeply_nested_request_json_is_400(http):
    r = http.post("/subjects/s/versions", content=b"[" * 200_000 + b"]" * 200_000)
    assert r.status_code == 400 and r.json()["error_code"] == 400


def read_http_response(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
    while len(rest) < length:
        rest += sock.recv(65536)
    return status, head, json.loads(rest[:length])


def test_body_over_the_limit_is_413_on_its_content_length(server, reg, http):
    size = 64 * 2**20
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(
            b"POST /subjects/s/versions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {size}\r\n\r\n".encode()
            + b'{"schema": "'
            + b" " * 65536
        )  # the rest of the 64 MB never comes: the answer must not wait for it
        status, head, body = read_http_response(sock)
    assert status == 413
    assert b"connection: close" in head.lower()
    assert body["error_code"] == 413 and str(16 * 2**20) in body["message"]
    assert reg.list_subjects() == []
    assert http.get("/subjects").json() == []  # the server is fine


def call_app(app, method, path, headers, chunks):
    """Run one request through the ASGI app in-process; ``chunks`` is an iterator of body pieces,
    pulled only when the app asks. Returns (status, JSON body, number of pieces pulled)."""
    import asyncio

    pulled = [0]
    sent = []
    pieces = iter(chunks)

    async def receive():
        piece = next(pieces, None)
        if piece is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        pulled[0] += 1
        return {"type": "http.request", "body": piece, "more_body": True}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 1234),
    }
    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body), pulled[0]


def megabytes(count):
    piece = b" " * 2**20  # one buffer handed out again and again: the test itself holds 1 MiB
    for _ in range(count):
        yield piece


def test_oversize_content_length_is_refused_before_any_body_is_read(reg):
    from pulsar_codec.registry.server import create_app

    app = create_app(reg)
    headers = {"content-type": "application/json", "content-length": str(64 * 2**20)}
    status, body, pulled = call_app(app, "POST", "/subjects/s/versions", headers, megabytes(64))
    assert (status, body["error_code"], pulled) == (413, 413, 0)


def test_chunked_body_is_counted_while_streaming_and_memory_stays_bounded(reg):
    import tracemalloc

    from pulsar_codec.registry.server import create_app

    app = create_app(reg)  # the default limit, 16 MiB
    tracemalloc.start()
    try:
        status, body, pulled = call_app(app, "POST", "/subjects/s/versions", {}, megabytes(64))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (status, body["error_code"]) == (413, 413)
    assert pulled == 17  # stopped at the first piece past 16 MiB, not at 64
    assert peak < 40 * 2**20  # the 16 MiB kept plus copies while it grew; never the 64 MB
    assert reg.list_subjects() == []


def test_body_limit_is_configurable(reg):
    from pulsar_codec.registry.server import create_app

    app = create_app(reg, max_request_bytes=200)
    small = json.dumps({"schema": '"int"'}).encode()
    large = json.dumps({"schema": text(EVENT_V2)}).encode()
    assert len(small) <= 200 < len(large)
    status, body, _ = call_app(app, "POST", "/subjects/s/versions", {}, [small])
    assert (status, body["id"]) == (200, 1)
    status, body, _ = call_app(app, "POST", "/subjects/t/versions", {"content-length": str(len(large))}, [large])
    assert status == 413 and "200 bytes" in body["message"]
    status, _, _ = call_app(app, "POST", "/subjects/t/versions", {}, [large[:150], large[150:]])
    assert status == 413
    assert reg.list_subjects() == ["s"]


def test_sixteen_concurrent_clients_get_no_errors(server, reg):
    from concurrent.futures import ThreadPoolExecutor

    from pulsar_codec.registry import ConfluentRegistry

    def work(worker):
        with ConfluentRegistry(server.url, retries=0, timeout=30, total_timeout=None) as c:
            ids = []
            for i in range(8):
                schema = {
                    "type": "record",
                    "name": "Event",
                    "fields": [{"name": f"f{(worker + i) % 4}", "type": "long", "default": 0}],
                }
                subject = f"subject-{worker % 4}"
                ids.append(c.register(subject, text(schema)))
                assert c.get_schema(ids[-1]).schema_type == "AVRO"
                c.list_versions(subject)
            return ids

    reg.set_compatibility("NONE")
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(work, range(16)))
    assert len({i for ids in results for i in ids}) == 4  # four distinct schemas, four ids
    for subject in reg.list_subjects():
        versions = reg.list_versions(subject)
        assert versions == list(range(1, len(versions) + 1))


def test_a_server_on_a_file_answers_a_retriable_error_before_a_client_gives_up(tmp_path, monkeypatch):
    """Opened from a path, the server waits at most SERVER_LOCK_TIMEOUT for another process's
    write lock, then answers 500 / 50001, which the client retries: a registration made while the
    lock is held succeeds once it is released, and never after its client has given up."""
    import sqlite3
    import threading
    import time

    from pulsar_codec.registry import server as server_module

    monkeypatch.setattr(server_module, "SERVER_LOCK_TIMEOUT", 0.3)
    path = tmp_path / "schemas.db"
    LocalRegistry(path).close()
    with serve(path) as srv:
        assert srv.registry.config.timeout == 0.3
        holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")
        release = threading.Timer(0.5, lambda: holder.execute("ROLLBACK"))
        try:
            with httpx.Client(base_url=srv.url) as h:  # one attempt: the server's own answer
                body = {"schema": '{"type": "string"}'}
                answer = h.post("/subjects/s/versions", json=body, headers={"Content-Type": CONTENT_TYPE})
                assert answer.status_code == 500 and answer.json()["error_code"] == 50001
            release.start()  # the lock goes while the client retries
            start = time.monotonic()
            with ConfluentRegistry(srv.url, total_timeout=10.0) as client:
                schema_id = client.register("s", '{"type": "string"}')
            assert time.monotonic() - start < 10.0
        finally:
            release.cancel()  # not started, or done: nothing to stop
            if release.is_alive():
                release.join()
            if holder.in_transaction:
                holder.execute("ROLLBACK")
            holder.close()
        assert srv.registry.get_schema(schema_id).schema == '{"type": "string"}'
