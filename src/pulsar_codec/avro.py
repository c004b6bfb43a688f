"""Avro payloads into Arrow and back (public entry point of :mod:`pulsar_codec.formats.avro`)."""

from .formats.avro import Decoded, Decoder, Encoder, Schema, parse, schema, schema_from_arrow

__all__ = ["Decoded", "Decoder", "Encoder", "Schema", "parse", "schema", "schema_from_arrow"]
