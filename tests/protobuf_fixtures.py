"""Helpers for the Protobuf decoding tests: protoc in the test, decoding through the format, and the
oracle that turns a message of the Protobuf runtime into the Arrow row the mapping promises.

The oracle reads only the runtime's message API (``HasField``, ``WhichOneof``, map and repeated
containers, ``json_format``), never the code under test, so a payload the runtime parses and our
kernel decodes must give equal rows.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import tempfile

import numpy as np
import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import FieldDescriptor
from grpc_tools import protoc

from pulsar_codec.formats.base import Segment
from pulsar_codec.formats.protobuf.format import ProtobufFormat

FORMAT = ProtobufFormat()
_WRAPPERS = {
    f"google.protobuf.{n}Value"
    for n in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
}
_JSON = {"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"}


def compile_proto(text: str, name: str = "test.proto") -> descriptor_pool.DescriptorPool:
    """A descriptor pool of ``text`` compiled by protoc (grpc_tools, in process) with its imports."""
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, name), "w") as handle:
            handle.write(text)
        out = os.path.join(folder, "set.bin")
        args = ["protoc", f"-I{include}", f"-I{folder}", "--include_imports", f"--descriptor_set_out={out}", name]
        assert protoc.main(args) == 0, "protoc refused the test schema"
        with open(out, "rb") as handle:
            file_set = descriptor_pb2.FileDescriptorSet.FromString(handle.read())
    pool = descriptor_pool.DescriptorPool()
    for proto in file_set.file:
        pool.Add(proto)
    return pool


def message_class(pool: descriptor_pool.DescriptorPool, name: str):
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def layout(payloads):
    """Payloads (None: a null row) back to back, each after a gap byte, so no row is at offset 0."""
    data = bytearray()
    starts, ends, valid = [], [], []
    for p in payloads:
        data += b"#"
        starts.append(len(data))
        data += p or b""
        ends.append(len(data))
        valid.append(p is not None)
    validity = None if all(valid) else np.array(valid)
    return Segment(pa.py_buffer(bytes(data)), np.array(starts, np.int64), np.array(ends, np.int64), validity, None)


def decode(plan, payloads, keep_going=True, fmt=FORMAT):
    """(batch, errors) of ``payloads`` through the format (the active backend's kernels)."""
    return fmt.decode([plan], [layout(payloads)], keep_going)


def rows(plan, payloads, fmt=FORMAT):
    batch, errors = decode(plan, payloads, True, fmt)
    assert errors == [], errors
    return batch.to_pylist()


def first_error(plan, payload, fmt=FORMAT):
    """(code, offset, detail) of one bad payload (decoded alone, index 0)."""
    _, errors = decode(plan, [payload], True, fmt)
    assert len(errors) == 1, errors
    code, index, offset, detail = errors[0]
    assert index == 0
    return int(code), offset, detail


# -- the oracle -----------------------------------------------------------------------------------


def _synthetic(field: FieldDescriptor) -> bool:
    oneof = field.containing_oneof
    if oneof is None:
        return False
    proto = descriptor_pb2.DescriptorProto()
    field.containing_type.CopyToProto(proto)
    return any(f.proto3_optional for f in proto.field if f.name == field.name)


def _is_map(field: FieldDescriptor) -> bool:
    return (
        field.is_repeated and field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.GetOptions().map_entry
    )


def _json_value(message) -> str:
    return json.dumps(json_format.MessageToDict(message), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def value_of(value, field: FieldDescriptor, enums_as="dictionary", cut=None, level=1):
    """The Arrow (to_pylist) value of one runtime value of ``field`` in a message at ``level``."""
    if field.type == FieldDescriptor.TYPE_ENUM:
        if enums_as == "int32":
            return value
        known = field.enum_type.values_by_number.get(value)
        return known.name if known is not None else str(value)
    if field.type != FieldDescriptor.TYPE_MESSAGE:
        return value
    name = field.message_type.full_name
    if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        return value.seconds * 1_000_000_000 + value.nanos
    if name in _WRAPPERS:
        return value.value
    if name in _JSON:
        return _json_value(value)
    if cut is not None and level + 1 > cut:
        return value.SerializeToString()
    return row_of(value, enums_as, cut, level + 1)


def row_of(message, enums_as="dictionary", cut=None, level=1):
    """The Arrow row the mapping promises for a runtime ``message``."""
    out = {}
    desc = message.DESCRIPTOR
    last_member = {}
    for f in desc.fields:
        if f.containing_oneof is not None and not _synthetic(f):
            last_member[f.containing_oneof.name] = f.name
    for f in desc.fields:
        current = getattr(message, f.name)
        oneof = f.containing_oneof if f.containing_oneof is not None and not _synthetic(f) else None
        if _is_map(f):
            value_field = f.message_type.fields_by_number[2]
            key_field = f.message_type.fields_by_number[1]
            out[f.name] = [
                (value_of(k, key_field, enums_as, cut, level), value_of(v, value_field, enums_as, cut, level))
                for k, v in current.items()
            ]
        elif f.is_repeated:
            out[f.name] = [value_of(v, f, enums_as, cut, level) for v in current]
        elif oneof is not None:
            chosen = message.WhichOneof(oneof.name)
            out[f.name] = value_of(current, f, enums_as, cut, level) if chosen == f.name else None
            if last_member[oneof.name] == f.name:
                out[oneof.name + "_case"] = chosen
        elif f.has_presence and not message.HasField(f.name) and not f.has_default_value:
            out[f.name] = None
        else:
            out[f.name] = value_of(current, f, enums_as, cut, level)
    return out


def expected_rows(messages, schema: pa.Schema, **options):
    """The rows of runtime ``messages`` as Arrow would hold them in ``schema`` (converted by pyarrow)."""
    data = [None if m is None else row_of(m, **options) for m in messages]
    return pa.array(data, pa.struct(list(schema))).to_pylist()


def canonical(value, typ: pa.DataType):
    """A to_pylist value with map entries sorted by key (maps have no order to compare)."""
    if value is None:
        return None
    if isinstance(typ, pa.MapType):
        return sorted(((k, canonical(v, typ.item_type)) for k, v in value), key=lambda kv: repr(kv[0]))
    if pa.types.is_list(typ):
        return [canonical(v, typ.value_type) for v in value]
    if pa.types.is_struct(typ):
        return {f.name: canonical(value[f.name], f.type) for f in typ}
    return value


def canonical_rows(values, schema: pa.Schema):
    return [canonical(v, pa.struct(list(schema))) for v in values]
