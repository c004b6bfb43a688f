"""Pulsar INLINE KeyValue payloads in Spark: split them into key and value, or split and decode."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ... import keyvalue, wire
from ..._kernels import _backend
from .batches import error_array, replace_columns, row_error
from .decode import decode
from .executor import use_backend
from .types import ERROR_TYPE, spark_type

__all__ = ["decode_keyvalue", "split_keyvalue"]


@dataclass(frozen=True)
class SplitJob:
    """The ``mapInArrow`` function of :func:`split_keyvalue` (pickled to the executors)."""

    column: str
    key_column: str
    value_column: str
    convention: str
    error_column: str
    backend: str

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        """Split every batch's payload column; other columns pass through."""
        with use_backend(self.backend):
            for batch in batches:
                yield self.split_batch(batch)

    def split_batch(self, batch: Any) -> Any:
        """One batch: good rows in one kernel call, bad rows stepped around (``split_inline_rows``)."""
        payloads = batch.column(self.column)
        n = len(payloads)
        keys, values, bad = keyvalue.split_inline_rows(payloads, convention=self.convention)
        errors = [row_error(exc) for exc in bad]
        return replace_columns(
            batch,
            {
                self.key_column: keys.cast(pa.binary()),
                self.value_column: values.cast(pa.binary()),
                self.error_column: error_array(n, errors, payloads),
            },
        )


def split_keyvalue(
    df: Any,
    column: str = "value",
    *,
    key_column: str = "key",
    value_column: str = "value",
    convention: str = "java",
    error_column: str = "keyvalue_error",
) -> Any:
    """Split Pulsar INLINE KeyValue payloads into a key and a value binary column.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    column : str
        Binary column of INLINE payloads (``len(key) || key || len(value) || value``).
    key_column, value_column : str
        Output column names; existing columns with these names (or ``error_column``) are replaced,
        so the defaults replace the payload column ``value`` with the value part.
    convention : {"java", "cpp"}
        How a length of -1 reads (see :mod:`pulsar_codec.keyvalue`).
    error_column : str
        ``struct<code, offset, message, payload>`` for malformed payloads (whose key and value are
        null; ``payload`` holds the payload's bytes); null for good rows.

    Returns
    -------
    pyspark.sql.DataFrame

    Raises
    ------
    ValueError
        ``convention`` is not ``"java"`` or ``"cpp"``, or ``column`` is not a binary (or string)
        column of ``df``: refused here, on the driver, not when an action runs the tasks.
    """
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType

    if convention not in (keyvalue.JAVA, keyvalue.CPP):
        raise ValueError(f"convention must be {keyvalue.JAVA!r} or {keyvalue.CPP!r}, got {convention!r}")
    if column not in df.columns:
        raise ValueError(f"no column {column!r} of INLINE KeyValue payloads: the DataFrame has {df.columns}")
    payload_type = df.schema[column].dataType
    if not isinstance(payload_type, (BinaryType, StringType)):
        raise ValueError(
            f"column {column!r} holds {payload_type.simpleString()}; INLINE KeyValue payloads are a binary column"
        )
    drop = (key_column, value_column, error_column)
    keep = [f for f in df.schema.fields if f.name not in drop]
    schema = StructType(
        keep
        + [
            StructField(key_column, BinaryType(), True),
            StructField(value_column, BinaryType(), True),
            StructField(error_column, spark_type(ERROR_TYPE), True),
        ]
    )
    job = SplitJob(column, key_column, value_column, convention, error_column, _backend.active().name)
    return df.mapInArrow(job, schema)


def decode_keyvalue(
    df: Any,
    column: str = "value",
    *,
    registry: Any,
    key_protocol: Any = wire.CONFLUENT,
    value_protocol: Any = wire.CONFLUENT,
    key_reader_schema: Any = None,
    value_reader_schema: Any = None,
    key_output: str = "key",
    value_output: str = "value",
    convention: str = "java",
    prefetch: bool | None = None,
) -> Any:
    """Split INLINE KeyValue payloads, then decode the key and the value as framed Avro.

    Adds ``key_output`` and ``value_output`` structs, ``keyvalue_error`` (malformed KeyValue
    payload), ``{key_output}_error`` and ``{value_output}_error`` (see
    :func:`~pulsar_codec.spark.decode`); each error keeps the bytes that failed in its ``payload``
    (the whole payload for ``keyvalue_error``, the key or the value part for the others).
    ``prefetch``: as for :func:`~pulsar_codec.spark.decode`.

    Returns
    -------
    pyspark.sql.DataFrame
    """
    key_raw, value_raw = f"{key_output}_bytes", f"{value_output}_bytes"
    split = split_keyvalue(df, column, key_column=key_raw, value_column=value_raw, convention=convention)
    out = decode(
        split,
        key_raw,
        registry=registry,
        protocol=key_protocol,
        reader_schema=key_reader_schema,
        output=key_output,
        error_column=f"{key_output}_error",
        prefetch=prefetch,
    )
    return decode(
        out,
        value_raw,
        registry=registry,
        protocol=value_protocol,
        reader_schema=value_reader_schema,
        output=value_output,
        error_column=f"{value_output}_error",
        prefetch=prefetch,
    )
