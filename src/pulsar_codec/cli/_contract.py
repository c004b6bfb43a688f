"""The output contract that ``pulsar-codec decode`` and the demo keep on both engines.

Both engines write folders of Parquet part files with the same columns and types:

* the decoded table: the input columns named by ``--keep`` (:func:`kept_columns`, in the input's
  order, typed as Spark reads them back: :func:`kept_plan`), then one column per reader-schema
  field, typed as the Spark column of the README's type mapping (enums as strings, timestamps as
  INT64 microseconds with UTC, unions as structs, ...), then, when no dead-letter path is given,
  ``decode_error`` (``struct<code:int32, offset:int64, message:string>``, null for good rows and
  tombstones);
* the dead-letter table (:data:`DEAD_LETTER_FIELDS`): the input position, the raw message
  (``payload``), its schema id when the prefix could be read, the error code, byte offset and text
  (``message``), named as the fields of Spark's ``decode_error``.

The error text is the pipeline's, with the row named by its position in the input (files of a
folder in name order), so ``(message 15, byte 0)`` is the row whose ``index`` is 15.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import wire
from ..integrations.spark.types import Converter, reader_struct, spark_arrow_type
from ._console import UsageError

ERROR_TYPE = pa.struct([pa.field("code", pa.int32()), pa.field("offset", pa.int64()), pa.field("message", pa.string())])
"""The output tables' ``decode_error`` (``struct<code:int, offset:bigint, message:string>``): the
bad rows' bytes go to the dead-letter table, not into every table."""

__all__ = [
    "DEAD_LETTER_FIELDS",
    "ERROR_TYPE",
    "contract_columns",
    "empty_structs",
    "convert_batch",
    "dead_letter_schema",
    "dead_letter_table",
    "input_files",
    "kept_columns",
    "kept_plan",
    "number_text",
    "prepare_output",
    "resolve_column",
    "schema_ids_of",
    "staged_outputs",
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


KEEP_ALL = "all"
"""``--keep all``: every input column but the messages' one."""


def kept_columns(
    schema: pa.Schema,
    keep: str | Sequence[str] | None,
    column: str,
    decoded: Sequence[str],
    where: str | Path,
) -> list[str]:
    """The input columns the decoded table keeps (``--keep``), in the input's order.

    Parameters
    ----------
    schema : pa.Schema
        The input's schema (its first file's).
    keep : str or list of str, optional
        ``"COL,COL"``, a list of names, or ``"all"`` (every column but ``column``). Naming
        ``column`` keeps every row's raw bytes.
    column : str
        The messages' column.
    decoded : list of str
        The decoded fields' names: a kept column may not share one, nor ``decode_error``. Names
        are compared without case, as Spark compares them (``spark.sql.caseSensitive`` is off).
    where : path
        The input, as error texts name it.

    Raises :class:`~pulsar_codec.cli._console.UsageError` for an empty or unknown name (naming the
    columns there are) and for a clash.
    """
    if keep is None:
        return []
    names = [n.strip() for n in keep.split(",")] if isinstance(keep, str) else [str(n) for n in keep]
    if names == [KEEP_ALL]:
        names = [n for n in schema.names if n != column]
    if any(not n for n in names):
        raise UsageError(f"--keep: empty column name in {','.join(names)!r}; give COL[,COL...] or all")
    unknown = [n for n in dict.fromkeys(names) if n not in schema.names]
    if unknown:
        listed = ", ".join(repr(n) for n in unknown)
        raise UsageError(f"--keep: no column {listed} in {where}; its columns: {', '.join(schema.names)}")
    kept = [n for n in schema.names if n in names]
    taken = {n.lower(): n for n in decoded}
    for name in kept:
        if name.lower() == "decode_error":
            raise UsageError(f"--keep: column {name!r} has the name of the error column the output adds")
        if name.lower() in taken:
            raise UsageError(
                f"--keep: column {name!r} has the name of a decoded field ({taken[name.lower()]!r}; names are"
                " compared without case, as Spark does); rename it in the input or keep other columns"
            )
    return kept


def kept_plan(schema: pa.Schema, kept: Sequence[str]) -> tuple[list[pa.Field], list[Converter]]:
    """The output fields of the kept columns and one converter per column.

    A kept column is written as Spark reads it back from the input and writes it: durations as
    the int64 Parquet stores them (Parquet has no duration type), then the Spark column of the
    type (timestamps as microseconds, UTC when zoned; unsigned integers widened; fixed-size binary
    as binary; see :func:`~pulsar_codec.integrations.spark.types.spark_arrow_type`), nullable at
    every level (Spark reads every file column as nullable), map keys excepted; a time64 column
    keeps its unit, as Spark's TIME type keeps a Parquet TIME's precision.
    """
    fields: list[pa.Field] = []
    converters: list[Converter] = []
    for name in kept:
        stored = _stored(schema.field(name).type)
        target, convert = spark_arrow_type(stored)
        target = _nullable(_kept_times(target, stored))
        fields.append(pa.field(name, target, nullable=True))
        converters.append(_kept_converter(stored, convert, target))
    return fields, converters


def _kept_times(target: pa.DataType, stored: pa.DataType) -> pa.DataType:
    """``target`` (the Spark column of ``stored``, every time as nanoseconds) with each time64 of
    ``stored`` in its own unit, at any depth."""
    if pa.types.is_time64(stored) and pa.types.is_time64(target):
        return stored
    if pa.types.is_struct(target) and pa.types.is_struct(stored):
        return pa.struct([f.with_type(_kept_times(f.type, s.type)) for f, s in zip(target, stored)])
    if pa.types.is_map(target) and pa.types.is_map(stored):
        return pa.map_(target.key_field, target.item_field.with_type(_kept_times(target.item_type, stored.item_type)))
    if pa.types.is_list(target) and (pa.types.is_list(stored) or pa.types.is_large_list(stored)):
        return pa.list_(target.value_field.with_type(_kept_times(target.value_type, stored.value_type)))
    return target


def _kept_converter(stored: pa.DataType, convert: Converter | None, target: pa.DataType) -> Converter:
    def run(array: Any) -> Any:
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if array.type != stored:
            array = array.cast(stored)
        if convert is not None:
            array = convert(array)
        return array if array.type == target else array.cast(target)

    return run


def _each_leaf(t: pa.DataType, leaf: Callable[[pa.DataType], pa.DataType]) -> pa.DataType:
    """``t`` with ``leaf`` applied to every type below its structs, maps and lists (``t`` itself
    when nothing changes)."""
    if pa.types.is_struct(t):
        changed = pa.struct([f.with_type(_each_leaf(f.type, leaf)) for f in t])
    elif pa.types.is_map(t):
        changed = pa.map_(t.key_field, t.item_field.with_type(_each_leaf(t.item_type, leaf)))
    elif pa.types.is_list(t):
        changed = pa.list_(t.value_field.with_type(_each_leaf(t.value_type, leaf)))
    elif pa.types.is_large_list(t):
        changed = pa.large_list(t.value_field.with_type(_each_leaf(t.value_type, leaf)))
    else:
        return leaf(t)
    return t if changed == t else changed


def _stored(t: pa.DataType) -> pa.DataType:
    """``t`` with each duration as the int64 Parquet stores it, as Spark reads it."""
    return _each_leaf(t, lambda x: pa.int64() if pa.types.is_duration(x) else x)


def _nullable(t: pa.DataType) -> pa.DataType:
    """``t`` with every nested field nullable (map keys stay required, as Parquet has them)."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _nullable(f.type), nullable=True) for f in t])
    if pa.types.is_map(t):
        return pa.map_(pa.field("key", t.key_type, nullable=False), pa.field("value", _nullable(t.item_type)))
    if pa.types.is_list(t):
        return pa.list_(pa.field("element", _nullable(t.value_type), nullable=True))
    return t


def contract_columns(arrow_schema: pa.Schema) -> tuple[pa.Schema, list[Any]]:
    """The decoded columns' output schema (the Spark column of the type mapping, as Spark writes it
    to Parquet) and one converter per column (None where the decoder's array is written as it is).

    Times are written as microseconds, the precision of Spark's ``TimeType`` and of the ``TIME``
    column Spark writes (Spark takes them from Arrow as nanoseconds).
    """
    target, plans = reader_struct(arrow_schema)
    fields, converters = [], []
    for field, convert in zip(target, plans):
        written = _written(field.type)
        fields.append(field.with_type(written))
        converters.append(convert if written == field.type else _then_cast(convert, written))
    return pa.schema(fields), converters


def empty_structs(arrow_schema: pa.Schema) -> list[str]:
    """The dotted paths of the struct fields without children in ``arrow_schema`` (a Protobuf
    message with no fields, such as ``google.protobuf.Empty``), at any depth: Parquet stores no
    such column, on either engine."""
    found: list[str] = []

    def walk(t: pa.DataType, path: str) -> None:
        if pa.types.is_struct(t):
            if t.num_fields == 0:
                found.append(path)
            for f in t:
                walk(f.type, f"{path}.{f.name}")
        elif pa.types.is_map(t):
            walk(t.item_type, f"{path}.value")
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_type, f"{path}[]")

    for field in arrow_schema:
        walk(field.type, field.name)
    return found


def _then_cast(convert: Converter | None, target: pa.DataType) -> Converter:
    def run(array: Any) -> Any:
        return (array if convert is None else convert(array)).cast(target)

    return run


def _written(t: pa.DataType) -> pa.DataType:
    """``t`` with every ``time64[ns]`` as ``time64[us]``, at any depth."""
    return _each_leaf(t, lambda x: pa.time64("us") if x == pa.time64("ns") else x)


def convert_batch(
    batch: pa.RecordBatch, schema: pa.Schema, converters: list[Any], null_rows: np.ndarray | None = None
) -> list[pa.Array]:
    """A decoded batch's columns in the output types of :func:`contract_columns`.

    ``null_rows`` (a boolean per row): the rows written as nulls in every column, the bad rows and
    tombstones. The decoder gives them a null in each column but a union's (an Arrow union has no
    nulls of its own), whose struct is made null there, as Spark's null row struct makes it.

    A required field under a null struct (the branches a union's row did not take are null
    structs) is given a placeholder value there: Parquet stores nothing below a null struct, but
    pyarrow's writer refuses a null anywhere in a required field. The output keeps the schema's
    nullability, as Spark writes it.
    """
    columns = [col if fn is None else fn(col) for col, fn in zip(batch.columns, converters)]
    if null_rows is not None and null_rows.any():
        columns = [_null_at(col, null_rows) if pa.types.is_struct(col.type) else col for col in columns]
    return [_settled(col) if _has_required_nested(field.type) else col for col, field in zip(columns, schema)]


def _null_at(array: Any, rows: np.ndarray) -> Any:
    """A struct array made null at ``rows`` too."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if not (valid & rows).any():
        return array
    children = [array.field(i) for i in range(array.type.num_fields)]
    return pa.StructArray.from_arrays(children, fields=list(array.type), mask=pa.array(~valid | rows))


def _has_required_nested(t: pa.DataType) -> bool:
    if pa.types.is_struct(t):
        return any(not f.nullable or _has_required_nested(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_map(t):
        return _has_required_nested(t.value_type if pa.types.is_list(t) else t.item_type)
    return False


def _settled(array: Any) -> Any:
    """``array`` with a placeholder in each null slot of a required struct field whose struct is
    null there (a null in a required field under a valid struct is left, for the writer to refuse)."""
    if isinstance(array, pa.ChunkedArray):
        return pa.chunked_array([_settled(chunk) for chunk in array.chunks], array.type)
    t = array.type
    mask = array.is_null() if array.null_count else None
    if pa.types.is_struct(t):
        children = []
        for i, field in enumerate(t):
            child = _settled(array.field(i))
            if not field.nullable and child.null_count and mask is not None:
                child = _placeholders(child, mask)
            children.append(child)
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_list(t):
        return pa.ListArray.from_arrays(array.offsets, _settled(array.values), type=t, mask=mask)
    if pa.types.is_map(t):
        return pa.MapArray.from_arrays(array.offsets, array.keys, _settled(array.items), type=t, mask=mask)
    return array


def _placeholders(child: Any, parent_null: Any) -> Any:
    """``child`` with its nulls under a null parent replaced by a value of its type."""
    n = len(child)
    fill = np.asarray(pc.and_(child.is_null(), parent_null).to_numpy(zero_copy_only=False), dtype=bool)
    if not fill.any():
        return child
    positions = np.arange(n, dtype=np.int64)
    positions[fill] = n
    return pa.concat_arrays([child, _placeholder(child.type)]).take(pa.array(positions))


def _placeholder(t: pa.DataType) -> Any:
    """One value of type ``t``, with no null in any required field."""
    if pa.types.is_struct(t):
        return pa.StructArray.from_arrays([_placeholder(f.type) for f in t], fields=list(t))
    if pa.types.is_list(t) or pa.types.is_map(t):
        return pa.array([[]], t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.array([""], t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.array([b""], t)
    if pa.types.is_fixed_size_binary(t):
        return pa.array([bytes(t.byte_width)], t)
    if pa.types.is_boolean(t):
        return pa.array([False], t)
    if pa.types.is_date(t):
        return pa.array([0], pa.int32()).cast(t)
    return pa.array([0], pa.int64()).cast(t)


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
    _check_replaceable(path)
    _remove(path)
    path.mkdir(parents=True)
    return path


def _check_replaceable(path: Path) -> None:
    """Refuse an output folder holding anything but Parquet part files and Spark's markers."""
    if path.is_dir():
        foreign = [
            p.name
            for p in path.iterdir()
            if not (p.is_file() and (p.suffix in (".parquet", ".crc") or p.name.startswith(("_SUCCESS", "._SUCCESS"))))
        ]
        if foreign:
            raise UsageError(f"output {path} is a folder with other files in it ({', '.join(sorted(foreign)[:5])})")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


@contextlib.contextmanager
def staged_outputs(*paths: str | Path | None) -> Iterator[list[Path | None]]:
    """Empty folders to write the outputs ``paths`` into (None passes through as None), put in
    their places only when the block ends without an error.

    Each is a hidden folder beside its output (so the rename stays on one file system), named
    after the process (two runs do not collide). An error inside the block removes them and leaves
    every existing output as it was, as ``dump`` leaves its file; an output folder holding other
    files than part files is refused (:class:`UsageError`) before anything is written.
    """
    targets = [None if p is None else Path(p) for p in paths]
    for target in targets:
        if target is not None:
            _check_replaceable(target)
    staged = [None if t is None else t.absolute().parent / f".{t.name}.{os.getpid()}.partial" for t in targets]
    try:
        for folder in staged:
            if folder is not None:
                _remove(folder)
                folder.mkdir(parents=True)
        yield staged
        for target, folder in zip(targets, staged):
            if target is not None and folder is not None:
                _swap(folder, target)
    finally:
        for folder in staged:
            if folder is not None:
                _remove(folder)


def _swap(folder: Path, target: Path) -> None:
    """Put ``folder`` in the place of ``target``: the old output is moved aside first and removed
    once the new one is in place (put back if the rename fails)."""
    aside = target.absolute().parent / f".{target.name}.{os.getpid()}.replaced"
    had = target.exists() or target.is_symlink()
    if had:
        _remove(aside)
        os.replace(target, aside)
    try:
        os.replace(folder, target)
    except BaseException:
        if had:
            os.replace(aside, target)
        raise
    if had:
        _remove(aside)


def write_part(folder: Path, number: int) -> Path:
    """The path of part file ``number`` in an output folder."""
    return folder / f"part-{number:05d}.parquet"
