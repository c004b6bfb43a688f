"""Top-level Avro ``bytes`` values as Confluent's serializers write them: raw, without an Avro length.

Confluent's Avro serializers (Java's ``KafkaAvroSerializer``, confluent-kafka's ``AvroSerializer``)
special-case a value whose schema is the primitive ``bytes``: the bytes follow the wire prefix as
they are (``spec/wire-formats.md`` section 4.1), and their deserializers read them back the same
way. The Avro kernels read Avro binary, where ``bytes`` is a zigzag length and the bytes; rather
than a second kernel, the decoder gives such rows that length (:func:`with_lengths`) and the
encoder leaves it out (:class:`RawBytesEncoder`). Other registries' serializers (Apicurio, AWS
Glue) write every value as Avro binary.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ... import wire
from ..base import Segment
from .schema import Primitive, Schema

__all__ = ["RawBytesEncoder", "lengthed", "with_lengths", "written_raw"]

_MAX_VARINT = 10  # bytes of a 64-bit varint


def written_raw(model: Schema, protocol: Any) -> bool:
    """Whether the serializers of ``protocol`` write a value of the top-level schema ``model`` raw:
    Confluent's (``00`` + id) for the primitive ``bytes``."""
    return (
        protocol is wire.CONFLUENT and isinstance(model, Primitive) and model.type == "bytes" and model.logical is None
    )


def _varint_sizes(values: np.ndarray) -> np.ndarray:
    """Bytes of the unsigned varint of each value (0 stays 1 byte)."""
    sizes = np.ones(len(values), dtype=np.int64)
    rest = values >> 7
    while rest.any():
        sizes += rest > 0
        rest >>= 7
    return sizes


def lengthed(body: bytes) -> bytes:
    """One raw ``bytes`` body as Avro binary: its zigzag length, then the bytes."""
    n, out = len(body) * 2, bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + body


def with_lengths(seg: Segment, rows: np.ndarray) -> Segment:
    """``seg`` with an Avro length before the body of each row where ``rows`` is True.

    The segment's bodies are copied into one new buffer (the rows' order kept), so ``starts`` and
    ``ends`` become arrays and the prefix check of the one-id form is left to the caller (check it
    before: :func:`~pulsar_codec.formats.base.check_prefixes`).
    """
    data = np.frombuffer(seg.data, dtype=np.uint8)
    ends = np.asarray(seg.ends, dtype=np.int64)
    if isinstance(seg.starts, (int, np.integer)):  # message offsets; the body after the prefix
        starts, ends = ends[:-1] + int(seg.starts), ends[1:]
    else:
        starts = np.asarray(seg.starts, dtype=np.int64)
    n = len(ends)
    present = np.ones(n, dtype=bool) if seg.validity is None else np.asarray(seg.validity, dtype=bool)
    lens = np.where(present, np.maximum(ends - starts, 0), 0)
    rows = rows & present
    zigzag = np.where(rows, lens * 2, 0)
    heads = np.where(rows, _varint_sizes(zigzag), 0)
    new_ends = np.cumsum(heads + lens)
    new_starts = new_ends - heads - lens
    out = np.empty(int(new_ends[-1]) if n else 0, dtype=np.uint8)
    left, at, todo = zigzag.copy(), new_starts.copy(), rows.copy()
    for _ in range(_MAX_VARINT):
        if not todo.any():
            break
        more = left >= 0x80
        out[at[todo]] = ((left & 0x7F) | np.where(more, 0x80, 0))[todo].astype(np.uint8)
        left >>= 7
        at += 1
        todo &= more
    total = int(lens.sum())
    if total:  # every body byte to its new place, in one gather
        row = np.repeat(np.arange(n), lens)
        within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
        out[new_starts[row] + heads[row] + within] = data[starts[row] + within]
    return Segment(pa.py_buffer(out), new_starts, new_ends, seg.validity, seg.plan_ids, None)


class RawBytesEncoder:
    """Writes a top-level ``bytes`` value raw (see the module notes), checked by the Avro encoder."""

    def __init__(self, avro: Any) -> None:
        self.avro = avro

    def encode(self, data: Any) -> pa.Array:
        """The bytes of each row's one column as they are (a null row stays null)."""
        written = self.avro.encode(data)  # the Avro encoder's checks and null handling
        column = data.column(0)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        raw = column.cast(pa.large_binary() if pa.types.is_large_binary(column.type) else pa.binary())
        return pc.if_else(written.is_null(), pa.scalar(None, raw.type), raw)

    def encode_value(self, value: Any) -> bytes:
        """The value's bytes as they are."""
        self.avro.encode_value(value)  # refuses what is not bytes, as for any Avro bytes value
        return bytes(value)
