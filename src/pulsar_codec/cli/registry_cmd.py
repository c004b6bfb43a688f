"""``pulsar-codec registry``: serve the embedded registry, or query any registry.

Also the registry options shared with ``pulsar-codec decode`` (``--registry``, ``--user``,
``--password``, ``--token``) and :func:`open_registry`, which turns them into a client.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._console import EXIT_FAILED, EXIT_OK, UsageError, say

if TYPE_CHECKING:
    from ..registry import Registry

__all__ = ["add_registry_options", "add_registry_parser", "cmd_registry", "open_registry", "read_schema_arg"]


def open_registry(
    spec: str, *, user: str | None = None, password: str | None = None, token: str | None = None
) -> Registry:
    """A registry client from the command line.

    Parameters
    ----------
    spec : str
        An ``http(s)://`` URL of a Confluent-compatible registry, or the path of an embedded
        SQLite registry (created if missing; its folder must exist).
    user, password : str, optional
        Basic auth for a URL.
    token : str, optional
        Bearer token for a URL.

    Raises
    ------
    UsageError
        Both basic auth and a token were given.
    FileNotFoundError
        The folder of the registry file does not exist.
    """
    from ..registry import RegistryConfig

    if user and token:
        raise UsageError("give either --user/--password or --token, not both")
    if spec.lower().startswith(("http://", "https://")):
        auth = (user, password or "") if user else None
        return RegistryConfig(url=spec, auth=auth, token=token).build()
    path = Path(spec)
    if not path.parent.exists():
        raise FileNotFoundError(f"folder {path.parent} for the registry database does not exist")
    return RegistryConfig(path=str(path)).build()


def read_schema_arg(value: str) -> str:
    """A schema given inline (JSON), as ``@file``, or as the path of an existing file."""
    if value.startswith("@"):
        return Path(value[1:]).read_text()
    if not value.lstrip().startswith(("{", "[", '"')) and Path(value).exists():
        return Path(value).read_text()
    return value


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
    if args.registry_command == "serve":
        from ..registry import server

        auth = (args.user, args.password or "") if args.user else None
        say(f"serving {args.path} on http://{args.host}:{args.port} (Ctrl-C stops)")
        server.run(args.path, args.host, args.port, auth=auth)
        return EXIT_OK
    if args.registry_command == "get" and args.id is None and not args.subject:
        raise UsageError("get needs --id or --subject")
    registry = open_registry(args.registry, user=args.user, password=args.password, token=args.token)
    try:
        return _query(registry, args)
    finally:
        registry.close()


def _query(registry: Registry, args: argparse.Namespace) -> int:
    action = args.registry_command
    if action == "register":
        schema_id = registry.register(args.subject, read_schema_arg(args.schema), args.schema_type)
        say(json.dumps({"subject": args.subject, "id": schema_id}))
    elif action == "get":
        found = (
            registry.get_schema(args.id) if args.id is not None else registry.get_version(args.subject, args.version)
        )
        say(json.dumps(registered_json(found), indent=2))
    elif action == "check":
        result = registry.check_compatibility(args.subject, read_schema_arg(args.schema), version=args.version)
        say(json.dumps({"is_compatible": result.compatible, "messages": result.reasons}, indent=2))
        return EXIT_OK if result.compatible else EXIT_FAILED
    elif args.subject:
        say(json.dumps({"subject": args.subject, "versions": registry.list_versions(args.subject)}))
    else:
        say(json.dumps(registry.list_subjects()))
    return EXIT_OK


def add_registry_options(parser: argparse.ArgumentParser) -> None:
    """``--registry`` and its credentials, for every command that opens a registry."""
    parser.add_argument(
        "--registry",
        required=True,
        metavar="URL|PATH",
        help="Confluent-compatible registry URL, or the path of an embedded SQLite registry",
    )
    parser.add_argument("--user", help="basic-auth user for the registry")
    parser.add_argument("--password", help="basic-auth password (prefer the PULSAR_CODEC_REGISTRY_PASSWORD variable)")
    parser.add_argument("--token", help="bearer token for the registry")


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
    serve.add_argument("--port", type=int, default=8081, help="port (default 8081)")
    serve.add_argument("--user", help="require basic auth with this user")
    serve.add_argument("--password", help="password for --user")

    register = actions.add_parser("register", help="register a schema under a subject; prints its id")
    add_registry_options(register)
    register.add_argument("--subject", required=True)
    register.add_argument("--schema", required=True, help="schema JSON, or @file")
    register.add_argument("--schema-type", default="AVRO", choices=("AVRO", "JSON", "PROTOBUF"))

    get = actions.add_parser("get", help="print a schema by --id, or a subject's --version (default latest)")
    add_registry_options(get)
    get.add_argument("--id", type=int)
    get.add_argument("--subject")
    get.add_argument("--version", default="latest")

    check = actions.add_parser(
        "check", help="check a schema against a subject's compatibility level (exit 1 if incompatible)"
    )
    add_registry_options(check)
    check.add_argument("--subject", required=True)
    check.add_argument("--schema", required=True, help="schema JSON, or @file")
    check.add_argument("--version", default="latest")

    listing = actions.add_parser("list", help="list subjects, or the versions of --subject")
    add_registry_options(listing)
    listing.add_argument("--subject")
    reg.set_defaults(func=cmd_registry)
