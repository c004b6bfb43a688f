"""The main job on embedded defaults: ``pulsar-codec demo``.

1. starts the embedded registry (a SQLite file in the output folder);
2. generates an ``orders`` topic whose Avro schema evolves over three versions (registered under
   ``orders-value`` with BACKWARD compatibility), a ``customers`` topic of INLINE KeyValue
   messages (string key, Avro value), and a few corrupt messages, and writes both as raw Parquet
   tables shaped like a Pulsar topic dump (``pulsar-codec dump``);
3. starts a local Pulsar broker (pulsar-lite, bound to 127.0.0.1) and produces both topics to it;
4. reads them back: with Spark, ``orders`` as a stream through ``readStream.format("pulsar")``
   (``availableNow``, a few micro-batches, decoded on the way by ``spark.decode``, progress shown)
   and ``customers`` through ``read.format("pulsar")``; with the local engine, the topics are
   dumped (``pulsar-codec dump``) and decoded in this process with every core
   (``MessageDecoder(threads=0)``). Where no broker can start (pulsar-lite or pulsar-client not
   installed), the generated dumps are read instead;
5. writes the decoded rows and a dead-letter table of the bad ones (raw bytes kept), and prints a
   summary: rows per schema id, errors and throughput.
"""

from __future__ import annotations

import decimal
import json
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import _console
from ._console import best_of

__all__ = ["CUSTOMERS_TOPIC", "CUSTOMER_SCHEMA", "ORDERS_TOPIC", "ORDER_SCHEMAS", "DemoResult", "generate", "run"]

ORDERS_TOPIC = "persistent://public/default/orders"
CUSTOMERS_TOPIC = "persistent://public/default/customers"
INDEX_PROPERTY = "index"
"""The message property that carries an order's position in the generated topic (the dead-letter
``index`` of a message read from the broker)."""
READ_TIMEOUT_MS = 10_000
"""The source's wait for a message on the local broker before its reader is reopened."""
MICRO_BATCHES = 4
"""About how many micro-batches the streaming read of ``orders`` takes (``max_records_per_trigger``)."""

_STATUS = {"type": "enum", "name": "Status", "namespace": "demo", "symbols": ["NEW", "PAID", "SHIPPED", "CANCELLED"]}
_TS = {"type": "long", "logicalType": "timestamp-millis"}
_ITEM = {
    "type": "record",
    "name": "Item",
    "namespace": "demo",
    "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}],
}
_V1_FIELDS = [
    {"name": "order_id", "type": "long"},
    {"name": "customer", "type": "string"},
    {"name": "amount", "type": "double"},
    {"name": "status", "type": _STATUS},
    {"name": "created", "type": _TS},
]
ORDER_SCHEMAS: list[dict[str, Any]] = [
    {"type": "record", "name": "Order", "namespace": "demo", "fields": _V1_FIELDS},
    {
        "type": "record",
        "name": "Order",
        "namespace": "demo",
        "fields": _V1_FIELDS + [{"name": "items", "type": {"type": "array", "items": _ITEM}, "default": []}],
    },
    {
        "type": "record",
        "name": "Order",
        "namespace": "demo",
        # Item is defined again inline, not referred to by name: each schema text stands alone
        "fields": _V1_FIELDS
        + [
            {"name": "items", "type": {"type": "array", "items": _ITEM}, "default": []},
            {"name": "note", "type": ["null", "string"], "default": None},
            {"name": "tags", "type": {"type": "map", "values": "string"}, "default": {}},
        ],
    },
]

CUSTOMER_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "Customer",
    "namespace": "demo",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "tier", "type": {"type": "enum", "name": "Tier", "symbols": ["FREE", "PRO", "ENTERPRISE"]}},
        {"name": "credit", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
    ],
}

_WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike".split()


def _orders(rng: np.random.Generator, rows: int, version: int, start_id: int) -> pa.Table:
    n = rows
    customers = pa.array([f"cust-{i:05d}" for i in rng.integers(0, 5000, n)])
    columns: dict[str, Any] = {
        "order_id": pa.array(np.arange(start_id, start_id + n, dtype=np.int64)),
        "customer": customers,
        "amount": pa.array(np.round(rng.gamma(2.0, 40.0, n), 2)),
        "status": pa.array(rng.choice(_STATUS["symbols"], n)),
        "created": pa.array(
            (1_767_225_600_000 + rng.integers(0, 86_400_000 * 30, n)).astype("datetime64[ms]"),
            pa.timestamp("ms", tz="UTC"),
        ),
    }
    if version >= 2:
        counts = rng.integers(0, 4, n)
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        total = int(offsets[-1])
        items = pa.StructArray.from_arrays(
            [
                pa.array([f"SKU-{k:04d}" for k in rng.integers(0, 9999, total)]),
                pa.array(rng.integers(1, 9, total).astype(np.int32)),
            ],
            names=["sku", "qty"],
        )
        columns["items"] = pa.ListArray.from_arrays(pa.array(offsets), items)
    if version >= 3:
        notes = [None if r < 0.6 else " ".join(rng.choice(_WORDS, 3)) for r in rng.random(n)]
        columns["note"] = pa.array(notes, pa.string())
        columns["tags"] = pa.array(
            [[("channel", str(rng.choice(["web", "app", "store"])))] if r < 0.5 else [] for r in rng.random(n)],
            pa.map_(pa.string(), pa.string()),
        )
    return pa.table(columns)


def _raw_table(payloads: pa.Array, keys: Sequence[str | None], topic: str, start_ms: int) -> pa.Table:
    """A topic dump: the columns `pulsar-codec dump` writes (see pulsar_codec.pulsar.MESSAGE_SCHEMA)."""
    n = len(payloads)
    publish = pa.array(
        np.arange(start_ms, start_ms + n, dtype=np.int64).astype("datetime64[ms]"), pa.timestamp("ms", tz="UTC")
    )
    return pa.table(
        {
            "payload": payloads,
            "key": pa.array(keys, pa.string()),
            "properties": pa.array([[("source", "demo")]] * n, pa.map_(pa.string(), pa.string())),
            "publish_time": publish,
            "message_id": pa.array([f"{i}:0:-1".encode() for i in range(n)], pa.binary()),
            "topic": pa.array([f"persistent://public/default/{topic}"] * n, pa.string()),
        }
    )


@dataclass
class Generated:
    """What :func:`generate` wrote: the two raw topic dumps and the schema ids behind them."""

    orders_path: Path
    customers_path: Path
    ids: list[int]
    customer_id: int
    rows_by_id: dict[int, int]
    corrupt: int
    payload_bytes: int


def generate(registry: Any, out: Path, rows: int, seed: int = 42) -> Generated:
    """Register the schemas, encode the messages and write the two raw topic dumps."""
    from .. import keyvalue, wire
    from ..formats.avro import Encoder

    rng = np.random.default_rng(seed)
    registry.set_compatibility("BACKWARD", "orders-value")
    ids = [registry.register("orders-value", json.dumps(s)) for s in ORDER_SCHEMAS]
    # a third of the traffic per version, oldest first, as a topic whose producers upgrade over time
    shares = [rows // 3, rows // 3, rows - 2 * (rows // 3)]
    parts, rows_by_id = [], {}
    next_id = 1
    for version, (schema, schema_id, count) in enumerate(zip(ORDER_SCHEMAS, ids, shares), start=1):
        bodies = Encoder(schema).encode(_orders(rng, count, version, next_id))
        parts.append(wire.frame(bodies, schema_id, wire.CONFLUENT))
        rows_by_id[schema_id] = count
        next_id += count
    messages = pa.concat_arrays(parts).to_pylist() if parts else []
    # a few corrupt messages, as real topics have: a wrong magic byte, a truncated body (none in a
    # demo too small to spare them)
    random.seed(seed)
    corrupt = max(3, rows // 20_000) if rows >= 100 else 0
    for k in range(corrupt):
        i = random.randrange(len(messages))
        messages[i] = (b"\x07" + messages[i][1:]) if k % 2 == 0 else messages[i][: len(messages[i]) // 2]
    payloads = pa.array(messages, pa.binary())
    keys = [None] * len(payloads)
    out.mkdir(parents=True, exist_ok=True)
    orders_path = out / "raw-orders.parquet"
    pq.write_table(_raw_table(payloads, keys, "orders", 1_767_225_600_000), orders_path)

    customer_id = registry.register("customers-value", json.dumps(CUSTOMER_SCHEMA))
    n = max(1, rows // 10) if rows else 0
    customers = pa.table(
        {
            "name": pa.array([" ".join(rng.choice(_WORDS, 2)).title() for _ in range(n)]),
            "tier": pa.array(rng.choice(["FREE", "PRO", "ENTERPRISE"], n)),
            "credit": pa.array([_decimal(int(c)) for c in rng.integers(0, 10_000_000, n)], pa.decimal128(12, 2)),
        }
    )
    values = wire.frame(Encoder(CUSTOMER_SCHEMA).encode(customers), customer_id, wire.CONFLUENT)
    ckeys = pa.array([f"cust-{i:05d}".encode() for i in range(n)], pa.binary())
    inline = keyvalue.join_inline(ckeys, values)
    customers_path = out / "raw-customers.parquet"
    pq.write_table(_raw_table(inline, [None] * n, "customers", 1_767_225_600_000), customers_path)
    return Generated(orders_path, customers_path, ids, customer_id, rows_by_id, corrupt, payloads.nbytes)


def _decimal(cents: int) -> decimal.Decimal:
    return decimal.Decimal(cents).scaleb(-2)


@dataclass
class DemoResult:
    """What :func:`run` did: rows in, rows decoded, bad rows, rows per schema id, seconds."""

    rows: int
    decoded: int
    errors: int
    rows_by_id: dict[int, int]
    seconds: float
    """The orders' seconds, the span of the throughput line: from the broker (or the generated
    dump) until the decoded and dead-letter tables are written."""
    outputs: dict[str, Path] = field(default_factory=dict)
    planted: int = 0
    """Corrupt messages the demo planted (none below 100 rows): ``errors`` should equal it."""
    source: str = "files"
    """Where the topics were read from: ``"pulsar-lite"`` (a local broker) or ``"files"`` (the
    generated dumps, where no broker could start)."""
    micro_batches: list[int] = field(default_factory=list)
    """Messages per micro-batch of the streaming read of ``orders`` (Spark with a broker)."""
    laps: dict[str, float] = field(default_factory=dict)
    """Seconds of each step, back to back on one clock (keys of :data:`LAP_NAMES`)."""
    total_seconds: float = 0.0
    """The sum of ``laps``: the demo from its registry's creation until the broker stopped."""


def _rows_by_id(payloads: pa.Array, bad: np.ndarray) -> dict[int, int]:
    """Rows per schema id among the good framed messages (``bad``: positions of the dead letters)."""
    from .. import wire

    good = np.ones(len(payloads), dtype=bool)
    good[bad] = False
    ids = wire.unframe(payloads.filter(pa.array(good)).drop_null(), wire.CONFLUENT).schema_ids.to_numpy()
    return {int(k): int(v) for k, v in zip(*np.unique(ids, return_counts=True))}


def _decode_orders(
    raw_path: Path, registry: Any, out_path: Path, dead_path: Path, engine: str, session: Any
) -> dict[str, Any]:
    """Orders through the contract of ``pulsar-codec decode``: decoded rows and dead letters, the
    same tables on both engines; returns the statistics (rows, decoded, errors, nulls)."""
    from .. import wire
    from ._contract import input_files
    from .parquet_io import decode_parquet

    if session is None:
        return decode_parquet(
            raw_path, out_path, registry, column="payload", reader_schema=ORDER_SCHEMAS[-1], dead_letter=dead_path
        )
    from .parquet_spark import decode_spark

    return dict(
        decode_spark(
            input_files(raw_path),
            out_path,
            registry,
            "payload",
            wire.CONFLUENT,
            ORDER_SCHEMAS[-1],
            dead_path,
            session,
        )
    )


def _decode_keyvalue_spark(session: Any, raw_path: Path, registry: Any, out_path: Path) -> int:
    from pyspark.sql import functions as F

    from .. import spark as pcs

    raw = session.read.parquet(str(raw_path))
    # the keys are plain strings, the values framed Avro: split, then decode the values only
    parts = pcs.split_keyvalue(raw, "payload", key_column="key_bytes", value_column="value_bytes")
    decoded = pcs.decode(parts, "value_bytes", registry=registry, reader_schema=CUSTOMER_SCHEMA)
    result = decoded.select(F.col("key_bytes").cast("string").alias("customer"), "decoded.*")
    result.write.mode("overwrite").parquet(str(out_path))
    rows: int = session.read.parquet(str(out_path)).count()
    return rows


# -- the topics on a local broker ------------------------------------------------------------------


def _start_broker(out: Path, gen: Generated, bar: _console.Progress) -> tuple[Any, str]:
    """A pulsar-lite broker with both topics produced to it, or ``(None, why not)``."""
    from ._broker import BrokerUnavailable, produce, start_lite

    try:
        broker = start_lite(out / "pulsar-lite")
    except BrokerUnavailable as exc:
        return None, str(exc)
    try:
        orders = pq.read_table(gen.orders_path, columns=["payload"])["payload"].to_pylist()
        customers = pq.read_table(gen.customers_path, columns=["payload"])["payload"].to_pylist()
        bar.update(label=f"producing {len(orders):,} orders and {len(customers):,} customers to pulsar-lite")
        produce(broker.url, ORDERS_TOPIC, orders, index_property=INDEX_PROPERTY)
        produce(broker.url, CUSTOMERS_TOPIC, customers)
    except BaseException:
        broker.stop()
        raise
    return broker, ""


def _dump_topic(broker: Any, topic: str, path: Path) -> None:
    """``pulsar-codec dump`` of one topic over its generated file: the local engine reads the
    broker's messages, in topic order (a dead letter's ``index`` is its position in the topic)."""
    from ..pulsar import dump_to_parquet

    try:
        dump_to_parquet(broker.url, topic, path)
    except TimeoutError:  # pulsar-lite at times stops dispatching to a reader: one more read
        dump_to_parquet(broker.url, topic, path)


def _entries(url: str, topic: str) -> int:
    """The entries (producer batches) of a topic, from its last message id (one ledger)."""
    from ..integrations.spark.pulsar_offsets import last_message_id
    from ._broker import client

    c = client(url)
    try:
        return int(last_message_id(c, topic).entry_id()) + 1
    finally:
        c.close()


def _dead_letter_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``: bad rows of the streamed orders into dead-letter rows (the contract's)."""
    from .. import wire
    from ._contract import dead_letter_table

    for batch in batches:
        error = batch.column("decode_error")
        texts = batch.column("error_text").to_pylist()
        table = dead_letter_table(
            batch.column("index").to_numpy(zero_copy_only=False),
            batch.column("payload"),
            error.field("code").to_numpy(zero_copy_only=False),
            error.field("offset").to_numpy(zero_copy_only=False),
            texts,
            wire.CONFLUENT,
        )
        yield from table.to_batches()


def _stream_orders(
    session: Any, url: str, registry_path: Path, out: Path, out_path: Path, dead_path: Path, rows: int
) -> tuple[dict[str, Any], list[int]]:
    """``orders`` from the broker as a stream (``readStream.format("pulsar")``, ``availableNow``, a
    few micro-batches), decoded on the way by ``spark.decode`` into a Parquet sink with a
    checkpoint; then the contract's tables from the sink. Returns the statistics (with
    ``stream_end``, the :func:`time.perf_counter` time the stream ended; the tables are written
    after it) and the messages of each micro-batch."""
    import shutil

    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    from .. import spark as pcs
    from .. import wire
    from ..integrations.spark.types import spark_type
    from ._contract import dead_letter_schema

    landed, checkpoint = out / "orders-stream", out / "orders-stream-checkpoint"
    for folder in (landed, checkpoint):  # a new broker: the old checkpoint's offsets mean nothing here
        shutil.rmtree(folder, ignore_errors=True)
    pcs.register(session)
    per_trigger = max(1, -(-_entries(url, ORDERS_TOPIC) // MICRO_BATCHES))
    raw = (
        session.readStream.format("pulsar")
        .option("service_url", url)
        .option("topics", ORDERS_TOPIC)
        .option("decode", "false")
        .option("max_records_per_trigger", str(per_trigger))
        .option("timeout_ms", str(READ_TIMEOUT_MS))
        .load()
    )
    framed = raw.select(
        F.col("properties")[INDEX_PROPERTY].cast("long").alias("index"),
        F.col("value").alias("payload"),
        F.col("value").isNull().alias("tombstone"),  # the decoded rows keep no payload
    )
    # no pre-pass on a stream: the reader is the subject's latest version, the ids are fetched by
    # the executors from the registry file
    decoded = pcs.decode(framed, "payload", registry=str(registry_path), reader_subject="orders-value")
    query = (
        decoded.writeStream.format("parquet")
        .option("path", str(landed))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    batches: list[int] = []
    with _console.progress("streaming orders from pulsar-lite", total=rows) as bar:
        while query.isActive:
            batches = [int(p["numInputRows"]) for p in query.recentProgress]
            rate = query.lastProgress["processedRowsPerSecond"] if query.lastProgress else 0.0
            bar.update(
                completed=sum(batches),
                label=f"orders stream: {len(batches)} micro-batches, {rate:,.0f} msg/s",
            )
            query.awaitTermination(0.25)
        query.awaitTermination()  # raises the query's error, if it failed
        batches = [int(p["numInputRows"]) for p in query.recentProgress if int(p["numInputRows"])]
        bar.update(completed=sum(batches))
    stream_end = time.perf_counter()

    landed_df = session.read.parquet(str(landed))
    counts = landed_df.agg(
        F.count(F.lit(1)).alias("rows"),
        F.count("decode_error").alias("errors"),
        F.sum(F.col("tombstone").cast("long")).alias("nulls"),
    ).collect()[0]
    is_bad = F.col("decode_error").isNotNull()
    landed_df.where(~is_bad).select("decoded.*").write.mode("overwrite").parquet(str(out_path))
    text = F.regexp_replace(
        "decode_error.message",
        r"\(byte (\d+)\)",
        F.concat(F.lit("(message "), F.col("index").cast("string"), F.lit(", byte $1)")),
    )
    schema = StructType(
        [StructField(f.name, spark_type(f.type), f.nullable) for f in dead_letter_schema(wire.CONFLUENT)]
    )
    # a bad row's bytes are in its error (spark.decode keeps no payload column by default)
    dead = landed_df.where(is_bad).select(
        "index", F.col("decode_error.payload").alias("payload"), "decode_error", text.alias("error_text")
    )
    dead.mapInArrow(_dead_letter_rows, schema).write.mode("overwrite").parquet(str(dead_path))
    rows_in, errors, nulls = int(counts["rows"]), int(counts["errors"]), int(counts["nulls"] or 0)
    stats = {
        "rows": rows_in,
        "decoded": rows_in - errors - nulls,
        "errors": errors,
        "nulls": nulls,
        "stream_end": stream_end,
    }
    return stats, batches


def _customers_from_pulsar(session: Any, url: str, registry_path: Path, out_path: Path) -> int:
    """``customers`` through ``read.format("pulsar")``: INLINE KeyValue split by the source (keys
    are plain strings, so they stay bytes), the values decoded with ``spark.decode``."""
    from pyspark.sql import functions as F

    from .. import spark as pcs

    raw = (
        session.read.format("pulsar")
        .option("service_url", url)
        .option("topics", CUSTOMERS_TOPIC)
        .option("keyvalue", "INLINE")
        .option("decode", "false")
        .option("timeout_ms", str(READ_TIMEOUT_MS))
        .load()
    )
    decoded = pcs.decode(raw, "value", registry=str(registry_path), reader_schema=CUSTOMER_SCHEMA)
    result = decoded.select(F.col("key").cast("string").alias("customer"), "decoded.*")
    result.write.mode("overwrite").parquet(str(out_path))
    rows: int = session.read.parquet(str(out_path)).count()
    return rows


class Laps:
    """Back-to-back spans of one clock (:func:`time.perf_counter`): each lap runs from the end of
    the one before, so the laps add up to the total and no figure the demo prints is measured on
    another clock or over another span than it says."""

    def __init__(self) -> None:
        self.start = self.last = time.perf_counter()
        self.spans: dict[str, float] = {}

    def lap(self, name: str) -> float:
        """End the current lap, adding its seconds to ``name``; returns them."""
        now = time.perf_counter()
        seconds = now - self.last
        self.spans[name] = self.spans.get(name, 0.0) + seconds
        self.last = now
        return seconds

    @property
    def total(self) -> float:
        """Seconds from the start to the end of the last lap (the sum of the laps)."""
        return self.last - self.start


#: what each lap of :func:`run` covers, as the time line names it
LAP_NAMES = {
    "generate": "registry and generated data",
    "broker": "broker start and produce",
    "no-broker": "trying to start a broker",
    "spark": "Spark start",
    "orders": "orders",
    "customers": "customers",
    "checks": "counts and kernel timing",
    "stop": "broker stop",
}


def run(out: Path, rows: int, seed: int, engine: str, say: Callable[[str], None], progress: bool = True) -> DemoResult:
    """Run the whole demo; returns what it did (any ``rows`` >= 0: no rows write empty tables)."""
    import pulsar_codec as pc

    from ..registry import LocalRegistry

    if rows < 0:
        raise _console.UsageError(f"--rows must be 0 or more, not {rows}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    registry_path = out / "registry.db"
    if registry_path.exists():
        registry_path.unlink()
    decoded_path = out / "orders-decoded.parquet"
    dead_path = out / "orders-dead-letter.parquet"
    customers_path = out / "customers-decoded.parquet"
    broker: Any = None
    no_broker = "no messages to produce"
    batches: list[int] = []
    # the orders lap in two parts: from the broker (or the dump) and then into the output tables
    parts: list[tuple[str, float]] = []
    laps = Laps()
    try:
        with _console.progress("demo", total=7 if engine == "spark" else 6) as bar:
            registry = LocalRegistry(registry_path)
            bar.advance()
            bar.update(label=f"generating {rows:,} order messages")
            gen = generate(registry, out, rows, seed)
            laps.lap("generate")
            bar.advance()
            if rows:
                bar.update(label="starting pulsar-lite (a local Pulsar broker)")
                broker, no_broker = _start_broker(out, gen, bar)
                laps.lap("broker" if broker is not None else "no-broker")
            bar.advance()
            session = None
            if engine == "spark":
                from .parquet_spark import spark_session

                bar.update(label="starting Spark (local mode)")
                session = spark_session("pulsar-codec-demo")
                laps.lap("spark")
                bar.advance()
            if broker is not None and session is not None:
                bar.update(label='streaming orders through format("pulsar")')
                stats, batches = _stream_orders(session, broker.url, registry_path, out, decoded_path, dead_path, rows)
                streamed = float(stats["stream_end"]) - laps.last
                orders_seconds = laps.lap("orders")
                parts = [
                    ("streamed from the broker and decoded into the sink", streamed),
                    ("then the decoded and dead-letter tables written from it", orders_seconds - streamed),
                ]
            else:
                if broker is not None:
                    bar.update(label="dumping orders (pulsar-codec dump)")
                    _dump_topic(broker, ORDERS_TOPIC, gen.orders_path)
                    parts.append(("dumped from the broker with pulsar-codec dump", laps.lap("orders")))
                bar.update(label=f"decoding orders ({engine} engine)")
                stats = _decode_orders(gen.orders_path, registry, decoded_path, dead_path, engine, session)
                what = "read from the dump, decoded and written" + (" by Spark" if session is not None else "")
                parts.append((("then " if parts else "") + what, laps.lap("orders")))
                orders_seconds = laps.spans["orders"]
            bar.advance()
            bar.update(label="decoding KeyValue customers")
            if session is not None and broker is not None:
                customers = _customers_from_pulsar(session, broker.url, registry_path, customers_path)
            elif session is not None:
                customers = _decode_keyvalue_spark(session, gen.customers_path, registry_path, customers_path)
            else:
                if broker is not None:
                    _dump_topic(broker, CUSTOMERS_TOPIC, gen.customers_path)
                customers = _decode_keyvalue(gen.customers_path, registry, customers_path)
            laps.lap("customers")
            bar.advance()
            dead = pq.read_table(dead_path, columns=["index"])["index"].to_numpy()
            payloads = pq.read_table(gen.orders_path, columns=["payload"])["payload"].combine_chunks()
            counts = _rows_by_id(payloads, dead)
            kernel_rate = _kernel_rate(gen.orders_path, registry, ORDER_SCHEMAS[-1])
            laps.lap("checks")
            bar.advance()
    finally:
        if broker is not None:
            broker.stop()
    registry.close()
    laps.lap("stop")
    source = "pulsar-lite" if broker is not None else "files"
    good, bad, read = int(stats["decoded"]), int(stats["errors"]), int(stats["rows"])
    say(f"pulsar_codec {pc.__version__} (kernels: {pc.BACKEND}), engine: {engine}")
    say(f"registry {registry_path}: orders-value ids {gen.ids}, customers-value id {gen.customer_id}")
    if broker is not None:
        how = (
            'orders streamed through readStream.format("pulsar"), customers read through read.format("pulsar")'
            if session is not None
            else "dumped with pulsar-codec dump, decoded in this process"
        )
        say(f"topics on pulsar-lite {broker.url}: orders, customers; {how}")
    else:
        say(f"no local broker ({no_broker}): reading the generated topic dumps")
    say(
        f"raw topic dumps: {gen.orders_path.name} ({gen.payload_bytes / 1e6:.1f} MB of payloads), {gen.customers_path.name}"
    )
    say("")
    say("orders topic")
    if batches:
        sizes = " + ".join(f"{b:,}" for b in batches)
        say(f"  streamed in {len(batches)} micro-batches (availableNow, checkpointed): {sizes} messages")
    for schema_id in sorted(counts):
        version = gen.ids.index(schema_id) + 1 if schema_id in gen.ids else "?"
        say(f"  schema id {schema_id} (orders-value v{version}): {counts[schema_id]:>9,} rows")
    say(f"  decoded {good:,} rows into {decoded_path.name}/ (read as v3: older rows get the defaults)")
    say(f"  {bad:,} corrupt messages -> {dead_path.name}/ with their raw bytes and the error")
    if orders_seconds > 0 and read:
        steps = ", ".join(f"{what} ({seconds:.2f} s)" for what, seconds in parts)
        say(
            f"  throughput: {read / orders_seconds:,.0f} messages/s = {read:,} orders in {orders_seconds:.2f} s:"
            f" {steps} ({engine} engine)"
        )
    if kernel_rate:
        say(
            f"  the decode kernels alone, in this process on the same messages (every core): {kernel_rate / 1e6:,.1f}M messages/s"
            + (" (at this size a Spark job is mostly fixed cost: JVM, Python workers, Parquet)" if session else "")
        )
    say(f"customers topic (INLINE KeyValue): {customers:,} rows -> {customers_path.name}/")
    spans = ", ".join(f"{LAP_NAMES[name]} {seconds:.2f} s" for name, seconds in laps.spans.items())
    say(f"time: {spans}; total {laps.total:.2f} s")
    say(f"outputs in {out}")
    _console.summary(
        "demo",
        [
            ("rows", f"{rows:,}"),
            ("decoded", f"{good:,}"),
            ("errors", f"{bad:,}"),
            ("nulls", f"{int(stats['nulls']):,}"),
            ("engine", engine),
            ("source", source),
            ("orders seconds", f"{orders_seconds:.2f}"),
            ("total seconds", f"{laps.total:.2f}"),
        ],
    )
    outputs = {"decoded": decoded_path, "dead_letter": dead_path, "customers": customers_path}
    return DemoResult(
        rows, good, bad, counts, orders_seconds, outputs, gen.corrupt, source, batches, dict(laps.spans), laps.total
    )


def _kernel_rate(raw_path: Path, registry: Any, reader_schema: Any) -> float:
    """Messages per second of one MessageDecoder alone on the raw column (best of three: the first
    run also fetches the schemas and compiles the plans); 0 for no messages."""
    from ..pipeline import MessageDecoder

    payloads = pq.read_table(raw_path, columns=["payload"])["payload"]
    if not len(payloads):
        return 0.0
    decoder = MessageDecoder(registry, reader_schema=reader_schema, on_error="null", threads=0)
    count: int = len(payloads)
    return count / best_of(lambda: decoder.decode(payloads), 3)


def _decode_keyvalue(raw_path: Path, registry: Any, out_path: Path) -> int:
    """INLINE KeyValue messages: split into key and value, decode the Avro value, keep the key;
    written as the Spark engine writes it (a folder, the contract's column types)."""
    from .. import keyvalue, wire
    from ..pipeline import MessageDecoder
    from ._contract import contract_columns, convert_batch, prepare_output, write_part

    table = pq.read_table(raw_path)
    keys, values = keyvalue.split_inline(table["payload"])
    decoder = MessageDecoder(registry, protocol=wire.CONFLUENT, reader_schema=CUSTOMER_SCHEMA, threads=0)
    batch = decoder.decode(values)
    assert decoder.arrow_schema is not None
    columns, converters = contract_columns(decoder.arrow_schema)
    schema = pa.schema([pa.field("customer", pa.string()), *columns])
    result = pa.Table.from_arrays([keys.cast(pa.string()), *convert_batch(batch, columns, converters)], schema=schema)
    pq.write_table(result, write_part(prepare_output(out_path), 0), store_schema=False)
    return len(result)
