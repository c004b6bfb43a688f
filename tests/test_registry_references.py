"""Schema references and GUIDs in the embedded registry, its REST facade and the HTTP client:
Protobuf imports and JSON Schema ``$ref`` documents registered as references, Confluent's
semantics for them (missing targets, ``-1``, identity, deletes), and every schema's GUID."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid

import pytest

from pulsar_codec.errors import IncompatibleSchemaError, RegistryError, SchemaError, SchemaNotFoundError
from pulsar_codec.registry import LocalRegistry
from pulsar_codec.registry.base import SchemaReference

pytest.importorskip("google.protobuf")
pytest.importorskip("grpc_tools")

MONEY = 'syntax = "proto3";\npackage common;\n\nmessage Money {\n  string currency = 1;\n  int64 units = 2;\n}\n'
MONEY_V2 = MONEY.replace("  int64 units = 2;\n", "  int64 units = 2;\n  int32 nanos = 3;\n")
MONEY_BROKEN = MONEY.replace("int64 units = 2", "string units = 2")  # another wire group: not readable
ORDER = (
    'syntax = "proto3";\npackage shop;\n\nimport "common/money.proto";\n\n'
    "message Order {\n  int32 id = 1;\n  common.Money total = 2;\n}\n"
)
ORDER_BROKEN = ORDER.replace("int32 id = 1", "string id = 1")
MONEY_REF = {"name": "common/money.proto", "subject": "money", "version": 1}


def md5_guid(text: str, refs=()) -> str:
    """Confluent's derivation, written out: MD5 over the text, then name, subject and a 4-byte
    big-endian version per reference."""
    digest = hashlib.md5(text.encode())
    for name, subject, version in refs:
        digest.update(name.encode())
        digest.update(subject.encode())
        digest.update(version.to_bytes(4, "big"))
    return str(uuid.UUID(bytes=digest.digest()))


@pytest.fixture(params=["memory", "file"])
def reg(request, tmp_path):
    path = ":memory:" if request.param == "memory" else tmp_path / "registry.db"
    with LocalRegistry(path) as registry:
        yield registry


def orders(reg, version=1):
    reg.register("money", MONEY, "PROTOBUF")
    return reg.register("orders-value", ORDER, "PROTOBUF", references=[{**MONEY_REF, "version": version}])


# --------------------------------------------------------------------------------------------
# the embedded registry


def test_protobuf_import_registered_as_a_reference(reg):
    money_id = reg.register("money", MONEY, "PROTOBUF")
    with pytest.raises(SchemaError, match="common/money.proto"):  # protoc cannot find the import
        reg.register("orders-value", ORDER, "PROTOBUF")
    order_id = reg.register("orders-value", ORDER, "PROTOBUF", references=[MONEY_REF])
    assert order_id != money_id
    got = reg.get_schema(order_id)
    assert got.schema == ORDER and got.schema_type == "PROTOBUF"
    assert got.references == (SchemaReference("common/money.proto", "money", 1),)
    assert got.guid == md5_guid(ORDER, [("common/money.proto", "money", 1)])
    version = reg.get_version("orders-value", 1)
    assert version.references == got.references and version.guid == got.guid and version.id == order_id
    # the same registration again is the same version; the lookup needs the references too
    assert reg.register("orders-value", ORDER, "PROTOBUF", references=[MONEY_REF]) == order_id
    assert reg.list_versions("orders-value") == [1]
    assert reg.lookup("orders-value", ORDER, "PROTOBUF", references=[MONEY_REF]).version == 1
    full = reg.register_full("orders-value", ORDER, "PROTOBUF", [MONEY_REF])
    assert (full.id, full.version, full.subject, full.guid) == (order_id, 1, "orders-value", got.guid)


def test_missing_reference_targets_are_invalid_schemas(reg):
    reg.register("money", MONEY, "PROTOBUF")
    for ref, words in (
        ({**MONEY_REF, "subject": "nobody"}, 'subject "nobody" and version 1'),
        ({**MONEY_REF, "version": 7}, 'subject "money" and version 7'),
    ):
        with pytest.raises(SchemaError, match=f"No schema reference found for {words}"):
            reg.register("orders-value", ORDER, "PROTOBUF", references=[ref])
    for bad in ({"name": "common/money.proto", "subject": "money"}, {"subject": "money", "version": 1}, "money"):
        with pytest.raises(SchemaError, match="Invalid reference|list of references"):
            reg.register("orders-value", ORDER, "PROTOBUF", references=[bad] if isinstance(bad, dict) else bad)
    reg.delete_version("money", 1)  # a soft-deleted version is not a target for a new schema
    with pytest.raises(SchemaError, match="No schema reference found"):
        reg.register("orders-value", ORDER, "PROTOBUF", references=[MONEY_REF])
    assert reg.list_subjects() == []


def test_latest_reference_is_stored_as_its_number(reg):
    reg.register("money", MONEY, "PROTOBUF")
    reg.register("money", MONEY_V2, "PROTOBUF")
    order_id = reg.register("orders-value", ORDER, "PROTOBUF", references=[{**MONEY_REF, "version": -1}])
    assert reg.get_schema(order_id).references == (SchemaReference("common/money.proto", "money", 2),)
    assert reg.register("orders-value", ORDER, "PROTOBUF", references=[("common/money.proto", "money", 2)]) == order_id


def test_same_text_with_other_references_is_another_schema(reg):
    reg.register("money", MONEY, "PROTOBUF")
    reg.register("money", MONEY_V2, "PROTOBUF")
    first = reg.register("orders-value", ORDER, "PROTOBUF", references=[MONEY_REF])
    second = reg.register("orders-value", ORDER, "PROTOBUF", references=[{**MONEY_REF, "version": 2}])
    assert first != second and reg.list_versions("orders-value") == [1, 2]
    assert reg.get_schema(first).guid != reg.get_schema(second).guid
    assert reg.get_schema(second).guid == md5_guid(ORDER, [("common/money.proto", "money", 2)])
    assert reg.lookup("orders-value", ORDER, "PROTOBUF", references=[MONEY_REF]).version == 1
    with pytest.raises(SchemaNotFoundError) as info:
        reg.lookup("payments-value", ORDER, "PROTOBUF", references=[MONEY_REF])
    assert info.value.error_code == 40401


def test_compatibility_reads_the_referenced_files(reg):
    orders(reg)
    assert not reg.check_compatibility("orders-value", ORDER_BROKEN, schema_type="PROTOBUF", references=[MONEY_REF])
    with pytest.raises(IncompatibleSchemaError, match="FIELD_SCALAR_KIND_CHANGED"):
        reg.register("orders-value", ORDER_BROKEN, "PROTOBUF", references=[MONEY_REF])
    # a change inside the imported file: the root's text is the same, its message is not readable
    reg.set_compatibility("NONE", "money")
    reg.register("money", MONEY_BROKEN, "PROTOBUF")
    broken_ref = {**MONEY_REF, "version": 2}
    result = reg.check_compatibility("orders-value", ORDER, schema_type="PROTOBUF", references=[broken_ref])
    assert not result and any("FIELD_SCALAR_KIND_CHANGED" in r for r in result.reasons)
    with pytest.raises(IncompatibleSchemaError):
        reg.register("orders-value", ORDER, "PROTOBUF", references=[broken_ref])
    # a compatible evolution of the import is accepted, as a new version with the new reference
    reg.register("money", MONEY_V2, "PROTOBUF")
    assert reg.register("orders-value", ORDER, "PROTOBUF", references=[{**MONEY_REF, "version": 3}]) > 0
    assert reg.list_versions("orders-value") == [1, 2]


def test_referenced_versions_cannot_be_deleted(reg):
    order_id = orders(reg)
    assert reg.referenced_by("money", 1) == [order_id]
    for delete in (lambda: reg.delete_version("money", 1), lambda: reg.delete_subject("money")):
        with pytest.raises(RegistryError, match="One or more references exist") as info:
            delete()
        assert (info.value.status, info.value.error_code) == (422, 42206)
    reg.delete_subject("orders-value")  # the referrer is soft-deleted: a soft delete may go on
    assert reg.referenced_by("money", 1) == [] and reg.referenced_by("money", 1, deleted=True) == [order_id]
    reg.delete_version("money", 1)
    with pytest.raises(RegistryError, match="One or more references exist"):
        reg.delete_version("money", 1, permanent=True)  # the soft-deleted referrer still reads it
    assert reg.get_schema(order_id).references  # ids stay readable
    reg.delete_subject("orders-value", permanent=True)
    assert reg.delete_version("money", 1, permanent=True) == 1


def test_json_schema_ref_registered_as_a_reference(reg):
    address = {"type": "object", "properties": {"street": {"type": "string"}, "zip": {"type": "integer"}}}
    narrowed = {"type": "object", "properties": {"street": {"type": "string"}, "zip": {"type": "string"}}}
    person = {"type": "object", "properties": {"name": {"type": "string"}, "home": {"$ref": "address.json"}}}
    reg.register("address", json.dumps(address), "JSON")
    with pytest.raises(SchemaError, match="address.json"):
        reg.register("people-value", json.dumps(person), "JSON")
    ref = {"name": "address.json", "subject": "address", "version": 1}
    person_id = reg.register("people-value", json.dumps(person), "JSON", references=[ref])
    assert reg.get_schema(person_id).references == (SchemaReference("address.json", "address", 1),)
    reg.set_compatibility("NONE", "address")
    reg.register("address", json.dumps(narrowed), "JSON")
    result = reg.check_compatibility(
        "people-value", json.dumps(person), schema_type="JSON", references=[{**ref, "version": 2}]
    )
    assert not result and any("TYPE_CHANGED" in r for r in result.reasons)
    assert reg.check_compatibility("people-value", json.dumps(person), schema_type="JSON", references=[ref])


def test_references_of_references_resolve(reg):
    base = 'syntax = "proto3";\npackage common;\nmessage Currency { string code = 1; }\n'
    money = (
        'syntax = "proto3";\npackage common;\nimport "common/currency.proto";\n'
        "message Money { common.Currency currency = 1; int64 units = 2; }\n"
    )
    reg.register("currency", base, "PROTOBUF")
    with pytest.raises(SchemaError):
        reg.register("money", money, "PROTOBUF")
    reg.register(
        "money", money, "PROTOBUF", references=[{"name": "common/currency.proto", "subject": "currency", "version": 1}]
    )
    order_id = reg.register("orders-value", ORDER, "PROTOBUF", references=[MONEY_REF])  # only its direct import
    assert reg.check_compatibility("orders-value", ORDER_BROKEN, schema_type="PROTOBUF", references=[MONEY_REF]).reasons
    assert reg.get_schema(order_id).references == (SchemaReference("common/money.proto", "money", 1),)


# --------------------------------------------------------------------------------------------
# GUIDs


def test_every_schema_has_a_confluent_guid(reg):
    text = '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}'
    schema_id = reg.register("r-value", text)
    guid = reg.get_schema(schema_id).guid
    assert guid == md5_guid(text)
    assert reg.register("other-value", json.dumps(json.loads(text), indent=2)) == schema_id  # same schema, same GUID
    assert reg.get_version("other-value", 1).guid == guid
    for spelling in (guid, uuid.UUID(guid), uuid.UUID(guid).bytes, guid.replace("-", "").upper()):
        found = reg.get_schema_by_guid(spelling)
        assert (found.id, found.schema, found.guid) == (schema_id, text, guid)
    assert reg.get_schema(uuid.UUID(guid)).id == schema_id
    for unknown in (str(uuid.UUID(int=1)), "not-a-guid", b"short"):
        with pytest.raises(SchemaNotFoundError) as info:
            reg.get_schema_by_guid(unknown)
        assert info.value.error_code == 40403
    reg.delete_subject("r-value")
    reg.delete_subject("other-value")
    assert reg.get_schema_by_guid(guid).id == schema_id  # soft-deleted versions keep it readable
    reg.delete_subject("r-value", permanent=True)
    reg.delete_subject("other-value", permanent=True)
    with pytest.raises(SchemaNotFoundError):
        reg.get_schema_by_guid(guid)


def test_a_database_from_before_guids_is_upgraded(tmp_path):
    path = tmp_path / "old.db"
    text = '{"type":"record","name":"R","fields":[]}'
    with sqlite3.connect(path) as conn:  # the tables as the first version created them
        conn.execute(
            "CREATE TABLE schemas (id INTEGER PRIMARY KEY AUTOINCREMENT, schema_type TEXT NOT NULL, "
            "fingerprint TEXT NOT NULL, schema TEXT NOT NULL, UNIQUE (schema_type, fingerprint))"
        )
        conn.execute(
            "CREATE TABLE versions (subject TEXT NOT NULL, version INTEGER NOT NULL, schema_id INTEGER NOT NULL "
            "REFERENCES schemas (id), deleted INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (subject, version))"
        )
        conn.execute("CREATE TABLE config (scope TEXT PRIMARY KEY, compatibility TEXT NOT NULL)")
        from pulsar_codec.compat import fingerprint

        conn.execute("INSERT INTO schemas VALUES (1, 'AVRO', ?, ?)", (fingerprint(text), text))
        conn.execute("INSERT INTO versions VALUES ('r', 1, 1, 0)")
    conn.close()
    with LocalRegistry(path, create=False) as reg:
        assert reg.get_schema_by_guid(md5_guid(text)).id == 1
        assert reg.register("r", text) == 1  # the old fingerprint still matches
        reg.register("money", MONEY, "PROTOBUF")
        assert reg.register("orders-value", ORDER, "PROTOBUF", references=[MONEY_REF]) == 3


def test_use_latest_parses_a_protobuf_version_with_its_imports(reg):
    """MessageEncoder(use_latest=True).latest_writer(), what spark.encode and the Pulsar sink ship
    to their executors, fetches a version's imports through its references."""
    import pyarrow as pa

    from pulsar_codec.formats.protobuf import ProtobufEncoder
    from pulsar_codec.pipeline import MessageEncoder

    order_id = orders(reg)
    schema_id, model = MessageEncoder(reg, "orders-value", format="PROTOBUF", use_latest=True).latest_writer()
    assert schema_id == order_id and model.descriptor().full_name == "shop.Order"
    batch = pa.RecordBatch.from_pydict({"id": [1], "total": [{"currency": "EUR", "units": 5}]})
    assert ProtobufEncoder(model).encode(batch).to_pylist() == [b"\x08\x01\x12\x07\n\x03EUR\x10\x05"]
