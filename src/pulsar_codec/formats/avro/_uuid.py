"""The ``uuid`` logical type on ``fixed(16)``: 16 bytes on the wire, a string column in Arrow.

Avro 1.12 lets ``uuid`` annotate a ``fixed`` of size 16 as well as a ``string``; Avro Java's
``UUIDConversion`` reads both as a ``UUID``. Here both decode to the same Arrow string column, the
canonical 36-character lower-case form (``8-4-4-4-12`` hex digits), so a column does not change
type with the writer's choice. The kernels copy the 16 bytes as for any fixed; these helpers turn a
whole column into text and back with numpy, without a Python call per value.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["UUID_TEXT_SIZE", "uuid_bytes", "uuid_strings"]

UUID_TEXT_SIZE = 36
_DASHES = (8, 13, 18, 23)
# the 32 positions of hex digits in the text, in the order of the 16 bytes' nibbles
_DIGITS = np.array([i for i in range(UUID_TEXT_SIZE) if i not in _DASHES], dtype=np.intp)
_HEX_OF_BYTE = np.frombuffer(b"".join(f"{b:02x}".encode() for b in range(256)), dtype=np.uint8).reshape(256, 2)
_NIBBLE = np.full(256, 255, dtype=np.uint8)  # ASCII byte -> hex value, 255 for a non-hex byte
for _i, _c in enumerate(b"0123456789abcdef"):
    _NIBBLE[_c] = _i
for _i, _c in enumerate(b"ABCDEF", start=10):
    _NIBBLE[_c] = _i


def uuid_strings(raw: np.ndarray, length: int, validity: pa.Buffer | None, null_count: int) -> pa.Array:
    """The canonical text of ``length`` UUIDs given as ``length * 16`` bytes (a uint8 array).

    Raises
    ------
    OverflowError
        When the text would pass the 2 GiB of 32-bit string offsets (about 59 million values).
    """
    if length * UUID_TEXT_SIZE > 2**31 - 1:
        raise OverflowError(length * UUID_TEXT_SIZE)
    text = np.full((length, UUID_TEXT_SIZE), ord("-"), dtype=np.uint8)
    text[:, _DIGITS] = _HEX_OF_BYTE[raw[: length * 16].reshape(length, 16)].reshape(length, 32)
    offsets = np.arange(0, (length + 1) * UUID_TEXT_SIZE, UUID_TEXT_SIZE, dtype=np.int32)
    return pa.Array.from_buffers(
        pa.string(), length, [validity, pa.py_buffer(offsets), pa.py_buffer(text)], null_count=null_count
    )


def uuid_bytes(arr: pa.Array) -> np.ndarray | None:
    """The 16 bytes of each UUID of a string array (zeros for nulls), or None when a present value is
    not in the 36-character ``8-4-4-4-12`` form (the caller then checks value by value)."""
    if arr.type != pa.string():
        arr = arr.cast(pa.string())
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset : arr.offset + n + 1]
    present = np.ones(n, dtype=bool) if arr.null_count == 0 else ~np.asarray(arr.is_null(), dtype=bool)
    lengths = np.diff(offsets)
    if np.any(lengths[present] != UUID_TEXT_SIZE):
        return None
    data = arr.buffers()[2]
    chars = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1][present].astype(np.intp)
    text = chars[starts[:, None] + np.arange(UUID_TEXT_SIZE)]
    if np.any(text[:, list(_DASHES)] != ord("-")):
        return None
    nibbles = _NIBBLE[text[:, _DIGITS]]
    if np.any(nibbles == 255):
        return None
    out = np.zeros((n, 16), dtype=np.uint8)
    out[present] = (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]
    return out.reshape(-1)
