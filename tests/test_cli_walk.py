"""The command as a new user meets it: dump then decode with no --column, a failed dump leaves no
file, every count of the decode summary, the demo's timing lines, registry arguments and --help."""

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pulsar_codec import cli, wire
from pulsar_codec.cli import _broker, _console, demo, registry_cmd
from pulsar_codec.cli import app as cli_main
from pulsar_codec.registry import LocalRegistry

pytest_plugins = ["pulsar_fixtures"]

SCHEMA = '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}'
README = Path(__file__).resolve().parents[1] / "README.md"


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "pulsar_codec", *args], capture_output=True, text=True, timeout=300)


def one_line(captured):
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


def closed_port():
    with socket.socket() as s:  # bound, then closed: nobody listens on it
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def registry_db(tmp_path):
    registry = LocalRegistry(tmp_path / "registry.db")
    sid = registry.register("r-value", SCHEMA)
    registry.close()
    return str(tmp_path / "registry.db"), sid


def dump_shaped(path, payloads):
    """A table with the columns `pulsar-codec dump` writes (three of them binary)."""
    from pulsar_codec.pulsar import MESSAGE_SCHEMA

    n = len(payloads)
    columns = {
        "payload": pa.array(payloads, pa.binary()),
        "key": pa.array([None] * n, pa.string()),
        "key_bytes": pa.array([None] * n, pa.binary()),
        "properties": pa.array([[]] * n, pa.map_(pa.string(), pa.string())),
        "publish_time": pa.array([1_700_000_000_000] * n, pa.timestamp("ms", tz="UTC")),
        "event_time": pa.array([None] * n, pa.timestamp("ms", tz="UTC")),
        "message_id": pa.array([f"{i}:0:-1".encode() for i in range(n)], pa.binary()),
        "topic": pa.array(["persistent://public/default/t"] * n, pa.string()),
        "schema_version": pa.array([None] * n, pa.int64()),
        "redelivery_count": pa.array([0] * n, pa.int32()),
    }
    pq.write_table(pa.table(columns, schema=MESSAGE_SCHEMA), path)


# -- 1. dump then decode: the payload column is the default --------------------------------------------


def test_dump_shaped_input_decodes_without_column(tmp_path, registry_db, capsys):
    db, sid = registry_db
    dump_shaped(tmp_path / "raw.parquet", [wire.CONFLUENT.pack(sid, bytes([2 * i])) for i in range(4)] + [None])
    argv = ["decode", str(tmp_path / "raw.parquet"), "-o", str(tmp_path / "out"), "--registry", db]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert "decoded 4 of 5 rows" in capsys.readouterr().out
    assert pq.read_table(tmp_path / "out")["a"].to_pylist() == [0, 1, 2, 3, None]
    # value still wins over payload, and the help says the order
    assert cli_main.build_parser().parse_args(["decode", "x", "-o", "y", "--registry", db]).column is None
    assert cli.main(["decode", "--help"]) == 0
    assert "default: value, else payload as `pulsar-codec dump` writes it" in " ".join(capsys.readouterr().out.split())


def test_value_comes_before_payload_and_ambiguity_names_both(tmp_path, registry_db, capsys):
    from pulsar_codec.cli._contract import resolve_column

    both = pa.schema([("payload", pa.binary()), ("value", pa.binary())])
    assert resolve_column(both, None, "x") == "value"
    # a string payload is no message column: the only binary column is
    assert resolve_column(pa.schema([("payload", pa.string()), ("raw", pa.binary())]), None, "x") == "raw"
    with pytest.raises(_console.UsageError, match="neither a 'value' column nor a binary 'payload' column"):
        resolve_column(pa.schema([("raw", pa.binary()), ("key", pa.binary())]), None, "x")


def test_keep_brings_the_dumps_columns_along(tmp_path, registry_db, capsys):
    db, sid = registry_db
    dump_shaped(tmp_path / "raw.parquet", [wire.CONFLUENT.pack(sid, bytes([2 * i])) for i in range(3)] + [b"\x07x"])
    base = ["decode", str(tmp_path / "raw.parquet"), "-o", str(tmp_path / "out"), "--registry", db]
    assert cli.main([*base, "--keep", "message_id,publish_time,key"]) == 0, capsys.readouterr().err
    table = pq.read_table(tmp_path / "out")
    assert table.column_names == ["key", "publish_time", "message_id", "a", "decode_error"]
    assert table["message_id"].to_pylist() == [f"{i}:0:-1".encode() for i in range(4)]
    assert table.schema.field("publish_time").type == pa.timestamp("us", tz="UTC")
    assert table["a"].to_pylist() == [0, 1, 2, None]
    # all: every column but the messages'; with a dead-letter path its table keeps its own columns
    argv = [*base, "--keep", "all", "--dead-letter", str(tmp_path / "dead")]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert pq.read_table(tmp_path / "out").column_names[:-1] == pq.read_schema(tmp_path / "raw.parquet").names[1:]
    dead = pq.read_table(tmp_path / "dead")
    assert dead.column_names == ["index", "payload", "schema_id", "code", "offset", "message"]
    assert "--keep COL[,COL...]" in help_text(capsys, "decode")


def test_keep_errors_are_usage_errors(tmp_path, registry_db, capsys):
    db, sid = registry_db
    dump_shaped(tmp_path / "raw.parquet", [wire.CONFLUENT.pack(sid, b"\x02")])
    base = ["decode", str(tmp_path / "raw.parquet"), "-o", str(tmp_path / "out"), "--registry", db, "--keep"]
    assert cli.main([*base, "msg_id"]) == 2
    line = one_line(capsys.readouterr())
    assert line.startswith("pulsar-codec: --keep: no column 'msg_id' in ") and line.endswith(
        "its columns: payload, key, key_bytes, properties, publish_time, event_time, message_id, topic,"
        " schema_version, redelivery_count"
    )
    raw = pq.read_table(tmp_path / "raw.parquet")
    pq.write_table(raw.append_column("a", raw["schema_version"]), tmp_path / "clash.parquet")
    base[1] = str(tmp_path / "clash.parquet")
    assert cli.main([*base, "a,key"]) == 2
    assert "--keep: column 'a' has the name of a decoded field" in one_line(capsys.readouterr())
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_keep_on_the_spark_engine_writes_the_local_engines_table(tmp_path, registry_db):
    pytest.importorskip("pyspark")
    db, sid = registry_db
    dump_shaped(tmp_path / "raw.parquet", [wire.CONFLUENT.pack(sid, bytes([2 * i])) for i in range(5)] + [None])
    tables = []
    for engine in ("local", "spark"):
        out = tmp_path / engine
        argv = ["decode", str(tmp_path / "raw.parquet"), "-o", str(out), "--registry", db, "-q"]
        done = run_cli(*argv, "--engine", engine, "--keep", "message_id,publish_time,key,properties")
        assert done.returncode == 0, done.stderr
        tables.append(pq.read_table(out).sort_by("message_id"))
    assert tables[0].schema.remove_metadata() == tables[1].schema.remove_metadata()
    assert tables[0].to_pylist() == tables[1].to_pylist()
    assert tables[0].column_names == ["key", "properties", "publish_time", "message_id", "a", "decode_error"]


# -- 2. a failed dump leaves nothing; an empty one says so --------------------------------------------


def test_failed_dump_leaves_no_file_and_keeps_an_existing_one(tmp_path):
    url = f"pulsar://127.0.0.1:{closed_port()}"
    kept = tmp_path / "kept.parquet"
    kept.write_bytes(b"the output of an earlier dump")
    # the exit code (5) is test_cli's business: pulsar-client at times aborts the process as it
    # exits after a refused connection (exit 134); the files are settled before that
    for output in (kept, tmp_path / "d.parquet"):
        out = run_cli("dump", "--service-url", url, "--topic", "orders", "-o", str(output), "--timeout-ms", "1000")
        assert out.returncode != 0
        assert out.stderr.startswith(f"pulsar-codec: cannot read orders from {url}: "), out.stderr
    assert kept.read_bytes() == b"the output of an earlier dump"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.parquet"]  # no d.parquet, no partial file


def test_dump_into_a_folder_is_refused(tmp_path, capsys):
    argv = ["dump", "--service-url", "pulsar://127.0.0.1:1", "--topic", "t", "-o", str(tmp_path)]
    assert cli.main(argv) == 2
    assert "is a folder; dump writes one Parquet file" in one_line(capsys.readouterr())


def test_dump_of_no_messages_asks_about_the_topic_name(pulsar_broker, pulsar_topic, tmp_path, capsys):
    argv = [
        "dump",
        "--service-url",
        pulsar_broker.url,
        "--topic",
        pulsar_topic + "-typo",
        "-o",
        str(tmp_path / "d.parquet"),
    ]
    assert cli.main([*argv, "-q"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"wrote 0 messages of {pulsar_topic}-typo to ") and line.endswith("is the topic name right?")
    assert pq.read_table(tmp_path / "d.parquet").num_rows == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.parquet"]
    _console.set_verbosity(0)


def test_dump_then_decode_from_the_broker(pulsar_broker, pulsar_client, pulsar_topic, tmp_path, registry_db, capsys):
    db, sid = registry_db
    producer = pulsar_client.create_producer(pulsar_topic)
    for i in range(3):
        producer.send(wire.CONFLUENT.pack(sid, bytes([2 * i])))
    producer.close()
    raw = str(tmp_path / "raw.parquet")
    assert cli.main(["dump", "--service-url", pulsar_broker.url, "--topic", pulsar_topic, "-o", raw]) == 0
    assert cli.main(["decode", raw, "-o", str(tmp_path / "out"), "--registry", db]) == 0
    assert "decoded 3 of 3 rows" in capsys.readouterr().out
    assert pq.read_table(tmp_path / "out")["a"].to_pylist() == [0, 1, 2]


# -- 3. the decode summary counts null rows ----------------------------------------------------------


def test_all_null_column_counts_its_rows_as_null(tmp_path, registry_db, capsys):
    db, sid = registry_db
    dump_shaped(tmp_path / "raw.parquet", [wire.CONFLUENT.pack(sid, b"\x02")] * 6)
    argv = ["decode", str(tmp_path / "raw.parquet"), "-o", str(tmp_path / "out"), "--registry", db, "--column", "key"]
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert "decoded 0 of 6 rows" in captured.out and "0 bad rows, 6 null rows" in captured.out
    assert any("null rows" in line and "6" in line for line in captured.out.splitlines()[1:])  # the table
    assert "warning: every row of column 'key' is null, so nothing was decoded" in one_line(captured)


def test_null_rows_are_counted_beside_decoded_and_bad(tmp_path, registry_db, capsys):
    db, sid = registry_db
    messages = [wire.CONFLUENT.pack(sid, b"\x02"), None, b"\x07bad", None, wire.CONFLUENT.pack(sid, b"\x04")]
    pq.write_table(pa.table({"value": pa.array(messages, pa.binary())}), tmp_path / "in.parquet")
    assert cli.main(["decode", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "o"), "--registry", db]) == 0
    captured = capsys.readouterr()
    assert "decoded 2 of 5 rows" in captured.out and "1 bad rows, 2 null rows" in captured.out
    assert captured.err == ""  # some rows decoded: no warning


# -- 4. the demo's time figures ------------------------------------------------------------------------


def check_demo_times(result, lines, table):
    """The throughput line, the time line and the summary table print the same spans of one clock."""
    assert result.seconds == result.laps["orders"] > 0
    assert sum(result.laps.values()) == pytest.approx(result.total_seconds)
    line = next(line for line in lines if "throughput:" in line)
    found = re.search(r"throughput: ([\d,]+) messages/s = ([\d,]+) orders in ([\d.]+) s: (.*) \((\w+) engine\)$", line)
    assert found is not None, line
    rate, orders, seconds = int(found[1].replace(",", "")), int(found[2].replace(",", "")), found[3]
    assert orders == result.rows and seconds == f"{result.seconds:.2f}"
    assert rate == round(result.rows / result.seconds)
    parts = [float(p) for p in re.findall(r"\(([\d.]+) s\)", found[4])]
    assert parts and sum(parts) == pytest.approx(result.seconds, abs=0.006 * len(parts))
    times = next(line for line in lines if line.startswith("time: "))
    for name, spent in result.laps.items():
        assert f"{demo.LAP_NAMES[name]} {spent:.2f} s" in times
    assert times.endswith(f"; total {result.total_seconds:.2f} s")
    rows = dict(re.findall(r"│ (\w[\w ]*?) +│ +(\S+) │", table))
    assert rows["orders seconds"] == seconds and rows["total seconds"] == f"{result.total_seconds:.2f}"
    return found[4]


def test_demo_times_without_a_broker(tmp_path, monkeypatch, capsys):
    def unavailable(workdir, timeout=30.0):
        raise _broker.BrokerUnavailable("pulsar-lite is not installed")

    monkeypatch.setattr(_broker, "start_lite", unavailable)
    lines: list[str] = []
    result = demo.run(tmp_path, 3000, 7, "local", lines.append)
    steps = check_demo_times(result, lines, capsys.readouterr().out)
    assert steps.startswith("read from the dump, decoded and written (")
    assert list(result.laps) == ["generate", "no-broker", "orders", "customers", "checks", "stop"]


@pytest.mark.slow
def test_demo_times_with_a_broker(tmp_path, capsys):
    pytest.importorskip("pulsar")
    pytest.importorskip("pulsar_lite")
    lines: list[str] = []
    result = demo.run(tmp_path, 3000, 7, "local", lines.append)
    assert result.source == "pulsar-lite"
    steps = check_demo_times(result, lines, capsys.readouterr().out)
    # the dump is part of the span the throughput is measured over
    assert re.fullmatch(
        r"dumped from the broker with pulsar-codec dump \([\d.]+ s\), "
        r"then read from the dump, decoded and written \([\d.]+ s\)",
        steps,
    ), steps
    assert "broker" in result.laps


# -- 5. registry URLs and schema files -----------------------------------------------------------------


def test_registry_url_of_an_unknown_scheme_is_refused(tmp_path, capsys):
    with pytest.raises(_console.UsageError) as caught:
        registry_cmd.open_registry("htp://bad", create=False)
    assert str(caught.value) == "unknown registry URL scheme 'htp' (http://, https://, or a SQLite file path)"
    pq.write_table(pa.table({"value": pa.array([b"x"])}), tmp_path / "in.parquet")
    argv = ["decode", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "o"), "--registry", "htp://bad"]
    assert cli.main(argv) == 2
    assert one_line(capsys.readouterr()) == f"pulsar-codec: {caught.value}"
    assert cli.main(["registry", "list", "--registry", "ftp://host/r.db"]) == 2
    assert "unknown registry URL scheme 'ftp'" in one_line(capsys.readouterr())


def test_missing_schema_file_names_the_option_and_the_file(tmp_path, registry_db, capsys, monkeypatch):
    db, _ = registry_db
    monkeypatch.chdir(tmp_path)
    pq.write_table(pa.table({"value": pa.array([b"x"])}), tmp_path / "in.parquet")
    argv = ["decode", "in.parquet", "-o", "o", "--registry", db, "--reader-schema", "@nofile.avsc"]
    assert cli.main(argv) == 2
    assert (
        one_line(capsys.readouterr())
        == "pulsar-codec: --reader-schema @nofile.avsc: the file nofile.avsc does not exist"
    )
    argv = ["registry", "register", "--registry", db, "--subject", "s", "--schema", "@nofile.avsc"]
    assert cli.main(argv) == 2
    assert one_line(capsys.readouterr()) == "pulsar-codec: --schema @nofile.avsc: the file nofile.avsc does not exist"
    (tmp_path / "folder.avsc").mkdir()
    assert cli.main([*argv[:-1], "@folder.avsc"]) == 2
    assert "--schema @folder.avsc: cannot read the file folder.avsc (Is a directory)" in one_line(capsys.readouterr())


def test_long_inline_proto_text_is_not_taken_for_a_file_name(tmp_path, registry_db, capsys):
    pytest.importorskip("google.protobuf")
    db, _ = registry_db
    fields = " ".join(f"int64 field_number_{i} = {i};" for i in range(1, 30))
    proto = f'syntax = "proto3"; package shop; message Order {{ {fields} }}'
    assert len(proto) > 255 and "/" not in proto  # longer than a file name may be
    argv = ["registry", "register", "--registry", db, "--subject", "o-value", "--schema", proto]
    assert cli.main([*argv, "--schema-type", "PROTOBUF"]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["subject"] == "o-value"


# -- 6. --help texts, check --schema-type and the README synopsis --------------------------------------


def help_text(capsys, *argv):
    assert cli.main([*argv, "--help"]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_help_texts_say_what_the_commands_take(capsys):
    assert "framed Avro, JSON or Protobuf messages" in help_text(capsys)
    assert "framed Avro, JSON or Protobuf messages" in help_text(capsys, "decode")
    bench = help_text(capsys, "bench")
    assert "each with the compiled and the pure-Python kernels, Avro also with the fastavro recipe" in bench
    assert "random seed for the generated messages" in bench
    for action in ("register", "check"):
        text = help_text(capsys, "registry", action)
        assert "the schema's type: AVRO, JSON, PROTOBUF (default AVRO)" in text
        assert "Avro or JSON Schema as JSON, Protobuf as .proto text" in text
        assert "schema JSON, or @file" not in text


def test_check_takes_the_schema_type(tmp_path, capsys):
    db = str(tmp_path / "r.db")
    v1 = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}
    v2 = {**v1, "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}
    base = ["--registry", db, "--subject", "j-value", "--schema-type", "json"]
    assert cli.main(["registry", "register", *base, "--schema", json.dumps(v1)]) == 0
    assert json.loads(capsys.readouterr().out) == {"subject": "j-value", "id": 1}
    assert cli.main(["registry", "check", *base, "--schema", json.dumps(v2)]) == 0
    assert json.loads(capsys.readouterr().out)["is_compatible"] is True
    assert cli.main(["registry", "check", *base[:-1], "XML", "--schema", "{}"]) == 2
    assert "unknown schema type 'XML'; valid: AVRO, JSON, PROTOBUF" in one_line(capsys.readouterr())


def test_readme_synopsis_shows_every_option():
    text = README.read_text()
    section = text[text.index("### The command") :]
    synopsis = section[section.index("```text") : section.index("```\n", section.index("```text") + 7)]
    parser = cli_main.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, __import__("argparse")._SubParsersAction)).choices
    # the registry credentials, shared by every command that opens one, are described in the prose
    shared = {"--help", "--verbose", "--quiet", "--user", "--password-file", "--password", "--token"}
    for name in ("demo", "decode", "dump", "bench"):
        for action in commands[name]._actions:
            if action.option_strings and not shared & set(action.option_strings):
                shown = [o for o in action.option_strings if re.search(rf"\[{o}\b|\s{o}\s", synopsis)]
                assert shown, f"{name} {'/'.join(action.option_strings)} is not in the README's synopsis"
    assert "--schema-type AVRO|JSON|PROTOBUF" in synopsis


# -- 5. unions with a record branch; a failed decode keeps the earlier output ------------------------

GEO = {"type": "record", "name": "Geo", "fields": [{"name": "lat", "type": "double"}]}
ADDR = {"type": "record", "name": "Addr", "fields": [{"name": "city", "type": "string"}, {"name": "geo", "type": GEO}]}
UNION_SCHEMA = json.dumps({"type": "record", "name": "U", "fields": [{"name": "u", "type": ["long", ADDR]}]})


def union_input(path, db):
    """Messages of a union whose second branch is a record with required fields (nested too), a
    bad message and a tombstone; the registry database at ``db``."""
    import pulsar_codec as pc

    geo = pa.struct([pa.field("lat", pa.float64(), nullable=False)])
    addr = pa.struct([pa.field("city", pa.string(), nullable=False), pa.field("geo", geo, nullable=False)])
    u = pa.UnionArray.from_dense(
        pa.array([0, 1, 0], pa.int8()),
        pa.array([0, 0, 1], pa.int32()),
        [pa.array([5, 7], pa.int64()), pa.array([{"city": "Oslo", "geo": {"lat": 59.9}}], addr)],
        ["long", "Addr"],
    )
    registry = LocalRegistry(db)
    messages = pc.encode(pa.table({"u": u}), registry, "u-value", schema=UNION_SCHEMA).to_pylist()
    registry.close()
    pq.write_table(pa.table({"value": pa.array([*messages, b"\x00\x00\x00\x00\x01", None], pa.binary())}), path)


def test_union_with_a_record_branch_decodes_on_the_local_engine(tmp_path, capsys):
    union_input(tmp_path / "in.parquet", tmp_path / "u.db")
    argv = ["decode", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out"), "--registry", str(tmp_path / "u.db")]
    assert cli.main([*argv, "-q"]) == 0, capsys.readouterr().err
    table = pq.read_table(tmp_path / "out")
    assert [row["u"] for row in table.to_pylist()] == [
        {"long": 5, "Addr": None},
        {"long": None, "Addr": {"city": "Oslo", "geo": {"lat": 59.9}}},
        {"long": 7, "Addr": None},
        None,
        None,
    ]
    # the branch is nullable, its fields as the schema has them (as Spark writes the same table)
    addr = table.schema.field("u").type.field("Addr")
    assert addr.nullable and not addr.type.field("city").nullable and not addr.type.field("geo").nullable
    assert table["decode_error"].to_pylist()[3]["code"] is not None and table["decode_error"][4].as_py() is None


def test_a_failed_decode_keeps_the_earlier_output_and_leaves_no_partial_files(tmp_path, monkeypatch, capsys):
    from pulsar_codec.cli import parquet_io

    union_input(tmp_path / "in.parquet", tmp_path / "u.db")
    out, dead = tmp_path / "out", tmp_path / "dead"
    argv = ["decode", str(tmp_path / "in.parquet"), "-o", str(out), "--registry", str(tmp_path / "u.db"), "-q"]
    assert cli.main([*argv, "--dead-letter", str(dead)]) == 0, capsys.readouterr().err
    before = {p.name: p.read_bytes() for folder in (out, dead) for p in folder.iterdir()}
    listing = sorted(p.name for p in tmp_path.iterdir())

    def disk_full(*args, **kwargs):  # the part file is open when a batch fails
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(parquet_io, "convert_batch", disk_full)
    for more in (["--dead-letter", str(dead)], [], ["-o", str(tmp_path / "new")]):
        assert cli.main([*argv, *more]) != 0
        assert sorted(p.name for p in tmp_path.iterdir()) == listing  # no partial folder, no new output
        assert {p.name: p.read_bytes() for folder in (out, dead) for p in folder.iterdir()} == before
    monkeypatch.undo()
    # a run that succeeds replaces the output and leaves nothing beside it
    assert cli.main([*argv, "--dead-letter", str(dead)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == listing
    assert len(pq.read_table(out)) == 4 and len(pq.read_table(dead)) == 1
