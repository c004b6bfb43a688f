"""Arrow rows -> compact JSON payloads, byte for byte what confluent-kafka's ``JSONSerializer`` writes.

confluent-kafka serialises a dict with ``orjson.dumps`` when orjson imports, else with
``json.dumps(obj, separators=(",", ":"), ensure_ascii=False)``. This encoder writes the stdlib form
(the one confluent-kafka uses without orjson), for the dict whose keys are in schema order:

- strings as ``json.dumps`` escapes them without ``ensure_ascii``: ``\\" \\\\ \\n \\r \\t \\b \\f``,
  other control characters as ``\\u00xx``, everything else (non-ASCII, U+2028, DEL) as raw UTF-8;
- integers in decimal; floats as Python's ``repr`` (``1.0``, ``1e+16``, ``1e-05``). orjson would
  differ here only: it writes ``1e16`` / ``1e-5`` where ``repr`` writes ``1e+16`` / ``1e-05``;
- NaN and infinities are an :class:`~pulsar_codec.errors.EncodeError` (``json.dumps`` would write
  ``NaN``, which is not JSON and no JSON reader, this package's included, accepts; orjson writes ``null``);
- ``date-time`` properties as ``datetime.isoformat()`` of the UTC instant
  (``2024-01-02T03:04:05.123456+00:00``, no fraction when it is zero, nine digits for a
  nanosecond remainder) -- the text orjson writes for an aware datetime; ``date`` as
  ``YYYY-MM-DD`` (a date64 must hold whole days), ``time`` as ``HH:MM:SS[.ffffff]`` (time32 or
  time64, within one day); ``contentEncoding: base64`` as standard base64 with padding; maps as
  objects (binary keys must be UTF-8), lists as arrays, enums (dictionary columns) as their strings;
  a JSON-text column (what the decoder gives for schemas Arrow cannot type) as that JSON, compacted;
- a string given for a ``date-time`` / ``date`` / ``time`` / base64 property is written as is when
  this package's decoder reads it back (the JSON kernels' rules: RFC 3339 with valid fields and
  days, padded standard base64, a fixed's size), else it is an EncodeError;
- Pulsar JSON (an Avro definition) the way Jackson writes it: bytes and fixed as base64, enums by
  name, logical types as their Avro numbers (timestamp-millis as epoch milliseconds, date as days...).

The batch path is columnar: each column becomes an array of JSON fragments with pyarrow compute
(integers cast, strings escaped with substring replacement only when some value needs it, floats
cast and repaired into ``repr`` form, the rare value the repair cannot prove falls back to ``repr``),
and fragments are joined row-wise; lists and maps join their items with ``binary_join``. The
per-type converters of that path and the format checks are in :mod:`._column_fragments`; the
one-value path (:meth:`JsonEncoder.encode_value`, and :func:`dumps_text`) is in :mod:`._value_writer`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring  # json.dumps' string escaper when ensure_ascii=False
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import as_table_like, is_text_type
from ..._kernels.defs import (
    J_ARRAY,
    J_BOOL,
    J_BYTES_B64,
    J_DATE,
    J_DOUBLE,
    J_ENUM,
    J_FIXED_B64,
    J_FLOAT,
    J_MAP,
    J_NULL,
    J_NULLABLE,
    J_OBJECT,
    J_STRING,
    J_TEXT,
    J_TIME,
    J_TIMESTAMP,
)
from ...errors import EncodeError
from ..avro import schema as av
from ._column_fragments import (
    _EMPTY,
    _INT_RANGE,
    _INT_WORD,
    _LS,
    _NULL_TEXT,
    _avro_number,
    _base64,
    _c,
    _fail_at,
    _first,
    _floats,
    _join,
    _key_text,
    _quote,
    _RowError,
    _temporal,
)
from ._value_writer import _compact, _write, dumps_text
from .mapping import ITEMS, JsonMapping, map_model
from .schema import JsonSchemaModel, parse

__all__ = ["JsonEncoder", "dumps_text"]


# -- the columnar path --------------------------------------------------------------------------------


def _as_array(col: Any) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


class _Columns:
    """Builds the fragment array of one program node over one Arrow array."""

    def __init__(
        self,
        extra_column: str | None,
        absent_if_null: Mapping[int, frozenset[str]] | None = None,
        null_refused: Mapping[int, frozenset[str]] | None = None,
    ) -> None:
        self.extra_column = extra_column
        self.absent_if_null = absent_if_null or {}
        self.null_refused = null_refused or {}

    def nulls_ok(self, program: tuple[Any, ...]) -> bool:
        return program[0] in (J_NULLABLE, J_NULL)

    def items_refuse_null(self, shadow: av.Schema) -> bool:
        """Whether the array or map ``shadow`` holds JSON text whose schema refuses null."""
        return ITEMS in self.null_refused.get(id(shadow), frozenset())

    def check_present(self, arr: pa.Array, live: Any, path: str) -> None:
        if not arr.null_count:
            return
        _fail_at(arr.is_null() if live is None else pc.and_(arr.is_null(), live), path, "null is not allowed here")

    def fragments(self, program: tuple[Any, ...], shadow: av.Schema, arr: pa.Array, path: str, live: Any) -> pa.Array:
        """Fragments of ``arr`` (null where ``arr`` is null; the caller decides whether that is allowed)."""
        op = program[0]
        arr = _plain(arr)
        t = arr.type
        if op == J_NULL:  # the property's one value, in a column of any type (the decoder's is null-typed)
            if arr.null_count < len(arr):  # a value would be lost: refused, as the one-value path does
                _fail_at(arr.is_valid() if live is None else pc.and_(arr.is_valid(), live), path, "expected null")
            return pa.array(["null"] * len(arr), _LS)
        if pa.types.is_null(t) and op != J_NULLABLE:  # an all-null column of no type
            return pa.nulls(len(arr), _LS)
        if op == J_NULLABLE:
            inner = shadow.branches[1] if isinstance(shadow, av.Union) else shadow
            return pc.fill_null(self.fragments(program[1], inner, arr, path, live), _NULL_TEXT)
        if op == J_OBJECT:
            if not pa.types.is_struct(t):
                raise EncodeError(f"{path}: an Arrow {t} column cannot be written as a JSON object")
            self.refuse_unnamed(program, t, path)
            valid = arr.is_valid()
            here = valid if live is None else pc.and_(valid, live)
            body = self.object(program, shadow, lambda name: _child(arr, name), len(arr), path, here)
            return pc.if_else(valid, body, pa.nulls(len(arr), _LS))
        if op == J_ARRAY:
            if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
                raise EncodeError(f"{path}: an Arrow {t} column cannot be written as a JSON array")
            items, offsets = _list_parts(arr)
            items = _plain(items)
            item_program = program[1]
            item_shadow = shadow.items if isinstance(shadow, av.Array) else shadow
            try:
                frags = self.fragments(item_program, item_shadow, items, f"{path}[]", None)
                if not self.nulls_ok(item_program) or self.items_refuse_null(shadow):
                    self.check_present(items, None, f"{path}[]")
            except _RowError as exc:  # at an item: report the row of its list
                raise exc.up(offsets) from None
            joined = pc.binary_join(pa.LargeListArray.from_arrays(offsets, frags), _c(","))
            return pc.if_else(arr.is_valid(), _join("[", joined, "]"), pa.nulls(len(arr), _LS))
        if op == J_MAP:
            if not pa.types.is_map(t):
                raise EncodeError(f"{path}: an Arrow {t} column cannot be written as a JSON object")
            items, offsets = _list_parts(arr)
            value_program = program[1]
            value_shadow = shadow.values if isinstance(shadow, av.Map) else shadow
            keys, values = items.field(0), _plain(items.field(1))
            try:
                frags = self.fragments(value_program, value_shadow, values, f"{path}{{}}", None)
                if not self.nulls_ok(value_program) or self.items_refuse_null(shadow):
                    self.check_present(values, None, f"{path}{{}}")
                names = _key_text(keys, f"{path}{{}}")
            except _RowError as exc:  # at an entry: report the row of its map
                raise exc.up(offsets) from None
            pairs = _join(_quote(names), ":", frags)
            joined = pc.binary_join(pa.LargeListArray.from_arrays(offsets, pairs), _c(","))
            return pc.if_else(arr.is_valid(), _join("{", joined, "}"), pa.nulls(len(arr), _LS))
        if op == J_BOOL:
            if not pa.types.is_boolean(t):
                raise EncodeError(f"{path}: an Arrow {t} column cannot be written as a JSON boolean")
            return pc.if_else(arr, _c("true"), _c("false"))
        if op in _INT_RANGE:
            ints = _avro_number(shadow, arr, path)
            lo, hi = _INT_RANGE[op]
            if len(ints) - ints.null_count and (pc.min(ints).as_py() < lo or pc.max(ints).as_py() > hi):
                # the bounds as 64-bit scalars of the column's sign (uint64 has no common type with -2^63;
                # only a signed column can be below a bound)
                wide = pa.uint64() if pa.types.is_unsigned_integer(ints.type) else pa.int64()
                outside = pc.greater(ints, pa.scalar(hi, wide))
                if pc.min(ints).as_py() < lo:
                    outside = pc.or_(outside, pc.less(ints, pa.scalar(lo, pa.int64())))
                row = _first(pc.fill_null(outside, False))
                raise _RowError(path, row, f"{ints[row].as_py()} is out of the {_INT_WORD[op]} range")
            return ints.cast(pa.string()).cast(_LS)
        if op in (J_FLOAT, J_DOUBLE):
            if pa.types.is_integer(t):
                return arr.cast(pa.string()).cast(_LS)
            if not pa.types.is_floating(t):
                raise EncodeError(f"{path}: an Arrow {t} column cannot be written as a JSON number")
            return _floats(arr, path, single=op == J_FLOAT)
        if op in (J_STRING, J_ENUM):
            if pa.types.is_dictionary(t):
                arr = arr.dictionary_decode()
                t = arr.type
            if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)):
                raise EncodeError(f"{path}: an Arrow {t} column cannot be written as a JSON string")
            if op == J_ENUM:
                symbols = pa.array(list(program[1]), pa.string())
                unknown = pc.and_(arr.is_valid(), pc.invert(pc.is_in(arr.cast(pa.string()), symbols)))
                _fail_at(unknown, path, "not a symbol of the enum")
            return _quote(arr)
        if op in (J_BYTES_B64, J_FIXED_B64):
            return _base64(arr, program[1] if op == J_FIXED_B64 else None, path)
        if op in (J_TIMESTAMP, J_DATE, J_TIME):
            return _temporal(op, arr, path)
        if op == J_TEXT:
            return self.text(arr, path)
        raise EncodeError(f"{path}: unknown program op {op}")  # pragma: no cover - mapping makes only the above

    def refuse_unnamed(self, program: tuple[Any, ...], t: pa.DataType, path: str) -> None:
        """A struct field the object has no property for would be dropped without a word: refused,
        as a top-level column is (the ``keep_extra`` column is one the object takes)."""
        taken = {name for name, _, _ in program[1]}
        if program[2] and self.extra_column is not None:
            taken.add(self.extra_column)
        names = [t.field(i).name for i in range(t.num_fields)]
        extra = [name for name in names if name not in taken]
        if extra:
            raise EncodeError(f"{path}: the struct has field(s) {extra} that the object has no property for")
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise EncodeError(f"{path}: the struct names field(s) {twice} twice")

    def text(self, arr: pa.Array, path: str) -> pa.Array:
        """A JSON-text column (string) compacted; any other column written as its Python values."""
        t = arr.type
        write = _compact if is_text_type(t) else (lambda v, _: dumps_text(v))
        out: list[str | None] = []
        for i, v in enumerate(arr.to_pylist()):
            try:
                out.append(None if v is None else write(v, path))
            except EncodeError as exc:
                raise _RowError(path, i, str(exc).removeprefix(f"{path}: ")) from None
        return pa.array(out, _LS)

    def object(
        self,
        program: tuple[Any, ...],
        shadow: av.Schema,
        column: Callable[[str], pa.Array | None],
        n: int,
        path: str,
        live: Any,
    ) -> pa.Array:
        """Fragments of a JSON object per row from its property columns (``column(name)``)."""
        fields = program[1]
        shadow_fields = shadow.fields if isinstance(shadow, av.Record) else []
        absent = self.absent_if_null.get(id(shadow), frozenset())
        refused = self.null_refused.get(id(shadow), frozenset())
        members: list[_Member] = []
        for i, (name, child, missing) in enumerate(fields):
            arr = column(name)
            if arr is not None:
                arr = _plain(arr)
            if arr is None:
                if missing is None:
                    raise EncodeError(f"{path}: the batch has no column for required property {name!r}")
                continue  # an optional property without a column is left out, as from a dict without it
            child_shadow = shadow_fields[i].type if i < len(shadow_fields) else shadow
            frags = self.fragments(child, child_shadow, arr, f"{path}.{name}", live)
            if not self.nulls_ok(child) or name in refused:  # (a JSON-text column's program takes null)
                self.check_present(arr, live, f"{path}.{name}")
                frags = pc.fill_null(frags, _NULL_TEXT)  # rows outside ``live`` (null parents) only
            # null here means absent where "name": null would break the schema
            left_out = arr.is_null() if name in absent and arr.null_count else None
            members.append((encode_basestring(name) + ":", frags, left_out))
        if program[2] and self.extra_column is not None:
            extra = column(self.extra_column)
            if extra is not None and extra.null_count < len(extra):
                texts = self.text(extra, f"{path}.{self.extra_column}")
                _check_extra_objects(texts, {name for name, _, _ in fields}, f"{path}.{self.extra_column}")
                inner = pc.utf8_slice_codeunits(texts, 1, -1)  # the members of the object text
                members.append(("", inner, pc.fill_null(pc.equal(inner, ""), True)))
        return _join("{", _members(members, n), "}")


def _plain(arr: pa.Array) -> pa.Array:
    """A dictionary column as its values, so nulls among the dictionary's values count as nulls."""
    return _plain(arr.dictionary_decode()) if pa.types.is_dictionary(arr.type) else arr


def _check_extra_objects(texts: pa.Array, named: set[str], path: str) -> None:
    """The ``keep_extra`` texts must be JSON objects whose members the schema does not name: the
    members are written into the object beside its properties."""
    for i, text in enumerate(texts.to_pylist()):
        if text is None:
            continue
        if not text.startswith("{"):
            raise _RowError(path, i, "expected the JSON text of an object")
        repeated = sorted(named.intersection(json.loads(text)))
        if repeated:
            raise _RowError(path, i, f"members {repeated} repeat properties of the object")


_Member = tuple[str, pa.Array, Any]
"""One member of an object per row: the ``"name":`` text, the value texts, and the rows that leave
it out (a bool array, or None when every row has it)."""


def _members(members: list[_Member], n: int) -> pa.Array:
    """Row-wise ``,``-join of the members each row has ("" where it has none).

    Not ``binary_join_element_wise(null_handling="skip")``: pyarrow 26 drops the rows whose inputs
    are all null from its result."""
    if not members:
        return pa.array([""] * n, _LS)
    if all(left_out is None for _, _, left_out in members):  # the common case: one join of every row
        return _join(*[x for i, (key, texts, _) in enumerate(members) for x in (("," if i else "") + key, texts)])
    joined: Any = pa.nulls(n, _LS)
    for key, texts, left_out in members:
        part = _join(key, texts)
        if left_out is not None:
            part = pc.if_else(left_out, pa.scalar(None, _LS), part)
        both = _join(joined, ",", part)
        joined = pc.if_else(pc.is_null(joined), part, pc.if_else(pc.is_null(part), joined, both))
    return pc.fill_null(joined, _EMPTY)


def _branch(shadow: av.Schema) -> av.Schema:
    """The branch of a ``[null, T]`` shadow union that is not null."""
    assert isinstance(shadow, av.Union)
    return next(b for b in shadow.branches if b.type != "null")


def _child(arr: pa.StructArray, name: str) -> pa.Array | None:
    """Property ``name``'s column, null where the object is (a null object's slot holds no value,
    so nothing checks it)."""
    index = arr.type.get_field_index(name)
    if index < 0:
        return None
    if arr.null_count:  # flatten() merges the object's nulls into its children, of any type
        flat: pa.Array = arr.flatten()[index]
        return flat
    return arr.field(index)


def _list_parts(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(values, int64 offsets rebased to 0) of a list or map array, slices applied."""
    t = arr.type
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        offsets = np.arange(len(arr) + 1, dtype=np.int64) * size
        return arr.values.slice(arr.offset * size, len(arr) * size), pa.array(offsets)
    offsets = np.asarray(arr.offsets.to_numpy(), dtype=np.int64)
    start = int(offsets[0]) if len(offsets) else 0
    end = int(offsets[-1]) if len(offsets) else 0
    values = arr.values.slice(start, end - start)
    if arr.null_count:  # a null slot's items are no values: left out, so nothing checks them
        valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        lengths = np.diff(offsets)
        keep = np.repeat(valid, lengths)
        if not keep.all():
            values = values.filter(pa.array(keep))
            offsets = np.concatenate([[start], start + np.cumsum(np.where(valid, lengths, 0))])
    return values, pa.array(offsets - start)


class JsonEncoder:
    """Encode Arrow rows (or one value) as compact JSON payloads with one writer schema.

    Parameters
    ----------
    model : JsonSchemaModel, str or dict
        The writer schema: a JSON Schema document or a Pulsar JSON (Avro record) definition.
        For an object schema, columns are matched to properties by name and properties are
        written in schema order (a batch without a column for an optional property leaves it
        out); for any other schema the batch has one column. A root object that admits null takes
        either: the decoder's one ``value`` column (a null row is written ``null``) or the
        properties' columns. A column the object has no property for is an EncodeError (its
        values would be lost), except the ``keep_extra`` column of a schema parsed with it.

    Notes
    -----
    The bytes are those of ``json.dumps(row, separators=(",", ":"), ensure_ascii=False)`` for the
    row as a dict in schema order (see the module docstring for each type's text). A row whose
    columns are all null, where the schema cannot hold that, is a null payload.
    """

    def __init__(self, model: Any) -> None:
        self.model: JsonSchemaModel = parse(model)
        self.mapping: JsonMapping = map_model(self.model)
        self._program = self.mapping.program
        self._shadow = self.mapping.shadow
        self._top = self.model.name

    # -- batches -------------------------------------------------------------------------------------

    def encode(self, batch: Any) -> pa.Array:
        """One payload per row of ``batch`` (a RecordBatch or Table).

        Returns
        -------
        pa.BinaryArray

        Raises
        ------
        EncodeError
            A value the schema cannot hold (the message names the property path and the row, and
            ``index`` is the row), or a column the schema has no property for (its values would be
            lost).
        """
        data = as_table_like(batch)
        if isinstance(data, pa.Table):
            data = data.combine_chunks()
        try:
            return self._encode(data)
        except _RowError as exc:
            error = exc.encode_error()
        # the columns are checked one after the other: an earlier row may be bad in a later
        # column, and the batch's first bad row is the one to name (as a row-by-row encode would)
        if error.index:
            self.encode(data.slice(0, error.index))
        raise error

    def _encode(self, data: pa.Table | pa.RecordBatch) -> pa.Array:
        n = data.num_rows
        columns = _Columns(self.mapping.extra_column, self.mapping.absent_if_null, self.mapping.null_refused)
        program, shadow = self._program, self._shadow
        names = set(data.schema.names)
        if len(names) != data.num_columns:
            twice = sorted({c for c in data.schema.names if data.schema.names.count(c) > 1})
            raise EncodeError(f"the batch has more than one column named {', '.join(map(repr, twice))}")
        root_may_be_null = program[0] == J_NULLABLE and program[1][0] == J_OBJECT
        if root_may_be_null and names <= self._properties(program[1]):
            # a root object that may be null, given as its properties' columns (the form a root that
            # cannot be null takes): every row is an object; the one-column form writes null rows as null
            program, shadow = program[1], _branch(shadow)
        elif root_may_be_null and data.num_columns > 1:
            self._refuse_extra(program[1], data.schema.names)
        if program[0] == J_OBJECT:
            self._refuse_extra(program, data.schema.names)
            wanted = [name for name, _, _ in program[1]]
            cols = [_as_array(data.column(c)) for c in wanted if c in names]
            skip = self._null_rows(program, cols, self.mapping.null_refused.get(id(shadow), frozenset()))
            live = None if skip is None else pa.array(~skip)
            out = columns.object(
                program,
                shadow,
                lambda name: _as_array(data.column(name)) if name in names else None,
                n,
                self._top,
                live,
            )
        else:
            if data.num_columns != 1:
                raise EncodeError("a schema that is not an object needs a batch with exactly one column")
            arr = _as_array(data.column(0))
            skip = None
            out = columns.fragments(self._program, self._shadow, arr, self._top, None)
            if not columns.nulls_ok(self._program):
                skip = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool) if arr.null_count else None
        if skip is not None:
            out = pc.if_else(pa.array(~skip), out, pa.nulls(n, _LS))
        return out.cast(pa.binary())

    def _refuse_extra(self, program: tuple[Any, ...], names: list[str]) -> None:
        """Columns the object has no property for would be dropped without a word: refuse them, as
        the Avro and Protobuf encoders do (the ``keep_extra`` column is one the object takes)."""
        taken = self._properties(program)
        extra = [name for name in names if name not in taken]
        if extra:
            raise EncodeError(
                f"the batch has column(s) {extra} that {self._top} has no property for; select the "
                f"schema's properties {[name for name, _, _ in program[1]]} first"
            )

    def _properties(self, program: tuple[Any, ...]) -> set[str]:
        """The column names an object program takes: its properties and the ``keep_extra`` column."""
        names = {name for name, _, _ in program[1]}
        return names | {self.mapping.extra_column} if self.mapping.extra_column else names

    @staticmethod
    def _null_rows(program: tuple[Any, ...], cols: list[pa.Array], refused: frozenset[str]) -> np.ndarray | None:
        """Rows whose property columns are all null, when the object cannot be all null (a
        property refuses null: its program's, or its schema's for a ``refused`` JSON-text one)."""
        fields = program[1]
        if all(child[0] in (J_NULLABLE, J_NULL) and name not in refused for name, child, _ in fields) or not cols:
            return None
        if not all(c.null_count for c in cols):
            return None
        rows = np.logical_and.reduce([np.asarray(c.is_null().to_numpy(zero_copy_only=False)) for c in cols])
        return rows if rows.any() else None

    # -- one value -----------------------------------------------------------------------------------

    def encode_value(self, value: Any) -> bytes:
        """One payload for one Python value: a dict for an object schema.

        Takes the decoder's values (``datetime``, ``date``, ``time``, bytes, a map as a dict or a
        list of pairs, a JSON-text column's value as its text) and JSON's own (RFC 3339 strings,
        base64 strings, written as given). Properties the schema does not name are written after
        the schema's, as ``json.dumps`` would.

        Raises
        ------
        EncodeError
            The value does not fit the schema (the message names the property path).
        """
        out: list[str] = []
        try:
            _write(
                self._program,
                self._shadow,
                value,
                out,
                self._top,
                self.mapping.extra_column,
                self.mapping.absent_if_null,
                self.mapping.null_refused,
            )
        except RecursionError:
            raise EncodeError(f"{self._top}: the value nests deeper than it can be written") from None
        try:
            return "".join(out).encode("utf-8")
        except UnicodeEncodeError as exc:  # a str with a lone surrogate: no UTF-8 form
            raise EncodeError(f"{self._top}: a string holds a lone surrogate ({exc.reason})") from None

    def __repr__(self) -> str:
        return f"JsonEncoder({self.model!r})"
