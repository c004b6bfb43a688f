"""Arrow columns -> Protobuf payloads a field at a time, with numpy and Arrow compute.

The row path of :mod:`.encoder` fills one runtime message per row and serializes it. This path
writes the same bytes column by column: every field becomes one binary *fragment* per row (its
tag and value, empty where the field is not written), and a row's payload is its fragments joined
in field-number order, the order the runtime writes. Nested messages are the same recursion one
level down, prefixed with their length; repeated fields join their elements' fragments per row.

It settles only what it can write exactly as the runtime does. Anything else (an Arrow type it
does not take, a value out of its field's range, a null the row path refuses, two members of one
oneof, a repeated map key) raises :class:`Unsettled`, and the batch takes the row path, which
writes the runtime's bytes or raises the :class:`~pulsar_codec.errors.EncodeError` naming the
row. So this path never words an error of its own, and tests hold its bytes to the row path's.

Map entries are written in the order the runtime's deterministic serialization uses. That order
is an implementation detail of the runtime (upb writes string keys by their bytes, a key that is
a prefix of another after it, and integer keys by falling unsigned value), so it is checked
against the runtime once per key type (:mod:`._map_order`); where the runtime disagrees, such
maps take the row path. The fragments themselves are built in :mod:`._fragments`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import descriptor

from ._fragments import (
    _I32,
    _I64,
    _LEN,
    _VARINT,
    _concat,
    _fixed_fragments,
    _joined,
    _joined_present,
    _length_fragments,
    _lengths,
    _tag,
    _varint_fragments,
)
from ._map_order import entry_order, order_holds
from .encoder import (
    _CASE_SUFFIX,
    _DURATION_SECONDS,
    _ENUM_RANGE,
    _FD,
    _INT_RANGES,
    _INTEGER_TEXT,
    _JSON_TYPES,
    _NS,
    _TIMESTAMP_SECONDS,
    _UNIT_PER_S,
    _WRAPPERS,
    _is_map,
    _is_repeated,
    _synthetic,
)

__all__ = ["Unsettled", "encode_columns"]

_SIGNED_VARINT = frozenset((_FD.TYPE_INT32, _FD.TYPE_INT64, _FD.TYPE_ENUM))
_UNSIGNED_VARINT = frozenset((_FD.TYPE_UINT32, _FD.TYPE_UINT64))
_ZIGZAG = frozenset((_FD.TYPE_SINT32, _FD.TYPE_SINT64))
_FIXED = {
    _FD.TYPE_FIXED32: "<u4",
    _FD.TYPE_SFIXED32: "<i4",
    _FD.TYPE_FIXED64: "<u8",
    _FD.TYPE_SFIXED64: "<i8",
    _FD.TYPE_FLOAT: "<f4",
    _FD.TYPE_DOUBLE: "<f8",
}


class Unsettled(Exception):
    """A batch this path does not write exactly as the runtime would: the row path takes it."""


def encode_columns(
    desc: descriptor.Descriptor, columns: list[tuple[str, pa.Array]], length: int, valid: pa.Array | None = None
) -> pa.Array:
    """The payload of each of ``length`` rows whose fields are ``columns`` (name, array): a
    large_binary array, null where ``valid`` (a boolean array, the rows of a struct column) is
    false, else without nulls. Raises :class:`Unsettled` for what it does not write."""
    try:
        plain = [(name, _plain(array)) for name, array in _unique(columns)]
        if valid is None:
            return _Writer().bodies(desc, dict(plain), length)
        # only the rows written: a null row's children may hold anything
        kept = {name: array.filter(valid) for name, array in plain}
        bodies = _Writer().bodies(desc, kept, pc.sum(valid).as_py() or 0)
        at = np.maximum(np.cumsum(np.asarray(valid.to_numpy(zero_copy_only=False), dtype=bool)) - 1, 0)
        spread = bodies.take(pa.array(at)) if len(bodies) else pa.nulls(length, pa.large_binary())
        return pc.if_else(valid, spread, pa.scalar(None, pa.large_binary()))
    except (pa.ArrowException, OverflowError) as exc:  # a shape the compute functions refuse
        raise Unsettled(str(exc)) from None


def _plain_type(t: pa.DataType) -> pa.DataType:
    """``t`` with dictionaries as their value type and view types as large ones, at any depth."""
    if pa.types.is_dictionary(t):
        return _plain_type(t.value_type)
    if pa.types.is_string_view(t):
        return pa.large_string()
    if pa.types.is_binary_view(t):
        return pa.large_binary()
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_plain_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_plain_type(t.key_type)), t.item_field.with_type(_plain_type(t.item_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_plain_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_plain_type(t.value_type)))
    return t


def _plain(array: pa.Array) -> pa.Array:
    """``array`` cast once to :func:`_plain_type` when it holds a dictionary or a view type
    anywhere (the compute functions used here take neither everywhere; nulls among a
    dictionary's values then count as nulls)."""
    plain = _plain_type(array.type)
    return array if plain == array.type else array.cast(plain)


def _unique(columns: list[tuple[str, pa.Array]]) -> list[tuple[str, pa.Array]]:
    names = [name for name, _ in columns]
    if len(set(names)) != len(names):
        raise Unsettled("a column name repeats")
    return columns


# -- values ---------------------------------------------------------------------------------------


def _validity(array: pa.Array) -> np.ndarray | None:
    if array.null_count == 0:
        return None
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _undictionary(array: pa.Array) -> pa.Array:
    """``array`` in a form every check here reads right: a dictionary as its values (nulls among
    the dictionary's values then count as nulls), a view type as its large type."""
    t = array.type
    if pa.types.is_dictionary(t):
        return _undictionary(array.cast(t.value_type))
    if pa.types.is_string_view(t):
        return array.cast(pa.large_string())
    if pa.types.is_binary_view(t):
        return array.cast(pa.large_binary())
    return array


def _and(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    if b is None:
        return a
    both: np.ndarray = a & b
    return both


def _integers(field: descriptor.FieldDescriptor, array: pa.Array, valid: np.ndarray | None) -> np.ndarray:
    """The values of an integer column for an integer field, as int64 or uint64, checked
    against the field's range on the rows that hold a value."""
    if pa.types.is_decimal(array.type) and array.type.scale == 0:  # Spark's uint64: decimal(20, 0)
        unsigned_64 = field.type in (_FD.TYPE_UINT64, _FD.TYPE_FIXED64)
        array = array.cast(pa.uint64() if unsigned_64 else pa.int64())  # a value past the type: ArrowInvalid, Unsettled
    if not pa.types.is_integer(array.type):
        raise Unsettled(f"{array.type} for an integer field")
    values = array.fill_null(0).to_numpy(zero_copy_only=False)
    live = values if valid is None else values[valid]
    low, high, _ = _INT_RANGES[field.type] if field.type in _INT_RANGES else (*_ENUM_RANGE, "enum")
    if len(live) and (int(live.min()) < low or int(live.max()) > high):
        raise Unsettled("a value out of the field's range")
    if values.dtype == np.uint64 and high < 2**63:  # fits int64 after the range check
        values = values.astype(np.int64)
    wide: np.ndarray = values if values.dtype in (np.int64, np.uint64) else values.astype(np.int64)
    return wide


def _enum_numbers(field: descriptor.FieldDescriptor, array: pa.Array, valid: np.ndarray | None) -> np.ndarray:
    """Enum numbers (int64) from an integer column or names, as the row path reads them (a name,
    else the decimal text of a number kept by the decoder). A closed (proto2) enum takes only its
    own numbers: the runtime refuses others."""
    numbers = _enum_values(field, array, valid)
    if getattr(field.enum_type, "is_closed", False):
        live = numbers if valid is None else numbers[valid]
        if not np.isin(live, [v.number for v in field.enum_type.values]).all():
            raise Unsettled("a number a closed enum does not define")
    return numbers


def _enum_values(field: descriptor.FieldDescriptor, array: pa.Array, valid: np.ndarray | None) -> np.ndarray:
    if pa.types.is_integer(array.type):
        return _integers(field, array, valid)
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        raise Unsettled(f"{array.type} for an enum field")
    names = pc.unique(array.drop_null())
    numbers = []
    by_name = field.enum_type.values_by_name
    for name in names.to_pylist():
        found = by_name.get(name)
        if found is not None:
            numbers.append(int(found.number))
            continue
        if not _INTEGER_TEXT.fullmatch(name):  # the decimal text of a number, as the row path reads it
            raise Unsettled("an unknown enum name")
        number = int(name)
        if not _ENUM_RANGE[0] <= number <= _ENUM_RANGE[1]:
            raise Unsettled("an enum number out of range")
        numbers.append(number)
    if not numbers:
        return np.zeros(len(array), dtype=np.int64)
    at = pc.index_in(array, value_set=names).fill_null(0).to_numpy(zero_copy_only=False)
    looked_up: np.ndarray = np.asarray(numbers, dtype=np.int64)[at]
    return looked_up


def _floats(array: pa.Array) -> np.ndarray:
    t = array.type
    if not (pa.types.is_float32(t) or pa.types.is_float64(t) or pa.types.is_integer(t)):
        raise Unsettled(f"{t} for a floating-point field")
    values = array.fill_null(0).to_numpy(zero_copy_only=False)
    return np.asarray(values, dtype=np.float64)  # as float(value) reads it


def _scalar_fragments(
    field: descriptor.FieldDescriptor, array: pa.Array, number: int | None, implicit: bool
) -> pa.Array:
    """One fragment per element of a scalar column: the tag of ``number`` (None: no tag, a packed
    element) and the value; empty for a null, and with ``implicit`` presence for the default."""
    array = _undictionary(array)
    valid = _validity(array)
    t = field.type
    if t in (_FD.TYPE_STRING, _FD.TYPE_BYTES):
        text = pa.types.is_string(array.type) or pa.types.is_large_string(array.type)
        text = text or pa.types.is_string_view(array.type)
        binary = pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type)
        binary = binary or pa.types.is_binary_view(array.type) or pa.types.is_fixed_size_binary(array.type)
        if not (text if t == _FD.TYPE_STRING else binary):
            raise Unsettled(f"{array.type} for a {'string' if t == _FD.TYPE_STRING else 'bytes'} field")
        bodies = array.cast(pa.large_binary()).fill_null(b"")
        present = valid
        if implicit:
            present = _and(present, _lengths(bodies) > 0)
        if number is None:
            return _joined_present(bodies, present)
        return _length_fragments(_tag(number, _LEN), bodies, present)
    prefix_varint = b"" if number is None else _tag(number, _VARINT)
    if t == _FD.TYPE_BOOL:
        if not pa.types.is_boolean(array.type):
            raise Unsettled(f"{array.type} for a bool field")
        values = np.asarray(array.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint64)
        present = _and(valid, values != 0) if implicit else valid
        return _varint_fragments(prefix_varint, values, present)
    if t in _FIXED:
        dtype = _FIXED[t]
        if t in (_FD.TYPE_FLOAT, _FD.TYPE_DOUBLE):
            with np.errstate(over="ignore"):  # a double past float's range is written as inf, as the runtime does
                raw = _floats(array).astype(dtype)
            bits = raw.view(np.uint32 if dtype == "<f4" else np.uint64)
        else:
            raw = _integers(field, array, valid).astype(dtype)
            bits = raw
        present = _and(valid, bits != 0) if implicit else valid
        prefix = b"" if number is None else _tag(number, _I32 if raw.dtype.itemsize == 4 else _I64)
        return _fixed_fragments(prefix, raw, present)
    if t == _FD.TYPE_ENUM:
        ints = _enum_numbers(field, array, valid)
    elif t in _SIGNED_VARINT or t in _UNSIGNED_VARINT or t in _ZIGZAG:
        ints = _integers(field, array, valid)
    else:
        raise Unsettled(f"field type {t}")
    present = _and(valid, ints != 0) if implicit else valid
    if t in _ZIGZAG:
        signed = ints.astype(np.int64)
        encoded = ((signed << 1) ^ (signed >> 63)).view(np.uint64)
    else:  # negative int32 / int64 / enum values are written as their 64-bit two's complement
        encoded = ints.astype(np.int64).view(np.uint64) if ints.dtype == np.int64 else ints
    return _varint_fragments(prefix_varint, encoded, present)


# -- messages -------------------------------------------------------------------------------------


class _Writer:
    """One batch's recursion through its message types."""

    def bodies(self, desc: descriptor.Descriptor, columns: dict[str, pa.Array], length: int) -> pa.Array:
        """The serialized message of type ``desc`` for each of ``length`` rows (no tag, no length)."""
        fields = desc.fields_by_name
        oneofs = [o for o in desc.oneofs if not _synthetic(o)]
        cases = {o.name + _CASE_SUFFIX: o for o in oneofs if o.name + _CASE_SUFFIX not in fields}
        for name in columns:
            if name not in fields and name not in cases:
                raise Unsettled(f"{desc.full_name} has no field {name!r}")
        # a column of Arrow's null type holds no value: the field is absent, as in the row path
        columns = {name: _undictionary(a) for name, a in columns.items() if not pa.types.is_null(a.type)}
        chosen = self._oneof_presence(oneofs, cases, columns, length)
        fragments = []
        for field in sorted(desc.fields, key=lambda f: f.number):
            array = columns.get(field.name)
            if array is None:
                if _is_required(field):
                    raise Unsettled(f"required field {field.name} missing")
                continue
            if _is_required(field) and array.null_count:
                raise Unsettled(f"required field {field.name} has nulls")
            fragments.append(self._field(field, array, chosen.get(field.name)))
        return _concat(fragments, length)

    @staticmethod
    def _oneof_presence(
        oneofs: list[descriptor.OneofDescriptor],
        cases: dict[str, descriptor.OneofDescriptor],
        columns: dict[str, pa.Array],
        length: int,
    ) -> dict[str, np.ndarray]:
        """Per oneof member given as a column: the rows where it is the member written (its
        ``<oneof>_case`` column names it, or, without a case, it is the one member set)."""
        out: dict[str, np.ndarray] = {}
        for oneof in oneofs:
            members = [f.name for f in oneof.fields if f.name in columns]
            case_column = columns.get(oneof.name + _CASE_SUFFIX) if oneof.name + _CASE_SUFFIX in cases else None
            undecided: np.ndarray = np.ones(length, dtype=bool)
            if case_column is not None:
                case_column = _undictionary(case_column)
                if not (pa.types.is_string(case_column.type) or pa.types.is_large_string(case_column.type)):
                    raise Unsettled("a oneof case column that is not text")
                named = set(pc.unique(case_column.drop_null()).to_pylist())
                if not named <= {f.name for f in oneof.fields}:
                    raise Unsettled("a oneof case naming no member")
                undecided = np.asarray(case_column.is_null().to_numpy(zero_copy_only=False), dtype=bool)
            given = np.zeros(length, dtype=np.int64)
            for name in members:
                valid = _validity(columns[name])
                holds = np.ones(length, dtype=bool) if valid is None else valid
                given += holds & undecided
                if case_column is not None:
                    picked = pc.equal(case_column, name).fill_null(False).to_numpy(zero_copy_only=False)
                    out[name] = holds & (undecided | np.asarray(picked, dtype=bool))
            if (given > 1).any():
                raise Unsettled("two members of one oneof set without a case")
        return out

    def _field(self, field: descriptor.FieldDescriptor, array: pa.Array, chosen: np.ndarray | None) -> pa.Array:
        if _is_map(field):
            return self._map(field, array)
        if _is_repeated(field):
            return self._repeated(field, array)
        if field.type == _FD.TYPE_MESSAGE:
            return self._message_field(field, array, chosen)
        if chosen is not None:  # a oneof member: written on its rows only, whatever its value
            fragments = _scalar_fragments(field, array, field.number, implicit=False)
            return _joined_present(fragments, chosen)
        return _scalar_fragments(field, array, field.number, implicit=not field.has_presence)

    def _message_field(self, field: descriptor.FieldDescriptor, array: pa.Array, chosen: np.ndarray | None) -> pa.Array:
        present = _and(_validity(array), chosen)
        if present is None:
            bodies = self._message_bodies(field.message_type, array)
        elif not present.any():
            return pa.array([b""] * len(array), pa.large_binary())
        else:  # only the rows written: a null row's children may hold anything
            written = self._message_bodies(field.message_type, array.filter(pa.array(present)))
            at = np.maximum(np.cumsum(present) - 1, 0)
            bodies = written.take(pa.array(at))
        return _length_fragments(_tag(field.number, _LEN), bodies, present)

    def _message_bodies(self, desc: descriptor.Descriptor, array: pa.Array) -> pa.Array:
        """The body of each element of ``array`` as a message of type ``desc`` (null elements:
        whatever their children hold; the caller leaves them out)."""
        name = desc.full_name
        array = _undictionary(array)
        if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
            return self._time_bodies(desc, array)
        if name in _WRAPPERS:
            value = desc.fields_by_name["value"]
            return _scalar_fragments(
                value, array, value.number, implicit=True
            )  # a null: no value (rows left out above)
        if name in _JSON_TYPES or not pa.types.is_struct(array.type):
            raise Unsettled(f"{array.type} for message {name}")
        columns = {array.type.field(i).name: array.field(i) for i in range(array.type.num_fields)}
        if len(columns) != array.type.num_fields:
            raise Unsettled("a struct with a repeated field name")
        return self.bodies(desc, columns, len(array))

    def _time_bodies(self, desc: descriptor.Descriptor, array: pa.Array) -> pa.Array:
        """Timestamp / Duration bodies from an Arrow timestamp or duration column, or integer
        nanoseconds: seconds and nanos as the row path takes them (nanos in [0, 1s), Duration's
        sharing the sign)."""
        t = array.type
        if not (pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_integer(t)):
            raise Unsettled(f"{t} for {desc.full_name}")
        valid = _validity(array)
        per_s = _NS if pa.types.is_integer(t) else _UNIT_PER_S[t.unit]
        values = np.asarray(array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        seconds = np.floor_divide(values, per_s)
        nanos = (values - seconds * per_s) * (_NS // per_s)
        is_timestamp = desc.full_name == "google.protobuf.Timestamp"
        if not is_timestamp:
            behind = (seconds < 0) & (nanos > 0)
            seconds = np.where(behind, seconds + 1, seconds)
            nanos = np.where(behind, nanos - _NS, nanos)
        low, high = _TIMESTAMP_SECONDS if is_timestamp else _DURATION_SECONDS
        live = seconds if valid is None else seconds[valid]
        if len(live) and (int(live.min()) < low or int(live.max()) > high):
            raise Unsettled("a time outside what Protobuf allows")
        parts = [
            _varint_fragments(_tag(1, _VARINT), seconds.view(np.uint64), seconds != 0),
            _varint_fragments(_tag(2, _VARINT), nanos.astype(np.int64).view(np.uint64), nanos != 0),
        ]
        return _concat(parts, len(array))

    def _elements(self, array: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(per-row counts, the [start, end) of the rows' items in the child, which child items
        belong to a non-null row) of a list or map column."""
        offsets = np.asarray(array.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
        counts = np.diff(offsets)
        valid = _validity(array)
        if valid is not None:
            counts = np.where(valid, counts, 0)
        return counts, offsets, np.repeat(valid if valid is not None else np.ones(len(array), bool), np.diff(offsets))

    def _child(self, child: pa.Array, offsets: np.ndarray, keep: np.ndarray) -> pa.Array:
        items = _undictionary(child.slice(int(offsets[0]), int(offsets[-1] - offsets[0])))
        return items if keep.all() else items.filter(pa.array(keep))

    def _repeated(self, field: descriptor.FieldDescriptor, array: pa.Array) -> pa.Array:
        t = array.type
        if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
            raise Unsettled(f"{t} for a repeated field")
        counts, offsets, keep = self._elements(array)
        items = self._child(array.values, offsets, keep)
        if items.null_count:
            raise Unsettled("a null item in a repeated field")
        if field.type == _FD.TYPE_MESSAGE:
            bodies = self._message_bodies(field.message_type, items)
            return _joined(_length_fragments(_tag(field.number, _LEN), bodies, None), counts)
        if field.is_packed:
            values = _scalar_fragments(field, items, None, implicit=False)
            bodies = _joined(values, counts)
            return _length_fragments(_tag(field.number, _LEN), bodies, counts > 0)
        return _joined(_scalar_fragments(field, items, field.number, implicit=False), counts)

    def _map(self, field: descriptor.FieldDescriptor, array: pa.Array) -> pa.Array:
        t = array.type
        if pa.types.is_map(t):
            key_child, value_child = array.keys, array.items
        elif _entry_list(t):  # list<struct<key, value>>: how Parquet from other tools holds a map
            key_child, value_child = array.values.field("key"), array.values.field("value")
        else:
            raise Unsettled(f"{t} for a map field")
        entry = field.message_type
        key_field, value_field = entry.fields_by_name["key"], entry.fields_by_name["value"]
        if not order_holds(field):
            raise Unsettled("the runtime orders this map's keys another way")
        counts, offsets, keep = self._elements(array)
        if not pa.types.is_map(t) and self._child(array.values, offsets, keep).null_count:
            raise Unsettled("a null entry in a list of map entries")
        keys = _keys_as_typed(key_field, _undictionary(self._child(key_child, offsets, keep)))
        values = self._child(value_child, offsets, keep)
        if values.null_count or keys.null_count:  # a null key: only a dictionary's null value makes one
            raise Unsettled("a null map value or key")
        rows = np.repeat(np.arange(len(array), dtype=np.int64), counts)
        order, repeated = entry_order(key_field, keys, rows)
        if repeated:
            raise Unsettled("a key repeated within one map")
        if order is not None:
            keys, values = keys.take(order), values.take(order)
        key_part = _scalar_fragments(key_field, keys, 1, implicit=False)
        if value_field.type == _FD.TYPE_MESSAGE:
            value_bodies = self._message_bodies(value_field.message_type, values)
            value_part = _length_fragments(_tag(2, _LEN), value_bodies, None)
        else:
            value_part = _scalar_fragments(value_field, values, 2, implicit=False)
        entries = _length_fragments(_tag(field.number, _LEN), _concat([key_part, value_part], len(keys)), None)
        return _joined(entries, counts)


def _entry_list(t: pa.DataType) -> bool:
    """Whether ``t`` is a list of ``{key, value}`` structs (a map as a list of its entries)."""
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or not pa.types.is_struct(t.value_type):
        return False
    entry = t.value_type
    return entry.num_fields == 2 and {entry.field(0).name, entry.field(1).name} == {"key", "value"}


def _keys_as_typed(key_field: descriptor.FieldDescriptor, keys: pa.Array) -> pa.Array:
    """Integer and bool map keys given as text (Spark gives every map key as a string) as the
    row path reads them: decimal digits with an optional minus, ``true`` / ``false``."""
    text = pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type)
    if not text or key_field.type == _FD.TYPE_STRING:
        return keys
    if key_field.type == _FD.TYPE_BOOL:
        if not pc.all(pc.is_in(keys, value_set=pa.array(["true", "false"]))).as_py() and len(keys):
            raise Unsettled("a bool map key that is not true or false")
        return pc.equal(keys, "true")
    if len(keys) and not pc.all(pc.match_substring_regex(keys, r"^-?[0-9]+$")).as_py():
        raise Unsettled("an integer map key that is not decimal digits")
    unsigned = key_field.type in (_FD.TYPE_UINT64, _FD.TYPE_FIXED64)
    return keys.cast(pa.uint64() if unsigned else pa.int64())  # past the type: ArrowInvalid, Unsettled


def _is_required(field: descriptor.FieldDescriptor) -> bool:
    required = getattr(field, "is_required", None)
    if required is not None:
        return bool(required)
    return bool(field.label == _FD.LABEL_REQUIRED)
