"""The segments a compiled payload kernel reads, checked and laid out once for its C loop.

The JSON and Protobuf kernels (``json_c``, ``protobuf_c``) take the same ``(data, starts, ends,
validity)`` segments and hand their C loops the same contiguous arrays; this is where those arrays
are made and the segments' shapes checked, so the two kernels cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ._typing import Int64Array, UInt8Array

__all__ = ["Prepared", "prepare"]


class Prepared(NamedTuple):
    """One segment as a C loop reads it.

    Attributes
    ----------
    view : memoryview
        The data as bytes (one zero byte when the data is empty, so a pointer can be taken).
    starts : int64 array or None
        Start of each row; None when the rows are ``ends`` offsets after a prefix of ``skip`` bytes.
    ends : int64 array
        End of each row, or the ``rows + 1`` offsets of the messages (``starts`` None).
    skip : int
        The prefix size each message skips (0 with ``starts``).
    rows : int
    size : int
        Bytes of data (0 when empty).
    valid : uint8 array or None
        1 per present row, 0 per null row; None when every row is present.
    """

    view: memoryview
    starts: Int64Array | None
    ends: Int64Array
    skip: int
    rows: int
    size: int
    valid: UInt8Array | None


def prepare(segments: Sequence[tuple[Any, Any, Any, Any]], explicit: bool) -> tuple[list[Prepared], int]:
    """The segments laid out for a C loop, and their rows in all.

    ``starts`` may be an int (a prefix size; ``ends`` then the n + 1 message offsets). With
    ``explicit`` every segment gets per-row starts, and the rows' bounds are checked here against
    the data (for a loop that does not check them itself; null rows' bounds are never read).

    Raises
    ------
    ValueError
        Starts and ends of different lengths, no offsets, a validity shorter than the rows, or
        (``explicit``) a row outside the data.
    """
    prepared: list[Prepared] = []
    total = 0
    for data, starts, ends, validity in segments:
        raw = memoryview(data)
        size = raw.nbytes
        view = raw.cast("B") if size else memoryview(b"\0")
        en = np.ascontiguousarray(ends, dtype=np.int64)
        st: Int64Array | None
        if isinstance(starts, (int, np.integer)):  # offsets and a prefix size
            skip = int(starts)
            rows = len(en) - 1
            if rows < 0:
                raise ValueError("offsets need at least one entry")
            st = None
            if explicit:
                st, en, skip = en[:-1] + skip, en[1:], 0
        else:
            st = np.ascontiguousarray(starts, dtype=np.int64)
            skip = 0
            rows = len(st)
            if len(en) != rows:
                raise ValueError("starts and ends differ in length")
        valid = None if validity is None else np.ascontiguousarray(validity, dtype=bool).view(np.uint8)
        if valid is not None and len(valid) < rows:
            raise ValueError("validity is shorter than the rows")
        if explicit and st is not None:
            outside = (st < 0) | (en < st) | (en > size)
            if valid is not None:
                outside &= valid[:rows].view(bool)
            if outside.any():
                i = int(np.argmax(outside))
                raise ValueError(f"row {i} [{st[i]}, {en[i]}) is outside the data ({size} bytes)")
        prepared.append(Prepared(view, st, en, skip, rows, size, valid))
        total += rows
    return prepared, total
