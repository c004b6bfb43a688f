"""Payload formats: one package per format behind one small interface (see :mod:`.base`).

:func:`get_format` finds a format by the registry's ``schemaType``: a format registered with
:func:`register_format`, else the package ``pulsar_codec.formats.<name in lower case>`` and its
module attribute ``FORMAT``. Adding a format is adding that package; nothing else changes.
"""

from __future__ import annotations

import importlib
import threading

from ..errors import SchemaError
from .base import Decoded, DecodePlan, PayloadEncoder, PayloadFormat, RowError, Segment

__all__ = [
    "DEFAULT_FORMAT",
    "Decoded",
    "DecodePlan",
    "PayloadEncoder",
    "PayloadFormat",
    "RowError",
    "Segment",
    "format_of_model",
    "get_format",
    "register_format",
]

DEFAULT_FORMAT = "AVRO"

_FORMATS: dict[str, PayloadFormat] = {}
_LOCK = threading.Lock()


def register_format(fmt: PayloadFormat) -> None:
    """Make ``fmt`` the format for ``fmt.name`` (a registry ``schemaType``, compared in upper case)."""
    with _LOCK:
        _FORMATS[fmt.name.upper()] = fmt


def get_format(name: str | None = None) -> PayloadFormat:
    """The format for a registry ``schemaType`` (default ``"AVRO"``).

    Raises
    ------
    SchemaError
        No format of that name is installed.
    """
    key = (name or DEFAULT_FORMAT).upper()
    with _LOCK:
        found = _FORMATS.get(key)
    if found is not None:
        return found
    if not key.isidentifier():
        raise SchemaError(f"no payload format named {name!r}")
    try:
        module = importlib.import_module(f"{__name__}.{key.lower()}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{key.lower()}":
            raise
        raise SchemaError(f"no payload format for schema type {key!r} is installed") from None
    fmt = getattr(module, "FORMAT", None)
    if fmt is None:
        raise SchemaError(f"{module.__name__} defines no FORMAT")
    register_format(fmt)
    return fmt  # type: ignore[no-any-return]


def format_of_model(model: object) -> str | None:
    """The name of the format whose package defines ``model``'s class (a schema already parsed by
    ``formats.<name>``), or None for text, decoded JSON and objects of other packages."""
    parts = type(model).__module__.split(".")
    prefix = __name__.split(".")
    if parts[: len(prefix)] != prefix or len(parts) <= len(prefix):
        return None
    try:
        return get_format(parts[len(prefix)]).name
    except SchemaError:
        return None
