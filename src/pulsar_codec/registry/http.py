"""HTTP client for Confluent-compatible schema registries (Confluent, Karapace, Redpanda,
Apicurio's ``ccompat`` API, and this package's own REST facade).

Needs the ``registry`` extra (httpx).
"""

from __future__ import annotations

import json
import logging
import os
import random
import ssl
import time
import uuid
from collections.abc import Generator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from .. import compat
from .._cache import LRU
from ..compat import CompatibilityResult, Incompatibility, Strategy
from ..errors import IncompatibleSchemaError, RegistryError, RegistryUnreachableError, SchemaError
from ._answers import Scrubber, expect_int, expect_list, expect_object
from .base import (
    ErrorCodes,
    RegisteredSchema,
    Registry,
    SchemaReference,
    not_found,
    parse_guid,
    references_of,
    schema_text,
)
from .config import DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TOTAL_TIMEOUT, RegistryConfig

if TYPE_CHECKING:
    import httpx

__all__ = ["DEFAULT_TIMEOUT", "ConfluentRegistry"]

log = logging.getLogger(__name__)

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"
_RETRY_STATUS = frozenset({500, 502, 503, 504})
_UNAVAILABLE_STATUS = frozenset({502, 503, 504})  # after the retries: the registry cannot be reached
DEFAULT_TIMEOUT = (3.0, 10.0)  # seconds: (connect, read) of one attempt
_ENTITY = {"id": int, "schema": str}  # what a subject-version answer must hold
_DESCRIBED: dict[str, type] = {"schemaType": str, "references": list, "guid": str}  # what may describe a schema
_REFERENCE: dict[str, type] = {"name": str, "subject": str, "version": int}
_NOT_FOUND = frozenset({ErrorCodes.SUBJECT_NOT_FOUND, ErrorCodes.VERSION_NOT_FOUND, ErrorCodes.SCHEMA_NOT_FOUND})


# what a TLS option may be: a flag, a CA bundle path or a ready context
TLSVerify = bool | str | os.PathLike[str] | ssl.SSLContext


def _require_httpx() -> None:
    """Raise an ImportError naming the extra that brings httpx when it is missing."""
    try:
        import httpx  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("ConfluentRegistry needs the 'registry' extra: pip install 'pulsar-codec[registry]'") from exc


def _split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """Remove ``user:password@`` from a URL (so it never shows up in messages) and return it."""
    parts = urlsplit(url)
    if parts.username is None:
        return url.rstrip("/"), None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)).rstrip("/")
    return clean, (unquote(parts.username), unquote(parts.password or ""))


def _ssl_context(verify: TLSVerify, cert: Any) -> bool | ssl.SSLContext:
    if isinstance(verify, ssl.SSLContext):
        ctx = verify
    elif verify is False:
        if cert is None:
            return False
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif verify is True:
        if cert is None:
            return True
        ctx = ssl.create_default_context()
    else:
        ctx = ssl.create_default_context(cafile=os.fspath(verify))
    if cert is not None:
        if isinstance(cert, (str, os.PathLike)):
            ctx.load_cert_chain(os.fspath(cert))
        else:
            certfile, keyfile, *password = cert
            ctx.load_cert_chain(os.fspath(certfile), keyfile and os.fspath(keyfile), *password)
    return ctx


class ConfluentRegistry(Registry):
    """Client for a Confluent-compatible schema registry.

    Parameters
    ----------
    url : str
        Base URL, such as ``https://registry.example.com:8081``. Credentials written into it
        (``https://user:password@host``) are taken out and used as basic auth.
    auth : (user, password), optional
        HTTP basic authentication.
    token : str, optional
        Bearer token (``Authorization: Bearer <token>``), for registries behind OAuth.
    timeout : float or (connect, read), default (3.0, 10.0)
        Seconds one attempt waits for a connection and for each read of the answer.
    retries : int, default 3
        Extra attempts after a connection error, a timeout or a 5xx answer (500, 502, 503, 504);
        4xx answers are never retried.
    total_timeout : float or None, default 10.0
        Seconds one operation may take with all its attempts and waits; each attempt's timeouts
        are cut to what is left, and no retry starts past it. None: no overall limit.
    backoff : float, default 0.2
        First wait between attempts, in seconds; it doubles each time (with jitter, at most
        ``max_backoff``).
    max_backoff : float, default 5.0
    verify : bool, path or ssl.SSLContext, default True
        TLS verification: True (system / certifi roots), False, a CA bundle path, or a context.
    cert : path or (certfile, keyfile[, password]), optional
        Client certificate for mutual TLS.
    cache_size : int, default 1000
        Entries kept in each cache (id -> schema, (subject, schema) -> id); 0 disables them.
    max_response_bytes : int, default 64 MiB
        Largest answer read (counted while it streams in, after content decoding); a larger one
        raises :class:`~pulsar_codec.errors.RegistryError`.

    Raises
    ------
    RegistryUnreachableError
        From any operation, when the registry cannot be reached: connection refused or reset,
        DNS or TLS failure, timeouts, or 502/503/504 after the retries.
    RegistryError
        Any other failure: an error answer, or a success answer of the wrong shape (naming the
        method and URL, never the credentials).

    Notes
    -----
    Schemas are immutable per id, so fetched schemas are cached; registrations and lookups are
    cached per subject and forgotten when this client deletes from that subject. Credentials never
    appear in ``repr``, exception messages or log records: text the server sends back (error and
    compatibility messages) is scrubbed of them and of any ``Authorization`` header it echoes.
    """

    def __init__(
        self,
        url: str,
        *,
        auth: tuple[str, str] | None = None,
        token: str | None = None,
        timeout: float | tuple[float, float] | None = DEFAULT_TIMEOUT,
        retries: int = 3,
        backoff: float = 0.2,
        max_backoff: float = 5.0,
        verify: TLSVerify = True,
        cert: Any = None,
        cache_size: int = 1000,
        total_timeout: float | None = DEFAULT_TOTAL_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        _require_httpx()
        import httpx

        self.url, url_auth = _split_userinfo(url)
        auth = auth or url_auth
        if auth is not None and token is not None:
            raise ValueError("give either auth (basic) or token (bearer), not both")
        self._auth_kind = "basic" if auth is not None else "bearer" if token is not None else None
        self._scrub = Scrubber(auth, token)
        if timeout is None:
            timeout = DEFAULT_TIMEOUT
        if isinstance(timeout, (int, float)):
            connect = read = float(timeout)
        else:
            connect, read = (float(t) for t in timeout)
        self.retries = max(int(retries), 0)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.total_timeout = None if total_timeout is None else float(total_timeout)
        self.max_response_bytes = int(max_response_bytes)
        self._timeouts = (connect, read)
        self._client: httpx.Client = httpx.Client(
            base_url=self.url,
            auth=_auth(auth, token),
            timeout=httpx.Timeout(connect=connect, read=read, write=read, pool=connect),
            verify=_ssl_context(verify, cert),
            headers={"Accept": _ACCEPT},
        )
        self._by_id: LRU[int, RegisteredSchema] = LRU(cache_size)
        self._by_guid: LRU[str, RegisteredSchema] = LRU(cache_size)
        self._by_schema: LRU[tuple[str, str], int] = LRU(cache_size)
        # what this client was built from, so it can be rebuilt elsewhere (RegistryConfig.of)
        self.config = RegistryConfig(
            url=url,
            auth=auth,
            token=token,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            max_backoff=max_backoff,
            verify=verify,
            cert=cert,
            cache_size=cache_size,
            total_timeout=total_timeout,
            max_response_bytes=max_response_bytes,
        )

    def __repr__(self) -> str:
        auth = f", auth={self._auth_kind!r}" if self._auth_kind else ""
        return f"ConfluentRegistry({self.url!r}{auth})"

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def clear_caches(self) -> None:
        """Forget every cached schema and id."""
        self._by_id.clear()
        self._by_guid.clear()
        self._by_schema.clear()

    # ---------------------------------------------------------------------------- transport

    def _request(self, method: str, path: str, *, params: dict[str, str] | None = None, body: Any = None) -> Any:
        """The decoded JSON answer (None for an empty one), after the bounded retries."""
        import httpx  # loaded by the constructor

        headers = {"Content-Type": _CONTENT_TYPE} if body is not None else None
        where = f"{method} {self.url}{path}"
        attempts = self.retries + 1
        deadline = None if self.total_timeout is None else time.monotonic() + self.total_timeout
        for attempt in range(1, attempts + 1):
            try:
                status, reason, content = self._send(method, path, params, body, headers, deadline)
            except httpx.TransportError as exc:
                # connection refused or reset, DNS, TLS, timeouts: the request may not have arrived
                problem = "timed out" if isinstance(exc, httpx.TimeoutException) else "failed"
                if attempt == attempts or not self._wait(attempt, type(exc).__name__, method, path, deadline):
                    raise RegistryUnreachableError(
                        f"{where} {problem} after {attempt} attempt(s): {type(exc).__name__}"
                    ) from None
                continue
            if status in _RETRY_STATUS and attempt < attempts:
                if self._wait(attempt, f"HTTP {status}", method, path, deadline):
                    continue
            if 200 <= status < 300:
                if status == 204 or not content:
                    return None
                try:
                    return json.loads(content)
                except (ValueError, RecursionError):
                    raise RegistryError(f"{where} answered with a body that is not JSON", status=status) from None
            raise self._error(where, status, reason, content, attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(
        self,
        method: str,
        path: str,
        params: dict[str, str] | None,
        body: Any,
        headers: dict[str, str] | None,
        deadline: float | None,
    ) -> tuple[int, str, bytes]:
        """One attempt: (status, reason phrase, body), the body read in pieces up to the size cap."""
        import httpx

        connect, read = self._timeouts
        if deadline is not None:  # no attempt outlives the operation's budget
            left = max(deadline - time.monotonic(), 0.001)
            connect, read = min(connect, left), min(read, left)
        timeout = httpx.Timeout(connect=connect, read=read, write=read, pool=connect)
        request = self._client.build_request(method, path, params=params, json=body, headers=headers, timeout=timeout)
        response = self._client.send(request, stream=True)
        try:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_response_bytes:
                raise self._too_large(method, path, response.status_code)
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > self.max_response_bytes:
                    raise self._too_large(method, path, response.status_code)
                if deadline is not None and time.monotonic() > deadline:
                    raise httpx.ReadTimeout("the answer took longer than total_timeout", request=request)
                chunks.append(chunk)
        finally:
            response.close()
        return response.status_code, response.reason_phrase, b"".join(chunks)

    def _too_large(self, method: str, path: str, status: int) -> RegistryError:
        return RegistryError(
            f"{method} {self.url}{path} answered with more than max_response_bytes ({self.max_response_bytes} bytes)",
            status=status,
        )

    def _wait(self, attempt: int, why: str, method: str, path: str, deadline: float | None) -> bool:
        """Sleep before the next attempt; False (without sleeping) when that would pass the deadline."""
        delay = min(self.backoff * 2 ** (attempt - 1), self.max_backoff)
        delay *= random.uniform(0.5, 1.0)  # jitter, so many clients do not retry in step
        if deadline is not None and time.monotonic() + delay >= deadline:
            return False
        log.warning(
            "schema registry %s %s: %s; retrying in %.2fs (attempt %d of %d)",
            method,
            path,
            why,
            delay,
            attempt + 1,
            self.retries + 1,
        )
        time.sleep(delay)
        return True

    def _error(self, where: str, status: int, reason: str, content: bytes, attempts: int) -> Exception:
        code: Any = None
        message: Any = None
        try:
            body = json.loads(content) if content else None
            if isinstance(body, dict):
                code, message = body.get("error_code"), body.get("message")
        except (ValueError, RecursionError):
            pass
        if not isinstance(code, int) or isinstance(code, bool):
            code = None
        if status in (401, 403):
            return RegistryError(f"{where}: authentication failed (HTTP {status})", status=status, error_code=code)
        # the server's words, without credentials a proxy may have echoed
        message = self._scrub(str(message or reason or f"HTTP {status}"))
        if status == 404 and code in _NOT_FOUND:
            return not_found(message, code)
        if status == 409 or code == ErrorCodes.INCOMPATIBLE_SCHEMA:
            incompatible = IncompatibleSchemaError(message, reasons=[message])
            incompatible.status, incompatible.error_code = status, code
            return incompatible
        if code == ErrorCodes.INVALID_SCHEMA:
            invalid = SchemaError(message)
            invalid.status, invalid.error_code = status, code
            return invalid
        if status in _RETRY_STATUS:
            cls = RegistryUnreachableError if status in _UNAVAILABLE_STATUS else RegistryError
            return cls(
                f"{where}: {message} (HTTP {status}) after {attempts} attempt(s)", status=status, error_code=code
            )
        return RegistryError(f"{where}: {message} (HTTP {status})", status=status, error_code=code)

    # ---------------------------------------------------------------------------- helpers

    @staticmethod
    def _subject(subject: str) -> str:
        return quote(subject, safe="")

    @staticmethod
    def _version(version: int | str) -> str:
        if isinstance(version, str):
            return quote(version.strip(), safe="")
        if isinstance(version, bool) or not isinstance(version, int):
            raise TypeError(f"version must be an int or 'latest', not {type(version).__name__}")
        return "latest" if version == -1 else str(version)

    @staticmethod
    def _key(schema: str, schema_type: str, references: tuple[SchemaReference, ...] = ()) -> str:
        listed = "".join(f"\n{r.name}\n{r.subject}\n{r.version}" for r in references)
        if references:  # the texts they name are not at hand here: the text itself keys the cache
            return f"{schema_type}\n{schema}{listed}"
        try:
            return compat.fingerprint(schema, schema_type)
        except (SchemaError, RecursionError):
            return f"{schema_type}\n{schema}"

    @staticmethod
    def _body(schema: str, schema_type: str, references: tuple[SchemaReference, ...] = ()) -> dict[str, Any]:
        body: dict[str, Any] = {"schema": schema}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        if references:
            body["references"] = [r.to_dict() for r in references]
        return body

    @staticmethod
    def _described(where: str, data: dict[str, Any]) -> tuple[str, tuple[SchemaReference, ...], str | None]:
        """(schema type, references, GUID) of an answer describing a schema, checked for shape."""
        listed = data.get("references") or []
        refs = tuple(
            SchemaReference(item["name"], item["subject"], item["version"])
            for item in (expect_object(where, r, _REFERENCE) for r in expect_list(where, listed, dict))
        )
        return str(data.get("schemaType") or "AVRO").upper(), refs, data.get("guid")

    def _object(
        self,
        method: str,
        path: str,
        required: dict[str, type],
        optional: dict[str, type] | None = None,
        *,
        params: dict[str, str] | None = None,
        body: Any = None,
    ) -> dict[str, Any]:
        """The answer of a call that returns a JSON object, checked for ``required`` fields."""
        data = self._request(method, path, params=params, body=body)
        return expect_object(f"{method} {self.url}{path}", data, required, optional)

    def _list(self, method: str, path: str, item: type, *, params: dict[str, str] | None = None) -> list[Any]:
        """The answer of a call that returns a JSON array of ``item`` values."""
        data = self._request(method, path, params=params)
        return expect_list(f"{method} {self.url}{path}", data, item)

    def _entity(
        self, method: str, path: str, subject: str, *, params: dict[str, str] | None = None, body: Any = None
    ) -> RegisteredSchema:
        """A subject-version answer (``id``, ``schema``, ``version``, ...) as a RegisteredSchema."""
        data = self._object(
            method, path, _ENTITY, {"version": int, "subject": str, **_DESCRIBED}, params=params, body=body
        )
        schema_type, refs, guid = self._described(f"{method} {self.url}{path}", data)
        return RegisteredSchema(
            data["id"], data["schema"], schema_type, data.get("subject") or subject, data.get("version"), refs, guid
        )

    def _forget_subject(self, subject: str) -> None:
        self._by_schema.drop(lambda key: key[0] == subject)

    # ---------------------------------------------------------------------------- operations

    def register(self, subject: str, schema: Any, schema_type: str = "AVRO", references: Any = None) -> int:
        """Register ``schema`` (with its ``references``) under ``subject`` and return its id (cached
        per subject, schema and references)."""
        text, schema_type, refs = schema_text(schema), (schema_type or "AVRO").upper(), references_of(references)
        cached = self._by_schema.get((subject, self._key(text, schema_type, refs)))
        if cached is not None:
            return cached
        return self.register_full(subject, text, schema_type, refs).id

    def register_full(
        self, subject: str, schema: Any, schema_type: str = "AVRO", references: Any = None
    ) -> RegisteredSchema:
        """Register ``schema`` (with its ``references``) under ``subject``; the registry's whole
        answer. A registry that answers with the id alone (older Confluent versions, Karapace)
        gives a RegisteredSchema of that id and the text sent, without version and GUID."""
        text, schema_type, refs = schema_text(schema), (schema_type or "AVRO").upper(), references_of(references)
        path = f"/subjects/{self._subject(subject)}/versions"
        data = self._object(
            "POST",
            path,
            {"id": int},
            {"version": int, "schema": str, **_DESCRIBED},
            body=self._body(text, schema_type, refs),
        )
        _, answered_refs, guid = self._described(f"POST {self.url}{path}", data)
        self._by_schema.put((subject, self._key(text, schema_type, refs)), data["id"])
        return RegisteredSchema(
            data["id"],
            data.get("schema") or text,
            schema_type,
            subject,
            data.get("version"),
            answered_refs or refs,
            guid,
        )

    def get_schema(self, schema_id: int | uuid.UUID) -> RegisteredSchema:
        """The schema with this global id (cached: ids never change their schema); a
        ``uuid.UUID`` is looked up as a GUID (:meth:`get_schema_by_guid`)."""
        if isinstance(schema_id, uuid.UUID):
            return self.get_schema_by_guid(schema_id)
        schema_id = int(schema_id)
        cached = self._by_id.get(schema_id)
        if cached is not None:
            return cached
        path = f"/schemas/ids/{schema_id}"
        data = self._object("GET", path, {"schema": str}, _DESCRIBED)
        schema_type, refs, guid = self._described(f"GET {self.url}{path}", data)
        return self._by_id.put(
            schema_id, RegisteredSchema(schema_id, data["schema"], schema_type, None, None, refs, guid)
        )

    def get_schema_by_guid(self, guid: Any) -> RegisteredSchema:
        """The schema with this GUID (``GET /schemas/guids/{guid}``; cached). The answer names no
        id, so :attr:`RegisteredSchema.id` is -1 unless the registry adds one."""
        key = str(parse_guid(guid))
        cached = self._by_guid.get(key)
        if cached is not None:
            return cached
        path = f"/schemas/guids/{key}"
        data = self._object("GET", path, {"schema": str}, {"id": int, **_DESCRIBED})
        schema_type, refs, answered = self._described(f"GET {self.url}{path}", data)
        got = RegisteredSchema(data.get("id", -1), data["schema"], schema_type, None, None, refs, answered or key)
        return self._by_guid.put(key, got)

    def get_schema_versions(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        """The (subject, version) pairs that use this schema id."""
        params = {"deleted": "true"} if deleted else None
        path = f"/schemas/ids/{int(schema_id)}/versions"
        items = self._list("GET", path, dict, params=params)
        where = f"GET {self.url}{path}"
        return [
            (item["subject"], item["version"])
            for item in (expect_object(where, i, {"subject": str, "version": int}) for i in items)
        ]

    def get_version(self, subject: str, version: int | str = "latest", deleted: bool = False) -> RegisteredSchema:
        """One version of a subject (``"latest"`` or ``-1``: the newest)."""
        params = {"deleted": "true"} if deleted else None
        path = f"/subjects/{self._subject(subject)}/versions/{self._version(version)}"
        return self._entity("GET", path, subject, params=params)

    def lookup(
        self, subject: str, schema: Any, schema_type: str = "AVRO", deleted: bool = False, references: Any = None
    ) -> RegisteredSchema:
        """The version of ``subject`` holding ``schema`` with these ``references`` (the registry
        compares them)."""
        text, schema_type, refs = schema_text(schema), (schema_type or "AVRO").upper(), references_of(references)
        params = {"deleted": "true"} if deleted else None
        path = f"/subjects/{self._subject(subject)}"
        found = self._entity("POST", path, subject, params=params, body=self._body(text, schema_type, refs))
        if not deleted:
            self._by_schema.put((subject, self._key(text, schema_type, refs)), found.id)
        return found

    def referenced_by(self, subject: str, version: int | str, deleted: bool = False) -> list[int]:
        """The ids of the schemas that refer to this version (``.../referencedby``)."""
        params = {"deleted": "true"} if deleted else None
        path = f"/subjects/{self._subject(subject)}/versions/{self._version(version)}/referencedby"
        return self._list("GET", path, int, params=params)

    def list_subjects(self, deleted: bool = False) -> list[str]:
        """Subject names, sorted."""
        return sorted(self._list("GET", "/subjects", str, params={"deleted": "true"} if deleted else None))

    def list_versions(self, subject: str, deleted: bool = False) -> list[int]:
        """Version numbers of a subject, ascending."""
        params = {"deleted": "true"} if deleted else None
        return sorted(self._list("GET", f"/subjects/{self._subject(subject)}/versions", int, params=params))

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """Soft-delete a subject's versions (``permanent=True``: remove them, after a soft delete)."""
        params = {"permanent": "true"} if permanent else None
        try:
            return self._list("DELETE", f"/subjects/{self._subject(subject)}", int, params=params)
        finally:
            self._forget_subject(subject)

    def delete_version(self, subject: str, version: int | str, permanent: bool = False) -> int:
        """Soft-delete one version (``permanent=True``: remove it, after a soft delete)."""
        params = {"permanent": "true"} if permanent else None
        path = f"/subjects/{self._subject(subject)}/versions/{self._version(version)}"
        try:
            return expect_int(f"DELETE {self.url}{path}", self._request("DELETE", path, params=params))
        finally:
            self._forget_subject(subject)

    def check_compatibility(
        self,
        subject: str,
        schema: Any,
        version: int | str | None = "latest",
        schema_type: str = "AVRO",
        references: Any = None,
    ) -> CompatibilityResult:
        """The registry's verdict on ``schema`` (with its ``references``) against one version
        (``None``: the versions the subject's level asks for); its messages become the reasons."""
        text, schema_type, refs = schema_text(schema), (schema_type or "AVRO").upper(), references_of(references)
        path = f"/compatibility/subjects/{self._subject(subject)}/versions"
        if version is not None:
            path += f"/{self._version(version)}"
        data = self._object(
            "POST",
            path,
            {"is_compatible": bool},
            {"messages": list},
            params={"verbose": "true"},
            body=self._body(text, schema_type, refs),
        )
        if data["is_compatible"]:
            return CompatibilityResult.ok()
        messages = data.get("messages") or ["the registry reports the schema as incompatible"]
        return CompatibilityResult(False, tuple(Incompatibility("", "", "", self._scrub(str(m))) for m in messages))

    def get_compatibility(self, subject: str | None = None) -> str:
        """The subject's level if one is set, else the global level."""
        if subject is None:
            data = self._object("GET", "/config", {"compatibilityLevel": str})
        else:
            path = f"/config/{self._subject(subject)}"
            data = self._object("GET", path, {"compatibilityLevel": str}, params={"defaultToGlobal": "true"})
        level: str = data["compatibilityLevel"]
        return level

    def set_compatibility(self, level: Strategy | str, subject: str | None = None) -> str:
        """Set the global level, or one subject's; returns the level set."""
        name = Strategy.parse(level).value
        path = "/config" if subject is None else f"/config/{self._subject(subject)}"
        answer = self._object("PUT", path, {"compatibility": str}, body={"compatibility": name})
        return str(answer["compatibility"])

    def delete_compatibility(self, subject: str) -> None:
        """Remove a subject's level so the global one applies."""
        self._request("DELETE", f"/config/{self._subject(subject)}")


def _auth(auth: tuple[str, str] | None, token: str | None) -> httpx.Auth | None:
    """Basic auth, a bearer token (kept out of the client's default headers and of its repr), or None."""
    import httpx  # the registry extra: present once a client is being built

    if auth is not None:
        user, password = auth
        return httpx.BasicAuth(user, password)
    if token is None:
        return None

    class BearerAuth(httpx.Auth):
        """Adds the bearer token to each request."""

        def __repr__(self) -> str:
            return "BearerAuth(***)"

        def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
            request.headers["Authorization"] = f"Bearer {token}"
            yield request

    return BearerAuth()
