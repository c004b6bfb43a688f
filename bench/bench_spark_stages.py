"""Where the time of ``spark.decode`` goes: a stage breakdown in one run, and the Pulsar source's rate.

Spark stages, each a separate job over the same Parquet input (1M complex-12 Confluent-framed
messages by default, ``bench_spark.input_file``), in one ``local[2]`` session, each forced to run
completely by Spark's ``noop`` sink:

- ``scan``: the Parquet scan alone;
- ``identity``: a ``mapInArrow`` pass returning its batches unchanged (every byte to Python and back);
- ``count``: a ``mapInArrow`` pass that only counts rows in Python (the bytes go, one row per batch
  comes back);
- ``decode only``: the same, decoding each batch with a ``MessageDecoder`` and returning only the
  count;
- ``spark.decode``: :func:`pulsar_codec.spark.decode` end to end (``decoded`` and ``decode_error``
  selected, as a job that writes them does; by default the messages' column does not come back,
  a bad row's bytes are in its error), with ``keep_columns=[]`` (the input has no other column:
  the same work; the recipe's ``pandas_udf`` too returns only its struct), and with
  ``keep_columns=df.columns``, which returns every message's bytes too (the default before);
  and the fields as columns: ``.select("decoded.*")`` after it, against ``flatten=True``;
- ``pandas_udf + fastavro``: the common recipe (``bench_spark.fastavro_udf``).

Then, on a pulsar-lite broker started here (skipped when pulsar-lite or pulsar-client is missing),
the same messages in two topics: ``spark.read.format("pulsar")`` decoding them (and with
``decode=false``), beside ``pulsar-codec dump`` (``dump_to_parquet``, topic by topic) followed by
a decode of the dump, in this process (``MessageDecoder(threads=0)``) and with ``spark.decode``.

Each stage counts with the best of ``--repeat`` timed runs, the stages taking turns round after
round. The load average of the machine is printed before and after: the numbers of one run on a
shared machine are only comparable when it is low.

    python bench/bench_spark_stages.py [--rows 1000000] [--pulsar-rows 200000] [--repeat 3]
    pytest bench/bench_spark_stages.py       # smoke run on a few thousand rows
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_avro import EVENT, SCHEMA_ID, corpus
from bench_spark import fastavro_udf, input_file
from pulsar_codec import spark as pcs
from pulsar_codec._kernels import _backend
from pulsar_codec.pipeline import MessageDecoder

REGISTRY = {SCHEMA_ID: EVENT}
SUBJECT = "events-value"
REGISTRY_FILE = os.path.join(tempfile.gettempdir(), f"pulsar-codec-bench-stages-{os.getpid()}.db")


def registry_file() -> str:
    """An embedded registry file holding EVENT under :data:`SUBJECT` with id :data:`SCHEMA_ID`."""
    import json

    from pulsar_codec.registry import LocalRegistry

    if os.path.exists(REGISTRY_FILE):
        os.unlink(REGISTRY_FILE)
    registry = LocalRegistry(REGISTRY_FILE)
    try:
        assert registry.register(SUBJECT, json.dumps(EVENT)) == SCHEMA_ID
    finally:
        registry.close()
    return REGISTRY_FILE


def load() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` prints them."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f} ({os.cpu_count()} cores)"


def noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def identity_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield from batches


def count_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        yield pa.record_batch({"rows": pa.array([batch.num_rows], pa.int64())})


class DecodeOnly:
    """Decodes each batch's ``value`` column with this executor process's decoder; returns counts."""

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pulsar_codec.integrations.spark.executor import ShippedSchemas, shared_decoder

        schemas = ShippedSchemas(REGISTRY)
        decoder = shared_decoder("bench-decode-only", MessageDecoder(schemas, on_error="null"), schemas)
        with _backend.use("cython" if _backend.compiled_available() else "python"):
            for batch in batches:
                decoded, _ = decoder.decode(batch.column("value"))
                yield pa.record_batch({"rows": pa.array([decoded.num_rows], pa.int64())})


def run_scan(df: Any) -> None:
    noop(df)


def run_identity(df: Any) -> None:
    noop(df.mapInArrow(identity_batches, df.schema))


def run_count(df: Any) -> None:
    noop(df.mapInArrow(count_batches, "rows long"))


def run_decode_only(df: Any) -> None:
    noop(df.mapInArrow(DecodeOnly(), "rows long"))


def run_spark_decode(df: Any) -> None:
    noop(pcs.decode(df, "value", registry=REGISTRY).select("decoded", "decode_error"))


def run_spark_decode_alone(df: Any) -> None:
    noop(pcs.decode(df, "value", registry=REGISTRY, keep_columns=[]))


def run_spark_decode_every_byte(df: Any) -> None:
    noop(pcs.decode(df, "value", registry=REGISTRY, keep_columns=df.columns).select("decoded", "decode_error"))


def run_spark_decode_fields(df: Any) -> None:
    noop(pcs.decode(df, "value", registry=REGISTRY).select("decoded.*", "decode_error"))


def run_spark_decode_flatten(df: Any) -> None:
    noop(pcs.decode(df, "value", registry=REGISTRY, flatten=True))


def run_spark_decode_prepass(df: Any) -> None:
    noop(pcs.decode(df, "value", registry=REGISTRY, prefetch=True).select("decoded", "decode_error"))


def run_spark_decode_subject(df: Any) -> None:
    noop(pcs.decode(df, "value", registry=REGISTRY_FILE, reader_subject=SUBJECT).select("decoded", "decode_error"))


def run_fastavro(df: Any) -> None:
    noop(df.select(fastavro_udf(pcs.spark_schema(EVENT, nullable=True))("value").alias("decoded")))


STAGES: list[tuple[str, Callable[[Any], None]]] = [
    ("scan", run_scan),
    ("identity", run_identity),
    ("count", run_count),
    ("decode only", run_decode_only),
    ("spark.decode", run_spark_decode),
    ("spark.decode, keep_columns=[]", run_spark_decode_alone),
    ("spark.decode, every message's bytes", run_spark_decode_every_byte),
    ("spark.decode, decoded.*", run_spark_decode_fields),
    ("spark.decode, flatten", run_spark_decode_flatten),
    ("pandas_udf + fastavro", run_fastavro),
    ("spark.decode, pre-pass", run_spark_decode_prepass),
    ("spark.decode, registry file", run_spark_decode_subject),
]
LABELS = {
    "scan": "scan alone (Parquet -> noop)",
    "identity": "mapInArrow identity pass",
    "count": "mapInArrow, count rows in Python",
    "decode only": "mapInArrow, decode without returning",
    "spark.decode": "spark.decode end to end",
    "spark.decode, keep_columns=[]": "spark.decode, keep_columns=[] (the messages' bytes not returned)",
    "spark.decode, every message's bytes": "spark.decode, keep_columns=df.columns (every message's bytes returned)",
    "spark.decode, decoded.*": 'spark.decode, then .select("decoded.*", "decode_error")',
    "spark.decode, flatten": "spark.decode(..., flatten=True): the same columns, returned as such",
    "pandas_udf + fastavro": "pandas_udf + fastavro",
    "spark.decode, pre-pass": "spark.decode with the distinct-id pre-pass (prefetch=True, the old default)",
    "spark.decode, registry file": "spark.decode, registry file + reader_subject (ids fetched by the executors)",
}


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


LOADS: dict[str, float] = {}  # the 1-minute load average after each stage: other jobs show up here
ROUNDS: list[dict[str, float]] = []  # every timed run, round by round


def spark_stages(spark: Any, path: str, rows: int, repeat: int = 3) -> dict[str, float]:
    """Seconds per stage: the best of ``repeat`` timed runs each, after a warm-up run of every
    stage on the whole input (the fastavro recipe on a slice). The JVM compiles the Arrow paths
    only after a lot of rows: warmed on a slice, the stages timed first run colder than those timed
    later. The stages take turns, round after round: this shared machine's speed drifts over
    seconds, and timing one stage's runs together would charge the drift to the ratios."""
    registry_file()
    df = spark.read.parquet(path)
    for name, fn in STAGES:
        fn(df.limit(20_000) if name == "pandas_udf + fastavro" else df)
    seconds = dict.fromkeys((name for name, _ in STAGES), float("inf"))
    for _ in range(repeat):
        this_round = {}
        for name, fn in STAGES:
            this_round[name] = timed(lambda fn=fn: fn(df))
            seconds[name] = min(seconds[name], this_round[name])
            LOADS[name] = max(LOADS.get(name, 0.0), os.getloadavg()[0])
        ROUNDS.append(this_round)
    return seconds


# -- the Pulsar source ------------------------------------------------------------------------------

PULSAR_LABELS = {
    "source decode": 'spark.read.format("pulsar"), decoded by the source',
    "source raw": 'spark.read.format("pulsar"), decode=false',
    "dump": "pulsar-codec dump (dump_to_parquet), topic by topic",
    "dump + local decode": "dump + MessageDecoder(threads=0) in this process",
    "dump + spark.decode": "dump + spark.decode of the dump files",
}


def pulsar_rates(spark: Any, rows: int, workdir: str) -> dict[str, float] | None:
    """Seconds of each way from a pulsar-lite topic to decoded rows; None without a broker."""
    from pulsar_codec.cli._broker import BrokerUnavailable, produce, start_lite
    from pulsar_codec.pulsar import dump_to_parquet
    from pulsar_codec.registry import LocalRegistry

    try:
        broker = start_lite(os.path.join(workdir, "broker"))
    except BrokerUnavailable as exc:
        print(f"pulsar: skipped ({exc})")
        return None
    try:
        messages = corpus("complex-12", rows).to_pylist()
        half = rows // 2
        topics = [f"persistent://public/default/bench-{os.getpid()}-{k}" for k in ("a", "b")]
        registry_path = os.path.join(workdir, "registry.db")
        if os.path.exists(registry_path):
            os.unlink(registry_path)
        registry = LocalRegistry(registry_path)
        import json

        for topic in topics:
            assert registry.register(f"{topic.rsplit('/', 1)[-1]}-value", json.dumps(EVENT)) == SCHEMA_ID
        registry.close()
        t = timed(
            lambda: [
                produce(broker.url, topic, part) for topic, part in zip(topics, (messages[:half], messages[half:]))
            ]
        )
        print(f"pulsar: produced {rows:,} messages to 2 topics in {t:.1f} s (not part of the rates)")

        def source(decode: bool) -> Any:
            reader = (
                spark.read.format("pulsar")
                .option("service_url", broker.url)
                .option("topics", ",".join(topics))
                .option("decode", str(decode).lower())
                .option("timeout_ms", "10000")
            )
            if decode:
                reader = reader.option("registry", registry_path).option(
                    "subject", topics[0].rsplit("/", 1)[-1] + "-value"
                )
            return reader.load()

        pcs.register(spark)
        # warm, and a check: every message once and decoded (the source drops messages a broker
        # delivers again, so a count above the messages sent is a bug, not noise)
        from pyspark.sql import functions as F

        found = source(True).where("decode_error IS NULL")
        counts = found.agg(F.count("*").alias("rows"), F.countDistinct("topic", "message_id").alias("ids")).first()
        if counts["ids"] != rows or counts["rows"] != rows:
            raise AssertionError(
                f"the source read {counts['rows']:,} rows, {counts['ids']:,} ids, of {rows:,} messages"
            )
        out: dict[str, float] = {}
        out["source decode"] = timed(lambda: noop(source(True)))
        out["source raw"] = timed(lambda: noop(source(False)))
        dumps = [os.path.join(workdir, f"dump-{k}.parquet") for k in range(len(topics))]
        out["dump"] = timed(lambda: [dump_to_parquet(broker.url, topic, p) for topic, p in zip(topics, dumps)])
        decoder = MessageDecoder(REGISTRY, threads=0, on_error="null")

        def local_decode() -> None:
            for p in dumps:
                decoded, errors = decoder.decode(pq.read_table(p, columns=["payload"])["payload"])
                assert len(errors) == 0

        out["dump + local decode"] = out["dump"] + timed(local_decode)
        raw = spark.read.parquet(*dumps)
        out["dump + spark.decode"] = out["dump"] + timed(
            lambda: noop(pcs.decode(raw, "payload", registry=REGISTRY).select("decoded", "decode_error"))
        )
        return out
    finally:
        broker.stop()


def print_stages(seconds: dict[str, float], rows: int) -> tuple[float, float]:
    """The stage table and the two ratios (spark.decode / identity, fastavro / spark.decode)."""
    print()
    print(f"| stage ({rows:,} complex-12 messages, local[2]) | seconds (best) | k rec/s | highest load after |")
    print("|---|---:|---:|---:|")
    for name, _ in STAGES:
        s = seconds[name]
        print(f"| {LABELS[name]} | {s:.2f} | {rows / s / 1e3:,.0f} | {LOADS.get(name, 0):.1f} |")
    vs_identity = seconds["spark.decode"] / seconds["identity"]
    vs_fastavro = seconds["pandas_udf + fastavro"] / seconds["spark.decode"]
    print()
    print(f"spark.decode / identity pass        : {vs_identity:.2f}x  (target <= 1.6x)")
    if ROUNDS:  # the two stages timed seconds apart in each round: the drift of a shared machine cancels
        ratios = sorted(r["spark.decode"] / r["identity"] for r in ROUNDS)
        print(
            f"  the same, round by round             : median {statistics.median(ratios):.2f}x "
            f"({ratios[0]:.2f}x-{ratios[-1]:.2f}x over {len(ratios)} rounds)"
        )
    print(f"pandas_udf + fastavro / spark.decode: {vs_fastavro:.1f}x  (target >= 10x)")
    alone = seconds["spark.decode, keep_columns=[]"]
    print(
        f"with keep_columns=[] (what the recipe returns: the struct alone): {alone / seconds['identity']:.2f}x the"
        f" identity pass, fastavro / it {seconds['pandas_udf + fastavro'] / alone:.1f}x"
    )
    print(f"load average: {load()}", flush=True)
    return vs_identity, vs_fastavro


def print_pulsar(seconds: dict[str, float], rows: int) -> None:
    print()
    print(f"| pulsar-lite, {rows:,} complex-12 messages in 2 topics | seconds | k rec/s |")
    print("|---|---:|---:|")
    for name, s in seconds.items():
        print(f"| {PULSAR_LABELS[name]} | {s:.2f} | {rows / s / 1e3:,.0f} |")
    print(f"load average: {load()}", flush=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--pulsar-rows", type=int, default=200_000, help="messages through pulsar-lite (0: skip)")
    parser.add_argument("--partitions-mb", type=int, default=16, help="spark.sql.files.maxPartitionBytes in MB")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each stage (the best counts)")
    args = parser.parse_args(argv)

    print(f"load average before: {load()}")
    path = input_file(args.rows)
    spark = pcs.session(
        "local[2]",
        "pulsar-codec-bench-stages",
        **{"spark.sql.files.maxPartitionBytes": f"{args.partitions_mb}m", "spark.driver.memory": "2g"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    # the stages' functions are this module's (pickled by name outside script mode): ship it and
    # the modules it imports to the Python workers, whatever PYTHONPATH their JVM started with
    here = os.path.dirname(os.path.abspath(__file__))
    for module in ("bench_avro.py", "bench_spark.py", "bench_spark_stages.py"):
        spark.sparkContext.addPyFile(os.path.join(here, module))
    pulsar = None
    try:
        print(
            f"input: {path} ({os.path.getsize(path) / 1e6:.1f} MB, {args.rows:,} rows, "
            f"{spark.read.parquet(path).rdd.getNumPartitions()} partitions), backend: {_backend.active().name}"
        )
        seconds = spark_stages(spark, path, args.rows, args.repeat)
        vs_identity, vs_fastavro = print_stages(seconds, args.rows)
        if args.pulsar_rows:
            with tempfile.TemporaryDirectory(prefix="pulsar-codec-bench-") as workdir:
                pulsar = pulsar_rates(spark, args.pulsar_rows, workdir)
            if pulsar:
                print_pulsar(pulsar, args.pulsar_rows)
    finally:
        spark.stop()
        if os.path.exists(REGISTRY_FILE):
            os.unlink(REGISTRY_FILE)
    return {"stages": seconds, "vs_identity": vs_identity, "vs_fastavro": vs_fastavro, "pulsar": pulsar}


def test_spark_stages_smoke(tmp_path: Any, monkeypatch: Any) -> None:
    """A few thousand rows through every stage (the timing itself is only meaningful in script mode)."""
    import pytest

    pytest.importorskip("pyspark")
    import bench_spark

    monkeypatch.setattr(bench_spark, "DATA_DIR", str(tmp_path))
    result = main(["--rows", "3000", "--pulsar-rows", "2000", "--repeat", "1"])
    assert all(s > 0 for s in result["stages"].values())


if __name__ == "__main__":
    main()
