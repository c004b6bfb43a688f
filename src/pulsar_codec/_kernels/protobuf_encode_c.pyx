# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled twin of the Protobuf encode kernel (pure twin: ``protobuf_encode_py.py``, which documents
the fragment columns and the contract; both twins give the same bytes).

Each function measures its output first (one pass over the sizes), allocates it once, then writes
it row by row with the GIL released. Bounds: the inputs are checked once, before any write, as the
pure twin checks them (offsets non-decreasing and within their data, masks and columns of the row
count), so every copy stays inside its source; every write stays inside the output the first pass
sized. That is why bounds checking is off.
"""

from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcpy

import numpy as np

__all__ = ["join_fragments", "length_fragments", "varint_fragments"]


cdef inline int varint_size(uint64_t v) noexcept nogil:
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline int64_t put_varint(uint8_t *out, int64_t pos, uint64_t v) noexcept nogil:
    while v >= 0x80:
        out[pos] = <uint8_t> ((v & 0x7F) | 0x80)
        v >>= 7
        pos += 1
    out[pos] = <uint8_t> v
    return pos + 1


cdef _check_offsets(const int64_t[::1] offsets, int64_t data_length):
    """Refuse offsets that do not describe values inside their data (a bug upstream, never data)."""
    cdef int64_t i, n = offsets.shape[0]
    if n == 0:
        raise ValueError("fragment offsets need at least one entry")
    if offsets[0] < 0 or offsets[n - 1] > data_length:
        raise ValueError("fragment offsets point outside their data")
    for i in range(n - 1):
        if offsets[i + 1] < offsets[i]:
            raise ValueError("fragment offsets decrease")


cdef const uint8_t[::1] _bytes_view(data):
    if data is None or len(data) == 0:
        return b"\0"
    return memoryview(data).cast("B")


cdef int64_t _data_length(data):
    return 0 if data is None else len(memoryview(data).cast("B"))


def _mask(present, int64_t n):
    """``present`` as n contiguous bytes (None: every row), checked against the row count."""
    if present is None:
        return None
    keep = np.ascontiguousarray(present, dtype=np.uint8)
    if keep.shape[0] != n:
        raise ValueError("present has another length than the rows")
    return keep if n else None


def varint_fragments(bytes prefix, values, present):
    """``prefix`` + the varint of each uint64 of ``values`` where ``present``."""
    cdef const uint64_t[::1] vals = np.ascontiguousarray(values, dtype=np.uint64)
    cdef int64_t n = vals.shape[0], i, total = 0, pos = 0
    cdef const uint8_t[::1] keep
    cdef const uint8_t *has = NULL
    cdef const uint8_t *pre = prefix
    cdef int64_t plen = len(prefix)
    mask = _mask(present, n)
    if mask is not None:
        keep = mask
        has = &keep[0]
    offsets_arr = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] offsets = offsets_arr
    with nogil:
        for i in range(n):
            if has == NULL or has[i]:
                total += plen + varint_size(vals[i])
    data_arr = np.empty(total if total else 1, dtype=np.uint8)
    cdef uint8_t[::1] data = data_arr
    offsets[0] = 0
    with nogil:
        for i in range(n):
            if has == NULL or has[i]:
                if plen:
                    memcpy(&data[pos], pre, <size_t> plen)
                    pos += plen
                pos = put_varint(&data[0], pos, vals[i])
            offsets[i + 1] = pos
    return offsets_arr, data_arr[:total]


def length_fragments(bytes prefix, offsets, data, present):
    """``prefix`` + the varint length + each body of ``(offsets, data)`` where ``present``."""
    cdef const int64_t[::1] offs = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef const uint8_t[::1] body = _bytes_view(data)
    _check_offsets(offs, _data_length(data))
    cdef int64_t n = offs.shape[0] - 1, i, total = 0, pos = 0, blen
    cdef const uint8_t[::1] keep
    cdef const uint8_t *has = NULL
    cdef const uint8_t *pre = prefix
    cdef int64_t plen = len(prefix)
    mask = _mask(present, n)
    if mask is not None:
        keep = mask
        has = &keep[0]
    out_offsets_arr = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] out_offsets = out_offsets_arr
    with nogil:
        for i in range(n):
            if has == NULL or has[i]:
                blen = offs[i + 1] - offs[i]
                total += plen + varint_size(<uint64_t> blen) + blen
    out_arr = np.empty(total if total else 1, dtype=np.uint8)
    cdef uint8_t[::1] out = out_arr
    out_offsets[0] = 0
    with nogil:
        for i in range(n):
            if has == NULL or has[i]:
                blen = offs[i + 1] - offs[i]
                if plen:
                    memcpy(&out[pos], pre, <size_t> plen)
                    pos += plen
                pos = put_varint(&out[0], pos, <uint64_t> blen)
                if blen:
                    memcpy(&out[pos], &body[offs[i]], <size_t> blen)
                    pos += blen
            out_offsets[i + 1] = pos
    return out_offsets_arr, out_arr[:total]


def join_fragments(list columns, int64_t length):
    """Each row's values of ``columns`` (``(offsets, data)`` pairs), concatenated in order."""
    cdef Py_ssize_t k, ncols = len(columns)
    cdef int64_t i, total = 0, pos = 0, vlen, start
    cdef const int64_t[::1] offs
    cdef const uint8_t[::1] body
    views = []
    for off, dat in columns:
        offs = np.ascontiguousarray(off, dtype=np.int64)
        if offs.shape[0] != length + 1:
            raise ValueError("a fragment column has another length than the rows")
        _check_offsets(offs, _data_length(dat))
        total += offs[length] - offs[0]
        views.append((offs, _bytes_view(dat)))
    out_offsets_arr = np.zeros(length + 1, dtype=np.int64)
    cdef int64_t[::1] out_offsets = out_offsets_arr
    out_arr = np.empty(total if total else 1, dtype=np.uint8)
    cdef uint8_t[::1] out = out_arr
    # row sizes first (column by column), then each column's values copied to their places: a
    # column's offsets and data stay in cache while it is copied
    for k in range(ncols):
        offs = views[k][0]
        with nogil:
            for i in range(length):
                out_offsets[i + 1] += offs[i + 1] - offs[i]
    with nogil:
        for i in range(length):
            out_offsets[i + 1] += out_offsets[i]
    cursor_arr = out_offsets_arr[:length].copy()
    cdef int64_t[::1] cursor = cursor_arr
    for k in range(ncols):
        offs = views[k][0]
        body = views[k][1]
        with nogil:
            for i in range(length):
                start = offs[i]
                vlen = offs[i + 1] - start
                if vlen:
                    memcpy(&out[cursor[i]], &body[start], <size_t> vlen)
                    cursor[i] += vlen
    return out_offsets_arr, out_arr[:total]
