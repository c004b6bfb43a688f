"""Compile ``.proto`` texts with protoc, in-process, into a FileDescriptorSet.

The compiler is the one ``grpcio-tools`` ships (``grpc_tools.protoc``), run in this process on a
temporary directory that holds the texts under their import names. ``--include_imports`` makes the
output hold every file the roots need. protoc itself brings the ``google/protobuf/*.proto``
well-known types (the ``_proto`` folder of ``grpc_tools`` is on the include path); the other files a
registry bundles (``google/type/*.proto`` from googleapis-common-protos, Confluent's
``confluent/meta.proto`` and ``confluent/type/*.proto`` from confluent-kafka) come from the
generated modules of those packages when they are installed, as descriptors
(``--descriptor_set_in``), as do files given as descriptors rather than text.

protoc reports errors by writing lines to the process's standard error; :func:`compile_files`
catches them (file descriptor 2 is pointed at a temporary file for the duration of the call, under a
lock, so two compilations never interleave) and raises them in a
:class:`~pulsar_codec.errors.SchemaError`.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources

from google.protobuf import descriptor_pb2, descriptor_pool

from ...errors import SchemaError

__all__ = ["compile_files", "check_import_name", "known_file", "imports_of", "well_known_include"]

# import-name prefix -> package of the generated modules that define those files; only these are
# ever imported to find a file, so a schema cannot make this process import arbitrary modules
_KNOWN_PACKAGES = {
    "google/protobuf/": "google.protobuf",
    "google/type/": "google.type",
    "confluent/type/": "confluent_kafka.schema_registry.confluent.type",
    "confluent/": "confluent_kafka.schema_registry.confluent",
}

_IMPORT = re.compile(r'^\s*import\s+(?:public\s+|weak\s+)?"([^"\n]+)"\s*;', re.MULTILINE)

_LOCK = threading.Lock()


def well_known_include() -> str:
    """The folder of the ``google/protobuf/*.proto`` files ``grpcio-tools`` bundles."""
    return str(resources.files("grpc_tools") / "_proto")


def check_import_name(name: str) -> str:
    """``name`` if it is a relative import path (``a/b.proto``) that stays inside its folder.

    Raises
    ------
    SchemaError
        An empty or absolute name, a backslash, a NUL, or a ``.`` / ``..`` / empty component.
    """
    parts = name.split("/")
    if (
        not name
        or "\\" in name
        or "\x00" in name
        or name.startswith("/")
        or any(p in ("", ".", "..") for p in parts)
        or (len(parts[0]) > 1 and parts[0][1] == ":")
    ):
        raise SchemaError(f"invalid .proto import name {name!r}: expected a relative path such as 'common/money.proto'")
    return name


def imports_of(text: str) -> list[str]:
    """The import names written in a ``.proto`` text (found by pattern: only used to decide which
    bundled files to offer protoc, which still reports any import it cannot find)."""
    return _IMPORT.findall(text)


def _module_of(name: str) -> str | None:
    for prefix, package in _KNOWN_PACKAGES.items():
        if name.startswith(prefix) and name.endswith(".proto"):
            stem = name[len(prefix) : -len(".proto")]
            if stem.isidentifier():
                return f"{package}.{stem}_pb2"
            return None
    return None


@functools.lru_cache(maxsize=256)
def _known_serialized(name: str) -> bytes | None:
    module = _module_of(name)
    if module is None:
        return None
    pool = descriptor_pool.Default()
    try:
        found = pool.FindFileByName(name)
    except KeyError:
        try:
            with warnings.catch_warnings():  # the packages' own imports may warn (authlib under confluent_kafka)
                warnings.simplefilter("ignore")
                importlib.import_module(module)
            found = pool.FindFileByName(name)
        except (ImportError, KeyError):
            return None
    proto = descriptor_pb2.FileDescriptorProto()
    found.CopyToProto(proto)
    return bytes(proto.SerializeToString())


def known_file(name: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The descriptor of a file registries bundle (well-known types, ``google/type``, Confluent's
    own), from the protobuf runtime or an installed package; None when it is not available."""
    data = _known_serialized(name)
    return None if data is None else descriptor_pb2.FileDescriptorProto.FromString(data)


def _with_dependencies(
    names: Iterable[str], given: Mapping[str, descriptor_pb2.FileDescriptorProto]
) -> list[descriptor_pb2.FileDescriptorProto]:
    """Known files for ``names`` and everything they import, unless ``given`` has them."""
    out: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    stack = [n for n in names if n not in given]
    while stack:
        name = stack.pop()
        if name in out or name in given:
            continue
        proto = known_file(name)
        if proto is None:
            continue
        out[name] = proto
        stack.extend(proto.dependency)
    return list(out.values())


def _run(arguments: list[str]) -> tuple[int, str]:
    """Run protoc with ``arguments``; its exit code and what it wrote to standard error."""
    try:
        from grpc_tools import protoc
    except ImportError:
        raise SchemaError("compiling .proto text needs grpcio-tools: pip install 'pulsar-codec[protobuf]'") from None

    with _LOCK, tempfile.TemporaryFile() as err:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(err.fileno(), 2)
            try:
                code = int(protoc.main(arguments))
            finally:
                os.dup2(saved, 2)
        finally:
            os.close(saved)
        err.seek(0)
        return code, err.read().decode("utf-8", "replace")


def compile_files(
    sources: Mapping[str, str],
    roots: Sequence[str],
    descriptors: Sequence[descriptor_pb2.FileDescriptorProto] = (),
    include_dirs: Sequence[str] = (),
) -> descriptor_pb2.FileDescriptorSet:
    """Compile ``roots`` with protoc; the FileDescriptorSet of the roots and all they import.

    Parameters
    ----------
    sources : Mapping of str to str
        ``.proto`` texts by import name (``"shop/order.proto"``), written to a temporary folder.
    roots : sequence of str
        The import names to compile (each a key of ``sources`` or a name in ``descriptors``).
    descriptors : sequence of FileDescriptorProto
        Files given as descriptors; importable by their names.
    include_dirs : sequence of str
        More folders to look for imports in (after ``sources``, before the bundled files).

    Returns
    -------
    FileDescriptorSet
        Dependencies before the files that import them, the roots last (protoc's order).

    Raises
    ------
    SchemaError
        The message holds protoc's own error lines (``schema.proto:3:5: "strin" is not defined.``).
    """
    given = {d.name: d for d in descriptors}
    wanted = {name for text in sources.values() for name in imports_of(text)}
    for proto in descriptors:
        wanted.update(proto.dependency)
    offered = [*descriptors, *_with_dependencies(sorted(wanted), given)]
    with tempfile.TemporaryDirectory(prefix="pulsar-codec-protoc-") as tmp:
        for name, text in sources.items():
            path = os.path.join(tmp, "src", *check_import_name(name).split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as out:
                out.write(text)
        os.makedirs(os.path.join(tmp, "src"), exist_ok=True)
        result = os.path.join(tmp, "out.pb")
        arguments = ["protoc", f"--proto_path={os.path.join(tmp, 'src')}"]
        arguments += [f"--proto_path={d}" for d in include_dirs]
        arguments += [f"--proto_path={well_known_include()}", "--include_imports", f"--descriptor_set_out={result}"]
        if offered:
            given_path = os.path.join(tmp, "given.pb")
            with open(given_path, "wb") as out:
                out.write(descriptor_pb2.FileDescriptorSet(file=offered).SerializeToString())
            arguments.append(f"--descriptor_set_in={given_path}")
        # a root written here is passed as its path (protoc maps it back to its import name), so a
        # file of the same name in the working directory cannot be taken for it
        arguments += [os.path.join(tmp, "src", *r.split("/")) if r in sources else check_import_name(r) for r in roots]
        code, errors = _run(arguments)
        if code != 0 or not os.path.exists(result):
            lines = [
                line
                for line in errors.replace(os.path.join(tmp, "src") + os.sep, "").replace(tmp + os.sep, "").splitlines()
                if line.strip()
            ]
            detail = "\n".join(lines[:20]) + ("\n..." if len(lines) > 20 else "")
            raise SchemaError(f"protoc cannot compile {', '.join(roots)}:\n{detail or f'exit code {code}'}")
        with open(result, "rb") as found:
            return descriptor_pb2.FileDescriptorSet.FromString(found.read())
