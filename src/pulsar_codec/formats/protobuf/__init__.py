"""Protobuf payloads: registry ``.proto`` texts, Pulsar ``PROTOBUF_NATIVE`` schemas and descriptors.

:func:`parse` reads a schema into a :class:`ProtobufSchemaModel` (:mod:`.schema`: ``.proto`` text
compiled by protoc with its references, Pulsar ``PROTOBUF_NATIVE`` data, FileDescriptorSets,
runtime descriptors); :func:`resolve_references` fetches the imported files from a registry;
:func:`schema_key` is the cache key, :func:`schema_text` / :func:`dependency_texts` the texts to
register (descriptors are printed back to ``.proto`` by :mod:`._printer`), and
:func:`pulsar_native_data` the Pulsar schema data. Compatibility rules are in :mod:`.compat`.
:data:`FORMAT` (:mod:`.format`) decodes payloads: :mod:`.mapping` gives a message's Arrow columns (the
Protobuf -> Arrow mapping is described there) and the transcode program the ``protobuf`` kernel
runs; :class:`ProtobufEncoder` writes payloads as the protobuf runtime does.
"""

from __future__ import annotations

from .encoder import ProtobufEncoder
from .format import FORMAT, ProtobufFormat, ProtobufPlan
from .from_arrow import proto_from_arrow
from .schema import (
    ProtobufSchemaModel,
    dependency_texts,
    parse,
    pulsar_native_data,
    resolve_references,
    schema_key,
    schema_text,
)

__all__ = [
    "FORMAT",
    "ProtobufEncoder",
    "ProtobufFormat",
    "ProtobufPlan",
    "ProtobufSchemaModel",
    "proto_from_arrow",
    "dependency_texts",
    "parse",
    "pulsar_native_data",
    "resolve_references",
    "schema_key",
    "schema_text",
]
