"""Framed messages in, Arrow out, and back: :class:`MessageDecoder` (:mod:`.decoder`) and
:class:`MessageEncoder` (:mod:`.encoder`), and the module functions :func:`decode` / :func:`encode`.

Every framed decode in the package runs here. A decoder strips the registry prefix of every
message with the wire kernel, looks each unseen schema id up once, compiles one plan per writer
schema (cached per (writer, reader) pair) and hands all rows to the payload format in one call:
each row picks the plan of its schema id, and every plan writes into the same reader columns, so
rows come back in input order without regrouping or copying.

The payload format (Avro today) is found by the registry's ``schemaType`` through
:func:`pulsar_codec.formats.get_format`; this module never names a format. Caches belong to one
decoder or encoder (bounded LRU, thread-safe); pickling keeps only the configuration, so the same
object rebuilds itself on a Spark executor or in a worker process.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from typing import Any

import pyarrow as pa

from .. import wire
from ..formats.base import Decoded, Encoded, check_on_error
from ..registry.config import RegistryConfig
from .decoder import MessageDecoder
from .encoder import MessageEncoder

__all__ = ["Decoded", "Encoded", "MessageDecoder", "MessageEncoder", "decode", "encode"]


# -- the module functions ------------------------------------------------------------------------------

# decode() keeps a few decoders, so a loop of pc.decode calls on one registry parses and plans once.
# Each entry holds its registry (and reader schema) strongly and is matched by identity: an id()
# cannot be reused by another object while the entry lives. A registry given as its configuration
# (a URL or path string, os.PathLike, RegistryConfig) is matched by value: every call naming it
# shares one decoder and so one client. A decoder dropped from here is not closed at once (another
# thread may be decoding with it): the client it built closes when it is collected (RegistrySource).
_DECODERS: OrderedDict[tuple[Any, ...], tuple[Any, Any, MessageDecoder]] = OrderedDict()
_DECODERS_SIZE = 16
_DECODERS_LOCK = threading.Lock()


def _reader_token(reader_schema: Any) -> Any:
    """A key equal for equal reader schemas given as text or JSON; else the object's identity."""
    if reader_schema is None or isinstance(reader_schema, (str, bytes)):
        return reader_schema
    if isinstance(reader_schema, (dict, list)):
        try:
            return ("json", json.dumps(reader_schema, sort_keys=True))
        except (TypeError, ValueError):
            pass
    return ("id", id(reader_schema))


def _config_token(registry: Any) -> RegistryConfig | None:
    """The configuration a registry given as one (a URL or path string, os.PathLike,
    RegistryConfig) names, a path made absolute now; None for a client or Mapping."""
    if not isinstance(registry, (str, os.PathLike, RegistryConfig)):
        return None
    try:
        config = RegistryConfig.of(registry)
        hash(config)
    except (TypeError, ValueError):  # the decoder reports it when it first builds the client
        return None
    return config


def _decoder_for(
    registry: Any,
    protocol: Any,
    reader_schema: Any,
    on_error: str,
    reader_subject: str | None,
    format: str | None,
    message: str | None = None,
    threads: int = 1,
) -> MessageDecoder:
    proto = None if protocol is None else wire.protocol_by_name(protocol)
    token = _reader_token(reader_schema)
    by_identity = isinstance(token, tuple) and token[0] == "id"
    config = _config_token(registry)
    key = (
        id(registry) if config is None else config,
        None if proto is None else proto.name,
        token,
        on_error,
        reader_subject,
        format,
        message,
        threads,
    )
    with _DECODERS_LOCK:
        hit = _DECODERS.get(key)
        same = hit is not None and (hit[0] is registry or (config is not None and hit[0] == config))
        if hit is not None and same and (hit[1] is reader_schema or not by_identity):
            _DECODERS.move_to_end(key)
            return hit[2]
    decoder = MessageDecoder(
        registry if config is None else config,
        protocol=proto,
        reader_schema=reader_schema,
        reader_subject=reader_subject,
        on_error=on_error,
        format=format,
        message=message,
        threads=threads,
    )
    with _DECODERS_LOCK:
        _DECODERS[key] = (registry if config is None else config, reader_schema, decoder)
        while len(_DECODERS) > _DECODERS_SIZE:
            _DECODERS.popitem(last=False)
    return decoder


def decode(
    messages: Any,
    registry: Any,
    *,
    protocol: Any = None,
    reader_schema: Any = None,
    on_error: str = "raise",
    reader_subject: str | None = None,
    format: str | None = None,
    message: str | None = None,
    threads: int = 1,
) -> pa.RecordBatch | Decoded:
    """Decode framed messages with mixed schema ids into one RecordBatch, in input order.

    The same as ``MessageDecoder(registry, protocol=..., reader_schema=..., on_error=...,
    reader_subject=..., format=..., message=..., threads=...).decode(messages)`` (see
    :class:`MessageDecoder` for every parameter; ``format`` names the payload format when the
    registry cannot, e.g. ``"JSON"`` or ``"PROTOBUF"`` for a Mapping of schemas; ``protocol``
    defaults to Confluent's prefix, with the message-index path for Protobuf). The last 16 decoders
    are kept, keyed by the identity of ``registry`` (by value for a URL, path or RegistryConfig)
    and ``reader_schema``, so repeated calls parse and plan once.

    A client ``registry`` stays the caller's: it is never closed here. For a URL, path or
    RegistryConfig the kept decoder builds its own client on first use and owns it; the client is
    closed when that decoder leaves the cache and is garbage collected, or at interpreter exit.

    Returns
    -------
    pa.RecordBatch or Decoded
    """
    check_on_error(on_error)
    decoder = _decoder_for(registry, protocol, reader_schema, on_error, reader_subject, format, message, threads)
    return decoder.decode(messages)


def encode(
    batch: Any,
    registry: Any,
    subject: str,
    *,
    protocol: Any = None,
    schema: Any = None,
    schema_id: Any = None,
    use_latest: bool = False,
    auto_register: bool = True,
    format: str | None = None,
    message: str | None = None,
    on_error: str = "raise",
) -> pa.Array | Encoded:
    """Encode Arrow rows as framed messages; the reverse of :func:`decode`.

    The same as ``MessageEncoder(registry, subject, ...).encode(batch)`` (see
    :class:`MessageEncoder` for every parameter). The writer schema is ``schema``; or the
    subject's latest version with ``use_latest=True``; or the registry's schema of ``schema_id``;
    else the one in the batch's ``b"avro.schema"`` metadata, else one derived from the Arrow schema
    and named after the subject's record. It is registered under ``subject`` (or added to a mutable
    Mapping registry) unless ``auto_register=False``, which only looks its id up. ``format`` is
    the payload format (``"AVRO"``, ``"JSON"``, ``"PROTOBUF"``; by default the format of the
    subject's versions, else Avro; ``message`` the Protobuf message written). ``protocol`` defaults
    to Confluent's prefix, with the message-index path of the written message for Protobuf.
    ``on_error="null"`` makes a row that cannot be encoded a null message and returns
    :class:`Encoded` ``(messages, errors)``. A registry client given is left open; one built for
    the call from a URL, path or RegistryConfig is closed before it returns.

    Returns
    -------
    pa.BinaryArray, or Encoded with ``on_error="null"``
        One framed message per row.
    """
    with MessageEncoder(
        registry,
        subject,
        protocol=protocol,
        schema=schema,
        schema_id=schema_id,
        use_latest=use_latest,
        auto_register=auto_register,
        format=format,
        message=message,
        on_error=on_error,
    ) as encoder:  # closes the registry client it built from a URL, path or RegistryConfig
        return encoder.encode(batch)
