"""Both twins on mutated batches: nulls, truncations, flipped, inserted and random bytes in the middle
of a batch, chunked inputs, both on_error modes. Same batch, or the same error, from both."""

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_codec import avro
from pulsar_codec._kernels import _backend
from pulsar_codec.errors import AvroDecodeError, PulsarCodecError
from test_avro_support import encode, same_batch, schemas, values


def _outcome(decoder, bodies, on_error):
    try:
        return "ok", decoder.decode(bodies, on_error=on_error)
    except PulsarCodecError as exc:
        assert isinstance(exc, AvroDecodeError), exc
        return "err", (type(exc), exc.code, exc.index, exc.offset, exc.detail, str(exc))


_MUTATIONS = ["keep", "keep", "none", "truncate", "flip", "insert", "random"]


@settings(max_examples=300)
@given(st.data())
def test_twins_agree_on_mutated_batches(both_backends, data):
    schema = data.draw(schemas())
    records = data.draw(st.lists(values(schema), min_size=1, max_size=12))
    mutated = []
    for body in encode(schema, records):
        op = data.draw(st.sampled_from(_MUTATIONS))
        if op == "none":
            body = None
        elif op == "truncate" and body:
            body = body[: data.draw(st.integers(0, len(body) - 1))]
        elif op == "flip" and body:
            i = data.draw(st.integers(0, len(body) - 1))
            body = body[:i] + bytes([data.draw(st.integers(0, 255))]) + body[i + 1 :]
        elif op == "insert":
            i = data.draw(st.integers(0, len(body)))
            body = body[:i] + data.draw(st.binary(min_size=1, max_size=3)) + body[i:]
        elif op == "random":
            body = data.draw(st.binary(max_size=30))
        mutated.append(body)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(mutated)), max_size=3)))
    parts, lo = [], 0
    for cut in cuts + [len(mutated)]:
        parts.append(pa.array(mutated[lo:cut], pa.binary()))
        lo = cut
    bodies = pa.chunked_array(parts, pa.binary()) if data.draw(st.booleans()) else mutated
    decoder = avro.Decoder(schema)
    for on_error in ("raise", "null"):
        with _backend.use("cython"):
            compiled = _outcome(decoder, bodies, on_error)
        with _backend.use("python"):
            pure = _outcome(decoder, bodies, on_error)
        assert compiled[0] == pure[0]
        if compiled[0] == "err":
            assert compiled[1] == pure[1]
        elif on_error == "null":
            assert same_batch(compiled[1].batch, pure[1].batch)
            assert compiled[1].errors.equals(pure[1].errors)
            compiled[1].batch.validate()
        else:
            assert same_batch(compiled[1], pure[1])
            compiled[1].validate()
