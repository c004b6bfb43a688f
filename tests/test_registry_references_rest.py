"""References and GUIDs over the REST facade, with clients nobody here wrote: confluent-kafka's
SchemaRegistryClient, its ProtobufSerializer registering a message's imports as references, its
serializers in GUID header mode; and this package's HTTP client and MessageDecoder reading GUIDs."""

from __future__ import annotations

import base64
import importlib.resources
import json
import os
import tempfile
import uuid
import warnings

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("grpc_tools")

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402
from grpc_tools import protoc  # noqa: E402

from pulsar_codec import wire  # noqa: E402
from pulsar_codec.errors import ErrorCode, SchemaError  # noqa: E402
from pulsar_codec.formats import get_format  # noqa: E402
from pulsar_codec.pipeline import MessageDecoder  # noqa: E402
from pulsar_codec.registry import ConfluentRegistry, LocalRegistry  # noqa: E402
from pulsar_codec.registry.base import SchemaReference  # noqa: E402
from pulsar_codec.registry.server import serve  # noqa: E402
from test_registry_references import MONEY, MONEY_BROKEN, MONEY_REF, ORDER, ORDER_BROKEN, md5_guid  # noqa: E402

with warnings.catch_warnings():
    try:  # authlib (imported by confluent-kafka) installs an "always" filter for its warnings
        import authlib.deprecate  # noqa: F401
    except ImportError:
        pass
    warnings.simplefilter("ignore", DeprecationWarning)
    ck_sr = pytest.importorskip("confluent_kafka.schema_registry")
    from confluent_kafka.schema_registry import (
        SchemaReference as CkReference,
    )
    from confluent_kafka.schema_registry import (
        dual_schema_id_deserializer,
        header_schema_id_serializer,
    )
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.schema_registry.error import SchemaRegistryError
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

USER_V1 = {
    "type": "record",
    "name": "User",
    "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}],
}
USER_V2 = {
    "type": "record",
    "name": "User",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": "string"},
        {"name": "email", "type": ["null", "string"], "default": None},
    ],
}


@pytest.fixture
def reg():
    with LocalRegistry(":memory:") as registry:
        yield registry


@pytest.fixture
def server(reg):
    with serve(reg) as srv:
        yield srv


_OPEN: list = []


def client(url):
    c = ck_sr.SchemaRegistryClient({"url": url, "max.retries": 0})
    _OPEN.append(c)
    return c


@pytest.fixture(autouse=True)
def _close_clients():
    yield
    while _OPEN:
        _OPEN.pop().close()


def compiled(files: dict[str, str]) -> descriptor_pool.DescriptorPool:
    """A pool of ``files`` (import name -> text) compiled by protoc, with their imports."""
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    with tempfile.TemporaryDirectory() as folder:
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
            with open(os.path.join(folder, name), "w") as handle:
                handle.write(text)
        out = os.path.join(folder, "set.bin")
        args = ["protoc", f"-I{include}", f"-I{folder}", "--include_imports", f"--descriptor_set_out={out}", *files]
        assert protoc.main(args) == 0
        with open(out, "rb") as handle:
            file_set = descriptor_pb2.FileDescriptorSet.FromString(handle.read())
    pool = descriptor_pool.DescriptorPool()
    for proto in file_set.file:
        pool.Add(proto)
    return pool


def order_class():
    pool = compiled({"common/money.proto": MONEY, "shop/order.proto": ORDER})
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def protobuf_format_installed() -> bool:
    try:
        get_format("PROTOBUF")
    except SchemaError:
        return False
    return True


def decode_one(registry, frame, protocol):
    batch, errors = MessageDecoder(registry, protocol=protocol, on_error="null").decode([frame])
    assert errors.num_rows == 0, errors.to_pylist()
    return batch.to_pylist()[0]


# --------------------------------------------------------------------------------------------
# references


def test_confluent_client_registers_and_reads_references(server, reg):
    c = client(server.url)
    assert c.register_schema("money", ck_sr.Schema(MONEY, "PROTOBUF")) == 1
    refs = [CkReference("common/money.proto", "money", 1)]
    order_id = c.register_schema("orders-value", ck_sr.Schema(ORDER, "PROTOBUF", references=refs))
    assert reg.get_schema(order_id).references == (SchemaReference("common/money.proto", "money", 1),)
    fresh = client(server.url)  # nothing cached: every answer comes over HTTP
    got = fresh.get_schema(order_id)
    assert got.schema_str == ORDER and got.schema_type == "PROTOBUF" and got.references == refs
    version = fresh.get_version("orders-value", 1)
    assert version.schema.references == refs and version.schema_id == order_id
    assert version.guid == md5_guid(ORDER, [("common/money.proto", "money", 1)])
    assert fresh.get_schema_by_guid(version.guid).references == refs
    found = fresh.lookup_schema("orders-value", ck_sr.Schema(ORDER, "PROTOBUF", references=refs))
    assert (found.schema_id, found.version) == (order_id, 1)
    assert fresh.get_referenced_by("money", 1) == [order_id]
    with pytest.raises(SchemaRegistryError) as info:
        fresh.register_schema(
            "orders-value", ck_sr.Schema(ORDER, "PROTOBUF", references=[CkReference("common/money.proto", "gone", 1)])
        )
    assert (info.value.http_status_code, info.value.error_code) == (422, 42201)
    assert "No schema reference found" in info.value.error_message
    with pytest.raises(SchemaRegistryError) as info:
        fresh.delete_version("money", 1)
    assert (info.value.http_status_code, info.value.error_code) == (422, 42206)


def test_http_client_references_and_guids(server, reg):
    with ConfluentRegistry(server.url, retries=0) as http:
        http.register("money", MONEY, "PROTOBUF")
        full = http.register_full("orders-value", ORDER, "PROTOBUF", [MONEY_REF])
        ref = SchemaReference("common/money.proto", "money", 1)
        assert (full.version, full.references) == (1, (ref,))
        assert full.guid == reg.get_schema(full.id).guid
        got = http.get_schema(full.id)
        assert (got.schema, got.references, got.guid) == (ORDER, (ref,), full.guid)
        by_guid = http.get_schema_by_guid(uuid.UUID(full.guid))
        assert (by_guid.schema, by_guid.references) == (ORDER, (ref,))
        assert http.get_schema(uuid.UUID(full.guid)).schema == ORDER
        assert http.lookup("orders-value", ORDER, "PROTOBUF", references=[MONEY_REF]).id == full.id
        assert http.get_latest("orders-value").references == (ref,)
        assert http.referenced_by("money", 1) == [full.id]
        assert not http.check_compatibility("orders-value", ORDER_BROKEN, schema_type="PROTOBUF", references=[ref])
        with pytest.raises(SchemaError, match="No schema reference found"):
            http.register("orders-value", ORDER, "PROTOBUF", references=[{**MONEY_REF, "version": 9}])
        reg.set_compatibility("NONE", "money")
        http.register("money", MONEY_BROKEN, "PROTOBUF")
        verdict = http.check_compatibility(
            "orders-value", ORDER, schema_type="PROTOBUF", references=[(ref.name, "money", 2)]
        )
        assert not verdict and "FIELD_SCALAR_KIND_CHANGED" in " ".join(verdict.reasons)


def test_serialized_format_answers_the_descriptor(server, reg):
    reg.register("money", MONEY, "PROTOBUF")
    order_id = reg.register("orders-value", ORDER, "PROTOBUF", references=[MONEY_REF])
    for path in (f"/schemas/ids/{order_id}", "/subjects/orders-value/versions/1"):
        answer = httpx.get(server.url + path, params={"format": "serialized"}).json()
        proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(answer["schema"]))
        assert list(proto.dependency) == ["common/money.proto"] and proto.package == "shop"
        assert [m.name for m in proto.message_type] == ["Order"]
        assert answer["references"] == [MONEY_REF]
    assert httpx.get(f"{server.url}/schemas/ids/{order_id}").json()["schema"] == ORDER  # text unless asked


def test_confluent_protobuf_serializer_registers_imports_as_references(server, reg):
    Order = order_class()
    message = Order(id=7)
    message.total.currency, message.total.units = "EUR", 1250
    c = client(server.url)
    serializer = ProtobufSerializer(Order, c, {"use.deprecated.format": False})
    framed = serializer(message, SerializationContext("orders", MessageField.VALUE))
    # it registered the import under its file name, then the message with it as a reference
    assert reg.list_subjects() == ["common/money.proto", "orders-value"]
    latest = reg.get_latest("orders-value")
    assert latest.references == (SchemaReference("common/money.proto", "common/money.proto", 1),)
    assert framed[:5] == b"\x00" + latest.id.to_bytes(4, "big") and framed[5:6] == b"\x00"
    # its deserializer reads the bytes back through the facade (format=serialized, references)
    deserializer = ProtobufDeserializer(Order, {"use.deprecated.format": False}, client(server.url))
    assert deserializer(framed, SerializationContext("orders", MessageField.VALUE)) == message
    # the same schema given as .proto text with the same reference is the same schema
    again = reg.register(
        "orders-value", ORDER, "PROTOBUF", references=[("common/money.proto", "common/money.proto", 1)]
    )
    assert again == latest.id
    if not protobuf_format_installed():
        pytest.skip("the Protobuf payload format (formats/protobuf FORMAT) is not installed yet")
    row = decode_one(reg, framed, wire.CONFLUENT_PROTOBUF)
    assert row["id"] == 7 and row["total"] == {"currency": "EUR", "units": 1250}


# --------------------------------------------------------------------------------------------
# GUIDs


def guid_serializer(c, schema):
    return AvroSerializer(c, json.dumps(schema), conf={"schema.id.serializer": header_schema_id_serializer})


def test_avro_serializer_in_guid_mode_and_our_decoder(server, reg):
    c = client(server.url)
    ctx = SerializationContext("users", MessageField.VALUE, [])
    first = guid_serializer(c, USER_V1)({"id": 1, "name": "ada lovelace"}, ctx)
    reg.register("users-value", json.dumps(USER_V2))  # a second version, written by a second producer
    ctx2 = SerializationContext("users", MessageField.VALUE, [])
    second = guid_serializer(client(server.url), USER_V2)({"id": 2, "name": "bo", "email": "b@x"}, ctx2)
    (name, header), (_, header2) = ctx.headers[0], ctx2.headers[0]
    assert name == wire.CONFLUENT_VALUE_SCHEMA_ID_HEADER and header[0] == 1 and len(header) == 17
    guid = uuid.UUID(bytes=header[1:])
    assert str(guid) == reg.get_schema(1).guid == md5_guid(reg.get_schema(1).schema)
    assert first[:1] != b"\x00"  # header mode: the payload carries no prefix
    frames = [header + first, header2 + second]
    assert wire.CONFLUENT_GUID.unpack(frames[0])[0] == guid
    expected = [{"id": 1, "name": "ada lovelace", "email": None}, {"id": 2, "name": "bo", "email": "b@x"}]
    with ConfluentRegistry(server.url, retries=0) as http:
        for registry in (reg, http):
            decoder = MessageDecoder(registry, protocol=wire.CONFLUENT_GUID, reader_schema=USER_V2, on_error="null")
            batch, errors = decoder.decode(frames + [None])
            assert errors.num_rows == 0 and batch.to_pylist()[:2] == expected
            assert batch.column("id").null_count == 1  # the null message
        assert MessageDecoder(http, protocol="confluent-guid").decode_value(frames[0]) == {
            "id": 1,
            "name": "ada lovelace",
        }
    # an unknown GUID is an error row of its own code, not a failure of the batch
    unknown = wire.CONFLUENT_GUID.pack(uuid.UUID(int=7), first)
    batch, errors = MessageDecoder(reg, protocol=wire.CONFLUENT_GUID, reader_schema=USER_V2, on_error="null").decode(
        [unknown, frames[1]]
    )
    assert batch.to_pylist()[1]["id"] == 2 and errors.column("index").to_pylist() == [0]
    assert errors.column("code")[0].as_py() == ErrorCode.SCHEMA_NOT_FOUND
    # confluent-kafka's own deserializer finds the GUID through GET /schemas/guids/{guid}
    deserializer = AvroDeserializer(client(server.url), conf={"schema.id.deserializer": dual_schema_id_deserializer})
    assert deserializer(first, SerializationContext("users", MessageField.VALUE, [(name, header)])) == {
        "id": 1,
        "name": "ada lovelace",
    }


def test_protobuf_serializer_in_guid_mode(server, reg):
    Order = order_class()
    message = Order(id=3)
    c = client(server.url)
    conf = {"use.deprecated.format": False, "schema.id.serializer": header_schema_id_serializer}
    ctx = SerializationContext("orders", MessageField.VALUE, [])
    payload = ProtobufSerializer(Order, c, conf)(message, ctx)
    header = ctx.headers[0][1]
    guid = uuid.UUID(bytes=header[1:17])
    assert header[17:] == b"\x00"  # the message-index array of the first message
    assert reg.get_schema_by_guid(guid).references  # the GUID names the schema with its reference
    assert wire.CONFLUENT_GUID_PROTOBUF.unpack_indexes(header + payload)[:2] == (guid, [0])
    if not protobuf_format_installed():
        pytest.skip("the Protobuf payload format (formats/protobuf FORMAT) is not installed yet")
    assert decode_one(reg, header + payload, wire.CONFLUENT_GUID_PROTOBUF)["id"] == 3
