"""The ``pulsar-codec`` command (also ``python -m pulsar_codec``).

``pulsar-codec demo`` is the main job on embedded defaults: it needs no server, no network and no
input of yours. ``decode`` turns a Parquet column of framed messages into Parquet, ``registry``
serves or queries a schema registry, ``dump`` reads a Pulsar topic into Parquet and ``bench``
prints quick throughput ratios. Exit codes: 0 done, 1 failed (bad data, incompatible schema),
2 usage, 3 registry error, 4 schema not found, 5 unreachable service, 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from . import _console
from ._console import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REGISTRY,
    EXIT_SCHEMA_MISSING,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    UsageError,
    err,
    say,
    summary,
)
from .bench_cmd import add_bench_parser
from .registry_cmd import add_registry_options, add_registry_parser, open_registry, read_schema_arg, registry_password

__all__ = ["build_parser", "main", "version_text"]

#: the schemes ``pulsar.Client`` takes for a service URL
SERVICE_URL_SCHEMES = ("pulsar", "pulsar+ssl", "http", "https")


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
    result = demo.run(Path(args.output), args.rows, args.seed, engine, say, progress=_console.verbosity() >= 0)
    # the demo plants corrupt messages: one unreported, or a row unaccounted for, is a failure of the demo
    accounted = result.decoded + result.errors == result.rows
    return EXIT_OK if result.errors == result.planted and accounted else EXIT_FAILED


def _java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(shutil.which("java") or (home and os.path.exists(os.path.join(home, "bin", "java"))))


def _have(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _check_input(path: str) -> None:
    """A clear error for an input that is missing, an empty folder, or a file that is not Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    where = Path(path)
    if not where.exists():
        raise FileNotFoundError(f"input {path} does not exist")
    if where.is_dir():
        if not any(f.suffix == ".parquet" and not f.name.startswith(("_", ".")) for f in where.rglob("*")):
            raise UsageError(f"input {path} is a folder without Parquet files; give a Parquet file or such a folder")
        return
    try:
        pq.read_schema(where)
    except (pa.ArrowInvalid, OSError) as exc:
        raise UsageError(f"input {path} is not a Parquet file ({exc})") from None


def _check_output(path: str | None, option: str) -> None:
    if path is not None and not Path(path).absolute().parent.is_dir():
        raise UsageError(f"{option} {path}: folder {Path(path).absolute().parent} does not exist")


# how .proto text starts (after comments): a declaration, never JSON
_PROTO_START = re.compile(r"^\s*(syntax|edition|package|import|option|message|enum)\b", re.MULTILINE)


def _reader_schema(value: str | None, message: str | None = None) -> Any:
    """The ``--reader-schema`` text, checked: a bad one is a bad argument (exit 2), not bad data.
    ``.proto`` text (not JSON) is parsed as a Protobuf schema, as ``message`` when given."""
    import json

    from ..errors import SchemaError
    from ..formats.avro.schema import parse

    if value is None:
        return None
    text = read_schema_arg(value, "--reader-schema")
    if not text.lstrip().startswith(("{", "[", '"')) and _PROTO_START.search(text):
        try:
            from ..formats.protobuf import FORMAT
        except ImportError:
            raise UsageError(
                "a .proto --reader-schema needs the protobuf extra (pip install 'pulsar-codec[protobuf]')"
            ) from None
        try:
            return FORMAT.select(FORMAT.parse(text), name=message)
        except SchemaError as exc:
            raise UsageError(f"--reader-schema is not a valid Protobuf schema: {exc}") from None
    try:
        loaded = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--reader-schema is not valid JSON: {exc}") from None
    try:
        parse(loaded)
    except SchemaError as exc:
        raise UsageError(f"--reader-schema is not a valid Avro schema: {exc}") from None
    return text


def cmd_decode(args: argparse.Namespace) -> int:
    """Decode a Parquet column of framed messages into Parquet; returns the exit code."""
    from .. import wire
    from ..errors import SchemaError
    from .parquet_io import decode_parquet

    # no --protocol: Confluent's prefix, with the message-index path when the schemas are Protobuf
    protocol = None if args.protocol is None else wire.protocol_by_name(args.protocol)
    _check_input(args.input)
    _check_output(args.output, "--output")
    _check_output(args.dead_letter, "--dead-letter")
    reader = _reader_schema(args.reader_schema, args.message)
    password = registry_password(args)
    registry = open_registry(args.registry, user=args.user, password=password, token=args.token, create=False)
    # None lets decode_parquet pick the column (value, else payload, else the only binary column)
    column: dict[str, Any] = {} if args.column is None else {"column": args.column}
    try:
        stats = decode_parquet(
            args.input,
            args.output,
            registry,
            protocol=protocol,
            engine=args.engine,
            reader_schema=reader,
            dead_letter=args.dead_letter,
            message=args.message,
            keep=args.keep,
            **column,
        )
    except SchemaError as exc:
        if args.message and f"defines no message {args.message!r}" in str(exc):  # a bad argument, as for Avro
            raise UsageError(f"--message {args.message}: {exc}") from None
        raise
    finally:
        registry.close()
    dead_letter = f" -> {args.dead_letter}" if args.dead_letter and stats["errors"] else ""
    # rows = decoded + bad + null (the README's contract): each count is said, so none goes missing
    nulls: int = stats["nulls"]
    say(
        f"decoded {stats['decoded']:,} of {stats['rows']:,} rows from {args.input} into {args.output}"
        f" in {stats['seconds']:.2f} s ({stats['engine']} engine); {stats['errors']:,} bad rows{dead_letter},"
        f" {nulls:,} null rows"
    )
    if stats["rows"] and nulls == stats["rows"]:
        err(
            f"warning: every row of column {stats['column']!r} is null, so nothing was decoded;"
            " is it the column of the messages (--column)?"
        )
    rows = [
        ("input rows", f"{stats['rows']:,}"),
        ("decoded", f"{stats['decoded']:,}"),
        ("bad rows", f"{stats['errors']:,}"),
        ("null rows", f"{nulls:,}"),
        ("seconds", f"{stats['seconds']:.2f}"),
        ("rate", _console.rate(stats["rows"], stats["seconds"])),
        ("engine", str(stats["engine"])),
        ("output", str(args.output)),
    ]
    if args.dead_letter:
        rows.append(("dead letter", str(args.dead_letter)))
    summary("decode", rows)
    return EXIT_OK


class _ClientLog:
    """pulsar-client's log lines of one command, which the client writes to a file of its own.

    Not a Python logger: the client calls a Python logger from its I/O threads, and a call that
    comes while the interpreter exits aborts the process (exit 134 instead of the command's code,
    seen after a refused connection). The lines are read back when the command is done: shown with
    --verbose, else kept so a failure can name the client's reason in its one line instead of a
    flood of retries.
    """

    # "2026-01-01 10:00:00.000 ERROR [thread] Component:line | [local -> remote] text"
    _LINE = re.compile(r"^\S+ \S+ (?P<level>[A-Z]+) +\[[^\]]*\] [^|]*\| (?:\[[^\]]*\]\s*)?(?P<text>.*)$")

    def __init__(self, path: str) -> None:
        self.path = path

    def lines(self) -> list[tuple[str, str]]:
        """(level, text) of every line the client wrote."""
        try:
            with open(self.path, encoding="utf-8", errors="replace") as f:
                found = [self._LINE.match(line.rstrip("\n")) for line in f]
        except FileNotFoundError:  # the client wrote nothing
            return []
        return [(m["level"], m["text"]) for m in found if m]

    @property
    def errors(self) -> list[str]:
        """The distinct warning and error texts, in order."""
        return list(dict.fromkeys(text for level, text in self.lines() if level in ("WARN", "ERROR")))


@contextmanager
def _client_log() -> Iterator[tuple[Any, _ClientLog]]:
    """A ``logger=`` for ``pulsar.Client`` writing to a temporary file, and what it wrote."""
    from ..pulsar._sdk import native, pulsar

    with tempfile.TemporaryDirectory(prefix="pulsar-codec-client-") as folder:
        log = _ClientLog(os.path.join(folder, "client.log"))
        verbose = _console.verbosity() > 0
        level = native.LoggerLevel.Info if verbose else native.LoggerLevel.Warn
        try:
            yield pulsar.FileLogger(level, log.path), log
        finally:
            if verbose:
                for level_name, text in log.lines():
                    print(f"pulsar-client {level_name.lower()}: {text}", file=sys.stderr, flush=True)


def cmd_dump(args: argparse.Namespace) -> int:
    """Read a Pulsar topic into a raw Parquet table; returns the exit code (a failed dump leaves
    no file, and an existing output as it was: see :func:`~pulsar_codec.pulsar.dump_to_parquet`)."""
    from ..errors import BrokerUnreachableError
    from ..pulsar import dump_to_parquet

    _check_output(args.output, "--output")
    if Path(args.output).is_dir():
        raise UsageError(f"--output {args.output} is a folder; dump writes one Parquet file")
    start = time.perf_counter()
    with _client_log() as (logger, log), _console.progress(f"reading {args.topic}") as bar:
        try:
            rows = dump_to_parquet(
                args.service_url,
                args.topic,
                args.output,
                key_encoding=args.key_encoding,
                timeout_ms=args.timeout_ms,
                client_options={"logger": logger},
                on_batch=bar.advance,
            )
        except Exception as exc:
            # pulsar-client's errors (module pulsar or _pulsar) mean the broker is unreachable or refused
            unreachable = isinstance(exc, (BrokerUnreachableError, TimeoutError))
            if type(exc).__module__.split(".")[0] not in ("_pulsar", "pulsar") and not unreachable:
                raise
            reason = f" ({log.errors[0]})" if log.errors else ""
            # the library names its keyword argument; here the wait is the command's option
            text = str(exc).replace("timeout_ms sets the wait", "--timeout-ms sets the wait")
            err(f"cannot read {args.topic} from {args.service_url}: {text}{reason}")
            return EXIT_UNREACHABLE
    seconds = time.perf_counter() - start
    if rows:
        say(f"wrote {rows:,} messages of {args.topic} to {args.output}")
    else:
        # a broker that creates topics on first use (pulsar-lite, Pulsar's default) shows a mistyped
        # topic as an empty one
        say(
            f"wrote 0 messages of {args.topic} to {args.output}: the topic is empty or did not exist"
            " (a broker may create a topic when it is read); is the topic name right?"
        )
    summary(
        "dump",
        [
            ("messages", f"{rows:,}"),
            ("seconds", f"{seconds:.2f}"),
            ("rate", _console.rate(rows, seconds)),
            ("output", str(args.output)),
        ],
    )
    return EXIT_OK


def _protocol_names() -> list[str]:
    from .. import wire

    return sorted(name.lower().replace("_", "-") for name in wire.PROTOCOLS)


def _protocol(value: str) -> str:
    """``--protocol``: a name of :data:`pulsar_codec.wire.PROTOCOLS`, spelled as in ``--help``."""
    from .. import wire

    try:
        wire.protocol_by_name(value)
    except ValueError:
        # the same spelling as --help (wire's own message lists the constants' names)
        raise argparse.ArgumentTypeError(f"unknown protocol {value!r}; valid: {', '.join(_protocol_names())}") from None
    return value


def _service_url(value: str) -> str:
    """``--service-url``: a Pulsar service URL with a scheme the client takes and a host."""
    try:
        parts = urlsplit(value)
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in SERVICE_URL_SCHEMES or not parts.netloc:
        raise argparse.ArgumentTypeError(
            f"malformed service URL {value!r}; expected pulsar://HOST:PORT (or pulsar+ssl://, http://, https://)"
        )
    return value


def _count(minimum: int) -> Any:
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = minimum - 1
        if number < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {value!r}")
        return number

    parse.__name__ = "number"
    return parse


class _Parser(argparse.ArgumentParser):
    """argparse with errors on one line (and exit code 2), the usage left to ``--help``."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _add_verbosity_flags(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: a subcommand's parser leaves a flag given before the subcommand alone
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-v",
        "--verbose",
        dest="verbosity",
        action="store_const",
        const=1,
        default=argparse.SUPPRESS,
        help="more detail: debug logs, library logs at info, tracebacks of internal errors",
    )
    group.add_argument(
        "-q",
        "--quiet",
        dest="verbosity",
        action="store_const",
        const=-1,
        default=argparse.SUPPRESS,
        help="results and errors only: no progress bars or summary tables",
    )


def _every_parser(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield from _every_parser(child)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pulsar-codec`` with every command."""
    parser = _Parser(
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
            "ones, register the schemas in an embedded registry, produce them to a local pulsar-lite "
            "broker, read them with Spark in local mode through format('pulsar') (orders as a "
            "checkpointed stream), and write decoded and dead-letter Parquet tables. With --engine local "
            "the topics are dumped and decoded in this process on every core; where no broker can start, "
            "the raw Parquet topic dumps generated instead are read."
        ),
    )
    demo.add_argument("--rows", type=_count(0), default=200_000, help="order messages to generate (default 200000)")
    demo.add_argument("--seed", type=int, default=42, help="random seed for the generated data (default 42)")
    demo.add_argument("-o", "--output", default="demo-output", help="output folder (default ./demo-output)")
    demo.add_argument(
        "--engine",
        choices=("spark", "local"),
        default="spark",
        help="spark: PySpark in local mode (default; needs Java); local: Arrow in this process",
    )
    demo.add_argument("--framing-only", action="store_true", help="only show the framing and KeyValue codecs")
    demo.set_defaults(func=cmd_demo)

    decode = sub.add_parser(
        "decode",
        help="decode a Parquet column of framed Avro, JSON or Protobuf messages into Parquet",
        # wrapped here: argparse would break the example at its hyphens
        description=(
            "Read INPUT (Parquet), decode the binary column of framed Avro, JSON or Protobuf\n"
            "messages with the writer schemas from the registry, and write OUTPUT (Parquet)\n"
            "with the decoded fields and a decode_error column (after the input columns --keep\n"
            "names, such as the message_id, key and publish_time that dump writes).\n\n"
            "Example:\n"
            "  pulsar-codec dump --service-url pulsar://127.0.0.1:6650 --topic orders -o raw.parquet\n"
            "  pulsar-codec decode raw.parquet -o decoded.parquet --registry registry.db\n"
            "  pulsar-codec decode raw.parquet -o decoded.parquet --registry registry.db \\\n"
            "      --keep message_id,publish_time,key"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    decode.add_argument("input", metavar="INPUT")
    decode.add_argument("-o", "--output", required=True, metavar="OUTPUT")
    add_registry_options(decode)
    decode.add_argument(
        "--column",
        help="the binary column of messages (default: value, else payload as `pulsar-codec dump` "
        "writes it, else the only binary column)",
    )
    decode.add_argument(
        "--protocol",
        type=_protocol,
        default=None,
        help=f"wire prefix: one of {', '.join(_protocol_names())} (default: confluent, with the "
        "message-index path for Protobuf schemas)",
    )
    decode.add_argument("--engine", choices=("local", "spark"), default="local", help="local (default) or spark")
    decode.add_argument("--reader-schema", help="read every message as this schema (JSON, .proto text, or @file)")
    decode.add_argument(
        "--message",
        metavar="NAME",
        help="Protobuf: the full name of the message type to read (default: the first message's type); "
        "messages of other types are bad rows",
    )
    decode.add_argument("--dead-letter", metavar="PATH", help="also write the bad rows (raw bytes + error) here")
    decode.add_argument(
        "--keep",
        metavar="COL[,COL...]",
        help="input columns to write before the decoded fields, in the input's order (e.g. "
        "message_id,publish_time,key); all: every column but the messages' (naming that one keeps "
        "the raw bytes); with --dead-letter only the good rows' table keeps them",
    )
    decode.set_defaults(func=cmd_decode)

    add_registry_parser(sub)

    dump = sub.add_parser(
        "dump",
        help="read a Pulsar topic into a raw Parquet table",
        description="Read TOPIC from the start to its end and write every message (payload, key, "
        "properties, times, message id) to a Parquet file, for `pulsar-codec decode`.",
    )
    dump.add_argument("--service-url", type=_service_url, required=True, help="e.g. pulsar://127.0.0.1:6650")
    dump.add_argument("--topic", required=True)
    dump.add_argument("-o", "--output", required=True)
    dump.add_argument(
        "--key-encoding",
        choices=("raw", "base64"),
        default="raw",
        help="base64 for keys written by Java SEPARATED KeyValue producers",
    )
    dump.add_argument(
        "--timeout-ms",
        type=_count(1),
        default=10_000,
        help="give up connecting, or waiting for a message, after this long (default 10000)",
    )
    dump.set_defaults(func=cmd_dump)

    add_bench_parser(sub)
    for each in _every_parser(parser):
        _add_verbosity_flags(each)
    return parser


class _StderrHandler(logging.Handler):
    """Log records of the package on the current stderr (looked up per record, as tests swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        print(self.format(record), file=sys.stderr, flush=True)


_PACKAGE_HANDLER = _StderrHandler()
_PACKAGE_HANDLER.setFormatter(logging.Formatter("pulsar-codec %(levelname)s %(name)s: %(message)s"))


def _configure_logging(level: int) -> None:
    """--verbose: the package's debug logs on stderr; --quiet: none of its warnings (a registry
    call retried, say), the command's one error line being what fails; otherwise what logging is
    configured to show."""
    package = logging.getLogger("pulsar_codec")
    if level > 0:
        package.setLevel(logging.DEBUG)
        if _PACKAGE_HANDLER not in package.handlers:
            package.addHandler(_PACKAGE_HANDLER)
    else:
        package.setLevel(logging.ERROR if level < 0 else logging.NOTSET)
        package.removeHandler(_PACKAGE_HANDLER)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pulsar-codec`` with ``argv`` (default: the process's arguments); returns the exit code.

    Every failure is one line on stderr and an exit code (module docstring); a traceback is shown
    only for an internal error with ``--verbose``.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    level: int = getattr(args, "verbosity", 0)
    _console.set_verbosity(level)
    _configure_logging(level)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return _run(args)
    except Exception as exc:  # a bug, or a failure nobody mapped yet: one line, not a traceback
        if level > 0:
            traceback.print_exc()
        err(f"internal error: {type(exc).__name__}: {exc}")
        if level <= 0:
            err("run with --verbose for the traceback")
        return EXIT_INTERNAL


def _run(args: argparse.Namespace) -> int:
    from ..errors import (
        DecodeError,
        IncompatibleSchemaError,
        RegistryError,
        RegistryUnreachableError,
        SchemaError,
        SchemaNotFoundError,
    )

    try:
        code: int = args.func(args)
        return code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except UsageError as exc:
        err(str(exc))
        return EXIT_USAGE
    except SchemaNotFoundError as exc:
        err(f"schema not found: {exc}")
        return EXIT_SCHEMA_MISSING
    except IncompatibleSchemaError as exc:
        message = str(exc)
        err(f"incompatible schema: {message}")
        # a registry's message often holds the reasons already: each is said once
        for reason in exc.reasons:
            if reason not in message:
                err(f"  {reason}")
        return EXIT_FAILED
    except RegistryUnreachableError as exc:
        err(f"registry unreachable: {exc}")
        return EXIT_UNREACHABLE
    except RegistryError as exc:
        err(f"registry error: {exc}")
        return EXIT_REGISTRY
    except (SchemaError, DecodeError) as exc:
        err(f"{type(exc).__name__}: {exc}")
        return EXIT_FAILED
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
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
