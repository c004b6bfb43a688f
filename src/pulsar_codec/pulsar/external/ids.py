"""PIP-420 schema ids as bytes: what ``EncodeData.schema_id`` holds for each registry framing.

The id bytes are the framing's prefix without its constant magic byte: Confluent and Apicurio v3
``u32``/``i32`` BE, Apicurio v2 ``i64`` BE, Hortonworks its protocol byte followed by the id fields
(the protocol byte says how wide the id is, so it stays). A Java PIP-420 producer writes these
bytes, after its ``FF`` magic, into ``MessageMetadata.schema_id``.
"""

from __future__ import annotations

from typing import Any

from ... import wire
from ...errors import ErrorCode, SchemaNotFoundError, WireFormatError, error_for

__all__ = ["FRAMING_MAGIC", "external_protocol", "registry_id", "schema_id_bytes", "schema_id_from_bytes"]

FRAMING_MAGIC: dict[str, bytes] = {
    wire.CONFLUENT.name: b"\x00",
    wire.APICURIO.name: b"\x00",
    wire.APICURIO_V3.name: b"\x00",
    wire.HORTONWORKS.name: b"",  # no magic: the first byte is the protocol
}
"""The constant bytes each framing supported by external schemas writes before the id."""

_PIP420_MAGICS = (0xFF, 0xFE)
_HW_MAX_PROTOCOL = 4


def external_protocol(protocol: wire.Protocol | str) -> wire.Protocol:
    """The framing ``protocol`` names, checked to be one external schemas support.

    Raises
    ------
    ValueError
        A framing other than Confluent, Hortonworks, Apicurio (v2) or Apicurio v3.
    """
    found = wire.protocol_by_name(protocol)
    if found.name not in FRAMING_MAGIC:
        raise ValueError(f"external schemas support the {', '.join(sorted(FRAMING_MAGIC))} framings, not {found.name}")
    return found


def schema_id_bytes(schema_id: int, protocol: wire.Protocol | str = wire.CONFLUENT) -> bytes:
    """The ``EncodeData.schema_id`` bytes of a registry id: the framing prefix without its magic byte.

    >>> schema_id_bytes(7)
    b'\\x00\\x00\\x00\\x07'
    >>> schema_id_bytes(7, "HORTONWORKS")
    b'\\x03\\x00\\x00\\x00\\x07'
    """
    p = external_protocol(protocol)
    return p.pack(int(schema_id), b"")[len(FRAMING_MAGIC[p.name]) :]


def _strip_pip420_magic(raw: bytes, p: wire.Protocol, id_size: int) -> bytes:
    """``raw`` without a leading ``FF``/``FE`` that a metadata id carries (when the length says so)."""
    if not raw or raw[0] not in _PIP420_MAGICS:
        return raw
    if p is wire.HORTONWORKS:
        return raw[1:] if len(raw) > 1 and raw[1] <= _HW_MAX_PROTOCOL else raw
    return raw[1:] if len(raw) == id_size + 1 else raw


def schema_id_from_bytes(schema_id: bytes, protocol: wire.Protocol | str = wire.CONFLUENT) -> int:
    """The registry id in ``schema_id`` bytes (the reverse of :func:`schema_id_bytes`).

    A leading PIP-420 magic byte (``FF``, ``FE``), as found in ``MessageMetadata.schema_id``, is
    removed when the id is one byte longer than the framing's id.

    Raises
    ------
    WireFormatError
        The bytes are not an id of this framing (too short, too long, bad protocol byte).
    SchemaNotFoundError
        A Hortonworks protocol-1 id (metadata id, version), which registries here cannot look up.
    """
    p = external_protocol(protocol)
    magic = FRAMING_MAGIC[p.name]
    raw = _strip_pip420_magic(bytes(schema_id), p, len(p.pack(1, b"")) - len(magic))
    if not raw:
        raise error_for(ErrorCode.WIRE_EMPTY, 0, 0, 0, protocol=p.name)
    value, rest = p.unpack(magic + raw)
    if len(rest):
        used = len(raw) - len(rest)
        raise WireFormatError(
            f"schema id of {len(raw)} bytes is longer than a {p.name} id (message 0, byte {used})",
            code=ErrorCode.WIRE_SHORT_PREFIX,
            index=0,
            offset=used,
            detail=len(raw),
        )
    return registry_id(value)


def registry_id(prefix_id: Any) -> int:
    """The int a registry is asked for, from the id a framing's ``unpack`` returns.

    Raises
    ------
    SchemaNotFoundError
        A Hortonworks protocol-1 ``(metadata id, version)`` pair, which registries here cannot look up.
    """
    if isinstance(prefix_id, tuple):
        raise SchemaNotFoundError(
            f"Hortonworks protocol-1 id (metadata id {prefix_id[0]}, version {prefix_id[1]}) cannot be looked up"
        )
    return int(prefix_id)
