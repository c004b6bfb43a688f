"""The PIP-420 schema interface, and what the Avro and JSON schemas share: subjects, writer ids,
framing and splitting messages into (registry id, body)."""

from __future__ import annotations

import abc
import threading
from typing import Any, Self

import pyarrow as pa

from ... import wire
from ...errors import SchemaError, SchemaNotFoundError
from ..schema_info import EncodeData, SchemaInfo, external_schema_info
from .ids import FRAMING_MAGIC, external_protocol, registry_id, schema_id_bytes, schema_id_from_bytes
from .subjects import ProviderSettings, provider_of

__all__ = ["ExternalSchema", "RegistrySchema", "as_list"]


class ExternalSchema(abc.ABC):
    """A PIP-420 external schema: values in, ``EncodeData(data, schema_id)`` out, and back.

    Subclasses implement :meth:`encode` and :meth:`decode`. The schema registers with a Pulsar
    broker as :attr:`schema_info` (type EXTERNAL, empty schema data) and supports schema
    versioning (:attr:`supports_schema_versioning`), which PIP-420's KeyValue decode path needs.
    """

    supports_schema_versioning = True

    def __init__(self, provider: ProviderSettings | None, name: str = "") -> None:
        self.provider = provider
        self.name = name
        self._closed = False

    @property
    def topic(self) -> str | None:
        """The topic this schema was made for."""
        return self.provider.topic if self.provider is not None else None

    @property
    def schema_info(self) -> SchemaInfo:
        """What the schema registers with a Pulsar broker: type EXTERNAL, empty schema data."""
        return external_schema_info(self.name)

    @abc.abstractmethod
    def encode(self, topic: str | None, value: Any) -> EncodeData:
        """Serialise ``value`` for ``topic`` (None: the schema's own topic)."""

    @abc.abstractmethod
    def decode(self, topic: str | None, data: bytes, schema_id: bytes | None = None) -> Any:
        """Deserialise one payload; ``schema_id`` is the PIP-420 metadata id when there is one."""

    def decode_batch(
        self, messages: Any, schema_ids: Any = None, *, topic: str | None = None, on_error: str = "raise"
    ) -> Any:
        """Decode many payloads into a ``pa.RecordBatch`` (schemas without a bulk decoder raise
        NotImplementedError)."""
        raise NotImplementedError(f"{type(self).__name__} has no bulk decoder")

    def close(self) -> None:
        """Release what the schema holds (caches); the shared registry stays open."""
        self._closed = True

    def close_async(self) -> None:
        """Same as :meth:`close` (Java's ``closeAsync``)."""
        self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed")


def as_list(values: Any) -> list[Any]:
    """The items of a pyarrow array or any iterable as a list."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return list(values.to_pylist())
    return list(values)


class RegistrySchema(ExternalSchema):
    """What the Avro and JSON schemas share: subjects, writer ids, framing, message splitting.

    Subclasses say how a schema of their kind is parsed, written as text and named, and how an id
    is looked up (:meth:`schema_for_id`).
    """

    schema_type = "AVRO"

    def __init__(
        self,
        target: Any,
        schema: Any = None,
        *,
        topic: str | None = None,
        is_key: bool = False,
        schema_id: int | None = None,
        subject: str | None = None,
        auto_register: bool | None = None,
        use_latest: bool | None = None,
        protocol: wire.Protocol | str | None = None,
        framed: bool | None = None,
        name: str = "",
    ) -> None:
        provider = provider_of(target, topic)
        super().__init__(provider, name)
        self.provider: ProviderSettings = provider
        opts = provider.options(protocol=protocol, framed=framed, auto_register=auto_register, use_latest=use_latest)
        self.registry = provider.registry
        self.protocol = external_protocol(opts["protocol"])
        self.framed = bool(opts["framed"])
        self.auto_register = bool(opts["auto_register"])
        self.use_latest = bool(opts["use_latest"])
        self.is_key = bool(is_key)
        self.pinned_id = None if schema_id is None else int(schema_id)
        self.fixed_subject = subject
        if schema is None and self.pinned_id is None and not self.use_latest:
            raise ValueError("give a schema, a schema_id, or use_latest=True")
        self._lock = threading.Lock()
        self._writers: dict[str, tuple[int, Any]] = {}  # subject -> (id, parsed writer)
        self._prefixes: dict[int, tuple[bytes, bytes]] = {}
        self._metadata_ids: dict[bytes, int] = {}

    # -- what subclasses provide -----------------------------------------------------------------

    @abc.abstractmethod
    def _parse(self, schema: Any) -> Any:
        """The parsed form of a schema of this kind."""

    @abc.abstractmethod
    def _text(self, parsed: Any) -> str:
        """The text registered for a parsed schema."""

    @abc.abstractmethod
    def _record_name(self, parsed: Any) -> str | None:
        """The name RecordNameStrategy uses."""

    @property
    @abc.abstractmethod
    def _own_schema(self) -> Any:
        """The schema values are written with, if one was given."""

    @abc.abstractmethod
    def schema_for_id(self, schema_id: int) -> Any:
        """The parsed schema with this registry id (looked up once).

        Raises
        ------
        SchemaNotFoundError
            The registry does not know the id.
        SchemaError
            The id holds a schema of another type (JSON for an Avro schema, ...).
        """

    @abc.abstractmethod
    def _forget_schemas(self) -> None:
        """Drop the schemas looked up by id."""

    # -- subjects and writer ids -----------------------------------------------------------------

    def subject(self, topic: str | None = None) -> str:
        """The subject the writer schema lives under for ``topic`` (default: the schema's topic)."""
        if self.fixed_subject is not None:
            return self.fixed_subject
        own = self._own_schema
        return self.provider.subject(None if own is None else self._record_name(own), self.is_key, topic)

    def writer(self, topic: str | None = None) -> tuple[int, Any]:
        """``(schema id, parsed writer schema)`` used to encode for ``topic``, registering or looking
        the schema up on first use (then cached per subject).

        Raises
        ------
        IncompatibleSchemaError
            ``auto_register`` and the registry's compatibility level rejects the schema.
        SchemaNotFoundError
            The pinned id, the subject (``use_latest``) or the schema (``auto_register=False``) is unknown.
        """
        self._check_open()
        if self.pinned_id is not None:
            return self.pinned_id, self.schema_for_id(self.pinned_id)
        subject = self.subject(topic)
        hit = self._writers.get(subject)
        if hit is not None:
            return hit
        if self.use_latest:
            found = self.registry.get_latest(subject)
            self._check_type(getattr(found, "schema_type", None), found.id)
            result = (int(found.id), self._parse(found.schema))
        elif self.auto_register:
            own = self._own_schema
            registered = self.registry.register(subject, self._text(own), self.schema_type)
            result = (int(getattr(registered, "schema_id", registered)), own)
        else:
            own = self._own_schema
            found = self.registry.lookup(subject, self._text(own), self.schema_type)
            result = (int(found.id), own)
        with self._lock:
            self._writers[subject] = result
        return result

    register = writer  # eager registration, e.g. when a producer is created

    def _check_type(self, found_type: str | None, schema_id: int) -> None:
        kind = (found_type or "AVRO").upper()
        if kind != self.schema_type:
            raise SchemaError(f"schema id {schema_id} is a {kind} schema, not {self.schema_type}")

    def clear_caches(self) -> None:
        """Forget cached writer ids (``use_latest`` then picks up a newer version) and schemas."""
        with self._lock:
            self._writers.clear()
        self._forget_schemas()

    def close(self) -> None:
        """Drop the caches and refuse further use; the shared registry stays open."""
        self.clear_caches()
        super().close()

    # -- framing ---------------------------------------------------------------------------------

    def _id_bytes(self, schema_id: int) -> tuple[bytes, bytes]:
        """``(EncodeData.schema_id, frame prefix)`` of an id, computed once per id."""
        hit = self._prefixes.get(schema_id)
        if hit is None:
            id_bytes = schema_id_bytes(schema_id, self.protocol)
            hit = self._prefixes[schema_id] = (id_bytes, FRAMING_MAGIC[self.protocol.name] + id_bytes)
        return hit

    def _frame(self, schema_id: int, body: bytes) -> EncodeData:
        id_bytes, prefix = self._id_bytes(schema_id)
        return EncodeData(prefix + body if self.framed else body, id_bytes)

    def _metadata_id(self, schema_id: Any) -> int:
        """The registry id of metadata id bytes (memoised: a topic carries few distinct ids)."""
        key = bytes(schema_id)
        hit = self._metadata_ids.get(key)
        if hit is None:
            hit = self._metadata_ids[key] = schema_id_from_bytes(key, self.protocol)
        return hit

    def _split(self, data: Any, schema_id: bytes | None) -> tuple[int, memoryview, int]:
        """``(registry id, body, Hortonworks protocol byte or -1)`` of one message.

        The metadata id wins when it is given; a framed message always loses its prefix.
        """
        if data is None:
            raise TypeError("data is None: a null message has no value to decode")
        view = memoryview(data).cast("B")
        protocol_byte = -1
        prefix_id: Any
        if self.framed and self.protocol is wire.CONFLUENT and len(view) >= 5 and view[0] == 0:
            # the common case, without a kernel call
            prefix_id, body = int.from_bytes(view[1:5], "big"), view[5:]
        elif self.framed:
            prefix_id, body = self.protocol.unpack(view)
            if self.protocol is wire.HORTONWORKS:
                protocol_byte = view[0]
        else:
            prefix_id, body = None, view
        if schema_id is not None and len(schema_id):
            return self._metadata_id(schema_id), body, protocol_byte
        if prefix_id is None:
            raise SchemaNotFoundError(
                "the message carries no schema id: with framed=False the id must come from the message metadata"
            )
        return registry_id(prefix_id), body, protocol_byte

    def _bodies_and_ids(self, messages: Any, schema_ids: Any) -> tuple[list[bytes | None], list[int | None]]:
        """Bodies (prefixes removed) and registry ids of messages whose ids come separately."""
        ids = as_list(schema_ids)
        bodies = as_list(messages)
        if len(ids) != len(bodies):
            raise ValueError(f"{len(ids)} schema ids for {len(bodies)} messages")
        out_bodies: list[bytes | None] = []
        out_ids: list[int | None] = []
        for body, sid in zip(bodies, ids):
            if body is None:
                out_bodies.append(None)
                out_ids.append(None)
                continue
            if not self.framed and (sid is None or not len(sid)):
                # no id anywhere: the decoder makes it this message's error (a row, or raised with
                # its index), not the whole batch's
                out_bodies.append(bytes(body))
                out_ids.append(None)
                continue
            schema_id, payload, _ = self._split(body, sid)
            out_bodies.append(bytes(payload))
            out_ids.append(schema_id)
        return out_bodies, out_ids
