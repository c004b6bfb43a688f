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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import _console
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
    """What :func:`run` did: rows in, rows decoded, bad rows, rows per schema id, decode seconds."""

    rows: int
    decoded: int
    errors: int
    rows_by_id: dict[int, int]
    seconds: float
    outputs: dict[str, Path] = field(default_factory=dict)
    planted: int = 0
    """Corrupt messages the demo planted (none below 100 rows): ``errors`` should equal it."""


def _decode_orders(
    raw_path: Path, registry: Any, out_path: Path, dead_path: Path, engine: str, session: Any
) -> tuple[dict[str, Any], dict[int, int]]:
    """Orders through the contract of ``pulsar-codec decode``: decoded rows and dead letters, the
    same tables on both engines; returns the statistics and the decoded rows per schema id."""
    from .. import wire
    from ._contract import input_files
    from .parquet_io import decode_parquet

    if session is None:
        stats = decode_parquet(
            raw_path, out_path, registry, column="payload", reader_schema=ORDER_SCHEMAS[-1], dead_letter=dead_path
        )
    else:
        from .parquet_spark import decode_spark

        start = time.perf_counter()
        stats = dict(
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
        stats["seconds"] = time.perf_counter() - start
    payloads = pq.read_table(raw_path, columns=["payload"])["payload"]
    good = np.ones(len(payloads), dtype=bool)
    good[pq.read_table(dead_path, columns=["index"])["index"].to_numpy()] = False
    ids = wire.unframe(payloads.filter(pa.array(good)).drop_null(), wire.CONFLUENT).schema_ids.to_numpy()
    counts = {int(k): int(v) for k, v in zip(*np.unique(ids, return_counts=True))}
    return stats, counts


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
    with _console.progress("demo", total=6 if engine == "spark" else 5) as bar:
        registry = LocalRegistry(registry_path)
        bar.advance()
        t0 = time.perf_counter()
        bar.update(label=f"generating {rows:,} order messages")
        gen = generate(registry, out, rows, seed)
        bar.advance()
        session = None
        if engine == "spark":
            from .parquet_spark import spark_session

            bar.update(label="starting Spark (local mode)")
            session = spark_session("pulsar-codec-demo")
            bar.advance()
        bar.update(label=f"decoding orders ({engine} engine)")
        t1 = time.perf_counter()
        stats, counts = _decode_orders(gen.orders_path, registry, decoded_path, dead_path, engine, session)
        seconds = time.perf_counter() - t1
        bar.advance()
        bar.update(label="decoding KeyValue customers")
        if session is not None:
            customers = _decode_keyvalue_spark(session, gen.customers_path, registry_path, customers_path)
        else:
            customers = _decode_keyvalue(gen.customers_path, registry, customers_path)
        bar.advance()
        kernel_rate = _kernel_rate(gen.orders_path, registry, ORDER_SCHEMAS[-1])
        bar.advance()
    good, bad, decode_seconds = int(stats["decoded"]), int(stats["errors"]), float(stats["seconds"])
    say(f"pulsar_codec {pc.__version__} (kernels: {pc.BACKEND}), engine: {engine}")
    say(f"registry {registry_path}: orders-value ids {gen.ids}, customers-value id {gen.customer_id}")
    say(
        f"raw topic dumps: {gen.orders_path.name} ({gen.payload_bytes / 1e6:.1f} MB of payloads), {gen.customers_path.name}"
    )
    say("")
    say("orders topic")
    for schema_id in sorted(counts):
        version = gen.ids.index(schema_id) + 1 if schema_id in gen.ids else "?"
        say(f"  schema id {schema_id} (orders-value v{version}): {counts[schema_id]:>9,} rows")
    say(f"  decoded {good:,} rows into {decoded_path.name}/ (read as v3: older rows get the defaults)")
    say(f"  {bad:,} corrupt messages -> {dead_path.name}/ with their raw bytes and the error")
    if decode_seconds > 0 and rows:
        say(f"  throughput: {rows / decode_seconds:,.0f} messages/s, reading, decoding and writing ({engine} engine)")
    if kernel_rate:
        say(
            f"  the decode kernels alone, in this process on the same messages: {kernel_rate / 1e6:,.1f}M messages/s"
            + (" (at this size a Spark job is mostly fixed cost: JVM, Python workers, Parquet)" if session else "")
        )
    say(f"customers topic (INLINE KeyValue): {customers:,} rows -> {customers_path.name}/")
    say(f"total {time.perf_counter() - t0:.1f} s; outputs in {out}")
    _console.summary(
        "demo",
        [
            ("rows", f"{rows:,}"),
            ("decoded", f"{good:,}"),
            ("errors", f"{bad:,}"),
            ("nulls", f"{int(stats['nulls']):,}"),
            ("engine", engine),
            ("seconds", f"{seconds:.2f}"),
        ],
    )
    registry.close()
    outputs = {"decoded": decoded_path, "dead_letter": dead_path, "customers": customers_path}
    return DemoResult(rows, good, bad, counts, decode_seconds, outputs, gen.corrupt)


def _kernel_rate(raw_path: Path, registry: Any, reader_schema: Any) -> float:
    """Messages per second of one MessageDecoder alone on the raw column (best of three: the first
    run also fetches the schemas and compiles the plans); 0 for no messages."""
    from ..pipeline import MessageDecoder

    payloads = pq.read_table(raw_path, columns=["payload"])["payload"]
    if not len(payloads):
        return 0.0
    decoder = MessageDecoder(registry, reader_schema=reader_schema, on_error="null")
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
    decoder = MessageDecoder(registry, protocol=wire.CONFLUENT, reader_schema=CUSTOMER_SCHEMA)
    batch = decoder.decode(values)
    assert decoder.arrow_schema is not None
    columns, converters = contract_columns(decoder.arrow_schema)
    schema = pa.schema([pa.field("customer", pa.string()), *columns])
    result = pa.Table.from_arrays([keys.cast(pa.string()), *convert_batch(batch, columns, converters)], schema=schema)
    pq.write_table(result, write_part(prepare_output(out_path), 0), store_schema=False)
    return len(result)
