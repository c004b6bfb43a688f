"""Arrow union columns in the Avro encoder: which Avro branch each child of an Arrow union is, where
each element sits, and the values the row writer takes (a :class:`~._rows.Branch` per element, so
the element's own child names its branch, never the value's type).

Shared by both encoding paths of :mod:`.encoder`: the columnar binder reads :func:`union_branches`
and :func:`_union_layout` into its ``E_UNION`` node; the row path reads :func:`_pylist`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ...errors import EncodeError
from ._rows import Branch
from .schema import Array, Map, Named, Record, Schema, Union

__all__ = ["spark_union", "union_branches"]


def _branch_names(node: Schema) -> tuple[str, ...]:
    """The names an Arrow union child may carry for this Avro branch (the decoder uses the first,
    or the full name when two branches share the short name: see :attr:`.schema.Union.branch_names`)."""
    if isinstance(node, Named):
        return (node.name, node.fullname)
    return (node.type,)


def union_branches(t: pa.DataType, node: Union) -> list[int] | None:
    """The Avro branch of each child of the Arrow union type ``t`` (None: no mapping, values choose).

    Children named as the branches (the decoder's names: the type, or a named type's name) map by
    name; otherwise by position, over all branches when the counts agree, else over the branches
    other than null (a derived schema puts null in front of a nullable union's members).
    """
    names = [t.field(i).name for i in range(t.num_fields)]
    by_name: dict[str, int] = {}
    for i, b in enumerate(node.branches):
        for name in _branch_names(b):
            by_name.setdefault(name, i)
    named = [by_name.get(n, -1) for n in names]
    if -1 not in named and len(set(named)) == len(named):
        return named
    if len(names) == len(node.branches):
        return list(range(len(names)))
    others = [i for i, b in enumerate(node.branches) if b.type != "null"]
    if len(names) == len(others):
        return others
    return None


def spark_union(node: Union, arr: pa.Array) -> pa.Array | None:
    """Spark's form of a decoded union (it has no union type: a struct of one field per non-null
    branch, named as the decoder names the branches, one of them set; a null struct or none set
    for the null branch) as the sparse Arrow union it stands for. None when ``arr`` is not that
    form, or a row sets two branches or none without a null branch to take it (the row path's
    EncodeError then)."""
    others = [b for b in node.branches if b.type != "null"]
    if len(others) < 2 or not pa.types.is_struct(arr.type):
        return None  # one branch besides null: Spark holds the value itself, not a struct of branches
    names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
    decoded = {n for n, b in zip(node.branch_names, node.branches) if b.type != "null"}
    if len(names) != len(others) or set(names) != decoded:
        return None
    n = len(arr)
    children = [arr.field(i) for i in range(len(names))]
    held = np.ones((len(children), n), dtype=bool)
    for i, child in enumerate(children):
        if child.null_count:
            held[i] = np.asarray(child.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if arr.null_count:
        held &= np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    count = held.sum(axis=0)
    if (count > 1).any() or ((count == 0).any() and node.null_index is None):
        return None
    types = np.where(count == 1, held.argmax(axis=0), len(children)).astype(np.int8)
    return pa.UnionArray.from_sparse(pa.array(types, pa.int8()), [*children, pa.nulls(n)], field_names=[*names, "null"])


def _union_layout(arr: pa.Array, path: str) -> tuple[np.ndarray, np.ndarray, list[pa.Array]]:
    """(child of each element as int64, index of each element in its child, the children) of a union
    array. pyarrow's ``type_codes`` / ``offsets`` ignore a slice's offset: the buffers are read here."""
    t = arr.type
    n, off = len(arr), arr.offset
    bufs = arr.buffers()
    codes = np.frombuffer(bufs[1], dtype=np.uint8, count=off + n)[off:] if n else np.zeros(0, np.uint8)
    lut = np.full(256, -1, dtype=np.int64)
    lut[list(t.type_codes)] = np.arange(t.num_fields)
    kid = lut[codes]
    children = [arr.field(i) for i in range(t.num_fields)]
    if t.mode == "dense":
        where = np.frombuffer(bufs[2], dtype=np.int32, count=off + n)[off:] if n else kid
    else:  # a sparse union's children are sliced as the union is: element j is element j
        where = np.arange(n, dtype=np.int64)
    sizes = np.array([len(c) for c in children] or [0], dtype=np.int64)
    if n and ((kid < 0).any() or (where < 0).any() or (where >= sizes[np.maximum(kid, 0)]).any()):
        raise EncodeError(f"{path}: the Arrow union array is malformed (a type code or offset names no value)")
    return kid, where, children


def _has_union(t: pa.DataType) -> bool:
    return pa.types.is_union(t) or any(_has_union(t.field(i).type) for i in range(t.num_fields))


def _pylist(arr: pa.Array, node: Schema, path: str) -> list[Any]:
    """``arr.to_pylist()`` for the row writer, except that the elements of Arrow unions become
    :class:`Branch` values (their child names the branch, as on the columnar path)."""
    t = arr.type
    if not _has_union(t):
        return list(arr.to_pylist())
    if isinstance(node, Union):
        if pa.types.is_union(t):
            return _union_pylist(arr, node, path)
        if node.nullable_of is None:
            return list(arr.to_pylist())  # the values choose their branch
        node = node.nullable_of
    valid = arr.is_valid().to_pylist()
    n = len(arr)
    if isinstance(node, Record) and pa.types.is_struct(t):
        present = {t.field(i).name for i in range(t.num_fields)}
        cols = {
            f.name: _pylist(arr.field(f.name), f.type, f"{path}.{f.name}") for f in node.fields if f.name in present
        }
        return [{k: c[j] for k, c in cols.items()} if valid[j] else None for j in range(n)]
    if isinstance(node, Array) and (pa.types.is_list(t) or pa.types.is_large_list(t)):
        offs = arr.offsets.to_pylist()
        items = _pylist(arr.values, node.items, f"{path}[]")
        return [items[offs[j] : offs[j + 1]] if valid[j] else None for j in range(n)]
    if isinstance(node, Array) and pa.types.is_fixed_size_list(t):
        size = t.list_size
        items = _pylist(arr.values, node.items, f"{path}[]")
        return [items[(arr.offset + j) * size : (arr.offset + j + 1) * size] if valid[j] else None for j in range(n)]
    if isinstance(node, Map) and pa.types.is_map(t):
        offs = arr.offsets.to_pylist()
        keys = arr.values.field(0).to_pylist()
        values = _pylist(arr.values.field(1), node.values, f"{path}{{}}")
        return [
            list(zip(keys[offs[j] : offs[j + 1]], values[offs[j] : offs[j + 1]])) if valid[j] else None
            for j in range(n)
        ]
    return list(arr.to_pylist())


def _union_pylist(arr: pa.Array, node: Union, path: str) -> list[Any]:
    branch = union_branches(arr.type, node)
    if branch is None:
        return list(arr.to_pylist())
    kid, where, children = _union_layout(arr, path)
    values = [_pylist(c, node.branches[b], f"{path}[{b}]") for c, b in zip(children, branch)]
    has_null = node.null_index is not None
    out: list[Any] = []
    for k, m in zip(kid.tolist(), where.tolist()):
        v = values[k][m]
        out.append(None if v is None and has_null else Branch(branch[k], v))
    return out
