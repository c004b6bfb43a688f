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

Bounds: every read of a payload byte is preceded by a check against the end of the message it
belongs to (``end``, never past the payload's length), and every write by a ``reserve`` of the output
buffer; stack and pool entries are addressed by index below their counts. That is why bounds checking
is off.
"""

from libc.stdint cimport INT64_MAX, INT64_MIN, UINT32_MAX, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset, memcmp
from cpython.buffer cimport PyBuffer_FillInfo

import numpy as np

from . cimport defs
from .defs cimport pc_error
from .protobuf_py import _prepare

__all__ = ["Program", "transcode"]

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
    int32_t code          # error of the current row (-1: out of memory)
    int64_t offset, detail
    uint32_t opened[128]  # numbers of the groups open while skipping one (at most PROTO_MAX_DEPTH)

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
    cdef int64_t *st = c.st + base  # scan grows the occurrence pool, never the stack: st stays put
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
    return put_nanos(c, <int64_t> seconds, <int32_t> <uint32_t> nanos, at)


cdef int put_nanos(pctx *c, int64_t seconds, int64_t nanos, int64_t at) noexcept nogil:
    """``seconds * 10**9 + nanos`` as an Avro long, computed without overflow, or PROTO_VALUE_RANGE."""
    cdef int64_t product, extra
    if seconds > SECONDS_CLAMP + 4 or seconds < -SECONDS_CLAMP - 4:
        return fail(c, defs.PROTO_VALUE_RANGE, at, 0)
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
        return fail(c, defs.PROTO_VALUE_RANGE, at, 0)
    return put_zigzag(c, product + extra)


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


# -- the Python side ---------------------------------------------------------------------------------------

_VARINT_KINDS = {defs.P_INT32, defs.P_INT64, defs.P_UINT32, defs.P_UINT64, defs.P_SINT32, defs.P_SINT64, defs.P_BOOL}
_WIDTHS = {defs.P_FIXED32: 4, defs.P_SFIXED32: 4, defs.P_FLOAT: 4, defs.P_FIXED64: 8, defs.P_SFIXED64: 8,
           defs.P_DOUBLE: 8}


cdef class Program:
    """A transcode program (nodes as in ``protobuf_py``), checked by the pure twin's checker and
    flattened into C structs once."""

    cdef pnode *nodes
    cdef pfield *fields
    cdef int32_t *lut
    cdef bytes blob
    cdef readonly object tree
    cdef readonly bint streams  # every message declares its fields in number order (the streaming path)

    def __init__(self, nodes):
        prepared = _prepare(nodes)  # raises ValueError for a malformed program, as the pure twin does
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

    def __dealloc__(self):
        free(self.nodes)
        free(self.fields)
        free(self.lut)


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
