"""Avro values through a schema registry: :class:`AvroExternalSchema`.

Decoding one message and decoding many run the same compiled plan: both go through a
:class:`~pulsar_codec.pipeline.MessageDecoder` (one per reader schema and error mode, holding the
schema-by-id and plan caches); one message goes through its ``decode_value`` (the decode kernel on
that one payload), many through ``decode`` / ``decode_payloads``. Encoding one value runs the Avro
format's row writer.
"""

from __future__ import annotations

import threading
from typing import Any

import pyarrow as pa

from ... import wire
from ...errors import DecodeError, EncodeError, ErrorCode, SchemaError, SchemaNotFoundError, at_message, error_for
from ...formats import get_format
from ...formats.avro.encoder import Encoder
from ...formats.avro.raw import raw_heads, written_raw
from ...formats.avro.schema import Named, Primitive, Schema, parse
from ...formats.base import Decoded, check_on_error, errors_table
from ...pipeline import MessageDecoder, MessageEncoder
from ..schema_info import EncodeData
from .base import RegistrySchema, as_list
from .subjects import warn_fast_is_ignored

__all__ = ["AvroExternalSchema"]

_AVRO = get_format("AVRO")
_RAW_FRAMINGS = (wire.CONFLUENT, wire.HORTONWORKS)  # whose serializers write top-level primitives raw


def _raw_primitive(node: Schema, protocol: wire.Protocol, protocol_byte: int) -> str | None:
    """``"bytes"`` / ``"string"`` when the registry's serializer writes this top-level schema raw
    under ``protocol_byte`` (Confluent's ``bytes``; Hortonworks' ``bytes``, and its ``string``
    under protocols 1-3: :func:`~pulsar_codec.formats.avro.raw.raw_heads`). ``-1``: a message
    this package writes, or a body without its prefix (:func:`~pulsar_codec.formats.avro.raw.written_raw`)."""
    raw = written_raw(node, protocol) if protocol_byte < 0 else protocol_byte in raw_heads(node, protocol)
    if raw:
        assert isinstance(node, Primitive)
        return node.type
    return None


class AvroExternalSchema(RegistrySchema):
    """Avro values through a schema registry (Confluent, Hortonworks or Apicurio framing).

    Parameters
    ----------
    target : SchemaInfoProvider, SchemaInfoProviderFactory or registry
        Where the registry configuration comes from (a bare registry uses the defaults below).
    schema : str, dict or parsed Avro schema, optional
        The schema values are written with (registered or looked up under the subject). Optional
        with ``schema_id`` or ``use_latest``.
    topic : str, optional
        Needed with a factory or a bare registry.
    reader_schema : Avro schema, optional
        The schema values are read as. Default: ``schema``; without either, each message's writer.
    is_key : bool, default False
        The key side: subject ``<topic>-key`` under TopicNameStrategy.
    schema_id : int, optional
        Write with this registry id (its schema comes from the registry); no registration.
    subject : str, optional
        Use this subject instead of the strategy's.
    auto_register, use_latest, protocol, framed : optional
        Override the provider's settings (see :class:`SchemaInfoProviderFactory`).
    fast : bool, optional
        Deprecated and ignored: every message is decoded by the compiled plan.
    name : str, default ""
        The Pulsar SchemaInfo name.

    Notes
    -----
    Values are what :class:`pulsar_codec.avro.Decoder` rows hold as Python objects: dicts for
    records, ``str`` for enums, ``[(key, value), ...]`` for maps (dicts are accepted when
    encoding), ``datetime`` / ``date`` / ``time`` / ``Decimal`` for logical types. A non-record
    schema's value is the value itself (the bulk batch holds it in a column named ``value``).
    """

    schema_type = "AVRO"

    def __init__(
        self,
        target: Any,
        schema: Any = None,
        *,
        topic: str | None = None,
        reader_schema: Any = None,
        is_key: bool = False,
        schema_id: int | None = None,
        subject: str | None = None,
        auto_register: bool | None = None,
        use_latest: bool | None = None,
        protocol: wire.Protocol | str | None = None,
        framed: bool | None = None,
        fast: bool | None = None,
        name: str = "",
    ) -> None:
        warn_fast_is_ignored(fast)
        super().__init__(
            target,
            schema,
            topic=topic,
            is_key=is_key,
            schema_id=schema_id,
            subject=subject,
            auto_register=auto_register,
            use_latest=use_latest,
            protocol=protocol,
            framed=framed,
            name=name,
        )
        self.schema: Schema | None = None if schema is None else parse(schema)
        self._schema_text: str | None = None
        if isinstance(schema, str) and not isinstance(self.schema, Primitive):
            self._schema_text = schema  # register the user's text verbatim
        self.reader_schema: Schema | None = None if reader_schema is None else parse(reader_schema)
        # what messages are read as; None: each message's writer (for a batch, its newest writer)
        self._reader: Schema | None = self.reader_schema or self.schema
        self._encoders: dict[int, MessageEncoder] = {}
        # one MessageDecoder per (reader, on_error); it owns the schema-by-id and plan caches
        self._decoders: dict[tuple[str, str], MessageDecoder] = {}
        self._decoders_lock = threading.Lock()
        self._main_decoder: MessageDecoder | None = None  # the one per-message decode uses

    # -- RegistrySchema hooks
    def _parse(self, schema: Any) -> Schema:
        return parse(schema)

    def _text(self, parsed: Schema) -> str:
        if parsed is self.schema and self._schema_text is not None:
            return self._schema_text
        return _AVRO.schema_text(parsed)

    def _record_name(self, parsed: Schema) -> str | None:
        return parsed.fullname if isinstance(parsed, Named) else None

    @property
    def _own_schema(self) -> Schema | None:
        return self.schema

    def __repr__(self) -> str:
        what = self.schema.fullname if isinstance(self.schema, Named) else self.schema
        return f"AvroExternalSchema(topic={self.topic!r}, schema={what!r}, protocol={self.protocol.name})"

    # -- decoders and schemas by id
    def _decoder(self, reader: Schema | None, on_error: str = "raise") -> MessageDecoder:
        """The decoder reading as ``reader`` (made once); per-message decoding keeps its own at hand."""
        main = self._main_decoder
        if main is not None and reader is self._reader and on_error == "raise":
            return main
        key = ("" if reader is None else _AVRO.schema_key(reader), on_error)
        found = self._decoders.get(key)
        if found is None:
            with self._decoders_lock:
                found = self._decoders.get(key)
                if found is None:
                    found = self._decoders[key] = MessageDecoder(
                        self.registry, protocol=self.protocol, reader_schema=reader, on_error=on_error, format="AVRO"
                    )
                    if reader is self._reader and on_error == "raise":
                        self._main_decoder = found
        return found

    def schema_for_id(self, schema_id: int) -> Schema:
        """The parsed Avro schema with this registry id (looked up once, by the schema's decoder).

        Raises
        ------
        SchemaNotFoundError
            The registry does not know the id.
        SchemaError
            The id holds a schema of another type (JSON, Protobuf).
        """
        model: Schema = self._decoder(self._reader).writer_schema(int(schema_id))
        return model

    def _forget_schemas(self) -> None:
        with self._decoders_lock:
            self._decoders.clear()
            self._main_decoder = None

    # -- encode
    def encode(self, topic: str | None, value: Any) -> EncodeData:
        """Serialise one value: Avro binary body, framed with the writer schema's registry id.

        The body is written by ``MessageEncoder.encode_value`` (the Avro row writer); a record may
        leave out fields that have a default.

        Raises
        ------
        EncodeError
            The value does not fit the writer schema (the message names the field).
        IncompatibleSchemaError, SchemaNotFoundError
            From the first registration or lookup (see :meth:`writer`).
        """
        schema_id, writer = self.writer(topic)
        raw = _raw_primitive(writer, self.protocol, -1)
        if raw == "bytes":
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise EncodeError(f"expected bytes for an Avro bytes schema, got {type(value).__name__}")
            body = bytes(value)
        elif raw == "string":
            if not isinstance(value, str):
                raise EncodeError(f"expected a str for an Avro string schema, got {type(value).__name__}")
            body = value.encode("utf-8")
        else:
            encoder = self._encoders.get(schema_id)
            if encoder is None:
                encoder = self._encoders[schema_id] = MessageEncoder(
                    self.registry, protocol=self.protocol, schema=writer, schema_id=schema_id, format="AVRO"
                )
            # the encoder frames with the prefix _frame would write (both are protocol.pack's)
            return EncodeData(encoder.encode_value(value, framed=self.framed), self._id_bytes(schema_id)[0])
        return self._frame(schema_id, body)

    # -- decode
    def decode(self, topic: str | None, data: bytes, schema_id: bytes | None = None) -> Any:
        """Deserialise one message into the reader schema's value (a dict for a record).

        The same compiled plan as :meth:`decode_batch` decodes the message alone
        (``MessageDecoder.decode_value``); the value is the row that batch would hold, as
        ``to_pylist()`` gives it (a non-record reader's value itself).

        Raises
        ------
        WireFormatError
            A framed message whose prefix is malformed.
        SchemaNotFoundError
            The registry does not know the id, or the message has none.
        AvroDecodeError
            A malformed body (``offset`` is the byte inside the body, after the prefix).
        SchemaError
            The reader schema cannot read the writer schema.
        """
        self._check_open()
        sid, body, protocol_byte = self._split(data, schema_id)
        reader = self._read_as(topic)
        decoder = self._decoder(reader)
        writer = decoder.writer_schema(sid)
        raw = _raw_primitive(writer, self.protocol, protocol_byte)
        if raw is not None:
            return self._raw_value(raw, bytes(body), sid, writer, reader)
        return decoder.decode_value(body, sid, protocol_byte=protocol_byte if protocol_byte >= 0 else None)

    def _read_as(self, topic: str | None) -> Schema | None:
        """The reader schema of ``topic``'s messages: the given reader or own schema; without
        either, with ``use_latest``, the subject's latest version (as confluent-kafka's
        ``use.latest.version`` reads), else None (each message its writer's values)."""
        if self._reader is None and self.use_latest:
            return self.writer(topic)[1]  # type: ignore[no-any-return]
        return self._reader

    def _raw_value(self, raw: str, body: bytes, schema_id: int, writer: Schema, reader: Schema | None) -> Any:
        value: Any = body
        if raw == "string":
            try:
                value = body.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise error_for(ErrorCode.AVRO_INVALID_UTF8, 0, exc.start) from None
        target = reader or writer
        if isinstance(target, Primitive) and target.type == raw:
            return value
        # another reader type: let the plan resolve the value written the Avro way (with its length)
        return self._decoder(reader).decode_value(Encoder(writer).encode_value(value), schema_id)

    def decode_batch(
        self, messages: Any, schema_ids: Any = None, *, topic: str | None = None, on_error: str = "raise"
    ) -> pa.RecordBatch | Decoded:
        """Decode many messages into one ``pa.RecordBatch`` with a :class:`~pulsar_codec.MessageDecoder`.

        Parameters
        ----------
        messages : pa.BinaryArray, ChunkedArray or sequence of bytes / None
            Framed messages (or raw bodies with ``framed=False``); nulls give null rows.
        schema_ids : sequence of bytes, optional
            Per-message metadata ids; required with ``framed=False``.
        on_error : {"raise", "null"}
            As for :func:`pulsar_codec.decode` (``"null"`` returns ``Decoded(batch, errors)``).

        Returns
        -------
        pa.RecordBatch or Decoded
            The reader schema's columns (a record gives one column per field; other schemas one
            column named ``value``).
        """
        self._check_open()
        reader = self._read_as(topic)
        if schema_ids is None and not self.framed:
            raise SchemaNotFoundError("framed=False: decode_batch needs the messages' schema_ids")
        if isinstance(self.schema, Primitive) and self.protocol in _RAW_FRAMINGS:
            # a top-level bytes / string may be written raw by the registries' serializers: per message
            items = as_list(messages)
            ids = [None] * len(items) if schema_ids is None else as_list(schema_ids)
            if len(ids) != len(items):
                raise ValueError(f"{len(ids)} schema ids for {len(items)} messages")
            keep_going = check_on_error(on_error)
            values: list[Any] = []
            bad: list[tuple[Any, ...]] = []  # (code, index, offset, detail, text)
            for i, (m, sid) in enumerate(zip(items, ids)):
                try:
                    values.append(None if m is None else self.decode(topic, m, sid))
                except DecodeError as exc:  # counted from the batch, not from the one message
                    if not keep_going:
                        raise exc.moved(i) from None
                    values.append(None)
                    bad.append((int(exc.code), i, exc.offset, exc.detail, str(exc.moved(i))))
                except (SchemaNotFoundError, SchemaError) as exc:
                    # as the pipeline reports them: an unknown id, or a writer the reader cannot read
                    if not keep_going:
                        raise at_message(exc, i) from None
                    values.append(None)
                    unknown = isinstance(exc, SchemaNotFoundError)
                    code = ErrorCode.SCHEMA_NOT_FOUND if unknown else ErrorCode.SCHEMA_UNRESOLVABLE
                    bad.append((int(code), i, 0, 0, f"{exc} (message {i}, byte 0)"))
            arrow_type = self._decoder(reader).arrow_schema.field(0).type  # type: ignore[union-attr]
            batch = pa.RecordBatch.from_arrays([pa.array(values, arrow_type)], ["value"])
            return Decoded(batch, errors_table(bad)) if keep_going else batch
        decoder = self._decoder(reader, on_error)
        if schema_ids is None:
            return decoder.decode(messages)
        bodies, ids = self._bodies_and_ids(messages, schema_ids)
        return decoder.decode_payloads(bodies, ids)
