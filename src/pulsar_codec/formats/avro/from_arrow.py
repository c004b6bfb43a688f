"""Avro writer schemas derived from Arrow schemas (the default of ``pulsar_codec.encode``)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ...errors import SchemaError
from .schema import MAX_DEPTH, Schema, parse

__all__ = ["schema_for", "schema_from_arrow"]


def _avro_of(t: pa.DataType, name: str, nullable: bool, names: set[str], depth: int) -> Any:
    base = _avro_type(t, name, names, depth)
    # an all-null column (Arrow's null type) is Avro "null" itself: ["null", "null"] is no union
    if not nullable or pa.types.is_null(t):
        return base
    if isinstance(base, list):  # an Arrow union: null joins its branches (a union holds no union)
        return base if "null" in base else ["null", *base]
    return ["null", base]


def _avro_field(f: pa.Field, names: set[str], depth: int) -> dict[str, Any]:
    """A record field for an Arrow field; a nullable one defaults to null, so that a version adding
    it stays readable by (and can read) the versions without it."""
    avro = _avro_of(f.type, f.name, f.nullable, names, depth)
    field: dict[str, Any] = {"name": f.name, "type": avro}
    if f.nullable or pa.types.is_null(f.type):
        field["default"] = None
    return field


def _avro_type(t: pa.DataType, name: str, names: set[str], depth: int = 0) -> Any:  # noqa: C901
    if depth > MAX_DEPTH:  # deeper Avro would be refused by parse(); stop before Python's stack does
        raise SchemaError(f"Arrow type nested too deeply: more than {MAX_DEPTH} levels")
    if pa.types.is_boolean(t):
        return "boolean"
    if (
        pa.types.is_int8(t)
        or pa.types.is_int16(t)
        or pa.types.is_int32(t)
        or pa.types.is_uint8(t)
        or pa.types.is_uint16(t)
    ):
        return "int"
    if pa.types.is_integer(t):
        return "long"
    if pa.types.is_float32(t) or pa.types.is_float16(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "bytes"
    if pa.types.is_fixed_size_binary(t):
        return {"type": "fixed", "name": _unique(name, names), "size": t.byte_width}
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(t):
        return {"type": "long", "logicalType": "time-micros"}
    if pa.types.is_timestamp(t):
        unit = {"s": "millis", "ms": "millis", "us": "micros", "ns": "nanos"}[t.unit]
        return {"type": "long", "logicalType": ("timestamp-" if t.tz else "local-timestamp-") + unit}
    if pa.types.is_decimal(t):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    if pa.types.is_interval(t):
        return {"type": "fixed", "name": _unique(name, names), "size": 12, "logicalType": "duration"}
    if pa.types.is_dictionary(t):
        return _avro_type(t.value_type, name, names, depth)
    if pa.types.is_map(t):
        return {
            "type": "map",
            "values": _avro_of(t.item_type, name + "_value", t.item_field.nullable, names, depth + 1),
        }
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return {
            "type": "array",
            "items": _avro_of(t.value_type, name + "_item", t.value_field.nullable, names, depth + 1),
        }
    if pa.types.is_struct(t):
        return {
            "type": "record",
            "name": _unique(name, names),
            "fields": [_avro_field(f, names, depth + 1) for f in t],
        }
    if pa.types.is_union(t):
        return [_avro_type(f.type, f.name, names, depth + 1) for f in t]
    if pa.types.is_null(t):
        return "null"
    raise SchemaError(f"Arrow type {t} has no Avro equivalent")


def _unique(name: str, names: set[str]) -> str:
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "T"
    if base[0].isdigit():
        base = "_" + base
    out, i = base, 1
    while out in names:
        i += 1
        out = f"{base}{i}"
    names.add(out)
    return out


def schema_from_arrow(schema: pa.Schema, name: str = "Record", nulls: dict[str, bool] | None = None) -> Schema:
    """An Avro record schema for an Arrow schema.

    A field is ``["null", T]`` with a null default when its Arrow field is nullable (pyarrow makes
    every field nullable unless ``pa.field(..., nullable=False)`` says otherwise), so the schema
    depends on the Arrow schema alone, never on whether a batch happens to hold nulls: the batches
    of one stream derive one schema. ``nulls`` (optional) narrows the top-level fields to those it
    marks True. A dotted ``name`` is a full name: the part before the last dot becomes the namespace.
    """
    names: set[str] = set()
    namespace, _, local = name.rpartition(".")
    top = _unique(local, names)
    fields = []
    for f in schema:
        if nulls is not None and f.nullable and not nulls.get(f.name, False):
            f = f.with_nullable(False)
        fields.append(_avro_field(f, names, 1))
    record: dict[str, Any] = {"type": "record", "name": top, "fields": fields}
    if namespace:
        record["namespace"] = namespace
    return parse(record)


def schema_for(batch: Any) -> Schema:
    """The Avro schema to write ``batch`` with: ``b"avro.schema"`` metadata if present, else derived."""
    meta = batch.schema.metadata or {}
    if b"avro.schema" in meta:
        return parse(meta[b"avro.schema"].decode("utf-8"))
    return schema_from_arrow(batch.schema)
