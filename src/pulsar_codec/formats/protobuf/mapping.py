"""Protobuf message type -> (Avro shadow schema, transcode program, Arrow columns).

The Protobuf kernel (``_kernels/protobuf_py.py`` documents the program) reads each payload once and
writes its Avro binary form under a *shadow* Avro schema; the Avro column builders then decode those
bytes, into slots whose Arrow types are set here where Avro has no such type (same physical width, so
no copy). Enums and ``Struct`` values are finished by a vectorised pass over the decoded batch
(:mod:`.format`). The Arrow mapping (README, "Protobuf -> Arrow"):

===========================================  =====================================================
Protobuf                                     Arrow
===========================================  =====================================================
message                                      struct, fields in declaration order, proto names
int32, sint32, sfixed32                      int32
uint32, fixed32                              uint32
int64, sint64, sfixed64                      int64
uint64, fixed64                              uint64
float, double, bool, string, bytes           float32, float64, bool, string, binary
enum                                         dictionary<int32, string>: the value names in
                                             declaration order, then the decimal text of each
                                             unknown number met in the batch (kept, never lost);
                                             ``enums_as="int32"``: the numbers
repeated T                                   list<T> (not null, items not null); packed and
                                             unpacked encodings both read
map<K, V>                                    map<K, V> (keys not null; a key repeated in one
                                             payload keeps its first place and its last value)
oneof ``o``                                  each member a nullable field, then ``o_case``: string,
                                             the name of the member set (null when none)
proto3 implicit presence (scalar, enum,      the type, not null: the default (0, "", first enum
string, bytes)                               value) when absent
proto3 ``optional``, proto2 ``optional``,    nullable; absent -> null, or for proto2 the field's
message fields                               ``[default = ...]`` when it has one
proto2 ``required``                          not null; absent -> PROTO_MISSING_REQUIRED error row
google.protobuf.Timestamp                    timestamp[ns, UTC] (seconds * 1e9 + nanos; outside
                                             int64 -> PROTO_VALUE_RANGE error row)
google.protobuf.Duration                     duration[ns] (same rule)
google.protobuf.*Value wrappers              the wrapped scalar, nullable
google.protobuf.Struct, Value, ListValue     string: canonical JSON text (compact, keys sorted;
                                             NaN and infinities as the strings "NaN",
                                             "Infinity", "-Infinity", as proto3 JSON writes doubles)
google.protobuf.Any                          struct<type_url: string, value: binary>
google.protobuf.Empty                        struct with no fields
group (proto2 / delimited encoding)          refused: SchemaError naming the field path
recursive message                            refused: SchemaError with the path (``A.b.c -> A``);
                                             with ``max_depth=N`` messages nested deeper than N
                                             levels (the root is level 1) are binary: the field's
                                             serialized bytes
===========================================  =====================================================

Unknown fields are skipped. A string must be valid UTF-8, proto2 strings too (an Arrow string
cannot hold anything else). Unknown enum numbers are kept for closed (proto2) enums as well, where
the Protobuf runtime would move them to the unknown fields. A proto3 oneof that is a synthetic one
(proto3 ``optional``) is no oneof here: the field is a nullable column with no ``_case``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from ..._kernels.defs import (
    K_LIST,
    K_STRUCT,
    P_BOOL,
    P_BYTES,
    P_DOUBLE,
    P_DURATION,
    P_FIXED32,
    P_FIXED64,
    P_FLOAT,
    P_INT32,
    P_INT64,
    P_MESSAGE,
    P_RAW,
    P_SFIXED32,
    P_SFIXED64,
    P_SINT32,
    P_SINT64,
    P_STRING,
    P_TIMESTAMP,
    P_UINT32,
    P_UINT64,
    PF_CASE,
    PF_IMPLICIT,
    PF_MAP,
    PF_ONEOF,
    PF_OPTIONAL,
    PF_REPEATED,
    PF_REQUIRED,
    PROTO_MAX_DEPTH,
)
from ...errors import SchemaError
from ..avro import schema as av
from ..avro.plan import Layout, build_layout

__all__ = ["EnumInfo", "ProtobufMapping", "ProtobufLayout", "map_message", "build_protobuf_layout", "ENUMS_AS"]

ENUMS_AS = ("dictionary", "int32")
"""The values of the ``enums_as`` option."""

_T = FieldDescriptor
# Protobuf scalar type -> (kernel op, Avro type, Arrow type when Avro's is not the column's)
_SCALARS: dict[int, tuple[int, str, pa.DataType | None]] = {
    _T.TYPE_INT32: (P_INT32, "int", None),
    _T.TYPE_SINT32: (P_SINT32, "int", None),
    _T.TYPE_SFIXED32: (P_SFIXED32, "int", None),
    _T.TYPE_UINT32: (P_UINT32, "int", pa.uint32()),
    _T.TYPE_FIXED32: (P_FIXED32, "int", pa.uint32()),
    _T.TYPE_INT64: (P_INT64, "long", None),
    _T.TYPE_SINT64: (P_SINT64, "long", None),
    _T.TYPE_SFIXED64: (P_SFIXED64, "long", None),
    _T.TYPE_UINT64: (P_UINT64, "long", pa.uint64()),
    _T.TYPE_FIXED64: (P_FIXED64, "long", pa.uint64()),
    _T.TYPE_FLOAT: (P_FLOAT, "float", None),
    _T.TYPE_DOUBLE: (P_DOUBLE, "double", None),
    _T.TYPE_BOOL: (P_BOOL, "boolean", None),
    _T.TYPE_STRING: (P_STRING, "string", None),
    _T.TYPE_BYTES: (P_BYTES, "bytes", None),
    _T.TYPE_ENUM: (P_INT32, "int", None),
}
_WRAPPERS = {
    f"google.protobuf.{name}Value": kind
    for name, kind in (
        ("Double", _T.TYPE_DOUBLE),
        ("Float", _T.TYPE_FLOAT),
        ("Int64", _T.TYPE_INT64),
        ("UInt64", _T.TYPE_UINT64),
        ("Int32", _T.TYPE_INT32),
        ("UInt32", _T.TYPE_UINT32),
        ("Bool", _T.TYPE_BOOL),
        ("String", _T.TYPE_STRING),
        ("Bytes", _T.TYPE_BYTES),
    )
}
_JSON_TYPES = ("google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue")
_NULL = av.Primitive("null")
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


@dataclass(frozen=True)
class EnumInfo:
    """An enum's dictionary: value names in declaration order and their numbers (aliases share one)."""

    name: str
    names: tuple[str, ...]
    numbers: tuple[int, ...]


@dataclass(frozen=True)
class ProtobufMapping:
    """What one message type maps to.

    Attributes
    ----------
    shadow : avro Record
        The Avro schema the kernel writes.
    program : tuple
        The flat transcode program (node 0 is the root message).
    arrow_types : dict
        ``id(shadow node)`` -> Arrow type of its slot, where Avro's differs (uint32, uint64,
        timestamp[ns, UTC], duration[ns]).
    maps : frozenset
        ``id()`` of the shadow arrays that are Protobuf maps (arrays of key/value records).
    enums : dict
        ``id(shadow int node)`` -> :class:`EnumInfo`, for the enum columns to finish as dictionaries.
    json_values : dict
        ``id(shadow bytes node)`` -> full name of the Struct / Value / ListValue type they hold.
    required : dict
        ``(message node, field number)`` -> full name of a required field (the kernel reports a
        missing one as ``node << 29 | number``).
    """

    shadow: av.Record
    program: tuple[Any, ...]
    arrow_types: dict[int, pa.DataType] = field(default_factory=dict)
    maps: frozenset[int] = frozenset()
    enums: dict[int, EnumInfo] = field(default_factory=dict)
    json_values: dict[int, str] = field(default_factory=dict)
    required: dict[tuple[int, int], str] = field(default_factory=dict)


def _zigzag(value: int) -> bytes:
    n = ((value << 1) ^ (value >> 63)) & _MASK64
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _scalar_bytes(kind: int, value: Any) -> bytes:
    """The Avro bytes the kernel writes for a Protobuf scalar ``value`` of type ``kind``."""
    avro = _SCALARS[kind][1]
    if avro == "int":
        return _zigzag(_signed(int(value), 32))
    if avro == "long":
        return _zigzag(_signed(int(value), 64))
    if avro == "float":
        return struct.pack("<f", value)
    if avro == "double":
        return struct.pack("<d", value)
    if avro == "boolean":
        return b"\x01" if value else b"\x00"
    raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    return _zigzag(len(raw)) + raw


def _zero(kind: int) -> Any:
    return {"float": 0.0, "double": 0.0, "boolean": False, "string": "", "bytes": b""}.get(_SCALARS[kind][1], 0)


@dataclass
class _Value:
    """A mapped value: its program node, non-null Avro type and the Avro bytes of its default."""

    node: int
    avro: av.Schema
    default: bytes


def _synthetic_oneofs(message: Descriptor) -> set[str]:
    """Names of the oneofs protoc made for proto3 ``optional`` fields (one field each)."""
    proto = descriptor_pb2.DescriptorProto()
    message.CopyToProto(proto)
    return {message.oneofs[f.oneof_index].name for f in proto.field if f.proto3_optional and f.HasField("oneof_index")}


class _Mapper:
    def __init__(self, enums_as: str, max_depth: int | None) -> None:
        self.enums_as = enums_as
        self.max_depth = max_depth
        self.nodes: list[Any] = [None]  # node 0 is the root message, set at the end
        self.scalar_nodes: dict[int, int] = {}
        self.messages: dict[Any, tuple[int, av.Record, bytes]] = {}
        self.active: list[str] = []  # full names of the messages being expanded (recursion)
        self.record_names: set[str] = set()
        self.arrow_types: dict[int, pa.DataType] = {}
        self.maps: set[int] = set()
        self.enums: dict[int, EnumInfo] = {}
        self.json_values: dict[int, str] = {}
        self.required: dict[tuple[int, int], str] = {}
        self.json_check: int | None = None

    def add(self, node: Any) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def scalar_node(self, op: int) -> int:
        found = self.scalar_nodes.get(op)
        if found is None:
            found = self.scalar_nodes[op] = self.add((op,))
        return found

    # -- values -------------------------------------------------------------------------------------
    def scalar(self, f: FieldDescriptor, value: Any = None) -> _Value:
        """A scalar or enum value; ``value`` (None: the type's zero) gives the default bytes."""
        op, avro_type, arrow = _SCALARS[f.type]
        prim = av.Primitive(avro_type)  # a node of its own: slot types are set by node identity
        if arrow is not None:
            self.arrow_types[id(prim)] = arrow
        if f.type == _T.TYPE_ENUM and self.enums_as == "dictionary":
            enum = f.enum_type
            self.enums[id(prim)] = EnumInfo(
                enum.full_name, tuple(v.name for v in enum.values), tuple(v.number for v in enum.values)
            )
        default = _scalar_bytes(f.type, _zero(f.type) if value is None else value)
        return _Value(self.scalar_node(op), prim, default)

    def value(self, f: FieldDescriptor, level: int, path: str) -> _Value:
        """The value of field ``f`` (one item of a repeated field) in a message at ``level``."""
        if f.type == _T.TYPE_GROUP:
            raise SchemaError(f"{path}: groups (and delimited message encoding) are not supported")
        if f.type != _T.TYPE_MESSAGE:
            return self.scalar(f)
        message = f.message_type
        name = message.full_name
        if name == "google.protobuf.Timestamp" or name == "google.protobuf.Duration":
            prim = av.Primitive("long")
            is_time = name.endswith("Timestamp")
            self.arrow_types[id(prim)] = pa.timestamp("ns", tz="UTC") if is_time else pa.duration("ns")
            return _Value(self.add((P_TIMESTAMP if is_time else P_DURATION,)), prim, b"\x00")
        if name in _WRAPPERS:
            inner = message.fields_by_number[1]
            wrapped = self.scalar(inner)
            fields = ((1, PF_IMPLICIT, wrapped.node, wrapped.default, -1, "value"),)
            return _Value(self.add((P_MESSAGE, fields)), wrapped.avro, wrapped.default)
        if name in _JSON_TYPES:
            prim = av.Primitive("bytes")
            self.json_values[id(prim)] = name
            return _Value(self.add((P_RAW, self.json_nodes()[name])), prim, b"\x00")
        if self.max_depth is not None and level + 1 > self.max_depth:
            return _Value(self.add((P_RAW, -1)), av.Primitive("bytes"), b"\x00")
        node, record, default = self.message(message, level + 1, path)
        return _Value(node, record, default)

    def json_nodes(self) -> dict[str, int]:
        """Check nodes of Struct, Value and ListValue (recursive through each other), made once."""
        if self.json_check is None:
            struct_node = self.add(None)
            value_node = self.add(None)
            list_node = self.add(None)
            string, double, boolean, number = (self.scalar_node(op) for op in (P_STRING, P_DOUBLE, P_BOOL, P_INT32))
            z = b"\x00"
            entry = self.add(
                (P_MESSAGE, ((1, PF_IMPLICIT, string, z, -1, "key"), (2, PF_IMPLICIT, value_node, z, -1, "value")))
            )
            self.nodes[struct_node] = (P_MESSAGE, ((1, PF_MAP, entry, None, -1, "fields"),))
            members = ("null_value", "number_value", "string_value", "bool_value", "struct_value", "list_value")
            children = (number, double, string, boolean, struct_node, list_node)
            self.nodes[value_node] = (
                P_MESSAGE,
                tuple((i + 1, PF_ONEOF, c, z, 0, n) for i, (n, c) in enumerate(zip(members, children))),
            )
            self.nodes[list_node] = (P_MESSAGE, ((1, PF_REPEATED, value_node, None, -1, "values"),))
            self.json_check = struct_node
        base = self.json_check
        return dict(zip(_JSON_TYPES, (base, base + 1, base + 2)))

    # -- messages -----------------------------------------------------------------------------------
    def message(self, message: Descriptor, level: int, path: str) -> tuple[int, av.Record, bytes]:
        """The node, shadow record and default bytes of ``message`` at nesting ``level`` (root: 1)."""
        name = message.full_name
        if name in self.active:
            if self.max_depth is None:
                raise SchemaError(
                    f"recursive message: {path} -> {name}; a recursive message has no fixed Arrow type "
                    "(give max_depth= to read it down to that depth, deeper levels as bytes)"
                )
        if level > PROTO_MAX_DEPTH:
            raise SchemaError(f"{path}: messages nested deeper than {PROTO_MAX_DEPTH} levels")
        key: Any = name if self.max_depth is None else (name, self.max_depth - level)
        found = self.messages.get(key)
        if found is not None:
            return found
        self.active.append(name)
        try:
            built = self._message(message, level, path)
        finally:
            self.active.pop()
        self.messages[key] = built
        return built

    def _record_name(self, message: Descriptor) -> tuple[str, str | None]:
        namespace, _, short = message.full_name.rpartition(".")
        fullname, n = message.full_name, 1
        while fullname in self.record_names:
            n += 1
            fullname = f"{message.full_name}_{n}"
        self.record_names.add(fullname)
        return (short if n == 1 else f"{short}_{n}"), (namespace or None)

    def _message(self, message: Descriptor, level: int, path: str) -> tuple[int, av.Record, bytes]:
        record = av.Record(*self._record_name(message), [])
        synthetic = _synthetic_oneofs(message)
        oneofs = [o for o in message.oneofs if o.name not in synthetic]
        last_member = {o.name: max(f.index for f in o.fields) for o in oneofs if o.fields}
        taken = {f.name for f in message.fields}
        fields: list[tuple[int, int, int, bytes | None, int, str]] = []
        default = bytearray()
        for f in message.fields:
            fpath = f"{path}.{f.name}"
            avro_type, program_field, missing = self._field(f, level, fpath, oneofs, synthetic)
            record.fields.append(av.Field(f.name, avro_type))
            fields.append(program_field)
            default += missing
            oneof = f.containing_oneof
            if oneof is not None and oneof.name in last_member and last_member[oneof.name] == f.index:
                case_name = _distinct(f"{oneof.name}_case", taken)
                record.fields.append(av.Field(case_name, av.Union([_NULL, av.Primitive("string")])))
                fields.append((0, PF_CASE, -1, None, [o.name for o in oneofs].index(oneof.name), case_name))
                default += b"\x00"
        node = self.add((P_MESSAGE, tuple(fields)))
        for f in message.fields:
            if f.is_required:
                self.required[(node, f.number)] = f.full_name
        return node, record, bytes(default)

    def _field(
        self, f: FieldDescriptor, level: int, path: str, oneofs: list[Any], synthetic: set[str]
    ) -> tuple[av.Schema, tuple[int, int, int, bytes | None, int, str], bytes]:
        """Avro type, program field and default bytes of one field."""
        if f.is_repeated and f.type == _T.TYPE_MESSAGE and f.message_type.GetOptions().map_entry:
            entry = f.message_type
            key = self.value(entry.fields_by_number[1], level, path + "{key}")
            value = self.value(entry.fields_by_number[2], level, path + "{}")
            entry_record = av.Record(*self._record_name(entry), [])
            entry_record.fields = [av.Field("key", key.avro), av.Field("value", value.avro)]
            node = self.add(
                (
                    P_MESSAGE,
                    (
                        (1, PF_IMPLICIT, key.node, key.default, -1, "key"),
                        (2, PF_IMPLICIT, value.node, value.default, -1, "value"),
                    ),
                )
            )
            array = av.Array(entry_record)
            self.maps.add(id(array))
            return array, (f.number, PF_MAP, node, None, -1, f.name), b"\x00"
        if f.is_repeated:
            item = self.value(f, level, path + "[]")
            return av.Array(item.avro), (f.number, PF_REPEATED, item.node, None, -1, f.name), b"\x00"
        oneof = f.containing_oneof
        if oneof is not None and oneof.name not in synthetic:
            v = self.value(f, level, path)
            group = [o.name for o in oneofs].index(oneof.name)
            return av.Union([_NULL, v.avro]), (f.number, PF_ONEOF, v.node, b"\x00", group, f.name), b"\x00"
        if f.is_required:
            v = self.value(f, level, path)
            return v.avro, (f.number, PF_REQUIRED, v.node, None, -1, f.name), v.default
        if f.has_presence:
            if f.has_default_value and f.type not in (_T.TYPE_MESSAGE, _T.TYPE_GROUP):
                v = self.scalar(f, f.default_value)
                missing = b"\x02" + v.default
            else:
                v = self.value(f, level, path)
                missing = b"\x00"
            return av.Union([_NULL, v.avro]), (f.number, PF_OPTIONAL, v.node, missing, -1, f.name), missing
        v = self.value(f, level, path)
        return v.avro, (f.number, PF_IMPLICIT, v.node, v.default, -1, f.name), v.default


def _distinct(name: str, taken: set[str]) -> str:
    found, n = name, 1
    while found in taken:
        n += 1
        found = f"{name}_{n}"
    taken.add(found)
    return found


def map_message(message: Descriptor, enums_as: str = "dictionary", max_depth: int | None = None) -> ProtobufMapping:
    """The shadow schema and transcode program of ``message`` (see the module docstring).

    Parameters
    ----------
    message
        The message type (a ``google.protobuf`` Descriptor).
    enums_as
        ``"dictionary"`` (enum columns as dictionary<int32, string>) or ``"int32"`` (the numbers).
    max_depth
        None: a recursive message is a SchemaError. N >= 1: messages nested deeper than N levels
        (the root is level 1) are read as their serialized bytes.

    Raises
    ------
    SchemaError
        A group, a recursive message without ``max_depth``, nesting over 100 levels.
    """
    if enums_as not in ENUMS_AS:
        raise ValueError(f"enums_as must be one of {ENUMS_AS}, got {enums_as!r}")
    if max_depth is not None and (type(max_depth) is not int or not 1 <= max_depth <= PROTO_MAX_DEPTH):
        raise ValueError(f"max_depth must be None or an int from 1 to {PROTO_MAX_DEPTH}, got {max_depth!r}")
    mapper = _Mapper(enums_as, max_depth)
    mapper.active.append(message.full_name)
    root_node, record, _ = mapper._message(message, 1, message.full_name)
    # the root's node becomes node 0: move it there and renumber (child indexes in the nodes)
    nodes = mapper.nodes
    order = [root_node] + [i for i in range(1, len(nodes)) if i != root_node]
    where = {old: new for new, old in enumerate(order)}
    program = tuple(_renumber(nodes[i], where) for i in order)
    return ProtobufMapping(
        record,
        program,
        mapper.arrow_types,
        frozenset(mapper.maps),
        mapper.enums,
        mapper.json_values,
        {(where[node], number): name for (node, number), name in mapper.required.items()},
    )


def _renumber(node: tuple[Any, ...], where: dict[int, int]) -> tuple[Any, ...]:
    if node[0] == P_MESSAGE:
        return (P_MESSAGE, tuple((n, s, where.get(c, c) if c >= 0 else c, m, g, nm) for n, s, c, m, g, nm in node[1]))
    if node[0] == P_RAW:
        return (P_RAW, where[node[1]] if node[1] >= 0 else -1)
    return node


# -- the Arrow side ---------------------------------------------------------------------------------


@dataclass
class ProtobufLayout:
    """The Avro column builders of a shadow schema and what the Arrow columns finally are.

    ``avro.slots`` carry the types the builders assemble (enum numbers as int32, Struct values as
    binary); ``final_types`` the column types after the finishing pass, which rebuilds the slots in
    ``touched`` (those on the way to an ``enums`` or ``json_values`` slot).
    """

    avro: Layout
    final_types: list[pa.DataType]
    enums: dict[int, EnumInfo]
    json_values: dict[int, str]
    touched: frozenset[int]
    arrow_schema: pa.Schema


def _slot_type(layout: Layout, sid: int, types: list[pa.DataType], maps: frozenset[int]) -> pa.DataType:
    """The type of a struct or list slot from its children's ``types``."""
    slot = layout.slots[sid]
    node = slot.node
    if slot.kind == K_STRUCT:
        assert isinstance(node, av.Record)
        return pa.struct(
            [pa.field(f.name, types[c], nullable=av.admits_null(f.type)) for c, f in zip(slot.children, node.fields)]
        )
    assert slot.kind == K_LIST and isinstance(node, av.Array)
    child = slot.children[0]
    if id(node) in maps:
        entry = layout.slots[child]
        assert isinstance(entry.node, av.Record)
        value_field = entry.node.fields[1]
        return pa.map_(
            types[entry.children[0]],
            pa.field("value", types[entry.children[1]], nullable=av.admits_null(value_field.type)),
        )
    return pa.list_(pa.field("item", types[child], nullable=av.admits_null(node.items)))


def build_protobuf_layout(mapping: ProtobufMapping) -> ProtobufLayout:
    """The Avro layout of ``mapping.shadow`` with the Protobuf column types set on its slots."""
    layout = build_layout(mapping.shadow)
    slots = layout.slots
    built = list(s.type for s in slots)
    final = list(built)
    enums: dict[int, EnumInfo] = {}
    json_values: dict[int, str] = {}
    touched: set[int] = set()
    parent: dict[int, int] = {c: sid for sid, s in enumerate(slots) for c in s.children}
    for sid in range(len(slots) - 1, 0, -1):  # children always come after their parent
        slot = slots[sid]
        key = id(slot.node)
        if slot.kind in (K_STRUCT, K_LIST):
            built[sid] = _slot_type(layout, sid, built, mapping.maps)
            final[sid] = _slot_type(layout, sid, final, mapping.maps)
        elif key in mapping.arrow_types:
            built[sid] = final[sid] = mapping.arrow_types[key]
        elif key in mapping.enums:
            enums[sid] = mapping.enums[key]
            final[sid] = pa.dictionary(pa.int32(), pa.string())
        elif key in mapping.json_values:
            json_values[sid] = mapping.json_values[key]
            final[sid] = pa.string()
        slot.type = built[sid]
    for sid in (*enums, *json_values):
        while sid:
            touched.add(sid)
            sid = parent[sid]
    root = slots[0]
    root.type = pa.struct([pa.field(n, built[c]) for n, c in zip(layout.names, root.children)])
    schema = pa.schema([pa.field(n, final[c], nullable=True) for n, c in zip(layout.names, root.children)])
    return ProtobufLayout(layout, final, enums, json_values, frozenset(touched), schema)
