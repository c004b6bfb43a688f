"""Type stub of the compiled Protobuf kernel (protobuf_c.pyx).

The compiled twin has exactly the contract of the pure twin, so its types are the pure twin's;
tests/test_backend.py checks at run time that both export the same names and signatures.
"""

from .protobuf_py import Program as Program
from .protobuf_py import decode as decode
from .protobuf_py import transcode as transcode

__all__ = ["Program", "decode", "transcode"]
