"""Topics of a namespace that match a pattern, listed through Pulsar's admin REST API.

pulsar-client for Python cannot list a namespace (its API has no ``GetTopicsOfNamespace``), so a
topics pattern is expanded here with the broker's web service instead:
``GET {admin_url}/admin/v2/namespaces/{tenant}/{namespace}/topics?mode=PERSISTENT`` answers the
full names of the namespace's topics, the partitions of a partitioned topic among them as
``<topic>-partition-<n>``.

Patterns follow Pulsar's pattern consumer: a regular expression over full topic names
(``persistent://tenant/namespace/topic``) that must match a name entirely; one without ``://`` is
taken in ``persistent://public/default/``. The namespace listed is the pattern's
``tenant/namespace``, which must be written literally. Java's and Python's regular expressions
share their common syntax; the pattern is read by Python's :mod:`re`.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from ..errors import PulsarCodecError

__all__ = ["PulsarAdminError", "TopicPattern", "matching_topics", "namespace_topics"]

#: the largest answer read from the admin API (a namespace of 100,000 topics takes about 10 MB)
MAX_ANSWER_BYTES = 64 << 20

# the characters Pulsar allows in tenant and namespace names (``NamedEntity``)
_NAME = re.compile(r"[-=:.\w]+")
_PARTITION_SUFFIX = re.compile(r"-partition-\d+\Z")
# the admin API's ``mode`` of each topic domain
_MODES = {"persistent": "PERSISTENT", "non-persistent": "NON_PERSISTENT"}


class PulsarAdminError(PulsarCodecError):
    """The admin API could not be asked, or did not answer with a list of topics.

    Attributes
    ----------
    url : str
        The URL asked.
    status : int or None
        The HTTP status of the answer (None when no answer came).
    """

    def __init__(self, message: str, *, url: str, status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


@dataclass(frozen=True)
class TopicPattern:
    """A topics pattern, split into what is listed and what is matched.

    Attributes
    ----------
    text : str
        The pattern as given.
    regex : str
        The regular expression a full topic name must match entirely (``text``, in
        ``persistent://public/default/`` when it names no domain).
    domain : {"persistent", "non-persistent"}
    namespace : str
        ``tenant/namespace``: the namespace whose topics are listed.
    """

    text: str
    regex: str
    domain: str
    namespace: str

    @classmethod
    def parse(cls, text: str) -> TopicPattern:
        """Read a pattern (``orders-.*``, ``tenant/ns/orders-.*`` or ``persistent://tenant/ns/orders-.*``).

        Raises
        ------
        ValueError
            An empty pattern, an unknown domain, a tenant or namespace that is not written
            literally, or a regular expression Python cannot compile.
        """
        given = text.strip()
        if not given:
            raise ValueError("the topics pattern is empty")
        if "://" in given:
            regex = given
        elif "/" not in given:
            regex = f"persistent://public/default/{given}"
        else:
            regex = f"persistent://{given}"
        domain, _, rest = regex.partition("://")
        parts = rest.split("/", 2)
        if domain not in _MODES:
            raise ValueError(
                f"topics pattern {given!r}: the domain must be 'persistent' or 'non-persistent', written literally"
            )
        if len(parts) < 3 or not parts[2]:
            raise ValueError(
                f"topics pattern {given!r} must be 'topic-regex', 'tenant/namespace/topic-regex' or "
                "'persistent://tenant/namespace/topic-regex'"
            )
        tenant, namespace = parts[0], parts[1]
        for what, name in (("tenant", tenant), ("namespace", namespace)):
            if not _NAME.fullmatch(name):
                raise ValueError(
                    f"topics pattern {given!r}: the {what} {name!r} must be written literally (the namespace "
                    "whose topics are listed); only the topic part may be a regular expression"
                )
        try:
            re.compile(regex)
        except re.error as exc:
            raise ValueError(f"topics pattern {given!r} is not a valid regular expression: {exc}") from None
        return cls(given, regex, domain, f"{tenant}/{namespace}")

    @property
    def mode(self) -> str:
        """The admin API's ``mode`` listing this pattern's domain."""
        return _MODES[self.domain]

    def select(self, names: list[str]) -> tuple[str, ...]:
        """The topics of ``names`` this pattern matches, partitions collapsed into their topic, sorted."""
        compiled = re.compile(self.regex)
        topics = {_PARTITION_SUFFIX.sub("", name) for name in names}
        return tuple(sorted(t for t in topics if compiled.fullmatch(t)))


def _get_json(url: str, token: str | None, timeout_ms: int) -> Any:
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout_ms / 1000) as answer:
            body = answer.read(MAX_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as exc:
        try:
            detail = exc.read(500).decode("utf-8", "replace").strip()
        except OSError:
            detail = ""
        finally:
            exc.close()
        raise PulsarAdminError(
            f"the Pulsar admin API answered {exc.code} {exc.reason} to GET {url}" + (f": {detail}" if detail else ""),
            url=url,
            status=exc.code,
        ) from None
    except (urllib.error.URLError, OSError) as exc:  # refused, DNS, TLS, timeouts
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise PulsarAdminError(f"the Pulsar admin API at {url} is unreachable: {reason}", url=url) from None
    if len(body) > MAX_ANSWER_BYTES:
        raise PulsarAdminError(f"the answer of {url} is larger than {MAX_ANSWER_BYTES} bytes", url=url, status=200)
    try:
        return json.loads(body)
    except ValueError:
        raise PulsarAdminError(f"the answer of {url} is not JSON", url=url, status=200) from None


def namespace_topics(
    admin_url: str, namespace: str, *, mode: str = "PERSISTENT", token: str | None = None, timeout_ms: int = 30_000
) -> list[str]:
    """The full names the admin API lists for a namespace (partitions as ``<topic>-partition-<n>``).

    Parameters
    ----------
    admin_url : str
        The broker's web service, ``http(s)://host:port`` (a path prefix is kept).
    namespace : str
        ``tenant/namespace``.
    mode : {"PERSISTENT", "NON_PERSISTENT", "ALL"}
    token : str, optional
        Sent as ``Authorization: Bearer <token>``.
    timeout_ms : int
        For connecting and for each read of the answer.

    Raises
    ------
    PulsarAdminError
        No answer, an HTTP error status (with the URL and the broker's text), or an answer that
        is not a JSON list of names.
    ValueError
        ``admin_url`` is not an ``http(s)://`` URL.
    """
    base = admin_url.strip().rstrip("/")
    parsed = urllib.parse.urlsplit(base)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"the admin URL must be http(s)://host:port, got {admin_url!r}")
    tenant, _, name = namespace.partition("/")
    path = f"/admin/v2/namespaces/{urllib.parse.quote(tenant, safe='')}/{urllib.parse.quote(name, safe='')}/topics"
    url = f"{base}{path}?{urllib.parse.urlencode({'mode': mode})}"
    found = _get_json(url, token, timeout_ms)
    if not isinstance(found, list) or not all(isinstance(n, str) for n in found):
        raise PulsarAdminError(f"the answer of {url} is not a JSON list of topic names", url=url, status=200)
    return found


def matching_topics(
    admin_url: str, pattern: str | TopicPattern, *, token: str | None = None, timeout_ms: int = 30_000
) -> tuple[str, ...]:
    """The topics (full names, without ``-partition-<n>``, sorted) that ``pattern`` matches now.

    Parameters
    ----------
    admin_url, token, timeout_ms
        As for :func:`namespace_topics`.
    pattern : str or TopicPattern
        See :meth:`TopicPattern.parse`.

    Returns
    -------
    tuple of str
        Empty when nothing matches.
    """
    if not isinstance(pattern, TopicPattern):
        pattern = TopicPattern.parse(pattern)
    names = namespace_topics(admin_url, pattern.namespace, mode=pattern.mode, token=token, timeout_ms=timeout_ms)
    return pattern.select(names)
