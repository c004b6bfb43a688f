"""The main job on embedded defaults: ``pulsar-codec demo``.

1. starts the embedded registry (a SQLite file in the output folder);
2. generates an ``orders`` topic whose Avro schema evolves over three versions (registered under
   ``orders-value`` with BACKWARD compatibility), a ``customers`` topic of INLINE KeyValue
   messages (string key, Avro value), and a few corrupt messages;
3. writes both as raw Parquet tables shaped like a Pulsar topic dump (``pulsar-codec dump``);
4. decodes them with the Spark pipeline in local mode (or the local Arrow engine);
5. writes the decoded rows and a dead-letter table of the bad ones (raw bytes kept), and prints a
   summary: rows per schema id, errors and throughput.
"""

from __future__ import annotations

import decimal
import json
import random
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ._console import best_of

__all__ = ["ORDER_SCHEMAS", "CUSTOMER_SCHEMA", "DemoResult", "generate", "run"]

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


class Progress:
    """A one-line progress bar on stderr (plain text when stderr is not a terminal)."""

    def __init__(self, steps: int, enabled: bool = True) -> None:
        self.steps = steps
        self.done = 0
        self.enabled = enabled
        self.tty = sys.stderr.isatty()

    def step(self, label: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        width = 24
        filled = int(width * self.done / self.steps)
        bar = "#" * filled + "." * (width - filled)
        text = f"[{bar}] {self.done}/{self.steps} {label}"
        if self.tty:
            sys.stderr.write("\r\033[K" + text)
            if self.done == self.steps:
                sys.stderr.write("\n")
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()


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
    messages = pa.concat_arrays(parts).to_pylist()
    # a few corrupt messages, as real topics have: a wrong magic byte, a truncated body
    random.seed(seed)
    corrupt = max(3, rows // 20_000)
    for k in range(corrupt):
        i = random.randrange(len(messages))
        messages[i] = (b"\x07" + messages[i][1:]) if k % 2 == 0 else messages[i][: len(messages[i]) // 2]
    payloads = pa.array(messages, pa.binary())
    keys = [None] * len(payloads)
    out.mkdir(parents=True, exist_ok=True)
    orders_path = out / "raw-orders.parquet"
    pq.write_table(_raw_table(payloads, keys, "orders", 1_767_225_600_000), orders_path)

    customer_id = registry.register("customers-value", json.dumps(CUSTOMER_SCHEMA))
    n = max(1, rows // 10)
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
    """What :func:`run` did: rows in, rows decoded, bad rows, rows per schema id, decode seconds."""

    rows: int
    decoded: int
    errors: int
    rows_by_id: dict[int, int]
    seconds: float
    outputs: dict[str, Path] = field(default_factory=dict)


def _decode_local(raw_path: Path, registry: Any, out_path: Path, dead_path: Path) -> tuple[int, int, dict[int, int]]:
    """The Arrow engine: Parquet batches -> pulsar_codec.decode -> Parquet, bad rows to a dead-letter file."""
    from .. import wire
    from ..pipeline import Decoded, MessageDecoder

    table = pq.read_table(raw_path)
    result = MessageDecoder(registry, protocol=wire.CONFLUENT, on_error="null").decode(table["payload"])
    assert isinstance(result, Decoded)  # on_error="null" returns the batch with its errors
    batch, errors = result.batch, result.errors
    bad = np.zeros(len(table), dtype=bool)
    bad[errors["index"].to_numpy()] = True
    good_rows = pa.Table.from_batches([batch]).filter(pa.array(~bad))
    pq.write_table(good_rows, out_path)
    dead = table.take(pa.array(np.flatnonzero(bad))).append_column("error", errors["message"])
    pq.write_table(dead, dead_path)
    ids = wire.unframe(table["payload"].filter(pa.array(~bad)), wire.CONFLUENT).schema_ids
    counts = {int(k): int(v) for k, v in zip(*np.unique(ids.to_numpy(), return_counts=True))}
    return len(good_rows), int(bad.sum()), counts


def _decode_spark(
    session: Any, raw_path: Path, registry_path: Path, out_path: Path, dead_path: Path, reader_schema: Any
) -> tuple[int, int, dict[int, int], float]:
    """The Spark engine: one mapInArrow decode, written once to a staging table, then split into
    the decoded table and the dead-letter table (raw bytes kept)."""
    from pyspark.sql import functions as F

    from .. import spark as pcs
    from ..registry import LocalRegistry

    raw = session.read.parquet(str(raw_path))
    decoded = pcs.decode(raw, "payload", registry=LocalRegistry(registry_path), reader_schema=reader_schema)
    staged = out_path.with_name(out_path.name + ".staging")
    t0 = time.perf_counter()
    (
        decoded.withColumn("schema_id", F.conv(F.hex(F.substring("payload", 2, 4)), 16, 10).cast("long"))
        .write.mode("overwrite")
        .parquet(str(staged))
    )
    decode_seconds = time.perf_counter() - t0
    table = session.read.parquet(str(staged))
    good = table.where(F.col("decode_error").isNull())
    bad = table.where(F.col("decode_error").isNotNull())
    good.select("decoded.*", "publish_time").write.mode("overwrite").parquet(str(out_path))
    bad.select("payload", "publish_time", "message_id", "decode_error").write.mode("overwrite").parquet(str(dead_path))
    counts = {int(r["schema_id"]): int(r["count"]) for r in good.groupBy("schema_id").count().collect()}
    n_bad = bad.count()
    shutil.rmtree(staged, ignore_errors=True)
    return sum(counts.values()), n_bad, counts, decode_seconds


def _decode_keyvalue_spark(session: Any, raw_path: Path, registry_path: Path, out_path: Path) -> int:
    from pyspark.sql import functions as F

    from .. import spark as pcs
    from ..registry import LocalRegistry

    raw = session.read.parquet(str(raw_path))
    # the keys are plain strings, the values framed Avro: split, then decode the values only
    parts = pcs.split_keyvalue(raw, "payload", key_column="key_bytes", value_column="value_bytes")
    decoded = pcs.decode(parts, "value_bytes", registry=LocalRegistry(registry_path))
    result = decoded.select(F.col("key_bytes").cast("string").alias("customer"), "decoded.*")
    result.write.mode("overwrite").parquet(str(out_path))
    rows: int = session.read.parquet(str(out_path)).count()
    return rows


def run(out: Path, rows: int, seed: int, engine: str, say: Callable[[str], None], progress: bool = True) -> DemoResult:
    """Run the whole demo; returns what it did."""
    import pulsar_codec as pc

    from ..registry import LocalRegistry

    bar = Progress(6 if engine == "spark" else 5, enabled=progress)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    registry_path = out / "registry.db"
    if registry_path.exists():
        registry_path.unlink()
    registry = LocalRegistry(registry_path)
    bar.step("embedded registry started")
    t0 = time.perf_counter()
    gen = generate(registry, out, rows, seed)
    bar.step(f"generated {rows:,} order messages + {rows // 10:,} KeyValue messages")
    say(f"pulsar_codec {pc.__version__} (kernels: {pc.BACKEND}), engine: {engine}")
    say(f"registry {registry_path}: orders-value ids {gen.ids}, customers-value id {gen.customer_id}")
    say(
        f"raw topic dumps: {gen.orders_path.name} ({gen.payload_bytes / 1e6:.1f} MB of payloads), {gen.customers_path.name}"
    )

    decoded_path = out / "orders-decoded.parquet"
    dead_path = out / "orders-dead-letter.parquet"
    customers_path = out / "customers-decoded.parquet"
    session = None
    if engine == "spark":
        from .. import spark as pcs

        t_session = time.perf_counter()
        session = pcs.session(app_name="pulsar-codec-demo")
        session.sparkContext.setLogLevel("ERROR")
        bar.step(f"Spark session (local mode) started in {time.perf_counter() - t_session:.1f} s")
    t1 = time.perf_counter()
    if session is not None:
        good, bad, counts, decode_seconds = _decode_spark(
            session, gen.orders_path, registry_path, decoded_path, dead_path, ORDER_SCHEMAS[-1]
        )
        stage = "the decode stage: schema-id pre-pass, mapInArrow decode and a Parquet write"
    else:
        t_local = time.perf_counter()
        good, bad, counts = _decode_local(gen.orders_path, registry, decoded_path, dead_path)
        decode_seconds = time.perf_counter() - t_local
        stage = "read Parquet, decode, write decoded and dead-letter Parquet"
    seconds = time.perf_counter() - t1
    bar.step("orders decoded")
    if session is not None:
        customers = _decode_keyvalue_spark(session, gen.customers_path, registry_path, customers_path)
    else:
        customers = _decode_keyvalue(gen.customers_path, registry, customers_path)
    bar.step("KeyValue customers decoded")
    bar.step("done")

    say("")
    say("orders topic")
    for schema_id in sorted(counts):
        version = gen.ids.index(schema_id) + 1 if schema_id in gen.ids else "?"
        say(f"  schema id {schema_id} (orders-value v{version}): {counts[schema_id]:>9,} rows")
    say(f"  decoded {good:,} rows into {decoded_path.name} (read as v3: older rows get the defaults)")
    say(f"  {bad:,} corrupt messages -> {dead_path.name} with their raw bytes and the error")
    say(f"  throughput: {(good + bad) / decode_seconds:,.0f} messages/s in {stage} ({engine} engine)")
    say(f"  whole job {seconds:.1f} s, including writing the decoded and dead-letter tables")
    kernel_rate = _kernel_rate(gen.orders_path, registry, ORDER_SCHEMAS[-1])
    say(
        f"  the decode kernels alone, in this process on the same messages: {kernel_rate / 1e6:,.1f}M messages/s"
        + (
            " (at this size a Spark job is mostly fixed cost: JVM, Python workers, Parquet)"
            if engine == "spark"
            else ""
        )
    )
    say(f"customers topic (INLINE KeyValue): {customers:,} rows -> {customers_path.name}")
    say(f"total {time.perf_counter() - t0:.1f} s; outputs in {out}")
    return DemoResult(rows, good, bad, counts, decode_seconds, {"decoded": decoded_path, "dead_letter": dead_path})


def _kernel_rate(raw_path: Path, registry: Any, reader_schema: Any) -> float:
    """Messages per second of one MessageDecoder alone on the raw column (best of three: the first
    run also fetches the schemas and compiles the plans)."""
    from ..pipeline import MessageDecoder

    payloads = pq.read_table(raw_path, columns=["payload"])["payload"]
    decoder = MessageDecoder(registry, reader_schema=reader_schema, on_error="null")
    rows: int = len(payloads)
    return rows / best_of(lambda: decoder.decode(payloads), 3)


def _decode_keyvalue(raw_path: Path, registry: Any, out_path: Path) -> int:
    """INLINE KeyValue messages: split into key and value, decode the Avro value, keep the key."""
    from .. import keyvalue, wire
    from ..pipeline import MessageDecoder

    table = pq.read_table(raw_path)
    keys, values = keyvalue.split_inline(table["payload"])
    batch = MessageDecoder(registry, protocol=wire.CONFLUENT).decode(values)
    result = pa.Table.from_batches([batch]).add_column(0, "customer", keys.cast(pa.string()))
    pq.write_table(result, out_path)
    return len(result)
