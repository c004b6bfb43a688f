"""Protobuf payloads -> Arrow: pulsar_codec against the ways people decode Protobuf topics today.

One workload, a 12-field order message (a nested message, a repeated string, a packed repeated
int64, a map, an enum, a Timestamp, a proto3 ``optional`` string, numbers, a bool), registered as
``.proto`` text and Confluent-framed (``00`` + id + message-index path). Peers, on the same
payloads in one run (unframed for them: none reads the Confluent prefix with a registry):

* ``ParseFromString`` + ``MessageToDict`` per message + ``pa.Table.from_pylist`` (the usual recipe);
* protarrow: ``ParseFromString`` per message + ``protarrow.messages_to_record_batch``;
* ptars (Rust): ``HandlerPool([file]).get_for_message(descriptor).array_to_record_batch(payloads)``.

All use the protobuf runtime's message class built from the same descriptors (what generated code
gives). Also the pure twin, and peak memory (RSS growth during one compiled decode / payload bytes).

Encode, the other way: the decoded corpus (an Arrow RecordBatch) -> one payload per row with
``MessageEncoder.encode_payloads``. The Protobuf encoder writes a batch column by column (numpy
and Arrow compute, no kernel twins, so no pure column); its row path (each row's columns fill a
runtime message, serialized deterministically), which takes what the columnar path leaves, is
timed beside it. Peers, on the same orders:

* ``SerializeToString(deterministic=True)`` per message from ready-made message objects (the
  runtime's best case: building the messages is not counted) + ``pa.array``;
* ``ParseDict`` + ``SerializeToString(deterministic=True)`` per record from ready-made dicts (the
  ``MessageToDict`` form), what a producer starting from rows does + ``pa.array``.

The bench first checks that our payloads are byte for byte the runtime's for the corpus, so a
fast path that writes something else cannot be reported.

    python bench/bench_protobuf.py [--rows 200000] [--peer-rows 20000]   # one run, prints the tables
    pytest bench/bench_protobuf.py --benchmark-only --benchmark-group-by=group
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

import pulsar_codec as pc
from pulsar_codec import wire
from pulsar_codec._kernels import _backend
from pulsar_codec.formats.protobuf import ProtobufEncoder, parse

ORDER_PROTO = """
syntax = "proto3";
package shop.v1;

import "google/protobuf/timestamp.proto";

message Customer {
  string name = 1;
  int32 tier = 2;
}

message Order {
  enum Status {
    STATUS_UNSPECIFIED = 0;
    PENDING = 1;
    PAID = 2;
    SHIPPED = 3;
  }
  int64 id = 1;
  Customer customer = 2;
  repeated string tags = 3;
  map<string, string> attrs = 4;
  Status status = 5;
  google.protobuf.Timestamp created = 6;
  optional string note = 7;
  double amount = 8;
  int32 qty = 9;
  bool active = 10;
  repeated int64 item_ids = 11;
  float score = 12;
}
"""
SCHEMA_ID = 1
MODEL = parse(ORDER_PROTO, message="shop.v1.Order")
REGISTRY = {SCHEMA_ID: ORDER_PROTO}
_WORDS = ["red", "green", "blue", "north", "south", "fast", "slow", "new", "old", "big"]


def message_class() -> Any:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(MODEL.descriptor("shop.v1.Order"))


def bodies(rows: int, seed: int = 7) -> list[bytes]:
    """Serialized orders, as the runtime (and so every producer) writes them."""
    order = message_class()
    rng = random.Random(seed)
    out = []
    for i in range(rows):
        m = order(
            id=i,
            tags=rng.sample(_WORDS, rng.randrange(4)),
            status=rng.randrange(4),
            amount=round(rng.uniform(0, 1000), 2),
            qty=rng.randrange(1, 20),
            active=rng.random() < 0.5,
            item_ids=[rng.randrange(10**9) for _ in range(rng.randrange(4))],
            score=rng.random(),
        )
        m.customer.name = f"customer-{rng.randrange(10**6)}"
        m.customer.tier = rng.randrange(5)
        for j in range(rng.randrange(3)):
            m.attrs[f"k{j}"] = rng.choice(_WORDS)
        m.created.seconds = 1_767_225_600 + rng.randrange(10**7)
        m.created.nanos = rng.randrange(10**9)
        if rng.random() < 0.5:
            m.note = "leave at the door"
        out.append(m.SerializeToString(deterministic=True))
    return out


def corpus(rows: int) -> pa.Array:
    """Confluent-framed messages: ``00`` + id + the message-index path of Order (``[1]``) + payload."""
    path = MODEL.indexes_for("shop.v1.Order")
    return pa.array(
        [wire.CONFLUENT_PROTOBUF.pack(SCHEMA_ID, b, message_indexes=path) for b in bodies(rows)], pa.binary()
    )


def run_pulsar_codec(messages: pa.Array, backend: str) -> pa.RecordBatch:
    with _backend.use(backend):
        out: pa.RecordBatch = pc.decode(messages, REGISTRY, format="PROTOBUF")
    return out


def run_recipe(payloads: list[bytes]) -> pa.Table:
    from google.protobuf.json_format import MessageToDict

    order = message_class()
    return pa.Table.from_pylist(
        [MessageToDict(order.FromString(p), preserving_proto_field_name=True) for p in payloads]
    )


def run_protarrow(payloads: list[bytes]) -> pa.RecordBatch:
    import protarrow

    order = message_class()
    batch: pa.RecordBatch = protarrow.messages_to_record_batch([order.FromString(p) for p in payloads], order)
    return batch


def ptars_handler() -> Any:
    from ptars import HandlerPool

    descriptor = MODEL.descriptor("shop.v1.Order")
    return HandlerPool([descriptor.file]).get_for_message(descriptor)


def run_ptars(handler: Any, payloads: pa.Array) -> pa.RecordBatch:
    batch: pa.RecordBatch = handler.array_to_record_batch(payloads)
    return batch


# -- encode ------------------------------------------------------------------------------------------


def messages(rows: int) -> list[Any]:
    """The orders of :func:`bodies` as ready-made runtime messages."""
    order = message_class()
    return [order.FromString(b) for b in bodies(rows)]


def dicts(rows: int) -> list[dict[str, Any]]:
    """The orders as dicts in the protobuf JSON mapping (``MessageToDict``), what ``ParseDict`` reads."""
    from google.protobuf.json_format import MessageToDict

    return [MessageToDict(m, preserving_proto_field_name=True) for m in messages(rows)]


def encode_batch(rows: int) -> pa.RecordBatch:
    """The corpus decoded into Arrow: what our encoder starts from."""
    return run_pulsar_codec(corpus(rows), "cython" if _backend.compiled_available() else "python")


# one encoder, kept: it parses the writer schema and builds the message class once, as an
# application encoding batch after batch does
ENCODER = pc.MessageEncoder(
    REGISTRY, schema=ORDER_PROTO, schema_id=SCHEMA_ID, format="PROTOBUF", message="shop.v1.Order"
)


def run_encode(batch: pa.RecordBatch) -> pa.Array:
    """Payloads without the wire prefix: the bytes the runtime writes."""
    payloads: pa.Array = ENCODER.encode_payloads(batch)[1]
    return payloads


def run_encode_rows(batch: pa.RecordBatch) -> pa.Array:
    """The row path alone: one runtime message per row (what every batch took before the
    columnar path)."""
    payloads: pa.Array = ROW_ENCODER._by_rows(batch)
    return payloads


ROW_ENCODER = ProtobufEncoder(MODEL)


def run_serialize(msgs: list[Any]) -> pa.Array:
    return pa.array([m.SerializeToString(deterministic=True) for m in msgs], pa.binary())


def run_parse_dict(rows: list[dict[str, Any]]) -> pa.Array:
    from google.protobuf.json_format import ParseDict

    order = message_class()
    return pa.array([ParseDict(r, order()).SerializeToString(deterministic=True) for r in rows], pa.binary())


def check_encode(rows: int) -> None:
    """Our payloads, and the ParseDict recipe's, are the runtime's bytes for the first ``rows``
    orders: a wrong fast path fails here rather than being timed."""
    expected = bodies(rows)
    got = run_encode(encode_batch(rows)).to_pylist()
    bad = next((i for i, (g, e) in enumerate(zip(got, expected)) if g != e), None)
    assert len(got) == len(expected) and bad is None, f"row {bad}: {got[bad or 0]!r} != runtime {expected[bad or 0]!r}"
    assert run_encode_rows(encode_batch(rows)).to_pylist() == expected, "the row path differs from the runtime"
    assert run_serialize(messages(rows)).to_pylist() == expected, "SerializeToString differs from the corpus"
    assert run_parse_dict(dicts(rows)).to_pylist() == expected, "ParseDict + SerializeToString differs"


# -- pytest-benchmark ---------------------------------------------------------------------------------


@pytest.mark.parametrize("peer", ["cython", "python", "recipe", "protarrow", "ptars"])
def test_decode(benchmark: Any, peer: str) -> None:
    rows = 20_000 if peer in ("cython", "ptars") else 2_000
    if peer in ("cython", "python"):
        if peer == "cython" and not _backend.compiled_available():
            pytest.skip("compiled kernels unavailable")
        out = benchmark(run_pulsar_codec, corpus(rows), peer)
    elif peer == "recipe":
        out = benchmark(run_recipe, bodies(rows))
    elif peer == "protarrow":
        pytest.importorskip("protarrow")
        out = benchmark(run_protarrow, bodies(rows))
    else:
        pytest.importorskip("ptars")
        out = benchmark(run_ptars, ptars_handler(), pa.array(bodies(rows), pa.binary()))
    assert out.num_rows == rows


@pytest.mark.parametrize("peer", ["pulsar-codec", "serialize", "parse-dict"])
def test_encode(benchmark: Any, peer: str) -> None:
    rows = 20_000 if peer == "serialize" else 2_000
    benchmark.group = "protobuf-encode"
    benchmark.extra_info.update(rows=rows, peer=peer)
    if peer == "pulsar-codec":
        check_encode(500)
        out = benchmark(run_encode, encode_batch(rows))
    elif peer == "serialize":
        out = benchmark(run_serialize, messages(rows))
    else:
        out = benchmark(run_parse_dict, dicts(rows))
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
import bench_protobuf as b
msgs = b.corpus({rows})
payload = msgs.buffers()[2].size - 7 * len(msgs)
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
    """The encode table: our payloads against the runtime's SerializeToString and the ParseDict recipe."""
    check_encode(peer_rows)
    big, small = encode_batch(rows), encode_batch(peer_rows)
    big_msgs, small_dicts = messages(rows), dicts(peer_rows)
    run_encode(big)
    ours = rows / _best(lambda: run_encode(big), 5)
    by_rows = peer_rows / _best(lambda: run_encode_rows(small), 2)
    serialize = rows / _best(lambda: run_serialize(big_msgs), 5)
    parse_dict = peer_rows / _best(lambda: run_parse_dict(small_dicts), 2)
    print(
        "\nEncode, Arrow RecordBatch (the decoded corpus) -> Protobuf payloads, records/s, single thread, best of several "
        f"runs; ours (`MessageEncoder.encode_payloads`, column by column) and SerializeToString on {rows:,} rows "
        f"(SerializeToString from ready-made messages: building them is not counted), our row path alone and "
        f"ParseDict (from `MessageToDict` dicts) on {peer_rows:,}. All write `SerializeToString(deterministic=True)`; "
        "every payload was checked byte for byte against the runtime's first.\n"
    )
    print(
        "| ours | our row path | SerializeToString, ready-made messages | ParseDict + SerializeToString "
        "| ours / row path | ours / SerializeToString | ours / ParseDict |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {_rate(ours)} | {_rate(by_rows)} | {_rate(serialize)} | {_rate(parse_dict)} | {ours / by_rows:,.1f}x "
        f"| {ours / serialize:,.2f}x | {ours / parse_dict:,.1f}x |"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000, help="rows for the compiled twin, ptars and SerializeToString")
    ap.add_argument(
        "--peer-rows", type=int, default=20_000, help="rows for the other peers, our encoder and the pure twin"
    )
    args = ap.parse_args(argv)
    rows, peer_rows = args.rows, args.peer_rows
    big, small = corpus(rows), corpus(peer_rows)
    big_bodies, small_bodies = bodies(rows), bodies(peer_rows)
    compiled = _backend.compiled_available()
    if compiled:
        expected = run_pulsar_codec(small, "cython")
        assert expected.equals(run_pulsar_codec(small, "python")), "twins differ"
        run_pulsar_codec(big, "cython")
        ours = rows / _best(lambda: run_pulsar_codec(big, "cython"), 5)
    pure = peer_rows / _best(lambda: run_pulsar_codec(small, "python"), 2)
    recipe = peer_rows / _best(lambda: run_recipe(small_bodies), 2)
    protarrow_rate = peer_rows / _best(lambda: run_protarrow(small_bodies), 2)
    handler = ptars_handler()
    big_payloads = pa.array(big_bodies, pa.binary())
    run_ptars(handler, big_payloads)
    ptars_rate = rows / _best(lambda: run_ptars(handler, big_payloads), 5)
    print(
        "Records/s, 12-field order messages -> Arrow, single thread, best of several runs; compiled and ptars "
        f"on {rows:,} rows, the others on {peer_rows:,}. Peak = RSS growth during one compiled decode / payload bytes.\n"
    )
    print(
        "| compiled | pure | ParseFromString + MessageToDict + from_pylist | protarrow | ptars | compiled / recipe "
        "| compiled / protarrow | compiled / ptars | peak compiled |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    if compiled:
        grow, payload = _rss_growth(rows)
        print(
            f"| {_rate(ours)} | {_rate(pure)} | {_rate(recipe)} | {_rate(protarrow_rate)} | {_rate(ptars_rate)} "
            f"| {ours / recipe:,.0f}x | {ours / protarrow_rate:,.1f}x | {ours / ptars_rate:,.2f}x "
            f"| {grow / payload:.2f}x payload |"
        )
    else:
        print(f"| n/a | {_rate(pure)} | {_rate(recipe)} | {_rate(protarrow_rate)} | {_rate(ptars_rate)} | | | | |")
    _encode_table(rows, peer_rows)


if __name__ == "__main__":
    main()
