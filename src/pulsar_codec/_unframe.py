"""The wire-prefix step of :mod:`pulsar_codec.pipeline`: schema ids and payload starts per row.

Two paths: a batch with one schema id and valid fixed-size prefixes needs only the id of its
first message (:func:`single_id`; the payload format then checks and skips the prefix of every
message itself); anything else is unframed row by row (:func:`unframe_parts`), resuming after bad
prefixes when asked to keep going.
Compressed AWS Glue bodies are inflated before either path (:func:`inflate_chunks`).
"""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from . import wire
from ._arrow import Chunk
from ._glue import GLUE_PREFIX, GLUE_ZLIB, inflate
from ._kernels import _backend, defs
from .errors import ErrorCode, WireFormatError, error_for, raise_for

__all__ = [
    "PREFIX_SIZE",
    "index_paths",
    "inflate_chunks",
    "registry_key",
    "row_keys",
    "single_id",
    "unframe_parts",
    "wide",
]

# protocols whose prefix has one fixed size: the one-id fast path applies to them
PREFIX_SIZE = {
    wire.CONFLUENT.kind: 5,
    wire.CONFLUENT_GUID.kind: 17,
    wire.APICURIO.kind: 9,
    wire.APICURIO_V3.kind: 5,
    wire.AWS_GLUE.kind: 18,
}
# the Confluent Protobuf prefixes: the protocol of their id part (checked by the wire kernel), whose
# size is where the message-index array starts; the fast path takes them when every message of a
# batch has the same array (one message type, nearly always)
_ID_PART = {
    wire.CONFLUENT_PROTOBUF.kind: wire.CONFLUENT,
    wire.CONFLUENT_GUID_PROTOBUF.kind: wire.CONFLUENT_GUID,
}
_GLUE_HEADER = defs.GLUE_HEADER_VERSION
_GUID_KEY = np.dtype([("hi", "<u8"), ("lo", "<u8")])
_HW_KEY = np.dtype([("meta", "u1"), ("id", "<i8"), ("version", "<i4")])
# rows the wire kernel is first handed again after a bad prefix (see unframe_parts)
_RESUME_WINDOW = 64


def wide(chunk: Chunk) -> Chunk:
    """``chunk`` with int64 offsets (a copy of the offsets only when they are int32)."""
    if chunk.offsets.dtype == np.int64:
        return chunk
    return Chunk(chunk.data, chunk.offsets.astype(np.int64), chunk.validity, chunk.row)


def inflate_chunks(
    chunks: list[Chunk], protocol: wire.Protocol, keep_going: bool, wire_errors: list[tuple[Any, ...]]
) -> list[Chunk]:
    """``chunks`` with every zlib-compressed AWS Glue message rewritten as its uncompressed form
    (same header, compression byte ``00``, the inflated body) in a new data buffer, so the paths
    after this one read plain prefixes; chunks without compressed messages are passed through.

    A body that does not inflate (or inflates past ``protocol.max_inflated``) is a
    ``WIRE_DECOMPRESSION_FAILED`` error at byte 18: raised when it is the batch's first bad
    message, else (keep_going) its row turns null and the error is appended to ``wire_errors``.
    Payload error offsets of an inflated message count inside its inflated body.
    """
    if not isinstance(protocol, wire.GlueProtocol):
        return chunks
    out = []
    for k, chunk in enumerate(chunks):
        rows = _compressed_rows(chunk)
        if len(rows):
            chunk = _inflated_chunk(chunks, k, rows, protocol, keep_going, wire_errors)
        out.append(chunk)
    return out


def _compressed_rows(chunk: Chunk) -> np.ndarray:
    """The rows of a chunk whose prefix is a whole AWS Glue header with the zlib compression byte."""
    offs = np.asarray(chunk.offsets, dtype=np.int64)
    if not len(chunk.data):
        return np.zeros(0, dtype=np.int64)
    buf = np.frombuffer(chunk.data, dtype=np.uint8)
    last = len(buf) - 1
    starts = offs[:-1]
    whole = (offs[1:] - starts) >= GLUE_PREFIX
    if chunk.validity is not None:
        whole &= chunk.validity
    head = buf[np.minimum(starts, last)]
    compression = buf[np.minimum(starts + 1, last)]
    return np.flatnonzero(whole & (head == _GLUE_HEADER) & (compression == GLUE_ZLIB))


def _inflated_chunk(
    chunks: list[Chunk],
    k: int,
    rows: np.ndarray,
    protocol: wire.GlueProtocol,
    keep_going: bool,
    wire_errors: list[tuple[Any, ...]],
) -> Chunk:
    chunk = chunks[k]
    offs = np.asarray(chunk.offsets, dtype=np.int64)
    data = memoryview(chunk.data).cast("B")
    valid = None if chunk.validity is None else chunk.validity.copy()
    lengths = np.diff(offs)
    pieces: list[Any] = []
    copied = int(offs[0])  # data before this position is already in pieces
    code = ErrorCode.WIRE_DECOMPRESSION_FAILED
    for i in rows.tolist():
        start, end = int(offs[i]), int(offs[i + 1])
        body = inflate(data[start + GLUE_PREFIX : end], protocol.max_inflated)
        if isinstance(body, str):
            context = protocol.error_context(code)
            if not keep_going:
                _raise_earlier_prefix_error(chunks, k, i, protocol)
                raise_for(code, chunk.row + i, GLUE_PREFIX, 0, reason=body, **context)
            exc = error_for(code, chunk.row + i, GLUE_PREFIX, 0, reason=body, **context)
            wire_errors.append((code, chunk.row + i, GLUE_PREFIX, 0, str(exc)))
            if valid is None:
                valid = np.ones(chunk.length, dtype=bool)
            valid[i] = False
            continue
        pieces.append(data[copied:start])
        pieces.append(bytes([_GLUE_HEADER, 0]))
        pieces.append(data[start + 2 : start + GLUE_PREFIX])
        pieces.append(body)
        lengths[i] = GLUE_PREFIX + len(body)
        copied = end
    pieces.append(data[copied : int(offs[-1])])
    new_offsets = np.zeros(chunk.length + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    return Chunk(pa.py_buffer(b"".join(pieces)), new_offsets, valid, chunk.row)


def _raise_earlier_prefix_error(chunks: list[Chunk], k: int, i: int, protocol: wire.Protocol) -> None:
    """Raise the first bad prefix before row ``i`` of chunk ``k``, if any: it is the batch's first error."""
    kernels = _backend.active().wire
    for j, c in enumerate(chunks[: k + 1]):
        c = wide(c)
        stop = i if j == k else c.length
        if stop == 0:
            continue
        offsets = c.offsets[: stop + 1]
        validity = None if c.validity is None else c.validity[:stop]
        error = kernels.unframe(c.data, offsets, validity, protocol.kind, 0, False)[0]
        if error is not None:
            code, index, offset, detail = error
            raise_for(code, c.row + index, offset, detail, **protocol.error_context(code))


def unframe_parts(chunk: Chunk, protocol: wire.Protocol, keep_going: bool, wire_errors: list[tuple[Any, ...]]) -> Any:
    """Schema-id fields and payload starts of one chunk: ``(ids, guids, versions, protocols, starts,
    valid, paths)`` (guids / versions / protocols None when the protocol has none; ``paths`` the
    Protobuf message-index paths as :func:`index_paths` gives them, None for other protocols). With
    keep_going, a bad prefix makes its row null and the wire kernel resumes after it on a window of
    rows that doubles while the rows are clean, so the kernel walks O(n) rows in all, however many
    rows are bad)."""
    kernels = _backend.active().wire
    chunk = wide(chunk)
    n = chunk.length
    result = kernels.unframe(chunk.data, chunk.offsets, chunk.validity, protocol.kind, 0, False)
    if result[0] is None:  # the common case: one pass, no copies
        paths = None if result[6] is None else index_paths(result[6], result[7])
        return result[1], result[2], result[3], result[4], result[5], chunk.validity, paths
    ids = np.zeros(n, dtype=np.int64)
    guids = None if result[2] is None else np.zeros(16 * n, dtype=np.uint8)
    versions = None if result[3] is None else np.zeros(n, dtype=np.int32)
    protos = None if result[4] is None else np.zeros(n, dtype=np.uint8)
    starts = chunk.offsets[1:].copy()
    valid = np.ones(n, dtype=bool) if chunk.validity is None else chunk.validity.copy()
    counts = np.zeros(n, dtype=np.int32) if protocol.protobuf else None
    value_parts: list[np.ndarray] = []
    lo = 0
    hi = n
    window = _RESUME_WINDOW
    while lo < n:
        if lo:
            # resume on a window of rows, doubled after every clean window: handing the kernel the
            # whole rest after each bad row would make a batch of bad rows cost O(n^2)
            hi = min(n, lo + window)
            result = kernels.unframe(
                chunk.data,
                chunk.offsets[lo : hi + 1],
                None if chunk.validity is None else valid[lo:hi],
                protocol.kind,
                0,
                False,
            )
        error = result[0]
        stop = hi if error is None else lo + error[1]
        ids[lo:stop] = result[1][: stop - lo]
        if guids is not None:
            guids[16 * lo : 16 * stop] = result[2][: 16 * (stop - lo)]
        if versions is not None:
            versions[lo:stop] = result[3][: stop - lo]
        if protos is not None:
            protos[lo:stop] = result[4][: stop - lo]
        starts[lo:stop] = result[5][: stop - lo]
        if counts is not None:
            window_counts = result[6][: stop - lo]
            counts[lo:stop] = window_counts
            value_parts.append(result[7][: int(window_counts.sum())])
        if error is None:
            lo = hi
            window *= 2
            continue
        code, index, offset, detail = error
        row = chunk.row + lo + index
        context = protocol.error_context(code)
        if not keep_going:
            raise_for(code, row, offset, detail, **context)
        exc = error_for(code, row, offset, detail, **context)
        wire_errors.append((code, row, offset, detail, str(exc)))
        valid[stop] = False
        starts[stop] = chunk.offsets[stop + 1]
        lo = stop + 1
        window = _RESUME_WINDOW
    paths = None
    if counts is not None:
        values = np.concatenate(value_parts) if value_parts else np.zeros(0, dtype=np.int64)
        paths = index_paths(counts, values)
    return ids, guids, versions, protos, starts, (None if valid.all() else valid), paths


def index_paths(counts: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Number the Protobuf message-index paths of a chunk: ``(path per row, distinct paths)``.

    ``counts`` (int32 per row) and ``values`` (int64, all rows' indexes one after the other) are
    what the wire kernel reads; a row without indexes (a null or bad message) gets path ``(0,)``.
    Rows of one-element paths (nearly all messages) are numbered with numpy; longer ones one by one.
    """
    n = len(counts)
    if n and len(values) == n and counts.min() == 1 and counts.max() == 1:
        # one index per row (nearly every batch): no offsets to build, and usually one path only
        first = values[0]
        if (values == first).all():
            return np.zeros(n, dtype=np.int32), [(int(first),)]
        lone, lone_rows = np.unique(values, return_inverse=True)
        return lone_rows.reshape(-1).astype(np.int32), [(int(v),) for v in lone.tolist()]
    counts = np.asarray(counts, dtype=np.int64)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    single = counts == 1
    firsts = np.where(single, values[np.minimum(starts[:-1], max(len(values) - 1, 0))] if len(values) else 0, 0)
    distinct: list[tuple[int, ...]] = []
    numbers: dict[tuple[int, ...], int] = {}
    path_no = np.zeros(n, dtype=np.int32)
    lone, lone_rows = np.unique(np.where(single, firsts, 0), return_inverse=True)
    for v in lone.tolist():  # every one-element path (and (0,) for rows without indexes)
        numbers[(int(v),)] = len(distinct)
        distinct.append((int(v),))
    path_no[:] = np.asarray([numbers[(int(v),)] for v in lone.tolist()], dtype=np.int32)[lone_rows.reshape(-1)]
    for row in np.flatnonzero(counts > 1).tolist():
        path = tuple(int(v) for v in values[starts[row] : starts[row + 1]].tolist())
        if path not in numbers:
            numbers[path] = len(distinct)
            distinct.append(path)
        path_no[row] = numbers[path]
    return path_no, distinct


def row_keys(protocol: wire.Protocol, ids: Any, guids: Any, versions: Any, protos: Any) -> np.ndarray:
    """One sortable registry key per row: int64 ids, GUIDs as two big-endian words, Hortonworks
    rows as (is protocol 1, id, version)."""
    if guids is not None:
        words = guids.view(">u8").reshape(-1, 2)  # big-endian words sort like the GUID bytes
        keys = np.empty(len(words), dtype=_GUID_KEY)
        keys["hi"] = words[:, 0]
        keys["lo"] = words[:, 1]
        return keys
    if protos is not None and (protos == 1).any():
        keys = np.zeros(len(ids), dtype=_HW_KEY)
        keys["meta"] = protos == 1
        keys["id"] = ids
        keys["version"] = np.where(protos == 1, versions, 0)
        return keys
    return np.asarray(ids)


def registry_key(key: Any) -> Any:
    """What the registry is asked for: an int id, a ``uuid.UUID``, or ``(metadata_id, version)``."""
    if isinstance(key, (bytes, bytearray)):
        return uuid.UUID(bytes=bytes(key))
    if isinstance(key, np.void):
        if key.dtype.names == _GUID_KEY.names:
            return uuid.UUID(int=(int(key["hi"]) << 64) | int(key["lo"]))
        if key["meta"]:
            return (int(key["id"]), int(key["version"]))
        return int(key["id"])
    if isinstance(key, (uuid.UUID, tuple)):
        return key
    return int(key)


class SingleId(NamedTuple):
    """What the one-id fast path found in a batch's first and last messages: their id (none for a
    batch of null messages), the prefix size, the Protobuf message-index path (None for other
    protocols) and the prefix bytes every other message must repeat (None: no message to check)."""

    ids: list[Any]
    skip: int
    path: tuple[int, ...] | None
    prefix: bytes | None


def _end_messages(chunks: list[Chunk]) -> list[bytes]:
    """The first and the last non-null message of the batch (one when they are the same; none for
    a batch of null messages)."""
    found: list[bytes] = []
    for order in (chunks, reversed(chunks)):
        for c in order:
            if not c.length or (c.validity is not None and not c.validity.any()):
                continue
            if c.validity is None:
                row = 0 if not found else c.length - 1
            else:
                row = int(c.validity.argmax()) if not found else c.length - 1 - int(c.validity[::-1].argmax())
            found.append(bytes(memoryview(c.data)[int(c.offsets[row]) : int(c.offsets[row + 1])]))
            break
        if not found:
            return []
    return found


def single_id(chunks: list[Chunk], protocol: wire.Protocol) -> SingleId | None:
    """The one-id fast path's view of a batch, when its first and last messages carry the same
    valid fixed-size prefix (and for Protobuf the same message-index array); None when the general
    path is needed at once (another protocol, a bad or compressed first prefix, two ids).

    Only those two messages are read here: the payload format checks that every message begins
    with ``prefix`` while it decodes it (:class:`~pulsar_codec.formats.base.PrefixMismatch`
    otherwise), so a batch costs no pass over its prefixes before the decode. Comparing the last
    message first catches a batch that crosses a schema change before any row is decoded."""
    id_part = _ID_PART.get(protocol.kind, protocol)
    if id_part.kind not in PREFIX_SIZE:
        return None
    skip = PREFIX_SIZE[id_part.kind]
    ends = _end_messages(chunks)
    if not ends:  # null messages only: nothing to read
        return SingleId([], skip + 1, (0,), None) if id_part is not protocol else SingleId([], skip, None, None)
    first = ends[0]
    offsets = np.array([0, len(first)], dtype=np.int64)
    error, ids = _backend.active().wire.distinct_ids(first, offsets, None, id_part.kind, 1)
    if error is not None or not ids:
        return None
    path = None
    if id_part is not protocol:
        try:
            _, indexes, body = protocol.unpack_indexes(first)
        except WireFormatError:
            return None
        skip, path = len(first) - len(body), tuple(indexes) or (0,)
    prefix = first[:skip]
    if any(m[:skip] != prefix for m in ends[1:]):
        return None
    return SingleId(list(ids), skip, path, prefix)
