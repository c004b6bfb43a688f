/* Avro batch encoder: writes one schemaless Avro body per row from Arrow column buffers, following
 * the flat encode program of pulsar_codec.formats.avro.encoder (nodes bound to one batch's arrays).
 * Plain C11, no Python.h; driven by _kernels/avro_encode_c.pyx with the GIL released.
 * Pure twin: src/pulsar_codec/_kernels/avro_encode_py.py (same nodes, same bytes, same error tuples).
 *
 * A node reads element j of its Arrow array: `valid` (one byte per element, or NULL: no nulls),
 * `data` (int32 / int64 / float / double values as `dsize` says, uint8 values, 16-byte
 * little-endian decimals, or a byte buffer that the n + 1 offsets slice for bytes, strings, arrays
 * and maps: `offs` int64, or `offs32` int32 when set). 32-bit values and offsets are read where
 * Arrow holds them, so an int32 or float32 column or a 32-bit-offset string / list is not widened
 * into a copy before the kernel runs. Records pass j to their
 * fields, arrays and maps pass offs[j]..offs[j + 1] to their item (and key) nodes, a union passes
 * offs[j] to the node of the child its element is in. */
#ifndef PC_AVRO_ENC_H
#define PC_AVRO_ENC_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pc_bytes.h"
#include "pc_defs.h"

typedef struct {
    uint8_t *p;
    int64_t cap;
    void *owner;
} pc_ebuf;

typedef int (*pc_egrow_fn)(pc_ebuf *b, int64_t cap);
static pc_egrow_fn pc_egrow_hook = NULL;

typedef struct {
    int32_t code, first, count;
    int32_t dsize; /* bytes per element of `data` for the integer and float nodes: 4 or 8 */
    int64_t arg, arg2;
    const uint8_t *valid;
    const uint8_t *data;
    const int64_t *offs;
    const int32_t *offs32; /* set instead of offs for 32-bit offsets */
    const int32_t *table;
} pc_enode;

typedef struct {
    const pc_enode *nodes;
    const int32_t *kids;
    pc_ebuf out;
    int64_t len;
    int32_t code, node;
    int64_t detail;
} pc_ectx;

static int pc_egrow(pc_ebuf *b, int64_t need)
{
    int64_t cap = b->cap ? b->cap : 4096;
    uint8_t *q;
    while (cap < need) cap *= 2;
    if (pc_egrow_hook != NULL) return pc_egrow_hook(b, cap);
    q = (uint8_t *)realloc(b->p, (size_t)cap);
    if (q == NULL) return -1;
    b->p = q;
    b->cap = cap;
    return 0;
}

/* room for `more` bytes at the end of the output; -1 out of memory */
#define PC_EROOM(more)                                                                    \
    do {                                                                                  \
        if ((c)->len + (int64_t)(more) > (c)->out.cap && pc_egrow(&(c)->out, (c)->len + (int64_t)(more))) \
            return -1;                                                                    \
    } while (0)

#define PC_EFAIL(code_, detail_)   \
    do {                           \
        c->code = (code_);         \
        c->node = ni;              \
        c->detail = (detail_);     \
        return 1;                  \
    } while (0)

static inline void pc_eput_zz(pc_ectx *c, int64_t v) { c->len += pc_write_zigzag(c->out.p + c->len, v); }

/* minimal big-endian two's complement of a 16-byte little-endian integer, as Python's
 * n.to_bytes((n.bit_length() + 8) // 8 or 1, "big", signed=True) */
static inline int pc_edec_len(const uint8_t *le)
{
    uint64_t lo, hi;
    int bits = 0;
    memcpy(&lo, le, 8);
    memcpy(&hi, le + 8, 8);
    if (hi >> 63) { /* negative: magnitude = ~x + 1 */
        lo = ~lo + 1;
        hi = ~hi + (lo == 0);
    }
    if (hi) {
        bits = 64;
        while (hi) { bits++; hi >>= 1; }
    } else {
        while (lo) { bits++; lo >>= 1; }
    }
    return (bits + 8) / 8;
}

static inline int64_t pc_eoff(const pc_enode *n, int64_t j)
{
    return n->offs32 != NULL ? (int64_t)n->offs32[j] : n->offs[j];
}

/* integer element j of `data` (int32 or int64) */
static inline int64_t pc_eint(const pc_enode *n, int64_t j)
{
    if (n->dsize == 4) {
        int32_t w;
        memcpy(&w, n->data + 4 * j, 4);
        return w;
    } else {
        int64_t v;
        memcpy(&v, n->data + 8 * j, 8);
        return v;
    }
}

static int pc_enc_node(pc_ectx *c, int32_t ni, int64_t j)
{
    const pc_enode *n = c->nodes + ni;
    if (n->valid != NULL && !n->valid[j]) {
        if (n->code == E_OPTION) {
            PC_EROOM(10);
            pc_eput_zz(c, n->arg);
            return 0;
        }
        if (n->code == E_NULL) return 0;
        PC_EFAIL(PC_ENC_NULL_VALUE, 0);
    }
    switch (n->code) {
    case E_NULL:
        PC_EFAIL(PC_ENC_NOT_NULL, 0);
    case E_OPTION:
        PC_EROOM(10);
        pc_eput_zz(c, n->arg2);
        return pc_enc_node(c, c->kids[n->first], j);
    case E_BOOL:
        PC_EROOM(1);
        c->out.p[c->len++] = n->data[j] ? 1 : 0;
        return 0;
    case E_INT:
    case E_LONG: {
        int64_t v = pc_eint(n, j);
        if (n->code == E_INT && (v < INT32_MIN || v > INT32_MAX)) PC_EFAIL(PC_ENC_INT_RANGE, v);
        PC_EROOM(10);
        pc_eput_zz(c, v);
        return 0;
    }
    case E_FLOAT: {
        double d;
        float f;
        if (n->dsize == 4) { /* a float32 column: written as it is */
            PC_EROOM(4);
            memcpy(c->out.p + c->len, n->data + 4 * j, 4);
            c->len += 4;
            return 0;
        }
        memcpy(&d, n->data + 8 * j, 8);
        f = (float)d;
        if (isinf(f) && !isinf(d)) PC_EFAIL(PC_ENC_FLOAT_RANGE, 0);
        PC_EROOM(4);
        memcpy(c->out.p + c->len, &f, 4);
        c->len += 4;
        return 0;
    }
    case E_DOUBLE:
        PC_EROOM(8);
        if (n->dsize == 4) { /* a float32 column into a double: exact */
            float f;
            double d;
            memcpy(&f, n->data + 4 * j, 4);
            d = (double)f;
            memcpy(c->out.p + c->len, &d, 8);
        } else {
            memcpy(c->out.p + c->len, n->data + 8 * j, 8);
        }
        c->len += 8;
        return 0;
    case E_BYTES: {
        int64_t s = pc_eoff(n, j), len = pc_eoff(n, j + 1) - s;
        PC_EROOM(10 + len);
        pc_eput_zz(c, len);
        if (len) memcpy(c->out.p + c->len, n->data + s, (size_t)len);
        c->len += len;
        return 0;
    }
    case E_FIXED:
        if (n->arg != n->arg2) PC_EFAIL(PC_ENC_FIXED_SIZE, n->arg2);
        PC_EROOM(n->arg);
        if (n->arg) memcpy(c->out.p + c->len, n->data + n->arg * j, (size_t)n->arg);
        c->len += n->arg;
        return 0;
    case E_ENUM: {
        int64_t k = pc_eint(n, j);
        int32_t sym;
        sym = n->table[k];
        if (sym < 0) PC_EFAIL(PC_ENC_ENUM_SYMBOL, k);
        PC_EROOM(10);
        pc_eput_zz(c, sym);
        return 0;
    }
    case E_RECORD: {
        int32_t k;
        for (k = 0; k < n->count; k++) {
            int rc = pc_enc_node(c, c->kids[n->first + k], j);
            if (rc) return rc;
        }
        return 0;
    }
    case E_ARRAY:
    case E_MAP: {
        int64_t s = pc_eoff(n, j), e = pc_eoff(n, j + 1), m;
        int32_t item = c->kids[n->first + (n->code == E_MAP ? 1 : 0)];
        int32_t key = c->kids[n->first];
        PC_EROOM(11);
        if (e > s) {
            pc_eput_zz(c, e - s);
            for (m = s; m < e; m++) {
                int rc;
                if (n->code == E_MAP && (rc = pc_enc_node(c, key, m)) != 0) return rc;
                if ((rc = pc_enc_node(c, item, m)) != 0) return rc;
            }
            PC_EROOM(1);
        }
        c->out.p[c->len++] = 0;
        return 0;
    }
    case E_DEC_BYTES: {
        const uint8_t *le = n->data + 16 * j;
        int len = pc_edec_len(le), k;
        PC_EROOM(10 + len);
        pc_eput_zz(c, len);
        for (k = 0; k < len; k++) c->out.p[c->len + k] = le[len - 1 - k];
        c->len += len;
        return 0;
    }
    case E_DEC_FIXED: {
        const uint8_t *le = n->data + 16 * j;
        int64_t size = n->arg, k;
        uint8_t sign = (le[15] & 0x80) ? 0xFF : 0x00;
        if (size == 0) {
            for (k = 0; k < 16; k++)
                if (le[k] != 0) PC_EFAIL(PC_ENC_DECIMAL_SIZE, size);
        } else if (size < 16) {
            for (k = size; k < 16; k++)
                if (le[k] != sign) PC_EFAIL(PC_ENC_DECIMAL_SIZE, size);
            if ((uint8_t)((le[size - 1] & 0x80) ? 0xFF : 0x00) != sign) PC_EFAIL(PC_ENC_DECIMAL_SIZE, size);
        }
        PC_EROOM(size);
        for (k = 0; k < size; k++) c->out.p[c->len + k] = (size - 1 - k) < 16 ? le[size - 1 - k] : sign;
        c->len += size;
        return 0;
    }
    case E_UNION: {
        /* an Arrow union: data holds the child (kid) of element j, offs its index in that child
         * (both checked against the children by the binder); the kid writes the branch index */
        int64_t k;
        memcpy(&k, n->data + 8 * j, 8);
        return pc_enc_node(c, c->kids[n->first + k], pc_eoff(n, j));
    }
    default:
        PC_EFAIL(PC_ENC_NULL_VALUE, -1); /* unreachable: nodes come from encoder.py */
    }
}

/* Encode rows [0, n): body of row i into the output, offsets[i + 1] = its end. Rows with
 * skip[i] != 0 stay empty (null messages). Returns 0, 1 at the first bad row (*bad_row set), -1 out
 * of memory. */
static int pc_avro_encode(pc_ectx *c, int32_t root, const uint8_t *skip, int64_t n, int32_t *offsets,
                          int64_t *bad_row)
{
    int64_t i;
    offsets[0] = 0;
    for (i = 0; i < n; i++) {
        if (skip == NULL || !skip[i]) {
            int rc = pc_enc_node(c, root, i);
            if (rc) {
                *bad_row = i;
                return rc;
            }
            if (c->len > INT32_MAX) {
                c->code = PC_ENC_TOO_LARGE;
                c->node = root;
                c->detail = c->len;
                *bad_row = i;
                return 1;
            }
        }
        offsets[i + 1] = (int32_t)c->len;
    }
    return 0;
}

#endif
