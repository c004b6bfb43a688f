"""Pure-Python twin of the Avro batch encoder (compiled twin: ``_avro_encode_c.pyx``).

Contract shared with the compiled twin
--------------------------------------
``encode(nodes, kids, root, skip, n, capacity)``

``nodes``
    ``[(code, first, count, arg, arg2, valid, data, offs, table), ...]`` bound to one batch by
    :mod:`pulsar_codec.avro.encoder`; node ``i``'s children are ``kids[first:first + count]``.
    ``valid``: uint8 per element or None; ``data``: int64 values (E_INT, E_LONG, E_ENUM), float64
    (E_FLOAT, E_DOUBLE), uint8 (E_BOOL; bytes for E_BYTES / E_FIXED; 16 little-endian bytes per
    element for decimals); ``offs``: int64 ``n + 1`` offsets (E_BYTES, E_ARRAY, E_MAP); ``table``:
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

import numpy as np
import pyarrow as pa

__all__ = ["encode", "E_NULL", "E_BOOL", "E_INT", "E_LONG", "E_FLOAT", "E_DOUBLE", "E_BYTES", "E_FIXED",
           "E_ENUM", "E_RECORD", "E_ARRAY", "E_MAP", "E_OPTION", "E_DEC_BYTES", "E_DEC_FIXED",
           "NULL_VALUE", "NOT_NULL", "INT_RANGE", "FLOAT_RANGE", "FIXED_SIZE", "ENUM_SYMBOL", "DECIMAL_SIZE",
           "TOO_LARGE"]

# node codes and statuses: identical in both twins and csrc/pc_avro_enc.h
E_NULL = 1
E_BOOL = 2
E_INT = 3
E_LONG = 4
E_FLOAT = 5
E_DOUBLE = 6
E_BYTES = 7
E_FIXED = 8
E_ENUM = 9
E_RECORD = 10
E_ARRAY = 11
E_MAP = 12
E_OPTION = 13
E_DEC_BYTES = 14
E_DEC_FIXED = 15
NULL_VALUE = 1
NOT_NULL = 2
INT_RANGE = 3
FLOAT_RANGE = 4
FIXED_SIZE = 5
ENUM_SYMBOL = 6
DECIMAL_SIZE = 7
TOO_LARGE = 8

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


def _compile(nodes, kids):
    fns: list = [None] * len(nodes)

    def build(ni: int):
        if fns[ni] is not None:
            return fns[ni]
        code, first, count, arg, arg2, valid, data, offs, table = nodes[ni]
        children = [build(k) for k in kids[first : first + count]]
        vl = None if valid is None else np.asarray(valid, dtype=np.uint8).tolist()
        ol = None if offs is None else np.asarray(offs, dtype=np.int64).tolist()
        raw = None
        if code in (E_BYTES, E_FIXED, E_DEC_BYTES, E_DEC_FIXED):
            raw = bytes(np.asarray(data, dtype=np.uint8))
        dl = data.tolist() if code in (E_BOOL, E_INT, E_LONG, E_FLOAT, E_DOUBLE, E_ENUM) else None
        tl = None if table is None else np.asarray(table, dtype=np.int32).tolist()
        f = _writer(ni, code, arg, arg2, dl, raw, ol, tl, children)
        if vl is not None:
            inner = f
            if code == E_OPTION:

                def f(j, out, _inner=inner, _vl=vl, _null=arg):
                    if not _vl[j]:
                        _zz(out, _null)
                        return
                    _inner(j, out)

            elif code == E_NULL:

                def f(j, out, _inner=inner, _vl=vl):
                    if _vl[j]:
                        _inner(j, out)

            else:

                def f(j, out, _inner=inner, _vl=vl):
                    if not _vl[j]:
                        raise _Fail(NULL_VALUE, ni, 0)
                    _inner(j, out)

        fns[ni] = f
        return f

    return build


def _writer(ni, code, arg, arg2, dl, raw, ol, tl, children):  # noqa: C901 - one case per node code
    if code == E_NULL:

        def w(j, out):
            raise _Fail(NOT_NULL, ni, 0)

        return w
    if code == E_OPTION:
        child = children[0]

        def w(j, out):
            _zz(out, arg2)
            child(j, out)

        return w
    if code == E_BOOL:
        return lambda j, out: out.append(1 if dl[j] else 0)
    if code == E_INT:

        def w(j, out):
            v = dl[j]
            if v < _INT32_MIN or v > _INT32_MAX:
                raise _Fail(INT_RANGE, ni, v)
            _zz(out, v)

        return w
    if code == E_LONG:
        return lambda j, out: _zz(out, dl[j])
    if code == E_FLOAT:

        def w(j, out):
            try:
                out += _pack_f(dl[j])
            except OverflowError:
                raise _Fail(FLOAT_RANGE, ni, 0) from None

        return w
    if code == E_DOUBLE:

        def w(j, out):
            out += _pack_d(dl[j])

        return w
    if code == E_BYTES:

        def w(j, out):
            s, e = ol[j], ol[j + 1]
            _zz(out, e - s)
            out += raw[s:e]

        return w
    if code == E_FIXED:

        def w(j, out):
            if arg != arg2:
                raise _Fail(FIXED_SIZE, ni, arg2)
            out += raw[arg * j : arg * j + arg]

        return w
    if code == E_ENUM:

        def w(j, out):
            k = dl[j]
            sym = tl[k]
            if sym < 0:
                raise _Fail(ENUM_SYMBOL, ni, k)
            _zz(out, sym)

        return w
    if code == E_RECORD:
        fields = tuple(children)

        def w(j, out):
            for f in fields:
                f(j, out)

        return w
    if code in (E_ARRAY, E_MAP):
        is_map = code == E_MAP
        key = children[0]
        item = children[1] if is_map else children[0]

        def w(j, out):
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

        def w(j, out):
            v = int.from_bytes(raw[16 * j : 16 * j + 16], "little", signed=True)
            data = v.to_bytes((v.bit_length() + 8) // 8 or 1, "big", signed=True)
            _zz(out, len(data))
            out += data

        return w
    if code == E_DEC_FIXED:

        def w(j, out):
            v = int.from_bytes(raw[16 * j : 16 * j + 16], "little", signed=True)
            try:
                out += v.to_bytes(arg, "big", signed=True)
            except OverflowError:
                raise _Fail(DECIMAL_SIZE, ni, arg) from None

        return w
    raise ValueError(f"unknown Avro encode node code {code}")  # pragma: no cover


def encode(nodes, kids, root, skip, n, capacity):
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
