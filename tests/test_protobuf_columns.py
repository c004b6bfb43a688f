"""The Protobuf kernel's ``decode``: payloads read straight into the Avro column builders.

The compiled twin appends each value to the builders as it reads it, and gives the rows one pass
cannot settle (a value met twice, merges, oneof switches, repeated map keys, a missing required
field, anything malformed) to its general path, which transcodes them for the Avro interpreter; the
pure twin transcodes every payload and runs the Avro kernel on the bytes. Both must give the same
columns and the same errors, which these tests check on hand-picked payloads (field order, rows the
one pass gives up, a bad row in the middle of a batch, messages of more than 64 fields, big maps)
and, with hypothesis, on random messages of a schema with every kind of field: reordered,
concatenated (merged), mutated byte by byte, with null rows and several segments.
"""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protobuf_fixtures import FORMAT, canonical_rows, compile_proto, expected_rows, layout, message_class
from pulsar_codec._kernels import _backend
from pulsar_codec._kernels.defs import PROTO_MISSING_REQUIRED, PROTO_TRUNCATED, PROTO_WRONG_WIRE_TYPE
from pulsar_codec.formats.avro._assemble import assemble
from pulsar_codec.formats.avro.format import kernel_layout
from pulsar_codec.formats.protobuf._finish import finish_batch
from pulsar_codec.formats.protobuf.format import ProtobufFormat
from test_protobuf_kernel import _reordered, ld, tag, varint
from test_protobuf_mapping import P2, REC, RICH, rich_messages


def program_of(kernels, plan, bound=True):
    return kernels.protobuf.Program(plan.mapping.program, plan.avro.program if bound else None)


def columns(kernels, plan, payloads, keep_going=True, validity=None, cuts=()):
    """Run ``decode`` on ``payloads`` (split into segments at ``cuts``); (errors, batch, bug)."""
    segments, bounds = [], [0, *cuts, len(payloads)]
    for a, b in zip(bounds, bounds[1:]):
        data, starts, ends = bytearray(b"#"), [], []
        for p in payloads[a:b]:
            starts.append(len(data))
            data += p
            ends.append(len(data))
            data += b"\x85"  # bytes outside a row must never be read (this one would continue a varint)
        valid = None if validity is None else np.array(validity[a:b], dtype=bool)
        segments.append((bytes(data), np.array(starts, np.int64), np.array(ends, np.int64), valid))
    return _decode_segments(kernels, plan, segments, keep_going)


def _decode_segments(kernels, plan, segments, keep_going=True):
    """``decode`` of ready-made segments; (errors, batch, bug)."""
    errors, outputs, bug = kernels.protobuf.decode(
        program_of(kernels, plan),
        kernel_layout(plan.layout.avro, kernels.avro),
        kernels.avro.Program(*plan.avro.program),
        segments,
        keep_going,
        None,
    )
    return [tuple(int(x) for x in e) for e in errors], assemble(plan.layout.avro, outputs), bug


def agree(both_backends, plan, payloads, **kw):
    """Both twins' results, checked equal; the compiled twin's."""
    compiled, pure = (columns(b, plan, payloads, **kw) for b in both_backends)
    assert compiled[0] == pure[0]
    assert compiled[1].equals(pure[1]), (compiled[1].to_pylist(), pure[1].to_pylist())
    assert compiled[2] is None and pure[2] is None
    return compiled


def as_runtime_reads(plan, Msg, payloads, batch):
    """The decoded rows (finished: enums, Struct text) equal what the runtime reads from the payloads."""
    got = finish_batch(plan.layout, batch).to_pylist()
    want = expected_rows([Msg.FromString(p) for p in payloads], plan.arrow_schema)
    assert canonical_rows(got, plan.arrow_schema) == canonical_rows(want, plan.arrow_schema)


@pytest.fixture(scope="module")
def rich():
    pool = compile_proto(RICH, "rich.proto")
    desc = pool.FindMessageTypeByName("rich.Rich")
    return FORMAT.plan(desc, desc), message_class(pool, "rich.Rich")


ORDER = """
syntax = "proto3";
package order;
message Customer { string name = 1; int32 tier = 2; }
message Order {
  int64 id = 1;
  Customer customer = 2;
  repeated string tags = 3;
  map<string, string> attrs = 4;
  optional string note = 7;
  repeated int64 item_ids = 11;
  oneof pay { string card = 12; int64 account = 13; }
  map<int32, Customer> by_id = 14;
}
"""


@pytest.fixture(scope="module")
def order():
    pool = compile_proto(ORDER, "order.proto")
    desc = pool.FindMessageTypeByName("order.Order")
    return FORMAT.plan(desc, desc), message_class(pool, "order.Order")


# -- hand-picked ----------------------------------------------------------------------------------------


def test_decode_is_one_pass_and_needs_the_avro_program(both_backends, rich, order):
    compiled, _ = both_backends
    for plan, _ in (rich, order):  # every field of these schemas has its one-pass form
        assert program_of(compiled, plan).direct
    plan, _ = order
    for kernels in both_backends:
        with pytest.raises(ValueError, match="Avro program"):
            kernels.protobuf.decode(
                program_of(kernels, plan, bound=False),
                kernel_layout(plan.layout.avro, kernels.avro),
                kernels.avro.Program(*plan.avro.program),
                [],
                True,
            )
        with pytest.raises(ValueError, match="Avro program"):
            kernels.protobuf.Program(plan.mapping.program, [])
        with pytest.raises(ValueError, match="no ops"):
            kernels.protobuf.Program(plan.mapping.program, ((), ()))


def test_fields_in_any_order_and_interleaved_items(both_backends, order):
    plan, Order = order
    m = Order(id=7, tags=["a", "b", "c"], item_ids=[1, 2**40], note="n", card="visa")
    m.customer.name, m.customer.tier = "x", 2
    m.attrs["k"], m.attrs["j"] = "v", "w"
    m.by_id[3].name = "three"
    plain = m.SerializeToString(deterministic=True)
    # the same fields last first, then the repeated items spread between other fields
    mixed = tag(3, 2) + varint(1) + b"a" + tag(1, 0) + varint(7) + tag(3, 2) + varint(1) + b"b"
    mixed += ld(11, varint(1)) + ld(2, ld(1, b"x") + tag(2, 0) + varint(2)) + tag(3, 2) + varint(1) + b"c"
    mixed += ld(11, varint(2**40)) + ld(4, ld(1, b"j") + ld(2, b"w")) + ld(7, b"n") + ld(12, b"visa")
    mixed += ld(14, tag(1, 0) + varint(3) + ld(2, ld(1, b"three"))) + ld(4, ld(1, b"k") + ld(2, b"v"))
    payloads = [plain, _reordered(plain), mixed, b""]
    errors, batch, _ = agree(both_backends, plan, payloads)
    assert errors == []
    as_runtime_reads(plan, Order, payloads, batch)
    rows = batch.to_pylist()
    assert rows[0] == rows[2] and rows[0]["tags"] == ["a", "b", "c"] and rows[1]["tags"] == ["c", "b", "a"]
    assert rows[3]["id"] == 0 and rows[3]["customer"] is None and rows[3]["pay_case"] is None


def test_rows_the_one_pass_gives_up(both_backends, order):
    plan, Order = order
    base = tag(1, 0) + varint(5) + ld(2, ld(1, b"x"))
    payloads = [
        base + tag(1, 0) + varint(6),  # last value wins
        base + ld(2, tag(2, 0) + varint(9)),  # two occurrences of a message: merged
        ld(12, b"visa") + tag(13, 0) + varint(4),  # a oneof switching member
        ld(4, ld(1, b"k") + ld(2, b"1")) + ld(4, ld(1, b"j")) + ld(4, ld(1, b"k") + ld(2, b"2")),  # a key again
        b"".join(ld(14, tag(1, 0) + varint(k % 20) + ld(2, ld(1, str(k).encode()))) for k in range(30)),  # big map
        b"".join(ld(4, ld(1, str(k).encode()) + ld(2, b"v")) for k in range(40)),  # a big map of distinct keys
        base + tag(99, 3) + tag(1, 0) + varint(1) + tag(99, 4) + tag(98, 5) + b"\x00" * 4,  # unknown group, fixed32
        base,
    ]
    errors, batch, _ = agree(both_backends, plan, payloads)
    assert errors == []
    as_runtime_reads(plan, Order, payloads, batch)


def test_a_bad_row_leaves_nothing_behind(both_backends, order):
    plan, Order = order
    good = Order(id=1, tags=["t"], item_ids=[3])
    good.customer.name = "c"
    good.attrs["a"] = "b"
    ok = good.SerializeToString()
    payloads = [
        ok,
        ok + ld(3, b"late") + tag(11, 0),  # lists written, then a truncated item
        ok + tag(1, 2),  # a known field with the wrong wire type, at the end
        ld(2, ld(1, b"deep") + tag(2, 0)),  # truncated inside the nested message
        ok,
    ]
    errors, batch, _ = agree(both_backends, plan, payloads)
    assert [(e[0], e[1]) for e in errors] == [
        (PROTO_TRUNCATED, 1),
        (PROTO_WRONG_WIRE_TYPE, 2),
        (PROTO_TRUNCATED, 3),
    ]
    rows = batch.to_pylist()
    assert all(v is None for i in (1, 2, 3) for v in rows[i].values())
    assert rows[4] == rows[0] and rows[4]["tags"] == ["t"] and rows[4]["attrs"] == [("a", "b")]
    errors, batch, _ = agree(both_backends, plan, payloads, keep_going=False)
    assert [e[1] for e in errors] == [1] and batch.num_rows == 1


def test_proto2_defaults_and_required_fields(both_backends):
    pool = compile_proto(P2, "p2.proto")
    desc = pool.FindMessageTypeByName("p2.P2")
    plan, Msg = FORMAT.plan(desc, desc), message_class(pool, "p2.P2")
    full = Msg(id=1, a=2, s="s", k=1, nums=[1, 2], packed=[3])
    full.leaf.x = 4
    payloads = [Msg(id=5).SerializeToString(), full.SerializeToString(), tag(2, 0) + varint(1)]
    errors, batch, _ = agree(both_backends, plan, payloads)
    assert [(e[0], e[1]) for e in errors] == [(PROTO_MISSING_REQUIRED, 2)]
    as_runtime_reads(plan, Msg, payloads[:2], batch.slice(0, 2))


def test_messages_of_more_than_64_fields(both_backends):
    # past 64 fields the kernel keeps one bit per field on its stack instead of one word
    fields = "\n".join(f"  int32 f{i} = {i + 1};" for i in range(70))
    pool = compile_proto(f'syntax = "proto3"; package wide;\nmessage W {{\n{fields}\n  repeated string s = 99;\n}}')
    desc = pool.FindMessageTypeByName("wide.W")
    plan, W = FORMAT.plan(desc, desc), message_class(pool, "wide.W")
    m = W(s=["a", "b"], **{f"f{i}": i for i in range(1, 70, 2)})
    plain = m.SerializeToString()
    payloads = [plain, _reordered(plain), plain + tag(68, 0) + varint(5), W(f69=1).SerializeToString()]
    errors, batch, _ = agree(both_backends, plan, payloads)
    assert errors == []
    as_runtime_reads(plan, W, payloads, batch)


def test_recursion_cut_into_bytes(both_backends):
    pool = compile_proto(REC, "rec.proto")
    desc = pool.FindMessageTypeByName("rec.Node")
    plan, Node = ProtobufFormat(max_depth=2).plan(desc, desc), message_class(pool, "rec.Node")
    n = Node(v=1)
    n.next.next.next.v = 4
    n.kids.add(v=5).kids.add(v=6)
    payloads = [n.SerializeToString(), Node().SerializeToString()]
    errors, batch, _ = agree(both_backends, plan, payloads)
    assert errors == [] and batch.to_pylist()[0]["next"]["next"] == n.next.next.SerializeToString()


def test_null_rows_and_segments(both_backends, order):
    plan, Order = order
    payloads = [Order(id=i, tags=["x"] * i).SerializeToString() for i in range(6)]
    validity = [True, False, True, True, False, True]
    errors, batch, _ = agree(both_backends, plan, payloads, validity=validity, cuts=(2, 2, 5))
    assert errors == []
    assert [r["id"] for r in batch.to_pylist()] == [0, None, 2, 3, None, 5]


@pytest.mark.parametrize("offsets_type", [np.int64, np.int32])
def test_offsets_and_a_prefix_size(both_backends, order, offsets_type):
    """Rows given as offsets and the prefix size every row skips (the one-id fast path's form) read
    as the same rows given by their starts and ends; rows outside the data are the caller's bug."""
    plan, Order = order
    prefix = b"\x00\x00\x00\x00\x07\x02\x02"
    payloads = [Order(id=i, tags=["x"] * i, card="c" * i).SerializeToString() for i in range(5)]
    framed = [prefix + p for p in payloads]
    offsets = np.cumsum([0] + [len(m) for m in framed]).astype(offsets_type)
    data = b"".join(framed)
    validity = np.array([True, True, False, True, True])
    for kernels in both_backends:
        got = _decode_segments(kernels, plan, [(data, len(prefix), offsets, validity)])
        starts = offsets[:-1].astype(np.int64) + len(prefix)
        want = _decode_segments(kernels, plan, [(data, starts, offsets[1:].astype(np.int64), validity)])
        assert got[0] == want[0] == [] and got[1].equals(want[1])
        assert [r and r["id"] for r in got[1].to_pylist()] == [0, 1, None, 3, 4]
        with pytest.raises(ValueError, match=r"row 4 \[\d+, \d+\) is outside the data"):
            _decode_segments(kernels, plan, [(data[:-3], len(prefix), offsets, validity)])
        with pytest.raises(ValueError, match="row 0"):  # a prefix longer than the message
            _decode_segments(kernels, plan, [(data, len(framed[0]) + 1, offsets, None)])
        with pytest.raises(ValueError, match="at least one entry"):
            _decode_segments(kernels, plan, [(data, 0, np.zeros(0, np.int64), None)])


# -- hypothesis -----------------------------------------------------------------------------------------


def mutate(data, payload, rng):
    """``payload`` with a few random edits (cut, byte set, bit flip, bytes or a varint inserted)."""
    out = bytearray(payload)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(out)))
        kind = data.draw(st.integers(0, 4))
        if kind == 0:
            del out[at:]
        elif kind == 1 and at < len(out):
            out[at] = data.draw(st.integers(0, 255))
        elif kind == 2 and at < len(out):
            out[at] ^= 1 << rng.randrange(8)
        elif kind == 3:
            out[at:at] = data.draw(st.binary(min_size=1, max_size=3))
        else:
            out[at:at] = varint(data.draw(st.integers(0, 2**64 - 1)))
    return bytes(out)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_twins_agree_on_random_messages(both_backends, rich, data):
    plan, Msg = rich
    messages = data.draw(st.lists(rich_messages(Msg), min_size=1, max_size=4))
    payloads = []
    for m in messages:
        payload = m.SerializeToString()
        shape = data.draw(st.integers(0, 2))
        if shape == 1:
            payload = _reordered(payload)
        elif shape == 2:  # another message after it: the runtime merges them
            payload += data.draw(rich_messages(Msg)).SerializeToString()
        payloads.append(payload)
    errors, batch, _ = agree(both_backends, plan, payloads)
    assert errors == []
    as_runtime_reads(plan, Msg, payloads, batch)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_twins_agree_on_mutations_null_rows_and_segments(both_backends, rich, data, seed):
    plan, Msg = rich
    rng = random.Random(seed)
    payloads = [m.SerializeToString() for m in data.draw(st.lists(rich_messages(Msg), min_size=1, max_size=4))]
    payloads = [mutate(data, p, rng) if data.draw(st.booleans()) else p for p in payloads]
    validity = data.draw(st.none() | st.lists(st.booleans(), min_size=len(payloads), max_size=len(payloads)))
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(payloads)), max_size=2))))
    agree(both_backends, plan, payloads, keep_going=data.draw(st.booleans()), validity=validity, cuts=tuple(cuts))


def test_whole_batches_through_the_format_equal_across_twins(both_backends, order):
    # the format's decode (its kernel calls, error words and enum / Struct finish) on both twins
    plan, Order = order
    rng = random.Random(3)
    payloads = []
    for i in range(300):
        m = Order(id=i, tags=[str(rng.randrange(9)) for _ in range(rng.randrange(3))], item_ids=[i, -i])
        for k in range(rng.randrange(3)):
            m.attrs[f"k{k}"] = "v"
        if i % 3:
            m.card = "c"
        payloads.append(m.SerializeToString())
    payloads[17] = payloads[17][:-1] + b"\xff"
    got = []
    for kernels in both_backends:
        with _backend.use(kernels.name):
            got.append(FORMAT.decode([plan], [layout(payloads)], True))
    assert got[0][0].equals(got[1][0]) and got[0][1] == got[1][1]
    assert [e[1] for e in got[0][1]] == [17]
