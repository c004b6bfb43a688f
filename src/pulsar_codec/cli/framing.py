"""``pulsar-codec demo --framing-only``: the framing and KeyValue codecs on generated payloads."""

from __future__ import annotations

import random
import time

from ._console import EXIT_FAILED, EXIT_OK, rate, say

__all__ = ["demo_framing"]


def demo_framing(rows: int, seed: int) -> int:
    """Frame and unframe a generated sample with every registry protocol, split KeyValue payloads,
    and show how a corrupt message is reported; returns the exit code."""
    import pyarrow as pa

    import pulsar_codec as pc

    from .. import keyvalue, wire
    from ..errors import DecodeError

    rng = random.Random(seed)
    say(f"pulsar_codec {pc.__version__}, kernels: {pc.BACKEND}")
    payloads = pa.array([rng.randbytes(rng.randint(8, 120)) for _ in range(rows)], pa.binary())
    ids = pa.array([rng.choice((1, 2, 3)) for _ in range(rows)], pa.int64())
    say(f"generated {rows:,} payloads ({payloads.nbytes / 1e6:.1f} MB) for schema ids 1-3")

    for protocol in (wire.CONFLUENT, wire.HORTONWORKS, wire.APICURIO, wire.APICURIO_V3, wire.CONFLUENT_PROTOBUF):
        t0 = time.perf_counter()
        messages = wire.frame(payloads, ids, protocol)
        t1 = time.perf_counter()
        framed = wire.unframe(messages, protocol)
        t2 = time.perf_counter()
        same = framed.payloads.cast(pa.binary()).equals(payloads) and framed.schema_ids.equals(ids)
        say(
            f"  {protocol.name:20s} frame {rate(rows, t1 - t0):>16s}   unframe {rate(rows, t2 - t1):>16s}"
            f"   round trip {'ok' if same else 'MISMATCH'}"
        )
        if not same:
            return EXIT_FAILED

    keys = pa.array([None if i % 10 == 0 else f"key-{i}".encode() for i in range(rows)], pa.binary())
    t0 = time.perf_counter()
    inline = keyvalue.join_inline(keys, payloads)
    t1 = time.perf_counter()
    got_keys, got_values = keyvalue.split_inline(inline)
    t2 = time.perf_counter()
    same = got_keys.equals(keys) and got_values.equals(payloads)
    say(
        f"  {'KeyValue INLINE':20s} join  {rate(rows, t1 - t0):>16s}   split   {rate(rows, t2 - t1):>16s}"
        f"   round trip {'ok' if same else 'MISMATCH'}  ({keys.null_count:,} null keys kept)"
    )
    if not same:
        return EXIT_FAILED

    kv_id = keyvalue.pack_schema_id(b"\x00\x00\x00\x01", b"\x00\x00\x00\x02")
    on_wire = wire.pulsar_schema_id(kv_id, keyvalue=True)
    assert on_wire is not None  # only an empty id has no PIP-420 form
    say(f"  PIP-420 KeyValue schema id for key id 1 / value id 2: {on_wire.hex(' ')}")

    corrupt = wire.frame(payloads[:5], ids[:5], wire.CONFLUENT).to_pylist()
    corrupt[3] = b"\x07" + corrupt[3][1:]
    try:
        wire.unframe(corrupt, wire.CONFLUENT)
    except DecodeError as exc:
        say(f"  a corrupt message is reported, not skipped: {type(exc).__name__}: {exc}")
    else:
        say("  corrupt message was not detected")
        return EXIT_FAILED
    return EXIT_OK
