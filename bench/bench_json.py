"""JSON payloads -> Arrow: pulsar_codec against the ways people decode JSON topics today.

One workload, a 10-field record (a nested struct, a list of strings, a map, a nullable string, a
date-time, numbers, a boolean) as a Confluent JSON Schema subject, Confluent-framed. Peers, on the
same payloads in one run:

* ``json.loads`` per message + ``pa.Table.from_pylist`` (the usual recipe);
* ``pyarrow.json.read_json`` with the explicit Arrow schema, the payloads joined by newlines (no
  framing, no registry; one bad row fails the block; it cannot build maps, so ``attrs`` is a struct
  of its possible keys there). Its default reads blocks on pyarrow's thread pool, so it is timed
  that way (the peer as people run it) and with ``use_threads=False`` (one thread, as we run);
* confluent-kafka's ``JSONDeserializer`` per message (it validates each message against the
  schema) + ``from_pylist``, through the embedded registry's REST facade.

Also the pure twin, and peak memory (RSS growth during one compiled decode / payload bytes).

Encode, the other way: the decoded corpus (an Arrow RecordBatch) -> one JSON payload per row with
``MessageEncoder.encode_payloads`` (and framed, ``MessageEncoder.encode``). The JSON encoder is one
path (pyarrow compute over whole columns, no kernel twins: only the framing runs a kernel), so it
has no pure column. Peers, from the same records as ready-made dicts (building them from Arrow is
not counted):

* ``json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()`` per record + ``pa.array``;
* confluent-kafka's ``JSONSerializer`` per record (it validates each record against the schema,
  then writes the same ``json.dumps`` text, framed) + ``pa.array``, over the same REST facade.

The bench first checks that our payloads are byte for byte ``json.dumps``' (and JSONSerializer's
bodies) for the corpus, so a fast path that writes something else cannot be reported.

    python bench/bench_json.py [--rows 200000] [--peer-rows 20000]   # one run, prints the tables
    pytest bench/bench_json.py --benchmark-only --benchmark-group-by=group
"""

from __future__ import annotations

import argparse
import datetime
import gc
import io
import json
import os
import random
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json
import pytest

import pulsar_codec as pc
from pulsar_codec import wire
from pulsar_codec._kernels import _backend

ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "customer": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "tier": {"type": "integer"}},
            "required": ["name", "tier"],
        },
        "tags": {"type": "array", "items": {"type": "string"}},
        "attrs": {"type": "object", "additionalProperties": {"type": "string"}},
        "note": {"type": ["string", "null"]},
        "created": {"type": "string", "format": "date-time"},
        "amount": {"type": "number"},
        "qty": {"type": "integer"},
        "active": {"type": "boolean"},
        "score": {"type": "number"},
    },
    "required": ["id", "customer", "tags", "attrs", "created", "amount", "qty", "active", "score"],
}
SCHEMA_ID = 1
ARROW = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("customer", pa.struct([pa.field("name", pa.string()), pa.field("tier", pa.int64())])),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("attrs", pa.map_(pa.string(), pa.string())),
        pa.field("note", pa.string()),
        pa.field("created", pa.timestamp("us", tz="UTC")),
        pa.field("amount", pa.float64()),
        pa.field("qty", pa.int64()),
        pa.field("active", pa.bool_()),
        pa.field("score", pa.float64()),
    ]
)
_WORDS = ["red", "green", "blue", "north", "south", "fast", "slow", "new", "old", "big"]


def record(rng: random.Random, i: int) -> dict[str, Any]:
    created = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(
        seconds=rng.randrange(10**7), microseconds=rng.randrange(10**6)
    )
    return {
        "id": i,
        "customer": {"name": f"customer-{rng.randrange(10**6)}", "tier": rng.randrange(5)},
        "tags": rng.sample(_WORDS, rng.randrange(4)),
        "attrs": {f"k{j}": rng.choice(_WORDS) for j in range(rng.randrange(3))},
        "note": None if rng.random() < 0.5 else "leave at the door",
        "created": created.isoformat().replace("+00:00", "Z"),
        "amount": round(rng.uniform(0, 1000), 2),
        "qty": rng.randrange(1, 20),
        "active": rng.random() < 0.5,
        "score": rng.random(),
    }


def bodies(rows: int, seed: int = 7) -> list[bytes]:
    """Compact JSON bodies (property order = schema order), as confluent-kafka's JSONSerializer writes them."""
    rng = random.Random(seed)
    return [json.dumps(record(rng, i), separators=(",", ":"), ensure_ascii=False).encode() for i in range(rows)]


def corpus(rows: int) -> pa.Array:
    return pa.array([wire.CONFLUENT.pack(SCHEMA_ID, b) for b in bodies(rows)], pa.binary())


REGISTRY = {SCHEMA_ID: json.dumps(ORDER)}


def run_pulsar_codec(messages: pa.Array, backend: str) -> pa.RecordBatch:
    with _backend.use(backend):
        out: pa.RecordBatch = pc.decode(messages, REGISTRY, format="JSON")
    return out


def run_json_loads(messages: list[bytes]) -> pa.Table:
    return pa.Table.from_pylist([json.loads(m[5:]) for m in messages])


# pyarrow's JSON reader cannot produce a map column: it reads ``attrs`` as a struct of its possible
# keys (k0..k2 here), which is the best it can do for this workload
READ_JSON_SCHEMA = ARROW.set(
    ARROW.get_field_index("attrs"), pa.field("attrs", pa.struct([pa.field(f"k{j}", pa.string()) for j in range(3)]))
)


def run_read_json(joined: bytes, use_threads: bool = True) -> pa.Table:
    options = pa_json.ParseOptions(explicit_schema=READ_JSON_SCHEMA, unexpected_field_behavior="ignore")
    threads = pa_json.ReadOptions(use_threads=use_threads)  # True is read_json's default
    return pa_json.read_json(io.BytesIO(joined), parse_options=options, read_options=threads)


class ConfluentPeer:
    """confluent-kafka's JSONDeserializer and JSONSerializer over the embedded registry's REST facade."""

    def __init__(self) -> None:
        from pulsar_codec.registry import LocalRegistry
        from pulsar_codec.registry.server import serve

        with warnings.catch_warnings():
            try:  # confluent-kafka's registry module imports authlib's deprecated httpx integration
                import authlib.deprecate  # type: ignore[import-untyped]  # noqa: F401
            except ImportError:
                pass
            warnings.simplefilter("ignore", DeprecationWarning)
            from confluent_kafka.schema_registry import SchemaRegistryClient
            from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
            from confluent_kafka.serialization import MessageField, SerializationContext

        self.registry = LocalRegistry(":memory:")
        self.schema_id = self.registry.register("orders-value", json.dumps(ORDER), schema_type="JSON")
        self._server = serve(self.registry)
        self.server = self._server.__enter__()
        self.client = SchemaRegistryClient({"url": self.server.url})
        self.deserializer = JSONDeserializer(json.dumps(ORDER), schema_registry_client=self.client)
        # registers (finds) the schema under orders-value on its first call, then never asks again
        self.serializer = JSONSerializer(json.dumps(ORDER), self.client)
        self.ctx = SerializationContext("orders", MessageField.VALUE)

    def frame(self, payloads: list[bytes]) -> list[bytes]:
        return [wire.CONFLUENT.pack(self.schema_id, b) for b in payloads]

    def run(self, messages: list[bytes]) -> pa.Table:
        return pa.Table.from_pylist([self.deserializer(m, self.ctx) for m in messages])

    def run_encode(self, recs: list[dict[str, Any]]) -> pa.Array:
        return pa.array([self.serializer(r, self.ctx) for r in recs], pa.binary())

    def close(self) -> None:
        self._server.__exit__(None, None, None)
        self.registry.close()


# -- encode ------------------------------------------------------------------------------------------


def records(rows: int, seed: int = 7) -> list[dict[str, Any]]:
    """The records of :func:`bodies` as a producer holds them, ``created`` in ``datetime.isoformat()``
    form (``+00:00``, the text our encoder and orjson write for a UTC instant; the corpus says ``Z``)."""
    rng = random.Random(seed)
    out = []
    for i in range(rows):
        r = record(rng, i)
        r["created"] = r["created"].removesuffix("Z") + "+00:00"
        out.append(r)
    return out


def encode_batch(rows: int) -> pa.RecordBatch:
    """The corpus decoded into Arrow: what our encoder starts from."""
    return run_pulsar_codec(corpus(rows), "cython" if _backend.compiled_available() else "python")


# one encoder, kept: it parses the writer schema and plans its columns once, as an application
# encoding batch after batch does
ENCODER = pc.MessageEncoder(REGISTRY, schema=REGISTRY[SCHEMA_ID], schema_id=SCHEMA_ID, format="JSON")


def run_encode(batch: pa.RecordBatch) -> pa.Array:
    """Payloads without the wire prefix: the bytes ``json.dumps`` writes."""
    payloads: pa.Array = ENCODER.encode_payloads(batch)[1]
    return payloads


def run_encode_framed(batch: pa.RecordBatch) -> pa.Array:
    """Confluent-framed messages (``00`` + id + payload), as JSONSerializer writes them."""
    framed: pa.Array = ENCODER.encode(batch)
    return framed


def run_json_dumps(recs: list[dict[str, Any]]) -> pa.Array:
    """The stdlib recipe per record from ready-made dicts (confluent-kafka's text without orjson)."""
    dumps = json.dumps
    return pa.array([dumps(r, separators=(",", ":"), ensure_ascii=False).encode() for r in recs], pa.binary())


def check_encode(rows: int) -> None:
    """Our payloads are ``json.dumps``' bytes for the first ``rows`` records, and the framed ones
    carry them behind the prefix: a wrong fast path fails here rather than being timed."""
    batch = encode_batch(rows)
    expected = run_json_dumps(records(rows)).to_pylist()
    got = run_encode(batch).to_pylist()
    bad = next((i for i, (g, e) in enumerate(zip(got, expected)) if g != e), None)
    assert len(got) == len(expected) and bad is None, (
        f"row {bad}: {got[bad or 0]!r} != json.dumps {expected[bad or 0]!r}"
    )
    prefix = wire.CONFLUENT.pack(SCHEMA_ID, b"")
    assert run_encode_framed(batch).to_pylist() == [prefix + e for e in expected], "framed messages differ"


# -- pytest-benchmark ---------------------------------------------------------------------------------


@pytest.mark.parametrize("peer", ["cython", "python", "json-loads", "read-json", "read-json-1-thread"])
def test_decode(benchmark: Any, peer: str) -> None:
    rows = 20_000 if peer in ("cython", "read-json", "read-json-1-thread") else 2_000
    messages = corpus(rows)
    if peer in ("cython", "python"):
        if peer == "cython" and not _backend.compiled_available():
            pytest.skip("compiled kernels unavailable")
        out = benchmark(run_pulsar_codec, messages, peer)
    elif peer == "json-loads":
        out = benchmark(run_json_loads, messages.to_pylist())
    else:
        out = benchmark(run_read_json, b"\n".join(bodies(rows)), peer == "read-json")
    assert out.num_rows == rows


@pytest.mark.parametrize("peer", ["pulsar-codec", "pulsar-codec-framed", "json-dumps"])
def test_encode(benchmark: Any, peer: str) -> None:
    rows = 2_000 if peer == "json-dumps" else 20_000
    benchmark.group = "json-encode"
    benchmark.extra_info.update(rows=rows, peer=peer)
    if peer == "json-dumps":
        out = benchmark(run_json_dumps, records(rows))
    else:
        check_encode(2_000)
        out = benchmark(run_encode if peer == "pulsar-codec" else run_encode_framed, encode_batch(rows))
    assert len(out) == rows


# -- one run, printed --------------------------------------------------------------------------------


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _rss_growth(rows: int) -> tuple[int, int]:
    """(peak RSS growth during one compiled decode, payload bytes), in a child process."""
    code = f"""
import threading, time, os, gc
import bench_json as b
msgs = b.corpus({rows})
payload = msgs.buffers()[2].size - 5 * len(msgs)
b.run_pulsar_codec(b.corpus(100), 'cython')  # plans, imports
gc.collect()
page = os.sysconf('SC_PAGE_SIZE')
def rss():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * page
base = rss(); peak = [base]; done = [False]
def watch():
    while not done[0]:
        peak[0] = max(peak[0], rss()); time.sleep(0.0005)
t = threading.Thread(target=watch); t.start()
result = b.run_pulsar_codec(msgs, 'cython')
peak[0] = max(peak[0], rss()); done[0] = True; t.join()
print(peak[0] - base, payload)
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=os.path.dirname(os.path.abspath(__file__)),
    )
    grow, payload = out.stdout.split()
    return int(grow), int(payload)


def _rate(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    return f"{value / 1e3:.0f}k" if value >= 1e4 else f"{value:.0f}"


def _encode_table(rows: int, peer_rows: int) -> None:
    """The encode table: our payloads and framed messages against json.dumps and JSONSerializer."""
    check_encode(peer_rows)
    big = encode_batch(rows)
    recs = records(peer_rows)
    run_encode(big)
    ours = rows / _best(lambda: run_encode(big), 5)
    ours_framed = rows / _best(lambda: run_encode_framed(big), 5)
    dumps = peer_rows / _best(lambda: run_json_dumps(recs), 3)
    confluent = ConfluentPeer()
    try:
        few = recs[: max(peer_rows // 4, 1)]
        serialized = confluent.run_encode(few).to_pylist()
        assert [m[5:] for m in serialized] == run_json_dumps(few).to_pylist(), "JSONSerializer wrote other bodies"
        ck = len(few) / _best(lambda: confluent.run_encode(few), 2)
    finally:
        confluent.close()
    print(
        "\nEncode, Arrow RecordBatch (the decoded corpus) -> JSON payloads, records/s, single thread, best of several "
        f"runs; ours on {rows:,} rows (payloads: `MessageEncoder.encode_payloads`; framed: `.encode`; one path, no "
        f"twins), the others on {peer_rows:,} or fewer, from ready-made dicts (the Arrow -> dict conversion they would "
        'need is not counted). json.dumps = `json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode()` per '
        "record; JSONSerializer validates each record, then writes the same text framed. Our payloads were checked "
        "byte for byte against json.dumps first.\n"
    )
    print(
        "| ours, payloads | ours, framed | json.dumps | confluent-kafka JSONSerializer | payloads / json.dumps "
        "| framed / confluent-kafka |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {_rate(ours)} | {_rate(ours_framed)} | {_rate(dumps)} | {_rate(ck)} | {ours / dumps:,.1f}x "
        f"| {ours_framed / ck:,.0f}x |"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000, help="rows for the compiled twin, read_json and our encoder")
    ap.add_argument("--peer-rows", type=int, default=20_000, help="rows for the row-wise peers and the pure twin")
    args = ap.parse_args(argv)
    rows, peer_rows = args.rows, args.peer_rows
    big, small = corpus(rows), corpus(peer_rows)
    small_list = small.to_pylist()
    joined = b"\n".join(bodies(rows))
    compiled = _backend.compiled_available()
    if compiled:
        expected = run_pulsar_codec(small, "cython")
        assert expected.equals(run_pulsar_codec(small, "python")), "twins differ"
        run_pulsar_codec(big, "cython")
        ours = rows / _best(lambda: run_pulsar_codec(big, "cython"), 5)
    pure = peer_rows / _best(lambda: run_pulsar_codec(small, "python"), 2)
    loads = peer_rows / _best(lambda: run_json_loads(small_list), 3)
    read_json = rows / _best(lambda: run_read_json(joined), 5)
    read_json_1 = rows / _best(lambda: run_read_json(joined, use_threads=False), 5)
    confluent = ConfluentPeer()
    try:
        framed = confluent.frame(bodies(peer_rows // 4))
        ck = len(framed) / _best(lambda: confluent.run(framed), 2)
    finally:
        confluent.close()
    print(
        "Records/s, Confluent-framed JSON Schema messages -> Arrow, best of several runs; compiled and read_json "
        f"on {rows:,} rows, the others on {peer_rows:,} or fewer. Everything runs on one thread but read_json's "
        f"default, which reads blocks on pyarrow's thread pool ({pa.cpu_count()} threads, {os.cpu_count()} CPUs "
        "here). Peak = RSS growth during one compiled decode / payload bytes.\n"
    )
    print(
        "| compiled | pure | json.loads + from_pylist | pyarrow read_json + schema (thread pool) | read_json, 1 thread "
        "| confluent-kafka JSONDeserializer + from_pylist | compiled / json.loads | compiled / read_json "
        "| compiled / read_json 1 thread | compiled / confluent-kafka | peak compiled |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    if compiled:
        grow, payload = _rss_growth(rows)
        print(
            f"| {_rate(ours)} | {_rate(pure)} | {_rate(loads)} | {_rate(read_json)} | {_rate(read_json_1)} | {_rate(ck)} "
            f"| {ours / loads:,.0f}x | {ours / read_json:,.1f}x | {ours / read_json_1:,.1f}x | {ours / ck:,.0f}x "
            f"| {grow / payload:.2f}x payload |"
        )
    else:
        print(
            f"| n/a | {_rate(pure)} | {_rate(loads)} | {_rate(read_json)} | {_rate(read_json_1)} | {_rate(ck)} | | | | | |"
        )
    _encode_table(rows, peer_rows)


if __name__ == "__main__":
    main()
