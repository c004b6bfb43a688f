"""The demo's broker steps: its topics on a local Pulsar broker (pulsar-lite) and read back.

:func:`start_broker` produces the generated topics to pulsar-lite; the local engine reads them with
:func:`dump_topic` (``pulsar-codec dump``), Spark with :func:`stream_orders`
(``readStream.format("pulsar")``) and :func:`customers_from_pulsar` (``read.format("pulsar")``).
Kept apart from :mod:`.demo`, which runs the job and falls back to the generated dumps where no
broker can start, so that everything that needs pulsar-client or the Spark source is in one place.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from . import _console
from .demo_data import CUSTOMER_SCHEMA, Generated

__all__ = ["CUSTOMERS_TOPIC", "ORDERS_TOPIC", "customers_from_pulsar", "dump_topic", "start_broker", "stream_orders"]

ORDERS_TOPIC = "persistent://public/default/orders"
CUSTOMERS_TOPIC = "persistent://public/default/customers"
INDEX_PROPERTY = "index"
"""The message property that carries an order's position in the generated topic (the dead-letter
``index`` of a message read from the broker)."""
READ_TIMEOUT_MS = 10_000
"""The source's wait for a message on the local broker before its reader is reopened."""
MICRO_BATCHES = 4
"""About how many micro-batches the streaming read of ``orders`` takes (``max_records_per_trigger``)."""


def start_broker(out: Path, gen: Generated, bar: _console.Progress) -> tuple[Any, str]:
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


def dump_topic(broker: Any, topic: str, path: Path) -> None:
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


def stream_orders(
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


def customers_from_pulsar(session: Any, url: str, registry_path: Path, out_path: Path) -> int:
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
