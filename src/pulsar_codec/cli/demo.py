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

The data of step 2 is made in :mod:`.demo_data`, the broker steps 3 and 4 are in :mod:`.demo_pulsar`;
this module runs the steps in order, decodes (step 4 without a broker, step 5) and reports.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import _console
from ._console import best_of
from .demo_data import CUSTOMER_SCHEMA, ORDER_SCHEMAS, generate
from .demo_pulsar import (
    CUSTOMERS_TOPIC,
    ORDERS_TOPIC,
    customers_from_pulsar,
    dump_topic,
    start_broker,
    stream_orders,
)

__all__ = ["DemoResult", "run"]


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
                broker, no_broker = start_broker(out, gen, bar)
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
                stats, batches = stream_orders(session, broker.url, registry_path, out, decoded_path, dead_path, rows)
                streamed = float(stats["stream_end"]) - laps.last
                orders_seconds = laps.lap("orders")
                parts = [
                    ("streamed from the broker and decoded into the sink", streamed),
                    ("then the decoded and dead-letter tables written from it", orders_seconds - streamed),
                ]
            else:
                if broker is not None:
                    bar.update(label="dumping orders (pulsar-codec dump)")
                    dump_topic(broker, ORDERS_TOPIC, gen.orders_path)
                    parts.append(("dumped from the broker with pulsar-codec dump", laps.lap("orders")))
                bar.update(label=f"decoding orders ({engine} engine)")
                stats = _decode_orders(gen.orders_path, registry, decoded_path, dead_path, engine, session)
                what = "read from the dump, decoded and written" + (" by Spark" if session is not None else "")
                parts.append((("then " if parts else "") + what, laps.lap("orders")))
                orders_seconds = laps.spans["orders"]
            bar.advance()
            bar.update(label="decoding KeyValue customers")
            if session is not None and broker is not None:
                customers = customers_from_pulsar(session, broker.url, registry_path, customers_path)
            elif session is not None:
                customers = _decode_keyvalue_spark(session, gen.customers_path, registry_path, customers_path)
            else:
                if broker is not None:
                    dump_topic(broker, CUSTOMERS_TOPIC, gen.customers_path)
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
