"""format("pulsar") with a Protobuf subject whose message is not the ``.proto``'s first: the
``message`` option (``key_message`` for a KeyValue key), on a real pulsar-lite broker and a local
Spark session.

The oracle is confluent-kafka's ``ProtobufSerializer`` on a message class protoc compiled in the
test (grpcio-tools): it registers the file through the registry's REST server and frames the
second message with its message-index path; the sink must write the same bytes, and the source
must read them back.
"""

from __future__ import annotations

import json
import uuid
import warnings

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")
pytest.importorskip("grpc_tools")

from pyspark.sql.types import StructType

from protobuf_fixtures import compile_proto, message_class
from pulsar_codec import spark as pcs
from pulsar_codec.errors import ErrorCode
from pulsar_codec.integrations.spark.pulsar_sink import SinkPlan
from pulsar_codec.integrations.spark.pulsar_source import SourcePlan
from pulsar_codec.pulsar.reader import keyvalue_columns, read_batches
from pulsar_codec.registry import LocalRegistry

pytest_plugins = ["spark_fixtures", "pulsar_fixtures"]
pytestmark = pytest.mark.slow

# Order is the file's second message: its Confluent message-index path is [1] (bytes 02 02)
PROTO = (
    'syntax = "proto3";\npackage shop.v1;\n'
    "message Item { string sku = 1; }\n"
    "message Order { int64 id = 1; Item item = 2; }\n"
)
KEY_PROTO = (
    'syntax = "proto3";\npackage shop.v1;\n'
    "message Unused { bool flag = 1; }\n"
    "message OrderKey { string region = 1; int32 shard = 2; }\n"
)
POOL = compile_proto(PROTO, "order.proto")
Order = message_class(POOL, "shop.v1.Order")
Item = message_class(POOL, "shop.v1.Item")
OrderKey = message_class(compile_proto(KEY_PROTO, "order_key.proto"), "shop.v1.OrderKey")
ROWS = [(1, "a"), (2, None), (0, ""), (-(2**40), "zoë")]  # None: no item; "": an empty Item
VALUE_TYPE = "struct<id:bigint,item:struct<sku:string>>"


def as_value(order_id, sku):
    return {"id": order_id, "item": None if sku is None else {"sku": sku}}


def as_message(order_id, sku):
    return Order(id=order_id) if sku is None else Order(id=order_id, item=Item(sku=sku))


def new_topic(stem: str) -> str:
    return f"persistent://public/default/{stem}-{uuid.uuid4().hex[:8]}"


def local_name(topic: str) -> str:
    return topic.rsplit("/", 1)[-1]


def payloads(url: str, topic: str) -> list[bytes]:
    return [p for batch in read_batches(url, topic, timeout_ms=10_000) for p in batch.column("payload").to_pylist()]


def confluent():
    with warnings.catch_warnings():
        try:  # authlib (confluent-kafka imports it) adds an "always" filter for its warnings on import
            import authlib.deprecate  # noqa: F401
        except ImportError:
            pass
        warnings.simplefilter("ignore")
        sr = pytest.importorskip("confluent_kafka.schema_registry")
        pb = pytest.importorskip("confluent_kafka.schema_registry.protobuf")
        from confluent_kafka.serialization import MessageField, SerializationContext
    return sr, pb, MessageField, SerializationContext


@pytest.fixture(scope="module")
def registered(spark):
    pcs.register(spark)


def values(spark):
    return spark.createDataFrame([(as_value(*r),) for r in ROWS], f"value {VALUE_TYPE}").coalesce(1)


def write(df, url, registry_path, **options):
    df.write.format("pulsar").mode("append").options(service_url=url, registry=str(registry_path), **options).save()


def read(spark, url, registry_path, **options):
    return spark.read.format("pulsar").options(service_url=url, registry=str(registry_path), **options).load()


def test_the_second_message_is_written_as_confluents_serializer_writes_it_and_read_back(
    spark, registered, pulsar_broker, tmp_path
):
    from pulsar_codec.registry.server import serve

    sr, pb, MessageField, SerializationContext = confluent()
    registry_path = tmp_path / "registry.db"
    topic = new_topic("pb-second")
    with LocalRegistry(registry_path) as registry, serve(registry) as server:
        ctx = SerializationContext(local_name(topic), MessageField.VALUE)
        with sr.SchemaRegistryClient({"url": server.url, "max.retries": 0}) as client:
            serialize = pb.ProtobufSerializer(Order, client, {"use.deprecated.format": False})
            expected = [serialize(as_message(*r), ctx) for r in ROWS]
        ck_id = registry.get_latest(f"{local_name(topic)}-value").id
    assert {p[:7] for p in expected} == {b"\x00" + ck_id.to_bytes(4, "big") + b"\x02\x02"}

    # the subject's latest version is Confluent's registration of the whole file
    write(values(spark), pulsar_broker.url, registry_path, topic=topic, use_latest="true", message="shop.v1.Order")
    assert payloads(pulsar_broker.url, topic) == expected

    # a schema given as text, registered by the sink under another subject: the same frames but the id
    ours = new_topic("pb-second-text")
    write(
        values(spark),
        pulsar_broker.url,
        registry_path,
        topic=ours,
        schema=PROTO,
        format="PROTOBUF",
        message="shop.v1.Order",
    )
    with LocalRegistry(registry_path) as registry:
        our_id = registry.get_latest(f"{local_name(ours)}-value").id
    written = payloads(pulsar_broker.url, ours)
    assert [p[:5] for p in written] == [b"\x00" + our_id.to_bytes(4, "big")] * len(ROWS)
    assert [p[5:] for p in written] == [p[5:] for p in expected]

    for name, sid in ((topic, ck_id), (ours, our_id)):
        back = read(spark, pulsar_broker.url, registry_path, topics=name, message="shop.v1.Order")
        assert back.schema["value"].dataType.simpleString() == VALUE_TYPE
        rows = back.select("value", "decode_error", "schema_id").collect()
        assert [r["decode_error"] for r in rows] == [None] * len(ROWS)
        assert [r["schema_id"] for r in rows] == [sid] * len(ROWS)
        assert [r["value"].asDict(recursive=True) for r in rows] == [as_value(*r) for r in ROWS]

    # without the option the source reads the file's first message: the Orders are error rows
    first = read(spark, pulsar_broker.url, registry_path, topics=topic)
    assert first.schema["value"].dataType.simpleString() == "struct<sku:string>"
    errors = [r["decode_error"] for r in first.collect()]
    assert [e["code"] for e in errors] == [int(ErrorCode.SCHEMA_OTHER_MESSAGE)] * len(ROWS)
    assert "shop.v1.Order" in errors[0]["message"]


def test_key_message_and_message_on_a_keyvalue_topic(spark, registered, pulsar_broker, tmp_path):
    registry_path = tmp_path / "registry.db"
    topic = new_topic("pb-kv")
    keys = [{"region": "eu", "shard": 3}, {"region": "", "shard": 0}, {"region": "us", "shard": -1}]
    df = spark.createDataFrame(
        [(k, as_value(*r)) for k, r in zip(keys, ROWS)], f"key struct<region:string,shard:int>, value {VALUE_TYPE}"
    ).coalesce(1)
    options = {"keyvalue": "INLINE", "key_format": "PROTOBUF", "format": "PROTOBUF"}
    write(
        df,
        pulsar_broker.url,
        registry_path,
        topic=topic,
        key_schema=KEY_PROTO,
        key_message="shop.v1.OrderKey",
        schema=PROTO,
        message="shop.v1.Order",
        **options,
    )
    batch = next(iter(read_batches(pulsar_broker.url, topic, timeout_ms=10_000)))
    framed_keys, framed_values = (c.to_pylist() for c in keyvalue_columns(batch, "INLINE"))
    # the runtime's own bytes behind the prefix and the [1] message-index path
    assert [k[5:] for k in framed_keys] == [b"\x02\x02" + OrderKey(**k).SerializeToString() for k in keys]
    assert [v[5:] for v in framed_values] == [b"\x02\x02" + as_message(*r).SerializeToString() for r in ROWS[:3]]

    back = read(
        spark,
        pulsar_broker.url,
        registry_path,
        topics=topic,
        key_message="shop.v1.OrderKey",
        message="shop.v1.Order",
        **options,
    )
    assert back.schema["key"].dataType.simpleString() == "struct<region:string,shard:int>"
    rows = back.collect()
    assert [r["decode_error"] for r in rows] == [None] * 3
    assert [(r["key"].asDict(), r["value"].asDict(recursive=True)) for r in rows] == [
        (k, as_value(*r)) for k, r in zip(keys, ROWS)
    ]


def test_message_options_are_refused_where_they_cannot_apply(pulsar_broker, tmp_path):
    registry_path = str(tmp_path / "registry.db")
    avro = {"type": "record", "name": "User", "fields": [{"name": "id", "type": "long"}]}
    with LocalRegistry(registry_path) as registry:
        registry.register("users-value", json.dumps(avro))
        registry.register("orders-value", PROTO, schema_type="PROTOBUF")
    source = {"service_url": pulsar_broker.url, "registry": registry_path}
    with pytest.raises(ValueError, match="option 'message' applies to Protobuf schemas; the value schema is AVRO"):
        SourcePlan.from_options({**source, "topics": "users", "message": "t.User"})
    with pytest.raises(ValueError, match="'key_message' applies to KeyValue topics"):
        SourcePlan.from_options({**source, "topics": "orders", "key_message": "shop.v1.Item"})
    with pytest.raises(ValueError, match="'key_message' applies to Protobuf keys; key_format=STRING"):
        SourcePlan.from_options(
            {**source, "topics": "orders", "keyvalue": "INLINE", "key_format": "string", "key_message": "a.B"}
        )
    # walk27 #13: a mistyped key_format is refused with the names it takes, not looked up as a subject
    with pytest.raises(ValueError, match=r"'key_format' must name .*AVRO, JSON, PROTOBUF.*STRING, .*INT64.*'STRNG'"):
        SourcePlan.from_options({**source, "topics": "orders", "keyvalue": "INLINE", "key_format": "STRNG"})
    plan = SourcePlan.from_options({**source, "topics": "orders", "message": "shop.v1.Order"})
    assert plan.value is not None and plan.value.decoder.message == "shop.v1.Order"
    assert plan.value.spark_type().simpleString() == VALUE_TYPE

    sink = {"service_url": pulsar_broker.url, "registry": registry_path}
    value = StructType.fromJson(
        {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    )
    with pytest.raises(
        ValueError, match="option 'message' applies to Protobuf schemas; 'users-value' is written as AVRO"
    ):
        SinkPlan.from_options({**sink, "topic": "users", "message": "t.User"}, value, False)
    with pytest.raises(ValueError, match="option 'message' applies to Protobuf schemas; 'x-value' is written as JSON"):
        SinkPlan.from_options({**sink, "topic": "x", "format": "JSON", "message": "t.User"}, value, False)
    with pytest.raises(ValueError, match="'key_message' applies to KeyValue topics"):
        SinkPlan.from_options({**sink, "topic": "orders", "key_message": "shop.v1.Item"}, value, False)
