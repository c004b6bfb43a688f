"""Top-level Avro ``bytes`` and ``string`` values as registries' serializers write them: raw,
without an Avro length.

Confluent's Avro serializers (Java's ``KafkaAvroSerializer``, confluent-kafka's ``AvroSerializer``)
special-case a value whose schema is the primitive ``bytes``: the bytes follow the wire prefix as
they are (``spec/wire-formats.md`` section 4.1), and their deserializers read them back the same
way. Hortonworks' serializers (section 5.2) write a ``bytes`` value raw under every Avro protocol
(0-3), and a ``string`` as its raw UTF-8 under protocols 1-3; protocol 0, their Confluent-compatible
handler, writes a string as Avro. So whether a message's value is raw depends on its protocol
byte, the first byte of the message (:func:`raw_heads`). The Avro kernels read Avro binary, where
both types are a zigzag length and the bytes; rather than a second kernel, the decoder gives such
rows that length (:func:`with_lengths`) and the encoder leaves it out (:class:`RawEncoder`). Other
registries' serializers (Apicurio, AWS Glue) write every value as Avro binary.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ... import wire
from ..base import Segment
from .schema import Primitive, Schema

__all__ = ["RawEncoder", "lengthed", "raw_heads", "with_lengths", "written_raw"]

_MAX_VARINT = 10  # bytes of a 64-bit varint
_ALL_HORTONWORKS_AVRO = frozenset({0, 1, 2, 3})


def raw_heads(model: Schema, protocol: Any) -> frozenset[int]:
    """The first bytes of the messages (``protocol``'s protocol bytes) under which its serializers
    write a value of the top-level schema ``model`` raw; empty when they always write Avro binary."""
    if not isinstance(model, Primitive) or model.logical is not None:
        return frozenset()
    if protocol is wire.CONFLUENT and model.type == "bytes":
        return frozenset({0})
    if protocol is wire.HORTONWORKS and model.type == "bytes":
        return _ALL_HORTONWORKS_AVRO
    if protocol is wire.HORTONWORKS and model.type == "string":
        return _ALL_HORTONWORKS_AVRO - {0}
    return frozenset()


def written_raw(model: Schema, protocol: Any) -> bool:
    """Whether the messages this package frames with ``protocol`` carry ``model``'s values raw, as
    the registry's serializers would write them: Confluent's ``00``; Hortonworks' protocol 3 (and
    its protocol-2 frame above 2^31-1, raw alike). Payloads without their prefix are read so too."""
    written = 0 if protocol is wire.CONFLUENT else 3
    return written in raw_heads(model, protocol)


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


class RawEncoder:
    """Writes a top-level ``bytes`` or ``string`` value raw (see the module notes), checked by the
    Avro encoder."""

    def __init__(self, avro: Any) -> None:
        self.avro = avro

    def encode(self, data: Any) -> pa.Array:
        """The bytes (a string's UTF-8) of each row's one column as they are (a null row stays null)."""
        written = self.avro.encode(data)  # the Avro encoder's checks and null handling
        column = data.column(0)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        large = pa.types.is_large_binary(column.type) or pa.types.is_large_string(column.type)
        raw = column.cast(pa.large_binary() if large else pa.binary())
        return pc.if_else(written.is_null(), pa.scalar(None, raw.type), raw)

    def encode_value(self, value: Any) -> bytes:
        """The value's bytes (a string's UTF-8) as they are."""
        self.avro.encode_value(value)  # refuses what the schema cannot hold, as for any Avro value
        return value.encode("utf-8") if isinstance(value, str) else bytes(value)
