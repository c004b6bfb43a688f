"""Decode plans: the reader schema's column layout and the (writer, reader) decode program.

A :class:`Layout` is a function of the reader schema alone: a flat list of column builders
("slots"), one per Arrow array of the output, numbered depth first. Slot 0 is a struct whose
children are the output columns (the record's fields, or a single column named ``value``).

A plan is a function of the (writer, reader) pair: a tree of ops, flattened into a list of tuples
``(code, slot, first_kid, n_kids, arg, arg2, table, const)`` plus a list of child op indexes. The
ops follow the writer's bytes (Avro data carries no tags, so the writer schema drives the walk) and
write into the reader's slots: promotions, enum symbol maps, union branch maps, skips of
writer-only fields and defaults of reader-only fields are all decided here, once. Both kernels
(``_avro_c`` and ``_avro_py``) interpret the same flat program.

Resolution follows Avro Java's ``SchemaCompatibility`` / resolving decoder (spec "Schema
Resolution"): named types match by unqualified name or a reader alias, except that a reader union
first takes the branch with the writer's full name; reader fields match writer fields by name,
then by reader field alias (an alias naming a writer field another reader field has by name does
not match: that field takes its default, as in fastavro); writer-only fields are skipped without being
materialised; reader-only fields take their default (any default, complex ones too: the default is
encoded to Avro bytes once and decoded with the reader's own program every row). Pairs that can
never resolve fail here with a :class:`~pulsar_codec.errors.SchemaError` naming the field path;
data-dependent failures (a writer union branch or enum symbol the reader cannot take) become op
codes that raise ``AVRO_UNRESOLVED_UNION_BRANCH`` / ``AVRO_UNKNOWN_ENUM_SYMBOL`` when hit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow as pa

# slot kinds (K_*) and op codes (O_*): one definition for this module, both kernels and csrc/pc_defs.h
from ..._kernels.defs import (
    K_BIN,
    K_BOOL,
    K_F32,
    K_F64,
    K_I32,
    K_I64,
    K_LIST,
    K_MAP,
    K_NULL,
    K_RAW,
    K_STRUCT,
    K_UNION,
    MS_PER_DAY,
    O_ARRAY,
    O_BOOL,
    O_BRANCH_ERR,
    O_BYTES,
    O_DEC_BYTES,
    O_DEC_FIXED,
    O_DEFAULT,
    O_DOUBLE,
    O_DURATION,
    O_ENUM,
    O_FIXED,
    O_FLOAT,
    O_FLOAT_D,
    O_INT,
    O_INT_D,
    O_INT_F,
    O_INT_L,
    O_LONG,
    O_LONG_D,
    O_LONG_F,
    O_MAP,
    O_NULL,
    O_NULLFILL,
    O_RECORD,
    O_SELECT,
    O_SK_ARRAY,
    O_SK_BOOL,
    O_SK_BYTES,
    O_SK_F32,
    O_SK_F64,
    O_SK_FIXED,
    O_SK_MAP,
    O_SK_NOP,
    O_SK_RECORD,
    O_SK_UNION,
    O_SK_VARINT,
    O_STRING,
    O_TIME_MS,
    O_TIME_US,
    O_UNION,
)
from ...errors import SchemaError
from .defaults import DefaultError, encode_default
from .schema import (
    Array,
    Enum,
    Fixed,
    Map,
    Named,
    Primitive,
    Record,
    Schema,
    Union,
    admits_null,
)

__all__ = ["Slot", "Layout", "build_layout", "build_plan", "encode_default", "arrow_type"]


# -- Arrow types ------------------------------------------------------------------------------------


_UNITS = {"millis": "ms", "micros": "us", "nanos": "ns"}


def _decimal_type(precision: int, scale: int) -> pa.DataType:
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


def arrow_type(node: Schema) -> pa.DataType:
    """The Arrow type of an Avro schema node (design section 5)."""
    if isinstance(node, Union):
        inner = node.nullable_of
        if inner is not None:
            return arrow_type(inner)
        return pa.dense_union(
            [pa.field(n, arrow_type(b), nullable=True) for n, b in zip(node.branch_names, node.branches)],
            list(range(len(node.branches))),
        )
    if isinstance(node, Record):
        return pa.struct([pa.field(f.name, arrow_type(f.type), nullable=admits_null(f.type)) for f in node.fields])
    if isinstance(node, Enum):
        return pa.dictionary(pa.int32(), pa.string())
    if isinstance(node, Array):
        return pa.list_(pa.field("item", arrow_type(node.items), nullable=admits_null(node.items)))
    if isinstance(node, Map):
        return pa.map_(pa.string(), pa.field("value", arrow_type(node.values), nullable=admits_null(node.values)))
    if isinstance(node, Fixed):
        if node.logical == "decimal":
            return _decimal_type(node.precision, node.scale)
        if node.logical == "duration":
            return pa.month_day_nano_interval()
        if node.logical == "uuid":  # 16 bytes decoded to the canonical text (see _uuid.py)
            return pa.string()
        return pa.binary(node.size)
    assert isinstance(node, Primitive)
    lt, t = node.logical, node.type
    if lt == "decimal":
        return _decimal_type(node.precision, node.scale)
    if lt == "date":
        return pa.date32()
    if lt == "time-millis":
        return pa.time32("ms")
    if lt == "time-micros":
        return pa.time64("us")
    if lt is not None and lt.startswith("timestamp-"):
        return pa.timestamp(_UNITS[lt.rsplit("-", 1)[1]], tz="UTC")
    if lt is not None and lt.startswith("local-timestamp-"):
        return pa.timestamp(_UNITS[lt.rsplit("-", 1)[1]])
    return {
        "null": pa.null(),
        "boolean": pa.bool_(),
        "int": pa.int32(),
        "long": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "bytes": pa.binary(),
        "string": pa.string(),
    }[t]


# -- layout -----------------------------------------------------------------------------------------


@dataclass
class Slot:
    """One column builder: storage ``kind``, element ``width`` in bytes (fixed-width kinds), and
    child slots. ``node`` is the reader schema node it was made for (None for slot 0)."""

    kind: int
    nullable: bool
    width: int
    children: list[int]
    type: pa.DataType
    node: Schema | None
    symbols: list[str] | None = None  # enums
    null_branch: int = 0  # unions: branch that takes a null placeholder

    def spec(self) -> tuple[Any, ...]:
        return (self.kind, bool(self.nullable), self.width, tuple(self.children), self.null_branch)


@dataclass
class Layout:
    """The column builders of one reader schema (slot 0 is the row struct).

    ``specs`` and ``arrow_schema`` are computed once, on first use (after :func:`build_layout` has
    numbered every slot); ``prepared`` keeps what each kernel twin made of the layout.
    """

    reader: Schema
    slots: list[Slot] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    is_record: bool = False
    # builder bytes per row seen in the last large batch (see avro.run); a sizing hint only
    hints: list[tuple[float, float]] | None = field(default=None, repr=False, compare=False)
    # the kernel twins' prepared forms of this layout, by kernel module (see format.py)
    prepared: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def specs(self) -> list[tuple[Any, ...]]:
        """``(kind, nullable, width, children, null_branch)`` per slot, as the kernels take them."""
        return [s.spec() for s in self.slots]

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        """The columns of every batch decoded with this layout."""
        root = self.slots[0]
        return pa.schema([pa.field(n, self.slots[c].type, nullable=True) for n, c in zip(self.names, root.children)])

    @cached_property
    def dictionaries(self) -> dict[int, pa.Array]:
        """The symbols of every enum slot as a string array (the dictionary of its column)."""
        return {i: pa.array(s.symbols, pa.string()) for i, s in enumerate(self.slots) if s.symbols is not None}


_FIXED_KINDS = {
    "boolean": (K_BOOL, 1),
    "int": (K_I32, 4),
    "long": (K_I64, 8),
    "float": (K_F32, 4),
    "double": (K_F64, 8),
}


def build_layout(reader: Schema) -> Layout:
    """Number the column builders of the reader schema (depth first, slot 0 = the row struct)."""
    layout = Layout(reader)
    slots = layout.slots

    def new(kind: int, nullable: bool, width: int, typ: pa.DataType, node: Schema | None) -> int:
        slots.append(Slot(kind, nullable, width, [], typ, node))
        return len(slots) - 1

    def add(node: Schema, nullable: bool) -> int:
        if isinstance(node, Union):
            inner = node.nullable_of
            if inner is not None:
                sid = add(inner, True)
                return sid
            sid = new(K_UNION, False, 0, arrow_type(node), node)
            slots[sid].null_branch = node.null_index or 0
            slots[sid].children = [add(b, True) for b in node.branches]
            return sid
        typ = arrow_type(node)
        if isinstance(node, Record):
            sid = new(K_STRUCT, nullable, 0, typ, node)
            slots[sid].children = [add(f.type, admits_null(f.type)) for f in node.fields]
        elif isinstance(node, Array):
            sid = new(K_LIST, nullable, 0, typ, node)
            slots[sid].children = [add(node.items, admits_null(node.items))]
        elif isinstance(node, Map):
            sid = new(K_MAP, nullable, 0, typ, node)
            key = new(K_BIN, False, 0, pa.string(), None)
            slots[sid].children = [key, add(node.values, admits_null(node.values))]
        elif isinstance(node, Enum):
            sid = new(K_I32, nullable, 4, typ, node)
            slots[sid].symbols = list(node.symbols)
        elif isinstance(node, Fixed):
            if node.logical == "decimal":
                width = 16 if node.precision <= 38 else 32
            elif node.logical == "duration":
                width = 16
            else:
                width = node.size
            sid = new(K_RAW, nullable, width, typ, node)
        else:
            assert isinstance(node, Primitive)
            if node.logical == "decimal":
                sid = new(K_RAW, nullable, 16 if node.precision <= 38 else 32, typ, node)
            elif node.type in ("bytes", "string"):
                sid = new(K_BIN, nullable, 0, typ, node)
            elif node.type == "null":
                sid = new(K_NULL, nullable, 0, typ, node)
            else:
                kind, width = _FIXED_KINDS[node.type]
                sid = new(kind, nullable, width, typ, node)
        return sid

    root = new(K_STRUCT, False, 0, pa.null(), None)
    if isinstance(reader, Record):
        layout.is_record = True
        layout.names = [f.name for f in reader.fields]
        slots[root].children = [add(f.type, True) for f in reader.fields]
    else:
        layout.names = ["value"]
        slots[root].children = [add(reader, True)]
    # every output column takes a null for a null message, so each has validity
    for c in slots[root].children:
        if slots[c].kind != K_UNION:  # dense unions carry nulls in their children
            slots[c].nullable = True
    slots[root].type = pa.struct([pa.field(n, slots[c].type) for n, c in zip(layout.names, slots[root].children)])
    return layout


# -- resolution -------------------------------------------------------------------------------------


class _Op:
    __slots__ = ("code", "slot", "kids", "arg", "arg2", "table", "const")

    def __init__(
        self,
        code: int,
        slot: int = -1,
        kids: Iterable[_Op] = (),
        arg: int = 0,
        arg2: int = 0,
        table: Any = None,
        const: Any = None,
    ) -> None:
        self.code = code
        self.slot = slot
        self.kids = list(kids)
        self.arg = arg
        self.arg2 = arg2
        self.table = table
        self.const = const


def _names_match(w: Named, r: Named) -> bool:
    return w.name == r.name or bool({w.name, w.fullname} & r.alias_names())


_PROMOTE = {
    ("int", "long"),
    ("int", "float"),
    ("int", "double"),
    ("long", "float"),
    ("long", "double"),
    ("float", "double"),
    ("string", "bytes"),
    ("bytes", "string"),
}


def _shallow_match(w: Schema, r: Schema) -> bool:
    """Same kind (and name for named types): the first pass of union branch selection."""
    if w.type != r.type:
        return False
    if isinstance(w, Named):
        return _names_match(w, r)  # type: ignore[arg-type]
    return True


def _pick_branch(w: Schema, branches: list[Schema]) -> int | None:
    """The reader branch that reads writer type ``w``: for a named type the branch of the same type
    and full name (the specification's rule, Avro Java's ``bestBranch``), else the first of the same
    kind (and short name or alias, for named types), else the first the writer type promotes to."""
    if isinstance(w, Named):
        for i, b in enumerate(branches):
            if b.type == w.type and isinstance(b, Named) and b.fullname == w.fullname:
                return i
    for i, b in enumerate(branches):
        if _shallow_match(w, b):
            return i
    for i, b in enumerate(branches):
        if (w.type, b.type) in _PROMOTE:
            return i
    return None


def _min_size(node: Schema, seen: int = 0) -> int:
    """Fewest bytes a value of the writer type can occupy."""
    if isinstance(node, Primitive):
        return {"null": 0, "float": 4, "double": 8}.get(node.type, 1)
    if isinstance(node, Fixed):
        return node.size
    if isinstance(node, Record):
        return sum(_min_size(f.type) for f in node.fields)
    return 1  # enum, array, map, union: at least one varint byte


class _Planner:
    """Builds the op tree; ``sid`` always names the slot the reader node was given by the layout
    (for the nullable shorthand, the slot of its non-null branch)."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.slots = layout.slots

    def _bound(self, precision: int, sid: int) -> bytes:
        """10**precision as the decimal slot's little-endian bytes: decimal ops refuse an unscaled value
        whose magnitude reaches it (Arrow's decimals hold at most ``precision`` digits)."""
        bound: int = 10**precision
        return bound.to_bytes(self.slots[sid].width, "little")

    # skipping writer-only data -------------------------------------------------------------------
    def skip(self, w: Schema) -> _Op:
        if isinstance(w, Union):
            return _Op(O_SK_UNION, kids=[self.skip(b) for b in w.branches], arg=len(w.branches))
        if isinstance(w, Record):
            return _Op(O_SK_RECORD, kids=[self.skip(f.type) for f in w.fields])
        if isinstance(w, Array):
            return _Op(O_SK_ARRAY, kids=[self.skip(w.items)], arg=_min_size(w.items))
        if isinstance(w, Map):
            return _Op(O_SK_MAP, kids=[self.skip(w.values)], arg=1 + _min_size(w.values))
        if isinstance(w, Enum):
            return _Op(O_SK_VARINT)
        if isinstance(w, Fixed):
            return _Op(O_SK_FIXED, arg=w.size)
        return _Op(
            {
                "null": O_SK_NOP,
                "boolean": O_SK_BOOL,
                "int": O_SK_VARINT,
                "long": O_SK_VARINT,
                "float": O_SK_F32,
                "double": O_SK_F64,
                "bytes": O_SK_BYTES,
                "string": O_SK_BYTES,
            }[w.type]
        )

    # reading into the reader's slots -------------------------------------------------------------
    def resolve(self, w: Schema, r: Schema, sid: int, path: str) -> _Op:
        if isinstance(w, Union):
            return self._writer_union(w, r, sid, path)
        if isinstance(r, Union):
            inner = r.nullable_of
            if inner is not None:
                if w.type == "null":
                    return _Op(O_NULLFILL, sid)
                return self.resolve(w, inner, sid, path)
            k = _pick_branch(w, r.branches)
            if k is None:
                raise SchemaError(f"{path}: writer type {_describe(w)} matches no branch of the reader union")
            return self._select(w, r, sid, k, path)
        return self._resolve_plain(w, r, sid, path)

    def _select(self, w: Schema, r: Union, sid: int, k: int, path: str) -> _Op:
        csid = self.slots[sid].children[k]
        child = self.resolve(w, r.branches[k], csid, f"{path}[{k}]")
        return _Op(O_SELECT, sid, [child], arg=k, arg2=csid)

    def _writer_union(self, w: Union, r: Schema, sid: int, path: str) -> _Op:
        """A writer union: each branch resolved on its own. A branch the reader cannot read (no
        reader branch matches it, or one matches by name and differs deeper) fails only the rows
        that take it, as the specification and Avro Java have it; the pair fails when none resolves."""
        kids = []
        first_error: SchemaError | None = None
        for i, wb in enumerate(w.branches):
            try:
                kid = self._writer_branch(wb, r, sid, path)
            except DefaultError:
                raise
            except SchemaError as exc:
                first_error = first_error or exc
                kid = None
            kids.append(_Op(O_BRANCH_ERR, arg=i) if kid is None else kid)
        if all(k.code == O_BRANCH_ERR for k in kids):
            reason = f" ({first_error})" if first_error is not None else ""
            raise SchemaError(
                f"{path}: no branch of the writer union {_describe(w)} can be read as {_describe(r)}{reason}"
            )
        return _Op(O_UNION, kids=kids, arg=len(w.branches))

    def _writer_branch(self, wb: Schema, r: Schema, sid: int, path: str) -> _Op | None:
        """The op reading writer branch ``wb`` as ``r``; None when no reader branch matches it."""
        if isinstance(r, Union) and r.nullable_of is None:
            k = _pick_branch(wb, r.branches)
            return None if k is None else self._select(wb, r, sid, k, path)
        if isinstance(r, Union):  # nullable shorthand
            inner = r.nullable_of
            assert inner is not None  # a union with more than null and one branch takes the path above
            if wb.type == "null":
                return _Op(O_NULLFILL, sid)
            return None if _pick_branch(wb, [inner]) is None else self.resolve(wb, inner, sid, path)
        return None if _pick_branch(wb, [r]) is None else self.resolve(wb, r, sid, path)

    def _resolve_plain(self, w: Schema, r: Schema, sid: int, path: str) -> _Op:
        kids_slots = self.slots[sid].children
        if isinstance(r, Record):
            if not isinstance(w, Record) or not _names_match(w, r):
                raise SchemaError(f"{path}: writer {_describe(w)} cannot be read as record {r.fullname!r}")
            return self.record(w, r, sid, path)
        if isinstance(r, Enum):
            if not isinstance(w, Enum) or not _names_match(w, r):
                raise SchemaError(f"{path}: writer {_describe(w)} cannot be read as enum {r.fullname!r}")
            if w.symbols == r.symbols:
                return _Op(O_ENUM, sid, arg=len(w.symbols))
            default = r.symbols.index(r.default) if r.default is not None else -1
            table = tuple(r.symbols.index(s) if s in r.symbols else default for s in w.symbols)
            return _Op(O_ENUM, sid, arg=len(w.symbols), table=table)
        if isinstance(r, Array):
            if not isinstance(w, Array):
                raise SchemaError(f"{path}: writer {_describe(w)} cannot be read as an array")
            item = self.resolve(w.items, r.items, kids_slots[0], f"{path}[]")
            return _Op(O_ARRAY, sid, [item], arg=_min_size(w.items))
        if isinstance(r, Map):
            if not isinstance(w, Map):
                raise SchemaError(f"{path}: writer {_describe(w)} cannot be read as a map")
            value = self.resolve(w.values, r.values, kids_slots[1], f"{path}{{}}")
            return _Op(O_MAP, sid, [value], arg=1 + _min_size(w.values), arg2=kids_slots[0])
        if isinstance(r, Fixed):
            if not isinstance(w, Fixed) or not _names_match(w, r) or w.size != r.size:
                raise SchemaError(f"{path}: writer {_describe(w)} cannot be read as fixed {r.fullname!r}({r.size})")
            if r.logical == "decimal":
                return _Op(O_DEC_FIXED, sid, arg=r.size, arg2=r.precision, const=self._bound(r.precision, sid))
            if r.logical == "duration":
                return _Op(O_DURATION, sid)
            return _Op(O_FIXED, sid, arg=r.size)
        assert isinstance(r, Primitive)
        wt, rt = w.type, r.type
        if not isinstance(w, Primitive) or (wt != rt and (wt, rt) not in _PROMOTE):
            raise SchemaError(f"{path}: writer {_describe(w)} cannot be read as {_describe(r)}")
        if r.logical == "decimal":
            return _Op(
                O_DEC_BYTES, sid, arg=self.slots[sid].width, arg2=r.precision, const=self._bound(r.precision, sid)
            )
        if r.logical in ("time-millis", "time-micros"):
            return self._time(wt, r.logical, sid)
        code = {
            ("null", "null"): O_NULL,
            ("boolean", "boolean"): O_BOOL,
            ("int", "int"): O_INT,
            ("long", "long"): O_LONG,
            ("float", "float"): O_FLOAT,
            ("double", "double"): O_DOUBLE,
            ("int", "long"): O_INT_L,
            ("int", "float"): O_INT_F,
            ("int", "double"): O_INT_D,
            ("long", "float"): O_LONG_F,
            ("long", "double"): O_LONG_D,
            ("float", "double"): O_FLOAT_D,
            ("string", "string"): O_STRING,
            ("bytes", "string"): O_STRING,
            ("bytes", "bytes"): O_BYTES,
            ("string", "bytes"): O_BYTES,
        }[(wt, rt)]
        return _Op(code, sid)

    def _time(self, wt: str, logical: str, sid: int) -> _Op:
        """A reader time of day: Arrow's time32[ms] / time64[us] hold only [0, one day), so the op
        refuses other values (as Avro Java's ``LocalTime`` does). The op passes a value v with
        0 <= v < arg; any other is AVRO_INT_OUT_OF_RANGE when the writer wrote an int (arg2 = 1)
        and v is outside 32 bits, else AVRO_TIME_OUT_OF_RANGE. A writer int read as time-micros
        takes 2**31 as its bound, below one day of microseconds: past it the int is the error."""
        if logical == "time-millis":  # the reader is an int: so is the writer
            return _Op(O_TIME_MS, sid, arg=MS_PER_DAY, arg2=1)
        if wt == "int":
            return _Op(O_TIME_US, sid, arg=2**31, arg2=1)
        return _Op(O_TIME_US, sid, arg=MS_PER_DAY * 1000, arg2=0)

    def record(self, w: Record, r: Record, sid: int, path: str) -> _Op:
        kids: list[_Op] = []
        child_slots = self.slots[sid].children
        by_name = {f.name: i for i, f in enumerate(w.fields)}
        # exact names first: a writer field a reader field names is that field's, whatever aliases say
        matched: dict[int, int] = {by_name[rf.name]: ri for ri, rf in enumerate(r.fields) if rf.name in by_name}
        by_exact_name = set(matched)
        for ri, rf in enumerate(r.fields):
            if rf.name in by_name:
                continue
            hits = list(dict.fromkeys(by_name[a] for a in rf.aliases if a in by_name))
            if len(hits) > 1:
                raise SchemaError(f"{path}.{rf.name}: reader field matches several writer fields through its aliases")
            if hits and hits[0] in by_exact_name:
                continue  # its alias names a writer field taken by name: the field takes its default
            if hits:
                if hits[0] in matched:
                    raise SchemaError(f"{path}.{rf.name}: writer field {w.fields[hits[0]].name!r} matched twice")
                matched[hits[0]] = ri
        for wi, wf in enumerate(w.fields):
            if wi in matched:
                ri = matched[wi]
                rf = r.fields[ri]
                kids.append(self.resolve(wf.type, rf.type, child_slots[ri], f"{path}.{rf.name}"))
            else:
                kids.append(self.skip(wf.type))
        read = set(matched.values())
        for ri, rf in enumerate(r.fields):
            if ri in read:
                continue
            fpath = f"{path}.{rf.name}"
            if not rf.has_default:
                raise SchemaError(f"{fpath}: reader field has no default and the writer record {w.fullname!r} lacks it")
            const = encode_default(rf.type, rf.default, fpath)
            kids.append(_Op(O_DEFAULT, kids=[self.resolve(rf.type, rf.type, child_slots[ri], fpath)], const=const))
        return _Op(O_RECORD, sid, kids)


def _describe(node: Schema) -> str:
    if isinstance(node, Named):
        return f"{node.type} {node.fullname!r}"
    if isinstance(node, Union):
        return "[" + ", ".join(_describe(b) for b in node.branches) + "]"
    return node.type


def flatten(root: _Op) -> tuple[list[tuple[Any, ...]], list[int]]:
    """Flatten an op tree: ops[0] is the root; kids of op i are kids[first:first + n]."""
    ops: list[Any] = []
    kids: list[int] = []

    def visit(op: _Op) -> int:
        idx = len(ops)
        ops.append(None)
        child_ids = [visit(k) for k in op.kids]
        first = len(kids)
        kids.extend(child_ids)
        ops[idx] = (op.code, op.slot, first, len(child_ids), op.arg, op.arg2, op.table, op.const)
        return idx

    visit(root)
    return ops, kids


def _root_union(p: _Planner, writer: Union, reader: Record, top: str) -> _Op:
    """A writer union read as the top-level record (Kafka Connect writes an optional value as
    ``["null", record]``): the branches of the reader's record type fill the batch's columns, the
    others (null included) fail the rows that take them, as a writer union read as a plain
    reader does anywhere else."""
    kids = []
    first_error: SchemaError | None = None
    for i, wb in enumerate(writer.branches):
        kid = None
        if isinstance(wb, Record) and _names_match(wb, reader):
            try:
                kid = p.record(wb, reader, 0, top)
            except DefaultError:
                raise
            except SchemaError as exc:
                first_error = first_error or exc
        kids.append(_Op(O_BRANCH_ERR, arg=i) if kid is None else kid)
    if all(k.code == O_BRANCH_ERR for k in kids):
        reason = f" ({first_error})" if first_error is not None else ""
        raise SchemaError(f"{top}: no branch of the writer union {_describe(writer)} is the record {top!r}{reason}")
    return _Op(O_UNION, kids=kids, arg=len(writer.branches))


def build_plan(writer: Schema, reader: Schema, layout: Layout) -> tuple[list[tuple[Any, ...]], list[int]]:
    """The flat decode program for data written with ``writer`` into ``layout`` (of ``reader``).

    Raises
    ------
    SchemaError
        When the writer can never be read as the reader; the message names the field path.
    """
    p = _Planner(layout)
    root_slot = layout.slots[0]
    top = reader.fullname if isinstance(reader, Named) else reader.type
    if layout.is_record:
        assert isinstance(reader, Record)
        if isinstance(writer, Union):
            return flatten(_root_union(p, writer, reader, top))
        if not isinstance(writer, Record) or not _names_match(writer, reader):
            raise SchemaError(f"{top}: writer {_describe(writer)} cannot be read as record {reader.fullname!r}")
        op = p.record(writer, reader, 0, top)
    else:
        child = p.resolve(writer, reader, layout.slots[0].children[0], top)
        op = _Op(O_RECORD, 0, [child])
    del root_slot
    return flatten(op)
