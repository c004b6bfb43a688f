"""AWS Glue Schema Registry bodies: zlib inflation with a size bound, and the binary views that point
at inflated bodies. Shared by :mod:`pulsar_codec.wire` and the pipeline's unframe step; the format
facts and their sources are in :mod:`pulsar_codec.wire`'s documentation."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np
import numpy.typing as npt

from ._arrow import VIEW_LIMIT, Chunk
from ._kernels import defs

__all__ = ["GLUE_PREFIX", "GLUE_ZLIB", "inflate", "inflate_rows", "point_at_inflated"]

GLUE_ZLIB = defs.GLUE_ZLIB  # compression byte of a zlib body
GLUE_PREFIX = defs.GLUE_PREFIX_SIZE  # header version, compression byte, 16-byte schema version UUID


def inflate(body: Any, limit: int) -> bytes | str:
    """The inflated zlib stream ``body``, or the reason it cannot be inflated within ``limit`` bytes."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(body, limit + 1)  # one byte over the limit tells "too large"
    except zlib.error as exc:
        return f"zlib: {exc}"
    if len(out) > limit:
        return f"it inflates to more than max_inflated={limit} bytes"
    if not inflater.eof:
        return "zlib: the compressed stream is truncated"
    return out


def inflate_rows(
    chunk: Chunk, compression: npt.NDArray[Any] | None, starts: npt.NDArray[Any], stop: int, limit: int
) -> tuple[dict[int, bytes], tuple[int, str] | None]:
    """Inflate the zlib bodies among the first ``stop`` rows of an unframed AWS Glue chunk.

    Returns ``({row: body}, None)``, or the bodies before the first failure and ``(row, reason)``.
    """
    bodies: dict[int, bytes] = {}
    if compression is None:
        return bodies, None
    rows = np.flatnonzero(compression[:stop] == GLUE_ZLIB)
    if not len(rows):
        return bodies, None
    data = memoryview(chunk.data).cast("B")
    for i in rows.tolist():
        out = inflate(data[int(starts[i]) : int(chunk.offsets[i + 1])], limit)
        if isinstance(out, str):
            return bodies, (i, out)
        bodies[i] = out
    return bodies, None


def _view_of(body: bytes, buffer_index: int, offset: int) -> bytes:
    """The 16-byte Arrow binary view of ``body``, stored at ``offset`` of variadic buffer ``buffer_index``."""
    if len(body) <= 12:
        return struct.pack("<i", len(body)) + body.ljust(12, b"\0")
    return struct.pack("<i4sii", len(body), body[:4], buffer_index, offset)


def point_at_inflated(
    views: npt.NDArray[Any], inflated: dict[int, bytes], buffers: list[bytearray], first_index: int
) -> npt.NDArray[Any]:
    """``views`` with the rows of ``inflated`` pointing at their bodies, appended to ``buffers`` (the
    variadic data buffers after the input's ``first_index`` ones; a new one below the view limit)."""
    rows = views.reshape(-1, 16).copy()
    for row, body in inflated.items():
        if not buffers or len(buffers[-1]) + len(body) > VIEW_LIMIT:
            buffers.append(bytearray())
        offset = len(buffers[-1])
        buffers[-1] += body
        rows[row] = np.frombuffer(_view_of(body, first_index + len(buffers) - 1, offset), dtype=np.uint8)
    return rows.reshape(-1)
