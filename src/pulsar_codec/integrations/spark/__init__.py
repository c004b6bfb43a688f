"""PySpark integration: decode and encode registry-framed Avro columns with Arrow-native Spark jobs.

Every function here builds a ``DataFrame.mapInArrow`` stage: Spark hands each Python worker Arrow
record batches, the compiled kernels decode a whole batch at once, and the decoded columns go back
to the JVM as Arrow. No row ever passes through Python one at a time, and no JVM jar is needed.

Quick start
-----------
>>> from pulsar_codec import spark as pcs, wire                      # doctest: +SKIP
>>> from pulsar_codec.registry import LocalRegistry
>>> session = pcs.session()                                         # local[2], 127.0.0.1, no UI
>>> df = session.read.parquet("events.parquet")                     # a binary column "value"
>>> out = pcs.decode(df, "value", registry=LocalRegistry("schemas.db"))
>>> out.select("decoded.*").show()
>>> bad = out.where(out.decode_error.isNotNull())                   # dead-letter rows
>>> bad.select("value", "decode_error").write.mode("append").parquet("dead-letter/")

Functions
---------
``decode(df, column="value", *, registry, protocol=wire.CONFLUENT, reader_schema=None,
schema_id_column=None, output="decoded", error_column="decode_error", subjects=None,
prefetch=True)``
    All input columns, plus ``output`` (a struct: one field per reader-schema field) and
    ``error_column`` (``struct<code:int, offset:bigint, message:string>``). ``column`` holds framed
    messages (any integer-id protocol of :mod:`pulsar_codec.wire`), or, with ``schema_id_column``,
    bare Avro bodies (PIP-420 ``EncodeData.data``) whose schema id is in that column.
``split_keyvalue(df, column="value", *, key_column="key", value_column="value",
convention="java", error_column="keyvalue_error")``
    Pulsar INLINE KeyValue payloads into a key and a value binary column.
``decode_keyvalue(df, column="value", *, registry, ...)``
    ``split_keyvalue`` followed by ``decode`` of the key and of the value.
``encode(df, column, *, registry, subject, protocol=wire.CONFLUENT, schema=None, output="value")``
    A struct column into framed Avro messages; the schema is registered on the driver.
``spark_schema(reader_schema)``
    The Spark ``StructType`` that ``decode`` produces for a reader schema.
``session(master="local[2]", app_name="pulsar-codec", **conf)``
    A SparkSession with safe local defaults.
``RegistrySpec`` / ``registry_spec(registry)``
    How executors rebuild the registry client (see "Schemas on the executors").
``executor_stats(spark)``
    What the executor processes' schema caches hold and fetched (for monitoring and tests).

Bad rows and the dead-letter recipe
-----------------------------------
A message whose prefix or Avro body is malformed never fails the job: its ``output`` struct is
null, its ``error_column`` holds ``code`` (:class:`pulsar_codec.errors.ErrorCode`), ``offset``
(byte offset inside the message for prefix errors, inside the Avro body after the prefix for body
errors) and ``message`` (the text the exception would carry), and the input column is passed
through untouched. ``df.where(col("decode_error").isNotNull())`` selects the rows to route to a
dead-letter table; ``df.where(col("decode_error").isNull())`` the good ones. A null message gives
a null struct and a null error. A schema id that the registry does not know is not bad data: it
raises :class:`~pulsar_codec.errors.SchemaNotFoundError` (on the driver when the pre-pass meets
it, before any decoding). With ``schema_id_column``, a non-null body whose id is null is a bad row
with a null ``code``.

Schemas on the executors
------------------------
Writer schemas are resolved on the driver and shipped with the job: by default (``prefetch=True``)
a cheap pre-pass cuts the prefixes off the message column inside the JVM (``substring``), lets
Spark deduplicate them and parses the few distinct prefixes on the driver; ``subjects=[...]`` adds every version of those subjects. Executors then never call the
registry for those ids. An id first met on an executor (``prefetch=False``, or data that changed
since the pre-pass) is fetched once per executor Python process and cached there: the executor
rebuilds the client from a small picklable :class:`RegistrySpec` (a LocalRegistry's file path; a
ConfluentRegistry's URL, credentials and options; a plain dict ships whole). A
``LocalRegistry(":memory:")`` cannot be rebuilt elsewhere: with it, only ids resolved on the driver
work. The spec travels inside the job, so registry credentials are visible to whoever can read the
job's closures; prefer a token scoped to reading schemas.

Type mapping (Arrow as decoded -> Spark)
----------------------------------------
The decoded struct follows the Avro -> Arrow mapping of the design (section 5); where Spark cannot
hold an Arrow type, the nearest faithful Spark type is used:

========================================  ==========================================================
Arrow (decoder)                           Spark
========================================  ==========================================================
null                                      NullType
bool, int32, int64, float32, float64      BooleanType, IntegerType, LongType, FloatType, DoubleType
binary, fixed_size_binary(n)              BinaryType
string (also ``uuid``)                    StringType
dictionary<int32, string> (enum)          StringType (the symbol)
decimal128(p, s)                          DecimalType(p, s)
decimal256(p, s), p > 38                  StringType (the exact decimal text; Spark stops at 38)
date32                                    DateType
time32[ms], time64[us]                    TimeType (Spark 4.1+; exact)
timestamp[ms|us|ns, tz=UTC]               TimestampType (microseconds: nanoseconds are truncated)
timestamp[ms|us|ns] (local-timestamp-*)   TimestampNTZType (microseconds: nanoseconds truncated)
month_day_nano_interval (duration)        struct<months:int, days:int, nanoseconds:bigint>
dense_union (other unions)                struct with one nullable field per non-null branch, named
                                          after the branch type (``int``, ``string``, a record's
                                          name, ...); exactly one is set, and the struct is null
                                          when the ``null`` branch was written
list<T>, map<string, T>, struct           ArrayType, MapType(StringType, T), StructType
========================================  ==========================================================

Backends
--------
Each job carries the backend active on the driver when it was built (``"cython"`` or
``"python"``, see :mod:`pulsar_codec._backend`), and the executors run the same twin; if the
compiled kernels cannot be imported on an executor it falls back to the pure twin and reports it in
:func:`executor_stats`. ``PULSAR_CODEC_NO_EXTENSIONS=1`` in the driver's environment therefore also
applies on the executors.

Running on a cluster
--------------------
Nothing goes into the JVM: the executors only need ``pulsar_codec`` (and pyarrow, numpy, fastavro)
importable by their Python. Either ship the wheel::

    pip wheel pulsar-codec -w dist/ --no-deps
    spark-submit --py-files dist/pulsar_codec-<version>-<tag>.whl job.py

(``--py-files`` puts the wheel on the executors' ``sys.path``; that works for the pure-Python wheel
``py3-none-any`` and for a compiled wheel built for the executors' platform and Python, since
Python imports extension modules only from real directories: for compiled wheels prefer the
packed environment below), or pack a virtual environment with everything installed and unpack it
on every executor::

    python -m venv env && env/bin/pip install 'pulsar-codec[spark]' && venv-pack -p env -o env.tar.gz
    PYSPARK_PYTHON=./env/bin/python spark-submit --archives env.tar.gz#env job.py

(``conda-pack`` works the same way; on YARN or Kubernetes set
``spark.executorEnv.PYSPARK_PYTHON``.) The registry must be reachable from the executors only for
ids that the driver did not resolve.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ... import wire
from ..._kernels import _backend
from ...formats.avro.plan import build_layout
from ...formats.avro.schema import Schema, parse, to_json
from ...errors import DecodeError, KeyValueFormatError, SchemaError, SchemaNotFoundError

__all__ = [
    "ERROR_TYPE",
    "RegistrySpec",
    "decode",
    "decode_keyvalue",
    "encode",
    "executor_stats",
    "registry_spec",
    "session",
    "spark_arrow_type",
    "spark_schema",
    "split_keyvalue",
    "to_spark_arrow",
]

ERROR_TYPE = pa.struct(
    [pa.field("code", pa.int32()), pa.field("offset", pa.int64()), pa.field("message", pa.string())]
)
"""Arrow type of the error column (``struct<code:int, offset:bigint, message:string>``)."""

_INTERVAL_STRUCT = pa.struct(
    [pa.field("months", pa.int32()), pa.field("days", pa.int32()), pa.field("nanoseconds", pa.int64())]
)
_INTERVAL_DTYPE = np.dtype([("months", "<i4"), ("days", "<i4"), ("nanoseconds", "<i8")])

Converter = Callable[[pa.Array], pa.Array]


# -- type mapping ---------------------------------------------------------------------------------


def _mask(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _rebase(arr: pa.Array) -> tuple[pa.Array, int, int]:
    """int32/int64 offsets of a list or map array, rebased to start at 0, and the value range."""
    offsets = arr.offsets
    lo = offsets[0].as_py()
    hi = offsets[len(offsets) - 1].as_py()
    if lo:
        offsets = pa.array(np.asarray(offsets.to_numpy(zero_copy_only=False)) - lo, offsets.type)
    return offsets, lo, hi


def spark_arrow_type(arrow_type: pa.DataType) -> tuple[pa.DataType, Converter | None]:
    """The Arrow type Spark can take for ``arrow_type``, and how to convert an array to it.

    Parameters
    ----------
    arrow_type : pa.DataType
        A type the Avro decoder produces (design section 5).

    Returns
    -------
    (target, convert) : (pa.DataType, callable or None)
        ``target`` is what the JVM reads back as the Spark type of the module's mapping table;
        ``convert(array) -> array`` turns a batch's array of ``arrow_type`` into ``target`` (run on
        the executors, per batch). ``convert`` is None when the array can be passed as it is.
    """
    t = arrow_type
    if pa.types.is_dictionary(t):
        value_target, _ = spark_arrow_type(t.value_type)
        return value_target, lambda a: a.dictionary_decode().cast(value_target)
    if pa.types.is_fixed_size_binary(t) or pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
        return pa.binary(), lambda a: a.cast(pa.binary())
    if pa.types.is_string_view(t) or pa.types.is_large_string(t):
        return pa.string(), lambda a: a.cast(pa.string())
    if pa.types.is_decimal(t):
        if t.precision > 38 or pa.types.is_decimal256(t):
            if t.precision <= 38:
                target = pa.decimal128(t.precision, t.scale)
                return target, lambda a: a.cast(target)
            return pa.string(), lambda a: a.cast(pa.string())
        return t, None
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        if t == pa.time64("ns"):
            return t, None
        return pa.time64("ns"), lambda a: a.cast(pa.time64("ns"))
    if pa.types.is_timestamp(t):
        target = pa.timestamp("us", tz="UTC" if t.tz is not None else None)
        if t == target:
            return t, None
        # nanoseconds: Spark keeps microseconds, so the cast truncates (documented)
        return target, lambda a: a.cast(target, safe=False)
    if t.id == pa.month_day_nano_interval().id:
        return _INTERVAL_STRUCT, _interval_to_struct
    if pa.types.is_union(t):
        return _union_plan(t)
    if pa.types.is_struct(t):
        plans = [spark_arrow_type(f.type) for f in t]
        target = pa.struct([pa.field(f.name, p[0], nullable=f.nullable) for f, p in zip(t, plans)])
        if all(p[1] is None for p in plans):
            return target, None

        def convert_struct(a: pa.Array) -> pa.Array:
            children = [a.field(i) if fn is None else fn(a.field(i)) for i, (_, fn) in enumerate(plans)]
            return pa.StructArray.from_arrays(children, fields=list(target), mask=_mask(a))

        return target, convert_struct
    if pa.types.is_map(t):
        item_target, item_fn = spark_arrow_type(t.item_type)
        target = pa.map_(pa.string(), pa.field("value", item_target, nullable=t.item_field.nullable))
        if item_fn is None and pa.types.is_string(t.key_type):
            return target if target == t else t, None

        def convert_map(a: pa.Array) -> pa.Array:
            offsets, lo, hi = _rebase(a)
            keys = a.keys.slice(lo, hi - lo).cast(pa.string())
            items = a.items.slice(lo, hi - lo)
            if item_fn is not None:
                items = item_fn(items)
            return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=_mask(a))

        return target, convert_map
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        item_target, item_fn = spark_arrow_type(t.value_type)
        target = pa.list_(pa.field("element", item_target, nullable=t.value_field.nullable))
        if item_fn is None and pa.types.is_list(t):
            return t, None

        def convert_list(a: pa.Array) -> pa.Array:
            if not pa.types.is_list(a.type):
                a = a.cast(pa.list_(a.type.value_field))
            offsets, lo, hi = _rebase(a)
            values = a.values.slice(lo, hi - lo)
            if item_fn is not None:
                values = item_fn(values)
            return pa.ListArray.from_arrays(offsets, values, type=target, mask=_mask(a))

        return target, convert_list
    # null, boolean, integers, floats, string, binary, date32: Spark reads them as they are
    return t, None


def _interval_to_struct(a: pa.Array) -> pa.Array:
    data = a.buffers()[1]
    n = len(a)
    if data is None or n == 0:
        values = np.zeros(n, dtype=_INTERVAL_DTYPE)
    else:
        values = np.frombuffer(data, dtype=_INTERVAL_DTYPE, count=a.offset + n)[a.offset :]
    return pa.StructArray.from_arrays(
        [
            pa.array(np.ascontiguousarray(values["months"]), pa.int32()),
            pa.array(np.ascontiguousarray(values["days"]), pa.int32()),
            pa.array(np.ascontiguousarray(values["nanoseconds"]), pa.int64()),
        ],
        fields=list(_INTERVAL_STRUCT),
        mask=_mask(a),
    )


def _union_plan(t: pa.DataType) -> tuple[pa.DataType, Converter]:
    branches = []  # (type code, field, target, convert) of every non-null branch
    null_codes = []
    for i, f in enumerate(t):
        code = t.type_codes[i]
        if pa.types.is_null(f.type):
            null_codes.append(code)
            continue
        target, fn = spark_arrow_type(f.type)
        branches.append((code, i, f.name, target, fn))
    target = pa.struct([pa.field(name, bt, nullable=True) for _, _, name, bt, _ in branches])
    dense = t.mode == "dense"

    def convert_union(a: pa.Array) -> pa.Array:
        # read the buffers directly: UnionArray.type_codes / .offsets ignore a slice's offset
        n = len(a)
        buffers = a.buffers()
        codes = np.frombuffer(buffers[1], dtype=np.int8, count=a.offset + n)[a.offset :]
        offsets = np.frombuffer(buffers[2], dtype=np.int32, count=a.offset + n)[a.offset :] if dense else None
        children = []
        for code, index, _, bt, fn in branches:
            chosen = codes == code
            child = a.field(index)
            if not chosen.any() or len(child) == 0:
                children.append(pa.nulls(n, bt))
                continue
            positions = offsets if dense else np.arange(a.offset, a.offset + n)
            picked = child.take(pa.array(positions.astype(np.int64), pa.int64(), mask=~chosen))
            children.append(picked if fn is None else fn(picked))
        is_null = np.isin(codes, null_codes) if null_codes else None
        mask = None if is_null is None or not is_null.any() else pa.array(is_null)
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)

    return target, convert_union


def to_spark_arrow(array: pa.Array) -> pa.Array:
    """Convert one decoded array to the Arrow type Spark reads (see :func:`spark_arrow_type`)."""
    _, fn = spark_arrow_type(array.type)
    return array if fn is None else fn(array)


def _spark_type(arrow_type: pa.DataType):
    from pyspark.sql.pandas.types import from_arrow_type

    return from_arrow_type(arrow_type, prefer_timestamp_ntz=True)


def _reader_struct(reader: Schema) -> tuple[pa.DataType, Converter | None, list[Converter | None]]:
    layout_schema = build_layout(reader).arrow_schema
    plans = [spark_arrow_type(f.type) for f in layout_schema]
    target = pa.struct([pa.field(f.name, p[0], nullable=True) for f, p in zip(layout_schema, plans)])
    return target, None, [p[1] for p in plans]


def spark_schema(reader_schema: Any):
    """The Spark ``StructType`` of the struct column :func:`decode` produces for ``reader_schema``.

    Parameters
    ----------
    reader_schema : str, dict, list or Schema
        An Avro schema. A record gives one field per record field; any other schema one field
        named ``value``.

    Returns
    -------
    pyspark.sql.types.StructType
    """
    target, _, _ = _reader_struct(parse(reader_schema))
    return _spark_type(target)


# -- registries on the executors ---------------------------------------------------------------------


@dataclass(frozen=True)
class RegistrySpec:
    """A picklable recipe for a registry client, rebuilt in each executor process.

    Use the constructors :meth:`local`, :meth:`confluent` and :meth:`none`, or
    :func:`registry_spec` to derive one from a client.

    Attributes
    ----------
    kind : {"local", "confluent", "none"}
        ``"none"``: no registry on the executors (only the schemas shipped from the driver).
    location : str
        The SQLite path or the registry URL.
    options : tuple of (name, value)
        Keyword arguments of the client's constructor.
    """

    kind: str
    location: str = ""
    options: tuple = field(default=())

    @classmethod
    def local(cls, path: str | os.PathLike) -> RegistrySpec:
        """A :class:`~pulsar_codec.registry.LocalRegistry` on a file every executor can open."""
        path = os.fspath(path)
        if path in ("", ":memory:"):
            return cls("none", ":memory:")
        return cls("local", os.path.abspath(path))

    @classmethod
    def confluent(cls, url: str, **options: Any) -> RegistrySpec:
        """A :class:`~pulsar_codec.registry.ConfluentRegistry`; ``options`` as its constructor's
        (``auth=(user, password)``, ``token=...``, ``timeout``, ``retries``, ``verify``, ...)."""
        return cls("confluent", url, tuple(sorted((k, _freeze(v)) for k, v in options.items())))

    @classmethod
    def none(cls) -> RegistrySpec:
        """No registry on the executors: ids not resolved on the driver fail there."""
        return cls("none")

    def build(self) -> Any:
        """Open the client this spec describes (None for ``kind="none"``)."""
        if self.kind == "local":
            from ...registry import LocalRegistry

            return LocalRegistry(self.location)
        if self.kind == "confluent":
            from ...registry import ConfluentRegistry

            return ConfluentRegistry(self.location, **dict(self.options))
        if self.kind == "none":
            return None
        raise ValueError(f"unknown registry spec kind {self.kind!r}")

    def __repr__(self) -> str:  # credentials stay out of logs
        names = ", ".join(k for k, _ in self.options)
        return f"RegistrySpec({self.kind!r}, {self.location!r}{', options: ' + names if names else ''})"


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, dict):
        return tuple(sorted(value.items()))
    return value


def _confluent_options(client: Any) -> dict:
    """Rebuild a ConfluentRegistry's constructor options from the client (credentials included)."""
    options: dict[str, Any] = {"retries": client.retries, "backoff": client.backoff, "max_backoff": client.max_backoff}
    http = client._client
    timeout = http.timeout
    options["timeout"] = (timeout.connect, timeout.read)
    auth = http.auth
    kind = getattr(client, "_auth_kind", None)
    if kind == "basic":
        header = getattr(auth, "_auth_header", "")
        user, _, password = base64.b64decode(header.split(" ", 1)[1]).decode("latin-1").partition(":")
        options["auth"] = (user, password)
    elif kind == "bearer":
        closure = type(auth).auth_flow.__closure__ or ()
        tokens = [c.cell_contents for c in closure if isinstance(c.cell_contents, str)]
        if len(tokens) != 1:
            raise ValueError("cannot recover the bearer token: pass registry=RegistrySpec.confluent(url, token=...)")
        options["token"] = tokens[0]
    return options


def registry_spec(registry: Any) -> RegistrySpec:
    """The :class:`RegistrySpec` that rebuilds ``registry`` in another process.

    A :class:`~pulsar_codec.registry.LocalRegistry` gives its file path (``":memory:"`` gives a
    ``"none"`` spec: only ids resolved on the driver can be decoded); a
    :class:`~pulsar_codec.registry.ConfluentRegistry` its URL, credentials, timeouts and retries
    (TLS ``verify``/``cert`` settings other than the default are not recovered: pass a
    ``RegistrySpec.confluent(url, verify=..., cert=...)`` then); a Mapping ships whole with the job
    (``"none"``). A RegistrySpec is returned as it is.
    """
    if isinstance(registry, RegistrySpec):
        return registry
    if isinstance(registry, Mapping):
        return RegistrySpec.none()
    from ...registry import ConfluentRegistry, LocalRegistry

    if isinstance(registry, LocalRegistry):
        return RegistrySpec.local(registry.path)
    if isinstance(registry, ConfluentRegistry):
        return RegistrySpec.confluent(registry.url, **_confluent_options(registry))
    to_spec = getattr(registry, "to_spec", None)
    if callable(to_spec):
        return to_spec()
    raise TypeError(
        f"cannot ship {type(registry).__name__} to the executors: pass a RegistrySpec, a LocalRegistry, "
        "a ConfluentRegistry or a Mapping of schema id -> schema"
    )


def _schema_text(found: Any) -> str:
    for attr in ("schema_str", "schema"):
        if not isinstance(found, (str, bytes, dict, list, Schema)) and hasattr(found, attr):
            found = getattr(found, attr)
    return json.dumps(to_json(parse(found)), separators=(",", ":"))


def _lookup(registry: Any, schema_id: int) -> str:
    if isinstance(registry, Mapping):
        found = registry.get(schema_id)
        if found is None:
            raise SchemaNotFoundError(f"schema id {schema_id} is not in the registry")
    else:
        found = registry.get_schema(schema_id)
        if found is None:
            raise SchemaNotFoundError(f"schema id {schema_id} is not in the registry")
    return _schema_text(found)


class _ExecutorRegistry:
    """Per executor process: the schemas shipped from the driver, plus ids fetched here (once)."""

    def __init__(self, spec: RegistrySpec) -> None:
        self.spec = spec
        self.known: dict[int, str] = {}
        self.fetched: Counter = Counter()
        self._client: Any = None
        self._lock = threading.Lock()

    def add(self, shipped: Mapping[int, str]) -> None:
        with self._lock:
            for k, v in shipped.items():
                self.known.setdefault(int(k), v)

    def get_schema(self, schema_id: int) -> str:
        schema_id = int(schema_id)
        with self._lock:
            text = self.known.get(schema_id)
            if text is not None:
                return text
            if self.spec.kind == "none":
                raise SchemaNotFoundError(
                    f"schema id {schema_id} was not resolved on the driver and the executors have no registry "
                    "to ask (a Mapping or LocalRegistry(':memory:') registry): resolve it on the driver "
                    "(prefetch=True or subjects=[...]) or use a registry the executors can reach"
                )
            if self._client is None:
                self._client = self.spec.build()
            text = _lookup(self._client, schema_id)
            self.fetched[schema_id] += 1
            self.known[schema_id] = text
            return text


_EXECUTOR_REGISTRIES: dict[Any, _ExecutorRegistry] = {}
_EXECUTOR_LOCK = threading.Lock()
_BACKEND_FALLBACKS: list[str] = []
_BATCHES: Counter = Counter()  # batches run per backend name, in this process


def _executor_registry(spec: RegistrySpec, shipped: tuple) -> _ExecutorRegistry:
    # A real registry never reuses an id, so one cache per spec serves every job. Without one
    # (a Mapping), two jobs may give the same id different schemas: key by the shipped content.
    key = spec if spec.kind != "none" else (spec, shipped)
    with _EXECUTOR_LOCK:
        reg = _EXECUTOR_REGISTRIES.get(key)
        if reg is None:
            reg = _EXECUTOR_REGISTRIES[key] = _ExecutorRegistry(spec)
    reg.add(dict(shipped))
    return reg


def _use_backend(name: str):
    try:
        return _backend.use(name)
    except ImportError as exc:
        _BACKEND_FALLBACKS.append(f"{name}: {exc}")
        return _backend.use("python")


def _stats_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for _ in batches:
        pass
    registries = [
        {
            "spec": repr(reg.spec),
            "known": sorted(reg.known),
            "fetched": {str(k): v for k, v in sorted(reg.fetched.items())},
        }
        for reg in _EXECUTOR_REGISTRIES.values()
    ]
    report = {
        "pid": os.getpid(),
        "backend": _backend.default().name,
        "batches": dict(_BATCHES),
        "fallbacks": list(_BACKEND_FALLBACKS),
        "registries": registries,
    }
    yield pa.RecordBatch.from_arrays([pa.array([os.getpid()], pa.int64()), pa.array([json.dumps(report)])], ["pid", "report"])


def executor_stats(spark: Any, tasks: int | None = None) -> list[dict]:
    """What the executor Python processes' schema caches hold, one dict per process reached.

    Runs a small job of ``tasks`` tasks (default: twice the default parallelism); each reports its
    process id, default backend, decode batches run per backend (``batches``), backend
    fallbacks, and for every registry spec the ids it knows
    and how often each id was fetched from the registry (``fetched``: id -> count, which stays 1
    per process). Processes that run none of the tasks are not reported.
    """
    tasks = tasks or 2 * spark.sparkContext.defaultParallelism
    df = spark.range(0, tasks, 1, tasks)
    rows = df.mapInArrow(_stats_batches, "pid long, report string").collect()
    by_pid = {row["pid"]: json.loads(row["report"]) for row in rows}
    return [by_pid[p] for p in sorted(by_pid)]


# -- decode -----------------------------------------------------------------------------------------------


def _check_protocol(protocol: Any) -> wire.Protocol:
    protocol = wire.protocol_by_name(protocol)
    if getattr(protocol, "guid", False) or getattr(protocol, "protobuf", False):
        raise ValueError(f"{protocol.name} is not an Avro protocol with integer schema ids; spark.decode reads Avro")
    return protocol


_LOCATION = re.compile(r"\(message \d+, byte (\d+)\)")


def _local_text(text: str) -> str:
    """An error text without the row number inside the Arrow batch (meaningless in a DataFrame);
    the byte offset stays."""
    return _LOCATION.sub(r"(byte \1)", text)


def _walk_bad_rows(n: int, attempt: Callable[[int, int], int | None], window: int = 64) -> None:
    """Run ``attempt(lo, hi)`` over rows ``[0, n)`` in order; it handles the rows it can and returns
    None when all of ``[lo, hi)`` were good, else the offset (from ``lo``) of the first bad row.

    The first call covers the whole batch (the common case: one pass). After a bad row the walk
    resumes on a window of rows that doubles while the rows are clean, so a batch with many bad
    rows costs O(n) row reads in all, not O(n^2).
    """
    lo, size = 0, n
    while lo < n:
        hi = min(n, lo + size)
        bad = attempt(lo, hi)
        if bad is None:
            lo, size = hi, size * 2
        else:
            lo, size = lo + bad + 1, window


def _frame_ids(batch_column: pa.Array, protocol: wire.Protocol) -> set[int]:
    """Distinct schema ids of one batch of framed messages; messages with a bad prefix are skipped
    (the decode job reports them). Reads only the prefixes."""
    found: set[int] = set()

    def attempt(lo: int, hi: int) -> int | None:
        piece = batch_column.slice(lo, hi - lo)
        try:
            found.update(_int_ids(wire.unframe(piece, protocol).schema_ids))
            return None
        except DecodeError as exc:
            if exc.index:
                found.update(_int_ids(wire.unframe(piece.slice(0, exc.index), protocol).schema_ids))
            return exc.index

    _walk_bad_rows(len(batch_column), attempt)
    return found


def _int_ids(ids: pa.Array) -> list[int]:
    if pa.types.is_struct(ids.type):  # Hortonworks protocol 1 mixed in: the version ids
        ids = ids.field("version_id")
    return pc.unique(ids.drop_null()).to_pylist()


def _id_column(arr: pa.Array) -> pa.Array:
    """An int64 schema-id array from an integer column, or from a binary one (PIP-420
    ``schema_id`` bytes: an optional ``FF`` magic byte, then a big-endian id of 1 to 8 bytes)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_integer(arr.type):
        return arr.cast(pa.int64())
    if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type) or pa.types.is_fixed_size_binary(arr.type):
        from ..._arrow import binary_chunks

        chunks, total = binary_chunks(arr.cast(pa.binary()) if pa.types.is_fixed_size_binary(arr.type) else arr)
        out = np.zeros(total, dtype=np.int64)
        valid = np.ones(total, dtype=bool)
        for chunk in chunks:
            data = np.frombuffer(chunk.data, dtype=np.uint8) if chunk.data is not None else np.zeros(0, np.uint8)
            starts = chunk.offsets[:-1].copy()
            ends = chunk.offsets[1:]
            rows = slice(chunk.row, chunk.row + chunk.length)
            v = np.ones(chunk.length, dtype=bool) if chunk.validity is None else chunk.validity.copy()
            has_magic = (ends > starts) & (data[np.minimum(starts, max(len(data) - 1, 0))] == 0xFF) if len(data) else np.zeros(chunk.length, bool)
            starts = starts + has_magic
            lengths = ends - starts
            v &= (lengths >= 1) & (lengths <= 8)
            ids = np.zeros(chunk.length, dtype=np.uint64)
            for k in range(8):  # at most 8 vectorised passes, one per id byte
                take = v & (lengths > k)
                if not take.any():
                    break
                ids[take] = (ids[take] << np.uint64(8)) | data[starts[take] + k].astype(np.uint64)
            out[rows] = ids.view(np.int64)
            valid[rows] = v
        return pa.array(out, pa.int64(), mask=~valid)
    raise TypeError(f"schema_id_column must hold integers or binary ids, not {arr.type}")


@dataclass(frozen=True)
class _DecodeJob:
    column: str
    protocol: str
    reader: str
    shipped: tuple
    spec: RegistrySpec
    id_column: str | None
    output: str
    error_column: str
    backend: str

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from ...pipeline import decode as pipeline_decode

        registry = _executor_registry(self.spec, self.shipped)
        reader = parse(self.reader)
        target, _, converters = _reader_struct(reader)
        fields = list(target)
        protocol = wire.protocol_by_name(self.protocol)
        with _use_backend(self.backend):
            for batch in batches:
                _BATCHES[_backend.active().name] += 1
                yield self._decode_batch(batch, registry, reader, fields, converters, protocol, pipeline_decode)

    def _decode_batch(self, batch, registry, reader, fields, converters, protocol, pipeline_decode) -> pa.RecordBatch:
        n = batch.num_rows
        messages = batch.column(self.column)
        extra_errors: list[tuple[int, Any, int, str]] = []
        if self.id_column is not None:
            ids = _id_column(batch.column(self.id_column))
            body_valid = np.asarray(messages.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            id_valid = np.asarray(ids.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            orphan = body_valid & ~id_valid
            for i in np.flatnonzero(orphan):
                extra_errors.append((int(i), None, 0, f"no schema id for the payload of message {int(i)}"))
            if orphan.any():
                messages = pc.if_else(pa.array(id_valid), messages, pa.scalar(None, messages.type))
            messages = wire.frame(messages, ids.fill_null(0), wire.CONFLUENT)
            protocol = wire.CONFLUENT
        decoded, errors = pipeline_decode(messages, registry, protocol=protocol, reader_schema=reader, on_error="null")
        bad = ~np.asarray(messages.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        codes = np.zeros(n, dtype=np.int32)
        offsets = np.zeros(n, dtype=np.int64)
        texts: list[str | None] = [None] * n
        has_error = np.zeros(n, dtype=bool)
        code_null = np.zeros(n, dtype=bool)
        if errors.num_rows:
            idx = errors.column("index").to_numpy()
            codes[idx] = errors.column("code").to_numpy()
            offsets[idx] = errors.column("offset").to_numpy()
            for i, text in zip(idx.tolist(), errors.column("message").to_pylist()):
                texts[i] = _local_text(text)
            has_error[idx] = True
        for i, _, off, text in extra_errors:
            has_error[i] = True
            code_null[i] = True
            offsets[i] = off
            texts[i] = text
        bad |= has_error
        children = [
            decoded.column(k) if fn is None else fn(decoded.column(k)) for k, fn in enumerate(converters)
        ]
        struct = pa.StructArray.from_arrays(children, fields=fields, mask=pa.array(bad) if bad.any() else None)
        if has_error.any():
            error_col = pa.StructArray.from_arrays(
                [
                    pa.array(codes, pa.int32(), mask=code_null | ~has_error),
                    pa.array(offsets, pa.int64()),
                    pa.array(texts, pa.string()),
                ],
                fields=list(ERROR_TYPE),
                mask=pa.array(~has_error),
            )
        else:
            error_col = pa.nulls(n, ERROR_TYPE)
        keep = [name for name in batch.schema.names if name not in (self.output, self.error_column)]
        return pa.RecordBatch.from_arrays(
            [batch.column(name) for name in keep] + [struct, error_col], names=keep + [self.output, self.error_column]
        )


def _distinct_prefix_ids(df: Any, column: str, protocol: wire.Protocol) -> set[int]:
    """The distinct schema ids of a column of framed messages, found inside the JVM: the prefixes
    are cut with ``substring`` and deduplicated by Spark, so no message travels to Python; the
    driver then parses the few distinct prefixes (malformed ones are skipped: the decode job
    reports those rows)."""
    from pyspark.sql import functions as F

    col = F.col(column)
    first = F.substring(col, 1, 1)
    if isinstance(protocol, wire.HortonworksProtocol):
        # protocol byte 1: i64 metadata id + i32 version; 2: i64 version id; 0, 3, 4: i32 id
        prefix = (
            F.when(first == F.lit(bytearray(b"\x01")), F.substring(col, 1, 13))
            .when(first == F.lit(bytearray(b"\x02")), F.substring(col, 1, 9))
            .otherwise(F.substring(col, 1, 5))
        )
        magic = first.isin(*[F.lit(bytearray([b])) for b in range(5)])
    else:
        size = 9 if isinstance(protocol, wire.ApicurioProtocol) and protocol.id_bytes == 8 else 5
        prefix = F.substring(col, 1, size)
        magic = first == F.lit(bytearray(b"\x00"))
    rows = df.where(col.isNotNull() & magic).select(prefix.alias("prefix")).distinct().collect()
    prefixes = pa.array([bytes(r["prefix"]) for r in rows], pa.binary())
    return _frame_ids(prefixes, protocol)


def _resolve_on_driver(df, column, protocol, registry, id_column, subjects, prefetch) -> dict[int, str]:
    shipped: dict[int, str] = {}
    if prefetch and not df.isStreaming:  # a streaming source cannot be scanned ahead of the query
        if id_column is not None:
            ids_df = df.select(column, id_column).where(f"`{column}` IS NOT NULL")
            id_type = ids_df.schema[id_column].dataType.typeName()
            if id_type in ("integer", "long", "short", "byte"):
                ids = {int(r[0]) for r in ids_df.select(id_column).distinct().collect() if r[0] is not None}
            else:
                ids = {
                    int(v)
                    for r in ids_df.select(id_column).distinct().collect()
                    if r[0] is not None
                    for v in _id_column(pa.array([bytes(r[0])], pa.binary())).drop_null().to_pylist()
                }
        else:
            ids = _distinct_prefix_ids(df, column, protocol)
        for schema_id in sorted(ids):
            shipped[schema_id] = _lookup(registry, schema_id)
    for subject in subjects or ():
        for version in registry.list_versions(subject):
            found = registry.get_version(subject, version)
            shipped[int(found.schema_id)] = _schema_text(found)
    return shipped


def decode(
    df: Any,
    column: str = "value",
    *,
    registry: Any,
    protocol: Any = wire.CONFLUENT,
    reader_schema: Any = None,
    schema_id_column: str | None = None,
    output: str = "decoded",
    error_column: str = "decode_error",
    subjects: list[str] | None = None,
    prefetch: bool = True,
) -> Any:
    """Decode a column of framed Avro messages (or of PIP-420 bodies) into a struct column.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    column : str
        Binary column of framed messages (``protocol``) or, with ``schema_id_column``, of bare
        Avro bodies.
    registry : Registry client, Mapping of id -> schema, or RegistrySpec
        Used on the driver to resolve ids; executors rebuild it from :func:`registry_spec`.
    protocol : wire.Protocol or str
        The prefix format (integer-id protocols: CONFLUENT, HORTONWORKS, APICURIO, APICURIO_V3).
    reader_schema : Avro schema, optional
        The schema every row is read as; it fixes the output struct. Default: the writer schema
        with the highest id among those resolved on the driver.
    schema_id_column : str, optional
        A column with each row's schema id (integers, or PIP-420 ``schema_id`` bytes: optional
        ``FF`` magic byte, then a big-endian id); ``column`` then holds bare Avro bodies.
    output, error_column : str
        Names of the struct column and of the error column (existing columns with those names are
        replaced).
    subjects : list of str, optional
        Also ship every version of these subjects to the executors.
    prefetch : bool
        Run the distinct-id pre-pass (default; skipped for streaming DataFrames). With False
        only ``subjects`` are resolved on the driver and executors fetch other ids themselves
        (once per process); give ``reader_schema`` or ``subjects`` then.

    Returns
    -------
    pyspark.sql.DataFrame
        The input columns, then ``output`` and ``error_column``.

    Raises
    ------
    SchemaError
        No reader schema can be chosen (nothing resolved on the driver and none given).
    SchemaNotFoundError
        An id met by the pre-pass is not in the registry.
    """
    from pyspark.sql.types import StructField, StructType

    protocol = _check_protocol(protocol)
    spec = registry_spec(registry)
    client = (spec.build() or {}) if isinstance(registry, RegistrySpec) else registry
    job_args = {
        "column": column,
        "protocol": protocol.name,
        "reader": "",
        "shipped": (),
        "spec": spec,
        "id_column": schema_id_column,
        "output": output,
        "error_column": error_column,
        "backend": _backend.active().name,
    }
    shipped = _resolve_on_driver(df, column, protocol, client, schema_id_column, subjects, prefetch)
    if isinstance(registry, Mapping):  # nothing to rebuild on the executors: ship the mapping whole
        for k in registry:
            shipped.setdefault(int(k), _lookup(registry, k))
    if reader_schema is not None:
        reader = parse(reader_schema)
    elif shipped:
        reader = parse(shipped[max(shipped)])
    else:
        raise SchemaError("no reader schema: no schema id was resolved on the driver; pass reader_schema or subjects")
    reader_text = json.dumps(to_json(reader), separators=(",", ":"))
    target, _, _ = _reader_struct(reader)
    keep = [f for f in df.schema.fields if f.name not in (output, error_column)]
    out_schema = StructType(
        keep
        + [StructField(output, _spark_type(target), True), StructField(error_column, _spark_type(ERROR_TYPE), True)]
    )
    job = _DecodeJob(**{**job_args, "reader": reader_text, "shipped": tuple(sorted(shipped.items()))})
    return df.mapInArrow(job, out_schema)


# -- KeyValue ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _SplitJob:
    column: str
    key_column: str
    value_column: str
    convention: str
    error_column: str
    backend: str

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from ... import keyvalue

        with _use_backend(self.backend):
            for batch in batches:
                payloads = batch.column(self.column)
                n = len(payloads)
                keys, values, errors = [], [], []

                def attempt(lo: int, hi: int) -> int | None:
                    piece = payloads.slice(lo, hi - lo)
                    try:
                        k, v = keyvalue.split_inline(piece, convention=self.convention)
                    except KeyValueFormatError as exc:
                        i = exc.index
                        if i:
                            k, v = keyvalue.split_inline(piece.slice(0, i), convention=self.convention)
                            keys.append(k)
                            values.append(v)
                        keys.append(pa.nulls(1, pa.binary()))
                        values.append(pa.nulls(1, pa.binary()))
                        errors.append((lo + i, int(exc.code), int(exc.offset), _local_text(str(exc))))
                        return i
                    keys.append(k)
                    values.append(v)
                    return None

                _walk_bad_rows(n, attempt)
                key_arr = _concat(keys, n)
                value_arr = _concat(values, n)
                error_col = _error_array(n, errors)
                drop = (self.key_column, self.value_column, self.error_column)
                keep = [name for name in batch.schema.names if name not in drop]
                yield pa.RecordBatch.from_arrays(
                    [batch.column(name) for name in keep] + [key_arr, value_arr, error_col],
                    names=keep + [self.key_column, self.value_column, self.error_column],
                )


def _concat(parts: list[pa.Array], n: int) -> pa.Array:
    parts = [p.cast(pa.binary()) if p.type != pa.binary() else p for p in parts]
    if not parts:
        return pa.nulls(n, pa.binary()) if n else pa.array([], pa.binary())
    return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)


def _error_array(n: int, errors: list[tuple[int, int, int, str]]) -> pa.Array:
    if not errors:
        return pa.nulls(n, ERROR_TYPE)
    codes = np.zeros(n, dtype=np.int32)
    offsets = np.zeros(n, dtype=np.int64)
    texts: list[str | None] = [None] * n
    has = np.zeros(n, dtype=bool)
    for i, code, off, text in errors:
        codes[i], offsets[i], texts[i], has[i] = code, off, text, True
    return pa.StructArray.from_arrays(
        [pa.array(codes, pa.int32()), pa.array(offsets, pa.int64()), pa.array(texts, pa.string())],
        fields=list(ERROR_TYPE),
        mask=pa.array(~has),
    )


def split_keyvalue(
    df: Any,
    column: str = "value",
    *,
    key_column: str = "key",
    value_column: str = "value",
    convention: str = "java",
    error_column: str = "keyvalue_error",
) -> Any:
    """Split Pulsar INLINE KeyValue payloads into a key and a value binary column.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    column : str
        Binary column of INLINE payloads (``len(key) || key || len(value) || value``).
    key_column, value_column : str
        Output column names; existing columns with these names (or ``error_column``) are replaced,
        so the defaults replace the payload column ``value`` with the value part.
    convention : {"java", "cpp"}
        How a length of -1 reads (see :mod:`pulsar_codec.keyvalue`).
    error_column : str
        ``struct<code, offset, message>`` for malformed payloads (whose key and value are null);
        null for good rows.

    Returns
    -------
    pyspark.sql.DataFrame
    """
    from pyspark.sql.types import BinaryType, StructField, StructType

    drop = (key_column, value_column, error_column)
    keep = [f for f in df.schema.fields if f.name not in drop]
    schema = StructType(
        keep
        + [
            StructField(key_column, BinaryType(), True),
            StructField(value_column, BinaryType(), True),
            StructField(error_column, _spark_type(ERROR_TYPE), True),
        ]
    )
    job = _SplitJob(column, key_column, value_column, convention, error_column, _backend.active().name)
    return df.mapInArrow(job, schema)


def decode_keyvalue(
    df: Any,
    column: str = "value",
    *,
    registry: Any,
    key_protocol: Any = wire.CONFLUENT,
    value_protocol: Any = wire.CONFLUENT,
    key_reader_schema: Any = None,
    value_reader_schema: Any = None,
    key_output: str = "key",
    value_output: str = "value",
    convention: str = "java",
    prefetch: bool = True,
) -> Any:
    """Split INLINE KeyValue payloads, then decode the key and the value as framed Avro.

    Adds ``key_output`` and ``value_output`` structs, ``keyvalue_error`` (malformed KeyValue
    payload), ``{key_output}_error`` and ``{value_output}_error`` (see :func:`decode`); the raw
    parts are kept as ``{key_output}_bytes`` and ``{value_output}_bytes``.
    """
    key_raw, value_raw = f"{key_output}_bytes", f"{value_output}_bytes"
    split = split_keyvalue(df, column, key_column=key_raw, value_column=value_raw, convention=convention)
    out = decode(
        split,
        key_raw,
        registry=registry,
        protocol=key_protocol,
        reader_schema=key_reader_schema,
        output=key_output,
        error_column=f"{key_output}_error",
        prefetch=prefetch,
    )
    return decode(
        out,
        value_raw,
        registry=registry,
        protocol=value_protocol,
        reader_schema=value_reader_schema,
        output=value_output,
        error_column=f"{value_output}_error",
        prefetch=prefetch,
    )


# -- encode ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _EncodeJob:
    column: str
    schema: str
    schema_id: int
    protocol: str
    output: str
    backend: str

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from ...formats.avro.encoder import Encoder

        encoder = Encoder(self.schema)
        protocol = wire.protocol_by_name(self.protocol)
        with _use_backend(self.backend):
            for batch in batches:
                col = batch.column(self.column)
                valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
                rows = col if valid.all() else col.filter(pa.array(valid))
                if pa.types.is_struct(rows.type):
                    body_batch = pa.RecordBatch.from_struct_array(rows)
                else:
                    body_batch = pa.RecordBatch.from_arrays([rows], ["value"])
                framed = wire.frame(encoder.encode(body_batch), self.schema_id, protocol).cast(pa.binary())
                if not valid.all():
                    positions = np.cumsum(valid) - 1
                    framed = framed.take(pa.array(positions, pa.int64(), mask=~valid))
                keep = [name for name in batch.schema.names if name != self.output]
                yield pa.RecordBatch.from_arrays(
                    [batch.column(name) for name in keep] + [framed], names=keep + [self.output]
                )


def _avro_name(subject: str) -> str:
    base = subject.removesuffix("-value")
    base = base.removesuffix("-key")
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "Record"
    return "_" + name if name[0].isdigit() else name


def encode(
    df: Any,
    column: str,
    *,
    registry: Any,
    subject: str,
    protocol: Any = wire.CONFLUENT,
    schema: Any = None,
    output: str = "value",
) -> Any:
    """Encode a struct column (or any column) into framed Avro messages.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    column : str
        The column to encode: a struct becomes a record (one field per struct field); any other
        column a message of that type.
    registry : Registry client or MutableMapping
        The schema is registered on the driver under ``subject`` (``register(subject, schema)``);
        for a mapping, an equal schema's id is reused or the next free id is assigned. Executors
        never call the registry: the id travels with the job.
    subject : str
    protocol : wire.Protocol or str
    schema : Avro schema, optional
        The writer schema. Default: derived from the column's Spark type (nullable fields become
        ``["null", T]``, timestamps ``timestamp-micros``, timestamp_ntz ``local-timestamp-micros``,
        decimals ``bytes``/``decimal``), the record named after the subject.
    output : str
        Name of the binary output column (an existing column of that name is replaced).

    Returns
    -------
    pyspark.sql.DataFrame
        The input columns plus ``output``; a null struct gives a null message.

    Raises
    ------
    EncodeError
        (in the job) a value that does not fit the schema.
    """
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import BinaryType, StructField, StructType

    from ...formats.avro.encoder import schema_from_arrow

    protocol = _check_protocol(protocol)
    spark_type = df.schema[column].dataType
    if schema is None:
        arrow = to_arrow_type(spark_type, timezone="UTC")
        if pa.types.is_struct(arrow):
            avro = schema_from_arrow(pa.schema(list(arrow)), name=_avro_name(subject))
        else:
            avro = schema_from_arrow(pa.schema([pa.field("value", arrow)]), name=_avro_name(subject)).fields[0].type
    else:
        avro = parse(schema)
    text = json.dumps(to_json(avro), separators=(",", ":"))
    if hasattr(registry, "register"):
        schema_id = registry.register(subject, text)
        schema_id = int(getattr(schema_id, "schema_id", schema_id))
    elif isinstance(registry, Mapping):
        schema_id = None
        for k, v in registry.items():
            if _schema_text(v) == text:
                schema_id = int(k)
                break
        if schema_id is None:
            ints = [k for k in registry if isinstance(k, int)]
            schema_id = max(ints) + 1 if ints else 1
            registry[schema_id] = text
    else:
        raise TypeError("registry must have a register(subject, schema) method or be a mutable mapping")
    keep = [f for f in df.schema.fields if f.name != output]
    out_schema = StructType(keep + [StructField(output, BinaryType(), True)])
    job = _EncodeJob(column, text, schema_id, protocol.name, output, _backend.active().name)
    return df.mapInArrow(job, out_schema)


# -- session -----------------------------------------------------------------------------------------------


def session(master: str = "local[2]", app_name: str = "pulsar-codec", **conf: Any) -> Any:
    """A SparkSession with safe defaults for local work.

    Binds the driver to 127.0.0.1, turns the UI off, uses 4 shuffle partitions and, for local
    masters, runs the Python workers with this interpreter (``PYSPARK_PYTHON=sys.executable``,
    ``SPARK_LOCAL_IP=127.0.0.1``, unless already set). ``conf`` adds or overrides Spark settings;
    pass dotted names through a dict: ``session(**{"spark.sql.shuffle.partitions": "8"})``.
    """
    from pyspark.sql import SparkSession

    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
    }
    settings.update({k: str(v) for k, v in conf.items()})
    builder = SparkSession.builder.master(master).appName(app_name)
    for k, v in settings.items():
        builder = builder.config(k, v)
    return builder.getOrCreate()
