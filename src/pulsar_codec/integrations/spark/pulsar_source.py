"""``spark.read.format("pulsar")`` and ``spark.readStream.format("pulsar")``: a Python data source.

The driver resolves the topics' partitions, the offsets and the reader schemas; each
topic-partition of a batch (or micro-batch) is one input partition, read on an executor with
pulsar-client's ``Reader`` between two message ids and decoded there with the process's shared
:class:`~pulsar_codec.pipeline.MessageDecoder` into Arrow batches. Offsets, their order and the
broker calls behind them are in :mod:`.pulsar_offsets`; rows in :mod:`.pulsar_rows`.

Options
-------
``service_url``
    ``pulsar://host:6650`` (required).
``topics``
    Comma list of topics (``orders``, ``tenant/ns/orders`` or full names); this or ``topics_pattern``.
``topics_pattern``
    A regular expression a topic's full name must match entirely, as in Pulsar's pattern
    consumer (``orders-.*`` is taken in ``persistent://public/default/``; the
    ``tenant/namespace`` part is literal). The topics are listed through the admin REST API
    (:mod:`pulsar_codec.pulsar.admin`: partitions count as their topic): once when a batch query
    is planned (a pattern matching nothing is an error there), and before each micro-batch of a
    stream, whose new topics start at ``earliest``.
``admin_url``, ``admin_token``
    With ``topics_pattern``: the broker's web service, ``http(s)://host:8080`` (required), and a
    token sent as ``Authorization: Bearer``.
``starting_offsets``
    ``earliest`` (default), ``latest``, or a JSON object mapping a topic-partition (or a topic,
    for all its partitions) to ``earliest``, ``latest`` or a message id offset; a range starts
    *after* that message. Unnamed partitions start at ``earliest``. The words take any case. In a
    stream, ``latest`` is the broker's last id when the first micro-batch is planned: that batch
    reads nothing from such a partition, and the checkpoint keeps where it ended. A
    topic not read, or a partition the broker does not have (``-partition-7`` of a topic with 4,
    ``-partition-0`` of one that is not partitioned), is refused, as is a message id given to a
    partitioned topic's name (an id belongs to one partition: name the partition).
``ending_offsets``
    Batch only: ``latest`` (default: the broker's last ids when the query is planned) or a JSON
    object as above; a range ends *with* that message. A given id before the partition's given
    starting id is refused.
``registry``, ``registry_auth``, ``registry_token``
    An ``http(s)://`` registry URL or an embedded registry's file; ``user:password`` or a bearer
    token. The executors rebuild the client from this config for ids the driver did not ship.
``decode``
    ``true`` (default): ``value`` is the decoded struct, with ``decode_error``; ``false``: raw bytes.
``reader_schema``, ``reader_subject``, ``subject``, ``format``
    The ``value`` struct: ``reader_schema`` (schema text), else the newest version of
    ``reader_subject``, of ``subject``, or of ``<topic>-value`` (the local name of the one topic,
    or of the one topic ``topics_pattern`` matches when the query is planned) when
    Spark asks for the schema; every version of that subject is shipped to the executors. A
    version registered while a stream runs is read with the schema the stream started with.
``message``
    Protobuf: the full name of the message type ``value`` is read as (``shop.v1.Order``); default
    the reader schema's first message. Messages of another type are error rows
    (``SCHEMA_OTHER_MESSAGE``). Refused for Avro and JSON.
``protocol``
    The wire prefix (any :mod:`pulsar_codec.wire` protocol). Default: Confluent's, with its
    message-index array for Protobuf (``CONFLUENT_PROTOBUF``), as Confluent's serializers write.
``keyvalue``, ``key_encoding``, ``key_reader_schema``, ``key_subject``, ``key_format``, ``key_message``
    KeyValue topics: ``INLINE`` or ``SEPARATED`` (``key_encoding``: ``base64``, the default, as
    Java writes the partition key, or ``raw``); ``key`` becomes the decoded key struct (newest
    version of ``key_subject`` or ``<topic>-key``), or the key bytes with ``decode=false``. A key
    of a Pulsar primitive schema (PIP-420 allows one, with no registry id) is read with
    ``key_format`` naming it (``STRING``, ``INT64``, ``BYTES``, ...): ``key`` is then that value;
    another ``key_format`` than those and ``AVRO``, ``JSON``, ``PROTOBUF`` is refused.
    ``key_message`` is the key's ``message``. ``inline_convention`` (INLINE only): ``java`` (the
    default: a length of -1 is a null key or value, 0 an empty one, as Java producers write) or
    ``cpp`` (the C++ client writes -1 for an empty part too: read as empty, never null).
``max_records_per_trigger``
    Streaming: at most this many entries per micro-batch, shared among the partitions (a
    producer's batch is one entry; see :func:`.pulsar_offsets.plan_ends`). A batch read logs
    that it ignores it.
``timeout_ms``
    Connecting, broker operations, the admin API, and waiting for a message the broker reported (30 s).

Columns
-------
``key`` (string: the partition key, null when absent; for KeyValue topics the key struct),
``value`` (the decoded struct, null for a bad or null message; binary with ``decode=false``),
``decode_error`` (``struct<code, offset, message, payload>``, null for good rows; ``payload``:
the bytes that failed; absent with
``decode=false`` unless a KeyValue topic is split), ``topic`` (without ``-partition-N``),
``partition`` (int, -1 for a topic that is not partitioned), ``message_id`` (binary,
``MessageId.serialize()``), ``publish_time``, ``event_time`` (timestamps, null when the producer
set none), ``properties`` (``map<string, string>``), ``schema_id`` (bigint: the id in the value's
wire prefix, null when there is none or it is not an integer). The Python client cannot read
``MessageMetadata.schema_id`` (PIP-420), so the id always comes from the prefix.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

from ... import wire
from ..._kernels import _backend
from ...formats import get_format
from ...keyvalue import JAVA, KeyValueEncodingType
from ...pipeline import MessageDecoder
from ...pulsar._sdk import check_key_encoding
from .executor import ShippedSchemas, use_backend
from .pulsar_offsets import (
    EARLIEST,
    LATEST,
    broker_calls,
    decode_offset,
    encode_offset,
    last_message_id,
    last_message_ids,
    new_client,
    plan_ends,
    position,
    read_range,
    shared_client,
    split_partition,
)
from .pulsar_options import (
    DEFAULT_TIMEOUT_MS,
    SINK_OPTIONS,
    SOURCE_OPTIONS,
    OffsetSpec,
    PatternTopics,
    check_inline_convention,
    check_names,
    flag,
    positive_int,
    registry_config,
    required,
    resolve_reader,
    topic_list,
    topic_pattern,
)
from .pulsar_rows import PartDecoder, PrimitiveKey, RowMaker
from .types import ERROR_TYPE, reader_struct, spark_type

__all__ = ["PulsarDataSource", "PulsarPartition", "SourcePlan", "check_order"]

_log = logging.getLogger("pulsar_codec")

BATCH_SIZE = 10_000  # messages per Arrow batch an executor yields


@dataclass(frozen=True)
class PulsarPartition(InputPartition):
    """One topic-partition's range ``(start, end]`` of message id offsets (see :mod:`.pulsar_offsets`)."""

    topic: str
    start: str
    end: str


@dataclass(frozen=True)
class ValueReader:
    """A decoder fixed on the driver (reader schema, shipped schemas, registry config) and its cache key."""

    decoder: MessageDecoder
    cache_key: tuple[Any, ...]

    @classmethod
    def resolve(
        cls, options: Mapping[str, str], config: Any, topics: tuple[str, ...], protocol: wire.Protocol | None, part: str
    ) -> ValueReader:
        """The reader of one part; without ``protocol`` the decoder picks the format's own prefix
        (Confluent's, with its message indexes for Protobuf), as :func:`pulsar_codec.decode` does.
        The option ``message`` (``key_message`` for the key) names the Protobuf message type read."""
        setup = resolve_reader(options, config, topics, part)
        option = "message" if part == "value" else "key_message"
        message = str(options.get(option) or "").strip() or None
        if message is not None:
            fmt = get_format(setup.format)
            if getattr(fmt, "select", None) is None:  # one type per schema: nothing to choose
                raise ValueError(f"option {option!r} applies to Protobuf schemas; the {part} schema is {fmt.name}")
        decoder = MessageDecoder(
            ShippedSchemas(setup.shipped, config),
            protocol=protocol,
            reader_schema=setup.reader_schema,
            on_error="null",
            format=setup.format,
            message=message,
        )
        key = ("pulsar-source", config, decoder.protocol.name, setup.format, setup.reader_schema, message)
        return cls(decoder, key)

    def spark_type(self) -> Any:
        """The Spark type of the decoded struct."""
        target, _ = reader_struct(self.decoder.arrow_schema, self.decoder.non_null_columns)
        return spark_type(target)

    def part(self, backend: str) -> PartDecoder:
        """This executor process's decoder for it."""
        return PartDecoder(self.decoder, self.cache_key, backend)


@dataclass(frozen=True)
class SourcePlan:
    """Everything a read needs, settled on the driver and pickled to the executors.

    Attributes
    ----------
    service_url, topics, starting, ending, timeout_ms, max_records
        The options (topics in full names; with ``topics_pattern``, those it matched when the
        query was planned).
    value, key : ValueReader or None (key: or PrimitiveKey)
        With ``decode=true``: the value's reader, and a KeyValue topic's key reader.
    keyvalue : {"INLINE", "SEPARATED"} or None
        The KeyValue encoding of the topics (option ``keyvalue``).
    key_encoding : {"base64", "raw"}
        How SEPARATED keys are written in the partition key (option ``key_encoding``).
    inline_convention : {"java", "cpp"}
        How INLINE lengths of -1 read (option ``inline_convention``; see :mod:`pulsar_codec.keyvalue`).
    protocol : str
        The wire prefix the ``schema_id`` column is read from.
    backend : str
        The kernels the driver ran; the executors run the same.
    pattern : PatternTopics or None
        ``topics_pattern``: a stream lists its topics again before each micro-batch (the driver
        only; the executors read the partitions they are given).
    """

    service_url: str
    topics: tuple[str, ...]
    starting: OffsetSpec
    ending: OffsetSpec
    timeout_ms: int
    max_records: int | None
    value: ValueReader | None
    key: ValueReader | PrimitiveKey | None
    keyvalue: str | None
    key_encoding: str
    protocol: str
    inline_convention: str = JAVA
    backend: str = field(default_factory=lambda: _backend.active().name)
    pattern: PatternTopics | None = None

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> SourcePlan:
        """Read and check the options; with ``decode=true`` ask the registry for the reader schemas."""
        check_names(
            options, SOURCE_OPTIONS, 'format("pulsar") (reading)', other_side=(SINK_OPTIONS, "the sink (writing)")
        )
        pattern = topic_pattern(options)
        topics = topic_list(options) if pattern is None else pattern.topics()  # admin API: listed once
        protocol = wire.protocol_by_name(options["protocol"]) if options.get("protocol") else None
        kv = options.get("keyvalue") or None
        kv_encoding = KeyValueEncodingType.parse(kv).name if kv else None
        key_encoding = check_key_encoding(options.get("key_encoding") or "base64")
        convention = check_inline_convention(options, kv_encoding)
        value: ValueReader | None = None
        key: ValueReader | PrimitiveKey | None = None
        if flag(options, "decode", True):
            config = registry_config(options)
            if config is None:
                raise ValueError(
                    'format("pulsar") decodes with a registry: give the option "registry" (or decode=false)'
                )
            value = ValueReader.resolve(options, config, topics, protocol, "value")
            if kv_encoding is not None:
                key = PrimitiveKey.named(options.get("key_format"))
                if key is None:
                    key = ValueReader.resolve(options, config, topics, protocol, "key")
                elif options.get("key_message"):
                    raise ValueError(
                        f"option 'key_message' applies to Protobuf keys; key_format={key.schema_type} is a "
                        "Pulsar primitive type"
                    )
            elif options.get("key_message"):
                raise ValueError(
                    "the option 'key_message' applies to KeyValue topics: give the option \"keyvalue\" too"
                )
        starting = OffsetSpec.parse(options.get("starting_offsets"), EARLIEST, "starting_offsets")
        ending = OffsetSpec.parse(options.get("ending_offsets"), LATEST, "ending_offsets")
        starting.check_topics("starting_offsets", topics, pattern)
        ending.check_topics("ending_offsets", topics, pattern)
        return cls(
            service_url=required(options, "service_url"),
            topics=topics,
            starting=starting,
            ending=ending,
            timeout_ms=positive_int(options, "timeout_ms", DEFAULT_TIMEOUT_MS) or DEFAULT_TIMEOUT_MS,
            max_records=positive_int(options, "max_records_per_trigger", None),
            value=value,
            key=key,
            keyvalue=kv_encoding,
            key_encoding=key_encoding,
            inline_convention=convention,
            # the prefix the schema_id column is read from: the value decoder's when it has one
            protocol=(protocol or (value.decoder.protocol if value is not None else wire.CONFLUENT)).name,
            pattern=pattern,
        )

    def spark_schema(self) -> Any:
        """The DataFrame's schema (see the module notes)."""
        from pyspark.sql.types import (
            BinaryType,
            IntegerType,
            LongType,
            MapType,
            StringType,
            StructField,
            StructType,
            TimestampType,
        )

        if self.key is not None:
            fields = [StructField("key", self.key.spark_type(), True)]
        else:
            fields = [StructField("key", StringType() if self.keyvalue is None else BinaryType(), True)]
        fields.append(StructField("value", BinaryType() if self.value is None else self.value.spark_type(), True))
        if self.value is not None or self.keyvalue is not None:
            fields.append(StructField("decode_error", spark_type(ERROR_TYPE), True))
        fields += [
            StructField("topic", StringType(), True),
            StructField("partition", IntegerType(), True),
            StructField("message_id", BinaryType(), True),
            StructField("publish_time", TimestampType(), True),
            StructField("event_time", TimestampType(), True),
            StructField("properties", MapType(StringType(), StringType(), True), True),
            StructField("schema_id", LongType(), True),
        ]
        return StructType(fields)

    # -- the driver's view of the topics --------------------------------------------------------

    def current_topics(self) -> tuple[str, ...]:
        """The topics now: those ``topics_pattern`` matches, listed again; else ``topics``."""
        return self.topics if self.pattern is None else self.pattern.topics()

    def partition_topics(self, client: Any, topics: tuple[str, ...] | None = None) -> list[str]:
        """Every topic-partition of ``topics`` (default: the plan's), each once; a topic that is
        not partitioned is its own. A partition named beside its topic (``orders,
        orders-partition-0``) is listed once: it would otherwise be read twice."""
        found: dict[str, None] = {}
        for topic in self.topics if topics is None else topics:
            partitions = [str(p) for p in client.get_topic_partitions(topic)]
            if partitions != [topic]:
                check_partition_addressing(client, partitions[0])
            found.update(dict.fromkeys(partitions))
        return list(found)

    def resolve(self, client: Any, spec: OffsetSpec, partition_topic: str) -> str:
        """The offset ``spec`` gives one partition, ``latest`` asked of the broker now."""
        word = spec.for_partition(partition_topic)
        if word == LATEST:
            return encode_offset(last_message_id(client, partition_topic))
        return word

    # -- the executors' part --------------------------------------------------------------------

    def read(self, schema: Any, partition: Any) -> Iterator[pa.RecordBatch]:
        """The rows of one input partition, as Arrow batches of exactly the DataFrame's Arrow schema."""
        if not isinstance(partition, PulsarPartition):  # Spark's stand-in when there is nothing to read
            return
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(schema, timezone="UTC")
        client = shared_client(self.service_url, self.timeout_ms)
        topic, index = split_partition(partition.topic)
        rows = RowMaker(
            wire.protocol_by_name(self.protocol),
            None if self.value is None else self.value.part(self.backend),
            None if self.key is None else self.key.part(self.backend),
            self.keyvalue,
            self.key_encoding,
            self.backend,
            self.inline_convention,
        )
        with use_backend(self.backend), broker_calls(self.service_url, self.timeout_ms):
            for raw in read_range(
                client,
                partition.topic,
                partition.start,
                partition.end,
                batch_size=BATCH_SIZE,
                timeout_ms=self.timeout_ms,
            ):
                n = raw.num_rows
                columns = rows.columns(raw)
                columns.update(
                    topic=pa.array([topic] * n, pa.string()),
                    partition=pa.array(np.full(n, index, dtype=np.int32)),
                    message_id=raw.column("message_id"),
                    publish_time=raw.column("publish_time"),
                    event_time=raw.column("event_time"),
                    properties=raw.column("properties"),
                )
                # cast only what differs: a cast checks the null slots of a null struct's
                # non-nullable fields, which hold nulls (a bad row is a null struct)
                arrays = [columns[f.name] for f in target]
                arrays = [a if a.type == f.type else a.cast(f.type) for a, f in zip(arrays, target)]
                yield pa.RecordBatch.from_arrays(arrays, schema=target)


def check_partition_addressing(client: Any, partition_topic: str) -> None:
    """Refuse a broker that takes a partition's name for a new partitioned topic.

    Each partition is read by a reader of its own (``<topic>-partition-<n>``), which Pulsar
    brokers answer as a plain topic. pulsar-lite started with ``default_partitions`` answers with
    partitions of that name instead, and the C++ client can abort the process on such a reader.
    """
    inner = [str(p) for p in client.get_topic_partitions(partition_topic)]
    if inner != [partition_topic]:
        raise ValueError(
            f"the broker reports {partition_topic} as a partitioned topic of its own ({len(inner)} partitions), so "
            "single partitions cannot be read (pulsar-lite with default_partitions does this); read "
            "non-partitioned topics from this broker"
        )


def check_not_behind(start: Mapping[str, str], lasts: Mapping[str, Any]) -> None:
    """Refuse to go on from offsets past the broker's last message ids (see
    :meth:`PulsarStreamReader.latestOffset`). A partition without messages passes: a broker whose
    retention removed every ledger answers so for a partition read to its end."""
    earliest = position(decode_offset(EARLIEST))
    for topic, last in sorted(lasts.items()):
        offset = start.get(topic, EARLIEST)
        if offset in (EARLIEST, LATEST) or position(last) <= earliest:
            continue
        at = position(decode_offset(offset))
        if position(last) < at:
            ledger, entry, _ = position(last)
            raise ValueError(
                f'format("pulsar"): the last message of {topic} on the broker ({ledger}:{entry}) lies before the '
                f"offset the query goes on from ({at[0]}:{at[1]}): the topic was deleted and created again, or "
                "the checkpoint belongs to another broker; going on would skip its messages up to that offset. "
                "Start the query with a new checkpoint (starting_offsets says where it begins)"
            )


def check_order(topic: str, start: str, end: str) -> None:
    """Refuse a given ``ending_offsets`` id before the given ``starting_offsets`` id of the same
    partition (the range would be empty, and the read silently give no rows)."""
    if start in (EARLIEST, LATEST) or end in (EARLIEST, LATEST):
        return
    if position(decode_offset(end)) < position(decode_offset(start)):
        raise ValueError(
            f"ending_offsets of {topic} is before its starting_offsets (a range starts after its starting "
            f"id and ends with its ending id): {end!r} < {start!r}"
        )


# -- batch ------------------------------------------------------------------------------------------


class PulsarBatchReader(DataSourceReader):
    """``spark.read``: one input partition per topic-partition with messages in its range."""

    def __init__(self, plan: SourcePlan, schema: Any) -> None:
        self.plan = plan
        self.schema = schema

    def partitions(self) -> list[PulsarPartition]:
        """The ranges ``(starting_offsets, ending_offsets]`` of every topic-partition, ``latest``
        taken from the broker now; a given end past a partition's last message ends at that
        message (a read never waits for messages that are not there yet)."""
        plan = self.plan
        client = new_client(plan.service_url, plan.timeout_ms)
        try:
            with broker_calls(plan.service_url, plan.timeout_ms):
                found = []
                empty = []
                partitions = plan.partition_topics(client)
                plan.starting.check_partitions("starting_offsets", partitions)
                plan.ending.check_partitions("ending_offsets", partitions)
                for topic in partitions:
                    start = plan.resolve(client, plan.starting, topic)
                    end = plan.resolve(client, plan.ending, topic)
                    if plan.ending.for_partition(topic) == LATEST and position(decode_offset(end)) <= position(
                        decode_offset(EARLIEST)
                    ):  # the broker's last id of a partition without messages is the earliest one
                        empty.append(topic)
                    check_order(topic, plan.starting.for_partition(topic), plan.ending.for_partition(topic))
                    if plan.ending.for_partition(topic) != LATEST and end != EARLIEST:
                        last = last_message_id(client, topic)
                        if position(decode_offset(end)) > position(last):
                            end = encode_offset(last)
                    if end != EARLIEST and position(decode_offset(end)) > position(decode_offset(start)):
                        found.append(PulsarPartition(topic, start, end))
                if empty:  # a misspelt topic reads as an empty one: the broker creates a topic a client names
                    _log.warning(
                        'format("pulsar") (reading): %s hold%s no message (is the name right? Pulsar creates a '
                        "topic a client names, empty)",
                        ", ".join(empty),
                        "s" if len(empty) == 1 else "",
                    )
                return found
        finally:
            client.close()

    def read(self, partition: Any) -> Iterator[pa.RecordBatch]:
        """Read and decode one topic-partition's range (on an executor)."""
        return self.plan.read(self.schema, partition)


# -- streaming --------------------------------------------------------------------------------------


class PulsarStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream``: offsets are message ids per topic-partition (see :mod:`.pulsar_offsets`).

    ``latestOffset`` asks the broker for each partition's last message id (no message is read for
    it) and, under ``max_records_per_trigger``, ends each range that many entries on in all. With
    ``topics_pattern`` it lists the matching topics first, so a new topic joins the next
    micro-batch, read from ``earliest``.
    Ranges are fixed before a micro-batch runs and read between fixed ids, so a micro-batch run
    again after a restart reads the same messages: with a checkpoint and an idempotent sink
    (Parquet, Delta) every message arrives once. Nothing is acknowledged on the broker (readers
    keep no subscription), so ``commit`` has nothing to do. A checkpoint whose offset lies past a
    partition's last message (the topic was recreated) stops the query with an error rather than
    skip the new messages up to it.
    """

    def __init__(self, plan: SourcePlan, schema: Any) -> None:
        self.plan = plan
        self.schema = schema
        self._client: Any = None
        self._target: dict[str, Any] | None = None  # availableNow: the last ids when the query began
        self._reported: dict[str, str] | None = None  # the last ids latestOffset found, for reportLatestOffset

    def __getstate__(self) -> dict[str, Any]:
        return {"plan": self.plan, "schema": self.schema}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["plan"], state["schema"])  # type: ignore[misc]

    def _broker(self) -> Any:
        if self._client is None:
            self._client = new_client(self.plan.service_url, self.plan.timeout_ms)
        return self._client

    def initialOffset(self) -> dict[str, str]:
        """``starting_offsets`` of every partition as given: ``earliest``, a message id, or
        ``latest``, which is not asked of the broker here.

        Spark asks for the initial offset more than once: when it plans the first micro-batch
        and again when it runs it, and again after a restart before that batch was committed (the
        checkpoint holds a batch's end, not its start). An answer of the broker's last id each
        time would move the start of the first range past messages that arrived in between, and
        they would never be read. ``latest`` is settled by :meth:`latestOffset` instead.
        """
        client = self._broker()
        with broker_calls(self.plan.service_url, self.plan.timeout_ms):
            partitions = self.plan.partition_topics(client, self.plan.current_topics())
            self.plan.starting.check_partitions("starting_offsets", partitions)
            return {t: self.plan.starting.for_partition(t) for t in sorted(partitions)}

    def _lasts(self) -> dict[str, Any]:
        # with topics_pattern the topics are listed again: a new one joins with no start offset,
        # so latestOffset and partitions read it from earliest
        client = self._broker()
        with broker_calls(self.plan.service_url, self.plan.timeout_ms):
            partitions = self.plan.partition_topics(client, self.plan.current_topics())
            return last_message_ids(client, sorted(partitions))

    def getDefaultReadLimit(self) -> Any:
        """``ReadMaxRows(max_records_per_trigger)`` when the option is set."""
        if self.plan.max_records is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.plan.max_records)

    def prepareForTriggerAvailableNow(self) -> None:
        """Remember every partition's last id: the query stops there (Trigger.AvailableNow)."""
        self._target = self._lasts()

    def latestOffset(self, start: dict[str, str], limit: Any) -> dict[str, str]:
        """The end of the next micro-batch: each partition's last id, bounded by ``limit``.

        A partition that starts at ``latest`` ends at the broker's last id now, with nothing to
        read: the first micro-batch fixes where ``latest`` was, and the checkpoint keeps it.

        Raises
        ------
        ValueError
            A partition's last message id lies before the offset it starts from (the topic was
            deleted and created again, or the checkpoint is another broker's): reading on would
            skip the partition's messages up to that offset.
        """
        lasts = self._lasts()
        self._reported = {t: encode_offset(i) for t, i in lasts.items()}
        check_not_behind(start, lasts)
        if self._target is not None:  # availableNow: nothing later than the ids taken at the start
            lasts = {t: min(last, self._target.get(t, last), key=position) for t, last in lasts.items()}
        out = dict(start)
        for topic in [t for t in lasts if start.get(t) == LATEST]:
            last = lasts.pop(topic)
            out[topic] = encode_offset(last) if position(last) > position(decode_offset(EARLIEST)) else EARLIEST
        starts = {t: decode_offset(start.get(t, EARLIEST)) for t in lasts}
        if self._target is not None:  # a partition listed after the start: read nothing in this query
            lasts = {t: last if t in self._target else starts[t] for t, last in lasts.items()}
        max_entries = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        ends = plan_ends(self._broker(), starts, lasts, max_entries)
        for topic in sorted(ends):
            if position(ends[topic]) > position(starts[topic]):
                out[topic] = encode_offset(ends[topic])
        return dict(sorted(out.items()))

    def reportLatestOffset(self) -> dict[str, str]:
        """The broker's last id of every partition (shown in the query's progress).

        Spark asks right after :meth:`latestOffset`, which has just asked the broker: its answer
        is given again (once) rather than asking for every partition's last id a second time,
        which would double the driver's broker calls (a subscription per partition) each trigger.
        """
        found, self._reported = self._reported, None
        if found is None:
            found = {t: encode_offset(i) for t, i in self._lasts().items()}
        return found

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> list[PulsarPartition]:
        """One input partition per topic-partition whose range ``(start, end]`` holds messages."""
        found = []
        for topic in sorted(end):
            first = start.get(topic, EARLIEST)
            if LATEST in (first, end[topic]):  # the range that settles 'latest' holds nothing
                continue
            if position(decode_offset(end[topic])) > position(decode_offset(first)):
                found.append(PulsarPartition(topic, first, end[topic]))
        return found

    def read(self, partition: Any) -> Iterator[pa.RecordBatch]:
        """Read and decode one topic-partition's range (on an executor)."""
        return self.plan.read(self.schema, partition)

    def commit(self, end: dict[str, str]) -> None:
        """Nothing to release: no subscription holds the messages (readers are not durable)."""

    def stop(self) -> None:
        """Close the driver's client."""
        if self._client is not None:
            self._client.close()
            self._client = None


# -- the data source --------------------------------------------------------------------------------


class PulsarDataSource(DataSource):
    """``format("pulsar")``: read (batch and streaming) and write Pulsar topics.

    Register it with :func:`pulsar_codec.spark.register` or
    ``spark.dataSource.register(PulsarDataSource)``. Reading options and columns: see this
    module's notes; writing options: :mod:`.pulsar_sink`.
    """

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self._plan: SourcePlan | None = None

    @classmethod
    def name(cls) -> str:
        """The short name: ``format("pulsar")``."""
        return "pulsar"

    def _source(self) -> SourcePlan:
        # settled once, when Spark asks for the schema on the driver; this instance is pickled
        # after that, so every later step (and executor) reads with the same reader schema
        if self._plan is None:
            self._plan = SourcePlan.from_options(self.options)
        return self._plan

    def schema(self) -> Any:
        """The DataFrame's schema, with the value struct of the reader schema from the registry."""
        return self._source().spark_schema()

    def reader(self, schema: Any) -> PulsarBatchReader:
        """The batch reader."""
        plan = self._source()
        if plan.pattern is not None and not plan.topics:
            raise ValueError(plan.pattern.no_match())
        if plan.max_records is not None:
            _log.warning(
                "format(\"pulsar\") (reading) ignores the option 'max_records_per_trigger' in a batch read "
                "(spark.read): it bounds the micro-batches of spark.readStream; a batch read takes "
                "everything between starting_offsets and ending_offsets"
            )
        return PulsarBatchReader(plan, schema)

    def streamReader(self, schema: Any) -> PulsarStreamReader:
        """The streaming reader."""
        plan = self._source()
        if plan.ending.per_topic or plan.ending.default != LATEST:
            raise ValueError("ending_offsets applies to batch reads; a stream has no end")
        return PulsarStreamReader(plan, schema)

    def writer(self, schema: Any, overwrite: bool) -> Any:
        """The batch writer (see :mod:`.pulsar_sink`)."""
        from .pulsar_sink import PulsarBatchWriter, SinkPlan

        return PulsarBatchWriter(SinkPlan.from_options(self.options, schema, overwrite))

    def streamWriter(self, schema: Any, overwrite: bool) -> Any:
        """The streaming writer (see :mod:`.pulsar_sink`)."""
        from .pulsar_sink import PulsarStreamWriter, SinkPlan

        return PulsarStreamWriter(SinkPlan.from_options(self.options, schema, overwrite, stream=True))
