# cython: boundscheck=False, wraparound=False, cdivision=True
"""Compiled twin of the Avro decoder (pure twin: ``avro_py.py``; the loop is csrc/pc_avro.h).

A reader layout and each decode program are copied into C structs once (:class:`Layout`,
:class:`Program`; the format keeps them with its plans), so a call only sets up the column builders
and runs the interpreter. :func:`decode` interprets a program for every payload of a batch with the
GIL released. Column builders are resizable buffers of pyarrow's memory pool (it keeps freed pages,
so a batch does not pay page faults for memory the previous batch used); they are sized up front
from the row count (and, when the caller passes them, from the bytes per row of an earlier batch),
grow geometrically through a hook that briefly takes the GIL, and are handed back as ``pa.Buffer``
slices without a copy.

:func:`decode_row` runs the same interpreter on one payload into builders the layout keeps between
calls, then walks the one row they hold and builds its Python value (the row shapes of the layout
say how: records as dicts, strings decoded, a converter per slot for logical types).

Bounds: every read of the payload is guarded in pc_avro.h by an explicit ``n > end - p`` check
against the payload's own end, and :func:`decode_row` checks the payload lies inside its buffer,
which is why bounds checking is off for this module.
"""

from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF
from cpython.unicode cimport PyUnicode_DecodeUTF8

import numpy as np
import pyarrow as pa

from . cimport defs
from . import wire_c
from .defs cimport pc_error

__all__ = ["Layout", "Program", "decode", "decode_row"]

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


cdef object _take(pc_abuf *b, int64_t nbytes):
    """The first ``nbytes`` of the builder as a ``pa.Buffer`` (the slice keeps the builder alive)."""
    if b.owner == NULL:
        return pa.py_buffer(bytes(nbytes))
    out = (<object> b.owner).slice(0, nbytes)
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


cdef class Layout:
    """The column builders of one reader layout in C form, made once per layout.

    ``slots``: ``[(kind, nullable, width, children, null_branch), ...]``; ``shapes``: one
    ``(names, text, convert)`` per slot for :func:`decode_row` (see ``avro_py.Layout``).
    """

    def __cinit__(self, slots, shapes=None):
        cdef Py_ssize_t i, j
        cdef pc_slot *s
        self.nslots = len(slots)
        self.tmpl = <pc_slot *> calloc(self.nslots if self.nslots else 1, sizeof(pc_slot))
        self.text = <uint8_t *> calloc(self.nslots if self.nslots else 1, 1)
        if self.tmpl == NULL or self.text == NULL:
            raise MemoryError("pulsar_codec: out of memory")
        for i in range(self.nslots):
            kind, nullable, width, children, null_branch = slots[i]
            s = &self.tmpl[i]
            s.kind = kind
            s.nullable = 1 if nullable else 0
            s.width = _width_of(kind, width)
            s.null_branch = null_branch
            s.nchild = len(children)
            s.child = <int32_t *> malloc((s.nchild if s.nchild else 1) * sizeof(int32_t))
            if s.child == NULL:
                raise MemoryError("pulsar_codec: out of memory")
            for j in range(s.nchild):
                if not 0 <= children[j] < self.nslots:
                    raise ValueError("malformed Avro layout: a child slot out of range")
                s.child[j] = children[j]
        self.has_shapes = shapes is not None
        self.names = [None] * self.nslots
        self.convert = [None] * self.nslots
        if shapes is not None:
            if len(shapes) != self.nslots:
                raise ValueError("one row shape per slot is needed")
            for i in range(self.nslots):
                names, text, convert = shapes[i]
                self.names[i] = None if names is None else tuple(names)
                self.text[i] = 1 if text else 0
                self.convert[i] = convert

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.rows != NULL:
            _free_slots(self.rows, self.nslots)
            self.rows = NULL
        if self.tmpl != NULL:
            for i in range(self.nslots):
                free(self.tmpl[i].child)
            free(self.tmpl)
            self.tmpl = NULL
        free(self.text)
        self.text = NULL


cdef class Program:
    """One flat decode program (``ops``, ``kids``) in C form, made once per plan."""

    def __cinit__(self, ops, kids):
        cdef Py_ssize_t j, nops = len(ops), nkids = len(kids)
        self.keep = []
        self.ops = <pc_op *> calloc(nops if nops else 1, sizeof(pc_op))
        self.kids = <int32_t *> malloc((nkids if nkids else 1) * sizeof(int32_t))
        if self.ops == NULL or self.kids == NULL:
            raise MemoryError("pulsar_codec: out of memory")
        for j in range(nkids):
            self.kids[j] = kids[j]
        for j in range(nops):
            code, slot, first, count, arg, arg2, tab, const = ops[j]
            self.ops[j].code = code
            self.ops[j].slot = slot
            self.ops[j].first = first
            self.ops[j].count = count
            self.ops[j].arg = arg
            self.ops[j].arg2 = arg2
            if tab is not None:
                tarr = np.ascontiguousarray(np.asarray(tab, dtype=np.int32))
                self.keep.append(tarr)
                self.ops[j].table = <const int32_t *> <size_t> tarr.ctypes.data
            if const is not None:
                const = bytes(const)
                self.keep.append(const)
                self.ops[j].cst = <const uint8_t *> (<bytes> const) if len(const) else _EMPTY
                self.ops[j].ncst = len(const)
        self.plan.ops = self.ops
        self.plan.kids = self.kids

    def __dealloc__(self):
        free(self.ops)
        free(self.kids)


cdef pc_slot *_new_slots(Layout layout) except NULL:
    """Builders for one call: the layout's specs, fresh buffers (none reserved yet)."""
    cdef Py_ssize_t i, n = layout.nslots
    cdef pc_slot *S = <pc_slot *> calloc(n if n else 1, sizeof(pc_slot))
    if S == NULL:
        raise MemoryError("pulsar_codec: out of memory")
    for i in range(n):
        S[i].kind = layout.tmpl[i].kind
        S[i].nullable = layout.tmpl[i].nullable
        S[i].width = layout.tmpl[i].width
        S[i].null_branch = layout.tmpl[i].null_branch
        S[i].nchild = layout.tmpl[i].nchild
        S[i].child = layout.tmpl[i].child
        S[i].committed = <int64_t *> calloc(S[i].nchild if S[i].nchild else 1, sizeof(int64_t))
        if S[i].committed == NULL:
            _free_slots(S, n)
            raise MemoryError("pulsar_codec: out of memory")
    return S


cdef void _free_slots(pc_slot *S, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i
    for i in range(n):
        free(S[i].committed)
        _release(&S[i].valid)
        _release(&S[i].b1)
        _release(&S[i].b2)
    free(S)


cdef int _reserve_all(pc_slot *S, Py_ssize_t nslots, int64_t hint, hints) except -1:
    cdef Py_ssize_t i
    cdef pc_slot *s
    cdef int kind
    for i in range(nslots):
        s = &S[i]
        kind = s.kind
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
    return 0


cdef list _take_outputs(pc_slot *S, Py_ssize_t nslots):
    """Every builder's ``(length, validity, b1, b2)`` as ``pa.Buffer`` slices (the builders are released)."""
    cdef Py_ssize_t i
    cdef pc_slot *s
    cdef int64_t n
    outputs = []
    for i in range(nslots):
        s = &S[i]
        n = s.length
        kind = s.kind
        valid = _take(&s.valid, n) if s.vactive else None
        b1 = b2 = None
        if kind == defs.K_BIN:
            b1 = _take(&s.b1, (n + 1) * 4)
            b2 = _take(&s.b2, s.dlen)
        elif kind == defs.K_LIST or kind == defs.K_MAP:
            b1 = _take(&s.b1, (n + 1) * 4)
        elif kind == defs.K_UNION:
            b1 = _take(&s.b1, n)
            b2 = _take(&s.b2, n * 4)
        elif kind != defs.K_NULL and kind != defs.K_STRUCT:
            b1 = _take(&s.b1, n * s.width)
        outputs.append((n, valid, b1, b2))
    return outputs


def _prefixes_hold(segments):
    """Whether every message of ``segments`` that carries a ``prefix`` begins with it (checked
    after a stop at the first bad row, for the rows the decode did not reach)."""
    for seg in segments:
        if len(seg) > 5 and seg[5] is not None and isinstance(seg[1], int):
            if not wire_c.same_bytes(seg[0], seg[2], seg[3], 0, seg[5]):
                return False
    return True


def decode(Layout layout not None, programs, segments, keep_going, hints=None):
    """Decode every payload of ``segments``; same contract as ``avro_py.decode``."""
    # twin: avro_py.decode
    cdef Py_ssize_t nslots = layout.nslots, nplans = len(programs), i
    cdef pc_slot *S = NULL
    cdef pc_plan *P = <pc_plan *> calloc(nplans if nplans else 1, sizeof(pc_plan))
    cdef pc_aerrors errs
    cdef pc_slot *s
    cdef Program program
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
    cdef const uint8_t[::1] pre
    cdef const uint8_t *preptr
    errs.items = NULL
    errs.n = 0
    errs.cap = 0
    if P == NULL:
        raise MemoryError("pulsar_codec: out of memory")
    try:
        for i in range(nplans):
            program = programs[i]
            P[i] = program.plan
        S = _new_slots(layout)
        for seg in segments:
            total += (len(seg[2]) - 1) if isinstance(seg[1], int) else len(seg[1])
        hint = total if total > 16 else 16
        _reserve_all(S, nslots, hint, hints)
        for k, seg in enumerate(segments):
            data, starts, ends, validity, plan_ids = seg[:5]
            prefix = seg[5] if len(seg) > 5 else None
            stp = NULL
            enp = NULL
            en32p = NULL
            preptr = NULL
            skip = 0
            if isinstance(starts, int):  # framed messages: n + 1 offsets and a prefix of `skip` bytes
                n = len(ends) - 1
                skip = starts
                if n <= 0:
                    continue
                if prefix is not None:
                    if len(prefix) != skip:
                        raise ValueError(f"a prefix of {len(prefix)} bytes for a skip of {skip}")
                    pre = prefix if skip else b"\0"
                    preptr = &pre[0]
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
                rc = pc_avro_decode(S, P, pptr, &buf[0], stp, enp, en32p, skip, preptr, vptr, n, row0, kg, &errs)
            if rc == -1:
                raise MemoryError("pulsar_codec: out of memory while decoding Avro")
            if rc == 2 or (rc == 1 and not _prefixes_hold(segments[k:])):
                return None, None  # a message of another prefix: the batch needs the general path
            row0 += n
            if rc == 1:
                break
        errors = [(errs.items[i].code, errs.items[i].index, errs.items[i].offset, errs.items[i].detail)
                  for i in range(errs.n)]
        outputs = _take_outputs(S, nslots)
        return errors, outputs
    finally:
        if S != NULL:
            _free_slots(S, nslots)
        free(P)
        free(errs.items)


# -- one row -------------------------------------------------------------------------------------------


cdef void _rewind(pc_slot *S, Py_ssize_t nslots) noexcept:
    """Empty the row builders, keeping their buffers (offset tables start at 0 again)."""
    cdef Py_ssize_t i
    cdef pc_slot *s
    for i in range(nslots):
        s = &S[i]
        s.length = 0
        s.dlen = 0
        s.vactive = 0
        memset(s.committed, 0, (s.nchild if s.nchild else 1) * sizeof(int64_t))
        if s.kind == defs.K_BIN or s.kind == defs.K_LIST or s.kind == defs.K_MAP:
            (<int32_t *> s.b1.p)[0] = 0


cdef object _value(Layout L, pc_slot *S, int32_t sid, int64_t i):
    """The Python value of element ``i`` of slot ``sid`` (its row shape applied)."""
    cdef pc_slot *s = &S[sid]
    cdef const int32_t *offs
    cdef int64_t a, b, j
    cdef int32_t k
    cdef int kind = s.kind
    cdef dict d
    cdef list items
    cdef tuple names
    if s.vactive and s.valid.p[i] == 0:
        return None
    if kind == defs.K_I64:
        v = (<int64_t *> s.b1.p)[i]
    elif kind == defs.K_I32:
        v = (<int32_t *> s.b1.p)[i]
    elif kind == defs.K_F64:
        v = (<double *> s.b1.p)[i]
    elif kind == defs.K_F32:
        v = <double> (<float *> s.b1.p)[i]
    elif kind == defs.K_BOOL:
        v = True if s.b1.p[i] else False
    elif kind == defs.K_BIN:
        offs = <const int32_t *> s.b1.p
        a = offs[i]
        b = offs[i + 1]
        if L.text[sid]:
            v = PyUnicode_DecodeUTF8(<const char *> s.b2.p + a, b - a, NULL)
        else:
            v = PyBytes_FromStringAndSize(<const char *> s.b2.p + a, b - a)
    elif kind == defs.K_RAW:
        v = PyBytes_FromStringAndSize(<const char *> s.b1.p + i * s.width, s.width)
    elif kind == defs.K_STRUCT:
        shape = L.names[sid]
        if shape is None:  # the row struct of a non-record reader: its one column
            return _value(L, S, s.child[0], i)
        names = <tuple> shape
        d = {}
        for j in range(s.nchild):
            d[names[j]] = _value(L, S, s.child[j], i)
        v = d
    elif kind == defs.K_LIST:
        offs = <const int32_t *> s.b1.p
        items = []
        for j in range(offs[i], offs[i + 1]):
            items.append(_value(L, S, s.child[0], j))
        v = items
    elif kind == defs.K_MAP:
        offs = <const int32_t *> s.b1.p
        items = []
        for j in range(offs[i], offs[i + 1]):
            items.append((_value(L, S, s.child[0], j), _value(L, S, s.child[1], j)))
        v = items
    elif kind == defs.K_UNION:
        k = (<int8_t *> s.b1.p)[i]
        return _value(L, S, s.child[k], (<int32_t *> s.b2.p)[i])
    else:  # K_NULL
        return None
    convert = L.convert[sid]
    if convert is not None:
        return convert(v)
    return v


def decode_row(Layout layout not None, Program program not None, data, start, end):
    """Decode the one payload ``data[start:end]``; same contract as ``avro_py.decode_row``."""
    # twin: avro_py.decode_row
    cdef const uint8_t *p
    cdef const uint8_t[::1] view
    cdef Py_ssize_t size
    cdef int64_t st = start, en = end
    cdef pc_slot *S
    cdef bint own
    cdef pc_aerrors errs
    cdef int rc
    if not layout.has_shapes:
        raise ValueError("this layout was prepared without row shapes")
    if type(data) is bytes:
        p = <const uint8_t *> PyBytes_AS_STRING(data)
        size = PyBytes_GET_SIZE(data)
    else:
        view = memoryview(data).cast("B") if len(data) else b"\0"
        p = &view[0]
        size = len(data)
    if st < 0 or st > en or en > size:
        raise ValueError(f"payload bounds {start}:{end} outside a buffer of {size} bytes")
    errs.items = NULL
    errs.n = 0
    errs.cap = 0
    own = layout.busy or layout.rows == NULL
    if own:
        S = _new_slots(layout)
        try:
            _reserve_all(S, layout.nslots, 1, None)
        except BaseException:
            _free_slots(S, layout.nslots)
            raise
        if not layout.busy:  # the first call: these builders become the layout's
            layout.rows = S
            own = False
    else:
        S = layout.rows
    if not own:
        layout.busy = True
    try:
        _rewind(S, layout.nslots)
        rc = pc_avro_decode(S, &program.plan, NULL, p, &st, &en, NULL, 0, NULL, NULL, 1, 0, 0, &errs)
        if rc == -1:
            raise MemoryError("pulsar_codec: out of memory while decoding Avro")
        if rc == 1:
            return (errs.items[0].code, 0, errs.items[0].offset, errs.items[0].detail), None
        return None, _value(layout, S, 0, 0)
    finally:
        free(errs.items)
        if own:
            _free_slots(S, layout.nslots)
        else:
            layout.busy = False
