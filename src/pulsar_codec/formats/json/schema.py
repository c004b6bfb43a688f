"""JSON payload schemas: JSON Schema documents and Pulsar ``JSON`` schemas (Avro record definitions).

:func:`parse` reads either kind of document into a :class:`JsonSchemaModel`:

- a **JSON Schema** document (draft-07 and 2020-12 as Confluent's JSON Schema serdes register
  them; a document without ``$schema``, or naming a dialect in another spelling than the
  meta-schema's (``https`` for draft-07, no ``#``) or none known, is read as Confluent reads it:
  the dialect meant, else draft-07), checked against
  its meta-schema. ``$ref`` is resolved by the ``referencing`` library: inside the document
  (``#/definitions/...``, ``#/$defs/...``, embedded ``$id`` s) and against the registry's schema
  references, each registered under its reference ``name`` (as Confluent's serdes do);
- a **Pulsar JSON** schema: Pulsar's ``JSON`` schema type stores an Avro record definition (the
  values are JSON written by Jackson). A document that is an object with ``"type": "record"`` (or
  ``"error"``) and a ``fields`` list is read as Avro; JSON Schema has no such type.

References must come with their schema text: the registry lists them as (name, subject, version),
and :func:`resolve_references` fetches the texts (and the references' own references) from a
registry client. :func:`parse` accepts each reference as a dict or object with ``name`` and
``schema`` (text or decoded JSON), a ``(name, schema)`` pair, or a Mapping of name -> schema.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import jsonschema.exceptions  # type: ignore[import-untyped]
import jsonschema.validators  # type: ignore[import-untyped]
import referencing
import referencing.exceptions
import referencing.jsonschema

from ...errors import SchemaError
from ..avro import schema as avro_schema

if TYPE_CHECKING:
    from referencing._core import Resolver

__all__ = ["JsonSchemaModel", "parse", "resolve_references", "canonical", "MAX_REFERENCE_DEPTH"]

MAX_REFERENCE_DEPTH = 32
"""How deep references of references may go in :func:`resolve_references`."""

_TEXT_KEYS = ("schema", "schema_str")


def canonical(value: Any) -> str:
    """Compact JSON text with sorted keys (equal for equal documents whatever their layout)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, eq=False)
class JsonSchemaModel:
    """A parsed JSON payload schema.

    Attributes
    ----------
    kind : {"jsonschema", "avro"}
        A JSON Schema document, or a Pulsar JSON schema (an Avro record definition).
    document : Any
        The decoded document (a dict, or a bool for the JSON Schemas ``true`` / ``false``).
    text : str
        The text to register: the text given, else the compact JSON of ``document``.
    key : str
        Canonical text of the document and of its references (see :meth:`JsonFormat.schema_key`).
    references : tuple of (str, Any)
        The referenced documents by reference name, references of references included.
    avro : avro Schema or None
        The parsed Avro schema of a Pulsar JSON schema.
    keep_extra : bool
        Decode properties the schema does not name into one JSON text column (see mapping).
    validate : bool
        Also check every payload against the constraints the Arrow mapping cannot express
        (``minimum``, ``pattern``, ``maxLength``, ...) with the ``jsonschema`` validator; a row that
        breaks one is an error row (``JSON_CONSTRAINT``). JSON Schema documents only.
    """

    kind: Literal["jsonschema", "avro"]
    document: Any
    text: str
    key: str
    references: tuple[tuple[str, Any], ...] = ()
    avro: avro_schema.Schema | None = None
    keep_extra: bool = False
    validate: bool = False

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JsonSchemaModel):
            return NotImplemented
        mine = (self.kind, self.key, self.keep_extra, self.validate)
        return mine == (other.kind, other.key, other.keep_extra, other.validate)

    def __hash__(self) -> int:
        return hash((self.kind, self.key, self.keep_extra, self.validate))

    def validator(self) -> Any:
        """A ``jsonschema`` validator of the document (its dialect, references resolved)."""
        cls = jsonschema.validators.validator_for(self.document, default=jsonschema.Draft7Validator)
        default = _specification(self.document)
        resources = [
            (name, referencing.Resource.from_contents(doc, default_specification=default))
            for name, doc in self.references
        ]
        registry: referencing.Registry[Any] = referencing.Registry().with_resources(resources)
        return cls(self.document, registry=registry)

    @property
    def name(self) -> str:
        """A record name for the schema: the Avro record's name, else the JSON Schema ``title``."""
        if self.avro is not None and isinstance(self.avro, avro_schema.Named):
            return self.avro.name
        title = self.document.get("title") if isinstance(self.document, dict) else None
        return title if isinstance(title, str) and title else "Record"

    def resolver(self) -> Resolver[Any]:
        """A ``referencing`` resolver at the document's root, knowing every reference by name."""
        default = _specification(self.document)
        resources = [
            (name, referencing.Resource.from_contents(doc, default_specification=default))
            for name, doc in self.references
        ]
        root = referencing.Resource.from_contents(self.document, default_specification=default)
        base = root.id() or ""
        registry: referencing.Registry[Any] = referencing.Registry().with_resources([*resources, (base, root)])
        return registry.crawl().resolver(base_uri=base)

    def __repr__(self) -> str:
        return f"<JSON schema {self.kind} {self.key[:60]}{'...' if len(self.key) > 60 else ''}>"


_log = logging.getLogger("pulsar_codec")
_DRAFT7_URI = "http://json-schema.org/draft-07/schema#"


def _known_dialect(uri: str) -> str | None:
    """The spelling of meta-schema ``uri`` the ``referencing`` library knows, allowing the other
    scheme (``https`` for a draft-07 one, as people often write) and a missing or extra ``#``, as
    Confluent's registry does; None for a dialect it does not know."""
    rest = uri.strip()
    for scheme in ("http://", "https://"):
        if rest.startswith(scheme):
            rest = rest[len(scheme) :].rstrip("#")
            break
    else:
        return None
    for candidate in (f"http://{rest}#", f"http://{rest}", f"https://{rest}", f"https://{rest}#"):
        try:
            referencing.jsonschema.specification_with(candidate)
        except referencing.jsonschema.UnknownDialect:
            continue
        return candidate
    return None


def _with_dialect(document: Any, what: str) -> Any:
    """``document`` with its ``$schema`` spelt as the validators know it; a dialect nobody knows
    is read as draft-07, as Confluent's registry reads it (with a warning), rather than refused:
    the registry took the schema, so its topic must be readable."""
    dialect = document.get("$schema") if isinstance(document, dict) else None
    if not isinstance(dialect, str):
        return document
    known = _known_dialect(dialect)
    if known is None:
        _log.warning(
            "%s: unknown JSON Schema dialect %r, read as draft-07 (as Confluent's registry does)", what, dialect
        )
        known = _DRAFT7_URI
    return document if known == dialect else {**document, "$schema": known}


def _specification(document: Any) -> referencing.Specification[Any]:
    """The JSON Schema dialect of ``document``: its ``$schema``, else draft-07 (Confluent's default)."""
    dialect = document.get("$schema") if isinstance(document, dict) else None
    if isinstance(dialect, str):
        try:
            return referencing.jsonschema.specification_with(dialect)
        except referencing.jsonschema.UnknownDialect:
            raise SchemaError(f"unknown JSON Schema dialect {dialect!r}") from None
    return referencing.jsonschema.DRAFT7


def _load(schema: Any, what: str) -> tuple[Any, str | None]:
    """The decoded document and its text (None when it was given decoded)."""
    if isinstance(schema, (bytes, bytearray, memoryview)):
        schema = bytes(schema).decode("utf-8")
    if isinstance(schema, str):
        try:
            return json.loads(schema), schema
        except ValueError as exc:
            raise SchemaError(f"{what} is not valid JSON: {exc}") from None
        except RecursionError:
            raise SchemaError(f"{what} is nested too deeply") from None
    if isinstance(schema, (dict, bool)):
        return schema, None
    raise SchemaError(f"cannot read a JSON schema from {type(schema).__name__}")


def _is_avro(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and document.get("type") in ("record", "error")
        and isinstance(document.get("fields"), list)
    )


def _check_json_schema(document: Any, what: str) -> None:
    if not isinstance(document, (dict, bool)):
        raise SchemaError(f"{what} must be a JSON object or a boolean, got {type(document).__name__}")
    _specification(document)  # the dialect is known here (_with_dialect), before a validator is chosen for it
    try:
        validator = jsonschema.validators.validator_for(document, default=jsonschema.Draft7Validator)
        validator.check_schema(document)
    except jsonschema.exceptions.SchemaError as exc:
        raise SchemaError(f"{what} is not a valid JSON Schema: {exc.message}") from None
    except RecursionError:
        raise SchemaError(f"{what} is nested too deeply") from None


def _field(ref: Any, name: str) -> Any:
    return ref.get(name) if isinstance(ref, Mapping) else getattr(ref, name, None)


def _reference_text(ref: Any) -> Any:
    for key in _TEXT_KEYS:
        found = _field(ref, key)
        if found is None:
            continue
        if isinstance(found, (str, bytes, bytearray, dict, bool)):
            return found
        inner = getattr(found, "schema_str", None)  # a confluent-kafka Schema object
        if isinstance(inner, str):
            return inner
    return None


def _references(references: Any) -> tuple[tuple[str, Any], ...]:
    """Every reference (and nested reference) as ``(name, decoded document)``, first name wins."""
    if not references:
        return ()
    items = list(references.items()) if isinstance(references, Mapping) else list(references)
    out: dict[str, Any] = {}
    stack = list(reversed(items))
    while stack:
        ref = stack.pop()
        if isinstance(ref, tuple) and len(ref) == 2 and isinstance(ref[0], str):
            name, text, nested = ref[0], ref[1], None
        else:
            name, text, nested = _field(ref, "name"), _reference_text(ref), _field(ref, "references")
        if not isinstance(name, str) or not name:
            raise SchemaError(f"a schema reference needs a name, got {ref!r}")
        if text is None:
            raise SchemaError(
                f"schema reference {name!r} (subject {_field(ref, 'subject')!r}, version {_field(ref, 'version')!r}) "
                "comes without its schema text: fetch it first (pulsar_codec.formats.json.schema.resolve_references)"
            )
        if name in out:
            continue
        document, _ = _load(text, f"referenced schema {name!r}")
        document = _with_dialect(document, f"referenced schema {name!r}")
        _check_json_schema(document, f"referenced schema {name!r}")
        out[name] = document
        if nested:
            stack.extend(reversed(list(nested)))
    return tuple(out.items())


def _version_schema(registry: Any, subject: str, version: Any) -> tuple[str, tuple[Any, ...]]:
    """Text and references of ``subject`` at ``version`` from this package's or confluent-kafka's client."""
    found = registry.get_version(subject, "latest" if version in (None, -1) else version)
    inner = getattr(found, "schema", None)
    if isinstance(inner, str):  # this package's RegisteredSchema
        return inner, tuple(getattr(found, "references", None) or ())
    text = getattr(inner, "schema_str", None)
    if not isinstance(text, str):
        raise SchemaError(f"the registry returned no schema text for subject {subject!r} version {version!r}")
    return text, tuple(getattr(inner, "references", None) or ())


def resolve_references(registry: Any, references: Sequence[Any] | None) -> tuple[dict[str, Any], ...]:
    """Fetch the schema text of every reference (and of their references) from ``registry``.

    Parameters
    ----------
    registry : object with ``get_version(subject, version)``
        This package's registry clients or confluent-kafka's ``SchemaRegistryClient``.
    references : sequence
        confluent-kafka ``SchemaReference`` objects or dicts with ``name``, ``subject``, ``version``;
        entries that already carry a ``schema`` text are kept as they are.

    Returns
    -------
    tuple of dict
        ``{"name", "subject", "version", "schema"}`` per reference, references of references
        after their referrer; what :func:`parse` takes as ``references``.

    Raises
    ------
    SchemaError
        A reference without a name or subject, or references nested deeper than
        :data:`MAX_REFERENCE_DEPTH`.
    """
    out: list[dict[str, Any]] = []
    seen: set[str] = set()

    def visit(refs: Sequence[Any], depth: int) -> None:
        if depth > MAX_REFERENCE_DEPTH:
            raise SchemaError(f"schema references nested deeper than {MAX_REFERENCE_DEPTH} levels")
        for ref in refs:
            name, subject, version = _field(ref, "name"), _field(ref, "subject"), _field(ref, "version")
            if not isinstance(name, str) or name in seen:
                continue
            seen.add(name)
            text = _reference_text(ref)
            nested: tuple[Any, ...] = tuple(_field(ref, "references") or ())
            if text is None:
                if not isinstance(subject, str):
                    raise SchemaError(f"schema reference {name!r} names no subject")
                text, nested = _version_schema(registry, subject, version)
            out.append({"name": name, "subject": subject, "version": version, "schema": text})
            visit(nested, depth + 1)

    visit(list(references or ()), 0)
    return tuple(out)


def parse(schema: Any, references: Any = None, *, keep_extra: bool = False, validate: bool = False) -> JsonSchemaModel:
    """Parse a JSON Schema document or a Pulsar JSON (Avro record) schema.

    Parameters
    ----------
    schema : str, bytes, dict, bool or JsonSchemaModel
        The registered text or decoded document; a model is returned as it is (with
        ``keep_extra`` set when asked).
    references : sequence or Mapping, optional
        The registry's references with their texts (see the module docstring).
    keep_extra : bool, default False
        Keep properties the schema does not name, as one JSON text column.
    validate : bool, default False
        Check every payload against the constraints Arrow cannot express (see
        :class:`JsonSchemaModel`); slower: off by default.

    Raises
    ------
    SchemaError
        Not JSON, not a valid JSON Schema (meta-schema check) or Avro schema, a reference
        without its text. (A ``$schema`` dialect no validator knows is read as draft-07, with a
        warning, as Confluent's registry reads it.)
    """
    if isinstance(schema, JsonSchemaModel):
        if (keep_extra and not schema.keep_extra) or (validate and not schema.validate):
            return dataclasses.replace(
                schema, keep_extra=schema.keep_extra or keep_extra, validate=schema.validate or validate
            )
        return schema
    document, text = _load(schema, "schema")
    if _is_avro(document):
        avro = avro_schema.parse(document)
        key = canonical(avro_schema.to_json(avro))
        if validate:
            raise SchemaError("validate=True checks JSON Schema constraints: a Pulsar JSON (Avro) schema has none")
        return JsonSchemaModel("avro", document, text or json.dumps(document), key, (), avro, keep_extra)
    document = _with_dialect(document, "schema")
    _check_json_schema(document, "schema")
    refs = _references(references)
    key = canonical(document) if not refs else canonical({"schema": document, "references": dict(refs)})
    if text is None:
        text = json.dumps(document, separators=(",", ":"))
    return JsonSchemaModel("jsonschema", document, text, key, refs, None, keep_extra, validate)
