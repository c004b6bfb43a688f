"""Pure-Python twin of the KeyValue kernels (compiled twin: ``keyvalue_c.pyx``).

Both layouts handled here are two length-prefixed parts, ``i32 BE len || bytes || i32 BE len ||
bytes``: the INLINE KeyValue payload (key, value) and the PIP-420 KeyValue schema id (key schema
id, value schema id). ``mode`` says what a negative or zero length means:

``MODE_INLINE``      Java ``KeyValue``: -1 is null, 0 is empty, any other negative length is an error.
``MODE_INLINE_CPP``  C++ ``KeyValueImpl``: -1 reads as empty (C++ has no null component).
``MODE_SCHEMA_ID``   ``KeyValue.getSchemaId``: 0 and -1 both mean "no id" (null), other negatives are
                     errors; an empty (or null) schema id is "no ids at all" (both null).

The kernels never format text: errors are ``(code, index, offset, detail)`` tuples, see
:mod:`pulsar_codec.errors`. The offset is relative to the start of the message; the key's length
field is always at offset 0, which is how the caller tells a key error from a value error.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np

from ._typing import AnyArray, ByteData, Int32Array, Int64Array, KernelError, UInt8Array
from .defs import (
    KV_LENGTH_PAST_END,
    KV_NEGATIVE_LENGTH,
    KV_TRAILING_BYTES,
    KV_TRUNCATED_LENGTH,
    MODE_INLINE,
    MODE_INLINE_CPP,
    MODE_SCHEMA_ID,
)

__all__ = ["MODE_INLINE", "MODE_INLINE_CPP", "MODE_SCHEMA_ID", "split", "split_copy", "join"]

# (code, offset, detail) or None, then key start, end, valid and value start, end, valid
OneSplit: TypeAlias = tuple[
    tuple[int, int, int] | None, int | None, int | None, int | None, int | None, int | None, int | None
]
# error, key starts, key ends, key valid, value starts, value ends, value valid
Split: TypeAlias = tuple[KernelError | None, Int64Array, Int64Array, UInt8Array, Int64Array, Int64Array, UInt8Array]
# error, key data, key offsets, key valid, value data, value offsets, value valid (all None after an error)
SplitCopy: TypeAlias = tuple[
    KernelError | None,
    UInt8Array | None,
    Int32Array | None,
    UInt8Array | None,
    UInt8Array | None,
    Int32Array | None,
    UInt8Array | None,
]


def split_one(buf: memoryview, start: int, end: int, mode: int) -> OneSplit:
    """Parse one message ``buf[start:end]``.

    Returns ``(None, key_start, key_end, key_valid, value_start, value_end, value_valid)`` or
    ``((code, offset, detail), ...)`` with the remaining entries None. Shared by :func:`split`
    and the per-value functions of :mod:`pulsar_codec.keyvalue`.
    """
    if mode == MODE_SCHEMA_ID and start == end:
        return None, end, end, 0, end, end, 0
    pos = start
    parts: list[int] = []  # start, end, valid of the key, then of the value
    for _part in range(2):
        left = end - pos
        if left < 4:
            return (KV_TRUNCATED_LENGTH, pos - start, left), None, None, None, None, None, None
        length = int.from_bytes(buf[pos : pos + 4], "big", signed=True)
        if length < 0:
            if length != -1:
                return (KV_NEGATIVE_LENGTH, pos - start, length), None, None, None, None, None, None
            pos += 4
            parts += (pos, pos, 1 if mode == MODE_INLINE_CPP else 0)
            continue
        if length > left - 4:
            return (KV_LENGTH_PAST_END, pos - start, length), None, None, None, None, None, None
        pos += 4
        parts += (pos, pos + length, 0 if (mode == MODE_SCHEMA_ID and length == 0) else 1)
        pos += length
    if pos != end:
        return (KV_TRAILING_BYTES, pos - start, end - pos), None, None, None, None, None, None
    key_start, key_end, key_valid, value_start, value_end, value_valid = parts
    return None, key_start, key_end, key_valid, value_start, value_end, value_valid


def _be32(buf: UInt8Array, pos: Int64Array, ok: AnyArray) -> Int64Array:
    """Signed big-endian i32 at ``pos`` for the rows where ``ok`` (0 elsewhere); vectorised."""
    p = np.where(ok, pos, 0)
    if not ok.any():
        return np.zeros(len(pos), dtype=np.int64)
    b = buf[p[:, None] + np.arange(4)].astype(np.int64)
    value = (b[:, 0] << 24) | (b[:, 1] << 16) | (b[:, 2] << 8) | b[:, 3]
    value = np.where(value >= 2**31, value - 2**32, value)
    return np.where(ok, value, 0)


def split(data: ByteData, offsets: AnyArray, validity: AnyArray | None, mode: int) -> Split:
    """Split every two-part message of one chunk.

    Parameters
    ----------
    data : bytes-like
        The chunk's data buffer.
    offsets : numpy int64 array of n + 1 entries
        Message boundaries in ``data``.
    validity : numpy bool array of n entries, or None when every message is valid.
    mode : int
        One of the MODE_* constants.

    Returns
    -------
    (error, key_starts, key_ends, key_valid, value_starts, value_ends, value_valid)
        ``error`` is None or ``(code, index, offset, detail)``. Starts and ends are int64[n]
        positions in ``data``; the ``*_valid`` arrays are uint8[n] (0 for a null part, and for
        both parts of a null message).

    The rows are parsed with numpy, all at once; the first row that fails any check is parsed
    again by :func:`split_one`, which says exactly what is wrong with it.
    """
    buf = np.frombuffer(data, dtype=np.uint8) if len(data) else np.zeros(4, dtype=np.uint8)
    offs = np.asarray(offsets, dtype=np.int64)
    n = len(offs) - 1
    starts, ends = offs[:-1], offs[1:]
    live = np.ones(n, dtype=bool) if validity is None else np.asarray(validity, dtype=bool).copy()
    if mode == MODE_SCHEMA_ID:
        live &= starts != ends  # an empty schema id means no ids at all
    good = live.copy()
    parts = []
    pos = starts.copy()
    for _part in range(2):
        good &= ends - pos >= 4
        length = _be32(buf, pos, good)
        good &= length >= -1
        null = good & (length == -1)
        body = np.where(null, 0, length)
        good &= body <= ends - pos - 4
        part_start = pos + 4
        part_end = part_start + body
        if mode == MODE_INLINE_CPP:
            part_valid = good
        elif mode == MODE_SCHEMA_ID:
            part_valid = good & (body > 0)
        else:
            part_valid = good & ~null
        parts.append((part_start, part_end, part_valid))
        pos = part_end
    good &= pos == ends
    bad = live & ~good
    if bad.any():
        i = int(np.argmax(bad))
        problem = split_one(memoryview(data).cast("B"), int(starts[i]), int(ends[i]), mode)[0]
        assert problem is not None  # the vectorised checks and split_one test the same conditions
        code, offset, detail = problem
        error: KernelError | None = (code, i, offset, detail)
    else:
        error = None
    (ks, ke, kv), (vs, ve, vv) = parts
    # null messages (and empty schema ids) are empty, invalid slices at the message's end
    ks = np.where(good, ks, ends)
    ke = np.where(good, ke, ends)
    vs = np.where(good, vs, ends)
    ve = np.where(good, ve, ends)
    return error, ks, ke, kv.astype(np.uint8), vs, ve, vv.astype(np.uint8)


def split_copy(data: ByteData, offsets: AnyArray, validity: AnyArray | None, mode: int) -> SplitCopy:
    """Split every two-part message of one chunk and copy both parts into fresh buffers.

    The chunk's data must be below 2 GiB, so both outputs fit int32 Arrow offsets.

    Returns
    -------
    (error, key_data, key_offsets, key_valid, value_data, value_offsets, value_valid)
        ``error`` is None or ``(code, index, offset, detail)`` (then the rest is None). ``*_data``
        are uint8 arrays, ``*_offsets`` int32[n + 1] Arrow offsets into them and ``*_valid``
        uint8[n] as in :func:`split`.
    """
    if len(data) > 2**31 - 1:
        raise ValueError("split_copy needs a chunk below 2 GiB")
    error, ks, ke, kv, vs, ve, vv = split(data, offsets, validity, mode)
    if error is not None:
        return error, None, None, None, None, None, None
    key_data, key_offsets = _gather(data, ks, ke, kv)
    value_data, value_offsets = _gather(data, vs, ve, vv)
    return (error, key_data, key_offsets.astype(np.int32), kv, value_data, value_offsets.astype(np.int32), vv)


def join(
    key_data: ByteData,
    key_offsets: AnyArray,
    key_validity: AnyArray | None,
    value_data: ByteData,
    value_offsets: AnyArray,
    value_validity: AnyArray | None,
    mode: int,
) -> tuple[UInt8Array, Int64Array, UInt8Array | None]:
    """Write ``i32 BE len || key || i32 BE len || value`` for every row.

    Lengths are range-checked by the caller (each part below 2**31 bytes). A null part is written
    as length -1 in ``MODE_INLINE``; in ``MODE_INLINE_CPP`` null and empty parts are both -1; in
    ``MODE_SCHEMA_ID`` null and empty ids are length 0 and a row whose two ids are both absent is
    a null row with no bytes.

    Returns
    -------
    (data, offsets, validity)
        ``data`` uint8 array, ``offsets`` int64[n + 1], ``validity`` uint8[n] or None when every row is
        valid (always None for the INLINE modes).
    """
    kbuf = memoryview(key_data).cast("B")
    vbuf = memoryview(value_data).cast("B")
    koffs = np.asarray(key_offsets, dtype=np.int64).tolist()
    voffs = np.asarray(value_offsets, dtype=np.int64).tolist()
    n = len(koffs) - 1
    kvalid = None if key_validity is None else np.asarray(key_validity, dtype=bool).tolist()
    vvalid = None if value_validity is None else np.asarray(value_validity, dtype=bool).tolist()
    out = bytearray()
    offsets = [0] * (n + 1)
    ids = mode == MODE_SCHEMA_ID  # only schema ids can make a null row
    valid = bytearray(b"\x01" * n)
    minus_one = b"\xff\xff\xff\xff"
    for i in range(n):
        klen = koffs[i + 1] - koffs[i] if (kvalid is None or kvalid[i]) else -1
        vlen = voffs[i + 1] - voffs[i] if (vvalid is None or vvalid[i]) else -1
        if ids:
            if klen <= 0 and vlen <= 0:
                valid[i] = 0
                offsets[i + 1] = len(out)
                continue
            klen = max(klen, 0)
            vlen = max(vlen, 0)
        elif mode == MODE_INLINE_CPP:
            klen = klen if klen > 0 else -1
            vlen = vlen if vlen > 0 else -1
        for length, buf, at in ((klen, kbuf, koffs[i]), (vlen, vbuf, voffs[i])):
            if length < 0:
                out += minus_one
            else:
                out += length.to_bytes(4, "big")
                out += buf[at : at + length]
        offsets[i + 1] = len(out)
    return (
        np.frombuffer(out, dtype=np.uint8),
        np.array(offsets, dtype=np.int64),
        None if all(valid) else np.frombuffer(bytes(valid), dtype=np.uint8),
    )


def _gather(
    data: ByteData, starts: AnyArray, ends: AnyArray, validity: AnyArray | None
) -> tuple[UInt8Array, Int64Array]:
    """Copy the slices ``data[starts[i]:ends[i]]`` one after the other (null rows are empty).

    Returns (out: uint8 ndarray, offsets: int64 ndarray of n + 1 entries). The copy is Arrow's
    cast of binary views to binary, so no Python runs per row or per byte.
    """
    import pyarrow as pa

    from .wire_py import binary_views

    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if validity is not None:
        ends = np.where(np.asarray(validity, dtype=bool), ends, starts)
    n = len(starts)
    lengths = ends - starts
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if n == 0 or offsets[-1] == 0:
        return np.zeros(0, dtype=np.uint8), offsets
    source = pa.py_buffer(data)
    views = binary_views(data, starts, ends, None, 0)
    copied = pa.Array.from_buffers(pa.binary_view(), n, [None, pa.py_buffer(views), source]).cast(pa.large_binary())
    out = np.frombuffer(copied.buffers()[2], dtype=np.uint8)[: int(offsets[-1])]
    return out, offsets
