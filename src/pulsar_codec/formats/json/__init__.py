"""JSON payloads: JSON Schema (Confluent, Karapace, Apicurio) and Pulsar ``JSON`` schemas into Arrow.

:data:`FORMAT` is the format :func:`pulsar_codec.formats.get_format` returns for ``"JSON"``;
:func:`parse` reads a schema (:mod:`.schema`), :func:`map_model` gives its Avro shadow schema and
transcode program (:mod:`.mapping`, where the JSON Schema -> Arrow mapping is described), and
:func:`json_schema_from_arrow` derives a JSON Schema for Arrow rows (:mod:`.from_arrow`).
"""

from __future__ import annotations

from .format import FORMAT, JsonFormat, JsonPlan
from .from_arrow import json_schema_from_arrow
from .mapping import EXTRA_COLUMN, JsonMapping, map_model
from .schema import JsonSchemaModel, parse, resolve_references

__all__ = [
    "EXTRA_COLUMN",
    "FORMAT",
    "JsonFormat",
    "JsonMapping",
    "JsonPlan",
    "JsonSchemaModel",
    "json_schema_from_arrow",
    "map_model",
    "parse",
    "resolve_references",
]
