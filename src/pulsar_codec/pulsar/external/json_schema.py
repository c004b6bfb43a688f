"""JSON values through a schema registry: :class:`JsonExternalSchema`."""

from __future__ import annotations

import json
import threading
from typing import Any

import pyarrow as pa

from ... import wire
from ...errors import EncodeError, ErrorCode, SchemaError, SchemaNotFoundError, error_for
from ...pipeline import Decoded, MessageDecoder
from ...registry.lookup import fetch_schema
from ..schema_info import EncodeData
from .base import RegistrySchema

__all__ = ["JsonExternalSchema"]

_HW_JSON_PROTOCOL = 4
_HW_MAX_JSON_ID = 0x7FFFFFFF


def _json_body(body: bytes, index: int) -> Any:
    """``json.loads`` of one body; a JsonDecodeError (JSON_INVALID) with the byte offset otherwise."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error_for(ErrorCode.JSON_INVALID, index, exc.start, 0, reason="invalid UTF-8") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        pos = getattr(exc, "pos", 0) or 0
        offset = len(text[:pos].encode("utf-8"))
        raise error_for(ErrorCode.JSON_INVALID, index, offset, 0, reason=getattr(exc, "msg", str(exc))) from None


class JsonExternalSchema(RegistrySchema):
    """JSON values through a schema registry, registered as ``schemaType`` JSON.

    The payload is compact UTF-8 JSON text behind the same framing as Avro (Hortonworks uses its
    JSON protocol byte 4). ``schema`` is a JSON Schema document (dict or text); its ``title`` is
    the record name for RecordNameStrategy. Values are not validated against the JSON Schema
    (no validator runs); ``decode`` returns ``json.loads`` of one body, and :meth:`decode_batch`
    reads many bodies into typed Arrow columns with the schema-directed JSON decoder.

    Parameters are those of :class:`AvroExternalSchema`, without ``reader_schema`` and ``fast``.
    """

    schema_type = "JSON"

    def __init__(self, target: Any, schema: Any = None, *, topic: str | None = None, **options: Any) -> None:
        super().__init__(target, schema, topic=topic, **options)
        self.schema: Any = None if schema is None else self._parse(schema)
        self._schema_text = schema if isinstance(schema, str) else None
        self._by_id: dict[int, Any] = {}
        self._by_id_lock = threading.Lock()
        self._decoders: dict[str, MessageDecoder] = {}

    def _parse(self, schema: Any) -> Any:
        if isinstance(schema, (bytes, bytearray)):
            schema = bytes(schema).decode("utf-8")
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except ValueError as exc:
                raise SchemaError(f"JSON schema is not valid JSON: {exc}") from None
        if not isinstance(schema, (dict, bool)):
            raise SchemaError(f"a JSON schema is an object or a boolean, got {type(schema).__name__}")
        return schema

    def _text(self, parsed: Any) -> str:
        if parsed is self.schema and self._schema_text is not None:
            return self._schema_text
        return json.dumps(parsed, separators=(",", ":"))

    def _record_name(self, parsed: Any) -> str | None:
        title = parsed.get("title") if isinstance(parsed, dict) else None
        return title if isinstance(title, str) else None

    @property
    def _own_schema(self) -> Any:
        return self.schema

    def __repr__(self) -> str:
        return f"JsonExternalSchema(topic={self.topic!r}, protocol={self.protocol.name})"

    def schema_for_id(self, schema_id: int) -> Any:
        """The JSON Schema document with this registry id (fetched once).

        Raises
        ------
        SchemaNotFoundError
            The registry does not know the id.
        SchemaError
            The id holds a schema of another type (Avro, Protobuf).
        """
        hit = self._by_id.get(schema_id)
        if hit is None:
            fetched = fetch_schema(self.registry, schema_id)
            self._check_type(fetched.schema_type, schema_id)
            hit = self._parse(fetched.schema)
            with self._by_id_lock:
                self._by_id[schema_id] = hit
        return hit

    def _forget_schemas(self) -> None:
        with self._by_id_lock:
            self._by_id.clear()
            self._decoders.clear()

    def _frame(self, schema_id: int, body: bytes) -> EncodeData:
        if self.protocol is not wire.HORTONWORKS:
            return super()._frame(schema_id, body)
        if not 0 <= schema_id <= _HW_MAX_JSON_ID:
            raise EncodeError(f"schema version id {schema_id} does not fit the Hortonworks JSON protocol (i32)")
        id_bytes = bytes([_HW_JSON_PROTOCOL]) + schema_id.to_bytes(4, "big")
        return EncodeData(id_bytes + body if self.framed else body, id_bytes)

    def encode(self, topic: str | None, value: Any) -> EncodeData:
        """Serialise one value as compact JSON text, framed with the schema's registry id.

        Raises
        ------
        EncodeError
            The value cannot be written as JSON (NaN, a non-JSON type, ...).
        """
        schema_id, _ = self.writer(topic)
        try:
            body = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise EncodeError(f"value cannot be written as JSON: {exc}") from None
        return self._frame(schema_id, body)

    def decode(self, topic: str | None, data: bytes, schema_id: bytes | None = None) -> Any:
        """Deserialise one message (``json.loads`` of the body, after checking the id is known).

        Raises
        ------
        JsonDecodeError
            The body is not UTF-8 JSON (``code`` JSON_INVALID, ``offset`` the byte in the body).
        SchemaNotFoundError, WireFormatError
            As for :meth:`AvroExternalSchema.decode`.
        """
        self._check_open()
        sid, body, _ = self._split(data, schema_id)
        self.schema_for_id(sid)
        return _json_body(bytes(body), 0)

    def decode_batch(
        self,
        messages: Any,
        schema_ids: Any = None,
        *,
        topic: str | None = None,
        on_error: str = "raise",
        arrow_schema: pa.Schema | None = None,
    ) -> pa.RecordBatch | Decoded:
        """Decode many messages into a ``pa.RecordBatch`` in one pass of the JSON decoder
        (:class:`~pulsar_codec.pipeline.MessageDecoder`, format JSON): an object schema gives one
        column per property, typed by the schema (see the JSON Schema -> Arrow mapping); other
        schemas a ``value`` column. The columns are those of the schema given (every batch the
        same, whichever versions wrote it); without one, those of each batch's newest writer.
        Null messages give null rows.

        Parameters
        ----------
        messages : pa.BinaryArray, ChunkedArray or sequence of bytes / None
            Framed messages (or raw bodies with ``framed=False``).
        schema_ids : sequence of bytes, optional
            Per-message metadata ids; required with ``framed=False``.
        on_error : {"raise", "null"}
            ``"null"``: a bad message is a null row and ``Decoded(batch, errors)`` is returned.
        arrow_schema : pa.Schema, optional
            Cast the decoded batch to these columns.

        Raises
        ------
        JsonDecodeError
            A payload that is not JSON or does not match the writer schema (with ``on_error="raise"``).
        """
        self._check_open()
        if schema_ids is None and not self.framed:
            raise SchemaNotFoundError("framed=False: decode_batch needs the messages' schema_ids")
        decoder = self._decoder(on_error)
        if schema_ids is None:
            result = decoder.decode(messages)
        else:
            bodies, ids = self._bodies_and_ids(messages, schema_ids)
            result = decoder.decode_payloads(bodies, ids)
        if arrow_schema is None:
            return result
        if isinstance(result, Decoded):
            return Decoded(result.batch.cast(arrow_schema), result.errors)
        return result.cast(arrow_schema)

    def _decoder(self, on_error: str) -> MessageDecoder:
        """The bulk decoder of one error mode (made once; it caches schemas and plans by id)."""
        found = self._decoders.get(on_error)
        if found is None:
            with self._by_id_lock:
                found = self._decoders.get(on_error)
                if found is None:
                    # the schema given fixes the columns, as AvroExternalSchema's does: a batch of
                    # another version's messages gives the same columns (absent properties null)
                    reader = None if self.schema is None else self._text(self.schema)
                    found = MessageDecoder(
                        self.registry, protocol=self.protocol, reader_schema=reader, on_error=on_error, format="JSON"
                    )
                    self._decoders[on_error] = found
        return found
