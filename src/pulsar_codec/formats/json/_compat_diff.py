"""Confluent's JSON Schema comparison: the differences from a writer to a reader schema (see :mod:`.compat`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from ._compat_model import Node, json_text

__all__ = ["COMPATIBLE_CHANGES_LENIENT", "COMPATIBLE_CHANGES_STRICT", "Diff", "Differ"]

# Confluent's rule names that are compatible under its default (STRICT) policy
COMPATIBLE_CHANGES_STRICT: frozenset[str] = frozenset(
    """
    ID_CHANGED DESCRIPTION_CHANGED TITLE_CHANGED DEFAULT_CHANGED SCHEMA_REMOVED TYPE_EXTENDED
    MAX_LENGTH_INCREASED MAX_LENGTH_REMOVED MIN_LENGTH_DECREASED MIN_LENGTH_REMOVED PATTERN_REMOVED
    MAXIMUM_INCREASED MAXIMUM_REMOVED MINIMUM_DECREASED MINIMUM_REMOVED EXCLUSIVE_MAXIMUM_INCREASED
    EXCLUSIVE_MAXIMUM_REMOVED EXCLUSIVE_MINIMUM_DECREASED EXCLUSIVE_MINIMUM_REMOVED MULTIPLE_OF_REDUCED
    MULTIPLE_OF_REMOVED
    REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED REQUIRED_ATTRIBUTE_REMOVED DEPENDENCY_ARRAY_NARROWED
    DEPENDENCY_ARRAY_REMOVED DEPENDENCY_SCHEMA_REMOVED MAX_PROPERTIES_INCREASED MAX_PROPERTIES_REMOVED
    MIN_PROPERTIES_DECREASED MIN_PROPERTIES_REMOVED ADDITIONAL_PROPERTIES_ADDED ADDITIONAL_PROPERTIES_EXTENDED
    UNEVALUATED_PROPERTIES_ADDED UNEVALUATED_PROPERTIES_EXTENDED PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
    REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL
    PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
    PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    MAX_ITEMS_INCREASED MAX_ITEMS_REMOVED MIN_ITEMS_DECREASED MIN_ITEMS_REMOVED MAX_CONTAINS_INCREASED
    MAX_CONTAINS_REMOVED MIN_CONTAINS_DECREASED MIN_CONTAINS_REMOVED UNIQUE_ITEMS_REMOVED ADDITIONAL_ITEMS_ADDED
    ADDITIONAL_ITEMS_EXTENDED UNEVALUATED_ITEMS_ADDED UNEVALUATED_ITEMS_EXTENDED
    ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL ITEM_ADDED_TO_CLOSED_CONTENT_MODEL
    ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL
    ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    ENUM_ARRAY_EXTENDED COMBINED_TYPE_EXTENDED PRODUCT_TYPE_NARROWED SUM_TYPE_EXTENDED NOT_TYPE_NARROWED
    """.split()
)

# ... and under its LENIENT policy, which also lets readers drop or narrow what open models allow
COMPATIBLE_CHANGES_LENIENT: frozenset[str] = COMPATIBLE_CHANGES_STRICT | frozenset(
    """
    ADDITIONAL_PROPERTIES_NARROWED ADDITIONAL_PROPERTIES_REMOVED UNEVALUATED_PROPERTIES_NARROWED
    UNEVALUATED_PROPERTIES_REMOVED REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL
    OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
    PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    """.split()
)

# --------------------------------------------------------------------------------------------
# the comparison (original = writer, update = reader)

Diff = tuple[str, tuple[str, ...]]


class Differ:
    def __init__(self, compatible: frozenset[str]) -> None:
        self.compatible = compatible
        self.memo: dict[tuple[int, int], list[Diff]] = {}
        self.active: set[tuple[int, int]] = set()
        # pairs an earlier pass found incompatible, and whether this pass assumed a cycle compatible
        self.known_bad: dict[tuple[int, int], list[Diff]] = {}
        self.assumed = False

    def ok(self, diffs: Iterable[Diff]) -> bool:
        return all(rule in self.compatible for rule, _ in diffs)

    def run(self, original: Node, update: Node) -> list[Diff]:
        """Differences of two documents' roots.

        A pair met again while it is being compared (a recursive schema) is assumed compatible,
        and pairs finished under that assumption are memoized; if the assumption was wrong, a
        memoized pair reused elsewhere would hide an incompatibility. So the comparison is repeated,
        each pass knowing every pair an earlier pass found incompatible (never wrongly: assuming
        compatibility only hides problems), until a pass assumes nothing or finds no new such pair.
        """
        known: dict[tuple[int, int], list[Diff]] = {}
        while True:
            self.memo, self.active, self.known_bad, self.assumed = {}, set(), known, False
            result = self.compare(original, update)
            bad = {pair: diffs for pair, diffs in self.memo.items() if pair not in known and not self.ok(diffs)}
            if not self.assumed or not bad:
                return result
            known = {**known, **bad}

    def compare(self, original: Node | None, update: Node | None) -> list[Diff]:
        """Differences of one pair, their paths relative to it."""
        if original is None or update is None:
            if original is None and update is None:
                return []
            return [("SCHEMA_ADDED" if original is None else "SCHEMA_REMOVED", ())]
        pair = (id(original), id(update))
        done = self.memo.get(pair)
        if done is not None:
            return done
        if pair in self.active:  # a recursive schema came back to a pair under comparison
            known = self.known_bad.get(pair)
            if known is not None:
                return known
            self.assumed = True
            return []
        self.active.add(pair)
        try:
            result = self._types(original, update)
        finally:
            self.active.discard(pair)
        self.memo[pair] = result
        return result

    def _types(self, o: Node, u: Node) -> list[Diff]:
        if o.kind != "combined" and u.kind == "combined":
            if len(u.subschemas) == 1:
                inner = self.compare(o, u.subschemas[0])
                if self.ok(inner):
                    return inner
            elif u.criterion in ("anyOf", "oneOf"):
                for sub in u.subschemas:
                    inner = self.compare(o, sub)
                    if self.ok(inner):
                        return [*inner, ("SUM_TYPE_EXTENDED", ())]
        elif o.kind == "combined" and u.kind != "combined":
            if len(o.subschemas) == 1:
                inner = self.compare(o.subschemas[0], u)
                if self.ok(inner):
                    return inner
            elif o.criterion == "allOf":
                for sub in o.subschemas:
                    inner = self.compare(sub, u)
                    if self.ok(inner):
                        return [*inner, ("PRODUCT_TYPE_NARROWED", ())]
        if o.kind != u.kind and not (o.kind in ("empty", "true") and u.kind in ("empty", "true")):
            if o.kind == "false" or u.is_empty:
                return []
            if o.connect_type == u.connect_type == "bytes":
                # Kafka Connect writes a bytes value (a Decimal) as a string or a number: both
                # types stand for the same Connect type, as Confluent's registry counts them
                return []
            return [("TYPE_CHANGED", ())]
        out: list[Diff] = []
        for rule, a, b in zip(
            ("ID_CHANGED", "TITLE_CHANGED", "DESCRIPTION_CHANGED"), o.common[:3], u.common[:3], strict=True
        ):
            if a != b:
                out.append((rule, ()))
        if o.common[3:] and u.common[3:] and json_text(o.common[3:]) != json_text(u.common[3:]):
            out.append(("DEFAULT_CHANGED", ()))
        if o.kind == "string":
            _limits(out, "maxLength", "MAX_LENGTH", o.max_length, u.max_length)
            _limits(out, "minLength", "MIN_LENGTH", o.min_length, u.min_length)
            if o.pattern != u.pattern:
                rule = (
                    "PATTERN_ADDED"
                    if o.pattern is None
                    else "PATTERN_REMOVED"
                    if u.pattern is None
                    else "PATTERN_CHANGED"
                )
                out.append((rule, ("pattern",)))
        elif o.kind == "number":
            _number(out, o, u)
        elif o.kind == "const":
            if o.values != u.values:
                out.append(("ENUM_ARRAY_CHANGED", ("const",)))
        elif o.kind == "enum":
            if o.values != u.values:
                old, new = set(o.values), set(u.values)
                rule = (
                    "ENUM_ARRAY_EXTENDED"
                    if new >= old
                    else "ENUM_ARRAY_NARROWED"
                    if old >= new
                    else "ENUM_ARRAY_CHANGED"
                )
                out.append((rule, ("enum",)))
        elif o.kind == "combined":
            out.extend(self._combined(o, u))
        elif o.kind == "not":
            inner = self.compare(u.child, o.child)  # the excluded schemas compare the other way round
            out.append(("NOT_TYPE_NARROWED" if self.ok(inner) else "NOT_TYPE_EXTENDED", ("not",)))
        elif o.kind == "object":
            self._object(out, o, u)
        elif o.kind == "array":
            self._array(out, o, u)
        return out

    def _nested(self, out: list[Diff], prefix: tuple[str, ...], o: Node | None, u: Node | None) -> list[Diff]:
        inner = [(rule, prefix + path) for rule, path in self.compare(o, u)]
        out.extend(inner)
        return inner

    def _combined(self, o: Node, u: Node) -> list[Diff]:
        out: list[Diff] = []
        if o.criterion != u.criterion:
            single_o, single_u = len(o.subschemas) == 1, len(u.subschemas) == 1
            if (
                u.criterion == "anyOf"
                or (single_o and single_u)
                or (single_o and u.criterion == "oneOf")
                or (single_u and o.criterion == "allOf")
            ):
                out.append(("COMBINED_TYPE_EXTENDED", ()))
            else:
                return [("COMBINED_TYPE_CHANGED", ())]
        originals = _distinct(o.subschemas)
        updates = _distinct(u.subschemas)
        if len(originals) < len(updates):
            out.append(("PRODUCT_TYPE_EXTENDED" if u.criterion == "allOf" else "SUM_TYPE_EXTENDED", ()))
        elif len(originals) > len(updates):
            out.append(("SUM_TYPE_NARROWED" if o.criterion in ("anyOf", "oneOf") else "PRODUCT_TYPE_NARROWED", ()))
        edges: dict[int, dict[int, list[Diff]]] = {}
        for i, sub in enumerate(originals):
            prefix = (o.criterion, str(i))
            for j, other in enumerate(updates):
                inner = [(rule, prefix + path) for rule, path in self.compare(sub, other)]
                if self.ok(inner):
                    edges.setdefault(i, {})[j] = inner
        matching = _match(edges)
        for i, j in sorted(matching.items()):
            out.extend(edges[i][j])
        if len(matching) < min(len(originals), len(updates)):
            out.append(("COMBINED_TYPE_SUBSCHEMAS_CHANGED", ()))
        return out

    def _object(self, out: list[Diff], o: Node, u: Node) -> None:
        for name in o.properties:
            if name in u.properties and (name in o.required) != (name in u.required):
                if name in o.required:
                    rule = "REQUIRED_ATTRIBUTE_REMOVED"
                elif u.properties[name].has_default:
                    rule = "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
                else:
                    rule = "REQUIRED_ATTRIBUTE_ADDED"
                out.append((rule, ("required", name)))
        for name in _union_keys(o.properties, u.properties):
            where = ("properties", name)
            before, after = o.properties.get(name), u.properties.get(name)
            if after is None:
                assert before is not None
                self._property_removed(out, where, before, u, name)
            elif before is None:
                self._property_added(out, where, after, o, u, name)
            else:
                self._nested(out, where, before, after)
        for name in _union_keys(o.dependency_arrays, u.dependency_arrays):
            old_deps, new_deps = o.dependency_arrays.get(name), u.dependency_arrays.get(name)
            where = ("dependencies", name)
            if new_deps is None:
                out.append(("DEPENDENCY_ARRAY_REMOVED", where))
            elif old_deps is None:
                out.append(("DEPENDENCY_ARRAY_ADDED", where))
            elif old_deps != new_deps:
                rule = (
                    "DEPENDENCY_ARRAY_EXTENDED"
                    if new_deps >= old_deps
                    else "DEPENDENCY_ARRAY_NARROWED"
                    if old_deps >= new_deps
                    else "DEPENDENCY_ARRAY_CHANGED"
                )
                out.append((rule, where))
        for name in _union_keys(o.dependency_schemas, u.dependency_schemas):
            where = ("dependencies", name)
            if name not in u.dependency_schemas:
                out.append(("DEPENDENCY_SCHEMA_REMOVED", where))
            elif name not in o.dependency_schemas:
                out.append(("DEPENDENCY_SCHEMA_ADDED", where))
            else:
                self._nested(out, where, o.dependency_schemas[name], u.dependency_schemas[name])
        extra_at = ("additionalProperties",)
        if o.additional != u.additional:
            out.append(("ADDITIONAL_PROPERTIES_ADDED" if u.additional else "ADDITIONAL_PROPERTIES_REMOVED", extra_at))
        elif o.additional_schema is None and u.additional_schema is not None:
            out.append(("ADDITIONAL_PROPERTIES_NARROWED", extra_at))
        elif u.additional_schema is None and o.additional_schema is not None:
            out.append(("ADDITIONAL_PROPERTIES_EXTENDED", extra_at))
        else:
            self._nested(out, extra_at, o.additional_schema, u.additional_schema)
        self._unevaluated(out, "unevaluatedProperties", "UNEVALUATED_PROPERTIES", o.unevaluated, u.unevaluated)
        _limits(out, "maxProperties", "MAX_PROPERTIES", o.max_properties, u.max_properties)
        _limits(out, "minProperties", "MIN_PROPERTIES", o.min_properties, u.min_properties)

    def _property_removed(self, out: list[Diff], where: tuple[str, ...], before: Node, u: Node, name: str) -> None:
        # whether the reader still accepts what the writer put there depends on the reader's model only
        if _open(u):
            out.append(("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", where))
            return
        partial = _partial_schema(u, name)
        if partial is not None:
            inner = self._nested(out, where, before, partial)
            covered = self.ok(inner)
            out.append(
                (
                    "PROPERTY_REMOVED_%s_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                    % ("IS_COVERED" if covered else "NOT_COVERED"),
                    where,
                )
            )
        elif before.kind == "false":
            out.append(("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", where))
        else:
            out.append(("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", where))

    def _property_added(
        self, out: list[Diff], where: tuple[str, ...], after: Node, o: Node, u: Node, name: str
    ) -> None:
        # whether the writer may have put something else there depends on the writer's model only
        required, defaulted = name in u.required, after.has_default
        if _open(o):
            if after.is_empty:
                out.append(("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", where))
            elif required:
                rule = (
                    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL"
                    if defaulted
                    else "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
                )
                out.append((rule, where))
            else:
                out.append(("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", where))
            return
        partial = _partial_schema(o, name)
        if partial is not None:
            inner = self._nested(out, where, partial, after)
            covered = self.ok(inner)
            out.append(
                (
                    "PROPERTY_ADDED_%s_BY_PARTIALLY_OPEN_CONTENT_MODEL" % ("IS_COVERED" if covered else "NOT_COVERED"),
                    where,
                )
            )
        if required:
            rule = (
                "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"
                if defaulted
                else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
            )
            out.append((rule, where))
        else:
            out.append(("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", where))

    def _unevaluated(self, out: list[Diff], keyword: str, stem: str, o: Node | None, u: Node | None) -> None:
        if o is None and u is None:
            return
        where = (keyword,)
        if o is None:
            assert u is not None
            out.append((f"{stem}_REMOVED" if u.kind == "false" else f"{stem}_NARROWED", where))
        elif u is None:
            out.append((f"{stem}_ADDED" if o.kind == "false" else f"{stem}_EXTENDED", where))
        elif o.kind == "false" and u.kind != "false":
            out.append((f"{stem}_ADDED", where))
        elif o.kind != "false" and u.kind == "false":
            out.append((f"{stem}_REMOVED", where))
        elif o.is_empty and not u.is_empty:
            out.append((f"{stem}_NARROWED", where))
        elif u.is_empty and not o.is_empty:
            out.append((f"{stem}_EXTENDED", where))
        else:
            self._nested(out, where, o, u)

    def _array(self, out: list[Diff], o: Node, u: Node) -> None:
        self._nested(out, ("items",), o.items, u.items)
        shared = min(len(o.item_list), len(u.item_list))
        for i in range(shared):
            self._nested(out, ("items", str(i)), o.item_list[i], u.item_list[i])
        for i in range(shared, len(o.item_list)):
            where, before = ("items", str(i)), o.item_list[i]
            if _open_items(u):
                out.append(("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL", where))
            elif (partial := _partial_items(u)) is not None:
                covered = self.ok(self._nested(out, where, before, partial))
                out.append(
                    (
                        "ITEM_REMOVED_%s_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                        % ("IS_COVERED" if covered else "NOT_COVERED"),
                        where,
                    )
                )
            elif before.kind == "false":
                out.append(("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", where))
            else:
                out.append(("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", where))
        for i in range(shared, len(u.item_list)):
            where, after = ("items", str(i)), u.item_list[i]
            if _open_items(o):
                rule = (
                    "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
                    if after.is_empty
                    else "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"
                )
                out.append((rule, where))
            elif (partial := _partial_items(o)) is not None:
                covered = self.ok(self._nested(out, where, partial, after))
                out.append(
                    (
                        "ITEM_ADDED_%s_BY_PARTIALLY_OPEN_CONTENT_MODEL" % ("IS_COVERED" if covered else "NOT_COVERED"),
                        where,
                    )
                )
            else:
                out.append(("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", where))
        extra_at = ("additionalItems",)
        if o.additional_items != u.additional_items:
            out.append(("ADDITIONAL_ITEMS_REMOVED" if o.additional_items else "ADDITIONAL_ITEMS_ADDED", extra_at))
        elif o.additional_items_schema is None and u.additional_items_schema is not None:
            out.append(("ADDITIONAL_ITEMS_NARROWED", extra_at))
        elif u.additional_items_schema is None and o.additional_items_schema is not None:
            out.append(("ADDITIONAL_ITEMS_EXTENDED", extra_at))
        else:
            self._nested(out, extra_at, o.additional_items_schema, u.additional_items_schema)
        self._unevaluated(out, "unevaluatedItems", "UNEVALUATED_ITEMS", o.unevaluated_items, u.unevaluated_items)
        _limits(out, "maxItems", "MAX_ITEMS", o.max_items, u.max_items)
        _limits(out, "minItems", "MIN_ITEMS", o.min_items, u.min_items)
        if o.unique_items != u.unique_items:
            out.append(("UNIQUE_ITEMS_REMOVED" if o.unique_items else "UNIQUE_ITEMS_ADDED", ("uniqueItems",)))
        _limits(out, "maxContains", "MAX_CONTAINS", o.max_contains, u.max_contains)
        _limits(out, "minContains", "MIN_CONTAINS", o.min_contains, u.min_contains)


def _union_keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return [*a, *(k for k in b if k not in a)]


def _distinct(nodes: list[Node]) -> list[Node]:
    seen: dict[str, Node] = {}
    for n in nodes:
        seen.setdefault(n.key or str(id(n)), n)
    return list(seen.values())


def _match(edges: dict[int, dict[int, list[Diff]]]) -> dict[int, int]:
    """A maximum matching of original to update subschemas along compatible pairs (augmenting paths)."""
    owner: dict[int, int] = {}  # update index -> original index

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges.get(i, {}):
            if j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    for i in edges:
        augment(i, set())
    return {i: j for j, i in owner.items()}


def _open(node: Node) -> bool:
    return (
        node.additional
        and node.additional_schema is None
        and not node.pattern_properties
        and (node.unevaluated is None or node.unevaluated.is_empty)
    )


def _partial_schema(node: Node, name: str) -> Node | None:
    for pattern, schema in node.pattern_properties:
        try:
            if re.search(pattern, name):
                return schema
        except re.error:
            continue  # an ECMA-262 pattern Python cannot compile matches nothing here
    if node.additional_schema is not None:
        return node.additional_schema
    if (
        node.additional
        and node.unevaluated is not None
        and node.unevaluated.kind != "false"
        and not node.unevaluated.is_empty
    ):
        return node.unevaluated
    return None


def _open_items(node: Node) -> bool:
    return (
        node.additional_items
        and node.additional_items_schema is None
        and (node.unevaluated_items is None or node.unevaluated_items.is_empty)
    )


def _partial_items(node: Node) -> Node | None:
    if node.additional_items_schema is not None:
        return node.additional_items_schema
    u = node.unevaluated_items
    if node.additional_items and u is not None and u.kind != "false" and not u.is_empty:
        return u
    return None


def _limits(out: list[Diff], keyword: str, stem: str, old: Any, new: Any) -> None:
    """ADDED / REMOVED / INCREASED / DECREASED of a numeric keyword."""
    if old == new:
        return
    if old is None:
        out.append((f"{stem}_ADDED", (keyword,)))
    elif new is None:
        out.append((f"{stem}_REMOVED", (keyword,)))
    elif _num(old) < _num(new):
        out.append((f"{stem}_INCREASED", (keyword,)))
    elif _num(old) > _num(new):
        out.append((f"{stem}_DECREASED", (keyword,)))


def _num(value: Any) -> Decimal:
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return Decimal(0)


def _number(out: list[Diff], o: Node, u: Node) -> None:
    _limits(out, "maximum", "MAXIMUM", o.maximum, u.maximum)
    _limits(out, "minimum", "MINIMUM", o.minimum, u.minimum)
    _limits(out, "exclusiveMaximum", "EXCLUSIVE_MAXIMUM", o.exclusive_maximum, u.exclusive_maximum)
    _limits(out, "exclusiveMinimum", "EXCLUSIVE_MINIMUM", o.exclusive_minimum, u.exclusive_minimum)
    old = None if o.multiple_of is None else _num(o.multiple_of)
    new = None if u.multiple_of is None else _num(u.multiple_of)
    if old != new:
        where = ("multipleOf",)
        if old is None:
            out.append(("MULTIPLE_OF_ADDED", where))
        elif new is None:
            out.append(("MULTIPLE_OF_REMOVED", where))
        elif old != 0 and new % old == 0:
            out.append(("MULTIPLE_OF_EXPANDED", where))
        elif new != 0 and old % new == 0:
            out.append(("MULTIPLE_OF_REDUCED", where))
        else:
            out.append(("MULTIPLE_OF_CHANGED", where))
    if o.integer != u.integer:
        out.append(("TYPE_EXTENDED" if o.integer else "TYPE_NARROWED", ()))
