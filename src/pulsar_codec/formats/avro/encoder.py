"""Arrow rows -> schemaless Avro bodies (the reverse of :class:`pulsar_codec.avro.Decoder`).

Two paths, same bytes:

- the columnar path (the common one): the writer schema is bound to the batch's Arrow arrays as a
  flat program of nodes (validity, values, offsets, enum tables; timestamps, dates and times are
  rescaled to the Avro unit with numpy, floor division; decimals of another scale are cast exactly
  by Arrow) and an encode kernel (``_avro_encode_c`` / ``_avro_encode_py``, the usual twins) writes
  every body into one buffer;
- the row path, for Arrow/Avro pairings the binding does not cover (general unions over columns
  that are not Arrow unions or Spark's struct of branches, durations a uint32 part cannot hold,
  decimals that would lose digits, uint64, float16, struct fields missing from the batch,
  int/float mismatches the row writer rejects): one closure per
  schema node over ``to_pylist`` values. Logical types are converted back to their Avro
  representation, dictionary (enum) values are written as symbol indexes, and a value for a union
  is written with the first branch whose type accepts it.

An Arrow union column (dense or sparse) is written branch by branch on both paths: the child an
element is in names the Avro branch (:func:`union_branches`), so a decoded union encodes back to the
same bytes. Shapes that would lose values whatever the rows hold (a struct field the record has no
field for, map keys that are not strings, duplicate names) are refused for the whole batch first.

When the kernel stops at a bad value, the row writer is run on that row alone, so the
:class:`~pulsar_codec.errors.EncodeError` text is the same on both paths.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from ..._arrow import as_table_like, is_text_type
from ..._kernels import _backend
from ...errors import EncodeError
from ._arrow_inputs import (
    _AVRO_DAY,
    _AVRO_UNIT,
    _UNIT_PER_S,
    _binary,
    _bits,
    _check_fit,
    _decimal128,
    _duplicates,
    _fixed,
    _has_time,
    _ints,
    _is_int,
    _outside_day,
    _rescale,
    _Unbindable,
    _valid_times,
    _validity,
    duration_bytes,
)
from ._arrow_unions import _pylist, _union_layout, spark_union, union_branches
from ._rows import row_writer
from ._uuid import uuid_bytes
from .from_arrow import schema_for, schema_from_arrow
from .schema import Array, Enum, Field, Fixed, Map, Primitive, Record, Schema, Union, parse

__all__ = ["Encoder", "schema_from_arrow", "schema_for"]

# -- columnar path: bind the schema to a batch's arrays ------------------------------------------------


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

    def bind_union(self, node: Union, arr: pa.Array, path: str) -> int:
        """An Arrow union column: one node per Arrow child, which writes its own branch index (and
        the null branch for its null elements, when the Avro union has one)."""
        k = self.k
        branch = union_branches(arr.type, node)
        if branch is None:
            raise _Unbindable(path)
        kid, where, children = _union_layout(arr, path)
        null = node.null_index

        def child_node(child: pa.Array, b: int) -> int:
            target, bpath = node.branches[b], f"{path}[{b}]"
            if null is not None and target.type != "null":
                return self.node(
                    k.E_OPTION,
                    path,
                    valid=_validity(child),
                    arg=null,
                    arg2=b,
                    children=[lambda: self.bind(target, child, bpath, own_valid=False)],
                )
            return self.node(k.E_OPTION, path, arg2=b, children=[lambda: self.bind(target, child, bpath)])

        return self.node(
            k.E_UNION,
            path,
            data=kid,
            offs=where,
            children=[lambda c=c, b=b: child_node(c, b) for c, b in zip(children, branch)],
        )

    def bind(self, node: Schema, arr: pa.Array, path: str, strict: bool = False, own_valid: bool = True) -> int:  # noqa: C901
        k = self.k
        t = arr.type
        valid = _validity(arr) if own_valid else None
        if isinstance(node, Union):
            if pa.types.is_union(t):
                return self.bind_union(node, arr, path)
            as_union = spark_union(node, arr)
            if as_union is not None:  # Spark's struct of branches, read back as the union it was
                return self.bind_union(node, as_union, path)
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
                offs = arr.offsets.to_numpy()  # int32 or int64: the kernels read both
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
            if not pa.types.is_map(t) or not is_text_type(t.key_type):
                raise _Unbindable(path)
            offs = arr.offsets.to_numpy()
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
                arr = _decimal128(arr, node, path)
                return self.node(
                    k.E_DEC_FIXED, path, valid=valid, data=_fixed(arr, "V16").view(np.uint8), arg=node.size
                )
            if node.logical == "uuid" and (pa.types.is_string(t) or pa.types.is_large_string(t)):
                raw = uuid_bytes(arr)
                if raw is None:  # a value not in the canonical form: the row writer says which
                    raise _Unbindable(path)
                self.capacity += len(arr) * 16
                return self.node(k.E_FIXED, path, valid=valid, data=raw, arg=16, arg2=16)
            if node.logical == "duration" and not pa.types.is_fixed_size_binary(t):
                raw = duration_bytes(arr)
                if raw is None:  # not an interval, or a value the 12 bytes cannot hold: the row writer says
                    raise _Unbindable(path)
                self.capacity += len(arr) * 12
                return self.node(k.E_FIXED, path, valid=valid, data=raw, arg=12, arg2=12)
            if node.logical not in (None, "uuid", "duration") or not pa.types.is_fixed_size_binary(t):
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
            arr = _decimal128(arr, node, path)
            return self.node(k.E_DEC_BYTES, path, valid=valid, data=_fixed(arr, "V16").view(np.uint8))
        if lt == "date" or lt in ("time-millis", "time-micros") or (lt and "timestamp" in lt):
            # date and time-millis annotate an Avro int: E_INT range-checks their values
            code = k.E_INT if nt == "int" else k.E_LONG
            if _is_int(t) and not strict:  # the row writer takes plain integers as they are
                data = _ints(arr)
                if lt.startswith("time-") and _outside_day(data, valid, _AVRO_DAY[lt]):
                    raise _Unbindable(path)  # the row writer refuses the value and names its row
                return self.node(code, path, valid=valid, data=data)
            if lt == "date":
                if pa.types.is_date32(t):
                    return self.node(code, path, valid=valid, data=_fixed(arr, np.int32))
                if pa.types.is_date64(t):
                    return self.node(code, path, valid=valid, data=np.floor_divide(_fixed(arr, np.int64), 86_400_000))
                raise _Unbindable(path)
            if lt.startswith("time-"):
                if not (pa.types.is_time32(t) or pa.types.is_time64(t)):
                    raise _Unbindable(path)
                src = _fixed(arr, np.int32 if pa.types.is_time32(t) else np.int64).astype(np.int64, copy=False)
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
                data = _fixed(arr, np.float32 if pa.types.is_float32(t) else np.float64)  # both widths read
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
        twice = _duplicates(data.schema.names)
        if twice:  # which of the columns would be written is anyone's guess
            raise EncodeError(f"the batch has duplicate column name(s) {twice}")
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
        for i, c in enumerate(cols):  # (both paths: to_pylist would fold such a time into the day)
            if _has_time(c.type):
                _valid_times(c, f"{self._top}.{self._fields[i].name}" if is_record else self._top)
        for node, col, path in zip(self._nodes, cols, self._paths):
            _check_fit(node, col.type, path)
        n = data.num_rows
        null_rows = None
        # a column without nulls means no row is all null (a union keeps its nulls in its children)
        if cols and all(c.null_count or pa.types.is_union(c.type) for c in cols):
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

    @property
    def _nodes(self) -> list[Schema]:
        """The Avro type of each column."""
        return [f.type for f in self._fields] if isinstance(self.schema, Record) else [self.schema]

    @property
    def _paths(self) -> list[str]:
        """The error path of each column."""
        if isinstance(self.schema, Record):
            return [f"{self._top}.{f.name}" for f in self._fields]
        return [self._top]

    def _row(self, cols: list[Any], i: int, is_record: bool) -> Any:
        values = [_pylist(c.slice(i, 1), node, path)[0] for c, node, path in zip(cols, self._nodes, self._paths)]
        if is_record:
            return {f.name: v for f, v in zip(self._fields, values)}
        return values[0]

    def _raise_for_row(self, cols: list[Any], i: int, is_record: bool) -> None:
        try:
            row = self._row(cols, i, is_record)
        except EncodeError:
            raise
        except (OverflowError, ValueError):  # a value Python cannot hold (a date past 9999): the caller's text
            return
        try:
            self._write(row, bytearray())
        except EncodeError as exc:
            raise EncodeError(f"row {i}: {exc}", index=i) from None

    def _encode_rows(self, cols: list[Any], n: int, is_record: bool, skip: np.ndarray | None) -> pa.Array:
        """The row path: one closure per schema node over ``to_pylist`` values."""
        values = []
        for c, node, path in zip(cols, self._nodes, self._paths):
            try:
                values.append(_pylist(c, node, path))
            except EncodeError:
                raise
            except (OverflowError, ValueError) as exc:  # e.g. a timestamp far past what datetime holds
                bad = _first_unconvertible(c, node, path)
                raise EncodeError(f"row {bad}: {path}: a value cannot be encoded ({exc})", index=bad) from None
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


def _first_unconvertible(col: pa.Array, node: Schema, path: str) -> int | None:
    """The first row of ``col`` that Python cannot hold (only called once converting all failed)."""
    step = 1024
    for start in range(0, len(col), step):
        try:
            _pylist(col.slice(start, step), node, path)
        except (OverflowError, ValueError):
            for i in range(start, min(start + step, len(col))):
                try:
                    _pylist(col.slice(i, 1), node, path)
                except (OverflowError, ValueError):
                    return i
    return None  # pragma: no cover - the whole column failed, so one of its rows does


def _array(col: Any) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _admits_null(node: Schema) -> bool:
    return node.type == "null" or (isinstance(node, Union) and node.null_index is not None)
