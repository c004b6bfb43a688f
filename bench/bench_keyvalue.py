"""Split 1M INLINE KeyValue payloads: compiled vs pure twin vs a plain Python loop.

pytest bench/bench_keyvalue.py --benchmark-only --benchmark-group-by=group
python bench/bench_keyvalue.py        # one run, prints rows/s and the ratios
"""

from __future__ import annotations

import os
import random
import struct
import sys
import time

import pyarrow as pa
import pytest

from pulsar_codec import keyvalue
from pulsar_codec._kernels import _backend

ROWS = int(os.environ.get("BENCH_KV_ROWS", 1_000_000))


def inline_payloads(rows: int = ROWS, seed: int = 11) -> pa.Array:
    """Seeded INLINE payloads: 8-24 byte keys (10% null), 20-200 byte values."""
    rng = random.Random(seed)
    pool_k = [rng.randbytes(rng.randint(8, 24)) for _ in range(1024)]
    pool_v = [rng.randbytes(rng.randint(20, 200)) for _ in range(4096)]
    keys = pa.array([None if i % 10 == 0 else pool_k[i % 1024] for i in range(rows)], pa.binary())
    values = pa.array([pool_v[i % 4096] for i in range(rows)], pa.binary())
    return keyvalue.join_inline(keys, values)


def python_loop(payloads: pa.Array):
    """What people write by hand: struct.unpack per payload."""
    keys, values = [], []
    for p in payloads.to_pylist():
        (klen,) = struct.unpack_from(">i", p, 0)
        pos = 4 + max(klen, 0)
        keys.append(None if klen < 0 else p[4:pos])
        (vlen,) = struct.unpack_from(">i", p, pos)
        values.append(None if vlen < 0 else p[pos + 4 : pos + 4 + vlen])
    return pa.array(keys, pa.binary()), pa.array(values, pa.binary())


@pytest.fixture(scope="module")
def payloads():
    return inline_payloads()


@pytest.mark.parametrize("impl", ["cython", "python", "loop"])
def test_split_inline(benchmark, payloads, impl):
    benchmark.group = f"split-inline-{len(payloads)}"
    benchmark.extra_info["rows"] = len(payloads)
    if impl == "loop":
        keys, values = benchmark.pedantic(python_loop, args=(payloads,), rounds=1, iterations=1)
    else:
        if impl == "cython" and not _backend.compiled_available():
            pytest.skip(_backend.compiled_import_error())
        with _backend.use(impl):
            keys, values = benchmark(keyvalue.split_inline, payloads)
    with _backend.use("python"):
        expect_k, expect_v = keyvalue.split_inline(payloads[:1000])
    assert keys[:1000].equals(expect_k) and values[:1000].equals(expect_v)


def _best(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    data = inline_payloads(ROWS)
    results = {}
    with _backend.use("cython"):
        results["compiled"] = _best(lambda: keyvalue.split_inline(data), 10)
    with _backend.use("python"):
        results["pure twin"] = _best(lambda: keyvalue.split_inline(data), 2)
    results["python loop"] = _best(lambda: python_loop(data), 1)
    print(f"split {ROWS:,} INLINE KeyValue payloads (best of runs)")
    for name, secs in results.items():
        print(
            f"  {name:12s} {secs * 1e3:9.1f} ms  {ROWS / secs / 1e6:8.2f} M rows/s  "
            f"compiled is {secs / results['compiled']:7.1f}x faster"
        )


if __name__ == "__main__":
    sys.exit(main())
