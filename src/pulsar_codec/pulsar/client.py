"""The pulsar-client adapter: KeyValue and external (PIP-420) schemas for the Python client.

Two pieces sit on top of the official Python client (``pulsar-client``, the ``pulsar`` extra); the
topic reader (``read_batches``) is :mod:`pulsar_codec.pulsar.reader`.

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

from typing import Any, NamedTuple, Protocol, runtime_checkable

from .. import keyvalue as _kv
from ..errors import EncodeError, SchemaError
from ..keyvalue import KeyValueEncodingType
from ._sdk import check_key_encoding
from ._sdk import native as _pulsar
from ._sdk import pulsar as _pulsar_client
from .schema_info import (
    SchemaInfo,
    SchemaType,
    encode_keyvalue_schema_info,
    external_schema_info,
    primitive_schema_info,
)

__all__ = [
    "ExternalSchema",
    "ExternalSchemaAdapter",
    "KeyValue",
    "KeyValueEncodingType",
    "KeyValueSchema",
    "send_keyvalue",
]


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


def _encoded_bytes(schema: Any, obj: Any, what: str) -> bytes | None:
    if obj is None:
        return None
    data = schema.encode(obj)
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise EncodeError(f"the {what} schema {schema!s} returned {type(data).__name__}, expected bytes")
    return data


class KeyValueSchema(_pulsar_client.schema.Schema):  # type: ignore[misc]  # pulsar-client is untyped
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
        self.key_encoding = check_key_encoding(key_encoding)
        self.convention = convention
        self.name = name

    @property
    def separated(self) -> bool:
        """True for the SEPARATED encoding (the key travels as the partition key)."""
        return self.encoding == KeyValueEncodingType.SEPARATED

    def __str__(self) -> str:
        return f"KeyValueSchema({self.key_schema!s}, {self.value_schema!s}, {self.encoding.name})"

    __repr__ = __str__

    # -- what Java would register --

    def java_schema_info(self) -> SchemaInfo:
        """The ``KEY_VALUE`` SchemaInfo a Java client registers for this schema.

        Schema data is the INLINE layout of the sub-schemas' schema data (empty for primitive
        sub-schemas, as in Java's ``KeyValueSchemaInfo``); properties carry ``key.schema.*``,
        ``value.schema.*`` and ``kv.encoding.type``.

        Returns
        -------
        pulsar_codec.pulsar.schema_info.SchemaInfo
        """
        parts = []
        for sub in (self.key_schema, self.value_schema):
            if isinstance(sub, ExternalSchemaAdapter):
                # towards the client the adapter is BYTES; Java registers an external schema's own
                # SchemaInfo: type EXTERNAL, empty schema data
                own = getattr(sub.external_schema, "schema_info", None)
                parts.append(own if isinstance(own, SchemaInfo) else external_schema_info())
                continue
            info = sub.schema_info()
            schema_type = SchemaType.from_name(info.schema_type().name)
            if schema_type.is_primitive:
                # Java's primitive SchemaInfo: its own name ("String", ...) and no schema data
                # (KeyValueSchemaInfo writes length 0)
                parts.append(primitive_schema_info(schema_type))
                continue
            parts.append(SchemaInfo(info.name(), schema_type, info.schema().encode("utf-8")))
        return encode_keyvalue_schema_info(parts[0], parts[1], self.encoding, name=self.name)

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

        Raises
        ------
        EncodeError
            ``key_encoding="raw"`` and the encoded key is not UTF-8 text.
        """
        key_b, value_b = self.encode_parts(key, value)
        if not self.separated:
            return _kv.encode_inline(key_b, value_b, convention=self.convention), None
        if key_b is None:
            partition_key = None
        elif self.key_encoding == "base64":
            partition_key = _kv.encode_partition_key(key_b)[0]
        else:
            try:
                partition_key = key_b.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise EncodeError(
                    f"the key's bytes are not UTF-8 text (byte {exc.start}), which key_encoding='raw' needs "
                    "for a partition key: use key_encoding='base64'"
                ) from None
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
    content: bytes | _Encoded | None
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

    def encode(self, topic: str | None, value: Any) -> Any:
        """An ``EncodeData``-like object (``.data``, ``.schema_id``) for one value."""
        ...

    def decode(self, topic: str | None, data: bytes, schema_id: bytes | None) -> Any:
        """The value of one payload; ``schema_id`` None means "read it from the payload"."""
        ...


class ExternalSchemaAdapter(_pulsar_client.schema.Schema):  # type: ignore[misc]  # pulsar-client is untyped
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
        """The payload for ``obj``: ``EncodeData.data`` (framed); its schema id goes to :attr:`last_schema_id`.

        Raises
        ------
        EncodeError
            The external schema returned something other than an ``EncodeData`` with bytes data.
        """
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
        """The value of one payload, decoded for :attr:`topic` with the id read from the payload."""
        return self.external_schema.decode(self.topic, data, None)

    def decode_message(self, msg: Any) -> Any:
        """The value of a received message, for the message's own topic; None for a null value."""
        if msg.has_null_value():
            return None
        topic = msg.topic_name() or self.topic
        return self.external_schema.decode(topic, msg.data(), None)

    def close(self) -> None:
        """Close the external schema, if it has a ``close()``."""
        close = getattr(self.external_schema, "close", None)
        if callable(close):
            close()
