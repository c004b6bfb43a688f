"""Serializers shaped like confluent-kafka's, over the pipeline: ``pulsar_codec.serde``.

:class:`AvroSerializer` / :class:`AvroDeserializer`, :class:`JSONSerializer` /
:class:`JSONDeserializer` and :class:`ProtobufSerializer` / :class:`ProtobufDeserializer` (dicts,
no generated classes) are called as ``(value, ctx)`` like
confluent-kafka's classes of the same names, so they drop into its ``SerializingProducer`` and
``DeserializingConsumer``; they take its config keys where they apply. Each message goes through
:class:`~pulsar_codec.pipeline.MessageEncoder` / :class:`~pulsar_codec.pipeline.MessageDecoder`,
cached per schema. :meth:`AvroDeserializer.decode_batch` decodes what
``consumer.consume(num_messages=N)`` returns into one Arrow batch in a single pass::

    from confluent_kafka import Consumer
    from pulsar_codec.serde import AvroDeserializer

    deserializer = AvroDeserializer("http://registry:8081")
    while True:
        batch = deserializer.decode_batch(consumer.consume(num_messages=10_000, timeout=1.0))

Deliberate differences from confluent-kafka: a bad frame or body raises this package's
:class:`~pulsar_codec.errors.WireFormatError` / ``*DecodeError`` (``ValueError`` subclasses) and an
unknown id :class:`~pulsar_codec.errors.SchemaNotFoundError`, not confluent-kafka's
``SerializationError`` / ``SchemaRegistryError`` (its ``DeserializingConsumer`` wraps either kind
the same way); the serializers write the schema id as confluent-kafka's
``prefix_schema_id_serializer`` (the default: ``00`` + id) or, given ``schema.id.serializer`` =
``header_schema_id_serializer``, as that one does (``01`` + the schema's GUID, asked of the
registry once per subject, in the ``__value_schema_id`` / ``__key_schema_id`` header added to the
context's headers list or dict; the payload unprefixed; a registry giving no GUID is a
RegistryError, a context without headers a ValueError), while the deserializers read ids as confluent-kafka's default ``dual_schema_id_deserializer`` does: the
context's ``__value_schema_id`` / ``__key_schema_id`` header first (``01`` + GUID or ``00`` + id,
the whole payload then being data; a malformed header raises WireFormatError naming it), else the
``00`` + id or ``01`` + GUID prefix (``prefix_schema_id_deserializer``: the prefix only), and
``decode_batch`` reads each confluent-kafka ``Message``'s ``__value_schema_id`` header likewise;
``use.schema.id`` does not check that the id is registered under the subject;
``use.latest.with.metadata``, the ``ASSOCIATED`` strategy and data-contract rules are refused by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._avro import AvroDeserializer, AvroSerializer
from ._subjects import (
    MessageField,
    SerializationContext,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
    topic_subject_name_strategy,
)

if TYPE_CHECKING:
    from ._json import JSONDeserializer, JSONSerializer
    from ._protobuf import ProtobufDeserializer, ProtobufSerializer

__all__ = [
    "AvroDeserializer",
    "AvroSerializer",
    "JSONDeserializer",
    "JSONSerializer",
    "MessageField",
    "ProtobufDeserializer",
    "ProtobufSerializer",
    "SerializationContext",
    "record_subject_name_strategy",
    "topic_record_subject_name_strategy",
    "topic_subject_name_strategy",
]


def __getattr__(name: str) -> Any:
    # the JSON serdes load the JSON format (jsonschema, referencing) only when first asked for
    if name in ("JSONSerializer", "JSONDeserializer"):
        from . import _json

        return getattr(_json, name)
    if name in ("ProtobufSerializer", "ProtobufDeserializer"):  # the protobuf runtime, only when asked for
        from . import _protobuf

        return getattr(_protobuf, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
