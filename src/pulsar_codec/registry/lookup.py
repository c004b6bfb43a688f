"""One lookup for every consumer of schemas: what a registry returns, as schema text and type.

Registries come in many shapes: this package's clients (:class:`~.base.RegisteredSchema`),
confluent-kafka's ``SchemaRegistryClient`` (a ``Schema`` with ``schema_str`` / ``schema_type``),
anything with ``get_schema(id)`` returning text or a dict, or a plain Mapping of id -> schema.
:func:`fetch_schema` turns each into a :class:`FetchedSchema`; :func:`schema_text` (from
:mod:`.base`) turns one returned value into text.
"""

from __future__ import annotations

import os
import threading
import uuid
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import SchemaNotFoundError
from .base import schema_text
from .config import RegistryConfig

__all__ = ["FetchedSchema", "RegistrySource", "fetch_schema", "portable", "schema_text"]

_TEXT_ATTRIBUTES = ("schema_str", "schema")
_TEXT = (str, bytes, bytearray, memoryview, dict, list)


@dataclass(frozen=True)
class FetchedSchema:
    """A writer schema as the registry gave it.

    Attributes
    ----------
    schema : str or object
        The schema text; or, when a Mapping holds a format's parsed schema, that object as it is.
    schema_type : str or None
        ``"AVRO"``, ``"JSON"``, ``"PROTOBUF"`` when the registry says; None when it cannot (a
        Mapping of plain text).
    references : tuple
        The registry's schema references (confluent-kafka ``SchemaReference`` or dicts), if any.
    """

    schema: Any
    schema_type: str | None = None
    references: tuple[Any, ...] = ()


def _has_text(found: Any) -> bool:
    if isinstance(found, _TEXT):
        return True
    return any(isinstance(getattr(found, a, None), (str, bytes)) for a in _TEXT_ATTRIBUTES)


def fetch_schema(registry: Any, schema_id: Any) -> FetchedSchema:
    """Look ``schema_id`` up in ``registry`` (one call, no cache).

    Parameters
    ----------
    registry : Mapping or object with ``get_schema(schema_id)``
        A Mapping keyed by id (a ``uuid.UUID`` id is also tried as its string form). A GUID is
        asked of ``get_schema_by_guid(text)`` when the registry has it (this package's registries,
        confluent-kafka's ``SchemaRegistryClient``), else of ``get_schema``.
    schema_id : int, uuid.UUID or (int, int)
        As the wire prefix gives it (see :func:`pulsar_codec.decode`).

    Raises
    ------
    SchemaNotFoundError
        The registry does not know the id (or returned None).
    TypeError
        ``registry`` is neither a Mapping nor has ``get_schema``, or returned no schema text.
    """
    if isinstance(registry, Mapping):
        found = registry.get(schema_id)
        if found is None and isinstance(schema_id, uuid.UUID):
            found = registry.get(str(schema_id))
    else:
        found = _asked(registry, schema_id)
    if found is None:
        raise SchemaNotFoundError(f"schema id {schema_id} is not in the registry")
    kind = getattr(found, "schema_type", None)
    references = tuple(getattr(found, "references", None) or ())
    text = schema_text(found) if _has_text(found) else found
    return FetchedSchema(text, kind.upper() if isinstance(kind, str) else None, references)


def _asked(registry: Any, schema_id: Any) -> Any:
    """The schema a registry client gives for ``schema_id``; a client's own "not found" (confluent-
    kafka's ``SchemaRegistryError``, HTTP 404) as :class:`SchemaNotFoundError`, which the decoders
    turn into error rows, as they do for this package's clients."""
    if isinstance(schema_id, tuple) and _integer_ids_only(registry):
        # Hortonworks protocol 1 names (metadata id, version): a Confluent-style registry has no
        # such key, so its messages are "not found" (error rows), not a crash inside the client
        raise SchemaNotFoundError(
            f"schema id {schema_id} is not in the registry: a Hortonworks protocol-1 id (metadata id,"
            f" version), which {type(registry).__name__} cannot look up (it knows integer ids and GUIDs);"
            " read protocol-1 messages with a Mapping keyed by (metadata_id, version)"
        )
    if isinstance(schema_id, uuid.UUID) and callable(getattr(registry, "get_schema_by_guid", None)):
        # this package's registries and confluent-kafka's client: GET /schemas/guids/{guid}
        ask, key = registry.get_schema_by_guid, str(schema_id)
    elif callable(getattr(registry, "get_schema", None)):
        ask, key = registry.get_schema, schema_id
    else:
        raise TypeError("registry must be a Mapping of schema id -> schema or have a get_schema(schema_id) method")
    try:
        return ask(key)
    except SchemaNotFoundError:
        raise
    except Exception as exc:
        if getattr(exc, "http_status_code", None) == 404:
            raise SchemaNotFoundError(f"schema id {schema_id} is not in the registry ({exc})") from exc
        raise


def _integer_ids_only(registry: Any) -> bool:
    """True for the registry clients known to look schemas up by integer id (or GUID) only: this
    package's and confluent-kafka's. Another client is asked whatever key the prefix gives."""
    from .base import Registry

    return isinstance(registry, Registry) or type(registry).__module__.startswith("confluent_kafka")


def portable(registry: Any, owner: str = "object") -> Any:
    """What a pickled decoder or encoder (``owner`` names it in errors) carries for ``registry``:
    a Mapping or None as it is, anything else its :class:`RegistryConfig`, never a client.

    Raises
    ------
    TypeError
        ``registry`` has no configuration, or is an in-memory LocalRegistry (another process would
        get an empty one).
    """
    if registry is None or isinstance(registry, Mapping):
        return registry
    try:
        config = RegistryConfig.of(registry)
    except TypeError as exc:
        raise TypeError(f"cannot pickle a {owner}: {exc}") from None
    if config.is_memory:
        raise TypeError(
            f"cannot pickle a {owner} over an in-memory LocalRegistry (another process would get an empty "
            "one): use a registry file, a URL, or a Mapping of schema id -> schema"
        )
    return config


class RegistrySource:
    """The registry something reads: the object given (a client or Mapping), or a client built
    on first use from a :class:`RegistryConfig`, an ``http(s)://`` URL or a file path.

    Ownership: a client built here belongs to this source (:attr:`owns` is then True) and
    :meth:`close` closes it; with an ``owner``, so does the owner's garbage collection (or the
    interpreter's exit) when nobody closed it. A client or Mapping given is the caller's: it is
    never closed here.

    Parameters
    ----------
    registry : Any
        Kept as :attr:`given`.
    create : bool, default True
        Whether a registry file path that does not exist is created (an encoder registers into it)
        or refused with :class:`~pulsar_codec.errors.RegistryError` (a decoder only reads: a typo
        in the path must not look like an empty registry).
    owner : object, optional
        The object this source serves (a decoder, an encoder), held weakly: when it is collected,
        the client built for it is closed. Without one, only :meth:`close` closes it (a caller
        that takes the client with :meth:`get` and lets the source go keeps it open).
    """

    def __init__(self, registry: Any, create: bool = True, owner: object | None = None) -> None:
        self.given = registry
        self.create = create
        self.owns = isinstance(registry, (RegistryConfig, str, os.PathLike))
        self._client: Any = None if self.owns else registry
        self._owner = None if owner is None else weakref.ref(owner)
        # closes the client built here when the owner is collected, at most once
        self._closer: weakref.finalize[[Any], object] | None = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        """The client (built once, thread-safely, and again after :meth:`close`) or the Mapping."""
        if self._client is None and self.given is not None:
            with self._lock:
                if self._client is None:
                    client = RegistryConfig.of(self.given).build(create=self.create)
                    owner = None if self._owner is None else self._owner()
                    if owner is not None:
                        # the owner dropped unclosed (a decoder leaving pc.decode's cache) or still
                        # alive at exit closes the client: no socket is left to the collector
                        self._closer = weakref.finalize(owner, _close_quietly, client)
                    self._client = client
        return self._client

    def close(self) -> None:
        """Close the client built here, if any (a given client or Mapping is left alone). The
        source stays usable: a later :meth:`get` builds a new client."""
        if not self.owns:
            return
        with self._lock:
            client, closer, self._client, self._closer = self._client, self._closer, None, None
        if closer is not None:
            closer()  # closes the client, once; the owner's collection then does nothing
        elif client is not None:
            client.close()


def _close_quietly(client: Any) -> None:
    """Close a registry client this package built (a finalizer: never raises)."""
    try:
        client.close()
    except Exception:  # noqa: BLE001 - during collection or exit nothing useful can be done
        pass
