"""Pulsar: the schema model, PIP-420 external schemas, and the pulsar-client adapter.

``pulsar_codec.pulsar.external`` (PIP-420 schemas) needs no Pulsar client. The client adapter
names (``read_batches``, ``KeyValueSchema``, ``ExternalSchemaAdapter``...) live in
``pulsar_codec.pulsar.client`` and need the ``pulsar`` extra; they are imported on first use, so
``import pulsar_codec.pulsar.external`` works without pulsar-client installed.
"""

from __future__ import annotations

import importlib
from typing import Any

_CLIENT_NAMES = frozenset(
    {
        "MESSAGE_SCHEMA",
        "ExternalSchema",
        "ExternalSchemaAdapter",
        "KeyValue",
        "KeyValueEncodingType",
        "KeyValueSchema",
        "dump_to_parquet",
        "keyvalue_columns",
        "read_batches",
        "send_keyvalue",
    }
)

__all__ = sorted(_CLIENT_NAMES)


def __getattr__(name: str) -> Any:
    if name in _CLIENT_NAMES:
        return getattr(importlib.import_module(f"{__name__}.client"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _CLIENT_NAMES)
