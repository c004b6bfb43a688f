"""Schema references of Protobuf schemas: the imported files a registry lists beside a schema.

A reference is an import name (``common/money.proto``) with the subject and version that hold the
file; :func:`resolve_references` fetches the texts from a registry, and :func:`split_references`
sorts what :func:`~pulsar_codec.formats.protobuf.parse` is given into ``.proto`` texts and
descriptors (base64 FileDescriptorProto text, the form confluent-kafka's Python serializer
registers, serialized bytes or messages).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from ...errors import SchemaError
from ._protoc import check_import_name

__all__ = ["MAX_REFERENCE_DEPTH", "PROTO_START", "descriptor_text", "resolve_references", "split_references"]

MAX_REFERENCE_DEPTH = 32
"""How deep references of references may go in :func:`resolve_references`."""

_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
PROTO_START = re.compile(r"(?:\s|//[^\n]*\n|/\*.*?\*/)*(?:syntax|edition|package|import|option|message|enum|service|extend)\b", re.S)  # fmt: skip
"""Matches the start of ``.proto`` text (after comments and blanks)."""


def descriptor_text(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The FileDescriptorProto of base64 text (confluent-kafka's registered form), else None."""
    compact = text.strip()
    if not compact or len(compact) % 4 or not _BASE64.fullmatch(compact):
        return None
    try:
        return descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(compact))
    except (binascii.Error, DecodeError):
        return None


def _reference_items(references: Any) -> list[tuple[str, Any]]:
    """Every reference (and nested reference) as ``(name, value)``, first name wins."""
    if not references:
        return []
    stack = list(references.items()) if isinstance(references, Mapping) else list(references)
    stack.reverse()
    out: dict[str, Any] = {}
    while stack:
        ref = stack.pop()
        if isinstance(ref, tuple) and len(ref) == 2 and isinstance(ref[0], str):
            name, value, nested = ref[0], ref[1], None
        else:
            name, value, nested = _attr(ref, "name"), _reference_value(ref), _attr(ref, "references")
        if not isinstance(name, str) or not name:
            raise SchemaError(f"a schema reference needs a name, got {ref!r}")
        if value is None:
            raise SchemaError(
                f"schema reference {name!r} (subject {_attr(ref, 'subject')!r}, version {_attr(ref, 'version')!r}) "
                "comes without its schema text: fetch it first (pulsar_codec.formats.protobuf.resolve_references)"
            )
        if name not in out:
            out[name] = value
            stack.extend(reversed(list(nested or ())))
    return list(out.items())


def split_references(
    references: Any,
) -> tuple[dict[str, str], list[descriptor_pb2.FileDescriptorProto]]:
    """References as ``.proto`` texts by import name, and those given as descriptors."""
    texts: dict[str, str] = {}
    protos: list[descriptor_pb2.FileDescriptorProto] = []
    for name, value in _reference_items(references):
        check_import_name(name)
        if name.startswith("google/protobuf/"):
            continue  # the bundled well-known types win, as in every registry
        proto: descriptor_pb2.FileDescriptorProto | None = None
        if isinstance(value, descriptor_pb2.FileDescriptorProto):
            proto = descriptor_pb2.FileDescriptorProto()
            proto.CopyFrom(value)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            raw = bytes(value)
            text = raw.decode("utf-8", "replace")
            if PROTO_START.match(text) or not raw.strip():
                texts[name] = text
                continue
            try:
                proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
            except DecodeError:
                raise SchemaError(f"schema reference {name!r} is neither .proto text nor a descriptor") from None
        elif isinstance(value, str):
            proto = descriptor_text(value)
            if proto is None:
                texts[name] = value
                continue
        else:
            raise SchemaError(f"schema reference {name!r}: cannot read a schema from {type(value).__name__}")
        proto.name = name  # imported under the reference name, as confluent-kafka does
        protos.append(proto)
    return texts, protos


def _attr(ref: Any, name: str) -> Any:
    return ref.get(name) if isinstance(ref, Mapping) else getattr(ref, name, None)


def _reference_value(ref: Any) -> Any:
    for key in ("schema", "schema_str"):
        found = _attr(ref, key)
        if isinstance(found, (str, bytes, bytearray, descriptor_pb2.FileDescriptorProto)):
            return found
        inner = getattr(found, "schema_str", None)  # a confluent-kafka Schema object
        if isinstance(inner, str):
            return inner
    return None


def _fetch(registry: Any, subject: str, version: Any) -> tuple[str, tuple[Any, ...]]:
    """Text and references of ``subject`` at ``version`` (this package's or confluent-kafka's client)."""
    found = registry.get_version(subject, "latest" if version in (None, -1) else version)
    inner = getattr(found, "schema", None)
    if isinstance(inner, str):  # this package's RegisteredSchema
        return inner, tuple(getattr(found, "references", None) or ())
    text = getattr(inner, "schema_str", None)
    if not isinstance(text, str):
        raise SchemaError(f"the registry returned no schema text for subject {subject!r} version {version!r}")
    return text, tuple(getattr(inner, "references", None) or ())


def resolve_references(registry: Any, references: Sequence[Any] | None) -> tuple[dict[str, Any], ...]:
    """Fetch the text of every reference (and of the references' references) from ``registry``.

    Parameters
    ----------
    registry : object with ``get_version(subject, version)``
        This package's registry clients or confluent-kafka's ``SchemaRegistryClient``.
    references : sequence
        confluent-kafka ``SchemaReference`` objects or dicts with ``name`` (the import name),
        ``subject`` and ``version``; entries that already carry a ``schema`` are kept as they are.

    Returns
    -------
    tuple of dict
        ``{"name", "subject", "version", "schema"}`` per reference, a referrer before its own
        references; what :func:`parse` takes as ``references``.

    Raises
    ------
    SchemaError
        A reference without a subject, or references nested deeper than :data:`MAX_REFERENCE_DEPTH`.
    """
    out: list[dict[str, Any]] = []
    seen: set[str] = set()

    def visit(refs: Sequence[Any], depth: int) -> None:
        if depth > MAX_REFERENCE_DEPTH:
            raise SchemaError(f"schema references nested deeper than {MAX_REFERENCE_DEPTH} levels")
        for ref in refs:
            name, subject, version = _attr(ref, "name"), _attr(ref, "subject"), _attr(ref, "version")
            if not isinstance(name, str) or name in seen:
                continue
            seen.add(name)
            value = _reference_value(ref)
            nested: tuple[Any, ...] = tuple(_attr(ref, "references") or ())
            if value is None:
                if not isinstance(subject, str):
                    raise SchemaError(f"schema reference {name!r} names no subject")
                value, nested = _fetch(registry, subject, version)
            out.append({"name": name, "subject": subject, "version": version, "schema": value})
            visit(nested, depth + 1)

    visit(list(references or ()), 0)
    return tuple(out)
