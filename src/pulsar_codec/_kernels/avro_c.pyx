# cython: boundscheck=False, wraparound=False, cdivision=True
"""Compiled twin of the Avro batch decoder (pure twin: ``avro_py.py``; the loop is csrc/pc_avro.h).

The flat decode program is copied into C structs once per call and interpreted for every payload
with the GIL released. Column builders are resizable buffers of pyarrow's memory pool (it keeps
freed pages, so a batch does not pay page faults for memory the previous batch used); they are
sized up front from the row count (and, when the caller passes them, from the bytes per row of an
earlier batch), grow geometrically through a hook that briefly takes the GIL, and are handed to
numpy (then pyarrow) without a copy.

Bounds: every read of the payload is guarded in pc_avro.h by an explicit ``n > end - p`` check
against the payload's own end, which is why bounds checking is off for this module.
"""

from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF

import numpy as np
import pyarrow as pa

from . cimport defs
from .defs cimport pc_error

cdef extern from "pc_avro.h":
    ctypedef struct pc_abuf:
        uint8_t *p
        int64_t cap
        void *owner
    ctypedef int (*pc_grow_fn)(pc_abuf *b, int64_t cap) noexcept
    pc_grow_fn pc_grow_hook
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
                       const int64_t *starts, const int64_t *offs64, const int32_t *offs32, int64_t skip,
                       const uint8_t *valid, int64_t n, int64_t row0, int keep_going, pc_aerrors *errs) nogil

__all__ = ["decode"]

cdef uint8_t _EMPTY[8]
_allocate = pa.allocate_buffer


cdef int _pool_grow(pc_abuf *b, int64_t cap) noexcept with gil:
    """pc_grow_hook: (re)allocate a builder in pyarrow's pool; b.owner holds one reference."""
    try:
        if b.owner == NULL:
            buf = _allocate(cap, resizable=True)
            Py_INCREF(buf)
            b.owner = <void *> buf
        else:
            buf = <object> b.owner
            buf.resize(cap)
        b.p = <uint8_t *> <size_t> buf.address
        b.cap = cap
        return 0
    except BaseException:
        return -1


pc_grow_hook = _pool_grow


cdef void _release(pc_abuf *b) noexcept:
    if b.owner != NULL:
        Py_DECREF(<object> b.owner)
    b.owner = NULL
    b.p = NULL
    b.cap = 0


cdef object _take(pc_abuf *b, int64_t nbytes, dtype):
    """A numpy array over the first ``nbytes`` of the builder (the array keeps the buffer alive)."""
    if b.owner == NULL:
        return np.zeros(nbytes, dtype=np.uint8).view(dtype)
    out = np.frombuffer(<object> b.owner, dtype=np.uint8, count=nbytes).view(dtype)
    _release(b)
    return out


cdef int _reserve(pc_abuf *b, int64_t need) except -1:
    if pc_grow(b, need if need > 8 else 8):
        raise MemoryError("pulsar_codec: out of memory for Avro column builders")
    return 0


cdef int _width_of(int kind, int width):
    if kind == defs.K_BOOL:
        return 1
    if kind == defs.K_I32 or kind == defs.K_F32:
        return 4
    if kind == defs.K_I64 or kind == defs.K_F64:
        return 8
    return width


cdef int64_t _hinted(hints, Py_ssize_t i, int k, int64_t rows, int64_t floor):
    """Capacity from the bytes per row an earlier batch needed (12% headroom), at least ``floor``."""
    cdef double per_row
    cdef int64_t want
    if hints is None or i >= len(hints):
        return floor
    per_row = hints[i][k]
    want = <int64_t> (per_row * rows * 1.125) + 64
    return want if want > floor else floor


def decode(slots, plans, segments, keep_going, hints=None):
    """Decode every payload of ``segments``; same contract as ``avro_py.decode``."""
    # twin: avro_py.decode
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
    cdef const int32_t[::1] en32
    cdef const int64_t *stp
    cdef const int64_t *enp
    cdef const int32_t *en32p
    cdef int64_t skip
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
            total += (len(seg[2]) - 1) if isinstance(seg[1], int) else len(seg[1])
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
            if kind == defs.K_BIN or kind == defs.K_LIST or kind == defs.K_MAP:
                _reserve(&s.b1, _hinted(hints, i, 0, hint, (hint + 1) * 4))
                (<int32_t *> s.b1.p)[0] = 0
                if kind == defs.K_BIN:
                    _reserve(&s.b2, _hinted(hints, i, 1, hint, hint * 8))
            elif kind == defs.K_UNION:
                _reserve(&s.b1, _hinted(hints, i, 0, hint, hint))
                _reserve(&s.b2, _hinted(hints, i, 1, hint, hint * 4))
            elif kind != defs.K_NULL and kind != defs.K_STRUCT:
                _reserve(&s.b1, _hinted(hints, i, 0, hint, hint * s.width))
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
            stp = NULL
            enp = NULL
            en32p = NULL
            skip = 0
            if isinstance(starts, int):  # framed messages: n + 1 offsets, fixed prefix already checked
                n = len(ends) - 1
                skip = starts
                if n <= 0:
                    continue
                if ends.dtype == np.int32:
                    en32 = ends
                    en32p = &en32[0]
                else:
                    en = np.ascontiguousarray(ends, dtype=np.int64)
                    enp = &en[0]
            else:
                n = len(starts)
                if n == 0:
                    continue
                st = np.ascontiguousarray(starts, dtype=np.int64)
                en = np.ascontiguousarray(ends, dtype=np.int64)
                stp = &st[0]
                enp = &en[0]
            buf = memoryview(data).cast("B") if len(data) else b"\0"
            vptr = NULL
            pptr = NULL
            if validity is not None:
                vv = np.ascontiguousarray(validity, dtype=np.uint8)
                vptr = &vv[0]
            if plan_ids is not None:
                pid = np.ascontiguousarray(plan_ids, dtype=np.int32)
                pptr = &pid[0]
            with nogil:
                rc = pc_avro_decode(S, P, pptr, &buf[0], stp, enp, en32p, skip, vptr, n, row0, kg, &errs)
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
            if kind == defs.K_BOOL or kind == defs.K_RAW:
                b1 = _take(&s.b1, n * s.width, np.uint8)
            elif kind == defs.K_I32:
                b1 = _take(&s.b1, n * 4, np.int32)
            elif kind == defs.K_F32:
                b1 = _take(&s.b1, n * 4, np.float32)
            elif kind == defs.K_I64:
                b1 = _take(&s.b1, n * 8, np.int64)
            elif kind == defs.K_F64:
                b1 = _take(&s.b1, n * 8, np.float64)
            elif kind == defs.K_BIN:
                b1 = _take(&s.b1, (n + 1) * 4, np.int32)
                b2 = _take(&s.b2, s.dlen, np.uint8)
            elif kind == defs.K_LIST or kind == defs.K_MAP:
                b1 = _take(&s.b1, (n + 1) * 4, np.int32)
            elif kind == defs.K_UNION:
                b1 = _take(&s.b1, n, np.int8)
                b2 = _take(&s.b2, n * 4, np.int32)
            outputs.append((n, valid, b1, b2))
        return errors, outputs
    finally:
        for i in range(nslots):
            free(S[i].child)
            free(S[i].committed)
            _release(&S[i].valid)
            _release(&S[i].b1)
            _release(&S[i].b2)
        for i in range(nplans):
            free(<void *> P[i].ops)
            free(<void *> P[i].kids)
        free(S)
        free(P)
        free(errs.items)
