"""Arrow schema -> JSON Schema (draft-07): the schema of JSON payloads written from Arrow rows.

The reverse of the JSON Schema -> Arrow mapping: struct -> object (``properties`` in column order,
``required`` lists the non-null fields, ``additionalProperties`` left open as Confluent's
generated schemas do), bool -> boolean, every integer width -> integer, floating point -> number
(a decimal is refused: a JSON number reads back as a double), string -> string, binary -> string
with ``contentEncoding: base64``, timestamp -> ``format: date-time``, date -> ``date``, time ->
``time``, dictionary of strings -> string, list -> array, map -> object with
``additionalProperties``, null -> null. A nullable value adds
``"null"`` to its ``type``. Decoding the derived schema gives the same Arrow types back where the
mapping has them (int64, float64, timestamp[us, UTC], date32, time64[us], ...).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ...errors import SchemaError

__all__ = ["json_schema_from_arrow", "DRAFT7"]

DRAFT7 = "http://json-schema.org/draft-07/schema#"


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    declared = schema["type"]
    if declared != "null":
        schema["type"] = [declared, "null"]
    return schema


def _type(t: pa.DataType, where: str) -> dict[str, Any]:
    if pa.types.is_struct(t):
        return _object([t.field(i) for i in range(t.num_fields)], None, where)
    if pa.types.is_map(t):
        return {"type": "object", "additionalProperties": _value(t.item_field, where)}
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t):
        return {"type": "array", "items": _value(t.value_field, where)}
    if pa.types.is_dictionary(t):
        return _type(t.value_type, where)
    if pa.types.is_boolean(t):
        return {"type": "boolean"}
    if pa.types.is_integer(t):
        return {"type": "integer"}
    if pa.types.is_floating(t):
        return {"type": "number"}
    if pa.types.is_decimal(t):
        # a JSON number reads back as a double: the encoder writes none from a decimal, so the
        # derived schema has no form for one either (refused before any subject is registered)
        raise SchemaError(
            f"no JSON Schema form for the Arrow {t} column {where}: a JSON number reads back as a"
            " double; cast the column (to float64, or to string for the exact text) or pass schema="
        )
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return {"type": "string"}
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return {"type": "string", "contentEncoding": "base64"}
    if pa.types.is_binary_view(t):
        return {"type": "string", "contentEncoding": "base64"}
    if pa.types.is_timestamp(t):
        return {"type": "string", "format": "date-time"}
    if pa.types.is_date(t):
        return {"type": "string", "format": "date"}
    if pa.types.is_time(t):
        return {"type": "string", "format": "time"}
    if pa.types.is_null(t):
        return {"type": "null"}
    raise SchemaError(f"no JSON Schema type for Arrow type {t} ({where})")


def _value(f: pa.Field, where: str) -> dict[str, Any]:
    schema = _type(f.type, f"{where}.{f.name}")
    return _nullable(schema) if f.nullable else schema


def _object(fields: list[pa.Field], nulls: dict[str, bool] | None, where: str) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in fields:
        nullable = f.nullable if nulls is None else bool(nulls.get(f.name, False))
        schema = _type(f.type, f"{where}.{f.name}" if where else f.name)
        properties[f.name] = _nullable(schema) if nullable else schema
        if not nullable:
            required.append(f.name)
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


def json_schema_from_arrow(
    schema: pa.Schema, name: str = "Record", nulls: dict[str, bool] | None = None
) -> dict[str, Any]:
    """A draft-07 JSON Schema document for rows of ``schema``.

    Parameters
    ----------
    schema : pa.Schema
        The columns; each becomes a property, in column order.
    name : str, default "Record"
        The document's ``title``.
    nulls : dict, optional
        Which top-level columns hold nulls; when given it decides their nullability (a column it
        does not name is non-null), else each field's ``nullable`` flag does.

    Raises
    ------
    SchemaError
        A column type JSON Schema cannot describe (union, interval, duration, ...).
    """
    document = {"$schema": DRAFT7, "title": name}
    document.update(_object(list(schema), nulls, ""))
    return document
