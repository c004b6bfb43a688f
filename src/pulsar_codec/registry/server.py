"""A Confluent Schema Registry REST facade over a :class:`~pulsar_codec.registry.LocalRegistry`.

It serves the subset of the Confluent API that confluent-kafka's ``SchemaRegistryClient``,
``AvroSerializer`` and ``AvroDeserializer`` call (and that Karapace, Redpanda and Apicurio's
``ccompat`` API answer), with Confluent's status codes, error bodies and content type, so those
clients can use the embedded registry unchanged.

Use :func:`serve` (a context manager) or :class:`RegistryServer` to run it on a background thread,
and :func:`run` to run it in the foreground (the CLI does). Both bind 127.0.0.1 and, by default,
a free port. Needs the ``server`` extra (starlette, uvicorn).

Routes are matched on the raw request path, one percent-decoded segment at a time, so subjects
holding ``/`` (sent as ``%2F``) work; unknown query parameters are ignored.

Schema references (``"references": [{"name", "subject", "version"}]`` in a register, lookup or
compatibility body) are resolved by the registry; one naming a subject or version that does not
exist is a 422 with 42201, as in Confluent's registry. Answers carry a schema's ``references`` and
``guid`` as Confluent's do, and the register answer is Confluent's full one (``id``, ``version``,
``guid``, ``schema``, ``schemaType`` unless Avro, ``references`` when there are some).
``GET /schemas/guids/{guid}`` reads a schema by GUID. ``format=serialized`` on the routes that
return a Protobuf schema answers with its root file as a base64 FileDescriptorProto (what
confluent-kafka's Protobuf deserializer asks for), whatever form the schema was registered in.

Request bodies larger than ``max_request_bytes`` (16 MiB by default) are refused with 413 before
they are read: on their ``Content-Length``, or while a chunked body streams in. A schema that
cannot be parsed (nested too deeply included) is a 422 with error code 42201, an unknown or
out-of-range schema id a 404 with 40403; no input gives a 500.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import json
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

from ..errors import IncompatibleSchemaError, RegistryError, SchemaError, SchemaNotFoundError
from .base import SCHEMA_TYPES, ErrorCodes, RegisteredSchema, SchemaReference, references_of
from .local import LocalRegistry

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

__all__ = ["CONTENT_TYPE", "MAX_REQUEST_BYTES", "Faults", "RegistryServer", "create_app", "run", "serve"]

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
MAX_REQUEST_BYTES = 16 * 2**20  # default limit on a request body
_ID = re.compile(r"[0-9]{1,19}")  # a schema id in a path; SQLite ids stop at 2^63 - 1
_MAX_ID = 2**63 - 1

T = TypeVar("T")
Params = dict[str, str]  # the path's {placeholders}
Query = Mapping[str, str]  # the query string
Handler = Callable[[Params, Query, Any], Any]  # (params, query, JSON body) -> JSON answer


def _require_server_extra() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the schema registry server needs the 'server' extra: pip install 'pulsar-codec[server]' "
            f"(missing: {exc.name})"
        ) from exc


class _Raw(str):
    """A handler answer sent as the raw schema text (the ``/schema`` routes)."""


class _HTTPError(Exception):
    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message


@dataclass
class Faults:
    """Failures the server produces on purpose, so clients' retries and timeouts can be tested
    against a real server.

    Attributes
    ----------
    fail_next : int
        The next ``fail_next`` requests are answered with ``fail_status`` (and a Confluent error
        body) instead of being served.
    fail_status : int
        Status for those answers (default 503).
    delay : float
        Seconds every request waits before it is served (or failed).
    requests : int
        Requests seen so far (counted whatever happens to them).
    """

    fail_next: int = 0
    fail_status: int = 503
    delay: float = 0.0
    requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def _on_request(self) -> tuple[float, int | None]:
        with self._lock:
            self.requests += 1
            if self.fail_next > 0:
                self.fail_next -= 1
                return self.delay, self.fail_status
            return self.delay, None


def _flag(query: Query, name: str) -> bool:
    return str(query.get(name, "false")).strip().lower() == "true"


def _page(items: list[T], query: Query) -> list[T]:
    try:
        offset = max(int(query.get("offset", 0)), 0)
        limit = int(query.get("limit", -1))
    except ValueError:
        raise _HTTPError(422, 42202, "offset and limit must be integers") from None
    items = items[offset:]
    return items if limit < 0 else items[:limit]


def _schema_body(body: Any) -> tuple[str, str, tuple[SchemaReference, ...]]:
    if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
        raise _HTTPError(422, ErrorCodes.INVALID_SCHEMA, "Invalid schema: the body needs a 'schema' string")
    schema_type = str(body.get("schemaType") or "AVRO").upper()
    if schema_type not in SCHEMA_TYPES:
        raise _HTTPError(422, ErrorCodes.INVALID_SCHEMA, f"Invalid schema type {schema_type}")
    listed = body.get("references")
    if listed is not None and not isinstance(listed, list):
        raise _HTTPError(422, ErrorCodes.INVALID_SCHEMA, "Invalid schema: 'references' must be a list")
    return str(body["schema"]), schema_type, references_of(listed)


def _described(out: dict[str, Any], reg_schema: RegisteredSchema, text: str) -> dict[str, Any]:
    """``out`` with the schema, its type (unless Avro), its references (when it has some) and its
    GUID, as Confluent's answers describe a schema."""
    out["schema"] = text
    if reg_schema.schema_type != "AVRO":
        out["schemaType"] = reg_schema.schema_type
    if reg_schema.references:
        out["references"] = [r.to_dict() for r in reg_schema.references]
    if reg_schema.guid is not None:
        out["guid"] = reg_schema.guid
    return out


class _Api:
    """The route handlers; each takes (params, query, body) and returns the JSON answer."""

    def __init__(self, registry: LocalRegistry) -> None:
        self.reg = registry
        S = "{subject}"
        self.routes: list[tuple[str, tuple[str, ...], Handler]] = [
            ("GET", (), lambda p, q, b: {}),
            ("GET", ("schemas", "types"), lambda p, q, b: list(SCHEMA_TYPES)),
            ("GET", ("schemas", "guids", "{guid}"), self.schema_by_guid),
            ("GET", ("schemas", "ids", "{id}"), self.schema_by_id),
            ("GET", ("schemas", "ids", "{id}", "schema"), self.raw_schema_by_id),
            ("GET", ("schemas", "ids", "{id}", "versions"), self.versions_by_id),
            ("GET", ("schemas", "ids", "{id}", "subjects"), self.subjects_by_id),
            ("GET", ("subjects",), self.subjects),
            ("POST", ("subjects", S), self.lookup),
            ("DELETE", ("subjects", S), self.delete_subject),
            ("GET", ("subjects", S, "versions"), self.versions),
            ("POST", ("subjects", S, "versions"), self.register),
            ("GET", ("subjects", S, "versions", "{version}"), self.version),
            ("GET", ("subjects", S, "versions", "{version}", "schema"), self.raw_version),
            ("GET", ("subjects", S, "versions", "{version}", "referencedby"), self.referenced_by),
            ("DELETE", ("subjects", S, "versions", "{version}"), self.delete_version),
            ("POST", ("compatibility", "subjects", S, "versions", "{version}"), self.compatibility),
            ("POST", ("compatibility", "subjects", S, "versions"), self.compatibility),
            ("GET", ("config",), self.get_config),
            ("PUT", ("config",), self.put_config),
            ("DELETE", ("config",), self.delete_global_config),
            ("GET", ("config", S), self.get_config),
            ("PUT", ("config", S), self.put_config),
            ("DELETE", ("config", S), self.delete_config),
            ("GET", ("mode",), lambda p, q, b: {"mode": "READWRITE"}),
            ("GET", ("mode", S), lambda p, q, b: {"mode": "READWRITE"}),
        ]

    def match(self, method: str, segments: list[str]) -> tuple[Handler, Params] | None:
        """The handler of ``method`` on the path ``segments`` and the path's parameters; None when no
        route has that path, a 405 error when one has it for other methods."""
        allowed = False
        for m, pattern, handler in self.routes:
            if len(pattern) != len(segments):
                continue
            params = {}
            for want, got in zip(pattern, segments, strict=True):
                if want.startswith("{"):
                    params[want[1:-1]] = got
                elif want != got:
                    break
            else:
                if m == method:
                    return handler, params
                allowed = True
        if allowed:
            raise _HTTPError(405, 405, "HTTP 405 Method Not Allowed")
        return None

    @staticmethod
    def _id(params: Params) -> int:
        text = params["id"]
        if _ID.fullmatch(text) and int(text) <= _MAX_ID:
            return int(text)
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise _HTTPError(404, ErrorCodes.SCHEMA_NOT_FOUND, f"Schema {shown} not found")

    def _text(self, reg_schema: RegisteredSchema, q: Query) -> str:
        """The schema text in the ``format`` the query asks for (``serialized`` for Protobuf)."""
        if q.get("format") == "serialized" and reg_schema.schema_type == "PROTOBUF":
            return _serialized_protobuf(self.reg, reg_schema)
        return reg_schema.schema

    def _version_entity(self, reg_schema: RegisteredSchema, q: Query) -> dict[str, Any]:
        out = {"subject": reg_schema.subject, "version": reg_schema.version, "id": reg_schema.id}
        return _described(out, reg_schema, self._text(reg_schema, q))

    def _schema_entity(self, reg_schema: RegisteredSchema, q: Query) -> dict[str, Any]:
        return _described({}, reg_schema, self._text(reg_schema, q))

    def schema_by_id(self, p: Params, q: Query, b: Any) -> dict[str, Any]:
        return self._schema_entity(self.reg.get_schema(self._id(p)), q)

    def schema_by_guid(self, p: Params, q: Query, b: Any) -> dict[str, Any]:
        return self._schema_entity(self.reg.get_schema_by_guid(p["guid"]), q)

    def raw_schema_by_id(self, p: Params, q: Query, b: Any) -> _Raw:
        return _Raw(self.reg.get_schema(self._id(p)).schema)

    def versions_by_id(self, p: Params, q: Query, b: Any) -> list[dict[str, Any]]:
        pairs = self.reg.get_schema_versions(self._id(p), deleted=_flag(q, "deleted"))
        if "subject" in q:
            pairs = [(s, v) for s, v in pairs if s == q["subject"]]
        return _page([{"subject": s, "version": v} for s, v in pairs], q)

    def subjects_by_id(self, p: Params, q: Query, b: Any) -> list[str]:
        pairs = self.reg.get_schema_versions(self._id(p), deleted=_flag(q, "deleted"))
        return _page(sorted({s for s, _ in pairs}), q)

    def subjects(self, p: Params, q: Query, b: Any) -> list[str]:
        if _flag(q, "deleted_only"):
            names = sorted(set(self.reg.list_subjects(deleted=True)) - set(self.reg.list_subjects()))
        else:
            names = self.reg.list_subjects(deleted=_flag(q, "deleted"))
        prefix = q.get("subjectPrefix")
        if prefix:
            names = [n for n in names if n.startswith(prefix)]
        return _page(names, q)

    def lookup(self, p: Params, q: Query, b: Any) -> dict[str, Any]:
        schema, schema_type, refs = _schema_body(b)
        found = self.reg.lookup(p["subject"], schema, schema_type, deleted=_flag(q, "deleted"), references=refs)
        return self._version_entity(found, q)

    def register(self, p: Params, q: Query, b: Any) -> dict[str, Any]:
        schema, schema_type, refs = _schema_body(b)
        found = self.reg.register_full(p["subject"], schema, schema_type, refs)
        return _described({"id": found.id, "version": found.version}, found, found.schema)

    def versions(self, p: Params, q: Query, b: Any) -> list[int]:
        subject = p["subject"]
        if _flag(q, "deleted_only"):
            live = set(self.reg.list_versions(subject, deleted=True)) - set(self._live_versions(subject))
            return _page(sorted(live), q)
        return _page(self.reg.list_versions(subject, deleted=_flag(q, "deleted")), q)

    def _live_versions(self, subject: str) -> list[int]:
        try:
            return self.reg.list_versions(subject)
        except SchemaNotFoundError:
            return []

    def version(self, p: Params, q: Query, b: Any) -> dict[str, Any]:
        return self._version_entity(self.reg.get_version(p["subject"], p["version"], deleted=_flag(q, "deleted")), q)

    def referenced_by(self, p: Params, q: Query, b: Any) -> list[int]:
        return self.reg.referenced_by(p["subject"], p["version"], deleted=_flag(q, "deleted"))

    def raw_version(self, p: Params, q: Query, b: Any) -> _Raw:
        return _Raw(self.reg.get_version(p["subject"], p["version"], deleted=_flag(q, "deleted")).schema)

    def delete_subject(self, p: Params, q: Query, b: Any) -> list[int]:
        return self.reg.delete_subject(p["subject"], permanent=_flag(q, "permanent"))

    def delete_version(self, p: Params, q: Query, b: Any) -> int:
        return self.reg.delete_version(p["subject"], p["version"], permanent=_flag(q, "permanent"))

    def compatibility(self, p: Params, q: Query, b: Any) -> dict[str, Any]:
        schema, schema_type, refs = _schema_body(b)
        result = self.reg.check_compatibility(p["subject"], schema, p.get("version"), schema_type, refs)
        out: dict[str, Any] = {"is_compatible": result.compatible}
        if _flag(q, "verbose"):
            out["messages"] = result.reasons
        return out

    def get_config(self, p: Params, q: Query, b: Any) -> dict[str, Any]:
        subject = p.get("subject")
        if subject is not None and not _flag(q, "defaultToGlobal") and self.reg.subject_compatibility(subject) is None:
            # Confluent's answer: a subject's own level, the global one only when asked for
            raise _HTTPError(
                404,
                ErrorCodes.SUBJECT_LEVEL_CONFIG_NOT_FOUND,
                f"Subject '{subject}' does not have subject-level compatibility configured",
            )
        return {"compatibilityLevel": self.reg.get_compatibility(subject)}

    def put_config(self, p: Params, q: Query, b: Any) -> dict[str, Any]:
        level = b.get("compatibility") if isinstance(b, dict) else None
        if not isinstance(level, str):
            raise _HTTPError(422, ErrorCodes.INVALID_COMPATIBILITY_LEVEL, "Invalid compatibility level: missing")
        return {"compatibility": self.reg.set_compatibility(level, p.get("subject"))}

    def delete_config(self, p: Params, q: Query, b: Any) -> dict[str, Any]:
        previous = self.reg.get_compatibility(p["subject"])
        self.reg.delete_compatibility(p["subject"])
        return {"compatibilityLevel": previous}

    def delete_global_config(self, p: Params, q: Query, b: Any) -> dict[str, Any]:
        previous = self.reg.get_compatibility()
        self.reg.set_compatibility("BACKWARD")
        return {"compatibilityLevel": previous}


def _serialized_protobuf(registry: LocalRegistry, reg_schema: RegisteredSchema) -> str:
    """A Protobuf schema's root file as base64 FileDescriptorProto text (Confluent's
    ``format=serialized``): as stored when registered in that form, else compiled from its
    ``.proto`` text with its references."""
    from ..formats.protobuf._references import descriptor_text, resolve_references  # the protobuf extra
    from ..formats.protobuf.schema import parse

    if descriptor_text(reg_schema.schema) is not None:
        return reg_schema.schema
    model = parse(reg_schema.schema, resolve_references(registry, reg_schema.references))
    return base64.b64encode(model.root_file().SerializeToString()).decode("ascii")


def _error_for(exc: BaseException) -> _HTTPError:
    if isinstance(exc, _HTTPError):
        return exc
    if isinstance(exc, SchemaNotFoundError):
        return _HTTPError(404, exc.error_code or ErrorCodes.SCHEMA_NOT_FOUND, str(exc))
    if isinstance(exc, IncompatibleSchemaError):
        return _HTTPError(409, ErrorCodes.INCOMPATIBLE_SCHEMA, str(exc))
    if isinstance(exc, SchemaError):
        return _HTTPError(422, ErrorCodes.INVALID_SCHEMA, f"Invalid schema: {exc}")
    if isinstance(exc, RecursionError):  # a parser that recursed past Python's limit on a nested schema
        return _HTTPError(422, ErrorCodes.INVALID_SCHEMA, "Invalid schema: nested too deeply to be parsed")
    if isinstance(exc, RegistryError):
        code = exc.error_code or ErrorCodes.STORE_ERROR
        status = exc.status or (404 if 40400 <= code < 40500 else 422 if 42200 <= code < 42300 else 500)
        return _HTTPError(status, code, str(exc))
    if isinstance(exc, ValueError) and "compatibility strategy" in str(exc):
        return _HTTPError(422, ErrorCodes.INVALID_COMPATIBILITY_LEVEL, f"Invalid compatibility level: {exc}")
    return _HTTPError(500, 500, f"Internal server error: {type(exc).__name__}")


def _check_auth(header: str | None, auth: tuple[str, str] | None, token: str | None) -> bool:
    if auth is None and token is None:
        return True
    if not header:
        return False
    scheme, _, value = header.partition(" ")
    scheme = scheme.lower()
    if scheme == "basic" and auth is not None:
        try:
            user, _, password = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        # compare both parts in constant time, and always both
        ok_user = hmac.compare_digest(user.encode(), auth[0].encode())
        ok_password = hmac.compare_digest(password.encode(), auth[1].encode())
        return ok_user and ok_password
    if scheme == "bearer" and token is not None:
        return hmac.compare_digest(value.strip().encode(), token.encode())
    return False


def create_app(
    registry: LocalRegistry,
    *,
    auth: tuple[str, str] | None = None,
    token: str | None = None,
    faults: Faults | None = None,
    max_request_bytes: int = MAX_REQUEST_BYTES,
) -> Starlette:
    """The ASGI application (a Starlette app) serving ``registry``.

    Parameters
    ----------
    registry : LocalRegistry
    auth : (user, password), optional
        Require HTTP basic authentication with these credentials.
    token : str, optional
        Accept (or, without ``auth``, require) ``Authorization: Bearer <token>``.
    faults : Faults, optional
        Deliberate failures and delays, for testing clients.
    max_request_bytes : int, default 16 MiB
        Largest request body accepted; a larger one gets 413 (error code 413) and the connection
        is closed. A declared ``Content-Length`` over the limit is refused before any byte of the
        body is read; a chunked body is counted as it arrives and refused once it passes.
    """
    _require_server_extra()
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import Response

    api = _Api(registry)

    def answer(status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
        if isinstance(payload, _Raw):
            return Response(str(payload), status_code=status, media_type="application/json", headers=headers)
        body = json.dumps(payload, separators=(",", ":")).encode()
        return Response(body, status_code=status, media_type=CONTENT_TYPE, headers=headers)

    def error(exc: _HTTPError, headers: dict[str, str] | None = None) -> Response:
        if exc.status == 413:  # the rest of the body stays unread: the connection cannot be reused
            headers = {**(headers or {}), "Connection": "close"}
        return answer(exc.status, {"error_code": exc.error_code, "message": exc.message}, headers)

    def too_large() -> _HTTPError:
        return _HTTPError(413, 413, f"Request body larger than the limit of {max_request_bytes} bytes")

    async def read_body(request: Request) -> bytes:
        # never request.body(): it would hold a body of any size in memory before we could look
        declared = request.headers.get("content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                raise _HTTPError(400, 400, "Invalid Content-Length header")
            if int(declared) > max_request_bytes:
                raise too_large()
        content = bytearray()
        async for chunk in request.stream():
            content += chunk
            if len(content) > max_request_bytes:
                raise too_large()
        return bytes(content)

    async def endpoint(request: Request) -> Response:
        if faults is not None:
            delay, fail = faults._on_request()
            if delay:
                await asyncio.sleep(delay)
            if fail is not None:
                return error(_HTTPError(fail, fail * 100 + 1 if fail < 1000 else fail, "injected failure"))
        if not _check_auth(request.headers.get("authorization"), auth, token):
            return error(_HTTPError(401, 401, "Unauthorized"), {"WWW-Authenticate": 'Basic realm="schema-registry"'})
        raw = request.scope.get("raw_path") or request.url.path.encode()
        segments = [unquote(s.decode("latin-1")) for s in raw.split(b"?", 1)[0].split(b"/") if s]
        try:
            found = api.match(request.method, segments)
            if found is None:
                raise _HTTPError(404, 404, "HTTP 404 Not Found")
            handler, params = found
            body = None
            if request.method in ("POST", "PUT"):
                content = await read_body(request)
                if content:
                    try:
                        body = json.loads(content)
                    except ValueError:
                        raise _HTTPError(400, 400, "The request body is not valid JSON") from None
                    except RecursionError:
                        raise _HTTPError(400, 400, "The request body nests JSON too deeply") from None
            payload = await run_in_threadpool(handler, params, request.query_params, body)
        except Exception as exc:  # every failure becomes a Confluent error body
            return error(_error_for(exc))
        return answer(200, payload)

    from starlette.routing import Route

    methods = ["GET", "POST", "PUT", "DELETE"]
    return Starlette(routes=[Route("/", endpoint, methods=methods), Route("/{rest:path}", endpoint, methods=methods)])


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family)
    # accepted connections inherit this (Linux, macOS); without it each small answer waits for
    # the client's delayed ACK (Nagle), about 40 ms a request
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


SERVER_LOCK_TIMEOUT = 5.0
"""Seconds a request of a server that opened its registry from a path waits for another
process's write lock on the file before it answers 500 (error code 50001, a store error), which
clients retry: well inside a client's own timeout (10 s for :class:`ConfluentRegistry`), so a
client never gives up on a registration the server then makes, and a handler thread is not held
for 30 s while reads queue behind it."""


class RegistryServer:
    """Serve a registry over HTTP on a background thread.

    Parameters
    ----------
    registry : LocalRegistry or str or os.PathLike
        The registry, or a database path to open one (closed with the server; its requests wait at
        most :data:`SERVER_LOCK_TIMEOUT` for another process's write lock).
    host : str, default "127.0.0.1"
    port : int, default 0
        0 picks a free port; :attr:`url` tells which.
    auth, token, faults, max_request_bytes
        As for :func:`create_app`.
    tls : (certfile, keyfile), optional
        Serve HTTPS with this certificate chain and key (PEM files).

    Examples
    --------
    >>> with RegistryServer(LocalRegistry()) as server:   # doctest: +SKIP
    ...     print(server.url)
    http://127.0.0.1:41234
    """

    def __init__(
        self,
        registry: LocalRegistry | str | os.PathLike[str],
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        auth: tuple[str, str] | None = None,
        token: str | None = None,
        faults: Faults | None = None,
        tls: tuple[str | os.PathLike[str], str | os.PathLike[str]] | None = None,
        max_request_bytes: int = MAX_REQUEST_BYTES,
    ) -> None:
        _require_server_extra()
        self._tls = None if tls is None else (os.fspath(tls[0]), os.fspath(tls[1]))
        self._owns_registry = not isinstance(registry, LocalRegistry)
        self.registry = (
            registry if isinstance(registry, LocalRegistry) else LocalRegistry(registry, timeout=SERVER_LOCK_TIMEOUT)
        )
        self.host = host
        self.app = create_app(self.registry, auth=auth, token=token, faults=faults, max_request_bytes=max_request_bytes)
        self._socket = _listen(host, port)
        self.port: int = self._socket.getsockname()[1]
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"RegistryServer(url={self.url!r})"

    @property
    def url(self) -> str:
        """Base URL, such as ``http://127.0.0.1:41234``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self._tls else 'http'}://{host}:{self.port}"

    def start(self, timeout: float = 10.0) -> RegistryServer:
        """Start serving; returns once the server accepts requests."""
        import uvicorn

        if self._thread is not None:
            return self
        config = uvicorn.Config(
            self.app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            ws="none",
            http="h11",
            ssl_certfile=self._tls[0] if self._tls else None,
            ssl_keyfile=self._tls[1] if self._tls else None,
        )
        server = self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=server.run,
            kwargs={"sockets": [self._socket]},
            name=f"registry-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RegistryError(f"the registry server did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and wait for the thread to end."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self._socket.close()
        if self._owns_registry:
            self.registry.close()

    def __enter__(self) -> RegistryServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


def serve(
    registry: LocalRegistry | str | os.PathLike[str],
    host: str = "127.0.0.1",
    port: int = 0,
    **options: Any,
) -> RegistryServer:
    """A started-on-entry :class:`RegistryServer`, to use in a ``with`` block.

    >>> with serve(LocalRegistry()) as server:   # doctest: +SKIP
    ...     client = ConfluentRegistry(server.url)
    """
    return RegistryServer(registry, host, port, **options)


def run(
    registry: LocalRegistry | str | os.PathLike[str],
    host: str = "127.0.0.1",
    port: int = 8081,
    *,
    auth: tuple[str, str] | None = None,
    token: str | None = None,
    tls: tuple[str | os.PathLike[str], str | os.PathLike[str]] | None = None,
    log_level: str = "info",
    max_request_bytes: int = MAX_REQUEST_BYTES,
) -> None:
    """Serve in the foreground until interrupted (Ctrl-C); for the command line.

    ``tls=(certfile, keyfile)`` serves HTTPS; the other options are those of :func:`create_app`.
    """
    _require_server_extra()
    import uvicorn

    reg = registry if isinstance(registry, LocalRegistry) else LocalRegistry(registry, timeout=SERVER_LOCK_TIMEOUT)
    sock = _listen(host, port)
    try:
        config = uvicorn.Config(
            create_app(reg, auth=auth, token=token, max_request_bytes=max_request_bytes),
            log_level=log_level,
            lifespan="off",
            ws="none",
            ssl_certfile=os.fspath(tls[0]) if tls else None,
            ssl_keyfile=os.fspath(tls[1]) if tls else None,
        )
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        if reg is not registry:
            reg.close()
