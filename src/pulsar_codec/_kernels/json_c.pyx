# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled twin of the JSON kernel (pure twin: ``json_py.py``, which documents the program nodes,
the errors and their offsets; both twins give the same bytes, columns and errors).

:class:`Program` flattens a program tree into C structs once, and, given the Avro program of the
tree's shadow schema, binds each node to its op there. :func:`transcode` runs a recursive descent
parser over every payload with the GIL released, writing Avro bytes into one malloc'd buffer that
grows geometrically and is handed to numpy without a copy. :func:`decode` runs the same parser but
appends each value to the Avro decoder's column builders as it reads it (see "straight into the
column builders" below): one pass, no Avro bytes in between.

Strings are scanned eight bytes at a time (a word flags any quote, backslash, control byte or byte
>= 0x80), and so are runs of eight digits; keys in schema order are matched byte for byte against
``"name":``.

Numbers -> double, correctly rounded, in three tiers. A number with at most 15 significant digits
and a decimal exponent that keeps both factors exact (``|e| <= 22``, or up to ``22 + 15 - digits``
upwards) is one IEEE multiplication or division of two exact doubles (Clinger's fast path). Any other
number with at most 19 significant digits goes through the Eisel-Lemire algorithm (csrc/pc_json_float.h,
with a table of 128-bit powers of five computed here from Python integers at import), which decides
the rounding from a truncated 128-bit product in nearly every case. Numbers with more digits, and the
rare products it cannot decide, take the GIL briefly and go through Python's ``float()`` of their
text (David Gay's correctly rounded strtod, the pure twin's reference), so the twins agree bit for bit.

Bounds: every read of a payload byte is preceded by a check against the payload's length ``c.n``
(word loads only where eight bytes remain), every write by a ``reserve`` of the output buffer, and
every append to a column builder by a ``grow`` of it, which is why bounds checking is off.
"""

from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memmove, memcmp, memset
from libc.math cimport isinf
from cpython.buffer cimport PyBuffer_FillInfo
from cpython.bytes cimport PyBytes_FromStringAndSize

import numpy as np

from ._segments import prepare

from . cimport defs
from .defs cimport pc_error
from .avro_c cimport (
    Layout as AvroLayout, Program as AvroProgram, pc_abuf, pc_slot, pc_plan, pc_actx, pc_grow, pc_grow_hook, pc_arun,
    pc_null_fill, pc_avro_truncate, _pool_grow, _new_slots, _free_slots, _reserve_all, _take_outputs,
)

cdef extern from *:
    int __builtin_ctzll(unsigned long long x) nogil

cdef extern from "pc_json_float.h":
    enum:
        PC_POW5_MIN_Q
        PC_POW5_MAX_Q
        PC_POW5_COUNT
    bint pc_eisel_lemire(uint64_t w, int64_t q, const uint64_t *pow5, uint64_t *bits) noexcept nogil

__all__ = ["Program", "decode", "transcode"]

# the builders grow in pyarrow's pool, as the Avro decoder's do
pc_grow_hook = _pool_grow

# field of an object / symbol of an enum: its UTF-8 name in the program's blob
ctypedef struct jfield:
    int64_t name_off, name_len
    int64_t miss_off, miss_len  # miss_len < 0: the property is required
    int32_t child
    int32_t aop   # the field's op in the Avro program (its default is decoded by it)
    int32_t slot  # the column that holds one element per object (cut back when a key repeats)
    int32_t fast  # the name matches the payload's key byte for byte (no byte a JSON string must escape)
    int64_t key_off  # fast names: '"name":' in the blob, the usual bytes of the key and its colon

# a program node; aop .. aux2 bind it to the Avro program whose builders decode() fills
ctypedef struct jnode:
    int32_t op, child, nfields, first, keep_extra
    int64_t size  # J_FIXED_B64 byte count
    int32_t aop     # its op in the Avro program (-1: inside a bridged node)
    int32_t acode   # that op's code
    int32_t slot    # that op's slot
    int32_t direct  # 1: appended to the builders as parsed; 0: bridged (transcoded, then decoded by aop)
    int32_t aux     # J_NULLABLE: op of the null branch; J_MAP: key slot; J_OBJECT: op of the extra column
    int32_t aux2    # J_NULLABLE: slot the null branch null-fills (-1: run its op)
    int32_t leaf    # direct and a scalar, or a nullable one: d_leaf reads it

ctypedef struct jbuf:
    uint8_t *p
    int64_t len, cap

ctypedef struct jctx:
    const uint8_t *s      # the payload
    int64_t n             # its length
    jbuf out              # Avro bytes of all rows
    jbuf tmp              # an object's fields put in order
    jbuf scratch          # a decoded string (keys, enums, formats)
    int64_t *ints         # stack of object field spans and extra-key spans
    int64_t nints, cap_ints
    const jnode *nodes
    const jfield *fields
    const uint8_t *blob
    int32_t depth
    int32_t code          # error of the current row (NOMEM: out of memory, AVRO_BUG: see bug_code)
    int64_t offset, detail
    pc_slot *S            # decode(): the column builders
    const pc_plan *pl     # decode(): the Avro program they are bound to
    pc_actx actx          # decode(): the Avro interpreter's state, for bridged nodes and defaults
    int32_t bug_code      # the Avro error the builders reported
    int64_t bug_detail

# jctx.code when malloc failed (never a status code)
cdef int32_t NOMEM = -1
# jctx.code when the column builders refused what the parser read: a bug, never bad data, but for
# AVRO_TOO_MANY_EMPTY_ITEMS (a message holding too many items of no size), which decode_loop reports
cdef int32_t AVRO_BUG = -2

cdef uint8_t KIND[256]        # JSON kind by first byte, 255 = no value starts with it
cdef uint8_t HEXVAL[256]      # 255 = not a hex digit
cdef int8_t B64VAL[256]       # -1 = not in the base64 alphabet
cdef uint8_t PLAIN[256]       # 1 = a string byte that needs no attention (printable ASCII but " and \)
cdef double POW10[23]
cdef uint64_t POW5_128[2 * PC_POW5_COUNT]  # (high, low) words of each power of five, see below
cdef uint8_t ESCAPED[256]     # what a one-letter escape stands for
cdef int DAYS_IN_MONTH[16]      # by month, 1-12 (16: the index is masked)


cdef void _init_tables():
    cdef int i
    for i in range(256):
        KIND[i] = 255
        HEXVAL[i] = 255
        B64VAL[i] = -1
        PLAIN[i] = 1 if (0x20 <= i < 0x80 and i != 0x22 and i != 0x5C) else 0
    KIND[ord("n")] = 0
    KIND[ord("t")] = 1
    KIND[ord("f")] = 1
    KIND[ord("-")] = 2
    for i in range(10):
        KIND[0x30 + i] = 2
        HEXVAL[0x30 + i] = i
        B64VAL[0x30 + i] = 52 + i
    KIND[ord('"')] = 3
    KIND[ord("[")] = 4
    KIND[ord("{")] = 5
    for i in range(6):
        HEXVAL[0x61 + i] = 10 + i
        HEXVAL[0x41 + i] = 10 + i
    for i in range(26):
        B64VAL[0x41 + i] = i
        B64VAL[0x61 + i] = 26 + i
    B64VAL[ord("+")] = 62
    B64VAL[ord("/")] = 63
    for letter, meaning in zip(list(b'"\\/bfnrt'), list(b'"\\/\b\f\n\r\t')):
        ESCAPED[letter] = meaning
    for i, b in enumerate((0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)):
        DAYS_IN_MONTH[i] = b
    POW10[0] = 1.0
    for i in range(1, 23):
        POW10[i] = POW10[i - 1] * 10.0
    for i, entry in enumerate(_powers_of_five_128()):
        POW5_128[2 * i] = entry >> 64
        POW5_128[2 * i + 1] = entry & 0xFFFFFFFFFFFFFFFF


def _powers_of_five_128():
    """The Eisel-Lemire table, as 128-bit integers, for q = PC_POW5_MIN_Q .. PC_POW5_MAX_Q.

    q >= 0: 5**q scaled by a power of two so that its top bit is bit 127, truncated (exact for
    q <= 55). q < 0: 2**b // 5**-q + 1, an upper approximation of the reciprocal, with b chosen so
    that the value has 128 bits (q >= -27: exactly; below, from a wider quotient, truncated).
    """
    table = []
    for q in range(PC_POW5_MIN_Q, 0):
        power = 5**-q
        z = power.bit_length()  # ceil(log2(5**-q)): a power of five above 1 is no power of two
        if q >= -27:
            entry = (1 << (z + 127)) // power + 1
        else:
            entry = (1 << (2 * z + 128)) // power + 1
            entry >>= max(entry.bit_length() - 128, 0)
        table.append(entry)
    for q in range(0, PC_POW5_MAX_Q + 1):
        power = 5**q
        shift = power.bit_length() - 128
        table.append(power >> shift if shift > 0 else power << -shift)
    assert len(table) == PC_POW5_COUNT and all(e.bit_length() == 128 for e in table)
    return table


_init_tables()


# -- buffers -------------------------------------------------------------------------------------------

cdef inline int reserve(jctx *c, jbuf *b, int64_t extra) noexcept nogil:
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


cdef inline int put_varint(jctx *c, jbuf *b, uint64_t v) noexcept nogil:
    if reserve(c, b, 10):
        return -1
    while v > 0x7F:
        b.p[b.len] = <uint8_t> ((v & 0x7F) | 0x80)
        b.len += 1
        v >>= 7
    b.p[b.len] = <uint8_t> v
    b.len += 1
    return 0


cdef inline int put_long(jctx *c, int64_t v) noexcept nogil:
    return put_varint(c, &c.out, ((<uint64_t> v) << 1) ^ (<uint64_t> (v >> 63)))


cdef inline int put_bytes(jctx *c, jbuf *b, const uint8_t *p, int64_t n) noexcept nogil:
    if reserve(c, b, n):
        return -1
    if n:
        memcpy(b.p + b.len, p, <size_t> n)
    b.len += n
    return 0


cdef inline int varint_len(uint64_t v) noexcept nogil:
    cdef int n = 1
    while v > 0x7F:
        v >>= 7
        n += 1
    return n


cdef inline int64_t push_ints(jctx *c, int64_t count) noexcept nogil:
    """Reserve ``count`` slots on the int stack; their index, or -1."""
    cdef int64_t need = c.nints + count, cap, at
    cdef int64_t *p
    if need > c.cap_ints:
        cap = c.cap_ints * 2 if c.cap_ints * 2 > need else need + 64
        p = <int64_t *> realloc(c.ints, <size_t> cap * sizeof(int64_t))
        if p == NULL:
            c.code = NOMEM
            return -1
        c.ints = p
        c.cap_ints = cap
    at = c.nints
    c.nints = need
    return at


# -- the JSON grammar --------------------------------------------------------------------------------

cdef inline int64_t fail(jctx *c, int32_t code, int64_t offset, int64_t detail) noexcept nogil:
    c.code = code
    c.offset = offset
    c.detail = detail
    return -1


cdef inline int64_t unexpected(jctx *c, int64_t pos) noexcept nogil:
    return fail(c, defs.JSON_UNEXPECTED_BYTE, pos, c.s[pos])


cdef inline int64_t truncated(jctx *c) noexcept nogil:
    return fail(c, defs.JSON_TRUNCATED, c.n, 0)


cdef inline int64_t ws(jctx *c, int64_t pos) noexcept nogil:
    """Skip whitespace; the end of the payload here is a truncated value."""
    cdef uint8_t b
    if pos < c.n and c.s[pos] > 0x20:  # compact JSON: no whitespace at all
        return pos
    while pos < c.n:
        b = c.s[pos]
        if b == 0x20 or b == 0x0A or b == 0x0D or b == 0x09:
            pos += 1
        else:
            return pos
    return truncated(c)


cdef inline int64_t expect(jctx *c, int64_t pos, int kind) noexcept nogil:
    cdef uint8_t found = KIND[c.s[pos]]
    if found == kind:
        return 0
    if found == 255:
        return unexpected(c, pos)
    return wrong_kind(c, pos, found)


cdef int64_t wrong_kind(jctx *c, int64_t pos, uint8_t found) noexcept nogil:
    """A value of another kind than the schema's starts at ``pos``: checked first, so a payload
    that is no JSON at all is invalid JSON, not the wrong type. Twin: _Row.wrong_kind."""
    cdef int64_t end = skip(c, pos)
    cdef uint8_t b
    if end < 0:
        return -1
    if c.depth == 0:  # the payload's root value: only whitespace may follow it
        while end < c.n:
            b = c.s[end]
            if b == 0x20 or b == 0x0A or b == 0x0D or b == 0x09:
                end += 1
            else:
                return unexpected(c, end)
    return fail(c, defs.JSON_WRONG_TYPE, pos, found)


cdef inline int64_t enter(jctx *c, int64_t pos) noexcept nogil:
    c.depth += 1
    if c.depth > defs.JSON_MAX_DEPTH:
        return fail(c, defs.JSON_DEPTH_EXCEEDED, pos, defs.JSON_MAX_DEPTH)
    return 0


cdef inline int64_t literal(jctx *c, int64_t pos, const char *word, int length) noexcept nogil:
    cdef int i
    for i in range(length):
        if pos + i >= c.n:
            return truncated(c)
        if c.s[pos + i] != <uint8_t> word[i]:
            return unexpected(c, pos + i)
    return pos + length


cdef inline bint is_digit(uint8_t b) noexcept nogil:
    return 0x30 <= b <= 0x39


cdef inline int64_t digit_needed(jctx *c, int64_t pos) noexcept nogil:
    """A number stops at ``pos`` where a digit must follow."""
    if pos >= c.n:
        return truncated(c)
    return unexpected(c, pos)


cdef int64_t number_end(jctx *c, int64_t pos) noexcept nogil:
    """The end of the number at ``pos`` (its first byte is ``-`` or a digit); twin: _Row.number_end."""
    cdef const uint8_t *s = c.s
    cdef int64_t n = c.n
    if s[pos] == 0x2D:
        pos += 1
        if pos >= n or not is_digit(s[pos]):
            return digit_needed(c, pos)
    if s[pos] == 0x30:
        pos += 1
    else:
        while pos < n and is_digit(s[pos]):
            pos += 1
    if pos < n and s[pos] == 0x2E:
        pos += 1
        if pos >= n or not is_digit(s[pos]):
            return digit_needed(c, pos)
        while pos < n and is_digit(s[pos]):
            pos += 1
    if pos < n and (s[pos] == 0x65 or s[pos] == 0x45):
        pos += 1
        if pos < n and (s[pos] == 0x2B or s[pos] == 0x2D):
            pos += 1
        if pos >= n or not is_digit(s[pos]):
            return digit_needed(c, pos)
        while pos < n and is_digit(s[pos]):
            pos += 1
    return pos


ctypedef struct jdecimal:
    uint64_t mantissa  # significant digits without leading and trailing zeros (when digits <= 19)
    int32_t digits     # how many (> 19: mantissa is not exact)
    int64_t scale      # value = mantissa * 10**scale (saturated far beyond any double or int64)
    bint negative


cdef void read_decimal(const uint8_t *s, int64_t pos, int64_t end, jdecimal *d) noexcept nogil:
    """Split a scanned JSON number into significant digits and a power of ten."""
    cdef int64_t zeros = 0, exponent = 0, frac = 0
    cdef bint in_frac = False, exp_negative = False
    cdef uint8_t b
    d.mantissa = 0
    d.digits = 0
    d.negative = s[pos] == 0x2D
    if d.negative:
        pos += 1
    while pos < end:
        b = s[pos]
        if b == 0x2E:
            in_frac = True
        elif b == 0x65 or b == 0x45:
            break
        else:
            if in_frac:
                frac += 1
            if b == 0x30:
                if d.digits:
                    zeros += 1  # deferred: trailing zeros move into the exponent
            else:
                while zeros:
                    if d.digits < 19:
                        d.mantissa *= 10
                    d.digits += 1
                    zeros -= 1
                if d.digits < 19:
                    d.mantissa = d.mantissa * 10 + (b - 0x30)
                d.digits += 1
        pos += 1
    if pos < end:
        pos += 1
        if s[pos] == 0x2D or s[pos] == 0x2B:
            exp_negative = s[pos] == 0x2D
            pos += 1
        while pos < end:
            if exponent < 1000000000:
                exponent = exponent * 10 + (s[pos] - 0x30)
            pos += 1
        if exp_negative:
            exponent = -exponent
    d.scale = exponent - frac + zeros


cdef inline bint eight_digits(const uint8_t *p, uint64_t *value) noexcept nogil:
    """Whether the 8 bytes at ``p`` are all ASCII digits, and then their value (little-endian SWAR)."""
    cdef uint64_t x
    memcpy(&x, p, 8)
    if (x & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL:
        return False
    if ((x + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL:  # 0x3A-0x3F
        return False
    x -= 0x3030303030303030ULL
    x = (x * 10) + (x >> 8)  # pairs of digits in every other byte
    x = (((x & 0x000000FF000000FFULL) * (100 + (<uint64_t> 1000000 << 32))) +
         (((x >> 16) & 0x000000FF000000FFULL) * (1 + (<uint64_t> 10000 << 32)))) >> 32
    value[0] = x
    return True


cdef int64_t scan_number(jctx *c, int64_t pos, jdecimal *d) noexcept nogil:
    """The end of the number at ``pos`` (its first byte is ``-`` or a digit), checked as number_end
    checks it, and its split into ``d`` as read_decimal splits it, in one pass."""
    cdef const uint8_t *s = c.s
    cdef int64_t n = c.n, start = pos, frac = 0, exponent = 0, zeros = 0
    cdef int32_t digits = 0  # significant digits so far, trailing zeros included
    cdef uint64_t m = 0, chunk
    cdef bint exp_negative = False
    d.negative = s[pos] == 0x2D
    if d.negative:
        pos += 1
        if pos >= n or not is_digit(s[pos]):
            return digit_needed(c, pos)
    if s[pos] == 0x30:
        pos += 1
    else:
        while pos + 8 <= n and digits <= 11 and eight_digits(s + pos, &chunk):
            m = m * 100000000 + chunk
            digits += 8
            pos += 8
        while pos < n and is_digit(s[pos]):
            if digits < 19:
                m = m * 10 + (s[pos] - 0x30)
            digits += 1
            pos += 1
    if pos < n and s[pos] == 0x2E:
        pos += 1
        if pos >= n or not is_digit(s[pos]):
            return digit_needed(c, pos)
        if digits == 0:  # leading zeros of the fraction are not significant
            while pos < n and s[pos] == 0x30:
                pos += 1
                frac += 1
        while pos + 8 <= n and digits <= 11 and eight_digits(s + pos, &chunk):
            m = m * 100000000 + chunk
            digits += 8
            frac += 8
            pos += 8
        while pos < n and is_digit(s[pos]):
            if digits < 19:
                m = m * 10 + (s[pos] - 0x30)
            digits += 1
            frac += 1
            pos += 1
    if pos < n and (s[pos] == 0x65 or s[pos] == 0x45):
        pos += 1
        if pos < n and (s[pos] == 0x2B or s[pos] == 0x2D):
            exp_negative = s[pos] == 0x2D
            pos += 1
        if pos >= n or not is_digit(s[pos]):
            return digit_needed(c, pos)
        while pos < n and is_digit(s[pos]):
            if exponent < 1000000000:
                exponent = exponent * 10 + (s[pos] - 0x30)
            pos += 1
        if exp_negative:
            exponent = -exponent
    if digits > 19:  # the mantissa was cut: split it exactly the slow way
        read_decimal(s, start, pos, d)
        return pos
    while digits and m % 10 == 0:  # trailing zeros move into the exponent
        m //= 10
        digits -= 1
        zeros += 1
    d.mantissa = m
    d.digits = digits
    d.scale = exponent - frac + zeros
    return pos


cdef int64_t integral(jctx *c, int64_t pos, const jdecimal *dp, int32_t op, int64_t *value) noexcept nogil:
    """The exact integer of the number at ``pos`` (split into ``dp``); twin: json_py._integral and _Row.integer."""
    cdef jdecimal d = dp[0]
    cdef uint64_t v, limit
    cdef int64_t k
    if d.digits == 0:
        value[0] = 0
        return 0
    if d.scale < 0:
        return fail(c, defs.JSON_WRONG_TYPE, pos, 2)
    if d.digits + d.scale > 19:
        return fail(c, defs.JSON_NUMBER_RANGE, pos, op)
    v = d.mantissa
    for k in range(d.scale):
        v *= 10
    if op == defs.J_INT:
        limit = (<uint64_t> 1 << 31) - 1 + d.negative
    elif op == defs.J_LONG:
        limit = (<uint64_t> 1 << 63) - 1 + d.negative
    else:  # J_TIME_MILLIS, J_TIME_MICROS: [0, one day) (v > 0 here: a zero has no digits)
        limit = <uint64_t> (defs.MS_PER_DAY - 1 if op == defs.J_TIME_MILLIS else defs.MS_PER_DAY * 1000 - 1)
        if d.negative:
            return fail(c, defs.JSON_NUMBER_RANGE, pos, op)
    if v > limit:
        return fail(c, defs.JSON_NUMBER_RANGE, pos, op)
    value[0] = -<int64_t> v if d.negative else <int64_t> v
    return 0


cdef double slow_double(const uint8_t *s, int64_t pos, int64_t end) noexcept nogil:
    with gil:
        return float(PyBytes_FromStringAndSize(<const char *> s + pos, end - pos))


cdef double to_double(const uint8_t *s, int64_t pos, int64_t end, const jdecimal *dp) noexcept nogil:
    """The correctly rounded double of the number text ``s[pos:end]`` (split into ``dp``)."""
    cdef jdecimal d = dp[0]
    cdef double x
    if d.digits == 0:
        return -0.0 if d.negative else 0.0
    if d.digits <= 15:
        x = <double> d.mantissa
        if 0 <= d.scale <= 22:
            x *= POW10[d.scale]
        elif -22 <= d.scale < 0:
            x /= POW10[-d.scale]
        elif 22 < d.scale <= 22 + 15 - d.digits:
            x = x * POW10[d.scale - 22]  # still an exact integer below 10**15
            x *= POW10[22]
        else:
            return eisel_lemire_or_slow(s, pos, end, &d)
        return -x if d.negative else x
    if d.digits <= 19:
        return eisel_lemire_or_slow(s, pos, end, &d)
    return slow_double(s, pos, end)


cdef inline double eisel_lemire_or_slow(const uint8_t *s, int64_t pos, int64_t end, const jdecimal *d) noexcept nogil:
    """``mantissa * 10**scale`` of an exact (<= 19 digit) decimal by Eisel-Lemire, else by ``float()``."""
    cdef uint64_t bits
    cdef double x
    if not pc_eisel_lemire(d.mantissa, d.scale, POW5_128, &bits):
        return slow_double(s, pos, end)
    bits |= (<uint64_t> d.negative) << 63
    memcpy(&x, &bits, 8)
    return x


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


cdef inline int64_t hex4(jctx *c, int64_t pos, int32_t *value) noexcept nogil:
    cdef int32_t v = 0
    cdef int64_t i
    cdef uint8_t h
    for i in range(pos, pos + 4):
        if i >= c.n:
            return truncated(c)
        h = HEXVAL[c.s[i]]
        if h == 255:
            return unexpected(c, i)
        v = v * 16 + h
    value[0] = v
    return 0


cdef int64_t scan_string(jctx *c, int64_t pos, int64_t *decoded, bint *escaped) noexcept nogil:
    """Check the string at ``pos`` (its opening quote); return the position after it, with the
    length of its decoded UTF-8 and whether it has escapes. Twin: _Row.read_string."""
    cdef const uint8_t *s = c.s
    cdef int64_t n = c.n, length = 0
    cdef uint8_t b
    cdef int k
    cdef int32_t code, low
    cdef int64_t start
    cdef uint64_t w, flags
    escaped[0] = False
    pos += 1
    while True:
        start = pos
        while pos + 8 <= n:
            # eight bytes at a time: flag any quote, backslash, control byte or byte >= 0x80
            memcpy(&w, s + pos, 8)
            flags = w | ((w - 0x2020202020202020ULL) & ~w)
            flags |= (((w ^ 0x2222222222222222ULL) - 0x0101010101010101ULL) & ~(w ^ 0x2222222222222222ULL))
            flags |= (((w ^ 0x5C5C5C5C5C5C5C5CULL) - 0x0101010101010101ULL) & ~(w ^ 0x5C5C5C5C5C5C5C5CULL))
            flags &= 0x8080808080808080ULL
            if flags:
                pos += <int64_t> (__builtin_ctzll(flags) >> 3)  # the first flagged byte (later flags may be false)
                break
            pos += 8
        while pos < n and PLAIN[s[pos]]:
            pos += 1
        length += pos - start
        if pos >= n:
            return truncated(c)
        b = s[pos]
        if b == 0x22:
            decoded[0] = length
            return pos + 1
        if b >= 0x80:
            k = utf8_length(s, pos, n)
            if k == 0:
                return fail(c, defs.JSON_INVALID_UTF8, pos, 0)
            pos += k
            length += k
            continue
        if b != 0x5C:
            return unexpected(c, pos)
        escaped[0] = True
        if pos + 1 >= n:
            return truncated(c)
        b = s[pos + 1]
        if b == 0x75:
            if hex4(c, pos + 2, &code):
                return -1
            if 0xD800 <= code < 0xDC00:
                if pos + 7 < n and s[pos + 6] == 0x5C and s[pos + 7] == 0x75:
                    if hex4(c, pos + 8, &low):
                        return -1
                    if 0xDC00 <= low < 0xE000:
                        length += 4
                        pos += 12
                        continue
                return fail(c, defs.JSON_INVALID_UTF8, pos, 0)
            if 0xDC00 <= code < 0xE000:
                return fail(c, defs.JSON_INVALID_UTF8, pos, 0)
            length += 1 if code < 0x80 else (2 if code < 0x800 else 3)
            pos += 6
        elif b == 0x22 or b == 0x5C or b == 0x2F or b == 0x62 or b == 0x66 or b == 0x6E or b == 0x72 or b == 0x74:
            length += 1
            pos += 2
        else:
            return unexpected(c, pos + 1)


cdef void decode_string(const uint8_t *s, int64_t pos, int64_t end, uint8_t *dst) noexcept nogil:
    """Write the UTF-8 of the checked string ``s[pos:end]`` (quotes included) to ``dst``."""
    cdef uint8_t b
    cdef uint32_t code
    pos += 1
    end -= 1
    while pos < end:
        b = s[pos]
        if b != 0x5C:
            dst[0] = b
            dst += 1
            pos += 1
            continue
        b = s[pos + 1]
        if b != 0x75:
            dst[0] = ESCAPED[b]
            dst += 1
            pos += 2
            continue
        code = (HEXVAL[s[pos + 2]] << 12) | (HEXVAL[s[pos + 3]] << 8) | (HEXVAL[s[pos + 4]] << 4) | HEXVAL[s[pos + 5]]
        pos += 6
        if 0xD800 <= code < 0xDC00:
            code = 0x10000 + ((code - 0xD800) << 10) + (((HEXVAL[s[pos + 2]] << 12) | (HEXVAL[s[pos + 3]] << 8)
                                                        | (HEXVAL[s[pos + 4]] << 4) | HEXVAL[s[pos + 5]]) - 0xDC00)
            pos += 6
        if code < 0x80:
            dst[0] = <uint8_t> code
            dst += 1
        elif code < 0x800:
            dst[0] = <uint8_t> (0xC0 | (code >> 6))
            dst[1] = <uint8_t> (0x80 | (code & 0x3F))
            dst += 2
        elif code < 0x10000:
            dst[0] = <uint8_t> (0xE0 | (code >> 12))
            dst[1] = <uint8_t> (0x80 | ((code >> 6) & 0x3F))
            dst[2] = <uint8_t> (0x80 | (code & 0x3F))
            dst += 3
        else:
            dst[0] = <uint8_t> (0xF0 | (code >> 18))
            dst[1] = <uint8_t> (0x80 | ((code >> 12) & 0x3F))
            dst[2] = <uint8_t> (0x80 | ((code >> 6) & 0x3F))
            dst[3] = <uint8_t> (0x80 | (code & 0x3F))
            dst += 4


cdef int64_t read_string(jctx *c, int64_t pos, const uint8_t **text, int64_t *length) noexcept nogil:
    """The decoded string at ``pos``: a view of the payload, or of the scratch buffer when it has
    escapes (valid until the next call); returns the position after it."""
    cdef bint escaped
    cdef int64_t end = scan_string(c, pos, length, &escaped)
    if end < 0:
        return -1
    if not escaped:
        text[0] = c.s + pos + 1
        return end
    c.scratch.len = 0
    if reserve(c, &c.scratch, length[0] + 1):
        return -1
    decode_string(c.s, pos, end, c.scratch.p)
    text[0] = c.scratch.p
    return end


cdef int64_t write_string(jctx *c, int64_t pos) noexcept nogil:
    """The string at ``pos`` as an Avro string."""
    cdef bint escaped
    cdef int64_t length
    cdef int64_t end = scan_string(c, pos, &length, &escaped)
    if end < 0 or put_long(c, length) or reserve(c, &c.out, length):
        return -1
    if escaped:
        decode_string(c.s, pos, end, c.out.p + c.out.len)
    elif length:
        memcpy(c.out.p + c.out.len, c.s + pos + 1, <size_t> length)
    c.out.len += length
    return end


cdef int64_t key(jctx *c, int64_t pos) noexcept nogil:
    """Check a key and its colon at ``pos``; return the position of the value."""
    cdef bint escaped
    cdef int64_t length
    if c.s[pos] != 0x22:
        return unexpected(c, pos)
    pos = scan_string(c, pos, &length, &escaped)
    if pos < 0:
        return -1
    pos = ws(c, pos)
    if pos < 0:
        return -1
    if c.s[pos] != 0x3A:
        return unexpected(c, pos)
    return ws(c, pos + 1)


cdef inline int64_t next_item(jctx *c, int64_t pos, uint8_t closer, bint *more) noexcept nogil:
    """After a container item: the next item's position (more) or the position after the closer."""
    pos = ws(c, pos)
    if pos < 0:
        return -1
    if c.s[pos] == 0x2C:
        more[0] = True
        return ws(c, pos + 1)
    if c.s[pos] != closer:
        return unexpected(c, pos)
    more[0] = False
    return pos + 1


cdef int64_t skip(jctx *c, int64_t pos) noexcept nogil:
    """Check the value at ``pos`` and return its end, building nothing. Twin: _Row.skip."""
    cdef uint8_t b = c.s[pos], closer
    cdef bint more = True, escaped
    cdef int64_t length
    if b == 0x7B or b == 0x5B:
        if enter(c, pos):
            return -1
        closer = b + 2
        pos = ws(c, pos + 1)
        if pos < 0:
            return -1
        if c.s[pos] == closer:
            c.depth -= 1
            return pos + 1
        while more:
            if closer == 0x7D:
                pos = key(c, pos)
                if pos < 0:
                    return -1
            pos = skip(c, pos)
            if pos < 0:
                return -1
            pos = next_item(c, pos, closer, &more)
            if pos < 0:
                return -1
        c.depth -= 1
        return pos
    if b == 0x22:
        return scan_string(c, pos, &length, &escaped)
    if b == 0x2D or is_digit(b):
        return number_end(c, pos)
    if b == 0x74:
        return literal(c, pos, "true", 4)
    if b == 0x66:
        return literal(c, pos, "false", 5)
    if b == 0x6E:
        return literal(c, pos, "null", 4)
    return unexpected(c, pos)


# -- formats -------------------------------------------------------------------------------------------

cdef int64_t base64_decode(const uint8_t *t, int64_t n, uint8_t *dst) noexcept nogil:
    """Decode padded standard base64 (``dst`` may equal ``t``); the byte count, or -1."""
    cdef int64_t i, o = 0, pad = 0
    cdef int8_t v0, v1, v2, v3
    if n % 4:
        return -1
    if n and t[n - 1] == 0x3D:
        pad = 2 if t[n - 2] == 0x3D else 1
    i = 0
    while i < n:
        v0 = B64VAL[t[i]]
        v1 = B64VAL[t[i + 1]]
        if i + 4 == n and pad:
            v2 = 0 if pad == 2 else B64VAL[t[i + 2]]
            v3 = 0
        else:
            v2 = B64VAL[t[i + 2]]
            v3 = B64VAL[t[i + 3]]
        if v0 < 0 or v1 < 0 or v2 < 0 or v3 < 0:
            return -1
        dst[o] = <uint8_t> ((v0 << 2) | (v1 >> 4))
        dst[o + 1] = <uint8_t> (((v1 & 0xF) << 4) | (v2 >> 2))
        dst[o + 2] = <uint8_t> (((v2 & 0x3) << 6) | v3)
        o += 3
        i += 4
    return o - pad


cdef inline int two(const uint8_t *t, int64_t at) noexcept nogil:
    """The two-digit number at ``t[at]``, -1 if not two digits."""
    if not (is_digit(t[at]) and is_digit(t[at + 1])):
        return -1
    return (t[at] - 0x30) * 10 + (t[at + 1] - 0x30)


cdef int64_t days_from_civil(int64_t year, int64_t month, int64_t day) noexcept nogil:
    cdef int64_t era, yoe, doy, doe
    year -= month <= 2
    era = (year if year >= 0 else year - 399) // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


cdef bint parse_date(const uint8_t *t, int64_t n, int64_t *days) noexcept nogil:
    """``YYYY-MM-DD`` at the start of ``t`` (n >= 10 checked by the caller)."""
    cdef int hi = two(t, 0), lo = two(t, 2), month = two(t, 5), day = two(t, 8), dim
    cdef int year
    if hi < 0 or lo < 0 or month < 0 or day < 0 or t[4] != 0x2D or t[7] != 0x2D:
        return False
    year = hi * 100 + lo
    if month < 1 or month > 12 or day < 1:
        return False
    dim = DAYS_IN_MONTH[month & 15]
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        dim = 29
    if day > dim:
        return False
    days[0] = days_from_civil(year, month, day)
    return True


cdef int64_t parse_clock(const uint8_t *t, int64_t n, int64_t *micros) noexcept nogil:
    """``HH:MM:SS[.f{1,9}]`` at the start of ``t``; the position after it, or -1."""
    cdef int h, m, sec
    cdef int64_t p = 8, frac = 0, digits = 0
    if n < 8 or t[2] != 0x3A or t[5] != 0x3A:
        return -1
    h = two(t, 0)
    m = two(t, 3)
    sec = two(t, 6)
    if h < 0 or m < 0 or sec < 0 or h > 23 or m > 59 or sec > 59:
        return -1
    if p < n and t[p] == 0x2E:
        p += 1
        while p < n and is_digit(t[p]):
            if digits < 6:
                frac = frac * 10 + (t[p] - 0x30)
            digits += 1
            p += 1
        if digits < 1 or digits > 9:
            return -1
        while digits < 6:
            frac *= 10
            digits += 1
    micros[0] = (<int64_t> (h * 3600 + m * 60 + sec)) * 1000000 + frac
    return p


cdef bint parse_offset(const uint8_t *t, int64_t n, int64_t *seconds) noexcept nogil:
    """``Z`` or ``±HH:MM`` filling all of ``t``."""
    cdef int h, m
    if n == 1 and (t[0] == 0x5A or t[0] == 0x7A):
        seconds[0] = 0
        return True
    if n != 6 or (t[0] != 0x2B and t[0] != 0x2D) or t[3] != 0x3A:
        return False
    h = two(t, 1)
    m = two(t, 4)
    if h < 0 or m < 0 or h > 23 or m > 59:
        return False
    seconds[0] = -(h * 3600 + m * 60) if t[0] == 0x2D else h * 3600 + m * 60
    return True


cdef bint parse_format(int32_t op, const uint8_t *t, int64_t n, int64_t *value) noexcept nogil:
    """A date-time, date or time string as its Avro number; twin: json_py._timestamp_micros etc."""
    cdef int64_t days, micros, seconds, p
    if op == defs.J_DATE:
        return n == 10 and parse_date(t, n, value)
    if op == defs.J_TIME:
        p = parse_clock(t, n, &micros)
        if p < 0 or (p < n and not parse_offset(t + p, n - p, &seconds)):
            return False
        value[0] = micros
        return True
    if n < 20 or not parse_date(t, 10, &days) or (t[10] != 0x54 and t[10] != 0x74 and t[10] != 0x20):
        return False
    p = parse_clock(t + 11, n - 11, &micros)
    if p < 0 or not parse_offset(t + 11 + p, n - 11 - p, &seconds):
        return False
    value[0] = days * <int64_t> 86400000000 + micros - seconds * 1000000
    return True


# -- the nodes -----------------------------------------------------------------------------------------

cdef int64_t format_value(jctx *c, const jnode *nd, int64_t pos, int64_t *value) noexcept nogil:
    """The date-time, date or time string at ``pos`` as its Avro number; the position after it."""
    cdef const uint8_t *text
    cdef int64_t length, end
    if expect(c, pos, 3):
        return -1
    end = read_string(c, pos, &text, &length)
    if end < 0:
        return -1
    if not parse_format(nd.op, text, length, value):
        return fail(c, defs.JSON_BAD_FORMAT, pos, nd.op)
    return end


cdef int64_t formatted(jctx *c, const jnode *nd, int64_t pos) noexcept nogil:
    cdef const uint8_t *text
    cdef int64_t length, end, count, value
    if nd.op != defs.J_BYTES_B64 and nd.op != defs.J_FIXED_B64:
        end = format_value(c, nd, pos, &value)
        if end < 0 or put_long(c, value):
            return -1
        return end
    if expect(c, pos, 3):
        return -1
    end = read_string(c, pos, &text, &length)
    if end < 0:
        return -1
    # decode into the scratch buffer (in place when the text is already there)
    if text != c.scratch.p:
        c.scratch.len = 0
        if reserve(c, &c.scratch, length + 1):
            return -1
    count = base64_decode(text, length, c.scratch.p)
    if count < 0 or (nd.op == defs.J_FIXED_B64 and count != nd.size):
        return fail(c, defs.JSON_BAD_FORMAT, pos, nd.op)
    if nd.op == defs.J_BYTES_B64 and put_long(c, count):
        return -1
    if put_bytes(c, &c.out, c.scratch.p, count):
        return -1
    return end


cdef int64_t enum_index(jctx *c, const jnode *nd, int64_t pos, int64_t *index) noexcept nogil:
    """The index of the enum symbol at ``pos``; the position after it."""
    cdef const uint8_t *text
    cdef int64_t length, end
    cdef int32_t i
    cdef const jfield *sym
    if expect(c, pos, 3):
        return -1
    end = read_string(c, pos, &text, &length)
    if end < 0:
        return -1
    for i in range(nd.nfields):
        sym = &c.fields[nd.first + i]
        if sym.name_len == length and memcmp(c.blob + sym.name_off, text, <size_t> length) == 0:
            index[0] = i
            return end
    return fail(c, defs.JSON_UNKNOWN_ENUM, pos, 0)


cdef int64_t enum_value(jctx *c, const jnode *nd, int64_t pos) noexcept nogil:
    cdef int64_t index
    cdef int64_t end = enum_index(c, nd, pos, &index)
    if end < 0 or put_long(c, index):
        return -1
    return end


ctypedef union jnum:
    int64_t i  # J_INT, J_LONG, J_TIME_MILLIS, J_TIME_MICROS
    double d   # J_DOUBLE
    float f    # J_FLOAT


cdef inline bint integral_op(int32_t op) noexcept nogil:
    return op == defs.J_INT or op == defs.J_LONG or op == defs.J_TIME_MILLIS or op == defs.J_TIME_MICROS


cdef inline bint number_op(int32_t op) noexcept nogil:
    return integral_op(op) or op == defs.J_DOUBLE or op == defs.J_FLOAT


cdef int64_t number_value(jctx *c, const jnode *nd, int64_t pos, jnum *out) noexcept nogil:
    """The number at ``pos`` as node ``nd`` reads it; the position after it."""
    cdef int64_t end
    cdef double x
    cdef float f
    cdef jdecimal d
    if expect(c, pos, 2):
        return -1
    end = scan_number(c, pos, &d)
    if end < 0:
        return -1
    if integral_op(nd.op):
        if integral(c, pos, &d, nd.op, &out.i):
            return -1
        return end
    x = to_double(c.s, pos, end, &d)
    if isinf(x):
        return fail(c, defs.JSON_NUMBER_RANGE, pos, nd.op)
    if nd.op == defs.J_DOUBLE:
        out.d = x
        return end
    f = <float> x
    if isinf(f):
        return fail(c, defs.JSON_NUMBER_RANGE, pos, nd.op)
    out.f = f
    return end


cdef int64_t number(jctx *c, const jnode *nd, int64_t pos) noexcept nogil:
    cdef jnum v
    cdef int64_t end = number_value(c, nd, pos, &v)
    if end < 0:
        return -1
    if integral_op(nd.op):
        if put_long(c, v.i):
            return -1
    elif nd.op == defs.J_DOUBLE:
        if put_bytes(c, &c.out, <const uint8_t *> &v.d, 8):  # little-endian hosts only (as the Avro kernels)
            return -1
    elif put_bytes(c, &c.out, <const uint8_t *> &v.f, 4):
        return -1
    return end


cdef int64_t close_block(jctx *c, int64_t base, int64_t count) noexcept nogil:
    """Put the block count in the byte reserved at ``base`` (moving the items when it needs more), then 0."""
    cdef uint64_t zz = (<uint64_t> count) << 1
    cdef int length = varint_len(zz)
    cdef int64_t i = base
    if length > 1:
        if reserve(c, &c.out, length - 1):
            return -1
        memmove(c.out.p + base + length, c.out.p + base + 1, <size_t> (c.out.len - base - 1))
        c.out.len += length - 1
    while zz > 0x7F:
        c.out.p[i] = <uint8_t> ((zz & 0x7F) | 0x80)
        zz >>= 7
        i += 1
    c.out.p[i] = <uint8_t> zz
    if count == 0:
        return 0  # the reserved byte is the end marker
    if reserve(c, &c.out, 1):
        return -1
    c.out.p[c.out.len] = 0
    c.out.len += 1
    return 0


cdef int64_t array(jctx *c, const jnode *nd, int64_t pos) noexcept nogil:
    cdef int64_t base, count = 0
    cdef bint more = True
    cdef const jnode *child = &c.nodes[nd.child]
    if expect(c, pos, 4) or enter(c, pos) or reserve(c, &c.out, 1):
        return -1
    base = c.out.len
    c.out.len += 1
    pos = ws(c, pos + 1)
    if pos < 0:
        return -1
    if c.s[pos] == 0x5D:
        pos += 1
    else:
        while more:
            pos = value(c, child, pos)
            if pos < 0:
                return -1
            count += 1
            pos = next_item(c, pos, 0x5D, &more)
            if pos < 0:
                return -1
    if close_block(c, base, count):
        return -1
    c.depth -= 1
    return pos


cdef int64_t mapping(jctx *c, const jnode *nd, int64_t pos) noexcept nogil:
    cdef int64_t base, count = 0
    cdef bint more = True
    cdef const jnode *child = &c.nodes[nd.child]
    if expect(c, pos, 5) or enter(c, pos) or reserve(c, &c.out, 1):
        return -1
    base = c.out.len
    c.out.len += 1
    pos = ws(c, pos + 1)
    if pos < 0:
        return -1
    if c.s[pos] == 0x7D:
        pos += 1
    else:
        while more:
            if c.s[pos] != 0x22:
                return unexpected(c, pos)
            pos = write_string(c, pos)
            if pos < 0:
                return -1
            pos = ws(c, pos)
            if pos < 0:
                return -1
            if c.s[pos] != 0x3A:
                return unexpected(c, pos)
            pos = ws(c, pos + 1)
            if pos < 0:
                return -1
            pos = value(c, child, pos)
            if pos < 0:
                return -1
            count += 1
            pos = next_item(c, pos, 0x7D, &more)
            if pos < 0:
                return -1
    if close_block(c, base, count):
        return -1
    c.depth -= 1
    return pos


cdef inline int32_t find_field(jctx *c, const jnode *nd, const uint8_t *text, int64_t length,
                               int32_t hint) noexcept nogil:
    """The index of the field called ``text`` (trying ``hint``, the usual next one, first), or -1."""
    cdef int32_t i, k
    cdef const jfield *f
    for k in range(nd.nfields):
        i = hint + k
        if i >= nd.nfields:
            i -= nd.nfields
        f = &c.fields[nd.first + i]
        if f.name_len == length and memcmp(c.blob + f.name_off, text, <size_t> length) == 0:
            return i
    return -1


cdef int64_t record(jctx *c, const jnode *nd, int64_t pos) noexcept nogil:
    """An object as an Avro record; twin: _Row.record (which always rebuilds; here the fields are
    only moved when the payload's keys were not the schema's order)."""
    cdef int64_t base, spans, extras, nextra = 0, start, key_start, key_end, length, i, total, close_at
    cdef int32_t nf = nd.nfields, field, expected = 0
    cdef bint more = True, ordered = True
    cdef const uint8_t *text
    cdef const jfield *f
    cdef int64_t *ints
    if expect(c, pos, 5) or enter(c, pos):
        return -1
    base = c.out.len
    spans = push_ints(c, 2 * nf)
    if spans < 0:
        return -1
    for i in range(2 * nf):
        c.ints[spans + i] = -1
    extras = c.nints
    pos = ws(c, pos + 1)
    if pos < 0:
        return -1
    if c.s[pos] == 0x7D:
        pos += 1
    else:
        while more:
            if c.s[pos] != 0x22:
                return unexpected(c, pos)
            key_start = pos
            key_end = read_string(c, pos, &text, &length)
            if key_end < 0:
                return -1
            field = find_field(c, nd, text, length, expected if expected < nf else 0)
            pos = ws(c, key_end)
            if pos < 0:
                return -1
            if c.s[pos] != 0x3A:
                return unexpected(c, pos)
            pos = ws(c, pos + 1)
            if pos < 0:
                return -1
            if field < 0:
                pos = skip(c, pos)
                if pos < 0:
                    return -1
                if nd.keep_extra:
                    # the int stack's top is this object's extras: inner objects have popped theirs
                    i = push_ints(c, 2)
                    if i < 0:
                        return -1
                    c.ints[i] = key_start  # the member's bytes, key to value, as in the payload
                    c.ints[i + 1] = pos
                    nextra += 1
            else:
                if field != expected or c.ints[spans + 2 * field] >= 0:
                    ordered = False
                else:
                    expected += 1
                start = c.out.len
                pos = value(c, &c.nodes[c.fields[nd.first + field].child], pos)
                if pos < 0:
                    return -1
                c.ints[spans + 2 * field] = start
                c.ints[spans + 2 * field + 1] = c.out.len
            pos = next_item(c, pos, 0x7D, &more)
            if pos < 0:
                return -1
    close_at = pos - 1
    ints = c.ints
    for i in range(nf):
        if ints[spans + 2 * i] < 0 and c.fields[nd.first + i].miss_len < 0:
            return fail(c, defs.JSON_MISSING_REQUIRED, close_at, i)
    if ordered:
        # the present fields are already in place: append the missing tail's defaults
        for i in range(expected, nf):
            f = &c.fields[nd.first + i]
            if put_bytes(c, &c.out, c.blob + f.miss_off, f.miss_len):
                return -1
    else:
        c.tmp.len = 0
        for i in range(nf):
            f = &c.fields[nd.first + i]
            if ints[spans + 2 * i] < 0:
                if put_bytes(c, &c.tmp, c.blob + f.miss_off, f.miss_len):
                    return -1
            elif put_bytes(c, &c.tmp, c.out.p + ints[spans + 2 * i], ints[spans + 2 * i + 1] - ints[spans + 2 * i]):
                return -1
        c.out.len = base
        if put_bytes(c, &c.out, c.tmp.p, c.tmp.len):
            return -1
    if nd.keep_extra:
        if nextra == 0:
            if put_bytes(c, &c.out, <const uint8_t *> b"\x00", 1):
                return -1
        else:
            total = 1 + nextra  # braces and commas
            for i in range(nextra):
                total += ints[extras + 2 * i + 1] - ints[extras + 2 * i]
            if put_bytes(c, &c.out, <const uint8_t *> b"\x02", 1) or put_long(c, total) or reserve(c, &c.out, total):
                return -1
            c.out.p[c.out.len] = 0x7B
            c.out.len += 1
            for i in range(nextra):
                if i:
                    c.out.p[c.out.len] = 0x2C
                    c.out.len += 1
                length = ints[extras + 2 * i + 1] - ints[extras + 2 * i]
                memcpy(c.out.p + c.out.len, c.s + ints[extras + 2 * i], <size_t> length)
                c.out.len += length
            c.out.p[c.out.len] = 0x7D
            c.out.len += 1
    c.nints = spans
    c.depth -= 1
    return pos


cdef int64_t value(jctx *c, const jnode *nd, int64_t pos) noexcept nogil:
    """Transcode the value at ``pos`` (a byte of the payload) by node ``nd``; its end, or -1."""
    cdef int32_t op = nd.op
    cdef int64_t end
    if op == defs.J_STRING:
        if expect(c, pos, 3):
            return -1
        return write_string(c, pos)
    if number_op(op):
        return number(c, nd, pos)
    if op == defs.J_NULLABLE:
        if c.s[pos] == 0x6E:
            if put_bytes(c, &c.out, <const uint8_t *> b"\x00", 1):
                return -1
            return literal(c, pos, "null", 4)
        if put_bytes(c, &c.out, <const uint8_t *> b"\x02", 1):
            return -1
        return value(c, &c.nodes[nd.child], pos)
    if op == defs.J_OBJECT:
        return record(c, nd, pos)
    if op == defs.J_ARRAY:
        return array(c, nd, pos)
    if op == defs.J_MAP:
        return mapping(c, nd, pos)
    if op == defs.J_BOOL:
        if expect(c, pos, 1):
            return -1
        if c.s[pos] == 0x74:
            if put_bytes(c, &c.out, <const uint8_t *> b"\x01", 1):
                return -1
            return literal(c, pos, "true", 4)
        if put_bytes(c, &c.out, <const uint8_t *> b"\x00", 1):
            return -1
        return literal(c, pos, "false", 5)
    if op == defs.J_NULL:
        if expect(c, pos, 0):
            return -1
        return literal(c, pos, "null", 4)
    if op == defs.J_ENUM:
        return enum_value(c, nd, pos)
    if op == defs.J_TEXT:
        end = skip(c, pos)
        if end < 0 or put_long(c, end - pos) or put_bytes(c, &c.out, c.s + pos, end - pos):
            return -1
        return end
    return formatted(c, nd, pos)


cdef int64_t top(jctx *c) noexcept nogil:
    """The whole payload: one value between optional whitespace; 0 or -1."""
    cdef int64_t pos = ws(c, 0)
    if pos < 0:
        return -1
    pos = value(c, &c.nodes[0], pos)
    if pos < 0:
        return -1
    while pos < c.n:
        if c.s[pos] == 0x20 or c.s[pos] == 0x0A or c.s[pos] == 0x0D or c.s[pos] == 0x09:
            pos += 1
        else:
            return unexpected(c, pos)
    return 0


# -- straight into the column builders -----------------------------------------------------------------
#
# decode() runs the same parser, but a bound node appends what it reads to the Avro decoder's column
# builders (csrc/pc_avro.h) instead of writing Avro bytes, exactly as the Avro op it is bound to would
# have: the same values, offsets, validity bytes and lengths. A node with no such shortcut (base64,
# null, arrays of zero-size items, ...) is bridged: the transcoder above writes its Avro bytes to
# c.out and the Avro interpreter decodes them with its op, which is the two-pass path for that node.
# Defaults of absent properties go the same way (their Avro bytes through the field's op). A bad row
# is cut from every builder with pc_avro_truncate, as the Avro decoder cuts its bad rows.

cdef inline int64_t bug(jctx *c, int32_t code, int64_t detail) noexcept nogil:
    c.code = AVRO_BUG
    c.bug_code = code
    c.bug_detail = detail
    return -1


cdef inline int grow(jctx *c, pc_abuf *b, int64_t need) noexcept nogil:
    """PC_RESERVE: room for ``need`` bytes in builder buffer ``b``; 0, or -1 out of memory."""
    if need > b.cap and pc_grow(b, need):
        c.code = NOMEM
        return -1
    return 0


cdef inline int commit(jctx *c, pc_slot *s) noexcept nogil:
    """One more element in ``s``: its validity byte when the slot keeps them, its length (PC_VALID1)."""
    if s.vactive:
        if grow(c, &s.valid, s.length + 1):
            return -1
        s.valid.p[s.length] = 1
    s.length += 1
    return 0


cdef inline int add_i64(jctx *c, pc_slot *s, int64_t v) noexcept nogil:
    if grow(c, &s.b1, (s.length + 1) * 8):
        return -1
    (<int64_t *> s.b1.p)[s.length] = v
    return commit(c, s)


cdef inline int add_i32(jctx *c, pc_slot *s, int64_t v) noexcept nogil:
    if v < -2147483648 or v > 2147483647:
        return <int> bug(c, defs.AVRO_INT_OUT_OF_RANGE, v)
    if grow(c, &s.b1, (s.length + 1) * 4):
        return -1
    (<int32_t *> s.b1.p)[s.length] = <int32_t> v
    return commit(c, s)


cdef inline int add_f64(jctx *c, pc_slot *s, double v) noexcept nogil:
    if grow(c, &s.b1, (s.length + 1) * 8):
        return -1
    (<double *> s.b1.p)[s.length] = v
    return commit(c, s)


cdef inline int add_f32(jctx *c, pc_slot *s, float v) noexcept nogil:
    if grow(c, &s.b1, (s.length + 1) * 4):
        return -1
    (<float *> s.b1.p)[s.length] = v
    return commit(c, s)


cdef inline int add_byte(jctx *c, pc_slot *s, uint8_t v) noexcept nogil:
    if grow(c, &s.b1, s.length + 1):
        return -1
    s.b1.p[s.length] = v
    return commit(c, s)


cdef inline int text_room(jctx *c, pc_slot *s, int64_t n, uint8_t **dst) noexcept nogil:
    """Room for ``n`` more string bytes (and one more offset) in the K_BIN slot ``s``; 0 or -1."""
    cdef int64_t dlen = s.dlen + n
    if dlen > 2147483647:
        return <int> bug(c, defs.AVRO_OUTPUT_TOO_LARGE, dlen)
    if grow(c, &s.b2, dlen) or grow(c, &s.b1, (s.length + 2) * 4):
        return -1
    dst[0] = s.b2.p + s.dlen
    return 0


cdef inline void text_done(pc_slot *s, int64_t n) noexcept nogil:
    """The ``n`` bytes written after text_room end the slot's next string (its length is the caller's)."""
    s.dlen += n
    (<int32_t *> s.b1.p)[s.length + 1] = <int32_t> s.dlen


cdef inline void copy_bytes(uint8_t *dst, const uint8_t *src, int64_t n) noexcept nogil:
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


cdef inline int64_t add_string(jctx *c, pc_slot *s, int64_t pos, bint value) noexcept nogil:
    """The string at ``pos`` appended to ``s`` (``value``: as an O_STRING value, else as a map key,
    which keeps no validity); the position after it."""
    cdef bint escaped
    cdef int64_t length
    cdef uint8_t *dst
    cdef int64_t end = scan_string(c, pos, &length, &escaped)
    if end < 0 or text_room(c, s, length, &dst):
        return -1
    if escaped:
        decode_string(c.s, pos, end, dst)
    else:
        copy_bytes(dst, c.s + pos + 1, length)
    text_done(s, length)
    if value:
        if commit(c, s):
            return -1
    else:
        s.length += 1
    return end


cdef int avro_bytes(jctx *c, int32_t op, const uint8_t *p, int64_t n) noexcept nogil:
    """Decode the ``n`` Avro bytes at ``p`` by op ``op`` of the Avro program into the builders."""
    cdef const uint8_t *q
    c.actx.msg = p
    q = pc_arun(&c.actx, c.pl, op, p, p + n)
    if q == NULL:
        if c.actx.code == -1:
            c.code = NOMEM
            return -1
        return <int> bug(c, c.actx.code, c.actx.detail)
    if q != p + n:
        return <int> bug(c, defs.AVRO_TRAILING_BYTES, (p + n) - q)
    return 0


cdef int64_t bridge(jctx *c, const jnode *nd, int64_t pos) noexcept nogil:
    """A node without a shortcut: transcode it to Avro bytes, then decode them by its op."""
    cdef int64_t start = c.out.len
    pos = value(c, nd, pos)
    if pos < 0 or avro_bytes(c, nd.aop, c.out.p + start, c.out.len - start):
        return -1
    c.out.len = start
    return pos


cdef inline bint same_bytes(const uint8_t *a, const uint8_t *b, int64_t n) noexcept nogil:
    """``a[:n] == b[:n]``, for short keys without a libc call (overlapping word loads)."""
    cdef uint64_t x, y, x2, y2
    cdef uint32_t u, v, u2, v2
    cdef uint16_t h, k, h2, k2
    if n > 16:
        return memcmp(a, b, <size_t> n) == 0
    if n >= 8:
        memcpy(&x, a, 8)
        memcpy(&y, b, 8)
        memcpy(&x2, a + n - 8, 8)
        memcpy(&y2, b + n - 8, 8)
        return ((x ^ y) | (x2 ^ y2)) == 0
    if n >= 4:
        memcpy(&u, a, 4)
        memcpy(&v, b, 4)
        memcpy(&u2, a + n - 4, 4)
        memcpy(&v2, b + n - 4, 4)
        return ((u ^ v) | (u2 ^ v2)) == 0
    if n >= 2:
        memcpy(&h, a, 2)
        memcpy(&k, b, 2)
        memcpy(&h2, a + n - 2, 2)
        memcpy(&k2, b + n - 2, 2)
        return ((h ^ k) | (h2 ^ k2)) == 0
    return n == 0 or a[0] == b[0]


cdef inline int64_t close_list(jctx *c, pc_slot *s, int64_t items) noexcept nogil:
    """End a list or map element of ``s`` whose child columns now hold ``items`` elements."""
    if items > 2147483647:
        return bug(c, defs.AVRO_OUTPUT_TOO_LARGE, items)
    if grow(c, &s.b1, (s.length + 2) * 4):
        return -1
    (<int32_t *> s.b1.p)[s.length + 1] = <int32_t> items
    return commit(c, s)


cdef int64_t d_array(jctx *c, const jnode *nd, int64_t pos) noexcept nogil:
    cdef pc_slot *s = &c.S[nd.slot]
    cdef const jnode *child = &c.nodes[nd.child]
    cdef bint more = True
    if expect(c, pos, 4) or enter(c, pos):
        return -1
    pos = ws(c, pos + 1)
    if pos < 0:
        return -1
    if c.s[pos] == 0x5D:
        pos += 1
    else:
        while more:
            pos = d_leaf(c, child, pos) if child.leaf else d_value(c, child, pos)
            if pos < 0:
                return -1
            pos = next_item(c, pos, 0x5D, &more)
            if pos < 0:
                return -1
    if close_list(c, s, c.S[s.child[0]].length):
        return -1
    c.depth -= 1
    return pos


cdef int64_t d_map(jctx *c, const jnode *nd, int64_t pos) noexcept nogil:
    cdef pc_slot *s = &c.S[nd.slot]
    cdef pc_slot *keys = &c.S[nd.aux]
    cdef const jnode *child = &c.nodes[nd.child]
    cdef bint more = True
    if expect(c, pos, 5) or enter(c, pos):
        return -1
    pos = ws(c, pos + 1)
    if pos < 0:
        return -1
    if c.s[pos] == 0x7D:
        pos += 1
    else:
        while more:
            if c.s[pos] != 0x22:
                return unexpected(c, pos)
            pos = add_string(c, keys, pos, False)
            if pos < 0:
                return -1
            pos = ws(c, pos)
            if pos < 0:
                return -1
            if c.s[pos] != 0x3A:
                return unexpected(c, pos)
            pos = ws(c, pos + 1)
            if pos < 0:
                return -1
            pos = d_leaf(c, child, pos) if child.leaf else d_value(c, child, pos)
            if pos < 0:
                return -1
            pos = next_item(c, pos, 0x7D, &more)
            if pos < 0:
                return -1
    if close_list(c, s, c.S[s.child[1]].length):
        return -1
    c.depth -= 1
    return pos


cdef inline bint is_seen(int64_t *marks, uint64_t seen, int32_t i) noexcept nogil:
    return marks[i] != 0 if marks != NULL else (seen >> i) & 1


cdef int64_t d_record(jctx *c, const jnode *nd, int64_t pos) noexcept nogil:
    """An object into its struct column; twin: _Row.record then the Avro record op. Keys in schema
    order are matched byte for byte against the expected name; a key that repeats cuts its column
    back to this object's start before its later value is read (the last value wins)."""
    cdef pc_slot *rec = &c.S[nd.slot]
    cdef int64_t parent = rec.length  # elements of each field's column before this object
    cdef int64_t base_ints = c.nints, extras, nextra = 0, key_start, key_end, length, i, total, at, close_at
    cdef int32_t nf = nd.nfields, field, expected = 0
    cdef uint64_t seen = 0
    cdef int64_t *marks = NULL  # more than 64 fields: one flag each on the int stack
    cdef int64_t marks_at = -1
    cdef bint more = True, ordered = True, present
    cdef const uint8_t *text
    cdef const jfield *fs = &c.fields[nd.first]
    cdef const jfield *f
    cdef const jnode *child
    if expect(c, pos, 5) or enter(c, pos):
        return -1
    if nf > 64:
        marks_at = push_ints(c, nf)
        if marks_at < 0:
            return -1
        for i in range(nf):
            c.ints[marks_at + i] = 0
    extras = c.nints
    pos = ws(c, pos + 1)
    if pos < 0:
        return -1
    if c.s[pos] == 0x7D:
        pos += 1
    else:
        while more:
            if c.s[pos] != 0x22:
                return unexpected(c, pos)
            key_start = pos
            field = -1
            f = fs + expected
            if (expected < nf and f.fast and pos + f.name_len + 3 <= c.n
                    and same_bytes(c.s + pos, c.blob + f.key_off, f.name_len + 3)):
                # the expected key, unescaped, and its colon right after it
                field = expected
                pos = ws(c, pos + f.name_len + 3)
                if pos < 0:
                    return -1
            else:
                key_end = read_string(c, pos, &text, &length)
                if key_end < 0:
                    return -1
                field = find_field(c, nd, text, length, expected if expected < nf else 0)
                pos = ws(c, key_end)
                if pos < 0:
                    return -1
                if c.s[pos] != 0x3A:
                    return unexpected(c, pos)
                pos = ws(c, pos + 1)
                if pos < 0:
                    return -1
            if field < 0:
                pos = skip(c, pos)
                if pos < 0:
                    return -1
                if nd.keep_extra:
                    # the int stack's top is this object's extras: inner objects have popped theirs
                    at = push_ints(c, 2)
                    if at < 0:
                        return -1
                    c.ints[at] = key_start  # the member's bytes, key to value, as in the payload
                    c.ints[at + 1] = pos
                    nextra += 1
            else:
                if ordered and field == expected:
                    expected += 1
                else:
                    if marks_at >= 0:
                        marks = c.ints + marks_at  # the stack may have moved
                    if ordered:  # the first key out of order: the fields before it came in order
                        ordered = False
                        for i in range(expected):
                            if marks != NULL:
                                marks[i] = 1
                            else:
                                seen |= (<uint64_t> 1) << i
                    if is_seen(marks, seen, field):
                        pc_avro_truncate(c.S, fs[field].slot, parent)
                    if marks != NULL:
                        marks[field] = 1
                    else:
                        seen |= (<uint64_t> 1) << field
                child = &c.nodes[fs[field].child]
                pos = d_leaf(c, child, pos) if child.leaf else d_value(c, child, pos)
                if pos < 0:
                    return -1
            pos = next_item(c, pos, 0x7D, &more)
            if pos < 0:
                return -1
    close_at = pos - 1
    if not ordered or expected < nf:  # some property is absent
        if marks_at >= 0:
            marks = c.ints + marks_at
        for i in range(nf):
            present = i < expected if ordered else is_seen(marks, seen, <int32_t> i)
            if not present and fs[i].miss_len < 0:
                return fail(c, defs.JSON_MISSING_REQUIRED, close_at, i)
        for i in range(nf):
            present = i < expected if ordered else is_seen(marks, seen, <int32_t> i)
            if not present and avro_bytes(c, fs[i].aop, c.blob + fs[i].miss_off, fs[i].miss_len):
                return -1
    if nd.keep_extra:
        # the extra column's Avro bytes, as record() writes them, through its op
        c.tmp.len = 0
        if nextra == 0:
            if put_bytes(c, &c.tmp, <const uint8_t *> b"\x00", 1):
                return -1
        else:
            total = 1 + nextra  # braces and commas
            for i in range(nextra):
                total += c.ints[extras + 2 * i + 1] - c.ints[extras + 2 * i]
            if put_bytes(c, &c.tmp, <const uint8_t *> b"\x02", 1) or put_varint(c, &c.tmp, (<uint64_t> total) << 1):
                return -1
            if reserve(c, &c.tmp, total):
                return -1
            c.tmp.p[c.tmp.len] = 0x7B
            c.tmp.len += 1
            for i in range(nextra):
                if i:
                    c.tmp.p[c.tmp.len] = 0x2C
                    c.tmp.len += 1
                length = c.ints[extras + 2 * i + 1] - c.ints[extras + 2 * i]
                memcpy(c.tmp.p + c.tmp.len, c.s + c.ints[extras + 2 * i], <size_t> length)
                c.tmp.len += length
            c.tmp.p[c.tmp.len] = 0x7D
            c.tmp.len += 1
        if avro_bytes(c, nd.aux, c.tmp.p, c.tmp.len):
            return -1
    c.nints = base_ints
    if commit(c, rec):
        return -1
    c.depth -= 1
    return pos


cdef inline int64_t null_branch(jctx *c, const jnode *nd, int64_t pos) noexcept nogil:
    """The null of a J_NULLABLE node (its first byte is ``n``): the null branch's op, then the literal."""
    if nd.aux2 >= 0:
        if pc_null_fill(c.S, nd.aux2):
            c.code = NOMEM
            return -1
    elif avro_bytes(c, nd.aux, c.blob, 0):
        return -1
    return literal(c, pos, "null", 4)


cdef inline int64_t d_leaf(jctx *c, const jnode *nd, int64_t pos) noexcept nogil:
    """d_value of a leaf node (nd.leaf): inlined where objects, arrays and maps read their items, so
    a scalar costs no call of the recursive d_value."""
    cdef pc_slot *s
    cdef int32_t op
    cdef jnum v
    cdef int64_t end, x
    cdef uint8_t *dst
    if nd.op == defs.J_NULLABLE:
        if c.s[pos] == 0x6E:
            return null_branch(c, nd, pos)
        nd = &c.nodes[nd.child]
    op = nd.op
    s = &c.S[nd.slot]
    if op == defs.J_STRING:
        if expect(c, pos, 3):
            return -1
        return add_string(c, s, pos, True)
    if number_op(op):
        end = number_value(c, nd, pos, &v)
        if end < 0:
            return -1
        if nd.acode == defs.O_LONG or nd.acode == defs.O_TIME_US:  # (a time's range: checked by number_value)
            if add_i64(c, s, v.i):
                return -1
        elif nd.acode == defs.O_INT or nd.acode == defs.O_TIME_MS:
            if add_i32(c, s, v.i):
                return -1
        elif nd.acode == defs.O_DOUBLE:
            if add_f64(c, s, v.d):
                return -1
        elif add_f32(c, s, v.f):
            return -1
        return end
    if op == defs.J_TIMESTAMP or op == defs.J_DATE or op == defs.J_TIME:
        end = format_value(c, nd, pos, &x)
        if end < 0:
            return -1
        if nd.acode == defs.O_LONG or nd.acode == defs.O_TIME_US:  # (J_TIME: HH:MM:SS is within the day)
            if add_i64(c, s, x):
                return -1
        elif add_i32(c, s, x):
            return -1
        return end
    if op == defs.J_BOOL:
        if expect(c, pos, 1):
            return -1
        if c.s[pos] == 0x74:
            if add_byte(c, s, 1):
                return -1
            return literal(c, pos, "true", 4)
        if add_byte(c, s, 0):
            return -1
        return literal(c, pos, "false", 5)
    if op == defs.J_ENUM:
        end = enum_index(c, nd, pos, &x)
        if end < 0 or add_i32(c, s, x):
            return -1
        return end
    # J_TEXT
    end = skip(c, pos)
    if end < 0 or text_room(c, s, end - pos, &dst):
        return -1
    memcpy(dst, c.s + pos, <size_t> (end - pos))
    text_done(s, end - pos)
    if commit(c, s):
        return -1
    return end


cdef int64_t d_value(jctx *c, const jnode *nd, int64_t pos) noexcept nogil:
    """Parse the value at ``pos`` by node ``nd`` into the builders; its end, or -1."""
    if nd.leaf:
        return d_leaf(c, nd, pos)
    if not nd.direct:
        return bridge(c, nd, pos)
    if nd.op == defs.J_NULLABLE:
        if c.s[pos] == 0x6E:
            return null_branch(c, nd, pos)
        return d_value(c, &c.nodes[nd.child], pos)
    if nd.op == defs.J_OBJECT:
        return d_record(c, nd, pos)
    if nd.op == defs.J_ARRAY:
        return d_array(c, nd, pos)
    return d_map(c, nd, pos)


cdef int64_t d_top(jctx *c, const jnode *root, int32_t wrap) noexcept nogil:
    """One payload into the builders (``wrap`` >= 0: the row struct of a non-record reader); 0 or -1."""
    cdef int64_t pos = ws(c, 0)
    if pos < 0:
        return -1
    pos = d_value(c, root, pos)
    if pos < 0:
        return -1
    while pos < c.n:
        if c.s[pos] == 0x20 or c.s[pos] == 0x0A or c.s[pos] == 0x0D or c.s[pos] == 0x09:
            pos += 1
        else:
            return unexpected(c, pos)
    if wrap >= 0 and commit(c, &c.S[wrap]):
        return -1
    return 0


# -- Python-level: programs, the batch driver --------------------------------------------------------

_SCALARS = frozenset((defs.J_NULL, defs.J_BOOL, defs.J_INT, defs.J_LONG, defs.J_FLOAT, defs.J_DOUBLE, defs.J_STRING,
                      defs.J_BYTES_B64, defs.J_TIMESTAMP, defs.J_DATE, defs.J_TIME, defs.J_TEXT, defs.J_TIME_MILLIS,
                      defs.J_TIME_MICROS))


# (node op, Avro op code) pairs that decode() appends to the builders as it parses
_DIRECT_LEAVES = frozenset((
    (defs.J_LONG, defs.O_LONG), (defs.J_INT, defs.O_INT), (defs.J_DOUBLE, defs.O_DOUBLE),
    (defs.J_FLOAT, defs.O_FLOAT), (defs.J_STRING, defs.O_STRING), (defs.J_TEXT, defs.O_STRING),
    (defs.J_BOOL, defs.O_BOOL), (defs.J_TIMESTAMP, defs.O_LONG), (defs.J_TIME, defs.O_LONG),
    (defs.J_DATE, defs.O_INT), (defs.J_ENUM, defs.O_ENUM), (defs.J_TIME, defs.O_TIME_US),
    (defs.J_TIME_MILLIS, defs.O_TIME_MS), (defs.J_TIME_MICROS, defs.O_TIME_US),
))


def _fast_name(name):
    """Whether a payload key equal to ``name`` is always its UTF-8 bytes, unescaped and well-formed."""
    return all(0x20 <= ord(ch) and ch != '"' and ch != "\\" and not 0xD800 <= ord(ch) < 0xE000 for ch in name)


cdef class Program:
    """A transcode program tree flattened into C structs once (nodes as in ``json_py``).

    ``avro``: the Avro program ``(ops, kids)`` of the program's shadow schema read as itself (see
    ``formats/avro/plan.py``), which :func:`decode` needs: each node is bound to its op there, and
    nodes whose op has a shortcut are appended to the column builders as they are parsed.
    """

    cdef jnode *nodes
    cdef jfield *fields
    cdef bytes blob
    cdef readonly object tree
    cdef bint bound
    cdef int32_t wrap      # the row struct's slot of a non-record reader, -1 for a record reader
    cdef int64_t max_slot  # the highest slot the bound nodes name

    def __init__(self, tree, avro=None):
        nodes = []   # [op, child, nfields, first, keep_extra, size, aop, acode, slot, direct, aux, aux2]
        fields = []  # [name_off, name_len, miss_off, miss_len, child, aop, slot, fast, key_off]
        blob = bytearray()
        if avro is not None and not (isinstance(avro, tuple) and len(avro) == 2):
            raise ValueError("avro is the Avro program (ops, kids)")
        ops, kids = avro if avro is not None else ((), ())
        slots = [-1]

        def stash(data):
            at = len(blob)
            blob.extend(data)
            return at, len(data)

        def op_at(i):
            return ops[i] if 0 <= i < len(ops) else None

        def kid(a, k):
            return kids[a[2] + k] if 0 <= a[2] + k < len(kids) and k < a[3] else -1

        def field_slot(i):
            """The one slot op ``i`` writes an element of (a nullable's branches share it), or -1."""
            a = op_at(i)
            if a is None:
                return -1
            if a[0] == defs.O_UNION:
                branches = {op_at(kid(a, k))[1] if op_at(kid(a, k)) is not None else -1 for k in range(a[3])}
                return branches.pop() if len(branches) == 1 else -1
            return a[1]

        def add(node, depth, aop):
            # same checks and messages as json_py._check
            if depth > defs.JSON_MAX_DEPTH:
                raise ValueError(f"transcode program nested deeper than {defs.JSON_MAX_DEPTH} nodes")
            if not isinstance(node, tuple) or not node or type(node[0]) is not int:
                raise ValueError(f"a transcode program node is a tuple starting with its op, not {node!r}")
            op = node[0]
            index = len(nodes)
            a = op_at(aop)
            acode = a[0] if a is not None else -1
            entry = [op, 0, 0, 0, 0, 0, aop if a is not None else -1, acode, a[1] if a is not None else -1, 0, -1, -1]
            nodes.append(entry)
            if op in _SCALARS:
                if len(node) != 1:
                    raise ValueError(f"node {op} takes no arguments: {node!r}")
                entry[9] = int((op, acode) in _DIRECT_LEAVES)
            elif op == defs.J_FIXED_B64:
                if len(node) != 2 or type(node[1]) is not int or node[1] < 0:
                    raise ValueError(f"J_FIXED_B64 needs a size >= 0: {node!r}")
                entry[5] = node[1]
            elif op == defs.J_ENUM:
                if len(node) != 2 or not isinstance(node[1], tuple) or not all(isinstance(s, str) for s in node[1]):
                    raise ValueError(f"J_ENUM needs a tuple of symbols: {node!r}")
                if len(set(node[1])) != len(node[1]):
                    raise ValueError(f"J_ENUM symbols repeat: {node!r}")
                entry[2], entry[3] = len(node[1]), len(fields)
                for symbol in node[1]:
                    fields.append([*stash(symbol.encode("utf-8", "surrogatepass")), 0, -1, 0, -1, -1, 0, 0])
                entry[9] = int(acode == defs.O_ENUM and a[6] is None and a[4] == len(node[1]))
            elif op in (defs.J_NULLABLE, defs.J_ARRAY, defs.J_MAP):
                if len(node) != 2:
                    raise ValueError(f"node {op} needs one child: {node!r}")
                child_op = -1
                if op == defs.J_NULLABLE and acode == defs.O_UNION and a[3] == 2 and a[4] == 2:
                    null_op, child_op = kid(a, 0), kid(a, 1)
                    if op_at(null_op) is not None and op_at(child_op) is not None and all(
                        op_at(k)[0] != defs.O_BRANCH_ERR for k in (null_op, child_op)
                    ):
                        entry[9], entry[10] = 1, null_op
                        entry[11] = op_at(null_op)[1] if op_at(null_op)[0] == defs.O_NULLFILL else -1
                elif op == defs.J_ARRAY and acode == defs.O_ARRAY and a[4] > 0 and a[1] >= 0:
                    child_op = kid(a, 0)
                    entry[9] = 1
                elif op == defs.J_MAP and acode == defs.O_MAP and a[4] > 0 and a[1] >= 0 and a[5] >= 0:
                    child_op = kid(a, 0)
                    entry[9], entry[10] = 1, a[5]
                entry[1] = add(node[1], depth + 1, child_op if entry[9] else -1)
            elif op == defs.J_OBJECT:
                if len(node) != 3 or not isinstance(node[1], tuple) or type(node[2]) is not bool:
                    raise ValueError(f"J_OBJECT needs (fields, keep_extra): {node!r}")
                first = len(fields)
                nf = len(node[1])
                entry[2], entry[3], entry[4] = nf, first, int(node[2])
                field_ops = [-1] * nf
                if acode == defs.O_RECORD and a[3] == nf + int(node[2]) and a[1] >= 0:
                    field_ops = [kid(a, k) for k in range(nf)]
                    if all(field_slot(k) >= 0 for k in field_ops):
                        entry[9] = 1
                        entry[10] = kid(a, nf) if node[2] else -1
                    else:
                        field_ops = [-1] * nf
                names = set()
                for k, field in enumerate(node[1]):  # reserve the field slots first: children append their own
                    if not (isinstance(field, tuple) and len(field) == 3 and isinstance(field[0], str)):
                        raise ValueError(f"a J_OBJECT field is (name, child, missing): {field!r}")
                    if field[2] is not None and not isinstance(field[2], bytes):
                        raise ValueError(f"a field's missing value is bytes or None: {field!r}")
                    if field[0] in names:
                        raise ValueError(f"J_OBJECT field {field[0]!r} repeats")
                    names.add(field[0])
                    miss = (0, -1) if field[2] is None else stash(field[2])
                    fast = _fast_name(field[0])
                    pattern = stash(b'"' + field[0].encode("utf-8") + b'":')[0] if fast else 0
                    name = stash(field[0].encode("utf-8", "surrogatepass"))
                    fields.append([*name, *miss, 0, field_ops[k], field_slot(field_ops[k]), int(fast), pattern])
                for k, field in enumerate(node[1]):
                    fields[first + k][4] = add(field[1], depth + 1, field_ops[k])
            else:
                raise ValueError(f"unknown transcode op {op!r}")
            if entry[9]:
                slots.extend((entry[8], entry[10] if op == defs.J_MAP else -1, entry[11]))
            return index

        self.wrap = -1
        root_op = -1
        if avro is not None:
            top = op_at(0)
            if top is None:
                raise ValueError("the Avro program has no ops")
            root_op = 0
            if tree[:1] != (defs.J_OBJECT,) and top[0] == defs.O_RECORD and top[3] == 1:
                root_op = kid(top, 0)  # a non-record reader: its value in the row struct
                self.wrap = top[1]
                slots.append(top[1])
        add(tree, 1, root_op)
        self.tree = tree
        self.bound = avro is not None
        self.max_slot = max(slots + [f[6] for f in fields])
        self.blob = bytes(blob)
        self.nodes = <jnode *> malloc(len(nodes) * sizeof(jnode))
        self.fields = <jfield *> malloc(max(len(fields), 1) * sizeof(jfield))
        if self.nodes == NULL or self.fields == NULL:
            raise MemoryError()
        scalar = [entry[9] and entry[0] in _SCALARS | {defs.J_ENUM} for entry in nodes]
        for i, (op, child, nfields, first, keep_extra, size, aop, acode, slot, direct, aux, aux2) in enumerate(nodes):
            self.nodes[i].leaf = scalar[i] or (direct and op == defs.J_NULLABLE and scalar[child])
            self.nodes[i].op = op
            self.nodes[i].child = child
            self.nodes[i].nfields = nfields
            self.nodes[i].first = first
            self.nodes[i].keep_extra = keep_extra
            self.nodes[i].size = size
            self.nodes[i].aop = aop
            self.nodes[i].acode = acode
            self.nodes[i].slot = slot
            self.nodes[i].direct = direct
            self.nodes[i].aux = aux
            self.nodes[i].aux2 = aux2
        for i, (name_off, name_len, miss_off, miss_len, child, aop, slot, fast, key_off) in enumerate(fields):
            self.fields[i].name_off = name_off
            self.fields[i].name_len = name_len
            self.fields[i].miss_off = miss_off
            self.fields[i].miss_len = miss_len
            self.fields[i].child = child
            self.fields[i].aop = aop
            self.fields[i].slot = slot
            self.fields[i].fast = fast
            self.fields[i].key_off = key_off

    def __dealloc__(self):
        free(self.nodes)
        free(self.fields)


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


cdef int transcode_loop(jctx *c, const uint8_t *buf, const int64_t *starts, const int64_t *ends,
                        const uint8_t *present, int64_t n, bint keep_going, int64_t *offsets, uint8_t *valid,
                        pc_error **errs, int64_t *nerrs, int64_t *cap_errs) noexcept nogil:
    """Every row; twin: json_py.transcode. 0, or -1 when memory ran out."""
    cdef int64_t i, k, row_start
    cdef pc_error *grown
    offsets[0] = 0
    for i in range(n):
        row_start = c.out.len
        if present != NULL and not present[i]:
            valid[i] = 0
            offsets[i + 1] = row_start
            continue
        c.s = buf + starts[i]
        c.n = ends[i] - starts[i]
        c.depth = 0
        c.nints = 0
        c.code = 0
        if top(c) == 0:
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
    """Transcode every JSON payload to its Avro binary form; same contract as ``json_py.transcode``."""
    cdef Program prog = program
    cdef const uint8_t[::1] buf = memoryview(data).cast("B") if len(memoryview(data)) else b"\0"
    cdef const int64_t[::1] first = np.ascontiguousarray(starts, dtype=np.int64)
    cdef const int64_t[::1] last = np.ascontiguousarray(ends, dtype=np.int64)
    cdef int64_t n = first.shape[0], i, nerrs = 0, cap_errs = 0, size = buf.shape[0]
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
    cdef jctx c
    cdef pc_error *errs = NULL
    cdef int rc = 0
    memset(&c, 0, sizeof(jctx))
    c.nodes = prog.nodes
    c.fields = prog.fields
    c.blob = <const uint8_t *> (<bytes> prog.blob)
    c.out.cap = size + 16 * n + 64
    c.out.p = <uint8_t *> malloc(<size_t> c.out.cap)
    if c.out.p == NULL:
        raise MemoryError()
    try:
        offsets[0] = 0
        if n > 0:
            with nogil:
                rc = transcode_loop(&c, &buf[0], &first[0], &last[0], present, n, go_on, &offsets[0], &valid[0],
                                    &errs, &nerrs, &cap_errs)
        if rc:
            raise MemoryError("out of memory transcoding JSON")
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
        free(c.scratch.p)
        free(c.ints)
        free(errs)
    valid_arr = valid_arr[:n]
    return errors, out, offsets_arr, (None if valid_arr.all() else valid_arr)


cdef int decode_loop(jctx *c, const jnode *root, int32_t wrap, const uint8_t *buf, const int64_t *starts,
                     const int64_t *ends, const uint8_t *present, int64_t n, int64_t row0, bint keep_going,
                     pc_error **errs, int64_t *nerrs, int64_t *cap_errs) noexcept nogil:
    """Every row of one segment into the builders; twin: json_py.decode. 0: done, 1: stopped at a
    bad row, 2: the builders refused a value (c.bug_*), -1: out of memory. A message over the
    builders' limit of items of no size is a bad row (JSON_TOO_MANY_EMPTY_ITEMS)."""
    cdef int64_t i, r
    cdef pc_error *grown
    for i in range(n):
        if present != NULL and not present[i]:
            if pc_null_fill(c.S, 0):
                return -1
            continue
        r = c.S[0].length
        c.s = buf + starts[i]
        c.n = ends[i] - starts[i]
        c.depth = 0
        c.nints = 0
        c.code = 0
        c.out.len = 0
        c.actx.budget = defs.ZERO_SIZE_ITEM_LIMIT
        if d_top(c, root, wrap) == 0:
            continue
        if c.code == NOMEM:
            return -1
        if c.code == AVRO_BUG:
            if c.bug_code != defs.AVRO_TOO_MANY_EMPTY_ITEMS:
                c.offset = row0 + i  # the row, for the report
                return 2
            # more items of no size than the builders take in one message: bad data, not a bug. The
            # pure twin transcodes the whole message before the builders count its items, so a
            # syntax or schema error further on is this row's error there: transcode it to find one.
            c.depth = 0
            c.nints = 0
            c.code = 0
            c.out.len = 0
            if top(c) == 0:
                c.code = defs.JSON_TOO_MANY_EMPTY_ITEMS
                c.offset = 0  # where the builders gave up is not known in the payload
                c.detail = defs.ZERO_SIZE_ITEM_LIMIT
            elif c.code == NOMEM:
                return -1
        pc_avro_truncate(c.S, 0, r)
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
    """Parse every JSON payload of ``segments`` into the Avro column builders of ``layout``; same
    contract as ``json_py.decode``."""
    cdef Program prog = program
    cdef AvroLayout lay = layout
    cdef AvroProgram aprog = avro_program
    cdef const uint8_t[::1] buf
    cdef const int64_t[::1] first
    cdef const int64_t[::1] last
    cdef const uint8_t[::1] present_view
    cdef const uint8_t *present
    cdef int64_t n, i, size, total = 0, row0 = 0, nerrs = 0, cap_errs = 0
    cdef bint go_on = bool(keep_going)
    cdef int rc = 0
    cdef jctx c
    cdef pc_error *errs = NULL
    cdef pc_slot *S = NULL
    if not prog.bound:
        raise ValueError("decode needs a Program made with its Avro program (avro=)")
    if prog.max_slot >= lay.nslots:
        raise ValueError("the Avro program of this Program does not fit the layout")
    memset(&c, 0, sizeof(jctx))
    c.nodes = prog.nodes
    c.fields = prog.fields
    c.blob = <const uint8_t *> (<bytes> prog.blob)
    c.pl = &aprog.plan
    bug = None
    try:
        S = _new_slots(lay)
        c.S = S
        c.actx.slots = S
        prepared, total = prepare(segments, True)  # per-row starts, bounds checked: the loop trusts them
        _reserve_all(S, lay.nslots, total if total > 16 else 16, hints)
        c.out.cap = 256
        c.out.p = <uint8_t *> malloc(<size_t> c.out.cap)
        if c.out.p == NULL:
            raise MemoryError()
        for view, st, en, _, n, _, valid in prepared:
            if n == 0:
                continue
            buf = view
            first = st
            last = en
            present = NULL
            if valid is not None:
                present_view = valid
                present = &present_view[0]
            with nogil:
                rc = decode_loop(&c, &prog.nodes[0], prog.wrap, &buf[0], &first[0], &last[0], present, n, row0,
                                 go_on, &errs, &nerrs, &cap_errs)
            if rc == -1:
                raise MemoryError("out of memory decoding JSON")
            if rc == 2:
                bug = (c.bug_code, c.offset, 0, c.bug_detail)
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
        free(c.scratch.p)
        free(c.ints)
        free(errs)
    return errors, outputs, bug
