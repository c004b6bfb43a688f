"""Protobuf payloads behind the format interface of :mod:`pulsar_codec.formats.base` (decoding).

The reader message's mapping (:mod:`.mapping`) gives a transcode program and its Avro shadow schema,
whose Avro plan (the shadow read as itself) names the column builders. Decoding is one pass, as for
JSON: the Protobuf kernel (``_backend.active().protobuf.decode``) reads every payload once, following
the program, into the Avro decoder's column builders, which become the batch as an Avro batch would
(the pure twin transcodes each payload to its Avro binary form and runs the Avro kernel on those
bytes: the same builders); then :mod:`._finish` turns enum numbers into dictionaries and Struct
values into JSON text. Protobuf reads fields by number, so the program comes from the reader message
alone; the writer only has to be Protobuf too (which message a row holds is the pipeline's business:
Confluent's message indexes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from google.protobuf.descriptor import Descriptor

from ..._kernels import _backend
from ..._kernels.defs import ZERO_SIZE_ITEM_LIMIT
from ...errors import ErrorCode, SchemaError, raise_for
from ..avro.format import AvroPlan, finish, kernel_layout
from ..avro.plan import build_plan
from ..base import RowError, Segment
from . import schema as pb_schema
from ._finish import finish_batch, row_shapes
from .mapping import ENUMS_AS, ProtobufLayout, ProtobufMapping, build_protobuf_layout, map_message

__all__ = ["FORMAT", "ProtobufFormat", "ProtobufPlan"]

_MAX_NUMBER = (1 << 29) - 1
_WIRE_TYPES = ("varint", "64-bit", "length-delimited", "start-group", "end-group", "32-bit", "6", "7")


def _tag_words(tag: int) -> str:
    return f"{tag >> 3} with wire type {tag & 7} ({_WIRE_TYPES[tag & 7]})"


def _invalid_tag_words(tag: int) -> str:
    if tag < 0:
        return "longer than 5 bytes or over 32 bits"
    number, wire = tag >> 3, tag & 7
    if number == 0:
        return f"field number 0 (tag {tag})"
    if wire == 4:
        return f"end-group of field {number} without its start-group"
    return f"wire type {wire} (field {number})"


@dataclass(frozen=True)
class ProtobufPlan:
    """The reader message's transcode program and the Avro plan that reads what it writes.

    Attributes
    ----------
    descriptor : Descriptor
        The reader message type.
    mapping : ProtobufMapping
        Its shadow schema and transcode program.
    layout : ProtobufLayout
        The shadow's Avro column builders and the final Arrow columns.
    avro : AvroPlan
        The shadow schema read as itself.
    """

    descriptor: Descriptor
    mapping: ProtobufMapping
    layout: ProtobufLayout
    avro: AvroPlan
    key: Any = field(default=None, repr=False, compare=False)
    # the kernel twins' prepared forms of the program and of the row layout, by kernel module
    prepared: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def arrow_schema(self) -> pa.Schema:
        """The columns this plan decodes into."""
        return self.layout.arrow_schema

    def kernel_program(self, kernels: Any) -> Any:
        """The program as ``kernels`` (a Protobuf kernel twin) runs it, prepared once per twin."""
        found = self.prepared.get(kernels)
        if found is None:
            found = self.prepared[kernels] = kernels.Program(self.mapping.program, self.avro.program)
        return found

    def row_layout(self, kernels: Any) -> Any:
        """The Avro layout with the Protobuf row shapes, as ``kernels`` (an Avro twin) takes it."""
        key = ("rows", kernels)
        found = self.prepared.get(key)
        if found is None:
            found = self.prepared[key] = kernels.Layout(self.layout.avro.specs, row_shapes(self.layout))
        return found

    def row_error(self, code: int, index: int, offset: int, detail: Any) -> RowError:
        """A kernel error with ``detail`` turned into the words of its message."""
        if code == ErrorCode.PROTO_WRONG_WIRE_TYPE and isinstance(detail, int):
            detail = _tag_words(detail)
        elif code == ErrorCode.PROTO_INVALID_TAG and isinstance(detail, int):
            detail = _invalid_tag_words(detail)
        elif code == ErrorCode.PROTO_MISSING_REQUIRED and isinstance(detail, int):
            node, number = detail >> 29, detail & _MAX_NUMBER
            name = self.mapping.required.get((node, number))
            detail = f"number {number}" if name is None else f"{name} (number {number})"
        return (code, index, offset, detail)


def _descriptor(model: Any, what: str) -> tuple[Descriptor, Any]:
    """The message type of a model (or a Descriptor as it is) and the key that identifies it."""
    if isinstance(model, Descriptor):
        return model, model
    if isinstance(model, pb_schema.ProtobufSchemaModel):
        return model.descriptor(), model
    raise SchemaError(f"the {what} schema is not a Protobuf schema ({type(model).__name__})")


class ProtobufFormat:
    """Protobuf payloads (registry ``schemaType`` ``"PROTOBUF"``).

    Parameters
    ----------
    enums_as : str
        ``"dictionary"`` (default): enum columns are dictionary<int32, string>; ``"int32"``: the numbers.
    max_depth : int, optional
        Read recursive messages down to this many levels (the root is level 1), deeper ones as their
        serialized bytes; None (default) refuses recursive messages.
    """

    name = "PROTOBUF"
    checks_prefixes = False  # the pipeline checks a one-id batch's prefixes before decode

    def __init__(self, *, enums_as: str = "dictionary", max_depth: int | None = None) -> None:
        if enums_as not in ENUMS_AS:
            raise ValueError(f"enums_as must be one of {ENUMS_AS}, got {enums_as!r}")
        self.enums_as = enums_as
        self.max_depth = max_depth

    def parse(self, schema: Any, references: Sequence[Any] | None = None, *, message: str | None = None) -> Any:
        """The :class:`~.schema.ProtobufSchemaModel` of ``schema`` (see :func:`.schema.parse`)."""
        return pb_schema.parse(schema, references, message=message)

    def resolve_references(self, registry: Any, references: Sequence[Any]) -> tuple[dict[str, Any], ...]:
        """The registry's ``references`` with their schema texts (see :func:`.schema.resolve_references`)."""
        return pb_schema.resolve_references(registry, references)

    def schema_key(self, model: Any) -> str:
        """The canonical key of ``model`` (see :func:`.schema.schema_key`)."""
        return pb_schema.schema_key(model)

    def schema_text(self, model: Any) -> str:
        """The text to register ``model`` under (see :func:`.schema.schema_text`)."""
        return pb_schema.schema_text(model)

    def plan(self, writer: Any, reader: Any, base: ProtobufPlan | None = None) -> ProtobufPlan:
        """The plan reading Protobuf payloads as the ``reader`` message (``base``: same reader, same plan).

        ``writer`` and ``reader`` are :class:`~.schema.ProtobufSchemaModel` (their selected message)
        or message Descriptors.

        Raises
        ------
        SchemaError
            ``writer`` or ``reader`` is not Protobuf; the reader message has a group, is recursive
            (without ``max_depth``) or nests too deeply.
        """
        _descriptor(writer, "writer")
        descriptor, key = _descriptor(reader, "reader")
        if base is not None:
            if base.key != key:
                raise SchemaError("a plan with base= must have the base plan's reader")
            return base
        mapping = map_message(descriptor, self.enums_as, self.max_depth)
        layout = build_protobuf_layout(mapping)
        avro = AvroPlan(layout.avro, build_plan(mapping.shadow, mapping.shadow, layout.avro))
        return ProtobufPlan(descriptor, mapping, layout, avro, key)

    def decode(
        self, plans: Sequence[ProtobufPlan], segments: Sequence[Segment], keep_going: bool
    ) -> tuple[pa.RecordBatch, list[RowError]]:
        """Decode all ``segments`` (see :class:`~pulsar_codec.formats.base.PayloadFormat`)."""
        if not plans:
            raise ValueError("decode needs at least one plan")
        plan = plans[0]
        if any(p.layout is not plan.layout for p in plans):
            raise ValueError("plans decoded together must share one reader (build them with base=)")
        backend = _backend.active()
        found, outputs, bug = backend.protobuf.decode(
            plan.kernel_program(backend.protobuf),
            kernel_layout(plan.layout.avro, backend.avro),
            plan.avro.kernel_program(backend.avro),
            [(seg.data, seg.starts, seg.ends, seg.validity) for seg in segments],
            keep_going,
            plan.layout.avro.hints,
        )
        if bug is not None:  # the transcoder wrote bytes its own shadow cannot read: a bug, never bad data
            code, index, _, detail = bug
            raise AssertionError(
                f"Protobuf transcoder output unreadable at row {index}: {ErrorCode(code).name} {detail}"
            )
        errors = [plan.row_error(code, row, offset, detail) for code, row, offset, detail in found]
        return finish_batch(plan.layout, finish(plan.layout.avro, outputs)), errors

    def decode_value(self, plan: ProtobufPlan, data: Any, start: int = 0) -> Any:
        """The Python value of the one payload ``data[start:]``, by the same kernels as :meth:`decode`.

        Equals the batch row's ``to_pylist()`` value; a bad payload raises what :meth:`decode`
        reports for it (index 0).
        """
        kernels = _backend.active().protobuf
        bounds = np.array([start], dtype=np.int64), np.array([len(data)], dtype=np.int64)
        found, out, offsets, _ = kernels.transcode(plan.kernel_program(kernels), data, *bounds, None, False)
        if found:
            code, _, offset, detail = found[0]
            raise_for(*plan.row_error(code, 0, offset, detail))
        avro_kernels = _backend.active().avro
        body = bytes(out[int(offsets[0]) : int(offsets[1])])
        program = plan.avro.kernel_program(avro_kernels)
        error, value = avro_kernels.decode_row(plan.row_layout(avro_kernels), program, body, 0, len(body))
        if error is not None and error[0] == ErrorCode.AVRO_TOO_MANY_EMPTY_ITEMS:  # bad data, as decode reports it
            raise_for(ErrorCode.PROTO_TOO_MANY_EMPTY_ITEMS, 0, 0, ZERO_SIZE_ITEM_LIMIT)
        if error is not None:
            raise AssertionError(f"Protobuf transcoder output unreadable: {ErrorCode(error[0]).name} {error[3]}")
        return value

    # -- several message types per schema (see PayloadFormat) ---------------------------------------

    def select(self, model: Any, path: Sequence[int] | None = None, name: str | None = None) -> Any:
        """``model`` narrowed to one message: the one ``name`` gives (a full name), else the one
        the Confluent message-index ``path`` names, else the model's own (its ``message``, or the
        file's first message).

        Raises
        ------
        SchemaError
            No such message in the schema's root file.
        """
        model = pb_schema.parse(model)
        if name is not None:
            return model.with_message(name)
        if path is not None:
            return model.with_message(model.message_for_indexes(path))
        if model.message is None:
            return model.with_message(model.descriptor().full_name)
        return model

    def type_name(self, model: Any) -> str:
        """The full name of the message ``model`` reads or writes."""
        name: str = model.message or model.descriptor().full_name
        return name

    def type_path(self, model: Any) -> list[int]:
        """The Confluent message-index path of ``model``'s message (written in the frame prefix)."""
        return list(model.indexes_for(self.type_name(model)))

    def registration(self, model: Any) -> list[tuple[str, str, list[str]]]:
        """What registering ``model`` takes, in order: ``(subject, .proto text, imports)`` for every
        imported file a registry does not bundle (dependencies first, each under its import name, as
        confluent-kafka's serializer registers them), then the root file with subject ``""``. Each
        entry's ``imports`` are the references to register it with (import names = subjects)."""
        texts = dict(pb_schema.dependency_texts(model))
        out = []
        for proto in model.files():  # dependencies first
            if proto.name in texts:
                out.append((proto.name, texts[proto.name], [d for d in proto.dependency if d in texts]))
        root = model.root_file()
        out.append(("", self.schema_text(model), [d for d in root.dependency if d in texts]))
        return out

    # -- encoding ---------------------------------------------------------------------------------

    def encoder(self, model: Any) -> Any:
        """An encoder writing ``model``'s message (:class:`~.encoder.ProtobufEncoder`)."""
        from .encoder import ProtobufEncoder

        return ProtobufEncoder(model)

    def model_from_arrow(self, schema: pa.Schema, name: str = "Record", nulls: Mapping[str, bool] | None = None) -> Any:
        """The schema in the ``b"protobuf.schema"`` metadata if there is one, else a proto3 file
        derived from the Arrow schema (see :func:`.from_arrow.proto_from_arrow`)."""
        from .from_arrow import proto_from_arrow

        meta = schema.metadata or {}
        if b"protobuf.schema" in meta:
            return pb_schema.parse(meta[b"protobuf.schema"].decode("utf-8"))
        return pb_schema.parse(proto_from_arrow(schema, name, nulls))

    def __repr__(self) -> str:
        return "<payload format PROTOBUF>"


FORMAT = ProtobufFormat()
"""The Protobuf format instance :func:`pulsar_codec.formats.get_format` returns for ``"PROTOBUF"``."""
