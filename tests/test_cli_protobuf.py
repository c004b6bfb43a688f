"""``pulsar-codec decode`` of Protobuf subjects (issue 12), on the local and the Spark engine.

The messages are framed by confluent-kafka's own ProtobufSerializer through the embedded registry's
REST facade (message classes built from protoc descriptors, no generated code), so the input is what
a Kafka topic of Protobuf values holds; the protobuf runtime is the oracle of the decoded rows.
"""

from __future__ import annotations

import warnings

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("grpc_tools")
pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from protobuf_fixtures import canonical_rows, compile_proto, expected_rows, message_class  # noqa: E402
from pulsar_codec import wire  # noqa: E402
from pulsar_codec.cli import app as cli_app  # noqa: E402
from pulsar_codec.errors import ErrorCode  # noqa: E402
from pulsar_codec.registry import LocalRegistry  # noqa: E402
from pulsar_codec.registry.server import serve  # noqa: E402

with warnings.catch_warnings():
    try:
        import authlib.deprecate  # noqa: F401
    except ImportError:
        pass
    warnings.simplefilter("ignore", DeprecationWarning)
    ck_sr = pytest.importorskip("confluent_kafka.schema_registry")
    ck_pb = pytest.importorskip("confluent_kafka.schema_registry.protobuf")
    from confluent_kafka.serialization import MessageField, SerializationContext

pytest_plugins = ["spark_fixtures"]

TEXT = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";

message Order {
  int64 id = 1;
  string customer = 2;
  enum Status { NEW = 0; PAID = 1; }
  Status status = 3;
  google.protobuf.Timestamp at = 4;
  message Line { string sku = 1; int32 qty = 2; }  // no unsigned types: Spark has none yet
  repeated Line lines = 5;
  map<string, int64> attrs = 6;
  oneof pay { string card = 7; bytes token = 8; }
}
message Refund { int64 order = 1; string reason = 2; }
"""
POOL = compile_proto(TEXT, "shop.proto")
Order = message_class(POOL, "shop.Order")
Refund = message_class(POOL, "shop.Refund")


def _orders():
    first = Order(id=1, customer="Zoë", status=1, card="4111")
    first.at.seconds, first.at.nanos = 1_700_000_000, 250_000_000  # microseconds: Parquet keeps them
    first.lines.add(sku="a", qty=-(2**31))
    first.attrs["k"] = -(2**40)
    return [first, Order(), Order(id=-7, status=4, token=b"\x00")]  # 4: an unknown enum number


@pytest.fixture
def protobuf_input(tmp_path):
    """A registry file and a Parquet file of Confluent-framed Protobuf messages: three Orders, a
    Refund (another message type of the same schema), a tombstone, a corrupt payload and an id the
    registry does not know."""
    db = tmp_path / "registry.db"
    orders, refund = _orders(), Refund(order=1, reason="late")
    with LocalRegistry(db) as registry, serve(registry) as server:
        client = ck_sr.SchemaRegistryClient({"url": server.url, "max.retries": 0})
        ctx = SerializationContext("shop", MessageField.VALUE)
        framed_orders = [ck_pb.ProtobufSerializer(Order, client)(m, ctx) for m in orders]
        framed_refund = ck_pb.ProtobufSerializer(Refund, client)(refund, ctx)
        client.close()
        schema_id = registry.get_latest("shop-value").id
    corrupt = framed_orders[0][:6] + b"\x0a\x09short"  # field 1 as length-delimited: wrong wire type
    unknown = wire.CONFLUENT.pack(9999, b"\x00\x08\x01")
    messages = [*framed_orders[:2], framed_refund, None, corrupt, unknown, framed_orders[2]]
    pq.write_table(pa.table({"value": pa.array(messages, pa.binary())}), tmp_path / "in.parquet")
    return tmp_path, schema_id, orders, refund


def _run(tmp_path, out, *more):
    argv = ["decode", str(tmp_path / "in.parquet"), "--registry", str(tmp_path / "registry.db"), "-o", str(out)]
    return cli_app.main([*argv, *more])


def _check_orders(table, orders):
    """The Order rows (0, 1, 6) equal the runtime oracle; the others are bad or null."""
    decoded = table.drop_columns(["decode_error"])
    at = decoded.schema.get_field_index("at")  # the oracle gives nanoseconds; Parquet holds microseconds
    decoded = decoded.set_column(at, "at", decoded.column(at).cast(pa.timestamp("ns", "UTC")))
    schema = decoded.schema
    rows = decoded.to_pylist()
    expected = expected_rows(orders, schema)
    assert canonical_rows([rows[0], rows[1], rows[6]], schema) == canonical_rows(expected, schema)
    errors = table.column("decode_error").to_pylist()
    assert [e is None for e in errors] == [True, True, False, True, False, False, True]
    return errors


def test_decode_protobuf_subject_local(protobuf_input, capsys):
    tmp_path, schema_id, orders, refund = protobuf_input
    assert _run(tmp_path, tmp_path / "all") == 0
    assert "decoded 3 of 7 rows" in capsys.readouterr().out
    table = pq.read_table(tmp_path / "all")
    names = ["id", "customer", "status", "at", "lines", "attrs", "card", "token", "pay_case"]
    assert table.column_names == [*names, "decode_error"]
    assert table.schema.field("at").type == pa.timestamp("us", "UTC")  # the contract's Parquet timestamps
    errors = _check_orders(table, orders)
    assert errors[2]["code"] == ErrorCode.SCHEMA_OTHER_MESSAGE and "shop.Refund" in errors[2]["message"]
    assert errors[4]["code"] == ErrorCode.PROTO_WRONG_WIRE_TYPE and errors[4]["message"].endswith("(message 4, byte 0)")
    assert errors[5]["code"] == ErrorCode.SCHEMA_NOT_FOUND

    # --message picks the other type: the Refund decodes, the Orders are the bad rows now
    assert _run(tmp_path, tmp_path / "refunds", "--message", "shop.Refund", "--dead-letter", str(tmp_path / "d")) == 0
    refunds = pq.read_table(tmp_path / "refunds")
    assert refunds.column_names == ["order", "reason"]
    assert refunds.to_pylist() == [{"order": 1, "reason": "late"}, {"order": None, "reason": None}]
    dead = pq.read_table(tmp_path / "d")
    assert dead.column("index").to_pylist() == [0, 1, 4, 5, 6]
    assert dead.column("schema_id").to_pylist() == [schema_id] * 3 + [9999, schema_id]
    assert dead.column("code").to_pylist()[:2] == [ErrorCode.SCHEMA_OTHER_MESSAGE] * 2

    # a .proto reader schema from a file reads the same; an explicit prefix protocol too
    (tmp_path / "reader.proto").write_text(TEXT)
    more = ["--reader-schema", f"@{tmp_path / 'reader.proto'}", "--protocol", "confluent-protobuf"]
    assert _run(tmp_path, tmp_path / "reader", *more) == 0
    assert pq.read_table(tmp_path / "reader").equals(table)


def test_decode_protobuf_refusals(protobuf_input, capsys):
    tmp_path, *_ = protobuf_input
    assert _run(tmp_path, tmp_path / "x", "--message", "shop.Nope") == 2  # a bad argument, as with Avro below
    assert "--message shop.Nope: shop.proto defines no message 'shop.Nope'" in capsys.readouterr().err
    assert _run(tmp_path, tmp_path / "x", "--reader-schema", "syntax = 'proto3'; message {") == 2
    assert "not a valid Protobuf schema" in capsys.readouterr().err
    avro = '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}'
    assert _run(tmp_path, tmp_path / "x", "--reader-schema", avro, "--message", "shop.Order") == 2
    assert "--message applies to Protobuf" in capsys.readouterr().err


def test_decode_protobuf_subject_spark_engine_matches_local(spark, protobuf_input, capsys):
    tmp_path, _, orders, _ = protobuf_input
    assert _run(tmp_path, tmp_path / "local") == 0
    assert _run(tmp_path, tmp_path / "spark", "--engine", "spark") == 0
    assert "decoded 3 of 7 rows" in capsys.readouterr().out
    local, on_spark = pq.read_table(tmp_path / "local"), pq.read_table(tmp_path / "spark")
    assert on_spark.column_names == local.column_names
    _check_orders(on_spark, orders)
    codes = [None if e is None else e["code"] for e in on_spark.column("decode_error").to_pylist()]
    assert codes == [None if e is None else e["code"] for e in local.column("decode_error").to_pylist()]


EMPTY_TEXT = """syntax = "proto3";
package shop;
import "google/protobuf/empty.proto";

message Ping { int64 id = 1; google.protobuf.Empty em = 2; repeated google.protobuf.Empty ems = 3; }
"""
READER_TEXT = 'syntax = "proto3";\npackage shop;\nmessage Ping { int64 id = 1; }\n'


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_decode_protobuf_message_without_fields_is_refused(tmp_path, capsys, engine, request):
    """Parquet stores no struct without fields (google.protobuf.Empty): the decode is refused in one
    line naming the fields, before anything is written, and a reader schema without them reads."""
    if engine == "spark":
        request.getfixturevalue("spark")
    with LocalRegistry(tmp_path / "registry.db") as registry:
        schema_id = registry.register_full("ping-value", EMPTY_TEXT, "PROTOBUF").id
    ping = message_class(compile_proto(EMPTY_TEXT, "ping.proto"), "shop.Ping")(id=5)
    ping.em.SetInParent()
    framed = wire.CONFLUENT_PROTOBUF.pack(schema_id, ping.SerializeToString(), message_indexes=[0])
    pq.write_table(pa.table({"value": pa.array([framed], pa.binary())}), tmp_path / "in.parquet")
    out = tmp_path / "out"
    assert _run(tmp_path, out, "--engine", engine) == 1
    error = capsys.readouterr().err
    assert "em, ems[] are messages without fields" in error and "Traceback" not in error
    assert "internal error" not in error and not out.exists()
    (tmp_path / "reader.proto").write_text(READER_TEXT)
    assert _run(tmp_path, out, "--engine", engine, "--reader-schema", f"@{tmp_path / 'reader.proto'}") == 0
    assert pq.read_table(out).column("id").to_pylist() == [5]
