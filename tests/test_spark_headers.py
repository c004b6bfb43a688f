"""spark.decode on Kafka-shaped DataFrames: schema ids in record headers (Confluent's GUID header as
confluent-kafka's serializer writes it, Hortonworks', Apicurio's) and every wire protocol in the
payload (GUIDs, AWS Glue), against a real local Spark session and the embedded registry."""

from __future__ import annotations

import datetime
import io
import json
import uuid
import warnings

import fastavro
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from pulsar_codec import wire  # noqa: E402
from pulsar_codec.errors import ErrorCode  # noqa: E402
from pulsar_codec.integrations import spark as pcs  # noqa: E402
from pulsar_codec.integrations.spark.headers import HeaderIds, header_values  # noqa: E402
from pulsar_codec.registry import LocalRegistry  # noqa: E402

pytest_plugins = ["spark_fixtures"]

V1 = {"type": "record", "name": "User", "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}]}
V2 = {
    "type": "record",
    "name": "User",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "email", "type": ["null", "string"], "default": None},
    ],
}
KEY = {"type": "record", "name": "UserKey", "fields": [{"name": "tenant", "type": "string"}]}
KAFKA = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "headers array<struct<key: string, value: binary>>"
)
HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def body(schema, record) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def kafka_frame(spark, records, partitions=2):
    """A DataFrame shaped like Spark's Kafka source output; ``records`` are (key, value, headers)."""
    when = datetime.datetime(2025, 1, 1)
    rows = [(k, v, "users", i % 2, i, when, h) for i, (k, v, h) in enumerate(records)]
    return spark.createDataFrame(rows, KAFKA).repartition(partitions)


def decoded(df):
    """(decoded dict or None, error or None) per row, by offset."""
    rows = sorted(df.collect(), key=lambda r: r["offset"])
    out = []
    for r in rows:
        value = r["decoded"]
        error = r["decode_error"]
        out.append((None if value is None else value.asDict(recursive=True), None if error is None else error.asDict()))
    return out


# --------------------------------------------------------------------------------------------
# header values and frames, without Spark


def test_header_values_first_or_last_and_absent():
    headers = pa.array(
        [
            [{"key": "a", "value": b"1"}, {"key": "b", "value": b"2"}, {"key": "a", "value": b"3"}],
            [],
            None,
            [{"key": "a", "value": None}, {"key": "a", "value": b"4"}],
            [{"key": "b", "value": b"5"}],
        ],
        HEADERS,
    )
    assert header_values(headers, "a").to_pylist() == [b"1", None, None, b"4", None]
    assert header_values(headers, "a", last=True).to_pylist() == [b"3", None, None, b"4", None]
    large = headers.cast(pa.large_list(pa.struct([("key", pa.large_string()), ("value", pa.large_binary())])))
    assert header_values(large.slice(1), "b").to_pylist() == [None, None, None, b"5"]
    assert header_values(headers, "b", value_type=pa.large_binary()).type == pa.large_binary()


def test_confluent_header_frames_route_by_magic_byte():
    guid = uuid.UUID("89791762-2336-4186-9674-299b90a802e2")
    headers = pa.array(
        [
            [("__value_schema_id", b"\x01" + guid.bytes)],
            [("__value_schema_id", b"\x00\x00\x00\x00\x07")],
            [],
            [("__value_schema_id", b"\x01" + guid.bytes)],
        ],
        HEADERS,
    )
    values = pa.array([b"A", b"B", b"\x01" + guid.bytes + b"C", None])
    ids = HeaderIds.of(wire.CONFLUENT_PROTOBUF, "value", "headers")
    assert ids.protocols(wire.CONFLUENT_PROTOBUF) == (wire.CONFLUENT_PROTOBUF, wire.CONFLUENT_GUID_PROTOBUF)
    frames, routes, bad = ids.frames(headers, values)
    assert frames.to_pylist() == [b"\x01" + guid.bytes + b"A", b"\x00\x00\x00\x00\x07B", values[2].as_py(), None]
    assert routes.tolist() == [1, 0, 1, 0] and bad == []
    assert HeaderIds.of(wire.HORTONWORKS, "key", "h").name == wire.HORTONWORKS_KEY_HEADER
    assert HeaderIds.of(wire.APICURIO_V3, "value", "h").name == wire.APICURIO_VALUE_CONTENT_ID_HEADER
    with pytest.raises(ValueError, match="AWS_GLUE"):
        HeaderIds.of(wire.AWS_GLUE, "value", "h")


class KafkaBatch:
    """Enough of a DataFrame shaped like Spark's Kafka source for ``pcs.decode`` to plan its job
    without a Spark session (a Mapping registry and a reader: no pre-pass); ``mapInArrow`` runs
    the job's function on one Arrow batch here, as an executor would."""

    isStreaming = False

    def __init__(self, records, headers_type=None):
        from pyspark.sql import types as T

        header = T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())])
        self.schema = T.StructType(
            [
                T.StructField("key", T.BinaryType()),
                T.StructField("value", T.BinaryType()),
                T.StructField("topic", T.StringType()),
                T.StructField("partition", T.IntegerType()),
                T.StructField("offset", T.LongType()),
                T.StructField("timestamp", T.TimestampType()),
                T.StructField("headers", headers_type or T.ArrayType(header)),
            ]
        )
        self.columns = self.schema.names
        n = len(records)
        arrays = [
            pa.array([r[0] for r in records], pa.binary()),
            pa.array([r[1] for r in records], pa.binary()),
            pa.array(["users"] * n),
            pa.array([0] * n, pa.int32()),
            pa.array(range(n), pa.int64()),
            pa.array([datetime.datetime(2025, 1, 1)] * n, pa.timestamp("us")),
            pa.array([r[2] for r in records], HEADERS),
        ]
        self.batch = pa.RecordBatch.from_arrays(arrays, self.columns)

    def mapInArrow(self, job, schema):
        return pa.Table.from_batches(list(job(iter([self.batch]))))


def test_header_must_be_one_whole_prefix(backend):
    """A Confluent or Hortonworks header cut short or running on is an error row named after the
    header: joined to the payload it would read the payload's first bytes as the id, or its own
    last bytes as the start of the record (a wrong record, no error)."""
    h, hw = wire.CONFLUENT_VALUE_SCHEMA_ID_HEADER, wire.HORTONWORKS_VALUE_HEADER
    ada = body(V1, {"id": 1, "name": "ada"})
    records = [
        (None, ada, [(h, wire.CONFLUENT.pack(7, b""))]),
        (None, ada, [(h, wire.CONFLUENT.pack(7, b"") + b"\x99")]),  # read as id 7 and a record of id -141
        (None, ada, [(h, b"\x00\x00\x00\x07")]),  # read as id 0x702 (the payload's first byte)
        (None, ada, [(h, b"")]),
        (None, ada, [(h, b"\x01" + uuid.UUID(int=7).bytes[:15])]),
        (None, None, [(h, b"\x00\x07")]),  # a tombstone stays a null row
        (None, wire.CONFLUENT.pack(7, ada), []),
    ]
    out = pcs.decode(KafkaBatch(records), registry={7: V1, 0x702: V1}, reader_schema=V1, schema_id_from="headers")
    rows = list(zip(out.column("decoded").to_pylist(), out.column("decode_error").to_pylist()))
    assert rows[0] == ({"id": 1, "name": "ada"}, None) and rows[6] == ({"id": 1, "name": "ada"}, None)
    assert rows[5] == (None, None)
    codes = [e["code"] for _, e in rows[1:5]]
    assert codes == [
        ErrorCode.WIRE_BAD_HEADER_LENGTH,
        ErrorCode.WIRE_SHORT_PREFIX,
        ErrorCode.WIRE_EMPTY,
        ErrorCode.WIRE_SHORT_PREFIX,
    ]
    assert all(v is None and e["message"].startswith(f"header {h}: ") for v, e in rows[1:5])
    assert "of 6 bytes, expected 5" in rows[1][1]["message"] and rows[1][1]["payload"] == ada
    # Protobuf: the header holds the message-index array too, and nothing after it
    g = uuid.UUID(int=9)
    headers = pa.array(
        [
            [(h, wire.CONFLUENT_GUID_PROTOBUF.pack(g, b"", message_indexes=[1, 0]))],
            [(h, b"\x01" + g.bytes)],
            [(h, wire.CONFLUENT_PROTOBUF.pack(3, b"", message_indexes=[2]) + b"\x05")],
        ],
        HEADERS,
    )
    ids = HeaderIds.of(wire.CONFLUENT_PROTOBUF, "value", "headers")
    frames, routes, bad = ids.frames(headers, pa.array([b"X"] * 3), wire.CONFLUENT_PROTOBUF)
    assert frames.to_pylist()[0] == headers[0].values[0]["value"].as_py() + b"X" and routes.tolist()[0] == 1
    assert [(i, code) for i, code, _, _ in bad] == [
        (1, ErrorCode.WIRE_TRUNCATED_INDEXES),
        (2, ErrorCode.WIRE_BAD_HEADER_LENGTH),
    ]
    # Hortonworks: the header is exactly the prefix its protocol byte announces
    records = [
        (None, ada, [(hw, b"\x03\x00\x00\x00\x07")]),
        (None, ada, [(hw, b"\x03\x00\x00\x00\x07\x00")]),
        (None, ada, [(hw, b"\x02\x00\x00\x00\x07")]),  # protocol 2 holds 8 id bytes
    ]
    out = pcs.decode(
        KafkaBatch(records), registry={7: V1}, reader_schema=V1, protocol="hortonworks", schema_id_from="headers"
    )
    errors = out.column("decode_error").to_pylist()
    assert out.column("decoded").to_pylist()[0] == {"id": 1, "name": "ada"} and errors[0] is None
    assert [e["code"] for e in errors[1:]] == [ErrorCode.WIRE_BAD_HEADER_LENGTH, ErrorCode.WIRE_SHORT_PREFIX]
    assert all(e["message"].startswith(f"header {hw}: ") for e in errors[1:])


def test_headers_column_is_checked_before_the_job():
    df = KafkaBatch([(None, b"x", [])])
    df.columns = [c for c in df.columns if c != "headers"]
    with pytest.raises(ValueError, match="headers_column="):
        pcs.decode(df, registry={1: V1}, reader_schema=V1, schema_id_from="headers")
    from pyspark.sql import types as T

    df = KafkaBatch([(None, b"x", [])], T.MapType(T.StringType(), T.BinaryType()))
    with pytest.raises(ValueError, match="map<string,binary>"):
        pcs.decode(df, registry={1: V1}, reader_schema=V1, schema_id_from="headers")


def test_newest_schema_among_guids_a_rest_registry_gives_no_id_for():
    """``GET /schemas/guids/{guid}`` names no id: a GUID's schema ranks as the numbered schema with
    its text, and a choice among id-less GUIDs alone is warned about."""
    from pulsar_codec.integrations.spark.driver import newest_key
    from pulsar_codec.registry import RegisteredSchema

    v1, v2 = json.dumps(V1), json.dumps(V2)
    high, low = uuid.UUID(int=2**128 - 1), uuid.UUID(int=1)  # the GUID of V1 sorts last by text
    mixed = {high: RegisteredSchema(-1, v1), 1: RegisteredSchema(1, v1), 2: RegisteredSchema(2, v2)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert newest_key(mixed) == 2
        assert newest_key({high: RegisteredSchema(-1, v1)}) == high  # one schema: nothing to choose
    with pytest.warns(UserWarning, match="reader_schema"):
        assert newest_key({high: RegisteredSchema(-1, v1), low: RegisteredSchema(-1, v2)}) == high


# --------------------------------------------------------------------------------------------
# in Spark


@pytest.fixture
def served(tmp_path):
    pytest.importorskip("httpx")
    pytest.importorskip("starlette")
    from pulsar_codec.registry.server import serve

    reg = LocalRegistry(tmp_path / "schemas.db")
    with serve(reg) as server:
        yield reg, server
    reg.close()


def confluent_guid_records(server):
    """Records as confluent-kafka's AvroSerializer writes them in header mode, against our facade."""
    with warnings.catch_warnings():
        try:  # authlib (imported by confluent-kafka) installs an "always" filter for its warnings
            import authlib.deprecate  # noqa: F401
        except ImportError:
            pass
        warnings.simplefilter("ignore", DeprecationWarning)
        from confluent_kafka.schema_registry import SchemaRegistryClient, header_schema_id_serializer
        from confluent_kafka.schema_registry.avro import AvroSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": server.url, "max.retries": 0})
    conf = {"schema.id.serializer": header_schema_id_serializer}
    try:
        records = []
        for schema, value, key in (
            (V1, {"id": 1, "name": "ada"}, {"tenant": "t1"}),
            (V2, {"id": 2, "name": "bo", "email": "b@x"}, {"tenant": "t2"}),
        ):
            headers: list = []
            k = AvroSerializer(client, json.dumps(KEY), conf=conf)(
                key, SerializationContext("users", MessageField.KEY, headers)
            )
            v = AvroSerializer(client, json.dumps(schema), conf=conf)(
                value, SerializationContext("users", MessageField.VALUE, headers)
            )
            records.append((k, v, headers))
        return records
    finally:
        client.close()


def test_confluent_guid_headers_from_confluent_kafka(spark, served):
    reg, server = served
    records = confluent_guid_records(server)
    v1_id, v2_id = reg.get_latest("users-value").id - 1, reg.get_latest("users-value").id
    guid_v2 = uuid.UUID(reg.get_schema(v2_id).guid)
    value_header = records[0][2][1]
    assert value_header[0] == wire.CONFLUENT_VALUE_SCHEMA_ID_HEADER and value_header[1][0] == 1
    records += [
        (None, wire.CONFLUENT.pack(v1_id, body(V1, {"id": 3, "name": "no header"})), []),  # the payload's prefix
        (None, body(V1, {"id": 4, "name": "id header"}), [("__value_schema_id", wire.CONFLUENT.pack(v1_id, b""))]),
        (None, None, [("__value_schema_id", b"\x01" + guid_v2.bytes)]),  # a tombstone
        (None, body(V1, {"id": 6, "name": "x"}), [("__value_schema_id", b"\x01" + uuid.UUID(int=6).bytes)]),
        # the first header of the name counts (confluent-kafka's deserializer)
        (
            None,
            body(V2, {"id": 7, "name": "first", "email": None}),
            [
                ("__value_schema_id", b"\x01" + guid_v2.bytes),
                ("__value_schema_id", b"\x07garbage"),
            ],
        ),
        (None, body(V1, {"id": 8, "name": "bad magic"}), [("__value_schema_id", b"\x07garbage")]),
        # a header is one whole prefix, never run on into the payload (nor the payload into it)
        (None, body(V1, {"id": 9, "name": "long"}), [("__value_schema_id", wire.CONFLUENT.pack(v1_id, b"\x02"))]),
        (None, body(V1, {"id": 10, "name": "short"}), [("__value_schema_id", wire.CONFLUENT.pack(v1_id, b"")[:4])]),
    ]
    df = kafka_frame(spark, records)
    out = pcs.decode(df, registry=reg, schema_id_from="headers")
    # the payloads do not come back, but a bad row's payload is in its error
    assert out.columns == [c for c in df.columns if c != "value"] + ["decoded", "decode_error"]
    rows = decoded(out)
    assert [r[0] for r in rows[:5]] == [
        {"id": 1, "name": "ada", "email": None},
        {"id": 2, "name": "bo", "email": "b@x"},  # the reader: the newest schema, by registry id
        {"id": 3, "name": "no header", "email": None},
        {"id": 4, "name": "id header", "email": None},
        None,
    ]
    assert rows[4][1] is None  # a null value is a null row, not an error
    assert rows[5][0] is None and rows[5][1]["code"] == ErrorCode.SCHEMA_NOT_FOUND
    assert rows[6][0] == {"id": 7, "name": "first", "email": None}
    assert rows[7][0] is None and "magic" in rows[7][1]["message"]
    assert rows[7][1]["payload"] == body(V1, {"id": 8, "name": "bad magic"})  # the column's bytes, no header
    assert rows[5][1]["payload"] == records[5][1] and rows[6][1] is None
    assert [(r[0], r[1]["code"]) for r in rows[8:]] == [
        (None, ErrorCode.WIRE_BAD_HEADER_LENGTH),
        (None, ErrorCode.WIRE_SHORT_PREFIX),
    ]
    # the key column reads __key_schema_id; executors find GUIDs themselves without the pre-pass
    keyed = df.where(df.key.isNotNull())
    keys = pcs.decode(
        keyed, "key", registry=reg, schema_id_from="headers", prefetch=False, reader_schema=KEY, output="k"
    )
    assert sorted((r["k"]["tenant"], r["decode_error"]) for r in keys.collect()) == [("t1", None), ("t2", None)]


def test_hortonworks_and_apicurio_headers(spark):
    registry = {7: V1, 9: V2}
    hw = wire.HORTONWORKS_VALUE_HEADER
    records = [
        (None, body(V1, {"id": 1, "name": "a"}), [(hw, b"\x03\x00\x00\x00\x07")]),
        # the last header of the name counts (Kafka's lastHeader)
        (
            None,
            body(V2, {"id": 2, "name": "b", "email": "e"}),
            [(hw, b"\x03\x00\x00\x00\x07"), (hw, b"\x02" + (9).to_bytes(8, "big"))],
        ),
        (None, wire.HORTONWORKS.pack(7, body(V1, {"id": 3, "name": "c"})), []),
    ]
    out = pcs.decode(kafka_frame(spark, records), registry=registry, protocol="hortonworks", schema_id_from="headers")
    assert [r[0] for r in decoded(out)] == [
        {"id": 1, "name": "a", "email": None},
        {"id": 2, "name": "b", "email": "e"},
        {"id": 3, "name": "c", "email": None},
    ]
    gid = wire.APICURIO_VALUE_GLOBAL_ID_HEADER
    records = [
        (None, body(V1, {"id": 1, "name": "a"}), [(gid, wire.apicurio_header_value(7))]),
        (None, body(V1, {"id": 2, "name": "b"}), [(gid, b"\x00\x07")]),  # not an 8-byte id
        (None, wire.APICURIO.pack(9, body(V2, {"id": 3, "name": "c", "email": None})), []),
    ]
    out = pcs.decode(kafka_frame(spark, records), registry=registry, protocol=wire.APICURIO, schema_id_from="headers")
    rows = decoded(out)
    assert rows[0][0] == {"id": 1, "name": "a", "email": None} and rows[2][0]["id"] == 3
    assert rows[1][0] is None and rows[1][1]["code"] == ErrorCode.WIRE_BAD_HEADER_LENGTH
    assert gid in rows[1][1]["message"]
    # Apicurio v3: the contentId header, and a 4-byte prefix where there is no header
    cid = wire.APICURIO_VALUE_CONTENT_ID_HEADER
    records = [
        (None, body(V1, {"id": 1, "name": "a"}), [(cid, wire.apicurio_header_value(7))]),
        (None, wire.APICURIO_V3.pack(7, body(V1, {"id": 2, "name": "b"})), [(gid, wire.apicurio_header_value(9))]),
    ]
    out = pcs.decode(kafka_frame(spark, records), registry=registry, protocol="apicurio_v3", schema_id_from="headers")
    assert [r[0]["id"] for r in decoded(out)] == [1, 2]


def test_guid_and_glue_payload_protocols(spark, tmp_path):
    reg = LocalRegistry(tmp_path / "schemas.db")
    try:
        first = reg.register("users-value", json.dumps(V1))
        second = reg.register("users-value", json.dumps(V2))
        g1, g2 = (uuid.UUID(reg.get_schema(i).guid) for i in (first, second))
        records = [
            (None, wire.CONFLUENT_GUID.pack(g1, body(V1, {"id": 1, "name": "a"})), []),
            (None, wire.CONFLUENT_GUID.pack(g2, body(V2, {"id": 2, "name": "b", "email": None})), []),
            (None, wire.CONFLUENT.pack(first, body(V1, {"id": 3, "name": "c"})), []),  # another protocol
        ]
        out = pcs.decode(kafka_frame(spark, records), registry=reg, protocol="confluent_guid")
        rows = decoded(out)
        assert [r[0] for r in rows[:2]] == [
            {"id": 1, "name": "a", "email": None},
            {"id": 2, "name": "b", "email": None},
        ]
        assert rows[2][0] is None and rows[2][1]["code"] == ErrorCode.WIRE_BAD_MAGIC
    finally:
        reg.close()
    glue = {str(uuid.UUID(int=11)): V1}  # a Mapping keyed by the GUID's text
    records = [(None, wire.AWS_GLUE.pack(uuid.UUID(int=11), body(V1, {"id": 5, "name": "g"})), [])]
    out = pcs.decode(kafka_frame(spark, records, 1), registry=glue, protocol=wire.AWS_GLUE)
    assert decoded(out) == [({"id": 5, "name": "g"}, None)]


def test_bad_option_combinations(spark):
    df = kafka_frame(spark, [(None, b"x", [])], 1)
    with pytest.raises(ValueError, match="schema_id_from"):
        pcs.decode(df, registry={1: V1}, schema_id_from="metadata")
    with pytest.raises(ValueError, match="schema_id_column"):
        pcs.decode(df, registry={1: V1}, schema_id_from="headers", schema_id_column="offset")
    with pytest.raises(ValueError, match="payload only"):
        pcs.decode(df, registry={1: V1}, protocol=wire.AWS_GLUE, schema_id_from="headers")


def test_protobuf_frames_with_message_indexes(spark, tmp_path):
    pytest.importorskip("grpc_tools")
    from pulsar_codec.errors import SchemaError
    from pulsar_codec.formats import get_format
    from pulsar_codec.integrations.spark.driver import _distinct_header_ids, _distinct_prefix_ids
    from test_registry_references import MONEY, MONEY_REF, ORDER
    from test_registry_references_rest import order_class

    reg = LocalRegistry(tmp_path / "schemas.db")
    try:
        reg.register("money", MONEY, "PROTOBUF")
        order = reg.register_full("orders-value", ORDER, "PROTOBUF", [MONEY_REF])
        guid = uuid.UUID(order.guid)
        message = order_class()(id=9)
        message.total.currency, message.total.units = "EUR", 5
        data = message.SerializeToString()
        payload = kafka_frame(spark, [(None, wire.CONFLUENT_PROTOBUF.pack(order.id, data, message_indexes=[0]), [])])
        header = wire.CONFLUENT_GUID_PROTOBUF.pack(guid, b"", message_indexes=[0])
        headed = kafka_frame(spark, [(None, data, [(wire.CONFLUENT_VALUE_SCHEMA_ID_HEADER, header)])])
        # the id pre-pass reads the ids before the message-index arrays
        assert _distinct_prefix_ids(payload, "value", wire.CONFLUENT_PROTOBUF) == {order.id}
        ids = HeaderIds.of(wire.CONFLUENT_PROTOBUF, "value", "headers")
        assert _distinct_header_ids(headed, "value", wire.CONFLUENT_PROTOBUF, ids) == {guid}
        try:
            get_format("PROTOBUF")
        except SchemaError:
            pytest.skip("the Protobuf payload format (formats/protobuf FORMAT) is not installed yet")
        expected = {"id": 9, "total": {"currency": "EUR", "units": 5}}
        out = pcs.decode(payload, registry=reg, protocol=wire.CONFLUENT_PROTOBUF)
        assert decoded(out) == [(expected, None)]
        out = pcs.decode(headed, registry=reg, protocol=wire.CONFLUENT_PROTOBUF, schema_id_from="headers")
        assert decoded(out) == [(expected, None)]
        # without the pre-pass the executors fetch the schema and its reference from the registry file
        from pulsar_codec.formats.protobuf import schema as pb_schema

        reader = pb_schema.parse(ORDER, pb_schema.resolve_references(reg, order.references))
        out = pcs.decode(payload, registry=reg, protocol=wire.CONFLUENT_PROTOBUF, prefetch=False, reader_schema=reader)
        assert decoded(out) == [(expected, None)]
    finally:
        reg.close()
