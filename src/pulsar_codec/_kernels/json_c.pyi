"""Type stub of the compiled JSON kernel (json_c.pyx).

The compiled twin has exactly the contract of the pure twin, so its types are the pure twin's;
tests/test_backend.py checks at run time that both export the same names and signatures.
"""

from .json_py import Program as Program
from .json_py import decode as decode
from .json_py import transcode as transcode

__all__ = ["Program", "decode", "transcode"]
