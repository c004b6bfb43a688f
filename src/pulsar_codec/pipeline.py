"""Framed messages in, Arrow out, and back: :class:`MessageDecoder` and :class:`MessageEncoder`.

Every framed decode in the package runs here. A decoder strips the registry prefix of every
message with the wire kernel, looks each unseen schema id up once, compiles one plan per writer
schema (cached per (writer, reader) pair) and hands all rows to the payload format in one call:
each row picks the plan of its schema id, and every plan writes into the same reader columns, so
rows come back in input order without regrouping or copying.

The payload format (Avro today) is found by the registry's ``schemaType`` through
:func:`pulsar_codec.formats.get_format`; this module never names a format. Caches belong to one
decoder or encoder (bounded LRU, thread-safe); pickling keeps only the configuration, so the same
object rebuilds itself on a Spark executor or in a worker process.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from . import wire
from ._arrow import Chunk, as_table_like, binary_chunks
from ._cache import LRU
from ._unframe import PREFIX_SIZE, registry_key, row_keys, single_id, unframe_parts, wide
from .errors import EncodeError, ErrorCode, SchemaError, SchemaNotFoundError, error_for, raise_for
from .formats import DEFAULT_FORMAT, get_format
from .formats.base import Decoded, DecodePlan, PayloadEncoder, PayloadFormat, Segment, check_on_error, errors_table
from .registry.lookup import FetchedSchema, RegistrySource, fetch_schema, portable

__all__ = ["Decoded", "MessageDecoder", "MessageEncoder", "decode", "encode"]

_DEFAULT_CACHE_SIZE = 256


@dataclass(frozen=True)
class _Schema:
    """A parsed schema and what the caches need of it."""

    fmt: PayloadFormat
    model: Any
    key: str


@dataclass(frozen=True)
class _Resolved:
    """The plans of one batch: ``fmt`` (None when nothing defines the columns), one plan per schema
    id, and the ids whose rows are error rows: position -> (code, registry key, reason)."""

    fmt: PayloadFormat | None
    plans: list[DecodePlan]
    bad: dict[int, tuple[ErrorCode, Any, str]]


class _ReaderPlans:
    """The plans of one reader: a base plan (reader as writer) and one per writer, sharing columns."""

    def __init__(self, fmt: PayloadFormat, reader: _Schema, size: int) -> None:
        self.fmt = fmt
        self.reader = reader
        self.base = fmt.plan(reader.model, reader.model)
        self._plans: LRU[str, DecodePlan] = LRU(size)

    def plan(self, writer: _Schema) -> DecodePlan:
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


def latest_version(registry: Any, subject: str) -> tuple[Any, FetchedSchema]:
    """The id and schema of ``subject``'s latest version, from this package's registries
    (``get_latest``) or confluent-kafka's client (``get_latest_version``)."""
    get_latest = getattr(registry, "get_latest", None)
    if callable(get_latest):
        found = get_latest(subject)
        return found.id, FetchedSchema(found.schema, found.schema_type)
    get_latest_version = getattr(registry, "get_latest_version", None)
    if callable(get_latest_version):
        found = get_latest_version(subject)
        schema = found.schema
        kind = getattr(schema, "schema_type", None)
        references = tuple(getattr(schema, "references", None) or ())
        return found.schema_id, FetchedSchema(schema.schema_str, kind.upper() if kind else None, references)
    raise TypeError(f"the registry cannot list a subject's versions ({type(registry).__name__}); pass reader_schema")


def _lookup_id(registry: Any, subject: str, text: str, schema_type: str) -> Any:
    """The id ``subject`` holds ``text`` under, without registering (SchemaNotFoundError if none)."""
    lookup = getattr(registry, "lookup", None)
    if callable(lookup):
        return lookup(subject, text, schema_type).id
    lookup_schema = getattr(registry, "lookup_schema", None)
    if callable(lookup_schema):  # confluent-kafka's client
        from confluent_kafka.schema_registry import Schema

        return lookup_schema(subject, Schema(text, schema_type)).schema_id
    raise TypeError(f"the registry cannot look a schema up by subject ({type(registry).__name__})")


def _subject_record_name(registry: Any, subject: str | None, fmt: PayloadFormat) -> str:
    """The full name of ``subject``'s latest record schema, else a name made from the subject."""
    if subject is None:
        return "Record"
    if registry is not None and not isinstance(registry, Mapping):
        try:
            _, fetched = latest_version(registry, subject)
            model = fmt.parse(fetched.schema, fetched.references or None)
            name = getattr(model, "name", None)
            if getattr(model, "type", None) == "record" and isinstance(name, str):
                namespace = getattr(model, "namespace", None)
                return f"{namespace}.{name}" if namespace else name
        except (SchemaNotFoundError, SchemaError, TypeError):
            pass
        except Exception as exc:  # confluent-kafka's SchemaRegistryError for an unknown subject
            if getattr(exc, "http_status_code", None) != 404:
                raise
    base = subject.removesuffix("-value").removesuffix("-key")
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "Record"
    return "_" + name if name[0].isdigit() else name


def lone_subject(registry: Any) -> str | None:
    """The registry's only subject, or None (several, none, or a registry that cannot list them)."""
    lister = getattr(registry, "list_subjects", None) or getattr(registry, "get_subjects", None)
    if not callable(lister):
        return None
    subjects = list(lister())
    return str(subjects[0]) if len(subjects) == 1 else None


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
        cache_size: int = _DEFAULT_CACHE_SIZE,
    ) -> None:
        if reader_schema is not None and reader_subject is not None:
            raise ValueError("pass reader_schema or reader_subject, not both")
        self.protocol: wire.Protocol = wire.protocol_by_name(protocol)
        self.reader_schema = reader_schema
        self.reader_subject = reader_subject
        self.on_error = on_error
        self._keep_going = check_on_error(on_error)
        self.format = None if format is None else get_format(format).name
        self.cache_size = int(cache_size)
        self._registry = RegistrySource(registry)
        self._schemas: LRU[Any, _Schema] = LRU(self.cache_size)
        self._readers: LRU[tuple[str, str], _ReaderPlans] = LRU(self.cache_size)
        self._given_readers: LRU[str, _Schema] = LRU(8)
        # decode_value's plan per schema id (a plain dict: one lookup per message; bounded below)
        self._value_plans: dict[Any, tuple[PayloadFormat, DecodePlan]] = {}
        self._lone_reader: tuple[_Schema | None] | None = None

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

    def _writer(self, schema_id: Any) -> _Schema:
        return self._schemas.get_or_make(schema_id, lambda: self._fetch(schema_id))

    def _fetch(self, schema_id: Any) -> _Schema:
        fetched = fetch_schema(self._registry.get(), schema_id)
        kind = fetched.schema_type
        if kind is not None and self.format is not None and kind != self.format:
            raise SchemaError(f"schema id {schema_id} is a {kind} schema; this decoder reads {self.format}")
        fmt = get_format(kind or self.format)
        model = fmt.parse(fetched.schema, fetched.references or None)
        return _Schema(fmt, model, fmt.schema_key(model))

    def _given_reader(self, fmt: PayloadFormat) -> _Schema:
        def parse() -> _Schema:
            model = fmt.parse(self.reader_schema)
            return _Schema(fmt, model, fmt.schema_key(model))

        return self._given_readers.get_or_make(fmt.name, parse)

    def _reader_plans(self, reader: _Schema) -> _ReaderPlans:
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
        writers: list[_Schema | None] = []
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

    def _known_reader(self, fmt: PayloadFormat | None) -> _Schema | None:
        """The reader every batch uses when one is configured: ``reader_schema`` or the latest
        version of ``reader_subject``."""
        if self.reader_schema is not None:
            return self._given_reader(fmt or get_format(self.format))
        if self.reader_subject is not None:
            return self._given_readers.get_or_make("subject", lambda: self._subject_reader(self.reader_subject))
        return None

    def _subject_reader(self, subject: Any) -> _Schema:
        schema_id, fetched = latest_version(self._registry.get(), subject)
        fmt = get_format(fetched.schema_type or self.format)
        model = fmt.parse(fetched.schema, fetched.references or None)
        return _Schema(fmt, model, fmt.schema_key(model))

    def _default_reader(self) -> _Schema | None:
        """The reader of a batch with no readable message and no configured reader: the registry's
        only schema (a Mapping of one id) or only subject's latest version; else None (the batch
        then has no columns)."""
        if self._lone_reader is None:
            self._lone_reader = (self._find_lone_reader(),)
        return self._lone_reader[0]

    def _find_lone_reader(self) -> _Schema | None:
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
        if reader is not None and not isinstance(reader, (str, bytes, dict, list)):
            fmt = get_format(self.format)
            reader = fmt.schema_text(fmt.parse(reader))  # a parsed schema travels as its text
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
    protocol : wire.Protocol or str
    schema : schema, optional
        The writer schema. Default: from each batch (a schema kept in its Arrow metadata, such as
        Avro's ``b"avro.schema"``, else one derived from the Arrow schema).
    schema_id : id, optional
        Write this id without registering; the writer schema is ``schema``, or the registry's
        schema of this id.
    format : str, optional
        The payload format (registry ``schemaType``), default ``"AVRO"``.
    use_latest : bool, default False
        Write with the subject's latest version (its schema and id, looked up once per encoder),
        as confluent-kafka's ``use.latest.version``; the rows must fit it.
    auto_register : bool, default True
        Register the writer schema under ``subject`` (the registry checks compatibility). False:
        only look its id up (confluent-kafka's ``auto.register.schemas=False``); a schema the
        subject does not hold raises :class:`~pulsar_codec.errors.SchemaNotFoundError`.

    A writer schema derived from Arrow is a record named after the subject: the full name of the
    subject's latest record when the subject has one (so a new version stays compatible), else the
    subject without its ``-value`` / ``-key`` suffix (``orders-value`` -> ``orders``), made a valid
    Avro name.

    Notes
    -----
    Thread-safe; ids and compiled encoders are cached per instance. Pickling keeps the
    configuration only, as for :class:`MessageDecoder`.
    """

    def __init__(
        self,
        registry: Any,
        subject: str | None = None,
        *,
        protocol: Any = wire.CONFLUENT,
        schema: Any = None,
        schema_id: Any = None,
        format: str | None = None,
        use_latest: bool = False,
        auto_register: bool = True,
    ) -> None:
        given = [n for n, v in (("schema", schema), ("schema_id", schema_id)) if v is not None]
        if use_latest and given:
            raise ValueError(f"use_latest=True takes the subject's latest version; do not pass {given[0]}=")
        if use_latest and subject is None:
            raise ValueError("use_latest=True needs a subject")
        self.subject = subject
        self.protocol: wire.Protocol = wire.protocol_by_name(protocol)
        self.schema = schema
        self.schema_id = schema_id
        self.use_latest = bool(use_latest)
        self.auto_register = bool(auto_register)
        self._latest_id: Any = None
        self._record_name: str | None = None
        self.format = get_format(format).name
        self._fmt = get_format(self.format)
        self._registry = RegistrySource(registry)
        self._fixed: _Schema | None = None
        self._lock = threading.Lock()
        self._ids: LRU[str, Any] = LRU(_DEFAULT_CACHE_SIZE)
        self._encoders: LRU[str, PayloadEncoder] = LRU(_DEFAULT_CACHE_SIZE)
        self._value_writer: tuple[bytes, PayloadEncoder] | None = None

    @property
    def registry(self) -> Any:
        """The registry as given."""
        return self._registry.given

    def _schema(self, model: Any) -> _Schema:
        return _Schema(self._fmt, model, self._fmt.schema_key(model))

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
        prefix = wire.frame(pa.array([b""], pa.binary()), schema_id, self.protocol)[0].as_py()
        encoder = self._encoders.get_or_make(writer.key, lambda: self._fmt.encoder(writer.model))
        self._value_writer = (prefix, encoder)
        return self._value_writer

    def _writer(self, data: Any) -> _Schema:
        """The writer schema for ``data``: the fixed one, the registry's for ``schema_id``, or derived."""
        if self._fixed is not None:
            return self._fixed
        if self.use_latest:
            assert self.subject is not None  # checked in __init__
            schema_id, fetched = latest_version(self._registry.get(), self.subject)
            model = self._fmt.parse(fetched.schema, fetched.references or None)
            with self._lock:
                self._latest_id = schema_id
                self._fixed = self._schema(model)
            return self._fixed
        if self.schema is not None or self.schema_id is not None:
            if self.schema is not None:
                model = self._fmt.parse(self.schema)
            else:
                fetched = fetch_schema(self._registry.get(), self.schema_id)
                model = self._fmt.parse(fetched.schema, fetched.references or None)
            with self._lock:
                self._fixed = self._schema(model)
            return self._fixed
        nulls = {name: data.column(name).null_count > 0 for name in data.schema.names}
        return self._schema(self._fmt.model_from_arrow(data.schema, name=self._derived_name(), nulls=nulls))

    def _derived_name(self) -> str:
        """The record name of a schema derived from Arrow (see the class notes)."""
        if self._record_name is None:
            self._record_name = _subject_record_name(self._registry.get(), self.subject, self._fmt)
        return self._record_name

    def _id_for(self, writer: _Schema) -> Any:
        if self.schema_id is not None:
            return self.schema_id
        if self.use_latest:
            return self._latest_id
        return self._ids.get_or_make(writer.key, lambda: self._register(writer))

    def _register(self, writer: _Schema) -> Any:
        registry = self._registry.get()
        text = self._fmt.schema_text(writer.model)
        if not self.auto_register and not isinstance(registry, Mapping):
            if self.subject is None:
                raise ValueError("looking a schema up needs a subject")
            return _lookup_id(registry, self.subject, text, self._fmt.name)
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
            else:
                found = registry.register(self.subject, text, schema_type=self._fmt.name)
            return getattr(found, "schema_id", found)
        if isinstance(registry, Mapping):
            for k in list(registry):
                try:
                    if self._fmt.schema_key(self._fmt.parse(fetch_schema(registry, k).schema)) == writer.key:
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

    def encode_payloads(self, batch: Any) -> tuple[Any, pa.Array]:
        """Encode every row without a wire prefix.

        Parameters
        ----------
        batch : pa.RecordBatch, pa.Table or Arrow PyCapsule stream producer (a polars DataFrame)

        Returns
        -------
        (schema id, pa.BinaryArray)
            The id the payloads were written under, and one payload per row.

        Raises
        ------
        EncodeError
            A value that does not fit the writer schema.
        """
        data = as_table_like(batch)
        writer = self._writer(data)
        schema_id = self._id_for(writer)
        encoder = self._encoders.get_or_make(writer.key, lambda: self._fmt.encoder(writer.model))
        return schema_id, encoder.encode(data)

    def encode(self, batch: Any) -> pa.Array:
        """Encode every row as a framed message (``protocol`` prefix + payload).

        Parameters
        ----------
        batch : pa.RecordBatch, pa.Table or Arrow PyCapsule stream producer (a polars DataFrame)

        Returns
        -------
        pa.BinaryArray
            One framed message per row (a null where the row is a null message).
        """
        schema_id, payloads = self.encode_payloads(batch)
        if isinstance(schema_id, (int, np.integer)):
            schema_id = int(schema_id)
        framed: pa.Array = wire.frame(payloads, schema_id, self.protocol)
        return framed

    def __getstate__(self) -> dict[str, Any]:
        schema = self.schema
        if schema is not None and not isinstance(schema, (str, bytes, dict, list)):
            schema = self._fmt.schema_text(self._fmt.parse(schema))
        return {
            "registry": portable(self._registry.given, type(self).__name__),
            "subject": self.subject,
            "protocol": self.protocol.name,
            "schema": schema,
            "schema_id": self.schema_id,
            "format": self.format,
            "use_latest": self.use_latest,
            "auto_register": self.auto_register,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        registry = state.pop("registry")
        self.__init__(registry, **state)  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"MessageEncoder({self._registry.given!r}, {self.subject!r}, protocol={self.protocol.name})"


# -- the module functions ------------------------------------------------------------------------------

# decode() keeps a few decoders, so a loop of pc.decode calls on one registry parses and plans once.
# Each entry holds its registry (and reader schema) strongly and is matched by identity: an id()
# cannot be reused by another object while the entry lives.
_DECODERS: OrderedDict[tuple[Any, ...], tuple[Any, Any, MessageDecoder]] = OrderedDict()
_DECODERS_SIZE = 16
_DECODERS_LOCK = threading.Lock()


def _reader_token(reader_schema: Any) -> Any:
    """A key equal for equal reader schemas given as text or JSON; else the object's identity."""
    if reader_schema is None or isinstance(reader_schema, (str, bytes)):
        return reader_schema
    if isinstance(reader_schema, (dict, list)):
        try:
            return ("json", json.dumps(reader_schema, sort_keys=True))
        except (TypeError, ValueError):
            pass
    return ("id", id(reader_schema))


def _decoder_for(registry: Any, protocol: Any, reader_schema: Any, on_error: str) -> MessageDecoder:
    proto = wire.protocol_by_name(protocol)
    token = _reader_token(reader_schema)
    by_identity = isinstance(token, tuple) and token[0] == "id"
    key = (id(registry), proto.name, token, on_error)
    with _DECODERS_LOCK:
        hit = _DECODERS.get(key)
        if hit is not None and hit[0] is registry and (hit[1] is reader_schema or not by_identity):
            _DECODERS.move_to_end(key)
            return hit[2]
    decoder = MessageDecoder(registry, protocol=proto, reader_schema=reader_schema, on_error=on_error)
    with _DECODERS_LOCK:
        _DECODERS[key] = (registry, reader_schema, decoder)
        while len(_DECODERS) > _DECODERS_SIZE:
            _DECODERS.popitem(last=False)
    return decoder


def decode(
    messages: Any,
    registry: Any,
    *,
    protocol: Any = wire.CONFLUENT,
    reader_schema: Any = None,
    on_error: str = "raise",
) -> pa.RecordBatch | Decoded:
    """Decode framed messages with mixed schema ids into one RecordBatch, in input order.

    The same as ``MessageDecoder(registry, protocol=..., reader_schema=..., on_error=...)
    .decode(messages)`` (see :class:`MessageDecoder` for every parameter). The last few decoders
    are kept, keyed by the identity of ``registry`` and ``reader_schema``, so repeated calls
    parse and plan once.

    Returns
    -------
    pa.RecordBatch or Decoded
    """
    check_on_error(on_error)
    return _decoder_for(registry, protocol, reader_schema, on_error).decode(messages)


def encode(
    batch: Any,
    registry: Any,
    subject: str,
    *,
    protocol: Any = wire.CONFLUENT,
    schema: Any = None,
    schema_id: Any = None,
    use_latest: bool = False,
    auto_register: bool = True,
) -> pa.Array:
    """Encode Arrow rows as framed messages; the reverse of :func:`decode`.

    The same as ``MessageEncoder(registry, subject, ...).encode(batch)`` (see
    :class:`MessageEncoder` for every parameter). The writer schema is ``schema``; or the
    subject's latest version with ``use_latest=True``; or the registry's schema of ``schema_id``;
    else the one in the batch's ``b"avro.schema"`` metadata, else one derived from the Arrow schema
    and named after the subject's record. It is registered under ``subject`` (or added to a mutable
    Mapping registry) unless ``auto_register=False``, which only looks its id up.

    Returns
    -------
    pa.BinaryArray
        One framed message per row.
    """
    encoder = MessageEncoder(
        registry,
        subject,
        protocol=protocol,
        schema=schema,
        schema_id=schema_id,
        use_latest=use_latest,
        auto_register=auto_register,
    )
    return encoder.encode(batch)
