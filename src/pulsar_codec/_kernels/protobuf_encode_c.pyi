"""Type stub of the compiled Protobuf encode kernel (protobuf_encode_c.pyx).

The compiled twin has exactly the contract of the pure twin, so its types are the pure twin's;
tests/test_backend.py checks at run time that both export the same names and signatures.
"""

from .protobuf_encode_py import join_fragments as join_fragments
from .protobuf_encode_py import length_fragments as length_fragments
from .protobuf_encode_py import varint_fragments as varint_fragments

__all__ = ["join_fragments", "length_fragments", "varint_fragments"]
