"""pulsar_codec: native-accelerated codecs for Pulsar and schema-registry framed messages.

Wire prefixes (``wire``), Pulsar KeyValue payloads and schema ids (``keyvalue``), Pulsar primitive
encodings (``pulsar_types``) and Avro batch decoding (``avro``), all straight into Apache Arrow.
``BACKEND`` says whether the compiled kernels ("cython") or the pure-Python twin ("python") run.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import errors
from ._kernels._backend import default as _default_backend

__version__ = "0.1.0"

BACKEND: str = _default_backend().name

_SUBMODULES = frozenset(
    {
        "wire",
        "keyvalue",
        "pulsar_types",
        "avro",
        "formats",
        "pipeline",
        "registry",
        "compat",
        "external",
        "spark",
        "pulsar",
        "cli",
    }
)
# public functions that live in submodules, imported on first use
_LAZY = {"decode": "pipeline", "encode": "pipeline", "MessageDecoder": "pipeline", "MessageEncoder": "pipeline"}

__all__ = ["BACKEND", "errors", "__version__", *sorted(_SUBMODULES), *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY:
        module = importlib.import_module(f"{__name__}.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _SUBMODULES | set(_LAZY))
