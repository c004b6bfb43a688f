"""One message per call: pulsar_codec.serde against confluent-kafka's AvroSerializer / AvroDeserializer,
and the batch path (``AvroDeserializer.decode_batch``) against confluent-kafka's deserializer in a loop
plus ``pa.Table.from_pylist``. Both sides share one embedded registry (confluent-kafka through the REST
facade), on a 5-field record. Also the PIP-420 ``AvroExternalSchema.decode`` / ``encode`` of one
message, on a 2-field and a 13-field record (microseconds per call), and ``MessageDecoder.decode``
of small batches (1, 10 and 100 messages of the complex-12 workload).

    python bench/bench_single.py            # one run, prints messages/s, microseconds and the ratios
    pytest bench/bench_single.py --benchmark-only
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import functools
import json
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

from pulsar_codec import serde
from pulsar_codec.cli._benchdata import SCHEMAS, event_record
from pulsar_codec.external import AvroExternalSchema, SchemaInfoProviderFactory
from pulsar_codec.pipeline import MessageDecoder, MessageEncoder
from pulsar_codec.registry import LocalRegistry
from pulsar_codec.registry.server import serve

with warnings.catch_warnings():
    try:  # confluent-kafka's registry module imports authlib's deprecated httpx integration
        import authlib.deprecate  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        pass
    warnings.simplefilter("ignore", DeprecationWarning)
    from confluent_kafka.schema_registry import SchemaRegistryClient, topic_subject_name_strategy
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

USER = {
    "type": "record",
    "name": "User",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "score", "type": "double"},
        {"name": "active", "type": "boolean"},
        {"name": "email", "type": ["null", "string"], "default": None},
    ],
}
CONF = {"subject.name.strategy": topic_subject_name_strategy}
PAIR = {
    "type": "record",
    "name": "Pair",
    "namespace": "bench",
    "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}],
}
RICH = {
    "type": "record",
    "name": "Rich",
    "namespace": "bench",
    "fields": [
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "b", "type": "boolean"},
        {"name": "raw", "type": "bytes"},
        {"name": "opt", "type": ["null", "string"], "default": None},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "choice", "type": ["int", "string"]},
    ],
}
RICH_VALUE = {
    "l": -(2**40),
    "f": 1.5,
    "d": -0.25,
    "b": True,
    "raw": b"\x00\xff",
    "opt": None,
    "kind": "B",
    "tags": ["x", "y"],
    "fx": b"abcd",
    "day": datetime.date(2024, 2, 29),
    "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC),
    "amount": decimal.Decimal("12.34"),
    "choice": "s",
}


def value(i: int) -> dict[str, Any]:
    return {"id": i, "name": f"user-{i}", "score": i * 0.5, "active": i % 2 == 0, "email": None if i % 3 else f"u{i}@x"}


class Pair:
    """Our serde and confluent-kafka's on one registry, ready to time."""

    def __init__(self, registry: LocalRegistry, url: str) -> None:
        self.ctx = SerializationContext("users", MessageField.VALUE)
        self.client = SchemaRegistryClient({"url": url})
        text = json.dumps(USER)
        self.ck_ser = AvroSerializer(self.client, text, conf=CONF)
        self.ck_de = AvroDeserializer(self.client, conf=CONF)
        self.our_ser = serde.AvroSerializer(registry, text)
        self.our_de = serde.AvroDeserializer(registry)
        self.values = [value(i) for i in range(2000)]
        self.messages = [self.ck_ser(v, self.ctx) for v in self.values]
        assert [self.our_ser(v, self.ctx) for v in self.values] == self.messages  # same bytes
        assert [self.our_de(m, self.ctx) for m in self.messages] == [self.ck_de(m, self.ctx) for m in self.messages]


@contextlib.contextmanager
def pair_context() -> Iterator[Pair]:
    with LocalRegistry(":memory:") as registry, serve(registry) as server:
        pair = Pair(registry, server.url)
        yield pair
        pair.client.close()


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    with pair_context() as made:
        yield made


@pytest.mark.parametrize("side", ["ours", "confluent-kafka"])
def test_serialize_one(benchmark: Any, pair: Pair, side: str) -> None:
    benchmark.group = "serialize-one-message"
    ser = pair.our_ser if side == "ours" else pair.ck_ser
    benchmark(lambda: [ser(v, pair.ctx) for v in pair.values])


@pytest.mark.parametrize("side", ["ours", "confluent-kafka"])
def test_deserialize_one(benchmark: Any, pair: Pair, side: str) -> None:
    benchmark.group = "deserialize-one-message"
    de = pair.our_de if side == "ours" else pair.ck_de
    benchmark(lambda: [de(m, pair.ctx) for m in pair.messages])


def external_schemas(registry: LocalRegistry) -> dict[str, tuple[AvroExternalSchema, Any, bytes]]:
    """The 2-field and 13-field external schemas, each with a value and its framed message."""
    factory = SchemaInfoProviderFactory(registry)
    out = {}
    for name, schema, value in (("2-field", PAIR, {"id": 7, "name": "seven"}), ("13-field", RICH, RICH_VALUE)):
        ext = factory.avro_schema(f"persistent://public/default/{name}", schema)
        message = ext.encode(None, value).data
        batch = ext.decode_batch([message])
        assert isinstance(batch, pa.RecordBatch) and ext.decode(None, message) == batch.to_pylist()[0]
        out[name] = (ext, value, message)
    return out


@pytest.mark.parametrize("record", ["2-field", "13-field"])
def test_external_decode_one(benchmark: Any, record: str) -> None:
    benchmark.group = "external-decode-one-message"
    with LocalRegistry(":memory:") as registry:
        ext, _, message = external_schemas(registry)[record]
        benchmark(lambda: ext.decode(None, message))


def _small_batches() -> tuple[MessageDecoder, list[Any]]:
    import random

    rng = random.Random(5)
    encoder = MessageEncoder({}, "events", schema=SCHEMAS["complex-12"])
    messages = [encoder.encode_value(event_record(rng)) for _ in range(100)]
    return MessageDecoder(encoder.registry), messages


@pytest.mark.parametrize("rows", [1, 10, 100])
def test_decode_small_batch(benchmark: Any, rows: int) -> None:
    benchmark.group = "decode-small-batch"
    decoder, messages = _small_batches()
    batch = pa.array(messages[:rows], pa.binary())
    benchmark(lambda: decoder.decode(batch))


def _per_call(fn: Callable[[], object], calls: int = 2000, repeat: int = 5) -> float:
    """Best microseconds per call of ``fn`` over ``repeat`` runs of ``calls`` calls."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, time.perf_counter() - t)
    return best / calls * 1e6


def _rate(fn: Callable[[], object], n: int, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return n / best


def main() -> None:
    with pair_context() as pair:
        n = len(pair.values)
        ctx = pair.ctx
        rates = {
            "serialize, ours": _rate(lambda: [pair.our_ser(v, ctx) for v in pair.values], n),
            "serialize, confluent-kafka": _rate(lambda: [pair.ck_ser(v, ctx) for v in pair.values], n),
            "deserialize, ours": _rate(lambda: [pair.our_de(m, ctx) for m in pair.messages], n),
            "deserialize, confluent-kafka": _rate(lambda: [pair.ck_de(m, ctx) for m in pair.messages], n),
        }
        many = pair.messages * 50
        rates["decode_batch, ours"] = _rate(lambda: pair.our_de.decode_batch(many), len(many), 3)
        rates["loop + from_pylist, confluent-kafka"] = _rate(
            lambda: pa.Table.from_pylist([pair.ck_de(m, ctx) for m in many]), len(many), 1
        )
        print("one 5-field message per call (best of runs), messages/s")
        for name, rate in rates.items():
            print(f"  {name:38s} {rate / 1e3:10.1f}k")
        print(
            f"  serialize ratio   ours / confluent-kafka: {rates['serialize, ours'] / rates['serialize, confluent-kafka']:.2f}x"
        )
        print(
            f"  deserialize ratio ours / confluent-kafka: "
            f"{rates['deserialize, ours'] / rates['deserialize, confluent-kafka']:.2f}x"
        )
        print(
            f"  batch of {len(many):,}: decode_batch / (confluent-kafka loop + from_pylist): "
            f"{rates['decode_batch, ours'] / rates['loop + from_pylist, confluent-kafka']:.0f}x"
        )
    with LocalRegistry(":memory:") as registry:
        print("AvroExternalSchema, one message per call (best of runs), microseconds per call")
        for name, (ext, value, message) in external_schemas(registry).items():
            decode_us = _per_call(functools.partial(ext.decode, None, message))
            encode_us = _per_call(functools.partial(ext.encode, None, value))
            print(f"  {name:9s} decode {decode_us:7.1f} us   encode {encode_us:7.1f} us")
    decoder, messages = _small_batches()
    print("MessageDecoder.decode of a small complex-12 batch, microseconds per call")
    for rows in (1, 10, 100):
        batch = pa.array(messages[:rows], pa.binary())
        print(f"  {rows:3d} messages {_per_call(functools.partial(decoder.decode, batch), 500):8.1f} us")


if __name__ == "__main__":
    main()
