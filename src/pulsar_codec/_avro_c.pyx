# cython: boundscheck=False, wraparound=False, cdivision=True
"""Compiled twin of the Avro batch decoder (pure twin: ``_avro_py.py``; the loop is csrc/pc_avro.h).

The flat decode program is copied into C structs once per call and interpreted for every payload
with the GIL released; column builders are malloc'd buffers that grow geometrically and are handed
to numpy (then pyarrow) without a copy: each buffer becomes a ``_Mem`` object that frees it when
the last array over it goes away.

Bounds: every read of the payload is guarded in pc_avro.h by an explicit ``n > end - p`` check
against the payload's own end, which is why bounds checking is off for this module.
"""

from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy
from cpython.buffer cimport PyBuffer_FillInfo

import numpy as np

cdef extern from "pc_status.h":
    ctypedef struct pc_error:
        int32_t code
        int64_t index
        int64_t offset
        int64_t detail

cdef extern from "pc_avro.h":
    ctypedef struct pc_abuf:
        uint8_t *p
        int64_t cap
    ctypedef struct pc_slot:
        int32_t kind, nullable, width, nchild, null_branch
        int32_t vactive
        int32_t *child
        int64_t length
        pc_abuf valid
        pc_abuf b1
        pc_abuf b2
        int64_t dlen
        int64_t *committed
    ctypedef struct pc_op:
        int32_t code, slot, first, count
        int64_t arg, arg2
        const int32_t *table
        const uint8_t *cst
        int64_t ncst
    ctypedef struct pc_plan:
        const pc_op *ops
        const int32_t *kids
    ctypedef struct pc_aerrors:
        pc_error *items
        int64_t n, cap
    int pc_grow(pc_abuf *b, int64_t need) nogil
    int pc_avro_decode(pc_slot *S, const pc_plan *plans, const int32_t *plan_ids, const uint8_t *buf,
                       const int64_t *starts, const int64_t *ends, const uint8_t *valid, int64_t n,
                       int64_t row0, int keep_going, pc_aerrors *errs) nogil

__all__ = ["decode"]

cdef enum:
    K_NULL = 0
    K_BOOL = 1
    K_I32 = 2
    K_I64 = 3
    K_F32 = 4
    K_F64 = 5
    K_RAW = 6
    K_BIN = 7
    K_LIST = 8
    K_MAP = 9
    K_STRUCT = 10
    K_UNION = 11

cdef uint8_t _EMPTY[8]


cdef class _Mem:
    """Owns one malloc'd builder buffer and exposes it through the buffer protocol."""
    cdef uint8_t *ptr
    cdef Py_ssize_t size

    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, <void *> (self.ptr if self.ptr != NULL else _EMPTY), self.size, 0, flags)

    def __releasebuffer__(self, Py_buffer *view):
        pass

    def __dealloc__(self):
        free(self.ptr)


cdef object _take(pc_abuf *b, int64_t nbytes, dtype):
    """Hand the buffer to a numpy array of ``nbytes`` bytes (ownership moves to a _Mem)."""
    cdef _Mem m = _Mem.__new__(_Mem)
    m.ptr = b.p
    m.size = nbytes
    b.p = NULL
    b.cap = 0
    return np.frombuffer(m, dtype=np.uint8, count=nbytes).view(dtype)


cdef int _reserve(pc_abuf *b, int64_t need) except -1:
    if pc_grow(b, need if need > 8 else 8):
        raise MemoryError("pulsar_codec: out of memory for Avro column builders")
    return 0


cdef int _width_of(int kind, int width):
    if kind == K_BOOL:
        return 1
    if kind == K_I32 or kind == K_F32:
        return 4
    if kind == K_I64 or kind == K_F64:
        return 8
    return width


def decode(slots, plans, segments, keep_going):
    """Decode every payload of ``segments``; same contract as ``_avro_py.decode``."""
    # twin: _avro_py.decode
    cdef Py_ssize_t nslots = len(slots), nplans = len(plans), i, j
    cdef pc_slot *S = <pc_slot *> calloc(nslots if nslots else 1, sizeof(pc_slot))
    cdef pc_plan *P = <pc_plan *> calloc(nplans if nplans else 1, sizeof(pc_plan))
    cdef pc_aerrors errs
    cdef pc_slot *s
    cdef pc_op *ops
    cdef int32_t *kids
    cdef int32_t *table
    cdef int64_t total = 0, hint, row0 = 0, n
    cdef int rc = 0, kg = 1 if keep_going else 0
    cdef const uint8_t[::1] buf
    cdef const int64_t[::1] st
    cdef const int64_t[::1] en
    cdef const uint8_t[::1] vv
    cdef const int32_t[::1] pid
    cdef const uint8_t *vptr
    cdef const int32_t *pptr
    cdef int64_t w
    errs.items = NULL
    errs.n = 0
    errs.cap = 0
    if S == NULL or P == NULL:
        free(S)
        free(P)
        raise MemoryError("pulsar_codec: out of memory")
    keep = []  # Python objects whose memory the C structs point into
    try:
        for seg in segments:
            total += len(seg[1])
        hint = total if total > 16 else 16
        for i in range(nslots):
            kind, nullable, width, children, null_branch = slots[i]
            s = &S[i]
            s.kind = kind
            s.nullable = 1 if nullable else 0
            s.width = _width_of(kind, width)
            s.null_branch = null_branch
            s.nchild = len(children)
            s.child = <int32_t *> malloc((s.nchild if s.nchild else 1) * sizeof(int32_t))
            s.committed = <int64_t *> calloc(s.nchild if s.nchild else 1, sizeof(int64_t))
            if s.child == NULL or s.committed == NULL:
                raise MemoryError("pulsar_codec: out of memory")
            for j in range(s.nchild):
                s.child[j] = children[j]
            if kind == K_BIN or kind == K_LIST or kind == K_MAP:
                _reserve(&s.b1, (hint + 1) * 4)
                (<int32_t *> s.b1.p)[0] = 0
                if kind == K_BIN:
                    _reserve(&s.b2, hint * 8)
            elif kind == K_UNION:
                _reserve(&s.b1, hint)
                _reserve(&s.b2, hint * 4)
            elif kind != K_NULL and kind != K_STRUCT:
                _reserve(&s.b1, hint * s.width)
        for i in range(nplans):
            op_list, kid_list = plans[i]
            ops = <pc_op *> calloc(len(op_list) if len(op_list) else 1, sizeof(pc_op))
            kids = <int32_t *> malloc((len(kid_list) if len(kid_list) else 1) * sizeof(int32_t))
            P[i].ops = ops
            P[i].kids = kids
            if ops == NULL or kids == NULL:
                raise MemoryError("pulsar_codec: out of memory")
            for j in range(len(kid_list)):
                kids[j] = kid_list[j]
            for j in range(len(op_list)):
                code, slot, first, count, arg, arg2, tab, const = op_list[j]
                ops[j].code = code
                ops[j].slot = slot
                ops[j].first = first
                ops[j].count = count
                ops[j].arg = arg
                ops[j].arg2 = arg2
                ops[j].table = NULL
                ops[j].cst = NULL
                ops[j].ncst = 0
                if tab is not None:
                    tarr = np.ascontiguousarray(np.asarray(tab, dtype=np.int32))
                    keep.append(tarr)
                    ops[j].table = <const int32_t *> <size_t> tarr.ctypes.data
                if const is not None:
                    keep.append(const)
                    ops[j].cst = <const uint8_t *> (<bytes> const) if len(const) else _EMPTY
                    ops[j].ncst = len(const)
        for seg in segments:
            data, starts, ends, validity, plan_ids = seg
            n = len(starts)
            if n == 0:
                continue
            buf = memoryview(data).cast("B") if len(data) else b"\0"
            st = np.ascontiguousarray(starts, dtype=np.int64)
            en = np.ascontiguousarray(ends, dtype=np.int64)
            vptr = NULL
            pptr = NULL
            if validity is not None:
                vv = np.ascontiguousarray(validity, dtype=np.uint8)
                vptr = &vv[0]
            if plan_ids is not None:
                pid = np.ascontiguousarray(plan_ids, dtype=np.int32)
                pptr = &pid[0]
            with nogil:
                rc = pc_avro_decode(S, P, pptr, &buf[0], &st[0], &en[0], vptr, n, row0, kg, &errs)
            if rc == -1:
                raise MemoryError("pulsar_codec: out of memory while decoding Avro")
            row0 += n
            if rc == 1:
                break
        errors = [(errs.items[i].code, errs.items[i].index, errs.items[i].offset, errs.items[i].detail)
                  for i in range(errs.n)]
        outputs = []
        for i in range(nslots):
            s = &S[i]
            n = s.length
            kind = s.kind
            valid = _take(&s.valid, n, np.uint8) if s.vactive else None
            b1 = b2 = None
            if kind == K_BOOL or kind == K_RAW:
                b1 = _take(&s.b1, n * s.width, np.uint8)
            elif kind == K_I32:
                b1 = _take(&s.b1, n * 4, np.int32)
            elif kind == K_F32:
                b1 = _take(&s.b1, n * 4, np.float32)
            elif kind == K_I64:
                b1 = _take(&s.b1, n * 8, np.int64)
            elif kind == K_F64:
                b1 = _take(&s.b1, n * 8, np.float64)
            elif kind == K_BIN:
                b1 = _take(&s.b1, (n + 1) * 4, np.int32)
                b2 = _take(&s.b2, s.dlen, np.uint8)
            elif kind == K_LIST or kind == K_MAP:
                b1 = _take(&s.b1, (n + 1) * 4, np.int32)
            elif kind == K_UNION:
                b1 = _take(&s.b1, n, np.int8)
                b2 = _take(&s.b2, n * 4, np.int32)
            outputs.append((n, valid, b1, b2))
        return errors, outputs
    finally:
        for i in range(nslots):
            free(S[i].child)
            free(S[i].committed)
            free(S[i].valid.p)
            free(S[i].b1.p)
            free(S[i].b2.p)
        for i in range(nplans):
            free(<void *> P[i].ops)
            free(<void *> P[i].kids)
        free(S)
        free(P)
        free(errs.items)
