"""Pure-Python twin of the Avro batch encoder (compiled twin: ``avro_encode_c.pyx``).

Contract shared with the compiled twin
--------------------------------------
``encode(nodes, kids, root, skip, n, capacity)``

``nodes``
    ``[(code, first, count, arg, arg2, valid, data, offs, table), ...]`` bound to one batch by
    :mod:`pulsar_codec.formats.avro.encoder`; node ``i``'s children are ``kids[first:first + count]``.
    ``valid``: uint8 per element or None; ``data``: int32 or int64 values (E_INT, E_LONG, E_ENUM;
    E_UNION: the child, i.e. the index into the node's children, of each element), float32 or
    float64 (E_FLOAT, E_DOUBLE), uint8 (E_BOOL; bytes for E_BYTES / E_FIXED; 16 little-endian bytes
    per element for decimals); ``offs``: int32 or int64 ``n + 1`` offsets (E_BYTES, E_ARRAY, E_MAP;
    E_UNION: the index of each element in its child). The 32-bit forms are Arrow's own buffers,
    which the compiled twin reads in place; ``table``:
    int32 dictionary index -> enum symbol (-1: not a symbol). ``arg`` / ``arg2``: E_OPTION null and
    value branch; E_FIXED Avro size and Arrow width; E_DEC_FIXED size.
``root``
    The node written for every row (a record node for record schemas).
``skip``
    uint8 per row or None: rows that become null messages.
``capacity``
    Expected output bytes (the compiled twin reserves it; ignored here).

Returns ``(error, data, offsets)``: ``error`` None or ``(status, row, node, detail)`` for the first
row that cannot be written (``data`` and ``offsets`` are then None); otherwise ``data`` is the
concatenated bodies and ``offsets`` the ``n + 1`` int32 offsets, both as ``pa.Buffer``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa

from ._typing import AnyArray, KernelError
from .defs import (
    E_ARRAY,
    E_BOOL,
    E_BYTES,
    E_DEC_BYTES,
    E_DEC_FIXED,
    E_DOUBLE,
    E_ENUM,
    E_FIXED,
    E_FLOAT,
    E_INT,
    E_LONG,
    E_MAP,
    E_NULL,
    E_OPTION,
    E_RECORD,
    E_UNION,
)
from .defs import ENC_DECIMAL_SIZE as DECIMAL_SIZE
from .defs import ENC_ENUM_SYMBOL as ENUM_SYMBOL
from .defs import ENC_FIXED_SIZE as FIXED_SIZE
from .defs import ENC_FLOAT_RANGE as FLOAT_RANGE
from .defs import ENC_INT_RANGE as INT_RANGE
from .defs import ENC_NOT_NULL as NOT_NULL
from .defs import ENC_NULL_VALUE as NULL_VALUE
from .defs import ENC_TOO_LARGE as TOO_LARGE

__all__ = [
    "encode",
    "E_NULL",
    "E_BOOL",
    "E_INT",
    "E_LONG",
    "E_FLOAT",
    "E_DOUBLE",
    "E_BYTES",
    "E_FIXED",
    "E_ENUM",
    "E_RECORD",
    "E_ARRAY",
    "E_MAP",
    "E_OPTION",
    "E_DEC_BYTES",
    "E_DEC_FIXED",
    "E_UNION",
    "NULL_VALUE",
    "NOT_NULL",
    "INT_RANGE",
    "FLOAT_RANGE",
    "FIXED_SIZE",
    "ENUM_SYMBOL",
    "DECIMAL_SIZE",
    "TOO_LARGE",
]

# (code, first, count, arg, arg2, valid, data, offs, table), see the module docstring
EncodeNode: TypeAlias = tuple[int, int, int, int, int, Any, Any, Any, Any]
# writes element j of a node to the output
Writer: TypeAlias = Callable[[int, bytearray], None]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_pack_f = struct.Struct("<f").pack
_pack_d = struct.Struct("<d").pack


class _Fail(Exception):
    def __init__(self, code: int, node: int, detail: int) -> None:
        self.code = code
        self.node = node
        self.detail = detail


def _zz(out: bytearray, n: int) -> None:
    v = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _compile(nodes: Sequence[EncodeNode], kids: Sequence[int]) -> Callable[[int], Writer]:
    """A builder of node writers (each node compiled once, children first)."""
    fns: list[Writer | None] = [None] * len(nodes)

    def build(ni: int) -> Writer:
        done = fns[ni]
        if done is not None:
            return done
        code, first, count, arg, arg2, valid, data, offs, table = nodes[ni]
        children = [build(k) for k in kids[first : first + count]]
        # the lists a node's writer reads (empty where its code reads none)
        ol: list[int] = [] if offs is None else np.asarray(offs, dtype=np.int64).tolist()
        raw = b""
        if code in (E_BYTES, E_FIXED, E_DEC_BYTES, E_DEC_FIXED):
            raw = bytes(np.asarray(data, dtype=np.uint8))
        dl: list[Any] = data.tolist() if code in (E_BOOL, E_INT, E_LONG, E_FLOAT, E_DOUBLE, E_ENUM, E_UNION) else []
        tl: list[int] = [] if table is None else np.asarray(table, dtype=np.int32).tolist()
        f = _writer(ni, code, arg, arg2, dl, raw, ol, tl, children)
        if valid is not None:
            f = _with_validity(ni, code, arg, np.asarray(valid, dtype=np.uint8).tolist(), f)
        fns[ni] = f
        return f

    return build


def _with_validity(ni: int, code: int, null_branch: int, vl: list[int], inner: Writer) -> Writer:
    """Wrap a node writer with the node's validity: null branch, nothing, or NULL_VALUE."""
    if code == E_OPTION:

        def option(j: int, out: bytearray) -> None:
            if not vl[j]:
                _zz(out, null_branch)
                return
            inner(j, out)

        return option
    if code == E_NULL:

        def null(j: int, out: bytearray) -> None:
            if vl[j]:
                inner(j, out)

        return null

    def required(j: int, out: bytearray) -> None:
        if not vl[j]:
            raise _Fail(NULL_VALUE, ni, 0)
        inner(j, out)

    return required


def _writer(  # noqa: C901 - one case per node code
    ni: int,
    code: int,
    arg: int,
    arg2: int,
    dl: list[Any],
    raw: bytes,
    ol: list[int],
    tl: list[int],
    children: list[Writer],
) -> Writer:
    if code == E_NULL:

        def w(j: int, out: bytearray) -> None:
            raise _Fail(NOT_NULL, ni, 0)

        return w
    if code == E_OPTION:
        child = children[0]

        def w(j: int, out: bytearray) -> None:
            _zz(out, arg2)
            child(j, out)

        return w
    if code == E_BOOL:
        return lambda j, out: out.append(1 if dl[j] else 0)
    if code == E_INT:

        def w(j: int, out: bytearray) -> None:
            v = dl[j]
            if v < _INT32_MIN or v > _INT32_MAX:
                raise _Fail(INT_RANGE, ni, v)
            _zz(out, v)

        return w
    if code == E_LONG:
        return lambda j, out: _zz(out, dl[j])
    if code == E_FLOAT:

        def w(j: int, out: bytearray) -> None:
            try:
                out += _pack_f(dl[j])
            except OverflowError:
                raise _Fail(FLOAT_RANGE, ni, 0) from None

        return w
    if code == E_DOUBLE:

        def w(j: int, out: bytearray) -> None:
            out += _pack_d(dl[j])

        return w
    if code == E_BYTES:

        def w(j: int, out: bytearray) -> None:
            s, e = ol[j], ol[j + 1]
            _zz(out, e - s)
            out += raw[s:e]

        return w
    if code == E_FIXED:

        def w(j: int, out: bytearray) -> None:
            if arg != arg2:
                raise _Fail(FIXED_SIZE, ni, arg2)
            out += raw[arg * j : arg * j + arg]

        return w
    if code == E_ENUM:

        def w(j: int, out: bytearray) -> None:
            k = dl[j]
            sym = tl[k]
            if sym < 0:
                raise _Fail(ENUM_SYMBOL, ni, k)
            _zz(out, sym)

        return w
    if code == E_RECORD:
        fields = tuple(children)

        def w(j: int, out: bytearray) -> None:
            for f in fields:
                f(j, out)

        return w
    if code in (E_ARRAY, E_MAP):
        is_map = code == E_MAP
        key = children[0]
        item = children[1] if is_map else children[0]

        def w(j: int, out: bytearray) -> None:
            s, e = ol[j], ol[j + 1]
            if e > s:
                _zz(out, e - s)
                for m in range(s, e):
                    if is_map:
                        key(m, out)
                    item(m, out)
            out.append(0)

        return w
    if code == E_DEC_BYTES:

        def w(j: int, out: bytearray) -> None:
            v = int.from_bytes(raw[16 * j : 16 * j + 16], "little", signed=True)
            data = v.to_bytes((v.bit_length() + 8) // 8 or 1, "big", signed=True)
            _zz(out, len(data))
            out += data

        return w
    if code == E_DEC_FIXED:

        def w(j: int, out: bytearray) -> None:
            v = int.from_bytes(raw[16 * j : 16 * j + 16], "little", signed=True)
            try:
                out += v.to_bytes(arg, "big", signed=True)
            except OverflowError:
                raise _Fail(DECIMAL_SIZE, ni, arg) from None

        return w
    if code == E_UNION:
        kinds = tuple(children)

        def w(j: int, out: bytearray) -> None:
            kinds[dl[j]](ol[j], out)  # the child writes the branch index

        return w
    raise ValueError(f"unknown Avro encode node code {code}")  # pragma: no cover


def encode(
    nodes: Sequence[EncodeNode],
    kids: Sequence[int],
    root: int,
    skip: AnyArray | None,
    n: int,
    capacity: int,
) -> tuple[KernelError | None, Any, Any]:
    """Encode ``n`` rows; see the module docstring for the contract."""
    write = _compile(nodes, list(kids))(root)
    skip_list = None if skip is None else np.asarray(skip, dtype=np.uint8).tolist()
    out = bytearray()
    offsets = [0] * (n + 1)
    for i in range(n):
        if skip_list is None or not skip_list[i]:
            try:
                write(i, out)
            except _Fail as fail:
                return (fail.code, i, fail.node, fail.detail), None, None
            if len(out) > _INT32_MAX:
                return (TOO_LARGE, i, root, len(out)), None, None
        offsets[i + 1] = len(out)
    return None, pa.py_buffer(bytes(out)), pa.py_buffer(np.array(offsets, dtype=np.int32))
