"""RegistryConfig: a picklable recipe for registry clients, and the one schema lookup."""

from __future__ import annotations

import os
import pickle
import uuid

import pytest

from pulsar_codec.errors import RegistryError, SchemaNotFoundError
from pulsar_codec.registry import (
    ConfluentRegistry,
    FetchedSchema,
    LocalRegistry,
    RegisteredSchema,
    RegistryConfig,
    fetch_schema,
    schema_text,
)
from pulsar_codec.registry.lookup import RegistrySource, portable

SCHEMA = {"type": "record", "name": "R", "fields": [{"name": "x", "type": "int"}]}


def test_exactly_one_location():
    with pytest.raises(ValueError, match="exactly one"):
        RegistryConfig()
    with pytest.raises(ValueError, match="exactly one"):
        RegistryConfig(url="http://a", path="b.db")
    with pytest.raises(ValueError, match="not both"):
        RegistryConfig(url="http://a", auth=("u", "p"), token="t")


def test_credentials_in_the_url_move_to_auth_and_stay_out_of_repr():
    config = RegistryConfig(url="https://alice:s%3Dcret@registry.example:8081/", timeout=2)
    assert config.url == "https://registry.example:8081"
    assert config.auth == ("alice", "s=cret")
    assert config.timeout == 2.0
    text = repr(config)
    assert "cret" not in text and "alice" not in text and "auth=***" in text
    bearer = RegistryConfig(url="https://r", token="tok-123", cert=("c.pem", "k.pem", "keypass"))
    assert "tok-123" not in repr(bearer) and "keypass" not in repr(bearer) and "token=***" in repr(bearer)


def test_frozen_hashable_and_picklable():
    config = RegistryConfig(url="https://r", auth=("u", "p"), timeout=[1, 2], retries=1, verify=False)
    assert config.timeout == (1.0, 2.0)
    assert pickle.loads(pickle.dumps(config)) == config
    assert len({config, pickle.loads(pickle.dumps(config))}) == 1
    with pytest.raises(AttributeError):
        config.url = "https://other"  # type: ignore[misc]


def test_of_strings_paths_and_clients(tmp_path):
    assert RegistryConfig.of("HTTPS://r:1") == RegistryConfig(url="HTTPS://r:1")
    local = RegistryConfig.of("reg.db")
    assert local.path == os.path.abspath("reg.db") and not local.is_memory
    assert RegistryConfig.of(tmp_path / "x.db").path == str(tmp_path / "x.db")
    assert RegistryConfig.of(local) is local
    client = LocalRegistry(tmp_path / "y.db")
    assert RegistryConfig.of(client) == client.config and client.config.path == str(tmp_path / "y.db")
    assert RegistryConfig.of(LocalRegistry(":memory:")).is_memory
    with pytest.raises(TypeError, match="no RegistryConfig for dict"):
        RegistryConfig.of({})


def test_build_opens_a_working_client(tmp_path):
    path = tmp_path / "r.db"
    schema_id = LocalRegistry(path).register("s", SCHEMA)
    built = RegistryConfig(path=str(path), timeout=(1, 7)).build()
    assert isinstance(built, LocalRegistry) and built.get_schema(schema_id).schema_type == "AVRO"
    assert built.config.timeout == 7.0


def test_confluent_client_keeps_its_config():
    pytest.importorskip("httpx")
    from pulsar_codec.registry import ConfluentRegistry

    with ConfluentRegistry("https://bob:pw@r.example", timeout=3, retries=1) as client:
        config = RegistryConfig.of(client)
        assert config.url == "https://r.example" and config.auth == ("bob", "pw") and config.retries == 1
        rebuilt = config.build()
        try:
            assert isinstance(rebuilt, ConfluentRegistry) and rebuilt.config == config
        finally:
            rebuilt.close()


def test_portable_and_source(tmp_path):
    mapping = {1: SCHEMA}
    assert portable(mapping) is mapping and portable(None) is None
    with pytest.raises(TypeError, match="in-memory"):
        portable(LocalRegistry(":memory:"), "Thing")
    path = tmp_path / "r.db"
    LocalRegistry(path).register("s", SCHEMA)
    source = RegistrySource(str(path))
    client = source.get()
    assert isinstance(client, LocalRegistry) and source.get() is client and source.given == str(path)
    assert RegistrySource(mapping).get() is mapping


class ConfluentLike:
    """What confluent-kafka's SchemaRegistryClient.get_schema returns: a Schema object."""

    class Schema:
        def __init__(self, schema_str, schema_type, references):
            self.schema_str = schema_str
            self.schema_type = schema_type
            self.references = references

    def get_schema(self, schema_id):
        return self.Schema('{"type": "string"}', "JSON", [{"name": "a", "subject": "s", "version": 1}])


def test_fetch_schema_reads_every_shape():
    guid = uuid.UUID(int=5)
    parsed = object()
    mapping = {1: SCHEMA, 2: '"int"', 3: b'"long"', str(guid): '"null"', 4: parsed}
    assert fetch_schema(mapping, 1) == FetchedSchema(
        '{"type":"record","name":"R","fields":[{"name":"x","type":"int"}]}'
    )
    assert fetch_schema(mapping, 2).schema == '"int"' and fetch_schema(mapping, 3).schema == '"long"'
    assert fetch_schema(mapping, guid).schema == '"null"'
    assert fetch_schema(mapping, 4).schema is parsed  # a parsed schema passes through
    found = fetch_schema(ConfluentLike(), 9)
    assert found.schema == '{"type": "string"}' and found.schema_type == "JSON" and len(found.references) == 1
    registered = RegisteredSchema(7, '"int"', "PROTOBUF")
    assert fetch_schema({7: registered}, 7) == FetchedSchema('"int"', "PROTOBUF")
    assert schema_text(registered) == '"int"'
    with pytest.raises(SchemaNotFoundError):
        fetch_schema(mapping, 99)
    with pytest.raises(TypeError, match="get_schema"):
        fetch_schema(42, 1)


def test_new_limits_travel_with_the_config(tmp_path):
    pytest.importorskip("httpx")
    from pulsar_codec.registry import ConfluentRegistry

    config = RegistryConfig(url="http://r.example", total_timeout=4, max_response_bytes=1000)
    assert config.total_timeout == 4.0
    assert pickle.loads(pickle.dumps(config)) == config
    with config.build() as client:
        assert isinstance(client, ConfluentRegistry)
        assert (client.total_timeout, client.max_response_bytes) == (4.0, 1000)
        kept = RegistryConfig.of(client)
        assert (kept.total_timeout, kept.max_response_bytes) == (4.0, 1000)
    local = RegistryConfig(path=str(tmp_path / "r.db"))
    assert local.timeout is None  # each client's own default: 30 s for the database lock
    with local.build() as reg:
        assert reg._timeout == 30.0
    with pytest.raises(RegistryError, match="no registry database"):
        RegistryConfig(path=str(tmp_path / "absent.db")).build(create=False)
    assert not (tmp_path / "absent.db").exists()


def test_a_client_pickles_as_its_config(tmp_path):
    """Pickling a registry client sends its RegistryConfig: the other side opens its own client."""
    local = LocalRegistry(tmp_path / "schemas.db")
    schema_id = local.register("orders-value", '"long"')
    copy = pickle.loads(pickle.dumps(local))
    try:
        assert isinstance(copy, LocalRegistry) and copy is not local
        assert copy.config == local.config and copy.get_schema(schema_id).schema == '"long"'
    finally:
        copy.close()
        local.close()
    reader = LocalRegistry(tmp_path / "schemas.db", create=False)
    (tmp_path / "schemas.db").unlink()  # gone on the other side: a reader must not make an empty one
    with pytest.raises(RegistryError, match="no registry database"):
        pickle.loads(pickle.dumps(reader))
    reader.close()
    remote = ConfluentRegistry("http://127.0.0.1:1", auth=("me", "secret"))
    assert pickle.loads(pickle.dumps(remote)).config == remote.config  # credentials travel, never in a repr
    with pytest.raises(TypeError, match="in-memory LocalRegistry cannot be pickled"):
        pickle.dumps(LocalRegistry(":memory:"))
