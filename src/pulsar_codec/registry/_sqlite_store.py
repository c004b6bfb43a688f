"""The SQLite file under :class:`~pulsar_codec.registry.LocalRegistry`: tables, connections, transactions.

* :class:`SQLiteStore` opens the file (creating it, or an existing registry only), brings a
  database of an earlier version up to date, gives each thread its own connection (a forked child
  opens its own too), and runs every read and write as one transaction; SQLite failures become
  :class:`~pulsar_codec.errors.RegistryError` naming the file.
* :data:`DDL` is the table layout; :class:`StoredVersion`, :func:`subject_rows` and
  :func:`stored_references` read the versions of a subject and the references of a schema.

What the tables mean (ids, versions, soft deletes, levels) is the registry's business, in
:mod:`pulsar_codec.registry.local`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from typing import NamedTuple
from urllib.parse import quote

from ..errors import RegistryError
from .base import ErrorCodes, SchemaReference, confluent_guid

__all__ = [
    "DDL",
    "DEFAULT_LOCK_TIMEOUT",
    "REGISTRY_TABLES",
    "SQLiteStore",
    "StoredVersion",
    "needs_upgrade",
    "stored_references",
    "subject_rows",
    "upgrade",
]

DEFAULT_LOCK_TIMEOUT = 30.0  # seconds a write waits for another writer
_BEGIN_WRITE = "BEGIN IMMEDIATE"  # a write transaction: takes the write lock at once
REGISTRY_TABLES = frozenset({"schemas", "versions", "config"})  # what makes a file a registry

DDL = (
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

_ROWS = """SELECT v.version, v.schema_id, v.deleted, s.schema_type, s.fingerprint, s.schema, s.guid
           FROM versions v JOIN schemas s ON s.id = v.schema_id
           WHERE v.subject = ? ORDER BY v.version"""
_REFS = "SELECT name, subject, version FROM schema_refs WHERE schema_id = ? ORDER BY position"


class StoredVersion(NamedTuple):
    """One version of a subject with its schema (a row of ``_ROWS``) and the schema's references."""

    version: int
    schema_id: int
    deleted: bool
    schema_type: str
    fingerprint: str
    schema: str
    guid: str
    references: tuple[SchemaReference, ...]


def stored_references(conn: sqlite3.Connection, schema_id: int) -> tuple[SchemaReference, ...]:
    return tuple(SchemaReference(str(n), str(s), int(v)) for n, s, v in conn.execute(_REFS, (schema_id,)))


def subject_rows(conn: sqlite3.Connection, subject: str) -> list[StoredVersion]:
    """Every version of ``subject`` (soft-deleted ones included), ascending."""
    found = conn.execute(_ROWS, (subject,)).fetchall()
    refs: dict[int, tuple[SchemaReference, ...]] = {}
    for _, i, *_rest in found:
        if int(i) not in refs:
            refs[int(i)] = stored_references(conn, int(i))
    return [StoredVersion(int(v), int(i), bool(d), t, f, s, str(g), refs[int(i)]) for v, i, d, t, f, s, g in found]


def needs_upgrade(conn: sqlite3.Connection) -> bool:
    """Whether the database predates GUIDs and references (see :func:`upgrade`)."""
    columns = {str(r[1]) for r in conn.execute("PRAGMA table_info(schemas)")}
    if "guid" not in columns:
        return True
    names = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
    if not {"schema_refs", "schemas_by_guid"} <= names:
        return True
    return conn.execute("SELECT 1 FROM schemas WHERE guid IS NULL LIMIT 1").fetchone() is not None


_OBJECTS = frozenset(
    {"schemas", "versions", "config", "schema_refs", "versions_by_schema", "schema_refs_by_target", "schemas_by_guid"}
)
"""Every table and index :func:`upgrade` makes."""


def is_current(conn: sqlite3.Connection) -> bool:
    """Whether the database holds everything :func:`upgrade` would make (read only)."""
    names = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
    return _OBJECTS <= names and not needs_upgrade(conn)


def upgrade(conn: sqlite3.Connection) -> None:
    """Bring a database of an earlier version up to this one (inside a write transaction): the
    references table, the GUID column and its index, and the GUIDs of the schemas stored before."""
    for statement in DDL:
        conn.execute(statement)
    columns = {str(r[1]) for r in conn.execute("PRAGMA table_info(schemas)")}
    if "guid" not in columns:
        conn.execute("ALTER TABLE schemas ADD COLUMN guid TEXT")
    for schema_id, text in conn.execute("SELECT id, schema FROM schemas WHERE guid IS NULL").fetchall():
        guid = confluent_guid(str(text), stored_references(conn, int(schema_id)))
        conn.execute("UPDATE schemas SET guid = ? WHERE id = ?", (str(guid), int(schema_id)))
    conn.execute("CREATE INDEX IF NOT EXISTS schemas_by_guid ON schemas (guid)")


class SQLiteStore:
    """The connections to one registry database and the transactions run on them.

    Parameters
    ----------
    path : str
        Database file; ``":memory:"`` (or ``""``) is one in-memory database, served by a single
        connection that the threads take turns on.
    timeout : float
        Seconds a write waits for another writer (thread or process).
    create : bool
        Create the file and its tables when missing; otherwise only an existing registry opens.
        Always true in memory.

    Raises
    ------
    RegistryError
        The file cannot be opened, is not an SQLite database, or (``create=False``) is missing or
        holds no registry; the message names the file. Nothing stays open after a failure.
    """

    def __init__(self, path: str, *, timeout: float, create: bool) -> None:
        self.path = path
        self.memory = path == ":memory:" or path == ""
        self.create = create or self.memory
        self.timeout = timeout
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.RLock()  # guards the connection list, and the one :memory: connection
        self._shared: sqlite3.Connection | None = None
        self._closed = False
        self._pid = os.getpid()
        if not self.create:
            if not os.path.isfile(self.path):
                self._closed = True
                raise RegistryError(f"no registry database at {self.path}", error_code=ErrorCodes.STORE_ERROR)
            try:
                with self.read() as conn:
                    names = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            except BaseException:
                self.close()
                raise
            missing = ", ".join(sorted(REGISTRY_TABLES - names))
            if missing:
                self.close()
                raise RegistryError(
                    f"registry database {self.path}: an SQLite database without the registry's tables ({missing})",
                    error_code=ErrorCodes.STORE_ERROR,
                )
        try:
            if self.create:
                # a registry that is already current is only read here: opening one (a Spark
                # executor, a second process) never waits for another process's write lock
                current = False
                if not self.memory and os.path.isfile(self.path) and os.path.getsize(self.path):
                    with self.read() as conn:
                        current = is_current(conn)
                if not current:
                    with self.write() as conn:
                        upgrade(conn)  # creates the tables, or brings an older database up to date
            else:
                # an existing registry: written to only when it predates GUIDs and references
                with self.read() as conn:
                    outdated = needs_upgrade(conn)
                if outdated:
                    with self.write() as conn:
                        upgrade(conn)
        except BaseException:
            self.close()
            raise

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran (or opening failed)."""
        return self._closed

    def _open(self) -> sqlite3.Connection:
        # without create, mode=rw opens an existing file only: SQLite itself never creates one
        target, uri = self.path, False
        if not self.create:
            target, uri = f"file:{quote(os.path.abspath(self.path))}?mode=rw", True
        conn = sqlite3.connect(target, timeout=self.timeout, isolation_level=None, check_same_thread=False, uri=uri)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            if not self.memory:
                self._use_wal(conn)
        except BaseException:
            # not yet in self._connections, so close() would never reach it
            conn.close()
            raise
        with self._lock:
            self._connections.append(conn)
        return conn

    def _use_wal(self, conn: sqlite3.Connection) -> None:
        """Put the database in WAL mode (readers never wait for a writer), which it keeps once set.

        A file still in rollback-journal mode (a ``VACUUM INTO`` copy) needs an exclusive lock to
        switch: while another process writes, the connection goes on in rollback mode for now
        (reads work, as plain SQLite's do) and a later connection switches it, instead of waiting
        for that writer before a read.
        """
        if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
            return
        conn.execute("PRAGMA busy_timeout = 100")
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
        except sqlite3.OperationalError:  # locked by a writer: switched by a later connection
            pass
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise RegistryError("the registry is closed")
        if self.memory:
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
        # the in-memory database has one connection: its threads must not interleave transactions
        if self.memory:
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
            if begin == _BEGIN_WRITE and not self.memory:
                # move the write from the WAL into the database file now: SQLite does it only when
                # the last connection closes, which a killed process (a Spark worker) never does,
                # and a database file copied without its -wal file would lack the schema
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error:  # the write is committed; the next checkpoint moves it
                    pass

    def _database_error(self, exc: sqlite3.Error) -> RegistryError:
        return RegistryError(f"registry database {self.path}: {exc}", error_code=ErrorCodes.STORE_ERROR)

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    def write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``): writers serialise, and an exception rolls it back."""
        return self._transaction(_BEGIN_WRITE)

    def read(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A read transaction: one consistent snapshot of the database."""
        return self._transaction("BEGIN")

    def close(self) -> None:
        """Close every connection this store opened (in any thread)."""
        with self._lock:
            self._closed = True
            for conn in self._connections:
                conn.close()
            self._connections.clear()
            self._shared = None
