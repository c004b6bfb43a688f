"""Schema texts as :class:`~pulsar_codec.registry.LocalRegistry` reads them: types, fingerprints,
references and compatibility.

* :func:`prepare_schema` checks the type and, for a schema without references, computes its
  fingerprint (the dedup key) outside any transaction;
* :func:`resolve_references` pins ``-1`` references and collects the texts of every referenced
  schema from the database, references of references included; :func:`parse_with_references`
  and :func:`comparable` turn a schema and those texts into what the format's rules read;
* :func:`evaluate_rows` checks a new schema against stored versions under a strategy.

Parsing and comparing run under :func:`schema_depth`, so a schema nested too deeply is a
:class:`~pulsar_codec.errors.SchemaError`, never a ``RecursionError``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from .. import compat
from ..compat import CompatibilityResult, Strategy
from ..errors import SchemaError
from ._sqlite_store import StoredVersion, stored_references
from .base import SCHEMA_TYPES, SchemaReference, references_of, schema_text

__all__ = [
    "MAX_REFERENCE_DEPTH",
    "checked_schema_type",
    "comparable",
    "evaluate",
    "evaluate_rows",
    "non_transitive",
    "parse_with_references",
    "prepare_schema",
    "resolve_references",
    "schema_depth",
    "schema_fingerprint",
    "with_references",
]

MAX_REFERENCE_DEPTH = 32  # references of references, as deep as the formats' own resolvers go


def checked_schema_type(schema_type: str | None) -> str:
    name = (schema_type or "AVRO").upper()
    if name not in SCHEMA_TYPES:
        raise SchemaError(f"unsupported schema type {schema_type!r}; expected one of {', '.join(SCHEMA_TYPES)}")
    return name


@contextlib.contextmanager
def schema_depth() -> Iterator[None]:
    """Turn a RecursionError from parsing or comparing a deeply nested schema into a SchemaError.

    The Avro parser refuses schemas nested past its documented limit with a SchemaError; this
    catches whatever path still recurses (another format, the compatibility walk) the same way.
    """
    try:
        yield
    except RecursionError:
        raise SchemaError("schema nested too deeply to be parsed") from None


def non_transitive(strategy: Strategy) -> Strategy:
    return Strategy.parse(strategy.value.removesuffix("_TRANSITIVE"))


def with_references(text: str, schema_type: str, texts: Sequence[tuple[str, str]]) -> Any:
    """What the format's compatibility rules read for ``text`` whose references resolved to
    ``texts`` (``(name, text)``, dependencies first): the text itself without references, else the
    schema parsed with them (a Protobuf model, a JSON Schema document)."""
    if not texts:
        return text
    with schema_depth():
        if schema_type == "PROTOBUF":
            from ..formats.protobuf import schema as protobuf_schema  # the protobuf extra

            return protobuf_schema.parse(text, [{"name": n, "schema": t} for n, t in texts])
        if schema_type == "JSON":
            from ..formats.json import compat as json_compat

            return json_compat.parse(text, dict(texts))
    return text  # Avro: named types of references are not resolved, the schema stands alone


def schema_fingerprint(parsed: Any, schema_type: str, references: Sequence[SchemaReference]) -> str:
    """The dedup key: the format's canonical form and, when there are some, the references (the same
    text referring to other versions is another schema, as in Confluent's registry)."""
    with schema_depth():
        base = compat.fingerprint(parsed, schema_type)
    if not references:
        return base  # unchanged for schemas without references, so older databases still match
    listed = json.dumps([r.to_dict() for r in references], separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(f"{base}\n{listed}".encode()).hexdigest()


def prepare_schema(schema: Any, schema_type: str, references: Any) -> tuple[str, str, tuple[SchemaReference, ...], str]:
    """(text, type, references, fingerprint): a schema without references is parsed here,
    outside any transaction (its fingerprint); one with references needs the database
    (:func:`parse_with_references`), and its fingerprint is left empty."""
    schema_type = checked_schema_type(schema_type)
    text = schema_text(schema)
    refs = references_of(references)
    return text, schema_type, refs, "" if refs else schema_fingerprint(text, schema_type, ())


def resolve_references(
    conn: sqlite3.Connection, references: Sequence[SchemaReference], deleted: bool
) -> tuple[tuple[SchemaReference, ...], list[tuple[str, str]]]:
    """The references with ``-1`` replaced by the subject's latest version, and the texts of
    every referenced schema (references of references included, dependencies first, each name
    once: the first reference of a name wins), as Confluent's registry resolves them.

    ``deleted``: soft-deleted versions may be referred to (reading an existing schema);
    otherwise only live ones (a new schema).

    Raises
    ------
    SchemaError
        A subject or version that does not exist (Confluent's 42201 "No schema reference found").
    """
    texts: dict[str, str] = {}

    def pin(ref: SchemaReference) -> tuple[SchemaReference, str, int]:
        live = "" if deleted else " AND v.deleted = 0"
        if ref.version == -1:
            row = conn.execute(
                "SELECT v.version, s.schema, s.id FROM versions v JOIN schemas s ON s.id = v.schema_id "
                "WHERE v.subject = ? AND v.deleted = 0 ORDER BY v.version DESC LIMIT 1",
                (ref.subject,),
            ).fetchone()
        else:
            row = conn.execute(
                "SELECT v.version, s.schema, s.id FROM versions v JOIN schemas s ON s.id = v.schema_id "
                f"WHERE v.subject = ? AND v.version = ?{live}",
                (ref.subject, ref.version),
            ).fetchone()
        if row is None:
            raise SchemaError(
                f'No schema reference found for subject "{ref.subject}" and version {ref.version} '
                f"(reference {ref.name!r})"
            )
        return SchemaReference(ref.name, ref.subject, int(row[0])), str(row[1]), int(row[2])

    def visit(refs: Sequence[SchemaReference], depth: int) -> list[SchemaReference]:
        if depth > MAX_REFERENCE_DEPTH:
            raise SchemaError(f"schema references nested deeper than {MAX_REFERENCE_DEPTH} levels")
        pinned = []
        for ref in refs:
            found, text, schema_id = pin(ref)  # every reference must exist, even a repeated name
            pinned.append(found)
            if found.name in seen:
                continue
            seen.add(found.name)
            visit(stored_references(conn, schema_id), depth + 1)
            texts[found.name] = text
        return pinned

    seen: set[str] = set()
    pinned = visit(references, 0)
    return tuple(pinned), list(texts.items())


def parse_with_references(
    conn: sqlite3.Connection,
    text: str,
    schema_type: str,
    references: Sequence[SchemaReference],
    deleted: bool,
) -> tuple[tuple[SchemaReference, ...], Any, str]:
    """(pinned references, what the rules read, fingerprint) of a schema with references."""
    pinned, texts = resolve_references(conn, references, deleted)
    parsed = with_references(text, schema_type, texts)
    return pinned, parsed, schema_fingerprint(parsed, schema_type, pinned)


def comparable(conn: sqlite3.Connection, row: StoredVersion) -> Any:
    """What the compatibility rules read for a stored version: its text, parsed with its
    references when it has some (soft-deleted referenced versions still count)."""
    if not row.references:
        return row.schema
    _, texts = resolve_references(conn, row.references, True)
    return with_references(row.schema, row.schema_type, texts)


def evaluate(
    new: Any, schema_type: str, targets: list[tuple[StoredVersion, Any]], strategy: Strategy
) -> CompatibilityResult:
    """``new`` (text or parsed with its references) against the rows in ``targets`` (already
    chosen: latest or all, each with what the rules read for it) under ``strategy``."""
    if strategy.always_compatible or not targets:
        return CompatibilityResult.ok()
    if strategy.never_compatible:
        return CompatibilityResult.fail("STRATEGY", f"Schema compatibility strategy is {strategy.value}")
    mismatched = [r for r, _ in targets if r.schema_type != schema_type]
    if mismatched:
        return CompatibilityResult.merge(
            CompatibilityResult.fail(
                "SCHEMA_TYPE_MISMATCH",
                f"version {r.version} is a {r.schema_type} schema, the new schema is {schema_type}",
            )
            for r in mismatched
        )
    # check_strategy picks the latest of the list for non-transitive levels: targets is already it
    with schema_depth():
        return compat.check_strategy(
            new,
            [parsed for _, parsed in targets],
            strategy,
            labels=[f"version {r.version}" for r, _ in targets],
            schema_type=schema_type,
        )


def evaluate_rows(
    conn: sqlite3.Connection, new: Any, schema_type: str, targets: list[StoredVersion], strategy: Strategy
) -> CompatibilityResult:
    """:func:`evaluate` over stored rows, parsed with their references only when compared."""
    decided = strategy.always_compatible or strategy.never_compatible
    if decided or any(r.schema_type != schema_type for r in targets):
        # decided without reading the stored schemas: do not resolve their references
        return evaluate(new, schema_type, [(r, r.schema) for r in targets], strategy)
    return evaluate(new, schema_type, [(r, comparable(conn, r)) for r in targets], strategy)
