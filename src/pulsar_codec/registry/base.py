"""The registry interface shared by the embedded SQLite registry and the HTTP client."""

from __future__ import annotations

import abc
import json
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from ..compat import CompatibilityResult, Strategy
from ..errors import RegistryError, SchemaNotFoundError

__all__ = [
    "DEFAULT_COMPATIBILITY",
    "SCHEMA_TYPES",
    "RegisteredSchema",
    "Registry",
    "ErrorCodes",
    "not_found",
    "parse_version",
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
    STORE_ERROR = 50001


def not_found(message: str, error_code: int) -> SchemaNotFoundError:
    """A :class:`SchemaNotFoundError` carrying the Confluent error code (40401, 40402 or 40403)."""
    exc = SchemaNotFoundError(message)
    exc.error_code = error_code
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
    """

    id: int
    schema: str
    schema_type: str = "AVRO"
    subject: str | None = None
    version: int | None = None

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

    @abc.abstractmethod
    def register(self, subject: str, schema: Any, schema_type: str = "AVRO") -> int:
        """Register ``schema`` under ``subject`` (after the compatibility check) and return its id.

        A schema already live under the subject returns its id without a new version.
        """

    @abc.abstractmethod
    def get_schema(self, schema_id: int) -> RegisteredSchema:
        """The schema with this global id (soft-deleted versions keep their ids readable)."""

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
    def lookup(self, subject: str, schema: Any, schema_type: str = "AVRO", deleted: bool = False) -> RegisteredSchema:
        """The version of ``subject`` holding ``schema`` (compared by canonical form)."""

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
        self, subject: str, schema: Any, version: int | str | None = "latest", schema_type: str = "AVRO"
    ) -> CompatibilityResult:
        """Check ``schema`` against one version of a subject (``None``: every version the
        subject's level asks for) under the subject's compatibility level."""

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
