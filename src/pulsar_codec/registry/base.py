"""The registry interface shared by the embedded SQLite registry and the HTTP client."""

from __future__ import annotations

import abc
import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from ..compat import CompatibilityResult, Strategy
from ..errors import RegistryError, SchemaError, SchemaNotFoundError

__all__ = [
    "DEFAULT_COMPATIBILITY",
    "SCHEMA_TYPES",
    "RegisteredSchema",
    "Registry",
    "ErrorCodes",
    "SchemaReference",
    "confluent_guid",
    "not_found",
    "parse_guid",
    "parse_version",
    "references_of",
    "schema_text",
    "soft_delete_error",
]

SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")
DEFAULT_COMPATIBILITY = Strategy.BACKWARD


class ErrorCodes:
    """Confluent Schema Registry error codes (the ``error_code`` of an error body)."""

    SUBJECT_NOT_FOUND = 40401
    VERSION_NOT_FOUND = 40402
    SCHEMA_NOT_FOUND = 40403
    SUBJECT_SOFT_DELETED = 40404
    SUBJECT_NOT_SOFT_DELETED = 40405
    VERSION_SOFT_DELETED = 40406
    VERSION_NOT_SOFT_DELETED = 40407
    SUBJECT_LEVEL_CONFIG_NOT_FOUND = 40408
    INCOMPATIBLE_SCHEMA = 409
    INVALID_SCHEMA = 42201
    INVALID_VERSION = 42202
    INVALID_COMPATIBILITY_LEVEL = 42203
    REFERENCE_EXISTS = 42206
    STORE_ERROR = 50001


def not_found(message: str, error_code: int) -> SchemaNotFoundError:
    """A :class:`SchemaNotFoundError` carrying the Confluent error code (40401, 40402 or 40403)
    and HTTP status 404, as the registry's other errors carry theirs."""
    exc = SchemaNotFoundError(message)
    exc.error_code = error_code
    exc.status = 404
    return exc


def soft_delete_error(message: str, error_code: int) -> RegistryError:
    """The 4040x errors about the order of soft and permanent deletes (HTTP 404 in Confluent)."""
    return RegistryError(message, status=404, error_code=error_code)


def schema_text(schema: Any) -> str:
    """Schema text from a str, bytes, dict/list (serialised as JSON) or an object with ``.schema``."""
    if isinstance(schema, RegisteredSchema):
        return schema.schema
    if isinstance(schema, (bytes, bytearray, memoryview)):
        return bytes(schema).decode("utf-8")
    if isinstance(schema, str):
        return schema
    if isinstance(schema, (dict, list)):
        return json.dumps(schema, separators=(",", ":"))
    inner = getattr(schema, "schema_str", None) or getattr(schema, "schema", None)
    if isinstance(inner, (str, bytes)):
        return schema_text(inner)
    raise TypeError(f"cannot read a schema from {type(schema).__name__}")


@dataclass(frozen=True)
class SchemaReference:
    """A schema reference: another registered schema this one uses (a Protobuf import, a JSON
    Schema ``$ref`` document), named as the referring schema names it.

    Attributes
    ----------
    name : str
        The name the referring schema uses (the import path ``common/money.proto``, the ``$ref``).
    subject : str
        The subject holding the referenced schema.
    version : int
        Its version; ``-1`` (only when registering) means the subject's latest version, which the
        registry stores in its place, as Confluent's does.
    """

    name: str
    subject: str
    version: int

    def to_dict(self) -> dict[str, Any]:
        """The Confluent REST form, ``{"name", "subject", "version"}``."""
        return {"name": self.name, "subject": self.subject, "version": self.version}


def _reference(ref: Any) -> SchemaReference:
    if isinstance(ref, SchemaReference):
        return ref
    if isinstance(ref, Mapping):
        name, subject, version = ref.get("name"), ref.get("subject"), ref.get("version")
    elif isinstance(ref, tuple) and len(ref) == 3:
        name, subject, version = ref
    else:  # confluent-kafka's SchemaReference and other objects with the three attributes
        name, subject, version = (getattr(ref, a, None) for a in ("name", "subject", "version"))
    if isinstance(version, str) and version.strip().lower() == "latest":
        version = -1
    elif isinstance(version, str) and version.strip().lstrip("-").isdigit():
        version = int(version)
    if (
        not isinstance(name, str)
        or not name
        or not isinstance(subject, str)
        or not subject
        or isinstance(version, bool)
        or not isinstance(version, int)
        or not (version == -1 or 1 <= version <= 2**31 - 1)
    ):
        raise SchemaError(f"Invalid reference: {ref!r} (a reference needs a name, a subject and a version)")
    return SchemaReference(name, subject, version)


def references_of(references: Iterable[Any] | None) -> tuple[SchemaReference, ...]:
    """Schema references as :class:`SchemaReference` s, from this class, dicts with ``name``,
    ``subject`` and ``version`` (the REST form), confluent-kafka ``SchemaReference`` objects or
    ``(name, subject, version)`` tuples; ``version`` ``"latest"`` is ``-1``.

    Raises
    ------
    SchemaError
        A reference without a name or subject, or with a version that is not a positive int or
        -1 (Confluent's "Invalid reference", error 42201).
    """
    if references is None:
        return ()
    if isinstance(references, (str, bytes, Mapping)):
        raise SchemaError("references must be a list of references")
    return tuple(_reference(r) for r in references)


def confluent_guid(schema: str, references: Iterable[SchemaReference] = ()) -> uuid.UUID:
    """A schema's GUID as Confluent's registry derives it: the MD5 digest of the schema text
    (UTF-8), then of each reference's name, subject and version (a 4-byte big-endian int), in
    order, read as a UUID (most significant byte first).

    Confluent hashes the text it stores (its canonical form of the schema); the embedded registry
    hashes the text it stores (the first text registered for the schema), so the same text with
    the same references has the same GUID in both.
    """
    digest = hashlib.md5(schema.encode("utf-8"), usedforsecurity=False)
    for ref in references:
        digest.update(ref.name.encode("utf-8"))
        digest.update(ref.subject.encode("utf-8"))
        digest.update(int(ref.version).to_bytes(4, "big", signed=True))
    return uuid.UUID(bytes=digest.digest())


def parse_guid(guid: Any) -> uuid.UUID:
    """A GUID from a ``uuid.UUID``, its text (with or without dashes) or its 16 bytes; anything
    else is an unknown schema (SchemaNotFoundError, 40403), as Confluent answers a malformed one."""
    if isinstance(guid, uuid.UUID):
        return guid
    try:
        if isinstance(guid, (bytes, bytearray, memoryview)) and len(guid) == 16:
            return uuid.UUID(bytes=bytes(guid))
        if isinstance(guid, str):
            return uuid.UUID(guid.strip())
    except ValueError:
        pass
    shown = str(guid) if len(str(guid)) <= 40 else str(guid)[:40] + "..."
    raise not_found(f"Schema {shown} not found", ErrorCodes.SCHEMA_NOT_FOUND)


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as a registry knows it.

    Attributes
    ----------
    id : int
        Global schema id (the number in the wire prefix).
    schema : str
        Schema text.
    schema_type : str
        ``"AVRO"``, ``"JSON"`` or ``"PROTOBUF"``.
    subject, version : str or None, int or None
        Where it was found, when the lookup was by subject.
    references : tuple of SchemaReference
        The schemas this one refers to (empty for a self-contained schema).
    guid : str or None
        The schema's GUID (Confluent's ``guid``, what the ``01`` wire prefix carries), when the
        registry gives one. Derived from the text and the references, so not compared.
    """

    id: int
    schema: str
    schema_type: str = "AVRO"
    subject: str | None = None
    version: int | None = None
    references: tuple[SchemaReference, ...] = ()
    guid: str | None = field(default=None, compare=False)

    @property
    def schema_id(self) -> int:
        """Same as :attr:`id` (confluent-kafka's name)."""
        return self.id

    @property
    def schema_str(self) -> str:
        """Same as :attr:`schema` (confluent-kafka's name)."""
        return self.schema


class Registry(abc.ABC):
    """Operations every registry offers (the embedded one and the HTTP client).

    Unknown ids, subjects and versions raise :class:`~pulsar_codec.errors.SchemaNotFoundError`; a
    schema that breaks the subject's compatibility level raises
    :class:`~pulsar_codec.errors.IncompatibleSchemaError` with the reasons; a malformed schema
    raises :class:`~pulsar_codec.errors.SchemaError`; storage or transport failures raise
    :class:`~pulsar_codec.errors.RegistryError`. ``version`` arguments accept an int or
    ``"latest"`` (``-1`` means latest too).
    """

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as its ``config`` (a :class:`~pulsar_codec.registry.RegistryConfig`): unpickling
        opens a client of its own, as a Spark executor or another process needs. An in-memory
        registry refuses, since its schemas exist in this process only."""
        config = getattr(self, "config", None)
        if config is None:
            raise TypeError(f"{type(self).__name__} has no RegistryConfig to travel as; pass a RegistryConfig")
        if config.is_memory:
            raise TypeError(
                "an in-memory LocalRegistry cannot be pickled: its schemas live in this process only "
                "(use a registry file or a registry URL)"
            )
        # a registry opened without create (read-only commands) must not create a file elsewhere
        return (_rebuild, (config, bool(getattr(self, "_create", True))))

    def register(self, subject: str, schema: Any, schema_type: str = "AVRO", references: Any = None) -> int:
        """Register ``schema`` under ``subject`` (after the compatibility check) and return its id.

        A schema already live under the subject returns its id without a new version.
        ``references`` lists the registered schemas it refers to (see :func:`references_of`): a
        reference to a subject or version that does not exist is a SchemaError, and the same text
        with other references is another schema (another id).
        """
        return self.register_full(subject, schema, schema_type, references).id

    @abc.abstractmethod
    def register_full(
        self, subject: str, schema: Any, schema_type: str = "AVRO", references: Any = None
    ) -> RegisteredSchema:
        """:meth:`register`, answering with the registered version: id, subject, version,
        references and GUID (Confluent's full register answer)."""

    @abc.abstractmethod
    def get_schema(self, schema_id: int) -> RegisteredSchema:
        """The schema with this global id (soft-deleted versions keep their ids readable)."""

    @abc.abstractmethod
    def get_schema_by_guid(self, guid: Any) -> RegisteredSchema:
        """The schema with this GUID (a ``uuid.UUID`` or its text), as ``GET /schemas/guids/{guid}``."""

    @abc.abstractmethod
    def get_schema_versions(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        """The (subject, version) pairs that use this schema id."""

    @abc.abstractmethod
    def get_version(self, subject: str, version: int | str = "latest", deleted: bool = False) -> RegisteredSchema:
        """One version of a subject."""

    def get_latest(self, subject: str) -> RegisteredSchema:
        """The newest live version of a subject."""
        return self.get_version(subject, "latest")

    @abc.abstractmethod
    def lookup(
        self, subject: str, schema: Any, schema_type: str = "AVRO", deleted: bool = False, references: Any = None
    ) -> RegisteredSchema:
        """The version of ``subject`` holding ``schema`` with these ``references`` (compared by
        canonical form)."""

    @abc.abstractmethod
    def list_subjects(self, deleted: bool = False) -> list[str]:
        """Subject names, sorted; soft-deleted subjects only with ``deleted=True``."""

    @abc.abstractmethod
    def list_versions(self, subject: str, deleted: bool = False) -> list[int]:
        """Version numbers of a subject, ascending."""

    @abc.abstractmethod
    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """Soft-delete every live version of a subject, or (``permanent=True``, after a soft
        delete) remove them for good. Returns the versions deleted."""

    @abc.abstractmethod
    def delete_version(self, subject: str, version: int | str, permanent: bool = False) -> int:
        """Soft-delete one version, or (``permanent=True``, after a soft delete) remove it."""

    @abc.abstractmethod
    def check_compatibility(
        self,
        subject: str,
        schema: Any,
        version: int | str | None = "latest",
        schema_type: str = "AVRO",
        references: Any = None,
    ) -> CompatibilityResult:
        """Check ``schema`` (with its ``references``) against one version of a subject (``None``:
        every version the subject's level asks for) under the subject's compatibility level."""

    @abc.abstractmethod
    def get_compatibility(self, subject: str | None = None) -> str:
        """The subject's level if one is set, else the global level."""

    @abc.abstractmethod
    def set_compatibility(self, level: Strategy | str, subject: str | None = None) -> str:
        """Set the global level, or one subject's."""

    @abc.abstractmethod
    def delete_compatibility(self, subject: str) -> None:
        """Remove a subject's level so the global one applies."""

    def close(self) -> None:  # noqa: B027 - not abstract: a registry without connections has nothing to release
        """Release connections; the registry is unusable afterwards."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


def parse_version(version: int | str) -> int | None:
    """``"latest"`` / ``-1`` -> None, a positive number (int or digits) -> int; else SchemaNotFoundError."""
    if isinstance(version, str):
        text = version.strip().lower()
        if text == "latest":
            return None
        try:
            version = int(text)
        except ValueError:
            raise RegistryError(
                f"The specified version '{version}' is not a valid version id. Allowed values are between "
                '[1, 2^31-1] and the string "latest"',
                status=422,
                error_code=ErrorCodes.INVALID_VERSION,
            ) from None
    if isinstance(version, bool) or not isinstance(version, int):
        raise TypeError(f"version must be an int or 'latest', not {type(version).__name__}")
    if version == -1:
        return None
    if version < 1 or version > 2**31 - 1:
        raise RegistryError(
            f"The specified version '{version}' is not a valid version id. Allowed values are between "
            '[1, 2^31-1] and the string "latest"',
            status=422,
            error_code=ErrorCodes.INVALID_VERSION,
        )
    return version


def _rebuild(config: Any, create: bool) -> Registry:
    """Unpickle a registry client: a new client from its config (see ``Registry.__reduce__``)."""
    built: Registry = config.build(create=create)
    return built
