"""HTTP client for Confluent-compatible schema registries (Confluent, Karapace, Redpanda,
Apicurio's ``ccompat`` API, and this package's own REST facade).

Needs the ``registry`` extra (httpx).
"""

from __future__ import annotations

import logging
import os
import random
import ssl
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from .. import compat
from .._cache import LRU
from ..compat import CompatibilityResult, Incompatibility, Strategy
from ..errors import IncompatibleSchemaError, RegistryError, SchemaError
from .base import ErrorCodes, RegisteredSchema, Registry, not_found, schema_text
from .config import RegistryConfig

if TYPE_CHECKING:
    import httpx

__all__ = ["ConfluentRegistry"]

log = logging.getLogger(__name__)

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"
_RETRY_STATUS = frozenset({500, 502, 503, 504})
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
        verify: TLSVerify = True,
        cert: Any = None,
        cache_size: int = 1000,
    ) -> None:
        _require_httpx()
        import httpx

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
        self._client: httpx.Client = httpx.Client(
            base_url=self.url,
            auth=_auth(auth, token),
            timeout=httpx.Timeout(connect=connect, read=read, write=read, pool=connect),
            verify=_ssl_context(verify, cert),
            headers={"Accept": _ACCEPT},
        )
        self._by_id: LRU[int, RegisteredSchema] = LRU(cache_size)
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
        self._by_schema.clear()

    # ---------------------------------------------------------------------------- transport

    def _request(self, method: str, path: str, *, params: dict[str, str] | None = None, body: Any = None) -> Any:
        import httpx  # loaded by the constructor

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

    def _error(self, method: str, path: str, response: httpx.Response, attempts: int) -> Exception:
        status = response.status_code
        code: Any = None
        message: Any = None
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
            incompatible = IncompatibleSchemaError(message, reasons=[message])
            incompatible.status, incompatible.error_code = status, code
            return incompatible
        if code == ErrorCodes.INVALID_SCHEMA:
            invalid = SchemaError(message)
            invalid.status, invalid.error_code = status, code
            return invalid
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
    def _body(schema: str, schema_type: str) -> dict[str, str]:
        body = {"schema": schema}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        return body

    @staticmethod
    def _entity(data: dict[str, Any], subject: str | None = None) -> RegisteredSchema:
        version = data.get("version")
        return RegisteredSchema(
            int(data["id"]),
            str(data["schema"]),
            str(data.get("schemaType") or "AVRO").upper(),
            data.get("subject", subject),
            None if version is None else int(version),
        )

    def _forget_subject(self, subject: str) -> None:
        self._by_schema.drop(lambda key: key[0] == subject)

    # ---------------------------------------------------------------------------- operations

    def register(self, subject: str, schema: Any, schema_type: str = "AVRO") -> int:
        """Register ``schema`` under ``subject`` and return its id (cached per subject and schema)."""
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
        """The schema with this global id (cached: ids never change their schema)."""
        schema_id = int(schema_id)
        cached = self._by_id.get(schema_id)
        if cached is not None:
            return cached
        data = self._request("GET", f"/schemas/ids/{schema_id}")
        got = RegisteredSchema(schema_id, str(data["schema"]), str(data.get("schemaType") or "AVRO").upper())
        return self._by_id.put(schema_id, got)

    def get_schema_versions(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        """The (subject, version) pairs that use this schema id."""
        params = {"deleted": "true"} if deleted else None
        data = self._request("GET", f"/schemas/ids/{int(schema_id)}/versions", params=params)
        return [(str(item["subject"]), int(item["version"])) for item in data]

    def get_version(self, subject: str, version: int | str = "latest", deleted: bool = False) -> RegisteredSchema:
        """One version of a subject (``"latest"`` or ``-1``: the newest)."""
        params = {"deleted": "true"} if deleted else None
        path = f"/subjects/{self._subject(subject)}/versions/{self._version(version)}"
        return self._entity(self._request("GET", path, params=params), subject)

    def lookup(self, subject: str, schema: Any, schema_type: str = "AVRO", deleted: bool = False) -> RegisteredSchema:
        """The version of ``subject`` holding ``schema`` (the registry compares them)."""
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
        """Subject names, sorted."""
        return sorted(
            str(s) for s in self._request("GET", "/subjects", params={"deleted": "true"} if deleted else None)
        )

    def list_versions(self, subject: str, deleted: bool = False) -> list[int]:
        """Version numbers of a subject, ascending."""
        params = {"deleted": "true"} if deleted else None
        return sorted(
            int(v) for v in self._request("GET", f"/subjects/{self._subject(subject)}/versions", params=params)
        )

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """Soft-delete a subject's versions (``permanent=True``: remove them, after a soft delete)."""
        params = {"permanent": "true"} if permanent else None
        try:
            return [int(v) for v in self._request("DELETE", f"/subjects/{self._subject(subject)}", params=params)]
        finally:
            self._forget_subject(subject)

    def delete_version(self, subject: str, version: int | str, permanent: bool = False) -> int:
        """Soft-delete one version (``permanent=True``: remove it, after a soft delete)."""
        params = {"permanent": "true"} if permanent else None
        path = f"/subjects/{self._subject(subject)}/versions/{self._version(version)}"
        try:
            return int(self._request("DELETE", path, params=params))
        finally:
            self._forget_subject(subject)

    def check_compatibility(
        self, subject: str, schema: Any, version: int | str | None = "latest", schema_type: str = "AVRO"
    ) -> CompatibilityResult:
        """The registry's verdict on ``schema`` against one version (``None``: the versions the
        subject's level asks for); its messages become the reasons."""
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
        """The subject's level if one is set, else the global level."""
        if subject is None:
            return str(self._request("GET", "/config")["compatibilityLevel"])
        data = self._request("GET", f"/config/{self._subject(subject)}", params={"defaultToGlobal": "true"})
        return str(data["compatibilityLevel"])

    def set_compatibility(self, level: Strategy | str, subject: str | None = None) -> str:
        """Set the global level, or one subject's; returns the level set."""
        name = Strategy.parse(level).value
        path = "/config" if subject is None else f"/config/{self._subject(subject)}"
        return str(self._request("PUT", path, body={"compatibility": name})["compatibility"])

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
