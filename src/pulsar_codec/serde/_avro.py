"""AvroSerializer and AvroDeserializer: confluent-kafka's call shapes over the pipeline.

Both keep one :class:`~pulsar_codec.pipeline.MessageEncoder` / :class:`~pulsar_codec.pipeline.MessageDecoder`
per schema they meet (plus the value converter of that schema), so a call after the first only looks
up a dict and runs the compiled plan on the one value: ``MessageEncoder.encode_value`` (the Avro row
writer) and ``MessageDecoder.decode_value`` (the decode kernel on one payload).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Self

import pyarrow as pa

from .. import wire
from ..errors import EncodeError, WireFormatError
from ..formats.avro.schema import Named, Primitive, Schema, parse, to_json
from ..formats.base import errors_table
from ..pipeline import Decoded, MessageDecoder, MessageEncoder
from ..registry.lookup import fetch_schema
from ._ids import (
    ID_PLACEMENT,
    WriterId,
    add_schema_id_header,
    check_id_placement,
    decode_with_ids,
    first_present,
    frame_key,
    guid_prefixed,
    message_values,
    read_schema_id,
    schema_guid,
    schema_id_header,
    split_ids,
)
from ._subjects import (
    SubjectNameStrategy,
    client_of,
    latest_subject,
    resolve_strategy,
    subject_registry,
)
from ._values import rows_reader, value_reader

__all__ = ["AvroDeserializer", "AvroSerializer"]

_SERIALIZER_DEFAULTS: dict[str, Any] = {
    "auto.register.schemas": True,
    "normalize.schemas": False,
    "use.latest.version": False,
    "use.schema.id": None,
    "subject.name.strategy": None,
    "subject.name.strategy.type": None,
}
_DESERIALIZER_DEFAULTS: dict[str, Any] = {
    "use.latest.version": False,
    "subject.name.strategy": None,
    "subject.name.strategy.type": None,
}
# confluent-kafka settings this package does not implement (data-contract rules, custom id
# placement, strict validation): refused by name rather than silently ignored
_NOT_SUPPORTED = frozenset(
    {
        "use.latest.with.metadata",
        "subject.name.strategy.conf",
        "validate.strict",
        "validate.strict.allow.default",
        "validation.rules.execution",
        "validation.rules.fail.fast",
        "validation.rules.executor",
    }
)


def _settings(conf: Mapping[str, Any] | None, defaults: dict[str, Any]) -> dict[str, Any]:
    """``defaults`` updated with ``conf``; unknown keys raise ValueError as confluent-kafka does."""
    if conf is not None and not isinstance(conf, Mapping):
        raise TypeError(f"conf must be a dict, got {type(conf).__name__}")
    given = dict(conf or {})
    serializer = "auto.register.schemas" in defaults
    placement = "prefix" if serializer else "dual"
    for key in ID_PLACEMENT:
        if key in given:
            placement = check_id_placement(key, given.pop(key), serializer)
    unsupported = sorted(k for k in given if k in _NOT_SUPPORTED)
    if unsupported:
        raise ValueError(
            f"Unsupported properties: {', '.join(unsupported)} (pulsar_codec.serde does not implement them)"
        )
    unknown = sorted(k for k in given if k not in defaults)
    if unknown:
        raise ValueError(f"Unrecognized properties: {', '.join(unknown)}")
    settings = {**defaults, **given, "schema.id.placement": placement}
    for key in ("auto.register.schemas", "normalize.schemas", "use.latest.version"):
        if key in settings and not isinstance(settings[key], bool):
            raise ValueError(f"{key} must be a boolean value")
    use_id = settings.get("use.schema.id")
    if use_id is not None and (not isinstance(use_id, int) or isinstance(use_id, bool)):
        raise ValueError("use.schema.id must be an int value")
    return settings


def _text(schema: Any) -> str:
    """JSON text of a schema given as text, a dict/list, a parsed schema or confluent-kafka's ``Schema``."""
    inner = getattr(schema, "schema_str", None)
    if isinstance(inner, str):
        schema = inner
    if isinstance(schema, str):
        parse(schema)  # fail here, on the caller's schema, not on the first message
        return schema
    import json

    return json.dumps(to_json(parse(schema)))


@functools.lru_cache(maxsize=64)
def _is_raw_bytes(text: str | None) -> bool:
    """A plain ``bytes`` schema: Confluent's serializers (Java and confluent-kafka) frame the value
    itself, without the Avro length prefix, and their deserializers read it back that way."""
    if text is None:
        return False
    node = parse(text)
    return isinstance(node, Primitive) and node.type == "bytes" and node.logical is None


def _record_name(node: Schema) -> str | None:
    return node.fullname if isinstance(node, Named) else None


@dataclass(frozen=True)
class _Writer:
    """What one subject writes with: the schema id and its encoder."""

    schema_id: int
    encoder: MessageEncoder
    raw: bool  # a plain bytes schema: the value is the payload (see _is_raw_bytes)
    prefix: bytes  # the wire prefix of schema_id, framed once
    header: bytes | None = None  # header mode: 01 + GUID, the schema-id header's value


class AvroSerializer:
    """Serialize values as Confluent-framed Avro (``00`` + 4-byte schema id + body), like
    confluent-kafka's ``AvroSerializer``: a drop-in ``key.serializer`` / ``value.serializer`` of its
    ``SerializingProducer``.

    Parameters
    ----------
    registry : registry client, RegistryConfig or str
        A :class:`~pulsar_codec.registry.LocalRegistry` or
        :class:`~pulsar_codec.registry.ConfluentRegistry`, a
        :class:`~pulsar_codec.registry.RegistryConfig`, a registry URL or file path, or
        confluent-kafka's ``SchemaRegistryClient``.
    schema : str, dict or Schema, optional
        The writer schema (confluent-kafka's ``Schema`` works too). Required unless
        ``use.latest.version`` or ``use.schema.id`` is set.
    conf : dict, optional
        ``auto.register.schemas`` (default True), ``normalize.schemas`` (False),
        ``use.latest.version`` (False; needs ``auto.register.schemas`` False), ``use.schema.id``
        (an id to write with), ``subject.name.strategy`` (a callable ``(ctx, record_name) ->
        subject``: :func:`topic_subject_name_strategy` by default, or the record / topic-record
        strategies, confluent-kafka's functions of those names work too) or
        ``subject.name.strategy.type`` (``"TOPIC"``, ``"RECORD"``, ``"TOPIC_RECORD"``),
        ``schema.id.serializer`` (confluent-kafka's ``prefix_schema_id_serializer``, the default,
        or ``header_schema_id_serializer``: the payload unprefixed and ``01`` + the schema's GUID
        in the context's ``__value_schema_id`` / ``__key_schema_id`` header, as confluent-kafka
        writes it; the registry must give GUIDs). Other keys raise ValueError. For confluent-kafka's positional
        order the third argument may also be the ``to_dict`` callable.
    to_dict : callable, optional
        ``to_dict(obj, ctx) -> dict``, applied before writing.

    Notes
    -----
    Values take fastavro's shapes: dicts for records, str for enums, ``Decimal``, ``datetime``,
    ``uuid.UUID`` or str, bytes for fixed and ``duration``. A missing record field takes its
    default. A value for a union that is not ``[null, T]`` is written with the first branch that
    accepts it (fastavro's tuple notation ``(name, value)`` is not supported). The schema id is
    resolved once per subject (registered, looked up, or the latest version) and kept, as
    confluent-kafka does. With ``use.schema.id`` the value is written with that id's schema (as
    confluent-kafka does; a ``schema`` given too is only checked to parse), but unlike
    confluent-kafka the id need not be registered under the context's subject (no subject is
    asked for).
    """

    def __init__(
        self,
        registry: Any,
        schema: Any = None,
        conf: Mapping[str, Any] | Callable[[Any, Any], Any] | None = None,
        to_dict: Callable[[Any, Any], Any] | Mapping[str, Any] | None = None,
    ) -> None:
        if callable(conf):  # confluent-kafka's order: (client, schema_str, to_dict, conf)
            conf, to_dict = to_dict if isinstance(to_dict, Mapping) or to_dict is None else None, conf
        if to_dict is not None and not callable(to_dict):
            raise ValueError(
                "to_dict must be callable with the signature to_dict(object, SerializationContext) -> dict"
            )
        settings = _settings(conf if isinstance(conf, Mapping) or conf is None else None, _SERIALIZER_DEFAULTS)
        self._auto_register: bool = settings["auto.register.schemas"]
        self._normalize: bool = settings["normalize.schemas"]
        self._use_latest: bool = settings["use.latest.version"]
        self._use_id: int | None = settings["use.schema.id"]
        self._in_header: bool = settings["schema.id.placement"] == "header"
        if self._use_latest and self._auto_register:
            raise ValueError("cannot enable both use.latest.version and auto.register.schemas")
        self._strategy: SubjectNameStrategy = resolve_strategy(
            settings["subject.name.strategy"], settings["subject.name.strategy.type"]
        )
        if schema is None and not self._use_latest and self._use_id is None:
            raise ValueError("a schema is needed unless use.latest.version or use.schema.id is set")
        self._schema_text = None if schema is None else _text(schema)
        self._record_name = None if self._schema_text is None else _record_name(parse(self._schema_text))
        self._client = client_of(registry)
        self._owns_client = self._client is not registry
        self._registry = subject_registry(self._client)
        self._to_dict = to_dict
        self._lock = threading.Lock()
        self._subjects: dict[str | None, _Writer] = {}
        self._writers: dict[tuple[int, str], _Writer] = {}

    def __call__(self, obj: Any, ctx: Any = None) -> bytes | None:
        """The framed message for ``obj`` (None for None); with ``header_schema_id_serializer``,
        the unprefixed payload, its schema id added to ``ctx.headers``.

        Parameters
        ----------
        obj : dict or object
            The value (an object when ``to_dict`` converts it).
        ctx : SerializationContext
            Topic and field (key or value); the subject name strategy reads them.

        Raises
        ------
        EncodeError
            The value does not fit the schema.
        ValueError
            Header mode with no context or no headers list / dict in it.
        SchemaNotFoundError, IncompatibleSchemaError, RegistryError
            From the registry (or confluent-kafka's ``SchemaRegistryError``).
        """
        if obj is None:
            return None
        writer = self._writer_for(ctx)
        value = self._to_dict(obj, ctx) if self._to_dict is not None else obj
        if writer.raw:
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise EncodeError(f"{value!r} is not bytes (the schema is bytes)")
            if writer.header is None:
                return writer.prefix + bytes(value)
            payload = bytes(value)
        elif writer.header is None:
            return writer.encoder.encode_value(value)
        else:
            payload = writer.encoder.encode_value(value, framed=False)
        add_schema_id_header(ctx, writer.header)  # after the value is written, as confluent-kafka does
        return payload

    def _subject(self, ctx: Any) -> str:
        subject = self._strategy(ctx, self._record_name)
        if subject is None:
            raise ValueError("the subject name strategy gave no subject (a record strategy needs a named schema)")
        return subject

    def _writer_for(self, ctx: Any) -> _Writer:
        subject = None if self._use_id is not None else self._subject(ctx)  # a fixed id needs no subject
        found = self._subjects.get(subject)
        if found is not None:
            return found
        with self._lock:
            found = self._subjects.get(subject)
            if found is None:
                found = self._resolve(subject)
                self._subjects[subject] = found
        return found

    def _resolve(self, subject: str | None) -> _Writer:
        """The id and schema ``subject`` writes with (one registry round trip, then cached)."""
        text = self._schema_text
        if self._use_id is not None:
            # written with the id's own schema, as confluent-kafka does: the frame names that id,
            # so a value written with another schema would be read back as garbage
            schema_id = self._use_id
            text = self._registry.schema(schema_id)
        else:
            assert subject is not None
            if self._use_latest:
                schema_id, text = self._registry.latest(subject)
            elif self._auto_register:
                assert text is not None
                schema_id = self._registry.register(subject, text, self._normalize)
            else:
                assert text is not None
                schema_id = self._registry.lookup(subject, text, self._normalize)
        key = (schema_id, text)
        writer = self._writers.get(key)
        if writer is None:
            encoder = MessageEncoder(self._client, subject, schema=text, schema_id=schema_id)
            prefix = wire.CONFLUENT.pack(schema_id, b"")
            header = b"\x01" + schema_guid(self._client, schema_id).bytes if self._in_header else None
            writer = _Writer(schema_id, encoder, _is_raw_bytes(text), prefix, header)
            self._writers[key] = writer
        return writer

    def close(self) -> None:
        """Close the registry client when this object built it (from a URL, path or RegistryConfig)."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AvroSerializer({self._client!r})"


@dataclass(frozen=True)
class _Reader:
    """One reader schema: its decoder and the converters of its values to confluent-kafka's shapes."""

    decoder: MessageDecoder
    read: Callable[[pa.RecordBatch], list[Any]]  # the rows of a decoded batch
    per_value: bool = True  # decode_value's value converts (see value_reader); else a one-row batch
    convert: Callable[[Any], Any] | None = None  # of decode_value's value; None: already right
    raw: bool = False  # a plain bytes schema: the payload is the value (see _is_raw_bytes)


class AvroDeserializer:
    """Deserialize Confluent-framed Avro into dicts, like confluent-kafka's ``AvroDeserializer``
    (a drop-in ``value.deserializer`` of its ``DeserializingConsumer``), plus
    :meth:`decode_batch` for a ``consumer.consume(num_messages=N)`` loop.

    Parameters
    ----------
    registry : registry client, RegistryConfig, str or Mapping
        As for :class:`AvroSerializer`; a Mapping of schema id -> schema also works here.
    reader_schema : str, dict or Schema, optional
        The schema every message is read as (schema resolution). Default: each message's own
        writer schema; :meth:`decode_batch` reads a batch as its newest writer schema.
    from_dict : callable, optional
        ``from_dict(dict, ctx) -> object``, applied to each value :meth:`__call__` returns.
    conf : dict, optional
        ``use.latest.version`` (read as the subject's latest version; the subject comes from
        ``subject.name.strategy`` / ``subject.name.strategy.type`` as for the serializer, given
        the writer schema's name when the strategy needs a record name; a call without a context
        reads the message's own schema, as confluent-kafka does), ``schema.id.deserializer``
        (confluent-kafka's ``dual_schema_id_deserializer``, the default: the
        ``__value_schema_id`` / ``__key_schema_id`` header of the context, else the payload prefix;
        or ``prefix_schema_id_deserializer``: the prefix only). Other keys raise ValueError.
    return_record_name : bool
        confluent-kafka's parameter (also its fourth positional one, with ``conf`` fifth); only
        False.

    Notes
    -----
    Values have fastavro's (so confluent-kafka's) Python types: dicts for records, str for enums,
    bytes for bytes and fixed, ``Decimal``, ``datetime.date`` / ``datetime.time``, timestamps as
    ``datetime`` in ``datetime.timezone.utc`` (local timestamps naive), ``uuid.UUID``, ints for
    nanosecond timestamps and 12 raw bytes for ``duration`` (fastavro knows neither).
    """

    def __init__(
        self,
        registry: Any,
        reader_schema: Any = None,
        from_dict: Callable[[Any, Any], Any] | None = None,
        conf: Mapping[str, Any] | bool | None = None,
        return_record_name: bool | Mapping[str, Any] | None = False,
    ) -> None:
        if isinstance(conf, bool):  # confluent-kafka's order: (client, schema_str, from_dict, return_record_name, conf)
            conf, return_record_name = (None if isinstance(return_record_name, bool) else return_record_name), conf
        if not isinstance(return_record_name, bool):
            raise ValueError("return_record_name must be a boolean value")
        if return_record_name:
            raise ValueError("return_record_name=True is not supported: a union of records reads as the record's dict")
        if from_dict is not None and not callable(from_dict):
            raise ValueError(
                "from_dict must be callable with the signature from_dict(dict, SerializationContext) -> object"
            )
        settings = _settings(conf, _DESERIALIZER_DEFAULTS)
        self._use_latest: bool = settings["use.latest.version"]
        self._dual: bool = settings["schema.id.placement"] == "dual"  # ids in headers read too
        self._strategy: SubjectNameStrategy = resolve_strategy(
            settings["subject.name.strategy"], settings["subject.name.strategy.type"]
        )
        self._reader_text = None if reader_schema is None else _text(reader_schema)
        self._client = registry if isinstance(registry, Mapping) else client_of(registry)
        self._owns_client = self._client is not registry
        self._from_dict = from_dict
        self._lock = threading.Lock()
        self._readers: dict[Any, _Reader] = {}  # by writer id (no reader schema) or reader text
        self._latest: dict[str, str] = {}
        self._writer_names: dict[Any, str | None] = {}  # by writer id, for a record strategy's subject
        self._batch_decoders: dict[tuple[str | None, str], MessageDecoder] = {}

    # -- one message -----------------------------------------------------------------------------

    def __call__(self, data: bytes | None, ctx: Any = None) -> Any:
        """The value of one framed message (None for None).

        Raises
        ------
        WireFormatError, AvroDecodeError
            A bad prefix or body (both are ``ValueError``).
        SchemaNotFoundError
            The registry does not know the message's schema id.
        """
        if data is None:
            return None
        if ctx is not None and self._dual and getattr(ctx, "headers", None):
            header = schema_id_header(ctx)
            if header is not None:  # the id is the header's; the payload is all data
                return self._with_id(data, ctx, read_schema_id(header[1], False, header=header[0]))
        try:
            reader = self._reader_for(data, ctx)
            if reader.raw:
                value: Any = bytes(wire.CONFLUENT.unpack(data)[1])
            elif reader.per_value:
                value = reader.decoder.decode_value(data)
                if reader.convert is not None:
                    value = reader.convert(value)
            else:
                batch = reader.decoder.decode([data])
                assert isinstance(batch, pa.RecordBatch)  # the per-message decoders raise on bad data
                value = reader.read(batch)[0]
        except WireFormatError as exc:
            if not guid_prefixed(exc, data):
                raise
            return self._with_id(data, ctx, read_schema_id(data, False))
        return self._from_dict(value, ctx) if self._from_dict is not None else value

    def _with_id(self, data: Any, ctx: Any, writer: WriterId) -> Any:
        """The value of a message whose schema id is known (from a header, or a GUID prefix):
        its data starts at ``writer.start``."""
        text = self._reader_text_for(ctx, writer)
        key: Any = text if text is not None else writer.key
        reader = self._readers.get(key)
        if reader is None:
            with self._lock:
                reader = self._readers.get(key)
                if reader is None:
                    reader = self._new_reader(key, text)
                    self._readers[key] = reader
        body = data if writer.start == 0 else memoryview(data)[writer.start :]
        if reader.raw:
            value: Any = bytes(body)
        elif reader.per_value:
            value = reader.decoder.decode_value(body, writer.key)
            if reader.convert is not None:
                value = reader.convert(value)
        else:
            batch = reader.decoder.decode_payloads([bytes(body)], writer.key)
            assert isinstance(batch, pa.RecordBatch)  # the per-message decoders raise on bad data
            value = reader.read(batch)[0]
        return self._from_dict(value, ctx) if self._from_dict is not None else value

    def _reader_text_for(self, ctx: Any, first: Any = None) -> str | None:
        """The reader schema: the given one, or with ``use.latest.version`` the latest version of
        the subject of ``ctx`` (with a record strategy, of the writer schema's name of ``first``,
        a framed message or a :class:`WriterId`); without a subject, the given one (None: the writer's)."""
        if not self._use_latest:
            return self._reader_text
        subject = latest_subject(self._strategy, ctx, lambda: self._writer_name(first))
        if subject is None:
            return self._reader_text
        text = self._latest.get(subject)
        if text is None:
            text = subject_registry(self._client).latest(subject)[1]
            self._latest[subject] = text
        return text

    def _writer_name(self, data: Any) -> str | None:
        """The full name of the writer schema of framed message ``data`` or of a :class:`WriterId`
        (None: unnamed or no frame)."""
        schema_id = frame_key(data)
        if schema_id is None:
            return None
        if schema_id not in self._writer_names:
            self._writer_names[schema_id] = _record_name(parse(_text(fetch_schema(self._client, schema_id).schema)))
        return self._writer_names[schema_id]

    def _reader_for(self, data: bytes, ctx: Any) -> _Reader:
        text = self._reader_text_for(ctx, data)
        if text is not None:
            key: Any = text
        elif len(data) >= 5 and data[0] == 0:
            key = int.from_bytes(data[1:5], "big")
        else:
            key = None  # not a Confluent frame: a decoder without a reader raises the wire error
        found = self._readers.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._readers.get(key)
            if found is None:
                found = self._new_reader(key, text)
                self._readers[key] = found
        return found

    def _new_reader(self, key: Any, text: str | None) -> _Reader:
        if text is None and key is not None:
            text = _text(fetch_schema(self._client, key).schema)
        decoder = MessageDecoder(self._client, reader_schema=text)
        if text is None:
            return _Reader(decoder, lambda batch: batch.to_pylist())
        node = parse(text)
        per_value, convert = value_reader(node)
        return _Reader(decoder, rows_reader(node), per_value, convert, _is_raw_bytes(text))

    # -- many messages ---------------------------------------------------------------------------

    def decode_batch(self, values: Any, ctx: Any = None, *, on_error: str = "raise") -> pa.RecordBatch | Decoded:
        """Decode many framed messages into one Arrow batch, in input order (one pipeline pass).

        Parameters
        ----------
        values : list of bytes / None, list of confluent-kafka ``Message``, or a binary Arrow array
            What ``consumer.consume(num_messages=N)`` gave (messages' ``value()`` is taken, and a
            message's ``__value_schema_id`` header names its schema, the value then being all
            data, as for one message), or their values (ids in ``00`` / ``01`` prefixes); any
            Arrow PyCapsule producer of binary works too. None gives a null row. A malformed
            header or prefix is its message's error (``WireFormatError``).
        ctx : SerializationContext, optional
            With ``use.latest.version``, the subject (without one: read as without the setting).
        on_error : {"raise", "null"}
            ``"null"``: a bad message becomes a null row and ``Decoded(batch, errors)`` is returned
            (see :class:`~pulsar_codec.pipeline.MessageDecoder`).

        Returns
        -------
        pa.RecordBatch or Decoded
            Columns as the Arrow mapping of the reader schema (the given one, the subject's latest,
            or the newest writer schema in the batch); enums are dictionary columns.
        """
        values, headers = message_values(values, self._dual)
        keep_going = on_error != "raise"
        split = None if headers is None else split_ids(values, headers, False, keep_going)
        first: Any = first_present(values) if split is None else next((w for w in split.ids if w is not None), None)
        text = self._reader_text_for(ctx, first)
        if split is not None and _is_raw_bytes(text if text is not None else self._writer_text(first)):
            payloads = pa.array(split.bodies, pa.binary())
            batch = pa.RecordBatch.from_arrays([payloads], names=["value"])
            return Decoded(batch, errors_table(split.errors)) if keep_going else batch
        if split is None and _is_raw_bytes(text if text is not None else self._first_writer(values)):
            payloads = wire.unframe(values, wire.CONFLUENT).payloads
            return pa.RecordBatch.from_arrays([payloads], names=["value"])
        key = (text, on_error)
        decoder = self._batch_decoders.get(key)
        if decoder is None:
            decoder = MessageDecoder(self._client, reader_schema=text, on_error=on_error)
            with self._lock:
                decoder = self._batch_decoders.setdefault(key, decoder)
        return decode_with_ids(decoder, values, split, False, keep_going)

    def _writer_text(self, first: WriterId | None) -> str | None:
        """``'"bytes"'`` when the writer schema of ``first`` is a plain bytes schema, else None."""
        if first is None:
            return None
        found = self._readers.get(first.key)
        if found is None:
            found = self._new_reader(first.key, None)
            self._readers[first.key] = found
        return '"bytes"' if found.raw else None

    def _first_writer(self, values: Any) -> str | None:
        """The writer schema of the first message of a list (what a batch without a reader is read as
        when it is a plain bytes schema); None for other inputs or no Confluent frame."""
        if not isinstance(values, (list, tuple)):
            return None
        first = next((v for v in values if v is not None), None)
        if first is None or len(first) < 5 or first[0] != 0:
            return None
        key = int.from_bytes(first[1:5], "big")
        found = self._readers.get(key)
        if found is None:
            found = self._reader_for(first, None)
        return None if not found.raw else '"bytes"'

    def close(self) -> None:
        """Close the registry client when this object built it (from a URL, path or RegistryConfig)."""
        if self._owns_client:
            self._client.close()  # type: ignore[union-attr]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AvroDeserializer({self._client!r})"
