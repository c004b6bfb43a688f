/* Bounds-aware readers for big-endian integers and zigzag varints. Plain C11, no Python.h.
 * Every reader takes (buf, pos, end) and never reads at or past end. */
#ifndef PC_BYTES_H
#define PC_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t pc_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }

static inline uint32_t pc_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline uint64_t pc_be64(const uint8_t *p)
{
    return ((uint64_t)pc_be32(p) << 32) | (uint64_t)pc_be32(p + 4);
}

static inline void pc_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static inline void pc_put_be64(uint8_t *p, uint64_t v)
{
    pc_put_be32(p, (uint32_t)(v >> 32));
    pc_put_be32(p + 4, (uint32_t)v);
}

static inline uint64_t pc_zigzag_encode(int64_t n) { return ((uint64_t)n << 1) ^ (uint64_t)(n >> 63); }

static inline int64_t pc_zigzag_decode(uint64_t n) { return (int64_t)(n >> 1) ^ -(int64_t)(n & 1); }

/* Read one zigzag varint of at most 10 bytes. Returns 0 on success, 1 when the data ends before the
 * varint does, 2 when it runs past 10 bytes. *pos advances past the varint on success. */
static inline int pc_read_zigzag(const uint8_t *buf, int64_t *pos, int64_t end, int64_t *out)
{
    uint64_t acc = 0;
    int shift = 0;
    int64_t p = *pos;
    for (int i = 0; i < 10; i++) {
        if (p >= end) return 1;
        uint8_t b = buf[p++];
        acc |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pos = p;
            *out = pc_zigzag_decode(acc);
            return 0;
        }
        shift += 7;
    }
    return 2;
}

/* Write a zigzag varint; returns the number of bytes written (at most 10). */
static inline int pc_write_zigzag(uint8_t *out, int64_t n)
{
    uint64_t v = pc_zigzag_encode(n);
    int i = 0;
    while (v >= 0x80) {
        out[i++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[i++] = (uint8_t)v;
    return i;
}

/* One 16-byte Arrow binary view: payloads of up to 12 bytes live inline, longer ones point into a
 * data buffer (buffer index + offset) and keep their first 4 bytes as a prefix. */
static inline void pc_write_view(uint8_t *view, const uint8_t *data, int64_t start, int32_t len, int32_t buffer_index)
{
    memset(view, 0, 16);
    memcpy(view, &len, 4);
    if (len <= 12) {
        memcpy(view + 4, data + start, (size_t)len);
    } else {
        int32_t off = (int32_t)start;
        memcpy(view + 4, data + start, 4);
        memcpy(view + 8, &buffer_index, 4);
        memcpy(view + 12, &off, 4);
    }
}

#endif
