"""Schema registries behind one interface.

* :class:`LocalRegistry`: the embedded registry, a SQLite file (or ``":memory:"``).
* :class:`ConfluentRegistry`: an HTTP client for Confluent-compatible registries (Confluent,
  Karapace, Redpanda, Apicurio's ``ccompat`` API); needs the ``registry`` extra (httpx).
* :mod:`pulsar_codec.registry.server`: a REST facade serving a :class:`LocalRegistry` over the
  Confluent API, so Confluent's own clients can use it; needs the ``server`` extra.

Every registry offers ``register``, ``get_schema``, ``get_latest``, ``get_version``, ``lookup``,
``list_subjects``, ``list_versions``, ``delete_subject``, ``delete_version``,
``check_compatibility``, ``get_compatibility`` / ``set_compatibility`` (see :class:`Registry`).
"""

from __future__ import annotations

from typing import Any

from .base import RegisteredSchema, Registry
from .local import LocalRegistry

__all__ = ["ConfluentRegistry", "LocalRegistry", "RegisteredSchema", "Registry"]


def __getattr__(name: str) -> Any:
    # the HTTP client needs httpx, an optional extra: import it only when asked for
    if name == "ConfluentRegistry":
        from .http import ConfluentRegistry

        return ConfluentRegistry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
