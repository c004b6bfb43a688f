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

from pulsar_codec.errors import IncompatibleSchemaError, RegistryError, SchemaError, SchemaNotFoundError  # noqa: E402
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
