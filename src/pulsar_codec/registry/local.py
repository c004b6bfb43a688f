"""The embedded schema registry: one SQLite file, safe for several threads and processes.

Semantics follow the Confluent Schema Registry:

* ids are global and shared by every subject that registers the same schema: two schemas are the
  same when their type and :func:`pulsar_codec.compat.canonical_form` agree (so whitespace, key
  order and namespace spelling do not matter, while defaults, aliases and logical types do);
* versions count per subject from 1; registering a schema already live under the subject returns
  its id without a new version; a new version is one more than the highest version the subject
  ever had, soft-deleted ones included, and a soft-deleted version holding the same id is removed
  for good at that moment (Confluent tombstones it the same way);
* a soft delete hides versions from lists, ``latest`` and lookups (``deleted=True`` shows them) but
  keeps their ids readable, since old messages still carry them; a permanent delete is only
  allowed after a soft delete, and removes the versions (and, for a subject, its level);
* every registration is checked against the subject's live versions under its compatibility level
  (subject level, else global, else ``BACKWARD``) with :func:`pulsar_codec.compat.check_strategy`
  and the rules of the schema's format (Avro, JSON Schema, Protobuf); a format without rules has
  no content check (only ``ALWAYS_INCOMPATIBLE`` rejects it), and a change of schema type is
  incompatible;
* schema references (``[{name, subject, version}]``: the ``.proto`` files a Protobuf schema
  imports, the documents a JSON Schema ``$ref`` s) must name live versions (version ``-1``: the
  subject's latest, stored as its number); the registry resolves them, references of references
  included, to parse, compare and check the schema; the same text with other references is
  another schema (another id and GUID); a version another schema refers to cannot be deleted
  (error 42206). Avro references are checked to exist but not resolved: an Avro schema must
  stand alone;
* every schema has a GUID derived as Confluent derives it (:func:`~.base.confluent_guid`: MD5 of
  the stored text and the references); :meth:`LocalRegistry.get_schema_by_guid` reads it, and
  :meth:`LocalRegistry.get_schema` accepts a ``uuid.UUID`` too.

Opening: ``LocalRegistry(path)`` creates the file when it is missing; ``LocalRegistry(path,
create=False)`` opens an existing registry only (read-only tools use it, so a typo never leaves an
empty database behind) and raises :class:`~pulsar_codec.errors.RegistryError` when there is none.
Database failures (a locked, corrupt or foreign file) raise ``RegistryError`` naming the file.

Concurrency: each thread uses its own connection to the file, the database runs in WAL mode with a
busy timeout, and every write is one ``BEGIN IMMEDIATE`` transaction (the compatibility check
reads inside it), so concurrent registrations from threads or processes serialise, ids stay
unique and versions contiguous, and a write that fails halfway leaves nothing behind.

The SQLite file (tables, connections, transactions) is :mod:`._sqlite_store`; the schema texts
(types, fingerprints, references, compatibility) are :mod:`._local_schemas`; this module holds
what the registry means: subjects, versions, deletes and levels.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Sequence
from typing import Any

from ..compat import CompatibilityResult, Strategy
from ..errors import RegistryError, SchemaNotFoundError
from ._local_schemas import evaluate_rows, non_transitive, parse_with_references, prepare_schema
from ._sqlite_store import DEFAULT_LOCK_TIMEOUT, SQLiteStore, StoredVersion, stored_references, subject_rows
from .base import (
    DEFAULT_COMPATIBILITY,
    ErrorCodes,
    RegisteredSchema,
    Registry,
    SchemaReference,
    confluent_guid,
    not_found,
    parse_guid,
    parse_version,
    soft_delete_error,
)
from .config import RegistryConfig

__all__ = ["DEFAULT_LOCK_TIMEOUT", "LocalRegistry"]

_MAX_ID = 2**63 - 1  # SQLite's integer range: a larger id is not in any registry
_GLOBAL = ""  # config scope of the global level; subjects are never empty


def _check_subject(subject: str) -> str:
    if not isinstance(subject, str) or not subject or any(ord(c) < 32 for c in subject):
        raise RegistryError(f"invalid subject {subject!r}", status=422, error_code=ErrorCodes.INVALID_SCHEMA)
    return subject


class LocalRegistry(Registry):
    """A Confluent-style schema registry stored in a SQLite file.

    Parameters
    ----------
    path : str or os.PathLike, default ":memory:"
        Database file. ``":memory:"`` keeps everything in this object (one connection shared by
        its threads).
    timeout : float, default 30.0
        Seconds a write waits for another writer (thread or process) before failing with
        :class:`~pulsar_codec.errors.RegistryError`.
    create : bool, default True
        Create the file (and its tables) when it is missing. With ``create=False`` only an
        existing registry database opens (reads and writes work); a missing file raises
        ``RegistryError("no registry database at PATH")`` and nothing is created. Ignored for
        ``":memory:"``.

    Raises
    ------
    RegistryError
        The file cannot be opened, is not an SQLite database, or (``create=False``) is missing or
        holds no registry; the message names the file.

    Examples
    --------
    >>> reg = LocalRegistry(":memory:")
    >>> reg.register("orders-value", '{"type": "record", "name": "O", "fields": []}')
    1
    >>> reg.get_schema(1).schema_type
    'AVRO'
    """

    def __init__(
        self, path: str | os.PathLike[str] = ":memory:", *, timeout: float = DEFAULT_LOCK_TIMEOUT, create: bool = True
    ) -> None:
        self._path = os.fspath(path)
        self._timeout = float(timeout)
        self.config = RegistryConfig(path=self._path, timeout=self._timeout)  # rebuilds it elsewhere
        # opens the file (or fails naming it) and creates or upgrades the tables; see SQLiteStore
        self._store = SQLiteStore(self._path, timeout=self._timeout, create=create)
        self._create = self._store.create  # Registry.__reduce__ rebuilds a read-only client as one

    def __repr__(self) -> str:
        return f"LocalRegistry({self._path!r})"

    @property
    def path(self) -> str:
        """The database file (or ``":memory:"``)."""
        return self._path

    # ---------------------------------------------------------------------------- lifetime

    def __del__(self) -> None:
        # an abandoned registry must not leave SQLite connections behind (Python 3.13 warns on them)
        store = getattr(self, "_store", None)
        if store is not None and not store.closed:
            try:
                self.close()
            except Exception:  # noqa: BLE001 - nothing useful to do during finalisation
                pass

    def close(self) -> None:
        """Close every connection this object opened (in any thread)."""
        self._store.close()

    # ---------------------------------------------------------------------------- helpers

    @staticmethod
    def _level(conn: sqlite3.Connection, subject: str | None) -> Strategy:
        for scope in (subject, _GLOBAL) if subject else (_GLOBAL,):
            row = conn.execute("SELECT compatibility FROM config WHERE scope = ?", (scope,)).fetchone()
            if row is not None:
                return Strategy.parse(row[0])
        return DEFAULT_COMPATIBILITY

    def _schema_id(
        self,
        conn: sqlite3.Connection,
        schema_type: str,
        fingerprint: str,
        text: str,
        references: Sequence[SchemaReference] = (),
    ) -> tuple[int, str, str]:
        """(id, stored text, GUID) of the schema with this fingerprint, inserted when new."""
        row = conn.execute(
            "SELECT id, schema, guid FROM schemas WHERE schema_type = ? AND fingerprint = ?", (schema_type, fingerprint)
        ).fetchone()
        if row is not None:
            return int(row[0]), str(row[1]), str(row[2])
        guid = str(confluent_guid(text, references))
        cur = conn.execute(
            "INSERT INTO schemas (schema_type, fingerprint, schema, guid) VALUES (?, ?, ?, ?)",
            (schema_type, fingerprint, text, guid),
        )
        schema_id = cur.lastrowid
        assert schema_id is not None  # set by every successful INSERT
        conn.executemany(
            "INSERT INTO schema_refs (schema_id, position, name, subject, version) VALUES (?, ?, ?, ?, ?)",
            [(schema_id, k, r.name, r.subject, r.version) for k, r in enumerate(references)],
        )
        return schema_id, text, guid

    def _remove_deleted_duplicates(self, conn: sqlite3.Connection, subject: str, schema_id: int) -> None:
        conn.execute("DELETE FROM versions WHERE subject = ? AND schema_id = ? AND deleted = 1", (subject, schema_id))

    def _insert_version(self, conn: sqlite3.Connection, subject: str, version: int, schema_id: int) -> None:
        conn.execute(
            "INSERT INTO versions (subject, version, schema_id) VALUES (?, ?, ?)", (subject, version, schema_id)
        )

    @staticmethod
    def _registered(row: StoredVersion, subject: str) -> RegisteredSchema:
        return RegisteredSchema(
            row.schema_id, row.schema, row.schema_type, subject, row.version, row.references, row.guid
        )

    @staticmethod
    def _subject_missing(subject: str) -> SchemaNotFoundError:
        return not_found(f"Subject '{subject}' not found.", ErrorCodes.SUBJECT_NOT_FOUND)

    @staticmethod
    def _check_unreferenced(conn: sqlite3.Connection, subject: str, version: int, permanent: bool, other: bool) -> None:
        """Refuse to delete a version another schema refers to (Confluent's 42206): for a soft
        delete, a schema with a live version; for a permanent one, with any version. ``other``:
        only referrers under another subject count (deleting a whole subject)."""
        query = (
            "SELECT v.subject, v.version FROM schema_refs r JOIN versions v ON v.schema_id = r.schema_id "
            "WHERE r.subject = ? AND r.version = ?"
        )
        if not permanent:
            query += " AND v.deleted = 0"
        for referrer, _ in conn.execute(query, (subject, version)):
            if not other or referrer != subject:
                raise RegistryError(
                    f"One or more references exist to the schema {{subject={subject},version={version}}}.",
                    status=422,
                    error_code=ErrorCodes.REFERENCE_EXISTS,
                )

    # ---------------------------------------------------------------------------- operations

    def register_full(
        self, subject: str, schema: Any, schema_type: str = "AVRO", references: Any = None
    ) -> RegisteredSchema:
        """Register ``schema`` under ``subject`` and return the registered version.

        Parameters
        ----------
        subject : str
        schema : str, bytes, dict or object with ``schema_str``
        schema_type : {"AVRO", "JSON", "PROTOBUF"}
        references : sequence, optional
            The registered schemas it refers to: :class:`~.base.SchemaReference` s, dicts with
            ``name``, ``subject`` and ``version`` (``-1``: the latest), or confluent-kafka
            ``SchemaReference`` s. Stored with their version numbers.

        Returns
        -------
        RegisteredSchema
            Id, subject, version, the stored text (the first text registered for this schema),
            the references and the GUID.

        Raises
        ------
        SchemaError
            The schema is malformed or of an unsupported type, or a reference names a subject or
            version that does not exist.
        IncompatibleSchemaError
            The subject's compatibility level rejects it; ``.reasons`` says why.
        RegistryError
            The database failed (nothing was written).
        """
        _check_subject(subject)
        text, schema_type, refs, fingerprint = prepare_schema(schema, schema_type, references)
        parsed: Any = text
        with self._store.write() as conn:
            if refs:
                refs, parsed, fingerprint = parse_with_references(conn, text, schema_type, refs, deleted=False)
            rows = subject_rows(conn, subject)
            live = [r for r in rows if not r.deleted]
            for row in live:
                if row.schema_type == schema_type and row.fingerprint == fingerprint:
                    return self._registered(row, subject)
            level = self._level(conn, subject)
            result = evaluate_rows(conn, parsed, schema_type, live if level.transitive else live[-1:], level)
            result.raise_if_incompatible(
                f'Schema being registered is incompatible with an earlier schema for subject "{subject}"'
                f" ({level.value})"
            )
            schema_id, stored, guid = self._schema_id(conn, schema_type, fingerprint, text, refs)
            version = max((r.version for r in rows), default=0) + 1
            self._remove_deleted_duplicates(conn, subject, schema_id)
            self._insert_version(conn, subject, version, schema_id)
            return RegisteredSchema(schema_id, stored, schema_type, subject, version, refs, guid)

    def get_schema(self, schema_id: int | uuid.UUID) -> RegisteredSchema:
        """The schema with this global id, while some version (soft-deleted ones too) uses it; a
        ``uuid.UUID`` is looked up as a GUID (:meth:`get_schema_by_guid`)."""
        if isinstance(schema_id, uuid.UUID):
            return self.get_schema_by_guid(schema_id)
        if not 0 <= int(schema_id) <= _MAX_ID:
            raise not_found(f"Schema {schema_id} not found", ErrorCodes.SCHEMA_NOT_FOUND)
        return self._schema_where("id = ?", int(schema_id), f"Schema {schema_id} not found")

    def get_schema_by_guid(self, guid: Any) -> RegisteredSchema:
        """The schema with this GUID (a ``uuid.UUID``, its text or its 16 bytes), while some version
        (soft-deleted ones too) uses it, as Confluent's ``GET /schemas/guids/{guid}`` answers."""
        found = parse_guid(guid)
        return self._schema_where("guid = ?", str(found), f"Schema {found} not found")

    def _schema_where(self, condition: str, value: Any, missing: str) -> RegisteredSchema:
        with self._store.read() as conn:
            row = conn.execute(
                f"SELECT id, schema, schema_type, guid FROM schemas s WHERE {condition} "
                "AND EXISTS (SELECT 1 FROM versions v WHERE v.schema_id = s.id) ORDER BY id LIMIT 1",
                (value,),
            ).fetchone()
            if row is None:
                raise not_found(missing, ErrorCodes.SCHEMA_NOT_FOUND)
            refs = stored_references(conn, int(row[0]))
        return RegisteredSchema(int(row[0]), str(row[1]), str(row[2]), references=refs, guid=str(row[3]))

    def get_schema_versions(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        """The (subject, version) pairs that use this schema id, sorted."""
        if not 0 <= int(schema_id) <= _MAX_ID:
            raise not_found(f"Schema {schema_id} not found", ErrorCodes.SCHEMA_NOT_FOUND)
        with self._store.read() as conn:
            rows = conn.execute(
                "SELECT subject, version, deleted FROM versions WHERE schema_id = ? ORDER BY subject, version",
                (int(schema_id),),
            ).fetchall()
        if not rows:
            raise not_found(f"Schema {schema_id} not found", ErrorCodes.SCHEMA_NOT_FOUND)
        return [(str(s), int(v)) for s, v, d in rows if deleted or not d]

    def get_version(self, subject: str, version: int | str = "latest", deleted: bool = False) -> RegisteredSchema:
        """One version of a subject (``"latest"`` or ``-1``: the newest live one)."""
        wanted = parse_version(version)
        with self._store.read() as conn:
            rows = subject_rows(conn, subject)
        visible = [r for r in rows if deleted or not r.deleted]
        if not visible:
            raise self._subject_missing(subject)
        if wanted is None:
            live = [r for r in rows if not r.deleted] or (visible if deleted else [])
            return self._registered(live[-1], subject)
        for row in visible:
            if row.version == wanted:
                return self._registered(row, subject)
        raise not_found(f"Version {wanted} not found.", ErrorCodes.VERSION_NOT_FOUND)

    def lookup(
        self, subject: str, schema: Any, schema_type: str = "AVRO", deleted: bool = False, references: Any = None
    ) -> RegisteredSchema:
        """The newest version of ``subject`` holding ``schema`` with these ``references`` (same type,
        canonical form and references; a reference at version ``-1`` means the latest)."""
        text, schema_type, refs, fingerprint = prepare_schema(schema, schema_type, references)
        with self._store.read() as conn:
            if refs:
                _, _, fingerprint = parse_with_references(conn, text, schema_type, refs, deleted=True)
            rows = subject_rows(conn, subject)
        visible = [r for r in rows if deleted or not r.deleted]
        if not visible:
            raise self._subject_missing(subject)
        for row in reversed(visible):
            if row.schema_type == schema_type and row.fingerprint == fingerprint:
                return self._registered(row, subject)
        raise not_found("Schema not found", ErrorCodes.SCHEMA_NOT_FOUND)

    def list_subjects(self, deleted: bool = False) -> list[str]:
        """Subject names, sorted; soft-deleted subjects only with ``deleted=True``."""
        query = (
            "SELECT DISTINCT subject FROM versions" + ("" if deleted else " WHERE deleted = 0") + " ORDER BY subject"
        )
        with self._store.read() as conn:
            return [str(r[0]) for r in conn.execute(query)]

    def list_versions(self, subject: str, deleted: bool = False) -> list[int]:
        """Version numbers of a subject, ascending."""
        with self._store.read() as conn:
            rows = subject_rows(conn, subject)
        versions = [r.version for r in rows if deleted or not r.deleted]
        if not versions:
            raise self._subject_missing(subject)
        return versions

    def referenced_by(self, subject: str, version: int | str, deleted: bool = False) -> list[int]:
        """The ids of the schemas that refer to this version (with a live version; ``deleted=True``:
        soft-deleted ones too), as Confluent's ``GET /subjects/{s}/versions/{v}/referencedby``."""
        target = self.get_version(subject, version, deleted=True)
        query = (
            "SELECT DISTINCT r.schema_id FROM schema_refs r JOIN versions v ON v.schema_id = r.schema_id "
            "WHERE r.subject = ? AND r.version = ?" + ("" if deleted else " AND v.deleted = 0") + " ORDER BY 1"
        )
        with self._store.read() as conn:
            return [int(r[0]) for r in conn.execute(query, (subject, target.version))]

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """Soft-delete every live version of a subject, or (``permanent=True``, after a soft delete)
        remove them and the subject's level. Returns the versions deleted.

        A version another subject's schema refers to is not deleted (RegistryError 42206)."""
        with self._store.write() as conn:
            rows = subject_rows(conn, subject)
            if not rows:
                raise self._subject_missing(subject)
            live = [r.version for r in rows if not r.deleted]
            for version in [r.version for r in rows] if permanent else live:
                self._check_unreferenced(conn, subject, version, permanent, other=True)
            if not permanent:
                if not live:
                    raise soft_delete_error(
                        f"Subject '{subject}' was soft deleted. Set permanent=true to delete permanently",
                        ErrorCodes.SUBJECT_SOFT_DELETED,
                    )
                conn.execute("UPDATE versions SET deleted = 1 WHERE subject = ? AND deleted = 0", (subject,))
                return live
            if live:
                raise soft_delete_error(
                    f"Subject '{subject}' was not deleted first before being permanently deleted",
                    ErrorCodes.SUBJECT_NOT_SOFT_DELETED,
                )
            conn.execute("DELETE FROM versions WHERE subject = ?", (subject,))
            conn.execute("DELETE FROM config WHERE scope = ?", (subject,))
            return [r.version for r in rows]

    def delete_version(self, subject: str, version: int | str, permanent: bool = False) -> int:
        """Soft-delete one version, or (``permanent=True``, after a soft delete) remove it.

        A version another schema refers to is not deleted (RegistryError 42206)."""
        wanted = parse_version(version)
        with self._store.write() as conn:
            rows = subject_rows(conn, subject)
            if not rows:
                raise self._subject_missing(subject)
            if wanted is None:
                live = [r for r in rows if not r.deleted]
                if not live:
                    raise self._subject_missing(subject)
                row = live[-1]
            else:
                found = next((r for r in rows if r.version == wanted), None)
                if found is None:
                    raise not_found(f"Version {wanted} not found.", ErrorCodes.VERSION_NOT_FOUND)
                row = found
            self._check_unreferenced(conn, subject, row.version, permanent, other=False)
            if not permanent:
                if row.deleted:
                    raise soft_delete_error(
                        f"Subject '{subject}' Version {row.version} was soft deleted. "
                        "Set permanent=true to delete permanently",
                        ErrorCodes.VERSION_SOFT_DELETED,
                    )
                conn.execute(
                    "UPDATE versions SET deleted = 1 WHERE subject = ? AND version = ?", (subject, row.version)
                )
            else:
                if not row.deleted:
                    raise soft_delete_error(
                        f"Subject '{subject}' Version {row.version} was not deleted first before being "
                        "permanently deleted",
                        ErrorCodes.VERSION_NOT_SOFT_DELETED,
                    )
                conn.execute("DELETE FROM versions WHERE subject = ? AND version = ?", (subject, row.version))
            return row.version

    def check_compatibility(
        self,
        subject: str,
        schema: Any,
        version: int | str | None = "latest",
        schema_type: str = "AVRO",
        references: Any = None,
    ) -> CompatibilityResult:
        """Check ``schema`` (with its ``references``) against a subject without registering it.

        ``version="latest"`` (or a number) checks that one version in the direction of the
        subject's level (a transitive level checks like its non-transitive form); ``version=None``
        checks every version the level asks for. A subject without live versions is compatible.
        """
        text, schema_type, refs, _ = prepare_schema(schema, schema_type, references)
        parsed: Any = text
        wanted = None if version is None else parse_version(version)
        with self._store.read() as conn:
            if refs:
                _, parsed, _ = parse_with_references(conn, text, schema_type, refs, deleted=False)
            rows = subject_rows(conn, subject)
            level = self._level(conn, subject)
            live = [r for r in rows if not r.deleted]
            if version is None:
                return evaluate_rows(conn, parsed, schema_type, live if level.transitive else live[-1:], level)
            if wanted is None:
                return evaluate_rows(conn, parsed, schema_type, live[-1:], non_transitive(level))
            if not rows:
                raise self._subject_missing(subject)
            target = [r for r in live if r.version == wanted]
            if not target:
                raise not_found(f"Version {wanted} not found.", ErrorCodes.VERSION_NOT_FOUND)
            return evaluate_rows(conn, parsed, schema_type, target, non_transitive(level))

    def get_compatibility(self, subject: str | None = None) -> str:
        """The subject's level if one is set, else the global level (``BACKWARD`` by default)."""
        with self._store.read() as conn:
            return self._level(conn, subject).value

    def set_compatibility(self, level: Strategy | str, subject: str | None = None) -> str:
        """Set the global level, or one subject's; returns the level's name."""
        strategy = Strategy.parse(level)
        if subject is not None:
            _check_subject(subject)
        with self._store.write() as conn:
            conn.execute(
                "INSERT INTO config (scope, compatibility) VALUES (?, ?) "
                "ON CONFLICT (scope) DO UPDATE SET compatibility = excluded.compatibility",
                (subject or _GLOBAL, strategy.value),
            )
        return strategy.value

    def delete_compatibility(self, subject: str) -> None:
        """Remove a subject's level so the global one applies."""
        _check_subject(subject)
        with self._store.write() as conn:
            conn.execute("DELETE FROM config WHERE scope = ?", (subject,))

    def subject_compatibility(self, subject: str) -> str | None:
        """The level set on ``subject`` itself, or None when it follows the global level."""
        with self._store.read() as conn:
            row = conn.execute("SELECT compatibility FROM config WHERE scope = ?", (subject,)).fetchone()
        return str(row[0]) if row else None
