"""The helpers that cut, count, split and stitch a batch's rows around the MessageDecoder.

They work on one batch's chunks, segments, per-row ids and error lists: finishing a batch into a
RecordBatch or Decoded, turning rows of unreadable ids into error rows, reading per-row schema ids,
numbering message-index paths, giving raw rows their lengths (and error offsets back), cutting a
batch into runs of rows for the decoder's threads and joining the parts' columns again. None of
them holds state or looks a schema up, so they live apart from :mod:`.decoder`, which keeps the
decoder's caches, registry lookups and control flow.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa

from .. import wire
from .._arrow import Chunk
from .._unframe import wide
from ..errors import error_for, raise_for
from ..formats.base import Decoded, PayloadFormat, Segment, check_prefixes, errors_table
from ._resolver import Resolved


def _finish(
    batch: pa.RecordBatch, errors: list[Any], wire_errors: list[tuple[Any, ...]], keep_going: bool, total: int
) -> pa.RecordBatch | Decoded:
    if not keep_going:
        if errors:
            code, index, offset, detail = errors[0]
            raise_for(code, index, offset, detail)
        if total and batch.num_rows != total:  # pragma: no cover - the kernel reports every stop
            raise AssertionError("decoded row count differs from the input")
        return batch
    merged = sorted(wire_errors + [(*e, str(error_for(*e))) for e in errors], key=lambda e: e[1])
    return Decoded(batch, errors_table(merged))


def _drop_bad_rows(
    resolved: Resolved,
    plan_ids: np.ndarray,
    valid: np.ndarray | None,
    first_row: int,
    errors: list[tuple[Any, ...]],
) -> np.ndarray | None:
    """Turn the rows whose schema id is in ``resolved.bad`` into error rows: appended to ``errors``
    (code, index, offset 0, detail, message) and dropped from the returned validity mask."""
    bad_positions = np.fromiter(resolved.bad, dtype=np.int32, count=len(resolved.bad))
    hit = np.isin(plan_ids, bad_positions)
    if valid is not None:
        hit &= valid
    rows = np.flatnonzero(hit)
    if not len(rows):
        return valid
    for row in rows.tolist():
        code, key, reason, whole = resolved.bad[int(plan_ids[row])]
        detail = key if isinstance(key, int) else 0
        index = first_row + row
        if whole:  # the reason is the message (see BadId)
            text = f"{reason} (message {index}, byte 0)"
        else:
            text = str(error_for(code, index, 0, detail, schema_id=key, reason=reason))
        errors.append((code, index, 0, detail, text))
    out = np.ones(len(plan_ids), dtype=bool) if valid is None else valid.copy()
    out[rows] = False
    return out


def _no_columns(rows: int) -> pa.RecordBatch:
    """A batch of ``rows`` rows and no columns: what decodes when no schema defines the columns."""
    batch: pa.RecordBatch = pa.RecordBatch.from_struct_array(pa.nulls(rows, pa.struct([])))
    return batch


def _per_row_ids(values: Any) -> np.ndarray | list[Any]:
    """Per-row schema ids as int64 numpy (the common case) or a list (UUIDs, tuples, None)."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        if pa.types.is_integer(values.type) and values.null_count == 0:
            return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.int64)
        return list(values.to_pylist())
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        return values.astype(np.int64, copy=False)
    items = list(values)
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
        return np.asarray(items, dtype=np.int64)
    return items


def _metadata_ids(schema_ids: Any) -> Any:
    """``schema_ids`` with PIP-420 ``schema_id`` bytes read as the integer ids they hold."""
    if isinstance(schema_ids, (bytes, bytearray, memoryview)):
        found = wire.pulsar_schema_id_ints(pa.array([bytes(schema_ids)], pa.binary()))[0].as_py()
        if found is None:
            raise ValueError(
                f"schema id bytes {bytes(schema_ids).hex()!r} are no PIP-420 schema id (an optional FF byte, then 1 to 8 bytes)"
            )
        return found
    if isinstance(schema_ids, (pa.Array, pa.ChunkedArray)):
        kind = schema_ids.type
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind):
            return wire.pulsar_schema_id_ints(schema_ids)
        return schema_ids
    if isinstance(schema_ids, (list, tuple)) and any(isinstance(v, (bytes, bytearray, memoryview)) for v in schema_ids):
        return wire.pulsar_schema_id_ints(pa.array([None if v is None else bytes(v) for v in schema_ids], pa.binary()))
    return schema_ids


def _with_paths(keys: list[np.ndarray], paths: list[Any]) -> tuple[list[np.ndarray], list[tuple[int, ...]]]:
    """Per-row keys extended with the row's message-index path, numbered across all chunks:
    ``(keys, distinct paths)``; the keys sort by registry key, then path number. When every row
    has the same path (the common case) the keys stay as they are and one path is returned."""
    if all(len(local) == 1 for _, local in paths) and len({local[0] for _, local in paths}) <= 1:
        return keys, [paths[0][1][0]] if paths else []
    distinct: list[tuple[int, ...]] = []
    numbers: dict[tuple[int, ...], int] = {}
    out = []
    for k, (path_no, local) in zip(keys, paths):
        remap = np.empty(len(local), dtype=np.int32)
        for i, path in enumerate(local):
            if path not in numbers:
                numbers[path] = len(distinct)
                distinct.append(path)
            remap[i] = numbers[path]
        keyed = np.empty(len(k), dtype=np.dtype([("k", k.dtype), ("p", np.int32)]))
        keyed["k"] = k
        keyed["p"] = remap[path_no] if len(local) else 0
        out.append(keyed)
    return out, distinct


def _heads(chunk: Chunk) -> np.ndarray:
    """The first byte of each message of ``chunk``, its protocol byte (0 for an empty or null one)."""
    offsets = wide(chunk).offsets
    starts, ends = offsets[:-1], offsets[1:]
    present = ends > starts
    out = np.zeros(len(starts), dtype=np.uint8)
    out[present] = np.frombuffer(chunk.data, dtype=np.uint8)[starts[present]]
    return out


def _lengthed(
    fmt: PayloadFormat, segments: list[Segment], resolved: Resolved, heads: list[np.ndarray] | None
) -> tuple[list[Segment], np.ndarray]:
    """``segments`` with the rows a raw writer wrote raw in the format's own form (framed rows by
    their protocol byte in ``heads``, payloads without a prefix as ``written_raw`` says), and per
    row of the batch the bytes that put before its payload."""
    out: list[Segment] = []
    added: list[np.ndarray] = []
    for k, seg in enumerate(segments):
        n = len(seg.ends) - (1 if isinstance(seg.starts, (int, np.integer)) else 0)
        plan_ids = np.zeros(n, dtype=np.int32) if seg.plan_ids is None else seg.plan_ids
        if heads is None:
            rows = np.isin(plan_ids, list(resolved.raw_unframed))
        else:
            rows = np.zeros(n, dtype=bool)
            for position, under in resolved.raw_heads.items():
                rows |= (plan_ids == position) & np.isin(heads[k], list(under))
        if not rows.any():
            out.append(seg)
            added.append(np.zeros(n, dtype=np.int64))
            continue
        check_prefixes([seg])  # the copy drops the prefix the kernel would check as it reads
        starts, ends = seg.bounds()
        lengthed: Segment = fmt.with_lengths(seg, rows)  # type: ignore[attr-defined]
        new_starts, new_ends = lengthed.bounds()
        out.append(lengthed)
        added.append(np.where(rows, (new_ends - new_starts) - (ends - starts), 0))
    return out, np.concatenate(added) if added else np.zeros(0, dtype=np.int64)


def _unshifted(errors: list[Any], added: np.ndarray | None) -> list[Any]:
    """``errors`` (code, index, offset, detail) with offsets in the payloads as written, not in
    their lengthed copies (``added``: the bytes put before each row's payload)."""
    if added is None or not added.any():
        return errors
    return [(code, index, max(offset - int(added[index]), 0), detail) for code, index, offset, detail in errors]


def _first_valid_row(chunks: list[Chunk]) -> int:
    """The index of the batch's first non-null message (0 when every message is null)."""
    for c in chunks:
        if not c.length:
            continue
        if c.validity is None:
            return c.row
        if c.validity.any():
            return c.row + int(c.validity.argmax())
    return 0


def _first_keyed_row(rows: list[tuple[int, np.ndarray, np.ndarray | None]], unique: np.ndarray, position: int) -> int:
    """The index of the batch's first message whose key is ``unique[position]``; ``rows``: per
    chunk its first row, its rows' keys and which of them hold a message (None: all)."""
    for row, keys, valid in rows:
        hits = np.searchsorted(unique, keys) == position
        if valid is not None:
            hits &= valid
        if hits.any():
            return row + int(hits.argmax())
    return 0


def _first_rows(chunks: list[Chunk], rows: int) -> list[Chunk]:
    """The chunks of a batch's first ``rows`` messages (views, no copies)."""
    out = []
    for c in chunks:
        if c.row >= rows:
            break
        n = min(c.length, rows - c.row)
        valid = None if c.validity is None else c.validity[:n]
        out.append(Chunk(c.data, c.offsets[: n + 1], valid, c.row))
    return out


MIN_ROWS_PER_THREAD = 16_384
"""Rows below which a decode stays on one thread: splitting smaller batches costs more than it saves."""


def _split_rows(segments: list[Segment], total: int, threads: int) -> list[tuple[int, list[Segment]]]:
    """``segments`` cut into up to ``threads`` runs of consecutive rows: ``(first row, segments)``
    each (one run when the batch is small)."""
    count = min(threads, total // MIN_ROWS_PER_THREAD)
    if count <= 1:
        return [(0, segments)]
    bounds = [total * i // count for i in range(count + 1)]
    parts: list[tuple[int, list[Segment]]] = [(bounds[i], []) for i in range(count)]
    row = 0
    for seg in segments:
        n = len(seg.ends) - 1 if isinstance(seg.starts, (int, np.integer)) else len(seg.ends)
        for i in range(count):
            lo, hi = max(bounds[i], row), min(bounds[i + 1], row + n)
            if lo < hi:
                parts[i][1].append(_rows_of(seg, lo - row, hi - row))
        row += n
    return parts


def _rows_of(seg: Segment, lo: int, hi: int) -> Segment:
    """Rows ``lo:hi`` of one segment (views, no copies)."""
    valid = None if seg.validity is None else seg.validity[lo:hi]
    plan_ids = None if seg.plan_ids is None else seg.plan_ids[lo:hi]
    if isinstance(seg.starts, (int, np.integer)):
        return seg._replace(ends=seg.ends[lo : hi + 1], validity=valid, plan_ids=plan_ids)
    return seg._replace(starts=seg.starts[lo:hi], ends=seg.ends[lo:hi], validity=valid, plan_ids=plan_ids)


def _concat(batches: list[pa.RecordBatch], pool: ThreadPoolExecutor) -> pa.RecordBatch:
    """One batch of the parts' rows in order, its columns joined on the decoder's threads (Arrow
    copies without the GIL); dictionary columns (enums) with different dictionaries per part are
    unified first."""
    schema = batches[0].schema
    try:
        columns = pool.map(lambda i: pa.concat_arrays([b.column(i) for b in batches]), range(len(schema)))
        return pa.RecordBatch.from_arrays(list(columns), schema=schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        table = pa.Table.from_batches(batches).unify_dictionaries().combine_chunks()
        return table.to_batches()[0] if table.num_rows else batches[0]


def _distinct(live: list[np.ndarray]) -> np.ndarray:
    """The sorted distinct keys of a batch's rows; one comparison pass instead of a sort when every
    row has the same integer id (nearly every batch)."""
    if not live:
        return np.zeros(0, dtype=np.int64)
    keys = np.concatenate(live) if len(live) > 1 else live[0]
    if keys.dtype.names is None and len(keys) and keys.min() == keys.max():
        return keys[:1].copy()
    return np.unique(keys)


def _newest_last(keys: list[Any]) -> list[Any]:
    """Distinct ids in sort order (the newest last), or as first seen when they do not sort."""
    try:
        return sorted(keys)
    except TypeError:
        return keys
