"""A key schema and a value schema in one INLINE KeyValue payload: :class:`KeyValueExternalSchema`."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ... import keyvalue as _kv
from ... import primitives as _primitives
from ..._arrow import around_bad_rows
from ...errors import DecodeError, EncodeError, ErrorCode, PrimitiveDecodeError, SchemaError, error_for
from ...formats.base import Decoded, check_on_error, errors_table
from ..schema_info import EncodeData, SchemaInfo, SchemaType, encode_keyvalue_schema_info, primitive_schema_info
from .base import ExternalSchema, as_list

__all__ = ["KeyValue", "KeyValueExternalSchema", "primitive_type"]

_NOT_PRIMITIVE = frozenset({"AVRO", "JSON", "EXTERNAL", "KEY_VALUE"})


def primitive_type(schema: Any) -> SchemaType | None:
    """The Pulsar primitive type ``schema`` names (a SchemaType or its name), else None."""
    if isinstance(schema, SchemaType):
        return schema
    if isinstance(schema, str):
        try:
            found = SchemaType.parse(schema)
        except (ValueError, KeyError, TypeError, SchemaError):
            return None
        if found.name not in _NOT_PRIMITIVE:
            return found
    return None


class KeyValue(NamedTuple):
    """A decoded KeyValue: either part may be None (equal to ``pulsar_codec.pulsar.KeyValue``)."""

    key: Any
    value: Any


class KeyValueExternalSchema(ExternalSchema):
    """A key schema and a value schema in one INLINE KeyValue payload, as PIP-420 encodes them.

    ``encode(topic, (key, value))`` writes ``i32 len || key data || i32 len || value data`` (a None
    part as length -1) and returns the PIP-420 KeyValue schema id
    ``i32 len || key id || i32 len || value id`` (an absent id has length 0; no id at all gives
    ``schema_id=None``), which a Java producer stores as ``FE || kv id``. ``decode`` splits the
    payload and, when ``schema_id`` is given, the KeyValue id, and decodes each side with its
    schema; without an id each side reads its own prefix (framed sub-schemas).

    Parameters
    ----------
    key_schema : ExternalSchema or pulsar_types.SchemaType
        The key side: an external schema, or a Pulsar primitive (STRING, INT64, ...), which PIP-420
        allows next to an external value; a primitive has no schema id.
    value_schema : ExternalSchema
    topic : str, optional
    convention : {"java", "cpp"}
        INLINE length convention for None / empty parts (see :func:`pulsar_codec.keyvalue.encode_inline`).
    """

    def __init__(
        self,
        key_schema: Any,
        value_schema: Any,
        *,
        topic: str | None = None,
        convention: str = _kv.JAVA,
        name: str = "",
    ) -> None:
        super().__init__(getattr(value_schema, "provider", None), name)
        self.key_schema: ExternalSchema | SchemaType = primitive_type(key_schema) or key_schema
        if not isinstance(value_schema, ExternalSchema):
            raise TypeError(f"value_schema must be an ExternalSchema, got {type(value_schema).__name__}")
        if not isinstance(self.key_schema, (ExternalSchema, SchemaType)):
            raise TypeError(
                f"key_schema must be an ExternalSchema or a Pulsar primitive type, got {type(key_schema).__name__}"
            )
        self.value_schema: ExternalSchema = value_schema
        self._topic = topic
        self.convention = convention

    @property
    def topic(self) -> str | None:
        """The topic given here, else the value schema's."""
        return self._topic if self._topic is not None else super().topic

    @property
    def schema_info(self) -> SchemaInfo:
        """What a Java client registers for this schema: a KEY_VALUE SchemaInfo (INLINE, named
        ``"KeyValue"`` unless a name was given) whose sides are the external schemas' own SchemaInfos
        (type EXTERNAL, empty schema data) or the primitive key's."""
        key = self.key_schema
        key_info = primitive_schema_info(key) if isinstance(key, SchemaType) else key.schema_info
        return encode_keyvalue_schema_info(
            key_info, self.value_schema.schema_info, _kv.KeyValueEncodingType.INLINE, name=self.name or "KeyValue"
        )

    def __repr__(self) -> str:
        return f"KeyValueExternalSchema(key={self.key_schema!r}, value={self.value_schema!r})"

    def _encode_side(self, schema: Any, topic: str | None, value: Any) -> tuple[bytes | None, bytes | None]:
        if value is None:
            return None, None
        if isinstance(schema, SchemaType):
            return _primitives.encode(schema, value), None
        encoded = schema.encode(topic, value)
        return bytes(encoded.data), encoded.schema_id

    def encode(self, topic: str | None, value: Any) -> EncodeData:
        """Serialise a ``(key, value)`` pair (a :class:`KeyValue`, any 2-tuple, or an object with
        ``.key`` and ``.value``) into an INLINE payload and the KeyValue schema id.

        Raises
        ------
        EncodeError
            ``value`` is not a pair, or a side does not fit its schema.
        """
        self._check_open()
        if hasattr(value, "key") and hasattr(value, "value") and not isinstance(value, tuple):
            key, val = value.key, value.value
        else:
            try:
                key, val = value
            except (TypeError, ValueError):
                raise EncodeError(f"expected a (key, value) pair, got {type(value).__name__}") from None
        topic = self.topic if topic is None else topic
        key_data, key_id = self._encode_side(self.key_schema, topic, key)
        value_data, value_id = self._encode_side(self.value_schema, topic, val)
        payload = _kv.encode_inline(key_data, value_data, convention=self.convention)
        return EncodeData(payload, _kv.pack_schema_id(key_id, value_id))

    def _decode_side(self, schema: Any, topic: str | None, data: bytes | None, schema_id: bytes | None) -> Any:
        if data is None:
            return None
        if isinstance(schema, SchemaType):
            return _primitives.decode(schema, data)
        return schema.decode(topic, data, schema_id)

    def decode(self, topic: str | None, data: bytes, schema_id: bytes | None = None) -> KeyValue:
        """Deserialise an INLINE payload into a :class:`KeyValue`.

        ``schema_id`` is the PIP-420 KeyValue id (a leading ``FE`` magic byte is stripped).

        Raises
        ------
        KeyValueFormatError
            A malformed payload or KeyValue schema id.
        WireFormatError
            ``schema_id`` is a single schema's id (``FF`` magic byte), not a KeyValue one.
        """
        self._check_open()
        key_data, value_data = _kv.decode_inline(data, convention=self.convention)
        key_id, value_id = _side_ids(schema_id)
        return KeyValue(
            self._decode_side(self.key_schema, topic, key_data, key_id),
            self._decode_side(self.value_schema, topic, value_data, value_id),
        )

    def decode_batch(
        self, messages: Any, schema_ids: Any = None, *, topic: str | None = None, on_error: str = "raise"
    ) -> pa.RecordBatch | Decoded:
        """Decode many INLINE payloads: a ``pa.RecordBatch`` with struct columns ``key`` and
        ``value`` (each side's own batch as a struct; a primitive key is a plain column).
        ``schema_ids``: the messages' PIP-420 KeyValue ids (``FE`` + both sides' ids, as
        :meth:`decode` takes one; None or empty for a message without), required when a side was
        made with ``framed=False``; each side is read with its own id.

        With ``on_error="null"`` a message whose KeyValue framing, key or value cannot be decoded
        is a null row (key and value both null) and ``Decoded(batch, errors)`` is returned, with
        one error per bad message: its framing's, else its key's, else its value's.
        """
        keep_going = check_on_error(on_error)
        found: dict[int, tuple[Any, ...]] = {}  # row -> (code, index, offset, detail, text): the first error

        def note(errors: Any) -> None:
            for e in errors:
                found.setdefault(e.index, (int(e.code), e.index, int(e.offset or 0), e.detail, str(e)))

        side_ids: tuple[list[Any] | None, list[Any] | None] = (None, None)
        if schema_ids is not None:
            side_ids = self._batch_side_ids(schema_ids, len(as_list(messages)), note if keep_going else None)
        if keep_going:
            keys, values, split_errors = _kv.split_inline_rows(messages, convention=self.convention)
            note(split_errors)
        else:
            keys, values = _kv.split_inline(messages, convention=self.convention)
        columns = []
        for data, schema, ids in ((keys, self.key_schema, side_ids[0]), (values, self.value_schema, side_ids[1])):
            if isinstance(schema, SchemaType):
                columns.append(self._primitive_column(schema, data, note if keep_going else None))
                continue
            result = schema.decode_batch(data, ids, topic=topic, on_error=on_error)
            if isinstance(result, Decoded):
                batch = result.batch
                for row in result.errors.to_pylist():
                    found.setdefault(row["index"], (row["code"], row["index"], row["offset"], 0, row["message"]))
            else:
                batch = result
            mask = data.is_null() if data.null_count else None
            columns.append(pa.StructArray.from_arrays(batch.columns, names=batch.schema.names, mask=mask))
        if not keep_going:
            return pa.RecordBatch.from_arrays(columns, ["key", "value"])
        bad = np.zeros(len(keys), dtype=bool)
        bad[list(found)] = True
        if bad.any():  # a bad message is a null row: neither side keeps a half
            columns = [pc.if_else(pa.array(bad), pa.nulls(len(c), c.type), c) for c in columns]
        return Decoded(
            pa.RecordBatch.from_arrays(columns, ["key", "value"]),
            errors_table(sorted(found.values(), key=lambda e: e[1])),
        )

    @staticmethod
    def _batch_side_ids(schema_ids: Any, count: int, note: Any) -> tuple[list[Any], list[Any]]:
        """The key's and the value's ids of each message (None where it has none); with ``note``,
        a malformed KeyValue id is reported to it and its message read without ids, else raised
        as the error of its message."""
        ids = as_list(schema_ids)
        if len(ids) != count:
            raise ValueError(f"{len(ids)} schema ids for {count} messages")
        keys: list[Any] = []
        values: list[Any] = []
        for i, kv_id in enumerate(ids):
            try:
                key_id, value_id = _side_ids(kv_id)
            except DecodeError as exc:
                if note is None:
                    raise exc.moved(i) from None
                note([exc.moved(i)])
                key_id = value_id = None
            keys.append(key_id)
            values.append(value_id)
        return keys, values

    @staticmethod
    def _primitive_column(schema: SchemaType, data: pa.Array, note: Any) -> pa.Array:
        """A primitive side's column; with ``note``, bad payloads are null rows reported to it."""
        if note is None:
            return _primitives.decode_array(schema, data)
        pieces, errors = around_bad_rows(
            len(data),
            lambda lo, hi: _primitives.decode_array(schema, data.slice(lo, hi - lo)),
            pa.nulls(1, _primitives.arrow_type(schema)),
            PrimitiveDecodeError,
        )
        note(errors)
        return pa.concat_arrays(pieces) if pieces else _primitives.decode_array(schema, data)

    def close(self) -> None:
        """Close both sides."""
        for schema in (self.key_schema, self.value_schema):
            if isinstance(schema, ExternalSchema):
                schema.close()
        super().close()


def _side_ids(schema_id: Any) -> tuple[bytes | None, bytes | None]:
    """The key's and the value's ids in one PIP-420 KeyValue id (its ``FE`` magic byte optional);
    a null or empty id gives neither."""
    if not schema_id:
        return None, None
    kv_id = bytes(schema_id)
    if kv_id[0] == 0xFF:  # Java strips either magic byte, then misreads a single id as lengths
        raise error_for(
            ErrorCode.WIRE_BAD_MAGIC, 0, 0, 0xFF, expected="0xfe (a KeyValue schema id; 0xff marks a single schema's)"
        )
    if kv_id[0] == 0xFE:
        kv_id = kv_id[1:]
    return _kv.unpack_schema_id(kv_id)
