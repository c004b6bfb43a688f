"""Kernel column builders -> pyarrow arrays -> RecordBatch (shared by both twins).

The kernels hand back, per slot, ``(length, validity, b1, b2)`` numpy arrays (see
``_avro_py``). Fixed-width data, string data, offsets and union buffers are wrapped with
``pa.py_buffer`` without copying; only validity and boolean bytes are packed into bitmaps.
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
from ..base import errors_table
from .plan import Layout

__all__ = ["assemble", "errors_table"]

# errors_table moved to formats.base (it is format-neutral); this name stays for old imports

_INT32_MAX = 2**31 - 1


def _bitmap(valid: np.ndarray | None, length: int) -> tuple[pa.Buffer | None, int]:
    if valid is None:
        return None, 0
    v = valid[:length]
    nulls = length - int(np.count_nonzero(v))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(v, bitorder="little")), nulls


def _offsets(b1: np.ndarray, length: int) -> np.ndarray:
    offs = b1[: length + 1]
    if offs.dtype != np.int32:
        if len(offs) and int(offs[-1]) > _INT32_MAX:
            raise_for(ErrorCode.AVRO_OUTPUT_TOO_LARGE, 0, 0, int(offs[-1]))
        offs = offs.astype(np.int32)
    return offs


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
        if kind == K_NULL:
            return pa.nulls(length)
        if kind == K_BOOL:
            data = pa.py_buffer(np.packbits(b1[:length], bitorder="little"))
            return pa.Array.from_buffers(pa.bool_(), length, [vb, data], null_count=nulls)
        if kind in (K_I32, K_I64, K_F32, K_F64, K_RAW):
            if slot.symbols is not None:
                idx = pa.Array.from_buffers(pa.int32(), length, [vb, pa.py_buffer(b1)], null_count=nulls)
                return pa.DictionaryArray.from_arrays(idx, pa.array(slot.symbols, pa.string()), safe=False)
            return pa.Array.from_buffers(typ, length, [vb, pa.py_buffer(b1)], null_count=nulls)
        if kind == K_BIN:
            offs = _offsets(b1, length)
            return pa.Array.from_buffers(typ, length, [vb, pa.py_buffer(offs), pa.py_buffer(b2)], null_count=nulls)
        if kind == K_LIST:
            offs = _offsets(b1, length)
            child = self.build(slot.children[0], int(offs[-1]) if length else 0)
            return pa.Array.from_buffers(typ, length, [vb, pa.py_buffer(offs)], null_count=nulls, children=[child])
        if kind == K_MAP:
            offs = _offsets(b1, length)
            m = int(offs[-1]) if length else 0
            keys = self.build(slot.children[0], m)
            values = self.build(slot.children[1], m)
            entries = pa.StructArray.from_arrays([keys, values], fields=[typ.key_field, typ.item_field])
            return pa.Array.from_buffers(typ, length, [vb, pa.py_buffer(offs)], null_count=nulls, children=[entries])
        if kind == K_STRUCT:
            children = [self.build(c, length) for c in slot.children]
            return pa.Array.from_buffers(typ, length, [vb], null_count=nulls, children=children)
        if kind == K_UNION:
            types = b1[:length]
            offs = b2[:length]
            children = [self.build(c, self.outputs[c][0]) for c in slot.children]
            return pa.Array.from_buffers(
                typ, length, [None, pa.py_buffer(types), pa.py_buffer(offs)], children=children
            )
        raise AssertionError(f"unknown slot kind {kind}")  # pragma: no cover


def assemble(layout: Layout, outputs: list[Any], length: int | None = None) -> pa.RecordBatch:
    """Build the RecordBatch of the first ``length`` rows (default: all completed rows)."""
    n = outputs[0][0] if length is None else length
    b = _Builder(layout, outputs)
    arrays = [b.build(c, n) for c in layout.slots[0].children]
    if not arrays:  # a record without fields still has rows
        return pa.RecordBatch.from_struct_array(pa.Array.from_buffers(pa.struct([]), n, [None], children=[]))
    return pa.RecordBatch.from_arrays(arrays, schema=layout.arrow_schema)
