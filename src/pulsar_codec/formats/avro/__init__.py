"""Avro batch decoding straight into Apache Arrow, and the reverse.

``Decoder(reader_schema, writer_schema=None)`` parses the schemas and compiles the decode plan
once; ``decode(payloads)`` runs it over a whole batch of schemaless Avro bodies (a pyarrow binary,
large_binary or binary_view array, a ChunkedArray, or a list of bytes / None) and returns a
``pa.RecordBatch``:

- a record schema gives one column per field, any other schema one column named ``value``;
- types follow the mapping of the design (section 5): enums are ``dictionary<int32, string>`` with
  every symbol, ``["null", T]`` is a nullable ``T``, other unions are ``dense_union`` with one child
  per branch (type code = branch index), logical types map to decimal128/256, date32, time32/64,
  timestamp (``tz="UTC"`` for ``timestamp-*``, none for ``local-timestamp-*``) and
  month_day_nano_interval; unknown logical types decode as their underlying type;
- nested fields are nullable exactly when their Avro type admits null; **top-level columns are
  always nullable**, because any message may be null (a tombstone) and, with ``on_error="null"``,
  a bad message becomes a null row;
- a null payload gives a null row (every top-level column null for that row).

Errors in the bytes raise :class:`~pulsar_codec.errors.AvroDecodeError` with the message index
and the byte offset inside that message's payload. Avro booleans must be the byte 0 or 1; any
other byte is ``AVRO_BAD_BOOLEAN``. Bytes left after a complete record are
``AVRO_TRAILING_BYTES``.

Allocation safety: a length or block count can never reserve more than the remaining input can
hold. Items that occupy no bytes at all (``null``, empty records, ``fixed`` of size 0) are limited
to 1,048,576 per message across all its arrays and maps.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..._arrow import binary_chunks
from ...errors import raise_for
from ..base import Decoded, Segment, check_on_error, errors_table
from . import schema as schema
from .encoder import Encoder, schema_from_arrow
from .format import FORMAT, AvroFormat, AvroPlan, run
from .plan import build_layout, build_plan
from .schema import Schema, parse

__all__ = [
    "FORMAT",
    "AvroFormat",
    "AvroPlan",
    "Decoder",
    "Encoder",
    "Decoded",
    "parse",
    "Schema",
    "schema",
    "schema_from_arrow",
]


class Decoder:
    """Decode batches of schemaless Avro bodies written with one writer schema.

    Parameters
    ----------
    reader_schema : str, dict, list or Schema
        The schema to read as (JSON text, decoded JSON, or :func:`parse` output). It fixes the
        Arrow schema of the output.
    writer_schema : str, dict, list or Schema, optional
        The schema the bodies were written with, when it differs from the reader's; Avro schema
        resolution then applies (promotions, field matching by name and alias, skipped writer-only
        fields, defaults for reader-only fields, enum and union mapping).

    Raises
    ------
    SchemaError
        A malformed or recursive schema, or a writer schema the reader can never read (the message
        names the field path).
    """

    def __init__(self, reader_schema: Any, writer_schema: Any = None) -> None:
        self.reader = parse(reader_schema)
        self.writer = self.reader if writer_schema is None else parse(writer_schema)
        self.layout = build_layout(self.reader)
        self.plan = build_plan(self.writer, self.reader, self.layout)
        self._compiled = AvroPlan(self.layout, self.plan)

    @property
    def arrow_schema(self) -> pa.Schema:
        """The schema of every batch this decoder returns."""
        return self.layout.arrow_schema

    def decode(self, payloads: Any, *, on_error: str = "raise") -> pa.RecordBatch | Decoded:
        """Decode a batch of Avro bodies.

        Parameters
        ----------
        payloads : pa.Array, pa.ChunkedArray or sequence of bytes / None
            Binary, large_binary or binary_view (cast once) payloads; nulls give null rows.
        on_error : {"raise", "null"}
            ``"raise"``: the first bad payload raises. ``"null"``: bad payloads become null rows and
            a :class:`Decoded` ``(batch, errors)`` is returned instead of the batch.

        Returns
        -------
        pa.RecordBatch or Decoded

        Raises
        ------
        AvroDecodeError
            With ``on_error="raise"``, for the first bad payload (index and byte offset in the
            message).
        """
        keep_going = check_on_error(on_error)
        chunks, _ = binary_chunks(payloads)
        segments = [Segment(c.data, c.offsets[:-1], c.offsets[1:], c.validity, None) for c in chunks]
        errors, batch = run(self.layout, [self._compiled], segments, keep_going)
        if keep_going:
            return Decoded(batch, errors_table(errors))
        if errors:
            code, index, offset, detail = errors[0]
            raise_for(code, index, offset, detail)
        return batch

    def __repr__(self) -> str:
        return f"<avro.Decoder {self.arrow_schema.names}>"
