"""The interface one payload format implements, and the types the pipeline hands it.

A format turns a registry's schema text into its own schema model, compiles a decode plan for a
(writer, reader) pair, decodes groups of payload segments into Arrow, and encodes Arrow rows into
payloads. :mod:`pulsar_codec.pipeline` talks to formats only through :class:`PayloadFormat`, so a
new format is a new package registered in :mod:`pulsar_codec.formats`, with no pipeline change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

from .._kernels import _backend
from ..errors import error_for

__all__ = [
    "Encoded",
    "ENCODE_ERRORS_SCHEMA",
    "Decoded",
    "DecodePlan",
    "PayloadEncoder",
    "PayloadFormat",
    "PrefixMismatch",
    "RowError",
    "Segment",
    "check_on_error",
    "check_prefixes",
    "errors_table",
]

RowError = tuple[int, int, int, Any]
"""One bad payload: ``(code, index, offset, detail)``; ``index`` is the row in the whole input,
``offset`` the byte offset inside that row's payload and ``detail`` the value the error message
quotes (see :func:`pulsar_codec.errors.error_for`)."""


class Segment(NamedTuple):
    """One contiguous run of payloads a format decodes in a single pass.

    Attributes
    ----------
    data : pa.Buffer
        The bytes every row of the segment points into.
    starts : np.ndarray or int
        Start of each row's payload in ``data`` (one per row). An int ``k`` means "``k`` bytes after
        each row's message start": ``ends`` then holds the ``n + 1`` message offsets and row ``i`` is
        ``data[ends[i] + k:ends[i + 1]]`` (the form the one-schema fast path uses, with ``k`` the
        wire prefix size).
    ends : np.ndarray
        End of each row's payload (one per row), or the ``n + 1`` message offsets (see ``starts``).
    validity : np.ndarray or None
        Bool per row, False for a null row; None when every row is present.
    plan_ids : np.ndarray or None
        int32 per row: which of the plans passed to :meth:`PayloadFormat.decode` reads the row;
        None means plan 0 for every row.
    prefix : bytes or None
        With an int ``starts``: the ``starts`` bytes every non-null message must begin with (one
        schema id for the whole batch, seen in its first message); a format meeting a message that
        does not raises :class:`PrefixMismatch` (see :func:`check_prefixes`). None: the prefixes
        were checked before.
    """

    data: pa.Buffer
    starts: np.ndarray | int
    ends: np.ndarray
    validity: np.ndarray | None
    plan_ids: np.ndarray | None
    prefix: bytes | None = None

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``(starts, ends)`` as two int64 arrays of one entry per row, whichever form is stored."""
        if isinstance(self.starts, (int, np.integer)):
            offsets = np.asarray(self.ends, dtype=np.int64)
            return offsets[:-1] + int(self.starts), offsets[1:]
        return np.asarray(self.starts, dtype=np.int64), np.asarray(self.ends, dtype=np.int64)


class PrefixMismatch(Exception):
    """A message of a segment does not begin with the segment's ``prefix``: the batch does not
    have one schema id after all, and the pipeline decodes it again message by message. Raised
    by :meth:`PayloadFormat.decode`; never reaches users."""


def check_prefixes(segments: Sequence[Segment]) -> None:
    """Raise :class:`PrefixMismatch` unless every non-null message of ``segments`` begins with its
    segment's ``prefix``: the pipeline's check for formats whose kernels do not check it while
    decoding (``checks_prefixes`` False)."""
    kernels = _backend.active().wire
    for seg in segments:
        if seg.prefix is not None and isinstance(seg.starts, (int, np.integer)):
            if len(seg.prefix) != int(seg.starts):
                raise ValueError(f"a prefix of {len(seg.prefix)} bytes for a skip of {seg.starts}")
            if not kernels.same_bytes(seg.data, seg.ends, seg.validity, 0, seg.prefix):
                raise PrefixMismatch()


class Decoded(NamedTuple):
    """Result of a decode with ``on_error="null"``.

    Attributes
    ----------
    batch : pa.RecordBatch
        All rows in input order; a bad message is a null row.
    errors : pa.Table
        One row per bad message: ``index`` (int64, row in the input), ``code`` (int32,
        :class:`~pulsar_codec.errors.ErrorCode`), ``offset`` (int64, byte offset inside that message,
        or inside its payload for payload errors) and ``message`` (string, the text the exception
        would have had).
    """

    batch: pa.RecordBatch
    errors: pa.Table


@runtime_checkable
class DecodePlan(Protocol):
    """A compiled (writer, reader) plan; it knows the Arrow schema of what it decodes."""

    @property
    def arrow_schema(self) -> pa.Schema:
        """The columns of every batch this plan decodes into."""
        ...


@runtime_checkable
class PayloadEncoder(Protocol):
    """Encodes Arrow rows with one writer schema."""

    def encode(self, batch: Any) -> pa.Array:
        """One payload per row of ``batch`` (a RecordBatch or Table) as a binary array."""
        ...

    def encode_value(self, value: Any) -> bytes:
        """One payload for one Python value (a dict for a record, as the decoder's rows give it)."""
        ...


@runtime_checkable
class PayloadFormat(Protocol):
    """What one payload format (Avro, JSON, Protobuf, ...) provides to the pipeline.

    ``name`` is the registry's ``schemaType`` (``"AVRO"``, ``"JSON"``, ``"PROTOBUF"``). A *model*
    is the format's parsed schema; the pipeline never looks inside one.

    A format whose schemas hold several types a payload can be of (Protobuf: the messages of a
    ``.proto``) also has ``select(model, path=None, name=None)``, the model narrowed to the type a
    Confluent message-index ``path`` (a tuple; None: the schema's own type) or a full ``name``
    gives, and ``type_name(model)``, the full name of a narrowed model's type. The pipeline then
    reads each row as the type its prefix names and keeps rows of other types out of the output.

    A format whose derived schemas (:meth:`model_from_arrow`) tell nullable fields apart also has
    ``nullable_fields(model)``, the top-level fields of a model that admit null: a schema derived
    for a subject keeps those of the subject's latest version nullable.

    A format that can tell which top-level fields a decoded row always has a value in also has
    ``non_null_fields(model)``: the columns no good row of ``model`` leaves null (its decoder makes
    a row whose value there is null or missing an error row). Spark's decoded struct declares them
    non-nullable, as Spark's own ``from_avro`` does, which spares the JVM a null check per value.
    Without it every top-level column is nullable.

    A format some of whose values a registry's serializers write without the format's own framing
    (Avro: Confluent's top-level ``bytes``, Hortonworks' ``bytes`` and ``string``, raw) has
    ``raw_heads(model, protocol)``, the protocol bytes (a message's first byte) under which they
    are raw, and ``written_raw(model, protocol)``, whether the messages this package frames (and
    payloads without a prefix) are; ``with_lengths(segment, rows)`` and ``lengthed(body)``, which
    give such rows the format's form before decoding; and ``raw_encoder(model)``, which writes
    them so.

    A format whose :meth:`decode` checks the ``prefix`` of framed segments itself, while it reads
    the rows (raising :class:`PrefixMismatch`), says so with ``checks_prefixes = True``; for any
    other the pipeline checks them (:func:`check_prefixes`, in the decoding thread) before it
    calls :meth:`decode`.
    """

    name: str

    def parse(self, schema: Any, references: Sequence[Any] | None = None) -> Any:
        """The schema model of ``schema`` (text, decoded JSON, or a model, returned as it is).

        ``references`` are the registry's schema references, for formats that use them.
        """
        ...

    def schema_key(self, model: Any) -> str:
        """A canonical text of ``model``: equal keys mean the same schema (the cache key)."""
        ...

    def schema_text(self, model: Any) -> str:
        """The text to register ``model`` under in a registry."""
        ...

    def plan(self, writer: Any, reader: Any, base: Any = None) -> DecodePlan:
        """Compile the plan that reads ``writer`` payloads as ``reader``.

        ``base`` is an earlier plan with the same reader: the new plan then writes into the same
        columns, so both can run in one :meth:`decode` call.
        """
        ...

    def decode(
        self, plans: Sequence[Any], segments: Sequence[Segment], keep_going: bool
    ) -> tuple[pa.RecordBatch, list[RowError]]:
        """Decode every row of ``segments`` (each row with ``plans[plan_id]``) into one batch.

        All plans share one reader (built with ``base``). Without ``keep_going`` decoding stops at
        the first bad row, and the batch holds the rows before it; with it, a bad row is a null
        row. Returns the batch and the errors in row order.
        """
        ...

    def decode_value(self, plan: Any, data: Any, start: int = 0) -> Any:
        """The Python value of the one payload ``data[start:]`` (bytes or a byte memoryview).

        Runs the plan and kernel :meth:`decode` runs; the value equals that row of the batch as
        ``to_pylist()`` gives it. A bad payload raises what :meth:`decode` reports for it (same
        class, code and offset; index 0).
        """
        ...

    def encoder(self, model: Any) -> PayloadEncoder:
        """An encoder writing payloads with ``model`` as the writer schema."""
        ...

    def model_from_arrow(self, schema: pa.Schema, name: str = "Record", nulls: Mapping[str, bool] | None = None) -> Any:
        """The writer schema model for rows of ``schema``.

        ``nulls`` says which top-level columns actually hold nulls (when given, the others are
        written as non-null). Formats may honour a schema of their own kept in the Arrow metadata.
        """
        ...


def check_on_error(on_error: str) -> bool:
    """True for ``"null"`` (keep going past bad rows), False for ``"raise"``; ValueError otherwise."""
    if on_error not in ("raise", "null"):
        raise ValueError(f"on_error must be 'raise' or 'null', got {on_error!r}")
    return on_error == "null"


class Encoded(NamedTuple):
    """Result of an encode with ``on_error="null"``.

    Attributes
    ----------
    messages : pa.Array
        One message per input row; a row that could not be encoded is a null (as a null message,
        a tombstone, is: ``errors`` tells them apart).
    errors : pa.Table
        One row per row that could not be encoded: ``index`` (int64, row in the input) and
        ``message`` (string, the text the EncodeError would have had).
    """

    messages: pa.Array
    errors: pa.Table


ENCODE_ERRORS_SCHEMA = pa.schema(
    [pa.field("index", pa.int64(), nullable=False), pa.field("message", pa.string(), nullable=False)]
)
"""The ``errors`` table of :class:`Encoded`."""


_ERRORS_SCHEMA = pa.schema(
    [
        pa.field("index", pa.int64(), nullable=False),
        pa.field("code", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("message", pa.string(), nullable=False),
    ]
)


def errors_table(errors: Sequence[tuple[Any, ...]], context: Mapping[str, Any] | None = None) -> pa.Table:
    """The ``on_error="null"`` report: one row per bad message (index, code, offset, message).

    Entries are ``(code, index, offset, detail)``, or ``(code, index, offset, detail, message)``
    with the message already written; ``context`` goes to :func:`~pulsar_codec.errors.error_for`.
    """
    ctx = dict(context or {})
    messages = [e[4] if len(e) > 4 else str(error_for(e[0], e[1], e[2], e[3], **ctx)) for e in errors]
    return pa.Table.from_arrays(
        [
            pa.array([e[1] for e in errors], pa.int64()),
            pa.array([int(e[0]) for e in errors], pa.int32()),
            pa.array([e[2] for e in errors], pa.int64()),
            pa.array(messages, pa.string()),
        ],
        schema=_ERRORS_SCHEMA,
    )
