"""The README's PySpark example runs as written and splits good rows from dead letters.

The code block is taken from README.md (section "PySpark"); only its file names are replaced by
absolute paths in a temporary folder (Spark resolves relative paths against the JVM's working
directory, not Python's).
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pulsar_codec.cli import demo_data
from pulsar_codec.registry import LocalRegistry

pytest_plugins = ["spark_fixtures"]

README = Path(__file__).resolve().parents[1] / "README.md"
PATHS = ("raw-orders.parquet", "schemas.db", "orders/", "dead-letter/")


def pyspark_example() -> str:
    """The first Python code block after the README's "### PySpark" heading."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### PySpark") :]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None, "no python block in the PySpark section"
    return found.group(1)


def test_the_example_names_the_files_it_reads_and_writes():
    code = pyspark_example()
    for name in PATHS:
        assert f'"{name}"' in code, name


@pytest.mark.slow
def test_readme_pyspark_example_runs_as_written(spark, tmp_path):
    registry = LocalRegistry(tmp_path / "schemas.db")
    gen = demo_data.generate(registry, tmp_path, rows=300, seed=3)
    registry.close()
    code = pyspark_example()
    for name in PATHS:
        code = code.replace(f'"{name}"', repr(str(tmp_path / name)))
    exec(compile(code, str(README), "exec"), {"__name__": "readme_example"})  # noqa: S102 - the README's own code

    good = pq.read_table(tmp_path / "orders")
    bad = pq.read_table(tmp_path / "dead-letter")
    assert len(good) + len(bad) == 300 and len(bad) == gen.corrupt
    assert good["order_id"].null_count == 0  # no all-null rows for the bad messages
    assert bad.column_names == ["code", "offset", "message", "payload"]  # decode_error.*
    raw = pq.read_table(gen.orders_path, columns=["payload"])["payload"].to_pylist()
    assert set(bad["payload"].to_pylist()) <= set(raw) and all(bad["message"].to_pylist())
    assert sorted(good["order_id"].to_pylist()) == sorted(
        i for i in range(1, 301) if i not in set(_bad_order_ids(raw, bad["payload"].to_pylist()))
    )


def _bad_order_ids(raw: list[bytes], bad: list[bytes]) -> list[int]:
    """The order ids of the corrupt messages: orders are numbered 1.. in message order."""
    return [i + 1 for i, message in enumerate(raw) if message in bad]
