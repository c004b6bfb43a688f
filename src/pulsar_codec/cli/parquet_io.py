"""Parquet in, Parquet out: the engine behind ``pulsar-codec decode``.

The local engine streams the input in record batches through one
:class:`~pulsar_codec.pipeline.MessageDecoder` with ``on_error="null"``; the Spark engine runs :func:`pulsar_codec.spark.decode` in local mode. Both
write the decoded fields plus a ``decode_error`` struct (code, offset, message) per row, and can
write the bad rows with their raw bytes to a dead-letter file.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import wire
from ..errors import SchemaError
from ..pipeline import MessageDecoder

__all__ = ["ERROR_TYPE", "decode_parquet", "newest_schema_id"]

ERROR_TYPE = pa.struct([("code", pa.int32()), ("offset", pa.int64()), ("message", pa.string())])
_BATCH = 65_536


def newest_schema_id(path: str | Path, column: str, protocol: wire.Protocol) -> int | None:
    """The highest schema id in the column (a cheap pass over the prefixes only)."""
    newest = None
    for batch in pq.ParquetFile(path).iter_batches(batch_size=_BATCH, columns=[column]):
        ids = _ids_of(batch.column(0), protocol)
        if len(ids):
            top = int(ids.max())
            newest = top if newest is None else max(newest, top)
    return newest


def _ids_of(messages: pa.Array, protocol: wire.Protocol) -> np.ndarray:
    """Schema ids of the well-framed messages (bad ones are reported later, by the decode pass)."""
    try:
        ids: np.ndarray = wire.unframe(messages, protocol).schema_ids.drop_null().to_numpy()
        return ids
    except Exception:  # noqa: BLE001 - a bad prefix: fall back to one message at a time
        found = []
        for message in messages.to_pylist():
            if message is None:
                continue
            try:
                found.append(protocol.unpack(message)[0])
            except Exception:  # noqa: BLE001
                continue
        return np.array(found, dtype=np.int64)


def decode_parquet(
    input_path: str | Path,
    output_path: str | Path,
    registry: Any,
    *,
    column: str = "payload",
    protocol: wire.Protocol | str = wire.CONFLUENT,
    engine: str = "local",
    reader_schema: Any = None,
    dead_letter: str | Path | None = None,
) -> dict[str, Any]:
    """Decode a Parquet column of framed Avro messages into a Parquet file; returns statistics."""
    protocol = wire.protocol_by_name(protocol)
    input_path = Path(input_path)
    if not input_path.exists():
        raise FileNotFoundError(f"input {input_path} does not exist")
    names = pq.ParquetFile(input_path).schema_arrow.names
    if column not in names:
        raise SchemaError(f"column {column!r} is not in {input_path} (columns: {', '.join(names)})")
    start = time.perf_counter()
    if engine == "spark":
        result = _decode_spark(input_path, output_path, registry, column, protocol, reader_schema, dead_letter)
    elif engine == "local":
        result = _decode_local(input_path, output_path, registry, column, protocol, reader_schema, dead_letter)
    else:
        raise ValueError(f"unknown engine {engine!r}, expected 'local' or 'spark'")
    stats: dict[str, Any] = dict(result)
    stats["seconds"] = time.perf_counter() - start
    stats["engine"] = engine
    return stats


def _decode_local(
    input_path: Path,
    output_path: str | Path,
    registry: Any,
    column: str,
    protocol: wire.Protocol,
    reader_schema: Any,
    dead_letter: str | Path | None,
) -> dict[str, Any]:
    decoder = MessageDecoder(registry, protocol=protocol, reader_schema=reader_schema, on_error="null")
    if reader_schema is None:
        # one reader for the whole file (every batch must have the same columns): the newest writer
        newest = newest_schema_id(input_path, column, protocol)
        if newest is None:
            raise SchemaError(f"no well-framed message in column {column!r}: cannot pick a reader schema")
        decoder = MessageDecoder(
            registry, protocol=protocol, reader_schema=decoder.writer_schema(newest), on_error="null"
        )
    assert decoder.arrow_schema is not None  # the reader is known now
    out_schema = decoder.arrow_schema.append(pa.field("decode_error", ERROR_TYPE))
    rows = errors = 0
    with contextlib.ExitStack() as stack:
        writer = stack.enter_context(pq.ParquetWriter(output_path, out_schema))
        dead_writer = None
        for raw in pq.ParquetFile(input_path).iter_batches(batch_size=_BATCH):
            messages = raw.column(raw.schema.get_field_index(column))
            batch, bad = decoder.decode(messages)
            error_column = _error_column(len(batch), bad, rows)
            writer.write_batch(pa.RecordBatch.from_arrays([*batch.columns, error_column], schema=out_schema))
            rows += len(batch)
            errors += len(bad)
            if dead_letter and len(bad):
                dead = (
                    pa.Table.from_batches([raw])
                    .take(bad["index"])
                    .append_column("decode_error", error_column.take(bad["index"]))
                )
                if dead_writer is None:
                    dead_writer = stack.enter_context(pq.ParquetWriter(dead_letter, dead.schema))
                dead_writer.write_table(dead)
    if dead_letter and dead_writer is None:
        empty = pq.read_schema(input_path).append(pa.field("decode_error", ERROR_TYPE))
        pq.write_table(empty.empty_table(), dead_letter)
    return {"rows": rows, "decoded": rows - errors, "errors": errors}


def _error_column(n: int, bad: pa.Table, first_row: int = 0) -> pa.Array:
    """One error struct per row: null for good rows, (code, offset, message) for bad ones.

    The decoder numbers messages within its batch; the messages here name the row in the file.
    """
    if not len(bad):
        return pa.nulls(n, ERROR_TYPE)
    index = bad["index"].to_numpy()
    position = np.full(n, -1, dtype=np.int64)
    position[index] = np.arange(len(index))
    messages = [_renumber(text, int(i) + first_row) for text, i in zip(bad["message"].to_pylist(), index)]
    structs = pa.StructArray.from_arrays(
        [
            bad["code"].combine_chunks().cast(pa.int32()),
            bad["offset"].combine_chunks(),
            pa.array(messages, pa.string()),
        ],
        fields=list(ERROR_TYPE),
    )
    taken = structs.take(pa.array(np.where(position >= 0, position, 0)))
    mask = pa.array(position < 0)
    return pa.StructArray.from_arrays([taken.field(i) for i in range(3)], fields=list(ERROR_TYPE), mask=mask)


def _renumber(text: str, row: int) -> str:
    head, sep, tail = text.rpartition("(message ")
    if not sep:
        return text
    return f"{head}(message {row}, {tail.split(', ', 1)[1]}" if ", " in tail else text


def _decode_spark(
    input_path: Path,
    output_path: str | Path,
    registry: Any,
    column: str,
    protocol: wire.Protocol,
    reader_schema: Any,
    dead_letter: str | Path | None,
) -> dict[str, int]:
    from pyspark.sql import functions as F

    from .. import spark as pcs

    session = pcs.session(app_name="pulsar-codec-decode")
    raw = session.read.parquet(str(input_path))
    decoded = pcs.decode(raw, column, registry=registry, protocol=protocol, reader_schema=reader_schema).cache()
    try:
        decoded.select("decoded.*", "decode_error").write.mode("overwrite").parquet(str(output_path))
        errors = decoded.where(F.col("decode_error").isNotNull())
        if dead_letter:
            errors.drop("decoded").write.mode("overwrite").parquet(str(dead_letter))
        rows, bad = decoded.count(), errors.count()
    finally:
        decoded.unpersist()
    return {"rows": rows, "decoded": rows - bad, "errors": bad}
