"""Avro decode benchmarks: framed (Confluent prefix) messages -> RecordBatch.

Compares, in one run, ``pulsar_codec.decode`` on the compiled and the pure twin with the common
recipe (fastavro ``schemaless_reader`` per message + ``pa.Table.from_pylist``) and the Apache
``avro`` package (``DatumReader`` + ``from_pylist``), on the flat-5 and complex-12 schemas of
``spec/peers-and-targets.md`` (fixed seed, fastavro ``schemaless_writer``).

Peak memory: tracemalloc cannot see the kernel's malloc'd builders, so the compiled path is
measured as the growth of the process's resident set (``ru_maxrss`` is a high-water mark, so we
sample /proc/self/statm around the call in a fresh child process) and reported relative to the
payload bytes.

    pytest bench/bench_avro.py --benchmark-only --benchmark-group-by=group
    python bench/bench_avro.py [--rows 200000]      # ratio table
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

import pulsar_codec as pc
from pulsar_codec import _backend, wire

FLAT = {
    "type": "record",
    "name": "Flat",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "count", "type": "int"},
        {"name": "score", "type": "double"},
        {"name": "name", "type": "string"},
        {"name": "flag", "type": "boolean"},
    ],
}
EVENT = {
    "type": "record",
    "name": "Event",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "count", "type": "int"},
        {"name": "score", "type": "double"},
        {"name": "active", "type": "boolean"},
        {"name": "comment", "type": ["null", "string"]},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "ACTIVE", "SUSPENDED", "DELETED"]}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tags", "type": {"type": "array", "items": "int"}},
        {"name": "attrs", "type": {"type": "map", "values": "string"}},
        {
            "name": "location",
            "type": {"type": "record", "name": "Location", "fields": [{"name": "lat", "type": "double"}, {"name": "lon", "type": "double"}]},
        },
        {"name": "payload", "type": "bytes"},
    ],
}
SCHEMAS = {"flat-5": FLAT, "complex-12": EVENT}
SCHEMA_ID = 1
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return "".join(rng.choice(_LETTERS) for _ in range(rng.randint(lo, hi)))


def _flat(rng):
    return {"id": rng.getrandbits(40), "count": rng.randint(-(10**6), 10**6), "score": rng.random() * 1000,
            "name": _text(rng, 5, 20), "flag": rng.random() < 0.5}


def _event(rng):
    return {
        "id": rng.getrandbits(40),
        "name": _text(rng, 5, 20),
        "count": rng.randint(0, 10**5),
        "score": rng.random() * 100,
        "active": rng.random() < 0.5,
        "comment": None if rng.random() < 0.3 else _text(rng, 10, 60),
        "status": rng.choice(["NEW", "ACTIVE", "SUSPENDED", "DELETED"]),
        "ts": 1_700_000_000_000 + rng.randint(0, 10**10),
        "tags": [rng.randint(0, 10**4) for _ in range(rng.randint(0, 8))],
        "attrs": {_text(rng, 3, 8): _text(rng, 5, 15) for _ in range(rng.randint(0, 4))},
        "location": {"lat": rng.uniform(-90, 90), "lon": rng.uniform(-180, 180)},
        "payload": rng.randbytes(rng.randint(8, 32)),
    }


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


def run_pulsar_codec(messages: pa.Array, workload: str, backend: str) -> pa.RecordBatch:
    with _backend.use(backend):
        return pc.decode(messages, {SCHEMA_ID: SCHEMAS[workload]}, protocol=wire.CONFLUENT)


def run_fastavro(messages: pa.Array, workload: str) -> pa.Table:
    parsed = fastavro.parse_schema(SCHEMAS[workload])
    reader = fastavro.schemaless_reader
    rows = [reader(io.BytesIO(m[5:]), parsed, None) for m in messages.to_pylist()]
    return pa.Table.from_pylist(rows, schema=_arrow_schema(workload))


def _arrow_schema(workload: str) -> pa.Schema:
    # the peers get the target Arrow schema: inferring it from dicts turns every map into a struct
    from pulsar_codec import avro as _avro

    return _avro.Decoder(SCHEMAS[workload]).arrow_schema


def run_apache_avro(messages: pa.Array, workload: str) -> pa.Table:
    import avro.io
    import avro.schema

    import json

    schema = avro.schema.parse(json.dumps(SCHEMAS[workload]))
    reader = avro.io.DatumReader(schema)
    rows = [reader.read(avro.io.BinaryDecoder(io.BytesIO(m[5:]))) for m in messages.to_pylist()]
    return pa.Table.from_pylist(rows, schema=_arrow_schema(workload))


# -- pytest-benchmark -------------------------------------------------------------------------------

try:
    import pytest
except ImportError:  # pragma: no cover - script mode without pytest
    pytest = None

if pytest is not None:
    BENCH_ROWS = int(os.environ.get("PULSAR_CODEC_BENCH_ROWS", "200000"))

    @pytest.mark.parametrize("workload", list(SCHEMAS))
    @pytest.mark.parametrize("peer", ["cython", "python", "fastavro", "apache-avro"])
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
        elif peer == "fastavro":
            benchmark.pedantic(run_fastavro, args=(messages, workload), rounds=2)
        else:
            benchmark.pedantic(run_apache_avro, args=(messages, workload), rounds=1)


# -- script mode ------------------------------------------------------------------------------------


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _rss_growth(workload: str, rows: int) -> tuple[int, int]:
    """(peak RSS growth during one compiled decode, payload bytes), measured in a child process."""
    code = f"""
import threading, time, os
import bench_avro as b
msgs = b.corpus({workload!r}, {rows})
payload = msgs.buffers()[2].size - 5 * len(msgs)
page = os.sysconf('SC_PAGE_SIZE')
def rss():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * page
base = rss(); peak = [base]; done = [False]
def watch():
    while not done[0]:
        peak[0] = max(peak[0], rss()); time.sleep(0.0005)
t = threading.Thread(target=watch); t.start()
batch = b.run_pulsar_codec(msgs, {workload!r}, 'cython')
peak[0] = max(peak[0], rss()); done[0] = True; t.join()
print(peak[0] - base, payload)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.abspath(__file__)))
    grow, payload = out.stdout.split()
    return int(grow), int(payload)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--peer-rows", type=int, default=20_000, help="rows for the row-wise peers and the pure twin")
    args = ap.parse_args(argv)
    print(f"rows: compiled {args.rows}, others {args.peer_rows}; records/s (best of several), one run")
    print(f"{'workload':<12}{'compiled':>12}{'pure':>12}{'fastavro':>12}{'apache':>12}"
          f"{'c/fastavro':>12}{'pure/apache':>12}{'peak/payload':>14}")
    for workload in SCHEMAS:
        big = corpus(workload, args.rows)
        small = corpus(workload, args.peer_rows)
        rate = {}
        if _backend.compiled_available():
            run_pulsar_codec(big, workload, "cython")
            rate["c"] = args.rows / _best(lambda: run_pulsar_codec(big, workload, "cython"), 7)
        rate["py"] = args.peer_rows / _best(lambda: run_pulsar_codec(small, workload, "python"), 2)
        rate["fa"] = args.peer_rows / _best(lambda: run_fastavro(small, workload), 2)
        rate["ap"] = args.peer_rows / _best(lambda: run_apache_avro(small, workload), 1)
        grow, payload = _rss_growth(workload, args.rows) if "c" in rate else (0, 1)
        print(f"{workload:<12}{rate.get('c', 0) / 1e6:>10.2f}M{rate['py'] / 1e3:>10.0f}k{rate['fa'] / 1e3:>10.0f}k"
              f"{rate['ap'] / 1e3:>10.0f}k{rate.get('c', 0) / rate['fa']:>11.0f}x{rate['py'] / rate['ap']:>11.2f}x"
              f"{grow / payload:>13.2f}x")


if __name__ == "__main__":
    main()
