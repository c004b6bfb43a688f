"""Schema resolution of the decoders: which writer schema each id names, which reader reads a batch,
and the (writer, reader) plans, each looked up or compiled once and kept.

:class:`~.decoder.MessageDecoder` asks a :class:`SchemaResolver` for the plans of a batch's
distinct schema ids (:meth:`SchemaResolver.resolve`) and hands its rows to the payload format; this
module knows the registry, the caches and the reader rules, the decoder the rows.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, NoReturn

import pyarrow as pa

from .. import wire
from .._cache import LRU
from .._unframe import registry_key
from ..errors import (
    ErrorCode,
    RegistryError,
    RegistryUnreachableError,
    SchemaError,
    SchemaNotFoundError,
    at_message,
)
from ..formats import get_format
from ..formats.base import DecodePlan, PayloadFormat
from ..registry.lookup import RegistrySource, fetch_schema
from ._common import ParsedSchema, latest_version, lone_subject

__all__ = ["BadId", "Pathed", "ReaderPlans", "Resolved", "SchemaResolver"]


class Pathed(NamedTuple):
    """A registry key and the Protobuf message-index path a row gives with it (None: no path, the
    schema's own message)."""

    key: Any
    path: tuple[int, ...] | None


class BadId(NamedTuple):
    """Why the rows of one schema id are error rows: the error code, the registry key, and the
    reason the code's message template completes; or, with ``whole``, the message itself (a
    writer schema that is itself bad, whose error names the id and says what is wrong)."""

    code: ErrorCode
    key: Any
    reason: str
    whole: bool = False


@dataclass(frozen=True)
class Resolved:
    """The plans of one batch: ``fmt`` (None when nothing defines the columns), one plan per schema
    id, the ids whose rows are error rows: position -> :class:`BadId`, and for the
    writers whose values the protocol's serializers may write raw: position -> the protocol bytes
    under which they do (``raw_heads``), and the positions whose payloads given without a prefix
    are raw (``written_raw``)."""

    fmt: PayloadFormat | None
    plans: list[DecodePlan]
    bad: dict[int, BadId]
    raw_heads: Mapping[int, frozenset[int]] = field(default_factory=dict)
    raw_unframed: frozenset[int] = frozenset()


class ReaderPlans:
    """The plans of one reader: a base plan (reader as writer) and one per writer, sharing columns."""

    def __init__(self, fmt: PayloadFormat, reader: ParsedSchema, size: int) -> None:
        self.fmt = fmt
        self.reader = reader
        self.base = fmt.plan(reader.model, reader.model)
        self._plans: LRU[str, DecodePlan] = LRU(size)

    def plan(self, writer: ParsedSchema) -> DecodePlan:
        if writer.key == self.reader.key:
            return self.base
        return self._plans.get_or_make(writer.key, lambda: self.fmt.plan(writer.model, self.reader.model, self.base))


def _other_type(writer: ParsedSchema, reader: ParsedSchema) -> str | None:
    """Why rows of ``writer`` are not of the reader's message type, and how to read them (None when
    they are, or when the format has one type per schema)."""
    type_name = getattr(writer.fmt, "type_name", None)
    if type_name is None:
        return None
    got, wanted = type_name(writer.model), type_name(reader.model)
    if got == wanted:
        return None
    return f"message type {got}, the output's is {wanted}; pass message={got!r} to read them"


class SchemaResolver:
    """The writer schemas, readers and plans of one decoder's configuration, cached.

    Parameters
    ----------
    registry : RegistrySource
        Where schema ids are looked up.
    format : str or None
        The payload format when the registry does not say (a format name), or None (Avro).
    message : str or None
        Protobuf: the message type every row is read as.
    reader_schema, reader_subject
        The configured reader, if any (see :class:`~.decoder.MessageDecoder`).
    cache_size : int
        Entries kept in each cache.

    Notes
    -----
    Thread-safe as the LRU caches are; a race computes an entry twice, never a wrong one.
    """

    def __init__(
        self,
        registry: RegistrySource,
        *,
        format: str | None,
        message: str | None,
        reader_schema: Any,
        reader_subject: str | None,
        cache_size: int,
    ) -> None:
        self._registry = registry
        self.format = format
        self.message = message
        self.reader_schema = reader_schema
        self.reader_subject = reader_subject
        self.cache_size = cache_size
        self.writers: LRU[Any, ParsedSchema] = LRU(cache_size)
        # writer schemas narrowed to one message type, by (registry key, message-index path)
        self._selected: LRU[tuple[Any, Any], ParsedSchema] = LRU(cache_size)
        self._readers: LRU[tuple[str, str], ReaderPlans] = LRU(cache_size)
        self._given_readers: LRU[str, ParsedSchema] = LRU(8)
        self._lone_reader: tuple[ParsedSchema | None] | None = None

    def writer(self, schema_id: Any) -> ParsedSchema:
        """The writer schema of ``schema_id``, looked up once (registries keep an id's schema)."""
        return self.writers.get_or_make(schema_id, lambda: self._fetch(schema_id))

    def _fetch(self, schema_id: Any) -> ParsedSchema:
        fetched = fetch_schema(self._registry.get(), schema_id)
        kind = fetched.schema_type
        if kind is not None and self.format is not None and kind != self.format:
            raise SchemaError(f"schema id {schema_id} is a {kind} schema; this decoder reads {self.format}")
        fmt = get_format(kind or self.format)
        references = fetched.references or None
        resolve = getattr(fmt, "resolve_references", None)
        if references and resolve is not None:  # formats whose parser needs the referenced texts
            references = resolve(self._registry.get(), references)
        try:
            model = fmt.parse(fetched.schema, references)
        except SchemaError as exc:
            raise SchemaError(self._invalid(schema_id, fmt, fetched.schema, exc, guessed=kind is None)) from exc
        return ParsedSchema(fmt, model, fmt.schema_key(model))

    def _invalid(self, schema_id: Any, fmt: PayloadFormat, schema: Any, exc: SchemaError, guessed: bool) -> str:
        """What is wrong with the writer schema of ``schema_id``, which ``fmt`` cannot parse; and,
        when the format was not the registry's word (``guessed``), what to do."""
        text = f"schema id {schema_id} is not a valid {fmt.name} schema ({exc})"
        if not guessed:
            return text  # the registry says its schemaType: the schema is bad, not the reading
        if self.format is not None:
            hint = f"it is read as {fmt.name} because format={self.format!r} says so"
        elif isinstance(self._registry.get(), Mapping):
            hint = f"a Mapping of schema texts is read as {fmt.name} unless format= names its format"
        else:
            hint = f"the registry gives no schema type, so its schemas are read as {fmt.name} unless format= names their format"
        looks = _looks_like(schema)
        if looks is not None and looks != fmt.name:
            hint += f"; this one looks like a {looks} schema: pass format={looks!r}"
        return f"{text}; {hint}"

    def _given_reader(self, fmt: PayloadFormat) -> ParsedSchema:
        def parse() -> ParsedSchema:
            model = self._narrowed(fmt, fmt.parse(self.reader_schema))
            return ParsedSchema(fmt, model, fmt.schema_key(model))

        return self._given_readers.get_or_make(fmt.name, parse)

    def reader_plans(self, reader: ParsedSchema) -> ReaderPlans:
        return self._readers.get_or_make(
            (reader.fmt.name, reader.key), lambda: ReaderPlans(reader.fmt, reader, self.cache_size)
        )

    def plans_for(self, keys: Sequence[Any], protocol: wire.Protocol) -> Resolved:
        """The format and one plan per schema id in ``keys`` (:class:`Resolved`, with a format and
        no bad id): the first failure raises."""
        resolved = self.resolve(keys, protocol, tolerate=False, locate=lambda _: 0)
        if resolved.fmt is None:
            raise SchemaError("no reader schema: the batch holds no non-null message; pass reader_schema")
        return resolved

    def resolve(
        self,
        keys: Sequence[Any],
        protocol: wire.Protocol,
        tolerate: bool,
        first: int | None = None,
        locate: Callable[[int], int] | None = None,
    ) -> Resolved:
        """One plan per schema id in ``keys`` (sorted; the last is the newest), for messages framed
        with ``protocol`` (its serializers may write some writers' values raw).

        With ``tolerate``, an id the registry does not know, or whose writer schema the reader
        cannot read, gets the reader's base plan and an entry in ``bad`` (its rows become error
        rows); otherwise the SchemaNotFoundError or SchemaError raises. A registry that cannot be
        reached raises either way: a later retry would succeed, so its rows are not bad data.
        ``first`` is the position in ``keys`` of the batch's first non-null row, whose message
        type is the output's when the format has several per schema and ``message`` is not set.
        ``locate`` maps a position in ``keys`` to the batch's first message of that key: a raised
        error then names that message (:func:`~pulsar_codec.errors.at_message`), and of several
        keys that fail, the one whose message comes first is raised (not the first in key order).
        """
        writers: list[ParsedSchema | None] = []
        bad: dict[int, BadId] = {}
        failed: dict[int, SchemaError | SchemaNotFoundError] = {}  # without tolerate: raised at the end
        for i, k in enumerate(keys):
            path = None
            if isinstance(k, Pathed):
                k, path = k
            key = registry_key(k)
            try:
                writers.append(self._selected_writer(key, path))
            except SchemaNotFoundError as exc:
                failed[i] = exc
                writers.append(None)
                # a lookup that says more than "not in the registry" keeps its words in the rows
                plain = f"schema id {key} is not in the registry"
                said = str(exc).startswith(plain) and str(exc) != plain
                bad[i] = BadId(ErrorCode.SCHEMA_NOT_FOUND, key, str(exc) if said else "", whole=said)
            except SchemaError as exc:
                # the writer schema itself is bad (invalid, another format, no such message type):
                # its error says so, naming the id, raised or as the error rows' text
                text = str(exc) if f"schema id {key}" in str(exc) else f"schema id {key}: {exc}"
                failed[i] = exc if text == str(exc) else _renamed(exc, text)
                writers.append(None)
                bad[i] = BadId(ErrorCode.SCHEMA_UNRESOLVABLE, key, text, whole=True)
        known = [w for w in writers if w is not None]
        if not tolerate and len({w.fmt.name for w in known}) > 1:
            raise SchemaError(
                f"one batch mixes payload formats {sorted({w.fmt.name for w in known})}: decode them separately"
            )
        reader = self.known_reader(known[0].fmt if known else None)
        defaulted = reader is None and bool(known)  # the batch's newest writer reads it: say so
        if reader is None and known:
            reader = known[-1]
            type_name = getattr(reader.fmt, "type_name", None)
            if type_name is not None:  # several types per schema: the newest writer of the output's type
                wanted = self.message
                if wanted is None:
                    lead = writers[first] if first is not None and first < len(writers) else None
                    wanted = type_name((lead or known[0]).model)
                same = [w for w in known if type_name(w.model) == wanted]
                if same:
                    reader = same[-1]
                else:  # no row is of the asked type: read as it anyway (SchemaError if no schema has it)
                    model = self._narrowed(reader.fmt, reader.model)
                    reader = ParsedSchema(reader.fmt, model, reader.fmt.schema_key(model))
        if reader is None:  # every id failed (or none came): no writer can be the reader
            if failed and not tolerate:
                _raise_earliest(failed, locate)  # before asking the registry for a lone subject
            reader = self._default_reader()
        if reader is None:  # no id readable and no reader given: nothing defines the columns
            return Resolved(None, [], bad)
        plans = self.reader_plans(reader)
        out: list[DecodePlan] = []
        for i, w in enumerate(writers):
            if w is None:
                out.append(plans.base)
                continue
            key = registry_key(keys[i].key if isinstance(keys[i], Pathed) else keys[i])
            try:
                if w.fmt.name != reader.fmt.name:
                    raise SchemaError(f"schema id {key} is a {w.fmt.name} schema; the reader is {reader.fmt.name}")
                other = _other_type(w, reader)
                if other is not None:
                    failed[i] = SchemaError(f"schema id {key}: {other}")
                    out.append(plans.base)
                    bad[i] = BadId(ErrorCode.SCHEMA_OTHER_MESSAGE, key, other)
                    continue
                out.append(plans.plan(w))
            except SchemaError as exc:
                reason = str(exc)
                if defaulted:  # a batch mixing record types or subjects: what the reader was, and the way out
                    newest = next(j for j, x in enumerate(writers) if x is reader)
                    newest_key = registry_key(keys[newest].key if isinstance(keys[newest], Pathed) else keys[newest])
                    reason += (
                        f" (no reader was given: the batch's newest schema, id {newest_key}, reads it; pass"
                        " reader_schema= or reader_subject= to read these rows as another)"
                    )
                failed[i] = exc if reason == str(exc) else _renamed(exc, reason)
                out.append(plans.base)
                bad[i] = BadId(ErrorCode.SCHEMA_UNRESOLVABLE, key, reason)
        if failed and not tolerate:
            _raise_earliest(failed, locate)
        heads: dict[int, frozenset[int]] = {}
        unframed: set[int] = set()
        for i, w in enumerate(writers):
            raw_heads = getattr(w.fmt, "raw_heads", None) if w is not None and i not in bad else None
            if w is not None and callable(raw_heads) and raw_heads(w.model, protocol):
                heads[i] = frozenset(raw_heads(w.model, protocol))
                if w.fmt.written_raw(w.model, protocol):  # type: ignore[attr-defined]
                    unframed.add(i)
        return Resolved(reader.fmt, out or [plans.base], bad, heads, frozenset(unframed))

    def known_reader(self, fmt: PayloadFormat | None) -> ParsedSchema | None:
        """The reader every batch uses when one is configured: ``reader_schema`` or the latest
        version of ``reader_subject``."""
        if self.reader_schema is not None:
            return self._given_reader(fmt or get_format(self.format))
        if self.reader_subject is not None:
            return self._given_readers.get_or_make("subject", lambda: self._subject_reader(self.reader_subject))
        return None

    def _subject_reader(self, subject: Any) -> ParsedSchema:
        schema_id, fetched = latest_version(self._registry.get(), subject)
        fmt = get_format(fetched.schema_type or self.format)
        references = fetched.references or None
        resolve = getattr(fmt, "resolve_references", None)
        if references and resolve is not None:
            references = resolve(self._registry.get(), references)
        model = self._narrowed(fmt, fmt.parse(fetched.schema, references))
        return ParsedSchema(fmt, model, fmt.schema_key(model))

    def _narrowed(self, fmt: PayloadFormat, model: Any) -> Any:
        """A reader model narrowed to ``message`` (formats of several types per schema)."""
        select = getattr(fmt, "select", None)
        if select is None:
            if self.message is not None:
                raise SchemaError(f"message={self.message!r} applies to Protobuf schemas; this is a {fmt.name} schema")
            return model
        return select(model, name=self.message)

    def _selected_writer(self, key: Any, path: tuple[int, ...] | None) -> ParsedSchema:
        """The writer schema of ``key`` narrowed to the message type ``path`` names, for formats
        with several types per schema (:meth:`PayloadFormat.select`); the schema itself otherwise."""
        writer = self.writer(key)
        select = getattr(writer.fmt, "select", None)
        if select is None:
            if self.message is not None:
                raise SchemaError(
                    f"message={self.message!r} applies to Protobuf schemas; schema id {key} is a {writer.fmt.name} schema"
                )
            return writer

        def narrow() -> ParsedSchema:
            model = select(writer.model, path=path)
            return ParsedSchema(writer.fmt, model, writer.fmt.schema_key(model))

        return self._selected.get_or_make((key, path), narrow)

    def _default_reader(self) -> ParsedSchema | None:
        """The reader of a batch with no readable message and no configured reader: the registry's
        only schema (a Mapping of one id) or only subject's latest version; else None (the batch
        then has no columns)."""
        if self._lone_reader is None:
            self._lone_reader = (self._find_lone_reader(),)
        return self._lone_reader[0]

    def _find_lone_reader(self) -> ParsedSchema | None:
        registry = self._registry.get()
        if isinstance(registry, Mapping):
            if len(registry) != 1:
                return None
            try:
                return self.writer(registry_key(next(iter(registry))))
            except (SchemaError, SchemaNotFoundError):
                return None
        try:
            subjects = lone_subject(registry)
        except SchemaNotFoundError:
            return None
        except RegistryError as exc:
            if isinstance(exc, RegistryUnreachableError) or exc.status is None or exc.status >= 500:
                raise  # it may answer later: nothing is kept, the next batch asks again
            # it answered the ids but refuses to list its subjects (401, 403, no such endpoint):
            # it names no lone subject, and the batch's rows stay error rows
            return None
        if subjects is None:
            return None
        try:
            return self._subject_reader(subjects)
        except (SchemaError, SchemaNotFoundError):
            return None

    def arrow_schema(self) -> pa.Schema | None:
        """The columns of every batch when ``reader_schema`` was given (None otherwise: each
        batch is then read as its newest writer schema)."""
        reader = self.known_reader(None)
        if reader is None:
            return None
        return self.reader_plans(reader).base.arrow_schema

    def non_null_columns(self) -> frozenset[str]:
        """The columns of :attr:`arrow_schema` that every good row has a value in: the reader
        schema's top-level fields that admit no null, for formats that tell them
        (``non_null_fields``); empty without a configured reader. The batch's own fields stay
        nullable (an error row is null in every column)."""
        reader = self.known_reader(None)
        tell = getattr(reader.fmt, "non_null_fields", None) if reader is not None else None
        if reader is None or not callable(tell):
            return frozenset()
        return frozenset(tell(reader.model))


_PROTO_TEXT = re.compile(r"^\s*(?:syntax|edition|package)\s*[=\w]|^\s*message\s+\w+\s*\{", re.MULTILINE)
_JSON_SCHEMA_TYPES = frozenset({"object", "integer", "number"})  # JSON Schema types Avro has no name for


def _looks_like(schema: Any) -> str | None:
    """The format a writer schema text that failed to parse looks written in: ``"PROTOBUF"`` for
    ``.proto`` text, ``"JSON"`` for a JSON Schema; None when it is not clear."""
    if isinstance(schema, (bytes, bytearray, memoryview)):
        schema = bytes(schema).decode("utf-8", "replace")
    if not isinstance(schema, str):
        return None
    if _PROTO_TEXT.search(schema):
        return "PROTOBUF"
    try:
        decoded = json.loads(schema)
    except ValueError:
        return None
    if isinstance(decoded, dict) and (
        "$schema" in decoded or "properties" in decoded or decoded.get("type") in _JSON_SCHEMA_TYPES
    ):
        return "JSON"
    return None


def _renamed(exc: SchemaError, text: str) -> SchemaError:
    """``exc`` with the message ``text``: the same class and attributes."""
    renamed = copy.copy(exc)
    renamed.args = (text, *exc.args[1:])
    renamed.__cause__ = exc.__cause__
    return renamed


def _located(
    exc: SchemaError | SchemaNotFoundError, locate: Callable[[int], int] | None, position: int
) -> SchemaError | SchemaNotFoundError:
    """``exc`` of the key at ``position`` as the error of its batch's first message of that key."""
    return exc if locate is None else at_message(exc, locate(position))


def _raise_earliest(
    failed: Mapping[int, SchemaError | SchemaNotFoundError], locate: Callable[[int], int] | None
) -> NoReturn:
    """Raise the error of the key (position -> error) whose first message comes first in the batch
    (without ``locate``: the first key's), as the error of that message."""
    position = min(failed) if locate is None else min(failed, key=locate)
    exc = failed[position]
    raise _located(exc, locate, position) from exc.__cause__
