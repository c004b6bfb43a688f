"""A SparkSession with safe defaults for local work."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["session"]


def session(master: str = "local[2]", app_name: str = "pulsar-codec", log_level: str | None = None, **conf: Any) -> Any:
    """A SparkSession with safe defaults for local work.

    Binds the driver to 127.0.0.1, turns the UI off, uses 4 shuffle partitions, writes Parquet
    timestamps as INT64 microseconds (``spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS``,
    not Spark's legacy INT96, so pyarrow and the local engine read the same type), turns on
    Spark's TIME type (``spark.sql.timeType.enabled``, off by default in Spark 4.1+: without it a
    decoded Avro ``time-millis`` / ``time-micros`` column can be collected but not cached,
    aggregated or written) and, for local
    masters, runs the Python workers with this interpreter (``PYSPARK_PYTHON=sys.executable``,
    ``SPARK_LOCAL_IP=127.0.0.1``, unless already set). ``conf`` adds or overrides Spark settings;
    pass dotted names through a dict: ``session(**{"spark.sql.shuffle.partitions": "8"})``.
    ``log_level`` (``"WARN"``, ``"INFO"``, ...) sets Spark's log level once the context runs.

    Returns
    -------
    pyspark.sql.SparkSession
        A new session, or the active one (``getOrCreate``) with these settings applied.
    """
    from pyspark.sql import SparkSession

    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.timeType.enabled": "true",
    }
    settings.update({k: str(v) for k, v in conf.items()})
    builder = SparkSession.builder.master(master).appName(app_name)
    for k, v in settings.items():
        builder = builder.config(k, v)
    found = builder.getOrCreate()
    if log_level is not None:
        found.sparkContext.setLogLevel(log_level)
    return found
