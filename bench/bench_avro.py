"""Avro decode benchmarks: framed (Confluent prefix) messages -> RecordBatch.

Compares, in one run, ``pulsar_codec.decode`` on the compiled and the pure twin with the peers of
``spec/peers-and-targets.md`` on the flat-5 and complex-12 schemas (fixed seed, fastavro
``schemaless_writer``):

- the fastavro recipe as people write it: ``schemaless_reader`` per message (prefix sliced off in
  Python) + ``pa.Table.from_pylist(rows)`` with no schema (Arrow infers the types: maps become
  structs, enums strings);
- the same recipe given the target Arrow schema (``from_pylist(rows, schema=...)``), which is
  faster and gives the same types as pulsar_codec; ratios are reported against both;
- the Apache ``avro`` package: ``DatumReader`` per message + ``from_pylist(rows)``, also both ways.

Without a schema, ``from_pylist`` infers complex-12's ``attrs`` map (random keys) as a struct with
one field per distinct key (38,570 fields for 20,000 rows), so the no-schema recipe slows down
quadratically there: that is what the recipe does, and it is reported as measured.

Peak memory is the growth of the process's resident set during one decode, sampled every 0.5 ms
from /proc/self/statm by a thread of a fresh child process (tracemalloc cannot see pyarrow's pool or
the kernel's builders, and ``ru_maxrss`` is a lifetime high-water mark that includes building the
corpus), relative to the payload bytes (message bytes minus the 5-byte prefixes); the input itself
is not counted.

    pytest bench/bench_avro.py --benchmark-only --benchmark-group-by=group
    python bench/bench_avro.py [--rows 200000] [--peer-rows 20000]    # markdown table
"""

from __future__ import annotations

import argparse
import io
import os
import random
import subprocess
import sys
import time

import fastavro
import pyarrow as pa
import pytest

import pulsar_codec as pc
from pulsar_codec import wire
from pulsar_codec._kernels import _backend
from pulsar_codec.cli._benchdata import EVENT, FLAT, SCHEMA_ID, SCHEMAS  # noqa: F401 - re-exported for bench_spark
from pulsar_codec.cli._benchdata import event_record as _event
from pulsar_codec.cli._benchdata import flat_record as _flat

_CACHE: dict = {}


def corpus(workload: str, rows: int) -> pa.Array:
    """Framed messages (Confluent prefix) of ``rows`` seeded records, as a BinaryArray."""
    key = (workload, rows)
    if key not in _CACHE:
        rng = random.Random(20240611)
        make = _flat if workload == "flat-5" else _event
        parsed = fastavro.parse_schema(SCHEMAS[workload])
        prefix = b"\x00" + SCHEMA_ID.to_bytes(4, "big")
        out = []
        for _ in range(rows):
            buf = io.BytesIO()
            buf.write(prefix)
            fastavro.schemaless_writer(buf, parsed, make(rng))
            out.append(buf.getvalue())
        _CACHE[key] = pa.array(out, pa.binary())
    return _CACHE[key]


# one registry Mapping per workload, kept: pc.decode reuses its decoder (parsed schemas, compiled
# plans) for a registry it has seen, as an application decoding batch after batch does
_REGISTRIES = {workload: {SCHEMA_ID: schema} for workload, schema in SCHEMAS.items()}


def run_pulsar_codec(messages: pa.Array, workload: str, backend: str) -> pa.RecordBatch:
    with _backend.use(backend):
        return pc.decode(messages, _REGISTRIES[workload], protocol=wire.CONFLUENT)


def run_fastavro(messages: pa.Array, workload: str, with_schema: bool = False) -> pa.Table:
    """The common recipe; ``with_schema`` hands ``from_pylist`` the target Arrow schema."""
    parsed = fastavro.parse_schema(SCHEMAS[workload])
    reader = fastavro.schemaless_reader
    rows = [reader(io.BytesIO(m[5:]), parsed, None) for m in messages.to_pylist()]
    if with_schema:
        return pa.Table.from_pylist(rows, schema=_arrow_schema(workload))
    return pa.Table.from_pylist(rows)


def _arrow_schema(workload: str) -> pa.Schema:
    from pulsar_codec import avro as _avro

    return _avro.Decoder(SCHEMAS[workload]).arrow_schema


def run_apache_avro(messages: pa.Array, workload: str, with_schema: bool = False) -> pa.Table:
    import json

    import avro.io
    import avro.schema

    schema = avro.schema.parse(json.dumps(SCHEMAS[workload]))
    reader = avro.io.DatumReader(schema)
    rows = [reader.read(avro.io.BinaryDecoder(io.BytesIO(m[5:]))) for m in messages.to_pylist()]
    if with_schema:
        return pa.Table.from_pylist(rows, schema=_arrow_schema(workload))
    return pa.Table.from_pylist(rows)


# -- encode -----------------------------------------------------------------------------------------


def records(workload: str, rows: int) -> list:
    """The seeded records of :func:`corpus` as Python dicts (fastavro's own input)."""
    rng = random.Random(20240611)
    make = _flat if workload == "flat-5" else _event
    return [make(rng) for _ in range(rows)]


def encode_batch(workload: str, rows: int) -> pa.RecordBatch:
    """The corpus decoded into Arrow: what the encoders start from."""
    return run_pulsar_codec(corpus(workload, rows), workload, "cython" if _backend.compiled_available() else "python")


def run_encode(batch: pa.RecordBatch, workload: str, backend: str) -> pa.Array:
    from pulsar_codec import avro as _avro

    with _backend.use(backend):
        return _avro.Encoder(SCHEMAS[workload]).encode(batch)


def run_fastavro_encode(rows: list, workload: str) -> pa.Array:
    """fastavro ``schemaless_writer`` per record from ready-made dicts (its best case: turning Arrow
    rows into the dicts it accepts is not counted) + ``pa.array``."""
    parsed = fastavro.parse_schema(SCHEMAS[workload])
    writer = fastavro.schemaless_writer
    out = []
    for r in rows:
        buf = io.BytesIO()
        writer(buf, parsed, r)
        out.append(buf.getvalue())
    return pa.array(out, pa.binary())


# -- pytest-benchmark -------------------------------------------------------------------------------

BENCH_ROWS = int(os.environ.get("PULSAR_CODEC_BENCH_ROWS", "200000"))


@pytest.mark.parametrize("workload", list(SCHEMAS))
@pytest.mark.parametrize(
    "peer", ["cython", "python", "fastavro", "fastavro-schema", "apache-avro", "apache-avro-schema"]
)
def test_decode(benchmark, workload, peer):
    if peer == "cython" and not _backend.compiled_available():
        pytest.skip("compiled kernels unavailable")
    # the row-wise peers are 100x slower: time them on a tenth of the rows, report per row
    rows = BENCH_ROWS if peer == "cython" else max(BENCH_ROWS // 10, 1000)
    messages = corpus(workload, rows)
    benchmark.group = f"avro-{workload}"
    benchmark.extra_info.update(rows=rows, peer=peer)
    if peer in ("cython", "python"):
        batch = run_pulsar_codec(messages, workload, peer)
        reference = run_pulsar_codec(messages[:500], workload, "python")
        assert batch.slice(0, 500).equals(reference)
        benchmark.pedantic(run_pulsar_codec, args=(messages, workload, peer), rounds=5 if peer == "cython" else 2)
    elif peer in ("fastavro", "fastavro-schema"):
        benchmark.pedantic(run_fastavro, args=(messages, workload, peer == "fastavro-schema"), rounds=2)
    else:
        benchmark.pedantic(run_apache_avro, args=(messages, workload, peer == "apache-avro-schema"), rounds=1)


@pytest.mark.parametrize("workload", list(SCHEMAS))
@pytest.mark.parametrize("peer", ["cython", "python", "fastavro"])
def test_encode(benchmark, workload, peer):
    if peer == "cython" and not _backend.compiled_available():
        pytest.skip("compiled kernels unavailable")
    rows = BENCH_ROWS if peer == "cython" else max(BENCH_ROWS // 10, 1000)
    benchmark.group = f"avro-encode-{workload}"
    benchmark.extra_info.update(rows=rows, peer=peer)
    if peer == "fastavro":
        benchmark.pedantic(run_fastavro_encode, args=(records(workload, rows), workload), rounds=2)
        return
    batch = encode_batch(workload, rows)
    out = run_encode(batch, workload, peer)
    # the framed corpus minus its prefixes: the same bytes fastavro wrote
    expected = corpus(workload, rows).to_pylist()
    assert out.to_pylist()[:200] == [m[5:] for m in expected[:200]]
    benchmark.pedantic(run_encode, args=(batch, workload, peer), rounds=5 if peer == "cython" else 2)


# -- script mode ------------------------------------------------------------------------------------


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _rss_growth(workload: str, rows: int, peer: str = "cython") -> tuple[int, int]:
    """(peak RSS growth during one decode by ``peer``, payload bytes), measured in a child process."""
    call = {
        "cython": f"b.run_pulsar_codec(msgs, {workload!r}, 'cython')",
        "fastavro-schema": f"b.run_fastavro(msgs, {workload!r}, True)",
    }[peer]
    code = f"""
import threading, time, os, gc
import bench_avro as b
msgs = b.corpus({workload!r}, {rows})
payload = msgs.buffers()[2].size - 5 * len(msgs)
gc.collect()
page = os.sysconf('SC_PAGE_SIZE')
def rss():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * page
base = rss(); peak = [base]; done = [False]
def watch():
    while not done[0]:
        peak[0] = max(peak[0], rss()); time.sleep(0.0005)
t = threading.Thread(target=watch); t.start()
result = {call}
peak[0] = max(peak[0], rss()); done[0] = True; t.join()
print(peak[0] - base, payload)
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=os.path.dirname(os.path.abspath(__file__)),
    )
    grow, payload = out.stdout.split()
    return int(grow), int(payload)


def _rate(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    return f"{value / 1e3:.0f}k" if value >= 1e4 else f"{value:.0f}"


def _ratio(fast: float | None, base: float, digits: int = 0) -> str:
    return f"{fast / base:,.{digits}f}x" if fast else "n/a"


def _decode_row(workload: str, rows: int, peer_rows: int, repeat: int, compiled: bool) -> str:
    """One row of the decode table: rates of every peer on ``workload``, ratios and peak memory."""
    big = corpus(workload, rows)
    small = corpus(workload, peer_rows)
    c = None
    if compiled:
        run_pulsar_codec(big, workload, "cython")
        c = rows / _best(lambda: run_pulsar_codec(big, workload, "cython"), repeat)
    py = peer_rows / _best(lambda: run_pulsar_codec(small, workload, "python"), 2)
    slow = workload == "complex-12"  # the no-schema recipes are quadratic there: time them once
    fa = peer_rows / _best(lambda: run_fastavro(small, workload), 1 if slow else 2)
    fas = peer_rows / _best(lambda: run_fastavro(small, workload, True), 2)
    ap = peer_rows / _best(lambda: run_apache_avro(small, workload), 1)
    aps = peer_rows / _best(lambda: run_apache_avro(small, workload, True), 1)
    peak_c = "n/a"
    if compiled:
        grow, payload = _rss_growth(workload, rows)
        peak_c = f"{grow / payload:.2f}x"
    grow, payload = _rss_growth(workload, peer_rows, "fastavro-schema")
    peak_fa = f"{grow / payload:.1f}x"
    return (
        f"| {workload} | {_rate(c) if c else 'n/a'} | {_rate(py)} | {_rate(fa)} | {_rate(fas)} | {_rate(ap)} "
        f"| {_rate(aps)} | {_ratio(c, fa)} | {_ratio(c, fas)} | {py / ap:.2f}x | {py / aps:.2f}x "
        f"| {peak_c} | {peak_fa} |"
    )


def _encode_row(workload: str, rows: int, peer_rows: int, repeat: int, compiled: bool) -> str:
    """One row of the encode table: compiled, pure and fastavro rates on ``workload`` and the ratios."""
    big = encode_batch(workload, rows)
    small = encode_batch(workload, peer_rows)
    recs = records(workload, peer_rows)
    c = None
    if compiled:
        run_encode(big, workload, "cython")
        c = rows / _best(lambda: run_encode(big, workload, "cython"), repeat)
    py = peer_rows / _best(lambda: run_encode(small, workload, "python"), 2)
    fa = peer_rows / _best(lambda: run_fastavro_encode(recs, workload), 2)
    return f"| {workload} | {_rate(c) if c else 'n/a'} | {_rate(py)} | {_rate(fa)} | {_ratio(c, fa)} | {py / fa:.2f}x |"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000, help="rows for the compiled twin")
    ap.add_argument("--peer-rows", type=int, default=20_000, help="rows for the row-wise peers and the pure twin")
    ap.add_argument("--repeat", type=int, default=9, help="timed runs of the compiled twin (best is kept)")
    args = ap.parse_args(argv)
    sizes = (args.rows, args.peer_rows, args.repeat, _backend.compiled_available())
    print(
        "Records/s, framed Confluent messages -> Arrow, single thread, best of several runs; compiled on "
        f"{args.rows:,} rows, the others on {args.peer_rows:,}. fastavro recipe = `schemaless_reader` per "
        'message + `pa.Table.from_pylist(rows)`; "+ schema" passes the Arrow schema to `from_pylist`. '
        "Peak = RSS growth during one decode / payload bytes.\n"
    )
    print(
        "| schema | compiled | pure | fastavro recipe | fastavro + schema | Apache avro | Apache + schema "
        "| compiled / recipe | compiled / recipe + schema | pure / Apache | pure / Apache + schema "
        "| peak compiled | peak recipe + schema |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for workload in SCHEMAS:
        print(_decode_row(workload, *sizes))
    print(
        "\nEncode, Arrow RecordBatch -> Avro bodies (BinaryArray), records/s; fastavro = `schemaless_writer` per "
        "record from ready-made dicts (the Arrow -> dict conversion it would need is not counted).\n"
    )
    print("| schema | compiled | pure | fastavro | compiled / fastavro | pure / fastavro |")
    print("|---|---:|---:|---:|---:|---:|")
    for workload in SCHEMAS:
        print(_encode_row(workload, *sizes))


if __name__ == "__main__":
    main()
