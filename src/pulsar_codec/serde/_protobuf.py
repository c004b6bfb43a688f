"""ProtobufSerializer and ProtobufDeserializer: confluent-kafka's call shapes for Protobuf subjects,
without generated classes.

The frame is Confluent's: ``00``, the 4-byte schema id, the message's index path (``00`` for the
first message of the file, else zigzag varints: the path length, then each index), the payload.

What confluent-kafka's ``ProtobufSerializer`` does, and what this one matches:

- it registers the message's file as its serialized ``FileDescriptorProto`` in base64, with one
  reference per imported file (each registered under its import name by default,
  ``reference.subject.name.strategy``), skipping ``google/protobuf/``, ``google/type/`` and
  ``confluent/`` files unless ``skip.known.types`` is False;
- it writes ``message.SerializeToString()``, the runtime's *non-deterministic* form: map entries
  come in the order of the runtime's hash table, not sorted by key.

Given a runtime message class (or descriptor) as ``schema``, this serializer registers the same
schema text with the same references, so it gets the same id; a message instance is written with
that same call, so its bytes are confluent-kafka's, byte for byte. Given ``.proto`` text (or a parsed
model), the text is registered with its imports as references. A dict is written by
:class:`~pulsar_codec.formats.protobuf.ProtobufEncoder` with the runtime's *deterministic*
serialization: equal to confluent-kafka's bytes except for the order of map entries when a map
holds more than one. ``use.deprecated.format`` (the old unsigned index encoding) is refused, as
confluent-kafka refuses it.

The deserializer gives dicts in the shape of the Protobuf -> Arrow mapping (README): one key per
field, ``<oneof>_case`` keys, enum names, timestamps and durations as pandas ``Timestamp`` /
``Timedelta`` (nanoseconds kept), maps as dicts. The serializer takes that shape back, plus
``datetime`` / ``timedelta`` for timestamps and durations.
"""

from __future__ import annotations

import base64
import datetime
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Self

import pyarrow as pa
from google.protobuf import descriptor as pb_descriptor
from google.protobuf.message import Message

from .. import wire
from ..errors import EncodeError, WireFormatError
from ..formats.protobuf import _printer
from ..formats.protobuf.format import FORMAT
from ..formats.protobuf.schema import ProtobufSchemaModel, parse, resolve_references, schema_text
from ..pipeline import Decoded, MessageDecoder, MessageEncoder
from ..pipeline._resolver import Pathed
from ..registry.base import SchemaReference
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

__all__ = ["ProtobufDeserializer", "ProtobufSerializer"]

_PROTOBUF = "PROTOBUF"
# the files confluent-kafka (and Confluent's registry) treat as bundled: never references by default
_BUILTIN_PREFIXES = ("confluent/", "google/protobuf/", "google/type/")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_FD = pb_descriptor.FieldDescriptor
_TIMESTAMP = "google.protobuf.Timestamp"
_DURATION = "google.protobuf.Duration"


def _builtin(name: str) -> bool:
    return name.startswith(_BUILTIN_PREFIXES)


def _reference_subject(ctx: Any, dependency: Any) -> str:
    """``{import name}``: confluent-kafka's default ``reference.subject.name.strategy``."""
    return str(dependency.name)


def _runtime_descriptor(schema: Any) -> pb_descriptor.Descriptor | None:
    """The message descriptor of a runtime message class or descriptor; None for other schemas."""
    if isinstance(schema, type) and issubclass(schema, Message):
        desc: pb_descriptor.Descriptor = getattr(schema, "DESCRIPTOR")  # noqa: B009 - set on concrete classes only
        return desc
    if isinstance(schema, pb_descriptor.Descriptor):
        return schema
    return None


# -- registering with references ----------------------------------------------------------------------


class _Registry:
    """Register / look up Protobuf schemas with references, with this package's clients or confluent-kafka's."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.confluent = callable(getattr(client, "register_schema", None)) and not callable(
            getattr(client, "register_full", None)
        )

    def _confluent_schema(self, text: str, references: list[SchemaReference]) -> Any:
        from confluent_kafka.schema_registry import Schema
        from confluent_kafka.schema_registry import SchemaReference as CkReference

        refs = [CkReference(r.name, r.subject, r.version) for r in references]
        return Schema(text, _PROTOBUF, refs)

    def register(self, subject: str, text: str, references: list[SchemaReference], normalize: bool) -> int:
        if self.confluent:
            schema = self._confluent_schema(text, references)
            return int(self.client.register_schema(subject, schema, normalize_schemas=normalize))
        return int(self.client.register(subject, text, _PROTOBUF, references=references))

    def lookup(self, subject: str, text: str, references: list[SchemaReference], normalize: bool) -> tuple[int, int]:
        """``(id, version)`` of ``text`` with ``references`` under ``subject``."""
        if self.confluent:
            schema = self._confluent_schema(text, references)
            found = self.client.lookup_schema(subject, schema, normalize_schemas=normalize)
            return int(found.schema_id), int(found.version)
        got = self.client.lookup(subject, text, _PROTOBUF, references=references)
        return int(got.id), int(got.version)

    def latest(self, subject: str) -> tuple[int, str, tuple[Any, ...]]:
        """``(id, text, references)`` of the newest version of ``subject``."""
        if self.confluent:
            found = self.client.get_latest_version(subject)
            return int(found.schema_id), str(found.schema.schema_str), tuple(found.schema.references or ())
        got = self.client.get_latest(subject)
        return int(got.id), str(got.schema), tuple(got.references)


def _parse_registered(client: Any, text: str, references: tuple[Any, ...], message: str | None) -> ProtobufSchemaModel:
    """A registered schema parsed with its references fetched from the registry."""
    resolved = resolve_references(client, references) if references else None
    return parse(text, resolved, message=message)


# -- Timestamp / Duration values in a dict -----------------------------------------------------------


def _nanos(value: Any, path: str) -> int:
    """A timestamp (datetime, pandas Timestamp, int ns) or duration (timedelta, pandas Timedelta,
    int ns) as integer nanoseconds, exactly."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    exact = getattr(value, "value", None)  # pandas Timestamp / Timedelta carry their nanoseconds
    if isinstance(exact, int) and isinstance(value, (datetime.datetime, datetime.timedelta)):
        return exact
    if isinstance(value, datetime.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)
        value = aware - _EPOCH
    if isinstance(value, datetime.timedelta):
        return ((value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds) * 1000
    raise EncodeError(f"{path}: needs a datetime, timedelta or integer nanoseconds, got {type(value).__name__}")


def _time_messages(root: pb_descriptor.Descriptor) -> frozenset[str]:
    """Full names of the messages reachable from ``root`` that hold a Timestamp or Duration field
    somewhere below them (a fixpoint, so recursive messages are fine)."""
    found: dict[str, pb_descriptor.Descriptor] = {}
    stack = [root]
    while stack:
        desc = stack.pop()
        if desc.full_name in found:
            continue
        found[desc.full_name] = desc
        stack.extend(f.message_type for f in desc.fields if f.type == _FD.TYPE_MESSAGE)
    timed: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, desc in found.items():
            if name in timed:
                continue
            for f in desc.fields:
                if f.type == _FD.TYPE_MESSAGE and (
                    f.message_type.full_name in (_TIMESTAMP, _DURATION) or f.message_type.full_name in timed
                ):
                    timed.add(name)
                    changed = True
                    break
    return frozenset(timed)


class _TimeValues:
    """Turns the datetime / timedelta values of Timestamp and Duration fields in a dict into the
    integer nanoseconds :class:`~pulsar_codec.formats.protobuf.ProtobufEncoder` reads."""

    def __init__(self, root: pb_descriptor.Descriptor) -> None:
        self.root = root
        self.timed = _time_messages(root)

    def __call__(self, value: Any) -> Any:
        if self.root.full_name not in self.timed or not isinstance(value, Mapping):
            return value
        return self._message(self.root, value, self.root.full_name)

    def _message(self, desc: pb_descriptor.Descriptor, value: Mapping[str, Any], path: str) -> dict[str, Any]:
        out = dict(value)
        for name, v in value.items():
            field = desc.fields_by_name.get(name)
            if field is None or v is None or field.type != _FD.TYPE_MESSAGE:
                continue
            kind = field.message_type
            where = f"{path}.{name}"
            if kind.GetOptions().map_entry:
                inner = kind.fields_by_name["value"]
                if inner.type == _FD.TYPE_MESSAGE and self._converts(inner.message_type):
                    items = v.items() if isinstance(v, Mapping) else v
                    out[name] = {k: self._one(inner.message_type, x, f"{where}{{{k}}}") for k, x in items}
            elif self._converts(kind):
                if field.is_repeated:
                    out[name] = [self._one(kind, x, f"{where}[]") for x in v]
                else:
                    out[name] = self._one(kind, v, where)
        return out

    def _converts(self, desc: pb_descriptor.Descriptor) -> bool:
        return desc.full_name in (_TIMESTAMP, _DURATION) or desc.full_name in self.timed

    def _one(self, desc: pb_descriptor.Descriptor, value: Any, path: str) -> Any:
        if value is None:
            return None
        if desc.full_name in (_TIMESTAMP, _DURATION):
            return _nanos(value, path)
        if isinstance(value, Mapping):
            return self._message(desc, value, path)
        return value  # bytes of a message cut at max_depth, or a bad value the encoder reports


# -- the serializer ---------------------------------------------------------------------------------

_PROTOBUF_SERIALIZER_KEYS: dict[str, Any] = {
    "skip.known.types": True,
    "reference.subject.name.strategy": None,
    "use.deprecated.format": False,
}


@dataclass(frozen=True)
class _Writer:
    """What one subject writes with."""

    schema_id: int
    prefix: bytes  # 00 + id + the message-index path, framed once
    encoder: MessageEncoder  # dicts
    times: _TimeValues
    header: bytes | None = None  # header mode: 01 + GUID + the message-index path (the prefix is then empty)


class ProtobufSerializer:
    """Serialize dicts or Protobuf message instances as Confluent-framed Protobuf, like
    confluent-kafka's ``ProtobufSerializer``: a drop-in ``value.serializer`` of its
    ``SerializingProducer``, with no generated class needed.

    Parameters
    ----------
    registry : registry client, RegistryConfig or str
        As for :class:`~pulsar_codec.serde.AvroSerializer` (confluent-kafka's client works too).
    schema : optional
        ``.proto`` text (or anything :func:`pulsar_codec.formats.protobuf.parse` reads, a parsed
        model included: use it for text with imports), or a runtime message class / descriptor
        (registered as confluent-kafka registers it). Required unless ``use.latest.version`` or
        ``use.schema.id`` is set.
    conf : dict, optional
        confluent-kafka's keys: ``auto.register.schemas`` (True), ``normalize.schemas`` (False;
        passed to confluent-kafka's client, this package's registries compare canonical forms
        anyway), ``use.latest.version`` (False), ``use.schema.id``, ``subject.name.strategy`` /
        ``subject.name.strategy.type`` (the record name is the message's full name),
        ``skip.known.types`` (True), ``reference.subject.name.strategy`` (a callable ``(ctx,
        file descriptor) -> subject``; default the import name), ``use.deprecated.format`` (only
        False), ``schema.id.serializer`` (confluent-kafka's ``prefix_schema_id_serializer``, the
        default, or ``header_schema_id_serializer``: ``01`` + GUID + the message-index array in the
        context's ``__value_schema_id`` / ``__key_schema_id`` header, the payload unprefixed).
        Other keys raise ValueError. With ``use.schema.id`` the message is written with that id's
        schema (a message type it does not define is refused); unlike confluent-kafka the id need
        not be registered under the context's subject.
    to_dict : callable, optional
        ``to_dict(obj, ctx) -> dict | Message``, applied before writing.
    message : str, optional
        The full name of the message written (default: the class's message, else the schema's
        first message). A message instance must be of this type.
    """

    def __init__(
        self,
        registry: Any,
        schema: Any = None,
        conf: Mapping[str, Any] | None = None,
        to_dict: Callable[[Any, Any], Any] | None = None,
        *,
        message: str | None = None,
    ) -> None:
        if to_dict is not None and not callable(to_dict):
            raise ValueError(
                "to_dict must be callable with the signature to_dict(object, SerializationContext) -> dict"
            )
        given = dict(conf or {})
        extra = {k: given.pop(k, v) for k, v in _PROTOBUF_SERIALIZER_KEYS.items()}
        settings = _settings(given, _SERIALIZER_DEFAULTS)
        self._auto_register: bool = settings["auto.register.schemas"]
        self._normalize: bool = settings["normalize.schemas"]
        self._use_latest: bool = settings["use.latest.version"]
        self._use_id: int | None = settings["use.schema.id"]
        self._in_header: bool = settings["schema.id.placement"] == "header"
        if not isinstance(extra["skip.known.types"], bool):
            raise ValueError("skip.known.types must be a boolean value")
        if not isinstance(extra["use.deprecated.format"], bool):
            raise ValueError("use.deprecated.format must be a boolean value")
        if extra["use.deprecated.format"]:
            raise ValueError("use.deprecated.format is no longer supported")
        self._skip_known: bool = extra["skip.known.types"]
        reference_strategy = extra["reference.subject.name.strategy"] or _reference_subject
        if not callable(reference_strategy):
            raise ValueError("reference.subject.name.strategy must be callable")
        self._reference_strategy: Callable[[Any, Any], Any] = reference_strategy
        if self._use_latest and self._auto_register:
            raise ValueError("cannot enable both use.latest.version and auto.register.schemas")
        self._strategy: SubjectNameStrategy = resolve_strategy(
            settings["subject.name.strategy"], settings["subject.name.strategy.type"]
        )
        if schema is None and not self._use_latest and self._use_id is None:
            raise ValueError("a schema is needed unless use.latest.version or use.schema.id is set")
        self._client = client_of(registry)
        self._owns_client = self._client is not registry
        self._registry = _Registry(self._client)
        self._runtime = _runtime_descriptor(schema)  # a class or descriptor: registered as confluent-kafka does
        self._model: ProtobufSchemaModel | None = None
        if schema is not None:
            inner = getattr(schema, "schema_str", None)  # confluent-kafka's Schema
            if isinstance(inner, str):
                model = _parse_registered(self._client, inner, tuple(schema.references or ()), message)
            else:
                model = parse(schema, message=message)
            self._model = model if model.message is not None else FORMAT.select(model)
        self._message = message or (self._model.message if self._model is not None else None)
        self._to_dict = to_dict
        self._lock = threading.Lock()
        self._subjects: dict[str | None, _Writer] = {}

    def __call__(self, obj: Any, ctx: Any = None) -> bytes | None:
        """The framed message for ``obj`` (None for None): a dict, or a message instance; with
        ``header_schema_id_serializer``, the unprefixed payload, its schema id added to ``ctx.headers``.

        Raises
        ------
        EncodeError
            The value does not fit the schema.
        ValueError
            A message instance of another type than the serializer's; header mode with no context
            or no headers list / dict in it.
        """
        if obj is None:
            return None
        writer = self._writer_for(ctx)
        value = self._to_dict(obj, ctx) if self._to_dict is not None else obj
        if isinstance(value, Message):
            name = value.DESCRIPTOR.full_name
            if name != self._message:
                raise ValueError(f"message must be of type {self._message}, not {name}")
            # the call confluent-kafka makes: the same bytes, map order included
            payload: bytes = value.SerializeToString()
        else:
            payload = writer.encoder.encode_value(writer.times(value), framed=False)
        if writer.header is None:
            return writer.prefix + payload
        add_schema_id_header(ctx, writer.header)  # after the value is written, as confluent-kafka does
        return payload

    def _writer_for(self, ctx: Any) -> _Writer:
        subject = None
        if self._use_id is None:
            subject = self._strategy(ctx, self._message)
            if subject is None:
                raise ValueError("the subject name strategy gave no subject (a record strategy needs a message name)")
        found = self._subjects.get(subject)
        if found is None:
            with self._lock:
                found = self._subjects.get(subject)
                if found is None:
                    found = self._resolve(subject, ctx)
                    self._subjects[subject] = found
        return found

    def _resolve(self, subject: str | None, ctx: Any) -> _Writer:
        """The id and model ``subject`` writes with (registry round trips once, then cached)."""
        model = self._model
        if self._use_id is not None:
            # written with the id's own schema (a message of another schema is refused), not with
            # a given schema the frame does not name
            schema_id = self._use_id
            fetched = fetch_schema(self._client, schema_id)
            model = _parse_registered(self._client, str(fetched.schema), fetched.references, self._message)
        elif self._use_latest:
            assert subject is not None
            schema_id, text, registered = self._registry.latest(subject)
            model = _parse_registered(self._client, text, registered, self._message)
        else:
            assert subject is not None and model is not None
            text, references = self._registered_form(model, ctx)
            if self._auto_register:
                schema_id = self._registry.register(subject, text, references, self._normalize)
            else:
                schema_id = self._registry.lookup(subject, text, references, self._normalize)[0]
        if model.message is None:
            model = FORMAT.select(model, name=self._message)
        if self._message is None:
            self._message = model.message
        elif model.message != self._message:
            model = model.with_message(self._message)
        encoder = MessageEncoder(self._client, subject, schema=model, schema_id=schema_id, format=_PROTOBUF)
        path = FORMAT.type_path(model)
        indexes = wire.encode_message_indexes(path)
        if self._in_header:
            header = b"\x01" + schema_guid(self._client, schema_id).bytes + indexes
            return _Writer(schema_id, b"", encoder, _TimeValues(model.descriptor()), header)
        prefix = wire.CONFLUENT.pack(schema_id, b"") + indexes
        return _Writer(schema_id, prefix, encoder, _TimeValues(model.descriptor()))

    def _registered_form(self, model: ProtobufSchemaModel, ctx: Any) -> tuple[str, list[SchemaReference]]:
        """The text to register and its references (each imported file registered or looked up)."""
        if self._runtime is not None:
            root = self._runtime.file
            text = base64.standard_b64encode(root.serialized_pb).decode("ascii")
        else:
            root = model.pool().FindFileByName(model.file_name)
            text = schema_text(model)
        return text, self._references(root, model, ctx)

    def _dependency_text(self, dependency: pb_descriptor.FileDescriptor, model: ProtobufSchemaModel) -> str:
        if self._runtime is not None:
            return base64.standard_b64encode(dependency.serialized_pb).decode("ascii")
        proto = next(f for f in model.files() if f.name == dependency.name)
        return _printer.print_file(proto)

    def _references(
        self, file: pb_descriptor.FileDescriptor, model: ProtobufSchemaModel, ctx: Any
    ) -> list[SchemaReference]:
        """One reference per imported file of ``file`` (known types skipped unless asked for),
        each registered first with its own references, as confluent-kafka does."""
        out = []
        for dependency in file.dependencies:
            if self._skip_known and _builtin(dependency.name):
                continue
            nested = self._references(dependency, model, ctx)
            subject = self._reference_strategy(ctx, dependency)
            if not isinstance(subject, str):
                raise ValueError(f"reference.subject.name.strategy gave no subject for {dependency.name!r}")
            text = self._dependency_text(dependency, model)
            if self._auto_register:
                self._registry.register(subject, text, nested, self._normalize)
            _, version = self._registry.lookup(subject, text, nested, self._normalize)
            out.append(SchemaReference(dependency.name, subject, version))
        return out

    def close(self) -> None:
        """Close the registry client when this object built it (from a URL, path or RegistryConfig)."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ProtobufSerializer({self._client!r}, message={self._message!r})"


# -- the deserializer -------------------------------------------------------------------------------

ValueFix = Callable[[Any], Any]


def _map_dicts(arrow_type: pa.DataType) -> ValueFix | None:
    """A converter turning the maps inside a value of ``arrow_type`` (lists of pairs, as
    ``to_pylist`` gives them) into dicts; None when the type holds no map."""
    if pa.types.is_map(arrow_type):
        item = _map_dicts(arrow_type.item_type)
        if item is None:
            return lambda v: None if v is None else dict(v)
        fix_item = item
        return lambda v: None if v is None else {k: fix_item(x) for k, x in v}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        inner = _map_dicts(arrow_type.value_type)
        if inner is None:
            return None
        fix_inner = inner
        return lambda v: None if v is None else [fix_inner(x) for x in v]
    if pa.types.is_struct(arrow_type):
        fields = [(f.name, fix) for f in arrow_type if (fix := _map_dicts(f.type)) is not None]
        if not fields:
            return None

        def fix_struct(v: Any) -> Any:
            if v is not None:  # a fresh dict of the decoder: fixed in place
                for name, fix in fields:
                    v[name] = fix(v[name])
            return v

        return fix_struct
    return None


def _writer_key(data: Any) -> tuple[Any, tuple[int, ...]] | None:
    """``(schema id, message-index path)`` of a :class:`WriterId` or of a framed message (a
    ``00`` or ``01`` prefix); None for anything else."""
    if isinstance(data, WriterId):
        return data.key, data.path or (0,)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        return None
    if data[:1] == b"\x01":
        try:
            found = read_schema_id(data, True)
        except WireFormatError:
            return None
        return found.key, found.path or (0,)
    return _confluent_key(bytes(data))


def _confluent_key(data: bytes) -> tuple[int, tuple[int, ...]] | None:
    """``(schema id, message-index path)`` of a Confluent Protobuf frame, ``[0]`` for the one-byte
    form; None when the prefix is not one (the decoder then raises its wire error)."""
    if len(data) < 6 or data[0] != 0:
        return None
    schema_id = int.from_bytes(data[1:5], "big")
    if data[5] == 0:
        return schema_id, (0,)
    try:
        _, path, _ = wire.CONFLUENT_PROTOBUF.unpack_indexes(data)
    except ValueError:
        return None
    return schema_id, tuple(path) or (0,)


class ProtobufDeserializer:
    """Deserialize Confluent-framed Protobuf into dicts with no generated class (confluent-kafka's
    ``ProtobufDeserializer`` needs one), plus :meth:`decode_batch` for ``consume(num_messages=N)``.

    Parameters
    ----------
    registry : registry client, RegistryConfig, str or Mapping
        As for :class:`~pulsar_codec.serde.AvroDeserializer` (confluent-kafka's client works too).
    schema : optional
        The schema every message is read as (``.proto`` text, a parsed model, a runtime class...);
        default each message's writer schema (:meth:`decode_batch`: the newest of the batch).
    from_dict : callable, optional
        ``from_dict(dict, ctx) -> object``, applied to each value :meth:`__call__` returns.
    conf : dict, optional
        ``use.latest.version`` (read as the subject's latest version; with a record strategy the
        subject is named by the message type's full name; a call without a context reads the
        message's own schema, as confluent-kafka does), ``subject.name.strategy`` /
        ``subject.name.strategy.type``, ``schema.id.deserializer`` (confluent-kafka's
        ``dual_schema_id_deserializer``, the default: the ``__value_schema_id`` / ``__key_schema_id``
        header of the context, else the prefix; or ``prefix_schema_id_deserializer``); ``use.deprecated.format`` only False. Other keys
        raise ValueError.
    message : str, optional
        The full name of the message type read. Default: each message's own type, by the index
        path of its frame (:meth:`decode_batch`: the type of the batch's first message). A message
        of another type raises :class:`~pulsar_codec.errors.SchemaError` (in a batch with
        ``on_error="null"``: an error row of code ``SCHEMA_OTHER_MESSAGE``).

    Notes
    -----
    Values are the rows of the Protobuf -> Arrow mapping (README) with maps as dicts: every field
    present (proto3 defaults filled in, absent optional and message fields None), ``<oneof>_case``
    keys, enum value names (the decimal text of an unknown number), timestamps as UTC
    ``pandas.Timestamp`` and durations as ``pandas.Timedelta`` (nanoseconds kept),
    ``Struct`` / ``Value`` / ``ListValue`` as JSON text.
    """

    def __init__(
        self,
        registry: Any,
        schema: Any = None,
        from_dict: Callable[[Any, Any], Any] | None = None,
        conf: Mapping[str, Any] | None = None,
        *,
        message: str | None = None,
    ) -> None:
        if from_dict is not None and not callable(from_dict):
            raise ValueError(
                "from_dict must be callable with the signature from_dict(dict, SerializationContext) -> object"
            )
        given = dict(conf or {})
        deprecated = given.pop("use.deprecated.format", False)
        if not isinstance(deprecated, bool):
            raise ValueError("use.deprecated.format must be a boolean value")
        if deprecated:
            raise ValueError("use.deprecated.format is no longer supported")
        settings = _settings(given, _DESERIALIZER_DEFAULTS)
        self._use_latest: bool = settings["use.latest.version"]
        self._dual: bool = settings["schema.id.placement"] == "dual"  # ids in headers read too
        self._strategy: SubjectNameStrategy = resolve_strategy(
            settings["subject.name.strategy"], settings["subject.name.strategy.type"]
        )
        self._client = registry if isinstance(registry, Mapping) else client_of(registry)
        self._owns_client = self._client is not registry
        self._reader: ProtobufSchemaModel | None = None
        if schema is not None:
            inner = getattr(schema, "schema_str", None)
            if isinstance(inner, str):
                self._reader = _parse_registered(self._client, inner, tuple(schema.references or ()), message)
            else:
                self._reader = parse(schema, message=message)
        self._message = message
        self._from_dict = from_dict
        self._lock = threading.Lock()
        self._decoders: dict[Any, MessageDecoder] = {}  # by (subject or None, on_error)
        self._fixes: dict[Any, ValueFix | None] = {}  # by (subject, schema id, path) or (subject, None)
        self._writer_messages: dict[tuple[Any, tuple[int, ...]], str | None] = {}  # by (id, path)
        self._subject_messages: dict[str, str] = {}  # a record strategy's subject -> its message type

    # -- one message --------------------------------------------------------------------------------

    def __call__(self, data: bytes | None, ctx: Any = None) -> Any:
        """The value of one framed message (None for None).

        Raises
        ------
        WireFormatError, ProtobufDecodeError
            A bad prefix or payload (both are ``ValueError``).
        SchemaNotFoundError
            The registry does not know the message's schema id.
        SchemaError
            The message is of another type than ``message``.
        """
        if data is None:
            return None
        if ctx is not None and self._dual and getattr(ctx, "headers", None):
            header = schema_id_header(ctx)
            if header is not None:  # the id (and index path) is the header's; the payload is all data
                return self._with_id(data, ctx, read_schema_id(header[1], True, header=header[0]))
        try:
            subject = self._subject(ctx, data)
            decoder = self._decoder(subject, "raise")
            value = decoder.decode_value(data)
        except WireFormatError as exc:
            if not guid_prefixed(exc, data):
                raise
            return self._with_id(data, ctx, read_schema_id(data, True))
        fix = self._fix_for(decoder, subject, data)
        if fix is not None:
            value = fix(value)
        return self._from_dict(value, ctx) if self._from_dict is not None else value

    def _with_id(self, data: Any, ctx: Any, writer: WriterId) -> Any:
        """The value of a message whose schema id and index path are known (from a header, or a
        GUID prefix)."""
        subject = self._subject(ctx, writer)
        decoder = self._decoder(subject, "raise")
        body = data if writer.start == 0 else memoryview(data)[writer.start :]
        value = decoder.decode_value(body, Pathed(writer.key, writer.path))
        fix = self._fix_for(decoder, subject, writer)
        if fix is not None:
            value = fix(value)
        return self._from_dict(value, ctx) if self._from_dict is not None else value

    def _subject(self, ctx: Any, first: Any = None) -> str | None:
        """With ``use.latest.version``, the subject whose latest version is read as: the one of
        ``ctx`` (with a record strategy, of the full name of the message type of ``first``, a
        framed message); None without a subject (then the given schema, else the writer's)."""
        if not self._use_latest:
            return None
        named: list[str] = []

        def writer_message() -> str | None:
            name = self._writer_message(first)
            if name is not None:
                named.append(name)
            return name

        subject = latest_subject(self._strategy, ctx, writer_message)
        if subject is not None and named and self._message is None:
            # the subject is the message type's: its latest version is read as that type
            self._subject_messages.setdefault(subject, named[0])
        return subject

    def _writer_message(self, data: Any) -> str | None:
        """The full name of the message type of framed message ``data`` or of a :class:`WriterId`
        (None: no frame)."""
        found = _writer_key(data)
        if found is None:
            return None
        if found not in self._writer_messages:
            writer = self._decoder(None, "raise").writer_schema(found[0])
            self._writer_messages[found] = FORMAT.select(writer, found[1]).message
        return self._writer_messages[found]

    def _decoder(self, subject: str | None, on_error: str) -> MessageDecoder:
        key = (subject, on_error)
        found = self._decoders.get(key)
        if found is None:
            reader = self._reader
            message = self._message
            if subject is not None:  # the subject's latest version, its references fetched too
                message = message or self._subject_messages.get(subject)
                _, text, references = _Registry(self._client).latest(subject)
                reader = _parse_registered(self._client, text, references, message)
            made = MessageDecoder(
                self._client,
                reader_schema=reader,
                on_error=on_error,
                format=_PROTOBUF,
                message=message,
            )
            with self._lock:
                found = self._decoders.setdefault(key, made)
        return found

    def _fix_for(self, decoder: MessageDecoder, subject: str | None, data: Any) -> ValueFix | None:
        """The map-to-dict converter of the message type ``data`` (a framed message or a
        :class:`WriterId`) is read as."""
        if self._reader is not None or subject is not None:
            key: Any = (subject, None)  # one reader for every message
        else:
            found = _writer_key(data) if isinstance(data, WriterId) else _confluent_key(data)
            if found is None:
                return None
            key = (None, *found)
        if key in self._fixes:
            return self._fixes[key]
        if key[1] is None:
            arrow_schema = decoder.arrow_schema
            assert arrow_schema is not None
        else:
            writer = decoder.writer_schema(key[1])
            model = FORMAT.select(writer, name=self._message) if self._message else FORMAT.select(writer, key[2])
            arrow_schema = FORMAT.plan(model, model).arrow_schema
        fix = _map_dicts(pa.struct(list(arrow_schema)))
        with self._lock:
            self._fixes[key] = fix
        return fix

    # -- many messages ------------------------------------------------------------------------------

    def decode_batch(self, values: Any, ctx: Any = None, *, on_error: str = "raise") -> pa.RecordBatch | Decoded:
        """Decode many framed messages into one Arrow batch, in input order (one pipeline pass).

        Parameters
        ----------
        values : list of bytes / None, list of confluent-kafka ``Message``, or a binary Arrow array
            None gives a null row.
        ctx : SerializationContext, optional
            With ``use.latest.version``, the subject (without one: read as without the setting).
        on_error : {"raise", "null"}
            ``"null"``: a bad message (or one of another message type) becomes a null row and
            ``Decoded(batch, errors)`` is returned.

        Returns
        -------
        pa.RecordBatch or Decoded
            Columns as the Protobuf -> Arrow mapping of the message read.
        """
        values, headers = message_values(values, self._dual)
        keep_going = on_error != "raise"
        split = None if headers is None else split_ids(values, headers, True, keep_going)
        first: Any = first_present(values) if split is None else next((w for w in split.ids if w is not None), None)
        decoder = self._decoder(self._subject(ctx, first), on_error)
        return decode_with_ids(decoder, values, split, True, keep_going)

    def close(self) -> None:
        """Close the registry client when this object built it (from a URL, path or RegistryConfig)."""
        if self._owns_client:
            self._client.close()  # type: ignore[union-attr]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ProtobufDeserializer({self._client!r}, message={self._message!r})"
