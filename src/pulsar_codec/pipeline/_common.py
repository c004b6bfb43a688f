"""What the decoder and the encoder share: a parsed schema with its cache key, and the subject
lookups both make (a subject's latest version, the registry's only subject, an id by schema)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import SchemaError, SchemaNotFoundError
from ..formats.base import PayloadFormat
from ..registry.lookup import FetchedSchema

DEFAULT_CACHE_SIZE = 256


@dataclass(frozen=True)
class ParsedSchema:
    """A parsed schema and what the caches need of it."""

    fmt: PayloadFormat
    model: Any
    key: str


def latest_version(registry: Any, subject: str) -> tuple[Any, FetchedSchema]:
    """The id and schema of ``subject``'s latest version, from this package's registries
    (``get_latest``) or confluent-kafka's client (``get_latest_version``)."""
    get_latest = getattr(registry, "get_latest", None)
    if callable(get_latest):
        found = get_latest(subject)
        references = tuple(getattr(found, "references", None) or ())
        return found.id, FetchedSchema(found.schema, found.schema_type, references)
    get_latest_version = getattr(registry, "get_latest_version", None)
    if callable(get_latest_version):
        try:
            found = get_latest_version(subject)
        except Exception as exc:  # confluent-kafka's SchemaRegistryError: its "not found" is ours
            if getattr(exc, "http_status_code", None) == 404:
                raise SchemaNotFoundError(f"subject {subject!r} not found ({exc})") from exc
            raise
        schema = found.schema
        kind = getattr(schema, "schema_type", None)
        references = tuple(getattr(schema, "references", None) or ())
        return found.schema_id, FetchedSchema(schema.schema_str, kind.upper() if kind else None, references)
    raise TypeError(f"the registry cannot list a subject's versions ({type(registry).__name__}); pass reader_schema")


def lookup_id(registry: Any, subject: str, text: str, schema_type: str) -> Any:
    """The id ``subject`` holds ``text`` under, without registering (SchemaNotFoundError if none)."""
    lookup = getattr(registry, "lookup", None)
    if callable(lookup):
        return lookup(subject, text, schema_type).id
    lookup_schema = getattr(registry, "lookup_schema", None)
    if callable(lookup_schema):  # confluent-kafka's client
        from confluent_kafka.schema_registry import Schema

        return lookup_schema(subject, Schema(text, schema_type)).schema_id
    raise TypeError(f"the registry cannot look a schema up by subject ({type(registry).__name__})")


def _subject_name(subject: str) -> str:
    """A record name made from a subject (``orders-value`` -> ``orders``)."""
    base = subject.removesuffix("-value").removesuffix("-key")
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "Record"
    return "_" + name if name[0].isdigit() else name


def _latest_or_none(registry: Any, subject: str) -> FetchedSchema | None:
    """``subject``'s latest version, or None (no such subject, a registry that cannot list one)."""
    if registry is None or isinstance(registry, Mapping):
        return None
    try:
        return latest_version(registry, subject)[1]
    except (SchemaNotFoundError, TypeError):
        return None
    except Exception as exc:  # confluent-kafka's SchemaRegistryError for an unknown subject
        if getattr(exc, "http_status_code", None) != 404:
            raise
        return None


def subject_format(registry: Any, subject: str | None) -> str | None:
    """The format (registry ``schemaType``) of ``subject``'s latest version, or None where there is
    none to ask: no subject, no such subject, a Mapping registry. What an encoder given no
    ``format`` writes: a subject holds versions of one format."""
    fetched = None if subject is None else _latest_or_none(registry, subject)
    return None if fetched is None else (fetched.schema_type or "AVRO").upper()


def _latest_model(registry: Any, subject: str, fmt: PayloadFormat) -> Any:
    """``subject``'s latest schema parsed, or None (no such subject, another format, no registry)."""
    fetched = _latest_or_none(registry, subject)
    if fetched is None or (fetched.schema_type or "AVRO").upper() != fmt.name:
        return None
    try:
        return fmt.parse(fetched.schema, fetched.references or None)
    except (SchemaError, TypeError):
        return None


@dataclass(frozen=True)
class SubjectShape:
    """What a schema derived from Arrow for a subject takes from the subject's latest version.

    Attributes
    ----------
    name : str
        The latest record's full name (so a derived version stays compatible with it), else a name
        made from the subject (``orders-value`` -> ``orders``), ``Record`` without a subject.
    nullable : frozenset of str
        The top-level fields the latest version lets be null: a derived version keeps them
        nullable even when the data's schema says they never are (Spark's ``lit`` and ``range``
        columns, an Arrow field declared non-null), since a reader that refuses null cannot read
        the versions before it.
    """

    name: str
    nullable: frozenset[str] = frozenset()

    @classmethod
    def of(cls, registry: Any, subject: str | None, fmt: PayloadFormat) -> SubjectShape:
        """The shape of ``subject`` in ``registry`` (asked once: its latest version)."""
        if subject is None:
            return cls("Record")
        model = _latest_model(registry, subject, fmt)
        if model is None:
            return cls(_subject_name(subject))
        name = getattr(model, "name", None)
        if getattr(model, "type", None) == "record" and isinstance(name, str):
            namespace = getattr(model, "namespace", None)
            name = f"{namespace}.{name}" if namespace else name
        else:
            name = _subject_name(subject)
        nullable_fields = getattr(fmt, "nullable_fields", None)  # formats whose derivations mark nulls
        return cls(name, nullable_fields(model) if callable(nullable_fields) else frozenset())

    def derive(self, fmt: PayloadFormat, schema: Any) -> Any:
        """The writer schema model ``fmt`` derives from the Arrow schema ``schema`` under this shape."""
        if self.nullable:
            schema = pa.schema(
                [f.with_nullable(True) if f.name in self.nullable else f for f in schema], metadata=schema.metadata
            )
        return fmt.model_from_arrow(schema, name=self.name)


def lone_subject(registry: Any) -> str | None:
    """The registry's only subject, or None (several, none, or a registry that cannot list them)."""
    lister = getattr(registry, "list_subjects", None) or getattr(registry, "get_subjects", None)
    if not callable(lister):
        return None
    subjects = list(lister())
    return str(subjects[0]) if len(subjects) == 1 else None
