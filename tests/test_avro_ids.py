"""pc.decode with every id form (ints, GUIDs, Hortonworks (metadata_id, version) tuples), its
single-id fast path (the Avro kernel skips a fixed-size prefix itself), and the wire kernel's
``distinct_ids`` twin parity."""

from __future__ import annotations

import struct
import uuid

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pulsar_codec as pc
from pulsar_codec import _unframe, wire
from pulsar_codec.errors import ErrorCode, SchemaNotFoundError, WireFormatError
from test_avro_support import encode

V1 = {"type": "record", "name": "User", "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}]}
V2 = {
    "type": "record",
    "name": "User",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "email", "type": ["null", "string"], "default": None},
    ],
}
G1 = uuid.UUID("0b2d8a8e-6f1c-4b8e-9b7a-1c2d3e4f5a6b")
G2 = uuid.UUID("ffffffff-0000-4000-8000-000000000001")


def body(schema, record):
    return encode(schema, [record])[0]


class Client:
    """A registry client that records what it was asked for."""

    def __init__(self, schemas):
        self.schemas = schemas
        self.calls = []

    def get_schema(self, schema_id):
        self.calls.append(schema_id)
        return self.schemas.get(schema_id)


def test_guid_ids_are_looked_up_as_uuids(backend):
    msgs = [wire.CONFLUENT_GUID.pack(G1, body(V1, {"id": i, "name": f"n{i}"})) for i in range(3)] + [None]
    client = Client({G1: V1})
    batch = pc.decode(msgs, client, protocol=wire.CONFLUENT_GUID)
    assert batch.column("id").to_pylist() == [0, 1, 2, None]
    assert client.calls == [G1] and isinstance(client.calls[0], uuid.UUID)
    # a mapping keyed by the GUID's string form works too
    assert pc.decode(msgs, {str(G1): V1}, protocol="confluent-guid").column("name").to_pylist() == [
        "n0",
        "n1",
        "n2",
        None,
    ]
    with pytest.raises(SchemaNotFoundError, match=str(G1)):
        pc.decode(msgs, {G2: V1}, protocol=wire.CONFLUENT_GUID)


def test_mixed_guids_keep_input_order(backend):
    msgs = [
        wire.CONFLUENT_GUID.pack(G2, body(V2, {"id": 7, "name": "b", "email": "b@x"})),
        wire.CONFLUENT_GUID.pack(G1, body(V1, {"id": 1, "name": "a"})),
        None,
        wire.CONFLUENT_GUID.pack(G2, body(V2, {"id": 8, "name": "c", "email": None})),
    ]
    client = Client({G1: V1, G2: V2})
    batch = pc.decode(msgs, client, protocol=wire.CONFLUENT_GUID, reader_schema=V2)
    assert batch.to_pylist() == [
        {"id": 7, "name": "b", "email": "b@x"},
        {"id": 1, "name": "a", "email": None},
        {"id": None, "name": None, "email": None},
        {"id": 8, "name": "c", "email": None},
    ]
    assert sorted(client.calls) == sorted([G1, G2])


def hortonworks_v1(metadata_id, version, payload):
    return b"\x01" + struct.pack(">qi", metadata_id, version) + payload


def test_hortonworks_protocol_1_ids_are_tuples(backend):
    msgs = [
        hortonworks_v1(10, 1, body(V1, {"id": 1, "name": "a"})),
        wire.HORTONWORKS.pack(99, body(V2, {"id": 2, "name": "b", "email": None})),
        None,
        hortonworks_v1(10, 2, body(V2, {"id": 3, "name": "c", "email": "c@x"})),
        hortonworks_v1(10, 1, body(V1, {"id": 4, "name": "d"})),
    ]
    client = Client({(10, 1): V1, (10, 2): V2, 99: V2})
    batch = pc.decode(msgs, client, protocol=wire.HORTONWORKS, reader_schema=V2)
    assert batch.column("id").to_pylist() == [1, 2, None, 3, 4]
    assert batch.column("email").to_pylist() == [None, None, None, "c@x", None]
    assert sorted(map(repr, client.calls)) == sorted(map(repr, [(10, 1), (10, 2), 99]))
    # protocol 3 only: plain integer version ids
    only3 = [wire.HORTONWORKS.pack(5, body(V1, {"id": i, "name": "x"})) for i in range(2)]
    assert pc.decode(only3, {5: V1}, protocol=wire.HORTONWORKS).column("id").to_pylist() == [0, 1]


def test_hortonworks_protocol_1_ids_with_an_integer_id_registry(backend, tmp_path):
    """This package's registries know integer ids (and GUIDs) only: a protocol-1 message is an
    error row saying so (a TypeError inside the client before), the others of the batch decode."""
    import json

    from pulsar_codec.registry import LocalRegistry

    with LocalRegistry(tmp_path / "r.db") as registry:
        schema_id = registry.register("users-value", json.dumps(V1))
        msgs = [
            hortonworks_v1(10, 1, body(V1, {"id": 1, "name": "a"})),
            wire.HORTONWORKS.pack(schema_id, body(V1, {"id": 2, "name": "b"})),
        ]
        batch, errors = pc.decode(msgs, registry, protocol=wire.HORTONWORKS, on_error="null")
        assert batch.column("id").to_pylist() == [None, 2]
        assert errors.column("code").to_pylist() == [ErrorCode.SCHEMA_NOT_FOUND]
        text = errors.column("message")[0].as_py()
        assert text.startswith("schema id (10, 1) is not in the registry: a Hortonworks protocol-1 id")
        assert "Mapping keyed by (metadata_id, version)" in text
        with pytest.raises(SchemaNotFoundError, match="protocol-1") as raised:
            pc.decode(msgs, registry, protocol=wire.HORTONWORKS)
        assert raised.value.index == 0


@pytest.mark.parametrize("protocol", [wire.CONFLUENT, wire.APICURIO, wire.APICURIO_V3, wire.CONFLUENT_GUID])
@pytest.mark.parametrize("arrow_type", [pa.binary(), pa.large_binary()])
def test_single_id_fast_path_matches_general_path(backend, protocol, arrow_type):
    sid = G1 if protocol is wire.CONFLUENT_GUID else 3
    records = [{"id": i, "name": "x" * (i % 7)} for i in range(50)]
    msgs = [None if i % 9 == 4 else protocol.pack(sid, body(V1, r)) for i, r in enumerate(records)]
    arr = pa.array(msgs, arrow_type)
    fast = pc.decode(arr, {sid: V1}, protocol=protocol)
    assert fast.column("id").to_pylist() == [None if m is None else r["id"] for m, r in zip(msgs, records)]
    # a sliced input (offsets not starting at 0) and a chunked one
    assert pc.decode(arr.slice(5, 30), {sid: V1}, protocol=protocol).equals(fast.slice(5, 30))
    chunked = pa.chunked_array([arr.slice(0, 20), arr.slice(20)])
    assert pc.decode(chunked, {sid: V1}, protocol=protocol).equals(fast)


def test_fast_path_errors_fall_back_to_the_general_path(backend):
    good = wire.CONFLUENT.pack(1, body(V1, {"id": 5, "name": "ok"}))
    # a bad Avro body with a valid prefix stays on the fast path: the error offset is still
    # counted from the start of the payload
    res = pc.decode([good, good[:-1], good], {1: V1}, on_error="null")
    assert res.batch.column("id").to_pylist() == [5, None, 5]
    err = res.errors.to_pylist()[0]
    assert err["index"] == 1 and err["code"] == ErrorCode.AVRO_LENGTH_PAST_END and err["offset"] == 1
    with pytest.raises(WireFormatError) as e:
        pc.decode([good, b"", good], {1: V1})
    assert e.value.index == 1 and e.value.code == ErrorCode.WIRE_EMPTY


def test_reader_defaults_to_the_highest_id(backend):
    msgs = [
        wire.CONFLUENT.pack(2, body(V2, {"id": 1, "name": "a", "email": "e"})),
        wire.CONFLUENT.pack(1, body(V1, {"id": 2, "name": "b"})),
    ]
    assert pc.decode(msgs, {1: V1, 2: V2}).schema.names == ["id", "name", "email"]


def test_a_defaulted_reader_says_so_in_the_rows_it_cannot_read(backend):
    """A topic of several record types read without a reader: the newest schema reads the batch,
    and the other type's rows say which schema that was and how to read them instead."""
    refund = {"type": "record", "name": "Refund", "fields": [{"name": "order", "type": "long"}]}
    msgs = [wire.CONFLUENT.pack(1, body(V1, {"id": 2, "name": "b"})), wire.CONFLUENT.pack(7, b"\x04")]
    batch, errors = pc.decode(msgs, {1: V1, 7: refund}, on_error="null")
    assert batch.column("order").to_pylist() == [None, 2]
    (text,) = errors.column("message").to_pylist()
    assert "the batch's newest schema, id 7, reads it; pass reader_schema= or reader_subject=" in text
    given = pc.decode(msgs, {1: V1, 7: refund}, reader_schema=V1, on_error="null").errors
    assert given.column("index").to_pylist() == [1]
    assert "no reader was given" not in given.column("message")[0].as_py()  # a reader given is not questioned


# -- distinct_ids: the two twins agree ---------------------------------------------------------------

_KINDS = [wire.CONFLUENT, wire.CONFLUENT_GUID, wire.APICURIO, wire.APICURIO_V3]


@st.composite
def framed_batches(draw):
    protocol = draw(st.sampled_from(_KINDS))
    n = draw(st.integers(0, 12))
    ids = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    msgs = []
    for i in ids:
        sid = uuid.UUID(int=i) if protocol is wire.CONFLUENT_GUID else i
        msg = protocol.pack(sid, b"\x02x")
        cut = draw(st.one_of(st.none(), st.integers(0, len(msg))))
        if cut is not None:  # sometimes truncate or corrupt the prefix
            msg = msg[:cut]
            if msg and draw(st.booleans()):
                msg = bytes([draw(st.integers(0, 255))]) + msg[1:]
        msgs.append(None if draw(st.integers(0, 9)) == 0 else msg)
    return protocol, msgs, draw(st.integers(1, 3))


@settings(max_examples=200, deadline=None)
@given(framed_batches())
def test_distinct_ids_twins_agree(both_backends, case):
    protocol, msgs, limit = case
    from pulsar_codec._arrow import binary_chunks

    compiled, pure = both_backends
    for native in (False, True):
        chunks, _ = binary_chunks(pa.array(msgs, pa.binary()), native_offsets=native)
        for c in chunks:
            got_c = compiled.wire.distinct_ids(c.data, c.offsets, c.validity, protocol.kind, limit)
            got_p = pure.wire.distinct_ids(c.data, c.offsets, c.validity, protocol.kind, limit)
            assert got_c == got_p
            # an error is the one unframe reports first
            full = pure.wire.unframe(c.data, c.offsets.astype(np.int64), c.validity, protocol.kind, 0)
            assert got_p[0] == full[0]


def test_distinct_ids_refuses_variable_prefixes(both_backends):
    for b in both_backends:
        with pytest.raises(ValueError):
            b.wire.distinct_ids(b"", np.zeros(1, np.int64), None, wire.HORTONWORKS.kind, 1)


def test_unframe_without_views(both_backends):
    msgs = pa.array([wire.CONFLUENT.pack(1, b"abc"), None], pa.binary())
    from pulsar_codec._arrow import binary_chunks

    (c,), _ = binary_chunks(msgs)
    for b in both_backends:
        with_views = b.wire.unframe(c.data, c.offsets, c.validity, wire.CONFLUENT.kind, 0)
        without = b.wire.unframe(c.data, c.offsets, c.validity, wire.CONFLUENT.kind, 0, False)
        assert without[8] is None and with_views[8] is not None
        assert np.array_equal(without[5], with_views[5]) and np.array_equal(without[1], with_views[1])


def test_pipeline_keys_for_the_registry():
    assert _unframe.registry_key(np.int64(7)) == 7 and type(_unframe.registry_key(np.int64(7))) is int
    assert _unframe.registry_key(G1.bytes) == G1


@st.composite
def prefixed_batches(draw):
    ref = draw(st.binary(max_size=3))
    at = draw(st.integers(0, 6))
    n = draw(st.integers(0, 8))
    msgs = []
    for _ in range(n):
        head = draw(st.binary(min_size=at, max_size=at))
        middle = ref if draw(st.integers(0, 3)) else draw(st.binary(max_size=3))
        msg = head + middle + draw(st.binary(max_size=3))
        if draw(st.integers(0, 5)) == 0:
            msg = msg[: draw(st.integers(0, len(msg)))]
        msgs.append(None if draw(st.integers(0, 7)) == 0 else msg)
    return msgs, at, ref


@settings(max_examples=200, deadline=None)
@given(prefixed_batches())
def test_same_bytes_twins_agree(both_backends, case):
    msgs, at, ref = case
    from pulsar_codec._arrow import binary_chunks

    want = all(m[at : at + len(ref)] == ref and len(m) >= at + len(ref) for m in msgs if m is not None)
    compiled, pure = both_backends
    for native in (False, True):
        chunks, _ = binary_chunks(pa.array(msgs, pa.binary()), native_offsets=native)
        for c in chunks:
            assert compiled.wire.same_bytes(c.data, c.offsets, c.validity, at, ref) == want
            assert pure.wire.same_bytes(c.data, c.offsets, c.validity, at, ref) == want
