"""FileDescriptorProto -> ``.proto`` text, so a schema known only as descriptors (Pulsar
``PROTOBUF_NATIVE`` data, a user's FileDescriptorSet) can be registered in a Confluent-style registry.

Compiling the printed text with protoc gives the same FileDescriptorProto again (source info aside):
proto2, proto3 and editions files; package, imports (``public`` / ``weak``), the options of
``descriptor.proto`` at every level (``packed``, ``deprecated``, ``json_name`` where it differs from
the default, editions ``features``...); proto2 defaults; ``map<K, V>`` fields; proto2 groups;
oneofs and proto3 ``optional``; nested messages and enums in their original order (map entries and
groups keep their place, so Confluent message indexes do not move); extension ranges, ``extend``
blocks, reserved ranges and names; services. Custom options (extensions of the ``*Options``
messages) are not printed: the runtime holds them as unknown fields, without names.

Type references are written fully qualified with a leading dot (``.shop.Money``), as descriptors
hold them, so no scoping rule can change their meaning.
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf import descriptor_pb2, text_format
from google.protobuf.message import Message

__all__ = ["clear_default_json_names", "default_json_name", "print_file"]

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    _F.TYPE_DOUBLE: "double",
    _F.TYPE_FLOAT: "float",
    _F.TYPE_INT64: "int64",
    _F.TYPE_UINT64: "uint64",
    _F.TYPE_INT32: "int32",
    _F.TYPE_FIXED64: "fixed64",
    _F.TYPE_FIXED32: "fixed32",
    _F.TYPE_BOOL: "bool",
    _F.TYPE_STRING: "string",
    _F.TYPE_BYTES: "bytes",
    _F.TYPE_UINT32: "uint32",
    _F.TYPE_SFIXED32: "sfixed32",
    _F.TYPE_SFIXED64: "sfixed64",
    _F.TYPE_SINT32: "sint32",
    _F.TYPE_SINT64: "sint64",
}
_FIELD_NUMBER_MAX = 536870911
_ENUM_NUMBER_MAX = 2147483647
_INDENT = "  "


def default_json_name(name: str) -> str:
    """protoc's default ``json_name``: underscores dropped, the letter after each one upper-cased."""
    out: list[str] = []
    upper = False
    for ch in name:
        if ch == "_":
            upper = True
        elif upper:
            out.append(ch.upper())
            upper = False
        else:
            out.append(ch)
    return "".join(out)


def _all_fields(messages: Sequence[descriptor_pb2.DescriptorProto]) -> list[descriptor_pb2.FieldDescriptorProto]:
    out: list[descriptor_pb2.FieldDescriptorProto] = []
    for msg in messages:
        out.extend(msg.field)
        out.extend(msg.extension)
        out.extend(_all_fields(msg.nested_type))
    return out


def clear_default_json_names(file: descriptor_pb2.FileDescriptorProto) -> None:
    """Remove every ``json_name`` equal to the default (protoc writes them, runtimes may not)."""
    for fd in [*_all_fields(file.message_type), *file.extension]:
        if fd.HasField("json_name") and fd.json_name == default_json_name(fd.name):
            fd.ClearField("json_name")


def _quote(data: bytes) -> str:
    """A protobuf string literal for ``data`` (printable ASCII as is, other bytes octal-escaped)."""
    out = ['"']
    for b in data:
        ch = chr(b)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= b < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    out.append('"')
    return "".join(out)


def _float(value: float) -> str:
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _value(fd: object, value: object) -> str:
    """The ``.proto`` spelling of one option value of field ``fd`` (a runtime FieldDescriptor)."""
    kind = fd.type  # type: ignore[attr-defined]
    if isinstance(value, Message):
        return "{ " + str(text_format.MessageToString(value, as_one_line=True)) + " }"
    if kind == fd.TYPE_ENUM:  # type: ignore[attr-defined]
        found = fd.enum_type.values_by_number.get(value)  # type: ignore[attr-defined]
        return found.name if found is not None else str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _quote(value.encode("utf-8"))
    if isinstance(value, bytes):
        return _quote(value)
    if isinstance(value, float):
        return _float(value)
    return str(value)


def _options(options: Message, skip: frozenset[str] = frozenset()) -> list[str]:
    """``name = value`` for every option set in an ``*Options`` message (extensions left out)."""
    out: list[str] = []
    for fd, value in options.ListFields():
        if fd.is_extension or fd.name in skip or fd.name == "uninterpreted_option":
            continue
        values = list(value) if fd.is_repeated else [value]
        out.extend(f"{fd.name} = {_value(fd, v)}" for v in values)
    return out


def _default(field: descriptor_pb2.FieldDescriptorProto) -> str:
    text = str(field.default_value)
    if field.type == _F.TYPE_STRING:
        return _quote(text.encode("utf-8"))
    if field.type == _F.TYPE_BYTES:
        return f'"{text}"'  # held C-escaped already
    return text


def _ranges(ranges: Sequence[object], inclusive_end: bool, top: int) -> str:
    parts = []
    for r in ranges:
        start, end = r.start, r.end if inclusive_end else r.end - 1  # type: ignore[attr-defined]
        if start == end:
            parts.append(str(start))
        else:
            parts.append(f"{start} to {'max' if end >= top else end}")
    return ", ".join(parts)


class _Printer:
    def __init__(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        self.file = file
        self.editions = file.syntax == "editions"
        self.proto3 = file.syntax == "proto3"
        self.lines: list[str] = []

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(_INDENT * depth + text)

    # -- fields

    def label(self, field: descriptor_pb2.FieldDescriptorProto, in_oneof: bool) -> str:
        if field.label == _F.LABEL_REPEATED:
            return "repeated "
        if in_oneof or self.editions:
            return ""
        if self.proto3:
            return "optional " if field.proto3_optional else ""
        return "required " if field.label == _F.LABEL_REQUIRED else "optional "

    def field_options(self, field: descriptor_pb2.FieldDescriptorProto) -> str:
        items = []
        if field.HasField("default_value"):
            items.append(f"default = {_default(field)}")
        if field.HasField("json_name") and field.json_name != default_json_name(field.name):
            items.append(f"json_name = {_quote(field.json_name.encode('utf-8'))}")
        items.extend(_options(field.options))
        return f" [{', '.join(items)}]" if items else ""

    def field(
        self,
        depth: int,
        field: descriptor_pb2.FieldDescriptorProto,
        nested: dict[str, descriptor_pb2.DescriptorProto],
        in_oneof: bool,
    ) -> None:
        target = nested.get(field.type_name)
        if target is not None and target.options.map_entry:
            key, value = target.field[0], target.field[1]
            kind = f"map<{self.type_of(key)}, {self.type_of(value)}>"
            self.emit(depth, f"{kind} {field.name} = {field.number}{self.field_options(field)};")
        elif target is not None and field.type == _F.TYPE_GROUP:
            head = f"{self.label(field, in_oneof)}group {target.name} = {field.number}{self.field_options(field)} {{"
            self.emit(depth, head)
            self.body(depth + 1, target, field.type_name)
            self.emit(depth, "}")
        else:
            line = f"{self.label(field, in_oneof)}{self.type_of(field)} {field.name} = {field.number}"
            self.emit(depth, f"{line}{self.field_options(field)};")

    @staticmethod
    def type_of(field: descriptor_pb2.FieldDescriptorProto) -> str:
        return _SCALARS.get(field.type) or field.type_name

    # -- messages

    def message(self, depth: int, msg: descriptor_pb2.DescriptorProto, scope: str) -> None:
        self.emit(depth, f"message {msg.name} {{")
        self.body(depth + 1, msg, f"{scope}.{msg.name}")
        self.emit(depth, "}")

    def body(self, depth: int, msg: descriptor_pb2.DescriptorProto, full: str) -> None:
        for item in _options(msg.options, frozenset({"map_entry"})):
            self.emit(depth, f"option {item};")
        by_type = {f"{full}.{n.name}": n for n in msg.nested_type}
        # a nested type protoc made for a map field or a group is printed with that field
        owner = {
            f.type_name: i
            for i, f in enumerate(msg.field)
            if f.type_name in by_type and (by_type[f.type_name].options.map_entry or f.type == _F.TYPE_GROUP)
        }
        done = [False] * len(msg.field)

        def fields_to(last: int) -> None:
            for i in range(last + 1):
                if done[i]:
                    continue
                f = msg.field[i]
                real_oneof = f.HasField("oneof_index") and not f.proto3_optional
                if not real_oneof:
                    done[i] = True
                    self.field(depth, f, by_type, False)
                    continue
                members = [
                    j for j, g in enumerate(msg.field) if g.HasField("oneof_index") and g.oneof_index == f.oneof_index
                ]
                decl = msg.oneof_decl[f.oneof_index]
                self.emit(depth, f"oneof {decl.name} {{")
                for item in _options(decl.options):
                    self.emit(depth + 1, f"option {item};")
                for j in members:
                    done[j] = True
                    self.field(depth + 1, msg.field[j], by_type, True)
                self.emit(depth, "}")

        for nested in msg.nested_type:
            index = owner.get(f"{full}.{nested.name}")
            if index is None:
                self.message(depth, nested, full)
            else:
                fields_to(index)
        fields_to(len(msg.field) - 1)
        for enum in msg.enum_type:
            self.enum(depth, enum)
        for r in msg.extension_range:
            self.emit(depth, f"extensions {_ranges([r], False, _FIELD_NUMBER_MAX)};")
        self.extensions(depth, msg.extension, full)
        if msg.reserved_range:
            self.emit(depth, f"reserved {_ranges(msg.reserved_range, False, _FIELD_NUMBER_MAX)};")
        if msg.reserved_name:
            self.emit(depth, f"reserved {self.reserved_names(msg.reserved_name)};")

    def reserved_names(self, names: Sequence[str]) -> str:
        if self.editions:
            return ", ".join(names)
        return ", ".join(_quote(n.encode("utf-8")) for n in names)

    def extensions(self, depth: int, fields: Sequence[descriptor_pb2.FieldDescriptorProto], scope: str) -> None:
        i = 0
        while i < len(fields):
            extendee = fields[i].extendee
            self.emit(depth, f"extend {extendee} {{")
            while i < len(fields) and fields[i].extendee == extendee:
                self.field(depth + 1, fields[i], {}, False)
                i += 1
            self.emit(depth, "}")

    # -- enums, services, the file

    def enum(self, depth: int, enum: descriptor_pb2.EnumDescriptorProto) -> None:
        self.emit(depth, f"enum {enum.name} {{")
        for item in _options(enum.options):
            self.emit(depth + 1, f"option {item};")
        for value in enum.value:
            opts = _options(value.options)
            suffix = f" [{', '.join(opts)}]" if opts else ""
            self.emit(depth + 1, f"{value.name} = {value.number}{suffix};")
        if enum.reserved_range:
            self.emit(depth + 1, f"reserved {_ranges(enum.reserved_range, True, _ENUM_NUMBER_MAX)};")
        if enum.reserved_name:
            self.emit(depth + 1, f"reserved {self.reserved_names(enum.reserved_name)};")
        self.emit(depth, "}")

    def service(self, service: descriptor_pb2.ServiceDescriptorProto) -> None:
        self.emit(0, f"service {service.name} {{")
        for item in _options(service.options):
            self.emit(1, f"option {item};")
        for method in service.method:
            source = f"{'stream ' if method.client_streaming else ''}{method.input_type}"
            sink = f"{'stream ' if method.server_streaming else ''}{method.output_type}"
            opts = _options(method.options)
            head = f"rpc {method.name}({source}) returns ({sink})"
            if not opts:
                self.emit(1, f"{head};")
                continue
            self.emit(1, f"{head} {{")
            for item in opts:
                self.emit(2, f"option {item};")
            self.emit(1, "}")
        self.emit(0, "}")

    def print(self) -> str:
        f = self.file
        if self.editions:
            edition = descriptor_pb2.Edition.Name(f.edition).removeprefix("EDITION_")
            self.emit(0, f'edition = "{edition}";')
        else:
            self.emit(0, f'syntax = "{"proto3" if self.proto3 else "proto2"}";')
        if f.package:
            self.emit(0, f"package {f.package};")
        for i, dep in enumerate(f.dependency):
            kind = "public " if i in f.public_dependency else "weak " if i in f.weak_dependency else ""
            self.emit(0, f"import {kind}{_quote(dep.encode('utf-8'))};")
        for item in _options(f.options):
            self.emit(0, f"option {item};")
        scope = f".{f.package}" if f.package else ""
        for msg in f.message_type:
            self.message(0, msg, scope)
        for enum in f.enum_type:
            self.enum(0, enum)
        self.extensions(0, f.extension, scope)
        for service in f.service:
            self.service(service)
        return "\n".join(self.lines) + "\n"


def print_file(file: descriptor_pb2.FileDescriptorProto) -> str:
    """The ``.proto`` text of ``file`` (see the module docstring for what is kept)."""
    return _Printer(file).print()
