"""Subjects: Confluent's subject name strategies, and the registry settings of one topic.

:class:`ProviderSettings` is what every external schema reads its registry, framing and subject
from; :class:`~pulsar_codec.pulsar.external.SchemaInfoProvider` adds the schema-making methods on
top. :class:`ProviderSource` marks objects that hand out providers per topic (the factory).
"""

from __future__ import annotations

import abc
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from ... import wire
from ...errors import SchemaError
from .ids import external_protocol

__all__ = [
    "SUBJECT_NAME_STRATEGIES",
    "ProviderSettings",
    "ProviderSource",
    "SubjectNameStrategy",
    "local_topic_name",
    "record_name_strategy",
    "subject_name_strategy",
    "topic_name_strategy",
    "topic_record_name_strategy",
    "warn_fast_is_ignored",
]

SubjectNameStrategy = Callable[[str, str | None, bool], str]
"""``(topic, record_name, is_key) -> subject``."""

TOPIC_FORMS = ("full", "local")


def local_topic_name(topic: str) -> str:
    """The local name of a Pulsar topic: ``persistent://public/default/orders`` -> ``orders``."""
    text = str(topic)
    if "://" in text:
        text = text.split("://", 1)[1]
    return text.rsplit("/", 1)[-1]


def topic_name_strategy(topic: str, record_name: str | None, is_key: bool) -> str:
    """Confluent's TopicNameStrategy: ``<topic>-key`` or ``<topic>-value``."""
    return f"{topic}-{'key' if is_key else 'value'}"


def record_name_strategy(topic: str, record_name: str | None, is_key: bool) -> str:
    """Confluent's RecordNameStrategy: the fully qualified record name."""
    if not record_name:
        raise SchemaError(
            "RecordNameStrategy needs a named schema (an Avro record, enum or fixed; a JSON schema with a title)"
        )
    return record_name


def topic_record_name_strategy(topic: str, record_name: str | None, is_key: bool) -> str:
    """Confluent's TopicRecordNameStrategy: ``<topic>-<fully qualified record name>``."""
    return f"{topic}-{record_name_strategy(topic, record_name, is_key)}"


SUBJECT_NAME_STRATEGIES: dict[str, SubjectNameStrategy] = {
    "topic": topic_name_strategy,
    "record": record_name_strategy,
    "topic_record": topic_record_name_strategy,
}
"""The strategies by their short names."""

_STRATEGY_ALIASES = {
    "topicnamestrategy": "topic",
    "topic_name": "topic",
    "recordnamestrategy": "record",
    "record_name": "record",
    "topicrecordnamestrategy": "topic_record",
    "topic_record_name": "topic_record",
}


def subject_name_strategy(strategy: str | SubjectNameStrategy) -> SubjectNameStrategy:
    """Resolve a strategy: a callable ``(topic, record_name, is_key) -> subject``, or a name:
    ``"topic"`` / ``"TopicNameStrategy"``, ``"record"`` / ``"RecordNameStrategy"``,
    ``"topic_record"`` / ``"TopicRecordNameStrategy"`` (a Java class name with its package works too).

    Raises
    ------
    ValueError
        An unknown name.
    """
    if callable(strategy):
        return strategy
    key = str(strategy).rsplit(".", 1)[-1].strip().lower().replace("-", "_")
    key = _STRATEGY_ALIASES.get(key, key)
    try:
        return SUBJECT_NAME_STRATEGIES[key]
    except KeyError:
        raise ValueError(
            f"unknown subject name strategy {strategy!r}; use one of {sorted(SUBJECT_NAME_STRATEGIES)} or a callable"
        ) from None


_resolve_strategy = subject_name_strategy  # the parameter of the same name shadows it below


def check_topic_form(topic_in_subject: str) -> str:
    """``topic_in_subject`` when it is ``"full"`` or ``"local"``; ValueError otherwise."""
    if topic_in_subject not in TOPIC_FORMS:
        raise ValueError(f"topic_in_subject must be one of {TOPIC_FORMS}, got {topic_in_subject!r}")
    return topic_in_subject


def warn_fast_is_ignored(fast: bool | None, stacklevel: int = 3) -> None:
    """Say once per call site that ``fast=`` no longer chooses a decode path (all messages run the
    compiled plan, strictly checked)."""
    if fast is not None:
        warnings.warn(
            "fast= is deprecated and ignored: every message is decoded by the compiled Avro plan",
            DeprecationWarning,
            stacklevel=stacklevel,
        )


class ProviderSettings:
    """The registry configuration for one topic, as external schemas read it.

    Attributes
    ----------
    topic : str or None
    registry : Registry
        Shared by every provider of a factory.
    protocol : wire.Protocol
    framed, auto_register, use_latest : bool
        Defaults for the schemas made from this provider.
    strategy : callable
        The subject name strategy, ``(topic, record_name, is_key) -> subject``.
    topic_in_subject : {"full", "local"}
        Which form of the topic name goes into subjects (``local``: the part after the last ``/``).
    """

    is_external = True

    def __init__(
        self,
        topic: str | None,
        registry: Any,
        *,
        protocol: wire.Protocol | str = wire.CONFLUENT,
        framed: bool = True,
        subject_name_strategy: str | SubjectNameStrategy = "topic",
        topic_in_subject: str = "full",
        auto_register: bool = True,
        use_latest: bool = False,
        fast: bool | None = None,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        warn_fast_is_ignored(fast)
        self.topic = topic
        self.registry = registry
        self.protocol = external_protocol(protocol)
        self.framed = bool(framed)
        self.strategy = _resolve_strategy(subject_name_strategy)
        self.topic_in_subject = check_topic_form(topic_in_subject)
        self.auto_register = bool(auto_register)
        self.use_latest = bool(use_latest)
        self._configs = dict(configs or {})

    def get_configs(self) -> dict[str, str]:
        """The registry settings as strings (Java ``SchemaInfoProvider.getConfigs``); no secrets."""
        out = dict(self._configs)
        out.update(
            {
                "topic": str(self.topic),
                "wire.protocol": self.protocol.name,
                "framed": str(self.framed).lower(),
                "subject.name.strategy": getattr(self.strategy, "__name__", repr(self.strategy)),
                "auto.register.schemas": str(self.auto_register).lower(),
                "use.latest.version": str(self.use_latest).lower(),
            }
        )
        return out

    def subject(self, record_name: str | None = None, is_key: bool = False, topic: str | None = None) -> str:
        """The subject for a schema of this topic (or of ``topic``).

        Raises
        ------
        ValueError
            Neither this provider nor the call names a topic.
        """
        name = self.topic if topic is None else topic
        if name is None:
            raise ValueError("no topic: pass one to encode() or create the schema for a topic")
        if self.topic_in_subject == "local":
            name = local_topic_name(name)
        return self.strategy(str(name), record_name, bool(is_key))

    def options(self, **overrides: Any) -> dict[str, Any]:
        """The schema defaults (``protocol``, ``framed``, ``auto_register``, ``use_latest``), with
        the ``overrides`` that are not None."""
        opts: dict[str, Any] = {
            "protocol": self.protocol,
            "framed": self.framed,
            "auto_register": self.auto_register,
            "use_latest": self.use_latest,
        }
        opts.update({k: v for k, v in overrides.items() if v is not None})
        return opts

    def __repr__(self) -> str:
        return f"{type(self).__name__}(topic={self.topic!r}, registry={self.registry!r}, protocol={self.protocol.name})"


class ProviderSource(abc.ABC):
    """Something that hands out one :class:`ProviderSettings` per topic (the provider factory)."""

    @abc.abstractmethod
    def of(self, topic: str) -> ProviderSettings:
        """The provider of ``topic``."""


def provider_of(target: Any, topic: str | None) -> ProviderSettings:
    """The provider a schema made from ``target`` uses: a provider as it is (its topic must match
    ``topic``), a factory's provider of ``topic``, or default settings around a bare registry.

    Raises
    ------
    ValueError
        A provider of another topic, or a factory without a topic.
    """
    if isinstance(target, ProviderSettings):
        if topic is not None and topic != target.topic:
            raise ValueError(f"topic {topic!r} differs from the provider's topic {target.topic!r}")
        return target
    if isinstance(target, ProviderSource):
        if topic is None:
            raise ValueError("a factory needs a topic; use factory.avro_schema(topic, ...)")
        return target.of(topic)
    return ProviderSettings(topic, target)
