"""The demo reads its topics from a local pulsar-lite broker, and falls back to files without one.

With Spark, ``orders`` is streamed through ``readStream.format("pulsar")`` in several micro-batches
and ``customers`` read through ``read.format("pulsar")``; with the local engine the topics are
dumped and decoded in this process. Either way a dead letter's ``index`` is the message's position
in the topic, so the raw bytes at that position of the generated dump are the dead letter's bytes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pulsar_codec.cli import _broker, demo

pytestmark = pytest.mark.slow


def _needs_broker():
    pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")
    pytest.importorskip("pulsar_lite", reason="pulsar-lite is not installed (extra 'test')")


def _check_dead_letters(out, rows):
    raw = pq.read_table(out / "raw-orders.parquet", columns=["payload"])["payload"].to_pylist()
    decoded = pq.read_table(out / "orders-decoded.parquet")
    dead = pq.read_table(out / "orders-dead-letter.parquet").to_pylist()
    assert len(raw) == rows and len(decoded) + len(dead) == rows and len(dead) >= 3
    for letter in dead:
        assert letter["payload"] == raw[letter["index"]]  # the position in the topic
        assert f"(message {letter['index']}, " in letter["message"]
    return decoded, dead


def _check_printed_times(stdout, rows):
    """The Spark demo's throughput, its steps, the time line and the table agree (one clock)."""
    found = re.search(r"throughput: ([\d,]+) messages/s = ([\d,]+) orders in ([\d.]+) s: (.*) \(spark engine\)", stdout)
    assert found is not None, stdout
    seconds = float(found[3])
    assert int(found[2].replace(",", "")) == rows
    assert abs(int(found[1].replace(",", "")) - rows / seconds) <= rows / seconds * 0.005 / seconds + 1
    steps = re.fullmatch(
        r"streamed from the broker and decoded into the sink \(([\d.]+) s\), "
        r"then the decoded and dead-letter tables written from it \(([\d.]+) s\)",
        found[4],
    )
    assert steps is not None, found[4]
    assert abs(float(steps[1]) + float(steps[2]) - seconds) <= 0.011
    times = re.search(r"^time: (.*); total ([\d.]+) s$", stdout, re.MULTILINE)
    assert times is not None, stdout
    spans = [float(v) for v in re.findall(r" ([\d.]+) s(?:,|$)", times[1])]
    assert "Spark start" in times[1] and f"orders {found[3]} s" in times[1]
    assert abs(sum(spans) - float(times[2])) <= 0.006 * len(spans)
    table = dict(re.findall(r"│ (\w[\w ]*?) +│ +(\S+) │", stdout))
    assert table["orders seconds"] == found[3] and table["total seconds"] == times[2]


def test_local_engine_reads_the_topics_from_the_broker(tmp_path, monkeypatch):
    _needs_broker()
    monkeypatch.chdir(tmp_path)  # a relative output folder, as `make demo` gives (demo-output)
    lines: list[str] = []
    result = demo.run(Path("demo-output"), 3000, 7, "local", lines.append)
    assert result.source == "pulsar-lite" and not result.micro_batches
    assert any("topics on pulsar-lite pulsar://127.0.0.1:" in line and "pulsar-codec dump" in line for line in lines)
    out = tmp_path / "demo-output"
    decoded, dead = _check_dead_letters(out, 3000)
    assert result.errors == len(dead) == result.planted and result.decoded == len(decoded)
    assert len(pq.read_table(out / "customers-decoded.parquet")) == 300
    assert not (out / "pulsar-lite" / "data").exists()  # the broker stopped and its data went
    assert sorted(p.name for p in (out / "pulsar-lite").iterdir()) == ["broker.log", "pulsar-lite.toml"]


def test_without_a_broker_the_demo_reads_the_files(tmp_path, monkeypatch):
    def unavailable(workdir, timeout=30.0):
        raise _broker.BrokerUnavailable("pulsar-lite is not installed")

    monkeypatch.setattr(_broker, "start_lite", unavailable)
    lines: list[str] = []
    result = demo.run(tmp_path, 3000, 7, "local", lines.append)
    assert result.source == "files"
    assert "no local broker (pulsar-lite is not installed): reading the generated topic dumps" in lines
    _check_dead_letters(tmp_path, 3000)


def test_spark_engine_streams_the_orders_through_format_pulsar(tmp_path):
    _needs_broker()
    pytest.importorskip("pyspark")
    rows = 3000
    out = subprocess.run(
        [sys.executable, "-m", "pulsar_codec", "demo", "--engine", "spark", "--rows", str(rows), "-o", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert 'orders streamed through readStream.format("pulsar")' in out.stdout
    found = re.search(
        r"streamed in (\d+) micro-batches \(availableNow, checkpointed\): ([\d,+ ]+) messages", out.stdout
    )
    assert found is not None, out.stdout
    sizes = [int(part.replace(",", "")) for part in found.group(2).split("+")]
    assert int(found.group(1)) == len(sizes) >= 2 and sum(sizes) == rows  # every message once
    decoded, _ = _check_dead_letters(tmp_path, rows)
    _check_printed_times(out.stdout, rows)
    assert decoded.column_names == ["order_id", "customer", "amount", "status", "created", "items", "note", "tags"]
    # v1 rows read with the v3 reader (the subject's latest) get the defaults
    first = decoded.sort_by("order_id").slice(0, 1).to_pylist()[0]
    assert first["order_id"] == 1 and first["items"] == [] and first["note"] is None
    customers = pq.read_table(tmp_path / "customers-decoded.parquet")
    assert customers.column_names[:2] == ["customer", "name"] and len(customers) == 300
    assert sorted(customers["customer"].to_pylist())[:2] == ["cust-00000", "cust-00001"]
