"""Arrow rows -> Protobuf payloads, byte for byte what the protobuf runtime writes.

Two paths give the same bytes. A batch is first written column by column (:mod:`._columnar`:
numpy and Arrow compute, a fragment per field and row, no Python loop per row). What that path
does not settle (an input type it does not take, a value out of range, a null the runtime
refuses) takes the row path here: each row becomes a message of the writer's runtime class
(built from its descriptor), serialized with ``SerializeToString(deterministic=True)``, the
runtime's own bytes for the same values by construction (map entries in its deterministic
order), and the EncodeError naming the row when a value does not fit. Tests hold the columnar
path's bytes to the row path's. The columns are read the way the decoder maps them (README,
"Protobuf -> Arrow"):

- a struct column or a row's columns -> the message, by proto field name; columns the message
  does not name are an :class:`~pulsar_codec.errors.EncodeError` (a typo must not drop data),
  except the ``<oneof>_case`` columns the decoder adds, which pick the member to set when given
  (a case naming no member of its oneof, or two members set without a case, is an EncodeError);
- a null -> the field left unset (proto3 implicit-presence fields then read as their default);
- a row whose columns are all null -> a null payload (a tombstone) when one of them is a field
  the decoder never reads as null (implicit presence, repeated, map, proto2 ``required`` or with
  a ``[default = ...]``): only a decoded tombstone gives such a row. Where every column given is
  a field that reads null when unset, the row is the empty message (which decodes to that row);
- enum columns: dictionary or string names, the decimal text of an unknown number, or integers;
- integers outside the field's range (int32, uint64, ...) are an EncodeError naming the field;
- a column of an Arrow type its field can never hold (text for an integer, a number for a message,
  anything but binary for bytes) is one EncodeError naming the field, before any row;
- ``timestamp`` -> ``google.protobuf.Timestamp``, ``duration`` -> ``google.protobuf.Duration``
  (any unit, nanoseconds exactly, the whole range Protobuf allows: Timestamp years 1-9999,
  Duration +-10000 years; outside it an EncodeError), from a datetime / timedelta / integer
  nanoseconds too, wrapper types from their scalar, ``Struct`` / ``Value`` / ``ListValue`` from
  their JSON text, ``Any`` from ``{type_url, value}``, ``Empty`` from a struct;
- a binary column where the schema holds a message (what ``max_depth`` cuts) -> those bytes merged.
"""

from __future__ import annotations

import datetime
import decimal
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import descriptor, json_format, message_factory
from google.protobuf import message as pb_message

from ..._arrow import arrow_family, as_table_like
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
_UNIT_PER_S = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": _NS}
# the values Protobuf allows (timestamp.proto, duration.proto): Timestamp 0001-01-01T00:00:00Z to
# 9999-12-31T23:59:59.999999999Z, Duration +-315,576,000,000 s (10,000 years)
_TIMESTAMP_SECONDS = (-62_135_596_800, 253_402_300_799)
_DURATION_SECONDS = (-315_576_000_000, 315_576_000_000)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
# integer fields: (lowest, highest, name) by field type
_INT_RANGES = {
    **{t: (-(2**31), 2**31 - 1, "int32") for t in (_FD.TYPE_INT32, _FD.TYPE_SINT32, _FD.TYPE_SFIXED32)},
    **{t: (-(2**63), 2**63 - 1, "int64") for t in (_FD.TYPE_INT64, _FD.TYPE_SINT64, _FD.TYPE_SFIXED64)},
    **{t: (0, 2**32 - 1, "uint32") for t in (_FD.TYPE_UINT32, _FD.TYPE_FIXED32)},
    **{t: (0, 2**64 - 1, "uint64") for t in (_FD.TYPE_UINT64, _FD.TYPE_FIXED64)},
}
_ENUM_RANGE = (-(2**31), 2**31 - 1)
# how a field is set (worked out once per message type, see _Plan)
_MAP, _REPEATED_MESSAGE, _REPEATED, _MESSAGE, _SCALAR = range(5)


class _Plan:
    """What filling one message type needs, worked out once per type instead of once per value:
    each field's descriptor, how it is set and its real oneof (None for none or a proto3
    ``optional``'s hidden one), the ``<oneof>_case`` column names, and each real oneof's members."""

    __slots__ = ("fields", "cases", "oneofs")

    def __init__(self, desc: descriptor.Descriptor) -> None:
        real = [o for o in desc.oneofs if not _synthetic(o)]
        self.cases = {o.name + _CASE_SUFFIX: o for o in real if o.name + _CASE_SUFFIX not in desc.fields_by_name}
        self.oneofs = [(o.name, [f.name for f in o.fields]) for o in real]
        self.fields: dict[str, tuple[descriptor.FieldDescriptor, int, str | None]] = {}
        for f in desc.fields:
            oneof = f.containing_oneof
            self.fields[f.name] = (f, _kind(f), oneof.name if oneof is not None and not _synthetic(oneof) else None)


def _kind(field: descriptor.FieldDescriptor) -> int:
    if _is_map(field):
        return _MAP
    if _is_repeated(field):
        return _REPEATED_MESSAGE if field.type == _FD.TYPE_MESSAGE else _REPEATED
    return _MESSAGE if field.type == _FD.TYPE_MESSAGE else _SCALAR


def _seconds_nanos(array: pa.Array) -> pa.Array:
    """A timestamp or duration column as ``struct<seconds: int64, nanos: int32>``, the fields of
    ``google.protobuf.Timestamp`` / ``Duration``: exact for every unit and value (no cast to
    nanoseconds, which holds only the years 1677-2262). Duration's seconds and nanos share a sign."""
    per_s = _UNIT_PER_S[array.type.unit]
    values = np.asarray(array.cast(pa.int64()).fill_null(0).to_numpy(), dtype=np.int64)
    seconds = np.floor_divide(values, per_s)
    nanos = (values - seconds * per_s) * (_NS // per_s)
    if pa.types.is_duration(array.type):
        behind = (seconds < 0) & (nanos > 0)
        seconds = np.where(behind, seconds + 1, seconds)
        nanos = np.where(behind, nanos - _NS, nanos)
    return pa.StructArray.from_arrays(
        [pa.array(seconds, pa.int64()), pa.array(nanos, pa.int32())],
        names=["seconds", "nanos"],
        mask=array.is_null() if array.null_count else None,
    )


def _converted(t: pa.DataType) -> bool:
    """Whether :func:`_exact` changes arrays of type ``t`` (a timestamp, duration or dictionary in it)."""
    if pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_dictionary(t):
        return True
    return any(_converted(t.field(i).type) for i in range(t.num_fields))


def _rebased(array: pa.Array) -> tuple[pa.Array, int, int]:
    """(offsets counted from 0, first and end item) of a list or map array, slices applied
    (``from_arrays`` takes no sliced offsets with a validity mask)."""
    offsets = array.offsets
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    return pc.subtract(offsets, pa.scalar(start, offsets.type)), start, end


def _exact(array: pa.Array) -> pa.Array:
    """``array`` with timestamps and durations as their seconds and nanos (:func:`_seconds_nanos`),
    at any depth, and dictionaries as their values, so ``to_pylist`` gives exact numbers (datetime
    would drop nanoseconds and stop at year 9999)."""
    t = array.type
    if not _converted(t) or not len(array):
        return array
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return _seconds_nanos(array)
    if pa.types.is_dictionary(t):
        return _exact(array.cast(t.value_type))
    mask = array.is_null() if array.null_count else None
    if pa.types.is_struct(t):
        children = [_exact(array.field(i)) for i in range(t.num_fields)]
        fields = [f.with_type(c.type) for f, c in zip(t, children)]
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    if pa.types.is_map(t):
        offsets, start, end = _rebased(array)
        keys, items = _exact(array.keys.slice(start, end - start)), _exact(array.items.slice(start, end - start))
        map_type = pa.map_(t.key_field.with_type(keys.type), t.item_field.with_type(items.type))
        return pa.MapArray.from_arrays(offsets, keys, items, type=map_type, mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        offsets, start, end = _rebased(array)
        return type(array).from_arrays(offsets, _exact(array.values.slice(start, end - start)), mask=mask)
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        values = _exact(array.values.slice(array.offset * size, len(array) * size))
        return pa.FixedSizeListArray.from_arrays(values, size, mask=mask)
    return array


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
        self._plans: dict[str, _Plan] = {}
        # the fields the decoder never reads as null: a row of nulls with one of them is a tombstone
        self._never_null = frozenset(f.name for f in self.descriptor.fields if not _reads_null_when_unset(f))

    def _class(self, desc: descriptor.Descriptor) -> Any:
        cls = self._classes.get(desc.full_name)
        if cls is None:
            cls = self._classes[desc.full_name] = message_factory.GetMessageClass(desc)
        return cls

    # -- batches ------------------------------------------------------------------------------

    def encode(self, batch: Any) -> pa.Array:
        """One payload per row of ``batch`` (a RecordBatch or Table): a binary array.

        A row is the message of its columns (one struct column of the message's shape is read as
        the message too). A null struct row is a null payload, and so is a row whose columns are
        all null when one of them is a field the decoder never reads as null (a decoded tombstone).

        Raises
        ------
        EncodeError
            A column the message does not name, or a value its field cannot hold (the message
            names the field path and the row).
        """
        data, arrays, as_struct = self._columns_of(batch)
        names = (
            [data.schema.field(0).type.field(i).name for i in range(data.schema.field(0).type.num_fields)]
            if as_struct
            else data.schema.names
        )
        plan = self._plan(self.descriptor)
        extra = [name for name in names if name not in plan.fields and name not in plan.cases]
        if extra:  # the whole batch's shape, not one row's: no row index
            raise EncodeError(f"the batch has column(s) {extra} that {self.descriptor.full_name} has no field for")
        top = data.schema.field(0).type if as_struct else pa.struct(list(data.schema))
        _check_message_fit(self.descriptor, top, self.descriptor.full_name)
        if as_struct:
            column = arrays[0]
            fields = [(column.type.field(i).name, column.field(i)) for i in range(column.type.num_fields)]
            written = self._columnar(fields, len(column), column.is_valid() if column.null_count else None)
        else:
            tombstones = self._tombstones(data.schema.names, arrays)
            valid = None if tombstones is None else pa.array(~tombstones)
            written = self._columnar(list(zip(data.schema.names, arrays)), data.num_rows, valid)
        if written is not None:
            return written
        return self._by_rows(batch)

    def _columns_of(self, batch: Any) -> tuple[Any, list[pa.Array], bool]:
        """(the batch as a RecordBatch or one-chunk Table, its columns as arrays, whether its one
        struct column is the message)."""
        data = as_table_like(batch)
        if isinstance(data, pa.Table):
            data = data.combine_chunks()
        arrays = [c if isinstance(c, pa.Array) else c.combine_chunks() for c in data.columns]
        as_struct = (
            data.num_columns == 1
            and pa.types.is_struct(data.schema.field(0).type)
            and not self._names_field(data.schema.names[0])
        )
        return data, arrays, as_struct

    def _by_rows(self, batch: Any) -> pa.Array:
        """The row path: one runtime message per row, serialized. It takes what the columnar path
        leaves, and raises the EncodeError naming the row."""
        data, arrays, as_struct = self._columns_of(batch)
        try:
            if as_struct:
                rows = _exact(arrays[0]).to_pylist()
            else:
                exact = [_exact(a) for a in arrays]
                struct = pa.StructArray.from_arrays(exact, names=data.schema.names) if exact else None
                rows = struct.to_pylist() if struct is not None else [{} for _ in range(data.num_rows)]
        except pa.ArrowInvalid as exc:  # values Arrow itself refuses to read (a null map key)
            raise EncodeError(f"the batch's values cannot be read: {exc}") from None
        tombstones = None if as_struct else self._tombstones(data.schema.names, arrays)
        out: list[bytes | None] = []
        for i, row in enumerate(rows):
            null = row is None or (tombstones is not None and tombstones[i])
            out.append(None if null else self._payload(row, i))
        return pa.array(out, pa.binary())

    def _tombstones(self, names: list[str], arrays: list[pa.Array]) -> np.ndarray | None:
        """The rows whose columns (``names``, ``arrays``) are all null, when one of them is a field
        the decoder never reads as null: null payloads (None when there are none)."""
        if self._never_null.isdisjoint(names) or not all(a.null_count for a in arrays):
            return None
        rows = np.logical_and.reduce([np.asarray(_nulls(a).to_numpy(zero_copy_only=False), dtype=bool) for a in arrays])
        return rows if rows.any() else None

    def _columnar(self, columns: list[tuple[str, pa.Array]], length: int, valid: pa.Array | None) -> pa.Array | None:
        """The payloads written column by column (:mod:`._columnar`), null where ``valid`` is
        false; None when that path leaves the batch to the row path."""
        from . import _columnar  # imported here: it takes this module's tables and helpers

        try:
            return _columnar.encode_columns(self.descriptor, columns, length, valid).cast(pa.binary())
        except _columnar.Unsettled:
            return None

    def _plan(self, desc: descriptor.Descriptor) -> _Plan:
        plan = self._plans.get(desc.full_name)
        if plan is None:
            plan = self._plans[desc.full_name] = _Plan(desc)
        return plan

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
            raise EncodeError(f"row {index}: {exc}", index=index) from None
        except (TypeError, ValueError, OverflowError) as exc:
            raise EncodeError(f"row {index}: {exc}", index=index) from None
        try:
            data: bytes = msg.SerializeToString(deterministic=True)
        except pb_message.EncodeError as exc:  # the runtime's: a proto2 required field left unset
            raise EncodeError(f"row {index}: {exc}", index=index) from None
        return data

    # -- one message --------------------------------------------------------------------------

    def _fill(self, msg: Any, row: Mapping[str, Any], path: str) -> None:
        plan = self._plan(msg.DESCRIPTOR)
        fields = plan.fields
        chosen: dict[str, str] = {}
        for name, value in row.items():
            if name in fields:
                continue
            oneof = plan.cases.get(name)
            if oneof is None:
                raise EncodeError(f"{path} has no field {name!r}")
            if value is not None:
                if not isinstance(value, str) or value not in (f.name for f in oneof.fields):
                    listed = ", ".join(f.name for f in oneof.fields)
                    raise EncodeError(f"{path}.{name}: {value!r} names no member of oneof {oneof.name} ({listed})")
                chosen[oneof.name] = value
        for oneof_name, members in plan.oneofs:
            if oneof_name in chosen:
                continue
            given = [m for m in members if row.get(m) is not None]
            if len(given) > 1:  # one would win and the others be dropped without a word
                raise EncodeError(
                    f"{path}: members {given} of oneof {oneof_name} are all set; a message holds one "
                    f"(a {oneof_name}{_CASE_SUFFIX} column picks it)"
                )
        for name, value in row.items():
            if value is None:
                continue
            entry = fields.get(name)
            if entry is None:
                continue
            field, kind, oneof_name = entry
            if oneof_name is not None and oneof_name in chosen and chosen[oneof_name] != name:
                continue  # another member is the one set
            try:
                self._set_field(msg, field, kind, value, f"{path}.{name}")
            except EncodeError:
                raise
            except (TypeError, ValueError, OverflowError) as exc:  # the runtime's refusal: name the field
                raise EncodeError(f"{path}.{name}: {exc}") from None

    def _set_field(self, msg: Any, field: descriptor.FieldDescriptor, kind: int, value: Any, path: str) -> None:
        if kind == _SCALAR:
            setattr(msg, field.name, self._scalar(field, value, path))
        elif kind == _MESSAGE:
            self._message(getattr(msg, field.name), field.message_type, value, path)
        elif kind in (_REPEATED, _REPEATED_MESSAGE) and isinstance(value, (str, bytes, bytearray, Mapping)):
            # iterating text, bytes or a dict would write its characters, bytes or keys
            raise EncodeError(f"{path}: a repeated field needs a list, got {type(value).__name__}")
        elif kind == _REPEATED:
            getattr(msg, field.name).extend(self._scalar(field, v, f"{path}[]") for v in value)
        elif kind == _REPEATED_MESSAGE:
            target = getattr(msg, field.name)
            for item in value:
                self._message(target.add(), field.message_type, item, f"{path}[]")
        else:
            self._set_map(getattr(msg, field.name), field, value, path)

    def _set_map(self, target: Any, field: descriptor.FieldDescriptor, value: Any, path: str) -> None:
        key_field = field.message_type.fields_by_name["key"]
        value_field = field.message_type.fields_by_name["value"]
        if isinstance(value, (str, bytes, bytearray)):
            raise EncodeError(f"{path}: a map field needs a map, got {type(value).__name__}")
        items = value.items() if isinstance(value, Mapping) else [_map_entry(item, path) for item in value]
        for k, v in items:
            if isinstance(k, str) and key_field.type != _FD.TYPE_STRING:
                k = _key_from_text(key_field, k, path)
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
        # the well-known types the decoder maps to scalars first: a BytesValue's binary is its value
        if name == "google.protobuf.Timestamp" or name == "google.protobuf.Duration":
            target.seconds, target.nanos = _time_fields(name, value, path)
            return
        if name in _WRAPPERS:
            target.value = self._scalar(desc.fields_by_name["value"], value, path)
            return
        if isinstance(value, (bytes, bytearray, memoryview)):  # a message cut at max_depth: its bytes
            target.MergeFromString(bytes(value))
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
            # bytes() of anything else is no refusal: an int n would be n zero bytes, a list its items
            if not isinstance(value, (bytes, bytearray, memoryview)):
                shown = "text" if isinstance(value, str) else type(value).__name__
                raise EncodeError(f"{path}: a bytes field needs binary, got {shown}")
            return bytes(value)
        if t in (_FD.TYPE_FLOAT, _FD.TYPE_DOUBLE):
            if isinstance(value, (str, bytes, bytearray, bool)):  # float() would read "1.5" and True
                raise EncodeError(f"{path}: a floating-point field needs a number, got {type(value).__name__}")
            return float(value)
        if t == _FD.TYPE_BOOL:
            if not isinstance(value, bool):
                raise EncodeError(f"{path}: a bool field needs a boolean, got {type(value).__name__}")
            return value
        if isinstance(value, decimal.Decimal) and value.is_finite() and value == value.to_integral_value():
            value = int(value)  # Spark's form of a uint64 / fixed64 (decimal(20, 0)), read back
        if isinstance(value, bool) or not isinstance(value, int):
            shown = repr(value) if isinstance(value, decimal.Decimal) else type(value).__name__
            raise EncodeError(f"{path}: an integer field needs a whole number, got {shown}")
        low, high, word = _INT_RANGES.get(t, (value, value, ""))
        if not low <= value <= high:
            raise EncodeError(f"{path}: {value} is out of the {word} range")
        return value


# -- the batch's Arrow types against the fields, before any row ---------------------------------------


_ANY = frozenset({"null", "other"})
# the Arrow families whose values a field of each type can hold (the columnar path or the row path
# takes them); any other family fails on every row that holds a value, so a column of it is refused
# before the first row: a mistyped column is one error, even in an empty or all-null batch
_SCALAR_FITS: dict[int, frozenset[str]] = {
    **{t: _ANY | {"int", "decimal"} for t in _INT_RANGES},
    _FD.TYPE_FLOAT: _ANY | {"int", "float", "decimal"},
    _FD.TYPE_DOUBLE: _ANY | {"int", "float", "decimal"},
    _FD.TYPE_BOOL: _ANY | {"bool"},
    _FD.TYPE_STRING: _ANY | {"text"},
    _FD.TYPE_BYTES: _ANY | {"binary"},
    _FD.TYPE_ENUM: _ANY | {"int", "text"},
}
_TYPE_NAME = {getattr(_FD, n): n[5:].lower() for n in dir(_FD) if n.startswith("TYPE_")}  # TYPE_SINT32: sint32


def _refuse(t: pa.DataType, path: str, what: str) -> None:
    raise EncodeError(f"{path}: a column of Arrow type {t} cannot be written as {what}")


def _check_message_fit(desc: descriptor.Descriptor, t: pa.DataType, path: str) -> None:
    """Refuse struct fields ``desc`` has no field for and the field types of ``t`` (a struct) no value
    of which the field could hold (:func:`_check_field_fit`)."""
    plan = _Plan(desc)
    for i in range(t.num_fields):
        child = t.field(i)
        entry = plan.fields.get(child.name)
        if entry is None:
            if child.name in plan.cases:
                if arrow_family(child.type) not in _ANY | {"text"}:
                    _refuse(child.type, f"{path}.{child.name}", f"the name of a member of oneof {child.name[:-5]}")
                continue
            raise EncodeError(f"{path}: the struct has field {child.name!r} that {desc.full_name} has no field for")
        field, kind, _ = entry
        _check_field_fit(field, kind, child.type, f"{path}.{child.name}")


def _check_field_fit(field: descriptor.FieldDescriptor, kind: int, t: pa.DataType, path: str) -> None:
    family = arrow_family(t)
    if family in _ANY:
        return
    if kind == _MAP:
        if family not in ("map", "list", "struct"):  # a struct is read as a map of its field names
            _refuse(t, path, "a Protobuf map field")
        entry = field.message_type
        key, value = entry.fields_by_name["key"], entry.fields_by_name["value"]
        if family == "map":
            key_type, value_type = t.key_type, t.item_type
        elif family == "list" and pa.types.is_struct(t.value_type) and _key_value(t.value_type):
            key_type, value_type = t.value_type.field("key").type, t.value_type.field("value").type
        else:
            return
        key_fits = _SCALAR_FITS[key.type] | ({"text"} if key.type != _FD.TYPE_STRING else set())  # Spark's keys
        if arrow_family(key_type) not in key_fits:
            _refuse(key_type, f"{path}{{}}", f"a Protobuf {_TYPE_NAME[key.type]} map key")
        _check_field_fit(value, _kind(value), value_type, f"{path}{{}}")
    elif kind in (_REPEATED, _REPEATED_MESSAGE):
        if family != "list":
            _refuse(t, path, "a Protobuf repeated field")
        _check_single_fit(field, t.value_type, f"{path}[]")
    else:
        _check_single_fit(field, t, path)


def _key_value(t: pa.DataType) -> bool:
    return t.num_fields == 2 and {t.field(0).name, t.field(1).name} == {"key", "value"}


def _check_single_fit(field: descriptor.FieldDescriptor, t: pa.DataType, path: str) -> None:
    """One value of ``field`` (an element of a repeated one) from a column of type ``t``."""
    family = arrow_family(t)
    if family in _ANY:
        return
    if field.type != _FD.TYPE_MESSAGE:
        if family not in _SCALAR_FITS.get(field.type, {family}):
            _refuse(t, path, f"a Protobuf {_TYPE_NAME[field.type]} field")
        return
    desc = field.message_type
    name = desc.full_name
    if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        fits = _ANY | {"time", "int", "struct"}  # a struct: {seconds, nanos}
    elif name in _WRAPPERS:
        value = desc.fields_by_name["value"]
        fits = _SCALAR_FITS[value.type]
    elif name in _JSON_TYPES:
        fits = _ANY | {"text", "binary"}
    else:
        fits = _ANY | {"struct", "binary"}  # binary: the message's bytes (what max_depth cuts)
    if family not in fits:
        _refuse(t, path, f"Protobuf message {name}")
    if family == "struct" and name not in _JSON_TYPES and name not in _WRAPPERS:
        if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
            return
        _check_message_fit(desc, t.value_type if pa.types.is_dictionary(t) else t, path)


def _time_fields(name: str, value: Any, path: str) -> tuple[int, int]:
    """``(seconds, nanos)`` of a Timestamp or Duration from its Arrow form (``{seconds, nanos}``),
    integer nanoseconds, or a datetime / timedelta; outside what Protobuf allows is an EncodeError."""
    is_timestamp = name == "google.protobuf.Timestamp"
    if isinstance(value, Mapping) and set(value) <= {"seconds", "nanos"}:
        seconds, nanos = value.get("seconds") or 0, value.get("nanos") or 0
        if not (isinstance(seconds, int) and isinstance(nanos, int)) or not -_NS < nanos < _NS:
            raise EncodeError(f"{path}: {name} needs integer seconds and nanos below one second, got {value!r}")
        seconds, nanos = divmod(seconds * _NS + nanos, _NS)  # one form for the checks below
    else:
        if isinstance(value, datetime.datetime) and is_timestamp:
            exact = getattr(value, "value", None)  # a pandas Timestamp carries its nanoseconds
            aware = value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)
            value = exact if isinstance(exact, int) else aware - _EPOCH
        elif isinstance(value, datetime.timedelta) and not is_timestamp:
            exact = getattr(value, "value", None)
            value = exact if isinstance(exact, int) else value
        if isinstance(value, datetime.timedelta):
            value = ((value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds) * 1000
        if isinstance(value, bool) or not isinstance(value, int):
            want = "a timestamp" if is_timestamp else "a duration"
            raise EncodeError(f"{path}: {name} needs {want} value, got {type(value).__name__}")
        seconds, nanos = divmod(value, _NS)
    if not is_timestamp and seconds < 0 and nanos:
        seconds, nanos = seconds + 1, nanos - _NS  # Duration: seconds and nanos share the sign
    low, high = _TIMESTAMP_SECONDS if is_timestamp else _DURATION_SECONDS
    if not low <= seconds <= high:
        what = "the years 1-9999" if is_timestamp else "+-10000 years"
        raise EncodeError(f"{path}: {name} outside {what} (what Protobuf allows)")
    return seconds, nanos


def _map_entry(item: Any, path: str) -> tuple[Any, Any]:
    """One entry of a map given as a list: a (key, value) pair (an Arrow map's rows), or a
    ``{key, value}`` struct (the list<struct<key, value>> other tools write maps as)."""
    if isinstance(item, Mapping) and set(item) == {"key", "value"}:
        return item["key"], item["value"]
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return item[0], item[1]
    raise EncodeError(f"{path}: a map entry needs a key and a value, got {item!r}")


_INTEGER_TEXT = re.compile(r"-?[0-9]+")


def _key_from_text(key_field: descriptor.FieldDescriptor, text: str, path: str) -> Any:
    """An integer or bool map key from its text, the form Spark gives every map key
    (``map<string, T>``): decimal digits with an optional minus, ``true`` / ``false``."""
    if key_field.type == _FD.TYPE_BOOL:
        if text not in ("true", "false"):
            raise EncodeError(f"{path}{{}}: a bool map key needs true or false, got {text!r}")
        return text == "true"
    if not _INTEGER_TEXT.fullmatch(text):
        raise EncodeError(f"{path}{{}}: an integer map key needs its decimal digits, got {text!r}")
    return int(text)


def _enum_number(enum: descriptor.EnumDescriptor, value: Any, path: str) -> int:
    if isinstance(value, bool):
        raise EncodeError(f"{path}: enum {enum.full_name} needs a name or number, got a boolean")
    if isinstance(value, str):
        found = enum.values_by_name.get(value)
        if found is not None:
            return int(found.number)
        if _INTEGER_TEXT.fullmatch(value):  # an unknown number the decoder kept as its decimal text
            value = int(value)  # (int() alone would read " 1", "+1", "1_0" and other scripts' digits)
    if isinstance(value, int):
        if not _ENUM_RANGE[0] <= value <= _ENUM_RANGE[1]:
            raise EncodeError(f"{path}: {value} is out of the enum (int32) range")
        return value
    if isinstance(value, str):
        names = ", ".join(enum.values_by_name)
        raise EncodeError(f"{path}: {value!r} is not a value of enum {enum.full_name} ({names})")
    raise EncodeError(f"{path}: enum {enum.full_name} needs a name or number, got {type(value).__name__}")


def _nulls(array: pa.Array) -> pa.Array:
    """Where ``array`` is null, a dictionary's null values counted too."""
    return (array.dictionary_decode() if pa.types.is_dictionary(array.type) else array).is_null()


def _reads_null_when_unset(field: descriptor.FieldDescriptor) -> bool:
    """Whether the decoder reads ``field`` as null when a payload leaves it unset (README,
    "Protobuf -> Arrow"): a oneof member, or a field with presence and no ``[default = ...]``."""
    if _is_repeated(field) or field.is_required:
        return False
    oneof = field.containing_oneof
    if oneof is not None and not _synthetic(oneof):
        return True
    has_default = field.has_default_value and field.type not in (_FD.TYPE_MESSAGE, _FD.TYPE_GROUP)
    return bool(field.has_presence) and not has_default


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
