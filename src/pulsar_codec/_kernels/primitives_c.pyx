# cython: boundscheck=False, wraparound=False, cdivision=True
"""Compiled twin of the Pulsar primitive kernels (pure twin: ``primitives_py.py``, which documents
the kinds and the error tuples).

Bounds: a payload is only read after its size was checked to equal the kind's width, and UTF-8
validation checks ``n - i`` before every continuation byte, which is why bounds checking is off.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

import numpy as np
import pyarrow as pa

from . cimport defs
from .defs cimport pc_error, pc_fail
from .defs import DTYPES, WIDTHS

cdef extern from "pc_bytes.h":
    uint16_t pc_be16(const uint8_t *p) nogil
    uint32_t pc_be32(const uint8_t *p) nogil
    uint64_t pc_be64(const uint8_t *p) nogil

cdef extern from "pc_prim.h":
    int64_t pc_utf8_invalid_at(const uint8_t *s, int64_t n) nogil
    int pc_mul_add_i64(int64_t a, int64_t m, int64_t b, int64_t *out) nogil


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

# the kinds as Python ints, from the C header (the pure twin exports defs.py's)
KIND_BOOLEAN = defs.KIND_BOOLEAN
KIND_INT8 = defs.KIND_INT8
KIND_INT16 = defs.KIND_INT16
KIND_INT32 = defs.KIND_INT32
KIND_INT64 = defs.KIND_INT64
KIND_FLOAT = defs.KIND_FLOAT
KIND_DOUBLE = defs.KIND_DOUBLE
KIND_TIME = defs.KIND_TIME
KIND_INSTANT = defs.KIND_INSTANT
KIND_LOCAL_DATE = defs.KIND_LOCAL_DATE
KIND_LOCAL_TIME = defs.KIND_LOCAL_TIME
KIND_LOCAL_DATE_TIME = defs.KIND_LOCAL_DATE_TIME
cdef object pool_empty(int64_t count, dtype):
    """An uninitialised numpy array in Arrow's memory pool (warm memory; see keyvalue_c.pool_empty)."""
    dt = np.dtype(dtype)
    buf = pa.allocate_buffer(max(count, 1) * dt.itemsize)
    return np.frombuffer(buf, dtype=dt, count=max(count, 1))[:count]


cdef int decode_loop(const uint8_t *buf, const int64_t *offs, const uint8_t *valid, int64_t n, int kind,
                     int64_t width, char *out, int64_t itemsize, pc_error *err) noexcept nogil:
    # twin: primitives_py.decode_fixed
    cdef int64_t i, start, size, a, b, v
    cdef const uint8_t *p
    cdef uint32_t u32
    cdef uint64_t u64
    for i in range(n):
        if valid != NULL and not valid[i]:
            memset(out + i * itemsize, 0, <size_t> itemsize)
            continue
        start = offs[i]
        size = offs[i + 1] - start
        if size != width:
            return pc_fail(err, defs.PRIM_BAD_LENGTH, i, size if size < width else width, size)
        p = buf + start
        if kind == defs.KIND_BOOLEAN:
            (<uint8_t *> out)[i] = 1 if p[0] != 0 else 0
        elif kind == defs.KIND_INT8:
            (<int8_t *> out)[i] = <int8_t> p[0]
        elif kind == defs.KIND_INT16:
            (<int16_t *> out)[i] = <int16_t> pc_be16(p)
        elif kind == defs.KIND_INT32:
            (<int32_t *> out)[i] = <int32_t> pc_be32(p)
        elif kind == defs.KIND_INT64:
            (<int64_t *> out)[i] = <int64_t> pc_be64(p)
        elif kind == defs.KIND_FLOAT:
            u32 = pc_be32(p)
            memcpy(out + 4 * i, &u32, 4)
        elif kind == defs.KIND_DOUBLE:
            u64 = pc_be64(p)
            memcpy(out + 8 * i, &u64, 8)
        elif kind == defs.KIND_TIME:
            a = (<int64_t> pc_be64(p)) % defs.MS_PER_DAY
            if a < 0:
                a += defs.MS_PER_DAY
            (<int32_t *> out)[i] = <int32_t> a
        elif kind == defs.KIND_LOCAL_DATE:
            a = <int64_t> pc_be64(p)
            if a < -2147483648 or a > 2147483647:
                return pc_fail(err, defs.PRIM_OUT_OF_RANGE, i, 0, a)
            (<int32_t *> out)[i] = <int32_t> a
        elif kind == defs.KIND_LOCAL_TIME:
            a = <int64_t> pc_be64(p)
            if a < 0 or a >= defs.NS_PER_DAY:
                return pc_fail(err, defs.PRIM_OUT_OF_RANGE, i, 0, a)
            (<int64_t *> out)[i] = a
        elif kind == defs.KIND_INSTANT:
            a = <int64_t> pc_be64(p)
            b = <int32_t> pc_be32(p + 8)
            if pc_mul_add_i64(a, defs.NS_PER_S, b, &v):
                return pc_fail(err, defs.PRIM_OUT_OF_RANGE, i, 0, a)
            (<int64_t *> out)[i] = v
        else:  # defs.KIND_LOCAL_DATE_TIME
            a = <int64_t> pc_be64(p)
            b = <int64_t> pc_be64(p + 8)
            if b < 0 or b >= defs.NS_PER_DAY:
                return pc_fail(err, defs.PRIM_OUT_OF_RANGE, i, 8, b)
            if pc_mul_add_i64(a, defs.NS_PER_DAY, b, &v):
                return pc_fail(err, defs.PRIM_OUT_OF_RANGE, i, 0, a)
            (<int64_t *> out)[i] = v
    return 0


def decode_fixed(data, offsets, validity, int kind):
    """Decode one chunk of fixed-width payloads; same contract as ``primitives_py.decode_fixed``."""
    if kind < defs.KIND_BOOLEAN or kind > defs.KIND_LOCAL_DATE_TIME:
        raise ValueError(f"unknown primitive kind {kind}")
    cdef const uint8_t[::1] buf = memoryview(data).cast("B") if len(data) else b"\0"
    cdef const int64_t[::1] offs = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef int64_t n = offs.shape[0] - 1
    cdef int64_t width = WIDTHS[kind]
    cdef const uint8_t[::1] valid_view
    cdef const uint8_t *valid = NULL
    if validity is not None and n > 0:
        valid_view = np.ascontiguousarray(validity, dtype=np.uint8)
        valid = &valid_view[0]
    out_arr = pool_empty(n if n else 1, DTYPES[kind])
    cdef uint8_t[::1] out = out_arr.view(np.uint8)
    cdef int64_t itemsize = out_arr.dtype.itemsize
    cdef pc_error err
    cdef int rc = 0
    err.code = 0
    if n > 0:
        with nogil:
            rc = decode_loop(&buf[0], &offs[0], valid, n, kind, width, <char *> &out[0], itemsize, &err)
    error = None if rc == 0 else (err.code, err.index, err.offset, err.detail)
    return error, out_arr[:n]


def validate_utf8(data, offsets, validity):
    """Check every valid message of one chunk is well-formed UTF-8; same contract as ``primitives_py.validate_utf8``."""
    cdef const uint8_t[::1] buf = memoryview(data).cast("B") if len(data) else b"\0"
    cdef const int64_t[::1] offs = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef int64_t n = offs.shape[0] - 1, i, at = -1, bad_row = -1
    cdef const uint8_t[::1] valid_view
    cdef const uint8_t *valid = NULL
    if validity is not None and n > 0:
        valid_view = np.ascontiguousarray(validity, dtype=np.uint8)
        valid = &valid_view[0]
    if n > 0:
        with nogil:
            for i in range(n):
                if valid != NULL and not valid[i]:
                    continue
                at = pc_utf8_invalid_at(&buf[0] + offs[i], offs[i + 1] - offs[i])
                if at >= 0:
                    bad_row = i
                    break
    if bad_row < 0:
        return None
    return (defs.PRIM_INVALID_UTF8, bad_row, at, 0)
