"""The demo's generated topics: the ``orders`` and ``customers`` schemas and their messages.

``pulsar-codec demo`` needs data shaped like a real topic before any broker or engine is involved:
an ``orders`` subject whose Avro schema evolves over three versions, INLINE KeyValue ``customers``,
a few corrupt messages, written as raw Parquet topic dumps (the columns of ``pulsar-codec dump``).
Kept apart from :mod:`.demo`, which runs the job, and :mod:`.demo_pulsar`, which moves these
messages through a local broker; the tests build their inputs with :func:`generate` as well.
"""

from __future__ import annotations

import decimal
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["CUSTOMER_SCHEMA", "ORDER_SCHEMAS", "Generated", "generate"]

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
