"""One output contract for ``pulsar-codec decode --engine local|spark``: same tables for the same input.

The input mixes two schema versions, bad prefixes, a truncated body, tombstones and a schema id the
registry does not know; both engines decode it (with and without a dead-letter path) and the
tables read back must be equal, column types included.
"""

from __future__ import annotations

import io
import json

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pulsar_codec import wire
from pulsar_codec.cli import parquet_io
from pulsar_codec.cli._console import UsageError
from pulsar_codec.errors import ErrorCode
from pulsar_codec.registry import LocalRegistry

pytest_plugins = ["spark_fixtures"]

_STATUS = {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}
V1 = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "status", "type": _STATUS},
        {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tags", "type": {"type": "map", "values": "string"}},
    ],
}
V2 = {
    "type": "record",
    "name": "Order",
    "fields": [
        *V1["fields"],
        {"name": "items", "type": {"type": "array", "items": "string"}, "default": []},
        {"name": "note", "type": ["null", "string"], "default": None},
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
            "default": "\u0000",
        },
        {"name": "either", "type": ["null", "int", "string"], "default": None},
    ],
}
UNKNOWN_ID = 99


def _v1(i: int) -> dict:
    return {"id": i, "status": "NEW", "created": 1_700_000_000_000 + i, "tags": {"k": str(i)}}


def _body(schema: dict, record: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def _v2(i: int) -> dict:
    import decimal

    return {
        **_v1(i),
        "status": "PAID",
        "items": [f"sku-{i}"] * (i % 3),
        "note": None if i % 2 else f"note {i}",
        "amount": decimal.Decimal(i).scaleb(-2),
        "either": i if i % 2 else f"s{i}",
    }


def _messages(ids: tuple[int, int]) -> list[bytes | None]:
    """Rows 0-3 v1, 4-7 v2, then the bad ones: bad magic, truncated body, tombstone, unknown id."""
    v1 = [_body(V1, _v1(i)) for i in range(4)]
    v2 = [_body(V2, _v2(i)) for i in range(4, 8)]
    messages: list[bytes | None] = [wire.CONFLUENT.pack(ids[0], b) for b in v1]
    messages += [wire.CONFLUENT.pack(ids[1], b) for b in v2]
    messages.append(b"\x07" + messages[0][1:])  # 8: bad magic byte
    messages.append(messages[5][:7])  # 9: truncated body
    messages.append(None)  # 10: tombstone
    messages.append(wire.CONFLUENT.pack(UNKNOWN_ID, v1[0]))  # 11: unknown schema id
    messages.append(messages[1])  # 12: v1 again, after the bad ones
    return messages


@pytest.fixture
def contract_input(tmp_path):
    registry = LocalRegistry(tmp_path / "registry.db")
    ids = (registry.register("orders-value", json.dumps(V1)), registry.register("orders-value", json.dumps(V2)))
    folder = tmp_path / "raw"
    folder.mkdir()
    messages = _messages(ids)
    # two part files: positions run across them in name order
    pq.write_table(pa.table({"value": pa.array(messages[:6], pa.binary())}), folder / "part-0.parquet")
    pq.write_table(pa.table({"value": pa.array(messages[6:], pa.binary())}), folder / "part-1.parquet")
    yield registry, folder, ids
    registry.close()


def _decode(tmp_path, registry, folder, engine, dead_letter, session=None):
    out = tmp_path / f"{engine}-{'dl' if dead_letter else 'all'}"
    dead = tmp_path / f"{engine}-dead" if dead_letter else None
    if engine == "spark":
        from pulsar_codec.cli.parquet_spark import decode_spark

        files = sorted(folder.glob("*.parquet"))
        stats = decode_spark(files, out, registry, "value", wire.CONFLUENT, None, dead, session=session)
    else:
        stats = parquet_io.decode_parquet(folder, out, registry, dead_letter=dead)
    return stats, out, dead


def _sorted(table: pa.Table, key: str) -> pa.Table:
    return table.sort_by([(key, "ascending")])


def test_local_engine_contract(tmp_path, contract_input):
    registry, folder, ids = contract_input
    stats, out, _ = _decode(tmp_path, registry, folder, "local", False)
    assert {k: stats[k] for k in ("rows", "decoded", "errors", "nulls")} == {
        "rows": 13,
        "decoded": 9,
        "errors": 3,
        "nulls": 1,
    }
    assert out.is_dir() and [p.name for p in out.iterdir()] == ["part-00000.parquet"]
    table = pq.read_table(out)
    assert len(table) == 13
    schema = table.schema
    assert schema.field("status").type == pa.string()  # enums as their symbol
    assert schema.field("created").type == pa.timestamp("us", tz="UTC")
    assert schema.field("either").type == pa.struct([("int", pa.int32()), ("string", pa.string())])
    # the file holds INT64 timestamps (never INT96)
    column = pq.ParquetFile(next(out.iterdir())).schema.column(schema.get_field_index("created"))
    assert column.physical_type == "INT64"
    rows = table.to_pylist()
    assert rows[0]["status"] == "NEW" and rows[0]["items"] == [] and rows[4]["either"] == {"int": None, "string": "s4"}
    assert rows[10]["id"] is None and rows[10]["decode_error"] is None  # the tombstone: a null row, no error
    errors = {i: r["decode_error"] for i, r in enumerate(rows) if r["decode_error"]}
    assert sorted(errors) == [8, 9, 11]
    assert errors[8]["message"] == "invalid magic byte 0x07, expected 0x00 (message 8, byte 0)"
    assert errors[11]["code"] == ErrorCode.SCHEMA_NOT_FOUND and f"{UNKNOWN_ID}" in errors[11]["message"]


def test_local_engine_dead_letter(tmp_path, contract_input):
    registry, folder, ids = contract_input
    stats, out, dead = _decode(tmp_path, registry, folder, "local", True)
    table = pq.read_table(out)
    assert "decode_error" not in table.column_names
    assert len(table) == 10 and table["id"].null_count == 1  # the good rows and the tombstone
    letters = pq.read_table(dead)
    assert letters.schema.names == ["index", "payload", "schema_id", "code", "offset", "message"]
    assert letters["index"].to_pylist() == [8, 9, 11]
    assert letters["schema_id"].to_pylist() == [None, ids[1], UNKNOWN_ID]
    assert letters["code"].to_pylist()[2] == ErrorCode.SCHEMA_NOT_FOUND
    assert letters["payload"].to_pylist() == [m for i, m in enumerate(_messages(ids)) if i in (8, 9, 11)]
    assert stats["errors"] == len(letters) and stats["rows"] == len(table) + len(letters)


def test_column_resolution(tmp_path, contract_input):
    registry, folder, _ = contract_input
    raw = pq.read_table(folder)
    two = tmp_path / "two.parquet"
    pq.write_table(raw.rename_columns(["raw"]).append_column("key", pa.array([b"k"] * len(raw))), two)
    with pytest.raises(UsageError, match="binary columns: raw, key"):
        parquet_io.decode_parquet(two, tmp_path / "o", registry)
    with pytest.raises(UsageError, match=r"'nope' is not in .*\(binary columns: raw, key\)"):
        parquet_io.decode_parquet(two, tmp_path / "o", registry, column="nope")
    dump = tmp_path / "dump.parquet"  # the shape `pulsar-codec dump` writes: payload is the messages
    pq.write_table(raw.rename_columns(["payload"]).append_column("key_bytes", pa.array([b"k"] * len(raw))), dump)
    stats = parquet_io.decode_parquet(dump, tmp_path / "o", registry)
    assert (stats["column"], stats["rows"]) == ("payload", len(raw))
    one = tmp_path / "one.parquet"
    pq.write_table(raw.rename_columns(["payload"]).append_column("n", pa.array(range(len(raw)))), one)
    assert parquet_io.decode_parquet(one, tmp_path / "o", registry)["rows"] == len(raw)  # the only binary column


def test_empty_input_writes_empty_tables(tmp_path, contract_input):
    registry, _, _ = contract_input
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"value": pa.array([], pa.binary())}), empty)
    stats = parquet_io.decode_parquet(empty, tmp_path / "o", registry, reader_schema=V2, dead_letter=tmp_path / "d")
    assert (stats["rows"], stats["decoded"], stats["errors"], stats["nulls"]) == (0, 0, 0, 0)
    assert pq.read_table(tmp_path / "o").schema.names[:2] == ["id", "status"]
    assert len(pq.read_table(tmp_path / "d")) == 0


def test_output_folder_with_other_files_is_kept(tmp_path, contract_input):
    registry, folder, _ = contract_input
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="notes.txt"):
        parquet_io.decode_parquet(folder, tmp_path / "o", registry)
    assert (tmp_path / "o" / "notes.txt").read_text() == "mine"


@pytest.mark.slow
@pytest.mark.parametrize("dead_letter", [False, True], ids=["error-column", "dead-letter"])
def test_both_engines_write_the_same_tables(spark, tmp_path, contract_input, dead_letter):
    registry, folder, _ = contract_input
    local_stats, local_out, local_dead = _decode(tmp_path, registry, folder, "local", dead_letter)
    spark_stats, spark_out, spark_dead = _decode(tmp_path, registry, folder, "spark", dead_letter, session=spark)
    for key in ("rows", "decoded", "errors", "nulls"):
        assert local_stats[key] == spark_stats[key], key
    local, remote = pq.read_table(local_out), pq.read_table(spark_out)
    assert local.schema.remove_metadata() == remote.schema.remove_metadata()
    key = "id"
    assert _sorted(local, key).to_pylist() == _sorted(remote, key).to_pylist()
    if dead_letter:
        local_letters, spark_letters = pq.read_table(local_dead), pq.read_table(spark_dead)
        assert local_letters.schema.remove_metadata() == spark_letters.schema.remove_metadata()
        assert _sorted(local_letters, "index").to_pylist() == _sorted(spark_letters, "index").to_pylist()
    # each engine reads what the other wrote
    assert spark.read.parquet(str(local_out)).schema == spark.read.parquet(str(spark_out)).schema
    if dead_letter:
        # a dead-letter folder is an input for the other engine (a replay of the bad rows)
        from pulsar_codec.cli._contract import input_files
        from pulsar_codec.cli.parquet_spark import decode_spark

        replay_local = parquet_io.decode_parquet(spark_dead, tmp_path / "replay-l", registry)  # payload: the default
        replay_spark = decode_spark(
            input_files(local_dead), tmp_path / "replay-s", registry, "payload", wire.CONFLUENT, None, None, spark
        )
        assert replay_local["errors"] == replay_spark["errors"] == 3
        replayed_local, replayed_spark = pq.read_table(tmp_path / "replay-l"), pq.read_table(tmp_path / "replay-s")
        assert replayed_local.schema.remove_metadata() == replayed_spark.schema.remove_metadata()
        assert replayed_local.to_pylist() == replayed_spark.sort_by([("decode_error", "ascending")]).to_pylist() or (
            sorted(map(str, replayed_local.to_pylist())) == sorted(map(str, replayed_spark.to_pylist()))
        )


@pytest.mark.parametrize("rows", [0, 1, 2, 300])
def test_demo_any_row_count_writes_the_contract_tables(tmp_path, rows):
    from pulsar_codec.cli import demo

    result = demo.run(tmp_path, rows, 42, "local", lambda line: None)
    decoded = pq.read_table(tmp_path / "orders-decoded.parquet")
    dead = pq.read_table(tmp_path / "orders-dead-letter.parquet")
    assert (result.rows, len(decoded) + len(dead), len(dead)) == (rows, rows, result.planted)
    assert decoded.schema.field("status").type == pa.string()
    assert decoded.schema.field("created").type == pa.timestamp("us", tz="UTC")
    assert dead.schema.names == ["index", "payload", "schema_id", "code", "offset", "message"]
    assert sum(result.rows_by_id.values()) == len(decoded)
    assert len(pq.read_table(tmp_path / "customers-decoded.parquet")) == (max(1, rows // 10) if rows else 0)


# -- --keep: input columns beside the decoded fields, the same on both engines --------------------------

# the extra columns beyond what `pulsar-codec dump` writes: types that Spark reads back as another type
_EXTRA = pa.schema(
    [
        pa.field("local_time", pa.timestamp("ms")),  # no zone: Spark's TIMESTAMP_NTZ
        pa.field("zoned_time", pa.timestamp("s", tz="Europe/Berlin")),
        pa.field("count", pa.uint32()),
        pa.field("digest", pa.binary(4)),
        pa.field("waited", pa.duration("ms")),  # no Parquet type: the stored int64
        pa.field("decoded", pa.string()),  # names the Spark engine could use for its own columns
        pa.field("error_text", pa.string()),
        pa.field(
            "nested",
            pa.struct([pa.field("n", pa.int16(), nullable=False), pa.field("xs", pa.list_(pa.int64()))]),
            nullable=False,
        ),
    ]
)


def _dump_shaped(path, messages, extra=False):
    """The messages as `pulsar-codec dump` writes them (``payload`` plus key, properties, times, id)."""
    from pulsar_codec.pulsar import MESSAGE_SCHEMA

    n = len(messages)
    columns = {
        "payload": pa.array(messages, pa.binary()),
        "key": pa.array([None if i % 4 == 0 else f"k{i}" for i in range(n)], pa.string()),
        "key_bytes": pa.array([None if i % 4 == 0 else f"k{i}".encode() for i in range(n)], pa.binary()),
        "properties": pa.array([{"p": str(i), "q": "x"} if i % 3 else {} for i in range(n)], MESSAGE_SCHEMA[3].type),
        "publish_time": pa.array([1_700_000_000_000 + 1000 * i + 7 for i in range(n)], pa.timestamp("ms", tz="UTC")),
        "event_time": pa.array([None if i % 2 else 1_600_000_000_123 + i for i in range(n)], pa.timestamp("ms", "UTC")),
        "message_id": pa.array([f"{i}:0:-1".encode() for i in range(n)], pa.binary()),
        "topic": pa.array(["persistent://public/default/orders"] * n, pa.string()),
        "schema_version": pa.array([None if i % 5 else i for i in range(n)], pa.int64()),
        "redelivery_count": pa.array([i % 2 for i in range(n)], pa.int32()),
    }
    schema = MESSAGE_SCHEMA
    if extra:
        columns["local_time"] = pa.array([1_650_000_000_000 + i for i in range(n)], pa.timestamp("ms"))
        columns["zoned_time"] = pa.array(
            [None if i == 3 else 1_650_000_000 + i for i in range(n)], _EXTRA.field("zoned_time").type
        )
        columns["count"] = pa.array([2**32 - 1 - i for i in range(n)], pa.uint32())
        columns["digest"] = pa.array([i.to_bytes(4, "big") for i in range(n)], pa.binary(4))
        columns["decoded"] = pa.array([f"d{i}" for i in range(n)])
        columns["error_text"] = pa.array([f"e{i}" for i in range(n)])
        columns["waited"] = pa.array([None if i == 2 else 1500 * i for i in range(n)], pa.duration("ms"))
        columns["nested"] = pa.array(
            [{"n": i, "xs": list(range(i % 3)) or None} for i in range(n)], _EXTRA.field("nested").type
        )
        schema = pa.schema([*MESSAGE_SCHEMA, *_EXTRA])
    pq.write_table(pa.table(columns, schema=schema), path)


@pytest.fixture
def dump_input(tmp_path, contract_input):
    registry, _, ids = contract_input
    path = tmp_path / "dump.parquet"
    _dump_shaped(path, _messages(ids), extra=True)
    return registry, path


def _decode_keep(tmp_path, registry, path, engine, keep, dead_letter, session=None):
    out = tmp_path / f"keep-{engine}-{'dl' if dead_letter else 'all'}"
    dead = tmp_path / f"keep-{engine}-dead" if dead_letter else None
    if engine == "spark":
        from pulsar_codec.cli.parquet_spark import decode_spark

        decode_spark([path], out, registry, "payload", wire.CONFLUENT, None, dead, session=session, keep=keep)
    else:
        parquet_io.decode_parquet(path, out, registry, dead_letter=dead, keep=keep)
    return pq.read_table(out), (pq.read_table(dead) if dead else None)


def test_keep_puts_input_columns_first_in_the_inputs_order(tmp_path, dump_input):
    registry, path = dump_input
    table, _ = _decode_keep(tmp_path, registry, path, "local", "message_id,publish_time,key", False)
    assert table.column_names[:4] == ["key", "publish_time", "message_id", "id"]
    assert table.column_names[-1] == "decode_error" and len(table) == 13
    # timestamps as the contract writes them: INT64 microseconds in UTC
    assert table.schema.field("publish_time").type == pa.timestamp("us", tz="UTC")
    column = pq.ParquetFile(next((tmp_path / "keep-local-all").iterdir())).schema.column(1)
    assert (column.name, column.physical_type) == ("publish_time", "INT64")
    raw = pq.read_table(path)
    assert table["message_id"].to_pylist() == raw["message_id"].to_pylist()
    assert table["key"].to_pylist() == raw["key"].to_pylist()
    assert table["publish_time"].to_pylist() == raw["publish_time"].to_pylist()
    assert table["id"].to_pylist()[:4] == [0, 1, 2, 3] and table["decode_error"].to_pylist()[8]["code"] is not None


def test_keep_with_dead_letter_keeps_the_columns_of_the_good_rows_only(tmp_path, dump_input):
    registry, path = dump_input
    table, letters = _decode_keep(tmp_path, registry, path, "local", "message_id", True)
    assert table.column_names[0] == "message_id" and "decode_error" not in table.column_names
    assert table["message_id"].to_pylist() == [f"{i}:0:-1".encode() for i in range(13) if i not in (8, 9, 11)]
    assert letters.schema.names == ["index", "payload", "schema_id", "code", "offset", "message"]


def test_keep_all_and_the_message_column(tmp_path, dump_input):
    registry, path = dump_input
    raw = pq.read_table(path)
    table, _ = _decode_keep(tmp_path, registry, path, "local", "all", False)
    assert table.column_names[: len(raw.column_names) - 1] == raw.column_names[1:]  # all but payload
    assert table["properties"].to_pylist() == raw["properties"].to_pylist()
    assert table["nested"].to_pylist() == raw["nested"].to_pylist()
    # as Spark reads them: the stored integers, zone-less timestamps without a zone, widened unsigned
    assert table["waited"].to_pylist() == raw["waited"].cast(pa.int64()).to_pylist()
    assert table.schema.field("local_time").type == pa.timestamp("us")
    assert table.schema.field("count").type == pa.int64() and table["count"][0].as_py() == 2**32 - 1
    # the messages' own column, named: every row's raw bytes
    table, _ = _decode_keep(tmp_path, registry, path, "local", "payload,topic", False)
    assert table.column_names[:3] == ["payload", "topic", "id"]
    assert table["payload"].to_pylist() == raw["payload"].to_pylist()


def test_keep_refuses_unknown_and_clashing_columns(tmp_path, dump_input):
    registry, path = dump_input
    with pytest.raises(UsageError, match=r"--keep: no column 'nope', 'Key2' in .*; its columns: payload, key, "):
        parquet_io.decode_parquet(path, tmp_path / "o", registry, keep="key,nope,Key2")
    for empty in ("key,,topic", ""):
        with pytest.raises(UsageError, match="--keep: empty column name"):
            parquet_io.decode_parquet(path, tmp_path / "o", registry, keep=empty)
    raw = pq.read_table(path)
    clash = tmp_path / "clash.parquet"
    pq.write_table(raw.append_column("ID", raw["schema_version"]).append_column("decode_error", raw["topic"]), clash)
    for keep, name in (("ID", "ID"), ("decode_error", "decode_error"), ("all", "ID")):
        with pytest.raises(UsageError, match=rf"--keep: column '{name}' .*decoded field|--keep: column '{name}'"):
            parquet_io.decode_parquet(clash, tmp_path / "o", registry, keep=keep)
    assert not (tmp_path / "o").exists()  # refused before anything is written


@pytest.mark.slow
@pytest.mark.parametrize(
    ("keep", "dead_letter"),
    [("message_id,publish_time,key", False), ("message_id,publish_time,key", True), ("all", False), ("payload", True)],
    ids=["some", "some-dead-letter", "all", "message-column-dead-letter"],
)
def test_both_engines_keep_the_same_columns(spark, tmp_path, dump_input, keep, dead_letter):
    registry, path = dump_input
    local, local_dead = _decode_keep(tmp_path, registry, path, "local", keep, dead_letter)
    remote, spark_dead = _decode_keep(tmp_path, registry, path, "spark", keep, dead_letter, session=spark)
    assert local.schema.remove_metadata() == remote.schema.remove_metadata()
    key = "id" if keep == "payload" else "message_id"
    assert _sorted(local, key).to_pylist() == _sorted(remote, key).to_pylist()
    if dead_letter:
        assert local_dead.schema.remove_metadata() == spark_dead.schema.remove_metadata()
        assert _sorted(local_dead, "index").to_pylist() == _sorted(spark_dead, "index").to_pylist()
    # each engine reads what the other wrote
    suffix = "dl" if dead_letter else "all"
    local_schema = spark.read.parquet(str(tmp_path / f"keep-local-{suffix}")).schema
    assert local_schema == spark.read.parquet(str(tmp_path / f"keep-spark-{suffix}")).schema
