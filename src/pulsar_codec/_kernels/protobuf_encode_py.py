"""Pure twin of the Protobuf encode kernel (compiled twin: ``protobuf_encode_c.pyx``): the byte
loops of the column-by-column Protobuf encoder (:mod:`pulsar_codec.formats.protobuf._fragments`).

A *fragment column* is one binary value per row, given and returned as ``(offsets, data)``: int64
offsets of n + 1 entries into a uint8 buffer (the offsets of a sliced Arrow array as they apply to
it; they need not start at 0). Every function returns fresh ``(offsets, data)`` whose offsets start
at 0. A row that is not ``present`` (a bool array, or None: every row) gets an empty value.

Both twins give the same bytes. This one builds them with numpy and pyarrow compute, column by
column; the compiled one writes them row by row in C with the GIL released.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._typing import Int64Array, UInt8Array

__all__ = ["join_fragments", "length_fragments", "varint_fragments"]

_U7 = np.uint64(7)
_LOW7 = np.uint64(0x7F)
_TOP = np.uint64(0x80)
_EMPTY = pa.scalar(b"", pa.large_binary())


def _sized(sizes: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


def _check_offsets(offsets: np.ndarray, data_length: int) -> None:
    """Refuse offsets that do not describe values inside their data (a bug upstream, never data);
    the compiled twin copies with bounds checks off and checks the same."""
    if len(offsets) == 0:
        raise ValueError("fragment offsets need at least one entry")
    if offsets[0] < 0 or offsets[-1] > data_length:
        raise ValueError("fragment offsets point outside their data")
    if len(offsets) > 1 and (np.diff(offsets) < 0).any():
        raise ValueError("fragment offsets decrease")


def _mask(present: Any, n: int) -> np.ndarray | None:
    """``present`` as n booleans (None: every row), checked against the row count."""
    if present is None:
        return None
    mask = np.asarray(present, dtype=bool)
    if len(mask) != n:
        raise ValueError("present has another length than the rows")
    return mask


def _data_length(data: Any) -> int:
    return 0 if data is None else len(memoryview(data).cast("B"))


def _varint_sizes(values: np.ndarray) -> np.ndarray:
    sizes = np.ones(len(values), dtype=np.int64)
    rest = values >> _U7
    while True:
        more = rest != 0
        if not more.any():
            return sizes
        sizes += more
        rest = rest >> _U7


def _array(offsets: Any, data: Any) -> pa.Array:
    """A large_binary array over ``(offsets, data)`` (offsets as they apply, not rebased)."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    buffer = pa.py_buffer(data if data is not None and len(data) else b"\0")
    return pa.Array.from_buffers(pa.large_binary(), len(offsets) - 1, [None, pa.py_buffer(offsets), buffer])


def _parts(array: pa.Array) -> tuple[Int64Array, UInt8Array]:
    """``(offsets, data)`` of a large_binary array built here (offset 0)."""
    raw = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset : array.offset + len(array) + 1]
    offsets = raw - raw[0] if len(raw) and raw[0] else raw.copy()
    data = array.buffers()[2]
    start, end = (int(raw[0]), int(raw[-1])) if len(raw) else (0, 0)
    body = np.frombuffer(data, dtype=np.uint8)[start:end] if data is not None else np.zeros(0, dtype=np.uint8)
    return offsets, np.ascontiguousarray(body)


def varint_fragments(prefix: bytes, values: Any, present: Any) -> tuple[Int64Array, UInt8Array]:
    """``prefix`` + the varint of each uint64 of ``values`` where ``present``."""
    values = np.asarray(values, dtype=np.uint64)
    present = _mask(present, len(values))
    sizes = _varint_sizes(values) + len(prefix)
    if present is not None:
        sizes = np.where(present, sizes, 0)
        values = values[present]
    offsets = _sized(sizes)
    data = np.empty(int(offsets[-1]), dtype=np.uint8)
    starts = offsets[:-1] if present is None else offsets[:-1][present]
    for k, byte in enumerate(prefix):
        data[starts + k] = byte
    at = starts + len(prefix)
    while len(values):
        more = values >= _TOP
        data[at] = ((values & _LOW7) | (more.astype(np.uint64) << _U7)).astype(np.uint8)
        at = at[more] + 1
        values = values[more] >> _U7
    return offsets, data


def length_fragments(prefix: bytes, offsets: Any, data: Any, present: Any) -> tuple[Int64Array, UInt8Array]:
    """``prefix`` + the varint length + each body of ``(offsets, data)`` where ``present``."""
    offsets = np.asarray(offsets, dtype=np.int64)
    _check_offsets(offsets, _data_length(data))
    present = _mask(present, len(offsets) - 1)
    heads = _array(*varint_fragments(prefix, np.diff(offsets).astype(np.uint64), present))
    bodies = _array(offsets, data)
    if present is not None:
        if not present.all():
            bodies = pc.if_else(pa.array(present), bodies, _EMPTY)
    return _parts(pc.binary_join_element_wise(heads, bodies, _EMPTY))


def join_fragments(columns: list[tuple[Any, Any]], length: int) -> tuple[Int64Array, UInt8Array]:
    """Each row's values of ``columns`` (``(offsets, data)`` pairs), concatenated in order."""
    if not columns:
        return np.zeros(length + 1, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    for o, d in columns:
        o = np.asarray(o, dtype=np.int64)
        if len(o) != length + 1:
            raise ValueError("a fragment column has another length than the rows")
        _check_offsets(o, _data_length(d))
    arrays = [_array(o, d) for o, d in columns]
    joined = arrays[0] if len(arrays) == 1 else pc.binary_join_element_wise(*arrays, _EMPTY)
    return _parts(joined)
