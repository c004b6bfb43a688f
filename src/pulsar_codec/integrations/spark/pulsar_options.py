"""Options of ``format("pulsar")``: topics (or a pattern), offsets, the registry, and the reader schema on the driver.

Spark hands a data source its options as strings; this module turns them into values once, on the
driver, so a malformed option fails the query before any task runs.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import SchemaError, SchemaNotFoundError
from ...pulsar.admin import TopicPattern, matching_topics
from ...registry import RegistryConfig
from .pulsar_offsets import EARLIEST, LATEST, decode_offset, split_partition

__all__ = [
    "SINK_HINTS",
    "SINK_OPTIONS",
    "SOURCE_OPTIONS",
    "check_names",
    "DEFAULT_TIMEOUT_MS",
    "OffsetSpec",
    "PatternTopics",
    "ReaderSetup",
    "flag",
    "full_topic",
    "check_inline_convention",
    "positive_int",
    "registry_config",
    "required",
    "resolve_reader",
    "topic_list",
    "topic_pattern",
]

DEFAULT_TIMEOUT_MS = 30_000

_log = logging.getLogger("pulsar_codec")
_SPARK_OPTIONS = frozenset({"checkpointlocation"})  # Spark hands its own streaming options to sinks too
_REGISTRY_OPTIONS = frozenset({"registry", "registry_auth", "registry_token"})
SOURCE_OPTIONS = _REGISTRY_OPTIONS | {
    "service_url",
    "topics",
    "topic",
    "topics_pattern",
    "admin_url",
    "admin_token",
    "starting_offsets",
    "ending_offsets",
    "decode",
    "reader_schema",
    "reader_subject",
    "subject",
    "format",
    "message",
    "protocol",
    "keyvalue",
    "key_encoding",
    "key_reader_schema",
    "key_subject",
    "key_format",
    "key_message",
    "inline_convention",
    "max_records_per_trigger",
    "timeout_ms",
}
"""The options ``spark.read(Stream).format("pulsar")`` reads."""
SINK_OPTIONS = _REGISTRY_OPTIONS | {
    "service_url",
    "topic",
    "subject",
    "schema",
    "format",
    "message",
    "protocol",
    "key_column",
    "keyvalue",
    "key_encoding",
    "key_schema",
    "key_subject",
    "key_format",
    "key_message",
    "use_latest",
    "auto_register",
    "dead_letter_topic",
    "timeout_ms",
}
"""The options ``df.write(Stream).format("pulsar")`` reads."""


SINK_HINTS = {
    "on_error": "a row the writer schema cannot take fails its task, unless the option dead_letter_topic"
    " names a topic for such rows",
}
"""Names of this package's Python API that the sink reads as another option, and what to do."""


def check_names(
    options: Mapping[str, str],
    known: frozenset[str],
    what: str,
    hints: Mapping[str, str] | None = None,
    other_side: tuple[frozenset[str], str] | None = None,
) -> None:
    """Refuse an option name close to one ``what`` reads (a misspelt or Kafka-style name such as
    ``startingOffsets`` would otherwise be ignored, and the query run with the default), or one
    ``hints`` explains; warn of any other name it does not read (Spark's own options, such as
    ``checkpointLocation``, pass). ``other_side``: the options of the other direction and its
    name; a message about one of those says whose option it is."""
    for name in options:
        key = str(name).lower()
        if key in known or key in _SPARK_OPTIONS:
            continue
        if hints and key in hints:
            raise ValueError(f"{what} has no option {name!r}: {hints[key]}")
        if key == "path":
            raise ValueError(f"{what} takes no path (load() / save() without an argument): give the topics as options")
        spelt = key.replace("_", "")
        near = [k for k in known if k.replace("_", "") == spelt] or difflib.get_close_matches(key, sorted(known), 1)
        whose = f"{name!r} is an option of {other_side[1]}" if other_side and key in other_side[0] else ""
        if near:
            raise ValueError(
                f"{what} has no option {name!r} (did you mean {near[0]!r}?{' ' + whose if whose else ''}); "
                f"its options: {', '.join(sorted(known))}"
            )
        _log.warning(
            "%s ignores the option %r%s; its options: %s",
            what,
            name,
            f" ({whose})" if whose else "",
            ", ".join(sorted(known)),
        )


def required(options: Mapping[str, str], name: str) -> str:
    """The value of a required option."""
    value = options.get(name)
    if value is None or not str(value).strip():
        raise ValueError(f'format("pulsar") needs the option {name!r}')
    return str(value).strip()


def check_inline_convention(options: Mapping[str, str], kv_encoding: str | None) -> str:
    """The ``inline_convention`` option (``java``, the default, or ``cpp``, any case): how a
    KeyValue INLINE length of -1 reads. Refused for a topic that is not read as INLINE."""
    from ...keyvalue import CPP, JAVA

    given = options.get("inline_convention")
    if given is None:
        return JAVA
    value = str(given).strip().lower()
    if value not in (JAVA, CPP):
        raise ValueError(f"option 'inline_convention' must be {JAVA!r} or {CPP!r}, got {given!r}")
    if kv_encoding != "INLINE":
        raise ValueError("the option 'inline_convention' applies to keyvalue=INLINE topics only")
    return value


def flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    """A boolean option (``true`` / ``false``, any case)."""
    value = options.get(name)
    if value is None:
        return default
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValueError(f"option {name!r} must be true or false, got {value!r}")


def positive_int(options: Mapping[str, str], name: str, default: int | None) -> int | None:
    """A positive integer option."""
    value = options.get(name)
    if value is None:
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number < 1:
        raise ValueError(f"option {name!r} must be a positive integer, got {value!r}")
    return number


def full_topic(name: str) -> str:
    """The full name of a topic: ``orders`` and ``public/default/orders`` are
    ``persistent://public/default/orders``."""
    name = name.strip()
    if "://" in name:
        return name
    parts = name.split("/")
    if len(parts) == 1 and parts[0]:
        return f"persistent://public/default/{name}"
    if len(parts) == 3 and all(parts):
        return f"persistent://{name}"
    raise ValueError(f"not a topic name: {name!r} (give 'topic', 'tenant/namespace/topic' or a full name)")


@dataclass(frozen=True)
class PatternTopics:
    """``topics_pattern``: the topics of a namespace that match, listed through the admin REST API.

    Picklable, with no connection of its own: the driver lists with it when a query is planned
    and, for a stream, before each micro-batch (:func:`pulsar_codec.pulsar.admin.matching_topics`).
    """

    pattern: TopicPattern
    admin_url: str
    admin_token: str | None = field(default=None, repr=False)
    timeout_ms: int = DEFAULT_TIMEOUT_MS

    def topics(self) -> tuple[str, ...]:
        """The matching topics now (full names, sorted; empty when none matches)."""
        return matching_topics(self.admin_url, self.pattern, token=self.admin_token, timeout_ms=self.timeout_ms)

    def no_match(self) -> str:
        """The message for a pattern that matches no topic."""
        return (
            f"topics_pattern {self.pattern.text!r} matches no topic of the namespace {self.pattern.namespace} "
            f"(listed at {self.admin_url})"
        )


def topic_pattern(options: Mapping[str, str]) -> PatternTopics | None:
    """The ``topics_pattern`` option with its ``admin_url`` and ``admin_token``; None without a pattern.

    Raises
    ------
    ValueError
        ``topics`` is given too, ``admin_url`` is missing, or the pattern is malformed.
    """
    text = options.get("topics_pattern")
    if text is None or not str(text).strip():
        return None
    if str(options.get("topics") or options.get("topic") or "").strip():
        raise ValueError("give the option 'topics' or the option 'topics_pattern', not both")
    admin_url = str(options.get("admin_url") or "").strip()
    if not admin_url:
        raise ValueError(
            "the option 'topics_pattern' needs the option 'admin_url' (the broker's web service, such as "
            "http://localhost:8080): the topics of a namespace are listed through Pulsar's admin REST API"
        )
    if not admin_url.lower().startswith(("http://", "https://")):
        raise ValueError(f"option 'admin_url' must be an http(s)://host:port URL, got {admin_url!r}")
    try:
        pattern = TopicPattern.parse(str(text))
    except ValueError as exc:
        raise ValueError(f"option 'topics_pattern': {exc}") from None
    return PatternTopics(
        pattern,
        admin_url,
        str(options.get("admin_token") or "").strip() or None,
        positive_int(options, "timeout_ms", DEFAULT_TIMEOUT_MS) or DEFAULT_TIMEOUT_MS,
    )


def topic_list(options: Mapping[str, str]) -> tuple[str, ...]:
    """The topics of the ``topics`` option, in full names, in the given order; or those
    ``topics_pattern`` matches now, sorted (possibly none)."""
    pattern = topic_pattern(options)
    if pattern is not None:
        return pattern.topics()
    given = options.get("topics")
    if given is not None and str(given).strip() and str(options.get("topic") or "").strip():
        raise ValueError("give the option 'topics' (or its one-topic spelling 'topic'), not both")
    if (given is None or not str(given).strip()) and str(options.get("topic") or "").strip():
        given = options.get("topic")  # the sink's spelling, and pulsar-spark's for one topic
    elif given is None or not str(given).strip():
        raise ValueError(
            "format(\"pulsar\") needs the option 'topics' (a comma list; 'topic' for one), or "
            "'topics_pattern' with 'admin_url'"
        )
    names = [full_topic(t) for t in str(given).split(",") if t.strip()]
    if not names:
        raise ValueError("option 'topics' names no topic")
    return tuple(dict.fromkeys(names))


def registry_config(options: Mapping[str, str]) -> RegistryConfig | None:
    """The registry of the ``registry`` option (an ``http(s)://`` URL or the path of an embedded
    registry's file), with ``registry_auth`` (``user:password``) or ``registry_token``."""
    where = options.get("registry")
    if not where:
        return None
    auth = options.get("registry_auth")
    pair: tuple[str, str] | None = None
    if auth:
        user, sep, password = str(auth).partition(":")
        if not sep:
            raise ValueError("option 'registry_auth' must be 'user:password'")
        pair = (user, password)
    token = options.get("registry_token") or None
    location = str(where).strip()
    if location.lower().startswith(("http://", "https://")):
        config = RegistryConfig(url=location, auth=pair, token=token)
    else:
        config = RegistryConfig(path=location, auth=pair, token=token)
    if config.is_memory:
        raise ValueError("registry ':memory:' exists only in one process; give a registry file or URL")
    return config


@dataclass(frozen=True)
class OffsetSpec:
    """``starting_offsets`` / ``ending_offsets``: ``earliest``, ``latest``, or per topic-partition.

    ``per_topic`` maps a partition's topic name, or a topic's (for all its partitions), to
    ``earliest``, ``latest`` or a message id offset; a partition it does not name takes ``default``.
    """

    default: str
    per_topic: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str | None, default: str, name: str) -> OffsetSpec:
        """Read an offsets option; a JSON object of message ids per topic-partition, or a word."""
        if text is None or not str(text).strip():
            return cls(default)
        text = str(text).strip()
        if text.lower() in (EARLIEST, LATEST):  # any case, as Spark's Kafka source takes them
            return cls(text.lower())
        try:
            found = json.loads(text)
        except json.JSONDecodeError:
            found = None
        if not isinstance(found, dict):
            raise ValueError(
                f"option {name!r} must be 'earliest', 'latest' or a JSON object of message ids per "
                f"topic-partition, got {text!r}"
            )
        pairs = []
        for topic, value in found.items():
            if not isinstance(value, str):
                raise ValueError(f"option {name!r}: the offset of {topic!r} must be a string, got {value!r}")
            if value.strip().lower() in (EARLIEST, LATEST):
                value = value.strip().lower()
            else:
                decode_offset(value)  # fails here, on the driver, for a malformed id
            pairs.append((full_topic(topic), value))
        return cls(default, tuple(pairs))

    def check_topics(self, name: str, topics: tuple[str, ...], pattern: PatternTopics | None = None) -> None:
        """Refuse offsets for a topic the query does not read (a typo would silently read the
        partition from the default instead): each must be one of ``topics`` or one of their
        partitions, or, with ``pattern``, a topic it matches."""
        for topic, _ in self.per_topic:
            base = split_partition(topic)[0]
            if pattern is not None:
                if not pattern.pattern.select([base]):
                    raise ValueError(
                        f"option {name!r} names {topic}, which topics_pattern {pattern.pattern.text!r} does not match"
                    )
            elif base not in topics:
                raise ValueError(f"option {name!r} names {topic}, which is not one of the topics read: {list(topics)}")

    def check_partitions(self, name: str, partitions: list[str]) -> None:
        """Refuse offsets for a partition the broker does not have (``orders-partition-7`` of a
        topic with 4 partitions, or ``-partition-0`` of a topic that is not partitioned): it would
        be ignored, and its partitions read from the default. ``partitions`` are those listed now;
        a partition of a topic not among them (a ``topics_pattern`` topic not created yet) passes.
        A message id given to a partitioned topic's name is refused too: an id belongs to one
        partition, and as the start or end of the others it reads a wrong range (or waits for a
        message that is not there)."""
        listed = set(partitions)
        owners: dict[str, list[str]] = {}
        for partition in partitions:
            owners.setdefault(split_partition(partition)[0], []).append(partition)
            owners.setdefault(partition, [partition])
        for topic, value in self.per_topic:
            parts = [p for p in owners.get(topic, []) if p != topic]
            if parts and value not in (EARLIEST, LATEST):
                raise ValueError(
                    f"option {name!r} gives {topic} a message id, but it is a partitioned topic and a message id "
                    f"belongs to one partition: name the partition ({parts[0]}, ...), or give the topic "
                    f"'{EARLIEST}' or '{LATEST}'"
                )
            base, index = split_partition(topic)
            if topic in listed or index < 0 or base not in owners:
                continue
            found = sorted((p for p in owners[base] if p != base), key=lambda p: split_partition(p)[1])
            has = f"its partitions are {found[0]} to {found[-1]}" if found else "it is not partitioned"
            raise ValueError(f"option {name!r} names {topic}, which the broker does not have: {has}")

    def for_partition(self, partition_topic: str) -> str:
        """The offset word or id of one partition."""
        given = dict(self.per_topic)
        if partition_topic in given:
            return given[partition_topic]
        return given.get(split_partition(partition_topic)[0], self.default)


@dataclass(frozen=True)
class ReaderSetup:
    """What the driver found in the registry for the ``value`` column.

    Attributes
    ----------
    reader_schema : str
        The schema text every message is read as (its fields are the ``value`` struct's).
    format : str or None
        The payload format (the registry's ``schemaType`` of the subject, or the ``format`` option).
    shipped : dict of id -> RegisteredSchema
        Every version of the subject, shipped to the executors with the job.
    subject : str or None
        The subject the reader schema came from.
    """

    reader_schema: str
    format: str | None
    shipped: dict[int, Any]
    subject: str | None


def _default_subject(topics: tuple[str, ...], part: str) -> str:
    if len(topics) != 1:
        options = (
            "'subject', 'reader_subject' or 'reader_schema'"
            if part == "value"
            else "'key_subject' or 'key_reader_schema'"
        )
        # no topic: a topics_pattern that matches none (yet), so no subject is named after one
        what = "several topics" if topics else "no topic (topics_pattern matches none yet)"
        raise SchemaError(f"{what}: name the schema of the {part} column with the {options} option")
    return split_partition(topics[0])[0].rsplit("/", 1)[-1] + f"-{part}"


def resolve_reader(
    options: Mapping[str, str], config: RegistryConfig, topics: tuple[str, ...], part: str = "value"
) -> ReaderSetup:
    """The reader schema of the ``value`` column (or, ``part="key"``, of a KeyValue topic's ``key``),
    resolved on the driver.

    For the value, ``reader_schema`` (schema text) wins; else the newest version of
    ``reader_subject``, of ``subject``, or of ``<topic>-value`` (the topic's local name, for a
    single topic). For the key: ``key_reader_schema``, else ``key_subject`` or ``<topic>-key``.
    Every version of that subject is shipped with the job, so the executors ask the registry only
    for ids registered later.
    """
    if part == "value":
        given = options.get("reader_schema")
        subject = options.get("reader_subject") or options.get("subject")
        fmt = options.get("format") or None
    else:
        given = options.get("key_reader_schema")
        subject = options.get("key_subject")
        fmt = options.get("key_format") or options.get("format") or None
    if not given and not subject:
        subject = _default_subject(topics, part)
    shipped: dict[int, Any] = {}
    client = config.build(create=False)
    try:
        if subject:
            try:
                versions = client.list_versions(subject)
            except SchemaNotFoundError:
                if not given:
                    raise SchemaError(
                        f"the registry has no subject {subject!r}: register the {part} schema there, or name it "
                        "with an option (see the data source's options)"
                    ) from None
                versions = []
            for version in versions:
                found = client.get_version(subject, version)
                shipped[int(found.id)] = found
        if given:
            return ReaderSetup(str(given), fmt, shipped, subject)
        newest = shipped[max(shipped, key=lambda k: shipped[k].version or 0)]
        return ReaderSetup(newest.schema, fmt or newest.schema_type, shipped, subject)
    finally:
        client.close()
