"""Arrow plumbing shared by every module: turning user input into chunks the kernels can walk, and
kernel buffers back into pyarrow arrays. Written once, used by both twins."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from .errors import DecodeError

__all__ = [
    "Chunk",
    "arrow_family",
    "binary_chunks",
    "as_binary_array",
    "as_table_like",
    "validity_buffer",
    "bool_mask",
    "VIEW_LIMIT",
    "around_bad_rows",
    "walk_bad_rows",
]

# Binary views address their data buffer with signed 32-bit offsets.
VIEW_LIMIT = 2**31 - 1


@dataclass
class Chunk:
    """One contiguous run of messages: ``data[offsets[i]:offsets[i + 1]]`` is message ``row + i``.

    ``offsets`` is int64 and rebased so that ``data`` starts at the first message; ``validity`` is a
    numpy bool array, or None when the chunk has no nulls.
    """

    data: pa.Buffer
    offsets: np.ndarray
    validity: np.ndarray | None
    row: int

    @property
    def length(self) -> int:
        return len(self.offsets) - 1


_BINARY_LIKE = (pa.binary(), pa.string(), pa.large_binary(), pa.large_string())


def _to_arrow(messages: Any) -> pa.Array | pa.ChunkedArray:
    if isinstance(messages, (pa.Array, pa.ChunkedArray)):
        return messages
    if hasattr(messages, "__arrow_c_array__") or hasattr(messages, "__arrow_c_stream__"):
        return pa.array(messages) if hasattr(messages, "__arrow_c_array__") else pa.chunked_array(messages)
    if isinstance(messages, (bytes, bytearray, memoryview, str)):
        raise TypeError("expected a sequence or array of messages, got a single message; wrap it in a list")
    try:
        items = [m if (m is None or isinstance(m, bytes)) else bytes(m) for m in messages]
    except TypeError as exc:
        raise TypeError(
            "messages must be a pyarrow binary array, a ChunkedArray or a sequence of bytes / None, "
            f"got {type(messages).__name__}"
        ) from exc
    return pa.array(items, type=pa.binary())


def as_table_like(data: Any) -> Any:
    """A ``pa.RecordBatch`` or ``pa.Table`` for rows to encode: pyarrow objects as they are, any
    Arrow PyCapsule producer (a polars DataFrame, an arro3 table or record batch) converted."""
    if isinstance(data, (pa.RecordBatch, pa.Table)):
        return data
    if hasattr(data, "__arrow_c_stream__"):
        return pa.table(data)
    if hasattr(data, "__arrow_c_array__"):
        return pa.record_batch(data)
    raise TypeError(
        f"expected a pyarrow RecordBatch or Table, or an object with __arrow_c_stream__, got {type(data).__name__}"
    )


def _normalise(arr: pa.Array) -> pa.Array:
    t = arr.type
    if t in _BINARY_LIKE:
        return arr
    if pa.types.is_binary_view(t) or pa.types.is_string_view(t) or pa.types.is_fixed_size_binary(t):
        return arr.cast(pa.large_binary())
    if pa.types.is_null(t):
        return pa.array([None] * len(arr), type=pa.binary())
    raise TypeError(f"messages must be binary or string, got Arrow type {t}")


def as_binary_array(messages: Any) -> pa.Array:
    """A single binary/large_binary array (chunks combined) for the less hot paths."""
    arr = _to_arrow(messages)
    if isinstance(arr, pa.ChunkedArray):
        arr = (
            pa.concat_arrays([_normalise(c).cast(pa.large_binary()) for c in arr.chunks])
            if arr.num_chunks
            else pa.array([], pa.binary())
        )
    return _normalise(arr)


def is_text_type(t: pa.DataType) -> bool:
    """Whether ``t`` is one of Arrow's string types (string, large_string, string_view)."""
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def arrow_family(t: pa.DataType) -> str:
    """The family of an Arrow type as the encoders judge a column against a field (a dictionary:
    its values'): ``null``, ``bool``, ``int``, ``float``, ``decimal``, ``text``, ``binary``,
    ``time`` (timestamps, durations), ``temporal`` (dates, times of day, intervals), ``struct``,
    ``map``, ``list``, or ``other`` (extension types, unions...: left to the row writers)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    checks = (
        ("null", pa.types.is_null),
        ("bool", pa.types.is_boolean),
        ("int", pa.types.is_integer),
        ("float", pa.types.is_floating),
        ("decimal", pa.types.is_decimal),
        ("text", is_text_type),
        ("binary", lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)),
        ("binary", pa.types.is_fixed_size_binary),
        ("time", lambda t: pa.types.is_timestamp(t) or pa.types.is_duration(t)),
        ("temporal", pa.types.is_temporal),
        ("struct", pa.types.is_struct),
        ("map", pa.types.is_map),
        ("list", pa.types.is_list),
        ("list", pa.types.is_large_list),
        ("list", pa.types.is_fixed_size_list),
        ("list", pa.types.is_list_view),
        ("list", pa.types.is_large_list_view),
    )
    return next((family for family, check in checks if check(t)), "other")


def validity_of(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def binary_chunks(messages: Any, native_offsets: bool = False) -> tuple[list[Chunk], int]:
    """Split any accepted input into kernel chunks; returns (chunks, total rows).

    Zero copy: every chunk's ``data`` is a slice of the input's data buffer. A chunk whose data
    spans more than 2 GiB is cut into pieces below that, so binary views can address each piece.
    With ``native_offsets`` the offsets keep the input's width (int32 for binary/string arrays) and
    are a view of the input's own offsets whenever they need no rebasing, for kernels that accept
    both widths; otherwise they are int64.
    """
    arr = _to_arrow(messages)
    arrays = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    chunks: list[Chunk] = []
    row = 0
    for a in arrays:
        a = _normalise(a)
        n = len(a)
        if n == 0:
            continue
        large = a.type in (pa.large_binary(), pa.large_string())
        bufs = a.buffers()
        offsets_all = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32)
        offsets = offsets_all[a.offset : a.offset + n + 1]
        if not native_offsets:
            offsets = offsets.astype(np.int64)
        data = bufs[2] if bufs[2] is not None else pa.py_buffer(b"")
        validity = validity_of(a)
        start = 0
        while start < n:
            lo = int(offsets[start])
            stop = n
            if int(offsets[n]) - lo > VIEW_LIMIT:
                # largest stop with offsets[stop] - lo <= limit, at least one message
                stop = int(np.searchsorted(offsets, lo + VIEW_LIMIT, side="right")) - 1
                stop = max(stop, start + 1)
            piece = offsets[start : stop + 1]
            if lo:
                piece = piece - lo
            chunks.append(
                Chunk(
                    data=data.slice(lo, int(offsets[stop]) - lo),
                    offsets=piece,
                    validity=None if validity is None else validity[start:stop],
                    row=row + start,
                )
            )
            start = stop
        row += n
    return chunks, row


def validity_buffer(mask: np.ndarray | None) -> pa.Buffer | None:
    """An Arrow validity bitmap from a numpy bool mask (None when everything is valid)."""
    if mask is None or mask.all():
        return None
    return pa.py_buffer(np.packbits(mask.astype(bool), bitorder="little"))


def bool_mask(chunks: Iterable[Chunk], total: int) -> np.ndarray | None:
    """Concatenated validity of all chunks, or None when there are no nulls."""
    parts = [c.validity for c in chunks]
    if all(p is None for p in parts):
        return None
    out = np.ones(total, dtype=bool)
    for c in chunks:
        if c.validity is not None:
            out[c.row : c.row + c.length] = c.validity
    return out


def walk_bad_rows(n: int, attempt: Callable[[int, int], int | None], window: int = 64) -> None:
    """Run ``attempt(lo, hi)`` over rows ``[0, n)`` in order; it handles the rows it can and returns
    None when all of ``[lo, hi)`` were good, else the offset (from ``lo``) of the first bad row.

    The first call covers the whole batch (the common case: one pass). After a bad row the walk
    resumes on a window of rows that doubles while the rows are clean, so a batch with many bad
    rows costs O(n) row reads in all, not O(n^2).
    """
    lo, size = 0, n
    while lo < n:
        hi = min(n, lo + size)
        bad = attempt(lo, hi)
        if bad is None:
            lo, size = hi, size * 2
        else:
            lo, size = lo + bad + 1, window


_Piece = TypeVar("_Piece")
_Error = TypeVar("_Error", bound=DecodeError)


def around_bad_rows(
    n: int, run: Callable[[int, int], _Piece], null_row: _Piece, catch: type[_Error]
) -> tuple[list[_Piece], list[_Error]]:
    """Every row of ``[0, n)`` through ``run``, bad rows stepped around instead of failing the batch.

    ``run(lo, hi)`` gives the piece of rows ``[lo, hi)`` or raises ``catch`` (a DecodeError class) for the first bad row
    among them (its ``index`` counted in the slice), as the bulk functions do. Returns the pieces
    in row order, ``null_row`` standing for each bad row, and one error per bad row, counted from
    row 0 (:meth:`DecodeError.moved`).
    """
    pieces: list[_Piece] = []
    errors: list[_Error] = []

    def attempt(lo: int, hi: int) -> int | None:
        try:
            pieces.append(run(lo, hi))
            return None
        except catch as exc:
            bad = exc.index or 0
            if bad:
                pieces.append(run(lo, lo + bad))
            pieces.append(null_row)
            errors.append(exc.moved(lo))
            return bad

    walk_bad_rows(n, attempt)
    return pieces, errors
