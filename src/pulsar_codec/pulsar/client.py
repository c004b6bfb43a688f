"""The pulsar-client side of pulsar_codec: read topics into Arrow, KeyValue and external schemas.

Three pieces sit on top of the official Python client (``pulsar-client``, the ``pulsar`` extra):

Topic reader
    :func:`read_batches` walks a topic with a ``Reader`` and yields Arrow RecordBatches of raw
    messages (:data:`MESSAGE_SCHEMA`); :func:`dump_to_parquet` writes them to a Parquet file. The
    payload column goes straight into :func:`pulsar_codec.wire.unframe`,
    :func:`pulsar_codec.keyvalue.split_inline` or an Avro decoder.
KeyValue schema
    :class:`KeyValueSchema` gives Python producers and consumers Pulsar's KeyValue encodings, which
    the Python client lacks (apache/pulsar-client-python issue #69): INLINE puts
    ``i32 len || key || i32 len || value`` in the payload; SEPARATED puts the value in the payload
    and the key, Base64 encoded as Java does, in the partition key (send with
    :func:`send_keyvalue`).
External schemas (PIP-420)
    :class:`ExternalSchemaAdapter` plugs any object with ``encode(topic, value) -> EncodeData`` and
    ``decode(topic, data, schema_id)`` (a registry-backed schema) into the client.

Limits of the Python client, and what they mean here
----------------------------------------------------
* ``_pulsar.SchemaInfo`` carries no properties, and the C++ core insists on the
  ``kv.encoding.type`` property for a ``KEY_VALUE`` schema: sending raises ``ValueError``, and a
  consumer or reader *aborts the process* (``std::invalid_argument`` thrown on a client thread)
  when a message arrives. :class:`KeyValueSchema` therefore presents itself to the client as
  ``BYTES``; the Java-equivalent ``KEY_VALUE`` SchemaInfo is available from
  :meth:`KeyValueSchema.java_schema_info` for registering it by other means.
* ``MessageBuilder.partition_key`` takes ``str`` only and the client can neither set nor read
  ``partition_key_b64_encoded`` or ``null_partition_key``. A SEPARATED key is therefore sent as
  Base64 text without the flag (a Java consumer reading it with a KeyValue schema sees a non-flagged
  key and would use the Base64 text's bytes; Java *producers* are read correctly here), and reading
  needs to be told how keys are encoded (``key_encoding``).
* The client reports an absent partition key as ``""``, so an empty key and a null key look the
  same: both read back as null here, and the producer side skips an empty partition key too.
* The client cannot set ``MessageMetadata.schema_id`` (PIP-420, field 32) nor declare the
  ``EXTERNAL`` schema type, so an external schema's id travels in the payload prefix (Confluent
  ``00 || id``, Hortonworks, Apicurio, ...): ``encode`` must return framed bytes.

Brokers without a schema registry (``pulsar-lite``) accept any producer schema on any topic and
stamp no schema version, which is exactly the situation PIP-420 addresses.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

import pyarrow as pa

try:
    import _pulsar
    import pulsar as _pulsar_client
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "pulsar_codec.pulsar needs the Pulsar Python client: pip install 'pulsar-codec[pulsar]' "
        f"(import failed: {_exc})"
    ) from _exc

from .. import keyvalue as _kv
from ..errors import EncodeError, SchemaError
from ..keyvalue import KeyValueEncodingType

__all__ = [
    "MESSAGE_SCHEMA",
    "ExternalSchema",
    "ExternalSchemaAdapter",
    "KeyValue",
    "KeyValueEncodingType",
    "KeyValueSchema",
    "dump_to_parquet",
    "keyvalue_columns",
    "read_batches",
    "send_keyvalue",
]

#: Arrow schema of the batches :func:`read_batches` yields.
MESSAGE_SCHEMA = pa.schema(
    [
        pa.field("payload", pa.binary()),  # null for a null-value (tombstone) message
        pa.field("key", pa.string()),  # the partition key as the client gives it; null when absent or empty
        pa.field("key_bytes", pa.binary()),  # the key's bytes, Base64-decoded with key_encoding="base64"
        pa.field("properties", pa.map_(pa.string(), pa.string()), nullable=False),
        pa.field("publish_time", pa.timestamp("ms", tz="UTC"), nullable=False),
        pa.field("event_time", pa.timestamp("ms", tz="UTC")),  # null when the producer set none (0)
        pa.field("message_id", pa.binary(), nullable=False),  # MessageId.serialize(); see MessageId.deserialize
        pa.field("topic", pa.string(), nullable=False),
        pa.field("schema_version", pa.int64()),  # broker-assigned schema version; null when absent
        pa.field("redelivery_count", pa.int32(), nullable=False),
    ]
)

_KEY_ENCODINGS = ("raw", "base64")
# SchemaTypes whose SchemaInfo carries no schema data in Java (KeyValueSchemaInfo writes length 0)
_PRIMITIVE_TYPES = frozenset({"NONE", "BYTES", "STRING", "INT8", "INT16", "INT32", "INT64", "FLOAT", "DOUBLE"})


# -- KeyValue -------------------------------------------------------------------------------------


class KeyValue(NamedTuple):
    """A decoded KeyValue message: either part may be None."""

    key: Any
    value: Any


class _Encoded:
    """Payload bytes already encoded by :func:`send_keyvalue`, passed through the producer's schema."""

    __slots__ = ("payload",)

    def __init__(self, payload: bytes) -> None:
        self.payload = payload


def _check_key_encoding(key_encoding: str) -> str:
    if key_encoding not in _KEY_ENCODINGS:
        raise ValueError(f"key_encoding must be one of {_KEY_ENCODINGS}, got {key_encoding!r}")
    return key_encoding


def _encoded_bytes(schema: Any, obj: Any, what: str) -> bytes | None:
    if obj is None:
        return None
    data = schema.encode(obj)
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise EncodeError(f"the {what} schema {schema!s} returned {type(data).__name__}, expected bytes")
    return data


def _schema_type_name(schema: Any) -> str:
    return schema.schema_info().schema_type().name


class KeyValueSchema(_pulsar_client.schema.Schema):
    """Pulsar's KeyValue schema for the Python client.

    Parameters
    ----------
    key_schema, value_schema : pulsar.schema.Schema, optional
        Schemas of the two parts (``StringSchema()``, ``AvroSchema(Record)``, an
        :class:`ExternalSchemaAdapter`, ...); ``BytesSchema()`` when omitted.
    encoding : {"INLINE", "SEPARATED"} or KeyValueEncodingType
        INLINE: the payload is ``i32 BE len || key || i32 BE len || value`` (a null part has length
        -1). SEPARATED: the payload is the value and the key travels as the partition key, Base64
        text of the key bytes; produce such messages with :func:`send_keyvalue`.
    key_encoding : {"base64", "raw"}
        SEPARATED only: how partition keys are read. ``"base64"`` (Java producers and
        :func:`send_keyvalue`) or ``"raw"`` (the C++ client, which puts the key string as is).
    convention : {"java", "cpp"}
        INLINE only: ``"java"`` maps null <-> -1 and empty <-> 0; ``"cpp"`` writes -1 for empty parts
        too and reads -1 as empty, as the C++ client's ``KeyValue`` does.
    name : str
        Schema name (Java's default is ``"KeyValue"``).

    Notes
    -----
    ``Message.value()`` returns a :class:`KeyValue`, or None for a null-value message.
    ``producer.send(KeyValue(k, v))`` works for INLINE; SEPARATED needs :func:`send_keyvalue`
    because ``encode`` cannot set the partition key. Towards the client the schema is declared as
    ``BYTES`` with no schema data (see the module notes on why ``KEY_VALUE`` cannot be);
    :meth:`java_schema_info` gives the SchemaInfo a Java client would register.
    """

    def __init__(
        self,
        key_schema: Any = None,
        value_schema: Any = None,
        encoding: Any = "INLINE",
        *,
        key_encoding: str = "base64",
        convention: str = _kv.JAVA,
        name: str = "KeyValue",
    ) -> None:
        key_schema = _pulsar_client.schema.BytesSchema() if key_schema is None else key_schema
        value_schema = _pulsar_client.schema.BytesSchema() if value_schema is None else value_schema
        for what, sub in (("key_schema", key_schema), ("value_schema", value_schema)):
            if not isinstance(sub, _pulsar_client.schema.Schema):
                raise TypeError(f"{what} must be a pulsar.schema.Schema, got {type(sub).__name__}")
        if convention not in (_kv.JAVA, _kv.CPP):
            raise ValueError(f"convention must be {_kv.JAVA!r} or {_kv.CPP!r}, got {convention!r}")
        super().__init__(KeyValue, _pulsar.SchemaType.BYTES, None, name)
        # no schema data towards the client: the KeyValue layout means something only with
        # type KEY_VALUE, which the client cannot carry (module notes)
        self._schema_info = _pulsar.SchemaInfo(_pulsar.SchemaType.BYTES, name, "")
        self.key_schema = key_schema
        self.value_schema = value_schema
        self.encoding = KeyValueEncodingType.parse(encoding)
        self.key_encoding = _check_key_encoding(key_encoding)
        self.convention = convention
        self.name = name

    @property
    def separated(self) -> bool:
        return self.encoding == KeyValueEncodingType.SEPARATED

    def __str__(self) -> str:
        return f"KeyValueSchema({self.key_schema!s}, {self.value_schema!s}, {self.encoding.name})"

    __repr__ = __str__

    # -- what Java would register --

    def java_schema_info(self):
        """The ``KEY_VALUE`` SchemaInfo a Java client registers for this schema.

        Schema data is the INLINE layout of the sub-schemas' schema data (empty for primitive
        sub-schemas, as in Java's ``KeyValueSchemaInfo``); properties carry ``key.schema.*``,
        ``value.schema.*`` and ``kv.encoding.type``.

        Returns
        -------
        pulsar_codec.pulsar_types.SchemaInfo
        """
        from .. import pulsar_types as pt

        parts = []
        for sub in (self.key_schema, self.value_schema):
            info = sub.schema_info()
            type_name = info.schema_type().name
            data = b"" if type_name in _PRIMITIVE_TYPES else info.schema().encode("utf-8")
            parts.append(pt.SchemaInfo(info.name(), type_name, data))
        return pt.encode_keyvalue_schema_info(parts[0], parts[1], self.encoding, name=self.name)

    # -- encoding --

    def encode_parts(self, key: Any, value: Any) -> tuple[bytes | None, bytes | None]:
        """Encode the two parts with their schemas (None stays None)."""
        return _encoded_bytes(self.key_schema, key, "key"), _encoded_bytes(self.value_schema, value, "value")

    def encode(self, obj: Any) -> bytes:
        """The payload of one message (INLINE); SEPARATED messages go through :func:`send_keyvalue`."""
        if isinstance(obj, _Encoded):
            return obj.payload
        if self.separated:
            raise EncodeError(
                "a SEPARATED KeyValue carries its key in the partition key, which a schema cannot set: "
                "send it with pulsar_codec.pulsar.send_keyvalue(producer, key, value)"
            )
        if not isinstance(obj, tuple) or len(obj) != 2:
            raise TypeError(f"expected a KeyValue(key, value) or a (key, value) tuple, got {type(obj).__name__}")
        key, value = self.encode_parts(obj[0], obj[1])
        return _kv.encode_inline(key, value, convention=self.convention)

    def encode_message(self, key: Any, value: Any) -> tuple[bytes | None, str | None]:
        """``(payload, partition_key)`` of one message; a None payload means a null value.

        INLINE gives the KeyValue payload and no partition key. SEPARATED gives the encoded value
        and the key as Base64 text (``key_encoding="base64"``) or as UTF-8 text (``"raw"``); None
        for a null key.
        """
        key_b, value_b = self.encode_parts(key, value)
        if not self.separated:
            return _kv.encode_inline(key_b, value_b, convention=self.convention), None
        if key_b is None:
            partition_key = None
        elif self.key_encoding == "base64":
            partition_key = _kv.encode_partition_key(key_b)[0]
        else:
            partition_key = key_b.decode("utf-8")  # raises for keys that are not text: they need base64
        return value_b, partition_key

    # -- decoding --

    def decode_parts(self, key: bytes | None, value: bytes | None) -> KeyValue:
        """Decode already split key and value bytes with the sub-schemas."""
        return KeyValue(
            None if key is None else self.key_schema.decode(key),
            None if value is None else self.value_schema.decode(value),
        )

    def decode(self, data: bytes) -> KeyValue:
        """Decode an INLINE payload. SEPARATED messages need the whole message: :meth:`decode_message`."""
        if self.separated:
            raise SchemaError(
                "a SEPARATED KeyValue needs the message's partition key: use message.value() "
                "(decode_message) or decode_parts(key_bytes, value_bytes)"
            )
        key, value = _kv.decode_inline(data, convention=self.convention)
        return self.decode_parts(key, value)

    def key_bytes(self, partition_key: str | None) -> bytes | None:
        """The key bytes of a SEPARATED message from its partition key (None or ``""`` -> None)."""
        if not partition_key:
            return None
        return _kv.decode_partition_key(partition_key, self.key_encoding == "base64")

    def decode_message(self, msg: Any) -> KeyValue | None:
        """Decode a received message (``_pulsar.Message`` or ``pulsar.Message``); None for a null value.

        Raises
        ------
        KeyValueFormatError
            A malformed INLINE payload, or (SEPARATED, ``key_encoding="base64"``) a partition key
            that is not Base64.
        """
        null_value = msg.has_null_value()
        if not self.separated:
            return None if null_value else self.decode(msg.data())
        key = self.key_bytes(msg.partition_key())
        return self.decode_parts(key, None if null_value else msg.data())


def _producer_schema(producer: Any) -> Any:
    # pulsar.Producer keeps the schema it was created with here; there is no public accessor
    return getattr(producer, "_schema", None)


def send_keyvalue(
    producer: Any,
    key: Any,
    value: Any,
    *,
    schema: KeyValueSchema | None = None,
    callback: Any = None,
    **send_kwargs: Any,
) -> Any:
    """Send one KeyValue message, INLINE or SEPARATED, as a Java producer lays it out.

    Parameters
    ----------
    producer : pulsar.Producer
        Created with a :class:`KeyValueSchema`, or with ``BytesSchema`` and ``schema`` given.
    key, value : Any
        The parts, encoded with the schema's key and value schemas; None for a null part. A null
        value sends a null-value message (SEPARATED) or a -1 length (INLINE).
    schema : KeyValueSchema, optional
        Defaults to the producer's schema.
    callback : callable, optional
        If given, send asynchronously with ``producer.send_async(..., callback)`` and return None.
    **send_kwargs
        Passed to ``producer.send`` (``properties``, ``event_timestamp``, ...). ``partition_key``
        is refused for SEPARATED, whose key is the partition key.

    Returns
    -------
    MessageId, or None with ``callback``.

    Notes
    -----
    SEPARATED keys are sent as Base64 text (``key_encoding="base64"``) without the
    ``partition_key_b64_encoded`` flag, which the Python client cannot set; an empty key is sent as
    no key, since the client skips an empty partition key.
    """
    producer_schema = _producer_schema(producer)
    schema = producer_schema if schema is None else schema
    if not isinstance(schema, KeyValueSchema):
        raise TypeError("send_keyvalue needs a producer created with a KeyValueSchema, or schema=KeyValueSchema(...)")
    payload, partition_key = schema.encode_message(key, value)
    if partition_key is not None:
        if "partition_key" in send_kwargs:
            raise TypeError("a SEPARATED KeyValue's key is its partition key; do not pass partition_key")
        send_kwargs["partition_key"] = partition_key
    if payload is None:
        content = None
    elif isinstance(producer_schema, KeyValueSchema):
        content = _Encoded(payload)
    elif producer_schema is None or isinstance(producer_schema, _pulsar_client.schema.BytesSchema):
        content = payload
    else:
        raise TypeError(
            f"the producer's schema is {producer_schema!s}; send_keyvalue needs a KeyValueSchema or BytesSchema producer"
        )
    if callback is not None:
        producer.send_async(content, callback, **send_kwargs)
        return None
    return producer.send(content, **send_kwargs)


def keyvalue_columns(batch: pa.RecordBatch, encoding: Any, *, convention: str = _kv.JAVA) -> tuple[pa.Array, pa.Array]:
    """Key and value bytes of every message in a :func:`read_batches` batch.

    INLINE splits the payload column (:func:`pulsar_codec.keyvalue.split_inline`); SEPARATED
    returns the ``key_bytes`` column (read it with ``key_encoding="base64"`` for Java producers)
    and the payload column. Null where a part is null.
    """
    enc = KeyValueEncodingType.parse(encoding)
    if enc == KeyValueEncodingType.SEPARATED:
        return batch.column("key_bytes"), batch.column("payload")
    return _kv.split_inline(batch.column("payload"), convention=convention)


# -- external schemas (PIP-420) -------------------------------------------------------------------


@runtime_checkable
class ExternalSchema(Protocol):
    """What :class:`ExternalSchemaAdapter` needs from a registry-backed schema.

    ``encode(topic, value)`` returns an object with ``.data`` (the payload bytes, which must carry
    the schema id in their prefix for the Python client) and ``.schema_id`` (bytes, as
    ``EncodeData.schemaId`` in PIP-420). ``decode(topic, data, schema_id)`` returns the value;
    ``schema_id`` is the id from the message metadata, which is always None with the Python client,
    so the schema reads it from the payload prefix.
    """

    def encode(self, topic: str | None, value: Any) -> Any: ...

    def decode(self, topic: str | None, data: bytes, schema_id: bytes | None) -> Any: ...


class ExternalSchemaAdapter(_pulsar_client.schema.Schema):
    """Use an external (registry-backed) schema with the Python client's producers and consumers.

    Parameters
    ----------
    external_schema : ExternalSchema
        Object with ``encode(topic, value) -> EncodeData`` and ``decode(topic, data, schema_id)``.
    topic : str, optional
        The topic passed to ``encode`` (``Schema.encode`` gets no topic from the client). Decoding
        uses the message's own topic when it has one.
    name : str
        Schema name reported to the client.

    Notes
    -----
    PIP-420 moves the schema id into ``MessageMetadata.schema_id``; the Python client can neither
    set nor read that field, nor declare the ``EXTERNAL`` schema type. So the adapter declares
    ``BYTES`` with empty schema data (what PIP-420's mock external schema registers, minus the
    type), ``encode`` returns ``EncodeData.data``, which must be the *framed* payload (for example
    Confluent ``00 || id || body``), and ``decode`` is called with ``schema_id=None``: the external
    schema reads the id from the prefix. The id of the last encoded value is kept in
    :attr:`last_schema_id`. Null-value messages decode to None without calling the external schema.
    """

    def __init__(self, external_schema: Any, topic: str | None = None, *, name: str = "EXTERNAL") -> None:
        for method in ("encode", "decode"):
            if not callable(getattr(external_schema, method, None)):
                raise TypeError(f"external_schema must have an {method}() method, got {type(external_schema).__name__}")
        super().__init__(object, _pulsar.SchemaType.BYTES, None, name)
        self._schema_info = _pulsar.SchemaInfo(_pulsar.SchemaType.BYTES, name, "")
        self.external_schema = external_schema
        self.topic = topic
        self.last_schema_id: bytes | None = None

    def __str__(self) -> str:
        return f"ExternalSchemaAdapter({self.external_schema!r})"

    __repr__ = __str__

    def encode(self, obj: Any) -> bytes:
        encoded = self.external_schema.encode(self.topic, obj)
        try:
            data, schema_id = encoded.data, encoded.schema_id
        except AttributeError:
            raise EncodeError(
                f"{type(self.external_schema).__name__}.encode returned {type(encoded).__name__}; "
                "expected an object with .data and .schema_id (EncodeData)"
            ) from None
        if isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        if not isinstance(data, bytes):
            raise EncodeError(f"EncodeData.data must be bytes, got {type(data).__name__}")
        self.last_schema_id = None if schema_id is None else bytes(schema_id)
        return data

    def decode(self, data: bytes) -> Any:
        return self.external_schema.decode(self.topic, data, None)

    def decode_message(self, msg: Any) -> Any:
        if msg.has_null_value():
            return None
        topic = msg.topic_name() or self.topic
        return self.external_schema.decode(topic, msg.data(), None)

    def close(self) -> None:
        """Close the external schema, if it has a ``close()``."""
        close = getattr(self.external_schema, "close", None)
        if callable(close):
            close()


# -- topic reader ---------------------------------------------------------------------------------


class _Columns:
    """Column lists for one batch of messages."""

    def __init__(self, key_encoding: str) -> None:
        self.key_encoding = key_encoding
        self.clear()

    def clear(self) -> None:
        self.payload: list = []
        self.key: list = []
        self.properties: list = []
        self.publish: list = []
        self.event: list = []
        self.ids: list = []
        self.topic: list = []
        self.version: list = []
        self.redelivery: list = []

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, msg: Any) -> None:
        self.payload.append(None if msg.has_null_value() else msg.data())
        self.key.append(msg.partition_key() or None)
        props = msg.properties()
        self.properties.append(list(props.items()) if props else [])
        self.publish.append(msg.publish_timestamp())
        event = msg.event_timestamp()
        self.event.append(event if event else None)
        self.ids.append(msg.message_id().serialize())
        self.topic.append(msg.topic_name())
        raw = getattr(msg, "_message", None)  # the _pulsar.Message behind pulsar.Message
        version = raw.int_schema_version() if raw is not None and hasattr(raw, "int_schema_version") else -1
        self.version.append(None if version < 0 else version)
        self.redelivery.append(msg.redelivery_count())

    def flush(self) -> pa.RecordBatch:
        keys = pa.array(self.key, pa.string())
        if self.key_encoding == "base64":
            key_bytes = _kv.decode_partition_keys(keys, True)
        else:
            key_bytes = keys.cast(pa.binary())
        ts = pa.timestamp("ms", tz="UTC")
        batch = pa.RecordBatch.from_arrays(
            [
                pa.array(self.payload, pa.binary()),
                keys,
                key_bytes,
                pa.array(self.properties, MESSAGE_SCHEMA.field("properties").type),
                pa.array(self.publish, pa.int64()).cast(ts),
                pa.array(self.event, pa.int64()).cast(ts),
                pa.array(self.ids, pa.binary()),
                pa.array(self.topic, pa.string()),
                pa.array(self.version, pa.int64()),
                pa.array(self.redelivery, pa.int32()),
            ],
            schema=MESSAGE_SCHEMA,
        )
        self.clear()
        return batch


def _timestamp_ms(value: Any, what: str) -> int:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            raise ValueError(f"{what} datetime must be timezone-aware")
        return int(value.timestamp() * 1000)
    return int(value)


def _message_id(value: Any) -> Any:
    if isinstance(value, _pulsar_client.MessageId):
        return value._msg_id
    if isinstance(value, _pulsar.MessageId):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _pulsar.MessageId.deserialize(bytes(value))
    return None


def _start_position(start: Any) -> tuple[Any, int | None]:
    """``(message id to create the reader at, publish time to seek to or None)``."""
    if isinstance(start, str):
        if start == "earliest":
            return _pulsar.MessageId.earliest, None
        if start == "latest":
            return _pulsar.MessageId.latest, None
        raise ValueError(f"start must be 'earliest', 'latest', a message id, or a publish time; got {start!r}")
    msg_id = _message_id(start)
    if msg_id is not None:
        return msg_id, None
    if isinstance(start, (int, _dt.datetime)) and not isinstance(start, bool):
        return _pulsar.MessageId.earliest, _timestamp_ms(start, "start")
    raise TypeError(f"unsupported start position {type(start).__name__}")


class _End:
    """When to stop: at the end of the topic, after a message id, at a publish time, or never."""

    def __init__(self, end: Any) -> None:
        self.follow = end is None
        self.id = None
        self.time = None
        self.partitions = 1
        self._late: set[str] = set()
        if end is None or (isinstance(end, str) and end == "latest"):
            return
        msg_id = _message_id(end)
        if msg_id is not None:
            self.id = msg_id
        elif isinstance(end, (int, _dt.datetime)) and not isinstance(end, bool):
            self.time = _timestamp_ms(end, "end")
        else:
            raise ValueError(f"end must be 'latest', None, a message id or a publish time; got {end!r}")

    def past(self, msg: Any) -> bool:
        """True if ``msg`` lies past the end (after the end id, or at/after the end time): not returned."""
        if self.time is not None:
            if msg.publish_timestamp() < self.time:
                return False
            self._late.add(msg.topic_name())
            return True
        return self.id is not None and self.id < msg.message_id()

    def finished(self) -> bool:
        """After a message :meth:`past` the end: True if nothing later can be inside the range.

        Partitions are interleaved, so a time bound is done only once every partition has gone
        past it (or the topic ends); publish times are taken as ordered within a partition.
        """
        return self.time is None or len(self._late) >= self.partitions

    def reached(self, msg: Any) -> bool:
        """True if ``msg`` is the last message to return (the end id itself)."""
        return self.id is not None and not (msg.message_id() < self.id)


_PROBE_MS = 500


def _first_after_seek(reader: Any, timeout_ms: int) -> Any:
    """The first message after a seek by publish time, or None if none arrives.

    After such a seek the C++ client answers ``has_message_available`` from the subscription's
    mark-delete position in the broker's reply; brokers that omit it (pulsar-lite) get a false
    "no". pulsar-lite also sometimes stops dispatching after a seek that raced with the first
    delivery. So a "no" is confirmed with a short read, and None sends the caller to a scan.
    """
    try:
        available = reader.has_message_available()
    except _pulsar_client.UnknownError:
        available = False
    try:
        return reader.read_next(timeout_ms if available else min(timeout_ms, _PROBE_MS))
    except _pulsar_client.Timeout:
        return None


def _next_bounded(reader: Any, topic: str, timeout_ms: int, *, probe: bool) -> Any:
    """The next message of a bounded read, or None at the end of the topic.

    ``has_message_available`` asks the broker for the last message id. Some brokers cannot answer
    that for a topic without messages (pulsar-lite replies with an error); for the first message
    of a read (``probe``) that error is settled with a short ``read_next``.
    """
    try:
        available = reader.has_message_available()
    except _pulsar_client.UnknownError:
        if not probe:
            raise
        try:
            return reader.read_next(min(timeout_ms, _PROBE_MS))
        except _pulsar_client.Timeout:
            return None
    if not available:
        return None
    try:
        return reader.read_next(timeout_ms)
    except _pulsar_client.Timeout:
        raise TimeoutError(
            f"no message from {topic} within {timeout_ms} ms although the broker reported one available"
        ) from None


def _client_for(client_or_url: Any, client_options: dict | None) -> tuple[Any, bool]:
    if isinstance(client_or_url, str):
        options = {"logger": _pulsar_client.ConsoleLogger(_pulsar.LoggerLevel.Warn)}
        options.update(client_options or {})
        return _pulsar_client.Client(client_or_url, **options), True
    if client_options:
        raise TypeError("client_options apply only when a service URL is given")
    return client_or_url, False


def read_batches(
    client_or_url: Any,
    topic: str,
    *,
    batch_size: int = 10_000,
    start: Any = "earliest",
    end: Any = "latest",
    start_inclusive: bool = False,
    timeout_ms: int = 30_000,
    key_encoding: str = "raw",
    limit: int | None = None,
    receiver_queue_size: int = 1000,
    client_options: dict | None = None,
) -> Iterator[pa.RecordBatch]:
    """Read a topic's raw messages as Arrow RecordBatches (schema :data:`MESSAGE_SCHEMA`).

    Parameters
    ----------
    client_or_url : pulsar.Client or str
        A client, or a service URL (``pulsar://host:6650``) for a client that is created here and
        closed when the iterator ends.
    topic : str
    batch_size : int
        Messages per batch (the last batch may be shorter).
    start : "earliest", "latest", message id, int or datetime
        Where to begin: a ``pulsar.MessageId`` / ``_pulsar.MessageId`` or its ``serialize()`` bytes
        (the ``message_id`` column), or a publish time (epoch milliseconds or an aware datetime):
        the reader seeks to the first message published at or after it. If no message arrives
        after that seek (nothing that late, or a broker whose seek is unreliable, as pulsar-lite's
        is), and always on partitioned topics, the topic is scanned from the beginning and
        earlier messages are skipped.
    end : "latest", None, message id, int or datetime
        ``"latest"``: stop when the reader has caught up with the topic (``has_message_available``).
        A message id: stop after that message. A publish time: only messages published before it,
        stopping once every partition has reached it. Bounded reads also stop at the end of the
        topic. ``None``: follow the topic forever, yielding a partial batch whenever ``timeout_ms``
        passes without a message.
    start_inclusive : bool
        With a message-id ``start``, include that message (Pulsar's default is to start after it).
    timeout_ms : int
        How long to wait for one message the broker says is available (bounded reads raise
        ``TimeoutError`` past it), or the idle time before a partial batch (``end=None``).
    key_encoding : {"raw", "base64"}
        How ``key_bytes`` is derived from the partition key: its UTF-8 bytes, or Base64-decoded
        (keys of Java SEPARATED-KeyValue producers and of :func:`send_keyvalue`). The Python
        client cannot see the ``partition_key_b64_encoded`` flag, hence the option.
    limit : int, optional
        Stop after this many messages.
    receiver_queue_size : int
        The reader's prefetch queue.
    client_options : dict, optional
        Keyword arguments for ``pulsar.Client`` when a URL is given.

    Yields
    ------
    pa.RecordBatch

    Raises
    ------
    TimeoutError
        A bounded read did not receive a message the broker reported as available.
    KeyValueFormatError
        ``key_encoding="base64"`` and a partition key is not Base64 (index = row in the batch).

    Notes
    -----
    A partitioned topic is read across all its partitions (the client's multi-topic reader): the
    ``topic`` column names the partition, and order is kept within a partition only. Message-id
    bounds name a position in one partition, so on partitioned topics bound reads by publish time.
    Publish times are stamped by producers, so time bounds assume their clocks roughly agree.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be None or >= 0, got {limit}")
    _check_key_encoding(key_encoding)
    start_id, seek_time = _start_position(start)
    stop = _End(end)
    client, owned = _client_for(client_or_url, client_options)
    reader = None
    try:
        partitions = 1
        if stop.time is not None or seek_time is not None:
            partitions = len(client.get_topic_partitions(topic))
        stop.partitions = partitions
        reader = client.create_reader(
            topic, start_id, receiver_queue_size=receiver_queue_size, start_message_id_inclusive=start_inclusive
        )
        pending = None  # a message already read while positioning
        # brokers do not always honour a seek by time (pulsar-lite may ignore one past the last
        # message), so messages published before the start are also dropped here
        skip_before = seek_time
        # a seek by time on a multi-partition reader cannot be verified partition by partition:
        # there the publish-time filter alone positions the read
        if seek_time is not None and partitions == 1:
            reader.seek(seek_time)
            pending = _first_after_seek(reader, timeout_ms)
            if pending is None:
                reader.close()
                reader = client.create_reader(
                    topic, _pulsar.MessageId.earliest, receiver_queue_size=receiver_queue_size
                )
        columns = _Columns(key_encoding)
        count = 0
        while limit is None or count < limit:
            if pending is not None:
                msg, pending = pending, None
            elif stop.follow:
                try:
                    msg = reader.read_next(timeout_ms)
                except _pulsar_client.Timeout:
                    if len(columns):
                        yield columns.flush()
                    continue
            else:
                msg = _next_bounded(reader, topic, timeout_ms, probe=count == 0)
                if msg is None:
                    break
            if skip_before is not None and msg.publish_timestamp() < skip_before:
                continue
            if stop.past(msg):
                if stop.finished():
                    break
                continue
            columns.add(msg)
            count += 1
            if len(columns) >= batch_size:
                yield columns.flush()
            if stop.reached(msg):
                break
        if len(columns):
            yield columns.flush()
    finally:
        try:
            if reader is not None:
                reader.close()
        finally:
            if owned:
                client.close()


def dump_to_parquet(
    client_or_url: Any,
    topic: str,
    path: str | Path,
    *,
    compression: str = "zstd",
    **read_options: Any,
) -> int:
    """Write a topic's raw messages to a Parquet file (schema :data:`MESSAGE_SCHEMA`).

    Parameters
    ----------
    client_or_url : pulsar.Client or str
        As in :func:`read_batches`.
    topic : str
    path : str or Path
        The Parquet file; written even when no message is read (zero rows).
    compression : str
        Parquet codec (``"zstd"``, ``"snappy"``, ``"none"``, ...).
    **read_options
        Passed to :func:`read_batches` (``start``, ``end``, ``batch_size``, ``key_encoding``,
        ``limit``, ``timeout_ms``, ...). ``end=None`` (follow) is refused: a dump is bounded.

    Returns
    -------
    int
        Number of messages written.
    """
    import pyarrow.parquet as pq

    if "end" in read_options and read_options["end"] is None:
        raise ValueError("dump_to_parquet reads a bounded range; end=None (follow) is not allowed")
    rows = 0
    with pq.ParquetWriter(str(path), MESSAGE_SCHEMA, compression=compression) as writer:
        for batch in read_batches(client_or_url, topic, **read_options):
            writer.write_batch(batch)
            rows += batch.num_rows
    return rows

