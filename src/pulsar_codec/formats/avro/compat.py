"""Avro reader/writer compatibility, on the decoder's schema model.

:func:`check` reproduces the verdicts of Avro Java's ``SchemaCompatibility`` (1.10 and later), which
both the Pulsar broker and the Confluent Schema Registry run:

* named types match on their unqualified names, or when the reader lists the writer's full name
  among its aliases (the writer's aliases play no part);
* record fields match on name or reader field alias; a reader-only field needs a default; so
  does a reader field whose alias names a writer field that another reader field has by name (the
  decoder gives it its default, as fastavro does; Java's checker passes it without one, and its
  resolving decoder then renames the writer field away from the reader field that has its name);
* an enum accepts writer symbols it lacks only when it has a default;
* a writer union needs every branch readable; a reader union needs one branch that reads the
  writer;
* the promotions int->long/float/double, long->float/double, float->double and string<->bytes
  hold; logical types play no part;
* recursive schemas terminate, because every (reader, writer) pair is evaluated once.

Schemas are parsed by :func:`pulsar_codec.formats.avro.schema.parse` (recursion allowed), so the
checks and the decoder read the same model. :func:`canonical_form` is the registry's identity of a
schema; it keeps every attribute of the schema text, which the model does not hold, so it is
computed from the text and the parsed model together.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...errors import SchemaError
from ..compat_base import COMPATIBLE, CompatibilityResult, Incompatibility
from .schema import MAX_DEPTH, PRIMITIVES, Array, Enum, Field, Fixed, Map, Named, Record, Schema, Union, to_json
from .schema import parse as parse_model

__all__ = ["AvroSchema", "canonical_form", "check", "parse"]

# writer type -> reader types it can be promoted to (Avro specification, "Schema Resolution")
_PROMOTIONS: dict[str, frozenset[str]] = {
    "int": frozenset({"long", "float", "double"}),
    "long": frozenset({"float", "double"}),
    "float": frozenset({"double"}),
    "string": frozenset({"bytes"}),
    "bytes": frozenset({"string"}),
}

# one step of a location: (JSON pointer token, readable path suffix)
_Step = tuple[str, str]


@dataclass(frozen=True, eq=False)
class AvroSchema:
    """A parsed Avro schema as the checks take it: the decoder's model plus its canonical text.

    Attributes
    ----------
    root : Schema
        The root node of the :mod:`pulsar_codec.formats.avro.schema` model (a recursive schema's
        nodes form a cycle).
    canonical : str
        See :func:`canonical_form`.
    """

    root: Schema
    canonical: str

    @property
    def name(self) -> str:
        """Full name of a named root type, else its type (``"int"``, ``"union"``...)."""
        return self.root.fullname if isinstance(self.root, Named) else self.root.type


def _load_json(schema: Any) -> Any:
    """The JSON value of a schema given as text, bytes, a dict or a list."""
    if isinstance(schema, (bytes, bytearray, memoryview)):
        try:
            schema = bytes(schema).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(f"schema bytes are not UTF-8: {exc}") from None
    if isinstance(schema, str):
        if schema.strip() in PRIMITIVES:  # a bare primitive name such as string (or null)
            return schema.strip()
        try:
            return json.loads(schema)
        except ValueError:
            raise SchemaError(f"schema text is not valid JSON: {schema[:80]!r}") from None
        except RecursionError:  # JSON nested past Python's stack is past MAX_DEPTH too
            raise SchemaError(f"schema nested too deeply: more than {MAX_DEPTH} levels") from None
    if isinstance(schema, (dict, list)):
        return schema
    raise SchemaError(f"cannot read a schema from {type(schema).__name__}")


def parse(schema: Any) -> AvroSchema:
    """Parse an Avro schema for the compatibility checks.

    Parameters
    ----------
    schema : str, bytes, dict, list, Schema or AvroSchema
        JSON text or bytes, decoded JSON, a node of the decoder's model (its canonical form then
        lacks the attributes the model does not keep, such as ``doc``), or an :class:`AvroSchema`
        (returned unchanged).

    Returns
    -------
    AvroSchema

    Raises
    ------
    SchemaError
        The schema is malformed, as Avro Java's parser judges it: unknown or redefined type names,
        names outside the Avro name rule, missing attributes, a field default that does not fit its
        type, an enum default that is not a symbol, nested or duplicate union branches, an object
        whose ``type`` is not a string; or it nests deeper than
        :data:`~pulsar_codec.formats.avro.schema.MAX_DEPTH` levels.
    """
    if isinstance(schema, AvroSchema):
        return schema
    try:
        if isinstance(schema, Schema):
            root, obj = schema, to_json(schema)
        else:
            obj = _load_json(schema)
            root = parse_model(obj, allow_recursion=True)
        normal = _normal(obj, root)
    except RecursionError:
        raise SchemaError("Avro schema nested too deeply") from None
    return AvroSchema(root, json.dumps(normal, separators=(",", ":"), sort_keys=True, ensure_ascii=False))


# --------------------------------------------------------------------------------------------
# canonical form


def canonical_form(schema: Any) -> str:
    """Text under which a registry considers two Avro schemas the same.

    Compact JSON with sorted keys, every type name fully qualified (``namespace`` attributes folded
    into the names, aliases qualified and sorted) and primitive objects without attributes written
    as bare names. Unlike Avro's Parsing Canonical Form it keeps ``default``, ``aliases``,
    ``logicalType``, ``doc`` and custom properties: schemas that differ in them decode differently
    or evolve differently, so they must not share an id.
    """
    return parse(schema).canonical


def _with_props(extra: dict[str, Any], inner: Any) -> Any:
    return {**extra, "type": inner} if extra else inner


def _named_normal(obj: dict[str, Any], node: Named, **replaced: Any) -> dict[str, Any]:
    out = {k: v for k, v in obj.items() if k not in ("namespace", "name", "aliases")}
    out["name"] = node.fullname
    if node.aliases:
        out["aliases"] = sorted(set(node.aliases))
    out.update(replaced)
    return out


def _normal(obj: Any, node: Schema) -> Any:
    """The canonical JSON value of ``obj``, walked beside its parsed ``node``.

    The parser has validated ``obj`` and resolved its names; this walk only reads the full names
    from the model and keeps every other attribute of the text.
    """
    if isinstance(obj, Schema):  # a parsed node embedded in a JSON value
        obj = to_json(obj)
    if isinstance(obj, str):
        return node.fullname if isinstance(node, Named) else obj
    if isinstance(obj, list) and isinstance(node, Union):
        return [_normal(item, branch) for item, branch in zip(obj, node.branches, strict=True)]
    if not isinstance(obj, dict):
        raise SchemaError(f"cannot read {obj!r} as an Avro schema")
    kind = obj["type"]  # a string: the parser refuses any other "type"
    extra = {k: v for k, v in obj.items() if k != "type"}
    if kind in PRIMITIVES:
        return _with_props(extra, kind)
    if kind in ("record", "error") and isinstance(node, Record):
        fields = [
            {**fobj, "type": _normal(fobj["type"], fld.type)}
            for fobj, fld in zip(obj["fields"], node.fields, strict=True)
        ]
        return _named_normal(obj, node, type="record", fields=fields)
    if kind in ("enum", "fixed") and isinstance(node, (Enum, Fixed)):
        return _named_normal(obj, node)
    if kind == "array" and isinstance(node, Array):
        return {**obj, "items": _normal(obj["items"], node.items)}
    if kind == "map" and isinstance(node, Map):
        return {**obj, "values": _normal(obj["values"], node.values)}
    if isinstance(node, Named):  # {"type": "SomeNamedType"} refers to a type defined earlier
        return _with_props(extra, node.fullname)
    raise SchemaError(f"cannot read {obj!r} as an Avro schema")


# --------------------------------------------------------------------------------------------
# reader/writer rules


def _describe(node: Schema) -> str:
    if isinstance(node, Named):
        return f"{node.type.upper()} {node.fullname}"
    return node.type.upper()


def _incompat(kind: str, loc: list[_Step], message: str) -> Incompatibility:
    pointer = "/" + "/".join(t.replace("~", "~0").replace("/", "~1") for t, _ in loc)
    path = "".join(p for _, p in loc)
    return Incompatibility(kind, pointer, path, message)


class _Checker:
    """Avro Java's ReaderWriterCompatibilityChecker, rule for rule.

    ``memo`` maps (reader node, writer node) identities to their incompatibilities; a pair met
    again while it is being computed counts as compatible, which ends recursion. The nodes belong
    to the two parsed schemas the caller holds, so their identities stay unique during a check.
    """

    def __init__(self) -> None:
        self.memo: dict[tuple[int, int], list[Incompatibility] | None] = {}

    def compat(self, reader: Schema, writer: Schema, loc: list[_Step]) -> list[Incompatibility]:
        """Incompatibilities of reading ``writer`` with ``reader``, located below ``loc``."""
        key = (id(reader), id(writer))
        if key in self.memo:
            return self.memo[key] or []  # None: in progress, assumed compatible
        self.memo[key] = None
        result = self._calculate(reader, writer, loc)
        self.memo[key] = result
        return result

    def _sub(self, token: _Step, reader: Schema, writer: Schema, loc: list[_Step]) -> list[Incompatibility]:
        return self.compat(reader, writer, [*loc, token])

    def _calculate(self, reader: Schema, writer: Schema, loc: list[_Step]) -> list[Incompatibility]:
        if reader.type == writer.type:
            return self._same_type(reader, writer, loc)
        if isinstance(writer, Union):
            # a non-union reader must read every branch the writer may have chosen
            out: list[Incompatibility] = []
            for i, branch in enumerate(writer.branches):
                out.extend(x for x in self._sub((str(i), f"|{i}"), reader, branch, loc) if x not in out)
            return out
        if isinstance(reader, Union):
            if any(not self.compat(branch, writer, []) for branch in reader.branches):
                return []
            return [_incompat("MISSING_UNION_BRANCH", loc, f"reader union lacks writer type {_describe(writer)}")]
        if reader.type in _PROMOTIONS.get(writer.type, ()):
            return []
        return [
            _incompat(
                "TYPE_MISMATCH",
                loc,
                f"reader type {_describe(reader)} is not compatible with writer type {_describe(writer)}",
            )
        ]

    def _same_type(self, reader: Schema, writer: Schema, loc: list[_Step]) -> list[Incompatibility]:
        if isinstance(reader, Array) and isinstance(writer, Array):
            return self._sub(("items", "[]"), reader.items, writer.items, loc)
        if isinstance(reader, Map) and isinstance(writer, Map):
            return self._sub(("values", "{}"), reader.values, writer.values, loc)
        if isinstance(reader, Fixed) and isinstance(writer, Fixed):
            out = self._names(reader, writer, loc)
            if reader.size != writer.size:
                message = (
                    f"fixed {reader.fullname} has size {reader.size}, the writer's {writer.fullname} "
                    f"has size {writer.size}"
                )
                out.append(_incompat("FIXED_SIZE_MISMATCH", [*loc, ("size", "")], message))
            return out
        if isinstance(reader, Enum) and isinstance(writer, Enum):
            out = self._names(reader, writer, loc)
            missing = sorted(set(writer.symbols) - set(reader.symbols))
            if missing and not (reader.default is not None and reader.default in reader.symbols):
                message = f"reader enum {reader.fullname} lacks writer symbols {missing} and has no default"
                out.append(_incompat("MISSING_ENUM_SYMBOLS", [*loc, ("symbols", "")], message))
            return out
        if isinstance(reader, Record) and isinstance(writer, Record):
            return self._names(reader, writer, loc) + self._fields(reader, writer, loc)
        if isinstance(reader, Union) and isinstance(writer, Union):
            # union read as union: every writer branch must be readable by the reader union
            out = []
            for i, branch in enumerate(writer.branches):
                if self.compat(reader, branch, []):
                    message = f"reader union lacks writer branch {i} ({_describe(branch)})"
                    out.append(_incompat("MISSING_UNION_BRANCH", [*loc, (str(i), f"|{i}")], message))
            return out
        return []  # the same primitive type

    def _names(self, reader: Named, writer: Named, loc: list[_Step]) -> list[Incompatibility]:
        # current Avro Java compares unqualified names, then the reader's aliases with the writer's full name
        if reader.name == writer.name or writer.fullname in reader.aliases:
            return []
        message = f"reader {reader.type} {reader.fullname} does not match writer {writer.type} {writer.fullname}"
        return [_incompat("NAME_MISMATCH", [*loc, ("name", "")], message)]

    def _fields(self, reader: Record, writer: Record, loc: list[_Step]) -> list[Incompatibility]:
        by_name = {f.name: f for f in writer.fields}
        by_exact_name = {f.name for f in reader.fields if f.name in by_name}
        out: list[Incompatibility] = []
        for pos, rf in enumerate(reader.fields):
            floc = [*loc, ("fields", ""), (str(pos), "." + rf.name)]
            matches = [by_name[n] for n in (rf.name, *rf.aliases) if n in by_name]
            found = self._field(reader, writer, rf, matches, floc)
            taken = [m.name for m in matches if m.name in by_exact_name and m.name != rf.name]
            if taken and not rf.has_default:
                message = (
                    f"reader field {rf.name!r} has no default and its alias names writer field {taken[0]!r}, "
                    f"which the reader field of that name reads"
                )
                found = [*found, _incompat("READER_FIELD_MISSING_DEFAULT_VALUE", floc, message)]
            out.extend(x for x in found if x not in out)
        return out

    def _field(
        self, reader: Record, writer: Record, rf: Field, matches: list[Field], floc: list[_Step]
    ) -> list[Incompatibility]:
        if len(matches) > 1:
            raise SchemaError(
                f"reader field {reader.fullname}.{rf.name} matches several fields of writer record {writer.fullname}"
            )
        if matches:
            return self._sub(("type", ""), rf.type, matches[0].type, floc)
        if rf.has_default:
            return []
        if isinstance(rf.type, Enum) and rf.type.default is not None:
            # Avro Java quirk: an enum field with an enum default is checked against the whole
            # writer record, which can only fail, with a type mismatch
            return self._sub(("type", ""), rf.type, writer, floc)
        message = f"reader field {rf.name!r} has no default and the writer has no such field"
        return [_incompat("READER_FIELD_MISSING_DEFAULT_VALUE", floc, message)]


def check(reader: Any, writer: Any) -> CompatibilityResult:
    """Can data written with ``writer`` be read with ``reader``?

    Parameters
    ----------
    reader, writer : str, bytes, dict, list, Schema or AvroSchema
        Avro schemas (see :func:`parse`).

    Returns
    -------
    CompatibilityResult
        True when compatible; otherwise ``.reasons`` lists every problem with its location: a
        JSON pointer into the reader schema (as Avro Java gives it) and the path in words, from
        the reader's root name (``Event.tags[]``).

    Raises
    ------
    SchemaError
        A schema is malformed, or a reader field's aliases match several writer fields.
    """
    r, w = parse(reader), parse(writer)
    try:
        found = _Checker().compat(r.root, w.root, [])
    except RecursionError:
        raise SchemaError("schemas are nested too deeply to compare") from None
    if not found:
        return COMPATIBLE
    # the pointer starts below the root (as Avro Java's does); the readable path starts at its name
    root = r.root.name if isinstance(r.root, Named) else r.root.type
    return CompatibilityResult(
        False, tuple(Incompatibility(i.kind, i.location, root + i.path, i.message) for i in found)
    )
