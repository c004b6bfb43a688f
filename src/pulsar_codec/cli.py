"""The ``pulsar-codec`` command.

``pulsar-codec demo`` is the main job on embedded defaults: it needs no server, no network and no
input of yours. ``pulsar-codec bench`` runs the benchmarks' quick ratio tables.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Sequence

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_FAILED = 1


def _say(text: str = "") -> None:
    print(text, flush=True)


def _rate(rows: int, seconds: float) -> str:
    return f"{rows / seconds / 1e6:,.2f}M rows/s" if seconds > 0 else "n/a"


def demo_framing(rows: int, seed: int) -> int:
    """Frame and unframe a generated sample with every registry protocol, split KeyValue payloads,
    and show how corrupt messages are reported."""
    import pyarrow as pa

    import pulsar_codec as pc
    from pulsar_codec import keyvalue, wire
    from pulsar_codec.errors import DecodeError

    rng = random.Random(seed)
    _say(f"pulsar_codec {pc.__version__}, kernels: {pc.BACKEND}")
    payloads = pa.array([rng.randbytes(rng.randint(8, 120)) for _ in range(rows)], pa.binary())
    ids = pa.array([rng.choice((1, 2, 3)) for _ in range(rows)], pa.int64())
    _say(f"generated {rows:,} payloads ({payloads.nbytes / 1e6:.1f} MB) for schema ids 1-3")

    for protocol in (wire.CONFLUENT, wire.HORTONWORKS, wire.APICURIO, wire.APICURIO_V3, wire.CONFLUENT_PROTOBUF):
        t0 = time.perf_counter()
        messages = wire.frame(payloads, ids, protocol)
        t1 = time.perf_counter()
        framed = wire.unframe(messages, protocol)
        t2 = time.perf_counter()
        same = framed.payloads.cast(pa.binary()).equals(payloads) and framed.schema_ids.equals(ids)
        _say(
            f"  {protocol.name:20s} frame {_rate(rows, t1 - t0):>16s}   unframe {_rate(rows, t2 - t1):>16s}"
            f"   round trip {'ok' if same else 'MISMATCH'}"
        )
        if not same:
            return EXIT_FAILED

    keys = pa.array([None if i % 10 == 0 else f"key-{i}".encode() for i in range(rows)], pa.binary())
    t0 = time.perf_counter()
    inline = keyvalue.join_inline(keys, payloads)
    t1 = time.perf_counter()
    got_keys, got_values = keyvalue.split_inline(inline)
    t2 = time.perf_counter()
    same = got_keys.equals(keys) and got_values.equals(payloads)
    _say(
        f"  {'KeyValue INLINE':20s} join  {_rate(rows, t1 - t0):>16s}   split   {_rate(rows, t2 - t1):>16s}"
        f"   round trip {'ok' if same else 'MISMATCH'}  ({keys.null_count:,} null keys kept)"
    )
    if not same:
        return EXIT_FAILED

    kv_id = keyvalue.pack_schema_id(b"\x00\x00\x00\x01", b"\x00\x00\x00\x02")
    on_wire = wire.pulsar_schema_id(kv_id, keyvalue=True)
    _say(f"  PIP-420 KeyValue schema id for key id 1 / value id 2: {on_wire.hex(' ')}")

    corrupt = wire.frame(payloads[:5], ids[:5], wire.CONFLUENT).to_pylist()
    corrupt[3] = b"\x07" + corrupt[3][1:]
    try:
        wire.unframe(corrupt, wire.CONFLUENT)
    except DecodeError as exc:
        _say(f"  a corrupt message is reported, not skipped: {type(exc).__name__}: {exc}")
    else:
        _say("  corrupt message was not detected")
        return EXIT_FAILED
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    return demo_framing(args.rows, args.seed)


def cmd_bench(args: argparse.Namespace) -> int:
    from pulsar_codec import _backend, wire

    rows = args.rows
    rng = random.Random(args.seed)
    import pyarrow as pa

    payloads = pa.array([rng.randbytes(rng.randint(20, 200)) for _ in range(rows)], pa.binary())
    messages = wire.frame(payloads, 1, wire.CONFLUENT)
    results = {}
    for name in ("cython", "python"):
        try:
            with _backend.use(name):
                best = float("inf")
                for _ in range(5 if name == "cython" else 1):
                    t = time.perf_counter()
                    wire.unframe(messages, wire.CONFLUENT)
                    best = min(best, time.perf_counter() - t)
                results[name] = best
        except ImportError as exc:
            _say(f"{name}: unavailable ({exc})")
    _say(f"unframe {rows:,} Confluent messages")
    for name, secs in results.items():
        _say(f"  {name:8s} {secs * 1e3:8.1f} ms  {_rate(rows, secs)}")
    if len(results) == 2:
        _say(f"  compiled / pure: {results['python'] / results['cython']:.1f}x")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pulsar-codec",
        description=(
            "Fast codecs for Pulsar and schema-registry framed messages, into Apache Arrow.\n\n"
            "Start with `pulsar-codec demo`: it runs the main job on generated data with embedded "
            "defaults and prints what it did."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="run the main job on generated data (no servers needed)")
    demo.add_argument("--rows", type=int, default=200_000, help="messages to generate (default 200000)")
    demo.add_argument("--seed", type=int, default=42, help="random seed for the generated data")
    demo.set_defaults(func=cmd_demo)

    bench = sub.add_parser("bench", help="quick compiled-vs-pure ratios (full suites live in bench/)")
    bench.add_argument("--rows", type=int, default=1_000_000)
    bench.add_argument("--seed", type=int, default=7)
    bench.set_defaults(func=cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    if getattr(args, "rows", 1) <= 0:
        parser.error("--rows must be positive")
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
