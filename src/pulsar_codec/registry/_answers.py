"""What the HTTP client does with a registry's answers before trusting them.

* :class:`Scrubber` removes credentials from text a server sent back (an error message, a
  compatibility message): a proxy that echoes request headers must not put the Authorization
  header into an exception.
* :func:`expect_object` and :func:`expect_list` check the shape of a success answer, so a registry
  (or a proxy in front of it) answering ``{}``, ``[1, 2, 3]`` or ``{"schema": 5}`` gives a
  :class:`~pulsar_codec.errors.RegistryError` naming the endpoint, never a ``KeyError`` or a
  wrong value. Error messages describe the answer's shape only, never its content.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from ..errors import RegistryError

__all__ = ["Scrubber", "expect_int", "expect_list", "expect_object"]

# "Authorization: Basic ...", "Proxy-Authorization=...", '"authorization": "Bearer ..."': the
# header name followed by a separator, then everything to the end of the line
_AUTHORIZATION_TEXT = re.compile(r"""(?i)\b((?:proxy-)?authorization)(["']?\s*[:=]\s*)[^\r\n]*""")
# a scheme followed by something shaped like a credential (it holds a digit or a base64/token sign)
_SCHEME_TEXT = re.compile(r"(?i)\b(basic|bearer)\s+(?=[A-Za-z0-9._~+/=-]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]+")
_HIDDEN = "***"


class Scrubber:
    """Removes one client's credentials, and any Authorization header text, from server text.

    Parameters
    ----------
    auth : (user, password), optional
        Basic-auth credentials: the password, ``user:password`` and its Base64 form are removed
        (the user name alone is not a secret).
    token : str, optional
        A bearer token.
    """

    def __init__(self, auth: tuple[str, str] | None = None, token: str | None = None) -> None:
        forms: set[str] = set()
        if auth is not None:
            user, password = auth
            pair = f"{user}:{password}"
            forms.update({password, pair, base64.b64encode(pair.encode()).decode("ascii")})
            forms.add(quote(password, safe=""))
        if token is not None:
            forms.add(token)
        # longest first, so a secret holding another one is removed whole
        self._secrets = sorted((f for f in forms if f), key=len, reverse=True)

    def __repr__(self) -> str:
        return f"Scrubber({len(self._secrets)} secret form(s))"

    def __call__(self, text: str) -> str:
        """``text`` without the credentials."""
        for secret in self._secrets:
            text = text.replace(secret, _HIDDEN)
        text = _AUTHORIZATION_TEXT.sub(lambda m: f"{m.group(1)}{m.group(2)}{_HIDDEN}", text)
        return _SCHEME_TEXT.sub(lambda m: f"{m.group(1)} {_HIDDEN}", text)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _is(value: Any, kind: type) -> bool:
    if kind is int:  # JSON true/false are not numbers
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


_NAMES = {int: "an integer", str: "a string", bool: "a boolean", list: "an array", dict: "an object"}
_PLURALS = {int: "integers", str: "strings", dict: "objects"}


def _unexpected(where: str, expected: str, got: str, status: int | None) -> RegistryError:
    return RegistryError(f"{where} answered with an unexpected body: expected {expected}, got {got}", status=status)


def expect_object(
    where: str,
    data: Any,
    required: Mapping[str, type],
    optional: Mapping[str, type] | None = None,
    *,
    status: int | None = None,
) -> dict[str, Any]:
    """``data`` if it is a JSON object whose ``required`` fields are present with their types and
    whose ``optional`` fields, when present and not null, have theirs.

    Raises
    ------
    RegistryError
        Naming ``where`` (method and URL), the expected shape and the kind of value received.
    """
    if data is None:
        raise _unexpected(where, "an object", "an empty body", status)
    if not isinstance(data, dict):
        raise _unexpected(where, "an object", _json_kind(data), status)
    for name, kind in required.items():
        if name not in data:
            raise _unexpected(where, f"an object with {_NAMES[kind]} {name!r}", f"no {name!r}", status)
        if not _is(data[name], kind):
            raise _unexpected(where, f"{_NAMES[kind]} {name!r}", f"{_json_kind(data[name])} {name!r}", status)
    for name, kind in (optional or {}).items():
        value = data.get(name)
        if value is not None and not _is(value, kind):
            raise _unexpected(where, f"{_NAMES[kind]} {name!r}", f"{_json_kind(value)} {name!r}", status)
    return data


def expect_list(where: str, data: Any, item: type, *, status: int | None = None) -> list[Any]:
    """``data`` if it is a JSON array of ``item`` values (int, str or dict); else a RegistryError."""
    expected = f"an array of {_PLURALS[item]}"
    if data is None:
        raise _unexpected(where, expected, "an empty body", status)
    if not isinstance(data, list):
        raise _unexpected(where, expected, _json_kind(data), status)
    for value in data:
        if not _is(value, item):
            raise _unexpected(where, expected, f"an array holding {_json_kind(value)}", status)
    return data


def expect_int(where: str, data: Any, *, status: int | None = None) -> int:
    """``data`` if it is a JSON integer; else a RegistryError."""
    if not _is(data, int):
        raise _unexpected(where, "an integer", "an empty body" if data is None else _json_kind(data), status)
    value: int = data
    return value
