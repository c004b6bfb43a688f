"""pulsar_codec.spark against a real local Spark session (one per test run, see spark_fixtures)."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import pickle
import struct
import uuid

import fastavro
import pandas as pd
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from py4j.protocol import Py4JJavaError
from pyspark.errors import PythonException
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pulsar_codec import keyvalue, wire
from pulsar_codec._arrow import walk_bad_rows
from pulsar_codec.errors import ErrorCode, RegistryError, SchemaError, SchemaNotFoundError
from pulsar_codec.integrations import spark as pcs
from pulsar_codec.integrations.spark import executor
from pulsar_codec.integrations.spark.decode import DecodeJob
from pulsar_codec.integrations.spark.driver import frame_ids
from pulsar_codec.pipeline import MessageDecoder
from pulsar_codec.registry import ConfluentRegistry, LocalRegistry, RegistryConfig

pytest_plugins = ["spark_fixtures"]
pytestmark = pytest.mark.slow

V1 = {
    "type": "record",
    "name": "User",
    "namespace": "t",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": "string"},
    ],
}
V2 = {
    "type": "record",
    "name": "User",
    "namespace": "t",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "email", "type": ["null", "string"], "default": None},
    ],
}
V3 = {
    "type": "record",
    "name": "User",
    "namespace": "t",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "email", "type": ["null", "string"], "default": None},
        {"name": "score", "type": "double", "default": 0.5},
    ],
}


def body(schema, record) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


@pytest.fixture
def users_registry(tmp_path):
    reg = LocalRegistry(tmp_path / "schemas.db")
    ids = [reg.register("users-value", json.dumps(s)) for s in (V1, V2, V3)]
    yield reg, ids
    reg.close()


def user_messages(ids):
    i1, i2, i3 = ids
    return [
        wire.CONFLUENT.pack(i1, body(V1, {"id": 1, "name": "ann"})),
        wire.CONFLUENT.pack(i2, body(V2, {"id": 2, "name": "bob", "email": "b@x"})),
        None,
        wire.CONFLUENT.pack(i3, body(V3, {"id": 3, "name": "cy", "email": None, "score": 9.0})),
        wire.CONFLUENT.pack(i1, body(V1, {"id": 4, "name": ""})),
        wire.CONFLUENT.pack(i2, body(V2, {"id": 2**40, "name": "dee", "email": None})),
    ]


EXPECTED_USERS = [
    {"id": 1, "name": "ann", "email": None, "score": 0.5},
    {"id": 2, "name": "bob", "email": "b@x", "score": 0.5},
    None,
    {"id": 3, "name": "cy", "email": None, "score": 9.0},
    {"id": 4, "name": "", "email": None, "score": 0.5},
    {"id": 2**40, "name": "dee", "email": None, "score": 0.5},
]


def frame_of(spark, messages, partitions=2):
    rows = [(i, m) for i, m in enumerate(messages)]
    return spark.createDataFrame(rows, "k long, value binary").repartition(partitions)


def collect_sorted(df):
    return sorted(df.collect(), key=lambda r: r["k"])


def as_dict(row):
    return None if row is None else row.asDict(recursive=True)


# -- decode -----------------------------------------------------------------------------------------


def test_mixed_ids_with_evolution_and_nulls(spark, users_registry, backend):
    reg, ids = users_registry
    df = frame_of(spark, user_messages(ids))
    out = pcs.decode(df, "value", registry=reg)
    assert out.columns == ["k", "decoded", "decode_error"]  # the messages stay behind
    assert out.schema["decoded"].dataType.simpleString() == "struct<id:bigint,name:string,email:string,score:double>"
    rows = collect_sorted(out)
    assert [as_dict(r["decoded"]) for r in rows] == EXPECTED_USERS
    assert all(r["decode_error"] is None for r in rows)
    # named, the messages' column comes back whole
    full = collect_sorted(pcs.decode(df, "value", registry=reg, keep_columns=df.columns))
    assert [r["value"] for r in full] == user_messages(ids)
    assert [as_dict(r["decoded"]) for r in full] == EXPECTED_USERS
    # the executors ran the backend that was active on the driver
    # a stats job may land on other worker processes than the decode did: ask a few times, widely
    for _ in range(3):
        stats = pcs.executor_stats(spark, tasks=16)
        if sum(s["batches"].get(backend.name, 0) for s in stats) > 0:
            break
    assert sum(s["batches"].get(backend.name, 0) for s in stats) > 0


def test_explicit_reader_schema(spark, users_registry):
    reg, ids = users_registry
    reader = {
        "type": "record",
        "name": "User",
        "namespace": "t",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "email", "type": ["null", "string"], "default": None},
        ],
    }
    out = pcs.decode(frame_of(spark, user_messages(ids)), registry=reg, reader_schema=reader, output="u")
    rows = collect_sorted(out)
    assert [as_dict(r["u"]) for r in rows] == [
        None if e is None else {"name": e["name"], "email": e["email"]} for e in EXPECTED_USERS
    ]


def test_keep_columns_chooses_what_comes_back(spark, users_registry):
    reg, ids = users_registry
    df = frame_of(spark, user_messages(ids))
    full = collect_sorted(pcs.decode(df, registry=reg))
    only = pcs.decode(df, registry=reg, keep_columns=[])
    assert only.columns == ["decoded", "decode_error"]
    assert sorted(repr(as_dict(r["decoded"])) for r in only.collect()) == sorted(
        repr(as_dict(r["decoded"])) for r in full
    )
    keyed = pcs.decode(df, registry=reg, keep_columns=["k"])
    assert keyed.columns == ["k", "decoded", "decode_error"]
    assert [as_dict(r["decoded"]) for r in collect_sorted(keyed)] == [as_dict(r["decoded"]) for r in full]
    with pytest.raises(ValueError, match="keep_columns names columns the DataFrame does not have"):
        pcs.decode(df, registry=reg, keep_columns=["nope"])
    # the messages' column comes back only when it is named; a good row's error is null
    both = collect_sorted(pcs.decode(df, registry=reg, keep_columns=["k", "value"]))
    assert [r["value"] for r in both] == user_messages(ids)
    assert all(r["decode_error"] is None for r in both)
    # output over the messages' column: the struct replaces it
    assert pcs.decode(df, registry=reg, output="value").columns == ["k", "value", "decode_error"]


def test_flatten_gives_the_fields_as_columns(spark, users_registry, backend):
    reg, ids = users_registry
    messages = [*user_messages(ids), b"\x07bad"]
    df = frame_of(spark, messages, partitions=3)
    flat = pcs.decode(df, registry=reg, flatten=True)
    assert flat.columns == ["k", "id", "name", "email", "score", "decode_error"]
    nested = pcs.decode(df, registry=reg)
    assert [f.dataType for f in flat.schema.fields[1:5]] == [f.dataType for f in nested.schema["decoded"].dataType]
    rows = collect_sorted(flat)
    fields = ["id", "name", "email", "score"]
    # a null message and a bad one are null in every field, as their struct is null
    expected = [*EXPECTED_USERS, None]
    assert [{f: r[f] for f in fields} for r in rows] == [e or dict.fromkeys(fields) for e in expected]
    assert [r["decode_error"] is None for r in rows] == [True] * 6 + [False]
    assert rows[6]["decode_error"]["payload"] == b"\x07bad"
    # a field named as a kept column or as the error column is refused before Spark runs
    clash = df.withColumn("name", F.lit("x"))
    with pytest.raises(ValueError, match=r"flatten=True: the reader's fields \['name'\]"):
        pcs.decode(clash, registry=reg, flatten=True)
    assert "name" in pcs.decode(clash, registry=reg, flatten=True, keep_columns=["k"]).columns
    with pytest.raises(ValueError, match=r"\['id'\]"):
        pcs.decode(df, registry=reg, flatten=True, error_column="id")


def test_corrupt_rows_go_to_the_error_column(spark, users_registry, backend):
    reg, ids = users_registry
    good = wire.CONFLUENT.pack(ids[1], body(V2, {"id": 7, "name": "ok", "email": "e"}))
    truncated = good[:-3]
    bad_utf8 = wire.CONFLUENT.pack(ids[0], b"\x02\x04\xff\xfe")
    messages = [good, b"\x07abcdef", b"\x00\x00", truncated, None, bad_utf8, good + b"\x00"]
    df = frame_of(spark, messages, partitions=3)
    out = pcs.decode(df, registry=reg)
    assert out.columns == ["k", "decoded", "decode_error"]
    rows = collect_sorted(out)
    errors = [as_dict(r["decode_error"]) for r in rows]
    assert errors[0] is None and errors[4] is None
    assert errors[1] == {
        "code": ErrorCode.WIRE_BAD_MAGIC,
        "offset": 0,
        "message": "invalid magic byte 0x07, expected 0x00 (byte 0)",
        "payload": b"\x07abcdef",
    }
    assert [e["payload"] for e in errors if e is not None] == [messages[i] for i in (1, 2, 3, 5, 6)]
    assert errors[2]["code"] == ErrorCode.WIRE_SHORT_PREFIX and errors[2]["offset"] == 2
    assert errors[3]["code"] == ErrorCode.AVRO_TRUNCATED
    assert errors[5]["code"] == ErrorCode.AVRO_INVALID_UTF8 and errors[5]["offset"] == 2
    assert errors[6]["code"] == ErrorCode.AVRO_TRAILING_BYTES
    assert errors[3]["message"].startswith("truncated Avro data") and "(byte " in errors[3]["message"]
    decoded = [as_dict(r["decoded"]) for r in rows]
    assert decoded[0] == {"id": 7, "name": "ok", "email": "e"}  # reader: the newest id in the column
    assert all(decoded[i] is None for i in (1, 2, 3, 4, 5, 6))
    # the dead-letter recipe: nothing is lost
    dead = out.where(F.col("decode_error").isNotNull())
    live = out.where(F.col("decode_error").isNull())
    assert dead.count() == 5 and live.count() == 2
    assert sorted(r["payload"] for r in dead.select("decode_error.payload").collect()) == sorted(
        messages[i] for i in (1, 2, 3, 5, 6)
    )


def test_other_protocols(spark):
    schemas = {5: V1}
    msgs = [wire.APICURIO.pack(5, body(V1, {"id": 1, "name": "a"})), None]
    out = pcs.decode(frame_of(spark, msgs), registry=schemas, protocol=wire.APICURIO)
    assert [as_dict(r["decoded"]) for r in collect_sorted(out)] == [{"id": 1, "name": "a"}, None]
    msgs = [wire.HORTONWORKS.pack(5, body(V1, {"id": 2, "name": "b"}))]
    out = pcs.decode(frame_of(spark, msgs), registry=schemas, protocol="hortonworks")
    assert [as_dict(r["decoded"]) for r in collect_sorted(out)] == [{"id": 2, "name": "b"}]
    # GUID frames: a Mapping may be keyed by the GUID's text (the registry's GUID lookups are in
    # test_spark_headers.py)
    guid = "89791762-2336-4186-9674-299b90a802e2"
    msgs = [wire.CONFLUENT_GUID.pack(uuid.UUID(guid), body(V1, {"id": 3, "name": "c"}))]
    out = pcs.decode(frame_of(spark, msgs), registry={guid: V1}, protocol=wire.CONFLUENT_GUID)
    assert [as_dict(r["decoded"]) for r in collect_sorted(out)] == [{"id": 3, "name": "c"}]


def test_unknown_id_is_an_error_row(spark):
    msgs = [
        wire.CONFLUENT.pack(99, body(V1, {"id": 1, "name": "a"})),
        wire.CONFLUENT.pack(1, body(V1, {"id": 2, "name": "b"})),
    ]
    rows = collect_sorted(pcs.decode(frame_of(spark, msgs), registry={1: V1}))
    assert [as_dict(r["decoded"]) for r in rows] == [None, {"id": 2, "name": "b"}]
    error = rows[0]["decode_error"]
    assert error["code"] == ErrorCode.SCHEMA_NOT_FOUND and "99" in error["message"]


def test_missing_ids_are_not_asked_for_again(tmp_path):
    store = LocalRegistry(tmp_path / "r.db")
    shipped = executor.ShippedSchemas({1: V1}, RegistryConfig.of(store), missing=[99])
    copy = pickle.loads(pickle.dumps(shipped))
    with pytest.raises(SchemaNotFoundError, match="99"):
        copy.get(99)
    assert not copy.fetched and copy._client is None  # answered without the registry
    store.close()


def test_no_reader_schema(spark, tmp_path):
    with pytest.raises(SchemaError, match="reader_schema"):
        pcs.decode(frame_of(spark, [None]), registry=LocalRegistry(tmp_path / "empty.db"))


def test_existing_output_column_is_replaced(spark):
    msgs = [wire.CONFLUENT.pack(1, body(V1, {"id": 1, "name": "a"}))]
    df = frame_of(spark, msgs).withColumn("decoded", F.lit("old"))
    out = pcs.decode(df, registry={1: V1})
    assert out.columns == ["k", "decoded", "decode_error"]
    assert as_dict(out.collect()[0]["decoded"]) == {"id": 1, "name": "a"}


# -- PIP-420 bodies with a schema-id column ----------------------------------------------------------


def test_pip420_bodies_with_schema_id_column(spark, users_registry, backend):
    reg, ids = users_registry
    bodies = [
        body(V1, {"id": 1, "name": "a"}),
        body(V3, {"id": 2, "name": "b", "email": "m", "score": 1.0}),
        None,
        body(V1, {"id": 3, "name": "c"}),
        b"\x02",
    ]
    id_ints = [ids[0], ids[2], None, None, ids[0]]
    df = spark.createDataFrame(
        [(i, b, s) for i, (b, s) in enumerate(zip(bodies, id_ints))], "k long, value binary, sid long"
    )
    out = pcs.decode(df, registry=reg, schema_id_column="sid")
    rows = collect_sorted(out)
    assert [as_dict(r["decoded"]) for r in rows] == [
        {"id": 1, "name": "a", "email": None, "score": 0.5},
        {"id": 2, "name": "b", "email": "m", "score": 1.0},
        None,
        None,
        None,
    ]
    errors = [as_dict(r["decode_error"]) for r in rows]
    assert errors[:3] == [None, None, None]
    assert errors[3]["code"] is None and "no schema id" in errors[3]["message"]
    assert errors[4]["code"] == ErrorCode.AVRO_TRUNCATED
    assert [e["payload"] for e in errors[3:]] == bodies[3:]  # the bad rows' bodies

    # PIP-420 MessageMetadata.schema_id bytes: FF magic + a big-endian id
    meta = [wire.pulsar_schema_id(struct.pack(">I", i)) if i is not None else None for i in id_ints]
    df = spark.createDataFrame(
        [(i, b, s) for i, (b, s) in enumerate(zip(bodies, meta))], "k long, value binary, sid binary"
    )
    out = pcs.decode(df, registry=reg, schema_id_column="sid")
    assert [as_dict(r["decoded"]) for r in collect_sorted(out)][:2] == [
        {"id": 1, "name": "a", "email": None, "score": 0.5},
        {"id": 2, "name": "b", "email": "m", "score": 1.0},
    ]


# -- KeyValue -----------------------------------------------------------------------------------------


KEY = {"type": "record", "name": "Key", "fields": [{"name": "tenant", "type": "string"}]}


def test_keyvalue_split_and_decode(spark, backend):
    schemas = {1: V1, 2: KEY}
    keys = [wire.CONFLUENT.pack(2, body(KEY, {"tenant": f"t{i}"})) for i in range(3)] + [None]
    values = [wire.CONFLUENT.pack(1, body(V1, {"id": i, "name": f"n{i}"})) for i in range(3)] + [
        wire.CONFLUENT.pack(1, body(V1, {"id": 9, "name": "nokey"}))
    ]
    payloads = keyvalue.join_inline(keys, values).to_pylist() + [b"\x00\x00\x00\x09ab", None]
    df = frame_of(spark, payloads)

    split = pcs.split_keyvalue(df)
    assert split.columns == ["k", "key", "value", "keyvalue_error"]
    rows = collect_sorted(split)
    assert [r["key"] for r in rows] == keys + [None, None]
    assert [r["value"] for r in rows] == values + [None, None]
    err = as_dict(rows[4]["keyvalue_error"])
    assert err["code"] == ErrorCode.KV_LENGTH_PAST_END and err["offset"] == 0 and "(message" not in err["message"]
    assert err["payload"] == payloads[4]  # the malformed payload, which the split replaced
    assert rows[5]["keyvalue_error"] is None

    out = pcs.decode_keyvalue(df, registry=schemas, key_reader_schema=KEY, value_reader_schema=V1)
    rows = collect_sorted(out)
    assert [as_dict(r["key"]) for r in rows] == [{"tenant": f"t{i}"} for i in range(3)] + [None, None, None]
    assert [as_dict(r["value"]) for r in rows] == [{"id": i, "name": f"n{i}"} for i in range(3)] + [
        {"id": 9, "name": "nokey"},
        None,
        None,
    ]
    assert rows[4]["keyvalue_error"]["payload"] == payloads[4]
    assert all(r["key_error"] is None and r["value_error"] is None for r in rows)
    assert out.columns == ["k", "keyvalue_error", "key", "key_error", "value", "value_error"]


# -- encode ---------------------------------------------------------------------------------------------


READ_WRITE = {
    "type": "record",
    "name": "RW",
    "fields": [
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "tm", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "ltsm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "dur", "type": {"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"}},
        {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        {"name": "un", "type": ["null", "long", "string"]},
        {
            "name": "ur",
            "type": [
                "null",
                {"type": "record", "name": "In", "fields": [{"name": "x", "type": "int"}]},
                {"type": "record", "name": "Other", "fields": [{"name": "y", "type": "string"}]},
                "double",
            ],
        },
    ],
}


def test_a_topic_read_with_spark_writes_back_as_it_was(spark, tmp_path):
    """spark.decode then spark.encode with the same subject gives the original bytes, through the
    forms Spark gives what it has no type for: a duration as struct<months, days, nanoseconds>, a
    union as a struct of one field per branch."""
    reg = LocalRegistry(tmp_path / "rw.db")
    sid = reg.register("rw-value", json.dumps(READ_WRITE))
    parsed = fastavro.parse_schema(READ_WRITE)
    base = {
        "dec": decimal.Decimal("12.34"),
        "tm": datetime.time(1, 2, 3, 4567),
        "ltsm": datetime.datetime(2021, 1, 1, 1, 1, 1, 123000),
        "dur": struct.pack("<III", 1, 2, 3),
        "fx": b"abcd",
        "e": "B",
    }
    variants = [
        {"un": 7, "ur": {"x": 1}},
        {"un": None, "ur": None},
        {"un": "s", "ur": {"y": "why"}},
        {"un": -1, "ur": 2.5},
    ]
    bodies = []
    for variant in variants:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, {**base, **variant})
        bodies.append(buf.getvalue())
    df = spark.createDataFrame([(i, wire.CONFLUENT.pack(sid, b)) for i, b in enumerate(bodies)], "i int, value binary")
    decoded = pcs.decode(df, registry=reg, keep_columns=["i"])
    written = pcs.encode(decoded.select("i", "decoded"), "decoded", registry=reg, subject="rw-value", use_latest=True)
    back = {r["i"]: wire.CONFLUENT.unpack(r["value"]) for r in written.collect()}
    assert [back[i][1] for i in range(len(bodies))] == bodies
    assert {back[i][0] for i in back} == {sid}  # the subject's own version, not a new one
    with pytest.raises(ValueError, match="do not pass schema="):
        pcs.encode(decoded, "decoded", registry=reg, subject="rw-value", use_latest=True, schema=READ_WRITE)
    # a JSON subject: its schemaType picks the format when none is given
    json_schema = {"type": "object", "properties": {"id": {"type": "integer"}, "kind": {"enum": ["a", "b"]}}}
    json_id = reg.register("j-value", json.dumps(json_schema), schema_type="JSON")
    docs = [b'{"id":1,"kind":"b"}', b'{"id":2}']
    framed = spark.createDataFrame(
        [(i, wire.CONFLUENT.pack(json_id, d)) for i, d in enumerate(docs)], "i int, value binary"
    )
    again = pcs.encode(
        pcs.decode(framed, registry=reg, keep_columns=["i"]),
        "decoded",
        registry=reg,
        subject="j-value",
        use_latest=True,
    )
    rows = {r["i"]: wire.CONFLUENT.unpack(r["value"]) for r in again.collect()}
    assert [json.loads(bytes(rows[i][1])) for i in range(2)] == [json.loads(d) for d in docs]
    assert {rows[i][0] for i in rows} == {json_id}
    reg.close()


def test_decoded_times_can_be_cached_and_written(spark, tmp_path):
    """Avro time-millis / time-micros decode to Spark's TIME type, which Spark 4.1+ keeps behind
    spark.sql.timeType.enabled: pcs.session sets it, so the column caches, aggregates and writes."""
    schema = {
        "type": "record",
        "name": "T",
        "fields": [
            {"name": "ms", "type": {"type": "int", "logicalType": "time-millis"}},
            {"name": "us", "type": {"type": "long", "logicalType": "time-micros"}},
        ],
    }
    bodies = []
    for ms, us in ((1_000, 1_500_001), (86_399_999, 0)):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(schema), {"ms": ms, "us": us})
        bodies.append((b"\x00" + struct.pack(">I", 1) + out.getvalue(),))
    df = spark.createDataFrame(bodies, "value binary")
    decoded = pcs.decode(df, "value", registry={1: json.dumps(schema)}).select("decoded.*").cache()
    assert decoded.count() == 2
    decoded.write.parquet(str(tmp_path / "times"))
    back = sorted(tuple(r) for r in spark.read.parquet(str(tmp_path / "times")).collect())
    assert back == [
        (datetime.time(0, 0, 1), datetime.time(0, 0, 1, 500001)),
        (datetime.time(23, 59, 59, 999000), datetime.time(0, 0)),
    ]
    decoded.unpersist()


def test_encode_on_error_null_keeps_the_job_going(spark, tmp_path):
    """A value that does not fit the schema costs its row, not the job: a null message and its
    EncodeError's text in encode_error; null structs stay null messages without an error."""
    reg = LocalRegistry(tmp_path / "oe.db")
    schema = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}]}
    df = spark.createDataFrame([(1, 5), (2, 2**40), (3, None), (4, 7)], "k int, n long").select(
        "k", F.when(F.col("n").isNotNull(), F.struct("n")).alias("rec")
    )
    out = pcs.encode(df, "rec", registry=reg, subject="oe-value", schema=json.dumps(schema), on_error="null")
    assert out.columns == ["k", "rec", "value", "encode_error"]
    rows = {r["k"]: r for r in out.collect()}
    # the text names the field and value, not a row number inside the task's Arrow batch
    assert rows[2]["value"] is None and rows[2]["encode_error"] == f"R.n: {2**40} is not a valid int"
    assert rows[3]["value"] is None and rows[3]["encode_error"] is None  # a null struct: a null message
    assert all(rows[k]["value"] is not None and rows[k]["encode_error"] is None for k in (1, 4))
    with pytest.raises(PythonException, match="EncodeError"):
        pcs.encode(df, "rec", registry=reg, subject="oe-value", schema=json.dumps(schema)).collect()
    reg.close()


def test_encode_round_trip(spark, tmp_path, backend):
    reg = LocalRegistry(tmp_path / "enc.db")
    schema = T.StructType(
        [
            T.StructField("id", T.LongType(), False),
            T.StructField("name", T.StringType(), True),
            T.StructField("tags", T.ArrayType(T.IntegerType(), False), True),
            T.StructField("price", T.DecimalType(10, 2), True),
            T.StructField("at", T.TimestampType(), True),
            T.StructField("day", T.DateType(), True),
        ]
    )
    at = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=datetime.UTC)
    data = [
        (1, "a", [1, 2], decimal.Decimal("12.34"), at, datetime.date(2024, 1, 2)),
        (2, None, None, None, None, None),
        (3, "ccc", [], decimal.Decimal("-0.01"), at, datetime.date(1960, 1, 1)),
    ]
    data.append((4, None, None, None, None, None))
    df = spark.createDataFrame(data, schema).select(
        F.when(F.col("id") != 4, F.struct(*schema.names)).alias("rec"), F.col("id").alias("k")
    )
    encoded = pcs.encode(df, "rec", registry=reg, subject="orders-value")
    assert encoded.columns == ["rec", "k", "value"]
    latest = reg.get_latest("orders-value")
    writer = json.loads(latest.schema)
    assert writer["name"] == "orders"
    rows = collect_sorted(encoded)
    assert rows[3]["value"] is None  # a null struct is a null message
    # fastavro reads what Spark wrote
    parsed = fastavro.parse_schema(writer)
    for row in rows[:3]:
        schema_id, payload = wire.CONFLUENT.unpack(row["value"])
        assert schema_id == latest.schema_id
        record = fastavro.schemaless_reader(io.BytesIO(bytes(payload)), parsed, None)
        original = row["rec"].asDict()
        assert record["id"] == original["id"] and record["name"] == original["name"]
        assert record["tags"] == original["tags"] and record["price"] == original["price"]
        assert record["day"] == original["day"]
        if original["at"] is not None:
            assert record["at"] == at
    # and Spark decodes it back to the same values
    back = pcs.decode(encoded.select("k", "value"), registry=reg)
    decoded = collect_sorted(back.select("k", F.col("decoded.*"), F.unix_micros("decoded.at").alias("at_us")))
    src = collect_sorted(df.select("k", F.col("rec.*"), F.unix_micros("rec.at").alias("at_us")))
    for d, s in zip(decoded[:3], src[:3]):
        assert d.asDict() == s.asDict()
    assert decoded[3]["id"] is None
    reg.close()


def test_encode_derives_after_the_subject_s_latest_version(spark, tmp_path):
    """A derived schema takes the subject's record name and keeps nullable what the latest version
    lets be null: a second job whose Spark columns are non-null (``range``, ``lit``), into a subject
    another producer registered, writes without a refusal from the subject's compatibility."""
    reg = LocalRegistry(tmp_path / "shape.db")
    other = {
        "type": "record",
        "name": "User",
        "namespace": "t",
        "fields": [{"name": "id", "type": ["null", "long"], "default": None}, {"name": "name", "type": "string"}],
    }
    first = reg.register("users-value", json.dumps(other))
    df = spark.range(3).select(F.struct("id", F.lit("x").alias("name")).alias("rec"))
    assert not df.schema["rec"].dataType["id"].nullable  # Spark says: never null
    out = pcs.encode(df, "rec", registry=reg, subject="users-value")
    ids = {wire.CONFLUENT.unpack(r["value"])[0] for r in out.collect()}
    latest = reg.get_latest("users-value")
    writer = json.loads(latest.schema)
    assert writer["name"] in ("User", "t.User") and writer.get("namespace", "t") == "t"
    assert writer["fields"][0] == {"name": "id", "type": ["null", "long"], "default": None}
    assert writer["fields"][1] == {"name": "name", "type": "string"}  # non-null here and in the subject
    assert ids == {latest.schema_id} and latest.schema_id == first  # the same schema: no new version
    back = pcs.decode(out.select("value"), registry=reg, reader_subject="users-value")
    assert sorted(tuple(r["decoded"]) for r in back.collect()) == [(0, "x"), (1, "x"), (2, "x")]
    reg.close()


def test_encode_with_given_schema_and_mapping(spark):
    schema = {
        "type": "record",
        "name": "S",
        "fields": [
            {"name": "status", "type": {"type": "enum", "name": "St", "symbols": ["NEW", "OLD"]}},
            {"name": "n", "type": "int"},
        ],
    }
    registry: dict = {}
    df = spark.createDataFrame([("OLD", 1), ("NEW", 2)], "status string, n int").select(
        F.struct("status", "n").alias("s")
    )
    out = pcs.encode(df, "s", registry=registry, subject="s-value", schema=schema, protocol="apicurio_v3")
    assert list(registry) == [1]
    msgs = [r["value"] for r in out.collect()]
    assert [wire.APICURIO_V3.unpack(m)[0] for m in msgs] == [1, 1]
    back = pcs.decode(out.select("value"), registry=registry, protocol="apicurio_v3")
    assert sorted((r["decoded"]["status"], r["decoded"]["n"]) for r in back.collect()) == [("NEW", 2), ("OLD", 1)]


# -- every Avro type -----------------------------------------------------------------------------------

INNER = {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}
ALL_TYPES = {
    "type": "record",
    "name": "All",
    "namespace": "t",
    "fields": [
        {"name": "n", "type": "null"},
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "s", "type": "string"},
        {"name": "by", "type": "bytes"},
        {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
        {"name": "arr", "type": {"type": "array", "items": "int"}},
        {"name": "m", "type": {"type": "map", "values": "long"}},
        {"name": "rec", "type": INNER},
        {"name": "opt", "type": ["null", "string"]},
        {"name": "u", "type": ["null", "int", "string", "t.Inner"]},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {
            "name": "decf",
            "type": {"type": "fixed", "name": "D16", "size": 16, "logicalType": "decimal", "precision": 38, "scale": 4},
        },
        {"name": "big", "type": {"type": "bytes", "logicalType": "decimal", "precision": 50, "scale": 3}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "date", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "tsn", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
        {"name": "ltu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "ltn", "type": {"type": "long", "logicalType": "local-timestamp-nanos"}},
        {"name": "dur", "type": {"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"}},
        {"name": "unknown", "type": {"type": "string", "logicalType": "made-up"}},
        {"name": "items", "type": {"type": "array", "items": ["int", "string"]}},
    ],
}


def _strip_logical(schema):
    if isinstance(schema, dict):
        return {k: _strip_logical(v) for k, v in schema.items() if k not in ("logicalType", "precision", "scale")}
    if isinstance(schema, list):
        return [_strip_logical(s) for s in schema]
    return schema


def _unscaled(value: str, scale: int, size: int | None = None) -> bytes:
    n = int(decimal.Decimal(value).scaleb(scale))
    width = size or (n.bit_length() + 8) // 8
    return n.to_bytes(width, "big", signed=True)


ROWS_RAW = [
    {
        "n": None,
        "b": True,
        "i": -5,
        "l": 2**62,
        "f": 1.5,
        "d": -2.25,
        "s": "héllo",
        "by": b"\x00\x01",
        "fx": b"abcd",
        "e": "B",
        "arr": [1, 2, 3],
        "m": {"k": 7},
        "rec": {"x": 1},
        "opt": "o",
        "u": ("int", 5),
        "dec": _unscaled("123.45", 2),
        "decf": _unscaled("-1.2345", 4, 16),
        "big": _unscaled("1234567890123456789012.567", 3),
        "uid": "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
        "date": 19000,
        "tm": 3_723_004,
        "tu": 3_723_004_005,
        "tsm": 1_700_000_000_123,
        "tsu": 1_700_000_000_123_456,
        "tsn": 1_700_000_000_123_456_789,
        "ltu": 1_700_000_000_123_456,
        "ltn": 1_700_000_000_123_456_789,
        "dur": struct.pack("<III", 1, 2, 3),
        "unknown": "u",
        "items": [1, "two"],
    },
    {
        "n": None,
        "b": False,
        "i": 0,
        "l": 0,
        "f": 0.0,
        "d": 0.0,
        "s": "",
        "by": b"",
        "fx": b"\x00\x00\x00\x00",
        "e": "C",
        "arr": [],
        "m": {},
        "rec": {"x": -1},
        "opt": None,
        "u": ("t.Inner", {"x": 9}),
        "dec": _unscaled("0", 2),
        "decf": _unscaled("0", 4, 16),
        "big": _unscaled("-1.5", 3),
        "uid": "00000000-0000-0000-0000-000000000000",
        "date": -1,
        "tm": 0,
        "tu": 0,
        "tsm": -1,
        "tsu": -1,
        "tsn": -1,
        "ltu": 0,
        "ltn": 999,
        "dur": struct.pack("<III", 0, 0, 0),
        "unknown": "",
        "items": [],
    },
    {
        "n": None,
        "b": True,
        "i": 1,
        "l": 1,
        "f": 1.0,
        "d": 1.0,
        "s": "s",
        "by": b"b",
        "fx": b"wxyz",
        "e": "A",
        "arr": [0],
        "m": {"a": 1, "b": 2},
        "rec": {"x": 0},
        "opt": None,
        "u": None,
        "dec": _unscaled("-0.01", 2),
        "decf": _unscaled("1", 4, 16),
        "big": _unscaled("0.001", 3),
        "uid": "u",
        "date": 0,
        "tm": 1,
        "tu": 1,
        "tsm": 0,
        "tsu": 0,
        "tsn": 0,
        "ltu": 0,
        "ltn": 0,
        "dur": struct.pack("<III", 5, 1, 1),
        "unknown": "x",
        "items": ["a"],
    },
]


def test_spark_schema_covers_every_type():
    got = pcs.spark_schema(ALL_TYPES)
    want = {
        "n": "void",
        "b": "boolean",
        "i": "int",
        "l": "bigint",
        "f": "float",
        "d": "double",
        "s": "string",
        "by": "binary",
        "fx": "binary",
        "e": "string",
        "arr": "array<int>",
        "m": "map<string,bigint>",
        "rec": "struct<x:int>",
        "opt": "string",
        "u": "struct<int:int,string:string,Inner:struct<x:int>>",
        "dec": "decimal(10,2)",
        "decf": "decimal(38,4)",
        "big": "string",
        "uid": "string",
        "date": "date",
        "tm": "time(6)",
        "tu": "time(6)",
        "tsm": "timestamp",
        "tsu": "timestamp",
        "tsn": "timestamp",
        "ltu": "timestamp_ntz",
        "ltn": "timestamp_ntz",
        "dur": "struct<months:int,days:int,nanoseconds:bigint>",
        "unknown": "string",
        "items": "array<struct<int:int,string:string>>",
    }
    got_types = {f.name: f.dataType.simpleString() for f in got.fields}
    # TimeType's precision spelling differs between Spark versions; check the family only
    for name in ("tm", "tu"):
        assert got_types.pop(name).startswith("time")
        want.pop(name)
    assert got_types == want
    # as Spark's from_avro: a field is nullable when its Avro type admits null (a bad row is a
    # null struct, never a null field)
    assert {f.name for f in got.fields if f.nullable} == {"n", "opt", "u"}


def test_every_avro_type_through_spark(spark, backend):
    raw = _strip_logical(ALL_TYPES)
    msgs = [wire.CONFLUENT.pack(3, body(raw, r)) for r in ROWS_RAW]
    df = frame_of(spark, msgs)
    out = pcs.decode(df, registry={3: ALL_TYPES})
    rows = collect_sorted(
        out.select(
            "k",
            "decoded.*",
            F.unix_micros("decoded.tsm").alias("tsm_us"),
            F.unix_micros("decoded.tsu").alias("tsu_us"),
            F.unix_micros("decoded.tsn").alias("tsn_us"),
            "decode_error",
        )
    )
    assert all(r["decode_error"] is None for r in rows)
    r0, r1, r2 = (r.asDict(recursive=True) for r in rows)
    assert r0["n"] is None and r0["b"] is True and r0["i"] == -5 and r0["l"] == 2**62
    assert r0["f"] == 1.5 and r0["d"] == -2.25 and r0["s"] == "héllo" and r0["by"] == b"\x00\x01"
    assert r0["fx"] == b"abcd" and r0["e"] == "B" and r0["arr"] == [1, 2, 3] and r0["m"] == {"k": 7}
    assert r0["rec"] == {"x": 1} and r0["opt"] == "o" and r1["opt"] is None
    assert r0["u"] == {"int": 5, "string": None, "Inner": None}
    assert r1["u"] == {"int": None, "string": None, "Inner": {"x": 9}}
    assert r2["u"] is None  # the null branch
    assert r0["dec"] == decimal.Decimal("123.45") and r2["dec"] == decimal.Decimal("-0.01")
    assert r0["decf"] == decimal.Decimal("-1.2345")
    assert r0["big"] == "1234567890123456789012.567" and r1["big"] == "-1.500"
    assert r0["uid"] == "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
    assert r0["date"] == datetime.date(1970, 1, 1) + datetime.timedelta(days=19000)
    assert r1["date"] == datetime.date(1969, 12, 31)
    assert r0["tm"] == datetime.time(1, 2, 3, 4000) and r0["tu"] == datetime.time(1, 2, 3, 4005)
    assert r0["tsm_us"] == 1_700_000_000_123_000 and r0["tsu_us"] == 1_700_000_000_123_456
    assert r0["tsn_us"] == 1_700_000_000_123_456  # nanoseconds truncated to microseconds
    assert r1["tsm_us"] == -1000 and r1["tsu_us"] == -1
    epoch = datetime.datetime(1970, 1, 1)
    assert r0["ltu"] == epoch + datetime.timedelta(microseconds=1_700_000_000_123_456)
    assert r0["ltn"] == epoch + datetime.timedelta(microseconds=1_700_000_000_123_456)
    assert r1["ltn"] == epoch
    assert r0["dur"] == {"months": 1, "days": 2, "nanoseconds": 3_000_000}
    assert r2["dur"] == {"months": 5, "days": 1, "nanoseconds": 1_000_000}
    assert r0["unknown"] == "u"
    assert r0["items"] == [{"int": 1, "string": None}, {"int": None, "string": "two"}]
    assert r2["items"] == [{"int": None, "string": "a"}]


# -- type conversion without Spark ----------------------------------------------------------------------


def test_union_conversion_of_a_slice():
    u = pa.UnionArray.from_dense(
        pa.array([0, 1, 2, 1, 0], pa.int8()),
        pa.array([0, 0, 0, 1, 1], pa.int32()),
        [pa.nulls(2), pa.array([10, 20]), pa.array(["a"])],
        ["null", "int", "string"],
    )
    target, fn = pcs.spark_arrow_type(u.type)
    assert target == pa.struct([pa.field("int", pa.int64()), pa.field("string", pa.string())])
    assert fn(u).to_pylist() == [
        None,
        {"int": 10, "string": None},
        {"int": None, "string": "a"},
        {"int": 20, "string": None},
        None,
    ]
    assert fn(u.slice(2)).to_pylist() == [{"int": None, "string": "a"}, {"int": 20, "string": None}, None]


def test_nested_conversion_of_slices():
    values = pa.array(
        [{"k": [("a", pa.scalar(1, pa.time32("ms")))]}, None, {"k": [("b", None), ("c", 5)]}],
        pa.struct([pa.field("k", pa.map_(pa.string(), pa.time32("ms")))]),
    )
    target, fn = pcs.spark_arrow_type(values.type)
    assert target == pa.struct([pa.field("k", pa.map_(pa.string(), pa.time64("ns")))])
    out = fn(values.slice(1))
    assert out.type == target
    assert out.to_pylist() == [None, {"k": [("b", None), ("c", datetime.time(0, 0, 0, 5000))]}]
    lists = pa.array([[1], None, [2, 3]], pa.list_(pa.time32("ms"))).slice(1)
    _, lfn = pcs.spark_arrow_type(lists.type)
    assert lfn(lists).to_pylist() == [None, [datetime.time(0, 0, 0, 2000), datetime.time(0, 0, 0, 3000)]]
    iv = pa.array([pa.MonthDayNano([1, 2, 3]), None, pa.MonthDayNano([-1, 0, 7])], pa.month_day_nano_interval())
    _, ifn = pcs.spark_arrow_type(iv.type)
    assert ifn(iv.slice(1)).to_pylist() == [None, {"months": -1, "days": 0, "nanoseconds": 7}]
    dec = pa.array([decimal.Decimal("1.5"), None], pa.decimal256(40, 2))
    assert pcs.to_spark_arrow(dec).to_pylist() == ["1.50", None]


# -- registries on the executors ------------------------------------------------------------------------


def test_deprecated_registry_spec_names(tmp_path):
    client = ConfluentRegistry("http://127.0.0.1:1", auth=("user", "s3cret"), retries=1)
    with pytest.warns(DeprecationWarning, match="RegistryConfig.of"):
        config = pcs.registry_spec(client)
    assert config == RegistryConfig.of(client) and config.auth == ("user", "s3cret") and "s3cret" not in repr(config)
    with pytest.warns(DeprecationWarning, match="RegistryConfig"):
        assert pcs.RegistrySpec is RegistryConfig
    from pulsar_codec import spark as facade

    with pytest.warns(DeprecationWarning):
        assert facade.RegistrySpec is RegistryConfig
    assert "RegistrySpec" not in facade.__all__
    client.close()


def test_shipped_schemas_travel_without_their_client(tmp_path):
    store = LocalRegistry(tmp_path / "r.db")
    sid = store.register("users-value", json.dumps(V1))
    shipped = executor.ShippedSchemas({"7": V2}, RegistryConfig.of(store))
    assert shipped[7] == V2 and list(shipped) == [7]  # "7" and 7 are one id
    assert json.loads(shipped[sid].schema) == V1 and shipped.fetched[sid] == 1  # asked of the registry
    assert shipped._client is not None
    copy = pickle.loads(pickle.dumps(shipped))
    assert copy._client is None and copy.schemas == {7: V2} and not copy.fetched
    alone = executor.ShippedSchemas({1: V1})
    with pytest.raises(RegistryError, match="not resolved on the driver"):
        alone.get(2)
    store.close()


def test_decode_job_keeps_one_decoder_per_configuration():
    msgs = pa.array([wire.CONFLUENT.pack(1, body(V1, {"id": 1, "name": "a"})), None], pa.binary())

    def job(schemas):
        decoder = MessageDecoder(executor.ShippedSchemas(schemas), reader_schema=V1, on_error="null")
        made = DecodeJob(decoder, ("test-key", id(msgs)), "value", None, "decoded", "decode_error", "python")
        return pickle.loads(pickle.dumps(made))  # as each task gets it

    first, second = job({1: V1}), job({1: V1, 2: V2})
    batch = pa.record_batch({"value": msgs})
    assert next(first(iter([batch]))).column("decoded").to_pylist() == [{"id": 1, "name": "a"}, None]
    assert next(second(iter([batch]))).column("decode_error").to_pylist() == [None, None]
    kept, schemas = executor._DECODERS[("test-key", id(msgs))]
    assert kept is first.decoder and kept is not second.decoder  # the second task reused the first decoder
    assert sorted(schemas) == [1, 2]  # ... and brought its shipped schemas into it
    del executor._DECODERS[("test-key", id(msgs))]


def test_backend_fallback_on_an_executor_is_logged(monkeypatch, caplog):
    real_get = executor._backend.get

    def get(name):
        if name == "cython":
            raise ImportError("no compiled kernels here")
        return real_get(name)

    monkeypatch.setattr(executor._backend, "get", get)
    monkeypatch.setattr(executor, "_FALLBACKS", [])
    with caplog.at_level("WARNING", logger="pulsar_codec"):
        for _ in range(2):
            with executor.use_backend("cython"):
                assert executor._backend.active().name == "python"
    warned = [r for r in caplog.records if r.name == "pulsar_codec"]
    assert len(warned) == 1 and "no compiled kernels here" in warned[0].getMessage()
    assert executor._FALLBACKS == ["cython: no compiled kernels here"]


def test_executor_fetches_each_new_id_once_per_process(spark, tmp_path):
    server_mod = pytest.importorskip("pulsar_codec.registry.server")
    store = LocalRegistry(tmp_path / "served.db")
    sid = store.register("users-value", json.dumps(V1))
    faults = server_mod.Faults()
    msgs = [wire.CONFLUENT.pack(sid, body(V1, {"id": i, "name": str(i)})) for i in range(400)]
    tasks = 16
    with server_mod.serve(store, auth=("reader", "pw"), faults=faults) as server:
        client = ConfluentRegistry(server.url, auth=("reader", "pw"))
        df = frame_of(spark, msgs, partitions=tasks)
        df.cache().count()
        before = faults.requests
        # prefetch=False: the driver resolves nothing, every executor process meets the id first
        out = pcs.decode(df, registry=client, reader_schema=V1, prefetch=False)
        for _ in range(2):
            assert out.where(F.col("decode_error").isNull()).count() == 400
        assert sorted(r["decoded"]["id"] for r in out.collect()) == list(range(400))
        # another decode call with the same configuration reuses the executors' decoders
        again = pcs.decode(df, registry=RegistryConfig.of(client), reader_schema=V1, prefetch=False)
        assert again.where(F.col("decode_error").isNull()).count() == 400
        requests = faults.requests - before
        stats = pcs.executor_stats(spark, tasks=64)
        df.unpersist()
        client.close()
    spec_name = repr(RegistryConfig.of(client))
    fetched = [reg["fetched"].get(str(sid), 0) for s in stats for reg in s["registries"] if reg["spec"] == spec_name]
    assert fetched and max(fetched) == 1  # never twice in one process
    # 4 jobs x 16 tasks decoded the column; only the first batch of each worker process asked
    assert 1 <= sum(fetched) <= requests <= len(stats) < 4 * tasks
    store.close()


def test_memory_registry_works_only_for_driver_resolved_ids(spark):
    reg = LocalRegistry(":memory:")
    sid = reg.register("users-value", json.dumps(V1))
    msgs = [wire.CONFLUENT.pack(sid, body(V1, {"id": 1, "name": "a"}))]
    out = pcs.decode(frame_of(spark, msgs), registry=reg)
    assert as_dict(out.collect()[0]["decoded"]) == {"id": 1, "name": "a"}
    lazy = pcs.decode(frame_of(spark, msgs), registry=reg, reader_schema=V1, prefetch=False)
    with pytest.raises(PythonException, match="not resolved on the driver"):
        lazy.collect()
    # subjects=[...] ships every version without the pre-pass
    eager = pcs.decode(frame_of(spark, msgs), registry=reg, subjects=["users-value"], prefetch=False)
    assert as_dict(eager.collect()[0]["decoded"]) == {"id": 1, "name": "a"}
    reg.close()


class _PlainClient:
    """A registry client with get_schema only (like confluent-kafka's): no RegistryConfig."""

    def __init__(self, schemas):
        self.schemas = schemas

    def get_schema(self, schema_id):
        return json.dumps(self.schemas[schema_id])


def test_registry_without_config_and_registry_as_a_path(spark, users_registry):
    msgs = [wire.CONFLUENT.pack(4, body(V1, {"id": 1, "name": "a"}))]
    out = pcs.decode(frame_of(spark, msgs), registry=_PlainClient({4: V1}))
    assert as_dict(out.collect()[0]["decoded"]) == {"id": 1, "name": "a"}
    lazy = pcs.decode(frame_of(spark, msgs), registry=_PlainClient({4: V1}), reader_schema=V1, prefetch=False)
    with pytest.raises(PythonException, match="not resolved on the driver"):
        lazy.collect()
    reg, ids = users_registry
    by_path = pcs.decode(frame_of(spark, user_messages(ids)), registry=str(reg.path))
    assert [as_dict(r["decoded"]) for r in collect_sorted(by_path)] == EXPECTED_USERS


def test_session_defaults(spark):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.ui.enabled") == "false"


def test_bad_rows_are_walked_in_linear_time():
    # every other row bad: the walk must not hand the rest of the batch to the kernel after each one
    n = 4000
    calls, windows = [], []

    def attempt(lo, hi):
        windows.append(hi - lo)  # what a kernel allocates for (and the pure twin scans)
        # like the compiled kernels: rows are read up to and including the first bad one
        for i in range(lo, hi):
            if i % 2:
                calls.append(i - lo + 1)
                return i - lo
        calls.append(hi - lo)
        return None

    walk_bad_rows(n, attempt)
    assert sum(calls) <= 2 * n
    assert sum(windows) <= 64 * (n // 2) + 2 * n  # not the rest of the batch after every bad row

    good = wire.CONFLUENT.pack(7, b"x")
    column = pa.array([good if i % 2 == 0 else b"\x09bad" for i in range(n)], pa.binary())
    assert frame_ids(column, wire.CONFLUENT) == {7}


# -- the distinct-id pre-pass: only when the job needs it ------------------------------------------------


def _jobs_run_by(spark, fn):
    """The Spark jobs ``fn`` runs on the driver (a pre-pass is one, planning a decode is none)."""
    group = f"prepass-{uuid.uuid4().hex}"
    context = spark.sparkContext
    context.setJobGroup(group, "counted")
    try:
        result = fn()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    return result, len(context.statusTracker().getJobIdsForGroup(group))


def test_prepass_runs_only_when_needed():
    from pulsar_codec.integrations.spark.driver import wants_prepass

    # (prefetch, streaming, executors can resolve ids, reader fixed without the data) -> pre-pass
    assert wants_prepass(None, False, True, True) is False
    assert wants_prepass(None, False, True, False) is True  # the reader is the newest id in the column
    assert wants_prepass(None, False, False, True) is True  # the executors cannot ask the registry
    assert wants_prepass(True, False, True, True) is True and wants_prepass(False, False, False, False) is False
    assert wants_prepass(True, True, True, True) is False  # a stream is never scanned ahead


def test_decode_plans_without_a_scan_when_the_reader_is_known(spark, users_registry):
    reg, ids = users_registry
    df = frame_of(spark, user_messages(ids))
    # a registry file the executors open, and a reader: planning runs no job; the executors fetch the ids
    out, jobs = _jobs_run_by(spark, lambda: pcs.decode(df, registry=str(reg.path), reader_schema=V3))
    assert jobs == 0
    assert [as_dict(r["decoded"]) for r in collect_sorted(out)] == EXPECTED_USERS
    # reader_subject: the subject's latest version, asked of the registry once on the driver
    older = frame_of(spark, user_messages(ids)[:1])
    out, jobs = _jobs_run_by(spark, lambda: pcs.decode(older, registry=reg, reader_subject="users-value"))
    assert jobs == 0 and out.schema["decoded"].dataType.names == ["id", "name", "email", "score"]
    assert as_dict(out.collect()[0]["decoded"]) == EXPECTED_USERS[0]
    # subjects fix the reader too: the newest of their versions
    out, jobs = _jobs_run_by(spark, lambda: pcs.decode(older, registry=reg, subjects=["users-value"]))
    assert jobs == 0 and out.schema["decoded"].dataType.names == ["id", "name", "email", "score"]
    # no reader: the output struct depends on the ids in the column, found by the pre-pass
    out, jobs = _jobs_run_by(spark, lambda: pcs.decode(older, registry=reg))
    assert jobs >= 1 and out.schema["decoded"].dataType.names == ["id", "name"]
    # an in-memory registry cannot be opened by the executors: the pre-pass ships what they need
    memory = LocalRegistry(":memory:")
    sid = memory.register("users-value", json.dumps(V1))
    msgs = frame_of(spark, [wire.CONFLUENT.pack(sid, body(V1, {"id": 5, "name": "m"}))])
    out, jobs = _jobs_run_by(spark, lambda: pcs.decode(msgs, registry=memory, reader_schema=V1))
    assert jobs >= 1 and as_dict(out.collect()[0]["decoded"]) == {"id": 5, "name": "m"}
    memory.close()
    with pytest.raises(ValueError, match="reader_subject"):
        pcs.decode(df, registry={1: V1}, reader_subject="users-value")


def test_mapping_registry_needs_no_prepass_and_knows_its_unknown_ids(spark):
    msgs = [
        wire.CONFLUENT.pack(99, body(V1, {"id": 1, "name": "a"})),
        wire.CONFLUENT.pack(1, body(V1, {"id": 2, "name": "b"})),
    ]
    df = frame_of(spark, msgs)
    for prefetch in (None, False):  # by default, and when told not to scan
        out, jobs = _jobs_run_by(spark, lambda prefetch=prefetch: pcs.decode(df, registry={1: V1}, prefetch=prefetch))
        assert jobs == 0
        rows = collect_sorted(out)
        assert [as_dict(r["decoded"]) for r in rows] == [None, {"id": 2, "name": "b"}]
        assert rows[0]["decode_error"]["code"] == ErrorCode.SCHEMA_NOT_FOUND  # an error row, not a failed task
    # the newest schema of the Mapping is the reader, as before
    out = pcs.decode(df, registry={1: V1, 2: V2})
    assert out.schema["decoded"].dataType.names == ["id", "name", "email"]


# -- non-nullable fields ----------------------------------------------------------------------------


def test_decoded_struct_declares_the_readers_non_null_fields(spark, users_registry, backend):
    """The struct's fields are nullable as the reader's Avro types are (as from_avro has them); a
    bad, null or unknown-id row is a null struct, and its fields read as null, never as 0 or ''."""
    reg, ids = users_registry
    short_prefix, unknown_id, empty_body = (
        b"\x00\x00\x00\x00",
        wire.CONFLUENT.pack(999, b"\x02"),
        wire.CONFLUENT.pack(ids[0], b""),
    )
    messages = user_messages(ids) + [short_prefix, unknown_id, empty_body]
    df = frame_of(spark, messages)
    out = pcs.decode(df, registry=reg, reader_subject="users-value")
    struct_type = out.schema["decoded"].dataType
    assert out.schema["decoded"].nullable
    assert {f.name: f.nullable for f in struct_type.fields} == {
        "id": False,
        "name": False,
        "email": True,
        "score": False,
    }
    rows = collect_sorted(out.select("k", "decoded.*", "decode_error"))
    assert [r["id"] for r in rows] == [1, 2, None, 3, 4, 2**40, None, None, None]
    for r in rows[6:] + rows[2:3]:
        assert (r["id"], r["name"], r["score"]) == (None, None, None)
    assert [r["k"] for r in rows if r["decode_error"] is not None] == [6, 7, 8]
    flat = pcs.decode(df, registry=reg, reader_subject="users-value", flatten=True)
    assert all(f.nullable for f in flat.schema.fields)


def test_a_null_in_a_non_null_field_becomes_an_error_row():
    """Should a format call a field non-null that its decoder leaves null in a good row, the row
    is an error row with its bytes; the JVM would otherwise read the null slot as a value."""
    reader = {"type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", "string"]}]}
    decoder = MessageDecoder({1: json.dumps(reader)}, reader_schema=json.dumps(reader), on_error="null")
    from pulsar_codec.integrations.spark.types import reader_struct

    target, converters = reader_struct(decoder.arrow_schema, {"a"})  # claims what the schema does not
    job = DecodeJob(decoder, "t", "value", None, "decoded", "decode_error", "python")
    messages = [
        wire.CONFLUENT.pack(1, body(reader, {"a": "x"})),
        wire.CONFLUENT.pack(1, body(reader, {"a": None})),
        None,
    ]
    out = job.decode_batch(
        pa.record_batch({"value": pa.array(messages, pa.binary())}), decoder, list(target), converters
    )
    assert out.column("decoded").to_pylist() == [{"a": "x"}, None, None]
    errors = out.column("decode_error").to_pylist()
    assert errors[0] is None and errors[2] is None
    assert errors[1]["code"] == ErrorCode.SCHEMA_UNRESOLVABLE
    assert errors[1]["payload"] == messages[1]
    assert "field 'a' of message 1 is null" in errors[1]["message"]


def test_spark_schema_is_decodes_type_and_nullable_is_a_pandas_udfs(spark, users_registry):
    """spark_schema() is the decoded struct's type; nullable=True the one a pandas_udf returning
    that struct can declare (Spark refuses non-nullable fields there)."""
    reg, ids = users_registry
    df = frame_of(spark, [m for m in user_messages(ids) if m is not None])
    assert pcs.spark_schema(V3) == pcs.decode(df, registry=reg, reader_subject="users-value").schema["decoded"].dataType
    loose = pcs.spark_schema(V3, nullable=True)
    assert all(f.nullable for f in loose.fields)

    @F.pandas_udf(loose)
    def names(values: pd.Series) -> pd.DataFrame:
        return pd.DataFrame({"id": [1] * len(values), "name": ["n"] * len(values), "email": None, "score": 0.5})

    assert {r["d"]["name"] for r in df.select(names("value").alias("d")).collect()} == {"n"}
    strict = F.pandas_udf(names.func, pcs.spark_schema(V3))
    with pytest.raises(Py4JJavaError, match="ARROW_TYPE_MISMATCH"):
        df.select(strict("value").alias("d")).collect()
