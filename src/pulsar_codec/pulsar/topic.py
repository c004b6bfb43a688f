"""Pulsar topics written with a client schema, read into Arrow: :class:`TopicDecoder`, :func:`read_decoded`.

A topic produced with ``AvroSchema(Record)``, ``JsonSchema(Record)`` or
``ProtobufNativeSchema(MessageClass)`` (Java or Python client), or through a PIP-420 external
schema (:class:`~pulsar_codec.pulsar.ExternalSchemaAdapter`), holds payloads of one known schema.
:class:`TopicDecoder` reads a column of those payloads (the ``payload`` column of
:func:`~pulsar_codec.pulsar.read_batches`) in one pass of the format's kernel: Pulsar ``AVRO`` with
the Avro format, Pulsar ``JSON`` with the JSON format (the schema data is an Avro record
definition, read by the Avro mapping of the README), Pulsar ``PROTOBUF_NATIVE`` with the Protobuf
format (the schema data is the JSON with the base64 ``fileDescriptorSet`` and the
``rootMessageTypeName``, payloads are the root message's bytes: read by the Protobuf -> Arrow
mapping of the README, no generated class needed), external schemas with their own
``decode_batch``. Nothing is decoded one message at a time.

Two ways of writing Pulsar JSON
-------------------------------
Java's ``JsonSchema`` writes values with Jackson: ``bytes`` as Base64 text, enums by symbol name.
The Python client's ``JsonSchema`` writes a ``Bytes`` field as the text of its UTF-8 bytes and an
enum as the Python ``Enum`` member's *value* (``Color.RED = 1`` is written ``1``); its own reader
turns a JSON string back into bytes by UTF-8 encoding it and accepts an enum's name or int value.
``convention`` chooses which writer to expect: ``"jackson"``, or ``"python"``, where bytes fields
are read as the UTF-8 bytes of their text and an enum whose members have int values is read from
those ints (the ``Record`` class gives the values; members whose value is their name are read by
name either way). Given the Python client's ``JsonSchema`` object the default is ``"python"``;
given schema data or a ``SchemaInfo`` it is ``"jackson"``.

Schema versions
---------------
Every payload is read with the one schema given: the Python client cannot fetch the broker's
schema versions. A JSON reader tolerates added and removed fields (unknown keys are skipped, a
missing nullable field is null); Avro payloads of another schema version need the registry path
(:func:`pulsar_codec.decode` with the versions as a mapping, or an external schema).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pac

from ..errors import DecodeError, ErrorCode, SchemaError, error_for
from ..formats.base import Decoded, check_on_error, errors_table
from ..pipeline import MessageDecoder
from ._sdk import native as _pulsar
from ._sdk import pulsar as _pulsar_client
from .client import ExternalSchemaAdapter, KeyValueSchema
from .reader import read_batches
from .schema_info import SchemaInfo, SchemaType

__all__ = ["CONVENTIONS", "TopicDecoder", "read_decoded"]

#: Values of ``convention``: who wrote the Pulsar JSON payloads (see the module notes).
CONVENTIONS = ("jackson", "python")

# the payload format of each Pulsar schema type read here
_FORMATS = {SchemaType.AVRO: "AVRO", SchemaType.JSON: "JSON", SchemaType.PROTOBUF_NATIVE: "PROTOBUF"}
_SCHEMA_ID = 0  # the one id of the one-schema registry behind the decoder

# a conversion of a decoded column (python convention), a tree following the Arrow type:
# ("binary",) | ("enum", name, symbols, values) | ("struct", {field: fix}) | ("list", fix) | ("map", fix)
Fix = tuple[Any, ...]
_BINARY: Fix = ("binary",)


# -- reading the schema ---------------------------------------------------------------------------


def _schema_parts(schema: Any) -> tuple[SchemaType, bytes]:
    """``(type, schema data)`` of a pulsar-client schema, a ``_pulsar.SchemaInfo`` or our SchemaInfo."""
    if isinstance(schema, SchemaInfo):
        return schema.type, schema.schema
    info = schema.schema_info() if isinstance(schema, _pulsar_client.schema.Schema) else schema
    if not isinstance(info, _pulsar.SchemaInfo):
        raise TypeError(
            "schema must be a pulsar.schema.Schema (AvroSchema, JsonSchema, ProtobufNativeSchema, "
            "ExternalSchemaAdapter), "
            f"a SchemaInfo or an external schema with decode_batch(), got {type(schema).__name__}"
        )
    return SchemaType.from_name(info.schema_type().name), info.schema().encode("utf-8")


def _enum_values(model: Any, symbols: list[str]) -> list[int] | None:
    """The int values the Python client writes for an enum field, or None when it writes names
    (members whose value is their name) or the values are not ints (its own reader cannot read
    those either)."""
    enum_type = getattr(model, "enum_type", None)
    if enum_type is None:
        return None
    try:
        values = [enum_type[s].value for s in symbols]
    except KeyError:
        return None  # the definition is not this enum's: keep reading names
    if values == symbols:
        return None
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return values
    return None


class _PythonReader:
    """Rewrites a Pulsar JSON definition into the one the Python client's payloads are read with,
    and collects the conversions that turn the decoded columns back into the definition's types:
    ``bytes`` is read as ``string`` (then viewed as binary), an int-valued enum as ``long`` (then
    mapped to its symbols)."""

    def __init__(self) -> None:
        self.named: dict[str, tuple[Any, Fix | None]] = {}  # a named type -> (its reference, its fix)

    def rewrite(self, node: Any, model: Any, namespace: str | None = None) -> tuple[Any, Fix | None]:
        if isinstance(node, list):
            if len(node) != 2 or "null" not in node:  # any other union is read as JSON text, as written
                return node, None
            branches = [self.rewrite(b, model, namespace) for b in node]
            fixes = [f for _, f in branches if f is not None]
            return [b for b, _ in branches], fixes[0] if fixes else None
        if isinstance(node, str):
            if node == "bytes":
                return "string", _BINARY
            for name in (node, f"{namespace}.{node}" if namespace else node):
                if name in self.named:
                    return self.named[name]
            return node, None
        if not isinstance(node, dict):
            return node, None
        kind = node.get("type")
        if kind == "record":
            return self._record(node, model, namespace)
        if kind == "enum":
            return self._enum(node, model, namespace)
        if kind == "array":
            items, fix = self.rewrite(node["items"], getattr(model, "array_type", None), namespace)
            return {**node, "items": items}, None if fix is None else ("list", fix)
        if kind == "map":
            values, fix = self.rewrite(node["values"], getattr(model, "value_type", None), namespace)
            return {**node, "values": values}, None if fix is None else ("map", fix)
        if kind == "bytes" and "logicalType" not in node:
            return {**node, "type": "string"}, _BINARY
        return node, None

    def _names(self, node: dict[str, Any], namespace: str | None) -> tuple[list[str], str | None]:
        name = str(node.get("name", ""))
        space = node.get("namespace", namespace)
        if "." in name:
            return [name, name.rsplit(".", 1)[1]], name.rsplit(".", 1)[0]
        return ([f"{space}.{name}", name] if space else [name]), space

    def _record(self, node: dict[str, Any], model: Any, namespace: str | None) -> tuple[Any, Fix | None]:
        names, space = self._names(node, namespace)
        for name in names:  # a reference back into this record (recursion) reads it unchanged
            self.named[name] = (names[0], None)
        python_fields = getattr(model, "_fields", None) or {}
        fields, fixes = [], {}
        for field in node.get("fields", []):
            ftype, fix = self.rewrite(field["type"], python_fields.get(field["name"]), space)
            new = {**field, "type": ftype}
            if fix is not None:
                fixes[field["name"]] = fix
                if fix[0] == "enum" and new.get("default") in fix[2]:  # a symbol default -> its value
                    new["default"] = fix[3][fix[2].index(new["default"])]
            fields.append(new)
        fix = ("struct", fixes) if fixes else None
        for name in names:
            self.named[name] = (names[0], fix)
        return {**node, "fields": fields}, fix

    def _enum(self, node: dict[str, Any], model: Any, namespace: str | None) -> tuple[Any, Fix | None]:
        names, _ = self._names(node, namespace)
        symbols = list(node.get("symbols", []))
        values = _enum_values(model, symbols)
        found: tuple[Any, Fix | None] = (names[0], None)
        if values is not None:
            found = ("long", ("enum", names[0], tuple(symbols), tuple(values)))
        for name in names:
            self.named[name] = found
        return (node, None) if values is None else found


def _python_reader(definition: bytes, record_cls: Any) -> tuple[str, Fix | None]:
    """The definition Python-written payloads are read with, and the fix of its columns."""
    try:
        document = json.loads(definition)
    except ValueError as exc:
        raise SchemaError(f"the Pulsar JSON schema data is not JSON: {exc}") from None
    rewritten, fix = _PythonReader().rewrite(document, record_cls)
    return json.dumps(rewritten), fix


# -- applying the fixes ---------------------------------------------------------------------------


def _mask(array: pa.Array) -> pa.Array | None:
    return array.is_null() if array.null_count else None


def _convert(array: pa.Array, fix: Fix, bad: list[tuple[np.ndarray, str]]) -> pa.Array:
    """``array`` with ``fix`` applied. Unknown enum values are appended to ``bad`` as (positions in
    ``array``, text); the caller maps positions up to rows."""
    kind = fix[0]
    if kind == "binary":
        return array.cast(pa.binary())
    if kind == "enum":
        _, name, symbols, values = fix
        indices = pac.index_in(array, value_set=pa.array(values, pa.int64()))
        unknown = pac.and_(array.is_valid(), indices.is_null())
        if pac.any(unknown).as_py():
            where = np.flatnonzero(unknown.to_numpy(zero_copy_only=False))
            first = array[int(where[0])].as_py()
            bad.append((where, f"{first} is not a value of enum {name} (values {list(values)})"))
            indices = pac.if_else(unknown, pa.scalar(0, pa.int32()), indices)  # the row is null anyway
        return pa.DictionaryArray.from_arrays(indices.cast(pa.int32()), pa.array(symbols, pa.string()))
    if kind == "struct":
        children, fields = [], []
        for i, field in enumerate(array.type):
            child = array.field(i)
            sub = fix[1].get(field.name)
            if sub is not None:
                inner: list[tuple[np.ndarray, str]] = []
                child = _convert(child, sub, inner)
                bad.extend(inner)  # a struct child's positions are the struct's
            children.append(child)
            fields.append(pa.field(field.name, child.type, field.nullable, field.metadata))
        return pa.StructArray.from_arrays(children, fields=fields, mask=_mask(array))
    # list or map: the child values between the first and last offset, positions mapped to parents
    offsets = array.offsets.to_numpy(zero_copy_only=False)
    lo, hi = int(offsets[0]), int(offsets[-1])
    parents = np.repeat(np.arange(len(array)), np.diff(offsets))
    inner = []
    rebased = pa.array(offsets - lo, pa.int32())
    if kind == "list":
        value_field = array.type.value_field
        values = _convert(array.values[lo:hi], fix[1], inner)
        out_type = pa.list_(pa.field(value_field.name, values.type, value_field.nullable))
        out: pa.Array = pa.ListArray.from_arrays(rebased, values, type=out_type, mask=_mask(array))
    else:
        item_field = array.type.item_field
        items = _convert(array.items[lo:hi], fix[1], inner)
        out_type = pa.map_(array.type.key_field, pa.field(item_field.name, items.type, item_field.nullable))
        out = pa.MapArray.from_arrays(rebased, array.keys[lo:hi], items, type=out_type, mask=_mask(array))
    bad.extend((parents[where], text) for where, text in inner)
    return out


def _bad_rows(batch: pa.RecordBatch, fix: Fix) -> tuple[pa.RecordBatch, dict[int, str]]:
    """``batch`` with the root fix applied, and the rows holding an unknown enum value (row -> text)."""
    bad: list[tuple[np.ndarray, str]] = []
    struct = _convert(batch.to_struct_array(), fix, bad)
    rows: dict[int, str] = {}
    for where, text in bad:
        for row in np.unique(where).tolist():
            rows.setdefault(int(row), text)
    columns = [struct.field(i) for i in range(struct.type.num_fields)]
    fields = [pa.field(f.name, c.type, f.nullable, f.metadata) for f, c in zip(batch.schema, columns)]
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields, metadata=batch.schema.metadata)), rows


def _null_rows(batch: pa.RecordBatch, rows: list[int]) -> pa.RecordBatch:
    """``batch`` with ``rows`` null in every column (error rows)."""
    mask = np.zeros(batch.num_rows, dtype=bool)
    mask[rows] = True
    hit = pa.array(mask)
    columns = [pac.if_else(hit, pa.scalar(None, c.type), c) for c in batch.columns]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _enum_error(row: int, text: str) -> DecodeError:
    # offset 0: the value's position is not kept past the kernel (as for the constraint check)
    detail: Any = text  # the JSON_CONSTRAINT template takes a text detail
    return error_for(ErrorCode.JSON_CONSTRAINT, row, 0, detail)


# -- the decoder ----------------------------------------------------------------------------------


class TopicDecoder:
    """Decode the payloads of a topic written with one Pulsar schema into Arrow, in bulk.

    Parameters
    ----------
    schema : pulsar.schema.Schema, SchemaInfo or external schema
        ``AvroSchema(Record)``, ``JsonSchema(Record)`` or ``ProtobufNativeSchema(MessageClass)``
        of the Python client; a ``_pulsar.SchemaInfo`` or
        :class:`~pulsar_codec.pulsar_types.SchemaInfo` of type AVRO, JSON or PROTOBUF_NATIVE (for
        instance what a Java producer registered, from the admin API); an
        :class:`~pulsar_codec.pulsar.ExternalSchemaAdapter`, or an external schema with
        ``decode_batch`` (:class:`~pulsar_codec.external.JsonExternalSchema`,
        :class:`~pulsar_codec.external.AvroExternalSchema`), whose payloads carry their registry id.
    on_error : {"raise", "null"}
        As for :func:`pulsar_codec.decode`: ``"null"`` makes a bad payload a null row and
        :meth:`decode` returns ``Decoded(batch, errors)``.
    convention : {"jackson", "python"}, optional
        Pulsar JSON only: who wrote the payloads (module notes). Default ``"python"`` for the Python
        client's ``JsonSchema``, else ``"jackson"``.

    Raises
    ------
    SchemaError
        A schema type read elsewhere (primitives: :func:`pulsar_codec.pulsar_types.decode_array`;
        KeyValue: :func:`~pulsar_codec.pulsar.keyvalue_columns`, then a decoder per part).

    Examples
    --------
    >>> decoder = TopicDecoder(JsonSchema(User))                       # doctest: +SKIP
    >>> for raw in read_batches(client, "users"):                       # doctest: +SKIP
    ...     users = decoder.decode(raw)                                 # doctest: +SKIP
    """

    def __init__(self, schema: Any, *, on_error: str = "raise", convention: str | None = None) -> None:
        self._keep_going = check_on_error(on_error)
        self.on_error = on_error
        if convention is not None and convention not in CONVENTIONS:
            raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
        self._external: Any = None
        self._fix: Fix | None = None
        if isinstance(schema, KeyValueSchema):
            raise SchemaError(
                "a KeyValue topic has two parts: split them with pulsar_codec.pulsar.keyvalue_columns "
                "and decode each with a TopicDecoder of its schema"
            )
        if isinstance(schema, ExternalSchemaAdapter):
            schema = schema.external_schema
        if callable(getattr(schema, "decode_batch", None)):
            if convention is not None:
                raise ValueError("convention applies to Pulsar JSON schemas, not to external schemas")
            self._external = schema
            self.schema_type = SchemaType.EXTERNAL
            self.convention = None
            self._decoder = None
            return
        self.schema_type, definition = _schema_parts(schema)
        fmt = _FORMATS.get(self.schema_type)
        if fmt is None:
            raise SchemaError(
                f"TopicDecoder reads AVRO, JSON, PROTOBUF_NATIVE and external schemas, not "
                f"{self.schema_type.name}; primitive payloads decode with "
                "pulsar_codec.pulsar_types.decode_array; Pulsar PROTOBUF payloads (whose schema data "
                "is an Avro definition) with pulsar_codec.MessageDecoder({id: the .proto or "
                "descriptor}, format='PROTOBUF').decode_payloads"
            )
        if self.schema_type is not SchemaType.JSON:
            if convention is not None:
                raise ValueError(f"convention applies to Pulsar JSON schemas, not {self.schema_type.name}")
            self.convention = None
        else:
            python_client = isinstance(schema, _pulsar_client.schema.JsonSchema)
            self.convention = convention or ("python" if python_client else "jackson")
            if self.convention == "python":
                record_cls = getattr(schema, "_record_cls", None) if python_client else None
                text, self._fix = _python_reader(definition, record_cls)
                definition = text.encode("utf-8")
        # the fixed conversions run on whole batches, so the kernel keeps going and errors are merged
        keep_going = self._keep_going or self._fix is not None
        self._decoder = MessageDecoder(
            {_SCHEMA_ID: definition.decode("utf-8")}, format=fmt, on_error="null" if keep_going else "raise"
        )

    def __repr__(self) -> str:
        what = "EXTERNAL" if self._external is not None else self.schema_type.name
        extra = f", convention={self.convention!r}" if self.convention else ""
        return f"TopicDecoder({what}{extra}, on_error={self.on_error!r})"

    def arrow_schema(self) -> pa.Schema | None:
        """The columns of every decoded batch (None for an external schema: they follow the
        registry's writer schemas)."""
        if self._external is not None:
            return None
        decoded = self.decode([])
        return (decoded.batch if isinstance(decoded, Decoded) else decoded).schema

    def decode(self, messages: Any) -> pa.RecordBatch | Decoded:
        """Decode payloads into a ``pa.RecordBatch`` (one column per record field), rows in order.

        Parameters
        ----------
        messages : pa.RecordBatch, pa.Table, pa.Array, pa.ChunkedArray or sequence of bytes / None
            A :func:`~pulsar_codec.pulsar.read_batches` batch (its ``payload`` column is read), or
            the payloads themselves; null payloads (tombstones) give null rows.

        Returns
        -------
        pa.RecordBatch, or Decoded with ``on_error="null"``

        Raises
        ------
        DecodeError
            With ``on_error="raise"``, for the first bad payload (its index and byte offset).
        """
        if isinstance(messages, (pa.RecordBatch, pa.Table)):
            messages = messages.column("payload")
        if self._external is not None:
            return self._external.decode_batch(messages, on_error=self.on_error)
        assert self._decoder is not None
        if self._fix is None:
            return self._decoder.decode_payloads(messages, _SCHEMA_ID)
        return self._decode_fixed(messages)

    def _decode_fixed(self, messages: Any) -> pa.RecordBatch | Decoded:
        assert self._decoder is not None and self._fix is not None
        result = self._decoder.decode_payloads(messages, _SCHEMA_ID)
        assert isinstance(result, Decoded)
        batch, rows = _bad_rows(result.batch, self._fix)
        kernel_errors = result.errors
        if not self._keep_going:
            first = min(rows) if rows else None
            kernel_first = kernel_errors.column("index")[0].as_py() if kernel_errors.num_rows else None
            if kernel_first is not None and (first is None or kernel_first < first):
                # the kernel's own error, raised as a plain decode raises it
                self._raise_kernel_error(messages)
            if first is not None:
                raise _enum_error(first, rows[first])
            return batch
        if not rows:
            return Decoded(batch, kernel_errors)
        batch = _null_rows(batch, sorted(rows))
        extra = [(ErrorCode.JSON_CONSTRAINT, row, 0, text, str(_enum_error(row, text))) for row, text in rows.items()]
        known = [
            (int(e["code"]), int(e["index"]), int(e["offset"]), 0, e["message"]) for e in kernel_errors.to_pylist()
        ]
        return Decoded(batch, errors_table(sorted(known + extra, key=lambda e: e[1])))

    def _raise_kernel_error(self, messages: Any) -> None:
        """Raise the first kernel error exactly as ``on_error="raise"`` decoding does."""
        assert self._decoder is not None
        strict = MessageDecoder(self._decoder.registry, format=self._decoder.format, on_error="raise")
        strict.decode_payloads(messages, _SCHEMA_ID)
        raise AssertionError("the strict decode found no error the tolerant one reported")  # pragma: no cover


def read_decoded(
    client_or_url: Any,
    topic: str,
    schema: Any,
    *,
    on_error: str = "raise",
    convention: str | None = None,
    **read_options: Any,
) -> Iterator[pa.RecordBatch | Decoded]:
    """Read a topic and decode its payloads: :func:`~pulsar_codec.pulsar.read_batches` through a
    :class:`TopicDecoder`.

    Parameters
    ----------
    client_or_url, topic
        As for :func:`~pulsar_codec.pulsar.read_batches`.
    schema, on_error, convention
        As for :class:`TopicDecoder`.
    **read_options
        Passed to :func:`~pulsar_codec.pulsar.read_batches` (``batch_size``, ``start``, ``end``...).

    Yields
    ------
    pa.RecordBatch, or Decoded with ``on_error="null"`` (error indexes count within the batch)

    Notes
    -----
    The message metadata (keys, publish times, message ids) is in the batches of
    :func:`~pulsar_codec.pulsar.read_batches`; read those and call :meth:`TopicDecoder.decode` on
    each to keep both side by side.
    """
    decoder = TopicDecoder(schema, on_error=on_error, convention=convention)
    for batch in read_batches(client_or_url, topic, **read_options):
        yield decoder.decode(batch)
