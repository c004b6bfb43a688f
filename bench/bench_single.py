"""One message per call: pulsar_codec.serde against confluent-kafka's AvroSerializer / AvroDeserializer,
and the batch path (``AvroDeserializer.decode_batch``) against confluent-kafka's deserializer in a loop
plus ``pa.Table.from_pylist``. Both sides share one embedded registry (confluent-kafka through the REST
facade), on a 5-field record.

    python bench/bench_single.py            # one run, prints messages/s and the ratios
    pytest bench/bench_single.py --benchmark-only
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

from pulsar_codec import serde
from pulsar_codec.registry import LocalRegistry
from pulsar_codec.registry.server import serve

with warnings.catch_warnings():
    try:  # confluent-kafka's registry module imports authlib's deprecated httpx integration
        import authlib.deprecate  # noqa: F401
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
def test_serialize_one(benchmark, pair, side):
    benchmark.group = "serialize-one-message"
    ser = pair.our_ser if side == "ours" else pair.ck_ser
    benchmark(lambda: [ser(v, pair.ctx) for v in pair.values])


@pytest.mark.parametrize("side", ["ours", "confluent-kafka"])
def test_deserialize_one(benchmark, pair, side):
    benchmark.group = "deserialize-one-message"
    de = pair.our_de if side == "ours" else pair.ck_de
    benchmark(lambda: [de(m, pair.ctx) for m in pair.messages])


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


if __name__ == "__main__":
    sys.exit(main())
