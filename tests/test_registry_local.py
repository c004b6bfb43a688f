"""The embedded SQLite registry: Confluent semantics, atomic writes, threads and processes."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import sqlite3
import threading

import pytest

from pulsar_codec.compat import Strategy
from pulsar_codec.errors import IncompatibleSchemaError, RegistryError, SchemaError, SchemaNotFoundError
from pulsar_codec.registry import LocalRegistry, RegisteredSchema, RegistryConfig


def record(*fields, name="Event"):
    return json.dumps({"type": "record", "name": name, "fields": [dict(f) for f in fields]})


A = {"name": "a", "type": "int"}
B_REQ = {"name": "b", "type": "string"}
B_OPT = {"name": "b", "type": "string", "default": ""}
C_OPT = {"name": "c", "type": "long", "default": 0}
V1 = record(A)
V2 = record(A, B_OPT)
V3 = record(A, B_OPT, C_OPT)


@pytest.fixture(params=["memory", "file"])
def reg(request, tmp_path):
    path = ":memory:" if request.param == "memory" else tmp_path / "registry.db"
    with LocalRegistry(path) as registry:
        yield registry


def dump(path):
    """Every row of every table, to compare database states."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return {
            table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall())
            for table in ("schemas", "versions", "config", "sqlite_sequence")
        }


def test_ids_are_global_and_deduplicated(reg):
    first = reg.register("orders-value", V1)
    assert first == 1
    assert reg.register("payments-value", V1) == first  # another subject, same schema, same id
    spaced = json.dumps(json.loads(V1), indent=2)
    assert reg.register("orders-value", spaced) == first  # same canonical form
    assert reg.list_versions("orders-value") == [1]  # no new version for a live schema
    second = reg.register("orders-value", V2)
    assert second == 2
    assert reg.list_versions("orders-value") == [1, 2]
    # differences that change decoding or evolution give a new id
    timestamp = record({"name": "a", "type": {"type": "int", "logicalType": "date"}})
    reg.set_compatibility("NONE", "other")
    assert reg.register("other", timestamp) == 3
    assert reg.get_schema(3).schema == timestamp


def test_get_schema_contract(reg):
    schema_id = reg.register("s", V1)
    got = reg.get_schema(schema_id)
    assert isinstance(got, RegisteredSchema)
    assert got.schema == V1 and got.schema_str == V1
    assert got.schema_type == "AVRO" and got.id == got.schema_id == schema_id
    with pytest.raises(SchemaNotFoundError) as info:
        reg.get_schema(99)
    assert info.value.error_code == 40403
    assert isinstance(info.value, LookupError)


def test_versions_latest_lookup_and_lists(reg):
    reg.register("s", V1)
    reg.register("s", V2)
    reg.register("t", V3)
    assert reg.get_latest("s") == RegisteredSchema(2, V2, "AVRO", "s", 2)
    assert reg.get_version("s", 1).schema == V1
    assert reg.get_version("s", "1").version == 1
    assert reg.get_version("s", -1).version == 2
    assert reg.lookup("s", json.loads(V1)) == RegisteredSchema(1, V1, "AVRO", "s", 1)
    assert reg.list_subjects() == ["s", "t"]
    assert reg.list_versions("t") == [1]
    assert reg.get_schema_versions(1) == [("s", 1)]
    assert reg.get_schema_versions(3) == [("t", 1)]
    for call, code in [
        (lambda: reg.get_version("nope", 1), 40401),
        (lambda: reg.get_version("s", 7), 40402),
        (lambda: reg.get_latest("nope"), 40401),
        (lambda: reg.lookup("nope", V1), 40401),
        (lambda: reg.lookup("s", V3), 40403),
        (lambda: reg.list_versions("nope"), 40401),
        (lambda: reg.get_schema_versions(42), 40403),
    ]:
        with pytest.raises(SchemaNotFoundError) as info:
            call()
        assert info.value.error_code == code
    with pytest.raises(RegistryError) as info:
        reg.get_version("s", "two")
    assert info.value.error_code == 42202
    with pytest.raises(RegistryError):
        reg.get_version("s", 0)


def test_compatibility_levels(reg):
    assert reg.get_compatibility() == "BACKWARD"
    assert reg.get_compatibility("s") == "BACKWARD"
    reg.register("s", V1)
    with pytest.raises(IncompatibleSchemaError) as info:
        reg.register("s", record(A, B_REQ))  # b has no default: cannot read version 1
    assert info.value.reasons == [
        "READER_FIELD_MISSING_DEFAULT_VALUE at /fields/1 (Event.b): new schema cannot read version 1: "
        "reader field 'b' has no default and the writer has no such field"
    ]
    assert "BACKWARD" in str(info.value)
    assert reg.list_versions("s") == [1]
    assert reg.set_compatibility("none", "s") == "NONE"
    assert reg.get_compatibility("s") == "NONE" and reg.get_compatibility() == "BACKWARD"
    assert reg.subject_compatibility("s") == "NONE" and reg.subject_compatibility("t") is None
    assert reg.register("s", record(A, B_REQ)) == 2
    reg.delete_compatibility("s")
    assert reg.get_compatibility("s") == "BACKWARD"
    reg.set_compatibility(Strategy.FORWARD)
    assert reg.get_compatibility("s") == "FORWARD"
    with pytest.raises(ValueError, match="unknown compatibility strategy"):
        reg.set_compatibility("SIDEWAYS")


def test_transitive_levels_check_every_live_version(reg):
    reg.set_compatibility("BACKWARD_TRANSITIVE", "s")
    reg.register("s", V1)
    reg.register("s", V2)
    with pytest.raises(IncompatibleSchemaError) as info:
        reg.register("s", record(A, B_REQ, C_OPT))  # reads version 2, not version 1
    assert any("version 1" in r for r in info.value.reasons)
    reg.set_compatibility("BACKWARD", "s")
    assert reg.register("s", record(A, B_REQ, C_OPT)) == 3
    # soft-deleted versions are no longer checked
    reg.set_compatibility("FORWARD_TRANSITIVE", "u")
    reg.register("u", record(A, B_REQ))
    reg.delete_version("u", 1)
    reg.set_compatibility("FORWARD_TRANSITIVE", "u")
    assert reg.register("u", record(B_OPT)) == 5


def test_always_incompatible_accepts_only_the_first_version(reg):
    reg.set_compatibility("ALWAYS_INCOMPATIBLE")
    reg.register("s", V1)
    assert reg.register("s", V1) == 1  # already registered
    with pytest.raises(IncompatibleSchemaError, match="ALWAYS_INCOMPATIBLE"):
        reg.register("s", V2)


def test_soft_delete_hides_but_keeps_ids(reg):
    reg.register("s", V1)
    reg.register("s", V2)
    reg.register("t", V3)
    assert reg.delete_version("s", "latest") == 2
    assert reg.get_latest("s").version == 1
    assert reg.list_versions("s") == [1]
    assert reg.list_versions("s", deleted=True) == [1, 2]
    assert reg.get_schema(2).schema == V2  # old messages still decode
    assert reg.get_schema_versions(2) == []
    assert reg.get_schema_versions(2, deleted=True) == [("s", 2)]
    with pytest.raises(SchemaNotFoundError):
        reg.get_version("s", 2)
    assert reg.get_version("s", 2, deleted=True).schema == V2
    with pytest.raises(SchemaNotFoundError):
        reg.lookup("s", V2)
    assert reg.lookup("s", V2, deleted=True).version == 2

    assert reg.delete_subject("s") == [1]
    assert reg.list_subjects() == ["t"]
    assert reg.list_subjects(deleted=True) == ["s", "t"]
    with pytest.raises(SchemaNotFoundError) as info:
        reg.get_latest("s")
    assert info.value.error_code == 40401
    assert reg.get_schema(1).schema == V1
    with pytest.raises(RegistryError) as info:
        reg.delete_subject("s")
    assert info.value.error_code == 40404
    with pytest.raises(RegistryError) as info:
        reg.delete_version("s", 1)
    assert info.value.error_code == 40406


def test_reregistering_a_soft_deleted_schema_makes_a_new_version(reg):
    # as Confluent: the next version is one more than any version the subject had, and the
    # soft-deleted version holding the same id is removed for good
    reg.register("s", V1)
    reg.register("s", V2)
    reg.delete_subject("s")
    assert reg.register("s", V1) == 1
    assert reg.list_versions("s") == [3]
    assert reg.list_versions("s", deleted=True) == [2, 3]
    assert reg.get_latest("s") == RegisteredSchema(1, V1, "AVRO", "s", 3)


def test_permanent_delete_only_after_soft_delete(reg):
    reg.register("s", V1)
    reg.register("s", V2)
    reg.set_compatibility("FULL", "s")
    with pytest.raises(RegistryError) as info:
        reg.delete_subject("s", permanent=True)
    assert info.value.error_code == 40405 and info.value.status == 404
    with pytest.raises(RegistryError) as info:
        reg.delete_version("s", 1, permanent=True)
    assert info.value.error_code == 40407
    assert reg.delete_version("s", 1) == 1
    assert reg.delete_version("s", 1, permanent=True) == 1
    assert reg.list_versions("s", deleted=True) == [2]
    with pytest.raises(SchemaNotFoundError) as info:
        reg.get_schema(1)  # no version holds id 1 any more
    assert info.value.error_code == 40403
    reg.delete_subject("s")
    assert reg.delete_subject("s", permanent=True) == [2]
    assert reg.list_subjects(deleted=True) == []
    assert reg.get_compatibility("s") == "BACKWARD"  # the subject's level went with it
    with pytest.raises(SchemaNotFoundError) as info:
        reg.delete_subject("s")
    assert info.value.error_code == 40401
    with pytest.raises(SchemaNotFoundError) as info:
        reg.delete_version("s", 1)
    assert info.value.error_code == 40401
    # the content keeps its id if registered again; versions start over
    assert reg.register("s", V2) == 2
    assert reg.list_versions("s") == [1]


def test_delete_version_errors(reg):
    reg.register("s", V1)
    with pytest.raises(SchemaNotFoundError) as info:
        reg.delete_version("s", 5)
    assert info.value.error_code == 40402


def test_check_compatibility(reg):
    assert reg.check_compatibility("new-subject", V1)  # nothing to be incompatible with
    reg.register("s", V1)
    reg.register("s", V2)
    bad = record(A, B_REQ, {"name": "d", "type": "int"})
    result = reg.check_compatibility("s", bad)
    assert not result and all("version 2" in r for r in result.reasons)
    assert reg.check_compatibility("s", record(A, B_REQ))  # reads version 2
    assert not reg.check_compatibility("s", record(A, B_REQ), version=1)
    assert reg.check_compatibility("s", record(A, B_REQ), version=2)
    reg.set_compatibility("BACKWARD_TRANSITIVE", "s")
    assert not reg.check_compatibility("s", record(A, B_REQ), version=None)  # all versions
    assert reg.check_compatibility("s", record(A, B_REQ), version="latest")
    with pytest.raises(SchemaNotFoundError) as info:
        reg.check_compatibility("s", V1, version=9)
    assert info.value.error_code == 40402
    with pytest.raises(SchemaNotFoundError) as info:
        reg.check_compatibility("nope", V1, version=1)
    assert info.value.error_code == 40401
    assert reg.list_versions("s") == [1, 2]  # checks never register


def test_other_schema_types(reg):
    js = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    schema_id = reg.register("j", js, schema_type="JSON")
    assert reg.get_schema(schema_id).schema_type == "JSON"
    assert reg.register("j", json.dumps(json.loads(js), indent=1), schema_type="json") == schema_id
    assert reg.register("j", json.dumps({"type": "object"}), schema_type="JSON") == schema_id + 1  # no content check
    proto = 'syntax = "proto3";\nmessage M { int32 a = 1; }\n'
    proto_id = reg.register("p", proto, schema_type="PROTOBUF")
    assert reg.lookup("p", proto.strip(), schema_type="PROTOBUF").id == proto_id
    with pytest.raises(IncompatibleSchemaError, match="is a JSON schema, the new schema is AVRO"):
        reg.register("j", V1)
    with pytest.raises(SchemaError):
        reg.register("j", "{not json", schema_type="JSON")
    with pytest.raises(SchemaError, match="unsupported schema type"):
        reg.register("x", V1, schema_type="THRIFT")


def test_invalid_input_writes_nothing(reg):
    with pytest.raises(SchemaError):
        reg.register("s", '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "Missing"}]}')
    with pytest.raises(RegistryError, match="invalid subject"):
        reg.register("", V1)
    assert reg.list_subjects(deleted=True) == []
    assert reg.register("s", V1) == 1


def test_file_persists_across_instances(tmp_path):
    path = tmp_path / "reg.db"
    with LocalRegistry(path) as one:
        one.register("s", V1)
        one.set_compatibility("FULL")
    with LocalRegistry(str(path)) as two:
        assert two.get_latest("s").schema == V1
        assert two.get_compatibility() == "FULL"
        assert two.path == str(path)
    assert "reg.db" in repr(two)


def test_closed_registry_refuses_work(tmp_path):
    reg = LocalRegistry(tmp_path / "r.db")
    reg.close()
    with pytest.raises(RegistryError, match="closed"):
        reg.register("s", V1)


def test_file_that_is_not_a_database_leaks_no_connection(tmp_path, monkeypatch):
    # the connection opened before "file is not a database" surfaces must be closed, not left to
    # the garbage collector (Python 3.13 warns about unclosed SQLite connections)
    path = tmp_path / "not-a-db.db"
    path.write_bytes(b"this is not an SQLite database, only some text long enough for a header" * 2)
    opened = []
    real_connect = sqlite3.connect

    def connect(*args, **kwargs):
        conn = real_connect(*args, **kwargs)
        opened.append(conn)
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    with pytest.raises(RegistryError, match="not a database"):
        LocalRegistry(path)
    assert opened
    for conn in opened:
        with pytest.raises(sqlite3.ProgrammingError, match="closed"):
            conn.execute("SELECT 1")


# --------------------------------------------------------------------------------------------
# failed writes leave the database as it was


class FailAfterSchemaRow(LocalRegistry):
    """Fails between the statements of a registration: after the schema row is inserted and the
    soft-deleted duplicates removed, before the version row."""

    armed = False

    def _insert_version(self, conn, subject, version, schema_id):
        if self.armed:
            raise RuntimeError("injected failure")
        super()._insert_version(conn, subject, version, schema_id)


def test_failure_between_statements_rolls_back(tmp_path):
    path = tmp_path / "r.db"
    with FailAfterSchemaRow(path) as reg:
        reg.register("s", V1)
        reg.register("s", V2)
        reg.delete_version("s", 1)  # re-registering V1 would remove this row
        before = dump(path)
        reg.armed = True
        with pytest.raises(RuntimeError, match="injected"):
            reg.register("s", V1)  # would remove the soft-deleted v1 and add v3
        with pytest.raises(RuntimeError, match="injected"):
            reg.register("t", V3)  # would add schema row 3
        assert dump(path) == before
        reg.armed = False
        assert reg.register("t", V3) == 3  # the failed attempt did not use up id 3
        assert reg.list_versions("s", deleted=True) == [1, 2]


def test_database_failure_rolls_back_and_becomes_registry_error(tmp_path):
    path = tmp_path / "r.db"
    with LocalRegistry(path) as reg:
        reg.register("s", V1)
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.execute(
                "CREATE TRIGGER boom BEFORE INSERT ON versions WHEN NEW.subject = 'boom' "
                "BEGIN SELECT RAISE(ABORT, 'injected by trigger'); END"
            )
        before = dump(path)
        with pytest.raises(RegistryError, match="injected by trigger") as info:
            reg.register("boom", V2)  # the schema row goes in first, then the trigger fires
        assert info.value.error_code == 50001
        assert dump(path) == before
        assert reg.register("fine", V2) == 2


# --------------------------------------------------------------------------------------------
# concurrency

SHAPES = [record(A, {"name": f"f{i}", "type": "long", "default": 0}) for i in range(6)]


def _register_many(path, worker, rounds, results):
    with LocalRegistry(path) as reg:
        for i in range(rounds):
            schema = SHAPES[(worker + i) % len(SHAPES)]
            subject = f"subject-{i % 3}"
            results.append((subject, schema, reg.register(subject, schema)))


def _process_worker(path, worker, rounds, queue):
    results = []
    _register_many(path, worker, rounds, results)
    queue.put(results)


def _assert_consistent(path, results):
    ids = {}
    for _subject, schema, schema_id in results:
        assert ids.setdefault(schema, schema_id) == schema_id  # one schema, one id everywhere
    assert len(set(ids.values())) == len(ids)  # different schemas, different ids
    with LocalRegistry(path) as reg:
        for subject in reg.list_subjects():
            versions = reg.list_versions(subject)
            assert versions == list(range(1, len(versions) + 1))  # contiguous, no duplicates
            registered = {reg.get_version(subject, v).schema for v in versions}
            expected = {schema for s, schema, _ in results if s == subject}
            assert registered == expected and len(registered) == len(versions)
        assert sorted(reg.get_schema(i).schema for i in ids.values()) == sorted(ids)


def test_concurrent_threads_share_one_file(tmp_path):
    path = tmp_path / "threads.db"
    with LocalRegistry(path) as setup:
        setup.set_compatibility("NONE")
    results: list = []
    shared = LocalRegistry(path)

    def shared_worker(worker):
        for i in range(15):
            schema = SHAPES[(worker * 7 + i) % len(SHAPES)]
            results.append((f"subject-{i % 3}", schema, shared.register(f"subject-{i % 3}", schema)))

    threads = [threading.Thread(target=_register_many, args=(path, w, 15, results)) for w in range(4)]
    threads += [threading.Thread(target=shared_worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    shared.close()
    assert len(results) == 120
    _assert_consistent(path, results)


def test_concurrent_threads_on_memory_registry():
    reg = LocalRegistry(":memory:")
    reg.set_compatibility("NONE")
    results: list = []

    def worker(w):
        for i in range(20):
            schema = SHAPES[(w + i) % len(SHAPES)]
            results.append((f"s{i % 2}", schema, reg.register(f"s{i % 2}", schema)))

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = {schema: i for _, schema, i in results}
    assert len(set(ids.values())) == len(SHAPES)
    for subject in reg.list_subjects():
        versions = reg.list_versions(subject)
        assert versions == list(range(1, len(versions) + 1))
    reg.close()


def test_concurrent_processes_share_one_file(tmp_path):
    path = str(tmp_path / "procs.db")
    with LocalRegistry(path) as setup:
        setup.set_compatibility("NONE")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_process_worker, args=(path, w, 20, queue)) for w in range(6)]
    for p in procs:
        p.start()
    results = []
    for _ in procs:
        results.extend(queue.get(timeout=120))
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert len(results) == 120
    _assert_consistent(path, results)


# --------------------------------------------------------------------------------------------
# opening without creating, and errors that name the file


def test_create_false_never_creates_a_database(tmp_path):
    path = tmp_path / "typo.db"
    with pytest.raises(RegistryError, match=f"no registry database at {path}"):
        LocalRegistry(path, create=False)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RegistryError, match="no registry database at"):
        RegistryConfig(path=str(path)).build(create=False)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RegistryError, match="no registry database at"):
        LocalRegistry(tmp_path, create=False)  # a folder is not a database either


def test_create_false_opens_an_existing_registry(tmp_path):
    path = tmp_path / "reg.db"
    with LocalRegistry(path) as reg:
        reg.register("s", V1)
    with LocalRegistry(path, create=False) as reg:
        assert reg.list_subjects() == ["s"]
        assert reg.get_schema(1).schema == V1
        assert reg.register("s", V2) == 2  # an existing registry stays writable
    with RegistryConfig(path=str(path)).build(create=False) as reg:
        assert reg.list_versions("s") == [1, 2]


def test_files_that_are_not_registries_are_named(tmp_path):
    text_file = tmp_path / "notes.txt"
    text_file.write_bytes(b"plain text, certainly not an SQLite database; long enough for a header" * 2)
    for create in (True, False):
        with pytest.raises(RegistryError, match=f"registry database {text_file}: file is not a database"):
            LocalRegistry(text_file, create=create)
    other = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(other)) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(RegistryError, match=f"registry database {other}: .*without the registry's tables"):
        LocalRegistry(other, create=False)
    with pytest.raises(RegistryError, match=f"registry database {tmp_path / 'missing-dir' / 'r.db'}"):
        LocalRegistry(tmp_path / "missing-dir" / "r.db")


def test_database_errors_name_the_file(tmp_path):
    path = tmp_path / "r.db"
    with LocalRegistry(path) as reg:
        reg.register("s", V1)
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.execute("DROP TABLE config")
        with pytest.raises(RegistryError, match=f"registry database {path}: no such table: config") as info:
            reg.get_compatibility()
        assert info.value.error_code == 50001


def test_ids_past_the_integer_range_are_not_found(reg):
    reg.register("s", V1)
    for schema_id in (2**63, 10**23, -(2**70)):
        with pytest.raises(SchemaNotFoundError) as info:
            reg.get_schema(schema_id)
        assert info.value.error_code == 40403
        with pytest.raises(SchemaNotFoundError):
            reg.get_schema_versions(schema_id)


def test_deeply_nested_schemas_are_schema_errors(reg):
    deep = '{"type": "array", "items": ' * 5000 + '"int"' + "}" * 5000
    reg.register("s", V1)
    with pytest.raises(SchemaError):
        reg.register("s", deep)
    with pytest.raises(SchemaError):
        reg.lookup("s", deep)
    with pytest.raises(SchemaError):
        reg.check_compatibility("s", deep)
    assert reg.list_versions("s") == [1]


# --------------------------------------------------------------------------------------------
# a writer killed mid-way


_KILLED_WRITER = """
import json, sys
from pulsar_codec.registry import LocalRegistry
reg = LocalRegistry(sys.argv[1])
reg.set_compatibility("NONE")
i = 0
while True:
    schema = {"type": "record", "name": "R", "fields": [{"name": f"f{i}", "type": "int", "default": 0}]}
    reg.register(f"subject-{i % 3}", json.dumps(schema))
    i += 1
    if i == 20:
        print("ready", flush=True)
"""


def test_writer_killed_with_sigkill_leaves_a_database_that_reopens(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    path = tmp_path / "killed.db"
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
    with LocalRegistry(path, create=False) as reg:
        subjects = reg.list_subjects()
        assert subjects and len(subjects) <= 3
        ids = set()
        for subject in subjects:
            versions = reg.list_versions(subject)
            assert versions == list(range(1, len(versions) + 1))
            ids.update(reg.get_version(subject, v).id for v in versions)
        assert len(ids) >= 20 and sorted(ids) == list(range(1, len(ids) + 1))
        new_id = reg.register("after", V1)
        assert new_id == max(ids) + 1


def test_a_write_reaches_the_database_file_while_other_connections_stay_open(tmp_path):
    """A Spark worker's registry connection is never closed (the process is killed): the schemas
    must still be in the database file itself, so a copy of that file alone holds them."""
    import shutil

    path = tmp_path / "schemas.db"
    reader = LocalRegistry(path)
    assert reader.list_subjects() == []  # an open connection, like an executor's
    writer = LocalRegistry(path)
    schema_id = writer.register("orders-value", json.dumps({"type": "record", "name": "O", "fields": []}))
    writer.close()
    shutil.copyfile(path, tmp_path / "copy.db")  # the file alone, without its -wal
    copy = LocalRegistry(tmp_path / "copy.db", create=False)
    try:
        assert copy.list_subjects() == ["orders-value"]
        assert copy.get_latest("orders-value").schema_id == schema_id
    finally:
        copy.close()
        reader.close()


def test_opening_a_current_registry_does_not_wait_for_another_writer(tmp_path):
    """Opening an up-to-date registry file only reads it: while another connection (another
    process: a Spark executor, the REST facade) holds the write lock, it opens and reads at once;
    a write still waits for the lock and then says so."""
    import time

    path = str(tmp_path / "schemas.db")
    with LocalRegistry(path) as first:
        schema_id = first.register("orders-value", '{"type": "string"}')
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        start = time.monotonic()
        with LocalRegistry(path, timeout=1.0) as again:
            assert again.get_schema(schema_id).schema == '{"type": "string"}'
            assert time.monotonic() - start < 0.9
            with pytest.raises(RegistryError, match="locked"):
                again.register("orders-value", '{"type": "long"}')
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_copy_in_rollback_journal_mode_reads_while_another_process_writes(tmp_path):
    """A registry file not yet in WAL mode (a ``VACUUM INTO`` backup) needs an exclusive lock to
    switch: while another connection writes, it opens and reads in rollback mode, as plain SQLite
    reads it, and the next connection without a writer switches it to WAL."""
    import time

    source, copy = str(tmp_path / "schemas.db"), str(tmp_path / "copy.db")
    with LocalRegistry(source) as registry:
        schema_id = registry.register("orders-value", '{"type": "string"}')
    backup = sqlite3.connect(source)
    backup.execute(f"VACUUM INTO '{copy}'")
    backup.close()
    holder = sqlite3.connect(copy, isolation_level=None)
    assert holder.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    holder.execute("BEGIN IMMEDIATE")
    try:
        start = time.monotonic()
        with LocalRegistry(copy, create=False, timeout=2.0) as reader:
            assert reader.get_schema(schema_id).schema == '{"type": "string"}'
        assert time.monotonic() - start < 1.5
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with LocalRegistry(copy, create=False) as again:
        assert again.get_schema(schema_id).id == schema_id
    check = sqlite3.connect(copy)
    assert check.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    check.close()
