"""MessageDecoder: framed messages (or payloads with their ids) in, one Arrow batch out, in input order.

A decoder strips the registry prefix of every message with the wire kernel, looks each unseen
schema id up once, compiles one plan per writer schema (cached per (writer, reader) pair) and hands
all rows to the payload format in one call: each row picks the plan of its schema id, and every
plan writes into the same reader columns, so rows come back in input order without regrouping or
copying. With ``on_error="null"`` rows whose id is unknown or unreadable become error rows here.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .. import wire
from .._arrow import Chunk, binary_chunks
from .._cache import LRU
from .._unframe import PREFIX_SIZE, inflate_chunks, registry_key, row_keys, single_id, unframe_parts, wide
from ..errors import ErrorCode, SchemaError, SchemaNotFoundError, error_for, raise_for
from ..formats import format_of_model, get_format
from ..formats.base import Decoded, DecodePlan, PayloadFormat, Segment, check_on_error, errors_table
from ..registry.lookup import RegistrySource, fetch_schema, portable
from ._common import DEFAULT_CACHE_SIZE, ParsedSchema, latest_version, lone_subject

__all__ = ["Decoded", "MessageDecoder"]


@dataclass(frozen=True)
class _Resolved:
    """The plans of one batch: ``fmt`` (None when nothing defines the columns), one plan per schema
    id, and the ids whose rows are error rows: position -> (code, registry key, reason)."""

    fmt: PayloadFormat | None
    plans: list[DecodePlan]
    bad: dict[int, tuple[ErrorCode, Any, str]]


class _ReaderPlans:
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


def _finish(
    batch: pa.RecordBatch, errors: list[Any], wire_errors: list[tuple[Any, ...]], keep_going: bool, total: int
) -> pa.RecordBatch | Decoded:
    if not keep_going:
        if errors:
            code, index, offset, detail = errors[0]
            raise_for(code, index, offset, detail)
        if total and batch.num_rows != total:  # pragma: no cover - the kernel reports every stop
            raise AssertionError("decoded row count differs from the input")
        return batch
    merged = sorted(wire_errors + [(*e, str(error_for(*e))) for e in errors], key=lambda e: e[1])
    return Decoded(batch, errors_table(merged))


def _drop_bad_rows(
    resolved: _Resolved,
    plan_ids: np.ndarray,
    valid: np.ndarray | None,
    first_row: int,
    errors: list[tuple[Any, ...]],
) -> np.ndarray | None:
    """Turn the rows whose schema id is in ``resolved.bad`` into error rows: appended to ``errors``
    (code, index, offset 0, detail, message) and dropped from the returned validity mask."""
    bad_positions = np.fromiter(resolved.bad, dtype=np.int32, count=len(resolved.bad))
    hit = np.isin(plan_ids, bad_positions)
    if valid is not None:
        hit &= valid
    rows = np.flatnonzero(hit)
    if not len(rows):
        return valid
    for row in rows.tolist():
        code, key, reason = resolved.bad[int(plan_ids[row])]
        detail = key if isinstance(key, int) else 0
        index = first_row + row
        errors.append((code, index, 0, detail, str(error_for(code, index, 0, detail, schema_id=key, reason=reason))))
    out = np.ones(len(plan_ids), dtype=bool) if valid is None else valid.copy()
    out[rows] = False
    return out


def _no_columns(rows: int) -> pa.RecordBatch:
    """A batch of ``rows`` rows and no columns: what decodes when no schema defines the columns."""
    batch: pa.RecordBatch = pa.RecordBatch.from_struct_array(pa.nulls(rows, pa.struct([])))
    return batch


def _per_row_ids(values: Any) -> np.ndarray | list[Any]:
    """Per-row schema ids as int64 numpy (the common case) or a list (UUIDs, tuples, None)."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        if pa.types.is_integer(values.type) and values.null_count == 0:
            return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.int64)
        return list(values.to_pylist())
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        return values.astype(np.int64, copy=False)
    items = list(values)
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
        return np.asarray(items, dtype=np.int64)
    return items


def _newest_last(keys: list[Any]) -> list[Any]:
    """Distinct ids in sort order (the newest last), or as first seen when they do not sort."""
    try:
        return sorted(keys)
    except TypeError:
        return keys


class MessageDecoder:
    """Decode framed messages (registry prefix + payload) into Arrow, in input order.

    Parameters
    ----------
    registry : Mapping, registry client, RegistryConfig or str
        Where schema ids are looked up: a Mapping of id -> schema (text, decoded JSON, or a parsed
        schema), any object with ``get_schema(schema_id)`` (this package's registries,
        confluent-kafka's ``SchemaRegistryClient``), a :class:`~pulsar_codec.registry.RegistryConfig`,
        or an ``http(s)://`` URL or registry file path (the client is then built on first use).
        Ids are ``int``; ``uuid.UUID`` for the GUID protocols (a Mapping may also be keyed by the
        string form); ``(metadata_id, version)`` for Hortonworks protocol-1 messages. An id's
        schema is looked up once and kept: registries keep an id's schema immutable.
    protocol : wire.Protocol or str
        The prefix format (default Confluent: ``00`` + 4-byte id).
    reader_schema : schema, optional
        The schema every message is read as. Default: the newest writer schema of each batch
        (the highest schema id among its non-null messages; for GUIDs, which have no order, the
        highest GUID, so pass ``reader_schema`` when a GUID batch mixes schemas). A batch with no
        readable message (empty, only nulls, only error rows) has the reader's columns when one is
        known: ``reader_schema``, ``reader_subject``, or the registry's only schema or subject;
        else it has no columns (and still one row per message).
    reader_subject : str, optional
        Read every message as the latest version of this subject (looked up once per decoder, as
        confluent-kafka's ``use.latest.version``). Not with ``reader_schema``.
    on_error : {"raise", "null"}
        ``"raise"``: the first bad message raises (:class:`~pulsar_codec.errors.WireFormatError`, a
        payload error such as :class:`~pulsar_codec.errors.AvroDecodeError`, the registry's
        :class:`~pulsar_codec.errors.SchemaNotFoundError` for an unknown id, or
        :class:`~pulsar_codec.errors.SchemaError` for a writer schema the reader cannot read).
        ``"null"``: a bad message becomes a null row and :meth:`decode` returns :class:`Decoded`
        ``(batch, errors)`` (``errors``: ``index`` int64, ``code`` int32, ``offset`` int64 - inside
        the message for prefix errors, inside the payload for payload errors, 0 for schema errors -
        and ``message`` string); an unknown schema id is code ``SCHEMA_NOT_FOUND``, a writer schema
        the reader cannot read ``SCHEMA_UNRESOLVABLE``. Every row is accounted for: good rows plus
        error rows plus null messages equal the input rows. A registry that cannot be reached
        raises :class:`~pulsar_codec.errors.RegistryError` either way (a retry would succeed).
    format : str, optional
        The payload format (a registry ``schemaType``) when the registry does not say (a Mapping);
        default ``"AVRO"``. A registry that reports a different type for an id is an error.
    cache_size : int, default 256
        Entries kept in each cache (schemas by id; readers; plans per reader).

    Notes
    -----
    Thread-safe. Pickling keeps the configuration only (a client becomes its
    :class:`~pulsar_codec.registry.RegistryConfig`, a Mapping travels as it is), never the caches.
    """

    def __init__(
        self,
        registry: Any,
        *,
        protocol: Any = wire.CONFLUENT,
        reader_schema: Any = None,
        reader_subject: str | None = None,
        on_error: str = "raise",
        format: str | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        if reader_schema is not None and reader_subject is not None:
            raise ValueError("pass reader_schema or reader_subject, not both")
        self.protocol: wire.Protocol = wire.protocol_by_name(protocol)
        if format is None and reader_schema is not None:
            format = format_of_model(reader_schema)  # a parsed JSON reader reads JSON without format=
        self.reader_schema = reader_schema
        self.reader_subject = reader_subject
        self.on_error = on_error
        self._keep_going = check_on_error(on_error)
        self.format = None if format is None else get_format(format).name
        self.cache_size = int(cache_size)
        self._registry = RegistrySource(registry, create=False)
        self._schemas: LRU[Any, ParsedSchema] = LRU(self.cache_size)
        self._readers: LRU[tuple[str, str], _ReaderPlans] = LRU(self.cache_size)
        self._given_readers: LRU[str, ParsedSchema] = LRU(8)
        # decode_value's plan per schema id (a plain dict: one lookup per message; bounded below)
        self._value_plans: dict[Any, tuple[PayloadFormat, DecodePlan]] = {}
        self._lone_reader: tuple[ParsedSchema | None] | None = None

    @property
    def registry(self) -> Any:
        """The registry as given (a client, Mapping, RegistryConfig or string)."""
        return self._registry.given

    # -- schemas and plans -------------------------------------------------------------------

    def writer_schema(self, schema_id: Any) -> Any:
        """The parsed writer schema (the format's model) of ``schema_id``, looked up once.

        Raises
        ------
        SchemaNotFoundError
            The registry does not know the id.
        """
        return self._writer(schema_id).model

    def _writer(self, schema_id: Any) -> ParsedSchema:
        return self._schemas.get_or_make(schema_id, lambda: self._fetch(schema_id))

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
        model = fmt.parse(fetched.schema, references)
        return ParsedSchema(fmt, model, fmt.schema_key(model))

    def _given_reader(self, fmt: PayloadFormat) -> ParsedSchema:
        def parse() -> ParsedSchema:
            model = fmt.parse(self.reader_schema)
            return ParsedSchema(fmt, model, fmt.schema_key(model))

        return self._given_readers.get_or_make(fmt.name, parse)

    def _reader_plans(self, reader: ParsedSchema) -> _ReaderPlans:
        return self._readers.get_or_make(
            (reader.fmt.name, reader.key), lambda: _ReaderPlans(reader.fmt, reader, self.cache_size)
        )

    def _plans_for(self, keys: Sequence[Any]) -> tuple[PayloadFormat, list[DecodePlan]]:
        """The format and one plan per schema id in ``keys``; the first failure raises."""
        resolved = self._resolve(keys, tolerate=False)
        if resolved.fmt is None:
            raise SchemaError("no reader schema: the batch holds no non-null message; pass reader_schema")
        return resolved.fmt, resolved.plans

    def _resolve(self, keys: Sequence[Any], tolerate: bool) -> _Resolved:
        """One plan per schema id in ``keys`` (sorted; the last is the newest).

        With ``tolerate``, an id the registry does not know, or whose writer schema the reader
        cannot read, gets the reader's base plan and an entry in ``bad`` (its rows become error
        rows); otherwise the SchemaNotFoundError or SchemaError raises. A registry that cannot be
        reached raises either way: a later retry would succeed, so its rows are not bad data.
        """
        writers: list[ParsedSchema | None] = []
        bad: dict[int, tuple[ErrorCode, Any, str]] = {}
        for i, k in enumerate(keys):
            key = registry_key(k)
            try:
                writers.append(self._writer(key))
            except SchemaNotFoundError:
                if not tolerate:
                    raise
                writers.append(None)
                bad[i] = (ErrorCode.SCHEMA_NOT_FOUND, key, "")
            except SchemaError as exc:
                if not tolerate:
                    raise
                writers.append(None)
                bad[i] = (ErrorCode.SCHEMA_UNRESOLVABLE, key, str(exc))
        known = [w for w in writers if w is not None]
        if not tolerate and len({w.fmt.name for w in known}) > 1:
            raise SchemaError(
                f"one batch mixes payload formats {sorted({w.fmt.name for w in known})}: decode them separately"
            )
        reader = self._known_reader(known[0].fmt if known else None)
        if reader is None and known:
            reader = known[-1]
        if reader is None:
            reader = self._default_reader()
        if reader is None:  # no id readable and no reader given: nothing defines the columns
            return _Resolved(None, [], bad)
        plans = self._reader_plans(reader)
        out: list[DecodePlan] = []
        for i, w in enumerate(writers):
            if w is None:
                out.append(plans.base)
                continue
            try:
                if w.fmt.name != reader.fmt.name:
                    raise SchemaError(f"schema id {keys[i]} is a {w.fmt.name} schema; the reader is {reader.fmt.name}")
                out.append(plans.plan(w))
            except SchemaError as exc:
                if not tolerate:
                    raise
                out.append(plans.base)
                bad[i] = (ErrorCode.SCHEMA_UNRESOLVABLE, registry_key(keys[i]), str(exc))
        return _Resolved(reader.fmt, out or [plans.base], bad)

    def _known_reader(self, fmt: PayloadFormat | None) -> ParsedSchema | None:
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
        model = fmt.parse(fetched.schema, fetched.references or None)
        return ParsedSchema(fmt, model, fmt.schema_key(model))

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
                return self._writer(registry_key(next(iter(registry))))
            except (SchemaError, SchemaNotFoundError):
                return None
        subjects = lone_subject(registry)
        if subjects is None:
            return None
        try:
            return self._subject_reader(subjects)
        except (SchemaError, SchemaNotFoundError):
            return None

    @property
    def arrow_schema(self) -> pa.Schema | None:
        """The columns of every batch when ``reader_schema`` was given (None otherwise: each
        batch is then read as its newest writer schema)."""
        reader = self._known_reader(None)
        if reader is None:
            return None
        return self._reader_plans(reader).base.arrow_schema

    # -- decoding ----------------------------------------------------------------------------

    def decode(self, messages: Any) -> pa.RecordBatch | Decoded:
        """Decode framed messages with mixed schema ids into one batch, in input order.

        Parameters
        ----------
        messages : pa.Array, pa.ChunkedArray, Arrow PyCapsule producer or sequence of bytes / None
            Binary, large_binary, binary_view (or string) messages, such as a polars Series or an
            arro3 / nanoarrow array; null messages give null rows.

        Returns
        -------
        pa.RecordBatch, or Decoded with ``on_error="null"``

        Raises
        ------
        SchemaNotFoundError
            A schema id the registry does not know (whatever ``on_error`` says: it is not bad data).
        SchemaError
            A writer schema the reader schema cannot read.
        """
        keep_going = self._keep_going
        protocol = self.protocol
        chunks, total = binary_chunks(messages, native_offsets=True)
        wire_errors: list[tuple[Any, ...]] = []
        chunks = inflate_chunks(chunks, protocol, keep_going, wire_errors)  # zlib AWS Glue bodies
        single = single_id(chunks, protocol)
        if single is not None:
            # one schema id, every prefix valid: the payload format skips the fixed prefix itself
            resolved = self._resolve(single, keep_going)
            skip = PREFIX_SIZE[protocol.kind]
            segments = []
            for c in chunks:
                valid = c.validity
                if resolved.bad:  # the one id is unknown or unreadable: every message is an error row
                    ones = np.zeros(c.length, dtype=np.int32)
                    valid = _drop_bad_rows(resolved, ones, c.validity, c.row, wire_errors)
                segments.append(Segment(c.data, skip, c.offsets, valid, None))
        else:
            parts = [unframe_parts(c, protocol, keep_going, wire_errors) for c in chunks]
            keys = [row_keys(protocol, *p[:4]) for p in parts]
            live = [k if p[5] is None else k[p[5]] for k, p in zip(keys, parts)]
            unique = np.unique(np.concatenate(live)) if live else np.zeros(0, dtype=np.int64)
            resolved = self._resolve(list(unique), keep_going)
            segments = []
            for chunk, k, (_, _, _, _, starts, valid) in zip(chunks, keys, parts):
                plan_ids = None
                if len(resolved.plans) > 1 or resolved.bad:
                    plan_ids = np.searchsorted(unique, k).astype(np.int32)
                    if valid is not None:
                        plan_ids[~valid] = 0
                    if resolved.bad:
                        valid = _drop_bad_rows(resolved, plan_ids, valid, chunk.row, wire_errors)
                    if len(resolved.plans) == 1:
                        plan_ids = None
                segments.append(Segment(chunk.data, starts, wide(chunk).offsets[1:], valid, plan_ids))
        return self._run(resolved, segments, wire_errors, total)

    def _run(
        self, resolved: _Resolved, segments: list[Segment], wire_errors: list[tuple[Any, ...]], total: int
    ) -> pa.RecordBatch | Decoded:
        keep_going = self._keep_going
        if resolved.fmt is None:  # no readable message and no reader known: rows without columns
            return _finish(_no_columns(total), [], wire_errors, keep_going, total)
        batch, errors = resolved.fmt.decode(resolved.plans, segments, keep_going)
        return _finish(batch, errors, wire_errors, keep_going, total)

    def decode_payloads(self, payloads: Any, schema_ids: Any) -> pa.RecordBatch | Decoded:
        """Decode unframed payloads whose schema ids come separately (PIP-420 metadata, a header).

        Parameters
        ----------
        payloads : pa.Array, pa.ChunkedArray, Arrow PyCapsule producer or sequence of bytes / None
            Payload bodies without a wire prefix; null payloads give null rows.
        schema_ids : id, or a sequence / array of one id per payload
            One id for every row (an int, ``uuid.UUID`` or tuple), or per-row ids (a null id is
            allowed where the payload is null).

        Returns
        -------
        pa.RecordBatch, or Decoded with ``on_error="null"`` (offsets are inside the payload)
        """
        keep_going = self._keep_going
        chunks, total = binary_chunks(payloads)
        per_row = not isinstance(schema_ids, (int, np.integer, uuid.UUID, tuple, str)) and schema_ids is not None
        errors: list[tuple[Any, ...]] = []
        if not per_row:
            resolved = self._resolve([schema_ids], keep_going)
            segments = []
            for c in chunks:
                valid = c.validity
                if resolved.bad:
                    ones = np.zeros(c.length, dtype=np.int32)
                    valid = _drop_bad_rows(resolved, ones, c.validity, c.row, errors)
                segments.append(Segment(c.data, c.offsets[:-1], c.offsets[1:], valid, None))
        else:
            resolved, segments = self._per_row_segments(chunks, _per_row_ids(schema_ids), total, errors)
        return self._run(resolved, segments, errors, total)

    def decode_value(self, payload: Any, schema_id: Any = None) -> Any:
        """The Python value of one message, by the same plans and kernel as :meth:`decode`.

        Parameters
        ----------
        payload : bytes, bytearray, memoryview or None
            A framed message when ``schema_id`` is None, else an unframed payload (as for
            :meth:`decode_payloads`).
        schema_id : id, optional
            The payload's schema id when it comes separately (PIP-420 metadata, a header).

        Returns
        -------
        object
            The row :meth:`decode` would give for this message, as ``to_pylist()`` gives it: a dict
            for a record reader, the value itself for other readers; None for a None payload. The
            reader is ``reader_schema``, else the message's own writer schema.

        Raises
        ------
        WireFormatError, AvroDecodeError, SchemaNotFoundError, SchemaError
            As :meth:`decode` raises them for a batch holding only this message (index 0), whatever
            ``on_error`` says: one value has no error table to go to.
        """
        if payload is None:
            return None
        start = 0
        if schema_id is not None:
            key = schema_id
        elif self.protocol is wire.CONFLUENT and len(payload) >= 5 and payload[0] == 0:
            key = int.from_bytes(payload[1:5], "big")  # the common prefix, read without a kernel call
            start = 5
        else:
            key, body = self.protocol.unpack(payload)  # raises the wire error decode() raises
            payload, start = body, 0
        found = self._value_plans.get(key)
        if found is None:
            found = self._value_plan(key)
        if type(payload) is not bytes:
            payload = memoryview(payload).cast("B")
        return found[0].decode_value(found[1], payload, start)

    def _value_plan(self, key: Any) -> tuple[PayloadFormat, DecodePlan]:
        fmt, plans = self._plans_for([key])
        entry = (fmt, plans[0])
        if len(self._value_plans) >= self.cache_size:
            self._value_plans.clear()  # rare: more schema ids than the cache holds
        if self.cache_size:
            self._value_plans[key] = entry
        return entry

    def _per_row_segments(
        self, chunks: list[Chunk], ids: np.ndarray | list[Any], total: int, errors: list[tuple[Any, ...]]
    ) -> tuple[_Resolved, list[Segment]]:
        if len(ids) != total:
            raise ValueError(f"schema_ids has {len(ids)} entries for {total} payloads")
        valid = np.ones(total, dtype=bool)
        for c in chunks:
            if c.validity is not None:
                valid[c.row : c.row + c.length] = c.validity
        if isinstance(ids, np.ndarray):
            unique = np.unique(ids[valid])
            resolved = self._resolve(list(unique), self._keep_going)
            index = np.searchsorted(unique, ids).astype(np.int32) if len(unique) else np.zeros(total, np.int32)
            index[~valid] = 0
        else:
            missing = [i for i, (k, v) in enumerate(zip(ids, valid)) if v and k is None]
            if missing:
                raise ValueError(f"schema_ids has no id for payload {missing[0]}")
            keys = _newest_last(list(dict.fromkeys(k for k, v in zip(ids, valid) if v)))
            order = {k: i for i, k in enumerate(keys)}
            resolved = self._resolve(keys, self._keep_going)
            index = np.array([order[k] if v else 0 for k, v in zip(ids, valid)], dtype=np.int32)
        many = len(resolved.plans) > 1
        segments = []
        for c in chunks:
            rows = index[c.row : c.row + c.length]
            row_valid = c.validity
            if resolved.bad:
                row_valid = _drop_bad_rows(resolved, rows, c.validity, c.row, errors)
            segments.append(Segment(c.data, c.offsets[:-1], c.offsets[1:], row_valid, rows if many else None))
        return resolved, segments

    # -- pickling ----------------------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        reader = self.reader_schema
        if reader is not None and not isinstance(reader, (str, bytes, dict, list)) and self.format in (None, "AVRO"):
            fmt = get_format(self.format)
            reader = fmt.schema_text(fmt.parse(reader))  # a parsed Avro schema travels as its text
        # other formats' models travel as they are: they carry read options (JSON keep_extra, validate)
        return {
            "registry": portable(self._registry.given, type(self).__name__),
            "protocol": self.protocol.name,
            "reader_schema": reader,
            "reader_subject": self.reader_subject,
            "on_error": self.on_error,
            "format": self.format,
            "cache_size": self.cache_size,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        registry = state.pop("registry")
        self.__init__(registry, **state)  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"MessageDecoder({self._registry.given!r}, protocol={self.protocol.name}, on_error={self.on_error!r})"
