"""Pure-Python twin of the Pulsar primitive kernels (compiled twin: ``primitives_c.pyx``).

``decode_fixed`` reads one fixed-width big-endian payload per message into a native numpy column
(vectorised with numpy; Python integers only for the rare rows near an overflow edge);
``validate_utf8`` checks STRING payloads. Errors are ``(code, index, offset, detail)`` tuples for
the first bad message, in message order, whichever check fails:

``PRIM_BAD_LENGTH``    offset = min(size, width), detail = size
``PRIM_OUT_OF_RANGE``  offset = the field (0, or 8 for the nanosecond of a LOCAL_DATE_TIME),
                       detail = the field's value
``PRIM_INVALID_UTF8``  offset = the lead byte of the first ill-formed sequence
"""

from __future__ import annotations

import numpy as np

from ._typing import AnyArray, ByteData, Int64Array, KernelError
from .defs import (
    DTYPES,
    KIND_BOOLEAN,
    KIND_DOUBLE,
    KIND_FLOAT,
    KIND_INSTANT,
    KIND_INT8,
    KIND_INT16,
    KIND_INT32,
    KIND_INT64,
    KIND_LOCAL_DATE,
    KIND_LOCAL_DATE_TIME,
    KIND_LOCAL_TIME,
    KIND_TIME,
    MS_PER_DAY,
    NS_PER_DAY,
    NS_PER_S,
    PRIM_BAD_LENGTH,
    PRIM_INVALID_UTF8,
    PRIM_OUT_OF_RANGE,
    WIDTHS,
)

__all__ = [
    "KIND_BOOLEAN",
    "KIND_INT8",
    "KIND_INT16",
    "KIND_INT32",
    "KIND_INT64",
    "KIND_FLOAT",
    "KIND_DOUBLE",
    "KIND_TIME",
    "KIND_INSTANT",
    "KIND_LOCAL_DATE",
    "KIND_LOCAL_TIME",
    "KIND_LOCAL_DATE_TIME",
    "WIDTHS",
    "DTYPES",
    "decode_fixed",
    "validate_utf8",
]

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1


def _first(mask: AnyArray, limit: int) -> int:
    hits = np.flatnonzero(mask[:limit])
    return int(hits[0]) if len(hits) else limit


def decode_fixed(
    data: ByteData, offsets: AnyArray, validity: AnyArray | None, kind: int
) -> tuple[KernelError | None, AnyArray]:
    """Decode one chunk of fixed-width payloads.

    Parameters
    ----------
    data : bytes-like
        The chunk's data buffer.
    offsets : numpy int64 array of n + 1 entries
    validity : numpy bool array of n entries, or None when every message is valid.
    kind : int
        One of the KIND_* constants.

    Returns
    -------
    (error, values)
        ``error`` is None or ``(code, index, offset, detail)``; ``values`` is a numpy array of
        ``DTYPES[kind]`` with n entries (0 for null messages).
    """
    width = WIDTHS[kind]
    buf = np.frombuffer(data, dtype=np.uint8) if len(data) else np.zeros(0, dtype=np.uint8)
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    valid = np.ones(n, dtype=bool) if validity is None else np.asarray(validity, dtype=bool)
    starts = offsets[:-1]
    sizes = offsets[1:] - starts
    bad_len = valid & (sizes != width)
    limit = _first(bad_len, n)  # rows before it all have the right length
    rows = valid.copy()
    rows[limit:] = False
    take = np.flatnonzero(rows)
    raw = buf[starts[take][:, None] + np.arange(width)] if len(take) else np.zeros((0, width), dtype=np.uint8)
    out = np.zeros(n, dtype=DTYPES[kind])
    error = None
    range_bad = None  # (row, offset, detail) of the first value out of range

    def field(lo: int, hi: int, dtype: str) -> AnyArray:
        return np.ascontiguousarray(raw[:, lo:hi]).view(dtype).reshape(-1).astype(dtype[1:])

    if kind == KIND_BOOLEAN:
        out[take] = raw[:, 0] != 0
    elif kind in (KIND_INT8, KIND_INT16, KIND_INT32, KIND_INT64):
        out[take] = field(0, width, f">i{width}")
    elif kind == KIND_FLOAT:
        out.view(np.uint32)[take] = field(0, 4, ">u4")
    elif kind == KIND_DOUBLE:
        out.view(np.uint64)[take] = field(0, 8, ">u8")
    elif kind == KIND_TIME:
        out[take] = np.mod(field(0, 8, ">i8"), MS_PER_DAY)
    elif kind == KIND_LOCAL_DATE:
        days = field(0, 8, ">i8")
        bad = (days < _I32_MIN) | (days > _I32_MAX)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            range_bad = (int(take[j]), 0, int(days[j]))
        else:
            out[take] = days
    elif kind == KIND_LOCAL_TIME:
        nod = field(0, 8, ">i8")
        bad = (nod < 0) | (nod >= NS_PER_DAY)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            range_bad = (int(take[j]), 0, int(nod[j]))
        else:
            out[take] = nod
    elif kind == KIND_INSTANT:
        seconds = field(0, 8, ">i8")
        nanos = field(8, 12, ">i4").astype(np.int64)
        range_bad = _combine(out, take, seconds, nanos, NS_PER_S, 0, None)
    elif kind == KIND_LOCAL_DATE_TIME:
        days = field(0, 8, ">i8")
        nod = field(8, 16, ">i8")
        range_bad = _combine(out, take, days, nod, NS_PER_DAY, 0, (8, 0, NS_PER_DAY))
    else:
        raise ValueError(f"unknown primitive kind {kind}")
    if range_bad is not None:
        error = (PRIM_OUT_OF_RANGE, range_bad[0], range_bad[1], range_bad[2])
    elif limit < n:
        size = int(sizes[limit])
        error = (PRIM_BAD_LENGTH, limit, min(size, width), size)
    return error, out


def _combine(
    out: AnyArray,
    take: Int64Array,
    hi: AnyArray,
    lo: AnyArray,
    scale: int,
    hi_offset: int,
    lo_check: tuple[int, int, int] | None,
) -> tuple[int, int, int] | None:
    """out[take] = hi * scale + lo; returns (row, offset, detail) of the first failing row or None.

    ``lo_check`` = (offset, min, max_exclusive) validates ``lo`` first (LOCAL_DATE_TIME's
    nanosecond of the day); a failing row is the first one where either check fails.
    """
    lo_bad = np.zeros(len(hi), dtype=bool)
    if lo_check is not None:
        lo_bad = (lo < lo_check[1]) | (lo >= lo_check[2])
    # rows whose product is certainly representable; the rest are checked with Python ints
    # (a two-sided bound: np.abs of the smallest int64 wraps to itself and would pass as safe)
    bound = (_I64_MAX // scale) - 3
    safe = (hi >= -bound) & (hi <= bound)
    hi_bad = np.zeros(len(hi), dtype=bool)
    for j in np.flatnonzero(~safe & ~lo_bad):
        value = int(hi[j]) * scale + int(lo[j])
        hi_bad[j] = not _I64_MIN <= value <= _I64_MAX
    bad = lo_bad | hi_bad
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        if lo_check is not None and lo_bad[first]:
            return int(take[first]), lo_check[0], int(lo[first])
        return int(take[first]), hi_offset, int(hi[first])
    with np.errstate(over="ignore"):
        out[take] = np.where(safe, hi * scale + lo, 0)
    for edge in np.flatnonzero(~safe):
        out[take[edge]] = int(hi[edge]) * scale + int(lo[edge])
    return None


def validate_utf8(data: ByteData, offsets: AnyArray, validity: AnyArray | None) -> KernelError | None:
    """Check that every valid message of one chunk is well-formed UTF-8.

    Returns None or ``(PRIM_INVALID_UTF8, index, offset, 0)`` for the first bad message.
    """
    raw = bytes(data)
    offs = np.asarray(offsets, dtype=np.int64).tolist()
    n = len(offs) - 1
    valid = None if validity is None else np.asarray(validity, dtype=bool).tolist()
    start0 = offs[0]
    end0 = offs[-1]
    # fast path: if the whole span decodes, every message does unless one splits a character
    try:
        raw[start0:end0].decode("utf-8")
        whole_ok = True
    except UnicodeDecodeError:
        whole_ok = False
    for i in range(n):
        if valid is not None and not valid[i]:
            continue
        start, end = offs[i], offs[i + 1]
        if whole_ok and (start == end or (raw[start] & 0xC0) != 0x80) and (end == end0 or (raw[end] & 0xC0) != 0x80):
            continue
        try:
            raw[start:end].decode("utf-8")
        except UnicodeDecodeError as exc:
            return (PRIM_INVALID_UTF8, i, exc.start, 0)
    return None
