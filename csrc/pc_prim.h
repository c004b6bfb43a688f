/* Helpers for the Pulsar primitive kernels: strict UTF-8 validation and overflow-checked
 * int64 arithmetic. Plain C11, no Python.h. */
#ifndef PC_PRIM_H
#define PC_PRIM_H

#include <stdint.h>
#include <string.h>

/* PC_MS_PER_DAY, PC_NS_PER_S, PC_NS_PER_DAY */
#include "pc_defs.h"

/* Offset of the first byte of the first ill-formed UTF-8 sequence in s[0:n], or -1 when the
 * whole span is well formed. Well formed = Unicode table 3-7: no overlongs, no surrogates, nothing
 * above U+10FFFF, no truncated sequence. The offset is the lead byte of the bad sequence, which is
 * where Python's strict decoder reports it (UnicodeDecodeError.start). */
static inline int64_t pc_utf8_invalid_at(const uint8_t *s, int64_t n)
{
    int64_t i = 0;
    while (i < n) {
        if (n - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c < 0xC2 || c > 0xF4)
            return i;
        if (c < 0xE0) {
            if (n - i < 2 || (s[i + 1] & 0xC0) != 0x80)
                return i;
            i += 2;
            continue;
        }
        uint8_t lo = 0x80, hi = 0xBF;
        if (c == 0xE0) lo = 0xA0;
        else if (c == 0xED) hi = 0x9F;
        else if (c == 0xF0) lo = 0x90;
        else if (c == 0xF4) hi = 0x8F;
        if (n - i < 2 || s[i + 1] < lo || s[i + 1] > hi)
            return i;
        if (n - i < 3 || (s[i + 2] & 0xC0) != 0x80)
            return i;
        if (c < 0xF0) {
            i += 3;
            continue;
        }
        if (n - i < 4 || (s[i + 3] & 0xC0) != 0x80)
            return i;
        i += 4;
    }
    return -1;
}

/* *out = a * m + b for m > 0, exactly: returns 0, or -1 when the result does not fit int64 (even
 * if the product alone would not fit but the sum does, as in the smallest Instant in nanoseconds). */
static inline int pc_mul_add_i64(int64_t a, int64_t m, int64_t b, int64_t *out)
{
    /* common case: far from both ends, nothing can overflow */
    const int64_t safe = INT64_MAX / m - 3;
    if (a >= -safe && a <= safe && b >= -2 * m && b <= 2 * m) {
        *out = a * m + b;
        return 0;
    }
    /* normalise b into [0, m): then a single bound per sign of a remains */
    int64_t q = b / m, r = b % m;
    if (r < 0) {
        r += m;
        q -= 1;
    }
    if ((q > 0 && a > INT64_MAX - q) || (q < 0 && a < INT64_MIN - q))
        return -1;
    a += q;
    if (a >= 0) {
        if (a > (INT64_MAX - r) / m)
            return -1;
        *out = a * m + r;
    } else {
        /* a*m + r >= INT64_MIN  <=>  (a + 1)*m >= INT64_MIN + (m - r); C division rounds this
         * negative quotient up, which is the bound we need */
        if (a + 1 < (INT64_MIN + (m - r)) / m)
            return -1;
        *out = (a + 1) * m + (r - m);
    }
    return 0;
}

#endif
