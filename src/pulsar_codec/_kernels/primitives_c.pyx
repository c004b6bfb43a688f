# cython: boundscheck=False, wraparound=False, cdivision=True
"""Compiled twin of the Pulsar primitive kernels (pure twin: ``_primitives_py.py``, which documents
the kinds and the error tuples).

Bounds: a payload is only read after its size was checked to equal the kind's width, and UTF-8
validation checks ``n - i`` before every continuation byte, which is why bounds checking is off.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

import numpy as np
import pyarrow as pa

cdef extern from "pc_status.h":
    ctypedef struct pc_error:
        int32_t code
        int64_t index
        int64_t offset
        int64_t detail
    int pc_fail(pc_error *err, int32_t code, int64_t index, int64_t offset, int64_t detail) nogil

cdef extern from "pc_bytes.h":
    uint16_t pc_be16(const uint8_t *p) nogil
    uint32_t pc_be32(const uint8_t *p) nogil
    uint64_t pc_be64(const uint8_t *p) nogil

cdef extern from "pc_prim.h":
    int64_t pc_utf8_invalid_at(const uint8_t *s, int64_t n) nogil
    int pc_mul_add_i64(int64_t a, int64_t m, int64_t b, int64_t *out) nogil
    const int64_t MS_PER_DAY "PC_MS_PER_DAY"
    const int64_t NS_PER_S "PC_NS_PER_S"
    const int64_t NS_PER_DAY "PC_NS_PER_DAY"


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

KIND_BOOLEAN = 1
KIND_INT8 = 2
KIND_INT16 = 3
KIND_INT32 = 4
KIND_INT64 = 5
KIND_FLOAT = 6
KIND_DOUBLE = 7
KIND_TIME = 8
KIND_INSTANT = 9
KIND_LOCAL_DATE = 10
KIND_LOCAL_TIME = 11
KIND_LOCAL_DATE_TIME = 12

WIDTHS = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 4, 7: 8, 8: 8, 9: 12, 10: 8, 11: 8, 12: 16}
DTYPES = {1: "uint8", 2: "int8", 3: "int16", 4: "int32", 5: "int64", 6: "float32", 7: "float64",
          8: "int32", 9: "int64", 10: "int32", 11: "int64", 12: "int64"}

cdef enum:
    K_BOOLEAN = 1
    K_INT8 = 2
    K_INT16 = 3
    K_INT32 = 4
    K_INT64 = 5
    K_FLOAT = 6
    K_DOUBLE = 7
    K_TIME = 8
    K_INSTANT = 9
    K_LOCAL_DATE = 10
    K_LOCAL_TIME = 11
    K_LOCAL_DATE_TIME = 12

cdef enum:
    S_BAD_LENGTH = 30
    S_INVALID_UTF8 = 31
    S_OUT_OF_RANGE = 32



cdef object pool_empty(int64_t count, dtype):
    """An uninitialised numpy array in Arrow's memory pool (warm memory; see _keyvalue_c.pool_empty)."""
    dt = np.dtype(dtype)
    buf = pa.allocate_buffer(max(count, 1) * dt.itemsize)
    return np.frombuffer(buf, dtype=dt, count=max(count, 1))[:count]


cdef int decode_loop(const uint8_t *buf, const int64_t *offs, const uint8_t *valid, int64_t n, int kind,
                     int64_t width, char *out, int64_t itemsize, pc_error *err) noexcept nogil:
    # twin: _primitives_py.decode_fixed
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
            return pc_fail(err, S_BAD_LENGTH, i, size if size < width else width, size)
        p = buf + start
        if kind == K_BOOLEAN:
            (<uint8_t *> out)[i] = 1 if p[0] != 0 else 0
        elif kind == K_INT8:
            (<int8_t *> out)[i] = <int8_t> p[0]
        elif kind == K_INT16:
            (<int16_t *> out)[i] = <int16_t> pc_be16(p)
        elif kind == K_INT32:
            (<int32_t *> out)[i] = <int32_t> pc_be32(p)
        elif kind == K_INT64:
            (<int64_t *> out)[i] = <int64_t> pc_be64(p)
        elif kind == K_FLOAT:
            u32 = pc_be32(p)
            memcpy(out + 4 * i, &u32, 4)
        elif kind == K_DOUBLE:
            u64 = pc_be64(p)
            memcpy(out + 8 * i, &u64, 8)
        elif kind == K_TIME:
            a = (<int64_t> pc_be64(p)) % MS_PER_DAY
            if a < 0:
                a += MS_PER_DAY
            (<int32_t *> out)[i] = <int32_t> a
        elif kind == K_LOCAL_DATE:
            a = <int64_t> pc_be64(p)
            if a < -2147483648 or a > 2147483647:
                return pc_fail(err, S_OUT_OF_RANGE, i, 0, a)
            (<int32_t *> out)[i] = <int32_t> a
        elif kind == K_LOCAL_TIME:
            a = <int64_t> pc_be64(p)
            if a < 0 or a >= NS_PER_DAY:
                return pc_fail(err, S_OUT_OF_RANGE, i, 0, a)
            (<int64_t *> out)[i] = a
        elif kind == K_INSTANT:
            a = <int64_t> pc_be64(p)
            b = <int32_t> pc_be32(p + 8)
            if pc_mul_add_i64(a, NS_PER_S, b, &v):
                return pc_fail(err, S_OUT_OF_RANGE, i, 0, a)
            (<int64_t *> out)[i] = v
        else:  # K_LOCAL_DATE_TIME
            a = <int64_t> pc_be64(p)
            b = <int64_t> pc_be64(p + 8)
            if b < 0 or b >= NS_PER_DAY:
                return pc_fail(err, S_OUT_OF_RANGE, i, 8, b)
            if pc_mul_add_i64(a, NS_PER_DAY, b, &v):
                return pc_fail(err, S_OUT_OF_RANGE, i, 0, a)
            (<int64_t *> out)[i] = v
    return 0


def decode_fixed(data, offsets, validity, int kind):
    """Decode one chunk of fixed-width payloads; same contract as ``_primitives_py.decode_fixed``."""
    if kind < K_BOOLEAN or kind > K_LOCAL_DATE_TIME:
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
    """Check every valid message of one chunk is well-formed UTF-8; same contract as ``_primitives_py.validate_utf8``."""
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
    return (S_INVALID_UTF8, bad_row, at, 0)
