"""Type stub of the compiled keyvalue kernel (keyvalue_c.pyx).

The compiled twin has exactly the contract of the pure twin, so its types are the pure twin's;
tests/test_backend.py checks at run time that both export the same names and signatures.
"""

from .keyvalue_py import MODE_INLINE as MODE_INLINE
from .keyvalue_py import MODE_INLINE_CPP as MODE_INLINE_CPP
from .keyvalue_py import MODE_SCHEMA_ID as MODE_SCHEMA_ID
from .keyvalue_py import join as join
from .keyvalue_py import split as split
from .keyvalue_py import split_copy as split_copy

__all__ = ["MODE_INLINE", "MODE_INLINE_CPP", "MODE_SCHEMA_ID", "split", "split_copy", "join"]
