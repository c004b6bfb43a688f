# cython: boundscheck=False, wraparound=False, cdivision=True
"""Compiled twin of the Avro batch encoder (pure twin: ``avro_encode_py.py``; the loop is
csrc/pc_avro_enc.h).

The bound encode program (see ``pulsar_codec.formats.avro.encoder``) is copied into C structs and run over
every row with the GIL released. The output grows in a resizable buffer of pyarrow's memory pool
(through a hook that briefly takes the GIL) and becomes the data buffer of the BinaryArray as is.

Bounds: every node reads only elements its parent hands it (row j, or offs[j]..offs[j + 1] for
arrays and maps), and the arrays were sized by the binding for exactly those elements, which is
why bounds checking is off for this module.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport calloc, free
from cpython.ref cimport Py_INCREF, Py_DECREF

import numpy as np
import pyarrow as pa

from . cimport defs

cdef extern from "pc_avro_enc.h":
    ctypedef struct pc_ebuf:
        uint8_t *p
        int64_t cap
        void *owner
    ctypedef int (*pc_egrow_fn)(pc_ebuf *b, int64_t cap) noexcept
    pc_egrow_fn pc_egrow_hook
    ctypedef struct pc_enode:
        int32_t code, first, count, dsize
        int64_t arg, arg2
        const uint8_t *valid
        const uint8_t *data
        const int64_t *offs
        const int32_t *offs32
        const int32_t *table
    ctypedef struct pc_ectx:
        const pc_enode *nodes
        const int32_t *kids
        pc_ebuf out
        int64_t len
        int32_t code, node
        int64_t detail
    int pc_egrow(pc_ebuf *b, int64_t need) nogil
    int pc_avro_encode(pc_ectx *c, int32_t root, const uint8_t *skip, int64_t n, int32_t *offsets,
                       int64_t *bad_row) nogil

__all__ = ["encode", "E_NULL", "E_BOOL", "E_INT", "E_LONG", "E_FLOAT", "E_DOUBLE", "E_BYTES", "E_FIXED",
           "E_ENUM", "E_RECORD", "E_ARRAY", "E_MAP", "E_OPTION", "E_DEC_BYTES", "E_DEC_FIXED",
           "E_UNION", "NULL_VALUE", "NOT_NULL", "INT_RANGE", "FLOAT_RANGE", "FIXED_SIZE", "ENUM_SYMBOL",
           "DECIMAL_SIZE", "TOO_LARGE"]

# node codes and statuses as Python ints, from the C header (the pure twin exports defs.py's)
E_NULL = defs.E_NULL
E_BOOL = defs.E_BOOL
E_INT = defs.E_INT
E_LONG = defs.E_LONG
E_FLOAT = defs.E_FLOAT
E_DOUBLE = defs.E_DOUBLE
E_BYTES = defs.E_BYTES
E_FIXED = defs.E_FIXED
E_ENUM = defs.E_ENUM
E_RECORD = defs.E_RECORD
E_ARRAY = defs.E_ARRAY
E_MAP = defs.E_MAP
E_OPTION = defs.E_OPTION
E_DEC_BYTES = defs.E_DEC_BYTES
E_DEC_FIXED = defs.E_DEC_FIXED
E_UNION = defs.E_UNION
NULL_VALUE = defs.ENC_NULL_VALUE
NOT_NULL = defs.ENC_NOT_NULL
INT_RANGE = defs.ENC_INT_RANGE
FLOAT_RANGE = defs.ENC_FLOAT_RANGE
FIXED_SIZE = defs.ENC_FIXED_SIZE
ENUM_SYMBOL = defs.ENC_ENUM_SYMBOL
DECIMAL_SIZE = defs.ENC_DECIMAL_SIZE
TOO_LARGE = defs.ENC_TOO_LARGE

_allocate = pa.allocate_buffer


cdef int _pool_grow(pc_ebuf *b, int64_t cap) noexcept with gil:
    """pc_egrow_hook: (re)allocate the output in pyarrow's pool; b.owner holds one reference."""
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


pc_egrow_hook = _pool_grow


cdef const uint8_t *_ptr(arr, keep) except? NULL:
    if arr is None:
        return NULL
    # contiguous and aligned: a view of an Arrow buffer is used in place, a misaligned one (a buffer
    # built at an odd address) is copied, since the C loop indexes offsets directly
    a = np.require(arr, requirements=("C", "A"))
    keep.append(a)
    return <const uint8_t *> <size_t> a.ctypes.data


_INTS = (defs.E_INT, defs.E_LONG, defs.E_ENUM)
_FLOATS = (defs.E_FLOAT, defs.E_DOUBLE)


def _values(code, data):
    """``data`` as the C node reads it: integers int32 or int64, floats float32 or float64 (the
    32-bit forms as Arrow holds them, so that the binder need not widen them into a copy), a
    union's child numbers int64, anything else bytes as they are."""
    if data is None:
        return None
    a = np.asarray(data)
    if code in _INTS:
        return a if a.dtype == np.int32 else a.astype(np.int64, copy=False)
    if code in _FLOATS:
        return a if a.dtype == np.float32 else a.astype(np.float64, copy=False)
    if code == defs.E_UNION:
        return a.astype(np.int64, copy=False)
    return a


def encode(nodes, kids, root, skip, n, capacity):
    """Encode ``n`` rows; same contract as ``avro_encode_py.encode``."""
    # twin: avro_encode_py.encode
    cdef Py_ssize_t nn = len(nodes), i
    cdef pc_enode *N = <pc_enode *> calloc(nn if nn else 1, sizeof(pc_enode))
    cdef pc_ectx ctx
    cdef int64_t rows = n, bad = 0
    cdef int32_t r = root
    cdef int rc
    cdef const uint8_t *skp = NULL
    cdef int32_t *offp
    if N == NULL:
        raise MemoryError("pulsar_codec: out of memory")
    keep = []
    ctx.out.p = NULL
    ctx.out.cap = 0
    ctx.out.owner = NULL
    ctx.len = 0
    ctx.code = 0
    ctx.node = 0
    ctx.detail = 0
    try:
        kid_arr = np.ascontiguousarray(np.asarray(kids, dtype=np.int32) if len(kids) else np.zeros(1, np.int32))
        ctx.kids = <const int32_t *> <size_t> kid_arr.ctypes.data
        for i in range(nn):
            code, first, count, arg, arg2, valid, data, offs, table = nodes[i]
            N[i].code = code
            N[i].first = first
            N[i].count = count
            N[i].arg = arg
            N[i].arg2 = arg2
            N[i].valid = _ptr(None if valid is None else np.asarray(valid, dtype=np.uint8), keep)
            data = _values(code, data)
            N[i].dsize = 0 if data is None else data.dtype.itemsize
            N[i].data = _ptr(data, keep)
            if offs is not None and np.asarray(offs).dtype == np.int32:  # Arrow's 32-bit offsets, not widened
                N[i].offs32 = <const int32_t *> _ptr(np.asarray(offs), keep)
                N[i].offs = NULL
            else:
                N[i].offs32 = NULL
                N[i].offs = <const int64_t *> _ptr(None if offs is None else np.asarray(offs, dtype=np.int64), keep)
            N[i].table = <const int32_t *> _ptr(None if table is None else np.asarray(table, dtype=np.int32), keep)
        ctx.nodes = N
        if skip is not None:
            skp = _ptr(np.asarray(skip, dtype=np.uint8), keep)
        offsets_buf = _allocate((rows + 1) * 4)
        offp = <int32_t *> <size_t> offsets_buf.address
        if pc_egrow(&ctx.out, capacity if capacity > 64 else 64):
            raise MemoryError("pulsar_codec: out of memory for the Avro output")
        with nogil:
            rc = pc_avro_encode(&ctx, r, skp, rows, offp, &bad)
        if rc == -1:
            raise MemoryError("pulsar_codec: out of memory while encoding Avro")
        if rc == 1:
            return (ctx.code, bad, ctx.node, ctx.detail), None, None
        data_buf = (<object> ctx.out.owner).slice(0, ctx.len)
        return None, data_buf, offsets_buf
    finally:
        if ctx.out.owner != NULL:
            Py_DECREF(<object> ctx.out.owner)
        free(N)
