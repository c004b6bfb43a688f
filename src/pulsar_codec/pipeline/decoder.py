"""MessageDecoder: framed messages (or payloads with their ids) in, one Arrow batch out, in input order.

A decoder strips the registry prefix of every message with the wire kernel, looks each unseen
schema id up once, compiles one plan per writer schema (cached per (writer, reader) pair) and hands
all rows to the payload format in one call: each row picks the plan of its schema id, and every
plan writes into the same reader columns, so rows come back in input order without regrouping or
copying. With ``on_error="null"`` rows whose id is unknown or unreadable become error rows here.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, Self

import numpy as np
import pyarrow as pa

from .. import wire
from .._arrow import Chunk, binary_chunks
from .._kernels import _backend
from .._unframe import inflate_chunks, registry_key, row_keys, single_id, unframe_parts, wide
from ..errors import (
    DecodeError,
    ErrorCode,
    SchemaError,
    SchemaNotFoundError,
    WireFormatError,
)
from ..formats import format_of_model, get_format
from ..formats.base import (
    Decoded,
    DecodePlan,
    PayloadFormat,
    PrefixMismatch,
    RowError,
    Segment,
    check_on_error,
    check_prefixes,
)
from ..registry.lookup import RegistrySource, portable
from . import _rows
from ._common import DEFAULT_CACHE_SIZE, ParsedSchema
from ._resolver import Pathed, Resolved, SchemaResolver
from ._rows import (
    MIN_ROWS_PER_THREAD as MIN_ROWS_PER_THREAD,  # importable from here, as before the helpers moved
)
from ._rows import (
    _concat,
    _distinct,
    _drop_bad_rows,
    _finish,
    _first_keyed_row,
    _first_rows,
    _first_valid_row,
    _heads,
    _lengthed,
    _metadata_ids,
    _newest_last,
    _no_columns,
    _per_row_ids,
    _split_rows,
    _unshifted,
    _with_paths,
)

__all__ = ["Decoded", "MessageDecoder"]


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
        The prefix format. Default: Confluent's (``00`` + 4-byte id), followed by the Protobuf
        message-index path (``CONFLUENT_PROTOBUF``) when ``format="PROTOBUF"`` or when the
        registry says a batch's schemas are Protobuf.
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
        :class:`~pulsar_codec.errors.SchemaError` for a writer schema the reader cannot read; those
        two name the batch's first message of that id in ``.index`` and ``(message i)``).
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
    message : str, optional
        Protobuf: the full name of the message type every row is read as (``shop.v1.Order``).
        Default: the type of the first non-null message. A schema holds several message types, and
        a row names its type by the message-index path of its prefix (``CONFLUENT_PROTOBUF``) or,
        without one, is the schema's own (root) message; rows of another type than the output's
        are error rows of code ``SCHEMA_OTHER_MESSAGE`` (with ``on_error="raise"``, a SchemaError
        whose ``.index`` is the first such row).
    cache_size : int, default 256
        Entries kept in each cache (schemas by id; readers; plans per reader).
    threads : int, default 1
        Decode a batch of at least :data:`MIN_ROWS_PER_THREAD` rows per thread on up to this many
        threads (the kernels release the GIL); ``0`` means one per CPU core. The output is the
        same as with one thread, errors included.

    Notes
    -----
    Thread-safe. Pickling keeps the configuration only (a client becomes its
    :class:`~pulsar_codec.registry.RegistryConfig`, a Mapping travels as it is), never the caches.

    Who owns the registry client: a client (or Mapping) passed in stays the caller's, and the
    decoder never closes it. A client the decoder builds itself from a URL, file path or
    RegistryConfig (on first use; also on a Spark executor, from the configuration an unpickled
    decoder carries) is the decoder's: :meth:`close`, or leaving a ``with MessageDecoder(...) as
    decoder:`` block, closes it (and the decoder's threads); a decoder dropped unclosed closes it
    when it is garbage collected, or at interpreter exit. :func:`pulsar_codec.decode` keeps its
    last 16 decoders; one it drops closes its client that way once no call is still using it.
    """

    def __init__(
        self,
        registry: Any,
        *,
        protocol: Any = None,
        reader_schema: Any = None,
        reader_subject: str | None = None,
        on_error: str = "raise",
        format: str | None = None,
        message: str | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        threads: int = 1,
    ) -> None:
        if reader_schema is not None and reader_subject is not None:
            raise ValueError("pass reader_schema or reader_subject, not both")
        # a defaulted Confluent prefix is read as the Protobuf one for a batch whose schemas turn
        # out Protobuf: decided batch by batch, so one decoder (pc.decode's, per registry) reads
        # Avro and JSON batches after Protobuf ones
        self._protocol_auto = protocol is None
        if protocol is None:
            protocol = (
                wire.CONFLUENT_PROTOBUF if format is not None and format.upper() == "PROTOBUF" else wire.CONFLUENT
            )
        self.protocol: wire.Protocol = wire.protocol_by_name(protocol)
        if format is None and reader_schema is not None:
            format = format_of_model(reader_schema)  # a parsed JSON reader reads JSON without format=
        self.reader_schema = reader_schema
        self.reader_subject = reader_subject
        self.on_error = on_error
        self._keep_going = check_on_error(on_error)
        self.format = None if format is None else get_format(format).name
        self.message = message
        self.cache_size = int(cache_size)
        if int(threads) < 0:
            raise ValueError(f"threads must be >= 0 (0: one per core), got {threads}")
        self.threads = int(threads) or (os.cpu_count() or 1)
        self._pool: ThreadPoolExecutor | None = None  # made on the first batch worth splitting
        self._registry = RegistrySource(registry, create=False, owner=self)
        self._resolver = SchemaResolver(
            self._registry,
            format=self.format,
            message=message,
            reader_schema=reader_schema,
            reader_subject=reader_subject,
            cache_size=self.cache_size,
        )
        # decode_value's plan per schema id (a plain dict: one lookup per message; bounded below)
        self._value_plans: dict[Any, tuple[PayloadFormat, DecodePlan, frozenset[int], bool]] = {}

    @property
    def registry(self) -> Any:
        """The registry as given (a client, Mapping, RegistryConfig or string)."""
        return self._registry.given

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the registry client this decoder built (from a URL, path or RegistryConfig) and
        stop its threads; a client or Mapping passed in is left open (it is the caller's). Call it
        when no decode is running; a later decode builds a new client."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        self._registry.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

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
        return self._resolver.writer(schema_id)

    def _resolve(
        self,
        keys: Sequence[Any],
        tolerate: bool,
        first: int | None = None,
        locate: Callable[[int], int] | None = None,
        protocol: wire.Protocol | None = None,
    ) -> Resolved:
        """The plans of ``keys`` (framed with ``protocol``, default :attr:`protocol`); ``locate`` maps
        a key's position to the batch's first message of it, which a raised SchemaNotFoundError /
        SchemaError then names (``.index``)."""
        return self._resolver.resolve(keys, protocol or self.protocol, tolerate, first, locate)

    @property
    def arrow_schema(self) -> pa.Schema | None:
        """The columns of every batch when ``reader_schema`` was given (None otherwise: each
        batch is then read as its newest writer schema)."""
        return self._resolver.arrow_schema()

    @property
    def non_null_columns(self) -> frozenset[str]:
        """The columns of :attr:`arrow_schema` that every good row has a value in: the reader
        schema's top-level fields that admit no null, for formats that tell them
        (``non_null_fields``); empty without a configured reader. The batch's own fields stay
        nullable (an error row is null in every column)."""
        return self._resolver.non_null_columns()

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
        DecodeError, SchemaNotFoundError, SchemaError
            With ``on_error="raise"``, the error of the batch's first bad message, whatever is bad
            in it: its prefix (WireFormatError), its schema id (unknown: SchemaNotFoundError;
            unreadable as the reader: SchemaError) or its body (AvroDecodeError, ...); ``.index``
            names it. With ``on_error="null"`` these are error rows instead.
        RegistryError
            Either way, when the registry cannot answer (unreachable, or an error status other
            than "not found"): the batch is not bad data, a retry may succeed.
        """
        chunks, total = binary_chunks(messages, native_offsets=True)
        return self._decode_chunks(chunks, total)

    def _protobuf_ids(self, keys: Sequence[Any], protocol: wire.Protocol) -> bool:
        """Before resolving a batch under a defaulted Confluent prefix: True when the first id the
        registry knows is a Protobuf schema, whose Confluent prefix holds a message-index path: the
        batch is then unframed again as ``CONFLUENT_PROTOBUF``, its rows read by their paths."""
        if not (self._protocol_auto and protocol is wire.CONFLUENT):
            return False
        for k in keys:
            try:
                writer = self._writer(registry_key(k))
            except (SchemaNotFoundError, SchemaError):
                continue
            return writer.fmt.name == "PROTOBUF"
        return False

    def _protobuf_prefix(self, resolved: Resolved, protocol: wire.Protocol) -> bool:
        """True when a batch unframed with a defaulted Confluent prefix resolved to Protobuf
        schemas: it is then unframed again as ``CONFLUENT_PROTOBUF``."""
        return (
            self._protocol_auto
            and protocol is wire.CONFLUENT
            and resolved.fmt is not None
            and resolved.fmt.name == "PROTOBUF"
        )

    def _decode_chunks(
        self, chunks: list[Chunk], total: int, protocol: wire.Protocol | None = None
    ) -> pa.RecordBatch | Decoded:
        """One batch of framed messages, unframed with ``protocol`` (default :attr:`protocol`)."""
        keep_going = self._keep_going
        protocol = protocol or self.protocol
        wire_errors: list[tuple[Any, ...]] = []
        try:
            chunks = inflate_chunks(chunks, protocol, keep_going, wire_errors)  # zlib AWS Glue bodies
        except WireFormatError as exc:
            if exc.index:  # on_error="raise": an earlier message's error comes first (see _decode_general)
                self._decode_chunks(_first_rows(chunks, exc.index), exc.index, protocol)
            raise
        single = single_id(chunks, protocol)
        if single is not None:
            # the first message's schema id (and for Protobuf message-index path), shared by the last:
            # the payload format checks every other prefix while it decodes, and skips it
            if self._protobuf_ids(single.ids, protocol):
                return self._decode_chunks(chunks, total, wire.CONFLUENT_PROTOBUF)
            single_keys = single.ids if single.path is None else [Pathed(k, single.path) for k in single.ids]
            segments = [Segment(c.data, single.skip, c.offsets, c.validity, None, single.prefix) for c in chunks]
            try:
                try:
                    resolved = self._resolve(
                        single_keys, keep_going, locate=lambda _: _first_valid_row(chunks), protocol=protocol
                    )
                except (SchemaNotFoundError, SchemaError):
                    check_prefixes(segments)  # the error is the batch's only when no message is worse off
                    raise
                if self._protobuf_prefix(resolved, protocol):
                    return self._decode_chunks(chunks, total, wire.CONFLUENT_PROTOBUF)
                if resolved.bad:  # the one id is unknown or unreadable: every message is an error row
                    check_prefixes(segments)
                    segments = [
                        seg._replace(validity=self._all_bad(resolved, c, wire_errors))
                        for seg, c in zip(segments, chunks)
                    ]
                heads = [_heads(c) for c in chunks] if resolved.raw_heads else None
                return self._run(resolved, segments, wire_errors, total, heads)
            except PrefixMismatch:
                pass  # another id further in: the batch is taken apart message by message below
        return self._decode_general(chunks, total, wire_errors, protocol)

    def _all_bad(self, resolved: Resolved, chunk: Chunk, wire_errors: list[tuple[Any, ...]]) -> np.ndarray | None:
        """The validity of a chunk of the one-id path whose id the registry cannot read: every
        message an error row (reported in ``wire_errors``)."""
        ones = np.zeros(chunk.length, dtype=np.int32)
        return _drop_bad_rows(resolved, ones, chunk.validity, chunk.row, wire_errors)

    def _decode_general(
        self, chunks: list[Chunk], total: int, wire_errors: list[tuple[Any, ...]], protocol: wire.Protocol
    ) -> pa.RecordBatch | Decoded:
        """Decode a batch unframed message by message (several ids, bad prefixes)."""
        keep_going = self._keep_going
        bad_prefix: WireFormatError | None = None
        try:
            parts = [unframe_parts(c, protocol, keep_going, wire_errors) for c in chunks]
        except WireFormatError as exc:
            if not exc.index:
                raise
            # on_error="raise": a message before this one may be bad too, and its error comes first.
            # The batch is read as a whole (the bad prefixes set aside), so its reader is the one
            # on_error="null" picks: the newest id of the batch, not of the messages before this one
            bad_prefix = exc
            parts = [unframe_parts(c, protocol, True, []) for c in chunks]
        keys = [row_keys(protocol, *p[:4]) for p in parts]
        paths = None
        if protocol.protobuf:
            keys, paths = _with_paths(keys, [p[6] for p in parts])
        live = [k if p[5] is None else k[p[5]] for k, p in zip(keys, parts)]
        unique = _distinct(live)
        first = next((int(np.searchsorted(unique, k[0])) for k in live if len(k)), None)
        unique_keys: list[Any] = list(unique)
        if paths is not None and unique.dtype.names is not None and "p" in unique.dtype.names:
            unique_keys = [Pathed(u["k"], paths[int(u["p"])]) for u in unique_keys]
        elif paths is not None:  # one path for every row
            unique_keys = [Pathed(u, paths[0] if paths else None) for u in unique_keys]
        if self._protobuf_ids(list(unique), protocol):
            return self._decode_chunks(chunks, total, wire.CONFLUENT_PROTOBUF)
        located = [(c.row, k, p[5]) for c, k, p in zip(chunks, keys, parts)]
        resolved, schema_error = self._resolve_raising_later(
            unique_keys, first, lambda j: _first_keyed_row(located, unique, j), protocol
        )
        pending: SchemaError | SchemaNotFoundError | WireFormatError | None = schema_error
        if bad_prefix is not None and (schema_error is None or bad_prefix.index < (schema_error.index or 0)):
            pending = bad_prefix
        if self._protobuf_prefix(resolved, protocol):
            return self._decode_chunks(chunks, total, wire.CONFLUENT_PROTOBUF)
        segments = []
        for chunk, k, (_, _, _, _, starts, valid, _) in zip(chunks, keys, parts):
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
        heads = [_heads(c) for c in chunks] if resolved.raw_heads else None
        return self._run(resolved, segments, wire_errors, total, heads, pending)

    def _resolve_raising_later(
        self,
        keys: Sequence[Any],
        first: int | None,
        locate: Callable[[int], int],
        protocol: wire.Protocol | None = None,
    ) -> tuple[Resolved, SchemaError | SchemaNotFoundError | None]:
        """:meth:`_resolve`, and with ``on_error="raise"`` the schema error of a message that is not
        the batch's first: ``(plans with its id's rows set aside, the error)``. :meth:`_run` then
        raises it unless a message before it is bad too (the first bad message's error wins)."""
        try:
            return self._resolve(keys, self._keep_going, first, locate, protocol), None
        except (SchemaNotFoundError, SchemaError) as exc:
            if self._keep_going or not exc.index:
                raise
            return self._resolve(keys, True, first, locate, protocol), exc

    def _run(
        self,
        resolved: Resolved,
        segments: list[Segment],
        wire_errors: list[tuple[Any, ...]],
        total: int,
        heads: list[np.ndarray] | None = None,
        pending: SchemaError | SchemaNotFoundError | WireFormatError | None = None,
    ) -> pa.RecordBatch | Decoded:
        """Decode ``segments`` with the plans of ``resolved``; ``heads``: the first byte of each
        framed message per segment (None: payloads without a prefix), which says the raw rows.
        ``pending``: the error of a bad prefix or schema id to raise (``on_error="raise"``), unless
        an earlier row's body is bad too."""
        if pending is not None:
            assert pending.index is not None
            try:
                self._run(resolved, segments, wire_errors, total, heads)
            except DecodeError as exc:
                if exc.index < pending.index:
                    raise
            raise pending
        keep_going = self._keep_going
        if resolved.fmt is None:  # no readable message and no reader known: rows without columns
            return _finish(_no_columns(total), [], wire_errors, keep_going, total)
        fmt, plans = resolved.fmt, resolved.plans
        added = None
        if resolved.raw_heads:
            segments, added = _lengthed(fmt, segments, resolved, heads)

        def decode(part: list[Segment]) -> tuple[pa.RecordBatch, list[RowError]]:
            if not getattr(fmt, "checks_prefixes", False):
                check_prefixes(part)  # here, so a batch split among threads checks its parts side by side
            return fmt.decode(plans, part, keep_going)

        parts = _split_rows(segments, total, self.threads)
        if len(parts) == 1:
            batch, errors = decode(segments)
            return _finish(batch, _unshifted(errors, added), wire_errors, keep_going, total)
        pool = self._workers(total)
        assert pool is not None
        backend = _backend.active().name  # the caller's (a test's ``_backend.use``): a per-thread choice

        def decode_on_worker(part: list[Segment]) -> tuple[pa.RecordBatch, list[RowError]]:
            with _backend.use(backend):
                return decode(part)

        results = list(pool.map(lambda part: decode_on_worker(part[1]), parts))
        errors = []
        for (first, _), (_, part_errors) in zip(parts, results):
            errors += [(code, first + index, offset, detail) for code, index, offset, detail in part_errors]
            if part_errors and not keep_going:
                break  # the first bad row of the earliest part with one is the one a single pass meets
        batches = [batch for batch, _ in results]
        errors = _unshifted(errors, added)
        if not keep_going and errors:
            return _finish(batches[0], errors, wire_errors, keep_going, total)
        return _finish(_concat(batches, pool), errors, wire_errors, keep_going, total)

    def _workers(self, total: int) -> ThreadPoolExecutor | None:
        """This decoder's threads when a batch of ``total`` rows is split among them, else None.
        Kept from batch to batch: starting threads for every batch costs more than small ones take."""
        # read from _rows at call time, the one threshold _split_rows also reads (tests lower it there)
        if self.threads < 2 or total < 2 * _rows.MIN_ROWS_PER_THREAD:
            return None
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="pulsar-codec-decode")
        return self._pool

    def decode_payloads(self, payloads: Any, schema_ids: Any) -> pa.RecordBatch | Decoded:
        """Decode unframed payloads whose schema ids come separately (PIP-420 metadata, a header).

        Parameters
        ----------
        payloads : pa.Array, pa.ChunkedArray, Arrow PyCapsule producer or sequence of bytes / None
            Payload bodies without a wire prefix; null payloads give null rows.
        schema_ids : id, or a sequence / array of one id per payload
            One id for every row (an int, ``uuid.UUID`` or tuple), or per-row ids (a null id is
            allowed where the payload is null). PIP-420 ``MessageMetadata.schema_id`` bytes (an
            optional ``FF`` magic byte, then a big-endian id of 1 to 8 bytes) are read as the
            integer id they hold, one value or a binary array / sequence of them.

        Returns
        -------
        pa.RecordBatch, or Decoded with ``on_error="null"`` (offsets are inside the payload)

        Raises
        ------
        DecodeError, SchemaNotFoundError, SchemaError
            With ``on_error="raise"``, as :meth:`decode` does: the error of the first bad row. A
            non-null payload whose id is None (or PIP-420 bytes holding no id) is bad data, as an
            id the registry does not know: SchemaNotFoundError naming the row in ``.index``
            (with ``on_error="null"``, an error row of code ``SCHEMA_NOT_FOUND``).
        ValueError
            ``schema_ids`` holds another number of ids than there are payloads.
        """
        keep_going = self._keep_going
        schema_ids = _metadata_ids(schema_ids)
        chunks, total = binary_chunks(payloads)
        per_row = not isinstance(schema_ids, (int, np.integer, uuid.UUID, tuple, str)) and schema_ids is not None
        errors: list[tuple[Any, ...]] = []
        if not per_row:
            resolved = self._resolve([schema_ids], keep_going, locate=lambda _: _first_valid_row(chunks))
            segments = []
            for c in chunks:
                valid = c.validity
                if resolved.bad:
                    ones = np.zeros(c.length, dtype=np.int32)
                    valid = _drop_bad_rows(resolved, ones, c.validity, c.row, errors)
                segments.append(Segment(c.data, c.offsets[:-1], c.offsets[1:], valid, None))
            pending = None
        else:
            resolved, segments, pending = self._per_row_segments(chunks, _per_row_ids(schema_ids), total, errors)
        return self._run(resolved, segments, errors, total, pending=pending)

    def decode_value(self, payload: Any, schema_id: Any = None, *, protocol_byte: int | None = None) -> Any:
        """The Python value of one message, by the same plans and kernel as :meth:`decode`.

        Parameters
        ----------
        payload : bytes, bytearray, memoryview or None
            A framed message when ``schema_id`` is None, else an unframed payload (as for
            :meth:`decode_payloads`).
        schema_id : id, optional
            The payload's schema id when it comes separately (PIP-420 metadata, a header).
        protocol_byte : int, optional
            With ``schema_id``: the first byte of the framed message ``payload`` was cut from,
            when known (a Hortonworks protocol byte), which says whether a top-level Avro
            ``bytes`` / ``string`` was written raw; default: as this package frames them.

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
        return self._decode_value(payload, schema_id, protocol_byte, self.protocol)

    def _decode_value(self, payload: Any, schema_id: Any, protocol_byte: int | None, protocol: wire.Protocol) -> Any:
        original = payload
        start = 0
        if schema_id is not None:
            key = schema_id
        elif protocol is wire.CONFLUENT and len(payload) >= 5 and payload[0] == 0:
            key = int.from_bytes(payload[1:5], "big")  # the common prefix, read without a kernel call
            start = 5
        elif protocol.protobuf:
            key, indexes, body = protocol.unpack_indexes(payload)
            key = Pathed(key, tuple(indexes))
            payload, start = body, 0
        else:
            key, body = protocol.unpack(payload)  # raises the wire error decode() raises
            payload, start = body, 0
        found = self._value_plans.get((protocol.name, key))
        if found is None:
            found = self._value_plan(key, protocol)
        if self._protobuf_prefix_of(found[0], protocol):
            # its Confluent prefix holds a message-index path: read it as CONFLUENT_PROTOBUF
            return self._decode_value(original, schema_id, protocol_byte, wire.CONFLUENT_PROTOBUF)
        fmt, plan, raw_heads, raw_unframed = found
        head = original[0] if schema_id is None else protocol_byte
        if raw_unframed if head is None else head in raw_heads:
            # written without its Avro length (format raw_heads): given one to read it
            written = bytes(payload[start:])
            lengthed: bytes = fmt.lengthed(written)  # type: ignore[attr-defined]
            try:
                return fmt.decode_value(plan, lengthed, 0)
            except DecodeError as exc:  # an offset in the body as written, not in the lengthed copy
                raise exc.at_offset(max(exc.offset - (len(lengthed) - len(written)), 0)) from None
        if type(payload) is not bytes:
            payload = memoryview(payload).cast("B")
        return fmt.decode_value(plan, payload, start)

    def _protobuf_prefix_of(self, fmt: PayloadFormat, protocol: wire.Protocol) -> bool:
        """True when a message read with a defaulted Confluent prefix has a Protobuf schema."""
        return self._protocol_auto and protocol is wire.CONFLUENT and fmt.name == "PROTOBUF"

    def _value_plan(self, key: Any, protocol: wire.Protocol) -> tuple[PayloadFormat, DecodePlan, frozenset[int], bool]:
        resolved = self._resolver.plans_for([key], protocol)
        assert resolved.fmt is not None
        entry = (resolved.fmt, resolved.plans[0], resolved.raw_heads.get(0, frozenset()), 0 in resolved.raw_unframed)
        if len(self._value_plans) >= self.cache_size:
            self._value_plans.clear()  # rare: more schema ids than the cache holds
        if self.cache_size:
            self._value_plans[(protocol.name, key)] = entry
        return entry

    def _per_row_segments(
        self, chunks: list[Chunk], ids: np.ndarray | list[Any], total: int, errors: list[tuple[Any, ...]]
    ) -> tuple[Resolved, list[Segment], SchemaError | SchemaNotFoundError | None]:
        if len(ids) != total:
            raise ValueError(f"schema_ids has {len(ids)} entries for {total} payloads")
        valid = np.ones(total, dtype=bool)
        for c in chunks:
            if c.validity is not None:
                valid[c.row : c.row + c.length] = c.validity
        dropped = False  # rows without an id, made error rows
        if isinstance(ids, np.ndarray):
            unique = np.unique(ids[valid])
            resolved, pending = self._resolve_raising_later(
                list(unique), None, lambda j: _first_keyed_row([(0, ids, valid)], unique, j)
            )
            index = np.searchsorted(unique, ids).astype(np.int32) if len(unique) else np.zeros(total, np.int32)
            index[~valid] = 0
        else:
            missing = [i for i, (k, v) in enumerate(zip(ids, valid)) if v and k is None]
            for i in missing:  # an error row, as for an id the registry does not know
                dropped = True
                valid[i] = False
                text = f"payload {i} has no schema id (message {i}, byte 0)"
                errors.append((ErrorCode.SCHEMA_NOT_FOUND, i, 0, 0, text))
            keys = _newest_last(list(dict.fromkeys(k for k, v in zip(ids, valid) if v)))
            order = {k: i for i, k in enumerate(keys)}
            resolved, pending = self._resolve_raising_later(
                keys, None, lambda j: next(i for i, k in enumerate(ids) if valid[i] and k == keys[j])
            )
            if missing and not self._keep_going and (pending is None or missing[0] < (pending.index or 0)):
                # on_error="raise": the error of that row, unless an earlier row's body is bad (_run)
                pending = SchemaNotFoundError(f"payload {missing[0]} has no schema id (message {missing[0]})")
                pending.index = missing[0]
            index = np.array([order[k] if v else 0 for k, v in zip(ids, valid)], dtype=np.int32)
        many = len(resolved.plans) > 1
        segments = []
        for c in chunks:
            rows = index[c.row : c.row + c.length]
            row_valid = valid[c.row : c.row + c.length].copy() if dropped else c.validity
            if resolved.bad:
                row_valid = _drop_bad_rows(resolved, rows, row_valid, c.row, errors)
            segments.append(Segment(c.data, c.offsets[:-1], c.offsets[1:], row_valid, rows if many else None))
        return resolved, segments, pending

    # -- pickling ----------------------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        reader = self.reader_schema
        if reader is not None and not isinstance(reader, (str, bytes, dict, list)) and self.format in (None, "AVRO"):
            fmt = get_format(self.format)
            reader = fmt.schema_text(fmt.parse(reader))  # a parsed Avro schema travels as its text
        # other formats' models travel as they are: they carry read options (JSON keep_extra, validate)
        return {
            "registry": portable(self._registry.given, type(self).__name__),
            "protocol": None if self._protocol_auto else self.protocol.name,
            "reader_schema": reader,
            "reader_subject": self.reader_subject,
            "on_error": self.on_error,
            "format": self.format,
            "message": self.message,
            "cache_size": self.cache_size,
            "threads": self.threads,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        registry = state.pop("registry")
        self.__init__(registry, **state)  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"MessageDecoder({self._registry.given!r}, protocol={self.protocol.name}, on_error={self.on_error!r})"
