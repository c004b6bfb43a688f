"""A picklable recipe for a registry client: :class:`RegistryConfig`.

A client holds connections and locks and cannot travel to another process; its configuration can.
Spark executors, worker processes and pickled decoders rebuild their client from one of these.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Registry

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "DEFAULT_TOTAL_TIMEOUT", "RegistryConfig"]

DEFAULT_TOTAL_TIMEOUT = 10.0  # seconds one HTTP registry operation may take, retries included
DEFAULT_MAX_RESPONSE_BYTES = 64 * 2**20  # largest registry answer the HTTP client reads

_SECRET = frozenset({"auth", "token"})


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


@dataclass(frozen=True)
class RegistryConfig:
    """How to open a registry client: an HTTP(S) URL or the path of an embedded registry's file.

    Exactly one of ``url`` and ``path`` is given. The other fields are the options of
    :class:`~pulsar_codec.registry.ConfluentRegistry` (for ``url``); ``timeout`` also applies to
    :class:`~pulsar_codec.registry.LocalRegistry` (seconds to wait for the database lock; the read
    timeout when it is a pair). A ``timeout`` of None uses each client's own default. The config is frozen, hashable and picklable (unless ``verify`` is
    an ``ssl.SSLContext``), and its ``repr`` never shows credentials.

    Parameters
    ----------
    url : str, optional
        Base URL of a Confluent-compatible registry; ``user:password@`` in it moves to ``auth``.
    path : str or os.PathLike, optional
        SQLite file of a :class:`~pulsar_codec.registry.LocalRegistry` (made absolute), or
        ``":memory:"`` (a new, empty registry wherever it is built).
    auth : (user, password), optional
    token : str, optional
        Bearer token.
    timeout : float or (connect, read), optional
    retries, backoff, max_backoff, verify, cert, cache_size, total_timeout, max_response_bytes
        As for :class:`~pulsar_codec.registry.ConfluentRegistry`.
    """

    url: str | None = None
    path: str | None = None
    auth: tuple[str, str] | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    timeout: float | tuple[float, float] | None = None
    retries: int = 3
    backoff: float = 0.2
    max_backoff: float = 5.0
    verify: Any = True
    cert: Any = None
    cache_size: int = 1000
    total_timeout: float | None = DEFAULT_TOTAL_TIMEOUT
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES

    def __post_init__(self) -> None:
        if (self.url is None) == (self.path is None):
            raise ValueError("RegistryConfig needs exactly one of url and path")
        if self.auth is not None and self.token is not None:
            raise ValueError("give either auth (basic) or token (bearer), not both")
        if self.url is not None:
            from .http import _split_userinfo

            url, url_auth = _split_userinfo(str(self.url))
            object.__setattr__(self, "url", url)
            if self.auth is None and url_auth is not None:
                object.__setattr__(self, "auth", url_auth)
        if self.path is not None:
            path = os.fspath(self.path)
            object.__setattr__(self, "path", path if path in ("", ":memory:") else os.path.abspath(path))
        if self.auth is not None:
            user, password = self.auth
            object.__setattr__(self, "auth", (str(user), str(password)))
        timeout = self.timeout
        if timeout is not None:
            object.__setattr__(
                self,
                "timeout",
                float(timeout) if isinstance(timeout, (int, float)) else tuple(float(t) for t in timeout),
            )
        if self.total_timeout is not None:
            object.__setattr__(self, "total_timeout", float(self.total_timeout))
        object.__setattr__(self, "verify", _freeze(self.verify))
        object.__setattr__(self, "cert", _freeze(self.cert))

    @classmethod
    def of(cls, registry: Any) -> RegistryConfig:
        """The config of ``registry``: a RegistryConfig (as it is), a client built from a config
        (``LocalRegistry``, ``ConfluentRegistry``: they keep it as ``.config``), an ``http(s)://``
        URL, or a file path.

        Raises
        ------
        TypeError
            ``registry`` is none of those (a Mapping, for instance, has no config).
        """
        if isinstance(registry, RegistryConfig):
            return registry
        if isinstance(registry, str):
            if registry.lower().startswith(("http://", "https://")):
                return cls(url=registry)
            return cls(path=registry)
        if isinstance(registry, os.PathLike):
            return cls(path=os.fspath(registry))
        config = getattr(registry, "config", None)
        if isinstance(config, RegistryConfig):
            return config
        raise TypeError(
            f"no RegistryConfig for {type(registry).__name__}: pass a RegistryConfig, a LocalRegistry, "
            "a ConfluentRegistry, an http(s) URL or a registry file path"
        )

    @property
    def is_memory(self) -> bool:
        """True for an in-memory embedded registry: building it gives a new, empty one."""
        return self.path in ("", ":memory:")

    def build(self, *, create: bool = True) -> Registry:
        """Open a new client for this configuration.

        Parameters
        ----------
        create : bool, default True
            For a ``path``: create the database file when it is missing. ``create=False`` opens
            an existing registry only (read-only commands), raising
            :class:`~pulsar_codec.errors.RegistryError` when there is none. Ignored for a ``url``.
        """
        if self.path is not None:
            from .local import DEFAULT_LOCK_TIMEOUT, LocalRegistry

            timeout = self.timeout
            if timeout is None:
                timeout = DEFAULT_LOCK_TIMEOUT
            elif not isinstance(timeout, float):
                timeout = timeout[1]
            return LocalRegistry(self.path, timeout=timeout, create=create)
        from .http import ConfluentRegistry

        assert self.url is not None  # __post_init__ checked that one of url / path is set
        return ConfluentRegistry(
            self.url,
            auth=self.auth,
            token=self.token,
            timeout=self.timeout,
            retries=self.retries,
            backoff=self.backoff,
            max_backoff=self.max_backoff,
            verify=self.verify,
            cert=self.cert,
            cache_size=self.cache_size,
            total_timeout=self.total_timeout,
            max_response_bytes=self.max_response_bytes,
        )

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            if f.name in _SECRET:
                parts.append(f"{f.name}=***")
            elif f.name == "cert" and isinstance(value, tuple) and len(value) > 2:
                parts.append(f"cert={value[:2]!r} + password ***")  # the key's password stays hidden
            else:
                parts.append(f"{f.name}={value!r}")
        return f"RegistryConfig({', '.join(parts)})"
