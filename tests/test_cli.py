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
from pulsar_codec.cli import app as cli_main
from pulsar_codec.cli import demo, registry_cmd
from pulsar_codec.registry import LocalRegistry


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
    assert "Example: pulsar-codec decode" in out.stdout


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
    assert run_cli("demo", "--rows", "0").returncode == 2
    assert run_cli("decode", "in.parquet").returncode == 2  # -o and --registry missing


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
    assert all(row["error"] for row in dead.to_pylist())
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
    gen = demo.generate(registry, tmp_path, rows=3000, seed=1)
    registry.close()
    return tmp_path, gen


def test_decode_command(dumped):
    folder, gen = dumped
    out = run_cli(
        "decode",
        str(gen.orders_path),
        "-o",
        str(folder / "out.parquet"),
        "--registry",
        str(folder / "registry.db"),
        "--dead-letter",
        str(folder / "dead.parquet"),
    )
    assert out.returncode == 0, out.stderr
    assert "3 bad rows" in out.stdout
    table = pq.read_table(folder / "out.parquet")
    assert len(table) == 3000
    errors = [e for e in table["decode_error"].to_pylist() if e]
    assert len(errors) == 3 and all(e["message"].endswith(")") for e in errors)
    dead = pq.read_table(folder / "dead.parquet")
    assert len(dead) == 3 and dead["payload"].null_count == 0
    # the error names the row in the file
    bad_rows = [i for i, e in enumerate(table["decode_error"].to_pylist()) if e]
    assert f"(message {bad_rows[0]}, byte" in errors[0]["message"]


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
    assert out.returncode == 1 and "column 'nope'" in out.stderr


def test_decode_unknown_schema_id_exits_4(tmp_path):
    registry = LocalRegistry(tmp_path / "empty.db")
    registry.close()
    pq.write_table(pa.table({"payload": pa.array([wire.CONFLUENT.pack(42, b"\x02")])}), tmp_path / "in.parquet")
    out = run_cli(
        "decode",
        str(tmp_path / "in.parquet"),
        "-o",
        str(tmp_path / "o.parquet"),
        "--registry",
        str(tmp_path / "empty.db"),
    )
    assert out.returncode == 4 and "schema not found" in out.stderr


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
    out = run_cli("registry", "list", "--registry", db)
    assert json.loads(out.stdout) == ["t-value"]
    out = run_cli("registry", "get", "--registry", db, "--subject", "t-value")
    assert json.loads(out.stdout)["schema"] == v1
    out = run_cli("registry", "get", "--registry", db, "--id", "7")
    assert out.returncode == 4


def test_unreachable_registry_exits_3(tmp_path):
    out = run_cli("registry", "list", "--registry", "http://127.0.0.1:9")
    assert out.returncode == 3 and "registry error" in out.stderr


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
    decoded = pq.read_table(tmp_path / "orders-decoded.parquet")
    dead = pq.read_table(tmp_path / "orders-dead-letter.parquet")
    assert len(decoded) + len(dead) == 3000 and len(dead) >= 3
    assert {"order_id", "items", "note", "tags", "publish_time"} <= set(decoded.column_names)
    assert all(e["message"] for e in dead["decode_error"].to_pylist())
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


def test_other_exceptions_are_not_swallowed(monkeypatch):
    def fail(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli_main, "cmd_dump", fail)
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main(["dump", "--service-url", "pulsar://x", "--topic", "t", "-o", "x.parquet"])


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
    with pytest.raises(FileNotFoundError):
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

    def fake_open(spec, *, user=None, password=None, token=None):
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


def test_progress_bar(capsys):
    bar = demo.Progress(2)
    bar.step("one")
    bar.step("two")
    assert capsys.readouterr().err.splitlines() == [
        "[############............] 1/2 one",
        "[########################] 2/2 two",
    ]
    quiet = demo.Progress(1, enabled=False)
    quiet.step("x")
    assert capsys.readouterr().err == "" and quiet.done == 1


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
