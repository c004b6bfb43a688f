"""Pulsar's schema model and its primitive encodings under one name: ``pulsar_codec.pulsar_types``.

The documented way in (``from pulsar_codec import pulsar_types as pt``), gathering two modules:
:mod:`pulsar_codec.pulsar.schema_info` (:class:`SchemaType`, :class:`SchemaInfo`,
:class:`EncodeData`, the KeyValue SchemaInfo layout) and :mod:`pulsar_codec.primitives` (the
primitive codecs :func:`encode`, :func:`decode`, :func:`encode_array`, :func:`decode_array`,
:func:`arrow_type` and :class:`NanoDateTime` / :class:`NanoTime`). See those modules for the
encodings and their Python and Arrow types.
"""

from __future__ import annotations

# pickles of NanoDateTime / NanoTime written by 0.1 name their rebuild functions in this module
from ._time import _rebuild_nano_datetime, _rebuild_nano_time  # noqa: F401
from .primitives import NanoDateTime, NanoTime, arrow_type, decode, decode_array, encode, encode_array
from .pulsar.schema_info import (
    CHARSET_PROPERTY,
    EncodeData,
    KeyValueEncodingType,
    SchemaInfo,
    SchemaType,
    decode_keyvalue_encoding_type,
    decode_keyvalue_schema_info,
    encode_keyvalue_schema_info,
    external_schema_info,
    primitive_schema_info,
)

__all__ = [
    "SchemaType",
    "KeyValueEncodingType",
    "SchemaInfo",
    "EncodeData",
    "NanoDateTime",
    "NanoTime",
    "CHARSET_PROPERTY",
    "primitive_schema_info",
    "external_schema_info",
    "encode_keyvalue_schema_info",
    "decode_keyvalue_schema_info",
    "decode_keyvalue_encoding_type",
    "arrow_type",
    "encode",
    "decode",
    "encode_array",
    "decode_array",
]
