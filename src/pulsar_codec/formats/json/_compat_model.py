"""The model the JSON Schema compatibility rules compare (see :mod:`.compat`).

A document is read the way Confluent's registry reads it (the everit model): every keyword group
makes one typed subschema (``type``, ``enum``, ``const``, ``not``, each of ``allOf`` / ``anyOf`` /
``oneOf``, and the keywords of a type the document does not declare); several of them form a
synthetic ``allOf``, none an empty schema; a list of types is an ``anyOf`` of one subschema per
type. ``$ref`` is followed with the ``referencing`` library.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import referencing
import referencing.exceptions
import referencing.jsonschema

from ...errors import SchemaError

if TYPE_CHECKING:
    from referencing._core import Resolver  # not exported by the package; typing only

__all__ = ["JsonSchemaDocument", "Node", "canonical_form", "json_text", "parse"]

_DEFAULT_BASE = "urn:pulsar-codec:schema"
_TYPE_NAMES = frozenset({"string", "integer", "number", "boolean", "null", "array", "object"})
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_STRING_KEYWORDS = ("minLength", "maxLength", "pattern", "format")
_ARRAY_KEYWORDS = ("items", "additionalItems", "maxItems", "minItems", "uniqueItems", "contains")
_ARRAY_KEYWORDS_MODERN = (*_ARRAY_KEYWORDS, "prefixItems", "maxContains", "minContains", "unevaluatedItems")
_OBJECT_KEYWORDS = (
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "dependencies",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
)
_OBJECT_KEYWORDS_MODERN = (*_OBJECT_KEYWORDS, "dependentRequired", "dependentSchemas", "unevaluatedProperties")


# --------------------------------------------------------------------------------------------
# the model: what a document's keywords make of a subschema


@dataclass(eq=False)
class Node:
    """A subschema as its keywords type it (one kind per node; several kinds form an allOf)."""

    kind: str = "empty"  # empty true false object array string number boolean null enum const not combined conditional
    key: str = ""  # identity of the source text, for merging duplicate subschemas of a combination
    common: tuple[Any, ...] = (None, None, None, False, None)  # $id, title, description, has default, default
    has_default: bool = False
    connect_type: str | None = None  # Kafka Connect's "connect.type" annotation of the document
    # string
    max_length: Any = None
    min_length: Any = None
    pattern: str | None = None
    # number
    maximum: Any = None
    minimum: Any = None
    exclusive_maximum: Any = None
    exclusive_minimum: Any = None
    multiple_of: Any = None
    integer: bool = False
    # enum / const (values as canonical JSON text)
    values: tuple[str, ...] = ()
    # combined / not
    criterion: str = ""
    subschemas: list[Node] = field(default_factory=list)
    child: Node | None = None
    # object
    properties: dict[str, Node] = field(default_factory=dict)
    required: frozenset[str] = frozenset()
    additional: bool = True
    additional_schema: Node | None = None
    pattern_properties: list[tuple[str, Node]] = field(default_factory=list)
    unevaluated: Node | None = None
    dependency_arrays: dict[str, frozenset[str]] = field(default_factory=dict)
    dependency_schemas: dict[str, Node] = field(default_factory=dict)
    max_properties: Any = None
    min_properties: Any = None
    # array
    items: Node | None = None
    item_list: list[Node] = field(default_factory=list)
    additional_items: bool = True
    additional_items_schema: Node | None = None
    unevaluated_items: Node | None = None
    max_items: Any = None
    min_items: Any = None
    unique_items: bool = False
    max_contains: Any = None
    min_contains: Any = None

    @property
    def is_empty(self) -> bool:
        """Accepts everything (``{}`` or ``true``)."""
        return self.kind in ("empty", "true")


def json_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _schema_error(where: str, message: str) -> SchemaError:
    return SchemaError(f"invalid JSON Schema at #{where}: {message}")


class _Builder:
    """Turns a document into :class:`Node` trees, resolving ``$ref`` with ``referencing``."""

    def __init__(self, root: Any, references: Mapping[str, Any]) -> None:
        dialect = root.get("$schema") if isinstance(root, dict) else None
        default = referencing.jsonschema.DRAFT7
        spec = referencing.jsonschema.specification_with(dialect, default=default) if dialect else default
        self.modern = spec.name in ("draft2019-09", "draft2020-12")
        self.draft4 = spec.name in ("draft3", "draft4")
        self.spec = spec
        resources = [
            (str(name), referencing.Resource.from_contents(_load(doc), default_specification=spec))
            for name, doc in references.items()
        ]
        root_resource = referencing.Resource.from_contents(root, default_specification=spec)
        base = root_resource.id() or _DEFAULT_BASE
        registry: referencing.Registry[Any] = referencing.Registry().with_resources([*resources, (base, root_resource)])
        self.root_resolver = registry.resolver(base_uri=base)
        self.cache: dict[int, Node] = {}
        self.following: set[int] = set()

    def build(self, value: Any, resolver: Resolver[Any], where: str) -> Node:
        if isinstance(value, bool):
            return Node(kind="true" if value else "false", key=json_text(value))
        if not isinstance(value, dict):
            raise _schema_error(where, f"a schema is an object or a boolean, not {type(value).__name__}")
        cached = self.cache.get(id(value))
        if cached is not None:
            return cached
        if "$id" in value or "id" in value:
            resolver = resolver.in_subresource(
                referencing.Resource.from_contents(value, default_specification=self.spec)
            )
        ref = value.get("$ref")
        if isinstance(ref, str):
            return self._follow(value, ref, resolver, where)
        node = Node(key=json_text(value))
        self.cache[id(value)] = node  # before the children, so a recursive $ref finds it
        self._fill(node, value, resolver, where)
        return node

    def _follow(self, value: dict[str, Any], ref: str, resolver: Resolver[Any], where: str) -> Node:
        if id(value) in self.following:
            raise _schema_error(where, f"$ref {ref!r} refers to itself without a schema in between")
        try:
            resolved = resolver.lookup(ref)
        except referencing.exceptions.Unresolvable as exc:
            raise _schema_error(where, f"cannot resolve $ref {ref!r} ({type(exc).__name__})") from None
        self.following.add(id(value))
        try:
            node = self.build(resolved.contents, resolved.resolver, where)
        finally:
            self.following.discard(id(value))
        self.cache[id(value)] = node
        return node

    def _child(self, value: Any, resolver: Resolver[Any], where: str) -> Node:
        return self.build(value, resolver, where)

    def _fill(self, node: Node, d: dict[str, Any], resolver: Resolver[Any], where: str) -> None:
        parts: list[Node] = []
        consumed: set[str] = set()
        if "enum" in d:
            values = d["enum"]
            if not isinstance(values, list):
                raise _schema_error(where, "enum must be an array")
            parts.append(Node(kind="enum", key="enum" + json_text(values), values=tuple(map(json_text, values))))
        for criterion in ("allOf", "anyOf", "oneOf"):
            if criterion in d:
                subs = d[criterion]
                if not isinstance(subs, list) or not subs:
                    raise _schema_error(where, f"{criterion} must be a non-empty array")
                children = [self._child(s, resolver, f"{where}/{criterion}/{i}") for i, s in enumerate(subs)]
                parts.append(
                    Node(kind="combined", key=json_text({criterion: subs}), criterion=criterion, subschemas=children)
                )
        if "not" in d:
            parts.append(
                Node(
                    kind="not", key=json_text({"not": d["not"]}), child=self._child(d["not"], resolver, where + "/not")
                )
            )
        if "const" in d and not self.draft4:
            parts.append(Node(kind="const", key="const" + json_text(d["const"]), values=(json_text(d["const"]),)))
        if "type" in d:
            declared = d["type"]
            names = declared if isinstance(declared, list) else [declared]
            if not names or not all(isinstance(n, str) and n in _TYPE_NAMES for n in names):
                raise _schema_error(where, f"unknown type {declared!r}")
            typed = [self._typed(n, d, resolver, where, consumed) for n in names]
            if isinstance(declared, list):
                parts.append(Node(kind="combined", key="type" + json_text(d), criterion="anyOf", subschemas=typed))
            else:
                parts.extend(typed)
        # keywords of a type the document does not declare still make a schema of that type
        rest = {k for k in d if k not in consumed}
        array_keywords = _ARRAY_KEYWORDS_MODERN if self.modern else _ARRAY_KEYWORDS
        object_keywords = _OBJECT_KEYWORDS_MODERN if self.modern else _OBJECT_KEYWORDS
        for name, keywords in (
            ("array", array_keywords),
            ("object", object_keywords),
            ("number", _NUMBER_KEYWORDS),
            ("string", _STRING_KEYWORDS),
        ):
            if rest & set(keywords):
                parts.append(self._typed(name, d, resolver, where, consumed))
        if not self.draft4 and rest & {"if", "then", "else"}:
            parts.append(Node(kind="conditional", key="if" + json_text(d)))
        if len(parts) == 1:
            built = parts[0]
        elif parts:
            built = Node(kind="combined", criterion="allOf", subschemas=parts)
        else:
            built = Node(kind="empty")
        for name, value in vars(built).items():
            if name != "key":
                setattr(node, name, value)
        id_keyword = "id" if self.draft4 else "$id"
        node.has_default = "default" in d
        connect_type = d.get("connect.type")
        node.connect_type = connect_type if isinstance(connect_type, str) else None
        node.common = (d.get(id_keyword), d.get("title"), d.get("description"), node.has_default, d.get("default"))

    def _typed(self, name: str, d: dict[str, Any], resolver: Resolver[Any], where: str, consumed: set[str]) -> Node:
        key = f"{name}:" + json_text(d)
        if name in ("integer", "number"):
            consumed.update(_NUMBER_KEYWORDS)
            node = Node(kind="number", key=key, integer=name == "integer")
            node.maximum, node.minimum, node.multiple_of = d.get("maximum"), d.get("minimum"), d.get("multipleOf")
            # draft 4 writes the exclusive limits as flags on maximum / minimum: no limit of their own
            node.exclusive_maximum = _number_or_none(d.get("exclusiveMaximum"))
            node.exclusive_minimum = _number_or_none(d.get("exclusiveMinimum"))
            return node
        if name == "string":
            consumed.update(_STRING_KEYWORDS)
            pattern = d.get("pattern")
            return Node(
                kind="string",
                key=key,
                max_length=d.get("maxLength"),
                min_length=d.get("minLength"),
                pattern=pattern if isinstance(pattern, str) else None,
            )
        if name == "array":
            consumed.update(_ARRAY_KEYWORDS_MODERN if self.modern else _ARRAY_KEYWORDS)
            return self._array(d, resolver, where, key)
        if name == "object":
            consumed.update(_OBJECT_KEYWORDS_MODERN if self.modern else _OBJECT_KEYWORDS)
            return self._object(d, resolver, where, key)
        return Node(kind=name, key=key)  # boolean, null

    def _object(self, d: dict[str, Any], resolver: Resolver[Any], where: str, key: str) -> Node:
        node = Node(
            kind="object", key=key, max_properties=d.get("maxProperties"), min_properties=d.get("minProperties")
        )
        props = d.get("properties", {})
        if not isinstance(props, dict):
            raise _schema_error(where, "properties must be an object")
        node.properties = {n: self._child(s, resolver, f"{where}/properties/{n}") for n, s in props.items()}
        required = d.get("required", [])
        node.required = (
            frozenset(r for r in required if isinstance(r, str)) if isinstance(required, list) else frozenset()
        )
        extra = d.get("additionalProperties", True)
        if isinstance(extra, bool):
            node.additional = extra
        else:
            node.additional_schema = self._child(extra, resolver, where + "/additionalProperties")
        patterns = d.get("patternProperties", {})
        if isinstance(patterns, dict):
            node.pattern_properties = [
                (p, self._child(s, resolver, f"{where}/patternProperties/{p}")) for p, s in patterns.items()
            ]
        if self.modern and "unevaluatedProperties" in d:
            node.unevaluated = self._child(d["unevaluatedProperties"], resolver, where + "/unevaluatedProperties")
        dependencies = dict(d.get("dependencies", {}) or {})
        if self.modern:
            dependencies.update(d.get("dependentRequired", {}) or {})
            dependencies.update(d.get("dependentSchemas", {}) or {})
        for prop, dep in dependencies.items():
            if isinstance(dep, list):
                node.dependency_arrays[prop] = frozenset(x for x in dep if isinstance(x, str))
            else:
                node.dependency_schemas[prop] = self._child(dep, resolver, f"{where}/dependencies/{prop}")
        return node

    def _array(self, d: dict[str, Any], resolver: Resolver[Any], where: str, key: str) -> Node:
        node = Node(
            kind="array",
            key=key,
            max_items=d.get("maxItems"),
            min_items=d.get("minItems"),
            unique_items=d.get("uniqueItems") is True,
            max_contains=d.get("maxContains") if self.modern else None,
            min_contains=d.get("minContains") if self.modern else None,
        )
        items = d.get("items")
        if self.modern and "prefixItems" in d:
            tuple_items, rest = d["prefixItems"], d.get("items", True)
        elif self.modern and isinstance(items, bool):
            tuple_items, rest = None, items  # 2020-12 items: false forbids every item, as additionalItems did
        elif isinstance(items, list):
            tuple_items, rest = items, d.get("additionalItems", True)
        else:
            tuple_items, rest = None, d.get("additionalItems", True)
            if items is not None:
                node.items = self._child(items, resolver, where + "/items")
        if isinstance(tuple_items, list):
            node.item_list = [self._child(s, resolver, f"{where}/items/{i}") for i, s in enumerate(tuple_items)]
        if isinstance(rest, bool):
            node.additional_items = rest
        else:
            node.additional_items_schema = self._child(rest, resolver, where + "/additionalItems")
        if self.modern and "unevaluatedItems" in d:
            node.unevaluated_items = self._child(d["unevaluatedItems"], resolver, where + "/unevaluatedItems")
        return node


def _number_or_none(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# --------------------------------------------------------------------------------------------
# parsing


@dataclass(frozen=True, eq=False)
class JsonSchemaDocument:
    """A parsed JSON Schema document as the checks take it.

    Attributes
    ----------
    document : dict or bool
        The decoded document.
    canonical : str
        See :func:`canonical_form`.
    root : object
        The compared model of the document (internal).
    """

    document: Any
    canonical: str
    root: Node


def _load(schema: Any) -> Any:
    if isinstance(schema, (bytes, bytearray, memoryview)):
        try:
            schema = bytes(schema).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(f"JSON schema bytes are not UTF-8: {exc}") from None
    if isinstance(schema, str):
        try:
            return json.loads(schema)
        except ValueError:
            raise SchemaError(f"JSON schema text is not valid JSON: {schema[:80]!r}") from None
    return schema


def parse(schema: Any, references: Mapping[str, Any] | None = None) -> JsonSchemaDocument:
    """Parse a JSON Schema document.

    Parameters
    ----------
    schema : str, bytes, dict, bool or JsonSchemaDocument
        The document (draft-04 to 2020-12; draft-07 when ``$schema`` does not say).
    references : mapping of str to document, optional
        Documents that ``$ref`` may name besides the schema itself (a registry's ``references``,
        keyed by their name or URI).

    Returns
    -------
    JsonSchemaDocument

    Raises
    ------
    SchemaError
        Not JSON, not an object or boolean, an unknown ``type``, or a ``$ref`` that does not resolve.
    """
    if isinstance(schema, JsonSchemaDocument):
        return schema
    document = _load(schema)
    if isinstance(document, Mapping) and not isinstance(document, dict):
        document = dict(document)
    if not isinstance(document, (dict, bool)):
        raise SchemaError(f"a JSON Schema document is an object or a boolean, not {type(document).__name__}")
    builder = _Builder(document, references or {})
    try:
        root = builder.build(document, builder.root_resolver, "")
    except RecursionError:
        raise SchemaError("JSON schema nested too deeply") from None
    return JsonSchemaDocument(document, json.dumps(document, separators=(",", ":"), ensure_ascii=False), root)


def canonical_form(schema: Any) -> str:
    """Compact JSON text of the document, keys in their order (property order decides column order)."""
    return parse(schema).canonical
