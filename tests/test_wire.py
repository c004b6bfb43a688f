"""Wire prefixes: the spec's hex vectors, round trips, bulk behaviour and error reporting, on both twins."""

import dataclasses
import uuid
import zlib

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_codec import errors, wire
from pulsar_codec.errors import ErrorCode


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


# -- spec/wire-formats.md §11.3-11.5 -----------------------------------------------------------

CONFLUENT_VECTORS = [
    # (protocol, schema id, payload, framed bytes)
    (wire.CONFLUENT, 1, b"", h("00 00 00 00 01")),
    (wire.CONFLUENT, 1, h("02 03 04"), h("00 00 00 00 01 02 03 04")),
    (wire.CONFLUENT, 1, b'{"name": "John", "age": 30}', h("00 00 00 00 01") + b'{"name": "John", "age": 30}'),
    (wire.HORTONWORKS, 7, b"", h("03 00 00 00 07")),
    (wire.HORTONWORKS, 2**31, b"", h("02 00 00 00 00 80 00 00 00")),
    (wire.HORTONWORKS, 7, b"hi", h("03 00 00 00 07 68 69")),
    (wire.APICURIO, 3, b"", h("00 00 00 00 00 00 00 00 03")),
    (wire.APICURIO_V3, 3, b"", h("00 00 00 00 03")),
]


@pytest.mark.parametrize("protocol, schema_id, payload, framed", CONFLUENT_VECTORS)
def test_spec_vectors_pack_and_unpack(backend, protocol, schema_id, payload, framed):
    assert protocol.pack(schema_id, payload) == framed
    got_id, got_payload = protocol.unpack(framed)
    assert got_id == schema_id
    assert bytes(got_payload) == payload


def test_protobuf_index_vectors(backend):
    framed = wire.CONFLUENT_PROTOBUF.pack(1, b"", message_indexes=[1, 2, 3])
    assert framed == h("00 00 00 00 01 06 02 04 06")
    assert wire.CONFLUENT_PROTOBUF.unpack_indexes(framed) == (1, [1, 2, 3], memoryview(b""))
    # [0] is written as the single byte 00, and 00 reads back as [0]
    assert wire.encode_message_indexes([0]) == h("00")
    assert wire.CONFLUENT_PROTOBUF.pack(1, b"x") == h("00 00 00 00 01 00") + b"x"
    schema_id, indexes, payload = wire.CONFLUENT_PROTOBUF.unpack_indexes(h("00 00 00 00 01 00 78"))
    assert (schema_id, indexes, bytes(payload)) == (1, [0], b"x")


GUID = uuid.UUID("89791762-2336-4186-9674-299b90a802e2")
GUID_BYTES = h("01 89 79 17 62 23 36 41 86 96 74 29 9B 90 A8 02 E2")


def test_guid_vectors(backend):
    assert wire.CONFLUENT_GUID.pack(GUID, b"") == GUID_BYTES
    got, payload = wire.CONFLUENT_GUID.unpack(GUID_BYTES)
    assert got == GUID and bytes(payload) == b""
    with_indexes = GUID_BYTES + h("06 02 04 06")
    assert wire.CONFLUENT_GUID_PROTOBUF.pack(str(GUID), b"", message_indexes=[1, 2, 3]) == with_indexes
    assert wire.CONFLUENT_GUID_PROTOBUF.unpack_indexes(with_indexes)[:2] == (GUID, [1, 2, 3])


def test_hortonworks_reads_every_protocol(backend):
    assert wire.HORTONWORKS.unpack(h("01 00 00 00 00 00 00 00 05 00 00 00 02"))[0] == (5, 2)
    assert wire.HORTONWORKS.unpack(h("00 00 00 00 07 04 68 69"))[0] == 7
    assert bytes(wire.HORTONWORKS.unpack(h("00 00 00 00 07 04 68 69"))[1]) == h("04 68 69")
    assert wire.HORTONWORKS.unpack(h("02 00 00 00 00 80 00 00 00"))[0] == 2**31
    assert wire.HORTONWORKS.unpack(h("04 00 00 00 09") + b"{}")[0] == 9


def test_header_values(backend):
    # Hortonworks header mode: the header value is the prefix alone
    assert wire.HORTONWORKS.pack(7, b"") == h("03 00 00 00 07")
    assert wire.apicurio_header_value(3) == h("00 00 00 00 00 00 00 03")
    assert wire.apicurio_header_id(h("00 00 00 00 00 00 00 03")) == 3
    with pytest.raises(
        errors.WireFormatError, match=r"^Apicurio id header value of 2 bytes, expected 8 \(message 0, byte 0\)$"
    ):
        wire.apicurio_header_id(h("00 03"))
    with pytest.raises(errors.WireFormatError, match="of 9 bytes"):
        wire.apicurio_header_id(h("00 00 00 00 00 00 00 00 03"))


def test_pulsar_schema_id_magic():
    # §11.1 K5, K6 and SchemaIdUtil's lenient strip
    assert wire.pulsar_schema_id(h("02 03 07 08")) == h("FF 02 03 07 08")
    assert wire.pulsar_schema_id(h("01 02 03")) == h("FF 01 02 03")
    assert wire.pulsar_schema_id(h("01 02 03"), keyvalue=True) == h("FE 01 02 03")
    assert wire.pulsar_schema_id(b"") is None and wire.pulsar_schema_id(None) is None
    assert wire.strip_pulsar_schema_id(h("FF 01 02 03")) == h("01 02 03")
    assert wire.strip_pulsar_schema_id(h("FE 01 02 03")) == h("01 02 03")
    assert wire.strip_pulsar_schema_id(h("01 02 03")) == h("01 02 03")
    assert wire.strip_pulsar_schema_id(b"") is None and wire.strip_pulsar_schema_id(None) is None
    assert wire.is_keyvalue_schema_id(h("FE 00")) and not wire.is_keyvalue_schema_id(h("FF 00"))
    kv = h("FE 00 00 00 07 05 06 07 08 00 00 02 00 00 00 04 02 03 07 08")  # K3
    ids, is_kv = wire.strip_pulsar_schema_ids([kv, h("FF 02 03 07 08"), h("01 02"), None, b""])
    assert ids.to_pylist() == [kv[1:], h("02 03 07 08"), h("01 02"), None, None]
    assert is_kv.to_pylist() == [True, False, False, None, None]


# -- bulk ---------------------------------------------------------------------------------------


def test_unframe_bulk_nulls_and_zero_copy(backend):
    messages = pa.array([h("00 00 00 00 01") + b"x" * 40, None, h("00 00 00 00 02") + b"ab", h("00 00 00 00 03")])
    framed = wire.unframe(messages, wire.CONFLUENT)
    assert framed.schema_ids.type == pa.int64()
    assert framed.schema_ids.to_pylist() == [1, None, 2, 3]
    assert framed.payloads.to_pylist() == [b"x" * 40, None, b"ab", b""]
    framed.payloads.validate(full=True)
    # the long payload points into the input's own data buffer
    assert framed.payloads.buffers()[2].address == messages.buffers()[2].address


@pytest.mark.parametrize("make", ["list", "binary", "large", "chunked", "sliced", "string"])
def test_unframe_accepts_every_input_shape(backend, make):
    raw = [wire.CONFLUENT.pack(i, bytes([i]) * i) for i in range(20)]
    if make == "list":
        messages, expect = raw, list(range(20))
    elif make == "binary":
        messages, expect = pa.array(raw, pa.binary()), list(range(20))
    elif make == "large":
        messages, expect = pa.array(raw, pa.large_binary()), list(range(20))
    elif make == "chunked":
        messages, expect = pa.chunked_array([raw[:7], [], raw[7:]], pa.binary()), list(range(20))
    elif make == "sliced":
        messages, expect = pa.array(raw, pa.binary()).slice(5, 10), list(range(5, 15))
    else:
        texts = [wire.CONFLUENT.pack(i, b"a" * i) for i in range(20)]
        messages, expect = pa.array([t.decode() for t in texts], pa.string()), list(range(20))
    framed = wire.unframe(messages, "confluent")
    assert framed.schema_ids.to_pylist() == expect
    framed.payloads.validate(full=True)
    assert len(framed) == len(expect)


def test_unframe_empty_and_all_null(backend):
    assert len(wire.unframe([], wire.CONFLUENT)) == 0
    framed = wire.unframe([None, None], wire.HORTONWORKS)
    assert framed.schema_ids.to_pylist() == [None, None]
    assert framed.payloads.to_pylist() == [None, None]


def test_hortonworks_protocol_one_gives_struct_ids(backend):
    messages = [h("01 00 00 00 00 00 00 00 05 00 00 00 02") + b"a", h("03 00 00 00 07") + b"b", None]
    framed = wire.unframe(messages, wire.HORTONWORKS)
    assert framed.schema_ids.to_pylist() == [
        {"metadata_id": 5, "version": 2, "version_id": None},
        {"metadata_id": None, "version": None, "version_id": 7},
        None,
    ]
    assert framed.protocols.to_pylist() == [1, 3, None]
    assert framed.payloads.to_pylist() == [b"a", b"b", None]


def test_protobuf_bulk_indexes(backend):
    messages = [
        wire.CONFLUENT_PROTOBUF.pack(1, b"p", message_indexes=[1, 2, 3]),
        None,
        wire.CONFLUENT_PROTOBUF.pack(2, b"q"),
    ]
    framed = wire.unframe(messages, wire.CONFLUENT_PROTOBUF)
    assert framed.message_indexes.to_pylist() == [[1, 2, 3], None, [0]]
    assert framed.payloads.to_pylist() == [b"p", None, b"q"]


def test_frame_bulk(backend):
    out = wire.frame(pa.array([b"a", None, b"bc"]), [1, None, 3], wire.CONFLUENT)
    assert out.type == pa.binary()
    assert out.to_pylist() == [h("00 00 00 00 01 61"), None, h("00 00 00 00 03 62 63")]
    assert wire.frame([b"a", b"b"], 9, wire.APICURIO_V3).to_pylist() == [
        h("00 00 00 00 09 61"),
        h("00 00 00 00 09 62"),
    ]
    guids = wire.frame([b"", b"z"], [GUID, GUID.bytes], wire.CONFLUENT_GUID)
    assert guids.to_pylist() == [GUID_BYTES, GUID_BYTES + b"z"]


def test_frame_rejects_bad_ids(backend):
    with pytest.raises(errors.EncodeError, match="does not fit"):
        wire.frame([b"a"], [2**32], wire.CONFLUENT)
    with pytest.raises(errors.EncodeError, match="negative"):
        wire.frame([b"a"], [-1], wire.HORTONWORKS)
    with pytest.raises(errors.EncodeError, match="null"):
        wire.frame([b"a"], [None], wire.CONFLUENT)
    with pytest.raises(errors.EncodeError, match="2 schema ids for 1"):
        wire.frame([b"a"], [1, 2], wire.CONFLUENT)
    with pytest.raises(errors.EncodeError, match="message-index"):
        wire.frame([b"a"], 1, wire.CONFLUENT, message_indexes=[1])
    with pytest.raises(errors.EncodeError):
        wire.frame([b"a"], ["not a guid"], wire.CONFLUENT_GUID)


def test_protocol_lookup():
    assert wire.protocol_by_name("hortonworks") is wire.HORTONWORKS
    assert wire.protocol_by_name("confluent-protobuf") is wire.CONFLUENT_PROTOBUF
    with pytest.raises(ValueError, match="unknown protocol"):
        wire.protocol_by_name("avro-single-object")
    with pytest.raises(TypeError):
        wire.unframe(b"\x00\x00\x00\x00\x01", wire.CONFLUENT)
    with pytest.raises(TypeError):
        wire.unframe(pa.array([1, 2]), wire.CONFLUENT)


# -- errors -------------------------------------------------------------------------------------

ERROR_CASES = [
    # (protocol, messages, class, code, index, offset)
    (
        wire.CONFLUENT,
        [h("00 00 00 00 01"), h("07 00 00 00 01")],
        errors.WireFormatError,
        ErrorCode.WIRE_BAD_MAGIC,
        1,
        0,
    ),
    (wire.CONFLUENT, [h("00 00 00")], errors.WireFormatError, ErrorCode.WIRE_SHORT_PREFIX, 0, 3),
    (wire.CONFLUENT, [None, b""], errors.WireFormatError, ErrorCode.WIRE_EMPTY, 1, 0),
    (wire.CONFLUENT_GUID, [h("00 00 00 00 01")], errors.WireFormatError, ErrorCode.WIRE_BAD_MAGIC, 0, 0),
    (wire.CONFLUENT_GUID, [h("01 00 00")], errors.WireFormatError, ErrorCode.WIRE_SHORT_PREFIX, 0, 3),
    (wire.HORTONWORKS, [h("05 00 00 00 01")], errors.WireFormatError, ErrorCode.WIRE_UNKNOWN_PROTOCOL, 0, 0),
    (
        wire.HORTONWORKS,
        [h("01 00 00 00 00 00 00 00 05 00 00")],
        errors.WireFormatError,
        ErrorCode.WIRE_SHORT_PREFIX,
        0,
        11,
    ),
    (wire.HORTONWORKS, [h("02 00 00 00 00")], errors.WireFormatError, ErrorCode.WIRE_SHORT_PREFIX, 0, 5),
    (wire.APICURIO, [h("00 00 00 00 00 01")], errors.WireFormatError, ErrorCode.WIRE_SHORT_PREFIX, 0, 6),
    (wire.APICURIO_V3, [h("01 00 00 00 00 01")], errors.WireFormatError, ErrorCode.WIRE_BAD_MAGIC, 0, 0),
    # AWS Glue: header version, then the 18-byte header, then the compression byte
    (wire.AWS_GLUE, [h("01 00") + bytes(16)], errors.WireFormatError, ErrorCode.WIRE_BAD_MAGIC, 0, 0),
    (wire.AWS_GLUE, [None, h("03 05 00 00 00")], errors.WireFormatError, ErrorCode.WIRE_SHORT_PREFIX, 1, 5),
    (wire.AWS_GLUE, [h("03 07") + bytes(16)], errors.WireFormatError, ErrorCode.WIRE_UNKNOWN_COMPRESSION, 0, 1),
    (wire.AWS_GLUE, [b""], errors.WireFormatError, ErrorCode.WIRE_EMPTY, 0, 0),
    # message-index arrays
    (wire.CONFLUENT_PROTOBUF, [h("00 00 00 00 01")], errors.WireFormatError, ErrorCode.WIRE_TRUNCATED_INDEXES, 0, 5),
    (wire.CONFLUENT_PROTOBUF, [h("00 00 00 00 01 01")], errors.WireFormatError, ErrorCode.WIRE_INDEX_COUNT, 0, 5),
    (wire.CONFLUENT_PROTOBUF, [h("00 00 00 00 01 c2 9a 0c")], errors.WireFormatError, ErrorCode.WIRE_INDEX_COUNT, 0, 5),
    (
        wire.CONFLUENT_PROTOBUF,
        [h("00 00 00 00 01 04 02")],
        errors.WireFormatError,
        ErrorCode.WIRE_TRUNCATED_INDEXES,
        0,
        7,
    ),
    (
        wire.CONFLUENT_PROTOBUF,
        [h("00 00 00 00 01 02 ff ff ff ff ff ff ff ff ff ff 01")],
        errors.WireFormatError,
        ErrorCode.WIRE_VARINT_TOO_LONG,
        0,
        6,
    ),
]


@pytest.mark.parametrize("protocol, messages, cls, code, index, offset", ERROR_CASES)
def test_errors_carry_index_and_offset(backend, protocol, messages, cls, code, index, offset):
    with pytest.raises(cls) as info:
        wire.unframe(messages, protocol)
    exc = info.value
    assert (exc.code, exc.index, exc.offset) == (code, index, offset)
    assert str(exc).endswith(f"(message {index}, byte {offset})")


def test_error_index_counts_across_chunks(backend):
    good = wire.CONFLUENT.pack(1, b"a")
    messages = pa.chunked_array([[good, good], [good, b"\x09bad!"]], pa.binary())
    with pytest.raises(errors.WireFormatError) as info:
        wire.unframe(messages, wire.CONFLUENT)
    assert info.value.index == 3
    assert "invalid magic byte 0x09, expected 0x00 (message 3, byte 0)" == str(info.value)


# -- properties ---------------------------------------------------------------------------------

PLAIN = [wire.CONFLUENT, wire.HORTONWORKS, wire.APICURIO, wire.APICURIO_V3, wire.CONFLUENT_PROTOBUF]
ID_RANGES = {
    "CONFLUENT": (0, 2**32 - 1),
    "CONFLUENT_PROTOBUF": (0, 2**32 - 1),
    "HORTONWORKS": (0, 2**63 - 1),
    "APICURIO": (-(2**63), 2**63 - 1),
    "APICURIO_V3": (-(2**31), 2**31 - 1),
}


@st.composite
def framed_batches(draw):
    protocol = draw(st.sampled_from(PLAIN))
    lo, hi = ID_RANGES[protocol.name]
    rows = draw(st.lists(st.one_of(st.none(), st.tuples(st.integers(lo, hi), st.binary(max_size=40))), max_size=30))
    return protocol, rows


@settings(max_examples=150, deadline=None)
@given(framed_batches())
def test_frame_unframe_round_trip(batch):
    from pulsar_codec._kernels import _backend

    protocol, rows = batch
    payloads = [None if r is None else r[1] for r in rows]
    ids = [None if r is None else r[0] for r in rows]
    for name in ("python", "cython") if _backend.compiled_available() else ("python",):
        with _backend.use(name):
            messages = wire.frame(payloads, ids, protocol)
            framed = wire.unframe(messages, protocol)
            assert framed.schema_ids.to_pylist() == ids
            assert framed.payloads.to_pylist() == payloads
            for i, row in enumerate(rows):
                if row is not None:
                    assert protocol.pack(row[0], row[1]) == messages[i].as_py()
                    got_id, got = protocol.unpack(messages[i].as_py())
                    assert (got_id, bytes(got)) == row


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=8), st.binary(max_size=10))
def test_message_indexes_round_trip(backend, indexes, payload):
    framed = wire.CONFLUENT_PROTOBUF.pack(5, payload, message_indexes=indexes)
    schema_id, got, rest = wire.CONFLUENT_PROTOBUF.unpack_indexes(framed)
    assert (schema_id, got, bytes(rest)) == (5, indexes, payload)


def _outcome(fn):
    try:
        framed = fn()
    except errors.DecodeError as exc:
        return ("error", type(exc), exc.code, exc.index, exc.offset, str(exc))
    return (
        "ok",
        framed.schema_ids.to_pylist(),
        framed.payloads.to_pylist(),
        None if framed.message_indexes is None else framed.message_indexes.to_pylist(),
        None if framed.protocols is None else framed.protocols.to_pylist(),
    )


ALL = list(wire.PROTOCOLS.values())


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(ALL),
    st.lists(st.one_of(st.none(), st.binary(max_size=24)), max_size=12),
    st.data(),
)
def test_twins_agree_on_random_and_mutated_bytes(both_backends, protocol, rows, data):
    from pulsar_codec._kernels import _backend

    # mix in valid frames, then mutate a byte or truncate, so both error and success paths run
    if rows and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(rows) - 1))
        lo, hi = ID_RANGES.get(protocol.name, (0, 2**32 - 1))
        sid = data.draw(st.integers(max(lo, 0), min(hi, 2**31 - 1)))
        if getattr(protocol, "guid", False):
            sid = uuid.UUID(int=sid)
        good = protocol.pack(sid, rows[i] or b"")
        if data.draw(st.booleans()) and good:
            pos = data.draw(st.integers(0, len(good) - 1))
            good = good[:pos] + bytes([data.draw(st.integers(0, 255))]) + good[pos + 1 :]
        if data.draw(st.booleans()):
            good = good[: data.draw(st.integers(0, len(good)))]
        rows[i] = good
    outcomes = []
    for backend in both_backends:
        with _backend.use(backend.name):
            outcomes.append(_outcome(lambda: wire.unframe(rows, protocol)))
    assert outcomes[0] == outcomes[1]


def test_large_offsets_split_into_addressable_pieces(backend, monkeypatch):
    # Views address data with 32-bit offsets; shrink the limit to exercise the split cheaply.
    from pulsar_codec import _arrow

    monkeypatch.setattr(_arrow, "VIEW_LIMIT", 64)
    payloads = [bytes([i]) * 30 for i in range(10)]
    messages = pa.array([wire.CONFLUENT.pack(i, p) for i, p in enumerate(payloads)], pa.large_binary())
    framed = wire.unframe(messages, wire.CONFLUENT)
    assert framed.payloads.to_pylist() == payloads
    assert len(framed.payloads.buffers()) > 3  # several variadic data buffers
    assert wire.frame(payloads, list(range(10)), wire.CONFLUENT).to_pylist() == messages.to_pylist()


def test_unpack_returns_view_into_message(backend):
    message = bytearray(wire.CONFLUENT.pack(4, b"payload"))
    _, view = wire.CONFLUENT.unpack(message)
    assert isinstance(view, memoryview) and bytes(view) == b"payload"
    assert np.shares_memory(np.frombuffer(view, np.uint8), np.frombuffer(message, np.uint8))


# -- AWS Glue Schema Registry --------------------------------------------------------------------

GLUE_ID = uuid.UUID("89791762-2336-4186-9674-299b90a802e2")
GLUE_HEADER = h("03 00 89 79 17 62 23 36 41 86 96 74 29 9B 90 A8 02 E2")
GLUE_ZLIB_HEADER = h("03 05 89 79 17 62 23 36 41 86 96 74 29 9B 90 A8 02 E2")
HELLO10 = b"hello" * 10
# zlib.compress(b"hello" * 10) at the default level, as java.util.zip.Deflater() writes it (a zlib
# stream: 78 9c header, Adler-32 trailer)
HELLO10_ZLIB = h("78 9c cb 48 cd c9 c9 cf 20 85 00 00 11 6a 14 c9")


def test_glue_vectors(backend):
    assert wire.AWS_GLUE.pack(GLUE_ID, b"hi") == GLUE_HEADER + b"hi"
    assert wire.AWS_GLUE.pack(str(GLUE_ID), HELLO10, compression="zlib") == GLUE_ZLIB_HEADER + HELLO10_ZLIB
    got, body = wire.AWS_GLUE.unpack(GLUE_HEADER + b"hi")
    assert (got, bytes(body)) == (GLUE_ID, b"hi")
    got, body = wire.AWS_GLUE.unpack(GLUE_ZLIB_HEADER + HELLO10_ZLIB)
    assert (got, bytes(body)) == (GLUE_ID, HELLO10)
    # data after the end of the zlib stream is ignored, as Java's Inflater stops at the stream's end
    assert bytes(wire.AWS_GLUE.unpack(GLUE_ZLIB_HEADER + HELLO10_ZLIB + b"junk")[1]) == HELLO10
    assert wire.protocol_by_name("aws-glue") is wire.AWS_GLUE
    assert wire.AWS_GLUE.unpack(GLUE_HEADER)[1].nbytes == 0


def test_glue_bulk_inflates_compressed_rows_only(backend):
    long_plain = b"p" * 40
    messages = pa.array(
        [GLUE_HEADER + long_plain, None, GLUE_ZLIB_HEADER + HELLO10_ZLIB, GLUE_ZLIB_HEADER + zlib.compress(b"ab")]
    )
    framed = wire.unframe(messages, wire.AWS_GLUE)
    assert framed.schema_ids.type == pa.binary(16)
    assert framed.schema_ids.to_pylist() == [GLUE_ID.bytes, None, GLUE_ID.bytes, GLUE_ID.bytes]
    assert framed.payloads.to_pylist() == [long_plain, None, HELLO10, b"ab"]
    assert framed.protocols.to_pylist() == [0, None, 5, 5]
    framed.payloads.validate(full=True)
    # the uncompressed payload is still a view of the input; the inflated one lives in a new buffer
    assert framed.payloads.buffers()[2].address == messages.buffers()[2].address
    assert len(framed.payloads.buffers()) == 4


def test_glue_frame_round_trip_and_errors(backend):
    payloads = [b"a" * 30, None, b""]
    for compression in (None, "none", "zlib"):
        out = wire.frame(payloads, GLUE_ID, wire.AWS_GLUE, compression=compression)
        assert out[1].as_py() is None
        assert out[0].as_py()[1] == (5 if compression == "zlib" else 0)
        assert wire.unframe(out, "aws-glue").payloads.to_pylist() == payloads
    with pytest.raises(errors.EncodeError, match="CONFLUENT has no compression byte"):
        wire.frame([b"a"], 1, wire.CONFLUENT, compression="zlib")
    with pytest.raises(errors.EncodeError, match="unknown compression 'gzip'"):
        wire.frame([b"a"], GLUE_ID, wire.AWS_GLUE, compression="gzip")
    with pytest.raises(errors.EncodeError, match="GUID"):
        wire.frame([b"a"], 7, wire.AWS_GLUE)
    with pytest.raises(ValueError, match="max_inflated"):
        dataclasses.replace(wire.AWS_GLUE, max_inflated=-1)


def test_glue_error_texts(backend):
    with pytest.raises(errors.WireFormatError) as info:
        wire.unframe([GLUE_HEADER, h("03 07") + bytes(16)], wire.AWS_GLUE)
    assert str(info.value) == (
        "unknown AWS_GLUE compression byte 0x07, expected 0x00 (none) or 0x05 (zlib) (message 1, byte 1)"
    )
    with pytest.raises(errors.WireFormatError) as info:
        wire.unframe([h("00") + GLUE_HEADER[1:]], wire.AWS_GLUE)
    assert str(info.value) == "invalid magic byte 0x00, expected 0x03 (message 0, byte 0)"


def test_glue_decompression_errors(backend):
    bad = GLUE_ZLIB_HEADER + b"not zlib at all"
    truncated = GLUE_ZLIB_HEADER + HELLO10_ZLIB[:-3]
    for message, reason in ((bad, "zlib: Error -3"), (truncated, "truncated")):
        with pytest.raises(errors.WireFormatError) as info:
            wire.unframe([GLUE_HEADER, message], wire.AWS_GLUE)
        exc = info.value
        assert (exc.code, exc.index, exc.offset) == (ErrorCode.WIRE_DECOMPRESSION_FAILED, 1, 18)
        assert str(exc).startswith("AWS_GLUE payload does not decompress: ") and reason in str(exc)
    small = dataclasses.replace(wire.AWS_GLUE, max_inflated=49)
    with pytest.raises(errors.WireFormatError, match="more than max_inflated=49 bytes") as info:
        small.unpack(GLUE_ZLIB_HEADER + HELLO10_ZLIB)
    assert info.value.code == ErrorCode.WIRE_DECOMPRESSION_FAILED
    assert bytes(dataclasses.replace(wire.AWS_GLUE, max_inflated=50).unpack(GLUE_ZLIB_HEADER + HELLO10_ZLIB)[1]) == (
        HELLO10
    )


def test_glue_first_bad_message_wins(backend):
    bad_body = GLUE_ZLIB_HEADER + b"\x00\x01"
    bad_prefix = h("03 09") + bytes(16)
    with pytest.raises(errors.WireFormatError) as info:
        wire.unframe([GLUE_HEADER, bad_body, bad_prefix], wire.AWS_GLUE)
    assert (info.value.index, info.value.code) == (1, ErrorCode.WIRE_DECOMPRESSION_FAILED)
    with pytest.raises(errors.WireFormatError) as info:
        wire.unframe([bad_prefix, bad_body], wire.AWS_GLUE)
    assert (info.value.index, info.value.code) == (0, ErrorCode.WIRE_UNKNOWN_COMPRESSION)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.binary(max_size=60)), max_size=20),
    st.lists(st.booleans(), min_size=20, max_size=20),
    st.lists(st.uuids(), min_size=20, max_size=20),
)
def test_glue_round_trip_on_both_twins(payloads, compressed, ids):
    from pulsar_codec._kernels import _backend

    ids = ids[: len(payloads)]
    expected = [None if p is None else i.bytes for p, i in zip(payloads, ids)]
    outcomes = []
    for name in ("python", "cython") if _backend.compiled_available() else ("python",):
        with _backend.use(name):
            plain = wire.frame(payloads, ids, wire.AWS_GLUE).to_pylist()
            packed = wire.frame(payloads, ids, wire.AWS_GLUE, compression="zlib").to_pylist()
            messages = [z if c else p for p, z, c in zip(plain, packed, compressed)]
            framed = wire.unframe(messages, wire.AWS_GLUE)
            framed.payloads.validate(full=True)
            assert framed.payloads.to_pylist() == payloads
            assert framed.schema_ids.to_pylist() == expected
            outcomes.append((messages, framed.protocols.to_pylist()))
    assert all(o == outcomes[0] for o in outcomes)


# -- AWS Glue through pc.decode ------------------------------------------------------------------

GLUE_SCHEMA = {"type": "record", "name": "User", "fields": [{"name": "id", "type": "int"}]}


def _glue_user(i: int, compression: str | None = None) -> bytes:
    from test_avro_support import encode

    return wire.AWS_GLUE.pack(GLUE_ID, encode(GLUE_SCHEMA, [{"id": i}])[0], compression=compression)


def test_glue_decode_end_to_end(backend):
    import pulsar_codec as pc

    messages = [_glue_user(1), _glue_user(2, "zlib"), None, _glue_user(3)]
    asked = []

    class Client:
        def get_schema(self, schema_id):
            asked.append(schema_id)
            return GLUE_SCHEMA if schema_id == GLUE_ID else None

    batch = pc.decode(messages, Client(), protocol=wire.AWS_GLUE)
    assert batch.column("id").to_pylist() == [1, 2, None, 3]
    assert asked == [GLUE_ID]
    # a Mapping keyed by the UUID's canonical text works too; so does the single-id fast path
    assert pc.decode([_glue_user(5), _glue_user(6)], {str(GLUE_ID): GLUE_SCHEMA}, protocol="aws-glue").column(
        "id"
    ).to_pylist() == [5, 6]


def test_glue_decode_keeps_going_past_a_bad_body(backend):
    import pulsar_codec as pc

    bad = GLUE_ZLIB_HEADER + b"garbage"
    messages = [_glue_user(1, "zlib"), bad, _glue_user(3), h("03 07") + bytes(16)]
    with pytest.raises(errors.WireFormatError) as info:
        pc.decode(messages, {GLUE_ID: GLUE_SCHEMA}, protocol=wire.AWS_GLUE)
    assert (info.value.index, info.value.code) == (1, ErrorCode.WIRE_DECOMPRESSION_FAILED)
    batch, errs = pc.decode(messages, {GLUE_ID: GLUE_SCHEMA}, protocol=wire.AWS_GLUE, on_error="null")
    assert batch.column("id").to_pylist() == [1, None, 3, None]
    assert errs.column("index").to_pylist() == [1, 3]
    assert errs.column("code").to_pylist() == [ErrorCode.WIRE_DECOMPRESSION_FAILED, ErrorCode.WIRE_UNKNOWN_COMPRESSION]
    assert errs.column("offset").to_pylist() == [18, 1]
    assert errs.column("message")[0].as_py().startswith("AWS_GLUE payload does not decompress: zlib: ")


# -- PIP-420 ids in bulk: mixed shapes (regression: pyarrow's binary_slice failed on b"" next to FF) --


def test_strip_pulsar_schema_ids_mixes_empty_and_lone_magic(backend):
    ids, is_kv = wire.strip_pulsar_schema_ids([b"", h("FF")])
    assert ids.to_pylist() == [None, b""]
    assert is_kv.to_pylist() == [None, False]
    ids, is_kv = wire.strip_pulsar_schema_ids(pa.chunked_array([[h("FE"), None], [b"", h("FF 01")]], pa.binary()))
    assert ids.to_pylist() == [b"", None, None, h("01")]
    assert is_kv.to_pylist() == [True, None, None, False]
    assert wire.strip_pulsar_schema_ids([])[0].to_pylist() == []


_ID_SHAPES = st.one_of(
    st.none(),
    st.just(b""),
    st.sampled_from([h("FF"), h("FE")]),
    st.tuples(st.sampled_from([b"\xff", b"\xfe", b"\x00", b"\x01"]), st.binary(max_size=12)).map(lambda t: t[0] + t[1]),
    st.binary(max_size=6),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ID_SHAPES, max_size=25), st.sampled_from([pa.binary(), pa.large_binary()]))
def test_strip_pulsar_schema_ids_twins_agree_with_the_scalar_form(both_backends, values, typ):
    from pulsar_codec._kernels import _backend

    expected_ids = [wire.strip_pulsar_schema_id(v) if v else None for v in values]
    expected_kv = [wire.is_keyvalue_schema_id(v) if v else None for v in values]
    for backend in both_backends:
        with _backend.use(backend.name):
            ids, is_kv = wire.strip_pulsar_schema_ids(pa.array(values, typ))
            ids.validate(full=True)
            assert ids.type == pa.binary()
            assert ids.to_pylist() == expected_ids
            assert is_kv.to_pylist() == expected_kv


def test_pack_names_a_payload_of_the_wrong_type():
    with pytest.raises(TypeError, match="payload must be bytes, bytearray or memoryview, not str"):
        wire.CONFLUENT.pack(1, "x")  # type: ignore[arg-type]
    assert wire.CONFLUENT.pack(1, memoryview(b"x")) == b"\x00\x00\x00\x00\x01x"
