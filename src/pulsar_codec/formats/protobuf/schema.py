"""Protobuf payload schemas: registry ``.proto`` texts, Pulsar ``PROTOBUF_NATIVE`` data, descriptors.

:func:`parse` reads any of them into one :class:`ProtobufSchemaModel`, a FileDescriptorSet with the
root file named, compiled by protoc (:mod:`._protoc`) when the schema is text:

- ``.proto`` text as Confluent, Karapace and Apicurio register it, with ``references`` = the imported
  files (import name -> text) the registry lists beside it (:func:`resolve_references` fetches their
  texts, and the references of references). ``google/protobuf/*.proto`` are always available, and
  ``google/type/*.proto`` / Confluent's ``confluent/*.proto`` when their packages are installed, as
  the registries bundle them;
- a FileDescriptorProto in base64, the form confluent-kafka's Python ``ProtobufSerializer``
  registers (references likewise, as text or base64);
- Pulsar ``PROTOBUF_NATIVE`` schema data: JSON with the base64 ``fileDescriptorSet``,
  ``rootMessageTypeName`` and ``rootFileDescriptorName`` (text, bytes or the decoded dict);
- a FileDescriptorSet (serialized or a message), a FileDescriptorProto, a runtime descriptor or a
  generated message class, or the path of a ``.proto`` file (its folder is searched for imports).

Which message a payload holds is Confluent's *message index* path: the index of a top-level message
in its file, then of each nested message in its parent (``[]`` and ``[0]`` both name the first
message). Indexes count every nested type of the descriptor, map entries included, as
confluent-kafka's Python and Go serializers compute them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import descriptor, descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError, Message

from ...errors import SchemaError
from . import _printer
from ._protoc import compile_files, known_file
from ._references import MAX_REFERENCE_DEPTH, PROTO_START, descriptor_text, resolve_references, split_references

__all__ = [
    "MAX_REFERENCE_DEPTH",
    "ProtobufSchemaModel",
    "dependency_texts",
    "parse",
    "pulsar_native_data",
    "resolve_references",
    "schema_key",
    "schema_text",
]

_ROOT_NAME = "schema.proto"
_PULSAR_KEYS = ("fileDescriptorSet", "rootMessageTypeName", "rootFileDescriptorName")
_BUILD_LOCK = threading.RLock()


@dataclass(frozen=True)
class ProtobufSchemaModel:
    """A parsed Protobuf schema: its files as descriptors, the root file and the chosen message.

    Attributes
    ----------
    file_set : bytes
        A serialized ``google.protobuf.FileDescriptorSet`` of the root file and every file it
        imports, dependencies first (deterministic serialization).
    file_name : str
        The root file's name in the set.
    message : str or None
        Full name (no leading dot) of the message payloads hold; None until one is chosen.
    text : str or None
        The schema text as registered; None when the model was built from descriptors.
    """

    file_set: bytes
    file_name: str
    message: str | None = None
    text: str | None = None
    _cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __getstate__(self) -> dict[str, Any]:
        return {"file_set": self.file_set, "file_name": self.file_name, "message": self.message, "text": self.text}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_cache", {})

    def _cached(self, key: str, make: Any) -> Any:
        found = self._cache.get(key)
        if found is None:
            with _BUILD_LOCK:
                found = self._cache.get(key)
                if found is None:
                    found = self._cache[key] = make()
        return found

    def files(self) -> list[descriptor_pb2.FileDescriptorProto]:
        """The files of :attr:`file_set`, dependencies first (do not modify them)."""
        return list(self._cached("files", lambda: descriptor_pb2.FileDescriptorSet.FromString(self.file_set).file))

    def root_file(self) -> descriptor_pb2.FileDescriptorProto:
        """The root file's descriptor (do not modify it)."""
        return self._cached("root", lambda: next(f for f in self.files() if f.name == self.file_name))

    def pool(self) -> descriptor_pool.DescriptorPool:
        """A descriptor pool holding every file of the set (built once per model)."""

        def build() -> descriptor_pool.DescriptorPool:
            pool = descriptor_pool.DescriptorPool()
            for proto in self.files():
                try:
                    pool.AddSerializedFile(proto.SerializeToString())
                except (TypeError, ValueError, KeyError) as exc:
                    raise SchemaError(f"invalid descriptor for {proto.name!r}: {exc}") from None
            return pool

        return self._cached("pool", build)

    def _paths(self) -> dict[str, tuple[int, ...]]:
        """Full name -> Confluent index path of every message of the root file, in index order."""

        def build() -> dict[str, tuple[int, ...]]:
            root = self.root_file()
            out: dict[str, tuple[int, ...]] = {}

            def visit(messages: Sequence[descriptor_pb2.DescriptorProto], prefix: str, path: tuple[int, ...]) -> None:
                for i, msg in enumerate(messages):
                    name = f"{prefix}{msg.name}"
                    out[name] = (*path, i)
                    visit(msg.nested_type, name + ".", (*path, i))

            visit(root.message_type, f"{root.package}." if root.package else "", ())
            return out

        return self._cached("paths", build)  # type: ignore[no-any-return]

    def _entries(self) -> frozenset[str]:
        def build() -> frozenset[str]:
            return frozenset(n for n in self._paths() if self.pool().FindMessageTypeByName(n).GetOptions().map_entry)

        return self._cached("entries", build)  # type: ignore[no-any-return]

    def message_names(self) -> list[str]:
        """Full names of the root file's messages, nested ones included (map entries left out),
        in message-index order: each message, then its nested messages."""
        entries = self._entries()
        return [n for n in self._paths() if n not in entries]

    def full_name(self, name: str) -> str:
        """The full name of the root file's message ``name`` (full, with a leading dot, or relative
        to the file's package).

        Raises
        ------
        SchemaError
            The root file defines no such message.
        """
        paths = self._paths()
        bare = name[1:] if name.startswith(".") else name
        if bare in paths:
            return bare
        package = self.root_file().package
        if package and not name.startswith(".") and f"{package}.{bare}" in paths:
            return f"{package}.{bare}"
        known = ", ".join(self.message_names()[:20]) or "none"
        raise SchemaError(f"{self.file_name} defines no message {name!r}; its messages: {known}")

    def descriptor(self, full_name: str | None = None) -> descriptor.Descriptor:
        """The runtime descriptor of ``full_name``, default :attr:`message`, else the first message.

        Raises
        ------
        SchemaError
            No such message in the root file, or the file has no message at all.
        """
        name = full_name if full_name is not None else self.message
        if name is None:
            names = self.message_names()
            if not names:
                raise SchemaError(f"{self.file_name} defines no message")
            name = names[0]
        return self.pool().FindMessageTypeByName(self.full_name(name))

    def message_for_indexes(self, path: Sequence[int]) -> str:
        """The full name of the message a Confluent message-index path names (``[]`` = ``[0]``).

        Raises
        ------
        SchemaError
            An index is negative or past the messages at its level.
        """
        steps = list(path) or [0]
        messages: Sequence[descriptor_pb2.DescriptorProto] = self.root_file().message_type
        names: list[str] = [self.root_file().package] if self.root_file().package else []
        for depth, index in enumerate(steps):
            if not 0 <= index < len(messages):
                where = "top-level messages" if depth == 0 else f"messages nested in {'.'.join(names)}"
                # the path up to the bad index: a garbage prefix may declare thousands of indexes
                shown = f"{steps[: depth + 1]}"[:-1] + (", ...]" if len(steps) > depth + 1 else "]")
                raise SchemaError(
                    f"message index path {shown} names no message of {self.file_name}: index {index} at "
                    f"depth {depth} is out of range ({len(messages)} {where})"
                )
            names.append(messages[index].name)
            messages = messages[index].nested_type
        return ".".join(names)

    def indexes_for(self, full_name: str) -> list[int]:
        """The Confluent message-index path of a message of the root file."""
        return list(self._paths()[self.full_name(full_name)])

    def with_message(self, full_name: str) -> ProtobufSchemaModel:
        """The same schema with ``full_name`` as the payload message (checked to exist)."""
        name = self.full_name(full_name)
        if name == self.message:
            return self
        chosen = ProtobufSchemaModel(self.file_set, self.file_name, name, self.text)
        object.__setattr__(chosen, "_cache", self._cache)  # everything cached depends on the files only
        return chosen

    def __repr__(self) -> str:
        return f"<Protobuf schema {self.file_name} message={self.message!r} key={schema_key(self)[-16:]}>"


# --------------------------------------------------------------------------------------------
# building a model from files


def _closure(
    files: Sequence[descriptor_pb2.FileDescriptorProto], root: str
) -> list[descriptor_pb2.FileDescriptorProto]:
    """``root`` and every file it imports, dependencies first; bundled files fill gaps."""
    by_name: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    for proto in files:
        if proto.name in by_name and by_name[proto.name] != proto:
            raise SchemaError(f"the descriptor set holds two different files named {proto.name!r}")
        by_name[proto.name] = proto
    if root not in by_name:
        raise SchemaError(f"the descriptor set has no file {root!r}; it holds {sorted(by_name)}")
    out: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    visiting: list[str] = []

    def visit(name: str, importer: str | None) -> None:
        if name in out:
            return
        if name in visiting:
            raise SchemaError(f"cyclic imports: {' -> '.join([*visiting[visiting.index(name) :], name])}")
        proto = by_name.get(name) or known_file(name)
        if proto is None:
            raise SchemaError(f"the descriptor set lacks {name!r}, imported by {importer!r}")
        visiting.append(name)
        for dep in proto.dependency:
            visit(dep, name)
        visiting.pop()
        clean = descriptor_pb2.FileDescriptorProto()
        clean.CopyFrom(proto)
        clean.ClearField("source_code_info")
        out[name] = clean

    visit(root, None)
    return list(out.values())


def _from_files(
    files: Sequence[descriptor_pb2.FileDescriptorProto], root: str, message: str | None, text: str | None
) -> ProtobufSchemaModel:
    closure = _closure(files, root)
    data = descriptor_pb2.FileDescriptorSet(file=closure).SerializeToString(deterministic=True)
    model = ProtobufSchemaModel(data, root, None, text)
    model.pool()  # refuse a set the runtime cannot link, here rather than at first use
    return model.with_message(message) if message is not None else model


def _root_of(files: Sequence[descriptor_pb2.FileDescriptorProto], message: str | None) -> str:
    """The root file of a user's FileDescriptorSet: the one defining ``message``, else the last file
    no other file imports."""
    if message is not None:
        bare = message.lstrip(".")
        for proto in files:
            prefix = f"{proto.package}." if proto.package else ""
            if any(bare == prefix + m.name or bare.startswith(prefix + m.name + ".") for m in proto.message_type):
                return str(proto.name)
        raise SchemaError(f"no file of the descriptor set defines message {message!r}")
    imported = {dep for proto in files for dep in proto.dependency}
    tops = [str(proto.name) for proto in files if proto.name not in imported]
    if not tops:
        raise SchemaError("the descriptor set holds no file")
    return tops[-1]


def _from_runtime(obj: Any) -> ProtobufSchemaModel:
    """A model of a runtime Descriptor / FileDescriptor / generated class, as pulsar-client builds
    its ``PROTOBUF_NATIVE`` data."""
    desc = getattr(obj, "DESCRIPTOR", obj)
    file_desc = desc if isinstance(desc, descriptor.FileDescriptor) else desc.file
    files: list[descriptor_pb2.FileDescriptorProto] = []
    stack, seen = [file_desc], set()
    while stack:
        current = stack.pop()
        if current.name in seen:
            continue
        seen.add(current.name)
        proto = descriptor_pb2.FileDescriptorProto()
        current.CopyToProto(proto)
        files.append(proto)
        stack.extend(current.dependencies)
    message = desc.full_name if isinstance(desc, descriptor.Descriptor) else None
    return _from_files(files, file_desc.name, message, None)


def _file_set(data: bytes, what: str) -> list[descriptor_pb2.FileDescriptorProto]:
    try:
        return list(descriptor_pb2.FileDescriptorSet.FromString(data).file)
    except DecodeError as exc:
        raise SchemaError(f"{what} is not a serialized FileDescriptorSet: {exc}") from None


def _from_pulsar(doc: Mapping[str, Any]) -> ProtobufSchemaModel:
    missing = [k for k in _PULSAR_KEYS if not isinstance(doc.get(k), str) or not doc.get(k)]
    if missing:
        raise SchemaError(f"PROTOBUF_NATIVE schema data lacks {', '.join(missing)}")
    try:
        data = base64.b64decode(doc["fileDescriptorSet"], validate=True)
    except (binascii.Error, ValueError):
        raise SchemaError("PROTOBUF_NATIVE fileDescriptorSet is not valid base64") from None
    files = _file_set(data, "PROTOBUF_NATIVE fileDescriptorSet")
    model = _from_files(files, doc["rootFileDescriptorName"], None, None)
    root = doc["rootMessageTypeName"]
    if root not in model._paths():
        raise SchemaError(f"PROTOBUF_NATIVE root message {root!r} is not a message of {model.file_name}")
    return model.with_message(root)


def _from_text(
    text: str, references: Any, include_dirs: Sequence[str] = (), name: str | None = None
) -> ProtobufSchemaModel:
    texts, protos = split_references(references)
    taken = set(texts) | {p.name for p in protos}
    root = name or _ROOT_NAME
    n = 0
    while root in taken:
        n += 1
        root = f"schema_{n}.proto"
    compiled = compile_files({**texts, root: text}, [root], protos, include_dirs)
    return _from_files(compiled.file, root, None, text)


def _from_descriptor_root(
    proto: descriptor_pb2.FileDescriptorProto, references: Any, text: str | None
) -> ProtobufSchemaModel:
    texts, protos = split_references(references)
    files = list(protos)
    if texts:
        files.extend(compile_files(texts, sorted(texts), protos).file)
    if not proto.name:
        proto.name = _ROOT_NAME
    return _from_files([proto, *files], proto.name, None, text)


def _from_path(path: str, references: Any) -> ProtobufSchemaModel:
    try:
        with open(path, encoding="utf-8") as src:
            text = src.read()
    except OSError as exc:
        raise SchemaError(f"cannot read .proto file {path!r}: {exc.strerror or exc}") from None
    folder, name = os.path.split(os.path.abspath(path))
    return _from_text(text, references, [folder], name)


def _looks_like_path(text: str) -> bool:
    return text.endswith(".proto") and "\n" not in text and not any(c in text for c in ';{}"')


def _from_json(text: str) -> ProtobufSchemaModel | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return _from_pulsar(doc) if isinstance(doc, dict) and "fileDescriptorSet" in doc else None


def _parse_new(schema: Any, references: Any, message: str | None) -> ProtobufSchemaModel:
    if isinstance(schema, os.PathLike):
        return _from_path(os.fspath(schema), references)
    if isinstance(schema, (descriptor.Descriptor, descriptor.FileDescriptor)) or (
        isinstance(schema, type) and issubclass(schema, Message)
    ):
        return _from_runtime(schema)
    if isinstance(schema, descriptor_pb2.FileDescriptorSet):
        return _from_files(schema.file, _root_of(schema.file, message), None, None)
    if isinstance(schema, descriptor_pb2.FileDescriptorProto):
        copy = descriptor_pb2.FileDescriptorProto()
        copy.CopyFrom(schema)
        return _from_descriptor_root(copy, references, None)
    if isinstance(schema, Mapping):
        return _from_pulsar(schema)
    if isinstance(schema, (bytes, bytearray, memoryview)):
        raw = bytes(schema)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and (PROTO_START.match(text) or text.lstrip().startswith("{") or not text.strip()):
            schema = text
        else:
            files = _file_set(raw, "schema bytes")
            return _from_files(files, _root_of(files, message), None, None)
    if not isinstance(schema, str):
        raise SchemaError(f"cannot read a Protobuf schema from {type(schema).__name__}")
    native = _from_json(schema)
    if native is not None:
        return native
    proto = descriptor_text(schema)
    if proto is not None:
        return _from_descriptor_root(proto, references, schema)
    if _looks_like_path(schema.strip()):
        return _from_path(schema.strip(), references)
    return _from_text(schema, references)


def parse(schema: Any, references: Any = None, *, message: str | None = None) -> ProtobufSchemaModel:
    """Parse a Protobuf schema (see the module docstring for every form accepted).

    Parameters
    ----------
    schema : str, bytes, dict, FileDescriptorSet, FileDescriptorProto, descriptor, os.PathLike or model
        ``.proto`` text, base64 FileDescriptorProto text, Pulsar ``PROTOBUF_NATIVE`` data, a
        (serialized) FileDescriptorSet, a runtime descriptor or generated class, a ``.proto`` path;
        a :class:`ProtobufSchemaModel` is returned as it is.
    references : Mapping or sequence, optional
        The imported files: a Mapping of import name -> schema, ``(name, schema)`` pairs, or
        dicts / objects with ``name`` and ``schema`` (and their own ``references``), each schema
        ``.proto`` text or a descriptor (base64 text, bytes or a FileDescriptorProto).
    message : str, optional
        The message payloads hold (full name, or relative to the package); it must be defined in
        the root file. For a FileDescriptorSet, the file defining it is the root file.

    Raises
    ------
    SchemaError
        protoc's errors for bad text, a malformed descriptor set or Pulsar data, a missing import,
        a reference without its text, an unknown ``message``.
    """
    if isinstance(schema, ProtobufSchemaModel):
        return schema if message is None else schema.with_message(message)
    try:
        model = _parse_new(schema, references, message)
    except RecursionError:
        raise SchemaError("the Protobuf schema is nested too deeply to be read") from None
    return model.with_message(message) if message is not None else model


# --------------------------------------------------------------------------------------------
# identity, texts and Pulsar data


def _normalized(model: ProtobufSchemaModel) -> descriptor_pb2.FileDescriptorSet:
    """The set with what does not change the schema taken out: the root's name, the content of
    bundled files (known by name), ``json_name`` where it is the default, ``syntax = "proto2"``."""
    out = descriptor_pb2.FileDescriptorSet()
    for proto in model.files():
        if proto.name != model.file_name and known_file(proto.name) is not None:
            out.file.add(name=proto.name)
            continue
        copy = out.file.add()
        copy.CopyFrom(proto)
        if copy.name == model.file_name:
            copy.ClearField("name")
        if copy.syntax == "proto2":
            copy.ClearField("syntax")
        _printer.clear_default_json_names(copy)
    return out


def schema_key(model: ProtobufSchemaModel) -> str:
    """A canonical key: equal for the same schema and message, whether given as text or descriptors."""
    digest = hashlib.sha256(_normalized(model).SerializeToString(deterministic=True)).hexdigest()
    return f"protobuf:{model.message or ''}:{digest}"


def schema_text(model: ProtobufSchemaModel) -> str:
    """The text to register ``model`` under: the text it was parsed from, else its root file printed
    as ``.proto`` (its imports are :func:`dependency_texts`)."""
    return model.text if model.text is not None else _printer.print_file(model.root_file())


def dependency_texts(model: ProtobufSchemaModel) -> list[tuple[str, str]]:
    """``(import name, .proto text)`` of every imported file a registry does not bundle,
    dependencies first: the references to register ``model`` with."""
    return [
        (proto.name, _printer.print_file(proto))
        for proto in model.files()
        if proto.name != model.file_name and known_file(proto.name) is None
    ]


def pulsar_native_data(model: ProtobufSchemaModel) -> bytes:
    """Pulsar ``PROTOBUF_NATIVE`` schema data for ``model`` (its message, else the first one)."""
    message = model.message or model.descriptor().full_name
    doc = {
        "fileDescriptorSet": base64.b64encode(model.file_set).decode("ascii"),
        "rootMessageTypeName": message,
        "rootFileDescriptorName": model.file_name,
    }
    return json.dumps(doc, separators=(",", ":")).encode("utf-8")
