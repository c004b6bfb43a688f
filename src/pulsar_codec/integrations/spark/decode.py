"""``decode``: a column of framed messages (or PIP-420 bodies) into a struct column, in a Spark job.

The driver resolves the writer schemas it can (a pre-pass over the prefixes, ``subjects``), builds
one :class:`~pulsar_codec.pipeline.MessageDecoder` over them and ships it inside the job. Each
executor process keeps one decoder per configuration (:mod:`.executor`) and hands it the binary
column of every ``mapInArrow`` batch as it arrives.

Where a row's schema id comes from (``schema_id_from``):

* ``"payload"``: the wire prefix of the message, in any protocol :mod:`pulsar_codec.wire` reads
  (Confluent's ``00`` + id and ``01`` + GUID forms, with the Protobuf message-index array for the
  ``*_PROTOBUF`` ones, Hortonworks, Apicurio v2 / v3, AWS Glue);
* ``"column"``: ``schema_id_column`` (PIP-420 bodies);
* ``"headers"``: a record header of a DataFrame shaped like Spark's Kafka source (``headers``:
  ``array<struct<key: string, value: binary>>``), the payload then carrying no prefix, as
  :class:`HeaderIds` describes for each registry family. A row without the header is read from
  its payload prefix, as the registries' own deserializers fall back.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ... import wire
from ..._kernels import _backend
from ...errors import ErrorCode, SchemaError
from ...formats import format_of_model, get_format
from ...pipeline import MessageDecoder
from ...registry import fetch_schema
from .batches import RowError, error_column, local_text, replace_columns, valid
from .driver import cache_key, id_column, newest_key, registry_parts, resolve_on_driver, self_contained, wants_prepass
from .executor import ShippedSchemas, count_batch, schema_key, shared_decoder, use_backend
from .headers import HeaderIds, decode_routed
from .types import ERROR_TYPE, reader_struct, spark_type

__all__ = ["DecodeJob", "decode"]


def check_protocol(protocol: Any) -> wire.Protocol:
    """The :mod:`pulsar_codec.wire` protocol named ``protocol``, if it frames Avro with integer ids."""
    found = wire.protocol_by_name(protocol)
    if getattr(found, "guid", False) or getattr(found, "protobuf", False):
        raise ValueError(f"{found.name} is not an Avro protocol with integer schema ids; spark.decode reads Avro")
    return found


def check_headers_column(df: Any, name: str) -> None:
    """Refuse, before any job, a ``headers_column`` the DataFrame lacks or that is not shaped like
    the Kafka source's ``array<struct<key: string, value: binary>>`` (an executor would fail on it)."""
    from pyspark.sql.types import ArrayType, BinaryType, StringType, StructType

    if name not in df.columns:
        raise ValueError(
            f"schema_id_from='headers' reads the record headers in column {name!r}, which the DataFrame does"
            f" not have (it has {df.columns}): pass headers_column="
        )
    typ = df.schema[name].dataType
    element = typ.elementType if isinstance(typ, ArrayType) else None
    fields = {f.name: f.dataType for f in element.fields} if isinstance(element, StructType) else {}
    if not (isinstance(fields.get("key"), StringType) and isinstance(fields.get("value"), (BinaryType, StringType))):
        raise ValueError(
            f"headers_column {name!r} is {typ.simpleString()}, not the Kafka source's"
            " array<struct<key:string,value:binary>>"
        )


def decode_protocol(protocol: Any) -> wire.Protocol:
    """The :mod:`pulsar_codec.wire` protocol named ``protocol``: :func:`decode` reads every one."""
    return wire.protocol_by_name(protocol)


@dataclass(frozen=True)
class DecodeJob:
    """The ``mapInArrow`` function of :func:`decode` (pickled to the executors with its decoder).

    Attributes
    ----------
    decoder : MessageDecoder
        Reads a :class:`~.executor.ShippedSchemas`, has a reader schema, ``on_error="null"``.
    cache_key : hashable
        The decoder's configuration: equal keys share one decoder per executor process.
    column, id_column, output, error_column : str
        As :func:`decode`'s ``column``, ``schema_id_column``, ``output``, ``error_column``.
    backend : str
        The backend the driver ran.
    headers : HeaderIds, optional
        Ids in record headers (``schema_id_from="headers"``).
    variants : tuple of MessageDecoder
        With ``headers``: the decoders of the other protocols a frame may be in (route 1 on;
        ``decoder`` reads route 0), with the same reader.
    """

    decoder: MessageDecoder
    cache_key: Hashable
    column: str
    id_column: str | None
    output: str
    error_column: str
    backend: str
    headers: HeaderIds | None = None
    variants: tuple[MessageDecoder, ...] = ()
    keep: tuple[str, ...] | None = None
    flatten: bool = False

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        """Decode every batch's column with this process's decoder; other columns pass through
        (those of ``keep`` only, when it is given)."""
        decoder = shared_decoder(self.cache_key, self.decoder, self.decoder.registry)
        variants = tuple(shared_decoder((self.cache_key, d.protocol.name), d, d.registry) for d in self.variants)
        target, converters = reader_struct(decoder.arrow_schema, self.non_null(decoder))
        fields = list(target)
        with use_backend(self.backend):
            for batch in batches:
                count_batch()
                yield self.decode_batch(batch, decoder, fields, converters, variants)

    def non_null(self, decoder: MessageDecoder) -> frozenset[str]:
        """The fields the output declares non-nullable: the reader's non-null columns inside the
        struct; none when flattened (a bad row is then null in every field)."""
        return frozenset() if self.flatten else decoder.non_null_columns

    def decode_batch(
        self,
        batch: Any,
        decoder: MessageDecoder,
        fields: list[Any],
        converters: list[Any],
        variants: Sequence[MessageDecoder] = (),
    ) -> Any:
        """One batch: the struct column (null for null and bad rows) and the error column."""
        n = batch.num_rows
        messages = given = batch.column(self.column)
        found: list[RowError] = []  # bad rows the decoder does not see
        if self.headers is not None:
            messages, routes, found = self.headers.frames(batch.column(self.headers.column), messages, decoder.protocol)
            decoded, errors = decode_routed(messages, routes, (decoder, *variants))
        elif self.id_column is None:
            decoded, errors = decoder.decode(messages)
        else:
            ids = id_column(batch.column(self.id_column))
            id_valid = valid(ids)
            orphans = np.flatnonzero(valid(messages) & ~id_valid)
            if len(orphans):  # a body without an id is a bad row: decode it as null
                messages = pc.if_else(pa.array(id_valid), messages, pa.scalar(None, messages.type))
                found = [(i, None, 0, f"no schema id for the payload of message {i}") for i in orphans.tolist()]
            decoded, errors = decoder.decode_payloads(messages, ids.fill_null(0))
        bad = ~valid(messages)
        rows = np.asarray(errors.column("index").to_numpy(), dtype=np.int64)
        bad[rows] = True
        bad[[r for r, _, _, _ in found]] = True
        children = [decoded.column(k) if fn is None else fn(decoded.column(k)) for k, fn in enumerate(converters)]
        found = found + null_holes(children, fields, bad)
        texts = [local_text(t) for t in errors.column("message").to_pylist()]
        codes = errors.column("code").to_numpy()
        offsets = errors.column("offset").to_numpy()
        code_valid = None
        if found:
            texts += [t for _, _, _, t in found]
            code_valid = np.concatenate([np.ones(len(rows), dtype=bool), [c is not None for _, c, _, _ in found]])
            codes = np.concatenate([codes, np.array([c or 0 for _, c, _, _ in found], dtype=np.int32)])
            offsets = np.concatenate([offsets, np.array([o for _, _, o, _ in found], dtype=np.int64)])
            rows = np.concatenate([rows, np.array([r for r, _, _, _ in found], dtype=np.int64)])
            bad[rows] = True
        struct = pa.StructArray.from_arrays(children, fields=fields, mask=pa.array(bad) if bad.any() else None)
        if self.keep is not None:
            batch = batch.select(list(self.keep))
        # flattened, a bad or null row is null in every field (flatten() folds the struct's mask in)
        outputs = dict(zip(struct.type.names, struct.flatten())) if self.flatten else {self.output: struct}
        outputs[self.error_column] = error_column(n, rows, codes, offsets, texts, code_valid, given)
        return replace_columns(batch, outputs)


def null_holes(children: Sequence[Any], fields: Sequence[Any], bad: Any) -> list[RowError]:
    """Error rows for good rows that are null in a field the struct declares non-nullable.

    The formats' ``non_null_fields`` say which fields a decoder never leaves null in a good row;
    should one be wrong, the JVM would read a null slot as a value (0, an empty string), so the row
    goes out as an error row with its bytes instead. Costs nothing when the fields hold no null.
    """
    holes: list[RowError] = []
    for child, field in zip(children, fields):
        if field.nullable or not child.null_count:
            continue
        for i in np.flatnonzero(~valid(child) & ~bad).tolist():
            text = f"field {field.name!r} of message {i} is null, which the reader schema does not allow"
            holes.append((i, int(ErrorCode.SCHEMA_UNRESOLVABLE), 0, text))
    return holes


def decode(
    df: Any,
    column: str = "value",
    *,
    registry: Any,
    protocol: Any = None,
    reader_schema: Any = None,
    schema_id_column: str | None = None,
    output: str = "decoded",
    error_column: str = "decode_error",
    subjects: list[str] | None = None,
    prefetch: bool | None = None,
    format: str | None = None,
    schema_id_from: str | None = None,
    headers_column: str = "headers",
    schema_id_header: str | None = None,
    reader_subject: str | None = None,
    message: str | None = None,
    keep_columns: Sequence[str] | None = None,
    flatten: bool = False,
) -> Any:
    """Decode a column of framed messages (or of PIP-420 bodies) into a struct column.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    column : str
        Binary column of framed messages (``protocol``) or, with ``schema_id_column``, of bare
        Avro bodies; with ``schema_id_from="headers"``, of payloads whose id is in a header.
    registry : Registry client, Mapping of id -> schema, RegistryConfig, or URL / path
        Used on the driver to resolve ids; executors rebuild the client from its
        :class:`~pulsar_codec.registry.RegistryConfig` for ids the driver did not resolve.
        GUIDs are looked up by GUID (``get_schema_by_guid``, ``GET /schemas/guids/{guid}``); a
        Mapping may be keyed by the ``uuid.UUID`` or its text.
    protocol : wire.Protocol or str, optional
        The prefix format (default Confluent's, ``CONFLUENT_PROTOBUF`` with ``format="PROTOBUF"``):
        any protocol of :mod:`pulsar_codec.wire` (CONFLUENT, CONFLUENT_PROTOBUF,
        CONFLUENT_GUID, CONFLUENT_GUID_PROTOBUF, HORTONWORKS, APICURIO, APICURIO_V3, AWS_GLUE).
        With ``schema_id_from="headers"`` it names the registry family (see :class:`HeaderIds`)
        and the prefix of rows without the header.
    reader_schema : schema, optional
        The schema every row is read as; it fixes the output struct. Default: the latest
        version of ``reader_subject``; else the writer schema with the highest id among those
        resolved on the driver: the Mapping's, ``subjects`` ' versions, or those the pre-pass
        found in the column (GUIDs rank by the id the registry gives with them, else by the id of
        a numbered schema of the same text, else by text, with a warning: a REST registry's GUID
        answer names no id, so pass ``reader_schema`` when a column holds GUIDs only).
    schema_id_column : str, optional
        A column with each row's schema id (integers, or PIP-420 ``schema_id`` bytes: optional
        ``FF`` magic byte, then a big-endian id); ``column`` then holds bare Avro bodies.
    output, error_column : str
        Names of the struct column and of the error column (existing columns with those names are
        replaced).
    subjects : list of str, optional
        Also ship every version of these subjects to the executors.
    prefetch : bool, optional
        Run the distinct-id pre-pass: a scan of the column's prefixes (inside the JVM) before the
        job, whose ids are resolved on the driver and shipped. By default it runs only when it is
        needed (see :func:`wants_prepass`): not with ``reader_schema``, ``reader_subject`` or
        ``subjects`` and a registry the executors can open (a URL, a registry file, a client with
        a :class:`~pulsar_codec.registry.RegistryConfig`), nor with a Mapping; each executor
        process then fetches each id it meets once. True forces it, False skips it (give
        ``reader_schema``, ``reader_subject`` or ``subjects`` then). Never run for streaming
        DataFrames.
    format : str, optional
        The payload format (``"AVRO"``, ``"JSON"``, ``"PROTOBUF"``): default the registry's
        ``schemaType`` of the newest resolved schema (a Mapping registry of plain text is Avro
        unless this says otherwise).
    schema_id_from : {"payload", "column", "headers"}, optional
        Where each row's schema id is: the message's prefix (the default), ``schema_id_column``
        (the default when it is given), or a record header of ``headers_column`` (Spark's Kafka
        source output: ``key``, ``value``, ``topic``, ``partition``, ``offset``, ``timestamp``,
        ``headers``), the payload then carrying no prefix: Confluent's ``__value_schema_id`` /
        ``__key_schema_id`` (``01`` + GUID or ``00`` + id, then Protobuf message indexes),
        Hortonworks' ``value.schema.version.id`` / ``key.schema.version.id``, Apicurio's
        ``apicurio.value.globalId`` (``APICURIO``) or ``apicurio.value.contentId``
        (``APICURIO_V3``), chosen by ``protocol``; the key's header when ``column`` is ``"key"``.
        A row without the header is read from its payload prefix; a header that is not exactly one
        id prefix (cut short, or running on) is an error row.
    headers_column : str, default "headers"
        The ``array<struct<key: string, value: binary>>`` column of record headers.
    schema_id_header : str, optional
        Another header name than the family's default (registries let it be renamed).
    reader_subject : str, optional
        Read every row as the latest version of this subject (asked of the registry on the
        driver, once); every version of it is shipped.
    message : str, optional
        Protobuf: the full name of the message every row is read as (the output struct); default
        the reader schema's own message (Pulsar ``PROTOBUF_NATIVE``'s root), else its file's first.
        Rows of another message type are error rows (code ``SCHEMA_OTHER_MESSAGE``).

    keep_columns : list of str, optional
        The input columns the result keeps beside ``output`` and ``error_column``. Default: every
        one but ``column``, whose bytes the error column keeps for the rows that failed
        (``error_column.payload``). Name ``column`` here (``keep_columns=df.columns``: all) to get
        every row's bytes back. A ``mapInArrow`` stage hands every column it returns back to the
        JVM, which cannot prune them afterwards: every message's bytes cost Spark about as much
        as the decoded struct. ``keep_columns=[]`` returns the struct and the error column alone.
    flatten : bool, default False
        Return the reader schema's fields as columns of their own instead of the ``output``
        struct (what ``.select("decoded.*")`` gives, without Spark copying every row's struct
        once more: about a fifth faster on complex-12). A bad or null message is null in every
        field. A field named as a kept column or ``error_column`` is an error: pass
        ``keep_columns`` or leave the fields in their struct.

    Returns
    -------
    pyspark.sql.DataFrame
        The input columns (``keep_columns`` when given, else all but ``column``, in the input's
        order), then ``output`` (or, with ``flatten``, the reader's fields) and ``error_column``
        (``struct<code:int, offset:bigint, message:string, payload:binary>``, null for a good or a
        null message; ``payload``: the bad row's ``column`` bytes).

    Raises
    ------
    SchemaError
        No reader schema can be chosen (nothing resolved on the driver and none given).

    A row whose schema id the registry does not know is an error row (code
    ``ErrorCode.SCHEMA_NOT_FOUND``), as with :class:`~pulsar_codec.pipeline.MessageDecoder`'s
    ``on_error="null"``; the ids the pre-pass found missing (and, with a Mapping, every id not in
    it) are not asked for on the executors.
    """
    from pyspark.sql.types import StructField, StructType

    kept = None if keep_columns is None else tuple(keep_columns)
    if kept is not None:
        unknown = [name for name in kept if name not in df.columns]
        if unknown:
            raise ValueError(f"keep_columns names columns the DataFrame does not have: {unknown}; it has {df.columns}")
    auto_protocol = protocol is None
    if protocol is None:
        protocol = wire.CONFLUENT_PROTOBUF if (format or "").upper() == "PROTOBUF" else wire.CONFLUENT
    wire_protocol = decode_protocol(protocol)
    source = schema_id_from or ("column" if schema_id_column is not None else "payload")
    if source not in ("payload", "column", "headers"):
        raise ValueError(f"schema_id_from must be 'payload', 'column' or 'headers', not {schema_id_from!r}")
    if (source == "column") != (schema_id_column is not None):
        raise ValueError("schema_id_column goes with schema_id_from='column' (its default), and only with it")
    headers = HeaderIds.of(wire_protocol, column, headers_column, schema_id_header) if source == "headers" else None
    if headers is not None:
        check_headers_column(df, headers_column)
    client, fallback, given = registry_parts(registry)
    complete = isinstance(registry, Mapping)  # shipped whole: an id not in it is in no registry
    if reader_subject is not None and complete:
        raise ValueError("reader_subject needs a registry client, not a Mapping of id -> schema")
    every = list(subjects or ()) + (
        [reader_subject] if reader_subject and reader_subject not in (subjects or ()) else []
    )
    reader_fixed = reader_schema is not None or bool(every) or (complete and bool(given))
    prepass = wants_prepass(prefetch, df.isStreaming, complete or fallback is not None, reader_fixed)
    try:
        resolved, missing = resolve_on_driver(
            df, column, wire_protocol, client, schema_id_column, every, prepass, headers
        )
        shipped = {schema_key(k): v for k, v in {**given, **resolved}.items()}
        latest = None
        if reader_schema is None and reader_subject is not None:
            latest = self_contained(client, client.get_version(reader_subject, "latest"))
    finally:
        if client is not registry and hasattr(client, "close"):
            client.close()
    if reader_schema is not None:
        reader = reader_schema
        format = format or format_of_model(reader)  # a parsed reader (a Protobuf model) names its format
    elif shipped:
        newest = fetch_schema(shipped, newest_key(shipped) if latest is None else schema_key(latest.schema_id))
        format = format or newest.schema_type
        reader = newest.schema
        if newest.references:  # shipped with their texts: parsed here with them
            reader = get_format(format).parse(newest.schema, newest.references)
    else:
        raise SchemaError(
            "no reader schema: no schema id was resolved on the driver; pass reader_schema, reader_subject or subjects"
        )
    if auto_protocol and wire_protocol is wire.CONFLUENT and (format or "").upper() == "PROTOBUF":
        wire_protocol = wire.CONFLUENT_PROTOBUF  # Confluent's Protobuf prefix holds a message-index path
    schemas = ShippedSchemas(shipped, fallback, missing, complete=complete)
    protocols = headers.protocols(wire_protocol) if headers is not None else (wire_protocol,)
    options: dict[str, Any] = {"reader_schema": reader, "on_error": "null", "format": format}
    if message is not None:
        options["message"] = message
    decoders = [MessageDecoder(schemas, protocol=p, **options) for p in protocols]
    decoder = decoders[0]
    target, _ = reader_struct(decoder.arrow_schema, frozenset() if flatten else decoder.non_null_columns)
    if kept is None:  # the messages' bytes come back in the errors of the rows that failed only
        kept = tuple(name for name in df.columns if name != column)
    keep = [f for f in df.schema.fields if f.name not in (output, error_column) and f.name in kept]
    if flatten:
        taken = {f.name for f in keep} | {error_column}
        clashes = [f.name for f in target if f.name in taken]
        if clashes:
            raise ValueError(
                f"flatten=True: the reader's fields {clashes} are named as columns the result keeps"
                f" ({sorted(taken)}); pass keep_columns without them, or leave flatten off"
            )
        decoded = [StructField(f.name, spark_type(f.type), True) for f in target]
    else:
        decoded = [StructField(output, spark_type(target), True)]
    out_schema = StructType(keep + decoded + [StructField(error_column, spark_type(ERROR_TYPE), True)])
    job = DecodeJob(
        decoder=decoder,
        cache_key=(cache_key(fallback, protocols[0], reader, shipped, format), message),
        column=column,
        id_column=schema_id_column,
        output=output,
        error_column=error_column,
        backend=_backend.active().name,
        headers=headers,
        variants=tuple(decoders[1:]),
        keep=tuple(f.name for f in keep),
        flatten=flatten,
    )
    return df.mapInArrow(job, out_schema)
