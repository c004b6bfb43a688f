"""Type stub of the compiled wire kernel (wire_c.pyx).

The compiled twin has exactly the contract of the pure twin, so its types are the pure twin's;
tests/test_backend.py checks at run time that both export the same names and signatures.
"""

from .wire_py import KIND_APICURIO as KIND_APICURIO
from .wire_py import KIND_APICURIO_V3 as KIND_APICURIO_V3
from .wire_py import KIND_AWS_GLUE as KIND_AWS_GLUE
from .wire_py import KIND_CONFLUENT as KIND_CONFLUENT
from .wire_py import KIND_CONFLUENT_GUID as KIND_CONFLUENT_GUID
from .wire_py import KIND_CONFLUENT_GUID_PROTOBUF as KIND_CONFLUENT_GUID_PROTOBUF
from .wire_py import KIND_CONFLUENT_PROTOBUF as KIND_CONFLUENT_PROTOBUF
from .wire_py import KIND_HORTONWORKS as KIND_HORTONWORKS
from .wire_py import binary_views as binary_views
from .wire_py import distinct_ids as distinct_ids
from .wire_py import frame as frame
from .wire_py import same_bytes as same_bytes
from .wire_py import unframe as unframe

__all__ = [
    "KIND_CONFLUENT",
    "KIND_CONFLUENT_PROTOBUF",
    "KIND_CONFLUENT_GUID",
    "KIND_CONFLUENT_GUID_PROTOBUF",
    "KIND_HORTONWORKS",
    "KIND_APICURIO",
    "KIND_APICURIO_V3",
    "KIND_AWS_GLUE",
    "unframe",
    "frame",
    "binary_views",
    "distinct_ids",
    "same_bytes",
]
