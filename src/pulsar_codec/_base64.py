"""Strict standard Base64 for SEPARATED KeyValue partition keys, per key and over a whole column.

Java producers put a SEPARATED key in ``MessageMetadata.partition_key`` as RFC 4648 Base64 with
``=`` padding; Java reads it back with ``java.util.Base64``'s basic decoder, which refuses any
character outside the alphabet and misplaced padding, and accepts a missing final padding. The
functions here accept and refuse exactly that, and say at which character a key fails.
"""

from __future__ import annotations

import binascii

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from .errors import ErrorCode, raise_for

__all__ = ["error_at", "decode", "decode_column"]

_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_INVALID = 255
_PAD = 64
# byte -> its 6-bit value, _PAD for "=", _INVALID for anything else
_LUT = np.full(256, _INVALID, dtype=np.uint8)
_LUT[np.frombuffer(_ALPHABET, dtype=np.uint8)] = np.arange(64, dtype=np.uint8)
_LUT[ord("=")] = _PAD


def error_at(text: bytes) -> int:
    """Where strict Base64 (padding optional) first fails in ``text``; -1 when it is valid."""
    pad_at = text.find(b"=")
    data_end = len(text) if pad_at < 0 else pad_at
    codes = _LUT[np.frombuffer(text, dtype=np.uint8)[:data_end]] if data_end else np.zeros(0, dtype=np.uint8)
    bad = np.flatnonzero(codes == _INVALID)
    if len(bad):
        return int(bad[0])
    if data_end % 4 == 1:
        return data_end - 1  # a lone character cannot hold a whole byte
    if pad_at >= 0:
        need = -data_end % 4  # padding present must complete the last quantum exactly
        tail = text[pad_at:]
        for j in range(len(tail)):
            if j >= need or tail[j] != 0x3D:
                return pad_at + j
        if len(tail) < need:
            return len(text)
    return -1


def decode(text: str | bytes, index: int) -> bytes:
    """The bytes of one Base64 key.

    Raises
    ------
    KeyValueFormatError
        ``KV_INVALID_BASE64`` for message ``index``, at the character where the text fails.
    """
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    at = error_at(raw)
    if at >= 0:
        raise_for(ErrorCode.KV_INVALID_BASE64, index, at, len(raw))
    unpadded = raw.rstrip(b"=")
    try:
        return binascii.a2b_base64(unpadded + b"=" * (-len(unpadded) % 4), strict_mode=True)
    except binascii.Error:  # pragma: no cover - error_at rejects everything a2b_base64 would
        raise_for(ErrorCode.KV_INVALID_BASE64, index, len(raw), len(raw))


def decode_column(
    data: pa.Buffer,
    offsets: npt.NDArray[np.int64],
    valid: npt.NDArray[np.bool_],
    b64: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]] | None:
    """Decode every present key of a column at once, when all of them are Base64 with full padding.

    Parameters
    ----------
    data, offsets
        The column's data buffer and its ``n + 1`` absolute int64 offsets.
    valid
        Rows that hold a key.
    b64
        Rows whose key is Base64 (``partition_key_b64_encoded``).

    Returns
    -------
    (bytes, offsets) or None
        The decoded bytes and their ``n + 1`` offsets (rows without a key are empty); None when a
        present key is not Base64, is unpadded or is invalid, so the caller decodes key by key and
        reports the first bad one.
    """
    rows = valid & b64
    if not np.array_equal(rows, valid):
        return None
    lengths = np.where(rows, np.diff(offsets), 0)
    if np.any(lengths % 4):
        return None
    buf = np.frombuffer(data, dtype=np.uint8) if len(data) else np.zeros(0, dtype=np.uint8)
    total = int(lengths.sum())
    pos = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=pos[1:])
    index = np.repeat(offsets[:-1] - pos[:-1], lengths) + np.arange(total, dtype=np.int64)
    codes = _LUT[buf[index]].reshape(-1, 4)
    if np.any(codes == _INVALID):
        return None
    is_pad = codes == _PAD
    # padding may only be "xx==" or "xxx=" in the last quantum of a row
    last = np.zeros(len(codes), dtype=bool)
    ends = pos[1:][lengths > 0] // 4 - 1
    last[ends] = True
    pad_count = is_pad.sum(axis=1)
    ok_shape = (~is_pad[:, 0]) & (~is_pad[:, 1]) & ~(is_pad[:, 2] & ~is_pad[:, 3])
    if np.any(is_pad.any(axis=1) & ~(last & ok_shape)):
        return None
    q = np.where(is_pad, 0, codes).astype(np.uint32)
    word = (q[:, 0] << 18) | (q[:, 1] << 12) | (q[:, 2] << 6) | q[:, 3]
    triples = np.empty((len(codes), 3), dtype=np.uint8)
    triples[:, 0] = word >> 16
    triples[:, 1] = (word >> 8) & 0xFF
    triples[:, 2] = word & 0xFF
    keep = np.ones((len(codes), 3), dtype=bool)
    keep[:, 2] = pad_count < 1
    keep[:, 1] = pad_count < 2
    row_pads = np.zeros(len(lengths), dtype=np.int64)
    row_pads[lengths > 0] = pad_count[ends]
    out_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths // 4 * 3 - row_pads, out=out_offsets[1:])
    return triples[keep], out_offsets
