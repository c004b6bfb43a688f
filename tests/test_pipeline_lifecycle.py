"""Who closes a registry client: a MessageDecoder / MessageEncoder closes the HTTP client it built
from a URL or RegistryConfig (close(), a with block, its collection, interpreter exit), never one
the caller passed in; pc.decode's kept decoders and pc.encode's per-call encoder do the same."""

from __future__ import annotations

import gc
import json
import pickle
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

import pulsar_codec as pc  # noqa: E402
import pulsar_codec.pipeline as pipeline  # noqa: E402
from pulsar_codec import wire  # noqa: E402
from pulsar_codec.pipeline import MessageDecoder, MessageEncoder  # noqa: E402
from pulsar_codec.registry import ConfluentRegistry, LocalRegistry, RegistryConfig  # noqa: E402
from pulsar_codec.registry.lookup import RegistrySource  # noqa: E402
from pulsar_codec.registry.server import RegistryServer  # noqa: E402

V1 = {"type": "record", "name": "User", "fields": [{"name": "id", "type": "int"}]}


@pytest.fixture(scope="module")
def server():
    with RegistryServer(LocalRegistry()) as srv:
        assert srv.registry.register("users-value", json.dumps(V1)) == 1
        assert srv.registry.register("other-value", json.dumps({**V1, "name": "Other"})) == 2
        yield srv


@pytest.fixture
def built(monkeypatch):
    """Every client RegistryConfig.build makes during the test."""
    clients: list = []
    build = RegistryConfig.build

    def recording(self, **kwargs):
        client = build(self, **kwargs)
        clients.append(client)
        return client

    monkeypatch.setattr(RegistryConfig, "build", recording)
    return clients


def closed(client: ConfluentRegistry) -> bool:
    return bool(client._client.is_closed)


def messages():
    return [wire.CONFLUENT.pack(1, b"\x02"), wire.CONFLUENT.pack(1, b"\x04")]


def test_a_decoder_closes_the_client_it_built(server, built):
    with MessageDecoder(server.url) as decoder:
        assert decoder.decode(messages()).to_pylist() == [{"id": 1}, {"id": 2}]
    (client,) = built
    assert closed(client)
    decoder.close()  # twice is fine
    # still usable: an id it has not seen builds a new client, the decoder's again
    assert decoder.decode([wire.CONFLUENT.pack(2, b"\x06")]).to_pylist() == [{"id": 3}]
    assert len(built) == 2 and not closed(built[1])
    decoder.close()
    assert closed(built[1])

    config_decoder = MessageDecoder(RegistryConfig(url=server.url))
    config_decoder.decode(messages())
    config_decoder.close()
    assert closed(built[2])


def test_a_dropped_decoder_closes_the_client_it_built(server, built):
    decoder = MessageDecoder(server.url)
    decoder.decode(messages())
    del decoder
    gc.collect()
    assert closed(built[0])


def test_a_client_passed_in_is_never_closed(server, built):
    with ConfluentRegistry(server.url) as client:
        with MessageDecoder(client) as decoder:
            decoder.decode(messages())
        with MessageEncoder(client, "users-value") as encoder:
            encoder.encode(pa.table({"id": pa.array([3], pa.int32())}))
        decoder.close()
        del decoder, encoder
        gc.collect()
        assert not closed(client)
        assert "users-value" in client.list_subjects()  # a request, not a cached answer
        assert built == []


def test_a_source_without_owner_leaves_its_client_open(server, built):
    """RegistrySource(...).get() hands the built client over (spark's pcs.encode closes it itself):
    the source going away must not close it under its user."""
    client = RegistrySource(server.url).get()
    gc.collect()
    try:
        assert not closed(client)
        assert "users-value" in client.list_subjects()
    finally:
        client.close()


def test_an_unpickled_decoder_owns_the_client_it_builds(server, built):
    with ConfluentRegistry(server.url) as client:
        shipped = pickle.loads(pickle.dumps(MessageDecoder(client)))  # as Spark ships it to an executor
        assert isinstance(shipped.registry, RegistryConfig)
        assert shipped.decode(messages()).num_rows == 2
        (own,) = built
        assert own is not client
        shipped.close()
        assert closed(own) and not closed(client)
        again = pickle.loads(pickle.dumps(MessageDecoder(server.url)))
        again.decode(messages())
        again.close()
        assert closed(built[1])


def test_an_encoder_closes_the_client_it_built(server, built):
    table = pa.table({"id": pa.array([5], pa.int32())})
    with MessageEncoder(server.url, "users-value") as encoder:
        assert len(encoder.encode(table)) == 1
    (client,) = built
    assert closed(client)
    # pc.encode makes an encoder for the call and closes the client it built
    assert len(pc.encode(table, server.url, "users-value")) == 1
    assert len(built) == 2 and closed(built[1])


def test_pc_decode_shares_one_client_per_url_and_closes_it_when_dropped(server, built):
    pipeline._DECODERS.clear()
    url = server.url
    for _ in range(3):  # equal URL strings, not one object: one decoder, one client
        assert pc.decode(messages(), "".join(url)).num_rows == 2
        assert pc.decode(messages(), RegistryConfig(url=url)).num_rows == 2
    (client,) = built
    assert not closed(client)
    for extra in range(pipeline._DECODERS_SIZE):  # other registries push it out of the cache
        pc.decode(messages(), {1: V1, 100 + extra: V1})
    gc.collect()
    assert closed(client)
    assert pc.decode(messages(), url).num_rows == 2  # a new decoder, a new client
    assert len(built) == 2 and not closed(built[1])
    pipeline._DECODERS.clear()
    gc.collect()
    assert closed(built[1])


def test_no_unclosed_socket_at_exit(server):
    """The symptom: a decoder on a URL left open, pc.decode and pc.encode on a URL; at exit (or
    when dropped) Python warned of unclosed sockets."""
    script = textwrap.dedent(
        f"""
        import gc, sys, warnings
        warnings.simplefilter("always")
        import pyarrow as pa
        import pulsar_codec as pc
        from pulsar_codec import wire
        msgs = [wire.CONFLUENT.pack(1, b"\\x02")]
        url = {server.url!r}
        kept = pc.MessageDecoder(url)  # still alive at exit
        assert kept.decode(msgs).num_rows == 1
        dropped = pc.MessageDecoder(url)
        assert dropped.decode(msgs).num_rows == 1
        del dropped
        gc.collect()
        assert pc.decode(msgs, url).num_rows == 1
        assert len(pc.encode(pa.table({{"id": pa.array([1], pa.int32())}}), url, "users-value")) == 1
        gc.collect()
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert "ResourceWarning" not in done.stderr, done.stderr
