"""Subjects: the context confluent-kafka hands a serde, naming strategies, and registry calls by subject.

The serdes accept this package's registry clients and confluent-kafka's ``SchemaRegistryClient``;
:func:`subject_registry` wraps either behind the four calls a serializer makes.

Where a message's schema id travels (prefix or header) is in :mod:`._ids`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from ..formats.avro.schema import parse, to_json

__all__ = [
    "MessageField",
    "SerializationContext",
    "SubjectRegistry",
    "client_of",
    "latest_subject",
    "record_subject_name_strategy",
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


def _is_confluent_kafka_client(client: Any) -> bool:
    return callable(getattr(client, "register_schema", None)) and not callable(getattr(client, "register_full", None))


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
