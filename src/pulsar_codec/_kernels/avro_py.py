"""Pure-Python twin of the Avro batch decoder (compiled twin: ``avro_c.pyx``).

The kernel interprets the flat decode program of :mod:`pulsar_codec.formats.avro.plan` over every payload
of a batch and fills one column builder per slot of the reader layout. Here each op becomes a
closure bound to its builder lists (compiled once per batch, which costs microseconds; the row
builders of :func:`decode_row` and their closures are kept by the layout), varints are read inline,
and the cyclic garbage collector is paused around the batch loop.

Contract shared with the compiled twin
--------------------------------------
``Layout(slots, shapes=None)``
    A reader layout prepared once: ``slots`` is ``[(kind, nullable, width, children, null_branch),
    ...]`` from ``Layout.specs``; ``shapes`` (needed by :func:`decode_row`) one ``(names, text,
    convert)`` per slot: ``names`` a tuple of field names for a struct slot that becomes a dict (None
    for the row struct of a non-record reader, whose value is its one column), ``text`` True for a
    binary slot holding strings, ``convert`` None or a callable applied to every non-null value.
``Program(ops, kids)``
    One flat program from ``plan.build_plan``, prepared once.
``decode(layout, programs, segments, keep_going, hints=None)``
    ``programs``: a row uses the program its ``plan_ids`` entry names (all share ``layout``).
    ``segments``: ``[(data, starts, ends, validity, plan_ids), ...]``: payload ``i`` of a segment
    is ``data[starts[i]:ends[i]]``; ``validity`` (bool array or None) marks null payloads;
    ``plan_ids`` (int array or None = all 0). Rows are numbered across segments. ``starts`` may
    also be an int ``skip``: then ``ends`` holds the n + 1 offsets (int32 or int64) of framed
    messages with a ``skip``-byte prefix, and payload ``i`` is ``data[ends[i] + skip:ends[i + 1]]``;
    an optional sixth item ``prefix`` (``skip`` bytes, or None: already checked) is the prefix every
    non-null message must begin with, and when one does not, ``decode`` returns ``(None, None)``
    (the caller then takes the batch apart message by message). ``keep_going`` False: stop at the first bad row; True: a
    bad row becomes a null row and decoding goes on. ``hints``: optional ``[(b1_bytes_per_row,
    b2_bytes_per_row), ...]`` per slot from an earlier batch; the compiled twin sizes its builders
    with them, this twin has nothing to pre-size and ignores them.

    Returns ``(errors, outputs)``: ``errors`` is a list of ``(code, row, offset, detail)`` (the
    offset counted from the start of that payload); ``outputs[s] = (length, validity, b1, b2)`` per
    slot (validity: uint8 per element; b1: values, offsets or union type ids; b2: string data or
    union offsets): numpy arrays here (offsets int64), ``pa.Buffer`` slices of the builders in the
    compiled twin (offsets int32); ``formats/avro/_assemble.py`` takes both. Slot 0 holds exactly
    the rows that were completed (all rows when keep_going).
``decode_row(layout, program, data, start, end)``
    The same interpreter on the one payload ``data[start:end]``, into builders the layout keeps
    between calls; returns ``(error, value)``: ``error`` None or ``(code, 0, offset, detail)`` as
    :func:`decode` reports it, ``value`` the row's Python value (None after an error): lists for
    arrays, lists of ``(key, value)`` tuples for maps, a union's branch value, the shapes applied.
"""

from __future__ import annotations

import gc
import struct
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import numpy as np

from . import wire_py
from ._typing import AnyArray, KernelError
from .defs import (
    AVRO_BAD_BOOLEAN,
    AVRO_BAD_ENUM_INDEX,
    AVRO_BAD_UNION_INDEX,
    AVRO_BLOCK_COUNT_TOO_LARGE,
    AVRO_DECIMAL_OVERFLOW,
    AVRO_DECIMAL_PRECISION,
    AVRO_DURATION_OUT_OF_RANGE,
    AVRO_INT_OUT_OF_RANGE,
    AVRO_INVALID_UTF8,
    AVRO_LENGTH_PAST_END,
    AVRO_NEGATIVE_BLOCK_SIZE,
    AVRO_NEGATIVE_LENGTH,
    AVRO_OUTPUT_TOO_LARGE,
    AVRO_TIME_OUT_OF_RANGE,
    AVRO_TOO_MANY_EMPTY_ITEMS,
    AVRO_TRAILING_BYTES,
    AVRO_TRUNCATED,
    AVRO_UNKNOWN_ENUM_SYMBOL,
    AVRO_UNRESOLVED_UNION_BRANCH,
    AVRO_VARINT_TOO_LONG,
    K_BIN,
    K_BOOL,
    K_F32,
    K_F64,
    K_I32,
    K_I64,
    K_LIST,
    K_MAP,
    K_NULL,
    K_RAW,
    K_STRUCT,
    K_UNION,
    O_ARRAY,
    O_BOOL,
    O_BRANCH_ERR,
    O_BYTES,
    O_DEC_BYTES,
    O_DEC_FIXED,
    O_DEFAULT,
    O_DOUBLE,
    O_DURATION,
    O_ENUM,
    O_FIXED,
    O_FLOAT,
    O_FLOAT_D,
    O_INT,
    O_INT_D,
    O_INT_F,
    O_INT_L,
    O_LONG,
    O_LONG_D,
    O_LONG_F,
    O_MAP,
    O_NULL,
    O_NULLFILL,
    O_RECORD,
    O_SELECT,
    O_SK_ARRAY,
    O_SK_BOOL,
    O_SK_BYTES,
    O_SK_F32,
    O_SK_F64,
    O_SK_FIXED,
    O_SK_MAP,
    O_SK_NOP,
    O_SK_RECORD,
    O_SK_UNION,
    O_SK_VARINT,
    O_STRING,
    O_TIME_MS,
    O_TIME_US,
    O_UNION,
    ZERO_SIZE_ITEM_LIMIT,
)

__all__ = ["Layout", "Program", "decode", "decode_row"]  # the twin contract; limit_errors serves the other pure twins

# reads one value at pos of buf (not past end), appends it to its builder, returns the new pos
Reader: TypeAlias = Callable[[bytes, int, int], int]
# (kind, nullable, width, children, null_branch) per slot
SlotSpec: TypeAlias = tuple[int, bool, int, Sequence[int], int]
# (code, slot, first_kid, n_kids, arg, arg2, table, const) per op
Op: TypeAlias = tuple[int, int, int, int, int, int, Sequence[int] | None, bytes | None]
# (names, text, convert) per slot: how decode_row turns an element into a Python value
RowShape: TypeAlias = tuple[Sequence[str] | None, bool, Callable[[Any], Any] | None]
# (length, validity, b1, b2) per slot
SlotOutput: TypeAlias = tuple[int, AnyArray | None, AnyArray | None, AnyArray | None]

_MASK64 = 0xFFFFFFFFFFFFFFFF
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1

_unpack_f = struct.Struct("<f").unpack_from
_unpack_d = struct.Struct("<d").unpack_from
_unpack_duration = struct.Struct("<III").unpack_from
_pack_interval = struct.Struct("<iiq").pack
_pack_f = struct.Struct("<f").pack


def _long_to_float32(v: int) -> float:
    """The float32 nearest ``v`` (ties to even), as a Python float that holds it exactly: rounded
    once, as C's and Java's ``(float)`` of a long round it (``float(v)`` first rounds to double,
    and a second rounding to float32 can then land one step off)."""
    a = -v if v < 0 else v
    shift = a.bit_length() - 24
    if shift <= 0:
        return float(v)  # 24 bits or fewer: exact
    q, r = divmod(a, 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    f = float(q << shift)  # at most 25 significant bits: exact in a double, and a float32 value
    return -f if v < 0 else f


_pack_d = struct.Struct("<d").pack


class _Fail(Exception):
    """Internal: a bad byte at an absolute position of the chunk buffer."""

    def __init__(self, code: int, pos: int, detail: int) -> None:
        self.code = code
        self.pos = pos
        self.detail = detail


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Zigzag varint of at most 10 bytes at ``pos``: (value, new_pos)."""
    start = pos
    acc = 0
    shift = 0
    while True:
        if shift == 70:
            raise _Fail(AVRO_VARINT_TOO_LONG, start, 0)
        if pos >= end:
            raise _Fail(AVRO_TRUNCATED, start, 1)
        b = buf[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if b < 0x80:
            acc &= _MASK64
            return (acc >> 1) ^ -(acc & 1), pos
        shift += 7


class _Count:
    """The elements of a slot whose elements hold nothing (null, a record's row marks): only how
    many. A list of placeholders costs 8 bytes per element, and a message may hold 2^20 items of
    no size (an array of nulls or of empty records), so a batch of them grew without bound; the C
    builders keep these slots as counts too."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def append(self, _value: Any) -> None:
        self.n += 1

    def __len__(self) -> int:
        return self.n

    def __delitem__(self, cut: slice) -> None:  # ``del vals[n:]``: truncate
        self.n = min(self.n, cut.start)

    def clear(self) -> None:
        self.n = 0


class _Builder:
    __slots__ = ("kind", "width", "children", "null_branch", "vals", "valid", "uoffs", "committed")

    def __init__(self, spec: SlotSpec) -> None:
        kind, nullable, width, children, null_branch = spec
        self.kind = kind
        self.width = width
        self.children = tuple(children)
        self.null_branch = null_branch
        # one entry per element (values, pieces, end offsets, type ids); a count where they hold nothing
        self.vals: Any = _Count() if kind in (K_NULL, K_STRUCT) else []
        self.valid: bytearray | None = bytearray() if nullable else None  # 1 byte per element, as in C
        self.uoffs: list[int] = []
        self.committed: list[int] = [0] * len(children)


def _truncate(B: list[_Builder], sid: int, n: int) -> None:
    """Drop everything past the first ``n`` committed elements of slot ``sid`` and its children."""
    b = B[sid]
    kind = b.kind
    if kind == K_UNION:
        for i in range(len(b.vals) - 1, n - 1, -1):
            b.committed[b.vals[i]] = b.uoffs[i]
        del b.uoffs[n:]
    del b.vals[n:]
    if b.valid is not None:
        del b.valid[n:]
    if kind in (K_LIST, K_MAP):
        m = b.vals[n - 1] if n else 0
        for c in b.children:
            _truncate(B, c, m)
    elif kind == K_STRUCT:
        for c in b.children:
            _truncate(B, c, n)
    elif kind == K_UNION:
        for k, c in enumerate(b.children):
            _truncate(B, c, b.committed[k])


# floats are kept as their little-endian bytes, so NaN payloads survive exactly as in C
_PLACEHOLDER: dict[int, int | bytes] = {
    K_NULL: 0,
    K_BOOL: 0,
    K_I32: 0,
    K_I64: 0,
    K_F32: bytes(4),
    K_F64: bytes(8),
    K_BIN: b"",
}


def _null_fill(B: list[_Builder], sid: int) -> None:
    """Append one null (a placeholder where the slot has no validity) to slot ``sid``."""
    b = B[sid]
    kind = b.kind
    if kind == K_UNION:
        k = b.null_branch
        c = b.children[k]
        off = len(B[c].vals)
        _null_fill(B, c)
        b.vals.append(k)
        b.uoffs.append(off)
        b.committed[k] = off + 1
        return
    if kind == K_STRUCT:
        for c in b.children:
            _null_fill(B, c)
        b.vals.append(0)
    elif kind in (K_LIST, K_MAP):
        b.vals.append(len(B[b.children[0]].vals))
    elif kind == K_RAW:
        b.vals.append(bytes(b.width))
    else:
        b.vals.append(_PLACEHOLDER[kind])
    if b.valid is not None:
        b.valid.append(0)


def _make_nullfill(B: list[_Builder], sid: int) -> Reader:
    b = B[sid]
    if b.kind in _PLACEHOLDER and b.valid is not None:
        vapp, napp, ph = b.vals.append, b.valid.append, _PLACEHOLDER[b.kind]  # the common case, one closure

        def nullfill(buf: bytes, pos: int, end: int) -> int:
            vapp(ph)
            napp(0)
            return pos

        return nullfill

    def nullfill_any(buf: bytes, pos: int, end: int) -> int:
        _null_fill(B, sid)
        return pos

    return nullfill_any


def _discard(value: object) -> None:
    """The sink of ops that write no slot (skips): they never call it."""


def _present(children: list[Reader | None]) -> list[Reader]:
    """Children that must exist (only a union branch may be unresolvable)."""
    if any(c is None for c in children):
        raise ValueError("malformed Avro plan: an unresolvable branch outside a union")
    return [c for c in children if c is not None]


def _compile(ops: Sequence[Op], kids: Sequence[int], B: list[_Builder], budget: list[int]) -> Reader:
    """Closures for every op of one plan; returns the root closure."""

    def build(i: int) -> Reader | None:
        code, sid, first, count, arg, arg2, table, const = ops[i]
        children = [build(k) for k in kids[first : first + count]]
        b = B[sid] if sid >= 0 else None
        app = b.vals.append if b is not None else _discard
        valid = b.valid if b is not None else None
        f = _leaf(code, app, arg, arg2, table, children, B, sid, budget, const)
        if f is not None and valid is not None and code not in (O_NULLFILL, O_SELECT, O_DEFAULT):
            vapp = valid.append

            def nullable(buf: bytes, pos: int, end: int, _f: Reader = f) -> int:
                pos = _f(buf, pos, end)
                vapp(1)
                return pos

            return nullable
        return f

    return _present([build(0)])[0]


def _leaf(  # noqa: C901 - one case per op
    code: int,
    app: Callable[[Any], None],
    arg: int,
    arg2: int,
    table: Sequence[int] | None,
    children: list[Reader | None],
    B: list[_Builder],
    sid: int,
    budget: list[int],
    const: bytes | None,
) -> Reader | None:
    if code in (O_INT, O_INT_L):

        def read_int(buf: bytes, pos: int, end: int) -> int:
            if pos >= end:
                raise _Fail(AVRO_TRUNCATED, pos, 1)
            b = buf[pos]
            if b < 0x80:
                app((b >> 1) ^ -(b & 1))
                return pos + 1
            start = pos
            v, pos = _varint(buf, pos, end)
            if v < _INT32_MIN or v > _INT32_MAX:
                raise _Fail(AVRO_INT_OUT_OF_RANGE, start, v)
            app(v)
            return pos

        return read_int
    if code in (O_TIME_MS, O_TIME_US):
        bound, int_writer = arg, arg2

        def read_time(buf: bytes, pos: int, end: int) -> int:
            start = pos
            if pos < end and buf[pos] < 0x80:
                b = buf[pos]
                v = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                v, pos = _varint(buf, pos, end)
            if not 0 <= v < bound:  # a time of day (see plan.py for the bound)
                if int_writer and (v < _INT32_MIN or v > _INT32_MAX):
                    raise _Fail(AVRO_INT_OUT_OF_RANGE, start, v)
                raise _Fail(AVRO_TIME_OUT_OF_RANGE, start, v)
            app(v)
            return pos

        return read_time
    if code in (O_INT_F, O_INT_D):
        pack = _pack_f if code == O_INT_F else _pack_d

        def read_int_as_float(buf: bytes, pos: int, end: int) -> int:
            start = pos
            v, pos = _varint(buf, pos, end)
            if v < _INT32_MIN or v > _INT32_MAX:
                raise _Fail(AVRO_INT_OUT_OF_RANGE, start, v)
            app(pack(float(v)))
            return pos

        return read_int_as_float
    if code in (O_LONG, O_LONG_F, O_LONG_D, O_SK_VARINT):
        if code == O_SK_VARINT:

            def skip_varint(buf: bytes, pos: int, end: int) -> int:
                if pos >= end:
                    raise _Fail(AVRO_TRUNCATED, pos, 1)
                if buf[pos] < 0x80:
                    return pos + 1
                return _varint(buf, pos, end)[1]

            return skip_varint
        if code == O_LONG:

            def read_long(buf: bytes, pos: int, end: int) -> int:
                if pos >= end:
                    raise _Fail(AVRO_TRUNCATED, pos, 1)
                b = buf[pos]
                if b < 0x80:
                    app((b >> 1) ^ -(b & 1))
                    return pos + 1
                v, pos = _varint(buf, pos, end)
                app(v)
                return pos

            return read_long

        to_float = _long_to_float32 if code == O_LONG_F else float
        pack = _pack_f if code == O_LONG_F else _pack_d

        def read_long_as_float(buf: bytes, pos: int, end: int) -> int:
            v, pos = _varint(buf, pos, end)
            app(pack(to_float(v)))
            return pos

        return read_long_as_float
    if code == O_FLOAT_D:

        def read_float_as_double(buf: bytes, pos: int, end: int) -> int:
            if end - pos < 4:
                raise _Fail(AVRO_TRUNCATED, pos, 4 - (end - pos))
            app(_pack_d(_unpack_f(buf, pos)[0]))
            return pos + 4

        return read_float_as_double
    if code in (O_FLOAT, O_DOUBLE):
        size = 4 if code == O_FLOAT else 8

        def read_float(buf: bytes, pos: int, end: int) -> int:
            if end - pos < size:
                raise _Fail(AVRO_TRUNCATED, pos, size - (end - pos))
            app(buf[pos : pos + size])
            return pos + size

        return read_float
    if code == O_BOOL:

        def read_bool(buf: bytes, pos: int, end: int) -> int:
            if pos >= end:
                raise _Fail(AVRO_TRUNCATED, pos, 1)
            b = buf[pos]
            if b > 1:
                raise _Fail(AVRO_BAD_BOOLEAN, pos, b)
            app(b)
            return pos + 1

        return read_bool
    if code == O_NULL:

        def read_null(buf: bytes, pos: int, end: int) -> int:
            app(0)
            return pos

        return read_null
    if code in (O_STRING, O_BYTES, O_SK_BYTES, O_DEC_BYTES):
        check = code == O_STRING
        skip = code == O_SK_BYTES
        dec = code == O_DEC_BYTES
        width = arg
        bound = 0 if const is None else int.from_bytes(const, "little")  # 10**precision for decimals

        def read_bytes(buf: bytes, pos: int, end: int) -> int:
            start = pos
            if pos < end and buf[pos] < 0x80:
                b = buf[pos]
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                n, pos = _varint(buf, pos, end)
            if n < 0:
                raise _Fail(AVRO_NEGATIVE_LENGTH, start, n)
            if n > end - pos:
                raise _Fail(AVRO_LENGTH_PAST_END, start, n)
            if skip:
                return pos + n
            data = buf[pos : pos + n]
            if check and not data.isascii():
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError:
                    raise _Fail(AVRO_INVALID_UTF8, pos, 0) from None
            if dec:
                unscaled = int.from_bytes(data, "big", signed=True)
                try:
                    data = unscaled.to_bytes(width, "little", signed=True)
                except OverflowError:
                    raise _Fail(AVRO_DECIMAL_OVERFLOW, start, n) from None
                if bound and not -bound < unscaled < bound:
                    raise _Fail(AVRO_DECIMAL_PRECISION, start, arg2)
            app(data)
            return pos + n

        return read_bytes
    if code in (O_FIXED, O_SK_FIXED, O_DEC_FIXED, O_DURATION, O_SK_F32, O_SK_F64, O_SK_BOOL):
        size = {O_SK_F32: 4, O_SK_F64: 8, O_SK_BOOL: 1, O_DURATION: 12}.get(code, arg)
        skip = code in (O_SK_FIXED, O_SK_F32, O_SK_F64, O_SK_BOOL)
        width = B[sid].width if sid >= 0 else 0
        bound = 0 if const is None else int.from_bytes(const, "little")  # 10**precision for decimals

        def read_fixed(buf: bytes, pos: int, end: int) -> int:
            if size > end - pos:
                raise _Fail(AVRO_TRUNCATED, pos, size - (end - pos))
            if skip:
                return pos + size
            if code == O_FIXED:
                app(buf[pos : pos + size])
            elif code == O_DEC_FIXED:
                unscaled = int.from_bytes(buf[pos : pos + size], "big", signed=True)
                try:
                    app(unscaled.to_bytes(width, "little", signed=True))
                except OverflowError:
                    raise _Fail(AVRO_DECIMAL_OVERFLOW, pos, size) from None
                if bound and not -bound < unscaled < bound:
                    raise _Fail(AVRO_DECIMAL_PRECISION, pos, arg2)
            else:
                months, days, millis = _unpack_duration(buf, pos)
                if months > _INT32_MAX:
                    raise _Fail(AVRO_DURATION_OUT_OF_RANGE, pos, months)
                if days > _INT32_MAX:
                    raise _Fail(AVRO_DURATION_OUT_OF_RANGE, pos + 4, days)
                app(_pack_interval(months, days, millis * 1_000_000))
            return pos + size

        return read_fixed
    if code == O_SK_NOP:

        def skip_nothing(buf: bytes, pos: int, end: int) -> int:
            return pos

        return skip_nothing
    if code == O_ENUM:
        nsym = arg

        def read_enum(buf: bytes, pos: int, end: int) -> int:
            start = pos
            if pos < end and buf[pos] < 0x80:
                b = buf[pos]
                v = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                v, pos = _varint(buf, pos, end)
            if v < 0 or v >= nsym:
                raise _Fail(AVRO_BAD_ENUM_INDEX, start, v)
            if table is not None:
                m = table[v]
                if m < 0:
                    raise _Fail(AVRO_UNKNOWN_ENUM_SYMBOL, start, v)
                v = m
            app(v)
            return pos

        return read_enum
    if code in (O_RECORD, O_SK_RECORD):
        fields = tuple(_present(children))
        mark = code == O_RECORD

        def read_record(buf: bytes, pos: int, end: int) -> int:
            for f in fields:
                pos = f(buf, pos, end)
            if mark:
                app(0)
            return pos

        return read_record
    if code in (O_ARRAY, O_MAP, O_SK_ARRAY, O_SK_MAP):
        item = _present(children)[0]
        is_map = code in (O_MAP, O_SK_MAP)
        skipping = code in (O_SK_ARRAY, O_SK_MAP)
        min_size = arg
        if is_map and not skipping:
            key_app = B[arg2].vals.append
        child_vals = [] if skipping else B[B[sid].children[1 if is_map else 0]].vals

        def read_blocks(buf: bytes, pos: int, end: int) -> int:
            while True:
                start = pos
                count, pos = _varint(buf, pos, end)
                if count == 0:
                    break
                orig = count
                if count < 0:
                    sstart = pos
                    size, pos = _varint(buf, pos, end)
                    if size < 0:
                        raise _Fail(AVRO_NEGATIVE_BLOCK_SIZE, sstart, size)
                    count = -count
                    if skipping:
                        if size > end - pos:
                            raise _Fail(AVRO_LENGTH_PAST_END, sstart, size)
                        pos += size
                        continue
                if min_size:
                    if count > (end - pos) // min_size:
                        raise _Fail(AVRO_BLOCK_COUNT_TOO_LARGE, start, orig)
                else:
                    budget[0] -= count
                    if budget[0] < 0:
                        raise _Fail(AVRO_TOO_MANY_EMPTY_ITEMS, start, orig)
                for _ in range(count):
                    if is_map:
                        kstart = pos
                        n, pos = _varint(buf, pos, end)
                        if n < 0:
                            raise _Fail(AVRO_NEGATIVE_LENGTH, kstart, n)
                        if n > end - pos:
                            raise _Fail(AVRO_LENGTH_PAST_END, kstart, n)
                        if not skipping:
                            key = buf[pos : pos + n]
                            if not key.isascii():
                                try:
                                    key.decode("utf-8")
                                except UnicodeDecodeError:
                                    raise _Fail(AVRO_INVALID_UTF8, pos, 0) from None
                            key_app(key)
                        pos += n
                    pos = item(buf, pos, end)
            if not skipping:
                m = len(child_vals)
                if m > _INT32_MAX:  # past the 32-bit offsets of Arrow lists and maps, as in C
                    raise _Fail(AVRO_OUTPUT_TOO_LARGE, pos, m)
                app(m)
            return pos

        return read_blocks
    if code in (O_UNION, O_SK_UNION):
        branches = tuple(children)
        nb = arg

        def read_union(buf: bytes, pos: int, end: int) -> int:
            start = pos
            if pos < end and buf[pos] < 0x80:
                b = buf[pos]
                k = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                k, pos = _varint(buf, pos, end)
            if k < 0 or k >= nb:
                raise _Fail(AVRO_BAD_UNION_INDEX, start, k)
            f = branches[k]
            if f is None:
                raise _Fail(AVRO_UNRESOLVED_UNION_BRANCH, start, k)
            return f(buf, pos, end)

        return read_union
    if code == O_BRANCH_ERR:
        return None
    if code == O_SELECT:
        child = _present(children)[0]
        ub = B[sid]
        tapp, oapp, committed = ub.vals.append, ub.uoffs.append, ub.committed
        cvals = B[arg2].vals
        k = arg

        def select(buf: bytes, pos: int, end: int) -> int:
            off = len(cvals)
            pos = child(buf, pos, end)
            tapp(k)
            oapp(off)
            committed[k] = off + 1
            return pos

        return select
    if code == O_NULLFILL:
        return _make_nullfill(B, sid)
    if code == O_DEFAULT:
        default_child = _present(children)[0]
        default_bytes = b"" if const is None else const
        n = len(default_bytes)

        def default(buf: bytes, pos: int, end: int) -> int:
            default_child(default_bytes, 0, n)
            return pos

        return default
    raise ValueError(f"unknown Avro op code {code}")  # pragma: no cover


def _finish(B: list[_Builder]) -> list[SlotOutput]:
    out: list[SlotOutput] = []
    for b in B:
        n = len(b.vals)
        kind = b.kind
        valid = np.array(b.valid, dtype=np.uint8) if b.valid is not None else None
        b1: AnyArray | None = None
        b2: AnyArray | None = None
        if kind == K_BOOL:
            b1 = np.array(b.vals, dtype=np.uint8)
        elif kind == K_I32:
            b1 = np.array(b.vals, dtype=np.int32)
        elif kind == K_I64:
            b1 = np.array(b.vals, dtype=np.int64)
        elif kind in (K_RAW, K_F32, K_F64):
            b1 = np.frombuffer(b"".join(b.vals), dtype=np.uint8)
        elif kind == K_BIN:
            offs = np.zeros(n + 1, dtype=np.int64)
            if n:
                np.cumsum(np.fromiter(map(len, b.vals), dtype=np.int64, count=n), out=offs[1:])
            b1 = offs
            b2 = np.frombuffer(b"".join(b.vals), dtype=np.uint8)
        elif kind in (K_LIST, K_MAP):
            b1 = np.zeros(n + 1, dtype=np.int64)
            b1[1:] = b.vals
        elif kind == K_UNION:
            b1 = np.array(b.vals, dtype=np.int8)
            b2 = np.array(b.uoffs, dtype=np.int32)
        out.append((n, valid, b1, b2))
    return out


class Layout:
    """A reader layout prepared once (the compiled twin copies it into C structs); see the module
    docstring for ``slots`` and ``shapes``."""

    def __init__(self, slots: Sequence[SlotSpec], shapes: Sequence[RowShape] | None = None) -> None:
        self.specs: list[SlotSpec] = [(int(k), bool(n), int(w), tuple(c), int(b)) for k, n, w, c, b in slots]
        if any(not 0 <= c < len(self.specs) for spec in self.specs for c in spec[3]):
            raise ValueError("malformed Avro layout: a child slot out of range")
        self.has_shapes = shapes is not None
        self.names: list[tuple[str, ...] | None] = [None] * len(self.specs)
        self.text: list[bool] = [False] * len(self.specs)
        self.convert: list[Callable[[Any], Any] | None] = [None] * len(self.specs)
        if shapes is not None:
            if len(shapes) != len(self.specs):
                raise ValueError("one row shape per slot is needed")
            for i, (names, text, convert) in enumerate(shapes):
                self.names[i] = None if names is None else tuple(names)
                self.text[i] = bool(text)
                self.convert[i] = convert
        self._idle: _RowBuilders | None = None  # the row builders between decode_row calls
        self._lock = threading.Lock()


class Program:
    """One flat decode program, prepared once (the compiled twin copies it into C structs)."""

    def __init__(self, ops: Sequence[Op], kids: Sequence[int]) -> None:
        self.ops = list(ops)
        self.kids = list(kids)


class _RowBuilders:
    """Builders for one row and the closures of every program compiled against them."""

    _MAX_ROOTS = 64

    def __init__(self, layout: Layout) -> None:
        self.builders = [_Builder(spec) for spec in layout.specs]
        self.budget = [ZERO_SIZE_ITEM_LIMIT]
        self.roots: dict[int, tuple[Program, Reader]] = {}  # by id(program); the entry keeps it alive

    def root(self, program: Program) -> Reader:
        hit = self.roots.get(id(program))
        if hit is not None:
            return hit[1]
        if len(self.roots) >= self._MAX_ROOTS:
            self.roots.clear()
        root = _compile(program.ops, program.kids, self.builders, self.budget)
        self.roots[id(program)] = (program, root)
        return root

    def rewind(self) -> None:
        """Empty every builder in place (the closures hold their lists)."""
        for b in self.builders:
            b.vals.clear()
            if b.valid is not None:
                b.valid.clear()
            b.uoffs.clear()
            b.committed[:] = [0] * len(b.committed)
        self.budget[0] = ZERO_SIZE_ITEM_LIMIT


def _row_value(layout: Layout, B: list[_Builder], sid: int, i: int) -> Any:  # noqa: C901 - one case per kind
    """The Python value of element ``i`` of slot ``sid`` (its row shape applied)."""
    b = B[sid]
    if b.valid is not None and not b.valid[i]:
        return None
    kind = b.kind
    v: Any
    if kind in (K_I32, K_I64):
        v = b.vals[i]
    elif kind == K_F64:
        v = _unpack_d(b.vals[i])[0]
    elif kind == K_F32:
        v = _unpack_f(b.vals[i])[0]
    elif kind == K_BOOL:
        v = bool(b.vals[i])
    elif kind == K_BIN:
        v = b.vals[i].decode("utf-8") if layout.text[sid] else b.vals[i]
    elif kind == K_RAW:
        v = b.vals[i]
    elif kind == K_STRUCT:
        names = layout.names[sid]
        if names is None:  # the row struct of a non-record reader: its one column
            return _row_value(layout, B, b.children[0], i)
        v = {name: _row_value(layout, B, c, i) for name, c in zip(names, b.children)}
    elif kind in (K_LIST, K_MAP):
        lo = b.vals[i - 1] if i else 0
        if kind == K_LIST:
            v = [_row_value(layout, B, b.children[0], j) for j in range(lo, b.vals[i])]
        else:
            key, item = b.children
            v = [(_row_value(layout, B, key, j), _row_value(layout, B, item, j)) for j in range(lo, b.vals[i])]
    elif kind == K_UNION:
        return _row_value(layout, B, b.children[b.vals[i]], b.uoffs[i])
    else:  # K_NULL
        return None
    convert = layout.convert[sid]
    return v if convert is None else convert(v)


def decode_row(layout: Layout, program: Program, data: Any, start: int, end: int) -> tuple[KernelError | None, Any]:
    """Decode the one payload ``data[start:end]``; see the module docstring for the contract."""
    if not layout.has_shapes:
        raise ValueError("this layout was prepared without row shapes")
    buf = data if isinstance(data, bytes) else bytes(data)
    if not 0 <= start <= end <= len(buf):
        raise ValueError(f"payload bounds {start}:{end} outside a buffer of {len(buf)} bytes")
    with layout._lock:
        rows, layout._idle = layout._idle, None
    if rows is None:
        rows = _RowBuilders(layout)
    try:
        rows.rewind()
        root = rows.root(program)
        try:
            pos = root(buf, start, end)
            if pos != end:
                raise _Fail(AVRO_TRAILING_BYTES, pos, end - pos)
        except _Fail as fail:
            return (fail.code, 0, fail.pos - start, fail.detail), None
        return None, _row_value(layout, rows.builders, 0, 0)
    finally:
        layout._idle = rows


def decode(
    layout: Layout,
    programs: Sequence[Program],
    segments: Sequence[tuple[Any, ...]],
    keep_going: bool,
    hints: Sequence[tuple[float, float]] | None = None,
) -> tuple[list[KernelError], list[SlotOutput]] | tuple[None, None]:
    """Decode every payload of ``segments``; see the module docstring for the contract."""
    for seg in segments:
        prefix = seg[5] if len(seg) > 5 else None
        if prefix is not None and isinstance(seg[1], int):
            if len(prefix) != seg[1]:
                raise ValueError(f"a prefix of {len(prefix)} bytes for a skip of {seg[1]}")
            if not wire_py.same_bytes(seg[0], seg[2], seg[3], 0, prefix):
                return None, None
    B = [_Builder(spec) for spec in layout.specs]
    budget = [ZERO_SIZE_ITEM_LIMIT]
    roots = [_compile(p.ops, p.kids, B, budget) for p in programs]
    errors: list[KernelError] = []
    row0 = 0
    enabled = gc.isenabled()
    gc.disable()
    try:
        for data, starts, ends, validity, plan_ids, *_ in segments:
            buf = bytes(data)
            if isinstance(starts, int):
                offs = np.asarray(ends, dtype=np.int64)
                s_list = (offs[:-1] + starts).tolist()
                e_list = offs[1:].tolist()
            else:
                s_list = np.asarray(starts, dtype=np.int64).tolist()
                e_list = np.asarray(ends, dtype=np.int64).tolist()
            v_list = None if validity is None else np.asarray(validity, dtype=bool).tolist()
            p_list = None if plan_ids is None else np.asarray(plan_ids, dtype=np.int64).tolist()
            root = roots[0]
            for i in range(len(s_list)):
                if v_list is not None and not v_list[i]:
                    _null_fill(B, 0)
                    continue
                if p_list is not None:
                    root = roots[p_list[i]]
                s = s_list[i]
                e = e_list[i]
                budget[0] = ZERO_SIZE_ITEM_LIMIT
                try:
                    pos = root(buf, s, e)
                    if pos != e:
                        raise _Fail(AVRO_TRAILING_BYTES, pos, e - pos)
                except _Fail as fail:
                    _truncate(B, 0, row0 + i)
                    errors.append((fail.code, row0 + i, fail.pos - s, fail.detail))
                    if not keep_going:
                        return errors, _finish(B)
                    _null_fill(B, 0)
            row0 += len(s_list)
    finally:
        if enabled:
            gc.enable()
    return errors, _finish(B)


def limit_errors(
    found: list[KernelError], avro_errors: list[KernelError], keep_going: bool, code: int
) -> tuple[list[KernelError], KernelError | None]:
    """``(errors, bug)`` of a transcoding twin's ``decode`` (JSON, Protobuf): the transcoder's errors
    ``found`` and what this kernel reported on the transcoded rows.

    A message over the builders' limit of items of no size (AVRO_TOO_MANY_EMPTY_ITEMS) is bad data:
    the format's ``code`` at offset 0 (where the builders stopped is no place in the payload, and
    the compiled twins cannot say it either) with the limit as detail, merged into ``found`` in row
    order. Without ``keep_going`` this kernel read only the rows before the transcoder's first bad
    one and stopped at its own first, so that one is the first overall. Any other error is ``bug``.
    """
    limited: list[KernelError] = []
    for error in avro_errors:
        if error[0] != AVRO_TOO_MANY_EMPTY_ITEMS:
            return found, error
        limited.append((code, error[1], 0, ZERO_SIZE_ITEM_LIMIT))
    if not limited:
        return found, None
    if not keep_going:
        return limited[:1], None
    return sorted(found + limited, key=lambda error: error[1]), None
