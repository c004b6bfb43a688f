"""The pulsar-codec command: the demo on the local engine, decode, registry commands, exit codes."""

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pulsar_codec
from pulsar_codec import cli, errors, wire
from pulsar_codec.cli import _console, demo_data, registry_cmd
from pulsar_codec.cli import app as cli_main
from pulsar_codec.registry import LocalRegistry

pytest_plugins = ["pulsar_fixtures"]


def run_cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "pulsar_codec", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_help_teaches():
    out = run_cli("--help")
    assert out.returncode == 0
    for command in ("demo", "decode", "registry", "dump", "bench"):
        assert command in out.stdout
    out = run_cli("decode", "--help")
    assert "\n  pulsar-codec decode raw.parquet -o decoded.parquet --registry registry.db\n" in out.stdout


def test_version_with_python_m():
    out = run_cli("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"pulsar-codec {pulsar_codec.__version__}\n"


def test_version_with_the_console_script():
    script = Path(sys.executable).with_name("pulsar-codec")
    if not script.exists():
        pytest.skip("the pulsar-codec script is not installed next to this interpreter")
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"pulsar-codec {pulsar_codec.__version__}"


def test_version_is_the_installed_distributions():
    # pyproject.toml's version and pulsar_codec.__version__ are written in two places: they must agree
    assert pulsar_codec.__version__ == importlib.metadata.version("pulsar-codec")


def test_no_command_prints_help_and_fails():
    out = run_cli()
    assert out.returncode == 2 and "usage" in out.stdout


def test_bad_arguments_exit_2():
    out = run_cli("demo", "--rows", "-1")
    assert out.returncode == 2 and out.stderr == (
        "pulsar-codec demo: argument --rows: expected a whole number >= 0, got '-1' (see pulsar-codec demo --help)\n"
    )
    out = run_cli("decode", "in.parquet")  # -o and --registry missing
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1 and "required" in out.stderr


def test_rows_zero_is_a_valid_demo_size():
    assert cli_main.build_parser().parse_args(["demo", "--rows", "0"]).rows == 0
    assert cli.main(["bench", "--rows", "0"]) == 2  # timing nothing is not a benchmark


def test_demo_local_engine(tmp_path):
    out = run_cli("demo", "--engine", "local", "--rows", "6000", "-o", str(tmp_path), "-q")
    assert out.returncode == 0, out.stderr
    assert "schema id 1 (orders-value v1)" in out.stdout
    assert "corrupt messages" in out.stdout
    decoded = pq.read_table(tmp_path / "orders-decoded.parquet")
    dead = pq.read_table(tmp_path / "orders-dead-letter.parquet")
    assert len(decoded) + len(dead) == 6000 and len(dead) >= 3
    # v1 rows read with the v3 reader get the defaults
    first = decoded.slice(0, 1).to_pylist()[0]
    assert first["items"] == [] and first["note"] is None and first["tags"] == []
    assert all(row["message"] for row in dead.to_pylist())
    customers = pq.read_table(tmp_path / "customers-decoded.parquet")
    assert customers.column_names[:2] == ["customer", "name"] and len(customers) == 600


def test_demo_framing_only():
    out = run_cli("demo", "--framing-only", "--rows", "2000")
    assert out.returncode == 0, out.stderr
    assert "round trip ok" in out.stdout and "MISMATCH" not in out.stdout
    assert "corrupt message is reported" in out.stdout


@pytest.fixture
def dumped(tmp_path):
    registry = LocalRegistry(tmp_path / "registry.db")
    gen = demo_data.generate(registry, tmp_path, rows=3000, seed=1)
    registry.close()
    return tmp_path, gen


def test_decode_command(dumped):
    folder, gen = dumped
    base = ["decode", str(gen.orders_path), "--registry", str(folder / "registry.db"), "--column", "payload"]
    out = run_cli(*base, "-o", str(folder / "all.parquet"))
    assert out.returncode == 0, out.stderr
    assert "3 bad rows" in out.stdout
    # without a dead-letter path the output keeps every row, the bad ones with their error
    table = pq.read_table(folder / "all.parquet")
    assert len(table) == 3000
    errors = [e for e in table["decode_error"].to_pylist() if e]
    assert len(errors) == 3 and all(e["message"].endswith(")") for e in errors)
    # the error names the row in the file
    bad_rows = [i for i, e in enumerate(table["decode_error"].to_pylist()) if e]
    assert f"(message {bad_rows[0]}, byte" in errors[0]["message"]

    out = run_cli(*base, "-o", str(folder / "good.parquet"), "--dead-letter", str(folder / "dead.parquet"))
    assert out.returncode == 0, out.stderr
    assert "3 bad rows" in out.stdout and str(folder / "dead.parquet") in out.stdout
    # with one, the good rows go to the output and the bad ones to the dead-letter table
    assert len(pq.read_table(folder / "good.parquet")) == 2997
    dead = pq.read_table(folder / "dead.parquet")
    assert dead["index"].to_pylist() == bad_rows and dead["payload"].null_count == 0


def test_decode_batches_number_rows_across_the_file(tmp_path, monkeypatch):
    from pulsar_codec.cli import parquet_io

    monkeypatch.setattr(parquet_io, "_BATCH", 7)
    schema = '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}'
    registry = LocalRegistry(tmp_path / "r.db")
    sid = registry.register("r-value", schema)
    messages = [wire.CONFLUENT.pack(sid, bytes([2 * i])) for i in range(20)]
    messages[15] = b"\x01" + messages[15][1:]
    pq.write_table(pa.table({"payload": pa.array(messages, pa.binary())}), tmp_path / "in.parquet")
    stats = parquet_io.decode_parquet(tmp_path / "in.parquet", tmp_path / "out.parquet", registry)
    assert (stats["rows"], stats["errors"]) == (20, 1)
    table = pq.read_table(tmp_path / "out.parquet")
    assert table["a"].to_pylist()[:3] == [0, 1, 2]
    error = table["decode_error"][15].as_py()
    assert error["message"] == "invalid magic byte 0x01, expected 0x00 (message 15, byte 0)"


def test_decode_missing_input_and_column(dumped):
    folder, gen = dumped
    out = run_cli(
        "decode",
        str(folder / "nope.parquet"),
        "-o",
        str(folder / "o.parquet"),
        "--registry",
        str(folder / "registry.db"),
    )
    assert out.returncode == 2 and "does not exist" in out.stderr
    out = run_cli(
        "decode",
        str(gen.orders_path),
        "-o",
        str(folder / "o.parquet"),
        "--registry",
        str(folder / "registry.db"),
        "--column",
        "nope",
    )
    assert out.returncode == 2 and "column 'nope'" in out.stderr


def test_decode_unknown_schema_id_is_a_bad_row(tmp_path):
    # a message from a producer of another registry costs its row, not the batch (issue 10)
    registry = LocalRegistry(tmp_path / "reg.db")
    sid = registry.register("r-value", '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}')
    registry.close()
    messages = [wire.CONFLUENT.pack(sid, b"\x02"), wire.CONFLUENT.pack(42, b"\x02")]
    pq.write_table(pa.table({"payload": pa.array(messages)}), tmp_path / "in.parquet")
    out = run_cli(
        "decode",
        str(tmp_path / "in.parquet"),
        "-o",
        str(tmp_path / "o.parquet"),
        "--registry",
        str(tmp_path / "reg.db"),
    )
    assert out.returncode == 0, out.stderr
    assert "decoded 1 of 2 rows" in out.stdout and "1 bad rows" in out.stdout


def test_registry_commands(tmp_path):
    db = str(tmp_path / "reg.db")
    v1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    v2 = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": ""}],
    }
    bad = {"type": "record", "name": "R", "fields": [{"name": "c", "type": "int"}]}
    out = run_cli("registry", "register", "--registry", db, "--subject", "t-value", "--schema", json.dumps(v1))
    assert out.returncode == 0 and json.loads(out.stdout) == {"subject": "t-value", "id": 1}
    (tmp_path / "v2.avsc").write_text(json.dumps(v2))
    out = run_cli("registry", "check", "--registry", db, "--subject", "t-value", "--schema", f"@{tmp_path / 'v2.avsc'}")
    assert out.returncode == 0 and json.loads(out.stdout)["is_compatible"] is True
    out = run_cli("registry", "check", "--registry", db, "--subject", "t-value", "--schema", json.dumps(bad))
    assert out.returncode == 1 and json.loads(out.stdout)["is_compatible"] is False
    out = run_cli("registry", "register", "--registry", db, "--subject", "t-value", "--schema", json.dumps(bad))
    assert out.returncode == 1 and "incompatible schema" in out.stderr
    assert out.stderr.count("reader field 'c' has no default") == 1  # the reason, said once
    out = run_cli("registry", "list", "--registry", db)
    assert json.loads(out.stdout) == ["t-value"]
    out = run_cli("registry", "get", "--registry", db, "--subject", "t-value")
    assert json.loads(out.stdout)["schema"] == v1
    out = run_cli("registry", "get", "--registry", db, "--id", "7")
    assert out.returncode == 4
    for action in ("register", "check"):  # a schema that does not parse is a bad argument
        out = run_cli("registry", action, "--registry", db, "--subject", "t-value", "--schema", '{"type": "recrd"}')
        assert out.returncode == 2
        assert one_line(out) == "pulsar-codec: --schema is not a valid AVRO schema: unknown Avro type 'recrd'"


def test_unreachable_registry_exits_3(tmp_path):
    out = run_cli("registry", "list", "--registry", "http://127.0.0.1:9")
    assert out.returncode in (3, 5) and "registry" in out.stderr and "Traceback" not in out.stderr


def test_registry_serve_with_confluent_client(tmp_path):
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path / "serve.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pulsar_codec", "registry", "serve", str(tmp_path / "s.db"), "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        from pulsar_codec.registry import ConfluentRegistry

        deadline = time.time() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise AssertionError((tmp_path / "serve.log").read_text() or "server did not start") from None
                time.sleep(0.2)
        client = ConfluentRegistry(f"http://127.0.0.1:{port}")
        assert client.register("x-value", '{"type": "string"}') == 1
        assert client.list_subjects() == ["x-value"]
        client.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def test_dump_unreachable_broker_fails_cleanly(tmp_path):
    out = run_cli(
        "dump",
        "--service-url",
        "pulsar://127.0.0.1:9",
        "--topic",
        "t",
        "-o",
        str(tmp_path / "x.parquet"),
        "--timeout-ms",
        "2000",
    )
    assert out.returncode != 0
    assert "Traceback" not in out.stderr


def test_main_in_process_returns_codes():
    assert cli.main(["demo", "--framing-only", "--rows", "500"]) == 0


def test_bench_command_reports_ratios():
    out = run_cli("bench", "--rows", "2000")
    assert out.returncode == 0, out.stderr
    assert "avro flat-5" in out.stdout and "fastavro recipe" in out.stdout and "x the fastest" in out.stdout


@pytest.mark.slow
def test_demo_spark_engine(tmp_path):
    pytest.importorskip("pyspark")
    out = run_cli("demo", "--engine", "spark", "--rows", "3000", "-o", str(tmp_path), "-q")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "engine: spark" in out.stdout and "spark engine" in out.stdout
    assert "log4j" not in out.stderr  # -q: the CLI's own log configuration, no Spark banner
    decoded = pq.read_table(tmp_path / "orders-decoded.parquet")
    dead = pq.read_table(tmp_path / "orders-dead-letter.parquet")
    assert len(decoded) + len(dead) == 3000 and len(dead) >= 3
    # the same tables as the local engine (one output contract)
    assert decoded.column_names == ["order_id", "customer", "amount", "status", "created", "items", "note", "tags"]
    assert dead.column_names == ["index", "payload", "schema_id", "code", "offset", "message"]
    assert all(row["message"] for row in dead.to_pylist())
    assert pq.read_table(tmp_path / "customers-decoded.parquet").num_rows == 300


# -- in-process: exit codes, registry options, engine fallbacks ---------------------------------------


@pytest.mark.parametrize(
    ("raised", "code", "message"),
    [
        (errors.SchemaNotFoundError("id 9"), 4, "schema not found: id 9"),
        (errors.IncompatibleSchemaError("no", reasons=["field a removed"]), 1, "  field a removed"),
        (errors.RegistryError("503 from registry"), 3, "registry error: 503 from registry"),
        (errors.SchemaError("bad schema"), 1, "SchemaError: bad schema"),
        (PermissionError("denied"), 2, "denied"),
        (ImportError("No module named 'pulsar'"), 2, "pip install 'pulsar-codec[all]'"),
        (ConnectionError("refused"), 5, "cannot connect: refused"),
        (errors.RegistryUnreachableError("connection refused"), 5, "registry unreachable: connection refused"),
        (KeyboardInterrupt(), 130, ""),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else None,
)
def test_exit_codes(monkeypatch, capsys, raised, code, message):
    def fail(args):
        raise raised

    monkeypatch.setattr(cli_main, "cmd_dump", fail)
    assert cli.main(["dump", "--service-url", "pulsar://x", "--topic", "t", "-o", "x.parquet"]) == code
    assert message in capsys.readouterr().err


def test_an_internal_error_is_one_line_and_verbose_shows_the_traceback(monkeypatch, capsys):
    def fail(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli_main, "cmd_dump", fail)
    argv = ["dump", "--service-url", "pulsar://x", "--topic", "t", "-o", "x.parquet"]
    assert cli.main(argv) == 1
    assert capsys.readouterr().err.splitlines() == [
        "pulsar-codec: internal error: RuntimeError: a bug",
        "pulsar-codec: run with --verbose for the traceback",
    ]
    assert cli.main([*argv, "--verbose"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "pulsar-codec: internal error: RuntimeError: a bug" in err


@pytest.mark.parametrize(
    ("argv", "level"),
    [
        ([], 0),
        (["--verbose"], 1),
        (["-v"], 1),
        (["--quiet"], -1),
        (["-q"], -1),
    ],
)
@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
def test_verbosity_flags_before_or_after_the_command(monkeypatch, argv, level, before):
    seen = {}
    monkeypatch.setattr(cli_main, "cmd_dump", lambda args: seen.setdefault("level", _console.verbosity()) and 0)
    command = ["dump", "--service-url", "pulsar://x", "--topic", "t", "-o", "x.parquet"]
    cli.main(argv + command if before else command + argv)
    assert seen["level"] == level
    _console.set_verbosity(0)


def test_verbose_and_quiet_together_are_refused(capsys):
    assert cli.main(["--verbose", "--quiet", "bench"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_verbose_sets_the_package_logger_to_debug(monkeypatch, capsys):
    import logging

    monkeypatch.setattr(cli_main, "cmd_dump", lambda args: logging.getLogger("pulsar_codec.x").debug("hello") or 0)
    command = ["dump", "--service-url", "pulsar://x", "--topic", "t", "-o", "x.parquet"]
    assert cli.main(["-v", *command]) == 0
    assert "pulsar-codec DEBUG pulsar_codec.x: hello" in capsys.readouterr().err
    assert cli.main(command) == 0
    assert "hello" not in capsys.readouterr().err
    assert logging.getLogger("pulsar_codec").level == logging.NOTSET


def test_version_in_process(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"pulsar-codec {pulsar_codec.__version__}\n"


def test_registry_options_in_process(tmp_path, capsys):
    db = str(tmp_path / "r.db")
    schema = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}
    (tmp_path / "r.avsc").write_text(json.dumps(schema))
    # a plain existing path is read as a file, like @file
    assert (
        cli.main(
            ["registry", "register", "--registry", db, "--subject", "r-value", "--schema", str(tmp_path / "r.avsc")]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out) == {"subject": "r-value", "id": 1}
    assert cli.main(["registry", "list", "--registry", db, "--subject", "r-value"]) == 0
    assert json.loads(capsys.readouterr().out) == {"subject": "r-value", "versions": [1]}
    assert cli.main(["registry", "get", "--registry", db, "--id", "1"]) == 0
    assert json.loads(capsys.readouterr().out) == {"id": 1, "schema_type": "AVRO", "schema": schema}
    assert cli.main(["registry", "get", "--registry", db]) == 2
    assert "get needs --id or --subject" in capsys.readouterr().err
    assert cli.main(["registry", "list", "--registry", db, "--user", "u", "--token", "t"]) == 2
    assert "not both" in capsys.readouterr().err
    assert cli.main(["registry", "list", "--registry", str(tmp_path / "no" / "such" / "r.db")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_open_registry_keeps_credentials_out_of_repr():
    pytest.importorskip("httpx")
    registry = registry_cmd.open_registry("https://registry.example:8081", user="alice", password="s3cret")
    try:
        assert registry.config.url == "https://registry.example:8081"
        assert registry.config.auth == ("alice", "s3cret")
        assert "s3cret" not in repr(registry.config)
    finally:
        registry.close()


def test_read_schema_arg(tmp_path):
    (tmp_path / "s.avsc").write_text('"string"')
    assert registry_cmd.read_schema_arg(f"@{tmp_path / 's.avsc'}") == '"string"'
    assert registry_cmd.read_schema_arg(str(tmp_path / "s.avsc")) == '"string"'
    assert registry_cmd.read_schema_arg('{"type": "int"}') == '{"type": "int"}'
    with pytest.raises(_console.UsageError, match="--schema @.*missing.avsc: the file .* does not exist"):
        registry_cmd.read_schema_arg(f"@{tmp_path / 'missing.avsc'}")


def test_registered_json_keeps_a_schema_that_is_not_json():
    found = registry_cmd.registered_json(type("Found", (), {"schema": "syntax = 'proto3';", "schema_id": 3})())
    assert found == {"id": 3, "schema": "syntax = 'proto3';"}


def test_password_comes_from_the_environment(monkeypatch, capsys):
    opened = {}

    class Registry:
        def list_subjects(self):
            return ["s-value"]

        def close(self):
            opened["closed"] = True

    def fake_open(spec, *, user=None, password=None, token=None, create=True):
        opened.update(spec=spec, user=user, password=password)
        return Registry()

    monkeypatch.setattr(registry_cmd, "open_registry", fake_open)
    monkeypatch.setenv("PULSAR_CODEC_REGISTRY_PASSWORD", "from-env")
    assert cli.main(["registry", "list", "--registry", "http://127.0.0.1:9", "--user", "u"]) == 0
    assert opened == {"spec": "http://127.0.0.1:9", "user": "u", "password": "from-env", "closed": True}
    assert json.loads(capsys.readouterr().out) == ["s-value"]


@pytest.mark.parametrize("missing", ["pyspark", "java"])
def test_demo_falls_back_to_the_local_engine(monkeypatch, capsys, tmp_path, missing):
    monkeypatch.setattr(cli_main, "_have", lambda module: missing != "pyspark")
    monkeypatch.setattr(cli_main, "_java_available", lambda: missing != "java")
    assert cli.main(["demo", "--rows", "3000", "-o", str(tmp_path), "-q"]) == 0
    out = capsys.readouterr()
    assert f"the spark engine needs {'PySpark' if missing == 'pyspark' else 'Java'}" in out.err
    assert "engine: local" in out.out and (tmp_path / "orders-decoded.parquet").exists()


def test_java_available_follows_java_home(monkeypatch, tmp_path):
    monkeypatch.setattr(cli_main.shutil, "which", lambda name: None)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert not cli_main._java_available()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").write_text("")
    assert cli_main._java_available()
    monkeypatch.delenv("JAVA_HOME")
    assert not cli_main._java_available()


def test_bench_records_fit_their_schemas():
    # bench/ and `pulsar-codec bench` time these records: each must be valid for its schema, and a
    # seed must give the same corpus on every run
    import random

    from fastavro import parse_schema
    from fastavro.validation import validate

    from pulsar_codec.cli import _benchdata

    makers = {"flat-5": _benchdata.flat_record, "complex-12": _benchdata.event_record}
    assert set(makers) == set(_benchdata.SCHEMAS)
    for name, make in makers.items():
        parsed = parse_schema(_benchdata.SCHEMAS[name])
        records = [make(random.Random(seed)) for seed in range(30)]
        assert all(validate(record, parsed, raise_errors=True) for record in records)
        assert records == [make(random.Random(seed)) for seed in range(30)]


# -- user errors: exit code and one line, never a traceback ------------------------------------------


def one_line(captured):
    lines = (captured.err if hasattr(captured, "err") else captured.stderr).splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


@pytest.fixture
def registry_db(tmp_path):
    registry = LocalRegistry(tmp_path / "registry.db")
    registry.register("t-value", '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}')
    registry.close()
    return str(tmp_path / "registry.db")


def decode_argv(tmp_path, registry_db, source, *more):
    return ["decode", str(source), "-o", str(tmp_path / "out.parquet"), "--registry", registry_db, *more]


def test_decode_a_text_file_exits_2_naming_it(tmp_path, registry_db, capsys):
    (tmp_path / "notes.txt").write_text("not parquet at all\n")
    assert cli.main(decode_argv(tmp_path, registry_db, tmp_path / "notes.txt")) == 2
    line = one_line(capsys.readouterr())
    assert line.startswith(f"pulsar-codec: input {tmp_path / 'notes.txt'} is not a Parquet file")


def test_decode_a_folder_without_parquet_exits_2(tmp_path, registry_db, capsys):
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "readme.txt").write_text("x")
    assert cli.main(decode_argv(tmp_path, registry_db, tmp_path / "folder")) == 2
    assert "is a folder without Parquet files" in one_line(capsys.readouterr())


def test_decode_into_a_missing_folder_exits_2(tmp_path, registry_db, capsys):
    pq.write_table(pa.table({"value": pa.array([b"x"])}), tmp_path / "in.parquet")
    argv = [
        "decode",
        str(tmp_path / "in.parquet"),
        "-o",
        str(tmp_path / "no" / "out.parquet"),
        "--registry",
        registry_db,
    ]
    assert cli.main(argv) == 2
    assert "does not exist" in one_line(capsys.readouterr())


def test_unknown_protocol_lists_the_names_of_the_help(tmp_path, registry_db, capsys):
    assert cli.main(decode_argv(tmp_path, registry_db, tmp_path / "in.parquet", "--protocol", "kafka")) == 2
    line = one_line(capsys.readouterr())
    names = ", ".join(sorted(name.lower().replace("_", "-") for name in wire.PROTOCOLS))
    assert f"unknown protocol 'kafka'; valid: {names}" in line
    assert cli.main(["decode", "--help"]) == 0
    assert " ".join(capsys.readouterr().out.split()).count(names) == 1  # the same spelling in --help
    for spelling in ("apicurio-v3", "APICURIO_V3", "Confluent"):
        assert cli_main.build_parser().parse_args(decode_argv(tmp_path, registry_db, "x", "--protocol", spelling))


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ('{"type": "record", "name"', "--reader-schema is not valid JSON"),
        ('{"type": "no-such-type"}', "--reader-schema is not a valid Avro schema"),
    ],
)
def test_bad_reader_schema_exits_2(tmp_path, registry_db, capsys, schema, message):
    pq.write_table(pa.table({"value": pa.array([b"x"])}), tmp_path / "in.parquet")
    argv = decode_argv(tmp_path, registry_db, tmp_path / "in.parquet", "--reader-schema", schema)
    assert cli.main(argv) == 2
    assert message in one_line(capsys.readouterr())


def test_decode_passes_no_column_so_the_default_is_chosen_there(tmp_path, registry_db, monkeypatch, capsys):
    from pulsar_codec.cli import parquet_io

    calls = []

    def fake_decode(input_path, output_path, registry, **options):
        calls.append(options)
        column = options.get("column", "value")
        return {"rows": 3, "decoded": 2, "errors": 1, "nulls": 0, "seconds": 0.5, "engine": "local", "column": column}

    monkeypatch.setattr(parquet_io, "decode_parquet", fake_decode)
    pq.write_table(pa.table({"value": pa.array([b"x"])}), tmp_path / "in.parquet")
    assert cli.main(decode_argv(tmp_path, registry_db, tmp_path / "in.parquet")) == 0
    assert "column" not in calls[-1]
    out = capsys.readouterr().out
    assert "decoded 2 of 3 rows" in out
    # the summary table
    for label, value in (("input rows", "3"), ("decoded", "2"), ("bad rows", "1"), ("engine", "local")):
        assert any(label in line and value in line for line in out.splitlines()), out
    assert cli.main(decode_argv(tmp_path, registry_db, tmp_path / "in.parquet", "--column", "raw", "-q")) == 0
    assert calls[-1]["column"] == "raw"
    assert capsys.readouterr().out.splitlines() == [out.splitlines()[0]]  # quiet: the result line only
    _console.set_verbosity(0)


def test_dump_malformed_service_url_exits_2(capsys):
    assert cli.main(["dump", "--service-url", "nonsense", "--topic", "t", "-o", "x.parquet"]) == 2
    assert "malformed service URL 'nonsense'" in one_line(capsys.readouterr())


def test_dump_unreachable_broker_fails_within_the_default_timeout(tmp_path):
    import socket
    import time

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    out = run_cli(
        "dump", "--service-url", f"pulsar://127.0.0.1:{port}", "--topic", "t", "-o", str(tmp_path / "x.parquet")
    )
    elapsed = time.monotonic() - start
    assert out.returncode == 5
    assert elapsed < 15
    line = one_line(out)
    assert line.startswith(f"pulsar-codec: cannot read t from pulsar://127.0.0.1:{port}") and "refused" in line
    assert "(--timeout-ms sets the wait)" in line  # the command's option, not the library's keyword
    assert (
        cli_main.build_parser()
        .parse_args(["dump", "--service-url", "pulsar://h:1", "--topic", "t", "-o", "x"])
        .timeout_ms
        == 10_000
    )


def test_dump_failures_exit_with_their_code_every_time(tmp_path):
    """pulsar-client called a Python logger from its threads while the interpreter exited, and
    about one process in eight aborted (exit 134) after a refused connection: eight at once, each
    must end with exit 5 and its one line."""
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "pulsar_codec", "dump", "--service-url", f"pulsar://127.0.0.1:{port}", "--topic", "t"]
    runs = [
        subprocess.Popen(
            [*argv, "-o", str(tmp_path / f"x{i}.parquet"), "--timeout-ms", "1500"], stderr=subprocess.PIPE, text=True
        )
        for i in range(8)
    ]
    results = [(run.wait(timeout=120), run.stderr.read() if run.stderr else "") for run in runs]
    for run in runs:
        if run.stderr:
            run.stderr.close()
    assert [code for code, _ in results] == [5] * 8, results
    assert all(err.startswith("pulsar-codec: cannot read t from") and "refused" in err for _, err in results)
    assert list(tmp_path.iterdir()) == []


def test_client_log_lines_are_read_from_the_client_s_file(tmp_path):
    from pulsar_codec.cli.app import _ClientLog

    path = tmp_path / "client.log"
    path.write_text(
        "2026-11-26 16:13:39.248 ERROR [140151151814336] ClientConnection:485 | [<none> -> pulsar://h:1] "
        "Failed to establish connection to 0.0.0.0:0: Connection refused\n"
        "2026-11-26 16:13:39.348 INFO  [140151151814336] ClientConnection:190 | Create ClientConnection\n"
        "2026-11-26 16:13:39.448 ERROR [140151151814336] ClientConnection:485 | [<none> -> pulsar://h:1] "
        "Failed to establish connection to 0.0.0.0:0: Connection refused\n"
        "a line of another shape\n"
    )
    log = _ClientLog(str(path))
    assert log.lines()[1] == ("INFO", "Create ClientConnection")
    assert log.errors == ["Failed to establish connection to 0.0.0.0:0: Connection refused"]
    assert _ClientLog(str(tmp_path / "none.log")).errors == []


def test_dump_reads_a_topic_with_a_summary(pulsar_broker, pulsar_client, pulsar_topic, tmp_path, capsys):
    producer = pulsar_client.create_producer(pulsar_topic)
    for i in range(5):
        producer.send(b"m%d" % i)
    producer.close()
    argv = ["dump", "--service-url", pulsar_broker.url, "--topic", pulsar_topic, "-o", str(tmp_path / "d.parquet")]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert f"wrote 5 messages of {pulsar_topic}" in out
    assert any("messages" in line and "5" in line for line in out.splitlines()[1:])
    assert pq.read_table(tmp_path / "d.parquet")["payload"].to_pylist() == [b"m%d" % i for i in range(5)]


@pytest.mark.parametrize("action", ["list", "get", "check"])
def test_read_only_commands_never_create_a_database(tmp_path, capsys, action):
    db = tmp_path / "typo.db"
    argv = ["registry", action, "--registry", str(db)]
    argv += {"list": [], "get": ["--id", "1"], "check": ["--subject", "s", "--schema", '"string"']}[action]
    assert cli.main(argv) == 2
    assert (
        one_line(capsys.readouterr())
        == f"pulsar-codec: no registry database at {db} (register a schema there first, or check the path)"
    )
    assert not db.exists()


def test_decode_does_not_create_a_database(tmp_path, capsys):
    pq.write_table(pa.table({"value": pa.array([b"x"])}), tmp_path / "in.parquet")
    assert cli.main(decode_argv(tmp_path, str(tmp_path / "typo.db"), tmp_path / "in.parquet")) == 2
    assert "no registry database at" in one_line(capsys.readouterr())
    assert not (tmp_path / "typo.db").exists()


def test_registry_version_is_a_number_or_latest(registry_db, capsys):
    base = ["registry", "get", "--registry", registry_db, "--subject", "t-value"]
    assert cli.main([*base, "--version", "abc"]) == 2
    assert "version must be a number from 1 up or 'latest', got 'abc'" in one_line(capsys.readouterr())
    assert cli.main([*base, "--version", "0"]) == 2
    capsys.readouterr()
    assert cli.main([*base, "--version", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == 1
    assert cli.main([*base, "--version", "latest"]) == 0
    assert cli.main([*base, "--version", "2"]) == 4  # a version that does not exist: schema not found


# -- registry serve: credentials and the port ----------------------------------------------------------


@pytest.fixture
def fake_serve(monkeypatch):
    from pulsar_codec.registry import server

    calls = []
    monkeypatch.setattr(server, "run", lambda path, host, port, **kw: calls.append((path, host, port, kw)))
    monkeypatch.delenv("PULSAR_CODEC_REGISTRY_PASSWORD", raising=False)
    return calls


def test_serve_user_without_password_refuses_to_start(tmp_path, fake_serve, capsys):
    assert cli.main(["registry", "serve", str(tmp_path / "s.db"), "--port", "0", "--user", "admin"]) == 2
    assert "--user admin needs a password" in one_line(capsys.readouterr())
    assert fake_serve == []


def test_serve_password_from_file_env_or_flag(tmp_path, fake_serve, capsys, monkeypatch):
    base = ["registry", "serve", str(tmp_path / "s.db"), "--port", "0", "--user", "admin"]
    (tmp_path / "pw").write_text("from-file\n")
    assert cli.main([*base, "--password-file", str(tmp_path / "pw")]) == 0
    assert fake_serve[-1][3]["auth"] == ("admin", "from-file")
    out = capsys.readouterr()
    assert out.err == "" and "serving" in out.out
    monkeypatch.setenv("PULSAR_CODEC_REGISTRY_PASSWORD", "from-env")
    assert cli.main(base) == 0
    assert fake_serve[-1][3]["auth"] == ("admin", "from-env")
    assert cli.main([*base, "--password", "on-the-command-line"]) == 0
    assert fake_serve[-1][3]["auth"] == ("admin", "on-the-command-line")
    warning = one_line(capsys.readouterr())
    assert "warning: --password shows the password to every user" in warning and "on-the-command-line" not in warning
    assert cli.main([*base, "--password", "x", "--password-file", str(tmp_path / "pw")]) == 2
    assert cli.main(["registry", "serve", str(tmp_path / "s.db"), "--password", "x"]) == 2  # a password needs --user
    assert cli.main([*base, "--password-file", str(tmp_path / "missing")]) == 2


def test_serve_port_0_serves_and_shows_the_port_the_system_chose(tmp_path, fake_serve, capsys):
    assert cli.main(["registry", "serve", str(tmp_path / "s.db"), "--port", "0"]) == 0
    port = fake_serve[-1][2]
    assert port > 0
    assert f"on http://127.0.0.1:{port} " in capsys.readouterr().out


def test_quiet_keeps_the_package_warnings_off_stderr():
    """-q: results and errors only; a registry that does not answer is the one error line, without
    the client's retry warnings (shown without -q). A process of its own: pytest captures logging."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    loud = run_cli("registry", "list", "--registry", url)
    assert loud.returncode == 5 and "retrying" in loud.stderr
    quiet = run_cli("registry", "list", "-q", "--registry", url)
    assert quiet.returncode == 5
    assert one_line(quiet).startswith("pulsar-codec: registry unreachable: GET")


def test_serve_on_a_busy_port_exits_2_before_saying_serving(tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = run_cli("registry", "serve", str(tmp_path / "s.db"), "--port", str(port))
    assert out.returncode == 2 and "serving" not in out.stdout
    assert one_line(out) == f"pulsar-codec: port {port} on 127.0.0.1 is already in use; choose another with --port"


# -- the console: progress and summaries ---------------------------------------------------------------


class Terminal:
    """A stderr that says it is a terminal, to see the progress bar."""

    def __init__(self):
        import io

        self.buffer = io.StringIO()

    def write(self, text):
        return self.buffer.write(text)

    def flush(self):
        pass

    def isatty(self):
        return True


def test_progress_is_silent_without_a_terminal(capsys):
    with _console.progress("work", total=3) as bar:
        bar.advance()
        bar.update(completed=3, label="done")
    assert (bar.completed, bar.total) == (3, 3)
    assert capsys.readouterr() == ("", "")


def test_progress_draws_on_a_terminal_unless_quiet(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with _console.progress("reading t") as bar:
        bar.advance(5)
        bar.update(total=10, label="reading t (10)")
    assert bar.completed == 5 and "reading t" in terminal.buffer.getvalue()
    quiet = Terminal()
    monkeypatch.setattr(sys, "stderr", quiet)
    _console.set_verbosity(-1)
    try:
        with _console.progress("x", total=1) as bar:
            bar.advance()
    finally:
        _console.set_verbosity(0)
    assert quiet.buffer.getvalue() == "" and bar.completed == 1


def test_summary_table_and_quiet(capsys):
    _console.summary("decode", [("rows", "10"), ("errors", "1")])
    out = capsys.readouterr().out
    assert "decode" in out and any("rows" in line and "10" in line for line in out.splitlines())
    _console.set_verbosity(-1)
    try:
        _console.summary("decode", [("rows", "10")])
    finally:
        _console.set_verbosity(0)
    assert capsys.readouterr().out == ""
    assert _console.library_log_level() == 30


def test_rates_print_in_a_unit_that_shows_them():
    rate = _console.rate
    assert rate(3_000_000, 1.5) == "2.00M rows/s"
    assert rate(2_000, 1.0) == "2.0k rows/s"  # 0.00M would say nothing
    assert rate(300, 2.0) == "150 rows/s"
    assert rate(10, 0.0) == "n/a"


@pytest.mark.slow
def test_decode_spark_engine_writes_avro_time_and_union_fields_as_the_local_engine(tmp_path):
    pytest.importorskip("pyspark")
    import datetime

    addr = {"type": "record", "name": "Addr", "fields": [{"name": "city", "type": "string"}]}
    schema = {
        "type": "record",
        "name": "T",
        "fields": [
            {"name": "ms", "type": {"type": "int", "logicalType": "time-millis"}},
            {"name": "us", "type": ["null", {"type": "long", "logicalType": "time-micros"}]},
            {"name": "u", "type": ["long", addr]},
        ],
    }
    u = pa.UnionArray.from_dense(
        pa.array([1, 0], pa.int8()),
        pa.array([0, 0], pa.int32()),
        [pa.array([5], pa.int64()), pa.array([{"city": "Oslo"}], pa.struct([pa.field("city", pa.string(), False)]))],
        ["long", "Addr"],
    )
    rows = pa.table(
        {
            "ms": pa.array([datetime.time(1, 2, 3, 456000), datetime.time(23, 59, 59, 999000)], pa.time32("ms")),
            "us": pa.array([datetime.time(0, 0, 0, 1), None], pa.time64("us")),
            "u": u,
        }
    )
    registry = LocalRegistry(tmp_path / "t.db")
    messages = pulsar_codec.encode(rows, registry, "t-value", schema=json.dumps(schema)).to_pylist()
    registry.close()
    # kept TIME columns: Spark reads them in their own unit and writes them so; the local engine too
    at_ns = pa.array([1_000_000_999, None, 86_399_999_999_999], pa.time64("ns"))
    at_us = pa.array([1_000_001, 2, None], pa.time64("us"))
    pq.write_table(
        pa.table({"value": pa.array([*messages, None], pa.binary()), "at": at_ns, "at_us": at_us}),
        tmp_path / "in.parquet",
    )
    tables = []
    for engine in ("local", "spark"):
        argv = [
            "decode",
            str(tmp_path / "in.parquet"),
            "-o",
            str(tmp_path / engine),
            "--keep",
            "at,at_us",
            "--registry",
        ]
        out = run_cli(*argv, str(tmp_path / "t.db"), "--engine", engine, "-q")
        assert out.returncode == 0, out.stderr[-3000:]
        tables.append(pq.read_table(tmp_path / engine))
    local, remote = tables
    # Spark's TimeType holds microseconds: both engines write Parquet TIME(MICROS)
    assert local.schema.field("ms").type == pa.time64("us") == local.schema.field("us").type
    assert local.column("at").cast(pa.int64()).to_pylist() == at_ns.cast(pa.int64()).to_pylist()
    assert local.column("at_us").to_pylist() == at_us.to_pylist()
    assert (local.schema.field("at").type, local.schema.field("at_us").type) == (pa.time64("ns"), pa.time64("us"))
    assert local.schema.remove_metadata() == remote.schema.remove_metadata()
    assert local.to_pylist() == remote.to_pylist()
    assert local.column("ms").to_pylist() == [datetime.time(1, 2, 3, 456000), datetime.time(23, 59, 59, 999000), None]
    assert local.column("u").to_pylist() == [{"long": None, "Addr": {"city": "Oslo"}}, {"long": 5, "Addr": None}, None]
