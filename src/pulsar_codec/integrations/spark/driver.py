"""The driver's side of :func:`~.decode.decode`, before the job runs: which writer schemas it ships.

The distinct-id pre-pass finds the schema ids of the column (cut from the prefixes or the record
headers and deduplicated inside the JVM, or read from ``schema_id_column``); the driver resolves
them, and every version of ``subjects``, into self-contained schemas, picks the newest as the
default reader, and keys the executors' decoder cache. :func:`id_column` (PIP-420 id bytes) also
serves the decode job (:mod:`.decode`).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import uuid
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ... import wire
from ..._arrow import walk_bad_rows
from ...errors import DecodeError, SchemaNotFoundError
from ...formats import get_format
from ...registry import FetchedSchema, RegisteredSchema, RegistryConfig, fetch_schema, schema_text
from .headers import HeaderIds

__all__ = [
    "cache_key",
    "frame_ids",
    "id_column",
    "newest_key",
    "registry_parts",
    "resolve_on_driver",
    "schema_keys",
    "self_contained",
    "wants_prepass",
]


def _id_twin(protocol: wire.Protocol) -> wire.Protocol:
    """The protocol that reads a prefix cut after the id: the Protobuf ones without their
    message-index array (a cut prefix may end inside it)."""
    if protocol is wire.CONFLUENT_PROTOBUF:
        return wire.CONFLUENT
    if protocol is wire.CONFLUENT_GUID_PROTOBUF:
        return wire.CONFLUENT_GUID
    return protocol


def schema_keys(ids: Any) -> list[Any]:
    """The distinct registry keys of ``wire.unframe(...).schema_ids``: ints, ``uuid.UUID`` s for
    the GUID protocols, and ``(metadata_id, version)`` for Hortonworks protocol-1 messages (as
    :class:`MessageDecoder` asks for them)."""
    if pa.types.is_fixed_size_binary(ids.type):
        return [uuid.UUID(bytes=g) for g in pc.unique(ids.drop_null()).to_pylist()]
    if not pa.types.is_struct(ids.type):
        return list(pc.unique(ids.drop_null()).to_pylist())
    found: set[Any] = set()
    for row in pc.unique(ids.drop_null()).to_pylist():
        if row["metadata_id"] is not None:
            found.add((int(row["metadata_id"]), int(row["version"])))
        elif row["version_id"] is not None:
            found.add(int(row["version_id"]))
    return list(found)


def frame_ids(messages: Any, protocol: wire.Protocol) -> set[Any]:
    """Distinct schema ids of framed messages; messages with a bad prefix are skipped (the decode
    job reports them). Reads only the prefixes."""
    found: set[Any] = set()
    protocol = _id_twin(protocol)
    if isinstance(protocol, wire.GlueProtocol):
        # the id is bytes 2 to 18; a cut prefix holds no body to inflate, so it is not unframed
        for m in messages.to_pylist():
            if m is not None and len(m) >= 18 and m[0] == 3 and m[1] in (0, 5):
                found.add(uuid.UUID(bytes=m[2:18]))
        return found

    def attempt(lo: int, hi: int) -> int | None:
        piece = messages.slice(lo, hi - lo)
        try:
            found.update(schema_keys(wire.unframe(piece, protocol).schema_ids))
            return None
        except DecodeError as exc:
            bad = exc.index or 0
            if bad:
                found.update(schema_keys(wire.unframe(piece.slice(0, bad), protocol).schema_ids))
            return bad

    walk_bad_rows(len(messages), attempt)
    return found


def id_column(arr: Any) -> Any:
    """An int64 schema-id array from an integer column, or from a binary one (PIP-420
    ``schema_id`` bytes, :func:`pulsar_codec.wire.pulsar_schema_id_ints`)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_integer(arr.type):
        return arr.cast(pa.int64())
    if not (
        pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type) or pa.types.is_fixed_size_binary(arr.type)
    ):
        raise TypeError(f"schema_id_column must hold integers or binary ids, not {arr.type}")
    return wire.pulsar_schema_id_ints(arr.cast(pa.binary()) if pa.types.is_fixed_size_binary(arr.type) else arr)


def _prefix_shape(protocol: wire.Protocol) -> tuple[int, tuple[int, ...]]:
    """(bytes to cut, first bytes a valid prefix may start with) for the id pre-pass."""
    protocol = _id_twin(protocol)
    if isinstance(protocol, wire.HortonworksProtocol):
        return 13, (0, 1, 2, 3, 4)
    if isinstance(protocol, wire.GlueProtocol):
        return 18, (3,)
    if isinstance(protocol, wire.ApicurioProtocol):
        return (9 if protocol.id_bytes == 8 else 5), (0,)
    if protocol.guid:
        return 17, (1,)
    return 5, (0,)


def _distinct_prefix_ids(df: Any, column: str, protocol: wire.Protocol) -> set[Any]:
    """The distinct schema ids of a column of framed messages, found inside the JVM: the prefixes
    are cut with ``substring`` and deduplicated by Spark, so no message travels to Python; the
    driver then parses the few distinct prefixes (malformed ones are skipped: the decode job
    reports those rows)."""
    from pyspark.sql import functions as F

    col = F.col(column)
    first = F.substring(col, 1, 1)
    size, magics = _prefix_shape(protocol)
    if isinstance(protocol, wire.HortonworksProtocol):
        # protocol byte 1: i64 metadata id + i32 version; 2: i64 version id; 0, 3, 4: i32 id
        prefix = (
            F.when(first == F.lit(bytearray(b"\x01")), F.substring(col, 1, 13))
            .when(first == F.lit(bytearray(b"\x02")), F.substring(col, 1, 9))
            .otherwise(F.substring(col, 1, 5))
        )
    else:
        prefix = F.substring(col, 1, size)
    magic = first.isin(*[F.lit(bytearray([b])) for b in magics])
    rows = df.where(col.isNotNull() & magic).select(prefix.alias("prefix")).distinct().collect()
    return frame_ids(pa.array([bytes(r["prefix"]) for r in rows], pa.binary()), protocol)


def _distinct_header_ids(df: Any, column: str, protocol: wire.Protocol, headers: HeaderIds) -> set[Any]:
    """:func:`_distinct_prefix_ids` for ids in record headers: the headers (else the payload's own
    prefix) are deduplicated inside the JVM, then parsed on the driver by the protocol each one is
    in (see :class:`HeaderIds`). A header is parsed alone, never run on into its payload, so one
    that is cut short gives no id (the decode job reports its row)."""
    from pyspark.sql import functions as F

    col = F.col(column)
    named = F.filter(F.col(headers.column), lambda h: (h["key"] == F.lit(headers.name)) & h["value"].isNotNull())
    picked = F.try_element_at(named, F.lit(-1 if headers.last else 1))["value"]
    head = F.when(picked.isNull(), F.substring(col, 1, 18))
    rows = df.where(col.isNotNull()).select(picked.alias("header"), head.alias("head")).distinct().collect()
    frames: list[bytes] = []
    routes: list[int] = []
    for r in rows:
        header = None if r["header"] is None else bytes(r["header"])
        if header is None:
            frame, route = bytes(r["head"]), 0
        elif headers.kind == "apicurio":  # an 8-byte id: the frame is 00 + header (another length: a bad row)
            if len(header) != 8:
                continue
            frame, route = b"\x00" + header, 1
        else:
            frame, route = header, 0
        if headers.kind == "confluent":
            route = 1 if frame[:1] == b"\x01" else 0
        frames.append(frame)
        routes.append(route)
    found: set[Any] = set()
    chosen = np.array(routes, dtype=np.int64)
    arr = pa.array(frames, pa.binary())
    for k, variant in enumerate(headers.protocols(protocol)):
        found |= frame_ids(arr.filter(pa.array(chosen == k)), variant)
    return found


def _ids_in_column(df: Any, column: str, id_column_name: str) -> set[Any]:
    ids_df = df.select(column, id_column_name).where(f"`{column}` IS NOT NULL")
    values = [r[0] for r in ids_df.select(id_column_name).distinct().collect() if r[0] is not None]
    if ids_df.schema[id_column_name].dataType.typeName() in ("integer", "long", "short", "byte"):
        return {int(v) for v in values}
    return set(id_column(pa.array([bytes(v) for v in values], pa.binary())).drop_null().to_pylist())


def self_contained(client: Any, found: Any) -> Any:
    """``found`` as shipped: a schema with references gets their texts (and their references'),
    fetched here, so the executors parse it without asking the registry."""
    references = tuple(getattr(found, "references", None) or ())
    if not references or isinstance(client, Mapping):
        return found
    kind = getattr(found, "schema_type", None)
    resolve = getattr(get_format(kind), "resolve_references", None)
    if resolve is None:
        return found
    text = schema_text(found)
    # a GUID's schema keeps the registry's id beside it: it orders the schemas (see newest_key)
    number = getattr(found, "id", None)
    if isinstance(number, int) and isinstance(kind, str):
        return RegisteredSchema(number, text, kind.upper(), references=tuple(resolve(client, references)))
    return FetchedSchema(text, kind.upper() if isinstance(kind, str) else None, tuple(resolve(client, references)))


def _writer(client: Any, schema_id: Any) -> Any:
    """The registry's answer for ``schema_id`` as the executors' decoder reads it (see
    :func:`self_contained`); for a GUID the client's own answer (this package's carries the
    registry's integer id, which orders it)."""
    if isinstance(schema_id, uuid.UUID) and not isinstance(client, Mapping):
        by_guid = getattr(client, "get_schema_by_guid", None)
        if callable(by_guid):
            found = by_guid(str(schema_id))
            if found is None:
                raise SchemaNotFoundError(f"schema id {schema_id} is not in the registry")
            return self_contained(client, found)
    return self_contained(client, fetch_schema(client, schema_id))


def wants_prepass(prefetch: bool | None, streaming: bool, executors_resolve: bool, reader_fixed: bool) -> bool:
    """Whether :func:`decode` runs the distinct-id pre-pass (a scan of the column before the job).

    ``prefetch`` True or False decides. By default (None) the pre-pass runs only when the job
    cannot do without it: when the output struct depends on the ids in the column (no
    ``reader_schema``, ``reader_subject`` or ``subjects``, and no Mapping to take the newest
    schema from), or when the executors cannot resolve an id themselves (a client without a
    :class:`~pulsar_codec.registry.RegistryConfig`, an in-memory registry). Otherwise each
    executor process asks the registry for each id it meets, once. A streaming DataFrame is never
    scanned ahead of its query.
    """
    if streaming:
        return False
    if prefetch is not None:
        return bool(prefetch)
    return not (executors_resolve and reader_fixed)


def resolve_on_driver(
    df: Any,
    column: str,
    protocol: wire.Protocol,
    client: Any,
    id_column_name: str | None,
    subjects: list[str] | None,
    prefetch: bool,
    headers: HeaderIds | None = None,
) -> tuple[dict[Any, Any], set[Any]]:
    """The writer schemas the job ships (every id in the column when ``prefetch`` runs the
    pre-pass, and every version of ``subjects``), and the ids of the pre-pass that the registry
    does not know (their rows are error rows)."""
    shipped: dict[Any, Any] = {}
    missing: set[Any] = set()
    if prefetch:
        if id_column_name is not None:
            ids = _ids_in_column(df, column, id_column_name)
        elif headers is not None:
            ids = _distinct_header_ids(df, column, protocol, headers)
        else:
            ids = _distinct_prefix_ids(df, column, protocol)
        for schema_id in sorted(ids, key=_order):
            try:
                shipped[schema_id] = _writer(client, schema_id)
            except SchemaNotFoundError:
                missing.add(schema_id)
    for subject in subjects or ():
        for version in client.list_versions(subject):
            found = self_contained(client, client.get_version(subject, version))  # the decoder reads it as it is
            shipped[int(found.schema_id)] = found
            missing.discard(int(found.schema_id))
            guid = getattr(client.get_version(subject, version), "guid", None)
            if isinstance(guid, str):  # GUID frames name the same schema by its GUID
                shipped[uuid.UUID(guid)] = found
                missing.discard(uuid.UUID(guid))
    return shipped, missing


def _order(key: Any) -> tuple[int, Any]:
    # ints first (by id), then Hortonworks (metadata id, version) pairs, then GUIDs (by text)
    if isinstance(key, uuid.UUID):
        return (2, (str(key), 0))
    return (0, (key, 0)) if isinstance(key, int) else (1, key)


def _number(found: Any) -> int | None:
    number = getattr(found, "id", None)
    if isinstance(number, int) and not isinstance(number, bool) and number >= 0:
        return number
    return None


def _same_schema(found: Any) -> tuple[Any, ...] | None:
    """What makes two registry answers one schema (its text, type and references), or None."""
    try:
        text = schema_text(found)
    except TypeError:
        return None
    kind = getattr(found, "schema_type", None)
    references = tuple(getattr(found, "references", None) or ())
    return (text, str(kind or "AVRO").upper(), repr(references))


def newest_key(shipped: Mapping[Any, Any]) -> Any:
    """The key of the newest shipped schema: the highest registry id. A GUID's schema counts by the
    id the registry gave with it, else by the id of a numbered schema shipped with the same text
    (a REST registry's ``GET /schemas/guids/{guid}`` names no id; the same column may hold both
    forms, as confluent-kafka's readers take), else after every numbered one, by text."""
    numbered: dict[Any, int] = {}
    for key, found in shipped.items():
        if isinstance(key, int) and not isinstance(key, bool):
            same = _same_schema(found)
            if same is not None:
                numbered[same] = max(numbered.get(same, key), key)

    def rank(key: Any) -> tuple[int, Any]:
        if isinstance(key, uuid.UUID):
            number = _number(shipped[key])
            if number is None and numbered:
                same = _same_schema(shipped[key])
                number = None if same is None else numbered.get(same)
            if number is not None:
                return (0, (number, 1))
        return _order(key)

    newest = max(shipped, key=rank)
    if rank(newest)[0] == 2 and len({_same_schema(v) or id(v) for v in shipped.values()}) > 1:
        warnings.warn(
            f"the reader schema is the one of GUID {newest}, chosen by its text among schemas the registry"
            " gave no ids for (a REST registry's GET /schemas/guids/{guid} names none), so not"
            " necessarily the newest: pass reader_schema, reader_subject or subjects",
            stacklevel=3,
        )
    return newest


def registry_parts(registry: Any) -> tuple[Any, RegistryConfig | None, dict[Any, Any]]:
    """(client to ask on the driver, config the executors rebuild or None, schemas shipped as given)."""
    if isinstance(registry, Mapping):  # ships whole: the executors need nothing else
        return registry, None, dict(registry)
    if isinstance(registry, (RegistryConfig, str, os.PathLike)):
        config = RegistryConfig.of(registry)
        return config.build(), (None if config.is_memory else config), {}
    try:
        found: RegistryConfig | None = RegistryConfig.of(registry)
    except TypeError:
        found = None  # a client without a config (confluent-kafka's): only driver-resolved ids work
    return registry, (None if found is None or found.is_memory else found), {}


def cache_key(
    fallback: RegistryConfig | None, protocol: wire.Protocol, reader: Any, shipped: dict[Any, Any], format: str | None
) -> Any:
    fmt = get_format(format)
    key: tuple[Any, ...] = (fallback, protocol.name, fmt.schema_key(fmt.parse(reader)))
    if fallback is None:
        # no registry behind the shipped schemas: two jobs may give one id different schemas
        digest = hashlib.sha256(pickle.dumps(sorted(shipped.items(), key=lambda kv: _order(kv[0]))))
        key += (digest.hexdigest(),)
    return key
