# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled twin of the Protobuf -> Avro transcoder (pure twin: ``protobuf_py.py``, which documents the
program nodes, the reading rules, the errors and their offsets; both twins give the same bytes and
the same errors).

:class:`Program` checks a program with the pure twin's checker (one definition of what a valid
program is) and flattens it into C structs: nodes, fields, and per message a direct table from field
number to field (numbers past the table are found by binary search). :func:`transcode` runs over every
payload with the GIL released, on one of two paths:

- the general path, the pure twin's algorithm: a message is read in one pass over its bytes that
  only records where each field's values are (the last one of a scalar, a linked list of occurrences
  for repeated and message fields, kept in one pool); then its fields are written in program order,
  the messages inside them read the same way. The per-field records live on one int64 stack and the
  occurrences in one pool, both reused across rows, so a row allocates nothing once they have grown;
- the streaming path (see its section), for payloads written the way serializers write them: fields
  in number order, each once. The row is written while it is read, with no records; anything else
  gives the row back to the general path, which therefore decides every other output and every error.

:func:`decode` skips the Avro bytes: bound to the Avro program of the shadow schema
(``Program(nodes, avro=)``), it appends each value to the Avro decoder's column builders as it reads
it (see "straight into the column builders"), and gives the rows it cannot read in that one pass to
the general path, whose Avro bytes the Avro interpreter then appends.

Bounds: every read of a payload byte is preceded by a check against the end of the message it
belongs to (``end``, never past the payload's length), every write by a ``reserve`` of the output
buffer, and every append to a column builder by a ``grow`` of it; stack and pool entries are
addressed by index below their counts. That is why bounds checking is off.
"""

from libc.stdint cimport INT64_MAX, INT64_MIN, UINT32_MAX, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset, memcmp
from cpython.buffer cimport PyBuffer_FillInfo

import numpy as np

from ._segments import prepare

from . cimport defs
from .defs cimport pc_error
from .avro_c cimport (
    Layout as AvroLayout, Program as AvroProgram, pc_abuf, pc_slot, pc_plan, pc_actx, pc_grow, pc_grow_hook, pc_arun,
    pc_null_fill, pc_avro_truncate, _pool_grow, _new_slots, _free_slots, _reserve_all, _take_outputs,
)
from .protobuf_py import _prepare

cdef extern from *:
    int __builtin_ctzll(unsigned long long x) nogil

__all__ = ["Program", "decode", "transcode"]

# the builders grow in pyarrow's pool, as the Avro decoder's do
pc_grow_hook = _pool_grow

ctypedef struct pfield:
    int32_t number, shape, child, kind, wire, group
    int32_t packable, collects, utf8, scalar, width, key_kind
    int64_t miss_off, miss_len, name_off, name_len

ctypedef struct pnode:
    int32_t op, nfields, first, ngroups, check
    int32_t lut_off, lut_len, sorted_off, nsorted

ctypedef struct pocc:
    int64_t start, end, next
    int32_t wire

ctypedef struct pbuf:
    uint8_t *p
    int64_t len, cap

# a field of a message bound to its op in the Avro program (decode(); see "straight into the column builders")
ctypedef struct dfield:
    int64_t tag      # the tag its values usually come with (a packable field's: the packed one); -1: none
    int32_t next     # the field of the next number (its usual successor in a payload), nfields after the last
    int32_t number, wire, kind, group, packable, width
    int32_t how      # D_*: what a present value (a list's item) is appended as
    int32_t miss     # M_*: what an absent field is appended as
    int32_t slot     # the value's slot (a list's: its items'; a message's: the slot of one element per message)
    int32_t nslot    # optional and oneof fields: the slot their null fills
    int32_t lslot    # repeated and map fields: the list's slot; -1 for the others
    int32_t child    # D_MSG: the bound message (a dnode); D_RAW: the node its bytes must parse as, or -1
    int32_t aop      # the field's op in the Avro program (M_AVRO runs it over the default's Avro bytes)
    int32_t zero     # lists of items with no Avro bytes (the Avro decoder charges them to a row budget)
    int32_t key      # maps: the slot of the entries' keys; -1 for the others
    int64_t miss_off, miss_len, name_off, name_len

# a message bound to its op in the Avro program: a record, or a wrapper flattened into its one field
ctypedef struct dnode:
    int32_t pnode    # the message node of the program (its field lookup)
    int32_t first, nfields, ngroups
    int32_t slot     # its record's slot; -1 for a message flattened into its one field's value
    int32_t head     # the field of the lowest number (the first one a payload usually has)
    int64_t tags     # its 128 entries in the one-byte tag table: the field a tag is usual for, or -1

ctypedef struct pctx:
    const uint8_t *s      # the payload
    pbuf out              # Avro bytes of all rows
    pbuf tmp              # a map's entries put in order
    int64_t *st           # stack: per message 3 per field (start, end, - / head, tail, count) + 1 per oneof
    int64_t nst, cap_st
    pocc *occ             # pool of field occurrences
    int64_t nocc, cap_occ
    const pnode *nodes
    const pfield *fields
    const int32_t *lut
    const uint8_t *blob
    int32_t depth
    int32_t checking      # inside a replaced oneof member (superseded): its bytes checked, not kept
    int32_t code          # error of the current row (-1: out of memory)
    int64_t offset, detail
    uint32_t opened[128]  # numbers of the groups open while skipping one (at most PROTO_MAX_DEPTH)
    const dnode *dnodes   # decode(): the messages bound to the Avro program (0: the root)
    const int16_t *tag1   # decode(): the one-byte tag tables of the bound messages
    const dfield *dfields
    pc_slot *S            # decode(): the column builders
    const pc_plan *pl     # decode(): the Avro program they are bound to
    pc_actx actx          # decode(): the Avro interpreter's state, for defaults and the general path's rows
    int64_t budget        # decode(): zero-size list items the Avro decoder would still accept in this row
    int32_t bug_code      # decode(): the Avro error the builders reported for a transcoded row
    int64_t bug_detail, bug_row

# pctx.code when malloc failed (never a status code)
cdef int32_t NOMEM = -1
# direct field tables cover numbers below this; larger numbers are searched
cdef int32_t LUT_LIMIT = 2048
cdef int64_t NS = 1000000000
cdef int64_t SECONDS_CLAMP = 9223372036  # |seconds| * NS fits int64 up to this
cdef uint64_t FNV_OFFSET = 14695981039346656037ULL
cdef uint64_t FNV_PRIME = 1099511628211ULL
cdef uint64_t HIGH_BITS = 0x8080808080808080ULL  # the top bit of each byte of a word


# -- buffers and stacks ---------------------------------------------------------------------------------

cdef inline int reserve(pctx *c, pbuf *b, int64_t extra) noexcept nogil:
    cdef int64_t need = b.len + extra, cap
    cdef uint8_t *p
    if need <= b.cap:
        return 0
    cap = b.cap * 2 if b.cap * 2 > need else need + 64
    p = <uint8_t *> realloc(b.p, <size_t> cap)
    if p == NULL:
        c.code = NOMEM
        return -1
    b.p = p
    b.cap = cap
    return 0


cdef inline int put_byte(pctx *c, uint8_t v) noexcept nogil:
    if c.out.len >= c.out.cap and reserve(c, &c.out, 1):
        return -1
    c.out.p[c.out.len] = v
    c.out.len += 1
    return 0


cdef inline int put_varint(pctx *c, pbuf *b, uint64_t v) noexcept nogil:
    if reserve(c, b, 10):
        return -1
    while v > 0x7F:
        b.p[b.len] = <uint8_t> ((v & 0x7F) | 0x80)
        b.len += 1
        v >>= 7
    b.p[b.len] = <uint8_t> v
    b.len += 1
    return 0


cdef inline int put_zigzag(pctx *c, int64_t v) noexcept nogil:
    return put_varint(c, &c.out, ((<uint64_t> v) << 1) ^ (<uint64_t> (v >> 63)))


cdef inline int put_bytes(pctx *c, pbuf *b, const uint8_t *p, int64_t n) noexcept nogil:
    if reserve(c, b, n):
        return -1
    if n:
        memcpy(b.p + b.len, p, <size_t> n)
    b.len += n
    return 0


cdef inline int64_t push_state(pctx *c, int64_t count) noexcept nogil:
    """Reserve ``count`` entries on the int64 stack; their index, or -1."""
    cdef int64_t need = c.nst + count, cap, at
    cdef int64_t *p
    if need > c.cap_st:
        cap = c.cap_st * 2 if c.cap_st * 2 > need else need + 256
        p = <int64_t *> realloc(c.st, <size_t> cap * sizeof(int64_t))
        if p == NULL:
            c.code = NOMEM
            return -1
        c.st = p
        c.cap_st = cap
    at = c.nst
    c.nst = need
    return at


cdef inline int64_t push_occ(pctx *c, int64_t start, int64_t end, int32_t wire) noexcept nogil:
    cdef int64_t cap, at
    cdef pocc *p
    if c.nocc >= c.cap_occ:
        cap = c.cap_occ * 2 + 64
        p = <pocc *> realloc(c.occ, <size_t> cap * sizeof(pocc))
        if p == NULL:
            c.code = NOMEM
            return -1
        c.occ = p
        c.cap_occ = cap
    at = c.nocc
    c.nocc += 1
    c.occ[at].start = start
    c.occ[at].end = end
    c.occ[at].next = -1
    c.occ[at].wire = wire
    return at


# -- the wire format -------------------------------------------------------------------------------------

cdef inline int fail(pctx *c, int32_t code, int64_t offset, int64_t detail) noexcept nogil:
    c.code = code
    c.offset = offset
    c.detail = detail
    return -1


cdef inline int64_t read_varint(pctx *c, int64_t pos, int64_t end, uint64_t *value) noexcept nogil:
    """The varint at ``pos`` (bits past 64 dropped); the position after it, or -1. twin: _Row.varint"""
    cdef const uint8_t *s = c.s
    cdef uint64_t result = 0
    cdef int64_t start = pos
    cdef int i
    cdef uint8_t b
    for i in range(10):
        if pos >= end:
            return fail(c, defs.PROTO_TRUNCATED, start, 0)
        b = s[pos]
        pos += 1
        result |= (<uint64_t> (b & 0x7F)) << (7 * i)
        if b < 0x80:
            value[0] = result
            return pos
    return fail(c, defs.PROTO_VARINT_TOO_LONG, start, 0)


cdef inline int64_t read_tag(pctx *c, int64_t pos, int64_t end, uint64_t *tag) noexcept nogil:
    """A tag of at most 5 bytes and 32 bits. twin: _Row.tag"""
    cdef const uint8_t *s = c.s
    cdef uint64_t result = 0
    cdef int64_t start = pos
    cdef int i
    cdef uint8_t b
    for i in range(5):
        if pos >= end:
            return fail(c, defs.PROTO_TRUNCATED, start, 0)
        b = s[pos]
        pos += 1
        result |= (<uint64_t> (b & 0x7F)) << (7 * i)
        if b < 0x80:
            if result > UINT32_MAX:
                return fail(c, defs.PROTO_INVALID_TAG, start, -1)
            tag[0] = result
            return pos
    return fail(c, defs.PROTO_INVALID_TAG, start, -1)


cdef inline int64_t read_length(pctx *c, int64_t pos, int64_t end, int64_t *start) noexcept nogil:
    """A length-delimited value at ``pos``: its start in ``start``, its end returned. twin: _Row.length"""
    cdef uint64_t size
    cdef int64_t at = read_varint(c, pos, end, &size)
    if at < 0:
        return -1
    if size > <uint64_t> (end - at):
        return fail(c, defs.PROTO_LENGTH_PAST_END, pos,
                    <int64_t> size if size <= <uint64_t> INT64_MAX else INT64_MAX)
    start[0] = at
    return at + <int64_t> size


cdef int64_t skip_group(pctx *c, uint32_t number, int64_t pos, int64_t end, int64_t tag_at) noexcept nogil:
    """Skip a group up to its end-group, nested groups included. twin: _Row.skip_group"""
    cdef int64_t nopen = 1, at
    cdef uint64_t tag
    cdef uint32_t n, wire
    if c.depth + 1 > defs.PROTO_MAX_DEPTH:
        return fail(c, defs.PROTO_DEPTH_EXCEEDED, tag_at, defs.PROTO_MAX_DEPTH)
    c.opened[0] = number
    while True:
        if pos >= end:
            return fail(c, defs.PROTO_TRUNCATED, tag_at, 0)
        at = pos
        pos = read_tag(c, pos, end, &tag)
        if pos < 0:
            return -1
        n = <uint32_t> (tag >> 3)
        wire = <uint32_t> (tag & 7)
        if n == 0 or wire >= 6:
            return fail(c, defs.PROTO_INVALID_TAG, at, <int64_t> tag)
        if wire == 4:
            if n != c.opened[nopen - 1]:
                return fail(c, defs.PROTO_INVALID_TAG, at, <int64_t> tag)
            nopen -= 1
            if nopen == 0:
                return pos
        elif wire == 3:
            if c.depth + nopen + 1 > defs.PROTO_MAX_DEPTH:
                return fail(c, defs.PROTO_DEPTH_EXCEEDED, at, defs.PROTO_MAX_DEPTH)
            c.opened[nopen] = n
            nopen += 1
        else:
            pos = skip(c, wire, n, pos, end, at)
            if pos < 0:
                return -1


cdef int64_t skip(pctx *c, uint32_t wire, uint32_t number, int64_t pos, int64_t end, int64_t tag_at) noexcept nogil:
    """Skip the value of an unknown field. twin: _Row.skip"""
    cdef uint64_t ignored
    cdef int64_t start
    if wire == 0:
        return read_varint(c, pos, end, &ignored)
    if wire == 1 or wire == 5:
        if end - pos < (8 if wire == 1 else 4):
            return fail(c, defs.PROTO_TRUNCATED, pos, 0)
        return pos + (8 if wire == 1 else 4)
    if wire == 2:
        return read_length(c, pos, end, &start)
    return skip_group(c, number, pos, end, tag_at)


cdef inline int utf8_length(const uint8_t *s, int64_t pos, int64_t n) noexcept nogil:
    """Bytes of the well-formed UTF-8 sequence at ``pos`` (lead byte >= 0x80), 0 if ill-formed."""
    cdef uint8_t b0 = s[pos], lo = 0x80, hi = 0xBF
    cdef int length, i
    if b0 < 0xC2 or b0 > 0xF4:
        return 0
    if b0 < 0xE0:
        length = 2
    elif b0 < 0xF0:
        length = 3
        if b0 == 0xE0:
            lo = 0xA0
        elif b0 == 0xED:
            hi = 0x9F
    else:
        length = 4
        if b0 == 0xF0:
            lo = 0x90
        elif b0 == 0xF4:
            hi = 0x8F
    if pos + length > n:
        return 0
    if not (lo <= s[pos + 1] <= hi):
        return 0
    for i in range(2, length):
        if not (0x80 <= s[pos + i] <= 0xBF):
            return 0
    return length


cdef int check_utf8(pctx *c, int64_t pos, int64_t end) noexcept nogil:
    """0, or PROTO_INVALID_UTF8 at the first ill-formed sequence. twin: _Row.check_utf8"""
    cdef const uint8_t *s = c.s
    cdef uint64_t word
    cdef int k
    while pos < end:
        while pos + 8 <= end:
            memcpy(&word, s + pos, 8)
            if word & HIGH_BITS:
                break
            pos += 8
        if pos >= end:
            break
        if s[pos] < 0x80:
            pos += 1
            continue
        k = utf8_length(s, pos, end)
        if k == 0:
            return fail(c, defs.PROTO_INVALID_UTF8, pos, 0)
        pos += k
    return 0


# -- reading a message -----------------------------------------------------------------------------------

cdef inline int32_t find_field(pctx *c, const pnode *nd, uint32_t number) noexcept nogil:
    """The index of the field ``number`` in its message, or -1."""
    cdef int32_t lo, hi, mid
    cdef const int32_t *pairs
    if number < <uint32_t> nd.lut_len:
        return c.lut[nd.lut_off + number] - 1
    lo = 0
    hi = nd.nsorted - 1
    pairs = c.lut + nd.sorted_off
    while lo <= hi:
        mid = (lo + hi) >> 1
        if <uint32_t> pairs[2 * mid] == number:
            return pairs[2 * mid + 1]
        if <uint32_t> pairs[2 * mid] < number:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


cdef int scan(pctx *c, const pnode *nd, int64_t pos, int64_t end, int64_t base) noexcept nogil:
    """Record where the fields of ``nd`` are in ``s[pos:end]``. twin: _Row.scan"""
    cdef const uint8_t *s = c.s
    cdef const pfield *fields = c.fields + nd.first
    cdef const pfield *f
    cdef uint64_t tag
    cdef uint32_t number, wire
    cdef int64_t tag_at, start, o, at
    cdef int32_t fi
    cdef int64_t *st = c.st + base  # moved only by the check of a replaced oneof member
    cdef int64_t *groups = st + 3 * <int64_t> nd.nfields
    while pos < end:
        tag_at = pos
        if s[pos] < 0x80:
            tag = s[pos]
            pos += 1
        else:
            pos = read_tag(c, pos, end, &tag)
            if pos < 0:
                return -1
        number = <uint32_t> (tag >> 3)
        wire = <uint32_t> (tag & 7)
        if number == 0 or wire == 4 or wire >= 6:
            return fail(c, defs.PROTO_INVALID_TAG, tag_at, <int64_t> tag)
        fi = find_field(c, nd, number)
        if fi < 0:
            pos = skip(c, wire, number, pos, end, tag_at)
            if pos < 0:
                return -1
            continue
        f = &fields[fi]
        if <int32_t> wire != f.wire and not (wire == 2 and f.packable):
            return fail(c, defs.PROTO_WRONG_WIRE_TYPE, tag_at, <int64_t> tag)
        start = pos
        if wire == 0:
            if pos < end and s[pos] < 0x80:
                pos += 1
            else:
                while True:  # the 10-byte limit and the bounds, in read_varint's order, without the value
                    if pos - start >= 10:
                        return fail(c, defs.PROTO_VARINT_TOO_LONG, start, 0)
                    if pos >= end:
                        return fail(c, defs.PROTO_TRUNCATED, start, 0)
                    pos += 1
                    if s[pos - 1] < 0x80:
                        break
        elif wire == 2:
            at = pos
            pos = read_length(c, at, end, &start)
            if pos < 0:
                return -1
            if f.utf8 and check_utf8(c, start, pos) < 0:
                return -1
        else:
            if end - pos < (8 if wire == 1 else 4):
                return fail(c, defs.PROTO_TRUNCATED, pos, 0)
            pos += 8 if wire == 1 else 4
        if f.group >= 0 and groups[f.group] != fi:  # a oneof that changes member drops the earlier one's
            o = groups[f.group]
            if o >= 0 and fields[o].collects and st[3 * o] >= 0:
                if superseded(c, fields[o].child, st[3 * o]):
                    return -1
                st = c.st + base  # the check may have grown (moved) the stack
                groups = st + 3 * <int64_t> nd.nfields
            groups[f.group] = fi
            st[3 * fi] = -1
            st[3 * fi + 1] = -1
            st[3 * fi + 2] = 0
        if f.collects:
            o = push_occ(c, start, pos, <int32_t> wire)
            if o < 0:
                return -1
            if st[3 * fi] < 0:
                st[3 * fi] = o
            else:
                c.occ[st[3 * fi + 1]].next = o
            st[3 * fi + 1] = o
            st[3 * fi + 2] += 1
        else:
            st[3 * fi] = start
            st[3 * fi + 1] = pos
    return 0


cdef int superseded(pctx *c, int32_t child, int64_t head) noexcept nogil:
    """Check the bytes of a oneof's message member that a later member replaces (the chain of
    occurrences from ``head``), then drop what they wrote. twin: _Row.superseded"""
    cdef int64_t mark = c.out.len
    cdef int rc
    c.checking += 1
    rc = value(c, child, head, False)
    c.checking -= 1
    c.out.len = mark
    return rc


cdef int message(pctx *c, int32_t ni, int64_t first, bint single) noexcept nogil:
    """Write the record of node ``ni`` read from occurrence ``first`` (and, unless ``single``, the
    ones chained after it, merged). twin: _Row.message"""
    cdef const pnode *nd = &c.nodes[ni]
    cdef int64_t mark = c.nocc, base, need, i, o, last_end = 0, first_start
    cdef int rc
    c.depth += 1
    first_start = c.occ[first].start
    if c.depth > defs.PROTO_MAX_DEPTH:
        return fail(c, defs.PROTO_DEPTH_EXCEEDED, first_start, defs.PROTO_MAX_DEPTH)
    need = 3 * <int64_t> nd.nfields + nd.ngroups
    base = push_state(c, need)
    if base < 0:
        return -1
    for i in range(nd.nfields):
        c.st[base + 3 * i] = -1
        c.st[base + 3 * i + 1] = -1
        c.st[base + 3 * i + 2] = 0
    for i in range(nd.ngroups):
        c.st[base + 3 * nd.nfields + i] = -1
    o = first
    while True:
        if scan(c, nd, c.occ[o].start, c.occ[o].end, base) < 0:
            return -1
        last_end = c.occ[o].end
        if single:
            break
        o = c.occ[o].next
        if o < 0:
            break
    if nd.op == defs.P_MESSAGE:
        rc = emit_fields(c, ni, base, last_end)
    else:
        rc = timestamp(c, base, first_start)
    c.nst = base
    c.nocc = mark
    c.depth -= 1
    return rc


cdef int timestamp(pctx *c, int64_t base, int64_t at) noexcept nogil:
    """seconds * 10**9 + nanos as an Avro long, or PROTO_VALUE_RANGE. twin: _Row.timestamp"""
    cdef uint64_t seconds = 0, nanos = 0
    if c.st[base] >= 0 and read_varint(c, c.st[base], c.st[base + 1], &seconds) < 0:
        return -1
    if c.st[base + 3] >= 0 and read_varint(c, c.st[base + 3], c.st[base + 4], &nanos) < 0:
        return -1
    if c.checking:  # a replaced oneof member: its range is not checked (see superseded)
        return 0
    return put_nanos(c, <int64_t> seconds, <int32_t> <uint32_t> nanos, at)


cdef inline bint nanos_of(int64_t seconds, int64_t nanos, int64_t *out) noexcept nogil:
    """``seconds * 10**9 + nanos`` computed without overflow; False when it is outside int64."""
    cdef int64_t product, extra
    if seconds > SECONDS_CLAMP + 4 or seconds < -SECONDS_CLAMP - 4:
        return False
    if seconds > SECONDS_CLAMP:
        product = SECONDS_CLAMP * NS
        extra = (seconds - SECONDS_CLAMP) * NS + nanos
    elif seconds < -SECONDS_CLAMP:
        product = -SECONDS_CLAMP * NS
        extra = (seconds + SECONDS_CLAMP) * NS + nanos
    else:
        product = seconds * NS
        extra = nanos
    if (extra > 0 and product > INT64_MAX - extra) or (extra < 0 and product < INT64_MIN - extra):
        return False
    out[0] = product + extra
    return True


cdef int put_nanos(pctx *c, int64_t seconds, int64_t nanos, int64_t at) noexcept nogil:
    """``seconds * 10**9 + nanos`` as an Avro long, or PROTO_VALUE_RANGE."""
    cdef int64_t total
    if not nanos_of(seconds, nanos, &total):
        return fail(c, defs.PROTO_VALUE_RANGE, at, 0)
    return put_zigzag(c, total)


cdef inline uint64_t le_bytes(const uint8_t *p, int width) noexcept nogil:
    cdef uint64_t v = 0
    cdef int i
    for i in range(width - 1, -1, -1):
        v = (v << 8) | p[i]
    return v


cdef inline int put_varint_kind(pctx *c, int32_t kind, uint64_t raw) noexcept nogil:
    """A varint kind's value in its Avro form. twin: the varint branch of _Row.scalar"""
    if kind == defs.P_INT32 or kind == defs.P_UINT32:
        return put_zigzag(c, <int32_t> <uint32_t> raw)
    if kind == defs.P_INT64 or kind == defs.P_UINT64:
        return put_zigzag(c, <int64_t> raw)
    if kind == defs.P_SINT32:  # zigzag32 on the wire is Avro's zigzag of the same int
        return put_varint(c, &c.out, raw & UINT32_MAX)
    if kind == defs.P_SINT64:
        return put_varint(c, &c.out, raw)
    return put_byte(c, 1 if raw else 0)


cdef inline int scalar(pctx *c, int32_t kind, int64_t start, int64_t end) noexcept nogil:
    """Write the value at ``s[start:end]``. twin: _Row.scalar"""
    cdef uint64_t raw
    cdef const uint8_t *s = c.s
    if kind == defs.P_FIXED32 or kind == defs.P_SFIXED32:
        return put_zigzag(c, <int32_t> <uint32_t> le_bytes(s + start, 4))
    if kind == defs.P_FIXED64 or kind == defs.P_SFIXED64:
        return put_zigzag(c, <int64_t> le_bytes(s + start, 8))
    if kind == defs.P_FLOAT or kind == defs.P_DOUBLE:
        return put_bytes(c, &c.out, s + start, end - start)
    if kind == defs.P_STRING or kind == defs.P_BYTES:
        if put_varint(c, &c.out, (<uint64_t> (end - start)) << 1):
            return -1
        return put_bytes(c, &c.out, s + start, end - start)
    if start < end and s[start] < 0x80:
        raw = s[start]
    elif read_varint(c, start, end, &raw) < 0:
        return -1
    return put_varint_kind(c, kind, raw)


cdef int repeated_scalar(pctx *c, const pfield *f, int64_t head) noexcept nogil:
    """twin: _Row.repeated_scalar"""
    cdef const uint8_t *s = c.s
    cdef int64_t count = 0, o = head, start, end, pos, i, after
    cdef int width = f.width
    cdef uint64_t raw
    while o >= 0:
        start = c.occ[o].start
        end = c.occ[o].end
        if c.occ[o].wire == 2 and f.packable:
            if width:
                count += (end - start) / width
            else:  # one terminating byte per varint
                for i in range(start, end):
                    count += s[i] < 0x80
        else:
            count += 1
        o = c.occ[o].next
    if count and put_varint(c, &c.out, (<uint64_t> count) << 1):
        return -1
    o = head
    while o >= 0:
        start = c.occ[o].start
        end = c.occ[o].end
        if c.occ[o].wire == 2 and f.packable:
            pos = start
            while pos < end:
                if width:
                    if end - pos < width:
                        return fail(c, defs.PROTO_TRUNCATED, pos, 0)
                    if scalar(c, f.kind, pos, pos + width):
                        return -1
                    pos += width
                else:
                    after = read_varint(c, pos, end, &raw)
                    if after < 0 or put_varint_kind(c, f.kind, raw):
                        return -1
                    pos = after
        elif scalar(c, f.kind, start, end):
            return -1
        o = c.occ[o].next
    return put_byte(c, 0)


cdef int value(pctx *c, int32_t ni, int64_t first, bint single) noexcept nogil:
    """A message-like value read from its occurrences (merged unless ``single``). twin: _Row.value"""
    cdef const pnode *nd = &c.nodes[ni]
    cdef int64_t mark, total = 0, o
    if nd.op != defs.P_RAW:
        return message(c, ni, first, single)
    if nd.check >= 0:
        mark = c.out.len
        if message(c, nd.check, first, single):
            return -1
        c.out.len = mark
    o = first
    while o >= 0:
        total += c.occ[o].end - c.occ[o].start
        o = -1 if single else c.occ[o].next
    if put_varint(c, &c.out, (<uint64_t> total) << 1):
        return -1
    o = first
    while o >= 0:
        if put_bytes(c, &c.out, c.s + c.occ[o].start, c.occ[o].end - c.occ[o].start):
            return -1
        o = -1 if single else c.occ[o].next
    return 0


cdef inline int64_t key_size(const uint8_t *p, int32_t kind) noexcept nogil:
    """Bytes of the Avro key at the start of a map entry record (written by this kernel: well formed)."""
    cdef int64_t pos = 0
    cdef uint64_t v = 0
    cdef int shift = 0
    if kind == defs.P_BOOL:
        return 1
    while True:
        v |= (<uint64_t> (p[pos] & 0x7F)) << shift
        pos += 1
        shift += 7
        if p[pos - 1] < 0x80:
            break
    return pos + <int64_t> (v >> 1) if kind == defs.P_STRING else pos


cdef inline uint64_t key_hash(const uint8_t *p, int64_t n) noexcept nogil:
    cdef uint64_t h = FNV_OFFSET
    cdef int64_t i
    for i in range(n):
        h = (h ^ p[i]) * FNV_PRIME
    return h


cdef int entries(pctx *c, const pfield *f, int64_t head, int64_t n) noexcept nogil:
    """Map entries: each written as a record, then a key met again keeps its first place and takes the
    last entry's record (keys are compared by their canonical Avro bytes). twin: _Row.entries"""
    cdef int64_t base_out, rec, i = 0, o = head
    if n == 0:
        return put_byte(c, 0)
    base_out = c.out.len
    rec = push_state(c, 4 * n)  # per entry: start, end, key size, winner (see entries_end)
    if rec < 0 or put_varint(c, &c.out, (<uint64_t> n) << 1):
        return -1
    while o >= 0:
        c.st[rec + 4 * i] = c.out.len
        if message(c, f.child, o, True):
            return -1
        c.st[rec + 4 * i + 1] = c.out.len
        o = c.occ[o].next
        i += 1
    return entries_end(c, f, base_out, rec, n)


cdef int entries_end(pctx *c, const pfield *f, int64_t base_out, int64_t rec, int64_t n) noexcept nogil:
    """After the ``n`` entry records written from ``base_out`` (their bounds at ``rec`` on the stack):
    drop the entries whose key comes again, moving the last one's record into the first one's place,
    end the array and pop ``rec``. Winner per entry: the entry whose record takes its place, or -1."""
    cdef int64_t table = 0, size = 0, i, j, slot, kept = 0, w
    cdef uint64_t h
    cdef bint repeats = False
    for i in range(n):
        c.st[rec + 4 * i + 2] = key_size(c.out.p + c.st[rec + 4 * i], f.key_kind)
    if n > 16:  # open addressing over the keys' bytes; small maps compare pairwise
        size = 64
        while size < 2 * n:
            size *= 2
        table = push_state(c, size)
        if table < 0:
            return -1
        for i in range(size):
            c.st[table + i] = -1
    for i in range(n):
        c.st[rec + 4 * i + 3] = i
        j = -1
        if n > 16:
            h = key_hash(c.out.p + c.st[rec + 4 * i], c.st[rec + 4 * i + 2])
            slot = <int64_t> (h & <uint64_t> (size - 1))
            while c.st[table + slot] >= 0:
                w = c.st[table + slot]
                if same_key(c, rec, w, i):
                    j = w
                    break
                slot = (slot + 1) & (size - 1)
            if j < 0:
                c.st[table + slot] = i
        else:
            for w in range(i):
                if c.st[rec + 4 * w + 3] >= 0 and same_key(c, rec, w, i):
                    j = w
                    break
        if j >= 0:
            c.st[rec + 4 * j + 3] = i
            c.st[rec + 4 * i + 3] = -1
            repeats = True
    if repeats:
        c.tmp.len = 0
        for i in range(n):
            kept += c.st[rec + 4 * i + 3] >= 0
        if put_varint(c, &c.tmp, (<uint64_t> kept) << 1):
            return -1
        for i in range(n):
            w = c.st[rec + 4 * i + 3]
            if w >= 0 and put_bytes(c, &c.tmp, c.out.p + c.st[rec + 4 * w],
                                    c.st[rec + 4 * w + 1] - c.st[rec + 4 * w]):
                return -1
        c.out.len = base_out
        if put_bytes(c, &c.out, c.tmp.p, c.tmp.len):
            return -1
    c.nst = rec
    return put_byte(c, 0)


cdef inline bint same_key(pctx *c, int64_t rec, int64_t a, int64_t b) noexcept nogil:
    cdef int64_t n = c.st[rec + 4 * a + 2]
    return n == c.st[rec + 4 * b + 2] and memcmp(c.out.p + c.st[rec + 4 * a], c.out.p + c.st[rec + 4 * b],
                                                 <size_t> n) == 0


cdef int emit_fields(pctx *c, int32_t ni, int64_t base, int64_t end) noexcept nogil:
    """Write the fields of message node ``ni`` in program order. twin: _Row.fields"""
    cdef const pnode *nd = &c.nodes[ni]
    cdef const pfield *f
    cdef const pfield *m
    cdef int32_t fi, shape
    cdef int64_t groups = base + 3 * <int64_t> nd.nfields, member, head, count
    cdef bint present
    cdef const pfield *fields = c.fields + nd.first
    for fi in range(nd.nfields):
        f = &fields[fi]
        shape = f.shape
        if shape == defs.PF_CASE:
            member = c.st[groups + f.group]
            if member < 0:
                if put_byte(c, 0):
                    return -1
            else:
                m = &fields[member]
                if put_byte(c, 2) or put_varint(c, &c.out, (<uint64_t> m.name_len) << 1):
                    return -1
                if put_bytes(c, &c.out, c.blob + m.name_off, m.name_len):
                    return -1
            continue
        head = c.st[base + 3 * fi]
        count = c.st[base + 3 * fi + 2]
        if shape == defs.PF_REPEATED:
            if f.scalar:
                if repeated_scalar(c, f, head):
                    return -1
            else:
                if count and put_varint(c, &c.out, (<uint64_t> count) << 1):
                    return -1
                while head >= 0:
                    if value(c, f.child, head, True):
                        return -1
                    head = c.occ[head].next
                if put_byte(c, 0):
                    return -1
            continue
        if shape == defs.PF_MAP:
            if entries(c, f, head, count):
                return -1
            continue
        present = count > 0 if f.collects else head >= 0
        if shape == defs.PF_ONEOF and c.st[groups + f.group] != fi:
            present = False
        if not present:
            if shape == defs.PF_REQUIRED:
                if c.checking:
                    continue
                return fail(c, defs.PROTO_MISSING_REQUIRED, end, (<int64_t> ni << 29) | f.number)
            if f.miss_len == 1:  # null, zero, empty: the common defaults
                if put_byte(c, c.blob[f.miss_off]):
                    return -1
            elif put_bytes(c, &c.out, c.blob + f.miss_off, f.miss_len):
                return -1
            continue
        if (shape == defs.PF_OPTIONAL or shape == defs.PF_ONEOF) and put_byte(c, 2):
            return -1
        if f.collects:
            if value(c, f.child, head, False):
                return -1
        elif scalar(c, f.kind, head, c.st[base + 3 * fi + 1]):
            return -1
    return 0


# -- the streaming path ---------------------------------------------------------------------------------
#
# What Protobuf serializers write is plain: fields in number order, a non-repeated field once, the
# items of a repeated field side by side. When every message of the program declares its fields in
# number order too (Program.streams), such a payload is written while it is read, in one pass, with
# no occurrence records. Anything else (a field before one already written, a second value of a
# non-repeated field, a second member of a oneof, a required field missing, any malformed byte) makes
# the streaming path give up the row (return 1), which the general path above then reads from the
# start: every output that is not plain, and every error, comes from the general path, so both twins
# agree whatever the payload. The pure twin has only the general path.

cdef int64_t stream_scalar(pctx *c, int32_t kind, uint32_t wire, int64_t pos, int64_t end) noexcept nogil:
    """Write the value of ``kind`` at ``pos`` (wire type checked); the position after it, or -1."""
    cdef uint64_t raw
    cdef int64_t start
    if wire == 0:
        pos = read_varint(c, pos, end, &raw)
        if pos < 0 or put_varint_kind(c, kind, raw):
            return -1
        return pos
    if wire == 2:
        end = read_length(c, pos, end, &start)
        if end < 0 or (kind == defs.P_STRING and check_utf8(c, start, end)):
            return -1
        return -1 if scalar(c, kind, start, end) else end
    if end - pos < (8 if wire == 1 else 4):
        return -1
    start = pos
    pos += 8 if wire == 1 else 4
    return -1 if scalar(c, kind, start, pos) else pos


cdef int stream_missing(pctx *c, const pfield *fields, int32_t k, int64_t groups) noexcept nogil:
    """Field ``k`` is absent; 1 when that is the general path's business (a required field)."""
    cdef const pfield *f = &fields[k]
    cdef const pfield *m
    cdef int64_t member
    if f.shape == defs.PF_CASE:
        member = c.st[groups + f.group]
        if member < 0:
            return put_byte(c, 0)
        m = &fields[member]
        if put_byte(c, 2) or put_varint(c, &c.out, (<uint64_t> m.name_len) << 1):
            return 1
        return put_bytes(c, &c.out, c.blob + m.name_off, m.name_len)
    if f.shape == defs.PF_REPEATED or f.shape == defs.PF_MAP:
        return put_byte(c, 0)
    if f.shape == defs.PF_REQUIRED:
        return 1
    if f.miss_len == 1:
        return put_byte(c, c.blob[f.miss_off])
    return put_bytes(c, &c.out, c.blob + f.miss_off, f.miss_len)


cdef int stream_time(pctx *c, int64_t pos, int64_t end) noexcept nogil:
    """A Timestamp or Duration read and written in one pass (its two scalars: last value wins)."""
    cdef uint64_t tag, seconds = 0, nanos = 0
    cdef uint32_t number, wire
    cdef int64_t at = pos
    while pos < end:
        pos = read_tag(c, pos, end, &tag)
        if pos < 0:
            return 1
        number = <uint32_t> (tag >> 3)
        wire = <uint32_t> (tag & 7)
        if number == 0 or wire == 4 or wire >= 6:
            return 1
        if number == 1 or number == 2:
            if wire != 0:
                return 1
            pos = read_varint(c, pos, end, &seconds if number == 1 else &nanos)
        else:
            pos = skip(c, wire, number, pos, end, pos)
        if pos < 0:
            return 1
    return 1 if put_nanos(c, <int64_t> seconds, <int32_t> <uint32_t> nanos, at) else 0


cdef int stream_value(pctx *c, int32_t ni, int64_t start, int64_t end) noexcept nogil:
    """One message-like value of ``s[start:end]``."""
    cdef const pnode *nd = &c.nodes[ni]
    cdef int64_t mark
    if nd.op != defs.P_RAW:
        return stream_message(c, ni, start, end)
    if nd.check >= 0:
        mark = c.out.len
        if stream_message(c, nd.check, start, end):
            return 1
        c.out.len = mark
    if put_varint(c, &c.out, (<uint64_t> (end - start)) << 1):
        return 1
    return put_bytes(c, &c.out, c.s + start, end - start)


cdef int64_t stream_run(pctx *c, const pfield *f, int64_t pos, int64_t end) noexcept nogil:
    """The items of a repeated or map field from its first tag at ``pos`` to the last of the
    occurrences that follow each other; the position after them, or -1."""
    cdef const uint8_t *s = c.s
    cdef uint64_t tag = 0, raw
    cdef int64_t p = pos, q, count = 0, vs = 0, ve, i, base_out = 0, rec = 0, run_end
    cdef uint32_t wire
    cdef bint packed
    while p < end:  # count the items, checking the framing
        q = read_tag(c, p, end, &tag)
        if q < 0 or <uint32_t> (tag >> 3) != <uint32_t> f.number:
            break
        wire = <uint32_t> (tag & 7)
        if <int32_t> wire != f.wire and not (wire == 2 and f.packable):
            return -1
        if wire == 2:
            ve = read_length(c, q, end, &vs)
            if ve < 0:
                return -1
            if f.packable:
                if f.width:
                    if (ve - vs) % f.width:
                        return -1
                    count += (ve - vs) / f.width
                else:
                    for i in range(vs, ve):
                        count += s[i] < 0x80
            else:
                count += 1
            p = ve
        else:
            p = skip(c, wire, <uint32_t> f.number, q, end, p)
            if p < 0:
                return -1
            count += 1
    run_end = p
    if f.shape == defs.PF_MAP:
        base_out = c.out.len
        rec = push_state(c, 4 * count)
        if rec < 0:
            return -1
    if count and put_varint(c, &c.out, (<uint64_t> count) << 1):
        return -1
    p = pos
    i = 0
    while p < run_end:  # write them (the framing was checked above)
        p = read_tag(c, p, run_end, &tag)
        if p < 0:
            return -1
        wire = <uint32_t> (tag & 7)
        packed = wire == 2 and f.packable
        if f.scalar and not packed:
            p = stream_scalar(c, f.kind, wire, p, run_end)
            if p < 0:
                return -1
            continue
        ve = read_length(c, p, run_end, &vs)
        if ve < 0:
            return -1
        p = ve
        if packed:
            while vs < ve:
                if f.width:
                    if scalar(c, f.kind, vs, vs + f.width):
                        return -1
                    vs += f.width
                else:
                    q = read_varint(c, vs, ve, &raw)
                    if q < 0 or put_varint_kind(c, f.kind, raw):
                        return -1
                    vs = q
        elif f.shape == defs.PF_MAP:
            c.st[rec + 4 * i] = c.out.len
            if stream_message(c, f.child, vs, ve):
                return -1
            c.st[rec + 4 * i + 1] = c.out.len
            i += 1
        elif stream_value(c, f.child, vs, ve):
            return -1
    if f.shape == defs.PF_MAP:
        if count == 0:
            c.nst = rec
            return -1 if put_byte(c, 0) else run_end
        return -1 if entries_end(c, f, base_out, rec, count) else run_end
    return -1 if put_byte(c, 0) else run_end


cdef int stream_message(pctx *c, int32_t ni, int64_t pos, int64_t end) noexcept nogil:
    """Write the record of message node ``ni`` while reading ``s[pos:end]``; 1 to give the row up."""
    cdef const pnode *nd = &c.nodes[ni]
    cdef const pfield *fields = c.fields + nd.first
    cdef const pfield *f
    cdef const uint8_t *s = c.s
    cdef uint64_t tag
    cdef uint32_t number, wire
    cdef int32_t fi, cursor = 0, k
    cdef int64_t groups = c.nst, vs, ve, tag_at
    c.depth += 1
    if c.depth > defs.PROTO_MAX_DEPTH:
        return 1
    if nd.op != defs.P_MESSAGE:
        c.depth -= 1
        return stream_time(c, pos, end)
    if nd.ngroups:
        if push_state(c, nd.ngroups) < 0:
            return 1
        for k in range(nd.ngroups):
            c.st[groups + k] = -1
    while pos < end:
        tag_at = pos
        if s[pos] < 0x80:
            tag = s[pos]
            pos += 1
        else:
            pos = read_tag(c, pos, end, &tag)
            if pos < 0:
                return 1
        number = <uint32_t> (tag >> 3)
        wire = <uint32_t> (tag & 7)
        if number == 0 or wire == 4 or wire >= 6:
            return 1
        fi = find_field(c, nd, number)
        if fi < 0:
            pos = skip(c, wire, number, pos, end, pos)
            if pos < 0:
                return 1
            continue
        f = &fields[fi]
        if fi < cursor or (<int32_t> wire != f.wire and not (wire == 2 and f.packable)):
            return 1
        while cursor < fi:
            if stream_missing(c, fields, cursor, groups):
                return 1
            cursor += 1
        cursor = fi + 1
        if f.shape == defs.PF_REPEATED or f.shape == defs.PF_MAP:
            pos = stream_run(c, f, tag_at, end)
            if pos < 0:
                return 1
            continue
        if f.shape == defs.PF_ONEOF:
            if c.st[groups + f.group] >= 0:
                return 1
            c.st[groups + f.group] = fi
        if (f.shape == defs.PF_OPTIONAL or f.shape == defs.PF_ONEOF) and put_byte(c, 2):
            return 1
        if f.scalar:
            pos = stream_scalar(c, f.kind, wire, pos, end)
            if pos < 0:
                return 1
        else:
            ve = read_length(c, pos, end, &vs)
            if ve < 0 or stream_value(c, f.child, vs, ve):
                return 1
            pos = ve
    while cursor < nd.nfields:
        if stream_missing(c, fields, cursor, groups):
            return 1
        cursor += 1
    c.nst = groups
    c.depth -= 1
    return 0


# -- straight into the column builders ------------------------------------------------------------------
#
# decode() reads each payload once and appends every value to the Avro decoder's column builders
# (csrc/pc_avro.h) as it meets it, exactly as the op of the shadow schema that reads the general
# path's Avro bytes of that value would append it: the same values, offsets, validity bytes and
# lengths. Program(avro=) binds each message of the program to its op in the Avro program, and each
# field to the op and slot of its value, so a field writes into slots of its own: the order the
# fields of a payload come in does not matter, and the items of a repeated field need not follow each
# other. At the end of a message its absent fields get their defaults (zeros and nulls directly,
# other defaults through the Avro interpreter on their Avro bytes), and its lists are closed.
#
# What one pass cannot settle (a non-repeated field or a second oneof member met again: last value
# wins, merged messages, member switches; a map key met twice; a required field absent; anything
# malformed) gives the row up: its elements are cut from every builder with pc_avro_truncate, as the
# Avro decoder cuts a bad row, and the general path transcodes the row, whose Avro bytes the Avro
# interpreter appends. Every error, and every row that is not plain, comes from the general path, as
# in transcode(), so the twins agree whatever the payload.

# dfield.how: what a present value is appended as
# private to the one-pass decode (the pure twin has no such path, so nothing to share with defs.pxd)
ctypedef enum direct_kind:
    D_I32 = 1    # a 32-bit kind as int32 (uint32 as its bit pattern)
    D_I64 = 2    # a 64-bit kind as int64 (uint64 as its bit pattern)
    D_F32 = 3
    D_F64 = 4
    D_BOOL = 5
    D_STR = 6    # checked UTF-8
    D_BYTES = 7
    D_MSG = 8    # a message, into its bound message
    D_TIME = 9   # a Timestamp or Duration as int64 nanoseconds
    D_RAW = 10   # a message's bytes as they are (checked against a message node first when it has one)
    D_CASE = 11  # the name of the oneof member met (a field of no number)

# dfield.miss: what an absent field is appended as
ctypedef enum missing_rule:  # what an absent field appends (private to the one-pass decode)
    M_ZERO = 1   # a zero of the slot's width (an empty string)
    M_NULL = 2   # a null (pc_null_fill of nslot)
    M_AVRO = 3   # its default's Avro bytes, through the Avro interpreter
    M_FAIL = 4   # a required field: the general path reports it
    M_LIST = 5   # an empty list (lists are closed at the message's end in any case)


cdef inline int grow(pctx *c, pc_abuf *b, int64_t need) noexcept nogil:
    """PC_RESERVE: room for ``need`` bytes in builder buffer ``b``; 0, or -1 out of memory."""
    if need > b.cap and pc_grow(b, need):
        c.code = NOMEM
        return -1
    return 0


cdef inline int commit(pctx *c, pc_slot *s) noexcept nogil:
    """One more element in ``s``: its validity byte when the slot keeps them, its length (PC_VALID1)."""
    return done(c, s, s.length)


cdef inline int done(pctx *c, pc_slot *s, int64_t n) noexcept nogil:
    """commit of element ``n`` (the slot's length, kept in a local by the callers: their stores
    through the builders' pointers would otherwise make the compiler read it again)."""
    if s.vactive:
        if grow(c, &s.valid, n + 1):
            return -1
        s.valid.p[n] = 1
    s.length = n + 1
    return 0


cdef inline int add_i32(pctx *c, pc_slot *s, int32_t v) noexcept nogil:
    cdef int64_t n = s.length
    if grow(c, &s.b1, (n + 1) * 4):
        return -1
    (<int32_t *> s.b1.p)[n] = v
    return done(c, s, n)


cdef inline int add_i64(pctx *c, pc_slot *s, int64_t v) noexcept nogil:
    cdef int64_t n = s.length
    if grow(c, &s.b1, (n + 1) * 8):
        return -1
    (<int64_t *> s.b1.p)[n] = v
    return done(c, s, n)


cdef inline int add_raw(pctx *c, pc_slot *s, const uint8_t *p, int width) noexcept nogil:
    """A float or double: its little-endian bytes as they are (the Avro decoder copies them too)."""
    cdef int64_t n = s.length
    if grow(c, &s.b1, (n + 1) * width):
        return -1
    memcpy(s.b1.p + n * width, p, <size_t> width)
    return done(c, s, n)


cdef inline int add_byte(pctx *c, pc_slot *s, uint8_t v) noexcept nogil:
    cdef int64_t n = s.length
    if grow(c, &s.b1, n + 1):
        return -1
    s.b1.p[n] = v
    return done(c, s, n)


cdef inline void copy_short(uint8_t *dst, const uint8_t *src, int64_t n) noexcept nogil:
    """memcpy for the short strings of most payloads: overlapping word moves instead of a libc call."""
    cdef uint64_t x, y
    cdef uint32_t u, v
    if n > 16:
        memcpy(dst, src, <size_t> n)
    elif n >= 8:
        memcpy(&x, src, 8)
        memcpy(&y, src + n - 8, 8)
        memcpy(dst, &x, 8)
        memcpy(dst + n - 8, &y, 8)
    elif n >= 4:
        memcpy(&u, src, 4)
        memcpy(&v, src + n - 4, 4)
        memcpy(dst, &u, 4)
        memcpy(dst + n - 4, &v, 4)
    else:
        while n > 0:
            n -= 1
            dst[n] = src[n]


cdef inline int add_text(pctx *c, pc_slot *s, const uint8_t *p, int64_t n) noexcept nogil:
    """``n`` bytes as the next string of the K_BIN slot ``s``; -1 out of memory or past the int32
    offsets (the general path then gets the Avro decoder's error for it)."""
    cdef int64_t at = s.dlen, dlen = at + n, length = s.length
    if dlen > 2147483647:
        return -1
    if grow(c, &s.b2, dlen) or grow(c, &s.b1, (length + 2) * 4):
        return -1
    copy_short(s.b2.p + at, p, n)
    s.dlen = dlen
    (<int32_t *> s.b1.p)[length + 1] = <int32_t> dlen
    return done(c, s, length)


cdef inline int add_zero(pctx *c, pc_slot *s) noexcept nogil:
    """The zero of the slot (0, 0.0, false, an empty string): a proto3 field's default."""
    if s.kind == defs.K_BIN:
        if grow(c, &s.b1, (s.length + 2) * 4):
            return -1
        (<int32_t *> s.b1.p)[s.length + 1] = <int32_t> s.dlen
        return commit(c, s)
    if grow(c, &s.b1, (s.length + 1) * s.width):
        return -1
    memset(s.b1.p + s.length * s.width, 0, <size_t> s.width)
    return commit(c, s)


cdef inline int add_varint_kind(pctx *c, pc_slot *s, int32_t kind, uint64_t raw) noexcept nogil:
    """A varint kind's value. twin: put_varint_kind, then the Avro op of its slot"""
    cdef uint32_t u
    if kind == defs.P_INT32 or kind == defs.P_UINT32:
        return add_i32(c, s, <int32_t> <uint32_t> raw)
    if kind == defs.P_INT64 or kind == defs.P_UINT64:
        return add_i64(c, s, <int64_t> raw)
    if kind == defs.P_SINT32:
        u = <uint32_t> raw
        return add_i32(c, s, <int32_t> ((u >> 1) ^ (<uint32_t> 0 - (u & 1))))
    if kind == defs.P_SINT64:
        return add_i64(c, s, <int64_t> ((raw >> 1) ^ (<uint64_t> 0 - (raw & 1))))
    return add_byte(c, s, 1 if raw else 0)


cdef inline int64_t varint_at(pctx *c, int64_t pos, int64_t end, uint64_t *raw) noexcept nogil:
    """read_varint with its one-byte case inline."""
    if pos < end and c.s[pos] < 0x80:
        raw[0] = c.s[pos]
        return pos + 1
    return read_varint(c, pos, end, raw)


cdef int avro_bytes(pctx *c, int32_t op, const uint8_t *p, int64_t n) noexcept nogil:
    """The ``n`` Avro bytes at ``p`` decoded by op ``op`` of the Avro program into the builders; 0 or -1."""
    cdef const uint8_t *q
    c.actx.msg = p
    c.actx.budget = defs.ZERO_SIZE_ITEM_LIMIT
    q = pc_arun(&c.actx, c.pl, op, p, p + n)
    if q == NULL:
        if c.actx.code == -1:
            c.code = NOMEM
        return -1
    return 0 if q == p + n else -1


cdef int d_time(pctx *c, pc_slot *s, int64_t pos, int64_t end) noexcept nogil:
    """A Timestamp or Duration in ``s[pos:end]`` (the last value of each field wins) as int64
    nanoseconds; 0, or -1 to give the row up. twin: _Row.message of the node, _Row.timestamp"""
    cdef const uint8_t *p = c.s
    cdef uint64_t tag, seconds = 0, nanos = 0
    cdef uint32_t number, wire
    cdef int64_t tag_at, total
    if c.depth + 1 > defs.PROTO_MAX_DEPTH:
        return -1
    c.depth += 1  # unknown groups inside are skipped at the depth the general path skips them
    while pos < end:
        tag_at = pos
        if p[pos] < 0x80:
            tag = p[pos]
            pos += 1
        else:
            pos = read_tag(c, pos, end, &tag)
            if pos < 0:
                return -1
        number = <uint32_t> (tag >> 3)
        wire = <uint32_t> (tag & 7)
        if number == 0 or wire == 4 or wire >= 6:
            return -1
        if number == 1:
            if wire != 0:
                return -1
            pos = varint_at(c, pos, end, &seconds)
        elif number == 2:
            if wire != 0:
                return -1
            pos = varint_at(c, pos, end, &nanos)
        else:
            pos = skip(c, wire, number, pos, end, tag_at)
        if pos < 0:
            return -1
    c.depth -= 1
    if not nanos_of(<int64_t> seconds, <int32_t> <uint32_t> nanos, &total):
        return -1
    return add_i64(c, s, total)


cdef inline bint short_ascii(const uint8_t *p, int64_t n) noexcept nogil:
    """Whether the ``n`` <= 16 bytes at ``p`` are ASCII (overlapping word loads, no loop)."""
    cdef uint64_t x, y
    cdef uint32_t u, v
    if n >= 8:
        memcpy(&x, p, 8)
        memcpy(&y, p + n - 8, 8)
        return ((x | y) & HIGH_BITS) == 0
    if n >= 4:
        memcpy(&u, p, 4)
        memcpy(&v, p + n - 4, 4)
        return ((u | v) & 0x80808080U) == 0
    x = 0
    while n > 0:
        n -= 1
        x |= p[n]
    return x < 0x80


cdef int d_nested(pctx *c, const dfield *f, int64_t vs, int64_t ve) noexcept nogil:
    """A message, Timestamp / Duration or raw value in ``s[vs:ve]``; 0, or -1 to give the row up."""
    cdef int64_t mark
    if f.how == D_MSG:
        return d_message(c, &c.dnodes[f.child], vs, ve)
    if f.how == D_TIME:
        return d_time(c, &c.S[f.slot], vs, ve)
    if f.child >= 0:  # D_RAW: the bytes must read as their message (its output dropped)
        mark = c.out.len
        if stream_message(c, f.child, vs, ve):
            return -1
        c.out.len = mark
    return add_text(c, &c.S[f.slot], c.s + vs, ve - vs)


cdef int64_t d_other(pctx *c, const dfield *f, uint32_t wire, int64_t pos, int64_t end) noexcept nogil:
    """d_value of the rarer values: fixed-size numbers, long strings, messages, Timestamps, raw bytes."""
    cdef const uint8_t *p = c.s
    cdef int64_t vs = 0, ve
    cdef int32_t how = f.how
    if wire == 5:
        if end - pos < 4:
            return -1
        if how == D_F32:
            if add_raw(c, &c.S[f.slot], p + pos, 4):
                return -1
        elif add_i32(c, &c.S[f.slot], <int32_t> <uint32_t> le_bytes(p + pos, 4)):
            return -1
        return pos + 4
    if wire == 1:
        if end - pos < 8:
            return -1
        if how == D_F64:
            if add_raw(c, &c.S[f.slot], p + pos, 8):
                return -1
        elif add_i64(c, &c.S[f.slot], <int64_t> le_bytes(p + pos, 8)):
            return -1
        return pos + 8
    ve = read_length(c, pos, end, &vs)
    if ve < 0:
        return -1
    if how == D_STR:
        if check_utf8(c, vs, ve) or add_text(c, &c.S[f.slot], p + vs, ve - vs):
            return -1
    elif how == D_BYTES:
        if add_text(c, &c.S[f.slot], p + vs, ve - vs):
            return -1
    elif d_nested(c, f, vs, ve):
        return -1
    return ve


cdef int64_t d_value(pctx *c, const dfield *f, uint32_t wire, int64_t pos, int64_t end) noexcept nogil:
    """One value of field ``f`` at ``pos`` (tag read, wire type checked) into its slot; the position
    after it, or -1 to give the row up. Varints and short strings here (d_message has the same two
    cases inline), the rest in d_other."""
    cdef const uint8_t *p = c.s
    cdef uint64_t raw
    cdef int64_t ve, n
    if wire == 0:
        pos = varint_at(c, pos, end, &raw)
        if pos < 0:
            return -1
        if add_varint_kind(c, &c.S[f.slot], f.kind, raw):
            return -1
        return pos
    if wire == 2 and (f.how == D_STR or f.how == D_BYTES) and pos < end and p[pos] <= 16:
        n = p[pos]  # a short string: its one-byte length, an ASCII check without a loop
        pos += 1
        if n > end - pos:
            return -1
        ve = pos + n
        if f.how == D_STR and not short_ascii(p + pos, n) and check_utf8(c, pos, ve):
            return -1
        if add_text(c, &c.S[f.slot], p + pos, n):
            return -1
        return ve
    return d_other(c, f, wire, pos, end)


cdef int64_t d_items(pctx *c, const dfield *f, uint32_t wire, int64_t pos, int64_t end) noexcept nogil:
    """One occurrence of a repeated or map field: one item, or a packed run of them."""
    cdef const uint8_t *p = c.s
    cdef pc_slot *s
    cdef uint64_t raw
    cdef int64_t vs = 0, ve
    cdef int32_t width = f.width
    if not (wire == 2 and f.packable):
        return d_value(c, f, wire, pos, end)
    ve = read_length(c, pos, end, &vs)
    if ve < 0:
        return -1
    s = &c.S[f.slot]
    if width:
        if (ve - vs) % width:
            return -1
        while vs < ve:
            if f.how == D_F32 or f.how == D_F64:
                if add_raw(c, s, p + vs, width):
                    return -1
            elif width == 4:
                if add_i32(c, s, <int32_t> <uint32_t> le_bytes(p + vs, 4)):
                    return -1
            elif add_i64(c, s, <int64_t> le_bytes(p + vs, 8)):
                return -1
            vs += width
        return ve
    while vs < ve:
        vs = varint_at(c, vs, ve, &raw)
        if vs < 0 or add_varint_kind(c, s, f.kind, raw):
            return -1
    return ve


cdef bint keys_repeat(pctx *c, const pc_slot *k, int64_t a, int64_t b) noexcept nogil:
    """Whether two of the map keys ``a`` .. ``b - 1`` of slot ``k`` are equal (the general path then
    keeps the first place and the last value); small maps compare pairwise, big ones hash."""
    cdef const int32_t *offs = <const int32_t *> k.b1.p
    cdef const uint8_t *data
    cdef int64_t i, j, n = b - a, size, table, slot, la, lb
    cdef int64_t w = k.width
    cdef uint64_t h
    cdef bint text = k.kind == defs.K_BIN
    if n <= 16:
        for i in range(a + 1, b):
            for j in range(a, i):
                if text:
                    la = offs[i + 1] - offs[i]
                    lb = offs[j + 1] - offs[j]
                    if la == lb and memcmp(k.b2.p + offs[i], k.b2.p + offs[j], <size_t> la) == 0:
                        return True
                elif memcmp(k.b1.p + i * w, k.b1.p + j * w, <size_t> w) == 0:
                    return True
        return False
    size = 64
    while size < 2 * n:
        size *= 2
    table = push_state(c, size)
    if table < 0:
        return True  # out of memory: c.code says so
    for i in range(size):
        c.st[table + i] = -1
    for i in range(a, b):
        if text:
            data = k.b2.p + offs[i]
            la = offs[i + 1] - offs[i]
        else:
            data = k.b1.p + i * w
            la = w
        h = key_hash(data, la)
        slot = <int64_t> (h & <uint64_t> (size - 1))
        while c.st[table + slot] >= 0:
            j = c.st[table + slot]
            if text:
                lb = offs[j + 1] - offs[j]
                if la == lb and memcmp(data, k.b2.p + offs[j], <size_t> la) == 0:
                    return True
            elif memcmp(data, k.b1.p + j * w, <size_t> w) == 0:
                return True
            slot = (slot + 1) & (size - 1)
        c.st[table + slot] = i
    c.nst = table
    return False


cdef int close_list(pctx *c, const dfield *f) noexcept nogil:
    """End the list of a repeated or map field: its items are those its item slot got since the
    list's previous end."""
    cdef pc_slot *s = &c.S[f.lslot]
    cdef int64_t items = c.S[f.slot].length
    cdef int64_t before = (<const int32_t *> s.b1.p)[s.length]
    if f.zero:
        if items - before > c.budget:
            return -1
        c.budget -= items - before
    if f.key >= 0 and items - before > 1 and keys_repeat(c, &c.S[f.key], before, items):
        return -1
    if items > 2147483647 or grow(c, &s.b1, (s.length + 2) * 4):
        return -1
    (<int32_t *> s.b1.p)[s.length + 1] = <int32_t> items
    return commit(c, s)


cdef int d_end(pctx *c, const dfield *fields, int32_t k, int64_t groups) noexcept nogil:
    """Field ``k`` at the end of its message, when it is a list, a oneof's case or absent."""
    cdef const dfield *f = &fields[k]
    cdef const dfield *m
    cdef int64_t member
    if f.lslot >= 0:
        return close_list(c, f)
    if f.how == D_CASE:
        member = c.st[groups + f.group]
        if member < 0:
            if pc_null_fill(c.S, f.nslot):
                c.code = NOMEM
                return -1
            return 0
        m = &fields[member]
        return add_text(c, &c.S[f.slot], c.blob + m.name_off, m.name_len)
    if f.miss == M_ZERO:
        return add_zero(c, &c.S[f.slot])
    if f.miss == M_NULL:
        if pc_null_fill(c.S, f.nslot):
            c.code = NOMEM
            return -1
        return 0
    if f.miss == M_AVRO:
        return avro_bytes(c, f.aop, c.blob + f.miss_off, f.miss_len)
    return -1  # M_FAIL: a required field is absent


cdef int d_message(pctx *c, const dnode *dn, int64_t pos, int64_t end) noexcept nogil:
    """The message in ``s[pos:end]`` appended to the builders of its bound form ``dn``; 0, or -1 to
    give the row up (c.code is NOMEM when memory ran out).

    A one-byte tag (numbers up to 15) is looked up in the message's table of the tags its fields
    usually come with, which spares the lookup by number and the wire type check. A longer one is
    first guessed: serializers write fields in number order and the items of a repeated field one
    after the other, so it is the tag before it again, or the usual tag of the next number."""
    cdef const pnode *nd = &c.nodes[dn.pnode]
    cdef const dfield *fields = c.dfields + dn.first
    cdef const dfield *f
    cdef const uint8_t *p = c.s
    cdef uint64_t tag, last_tag = <uint64_t> -1, seen = 0, todo, bit, raw
    cdef uint32_t number, wire
    cdef int32_t fi, nf = dn.nfields, ng = dn.ngroups, k, guess = dn.head, last = 0
    cdef int64_t base = c.nst, tag_at, words = (nf + 63) >> 6 if nf > 64 else 0, i, at, n
    c.depth += 1
    if c.depth > defs.PROTO_MAX_DEPTH:
        return -1
    if ng or words:  # per oneof the member met, then (over 64 fields) one bit per field met
        if push_state(c, ng + words) < 0:
            return -1
        for i in range(ng):
            c.st[base + i] = -1
        for i in range(words):
            c.st[base + ng + i] = 0
    while pos < end:
        tag_at = pos
        if p[pos] < 0x80:
            tag = p[pos]
            pos += 1
        else:
            pos = read_tag(c, pos, end, &tag)
            if pos < 0:
                return -1
        if tag < 128:
            fi = c.tag1[dn.tags + tag]
        elif tag == last_tag:  # the next item of a repeated field
            fi = last
        elif guess < nf and <uint64_t> fields[guess].tag == tag:
            fi = guess
        else:
            fi = -1
        if fi < 0:
            number = <uint32_t> (tag >> 3)
            wire = <uint32_t> (tag & 7)
            if number == 0 or wire == 4 or wire >= 6:
                return -1
            fi = find_field(c, nd, number)
            if fi < 0:
                pos = skip(c, wire, number, pos, end, tag_at)
                if pos < 0:
                    return -1
                continue
            f = &fields[fi]
            if <int32_t> wire != f.wire and not (wire == 2 and f.packable):
                return -1
        f = &fields[fi]
        wire = <uint32_t> (tag & 7)
        guess = f.next
        if f.lslot >= 0:
            last_tag = tag
            last = fi
            pos = d_items(c, f, wire, pos, end)
        else:
            bit = (<uint64_t> 1) << (fi & 63)
            if words:
                at = base + ng + (fi >> 6)
                if <uint64_t> c.st[at] & bit:
                    return -1
                c.st[at] = <int64_t> (<uint64_t> c.st[at] | bit)
            else:
                if seen & bit:
                    return -1
                seen |= bit
            if f.group >= 0:
                if c.st[base + f.group] >= 0:
                    return -1
                c.st[base + f.group] = fi
            # d_value, its two common cases written out here (the compiler keeps d_value a call)
            if wire == 0:
                if pos < end and p[pos] < 0x80:
                    raw = p[pos]
                    pos += 1
                else:
                    pos = read_varint(c, pos, end, &raw)
                    if pos < 0:
                        return -1
                if add_varint_kind(c, &c.S[f.slot], f.kind, raw):
                    return -1
                continue
            if wire == 2 and (f.how == D_STR or f.how == D_BYTES) and pos < end and p[pos] <= 16:
                n = p[pos]
                pos += 1
                if n > end - pos:
                    return -1
                if f.how == D_STR and not short_ascii(p + pos, n) and check_utf8(c, pos, pos + n):
                    return -1
                if add_text(c, &c.S[f.slot], p + pos, n):
                    return -1
                pos += n
                continue
            pos = d_other(c, f, wire, pos, end)
        if pos < 0:
            return -1
    if words:
        for k in range(nf):
            f = &fields[k]
            if (f.lslot >= 0 or f.how == D_CASE or not ((<uint64_t> c.st[base + ng + (k >> 6)] >> (k & 63)) & 1)) \
                    and d_end(c, fields, k, base):
                return -1
    else:
        # lists and cases never set their bit: every field left is one to finish
        todo = ~seen & (<uint64_t> 0xFFFFFFFFFFFFFFFF if nf == 64 else ((<uint64_t> 1) << nf) - 1)
        while todo:
            k = __builtin_ctzll(todo)
            todo &= todo - 1
            if d_end(c, fields, k, base):
                return -1
    if dn.slot >= 0 and commit(c, &c.S[dn.slot]):
        return -1
    c.nst = base
    c.depth -= 1
    return 0


# -- the Python side ---------------------------------------------------------------------------------------

_VARINT_KINDS = {defs.P_INT32, defs.P_INT64, defs.P_UINT32, defs.P_UINT64, defs.P_SINT32, defs.P_SINT64, defs.P_BOOL}
_WIDTHS = {defs.P_FIXED32: 4, defs.P_SFIXED32: 4, defs.P_FLOAT: 4, defs.P_FIXED64: 8, defs.P_SFIXED64: 8,
           defs.P_DOUBLE: 8}


_I32_KINDS = frozenset((defs.P_INT32, defs.P_UINT32, defs.P_SINT32, defs.P_FIXED32, defs.P_SFIXED32))
_I64_KINDS = frozenset((defs.P_INT64, defs.P_UINT64, defs.P_SINT64, defs.P_FIXED64, defs.P_SFIXED64))
# (node op, Avro op code) -> how decode() appends the value
_VALUE_HOW = {
    **{(kind, defs.O_INT): D_I32 for kind in _I32_KINDS},
    **{(kind, defs.O_LONG): D_I64 for kind in _I64_KINDS},
    (defs.P_FLOAT, defs.O_FLOAT): D_F32, (defs.P_DOUBLE, defs.O_DOUBLE): D_F64, (defs.P_BOOL, defs.O_BOOL): D_BOOL,
    (defs.P_STRING, defs.O_STRING): D_STR, (defs.P_BYTES, defs.O_BYTES): D_BYTES, (defs.P_RAW, defs.O_BYTES): D_RAW,
    (defs.P_TIMESTAMP, defs.O_LONG): D_TIME, (defs.P_DURATION, defs.O_LONG): D_TIME,
}
# the slot kind each way of appending writes
_HOW_KIND = {D_I32: defs.K_I32, D_I64: defs.K_I64, D_F32: defs.K_F32, D_F64: defs.K_F64, D_BOOL: defs.K_BOOL,
             D_STR: defs.K_BIN, D_BYTES: defs.K_BIN, D_RAW: defs.K_BIN, D_TIME: defs.K_I64, D_CASE: defs.K_BIN}
# the Avro bytes of a zero, by op: the defaults M_ZERO appends without the interpreter
_ZERO_BYTES = {defs.O_INT: b"\x00", defs.O_LONG: b"\x00", defs.O_BOOL: b"\x00", defs.O_STRING: b"\x00",
               defs.O_BYTES: b"\x00", defs.O_FLOAT: bytes(4), defs.O_DOUBLE: bytes(8)}


class _Unbound(Exception):
    """The Avro program is not the one decode() can append to directly (every row then takes the
    general path)."""


def _bind(nodes, prepared, ops, kids, stash):
    """Each message of the program bound to its op in the Avro program ``(ops, kids)`` (from the
    root, op 0), each field to the op and slot of its value: ``(dnode rows, dfield rows, slot kinds)``
    with the slot kinds decode() checks against the layout. Raises _Unbound for an Avro program other
    than the shadow schema's read as itself."""
    dnodes = []
    dfields = []
    tags = []  # the one-byte tag tables, 128 entries per bound message
    kinds = []  # (slot, kinds it may have)
    done = {}
    busy = set()

    def op_at(i):
        if type(i) is not int or not 0 <= i < len(ops):
            raise _Unbound
        return ops[i]

    def kid(a, k):
        if not 0 <= k < a[3] or not 0 <= a[2] + k < len(kids):
            raise _Unbound
        return kids[a[2] + k]

    def slot_of(a, *allowed):
        if type(a[1]) is not int or a[1] < 0:
            raise _Unbound
        kinds.append((a[1], allowed))
        return a[1]

    def branches(a):
        """The null and value ops of a union [null, T] folded into T's slot."""
        if a[0] != defs.O_UNION or a[1] != -1 or a[3] != 2 or a[4] != 2:
            raise _Unbound
        null_op, value_op = op_at(kid(a, 0)), kid(a, 1)
        if null_op[0] != defs.O_NULLFILL:
            raise _Unbound
        return slot_of(null_op), value_op  # any kind: pc_null_fill fills every kind

    def value(ni, aop):
        """(how, child, slot) of a value of node ``ni`` appended by op ``aop``."""
        a = op_at(aop)
        op = nodes[ni][0]
        if op == defs.P_MESSAGE:
            child = message(ni, aop)
            return D_MSG, child, dnodes[child][7]
        how = _VALUE_HOW.get((op, a[0]))
        if how is None:
            raise _Unbound
        return how, (nodes[ni][1] if op == defs.P_RAW else -1), slot_of(a, _HOW_KIND[how])

    def message(ni, aop):
        found = done.get((ni, aop))
        if found is not None:
            return found
        if (ni, aop) in busy:
            raise _Unbound
        busy.add((ni, aop))
        a = op_at(aop)
        p = prepared[ni]
        nf = len(p.fields)
        if a[0] == defs.O_RECORD:
            if a[3] != nf:
                raise _Unbound
            record = slot_of(a, defs.K_STRUCT)
            field_ops = [kid(a, k) for k in range(nf)]
        elif nf == 1 and p.fields[0].shape == defs.PF_IMPLICIT:  # a wrapper: the message is its field's value
            record = -1
            field_ops = [aop]
        else:
            raise _Unbound
        rows = [field(ni, k, f, field_ops[k]) for k, f in enumerate(p.fields)]
        by_number = sorted((f.number, k) for k, f in enumerate(p.fields) if f.shape != defs.PF_CASE)
        for (_, k), (_, after) in zip(by_number, by_number[1:] + [(0, nf)]):
            rows[k][1] = after
        head = by_number[0][1] if by_number else nf
        table = [-1] * 128
        for k, f in enumerate(p.fields):
            if f.shape == defs.PF_CASE or f.number > 15 or k > 32767:
                continue
            table[f.number << 3 | f.wire] = k
            if f.packable:  # a list of numbers comes packed or not
                table[f.number << 3 | 2] = k
        index = len(dnodes)
        dnodes.append([ni, len(dfields), nf, p.ngroups, record, head, len(tags),
                       record if record >= 0 else rows[0][10]])
        tags.extend(table)
        dfields.extend(rows)
        done[(ni, aop)] = index
        busy.discard((ni, aop))
        return index

    def field(ni, k, f, aop):
        # [tag, next, number, wire, kind, group, packable, width, how, miss, slot, nslot, lslot, child, aop, zero,
        #  key, miss_off, miss_len, name_off, name_len]
        a = op_at(aop)
        _, shape, child_ni, missing, _, name = nodes[ni][1][k]
        nslot = lslot = child = key = -1
        zero = 0
        miss = M_AVRO
        if shape == defs.PF_CASE:
            nslot, value_op = branches(a)
            b = op_at(value_op)
            if b[0] != defs.O_STRING:
                raise _Unbound
            how, slot = D_CASE, slot_of(b, defs.K_BIN)
        elif shape == defs.PF_REPEATED or shape == defs.PF_MAP:
            if a[0] != defs.O_ARRAY or a[3] != 1:
                raise _Unbound
            lslot = slot_of(a, defs.K_LIST, defs.K_MAP)
            how, child, slot = value(child_ni, kid(a, 0))
            zero = int(a[4] == 0)
            miss = M_LIST
            if shape == defs.PF_MAP:
                if how != D_MSG:
                    raise _Unbound
                entry = dnodes[child]
                if entry[4] < 0 or entry[2] != 2:
                    raise _Unbound
                key = dfields[entry[1]][10]
                kinds.append((key, (defs.K_BIN, defs.K_I32, defs.K_I64, defs.K_BOOL)))
        elif shape == defs.PF_OPTIONAL or shape == defs.PF_ONEOF:
            nslot, value_op = branches(a)
            how, child, slot = value(child_ni, value_op)
            if missing == b"\x00":
                miss = M_NULL
        else:
            how, child, slot = value(child_ni, aop)
            if shape == defs.PF_REQUIRED:
                miss = M_FAIL
            elif how != D_MSG and missing == _ZERO_BYTES.get(a[0]):
                miss = M_ZERO
        miss_off, miss_len = stash(missing) if missing is not None else (0, 0)
        name_off, name_len = stash(name.encode("utf-8"))
        usual = -1 if shape == defs.PF_CASE else f.number << 3 | (2 if f.packable else f.wire)
        return [usual, -1, f.number, f.wire, f.kind, f.group, int(f.packable), _WIDTHS.get(f.kind, 0), how, miss,
                slot, nslot, lslot, child, aop, zero, key, miss_off, miss_len, name_off, name_len]

    root = message(0, 0)
    if root != len(dnodes) - 1 or dnodes[root][4] != 0:
        raise _Unbound  # decode() counts rows in the root record's slot 0
    # the root first: decode() starts at dnode 0
    order = [root] + [i for i in range(len(dnodes)) if i != root]
    renumber = {old: new for new, old in enumerate(order)}
    dnodes = [dnodes[i] for i in order]
    for row in dfields:
        if row[8] == D_MSG:
            row[13] = renumber[row[13]]
    return dnodes, dfields, tags, kinds


cdef class Program:
    """A transcode program (nodes as in ``protobuf_py``), checked by the pure twin's checker and
    flattened into C structs once.

    ``avro``: the Avro program ``(ops, kids)`` of the program's shadow schema read as itself (see
    ``formats/avro/plan.py``), which :func:`decode` needs: each message is bound to its op there,
    each field to the op and slot of its value.
    """

    cdef pnode *nodes
    cdef pfield *fields
    cdef int32_t *lut
    cdef dnode *dnodes
    cdef dfield *dfields
    cdef int16_t *tag1
    cdef bytes blob
    cdef readonly object tree
    cdef readonly bint streams  # every message declares its fields in number order (the streaming path)
    cdef readonly bint bound    # made with its Avro program (decode() takes it)
    cdef readonly bint direct   # bound, and decode() appends to the builders while it reads
    cdef object slot_kinds      # (slot, kinds it may have in the layout) of every slot the bound fields write

    def __init__(self, nodes, avro=None):
        prepared = _prepare(nodes)  # raises ValueError for a malformed program, as the pure twin does
        if avro is not None and not (isinstance(avro, tuple) and len(avro) == 2):
            raise ValueError("avro is the Avro program (ops, kids)")
        if avro is not None and not avro[0]:
            raise ValueError("the Avro program has no ops")
        index_of = {id(p): i for i, p in enumerate(prepared) if not isinstance(p, int)}
        node_rows = []   # [op, nfields, first, ngroups, check, lut_off, lut_len, sorted_off, nsorted]
        field_rows = []  # pfield values in declaration order
        lut = []
        blob = bytearray()

        def stash(data):
            at = len(blob)
            blob.extend(data)
            return at, len(data)

        for i, p in enumerate(prepared):
            if isinstance(p, int):
                node_rows.append([p, 0, 0, 0, -1, 0, 0, 0, 0])
                continue
            if p.op == defs.P_RAW:
                check = nodes[i][1]
                node_rows.append([defs.P_RAW, 0, 0, 0, check, 0, 0, 0, 0])
                continue
            numbers = {f.number: k for k, f in enumerate(p.fields) if f.shape != defs.PF_CASE}
            dense = [n for n in numbers if n < LUT_LIMIT]
            lut_len = max(dense) + 1 if dense else 0
            lut_off = len(lut)
            table = [0] * lut_len
            for n in dense:
                table[n] = numbers[n] + 1
            lut.extend(table)
            sparse = sorted(n for n in numbers if n >= LUT_LIMIT)
            sorted_off = len(lut)
            for n in sparse:
                lut.extend((n, numbers[n]))
            node_rows.append([p.op, len(p.fields), len(field_rows), p.ngroups, -1, lut_off, lut_len, sorted_off,
                              len(sparse)])
            for f in p.fields:
                child = -1 if isinstance(f.child, int) or f.child is None else index_of[id(f.child)]
                miss_off, miss_len = stash(f.missing) if f.missing is not None else (0, 0)
                name_off, name_len = stash(f.name)
                key_kind = f.child.fields[0].kind if f.shape == defs.PF_MAP else 0
                field_rows.append([f.number, f.shape, child, f.kind, f.wire, f.group, int(f.packable),
                                   int(f.collects), int(f.kind == defs.P_STRING), int(f.kind <= defs.P_BYTES),
                                   _WIDTHS.get(f.kind, 0), key_kind, miss_off, miss_len, name_off, name_len])
        dnode_rows = []
        dfield_rows = []
        tag_rows = []
        self.slot_kinds = ()
        self.bound = avro is not None
        self.direct = False
        if avro is not None:
            try:
                dnode_rows, dfield_rows, tag_rows, self.slot_kinds = _bind(nodes, prepared, avro[0], avro[1], stash)
                self.direct = True
            except (_Unbound, LookupError, TypeError, ValueError):  # not the shadow's own Avro program
                dnode_rows, dfield_rows, tag_rows = [], [], []
        self.tree = nodes
        self.streams = all(
            [f.number for f in p.fields if f.shape != defs.PF_CASE]
            == sorted(f.number for f in p.fields if f.shape != defs.PF_CASE)
            for p in prepared
            if not isinstance(p, int) and p.op != defs.P_RAW
        )
        self.blob = bytes(blob)
        self.nodes = <pnode *> malloc(len(node_rows) * sizeof(pnode))
        self.fields = <pfield *> malloc(max(len(field_rows), 1) * sizeof(pfield))
        self.lut = <int32_t *> malloc(max(len(lut), 1) * sizeof(int32_t))
        if self.nodes == NULL or self.fields == NULL or self.lut == NULL:
            raise MemoryError()
        for i, row in enumerate(node_rows):
            (self.nodes[i].op, self.nodes[i].nfields, self.nodes[i].first, self.nodes[i].ngroups,
             self.nodes[i].check, self.nodes[i].lut_off, self.nodes[i].lut_len, self.nodes[i].sorted_off,
             self.nodes[i].nsorted) = row
        for i, row in enumerate(field_rows):
            (self.fields[i].number, self.fields[i].shape, self.fields[i].child, self.fields[i].kind,
             self.fields[i].wire, self.fields[i].group, self.fields[i].packable, self.fields[i].collects,
             self.fields[i].utf8, self.fields[i].scalar, self.fields[i].width, self.fields[i].key_kind,
             self.fields[i].miss_off, self.fields[i].miss_len, self.fields[i].name_off,
             self.fields[i].name_len) = row
        for i, v in enumerate(lut):
            self.lut[i] = v
        self.dnodes = <dnode *> malloc(max(len(dnode_rows), 1) * sizeof(dnode))
        self.dfields = <dfield *> malloc(max(len(dfield_rows), 1) * sizeof(dfield))
        self.tag1 = <int16_t *> malloc(max(len(tag_rows), 1) * sizeof(int16_t))
        if self.dnodes == NULL or self.dfields == NULL or self.tag1 == NULL:
            raise MemoryError()
        for i, row in enumerate(dnode_rows):
            (self.dnodes[i].pnode, self.dnodes[i].first, self.dnodes[i].nfields, self.dnodes[i].ngroups,
             self.dnodes[i].slot, self.dnodes[i].head, self.dnodes[i].tags) = row[:7]
        for i, v in enumerate(tag_rows):
            self.tag1[i] = v
        for i, row in enumerate(dfield_rows):
            (self.dfields[i].tag, self.dfields[i].next,
             self.dfields[i].number, self.dfields[i].wire, self.dfields[i].kind, self.dfields[i].group,
             self.dfields[i].packable, self.dfields[i].width, self.dfields[i].how, self.dfields[i].miss,
             self.dfields[i].slot, self.dfields[i].nslot, self.dfields[i].lslot, self.dfields[i].child,
             self.dfields[i].aop, self.dfields[i].zero, self.dfields[i].key, self.dfields[i].miss_off,
             self.dfields[i].miss_len, self.dfields[i].name_off, self.dfields[i].name_len) = row

    def __dealloc__(self):
        free(self.nodes)
        free(self.fields)
        free(self.lut)
        free(self.dnodes)
        free(self.dfields)
        free(self.tag1)


cdef class _Owned:
    """A malloc'd byte buffer exposed through the buffer protocol, freed with its last view."""

    cdef uint8_t *p
    cdef Py_ssize_t n

    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, self.p, self.n, 1, flags)

    def __releasebuffer__(self, Py_buffer *view):
        pass

    def __dealloc__(self):
        free(self.p)


cdef int transcode_loop(pctx *c, const uint8_t *buf, const int64_t *starts, const int64_t *ends,
                        const uint8_t *present, int64_t n, bint keep_going, bint streams, int64_t *offsets,
                        uint8_t *valid, pc_error **errs, int64_t *nerrs, int64_t *cap_errs) noexcept nogil:
    """Every row; twin: protobuf_py.transcode. 0, or -1 when memory ran out."""
    cdef int64_t i, k, row_start, tried = 0, given_up = 0
    cdef pc_error *grown
    offsets[0] = 0
    for i in range(n):
        row_start = c.out.len
        if present != NULL and not present[i]:
            valid[i] = 0
            offsets[i + 1] = row_start
            continue
        c.s = buf + starts[i]
        if streams:
            c.depth = 0
            c.checking = 0
            c.nst = 0
            tried += 1
            if stream_message(c, 0, 0, ends[i] - starts[i]) == 0:
                valid[i] = 1
                offsets[i + 1] = c.out.len
                continue
            c.out.len = row_start
            given_up += 1
            if tried >= 64 and given_up * 4 > tried:  # these payloads are not plain: stop trying
                streams = False
        c.depth = 0
        c.checking = 0
        c.nst = 0
        c.nocc = 0
        c.code = 0
        if push_occ(c, 0, ends[i] - starts[i], 2) == 0 and message(c, 0, 0, True) == 0:
            valid[i] = 1
            offsets[i + 1] = c.out.len
            continue
        if c.code == NOMEM:
            return -1
        if nerrs[0] == cap_errs[0]:
            grown = <pc_error *> realloc(errs[0], <size_t> (cap_errs[0] * 2 + 16) * sizeof(pc_error))
            if grown == NULL:
                return -1
            errs[0] = grown
            cap_errs[0] = cap_errs[0] * 2 + 16
        errs[0][nerrs[0]].code = c.code
        errs[0][nerrs[0]].index = i
        errs[0][nerrs[0]].offset = c.offset
        errs[0][nerrs[0]].detail = c.detail
        nerrs[0] += 1
        c.out.len = row_start
        valid[i] = 0
        offsets[i + 1] = row_start
        if not keep_going:
            for k in range(i + 1, n):
                valid[k] = 0
                offsets[k + 1] = row_start
            return 0
    return 0


def transcode(program, data, starts, ends, validity, keep_going):
    """Transcode every Protobuf payload to its Avro binary form; same contract as ``protobuf_py.transcode``."""
    cdef Program prog = program
    cdef const uint8_t[::1] buf = memoryview(data).cast("B") if len(memoryview(data)) else b"\0"
    cdef const int64_t[::1] first = np.ascontiguousarray(starts, dtype=np.int64)
    cdef const int64_t[::1] last = np.ascontiguousarray(ends, dtype=np.int64)
    cdef int64_t n = first.shape[0], i, nerrs = 0, cap_errs = 0
    cdef int64_t size = len(memoryview(data).cast("B")) if len(memoryview(data)) else 0
    cdef const uint8_t[::1] present_view
    cdef const uint8_t *present = NULL
    cdef bint go_on = bool(keep_going)
    if last.shape[0] != n:
        raise ValueError("starts and ends differ in length")
    if validity is not None and n > 0:
        present_view = np.ascontiguousarray(validity, dtype=bool).view(np.uint8)
        if present_view.shape[0] < n:
            raise ValueError("validity is shorter than the rows")
        present = &present_view[0]
    for i in range(n):  # the bounds of null rows are never read
        if (present == NULL or present[i]) and (first[i] < 0 or last[i] < first[i] or last[i] > size):
            raise ValueError(f"row {i} [{first[i]}, {last[i]}) is outside the data ({size} bytes)")
    offsets_arr = np.empty(n + 1, dtype=np.int64)
    valid_arr = np.empty(max(n, 1), dtype=bool)
    cdef int64_t[::1] offsets = offsets_arr
    cdef uint8_t[::1] valid = valid_arr.view(np.uint8)
    cdef pctx c
    cdef pc_error *errs = NULL
    cdef int rc = 0
    memset(&c, 0, sizeof(pctx))
    c.nodes = prog.nodes
    c.fields = prog.fields
    c.lut = prog.lut
    c.blob = <const uint8_t *> (<bytes> prog.blob)
    c.out.cap = size + 16 * n + 64
    c.out.p = <uint8_t *> malloc(<size_t> c.out.cap)
    if c.out.p == NULL:
        raise MemoryError()
    try:
        offsets[0] = 0
        if n > 0:
            with nogil:
                rc = transcode_loop(&c, &buf[0], &first[0], &last[0], present, n, go_on, prog.streams,
                                    &offsets[0], &valid[0], &errs, &nerrs, &cap_errs)
        if rc:
            raise MemoryError("out of memory transcoding Protobuf")
        errors = [(errs[i].code, errs[i].index, errs[i].offset, errs[i].detail) for i in range(nerrs)]
        owner = _Owned()
        shrunk = <uint8_t *> realloc(c.out.p, <size_t> (c.out.len if c.out.len else 1))
        if shrunk != NULL:
            c.out.p = shrunk
        owner.p = c.out.p
        owner.n = c.out.len
        c.out.p = NULL
        out = np.frombuffer(owner, dtype=np.uint8)
    finally:
        free(c.out.p)
        free(c.tmp.p)
        free(c.st)
        free(c.occ)
        free(errs)
    valid_arr = valid_arr[:n]
    return errors, out, offsets_arr, (None if valid_arr.all() else valid_arr)


cdef int decode_loop(pctx *c, bint direct, const uint8_t *buf, int64_t nbytes, const int64_t *starts,
                     const int64_t *ends, int64_t skip, const uint8_t *present, int64_t n, int64_t row0,
                     bint keep_going, pc_error **errs, int64_t *nerrs, int64_t *cap_errs) noexcept nogil:
    """Every row of one segment into the builders; twin: protobuf_py.decode. Row i is
    ``buf[starts[i]:ends[i]]``, or without ``starts`` ``buf[ends[i] + skip:ends[i + 1]]`` (offsets
    and a prefix size). 0: done, 1: stopped at a bad row, 2: the builders refused the Avro bytes of
    a row (c.bug_*), 3: row c.bug_row lies outside ``buf`` (a caller's bug), -1: out of memory. A
    message over the builders' limit of items of no size is a bad row (PROTO_TOO_MANY_EMPTY_ITEMS)."""
    cdef int64_t i, r, size, start, end, tried = 0, given_up = 0
    cdef const uint8_t *q
    cdef pc_error *grown
    for i in range(n):
        if present != NULL and not present[i]:
            if pc_null_fill(c.S, 0):
                return -1
            continue
        if starts != NULL:
            start = starts[i]
            end = ends[i]
        else:
            start = ends[i] + skip
            end = ends[i + 1]
        if start < 0 or end < start or end > nbytes:  # the bounds of null rows are never read
            c.bug_row = i
            return 3
        c.s = buf + start
        size = end - start
        if direct:
            r = c.S[0].length
            c.depth = 0
            c.checking = 0
            c.nst = 0
            c.code = 0
            c.budget = defs.ZERO_SIZE_ITEM_LIMIT
            tried += 1
            if d_message(c, c.dnodes, 0, size) == 0:
                continue
            if c.code == NOMEM:
                return -1
            pc_avro_truncate(c.S, 0, r)  # what the row appended before it was given up
            given_up += 1
            if tried >= 64 and given_up * 4 > tried:  # these payloads are not plain: stop trying
                direct = False
        c.depth = 0
        c.checking = 0
        c.nst = 0
        c.nocc = 0
        c.code = 0
        c.out.len = 0
        if push_occ(c, 0, size, 2) == 0 and message(c, 0, 0, True) == 0:
            c.actx.msg = c.out.p
            c.actx.budget = defs.ZERO_SIZE_ITEM_LIMIT
            r = c.S[0].length
            q = pc_arun(&c.actx, c.pl, 0, c.out.p, c.out.p + c.out.len)
            if q == c.out.p + c.out.len:
                continue
            if q == NULL and c.actx.code == -1:
                return -1
            if q != NULL or c.actx.code != defs.AVRO_TOO_MANY_EMPTY_ITEMS:
                c.bug_code = c.actx.code if q == NULL else defs.AVRO_TRAILING_BYTES
                c.bug_detail = c.actx.detail if q == NULL else (c.out.p + c.out.len) - q
                c.bug_row = row0 + i
                return 2
            # more items of no size than the builders take in one message: bad data, not a bug (the
            # whole message was transcoded first, so no error further on in it goes unreported)
            pc_avro_truncate(c.S, 0, r)  # what the row appended before the builders gave up
            c.code = defs.PROTO_TOO_MANY_EMPTY_ITEMS
            c.offset = 0  # where the builders gave up is not known in the payload
            c.detail = defs.ZERO_SIZE_ITEM_LIMIT
        elif c.code == NOMEM:
            return -1
        if nerrs[0] == cap_errs[0]:
            grown = <pc_error *> realloc(errs[0], <size_t> (cap_errs[0] * 2 + 16) * sizeof(pc_error))
            if grown == NULL:
                return -1
            errs[0] = grown
            cap_errs[0] = cap_errs[0] * 2 + 16
        errs[0][nerrs[0]].code = c.code
        errs[0][nerrs[0]].index = row0 + i
        errs[0][nerrs[0]].offset = c.offset
        errs[0][nerrs[0]].detail = c.detail
        nerrs[0] += 1
        if not keep_going:
            return 1
        if pc_null_fill(c.S, 0):
            return -1
    return 0


def decode(program, layout, avro_program, segments, keep_going, hints=None):
    """Read every Protobuf payload of ``segments`` into the Avro column builders of ``layout``; same
    contract as ``protobuf_py.decode``."""
    cdef Program prog = program
    cdef AvroLayout lay = layout
    cdef AvroProgram aprog = avro_program
    cdef const uint8_t[::1] buf
    cdef const int64_t[::1] first
    cdef const int64_t[::1] last
    cdef const uint8_t[::1] present_view
    cdef const uint8_t *present
    cdef const int64_t *first_p
    cdef int64_t n, i, size, skip, total = 0, row0 = 0, nerrs = 0, cap_errs = 0
    cdef bint go_on = bool(keep_going)
    cdef int rc = 0
    cdef pctx c
    cdef pc_error *errs = NULL
    cdef pc_slot *S = NULL
    if not prog.bound:
        raise ValueError("decode needs a Program made with its Avro program (avro=)")
    for slot, kinds in prog.slot_kinds:
        if slot >= lay.nslots or (kinds and lay.tmpl[slot].kind not in kinds):
            raise ValueError("the Avro program of this Program does not fit the layout")
    memset(&c, 0, sizeof(pctx))
    c.nodes = prog.nodes
    c.fields = prog.fields
    c.lut = prog.lut
    c.blob = <const uint8_t *> (<bytes> prog.blob)
    c.dnodes = prog.dnodes
    c.dfields = prog.dfields
    c.tag1 = prog.tag1
    c.pl = &aprog.plan
    bug = None
    try:
        S = _new_slots(lay)
        c.S = S
        c.actx.slots = S
        prepared, total = prepare(segments, False)  # the C loop checks each row's bounds
        _reserve_all(S, lay.nslots, total if total > 16 else 16, hints)
        c.out.cap = 256
        c.out.p = <uint8_t *> malloc(<size_t> c.out.cap)
        if c.out.p == NULL:
            raise MemoryError()
        for view, st, en, skip, rows, size, valid in prepared:
            n = rows
            if n == 0:
                continue
            buf = view
            last = en
            first_p = NULL
            if st is not None:
                first = st
                first_p = &first[0]
            present = NULL
            if valid is not None:
                present_view = valid
                present = &present_view[0]
            with nogil:
                rc = decode_loop(&c, prog.direct, &buf[0], size, first_p, &last[0], skip, present, n, row0,
                                 go_on, &errs, &nerrs, &cap_errs)
            if rc == -1:
                raise MemoryError("out of memory decoding Protobuf")
            if rc == 3:
                i = c.bug_row
                lo, hi = (int(st[i]), int(en[i])) if st is not None else (int(en[i]) + skip, int(en[i + 1]))
                raise ValueError(f"row {i} [{lo}, {hi}) is outside the data ({size} bytes)")
            if rc == 2:
                bug = (c.bug_code, c.bug_row, 0, c.bug_detail)
                break
            if rc == 1:
                break
            row0 += n
        errors = [(errs[i].code, errs[i].index, errs[i].offset, errs[i].detail) for i in range(nerrs)]
        outputs = _take_outputs(S, lay.nslots)
    finally:
        if S != NULL:
            _free_slots(S, lay.nslots)
        free(c.out.p)
        free(c.tmp.p)
        free(c.st)
        free(c.occ)
        free(errs)
    return errors, outputs, bug
