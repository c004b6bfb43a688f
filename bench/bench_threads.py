"""MessageDecoder(threads=N) against one thread: the same batch, compiled kernels, one run.

Workloads: Avro complex-12 and flat-5 (bench_avro), the JSON order record (bench_json) and the
Protobuf order message (bench_protobuf). The output of every thread count is checked equal to the
one-thread output before timing.

    python bench/bench_threads.py [--rows 400000]
    pytest bench/bench_threads.py --benchmark-only
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

import bench_avro
import bench_json
import bench_protobuf
from pulsar_codec._kernels import _backend
from pulsar_codec.pipeline import MessageDecoder


def workloads(rows: int) -> dict[str, tuple[pa.Array, dict[str, Any]]]:
    """name -> (framed messages, MessageDecoder arguments)."""
    return {
        "avro complex-12": (bench_avro.corpus("complex-12", rows), {"registry": bench_avro._REGISTRIES["complex-12"]}),
        "avro flat-5": (bench_avro.corpus("flat-5", rows), {"registry": bench_avro._REGISTRIES["flat-5"]}),
        "json order": (bench_json.corpus(rows), {"registry": bench_json.REGISTRY, "format": "JSON"}),
        "protobuf order": (bench_protobuf.corpus(rows), {"registry": bench_protobuf.REGISTRY, "format": "PROTOBUF"}),
    }


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


@pytest.mark.parametrize("threads", [1, 2])
def test_decode_threads(benchmark: Any, threads: int) -> None:
    if not _backend.compiled_available():
        pytest.skip("compiled kernels unavailable")
    messages, kwargs = workloads(100_000)["avro complex-12"]
    decoder = MessageDecoder(kwargs.pop("registry"), threads=threads, **kwargs)
    with _backend.use("cython"):
        out = benchmark(decoder.decode, messages)
    assert out.num_rows == 100_000


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args(argv)
    cores = os.cpu_count() or 1
    counts = sorted({1, 2, cores})
    print(f"Records/s, compiled kernels, {args.rows:,} rows, best of {args.repeat} alternating runs; {cores} cores.\n")
    print(
        "| workload | "
        + " | ".join(f"threads={n}" for n in counts)
        + " | "
        + " | ".join(f"{n} / 1" for n in counts[1:])
        + " |"
    )
    print("|---|" + "---:|" * (2 * len(counts) - 1))
    with _backend.use("cython"):
        for name, (messages, kwargs) in workloads(args.rows).items():
            registry = kwargs["registry"]
            options = {k: v for k, v in kwargs.items() if k != "registry"}
            decoders = {n: MessageDecoder(registry, threads=n, **options) for n in counts}
            expected = decoders[1].decode(messages)
            for n, decoder in decoders.items():
                assert decoder.decode(messages).equals(expected), f"{name}: threads={n} differs"
            # the thread counts take turns, run after run: this shared machine's speed drifts over
            # seconds, and timing one count after the other would charge the drift to the ratio
            best = dict.fromkeys(counts, float("inf"))
            for _ in range(args.repeat):
                for n, decoder in decoders.items():
                    best[n] = min(best[n], _best(lambda d=decoder, m=messages: d.decode(m), 1))
            rates = {n: args.rows / best[n] for n in counts}
            cells = [bench_avro._rate(rates[n]) for n in counts] + [f"{rates[n] / rates[1]:.2f}x" for n in counts[1:]]
            print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
