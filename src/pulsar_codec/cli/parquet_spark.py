"""The Spark engine of ``pulsar-codec decode`` and the demo: :func:`pulsar_codec.spark.decode` in
local mode, writing the tables of :mod:`._contract` (the same as the local engine)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .. import wire
from . import _console
from ._contract import dead_letter_schema, schema_ids_of, staged_outputs

__all__ = ["decode_spark", "spark_progress", "spark_session"]

_INDEX = "__pulsar_codec_index"
_TOMBSTONE = "__pulsar_codec_null_message"
# private names: a kept input column may be called "decoded" or "error_text"
_DECODED = "__pulsar_codec_decoded"
_ERROR_TEXT = "__pulsar_codec_error_text"


def _col(name: str) -> Any:
    """The column ``name`` as it is spelled (a dot or a backtick in it is no path)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


LOG4J2_CONFIG = Path(__file__).with_name("log4j2-cli.properties")
"""Spark's JVM log configuration for the CLI: WARN to stderr, without Spark's start-up banner."""


def spark_session(app_name: str) -> Any:
    """The local session of the CLI: Spark's own log at WARN (ERROR with ``--quiet``, INFO with
    ``--verbose``), INT64 timestamps. Unless the user configures Spark's log (``SPARK_CONF_DIR``,
    the driver's Java options), the driver starts with :data:`LOG4J2_CONFIG`, so no log4j banner
    comes before the command's own output."""
    from .. import spark as pcs

    verbosity = _console.verbosity()
    level = "INFO" if verbosity > 0 else "ERROR" if verbosity < 0 else "WARN"
    conf: dict[str, str] = {}
    if not os.environ.get("SPARK_CONF_DIR") and LOG4J2_CONFIG.is_file():
        conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}"
    return pcs.session(app_name=app_name, log_level=level, **conf)


class spark_progress:  # noqa: N801 - used as a context manager, named like one
    """A progress bar over the tasks of the Spark jobs run inside the ``with`` block.

    A background thread polls ``SparkContext.statusTracker()`` for the stages of the jobs in this
    block's job group and shows completed tasks of all of them against their total.
    """

    def __init__(self, session: Any, label: str, poll_seconds: float = 0.25) -> None:
        self._context = session.sparkContext
        self._label = label
        self._poll = poll_seconds
        self._group = f"pulsar-codec-{id(self)}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None
        self._bar_context: Any = None

    def __enter__(self) -> spark_progress:
        self._bar_context = _console.progress(self._label, total=None)
        self._bar = self._bar_context.__enter__()
        self._context.setJobGroup(self._group, self._label)
        self._thread = threading.Thread(target=self._watch, name="pulsar-codec-spark-progress", daemon=True)
        self._thread.start()
        return self

    def _tasks(self) -> tuple[int, int]:
        tracker = self._context.statusTracker()
        done = total = 0
        for job_id in tracker.getJobIdsForGroup(self._group):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job is not None else ():
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    total += stage.numTasks
        return done, total

    def _watch(self) -> None:
        while not self._stop.wait(self._poll):
            try:
                done, total = self._tasks()
            except Exception:  # noqa: BLE001 - the context is stopping: nothing more to show
                return
            self._bar.update(completed=done, total=total or None)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            done, total = self._tasks()
            self._bar.update(completed=done, total=total or None)
        finally:
            self._context.setLocalProperty("spark.jobGroup.id", None)
            self._bar_context.__exit__(*exc)


def _with_index(session: Any, files: list[Path], column: str, kept: Sequence[str] = ()) -> Any:
    """The message column, the kept columns and the input position: the file's offset (files in
    name order, as the local engine reads them) plus Spark's row index inside the file."""
    from pyspark.sql import functions as F

    offsets: dict[str, int] = {}
    start = 0
    for file in files:
        offsets[file.name] = start
        start += pq.read_metadata(file).num_rows
    by_name = len(offsets) == len(files)
    if not by_name:  # a folder tree with repeated file names: match the full paths
        offsets = {}
        start = 0
        for file in files:
            offsets[file.resolve().as_uri()] = start
            start += pq.read_metadata(file).num_rows
    key = F.col("_metadata.file_name") if by_name else F.regexp_replace("_metadata.file_path", "^file:/+", "file:///")
    lookup = F.create_map(*[x for name, first in offsets.items() for x in (F.lit(name), F.lit(first))])
    raw = session.read.parquet(*[str(f) for f in files])
    position = (lookup[key] + F.col("_metadata.row_index")).cast("long").alias(_INDEX)
    return raw.select(*[_col(name) for name in dict.fromkeys([column, *kept])], position)


def _dead_rows(protocol: wire.Protocol, column: str) -> Any:
    """The ``mapInArrow`` function that turns bad rows into dead-letter rows (the schema ids are
    read from the prefixes here, with the same code as the local engine)."""

    def convert(batches: Iterator[Any]) -> Iterator[Any]:
        schema = dead_letter_schema(protocol)
        for batch in batches:
            error = batch.column("decode_error")
            messages = batch.column(column)
            yield pa.RecordBatch.from_arrays(
                [
                    batch.column(_INDEX),
                    messages.cast(pa.binary()),
                    schema_ids_of(messages, protocol),
                    error.field("code"),
                    error.field("offset"),
                    batch.column(_ERROR_TEXT),
                ],
                schema=schema,
            )

    return convert


def decode_spark(
    files: list[Path],
    output_path: str | Path,
    registry: Any,
    column: str,
    protocol: wire.Protocol,
    reader_schema: Any,
    dead_letter: str | Path | None,
    session: Any = None,
    *,
    picked: str | None = None,
    message: str | None = None,
    keep: str | Sequence[str] | None = None,
) -> dict[str, int]:
    """Decode ``files`` with :func:`pulsar_codec.spark.decode` into the contract's tables.

    ``picked``: the format of ``reader_schema`` when :func:`.parquet_io.pick_reader` already chose
    it (it is not chosen again); ``message``, ``keep``: as for :func:`.parquet_io.decode_parquet`.
    Kept columns pass through Spark as it reads them (timestamps written as INT64 microseconds,
    as the local engine's :func:`._contract.kept_plan` writes them).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    from .. import spark as pcs
    from .parquet_io import pick_reader, resolve_keep

    if getattr(protocol, "guid", False):
        raise _console.UsageError(f"the spark engine cannot read {protocol.name}: its schema ids are GUIDs")
    session = session or spark_session("pulsar-codec-decode")
    session.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    # Avro time-millis/-micros decode to Spark's TimeType, which Spark 4.1+ keeps behind this flag:
    # without it caching, aggregating or writing a TIME column fails (UNSUPPORTED_TIME_TYPE)
    session.conf.set("spark.sql.timeType.enabled", "true")
    # the reader is picked on the driver as the local engine picks it (an id the registry does not
    # know cannot be the reader)
    if picked is None:
        reader, fmt = pick_reader(registry, files, column, protocol, reader_schema, message)
    else:
        reader, fmt = reader_schema, picked
    where = files[0] if len(files) == 1 else files[0].parent
    kept = resolve_keep(files, column, keep, registry, protocol, (reader, fmt), where)
    kept_columns = [_col(name) for name in kept]
    # a null message (a tombstone) is counted from the input: the decoded frame keeps the bytes
    # of the rows that failed only, in their errors
    raw = _with_index(session, files, column, kept).withColumn(_TOMBSTONE, _col(column).isNull())
    with spark_progress(session, "decoding (spark)"):
        decoded = pcs.decode(
            raw,
            column,
            registry=registry,
            protocol=protocol,
            reader_schema=reader,
            format=fmt,
            output=_DECODED,
            keep_columns=[*kept, _INDEX, _TOMBSTONE],
        )
        text = F.regexp_replace(
            "decode_error.message",
            r"\(byte (\d+)\)",
            F.concat(F.lit("(message "), F.col(_INDEX).cast("string"), F.lit(", byte $1)")),
        )
        decoded = decoded.withColumn(_ERROR_TEXT, text).cache()
        try:
            # written beside the outputs and put in their place at the end: a failed run leaves them as
            # they were
            with staged_outputs(output_path, dead_letter or None) as (out_folder, dead_folder):
                counts = decoded.agg(
                    F.count(F.lit(1)).alias("rows"),
                    F.count("decode_error").alias("errors"),
                    F.sum(F.col(_TOMBSTONE).cast("long")).alias("nulls"),
                ).collect()[0]
                is_bad = F.col("decode_error").isNotNull()
                if dead_letter:
                    good = decoded.where(~is_bad).select(*kept_columns, f"{_DECODED}.*")
                    good.write.mode("overwrite").parquet(str(out_folder))
                    spark_schema = StructType(
                        [StructField(f.name, _spark_type(f.type), f.nullable) for f in dead_letter_schema(protocol)]
                    )
                    dead = decoded.where(is_bad).select(
                        _INDEX, F.col("decode_error.payload").alias(column), "decode_error", _ERROR_TEXT
                    )
                    dead.mapInArrow(_dead_rows(protocol, column), spark_schema).write.mode("overwrite").parquet(
                        str(dead_folder)
                    )
                else:
                    error = F.when(
                        is_bad,
                        F.struct(
                            F.col("decode_error.code").alias("code"),
                            F.col("decode_error.offset").alias("offset"),
                            F.col(_ERROR_TEXT).alias("message"),
                        ),
                    )
                    decoded.select(*kept_columns, f"{_DECODED}.*", error.alias("decode_error")).write.mode(
                        "overwrite"
                    ).parquet(str(out_folder))
        finally:
            decoded.unpersist()
    rows, errors, nulls = int(counts["rows"]), int(counts["errors"]), int(counts["nulls"] or 0)
    return {"rows": rows, "decoded": rows - errors - nulls, "errors": errors, "nulls": nulls}


def _spark_type(arrow_type: Any) -> Any:
    from ..integrations.spark.types import spark_type

    return spark_type(arrow_type)
