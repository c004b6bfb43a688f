"""Type stub of the compiled avro encode kernel (avro_encode_c.pyx).

The compiled twin has exactly the contract of the pure twin, so its types are the pure twin's;
tests/test_backend.py checks at run time that both export the same names and signatures.
"""

from .avro_encode_py import DECIMAL_SIZE as DECIMAL_SIZE
from .avro_encode_py import E_ARRAY as E_ARRAY
from .avro_encode_py import E_BOOL as E_BOOL
from .avro_encode_py import E_BYTES as E_BYTES
from .avro_encode_py import E_DEC_BYTES as E_DEC_BYTES
from .avro_encode_py import E_DEC_FIXED as E_DEC_FIXED
from .avro_encode_py import E_DOUBLE as E_DOUBLE
from .avro_encode_py import E_ENUM as E_ENUM
from .avro_encode_py import E_FIXED as E_FIXED
from .avro_encode_py import E_FLOAT as E_FLOAT
from .avro_encode_py import E_INT as E_INT
from .avro_encode_py import E_LONG as E_LONG
from .avro_encode_py import E_MAP as E_MAP
from .avro_encode_py import E_NULL as E_NULL
from .avro_encode_py import E_OPTION as E_OPTION
from .avro_encode_py import E_RECORD as E_RECORD
from .avro_encode_py import E_UNION as E_UNION
from .avro_encode_py import ENUM_SYMBOL as ENUM_SYMBOL
from .avro_encode_py import FIXED_SIZE as FIXED_SIZE
from .avro_encode_py import FLOAT_RANGE as FLOAT_RANGE
from .avro_encode_py import INT_RANGE as INT_RANGE
from .avro_encode_py import NOT_NULL as NOT_NULL
from .avro_encode_py import NULL_VALUE as NULL_VALUE
from .avro_encode_py import TOO_LARGE as TOO_LARGE
from .avro_encode_py import encode as encode

__all__ = [
    "encode",
    "E_NULL",
    "E_BOOL",
    "E_INT",
    "E_LONG",
    "E_FLOAT",
    "E_DOUBLE",
    "E_BYTES",
    "E_FIXED",
    "E_ENUM",
    "E_RECORD",
    "E_ARRAY",
    "E_MAP",
    "E_OPTION",
    "E_DEC_BYTES",
    "E_DEC_FIXED",
    "E_UNION",
    "NULL_VALUE",
    "NOT_NULL",
    "INT_RANGE",
    "FLOAT_RANGE",
    "FIXED_SIZE",
    "ENUM_SYMBOL",
    "DECIMAL_SIZE",
    "TOO_LARGE",
]
