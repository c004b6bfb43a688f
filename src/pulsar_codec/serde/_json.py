"""JSONSerializer and JSONDeserializer: confluent-kafka's call shapes for JSON Schema subjects, over the pipeline.

The payload bytes equal those of confluent-kafka's ``JSONSerializer`` for the same dict (keys in
schema order; see :mod:`pulsar_codec.formats.json.encoder` for each type's text), and each side
reads the other's messages. Values are JSON's own shapes both ways, as confluent-kafka's are:
strings for ``date-time`` / ``date`` / ``time`` and base64 properties, dicts for maps, any JSON
value for properties Arrow cannot type. :meth:`JSONDeserializer.decode_batch` reads many messages
into one typed Arrow batch (timestamps, binary, dictionaries) in a single pass.
"""

from __future__ import annotations

import binascii
import datetime
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Self

import pyarrow as pa

from .._kernels.defs import (
    J_ARRAY,
    J_BYTES_B64,
    J_DATE,
    J_FIXED_B64,
    J_INT,
    J_LONG,
    J_MAP,
    J_NULLABLE,
    J_OBJECT,
    J_TEXT,
    J_TIME,
    J_TIME_MICROS,
    J_TIME_MILLIS,
    J_TIMESTAMP,
)
from ..errors import EncodeError, WireFormatError
from ..formats.avro import schema as av
from ..formats.json.encoder import dumps_text
from ..formats.json.format import loads_exact
from ..formats.json.mapping import map_model
from ..formats.json.schema import JsonSchemaModel, parse
from ..pipeline import Decoded, MessageDecoder, MessageEncoder
from ..registry.lookup import fetch_schema
from ._avro import (
    _DESERIALIZER_DEFAULTS,
    _SERIALIZER_DEFAULTS,
    _settings,
)
from ._ids import (
    WriterId,
    add_schema_id_header,
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
)

__all__ = ["JSONDeserializer", "JSONSerializer"]

_JSON = "JSON"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _text(schema: Any) -> str:
    """The text of a schema given as text, a dict or confluent-kafka's ``Schema`` (parsed to fail early)."""
    inner = getattr(schema, "schema_str", None)
    if isinstance(inner, str):
        schema = inner
    if isinstance(schema, JsonSchemaModel):
        return schema.text
    parse(schema)
    return schema if isinstance(schema, str) else json.dumps(schema)


class _Registry:
    """Register / look up / fetch JSON schemas with this package's clients or confluent-kafka's."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.confluent = callable(getattr(client, "register_schema", None))

    def register(self, subject: str, text: str, normalize: bool) -> int:
        if self.confluent:
            from confluent_kafka.schema_registry import Schema

            return int(self.client.register_schema(subject, Schema(text, _JSON), normalize_schemas=normalize))
        return int(self.client.register(subject, text, _JSON))

    def lookup(self, subject: str, text: str, normalize: bool) -> int:
        if self.confluent:
            from confluent_kafka.schema_registry import Schema

            found = self.client.lookup_schema(subject, Schema(text, _JSON), normalize_schemas=normalize)
            return int(found.schema_id)
        return int(self.client.lookup(subject, text, _JSON).id)

    def latest(self, subject: str) -> tuple[int, str]:
        if self.confluent:
            found = self.client.get_latest_version(subject)
            return int(found.schema_id), str(found.schema.schema_str)
        got = self.client.get_latest(subject)
        return int(got.id), str(got.schema)


# -- JSON's own value shapes <-> the encoder's / decoder's -------------------------------------------


def _has_text(program: tuple[Any, ...]) -> bool:
    op = program[0]
    if op == J_TEXT:
        return True
    if op in (J_NULLABLE, J_ARRAY, J_MAP):
        return _has_text(program[1])
    if op == J_OBJECT:
        return any(_has_text(child) for _, child, _ in program[1])
    return False


def _texts_from_values(program: tuple[Any, ...], v: Any) -> Any:
    """``v`` (JSON's shapes) with the values of JSON-text positions turned into their JSON text,
    the form :class:`~pulsar_codec.formats.json.encoder.JsonEncoder` reads there."""
    if v is None:
        return None
    op = program[0]
    if op == J_TEXT:
        return dumps_text(v)
    if op == J_NULLABLE:
        return _texts_from_values(program[1], v)
    if op == J_ARRAY and isinstance(v, list):
        return [_texts_from_values(program[1], x) for x in v]
    if op == J_MAP and isinstance(v, Mapping):
        return {k: _texts_from_values(program[1], x) for k, x in v.items()}
    if op == J_OBJECT and isinstance(v, Mapping):
        children = {name: child for name, child, _ in program[1]}
        return {k: _texts_from_values(children[k], x) if k in children else x for k, x in v.items()}
    return v


def _avro_number(shadow: av.Schema, v: Any) -> Any:
    """A Pulsar JSON logical value back to the Avro number Jackson writes."""
    logical = getattr(shadow, "logical", None)
    if isinstance(v, datetime.datetime) and logical and "timestamp" in logical:
        aware = v if v.tzinfo is not None else v.replace(tzinfo=datetime.UTC)
        delta = aware - _EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        per_s = {"millis": 1000, "micros": 1_000_000, "nanos": 1_000_000_000}[logical.rsplit("-", 1)[1]]
        return micros // (1_000_000 // per_s) if per_s <= 1_000_000 else micros * 1000
    if isinstance(v, datetime.date) and not isinstance(v, datetime.datetime):
        return (v - datetime.date(1970, 1, 1)).days
    if isinstance(v, datetime.time):
        micros = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
        return micros // 1000 if logical == "time-millis" else micros
    if hasattr(v, "value") and logical and "nanos" in logical:  # a pandas Timestamp
        return int(v.value)
    return v


def _to_json_values(program: tuple[Any, ...], shadow: av.Schema, v: Any) -> Any:  # noqa: C901 - one case per op
    """A decoded value (the Arrow row's Python value) in JSON's own shapes, as ``json.loads`` gives it."""
    if v is None:
        return None
    op = program[0]
    if op == J_NULLABLE:
        return _to_json_values(program[1], shadow.branches[1] if isinstance(shadow, av.Union) else shadow, v)
    if op == J_OBJECT:
        fields = shadow.fields if isinstance(shadow, av.Record) else []
        out = dict(v)
        for i, (name, child, _) in enumerate(program[1]):
            if name in out:
                out[name] = _to_json_values(child, fields[i].type if i < len(fields) else shadow, out[name])
        return out
    if op == J_ARRAY:
        items = shadow.items if isinstance(shadow, av.Array) else shadow
        return [_to_json_values(program[1], items, x) for x in v]
    if op == J_MAP:
        values = shadow.values if isinstance(shadow, av.Map) else shadow
        pairs = v.items() if isinstance(v, Mapping) else v
        return {k: _to_json_values(program[1], values, x) for k, x in pairs}
    if op == J_TEXT:
        return loads_exact(v) if isinstance(v, str) else v
    if op == J_TIMESTAMP and isinstance(v, datetime.datetime):
        return (v if v.tzinfo is not None else v.replace(tzinfo=datetime.UTC)).astimezone(datetime.UTC).isoformat()
    if op in (J_DATE, J_TIME) and isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if op in (J_BYTES_B64, J_FIXED_B64) and isinstance(v, (bytes, bytearray)):
        return binascii.b2a_base64(bytes(v), newline=False).decode("ascii")
    if op in (J_INT, J_LONG, J_TIME_MILLIS, J_TIME_MICROS):
        return _avro_number(shadow, v)
    return v


@dataclass(frozen=True)
class _Writer:
    schema_id: int
    encoder: MessageEncoder
    program: tuple[Any, ...]
    texts: bool  # the schema has JSON-text positions (see _texts_from_values)
    validate: Callable[[Any], None] | None
    header: bytes | None = None  # header mode: 01 + GUID, the schema-id header's value


def _validator(model: JsonSchemaModel) -> Callable[[Any], None] | None:
    """Full JSON Schema validation of a value (what confluent-kafka's ``validate`` does); None for Avro."""
    if model.kind != "jsonschema":
        return None
    import jsonschema.exceptions  # type: ignore[import-untyped]
    import jsonschema.validators  # type: ignore[import-untyped]
    import referencing

    document = model.document
    cls = jsonschema.validators.validator_for(document, default=jsonschema.Draft7Validator)
    spec = referencing.jsonschema.DRAFT7
    resources = [
        (name, referencing.Resource.from_contents(doc, default_specification=spec)) for name, doc in model.references
    ]
    validator = cls(document, registry=referencing.Registry().with_resources(resources))

    def check(value: Any) -> None:
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is not None:
            raise EncodeError(f"the value does not match the JSON schema: {error.message}")

    return check


class JSONSerializer:
    """Serialize dicts as Confluent-framed JSON (``00`` + 4-byte schema id + JSON text), like
    confluent-kafka's ``JSONSerializer``: a drop-in ``value.serializer`` of its ``SerializingProducer``.

    Parameters
    ----------
    registry : registry client, RegistryConfig or str
        As for :class:`~pulsar_codec.serde.AvroSerializer` (confluent-kafka's client works too).
    schema : str, dict or Schema, optional
        The JSON Schema (or Pulsar JSON Avro definition). Required unless ``use.latest.version``
        or ``use.schema.id`` is set.
    conf : dict, optional
        confluent-kafka's keys: ``auto.register.schemas`` (True), ``normalize.schemas`` (False),
        ``use.latest.version`` (False), ``use.schema.id``, ``subject.name.strategy`` /
        ``subject.name.strategy.type`` (the record name is the schema's ``title``), ``validate``
        (True: full JSON Schema validation with ``jsonschema``, as confluent-kafka does; False
        still refuses values the schema's Arrow types cannot hold), ``schema.id.serializer``
        (confluent-kafka's ``prefix_schema_id_serializer``, the default, or
        ``header_schema_id_serializer``: ``01`` + GUID in the context's ``__value_schema_id`` /
        ``__key_schema_id`` header, the payload unprefixed). Other keys raise ValueError.
        With ``use.schema.id`` the value is validated and written with that id's schema, as
        confluent-kafka does; unlike confluent-kafka the id need not be registered under the
        context's subject.
    to_dict : callable, optional
        ``to_dict(obj, ctx) -> dict``, applied before writing.
    """

    def __init__(
        self,
        registry: Any,
        schema: Any = None,
        conf: Mapping[str, Any] | None = None,
        to_dict: Callable[[Any, Any], Any] | None = None,
    ) -> None:
        if to_dict is not None and not callable(to_dict):
            raise ValueError(
                "to_dict must be callable with the signature to_dict(object, SerializationContext) -> dict"
            )
        given = dict(conf or {})
        validate = given.pop("validate", True)
        if not isinstance(validate, bool):
            raise ValueError("validate must be a boolean value")
        settings = _settings(given, _SERIALIZER_DEFAULTS)
        self._auto_register: bool = settings["auto.register.schemas"]
        self._normalize: bool = settings["normalize.schemas"]
        self._use_latest: bool = settings["use.latest.version"]
        self._use_id: int | None = settings["use.schema.id"]
        self._in_header: bool = settings["schema.id.placement"] == "header"
        self._validate = validate
        if self._use_latest and self._auto_register:
            raise ValueError("cannot enable both use.latest.version and auto.register.schemas")
        self._strategy: SubjectNameStrategy = resolve_strategy(
            settings["subject.name.strategy"], settings["subject.name.strategy.type"]
        )
        if schema is None and not self._use_latest and self._use_id is None:
            raise ValueError("a schema is needed unless use.latest.version or use.schema.id is set")
        self._schema_text = None if schema is None else _text(schema)
        title = None
        if self._schema_text is not None:
            document = parse(self._schema_text).document
            found = document.get("title") if isinstance(document, dict) else None
            title = found if isinstance(found, str) else None
        self._record_name = title
        self._client = client_of(registry)
        self._owns_client = self._client is not registry
        self._registry = _Registry(self._client)
        self._to_dict = to_dict
        self._lock = threading.Lock()
        self._subjects: dict[str | None, _Writer] = {}

    def __call__(self, obj: Any, ctx: Any = None) -> bytes | None:
        """The framed message for ``obj`` (None for None); with ``header_schema_id_serializer``,
        the unprefixed payload, its schema id added to ``ctx.headers``.

        Raises
        ------
        EncodeError
            The value does not fit the schema.
        ValueError
            Header mode with no context or no headers list / dict in it.
        """
        if obj is None:
            return None
        writer = self._writer_for(ctx)
        value = self._to_dict(obj, ctx) if self._to_dict is not None else obj
        if writer.validate is not None:
            writer.validate(value)
        if writer.texts:
            value = _texts_from_values(writer.program, value)
        if writer.header is None:
            return writer.encoder.encode_value(value)
        payload = writer.encoder.encode_value(value, framed=False)
        add_schema_id_header(ctx, writer.header)  # after the value is written, as confluent-kafka does
        return payload

    def _writer_for(self, ctx: Any) -> _Writer:
        subject = None if self._use_id is not None else self._strategy(ctx, self._record_name)
        if subject is None and self._use_id is None:
            raise ValueError("the subject name strategy gave no subject (a record strategy needs a schema title)")
        found = self._subjects.get(subject)
        if found is None:
            with self._lock:
                found = self._subjects.get(subject)
                if found is None:
                    found = self._resolve(subject)
                    self._subjects[subject] = found
        return found

    def _resolve(self, subject: str | None) -> _Writer:
        text = self._schema_text
        if self._use_id is not None:
            # written (and validated) with the id's own schema, as confluent-kafka does
            schema_id = self._use_id
            text = str(fetch_schema(self._client, schema_id).schema)
        elif self._use_latest:
            assert subject is not None
            schema_id, text = self._registry.latest(subject)
        else:
            assert subject is not None and text is not None
            if self._auto_register:
                schema_id = self._registry.register(subject, text, self._normalize)
            else:
                schema_id = self._registry.lookup(subject, text, self._normalize)
        encoder = MessageEncoder(self._client, subject, schema=text, schema_id=schema_id, format=_JSON)
        model = parse(text)
        program = map_model(model).program
        check = _validator(model) if self._validate else None
        header = b"\x01" + schema_guid(self._client, schema_id).bytes if self._in_header else None
        return _Writer(schema_id, encoder, program, _has_text(program), check, header)

    def close(self) -> None:
        """Close the registry client when this object built it (from a URL, path or RegistryConfig)."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"JSONSerializer({self._client!r})"


@dataclass(frozen=True)
class _Reader:
    decoder: MessageDecoder
    program: tuple[Any, ...]
    shadow: av.Schema


class JSONDeserializer:
    """Deserialize Confluent-framed JSON into dicts, like confluent-kafka's ``JSONDeserializer``
    (a drop-in ``value.deserializer``), plus :meth:`decode_batch` for ``consume(num_messages=N)``.

    Parameters
    ----------
    registry : registry client, RegistryConfig, str or Mapping
        As for :class:`~pulsar_codec.serde.AvroDeserializer`.
    schema : str, dict or Schema, optional
        The schema every message is read as; default each message's writer schema
        (:meth:`decode_batch`: the newest writer schema of the batch).
    from_dict : callable, optional
        ``from_dict(dict, ctx) -> object``, applied to each value :meth:`__call__` returns.
    conf : dict, optional
        ``use.latest.version`` (with a record strategy the subject is named by the writer
        schema's ``title``; a call without a context reads the message's own schema, as
        confluent-kafka does), ``subject.name.strategy`` / ``subject.name.strategy.type``,
        ``schema.id.deserializer`` (confluent-kafka's ``dual_schema_id_deserializer``, the default: the
        ``__value_schema_id`` / ``__key_schema_id`` header of the context, else the payload prefix;
        or ``prefix_schema_id_deserializer``: the prefix only);
        ``validate`` is accepted (the payload is always checked against the schema's types, but
        not against JSON Schema's other keywords such as ``minimum``, which confluent-kafka's
        ``validate`` checks on read too).

    Notes
    -----
    Each message is read through the schema-directed JSON decoder, then given back in JSON's
    shapes. Differences from ``json.loads``: properties the schema does not name are left out,
    an absent optional property is present as None, a ``number`` property is a float, and
    ``date-time`` values are re-written as ``datetime.isoformat()`` of the UTC instant.
    """

    def __init__(
        self,
        registry: Any,
        schema: Any = None,
        from_dict: Callable[[Any, Any], Any] | None = None,
        conf: Mapping[str, Any] | None = None,
    ) -> None:
        if from_dict is not None and not callable(from_dict):
            raise ValueError(
                "from_dict must be callable with the signature from_dict(dict, SerializationContext) -> object"
            )
        given = dict(conf or {})
        if not isinstance(given.pop("validate", True), bool):
            raise ValueError("validate must be a boolean value")
        settings = _settings(given, _DESERIALIZER_DEFAULTS)
        self._use_latest: bool = settings["use.latest.version"]
        self._dual: bool = settings["schema.id.placement"] == "dual"  # ids in headers read too
        self._strategy: SubjectNameStrategy = resolve_strategy(
            settings["subject.name.strategy"], settings["subject.name.strategy.type"]
        )
        self._reader_text = None if schema is None else _text(schema)
        self._client = registry if isinstance(registry, Mapping) else client_of(registry)
        self._owns_client = self._client is not registry
        self._from_dict = from_dict
        self._lock = threading.Lock()
        self._readers: dict[Any, _Reader] = {}
        self._latest: dict[str, str] = {}
        self._writer_titles: dict[Any, str | None] = {}  # by writer id, for a record strategy's subject
        self._batch_decoders: dict[tuple[str | None, str], MessageDecoder] = {}

    def __call__(self, data: bytes | None, ctx: Any = None) -> Any:
        """The value of one framed message (None for None).

        Raises
        ------
        WireFormatError, JsonDecodeError
            A bad prefix or payload (both are ``ValueError``).
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
            decoded = reader.decoder.decode_value(data)
        except WireFormatError as exc:
            if not guid_prefixed(exc, data):
                raise
            return self._with_id(data, ctx, read_schema_id(data, False))
        value = _to_json_values(reader.program, reader.shadow, decoded)
        return self._from_dict(value, ctx) if self._from_dict is not None else value

    def _with_id(self, data: Any, ctx: Any, writer: WriterId) -> Any:
        """The value of a message whose schema id is known (from a header, or a GUID prefix)."""
        text = self._reader_text_for(ctx, writer)
        key: Any = text if text is not None else writer.key
        reader = self._readers.get(key)
        if reader is None:
            with self._lock:
                reader = self._readers.get(key)
                if reader is None:
                    reader = self._new_reader(key, text, data)
                    self._readers[key] = reader
        body = data if writer.start == 0 else memoryview(data)[writer.start :]
        value = _to_json_values(reader.program, reader.shadow, reader.decoder.decode_value(body, writer.key))
        return self._from_dict(value, ctx) if self._from_dict is not None else value

    def _reader_text_for(self, ctx: Any, first: Any = None) -> str | None:
        """The reader schema: the given one, or with ``use.latest.version`` the latest version of
        the subject of ``ctx`` (with a record strategy, of the ``title`` of the writer schema of
        ``first``, a framed message); without a subject, the given one (None: the writer's)."""
        if not self._use_latest:
            return self._reader_text
        subject = latest_subject(self._strategy, ctx, lambda: self._writer_title(first))
        if subject is None:
            return self._reader_text
        text = self._latest.get(subject)
        if text is None:
            text = _Registry(self._client).latest(subject)[1]
            self._latest[subject] = text
        return text

    def _writer_title(self, data: Any) -> str | None:
        """The ``title`` of the writer schema of framed message ``data`` or of a :class:`WriterId`
        (None: none, or no frame)."""
        schema_id = frame_key(data)
        if schema_id is None:
            return None
        if schema_id not in self._writer_titles:
            document = parse(str(fetch_schema(self._client, schema_id).schema)).document
            title = document.get("title") if isinstance(document, dict) else None
            self._writer_titles[schema_id] = title if isinstance(title, str) else None
        return self._writer_titles[schema_id]

    def _reader_for(self, data: bytes, ctx: Any) -> _Reader:
        text = self._reader_text_for(ctx, data)
        framed = len(data) >= 5 and data[0] == 0  # else no schema id to look up: the wire error
        key: Any = text if text is not None else (int.from_bytes(data[1:5], "big") if framed else None)
        found = self._readers.get(key)
        if found is None:
            with self._lock:
                found = self._readers.get(key)
                if found is None:
                    found = self._new_reader(key, text, data)
                    self._readers[key] = found
        return found

    def _new_reader(self, key: Any, text: str | None, data: bytes) -> _Reader:
        decoder = MessageDecoder(self._client, reader_schema=text, format=_JSON)
        if text is None and key is not None:  # a writer id (an int or a GUID)
            text = str(fetch_schema(self._client, key).schema)
        if text is None:  # not a frame: the decoder raises the wire error of this message
            decoder.decode_value(data)
        assert text is not None
        mapping = map_model(parse(text))
        return _Reader(decoder, mapping.program, mapping.shadow)

    def decode_batch(self, values: Any, ctx: Any = None, *, on_error: str = "raise") -> pa.RecordBatch | Decoded:
        """Decode many framed messages into one Arrow batch, in input order (one pipeline pass).

        Parameters
        ----------
        values : list of bytes / None, list of confluent-kafka ``Message``, or a binary Arrow array
            None gives a null row.
        ctx : SerializationContext, optional
            With ``use.latest.version``, the subject (without one: read as without the setting).
        on_error : {"raise", "null"}
            ``"null"``: a bad message becomes a null row and ``Decoded(batch, errors)`` is returned.

        Returns
        -------
        pa.RecordBatch or Decoded
            Columns as the JSON -> Arrow mapping of the reader schema.
        """
        values, headers = message_values(values, self._dual)
        keep_going = on_error != "raise"
        split = None if headers is None else split_ids(values, headers, False, keep_going)
        first: Any = first_present(values) if split is None else next((w for w in split.ids if w is not None), None)
        text = self._reader_text_for(ctx, first)
        key = (text, on_error)
        decoder = self._batch_decoders.get(key)
        if decoder is None:
            decoder = MessageDecoder(self._client, reader_schema=text, on_error=on_error, format=_JSON)
            with self._lock:
                decoder = self._batch_decoders.setdefault(key, decoder)
        return decode_with_ids(decoder, values, split, False, keep_going)

    def close(self) -> None:
        """Close the registry client when this object built it (from a URL, path or RegistryConfig)."""
        if self._owns_client:
            self._client.close()  # type: ignore[union-attr]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"JSONDeserializer({self._client!r})"
