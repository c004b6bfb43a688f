"""Pure-Python twin of the JSON kernel (compiled twin: ``json_c.pyx``).

:func:`transcode` parses each JSON payload once, following a *program* (a tree of ``J_*`` nodes, see
:mod:`pulsar_codec._kernels.defs` and ``formats/json/mapping.py``), and writes the payload's Avro
binary encoding under the shadow schema the program stands for. :func:`decode` fills the Avro
decoder's column builders with what the payloads hold: here by transcoding and running the Avro
kernel on the bytes, in the compiled twin by appending each value as it is parsed; the builders and
the errors are the same. A program node is a tuple whose first item is its op:

``(J_NULL,)``              null; writes nothing
``(J_BOOL,)``              true / false -> one byte
``(J_INT,)`` ``(J_LONG,)`` an integral number (``1.0`` and ``1e3`` count) -> zigzag varint
``(J_TIME_MILLIS,)`` ``(J_TIME_MICROS,)``  the same, for a Pulsar JSON time-millis / time-micros: a
                           number outside [0, one day) is JSON_NUMBER_RANGE
``(J_FLOAT,)``             a number -> float32 LE: the correctly rounded double, then rounded to float32
                           (``struct.pack('<f', float(text))``); a finite value past the float32 range
                           is JSON_NUMBER_RANGE
``(J_DOUBLE,)``            a number -> float64 LE, ``float(text)``; a value past the double range (which
                           ``float`` makes infinite) is JSON_NUMBER_RANGE
``(J_STRING,)``            a string -> Avro string
``(J_BYTES_B64,)``         a base64 string (standard alphabet, padding required) -> Avro bytes
``(J_FIXED_B64, n)``       a base64 string of exactly n bytes -> n raw bytes
``(J_ENUM, symbols)``      one of the strings ``symbols`` -> zigzag index
``(J_TIMESTAMP,)``         RFC 3339 date-time -> microseconds since the epoch (UTC), zigzag long
``(J_DATE,)``              ``YYYY-MM-DD`` -> days since the epoch, zigzag int
``(J_TIME,)``              ``HH:MM:SS[.f]`` with an optional ``Z`` or offset, which is checked but not
                           applied (the local clock value is kept) -> microsecond of the day, zigzag long
``(J_TEXT,)``              any JSON value -> an Avro string holding its bytes in the payload
``(J_NULLABLE, child)``    null -> zigzag 0; else zigzag 1 and the child
``(J_ARRAY, child)``       an array -> one Avro block of items, then 0
``(J_MAP, child)``         an object -> one Avro map block, then 0; every entry is kept, duplicate keys
                           included, in payload order
``(J_OBJECT, fields, keep_extra)``  an object -> Avro record: ``fields`` is a tuple of ``(name, child,
                           missing)``, written in that order whatever the key order; an absent property
                           writes ``missing`` (Avro bytes) or, when it is None, is JSON_MISSING_REQUIRED
                           (detail = the field's index). Other keys are checked and skipped; when a key
                           repeats, its last value wins. ``keep_extra``: one more field, a nullable
                           string holding ``{"k":v,...}`` of the other keys: each member's bytes from its key's
                           opening quote to its value's last byte, as in the payload, joined by commas.

Errors are ``(code, row, offset, detail)``; the offset is the byte in the payload where the
offending token starts (the closing ``}`` for a missing property, the payload length for a
truncated one). Details: JSON_UNEXPECTED_BYTE the byte; JSON_WRONG_TYPE the JSON kind found (0 null,
1 boolean, 2 number, 3 string, 4 array, 5 object, decided by the value's first byte);
JSON_NUMBER_RANGE and JSON_BAD_FORMAT the node's op; JSON_DEPTH_EXCEEDED the limit; others 0.
Strings must be valid UTF-8 (the offset is the first byte of the ill-formed sequence); a lone
surrogate escape is JSON_INVALID_UTF8 at its backslash.
"""

from __future__ import annotations

import base64
import re
import struct
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeAlias

import numpy as np
import numpy.typing as npt

from . import avro_py
from ._typing import ArrayLike, ByteData, Int64Array, KernelError, UInt8Array
from .defs import (
    J_ARRAY,
    J_BOOL,
    J_BYTES_B64,
    J_DATE,
    J_DOUBLE,
    J_ENUM,
    J_FIXED_B64,
    J_FLOAT,
    J_INT,
    J_LONG,
    J_MAP,
    J_NULL,
    J_NULLABLE,
    J_OBJECT,
    J_STRING,
    J_TEXT,
    J_TIME,
    J_TIME_MICROS,
    J_TIME_MILLIS,
    J_TIMESTAMP,
    JSON_BAD_FORMAT,
    JSON_DEPTH_EXCEEDED,
    JSON_INVALID_UTF8,
    JSON_MAX_DEPTH,
    JSON_MISSING_REQUIRED,
    JSON_NUMBER_RANGE,
    JSON_TOO_MANY_EMPTY_ITEMS,
    JSON_TRUNCATED,
    JSON_UNEXPECTED_BYTE,
    JSON_UNKNOWN_ENUM,
    JSON_WRONG_TYPE,
)

__all__ = ["Program", "decode", "transcode"]

BoolArray: TypeAlias = npt.NDArray[np.bool_]
# the result of transcode: errors, Avro bytes, offsets (n + 1), validity (None: every row valid)
Transcoded: TypeAlias = tuple[list[KernelError], UInt8Array, Int64Array, BoolArray | None]
# a prepared node: the op first, then what that op needs (see Program)
Node: TypeAlias = tuple[Any, ...]

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
# the values an integral node takes: (lowest, highest)
_INT_BOUNDS = {
    J_INT: (_INT32_MIN, _INT32_MAX),
    J_LONG: (_INT64_MIN, _INT64_MAX),
    J_TIME_MILLIS: (0, 86_400_000 - 1),
    J_TIME_MICROS: (0, 86_400_000_000 - 1),
}
_SCALARS = (
    J_NULL,
    J_BOOL,
    J_INT,
    J_LONG,
    J_FLOAT,
    J_DOUBLE,
    J_STRING,
    J_BYTES_B64,
    J_TIMESTAMP,
    J_DATE,
    J_TIME,
    J_TEXT,
    J_TIME_MILLIS,
    J_TIME_MICROS,
)

_WS = re.compile(rb"[ \t\n\r]*")
_PLAIN = re.compile(rb'[^"\\\x00-\x1f]*')
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_NUMBER_PARTS = re.compile(rb"-?([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?")
_BASE64 = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_DATE = re.compile(rb"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_CLOCK = rb"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?"
_OFFSET = rb"(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))"
_TIMESTAMP = re.compile(rb"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]" + _CLOCK + _OFFSET)
_TIME = re.compile(_CLOCK + _OFFSET + b"?")
_ESCAPES = {0x22: b'"', 0x5C: b"\\", 0x2F: b"/", 0x62: b"\b", 0x66: b"\f", 0x6E: b"\n", 0x72: b"\r", 0x74: b"\t"}
_HEX = {c: int(chr(c), 16) for c in b"0123456789abcdefABCDEF"}
# JSON kind by a value's first byte (-1: no value starts with it)
_KIND = [-1] * 256
for _byte, _kind in ((b"n", 0), (b"t", 1), (b"f", 1), (b"-0123456789", 2), (b'"', 3), (b"[", 4), (b"{", 5)):
    for _c in _byte:
        _KIND[_c] = _kind
_DAYS_IN_MONTH = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class _Fail(Exception):
    """A bad payload: the code, the payload offset and the detail of its error."""

    def __init__(self, code: int, offset: int, detail: int = 0) -> None:
        super().__init__(code, offset, detail)
        self.code, self.offset, self.detail = code, offset, detail


def _zigzag(value: int) -> bytes:
    """The Avro varint of ``value`` (zigzag, 64-bit)."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (year 0 included)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _valid_date(year: int, month: int, day: int) -> bool:
    if not 1 <= month <= 12 or day < 1:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return day <= _DAYS_IN_MONTH[month] + (1 if month == 2 and leap else 0)


def _clock_micros(hour: bytes, minute: bytes, second: bytes, fraction: bytes | None) -> int | None:
    h, m, s = int(hour), int(minute), int(second)
    if h > 23 or m > 59 or s > 59:
        return None
    micros = int((fraction or b"").ljust(6, b"0")[:6])  # digits past microseconds are floored
    return (h * 3600 + m * 60 + s) * 1_000_000 + micros


def _offset_seconds(sign: bytes | None, hour: bytes | None, minute: bytes | None) -> int | None:
    if sign is None or hour is None or minute is None:
        return 0
    h, m = int(hour), int(minute)
    if h > 23 or m > 59:
        return None
    seconds = h * 3600 + m * 60
    return -seconds if sign == b"-" else seconds


def _timestamp_micros(text: bytes) -> int | None:
    """Microseconds since the epoch of an RFC 3339 date-time, None if ``text`` is not one."""
    m = _TIMESTAMP.fullmatch(text)
    if m is None:
        return None
    year, month, day = int(m[1]), int(m[2]), int(m[3])
    clock = _clock_micros(m[4], m[5], m[6], m[7])
    offset = _offset_seconds(m[8], m[9], m[10])
    if not _valid_date(year, month, day) or clock is None or offset is None:
        return None
    return _days_from_civil(year, month, day) * 86_400_000_000 + clock - offset * 1_000_000


def _date_days(text: bytes) -> int | None:
    m = _DATE.fullmatch(text)
    if m is None:
        return None
    year, month, day = int(m[1]), int(m[2]), int(m[3])
    return _days_from_civil(year, month, day) if _valid_date(year, month, day) else None


def _time_micros(text: bytes) -> int | None:
    m = _TIME.fullmatch(text)
    if m is None:
        return None
    clock = _clock_micros(m[1], m[2], m[3], m[4])
    return None if clock is None or _offset_seconds(m[5], m[6], m[7]) is None else clock


def _base64(text: bytes) -> bytes | None:
    if _BASE64.fullmatch(text) is None:
        return None
    return base64.b64decode(text)


def _exponent(text: bytes | None) -> int:
    """A number's decimal exponent, saturated at +-10**18 (as the compiled twin saturates it): past any
    payload's digit count, and never an ``int()`` of thousands of digits (Python refuses those)."""
    if not text:
        return 0
    digits = text.lstrip(b"+-").lstrip(b"0")
    magnitude = int(digits) if 0 < len(digits) <= 18 else (10**18 if digits else 0)
    return -magnitude if text[:1] == b"-" else magnitude


def _integral(text: bytes) -> int | None:
    """The exact value of a JSON number, or None when it has a fractional part."""
    m = _NUMBER_PARTS.fullmatch(text)
    assert m is not None  # the scanner matched the JSON grammar already
    whole, fraction, exponent = m[1], m[2] or b"", _exponent(m[3])
    digits = (whole + fraction).lstrip(b"0")
    scale = exponent - len(fraction)
    trimmed = digits.rstrip(b"0")
    scale += len(digits) - len(trimmed)
    if not trimmed:
        return 0
    if scale < 0:
        return None
    if len(trimmed) + scale > 19:  # at least 10**19: past int64 either way
        return _INT64_MAX + 2
    value: int = int(trimmed) * 10**scale
    return -value if text[:1] == b"-" else value


def _check(tree: Any, depth: int) -> Node:
    """Validate one node of a program tree and return its prepared form."""
    if depth > JSON_MAX_DEPTH:
        raise ValueError(f"transcode program nested deeper than {JSON_MAX_DEPTH} nodes")
    if not isinstance(tree, tuple) or not tree or type(tree[0]) is not int:
        raise ValueError(f"a transcode program node is a tuple starting with its op, not {tree!r}")
    op = tree[0]
    if op in _SCALARS:
        if len(tree) != 1:
            raise ValueError(f"node {op} takes no arguments: {tree!r}")
        return (op,)
    if op == J_FIXED_B64:
        if len(tree) != 2 or type(tree[1]) is not int or tree[1] < 0:
            raise ValueError(f"J_FIXED_B64 needs a size >= 0: {tree!r}")
        return (op, tree[1])
    if op == J_ENUM:
        if len(tree) != 2 or not isinstance(tree[1], tuple) or not all(isinstance(s, str) for s in tree[1]):
            raise ValueError(f"J_ENUM needs a tuple of symbols: {tree!r}")
        symbols = {s.encode("utf-8", "surrogatepass"): i for i, s in enumerate(tree[1])}
        if len(symbols) != len(tree[1]):
            raise ValueError(f"J_ENUM symbols repeat: {tree!r}")
        return (op, symbols)
    if op in (J_NULLABLE, J_ARRAY, J_MAP):
        if len(tree) != 2:
            raise ValueError(f"node {op} needs one child: {tree!r}")
        return (op, _check(tree[1], depth + 1))
    if op == J_OBJECT:
        if len(tree) != 3 or not isinstance(tree[1], tuple) or type(tree[2]) is not bool:
            raise ValueError(f"J_OBJECT needs (fields, keep_extra): {tree!r}")
        index: dict[bytes, int] = {}
        children: list[Node] = []
        missing: list[bytes | None] = []
        for field in tree[1]:
            if not (isinstance(field, tuple) and len(field) == 3 and isinstance(field[0], str)):
                raise ValueError(f"a J_OBJECT field is (name, child, missing): {field!r}")
            if field[2] is not None and not isinstance(field[2], bytes):
                raise ValueError(f"a field's missing value is bytes or None: {field!r}")
            name = field[0].encode("utf-8", "surrogatepass")
            if name in index:
                raise ValueError(f"J_OBJECT field {field[0]!r} repeats")
            index[name] = len(children)
            children.append(_check(field[1], depth + 1))
            missing.append(field[2])
        return (op, index, tuple(children), tuple(missing), tree[2])
    raise ValueError(f"unknown transcode op {op!r}")


class Program:
    """A transcode program tree, checked and prepared once (see the module docstring for the nodes).

    Parameters
    ----------
    tree
        The root node, usually a ``J_OBJECT``. A malformed tree is a ValueError.
    avro
        The Avro program ``(ops, kids)`` of the tree's shadow schema read as itself, which
        :func:`decode` needs (the compiled twin binds each node to its op there).
    """

    def __init__(self, tree: tuple[Any, ...], avro: tuple[Any, Any] | None = None) -> None:
        self.tree = tree
        self.root = _check(tree, 1)
        if avro is not None and not (isinstance(avro, tuple) and len(avro) == 2):
            raise ValueError("avro is the Avro program (ops, kids)")
        if avro is not None and not avro[0]:
            raise ValueError("the Avro program has no ops")
        self.avro = avro


class _Row:
    """One payload being transcoded: the parser's position state and the output it appends to."""

    def __init__(self, out: bytearray) -> None:
        self.buf = b""
        self.n = 0
        self.out = out
        self.depth = 0
        self.dispatch: dict[int, Callable[[Node, int], int]] = {
            J_NULL: self.null,
            J_BOOL: self.boolean,
            J_INT: self.integer,
            J_LONG: self.integer,
            J_TIME_MILLIS: self.integer,
            J_TIME_MICROS: self.integer,
            J_FLOAT: self.real,
            J_DOUBLE: self.real,
            J_STRING: self.string,
            J_BYTES_B64: self.formatted,
            J_FIXED_B64: self.formatted,
            J_ENUM: self.enum,
            J_TIMESTAMP: self.formatted,
            J_DATE: self.formatted,
            J_TIME: self.formatted,
            J_TEXT: self.text,
            J_NULLABLE: self.nullable,
            J_ARRAY: self.array,
            J_MAP: self.mapping,
            J_OBJECT: self.record,
        }

    # -- the JSON grammar --------------------------------------------------------------------------
    def ws(self, pos: int) -> int:
        """Skip whitespace; the end of the payload here is a truncated value."""
        m = _WS.match(self.buf, pos)
        assert m is not None
        pos = m.end()
        if pos >= self.n:
            raise _Fail(JSON_TRUNCATED, self.n)
        return pos

    def expect(self, pos: int, kind: int) -> None:
        found = _KIND[self.buf[pos]]
        if found != kind:
            if found < 0:
                raise _Fail(JSON_UNEXPECTED_BYTE, pos, self.buf[pos])
            self.wrong_kind(pos, found)

    def wrong_kind(self, pos: int, found: int) -> NoReturn:
        """A value of another kind than the schema's starts at ``pos``: it is checked first, so a
        payload that is no JSON at all (``nope``, ``nullx``) is invalid JSON, not the wrong type.
        Twin: json_c.wrong_kind."""
        end = self.skip(pos)
        if self.depth == 0:  # the payload's root value: only whitespace may follow it
            m = _WS.match(self.buf, end)
            assert m is not None
            if m.end() < self.n:
                raise _Fail(JSON_UNEXPECTED_BYTE, m.end(), self.buf[m.end()])
        raise _Fail(JSON_WRONG_TYPE, pos, found)

    def enter(self, pos: int) -> None:
        self.depth += 1
        if self.depth > JSON_MAX_DEPTH:
            raise _Fail(JSON_DEPTH_EXCEEDED, pos, JSON_MAX_DEPTH)

    def literal(self, pos: int, word: bytes) -> int:
        for i, c in enumerate(word):
            if pos + i >= self.n:
                raise _Fail(JSON_TRUNCATED, self.n)
            if self.buf[pos + i] != c:
                raise _Fail(JSON_UNEXPECTED_BYTE, pos + i, self.buf[pos + i])
        return pos + len(word)

    def number_end(self, pos: int) -> int:
        """The end of the number at ``pos`` (its first byte is ``-`` or a digit)."""
        buf, n = self.buf, self.n
        m = _NUMBER.match(buf, pos)
        if m is None:  # a minus sign without a digit
            self.fail_at(pos + 1)
        assert m is not None
        end = m.end()
        # "1." without a digit (after an exponent, as in "1e4.", the number ends at the ".")
        if m[1] is None and m[2] is None and end < n and buf[end] == 0x2E:
            self.fail_at(end + 1)
        if m[2] is None and end < n and buf[end] in b"eE":  # "1e" without a digit
            at = end + 1
            self.fail_at(at + 1 if at < n and buf[at] in b"+-" else at)
        return end

    def fail_at(self, pos: int) -> None:
        """A number stops at ``pos`` where a digit must follow."""
        if pos >= self.n:
            raise _Fail(JSON_TRUNCATED, self.n)
        raise _Fail(JSON_UNEXPECTED_BYTE, pos, self.buf[pos])

    def hex4(self, pos: int) -> int:
        value = 0
        for i in range(pos, pos + 4):
            if i >= self.n:
                raise _Fail(JSON_TRUNCATED, self.n)
            digit = _HEX.get(self.buf[i])
            if digit is None:
                raise _Fail(JSON_UNEXPECTED_BYTE, i, self.buf[i])
            value = value * 16 + digit
        return value

    def read_string(self, pos: int) -> tuple[bytes, int]:
        """The UTF-8 bytes of the string at ``pos`` (its opening quote) and the position after it."""
        buf, n = self.buf, self.n
        pos += 1
        parts: list[bytes] = []
        while True:
            m = _PLAIN.match(buf, pos)
            assert m is not None
            end = m.end()
            if end > pos:
                chunk = buf[pos:end]
                if not chunk.isascii():
                    try:
                        chunk.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise _Fail(JSON_INVALID_UTF8, pos + exc.start) from None
                parts.append(chunk)
            if end >= n:
                raise _Fail(JSON_TRUNCATED, n)
            c = buf[end]
            if c == 0x22:
                return b"".join(parts), end + 1
            if c != 0x5C:
                raise _Fail(JSON_UNEXPECTED_BYTE, end, c)
            piece, pos = self.escape(end)
            parts.append(piece)

    def escape(self, pos: int) -> tuple[bytes, int]:
        """Decode the escape at ``pos`` (its backslash)."""
        buf, n = self.buf, self.n
        if pos + 1 >= n:
            raise _Fail(JSON_TRUNCATED, n)
        c = buf[pos + 1]
        simple = _ESCAPES.get(c)
        if simple is not None:
            return simple, pos + 2
        if c != 0x75:
            raise _Fail(JSON_UNEXPECTED_BYTE, pos + 1, c)
        code = self.hex4(pos + 2)
        if 0xD800 <= code < 0xDC00:
            if pos + 7 < n and buf[pos + 6] == 0x5C and buf[pos + 7] == 0x75:
                low = self.hex4(pos + 8)
                if 0xDC00 <= low < 0xE000:
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    return chr(code).encode("utf-8"), pos + 12
            raise _Fail(JSON_INVALID_UTF8, pos)
        if 0xDC00 <= code < 0xE000:
            raise _Fail(JSON_INVALID_UTF8, pos)
        return chr(code).encode("utf-8"), pos + 6

    def skip(self, pos: int) -> int:
        """Check the value at ``pos`` and return its end, building nothing (iterative: no recursion)."""
        buf = self.buf
        closers: list[int] = []  # the closing byte of each open container
        while True:
            c = buf[pos]
            if c == 0x7B or c == 0x5B:
                self.enter(pos)
                pos = self.ws(pos + 1)
                closer = c + 2  # } or ]
                if buf[pos] == closer:
                    pos += 1
                    self.depth -= 1
                else:
                    closers.append(closer)
                    if closer == 0x7D:
                        pos = self.key(pos)
                    continue
            elif c == 0x22:
                pos = self.read_string(pos)[1]
            elif c == 0x2D or 0x30 <= c <= 0x39:
                pos = self.number_end(pos)
            elif c == 0x74:
                pos = self.literal(pos, b"true")
            elif c == 0x66:
                pos = self.literal(pos, b"false")
            elif c == 0x6E:
                pos = self.literal(pos, b"null")
            else:
                raise _Fail(JSON_UNEXPECTED_BYTE, pos, c)
            # after a value: close containers until one continues with another value
            while closers:
                pos = self.ws(pos)
                c = buf[pos]
                if c == 0x2C:
                    pos = self.ws(pos + 1)
                    if closers[-1] == 0x7D:
                        pos = self.key(pos)
                    break
                if c != closers[-1]:
                    raise _Fail(JSON_UNEXPECTED_BYTE, pos, c)
                closers.pop()
                self.depth -= 1
                pos += 1
            else:
                return pos

    def key(self, pos: int) -> int:
        """Check a key and its colon at ``pos``; return the position of the value."""
        if self.buf[pos] != 0x22:
            raise _Fail(JSON_UNEXPECTED_BYTE, pos, self.buf[pos])
        pos = self.ws(self.read_string(pos)[1])
        if self.buf[pos] != 0x3A:
            raise _Fail(JSON_UNEXPECTED_BYTE, pos, self.buf[pos])
        return self.ws(pos + 1)

    def next_item(self, pos: int, closer: int) -> tuple[int, bool]:
        """After a container item: (position of the next item, True) or (position after the closer, False)."""
        pos = self.ws(pos)
        c = self.buf[pos]
        if c == 0x2C:
            return self.ws(pos + 1), True
        if c != closer:
            raise _Fail(JSON_UNEXPECTED_BYTE, pos, c)
        return pos + 1, False

    # -- the nodes -----------------------------------------------------------------------------------
    def value(self, node: Node, pos: int) -> int:
        return self.dispatch[node[0]](node, pos)

    def null(self, node: Node, pos: int) -> int:
        self.expect(pos, 0)
        return self.literal(pos, b"null")

    def boolean(self, node: Node, pos: int) -> int:
        self.expect(pos, 1)
        if self.buf[pos] == 0x74:
            self.out.append(1)
            return self.literal(pos, b"true")
        self.out.append(0)
        return self.literal(pos, b"false")

    def integer(self, node: Node, pos: int) -> int:
        self.expect(pos, 2)
        end = self.number_end(pos)
        value = _integral(self.buf[pos:end])
        if value is None:
            raise _Fail(JSON_WRONG_TYPE, pos, 2)
        low, high = _INT_BOUNDS[node[0]]
        if not low <= value <= high:
            raise _Fail(JSON_NUMBER_RANGE, pos, node[0])
        self.out += _zigzag(value)
        return end

    def real(self, node: Node, pos: int) -> int:
        self.expect(pos, 2)
        end = self.number_end(pos)
        value = float(self.buf[pos:end])
        if value in (float("inf"), float("-inf")):
            raise _Fail(JSON_NUMBER_RANGE, pos, node[0])
        if node[0] == J_DOUBLE:
            self.out += struct.pack("<d", value)
            return end
        try:
            self.out += struct.pack("<f", value)
        except OverflowError:
            raise _Fail(JSON_NUMBER_RANGE, pos, node[0]) from None
        return end

    def string(self, node: Node, pos: int) -> int:
        self.expect(pos, 3)
        text, end = self.read_string(pos)
        self.out += _zigzag(len(text))
        self.out += text
        return end

    def enum(self, node: Node, pos: int) -> int:
        self.expect(pos, 3)
        text, end = self.read_string(pos)
        index = node[1].get(text)
        if index is None:
            raise _Fail(JSON_UNKNOWN_ENUM, pos)
        self.out += _zigzag(index)
        return end

    def formatted(self, node: Node, pos: int) -> int:
        """A string in a format: base64 bytes or fixed, date-time, date, time."""
        self.expect(pos, 3)
        text, end = self.read_string(pos)
        op = node[0]
        encoded: bytes | None = None
        if op == J_BYTES_B64 or op == J_FIXED_B64:
            raw = _base64(text)
            if raw is not None and op == J_BYTES_B64:
                encoded = _zigzag(len(raw)) + raw
            elif raw is not None and len(raw) == node[1]:
                encoded = raw
        else:
            parse = _timestamp_micros if op == J_TIMESTAMP else _date_days if op == J_DATE else _time_micros
            number = parse(text)
            encoded = None if number is None else _zigzag(number)
        if encoded is None:
            raise _Fail(JSON_BAD_FORMAT, pos, op)
        self.out += encoded
        return end

    def text(self, node: Node, pos: int) -> int:
        end = self.skip(pos)
        self.out += _zigzag(end - pos)
        self.out += self.buf[pos:end]
        return end

    def nullable(self, node: Node, pos: int) -> int:
        if self.buf[pos] == 0x6E:
            self.out.append(0)
            return self.literal(pos, b"null")
        self.out.append(2)
        return self.value(node[1], pos)

    def array(self, node: Node, pos: int) -> int:
        self.expect(pos, 4)
        self.enter(pos)
        out, child = self.out, node[1]
        base = len(out)
        count = 0
        pos = self.ws(pos + 1)
        if self.buf[pos] == 0x5D:
            pos += 1
        else:
            more = True
            while more:
                pos = self.value(child, pos)
                count += 1
                pos, more = self.next_item(pos, 0x5D)
        self.close_block(base, count)
        self.depth -= 1
        return pos

    def close_block(self, base: int, count: int) -> None:
        """Put the block count in front of the items written from ``base``, then the end marker."""
        if count:
            self.out[base:base] = _zigzag(count)
        self.out.append(0)

    def mapping(self, node: Node, pos: int) -> int:
        self.expect(pos, 5)
        self.enter(pos)
        out, child, buf = self.out, node[1], self.buf
        base = len(out)
        count = 0
        pos = self.ws(pos + 1)
        if buf[pos] == 0x7D:
            pos += 1
        else:
            more = True
            while more:
                if buf[pos] != 0x22:
                    raise _Fail(JSON_UNEXPECTED_BYTE, pos, buf[pos])
                name, pos = self.read_string(pos)
                out += _zigzag(len(name))
                out += name
                pos = self.ws(pos)
                if buf[pos] != 0x3A:
                    raise _Fail(JSON_UNEXPECTED_BYTE, pos, buf[pos])
                pos = self.value(child, self.ws(pos + 1))
                count += 1
                pos, more = self.next_item(pos, 0x7D)
        self.close_block(base, count)
        self.depth -= 1
        return pos

    def record(self, node: Node, pos: int) -> int:
        self.expect(pos, 5)
        self.enter(pos)
        _, index, children, missing, keep_extra = node
        out, buf = self.out, self.buf
        base = len(out)
        spans: list[tuple[int, int] | None] = [None] * len(children)
        extras: list[bytes] = []
        pos = self.ws(pos + 1)
        if buf[pos] == 0x7D:
            pos += 1
        else:
            more = True
            while more:
                if buf[pos] != 0x22:
                    raise _Fail(JSON_UNEXPECTED_BYTE, pos, buf[pos])
                key_start = pos
                name, key_end = self.read_string(pos)
                pos = self.ws(key_end)
                if buf[pos] != 0x3A:
                    raise _Fail(JSON_UNEXPECTED_BYTE, pos, buf[pos])
                pos = self.ws(pos + 1)
                field = index.get(name)
                if field is None:
                    pos = self.skip(pos)
                    if keep_extra:
                        extras.append(buf[key_start:pos])
                else:
                    start = len(out)
                    pos = self.value(children[field], pos)
                    spans[field] = (start, len(out))
                pos, more = self.next_item(pos, 0x7D)
        body = bytearray()
        for field, span in enumerate(spans):
            if span is None:
                default = missing[field]
                if default is None:
                    raise _Fail(JSON_MISSING_REQUIRED, pos - 1, field)
                body += default
            else:
                body += out[span[0] : span[1]]
        if keep_extra:
            if extras:
                extra = b"{" + b",".join(extras) + b"}"
                body += b"\x02" + _zigzag(len(extra)) + extra
            else:
                body.append(0)
        out[base:] = body
        self.depth -= 1
        return pos

    def top(self, root: Node, payload: bytes) -> None:
        """Transcode the whole ``payload``: one value between optional whitespace."""
        self.buf, self.n, self.depth = payload, len(payload), 0
        m = _WS.match(self.buf, 0)
        assert m is not None
        if m.end() >= self.n:
            raise _Fail(JSON_TRUNCATED, self.n)
        pos = self.value(root, m.end())
        m = _WS.match(self.buf, pos)
        assert m is not None
        if m.end() < self.n:
            raise _Fail(JSON_UNEXPECTED_BYTE, m.end(), self.buf[m.end()])


def transcode(
    program: Program,
    data: ByteData,
    starts: ArrayLike,
    ends: ArrayLike,
    validity: ArrayLike | None,
    keep_going: bool,
) -> Transcoded:
    """Transcode every JSON payload ``data[starts[i]:ends[i]]`` to its Avro binary form.

    Parameters
    ----------
    program
        The prepared program (:class:`Program`).
    data
        The buffer holding the payloads.
    starts, ends
        int64 bounds of each payload in ``data``.
    validity
        False rows are null (no output); None: every row is present.
    keep_going
        Report every bad row (True) or stop at the first one (False: the rows after it are not
        transcoded, their offsets equal the last and they are not valid).

    Returns
    -------
    tuple
        ``(errors, out, offsets, validity)``: the ``(code, row, offset, detail)`` errors, the Avro
        bytes of all rows (uint8), ``offsets`` (int64, n + 1; row i is ``out[offsets[i]:offsets[i + 1]]``,
        empty for null and bad rows) and the bool validity (False for null and bad rows), None when
        every row is valid.
    """
    buf = memoryview(data).cast("B") if len(memoryview(data)) else memoryview(b"")
    first = np.asarray(starts, dtype=np.int64)
    last = np.asarray(ends, dtype=np.int64)
    n = len(first)
    present = None if validity is None else np.asarray(validity, dtype=bool)
    out = bytearray()
    offsets = np.zeros(n + 1, dtype=np.int64)
    valid = np.ones(n, dtype=bool)
    errors: list[KernelError] = []
    root = program.root
    row = _Row(out)
    for i in range(n):
        base = len(out)
        if present is not None and not present[i]:
            valid[i] = False
            offsets[i + 1] = base
            continue
        try:
            row.top(root, bytes(buf[int(first[i]) : int(last[i])]))
        except _Fail as exc:
            del out[base:]
            errors.append((exc.code, i, exc.offset, exc.detail))
            valid[i] = False
            if not keep_going:
                offsets[i + 1 :] = base
                valid[i + 1 :] = False
                break
        offsets[i + 1] = len(out)
    result = np.frombuffer(bytes(out), dtype=np.uint8) if out else np.zeros(0, dtype=np.uint8)
    return errors, result, offsets, (None if valid.all() else valid)


def decode(
    program: Program,
    layout: avro_py.Layout,
    avro_program: avro_py.Program,
    segments: Sequence[tuple[ByteData, ArrayLike, ArrayLike, ArrayLike | None]],
    keep_going: bool,
    hints: Sequence[tuple[float, float]] | None = None,
) -> tuple[list[KernelError], list[Any], KernelError | None]:
    """Decode every JSON payload of ``segments`` into the Avro column builders of ``layout``.

    The pure twin transcodes each segment (:func:`transcode`) and decodes the Avro bytes with the
    Avro kernel (``avro_py.decode`` with ``avro_program``, the program ``program`` was made with);
    the compiled twin appends to the builders while it parses. Both give the same builders and the
    same errors.

    Parameters
    ----------
    program
        The prepared program, made with ``avro=`` (its shadow schema's Avro program).
    layout, avro_program
        That Avro program's layout and program as the Avro kernel twin of the same backend takes them.
    segments
        ``[(data, starts, ends, validity), ...]``, each as :func:`transcode` takes them; rows are
        numbered across segments.
    keep_going
        Report every bad row, which becomes a null row (True), or stop at the first one (False: the
        builders hold the rows before it).
    hints
        Bytes per row of each builder in an earlier batch, as ``avro_py.decode`` takes them.

    Returns
    -------
    tuple
        ``(errors, outputs, bug)``: the ``(code, row, offset, detail)`` errors, the builders as
        ``avro_py.decode`` returns them, and None, or the first Avro error the builders raised on
        what the parser gave them (``(code, row, offset, detail)``; a bug, never bad data). A
        message holding more items of no size than the builders take (``ZERO_SIZE_ITEM_LIMIT``) is
        an error, ``JSON_TOO_MANY_EMPTY_ITEMS`` at offset 0 with the limit as detail.
    """
    if program.avro is None:
        raise ValueError("decode needs a Program made with its Avro program (avro=)")
    errors: list[KernelError] = []
    avro_segments: list[tuple[Any, Any, Any, Any, None]] = []
    row0 = 0
    for data, starts, ends, validity in segments:
        found, out, offsets, valid = transcode(program, data, starts, ends, validity, keep_going)
        errors.extend((code, row0 + row, offset, detail) for code, row, offset, detail in found)
        rows = len(offsets) - 1
        if found and not keep_going:
            rows = found[0][1]  # the builders hold the rows before the first bad one
        avro_segments.append(
            (out, offsets[:rows], offsets[1 : rows + 1], None if valid is None else valid[:rows], None)
        )
        if found and not keep_going:
            break
        row0 += rows
    avro_errors, outputs = avro_py.decode(layout, [avro_program], avro_segments, keep_going, hints)
    assert avro_errors is not None and outputs is not None  # no segment carries a prefix to check
    errors, bug = avro_py.limit_errors(errors, avro_errors, keep_going, JSON_TOO_MANY_EMPTY_ITEMS)
    return errors, outputs, bug
