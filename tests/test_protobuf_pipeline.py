"""Protobuf through the pipeline: pc.decode / pc.encode, registries, message-index routing."""

from __future__ import annotations

import datetime
import json
import pickle
import uuid

import pyarrow as pa
import pytest
from google.protobuf import message_factory

import pulsar_codec as pc
from pulsar_codec import wire
from pulsar_codec.errors import ErrorCode, ProtobufDecodeError, SchemaError
from pulsar_codec.formats.protobuf import parse, pulsar_native_data
from pulsar_codec.pipeline import Decoded, MessageDecoder, MessageEncoder
from pulsar_codec.registry import LocalRegistry

SHOP = """
syntax = "proto3";
package shop.v1;

import "google/protobuf/timestamp.proto";

message Customer {
  string name = 1;
  int32 tier = 2;
}

message Order {
  enum Status {
    STATUS_UNSPECIFIED = 0;
    PAID = 1;
    SHIPPED = 2;
  }
  message Line {
    string sku = 1;
    uint32 qty = 2;
  }
  int64 id = 1;
  Customer customer = 2;
  repeated string tags = 3;
  map<string, int64> attrs = 4;
  Status status = 5;
  google.protobuf.Timestamp created = 6;
  optional string note = 7;
  repeated Line lines = 8;
}
"""
MODEL = parse(SHOP)
ORDER = "shop.v1.Order"
CUSTOMER = "shop.v1.Customer"
LINE = "shop.v1.Order.Line"


def _cls(name: str):
    return message_factory.GetMessageClass(MODEL.descriptor(name))


def _order(i: int) -> bytes:
    m = _cls(ORDER)(id=i, tags=["a", "b"][: i % 3], status=i % 3)
    m.customer.name = f"c{i}"
    m.customer.tier = i % 4
    m.attrs["k"] = i
    m.created.seconds = 1_700_000_000 + i
    m.created.nanos = 123_456_789
    if i % 2:
        m.note = "leave at the door"
    line = m.lines.add()
    line.sku = "s"
    line.qty = 2**32 - 1
    return m.SerializeToString(deterministic=True)


def _customer(i: int) -> bytes:
    return _cls(CUSTOMER)(name=f"solo{i}", tier=7).SerializeToString(deterministic=True)


def _framed(schema_id: int, body: bytes, name: str) -> bytes:
    return wire.CONFLUENT_PROTOBUF.pack(schema_id, body, message_indexes=MODEL.indexes_for(name))


def _expected_order(i: int) -> dict:
    created = datetime.datetime.fromtimestamp(1_700_000_000 + i, datetime.UTC)
    return {
        "id": i,
        "customer": {"name": f"c{i}", "tier": i % 4},
        "tags": ["a", "b"][: i % 3],
        "attrs": [("k", i)],
        "status": ["STATUS_UNSPECIFIED", "PAID", "SHIPPED"][i % 3],
        "created": created,
        "note": "leave at the door" if i % 2 else None,
        "lines": [{"sku": "s", "qty": 2**32 - 1}],
    }


def _rows(batch: pa.RecordBatch) -> list[dict]:
    table = pa.Table.from_batches([batch])
    created = table.column("created").cast(pa.int64()).to_pylist()
    out = []
    for row, ns in zip(table.to_pylist(), created):
        if row["created"] is not None:  # to_pylist drops nanoseconds: compare the whole number separately
            assert ns % 1_000_000_000 == 123_456_789
            row["created"] = datetime.datetime.fromtimestamp(ns // 1_000_000_000, datetime.UTC)
        out.append(row)
    return out


def test_decode_with_a_mapping_registry(backend):
    messages = [_framed(1, _order(i), ORDER) for i in range(5)]
    batch = pc.decode(messages, {1: SHOP}, format="PROTOBUF")
    assert batch.schema.field("created").type == pa.timestamp("ns", "UTC")
    assert batch.schema.field("status").type == pa.dictionary(pa.int32(), pa.string())
    assert batch.schema.field("lines").type.value_type.field("qty").type == pa.uint32()
    assert _rows(batch) == [_expected_order(i) for i in range(5)]


def test_the_registry_s_schema_type_switches_the_default_prefix(backend, tmp_path):
    reg = LocalRegistry(str(tmp_path / "schemas.db"))
    sid = reg.register("orders-value", SHOP, schema_type="PROTOBUF")
    messages = [_framed(sid, _order(i), ORDER) for i in range(3)]
    decoder = MessageDecoder(reg)
    assert _rows(decoder.decode(messages)) == [_expected_order(i) for i in range(3)]
    # one message at a time, through the same routing
    value = MessageDecoder(reg).decode_value(messages[1])
    assert value["id"] == 1 and value["customer"] == {"name": "c1", "tier": 1}
    # batch by batch, not for good: the same decoder (and pc.decode's, kept per registry) then
    # reads an Avro batch with the plain Confluent prefix, and Protobuf again
    avro_id = reg.register(
        "users-value", json.dumps({"type": "record", "name": "U", "fields": [{"name": "n", "type": "long"}]})
    )
    avro = [b"\x00" + avro_id.to_bytes(4, "big") + bytes([2 * k]) for k in range(3)]
    for decode in (decoder.decode, lambda m: pc.decode(m, reg), lambda m: pc.decode(m, reg, on_error="null")[0]):
        assert _rows(decode(messages)) == [_expected_order(i) for i in range(3)]
        assert decode(avro).to_pylist() == [{"n": k} for k in range(3)]
    assert [decoder.decode_value(m) for m in (avro[1], messages[2], avro[2])][::2] == [{"n": 1}, {"n": 2}]
    assert decoder.decode_value(messages[2])["id"] == 2
    assert decoder.protocol is wire.CONFLUENT  # as configured: the Protobuf prefix is the batch's
    reg.close()


def test_rows_of_another_message_type_are_error_rows(backend):
    messages = [
        _framed(1, _order(0), ORDER),
        _framed(1, _customer(1), CUSTOMER),
        None,
        _framed(1, _order(3), ORDER),
    ]
    out = pc.decode(messages, {1: SHOP}, format="PROTOBUF", on_error="null")
    assert isinstance(out, Decoded)
    assert out.batch.num_rows == 4
    assert [r["id"] if r else None for r in out.batch.to_pylist()] == [0, None, None, 3]
    assert out.errors.column("index").to_pylist() == [1]
    assert out.errors.column("code").to_pylist() == [ErrorCode.SCHEMA_OTHER_MESSAGE]
    # what is wrong and what to do: the same text as the error row and as the raised SchemaError
    said = (
        "schema id 1: message type shop.v1.Customer, the output's is shop.v1.Order;"
        " pass message='shop.v1.Customer' to read them"
    )
    assert out.errors.column("message")[0].as_py() == f"{said} (message 1, byte 0)"
    with pytest.raises(SchemaError, match=r"message type shop.v1.Customer.* \(message 1\)$") as raised:
        pc.decode(messages, {1: SHOP}, format="PROTOBUF")
    assert raised.value.index == 1  # with on_error="raise" the error names the row, as the error row does
    assert str(raised.value) == f"{said} (message 1)"
    # the advice reads them (the Order rows are then the other type's)
    advised = pc.decode(messages, {1: SHOP}, format="PROTOBUF", message=CUSTOMER, on_error="null")
    assert advised.batch.to_pylist()[1] == {"name": "solo1", "tier": 7}
    assert "pass message='shop.v1.Order' to read them" in advised.errors.column("message")[0].as_py()


def test_the_first_message_met_is_the_output_type(backend):
    messages = [_framed(1, _customer(0), CUSTOMER), _framed(1, _order(1), ORDER)]
    out = pc.decode(messages, {1: SHOP}, format="PROTOBUF", on_error="null")
    assert out.batch.schema.names == ["name", "tier"]
    assert out.batch.to_pylist()[0] == {"name": "solo0", "tier": 7}
    assert out.errors.column("index").to_pylist() == [1]


def test_message_option_picks_the_output_type(backend):
    messages = [_framed(1, _order(0), ORDER), _framed(1, _customer(1), CUSTOMER)]
    out = pc.decode(messages, {1: SHOP}, format="PROTOBUF", message=CUSTOMER, on_error="null")
    assert out.batch.to_pylist()[1] == {"name": "solo1", "tier": 7}
    assert out.errors.column("index").to_pylist() == [0]
    with pytest.raises(SchemaError, match="no message"):
        pc.decode(messages, {1: SHOP}, format="PROTOBUF", message="shop.v1.Nope")


def test_nested_message_index_paths(backend):
    line = _cls(LINE)(sku="x", qty=3).SerializeToString()
    assert MODEL.indexes_for(LINE) == [1, 0]
    messages = [_framed(1, line, LINE), _framed(1, line, LINE)]
    out = pc.decode(messages, {1: SHOP}, format="PROTOBUF")
    assert out.to_pylist() == [{"sku": "x", "qty": 3}] * 2


def test_an_index_path_naming_no_message_is_an_error_row(backend):
    messages = [_framed(1, _order(0), ORDER), wire.CONFLUENT_PROTOBUF.pack(1, b"", message_indexes=[9])]
    out = pc.decode(messages, {1: SHOP}, format="PROTOBUF", on_error="null")
    assert out.errors.column("code").to_pylist() == [ErrorCode.SCHEMA_UNRESOLVABLE]
    assert out.batch.to_pylist()[0]["id"] == 0


def test_bad_payload_is_an_error_row_with_its_offset(backend):
    good = _order(1)
    messages = [_framed(1, good, ORDER), _framed(1, good[:-3], ORDER)]
    out = pc.decode(messages, {1: SHOP}, format="PROTOBUF", on_error="null")
    assert out.errors.column("index").to_pylist() == [1]
    with pytest.raises(ProtobufDecodeError) as exc:
        pc.decode(messages, {1: SHOP}, format="PROTOBUF")
    assert exc.value.index == 1


def test_pulsar_native_schema_reads_unframed_payloads(backend):
    native = pulsar_native_data(parse(SHOP, message=ORDER))
    out = MessageDecoder({7: native.decode()}, format="PROTOBUF").decode_payloads([_order(2), _order(3)], 7)
    assert _rows(out) == [_expected_order(2), _expected_order(3)]


def test_encode_is_the_runtime_s_bytes_and_round_trips(backend):
    messages = [_framed(1, _order(i), ORDER) for i in range(4)]
    batch = pc.decode(messages, {1: SHOP}, format="PROTOBUF")
    registry: dict = {1: SHOP}
    again = pc.encode(batch, registry, "orders-value", format="PROTOBUF", schema=SHOP, message=ORDER)
    assert again.to_pylist() == messages  # the prefix with Order's path [1], then the runtime's bytes
    assert pc.decode(again, registry, format="PROTOBUF").equals(batch)


def test_encode_derives_a_schema_and_registers_it(backend, tmp_path):
    reg = LocalRegistry(str(tmp_path / "schemas.db"))
    table = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "name": pa.array(["a", None]),
            "at": pa.array([0, 1_500_000_000], pa.timestamp("ns", "UTC")),
            "tags": pa.array([["x"], []], pa.list_(pa.string())),
        }
    )
    framed = pc.encode(table, reg, "events-value", format="PROTOBUF")
    latest = reg.get_latest("events-value")
    assert "message Events" in latest.schema
    out = pc.decode(framed, reg)
    assert out.column("id").to_pylist() == [1, 2]
    assert out.column("name").to_pylist() == ["a", None]  # a proto3 optional field keeps the null
    assert out.column("at").cast(pa.int64()).to_pylist() == [0, 1_500_000_000]
    assert out.column("tags").to_pylist() == [["x"], []]
    reg.close()


def test_encoder_value_and_pickling():
    encoder = MessageEncoder({1: SHOP}, "orders-value", format="PROTOBUF", schema=SHOP, message=CUSTOMER)
    value = encoder.encode_value({"name": "n", "tier": 2})
    assert value == wire.CONFLUENT_PROTOBUF.pack(
        1, _cls(CUSTOMER)(name="n", tier=2).SerializeToString(), message_indexes=[0]
    )
    clone = pickle.loads(pickle.dumps(encoder))
    assert clone.encode_value({"name": "n", "tier": 2}) == value
    decoder = pickle.loads(pickle.dumps(MessageDecoder({1: SHOP}, format="PROTOBUF", message=CUSTOMER, threads=2)))
    assert decoder.message == CUSTOMER and decoder.threads == 2
    assert decoder.decode_value(value) == {"name": "n", "tier": 2}


def test_message_option_is_for_protobuf_only():
    with pytest.raises(ValueError, match="Protobuf"):
        MessageEncoder({1: "{}"}, "s", format="JSON", message="x")
    avro = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
    with pytest.raises(SchemaError, match="Protobuf"):
        MessageDecoder({1: avro}, message="x").decode([wire.CONFLUENT.pack(1, b"\x02")])


MONEY = """
syntax = "proto3";
package common;

message Money {
  string currency = 1;
  int64 units = 2;
}
"""
INVOICE = """
syntax = "proto3";
package billing;

import "common/money.proto";

message Invoice {
  string id = 1;
  common.Money total = 2;
}
"""


def test_encode_registers_imported_files_as_references(backend, tmp_path):
    reg = LocalRegistry(str(tmp_path / "schemas.db"))
    model = parse(INVOICE, {"common/money.proto": MONEY})
    table = pa.table({"id": ["i1"], "total": [{"currency": "EUR", "units": 12}]})
    framed = pc.encode(table, reg, "invoices-value", format="PROTOBUF", schema=model)
    assert reg.get_latest("common/money.proto").schema.count("message Money") == 1
    latest = reg.get_latest("invoices-value")
    assert [(r.name, r.subject) for r in latest.references] == [("common/money.proto", "common/money.proto")]
    # the decoder resolves the import through the registry's references
    assert pc.decode(framed, reg).to_pylist() == [{"id": "i1", "total": {"currency": "EUR", "units": 12}}]
    reg.close()


def test_latest_version_readers_and_writers_resolve_references(backend, tmp_path):
    reg = LocalRegistry(str(tmp_path / "schemas.db"))
    model = parse(INVOICE, {"common/money.proto": MONEY})
    table = pa.table({"id": ["i2"], "total": [{"currency": "USD", "units": 3}]})
    pc.encode(table, reg, "invoices-value", format="PROTOBUF", schema=model)
    again = pc.encode(table, reg, "invoices-value", format="PROTOBUF", use_latest=True)
    out = MessageDecoder(reg, reader_subject="invoices-value").decode(again)
    assert out.to_pylist() == [{"id": "i2", "total": {"currency": "USD", "units": 3}}]
    reg.close()


def test_registry_schema_type_with_message_and_on_error_raise(backend, tmp_path):
    reg = LocalRegistry(str(tmp_path / "schemas.db"))
    sid = reg.register("orders-value", SHOP, schema_type="PROTOBUF")
    messages = [_framed(sid, _order(i), ORDER) for i in range(2)]
    out = MessageDecoder(reg, message=ORDER).decode(messages)  # no format=, no on_error: raise mode
    assert _rows(out) == [_expected_order(0), _expected_order(1)]
    reg.close()


# -- one schema id and one message-index path: the prefix skipped as a whole -----------------------


def _general_path_only(monkeypatch):
    from pulsar_codec.pipeline import decoder as decoder_module

    monkeypatch.setattr(decoder_module, "single_id", lambda chunks, protocol: None)


@pytest.mark.parametrize(
    "batch",
    [
        "orders",  # every row [1] (Order is the second message of the file)
        "lines",  # every row the nested path [1, 0]
        "customers",  # every row "00", the first message's shortcut
        "orders-and-nulls",
        "orders-then-a-customer",  # two paths: the general path
        "orders-then-a-short-message",  # a message that ends inside the index array
        "guid",
    ],
)
def test_one_path_fast_path_matches_the_general_path(backend, monkeypatch, batch):
    from pulsar_codec import _unframe
    from pulsar_codec._arrow import binary_chunks

    line = _cls(LINE)(sku="x", qty=3).SerializeToString()
    protocol = wire.CONFLUENT_PROTOBUF
    messages: list = [_framed(1, _order(i), ORDER) for i in range(6)]
    if batch == "lines":
        messages = [_framed(1, line, LINE)] * 4
    elif batch == "customers":
        messages = [_framed(1, _customer(i), CUSTOMER) for i in range(4)]
        assert all(m[5] == 0 for m in messages)
    elif batch == "orders-and-nulls":
        messages = [None, *messages[:2], None, *messages[2:]]
    elif batch == "orders-then-a-customer":
        messages.append(_framed(1, _customer(9), CUSTOMER))
    elif batch == "orders-then-a-short-message":
        messages.append(messages[0][:6])
    elif batch == "guid":
        protocol = wire.CONFLUENT_GUID_PROTOBUF
        guid = uuid.UUID(int=7)
        messages = [protocol.pack(guid, _order(i), message_indexes=MODEL.indexes_for(ORDER)) for i in range(4)]
    fast = {"orders", "lines", "customers", "orders-and-nulls", "guid"}
    chunks, _ = binary_chunks(pa.array(messages, pa.binary()), native_offsets=True)
    assert (_unframe.single_id(chunks, protocol) is not None) == (batch in fast)

    registry = {1: SHOP} if batch != "guid" else {uuid.UUID(int=7): SHOP}
    got = pc.decode(messages, registry, format="PROTOBUF", protocol=protocol, on_error="null")
    _general_path_only(monkeypatch)
    want = pc.decode(messages, registry, format="PROTOBUF", protocol=protocol, on_error="null")
    assert got.batch.equals(want.batch)
    assert got.errors.equals(want.errors)
    assert got.batch.num_rows == len(messages)
