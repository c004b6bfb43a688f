"""HTTP client for Confluent-compatible schema registries (Confluent, Karapace, Redpanda,
Apicurio's ``ccompat`` API, and this package's own REST facade).

Needs the ``registry`` extra (httpx).
"""

from __future__ import annotations

import logging
import os
import random
import ssl
import threading
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from .. import compat
from ..compat import CompatibilityResult, Incompatibility, Strategy
from ..errors import IncompatibleSchemaError, RegistryError, SchemaError
from .base import ErrorCodes, RegisteredSchema, Registry, not_found, schema_text

__all__ = ["ConfluentRegistry"]

log = logging.getLogger(__name__)

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"
_RETRY_STATUS = frozenset({500, 502, 503, 504})
_NOT_FOUND = frozenset({ErrorCodes.SUBJECT_NOT_FOUND, ErrorCodes.VERSION_NOT_FOUND, ErrorCodes.SCHEMA_NOT_FOUND})


def _httpx():
    try:
        import httpx
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("ConfluentRegistry needs the 'registry' extra: pip install 'pulsar-codec[registry]'") from exc
    return httpx


class _LRU:
    """A small thread-safe LRU mapping."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.data: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            value = self.data.get(key)
            if value is not None:
                self.data.move_to_end(key)
            return value

    def put(self, key, value) -> None:
        if self.size <= 0:
            return
        with self.lock:
            self.data[key] = value
            self.data.move_to_end(key)
            while len(self.data) > self.size:
                self.data.popitem(last=False)

    def drop(self, predicate) -> None:
        with self.lock:
            for key in [k for k in self.data if predicate(k)]:
                del self.data[key]

    def clear(self) -> None:
        with self.lock:
            self.data.clear()


def _split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """Remove ``user:password@`` from a URL (so it never shows up in messages) and return it."""
    parts = urlsplit(url)
    if parts.username is None:
        return url.rstrip("/"), None
    from urllib.parse import unquote

    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)).rstrip("/")
    return clean, (unquote(parts.username), unquote(parts.password or ""))


def _ssl_context(verify: bool | str | os.PathLike | ssl.SSLContext, cert) -> bool | ssl.SSLContext:
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
    timeout : float or (connect, read), default (5.0, 30.0)
        Seconds to wait for a connection and for an answer.
    retries : int, default 3
        Extra attempts after a connection error, a timeout or a 5xx answer (500, 502, 503, 504);
        4xx answers are never retried.
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

    Notes
    -----
    Schemas are immutable per id, so fetched schemas are cached; registrations and lookups are
    cached per subject and forgotten when this client deletes from that subject. Credentials never
    appear in ``repr``, exception messages or log records.
    """

    def __init__(
        self,
        url: str,
        *,
        auth: tuple[str, str] | None = None,
        token: str | None = None,
        timeout: float | tuple[float, float] = (5.0, 30.0),
        retries: int = 3,
        backoff: float = 0.2,
        max_backoff: float = 5.0,
        verify: bool | str | os.PathLike | ssl.SSLContext = True,
        cert: Any = None,
        cache_size: int = 1000,
    ) -> None:
        httpx = _httpx()
        self.url, url_auth = _split_userinfo(url)
        auth = auth or url_auth
        if auth is not None and token is not None:
            raise ValueError("give either auth (basic) or token (bearer), not both")
        self._auth_kind = "basic" if auth is not None else "bearer" if token is not None else None
        if isinstance(timeout, (int, float)):
            connect = read = float(timeout)
        else:
            connect, read = (float(t) for t in timeout)
        self.retries = max(int(retries), 0)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self._client = httpx.Client(
            base_url=self.url,
            auth=_auth(httpx, auth, token),
            timeout=httpx.Timeout(connect=connect, read=read, write=read, pool=connect),
            verify=_ssl_context(verify, cert),
            headers={"Accept": _ACCEPT},
        )
        self._by_id = _LRU(cache_size)
        self._by_schema = _LRU(cache_size)

    def __repr__(self) -> str:
        auth = f", auth={self._auth_kind!r}" if self._auth_kind else ""
        return f"ConfluentRegistry({self.url!r}{auth})"

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def clear_caches(self) -> None:
        """Forget every cached schema and id."""
        self._by_id.clear()
        self._by_schema.clear()

    # ---------------------------------------------------------------------------- transport

    def _request(self, method: str, path: str, *, params: dict | None = None, body: Any = None) -> Any:
        httpx = _httpx()
        headers = {"Content-Type": _CONTENT_TYPE} if body is not None else None
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            try:
                response = self._client.request(method, path, params=params, json=body, headers=headers)
            except httpx.TransportError as exc:
                # connection refused or reset, DNS, TLS, timeouts: the request may not have arrived
                problem = "timed out" if isinstance(exc, httpx.TimeoutException) else "failed"
                if attempt == attempts:
                    raise RegistryError(
                        f"{method} {self.url}{path} {problem} after {attempts} attempt(s): {type(exc).__name__}"
                    ) from None
                self._wait(attempt, f"{type(exc).__name__}", method, path)
                continue
            if response.status_code in _RETRY_STATUS and attempt < attempts:
                self._wait(attempt, f"HTTP {response.status_code}", method, path)
                continue
            if response.is_success:
                if response.status_code == 204 or not response.content:
                    return None
                try:
                    return response.json()
                except ValueError:
                    raise RegistryError(
                        f"{method} {self.url}{path} answered with a body that is not JSON",
                        status=response.status_code,
                    ) from None
            raise self._error(method, path, response, attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _wait(self, attempt: int, why: str, method: str, path: str) -> None:
        delay = min(self.backoff * 2 ** (attempt - 1), self.max_backoff)
        delay *= random.uniform(0.5, 1.0)  # jitter, so many clients do not retry in step
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

    def _error(self, method: str, path: str, response, attempts: int) -> Exception:
        status = response.status_code
        code, message = None, None
        try:
            body = response.json()
            if isinstance(body, dict):
                code, message = body.get("error_code"), body.get("message")
        except ValueError:
            pass
        if not isinstance(code, int):
            code = None
        where = f"{method} {self.url}{path}"
        if status in (401, 403):
            return RegistryError(f"{where}: authentication failed (HTTP {status})", status=status, error_code=code)
        message = str(message or response.reason_phrase or f"HTTP {status}")
        if status == 404 and code in _NOT_FOUND:
            return not_found(message, code)
        if status == 409 or code == ErrorCodes.INCOMPATIBLE_SCHEMA:
            exc = IncompatibleSchemaError(message, reasons=[message])
            exc.status, exc.error_code = status, code
            return exc
        if code == ErrorCodes.INVALID_SCHEMA:
            exc = SchemaError(message)
            exc.status, exc.error_code = status, code
            return exc
        suffix = f" after {attempts} attempt(s)" if status in _RETRY_STATUS else ""
        return RegistryError(f"{where}: {message} (HTTP {status}){suffix}", status=status, error_code=code)

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
    def _key(schema: str, schema_type: str) -> str:
        try:
            return compat.fingerprint(schema, schema_type)
        except SchemaError:
            return f"{schema_type}\n{schema}"

    @staticmethod
    def _body(schema: str, schema_type: str) -> dict:
        body = {"schema": schema}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        return body

    @staticmethod
    def _entity(data: dict, subject: str | None = None) -> RegisteredSchema:
        return RegisteredSchema(
            int(data["id"]),
            data["schema"],
            (data.get("schemaType") or "AVRO").upper(),
            data.get("subject", subject),
            data.get("version"),
        )

    def _forget_subject(self, subject: str) -> None:
        self._by_schema.drop(lambda key: key[0] == subject)

    # ---------------------------------------------------------------------------- operations

    def register(self, subject: str, schema: Any, schema_type: str = "AVRO") -> int:
        text, schema_type = schema_text(schema), (schema_type or "AVRO").upper()
        key = (subject, self._key(text, schema_type))
        cached = self._by_schema.get(key)
        if cached is not None:
            return cached
        data = self._request("POST", f"/subjects/{self._subject(subject)}/versions", body=self._body(text, schema_type))
        schema_id = int(data["id"])
        self._by_schema.put(key, schema_id)
        return schema_id

    def get_schema(self, schema_id: int) -> RegisteredSchema:
        schema_id = int(schema_id)
        cached = self._by_id.get(schema_id)
        if cached is not None:
            return cached
        data = self._request("GET", f"/schemas/ids/{schema_id}")
        got = RegisteredSchema(schema_id, data["schema"], (data.get("schemaType") or "AVRO").upper())
        self._by_id.put(schema_id, got)
        return got

    def get_schema_versions(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        params = {"deleted": "true"} if deleted else None
        data = self._request("GET", f"/schemas/ids/{int(schema_id)}/versions", params=params)
        return [(item["subject"], int(item["version"])) for item in data]

    def get_version(self, subject: str, version: int | str = "latest", deleted: bool = False) -> RegisteredSchema:
        params = {"deleted": "true"} if deleted else None
        path = f"/subjects/{self._subject(subject)}/versions/{self._version(version)}"
        return self._entity(self._request("GET", path, params=params), subject)

    def lookup(self, subject: str, schema: Any, schema_type: str = "AVRO", deleted: bool = False) -> RegisteredSchema:
        text, schema_type = schema_text(schema), (schema_type or "AVRO").upper()
        params = {"deleted": "true"} if deleted else None
        data = self._request(
            "POST", f"/subjects/{self._subject(subject)}", params=params, body=self._body(text, schema_type)
        )
        found = self._entity(data, subject)
        if not deleted:
            self._by_schema.put((subject, self._key(text, schema_type)), found.id)
        return found

    def list_subjects(self, deleted: bool = False) -> list[str]:
        return sorted(self._request("GET", "/subjects", params={"deleted": "true"} if deleted else None))

    def list_versions(self, subject: str, deleted: bool = False) -> list[int]:
        params = {"deleted": "true"} if deleted else None
        return sorted(
            int(v) for v in self._request("GET", f"/subjects/{self._subject(subject)}/versions", params=params)
        )

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        params = {"permanent": "true"} if permanent else None
        try:
            return [int(v) for v in self._request("DELETE", f"/subjects/{self._subject(subject)}", params=params)]
        finally:
            self._forget_subject(subject)

    def delete_version(self, subject: str, version: int | str, permanent: bool = False) -> int:
        params = {"permanent": "true"} if permanent else None
        path = f"/subjects/{self._subject(subject)}/versions/{self._version(version)}"
        try:
            return int(self._request("DELETE", path, params=params))
        finally:
            self._forget_subject(subject)

    def check_compatibility(
        self, subject: str, schema: Any, version: int | str | None = "latest", schema_type: str = "AVRO"
    ) -> CompatibilityResult:
        text, schema_type = schema_text(schema), (schema_type or "AVRO").upper()
        path = f"/compatibility/subjects/{self._subject(subject)}/versions"
        if version is not None:
            path += f"/{self._version(version)}"
        data = self._request("POST", path, params={"verbose": "true"}, body=self._body(text, schema_type))
        if data.get("is_compatible"):
            return CompatibilityResult.ok()
        messages = data.get("messages") or ["the registry reports the schema as incompatible"]
        return CompatibilityResult(False, tuple(Incompatibility("", "", "", str(m)) for m in messages))

    def get_compatibility(self, subject: str | None = None) -> str:
        if subject is None:
            return self._request("GET", "/config")["compatibilityLevel"]
        data = self._request("GET", f"/config/{self._subject(subject)}", params={"defaultToGlobal": "true"})
        return data["compatibilityLevel"]

    def set_compatibility(self, level: Strategy | str, subject: str | None = None) -> str:
        name = Strategy.parse(level).value
        path = "/config" if subject is None else f"/config/{self._subject(subject)}"
        return self._request("PUT", path, body={"compatibility": name})["compatibility"]

    def delete_compatibility(self, subject: str) -> None:
        self._request("DELETE", f"/config/{self._subject(subject)}")


def _auth(httpx, auth, token):
    if auth is not None:
        user, password = auth
        return httpx.BasicAuth(user, password)
    if token is not None:
        return _bearer_auth(httpx, token)
    return None


def _bearer_auth(httpx, token: str):
    class BearerAuth(httpx.Auth):
        """Adds the bearer token to each request; keeps it out of the client's default headers."""

        def __repr__(self) -> str:
            return "BearerAuth(***)"

        def auth_flow(self, request):
            request.headers["Authorization"] = f"Bearer {token}"
            yield request

    return BearerAuth()
