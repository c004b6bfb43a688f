"""The HTTP client against the REST facade, for real: every operation (as a contract shared with
the embedded registry), caches, timeouts, retries, auth and keeping credentials out of sight."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time

import pytest

pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from pulsar_codec.errors import (  # noqa: E402
    IncompatibleSchemaError,
    RegistryError,
    RegistryUnreachableError,
    SchemaError,
    SchemaNotFoundError,
)
from pulsar_codec.registry import ConfluentRegistry, LocalRegistry, RegisteredSchema  # noqa: E402
from pulsar_codec.registry.server import Faults, RegistryServer, serve  # noqa: E402


def record(*fields):
    return json.dumps({"type": "record", "name": "Event", "fields": list(fields)})


A = {"name": "a", "type": "int"}
B_REQ = {"name": "b", "type": "string"}
B_OPT = {"name": "b", "type": "string", "default": ""}
V1, V2 = record(A), record(A, B_OPT)
BAD = record({"name": "a", "type": "string"})


@pytest.fixture
def local():
    with LocalRegistry(":memory:") as reg:
        yield reg


@pytest.fixture
def server(local):
    with serve(local) as srv:
        yield srv


@pytest.fixture(params=["local", "http"])
def registry(request, local):
    """The same contract, run on the embedded registry and on the client talking to the facade."""
    if request.param == "local":
        yield local
        return
    with serve(local) as srv, ConfluentRegistry(srv.url, retries=0) as client:
        yield client


def error_code(exc_info):
    return getattr(exc_info.value, "error_code", None)


# --------------------------------------------------------------------------------------------
# the contract


def test_contract_register_and_read(registry):
    assert registry.register("s", V1) == 1
    assert registry.register("s", json.loads(V1)) == 1
    assert registry.register("t", V1) == 1
    assert registry.register("s", V2) == 2
    got = registry.get_schema(2)
    assert got == RegisteredSchema(2, V2, "AVRO") and got.schema_type == "AVRO"
    assert registry.get_latest("s") == RegisteredSchema(2, V2, "AVRO", "s", 2)
    assert registry.get_version("s", 1) == RegisteredSchema(1, V1, "AVRO", "s", 1)
    assert registry.get_version("s", -1).version == 2
    assert registry.lookup("t", V1) == RegisteredSchema(1, V1, "AVRO", "t", 1)
    assert registry.list_subjects() == ["s", "t"]
    assert registry.list_versions("s") == [1, 2]
    assert registry.get_schema_versions(1) == [("s", 1), ("t", 1)]
    js = json.dumps({"type": "object"})
    js_id = registry.register("j", js, schema_type="JSON")
    assert registry.get_schema(js_id).schema_type == "JSON"
    assert registry.lookup("j", js, schema_type="JSON").id == js_id


def test_contract_errors(registry):
    registry.register("s", V1)
    for call, exc_type, code in [
        (lambda: registry.get_schema(404), SchemaNotFoundError, 40403),
        (lambda: registry.get_latest("nope"), SchemaNotFoundError, 40401),
        (lambda: registry.get_version("s", 9), SchemaNotFoundError, 40402),
        (lambda: registry.lookup("s", V2), SchemaNotFoundError, 40403),
        (lambda: registry.list_versions("nope"), SchemaNotFoundError, 40401),
        (lambda: registry.register("s", BAD), IncompatibleSchemaError, None),
        (lambda: registry.register("s", '{"type": "record", "name": "X"}'), SchemaError, None),
        (lambda: registry.delete_subject("s", permanent=True), RegistryError, 40405),
        (lambda: registry.get_version("s", "first"), RegistryError, 42202),
    ]:
        with pytest.raises(exc_type) as info:
            call()
        if code is not None:
            assert error_code(info) == code
    with pytest.raises(IncompatibleSchemaError) as info:
        registry.register("s", BAD)
    assert any("/fields/0/type" in r for r in info.value.reasons)
    with pytest.raises(ValueError):
        registry.set_compatibility("SIDEWAYS")


def test_contract_deletes(registry):
    registry.register("s", V1)
    registry.register("s", V2)
    assert registry.delete_version("s", 2) == 2
    assert registry.list_versions("s") == [1]
    assert registry.list_versions("s", deleted=True) == [1, 2]
    assert registry.get_version("s", 2, deleted=True).id == 2
    assert registry.lookup("s", V2, deleted=True).version == 2
    assert registry.get_schema_versions(2) == []
    assert registry.get_schema_versions(2, deleted=True) == [("s", 2)]
    assert registry.delete_subject("s") == [1]
    assert registry.list_subjects() == []
    assert registry.list_subjects(deleted=True) == ["s"]
    assert registry.get_schema(1).schema == V1
    assert registry.register("s", V1) == 1  # back as version 3
    assert registry.list_versions("s") == [3]
    assert registry.delete_subject("s") == [3]
    assert registry.delete_subject("s", permanent=True) == [2, 3]
    assert registry.delete_version  # noqa: B018  (exists on both)
    with pytest.raises(SchemaNotFoundError):
        registry.list_versions("s", deleted=True)


def test_contract_compatibility(registry):
    assert registry.get_compatibility() == "BACKWARD"
    assert registry.check_compatibility("fresh", V1)
    registry.register("s", V1)
    assert registry.check_compatibility("s", V2)
    result = registry.check_compatibility("s", BAD)
    assert not result and any("/fields/0/type" in r for r in result.reasons)
    assert not registry.check_compatibility("s", record(A, B_REQ), version=1)
    assert registry.check_compatibility("s", V2, version=None)
    assert registry.set_compatibility("none", "s") == "NONE"
    assert registry.get_compatibility("s") == "NONE"
    assert registry.get_compatibility() == "BACKWARD"
    assert registry.register("s", BAD) == 2
    registry.delete_compatibility("s")
    assert registry.get_compatibility("s") == "BACKWARD"
    assert registry.set_compatibility("FULL_TRANSITIVE") == "FULL_TRANSITIVE"
    assert registry.get_compatibility("s") == "FULL_TRANSITIVE"


# --------------------------------------------------------------------------------------------
# client behaviour


def test_caches_save_round_trips(local):
    faults = Faults()
    with serve(local, faults=faults) as srv, ConfluentRegistry(srv.url) as client:
        schema_id = client.register("s", V1)
        assert client.register("s", json.dumps(json.loads(V1), indent=2)) == schema_id  # cached, same canonical form
        seen = faults.requests
        assert client.get_schema(schema_id).schema == V1
        assert client.get_schema(schema_id).schema == V1
        assert faults.requests == seen + 1
        client.delete_subject("s")
        seen = faults.requests
        assert client.register("s", V1) == schema_id  # a delete forgets the subject's registrations
        assert faults.requests == seen + 1
        assert local.list_versions("s") == [2]
        client.clear_caches()
        client.get_schema(schema_id)
        assert faults.requests == seen + 2
    with serve(local, faults=faults) as srv, ConfluentRegistry(srv.url, cache_size=0) as client:
        seen = faults.requests
        client.get_schema(1)
        client.get_schema(1)
        assert faults.requests == seen + 2


def test_read_timeout(local):
    faults = Faults(delay=1.0)
    with (
        serve(local, faults=faults) as srv,
        ConfluentRegistry(srv.url, timeout=(2.0, 0.2), retries=1, backoff=0.01) as c,
    ):
        start = time.monotonic()
        with pytest.raises(RegistryError, match=r"timed out after 2 attempt\(s\): ReadTimeout"):
            c.list_subjects()
        assert time.monotonic() - start < 0.9  # two short waits, not the server's delay
        assert faults.requests == 2
        faults.delay = 0.0
        assert c.list_subjects() == []


def test_retries_5xx_then_succeeds(local, caplog):
    faults = Faults(fail_next=2)
    with serve(local, faults=faults) as srv, ConfluentRegistry(srv.url, retries=3, backoff=0.01) as c:
        with caplog.at_level(logging.WARNING, logger="pulsar_codec.registry.http"):
            assert c.register("s", V1) == 1
        assert faults.requests == 3
        retries = [r for r in caplog.records if "retrying" in r.getMessage()]
        assert len(retries) == 2 and "HTTP 503" in retries[0].getMessage()


def test_gives_up_after_the_retries(local):
    faults = Faults(fail_next=10, fail_status=502)
    with serve(local, faults=faults) as srv, ConfluentRegistry(srv.url, retries=2, backoff=0.01) as c:
        with pytest.raises(RegistryError, match=r"after 3 attempt\(s\)") as info:
            c.list_subjects()
        assert info.value.status == 502
        assert faults.requests == 3


def test_no_retry_on_4xx(local):
    faults = Faults()
    with serve(local, faults=faults) as srv, ConfluentRegistry(srv.url, retries=5, backoff=0.01) as c:
        c.register("s", V1)
        seen = faults.requests
        with pytest.raises(SchemaNotFoundError):
            c.get_schema(77)
        with pytest.raises(IncompatibleSchemaError):
            c.register("s", BAD)
        with pytest.raises(SchemaError):
            c.register("s", "{")
        assert faults.requests == seen + 3
    faults = Faults(fail_next=1, fail_status=501)  # not a transient status either
    with serve(local, faults=faults) as srv, ConfluentRegistry(srv.url, retries=5, backoff=0.01) as c:
        with pytest.raises(RegistryError) as info:
            c.list_subjects()
        assert info.value.status == 501 and faults.requests == 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused_is_retried_until_the_server_appears(local, caplog):
    port = free_port()
    started: list = []

    def start_later():
        time.sleep(0.4)
        started.append(RegistryServer(local, port=port).start())

    thread = threading.Thread(target=start_later)
    thread.start()
    try:
        with ConfluentRegistry(f"http://127.0.0.1:{port}", retries=8, backoff=0.1, max_backoff=0.3) as c:
            with caplog.at_level(logging.WARNING, logger="pulsar_codec.registry.http"):
                assert c.register("s", V1) == 1
        assert any("ConnectError" in r.getMessage() for r in caplog.records)
    finally:
        thread.join()
        for srv in started:
            srv.stop()


def test_dropped_connections_are_retried_then_reported():
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted = []
    done = threading.Event()

    def drop_everything():
        listener.settimeout(0.05)
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            accepted.append(1)
            conn.settimeout(5)
            conn.recv(65536)
            conn.close()  # read the request, answer nothing

    thread = threading.Thread(target=drop_everything, daemon=True)
    thread.start()
    with ConfluentRegistry(f"http://127.0.0.1:{port}", retries=2, backoff=0.01) as c:
        with pytest.raises(RegistryError, match=r"failed after 3 attempt\(s\): RemoteProtocolError"):
            c.get_schema(1)
    done.set()
    thread.join(timeout=5)
    listener.close()
    assert len(accepted) == 3


# --------------------------------------------------------------------------------------------
# auth and secrecy

USER, PASSWORD, TOKEN = "svc-reader", "pa55-w0rd-Zq9", "tok-Xy7-secret"


def secrets_absent(*texts):
    for text in texts:
        for secret in (PASSWORD, TOKEN):
            assert secret not in text


def test_basic_auth_accepted_and_rejected(local, caplog):
    with serve(local, auth=(USER, PASSWORD)) as srv:
        with ConfluentRegistry(srv.url, auth=(USER, PASSWORD)) as good:
            assert good.register("s", V1) == 1
            secrets_absent(repr(good), str(good))
            assert "basic" in repr(good)
        host = srv.url.removeprefix("http://")
        with ConfluentRegistry(f"http://{USER}:{PASSWORD}@{host}/") as from_url:
            assert from_url.list_subjects() == ["s"]
            assert from_url.url == srv.url
            secrets_absent(repr(from_url))
        with caplog.at_level(logging.DEBUG):
            with ConfluentRegistry(srv.url, auth=(USER, "wrong-" + PASSWORD), retries=3) as bad:
                with pytest.raises(RegistryError) as info:
                    bad.list_subjects()
        assert info.value.status == 401 and "authentication failed" in str(info.value)
        secrets_absent(str(info.value), repr(info.value), repr(bad))
        with ConfluentRegistry(srv.url) as anonymous:
            with pytest.raises(RegistryError) as info:
                anonymous.get_schema(1)
            assert info.value.status == 401
    secrets_absent(caplog.text, *(repr(r.args) for r in caplog.records))


def test_bearer_token_accepted_and_rejected(local, caplog):
    with caplog.at_level(logging.DEBUG):
        with serve(local, token=TOKEN) as srv:
            with ConfluentRegistry(srv.url, token=TOKEN) as good:
                assert good.register("s", V1) == 1
                assert good.get_schema(1).schema == V1
                secrets_absent(repr(good), repr(good._client.auth))
            with ConfluentRegistry(srv.url, token="not-" + TOKEN) as bad:
                with pytest.raises(RegistryError) as info:
                    bad.get_latest("s")
            assert info.value.status == 401
            secrets_absent(str(info.value))
    secrets_absent(caplog.text, *(repr(r.args) for r in caplog.records))


def test_secrets_absent_from_transport_errors(caplog):
    port = free_port()
    with caplog.at_level(logging.DEBUG):
        with ConfluentRegistry(f"http://{USER}:{PASSWORD}@127.0.0.1:{port}", retries=1, backoff=0.01) as c:
            with pytest.raises(RegistryError) as info:
                c.get_schema(1)
    secrets_absent(str(info.value), repr(info.value), caplog.text, *(repr(r.args) for r in caplog.records))
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_auth_and_token_together_is_refused():
    with pytest.raises(ValueError, match="not both"):
        ConfluentRegistry("http://127.0.0.1:1", auth=("a", "b"), token="t")


def test_context_manager_closes_the_pool(server):
    with ConfluentRegistry(server.url) as c:
        assert c.list_subjects() == []
    assert c._client.is_closed


def test_decode_contract_shape(server, local):
    """pulsar_codec.decode reads ``.schema`` (text) and ``.schema_type`` from get_schema."""
    local.register("s", V1)
    with ConfluentRegistry(server.url) as c:
        got = c.get_schema(1)
    assert isinstance(got.schema, str) and json.loads(got.schema) == json.loads(V1)
    assert got.schema_type == "AVRO" and got.schema_id == 1


# --------------------------------------------------------------------------------------------
# TLS


def test_tls_with_a_private_ca(local, tmp_path):
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert_file, key_file, ca_file = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "ca.pem"
    cert.private_key_and_cert_chain_pem.write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    ca.cert_pem.write_to_path(str(ca_file))
    with serve(local, tls=(cert_file, key_file), auth=(USER, PASSWORD)) as srv:
        assert srv.url.startswith("https://127.0.0.1:")
        with ConfluentRegistry(srv.url, verify=ca_file, auth=(USER, PASSWORD)) as c:
            assert c.register("s", V1) == 1
        with ConfluentRegistry(srv.url, auth=(USER, PASSWORD), retries=0) as untrusted:
            with pytest.raises(RegistryError, match="ConnectError"):
                untrusted.list_subjects()  # the system roots do not know this CA
        with ConfluentRegistry(srv.url, verify=False, auth=(USER, PASSWORD)) as unchecked:
            assert unchecked.list_subjects() == ["s"]


# --------------------------------------------------------------------------------------------
# answers that cannot be trusted: wrong shapes, echoed secrets, oversize bodies


class Stub:
    """A tiny HTTP server answering every request from ``self.answer(method, path, headers)``,
    which returns (status, body bytes, extra headers); it records what it saw."""

    def __init__(self, answer):
        import http.server

        stub = self
        self.answer = answer
        self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self):
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                stub.seen.append((self.command, self.path))
                status, body, headers = stub.answer(self.command, self.path, dict(self.headers))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if "Transfer-Encoding" not in headers:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def fixed(status, body, headers=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return lambda method, path, request_headers: (status, data, headers or {"Content-Type": "application/json"})


WRONG_SHAPES = [
    (lambda c: c.get_schema(1), "GET", "/schemas/ids/1", {}),
    (lambda c: c.get_schema(1), "GET", "/schemas/ids/1", [1, 2, 3]),
    (lambda c: c.get_schema(1), "GET", "/schemas/ids/1", {"schema": 5}),
    (lambda c: c.get_schema(1), "GET", "/schemas/ids/1", {"schema": "{}", "schemaType": 3}),
    (lambda c: c.get_schema(1), "GET", "/schemas/ids/1", b"<html>proxy login</html>"),
    (lambda c: c.get_schema(1), "GET", "/schemas/ids/1", b""),
    (lambda c: c.register("s", V1), "POST", "/subjects/s/versions", {"id": "7"}),
    (lambda c: c.register("s", V1), "POST", "/subjects/s/versions", {"id": True}),
    (lambda c: c.get_latest("s"), "GET", "/subjects/s/versions/latest", {"id": 1}),
    (lambda c: c.get_latest("s"), "GET", "/subjects/s/versions/latest", {"id": 1, "schema": "x", "version": "2"}),
    (lambda c: c.lookup("s", V1), "POST", "/subjects/s", None),
    (lambda c: c.list_subjects(), "GET", "/subjects", {"a": 1}),
    (lambda c: c.list_subjects(), "GET", "/subjects", ["a", 1]),
    (lambda c: c.list_versions("s"), "GET", "/subjects/s/versions", ["1"]),
    (lambda c: c.get_schema_versions(1), "GET", "/schemas/ids/1/versions", [{"subject": "s"}]),
    (lambda c: c.delete_subject("s"), "DELETE", "/subjects/s", 3),
    (lambda c: c.delete_version("s", 1), "DELETE", "/subjects/s/versions/1", [1]),
    (lambda c: c.check_compatibility("s", V1), "POST", "/compatibility/subjects/s/versions/latest", {}),
    (
        lambda c: c.check_compatibility("s", V1),
        "POST",
        "/compatibility/subjects/s/versions/latest",
        {"is_compatible": "yes"},
    ),
    (lambda c: c.get_compatibility(), "GET", "/config", []),
    (lambda c: c.set_compatibility("FULL"), "PUT", "/config", {"compatibility": None}),
]


@pytest.mark.parametrize(("call", "method", "path", "body"), WRONG_SHAPES)
def test_success_answers_of_the_wrong_shape_are_registry_errors(call, method, path, body):
    with Stub(fixed(200, body if isinstance(body, bytes) else json.dumps(body).encode())) as stub:
        url = stub.url.replace("http://", f"http://{USER}:{PASSWORD}@")
        with ConfluentRegistry(url, retries=0) as c:
            with pytest.raises(RegistryError) as info:
                call(c)
    assert type(info.value) is RegistryError
    message = str(info.value)
    assert f"{method} {stub.url}{path}" in message
    assert "unexpected body" in message or "not JSON" in message
    secrets_absent(message, repr(info.value))
    assert USER not in message


def echo_headers(status, error_code=None, reason=None):
    """An error answer whose message repeats the request headers, as some proxies do."""

    def answer(method, path, headers):
        echoed = "\n".join(f"{k}: {v}" for k, v in headers.items())
        body = {"message": f"upstream refused the request; request was\n{echoed}\n(raw {headers})"}
        if error_code is not None:
            body["error_code"] = error_code
        return status, json.dumps(body).encode(), {"Content-Type": "application/json"}

    return answer


@pytest.mark.parametrize(
    ("status", "error_code", "expected"),
    [
        (400, None, RegistryError),
        (404, 40403, SchemaNotFoundError),
        (409, 409, IncompatibleSchemaError),
        (422, 42201, SchemaError),
        (500, 50001, RegistryError),
        (503, None, RegistryUnreachableError),
    ],
)
@pytest.mark.parametrize("kind", ["basic-in-url", "basic", "bearer"])
def test_echoed_credentials_are_scrubbed_from_server_messages(status, error_code, expected, kind):
    import base64

    options = {"retries": 0}
    with Stub(echo_headers(status, error_code)) as stub:
        url = stub.url
        if kind == "basic-in-url":
            url = url.replace("http://", f"http://{USER}:{PASSWORD}@")
        elif kind == "basic":
            options["auth"] = (USER, PASSWORD)
        else:
            options["token"] = TOKEN
        with ConfluentRegistry(url, **options) as c:
            with pytest.raises(expected) as info:
                c.get_schema(1)
    exc = info.value
    texts = [str(exc), repr(exc), *getattr(exc, "reasons", [])]
    pair = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    for text in texts:
        secrets_absent(text)
        assert pair not in text
        assert "Basic " + pair[:6] not in text
        assert "Authorization: ***" in text or "authorization: ***" in text.lower()
        assert "upstream refused the request" in text  # the rest of the message survives


def test_scrubber_covers_header_text_and_credential_forms():
    from pulsar_codec.registry._answers import Scrubber

    scrub = Scrubber((USER, PASSWORD), None)
    text = scrub(
        f"Proxy-Authorization: Basic abc123==\r\nnote: {USER}:{PASSWORD} and {PASSWORD} again for {USER}; "
        '{"authorization": "Bearer eyJhbGciOi.x.y"}'
    )
    assert PASSWORD not in text and "abc123" not in text and "eyJhbGciOi" not in text
    assert USER in text  # a user name is not a secret
    assert scrub("Authorization failed for subject orders") == "Authorization failed for subject orders"
    token_scrub = Scrubber(None, TOKEN)
    assert TOKEN not in token_scrub(f"token {TOKEN} rejected; bearer {TOKEN}")


def big_answer(size, chunked=False, gzip_body=False):
    import gzip

    def answer(method, path, headers):
        body = json.dumps({"schema": "x" * size}).encode()
        extra = {"Content-Type": "application/json"}
        if gzip_body:
            body = gzip.compress(body)
            extra["Content-Encoding"] = "gzip"
        if chunked:
            extra["Transfer-Encoding"] = "chunked"
            pieces = [body[i : i + 4096] for i in range(0, len(body), 4096)]
            body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
        return 200, body, extra

    return answer


@pytest.mark.parametrize("shape", ["content-length", "chunked", "gzip"])
def test_answers_over_the_size_cap_are_refused(shape):
    answer = big_answer(200_000, chunked=shape == "chunked", gzip_body=shape == "gzip")
    with Stub(answer) as stub, ConfluentRegistry(stub.url, retries=3, max_response_bytes=50_000) as c:
        with pytest.raises(RegistryError, match=r"more than max_response_bytes \(50000 bytes\)") as info:
            c.get_schema(1)
        assert type(info.value) is RegistryError  # not retried: the same answer would come again
        assert len(stub.seen) == 1
    with Stub(answer) as stub, ConfluentRegistry(stub.url, max_response_bytes=300_000) as c:
        assert len(c.get_schema(1).schema) == 200_000


def test_default_size_cap_and_timeouts_are_bounded():
    with ConfluentRegistry("http://127.0.0.1:1") as c:
        assert c.max_response_bytes == 64 * 2**20
        assert c.total_timeout is not None and c.total_timeout <= 10


def test_unreachable_registry_fails_within_the_timeout():
    port = free_port()
    start = time.monotonic()
    with ConfluentRegistry(f"http://127.0.0.1:{port}") as c:  # the defaults
        with pytest.raises(RegistryUnreachableError, match=r"failed after \d attempt\(s\): ConnectError"):
            c.get_schema(1)
    assert time.monotonic() - start < 15


def test_total_timeout_bounds_a_registry_that_never_answers():
    listener = socket.create_server(("127.0.0.1", 0))  # accepts connections, never answers
    port = listener.getsockname()[1]
    try:
        with ConfluentRegistry(f"http://127.0.0.1:{port}", timeout=(5.0, 5.0), retries=5, total_timeout=1.0) as c:
            start = time.monotonic()
            with pytest.raises(RegistryUnreachableError, match="timed out"):
                c.list_subjects()
            assert time.monotonic() - start < 2.5  # not 6 attempts of 5 s
    finally:
        listener.close()


def test_unavailable_after_retries_is_unreachable_but_500_is_not(local):
    for status, cls in [(503, RegistryUnreachableError), (504, RegistryUnreachableError), (500, RegistryError)]:
        faults = Faults(fail_next=10, fail_status=status)
        with serve(local, faults=faults) as srv, ConfluentRegistry(srv.url, retries=1, backoff=0.01) as c:
            with pytest.raises(RegistryError, match=r"after 2 attempt\(s\)") as info:
                c.list_subjects()
        assert type(info.value) is cls and info.value.status == status


def test_unknown_id_stays_schema_not_found(server, local):
    with ConfluentRegistry(server.url) as c:
        with pytest.raises(SchemaNotFoundError) as info:
            c.get_schema(99999999999999999999999)
        assert (info.value.error_code, info.value.status) == (40403, 404)
