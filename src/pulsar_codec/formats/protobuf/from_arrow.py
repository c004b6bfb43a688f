"""A proto3 ``.proto`` text for Arrow rows: the writer schema ``pc.encode`` derives when given none.

The reverse of the Protobuf -> Arrow mapping where one exists: struct -> message (nested structs
become nested messages named after their field, in CamelCase), int32 / int64 / uint32 / uint64,
float32 -> float, float64 -> double, bool, string (dictionary-encoded strings too) -> string,
binary -> bytes, timestamp -> ``google.protobuf.Timestamp``, duration -> ``google.protobuf.Duration``,
list<T> -> ``repeated T``, map<K, V> -> ``map<K, V>`` (K an integer, bool or string type). A nullable
scalar column that holds nulls becomes a proto3 ``optional`` field so a null stays distinguishable
from the default. Field numbers follow the column order from 1.

What Protobuf cannot say is a :class:`~pulsar_codec.errors.SchemaError` naming the column: lists of
lists or of maps, maps of lists or maps, nullable list items, and types without a Protobuf form
(date, time, decimal, int8/int16/uint8/uint16 are widened to int32/uint32 instead, since
Protobuf's smallest integers hold them exactly). Pass ``schema=`` for anything else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pyarrow as pa

from ...errors import SchemaError

__all__ = ["proto_from_arrow"]

_SCALARS: list[tuple[object, str]] = [
    (pa.types.is_boolean, "bool"),
    (lambda t: pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t), "int32"),
    (pa.types.is_int64, "int64"),
    (lambda t: pa.types.is_uint8(t) or pa.types.is_uint16(t) or pa.types.is_uint32(t), "uint32"),
    (pa.types.is_uint64, "uint64"),
    (pa.types.is_float32, "float"),
    (pa.types.is_float64, "double"),
    (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t), "string"),
    (lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t), "bytes"),
    (pa.types.is_fixed_size_binary, "bytes"),
]
_MAP_KEYS = frozenset(("int32", "int64", "uint32", "uint64", "bool", "string"))
_IDENT = re.compile(r"[^A-Za-z0-9_]")


def _ident(name: str) -> str:
    """``name`` made a valid Protobuf identifier (other characters become ``_``)."""
    out = _IDENT.sub("_", name) or "_"
    return "_" + out if out[0].isdigit() else out


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in _ident(name).split("_") if part) or "Message"


class _Writer:
    def __init__(self) -> None:
        self.imports: set[str] = set()

    def scalar(self, arrow_type: pa.DataType, path: str) -> str | None:
        if pa.types.is_dictionary(arrow_type):
            return self.scalar(arrow_type.value_type, path)
        if pa.types.is_timestamp(arrow_type):
            self.imports.add("google/protobuf/timestamp.proto")
            return "google.protobuf.Timestamp"
        if pa.types.is_duration(arrow_type):
            self.imports.add("google/protobuf/duration.proto")
            return "google.protobuf.Duration"
        for test, name in _SCALARS:
            if test(arrow_type):  # type: ignore[operator]
                return name
        return None

    def message(
        self, name: str, fields: list[pa.Field], indent: str, path: str, nulls: Mapping[str, bool] | None
    ) -> list[str]:
        lines = [f"{indent}message {name} {{"]
        inner = indent + "  "
        nested: list[str] = []
        taken: set[str] = set()
        for number, f in enumerate(fields, start=1):
            field_name = _ident(f.name)
            if field_name in taken:
                raise SchemaError(
                    f"columns {path}{f.name!r} and another map to the same Protobuf field name {field_name!r}"
                )
            taken.add(field_name)
            where = f"{path}{f.name}"
            t = f.type
            if pa.types.is_struct(t):
                type_name = self._unique(
                    _camel(f.name), {line.split()[1] for line in nested if line.startswith(inner + "message ")}
                )
                nested += self.message(type_name, list(t), inner, where + ".", None)
                lines.append(f"{inner}{type_name} {field_name} = {number};")
            elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
                item = t.value_field
                if pa.types.is_struct(item.type):
                    type_name = _camel(f.name) + "Item"
                    nested += self.message(type_name, list(item.type), inner, where + "[].", None)
                    lines.append(f"{inner}repeated {type_name} {field_name} = {number};")
                else:
                    scalar = self.scalar(item.type, where)
                    if scalar is None:
                        raise SchemaError(
                            f"column {where}: Protobuf has no repeated {item.type} (a list holds scalars or structs)"
                        )
                    lines.append(f"{inner}repeated {scalar} {field_name} = {number};")
            elif pa.types.is_map(t):
                key = self.scalar(t.key_type, where)
                if key not in _MAP_KEYS:
                    raise SchemaError(
                        f"column {where}: a Protobuf map key is an integer, bool or string, not {t.key_type}"
                    )
                item = t.item_type
                if pa.types.is_struct(item):
                    value = _camel(f.name) + "Value"
                    nested += self.message(value, list(item), inner, where + "{}.", None)
                else:
                    value = self.scalar(item, where) or ""
                    if not value:
                        raise SchemaError(f"column {where}: Protobuf has no map value of type {item}")
                lines.append(f"{inner}map<{key}, {value}> {field_name} = {number};")
            else:
                scalar = self.scalar(t, where)
                if scalar is None:
                    raise SchemaError(f"column {where}: Arrow type {t} has no Protobuf form; pass schema=")
                holds_nulls = f.nullable if nulls is None else bool(nulls.get(f.name, f.nullable))
                optional = "optional " if holds_nulls and not scalar.startswith("google.") else ""
                lines.append(f"{inner}{optional}{scalar} {field_name} = {number};")
        return lines[:1] + nested + lines[1:] + [f"{indent}}}"]

    @staticmethod
    def _unique(name: str, taken: set[str]) -> str:
        out, n = name, 2
        while out in taken:
            out, n = f"{name}{n}", n + 1
        return out


def proto_from_arrow(schema: pa.Schema, name: str = "Record", nulls: Mapping[str, bool] | None = None) -> str:
    """A proto3 file with one top-level message ``name`` for rows of ``schema``.

    ``nulls`` says which top-level columns actually hold nulls: only those become ``optional``
    (default: the nullable ones). A schema kept in the ``b"protobuf.schema"`` metadata is not
    looked at here (see ``ProtobufFormat.model_from_arrow``).
    """
    writer = _Writer()
    body = writer.message(_camel(name), list(schema), "", "", nulls)
    head = ['syntax = "proto3";', ""]
    if writer.imports:
        head += [f'import "{i}";' for i in sorted(writer.imports)] + [""]
    return "\n".join(head + body) + "\n"
