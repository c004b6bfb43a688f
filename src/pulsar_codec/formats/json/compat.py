"""JSON Schema reader/writer compatibility, with the verdicts and rule names of Confluent's registry.

Confluent's JSON Schema provider compares two documents (the *original*, here the writer, and the
*update*, here the reader) and lists every difference under a rule name such as
``TYPE_NARROWED``, ``PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL`` or
``REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL``; a rule is either compatible or not. The new
schema passes ``BACKWARD`` when the comparison (writer = latest, reader = new) finds no
incompatible rule, ``FORWARD`` is the same with the roles swapped. :func:`check` reproduces that
comparison on plain documents (dicts, booleans or their text), in the same model: a document is
seen as the typed schemas its keywords imply (``{"type": ["string", "null"]}`` is an ``anyOf`` of a
string and a null schema; ``type`` next to ``enum`` is an ``allOf`` of both), so the rule names and
verdicts match the registry's, including for ``oneOf`` / ``anyOf`` / ``allOf``.

* content models: an object without ``additionalProperties`` / ``patternProperties`` /
  ``unevaluatedProperties`` is *open* (a writer may have put any property there), one with
  ``additionalProperties: false`` is *closed*, one with a schema for them is *partially open*;
  arrays likewise with ``additionalItems`` (``items`` after ``prefixItems`` in 2020-12);
* ``integer`` -> ``number`` is ``TYPE_EXTENDED`` (compatible), the reverse ``TYPE_NARROWED``;
  two subschemas that both carry Kafka Connect's ``"connect.type": "bytes"`` (a Connect
  ``Decimal``, written as a string or a number) may change type between them;
* a subschema added in the reader is compatible only where it accepts everything the writer may
  have written there.

``$ref`` is resolved with the ``referencing`` library, locally (``#/definitions/...``,
``#/$defs/...``, ``$id``-based) and through ``references`` (the registry's referenced documents by
name). Recursive schemas terminate: a pair of subschemas already being compared counts as
compatible where it recurs, and the comparison is repeated with the pairs found incompatible
until that assumption hides none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..compat_base import COMPATIBLE, CompatibilityResult, Incompatibility
from ._compat_diff import COMPATIBLE_CHANGES_LENIENT, COMPATIBLE_CHANGES_STRICT, Differ
from ._compat_model import JsonSchemaDocument, canonical_form, parse

__all__ = [
    "COMPATIBLE_CHANGES_LENIENT",
    "COMPATIBLE_CHANGES_STRICT",
    "Difference",
    "JsonSchemaDocument",
    "canonical_form",
    "check",
    "differences",
    "parse",
]


@dataclass(frozen=True)
class Difference:
    """One difference between a writer (original) and a reader (update) schema.

    Attributes
    ----------
    rule : str
        Confluent's name for it (``TYPE_CHANGED``, ``MAX_LENGTH_DECREASED``...).
    location : str
        JSON pointer into the documents, ``#/properties/address/properties/zip``.
    """

    rule: str
    location: str


# --------------------------------------------------------------------------------------------
# results


def _pointer(path: tuple[str, ...]) -> str:
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in path)


def _readable(path: tuple[str, ...]) -> str:
    """``$.address.zip``, ``$.tags[]``, ``$.pairs[1]``, ``$.attrs{}``, ``$.value|oneOf/0``."""
    out, i = ["$"], 0
    while i < len(path):
        step = path[i]
        nxt = path[i + 1] if i + 1 < len(path) else None
        if step in ("properties", "required", "dependencies", "patternProperties") and nxt is not None:
            out.append(f".{nxt}")
            i += 2
        elif step in ("allOf", "anyOf", "oneOf") and nxt is not None:
            out.append(f"|{step}/{nxt}")
            i += 2
        elif step == "items" and nxt is not None and nxt.isdigit():
            out.append(f"[{nxt}]")
            i += 2
        elif step in ("items", "additionalItems", "unevaluatedItems"):
            out.append("[]")
            i += 1
        elif step in ("additionalProperties", "unevaluatedProperties"):
            out.append("{}")
            i += 1
        else:
            out.append(f"/{step}")
            i += 1
    return "".join(out)


_WORDS: dict[str, str] = {
    "SCHEMA_ADDED": "the reader constrains a subschema the writer leaves unconstrained",
    "TYPE_CHANGED": "the reader's type differs from the writer's",
    "TYPE_NARROWED": "the reader accepts only integers where the writer allows any number",
    "PATTERN_ADDED": "the reader adds a pattern the writer's strings need not match",
    "PATTERN_CHANGED": "the reader's pattern differs from the writer's",
    "MULTIPLE_OF_CHANGED": "the reader's multipleOf does not divide the writer's",
    "REQUIRED_ATTRIBUTE_ADDED": "the reader requires a property the writer may leave out, without a default",
    "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL": "the writer's object is open and may hold this property with any value",
    "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL": "the reader requires a new property, without a default; the "
    "writer's open object never promised it",
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL": "the reader adds a required property (with a "
    "default) that the writer's open object may hold with any value",
    "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL": "the reader adds a property that the writer's open object may "
    "hold with any value",
    "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL": "the reader requires a new property, without a default, that "
    "the writer never writes",
    "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL": "the reader's object is closed and lacks a property the writer writes",
    "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": "the reader lacks a property the writer writes, "
    "and its additional/pattern properties schema does not accept the writer's values",
    "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": "the reader adds a property whose schema does not "
    "accept what the writer's additional/pattern properties allow",
    "ITEM_ADDED_TO_OPEN_CONTENT_MODEL": "the reader adds a tuple item that the writer's open array may hold with "
    "any value",
    "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL": "the reader's array is closed and lacks a tuple item the writer writes",
    "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": "the reader lacks a tuple item the writer writes, and "
    "its additional items schema does not accept the writer's values",
    "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": "the reader adds a tuple item whose schema does not "
    "accept what the writer's additional items allow",
    "ENUM_ARRAY_NARROWED": "the reader's enum lacks values the writer allows",
    "ENUM_ARRAY_CHANGED": "the reader's allowed values differ from the writer's",
    "COMBINED_TYPE_CHANGED": "the reader combines its subschemas with an incompatible keyword",
    "COMBINED_TYPE_SUBSCHEMAS_CHANGED": "no pairing of writer and reader subschemas is compatible",
    "PRODUCT_TYPE_EXTENDED": "the reader's allOf has more subschemas than the writer's",
    "SUM_TYPE_NARROWED": "the reader's oneOf/anyOf has fewer subschemas than the writer's",
    "NOT_TYPE_EXTENDED": "the reader's not excludes values the writer's allows",
    "DEPENDENCY_ARRAY_ADDED": "the reader adds a property dependency",
    "DEPENDENCY_ARRAY_EXTENDED": "the reader's property dependency requires more properties",
    "DEPENDENCY_ARRAY_CHANGED": "the reader's property dependency differs from the writer's",
    "DEPENDENCY_SCHEMA_ADDED": "the reader adds a schema dependency",
    "UNIQUE_ITEMS_ADDED": "the reader requires unique items",
}


def _message(rule: str) -> str:
    words = _WORDS.get(rule)
    if words is not None:
        return words
    for suffix, text in (
        ("_ADDED", "the reader adds a {} limit the writer does not have"),
        ("_REMOVED", "the reader removes the writer's {}"),
        ("_INCREASED", "the reader's {} is larger than the writer's"),
        ("_DECREASED", "the reader's {} is smaller than the writer's"),
        ("_EXPANDED", "the reader's {} is a multiple of the writer's"),
        ("_NARROWED", "the reader narrows the writer's {}"),
        ("_EXTENDED", "the reader extends the writer's {}"),
        ("_CHANGED", "the reader's {} differs from the writer's"),
    ):
        if rule.endswith(suffix):
            return text.format(rule.removesuffix(suffix).lower().replace("_", " "))
    return rule.lower().replace("_", " ")


def differences(writer: Any, reader: Any) -> list[Difference]:
    """Every difference from ``writer`` (the original) to ``reader`` (the update), compatible or not.

    The order follows the documents (properties in writer order, then the reader's new ones); the
    rule names are Confluent's (see :data:`COMPATIBLE_CHANGES_STRICT`).
    """
    diffs = Differ(COMPATIBLE_CHANGES_STRICT).run(parse(writer).root, parse(reader).root)
    return [Difference(rule, _pointer(path)) for rule, path in diffs]


def check(reader: Any, writer: Any, *, lenient: bool = False) -> CompatibilityResult:
    """Can data written with ``writer`` be read with ``reader``, by Confluent's JSON Schema rules?

    Parameters
    ----------
    reader, writer : str, bytes, dict, bool or JsonSchemaDocument
        Two JSON Schema documents.
    lenient : bool, default False
        Confluent's ``LENIENT`` policy (also accepts properties dropped from closed models or added
        to open ones, and narrowed additional properties); its default is ``STRICT``.

    Returns
    -------
    CompatibilityResult
        Each incompatibility has ``kind`` = the rule name, ``location`` = the JSON pointer,
        ``path`` = the same in words (``$.address.zip``, ``$.tags[]``).
    """
    allowed = COMPATIBLE_CHANGES_LENIENT if lenient else COMPATIBLE_CHANGES_STRICT
    found = Differ(allowed).run(parse(writer).root, parse(reader).root)
    bad: list[Incompatibility] = []
    for rule, path in found:
        if rule not in allowed:
            item = Incompatibility(rule, _pointer(path), _readable(path), _message(rule))
            if item not in bad:
                bad.append(item)
    return CompatibilityResult(False, tuple(bad)) if bad else COMPATIBLE
