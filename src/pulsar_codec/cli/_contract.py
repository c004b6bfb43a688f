"""The output contract that ``pulsar-codec decode`` and the demo keep on both engines.

Both engines write folders of Parquet part files with the same columns and types:

* the decoded table: one column per reader-schema field, typed as the Spark column of the README's
  type mapping (enums as strings, timestamps as INT64 microseconds with UTC, unions as structs,
  ...), then, when no dead-letter path is given, ``decode_error`` (``struct<code:int32,
  offset:int64, message:string>``, null for good rows and tombstones);
* the dead-letter table (:data:`DEAD_LETTER_FIELDS`): the input position, the raw message
  (``payload``), its schema id when the prefix could be read, the error code, byte offset and text
  (``message``), named as the fields of Spark's ``decode_error``.

The error text is the pipeline's, with the row named by its position in the input (files of a
folder in name order), so ``(message 15, byte 0)`` is the row whose ``index`` is 15.
"""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import wire
from ..integrations.spark.types import reader_struct
from ._console import UsageError

ERROR_TYPE = pa.struct([pa.field("code", pa.int32()), pa.field("offset", pa.int64()), pa.field("message", pa.string())])
"""The output tables' ``decode_error`` (``struct<code:int, offset:bigint, message:string>``): the
bad rows' bytes go to the dead-letter table, not into every table."""

__all__ = [
    "DEAD_LETTER_FIELDS",
    "ERROR_TYPE",
    "contract_columns",
    "convert_batch",
    "dead_letter_schema",
    "dead_letter_table",
    "input_files",
    "number_text",
    "prepare_output",
    "resolve_column",
    "schema_ids_of",
    "write_part",
]

_LOCATION = re.compile(r"\(message \d+, byte (\d+)\)")
_BINARY_TYPES = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_binary_view, pa.types.is_fixed_size_binary)

DEAD_LETTER_FIELDS = (
    ("index", "int64: the row's position in the input (files of a folder in name order)"),
    ("payload", "binary: the raw message, as read"),
    ("schema_id", "int64 (string for GUID protocols): the id in the prefix, null when it could not be read"),
    ("code", "int32: pulsar_codec.errors.ErrorCode"),
    ("offset", "int64: the byte offset of the error"),
    ("message", "string: the error text"),
)
"""The dead-letter columns, in order, with what each holds."""


def dead_letter_schema(protocol: wire.Protocol) -> pa.Schema:
    """The Arrow schema of the dead-letter table for messages framed with ``protocol``."""
    guid = bool(getattr(protocol, "guid", False))
    return pa.schema(
        [
            pa.field("index", pa.int64(), nullable=False),
            pa.field("payload", pa.binary()),
            pa.field("schema_id", pa.string() if guid else pa.int64()),
            pa.field("code", pa.int32()),
            pa.field("offset", pa.int64()),
            pa.field("message", pa.string()),
        ]
    )


def input_files(path: str | Path) -> list[Path]:
    """The Parquet files of an input: the file itself, or a folder's part files in name order
    (names starting with ``.`` or ``_``, such as Spark's ``_SUCCESS`` and checksums, are skipped)."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"input {path} does not exist")
    if path.is_file():
        files = [path]
    else:
        files = sorted(
            p
            for p in path.rglob("*")
            if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts)
        )
        if not files:
            raise UsageError(f"input folder {path} holds no Parquet files")
    for file in files:
        try:
            pq.read_metadata(file)
        except (OSError, pa.ArrowException) as exc:
            raise UsageError(f"{file} is not a Parquet file ({exc})") from None
    return files


def resolve_column(schema: pa.Schema, column: str | None, where: str | Path) -> str:
    """The message column: ``column`` if given, else ``value``, else ``payload`` when it is a
    binary column (the shape ``pulsar-codec dump`` writes), else the only binary column.

    Raises :class:`~pulsar_codec.cli._console.UsageError` naming the binary columns present.
    """
    binary: list[str] = [f.name for f in schema if any(test(f.type) for test in _BINARY_TYPES)]
    present = ", ".join(binary) if binary else "none"
    if column is not None:
        if column not in schema.names:
            raise UsageError(f"column {column!r} is not in {where} (binary columns: {present})")
        return column
    if "value" in schema.names:
        return "value"
    if "payload" in binary:
        return "payload"
    if len(binary) == 1:
        return str(binary[0])
    raise UsageError(
        f"no --column given and {where} has neither a 'value' column nor a binary 'payload' column; "
        f"pick one of the binary columns: {present}"
    )


def contract_columns(arrow_schema: pa.Schema) -> tuple[pa.Schema, list[Any]]:
    """The decoded columns' output schema (the Spark column of the type mapping) and one converter
    per column (None where the decoder's array is written as it is)."""
    target, converters = reader_struct(arrow_schema)
    return pa.schema(list(target)), converters


def convert_batch(batch: pa.RecordBatch, schema: pa.Schema, converters: list[Any]) -> list[pa.Array]:
    """A decoded batch's columns in the output types of :func:`contract_columns`."""
    return [col if fn is None else fn(col) for col, fn in zip(batch.columns, converters)]


def number_text(text: str, row: int) -> str:
    """An error text naming the row by its input position ``row`` (the pipeline names the row
    inside its batch)."""
    return _LOCATION.sub(lambda m: f"(message {row}, byte {m.group(1)})", text)


def schema_ids_of(messages: pa.Array, protocol: wire.Protocol) -> pa.Array:
    """The schema id in each message's prefix (null when the prefix cannot be read), as the
    dead-letter ``schema_id`` column: int64, or the GUID text for GUID protocols. A Hortonworks
    ``(metadata_id, version)`` pair has no single integer id: null."""
    guid = bool(getattr(protocol, "guid", False))
    found: list[Any] = []
    for message in messages.to_pylist():
        schema_id: Any = None
        if message is not None:
            try:
                schema_id = protocol.unpack(message)[0]
            except Exception:  # noqa: BLE001 - any prefix the codec refuses has no id to report
                schema_id = None
        if isinstance(schema_id, uuid.UUID):
            schema_id = str(schema_id)
        elif isinstance(schema_id, tuple):
            schema_id = None
        found.append(schema_id)
    return pa.array(found, pa.string() if guid else pa.int64())


def dead_letter_table(
    index: Any, messages: pa.Array, codes: Any, offsets: Any, texts: list[str], protocol: wire.Protocol
) -> pa.Table:
    """The dead-letter rows of one batch: input positions, raw messages and their errors."""
    return pa.Table.from_arrays(
        [
            pa.array(np.asarray(index, dtype=np.int64), pa.int64()),
            messages.cast(pa.binary()),
            schema_ids_of(messages, protocol),
            pa.array(np.asarray(codes, dtype=np.int32), pa.int32()),
            pa.array(np.asarray(offsets, dtype=np.int64), pa.int64()),
            pa.array(texts, pa.string()),
        ],
        schema=dead_letter_schema(protocol),
    )


def prepare_output(path: str | Path) -> Path:
    """Make ``path`` an empty folder for part files, as Spark's ``mode("overwrite")`` does.

    An existing file is replaced; an existing folder is emptied only if it holds nothing but
    Parquet part files and Spark's markers, so a wrong path never deletes unrelated files.
    """
    path = Path(path)
    if path.is_file():
        path.unlink()
    elif path.is_dir():
        foreign = [
            p.name
            for p in path.iterdir()
            if not (p.is_file() and (p.suffix in (".parquet", ".crc") or p.name.startswith(("_SUCCESS", "._SUCCESS"))))
        ]
        if foreign:
            raise UsageError(f"output {path} is a folder with other files in it ({', '.join(sorted(foreign)[:5])})")
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def write_part(folder: Path, number: int) -> Path:
    """The path of part file ``number`` in an output folder."""
    return folder / f"part-{number:05d}.parquet"
