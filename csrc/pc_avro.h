/* Avro batch decoder: interprets the flat decode program of pulsar_codec.formats.avro.plan over a batch of
 * schemaless Avro bodies and appends to column builders (validity bytes, values/offsets, data).
 * Plain C11, no Python.h; driven by _kernels/avro_c.pyx with the GIL released.
 * Pure twin: src/pulsar_codec/_kernels/avro_py.py (same ops, same error codes, offsets and details).
 *
 * Builders: every slot keeps `length` committed elements. A container element (record, array, map,
 * union entry) is committed only after all its children are, so after a failed record every slot
 * holds complete elements plus, possibly, trailing partial ones that pc_avro_truncate removes.
 *
 * Allocation safety: before any reserve driven by the input, a length is checked against the bytes
 * left (`n > end - p`), and a block count against the bytes left divided by the smallest encoding
 * of one item; items of size zero draw on a per-message budget (PC_ZERO_SIZE_ITEM_LIMIT). */
#ifndef PC_AVRO_H
#define PC_AVRO_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pc_defs.h"
#include "pc_status.h"

#if defined(__GNUC__)
#define PC_LIKELY(x) __builtin_expect(!!(x), 1)
#define PC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define PC_LIKELY(x) (x)
#define PC_UNLIKELY(x) (x)
#endif

typedef struct pc_abuf {
    uint8_t *p;
    int64_t cap;  /* bytes */
    void *owner;  /* set by a grow hook that allocates elsewhere (the Cython driver: pyarrow's pool) */
} pc_abuf;

/* Optional allocator: when set, every builder buffer grows through it (to capacity `cap`, contents
 * kept) instead of realloc. Returns 0, or -1 when out of memory. */
typedef int (*pc_grow_fn)(pc_abuf *b, int64_t cap);
static pc_grow_fn pc_grow_hook = NULL;

typedef struct {
    int32_t kind, nullable, width, nchild, null_branch;
    int32_t vactive; /* validity bytes are kept only from the first null on */
    int32_t *child;
    int64_t length;
    pc_abuf valid; /* one byte per element */
    pc_abuf b1;    /* values | int32 offsets (length + 1) | int8 union type ids */
    pc_abuf b2;    /* string data | int32 union offsets */
    int64_t dlen;  /* bytes used in b2 for K_BIN */
    int64_t *committed; /* K_UNION: committed length of each child */
} pc_slot;

typedef struct {
    int32_t code, slot, first, count;
    int64_t arg, arg2;
    const int32_t *table;
    const uint8_t *cst;
    int64_t ncst;
} pc_op;

typedef struct {
    const pc_op *ops;
    const int32_t *kids;
} pc_plan;

typedef struct {
    pc_slot *slots;
    int64_t budget;
    const uint8_t *msg; /* start of the current payload, for error offsets */
    int32_t code;       /* -1: out of memory */
    int64_t offset, detail;
} pc_actx;

static inline int pc_grow(pc_abuf *b, int64_t need)
{
    int64_t cap = b->cap ? b->cap : 64;
    uint8_t *q;
    while (cap < need) cap *= 2;
    if (pc_grow_hook != NULL) return pc_grow_hook(b, cap);
    q = (uint8_t *)realloc(b->p, (size_t)cap);
    if (q == NULL) return -1;
    b->p = q;
    b->cap = cap;
    return 0;
}

#define PC_FAIL(code_, at, detail_) return pc_afail(c, (code_), (at), (detail_))
#define PC_RESERVE(b, need)                                                         \
    do {                                                                            \
        if (PC_UNLIKELY((int64_t)(need) > (b)->cap) && pc_grow((b), (int64_t)(need))) \
            return pc_aoom(c);                                                      \
    } while (0)

static const uint8_t *pc_afail(pc_actx *c, int32_t code, const uint8_t *at, int64_t detail)
{
    c->code = code;
    c->offset = at - c->msg;
    c->detail = detail;
    return NULL;
}

static const uint8_t *pc_aoom(pc_actx *c)
{
    c->code = -1;
    c->offset = 0;
    c->detail = 0;
    return NULL;
}

/* Slow path of a zigzag varint (first byte has its continuation bit set, or data ended). */
static const uint8_t *pc_avarint_slow(pc_actx *c, const uint8_t *p, const uint8_t *end, int64_t *out)
{
    const uint8_t *start = p;
    uint64_t acc = 0;
    int i;
    for (i = 0; i < 10; i++) {
        uint8_t b;
        if (p >= end) PC_FAIL(PC_AVRO_TRUNCATED, start, 1);
        b = *p++;
        acc |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = (int64_t)(acc >> 1) ^ -(int64_t)(acc & 1);
            return p;
        }
    }
    PC_FAIL(PC_AVRO_VARINT_TOO_LONG, start, 0);
}

/* With 10 or more bytes left no bounds check is needed inside the varint: decode inline. Varints of
 * up to 8 bytes (values below 2**56) are decoded without a branch per byte: find the last byte from
 * the continuation bits of one 8-byte load, then squeeze out the 7-bit groups in three steps
 * (varint lengths vary from value to value, so a byte loop mispredicts its exit). */
static inline const uint8_t *pc_avarint_fast(const uint8_t *p, int64_t *out)
{
    uint64_t acc = 0;
    int i;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w, stop;
    memcpy(&w, p, 8);
    stop = ~w & 0x8080808080808080ULL;
    if (PC_LIKELY(stop != 0)) {
        int nbits = __builtin_ctzll(stop) + 1; /* through the last byte's high bit */
        uint64_t x = nbits == 64 ? w : (w & ((1ULL << nbits) - 1));
        x = ((x & 0x7f007f007f007f00ULL) >> 1) | (x & 0x007f007f007f007fULL);
        x = ((x & 0x3fff00003fff0000ULL) >> 2) | (x & 0x00003fff00003fffULL);
        x = ((x & 0x0fffffff00000000ULL) >> 4) | (x & 0x000000000fffffffULL);
        *out = (int64_t)(x >> 1) ^ -(int64_t)(x & 1);
        return p + (nbits >> 3);
    }
#endif
    for (i = 0; i < 10; i++) {
        uint8_t b = p[i];
        acc |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = (int64_t)(acc >> 1) ^ -(int64_t)(acc & 1);
            return p + i + 1;
        }
    }
    return NULL;
}

#define PC_VARINT(v)                                                      \
    do {                                                                  \
        if (PC_LIKELY(p < end && *p < 0x80)) {                            \
            uint64_t u_ = *p++;                                           \
            (v) = (int64_t)(u_ >> 1) ^ -(int64_t)(u_ & 1);                \
        } else if (PC_LIKELY(end - p >= 10)) {                            \
            const uint8_t *q_ = pc_avarint_fast(p, &(v));                 \
            if (PC_UNLIKELY(q_ == NULL)) PC_FAIL(PC_AVRO_VARINT_TOO_LONG, p, 0); \
            p = q_;                                                       \
        } else {                                                          \
            p = pc_avarint_slow(c, p, end, &(v));                         \
            if (PC_UNLIKELY(p == NULL)) return NULL;                      \
        }                                                                 \
    } while (0)

/* Most strings are ASCII: OR the bytes word by word (the last word overlaps) before the full check. */
static inline int pc_ascii(const uint8_t *s, int64_t n)
{
    uint64_t acc = 0, w;
    int64_t i;
    if (n >= 8) {
        for (i = 0; i + 8 <= n; i += 8) {
            memcpy(&w, s + i, 8);
            acc |= w;
        }
        memcpy(&w, s + n - 8, 8);
        acc |= w;
        return !(acc & 0x8080808080808080ULL);
    }
    for (i = 0; i < n; i++) acc |= s[i];
    return !(acc & 0x80);
}

static inline int pc_utf8_valid(const uint8_t *s, int64_t n)
{
    int64_t i = 0;
    while (i < n) {
        uint8_t ch, c1;
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        ch = s[i];
        if (ch < 0x80) {
            i++;
        } else if (ch >= 0xC2 && ch <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
        } else if (ch >= 0xE0 && ch <= 0xEF) {
            if (i + 2 >= n) return 0;
            c1 = s[i + 1];
            if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
            if ((ch == 0xE0 && c1 < 0xA0) || (ch == 0xED && c1 > 0x9F)) return 0;
            i += 3;
        } else if (ch >= 0xF0 && ch <= 0xF4) {
            if (i + 3 >= n) return 0;
            c1 = s[i + 1];
            if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80) return 0;
            if ((ch == 0xF0 && c1 < 0x90) || (ch == 0xF4 && c1 > 0x8F)) return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* Big-endian two's complement (len bytes) -> little-endian `width` bytes; 0 when it does not fit. */
static inline int pc_decimal(const uint8_t *src, int64_t len, uint8_t *dst, int64_t width)
{
    uint8_t sign = (len > 0 && (src[0] & 0x80)) ? 0xFF : 0x00;
    int64_t i;
    if (len > width) {
        for (i = 0; i < len - width; i++)
            if (src[i] != sign) return 0;
        if ((uint8_t)((src[len - width] & 0x80) ? 0xFF : 0x00) != sign) return 0;
        src += len - width;
        len = width;
    }
    for (i = 0; i < len; i++) dst[i] = src[len - 1 - i];
    for (; i < width; i++) dst[i] = sign;
    return 1;
}

/* |v| < bound for a decimal's little-endian two's complement `v` and its positive bound 10**precision
 * (`bound`, from the plan), both `width` (16 or 32) bytes: the unscaled value has at most `precision`
 * digits, which Arrow's decimal arrays require. */
static inline int pc_decimal_below(const uint8_t *v, const uint8_t *bound, int64_t width)
{
    uint64_t a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0}, sign, carry;
    int64_t n = width / 8, i;
#if defined(__SIZEOF_INT128__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (width == 16) { /* decimal128: one branch-free magnitude and one compare */
        unsigned __int128 x, lim, neg;
        memcpy(&x, v, 16);
        memcpy(&lim, bound, 16);
        neg = (unsigned __int128)0 - (x >> 127);
        return ((x ^ neg) - neg) < lim;
    }
    memcpy(a, v, (size_t)width);
    memcpy(b, bound, (size_t)width);
#else
    for (i = 0; i < n; i++) {
        int64_t k;
        for (k = 7; k >= 0; k--) {
            a[i] = (a[i] << 8) | v[i * 8 + k];
            b[i] = (b[i] << 8) | bound[i * 8 + k];
        }
    }
#endif
    sign = (uint64_t)0 - (a[n - 1] >> 63); /* all ones when negative: take the magnitude */
    carry = sign & 1;
    for (i = 0; i < n; i++) {
        uint64_t t = (a[i] ^ sign) + carry;
        carry = t < carry;
        a[i] = t;
    }
    for (i = n - 1; i >= 0; i--)
        if (a[i] != b[i]) return a[i] < b[i];
    return 0;
}

/* The precision check of a decimal read from `len` bytes: values of so few bytes that their magnitude
 * (at most 2**(8 len - 1)) stays below 10**precision need no comparison, which is the common case
 * (8 len - 1 < precision * log2(10), with log2(10) rounded down so the shortcut is never wrong). */
static inline int pc_decimal_in_precision(const uint8_t *v, int64_t len, const pc_op *op, int64_t width)
{
    if (op->cst == NULL || (8 * len - 1) * 1000000 < op->arg2 * 3321928) return 1;
    return pc_decimal_below(v, op->cst, width);
}

/* Copy n bytes where n is usually small (names, map keys): overlapping fixed-size moves instead of a
 * libc call; never touches bytes outside [src, src + n) or [dst, dst + n). */
static inline void pc_copy(uint8_t *dst, const uint8_t *src, int64_t n)
{
    if (n > 16) {
        memcpy(dst, src, (size_t)n);
    } else if (n >= 8) {
        uint64_t a, b;
        memcpy(&a, src, 8);
        memcpy(&b, src + n - 8, 8);
        memcpy(dst, &a, 8);
        memcpy(dst + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, src, 4);
        memcpy(&b, src + n - 4, 4);
        memcpy(dst, &a, 4);
        memcpy(dst + n - 4, &b, 4);
    } else {
        int64_t i;
        for (i = 0; i < n; i++) dst[i] = src[i];
    }
}

static inline uint32_t pc_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

#define PC_VALID1(s)                                    \
    do {                                                \
        if ((s)->vactive) {                             \
            PC_RESERVE(&(s)->valid, (s)->length + 1);   \
            (s)->valid.p[(s)->length] = 1;              \
        }                                               \
    } while (0)

/* Append one null (a placeholder where the slot has no validity). Returns 0, or -1 out of memory. */
static int pc_null_fill(pc_slot *S, int32_t sid)
{
    pc_slot *s = S + sid;
    int64_t n = s->length;
    int32_t i;
    switch (s->kind) {
    case K_NULL:
    case K_STRUCT:
        if (s->kind == K_STRUCT)
            for (i = 0; i < s->nchild; i++)
                if (pc_null_fill(S, s->child[i])) return -1;
        break;
    case K_BIN:
    case K_LIST:
    case K_MAP: {
        int32_t v;
        if ((n + 2) * 4 > s->b1.cap && pc_grow(&s->b1, (n + 2) * 4)) return -1;
        v = s->kind == K_BIN ? (int32_t)s->dlen : (int32_t)S[s->child[0]].length;
        ((int32_t *)s->b1.p)[n + 1] = v;
        break;
    }
    case K_UNION: {
        int32_t k = s->null_branch;
        pc_slot *ch = S + s->child[k];
        int64_t off = ch->length;
        if (pc_null_fill(S, s->child[k])) return -1;
        if (n + 1 > s->b1.cap && pc_grow(&s->b1, n + 1)) return -1;
        if ((n + 1) * 4 > s->b2.cap && pc_grow(&s->b2, (n + 1) * 4)) return -1;
        ((int8_t *)s->b1.p)[n] = (int8_t)k;
        ((int32_t *)s->b2.p)[n] = (int32_t)off;
        s->committed[k] = off + 1;
        s->length = n + 1;
        return 0;
    }
    default:
        if ((n + 1) * s->width > s->b1.cap && pc_grow(&s->b1, (n + 1) * s->width)) return -1;
        memset(s->b1.p + n * s->width, 0, (size_t)s->width);
        break;
    }
    if (s->nullable) {
        if (n + 1 > s->valid.cap && pc_grow(&s->valid, n + 1)) return -1;
        if (!s->vactive) {
            /* first null of this slot: every earlier element was valid */
            memset(s->valid.p, 1, (size_t)n);
            s->vactive = 1;
        }
        s->valid.p[n] = 0;
    }
    s->length = n + 1;
    return 0;
}

/* Drop everything past the first n committed elements of slot sid and its children. */
static void pc_avro_truncate(pc_slot *S, int32_t sid, int64_t n)
{
    pc_slot *s = S + sid;
    int64_t i, m;
    int32_t k;
    switch (s->kind) {
    case K_UNION:
        for (i = s->length - 1; i >= n; i--) s->committed[((int8_t *)s->b1.p)[i]] = ((int32_t *)s->b2.p)[i];
        s->length = n;
        for (k = 0; k < s->nchild; k++) pc_avro_truncate(S, s->child[k], s->committed[k]);
        return;
    case K_BIN:
        s->length = n;
        s->dlen = ((int32_t *)s->b1.p)[n];
        return;
    case K_LIST:
    case K_MAP:
        s->length = n;
        m = ((int32_t *)s->b1.p)[n];
        for (k = 0; k < s->nchild; k++) pc_avro_truncate(S, s->child[k], m);
        return;
    case K_STRUCT:
        s->length = n;
        for (k = 0; k < s->nchild; k++) pc_avro_truncate(S, s->child[k], n);
        return;
    default:
        s->length = n;
    }
}

static const uint8_t *pc_arun(pc_actx *c, const pc_plan *pl, int32_t oi, const uint8_t *p, const uint8_t *end);

/* Bodies of the common leaf ops, shared by the dispatcher and the record loop. */
#define PC_LEAF_CASES                                                                          \
    case O_LONG: {                                                                             \
        int64_t v;                                                                             \
        pc_slot *s = S + op->slot;                                                             \
        PC_VARINT(v);                                                                          \
        PC_RESERVE(&s->b1, (s->length + 1) * 8);                                               \
        ((int64_t *)s->b1.p)[s->length] = v;                                                   \
        PC_VALID1(s);                                                                          \
        s->length++;                                                                           \
        break;                                                                                 \
    }                                                                                          \
    case O_INT:                                                                                \
    case O_INT_L: {                                                                            \
        int64_t v;                                                                             \
        const uint8_t *st = p;                                                                 \
        pc_slot *s = S + op->slot;                                                             \
        PC_VARINT(v);                                                                          \
        if (PC_UNLIKELY(v < INT32_MIN || v > INT32_MAX)) PC_FAIL(PC_AVRO_INT_OUT_OF_RANGE, st, v); \
        if (op->code == O_INT) {                                                               \
            PC_RESERVE(&s->b1, (s->length + 1) * 4);                                           \
            ((int32_t *)s->b1.p)[s->length] = (int32_t)v;                                      \
        } else {                                                                               \
            PC_RESERVE(&s->b1, (s->length + 1) * 8);                                           \
            ((int64_t *)s->b1.p)[s->length] = v;                                               \
        }                                                                                      \
        PC_VALID1(s);                                                                          \
        s->length++;                                                                           \
        break;                                                                                 \
    }                                                                                          \
    case O_TIME_MS:                                                                            \
    case O_TIME_US: { /* a time of day: 0 <= v < op->arg (see plan.py), else a bad row */      \
        int64_t v;                                                                             \
        const uint8_t *st = p;                                                                 \
        pc_slot *s = S + op->slot;                                                             \
        PC_VARINT(v);                                                                          \
        if (PC_UNLIKELY((uint64_t)v >= (uint64_t)op->arg)) {                                   \
            if (op->arg2 && (v < INT32_MIN || v > INT32_MAX)) PC_FAIL(PC_AVRO_INT_OUT_OF_RANGE, st, v);\
            PC_FAIL(PC_AVRO_TIME_OUT_OF_RANGE, st, v);                                         \
        }                                                                                      \
        if (op->code == O_TIME_MS) {                                                           \
            PC_RESERVE(&s->b1, (s->length + 1) * 4);                                           \
            ((int32_t *)s->b1.p)[s->length] = (int32_t)v;                                      \
        } else {                                                                               \
            PC_RESERVE(&s->b1, (s->length + 1) * 8);                                           \
            ((int64_t *)s->b1.p)[s->length] = v;                                               \
        }                                                                                      \
        PC_VALID1(s);                                                                          \
        s->length++;                                                                           \
        break;                                                                                 \
    }                                                                                          \
    case O_DOUBLE:                                                                             \
    case O_FLOAT: {                                                                            \
        pc_slot *s = S + op->slot;                                                             \
        int64_t w = op->code == O_DOUBLE ? 8 : 4;                                              \
        if (PC_UNLIKELY(end - p < w)) PC_FAIL(PC_AVRO_TRUNCATED, p, w - (end - p));            \
        PC_RESERVE(&s->b1, (s->length + 1) * w);                                               \
        memcpy(s->b1.p + s->length * w, p, (size_t)w);                                         \
        p += w;                                                                                \
        PC_VALID1(s);                                                                          \
        s->length++;                                                                           \
        break;                                                                                 \
    }                                                                                          \
    case O_BOOL: {                                                                             \
        pc_slot *s = S + op->slot;                                                             \
        if (PC_UNLIKELY(p >= end)) PC_FAIL(PC_AVRO_TRUNCATED, p, 1);                           \
        if (PC_UNLIKELY(*p > 1)) PC_FAIL(PC_AVRO_BAD_BOOLEAN, p, *p);                          \
        PC_RESERVE(&s->b1, s->length + 1);                                                     \
        s->b1.p[s->length] = *p++;                                                             \
        PC_VALID1(s);                                                                          \
        s->length++;                                                                           \
        break;                                                                                 \
    }                                                                                          \
    case O_STRING:                                                                             \
    case O_BYTES: {                                                                            \
        int64_t n;                                                                             \
        const uint8_t *st = p;                                                                 \
        pc_slot *s = S + op->slot;                                                             \
        PC_VARINT(n);                                                                          \
        if (PC_UNLIKELY(n < 0)) PC_FAIL(PC_AVRO_NEGATIVE_LENGTH, st, n);                       \
        if (PC_UNLIKELY(n > end - p)) PC_FAIL(PC_AVRO_LENGTH_PAST_END, st, n);                 \
        if (op->code == O_STRING && !pc_ascii(p, n) && PC_UNLIKELY(!pc_utf8_valid(p, n)))      \
            PC_FAIL(PC_AVRO_INVALID_UTF8, p, 0);                                               \
        if (PC_UNLIKELY(s->dlen + n > INT32_MAX)) PC_FAIL(PC_AVRO_OUTPUT_TOO_LARGE, st, s->dlen + n); \
        PC_RESERVE(&s->b2, s->dlen + n);                                                       \
        PC_RESERVE(&s->b1, (s->length + 2) * 4);                                               \
        pc_copy(s->b2.p + s->dlen, p, n);                                                      \
        p += n;                                                                                \
        s->dlen += n;                                                                          \
        ((int32_t *)s->b1.p)[s->length + 1] = (int32_t)s->dlen;                                \
        PC_VALID1(s);                                                                          \
        s->length++;                                                                           \
        break;                                                                                 \
    }                                                                                          \
    case O_ENUM: {                                                                             \
        int64_t v;                                                                             \
        const uint8_t *st = p;                                                                 \
        pc_slot *s = S + op->slot;                                                             \
        PC_VARINT(v);                                                                          \
        if (PC_UNLIKELY(v < 0 || v >= op->arg)) PC_FAIL(PC_AVRO_BAD_ENUM_INDEX, st, v);        \
        if (op->table != NULL) {                                                               \
            int32_t m = op->table[v];                                                          \
            if (PC_UNLIKELY(m < 0)) PC_FAIL(PC_AVRO_UNKNOWN_ENUM_SYMBOL, st, v);               \
            v = m;                                                                             \
        }                                                                                      \
        PC_RESERVE(&s->b1, (s->length + 1) * 4);                                               \
        ((int32_t *)s->b1.p)[s->length] = (int32_t)v;                                          \
        PC_VALID1(s);                                                                          \
        s->length++;                                                                           \
        break;                                                                                 \
    }

static const uint8_t *pc_ablocks(pc_actx *c, const pc_plan *pl, const pc_op *op, const uint8_t *p,
                                 const uint8_t *end)
{
    pc_slot *S = c->slots;
    int skipping = op->code == O_SK_ARRAY || op->code == O_SK_MAP;
    int is_map = op->code == O_MAP || op->code == O_SK_MAP;
    int32_t item = pl->kids[op->first];
    const pc_op *item_op = pl->ops + item;
    int64_t min_size = op->arg;
    pc_slot *key = (is_map && !skipping) ? S + op->arg2 : NULL;
    for (;;) {
        int64_t count, orig, j;
        uint64_t ucount;
        const uint8_t *st = p;
        PC_VARINT(count);
        if (count == 0) break;
        orig = count;
        if (count < 0) {
            int64_t size;
            const uint8_t *ss = p;
            PC_VARINT(size);
            if (size < 0) PC_FAIL(PC_AVRO_NEGATIVE_BLOCK_SIZE, ss, size);
            ucount = (uint64_t)0 - (uint64_t)count;
            if (skipping) {
                if (size > end - p) PC_FAIL(PC_AVRO_LENGTH_PAST_END, ss, size);
                p += size;
                continue;
            }
        } else {
            ucount = (uint64_t)count;
        }
        if (min_size) {
            if (ucount > (uint64_t)((end - p) / min_size)) PC_FAIL(PC_AVRO_BLOCK_COUNT_TOO_LARGE, st, orig);
        } else {
            if (ucount > (uint64_t)c->budget) PC_FAIL(PC_AVRO_TOO_MANY_EMPTY_ITEMS, st, orig);
            c->budget -= (int64_t)ucount;
        }
        for (j = 0; j < (int64_t)ucount; j++) {
            if (is_map) {
                int64_t n;
                const uint8_t *ks = p;
                PC_VARINT(n);
                if (n < 0) PC_FAIL(PC_AVRO_NEGATIVE_LENGTH, ks, n);
                if (n > end - p) PC_FAIL(PC_AVRO_LENGTH_PAST_END, ks, n);
                if (key != NULL) {
                    if (!pc_ascii(p, n) && !pc_utf8_valid(p, n)) PC_FAIL(PC_AVRO_INVALID_UTF8, p, 0);
                    if (key->dlen + n > INT32_MAX) PC_FAIL(PC_AVRO_OUTPUT_TOO_LARGE, ks, key->dlen + n);
                    PC_RESERVE(&key->b2, key->dlen + n);
                    PC_RESERVE(&key->b1, (key->length + 2) * 4);
                    pc_copy(key->b2.p + key->dlen, p, n);
                    key->dlen += n;
                    ((int32_t *)key->b1.p)[key->length + 1] = (int32_t)key->dlen;
                    key->length++;
                }
                p += n;
            }
            {
                /* leaf items (ints, strings, ...) are decoded here, without a call per item */
                const pc_op *op = item_op;
                switch (op->code) {
                PC_LEAF_CASES
                default:
                    p = pc_arun(c, pl, item, p, end);
                    if (p == NULL) return NULL;
                }
            }
        }
    }
    if (!skipping) {
        pc_slot *s = S + op->slot;
        int64_t m = S[s->child[is_map ? 1 : 0]].length;
        if (m > INT32_MAX) PC_FAIL(PC_AVRO_OUTPUT_TOO_LARGE, p, m);
        PC_RESERVE(&s->b1, (s->length + 2) * 4);
        ((int32_t *)s->b1.p)[s->length + 1] = (int32_t)m;
        PC_VALID1(s);
        s->length++;
    }
    return p;
}

static const uint8_t *pc_arun(pc_actx *c, const pc_plan *pl, int32_t oi, const uint8_t *p, const uint8_t *end)
{
    const pc_op *op = pl->ops + oi;
    pc_slot *S = c->slots;
dispatch:
    switch (op->code) {
    PC_LEAF_CASES
    case O_RECORD: {
        int32_t j;
        pc_slot *rec = S + op->slot;
        for (j = 0; j < op->count; j++) {
            int32_t ki = pl->kids[op->first + j];
            const pc_op *parent = op;
            op = pl->ops + ki;
            switch (op->code) {
            PC_LEAF_CASES
            default:
                p = pc_arun(c, pl, ki, p, end);
                if (p == NULL) return NULL;
            }
            op = parent;
        }
        PC_VALID1(rec);
        rec->length++;
        break;
    }
    case O_SK_RECORD: {
        int32_t j;
        for (j = 0; j < op->count; j++) {
            p = pc_arun(c, pl, pl->kids[op->first + j], p, end);
            if (p == NULL) return NULL;
        }
        break;
    }
    case O_NULL: {
        pc_slot *s = S + op->slot;
        PC_VALID1(s);
        s->length++;
        break;
    }
    case O_INT_F:
    case O_INT_D:
    case O_LONG_F:
    case O_LONG_D: {
        int64_t v;
        const uint8_t *st = p;
        pc_slot *s = S + op->slot;
        PC_VARINT(v);
        if ((op->code == O_INT_F || op->code == O_INT_D) && (v < INT32_MIN || v > INT32_MAX))
            PC_FAIL(PC_AVRO_INT_OUT_OF_RANGE, st, v);
        if (op->code == O_INT_F || op->code == O_LONG_F) {
            /* rounded once, to nearest (Java's (float) of a long); through double a long could
               round twice. The pure twin rounds the same way by hand. */
            float f = (float)v;
            PC_RESERVE(&s->b1, (s->length + 1) * 4);
            memcpy(s->b1.p + s->length * 4, &f, 4);
        } else {
            double d = (double)v;
            PC_RESERVE(&s->b1, (s->length + 1) * 8);
            memcpy(s->b1.p + s->length * 8, &d, 8);
        }
        PC_VALID1(s);
        s->length++;
        break;
    }
    case O_FLOAT_D: {
        pc_slot *s = S + op->slot;
        float f;
        double d;
        if (end - p < 4) PC_FAIL(PC_AVRO_TRUNCATED, p, 4 - (end - p));
        memcpy(&f, p, 4);
        d = (double)f;
        p += 4;
        PC_RESERVE(&s->b1, (s->length + 1) * 8);
        memcpy(s->b1.p + s->length * 8, &d, 8);
        PC_VALID1(s);
        s->length++;
        break;
    }
    case O_FIXED:
    case O_DEC_FIXED:
    case O_DURATION: {
        pc_slot *s = S + op->slot;
        int64_t size = op->code == O_DURATION ? 12 : op->arg;
        int64_t w = s->width;
        if (size > end - p) PC_FAIL(PC_AVRO_TRUNCATED, p, size - (end - p));
        PC_RESERVE(&s->b1, (s->length + 1) * w);
        if (op->code == O_FIXED) {
            if (size) memcpy(s->b1.p + s->length * w, p, (size_t)size);
        } else if (op->code == O_DEC_FIXED) {
            if (!pc_decimal(p, size, s->b1.p + s->length * w, w)) PC_FAIL(PC_AVRO_DECIMAL_OVERFLOW, p, size);
            if (!pc_decimal_in_precision(s->b1.p + s->length * w, size, op, w))
                PC_FAIL(PC_AVRO_DECIMAL_PRECISION, p, op->arg2);
        } else {
            uint32_t months = pc_le32(p), days = pc_le32(p + 4), millis = pc_le32(p + 8);
            int32_t m32, d32;
            int64_t nanos = (int64_t)millis * 1000000;
            if (months > INT32_MAX) PC_FAIL(PC_AVRO_DURATION_OUT_OF_RANGE, p, months);
            if (days > INT32_MAX) PC_FAIL(PC_AVRO_DURATION_OUT_OF_RANGE, p + 4, days);
            m32 = (int32_t)months;
            d32 = (int32_t)days;
            memcpy(s->b1.p + s->length * w, &m32, 4);
            memcpy(s->b1.p + s->length * w + 4, &d32, 4);
            memcpy(s->b1.p + s->length * w + 8, &nanos, 8);
        }
        p += size;
        PC_VALID1(s);
        s->length++;
        break;
    }
    case O_DEC_BYTES: {
        int64_t n;
        const uint8_t *st = p;
        pc_slot *s = S + op->slot;
        PC_VARINT(n);
        if (n < 0) PC_FAIL(PC_AVRO_NEGATIVE_LENGTH, st, n);
        if (n > end - p) PC_FAIL(PC_AVRO_LENGTH_PAST_END, st, n);
        PC_RESERVE(&s->b1, (s->length + 1) * s->width);
        if (!pc_decimal(p, n, s->b1.p + s->length * s->width, s->width))
            PC_FAIL(PC_AVRO_DECIMAL_OVERFLOW, st, n);
        if (!pc_decimal_in_precision(s->b1.p + s->length * s->width, n, op, s->width))
            PC_FAIL(PC_AVRO_DECIMAL_PRECISION, st, op->arg2);
        p += n;
        PC_VALID1(s);
        s->length++;
        break;
    }
    case O_ARRAY:
    case O_MAP:
    case O_SK_ARRAY:
    case O_SK_MAP:
        return pc_ablocks(c, pl, op, p, end);
    case O_UNION:
    case O_SK_UNION: {
        int64_t k;
        int32_t ki;
        const uint8_t *st = p;
        PC_VARINT(k);
        if (k < 0 || k >= op->arg) PC_FAIL(PC_AVRO_BAD_UNION_INDEX, st, k);
        ki = pl->kids[op->first + k];
        if (pl->ops[ki].code == O_BRANCH_ERR) PC_FAIL(PC_AVRO_UNRESOLVED_UNION_BRANCH, st, k);
        op = pl->ops + ki; /* the branch's op runs in this frame: no call per union value */
        goto dispatch;
    }
    case O_SELECT: {
        pc_slot *u = S + op->slot;
        int64_t off = S[op->arg2].length, n;
        p = pc_arun(c, pl, pl->kids[op->first], p, end);
        if (p == NULL) return NULL;
        n = u->length;
        PC_RESERVE(&u->b1, n + 1);
        PC_RESERVE(&u->b2, (n + 1) * 4);
        ((int8_t *)u->b1.p)[n] = (int8_t)op->arg;
        ((int32_t *)u->b2.p)[n] = (int32_t)off;
        u->committed[op->arg] = off + 1;
        u->length = n + 1;
        break;
    }
    case O_NULLFILL:
        if (pc_null_fill(S, op->slot)) return pc_aoom(c);
        break;
    case O_DEFAULT:
        if (pc_arun(c, pl, pl->kids[op->first], op->cst, op->cst + op->ncst) == NULL) return NULL;
        break;
    case O_SK_NOP:
        break;
    case O_SK_BOOL:
    case O_SK_F32:
    case O_SK_F64:
    case O_SK_FIXED: {
        int64_t size = op->code == O_SK_BOOL ? 1 : op->code == O_SK_F32 ? 4 : op->code == O_SK_F64 ? 8 : op->arg;
        if (size > end - p) PC_FAIL(PC_AVRO_TRUNCATED, p, size - (end - p));
        p += size;
        break;
    }
    case O_SK_VARINT: {
        int64_t v;
        PC_VARINT(v);
        (void)v;
        break;
    }
    case O_SK_BYTES: {
        int64_t n;
        const uint8_t *st = p;
        PC_VARINT(n);
        if (n < 0) PC_FAIL(PC_AVRO_NEGATIVE_LENGTH, st, n);
        if (n > end - p) PC_FAIL(PC_AVRO_LENGTH_PAST_END, st, n);
        p += n;
        break;
    }
    default:
        return pc_aoom(c); /* unreachable: plans come from plan.py */
    }
    return p;
}

/* One row of the top-level record, inlined into the row loop so the per-row call and the
 * interpreter's frame set-up are saved for the common flat fields. */
static inline const uint8_t *pc_arow(pc_actx *c, const pc_plan *pl, const uint8_t *p, const uint8_t *end)
{
    const pc_op *root = pl->ops;
    pc_slot *S = c->slots;
    pc_slot *rec = S + root->slot;
    int32_t j;
    for (j = 0; j < root->count; j++) {
        int32_t ki = pl->kids[root->first + j];
        const pc_op *op = pl->ops + ki;
        switch (op->code) {
        PC_LEAF_CASES
        default:
            p = pc_arun(c, pl, ki, p, end);
            if (p == NULL) return NULL;
        }
    }
    PC_VALID1(rec);
    rec->length++;
    return p;
}

/* Hot path for the top-level record, used when every row of a segment runs one plan.
 *
 * Invariant: each kid op of the root record writes exactly one element per row into its own slot
 * (plan.py gives every reader field exactly one op: a decode op, a default or a null fill; writer-
 * only fields get skip ops that write nothing), and a null or failed row appends one element to
 * every top-level slot through pc_null_fill. So between rows every top-level slot holds exactly as
 * many elements as the root record, and capacity for all rows left in the segment, reserved once
 * (a bound from the row count of the input framing, not from any length inside a payload), lets
 * the leaf fields below store without capacity checks and without per-field length bookkeeping:
 * the row index r is kept in a local and written back to the slots (pc_hot_sync) before anything
 * else reads them (null fill, truncation, return). String data still grows per value, since its
 * size comes from the payload. Kid ops that are not simple leaves run through pc_arun and keep
 * their slots' lengths themselves. */
#define PC_HOT_MAX 64

typedef struct {
    int32_t code;   /* leaf op decoded inline, or 0: the op runs through pc_arun */
    int32_t ki;     /* op index */
    const pc_op *op;
    pc_slot *s;
    uint8_t *vals;  /* s->b1.p: values, or int32 offsets for strings */
    uint8_t *valid; /* s->valid.p when the slot keeps validity bytes, else NULL */
} pc_hot;

/* Fill the table for plan pl with room for `rows` more rows after row r; *rec_valid is the root's
 * validity bytes (or NULL). Returns 0, or -1 when out of memory. */
static int pc_hot_build(pc_slot *S, const pc_plan *pl, pc_hot *H, uint8_t **rec_valid, int64_t r, int64_t rows)
{
    const pc_op *root = pl->ops;
    pc_slot *rec = S + root->slot;
    int64_t need = r + rows;
    int32_t j;
    *rec_valid = NULL;
    if (rec->vactive) {
        if (need > rec->valid.cap && pc_grow(&rec->valid, need)) return -1;
        *rec_valid = rec->valid.p;
    }
    for (j = 0; j < root->count; j++) {
        int32_t ki = pl->kids[root->first + j];
        const pc_op *op = pl->ops + ki;
        pc_hot *h = H + j;
        pc_slot *s = S + op->slot;
        int64_t bytes;
        h->ki = ki;
        h->op = op;
        h->code = 0;
        h->s = NULL;
        h->vals = NULL;
        h->valid = NULL;
        switch (op->code) {
        case O_LONG:
        case O_INT_L:
        case O_TIME_US:
        case O_DOUBLE:
            bytes = need * 8;
            break;
        case O_INT:
        case O_TIME_MS:
        case O_FLOAT:
        case O_ENUM:
            bytes = need * 4;
            break;
        case O_BOOL:
            bytes = need;
            break;
        case O_STRING:
        case O_BYTES:
            bytes = (need + 1) * 4;
            break;
        default:
            continue;
        }
        if (bytes > s->b1.cap && pc_grow(&s->b1, bytes)) return -1;
        if (s->vactive) {
            if (need > s->valid.cap && pc_grow(&s->valid, need)) return -1;
            h->valid = s->valid.p;
        }
        h->code = op->code;
        h->s = s;
        h->vals = s->b1.p;
    }
    return 0;
}

/* Write the row count r back to the root slot and the slots of the inline leaves. */
static void pc_hot_sync(pc_slot *S, const pc_plan *pl, const pc_hot *H, int64_t r)
{
    int32_t j;
    S[pl->ops[0].slot].length = r;
    for (j = 0; j < pl->ops[0].count; j++)
        if (H[j].code != 0) H[j].s->length = r;
}

/* One row of the top-level record into row r of the hot slots (lengths are not touched). */
static inline const uint8_t *pc_hrow(pc_actx *c, const pc_plan *pl, const pc_hot *H, int32_t nh, uint8_t *rec_valid,
                                     int64_t r, const uint8_t *p, const uint8_t *end)
{
    int32_t j;
    for (j = 0; j < nh; j++) {
        const pc_hot *h = H + j;
        switch (h->code) {
        case O_LONG: {
            int64_t v;
            PC_VARINT(v);
            ((int64_t *)h->vals)[r] = v;
            break;
        }
        case O_INT:
        case O_INT_L: {
            int64_t v;
            const uint8_t *st = p;
            PC_VARINT(v);
            if (PC_UNLIKELY(v < INT32_MIN || v > INT32_MAX)) PC_FAIL(PC_AVRO_INT_OUT_OF_RANGE, st, v);
            if (h->code == O_INT)
                ((int32_t *)h->vals)[r] = (int32_t)v;
            else
                ((int64_t *)h->vals)[r] = v;
            break;
        }
        case O_TIME_MS:
        case O_TIME_US: {
            int64_t v;
            const uint8_t *st = p;
            const pc_op *op = h->op;
            PC_VARINT(v);
            if (PC_UNLIKELY((uint64_t)v >= (uint64_t)op->arg)) {
                if (op->arg2 && (v < INT32_MIN || v > INT32_MAX)) PC_FAIL(PC_AVRO_INT_OUT_OF_RANGE, st, v);
                PC_FAIL(PC_AVRO_TIME_OUT_OF_RANGE, st, v);
            }
            if (h->code == O_TIME_MS)
                ((int32_t *)h->vals)[r] = (int32_t)v;
            else
                ((int64_t *)h->vals)[r] = v;
            break;
        }
        case O_DOUBLE:
            if (PC_UNLIKELY(end - p < 8)) PC_FAIL(PC_AVRO_TRUNCATED, p, 8 - (end - p));
            memcpy(h->vals + r * 8, p, 8);
            p += 8;
            break;
        case O_FLOAT:
            if (PC_UNLIKELY(end - p < 4)) PC_FAIL(PC_AVRO_TRUNCATED, p, 4 - (end - p));
            memcpy(h->vals + r * 4, p, 4);
            p += 4;
            break;
        case O_BOOL:
            if (PC_UNLIKELY(p >= end)) PC_FAIL(PC_AVRO_TRUNCATED, p, 1);
            if (PC_UNLIKELY(*p > 1)) PC_FAIL(PC_AVRO_BAD_BOOLEAN, p, *p);
            h->vals[r] = *p++;
            break;
        case O_STRING:
        case O_BYTES: {
            int64_t n, dlen;
            const uint8_t *st = p;
            pc_slot *s = h->s;
            PC_VARINT(n);
            if (PC_UNLIKELY(n < 0)) PC_FAIL(PC_AVRO_NEGATIVE_LENGTH, st, n);
            if (PC_UNLIKELY(n > end - p)) PC_FAIL(PC_AVRO_LENGTH_PAST_END, st, n);
            if (h->code == O_STRING && !pc_ascii(p, n) && PC_UNLIKELY(!pc_utf8_valid(p, n)))
                PC_FAIL(PC_AVRO_INVALID_UTF8, p, 0);
            dlen = s->dlen + n;
            if (PC_UNLIKELY(dlen > INT32_MAX)) PC_FAIL(PC_AVRO_OUTPUT_TOO_LARGE, st, dlen);
            PC_RESERVE(&s->b2, dlen);
            pc_copy(s->b2.p + s->dlen, p, n);
            p += n;
            s->dlen = dlen;
            ((int32_t *)h->vals)[r + 1] = (int32_t)dlen;
            break;
        }
        case O_ENUM: {
            int64_t v;
            const uint8_t *st = p;
            const pc_op *op = h->op;
            PC_VARINT(v);
            if (PC_UNLIKELY(v < 0 || v >= op->arg)) PC_FAIL(PC_AVRO_BAD_ENUM_INDEX, st, v);
            if (op->table != NULL) {
                int32_t m = op->table[v];
                if (PC_UNLIKELY(m < 0)) PC_FAIL(PC_AVRO_UNKNOWN_ENUM_SYMBOL, st, v);
                v = m;
            }
            ((int32_t *)h->vals)[r] = (int32_t)v;
            break;
        }
        default:
            p = pc_arun(c, pl, h->ki, p, end);
            if (p == NULL) return NULL;
        }
        if (h->valid != NULL) h->valid[r] = 1;
    }
    if (rec_valid != NULL) rec_valid[r] = 1;
    return p;
}

typedef struct {
    pc_error *items;
    int64_t n, cap;
} pc_aerrors;

static int pc_aerr_push(pc_aerrors *e, int32_t code, int64_t index, int64_t offset, int64_t detail)
{
    if (e->n == e->cap) {
        int64_t cap = e->cap ? e->cap * 2 : 16;
        pc_error *q = (pc_error *)realloc(e->items, (size_t)cap * sizeof(pc_error));
        if (q == NULL) return -1;
        e->items = q;
        e->cap = cap;
    }
    e->items[e->n].code = code;
    e->items[e->n].index = index;
    e->items[e->n].offset = offset;
    e->items[e->n].detail = detail;
    e->n++;
    return 0;
}

/* Row i's payload [*msg, *end) in the layouts pc_avro_decode takes. Returns 0 when the row is a
 * framed message that does not begin with `prefix` (or is shorter than it), else 1. */
static inline int pc_locate(const uint8_t *buf, const int64_t *starts, const int64_t *offs64, const int32_t *offs32,
                            int64_t skip, const uint8_t *prefix, int64_t i, const uint8_t **msg, const uint8_t **end)
{
    const uint8_t *m, *e;
    int64_t k;
    if (starts != NULL) {
        *msg = buf + starts[i];
        *end = buf + offs64[i];
        return 1;
    }
    if (offs64 != NULL) {
        m = buf + offs64[i];
        e = buf + offs64[i + 1];
    } else {
        m = buf + (int64_t)offs32[i];
        e = buf + offs32[i + 1];
    }
    *msg = m + skip;
    *end = e;
    if (prefix == NULL) return 1;
    if (e - m < skip) return 0;
    for (k = 0; k < skip; k++)
        if (m[k] != prefix[k]) return 0;
    return 1;
}

/* pc_avro_decode for a segment whose rows all run plan pl (a top-level record): see pc_hot_build. */
static int pc_avro_decode_hot(pc_slot *S, const pc_plan *pl, const uint8_t *buf, const int64_t *starts,
                              const int64_t *offs64, const int32_t *offs32, int64_t skip, const uint8_t *prefix,
                              const uint8_t *valid, int64_t n, int64_t row0, int keep_going, pc_aerrors *errs)
{
    pc_actx ctx;
    pc_hot H[PC_HOT_MAX];
    uint8_t *rec_valid;
    int32_t nh = pl->ops[0].count;
    int64_t i, r = S[pl->ops[0].slot].length;
    ctx.slots = S;
    if (pc_hot_build(S, pl, H, &rec_valid, r, n)) return -1;
    for (i = 0; i < n; i++) {
        const uint8_t *p, *end;
        if (valid != NULL && !valid[i]) {
            pc_hot_sync(S, pl, H, r);
            if (pc_null_fill(S, 0)) return -1;
            r++;
            if (pc_hot_build(S, pl, H, &rec_valid, r, n - i - 1)) return -1;
            continue;
        }
        if (!pc_locate(buf, starts, offs64, offs32, skip, prefix, i, &ctx.msg, &end)) {
            pc_hot_sync(S, pl, H, r);
            return 2;
        }
        ctx.budget = PC_ZERO_SIZE_ITEM_LIMIT;
        p = pc_hrow(&ctx, pl, H, nh, rec_valid, r, ctx.msg, end);
        if (PC_UNLIKELY(p != end)) {
            if (p != NULL) {
                ctx.code = PC_AVRO_TRAILING_BYTES;
                ctx.offset = p - ctx.msg;
                ctx.detail = end - p;
            }
            pc_hot_sync(S, pl, H, r);
            if (ctx.code == -1) return -1;
            pc_avro_truncate(S, 0, row0 + i);
            if (pc_aerr_push(errs, ctx.code, row0 + i, ctx.offset, ctx.detail)) return -1;
            if (!keep_going) return 1;
            if (pc_null_fill(S, 0)) return -1;
            r++;
            if (pc_hot_build(S, pl, H, &rec_valid, r, n - i - 1)) return -1;
            continue;
        }
        r++;
    }
    pc_hot_sync(S, pl, H, r);
    return 0;
}

/* Decode rows [0, n) of one segment into the slots. Returns 0 when done, 1 when stopped at an error
 * (keep_going == 0), 2 when a message does not begin with `prefix`, -1 when out of memory. Rows are
 * numbered from row0 in error reports.
 * Payload i is buf[starts[i], ends[i]) when starts != NULL; otherwise the segment is a run of framed
 * messages with n + 1 offsets (offs64, or offs32 when that is NULL) and a wire prefix of `skip` bytes,
 * and payload i is buf[offs[i] + skip, offs[i + 1]). When `prefix` is not NULL every message must
 * begin with its `skip` bytes (one schema id for the whole run): checking it here, on bytes the row's
 * decode reads next anyway, spares the caller a pass over every message before the decode. */
static int pc_avro_decode(pc_slot *S, const pc_plan *plans, const int32_t *plan_ids, const uint8_t *buf,
                          const int64_t *starts, const int64_t *offs64, const int32_t *offs32, int64_t skip,
                          const uint8_t *prefix, const uint8_t *valid, int64_t n, int64_t row0, int keep_going,
                          pc_aerrors *errs)
{
    pc_actx ctx;
    int64_t i;
    const pc_plan *pl = plans;
    ctx.slots = S;
    if (plan_ids == NULL && pl->ops[0].code == O_RECORD && pl->ops[0].count <= PC_HOT_MAX)
        return pc_avro_decode_hot(S, pl, buf, starts, offs64, offs32, skip, prefix, valid, n, row0, keep_going, errs);
    for (i = 0; i < n; i++) {
        const uint8_t *p, *end;
        if (valid != NULL && !valid[i]) {
            if (pc_null_fill(S, 0)) return -1;
            continue;
        }
        if (plan_ids != NULL) pl = plans + plan_ids[i];
        if (!pc_locate(buf, starts, offs64, offs32, skip, prefix, i, &ctx.msg, &end)) return 2;
        ctx.budget = PC_ZERO_SIZE_ITEM_LIMIT;
        p = pl->ops[0].code == O_RECORD ? pc_arow(&ctx, pl, ctx.msg, end) : pc_arun(&ctx, pl, 0, ctx.msg, end);
        if (PC_UNLIKELY(p != end)) {
            if (p != NULL) {
                ctx.code = PC_AVRO_TRAILING_BYTES;
                ctx.offset = p - ctx.msg;
                ctx.detail = end - p;
            }
            if (ctx.code == -1) return -1;
            pc_avro_truncate(S, 0, row0 + i);
            if (pc_aerr_push(errs, ctx.code, row0 + i, ctx.offset, ctx.detail)) return -1;
            if (!keep_going) return 1;
            if (pc_null_fill(S, 0)) return -1;
        }
    }
    return 0;
}

#endif
