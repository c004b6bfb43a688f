"""MessageDecoder(threads=N): the same output as one thread, errors included, on every path."""

from __future__ import annotations

import functools
import json
import random

import pyarrow as pa
import pytest

from pulsar_codec import wire
from pulsar_codec.errors import DecodeError
from pulsar_codec.pipeline import Decoded, MessageDecoder
from pulsar_codec.pipeline.decoder import MIN_ROWS_PER_THREAD
from test_avro_support import encode

V1 = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}
V2 = {**V1, "fields": [*V1["fields"], {"name": "qty", "type": "int", "default": 1}]}
REGISTRY = {1: json.dumps(V1), 2: json.dumps(V2)}
ROWS = 3 * MIN_ROWS_PER_THREAD + 123


@functools.cache
def _corpus(bad_every: int | None, mixed: bool, nulls: bool) -> list[bytes | None]:
    rng = random.Random(5)
    out: list[bytes | None] = []
    for i in range(ROWS):
        if nulls and i % 997 == 0:
            out.append(None)
            continue
        schema_id = 2 if mixed and i % 3 == 0 else 1
        record = {"id": i, "tags": ["a"] * rng.randrange(3), "status": rng.choice(["NEW", "PAID"]), "note": None}
        if schema_id == 2:
            record["qty"] = i % 7
        body = encode(V2 if schema_id == 2 else V1, [record])[0]
        if bad_every and i % bad_every == 17:
            body = body[:1]  # truncated
        out.append(wire.CONFLUENT.pack(schema_id, body))
    return out


@pytest.mark.parametrize("mixed", [False, True], ids=["one-id", "two-ids"])
@pytest.mark.parametrize("bad_every", [None, 5000], ids=["clean", "bad-rows"])
def test_threads_give_the_one_thread_output(backend, mixed, bad_every):
    messages = pa.array(_corpus(bad_every, mixed, nulls=True), pa.binary())
    one = MessageDecoder(REGISTRY, on_error="null").decode(messages)
    assert isinstance(one, Decoded)
    for threads in (2, 3, 0):
        many = MessageDecoder(REGISTRY, on_error="null", threads=threads).decode(messages)
        assert many.batch.equals(one.batch)
        assert many.errors.equals(one.errors)
    assert one.batch.num_rows == ROWS


def test_threads_raise_the_first_bad_row(backend):
    messages = list(_corpus(5000, mixed=True, nulls=False))
    with pytest.raises(DecodeError) as single:
        MessageDecoder(REGISTRY).decode(messages)
    with pytest.raises(DecodeError) as threaded:
        MessageDecoder(REGISTRY, threads=3).decode(messages)
    assert (threaded.value.code, threaded.value.index, threaded.value.offset) == (
        single.value.code,
        single.value.index,
        single.value.offset,
    )
    assert str(threaded.value) == str(single.value)


def test_threads_across_chunks(backend):
    corpus = _corpus(None, mixed=True, nulls=True)
    cut = [0, 1000, MIN_ROWS_PER_THREAD + 5, 2 * MIN_ROWS_PER_THREAD, ROWS]
    chunked = pa.chunked_array([pa.array(corpus[a:b], pa.binary()) for a, b in zip(cut, cut[1:])])
    one = MessageDecoder(REGISTRY).decode(chunked)
    assert MessageDecoder(REGISTRY, threads=2).decode(chunked).equals(one)
    assert (
        MessageDecoder(REGISTRY, threads=4)
        .decode_payloads(
            pa.array([m[5:] if m else None for m in corpus], pa.binary()), [2 if i % 3 == 0 else 1 for i in range(ROWS)]
        )
        .equals(
            MessageDecoder(REGISTRY).decode_payloads(
                pa.array([m[5:] if m else None for m in corpus], pa.binary()),
                [2 if i % 3 == 0 else 1 for i in range(ROWS)],
            )
        )
    )


def test_threads_argument():
    with pytest.raises(ValueError, match="threads"):
        MessageDecoder(REGISTRY, threads=-1)
    assert MessageDecoder(REGISTRY, threads=0).threads >= 1


def test_the_threads_decode_with_the_callers_backend(backend, monkeypatch):
    """A backend chosen for this thread (``_backend.use``, as the twin tests do) is the one the
    decoder's threads run: a split batch never tests the other twin."""
    from pulsar_codec._kernels import _backend
    from pulsar_codec.formats import get_format

    avro = get_format("AVRO")
    seen: list[str] = []
    original = avro.decode

    def recording(*args, **kwargs):
        seen.append(_backend.active().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(avro, "decode", recording)
    MessageDecoder(REGISTRY, on_error="null", threads=3).decode(pa.array(_corpus(None, True, False), pa.binary()))
    assert len(seen) == 3 and set(seen) == {backend.name}
