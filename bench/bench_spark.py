"""Spark end to end: decode complex-12 Confluent-framed messages in a local Spark job.

Two jobs over the same Parquet input, in the same session, in one run:

- ``pulsar_codec``: :func:`pulsar_codec.spark.decode` (a distinct-id pre-pass, then one
  ``mapInArrow`` stage running the compiled kernels over whole Arrow batches);
- the common recipe: a ``pandas_udf`` that strips the 5-byte prefix and calls fastavro's
  ``schemaless_reader`` per record, returning the same struct (same Spark schema).

Both are forced to evaluate completely by writing to Spark's ``noop`` sink. The input is generated
with a fixed seed by fastavro ``schemaless_writer`` (``bench_avro.corpus``, the complex-12 schema of
``spec/peers-and-targets.md``) and written to a Parquet file first (cached by row count).

    python bench/bench_spark.py [--rows 1000000] [--repeat 1] [--partitions-mb 16]
    pytest bench/bench_spark.py          # smoke run on a few thousand rows
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_avro import EVENT, SCHEMA_ID, corpus
from pulsar_codec import spark as pcs
from pulsar_codec._kernels import _backend

DATA_DIR = os.environ.get("PULSAR_CODEC_BENCH_DIR", os.path.join(tempfile.gettempdir(), "pulsar_codec_bench"))


def input_file(rows: int) -> str:
    """A Parquet file with one binary column ``value`` of ``rows`` framed complex-12 messages."""
    path = os.path.join(DATA_DIR, f"complex12-{rows}.parquet")
    if not os.path.exists(path):
        os.makedirs(DATA_DIR, exist_ok=True)
        messages = corpus("complex-12", rows)
        tmp = path + f".{os.getpid()}.tmp"
        pq.write_table(pa.table({"value": messages}), tmp, row_group_size=65536, compression="snappy")
        os.replace(tmp, path)
    return path


def fastavro_udf(schema):
    """The row-at-a-time recipe as a pandas_udf returning the decoded struct."""
    import fastavro
    from pyspark.sql.functions import pandas_udf

    parsed = fastavro.parse_schema(EVENT)
    names = [f["name"] for f in EVENT["fields"]]

    @pandas_udf(schema)
    def decode_fastavro(values: pd.Series) -> pd.DataFrame:
        reader = fastavro.schemaless_reader
        rows = [reader(io.BytesIO(v[5:]), parsed, None) for v in values]
        return pd.DataFrame(rows, columns=names)

    return decode_fastavro


def run_pulsar_codec(df) -> None:
    out = pcs.decode(df, "value", registry={SCHEMA_ID: EVENT})
    out.select("decoded", "decode_error").write.format("noop").mode("overwrite").save()


def run_fastavro(df) -> None:
    udf = fastavro_udf(pcs.spark_schema(EVENT, nullable=True))
    df.select(udf("value").alias("decoded")).write.format("noop").mode("overwrite").save()


def check_same(spark, path: str, rows: int = 200) -> None:
    """Both jobs give the same rows (timestamps compared as epoch microseconds)."""
    from pyspark.sql import functions as F

    df = spark.read.parquet(path).limit(rows)
    ours = pcs.decode(df, "value", registry={SCHEMA_ID: EVENT}).select("decoded")
    theirs = df.select(fastavro_udf(pcs.spark_schema(EVENT, nullable=True))("value").alias("decoded"))

    def rows_of(frame):
        frame = frame.select(F.col("decoded.*")).withColumn("ts", F.unix_micros("ts"))
        return [r.asDict(recursive=True) for r in frame.collect()]

    a, b = rows_of(ours), rows_of(theirs)
    assert a == b, "pulsar_codec and fastavro disagree"


def timed(fn, df, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(df)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1, help="runs per job; the best is reported")
    parser.add_argument("--partitions-mb", type=int, default=16, help="spark.sql.files.maxPartitionBytes in MB")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    path = input_file(args.rows)
    print(
        f"input: {path} ({os.path.getsize(path) / 1e6:.1f} MB, {args.rows} rows; ready in {time.perf_counter() - t0:.1f} s)"
    )
    spark = pcs.session(
        "local[2]",
        "pulsar-codec-bench",
        **{"spark.sql.files.maxPartitionBytes": f"{args.partitions_mb}m", "spark.driver.memory": "2g"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        check_same(spark, path)
        df = spark.read.parquet(path)
        print(f"partitions: {df.rdd.getNumPartitions()}, backend: {_backend.active().name}")
        # warm both paths (JVM JIT, Python workers, imports) on a slice
        warm = df.limit(20_000)
        run_pulsar_codec(warm)
        run_fastavro(warm)
        ours = timed(run_pulsar_codec, df, args.repeat)
        theirs = timed(run_fastavro, df, args.repeat)
    finally:
        spark.stop()
    ratio = theirs / ours
    print(f"pulsar_codec mapInArrow : {ours:8.2f} s  {args.rows / ours / 1e3:9.0f}k rec/s")
    print(f"pandas_udf + fastavro   : {theirs:8.2f} s  {args.rows / theirs / 1e3:9.0f}k rec/s")
    print(f"ratio                   : {ratio:8.1f}x   (target >= 5x)")
    return {"ours": ours, "theirs": theirs, "ratio": ratio}


def test_spark_bench_smoke(tmp_path, monkeypatch):
    """A few thousand rows through both jobs (the timing itself is only meaningful in script mode)."""
    import pytest

    pytest.importorskip("pyspark")
    monkeypatch.setattr(sys.modules[__name__], "DATA_DIR", str(tmp_path))
    result = main(["--rows", "3000"])
    assert result["ours"] > 0 and result["theirs"] > 0


if __name__ == "__main__":
    main()
