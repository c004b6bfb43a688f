"""Pure-Python twin of the wire-prefix kernel (compiled twin: ``wire_c.pyx``).

The kernel walks the messages of one Arrow chunk (data buffer + offsets + validity), checks each
prefix and reports, per message, the schema id fields and where the payload starts. It never
formats error text: on the first bad message it returns an error tuple ``(code, index, offset,
detail)`` and :mod:`pulsar_codec.errors` turns that into the exception.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np

from ._typing import AnyArray, ArrayLike, ByteData, Int32Array, Int64Array, KernelError, UInt8Array
from .defs import (
    GLUE_HEADER_VERSION,
    GLUE_NO_COMPRESSION,
    GLUE_PREFIX_SIZE,
    GLUE_ZLIB,
    KIND_APICURIO,
    KIND_APICURIO_V3,
    KIND_AWS_GLUE,
    KIND_CONFLUENT,
    KIND_CONFLUENT_GUID,
    KIND_CONFLUENT_GUID_PROTOBUF,
    KIND_CONFLUENT_PROTOBUF,
    KIND_HORTONWORKS,
    MAX_INDEXES,
    WIRE_BAD_MAGIC,
    WIRE_EMPTY,
    WIRE_INDEX_COUNT,
    WIRE_SHORT_PREFIX,
    WIRE_TRUNCATED_INDEXES,
    WIRE_UNKNOWN_COMPRESSION,
    WIRE_UNKNOWN_PROTOCOL,
    WIRE_VARINT_TOO_LONG,
)

__all__ = [
    "KIND_CONFLUENT",
    "KIND_CONFLUENT_PROTOBUF",
    "KIND_CONFLUENT_GUID",
    "KIND_CONFLUENT_GUID_PROTOBUF",
    "KIND_HORTONWORKS",
    "KIND_APICURIO",
    "KIND_APICURIO_V3",
    "KIND_AWS_GLUE",
    "unframe",
    "frame",
    "binary_views",
    "distinct_ids",
    "same_bytes",
]

# error, ids, guids, versions, protocols, starts, index_counts, index_values, views
UnframeResult: TypeAlias = tuple[
    KernelError | None,
    Int64Array,
    UInt8Array | None,
    Int32Array | None,
    UInt8Array | None,
    Int64Array,
    Int32Array | None,
    Int64Array | None,
    UInt8Array | None,
]

# Hortonworks protocol byte -> bytes after it
_HW_ID_SIZE: dict[int, int] = {0: 4, 1: 12, 2: 8, 3: 4, 4: 4}


def _read_zigzag(buf: memoryview, pos: int, end: int) -> tuple[int | None, int]:
    """Return (value, new_pos) or (None, status) for a zigzag varint of at most 10 bytes."""
    acc = 0
    shift = 0
    for _ in range(10):
        if pos >= end:
            return None, WIRE_TRUNCATED_INDEXES
        b = buf[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if not b & 0x80:
            acc &= 0xFFFFFFFFFFFFFFFF
            return (acc >> 1) ^ -(acc & 1), pos
        shift += 7
    return None, WIRE_VARINT_TOO_LONG


def unframe(
    data: ByteData,
    offsets: AnyArray,
    validity: AnyArray | None,
    kind: int,
    buffer_index: int,
    views: bool = True,
) -> UnframeResult:
    """Split the prefixes of one chunk.

    The protocols whose prefix size follows from its first byte (all but the Protobuf variants)
    are parsed with numpy, all rows at once; the Protobuf variants walk the message-index varints
    row by row. Both paths report the first bad message exactly as the compiled twin does.

    Parameters
    ----------
    data : bytes-like
        The chunk's data buffer.
    offsets : numpy int32/int64 array of n + 1 entries
        Message boundaries in ``data`` (already adjusted for the array's offset).
    validity : numpy bool array of n entries, or None when every message is valid.
    kind : int
        One of the KIND_* constants.
    buffer_index : int
        Index of ``data`` among the data buffers of the binary-view array being built.
    views : bool
        False: skip the binary views (``views`` is then None); callers that walk the payloads
        themselves only need ``starts``.

    Returns
    -------
    (error, ids, guids, versions, protocols, starts, index_counts, index_values, views)
        ``error`` is None or ``(code, index, offset, detail)``. ``ids`` int64[n] (integer ids, or
        the metadata id for Hortonworks protocol 1), ``guids`` uint8[16n] or None, ``versions``
        int32[n] or None (Hortonworks protocol 1), ``protocols`` uint8[n] or None (the Hortonworks
        protocol byte; the AWS Glue compression byte),
        ``starts`` int64[n] payload start offsets, ``index_counts`` int32[n] and ``index_values``
        int64[m] for the Protobuf variants, else None; ``views`` uint8[16n] Arrow binary views of
        the payloads (meaningful for the messages before the error, if any).
    """
    if kind not in (KIND_CONFLUENT_PROTOBUF, KIND_CONFLUENT_GUID_PROTOBUF):
        return _unframe_vectorised(data, offsets, validity, kind, buffer_index, views)
    return _unframe_rows(data, offsets, validity, kind, buffer_index, views)


def _unframe_rows(
    data: ByteData, offsets: AnyArray, validity: AnyArray | None, kind: int, buffer_index: int, views: bool = True
) -> UnframeResult:
    """Row-by-row :func:`unframe` (any protocol; used for the Protobuf variants)."""
    buf = memoryview(data).cast("B")
    n = len(offsets) - 1
    offs = np.asarray(offsets).tolist()
    valid = None if validity is None else np.asarray(validity).tolist()
    ids = [0] * n
    starts = [0] * n
    glue = kind == KIND_AWS_GLUE
    guid = glue or kind in (KIND_CONFLUENT_GUID, KIND_CONFLUENT_GUID_PROTOBUF)
    protobuf = kind in (KIND_CONFLUENT_PROTOBUF, KIND_CONFLUENT_GUID_PROTOBUF)
    hortonworks = kind == KIND_HORTONWORKS
    # filled only for the kinds that have them; the others return None in their place
    guids = bytearray(16 * n if guid else 0)
    versions = [0] * (n if hortonworks else 0)
    protocols = bytearray(n if hortonworks or glue else 0)
    counts = [0] * (n if protobuf else 0)
    values: list[int] = []
    error: KernelError | None = None
    from_bytes = int.from_bytes
    for i in range(n):
        start = offs[i]
        end = offs[i + 1]
        if valid is not None and not valid[i]:
            starts[i] = end
            continue
        size = end - start
        if size == 0:
            error = (WIRE_EMPTY, i, 0, 0)
            break
        first = buf[start]
        if kind == KIND_HORTONWORKS:
            need = _HW_ID_SIZE.get(first)
            if need is None:
                error = (WIRE_UNKNOWN_PROTOCOL, i, 0, first)
                break
            if size < 1 + need:
                error = (WIRE_SHORT_PREFIX, i, size, size)
                break
            protocols[i] = first
            if first == 1:
                ids[i] = from_bytes(buf[start + 1 : start + 9], "big", signed=True)
                versions[i] = from_bytes(buf[start + 9 : start + 13], "big", signed=True)
            elif first == 2:
                ids[i] = from_bytes(buf[start + 1 : start + 9], "big", signed=True)
            else:
                ids[i] = from_bytes(buf[start + 1 : start + 5], "big", signed=True)
            starts[i] = start + 1 + need
            continue
        if glue:
            if first != GLUE_HEADER_VERSION:
                error = (WIRE_BAD_MAGIC, i, 0, first)
                break
            if size < GLUE_PREFIX_SIZE:
                error = (WIRE_SHORT_PREFIX, i, size, size)
                break
            compression = buf[start + 1]
            if compression != GLUE_NO_COMPRESSION and compression != GLUE_ZLIB:
                error = (WIRE_UNKNOWN_COMPRESSION, i, 1, compression)
                break
            protocols[i] = compression
            guids[16 * i : 16 * i + 16] = buf[start + 2 : start + GLUE_PREFIX_SIZE]
            starts[i] = start + GLUE_PREFIX_SIZE
            continue
        if kind == KIND_APICURIO:
            if first != 0:
                error = (WIRE_BAD_MAGIC, i, 0, first)
                break
            if size < 9:
                error = (WIRE_SHORT_PREFIX, i, size, size)
                break
            ids[i] = from_bytes(buf[start + 1 : start + 9], "big", signed=True)
            starts[i] = start + 9
            continue
        if kind == KIND_APICURIO_V3:
            if first != 0:
                error = (WIRE_BAD_MAGIC, i, 0, first)
                break
            if size < 5:
                error = (WIRE_SHORT_PREFIX, i, size, size)
                break
            ids[i] = from_bytes(buf[start + 1 : start + 5], "big", signed=True)
            starts[i] = start + 5
            continue
        # Confluent family
        if guid:
            if first != 1:
                error = (WIRE_BAD_MAGIC, i, 0, first)
                break
            if size < 17:
                error = (WIRE_SHORT_PREFIX, i, size, size)
                break
            guids[16 * i : 16 * i + 16] = buf[start + 1 : start + 17]
            pos = start + 17
        else:
            if first != 0:
                error = (WIRE_BAD_MAGIC, i, 0, first)
                break
            if size < 5:
                error = (WIRE_SHORT_PREFIX, i, size, size)
                break
            ids[i] = from_bytes(buf[start + 1 : start + 5], "big")
            pos = start + 5
        if protobuf:
            count, pos2 = _read_zigzag(buf, pos, end)
            if count is None:
                error = (pos2, i, pos - start, 0)
                break
            if count == 0:
                counts[i] = 1
                values.append(0)
                pos = pos2
            else:
                # a count beyond what the remaining bytes can hold is out of range too
                if count < 0 or count > MAX_INDEXES:
                    error = (WIRE_INDEX_COUNT, i, pos - start, count)
                    break
                pos = pos2
                for _ in range(count):
                    value, pos2 = _read_zigzag(buf, pos, end)
                    if value is None:
                        error = (pos2, i, pos - start, 0)
                        break
                    values.append(value)
                    pos = pos2
                if error is not None:
                    break
                counts[i] = count
        starts[i] = pos
    starts_arr = np.array(starts, dtype=np.int64)
    return (
        error,
        np.array(ids, dtype=np.int64),
        np.frombuffer(bytes(guids), dtype=np.uint8) if guid else None,
        np.array(versions, dtype=np.int32) if hortonworks else None,
        np.frombuffer(bytes(protocols), dtype=np.uint8) if hortonworks or glue else None,
        starts_arr,
        np.array(counts, dtype=np.int32) if protobuf else None,
        np.array(values, dtype=np.int64) if protobuf else None,
        None
        if (error is not None or not views)
        else binary_views(data, starts_arr, offsets[1:], validity, buffer_index),
    )


def frame(
    kind: int,
    ids: Int64Array,
    guids: UInt8Array | None,
    suffix: bytes,
    payload_data: ByteData,
    payload_offsets: Int64Array,
    validity: AnyArray | None,
) -> tuple[UInt8Array, Int64Array]:
    """Write ``prefix(id) || suffix || payload`` for every message of one chunk.

    ``ids`` int64[n] (range-checked by the caller), ``guids`` uint8[16n] for the GUID kinds and
    AWS Glue (which writes compression byte 00: a caller that compresses sets it afterwards),
    ``suffix`` the pre-encoded Protobuf message-index array ('' otherwise). Null rows stay empty.
    Hortonworks writes protocol 3, or a protocol-2 frame for ids above 2**31 - 1.
    Returns (data: uint8 ndarray, offsets: int64 ndarray of n + 1 entries).
    """
    dbuf = memoryview(payload_data).cast("B")
    doffs = payload_offsets.tolist()
    id_list = ids.tolist()
    n = len(doffs) - 1
    valid = None if validity is None else validity.tolist()
    guid_bytes = b"" if guids is None else bytes(guids)
    out = bytearray()
    offsets = [0] * (n + 1)
    for i in range(n):
        if valid is None or valid[i]:
            sid = id_list[i]
            if kind == KIND_CONFLUENT or kind == KIND_CONFLUENT_PROTOBUF:
                out += b"\x00"
                out += sid.to_bytes(4, "big")
            elif kind == KIND_CONFLUENT_GUID or kind == KIND_CONFLUENT_GUID_PROTOBUF:
                out += b"\x01"
                out += guid_bytes[16 * i : 16 * i + 16]
            elif kind == KIND_AWS_GLUE:
                out += bytes((GLUE_HEADER_VERSION, GLUE_NO_COMPRESSION))
                out += guid_bytes[16 * i : 16 * i + 16]
            elif kind == KIND_HORTONWORKS:
                if sid > 0x7FFFFFFF:
                    out += b"\x02"
                    out += sid.to_bytes(8, "big", signed=True)
                else:
                    out += b"\x03"
                    out += sid.to_bytes(4, "big", signed=True)
            elif kind == KIND_APICURIO:
                out += b"\x00"
                out += sid.to_bytes(8, "big", signed=True)
            else:  # KIND_APICURIO_V3
                out += b"\x00"
                out += sid.to_bytes(4, "big", signed=True)
            out += suffix
            out += dbuf[doffs[i] : doffs[i + 1]]
        offsets[i + 1] = len(out)
    return np.frombuffer(out, dtype=np.uint8), np.array(offsets, dtype=np.int64)


def binary_views(
    data: ByteData, starts: ArrayLike, ends: ArrayLike, validity: AnyArray | None, buffer_index: int
) -> UInt8Array:
    """Arrow binary-view structs (16 bytes each) for payload slices data[starts[i]:ends[i]].

    Payloads of up to 12 bytes are stored inline; longer ones keep a 4-byte prefix and point at
    ``buffer_index`` / offset. Null rows are all zeros. Built with numpy, no per-row Python.
    """
    buf = np.frombuffer(data, dtype=np.uint8) if len(data) else np.zeros(1, dtype=np.uint8)
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(ends, dtype=np.int64) - starts
    n = len(starts)
    views = np.zeros((n, 16), dtype=np.uint8)
    if validity is not None:
        lengths = np.where(np.asarray(validity, dtype=bool), lengths, 0)
    views[:, 0:4] = lengths.astype("<i4").view(np.uint8).reshape(n, 4)
    # bytes 4..15: inline data for short payloads, else 4-byte prefix + buffer index + offset;
    # one gather of 12 bytes per row (clipped at the buffer's end, then masked past each length)
    index = starts[:, None] + np.arange(12)
    np.minimum(index, len(buf) - 1, out=index)
    inline = buf[index]
    inline[np.arange(12)[None, :] >= lengths[:, None]] = 0
    views[:, 4:16] = inline
    long = lengths > 12
    tail = np.empty((n, 2), dtype="<i4")
    tail[:, 0] = buffer_index
    tail[:, 1] = starts.astype("<i4")
    tail_bytes = tail.view(np.uint8).reshape(n, 8)
    views[long, 8:16] = tail_bytes[long]
    return views.reshape(-1)


_FIXED_PREFIX: dict[int, tuple[int, int]] = {
    KIND_CONFLUENT: (0, 5),
    KIND_CONFLUENT_GUID: (1, 17),
    KIND_APICURIO: (0, 9),
    KIND_APICURIO_V3: (0, 5),
    KIND_AWS_GLUE: (GLUE_HEADER_VERSION, GLUE_PREFIX_SIZE),
}


# Hortonworks: bytes after the protocol byte, by protocol byte 0..4 (-1: unknown protocol)
_HW_NEED = np.array([4, 12, 8, 4, 4, -1], dtype=np.int64)


def _be_int(cols: UInt8Array, signed: bool) -> Int64Array:
    """Big-endian integers from an (n, width) uint8 matrix (width 4 or 8)."""
    width = cols.shape[1]
    dtype = (">i" if signed else ">u") + str(width)
    return np.ascontiguousarray(cols).view(dtype).reshape(-1).astype(np.int64)


def _unframe_vectorised(
    data: ByteData, offsets: AnyArray, validity: AnyArray | None, kind: int, buffer_index: int, views: bool = True
) -> UnframeResult:
    """:func:`unframe` for the prefixes whose size follows from the first byte, with numpy."""
    offs = np.asarray(offsets, dtype=np.int64)
    n = len(offs) - 1
    buf = np.frombuffer(data, dtype=np.uint8) if len(data) else np.zeros(1, dtype=np.uint8)
    starts0, ends = offs[:-1], offs[1:]
    sizes = ends - starts0
    valid = np.ones(n, dtype=bool) if validity is None else np.asarray(validity, dtype=bool)
    last = len(buf) - 1
    first = np.where(sizes > 0, buf[np.minimum(starts0, last)], 0).astype(np.int64)
    compression = None
    if kind == KIND_AWS_GLUE:
        magic, width = _FIXED_PREFIX[kind]
        wrong = valid & (sizes > 0) & (first != magic)
        short = valid & (sizes > 0) & ~wrong & (sizes < width)
        compression = np.where(sizes > 1, buf[np.minimum(starts0 + 1, last)], 0).astype(np.int64)
        odd = valid & (sizes >= width) & ~wrong & (compression != GLUE_NO_COMPRESSION) & (compression != GLUE_ZLIB)
        unknown = wrong
        bad = valid & ((sizes == 0) | wrong | short | odd)
        prefix = np.full(n, width, dtype=np.int64)
    elif kind == KIND_HORTONWORKS:
        need = _HW_NEED[np.minimum(first, 5)]
        unknown = valid & (sizes > 0) & (need < 0)
        short = valid & (sizes > 0) & (need >= 0) & (sizes < 1 + need)
        bad = valid & ((sizes == 0) | unknown | short)
        prefix = 1 + np.maximum(need, 0)
    else:
        magic, width = _FIXED_PREFIX[kind]
        wrong = valid & (sizes > 0) & (first != magic)
        short = valid & (sizes > 0) & ~wrong & (sizes < width)
        unknown = wrong
        bad = valid & ((sizes == 0) | wrong | short)
        prefix = np.full(n, width, dtype=np.int64)
    if bad.any():
        i = int(np.argmax(bad))
        size = int(sizes[i])
        if size == 0:
            error = (WIRE_EMPTY, i, 0, 0)
        elif unknown[i]:
            error = (WIRE_UNKNOWN_PROTOCOL if kind == KIND_HORTONWORKS else WIRE_BAD_MAGIC, i, 0, int(first[i]))
        elif compression is not None and size >= GLUE_PREFIX_SIZE:
            error = (WIRE_UNKNOWN_COMPRESSION, i, 1, int(compression[i]))
        else:
            error = (WIRE_SHORT_PREFIX, i, size, size)
        # like the compiled twin, the outputs still describe the rows before the bad one
        valid = valid.copy()
        valid[i:] = False
    else:
        error = None
    # the id bytes of every row (rows shorter than the widest prefix read clipped garbage that
    # is never used: each row only takes the bytes its own prefix covers)
    span = 16 if kind in (KIND_CONFLUENT_GUID, KIND_AWS_GLUE) else 12
    skip = 2 if kind == KIND_AWS_GLUE else 1  # Glue: header version and compression bytes
    cols = buf[np.minimum(starts0[:, None] + skip + np.arange(span), last)]
    guids = versions = protocols = None
    if kind == KIND_CONFLUENT:
        ids = _be_int(cols[:, :4], signed=False)
    elif kind == KIND_APICURIO_V3:
        ids = _be_int(cols[:, :4], signed=True)
    elif kind == KIND_APICURIO:
        ids = _be_int(cols[:, :8], signed=True)
    elif kind == KIND_CONFLUENT_GUID or kind == KIND_AWS_GLUE:
        ids = np.zeros(n, dtype=np.int64)
        guids = np.where(valid[:, None], cols, 0).astype(np.uint8).reshape(-1)
        if compression is not None:
            protocols = np.where(valid, compression, 0).astype(np.uint8)
    else:  # Hortonworks
        wide = (first == 1) | (first == 2)
        ids = np.where(wide, _be_int(cols[:, :8], signed=True), _be_int(cols[:, :4], signed=True))
        versions = np.where(valid & (first == 1), _be_int(cols[:, 8:12], signed=True), 0).astype(np.int32)
        protocols = np.where(valid, first, 0).astype(np.uint8)
    ids = np.where(valid, ids, 0)
    starts = np.where(valid, starts0 + prefix, ends)
    return (
        error,
        ids,
        guids,
        versions,
        protocols,
        starts,
        None,
        None,
        binary_views(data, starts, ends, valid, buffer_index) if views else None,
    )


def distinct_ids(
    data: ByteData, offsets: AnyArray, validity: AnyArray | None, kind: int, limit: int
) -> tuple[KernelError | None, list[int] | list[bytes] | None]:
    """Check the fixed-size prefixes of one chunk and collect its distinct schema ids.

    Only for the protocols whose prefix has one size (Confluent, Confluent GUID, Apicurio v2 and
    v3, AWS Glue): a caller that finds a single id can hand the payloads to the Avro kernel as "offsets +
    prefix size", without per-message starts or ids.

    Returns
    -------
    (error, ids)
        ``error`` as for :func:`unframe` (first bad message; ``ids`` is then None). Otherwise ``ids``
        is the sorted list of distinct ids (ints, or 16-byte ``bytes`` GUIDs), or None when there
        are more than ``limit`` of them or (AWS Glue) a payload is compressed.
    """
    if kind not in _FIXED_PREFIX:
        raise ValueError(f"distinct_ids supports the fixed-size prefixes only, not kind {kind}")
    magic, need = _FIXED_PREFIX[kind]
    offs = np.asarray(offsets, dtype=np.int64)
    n = len(offs) - 1
    if n <= 0:
        return None, []
    buf = np.frombuffer(data, dtype=np.uint8) if len(data) else np.zeros(1, dtype=np.uint8)
    starts, sizes = offs[:-1], np.diff(offs)
    valid = np.ones(n, dtype=bool) if validity is None else np.asarray(validity, dtype=bool)
    first = np.where(sizes > 0, buf[np.minimum(starts, len(buf) - 1)], magic)
    bad = valid & ((sizes == 0) | (first != magic) | (sizes < need))
    glue = kind == KIND_AWS_GLUE
    compression = np.zeros(n, dtype=np.int64)
    if glue:
        compression = np.where(sizes >= need, buf[np.minimum(starts + 1, len(buf) - 1)], 0).astype(np.int64)
        bad |= valid & ~bad & (compression != GLUE_NO_COMPRESSION) & (compression != GLUE_ZLIB)
    if bad.any():
        i = int(np.argmax(bad))
        size = int(sizes[i])
        if size == 0:
            return (WIRE_EMPTY, i, 0, 0), None
        if int(first[i]) != magic:
            return (WIRE_BAD_MAGIC, i, 0, int(first[i])), None
        if size < need:
            return (WIRE_SHORT_PREFIX, i, size, size), None
        return (WIRE_UNKNOWN_COMPRESSION, i, 1, int(compression[i])), None
    if glue and (valid & (compression == GLUE_ZLIB)).any():
        return None, None  # a compressed body must be inflated first
    rows = starts[valid]
    skip = 2 if glue else 1
    width = need - skip
    cols = buf[rows[:, None] + skip + np.arange(width)]  # (m, width) id bytes
    unique = np.unique(cols, axis=0) if len(cols) else cols
    keys: list[int] | list[bytes]
    if kind == KIND_CONFLUENT_GUID or glue:
        keys = sorted({bytes(r) for r in unique})
    else:
        signed = kind != KIND_CONFLUENT
        keys = sorted(int.from_bytes(bytes(r), "big", signed=signed) for r in unique)
    if len(keys) > limit:
        return None, None
    return None, keys


def same_bytes(data: ByteData, offsets: AnyArray, validity: AnyArray | None, at: int, ref: bytes) -> bool:
    """Whether every non-null message of one chunk holds the bytes ``ref`` at offset ``at`` (so
    is at least ``at + len(ref)`` bytes long): one Protobuf message-index array for a whole batch,
    which then has one prefix size."""
    offs = np.asarray(offsets, dtype=np.int64)
    starts, sizes = offs[:-1], np.diff(offs)
    if validity is not None:
        keep = np.asarray(validity, dtype=bool)
        starts, sizes = starts[keep], sizes[keep]
    if not len(starts):
        return True
    width = len(ref)
    if int(sizes.min()) < at + width:
        return False
    if not width:
        return True
    buf = np.frombuffer(data, dtype=np.uint8)
    found = buf[starts[:, None] + (at + np.arange(width))]
    return bool((found == np.frombuffer(ref, dtype=np.uint8)).all())
