"""Schema compatibility: Avro reader/writer checks, registry strategies and PIP-44 checks.

Three layers:

* :func:`check` decides whether data written with one Avro schema can be read with another. It
  reproduces the verdicts of Avro Java's ``SchemaCompatibility`` (1.10 and later), which is what
  both the Pulsar broker and the Confluent Schema Registry run: named types match on their
  unqualified names or a reader alias, record fields match on name or reader field alias,
  reader-only fields need a default, enums accept missing writer symbols only when the reader has
  a valid enum default, writer unions need every branch readable, the promotions
  int->long/float/double, long->float/double, float->double and string<->bytes hold, and recursive
  schemas terminate because every (reader, writer) pair is evaluated once.
* :func:`check_strategy` applies a compatibility level (Pulsar's ``ALWAYS_COMPATIBLE`` ...
  ``FULL_TRANSITIVE`` or Confluent's ``NONE`` ... ``FULL_TRANSITIVE``) to a new schema and the
  versions already registered.
* :func:`check_producer` and :func:`check_consumer` follow Pulsar's broker (PIP-44): a producer
  whose schema is already registered is accepted as is, a consumer is checked with ``BACKWARD``
  against the latest version for the non-transitive levels; ``EXTERNAL`` schemas (PIP-420) are only
  compatible with ``EXTERNAL`` ones and ``KEY_VALUE`` schemas are checked key and value apart.

Schemas are accepted as JSON text, ``bytes``, dicts, lists (unions) or the result of
:func:`parse`. Malformed schemas raise :class:`~pulsar_codec.errors.SchemaError`.
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from .errors import IncompatibleSchemaError, SchemaError

__all__ = [
    "AvroSchema",
    "CompatibilityResult",
    "Incompatibility",
    "Strategy",
    "canonical_form",
    "check",
    "check_consumer",
    "check_producer",
    "check_strategy",
    "fingerprint",
    "parse",
]

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
# writer type -> reader types it can be promoted to (Avro specification, "Schema Resolution")
_PROMOTIONS = {
    "int": frozenset({"long", "float", "double"}),
    "long": frozenset({"float", "double"}),
    "float": frozenset({"double"}),
    "string": frozenset({"bytes"}),
    "bytes": frozenset({"string"}),
}


# --------------------------------------------------------------------------------------------
# parsing


class _Node:
    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind


class _Named(_Node):
    __slots__ = ("name", "namespace", "fullname", "aliases")

    def __init__(self, kind: str, name: str, namespace: str | None, aliases: frozenset[str]) -> None:
        super().__init__(kind)
        self.name = name
        self.namespace = namespace
        self.fullname = f"{namespace}.{name}" if namespace else name
        self.aliases = aliases


class _Field:
    __slots__ = ("name", "type", "has_default", "aliases", "pos")

    def __init__(self, name: str, type_: _Node, has_default: bool, aliases: tuple[str, ...], pos: int) -> None:
        self.name = name
        self.type = type_
        self.has_default = has_default
        self.aliases = aliases
        self.pos = pos


class _Record(_Named):
    __slots__ = ("fields", "by_name")

    def __init__(self, name: str, namespace: str | None, aliases: frozenset[str]) -> None:
        super().__init__("record", name, namespace, aliases)
        self.fields: list[_Field] = []
        self.by_name: dict[str, _Field] = {}


class _Enum(_Named):
    __slots__ = ("symbols", "default")

    def __init__(self, name, namespace, aliases, symbols: tuple[str, ...], default: str | None) -> None:
        super().__init__("enum", name, namespace, aliases)
        self.symbols = symbols
        self.default = default


class _Fixed(_Named):
    __slots__ = ("size",)

    def __init__(self, name, namespace, aliases, size: int) -> None:
        super().__init__("fixed", name, namespace, aliases)
        self.size = size


class _Array(_Node):
    __slots__ = ("items",)

    def __init__(self, items: _Node) -> None:
        super().__init__("array")
        self.items = items


class _Map(_Node):
    __slots__ = ("values",)

    def __init__(self, values: _Node) -> None:
        super().__init__("map")
        self.values = values


class _Union(_Node):
    __slots__ = ("branches",)

    def __init__(self, branches: list[_Node]) -> None:
        super().__init__("union")
        self.branches = branches


def _branch_key(node: _Node) -> str:
    return node.fullname if isinstance(node, _Named) else node.kind


class _Parser:
    """Builds the node graph and, alongside it, a normalised JSON value (the canonical form)."""

    def __init__(self) -> None:
        self.names: dict[str, _Named] = {}

    def parse(self, obj: Any, namespace: str | None) -> tuple[_Node, Any]:
        if isinstance(obj, str):
            if obj in PRIMITIVES:
                return _Node(obj), obj
            named = self._lookup(obj, namespace)
            return named, named.fullname
        if isinstance(obj, list):
            return self._union(obj, namespace)
        if isinstance(obj, dict):
            return self._object(obj, namespace)
        raise SchemaError(f"invalid Avro schema element {obj!r}: expected a string, an object or a list")

    def _lookup(self, name: str, namespace: str | None) -> _Named:
        candidates = [name] if "." in name or not namespace else [f"{namespace}.{name}", name]
        for candidate in candidates:
            found = self.names.get(candidate)
            if found is not None:
                return found
        raise SchemaError(f"unknown Avro type {name!r}")

    def _union(self, obj: list, namespace: str | None) -> tuple[_Node, Any]:
        branches, normal, seen = [], [], set()
        for item in obj:
            node, norm = self.parse(item, namespace)
            if isinstance(node, _Union):
                raise SchemaError("a union may not directly contain another union")
            key = _branch_key(node)
            if key in seen:
                raise SchemaError(f"duplicate {key!r} in union")
            seen.add(key)
            branches.append(node)
            normal.append(norm)
        return _Union(branches), normal

    def _object(self, obj: dict, namespace: str | None) -> tuple[_Node, Any]:
        if "type" not in obj:
            raise SchemaError(f"Avro schema object without a 'type': {obj!r}")
        kind = obj["type"]
        if not isinstance(kind, str):
            # {"type": {...}} or {"type": [...]}: a wrapped schema
            node, norm = self.parse(kind, namespace)
            return node, _merge_props(obj, norm)
        if kind in PRIMITIVES:
            extra = {k: v for k, v in obj.items() if k != "type"}
            return _Node(kind), (dict(sorted({**extra, "type": kind}.items())) if extra else kind)
        if kind in ("record", "error"):
            return self._record(obj, namespace)
        if kind == "enum":
            return self._enum(obj, namespace)
        if kind == "fixed":
            return self._fixed(obj, namespace)
        if kind == "array":
            if "items" not in obj:
                raise SchemaError("Avro array schema without 'items'")
            items, norm = self.parse(obj["items"], namespace)
            return _Array(items), _normal_obj(obj, items=norm)
        if kind == "map":
            if "values" not in obj:
                raise SchemaError("Avro map schema without 'values'")
            values, norm = self.parse(obj["values"], namespace)
            return _Map(values), _normal_obj(obj, values=norm)
        # {"type": "SomeNamedType"} refers to a type defined earlier
        named = self._lookup(kind, namespace)
        return named, _merge_props(obj, named.fullname)

    def _names(self, obj: dict, namespace: str | None, what: str) -> tuple[str, str | None, frozenset[str]]:
        name = obj.get("name")
        if not isinstance(name, str) or not name:
            raise SchemaError(f"Avro {what} schema without a valid 'name'")
        if "." in name:
            namespace, name = name.rsplit(".", 1)
        elif "namespace" in obj:
            ns = obj["namespace"]
            if ns is not None and not isinstance(ns, str):
                raise SchemaError(f"invalid namespace {ns!r} for Avro type {name!r}")
            namespace = ns
        namespace = namespace or None
        aliases = obj.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise SchemaError(f"aliases of Avro type {name!r} must be a list of strings")
        full_aliases = frozenset(a if "." in a or not namespace else f"{namespace}.{a}" for a in aliases)
        return name, namespace, full_aliases

    def _register(self, node: _Named) -> None:
        if node.fullname in PRIMITIVES:
            raise SchemaError(f"Avro type name {node.fullname!r} is a primitive type name")
        if node.fullname in self.names:
            raise SchemaError(f"Avro type {node.fullname!r} is defined twice")
        self.names[node.fullname] = node

    def _named_normal(self, obj: dict, node: _Named, **replaced: Any) -> dict:
        out = {k: v for k, v in obj.items() if k not in ("namespace", "name", "aliases")}
        out["name"] = node.fullname
        if node.aliases:
            out["aliases"] = sorted(node.aliases)
        out.update(replaced)
        return dict(sorted(out.items()))

    def _record(self, obj: dict, namespace: str | None) -> tuple[_Node, Any]:
        name, ns, aliases = self._names(obj, namespace, "record")
        node = _Record(name, ns, aliases)
        self._register(node)  # before the fields, so the record may refer to itself
        fields = obj.get("fields")
        if not isinstance(fields, list):
            raise SchemaError(f"Avro record {node.fullname!r} without a 'fields' list")
        normal_fields = []
        for pos, f in enumerate(fields):
            if not isinstance(f, dict) or not isinstance(f.get("name"), str) or "type" not in f:
                raise SchemaError(f"invalid field #{pos} in Avro record {node.fullname!r}")
            if f["name"] in node.by_name:
                raise SchemaError(f"field {f['name']!r} appears twice in Avro record {node.fullname!r}")
            ftype, fnorm = self.parse(f["type"], ns)
            faliases = f.get("aliases", [])
            if not isinstance(faliases, list) or not all(isinstance(a, str) for a in faliases):
                raise SchemaError(f"aliases of field {f['name']!r} must be a list of strings")
            fld = _Field(f["name"], ftype, "default" in f, tuple(faliases), pos)
            node.fields.append(fld)
            node.by_name[fld.name] = fld
            normal_fields.append(dict(sorted({**f, "type": fnorm}.items())))
        return node, self._named_normal(obj, node, type="record", fields=normal_fields)

    def _enum(self, obj: dict, namespace: str | None) -> tuple[_Node, Any]:
        name, ns, aliases = self._names(obj, namespace, "enum")
        symbols = obj.get("symbols")
        if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
            raise SchemaError(f"Avro enum {name!r} without a list of string 'symbols'")
        if len(set(symbols)) != len(symbols):
            raise SchemaError(f"Avro enum {name!r} has duplicate symbols")
        default = obj.get("default")
        if default is not None and default not in symbols:
            raise SchemaError(f"default {default!r} of Avro enum {name!r} is not one of its symbols")
        node = _Enum(name, ns, aliases, tuple(symbols), default)
        self._register(node)
        return node, self._named_normal(obj, node)

    def _fixed(self, obj: dict, namespace: str | None) -> tuple[_Node, Any]:
        name, ns, aliases = self._names(obj, namespace, "fixed")
        size = obj.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise SchemaError(f"Avro fixed {name!r} needs a non-negative integer 'size'")
        node = _Fixed(name, ns, aliases, size)
        self._register(node)
        return node, self._named_normal(obj, node)


def _normal_obj(obj: dict, **replaced: Any) -> dict:
    return dict(sorted({**obj, **replaced}.items()))


def _merge_props(obj: dict, inner: Any) -> Any:
    extra = {k: v for k, v in obj.items() if k != "type"}
    if not extra:
        return inner
    return dict(sorted({**extra, "type": inner}.items()))


@dataclass(frozen=True, eq=False)
class AvroSchema:
    """A parsed Avro schema: the node graph used by the checks, plus its canonical text.

    Attributes
    ----------
    root : object
        The schema graph (named types referenced several times are the same object).
    canonical : str
        Compact JSON with sorted keys and every name fully qualified; see :func:`canonical_form`.
    """

    root: Any
    canonical: str

    @property
    def name(self) -> str:
        """Full name of a named root type, else its type (``"int"``, ``"union"``...)."""
        return self.root.fullname if isinstance(self.root, _Named) else self.root.kind


def _load_json(schema: Any) -> Any:
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
    if isinstance(schema, (dict, list)):
        return schema
    raise SchemaError(f"cannot read a schema from {type(schema).__name__}")


def parse(schema: Any) -> AvroSchema:
    """Parse an Avro schema given as JSON text, bytes, a dict or a list.

    Parameters
    ----------
    schema : str, bytes, dict, list or AvroSchema
        The schema. An :class:`AvroSchema` is returned unchanged.

    Returns
    -------
    AvroSchema

    Raises
    ------
    SchemaError
        The schema is malformed: unknown or redefined type names, missing attributes, an enum
        default that is not a symbol, nested or duplicate union branches.
    """
    if isinstance(schema, AvroSchema):
        return schema
    obj = _load_json(schema)
    try:
        root, normal = _Parser().parse(obj, None)
    except RecursionError:
        raise SchemaError("Avro schema nested too deeply") from None
    return AvroSchema(root, json.dumps(normal, separators=(",", ":"), sort_keys=True, ensure_ascii=False))


def canonical_form(schema: Any, schema_type: str = "AVRO") -> str:
    """Text under which a registry considers two schemas the same.

    For Avro, compact JSON with sorted keys, every type name fully qualified (``namespace``
    attributes folded into the names, aliases qualified) and primitive objects without attributes
    written as bare names. Unlike Avro's Parsing Canonical Form it keeps ``default``, ``aliases``,
    ``logicalType``, ``doc`` and custom properties: schemas that differ in them decode differently
    or evolve differently, so they must not share an id. Other schema types: JSON documents are
    re-serialised compactly with sorted keys, anything else (Protobuf text) is stripped of outer
    whitespace.
    """
    schema_type = (schema_type or "AVRO").upper()
    if schema_type == "AVRO":
        return parse(schema).canonical
    if isinstance(schema, (bytes, bytearray, memoryview)):
        schema = bytes(schema).decode("utf-8", "replace")
    if isinstance(schema, (dict, list)):
        return json.dumps(schema, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    if schema_type == "JSON":
        try:
            return json.dumps(json.loads(schema), separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        except ValueError:
            raise SchemaError(f"JSON schema text is not valid JSON: {str(schema)[:80]!r}") from None
    return str(schema).strip()


def fingerprint(schema: Any, schema_type: str = "AVRO") -> str:
    """SHA-256 (hex) of ``schema_type`` and :func:`canonical_form`; the registries' dedup key."""
    schema_type = (schema_type or "AVRO").upper()
    text = canonical_form(schema, schema_type)
    return hashlib.sha256(f"{schema_type}\n{text}".encode()).hexdigest()


# --------------------------------------------------------------------------------------------
# reader/writer compatibility


@dataclass(frozen=True)
class Incompatibility:
    """One reason why a reader cannot read a writer.

    Attributes
    ----------
    kind : str
        ``TYPE_MISMATCH``, ``NAME_MISMATCH``, ``FIXED_SIZE_MISMATCH``, ``MISSING_ENUM_SYMBOLS``,
        ``READER_FIELD_MISSING_DEFAULT_VALUE``, ``MISSING_UNION_BRANCH`` (Avro Java's names), or
        ``SCHEMA_TYPE_MISMATCH`` / ``STRATEGY`` / ``NO_SCHEMA`` for the checks around them.
    location : str
        JSON pointer into the reader schema, as Avro Java reports it (``/fields/1/type/symbols``).
    path : str
        The same place in words: ``Event.status``, ``Event.tags[]``, ``Event.attrs{}``,
        ``Event.payload|1`` (union branch 1).
    message : str
        What is wrong.
    """

    kind: str
    location: str
    path: str
    message: str

    def __str__(self) -> str:
        if not (self.kind or self.location or self.path):
            return self.message  # a reason relayed from a remote registry, already in words
        where = f" at {self.location}" if self.location else ""
        path = f" ({self.path})" if self.path else ""
        return f"{self.kind}{where}{path}: {self.message}"


@dataclass(frozen=True)
class CompatibilityResult:
    """Outcome of a check; true when compatible.

    Attributes
    ----------
    compatible : bool
    incompatibilities : tuple of Incompatibility
        Empty when compatible.
    """

    compatible: bool
    incompatibilities: tuple[Incompatibility, ...] = field(default=())

    def __bool__(self) -> bool:
        return self.compatible

    @property
    def reasons(self) -> list[str]:
        """Readable reasons, one per incompatibility, naming where it is."""
        return [str(i) for i in self.incompatibilities]

    def raise_if_incompatible(self, message: str = "schema is incompatible") -> None:
        """Raise :class:`~pulsar_codec.errors.IncompatibleSchemaError` with the reasons if incompatible."""
        if not self.compatible:
            reasons = self.reasons
            detail = "; ".join(reasons[:5]) + ("; ..." if len(reasons) > 5 else "")
            raise IncompatibleSchemaError(f"{message}: {detail}" if detail else message, reasons=reasons)

    @classmethod
    def ok(cls) -> CompatibilityResult:
        return _COMPATIBLE

    @classmethod
    def fail(cls, kind: str, message: str, location: str = "", path: str = "") -> CompatibilityResult:
        return cls(False, (Incompatibility(kind, location, path, message),))

    @classmethod
    def merge(cls, results: Iterable[CompatibilityResult]) -> CompatibilityResult:
        items: list[Incompatibility] = []
        compatible = True
        for r in results:
            compatible = compatible and r.compatible
            items.extend(i for i in r.incompatibilities if i not in items)
        return cls(compatible, tuple(items))


_COMPATIBLE = CompatibilityResult(True)
_IN_PROGRESS = object()


class _Checker:
    """Avro Java's ReaderWriterCompatibilityChecker, rule for rule.

    ``memo`` maps (reader node, writer node) identities to their list of incompatibilities; a pair
    met again while it is being computed counts as compatible, which ends recursion.
    """

    def __init__(self) -> None:
        self.memo: dict[tuple[int, int], Any] = {}
        self.keep: list[Any] = []  # keeps nodes alive so their ids stay unique during the check

    def compat(self, reader: _Node, writer: _Node, loc: list[tuple[str, str]]) -> list[Incompatibility]:
        key = (id(reader), id(writer))
        found = self.memo.get(key)
        if found is _IN_PROGRESS:
            return []
        if found is not None:
            return found
        self.memo[key] = _IN_PROGRESS
        self.keep.append((reader, writer))
        result = self._calculate(reader, writer, loc)
        self.memo[key] = result
        return result

    def _sub(self, token: tuple[str, str], reader: _Node, writer: _Node, loc: list) -> list[Incompatibility]:
        return self.compat(reader, writer, [*loc, token])

    def _calculate(self, reader: _Node, writer: _Node, loc: list) -> list[Incompatibility]:
        r, w = reader.kind, writer.kind
        if r == w:
            if r in PRIMITIVES:
                return []
            if r == "array":
                return self._sub(("items", "[]"), reader.items, writer.items, loc)
            if r == "map":
                return self._sub(("values", "{}"), reader.values, writer.values, loc)
            if r == "fixed":
                out = self._names(reader, writer, loc)
                if reader.size != writer.size:
                    out.append(
                        _incompat(
                            "FIXED_SIZE_MISMATCH",
                            [*loc, ("size", "")],
                            f"fixed {reader.fullname} has size {reader.size}, the writer's {writer.fullname} "
                            f"has size {writer.size}",
                        )
                    )
                return out
            if r == "enum":
                out = self._names(reader, writer, loc)
                missing = sorted(set(writer.symbols) - set(reader.symbols))
                if missing and not (reader.default is not None and reader.default in reader.symbols):
                    out.append(
                        _incompat(
                            "MISSING_ENUM_SYMBOLS",
                            [*loc, ("symbols", "")],
                            f"reader enum {reader.fullname} lacks writer symbols {missing} and has no default",
                        )
                    )
                return out
            if r == "record":
                return self._names(reader, writer, loc) + self._fields(reader, writer, loc)
            # union read as union: every writer branch must be readable by the reader union
            out = []
            for i, branch in enumerate(writer.branches):
                if self.compat(reader, branch, []):
                    out.append(
                        _incompat(
                            "MISSING_UNION_BRANCH",
                            [*loc, (str(i), f"|{i}")],
                            f"reader union lacks writer branch {i} ({_describe(branch)})",
                        )
                    )
            return out
        if w == "union":
            # a non-union reader must read every branch the writer may have chosen
            out = []
            for i, branch in enumerate(writer.branches):
                out.extend(x for x in self._sub((str(i), f"|{i}"), reader, branch, loc) if x not in out)
            return out
        if r == "union":
            for branch in reader.branches:
                if not self.compat(branch, writer, []):
                    return []
            return [_incompat("MISSING_UNION_BRANCH", loc, f"reader union lacks writer type {_describe(writer)}")]
        if r in _PROMOTIONS.get(w, ()):
            return []
        return [
            _incompat(
                "TYPE_MISMATCH",
                loc,
                f"reader type {_describe(reader)} is not compatible with writer type {_describe(writer)}",
            )
        ]

    def _names(self, reader: _Named, writer: _Named, loc: list) -> list[Incompatibility]:
        # current Avro Java compares unqualified names, then the reader's aliases with the writer's full name
        if reader.name == writer.name or writer.fullname in reader.aliases:
            return []
        return [
            _incompat(
                "NAME_MISMATCH",
                [*loc, ("name", "")],
                f"reader {reader.kind} {reader.fullname} does not match writer {writer.kind} {writer.fullname}",
            )
        ]

    def _fields(self, reader: _Record, writer: _Record, loc: list) -> list[Incompatibility]:
        out: list[Incompatibility] = []
        for rf in reader.fields:
            floc = [*loc, ("fields", ""), (str(rf.pos), "." + rf.name)]
            matches = [writer.by_name[n] for n in (rf.name, *rf.aliases) if n in writer.by_name]
            if len(matches) > 1:
                raise SchemaError(
                    f"reader field {reader.fullname}.{rf.name} matches several fields of writer record {writer.fullname}"
                )
            if matches:
                found = self._sub(("type", ""), rf.type, matches[0].type, floc)
            elif rf.has_default:
                continue
            elif isinstance(rf.type, _Enum) and rf.type.default is not None:
                # Avro Java quirk: an enum field with an enum default is checked against the whole
                # writer record, which can only fail, with a type mismatch
                found = self._sub(("type", ""), rf.type, writer, floc)
            else:
                found = [
                    _incompat(
                        "READER_FIELD_MISSING_DEFAULT_VALUE",
                        floc,
                        f"reader field {rf.name!r} has no default and the writer has no such field",
                    )
                ]
            out.extend(x for x in found if x not in out)
        return out


def _describe(node: _Node) -> str:
    if isinstance(node, _Named):
        return f"{node.kind.upper()} {node.fullname}"
    return node.kind.upper()


def _incompat(kind: str, loc: list[tuple[str, str]], message: str) -> Incompatibility:
    pointer = "/" + "/".join(t.replace("~", "~0").replace("/", "~1") for t, _ in loc)
    path = "".join(p for _, p in loc)
    return Incompatibility(kind, pointer, path, message)


def _check_parsed(reader: AvroSchema, writer: AvroSchema) -> CompatibilityResult:
    try:
        found = _Checker().compat(reader.root, writer.root, [])
    except RecursionError:
        raise SchemaError("schemas are nested too deeply to compare") from None
    if not found:
        return _COMPATIBLE
    # the pointer starts below the root (as Avro Java's does); the readable path starts at its name
    root = reader.root.name if isinstance(reader.root, _Named) else reader.root.kind
    return CompatibilityResult(
        False, tuple(Incompatibility(i.kind, i.location, root + i.path, i.message) for i in found)
    )


def check(reader: Any, writer: Any) -> CompatibilityResult:
    """Can data written with ``writer`` be read with ``reader``?

    Parameters
    ----------
    reader, writer : str, bytes, dict, list or AvroSchema
        Avro schemas.

    Returns
    -------
    CompatibilityResult
        True when compatible; otherwise ``.reasons`` lists every problem with its location.

    Raises
    ------
    SchemaError
        A schema is malformed, or a reader field's aliases match several writer fields.
    """
    return _check_parsed(parse(reader), parse(writer))


# --------------------------------------------------------------------------------------------
# strategies


class Strategy(str, enum.Enum):
    """Compatibility levels of Pulsar (``SchemaCompatibilityStrategy``) and Confluent.

    ``NONE`` (Confluent) behaves like ``ALWAYS_COMPATIBLE`` (Pulsar) but keeps its name so a
    registry reports back the level it was given. ``UNDEFINED`` is Pulsar's "not set"; a checker
    given it rejects every change, as Pulsar's does.
    """

    ALWAYS_COMPATIBLE = "ALWAYS_COMPATIBLE"
    ALWAYS_INCOMPATIBLE = "ALWAYS_INCOMPATIBLE"
    NONE = "NONE"
    BACKWARD = "BACKWARD"
    FORWARD = "FORWARD"
    FULL = "FULL"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"
    UNDEFINED = "UNDEFINED"

    @classmethod
    def parse(cls, value: Strategy | str) -> Strategy:
        """Accept a member or its name in any case (``"backward"``, ``"Full_Transitive"``)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                pass
        names = ", ".join(m.value for m in cls)
        raise ValueError(f"unknown compatibility strategy {value!r}; expected one of {names}")

    @property
    def transitive(self) -> bool:
        """Checked against every existing version, not only the latest."""
        return self.value.endswith("_TRANSITIVE")

    @property
    def always_compatible(self) -> bool:
        return self in (Strategy.ALWAYS_COMPATIBLE, Strategy.NONE)

    @property
    def never_compatible(self) -> bool:
        return self in (Strategy.ALWAYS_INCOMPATIBLE, Strategy.UNDEFINED)

    @property
    def backward(self) -> bool:
        """The new schema must read the existing ones."""
        return self.value.split("_")[0] in ("BACKWARD", "FULL")

    @property
    def forward(self) -> bool:
        """The existing schemas must read the new one."""
        return self.value.split("_")[0] in ("FORWARD", "FULL")


def _never(strategy: Strategy) -> CompatibilityResult:
    return CompatibilityResult.fail("STRATEGY", f"Schema compatibility strategy is {strategy.value}")


def _label(i: int, labels: Sequence[str] | None) -> str:
    return labels[i] if labels is not None else f"existing schema #{i}"


def _avro_pair(new: AvroSchema, old: AvroSchema, strategy: Strategy, label: str) -> CompatibilityResult:
    parts = []
    if strategy.backward:
        r = _check_parsed(new, old)
        parts.append(_relabel(r, f"new schema cannot read {label}"))
    if strategy.forward:
        r = _check_parsed(old, new)
        parts.append(_relabel(r, f"{label} cannot read the new schema"))
    return CompatibilityResult.merge(parts)


def _relabel(result: CompatibilityResult, context: str) -> CompatibilityResult:
    if result.compatible:
        return result
    return CompatibilityResult(
        False,
        tuple(Incompatibility(i.kind, i.location, i.path, f"{context}: {i.message}") for i in result.incompatibilities),
    )


def _targets(existing: Sequence[Any], strategy: Strategy) -> list[int]:
    """Indexes to check, newest first (the list is given oldest first)."""
    order = list(range(len(existing) - 1, -1, -1))
    return order if strategy.transitive else order[:1]


def check_strategy(
    new_schema: Any,
    existing_schemas: Sequence[Any],
    strategy: Strategy | str,
    *,
    labels: Sequence[str] | None = None,
) -> CompatibilityResult:
    """Check an Avro schema against the registered versions under a compatibility level.

    Parameters
    ----------
    new_schema : str, bytes, dict, list or AvroSchema
        The schema being added.
    existing_schemas : sequence
        The versions already registered, oldest first (the last one is the latest).
    strategy : Strategy or str
        ``BACKWARD``: the new schema reads the latest; ``FORWARD``: the latest reads the new one;
        ``FULL``: both; the ``_TRANSITIVE`` forms check every version instead of the latest.
        ``ALWAYS_COMPATIBLE`` / ``NONE`` always pass, ``ALWAYS_INCOMPATIBLE`` / ``UNDEFINED``
        never pass once a version exists.
    labels : sequence of str, optional
        Names for the existing schemas in the reasons (``"version 3"``); defaults to their index.

    Returns
    -------
    CompatibilityResult
        With no existing schema every strategy passes (the first version is always accepted, by
        Pulsar and Confluent alike).
    """
    strategy = Strategy.parse(strategy)
    new = parse(new_schema)
    if strategy.always_compatible or not existing_schemas:
        return _COMPATIBLE
    if strategy.never_compatible:
        return _never(strategy)
    return CompatibilityResult.merge(
        _avro_pair(new, parse(existing_schemas[i]), strategy, _label(i, labels))
        for i in _targets(existing_schemas, strategy)
    )


# --------------------------------------------------------------------------------------------
# Pulsar typed schemas and PIP-44

_AVRO_BASED = frozenset({"AVRO", "PROTOBUF"})  # Pulsar's PROTOBUF schema data is an Avro schema
_TYPE_ALIASES = {"KEYVALUE": "KEY_VALUE", "PROTOBUFNATIVE": "PROTOBUF_NATIVE", "BOOL": "BOOLEAN"}


@dataclass(frozen=True)
class _Typed:
    type: str
    data: bytes
    properties: Mapping[str, str]


def _type_name(value: Any) -> str:
    name = getattr(value, "name", value)
    if not isinstance(name, str):
        raise SchemaError(f"cannot tell the schema type of {value!r}")
    name = name.strip().upper()
    return _TYPE_ALIASES.get(name, name)


def _typed(schema: Any) -> _Typed:
    """SchemaInfo-like objects (``.type``, ``.schema``, ``.properties``) or (type, schema[, properties])."""
    if isinstance(schema, _Typed):
        return schema
    if isinstance(schema, tuple):
        if len(schema) not in (2, 3):
            raise SchemaError("a typed schema tuple is (type, schema) or (type, schema, properties)")
        type_, data = schema[0], schema[1]
        props = schema[2] if len(schema) == 3 else {}
    elif hasattr(schema, "type") and hasattr(schema, "schema"):
        type_, data, props = schema.type, schema.schema, getattr(schema, "properties", None) or {}
    else:
        raise SchemaError(f"expected a SchemaInfo or a (type, schema) pair, got {type(schema).__name__}")
    if data is None:
        data = b""
    elif isinstance(data, str):
        data = data.encode("utf-8")
    elif isinstance(data, (dict, list)):
        data = json.dumps(data).encode("utf-8")
    else:
        data = bytes(data)
    return _Typed(_type_name(type_), data, dict(props))


def _split_keyvalue(info: _Typed) -> tuple[_Typed, _Typed]:
    """Key and value SchemaInfos of a KEY_VALUE schema (INLINE layout of the two schema datas)."""
    data, parts, pos = info.data, [], 0
    for part in ("key", "value"):
        if len(data) - pos < 4:
            raise SchemaError(f"KeyValue schema data is truncated before the {part} schema length")
        n = int.from_bytes(data[pos : pos + 4], "big", signed=True)
        pos += 4
        if n < 0:
            n = 0  # a null sub-schema
        if n > len(data) - pos:
            raise SchemaError(f"KeyValue {part} schema length {n} runs past the end of the data")
        parts.append(data[pos : pos + n])
        pos += n
    out = []
    for part, sub in zip(("key", "value"), parts, strict=True):
        props_text = info.properties.get(f"{part}.schema.properties")
        try:
            props = json.loads(props_text) if props_text else {}
        except ValueError:
            props = {}
        out.append(_Typed(_type_name(info.properties.get(f"{part}.schema.type", "BYTES")), sub, props))
    return out[0], out[1]


def _identity(info: _Typed) -> tuple:
    """What "the same schema" means for a PIP-44 producer: same type and same canonical content."""
    if info.type == "KEY_VALUE":
        try:
            key, value = _split_keyvalue(info)
        except SchemaError:
            return (info.type, info.data)
        return (info.type, _identity(key), _identity(value))
    if info.type in _AVRO_BASED or info.type == "JSON":
        try:
            return (info.type, parse(info.data).canonical)
        except SchemaError:
            pass
    return (info.type, info.data)


def _avro_or_none(data: bytes) -> AvroSchema | None:
    try:
        return parse(data)
    except SchemaError:
        return None


def _check_typed(old: _Typed, new: _Typed, strategy: Strategy, label: str, skip_identical: bool) -> CompatibilityResult:
    """One existing schema against the new one, as Pulsar's broker dispatches by schema type."""
    if strategy.always_compatible:
        return _COMPATIBLE
    if "EXTERNAL" in (old.type, new.type):
        if old.type == new.type:
            return _COMPATIBLE  # two external schemas: their registry owns the content check
        return CompatibilityResult.fail(
            "SCHEMA_TYPE_MISMATCH", f"{label}: External schema is not compatible with the other schema types"
        )
    if old.type != new.type:
        return CompatibilityResult.fail(
            "SCHEMA_TYPE_MISMATCH",
            f"{label}: Incompatible schema: exists schema type {old.type}, new schema type {new.type}",
        )
    if skip_identical and _identity(old) == _identity(new):
        return _COMPATIBLE
    if new.type == "KEY_VALUE":
        return _check_keyvalue(old, new, strategy, label)
    if strategy.never_compatible:
        return _never(strategy)
    if new.type in _AVRO_BASED:
        try:
            return _avro_pair(parse(new.data), parse(old.data), strategy, label)
        except SchemaError as exc:  # Pulsar turns a parse failure into an incompatibility
            return CompatibilityResult.fail("INVALID_SCHEMA", f"{label}: {exc}")
    if new.type == "JSON":
        return _check_json(old, new, strategy, label)
    return _COMPATIBLE  # primitives and types without a content checker (Pulsar's DEFAULT check)


def _check_json(old: _Typed, new: _Typed, strategy: Strategy, label: str) -> CompatibilityResult:
    # Pulsar JSON schemas carry an Avro schema; legacy ones carry a Jackson JSON schema, which is
    # only compared by "id", and a change of format either way is allowed
    old_avro, new_avro = _avro_or_none(old.data), _avro_or_none(new.data)
    if old_avro is not None and new_avro is not None:
        return _avro_pair(new_avro, old_avro, strategy, label)
    try:
        old_json = json.loads(old.data) if old_avro is None else None
        new_json = json.loads(new.data) if new_avro is None else None
    except ValueError:
        return CompatibilityResult.fail("SCHEMA_TYPE_MISMATCH", f"{label}: Unknown schema format")
    if old_json is None or new_json is None:
        return _COMPATIBLE
    old_id = old_json.get("id") if isinstance(old_json, dict) else None
    new_id = new_json.get("id") if isinstance(new_json, dict) else None
    if old_id != new_id:
        return CompatibilityResult.fail(
            "NAME_MISMATCH", f"{label}: legacy JSON schema ids differ ({old_id!r} vs {new_id!r})"
        )
    return _COMPATIBLE


def _check_keyvalue(old: _Typed, new: _Typed, strategy: Strategy, label: str) -> CompatibilityResult:
    old_key, old_value = _split_keyvalue(old)
    new_key, new_value = _split_keyvalue(new)
    if old_key.type != new_key.type or old_value.type != new_value.type:
        return CompatibilityResult.fail(
            "SCHEMA_TYPE_MISMATCH",
            f"{label}: Key schemas or Value schemas are different schema type, from key schema type is "
            f"{old_key.type} and to key schema is {new_key.type}, from value schema is {old_value.type} "
            f"and to value schema is {new_value.type}",
        )
    return CompatibilityResult.merge(
        [
            _relabel(_check_typed(old_key, new_key, strategy, label, False), "key"),
            _relabel(_check_typed(old_value, new_value, strategy, label, False), "value"),
        ]
    )


def check_producer(schema: Any, existing: Sequence[Any], strategy: Strategy | str) -> CompatibilityResult:
    """PIP-44 check of a producer's schema against a topic's schemas.

    Parameters
    ----------
    schema : SchemaInfo or tuple
        The producer's schema: an object with ``type`` (a ``SchemaType`` or its name), ``schema``
        (bytes or text) and ``properties``, such as ``pulsar_codec.pulsar_types.SchemaInfo``, or a
        ``(type, schema)`` / ``(type, schema, properties)`` tuple.
    existing : sequence
        The topic's live schemas, oldest first.
    strategy : Strategy or str

    Returns
    -------
    CompatibilityResult
        Compatible when the topic has no schema yet, when the schema is already registered (same
        type and canonical content: accepted without a check), or when the strategy accepts it
        against the latest version (against all versions for the transitive strategies).
    """
    strategy = Strategy.parse(strategy)
    new = _typed(schema)
    old = [_typed(s) for s in existing]
    if not old:
        return _COMPATIBLE
    ident = _identity(new)
    if any(_identity(o) == ident for o in old):
        return _COMPATIBLE
    return CompatibilityResult.merge(
        _check_typed(old[i], new, strategy, f"existing schema #{i}", not strategy.transitive)
        for i in _targets(old, strategy)
    )


def check_consumer(schema: Any, existing: Sequence[Any], strategy: Strategy | str) -> CompatibilityResult:
    """PIP-44 check of a consumer's schema against a topic's schemas, as Pulsar's broker does it.

    ``ALWAYS_COMPATIBLE`` (and ``NONE``) pass. A topic without schemas fails ("Topic does not have
    schema to check"). For ``BACKWARD``, ``FORWARD``, ``FORWARD_TRANSITIVE`` and ``FULL`` the
    consumer's schema must read the latest version (a ``BACKWARD`` check); for every other strategy
    the strategy itself is applied against all versions, so ``FULL_TRANSITIVE`` needs mutual
    readability with each one.

    Parameters
    ----------
    schema : SchemaInfo or tuple
        As for :func:`check_producer`.
    existing : sequence
        The topic's live schemas, oldest first.
    strategy : Strategy or str

    Returns
    -------
    CompatibilityResult
    """
    strategy = Strategy.parse(strategy)
    new = _typed(schema)
    old = [_typed(s) for s in existing]
    if strategy.always_compatible:
        return _COMPATIBLE
    if not old:
        return CompatibilityResult.fail("NO_SCHEMA", "Topic does not have schema to check")
    if strategy in (Strategy.BACKWARD, Strategy.FORWARD, Strategy.FORWARD_TRANSITIVE, Strategy.FULL):
        return _check_typed(old[-1], new, Strategy.BACKWARD, f"existing schema #{len(old) - 1}", True)
    return CompatibilityResult.merge(
        _check_typed(old[i], new, strategy, f"existing schema #{i}", False) for i in range(len(old) - 1, -1, -1)
    )
