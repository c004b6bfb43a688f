"""The Protobuf decoder against the Protobuf runtime on generated schemas, on both kernel backends.

Each example draws a set of ``.proto`` files (:func:`proto_sets`): a root file in proto2 or proto3
syntax and, half the time, a second generated file it imports (proto2 or proto3 too, so proto3
messages use proto2 message types and proto2 messages use open enums). Messages hold scalars of
all fifteen types, repeated fields packed and unpacked, maps with all twelve key types, open and
closed enums (aliases and unknown numbers of open enums included), nested and imported messages,
oneofs, proto3 ``optional``, proto2 ``optional`` with ``[default = ...]`` and ``required``, and the
well-known types (Timestamp, Duration, the nine wrappers, Struct, Value, ListValue, Any, Empty).
Message types only refer to types declared before them, so no schema is recursive; groups are out
(the mapping refuses them, see test_protobuf_mapping.py).

protoc (grpcio-tools, in process) compiles the files here, independently of the code under test;
descriptor sets, pools and plans are cached by the file texts. Random messages are built with the
runtime (``message_factory.GetMessageClass``; values within each type's range, random presence),
serialized deterministically or not, each with its repeated fields packed as declared or the other
way (through the same schema with the packing flipped); several serializations are concatenated
into one payload (the runtime merges them), whose top-level fields may be shuffled and mixed with
unknown fields of every wire type. The expected row is the runtime's reading of the same bytes
(``FromString``) through the mapping rules (protobuf_fixtures.row_of, enums as names and as
numbers); the decoder reads the payloads through the format (``FORMAT.decode``) and through
``pc.decode`` with the files registered in the embedded registry, the import as a reference.

Twin parity: valid payloads with random byte edits decode to the same batch and the same error
rows (code, index, offset, detail) on the compiled and the pure twin, with and without keep_going;
and a mutated row the decoder accepts must be one the runtime reads, and read the same way.

Two bugs found here are fixed and tested: a oneof's message member replaced by a later member went
unchecked (test_superseded_oneof_member_is_still_checked: malformed bytes there are an error row, as
the runtime refuses them), and pc.decode with a registry, ``message=`` and ``on_error="raise"``
refused rows of a non-first message type (test_registry_schema_type_with_message_and_raise).
"""

from __future__ import annotations

import functools
import importlib.resources
import itertools
import math
import os
import tempfile
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("grpc_tools")
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory, unknown_fields  # noqa: E402
from google.protobuf.descriptor import FieldDescriptor  # noqa: E402
from google.protobuf.message import DecodeError as RuntimeDecodeError  # noqa: E402
from grpc_tools import protoc  # noqa: E402

import pulsar_codec as pc  # noqa: E402
from protobuf_fixtures import FORMAT, _is_map, _synthetic, canonical_rows, decode, expected_rows  # noqa: E402
from pulsar_codec import wire  # noqa: E402
from pulsar_codec._kernels import _backend  # noqa: E402
from pulsar_codec.formats.protobuf.format import ProtobufFormat  # noqa: E402
from pulsar_codec.registry import LocalRegistry  # noqa: E402

# -- schemas -------------------------------------------------------------------------------------------

SCALAR_TYPES = ("double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64",
                "sfixed32", "sfixed64", "bool", "string", "bytes")  # fmt: skip
PACKABLE = SCALAR_TYPES[:13]
MAP_KEYS = ("int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64",
            "bool", "string")  # fmt: skip
_WRAPPERS = ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
WELL_KNOWN = {
    "Timestamp": "google/protobuf/timestamp.proto",
    "Duration": "google/protobuf/duration.proto",
    **{f"{n}Value": "google/protobuf/wrappers.proto" for n in _WRAPPERS},
    "Struct": "google/protobuf/struct.proto",
    "Value": "google/protobuf/struct.proto",
    "ListValue": "google/protobuf/struct.proto",
    "Any": "google/protobuf/any.proto",
    "Empty": "google/protobuf/empty.proto",
}
INT_RANGES = {
    **dict.fromkeys(("int32", "sint32", "sfixed32"), (-(2**31), 2**31 - 1)),
    **dict.fromkeys(("int64", "sint64", "sfixed64"), (-(2**63), 2**63 - 1)),
    **dict.fromkeys(("uint32", "fixed32"), (0, 2**32 - 1)),
    **dict.fromkeys(("uint64", "fixed64"), (0, 2**64 - 1)),
}
# field numbers: small ones (1-byte tags) and the edges of each tag length, up to the largest
NUMBERS = st.one_of(st.integers(1, 40), st.sampled_from([15, 16, 2047, 2048, 18999, 20000, 262143, 262144, 536870911]))
# default texts with quotes, escapes, non-ASCII and astral characters
DEFAULT_TEXT = st.text(alphabet='ab "\\\n\té€😀', max_size=5)
DEFAULT_FLOATS = ("1.5", "-0.25", "0.1", "1e10", "-0", "inf", "-inf", "nan")


def _quote(text: str) -> str:
    escapes = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t"}
    return '"' + "".join(escapes.get(c, c) for c in text) + '"'


@dataclass(frozen=True)
class ProtoSet:
    """Generated .proto files (dependencies first), the root file's name and its message types."""

    files: tuple[tuple[str, str], ...]
    messages: tuple[str, ...]

    @property
    def root(self) -> str:
        return self.files[-1][0]

    def __repr__(self) -> str:  # what hypothesis prints for a failing example: the files themselves
        return "\n".join(f"// ---- {name}\n{text}" for name, text in self.files)


@dataclass
class _Enum:
    full_name: str
    names: list[str]
    closed: bool
    zero_first: bool  # a map value's enum must start with 0 (protoc checks this for closed enums)


class _FileWriter:
    """Writes one generated .proto file; the types it may use are those declared before."""

    def __init__(self, draw: Any, counter: Any, syntax: str, messages: list[str], enums: list[_Enum]) -> None:
        self.draw, self.counter, self.syntax = draw, counter, syntax
        self.messages, self.enums = messages, enums  # shared with the other file: what is declared so far
        self.declared: list[str] = []  # this file's messages
        self.imports: set[str] = set()

    @property
    def proto2(self) -> bool:
        return self.syntax == "proto2"

    def name(self, prefix: str) -> str:
        return f"{prefix}{next(self.counter)}"

    def usable_enums(self, map_value: bool = False) -> list[_Enum]:
        # proto3 fields may only use open enums (protoc refuses proto2 enums there)
        return [e for e in self.enums if (self.proto2 or not e.closed) and (e.zero_first or not map_value)]

    def enum(self, pad: str, scope: str) -> str:
        draw = self.draw
        name = self.name("E")
        count = draw(st.integers(1, 4))
        if self.proto2:  # closed: any numbers, the first is the default
            numbers = draw(st.lists(st.integers(-3, 40), min_size=count, max_size=count, unique=True))
        else:
            others = st.integers(-3, 40).filter(bool)
            numbers = [0, *draw(st.lists(others, min_size=count - 1, max_size=count - 1, unique=True))]
        values = [(f"{name}_V{i}", n) for i, n in enumerate(numbers)]
        body = []
        if count > 1 and draw(st.integers(0, 3)) == 0:  # an alias: the number keeps its first name
            body.append("option allow_alias = true;")
            values.append((f"{name}_ALIAS", draw(st.sampled_from(numbers))))
        body += [f"{v} = {n};" for v, n in values]
        # enum values are scoped like siblings of their enum: the names are unique anyway
        self.enums.append(_Enum(f"{scope}.{name}", [v for v, _ in values], self.proto2, numbers[0] == 0))
        return f"{pad}enum {name} {{ " + " ".join(body) + " }"

    def type_of(self, kind: str, map_value: bool = False) -> str:
        draw = self.draw
        if kind == "enum" and self.usable_enums(map_value):
            return draw(st.sampled_from(self.usable_enums(map_value))).full_name
        if kind == "message" and self.messages:
            return draw(st.sampled_from(self.messages))
        if kind == "wkt":
            name = draw(st.sampled_from(sorted(WELL_KNOWN)))
            self.imports.add(WELL_KNOWN[name])
            return f".google.protobuf.{name}"
        return draw(st.sampled_from(SCALAR_TYPES))

    def default(self, type_: str) -> str | None:
        draw = self.draw
        enum = next((e for e in self.enums if e.full_name == type_), None)
        if enum is not None:
            return draw(st.sampled_from(enum.names))
        if type_ == "string":
            return _quote(draw(DEFAULT_TEXT))
        if type_ == "bytes":
            return '"' + "".join(f"\\{b:03o}" for b in draw(st.binary(max_size=4))) + '"'
        if type_ == "bool":
            return draw(st.sampled_from(["true", "false"]))
        if type_ in ("float", "double"):
            return draw(st.sampled_from(DEFAULT_FLOATS))
        if type_ in INT_RANGES:
            return str(draw(st.integers(*INT_RANGES[type_])))
        return None  # message types have no default

    def number(self, used: set[int]) -> int:
        n = self.draw(NUMBERS)
        while n in used or 19000 <= n <= 19999:  # 19000-19999: reserved for the implementation
            n = n + 1 if n < 536870911 else 1
        used.add(n)
        return n

    def field(self, pad: str, used: set[int], in_oneof: bool) -> str:
        draw = self.draw
        name, number = self.name("f"), self.number(used)
        kinds = ["scalar", "scalar", "scalar", "enum", "message", "wkt"] + ([] if in_oneof else ["map"])
        kind = draw(st.sampled_from(kinds))
        if kind == "map":
            key = draw(st.sampled_from(MAP_KEYS))
            value = self.type_of(draw(st.sampled_from(["scalar", "scalar", "enum", "message", "wkt"])), True)
            return f"{pad}map<{key}, {value}> {name} = {number};"
        type_ = self.type_of(kind)
        is_enum = any(e.full_name == type_ for e in self.enums)
        if in_oneof:
            label = ""
        elif self.proto2:
            label = draw(st.sampled_from(["optional ", "optional ", "repeated ", "required "]))
        else:
            label = draw(st.sampled_from(["", "", "optional ", "repeated "]))
        options = []
        if label == "repeated " and (type_ in PACKABLE or is_enum) and draw(st.booleans()):
            options.append("packed = true" if self.proto2 else "packed = false")  # the other way than the default
        if label == "optional " and self.proto2 and draw(st.booleans()):
            default = self.default(type_)
            if default is not None:
                options.append(f"default = {default}")
        suffix = f" [{', '.join(options)}]" if options else ""
        return f"{pad}{label}{type_} {name} = {number}{suffix};"

    def message(self, indent: int, scope: str) -> str:
        draw = self.draw
        name = self.name("M")
        full = f"{scope}.{name}"
        pad = "  " * indent
        lines = [f"{pad}message {name} {{"]
        if indent < 2:  # nested types first, so the fields may use them (and never the other way)
            for item in draw(st.lists(st.sampled_from(["message", "enum"]), max_size=2 - indent)):
                lines.append(self.message(indent + 1, full) if item == "message" else self.enum(pad + "  ", full))
        used: set[int] = set()
        items = draw(
            st.lists(st.sampled_from(["field"] * 5 + ["oneof"]), min_size=3 - indent, max_size=10 - 3 * indent)
        )
        for item in items:
            if item == "field":
                lines.append(self.field(pad + "  ", used, False))
            else:
                members = [self.field(pad + "    ", used, True) for _ in range(draw(st.integers(1, 3)))]
                lines += [f"{pad}  oneof {self.name('o')} {{", *members, f"{pad}  }}"]
        lines.append(f"{pad}}}")
        self.messages.append(full)  # usable from here on: no message can reach itself
        self.declared.append(full[1:])
        return "\n".join(lines)

    def text(self, package: str, imports: list[str], body: list[str]) -> str:
        head = [f'syntax = "{self.syntax}";', f"package {package};"]
        head += [f'import "{name}";' for name in [*imports, *sorted(self.imports)]]
        return "\n".join(head + body) + "\n"

    def file(self, package: str, imports: list[tuple[str, str]], min_messages: int) -> str:
        items = self.draw(st.lists(st.sampled_from(["message", "message", "enum"]), min_size=1, max_size=4))
        items += ["message"] * max(0, min_messages - items.count("message"))
        scope = f".{package}"
        body = [self.message(0, scope) if i == "message" else self.enum("", scope) for i in items]
        used = [name for name, prefix in imports if any(prefix in line for line in body)]  # protoc warns of others
        return self.text(package, used, body)


@st.composite
def proto_sets(draw: Any) -> ProtoSet:
    """A root .proto file and, half the time, a generated file it imports (see the module docstring)."""
    counter = itertools.count()
    messages: list[str] = []
    enums: list[_Enum] = []
    files = []
    imports = []
    if draw(st.booleans()):
        dep = _FileWriter(draw, counter, draw(st.sampled_from(["proto2", "proto3"])), messages, enums)
        name = f"dep/d{draw(st.integers(0, 9))}.proto"
        files.append((name, dep.file("dep.types", [], 0)))
        imports.append((name, ".dep.types."))
    root = _FileWriter(draw, counter, draw(st.sampled_from(["proto2", "proto3"])), messages, enums)
    package = draw(st.sampled_from(["gen", "a.b.gen"]))
    text = root.file(package, imports, 1)
    if files and f'import "{files[0][0]}";' not in text:  # the root uses none of its types
        files.clear()
    files.append((f"gen_{draw(st.integers(0, 9))}.proto", text))
    # the richest message first: what hypothesis tries first and shrinks towards
    pool = compiled(tuple(files))
    names = sorted(root.declared, key=lambda n: -len(pool.FindMessageTypeByName(n).fields))
    return ProtoSet(tuple(files), tuple(names))


# -- protoc and the plans, cached by file texts ------------------------------------------------------


@functools.lru_cache(maxsize=256)
def file_set(files: tuple[tuple[str, str], ...]) -> descriptor_pb2.FileDescriptorSet:
    """``files`` (the last one the root) compiled by protoc, with every file they import."""
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    with tempfile.TemporaryDirectory() as folder:
        for name, text in files:
            os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
            with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        out = os.path.join(folder, "set.bin")
        args = ["protoc", f"-I{include}", f"-I{folder}", "--include_imports", f"--descriptor_set_out={out}"]
        if protoc.main([*args, files[-1][0]]) != 0:
            pytest.fail("protoc refused a generated schema:\n" + repr(ProtoSet(files, ())))
        with open(out, "rb") as handle:
            return descriptor_pb2.FileDescriptorSet.FromString(handle.read())


_PACKABLE_TYPES = frozenset(range(1, 19)) - {
    FieldDescriptor.TYPE_STRING,
    FieldDescriptor.TYPE_BYTES,
    FieldDescriptor.TYPE_MESSAGE,
    FieldDescriptor.TYPE_GROUP,
}


def _flip_packing(message: descriptor_pb2.DescriptorProto, proto3: bool) -> None:
    for field in message.field:
        if field.label == field.LABEL_REPEATED and field.type in _PACKABLE_TYPES:
            if field.options.HasField("packed"):
                field.options.ClearField("packed")
            else:
                field.options.packed = not proto3  # the other way than the syntax's default
    for nested in message.nested_type:
        _flip_packing(nested, proto3)


@functools.lru_cache(maxsize=256)
def compiled(files: tuple[tuple[str, str], ...], flip: bool = False) -> descriptor_pool.DescriptorPool:
    """The descriptor pool of ``files``; with ``flip``, every packable repeated field of the generated
    files is written the other way (packed <-> expanded), the same schema on the wire for a reader."""
    pool = descriptor_pool.DescriptorPool()
    for proto in file_set(files).file:
        if flip and not proto.name.startswith("google/"):
            proto = descriptor_pb2.FileDescriptorProto.FromString(proto.SerializeToString())
            for message in proto.message_type:
                _flip_packing(message, proto.syntax == "proto3")
        pool.Add(proto)
    return pool


INT32_ENUMS = ProtobufFormat(enums_as="int32")


@functools.lru_cache(maxsize=256)
def planned(files: tuple[tuple[str, str], ...], message: str, fmt: Any = FORMAT) -> tuple[Any, Any, Any]:
    """The plan of ``fmt`` reading ``message`` of ``files``, its runtime message class, and the
    class of the same message with the packing of its repeated fields flipped."""
    desc = compiled(files).FindMessageTypeByName(message)
    flipped = message_factory.GetMessageClass(compiled(files, True).FindMessageTypeByName(message))
    return fmt.plan(desc, desc), message_factory.GetMessageClass(desc), flipped


def message_indexes(desc: Any) -> list[int]:
    """Confluent's message-index path of ``desc``: positions among the nested types (map entries
    included) of each enclosing message, then among the file's top-level messages."""
    path = []
    while desc.containing_type is not None:
        path.append(list(desc.containing_type.nested_types).index(desc))
        desc = desc.containing_type
    path.append(list(desc.file.message_types_by_name.values()).index(desc))
    return path[::-1]


# -- messages ------------------------------------------------------------------------------------------

TEXT = st.text(st.characters(codec="utf-8"), max_size=8)
BLOB = st.binary(max_size=8)
JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
# seconds and nanos whose sum stays within int64 nanoseconds (1677-2262), edges included
# Timestamp seconds (nanos 0..999999999) whose nanoseconds fit int64 (1677-2262), edges included;
# Duration seconds and nanos of one sign, within the same range
SECONDS = st.one_of(st.integers(-(9 * 10**9), 9 * 10**9), st.sampled_from([0, -1, 1, 9_223_372_035, -9_223_372_036]))
TIMESTAMP = st.tuples(SECONDS, st.integers(0, 10**9 - 1))
DURATION = st.one_of(
    st.integers(-(9 * 10**9), 9 * 10**9), st.sampled_from([0, -1, 1, 9_223_372_035, -9_223_372_035])
).flatmap(lambda s: st.tuples(st.just(s), st.integers(0, 10**9 - 1) if s > 0 else st.integers(-(10**9) + 1, 0)))
_BY_TYPE = {
    FieldDescriptor.TYPE_DOUBLE: st.floats(),
    FieldDescriptor.TYPE_FLOAT: st.floats(width=32),
    FieldDescriptor.TYPE_BOOL: st.booleans(),
    FieldDescriptor.TYPE_STRING: TEXT,
    FieldDescriptor.TYPE_BYTES: BLOB,
}
for _types, (_low, _high) in (
    ((FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32), INT_RANGES["int32"]),
    ((FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64), INT_RANGES["int64"]),
    ((FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32), INT_RANGES["uint32"]),
    ((FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64), INT_RANGES["uint64"]),
):
    for _type in _types:  # the edges of each range often, the middle too
        _BY_TYPE[_type] = st.one_of(st.integers(_low, _high), st.sampled_from([_low, _high, 0, -1 if _low else 1]))


def scalar_values(field: Any) -> Any:
    """Values of a non-message field within its type's range (a closed enum: its known numbers)."""
    if field.type == FieldDescriptor.TYPE_ENUM:
        known = st.sampled_from([v.number for v in field.enum_type.values])
        if field.enum_type.is_closed:  # the runtime refuses other numbers
            return known
        return known | st.integers(-(2**31), 2**31 - 1)
    return _BY_TYPE[field.type]


def fill(draw: Any, message: Any, depth: int) -> None:
    """Set random fields of the runtime ``message`` (required ones always), nested ones too."""
    desc = message.DESCRIPTOR
    name = desc.full_name
    if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        message.seconds, message.nanos = draw(DURATION if name.endswith("Duration") else TIMESTAMP)
        return
    if name.startswith("google.protobuf.") and name.endswith("Value") and name[16:-5] in _WRAPPERS:
        message.value = draw(scalar_values(desc.fields_by_name["value"]))
        return
    if name == "google.protobuf.Struct":
        json_format.ParseDict(draw(st.dictionaries(TEXT, JSON, max_size=3)), message)
        return
    if name == "google.protobuf.Value":
        json_format.ParseDict(draw(JSON), message)
        return
    if name == "google.protobuf.ListValue":
        json_format.ParseDict(draw(st.lists(JSON, max_size=3)), message)
        return
    if name == "google.protobuf.Any":
        message.type_url = draw(st.sampled_from(["", "type.googleapis.com/gen.M0", "x/é"]))
        message.value = draw(BLOB)
        return
    many = 3 if depth < 3 else 1  # bounded: message types may chain through several files' types
    for oneof in desc.oneofs:
        if not _synthetic(oneof.fields[0]):
            member = draw(st.sampled_from([*oneof.fields, None]))
            if member is not None:
                set_field(draw, message, member, depth)
    for field in desc.fields:
        if field.containing_oneof is not None and not _synthetic(field):
            continue
        if _is_map(field):
            key_field, value_field = field.message_type.fields_by_number[1], field.message_type.fields_by_number[2]
            container = getattr(message, field.name)
            for key in draw(st.lists(scalar_values(key_field), max_size=many, unique=True)):
                if value_field.type == FieldDescriptor.TYPE_MESSAGE:
                    fill(draw, container[key], depth + 1)
                else:
                    container[key] = draw(scalar_values(value_field))
        elif field.is_repeated:
            container = getattr(message, field.name)
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                for _ in range(draw(st.integers(0, many))):
                    fill(draw, container.add(), depth + 1)
            else:
                container.extend(draw(st.lists(scalar_values(field), max_size=many + 1)))
        elif field.is_required or (depth < 5 and draw(st.booleans())):
            set_field(draw, message, field, depth)


def set_field(draw: Any, message: Any, field: Any, depth: int) -> None:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        sub = getattr(message, field.name)
        sub.SetInParent()
        fill(draw, sub, depth + 1)
    else:
        setattr(message, field.name, draw(scalar_values(field)))


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]  # IndexError past the end
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def _fields(data: bytes) -> list[tuple[int, int, int, int]]:
    """``(number, wire type, start, end)`` of each top-level field of ``data`` (no groups), as far
    as it is well formed; for a length-delimited field, ``start:end`` is its body."""
    out, pos = [], 0
    try:
        while pos < len(data):
            key, pos = _read_varint(data, pos)
            wire_type, start = key & 7, pos
            if wire_type == 0:
                pos = _read_varint(data, pos)[1]
            elif wire_type == 2:
                size, start = _read_varint(data, pos)
                pos = start + size
            elif wire_type in (1, 5):
                pos += 8 if wire_type == 1 else 4
            else:
                break
            if pos > len(data):
                break
            out.append((key >> 3, wire_type, start, pos))
    except IndexError:
        pass
    return out


def _records(payload: bytes) -> list[bytes]:
    """The top-level fields of a valid payload without groups, each as its tag and value bytes."""
    bounds = [0] + [end for _, _, _, end in _fields(payload)]
    return [payload[a:b] for a, b in zip(bounds, bounds[1:])]


@st.composite
def unknown_fields_of(draw: Any, desc: Any) -> bytes:
    """One field ``desc`` does not declare, of any wire type (a group holding a field too)."""
    number = draw(
        st.integers(1, 2**29 - 1).filter(lambda n: n not in desc.fields_by_number and not 19000 <= n <= 19999)
    )
    wire_type = draw(st.sampled_from([0, 1, 2, 3, 5]))
    tag = _varint(number << 3 | wire_type)
    if wire_type == 0:
        return tag + _varint(draw(st.integers(0, 2**64 - 1)))
    if wire_type == 2:
        body = draw(st.binary(max_size=6))
        return tag + _varint(len(body)) + body
    if wire_type == 3:
        return tag + _varint(8) + _varint(draw(st.integers(0, 2**64 - 1))) + _varint(number << 3 | 4)
    return tag + draw(st.binary(min_size=8 if wire_type == 1 else 4, max_size=8 if wire_type == 1 else 4))


@st.composite
def payloads_of(draw: Any, classes: tuple[Any, Any], max_rows: int = 4) -> list[bytes | None]:
    """Rows of random messages: one to three messages of ``classes[0]`` serialized back to back (the
    runtime merges them), each deterministically or not, and each with its repeated fields packed
    as declared or the other way (through ``classes[1]``); then now and then the top-level fields
    shuffled and unknown fields put in. Now and then a null row."""
    cls, flipped = classes
    out: list[bytes | None] = []
    for _ in range(draw(st.integers(1, max_rows))):
        if draw(st.sampled_from([False] * 9 + [True])):
            out.append(None)
            continue
        parts = []
        for _ in range(draw(st.sampled_from([1, 2, 2, 3]))):
            message = cls()
            fill(draw, message, 1)
            deterministic = draw(st.booleans())
            part = message.SerializeToString(deterministic=deterministic)
            if draw(st.booleans()):
                part = flipped.FromString(part).SerializeToString(deterministic=deterministic)
            parts.append(part)
        records = _records(b"".join(parts))
        if draw(st.booleans()):  # fields in any order (the runtime's reading of these bytes is the oracle)
            records = draw(st.permutations(records))
        for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
            records.insert(draw(st.integers(0, len(records))), draw(unknown_fields_of(cls.DESCRIPTOR)))
        out.append(b"".join(records))
    return out


# -- comparing -----------------------------------------------------------------------------------------


def _nan_free(value: Any) -> Any:
    """``value`` with NaN floats replaced by a marker (NaN equals nothing, not even itself)."""
    if isinstance(value, float) and math.isnan(value):
        return "<NaN>"
    if isinstance(value, dict):
        return {k: _nan_free(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_nan_free(v) for v in value)
    return value


def comparable(values: list[Any], schema: pa.Schema) -> list[Any]:
    return [_nan_free(v) for v in canonical_rows(values, schema)]


def oracle(cls: Any, payloads: list[bytes | None], schema: pa.Schema, **options: Any) -> list[Any]:
    """The expected rows: the runtime's reading of each payload, as the mapping promises it."""
    messages = [None if p is None else cls.FromString(p) for p in payloads]
    return comparable(expected_rows(messages, schema, **options), schema)


def batch_rows(batch: pa.RecordBatch, want: list[Any]) -> tuple[list[Any], list[Any]]:
    """The batch's rows and the expected ones, comparable: a null row of a batch is a row of nulls
    (and a message type without fields gives a batch without columns, whose ``to_pylist`` is empty)."""
    nulls = dict.fromkeys(batch.schema.names)
    want = [nulls if w is None else w for w in want]
    if batch.num_columns:
        return comparable(batch.to_pylist(), batch.schema), want
    return [{}] * batch.num_rows, want


# the profile's suppressions (conftest.py), and large draws: a schema and its messages are many choices
SUPPRESSED = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]


# -- valid payloads: the runtime's reading -------------------------------------------------------------


@settings(max_examples=50, suppress_health_check=SUPPRESSED)
@given(data=st.data())
def test_generated_schemas_decode_as_the_runtime_reads_them(backend, data):
    schema = data.draw(proto_sets(), label="schema")
    message = data.draw(st.sampled_from(schema.messages), label="message")
    plan, cls, flipped = planned(schema.files, message)
    payloads = data.draw(payloads_of((cls, flipped)), label="payloads")
    want = oracle(cls, payloads, plan.arrow_schema)

    batch, errors = decode(plan, payloads)
    assert errors == []
    assert batch.schema.equals(plan.arrow_schema)
    got, want = batch_rows(batch, want)
    assert got == want

    # enums as their numbers
    numbers = planned(schema.files, message, INT32_ENUMS)[0]
    batch, errors = decode(numbers, payloads, fmt=INT32_ENUMS)
    assert errors == [] and batch.schema.equals(numbers.arrow_schema)
    as_numbers, want_numbers = batch_rows(batch, oracle(cls, payloads, numbers.arrow_schema, enums_as="int32"))
    assert as_numbers == want_numbers

    # the same through pc.decode: the registry's text compiled by the package, the import a reference
    if all(p is None for p in payloads):
        return  # no message names a schema: the batch has no columns (see MessageDecoder)
    with LocalRegistry(":memory:") as registry:
        references = []
        for name, text in schema.files[:-1]:
            registry.register(name, text, "PROTOBUF")
            references.append({"name": name, "subject": name, "version": 1})
        schema_id = registry.register("gen-value", schema.files[-1][1], "PROTOBUF", references)
        path = message_indexes(cls.DESCRIPTOR)
        framed = [
            None if p is None else wire.CONFLUENT_PROTOBUF.pack(schema_id, p, message_indexes=path) for p in payloads
        ]
        # on_error="null": with "raise", message= makes the first read (before the registry says
        # Protobuf) refuse the rows, see test_registry_schema_type_with_message_and_raise
        out = pc.decode(pa.array(framed, pa.binary()), registry, message=message, on_error="null")
    assert out.errors.num_rows == 0, out.errors.to_pylist()
    assert out.batch.schema.equals(plan.arrow_schema)
    assert batch_rows(out.batch, want) == (got, want)


# -- mutated payloads: twin parity ---------------------------------------------------------------------

EDITS = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4)


def mutated(payload: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    """``payload`` with byte edits: overwrite, insert, cut, flip a bit, insert a long varint."""
    data = bytearray(payload)
    for kind, where, byte in edits:
        at = where % (len(data) + 1)
        if kind == 0 and data:
            data[at % len(data)] = byte
        elif kind == 1:
            data.insert(at, byte)
        elif kind == 2:
            del data[at:]
        elif kind == 3 and data:
            data[at % len(data)] ^= 1 << (byte % 8)
        else:
            value, varint = byte << 25 | byte, bytearray()
            while value > 0x7F:
                varint.append(value & 0x7F | 0x80)
                value >>= 7
            data[at:at] = bytes(varint) + bytes([value])
    return bytes(data)


def _decoded(name: str, plan: Any, payloads: list[bytes | None], keep_going: bool) -> tuple[Any, ...]:
    """What one twin makes of ``payloads``: the batch (schema, rows) and the error rows."""
    with _backend.use(name):
        batch, errors = decode(plan, payloads, keep_going)
    rows, _ = batch_rows(batch, [])
    return batch.schema, batch.num_rows, rows, [tuple(e) for e in errors]


def _known_numbers_unknown(message: Any) -> bool:
    """Whether the runtime moved a declared field of ``message`` (or of a message in it) into its
    unknown fields: what it does with a closed enum's unknown number, which the decoder keeps."""
    numbers = message.DESCRIPTOR.fields_by_number
    if any(u.field_number in numbers for u in unknown_fields.UnknownFieldSet(message)):
        return True
    for field, value in message.ListFields():
        if field.type != FieldDescriptor.TYPE_MESSAGE:
            continue
        if _is_map(field):
            items = (
                value.values() if field.message_type.fields_by_number[2].type == FieldDescriptor.TYPE_MESSAGE else []
            )
        else:
            items = value if field.is_repeated else [value]
        if any(_known_numbers_unknown(item) for item in items):
            return True
    return False


@settings(max_examples=60, suppress_health_check=SUPPRESSED)
@given(data=st.data())
def test_twins_agree_on_mutated_payloads(both_backends, data):
    schema = data.draw(proto_sets(), label="schema")
    message = data.draw(st.sampled_from(schema.messages), label="message")
    plan, cls, flipped = planned(schema.files, message)
    valid = data.draw(payloads_of((cls, flipped), 3), label="payloads")
    payloads = [p if p is None else mutated(p, data.draw(EDITS, label="edits")) for p in valid]

    compiled, pure = both_backends
    for keep_going in (True, False):
        assert _decoded(compiled.name, plan, payloads, keep_going) == _decoded(pure.name, plan, payloads, keep_going)

    # rows the decoder accepts are what the runtime reads, where the runtime reads them at all
    _, _, rows, errors = _decoded(pure.name, plan, payloads, True)
    bad = {e[1] for e in errors}
    for index, (payload, row) in enumerate(zip(payloads, rows)):
        if payload is None or index in bad or not plan.arrow_schema:
            continue
        try:
            parsed = cls.FromString(payload)
        except RuntimeDecodeError as exc:
            pytest.fail(f"row {index} decoded, but the runtime refuses it ({exc}): {payload!r}")
        if _known_numbers_unknown(parsed):
            continue  # a closed enum's unknown number: kept by the decoder, not by the runtime
        try:
            want = comparable(expected_rows([parsed], plan.arrow_schema), plan.arrow_schema)[0]
        except ValueError:  # NaN or infinity in a Struct: json_format has no JSON for them
            continue
        assert row == want, (index, payload)


def test_registry_schema_type_with_message_and_raise(backend):
    text = 'syntax = "proto3";\npackage gen;\nmessage M0 { int32 a = 1; }\nmessage M1 { int32 b = 1; }\n'
    with LocalRegistry(":memory:") as registry:
        schema_id = registry.register("gen-value", text, "PROTOBUF")
        framed = [wire.CONFLUENT_PROTOBUF.pack(schema_id, b"\x08\x01", message_indexes=[1])]
        assert pc.decode(framed, registry, message="gen.M1", on_error="null").batch.to_pylist() == [{"b": 1}]
        assert pc.decode(framed, registry, message="gen.M1").to_pylist() == [{"b": 1}]


def _ld(number: int, body: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(body)) + body


@pytest.fixture(scope="module")
def holder():
    text = (
        'syntax = "proto3";\npackage holder;\nimport "google/protobuf/struct.proto";\n'
        "message Inner { int32 a = 1; string s = 2; }\n"
        "message H { oneof o { Inner m = 1; double d = 2; Inner m2 = 3; } google.protobuf.Value v = 4; }\n"
    )
    plan, cls, _ = planned((("holder.proto", text),), "holder.H")
    return plan, cls


_DOUBLE = b"\x11" + bytes(8)  # field 2 (d), 64-bit


@pytest.mark.parametrize(
    ("first", "then"),
    [
        (_ld(1, b"\x00"), _DOUBLE),  # m holding tag 0, then d
        (_ld(1, b"\x08\x80"), _ld(3, b"")),  # m holding a cut varint, then m2
        (_ld(1, b"\x12\x05ab"), _DOUBLE),  # m holding a length past its end, then d
        (_ld(1, _ld(2, b"\xff")), _DOUBLE + _ld(1, b"")),  # m holding bad UTF-8, then d, then m again
        (_ld(4, _ld(6, b"\x00")), _ld(4, b"\x08\x00")),  # v: list_value holding tag 0, then null_value
        (_ld(4, _ld(5, b"\x00")), _ld(4, b"\x11" + bytes(8))),  # v: struct_value holding tag 0, then a number
        (_ld(4, _ld(6, _ld(1, _ld(3, b"\xff")))), _ld(4, b"\x08\x00")),  # v: a list with bad UTF-8, then null
    ],
    ids=["tag0-then-double", "cut-varint-then-m2", "length-then-double", "utf8-then-double-then-m",
         "value-list-then-null", "value-struct-then-number", "value-utf8-then-null"],
)  # fmt: skip
def test_superseded_oneof_member_is_still_checked(backend, holder, first, then):
    plan, cls = holder
    with pytest.raises(RuntimeDecodeError):
        cls.FromString(first + then)
    _, alone = decode(plan, [first])
    assert len(alone) == 1
    _, errors = decode(plan, [first + then])
    assert errors == alone


@pytest.fixture(scope="module")
def proto2_holder():
    text = (
        'syntax = "proto2";\npackage holder2;\nimport "google/protobuf/timestamp.proto";\n'
        "message Req { required int32 a = 1; }\n"
        "message H { oneof o { Req r = 1; google.protobuf.Timestamp t = 2; int32 x = 3; } }\n"
    )
    plan, cls, _ = planned((("holder2.proto", text),), "holder2.H")
    return plan, cls


@pytest.mark.parametrize(
    "first",
    [_ld(1, b""), _ld(2, b"\x08" + _varint(1 << 62))],  # r without its required a; t far out of range
    ids=["required-missing", "timestamp-range"],
)
def test_superseded_member_keeps_only_what_the_runtime_checks(backend, proto2_holder, first):
    """A replaced member is checked for malformed bytes only: what only a kept value could break
    (a required field, a Timestamp's range) is no error, as the runtime accepts the payload."""
    plan, cls = proto2_holder
    then = b"\x18\x07"  # x = 7
    assert cls.FromString(first + then).x == 7
    _, alone = decode(plan, [first])
    assert len(alone) == 1  # kept, the member itself is an error row
    batch, errors = decode(plan, [first + then])
    assert errors == [] and batch.to_pylist()[0]["x"] == 7
