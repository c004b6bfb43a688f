"""Where a message's schema id travels, as confluent-kafka's serdes place it (spec §4).

A message names its writer schema in its payload prefix (``00`` + 4-byte id, or ``01`` + 16-byte
GUID; Protobuf then adds its message-index array), or, as confluent-kafka's
``header_schema_id_serializer`` writes it, in the header ``__value_schema_id`` /
``__key_schema_id`` of the context, whose value is that same prefix and whose payload is then all
data. :func:`schema_id_header` finds the header as confluent-kafka's default
``dual_schema_id_deserializer`` does (the first matching entry of a list, or a dict lookup) and
:func:`read_schema_id` reads either form (through :mod:`pulsar_codec.wire`). The serializers, given
``header_schema_id_serializer``, write ``01`` + the schema's GUID (:func:`schema_guid`, asked of the
registry once per subject) there with :func:`add_schema_id_header`. :func:`decode_with_ids` is the
deserializers' batch path over messages whose ids were read apart.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import pyarrow as pa

from .. import wire
from ..errors import ErrorCode, RegistryError, WireFormatError
from ..formats.base import Decoded, errors_table
from ..pipeline import MessageDecoder
from ..pipeline._resolver import Pathed
from ._subjects import _field_name, _is_confluent_kafka_client

__all__ = [
    "ID_PLACEMENT",
    "Split",
    "WriterId",
    "add_schema_id_header",
    "check_id_placement",
    "decode_with_ids",
    "find_header",
    "first_present",
    "frame_key",
    "guid_prefixed",
    "header_name",
    "message_value",
    "message_values",
    "read_schema_id",
    "schema_guid",
    "schema_id_header",
    "split_ids",
]


class WriterId(NamedTuple):
    """The writer schema a message names: ``key`` (an int id or a ``uuid.UUID`` GUID), the Protobuf
    message-index ``path`` (None for Avro and JSON) and ``start``, where the data begins in the
    payload (after the prefix; 0 when the id came in a header)."""

    key: Any
    path: tuple[int, ...] | None
    start: int


def header_name(field: Any) -> str:
    """``__key_schema_id`` for the key field, else ``__value_schema_id`` (confluent-kafka's choice)."""
    return wire.CONFLUENT_KEY_SCHEMA_ID_HEADER if _field_name(field) == "key" else wire.CONFLUENT_VALUE_SCHEMA_ID_HEADER


def find_header(headers: Any, name: str) -> Any:
    """The value of header ``name``: the first matching ``(key, value)`` entry of a list (Kafka
    headers repeat keys), or a Mapping's entry; None when there is none."""
    if isinstance(headers, Mapping):
        return headers.get(name)
    if isinstance(headers, (list, tuple)):
        for header in headers:
            if header[0] == name:
                return header[1]
    return None


_KEY_HEADER = wire.CONFLUENT_KEY_SCHEMA_ID_HEADER


_VALUE_HEADER = wire.CONFLUENT_VALUE_SCHEMA_ID_HEADER


def schema_id_header(ctx: Any) -> tuple[str, Any] | None:
    """``(name, value)`` of the schema-id header of ``ctx``'s field, as confluent-kafka's
    ``dual_schema_id_deserializer`` finds it; None without one (a None value counts as none)."""
    headers = getattr(ctx, "headers", None)
    if not headers:  # the common case: no headers at all
        return None
    field = ctx.field
    name = _KEY_HEADER if (field == "key" if isinstance(field, str) else _field_name(field) == "key") else _VALUE_HEADER
    if type(headers) is list:  # what confluent-kafka's Message.headers() gives
        for header in headers:
            if header[0] == name:
                value = header[1]
                return None if value is None else (name, value)
        return None
    value = find_header(headers, name)
    return None if value is None else (name, value)


def add_schema_id_header(ctx: Any, value: bytes) -> None:
    """Add the schema-id header ``value`` to ``ctx``'s headers, as confluent-kafka's
    ``header_schema_id_serializer`` does: appended to a list, set in a dict.

    Raises
    ------
    ValueError
        No context, or a context without headers (``None``: a list made here would not reach the
        message, since confluent-kafka's ``SerializingProducer`` sends the ``headers`` it was given,
        so pass ``headers=[]`` to ``produce``), or headers neither a list nor a dict.
    """
    if ctx is None:
        raise ValueError("header_schema_id_serializer needs a SerializationContext (whose headers get the schema id)")
    headers = getattr(ctx, "headers", None)
    name = header_name(ctx.field)
    if isinstance(headers, list):
        headers.append((name, value))
    elif isinstance(headers, dict):
        headers[name] = value
    elif headers is None:
        raise ValueError(
            f"header_schema_id_serializer: the SerializationContext has no headers to add {name} to "
            "(give produce() a headers list, e.g. headers=[])"
        )
    else:
        raise ValueError(
            f"header_schema_id_serializer: the context's headers must be a list or a dict to add {name} to, "
            f"got {type(headers).__name__}"
        )


def schema_guid(client: Any, schema_id: int) -> uuid.UUID:
    """The GUID of schema ``schema_id`` (what ``01`` + GUID names), as the registry gives it.

    This package's registries give it with the schema (``RegisteredSchema.guid``);
    confluent-kafka's ``SchemaRegistryClient`` does not with ``get_schema``, so the GUID is read
    from a subject version that holds the schema (``get_schema_versions``, ``get_version``: the
    GUID is the schema's, whatever the subject).

    Raises
    ------
    RegistryError
        The registry gives no GUID for the schema (registries older than Confluent's GUIDs).
    """
    if _is_confluent_kafka_client(client):
        found = None
        versions = client.get_schema_versions(schema_id, deleted=True)
        if versions:
            found = client.get_version(versions[0].subject, versions[0].version, deleted=True)
    else:
        found = client.get_schema(schema_id)
    guid = getattr(found, "guid", None)
    if guid is None:
        raise RegistryError(
            f"the registry gives no GUID for schema id {schema_id}: header_schema_id_serializer writes the "
            "schema's GUID (01 + 16 bytes), which needs a registry that assigns GUIDs; use "
            "prefix_schema_id_serializer with this registry"
        )
    return guid if isinstance(guid, uuid.UUID) else uuid.UUID(str(guid))


_HEADER_CACHE: dict[tuple[bytes, bool], WriterId] = {}  # header value -> its id: headers repeat


_HEADER_CACHE_SIZE = 1024


def _bad(code: ErrorCode, text: str, index: int, offset: int, detail: int = 0) -> WireFormatError:
    return WireFormatError(text, code=code, index=index, offset=offset, detail=detail)


_FORMS = {
    (0, False): wire.CONFLUENT,
    (1, False): wire.CONFLUENT_GUID,
    (0, True): wire.CONFLUENT_PROTOBUF,
    (1, True): wire.CONFLUENT_GUID_PROTOBUF,
}


def read_schema_id(data: Any, protobuf: bool, *, header: str | None = None, index: int = 0) -> WriterId:
    """The schema id a Confluent prefix holds: ``00`` + 4-byte id or ``01`` + GUID, then, for
    Protobuf, the message-index array (read by :mod:`pulsar_codec.wire`).

    With ``header`` (its name), ``data`` is that header's value, which must hold exactly the id
    (and the index array): the whole payload is then the data (``start`` 0). Without, ``data`` is
    a prefixed message. ``index`` is the message's position, for the error's text.

    Raises
    ------
    WireFormatError
        A bad magic byte, a short prefix, a bad index array, or a header of another length (or
        not bytes); a header's error names the header.
    """
    if header is not None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise _bad(
                ErrorCode.WIRE_BAD_HEADER_LENGTH,
                f"schema id header {header!r} must be bytes, got {type(data).__name__} (message {index})",
                index,
                0,
            )
        cache_key = (bytes(data), protobuf)
        found = _HEADER_CACHE.get(cache_key)
        if found is not None:
            return found
    where = f"schema id header {header!r}" if header is not None else "the payload prefix"
    view = data if isinstance(data, bytes) else memoryview(data).cast("B")
    magic = view[0] if len(view) else None
    if magic is not None and magic not in (0, 1):  # either form is read: say both
        raise _bad(
            ErrorCode.WIRE_BAD_MAGIC,
            f"{where} has magic byte 0x{magic:02x}, expected 0x00 (4-byte id) or 0x01 (16-byte GUID) "
            f"(message {index}, byte 0)",
            index,
            0,
            magic,
        )
    try:
        key, indexes, body = _FORMS[(magic or 0, protobuf)].unpack_indexes(view)
    except WireFormatError as exc:
        if header is None:
            raise exc.moved(index) from None
        code = (
            ErrorCode.WIRE_BAD_HEADER_LENGTH
            if exc.code in (ErrorCode.WIRE_EMPTY, ErrorCode.WIRE_SHORT_PREFIX)
            else exc.code
        )
        raise _bad(code, f"{where}: {exc.moved(index)}", index, exc.offset, exc.detail) from None
    path = (tuple(indexes) or (0,)) if protobuf else None
    if header is None:
        return WriterId(key, path, len(view) - len(body))
    if len(body):
        layout = "the message-index array" if protobuf else "nothing"
        raise _bad(
            ErrorCode.WIRE_BAD_HEADER_LENGTH,
            f"{where} is {len(view)} bytes: its id ends at byte {len(view) - len(body)} and {layout} may follow"
            f" (message {index})",
            index,
            len(view) - len(body),
            len(view),
        )
    found = WriterId(key, path, 0)
    if len(_HEADER_CACHE) >= _HEADER_CACHE_SIZE:
        _HEADER_CACHE.clear()
    _HEADER_CACHE[cache_key] = found
    return found


# schema.id.serializer / schema.id.deserializer: confluent-kafka's functions by name. The
# deserializers read ids as its default dual_schema_id_deserializer does (a header first, then the
# payload prefix) or, given prefix_schema_id_deserializer, from the prefix only; the serializers
# write the prefix (prefix_schema_id_serializer, the default) or, given header_schema_id_serializer,
# 01 + GUID in the context's __value_schema_id / __key_schema_id header and an unprefixed payload
ID_PLACEMENT = {
    "schema.id.serializer": {"prefix_schema_id_serializer": "prefix", "header_schema_id_serializer": "header"},
    "schema.id.deserializer": {"dual_schema_id_deserializer": "dual", "prefix_schema_id_deserializer": "prefix"},
}


_SERIALIZER_ONLY = ("schema.id.serializer",)


def check_id_placement(key: str, value: Any, serializer: bool) -> str:
    """``"prefix"``, ``"header"`` or ``"dual"`` for confluent-kafka's function ``value`` of ``key``;
    else ValueError."""
    if (key in _SERIALIZER_ONLY) != serializer:
        raise ValueError(f"Unrecognized properties: {key}")
    names = ID_PLACEMENT[key]
    name = getattr(value, "__name__", None)
    if name in names and str(getattr(value, "__module__", "")).startswith("confluent_kafka."):
        return names[name]
    if serializer:
        raise ValueError(
            f"{key} {value!r} is not supported: use confluent-kafka's prefix_schema_id_serializer (the "
            "default: 00 + id in the payload prefix) or header_schema_id_serializer (01 + GUID in the "
            "__value_schema_id / __key_schema_id header)"
        )
    raise ValueError(
        f"{key} {value!r} is not supported: use confluent-kafka's dual_schema_id_deserializer (the "
        "default: the __value_schema_id / __key_schema_id header, else the payload prefix) or "
        "prefix_schema_id_deserializer"
    )


def message_value(item: Any) -> Any:
    """A confluent-kafka ``Message``'s value; bytes and None as they are."""
    if item is None or isinstance(item, (bytes, bytearray, memoryview)):
        return item
    value = getattr(item, "value", None)
    return value() if callable(value) else item


def first_present(values: Any) -> Any:
    return next((v for v in values if v is not None), None) if isinstance(values, (list, tuple)) else None


def message_values(values: Any, dual: bool) -> tuple[Any, list[Any] | None]:
    """``values`` as payloads (a list of confluent-kafka ``Message`` gives their ``value()``), and
    with ``dual``, when any message carries a ``__value_schema_id`` header, each message's header
    value (None where it has none); else None."""
    if not isinstance(values, (list, tuple)):
        return values, None
    first = first_present(values)
    if first is None or isinstance(first, (bytes, bytearray, memoryview)):
        return values, None
    if not dual:
        return [message_value(v) for v in values], None
    payloads: list[Any] = []
    headers: list[Any] = []
    found = False
    name = _VALUE_HEADER
    for item in values:
        value = None
        try:
            payload = item.value()
        except AttributeError:  # None, bytes, or not a Message
            payload = message_value(item)
        payloads.append(payload)
        get = getattr(item, "headers", None)
        listed = get() if callable(get) else None
        if listed:
            value = find_header(listed, name)
            found = found or value is not None
        headers.append(value)
    return payloads, headers if found else None


def guid_prefixed(exc: WireFormatError, data: Any) -> bool:
    """Whether the wire error of a ``00``-prefix read is a ``01`` (GUID) prefix, read apart."""
    return exc.code == ErrorCode.WIRE_BAD_MAGIC and data[:1] == b"\x01"


def frame_key(data: Any) -> Any:
    """The schema id of a framed message (``00`` or ``01`` prefix) or of a :class:`WriterId`; None
    for anything else."""
    if isinstance(data, WriterId):
        return data.key
    if not isinstance(data, (bytes, bytearray, memoryview)) or len(data) < 5 or data[0] not in (0, 1):
        return None
    if data[0] == 0:
        return int.from_bytes(data[1:5], "big")
    try:
        return read_schema_id(data, False).key
    except WireFormatError:
        return None


@dataclass
class Split:
    """A batch's messages with their schema ids read apart: the data of each (None for a null
    message or a bad one), its :class:`WriterId` (None alike), and the bad ones' error rows."""

    bodies: list[bytes | None]
    ids: list[WriterId | None]
    errors: list[tuple[Any, ...]]


def split_ids(values: Any, headers: list[Any], protobuf: bool, keep_going: bool) -> Split:
    """Each message's schema id, from its header when it has one (the payload is then all data),
    else from its payload prefix (``00`` + id or ``01`` + GUID). A malformed header or prefix
    raises its WireFormatError, or with ``keep_going`` becomes the message's error row."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.to_pylist()
    bodies: list[bytes | None] = []
    ids: list[WriterId | None] = []
    errors: list[tuple[Any, ...]] = []
    for i, (data, header) in enumerate(zip(values, headers)):
        if data is None:
            bodies.append(None)
            ids.append(None)
            continue
        try:
            if header is not None:
                writer = read_schema_id(header, protobuf, header=_VALUE_HEADER, index=i)
            else:
                writer = read_schema_id(data, protobuf, index=i)
        except WireFormatError as exc:
            if not keep_going:
                raise
            errors.append((exc.code, i, exc.offset, exc.detail, str(exc)))
            bodies.append(None)
            ids.append(None)
            continue
        bodies.append(bytes(data) if writer.start == 0 else bytes(data[writer.start :]))
        ids.append(writer)
    return Split(bodies, ids, errors)


def _guid_rows(values: Any, errors: pa.Table) -> bool:
    """Whether a bad-magic error row of a batch is a message with a ``01`` (GUID) prefix."""
    for index, code in zip(errors.column("index").to_pylist(), errors.column("code").to_pylist()):
        if code == ErrorCode.WIRE_BAD_MAGIC:
            row = values[index]
            row = row.as_py() if isinstance(row, pa.Scalar) else row
            if row is not None and row[:1] == b"\x01":
                return True
    return False


def decode_with_ids(
    decoder: MessageDecoder, values: Any, split: Split | None, protobuf: bool, keep_going: bool
) -> pa.RecordBatch | Decoded:
    """``decoder.decode(values)`` when every message names its schema in a ``00`` prefix (the
    common case, one kernel pass); else each message's id read apart (``split``: headers; or a
    ``01`` GUID prefix found in a batch) and its data decoded with it, error rows merged in order."""
    if split is None:
        listable = isinstance(values, (list, tuple, pa.Array, pa.ChunkedArray))
        try:
            result = decoder.decode(values)
        except WireFormatError as exc:
            if exc.code != ErrorCode.WIRE_BAD_MAGIC or exc.detail != 1 or not listable:
                raise
        else:
            if not (listable and isinstance(result, Decoded) and _guid_rows(values, result.errors)):
                return result
        listed = values.to_pylist() if isinstance(values, (pa.Array, pa.ChunkedArray)) else list(values)
        split = split_ids(listed, [None] * len(listed), protobuf, keep_going)
    ids = [None if w is None else (Pathed(w.key, w.path) if protobuf else w.key) for w in split.ids]
    result = decoder.decode_payloads(split.bodies, ids)
    if not split.errors:
        return result
    assert isinstance(result, Decoded)  # split errors are kept only with on_error="null"
    errors = pa.concat_tables([result.errors, errors_table(split.errors)]).sort_by("index")
    return Decoded(result.batch, errors)
