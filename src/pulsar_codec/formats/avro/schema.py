"""Avro schema parsing (Avro 1.12 specification, "Schema Declaration").

:func:`parse` turns JSON text, a decoded JSON value or an already parsed :class:`Schema` into a tree
of schema nodes. Named types (records, enums, fixed) are registered under their full names while
parsing, so later references by name resolve to the same node object. A named type that refers to
itself, directly or through other types, is refused: it has no fixed Arrow type.

Logical types that are unknown or invalid for their underlying type are ignored, as the
specification asks: the node then behaves as its underlying type.

What Avro Java's parser (and so the Confluent and Pulsar registries) refuses is refused here too:
names outside ``[A-Za-z_][A-Za-z0-9_]*`` (types, namespace parts, aliases of named types, fields,
enum symbols), an object whose ``type`` is not a string (``{"type": {"type": "int"}}``), and field
defaults that do not fit the field's type (Java's ``Schema.isValidDefault``: a union default may
fit any branch, a ``float``/``double`` field may give its default as a number string such as
``"NaN"``).

Nesting is limited to :data:`MAX_DEPTH` levels (each record, array, map and union is one level,
counted along the deepest path, named types followed where they are used), so every walk over a
parsed schema (planning, compatibility, defaults, encoding) stays far from Python's recursion limit.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ...errors import SchemaError

__all__ = [
    "Schema",
    "Primitive",
    "Record",
    "Field",
    "Enum",
    "Array",
    "Map",
    "Fixed",
    "Union",
    "NO_DEFAULT",
    "PRIMITIVES",
    "parse",
    "admits_null",
    "to_json",
    "MAX_DEPTH",
]

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

MAX_DEPTH = 100
"""Deepest nesting a schema may have: records, arrays, maps and unions count one level each (the
default recursion limit of protobuf parsers, far beyond real schemas)."""

_COMPLEX = ("record", "error", "array", "map")
_TOO_DEEP = f"schema nested too deeply: more than {MAX_DEPTH} levels (each record, array, map and union is one)"
# what Java's Double.parseDouble accepts as a float/double field default given as a string
_DOUBLE_TEXT = re.compile(r"^\s*[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?\s*$")


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT = _NoDefault()


class Schema:
    """Base of every parsed schema node. ``type`` is the Avro type name ("record", "int", ...)."""

    type: str = ""
    logical: str | None = None

    def __repr__(self) -> str:
        return f"<avro {self.type}{' ' + self.logical if self.logical else ''}>"


class Primitive(Schema):
    """A primitive type, possibly annotated with a logical type."""

    def __init__(self, type_: str, logical: str | None = None, precision: int = 0, scale: int = 0) -> None:
        self.type = type_
        self.logical = logical
        self.precision = precision
        self.scale = scale


class Named(Schema):
    name: str
    namespace: str | None
    aliases: list[str]

    @property
    def fullname(self) -> str:
        return f"{self.namespace}.{self.name}" if self.namespace else self.name

    def names(self) -> set[str]:
        """Unqualified name and full name, used for matching named types."""
        return {self.name, self.fullname}

    def alias_names(self) -> set[str]:
        out = set()
        for a in self.aliases:
            out.add(a)
            out.add(a.rsplit(".", 1)[-1])
        return out


class Field:
    """A record field. ``default`` is the JSON default or :data:`NO_DEFAULT`."""

    def __init__(self, name: str, type_: Schema, default: Any = NO_DEFAULT, aliases: list[str] | None = None) -> None:
        self.name = name
        self.type = type_
        self.default = default
        self.aliases = list(aliases or [])

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    def __repr__(self) -> str:
        return f"<field {self.name}: {self.type!r}>"


class Record(Named):
    type = "record"

    def __init__(
        self,
        name: str,
        namespace: str | None,
        aliases: list[str],
        fields: list[Field] | None = None,
        kind: str = "record",
    ) -> None:
        self.name = name
        self.namespace = namespace
        self.aliases = aliases
        self.fields = fields if fields is not None else []
        self.kind = kind  # "record" or "error"


class Enum(Named):
    type = "enum"

    def __init__(
        self, name: str, namespace: str | None, aliases: list[str], symbols: list[str], default: str | None = None
    ) -> None:
        self.name = name
        self.namespace = namespace
        self.aliases = aliases
        self.symbols = symbols
        self.default = default


class Fixed(Named):
    type = "fixed"

    def __init__(
        self,
        name: str,
        namespace: str | None,
        aliases: list[str],
        size: int,
        logical: str | None = None,
        precision: int = 0,
        scale: int = 0,
    ) -> None:
        self.name = name
        self.namespace = namespace
        self.aliases = aliases
        self.size = size
        self.logical = logical
        self.precision = precision
        self.scale = scale


class Array(Schema):
    type = "array"

    def __init__(self, items: Schema) -> None:
        self.items = items


class Map(Schema):
    type = "map"

    def __init__(self, values: Schema) -> None:
        self.values = values


class Union(Schema):
    type = "union"

    def __init__(self, branches: list[Schema]) -> None:
        self.branches = branches

    @property
    def null_index(self) -> int | None:
        for i, b in enumerate(self.branches):
            if b.type == "null":
                return i
        return None

    @property
    def nullable_of(self) -> Schema | None:
        """The non-null branch when this is the nullable shorthand (null plus one type), else None."""
        if len(self.branches) == 2 and self.null_index is not None:
            return self.branches[1 - self.null_index]
        return None

    @property
    def branch_names(self) -> list[str]:
        """The name of each branch as the Arrow union's child (and Spark's struct field): the type,
        or a named type's short name; a short name two branches share (``a.R`` and ``b.R``) gives
        way to the full name in both, so that the children stay distinct."""
        short = [b.name if isinstance(b, Named) else b.type for b in self.branches]
        return [b.fullname if isinstance(b, Named) and short.count(s) > 1 else s for b, s in zip(self.branches, short)]


def admits_null(node: Schema) -> bool:
    """True when values of ``node`` can be null (the null type, or a union with a null branch)."""
    return node.type == "null" or (isinstance(node, Union) and node.null_index is not None)


# -- logical types ---------------------------------------------------------------------------------

_INT_LOGICAL = {"date", "time-millis"}
_LONG_LOGICAL = {
    "time-micros",
    "timestamp-millis",
    "timestamp-micros",
    "timestamp-nanos",
    "local-timestamp-millis",
    "local-timestamp-micros",
    "local-timestamp-nanos",
}


def _max_precision(size: int) -> int:
    if size <= 0:
        return 0
    return int(math.floor(math.log10(2 ** (8 * size - 1) - 1)))


def _decimal_params(obj: dict[str, Any], size: int | None) -> tuple[int, int] | None:
    precision, scale = obj.get("precision"), obj.get("scale", 0)
    if not isinstance(precision, int) or isinstance(precision, bool) or precision <= 0:
        return None
    if not isinstance(scale, int) or isinstance(scale, bool) or scale < 0 or scale > precision:
        return None
    if precision > 76:  # beyond decimal256
        return None
    if size is not None and precision > _max_precision(size):
        return None
    return precision, scale


def _primitive_logical(type_: str, obj: dict[str, Any]) -> Primitive:
    lt = obj.get("logicalType")
    if isinstance(lt, str):
        if type_ == "int" and lt in _INT_LOGICAL:
            return Primitive(type_, lt)
        if type_ == "long" and lt in _LONG_LOGICAL:
            return Primitive(type_, lt)
        if type_ == "string" and lt == "uuid":
            return Primitive(type_, lt)
        if type_ == "bytes" and lt == "decimal":
            params = _decimal_params(obj, None)
            if params:
                return Primitive(type_, lt, *params)
    return Primitive(type_)


# -- parser ------------------------------------------------------------------------------------------


def java_double(text: str) -> float | None:
    """The value Java's ``Double.parseDouble`` gives a float/double default written as a string, or
    None when it refuses the text (Avro Java reads such defaults this way)."""
    if not _DOUBLE_TEXT.match(text):
        return None
    body = text.strip().rstrip("fFdD")
    return float(body.replace("Infinity", "inf").replace("NaN", "nan"))


def _valid_value(node: Schema, value: Any) -> bool:
    """Avro Java's ``Schema.isValidDefault``: does the JSON value fit ``node``?"""
    if isinstance(node, Union):  # any branch will do (Java 1.12; the specification asks for the first)
        return any(_valid_value(b, value) for b in node.branches)
    if isinstance(node, Record):
        if not isinstance(value, dict):
            return False
        for f in node.fields:
            inner = value[f.name] if f.name in value else f.default
            if inner is NO_DEFAULT or not _valid_value(f.type, inner):
                return False
        return True
    if isinstance(node, Array):
        return isinstance(value, list) and all(_valid_value(node.items, v) for v in value)
    if isinstance(node, Map):
        return isinstance(value, dict) and all(_valid_value(node.values, v) for v in value.values())
    t = node.type
    if t in ("string", "bytes", "enum", "fixed"):
        return isinstance(value, str)
    if t in ("int", "long"):
        bits = 31 if t == "int" else 63
        return isinstance(value, int) and not isinstance(value, bool) and -(2**bits) <= value < 2**bits
    if t in ("float", "double"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "boolean":
        return isinstance(value, bool)
    return value is None  # null


def _check_default(record: Record, f: Field) -> None:
    value = f.default
    if f.type.type in ("float", "double") and isinstance(value, str):
        if java_double(value) is not None:
            return
    elif _valid_value(f.type, value):
        return
    raise SchemaError(
        f"invalid default for field {record.fullname}.{f.name}: {json.dumps(value)} does not fit {_type_text(f.type)}"
    )


def _type_text(node: Schema) -> str:
    if isinstance(node, Named):
        return f"{node.type} {node.fullname!r}"
    if isinstance(node, Union):
        return "union of " + ", ".join(_type_text(b) for b in node.branches)
    return node.type


class _Parser:
    """One parse: the named types seen so far, and the nesting height of every complex node."""

    def __init__(self, allow_recursion: bool = False) -> None:
        self.names: dict[str, Named] = {}
        self.in_progress: set[str] = set()
        self.allow_recursion = allow_recursion
        self.heights: dict[int, int] = {}  # id(node) -> levels below and including it
        self.defaults: list[tuple[Record, Field]] = []  # checked once every type is complete

    def _split(self, name: Any, namespace: Any, enclosing: str | None, what: str) -> tuple[str, str | None]:
        if not isinstance(name, str) or not name:
            raise SchemaError(f"{what} needs a non-empty string 'name', got {name!r}")
        ns: str | None
        if "." in name:
            ns, _, short = name.rpartition(".")
        else:
            short = name
            if namespace is None:
                ns = enclosing
            elif isinstance(namespace, str):
                ns = namespace
            else:
                raise SchemaError(f"namespace of {name!r} must be a string, got {namespace!r}")
        if not _NAME.match(short):
            raise SchemaError(f"invalid Avro name {short!r}")
        if ns:
            for part in ns.split("."):
                if not _NAME.match(part):
                    raise SchemaError(f"invalid Avro namespace {ns!r}")
        return short, (ns or None)

    def _aliases(self, obj: dict[str, Any], ns: str | None) -> list[str]:
        aliases = obj.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise SchemaError(f"aliases must be a list of strings, got {aliases!r}")
        for a in aliases:  # Java validates the last part of a named type's alias like a name
            if not _NAME.match(a.rpartition(".")[2]):
                raise SchemaError(f"invalid Avro name {a!r} in aliases")
        return [a if ("." in a or not ns) else f"{ns}.{a}" for a in aliases]

    def _register(self, node: Named) -> None:
        if node.fullname in self.names:
            raise SchemaError(f"the name {node.fullname!r} is defined twice")
        if node.fullname in PRIMITIVES:
            raise SchemaError(f"{node.fullname!r} is a primitive type name and cannot name a {node.type}")
        self.names[node.fullname] = node

    def _lookup(self, name: str, ns: str | None) -> Named:
        candidates = [name] if "." in name else ([f"{ns}.{name}", name] if ns else [name])
        for c in candidates:
            if c in self.in_progress and not self.allow_recursion:
                raise SchemaError(
                    f"recursive schema: type {c!r} refers to itself; a recursive type has no fixed Arrow type"
                )
            if c in self.names:
                return self.names[c]
        raise SchemaError(f"unknown Avro type {name!r}")

    def _complex(self, node: Schema, children: list[Schema]) -> Schema:
        """Record the height of a complex node from its (complete) children; refuse it past the limit."""
        height = 1 + max((self.heights.get(id(c), 0) for c in children), default=0)
        if height > MAX_DEPTH:
            raise SchemaError(_TOO_DEEP)
        self.heights[id(node)] = height
        return node

    def parse(self, obj: Any, ns: str | None, depth: int = 0) -> Schema:
        if isinstance(obj, Schema):
            return obj
        if isinstance(obj, str):
            if obj in PRIMITIVES:
                return Primitive(obj)
            return self._lookup(obj, ns)
        if depth >= MAX_DEPTH and (isinstance(obj, list) or (isinstance(obj, dict) and obj.get("type") in _COMPLEX)):
            raise SchemaError(_TOO_DEEP)  # before descending, so the parser itself never recurses deeper
        if isinstance(obj, list):
            branches = [self.parse(b, ns, depth + 1) for b in obj]
            branch_keys: set[str] = set()
            for b in branches:
                if isinstance(b, Union):
                    raise SchemaError("a union may not immediately contain another union")
                key = b.fullname if isinstance(b, Named) else b.type
                if key in branch_keys:
                    raise SchemaError(f"duplicate branch {key!r} in union")
                branch_keys.add(key)
            return self._complex(Union(branches), branches)
        if not isinstance(obj, dict):
            raise SchemaError(f"cannot parse {obj!r} as an Avro schema")
        t = obj.get("type")
        if not isinstance(t, str):
            # Avro Java reads "type" as text only: {"type": {...}} or {"type": [...]} is refused
            raise SchemaError(f"schema object needs a string 'type' (a type name), got {json.dumps(t)}")
        if t in PRIMITIVES:
            return _primitive_logical(t, obj)
        if t in ("record", "error"):
            return self._record(obj, ns, t, depth)
        if t == "enum":
            name, ens = self._split(obj.get("name"), obj.get("namespace"), ns, "enum")
            symbols = obj.get("symbols")
            if not isinstance(symbols, list) or not all(isinstance(s, str) and _NAME.match(s) for s in symbols):
                raise SchemaError(f"enum {name!r} needs a list of valid symbol names, got {symbols!r}")
            if len(set(symbols)) != len(symbols):
                raise SchemaError(f"enum {name!r} has duplicate symbols")
            default = obj.get("default")
            if default is not None and default not in symbols:
                raise SchemaError(f"enum {name!r} default {default!r} is not one of its symbols")
            enum = Enum(name, ens, self._aliases(obj, ens), list(symbols), default)
            self._register(enum)
            return enum
        if t == "fixed":
            name, fns = self._split(obj.get("name"), obj.get("namespace"), ns, "fixed")
            size = obj.get("size")
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise SchemaError(f"fixed {name!r} needs a non-negative integer 'size', got {size!r}")
            fixed = Fixed(name, fns, self._aliases(obj, fns), size)
            lt = obj.get("logicalType")
            if lt == "decimal":
                params = _decimal_params(obj, size)
                if params:
                    fixed.logical, (fixed.precision, fixed.scale) = "decimal", params
            elif lt == "duration" and size == 12:
                fixed.logical = "duration"
            elif lt == "uuid" and size == 16:
                fixed.logical = "uuid"
            self._register(fixed)
            return fixed
        if t == "array":
            if "items" not in obj:
                raise SchemaError("array schema needs 'items'")
            items = self.parse(obj["items"], ns, depth + 1)
            return self._complex(Array(items), [items])
        if t == "map":
            if "values" not in obj:
                raise SchemaError("map schema needs 'values'")
            values = self.parse(obj["values"], ns, depth + 1)
            return self._complex(Map(values), [values])
        # a reference written as {"type": "Name"}
        return self._lookup(t, ns)

    def _record(self, obj: dict[str, Any], ns: str | None, kind: str, depth: int) -> Record:
        name, rns = self._split(obj.get("name"), obj.get("namespace"), ns, "record")
        node = Record(name, rns, self._aliases(obj, rns), kind=kind)
        self._register(node)
        self.in_progress.add(node.fullname)
        fields_json = obj.get("fields")
        if not isinstance(fields_json, list):
            raise SchemaError(f"record {node.fullname!r} needs a 'fields' list")
        seen: set[str] = set()
        for f in fields_json:
            if not isinstance(f, dict):
                raise SchemaError(f"field of record {node.fullname!r} must be an object, got {f!r}")
            fname = f.get("name")
            if not isinstance(fname, str) or not _NAME.match(fname):
                raise SchemaError(f"invalid field name {fname!r} in record {node.fullname!r}")
            if fname in seen:
                raise SchemaError(f"field {fname!r} appears twice in record {node.fullname!r}")
            seen.add(fname)
            if "type" not in f:
                raise SchemaError(f"field {node.fullname}.{fname} has no 'type'")
            ftype = self.parse(f["type"], rns, depth + 1)
            aliases = f.get("aliases", [])
            if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
                raise SchemaError(f"aliases of field {fname!r} must be a list of strings")
            field = Field(fname, ftype, f["default"] if "default" in f else NO_DEFAULT, aliases)
            node.fields.append(field)
            if field.has_default:
                self.defaults.append((node, field))
        self.in_progress.discard(node.fullname)
        self._complex(node, [fld.type for fld in node.fields])
        return node


def parse(schema: Any, *, allow_recursion: bool = False) -> Schema:
    """Parse an Avro schema.

    Parameters
    ----------
    schema : str, dict, list or Schema
        JSON text (or a bare primitive name such as ``"long"``), the decoded JSON value, or an
        already parsed schema (returned unchanged).
    allow_recursion : bool, default False
        Accept named types that refer to themselves; the nodes then form a cycle. The
        compatibility rules (:mod:`pulsar_codec.formats.avro.compat`) follow such schemas; the
        decoder refuses them, as they have no fixed Arrow type.

    Returns
    -------
    Schema
        The root node.

    Raises
    ------
    SchemaError
        Malformed or unsupported schema, unknown type names, recursive types, names outside the
        Avro name rule, a field default that does not fit its type, nesting deeper than
        :data:`MAX_DEPTH` levels (also for JSON text nested too deeply to read).
    """
    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, (bytes, bytearray)):
        schema = bytes(schema).decode("utf-8")
    if isinstance(schema, str):
        text = schema.strip()
        if text in PRIMITIVES:
            schema = text
        else:
            try:
                schema = json.loads(text)
            except ValueError as exc:
                raise SchemaError(f"schema is not valid JSON: {exc}") from None
            except RecursionError:
                raise SchemaError(_TOO_DEEP) from None
    parser = _Parser(allow_recursion)
    root = parser.parse(schema, None)
    try:
        for record, f in parser.defaults:
            _check_default(record, f)
    except RecursionError:  # a default nested deeper than Python's stack, along a recursive type
        raise SchemaError("a field default is nested too deeply") from None
    return root


def to_json(node: Schema, _seen: set[str] | None = None) -> Any:
    """The canonical-ish JSON value of a parsed schema (named types written once, then by name)."""
    seen = _seen if _seen is not None else set()
    if isinstance(node, Primitive):
        if node.logical is None:
            return node.type
        out: dict[str, Any] = {"type": node.type, "logicalType": node.logical}
        if node.logical == "decimal":
            out.update(precision=node.precision, scale=node.scale)
        return out
    if isinstance(node, Union):
        return [to_json(b, seen) for b in node.branches]
    if isinstance(node, Array):
        return {"type": "array", "items": to_json(node.items, seen)}
    if isinstance(node, Map):
        return {"type": "map", "values": to_json(node.values, seen)}
    assert isinstance(node, Named)
    if node.fullname in seen:
        return node.fullname
    seen.add(node.fullname)
    out = {"type": node.type, "name": node.fullname}
    if node.aliases:
        out["aliases"] = list(node.aliases)
    if isinstance(node, Record):
        out["type"] = node.kind
        fields = []
        for f in node.fields:
            fj: dict[str, Any] = {"name": f.name, "type": to_json(f.type, seen)}
            if f.has_default:
                fj["default"] = f.default
            if f.aliases:
                fj["aliases"] = list(f.aliases)
            fields.append(fj)
        out["fields"] = fields
    elif isinstance(node, Enum):
        out["symbols"] = list(node.symbols)
        if node.default is not None:
            out["default"] = node.default
    elif isinstance(node, Fixed):
        out["size"] = node.size
        if node.logical:
            out["logicalType"] = node.logical
            if node.logical == "decimal":
                out.update(precision=node.precision, scale=node.scale)
    return out
