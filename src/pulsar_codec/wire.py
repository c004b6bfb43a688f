"""Schema-registry wire prefixes: per message and in bulk over Arrow arrays.

Protocols
---------
``CONFLUENT``                 ``00 || u32 BE id || payload`` (Confluent, Karapace, Redpanda, Apicurio ccompat)
``CONFLUENT_PROTOBUF``        as above, then the Protobuf message-index array (zigzag varints;
                              ``[0]`` is written as the single byte ``00``)
``CONFLUENT_GUID``            ``01 || 16-byte GUID`` (Confluent's 2025 header form; the header value
                              ``__value_schema_id`` / ``__key_schema_id``, payload then unprefixed)
``CONFLUENT_GUID_PROTOBUF``   the GUID form followed by a message-index array
``HORTONWORKS``               protocol byte 0-4: 0/3/4 ``i32`` version id, 1 ``i64`` metadata id +
                              ``i32`` version, 2 ``i64`` version id. Writes protocol 3, or a full
                              protocol-2 frame for ids above 2**31 - 1. In header mode the header
                              ``value.schema.version.id`` holds exactly this prefix.
``APICURIO``                  Apicurio v2 default: ``00 || i64 BE globalId``
``APICURIO_V3``               Apicurio v3 default: ``00 || i32 BE contentId``
``AWS_GLUE``                  AWS Glue Schema Registry: ``03 || compression || 16-byte schema version
                              UUID || body``; compression ``00`` none, ``05`` zlib (the body is then
                              a zlib stream, inflated on read into a new buffer, at most
                              ``max_inflated`` bytes per message, 64 MiB by default)

AWS Glue facts, from the serializer's source (github.com/awslabs/aws-glue-schema-registry):
``AWSSchemaRegistryConstants`` sets the header version byte to 3, the compression byte to 5 (zlib)
or 0 (none) and the UUID to 16 bytes (an 18-byte header). ``SerializationDataEncoder`` writes the
UUID as its most then least significant 64 bits, big-endian (``ByteBuffer`` order), which is the
UUID's canonical byte order. ``GlueSchemaRegistryCompressionHandler`` compresses with
``java.util.zip.Deflater()`` and inflates with ``Inflater()``, both in their default wrapped mode:
the body is a zlib stream (RFC 1950 header and Adler-32 trailer), not raw deflate.
``GlueSchemaRegistryDeserializerDataParser`` refuses data under 18 bytes, another header version
or another compression byte, and reads whatever follows the stream's end as nothing (Java's
``Inflater`` stops at the end of the stream), as :func:`unframe` does here. The schema id is a
``uuid.UUID`` (``fixed_size_binary(16)`` in bulk), as for ``CONFLUENT_GUID``: a registry Mapping
may be keyed by the UUID or its canonical text.

PIP-420 ``MessageMetadata.schema_id`` values carry a magic byte instead: ``FF || id`` for a value
schema id and ``FE || kv id`` for a KeyValue schema id (:func:`pulsar_schema_id`,
:func:`strip_pulsar_schema_id`).

Bulk results are zero copy: :func:`unframe` returns the payloads as an Arrow ``binary_view`` array
whose data buffers are the input's own (only 16-byte views are new). Cast it with
``framed.payloads.cast(pa.binary())`` where a consumer needs the classic layout (that copies).
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ._arrow import Chunk, as_binary_array, binary_chunks, bool_mask, validity_buffer
from ._glue import GLUE_PREFIX, GLUE_ZLIB, inflate_rows, point_at_inflated
from ._kernels import _backend, defs
from .errors import EncodeError, ErrorCode, raise_for

if TYPE_CHECKING:
    from ._kernels.wire_py import UnframeResult

__all__ = [
    "Protocol",
    "ConfluentProtocol",
    "HortonworksProtocol",
    "ApicurioProtocol",
    "GlueProtocol",
    "CONFLUENT",
    "CONFLUENT_PROTOBUF",
    "CONFLUENT_GUID",
    "CONFLUENT_GUID_PROTOBUF",
    "HORTONWORKS",
    "APICURIO",
    "APICURIO_V3",
    "AWS_GLUE",
    "DEFAULT_MAX_INFLATED",
    "PROTOCOLS",
    "protocol_by_name",
    "Framed",
    "unframe",
    "frame",
    "encode_message_indexes",
    "pulsar_schema_id",
    "strip_pulsar_schema_id",
    "is_keyvalue_schema_id",
    "strip_pulsar_schema_ids",
    "pulsar_schema_id_ints",
    "apicurio_header_value",
    "apicurio_header_id",
    "CONFLUENT_KEY_SCHEMA_ID_HEADER",
    "CONFLUENT_VALUE_SCHEMA_ID_HEADER",
    "HORTONWORKS_KEY_HEADER",
    "HORTONWORKS_VALUE_HEADER",
    "APICURIO_KEY_GLOBAL_ID_HEADER",
    "APICURIO_VALUE_GLOBAL_ID_HEADER",
    "APICURIO_KEY_CONTENT_ID_HEADER",
    "APICURIO_VALUE_CONTENT_ID_HEADER",
]

CONFLUENT_KEY_SCHEMA_ID_HEADER = "__key_schema_id"
CONFLUENT_VALUE_SCHEMA_ID_HEADER = "__value_schema_id"
HORTONWORKS_KEY_HEADER = "key.schema.version.id"
HORTONWORKS_VALUE_HEADER = "value.schema.version.id"
APICURIO_KEY_GLOBAL_ID_HEADER = "apicurio.key.globalId"
APICURIO_VALUE_GLOBAL_ID_HEADER = "apicurio.value.globalId"
APICURIO_KEY_CONTENT_ID_HEADER = "apicurio.key.contentId"
APICURIO_VALUE_CONTENT_ID_HEADER = "apicurio.value.contentId"


def _zigzag(n: int) -> bytes:
    v = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def encode_message_indexes(indexes: Sequence[int] | None) -> bytes:
    """Encode a Protobuf message-index path; ``None`` and ``[0]`` give the one-byte shortcut ``00``."""
    if indexes is None:
        return b"\x00"
    indexes = [int(i) for i in indexes]
    if indexes == [0]:
        return b"\x00"
    if not 0 < len(indexes) <= defs.MAX_INDEXES:
        raise EncodeError(f"message-index array of length {len(indexes)} out of range (1 to {defs.MAX_INDEXES})")
    for i in indexes:
        if not -(2**63) <= i < 2**63:
            raise EncodeError(f"message index {i} does not fit in 64 bits")
    return _zigzag(len(indexes)) + b"".join(_zigzag(i) for i in indexes)


@dataclass(frozen=True)
class Protocol:
    """A wire-prefix protocol. Use the module constants (``wire.CONFLUENT``, ...)."""

    name: str
    kind: int
    expected: str  # what a valid first byte looks like, for error messages
    guid: bool = False  # schema ids are 16-byte GUIDs (uuid.UUID)
    protobuf: bool = False  # a Protobuf message-index array follows the id

    def error_context(self, code: int) -> dict[str, object]:
        """The template words (``expected``, ``protocol``) of a wire error with status ``code``."""
        return {"expected": self.expected, "protocol": self.name}

    # -- per message -------------------------------------------------------------------------
    def pack(
        self,
        schema_id: Any,
        payload: bytes,
        *,
        message_indexes: Sequence[int] | None = None,
        compression: str | None = None,
    ) -> bytes:
        """Prefix one payload with ``schema_id`` (``compression`` as for :func:`frame`)."""
        if not isinstance(payload, (bytes, bytearray, memoryview)):
            raise TypeError(f"payload must be bytes, bytearray or memoryview, not {type(payload).__name__}")
        framed = frame([bytes(payload)], [schema_id], self, message_indexes=message_indexes, compression=compression)
        message: bytes = framed[0].as_py()
        return message

    def unpack(self, message: bytes | bytearray | memoryview) -> tuple[Any, memoryview]:
        """Split one message into ``(schema_id, payload)``; the payload is a view into ``message``.

        The schema id is an int (a ``uuid.UUID`` for the GUID forms, a ``(metadata_id, version)``
        tuple for Hortonworks protocol 1). Raises :class:`~pulsar_codec.errors.WireFormatError`.
        """
        view = memoryview(message).cast("B")
        data = pa.py_buffer(view) if len(view) else pa.py_buffer(b"")
        chunk = Chunk(data=data, offsets=np.array([0, len(view)], dtype=np.int64), validity=None, row=0)
        result, inflated = _run_unframe(chunk, self)
        if inflated:
            return self._scalar_id(result, 0), memoryview(inflated[0])
        return self._scalar_id(result, 0), view[int(result[5][0]) :]

    def unpack_indexes(self, message: bytes | bytearray | memoryview) -> tuple[Any, list[int], memoryview]:
        """Like :meth:`unpack`, also returning the Protobuf message-index path (``[]`` if none)."""
        view = memoryview(message).cast("B")
        data = pa.py_buffer(view) if len(view) else pa.py_buffer(b"")
        chunk = Chunk(data=data, offsets=np.array([0, len(view)], dtype=np.int64), validity=None, row=0)
        result, inflated = _run_unframe(chunk, self)
        indexes = [] if result[7] is None else [int(v) for v in result[7]]
        body = memoryview(inflated[0]) if inflated else view[int(result[5][0]) :]
        return self._scalar_id(result, 0), indexes, body

    def _scalar_id(self, result: UnframeResult, i: int) -> Any:
        return int(result[1][i])

    # -- bulk helpers --------------------------------------------------------------------------
    def _check_ids(self, ids: np.ndarray) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"wire.{self.name}"


@dataclass(frozen=True, repr=False)
class ConfluentProtocol(Protocol):
    """Confluent's prefixes: ``00`` + 4-byte id or ``01`` + GUID, each optionally with Protobuf indexes."""

    def _scalar_id(self, result: UnframeResult, i: int) -> Any:
        if self.guid:
            guids = result[2]
            assert guids is not None  # the GUID kinds always return them
            return uuid.UUID(bytes=bytes(guids[16 * i : 16 * i + 16]))
        return int(result[1][i])

    def _check_ids(self, ids: np.ndarray) -> None:
        if len(ids) and (ids.min() < 0 or ids.max() > 0xFFFFFFFF):
            bad = int(ids[(ids < 0) | (ids > 0xFFFFFFFF)][0])
            raise EncodeError(f"schema id {bad} does not fit the {self.name} prefix (0 to 4294967295)")


@dataclass(frozen=True, repr=False)
class HortonworksProtocol(Protocol):
    """Hortonworks / Cloudera schema registry prefixes (protocol byte 0 to 4)."""

    def _scalar_id(self, result: UnframeResult, i: int) -> Any:
        protocols, versions = result[4], result[3]
        if protocols is not None and versions is not None and protocols[i] == 1:
            return (int(result[1][i]), int(versions[i]))
        return int(result[1][i])

    def _check_ids(self, ids: np.ndarray) -> None:
        if len(ids) and ids.min() < 0:
            raise EncodeError(f"schema version id {int(ids.min())} is negative")


@dataclass(frozen=True, repr=False)
class ApicurioProtocol(Protocol):
    """Apicurio's default prefixes: ``00`` + 8-byte globalId (v2) or 4-byte contentId (v3)."""

    id_bytes: int = 8

    def _check_ids(self, ids: np.ndarray) -> None:
        if self.id_bytes == 4 and len(ids) and (ids.min() < -(2**31) or ids.max() > 2**31 - 1):
            raise EncodeError(f"id does not fit the 4-byte {self.name} prefix")


DEFAULT_MAX_INFLATED = 64 * 1024 * 1024
"""Default bound of one inflated AWS Glue body (64 MiB): a larger one is a decompression error."""

_GLUE_COMPRESSIONS = {None: None, "none": None, "zlib": "zlib"}


@dataclass(frozen=True, repr=False)
class GlueProtocol(Protocol):
    """The AWS Glue Schema Registry prefix (``wire.AWS_GLUE``; facts and sources in the module docs).

    ``max_inflated`` bounds the inflated size of one zlib-compressed body; a larger body is a
    :class:`~pulsar_codec.errors.WireFormatError` (``WIRE_DECOMPRESSION_FAILED``). Raise or lower
    it with ``dataclasses.replace(wire.AWS_GLUE, max_inflated=...)`` and pass that protocol to
    :func:`unframe` or :func:`pulsar_codec.decode`.
    """

    guid: bool = True
    max_inflated: int = DEFAULT_MAX_INFLATED

    def __post_init__(self) -> None:
        if not isinstance(self.max_inflated, int) or isinstance(self.max_inflated, bool) or self.max_inflated < 0:
            raise ValueError(f"max_inflated must be a non-negative int, got {self.max_inflated!r}")

    def error_context(self, code: int) -> dict[str, object]:
        """The template words of a wire error: the compression error names the valid bytes."""
        if code == ErrorCode.WIRE_UNKNOWN_COMPRESSION:
            return {"expected": "0x00 (none) or 0x05 (zlib)", "protocol": self.name}
        return super().error_context(code)

    def _scalar_id(self, result: UnframeResult, i: int) -> Any:
        guids = result[2]
        assert guids is not None  # the Glue kind always returns them
        return uuid.UUID(bytes=bytes(guids[16 * i : 16 * i + 16]))


CONFLUENT = ConfluentProtocol("CONFLUENT", defs.KIND_CONFLUENT, "0x00")
CONFLUENT_PROTOBUF = ConfluentProtocol("CONFLUENT_PROTOBUF", defs.KIND_CONFLUENT_PROTOBUF, "0x00", protobuf=True)
CONFLUENT_GUID = ConfluentProtocol("CONFLUENT_GUID", defs.KIND_CONFLUENT_GUID, "0x01", guid=True)
CONFLUENT_GUID_PROTOBUF = ConfluentProtocol(
    "CONFLUENT_GUID_PROTOBUF", defs.KIND_CONFLUENT_GUID_PROTOBUF, "0x01", guid=True, protobuf=True
)
HORTONWORKS = HortonworksProtocol("HORTONWORKS", defs.KIND_HORTONWORKS, "0x00 to 0x04")
APICURIO = ApicurioProtocol("APICURIO", defs.KIND_APICURIO, "0x00", id_bytes=8)
APICURIO_V3 = ApicurioProtocol("APICURIO_V3", defs.KIND_APICURIO_V3, "0x00", id_bytes=4)
AWS_GLUE = GlueProtocol("AWS_GLUE", defs.KIND_AWS_GLUE, "0x03")

PROTOCOLS = {
    p.name: p
    for p in (
        CONFLUENT,
        CONFLUENT_PROTOBUF,
        CONFLUENT_GUID,
        CONFLUENT_GUID_PROTOBUF,
        HORTONWORKS,
        APICURIO,
        APICURIO_V3,
        AWS_GLUE,
    )
}


def protocol_by_name(name: str | Protocol) -> Protocol:
    """Look a protocol up by name (case-insensitive, ``-`` and ``_`` alike)."""
    if isinstance(name, Protocol):
        return name
    key = str(name).strip().upper().replace("-", "_")
    try:
        return PROTOCOLS[key]
    except KeyError:
        raise ValueError(f"unknown protocol {name!r}; known: {', '.join(sorted(PROTOCOLS))}") from None


def _run_unframe(chunk: Chunk, protocol: Protocol, buffer_index: int = 0) -> tuple[UnframeResult, dict[int, bytes]]:
    """The kernel's result for one chunk and the inflated AWS Glue bodies by row; raises the first error."""
    result: UnframeResult = _backend.active().wire.unframe(
        chunk.data, chunk.offsets, chunk.validity, protocol.kind, buffer_index
    )
    error = result[0]
    inflated: dict[int, bytes] = {}
    if isinstance(protocol, GlueProtocol):
        # the rows before a bad prefix are inflated first: a bad body there is the first error
        stop = chunk.length if error is None else error[1]
        inflated, failure = inflate_rows(chunk, result[4], result[5], stop, protocol.max_inflated)
        if failure is not None:
            failed = ErrorCode.WIRE_DECOMPRESSION_FAILED
            context = protocol.error_context(failed)
            raise_for(failed, chunk.row + failure[0], GLUE_PREFIX, 0, reason=failure[1], **context)
    if error is not None:
        code, index, offset, detail = error
        raise_for(code, chunk.row + index, offset, detail, **protocol.error_context(code))
    return result, inflated


@dataclass
class Framed:
    """The result of :func:`unframe`.

    Attributes
    ----------
    schema_ids : pa.Array
        int64 ids; ``fixed_size_binary(16)`` GUIDs for the GUID protocols and AWS Glue; for Hortonworks batches
        that contain protocol-1 messages a struct ``{metadata_id, version, version_id}`` (the first
        two set for protocol 1, the last for the others). Null where the message is null.
    payloads : pa.Array
        ``binary_view`` slices of the input's own data buffers (zero copy). Null where the message is null.
    message_indexes : pa.Array or None
        ``list<int64>`` Protobuf message-index paths (Protobuf protocols only).
    protocols : pa.Array or None
        ``uint8`` protocol byte of each message (Hortonworks: it decides how the payload of a
        primitive schema is written) or compression byte (AWS Glue: ``0`` none, ``5`` zlib);
        None for the other protocols.
    """

    schema_ids: pa.Array
    payloads: pa.Array
    message_indexes: pa.Array | None = None
    protocols: pa.Array | None = None
    # per input chunk: (chunk, payload starts) for consumers that walk the payloads in place
    slices: list[tuple[Chunk, np.ndarray]] = field(default_factory=list, repr=False)

    def __len__(self) -> int:
        return len(self.payloads)


def _joined(parts: list[npt.NDArray[Any]], dtype: npt.DTypeLike) -> npt.NDArray[Any]:
    """Concatenate per-chunk kernel outputs; a single chunk is passed through without a copy."""
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def unframe(messages: Any, protocol: Protocol | str = CONFLUENT) -> Framed:
    """Strip the wire prefix of every message.

    Parameters
    ----------
    messages : pa.BinaryArray, pa.LargeBinaryArray, pa.ChunkedArray or sequence of bytes / None
        Framed messages. Null messages stay null in every output column.
    protocol : Protocol or str
        One of the protocol constants of this module.

    AWS Glue bodies compressed with zlib are inflated into new buffers (the payload views of those
    rows point there; every other payload stays zero copy).

    Raises
    ------
    WireFormatError
        For the first malformed message, with its index and byte offset (for an AWS Glue body that
        does not inflate, or inflates past ``max_inflated``: byte 18, where the body starts).
    """
    protocol = protocol_by_name(protocol)
    chunks, total = binary_chunks(messages)
    inflated_buffers: list[bytearray] = []
    # the parts a protocol has (the others stay empty: the kernel returns None for them)
    ids_parts: list[npt.NDArray[Any]] = []
    guid_parts: list[npt.NDArray[Any]] = []
    version_parts: list[npt.NDArray[Any]] = []
    proto_parts: list[npt.NDArray[Any]] = []
    view_parts: list[npt.NDArray[Any]] = []
    count_parts: list[npt.NDArray[Any]] = []
    value_parts: list[npt.NDArray[Any]] = []
    slices: list[tuple[Chunk, npt.NDArray[Any]]] = []
    for k, chunk in enumerate(chunks):
        result, inflated = _run_unframe(chunk, protocol, k)
        _, ids, guids, versions, protos, starts, counts, values, views = result
        if inflated and views is not None:
            views = point_at_inflated(views, inflated, inflated_buffers, len(chunks))
        ids_parts.append(ids)
        for part, parts in (
            (guids, guid_parts),
            (versions, version_parts),
            (protos, proto_parts),
            (counts, count_parts),
            (values, value_parts),
            (views, view_parts),
        ):
            if part is not None:
                parts.append(part)
        slices.append((chunk, starts))
    mask = bool_mask(chunks, total)
    validity = validity_buffer(mask)
    null_count = 0 if mask is None else int(total - mask.sum())
    ids = _joined(ids_parts, np.int64)
    views = _joined(view_parts, np.uint8)
    data_buffers = [c.data for c in chunks] + [pa.py_buffer(bytes(b)) for b in inflated_buffers]
    payloads = pa.Array.from_buffers(
        pa.binary_view(), total, [validity, pa.py_buffer(views)] + data_buffers, null_count=null_count
    )

    if protocol.guid:
        guids = _joined(guid_parts, np.uint8)
        schema_ids = pa.Array.from_buffers(pa.binary(16), total, [validity, pa.py_buffer(guids)], null_count=null_count)
    else:
        schema_ids = pa.Array.from_buffers(pa.int64(), total, [validity, pa.py_buffer(ids)], null_count=null_count)

    protocols = None
    if isinstance(protocol, GlueProtocol):
        protos = _joined(proto_parts, np.uint8)
        protocols = pa.Array.from_buffers(pa.uint8(), total, [validity, pa.py_buffer(protos)], null_count=null_count)
    if isinstance(protocol, HortonworksProtocol):
        protos = _joined(proto_parts, np.uint8)
        protocols = pa.Array.from_buffers(pa.uint8(), total, [validity, pa.py_buffer(protos)], null_count=null_count)
        is_meta = protos == 1
        if mask is not None:
            is_meta &= mask
        if is_meta.any():
            versions = _joined(version_parts, np.int32)
            valid = np.ones(total, dtype=bool) if mask is None else mask
            schema_ids = pa.StructArray.from_arrays(
                [
                    pa.array(ids, pa.int64(), mask=~(valid & is_meta)),
                    pa.array(versions, pa.int32(), mask=~(valid & is_meta)),
                    pa.array(ids, pa.int64(), mask=~(valid & ~is_meta)),
                ],
                names=["metadata_id", "version", "version_id"],
                mask=pa.array(~valid),
            )

    message_indexes = None
    if protocol.protobuf:
        counts = _joined(count_parts, np.int32)
        values = _joined(value_parts, np.int64)
        list_offsets = np.zeros(total + 1, dtype=np.int32)
        np.cumsum(counts, out=list_offsets[1:])
        message_indexes = pa.Array.from_buffers(
            pa.list_(pa.int64()),
            total,
            [validity, pa.py_buffer(list_offsets)],
            null_count=null_count,
            children=[pa.array(values, pa.int64())],
        )
    return Framed(schema_ids, payloads, message_indexes, protocols, slices)


def _ids_for(schema_ids: Any, n: int, protocol: Protocol, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Normalise schema ids to int64[n] (and uint8[16n] GUIDs); checks nulls and ranges."""
    guid = protocol.guid
    if guid:
        if isinstance(schema_ids, (uuid.UUID, str, bytes, int, np.integer)):  # one id (an int is refused)
            one = _guid_bytes(schema_ids)
            return np.zeros(n, dtype=np.int64), np.frombuffer(one * n, dtype=np.uint8)
        values = schema_ids.to_pylist() if isinstance(schema_ids, (pa.Array, pa.ChunkedArray)) else list(schema_ids)
        if len(values) != n:
            raise EncodeError(f"{len(values)} schema ids for {n} payloads")
        out = bytearray(16 * n)
        for i, v in enumerate(values):
            if v is None:
                if valid[i]:
                    raise EncodeError(f"schema id of message {i} is null", index=i)
                continue
            out[16 * i : 16 * i + 16] = _guid_bytes(v)
        return np.zeros(n, dtype=np.int64), np.frombuffer(bytes(out), dtype=np.uint8)
    if isinstance(schema_ids, (int, np.integer)):
        ids = np.full(n, int(schema_ids), dtype=np.int64)
    else:
        arr = (
            schema_ids
            if isinstance(schema_ids, (pa.Array, pa.ChunkedArray))
            else pa.array(list(schema_ids), pa.int64())
        )
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if len(arr) != n:
            raise EncodeError(f"{len(arr)} schema ids for {n} payloads")
        if not pa.types.is_integer(arr.type):
            raise EncodeError(f"schema ids must be integers for {protocol.name}, got {arr.type}")
        if arr.null_count:
            nulls = ~np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool) & valid
            if nulls.any():
                i = int(np.flatnonzero(nulls)[0])
                raise EncodeError(f"schema id of message {i} is null", index=i)
            arr = arr.fill_null(0)
        if pa.types.is_uint64(arr.type) and len(arr) and pc.max(arr).as_py() > 2**63 - 1:
            raise EncodeError("schema id does not fit in 64 bits")
        ids = arr.cast(pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)
    protocol._check_ids(ids[valid])
    return ids, None


def _guid_bytes(value: Any) -> bytes:
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, str):
        try:
            return uuid.UUID(value).bytes
        except ValueError:
            raise EncodeError(f"{value!r} is not a GUID") from None
    if isinstance(value, (bytes, bytearray)) and len(value) == 16:
        return bytes(value)
    raise EncodeError(f"a GUID schema id must be a uuid.UUID, its text or 16 bytes, got {value!r}")


def frame(
    payloads: Any,
    schema_ids: Any,
    protocol: Protocol | str = CONFLUENT,
    *,
    message_indexes: Sequence[int] | None = None,
    compression: str | None = None,
) -> pa.Array:
    """Prefix every payload with its schema id; the reverse of :func:`unframe`.

    ``schema_ids`` is one id for all messages or one per message (ints; ``uuid.UUID``, GUID text or
    16 bytes for the GUID protocols and AWS Glue). ``message_indexes`` is the Protobuf message-index
    path shared by all messages (Protobuf protocols only; default ``[0]``). ``compression`` (AWS
    Glue only): None or ``"none"`` writes compression byte ``00`` and the payload as it is,
    ``"zlib"`` byte ``05`` and the payload as a zlib stream (compressed row by row in Python).
    Null payloads stay null. Returns a ``binary`` array (``large_binary`` when the output passes 2 GiB).
    """
    protocol = protocol_by_name(protocol)
    if compression not in _GLUE_COMPRESSIONS:
        raise EncodeError(f"unknown compression {compression!r}; known: none, zlib")
    zlib_bodies = _GLUE_COMPRESSIONS[compression] == "zlib"
    if zlib_bodies and not isinstance(protocol, GlueProtocol):
        raise EncodeError(f"{protocol.name} has no compression byte")
    arr = as_binary_array(payloads)
    if zlib_bodies:
        arr = pa.array([None if v is None else zlib.compress(v) for v in arr.to_pylist()], pa.large_binary())
    n = len(arr)
    chunks, _ = binary_chunks(arr)
    mask = bool_mask(chunks, n)
    valid = np.ones(n, dtype=bool) if mask is None else mask
    ids, guids = _ids_for(schema_ids, n, protocol, valid)
    protobuf = protocol.protobuf
    if message_indexes is not None and not protobuf:
        raise EncodeError(f"{protocol.name} has no message-index array")
    suffix = encode_message_indexes(message_indexes) if protobuf else b""
    if not chunks:
        return pa.array([None] * n, pa.binary())
    # binary_chunks only splits above 2 GiB; frame the pieces and stitch them
    datas: list[npt.NDArray[Any]] = []
    offsets_parts: list[npt.NDArray[Any]] = []
    base = 0
    for chunk in chunks:
        rows = slice(chunk.row, chunk.row + chunk.length)
        data, offs = _backend.active().wire.frame(
            protocol.kind,
            ids[rows],
            None if guids is None else guids[16 * chunk.row : 16 * (chunk.row + chunk.length)],
            suffix,
            chunk.data,
            chunk.offsets,
            chunk.validity,
        )
        if zlib_bodies:  # the kernel writes compression byte 00: mark the compressed rows
            data = np.array(data, dtype=np.uint8, copy=True)
            data[offs[:-1][valid[rows]] + 1] = GLUE_ZLIB
        datas.append(data)
        offsets_parts.append(offs[1:] + base if offsets_parts else offs + base)
        base += int(offs[-1])
    data = np.concatenate(datas) if len(datas) > 1 else datas[0]
    offsets = np.concatenate(offsets_parts)
    large = base > 2**31 - 1
    typ = pa.large_binary() if large else pa.binary()
    offsets = offsets.astype(np.int64 if large else np.int32)
    return pa.Array.from_buffers(
        typ, n, [validity_buffer(mask), pa.py_buffer(offsets), pa.py_buffer(data)], null_count=int(n - valid.sum())
    )


# -- PIP-420 MessageMetadata.schema_id ----------------------------------------------------------

_MAGIC_VALUE = 0xFF
_MAGIC_KEYVALUE = 0xFE


def pulsar_schema_id(schema_id: bytes | None, keyvalue: bool = False) -> bytes | None:
    """The ``MessageMetadata.schema_id`` value PIP-420 producers write: ``FF || id`` (``FE`` for a
    KeyValue schema id). ``None`` or an empty id gives ``None``: the field is then not set."""
    if not schema_id:
        return None
    return bytes([_MAGIC_KEYVALUE if keyvalue else _MAGIC_VALUE]) + bytes(schema_id)


def strip_pulsar_schema_id(metadata_schema_id: bytes | None) -> bytes | None:
    """Remove the PIP-420 magic byte. Like Pulsar's ``SchemaIdUtil.removeMagicHeader``, an id whose
    first byte is neither ``FF`` nor ``FE`` is returned unchanged, and None/empty gives None."""
    if not metadata_schema_id:
        return None
    data = bytes(metadata_schema_id)
    return data[1:] if data[0] in (_MAGIC_VALUE, _MAGIC_KEYVALUE) else data


def is_keyvalue_schema_id(metadata_schema_id: bytes | None) -> bool:
    """True when a ``MessageMetadata.schema_id`` carries the KeyValue magic byte ``FE``."""
    return metadata_schema_id is not None and len(metadata_schema_id) > 0 and metadata_schema_id[0] == _MAGIC_KEYVALUE


def strip_pulsar_schema_ids(metadata_schema_ids: Any) -> tuple[pa.Array, pa.Array]:
    """Bulk :func:`strip_pulsar_schema_id`: returns ``(ids: binary, is_keyvalue: bool)``.

    Null or empty input ids give null in both outputs; a lone magic byte gives an empty id.
    """
    # numpy over the offsets (pyarrow's binary_slice fails on some mixes of empty and short ids)
    chunks, total = binary_chunks(metadata_schema_ids)
    views: list[npt.NDArray[Any]] = []
    keyvalue: list[npt.NDArray[Any]] = []
    present: list[npt.NDArray[Any]] = []
    for k, chunk in enumerate(chunks):
        offs = chunk.offsets
        starts, ends = offs[:-1], offs[1:]
        valid = ends > starts
        if chunk.validity is not None:
            valid &= chunk.validity
        buf = np.frombuffer(chunk.data, dtype=np.uint8) if len(chunk.data) else np.zeros(1, dtype=np.uint8)
        first = np.where(valid, buf[np.minimum(starts, len(buf) - 1)], 0)
        magic = valid & ((first == _MAGIC_VALUE) | (first == _MAGIC_KEYVALUE))
        views.append(_backend.active().wire.binary_views(chunk.data, starts + magic, ends, valid, k))
        keyvalue.append(valid & (first == _MAGIC_KEYVALUE))
        present.append(valid)
    valid_all = _joined(present, np.bool_)
    null_count = int(total - valid_all.sum())
    validity = validity_buffer(None if null_count == 0 else valid_all)
    stripped = pa.Array.from_buffers(
        pa.binary_view(),
        total,
        [validity, pa.py_buffer(_joined(views, np.uint8))] + [c.data for c in chunks],
        null_count=null_count,
    )
    is_kv = pa.array(_joined(keyvalue, np.bool_), pa.bool_(), mask=~valid_all)
    return stripped.cast(pa.binary()), is_kv


# -- Apicurio header values ---------------------------------------------------------------------


def pulsar_schema_id_ints(metadata_schema_ids: Any) -> pa.Array:
    """The integer ids of PIP-420 ``schema_id`` values (``int64``): an optional ``FF`` magic byte,
    then a big-endian id of 1 to 8 bytes. A null value, or one of another length, gives null."""
    chunks, total = binary_chunks(metadata_schema_ids)
    out = np.zeros(total, dtype=np.int64)
    valid = np.ones(total, dtype=bool)
    for chunk in chunks:
        data = np.frombuffer(chunk.data, dtype=np.uint8) if chunk.data is not None else np.zeros(0, np.uint8)
        starts = chunk.offsets[:-1].astype(np.int64)
        ends = chunk.offsets[1:].astype(np.int64)
        rows = slice(chunk.row, chunk.row + chunk.length)
        ok = np.ones(chunk.length, dtype=bool) if chunk.validity is None else chunk.validity.copy()
        if len(data):
            has_magic = (ends > starts) & (data[np.minimum(starts, len(data) - 1)] == 0xFF)
        else:
            has_magic = np.zeros(chunk.length, dtype=bool)
        starts = starts + has_magic
        lengths = ends - starts
        ok &= (lengths >= 1) & (lengths <= 8)
        ids = np.zeros(chunk.length, dtype=np.uint64)
        for k in range(8):  # at most 8 vectorised passes, one per id byte
            take = ok & (lengths > k)
            if not take.any():
                break
            ids[take] = (ids[take] << np.uint64(8)) | data[starts[take] + k].astype(np.uint64)
        out[rows] = ids.view(np.int64)
        valid[rows] = ok
    return pa.array(out, pa.int64(), mask=~valid)


def apicurio_header_value(schema_id: int) -> bytes:
    """The 8-byte big-endian value of an ``apicurio.{key,value}.globalId/contentId`` header."""
    return int(schema_id).to_bytes(8, "big", signed=True)


def apicurio_header_id(value: bytes) -> int:
    """Read an Apicurio id header (always an 8-byte big-endian long, in v2 and v3)."""
    value = bytes(value)
    if len(value) != 8:
        raise_for(ErrorCode.WIRE_BAD_HEADER_LENGTH, 0, 0, len(value), protocol="Apicurio id", expected=8)
    return int.from_bytes(value, "big", signed=True)
