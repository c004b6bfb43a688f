"""Schema registries behind one interface.

* :class:`LocalRegistry`: the embedded registry, a SQLite file (or ``":memory:"``).
* :class:`ConfluentRegistry`: an HTTP client for Confluent-compatible registries (Confluent,
  Karapace, Redpanda, Apicurio's ``ccompat`` API); needs the ``registry`` extra (httpx).
* :mod:`pulsar_codec.registry.server`: a REST facade serving a :class:`LocalRegistry` over the
  Confluent API, so Confluent's own clients can use it; needs the ``server`` extra.

Every registry offers ``register`` / ``register_full``, ``get_schema``, ``get_schema_by_guid``,
``get_latest``, ``get_version``, ``lookup``, ``list_subjects``, ``list_versions``,
``delete_subject``, ``delete_version``, ``check_compatibility``, ``get_compatibility`` /
``set_compatibility`` (see :class:`Registry`); ``register``, ``lookup`` and
``check_compatibility`` take schema ``references`` (:class:`SchemaReference` s or their dicts).

:class:`RegistryConfig` is the picklable recipe of a client (``RegistryConfig.of(client)``,
``config.build()``); :func:`fetch_schema` reads one schema id from any registry or Mapping.
"""

from __future__ import annotations

from typing import Any

from .base import RegisteredSchema, Registry, SchemaReference, schema_text
from .config import RegistryConfig
from .local import LocalRegistry
from .lookup import FetchedSchema, fetch_schema

__all__ = [
    "ConfluentRegistry",
    "FetchedSchema",
    "LocalRegistry",
    "RegisteredSchema",
    "Registry",
    "RegistryConfig",
    "SchemaReference",
    "fetch_schema",
    "schema_text",
]


def __getattr__(name: str) -> Any:
    # the HTTP client needs httpx, an optional extra: import it only when asked for
    if name == "ConfluentRegistry":
        from .http import ConfluentRegistry

        return ConfluentRegistry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
