"""Small pieces every Spark job uses on its Arrow batches: error columns and output columns."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import DecodeError
from .types import ERROR_TYPE

__all__ = ["error_array", "error_column", "local_encode_text", "local_text", "replace_columns", "row_error", "valid"]

_LOCATION = re.compile(r"\(message \d+, byte (\d+)\)")
_ENCODED_ROW = re.compile(r"\brow \d+: ?")

RowError = tuple[int, "int | None", int, str]
"""(row in the batch, error code or None, byte offset, message text) of one bad row."""


def valid(arr: Any) -> Any:
    """A numpy bool array: True where ``arr`` (an Arrow array) holds a value."""
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def local_text(text: str) -> str:
    """An error text without the row number inside the Arrow batch (meaningless in a DataFrame);
    the byte offset stays."""
    return _LOCATION.sub(r"(byte \1)", text)


def local_encode_text(text: str) -> str:
    """An EncodeError's text without the row it names (``row 3:``, counted in the task's Arrow
    batch, meaningless in a DataFrame); the field path stays."""
    return _ENCODED_ROW.sub("", text, count=1)


def row_error(exc: DecodeError) -> RowError:
    """The :data:`RowError` of a bad row's exception (its index counted in the batch)."""
    return (exc.index, int(exc.code), int(exc.offset or 0), local_text(str(exc)))


def error_column(
    n: int, rows: Any, codes: Any, offsets: Any, texts: Sequence[str], code_valid: Any = None, payloads: Any = None
) -> Any:
    """The ``ERROR_TYPE`` column of a batch of ``n`` rows with errors at ``rows`` (null elsewhere).

    ``rows``, ``codes`` and ``offsets`` are integer arrays of the same length as ``texts``;
    ``code_valid`` (bool array, optional) is False where an error has no code (no kernel status
    describes it): its ``code`` is null. ``payloads`` (a binary array of ``n`` rows, optional):
    the bytes each row held, kept in the error of the bad rows.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) == 0:
        return pa.nulls(n, ERROR_TYPE)
    has = np.zeros(n, dtype=bool)
    has[rows] = True
    has_mask = pa.array(has)
    if payloads is None:
        payload_out = pa.nulls(n, pa.binary())
    else:  # only the bad rows' bytes are copied
        payload_out = pc.if_else(has_mask, payloads, pa.scalar(None, payloads.type)).cast(pa.binary())
    code_out = np.zeros(n, dtype=np.int32)
    code_out[rows] = codes
    code_null = ~has
    if code_valid is not None:
        code_null[rows] |= ~np.asarray(code_valid, dtype=bool)
    offset_out = np.zeros(n, dtype=np.int64)
    offset_out[rows] = offsets
    text_out: list[str | None] = [None] * n
    for row, text in zip(rows.tolist(), texts):
        text_out[row] = text
    return pa.StructArray.from_arrays(
        [
            pa.array(code_out, pa.int32(), mask=code_null),
            pa.array(offset_out, pa.int64()),
            pa.array(text_out, pa.string()),
            payload_out,
        ],
        fields=list(ERROR_TYPE),
        mask=pc.invert(has_mask),
    )


def error_array(n: int, errors: Sequence[RowError], payloads: Any = None) -> Any:
    """:func:`error_column` from one ``(row, code or None, offset, text)`` tuple per bad row."""
    return error_column(
        n,
        [e[0] for e in errors],
        [e[1] or 0 for e in errors],
        [e[2] for e in errors],
        [e[3] for e in errors],
        [e[1] is not None for e in errors],
        payloads,
    )


def replace_columns(batch: Any, columns: dict[str, Any]) -> Any:
    """``batch``'s columns not named in ``columns``, then ``columns`` in their order."""
    keep = [name for name in batch.schema.names if name not in columns]
    return pa.RecordBatch.from_arrays(
        [batch.column(name) for name in keep] + list(columns.values()), names=keep + list(columns)
    )
