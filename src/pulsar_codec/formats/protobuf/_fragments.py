"""Protobuf wire fragments for whole columns: one binary value per row.

A fragment is a field's bytes in one row (its tag and value, or nothing where the field is not
written). :mod:`._columnar` builds a column of them per field and joins them per row; the data of
each fragment column is one buffer laid out row after row, so joining consecutive fragments per
row takes new offsets only (:func:`_joined`). The byte loops (varints, length-prefixed bodies,
joining columns row by row) are the ``protobuf_encode`` kernel's, compiled or its pure twin.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._kernels import _backend
from ..._kernels.protobuf_py import _varint_bytes  # the pure kernel's writer of one varint

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_EMPTY = pa.scalar(b"", pa.large_binary())


def _tag(number: int, wire: int) -> bytes:
    return _varint_bytes(number << 3 | wire)


def _binary(offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(
        pa.large_binary(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data if len(data) else b"")]
    )


def _offsets(array: pa.Array) -> np.ndarray:
    """The int64 offsets of a large_binary array as they apply to it (its slice offset taken)."""
    raw = np.frombuffer(array.buffers()[1], dtype=np.int64)
    return raw[array.offset : array.offset + len(array) + 1]


def _lengths(array: pa.Array) -> np.ndarray:
    return np.diff(_offsets(array))


def _sized(sizes: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


def _kernel() -> Any:
    """The active backend's Protobuf encode kernel (the byte loops of this module)."""
    return _backend.active().protobuf_encode


def _data(array: pa.Array) -> Any:
    """The data buffer of a large_binary array (an empty one for an array of empty values)."""
    data = array.buffers()[2]
    return b"" if data is None else data


def _varint_fragments(prefix: bytes, values: np.ndarray, present: np.ndarray | None) -> pa.Array:
    """``prefix`` + the varint of each uint64 in ``values`` where ``present`` (empty elsewhere)."""
    return _binary(*_kernel().varint_fragments(prefix, values, present))


def _fixed_fragments(prefix: bytes, raw: np.ndarray, present: np.ndarray | None) -> pa.Array:
    """``prefix`` + the little-endian bytes of each value of ``raw`` where ``present``."""
    width = raw.dtype.itemsize
    length = len(raw)
    if present is not None:
        raw = raw[present]
    rows = np.empty((len(raw), len(prefix) + width), dtype=np.uint8)
    rows[:, : len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
    rows[:, len(prefix) :] = np.ascontiguousarray(raw).view(np.uint8).reshape(len(raw), width)
    sizes = np.full(length, len(prefix) + width, dtype=np.int64)
    if present is not None:
        sizes = np.where(present, sizes, 0)
    return _binary(_sized(sizes), rows.reshape(-1))


def _length_fragments(prefix: bytes, bodies: pa.Array, present: np.ndarray | None) -> pa.Array:
    """``prefix`` + the varint length + each body of ``bodies`` (large_binary) where ``present``."""
    return _binary(*_kernel().length_fragments(prefix, _offsets(bodies), _data(bodies), present))


def _joined(fragments: pa.Array, counts: np.ndarray) -> pa.Array:
    """One value per row: the concatenation of ``counts[i]`` consecutive ``fragments`` for row
    i. The fragments are already in row order in one data buffer, so only offsets are new."""
    if fragments.offset:
        fragments = pc.binary_join_element_wise(fragments, _EMPTY, _EMPTY)  # a fresh, unsliced array
    bounds = _sized(counts)
    offsets = _offsets(fragments)[bounds]
    return pa.Array.from_buffers(
        pa.large_binary(), len(counts), [None, pa.py_buffer(np.ascontiguousarray(offsets)), fragments.buffers()[2]]
    )


def _concat(fragments: list[pa.Array], length: int) -> pa.Array:
    """One value per row: the row's values of ``fragments`` (columns of ``length`` rows), in order."""
    if not fragments:
        return pa.array([b""] * length, pa.large_binary())
    if len(fragments) == 1:
        return fragments[0]
    return _binary(*_kernel().join_fragments([(_offsets(f), _data(f)) for f in fragments], length))


def _joined_present(bodies: pa.Array, present: np.ndarray | None) -> pa.Array:
    if present is not None and not present.all():
        return pc.if_else(pa.array(present), bodies, _EMPTY)
    return bodies
