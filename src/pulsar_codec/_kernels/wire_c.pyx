# cython: boundscheck=False, wraparound=False, cdivision=True
"""Compiled twin of the wire-prefix kernel (pure twin: ``wire_py.py``).

Bounds: every read of the data buffer is guarded by an explicit ``size < need`` / ``pos >= end``
check against the message's own end offset, which is why bounds checking is off for this module.
"""

from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcmp, memcpy, memset

import numpy as np

from . cimport defs
from .defs cimport pc_error, pc_fail

cdef extern from "pc_bytes.h":
    uint32_t pc_be32(const uint8_t *p) nogil
    uint64_t pc_be64(const uint8_t *p) nogil
    void pc_put_be32(uint8_t *p, uint32_t v) nogil
    void pc_put_be64(uint8_t *p, uint64_t v) nogil
    void pc_write_view(uint8_t *view, const uint8_t *data, int64_t start, int32_t len, int32_t buffer_index) nogil
    int pc_read_zigzag(const uint8_t *buf, int64_t *pos, int64_t end, int64_t *out) nogil

__all__ = ["KIND_CONFLUENT", "KIND_CONFLUENT_PROTOBUF", "KIND_CONFLUENT_GUID", "KIND_CONFLUENT_GUID_PROTOBUF",
           "KIND_HORTONWORKS", "KIND_APICURIO", "KIND_APICURIO_V3", "KIND_AWS_GLUE", "unframe", "frame", "binary_views", "distinct_ids",
           "same_bytes"]

# the protocol kinds as Python ints, from the C header (the pure twin exports defs.py's)
KIND_CONFLUENT = defs.KIND_CONFLUENT
KIND_CONFLUENT_PROTOBUF = defs.KIND_CONFLUENT_PROTOBUF
KIND_CONFLUENT_GUID = defs.KIND_CONFLUENT_GUID
KIND_CONFLUENT_GUID_PROTOBUF = defs.KIND_CONFLUENT_GUID_PROTOBUF
KIND_HORTONWORKS = defs.KIND_HORTONWORKS
KIND_APICURIO = defs.KIND_APICURIO
KIND_APICURIO_V3 = defs.KIND_APICURIO_V3
KIND_AWS_GLUE = defs.KIND_AWS_GLUE



cdef int grow(int64_t **values, int64_t *capacity, int64_t need) noexcept nogil:
    """Make room for ``need`` values; capacity doubles. Returns 0, or -1 when out of memory."""
    cdef int64_t cap = capacity[0]
    cdef int64_t *p
    if need <= cap:
        return 0
    while cap < need:
        cap = cap * 2 if cap else 1024
    p = <int64_t *> realloc(values[0], <size_t> cap * sizeof(int64_t))
    if p == NULL:
        return -1
    values[0] = p
    capacity[0] = cap
    return 0


cdef int unframe_loop(const uint8_t *buf, const int64_t *offs, const uint8_t *valid, int64_t n, int kind,
                      int64_t *ids, uint8_t *guids, int32_t *versions, uint8_t *protocols, int64_t *starts,
                      int32_t *counts, int64_t **values, int64_t *n_values, int64_t *capacity,
                      uint8_t *views, int32_t buffer_index, pc_error *err) noexcept nogil:
    # views == NULL: the caller wants no binary views (the Avro pipeline reads the starts)
    # twin: wire_py.unframe
    cdef int64_t i, start, end, size, pos, count, value, k
    cdef int rc
    cdef uint8_t first
    cdef bint guid = kind == defs.KIND_CONFLUENT_GUID or kind == defs.KIND_CONFLUENT_GUID_PROTOBUF
    cdef bint protobuf = kind == defs.KIND_CONFLUENT_PROTOBUF or kind == defs.KIND_CONFLUENT_GUID_PROTOBUF
    for i in range(n):
        start = offs[i]
        end = offs[i + 1]
        if valid != NULL and not valid[i]:
            starts[i] = end
            ids[i] = 0
            if views != NULL:
                memset(views + 16 * i, 0, 16)
            continue
        size = end - start
        if size == 0:
            return pc_fail(err, defs.WIRE_EMPTY, i, 0, 0)
        first = buf[start]
        if kind == defs.KIND_HORTONWORKS:
            protocols[i] = first
            versions[i] = 0
            if first == 3 or first == 0 or first == 4:
                if size < 5:
                    return pc_fail(err, defs.WIRE_SHORT_PREFIX, i, size, size)
                ids[i] = <int32_t> pc_be32(buf + start + 1)
                starts[i] = start + 5
            elif first == 2:
                if size < 9:
                    return pc_fail(err, defs.WIRE_SHORT_PREFIX, i, size, size)
                ids[i] = <int64_t> pc_be64(buf + start + 1)
                starts[i] = start + 9
            elif first == 1:
                if size < 13:
                    return pc_fail(err, defs.WIRE_SHORT_PREFIX, i, size, size)
                ids[i] = <int64_t> pc_be64(buf + start + 1)
                versions[i] = <int32_t> pc_be32(buf + start + 9)
                starts[i] = start + 13
            else:
                return pc_fail(err, defs.WIRE_UNKNOWN_PROTOCOL, i, 0, first)
            if views != NULL:
                pc_write_view(views + 16 * i, buf, starts[i], <int32_t> (end - starts[i]), buffer_index)
            continue
        if kind == defs.KIND_AWS_GLUE:
            if first != defs.GLUE_HEADER_VERSION:
                return pc_fail(err, defs.WIRE_BAD_MAGIC, i, 0, first)
            if size < defs.GLUE_PREFIX_SIZE:
                return pc_fail(err, defs.WIRE_SHORT_PREFIX, i, size, size)
            if buf[start + 1] != defs.GLUE_NO_COMPRESSION and buf[start + 1] != defs.GLUE_ZLIB:
                return pc_fail(err, defs.WIRE_UNKNOWN_COMPRESSION, i, 1, buf[start + 1])
            protocols[i] = buf[start + 1]
            memcpy(guids + 16 * i, buf + start + 2, 16)
            ids[i] = 0
            starts[i] = start + defs.GLUE_PREFIX_SIZE
            if views != NULL:
                pc_write_view(views + 16 * i, buf, starts[i], <int32_t> (end - starts[i]), buffer_index)
            continue
        if kind == defs.KIND_APICURIO:
            if first != 0:
                return pc_fail(err, defs.WIRE_BAD_MAGIC, i, 0, first)
            if size < 9:
                return pc_fail(err, defs.WIRE_SHORT_PREFIX, i, size, size)
            ids[i] = <int64_t> pc_be64(buf + start + 1)
            starts[i] = start + 9
            if views != NULL:
                pc_write_view(views + 16 * i, buf, starts[i], <int32_t> (end - starts[i]), buffer_index)
            continue
        if kind == defs.KIND_APICURIO_V3:
            if first != 0:
                return pc_fail(err, defs.WIRE_BAD_MAGIC, i, 0, first)
            if size < 5:
                return pc_fail(err, defs.WIRE_SHORT_PREFIX, i, size, size)
            ids[i] = <int32_t> pc_be32(buf + start + 1)
            starts[i] = start + 5
            if views != NULL:
                pc_write_view(views + 16 * i, buf, starts[i], <int32_t> (end - starts[i]), buffer_index)
            continue
        if guid:
            if first != 1:
                return pc_fail(err, defs.WIRE_BAD_MAGIC, i, 0, first)
            if size < 17:
                return pc_fail(err, defs.WIRE_SHORT_PREFIX, i, size, size)
            memcpy(guids + 16 * i, buf + start + 1, 16)
            ids[i] = 0
            pos = start + 17
        else:
            if first != 0:
                return pc_fail(err, defs.WIRE_BAD_MAGIC, i, 0, first)
            if size < 5:
                return pc_fail(err, defs.WIRE_SHORT_PREFIX, i, size, size)
            ids[i] = <int64_t> pc_be32(buf + start + 1)
            pos = start + 5
        if protobuf:
            k = pos
            rc = pc_read_zigzag(buf, &pos, end, &count)
            if rc:
                return pc_fail(err, defs.WIRE_TRUNCATED_INDEXES if rc == 1 else defs.WIRE_VARINT_TOO_LONG, i, k - start, 0)
            if count == 0:
                if grow(values, capacity, n_values[0] + 1):
                    return -1
                values[0][n_values[0]] = 0
                n_values[0] += 1
                counts[i] = 1
            else:
                if count < 0 or count > defs.MAX_INDEXES:
                    return pc_fail(err, defs.WIRE_INDEX_COUNT, i, k - start, count)
                # each index takes at least one byte: never reserve more than the message holds
                if grow(values, capacity, n_values[0] + min(count, end - pos)):
                    return -1
                for k in range(count):
                    value = pos
                    rc = pc_read_zigzag(buf, &pos, end, &values[0][n_values[0]])
                    if rc:
                        return pc_fail(err, defs.WIRE_TRUNCATED_INDEXES if rc == 1 else defs.WIRE_VARINT_TOO_LONG, i, value - start, 0)
                    n_values[0] += 1
                counts[i] = <int32_t> count
        starts[i] = pos
        if views != NULL:
            pc_write_view(views + 16 * i, buf, pos, <int32_t> (end - pos), buffer_index)
    return 0


cdef copy_values(values_arr, const int64_t *values, int64_t n_values):
    cdef int64_t[::1] dst = values_arr
    memcpy(&dst[0], values, <size_t> n_values * sizeof(int64_t))


def unframe(data, offsets, validity, int kind, int32_t buffer_index, views=True):
    """Split the prefixes of one chunk; same contract as ``wire_py.unframe``."""
    cdef const uint8_t[::1] buf = memoryview(data).cast("B") if len(data) else b"\0"
    offs_arr = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef const int64_t[::1] offs = offs_arr
    cdef int64_t n = offs.shape[0] - 1
    cdef const uint8_t[::1] valid_view
    cdef const uint8_t *valid = NULL
    if validity is not None:
        valid_view = np.ascontiguousarray(validity, dtype=np.uint8)
        valid = &valid_view[0] if n > 0 else NULL
    glue = kind == KIND_AWS_GLUE
    guid = glue or kind in (KIND_CONFLUENT_GUID, KIND_CONFLUENT_GUID_PROTOBUF)
    protobuf = kind in (KIND_CONFLUENT_PROTOBUF, KIND_CONFLUENT_GUID_PROTOBUF)
    hortonworks = kind == KIND_HORTONWORKS
    ids_arr = np.empty(n, dtype=np.int64)
    starts_arr = np.empty(n, dtype=np.int64)
    guids_arr = np.zeros(16 * n if guid else 1, dtype=np.uint8)
    versions_arr = np.zeros(n if hortonworks else 1, dtype=np.int32)
    protocols_arr = np.zeros(n if (hortonworks or glue) else 1, dtype=np.uint8)
    counts_arr = np.zeros(n if protobuf else 1, dtype=np.int32)
    want_views = bool(views)
    views_arr = np.empty(16 * n if (n and want_views) else 1, dtype=np.uint8)
    cdef uint8_t[::1] view_buf = views_arr
    cdef uint8_t *vptr = &view_buf[0] if want_views else NULL
    cdef int64_t[::1] ids = ids_arr
    cdef int64_t[::1] starts = starts_arr
    cdef uint8_t[::1] guids = guids_arr
    cdef int32_t[::1] versions = versions_arr
    cdef uint8_t[::1] protocols = protocols_arr
    cdef int32_t[::1] counts = counts_arr
    cdef int64_t *values = NULL
    cdef int64_t n_values = 0, capacity = 0
    cdef pc_error err
    cdef int rc
    err.code = 0
    if n == 0:
        rc = 0
    else:
        with nogil:
            rc = unframe_loop(&buf[0], &offs[0], valid, n, kind, &ids[0], &guids[0], &versions[0],
                              &protocols[0], &starts[0], &counts[0], &values, &n_values, &capacity,
                              vptr, buffer_index, &err)
    try:
        if rc == -1:
            raise MemoryError("pulsar_codec: out of memory while reading message indexes")
        values_arr = None
        if protobuf:
            values_arr = np.empty(n_values, dtype=np.int64)
            if n_values:
                copy_values(values_arr, values, n_values)
    finally:
        free(values)
    error = None if rc == 0 else (err.code, err.index, err.offset, err.detail)
    return (
        error,
        ids_arr,
        guids_arr if guid else None,
        versions_arr if hortonworks else None,
        protocols_arr if (hortonworks or glue) else None,
        starts_arr,
        counts_arr if protobuf else None,
        values_arr,
        views_arr[:16 * n] if want_views else None,
    )


def binary_views(data, starts, ends, validity, int32_t buffer_index):
    """Arrow binary-view structs (16 bytes each) for payload slices data[starts[i]:ends[i]].

    twin: wire_py.binary_views
    """
    cdef const uint8_t[::1] buf = memoryview(data).cast("B") if len(data) else b"\0"
    cdef const int64_t[::1] s = np.ascontiguousarray(starts, dtype=np.int64)
    cdef const int64_t[::1] e = np.ascontiguousarray(ends, dtype=np.int64)
    cdef int64_t n = s.shape[0], i, length
    cdef int32_t len32, off32
    out_arr = np.zeros(16 * n if n else 1, dtype=np.uint8)
    cdef uint8_t[::1] out = out_arr
    cdef const uint8_t[::1] valid_view
    cdef const uint8_t *valid = NULL
    if validity is not None and n:
        valid_view = np.ascontiguousarray(validity, dtype=np.uint8)
        valid = &valid_view[0]
    with nogil:
        for i in range(n):
            if valid != NULL and not valid[i]:
                continue
            length = e[i] - s[i]
            len32 = <int32_t> length
            memcpy(&out[16 * i], &len32, 4)
            if length <= 12:
                if length > 0:
                    memcpy(&out[16 * i + 4], &buf[s[i]], <size_t> length)
            else:
                off32 = <int32_t> s[i]
                memcpy(&out[16 * i + 4], &buf[s[i]], 4)
                memcpy(&out[16 * i + 8], &buffer_index, 4)
                memcpy(&out[16 * i + 12], &off32, 4)
    return out_arr[:16 * n]


def frame(int kind, ids, guids, bytes suffix, payload_data, payload_offsets, validity):
    """Write prefix || suffix || payload per message; same contract as ``wire_py.frame``."""
    cdef const uint8_t[::1] dbuf = memoryview(payload_data).cast("B") if len(payload_data) else b"\0"
    cdef const int64_t[::1] doffs = np.ascontiguousarray(payload_offsets, dtype=np.int64)
    cdef const int64_t[::1] id_view = np.ascontiguousarray(ids, dtype=np.int64)
    cdef int64_t n = doffs.shape[0] - 1, i, total = 0, pos = 0, plen, sid
    cdef const uint8_t[::1] guid_view = np.ascontiguousarray(guids, dtype=np.uint8) if guids is not None else b"\0"
    cdef const uint8_t[::1] valid_view
    cdef const uint8_t *valid = NULL
    cdef const uint8_t *sfx = suffix
    cdef int64_t slen = len(suffix)
    if validity is not None and n:
        valid_view = np.ascontiguousarray(validity, dtype=np.uint8)
        valid = &valid_view[0]
    # exact output size first, so the buffer is allocated once
    for i in range(n):
        if valid != NULL and not valid[i]:
            continue
        if kind == defs.KIND_CONFLUENT or kind == defs.KIND_CONFLUENT_PROTOBUF or kind == defs.KIND_APICURIO_V3:
            total += 5
        elif kind == defs.KIND_CONFLUENT_GUID or kind == defs.KIND_CONFLUENT_GUID_PROTOBUF:
            total += 17
        elif kind == defs.KIND_AWS_GLUE:
            total += defs.GLUE_PREFIX_SIZE
        elif kind == defs.KIND_APICURIO:
            total += 9
        else:
            total += 9 if id_view[i] > 0x7FFFFFFF else 5
        total += slen + doffs[i + 1] - doffs[i]
    out_arr = np.empty(total if total else 1, dtype=np.uint8)
    offsets_arr = np.empty(n + 1, dtype=np.int64)
    cdef uint8_t[::1] out = out_arr
    cdef int64_t[::1] offsets = offsets_arr
    offsets[0] = 0
    with nogil:
        for i in range(n):
            if valid == NULL or valid[i]:
                sid = id_view[i]
                if kind == defs.KIND_CONFLUENT or kind == defs.KIND_CONFLUENT_PROTOBUF or kind == defs.KIND_APICURIO_V3:
                    out[pos] = 0
                    pc_put_be32(&out[pos + 1], <uint32_t> sid)
                    pos += 5
                elif kind == defs.KIND_CONFLUENT_GUID or kind == defs.KIND_CONFLUENT_GUID_PROTOBUF:
                    out[pos] = 1
                    memcpy(&out[pos + 1], &guid_view[16 * i], 16)
                    pos += 17
                elif kind == defs.KIND_AWS_GLUE:
                    out[pos] = defs.GLUE_HEADER_VERSION
                    out[pos + 1] = defs.GLUE_NO_COMPRESSION
                    memcpy(&out[pos + 2], &guid_view[16 * i], 16)
                    pos += defs.GLUE_PREFIX_SIZE
                elif kind == defs.KIND_APICURIO:
                    out[pos] = 0
                    pc_put_be64(&out[pos + 1], <uint64_t> sid)
                    pos += 9
                elif sid > 0x7FFFFFFF:
                    out[pos] = 2
                    pc_put_be64(&out[pos + 1], <uint64_t> sid)
                    pos += 9
                else:
                    out[pos] = 3
                    pc_put_be32(&out[pos + 1], <uint32_t> sid)
                    pos += 5
                if slen:
                    memcpy(&out[pos], sfx, <size_t> slen)
                    pos += slen
                plen = doffs[i + 1] - doffs[i]
                if plen:
                    memcpy(&out[pos], &dbuf[doffs[i]], <size_t> plen)
                    pos += plen
            offsets[i + 1] = pos
    return out_arr[:total], offsets_arr


cdef int distinct_loop(const uint8_t *buf, const int64_t *offs64, const int32_t *offs32, const uint8_t *valid,
                       int64_t n, int kind, int64_t limit, int64_t *found, uint8_t *found_guids,
                       int64_t *nfound, pc_error *err) noexcept nogil:
    # twin: wire_py.distinct_ids
    cdef int64_t i, j, start, end, size, sid = 0, need
    cdef uint8_t first, magic
    cdef int over = 0
    cdef bint glue = kind == defs.KIND_AWS_GLUE
    cdef bint guid = kind == defs.KIND_CONFLUENT_GUID or glue
    cdef int64_t skip = 2 if glue else 1
    need = defs.GLUE_PREFIX_SIZE if glue else (17 if guid else (9 if kind == defs.KIND_APICURIO else 5))
    magic = defs.GLUE_HEADER_VERSION if glue else (1 if guid else 0)
    for i in range(n):
        if offs64 != NULL:
            start = offs64[i]
            end = offs64[i + 1]
        else:
            start = offs32[i]
            end = offs32[i + 1]
        if valid != NULL and not valid[i]:
            continue
        size = end - start
        if size == 0:
            return pc_fail(err, defs.WIRE_EMPTY, i, 0, 0)
        first = buf[start]
        if first != magic:
            return pc_fail(err, defs.WIRE_BAD_MAGIC, i, 0, first)
        if size < need:
            return pc_fail(err, defs.WIRE_SHORT_PREFIX, i, size, size)
        if glue:
            if buf[start + 1] != defs.GLUE_NO_COMPRESSION and buf[start + 1] != defs.GLUE_ZLIB:
                return pc_fail(err, defs.WIRE_UNKNOWN_COMPRESSION, i, 1, buf[start + 1])
            if buf[start + 1] == defs.GLUE_ZLIB:
                over = -2  # a compressed body must be inflated first; the prefixes are still checked
                continue
        if guid:
            for j in range(nfound[0]):
                if memcmp(found_guids + 16 * j, buf + start + skip, 16) == 0:
                    break
            else:
                if nfound[0] == limit:
                    over = -2  # too many ids, but every prefix is still checked
                else:
                    memcpy(found_guids + 16 * nfound[0], buf + start + skip, 16)
                    nfound[0] += 1
            continue
        if kind == defs.KIND_CONFLUENT:
            sid = <int64_t> pc_be32(buf + start + 1)
        elif kind == defs.KIND_APICURIO_V3:
            sid = <int32_t> pc_be32(buf + start + 1)
        else:
            sid = <int64_t> pc_be64(buf + start + 1)
        for j in range(nfound[0]):
            if found[j] == sid:
                break
        else:
            if nfound[0] == limit:
                over = -2
            else:
                found[nfound[0]] = sid
                nfound[0] += 1
    return over


cdef class _Rows:
    """The message offsets (int32 kept as they are, else int64) and validity bytes of one chunk,
    as pointers a ``nogil`` loop reads; the arrays stay alive as long as this object."""
    cdef const int64_t[::1] o64
    cdef const int32_t[::1] o32
    cdef const uint8_t[::1] vv
    cdef const int64_t *p64
    cdef const int32_t *p32
    cdef const uint8_t *valid
    cdef int64_t n

    def __cinit__(self, offsets, validity):
        self.n = len(offsets) - 1
        self.p64 = NULL
        self.p32 = NULL
        self.valid = NULL
        if self.n <= 0:
            return
        if offsets.dtype == np.int32:
            self.o32 = offsets
            self.p32 = &self.o32[0]
        else:
            self.o64 = np.ascontiguousarray(offsets, dtype=np.int64)
            self.p64 = &self.o64[0]
        if validity is not None:
            self.vv = np.ascontiguousarray(validity, dtype=np.uint8)
            self.valid = &self.vv[0]


def distinct_ids(data, offsets, validity, int kind, int64_t limit):
    """Check the fixed-size prefixes of one chunk and collect its distinct schema ids.

    twin: wire_py.distinct_ids
    """
    if kind not in (KIND_CONFLUENT, KIND_CONFLUENT_GUID, KIND_APICURIO, KIND_APICURIO_V3, KIND_AWS_GLUE):
        raise ValueError(f"distinct_ids supports the fixed-size prefixes only, not kind {kind}")
    cdef const uint8_t[::1] buf = memoryview(data).cast("B") if len(data) else b"\0"
    cdef _Rows rows = _Rows(offsets, validity)
    cdef int64_t n = rows.n
    cdef pc_error err
    cdef int rc = 0
    cdef int64_t nfound = 0
    cdef int64_t lim = limit if limit > 0 else 0
    found_arr = np.zeros(lim + 1, dtype=np.int64)
    guids_arr = np.zeros(16 * (lim + 1), dtype=np.uint8)
    cdef int64_t[::1] found = found_arr
    cdef uint8_t[::1] fg = guids_arr
    if n <= 0:
        return None, []
    err.code = 0
    err.index = 0
    err.offset = 0
    err.detail = 0
    with nogil:
        rc = distinct_loop(&buf[0], rows.p64, rows.p32, rows.valid, n, kind, lim, &found[0], &fg[0], &nfound, &err)
    if rc == -2:
        return None, None
    if rc != 0:
        return (err.code, err.index, err.offset, err.detail), None
    if kind == KIND_CONFLUENT_GUID or kind == KIND_AWS_GLUE:
        return None, sorted(bytes(guids_arr[16 * j:16 * j + 16]) for j in range(nfound))
    return None, sorted(int(found_arr[j]) for j in range(nfound))


def same_bytes(data, offsets, validity, int64_t at, ref):
    """Whether every non-null message of one chunk holds the bytes ``ref`` at offset ``at``.

    twin: wire_py.same_bytes
    """
    cdef const uint8_t[::1] buf = memoryview(data).cast("B") if len(data) else b"\0"
    cdef bytes want = bytes(ref)
    cdef const uint8_t *r = want
    cdef int64_t width = len(want)
    cdef _Rows rows = _Rows(offsets, validity)
    cdef int64_t n = rows.n, i, start, end
    cdef const int64_t *p64 = rows.p64
    cdef const int32_t *p32 = rows.p32
    cdef const uint8_t *valid = rows.valid
    cdef bint same = True
    if n <= 0:
        return True
    with nogil:
        for i in range(n):
            if valid != NULL and not valid[i]:
                continue
            if p64 != NULL:
                start = p64[i]
                end = p64[i + 1]
            else:
                start = p32[i]
                end = p32[i + 1]
            if end - start < at + width or (width and memcmp(&buf[start + at], r, <size_t> width) != 0):
                same = False
                break
    return same
