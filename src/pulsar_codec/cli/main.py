"""The ``pulsar-codec`` command.

``pulsar-codec demo`` is the main job on embedded defaults: it needs no server, no network and no
input of yours. ``pulsar-codec bench`` runs the benchmarks' quick ratio tables.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from typing import Any

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
    from pathlib import Path

    from . import demo

    if args.framing_only:
        return demo_framing(args.rows, args.seed)
    engine = args.engine
    if engine == "spark" and not _have("pyspark"):
        _err("the spark engine needs PySpark (pip install 'pulsar-codec[spark]'); running the local engine")
        engine = "local"
    elif engine == "spark" and not _java_available():
        _err("the spark engine needs Java (java on PATH or JAVA_HOME); running the local engine")
        engine = "local"
    result = demo.run(Path(args.output), args.rows, args.seed, engine, _say, progress=not args.quiet)
    # a corrupt message that went unreported would be a failure of the demo itself
    return EXIT_OK if result.errors > 0 and result.decoded + result.errors == result.rows else EXIT_FAILED


def _java_available() -> bool:
    import os
    import shutil

    home = os.environ.get("JAVA_HOME")
    return bool(shutil.which("java") or (home and os.path.exists(os.path.join(home, "bin", "java"))))


def _have(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _err(text: str) -> None:
    print(f"pulsar-codec: {text}", file=sys.stderr, flush=True)


def open_registry(spec: str, *, user: str | None = None, password: str | None = None, token: str | None = None):
    """A registry from the command line: an http(s) URL (any Confluent-compatible registry) or the
    path of an embedded SQLite registry."""
    if spec.startswith(("http://", "https://")):
        from ..registry import ConfluentRegistry

        auth = (user, password or "") if user else None
        return ConfluentRegistry(spec, auth=auth, token=token)
    from pathlib import Path

    from ..registry import LocalRegistry

    path = Path(spec)
    if not path.parent.exists():
        raise FileNotFoundError(f"folder {path.parent} for the registry database does not exist")
    return LocalRegistry(path)


def _read_schema_arg(value: str) -> str:
    """A schema given inline (JSON) or as @file / a file path."""
    from pathlib import Path

    text = value
    if value.startswith("@"):
        text = Path(value[1:]).read_text()
    elif not value.lstrip().startswith(("{", "[", '"')) and Path(value).exists():
        text = Path(value).read_text()
    return text


def cmd_registry(args: argparse.Namespace) -> int:
    if args.registry_command == "serve":
        from ..registry import server

        auth = (args.user, args.password or "") if args.user else None
        _say(f"serving {args.path} on http://{args.host}:{args.port} (Ctrl-C stops)")
        server.run(args.path, args.host, args.port, auth=auth)
        return EXIT_OK
    registry = open_registry(args.registry, user=args.user, password=args.password, token=args.token)
    try:
        if args.registry_command == "register":
            schema_id = registry.register(args.subject, _read_schema_arg(args.schema), args.schema_type)
            _say(json.dumps({"subject": args.subject, "id": schema_id}))
        elif args.registry_command == "get":
            if args.id is not None:
                found = registry.get_schema(args.id)
            elif args.subject:
                found = registry.get_version(args.subject, args.version)
            else:
                _err("get needs --id or --subject")
                return EXIT_USAGE
            _say(json.dumps(_registered_json(found), indent=2))
        elif args.registry_command == "check":
            result = registry.check_compatibility(args.subject, _read_schema_arg(args.schema), version=args.version)
            compatible = bool(getattr(result, "compatible", result))
            _say(json.dumps({"is_compatible": compatible, "messages": list(getattr(result, "reasons", []))}, indent=2))
            return EXIT_OK if compatible else EXIT_FAILED
        elif args.registry_command == "list":
            if args.subject:
                _say(json.dumps({"subject": args.subject, "versions": registry.list_versions(args.subject)}))
            else:
                _say(json.dumps(registry.list_subjects()))
        return EXIT_OK
    finally:
        registry.close()


def _registered_json(found: Any) -> dict:
    out = {}
    for name in ("subject", "version", "schema_id", "schema_type"):
        value = getattr(found, name, None)
        if value is not None:
            out["id" if name == "schema_id" else name] = value
    text = getattr(found, "schema", found)
    try:
        out["schema"] = json.loads(text)
    except (TypeError, ValueError):
        out["schema"] = text
    return out


def cmd_decode(args: argparse.Namespace) -> int:
    from .. import wire
    from .parquet_io import decode_parquet

    protocol = wire.protocol_by_name(args.protocol)
    registry = open_registry(args.registry, user=args.user, password=args.password, token=args.token)
    reader = _read_schema_arg(args.reader_schema) if args.reader_schema else None
    try:
        stats = decode_parquet(
            args.input, args.output, registry, column=args.column, protocol=protocol, engine=args.engine,
            reader_schema=reader, dead_letter=args.dead_letter,
        )
    finally:
        registry.close()
    _say(
        f"decoded {stats['decoded']:,} of {stats['rows']:,} rows from {args.input} into {args.output}"
        f" in {stats['seconds']:.2f} s ({stats['engine']} engine); {stats['errors']:,} bad rows"
        + (f" -> {args.dead_letter}" if args.dead_letter and stats["errors"] else "")
    )
    return EXIT_OK


def cmd_dump(args: argparse.Namespace) -> int:
    from ..pulsar import dump_to_parquet

    seconds = max(1, args.timeout_ms // 1000)
    try:
        rows = dump_to_parquet(
            args.service_url, args.topic, args.output, key_encoding=args.key_encoding, timeout_ms=args.timeout_ms,
            client_options={"operation_timeout_seconds": seconds, "connection_timeout_ms": args.timeout_ms},
        )
    except Exception as exc:
        if type(exc).__module__.split(".")[0] not in ("_pulsar", "pulsar"):
            raise
        _err(f"cannot read {args.topic} from {args.service_url}: {type(exc).__name__}: {exc}")
        return EXIT_UNREACHABLE
    _say(f"wrote {rows:,} messages of {args.topic} to {args.output}")
    return EXIT_OK


def _best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def cmd_bench(args: argparse.Namespace) -> int:
    """Quick ratios on generated data: unframe, and framed flat-5 Avro -> RecordBatch, compiled vs
    pure twin vs the fastavro per-record recipe. The full suites with both benchmark schemas and
    all peers live in bench/."""
    import io

    import fastavro
    import pyarrow as pa

    from .. import decode, wire
    from .._kernels import _backend
    from ._benchdata import FLAT as FLAT5
    from ..formats.avro import Encoder

    rows = args.rows
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
    avro_messages = wire.frame(Encoder(FLAT5).encode(table), 1, wire.CONFLUENT)
    registry = {1: FLAT5}
    backends = ["cython", "python"] if _backend.compiled_available() else ["python"]
    if len(backends) == 1:
        _say(f"compiled kernels unavailable: {_backend.compiled_import_error()}")
    results: dict[str, dict[str, float]] = {"unframe": {}, "avro flat-5": {}}
    for name in backends:
        with _backend.use(name):
            repeat = 5 if name == "cython" else 1
            results["unframe"][name] = _best_of(lambda: wire.unframe(messages, wire.CONFLUENT), repeat)
            results["avro flat-5"][name] = _best_of(lambda: decode(avro_messages, registry), repeat)
    parsed = fastavro.parse_schema(FLAT5)
    sample = avro_messages.to_pylist()[: min(rows, 50_000)]

    def recipe():
        records = [fastavro.schemaless_reader(io.BytesIO(m[5:]), parsed) for m in sample]
        pa.Table.from_pylist(records)

    results["avro flat-5"]["fastavro recipe"] = _best_of(recipe, 1) * rows / len(sample)
    for workload, timings in results.items():
        _say(f"{workload}, {rows:,} framed messages")
        fastest = min(timings.values())
        for name, secs in timings.items():
            _say(f"  {name:16s} {secs * 1e3:9.1f} ms  {_rate(rows, secs):>16s}  {secs / fastest:7.1f}x the fastest")
    return EXIT_OK


def _protocol_names() -> list[str]:
    from .. import wire

    return [name.lower().replace("_", "-") for name in wire.PROTOCOLS]


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
    demo.add_argument("--engine", choices=("spark", "local"), default="spark",
                      help="spark: PySpark in local mode (default; needs Java); local: Arrow in this process")
    demo.add_argument("--framing-only", action="store_true", help="only show the framing and KeyValue codecs")
    demo.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    demo.set_defaults(func=cmd_demo)

    def registry_options(p: argparse.ArgumentParser, needs_registry: bool = True) -> None:
        if needs_registry:
            p.add_argument("--registry", required=True, metavar="URL|PATH",
                           help="Confluent-compatible registry URL, or the path of an embedded SQLite registry")
        p.add_argument("--user", help="basic-auth user for the registry")
        p.add_argument("--password", help="basic-auth password (prefer the PULSAR_CODEC_REGISTRY_PASSWORD variable)")
        p.add_argument("--token", help="bearer token for the registry")

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
    registry_options(decode)
    decode.add_argument("--column", default="payload", help="the binary column of messages (default payload)")
    decode.add_argument("--protocol", default="confluent", help=f"wire prefix: one of {', '.join(sorted(_protocol_names()))}")
    decode.add_argument("--engine", choices=("local", "spark"), default="local", help="local (default) or spark")
    decode.add_argument("--reader-schema", help="read every message as this schema (JSON, or @file)")
    decode.add_argument("--dead-letter", metavar="PATH", help="also write the bad rows (raw bytes + error) here")
    decode.set_defaults(func=cmd_decode)

    reg = sub.add_parser("registry", help="serve or query a schema registry",
                         description="Serve the embedded registry over the Confluent REST API, or query any registry.")
    rsub = reg.add_subparsers(dest="registry_command", metavar="ACTION", required=True)
    serve = rsub.add_parser("serve", help="serve an embedded SQLite registry over the Confluent REST API")
    serve.add_argument("path", help="registry database file (created if missing)")
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8081, help="port (default 8081)")
    serve.add_argument("--user", help="require basic auth with this user")
    serve.add_argument("--password", help="password for --user")
    serve.set_defaults(func=cmd_registry)
    register = rsub.add_parser("register", help="register a schema under a subject; prints its id")
    registry_options(register)
    register.add_argument("--subject", required=True)
    register.add_argument("--schema", required=True, help="schema JSON, or @file")
    register.add_argument("--schema-type", default="AVRO", choices=("AVRO", "JSON", "PROTOBUF"))
    register.set_defaults(func=cmd_registry)
    get = rsub.add_parser("get", help="print a schema by --id, or a subject's --version (default latest)")
    registry_options(get)
    get.add_argument("--id", type=int)
    get.add_argument("--subject")
    get.add_argument("--version", default="latest")
    get.set_defaults(func=cmd_registry)
    check = rsub.add_parser("check", help="check a schema against a subject's compatibility level (exit 1 if incompatible)")
    registry_options(check)
    check.add_argument("--subject", required=True)
    check.add_argument("--schema", required=True, help="schema JSON, or @file")
    check.add_argument("--version", default="latest")
    check.set_defaults(func=cmd_registry)
    lst = rsub.add_parser("list", help="list subjects, or the versions of --subject")
    registry_options(lst)
    lst.add_argument("--subject")
    lst.set_defaults(func=cmd_registry)

    dump = sub.add_parser("dump", help="read a Pulsar topic into a raw Parquet table",
                          description="Read TOPIC from the start to its end and write every message (payload, key, "
                                      "properties, times, message id) to a Parquet file, for `pulsar-codec decode`.")
    dump.add_argument("--service-url", required=True, help="e.g. pulsar://127.0.0.1:6650")
    dump.add_argument("--topic", required=True)
    dump.add_argument("-o", "--output", required=True)
    dump.add_argument("--key-encoding", choices=("raw", "base64"), default="raw",
                      help="base64 for keys written by Java SEPARATED KeyValue producers")
    dump.add_argument("--timeout-ms", type=int, default=30_000)
    dump.set_defaults(func=cmd_dump)

    bench = sub.add_parser("bench", help="quick compiled-vs-pure ratios (full suites live in bench/)")
    bench.add_argument("--rows", type=int, default=200_000, help="messages per workload (default 200000)")
    bench.add_argument("--seed", type=int, default=7)
    bench.set_defaults(func=cmd_bench)
    return parser


EXIT_REGISTRY = 3
EXIT_SCHEMA_MISSING = 4
EXIT_UNREACHABLE = 5


def main(argv: Sequence[str] | None = None) -> int:
    import os

    from ..errors import (
        DecodeError,
        IncompatibleSchemaError,
        RegistryError,
        SchemaError,
        SchemaNotFoundError,
    )

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
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except SchemaNotFoundError as exc:
        _err(f"schema not found: {exc}")
        return EXIT_SCHEMA_MISSING
    except IncompatibleSchemaError as exc:
        _err(f"incompatible schema: {exc}")
        for reason in getattr(exc, "reasons", []):
            _err(f"  {reason}")
        return EXIT_FAILED
    except RegistryError as exc:
        _err(f"registry error: {exc}")
        return EXIT_REGISTRY
    except (SchemaError, DecodeError) as exc:
        _err(f"{type(exc).__name__}: {exc}")
        return EXIT_FAILED
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        _err(str(exc))
        return EXIT_USAGE
    except ImportError as exc:
        _err(f"{exc} (install the extra that provides it, e.g. pip install 'pulsar-codec[all]')")
        return EXIT_USAGE
    except ConnectionError as exc:
        _err(f"cannot connect: {exc}")
        return EXIT_UNREACHABLE


if __name__ == "__main__":
    sys.exit(main())
