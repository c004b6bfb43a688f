"""``pulsar-codec registry``: serve the embedded registry, or query any registry.

Also the registry options shared with ``pulsar-codec decode`` (``--registry``, ``--user``,
``--password``, ``--token``) and :func:`open_registry`, which turns them into a client.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._console import EXIT_FAILED, EXIT_OK, QUIET, VERBOSE, UsageError, err, say, verbosity

if TYPE_CHECKING:
    from ..registry import Registry

__all__ = [
    "PASSWORD_VARIABLE",
    "add_registry_options",
    "add_registry_parser",
    "cmd_registry",
    "open_registry",
    "read_schema_arg",
    "registry_password",
    "schema_version",
]

#: The environment variable a registry password is read from (``--password-file`` wins over it).
PASSWORD_VARIABLE = "PULSAR_CODEC_REGISTRY_PASSWORD"


def schema_version(value: str) -> int | str:
    """``--version`` of ``registry get``/``check``: a version number (1, 2, ...) or ``latest``."""
    if value.strip().lower() == "latest":
        return "latest"
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"version must be a number from 1 up or 'latest', got {value!r}")
    return number


def open_registry(
    spec: str,
    *,
    user: str | None = None,
    password: str | None = None,
    token: str | None = None,
    create: bool = True,
) -> Registry:
    """A registry client from the command line.

    Parameters
    ----------
    spec : str
        An ``http(s)://`` URL of a Confluent-compatible registry, or the path of an embedded
        SQLite registry (its folder must exist).
    user, password : str, optional
        Basic auth for a URL.
    token : str, optional
        Bearer token for a URL.
    create : bool
        Create a missing SQLite registry (``register``); read-only commands pass False and get
        a :class:`UsageError` instead of a new, empty database.

    Raises
    ------
    UsageError
        Both basic auth and a token were given; ``spec`` is a URL of another scheme than http(s);
        no database at ``spec`` and ``create`` is False; the file is not a registry database.
    FileNotFoundError
        The folder of the registry file does not exist.
    """
    import sqlite3

    from ..registry import RegistryConfig

    if user and token:
        raise UsageError("give either --user/--password or --token, not both")
    if spec.lower().startswith(("http://", "https://")):
        auth = (user, password or "") if user else None
        return RegistryConfig(url=spec, auth=auth, token=token).build()
    if "://" in spec:  # a URL of another scheme (a typo such as htp://), not a file path
        scheme = spec.split("://", 1)[0]
        raise UsageError(f"unknown registry URL scheme {scheme!r} (http://, https://, or a SQLite file path)")
    path = Path(spec)
    if not path.parent.exists():
        raise FileNotFoundError(f"folder {path.parent} for the registry database does not exist")
    if not create and not path.is_file():
        raise UsageError(f"no registry database at {path} (register a schema there first, or check the path)")
    try:
        return RegistryConfig(path=str(path)).build()
    except sqlite3.DatabaseError as exc:
        raise UsageError(f"{path} is not a registry database ({exc})") from None


def registry_password(args: argparse.Namespace) -> str | None:
    """The password of ``--password-file``, ``PULSAR_CODEC_REGISTRY_PASSWORD`` or ``--password``, in that order.

    ``--password`` still works but warns: a command line is visible to every user of the machine.

    Raises
    ------
    UsageError
        ``--password-file`` and ``--password`` given together.
    FileNotFoundError
        The password file does not exist.
    """
    given = getattr(args, "password", None)
    path = getattr(args, "password_file", None)
    if given is not None and path is not None:
        raise UsageError("give either --password-file or --password, not both")
    if path is not None:
        # one line; the newline an editor or `echo` adds is not part of the password
        return Path(path).read_text().rstrip("\r\n")
    if given is not None:
        err(
            "warning: --password shows the password to every user of this machine (process list); "
            f"use --password-file PATH or the {PASSWORD_VARIABLE} variable"
        )
        return str(given)
    return os.environ.get(PASSWORD_VARIABLE)


def read_schema_arg(value: str, option: str = "--schema") -> str:
    """A schema given inline (JSON or .proto text), as ``@file``, or as the path of an existing file.

    Raises
    ------
    UsageError
        ``@file`` names a file that does not exist or cannot be read (the message names ``option``).
    """
    if value.startswith("@"):
        return _read_schema_file(value, Path(value[1:]), option)
    if value.lstrip().startswith(("{", "[", '"')):
        return value
    try:
        exists = Path(value).exists()
    except (OSError, ValueError):  # inline text too long, or with a NUL, for a file name
        exists = False
    return _read_schema_file(value, Path(value), option) if exists else value


def _read_schema_file(given: str, path: Path, option: str) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        raise UsageError(f"{option} {given}: the file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"{option} {given}: cannot read the file {path} ({reason})") from None


def registered_json(found: Any) -> dict[str, Any]:
    """A registered schema as the JSON ``registry get`` prints (the schema parsed when it is JSON)."""
    out: dict[str, Any] = {}
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


def cmd_registry(args: argparse.Namespace) -> int:
    """Run one ``registry`` action; returns the exit code."""
    if args.user and getattr(args, "token", None):
        raise UsageError("give either --user/--password or --token, not both")
    password = registry_password(args)
    if args.user and not password:
        raise UsageError(f"--user {args.user} needs a password: --password-file PATH or {PASSWORD_VARIABLE}")
    if password and not args.user:
        raise UsageError("a password needs --user")
    if args.registry_command == "serve":
        return _serve(args, password)
    if args.registry_command == "get" and args.id is None and not args.subject:
        raise UsageError("get needs --id or --subject")
    registry = open_registry(
        args.registry,
        user=args.user,
        password=password,
        token=args.token,
        create=args.registry_command == "register",
    )
    try:
        return _query(registry, args)
    finally:
        registry.close()


def _serve(args: argparse.Namespace, password: str | None) -> int:
    import socket

    from ..registry import server

    path = Path(args.path)
    if not path.parent.exists():
        raise FileNotFoundError(f"folder {path.parent} for the registry database does not exist")
    # bind before saying "serving": a busy port is a clear error, not a traceback after the banner
    # (the probe is closed at once; the server binds the same address right after)
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    try:
        with socket.create_server((args.host, args.port), family=family) as probe:
            port = probe.getsockname()[1]  # --port 0: the free port the system chose, served and shown
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"port {args.port} on {args.host} is already in use; choose another with --port") from None
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    auth = (args.user, password or "") if args.user else None
    log_level = {QUIET: "warning", VERBOSE: "debug"}.get(verbosity(), "info")
    say(f"serving {path} on http://{args.host}:{port} (Ctrl-C stops)")
    server.run(str(path), args.host, port, auth=auth, log_level=log_level)
    return EXIT_OK


def _checked_schema(value: str, schema_type: str | None) -> str:
    """The ``--schema`` text, parsed as ``schema_type`` (Avro, JSON) first: one that does not parse
    is a bad argument (exit 2), whichever registry would refuse it, and how."""
    from ..errors import SchemaError
    from ..formats import get_format

    text = read_schema_arg(value, "--schema")
    kind = (schema_type or "AVRO").upper()
    if kind == "PROTOBUF":  # its imports are other subjects' files: the registry resolves them
        return text
    try:
        get_format(kind).parse(text)
    except ImportError:
        pass  # the format's extra is missing here: the registry judges the schema alone
    except SchemaError as exc:
        raise UsageError(f"--schema is not a valid {kind} schema: {exc}") from None
    return text


def _query(registry: Registry, args: argparse.Namespace) -> int:
    action = args.registry_command
    if action == "register":
        schema_id = registry.register(args.subject, _checked_schema(args.schema, args.schema_type), args.schema_type)
        say(json.dumps({"subject": args.subject, "id": schema_id}))
    elif action == "get":
        found = (
            registry.get_schema(args.id) if args.id is not None else registry.get_version(args.subject, args.version)
        )
        say(json.dumps(registered_json(found), indent=2))
    elif action == "check":
        text = _checked_schema(args.schema, args.schema_type)
        result = registry.check_compatibility(args.subject, text, version=args.version, schema_type=args.schema_type)
        say(json.dumps({"is_compatible": result.compatible, "messages": result.reasons}, indent=2))
        return EXIT_OK if result.compatible else EXIT_FAILED
    elif args.subject:
        say(json.dumps({"subject": args.subject, "versions": registry.list_versions(args.subject)}))
    else:
        say(json.dumps(registry.list_subjects()))
    return EXIT_OK


def _add_password_options(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--user", help=f"{what} basic-auth user")
    parser.add_argument(
        "--password-file",
        metavar="PATH",
        help=f"file holding the password for --user (or set {PASSWORD_VARIABLE})",
    )
    parser.add_argument("--password", help="the password itself (visible in the process list: prefer --password-file)")


def add_registry_options(parser: argparse.ArgumentParser) -> None:
    """``--registry`` and its credentials, for every command that opens a registry."""
    parser.add_argument(
        "--registry",
        required=True,
        metavar="URL|PATH",
        help="Confluent-compatible registry URL, or the path of an embedded SQLite registry",
    )
    _add_password_options(parser, "the registry's")
    parser.add_argument("--token", help="bearer token for the registry")


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a number from 0 to 65535, got {value!r}")
    return port


_SCHEMA_HELP = "the schema: Avro or JSON Schema as JSON, Protobuf as .proto text; inline, @file, or the path of a file"
SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")


def _schema_type(value: str) -> str:
    """``--schema-type``: one of :data:`SCHEMA_TYPES`, in any case."""
    if value.upper() not in SCHEMA_TYPES:
        raise argparse.ArgumentTypeError(f"unknown schema type {value!r}; valid: {', '.join(SCHEMA_TYPES)}")
    return value.upper()


def _add_schema_type(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--schema-type",
        type=_schema_type,
        default="AVRO",
        metavar="TYPE",
        help=f"the schema's type: {', '.join(SCHEMA_TYPES)} (default AVRO)",
    )


def add_registry_parser(sub: Any) -> None:
    """The ``registry`` command and its actions, on the top-level subparsers ``sub``."""
    reg = sub.add_parser(
        "registry",
        help="serve or query a schema registry",
        description="Serve the embedded registry over the Confluent REST API, or query any registry.",
    )
    actions = reg.add_subparsers(dest="registry_command", metavar="ACTION", required=True)
    serve = actions.add_parser("serve", help="serve an embedded SQLite registry over the Confluent REST API")
    serve.add_argument("path", help="registry database file (created if missing)")
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8081, help="port (default 8081)")
    _add_password_options(serve, "require this")

    register = actions.add_parser("register", help="register a schema under a subject; prints its id")
    add_registry_options(register)
    register.add_argument("--subject", required=True)
    register.add_argument("--schema", required=True, help=_SCHEMA_HELP)
    _add_schema_type(register)

    get = actions.add_parser("get", help="print a schema by --id, or a subject's --version (default latest)")
    add_registry_options(get)
    get.add_argument("--id", type=int)
    get.add_argument("--subject")
    get.add_argument("--version", type=schema_version, default="latest", help="a version number or latest")

    check = actions.add_parser(
        "check", help="check a schema against a subject's compatibility level (exit 1 if incompatible)"
    )
    add_registry_options(check)
    check.add_argument("--subject", required=True)
    check.add_argument("--schema", required=True, help=_SCHEMA_HELP)
    _add_schema_type(check)
    check.add_argument(
        "--version", type=schema_version, default="latest", help="the version to check against (default latest)"
    )

    listing = actions.add_parser("list", help="list subjects, or the versions of --subject")
    add_registry_options(listing)
    listing.add_argument("--subject")
    reg.set_defaults(func=cmd_registry)
