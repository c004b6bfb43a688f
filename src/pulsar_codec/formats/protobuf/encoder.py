"""Arrow rows -> Protobuf payloads, byte for byte what the protobuf runtime writes.

Each row becomes a message of the writer's runtime class (built from its descriptor), serialized
with ``SerializeToString(deterministic=True)``: the bytes are the runtime's own for the same
values, by construction (map entries sorted by key, as deterministic serialization promises).
The columns are read back the way the decoder maps them (README, "Protobuf -> Arrow"):

- a struct column or a row's columns -> the message, by proto field name; columns the message
  does not name are an :class:`~pulsar_codec.errors.EncodeError` (a typo must not drop data),
  except the ``<oneof>_case`` columns the decoder adds, which pick the member to set when given;
- a null -> the field left unset (proto3 implicit-presence fields then read as their default);
- enum columns: dictionary or string names, the decimal text of an unknown number, or integers;
- ``timestamp`` -> ``google.protobuf.Timestamp``, ``duration`` -> ``google.protobuf.Duration``
  (any unit; nanoseconds exactly), wrapper types from their scalar, ``Struct`` / ``Value`` /
  ``ListValue`` from their JSON text, ``Any`` from ``{type_url, value}``, ``Empty`` from a struct;
- a binary column where the schema holds a message (what ``max_depth`` cuts) -> those bytes merged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
from google.protobuf import descriptor, json_format, message_factory

from ..._arrow import as_table_like
from ...errors import EncodeError
from .schema import ProtobufSchemaModel, parse

__all__ = ["ProtobufEncoder"]

_FD = descriptor.FieldDescriptor
_WRAPPERS = frozenset(
    f"google.protobuf.{n}Value"
    for n in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
)
_JSON_TYPES = frozenset(("google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"))
_NS = 1_000_000_000
_CASE_SUFFIX = "_case"


def _integral(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with timestamps and durations as int64 nanoseconds and dictionaries as their
    values, so ``to_pylist`` gives exact numbers (datetime would drop nanoseconds)."""
    if pa.types.is_timestamp(arrow_type) or pa.types.is_duration(arrow_type):
        return pa.int64()
    if pa.types.is_dictionary(arrow_type):
        return _integral(arrow_type.value_type)
    if pa.types.is_struct(arrow_type):
        return pa.struct([f.with_type(_integral(f.type)) for f in arrow_type])
    if pa.types.is_large_list(arrow_type):
        return pa.large_list(arrow_type.value_field.with_type(_integral(arrow_type.value_type)))
    if pa.types.is_list(arrow_type):
        return pa.list_(arrow_type.value_field.with_type(_integral(arrow_type.value_type)))
    if pa.types.is_map(arrow_type):
        return pa.map_(_integral(arrow_type.key_type), arrow_type.item_field.with_type(_integral(arrow_type.item_type)))
    return arrow_type


def _to_ns(array: pa.Array) -> pa.Array:
    """A timestamp or duration column as int64 nanoseconds (exact, any unit; overflow raises)."""
    as_ns = array.cast(pa.timestamp("ns") if pa.types.is_timestamp(array.type) else pa.duration("ns"))
    return as_ns.cast(pa.int64())


def _exact(array: pa.Array) -> pa.Array:
    """``array`` cast to :func:`_integral`'s type, timestamps and durations first brought to ns."""
    t = array.type
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return _to_ns(array)
    if pa.types.is_dictionary(t):
        return _exact(array.cast(t.value_type))
    if pa.types.is_struct(t):
        children = [_exact(array.field(i)) for i in range(t.num_fields)]
        fields = [f.with_type(c.type) for f, c in zip(t, children)]
        return pa.StructArray.from_arrays(children, fields=fields, mask=array.is_null() if array.null_count else None)
    target = _integral(t)
    return array if target == t else array.cast(target)


class ProtobufEncoder:
    """Encode Arrow rows (or one value) as Protobuf payloads of one message type.

    Parameters
    ----------
    model : ProtobufSchemaModel, or anything :func:`.schema.parse` reads
        The writer schema; its ``message`` (default: the file's first message) is the payload type.
    """

    def __init__(self, model: Any) -> None:
        self.model: ProtobufSchemaModel = parse(model)
        self.descriptor: descriptor.Descriptor = self.model.descriptor()
        self._classes: dict[str, Any] = {}

    def _class(self, desc: descriptor.Descriptor) -> Any:
        cls = self._classes.get(desc.full_name)
        if cls is None:
            cls = self._classes[desc.full_name] = message_factory.GetMessageClass(desc)
        return cls

    # -- batches ------------------------------------------------------------------------------

    def encode(self, batch: Any) -> pa.Array:
        """One payload per row of ``batch`` (a RecordBatch or Table): a binary array.

        A row is the message of its columns (one struct column of the message's shape is read as
        the message too). A null struct row is a null payload.

        Raises
        ------
        EncodeError
            A column the message does not name, or a value its field cannot hold (the message
            names the field path and the row).
        """
        data = as_table_like(batch)
        if isinstance(data, pa.Table):
            data = data.combine_chunks()
        if (
            data.num_columns == 1
            and pa.types.is_struct(data.schema.field(0).type)
            and not self._names_field(data.schema.names[0])
        ):
            column = data.column(0)
            rows = _exact(column if isinstance(column, pa.Array) else column.combine_chunks()).to_pylist()
        else:
            arrays = [_exact(c if isinstance(c, pa.Array) else c.combine_chunks()) for c in data.columns]
            struct = pa.StructArray.from_arrays(arrays, names=data.schema.names) if arrays else None
            rows = struct.to_pylist() if struct is not None else [{} for _ in range(data.num_rows)]
        out: list[bytes | None] = []
        for i, row in enumerate(rows):
            out.append(None if row is None else self._payload(row, i))
        return pa.array(out, pa.binary())

    def _names_field(self, name: str) -> bool:
        return name in self.descriptor.fields_by_name

    def encode_value(self, value: Any) -> bytes:
        """The payload of one message given as a dict (as the decoder's rows give it)."""
        if not isinstance(value, Mapping):
            raise EncodeError(f"a {self.descriptor.full_name} payload needs a dict, got {type(value).__name__}")
        return self._payload(value, 0)

    def _payload(self, row: Mapping[str, Any], index: int) -> bytes:
        msg = self._class(self.descriptor)()
        try:
            self._fill(msg, row, self.descriptor.full_name)
        except EncodeError as exc:
            raise EncodeError(f"row {index}: {exc}") from None
        except (TypeError, ValueError, OverflowError) as exc:
            raise EncodeError(f"row {index}: {exc}") from None
        data: bytes = msg.SerializeToString(deterministic=True)
        return data

    # -- one message --------------------------------------------------------------------------

    def _fill(self, msg: Any, row: Mapping[str, Any], path: str) -> None:
        desc = msg.DESCRIPTOR
        cases = {o.name + _CASE_SUFFIX: o for o in desc.oneofs if not _synthetic(o)}
        chosen: dict[str, str] = {}
        for name, value in row.items():
            if name in cases and name not in desc.fields_by_name:
                if value is not None:
                    chosen[cases[name].name] = value
                continue
            field = desc.fields_by_name.get(name)
            if field is None:
                raise EncodeError(f"{path} has no field {name!r}")
        for name, value in row.items():
            field = desc.fields_by_name.get(name)
            if field is None or value is None:
                continue
            oneof = field.containing_oneof
            if oneof is not None and not _synthetic(oneof) and oneof.name in chosen and chosen[oneof.name] != name:
                continue  # another member is the one set
            self._set(msg, field, value, f"{path}.{name}")

    def _set(self, msg: Any, field: descriptor.FieldDescriptor, value: Any, path: str) -> None:
        if _is_map(field):
            self._set_map(getattr(msg, field.name), field, value, path)
        elif _is_repeated(field):
            target = getattr(msg, field.name)
            if field.type == _FD.TYPE_MESSAGE:
                for item in value:
                    self._message(target.add(), field.message_type, item, f"{path}[]")
            else:
                target.extend(self._scalar(field, v, f"{path}[]") for v in value)
        elif field.type == _FD.TYPE_MESSAGE:
            self._message(getattr(msg, field.name), field.message_type, value, path)
        else:
            setattr(msg, field.name, self._scalar(field, value, path))

    def _set_map(self, target: Any, field: descriptor.FieldDescriptor, value: Any, path: str) -> None:
        key_field = field.message_type.fields_by_name["key"]
        value_field = field.message_type.fields_by_name["value"]
        items = value.items() if isinstance(value, Mapping) else value
        for k, v in items:
            key = self._scalar(key_field, k, f"{path}{{}}")
            if value_field.type == _FD.TYPE_MESSAGE:
                entry = target[key]  # the entry exists from here on, empty when the value is null
                if v is not None:
                    self._message(entry, value_field.message_type, v, f"{path}{{{key}}}")
            else:
                if v is None:
                    raise EncodeError(f"{path}{{{key}}}: a map value cannot be null")
                target[key] = self._scalar(value_field, v, f"{path}{{{key}}}")

    def _message(self, target: Any, desc: descriptor.Descriptor, value: Any, path: str) -> None:
        """Fill the sub-message ``target`` of type ``desc`` from its Arrow form."""
        name = desc.full_name
        if isinstance(value, (bytes, bytearray, memoryview)):  # a message cut at max_depth: its bytes
            target.MergeFromString(bytes(value))
            return
        if name == "google.protobuf.Timestamp" or name == "google.protobuf.Duration":
            if not isinstance(value, int):
                raise EncodeError(f"{path}: {name} needs a timestamp or duration value, got {type(value).__name__}")
            seconds, nanos = divmod(value, _NS)
            if name == "google.protobuf.Duration" and seconds < 0 and nanos:
                seconds, nanos = seconds + 1, nanos - _NS  # Duration: seconds and nanos share the sign
            target.seconds = seconds
            target.nanos = nanos
            return
        if name in _WRAPPERS:
            target.value = self._scalar(desc.fields_by_name["value"], value, path)
            return
        if name in _JSON_TYPES:
            if not isinstance(value, str):
                raise EncodeError(f"{path}: {name} needs its JSON text, got {type(value).__name__}")
            try:
                json_format.Parse(value, target)
            except json_format.ParseError as exc:
                raise EncodeError(f"{path}: {exc}") from None
            return
        if not isinstance(value, Mapping):
            raise EncodeError(f"{path}: message {name} needs a struct value, got {type(value).__name__}")
        target.SetInParent()
        self._fill(target, value, path)

    def _scalar(self, field: descriptor.FieldDescriptor, value: Any, path: str) -> Any:
        t = field.type
        if t == _FD.TYPE_ENUM:
            return _enum_number(field.enum_type, value, path)
        if t == _FD.TYPE_STRING:
            if not isinstance(value, str):
                raise EncodeError(f"{path}: a string field needs text, got {type(value).__name__}")
            return value
        if t == _FD.TYPE_BYTES:
            if isinstance(value, str):
                raise EncodeError(f"{path}: a bytes field needs binary, got text")
            return bytes(value)
        if t in (_FD.TYPE_FLOAT, _FD.TYPE_DOUBLE):
            return float(value)
        if t == _FD.TYPE_BOOL:
            if not isinstance(value, bool):
                raise EncodeError(f"{path}: a bool field needs a boolean, got {type(value).__name__}")
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise EncodeError(f"{path}: an integer field needs an integer, got {type(value).__name__}")
        return value


def _enum_number(enum: descriptor.EnumDescriptor, value: Any, path: str) -> int:
    if isinstance(value, bool):
        raise EncodeError(f"{path}: enum {enum.full_name} needs a name or number, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        found = enum.values_by_name.get(value)
        if found is not None:
            return int(found.number)
        try:
            return int(value)  # an unknown number the decoder kept as its decimal text
        except ValueError:
            pass
        names = ", ".join(enum.values_by_name)
        raise EncodeError(f"{path}: {value!r} is not a value of enum {enum.full_name} ({names})")
    raise EncodeError(f"{path}: enum {enum.full_name} needs a name or number, got {type(value).__name__}")


def _synthetic(oneof: descriptor.OneofDescriptor) -> bool:
    """A proto3 ``optional`` field's hidden one-member oneof (not a oneof of the schema)."""
    fields = oneof.fields
    return len(fields) == 1 and bool(getattr(fields[0], "has_presence", False)) and oneof.name == "_" + fields[0].name


def _is_repeated(field: descriptor.FieldDescriptor) -> bool:
    label = getattr(field, "is_repeated", None)
    if label is not None:
        return bool(label)
    return bool(field.label == _FD.LABEL_REPEATED)


def _is_map(field: descriptor.FieldDescriptor) -> bool:
    return field.type == _FD.TYPE_MESSAGE and _is_repeated(field) and field.message_type.GetOptions().map_entry
