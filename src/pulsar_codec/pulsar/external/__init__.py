"""PIP-420 external schemas: Pulsar values whose schemas live in a third-party registry.

PIP-420 lets a Pulsar schema hand schema management to an external registry: the schema declares
type ``EXTERNAL`` with empty schema data, ``encode(topic, value)`` returns
``EncodeData(data, schema_id)``, and ``decode(topic, data, schema_id)`` looks the writer schema up
by id. This package provides such schemas for Python, backed by any pulsar_codec registry
(:class:`~pulsar_codec.registry.LocalRegistry`, :class:`~pulsar_codec.registry.ConfluentRegistry`
for Confluent, Karapace, Redpanda or Apicurio's ``ccompat`` API):

* :class:`AvroExternalSchema`: Avro record (or any Avro) values as dicts;
* :class:`JsonExternalSchema`: JSON values, registered as ``schemaType`` JSON;
* :class:`KeyValueExternalSchema`: a key and a value schema in one INLINE KeyValue payload, with
  the PIP-420 KeyValue schema id;
* :class:`SchemaInfoProviderFactory` / :class:`SchemaInfoProvider`: the registry configured once
  (URL, credentials, TLS, framing, subject name strategy), one provider per topic.

With the official Python client, wrap a schema in :class:`pulsar_codec.pulsar.ExternalSchemaAdapter`.

What ``EncodeData`` holds
-------------------------
``schema_id`` is the registry id as the framing writes it, without the constant magic byte
(:func:`schema_id_bytes`): Confluent and Apicurio v3 ``u32``/``i32`` BE (4 bytes), Apicurio v2
``i64`` BE (8 bytes), Hortonworks the protocol byte followed by its id fields (``03 || i32``, or
``02 || i64`` above 2**31 - 1). A Java PIP-420 producer puts exactly these bytes, after its ``FF``
magic, in ``MessageMetadata.schema_id``.

``data`` is *framed* by default: the registry prefix is kept (Confluent ``00 || id || body``), so
Kafka consumers, Pulsar consumers that read the prefix, and this package all read it. That is the
only choice with the Python client, which can neither set nor read ``MessageMetadata.schema_id``.
``framed=False`` gives the raw body instead, for Java PIP-420 consumers that take the id from the
metadata; decoding then needs the id as an argument.

Decoding
--------
``decode(topic, data, schema_id)`` takes the id from ``schema_id`` when it is given (a leading
PIP-420 ``FF``/``FE`` magic byte is stripped), else from the payload prefix; a framed payload always
loses its prefix. The writer schema is fetched once per id and resolved into the reader schema
(``reader_schema``, else the schema the values are written with, else each message's own writer
schema).

An Avro message is decoded by the same compiled plan as a batch: the schema's
:class:`~pulsar_codec.MessageDecoder` reads the body as a batch of one row and the value is that
row (``to_pylist()[0]``; for a non-record reader the row's ``value``). Per-message values therefore
always equal the bulk decoder's rows, and every body is checked strictly (a boolean byte other than
0/1, trailing bytes...: :class:`~pulsar_codec.errors.AvroDecodeError` with the byte offset inside
the body). ``decode_batch(messages)`` hands all messages to that decoder at once (one kernel pass
over mixed schema ids, rows in input order) and returns a ``pa.RecordBatch``.

Payload conventions of the registries' own serializers are followed for top-level primitives:
with Confluent and Hortonworks framing an Avro ``bytes`` value is written raw (no Avro length),
and Hortonworks protocols 1-3 write an Avro ``string`` as raw UTF-8 too.

Modules: :mod:`.ids` (schema ids as bytes), :mod:`.subjects` (subject name strategies, provider
settings), :mod:`.base` (the schema interface), :mod:`.avro_schema`, :mod:`.json_schema`,
:mod:`.keyvalue_schema`, :mod:`.provider` (provider and factory).
"""

from __future__ import annotations

from .avro_schema import AvroExternalSchema
from .base import ExternalSchema
from .ids import schema_id_bytes, schema_id_from_bytes
from .json_schema import JsonExternalSchema
from .keyvalue_schema import KeyValue, KeyValueExternalSchema
from .provider import SchemaInfoProvider, SchemaInfoProviderFactory
from .subjects import (
    SUBJECT_NAME_STRATEGIES,
    local_topic_name,
    record_name_strategy,
    subject_name_strategy,
    topic_name_strategy,
    topic_record_name_strategy,
)

__all__ = [
    "SUBJECT_NAME_STRATEGIES",
    "AvroExternalSchema",
    "ExternalSchema",
    "JsonExternalSchema",
    "KeyValue",
    "KeyValueExternalSchema",
    "SchemaInfoProvider",
    "SchemaInfoProviderFactory",
    "local_topic_name",
    "record_name_strategy",
    "schema_id_bytes",
    "schema_id_from_bytes",
    "subject_name_strategy",
    "topic_name_strategy",
    "topic_record_name_strategy",
]
