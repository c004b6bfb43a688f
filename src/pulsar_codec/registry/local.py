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
  and the rules of the schema's format. Avro schemas get the full Avro check; a format without
  rules yet (JSON Schema, Protobuf) has no content check (only ``ALWAYS_INCOMPATIBLE`` rejects it),
  and a change of schema type is incompatible.

Opening: ``LocalRegistry(path)`` creates the file when it is missing; ``LocalRegistry(path,
create=False)`` opens an existing registry only (read-only tools use it, so a typo never leaves an
empty database behind) and raises :class:`~pulsar_codec.errors.RegistryError` when there is none.
Database failures (a locked, corrupt or foreign file) raise ``RegistryError`` naming the file.

Concurrency: each thread uses its own connection to the file, the database runs in WAL mode with a
busy timeout, and every write is one ``BEGIN IMMEDIATE`` transaction (the compatibility check
reads inside it), so concurrent registrations from threads or processes serialise, ids stay
unique and versions contiguous, and a write that fails halfway leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import Any, NamedTuple, cast
from urllib.parse import quote

from .. import compat
from ..compat import CompatibilityResult, Strategy
from ..errors import RegistryError, SchemaError, SchemaNotFoundError
from .base import (
    DEFAULT_COMPATIBILITY,
    SCHEMA_TYPES,
    ErrorCodes,
    RegisteredSchema,
    Registry,
    not_found,
    parse_version,
    schema_text,
    soft_delete_error,
)
from .config import RegistryConfig

__all__ = ["DEFAULT_LOCK_TIMEOUT", "LocalRegistry"]

DEFAULT_LOCK_TIMEOUT = 30.0  # seconds a write waits for another writer
_MAX_ID = 2**63 - 1  # SQLite's integer range: a larger id is not in any registry
_TABLES = frozenset({"schemas", "versions", "config"})

_DDL = (
    """CREATE TABLE IF NOT EXISTS schemas (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        schema_type TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        schema TEXT NOT NULL,
        UNIQUE (schema_type, fingerprint))""",
    """CREATE TABLE IF NOT EXISTS versions (
        subject TEXT NOT NULL,
        version INTEGER NOT NULL,
        schema_id INTEGER NOT NULL REFERENCES schemas (id),
        deleted INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (subject, version))""",
    "CREATE INDEX IF NOT EXISTS versions_by_schema ON versions (schema_id)",
    "CREATE TABLE IF NOT EXISTS config (scope TEXT PRIMARY KEY, compatibility TEXT NOT NULL)",
)
_GLOBAL = ""  # config scope of the global level; subjects are never empty

_ROWS = """SELECT v.version, v.schema_id, v.deleted, s.schema_type, s.fingerprint, s.schema
           FROM versions v JOIN schemas s ON s.id = v.schema_id
           WHERE v.subject = ? ORDER BY v.version"""


class _Row(NamedTuple):
    """One version of a subject with its schema (a row of ``_ROWS``)."""

    version: int
    schema_id: int
    deleted: bool
    schema_type: str
    fingerprint: str
    schema: str


def _check_subject(subject: str) -> str:
    if not isinstance(subject, str) or not subject or any(ord(c) < 32 for c in subject):
        raise RegistryError(f"invalid subject {subject!r}", status=422, error_code=ErrorCodes.INVALID_SCHEMA)
    return subject


def _schema_type(schema_type: str | None) -> str:
    name = (schema_type or "AVRO").upper()
    if name not in SCHEMA_TYPES:
        raise SchemaError(f"unsupported schema type {schema_type!r}; expected one of {', '.join(SCHEMA_TYPES)}")
    return name


@contextlib.contextmanager
def _schema_depth() -> Iterator[None]:
    """Turn a RecursionError from parsing or comparing a deeply nested schema into a SchemaError.

    The Avro parser refuses schemas nested past its documented limit with a SchemaError; this
    catches whatever path still recurses (another format, the compatibility walk) the same way.
    """
    try:
        yield
    except RecursionError:
        raise SchemaError("schema nested too deeply to be parsed") from None


def _non_transitive(strategy: Strategy) -> Strategy:
    return Strategy.parse(strategy.value.removesuffix("_TRANSITIVE"))


def _evaluate(text: str, schema_type: str, targets: list[_Row], strategy: Strategy) -> CompatibilityResult:
    """``text`` against the rows in ``targets`` (already chosen: latest or all) under ``strategy``."""
    if strategy.always_compatible or not targets:
        return CompatibilityResult.ok()
    if strategy.never_compatible:
        return CompatibilityResult.fail("STRATEGY", f"Schema compatibility strategy is {strategy.value}")
    mismatched = [r for r in targets if r.schema_type != schema_type]
    if mismatched:
        return CompatibilityResult.merge(
            CompatibilityResult.fail(
                "SCHEMA_TYPE_MISMATCH",
                f"version {r.version} is a {r.schema_type} schema, the new schema is {schema_type}",
            )
            for r in mismatched
        )
    # check_strategy picks the latest of the list for non-transitive levels: targets is already it
    with _schema_depth():
        return compat.check_strategy(
            text,
            [r.schema for r in targets],
            strategy,
            labels=[f"version {r.version}" for r in targets],
            schema_type=schema_type,
        )


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
        self._memory = self._path == ":memory:" or self._path == ""
        self._create = create or self._memory
        self._timeout = float(timeout)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.RLock()  # guards the connection list, and the one :memory: connection
        self._shared: sqlite3.Connection | None = None
        self._closed = False
        self._pid = os.getpid()
        self.config = RegistryConfig(path=self._path, timeout=self._timeout)  # rebuilds it elsewhere
        if not self._create:
            if not os.path.isfile(self._path):
                self._closed = True
                raise RegistryError(f"no registry database at {self._path}", error_code=ErrorCodes.STORE_ERROR)
            try:
                with self._read() as conn:
                    names = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            except BaseException:
                self.close()
                raise
            missing = ", ".join(sorted(_TABLES - names))
            if missing:
                self.close()
                raise RegistryError(
                    f"registry database {self._path}: an SQLite database without the registry's tables ({missing})",
                    error_code=ErrorCodes.STORE_ERROR,
                )
            return
        try:
            with self._write() as conn:
                for statement in _DDL:
                    conn.execute(statement)
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"LocalRegistry({self._path!r})"

    @property
    def path(self) -> str:
        """The database file (or ``":memory:"``)."""
        return self._path

    # ---------------------------------------------------------------------------- connections

    def _open(self) -> sqlite3.Connection:
        # without create, mode=rw opens an existing file only: SQLite itself never creates one
        target, uri = self._path, False
        if not self._create:
            target, uri = f"file:{quote(os.path.abspath(self._path))}?mode=rw", True
        conn = sqlite3.connect(target, timeout=self._timeout, isolation_level=None, check_same_thread=False, uri=uri)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            if not self._memory:
                # switching to WAL takes an exclusive lock; another process may hold it for a moment
                deadline = time.monotonic() + self._timeout
                while True:
                    try:
                        conn.execute("PRAGMA journal_mode = WAL").fetchone()
                        break
                    except sqlite3.OperationalError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.01)
        except BaseException:
            # not yet in self._connections, so close() would never reach it
            conn.close()
            raise
        with self._lock:
            self._connections.append(conn)
        return conn

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise RegistryError("the registry is closed")
        if self._memory:
            if self._shared is None:
                self._shared = self._open()
            return self._shared
        if self._pid != os.getpid():
            # a forked child must not use its parent's SQLite connections: open its own
            with self._lock:
                self._pid = os.getpid()
                self._local = threading.local()
                self._connections = []
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._open()
        return conn

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        if self._memory:
            with self._lock:
                yield
        else:
            yield

    @contextlib.contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        with self._guard():
            try:
                conn = self._conn()
                conn.execute(begin)
            except sqlite3.Error as exc:
                raise self._database_error(exc) from exc
            try:
                yield conn
            except sqlite3.Error as exc:
                self._rollback(conn)
                raise self._database_error(exc) from exc
            except BaseException:
                self._rollback(conn)
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback(conn)
                raise self._database_error(exc) from exc

    def _database_error(self, exc: sqlite3.Error) -> RegistryError:
        return RegistryError(f"registry database {self._path}: {exc}", error_code=ErrorCodes.STORE_ERROR)

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._transaction("BEGIN IMMEDIATE")

    def _read(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._transaction("BEGIN")

    def __del__(self) -> None:
        # an abandoned registry must not leave SQLite connections behind (Python 3.13 warns on them)
        if not getattr(self, "_closed", True):
            try:
                self.close()
            except Exception:  # noqa: BLE001 - nothing useful to do during finalisation
                pass

    def close(self) -> None:
        """Close every connection this object opened (in any thread)."""
        with self._lock:
            self._closed = True
            for conn in self._connections:
                conn.close()
            self._connections.clear()
            self._shared = None

    # ---------------------------------------------------------------------------- helpers

    @staticmethod
    def _rows(conn: sqlite3.Connection, subject: str) -> list[_Row]:
        return [_Row(int(v), int(i), bool(d), t, f, s) for v, i, d, t, f, s in conn.execute(_ROWS, (subject,))]

    @staticmethod
    def _level(conn: sqlite3.Connection, subject: str | None) -> Strategy:
        for scope in (subject, _GLOBAL) if subject else (_GLOBAL,):
            row = conn.execute("SELECT compatibility FROM config WHERE scope = ?", (scope,)).fetchone()
            if row is not None:
                return Strategy.parse(row[0])
        return DEFAULT_COMPATIBILITY

    def _schema_id(self, conn: sqlite3.Connection, schema_type: str, fingerprint: str, text: str) -> int:
        row = conn.execute(
            "SELECT id FROM schemas WHERE schema_type = ? AND fingerprint = ?", (schema_type, fingerprint)
        ).fetchone()
        if row is not None:
            return int(row[0])
        cur = conn.execute(
            "INSERT INTO schemas (schema_type, fingerprint, schema) VALUES (?, ?, ?)", (schema_type, fingerprint, text)
        )
        return cast(int, cur.lastrowid)  # set by every successful INSERT

    def _remove_deleted_duplicates(self, conn: sqlite3.Connection, subject: str, schema_id: int) -> None:
        conn.execute("DELETE FROM versions WHERE subject = ? AND schema_id = ? AND deleted = 1", (subject, schema_id))

    def _insert_version(self, conn: sqlite3.Connection, subject: str, version: int, schema_id: int) -> None:
        conn.execute(
            "INSERT INTO versions (subject, version, schema_id) VALUES (?, ?, ?)", (subject, version, schema_id)
        )

    @staticmethod
    def _prepare(schema: Any, schema_type: str) -> tuple[str, str, str]:
        schema_type = _schema_type(schema_type)
        text = schema_text(schema)
        with _schema_depth():
            return text, schema_type, compat.fingerprint(text, schema_type)

    @staticmethod
    def _registered(row: _Row, subject: str) -> RegisteredSchema:
        return RegisteredSchema(row.schema_id, row.schema, row.schema_type, subject, row.version)

    @staticmethod
    def _subject_missing(subject: str) -> SchemaNotFoundError:
        return not_found(f"Subject '{subject}' not found.", ErrorCodes.SUBJECT_NOT_FOUND)

    # ---------------------------------------------------------------------------- operations

    def register(self, subject: str, schema: Any, schema_type: str = "AVRO") -> int:
        """Register ``schema`` under ``subject`` and return its global id.

        Raises
        ------
        SchemaError
            The schema is malformed or of an unsupported type.
        IncompatibleSchemaError
            The subject's compatibility level rejects it; ``.reasons`` says why.
        RegistryError
            The database failed (nothing was written).
        """
        _check_subject(subject)
        text, schema_type, fingerprint = self._prepare(schema, schema_type)
        with self._write() as conn:
            rows = self._rows(conn, subject)
            live = [r for r in rows if not r.deleted]
            for row in live:
                if row.schema_type == schema_type and row.fingerprint == fingerprint:
                    return row.schema_id
            level = self._level(conn, subject)
            result = _evaluate(text, schema_type, live if level.transitive else live[-1:], level)
            result.raise_if_incompatible(
                f'Schema being registered is incompatible with an earlier schema for subject "{subject}"'
                f" ({level.value})"
            )
            schema_id = self._schema_id(conn, schema_type, fingerprint, text)
            version = max((r.version for r in rows), default=0) + 1
            self._remove_deleted_duplicates(conn, subject, schema_id)
            self._insert_version(conn, subject, version, schema_id)
            return schema_id

    def get_schema(self, schema_id: int) -> RegisteredSchema:
        """The schema with this global id, while some version (soft-deleted ones too) uses it."""
        if not 0 <= int(schema_id) <= _MAX_ID:
            raise not_found(f"Schema {schema_id} not found", ErrorCodes.SCHEMA_NOT_FOUND)
        with self._read() as conn:
            row = conn.execute(
                "SELECT id, schema, schema_type FROM schemas s WHERE id = ? "
                "AND EXISTS (SELECT 1 FROM versions v WHERE v.schema_id = s.id)",
                (int(schema_id),),
            ).fetchone()
        if row is None:
            raise not_found(f"Schema {schema_id} not found", ErrorCodes.SCHEMA_NOT_FOUND)
        return RegisteredSchema(int(row[0]), str(row[1]), str(row[2]))

    def get_schema_versions(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        """The (subject, version) pairs that use this schema id, sorted."""
        if not 0 <= int(schema_id) <= _MAX_ID:
            raise not_found(f"Schema {schema_id} not found", ErrorCodes.SCHEMA_NOT_FOUND)
        with self._read() as conn:
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
        with self._read() as conn:
            rows = self._rows(conn, subject)
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

    def lookup(self, subject: str, schema: Any, schema_type: str = "AVRO", deleted: bool = False) -> RegisteredSchema:
        """The newest version of ``subject`` holding ``schema`` (same type and canonical form)."""
        text, schema_type, fingerprint = self._prepare(schema, schema_type)
        with self._read() as conn:
            rows = self._rows(conn, subject)
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
        with self._read() as conn:
            return [str(r[0]) for r in conn.execute(query)]

    def list_versions(self, subject: str, deleted: bool = False) -> list[int]:
        """Version numbers of a subject, ascending."""
        with self._read() as conn:
            rows = self._rows(conn, subject)
        versions = [r.version for r in rows if deleted or not r.deleted]
        if not versions:
            raise self._subject_missing(subject)
        return versions

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """Soft-delete every live version of a subject, or (``permanent=True``, after a soft delete)
        remove them and the subject's level. Returns the versions deleted."""
        with self._write() as conn:
            rows = self._rows(conn, subject)
            if not rows:
                raise self._subject_missing(subject)
            live = [r.version for r in rows if not r.deleted]
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
        """Soft-delete one version, or (``permanent=True``, after a soft delete) remove it."""
        wanted = parse_version(version)
        with self._write() as conn:
            rows = self._rows(conn, subject)
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
        self, subject: str, schema: Any, version: int | str | None = "latest", schema_type: str = "AVRO"
    ) -> CompatibilityResult:
        """Check ``schema`` against a subject without registering it.

        ``version="latest"`` (or a number) checks that one version in the direction of the
        subject's level (a transitive level checks like its non-transitive form); ``version=None``
        checks every version the level asks for. A subject without live versions is compatible.
        """
        text, schema_type, _ = self._prepare(schema, schema_type)
        wanted = None if version is None else parse_version(version)
        with self._read() as conn:
            rows = self._rows(conn, subject)
            level = self._level(conn, subject)
        live = [r for r in rows if not r.deleted]
        if version is None:
            return _evaluate(text, schema_type, live if level.transitive else live[-1:], level)
        if wanted is None:
            return _evaluate(text, schema_type, live[-1:], _non_transitive(level))
        if not rows:
            raise self._subject_missing(subject)
        target = [r for r in live if r.version == wanted]
        if not target:
            raise not_found(f"Version {wanted} not found.", ErrorCodes.VERSION_NOT_FOUND)
        return _evaluate(text, schema_type, target, _non_transitive(level))

    def get_compatibility(self, subject: str | None = None) -> str:
        """The subject's level if one is set, else the global level (``BACKWARD`` by default)."""
        with self._read() as conn:
            return self._level(conn, subject).value

    def set_compatibility(self, level: Strategy | str, subject: str | None = None) -> str:
        """Set the global level, or one subject's; returns the level's name."""
        strategy = Strategy.parse(level)
        if subject is not None:
            _check_subject(subject)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO config (scope, compatibility) VALUES (?, ?) "
                "ON CONFLICT (scope) DO UPDATE SET compatibility = excluded.compatibility",
                (subject or _GLOBAL, strategy.value),
            )
        return strategy.value

    def delete_compatibility(self, subject: str) -> None:
        """Remove a subject's level so the global one applies."""
        _check_subject(subject)
        with self._write() as conn:
            conn.execute("DELETE FROM config WHERE scope = ?", (subject,))

    def subject_compatibility(self, subject: str) -> str | None:
        """The level set on ``subject`` itself, or None when it follows the global level."""
        with self._read() as conn:
            row = conn.execute("SELECT compatibility FROM config WHERE scope = ?", (subject,)).fetchone()
        return str(row[0]) if row else None
