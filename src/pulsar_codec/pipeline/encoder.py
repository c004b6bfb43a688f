"""MessageEncoder: Arrow rows out as framed messages, the writer schema registered or looked up
under a subject the way confluent-kafka's serializers do."""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

import numpy as np
import pyarrow as pa

from .. import wire
from .._arrow import as_table_like, walk_bad_rows
from .._cache import LRU
from ..errors import EncodeError, SchemaError, SchemaNotFoundError
from ..formats import DEFAULT_FORMAT, format_of_model, get_format
from ..formats.base import ENCODE_ERRORS_SCHEMA, Encoded, PayloadEncoder, check_on_error
from ..registry.lookup import RegistrySource, fetch_schema, portable
from ._common import DEFAULT_CACHE_SIZE, ParsedSchema, SubjectShape, latest_version, lookup_id, subject_format

__all__ = ["MessageEncoder"]


_ROW = re.compile(r"\brow \d+:")
"""The row an EncodeError's text names (``row 3:``)."""


class MessageEncoder:
    """Encode Arrow rows as framed messages (registry prefix + payload); the reverse of
    :class:`MessageDecoder`.

    Parameters
    ----------
    registry : registry client, MutableMapping, RegistryConfig, str or None
        With a ``register(subject, schema)`` method (or a RegistryConfig / URL / path building such
        a client), the writer schema is registered under ``subject`` and the returned id is used.
        A mutable Mapping of id -> schema: the id of an equal schema already in it is reused, else
        the next free id (highest int + 1, starting at 1) is assigned and stored. None only with
        ``schema_id`` and ``schema``.
    subject : str, optional
        The subject to register under (informational for a Mapping).
    protocol : wire.Protocol or str, optional
        The prefix written before each payload. Default: ``CONFLUENT_PROTOBUF`` (Confluent's prefix
        and the message-index path of the written message) for Protobuf, else ``CONFLUENT``.
    schema : schema, optional
        The writer schema. Default: from each batch (a schema kept in its Arrow metadata, such as
        Avro's ``b"avro.schema"``, else one derived from the Arrow schema).
    schema_id : id, optional
        Write this id without registering; the writer schema is ``schema``, or the registry's
        schema of this id.
    format : str, optional
        The payload format (registry ``schemaType``: ``"AVRO"``, ``"JSON"``, ``"PROTOBUF"``).
        Default: a parsed ``schema``'s format; else the registry's ``schemaType`` of ``schema_id``,
        or of the subject's latest version (asked once, here); else ``"AVRO"``.
    use_latest : bool, default False
        Write with the subject's latest version (its schema and id, looked up once per encoder),
        as confluent-kafka's ``use.latest.version``; the rows must fit it.
    auto_register : bool, default True
        Register the writer schema under ``subject`` (the registry checks compatibility). False:
        only look its id up (confluent-kafka's ``auto.register.schemas=False``); a schema the
        subject does not hold raises :class:`~pulsar_codec.errors.SchemaNotFoundError`.
    message : str, optional
        Protobuf: the full name of the message type written (default: the schema's first message).
    on_error : {"raise", "null"}
        ``"raise"``: the first row that cannot be encoded raises its
        :class:`~pulsar_codec.errors.EncodeError`. ``"null"``: that row's message is a null and
        :meth:`encode` returns :class:`~pulsar_codec.formats.base.Encoded` ``(messages, errors)``
        (``errors``: ``index``, ``message``), so one bad row does not cost the batch. A batch the
        schema cannot take at all (a column it has no field for) raises either way.

    A writer schema derived from Arrow is a record named after the subject: the full name of the
    subject's latest record when the subject has one (so a new version stays compatible), else the
    subject without its ``-value`` / ``-key`` suffix (``orders-value`` -> ``orders``), made a valid
    Avro name. Its fields follow the Arrow schema, never a batch's data: a nullable Arrow field
    (pyarrow's default) is ``["null", T]`` with a null default, and so is a field the subject's
    latest version lets be null, whatever the Arrow flag says. The batches of a stream therefore
    derive one schema, and a column added later makes a version the subject accepts.

    Notes
    -----
    Thread-safe; ids and compiled encoders are cached per instance. Pickling keeps the
    configuration only, as for :class:`MessageDecoder`.

    Who owns the registry client: a client (or Mapping) passed in stays the caller's, and the
    encoder never closes it. A client the encoder builds itself from a URL, file path or
    RegistryConfig (also after unpickling) is the encoder's: :meth:`close`, or leaving a
    ``with MessageEncoder(...) as encoder:`` block, closes it; an encoder dropped unclosed closes it
    when it is garbage collected, or at interpreter exit. :func:`pulsar_codec.encode` closes the
    encoder it makes for the call.
    """

    def __init__(
        self,
        registry: Any,
        subject: str | None = None,
        *,
        protocol: Any = None,
        schema: Any = None,
        schema_id: Any = None,
        format: str | None = None,
        use_latest: bool = False,
        auto_register: bool = True,
        message: str | None = None,
        on_error: str = "raise",
    ) -> None:
        self.on_error = on_error
        self._keep_going = check_on_error(on_error)
        given = [n for n, v in (("schema", schema), ("schema_id", schema_id)) if v is not None]
        if use_latest and given:
            raise ValueError(f"use_latest=True takes the subject's latest version; do not pass {given[0]}=")
        if use_latest and subject is None:
            raise ValueError("use_latest=True needs a subject")
        self.subject = subject
        self._registry = RegistrySource(registry, owner=self)
        if format is None:
            format = self._format_of(schema, schema_id, subject)
        self.format = get_format(format).name
        if protocol is None:
            protocol = wire.CONFLUENT_PROTOBUF if self.format == "PROTOBUF" else wire.CONFLUENT
        self.protocol: wire.Protocol = wire.protocol_by_name(protocol)
        self.message = message
        self.schema = schema
        self.schema_id = schema_id
        self.use_latest = bool(use_latest)
        self.auto_register = bool(auto_register)
        self._latest_id: Any = None
        self._shape: SubjectShape | None = None
        self._fmt = get_format(self.format)
        if message is not None and getattr(self._fmt, "select", None) is None:
            raise ValueError(f"message= applies to Protobuf schemas; this encoder writes {self.format}")
        self._fixed: ParsedSchema | None = None
        self._lock = threading.Lock()
        self._ids: LRU[str, Any] = LRU(DEFAULT_CACHE_SIZE)
        self._encoders: LRU[str, PayloadEncoder] = LRU(DEFAULT_CACHE_SIZE)
        self._value_writer: tuple[bytes, PayloadEncoder] | None = None

    @property
    def registry(self) -> Any:
        """The registry as given."""
        return self._registry.given

    def close(self) -> None:
        """Close the registry client this encoder built (from a URL, path or RegistryConfig); a
        client or Mapping passed in is left open (it is the caller's). A later encode builds a
        new client."""
        self._registry.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def _format_of(self, schema: Any, schema_id: Any, subject: str | None) -> str | None:
        """The format an encoder given no ``format`` writes: a parsed ``schema``'s; else the
        registry's ``schemaType`` of ``schema_id``, or of the subject's latest version (a subject
        holds one format); None (Avro) where nothing says."""
        if schema is not None:
            return format_of_model(schema)
        if schema_id is not None:
            return fetch_schema(self._registry.get(), schema_id).schema_type
        return subject_format(self._registry.get(), subject)

    def _schema(self, model: Any) -> ParsedSchema:
        select = getattr(self._fmt, "select", None)
        if select is not None:  # several message types per schema: the one written
            model = select(model, name=self.message)
        return ParsedSchema(self._fmt, model, self._fmt.schema_key(model))

    def _parse_fetched(self, fetched: Any) -> Any:
        references = fetched.references or None
        resolve = getattr(self._fmt, "resolve_references", None)
        if references and resolve is not None:  # formats whose parser needs the referenced texts
            references = resolve(self._registry.get(), references)
        return self._fmt.parse(fetched.schema, references)

    def _payload_encoder(self, writer: ParsedSchema) -> PayloadEncoder:
        """The format's encoder of ``writer``; one writing raw where the protocol's serializers do
        (format ``written_raw``: Confluent's top-level Avro ``bytes``)."""
        written_raw = getattr(self._fmt, "written_raw", None)
        if callable(written_raw) and written_raw(writer.model, self.protocol):
            return self._fmt.raw_encoder(writer.model)  # type: ignore[attr-defined, no-any-return]
        return self._fmt.encoder(writer.model)

    def _frame(self, payloads: pa.Array, schema_id: Any, writer: ParsedSchema) -> pa.Array:
        indexes = None
        type_path = getattr(self._fmt, "type_path", None)
        if self.protocol.protobuf and type_path is not None:
            indexes = type_path(writer.model)
        framed: pa.Array = wire.frame(payloads, schema_id, self.protocol, message_indexes=indexes)
        return framed

    def encode_value(self, value: Any, *, framed: bool = True) -> bytes:
        """One framed message for one Python value (a dict for a record), for per-message producers.

        The writer schema must be fixed (``schema=`` or ``schema_id=``): one value carries no Arrow
        schema to derive it from. The schema is resolved and registered on the first call, and its
        prefix framed once; each call then only runs the format's row writer on the value (for
        Avro: a dict as :meth:`MessageDecoder.decode_value` gives it, or in fastavro's shapes; a
        missing field takes its default).

        Parameters
        ----------
        value : object
            The value.
        framed : bool, default True
            False: the payload without the wire prefix (the id then travels separately, as
            :meth:`encode_payloads` returns it).

        Raises
        ------
        EncodeError
            The value does not fit the writer schema (the message names the field path).
        ValueError
            Neither ``schema`` nor ``schema_id`` was given.
        """
        fixed = self._value_writer
        if fixed is None:
            fixed = self._fixed_value_writer()
        if framed:
            return fixed[0] + fixed[1].encode_value(value)
        return fixed[1].encode_value(value)

    def _fixed_value_writer(self) -> tuple[bytes, PayloadEncoder]:
        if self.schema is None and self.schema_id is None:
            raise ValueError("encode_value needs a fixed writer schema: pass schema= or schema_id=")
        writer = self._writer(None)
        schema_id = self._id_for(writer)
        if isinstance(schema_id, (int, np.integer)):
            schema_id = int(schema_id)
        prefix = self._frame(pa.array([b""], pa.binary()), schema_id, writer)[0].as_py()
        encoder = self._encoders.get_or_make(writer.key, lambda: self._payload_encoder(writer))
        self._value_writer = (prefix, encoder)
        return self._value_writer

    def _writer(self, data: Any) -> ParsedSchema:
        """The writer schema for ``data``: the fixed one, the registry's for ``schema_id``, or derived."""
        if self._fixed is not None:
            return self._fixed
        if self.use_latest:
            assert self.subject is not None  # checked in __init__
            try:
                schema_id, fetched = latest_version(self._registry.get(), self.subject)
            except SchemaNotFoundError as exc:
                raise SchemaNotFoundError(
                    f"use_latest=True: subject {self.subject!r} has no version to write with ({exc}); register"
                    " one first, or leave use_latest off to register the batch's schema"
                ) from exc
            model = self._parse_fetched(fetched)
            with self._lock:
                self._latest_id = schema_id
                self._fixed = self._schema(model)
            return self._fixed
        if self.schema is not None or self.schema_id is not None:
            if self.schema is not None:
                model = self._fmt.parse(self.schema)
            else:
                fetched = fetch_schema(self._registry.get(), self.schema_id)
                model = self._parse_fetched(fetched)
            with self._lock:
                self._fixed = self._schema(model)
            return self._fixed
        # the Arrow schema (its fields' nullable flags) and the subject decide, never this batch's
        # nulls: every batch of a stream derives the same schema
        return self._schema(self._subject_shape().derive(self._fmt, data.schema))

    def latest_writer(self) -> tuple[Any, Any]:
        """With ``use_latest=True``: ``(schema id, writer schema model)`` of the subject's latest
        version as this encoder writes with it (a Protobuf schema narrowed to ``message``), looked
        up once; for a job that ships the schema to its workers instead of asking the registry there."""
        if not self.use_latest:
            raise ValueError("latest_writer() needs use_latest=True")
        writer = self._writer(None)
        return self._latest_id, writer.model

    def _subject_shape(self) -> SubjectShape:
        """What a derived schema takes from the subject's latest version (asked once; see the class notes)."""
        if self._shape is None:
            self._shape = SubjectShape.of(self._registry.get(), self.subject, self._fmt)
        return self._shape

    def _id_for(self, writer: ParsedSchema) -> Any:
        if self.schema_id is not None:
            return self.schema_id
        if self.use_latest:
            return self._latest_id
        return self._ids.get_or_make(writer.key, lambda: self._registered(writer))

    def _registered(self, writer: ParsedSchema) -> Any:
        """The id of ``writer``, registered under the subject where it is new there."""
        schema_id = self._register(writer)
        if self._fixed is None:
            # a derived writer may be the subject's latest version now (its first one, for a new
            # subject): the next derivation asks again, so it keeps nullable what this one made
            # nullable, as a new encoder on the subject would
            with self._lock:
                self._shape = None
        return schema_id

    def _register(self, writer: ParsedSchema) -> Any:
        registry = self._registry.get()
        text = self._fmt.schema_text(writer.model)
        if not self.auto_register and not isinstance(registry, Mapping):
            if self.subject is None:
                raise ValueError("looking a schema up needs a subject")
            try:
                return lookup_id(registry, self.subject, text, self._fmt.name)
            except SchemaNotFoundError as exc:
                raise SchemaNotFoundError(
                    f"subject {self.subject!r} holds no version of the writer schema ({exc}); with "
                    "auto_register=False it is only looked up: register it first, or let the encoder register it"
                ) from exc
        if hasattr(registry, "register_schema") and not hasattr(registry, "register"):  # confluent-kafka's client
            if self.subject is None:
                raise ValueError("registering a schema needs a subject")
            from confluent_kafka.schema_registry import Schema

            return registry.register_schema(self.subject, Schema(text, self._fmt.name))
        if hasattr(registry, "register"):
            if self.subject is None:
                raise ValueError("registering a schema needs a subject")
            if self._fmt.name == DEFAULT_FORMAT:
                found = registry.register(self.subject, text)
                return getattr(found, "schema_id", found)
            registration = getattr(self._fmt, "registration", None)
            if registration is None:
                found = registry.register(self.subject, text, schema_type=self._fmt.name)
                return getattr(found, "schema_id", found)
            # imported files first, each under its import name, then the schema with its references
            for subject, body, imports in registration(writer.model):
                refs = [{"name": name, "subject": name, "version": -1} for name in imports]
                if not refs:
                    found = registry.register(subject or self.subject, body, schema_type=self._fmt.name)
                else:
                    found = registry.register(
                        subject or self.subject, body, schema_type=self._fmt.name, references=refs
                    )
            return getattr(found, "schema_id", found)
        if isinstance(registry, Mapping):
            for k in list(registry):
                try:
                    if self._schema(self._fmt.parse(fetch_schema(registry, k).schema)).key == writer.key:
                        return k
                except (SchemaError, TypeError):
                    continue
            if not self.auto_register:
                raise SchemaNotFoundError("the registry mapping does not hold this schema (auto_register=False)")
            if not hasattr(registry, "__setitem__"):
                raise EncodeError("registry mapping is read-only and does not hold this schema")
            ints = [k for k in registry if isinstance(k, int)]
            schema_id = max(ints) + 1 if ints else 1
            registry[schema_id] = text
            return schema_id
        raise TypeError("registry must have a register(subject, schema) method or be a mutable mapping")

    def encode_payloads(self, batch: Any) -> tuple[Any, pa.Array | Encoded]:
        """Encode every row without a wire prefix.

        Parameters
        ----------
        batch : pa.RecordBatch, pa.Table or Arrow PyCapsule stream producer (a polars DataFrame)

        Returns
        -------
        (schema id, pa.BinaryArray)
            The id the payloads were written under, and one payload per row (with
            ``on_error="null"``, an :class:`~pulsar_codec.formats.base.Encoded` of them).

        Raises
        ------
        EncodeError
            A value that does not fit the writer schema.
        """
        data = as_table_like(batch)
        writer = self._writer(data)
        schema_id = self._id_for(writer)
        encoder = self._encoders.get_or_make(writer.key, lambda: self._payload_encoder(writer))
        payloads, errors = self._rows(encoder, data)
        return schema_id, payloads if errors is None else Encoded(payloads, errors)

    def _rows(self, encoder: PayloadEncoder, data: Any) -> tuple[pa.Array, pa.Table | None]:
        """The payloads of ``data``'s rows; with ``on_error="null"`` a row that cannot be encoded is
        a null and one row of the errors table (else None). A refusal of the whole batch (a column
        the schema has no field for: an EncodeError without ``index``) raises either way."""
        if not self._keep_going:
            return encoder.encode(data), None
        pieces: list[pa.Array] = []
        errors: list[tuple[int, str]] = []

        def attempt(lo: int, hi: int) -> int | None:
            try:
                pieces.append(encoder.encode(data.slice(lo, hi - lo)).cast(pa.binary()))
                return None
            except EncodeError as exc:
                if exc.index is None:
                    raise
                bad = exc.index
                if bad:
                    pieces.append(encoder.encode(data.slice(lo, bad)).cast(pa.binary()))
                pieces.append(pa.nulls(1, pa.binary()))
                # the text counts the row in the slice: counted in the batch here
                errors.append((lo + bad, _ROW.sub(f"row {lo + bad}:", str(exc), count=1)))
                return int(bad)

        walk_bad_rows(data.num_rows, attempt)
        payloads = pa.concat_arrays(pieces) if pieces else pa.array([], pa.binary())
        table = pa.Table.from_arrays(
            [pa.array([i for i, _ in errors], pa.int64()), pa.array([m for _, m in errors], pa.string())],
            schema=ENCODE_ERRORS_SCHEMA,
        )
        return payloads, table

    def encode(self, batch: Any) -> pa.Array | Encoded:
        """Encode every row as a framed message (``protocol`` prefix + payload).

        Parameters
        ----------
        batch : pa.RecordBatch, pa.Table or Arrow PyCapsule stream producer (a polars DataFrame)

        Returns
        -------
        pa.BinaryArray, or Encoded with ``on_error="null"``
            One framed message per row (a null where the row is a null message).
        """
        data = as_table_like(batch)
        writer = self._writer(data)
        schema_id = self._id_for(writer)
        encoder = self._encoders.get_or_make(writer.key, lambda: self._payload_encoder(writer))
        payloads, errors = self._rows(encoder, data)
        if isinstance(schema_id, (int, np.integer)):
            schema_id = int(schema_id)
        framed = self._frame(payloads, schema_id, writer)
        return framed if errors is None else Encoded(framed, errors)

    def __getstate__(self) -> dict[str, Any]:
        schema = self.schema
        if schema is not None and not isinstance(schema, (str, bytes, dict, list)) and self.format == DEFAULT_FORMAT:
            schema = self._fmt.schema_text(self._fmt.parse(schema))  # other formats' models travel whole (imports)
        return {
            "registry": portable(self._registry.given, type(self).__name__),
            "subject": self.subject,
            "protocol": self.protocol.name,
            "schema": schema,
            "schema_id": self.schema_id,
            "format": self.format,
            "use_latest": self.use_latest,
            "auto_register": self.auto_register,
            "message": self.message,
            "on_error": self.on_error,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        registry = state.pop("registry")
        self.__init__(registry, **state)  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"MessageEncoder({self._registry.given!r}, {self.subject!r}, protocol={self.protocol.name})"
