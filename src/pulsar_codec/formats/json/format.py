"""JSON payloads behind the format interface of :mod:`pulsar_codec.formats.base`.

The reader's mapping (:mod:`.mapping`) gives a transcode program and its Avro shadow schema, whose
Avro plan (the shadow read as itself) names the column builders. Decoding is one pass: the JSON
kernel (``_backend.active().json.decode``) parses every payload once, following the program, into
the Avro decoder's column builders, which become the batch as an Avro batch would. (The pure twin
transcodes each payload to its Avro binary form under the shadow schema and runs the Avro kernel on
those bytes: the same builders.) With ``validate=True`` the rows are transcoded first, checked, and
the Avro pass builds the columns of the rows that passed. JSON payloads name no writer schema to
resolve: the program and the columns come from the reader alone, and the writer schema only has to
be JSON too.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
from jsonschema.exceptions import best_match  # type: ignore[import-untyped]

from ..._kernels import _backend
from ..._kernels.defs import (
    J_ARRAY,
    J_BYTES_B64,
    J_DATE,
    J_DOUBLE,
    J_FIXED_B64,
    J_FLOAT,
    J_INT,
    J_LONG,
    J_MAP,
    J_NULL,
    J_NULLABLE,
    J_OBJECT,
    J_TEXT,
    J_TIME,
    J_TIME_MICROS,
    J_TIME_MILLIS,
    J_TIMESTAMP,
    ZERO_SIZE_ITEM_LIMIT,
)
from ...errors import ErrorCode, SchemaError, raise_for
from ..avro import schema as av
from ..avro.format import FORMAT as FORMAT_AVRO
from ..avro.format import AvroPlan, finish, kernel_layout, run
from ..avro.plan import Layout, build_plan
from ..base import RowError, Segment
from .mapping import JsonMapping, build_json_layout, map_model, null_is_valid
from .schema import JsonSchemaModel, parse, resolve_references

__all__ = ["FORMAT", "JsonFormat", "JsonPlan", "loads_exact"]

_JSON_KINDS = ("null", "boolean", "number", "string", "array", "object")
# what the kernel's detail (the op of the failing node) names in range and format errors
_CHOICES = frozenset({"allOf", "anyOf", "oneOf", "not", "if", "$ref"})  # root keywords that may admit null
_RANGES = {
    J_INT: "int32",
    J_LONG: "int64",
    J_FLOAT: "float32",
    J_DOUBLE: "float64",
    J_TIME_MILLIS: "time-millis (0 to 86399999, one day)",
    J_TIME_MICROS: "time-micros (0 to 86399999999, one day)",
}
_FORMATS = {
    J_TIMESTAMP: "RFC 3339 date-time",
    J_DATE: "date",
    J_TIME: "time",
    J_BYTES_B64: "base64",
    J_FIXED_B64: "base64 text of the fixed size",
}


@dataclass(frozen=True)
class JsonPlan:
    """The reader's transcode program and the Avro plan that reads what it writes.

    Attributes
    ----------
    model : JsonSchemaModel
        The reader schema.
    mapping : JsonMapping
        Its shadow schema and transcode program.
    avro : AvroPlan
        The shadow schema read as itself, into the JSON-named columns.
    """

    model: JsonSchemaModel
    mapping: JsonMapping
    avro: AvroPlan
    # the kernel twins' prepared forms of the program, by kernel module (made on first use)
    prepared: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def validator(self) -> Any:
        """The ``jsonschema`` validator of the reader (``validate=True``), made once per plan."""
        return self.model.validator()

    @property
    def arrow_schema(self) -> pa.Schema:
        """The columns this plan decodes into."""
        return self.avro.arrow_schema

    @property
    def layout(self) -> Layout:
        """The Avro column builders (plans of one reader share them)."""
        return self.avro.layout

    def kernel_program(self, kernels: Any) -> Any:
        """The program as ``kernels`` (a JSON kernel twin) runs it, prepared once per twin."""
        found = self.prepared.get(kernels)
        if found is None:
            found = self.prepared[kernels] = kernels.Program(self.mapping.program, self.avro.program)
        return found

    @cached_property
    def property_names(self) -> dict[int, str]:
        """Field index -> property name, for indexes that mean one name in every object of the program."""
        names: dict[int, set[str]] = {}
        for node, _ in _objects(self.mapping.program, None):
            for i, (name, _, _) in enumerate(node[1]):
                names.setdefault(i, set()).add(name)
        return {i: next(iter(found)) for i, found in names.items() if len(found) == 1}

    def missing_name(self, index: int, payload: bytes | None) -> str | None:
        """The required property at ``index`` of its object that ``payload`` lacks, when that is one name.

        The kernel reports only the index; the payload (parsed again, on this error path only)
        says which objects lack a required property there.
        """
        if payload is not None:
            try:
                value = json.loads(payload)
            except (ValueError, RecursionError):
                value = _UNREAD
            if value is not _UNREAD:
                found: set[str] = {
                    node[1][index][0]
                    for node, v in _objects(self.mapping.program, value)
                    if index < len(node[1]) and node[1][index][2] is None and node[1][index][0] not in v
                }
                if len(found) == 1:
                    return found.pop()
        return self.property_names.get(index)

    def row_error(self, code: int, index: int, offset: int, detail: Any, payload: bytes | None = None) -> RowError:
        """A kernel error with ``detail`` turned into the words of its message (``payload``: the row's bytes)."""
        if code == ErrorCode.JSON_WRONG_TYPE:
            detail = _JSON_KINDS[detail] if isinstance(detail, int) and 0 <= detail < len(_JSON_KINDS) else "value"
        elif code == ErrorCode.JSON_MISSING_REQUIRED and isinstance(detail, int):
            name = self.missing_name(detail, payload)
            detail = json.dumps(name) if name is not None else f"number {detail + 1} of its object"
        elif code == ErrorCode.JSON_NUMBER_RANGE:
            detail = _RANGES.get(detail, "its column type")
        elif code == ErrorCode.JSON_BAD_FORMAT:
            detail = _FORMATS.get(detail, "value of the schema's format")
        return (code, index, offset, detail)


_UNREAD = object()


def _objects(program: tuple[Any, ...], value: Any) -> list[tuple[tuple[Any, ...], Any]]:
    """Every J_OBJECT node of ``program`` with the value it reads in ``value`` (None: walk the program only)."""
    out = []
    stack = [(program, value)]
    walk_all = value is None
    while stack:
        node, v = stack.pop()
        op = node[0]
        if op == J_OBJECT and (walk_all or isinstance(v, dict)):
            out.append((node, v))
            for name, child, _ in node[1]:
                if walk_all:
                    stack.append((child, None))
                elif name in v:
                    stack.append((child, v[name]))
        elif op == J_NULLABLE and (walk_all or v is not None):
            stack.append((node[1], v))
        elif op == J_ARRAY and (walk_all or isinstance(v, list)):
            stack.extend([(node[1], None)] if walk_all else [(node[1], x) for x in v])
        elif op == J_MAP and (walk_all or isinstance(v, dict)):
            stack.extend([(node[1], None)] if walk_all else [(node[1], x) for x in v.values()])
    return out


class JsonFormat:
    """JSON payloads (registry ``schemaType`` ``"JSON"``); the instance is :data:`FORMAT`."""

    name = "JSON"
    checks_prefixes = False  # the pipeline checks a one-id batch's prefixes before decode

    def parse(
        self, schema: Any, references: Sequence[Any] | None = None, *, keep_extra: bool = False, validate: bool = False
    ) -> Any:
        """The :class:`~.schema.JsonSchemaModel` of a JSON Schema or Pulsar JSON (Avro) document.

        ``references`` must carry their schema texts (see :func:`.schema.resolve_references`).
        ``keep_extra`` and ``validate`` are the model's options (see the model).
        """
        return parse(schema, references, keep_extra=keep_extra, validate=validate)

    def resolve_references(self, registry: Any, references: Sequence[Any]) -> tuple[dict[str, Any], ...]:
        """The registry's ``references`` with their schema texts fetched from ``registry`` (what
        :meth:`parse` needs; the pipeline calls it when a writer schema has references)."""
        return resolve_references(registry, references)

    def schema_key(self, model: JsonSchemaModel) -> str:
        """Canonical JSON of the document (sorted keys, no spaces), with its references if any."""
        return model.key

    def schema_text(self, model: JsonSchemaModel) -> str:
        """The text the schema was registered with (compact JSON when it was given decoded)."""
        return model.text

    def plan(self, writer: Any, reader: Any, base: JsonPlan | None = None) -> JsonPlan:
        """The plan reading JSON payloads as ``reader`` (``base`` when given: same reader, same plan).

        Raises
        ------
        SchemaError
            ``writer`` or ``reader`` is not a JSON schema model.
        """
        for model, what in ((writer, "writer"), (reader, "reader")):
            if not isinstance(model, JsonSchemaModel):
                raise SchemaError(f"the {what} schema is not a JSON schema ({type(model).__name__})")
        if base is not None:
            if base.model != reader:
                raise SchemaError("a plan with base= must have the base plan's reader")
            return base
        mapping = map_model(reader)
        layout = build_json_layout(mapping)
        return JsonPlan(reader, mapping, AvroPlan(layout, build_plan(mapping.shadow, mapping.shadow, layout)))

    def decode(
        self, plans: Sequence[JsonPlan], segments: Sequence[Segment], keep_going: bool
    ) -> tuple[pa.RecordBatch, list[RowError]]:
        """Decode all ``segments`` (see :class:`~pulsar_codec.formats.base.PayloadFormat`)."""
        if not plans:
            raise ValueError("decode needs at least one plan")
        plan = plans[0]
        if any(p.layout is not plan.layout for p in plans):
            raise ValueError("plans decoded together must share one reader (build them with base=)")
        if plan.model.validate:
            return _decode_validated(plan, segments, keep_going)
        backend = _backend.active()
        bounds = [seg.bounds() for seg in segments]
        found, outputs, bug = backend.json.decode(
            plan.kernel_program(backend.json),
            kernel_layout(plan.layout, backend.avro),
            plan.avro.kernel_program(backend.avro),
            [(seg.data, starts, ends, seg.validity) for seg, (starts, ends) in zip(segments, bounds, strict=True)],
            keep_going,
            plan.layout.hints,
        )
        if bug is not None:  # the parser gave the builders what its own shadow cannot hold: a bug, never bad data
            code, index, _, detail = bug
            raise AssertionError(f"JSON transcoder output unreadable at row {index}: {ErrorCode(code).name} {detail}")
        firsts = np.cumsum([0] + [len(starts) for starts, _ in bounds])
        errors: list[RowError] = []
        for code, row, offset, detail in found:
            k = int(np.searchsorted(firsts, row, side="right")) - 1
            starts, ends = bounds[k]
            payload = _payload(code, segments[k].data, starts, ends, row - int(firsts[k]))
            errors.append(plan.row_error(code, row, offset, detail, payload))
        return finish(plan.layout, outputs), errors

    def decode_value(self, plan: JsonPlan, data: Any, start: int = 0) -> Any:
        """The Python value of the one payload ``data[start:]``, by the same kernels as :meth:`decode`.

        Equals the batch row's ``to_pylist()`` value; a bad payload raises what :meth:`decode`
        reports for it (index 0).
        """
        kernels = _backend.active().json
        bounds = np.array([start], dtype=np.int64), np.array([len(data)], dtype=np.int64)
        found, out, offsets, _ = kernels.transcode(plan.kernel_program(kernels), data, *bounds, None, False)
        if not found and plan.model.validate:
            found, _ = _check_constraints(plan, data, *bounds, found, None, False)
        if found:
            code, _, offset, detail = found[0]
            raise_for(*plan.row_error(code, 0, offset, detail, _payload(code, data, *bounds, 0)))
        avro_kernels = _backend.active().avro
        layout = kernel_layout(plan.layout, avro_kernels)
        body = bytes(out[int(offsets[0]) : int(offsets[1])])
        error, value = avro_kernels.decode_row(layout, plan.avro.kernel_program(avro_kernels), body, 0, len(body))
        if error is not None and error[0] == ErrorCode.AVRO_TOO_MANY_EMPTY_ITEMS:  # bad data, as decode reports it
            raise_for(ErrorCode.JSON_TOO_MANY_EMPTY_ITEMS, 0, 0, ZERO_SIZE_ITEM_LIMIT)
        if error is not None:
            raise AssertionError(f"JSON transcoder output unreadable: {ErrorCode(error[0]).name} {error[3]}")
        return value

    def encoder(self, model: JsonSchemaModel) -> Any:
        """A JSON encoder writing payloads of ``model`` (:class:`~.encoder.JsonEncoder`)."""
        from .encoder import JsonEncoder  # the encoder imports this package: import it when asked

        return JsonEncoder(model)

    def non_null_fields(self, model: JsonSchemaModel) -> frozenset[str]:
        """The top-level columns a good row always has a value in: those of a root object whose
        place in the shadow schema admits no null (a required property of a type without null;
        a Pulsar JSON field of a type without null). Columns kept as JSON text are left out: the
        text of any value, null too, is read there."""
        document = model.document
        if model.avro is None and not (
            isinstance(document, dict) and document.get("type") == "object" and not _CHOICES & set(document)
        ):
            return frozenset()  # a root that may be null (or is not an object)
        mapping = map_model(model)
        root, program = mapping.shadow, mapping.program
        if not isinstance(root, av.Record) or program[0] != J_OBJECT:
            return frozenset()
        names = mapping.renames.get(id(root), [f.name for f in root.fields])
        return frozenset(
            name
            for name, shadow, (_, child, _) in zip(names, root.fields, program[1])
            if child[0] not in (J_TEXT, J_NULL, J_NULLABLE) and not av.admits_null(shadow.type)
        )

    def nullable_fields(self, model: JsonSchemaModel) -> frozenset[str]:
        """The top-level properties a value may leave out or set to null: those not ``required``,
        and required ones whose schema admits null (``["T", "null"]``, ``oneOf`` / ``anyOf`` with
        null, a ``$ref`` to such a schema, an ``enum`` with null, ...), as the ``jsonschema``
        validator decides; of a Pulsar JSON schema's Avro record, the fields that admit null."""
        if model.avro is not None:
            return FORMAT_AVRO.nullable_fields(model.avro)
        document = model.document
        if not isinstance(document, dict) or not isinstance(document.get("properties"), dict):
            return frozenset()
        required = set(document.get("required") or ())
        validator, resolver = model.validator(), model.resolver()
        return frozenset(
            name
            for name, prop in document["properties"].items()
            if name not in required or null_is_valid(validator, prop, resolver)
        )

    def model_from_arrow(
        self, schema: pa.Schema, name: str = "Record", nulls: Mapping[str, bool] | None = None
    ) -> JsonSchemaModel:
        """The schema in the ``b"json.schema"`` metadata if there is one, else a draft-07 JSON Schema
        derived from the Arrow schema (see :func:`.from_arrow.json_schema_from_arrow`)."""
        from .from_arrow import json_schema_from_arrow

        meta = schema.metadata or {}
        if b"json.schema" in meta:
            return parse(meta[b"json.schema"].decode("utf-8"))
        return parse(json_schema_from_arrow(schema, name, None if nulls is None else dict(nulls)))

    def __repr__(self) -> str:
        return "<payload format JSON>"


def _decode_validated(
    plan: JsonPlan, segments: Sequence[Segment], keep_going: bool
) -> tuple[pa.RecordBatch, list[RowError]]:
    """:meth:`JsonFormat.decode` with ``validate=True``: the rows are transcoded, checked against the
    schema's constraints (:func:`_check_constraints`), and only then decoded into columns, since a
    row that breaks a constraint becomes an error row too."""
    kernels = _backend.active().json
    program = plan.kernel_program(kernels)
    errors: list[RowError] = []
    avro_segments: list[Segment] = []
    row0 = 0
    for seg in segments:
        starts, ends = seg.bounds()
        found, out, offsets, validity = kernels.transcode(program, seg.data, starts, ends, seg.validity, keep_going)
        data = seg.data
        found, validity = _check_constraints(plan, data, starts, ends, found, validity, keep_going)
        errors.extend(
            plan.row_error(code, row0 + row, offset, detail, _payload(code, data, starts, ends, row))
            for code, row, offset, detail in found
        )
        rows = len(starts)
        if found and not keep_going:
            rows = found[0][1]  # the batch holds the rows before the first bad one
        avro_segments.append(
            Segment(
                pa.py_buffer(out),
                offsets[:rows],
                offsets[1 : rows + 1],
                None if validity is None else validity[:rows],
                None,
            )
        )
        if found and not keep_going:
            break
        row0 += rows
    avro_errors, batch = run(plan.layout, [plan.avro], avro_segments, keep_going)
    limited: list[RowError] = []
    for code, index, _, detail in avro_errors:
        if code != ErrorCode.AVRO_TOO_MANY_EMPTY_ITEMS:  # the transcoder wrote bytes its own shadow cannot read: a bug
            raise AssertionError(f"JSON transcoder output unreadable at row {index}: {ErrorCode(code).name} {detail}")
        # more items of no size than the builders take: bad data, reported as the kernel's decode does
        limited.append(plan.row_error(ErrorCode.JSON_TOO_MANY_EMPTY_ITEMS, index, 0, ZERO_SIZE_ITEM_LIMIT))
    if limited:  # without keep_going the Avro pass read only rows before the first bad one: its error is first
        errors = sorted(errors + limited, key=lambda error: error[1]) if keep_going else limited[:1]
    return batch, errors


def _validated_int(text: str) -> int | decimal.Decimal:
    """An integer of a payload being validated: Python's ``int`` refuses more digits than
    ``sys.get_int_max_str_digits()`` (a guard against quadratic conversion), so such an integer (which
    the kernel accepts where it is kept as text or skipped) is a Decimal, a number to the validator."""
    try:
        return int(text)
    except ValueError:
        return decimal.Decimal(text)


def loads_exact(text: str | bytes) -> Any:
    """``json.loads`` of JSON text the kernel accepted: an integer of more digits than Python
    converts (``sys.get_int_max_str_digits()``) is an exact ``Decimal`` instead of a ValueError."""
    return json.loads(text, parse_int=_validated_int)


def _check_constraints(
    plan: JsonPlan,
    data: Any,
    starts: np.ndarray,
    ends: np.ndarray,
    found: list[Any],
    validity: np.ndarray | None,
    keep_going: bool,
) -> tuple[list[Any], np.ndarray | None]:
    """The optional validation (``validate=True``): every row the kernel read is checked against the
    schema's constraints; a row that breaks one becomes an error row (``JSON_CONSTRAINT``, offset 0,
    the validator's best message), merged into ``found`` in row order."""
    validator = plan.validator
    n = len(starts)
    limit = found[0][1] if found and not keep_going else n  # without keep_going nothing past the first stop
    view = memoryview(data)
    rows = range(limit) if validity is None else np.flatnonzero(validity[:limit]).tolist()
    broken: list[Any] = []
    for row in rows:
        instance = loads_exact(bytes(view[int(starts[row]) : int(ends[row])]))
        error = best_match(validator.iter_errors(instance))
        if error is None:
            continue
        where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path) or "the value"
        broken.append((ErrorCode.JSON_CONSTRAINT, row, 0, f"{error.message} (at {where.lstrip('.')})"))
        if not keep_going:
            break
    if not broken:
        return found, validity
    if not keep_going:  # the first bad row, whichever check found it, ends the batch
        return [broken[0]], validity
    out = np.ones(n, dtype=bool) if validity is None else validity.copy()
    out[[b[1] for b in broken]] = False
    return sorted([*found, *broken], key=lambda e: e[1]), out


def _payload(code: int, data: Any, starts: np.ndarray, ends: np.ndarray, row: int) -> bytes | None:
    """Row ``row``'s bytes when its error message needs them (a missing required property)."""
    if code != ErrorCode.JSON_MISSING_REQUIRED:
        return None
    return bytes(memoryview(data)[int(starts[row]) : int(ends[row])])


FORMAT = JsonFormat()
"""The JSON format instance :func:`pulsar_codec.formats.get_format` returns for ``"JSON"``."""
