"""Pulsar KeyValue payloads and PIP-420 KeyValue schema ids, per value and in bulk over Arrow.

Layouts (all lengths are ``i32`` big-endian)
--------------------------------------------
INLINE payload
    ``len(key) || key || len(value) || value``. A null key or value is written as length ``-1``
    followed by no bytes; an empty one as length ``0``.
PIP-420 KeyValue schema id (``KeyValue.generateKVSchemaId``)
    ``len(key id) || key id || len(value id) || value id``. An absent id (None or empty) is length
    ``0``, not ``-1``; when both ids are absent there is no schema id at all (``None``). On the wire
    it sits behind the ``FE`` magic byte, see :func:`pulsar_codec.wire.pulsar_schema_id`.
pulsar-rs (the Rust client) KeyValue schema id - not read here
    pulsar-rs has no PIP-420 support on its default branch (streamnative/pulsar-rs at 95a0d73,
    June 2026: only ``schema_version``). Its unmerged branch ``feat/external-schema-registry``
    (PR #399, ``src/schema/schema_id_util.rs``, ``generate_kv_schema_id``) writes
    ``FE || u32 BE len(key id) || key id || value id``: the value id is the rest, with no length,
    unlike Java's. Its KeyValue payload (``src/schema/key_value.rs``) likewise has no value length.
    Read as Java's layout, such an id usually fails (``KV_LENGTH_PAST_END``, ``KV_TRAILING_BYTES``),
    but a value id that itself looks like ``i32 len || bytes`` (``00 00 00 00`` for one) is misread.
SEPARATED
    the key travels in ``MessageMetadata.partition_key`` as standard Base64 with padding and
    ``partition_key_b64_encoded = true``; a null key sets ``null_partition_key``; the payload is
    the value alone and a null value sets ``null_value`` (:func:`encode_separated`).

Strictness
----------
Reading is stricter than Java's ``KeyValue.decode``, which ignores trailing bytes after the value
and fails with an unchecked exception on other malformed input: here trailing bytes, a length other
than ``-1`` below zero, a length that runs past the end and fewer than 4 bytes left for a length
field all raise :class:`~pulsar_codec.errors.KeyValueFormatError` with the message index and byte
offset. In schema ids, Java reads any length ``<= 0`` as "no id"; we accept ``0`` and ``-1`` as
"no id" and treat other negative lengths as errors. A null or empty schema id reads as two absent
ids.

Java and C++ conventions
------------------------
The C++ client (``KeyValueImpl``) writes ``-1`` for an *empty* key or value, not only for a null
one, and reads ``-1`` back as empty (it has no null component); Java therefore sees an empty C++
key as null. Every INLINE function takes ``convention="java"`` (default: null <-> ``-1``, empty <->
``0``) or ``convention="cpp"`` (writes ``-1`` for empty and for null, reads ``-1`` as empty), so a
reader of C++-produced topics gets ``b""`` where C++ meant an empty string.

Bulk results
------------
:func:`split_inline` and :func:`unpack_schema_ids` copy the parts into fresh ``binary`` buffers
(``large_binary`` past 2 GiB) with one ``memcpy`` per part in the compiled kernel: the classic
layout every consumer (Spark, Parquet, :func:`pulsar_codec.primitives.decode_array`) reads
without conversion. Pass ``views=True`` for zero-copy ``binary_view`` arrays whose data buffers
are the input's own (as :func:`pulsar_codec.wire.unframe` returns); that pays off for large values.
"""

from __future__ import annotations

import base64
import enum
import struct
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from . import _base64
from ._arrow import Chunk, around_bad_rows, as_binary_array, binary_chunks, validity_buffer, validity_of
from ._kernels import _backend, defs
from ._kernels import keyvalue_py as _pure
from ._kernels._typing import KernelError
from .errors import EncodeError, KeyValueFormatError, raise_for

__all__ = [
    "JAVA",
    "CPP",
    "KeyValueEncodingType",
    "encode_inline",
    "decode_inline",
    "split_inline",
    "split_inline_rows",
    "join_inline",
    "pack_schema_id",
    "unpack_schema_id",
    "pack_schema_ids",
    "unpack_schema_ids",
    "encode_partition_key",
    "decode_partition_key",
    "decode_partition_keys",
    "encode_separated",
    "decode_separated",
]

#: ``convention`` of the INLINE functions: Java's reading of lengths (-1 is null, 0 is empty).
JAVA = "java"
#: ``convention`` of the INLINE functions: the C++ client's (-1 for empty and null, read as empty).
CPP = "cpp"

_BoolArray = npt.NDArray[np.bool_]


class KeyValueEncodingType(enum.Enum):
    """Where a KeyValue schema puts the key: INLINE (in the payload) or SEPARATED (in the metadata)."""

    INLINE = "INLINE"
    SEPARATED = "SEPARATED"

    @classmethod
    def parse(cls, value: KeyValueEncodingType | str) -> KeyValueEncodingType:
        """The member for itself or its name, case-insensitively (``"separated"``)."""
        if isinstance(value, KeyValueEncodingType):
            return value
        try:
            return cls[str(value).strip().upper()]
        except KeyError:
            raise ValueError(f"unknown KeyValue encoding type {value!r}, expected INLINE or SEPARATED") from None


_INT32_MAX = 2**31 - 1
_MINUS_ONE = b"\xff\xff\xff\xff"
_pack_len = struct.Struct(">i").pack


def _inline_mode(convention: str) -> int:
    if convention == JAVA:
        return defs.MODE_INLINE
    if convention == CPP:
        return defs.MODE_INLINE_CPP
    raise ValueError(f"convention must be {JAVA!r} or {CPP!r}, got {convention!r}")


def _raise(error: KernelError, row_base: int, mode: int) -> NoReturn:
    code, index, offset, detail = error
    ids = mode == defs.MODE_SCHEMA_ID
    # the key's length field is always at offset 0, so the offset names the part
    part = "key" if offset == 0 else "value"
    if ids:
        part += " schema id"
    raise_for(code, row_base + index, offset, detail, part=part)


def _as_part(value: Any, what: str) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise TypeError(f"{what} must be bytes (encode it with its schema first), got str")
    try:
        data = value if isinstance(value, bytes) else memoryview(value).cast("B").tobytes()
    except TypeError:
        raise TypeError(f"{what} must be bytes-like or None, got {type(value).__name__}") from None
    if len(data) > _INT32_MAX:
        raise EncodeError(f"{what} of {len(data)} bytes does not fit a 32-bit length field")
    return data


# -- INLINE, per value ----------------------------------------------------------------------------


def encode_inline(key: bytes | None, value: bytes | None, *, convention: str = JAVA) -> bytes:
    """Encode one INLINE KeyValue payload.

    Parameters
    ----------
    key, value : bytes-like or None
        The already encoded key and value (None for a null component).
    convention : {"java", "cpp"}
        ``"java"`` writes length -1 for None and 0 for ``b""``; ``"cpp"`` writes -1 for both, as
        the C++ client does.

    Returns
    -------
    bytes
    """
    mode = _inline_mode(convention)
    out: list[bytes] = []
    for part in (_as_part(key, "key"), _as_part(value, "value")):
        if part is None or (mode == defs.MODE_INLINE_CPP and not part):
            out.append(_MINUS_ONE)
        else:
            out.append(_pack_len(len(part)))
            out.append(part)
    return b"".join(out)


def _one(payload: Any, mode: int) -> tuple[bytes | None, bytes | None]:
    view = memoryview(payload).cast("B")
    # per value: the pure twin's single-message parser is cheaper than a kernel call
    err, ks, ke, kv, vs, ve, vv = _pure.split_one(view, 0, len(view), mode)
    if err is not None:
        _raise((err[0], 0, err[1], err[2]), 0, mode)
    return (bytes(view[ks:ke]) if kv else None, bytes(view[vs:ve]) if vv else None)


def decode_inline(payload: bytes | None, *, convention: str = JAVA) -> tuple[bytes | None, bytes | None]:
    """Split one INLINE KeyValue payload into ``(key, value)``.

    A null payload gives ``(None, None)``. With ``convention="java"`` a length of -1 reads as None;
    with ``"cpp"`` it reads as ``b""``.

    Raises
    ------
    KeyValueFormatError
        Fewer than 4 bytes for a length, a negative length other than -1, a length past the end,
        or trailing bytes after the value (Java ignores those; we do not).
    """
    if payload is None:
        return None, None
    return _one(payload, _inline_mode(convention))


# -- bulk split -------------------------------------------------------------------------------------


def _binary_from(data: Any, offsets: npt.NDArray[np.int64], valid: _BoolArray | None, n: int) -> pa.Array:
    """A binary (large_binary past 2 GiB) array from a data buffer and int64 offsets."""
    large = int(offsets[-1]) > _INT32_MAX
    typ = pa.large_binary() if large else pa.binary()
    offsets_out = offsets if large else offsets.astype(np.int32)
    null_count = 0 if valid is None else int(n - np.count_nonzero(valid))
    return pa.Array.from_buffers(
        typ, n, [validity_buffer(valid), pa.py_buffer(offsets_out), pa.py_buffer(data)], null_count=null_count
    )


def _mask_of(valid_parts: list[npt.NDArray[np.uint8]], chunks: list[Chunk], total: int) -> _BoolArray | None:
    """Validity of all rows from per-chunk uint8 masks; None when every row is valid."""
    if len(valid_parts) == 1:
        valid: _BoolArray = valid_parts[0].view(bool)
    else:
        valid = np.zeros(total, dtype=bool)
        for chunk, part in zip(chunks, valid_parts):
            valid[chunk.row : chunk.row + chunk.length] = part.view(bool)
    return None if valid.all() else valid


def _concat_binary(arrays: list[pa.Array]) -> pa.Array:
    if len(arrays) == 1:
        return arrays[0]
    size = sum(a.buffers()[2].size if a.buffers()[2] is not None else 0 for a in arrays)
    if size > _INT32_MAX:
        return pa.concat_arrays([a.cast(pa.large_binary()) for a in arrays])
    return pa.concat_arrays(arrays)


def _split_bulk(payloads: Any, mode: int, views: bool) -> tuple[pa.Array, pa.Array]:
    kernels = _backend.active()
    chunks, total = binary_chunks(payloads)
    if total == 0:
        empty = pa.array([], pa.binary_view() if views else pa.binary())
        return empty, empty
    if not views:
        # one fused pass per chunk: validate, then copy both parts into Arrow-ready buffers
        keys: list[pa.Array] = []
        values: list[pa.Array] = []
        for chunk in chunks:
            error, kdata, koffs, kvalid, vdata, voffs, vvalid = kernels.keyvalue.split_copy(
                chunk.data, chunk.offsets, chunk.validity, mode
            )
            if error is not None:
                _raise(error, chunk.row, mode)
            for out, data, offs, valid in ((keys, kdata, koffs, kvalid), (values, vdata, voffs, vvalid)):
                mask = valid.view(bool)
                null_count = chunk.length - int(np.count_nonzero(mask))
                out.append(
                    pa.Array.from_buffers(
                        pa.binary(),
                        chunk.length,
                        [validity_buffer(mask) if null_count else None, pa.py_buffer(offs), pa.py_buffer(data)],
                        null_count=null_count,
                    )
                )
        return _concat_binary(keys), _concat_binary(values)
    results: list[tuple[Any, ...]] = []
    for chunk in chunks:
        result = kernels.keyvalue.split(chunk.data, chunk.offsets, chunk.validity, mode)
        if result[0] is not None:
            _raise(result[0], chunk.row, mode)
        results.append(result)
    outputs = []
    for s_at, e_at, v_at in ((1, 2, 3), (4, 5, 6)):
        valid = _mask_of([r[v_at] for r in results], chunks, total)
        view_parts = [
            kernels.wire.binary_views(chunk.data, r[s_at], r[e_at], r[v_at], k)
            for k, (chunk, r) in enumerate(zip(chunks, results))
        ]
        buffers = np.concatenate(view_parts) if len(view_parts) > 1 else view_parts[0]
        null_count = 0 if valid is None else int(total - np.count_nonzero(valid))
        outputs.append(
            pa.Array.from_buffers(
                pa.binary_view(),
                total,
                [validity_buffer(valid), pa.py_buffer(buffers)] + [c.data for c in chunks],
                null_count=null_count,
            )
        )
    return outputs[0], outputs[1]


def split_inline(payloads: Any, *, convention: str = JAVA, views: bool = False) -> tuple[pa.Array, pa.Array]:
    """Split many INLINE KeyValue payloads into a key column and a value column.

    Parameters
    ----------
    payloads : pa.BinaryArray, pa.LargeBinaryArray, pa.ChunkedArray or sequence of bytes / None
        INLINE payloads; a null payload gives a null key and a null value.
    convention : {"java", "cpp"}
        How a length of -1 reads: None (Java) or ``b""`` (C++).
    views : bool
        False (default): fresh ``binary`` arrays (``large_binary`` past 2 GiB). True: zero-copy
        ``binary_view`` arrays over the input's data buffers.

    Returns
    -------
    (keys, values) : tuple of pa.Array

    Raises
    ------
    KeyValueFormatError
        For the first malformed payload, with its index and byte offset.
    """
    return _split_bulk(payloads, _inline_mode(convention), views)


def split_inline_rows(payloads: Any, *, convention: str = JAVA) -> tuple[pa.Array, pa.Array, list[KeyValueFormatError]]:
    """:func:`split_inline` stepping around malformed payloads instead of failing the batch.

    Returns
    -------
    (keys, values, errors)
        A malformed payload's key and value are null; ``errors`` holds one
        :class:`~pulsar_codec.errors.KeyValueFormatError` per malformed payload, its ``index``
        counted in ``payloads``. Good batches cost one :func:`split_inline` call.
    """
    arr = as_binary_array(payloads)
    null_row = (pa.nulls(1, pa.binary()), pa.nulls(1, pa.binary()))
    pieces, errors = around_bad_rows(
        len(arr),
        lambda lo, hi: split_inline(arr.slice(lo, hi - lo), convention=convention),
        null_row,
        KeyValueFormatError,
    )
    return _joined([k for k, _ in pieces]), _joined([v for _, v in pieces]), errors


def _joined(parts: list[pa.Array]) -> pa.Array:
    """One binary array of ``parts`` (large_binary when one of them is)."""
    if not parts:
        return pa.array([], pa.binary())
    if len(parts) == 1:
        return parts[0]
    wide = pa.large_binary() if any(p.type == pa.large_binary() for p in parts) else pa.binary()
    return pa.concat_arrays([p if p.type == wide else p.cast(wide) for p in parts])


# -- bulk join ------------------------------------------------------------------------------------


def _flat(arr: pa.Array) -> tuple[pa.Buffer, npt.NDArray[np.int64], _BoolArray | None]:
    """Data buffer, absolute int64 offsets (n + 1) and validity of a binary/large_binary array."""
    large = arr.type in (pa.large_binary(), pa.large_string())
    bufs = arr.buffers()
    n = len(arr)
    raw = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32)[arr.offset : arr.offset + n + 1]
    # widen into Arrow's pool: its memory stays warm, a fresh numpy buffer faults on every page
    offsets = np.frombuffer(pa.allocate_buffer(8 * (n + 1)), dtype=np.int64)
    offsets[:] = raw
    data = bufs[2] if bufs[2] is not None else pa.py_buffer(b"")
    return data, offsets, validity_of(arr)


def _column_pair(a: Any, b: Any, names: tuple[str, str]) -> tuple[pa.Array, pa.Array]:
    """Normalise two columns; a single bytes value (or None) is repeated to the other's length."""
    scalar_a = a is None or isinstance(a, (bytes, bytearray, memoryview))
    scalar_b = b is None or isinstance(b, (bytes, bytearray, memoryview))
    if scalar_a and scalar_b:
        raise TypeError(f"at least one of {names[0]} and {names[1]} must be a column; use the per-value functions")
    if scalar_a:
        b = as_binary_array(b)
        a = pa.array([None if a is None else bytes(a)] * len(b), pa.binary())
    elif scalar_b:
        a = as_binary_array(a)
        b = pa.array([None if b is None else bytes(b)] * len(a), pa.binary())
    else:
        a, b = as_binary_array(a), as_binary_array(b)
    if len(a) != len(b):
        raise EncodeError(f"{len(a)} {names[0]} for {len(b)} {names[1]}")
    return a, b


def _join_bulk(a: Any, b: Any, mode: int, names: tuple[str, str]) -> pa.Array:
    a, b = _column_pair(a, b, names)
    n = len(a)
    parts: list[Any] = []
    for arr, what in ((a, names[0]), (b, names[1])):
        data, offsets, valid = _flat(arr)
        if n and int(offsets[-1] - offsets[0]) > _INT32_MAX and int(np.diff(offsets).max()) > _INT32_MAX:
            lengths = np.diff(offsets)
            i = int(np.flatnonzero(lengths > _INT32_MAX)[0])
            raise EncodeError(f"{what[:-1]} {i} of {int(lengths[i])} bytes does not fit a 32-bit length field", index=i)
        parts += (data, offsets, valid)
    data, offsets, valid = _backend.active().keyvalue.join(*parts, mode)
    valid_mask = None if valid is None else np.asarray(valid, dtype=bool)
    return _binary_from(data, offsets, valid_mask, n)


def join_inline(keys: Any, values: Any, *, convention: str = JAVA) -> pa.Array:
    """Encode many INLINE KeyValue payloads from a key column and a value column.

    Parameters
    ----------
    keys, values : binary or string arrays, ChunkedArrays or sequences of bytes / None
        Equal lengths; either may also be a single bytes value (or None) used for every row.
        Null entries are null components.
    convention : {"java", "cpp"}
        As in :func:`encode_inline`.

    Returns
    -------
    pa.Array
        ``binary`` (``large_binary`` past 2 GiB); every row is valid, since a row with a null key
        and a null value is the payload ``FF FF FF FF FF FF FF FF``.
    """
    return _join_bulk(keys, values, _inline_mode(convention), ("keys", "values"))


# -- PIP-420 KeyValue schema ids ------------------------------------------------------------------


def pack_schema_id(key_id: bytes | None, value_id: bytes | None) -> bytes | None:
    """Combine a key schema id and a value schema id as PIP-420 ``generateKVSchemaId`` does.

    An absent id (None or empty) is written as length 0; when both are absent the result is None
    (no schema id is set on the message).
    """
    key = _as_part(key_id, "key schema id") or b""
    value = _as_part(value_id, "value schema id") or b""
    if not key and not value:
        return None
    return b"".join((_pack_len(len(key)), key, _pack_len(len(value)), value))


def unpack_schema_id(kv_id: bytes | None) -> tuple[bytes | None, bytes | None]:
    """Split a PIP-420 KeyValue schema id (without its ``FE`` magic byte) into ``(key_id, value_id)``.

    Lengths 0 and -1 give None; None or an empty id gives ``(None, None)``.

    Raises
    ------
    KeyValueFormatError
        Truncated length, a negative length other than -1, a length past the end, trailing bytes.
    """
    if kv_id is None:
        return None, None
    return _one(kv_id, defs.MODE_SCHEMA_ID)


def pack_schema_ids(key_ids: Any, value_ids: Any) -> pa.Array:
    """Bulk :func:`pack_schema_id`: a ``binary`` array, null where both ids are absent.

    Either argument may be a single bytes value (or None) used for every row.
    """
    return _join_bulk(key_ids, value_ids, defs.MODE_SCHEMA_ID, ("key ids", "value ids"))


def unpack_schema_ids(kv_ids: Any, *, views: bool = False) -> tuple[pa.Array, pa.Array]:
    """Bulk :func:`unpack_schema_id`: ``(key_ids, value_ids)`` binary arrays, null where absent.

    ``views`` as in :func:`split_inline`.
    """
    return _split_bulk(kv_ids, defs.MODE_SCHEMA_ID, views)


# -- SEPARATED --------------------------------------------------------------------------------------


def encode_partition_key(key: bytes | bytearray | memoryview) -> tuple[str, bool]:
    """The ``(partition_key, partition_key_b64_encoded)`` a Java producer writes for key bytes.

    Standard Base64 (RFC 4648 alphabet, ``=`` padding, no line breaks) and the flag True. A null
    key has no partition key at all: use :func:`encode_separated`, which sets ``null_partition_key``.
    """
    if key is None:
        raise TypeError("a null key has no partition key; use encode_separated(), which sets null_partition_key")
    data = _as_part(key, "key")
    assert data is not None  # None was refused above
    return base64.b64encode(data).decode("ascii"), True


def decode_partition_key(
    partition_key: str | bytes | None, b64_encoded: bool, null_partition_key: bool = False
) -> bytes | None:
    """The key bytes of a SEPARATED KeyValue message, as Java's ``MessageImpl.getKeyBytes``.

    None when ``null_partition_key`` is set or there is no partition key; the Base64-decoded key when
    ``b64_encoded``; otherwise the UTF-8 bytes of the key string (this is what the C++ client writes:
    the raw key, never Base64, never the flag). Padding is optional, as in ``java.util.Base64``.

    Raises
    ------
    KeyValueFormatError
        ``KV_INVALID_BASE64``: a character outside the standard alphabet, misplaced padding or a
        length that cannot be Base64; the offset is the character where it fails.
    """
    if null_partition_key or partition_key is None:
        return None
    if not b64_encoded:
        return partition_key.encode("utf-8") if isinstance(partition_key, str) else bytes(partition_key)
    return _base64.decode(partition_key, 0)


def decode_partition_keys(partition_keys: Any, b64_encoded: Any = True, null_partition_keys: Any = None) -> pa.Array:
    """Bulk :func:`decode_partition_key` over a column of partition keys.

    Parameters
    ----------
    partition_keys : string or binary array, ChunkedArray or sequence of str / None
    b64_encoded : bool or a boolean column
        The ``partition_key_b64_encoded`` flag, one for all rows or one per row (null reads False).
    null_partition_keys : None or a boolean column
        The ``null_partition_key`` flags (null reads False).

    Returns
    -------
    pa.Array
        ``binary``; null where the key is null. Well-padded Base64 columns are decoded with numpy
        in one pass; anything else falls back to a per-row decode.
    """
    if not isinstance(partition_keys, (pa.Array, pa.ChunkedArray)):
        partition_keys = pa.array([t.encode("utf-8") if isinstance(t, str) else t for t in partition_keys], pa.binary())
    arr = as_binary_array(partition_keys)
    n = len(arr)
    valid = np.ones(n, dtype=bool) if arr.null_count == 0 else np.asarray(validity_of(arr), dtype=bool)
    if null_partition_keys is not None:
        flags = _as_bool_column(null_partition_keys, n, "null_partition_keys")
        valid &= ~flags
    if isinstance(b64_encoded, (bool, np.bool_)):
        b64 = np.full(n, bool(b64_encoded))
    else:
        b64 = _as_bool_column(b64_encoded, n, "b64_encoded")
    data, offsets, _ = _flat(arr)
    decoded = _base64.decode_column(data, offsets, valid, b64) if n else None
    if decoded is not None:
        return _binary_from(decoded[0], decoded[1], None if valid.all() else valid, n)
    raw = arr.to_pylist()
    out: list[bytes | None] = []
    for i, text in enumerate(raw):
        if not valid[i]:
            out.append(None)
        elif b64[i]:
            out.append(_base64.decode(text, i))
        else:
            out.append(text.encode("utf-8") if isinstance(text, str) else bytes(text))
    return pa.array(out, pa.binary())


def _as_bool_column(values: Any, n: int, what: str) -> _BoolArray:
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(list(values), pa.bool_())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if len(arr) != n:
        raise ValueError(f"{len(arr)} {what} flags for {n} partition keys")
    return np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


def encode_separated(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """The message fields a Java producer sets for a SEPARATED KeyValue.

    Returns
    -------
    dict
        ``partition_key`` (Base64 text, or None for a null key), ``partition_key_b64_encoded``,
        ``null_partition_key``, ``payload`` (the value bytes; ``b""`` for a null value) and
        ``null_value``. ``decode_separated(**encode_separated(k, v)) == (k, v)``.
    """
    key_b = _as_part(key, "key")
    value_b = _as_part(value, "value")
    return {
        "partition_key": None if key_b is None else encode_partition_key(key_b)[0],
        "partition_key_b64_encoded": key_b is not None,
        "null_partition_key": key_b is None,
        "payload": b"" if value_b is None else value_b,
        "null_value": value_b is None,
    }


def decode_separated(
    *,
    partition_key: str | bytes | None = None,
    partition_key_b64_encoded: bool = False,
    null_partition_key: bool = False,
    payload: bytes | None = None,
    null_value: bool = False,
) -> tuple[bytes | None, bytes | None]:
    """``(key, value)`` bytes of a SEPARATED KeyValue message from its metadata fields and payload.

    The key follows :func:`decode_partition_key`; the value is None when ``null_value`` is set or
    there is no payload.
    """
    key = decode_partition_key(partition_key, partition_key_b64_encoded, null_partition_key)
    value = None if (null_value or payload is None) else bytes(payload)
    return key, value
