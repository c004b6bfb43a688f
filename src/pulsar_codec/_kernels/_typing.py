"""Type names of the kernel contracts, shared by the pure twins and the stubs of the compiled ones."""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

__all__ = [
    "ByteData",
    "ArrayLike",
    "Int64Array",
    "Int32Array",
    "Int8Array",
    "UInt8Array",
    "AnyArray",
    "KernelError",
]

# A chunk's data buffer: bytes or a memoryview (a pyarrow Buffer, untyped to the checker, passes too).
ByteData: TypeAlias = bytes | bytearray | memoryview
# What numpy.asarray accepts: offsets, validity masks, id and plan columns.
ArrayLike: TypeAlias = npt.ArrayLike
Int64Array: TypeAlias = npt.NDArray[np.int64]
Int32Array: TypeAlias = npt.NDArray[np.int32]
Int8Array: TypeAlias = npt.NDArray[np.int8]
UInt8Array: TypeAlias = npt.NDArray[np.uint8]
AnyArray: TypeAlias = npt.NDArray[Any]
# (status code, message index, byte offset, detail): where and why a kernel stopped
KernelError: TypeAlias = tuple[int, int, int, int]
