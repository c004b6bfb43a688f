"""Parquet in, Parquet out: the engine behind ``pulsar-codec decode`` and the demo.

The local engine streams the input in record batches through one
:class:`~pulsar_codec.pipeline.MessageDecoder` with ``on_error="null"``; the Spark engine
(:mod:`.parquet_spark`) runs :func:`pulsar_codec.spark.decode` in local mode. Both keep the
contract of :mod:`._contract`: folders of part files, the same column types, the same dead-letter
columns and error texts.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import wire
from ..errors import SchemaError, SchemaNotFoundError
from ..formats import format_of_model
from ..pipeline import Decoded, MessageDecoder
from . import _console
from ._contract import (
    ERROR_TYPE,
    contract_columns,
    convert_batch,
    dead_letter_schema,
    dead_letter_table,
    empty_structs,
    input_files,
    kept_columns,
    kept_plan,
    number_text,
    resolve_column,
    staged_outputs,
    write_part,
)

__all__ = ["ERROR_TYPE", "decode_parquet", "newest_schema_id"]

_BATCH = 65_536
_ENGINES = ("local", "spark")


def newest_schema_id(path: str | Path, column: str, protocol: wire.Protocol, registry: Any = None) -> Any:
    """The highest schema id in the column (a cheap pass over the prefixes only).

    With ``registry``, the highest id that the registry knows (an unknown id makes error rows, it
    cannot be the reader). None when there is none.
    """
    ids: set[Any] = set()
    for file in input_files(path):
        for batch in pq.ParquetFile(file).iter_batches(batch_size=_BATCH, columns=[column]):
            ids.update(_ids_of(batch.column(0), protocol))
    for schema_id in sorted(ids, key=lambda k: (isinstance(k, tuple), k), reverse=True):
        if registry is None:
            return schema_id
        try:
            MessageDecoder(registry, protocol=protocol).writer_schema(schema_id)
        except SchemaNotFoundError:
            continue
        return schema_id
    return None


def _ids_of(messages: pa.Array, protocol: wire.Protocol) -> list[Any]:
    """Schema ids of the well-framed messages (bad ones are reported later, by the decode pass)."""
    try:
        ids = wire.unframe(messages, protocol).schema_ids.drop_null()
        if pa.types.is_integer(ids.type):
            return [int(v) for v in np.unique(ids.to_numpy())]
    except Exception:  # noqa: BLE001 - a bad prefix: fall back to one message at a time
        pass
    found = []
    for message in messages.to_pylist():
        if message is None:
            continue
        try:
            found.append(protocol.unpack(message)[0])
        except Exception:  # noqa: BLE001
            continue
    return found


def decode_parquet(
    input_path: str | Path,
    output_path: str | Path,
    registry: Any,
    *,
    column: str | None = None,
    protocol: wire.Protocol | str | None = wire.CONFLUENT,
    engine: str = "local",
    reader_schema: Any = None,
    dead_letter: str | Path | None = None,
    message: str | None = None,
    keep: str | Sequence[str] | None = None,
) -> dict[str, Any]:
    """Decode a Parquet column of framed Avro, JSON or Protobuf messages into a folder of Parquet part files.

    Parameters
    ----------
    input_path : path
        A Parquet file, or a folder of part files (read in name order).
    output_path : path
        The output folder (replaced). It holds the decoded columns; with ``dead_letter`` only the
        decoded rows and tombstones, without it every row plus a ``decode_error`` column.
    registry : registry client
    column : str, optional
        The message column; default ``value``, else a binary ``payload`` column (the shape of
        ``pulsar-codec dump``), else the only binary column.
    protocol, reader_schema
        As :class:`~pulsar_codec.pipeline.MessageDecoder`; the reader defaults to the newest
        writer schema in the input the registry knows. ``protocol=None``: Confluent's prefix,
        with the Protobuf message-index path when the reader is a Protobuf schema.
    engine : {"local", "spark"}
    dead_letter : path, optional
        A folder for the bad rows (see :data:`._contract.DEAD_LETTER_FIELDS`).
    message : str, optional
        Protobuf: the full name of the message type read (default: the type of the first message
        framed with the reader's schema id); messages of other types are bad rows.
    keep : str or list of str, optional
        Input columns written before the decoded fields, in the input's order: ``"COL,COL"``, a
        list, or ``"all"`` (every column but ``column``); see :func:`._contract.kept_columns`
        for the names refused and :func:`._contract.kept_plan` for their output types.

    Returns
    -------
    dict
        ``rows`` (input rows), ``decoded``, ``errors``, ``nulls`` (null messages, tombstones;
        rows == decoded + errors + nulls), ``seconds``, ``engine``, ``column`` (the message
        column read).
    """
    auto = protocol is None
    protocol = wire.CONFLUENT if protocol is None else wire.protocol_by_name(protocol)
    if engine not in _ENGINES:
        raise _console.UsageError(f"unknown engine {engine!r}; expected one of: {', '.join(_ENGINES)}")
    files = input_files(input_path)
    column = resolve_column(pq.read_schema(files[0]), column, input_path)
    start = time.perf_counter()
    # the reader is picked once, here: its format decides a defaulted prefix (Protobuf's has the index path)
    reader, fmt = pick_reader(registry, files, column, protocol, reader_schema, message)
    if auto and fmt == "PROTOBUF":
        protocol = wire.CONFLUENT_PROTOBUF
    # refused before anything is written
    kept = resolve_keep(files, column, keep, registry, protocol, (reader, fmt), input_path)
    if reader is not None:
        check_storable(MessageDecoder(registry, protocol=protocol, reader_schema=reader, format=fmt).arrow_schema)
    if engine == "spark":
        from .parquet_spark import decode_spark

        result = decode_spark(
            files, output_path, registry, column, protocol, reader, dead_letter, picked=fmt, keep=kept
        )
    else:
        result = _decode_local(files, output_path, registry, column, protocol, (reader, fmt), dead_letter, kept)
    stats: dict[str, Any] = dict(result)
    stats["seconds"] = time.perf_counter() - start
    stats["engine"] = engine
    stats["column"] = column
    return stats


def check_storable(arrow_schema: pa.Schema | None) -> None:
    """Refuse, before anything is written, decoded columns Parquet cannot store: a struct without
    fields (a Protobuf message with none, such as ``google.protobuf.Empty``)."""
    empty = empty_structs(arrow_schema) if arrow_schema is not None else []
    if empty:
        raise SchemaError(
            f"the reader schema's field{'s' if len(empty) > 1 else ''} {', '.join(empty)}"
            f" {'are messages' if len(empty) > 1 else 'is a message'} without fields (such as"
            " google.protobuf.Empty), which Parquet cannot store; decode with a --reader-schema"
            " that leaves them out"
        )


def pick_reader(
    registry: Any,
    files: list[Path],
    column: str,
    protocol: wire.Protocol,
    reader_schema: Any,
    message: str | None = None,
) -> tuple[Any, str | None]:
    """The reader schema and its payload format: the one given (format None: the registry's; a
    Protobuf schema parsed, as ``message``), else the newest writer schema in the input the
    registry knows and its format (``"AVRO"``, ``"JSON"``, ``"PROTOBUF"``: narrowed to ``message``
    or to the type of the first message with that id), else (None, None) (no message can be
    decoded: every row is an error or a tombstone)."""
    if reader_schema is not None:
        if not _protobuf_text(reader_schema) and format_of_model(reader_schema) != "PROTOBUF":
            if message is not None:
                raise _console.UsageError("--message applies to Protobuf schemas; the reader schema is not one")
            return reader_schema, None
        return _protobuf_model(reader_schema, message), "PROTOBUF"
    newest = None
    for file in files:
        found = newest_schema_id(file, column, protocol, registry)
        if found is not None and (newest is None or (found > newest)):
            newest = found
    if newest is None:
        return None, None
    writer = MessageDecoder(registry, protocol=protocol)._writer(newest)
    if writer.fmt.name != "PROTOBUF":
        if message is not None:
            raise _console.UsageError(f"--message applies to Protobuf schemas; schema id {newest} is {writer.fmt.name}")
        return writer.model, writer.fmt.name
    select = writer.fmt.select  # type: ignore[attr-defined]
    if message is not None:
        return select(writer.model, name=message), writer.fmt.name
    return select(writer.model, path=_first_path(files, column, newest)), writer.fmt.name


def resolve_keep(
    files: list[Path],
    column: str,
    keep: str | Sequence[str] | None,
    registry: Any,
    protocol: wire.Protocol,
    picked: tuple[Any, str | None],
    where: str | Path,
) -> list[str]:
    """The kept input columns (:func:`._contract.kept_columns`), checked against the fields the
    reader ``picked`` (see :func:`pick_reader`) decodes."""
    if keep is None:
        return []
    reader, fmt = picked
    decoded: list[str] = []
    if reader is not None:
        decoder = MessageDecoder(registry, protocol=protocol, reader_schema=reader, on_error="null", format=fmt)
        schema = decoder.arrow_schema
        decoded = list(schema.names) if schema is not None else []
    return kept_columns(pq.read_schema(files[0]), keep, column, decoded, where)


def _protobuf_text(schema: Any) -> bool:
    """Whether a reader schema given as text is ``.proto`` text (not JSON)."""
    return isinstance(schema, str) and not schema.lstrip().startswith(("{", "[", '"'))


def _protobuf_model(schema: Any, message: str | None) -> Any:
    from ..formats.protobuf import FORMAT

    model = FORMAT.select(FORMAT.parse(schema), name=message)
    return model


def _first_path(files: list[Path], column: str, schema_id: Any) -> list[int]:
    """The message-index path of the first message framed with ``schema_id`` (Confluent's Protobuf
    prefix), the output's message type when none is asked for; ``[0]`` when there is none."""
    for file in files:
        for batch in pq.ParquetFile(file).iter_batches(batch_size=_BATCH, columns=[column]):
            for value in batch.column(0).to_pylist():
                if value is None or len(value) < 6 or value[0] != 0:
                    continue
                if int.from_bytes(value[1:5], "big") != schema_id:
                    continue
                try:
                    return wire.CONFLUENT_PROTOBUF.unpack_indexes(value)[1] or [0]
                except ValueError:
                    continue
    return [0]


def _decode_local(
    files: list[Path],
    output_path: str | Path,
    registry: Any,
    column: str,
    protocol: wire.Protocol,
    picked: tuple[Any, str | None],
    dead_letter: str | Path | None,
    kept: Sequence[str] = (),
) -> dict[str, int]:
    reader, fmt = picked  # see pick_reader
    decoder = (
        # every core: the kernels release the GIL, and the output is the one-thread output
        MessageDecoder(registry, protocol=protocol, reader_schema=reader, on_error="null", format=fmt, threads=0)
        if reader
        else None
    )
    no_reader = MessageDecoder(registry, protocol=protocol, on_error="null")
    columns, converters = contract_columns(decoder.arrow_schema) if decoder else (pa.schema([]), [])
    kept_fields, kept_converters = kept_plan(pq.read_schema(files[0]), kept)
    out_schema = pa.schema([*kept_fields, *columns])
    if not dead_letter:
        out_schema = out_schema.append(pa.field("decode_error", ERROR_TYPE))
    read = list(dict.fromkeys([column, *kept]))
    dead_schema = dead_letter_schema(protocol)
    total = sum(pq.read_metadata(f).num_rows for f in files)
    rows = errors = nulls = 0
    # written beside the outputs and put in their place at the end: a failed run leaves them as they were
    with staged_outputs(output_path, dead_letter or None) as (out_folder, dead_folder), contextlib.ExitStack() as stack:
        assert out_folder is not None
        bar = stack.enter_context(_console.progress("decoding", total=total))
        writer = stack.enter_context(pq.ParquetWriter(write_part(out_folder, 0), out_schema, store_schema=False))
        dead_writer = None
        if dead_folder is not None:
            dead_writer = stack.enter_context(
                pq.ParquetWriter(write_part(dead_folder, 0), dead_schema, store_schema=False)
            )
        for file in files:
            for raw in pq.ParquetFile(file).iter_batches(batch_size=_BATCH, columns=read):
                messages = raw.column(column)
                good, bad = _decode_batch(decoder or no_reader, messages, columns, converters)
                good = [fn(raw.column(name)) for name, fn in zip(kept, kept_converters)] + good
                index = bad["index"].to_numpy().astype(np.int64)
                texts = [number_text(t, int(i) + rows) for t, i in zip(bad["message"].to_pylist(), index)]
                nulls += messages.null_count
                if dead_writer is not None:
                    keep = np.ones(len(messages), dtype=bool)
                    keep[index] = False
                    kept = [c.filter(pa.array(keep)) for c in good]
                    writer.write_batch(pa.RecordBatch.from_arrays(kept, schema=out_schema))
                    dead = dead_letter_table(
                        index + rows, messages.take(pa.array(index)), bad["code"], bad["offset"], texts, protocol
                    )
                    dead_writer.write_table(dead)
                else:
                    error_column = _error_column(len(messages), index, bad, texts)
                    writer.write_batch(pa.RecordBatch.from_arrays([*good, error_column], schema=out_schema))
                rows += len(messages)
                errors += len(index)
                bar.advance(len(messages))
    return {"rows": rows, "decoded": rows - errors - nulls, "errors": errors, "nulls": nulls}


def _decode_batch(
    decoder: MessageDecoder, messages: pa.Array, columns: pa.Schema, converters: list[Any]
) -> tuple[list[pa.Array], pa.Table]:
    """The batch's decoded columns in the contract's types, and the pipeline's errors table."""
    if decoder.reader_schema is None:
        # no reader: no message has an id the registry knows (or the input holds only tombstones and
        # bad prefixes), so the pipeline reports every non-null message and no column decodes
        result = decoder.decode(messages)
        assert isinstance(result, Decoded)  # on_error="null"
        return [], result.errors
    result = decoder.decode(messages)
    assert isinstance(result, Decoded)  # on_error="null"
    null_rows = np.asarray(messages.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    null_rows[result.errors["index"].to_numpy().astype(np.int64)] = True
    return convert_batch(result.batch, columns, converters, null_rows), result.errors


def _error_column(n: int, index: np.ndarray, bad: pa.Table, texts: list[str]) -> pa.Array:
    """One ``decode_error`` struct per row: null for good rows and tombstones."""
    if not len(index):
        return pa.nulls(n, ERROR_TYPE)
    position = np.full(n, -1, dtype=np.int64)
    position[index] = np.arange(len(index))
    structs = pa.StructArray.from_arrays(
        [
            bad["code"].combine_chunks().cast(pa.int32()),
            bad["offset"].combine_chunks(),
            pa.array(texts, pa.string()),
        ],
        fields=list(ERROR_TYPE),
    )
    taken = structs.take(pa.array(np.where(position >= 0, position, 0)))
    mask = pa.array(position < 0)
    return pa.StructArray.from_arrays([taken.field(i) for i in range(3)], fields=list(ERROR_TYPE), mask=mask)
