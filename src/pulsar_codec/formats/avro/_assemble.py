"""Kernel column builders -> pyarrow arrays -> RecordBatch (shared by both twins).

The kernels hand back, per slot, ``(length, validity, b1, b2)`` (see ``_kernels/avro_py.py``): numpy
arrays from the pure twin, ``pa.Buffer`` slices of the builders from the compiled one (wrapping
them again would cost more than a one-row batch's decoding). Fixed-width data, string data, offsets
and union buffers become Arrow buffers without copying; only validity and boolean bytes are packed
into bitmaps. The row struct is built as one struct array whose children are the columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..._kernels.defs import (
    K_BIN,
    K_BOOL,
    K_F32,
    K_F64,
    K_I32,
    K_I64,
    K_LIST,
    K_MAP,
    K_NULL,
    K_RAW,
    K_STRUCT,
    K_UNION,
)
from ...errors import ErrorCode, raise_for
from ._uuid import UUID_TEXT_SIZE, uuid_strings
from .plan import Layout

__all__ = ["assemble", "nbytes"]

_INT32_MAX = 2**31 - 1
_FIXED_KINDS = (K_I32, K_I64, K_F32, K_F64, K_RAW)


def nbytes(data: Any) -> int:
    """Size in bytes of one kernel output buffer (a numpy array or a ``pa.Buffer``)."""
    return int(data.size if isinstance(data, pa.Buffer) else data.nbytes)


def _arrow(data: Any) -> pa.Buffer:
    return data if isinstance(data, pa.Buffer) else pa.py_buffer(data)


def _numpy(data: Any, dtype: Any, count: int) -> np.ndarray:
    """The first ``count`` elements of a kernel output as numpy (no copy)."""
    if isinstance(data, pa.Buffer):
        return np.frombuffer(data, dtype=dtype, count=count)
    view: np.ndarray = data[:count]
    return view


def _bitmap(valid: Any, length: int) -> tuple[pa.Buffer | None, int]:
    if valid is None:
        return None, 0
    v = _numpy(valid, np.uint8, length)
    nulls = length - int(np.count_nonzero(v))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(v, bitorder="little")), nulls


def _offsets(b1: Any, length: int) -> tuple[pa.Buffer, int]:
    """The ``length + 1`` int32 offsets as an Arrow buffer, and the last one (the child length)."""
    if isinstance(b1, pa.Buffer):  # the compiled twin: int32 already
        return b1, int(np.frombuffer(b1, dtype=np.int32, count=1, offset=4 * length)[0])
    offs = b1[: length + 1]
    last = int(offs[-1]) if len(offs) else 0
    if offs.dtype != np.int32:
        if last > _INT32_MAX:
            raise_for(ErrorCode.AVRO_OUTPUT_TOO_LARGE, 0, 0, last)
        offs = offs.astype(np.int32)
    return pa.py_buffer(offs), last


class _Builder:
    def __init__(self, layout: Layout, outputs: list[Any]) -> None:
        self.layout = layout
        self.outputs = outputs

    def build(self, sid: int, length: int) -> pa.Array:
        slot = self.layout.slots[sid]
        _, valid, b1, b2 = self.outputs[sid]
        kind = slot.kind
        typ = slot.type
        vb, nulls = _bitmap(valid, length)
        if kind in _FIXED_KINDS:
            if slot.symbols is not None:
                idx = pa.Array.from_buffers(pa.int32(), length, [vb, _arrow(b1)], null_count=nulls)
                return pa.DictionaryArray.from_arrays(idx, self.layout.dictionaries[sid], safe=False)
            if kind == K_RAW and pa.types.is_string(typ):  # uuid on fixed(16)
                try:
                    return uuid_strings(_numpy(b1, np.uint8, length * 16), length, vb, nulls)
                except OverflowError:
                    raise_for(ErrorCode.AVRO_OUTPUT_TOO_LARGE, 0, 0, length * UUID_TEXT_SIZE)
            return pa.Array.from_buffers(typ, length, [vb, _arrow(b1)], null_count=nulls)
        if kind == K_BIN:
            offs, _ = _offsets(b1, length)
            return pa.Array.from_buffers(typ, length, [vb, offs, _arrow(b2)], null_count=nulls)
        if kind == K_STRUCT:
            children = [self.build(c, length) for c in slot.children]
            return pa.Array.from_buffers(typ, length, [vb], null_count=nulls, children=children)
        if kind == K_LIST:
            offs, last = _offsets(b1, length)
            child = self.build(slot.children[0], last)
            return pa.Array.from_buffers(typ, length, [vb, offs], null_count=nulls, children=[child])
        if kind == K_MAP:
            offs, last = _offsets(b1, length)
            keys = self.build(slot.children[0], last)
            values = self.build(slot.children[1], last)
            entries = pa.StructArray.from_arrays([keys, values], fields=[typ.key_field, typ.item_field])
            return pa.Array.from_buffers(typ, length, [vb, offs], null_count=nulls, children=[entries])
        if kind == K_BOOL:
            data = pa.py_buffer(np.packbits(_numpy(b1, np.uint8, length), bitorder="little"))
            return pa.Array.from_buffers(pa.bool_(), length, [vb, data], null_count=nulls)
        if kind == K_NULL:
            return pa.nulls(length)
        if kind == K_UNION:
            children = [self.build(c, self.outputs[c][0]) for c in slot.children]
            return pa.Array.from_buffers(typ, length, [None, _arrow(b1), _arrow(b2)], children=children)
        raise AssertionError(f"unknown slot kind {kind}")  # pragma: no cover


def assemble(layout: Layout, outputs: list[Any], length: int | None = None) -> pa.RecordBatch:
    """Build the RecordBatch of the first ``length`` rows (default: all completed rows)."""
    n = outputs[0][0] if length is None else length
    b = _Builder(layout, outputs)
    root = layout.slots[0]
    arrays = [b.build(c, n) for c in root.children]
    rows = pa.Array.from_buffers(root.type, n, [None], children=arrays)
    return pa.RecordBatch.from_struct_array(rows)
