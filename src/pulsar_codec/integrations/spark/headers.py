"""Schema ids carried in record headers (``schema_id_from="headers"``) rather than in the payload.

:class:`HeaderIds` names the header of each registry family and joins its id bytes to the payload
into a frame the :mod:`pulsar_codec.wire` protocols read; the decode job (:mod:`.decode`) then
sends each row to the decoder of its frame's protocol (:func:`decode_routed`). The driver's
pre-pass (:mod:`.driver`) reads the same headers inside the JVM.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ... import wire
from ..._arrow import walk_bad_rows
from ...errors import DecodeError, ErrorCode, error_for
from ...pipeline import MessageDecoder
from .batches import RowError, local_text, valid

__all__ = ["HeaderIds", "decode_routed", "header_values"]


def header_values(headers: Any, name: str, last: bool = False, value_type: Any = None) -> Any:
    """Per row, the value of the record header ``name`` (null where the row has none, or only a
    null one).

    Parameters
    ----------
    headers : pa.Array
        ``list<struct<key: string, value: binary>>``, the ``headers`` column of Spark's Kafka
        source (large list / string / binary variants too).
    name : str
    last : bool
        Take the last header of that name (Kafka's ``lastHeader``, which Hortonworks' and
        Apicurio's deserializers use); else the first (confluent-kafka's deserializer).
    value_type : pa.DataType, optional
        The binary type to return (default: the headers' value type).
    """
    if isinstance(headers, pa.ChunkedArray):
        headers = headers.combine_chunks()
    n = len(headers)
    flat = pc.list_flatten(headers)
    keys, values = pc.struct_field(flat, "key"), pc.struct_field(flat, "value")
    value_type = value_type or values.type
    match = pc.and_(pc.equal(keys, name), values.is_valid()).fill_null(False).to_numpy(zero_copy_only=False)
    positions = np.flatnonzero(match)
    chosen = np.full(n, -1, dtype=np.int64)
    if len(positions):
        parents = pc.list_parent_indices(headers).to_numpy()[positions]
        if last:
            rows, at = np.unique(parents[::-1], return_index=True)
            chosen[rows] = positions[::-1][at]
        else:
            rows, at = np.unique(parents, return_index=True)
            chosen[rows] = positions[at]
    out = values.take(pa.array(chosen, pa.int64(), mask=chosen < 0))
    return out if out.type == value_type else out.cast(value_type)


@dataclass(frozen=True)
class HeaderIds:
    """Where a row's schema id is when it travels in a record header, for one registry family.

    * Confluent (``__value_schema_id`` / ``__key_schema_id``): the header holds ``01`` + GUID, or
      ``00`` + id, then for Protobuf the message-index array; the payload has no prefix. Header +
      payload is therefore a ``CONFLUENT_GUID(_PROTOBUF)`` or ``CONFLUENT(_PROTOBUF)`` frame, told
      apart by the first byte as confluent-kafka's ``dual_schema_id_deserializer`` does, which
      takes the first header of the name.
    * Hortonworks (``value.schema.version.id`` / ``key.schema.version.id``): the header holds
      exactly the payload prefix it replaces (protocol byte and ids): header + payload is a
      ``HORTONWORKS`` frame. The last header of the name counts.
    * Apicurio (``apicurio.value.globalId``, ``apicurio.value.contentId`` and the ``key`` forms):
      an 8-byte big-endian id: ``00`` + header + payload is an ``APICURIO`` frame. The last header
      counts; a header of another length is an error row (``WIRE_BAD_HEADER_LENGTH``).

    A Confluent or Hortonworks header must be exactly one such prefix: one that is cut short or
    runs on (which, joined to the payload, would read the payload's first bytes as the id or the
    header's last ones as the body) is an error row (``WIRE_BAD_HEADER_LENGTH``, or the code of the
    prefix's own fault), named after the header.

    A row without the header is read from its payload prefix in ``protocol``.

    Attributes
    ----------
    column : str
        The headers column.
    name : str
        The header name.
    kind : {"confluent", "hortonworks", "apicurio"}
    last : bool
        Whether the last header of the name counts (else the first).
    """

    column: str
    name: str
    kind: str
    last: bool

    @classmethod
    def of(cls, protocol: wire.Protocol, column: str, headers_column: str, name: str | None = None) -> HeaderIds:
        """The header that carries ``column`` 's ids (``"key"``: the key's header) in ``protocol`` 's family."""
        key = column == "key"
        if isinstance(protocol, wire.ConfluentProtocol):
            default = wire.CONFLUENT_KEY_SCHEMA_ID_HEADER if key else wire.CONFLUENT_VALUE_SCHEMA_ID_HEADER
            return cls(headers_column, name or default, "confluent", False)
        if isinstance(protocol, wire.HortonworksProtocol):
            default = wire.HORTONWORKS_KEY_HEADER if key else wire.HORTONWORKS_VALUE_HEADER
            return cls(headers_column, name or default, "hortonworks", True)
        if isinstance(protocol, wire.ApicurioProtocol):
            if protocol.id_bytes == 8:  # v2: globalId by default
                default = wire.APICURIO_KEY_GLOBAL_ID_HEADER if key else wire.APICURIO_VALUE_GLOBAL_ID_HEADER
            else:  # v3: contentId by default
                default = wire.APICURIO_KEY_CONTENT_ID_HEADER if key else wire.APICURIO_VALUE_CONTENT_ID_HEADER
            return cls(headers_column, name or default, "apicurio", True)
        raise ValueError(f"{protocol.name} carries its schema ids in the payload only, not in record headers")

    def protocols(self, protocol: wire.Protocol) -> tuple[wire.Protocol, ...]:
        """The protocols the frames of a batch may be in, by route (see :meth:`frames`)."""
        if self.kind == "confluent":
            if protocol.protobuf:
                return (wire.CONFLUENT_PROTOBUF, wire.CONFLUENT_GUID_PROTOBUF)
            return (wire.CONFLUENT, wire.CONFLUENT_GUID)
        if self.kind == "apicurio":
            return (protocol, wire.APICURIO)
        return (protocol,)

    def frames(
        self, headers: Any, values: Any, protocol: wire.Protocol | None = None
    ) -> tuple[Any, np.ndarray, list[RowError]]:
        """(frames, route per row: an index into :meth:`protocols`, rows found bad here).

        A frame is the header's id bytes in front of the payload (the payload alone where the row
        has no header); a null payload stays null. ``protocol`` is the one :meth:`protocols` was
        given (default the family's without Protobuf message indexes): a header must be exactly
        one prefix of it (:meth:`header_faults`), else its row is bad here."""
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        n = len(values)
        header = header_values(headers, self.name, self.last, values.type)
        has = valid(header)
        bad: list[RowError] = []
        checked = np.flatnonzero(has & valid(values))  # a tombstone stays a null row
        if self.kind == "apicurio":
            lengths = pc.binary_length(header).fill_null(8).to_numpy(zero_copy_only=False)
            for i in checked[lengths[checked] != 8].tolist():
                try:
                    wire.apicurio_header_id(header[i].as_py())
                except DecodeError as exc:
                    bad.append((i, int(exc.code), 0, f"header {self.name}: {local_text(str(exc))}"))
        else:
            bad = self.header_faults(header, checked, protocol)
        if bad:
            wrong = np.zeros(n, dtype=bool)
            wrong[[i for i, _, _, _ in bad]] = True
            values = pc.if_else(pa.array(~wrong), values, pa.scalar(None, values.type))
            has &= ~wrong
        if self.kind == "apicurio":
            head = pc.binary_join_element_wise(pa.scalar(b"\x00", values.type), header, pa.scalar(b"", values.type))
        else:
            head = header
        joined = pc.binary_join_element_wise(head, values, pa.scalar(b"", values.type))
        frames = pc.if_else(pa.array(has), joined, values) if has.any() else values
        routes = np.zeros(n, dtype=np.int64)
        if self.kind == "apicurio":
            routes[has] = 1
        elif self.kind == "confluent":
            first = pc.binary_slice(frames, 0, 1)
            routes[pc.equal(first, pa.scalar(b"\x01", first.type)).fill_null(False).to_numpy(zero_copy_only=False)] = 1
        return frames, routes, bad

    def header_faults(self, header: Any, rows: np.ndarray, protocol: wire.Protocol | None = None) -> list[RowError]:
        """The rows among ``rows`` whose Confluent or Hortonworks header (``header``: one value per
        row) is not exactly one id prefix of ``protocol`` 's family: a prefix the header does not
        hold whole, or bytes after it (joined to the payload, either would be read as something
        else). Confluent's header is read as the GUID form when it starts with ``01``, as the id
        form otherwise."""
        if not len(rows):
            return []
        picked = header.take(pa.array(rows, pa.int64()))
        if self.kind == "confluent":
            plain, guid = self.protocols(protocol or wire.CONFLUENT)
            first = pc.binary_slice(picked, 0, 1)
            is_guid = pc.equal(first, pa.scalar(b"\x01", first.type)).fill_null(False).to_numpy(zero_copy_only=False)
            groups = [(plain, ~is_guid), (guid, is_guid)]
        else:
            groups = [(protocol or wire.HORTONWORKS, np.ones(len(rows), dtype=bool))]
        faults: list[RowError] = []
        for variant, mask in groups:
            if not mask.any():
                continue
            at, part = rows[mask], picked.filter(pa.array(mask))

            def run_on(
                lo: int, hi: int, variant: wire.Protocol = variant, at: Any = at, part: Any = part
            ) -> int | None:
                piece = part.slice(lo, hi - lo)
                try:
                    framed = wire.unframe(piece, variant)
                except DecodeError as exc:
                    first_bad = exc.index or 0
                    if first_bad:
                        self._runs_on(wire.unframe(piece.slice(0, first_bad), variant), piece, at[lo:], variant, faults)
                    text = f"header {self.name}: {local_text(str(exc))}"
                    faults.append((int(at[lo + first_bad]), int(exc.code), int(exc.offset or 0), text))
                    return first_bad
                self._runs_on(framed, piece, at[lo:], variant, faults)
                return None

            walk_bad_rows(len(part), run_on)
        return sorted(faults)

    def _runs_on(self, framed: Any, piece: Any, at: Any, variant: wire.Protocol, faults: list[RowError]) -> None:
        """Add the rows of ``framed`` (the first rows of ``piece``, at rows ``at``) whose header
        runs on after its prefix."""
        rest = pc.binary_length(framed.payloads.cast(pa.binary())).to_numpy(zero_copy_only=False)
        for k in np.flatnonzero(rest > 0).tolist():
            size = len(piece[k].as_py())
            exc = error_for(
                ErrorCode.WIRE_BAD_HEADER_LENGTH, 0, 0, size, protocol=variant.name, expected=size - int(rest[k])
            )
            faults.append((int(at[k]), int(exc.code), 0, f"header {self.name}: {local_text(str(exc))}"))


def decode_routed(frames: Any, routes: np.ndarray, decoders: Sequence[MessageDecoder]) -> tuple[Any, Any]:
    """(batch, errors) of frames whose protocol varies by row: each group goes to its decoder, and
    the rows (and the error indexes) come back in input order."""
    used = np.unique(routes)
    if len(used) <= 1:
        return decoders[int(used[0]) if len(used) else 0].decode(frames)
    batches, tables, order = [], [], []
    for r in used.tolist():
        rows = np.flatnonzero(routes == r)
        batch, errors = decoders[r].decode(frames.take(pa.array(rows)))
        batches.append(batch)
        at = errors.schema.get_field_index("index")
        index = errors.column(at).to_numpy()
        tables.append(errors.set_column(at, "index", pa.array(rows[index], pa.int64())))
        order.append(rows)
    inverse = np.argsort(np.concatenate(order), kind="stable")
    merged = pa.concat_batches(batches).take(pa.array(inverse))
    errors = pa.concat_tables(tables).sort_by("index")
    return merged, errors
