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
>>> good = out.where(out.decode_error.isNull()).select("decoded.*")
>>> bad = out.where(out.decode_error.isNotNull())                   # dead-letter rows
>>> bad.select("decode_error.*").write.mode("append").parquet("dead-letter/")  # with the bytes

Functions
---------
``decode(df, column="value", *, registry, protocol=None, reader_schema=None,
schema_id_column=None, output="decoded", error_column="decode_error", subjects=None,
prefetch=None, keep_columns=None, ...)``
    The input columns but ``column`` (unless ``keep_columns`` names it), plus ``output`` (a
    struct: one field per reader-schema field) and ``error_column``
    (``struct<code:int, offset:bigint, message:string, payload:binary>``: a bad row's error and
    bytes, null for good rows). ``column`` holds framed
    messages (any integer-id protocol of :mod:`pulsar_codec.wire`), or, with ``schema_id_column``,
    bare Avro bodies (PIP-420 ``EncodeData.data``) whose schema id is in that column.
``split_keyvalue(df, column="value", *, key_column="key", value_column="value",
convention="java", error_column="keyvalue_error")``
    Pulsar INLINE KeyValue payloads into a key and a value binary column.
``decode_keyvalue(df, column="value", *, registry, ...)``
    ``split_keyvalue`` followed by ``decode`` of the key and of the value.
``encode(df, column, *, registry, subject, protocol=wire.CONFLUENT, schema=None, output="value",
format=None, message=None, use_latest=False)``
    A struct column into framed Avro (JSON, Protobuf) messages; the schema is registered on the
    driver, or with ``use_latest=True`` the subject's latest version is written (what writes a
    topic read with ``decode`` back under its own subject).
``spark_schema(reader_schema, *, nullable=False)``
    The Spark ``StructType`` that ``decode`` produces for a reader schema (``nullable=True``:
    every field nullable, as a ``pandas_udf`` returning the struct must declare it).
``register(spark)``
    Registers ``format("pulsar")``: read topics (``spark.read`` / ``spark.readStream``, decoded on
    the executors) and write them (``df.write`` / ``df.writeStream``); see :mod:`.pulsar_source`
    and :mod:`.pulsar_sink`.
``session(master="local[2]", app_name="pulsar-codec", **conf)``
    A SparkSession with safe local defaults.
``executor_stats(spark)``
    What the executor processes' decoders hold and fetched (for monitoring and tests).

Bad rows and the dead-letter recipe
-----------------------------------
A message whose prefix or Avro body is malformed never fails the job: its ``output`` struct is
null, its ``error_column`` holds ``code`` (:class:`pulsar_codec.errors.ErrorCode`), ``offset``
(byte offset inside the message for prefix errors, inside the Avro body after the prefix for body
errors) and ``message`` (the text the exception would carry), and the input column is passed
through untouched. ``df.where(col("decode_error").isNotNull())`` selects the rows to route to a
dead-letter table; ``df.where(col("decode_error").isNull())`` the good ones. A null message gives
a null struct and a null error. A schema id that the registry does not know makes an error row
too (code ``SCHEMA_NOT_FOUND``, the id in the message), as ``on_error="null"`` does in
:class:`~pulsar_codec.pipeline.MessageDecoder`; only a registry that cannot be reached fails the
job. With ``schema_id_column``, a non-null body whose id is null is a bad row with a null ``code``.

Schemas on the executors
------------------------
Writer schemas are resolved on the driver and shipped with the job: by default (``prefetch=True``)
a cheap pre-pass cuts the prefixes off the message column inside the JVM (``substring``), lets
Spark deduplicate them and parses the few distinct prefixes on the driver; ``subjects=[...]`` adds every version of those subjects. Executors then never call the
registry for those ids. An id first met on an executor (``prefetch=False``, or data that changed
since the pre-pass) is fetched once per executor Python process and cached there: the job carries
one :class:`~pulsar_codec.pipeline.MessageDecoder` whose registry is the shipped schemas in front
of the client's :class:`~pulsar_codec.registry.RegistryConfig` (a LocalRegistry's file path; a
ConfluentRegistry's URL, credentials and options; a plain dict ships whole), and each executor
process keeps one decoder per configuration, so its schema and plan caches serve every task. A
``LocalRegistry(":memory:")``, or a client without a ``RegistryConfig`` (confluent-kafka's),
cannot be rebuilt elsewhere: with it, only ids resolved on the driver work. The config travels
inside the job, so registry credentials are visible to whoever can read the job's closures; prefer
a token scoped to reading schemas.

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
``"python"``, see :mod:`pulsar_codec._kernels._backend`), and the executors run the same twin. If
the compiled kernels cannot be imported on an executor, the pure twin runs there, the
``pulsar_codec`` logger warns with the reason (in the executor's log) and :func:`executor_stats`
lists it under ``fallbacks``; with ``PULSAR_CODEC_REQUIRE_EXTENSIONS=1`` in the executors'
environment it is an error instead. ``PULSAR_CODEC_NO_EXTENSIONS=1`` in the driver's environment
also applies on the executors.

Modules
-------
:mod:`.types` (Arrow -> Spark types and converters), :mod:`.decode` (the decode job),
:mod:`.headers` (schema ids in record headers),
:mod:`.driver` (the driver's distinct-id pre-pass and schema resolution before the decode job),
:mod:`.keyvalue` (KeyValue split and decode), :mod:`.encode` (the encode job), :mod:`.executor`
(what an executor process keeps: decoders, backend, stats), :mod:`.session`, and the
``format("pulsar")`` data source: :mod:`.pulsar_source` (reading), :mod:`.pulsar_sink` (writing),
:mod:`.pulsar_offsets` (message-id offsets, broker calls), :mod:`.pulsar_options`. ``register(spark)``
registers it; ``PulsarDataSource`` is importable from here (it needs pyspark).

Deprecated
----------
``RegistrySpec`` and ``registry_spec(registry)`` are :class:`~pulsar_codec.registry.RegistryConfig`
and ``RegistryConfig.of(registry)`` now (pass either, or the client itself, as ``registry``); the
old names still import, with a ``DeprecationWarning``.

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

import warnings
from typing import Any

from .decode import decode
from .encode import encode
from .executor import executor_stats
from .keyvalue import decode_keyvalue, split_keyvalue
from .session import session
from .types import ERROR_TYPE, spark_arrow_type, spark_schema, to_spark_arrow

__all__ = [
    "ERROR_TYPE",
    "decode",
    "decode_keyvalue",
    "encode",
    "executor_stats",
    "register",
    "session",
    "spark_arrow_type",
    "spark_schema",
    "split_keyvalue",
    "to_spark_arrow",
]


def register(spark: Any) -> None:
    """Register ``format("pulsar")`` (:class:`~.pulsar_source.PulsarDataSource`) with a SparkSession.

    The same as ``spark.dataSource.register(PulsarDataSource)``; needs ``pulsar-client`` (the
    ``pulsar`` extra) on the driver and the executors.
    """
    from .pulsar_source import PulsarDataSource

    spark.dataSource.register(PulsarDataSource)


def _registry_spec(registry: Any) -> Any:
    """Deprecated: ``RegistryConfig.of(registry)``."""
    from ...registry import RegistryConfig

    warnings.warn(
        "registry_spec(registry) is deprecated: use pulsar_codec.registry.RegistryConfig.of(registry)",
        DeprecationWarning,
        stacklevel=2,
    )
    return RegistryConfig.of(registry)


def __getattr__(name: str) -> Any:
    # the names of the RegistrySpec era, kept importable with a warning
    if name == "RegistrySpec":
        from ...registry import RegistryConfig

        warnings.warn(
            "RegistrySpec is deprecated: use pulsar_codec.registry.RegistryConfig", DeprecationWarning, stacklevel=2
        )
        return RegistryConfig
    if name == "registry_spec":
        return _registry_spec
    if name == "PulsarDataSource":  # imported on first use: it needs pyspark at import time
        from .pulsar_source import PulsarDataSource

        return PulsarDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
