"""Type stub of the compiled avro kernel (avro_c.pyx).

The compiled twin has exactly the contract of the pure twin, so its types are the pure twin's;
tests/test_backend.py checks at run time that both export the same names and signatures.
"""

from .avro_py import decode as decode

__all__ = ["decode"]
