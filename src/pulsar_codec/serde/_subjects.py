"""Subjects: the context confluent-kafka hands a serde, naming strategies, and registry calls by subject.

The serdes accept this package's registry clients and confluent-kafka's ``SchemaRegistryClient``;
:func:`subject_registry` wraps either behind the four calls a serializer makes.

Schema ids (spec §4): a message names its writer schema in its payload prefix (``00`` + 4-byte id,
or ``01`` + 16-byte GUID; Protobuf then adds its message-index array), or, as confluent-kafka's
``header_schema_id_serializer`` writes it, in the header ``__value_schema_id`` /
``__key_schema_id`` of the context, whose value is that same prefix and whose payload is then all
data. :func:`schema_id_header` finds the header as confluent-kafka's default
``dual_schema_id_deserializer`` does (the first matching entry of a list, or a dict lookup) and
:func:`read_schema_id` reads either form. The serializers, given ``header_schema_id_serializer``,
write ``01`` + the schema's GUID (:func:`schema_guid`, asked of the registry once per subject)
there with :func:`add_schema_id_header`, as confluent-kafka does.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple, Protocol

from .. import wire
from ..errors import ErrorCode, RegistryError, WireFormatError
from ..formats.avro.schema import parse, to_json

__all__ = [
    "MessageField",
    "SerializationContext",
    "SubjectRegistry",
    "WriterId",
    "add_schema_id_header",
    "client_of",
    "find_header",
    "header_name",
    "latest_subject",
    "read_schema_id",
    "record_subject_name_strategy",
    "schema_guid",
    "schema_id_header",
    "subject_registry",
    "topic_record_subject_name_strategy",
    "topic_subject_name_strategy",
]


class MessageField(StrEnum):
    """Which part of a message a serde handles (confluent-kafka's ``MessageField``; its own works too)."""

    NONE = "none"
    KEY = "key"
    VALUE = "value"

    def __str__(self) -> str:
        return str(self.value)


@dataclass
class SerializationContext:
    """Topic and message field of a serde call (the attributes of confluent-kafka's class of that name).

    Parameters
    ----------
    topic : str
    field : MessageField or str
    headers : list, optional
    """

    topic: str
    field: MessageField | str
    headers: Any = None


# -- schema ids: the payload prefix or a header ----------------------------------------------------------


class WriterId(NamedTuple):
    """The writer schema a message names: ``key`` (an int id or a ``uuid.UUID`` GUID), the Protobuf
    message-index ``path`` (None for Avro and JSON) and ``start``, where the data begins in the
    payload (after the prefix; 0 when the id came in a header)."""

    key: Any
    path: tuple[int, ...] | None
    start: int


def header_name(field: Any) -> str:
    """``__key_schema_id`` for the key field, else ``__value_schema_id`` (confluent-kafka's choice)."""
    return wire.CONFLUENT_KEY_SCHEMA_ID_HEADER if _field_name(field) == "key" else wire.CONFLUENT_VALUE_SCHEMA_ID_HEADER


def find_header(headers: Any, name: str) -> Any:
    """The value of header ``name``: the first matching ``(key, value)`` entry of a list (Kafka
    headers repeat keys), or a Mapping's entry; None when there is none."""
    if isinstance(headers, Mapping):
        return headers.get(name)
    if isinstance(headers, (list, tuple)):
        for header in headers:
            if header[0] == name:
                return header[1]
    return None


_KEY_HEADER = wire.CONFLUENT_KEY_SCHEMA_ID_HEADER
_VALUE_HEADER = wire.CONFLUENT_VALUE_SCHEMA_ID_HEADER


def schema_id_header(ctx: Any) -> tuple[str, Any] | None:
    """``(name, value)`` of the schema-id header of ``ctx``'s field, as confluent-kafka's
    ``dual_schema_id_deserializer`` finds it; None without one (a None value counts as none)."""
    headers = getattr(ctx, "headers", None)
    if not headers:  # the common case: no headers at all
        return None
    field = ctx.field
    name = _KEY_HEADER if (field == "key" if isinstance(field, str) else _field_name(field) == "key") else _VALUE_HEADER
    if type(headers) is list:  # what confluent-kafka's Message.headers() gives
        for header in headers:
            if header[0] == name:
                value = header[1]
                return None if value is None else (name, value)
        return None
    value = find_header(headers, name)
    return None if value is None else (name, value)


def add_schema_id_header(ctx: Any, value: bytes) -> None:
    """Add the schema-id header ``value`` to ``ctx``'s headers, as confluent-kafka's
    ``header_schema_id_serializer`` does: appended to a list, set in a dict.

    Raises
    ------
    ValueError
        No context, or a context without headers (``None``: a list made here would not reach the
        message, since confluent-kafka's ``SerializingProducer`` sends the ``headers`` it was given,
        so pass ``headers=[]`` to ``produce``), or headers neither a list nor a dict.
    """
    if ctx is None:
        raise ValueError("header_schema_id_serializer needs a SerializationContext (whose headers get the schema id)")
    headers = getattr(ctx, "headers", None)
    name = header_name(ctx.field)
    if isinstance(headers, list):
        headers.append((name, value))
    elif isinstance(headers, dict):
        headers[name] = value
    elif headers is None:
        raise ValueError(
            f"header_schema_id_serializer: the SerializationContext has no headers to add {name} to "
            "(give produce() a headers list, e.g. headers=[])"
        )
    else:
        raise ValueError(
            f"header_schema_id_serializer: the context's headers must be a list or a dict to add {name} to, "
            f"got {type(headers).__name__}"
        )


def _is_confluent_kafka_client(client: Any) -> bool:
    return callable(getattr(client, "register_schema", None)) and not callable(getattr(client, "register_full", None))


def schema_guid(client: Any, schema_id: int) -> uuid.UUID:
    """The GUID of schema ``schema_id`` (what ``01`` + GUID names), as the registry gives it.

    This package's registries give it with the schema (``RegisteredSchema.guid``);
    confluent-kafka's ``SchemaRegistryClient`` does not with ``get_schema``, so the GUID is read
    from a subject version that holds the schema (``get_schema_versions``, ``get_version``: the
    GUID is the schema's, whatever the subject).

    Raises
    ------
    RegistryError
        The registry gives no GUID for the schema (registries older than Confluent's GUIDs).
    """
    if _is_confluent_kafka_client(client):
        found = None
        versions = client.get_schema_versions(schema_id, deleted=True)
        if versions:
            found = client.get_version(versions[0].subject, versions[0].version, deleted=True)
    else:
        found = client.get_schema(schema_id)
    guid = getattr(found, "guid", None)
    if guid is None:
        raise RegistryError(
            f"the registry gives no GUID for schema id {schema_id}: header_schema_id_serializer writes the "
            "schema's GUID (01 + 16 bytes), which needs a registry that assigns GUIDs; use "
            "prefix_schema_id_serializer with this registry"
        )
    return guid if isinstance(guid, uuid.UUID) else uuid.UUID(str(guid))


_HEADER_CACHE: dict[tuple[bytes, bool], WriterId] = {}  # header value -> its id: headers repeat
_HEADER_CACHE_SIZE = 1024


def _bad(code: ErrorCode, text: str, index: int, offset: int, detail: int = 0) -> WireFormatError:
    return WireFormatError(text, code=code, index=index, offset=offset, detail=detail)


_FORMS = {
    (0, False): wire.CONFLUENT,
    (1, False): wire.CONFLUENT_GUID,
    (0, True): wire.CONFLUENT_PROTOBUF,
    (1, True): wire.CONFLUENT_GUID_PROTOBUF,
}


def read_schema_id(data: Any, protobuf: bool, *, header: str | None = None, index: int = 0) -> WriterId:
    """The schema id a Confluent prefix holds: ``00`` + 4-byte id or ``01`` + GUID, then, for
    Protobuf, the message-index array (read by :mod:`pulsar_codec.wire`).

    With ``header`` (its name), ``data`` is that header's value, which must hold exactly the id
    (and the index array): the whole payload is then the data (``start`` 0). Without, ``data`` is
    a prefixed message. ``index`` is the message's position, for the error's text.

    Raises
    ------
    WireFormatError
        A bad magic byte, a short prefix, a bad index array, or a header of another length (or
        not bytes); a header's error names the header.
    """
    if header is not None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise _bad(
                ErrorCode.WIRE_BAD_HEADER_LENGTH,
                f"schema id header {header!r} must be bytes, got {type(data).__name__} (message {index})",
                index,
                0,
            )
        cache_key = (bytes(data), protobuf)
        found = _HEADER_CACHE.get(cache_key)
        if found is not None:
            return found
    where = f"schema id header {header!r}" if header is not None else "the payload prefix"
    view = data if isinstance(data, bytes) else memoryview(data).cast("B")
    magic = view[0] if len(view) else None
    if magic is not None and magic not in (0, 1):  # either form is read: say both
        raise _bad(
            ErrorCode.WIRE_BAD_MAGIC,
            f"{where} has magic byte 0x{magic:02x}, expected 0x00 (4-byte id) or 0x01 (16-byte GUID) "
            f"(message {index}, byte 0)",
            index,
            0,
            magic,
        )
    try:
        key, indexes, body = _FORMS[(magic or 0, protobuf)].unpack_indexes(view)
    except WireFormatError as exc:
        if header is None:
            raise exc.moved(index) from None
        code = (
            ErrorCode.WIRE_BAD_HEADER_LENGTH
            if exc.code in (ErrorCode.WIRE_EMPTY, ErrorCode.WIRE_SHORT_PREFIX)
            else exc.code
        )
        raise _bad(code, f"{where}: {exc.moved(index)}", index, exc.offset, exc.detail) from None
    path = (tuple(indexes) or (0,)) if protobuf else None
    if header is None:
        return WriterId(key, path, len(view) - len(body))
    if len(body):
        layout = "the message-index array" if protobuf else "nothing"
        raise _bad(
            ErrorCode.WIRE_BAD_HEADER_LENGTH,
            f"{where} is {len(view)} bytes: its id ends at byte {len(view) - len(body)} and {layout} may follow"
            f" (message {index})",
            index,
            len(view) - len(body),
            len(view),
        )
    found = WriterId(key, path, 0)
    if len(_HEADER_CACHE) >= _HEADER_CACHE_SIZE:
        _HEADER_CACHE.clear()
    _HEADER_CACHE[cache_key] = found
    return found


SubjectNameStrategy = Callable[[Any, "str | None"], "str | None"]
"""``(ctx, record_name) -> subject``: confluent-kafka's strategy signature."""


def _field_name(field: Any) -> str:
    value = getattr(field, "value", field)  # a str Enum member or a plain string
    return str(value)


def _need_ctx(ctx: Any, strategy: str) -> None:
    if ctx is None:
        raise ValueError(f"{strategy} needs a SerializationContext (the topic); use record_subject_name_strategy")


def topic_subject_name_strategy(ctx: Any, record_name: str | None) -> str | None:
    """``{topic}-key`` or ``{topic}-value`` (TopicNameStrategy, the default)."""
    _need_ctx(ctx, "topic_subject_name_strategy")
    return f"{ctx.topic}-{_field_name(ctx.field)}"


def topic_record_subject_name_strategy(ctx: Any, record_name: str | None) -> str | None:
    """``{topic}-{record full name}`` (TopicRecordNameStrategy); None without a record name."""
    _need_ctx(ctx, "topic_record_subject_name_strategy")
    return None if record_name is None else f"{ctx.topic}-{record_name}"


def record_subject_name_strategy(ctx: Any, record_name: str | None) -> str | None:
    """``{record full name}`` (RecordNameStrategy); needs no context."""
    return record_name


STRATEGY_TYPES: dict[str, SubjectNameStrategy] = {
    "TOPIC": topic_subject_name_strategy,
    "RECORD": record_subject_name_strategy,
    "TOPIC_RECORD": topic_record_subject_name_strategy,
}


def resolve_strategy(strategy: Any, strategy_type: Any) -> SubjectNameStrategy:
    """The strategy the ``subject.name.strategy`` / ``subject.name.strategy.type`` settings select."""
    if strategy is not None:
        if not callable(strategy):
            raise ValueError("subject.name.strategy must be callable")
        return strategy  # type: ignore[no-any-return]
    if strategy_type is None:
        return topic_subject_name_strategy
    name = str(getattr(strategy_type, "value", strategy_type)).upper()
    if name not in STRATEGY_TYPES:
        raise ValueError(
            f"subject.name.strategy.type {strategy_type!r} is not supported; use one of {sorted(STRATEGY_TYPES)}"
        )
    return STRATEGY_TYPES[name]


def latest_subject(strategy: SubjectNameStrategy, ctx: Any, writer_name: Callable[[], str | None]) -> str | None:
    """The subject whose latest version a deserializer with ``use.latest.version`` reads as,
    found in confluent-kafka's order: none without a context (the message's own schema is read);
    else the strategy given no record name; else, when that gives none (the record strategies),
    the strategy given the name of the message's writer schema (``writer_name()``, fetched only then).
    """
    if ctx is None:
        return None
    subject = strategy(ctx, None)
    if subject is None:
        name = writer_name()
        if name is not None:
            subject = strategy(ctx, name)
    return subject


def normalized(text: str) -> str:
    """``text`` in this package's normal form (names resolved, attributes in one order)."""
    return json.dumps(to_json(parse(text)), separators=(",", ":"))


class SubjectRegistry(Protocol):
    """The registry calls a serializer makes, whatever the client."""

    def register(self, subject: str, text: str, normalize: bool) -> int:
        """Register ``text`` under ``subject`` (or find it there); its id."""
        ...

    def lookup(self, subject: str, text: str, normalize: bool) -> int:
        """The id of ``text`` as registered under ``subject``; raises when it is not."""
        ...

    def latest(self, subject: str) -> tuple[int, str]:
        """``(id, text)`` of the newest version of ``subject``."""
        ...

    def schema(self, schema_id: int) -> str:
        """The text of schema ``schema_id``."""
        ...


class _OwnRegistry:
    """This package's clients (:class:`~pulsar_codec.registry.Registry`)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def register(self, subject: str, text: str, normalize: bool) -> int:
        return int(self.client.register(subject, normalized(text) if normalize else text))

    def lookup(self, subject: str, text: str, normalize: bool) -> int:
        return int(self.client.lookup(subject, normalized(text) if normalize else text).id)

    def latest(self, subject: str) -> tuple[int, str]:
        found = self.client.get_latest(subject)
        return int(found.id), str(found.schema)

    def schema(self, schema_id: int) -> str:
        return str(self.client.get_schema(schema_id).schema)


class _ConfluentKafkaRegistry:
    """confluent-kafka's ``SchemaRegistryClient`` (normalization is the registry's own)."""

    def __init__(self, client: Any) -> None:
        from confluent_kafka.schema_registry import Schema

        self.client = client
        self._schema = Schema

    def register(self, subject: str, text: str, normalize: bool) -> int:
        return int(self.client.register_schema(subject, self._schema(text, "AVRO"), normalize_schemas=normalize))

    def lookup(self, subject: str, text: str, normalize: bool) -> int:
        found = self.client.lookup_schema(subject, self._schema(text, "AVRO"), normalize_schemas=normalize)
        return int(found.schema_id)

    def latest(self, subject: str) -> tuple[int, str]:
        found = self.client.get_latest_version(subject)
        return int(found.schema_id), str(found.schema.schema_str)

    def schema(self, schema_id: int) -> str:
        return str(self.client.get_schema(schema_id).schema_str)


def client_of(registry: Any) -> Any:
    """A registry client for ``registry``: a client as it is; a RegistryConfig, URL or path built."""
    from ..registry.config import RegistryConfig

    if isinstance(registry, (str, os.PathLike)):
        registry = RegistryConfig.of(os.fspath(registry))
    if isinstance(registry, RegistryConfig):
        return registry.build()
    return registry


def subject_registry(client: Any) -> SubjectRegistry:
    """Wrap a client (this package's or confluent-kafka's) for the serializer's calls."""
    if callable(getattr(client, "register_schema", None)) and callable(getattr(client, "get_latest_version", None)):
        return _ConfluentKafkaRegistry(client)
    for method in ("register", "lookup", "get_latest", "get_schema"):
        if not callable(getattr(client, method, None)):
            raise TypeError(
                f"registry {type(client).__name__} has no {method}(): pass a pulsar_codec registry client, "
                "a RegistryConfig, a URL or path, or confluent-kafka's SchemaRegistryClient"
            )
    return _OwnRegistry(client)
