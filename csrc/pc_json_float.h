/* Decimal -> binary64 by the Eisel-Lemire algorithm (D. Lemire, "Number Parsing at a Gigabyte per
 * Second", Software: Practice and Experience 51(8), 2021), for a decimal w * 10**q whose significand
 * w is exact (at most 19 digits, so w < 2**64). Plain C11, no Python.h.
 *
 * The caller supplies the table of 128-bit truncated powers of five for q = PC_POW5_MIN_Q ..
 * PC_POW5_MAX_Q (two uint64_t per power, high word first): for q >= 0, 5**q shifted so that its top
 * bit is bit 127, truncated; for q < 0, a 128-bit approximation of 2**b / 5**-q rounded up (the
 * tables of the paper and of fast_float). json_c.pyx computes it with Python integers at import.
 *
 * The result is correctly rounded (round half to even) whenever pc_eisel_lemire returns 1; when the
 * truncated product leaves the rounding undecided it returns 0 and the caller uses an exact
 * conversion instead (for json_c: Python's float(), which is David Gay's strtod). */
#ifndef PC_JSON_FLOAT_H
#define PC_JSON_FLOAT_H

#include <stdint.h>

#define PC_POW5_MIN_Q (-342)
#define PC_POW5_MAX_Q 308
#define PC_POW5_COUNT (PC_POW5_MAX_Q - PC_POW5_MIN_Q + 1)

typedef struct {
    uint64_t high, low;
} pc_u128_parts;

/* the full 128-bit product a * b */
static inline pc_u128_parts pc_mul_64x64(uint64_t a, uint64_t b)
{
    pc_u128_parts r;
#if defined(__SIZEOF_INT128__)
    unsigned __int128 p = (unsigned __int128)a * b;
    r.high = (uint64_t)(p >> 64);
    r.low = (uint64_t)p;
#else
    /* schoolbook on 32-bit halves, for compilers without a 128-bit integer (MSVC) */
    uint64_t a_lo = (uint32_t)a, a_hi = a >> 32, b_lo = (uint32_t)b, b_hi = b >> 32;
    uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
    uint64_t cross = (lo_lo >> 32) + (uint32_t)hi_lo + lo_hi;
    r.high = hi_hi + (hi_lo >> 32) + (cross >> 32);
    r.low = (cross << 32) | (uint32_t)lo_lo;
#endif
    return r;
}

static inline int pc_clz64(uint64_t x) /* x != 0 */
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_clzll(x);
#else
    int n = 0;
    while (!(x & 0x8000000000000000ULL)) {
        x <<= 1;
        n++;
    }
    return n;
#endif
}

/* floor(log2(10**q)) + 63 for |q| <= 1000 or so: 217706 / 2**16 is log2(10) to enough digits */
static inline int32_t pc_power2_of_ten(int32_t q)
{
    return (int32_t)(((int64_t)217706 * q) >> 16) + 63;
}

/* Set *bits to the IEEE binary64 bit pattern (sign clear) of w * 10**q rounded to nearest, ties to
 * even, and return 1; return 0 when the algorithm cannot decide the rounding. w != 0, w < 2**64
 * exactly the significand; any q (far outside the table: 0 or infinity, both exact decisions). */
static inline int pc_eisel_lemire(uint64_t w, int64_t q64, const uint64_t *pow5, uint64_t *bits)
{
    enum { MANTISSA_BITS = 52, MIN_EXPONENT = -1023, INFINITE_POWER = 0x7FF };
    if (q64 < PC_POW5_MIN_Q) {
        /* w * 10**q < 10**19 * 10**-343 = 10**-324, under half the smallest subnormal */
        *bits = 0;
        return 1;
    }
    if (q64 > PC_POW5_MAX_Q) {
        /* at least 10**309 */
        *bits = (uint64_t)INFINITE_POWER << MANTISSA_BITS;
        return 1;
    }
    int32_t q = (int32_t)q64;
    int lz = pc_clz64(w);
    w <<= lz;

    /* the top 64 + 55 bits of w * 5**q: a second multiply only when the first leaves the 55 bits
     * that matter (53 + a rounding bit + the bit that may be shifted out) possibly short by a carry */
    const uint64_t *entry = pow5 + 2 * (q - PC_POW5_MIN_Q);
    pc_u128_parts product = pc_mul_64x64(w, entry[0]);
    const uint64_t precision_mask = 0xFFFFFFFFFFFFFFFFULL >> (MANTISSA_BITS + 3);
    if ((product.high & precision_mask) == precision_mask) {
        pc_u128_parts second = pc_mul_64x64(w, entry[1]);
        product.low += second.high;
        if (second.high > product.low)
            product.high++;
    }
    /* error bound: the truncated product may be short of the exact one by less than one unit of its
     * low word; when that word is all ones the missing part could carry into the kept bits, and
     * outside q in [-27, 55] (where the table entry is not exact) the rounding is then undecided */
    if (product.low == 0xFFFFFFFFFFFFFFFFULL && (q < -27 || q > 55))
        return 0;

    int upperbit = (int)(product.high >> 63);
    int shift = upperbit + 64 - MANTISSA_BITS - 3;
    uint64_t mantissa = product.high >> shift;
    int32_t power2 = pc_power2_of_ten(q) + upperbit - lz - MIN_EXPONENT;

    if (power2 <= 0) {
        /* subnormal (or zero): shift to the fixed exponent, then round half up on the kept bit; a
         * tie here would need an exact product, but w * 10**q with q >= -342 and 19 digits never
         * falls exactly halfway between subnormals (its binary expansion does not terminate there) */
        if (-power2 + 1 >= 64) {
            *bits = 0;
            return 1;
        }
        mantissa >>= -power2 + 1;
        mantissa += mantissa & 1;
        mantissa >>= 1;
        /* rounding up may have produced the smallest normal number */
        power2 = mantissa < ((uint64_t)1 << MANTISSA_BITS) ? 0 : 1;
        *bits = (mantissa & (((uint64_t)1 << MANTISSA_BITS) - 1)) | ((uint64_t)power2 << MANTISSA_BITS);
        return 1;
    }

    /* an exact halfway case is only possible for small q (5**q exact in 64 bits or 10**q reciprocal
     * with an exact product); then round to even instead of up */
    if (product.low <= 1 && q >= -4 && q <= 23 && (mantissa & 3) == 1) {
        if ((mantissa << shift) == product.high)
            mantissa &= ~(uint64_t)1;
    }
    mantissa += mantissa & 1;
    mantissa >>= 1;
    if (mantissa >= ((uint64_t)2 << MANTISSA_BITS)) {
        mantissa = (uint64_t)1 << MANTISSA_BITS;
        power2++;
    }
    mantissa &= ~((uint64_t)1 << MANTISSA_BITS);
    if (power2 >= INFINITE_POWER) {
        power2 = INFINITE_POWER;
        mantissa = 0;
    }
    *bits = mantissa | ((uint64_t)power2 << MANTISSA_BITS);
    return 1;
}

#endif /* PC_JSON_FLOAT_H */
