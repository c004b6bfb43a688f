"""Avro behind the format interface of :mod:`pulsar_codec.formats.base`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..._kernels import _backend
from ...errors import raise_for
from ..base import PrefixMismatch, RowError, Segment
from . import raw
from ._assemble import assemble, nbytes
from ._pyvalues import row_shapes
from .encoder import Encoder, schema_from_arrow
from .plan import Layout, build_layout, build_plan
from .schema import Schema, admits_null, parse, to_json

__all__ = ["AvroFormat", "AvroPlan", "FORMAT", "finish", "run"]


@dataclass(frozen=True)
class AvroPlan:
    """A compiled Avro decode program for one (writer, reader) pair and the reader's columns.

    Attributes
    ----------
    layout : Layout
        The reader's column builders; plans of one reader share it.
    program : tuple
        The flat op list and its child table, as the kernels take them.
    """

    layout: Layout
    program: tuple[list[tuple[Any, ...]], list[int]]
    # the kernel twins' prepared forms of the program, by kernel module (made on first use)
    prepared: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def arrow_schema(self) -> pa.Schema:
        """The columns this plan decodes into."""
        return self.layout.arrow_schema

    def kernel_program(self, kernels: Any) -> Any:
        """The program as ``kernels`` (an Avro kernel twin) runs it, prepared once per twin."""
        found = self.prepared.get(kernels)
        if found is None:
            found = self.prepared[kernels] = kernels.Program(*self.program)
        return found


def kernel_layout(layout: Layout, kernels: Any) -> Any:
    """``layout`` as ``kernels`` (an Avro kernel twin) takes it, with its row shapes; prepared once."""
    found = layout.prepared.get(kernels)
    if found is None:
        found = layout.prepared[kernels] = kernels.Layout(layout.specs, row_shapes(layout))
    return found


def _size_hints(outputs: list[Any]) -> list[tuple[float, float]] | None:
    """Bytes per row of every builder, so the next batch of this layout reserves once."""
    rows = outputs[0][0] if outputs else 0
    if rows < 1024:  # too few rows to say much about the next batch
        return None
    return [
        (0.0 if b1 is None else nbytes(b1) / rows, 0.0 if b2 is None else nbytes(b2) / rows) for _, _, b1, b2 in outputs
    ]


def run(
    layout: Layout, plans: Sequence[AvroPlan], segments: Sequence[Any], keep_going: bool
) -> tuple[list[RowError], pa.RecordBatch]:
    """Run the active kernel over ``segments`` and assemble the batch; returns (errors, batch).
    The kernel checks the segments' ``prefix`` itself (:class:`PrefixMismatch` when one differs)."""
    kernels = _backend.active().avro
    programs = [p.kernel_program(kernels) for p in plans]
    errors, outputs = kernels.decode(kernel_layout(layout, kernels), programs, segments, keep_going, layout.hints)
    if errors is None or outputs is None:
        raise PrefixMismatch()
    return errors, finish(layout, outputs)


def finish(layout: Layout, outputs: list[Any]) -> pa.RecordBatch:
    """The batch of the builders a kernel filled for ``layout`` (noting their sizes for the next batch)."""
    hints = _size_hints(outputs)
    if hints is not None:
        layout.hints = hints
    return assemble(layout, outputs)


class AvroFormat:
    """Avro payloads (registry ``schemaType`` ``"AVRO"``); the instance is :data:`FORMAT`."""

    name = "AVRO"
    checks_prefixes = True  # the kernel compares each row's prefix as it reads the row

    def parse(self, schema: Any, references: Sequence[Any] | None = None) -> Schema:
        """The parsed :class:`~pulsar_codec.formats.avro.schema.Schema` (a parsed one as it is).

        Named types from ``references`` are not resolved: the schema must be self-contained.
        """
        return parse(schema)

    def schema_key(self, model: Schema) -> str:
        """Canonical JSON of the schema (sorted keys, no spaces)."""
        return json.dumps(to_json(model), sort_keys=True, separators=(",", ":"))

    def schema_text(self, model: Schema) -> str:
        """The JSON text registered for the schema."""
        return json.dumps(to_json(model))

    def plan(self, writer: Schema, reader: Schema, base: AvroPlan | None = None) -> AvroPlan:
        """Compile the resolution of ``writer`` to ``reader`` (sharing ``base``'s columns if given)."""
        layout = build_layout(reader) if base is None else base.layout
        return AvroPlan(layout, build_plan(writer, reader, layout))

    def decode(
        self, plans: Sequence[AvroPlan], segments: Sequence[Segment], keep_going: bool
    ) -> tuple[pa.RecordBatch, list[RowError]]:
        """Decode all ``segments`` in one kernel call (see :class:`~pulsar_codec.formats.base.PayloadFormat`)."""
        if not plans:
            raise ValueError("decode needs at least one plan")
        layout = plans[0].layout
        if any(p.layout is not layout for p in plans):
            raise ValueError("plans decoded together must share one reader layout (build them with base=)")
        errors, batch = run(layout, plans, segments, keep_going)
        return batch, errors

    def decode_value(self, plan: AvroPlan, data: Any, start: int = 0) -> Any:
        """The Python value of the one payload ``data[start:]``, by the same kernel as :meth:`decode`.

        The value equals the batch row's ``to_pylist()`` value (a dict for a record reader; a
        non-record reader's value itself). A bad payload raises the error :meth:`decode` reports
        for it (same class, code and offset; index 0).
        """
        kernels = _backend.active().avro
        layout = plan.layout.prepared.get(kernels) or kernel_layout(plan.layout, kernels)
        program = plan.prepared.get(kernels) or plan.kernel_program(kernels)
        error, value = kernels.decode_row(layout, program, data, start, len(data))
        if error is not None:
            raise_for(*error)
        return value

    def encoder(self, model: Schema) -> Encoder:
        """An :class:`~pulsar_codec.formats.avro.Encoder` for ``model``."""
        return Encoder(model)

    def raw_heads(self, model: Schema, protocol: Any) -> frozenset[int]:
        """The protocol bytes (first bytes of a message) under which ``protocol``'s serializers
        write a value of ``model`` raw, without its Avro length (see :mod:`.raw`)."""
        return raw.raw_heads(model, protocol)

    def written_raw(self, model: Schema, protocol: Any) -> bool:
        """Whether the messages this package frames with ``protocol`` carry ``model``'s values raw
        (Confluent's top-level ``bytes``; Hortonworks' ``bytes`` and ``string``: see :mod:`.raw`)."""
        return raw.written_raw(model, protocol)

    def with_lengths(self, segment: Segment, rows: Any) -> Segment:
        """``segment`` with an Avro length given to the raw bodies of ``rows`` (see :mod:`.raw`)."""
        return raw.with_lengths(segment, rows)

    def lengthed(self, body: bytes) -> bytes:
        """One raw body as Avro binary (see :mod:`.raw`)."""
        return raw.lengthed(body)

    def raw_encoder(self, model: Schema) -> raw.RawEncoder:
        """An encoder writing ``model``'s values raw (see :mod:`.raw`)."""
        return raw.RawEncoder(Encoder(model))

    def model_from_arrow(
        self, schema: pa.Schema, name: str = "Record", nulls: Mapping[str, bool] | None = None
    ) -> Schema:
        """The schema in the ``b"avro.schema"`` metadata if there is one, else one derived from Arrow."""
        meta = schema.metadata or {}
        if b"avro.schema" in meta:
            return parse(meta[b"avro.schema"].decode("utf-8"))
        return schema_from_arrow(schema, name, None if nulls is None else dict(nulls))

    def nullable_fields(self, model: Schema) -> frozenset[str]:
        """The fields of a record ``model`` that admit null (none for another schema)."""
        return frozenset(f.name for f in getattr(model, "fields", ()) if admits_null(f.type))

    def non_null_fields(self, model: Schema) -> frozenset[str]:
        """The fields of a record ``model`` whose type admits no null (none for another schema:
        its one column is null for a null root)."""
        return frozenset(f.name for f in getattr(model, "fields", ()) if not admits_null(f.type))

    def __repr__(self) -> str:
        return "<payload format AVRO>"


FORMAT = AvroFormat()
"""The Avro format instance :func:`pulsar_codec.formats.get_format` returns for ``"AVRO"``."""
