"""Schema compatibility: registry strategies and PIP-44 checks over each format's rules.

Three layers:

* Each payload format keeps its reader/writer rules in ``formats/<format>/compat.py`` (see
  :class:`~pulsar_codec.formats.compat_base.FormatRules`); :func:`rules_for` finds them by schema
  type and imports them on first use. Avro's (:mod:`pulsar_codec.formats.avro.compat`) reproduce
  Avro Java's ``SchemaCompatibility`` on the decoder's own schema model; :func:`check` applies
  them, and ``parse`` / ``AvroSchema`` here are theirs.
* :func:`check_strategy` applies a compatibility level (Pulsar's ``ALWAYS_COMPATIBLE`` ...
  ``FULL_TRANSITIVE`` or Confluent's ``NONE`` ... ``FULL_TRANSITIVE``) to a new schema and the
  versions already registered.
* :func:`check_producer` and :func:`check_consumer` follow Pulsar's broker (PIP-44): a producer
  whose schema is already registered is accepted as is, a consumer is checked with ``BACKWARD``
  against the latest version for the non-transitive levels; ``EXTERNAL`` schemas (PIP-420) are only
  compatible with ``EXTERNAL`` ones and ``KEY_VALUE`` schemas are checked key and value apart;
  ``PROTOBUF_NATIVE`` schemas only keep their root message (Pulsar's check, kept by the Protobuf
  rules module).

Avro schemas are accepted as JSON text, ``bytes``, dicts, lists (unions), parsed
:mod:`pulsar_codec.formats.avro.schema` nodes or the result of :func:`parse`. Malformed schemas raise
:class:`~pulsar_codec.errors.SchemaError`.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import importlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import SchemaError
from .formats.compat_base import COMPATIBLE, CompatibilityResult, FormatRules, Incompatibility

if TYPE_CHECKING:
    from .formats.avro.compat import AvroSchema, parse

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
    "rules_for",
]


# names of the Avro rules module offered here too; imported when first asked for, so the registry
# (which imports this module) does not load the decoder until a schema is checked
_AVRO_NAMES = frozenset({"AvroSchema", "parse"})


def __getattr__(name: str) -> Any:
    if name in _AVRO_NAMES:
        return getattr(_rules("AVRO"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _AVRO_NAMES)


# --------------------------------------------------------------------------------------------
# the rules of each format


@functools.cache
def rules_for(schema_type: str) -> FormatRules | None:
    """The reader/writer rules of a registry schema type, or None when that format has none.

    The rules of schema type ``T`` live in the module ``pulsar_codec.formats.<t>.compat`` (``AVRO``:
    :mod:`pulsar_codec.formats.avro.compat`), so a format brings its rules by adding that module.

    Parameters
    ----------
    schema_type : str
        A registry ``schemaType`` such as ``"AVRO"``, ``"JSON"`` or ``"PROTOBUF"`` (any case).

    Returns
    -------
    FormatRules or None
    """
    short = schema_type.strip().lower()
    if not short.isidentifier():
        return None
    package = f"{__package__}.formats.{short}"
    name = f"{package}.compat"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name in (package, name):  # no such format, or a format without rules
            return None
        raise  # the rules module exists but cannot import what it needs
    if not isinstance(module, FormatRules):
        raise TypeError(f"{name} lacks parse, canonical_form or check")
    return module


def _rules(schema_type: str) -> FormatRules:
    found = rules_for(schema_type)
    if found is None:
        raise SchemaError(f"no compatibility rules for {schema_type} schemas")
    return found


def check(reader: Any, writer: Any, schema_type: str = "AVRO") -> CompatibilityResult:
    """Can data written with ``writer`` be read with ``reader``?

    Parameters
    ----------
    reader, writer : schema
        Two schemas of ``schema_type``; for Avro: JSON text, bytes, dicts, lists, parsed
        :mod:`~pulsar_codec.formats.avro.schema` nodes or :class:`AvroSchema`.
    schema_type : str, default "AVRO"
        Whose rules apply (see :func:`rules_for`).

    Returns
    -------
    CompatibilityResult
        True when compatible; otherwise ``.reasons`` lists every problem with its location.

    Raises
    ------
    SchemaError
        A schema is malformed, a reader field's aliases match several writer fields, or the schema
        type has no rules.
    """
    return _rules(schema_type).check(reader, writer)


def canonical_form(schema: Any, schema_type: str = "AVRO") -> str:
    """Text under which a registry considers two schemas the same.

    For Avro, compact JSON with sorted keys, every type name fully qualified (``namespace``
    attributes folded into the names, aliases qualified) and primitive objects without attributes
    written as bare names. Unlike Avro's Parsing Canonical Form it keeps ``default``, ``aliases``,
    ``logicalType``, ``doc`` and custom properties: schemas that differ in them decode differently
    or evolve differently, so they must not share an id. Other schema types use their format's
    rules when it has some; otherwise JSON documents are re-serialised compactly with sorted keys
    and anything else (Protobuf text) is stripped of outer whitespace.
    """
    schema_type = (schema_type or "AVRO").upper()
    rules = rules_for(schema_type)
    if rules is not None:
        return rules.canonical_form(schema)
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
# strategies


class Strategy(enum.StrEnum):
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
        """Every schema passes (``ALWAYS_COMPATIBLE``, ``NONE``)."""
        return self in (Strategy.ALWAYS_COMPATIBLE, Strategy.NONE)

    @property
    def never_compatible(self) -> bool:
        """No change passes once a version exists (``ALWAYS_INCOMPATIBLE``, ``UNDEFINED``)."""
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


def _pair(rules: FormatRules, new: Any, old: Any, strategy: Strategy, label: str) -> CompatibilityResult:
    """``new`` against one existing schema in the directions ``strategy`` asks for."""
    parts = []
    if strategy.backward:
        parts.append(rules.check(new, old).relabel(f"new schema cannot read {label}"))
    if strategy.forward:
        parts.append(rules.check(old, new).relabel(f"{label} cannot read the new schema"))
    return CompatibilityResult.merge(parts)


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
    schema_type: str = "AVRO",
) -> CompatibilityResult:
    """Check a schema against the registered versions under a compatibility level.

    Parameters
    ----------
    new_schema : schema
        The schema being added (for Avro: text, bytes, dict, list, parsed node or AvroSchema).
    existing_schemas : sequence
        The versions already registered, oldest first (the last one is the latest).
    strategy : Strategy or str
        ``BACKWARD``: the new schema reads the latest; ``FORWARD``: the latest reads the new one;
        ``FULL``: both; the ``_TRANSITIVE`` forms check every version instead of the latest.
        ``ALWAYS_COMPATIBLE`` / ``NONE`` always pass, ``ALWAYS_INCOMPATIBLE`` / ``UNDEFINED``
        never pass once a version exists.
    labels : sequence of str, optional
        Names for the existing schemas in the reasons (``"version 3"``); defaults to their index.
    schema_type : str, default "AVRO"
        The registry schema type of every schema. A type without rules (see :func:`rules_for`)
        has no content check: only the strategies that never pass reject it.

    Returns
    -------
    CompatibilityResult
        With no existing schema every strategy passes (the first version is always accepted, by
        Pulsar and Confluent alike).

    Raises
    ------
    SchemaError
        A schema is malformed (the new one is parsed even when the strategy passes everything).
    """
    strategy = Strategy.parse(strategy)
    rules = rules_for((schema_type or "AVRO").upper())
    new = rules.parse(new_schema) if rules is not None else new_schema
    if strategy.always_compatible or not existing_schemas:
        return COMPATIBLE
    if strategy.never_compatible:
        return _never(strategy)
    if rules is None:
        return COMPATIBLE
    return CompatibilityResult.merge(
        _pair(rules, new, rules.parse(existing_schemas[i]), strategy, _label(i, labels))
        for i in _targets(existing_schemas, strategy)
    )


# --------------------------------------------------------------------------------------------
# Pulsar typed schemas and PIP-44

# Pulsar's AVRO and PROTOBUF schema data are Avro schemas (JSON ones are Avro or legacy Jackson
# JSON schemas, see _check_json); the other types have no content check in the broker
_AVRO_BASED = frozenset({"AVRO", "PROTOBUF"})
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


def _identity(info: _Typed) -> tuple[Any, ...]:
    """What "the same schema" means for a PIP-44 producer: same type and same canonical content."""
    if info.type == "KEY_VALUE":
        try:
            key, value = _split_keyvalue(info)
        except SchemaError:
            return (info.type, info.data)
        return (info.type, _identity(key), _identity(value))
    if info.type in _AVRO_BASED or info.type == "JSON":
        try:
            return (info.type, _rules("AVRO").canonical_form(info.data))
        except SchemaError:
            pass
    return (info.type, info.data)


def _avro_or_none(data: bytes) -> AvroSchema | None:
    try:
        parsed: AvroSchema = _rules("AVRO").parse(data)
    except SchemaError:
        return None
    return parsed


def _check_typed(old: _Typed, new: _Typed, strategy: Strategy, label: str, skip_identical: bool) -> CompatibilityResult:
    """One existing schema against the new one, as Pulsar's broker dispatches by schema type."""
    if strategy.always_compatible:
        return COMPATIBLE
    if "EXTERNAL" in (old.type, new.type):
        if old.type == new.type:
            return COMPATIBLE  # two external schemas: their registry owns the content check
        return CompatibilityResult.fail(
            "SCHEMA_TYPE_MISMATCH", f"{label}: External schema is not compatible with the other schema types"
        )
    if old.type != new.type:
        return CompatibilityResult.fail(
            "SCHEMA_TYPE_MISMATCH",
            f"{label}: Incompatible schema: exists schema type {old.type}, new schema type {new.type}",
        )
    if skip_identical and _identity(old) == _identity(new):
        return COMPATIBLE
    if new.type == "KEY_VALUE":
        return _check_keyvalue(old, new, strategy, label)
    if strategy.never_compatible:
        return _never(strategy)
    if new.type in _AVRO_BASED:
        avro = _rules("AVRO")
        try:
            return _pair(avro, avro.parse(new.data), avro.parse(old.data), strategy, label)
        except SchemaError as exc:  # Pulsar turns a parse failure into an incompatibility
            return CompatibilityResult.fail("INVALID_SCHEMA", f"{label}: {exc}")
    if new.type == "JSON":
        return _check_json(old, new, strategy, label)
    if new.type == "PROTOBUF_NATIVE":
        return _check_protobuf_native(old, new, label)
    return COMPATIBLE  # primitives and types without a content checker (Pulsar's DEFAULT check)


def _check_protobuf_native(old: _Typed, new: _Typed, label: str) -> CompatibilityResult:
    # Pulsar's broker only refuses a changed root message, whatever the direction: the rules
    # module of the Protobuf format holds that check
    native = getattr(_rules("PROTOBUF"), "check_pulsar_native", None)
    if native is None:
        return COMPATIBLE
    result: CompatibilityResult = native(old.data, new.data)
    return result.relabel(label)


def _check_json(old: _Typed, new: _Typed, strategy: Strategy, label: str) -> CompatibilityResult:
    # Pulsar JSON schemas carry an Avro schema; legacy ones carry a Jackson JSON schema, which is
    # only compared by "id", and a change of format either way is allowed
    old_avro, new_avro = _avro_or_none(old.data), _avro_or_none(new.data)
    if old_avro is not None and new_avro is not None:
        return _pair(_rules("AVRO"), new_avro, old_avro, strategy, label)
    try:
        old_json = json.loads(old.data) if old_avro is None else None
        new_json = json.loads(new.data) if new_avro is None else None
    except ValueError:
        return CompatibilityResult.fail("SCHEMA_TYPE_MISMATCH", f"{label}: Unknown schema format")
    if old_json is None or new_json is None:
        return COMPATIBLE
    old_id = old_json.get("id") if isinstance(old_json, dict) else None
    new_id = new_json.get("id") if isinstance(new_json, dict) else None
    if old_id != new_id:
        return CompatibilityResult.fail(
            "NAME_MISMATCH", f"{label}: legacy JSON schema ids differ ({old_id!r} vs {new_id!r})"
        )
    return COMPATIBLE


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
            _check_typed(old_key, new_key, strategy, label, False).relabel("key"),
            _check_typed(old_value, new_value, strategy, label, False).relabel("value"),
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
        return COMPATIBLE
    ident = _identity(new)
    if any(_identity(o) == ident for o in old):
        return COMPATIBLE
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
        return COMPATIBLE
    if not old:
        return CompatibilityResult.fail("NO_SCHEMA", "Topic does not have schema to check")
    if strategy in (Strategy.BACKWARD, Strategy.FORWARD, Strategy.FORWARD_TRANSITIVE, Strategy.FULL):
        return _check_typed(old[-1], new, Strategy.BACKWARD, f"existing schema #{len(old) - 1}", True)
    return CompatibilityResult.merge(
        _check_typed(old[i], new, strategy, f"existing schema #{i}", False) for i in range(len(old) - 1, -1, -1)
    )
