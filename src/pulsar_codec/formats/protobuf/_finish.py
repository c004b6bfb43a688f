"""What the Avro builders cannot give a Protobuf column, added after them: enum dictionaries and the
JSON text of ``google.protobuf.Struct`` / ``Value`` / ``ListValue`` values.

Both twins' batches pass through here, so it exists once. Enums: the kernel writes each enum's
number; :func:`finish_batch` turns an int32 column into a dictionary column in a few numpy
operations (the names in declaration order, then the decimal text of the unknown numbers the batch
holds, in ascending order). Struct values: the kernel checks their bytes against the Struct program
and keeps them; here each one is parsed by the Protobuf runtime and written as canonical JSON text.
:func:`row_shapes` gives :func:`~pulsar_codec._kernels.avro_py.decode_row` the same conversions, so a
value decoded alone equals its batch row.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
from google.protobuf import message as pb_message
from google.protobuf import struct_pb2

from ..._kernels.defs import K_LIST, K_STRUCT
from ..avro._pyvalues import RowShape
from ..avro._pyvalues import row_shapes as avro_row_shapes
from .mapping import EnumInfo, ProtobufLayout

__all__ = ["finish_batch", "json_text", "row_shapes"]

_CLASSES = {
    "google.protobuf.Struct": struct_pb2.Struct,
    "google.protobuf.Value": struct_pb2.Value,
    "google.protobuf.ListValue": struct_pb2.ListValue,
}
_NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def _value(v: Any) -> Any:
    """A ``google.protobuf.Value`` as the Python value of its JSON form."""
    kind = v.WhichOneof("kind")
    if kind is None or kind == "null_value":
        return None
    if kind == "number_value":
        x = v.number_value
        if math.isnan(x):
            return "NaN"
        return _NON_FINITE.get(x, x)
    if kind == "string_value":
        return v.string_value
    if kind == "bool_value":
        return v.bool_value
    if kind == "struct_value":
        return {k: _value(item) for k, item in v.struct_value.fields.items()}
    return [_value(item) for item in v.list_value.values]


def json_text(type_name: str, raw: bytes) -> str:
    """The canonical JSON text of one serialized Struct, Value or ListValue (keys sorted, compact)."""
    try:
        message = _CLASSES[type_name].FromString(raw)
    except pb_message.DecodeError as exc:  # the kernel checked these bytes already: a bug, never bad data
        raise AssertionError(f"Protobuf transcoder kept {type_name} bytes the runtime cannot parse: {exc}") from exc
    if type_name == "google.protobuf.Struct":
        value: Any = {k: _value(v) for k, v in message.fields.items()}
    elif type_name == "google.protobuf.ListValue":
        value = [_value(v) for v in message.values]
    else:
        value = _value(message)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _first_index(info: EnumInfo) -> tuple[np.ndarray, np.ndarray]:
    """The enum's distinct numbers, sorted, and the index of each one's first name."""
    first: dict[int, int] = {}
    for i, number in enumerate(info.numbers):
        first.setdefault(number, i)
    numbers = np.array(sorted(first), dtype=np.int64)
    return numbers, np.array([first[n] for n in numbers.tolist()], dtype=np.int32)


def _validity(array: pa.Array) -> np.ndarray | None:
    """The array's validity as bools (None: no nulls), from its bitmap: pyarrow.compute would cost the
    first batch its first-use set-up, most of a second."""
    bitmap = array.buffers()[0]
    if array.null_count == 0 or bitmap is None:
        return None
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return bits[array.offset : array.offset + len(array)].astype(bool)


def _numbers_and_validity(array: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """An int32 array's values (anything under a null) and its validity, read from its buffers."""
    n, offset = len(array), array.offset
    values = np.frombuffer(array.buffers()[1], dtype=np.int32, count=n + offset)[offset:]
    return values, _validity(array)


# enums whose numbers span at most this many values are looked up in a table (else by binary search)
_TABLE_SPAN = 1 << 16


def _enum_indices(values: np.ndarray, numbers: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each value's dictionary index (0 where unknown) and whether it is a known number."""
    lo, hi = int(numbers[0]), int(numbers[-1])
    if hi - lo < _TABLE_SPAN:
        table = np.full(hi - lo + 2, -1, dtype=np.int32)  # the last entry: every number outside lo..hi
        table[numbers - lo] = index
        at = values.astype(np.int64) - lo
        at[(at < 0) | (at > hi - lo)] = hi - lo + 1
        found = table[at]
        hit = found >= 0
        return np.maximum(found, 0), hit
    wide = values.astype(np.int64)
    at = np.minimum(np.searchsorted(numbers, wide), len(numbers) - 1)
    hit = numbers[at] == wide
    return np.where(hit, index[at], 0).astype(np.int32), hit


def _enum_column(array: pa.Array, info: EnumInfo) -> pa.Array:
    """Enum numbers -> dictionary<int32, string>; unknown numbers get their decimal text."""
    numbers, index = _first_index(info)
    values, valid = _numbers_and_validity(array)
    indices, hit = _enum_indices(values, numbers, index)
    unknown = ~hit if valid is None else ~hit & valid
    names = list(info.names)
    if unknown.any():
        extra = np.unique(values[unknown])
        indices[unknown] = len(names) + np.searchsorted(extra, values[unknown]).astype(np.int32)
        names += [str(n) for n in extra.tolist()]
    # from buffers, the array's own bitmap: pa.array(mask=) would set up pyarrow.compute on first use
    codes = pa.Array.from_buffers(pa.int32(), len(indices), [_bitmap(valid), pa.py_buffer(indices)])
    return pa.DictionaryArray.from_arrays(codes, pa.array(names, pa.string()), safe=False)


def _bitmap(valid: np.ndarray | None) -> pa.Buffer | None:
    return None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))


def _json_column(array: pa.Array, type_name: str) -> pa.Array:
    return pa.array([None if raw is None else json_text(type_name, raw) for raw in array.to_pylist()], pa.string())


def _finish(layout: ProtobufLayout, sid: int, array: pa.Array) -> pa.Array:
    """Slot ``sid``'s column with its enum and Struct descendants finished. The assembled arrays
    start at offset 0, so a parent is rebuilt on its own buffers around its finished children."""
    if sid not in layout.touched:
        return array
    if sid in layout.enums:
        return _enum_column(array, layout.enums[sid])
    if sid in layout.json_values:
        return _json_column(array, layout.json_values[sid])
    assert array.offset == 0
    slot = layout.avro.slots[sid]
    typ = layout.final_types[sid]
    n, nulls = len(array), array.null_count
    if slot.kind == K_STRUCT:
        children = [_finish(layout, c, array.field(i)) for i, c in enumerate(slot.children)]
        return pa.Array.from_buffers(typ, n, array.buffers()[:1], null_count=nulls, children=children)
    assert slot.kind == K_LIST
    child = slot.children[0]
    values = array.values
    if isinstance(typ, pa.MapType):
        entry = layout.avro.slots[child]
        keys = _finish(layout, entry.children[0], values.field(0))
        items = _finish(layout, entry.children[1], values.field(1))
        values = pa.StructArray.from_arrays([keys, items], fields=[typ.key_field, typ.item_field])
    else:
        values = _finish(layout, child, values)
    return pa.Array.from_buffers(typ, n, array.buffers()[:2], null_count=nulls, children=[values])


def finish_batch(layout: ProtobufLayout, batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` (as the Avro builders assembled it) with its enum and Struct columns finished."""
    if not layout.touched:
        return batch
    root = layout.avro.slots[0]
    columns = [_finish(layout, sid, batch.column(i)) for i, sid in enumerate(root.children)]
    return pa.RecordBatch.from_arrays(columns, schema=layout.arrow_schema)


def _enum_name(info: EnumInfo) -> Callable[[int], str]:
    names: dict[int, str] = {}
    for name, number in zip(info.names, info.numbers):
        names.setdefault(number, name)

    def convert(number: int) -> str:
        found = names.get(number)
        return str(number) if found is None else found

    return convert


def _scalar(typ: pa.DataType) -> Callable[[Any], Any]:
    def convert(v: Any) -> Any:
        return pa.scalar(v, typ).as_py()

    return convert


def _entries(items: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    return [(entry["key"], entry["value"]) for entry in items]


def row_shapes(layout: ProtobufLayout) -> list[RowShape]:
    """The Avro row shapes of the layout, with the Protobuf column types' conversions."""
    shapes = avro_row_shapes(layout.avro)
    for sid, slot in enumerate(layout.avro.slots):
        names, text, convert = shapes[sid]
        typ = layout.final_types[sid]
        if sid in layout.enums:
            convert = _enum_name(layout.enums[sid])
        elif sid in layout.json_values:
            type_name = layout.json_values[sid]

            def convert(raw: bytes, type_name: str = type_name) -> str:
                return json_text(type_name, raw)

        elif pa.types.is_uint32(typ) or pa.types.is_uint64(typ):
            mask = 0xFFFFFFFF if pa.types.is_uint32(typ) else 0xFFFFFFFFFFFFFFFF

            def convert(v: int, mask: int = mask) -> int:
                return v & mask

        elif pa.types.is_duration(typ):
            convert = _scalar(typ)
        elif slot.kind == K_LIST and isinstance(typ, pa.MapType):
            convert = _entries
        shapes[sid] = (names, text, convert)
    return shapes
