"""Wire-prefix framing: unframe 1M Confluent messages, compiled vs pure twin vs a plain Python loop.

    pytest bench/bench_wire.py --benchmark-only --benchmark-group-by=group --benchmark-disable-gc
    python bench/bench_wire.py            # one run, prints messages/s and the ratios

The compiled twin's target is >= 100M messages/s, and at most 1.5x the time of a plain memcpy of
the messages' data buffer (numpy copy of the same bytes: the floor any pass over the payloads
pays). Ratios, not absolute times, are what carry over
between runs on these shared machines.
"""

from __future__ import annotations

import os
import random
import sys
import time

import numpy as np
import pyarrow as pa
import pytest

from pulsar_codec import wire
from pulsar_codec._kernels import _backend

ROWS = int(os.environ.get("BENCH_WIRE_ROWS", 1_000_000))


def confluent_messages(rows: int = ROWS, seed: int = 7) -> pa.Array:
    """Seeded framed messages: ids 1-8, payload 20-200 bytes (a typical Avro body)."""
    rng = random.Random(seed)
    payloads = [rng.randbytes(rng.randint(20, 200)) for _ in range(min(rows, 4096))]
    ids = [rng.randint(1, 8) for _ in range(rows)]
    bodies = [payloads[i % len(payloads)] for i in range(rows)]
    return wire.frame(pa.array(bodies, pa.binary()), ids, wire.CONFLUENT)


def memcpy_payloads(messages: pa.Array) -> np.ndarray:
    """The floor: one copy of every byte of the messages (what touching each payload once costs)."""
    data = messages.buffers()[2]
    return np.frombuffer(data, dtype=np.uint8).copy()


def python_loop(messages: pa.Array):
    """What people write by hand: per message, check the magic byte and slice."""
    ids, payloads = [], []
    for m in messages.to_pylist():
        if m[0] != 0:
            raise ValueError("bad magic")
        ids.append(int.from_bytes(m[1:5], "big"))
        payloads.append(m[5:])
    return pa.array(ids, pa.int64()), pa.array(payloads, pa.binary())


@pytest.fixture(scope="module")
def messages():
    return confluent_messages()


@pytest.mark.parametrize("impl", ["cython", "python", "loop", "memcpy"])
def test_unframe(benchmark, messages, impl):
    benchmark.group = f"unframe-confluent-{len(messages)}"
    benchmark.extra_info["rows"] = len(messages)
    if impl == "memcpy":
        copied = benchmark(memcpy_payloads, messages)
        assert copied.nbytes == messages.buffers()[2].size
        return
    if impl == "loop":
        ids, _ = benchmark.pedantic(python_loop, args=(messages,), rounds=1, iterations=1)
        assert len(ids) == len(messages)
        return
    if impl == "cython" and not _backend.compiled_available():
        pytest.skip(_backend.compiled_import_error())
    with _backend.use(impl):
        framed = benchmark(wire.unframe, messages, wire.CONFLUENT)
    with _backend.use("python"):
        expect = wire.unframe(messages[:1000], wire.CONFLUENT)
    assert framed.schema_ids[:1000].equals(expect.schema_ids)
    assert framed.payloads[:1000].to_pylist() == expect.payloads.to_pylist()


def _best(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    rows = ROWS
    msgs = confluent_messages(rows)
    results = {}
    with _backend.use("cython"):
        results["compiled"] = _best(lambda: wire.unframe(msgs, wire.CONFLUENT), 20)
    with _backend.use("python"):
        results["pure twin"] = _best(lambda: wire.unframe(msgs, wire.CONFLUENT), 2)
    results["python loop"] = _best(lambda: python_loop(msgs), 1)
    results["memcpy"] = _best(lambda: memcpy_payloads(msgs), 20)
    print(f"unframe {rows:,} Confluent messages (best of runs)")
    for name, secs in results.items():
        print(
            f"  {name:12s} {secs * 1e3:9.1f} ms  {rows / secs / 1e6:8.2f} M msg/s  "
            f"compiled is {secs / results['compiled']:7.1f}x faster"
        )
    print(
        f"  compiled / memcpy of the data buffer: {results['compiled'] / results['memcpy']:.2f}x the time (target <= 1.5x)"
    )


if __name__ == "__main__":
    sys.exit(main())
