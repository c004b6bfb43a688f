"""Arrow as the decoder produces it -> Arrow that Spark's ``mapInArrow`` reads back, and Spark types.

Spark cannot hold every Arrow type the Avro decoder makes (dense unions, dictionary-encoded enums,
``decimal256``, nanosecond timestamps, ``month_day_nano_interval``...). :func:`spark_arrow_type`
gives, for one Arrow type, the nearest faithful type Spark reads and a converter that runs on the
executors per batch; the table in :mod:`pulsar_codec.integrations.spark` lists the mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = [
    "ERROR_TYPE",
    "Converter",
    "reader_struct",
    "spark_arrow_type",
    "spark_schema",
    "spark_type",
    "to_spark_arrow",
]

ERROR_TYPE = pa.struct(
    [
        pa.field("code", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("message", pa.string()),
        pa.field("payload", pa.binary()),
    ]
)
"""Arrow type of the error columns (``struct<code:int, offset:bigint, message:string,
payload:binary>``): null for a good row; for a bad one its error and the bytes that failed (as
Spark's readers keep a malformed record's text in the corrupt-record column)."""

_INTERVAL_STRUCT = pa.struct(
    [pa.field("months", pa.int32()), pa.field("days", pa.int32()), pa.field("nanoseconds", pa.int64())]
)
_INTERVAL_DTYPE = np.dtype([("months", "<i4"), ("days", "<i4"), ("nanoseconds", "<i8")])

Converter = Callable[[Any], Any]
"""Turns one batch's array of a decoder type into the array of the Spark-readable type."""


def _mask(arr: Any) -> Any:
    return arr.is_null() if arr.null_count else None


def _rebase(arr: Any) -> tuple[Any, int, int]:
    """int32/int64 offsets of a list or map array, rebased to start at 0, and the value range."""
    offsets = arr.offsets
    lo = int(offsets[0].as_py())
    hi = int(offsets[len(offsets) - 1].as_py())
    if lo:
        offsets = pa.array(np.asarray(offsets.to_numpy(zero_copy_only=False)) - lo, offsets.type)
    return offsets, lo, hi


def spark_arrow_type(arrow_type: Any) -> tuple[Any, Converter | None]:
    """The Arrow type Spark can take for ``arrow_type``, and how to convert an array to it.

    Parameters
    ----------
    arrow_type : pa.DataType
        A type the Avro decoder produces (design section 5).

    Returns
    -------
    (target, convert) : (pa.DataType, callable or None)
        ``target`` is what the JVM reads back as the Spark type of the mapping table;
        ``convert(array) -> array`` turns a batch's array of ``arrow_type`` into ``target`` (run on
        the executors, per batch). ``convert`` is None when the array can be passed as it is.
    """
    t = arrow_type
    if pa.types.is_dictionary(t):
        value_target, _ = spark_arrow_type(t.value_type)
        return value_target, lambda a: a.dictionary_decode().cast(value_target)
    if pa.types.is_fixed_size_binary(t) or pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
        return pa.binary(), lambda a: a.cast(pa.binary())
    if pa.types.is_string_view(t) or pa.types.is_large_string(t):
        return pa.string(), lambda a: a.cast(pa.string())
    if pa.types.is_decimal(t):
        return _decimal_plan(t)
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        if t == pa.time64("ns"):
            return t, None
        return pa.time64("ns"), lambda a: a.cast(pa.time64("ns"))
    if pa.types.is_timestamp(t):
        stamp = pa.timestamp("us", tz="UTC" if t.tz is not None else None)
        if t == stamp:
            return t, None
        # nanoseconds: Spark keeps microseconds, so the cast truncates (documented)
        return stamp, lambda a: a.cast(stamp, safe=False)
    if pa.types.is_unsigned_integer(t):  # Spark has signed integers only: widen to one that holds every value
        wide = pa.decimal128(20, 0) if pa.types.is_uint64(t) else pa.int64() if pa.types.is_uint32(t) else pa.int32()
        return wide, lambda a: a.cast(wide)
    if pa.types.is_duration(t):  # a day-time interval in Spark, of microseconds
        if t == pa.duration("us"):
            return t, None
        return pa.duration("us"), lambda a: a.cast(pa.duration("us"), safe=False)
    if t.id == pa.month_day_nano_interval().id:
        return _INTERVAL_STRUCT, _interval_to_struct
    if pa.types.is_union(t):
        return _union_plan(t)
    if pa.types.is_struct(t):
        return _struct_plan(t)
    if pa.types.is_map(t):
        return _map_plan(t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return _list_plan(t)
    # null, boolean, integers, floats, string, binary, date32: Spark reads them as they are
    return t, None


def _decimal_plan(t: Any) -> tuple[Any, Converter | None]:
    if t.precision <= 38 and not pa.types.is_decimal256(t):
        return t, None
    if t.precision <= 38:
        narrow = pa.decimal128(t.precision, t.scale)
        return narrow, lambda a: a.cast(narrow)
    # Spark's DecimalType stops at 38 digits: keep the exact decimal text
    return pa.string(), lambda a: a.cast(pa.string())


def _struct_plan(t: Any) -> tuple[Any, Converter | None]:
    plans = [spark_arrow_type(f.type) for f in t]
    target = pa.struct([pa.field(f.name, p[0], nullable=f.nullable) for f, p in zip(t, plans)])
    if all(p[1] is None for p in plans):
        return target, None

    def convert_struct(a: Any) -> Any:
        children = [a.field(i) if fn is None else fn(a.field(i)) for i, (_, fn) in enumerate(plans)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=_mask(a))

    return target, convert_struct


def _map_plan(t: Any) -> tuple[Any, Converter | None]:
    item_target, item_fn = spark_arrow_type(t.item_type)
    target = pa.map_(pa.string(), pa.field("value", item_target, nullable=t.item_field.nullable))
    if item_fn is None and pa.types.is_string(t.key_type):
        return target if target == t else t, None

    def convert_map(a: Any) -> Any:
        offsets, lo, hi = _rebase(a)
        keys = a.keys.slice(lo, hi - lo).cast(pa.string())
        items = a.items.slice(lo, hi - lo)
        if item_fn is not None:
            items = item_fn(items)
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=_mask(a))

    return target, convert_map


def _list_plan(t: Any) -> tuple[Any, Converter | None]:
    item_target, item_fn = spark_arrow_type(t.value_type)
    target = pa.list_(pa.field("element", item_target, nullable=t.value_field.nullable))
    if item_fn is None and pa.types.is_list(t):
        return t, None

    def convert_list(a: Any) -> Any:
        if not pa.types.is_list(a.type):
            a = a.cast(pa.list_(a.type.value_field))
        offsets, lo, hi = _rebase(a)
        values = a.values.slice(lo, hi - lo)
        if item_fn is not None:
            values = item_fn(values)
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=_mask(a))

    return target, convert_list


def _interval_to_struct(a: Any) -> Any:
    data = a.buffers()[1]
    n = len(a)
    if data is None or n == 0:
        values = np.zeros(n, dtype=_INTERVAL_DTYPE)
    else:
        values = np.frombuffer(data, dtype=_INTERVAL_DTYPE, count=a.offset + n)[a.offset :]
    return pa.StructArray.from_arrays(
        [
            pa.array(np.ascontiguousarray(values["months"]), pa.int32()),
            pa.array(np.ascontiguousarray(values["days"]), pa.int32()),
            pa.array(np.ascontiguousarray(values["nanoseconds"]), pa.int64()),
        ],
        fields=list(_INTERVAL_STRUCT),
        mask=_mask(a),
    )


def _union_plan(t: Any) -> tuple[Any, Converter]:
    # (type code, child index, field name, target, convert) of every non-null branch
    branches: list[tuple[int, int, str, Any, Converter | None]] = []
    null_codes = []
    for i, f in enumerate(t):
        code = t.type_codes[i]
        if pa.types.is_null(f.type):
            null_codes.append(code)
            continue
        branch_target, fn = spark_arrow_type(f.type)
        branches.append((code, i, f.name, branch_target, fn))
    target = pa.struct([pa.field(name, bt, nullable=True) for _, _, name, bt, _ in branches])
    dense = t.mode == "dense"

    def convert_union(a: Any) -> Any:
        # read the buffers directly: UnionArray.type_codes / .offsets ignore a slice's offset
        n = len(a)
        buffers = a.buffers()
        codes = np.frombuffer(buffers[1], dtype=np.int8, count=a.offset + n)[a.offset :]
        offsets = np.frombuffer(buffers[2], dtype=np.int32, count=a.offset + n)[a.offset :] if dense else None
        children = []
        for code, index, _, bt, fn in branches:
            chosen = codes == code
            child = a.field(index)
            if not chosen.any() or len(child) == 0:
                children.append(pa.nulls(n, bt))
                continue
            positions = offsets if offsets is not None else np.arange(a.offset, a.offset + n)
            picked = child.take(pa.array(positions.astype(np.int64), pa.int64(), mask=~chosen))
            children.append(picked if fn is None else fn(picked))
        is_null = np.isin(codes, null_codes) if null_codes else None
        mask = None if is_null is None or not is_null.any() else pa.array(is_null)
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)

    return target, convert_union


def to_spark_arrow(array: Any) -> Any:
    """Convert one decoded array to the Arrow type Spark reads (see :func:`spark_arrow_type`)."""
    _, fn = spark_arrow_type(array.type)
    return array if fn is None else fn(array)


def spark_type(arrow_type: Any) -> Any:
    """The Spark ``DataType`` the JVM reads for an Arrow type (local timestamps as TIMESTAMP_NTZ)."""
    from pyspark.sql.pandas.types import from_arrow_type

    return from_arrow_type(arrow_type, prefer_timestamp_ntz=True)


def reader_struct(columns: Any, non_null: Collection[str] = ()) -> tuple[Any, list[Converter | None]]:
    """The Spark-readable struct type of a reader's decoded columns, and one converter per column.

    ``columns`` is the ``pa.Schema`` a decoder gives for its reader schema
    (:attr:`pulsar_codec.pipeline.MessageDecoder.arrow_schema`); the fields named in ``non_null``
    (:attr:`~pulsar_codec.pipeline.MessageDecoder.non_null_columns`) are declared non-nullable,
    as Spark's ``from_avro`` declares them: a bad row is a null struct, never a null field.
    """
    plans = [spark_arrow_type(f.type) for f in columns]
    target = pa.struct([pa.field(f.name, p[0], nullable=f.name not in non_null) for f, p in zip(columns, plans)])
    return target, [p[1] for p in plans]


def spark_schema(reader_schema: Any, *, nullable: bool = False) -> Any:
    """The Spark ``StructType`` of the struct column :func:`~pulsar_codec.spark.decode` produces.

    Parameters
    ----------
    reader_schema : str, dict, list or Schema
        An Avro schema. A record gives one field per record field; any other schema one field
        named ``value``.
    nullable : bool, default False
        Declare every top-level field nullable, not only those whose type admits null: the type
        a ``pandas_udf`` returning the struct must declare (Spark's pandas conversion marks each
        field of a returned struct nullable and refuses a declared non-nullable one). Fields of
        nested records keep the schema's nullability, which such a UDF accepts.

    Returns
    -------
    pyspark.sql.types.StructType
    """
    from ...pipeline import MessageDecoder

    decoder = MessageDecoder({}, reader_schema=reader_schema)
    target, _ = reader_struct(decoder.arrow_schema, () if nullable else decoder.non_null_columns)
    return spark_type(target)
