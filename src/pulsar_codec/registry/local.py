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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple
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
    SchemaReference,
    confluent_guid,
    not_found,
    parse_guid,
    parse_version,
    references_of,
    schema_text,
    soft_delete_error,
)
from .config import RegistryConfig

__all__ = ["DEFAULT_LOCK_TIMEOUT", "LocalRegistry"]

DEFAULT_LOCK_TIMEOUT = 30.0  # seconds a write waits for another writer
_BEGIN_WRITE = "BEGIN IMMEDIATE"  # a write transaction: takes the write lock at once
_MAX_ID = 2**63 - 1  # SQLite's integer range: a larger id is not in any registry
_TABLES = frozenset({"schemas", "versions", "config"})

_DDL = (
    """CREATE TABLE IF NOT EXISTS schemas (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        schema_type TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        schema TEXT NOT NULL,
        guid TEXT,
        UNIQUE (schema_type, fingerprint))""",
    """CREATE TABLE IF NOT EXISTS versions (
        subject TEXT NOT NULL,
        version INTEGER NOT NULL,
        schema_id INTEGER NOT NULL REFERENCES schemas (id),
        deleted INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (subject, version))""",
    "CREATE INDEX IF NOT EXISTS versions_by_schema ON versions (schema_id)",
    "CREATE TABLE IF NOT EXISTS config (scope TEXT PRIMARY KEY, compatibility TEXT NOT NULL)",
    # a schema's references, in order; (subject, version) is indexed to find who refers to a version
    """CREATE TABLE IF NOT EXISTS schema_refs (
        schema_id INTEGER NOT NULL REFERENCES schemas (id),
        position INTEGER NOT NULL,
        name TEXT NOT NULL,
        subject TEXT NOT NULL,
        version INTEGER NOT NULL,
        PRIMARY KEY (schema_id, position))""",
    "CREATE INDEX IF NOT EXISTS schema_refs_by_target ON schema_refs (subject, version)",
)
_GLOBAL = ""  # config scope of the global level; subjects are never empty
_MAX_REFERENCE_DEPTH = 32  # references of references, as deep as the formats' own resolvers go

_ROWS = """SELECT v.version, v.schema_id, v.deleted, s.schema_type, s.fingerprint, s.schema, s.guid
           FROM versions v JOIN schemas s ON s.id = v.schema_id
           WHERE v.subject = ? ORDER BY v.version"""
_REFS = "SELECT name, subject, version FROM schema_refs WHERE schema_id = ? ORDER BY position"


class _Row(NamedTuple):
    """One version of a subject with its schema (a row of ``_ROWS``) and the schema's references."""

    version: int
    schema_id: int
    deleted: bool
    schema_type: str
    fingerprint: str
    schema: str
    guid: str
    references: tuple[SchemaReference, ...]


def _stored_references(conn: sqlite3.Connection, schema_id: int) -> tuple[SchemaReference, ...]:
    return tuple(SchemaReference(str(n), str(s), int(v)) for n, s, v in conn.execute(_REFS, (schema_id,)))


def _needs_upgrade(conn: sqlite3.Connection) -> bool:
    """Whether the database predates GUIDs and references (see :func:`_upgrade`)."""
    columns = {str(r[1]) for r in conn.execute("PRAGMA table_info(schemas)")}
    if "guid" not in columns:
        return True
    names = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
    if not {"schema_refs", "schemas_by_guid"} <= names:
        return True
    return conn.execute("SELECT 1 FROM schemas WHERE guid IS NULL LIMIT 1").fetchone() is not None


def _upgrade(conn: sqlite3.Connection) -> None:
    """Bring a database of an earlier version up to this one (inside a write transaction): the
    references table, the GUID column and its index, and the GUIDs of the schemas stored before."""
    for statement in _DDL:
        conn.execute(statement)
    columns = {str(r[1]) for r in conn.execute("PRAGMA table_info(schemas)")}
    if "guid" not in columns:
        conn.execute("ALTER TABLE schemas ADD COLUMN guid TEXT")
    for schema_id, text in conn.execute("SELECT id, schema FROM schemas WHERE guid IS NULL").fetchall():
        guid = confluent_guid(str(text), _stored_references(conn, int(schema_id)))
        conn.execute("UPDATE schemas SET guid = ? WHERE id = ?", (str(guid), int(schema_id)))
    conn.execute("CREATE INDEX IF NOT EXISTS schemas_by_guid ON schemas (guid)")


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


def _with_references(text: str, schema_type: str, texts: Sequence[tuple[str, str]]) -> Any:
    """What the format's compatibility rules read for ``text`` whose references resolved to
    ``texts`` (``(name, text)``, dependencies first): the text itself without references, else the
    schema parsed with them (a Protobuf model, a JSON Schema document)."""
    if not texts:
        return text
    with _schema_depth():
        if schema_type == "PROTOBUF":
            from ..formats.protobuf import schema as protobuf_schema  # the protobuf extra

            return protobuf_schema.parse(text, [{"name": n, "schema": t} for n, t in texts])
        if schema_type == "JSON":
            from ..formats.json import compat as json_compat

            return json_compat.parse(text, dict(texts))
    return text  # Avro: named types of references are not resolved, the schema stands alone


def _fingerprint(parsed: Any, schema_type: str, references: Sequence[SchemaReference]) -> str:
    """The dedup key: the format's canonical form and, when there are some, the references (the same
    text referring to other versions is another schema, as in Confluent's registry)."""
    with _schema_depth():
        base = compat.fingerprint(parsed, schema_type)
    if not references:
        return base  # unchanged for schemas without references, so older databases still match
    listed = json.dumps([r.to_dict() for r in references], separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(f"{base}\n{listed}".encode()).hexdigest()


def _evaluate(new: Any, schema_type: str, targets: list[tuple[_Row, Any]], strategy: Strategy) -> CompatibilityResult:
    """``new`` (text or parsed with its references) against the rows in ``targets`` (already
    chosen: latest or all, each with what the rules read for it) under ``strategy``."""
    if strategy.always_compatible or not targets:
        return CompatibilityResult.ok()
    if strategy.never_compatible:
        return CompatibilityResult.fail("STRATEGY", f"Schema compatibility strategy is {strategy.value}")
    mismatched = [r for r, _ in targets if r.schema_type != schema_type]
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
            new,
            [parsed for _, parsed in targets],
            strategy,
            labels=[f"version {r.version}" for r, _ in targets],
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
        try:
            if self._create:
                with self._write() as conn:
                    _upgrade(conn)  # creates the tables, or brings an older database up to date
            else:
                # an existing registry: written to only when it predates GUIDs and references
                with self._read() as conn:
                    outdated = _needs_upgrade(conn)
                if outdated:
                    with self._write() as conn:
                        _upgrade(conn)
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
            if begin == _BEGIN_WRITE and not self._memory:
                # move the write from the WAL into the database file now: SQLite does it only when
                # the last connection closes, which a killed process (a Spark worker) never does,
                # and a database file copied without its -wal file would lack the schema
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error:  # the write is committed; the next checkpoint moves it
                    pass

    def _database_error(self, exc: sqlite3.Error) -> RegistryError:
        return RegistryError(f"registry database {self._path}: {exc}", error_code=ErrorCodes.STORE_ERROR)

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._transaction(_BEGIN_WRITE)

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
        found = conn.execute(_ROWS, (subject,)).fetchall()
        refs: dict[int, tuple[SchemaReference, ...]] = {}
        for _, i, *_rest in found:
            if int(i) not in refs:
                refs[int(i)] = _stored_references(conn, int(i))
        return [_Row(int(v), int(i), bool(d), t, f, s, str(g), refs[int(i)]) for v, i, d, t, f, s, g in found]

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
    def _prepare(schema: Any, schema_type: str, references: Any) -> tuple[str, str, tuple[SchemaReference, ...], str]:
        """(text, type, references, fingerprint): a schema without references is parsed here,
        outside any transaction (its fingerprint); one with references needs the database
        (:meth:`_parsed`), and its fingerprint is left empty."""
        schema_type = _schema_type(schema_type)
        text = schema_text(schema)
        refs = references_of(references)
        return text, schema_type, refs, "" if refs else _fingerprint(text, schema_type, ())

    @staticmethod
    def _resolve(
        conn: sqlite3.Connection, references: Sequence[SchemaReference], deleted: bool
    ) -> tuple[tuple[SchemaReference, ...], list[tuple[str, str]]]:
        """The references with ``-1`` replaced by the subject's latest version, and the texts of
        every referenced schema (references of references included, dependencies first, each name
        once: the first reference of a name wins), as Confluent's registry resolves them.

        ``deleted``: soft-deleted versions may be referred to (reading an existing schema);
        otherwise only live ones (a new schema).

        Raises
        ------
        SchemaError
            A subject or version that does not exist (Confluent's 42201 "No schema reference found").
        """
        texts: dict[str, str] = {}

        def pin(ref: SchemaReference) -> tuple[SchemaReference, str, int]:
            live = "" if deleted else " AND v.deleted = 0"
            if ref.version == -1:
                row = conn.execute(
                    "SELECT v.version, s.schema, s.id FROM versions v JOIN schemas s ON s.id = v.schema_id "
                    "WHERE v.subject = ? AND v.deleted = 0 ORDER BY v.version DESC LIMIT 1",
                    (ref.subject,),
                ).fetchone()
            else:
                row = conn.execute(
                    "SELECT v.version, s.schema, s.id FROM versions v JOIN schemas s ON s.id = v.schema_id "
                    f"WHERE v.subject = ? AND v.version = ?{live}",
                    (ref.subject, ref.version),
                ).fetchone()
            if row is None:
                raise SchemaError(
                    f'No schema reference found for subject "{ref.subject}" and version {ref.version} '
                    f"(reference {ref.name!r})"
                )
            return SchemaReference(ref.name, ref.subject, int(row[0])), str(row[1]), int(row[2])

        def visit(refs: Sequence[SchemaReference], depth: int) -> list[SchemaReference]:
            if depth > _MAX_REFERENCE_DEPTH:
                raise SchemaError(f"schema references nested deeper than {_MAX_REFERENCE_DEPTH} levels")
            pinned = []
            for ref in refs:
                found, text, schema_id = pin(ref)  # every reference must exist, even a repeated name
                pinned.append(found)
                if found.name in seen:
                    continue
                seen.add(found.name)
                visit(_stored_references(conn, schema_id), depth + 1)
                texts[found.name] = text
            return pinned

        seen: set[str] = set()
        pinned = visit(references, 0)
        return tuple(pinned), list(texts.items())

    def _parsed(
        self,
        conn: sqlite3.Connection,
        text: str,
        schema_type: str,
        references: Sequence[SchemaReference],
        deleted: bool,
    ) -> tuple[tuple[SchemaReference, ...], Any, str]:
        """(pinned references, what the rules read, fingerprint) of a schema with references."""
        pinned, texts = self._resolve(conn, references, deleted)
        parsed = _with_references(text, schema_type, texts)
        return pinned, parsed, _fingerprint(parsed, schema_type, pinned)

    def _comparable(self, conn: sqlite3.Connection, row: _Row) -> Any:
        """What the compatibility rules read for a stored version: its text, parsed with its
        references when it has some (soft-deleted referenced versions still count)."""
        if not row.references:
            return row.schema
        _, texts = self._resolve(conn, row.references, True)
        return _with_references(row.schema, row.schema_type, texts)

    def _evaluate_rows(
        self, conn: sqlite3.Connection, new: Any, schema_type: str, targets: list[_Row], strategy: Strategy
    ) -> CompatibilityResult:
        """:func:`_evaluate` over stored rows, parsed with their references only when compared."""
        decided = strategy.always_compatible or strategy.never_compatible
        if decided or any(r.schema_type != schema_type for r in targets):
            return _evaluate(new, schema_type, [(r, r.schema) for r in targets], strategy)
        return _evaluate(new, schema_type, [(r, self._comparable(conn, r)) for r in targets], strategy)

    @staticmethod
    def _registered(row: _Row, subject: str) -> RegisteredSchema:
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
        text, schema_type, refs, fingerprint = self._prepare(schema, schema_type, references)
        parsed: Any = text
        with self._write() as conn:
            if refs:
                refs, parsed, fingerprint = self._parsed(conn, text, schema_type, refs, deleted=False)
            rows = self._rows(conn, subject)
            live = [r for r in rows if not r.deleted]
            for row in live:
                if row.schema_type == schema_type and row.fingerprint == fingerprint:
                    return self._registered(row, subject)
            level = self._level(conn, subject)
            result = self._evaluate_rows(conn, parsed, schema_type, live if level.transitive else live[-1:], level)
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
        with self._read() as conn:
            row = conn.execute(
                f"SELECT id, schema, schema_type, guid FROM schemas s WHERE {condition} "
                "AND EXISTS (SELECT 1 FROM versions v WHERE v.schema_id = s.id) ORDER BY id LIMIT 1",
                (value,),
            ).fetchone()
            if row is None:
                raise not_found(missing, ErrorCodes.SCHEMA_NOT_FOUND)
            refs = _stored_references(conn, int(row[0]))
        return RegisteredSchema(int(row[0]), str(row[1]), str(row[2]), references=refs, guid=str(row[3]))

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

    def lookup(
        self, subject: str, schema: Any, schema_type: str = "AVRO", deleted: bool = False, references: Any = None
    ) -> RegisteredSchema:
        """The newest version of ``subject`` holding ``schema`` with these ``references`` (same type,
        canonical form and references; a reference at version ``-1`` means the latest)."""
        text, schema_type, refs, fingerprint = self._prepare(schema, schema_type, references)
        with self._read() as conn:
            if refs:
                _, _, fingerprint = self._parsed(conn, text, schema_type, refs, deleted=True)
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

    def referenced_by(self, subject: str, version: int | str, deleted: bool = False) -> list[int]:
        """The ids of the schemas that refer to this version (with a live version; ``deleted=True``:
        soft-deleted ones too), as Confluent's ``GET /subjects/{s}/versions/{v}/referencedby``."""
        target = self.get_version(subject, version, deleted=True)
        query = (
            "SELECT DISTINCT r.schema_id FROM schema_refs r JOIN versions v ON v.schema_id = r.schema_id "
            "WHERE r.subject = ? AND r.version = ?" + ("" if deleted else " AND v.deleted = 0") + " ORDER BY 1"
        )
        with self._read() as conn:
            return [int(r[0]) for r in conn.execute(query, (subject, target.version))]

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """Soft-delete every live version of a subject, or (``permanent=True``, after a soft delete)
        remove them and the subject's level. Returns the versions deleted.

        A version another subject's schema refers to is not deleted (RegistryError 42206)."""
        with self._write() as conn:
            rows = self._rows(conn, subject)
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
        text, schema_type, refs, _ = self._prepare(schema, schema_type, references)
        parsed: Any = text
        wanted = None if version is None else parse_version(version)
        with self._read() as conn:
            if refs:
                _, parsed, _ = self._parsed(conn, text, schema_type, refs, deleted=False)
            rows = self._rows(conn, subject)
            level = self._level(conn, subject)
            live = [r for r in rows if not r.deleted]
            if version is None:
                return self._evaluate_rows(conn, parsed, schema_type, live if level.transitive else live[-1:], level)
            if wanted is None:
                return self._evaluate_rows(conn, parsed, schema_type, live[-1:], _non_transitive(level))
            if not rows:
                raise self._subject_missing(subject)
            target = [r for r in live if r.version == wanted]
            if not target:
                raise not_found(f"Version {wanted} not found.", ErrorCodes.VERSION_NOT_FOUND)
            return self._evaluate_rows(conn, parsed, schema_type, target, _non_transitive(level))

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
