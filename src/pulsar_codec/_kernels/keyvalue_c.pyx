# cython: boundscheck=False, wraparound=False, cdivision=True
"""Compiled twin of the KeyValue kernels (pure twin: ``keyvalue_py.py``, which documents the modes).

Bounds: every read of a length field is guarded by ``end - pos < 4`` and every part by
``length > left - 4``, both against the message's own end offset, which is why bounds checking is
off for this module. Output arrays are sized from the input before the loops run.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
from libc.string cimport memcpy

import numpy as np
import pyarrow as pa

from . cimport defs
from .defs cimport pc_error, pc_fail

cdef extern from "pc_bytes.h":
    uint32_t pc_be32(const uint8_t *p) nogil
    void pc_put_be32(uint8_t *p, uint32_t v) nogil

__all__ = ["MODE_INLINE", "MODE_INLINE_CPP", "MODE_SCHEMA_ID", "split", "split_copy", "join"]

# the modes as Python ints, from the C header (the pure twin exports defs.py's)
MODE_INLINE = defs.MODE_INLINE
MODE_INLINE_CPP = defs.MODE_INLINE_CPP
MODE_SCHEMA_ID = defs.MODE_SCHEMA_ID


cdef object pool_empty(int64_t count, dtype):
    """An uninitialised numpy array in Arrow's memory pool: the pool keeps freed memory warm, where
    fresh numpy allocations pay a page fault per 4 KiB on first touch."""
    dt = np.dtype(dtype)
    buf = pa.allocate_buffer(max(count, 1) * dt.itemsize)
    return np.frombuffer(buf, dtype=dt, count=max(count, 1))[:count]


cdef inline int read_part(const uint8_t *buf, int64_t *pos, int64_t start, int64_t end, int mode,
                          int64_t *s, int64_t *e, uint8_t *v, int64_t i, pc_error *err) noexcept nogil:
    cdef int64_t p = pos[0]
    cdef int64_t left = end - p
    cdef int32_t length
    if left < 4:
        return pc_fail(err, defs.KV_TRUNCATED_LENGTH, i, p - start, left)
    length = <int32_t> pc_be32(buf + p)
    if length < 0:
        if length != -1:
            return pc_fail(err, defs.KV_NEGATIVE_LENGTH, i, p - start, length)
        s[0] = p + 4
        e[0] = p + 4
        v[0] = 1 if mode == defs.MODE_INLINE_CPP else 0
        pos[0] = p + 4
        return 0
    if length > left - 4:
        return pc_fail(err, defs.KV_LENGTH_PAST_END, i, p - start, length)
    s[0] = p + 4
    e[0] = p + 4 + length
    v[0] = 0 if (mode == defs.MODE_SCHEMA_ID and length == 0) else 1
    pos[0] = p + 4 + length
    return 0


cdef int split_loop(const uint8_t *buf, const int64_t *offs, const uint8_t *valid, int64_t n, int mode,
                    int64_t *ks, int64_t *ke, uint8_t *kv, int64_t *vs, int64_t *ve, uint8_t *vv,
                    pc_error *err) noexcept nogil:
    # twin: keyvalue_py.split
    cdef int64_t i, start, end, pos
    cdef int rc
    for i in range(n):
        start = offs[i]
        end = offs[i + 1]
        if (valid != NULL and not valid[i]) or (mode == defs.MODE_SCHEMA_ID and start == end):
            ks[i] = end
            ke[i] = end
            vs[i] = end
            ve[i] = end
            kv[i] = 0
            vv[i] = 0
            continue
        pos = start
        rc = read_part(buf, &pos, start, end, mode, &ks[i], &ke[i], &kv[i], i, err)
        if rc:
            return rc
        rc = read_part(buf, &pos, start, end, mode, &vs[i], &ve[i], &vv[i], i, err)
        if rc:
            return rc
        if pos != end:
            return pc_fail(err, defs.KV_TRAILING_BYTES, i, pos - start, end - pos)
    return 0


def split(data, offsets, validity, int mode):
    """Split every two-part message of one chunk; same contract as ``keyvalue_py.split``."""
    cdef const uint8_t[::1] buf = memoryview(data).cast("B") if len(data) else b"\0"
    cdef const int64_t[::1] offs = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef int64_t n = offs.shape[0] - 1
    cdef const uint8_t[::1] valid_view
    cdef const uint8_t *valid = NULL
    if validity is not None and n > 0:
        valid_view = np.ascontiguousarray(validity, dtype=np.uint8)
        valid = &valid_view[0]
    ks_arr = pool_empty(n if n else 1, np.int64)
    ke_arr = pool_empty(n if n else 1, np.int64)
    vs_arr = pool_empty(n if n else 1, np.int64)
    ve_arr = pool_empty(n if n else 1, np.int64)
    kv_arr = pool_empty(n if n else 1, np.uint8)
    vv_arr = pool_empty(n if n else 1, np.uint8)
    cdef int64_t[::1] ks = ks_arr
    cdef int64_t[::1] ke = ke_arr
    cdef int64_t[::1] vs = vs_arr
    cdef int64_t[::1] ve = ve_arr
    cdef uint8_t[::1] kv = kv_arr
    cdef uint8_t[::1] vv = vv_arr
    cdef pc_error err
    cdef int rc = 0
    err.code = 0
    if n > 0:
        with nogil:
            rc = split_loop(&buf[0], &offs[0], valid, n, mode, &ks[0], &ke[0], &kv[0], &vs[0], &ve[0], &vv[0],
                            &err)
    error = None if rc == 0 else (err.code, err.index, err.offset, err.detail)
    return error, ks_arr[:n], ke_arr[:n], kv_arr[:n], vs_arr[:n], ve_arr[:n], vv_arr[:n]


cdef int count_loop(const uint8_t *buf, const int64_t *offs, const uint8_t *valid, int64_t n, int mode,
                    int32_t *koffs, uint8_t *kv, int32_t *voffs, uint8_t *vv, pc_error *err) noexcept nogil:
    # twin: keyvalue_py.split_copy (first pass: validate, Arrow offsets of both outputs)
    cdef int64_t i, start, end, pos, s, e
    cdef int64_t ktotal = 0, vtotal = 0
    cdef int rc
    koffs[0] = 0
    voffs[0] = 0
    for i in range(n):
        start = offs[i]
        end = offs[i + 1]
        if (valid != NULL and not valid[i]) or (mode == defs.MODE_SCHEMA_ID and start == end):
            kv[i] = 0
            vv[i] = 0
        else:
            pos = start
            rc = read_part(buf, &pos, start, end, mode, &s, &e, &kv[i], i, err)
            if rc:
                return rc
            ktotal += e - s
            rc = read_part(buf, &pos, start, end, mode, &s, &e, &vv[i], i, err)
            if rc:
                return rc
            vtotal += e - s
            if pos != end:
                return pc_fail(err, defs.KV_TRAILING_BYTES, i, pos - start, end - pos)
        # both totals are bounded by the chunk's data size, which the caller keeps below 2 GiB
        koffs[i + 1] = <int32_t> ktotal
        voffs[i + 1] = <int32_t> vtotal
    return 0


cdef void copy_loop(const uint8_t *buf, const int64_t *offs, int64_t n, const int32_t *koffs, uint8_t *kout,
                    const int32_t *voffs, uint8_t *vout) noexcept nogil:
    # second pass over rows the first pass validated: sizes come from the output offsets
    cdef int64_t i, pos, klen, vlen
    for i in range(n):
        klen = koffs[i + 1] - koffs[i]
        vlen = voffs[i + 1] - voffs[i]
        if klen == 0 and vlen == 0:
            continue
        pos = offs[i]
        if klen:
            memcpy(kout + koffs[i], buf + pos + 4, <size_t> klen)
        pos += 4 + klen
        if vlen == 0:
            continue
        memcpy(vout + voffs[i], buf + pos + 4, <size_t> vlen)


def split_copy(data, offsets, validity, int mode):
    """Split and copy both parts into fresh buffers; same contract as ``keyvalue_py.split_copy``."""
    cdef const uint8_t[::1] buf = memoryview(data).cast("B") if len(data) else b"\0"
    cdef const int64_t[::1] offs = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef int64_t n = offs.shape[0] - 1
    if len(data) > 2147483647:
        raise ValueError("split_copy needs a chunk below 2 GiB")
    cdef const uint8_t[::1] valid_view
    cdef const uint8_t *valid = NULL
    if validity is not None and n > 0:
        valid_view = np.ascontiguousarray(validity, dtype=np.uint8)
        valid = &valid_view[0]
    koffs_arr = pool_empty(n + 1, np.int32)
    voffs_arr = pool_empty(n + 1, np.int32)
    kv_arr = pool_empty(n if n else 1, np.uint8)
    vv_arr = pool_empty(n if n else 1, np.uint8)
    cdef int32_t[::1] koffs = koffs_arr
    cdef int32_t[::1] voffs = voffs_arr
    cdef uint8_t[::1] kv = kv_arr
    cdef uint8_t[::1] vv = vv_arr
    cdef pc_error err
    cdef int rc = 0
    err.code = 0
    koffs[0] = 0
    voffs[0] = 0
    if n > 0:
        with nogil:
            rc = count_loop(&buf[0], &offs[0], valid, n, mode, &koffs[0], &kv[0], &voffs[0], &vv[0], &err)
    if rc:
        return (err.code, err.index, err.offset, err.detail), None, None, None, None, None, None
    kout_arr = pool_empty(max(koffs[n], 1), np.uint8)
    vout_arr = pool_empty(max(voffs[n], 1), np.uint8)
    cdef uint8_t[::1] kout = kout_arr
    cdef uint8_t[::1] vout = vout_arr
    if n > 0:
        with nogil:
            copy_loop(&buf[0], &offs[0], n, &koffs[0], &kout[0], &voffs[0], &vout[0])
    return (None, kout_arr[:koffs[n]], koffs_arr, kv_arr[:n], vout_arr[:voffs[n]], voffs_arr, vv_arr[:n])


cdef inline bint join_lengths(const int64_t *koffs, const uint8_t *kvalid, const int64_t *voffs,
                              const uint8_t *vvalid, int64_t i, int mode, int64_t *klen, int64_t *vlen) noexcept nogil:
    """The length field each part of row i gets (-1 writes FF FF FF FF); False for a null row."""
    cdef int64_t k = koffs[i + 1] - koffs[i] if (kvalid == NULL or kvalid[i]) else -1
    cdef int64_t v = voffs[i + 1] - voffs[i] if (vvalid == NULL or vvalid[i]) else -1
    if mode == defs.MODE_SCHEMA_ID:
        if k <= 0 and v <= 0:
            return False
        k = k if k > 0 else 0
        v = v if v > 0 else 0
    elif mode == defs.MODE_INLINE_CPP:
        k = k if k > 0 else -1
        v = v if v > 0 else -1
    klen[0] = k
    vlen[0] = v
    return True


def join(key_data, key_offsets, key_validity, value_data, value_offsets, value_validity, int mode):
    """Write ``i32 BE len || key || i32 BE len || value`` per row; same contract as ``keyvalue_py.join``."""
    cdef const uint8_t[::1] kbuf = memoryview(key_data).cast("B") if len(key_data) else b"\0"
    cdef const uint8_t[::1] vbuf = memoryview(value_data).cast("B") if len(value_data) else b"\0"
    cdef const int64_t[::1] koffs = np.ascontiguousarray(key_offsets, dtype=np.int64)
    cdef const int64_t[::1] voffs = np.ascontiguousarray(value_offsets, dtype=np.int64)
    cdef int64_t n = koffs.shape[0] - 1, i, total = 0, pos = 0, klen = 0, vlen = 0, nulls = 0
    cdef const uint8_t[::1] kvalid_view
    cdef const uint8_t[::1] vvalid_view
    cdef const uint8_t *kvalid = NULL
    cdef const uint8_t *vvalid = NULL
    if key_validity is not None and n > 0:
        kvalid_view = np.ascontiguousarray(key_validity, dtype=np.uint8)
        kvalid = &kvalid_view[0]
    if value_validity is not None and n > 0:
        vvalid_view = np.ascontiguousarray(value_validity, dtype=np.uint8)
        vvalid = &vvalid_view[0]
    valid_arr = np.ones(n if n else 1, dtype=np.uint8)
    cdef uint8_t[::1] valid = valid_arr
    if n == 0:
        return np.empty(0, dtype=np.uint8), np.zeros(1, dtype=np.int64), None
    # first pass: the exact output size, so the buffer is allocated once
    with nogil:
        for i in range(n):
            if join_lengths(&koffs[0], kvalid, &voffs[0], vvalid, i, mode, &klen, &vlen):
                total += 8 + (klen if klen > 0 else 0) + (vlen if vlen > 0 else 0)
            else:
                valid[i] = 0
                nulls += 1
    out_arr = pool_empty(total if total else 1, np.uint8)
    offsets_arr = pool_empty(n + 1, np.int64)
    cdef uint8_t[::1] out = out_arr
    cdef int64_t[::1] offsets = offsets_arr
    offsets[0] = 0
    with nogil:
        for i in range(n):
            if join_lengths(&koffs[0], kvalid, &voffs[0], vvalid, i, mode, &klen, &vlen):
                pc_put_be32(&out[pos], <uint32_t> <int32_t> klen)
                pos += 4
                if klen > 0:
                    memcpy(&out[pos], &kbuf[koffs[i]], <size_t> klen)
                    pos += klen
                pc_put_be32(&out[pos], <uint32_t> <int32_t> vlen)
                pos += 4
                if vlen > 0:
                    memcpy(&out[pos], &vbuf[voffs[i]], <size_t> vlen)
                    pos += vlen
            offsets[i + 1] = pos
    return out_arr[:total], offsets_arr, (valid_arr[:n] if nulls else None)
