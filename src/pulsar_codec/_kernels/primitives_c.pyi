"""Type stub of the compiled primitives kernel (primitives_c.pyx).

The compiled twin has exactly the contract of the pure twin, so its types are the pure twin's;
tests/test_backend.py checks at run time that both export the same names and signatures.
"""

from .primitives_py import DTYPES as DTYPES
from .primitives_py import KIND_BOOLEAN as KIND_BOOLEAN
from .primitives_py import KIND_DOUBLE as KIND_DOUBLE
from .primitives_py import KIND_FLOAT as KIND_FLOAT
from .primitives_py import KIND_INSTANT as KIND_INSTANT
from .primitives_py import KIND_INT8 as KIND_INT8
from .primitives_py import KIND_INT16 as KIND_INT16
from .primitives_py import KIND_INT32 as KIND_INT32
from .primitives_py import KIND_INT64 as KIND_INT64
from .primitives_py import KIND_LOCAL_DATE as KIND_LOCAL_DATE
from .primitives_py import KIND_LOCAL_DATE_TIME as KIND_LOCAL_DATE_TIME
from .primitives_py import KIND_LOCAL_TIME as KIND_LOCAL_TIME
from .primitives_py import KIND_TIME as KIND_TIME
from .primitives_py import WIDTHS as WIDTHS
from .primitives_py import decode_fixed as decode_fixed
from .primitives_py import validate_utf8 as validate_utf8

__all__ = [
    "KIND_BOOLEAN",
    "KIND_INT8",
    "KIND_INT16",
    "KIND_INT32",
    "KIND_INT64",
    "KIND_FLOAT",
    "KIND_DOUBLE",
    "KIND_TIME",
    "KIND_INSTANT",
    "KIND_LOCAL_DATE",
    "KIND_LOCAL_TIME",
    "KIND_LOCAL_DATE_TIME",
    "WIDTHS",
    "DTYPES",
    "decode_fixed",
    "validate_utf8",
]
