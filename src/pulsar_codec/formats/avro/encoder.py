"""Arrow rows -> schemaless Avro bodies (the reverse of :class:`pulsar_codec.avro.Decoder`).

Two paths, same bytes:

- the columnar path (the common one): the writer schema is bound to the batch's Arrow arrays as a
  flat program of nodes (validity, values, offsets, enum tables; timestamps, dates and times are
  rescaled to the Avro unit with numpy, floor division) and an encode kernel
  (``_avro_encode_c`` / ``_avro_encode_py``, the usual twins) writes every body into one buffer;
- the row path, for Arrow/Avro pairings the binding does not cover (general unions, durations,
  decimal256 or decimals of another scale, map keys that are not strings, uint64, float16, struct
  fields missing from the batch, int/float mismatches the row writer rejects): one closure per
  schema node over ``to_pylist`` values. Logical types are converted back to their Avro
  representation, dictionary (enum) values are written as symbol indexes, and a value for a union
  is written with the first branch whose type accepts it.

When the kernel stops at a bad value, the row writer is run on that row alone, so the
:class:`~pulsar_codec.errors.EncodeError` text is the same on both paths.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from ..._arrow import as_table_like
from ..._kernels import _backend
from ...errors import EncodeError
from ._rows import row_writer
from ._uuid import uuid_bytes
from .from_arrow import schema_for, schema_from_arrow
from .schema import Array, Enum, Field, Fixed, Map, Primitive, Record, Schema, Union, parse

__all__ = ["Encoder", "schema_from_arrow", "schema_for"]

# -- columnar path: bind the schema to a batch's arrays ------------------------------------------------


class _Unbindable(Exception):
    """Internal: this Arrow/Avro pairing takes the row path."""


_UNIT_PER_S = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
_AVRO_UNIT = {"millis": 1000, "micros": 1_000_000, "nanos": 1_000_000_000}
_SIGNED_OK = (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32())


def _validity(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=np.uint8)


def _fixed(arr: pa.Array, dtype: Any) -> np.ndarray:
    """The value buffer of a fixed-width array, offset applied (null slots hold whatever is there)."""
    buf = arr.buffers()[1]
    n = len(arr)
    if buf is None or n == 0:
        return np.zeros(n, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=arr.offset + n)[arr.offset :]


def _bits(arr: pa.Array) -> np.ndarray:
    buf = arr.buffers()[1]
    n = len(arr)
    if buf is None or n == 0:
        return np.zeros(n, dtype=np.uint8)
    return np.unpackbits(np.frombuffer(buf, dtype=np.uint8), bitorder="little")[arr.offset : arr.offset + n]


def _ints(arr: pa.Array) -> np.ndarray:
    return _fixed(arr, arr.type.to_pandas_dtype()).astype(np.int64)


def _binary(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(data bytes, int64 offsets n + 1 into them) of a binary/string array."""
    t = arr.type
    if pa.types.is_binary_view(t) or pa.types.is_string_view(t):
        arr = arr.cast(pa.large_binary())
        t = arr.type
    large = pa.types.is_large_binary(t) or pa.types.is_large_string(t)
    bufs = arr.buffers()
    n = len(arr)
    if bufs[1] is None:
        return np.zeros(1, dtype=np.uint8), np.zeros(n + 1, dtype=np.int64)
    offs = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32, count=arr.offset + n + 1)[arr.offset :]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None and bufs[2].size else np.zeros(1, np.uint8)
    return data, offs.astype(np.int64)


def _rescale(values: np.ndarray, src_per_s: int, dst_per_s: int, path: str) -> np.ndarray:
    if dst_per_s >= src_per_s:
        factor = dst_per_s // src_per_s
        limit = np.iinfo(np.int64).max // factor
        if factor > 1 and len(values) and (values.max() > limit or values.min() < -limit):
            raise _Unbindable(path)  # int64 would wrap silently: the row path checks each value
        scaled: np.ndarray = values * factor
        return scaled
    floored: np.ndarray = np.floor_divide(values, src_per_s // dst_per_s)
    return floored


def _is_int(t: pa.DataType) -> bool:
    return any(t == k for k in _SIGNED_OK)


class _Binder:
    """Builds the node list of the encode kernels for one batch (see ``_avro_encode_py``)."""

    def __init__(self, k: Any) -> None:
        self.k = k
        self.nodes: list[tuple[Any, ...] | None] = []  # None: taken, filled once its children are built
        self.kids: list[int] = []
        self.paths: list[str] = []
        self.capacity = 0

    def node(
        self,
        code: int,
        path: str,
        valid: Any = None,
        data: Any = None,
        offs: Any = None,
        table: Any = None,
        arg: int = 0,
        arg2: int = 0,
        children: Any = (),
    ) -> int:
        idx = len(self.nodes)
        self.nodes.append(None)
        self.paths.append(path)
        kids = [c() for c in children]  # children are built after their parent's slot is taken
        first = len(self.kids)
        self.kids.extend(kids)
        self.nodes[idx] = (code, first, len(kids), arg, arg2, valid, data, offs, table)
        return idx

    def bind(self, node: Schema, arr: pa.Array, path: str, strict: bool = False, own_valid: bool = True) -> int:  # noqa: C901
        k = self.k
        t = arr.type
        valid = _validity(arr) if own_valid else None
        if isinstance(node, Union):
            if len(node.branches) != 2 or node.null_index is None:
                raise _Unbindable(path)
            vb = 1 - node.null_index
            inner = node.branches[vb]
            return self.node(
                k.E_OPTION,
                path,
                valid=valid,
                arg=node.null_index,
                arg2=vb,
                children=[lambda: self.bind(inner, arr, f"{path}[{vb}]", strict=True, own_valid=False)],
            )
        if node.type == "null":
            return self.node(k.E_NULL, path, valid=valid)
        if isinstance(node, Record):
            if not pa.types.is_struct(t):
                raise _Unbindable(path)
            names = [t.field(i).name for i in range(t.num_fields)]
            wanted = {f.name for f in node.fields}
            if any(f.name not in names for f in node.fields) or (strict and any(n not in wanted for n in names)):
                raise _Unbindable(path)
            return self.node(
                k.E_RECORD,
                path,
                valid=valid,
                children=[lambda f=f: self.bind(f.type, arr.field(f.name), f"{path}.{f.name}") for f in node.fields],
            )
        if isinstance(node, Enum):
            if pa.types.is_string(t) or pa.types.is_large_string(t):
                arr = arr.dictionary_encode()
                t = arr.type
            if not pa.types.is_dictionary(t) or not (
                pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)
            ):
                raise _Unbindable(path)
            if not _is_int(t.index_type):
                raise _Unbindable(path)
            index = {s: i for i, s in enumerate(node.symbols)}
            table = np.array([index.get(s, -1) for s in arr.dictionary.to_pylist()] or [-1], dtype=np.int32)
            return self.node(k.E_ENUM, path, valid=valid, data=_ints(arr.indices), table=table)
        if isinstance(node, Array):
            if pa.types.is_list(t) or pa.types.is_large_list(t):
                offs = arr.offsets.to_numpy().astype(np.int64)
            elif pa.types.is_fixed_size_list(t):
                size = t.list_size
                offs = (np.arange(len(arr) + 1, dtype=np.int64) + arr.offset) * size
            else:
                raise _Unbindable(path)
            values = arr.values
            return self.node(
                k.E_ARRAY, path, valid=valid, offs=offs, children=[lambda: self.bind(node.items, values, f"{path}[]")]
            )
        if isinstance(node, Map):
            if not pa.types.is_map(t) or not (pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)):
                raise _Unbindable(path)
            offs = arr.offsets.to_numpy().astype(np.int64)
            entries = arr.values
            keys, items = entries.field(0), entries.field(1)

            def key_node() -> int:
                data, koffs = _binary(keys)
                self.capacity += int(koffs[-1] - koffs[0]) if len(koffs) else 0
                return self.node(k.E_BYTES, f"{path}{{key}}", valid=_validity(keys), data=data, offs=koffs)

            return self.node(
                k.E_MAP,
                path,
                valid=valid,
                offs=offs,
                children=[key_node, lambda: self.bind(node.values, items, f"{path}{{}}")],
            )
        if isinstance(node, Fixed):
            if node.logical == "decimal":
                if not pa.types.is_decimal128(t) or t.scale != node.scale:
                    raise _Unbindable(path)
                return self.node(
                    k.E_DEC_FIXED, path, valid=valid, data=_fixed(arr, "V16").view(np.uint8), arg=node.size
                )
            if node.logical == "uuid" and (pa.types.is_string(t) or pa.types.is_large_string(t)):
                raw = uuid_bytes(arr)
                if raw is None:  # a value not in the canonical form: the row writer says which
                    raise _Unbindable(path)
                self.capacity += len(arr) * 16
                return self.node(k.E_FIXED, path, valid=valid, data=raw, arg=16, arg2=16)
            if node.logical not in (None, "uuid") or not pa.types.is_fixed_size_binary(t):
                raise _Unbindable(path)
            w = t.byte_width
            buf = arr.buffers()[1]
            data = (
                np.frombuffer(buf, dtype=np.uint8)[arr.offset * w : (arr.offset + len(arr)) * w]
                if buf is not None and w
                else np.zeros(1, np.uint8)
            )
            self.capacity += len(arr) * w
            return self.node(k.E_FIXED, path, valid=valid, data=data, arg=node.size, arg2=w)
        assert isinstance(node, Primitive)
        nt, lt = node.type, node.logical
        if lt == "decimal":
            if not pa.types.is_decimal128(t) or t.scale != node.scale:
                raise _Unbindable(path)
            return self.node(k.E_DEC_BYTES, path, valid=valid, data=_fixed(arr, "V16").view(np.uint8))
        if lt == "date" or lt in ("time-millis", "time-micros") or (lt and "timestamp" in lt):
            # date and time-millis annotate an Avro int: E_INT range-checks their values
            code = k.E_INT if nt == "int" else k.E_LONG
            if _is_int(t) and not strict:  # the row writer takes plain integers as they are
                return self.node(code, path, valid=valid, data=_ints(arr))
            if lt == "date":
                if pa.types.is_date32(t):
                    return self.node(code, path, valid=valid, data=_fixed(arr, np.int32).astype(np.int64))
                if pa.types.is_date64(t):
                    return self.node(code, path, valid=valid, data=np.floor_divide(_fixed(arr, np.int64), 86_400_000))
                raise _Unbindable(path)
            if lt.startswith("time-"):
                if not (pa.types.is_time32(t) or pa.types.is_time64(t)):
                    raise _Unbindable(path)
                src = _fixed(arr, np.int32 if pa.types.is_time32(t) else np.int64).astype(np.int64)
                dst = 1000 if lt == "time-millis" else 1_000_000
                return self.node(code, path, valid=valid, data=_rescale(src, _UNIT_PER_S[t.unit], dst, path))
            if not pa.types.is_timestamp(t):
                raise _Unbindable(path)
            dst = _AVRO_UNIT[lt.rsplit("-", 1)[1]]
            return self.node(
                k.E_LONG, path, valid=valid, data=_rescale(_fixed(arr, np.int64), _UNIT_PER_S[t.unit], dst, path)
            )
        if nt == "boolean":
            if not pa.types.is_boolean(t):
                raise _Unbindable(path)
            return self.node(k.E_BOOL, path, valid=valid, data=_bits(arr))
        if nt in ("int", "long"):
            if not _is_int(t):
                raise _Unbindable(path)
            return self.node(k.E_INT if nt == "int" else k.E_LONG, path, valid=valid, data=_ints(arr))
        if nt in ("float", "double"):
            if pa.types.is_float32(t) or pa.types.is_float64(t):
                data = _fixed(arr, np.float32 if pa.types.is_float32(t) else np.float64).astype(np.float64)
            elif _is_int(t):
                data = _ints(arr).astype(np.float64)
            else:
                raise _Unbindable(path)
            return self.node(k.E_FLOAT if nt == "float" else k.E_DOUBLE, path, valid=valid, data=data)
        if nt == "string":
            if pa.types.is_dictionary(t) and (
                pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)
            ):
                arr = arr.dictionary_decode()
                t = arr.type
            if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)):
                raise _Unbindable(path)
        elif nt == "bytes":
            if not (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)):
                raise _Unbindable(path)
        else:  # pragma: no cover - parse() only produces the types above
            raise _Unbindable(path)
        data, offs = _binary(arr)
        self.capacity += int(offs[-1] - offs[0]) if len(offs) else 0
        return self.node(k.E_BYTES, path, valid=valid, data=data, offs=offs)


_GENERIC = {
    1: "null is not allowed here",
    2: "expected null",
    3: "value out of the Avro int range",
    4: "value out of the float range",
    5: "fixed size differs from the Arrow width",
    6: "not a symbol of the enum",
    7: "decimal does not fit the fixed size",
}


# -- Arrow schema -> Avro schema ----------------------------------------------------------------------


class Encoder:
    """Encode Arrow rows as schemaless Avro bodies.

    Parameters
    ----------
    schema : str, dict, list or Schema
        The writer schema. For a record schema, columns are matched to fields by name (a column
        without a field is an error, not dropped); for any other schema the batch must have one
        column (named ``value`` by the decoder).
    """

    def __init__(self, schema: Any) -> None:
        self.schema = parse(schema)
        self._write = row_writer(
            self.schema, self.schema.fullname if hasattr(self.schema, "fullname") else self.schema.type
        )

    def encode(self, batch_or_table: Any) -> pa.Array:
        """Encode every row. A row whose columns are all null, where the schema cannot hold that
        (a null message as the decoder returns it), becomes a null body.

        Returns
        -------
        pa.BinaryArray

        Raises
        ------
        EncodeError
            A value that does not fit the schema (the message names the field path and the row).
        """
        data = as_table_like(batch_or_table)
        if isinstance(data, pa.Table):
            data = data.combine_chunks()
        is_record = isinstance(self.schema, Record)
        if is_record:
            names = [f.name for f in self._fields]
            missing = [n for n in names if n not in data.schema.names]
            if missing:
                raise EncodeError(f"the batch has no column for field(s) {missing}")
            extra = [n for n in data.schema.names if n not in names]
            if extra:  # their values would be lost without a word
                raise EncodeError(
                    f"the batch has column(s) {extra} that {self._top} has no field for; select the "
                    f"schema's fields {names} first"
                )
            cols = [_array(data.column(n)) for n in names]
        else:
            if data.num_columns != 1:
                raise EncodeError("a non-record schema needs a batch with exactly one column")
            cols = [_array(data.column(0))]
        n = data.num_rows
        null_rows = None
        if cols and any(c.null_count for c in cols):
            null_rows = np.logical_and.reduce([np.asarray(c.is_null().to_numpy(zero_copy_only=False)) for c in cols])
        # an all-null row that the schema cannot hold is a null message (a tombstone)
        all_null_ok = all(_admits_null(f.type) for f in self._fields) if is_record else _admits_null(self.schema)
        skip = None if (null_rows is None or all_null_ok or not null_rows.any()) else null_rows
        try:
            binder = _Binder(_backend.active().avro_encode)
            if is_record:
                root = binder.node(
                    binder.k.E_RECORD,
                    self._top,
                    children=[
                        lambda f=f, c=c: binder.bind(f.type, c, f"{self._top}.{f.name}")
                        for f, c in zip(self._fields, cols)
                    ],
                )
            else:
                root = binder.bind(self.schema, cols[0], self._top)
        except _Unbindable:
            return self._encode_rows(cols, n, is_record, skip)
        error, body, offsets = binder.k.encode(binder.nodes, binder.kids, root, skip, n, binder.capacity + 16 * n)
        if error is not None:
            status, row, node, detail = error
            self._raise_for_row(cols, row, is_record)  # the row writer's own message, when it has one
            raise EncodeError(
                f"row {row}: {binder.paths[node]}: {_GENERIC.get(status, 'cannot be encoded')}", index=row
            )
        validity = None if skip is None else pa.py_buffer(np.packbits(~skip, bitorder="little"))
        return pa.Array.from_buffers(
            pa.binary(), n, [validity, offsets, body], null_count=0 if skip is None else int(skip.sum())
        )

    def encode_value(self, value: Any) -> bytes:
        """One Avro body for one Python value (a dict for a record, as the decoder's rows give it).

        Raises
        ------
        EncodeError
            The value does not fit the schema (the message names the field path).
        """
        out = bytearray()
        self._write(value, out)
        return bytes(out)

    @property
    def _fields(self) -> list[Field]:
        """The record's fields ([] for a schema that is not a record)."""
        return self.schema.fields if isinstance(self.schema, Record) else []

    @property
    def _top(self) -> str:
        return self.schema.fullname if hasattr(self.schema, "fullname") else self.schema.type

    def _row(self, cols: list[Any], i: int, is_record: bool) -> Any:
        if is_record:
            return {f.name: c[i].as_py() for f, c in zip(self._fields, cols)}
        return cols[0][i].as_py()

    def _raise_for_row(self, cols: list[Any], i: int, is_record: bool) -> None:
        try:
            self._write(self._row(cols, i, is_record), bytearray())
        except EncodeError as exc:
            raise EncodeError(f"row {i}: {exc}", index=i) from None

    def _encode_rows(self, cols: list[Any], n: int, is_record: bool, skip: np.ndarray | None) -> pa.Array:
        """The row path: one closure per schema node over ``to_pylist`` values."""
        try:
            values = [c.to_pylist() for c in cols]
        except (OverflowError, ValueError) as exc:  # e.g. a timestamp far past what datetime holds
            raise EncodeError(f"{self._top}: a value cannot be encoded ({exc})") from None
        names = [f.name for f in self._fields] if is_record else []
        skip_list = [False] * n if skip is None else skip.tolist()
        write = self._write
        out: list[bytes | None] = []
        for i in range(n):
            if skip_list[i]:
                out.append(None)
                continue
            buf = bytearray()
            try:
                if is_record:
                    write({name: values[j][i] for j, name in enumerate(names)}, buf)
                else:
                    write(values[0][i], buf)
            except EncodeError as exc:
                raise EncodeError(f"row {i}: {exc}", index=i) from None
            out.append(bytes(buf))
        return pa.array(out, pa.binary())

    @property
    def schema_json(self) -> str:
        from .schema import to_json

        return json.dumps(to_json(self.schema))


def _array(col: Any) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _admits_null(node: Schema) -> bool:
    return node.type == "null" or (isinstance(node, Union) and node.null_index is not None)
