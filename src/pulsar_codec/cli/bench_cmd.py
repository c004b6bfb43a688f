"""``pulsar-codec bench``: quick ratios of the compiled twin, the pure twin and the fastavro recipe.

The full suites, with both benchmark schemas and every peer, live in ``bench/`` (``make bench``).
"""

from __future__ import annotations

import argparse
import functools
import io
import random
from typing import Any

from ._console import EXIT_OK, best_of, rate, say

__all__ = ["add_bench_parser", "cmd_bench"]


def cmd_bench(args: argparse.Namespace) -> int:
    """Time unframe and framed flat-5 Avro -> RecordBatch on generated data and print the ratios."""
    import fastavro
    import pyarrow as pa

    from .. import wire
    from .._kernels import _backend
    from ..formats.avro import Encoder
    from ..pipeline import MessageDecoder
    from ._benchdata import FLAT

    rows: int = args.rows
    rng = random.Random(args.seed)
    payloads = pa.array([rng.randbytes(rng.randint(20, 200)) for _ in range(rows)], pa.binary())
    messages = wire.frame(payloads, 1, wire.CONFLUENT)
    table = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "count": pa.array([rng.randint(0, 10_000) for _ in range(rows)], pa.int32()),
            "score": pa.array([rng.random() for _ in range(rows)]),
            "name": pa.array(["".join(rng.choices("abcdefghij", k=rng.randint(5, 20))) for _ in range(rows)]),
            "flag": pa.array([rng.random() < 0.5 for _ in range(rows)]),
        }
    )
    avro_messages = wire.frame(Encoder(FLAT).encode(table), 1, wire.CONFLUENT)
    backends = ["cython", "python"] if _backend.compiled_available() else ["python"]
    if len(backends) == 1:
        say(f"compiled kernels unavailable: {_backend.compiled_import_error()}")

    def unframe() -> Any:
        return wire.unframe(messages, wire.CONFLUENT)

    results: dict[str, dict[str, float]] = {"unframe": {}, "avro flat-5": {}}
    for name in backends:
        # a decoder per twin, so each twin's plan is compiled (and timed) on its own
        decode = functools.partial(MessageDecoder({1: FLAT}).decode, avro_messages)
        with _backend.use(name):
            repeat = 5 if name == "cython" else 1
            results["unframe"][name] = best_of(unframe, repeat)
            results["avro flat-5"][name] = best_of(decode, repeat)

    parsed = fastavro.parse_schema(FLAT)
    sample = avro_messages.to_pylist()[: min(rows, 50_000)]

    def recipe() -> None:
        records = [fastavro.schemaless_reader(io.BytesIO(m[5:]), parsed) for m in sample]
        pa.Table.from_pylist(records)

    # the recipe runs on at most 50,000 messages; scaled to the full row count
    results["avro flat-5"]["fastavro recipe"] = best_of(recipe, 1) * rows / len(sample)
    for workload, timings in results.items():
        say(f"{workload}, {rows:,} framed messages")
        fastest = min(timings.values())
        for name, secs in timings.items():
            say(f"  {name:16s} {secs * 1e3:9.1f} ms  {rate(rows, secs):>16s}  {secs / fastest:7.1f}x the fastest")
    return EXIT_OK


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value!r}")
    return number


def add_bench_parser(sub: Any) -> None:
    """The ``bench`` command, on the top-level subparsers ``sub``."""
    bench = sub.add_parser(
        "bench",
        help="quick compiled-vs-pure ratios (full suites live in bench/)",
        description=(
            "Time two workloads on generated messages: unframing Confluent-framed messages, and "
            "decoding framed flat Avro records (5 fields) into an Arrow RecordBatch, each with the "
            "compiled and the pure-Python kernels, Avro also with the fastavro recipe (schemaless_reader, "
            "then pa.Table.from_pylist). Prints each one's time, rate and ratio to the fastest. "
            "The full suites, with more schemas and peers, live in bench/ (make bench)."
        ),
    )
    bench.add_argument("--rows", type=_positive, default=200_000, help="messages per workload (default 200000)")
    bench.add_argument("--seed", type=int, default=7, help="random seed for the generated messages (default 7)")
    bench.set_defaults(func=cmd_bench)
