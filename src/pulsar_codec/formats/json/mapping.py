"""JSON payload schema -> (Avro shadow schema, transcode program), and the Arrow columns of both.

The JSON kernel walks a *transcode program* (a tree of ``J_*`` tuples, see ``_kernels/defs.py``)
while it parses a payload and writes the payload's Avro binary form under the *shadow schema*;
the Avro column builders then decode those bytes. The shadow schema's Arrow mapping is the JSON
mapping (README, "JSON Schema -> Arrow"):

- ``object`` with ``properties`` -> record (struct); a property is non-null only when it is
  ``required`` and its schema does not admit null; an optional property absent from a payload is
  null (an optional property given as ``null`` is null too);
- ``type: [T, "null"]`` and ``oneOf`` / ``anyOf`` of ``null`` and one schema -> nullable T;
  ``[integer, number]`` -> number;
- ``integer`` -> long, ``number`` -> double, ``boolean``, ``null``;
- ``string`` -> string; ``format`` ``date-time`` -> timestamp-micros (UTC), ``date`` -> date,
  ``time`` -> time-micros (the clock time as written; an offset is ignored), ``contentEncoding:
  base64`` -> bytes; string ``enum`` / ``const`` -> enum (Arrow dictionary) with the symbols as written;
- ``array`` with one ``items`` schema -> array (Arrow list); without ``items``: array of JSON texts;
- ``object`` with ``additionalProperties: <schema>`` and no ``properties`` -> map;
- ``allOf`` of objects -> one record of all their properties (``required`` merged);
- ``$ref`` is followed (``referencing``); a reference back into a schema being expanded
  (recursion), other unions, ``{}`` / ``true``, no ``type``, ``patternProperties``, tuple arrays
  (``items`` list, ``prefixItems``), free-form objects -> the value's JSON text as a string.

Names: Avro names of the shadow are the property names made valid (characters outside
``[A-Za-z0-9_]`` become ``_``, a leading digit gets a ``_`` prefix, clashes get ``_2``, ``_3``...);
Arrow field names are the JSON property names as written, and enum dictionaries hold the JSON
strings as written: :func:`build_json_layout` renames the Avro layout's Arrow types.

Pulsar JSON schemas (Avro records) keep their Avro mapping, read the way Jackson writes values:
bytes and fixed as base64 text, enums by symbol name, logical types as their numbers (a
time-millis / time-micros number outside one day is JSON_NUMBER_RANGE, as no time column holds
it); unions other than null + T, and decimals, become JSON text. A field is required unless it
admits null or has a default; an absent field takes its default.

``keep_extra``: the root record gets one more nullable string column holding the properties the
schema does not name, as a JSON object text (``None`` when there were none). Its name is
:data:`EXTRA_COLUMN`, with ``_`` appended while that clashes with a property name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import referencing
import referencing.exceptions

from ..._kernels.defs import (
    J_ARRAY,
    J_BOOL,
    J_BYTES_B64,
    J_DATE,
    J_DOUBLE,
    J_ENUM,
    J_FIXED_B64,
    J_FLOAT,
    J_INT,
    J_LONG,
    J_MAP,
    J_NULL,
    J_NULLABLE,
    J_OBJECT,
    J_STRING,
    J_TEXT,
    J_TIME,
    J_TIME_MICROS,
    J_TIME_MILLIS,
    J_TIMESTAMP,
    K_LIST,
    K_MAP,
    K_STRUCT,
)
from ...errors import SchemaError
from ..avro import schema as av
from ..avro.defaults import encode_default
from ..avro.plan import Layout, build_layout
from .schema import JsonSchemaModel

if TYPE_CHECKING:
    from referencing._core import Resolver as _Resolver

    Resolver = _Resolver[Any]

__all__ = ["EXTRA_COLUMN", "JsonMapping", "map_model", "build_json_layout", "null_is_valid"]

EXTRA_COLUMN = "_extra"
"""Arrow name of the ``keep_extra`` column (``_`` is appended while a property has that name)."""

_INVALID = re.compile(r"[^A-Za-z0-9_]")
_NULL = av.Primitive("null")
# keywords that say what a value is (a schema made only of other keywords constrains, not types)
_TYPING = frozenset(
    {
        "type",
        "$ref",
        "properties",
        "items",
        "prefixItems",
        "enum",
        "const",
        "oneOf",
        "anyOf",
        "allOf",
        "additionalProperties",
        "patternProperties",
        "$dynamicRef",
        "$recursiveRef",
    }
)
_FORMATS = {
    "date-time": (J_TIMESTAMP, "long", "timestamp-micros"),
    "date": (J_DATE, "int", "date"),
    "time": (J_TIME, "long", "time-micros"),
}
_TEXT_DEPTH = av.MAX_DEPTH - 4  # deeper schemas become JSON text (the Avro side limits nesting)


@dataclass(frozen=True)
class JsonMapping:
    """What one model maps to.

    Attributes
    ----------
    shadow : avro Schema
        The Avro schema the transcoder writes (valid Avro names).
    program : tuple
        The transcode program tree (``J_*`` nodes).
    renames : dict
        ``id(node)`` of shadow records -> Arrow field names, of shadow enums -> dictionary values.
    extra_column : str or None
        Arrow name of the ``keep_extra`` column.
    absent_if_null : dict
        ``id(node)`` of shadow records -> the optional properties whose schema refuses null: the
        encoder leaves such a property out of a row whose value is null (a decoded row holds null
        where the property was absent), since ``"name": null`` would break the schema.
    null_refused : dict
        ``id(node)`` of shadow records -> the required properties kept as JSON text whose schema
        refuses null: their column takes null (a text column is nullable), but the encoder refuses
        a null in them, as it does in a typed required property. ``id(node)`` of shadow arrays and
        maps -> ``{ITEMS}`` when their items (values) are JSON text whose schema refuses null: the
        encoder refuses a null item, which no document of the schema holds.
    """

    shadow: av.Schema
    program: tuple[Any, ...]
    renames: dict[int, tuple[str, ...]] = field(default_factory=dict)
    extra_column: str | None = None
    absent_if_null: dict[int, frozenset[str]] = field(default_factory=dict)
    null_refused: dict[int, frozenset[str]] = field(default_factory=dict)


@dataclass
class _Typed:
    """A mapped schema before its position decides nullability: ``null_ok`` says JSON null is valid."""

    shadow: av.Schema
    program: tuple[Any, ...]
    null_ok: bool


ITEMS = "[]"
"""The name :attr:`JsonMapping.null_refused` gives the items of an array or the values of a map."""


def _text(null_ok: bool = True) -> _Typed:
    return _Typed(av.Primitive("string"), (J_TEXT,), null_ok)


def _nullable(t: _Typed) -> tuple[av.Schema, tuple[Any, ...]]:
    """Shadow and program of a position that takes null (branch 0 = null, as J_NULLABLE writes)."""
    if t.shadow.type == "null":
        return t.shadow, t.program
    return av.Union([_NULL, t.shadow]), (J_NULLABLE, t.program)


def _placed(t: _Typed, nullable: bool) -> tuple[av.Schema, tuple[Any, ...]]:
    return _nullable(t) if nullable else (t.shadow, t.program)


def avro_name(text: str) -> str:
    """``text`` as a valid Avro name (see the module docstring)."""
    name = _INVALID.sub("_", text)
    return "_" + name if not name or name[0].isdigit() else name


def _distinct(name: str, taken: set[str]) -> str:
    found, n = name, 1
    while found in taken:
        n += 1
        found = f"{name}_{n}"
    taken.add(found)
    return found


class _Names:
    """Avro full names handed out in one shadow schema (named types must be unique)."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def new(self, hint: str) -> str:
        return _distinct(avro_name(hint), self.taken)


def _ignores_ref_siblings(document: Any) -> bool:
    """Drafts up to 07 ignore keywords beside ``$ref``; 2019-09 and later apply them too."""
    dialect = document.get("$schema") if isinstance(document, dict) else None
    return not isinstance(dialect, str) or any(d in dialect for d in ("draft-03", "draft-04", "draft-06", "draft-07"))


class _JsonSchemaMapper:
    def __init__(self, model: JsonSchemaModel) -> None:
        self.names = _Names()
        self.renames: dict[int, tuple[str, ...]] = {}
        self.absent_if_null: dict[int, frozenset[str]] = {}
        self.null_refused: dict[int, frozenset[str]] = {}
        self.model = model
        self._validator: Any = None
        self.active: list[int] = []  # id() of the schema objects being expanded: a repeat is recursion
        self.ref_siblings_ignored = _ignores_ref_siblings(model.document)

    # -- references and combinators ----------------------------------------------------------
    def _follow(self, schema: Any, resolver: Resolver) -> tuple[Any, Resolver]:
        """``schema`` with its ``$ref`` followed (repeatedly), and the resolver of where it landed."""
        for _ in range(64):
            if not isinstance(schema, dict) or "$ref" not in schema:
                return schema, resolver
            ref = schema["$ref"]
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            if not isinstance(ref, str):
                raise SchemaError(f"$ref must be a string, got {ref!r}")
            try:
                found = resolver.lookup(ref)
            except referencing.exceptions.Unresolvable:
                raise SchemaError(f"cannot resolve $ref {ref!r}: not in the document nor in its references") from None
            if not self.ref_siblings_ignored and _TYPING & rest.keys():
                # 2019-09+: the keywords beside $ref apply as well: both must hold
                return {"allOf": [found.contents, rest]}, found.resolver
            schema, resolver = found.contents, found.resolver
        raise SchemaError("$ref chain longer than 64 references")

    def map(self, schema: Any, resolver: Resolver, hint: str, depth: int) -> _Typed:
        if depth > _TEXT_DEPTH:
            return _text()
        if isinstance(schema, dict) and ("$dynamicRef" in schema or "$recursiveRef" in schema):
            return _text()
        schema, resolver = self._follow(schema, resolver)
        if isinstance(schema, bool):
            return _text()
        if not isinstance(schema, dict):
            raise SchemaError(f"a JSON Schema must be an object or a boolean, got {schema!r}")
        if id(schema) in self.active:
            return _text()  # recursion: no fixed Arrow type
        self.active.append(id(schema))
        try:
            return self._map(schema, resolver, hint, depth)
        finally:
            self.active.pop()

    def _map(self, schema: dict[str, Any], resolver: Resolver, hint: str, depth: int) -> _Typed:
        if isinstance(schema.get("allOf"), list):
            return self._all_of(schema, resolver, hint, depth)
        for key in ("oneOf", "anyOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and any(isinstance(b, bool) or _TYPING & b.keys() for b in branches):
                rest = {k: v for k, v in schema.items() if k != key}
                return self._union(branches, rest, resolver, hint, depth)
        return self._typed(schema, resolver, hint, depth)

    def _union(self, branches: list[Any], rest: dict[str, Any], resolver: Resolver, hint: str, depth: int) -> _Typed:
        if _TYPING & rest.keys():
            return _text()  # a union beside other typing keywords: no single Arrow type
        kept: list[tuple[Any, Resolver]] = []
        null_ok = False
        for b in branches:
            target, at = self._follow(b, resolver)
            if isinstance(target, dict) and (target.get("type") == "null" or target.get("const", 0) is None):
                null_ok = True
            else:
                kept.append((target, at))
        if len(kept) != 1:
            return _text()
        inner = self.map(kept[0][0], kept[0][1], hint, depth)
        return _Typed(inner.shadow, inner.program, inner.null_ok or null_ok)

    def _all_of(self, schema: dict[str, Any], resolver: Resolver, hint: str, depth: int) -> _Typed:
        rest = {k: v for k, v in schema.items() if k != "allOf"}
        parts: list[tuple[Any, Resolver]] = [(rest, resolver)] if _TYPING & rest.keys() else []
        for b in schema["allOf"]:
            target, at = self._follow(b, resolver)
            if isinstance(target, dict) and id(target) in self.active:
                return _text()
            if target is True or (isinstance(target, dict) and not _TYPING & target.keys()):
                continue  # constraints only
            parts.append((target, at))
        if not parts:
            return _text()
        if len(parts) == 1:
            return self.map(parts[0][0], parts[0][1], hint, depth)
        if all(isinstance(p, dict) and _is_object(p) for p, _ in parts):
            return self._merged_object(parts, hint, depth)
        return _text()

    def _merged_object(self, parts: list[tuple[Any, Resolver]], hint: str, depth: int) -> _Typed:
        properties: dict[str, tuple[Any, Resolver]] = {}
        required: set[str] = set()
        null_ok = True
        for p, at in parts:
            if "allOf" in p or "oneOf" in p or "anyOf" in p or "patternProperties" in p:
                return _text()
            for name, sub in (p.get("properties") or {}).items():
                properties.setdefault(name, (sub, at))  # the first definition types the column
            required.update(r for r in p.get("required") or () if isinstance(r, str))
            null_ok = null_ok and _admits_null_type(p)
        return self._record(list(properties.items()), required, hint, depth, null_ok)

    # -- types --------------------------------------------------------------------------------
    def _typed(self, schema: dict[str, Any], resolver: Resolver, hint: str, depth: int) -> _Typed:
        declared = schema.get("type")
        types = [declared] if isinstance(declared, str) else list(declared) if isinstance(declared, list) else []
        null_ok = "null" in types or declared is None
        types = [t for t in types if t != "null"]
        if set(types) == {"integer", "number"}:
            types = ["number"]
        values = schema.get("enum", [schema["const"]] if "const" in schema else None)
        if isinstance(values, list):
            null_ok = null_ok and None in values if declared is not None else None in values
            strings = [v for v in values if v is not None]
            if strings and all(isinstance(v, str) for v in strings) and types in ([], ["string"]):
                return self._enum(strings, hint, null_ok)
            if declared is None:
                return _text(null_ok)
        if not types:
            if declared is not None:  # type "null" only
                return _Typed(_NULL, (J_NULL,), True)
            return _text()
        if len(types) > 1:
            return _text()
        kind = types[0]
        if kind == "string":
            return self._string(schema, null_ok)
        if kind == "integer":
            return _Typed(av.Primitive("long"), (J_LONG,), null_ok)
        if kind == "number":
            return _Typed(av.Primitive("double"), (J_DOUBLE,), null_ok)
        if kind == "boolean":
            return _Typed(av.Primitive("boolean"), (J_BOOL,), null_ok)
        if kind == "array":
            return self._array(schema, resolver, hint, depth, null_ok)
        if kind == "object":
            return self._object(schema, resolver, hint, depth, null_ok)
        raise SchemaError(f"unknown JSON Schema type {kind!r}")

    def _string(self, schema: dict[str, Any], null_ok: bool) -> _Typed:
        if schema.get("contentEncoding") == "base64":
            return _Typed(av.Primitive("bytes"), (J_BYTES_B64,), null_ok)
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            op, base, logical = _FORMATS[fmt]
            return _Typed(av.Primitive(base, logical), (op,), null_ok)
        return _Typed(av.Primitive("string"), (J_STRING,), null_ok)

    def _enum(self, values: list[str], hint: str, null_ok: bool) -> _Typed:
        symbols = tuple(dict.fromkeys(values))
        taken: set[str] = set()
        node = av.Enum(self.names.new(hint + "_enum"), None, [], [_distinct(avro_name(s), taken) for s in symbols])
        self.renames[id(node)] = symbols
        return _Typed(node, (J_ENUM, symbols), null_ok)

    def _array(self, schema: dict[str, Any], resolver: Resolver, hint: str, depth: int, null_ok: bool) -> _Typed:
        items = schema.get("items", True)
        if "prefixItems" in schema or isinstance(items, list):
            return _text(null_ok)
        item = self.map(items, resolver, hint + "_item", depth + 1)
        shadow, program = _placed(item, item.null_ok)
        node = av.Array(shadow)
        self._text_items(node, item, items, resolver)
        return _Typed(node, (J_ARRAY, program), null_ok)

    def _object(self, schema: dict[str, Any], resolver: Resolver, hint: str, depth: int, null_ok: bool) -> _Typed:
        if schema.get("patternProperties"):
            return _text(null_ok)
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties", True)
        if properties:
            required = {r for r in schema.get("required") or () if isinstance(r, str)}
            return self._record([(k, (v, resolver)) for k, v in properties.items()], required, hint, depth, null_ok)
        if isinstance(extra, dict) and _TYPING & extra.keys():
            value = self.map(extra, resolver, hint + "_value", depth + 1)
            shadow, program = _placed(value, value.null_ok)
            node = av.Map(shadow)
            self._text_items(node, value, extra, resolver)
            return _Typed(node, (J_MAP, program), null_ok)
        return _text(null_ok)

    def _record(
        self,
        properties: list[tuple[str, tuple[Any, Resolver]]],
        required: set[str],
        hint: str,
        depth: int,
        null_ok: bool,
    ) -> _Typed:
        record = av.Record(self.names.new(hint), None, [])
        taken: set[str] = set()
        fields: list[tuple[str, tuple[Any, ...], bytes | None]] = []
        absent: set[str] = set()
        refused: set[str] = set()
        for name, (sub, at) in properties:
            t = self.map(sub, at, f"{record.name}_{name}", depth + 1)
            is_required = name in required
            # a JSON-text column takes null whatever its schema says: ask the schema itself
            is_text = t.program == (J_TEXT,)
            refuses_null = not t.null_ok or (is_text and not self._admits_null(sub, at))
            if not is_required and refuses_null:
                absent.add(name)
            if is_required and is_text and refuses_null:
                refused.add(name)
            shadow, program = _placed(t, t.null_ok or not is_required)
            record.fields.append(av.Field(_distinct(avro_name(name), taken), shadow))
            missing = None if is_required else (b"" if shadow.type == "null" else b"\x00")
            fields.append((name, program, missing))
        self.renames[id(record)] = tuple(name for name, _ in properties)
        if absent:
            self.absent_if_null[id(record)] = frozenset(absent)
        if refused:
            self.null_refused[id(record)] = frozenset(refused)
        return _Typed(record, (J_OBJECT, tuple(fields), False), null_ok)

    def _text_items(self, node: av.Schema, item: _Typed, schema: Any, resolver: Resolver) -> None:
        """Mark the array or map ``node`` when its items are JSON text whose schema refuses null
        (a text column takes null, so the mapping alone does not say it)."""
        if item.program == (J_TEXT,) and not self._admits_null(schema, resolver):
            self.null_refused[id(node)] = frozenset({ITEMS})

    def _admits_null(self, schema: Any, resolver: Resolver) -> bool:
        """Whether JSON null is valid under ``schema`` (its references read through ``resolver``),
        as the ``jsonschema`` validator decides; a schema it cannot settle counts as admitting null
        (null is then written, as before this check)."""
        if self._validator is None:
            self._validator = self.model.validator()
        return null_is_valid(self._validator, schema, resolver)


def null_is_valid(validator: Any, schema: Any, resolver: Resolver) -> bool:
    """Whether JSON null is valid under ``schema`` (its references read through ``resolver``), as the
    ``jsonschema`` ``validator`` of its document decides; a schema it cannot settle counts as
    admitting null."""
    try:
        return next(iter(validator.descend(None, schema, resolver=resolver)), None) is None
    except (RecursionError, referencing.exceptions.Unresolvable):
        return True


def _is_object(schema: dict[str, Any]) -> bool:
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
    return "object" in types or (declared is None and "properties" in schema)


def _admits_null_type(schema: dict[str, Any]) -> bool:
    declared = schema.get("type")
    return declared is None or declared == "null" or (isinstance(declared, list) and "null" in declared)


# -- Pulsar JSON: Avro definitions read as Jackson writes them --------------------------------------


class _AvroMapper:
    def __init__(self) -> None:
        self.records: dict[int, av.Record] = {}  # a named record used twice maps to one shadow record
        self.programs: dict[int, tuple[Any, ...]] = {}

    def map(self, node: av.Schema) -> tuple[av.Schema, tuple[Any, ...]]:
        if isinstance(node, av.Union):
            inner = node.nullable_of
            if inner is None:
                return av.Primitive("string"), (J_TEXT,)
            shadow, program = self.map(inner)
            return av.Union([_NULL, shadow]), (J_NULLABLE, program)
        if isinstance(node, av.Record):
            return self._record(node)
        if isinstance(node, av.Enum):
            return node, (J_ENUM, tuple(node.symbols))
        if isinstance(node, av.Array):
            items, program = self.map(node.items)
            return av.Array(items), (J_ARRAY, program)
        if isinstance(node, av.Map):
            values, program = self.map(node.values)
            return av.Map(values), (J_MAP, program)
        if isinstance(node, av.Fixed):
            if node.logical == "decimal":
                return av.Primitive("string"), (J_TEXT,)
            return node, (J_FIXED_B64, node.size)
        assert isinstance(node, av.Primitive)
        if node.logical == "decimal":
            return av.Primitive("string"), (J_TEXT,)
        if node.logical in ("time-millis", "time-micros"):  # a number within one day
            return node, ((J_TIME_MILLIS if node.logical == "time-millis" else J_TIME_MICROS),)
        op = {
            "null": J_NULL,
            "boolean": J_BOOL,
            "int": J_INT,
            "long": J_LONG,
            "float": J_FLOAT,
            "double": J_DOUBLE,
            "bytes": J_BYTES_B64,
            "string": J_STRING,
        }[node.type]
        return node, (op,)

    def _record(self, node: av.Record) -> tuple[av.Schema, tuple[Any, ...]]:
        found = self.records.get(id(node))
        if found is not None:
            return found, self.programs[id(node)]
        shadow = av.Record(node.name, node.namespace, list(node.aliases), kind=node.kind)
        self.records[id(node)] = shadow
        fields = []
        for f in node.fields:
            ftype, program = self.map(f.type)
            missing: bytes | None = None
            if f.has_default:
                default = json.dumps(f.default) if program == (J_TEXT,) else f.default
                missing = encode_default(ftype, default, f"default of {node.fullname}.{f.name}")
            elif av.admits_null(ftype):
                missing = b"\x00" if isinstance(ftype, av.Union) else b""
            shadow.fields.append(av.Field(f.name, ftype, aliases=list(f.aliases)))
            fields.append((f.name, program, missing))
        program_node = (J_OBJECT, tuple(fields), False)
        self.programs[id(node)] = program_node
        return shadow, program_node


def _with_extra(mapping: JsonMapping) -> JsonMapping:
    """``mapping`` whose root record also keeps the unknown properties (the ``keep_extra`` column);
    of a root that may be null, the record inside the ``value`` column."""
    root, program = mapping.shadow, mapping.program
    wrapped = isinstance(root, av.Union) and program[0] == J_NULLABLE
    if wrapped:
        assert isinstance(root, av.Union)
        root, program = root.branches[1], program[1]
    if not isinstance(root, av.Record) or program[0] != J_OBJECT:
        raise SchemaError("keep_extra needs a schema whose root is an object with properties")
    arrow_names = list(mapping.renames.get(id(root), [f.name for f in root.fields]))
    column = EXTRA_COLUMN
    while column in arrow_names:
        column += "_"
    taken = {f.name for f in root.fields}
    shadow = av.Record(root.name, root.namespace, list(root.aliases), list(root.fields), root.kind)
    shadow.fields.append(av.Field(_distinct(avro_name(column), taken), av.Union([_NULL, av.Primitive("string")])))
    renames = dict(mapping.renames)
    renames.pop(id(root), None)
    renames[id(shadow)] = (*arrow_names, column)
    absent = dict(mapping.absent_if_null)
    if id(root) in absent:
        absent[id(shadow)] = absent.pop(id(root))
    refused = dict(mapping.null_refused)
    if id(root) in refused:
        refused[id(shadow)] = refused.pop(id(root))
    kept: tuple[av.Schema, tuple[Any, ...]] = (shadow, (J_OBJECT, program[1], True))
    if wrapped:
        kept = av.Union([_NULL, kept[0]]), (J_NULLABLE, kept[1])
    return JsonMapping(*kept, renames, column, absent, refused)


def map_model(model: JsonSchemaModel) -> JsonMapping:
    """The shadow schema and transcode program of ``model`` (see the module docstring).

    Raises
    ------
    SchemaError
        A ``$ref`` that resolves nowhere, an unknown ``type``, ``keep_extra`` on a schema whose
        root is not an object with properties, an Avro default that does not fit.
    """
    if model.kind == "avro":
        assert model.avro is not None
        shadow, program = _AvroMapper().map(model.avro)
        mapping = JsonMapping(shadow, program)
    else:
        mapper = _JsonSchemaMapper(model)
        hint = model.name if model.name != "Record" else "Record"
        t = mapper.map(model.document, model.resolver(), hint, 0)
        flat = isinstance(t.shadow, av.Record) and not t.null_ok
        shadow, program = (t.shadow, t.program) if flat else _placed(t, t.null_ok)
        mapping = JsonMapping(
            shadow,
            program,
            mapper.renames,
            absent_if_null=mapper.absent_if_null,
            null_refused=mapper.null_refused,
        )
    return _with_extra(mapping) if model.keep_extra else mapping


def build_json_layout(mapping: JsonMapping) -> Layout:
    """The Avro layout of the shadow schema, its Arrow types renamed to the JSON names."""
    layout = build_layout(mapping.shadow)
    if not mapping.renames:
        return layout
    slots = layout.slots
    for sid in range(len(slots) - 1, 0, -1):  # children always come after their parent
        slot = slots[sid]
        node = slot.node
        if isinstance(node, av.Enum) and id(node) in mapping.renames:
            slot.symbols = list(mapping.renames[id(node)])
        elif slot.kind == K_STRUCT and isinstance(node, av.Record):
            names = mapping.renames.get(id(node), tuple(f.name for f in node.fields))
            slot.type = pa.struct(
                [
                    pa.field(n, slots[c].type, nullable=av.admits_null(f.type))
                    for n, c, f in zip(names, slot.children, node.fields)
                ]
            )
        elif slot.kind == K_LIST:
            item = slot.type.value_field
            slot.type = pa.list_(pa.field(item.name, slots[slot.children[0]].type, nullable=item.nullable))
        elif slot.kind == K_MAP:
            value = slot.type.item_field
            slot.type = pa.map_(
                pa.string(), pa.field(value.name, slots[slot.children[1]].type, nullable=value.nullable)
            )
    root = slots[0]
    if layout.is_record:
        layout.names = list(mapping.renames.get(id(mapping.shadow), layout.names))
    root.type = pa.struct([pa.field(n, slots[c].type) for n, c in zip(layout.names, root.children)])
    return layout
