"""Protobuf reader/writer compatibility: Confluent's rules, and Pulsar's ``PROTOBUF_NATIVE`` check.

**Confluent** (its Protobuf provider, ``diff`` package) compares the *original* schema (here the
writer) with the *update* (the reader) and names every difference with a rule; a rule is either
compatible or not (:data:`COMPATIBLE_CHANGES`). :func:`check` reproduces that comparison on the
descriptors protoc compiles:

* the package must not change (``PACKAGE_CHANGED``); messages and enums are matched by name at each
  level, a removed message is ``MESSAGE_REMOVED`` (added ones, reordered ones, enums and enum
  constants may change freely);
* fields are matched by number across a message, oneof members included: a removed or added field
  is compatible unless it is ``required`` (``REQUIRED_FIELD_REMOVED`` / ``REQUIRED_FIELD_ADDED``) or
  a member of a oneof that still exists (``ONEOF_FIELD_REMOVED``); a renamed field is compatible;
* a field keeps its kind (scalar or enum, message, map: else ``FIELD_KIND_CHANGED``) and its scalar
  stays in its wire group (int32/int64/uint32/uint64/bool/enum; sint32/sint64; fixed32/sfixed32;
  fixed64/sfixed64; float; double; string/bytes: else ``FIELD_SCALAR_KIND_CHANGED``); a numeric
  field may not switch between repeated and singular where both labels are written
  (``FIELD_NUMERIC_LABEL_CHANGED``); a message field keeps its message name
  (``FIELD_NAMED_TYPE_CHANGED``), and a message from another file must itself be compatible;
* fields the writer sets independently may not become members of one oneof
  (``MULTIPLE_FIELDS_MOVED_TO_ONEOF``, ``FIELD_MOVED_TO_EXISTING_ONEOF``).

Locations are Confluent's paths: ``#/Order/3`` is field 3 of message ``Order``, ``#/Order/pay/5``
member 5 of its oneof ``pay``. Map entries are seen as ``map<K, V>`` and proto3 ``optional`` fields
as plain fields, as in the ``.proto`` texts the registry compares.

**Pulsar** checks a ``PROTOBUF_NATIVE`` schema only for a changed root message (whatever the
strategy, except ``ALWAYS_COMPATIBLE``): :func:`check_pulsar_native`, which
:mod:`pulsar_codec.compat` applies to ``PROTOBUF_NATIVE`` schemas.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import descriptor_pb2

from ...errors import SchemaError
from ..compat_base import COMPATIBLE, CompatibilityResult, Incompatibility
from ._printer import print_file
from ._protoc import known_file
from .schema import ProtobufSchemaModel
from .schema import parse as parse_schema

__all__ = [
    "COMPATIBLE_CHANGES",
    "Difference",
    "canonical_form",
    "check",
    "check_pulsar_native",
    "differences",
    "parse",
]

COMPATIBLE_CHANGES = frozenset(
    {
        "MESSAGE_ADDED",
        "MESSAGE_MOVED",
        "ENUM_ADDED",
        "ENUM_REMOVED",
        "ENUM_CONST_ADDED",
        "ENUM_CONST_CHANGED",
        "ENUM_CONST_REMOVED",
        "FIELD_ADDED",
        "FIELD_REMOVED",
        "FIELD_NAME_CHANGED",
        "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
        "ONEOF_ADDED",
        "ONEOF_REMOVED",
        "ONEOF_FIELD_ADDED",
        "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
    }
)
"""Confluent's rules that do not break a reader (every other rule does)."""

_WORDS = {
    "PACKAGE_CHANGED": "the reader's package differs from the writer's",
    "MESSAGE_REMOVED": "the reader lacks a message the writer has",
    "FIELD_KIND_CHANGED": "the field changed between scalar, message and map",
    "FIELD_SCALAR_KIND_CHANGED": "the field's scalar type reads the writer's bytes differently",
    "FIELD_NAMED_TYPE_CHANGED": "the field's message type is another message, or an incompatible one",
    "FIELD_NUMERIC_LABEL_CHANGED": "a numeric field changed between repeated and singular",
    "REQUIRED_FIELD_ADDED": "the reader requires a field the writer does not write",
    "REQUIRED_FIELD_REMOVED": "the reader lacks a field the writer marks required",
    "ONEOF_FIELD_REMOVED": "the reader's oneof lacks a member the writer may set",
    "MULTIPLE_FIELDS_MOVED_TO_ONEOF": "several fields the writer sets independently are members of one oneof "
    "in the reader",
    "FIELD_MOVED_TO_EXISTING_ONEOF": "a field the writer sets independently joined an existing oneof in the reader",
}

_NOTES = {
    "FIELD_SCALAR_KIND_CHANGED": "a scalar may only change within its wire group: int32/int64/uint32/uint64/bool/enum, "
    "sint32/sint64, fixed32/sfixed32, fixed64/sfixed64, float, double, string/bytes",
}

_F = descriptor_pb2.FieldDescriptorProto
_SCALAR_GROUPS = {
    **dict.fromkeys((_F.TYPE_INT32, _F.TYPE_INT64, _F.TYPE_UINT32, _F.TYPE_UINT64, _F.TYPE_BOOL), "GENERAL_NUMBER"),
    **dict.fromkeys((_F.TYPE_SINT32, _F.TYPE_SINT64), "SIGNED_NUMBER"),
    **dict.fromkeys((_F.TYPE_STRING, _F.TYPE_BYTES), "STRING_OR_BYTES"),
    **dict.fromkeys((_F.TYPE_FIXED32, _F.TYPE_SFIXED32), "FIXED32"),
    **dict.fromkeys((_F.TYPE_FIXED64, _F.TYPE_SFIXED64), "FIXED64"),
    _F.TYPE_FLOAT: "FLOAT",
    _F.TYPE_DOUBLE: "DOUBLE",
    _F.TYPE_ENUM: "GENERAL_NUMBER",
}


@dataclass(frozen=True)
class Difference:
    """One difference from a writer (original) to a reader (update) schema.

    Attributes
    ----------
    rule : str
        Confluent's name for it (``FIELD_KIND_CHANGED``, ``MESSAGE_REMOVED``...).
    location : str
        Confluent's path, ``#/Order/3``.
    path : str
        The same in words: ``Order.amount(3)``.
    detail : str
        What changed, where a rule compares two things: ``writer int64, reader string``,
        ``writer package shop, reader package other``; empty otherwise.
    """

    rule: str
    location: str
    path: str
    detail: str = ""


@dataclass
class _Side:
    """One schema as the comparison sees it: its root file and every type of its files."""

    model: ProtobufSchemaModel
    types: dict[str, tuple[Any, str]] = field(default_factory=dict)  # full name -> (proto, package)
    root_names: set[str] = field(default_factory=set)  # the types the root file defines
    proto3: set[str] = field(default_factory=set)  # the messages of proto3 files (no labels written)

    def __post_init__(self) -> None:
        for proto in self.model.files():
            scope = f"{proto.package}." if proto.package else ""
            before = set(self.types)
            self._index(proto.message_type, proto.enum_type, scope, proto.package)
            if proto.name == self.model.file_name:
                self.root_names = set(self.types) - before
            if proto.syntax == "proto3":
                self.proto3.update(set(self.types) - before)

    def _index(self, messages: Sequence[Any], enums: Sequence[Any], scope: str, package: str) -> None:
        for enum in enums:
            self.types[scope + enum.name] = (enum, package)
        for msg in messages:
            self.types[scope + msg.name] = (msg, package)
            self._index(msg.nested_type, msg.enum_type, f"{scope}{msg.name}.", package)

    @property
    def root(self) -> descriptor_pb2.FileDescriptorProto:
        return self.model.root_file()

    def in_root(self, full_name: str) -> bool:
        """Whether the root file defines the type (not a file it imports, whatever its package)."""
        return full_name in self.root_names

    def shape(self, f: descriptor_pb2.FieldDescriptorProto) -> tuple[Any, ...]:
        """``("scalar", type)``, ``("message", full name)`` or ``("map", key shape, value shape)``."""
        if f.type == _F.TYPE_ENUM or f.type in _SCALAR_GROUPS:
            return ("scalar", f.type)
        name = f.type_name.lstrip(".")
        found = self.types.get(name)
        if found is not None and isinstance(found[0], descriptor_pb2.DescriptorProto) and found[0].options.map_entry:
            entry = found[0]
            return ("map", self.shape(entry.field[0]), self.shape(entry.field[1]))
        return ("message", name)

    def label(self, f: descriptor_pb2.FieldDescriptorProto, in_oneof: bool, message: str) -> str | None:
        """The label Confluent sees in the registered text (None where none is written)."""
        if in_oneof:
            return None
        if f.proto3_optional:
            return "OPTIONAL"
        if f.label == _F.LABEL_REPEATED:
            return "REPEATED"
        if message in self.proto3:
            return None
        return "REQUIRED" if _required(f) else "OPTIONAL"


def _required(f: descriptor_pb2.FieldDescriptorProto) -> bool:
    return bool(
        f.label == _F.LABEL_REQUIRED or f.options.features.field_presence == descriptor_pb2.FeatureSet.LEGACY_REQUIRED
    )


def _real_oneof(f: descriptor_pb2.FieldDescriptorProto) -> bool:
    return f.HasField("oneof_index") and not f.proto3_optional


class _Differ:
    def __init__(self, original: _Side, update: _Side, active: set[str], path: list[tuple[str, str]]) -> None:
        self.original, self.update = original, update
        self.active = active  # original messages being compared (a recursive type stops there)
        self.path = path
        self.found: list[Difference] = []

    def add(self, rule: str, *steps: tuple[str, str], detail: str = "") -> None:
        where = [*self.path, *steps]
        location, path = "#/" + "/".join(s[0] for s in where), ".".join(s[1] for s in where)
        self.found.append(Difference(rule, location, path, detail))

    def files(self) -> None:
        o, u = self.original.root, self.update.root
        if o.package != u.package:
            self.add("PACKAGE_CHANGED", detail=f"writer {_package(o.package)}, reader {_package(u.package)}")
        self.types(o.message_type, o.enum_type, u.message_type, u.enum_type, o.package, u.package)

    def types(self, o_msgs: Any, o_enums: Any, u_msgs: Any, u_enums: Any, o_scope: str, u_scope: str) -> None:
        def listed(messages: Any) -> dict[str, tuple[int, Any]]:
            plain = [m for m in messages if not m.options.map_entry]  # map entries: map<K, V> in text
            return {m.name: (i, m) for i, m in enumerate(plain)}

        o_map, u_map = listed(o_msgs), listed(u_msgs)
        for name in [*o_map, *(n for n in u_map if n not in o_map)]:
            self.path.append((name, name))
            if name not in u_map:
                self.add("MESSAGE_REMOVED")
            elif name not in o_map:
                self.add("MESSAGE_ADDED")
            else:
                (oi, om), (ui, um) = o_map[name], u_map[name]
                self.message(om, um, _join(o_scope, name), _join(u_scope, name))
                if oi != ui:
                    self.add("MESSAGE_MOVED")
            self.path.pop()
        o_enum, u_enum = {e.name: e for e in o_enums}, {e.name: e for e in u_enums}
        for name in [*o_enum, *(n for n in u_enum if n not in o_enum)]:
            self.path.append((name, name))
            if name not in u_enum:
                self.add("ENUM_REMOVED")
            elif name not in o_enum:
                self.add("ENUM_ADDED")
            else:
                self.enum(o_enum[name], u_enum[name])
            self.path.pop()

    def enum(self, o: descriptor_pb2.EnumDescriptorProto, u: descriptor_pb2.EnumDescriptorProto) -> None:
        o_by, u_by = {v.number: v.name for v in o.value}, {v.number: v.name for v in u.value}
        for number in sorted(set(o_by) | set(u_by)):
            step = (str(number), f"{(o_by.get(number) or u_by[number])}({number})")
            if number not in u_by:
                self.add("ENUM_CONST_REMOVED", step)
            elif number not in o_by:
                self.add("ENUM_CONST_ADDED", step)
            elif o_by[number] != u_by[number]:
                self.add("ENUM_CONST_CHANGED", step)

    def message(
        self, o: descriptor_pb2.DescriptorProto, u: descriptor_pb2.DescriptorProto, o_full: str, u_full: str
    ) -> None:
        if o_full not in self.active:
            self.active.add(o_full)
            try:
                self.fields(o, u, o_full, u_full)
            finally:
                self.active.discard(o_full)
        self.types(o.nested_type, o.enum_type, u.nested_type, u.enum_type, o_full, u_full)

    def fields(
        self, o: descriptor_pb2.DescriptorProto, u: descriptor_pb2.DescriptorProto, o_full: str, u_full: str
    ) -> None:
        o_by, u_by = {f.number: f for f in o.field}, {f.number: f for f in u.field}
        o_in = {f.number: o.oneof_decl[f.oneof_index].name for f in o.field if _real_oneof(f)}
        u_in = {f.number: u.oneof_decl[f.oneof_index].name for f in u.field if _real_oneof(f)}
        o_oneofs, u_oneofs = set(o_in.values()), set(u_in.values())
        # a oneof deleted with all its members is a compatible removal; survivors elsewhere are not
        deleted = {n for n in o_oneofs - u_oneofs if not any(o_in[t] == n and t in u_by for t in o_in)}
        for oneof in dict.fromkeys(u_in.values()):
            origins, moved_in = set(), 0
            for tag in (t for t, n in u_in.items() if n == oneof):
                if tag in o_in:
                    origins.add(f"oneof:{o_in[tag]}")
                elif tag in o_by:
                    origins.add(f"field:{tag}")
                    moved_in += 1
            if len(origins) > 1:
                rule = "MULTIPLE_FIELDS_MOVED_TO_ONEOF" if moved_in > 1 else "FIELD_MOVED_TO_EXISTING_ONEOF"
                self.add(rule, (oneof, oneof))
        for oneof in sorted(o_oneofs | u_oneofs):
            if oneof not in u_oneofs:
                self.add("ONEOF_REMOVED", (oneof, oneof))
            elif oneof not in o_oneofs:
                self.add("ONEOF_ADDED", (oneof, oneof))
        for tag in sorted(set(o_by) | set(u_by)):
            of, uf = o_by.get(tag), u_by.get(tag)
            step = (str(tag), f"{(uf or of).name}({tag})")  # type: ignore[union-attr]
            if uf is None:
                assert of is not None
                if tag in o_in:
                    if o_in[tag] not in deleted:
                        self.add("ONEOF_FIELD_REMOVED", (o_in[tag], o_in[tag]), step)
                else:
                    self.add("REQUIRED_FIELD_REMOVED" if _required(of) else "FIELD_REMOVED", step)
            elif of is None:
                if tag in u_in:
                    self.add("ONEOF_FIELD_ADDED", (u_in[tag], u_in[tag]), step)
                else:
                    self.add("REQUIRED_FIELD_ADDED" if _required(uf) else "FIELD_ADDED", step)
            else:
                if tag in o_in and tag not in u_in:
                    self.add("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", step)
                steps = [(u_in[tag], u_in[tag]), step] if tag in u_in else [step]
                self.path.extend(steps)
                if of.name != uf.name:
                    self.add("FIELD_NAME_CHANGED")
                o_label = self.original.label(of, tag in o_in, o_full)
                u_label = self.update.label(uf, tag in u_in, u_full)
                self.shapes(o_label, u_label, self.original.shape(of), self.update.shape(uf))
                del self.path[-len(steps) :]

    def shapes(
        self, o_label: str | None, u_label: str | None, o: tuple[Any, ...], u: tuple[Any, ...], part: str = ""
    ) -> None:
        detail = f"{part}writer {_spell(o)}, reader {_spell(u)}"
        if o[0] != u[0]:
            self.add("FIELD_KIND_CHANGED", detail=detail)
        elif o[0] == "scalar":
            o_group, u_group = _SCALAR_GROUPS[o[1]], _SCALAR_GROUPS[u[1]]
            if o_group != u_group:
                self.add("FIELD_SCALAR_KIND_CHANGED", detail=detail)
            elif o_label is not None and u_label is not None and o_label != u_label:
                numeric = o_group != "STRING_OR_BYTES"
                self.add(
                    "FIELD_NUMERIC_LABEL_CHANGED" if numeric else "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
                    detail=f"writer {o_label.lower()}, reader {u_label.lower()}",
                )
        elif o[0] == "map":
            self.shapes(None, None, o[1], u[1], "map key: ")
            self.shapes(None, None, o[2], u[2], "map value: ")
        else:
            self.named(o[1], u[1], part)

    def named(self, o_full: str, u_full: str, part: str = "") -> None:
        renamed = f"{part}writer message {o_full}, reader message {u_full}"
        o_found, u_found = self.original.types.get(o_full), self.update.types.get(u_full)
        if o_found is None or u_found is None:
            if o_full != u_full:
                self.add("FIELD_NAMED_TYPE_CHANGED", detail=renamed)
            return
        o_local, u_local = _local(o_full, o_found[1]), _local(u_full, u_found[1])
        if o_local != u_local:
            self.add("FIELD_NAMED_TYPE_CHANGED", detail=renamed)
            return
        if self.original.in_root(o_full) and self.update.in_root(u_full):
            return  # compared where it is defined
        sub = _Differ(self.original, self.update, set(self.active), [(p, p) for p in o_local.split(".")])
        sub.message(o_found[0], u_found[0], o_full, u_full)
        self.found.extend(sub.found)
        if any(d.rule not in COMPATIBLE_CHANGES for d in sub.found):
            changed = f"message {o_full}" if o_full == u_full else f"writer message {o_full}, reader message {u_full}"
            self.add("FIELD_NAMED_TYPE_CHANGED", detail=f"{part}{changed}, changed incompatibly")


def _spell(shape: tuple[Any, ...]) -> str:
    """A field shape as a ``.proto`` text would write it: ``int64``, ``enum``, ``map<string, int32>``."""
    if shape[0] == "scalar":
        return "enum" if shape[1] == _F.TYPE_ENUM else _F.Type.Name(shape[1])[len("TYPE_") :].lower()
    if shape[0] == "map":
        return f"map<{_spell(shape[1])}, {_spell(shape[2])}>"
    return f"message {shape[1]}"


def _package(name: str) -> str:
    return f"package {name}" if name else "no package"


def _join(scope: str, name: str) -> str:
    return f"{scope}.{name}" if scope else name


def _local(full_name: str, package: str) -> str:
    return full_name[len(package) + 1 :] if package and full_name.startswith(package + ".") else full_name


# --------------------------------------------------------------------------------------------
# the FormatRules functions


def parse(schema: Any) -> ProtobufSchemaModel:
    """The schema model of ``schema`` (any form :func:`pulsar_codec.formats.protobuf.parse` reads)."""
    return parse_schema(schema)


def canonical_form(schema: Any) -> str:
    """The registry identity of a schema: its root file printed from the compiled descriptors
    (comments and layout gone; text and descriptor forms alike), then one digest line per imported
    file that registries do not bundle."""
    model = parse(schema)
    lines = [print_file(model.root_file())]
    for proto in model.files():
        if proto.name != model.file_name and known_file(proto.name) is None:
            copy = descriptor_pb2.FileDescriptorProto()
            copy.CopyFrom(proto)
            digest = hashlib.sha256(print_file(copy).encode("utf-8")).hexdigest()
            lines.append(f"// import {proto.name!r} sha256:{digest}\n")
    return "".join(lines)


def differences(writer: Any, reader: Any) -> list[Difference]:
    """Every difference from ``writer`` (Confluent's original) to ``reader`` (the update)."""
    differ = _Differ(_Side(parse(writer)), _Side(parse(reader)), set(), [])
    differ.files()
    return differ.found


def check(reader: Any, writer: Any) -> CompatibilityResult:
    """Can data written with ``writer`` be read with ``reader``, by Confluent's Protobuf rules?

    Returns
    -------
    CompatibilityResult
        Each incompatibility has ``kind`` = Confluent's rule name, ``location`` = its path
        (``#/Order/3``) and ``path`` = the same in words (``Order.amount(3)``).
    """
    bad: list[Incompatibility] = []
    for diff in differences(writer, reader):
        if diff.rule not in COMPATIBLE_CHANGES:
            words = _WORDS.get(diff.rule, diff.rule.lower())
            message = f"{words} ({diff.detail})" if diff.detail else words
            if diff.rule in _NOTES:
                message = f"{message}; {_NOTES[diff.rule]}"
            item = Incompatibility(diff.rule, diff.location, diff.path, message)
            if item not in bad:
                bad.append(item)
    return CompatibilityResult(False, tuple(bad)) if bad else COMPATIBLE


def check_pulsar_native(existing: Any, new: Any) -> CompatibilityResult:
    """Pulsar's ``PROTOBUF_NATIVE`` check: the root message may not change (its broker applies it
    for every strategy but ``ALWAYS_COMPATIBLE``, in both directions alike).

    Parameters
    ----------
    existing, new : bytes, str, dict or ProtobufSchemaModel
        ``PROTOBUF_NATIVE`` schema data (or models with their message chosen).

    Returns
    -------
    CompatibilityResult
        ``ROOT_MESSAGE_CHANGED`` when the root messages differ, ``INVALID_SCHEMA`` when either data
        cannot be read (the broker refuses those too).
    """
    names = []
    for which, data in (("existing", existing), ("new", new)):
        try:
            model = parse(data)
            names.append(model.message or model.descriptor().full_name)
        except SchemaError as exc:
            return CompatibilityResult.fail("INVALID_SCHEMA", f"{which} PROTOBUF_NATIVE schema: {exc}")
    if names[0] != names[1]:
        return CompatibilityResult.fail(
            "ROOT_MESSAGE_CHANGED",
            f"Protobuf root message isn't allowed to change: {names[0]} -> {names[1]}",
        )
    return COMPATIBLE
