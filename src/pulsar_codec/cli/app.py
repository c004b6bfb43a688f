"""The ``pulsar-codec`` command (also ``python -m pulsar_codec``).

``pulsar-codec demo`` is the main job on embedded defaults: it needs no server, no network and no
input of yours. ``decode`` turns a Parquet column of framed messages into Parquet, ``registry``
serves or queries a schema registry, ``dump`` reads a Pulsar topic into Parquet and ``bench``
prints quick throughput ratios. Exit codes: 0 done, 1 failed (bad data, incompatible schema),
2 usage, 3 registry error, 4 schema not found, 5 unreachable service, 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from ._console import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_REGISTRY,
    EXIT_SCHEMA_MISSING,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    UsageError,
    err,
    say,
)
from .bench_cmd import add_bench_parser
from .registry_cmd import add_registry_options, add_registry_parser, open_registry, read_schema_arg

__all__ = ["build_parser", "main", "version_text"]


def version_text() -> str:
    """What ``pulsar-codec --version`` prints: ``pulsar-codec <version>``."""
    from .. import __version__

    return f"pulsar-codec {__version__}"


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the demo (or only its framing part); returns the exit code."""
    from . import demo
    from .framing import demo_framing

    if args.framing_only:
        return demo_framing(args.rows, args.seed)
    engine: str = args.engine
    if engine == "spark" and not _have("pyspark"):
        err("the spark engine needs PySpark (pip install 'pulsar-codec[spark]'); running the local engine")
        engine = "local"
    elif engine == "spark" and not _java_available():
        err("the spark engine needs Java (java on PATH or JAVA_HOME); running the local engine")
        engine = "local"
    result = demo.run(Path(args.output), args.rows, args.seed, engine, say, progress=not args.quiet)
    # the demo plants corrupt messages: one that went unreported would be a failure of the demo itself
    return EXIT_OK if result.errors > 0 and result.decoded + result.errors == result.rows else EXIT_FAILED


def _java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(shutil.which("java") or (home and os.path.exists(os.path.join(home, "bin", "java"))))


def _have(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def cmd_decode(args: argparse.Namespace) -> int:
    """Decode a Parquet column of framed messages into Parquet; returns the exit code."""
    from .. import wire
    from .parquet_io import decode_parquet

    protocol = wire.protocol_by_name(args.protocol)
    reader = read_schema_arg(args.reader_schema) if args.reader_schema else None
    registry = open_registry(args.registry, user=args.user, password=args.password, token=args.token)
    try:
        stats = decode_parquet(
            args.input,
            args.output,
            registry,
            column=args.column,
            protocol=protocol,
            engine=args.engine,
            reader_schema=reader,
            dead_letter=args.dead_letter,
        )
    finally:
        registry.close()
    dead_letter = f" -> {args.dead_letter}" if args.dead_letter and stats["errors"] else ""
    say(
        f"decoded {stats['decoded']:,} of {stats['rows']:,} rows from {args.input} into {args.output}"
        f" in {stats['seconds']:.2f} s ({stats['engine']} engine); {stats['errors']:,} bad rows{dead_letter}"
    )
    return EXIT_OK


def cmd_dump(args: argparse.Namespace) -> int:
    """Read a Pulsar topic into a raw Parquet table; returns the exit code."""
    from ..pulsar import dump_to_parquet

    seconds = max(1, args.timeout_ms // 1000)
    try:
        rows = dump_to_parquet(
            args.service_url,
            args.topic,
            args.output,
            key_encoding=args.key_encoding,
            timeout_ms=args.timeout_ms,
            client_options={"operation_timeout_seconds": seconds, "connection_timeout_ms": args.timeout_ms},
        )
    except Exception as exc:
        # pulsar-client's errors (module pulsar or _pulsar) mean the broker is unreachable or refused
        if type(exc).__module__.split(".")[0] not in ("_pulsar", "pulsar"):
            raise
        err(f"cannot read {args.topic} from {args.service_url}: {type(exc).__name__}: {exc}")
        return EXIT_UNREACHABLE
    say(f"wrote {rows:,} messages of {args.topic} to {args.output}")
    return EXIT_OK


def _protocol_names() -> list[str]:
    from .. import wire

    return sorted(name.lower().replace("_", "-") for name in wire.PROTOCOLS)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pulsar-codec`` with every command."""
    parser = argparse.ArgumentParser(
        prog="pulsar-codec",
        description=(
            "Fast codecs for Pulsar and schema-registry framed messages, into Apache Arrow.\n\n"
            "Start with `pulsar-codec demo`: it runs the main job on generated data with embedded "
            "defaults and prints what it did."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser(
        "demo",
        help="run the main job on generated data (embedded registry, Spark in local mode)",
        description=(
            "Generate an evolving Avro topic (3 schema versions), KeyValue messages and a few corrupt "
            "ones, register the schemas in an embedded registry, write raw Parquet topic dumps, decode "
            "them with Spark in local mode, and write decoded and dead-letter Parquet tables."
        ),
    )
    demo.add_argument("--rows", type=int, default=200_000, help="order messages to generate (default 200000)")
    demo.add_argument("--seed", type=int, default=42, help="random seed for the generated data")
    demo.add_argument("-o", "--output", default="demo-output", help="output folder (default ./demo-output)")
    demo.add_argument(
        "--engine",
        choices=("spark", "local"),
        default="spark",
        help="spark: PySpark in local mode (default; needs Java); local: Arrow in this process",
    )
    demo.add_argument("--framing-only", action="store_true", help="only show the framing and KeyValue codecs")
    demo.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    demo.set_defaults(func=cmd_demo)

    decode = sub.add_parser(
        "decode",
        help="decode a Parquet column of framed Avro messages into Parquet",
        description=(
            "Read INPUT (Parquet), decode the binary column of framed messages with the writer schemas "
            "from the registry, and write OUTPUT (Parquet) with the decoded fields and a decode_error "
            "column. Example: pulsar-codec decode raw.parquet -o decoded.parquet --registry registry.db"
        ),
    )
    decode.add_argument("input", metavar="INPUT")
    decode.add_argument("-o", "--output", required=True, metavar="OUTPUT")
    add_registry_options(decode)
    decode.add_argument("--column", default="payload", help="the binary column of messages (default payload)")
    decode.add_argument("--protocol", default="confluent", help=f"wire prefix: one of {', '.join(_protocol_names())}")
    decode.add_argument("--engine", choices=("local", "spark"), default="local", help="local (default) or spark")
    decode.add_argument("--reader-schema", help="read every message as this schema (JSON, or @file)")
    decode.add_argument("--dead-letter", metavar="PATH", help="also write the bad rows (raw bytes + error) here")
    decode.set_defaults(func=cmd_decode)

    add_registry_parser(sub)

    dump = sub.add_parser(
        "dump",
        help="read a Pulsar topic into a raw Parquet table",
        description="Read TOPIC from the start to its end and write every message (payload, key, "
        "properties, times, message id) to a Parquet file, for `pulsar-codec decode`.",
    )
    dump.add_argument("--service-url", required=True, help="e.g. pulsar://127.0.0.1:6650")
    dump.add_argument("--topic", required=True)
    dump.add_argument("-o", "--output", required=True)
    dump.add_argument(
        "--key-encoding",
        choices=("raw", "base64"),
        default="raw",
        help="base64 for keys written by Java SEPARATED KeyValue producers",
    )
    dump.add_argument("--timeout-ms", type=int, default=30_000)
    dump.set_defaults(func=cmd_dump)

    add_bench_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pulsar-codec`` with ``argv`` (default: the process's arguments); returns the exit code."""
    from ..errors import DecodeError, IncompatibleSchemaError, RegistryError, SchemaError, SchemaNotFoundError

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    if getattr(args, "rows", 1) <= 0:
        parser.error("--rows must be positive")
    if getattr(args, "user", None) and not getattr(args, "password", None):
        args.password = os.environ.get("PULSAR_CODEC_REGISTRY_PASSWORD")
    try:
        code: int = args.func(args)
        return code
    except KeyboardInterrupt:
        return 130
    except UsageError as exc:
        err(str(exc))
        return EXIT_USAGE
    except SchemaNotFoundError as exc:
        err(f"schema not found: {exc}")
        return EXIT_SCHEMA_MISSING
    except IncompatibleSchemaError as exc:
        err(f"incompatible schema: {exc}")
        for reason in exc.reasons:
            err(f"  {reason}")
        return EXIT_FAILED
    except RegistryError as exc:
        err(f"registry error: {exc}")
        return EXIT_REGISTRY
    except (SchemaError, DecodeError) as exc:
        err(f"{type(exc).__name__}: {exc}")
        return EXIT_FAILED
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        err(str(exc))
        return EXIT_USAGE
    except ImportError as exc:
        err(f"{exc} (install the extra that provides it, e.g. pip install 'pulsar-codec[all]')")
        return EXIT_USAGE
    except ConnectionError as exc:
        err(f"cannot connect: {exc}")
        return EXIT_UNREACHABLE


if __name__ == "__main__":
    sys.exit(main())
