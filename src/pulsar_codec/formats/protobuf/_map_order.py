"""The order the protobuf runtime writes a map's entries in, for whole columns of entries.

Deterministic serialization sorts a map's entries, by an order that is the runtime's own
implementation detail: upb writes string keys by their bytes, a key that is a prefix of another
after it, and integer keys by falling unsigned 64-bit value. :func:`entry_order` sorts a column
of entries that way, and :func:`order_holds` asks the runtime once per key type whether it still
writes that order (where it does not, :mod:`._columnar` leaves such maps to the row path).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import descriptor, message_factory

from ._fragments import _binary, _offsets, _sized
from .encoder import _FD, _INT_RANGES

_ORDER_HOLDS: dict[int, bool] = {}
"""Per map key type (a FieldDescriptor type): whether the runtime writes entries in our order."""


def order_holds(field: descriptor.FieldDescriptor) -> bool:
    """Whether the runtime writes map ``field``'s entries in :func:`entry_order`'s order (asked
    once per key type; a runtime that cannot be asked: False, its own row path writes the maps)."""
    key_type = field.message_type.fields_by_name["key"].type
    known = _ORDER_HOLDS.get(key_type)
    if known is None:
        try:
            known = _runtime_order_is_ours(field)
        except Exception:  # noqa: BLE001 - see the docstring
            known = False
        _ORDER_HOLDS[key_type] = known
    return known


def _order_keys(key_field: descriptor.FieldDescriptor, keys: pa.Array) -> pa.Array:
    """A column that sorts ascending the way the runtime writes the map's entries: string / bytes
    keys by their bytes with a key that is a prefix of another after it (each byte b as 01 b, the
    end as 02), integer and bool keys by falling unsigned 64-bit value."""
    if key_field.type in (_FD.TYPE_STRING, _FD.TYPE_BYTES):
        binary = keys.cast(pa.large_binary())
        offsets = _offsets(binary)
        data = np.frombuffer(binary.buffers()[2], dtype=np.uint8) if binary.buffers()[2] is not None else None
        lengths = np.diff(offsets)
        out_offsets = _sized(2 * lengths + 1)
        out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
        out.fill(1)
        ends = out_offsets[1:] - 1
        out[ends] = 2
        if data is not None and len(data):
            spans = np.repeat(offsets[:-1], lengths) + _within(lengths)
            targets = np.repeat(out_offsets[:-1], lengths) + 2 * _within(lengths) + 1
            out[targets] = data[spans]
        return _binary(out_offsets, out)
    if key_field.type == _FD.TYPE_BOOL:
        raw = np.asarray(keys.to_numpy(zero_copy_only=False), dtype=np.uint64)
    else:
        values = keys.to_numpy(zero_copy_only=False)
        raw = values.astype(np.uint64) if values.dtype == np.uint64 else values.astype(np.int64).view(np.uint64)
    return pa.array(~raw, pa.uint64())


def _within(lengths: np.ndarray) -> np.ndarray:
    """0..n-1 for each run of ``lengths`` n, one after the other."""
    total = int(lengths.sum())
    starts = np.repeat(_sized(lengths)[:-1], lengths)
    within: np.ndarray = np.arange(total, dtype=np.int64) - starts
    return within


def entry_order(
    key_field: descriptor.FieldDescriptor, keys: pa.Array, rows: np.ndarray
) -> tuple[pa.Array | None, bool]:
    """(the permutation that puts each row's entries in the runtime's order, None when they are
    already so; whether a key repeats within a row, which the row path settles: the last value wins)."""
    if len(keys) < 2:
        return None, False
    table = pa.table({"row": rows, "key": _order_keys(key_field, keys)})
    order = pc.sort_indices(table, sort_keys=[("row", "ascending"), ("key", "ascending")])
    ordered = table.take(order)
    key = ordered.column("key").combine_chunks()
    row = ordered.column("row").to_numpy()
    same_row = row[1:] == row[:-1]
    if same_row.any():
        repeated = pc.equal(key.slice(1), key.slice(0, len(key) - 1)).to_numpy(zero_copy_only=False)
        if (same_row & repeated).any():
            return order, True
    return order, False


_PROBES: dict[int, list[Any]] = {
    _FD.TYPE_STRING: ["", "a", "ab", "abc", "b", "ba", "z", "\u00e9", "aa"],
    _FD.TYPE_BYTES: [b"", b"a", b"ab", b"\xff", b"b", b"\x00", b"a\x00"],
    _FD.TYPE_BOOL: [False, True],
}
_INT_PROBES = [0, 1, -1, 5, 127, 128, -128, 2**31 - 1, -(2**31)]


def _runtime_order_is_ours(field: descriptor.FieldDescriptor) -> bool:
    """Whether the runtime's deterministic serialization writes this map's entries in
    :func:`_order_keys`' order, tried on a spread of keys of its key type."""
    entry = field.message_type
    key_field, value_field = entry.fields_by_name["key"], entry.fields_by_name["value"]
    low, high, _ = _INT_RANGES.get(key_field.type, (0, 0, ""))
    probes = _PROBES.get(key_field.type) or [k for k in _INT_PROBES + [low, high] if low <= k <= high]
    probes = list(dict.fromkeys(probes))
    holder = message_factory.GetMessageClass(field.containing_type)()
    target = getattr(holder, field.name)
    for key in probes:
        if value_field.type == _FD.TYPE_MESSAGE:
            target[key].SetInParent()
        else:
            target[key] = _default_of(value_field)
    written = holder.SerializePartialToString(deterministic=True)  # its required fields unset
    entry_class = message_factory.GetMessageClass(entry)
    runtime_order = [entry_class.FromString(body).key for body in _entry_bodies(written)]
    key_type = pa.large_binary() if key_field.type == _FD.TYPE_BYTES else None
    if key_field.type == _FD.TYPE_STRING:
        key_type = pa.large_string()
    elif key_field.type == _FD.TYPE_BOOL:
        key_type = pa.bool_()
    elif key_type is None:
        key_type = pa.uint64() if key_field.type in (_FD.TYPE_UINT64, _FD.TYPE_FIXED64) else pa.int64()
    keys = pa.array(probes, key_type)
    order, _ = entry_order(key_field, keys, np.zeros(len(probes), dtype=np.int64))
    ours = keys.to_pylist() if order is None else keys.take(order).to_pylist()
    return bool(ours == runtime_order)


def _default_of(field: descriptor.FieldDescriptor) -> Any:
    kinds: dict[int, Callable[[], Any]] = {
        _FD.TYPE_STRING: str,
        _FD.TYPE_BYTES: bytes,
        _FD.TYPE_BOOL: bool,
        _FD.TYPE_FLOAT: float,
        _FD.TYPE_DOUBLE: float,
    }
    return kinds.get(field.type, int)()


def _entry_bodies(written: bytes) -> list[bytes]:
    """The bodies of the length-delimited fields of a message holding only one map field."""
    bodies = []
    at = 0
    while at < len(written):
        _, at = _read_varint(written, at)  # the tag
        size, at = _read_varint(written, at)
        bodies.append(written[at : at + size])
        at += size
    return bodies


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at
