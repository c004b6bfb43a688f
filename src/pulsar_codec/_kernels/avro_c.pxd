# Declarations other kernels cimport from avro_c: the column builders of csrc/pc_avro.h and the
# helpers that set them up and hand them back. The JSON kernel (json_c.pyx) appends to the same
# builders while it parses, so its batches come out exactly as the Avro decoder would build them.

from libc.stdint cimport int32_t, int64_t, uint8_t

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
    ctypedef struct pc_actx:
        pc_slot *slots
        int64_t budget
        const uint8_t *msg
        int32_t code
        int64_t offset, detail
    ctypedef struct pc_aerrors:
        pc_error *items
        int64_t n, cap
    int pc_grow(pc_abuf *b, int64_t need) nogil
    const uint8_t *pc_arun(pc_actx *c, const pc_plan *pl, int32_t oi, const uint8_t *p, const uint8_t *end) nogil
    int pc_null_fill(pc_slot *S, int32_t sid) nogil
    void pc_avro_truncate(pc_slot *S, int32_t sid, int64_t n) nogil
    int pc_avro_decode(pc_slot *S, const pc_plan *plans, const int32_t *plan_ids, const uint8_t *buf,
                       const int64_t *starts, const int64_t *offs64, const int32_t *offs32, int64_t skip,
                       const uint8_t *prefix, const uint8_t *valid, int64_t n, int64_t row0, int keep_going,
                       pc_aerrors *errs) nogil


cdef class Layout:
    cdef pc_slot *tmpl  # the slot specs; child tables are owned here and shared by every call
    cdef Py_ssize_t nslots
    cdef pc_slot *rows  # builders decode_row keeps between calls (NULL until first used)
    cdef bint busy
    cdef uint8_t *text
    cdef list names
    cdef list convert
    cdef readonly bint has_shapes


cdef class Program:
    cdef pc_plan plan
    cdef pc_op *ops
    cdef int32_t *kids
    cdef list keep  # Python objects whose memory the C structs point into


cdef int _pool_grow(pc_abuf *b, int64_t cap) noexcept with gil
cdef pc_slot *_new_slots(Layout layout) except NULL
cdef void _free_slots(pc_slot *S, Py_ssize_t n) noexcept
cdef int _reserve_all(pc_slot *S, Py_ssize_t nslots, int64_t hint, hints) except -1
cdef list _take_outputs(pc_slot *S, Py_ssize_t nslots)
