"""Pulsar: the schema model, PIP-420 external schemas, the pulsar-client adapter and the topic reader.

=========================================  ====================================================
module                                     what it holds
=========================================  ====================================================
``pulsar_codec.pulsar.schema_info``        SchemaType, SchemaInfo, EncodeData, the KeyValue
                                           SchemaInfo layout (no Pulsar client needed)
``pulsar_codec.pulsar.external``           PIP-420 external schemas (no Pulsar client needed)
``pulsar_codec.pulsar.client``             KeyValueSchema, send_keyvalue, ExternalSchemaAdapter
``pulsar_codec.pulsar.reader``             read_batches, dump_to_parquet, keyvalue_columns
``pulsar_codec.pulsar.topic``              TopicDecoder, read_decoded (AVRO, JSON and external
                                           schema topics into Arrow)
``pulsar_codec.pulsar.admin``              TopicPattern, matching_topics, namespace_topics (the
                                           admin REST API's topic lists; no client needed)
=========================================  ====================================================

The names below are imported from their module on first use, so ``import pulsar_codec.pulsar``
and the schema model work without ``pulsar-client``; the client adapter and the reader need the
``pulsar`` extra and say so when it is missing.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the module (relative to this package, or absolute) that defines it
_LAZY_NAMES: dict[str, str] = {
    "ExternalSchema": ".client",
    "ExternalSchemaAdapter": ".client",
    "KeyValue": ".client",
    "KeyValueSchema": ".client",
    "send_keyvalue": ".client",
    "MESSAGE_SCHEMA": ".reader",
    "dump_to_parquet": ".reader",
    "keyvalue_columns": ".reader",
    "read_batches": ".reader",
    "TopicDecoder": ".topic",
    "read_decoded": ".topic",
    "PulsarAdminError": ".admin",
    "TopicPattern": ".admin",
    "matching_topics": ".admin",
    "namespace_topics": ".admin",
    "KeyValueEncodingType": "pulsar_codec.keyvalue",
    "SchemaType": ".schema_info",
    "SchemaInfo": ".schema_info",
    "EncodeData": ".schema_info",
}

__all__ = sorted(_LAZY_NAMES)


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use."""
    module = _LAZY_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_NAMES))
