"""The one place that chooses between the compiled kernels and their pure-Python twins.

Each hot loop exists twice, as ``pulsar_codec._kernels.<domain>_c`` (Cython) and ``pulsar_codec._kernels.<domain>_py``
(pure Python), with the same names and signatures. Everything else in the package calls the kernels
through :func:`active`, so the same public API runs on either twin.

Environment switches
--------------------
``PULSAR_CODEC_NO_EXTENSIONS=1``
    use the pure-Python twin even if the compiled one is installed (also a build switch).
``PULSAR_CODEC_REQUIRE_EXTENSIONS=1``
    a missing or broken compiled extension is an ImportError instead of a fallback (CI sets it).

When the compiled twin cannot be imported and nothing asked for the pure one, the logger named
``pulsar_codec`` warns once per process, at import, with the reason: on a Spark executor too, since
each Python worker imports this module itself.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import platform
import threading
from collections.abc import Iterator
from types import ModuleType

__all__ = [
    "Backend",
    "DOMAINS",
    "active",
    "default",
    "use",
    "get",
    "compiled_available",
    "compiled_import_error",
]

# Kernel domains; each has a _<domain>_c and a _<domain>_py module.
DOMAINS: tuple[str, ...] = (
    "wire",
    "keyvalue",
    "avro",
    "primitives",
    "avro_encode",
    "json",
    "protobuf",
    "protobuf_encode",
)


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


class Backend:
    """A set of kernel modules, one per domain: ``backend.wire``, ``backend.avro``, ..."""

    def __init__(self, name: str, modules: dict[str, ModuleType]) -> None:
        self.name = name
        self._modules = modules

    def __getattr__(self, domain: str) -> ModuleType:
        modules: dict[str, ModuleType] = self.__dict__["_modules"]
        try:
            return modules[domain]
        except KeyError:
            raise AttributeError(domain) from None

    def __repr__(self) -> str:
        return f"<pulsar_codec backend {self.name!r}>"


def _load(suffix: str) -> dict[str, ModuleType]:
    return {d: importlib.import_module(f"pulsar_codec._kernels.{d}_{suffix}") for d in DOMAINS}


_PURE = Backend("python", _load("py"))
_COMPILED: Backend | None = None
_COMPILED_ERROR: str | None = None

if platform.python_implementation() != "CPython":
    _COMPILED_ERROR = f"compiled kernels need CPython, this is {platform.python_implementation()}"
else:
    try:
        _COMPILED = Backend("cython", _load("c"))
    except ImportError as exc:  # keep the reason for diagnostics and for the test skip message
        _COMPILED_ERROR = f"{type(exc).__name__}: {exc}"

if _flag("PULSAR_CODEC_REQUIRE_EXTENSIONS") and _COMPILED is None:
    raise ImportError(
        f"PULSAR_CODEC_REQUIRE_EXTENSIONS is set but the compiled kernels cannot be imported: {_COMPILED_ERROR}"
    )

if _flag("PULSAR_CODEC_NO_EXTENSIONS"):
    _DEFAULT = _PURE
    if _COMPILED_ERROR is None:
        _COMPILED_ERROR = "disabled by PULSAR_CODEC_NO_EXTENSIONS"
elif _COMPILED is None:
    _DEFAULT = _PURE
    # nobody asked for the pure twin: say so, once (this module runs once per process)
    logging.getLogger("pulsar_codec").warning(
        "pulsar_codec: the compiled kernels are not available (%s); using the pure-Python twin, which is "
        "much slower (set PULSAR_CODEC_REQUIRE_EXTENSIONS=1 to make this an error)",
        _COMPILED_ERROR,
    )
else:
    _DEFAULT = _COMPILED

_local = threading.local()


def active() -> Backend:
    """The backend in use on this thread (the default unless inside :func:`use`)."""
    return getattr(_local, "backend", None) or _DEFAULT


def default() -> Backend:
    """The process-wide backend: compiled when it imports and is not disabled, else pure."""
    return _DEFAULT


def compiled_available() -> bool:
    """Whether the compiled kernels imported (whichever backend is the default)."""
    return _COMPILED is not None


def compiled_import_error() -> str | None:
    """Why the compiled kernels are not available (None when they are)."""
    return None if _COMPILED is not None else _COMPILED_ERROR


def get(name: str) -> Backend:
    """Return the backend called ``"cython"`` or ``"python"``; ImportError if it cannot be loaded."""
    if name == "python":
        return _PURE
    if name == "cython":
        if _COMPILED is None:
            raise ImportError(f"compiled kernels unavailable: {_COMPILED_ERROR}")
        return _COMPILED
    raise ValueError(f"unknown backend {name!r}, expected 'cython' or 'python'")


@contextlib.contextmanager
def use(name: str) -> Iterator[Backend]:
    """Run a block with the named backend on this thread (used by the tests to run both twins)."""
    backend = get(name)
    previous = getattr(_local, "backend", None)
    _local.backend = backend
    try:
        yield backend
    finally:
        _local.backend = previous
