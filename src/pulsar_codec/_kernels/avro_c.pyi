"""Type stub of the compiled avro kernel (avro_c.pyx).

The compiled twin has exactly the contract of the pure twin, so its types are the pure twin's;
tests/test_backend.py checks at run time that both export the same names and signatures.
"""

from .avro_py import Layout as Layout
from .avro_py import Program as Program
from .avro_py import decode as decode
from .avro_py import decode_row as decode_row

__all__ = ["Layout", "Program", "decode", "decode_row"]
