"""Pulsar KeyValue payloads (INLINE, SEPARATED) and PIP-420 KeyValue schema ids, on both twins.

Covers every KeyValue vector of spec §11.1, the error codes with their index and offset, the
Java/C++ conventions, hypothesis round trips per value and in bulk, bulk == per value, parity of
the twins on random and mutated bytes, nulls, sliced / chunked / empty inputs and Base64 keys.
"""

import base64
import struct

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_codec import keyvalue, wire
from pulsar_codec import pulsar_types as pt
from pulsar_codec._kernels import _backend
from pulsar_codec.errors import EncodeError, ErrorCode, KeyValueFormatError

H = bytes.fromhex
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

parts = st.one_of(st.none(), st.binary(max_size=40))
payload_lists = st.lists(st.tuples(parts, parts), max_size=30)


def inline(key, value):
    """Reference INLINE encoder written straight from the spec layout (Java convention)."""
    out = b""
    for p in (key, value):
        out += b"\xff\xff\xff\xff" if p is None else struct.pack(">i", len(p)) + p
    return out


# -- spec §11.1 vectors -------------------------------------------------------------------------

K1_KEY, K1_VALUE = H("00 04 03 04 08"), H("01 02 03 04 05")
K1 = H("00 00 00 05 00 04 03 04 08 00 00 00 05 01 02 03 04 05")
K2 = H("00 00 00 07 05 06 07 08 00 00 02 00 00 00 04 02 03 07 08")
MOCK_KEY_ID, MOCK_VALUE_ID = H("05 06 07 08 00 00 02"), H("02 03 07 08")


def test_k1_inline(backend):
    assert keyvalue.encode_inline(K1_KEY, K1_VALUE) == K1
    assert keyvalue.decode_inline(K1) == (K1_KEY, K1_VALUE)
    keys, values = keyvalue.split_inline([K1])
    assert keys.to_pylist() == [K1_KEY] and values.to_pylist() == [K1_VALUE]
    assert keyvalue.join_inline([K1_KEY], [K1_VALUE]).to_pylist() == [K1]


def test_k2_schema_id(backend):
    assert keyvalue.pack_schema_id(MOCK_KEY_ID, MOCK_VALUE_ID) == K2
    assert keyvalue.unpack_schema_id(K2) == (MOCK_KEY_ID, MOCK_VALUE_ID)
    assert keyvalue.pack_schema_ids([MOCK_KEY_ID], [MOCK_VALUE_ID]).to_pylist() == [K2]
    k, v = keyvalue.unpack_schema_ids([K2])
    assert (k.to_pylist(), v.to_pylist()) == ([MOCK_KEY_ID], [MOCK_VALUE_ID])


def test_k3_on_the_wire():
    on_wire = H("FE 00 00 00 07 05 06 07 08 00 00 02 00 00 00 04 02 03 07 08")
    assert wire.pulsar_schema_id(keyvalue.pack_schema_id(MOCK_KEY_ID, MOCK_VALUE_ID), keyvalue=True) == on_wire
    assert keyvalue.unpack_schema_id(wire.strip_pulsar_schema_id(on_wire)) == (MOCK_KEY_ID, MOCK_VALUE_ID)


def test_k4_absent_key_id(backend):
    k4 = H("00 00 00 00 00 00 00 04 02 03 07 08")
    assert keyvalue.pack_schema_id(b"", MOCK_VALUE_ID) == k4
    assert keyvalue.pack_schema_id(None, MOCK_VALUE_ID) == k4
    assert keyvalue.unpack_schema_id(k4) == (None, MOCK_VALUE_ID)
    assert keyvalue.pack_schema_ids([None, b""], [MOCK_VALUE_ID, MOCK_VALUE_ID]).to_pylist() == [k4, k4]
    k, v = keyvalue.unpack_schema_ids([k4])
    assert (k.to_pylist(), v.to_pylist()) == ([None], [MOCK_VALUE_ID])


def test_k5_k6_magic_bytes():
    assert wire.pulsar_schema_id(MOCK_VALUE_ID) == H("FF 02 03 07 08")
    assert wire.pulsar_schema_id(H("01 02 03")) == H("FF 01 02 03")
    assert wire.pulsar_schema_id(H("01 02 03"), keyvalue=True) == H("FE 01 02 03")
    assert wire.strip_pulsar_schema_id(H("01 02 03")) == H("01 02 03")
    assert wire.pulsar_schema_id(None) is None and wire.pulsar_schema_id(b"") is None


def test_k7_separated_key():
    assert keyvalue.encode_partition_key(H("00 04 03 04 08")) == ("AAQDBAg=", True)
    assert keyvalue.decode_partition_key("AAQDBAg=", True) == H("00 04 03 04 08")
    fields = keyvalue.encode_separated(H("00 04 03 04 08"), b"v")
    assert fields == {
        "partition_key": "AAQDBAg=",
        "partition_key_b64_encoded": True,
        "null_partition_key": False,
        "payload": b"v",
        "null_value": False,
    }


def test_k8_string_key_int32_value(backend):
    k8 = H("00 00 00 01 6B 00 00 00 04 00 00 00 01")
    payload = keyvalue.encode_inline(pt.encode("STRING", "k"), pt.encode("INT32", 1))
    assert payload == k8
    key, value = keyvalue.decode_inline(k8)
    assert (pt.decode("STRING", key), pt.decode("INT32", value)) == ("k", 1)
    keys, values = keyvalue.split_inline([k8])
    assert pt.decode_array("STRING", keys).to_pylist() == ["k"]
    assert pt.decode_array("INT32", values).to_pylist() == [1]


def test_k9_k10_nulls(backend):
    k9, k10 = H("FF FF FF FF 00 00 00 01 76"), H("FF FF FF FF FF FF FF FF")
    assert keyvalue.encode_inline(None, b"v") == k9
    assert keyvalue.encode_inline(None, None) == k10
    assert keyvalue.decode_inline(k9) == (None, b"v")
    assert keyvalue.decode_inline(k10) == (None, None)
    keys, values = keyvalue.split_inline([k9, k10])
    assert keys.to_pylist() == [None, None] and values.to_pylist() == [b"v", None]
    assert keyvalue.join_inline([None, None], [b"v", None]).to_pylist() == [k9, k10]


def test_k11_java_versus_cpp(backend):
    java, cpp = H("00 00 00 00 00 00 00 01 76"), H("FF FF FF FF 00 00 00 01 76")
    assert keyvalue.encode_inline(b"", b"v") == java
    assert keyvalue.encode_inline(b"", b"v", convention="cpp") == cpp
    assert keyvalue.encode_inline(None, b"v", convention="cpp") == cpp  # C++ has no null: -1 either way
    # Java reads the C++ empty key as null; the C++ convention reads it back as empty
    assert keyvalue.decode_inline(cpp) == (None, b"v")
    assert keyvalue.decode_inline(cpp, convention="cpp") == (b"", b"v")
    assert keyvalue.decode_inline(java, convention="cpp") == (b"", b"v")
    keys, _ = keyvalue.split_inline([cpp, java], convention="cpp")
    assert keys.to_pylist() == [b"", b""]
    keys, _ = keyvalue.split_inline([cpp, java])
    assert keys.to_pylist() == [None, b""]
    assert keyvalue.join_inline([b"", None], [b"v", b"v"], convention="cpp").to_pylist() == [cpp, cpp]
    assert keyvalue.join_inline([b"", None], [b"v", b"v"]).to_pylist() == [java, cpp]


def test_unknown_convention():
    with pytest.raises(ValueError, match="convention"):
        keyvalue.encode_inline(b"", b"", convention="go")
    with pytest.raises(ValueError, match="convention"):
        keyvalue.split_inline([b""], convention="JAVA")


# -- errors -------------------------------------------------------------------------------------

INLINE_ERRORS = [
    # payload, code, offset, detail, part word
    (b"", ErrorCode.KV_TRUNCATED_LENGTH, 0, 0, "key"),
    (H("00 00 00"), ErrorCode.KV_TRUNCATED_LENGTH, 0, 3, "key"),
    (H("00 00 00 01 61 00 00"), ErrorCode.KV_TRUNCATED_LENGTH, 5, 2, "value"),
    (H("FF FF FF FE"), ErrorCode.KV_NEGATIVE_LENGTH, 0, -2, "key"),
    (H("80 00 00 00"), ErrorCode.KV_NEGATIVE_LENGTH, 0, -(2**31), "key"),
    (H("00 00 00 00 FF FF FF F0"), ErrorCode.KV_NEGATIVE_LENGTH, 4, -16, "value"),
    (H("00 00 00 02 61"), ErrorCode.KV_LENGTH_PAST_END, 0, 2, "key"),
    (H("7F FF FF FF 61"), ErrorCode.KV_LENGTH_PAST_END, 0, 2**31 - 1, "key"),
    (H("FF FF FF FF 00 00 00 05 61 62"), ErrorCode.KV_LENGTH_PAST_END, 4, 5, "value"),
    (H("00 00 00 00 00 00 00 00 01"), ErrorCode.KV_TRAILING_BYTES, 8, 1, None),
    (H("FF FF FF FF FF FF FF FF 00 00"), ErrorCode.KV_TRAILING_BYTES, 8, 2, None),
]


@pytest.mark.parametrize("payload, code, offset, detail, part", INLINE_ERRORS)
def test_inline_errors(backend, payload, code, offset, detail, part):
    with pytest.raises(KeyValueFormatError) as info:
        keyvalue.decode_inline(payload)
    exc = info.value
    assert (exc.code, exc.index, exc.offset, exc.detail) == (code, 0, offset, detail)
    assert str(exc).endswith(f"(message 0, byte {offset})")
    if part:
        assert part in str(exc)
    good = keyvalue.encode_inline(b"k", b"v")
    with pytest.raises(KeyValueFormatError) as info:
        keyvalue.split_inline([good, None, good, payload, payload])
    assert (info.value.code, info.value.index, info.value.offset, info.value.detail) == (code, 3, offset, detail)
    assert str(info.value) == str(exc).replace("(message 0,", "(message 3,")


def test_error_message_text():
    with pytest.raises(KeyValueFormatError, match=r"^invalid value length -16 \(message 0, byte 4\)$"):
        keyvalue.decode_inline(H("00 00 00 00 FF FF FF F0"))
    with pytest.raises(KeyValueFormatError, match=r"^1 trailing bytes after the value \(message 0, byte 8\)$"):
        keyvalue.decode_inline(H("00 00 00 00 00 00 00 00 01"))
    with pytest.raises(KeyValueFormatError, match=r"^truncated key schema id length: 2 bytes left"):
        keyvalue.unpack_schema_id(H("00 00"))


def test_cpp_convention_keeps_strict_checks(backend):
    with pytest.raises(KeyValueFormatError) as info:
        keyvalue.decode_inline(H("FF FF FF FE"), convention="cpp")
    assert info.value.code == ErrorCode.KV_NEGATIVE_LENGTH


# -- schema ids ---------------------------------------------------------------------------------


def test_schema_id_absent_forms(backend):
    assert keyvalue.pack_schema_id(None, None) is None
    assert keyvalue.pack_schema_id(b"", b"") is None
    assert keyvalue.pack_schema_id(b"", None) is None
    assert keyvalue.pack_schema_id(b"k", None) == H("00 00 00 01 6B 00 00 00 00")
    assert keyvalue.unpack_schema_id(None) == (None, None)
    assert keyvalue.unpack_schema_id(b"") == (None, None)
    # Java reads any length <= 0 as "no id"; we take 0 and -1, other negatives are errors
    assert keyvalue.unpack_schema_id(H("FF FF FF FF 00 00 00 01 76")) == (None, b"v")
    assert keyvalue.unpack_schema_id(H("00 00 00 01 6B FF FF FF FF")) == (b"k", None)
    assert keyvalue.unpack_schema_id(H("00 00 00 00 00 00 00 00")) == (None, None)
    with pytest.raises(KeyValueFormatError) as info:
        keyvalue.unpack_schema_id(H("FF FF FF FE 00 00 00 00"))
    assert (info.value.code, info.value.offset, info.value.detail) == (ErrorCode.KV_NEGATIVE_LENGTH, 0, -2)
    assert "key schema id" in str(info.value)
    with pytest.raises(KeyValueFormatError) as info:
        keyvalue.unpack_schema_id(H("00 00 00 00 00 00 00 01 76 77"))
    assert info.value.code == ErrorCode.KV_TRAILING_BYTES and info.value.offset == 9


def test_schema_ids_bulk_nulls(backend):
    packed = keyvalue.pack_schema_ids([b"a", None, b"", None, b"b"], [None, b"x", b"", None, b"y"])
    assert packed.to_pylist() == [
        H("00 00 00 01 61 00 00 00 00"),
        H("00 00 00 00 00 00 00 01 78"),
        None,
        None,
        H("00 00 00 01 62 00 00 00 01 79"),
    ]
    assert packed.null_count == 2
    k, v = keyvalue.unpack_schema_ids(pa.array(packed.to_pylist() + [b""], pa.binary()))
    assert k.to_pylist() == [b"a", None, None, None, b"b", None]
    assert v.to_pylist() == [None, b"x", None, None, b"y", None]


def test_schema_ids_broadcast_scalar(backend):
    packed = keyvalue.pack_schema_ids(None, [MOCK_VALUE_ID, None])
    assert packed.to_pylist() == [H("00 00 00 00 00 00 00 04 02 03 07 08"), None]
    packed = keyvalue.pack_schema_ids([b"k"], MOCK_VALUE_ID)
    assert packed.to_pylist() == [keyvalue.pack_schema_id(b"k", MOCK_VALUE_ID)]
    with pytest.raises(TypeError):
        keyvalue.pack_schema_ids(None, None)


def test_join_length_mismatch(backend):
    with pytest.raises(EncodeError, match="2 keys for 1 values"):
        keyvalue.join_inline([b"a", b"b"], [b"c"])


def test_encode_rejects_text():
    with pytest.raises(TypeError, match="bytes"):
        keyvalue.encode_inline("k", b"v")
    with pytest.raises(TypeError):
        keyvalue.encode_inline(b"k", 5)


# -- input shapes -------------------------------------------------------------------------------


def test_split_input_shapes(backend):
    rows = [(b"k%d" % i if i % 3 else None, b"v" * i if i % 4 else None) for i in range(20)]
    payloads = [inline(k, v) for k, v in rows]
    payloads[5] = None
    expected_k = [None if p is None else k for p, (k, _) in zip(payloads, rows)]
    expected_v = [None if p is None else v for p, (_, v) in zip(payloads, rows)]
    arr = pa.array(payloads, pa.binary())
    inputs = {
        "list": payloads,
        "binary": arr,
        "large": arr.cast(pa.large_binary()),
        "view": arr.cast(pa.binary_view()),
        "chunked": pa.chunked_array([arr.slice(0, 7), arr.slice(7, 0), arr.slice(7)]),
    }
    for name, value in inputs.items():
        for views in (False, True):
            keys, values = keyvalue.split_inline(value, views=views)
            assert keys.to_pylist() == expected_k, name
            assert values.to_pylist() == expected_v, name
            assert keys.type == (pa.binary_view() if views else pa.binary())
            keys.validate(full=True)
            values.validate(full=True)
    keys, values = keyvalue.split_inline(arr.slice(3, 9))
    assert keys.to_pylist() == expected_k[3:12] and values.to_pylist() == expected_v[3:12]
    with pytest.raises(KeyValueFormatError) as info:
        keyvalue.split_inline(pa.chunked_array([arr.slice(0, 4), pa.array([b"\x00"], pa.binary())]))
    assert info.value.index == 4


def test_views_reference_the_input(backend):
    payloads = pa.array([inline(b"k" * 30, b"v" * 40), inline(None, b"w" * 20)], pa.binary())
    keys, values = keyvalue.split_inline(payloads, views=True)
    assert values.buffers()[2].address == payloads.buffers()[2].address
    assert values.to_pylist() == [b"v" * 40, b"w" * 20]
    assert keys.to_pylist() == [b"k" * 30, None]


def test_empty_inputs(backend):
    for value in ([], pa.array([], pa.binary()), pa.chunked_array([], pa.binary())):
        keys, values = keyvalue.split_inline(value)
        assert len(keys) == len(values) == 0 and keys.type == pa.binary()
        k, v = keyvalue.unpack_schema_ids(value)
        assert len(k) == len(v) == 0
    assert len(keyvalue.join_inline([], [])) == 0
    assert len(keyvalue.pack_schema_ids([], [])) == 0
    assert len(keyvalue.decode_partition_keys([])) == 0


def test_all_null_input(backend):
    keys, values = keyvalue.split_inline(pa.array([None, None], pa.binary()))
    assert keys.to_pylist() == values.to_pylist() == [None, None]
    assert keys.null_count == 2


def test_join_input_shapes(backend):
    keys = pa.array([b"a", None, b"", b"dd"], pa.binary())
    values = pa.array(["x", "y", None, ""], pa.string())
    expected = [inline(k, None if v is None else v.encode()) for k, v in zip(keys.to_pylist(), values.to_pylist())]
    assert keyvalue.join_inline(keys, values).to_pylist() == expected
    assert keyvalue.join_inline(keys.slice(1, 2), values.slice(1, 2)).to_pylist() == expected[1:3]
    chunked = pa.chunked_array([keys.slice(0, 1), keys.slice(1)])
    assert keyvalue.join_inline(chunked, values.cast(pa.large_string())).to_pylist() == expected
    assert keyvalue.join_inline(keys.to_pylist(), values).to_pylist() == expected
    assert keyvalue.join_inline(None, [b"v"]).to_pylist() == [inline(None, b"v")]


# -- property tests -----------------------------------------------------------------------------


@SETTINGS
@given(key=parts, value=parts)
def test_inline_round_trip(key, value):
    payload = keyvalue.encode_inline(key, value)
    assert payload == inline(key, value)
    assert keyvalue.decode_inline(payload) == (key, value)
    cpp = keyvalue.encode_inline(key, value, convention="cpp")
    assert keyvalue.decode_inline(cpp, convention="cpp") == (key or b"", value or b"")


@SETTINGS
@given(key=parts, value=parts)
def test_schema_id_round_trip(key, value):
    packed = keyvalue.pack_schema_id(key, value)
    if not key and not value:
        assert packed is None
    else:
        assert keyvalue.unpack_schema_id(packed) == (key or None, value or None)


@SETTINGS
@given(rows=payload_lists, convention=st.sampled_from(["java", "cpp"]), views=st.booleans())
def test_bulk_round_trip(backend, rows, convention, views):
    keys = pa.array([k for k, _ in rows], pa.binary())
    values = pa.array([v for _, v in rows], pa.binary())
    joined = keyvalue.join_inline(keys, values, convention=convention)
    assert joined.to_pylist() == [keyvalue.encode_inline(k, v, convention=convention) for k, v in rows]
    out_k, out_v = keyvalue.split_inline(joined, convention=convention, views=views)
    if convention == "java":
        assert out_k.to_pylist() == keys.to_pylist() and out_v.to_pylist() == values.to_pylist()
    else:
        assert out_k.to_pylist() == [k or b"" for k, _ in rows]
        assert out_v.to_pylist() == [v or b"" for _, v in rows]
    packed = keyvalue.pack_schema_ids(keys, values)
    assert packed.to_pylist() == [keyvalue.pack_schema_id(k, v) for k, v in rows]
    ids_k, ids_v = keyvalue.unpack_schema_ids(packed, views=views)
    assert ids_k.to_pylist() == [k or None for k, _ in rows]
    assert ids_v.to_pylist() == [v or None for _, v in rows]


def outcome(fn, *args, **kwargs):
    """Either ("ok", result as Python lists) or ("error", class, code, index, offset, message)."""
    try:
        result = fn(*args, **kwargs)
    except KeyValueFormatError as exc:
        return ("error", type(exc), exc.code, exc.index, exc.offset, exc.detail, str(exc))
    if isinstance(result, tuple):
        return ("ok",) + tuple(r.to_pylist() if isinstance(r, pa.Array) else r for r in result)
    return ("ok", result.to_pylist() if isinstance(result, pa.Array) else result)


def per_value(decode, payloads, **kwargs):
    """Bulk result built from the per-value function (errors re-indexed like the bulk ones)."""
    keys, values = [], []
    for i, p in enumerate(payloads):
        try:
            k, v = decode(p, **kwargs)
        except KeyValueFormatError as exc:
            return (
                "error",
                type(exc),
                exc.code,
                i,
                exc.offset,
                exc.detail,
                str(exc).replace("(message 0,", f"(message {i},"),
            )
        keys.append(k)
        values.append(v)
    return ("ok", keys, values)


def mutate(data: bytes, op: int, at: int, byte: int) -> bytes:
    if not data:
        return bytes([byte])
    at %= len(data) + 1
    if op == 0:  # overwrite
        return data[:at] + bytes([byte]) + data[at + 1 :]
    if op == 1:  # truncate
        return data[:at]
    if op == 2:  # insert
        return data[:at] + bytes([byte]) + data[at:]
    return data + bytes([byte])  # trailing byte


mutations = st.tuples(st.integers(0, 3), st.integers(0, 64), st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]))
random_payloads = st.lists(st.one_of(st.none(), st.binary(max_size=24)), max_size=12)


@st.composite
def mutated_payloads(draw):
    rows = draw(payload_lists)
    payloads = [inline(k, v) for k, v in rows]
    for _ in range(draw(st.integers(0, 3))):
        if payloads:
            i = draw(st.integers(0, len(payloads) - 1))
            payloads[i] = mutate(payloads[i], *draw(mutations))
    return payloads


@SETTINGS
@given(payloads=st.one_of(random_payloads, mutated_payloads()), convention=st.sampled_from(["java", "cpp"]))
def test_twins_agree_and_bulk_equals_per_value(payloads, convention):
    if not _backend.compiled_available():
        pytest.skip("compiled kernels unavailable")
    results = {}
    for name in ("cython", "python"):
        with _backend.use(name):
            results[name] = (
                outcome(keyvalue.split_inline, payloads, convention=convention),
                outcome(keyvalue.split_inline, payloads, convention=convention, views=True),
                outcome(keyvalue.unpack_schema_ids, payloads),
            )
    assert results["cython"] == results["python"]
    split, split_views, ids = results["python"]
    assert split == split_views
    assert split == per_value(keyvalue.decode_inline, payloads, convention=convention)
    assert ids == per_value(keyvalue.unpack_schema_id, payloads)


# -- SEPARATED and Base64 keys ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("AAQDBAg=", H("00 04 03 04 08")),
        ("AAQDBAg", H("00 04 03 04 08")),
        ("", b""),
        ("QQ==", b"A"),
        ("QQ", b"A"),
        ("QUI=", b"AB"),
        ("QUJD", b"ABC"),
        ("+/+/", H("FB FF BF")),
    ],
)
def test_decode_partition_key(text, expected):
    assert keyvalue.decode_partition_key(text, True) == expected
    assert keyvalue.decode_partition_key(text.encode(), True) == expected


@pytest.mark.parametrize(
    "text, offset",
    [
        ("A", 0),
        ("AAQDBAg==", 8),
        ("QQ=", 3),
        ("Q===", 0),
        ("QQ=A", 3),
        ("QU-D", 2),
        ("QUJD=", 4),
        ("QUJ_", 3),
        ("Q\u00e9JD", 1),
        ("=QQ=", 0),
    ],
)
def test_decode_partition_key_errors(text, offset):
    with pytest.raises(KeyValueFormatError) as info:
        keyvalue.decode_partition_key(text, True)
    assert info.value.code == ErrorCode.KV_INVALID_BASE64
    assert info.value.offset == offset


def test_decode_partition_key_flags():
    assert keyvalue.decode_partition_key("AAQDBAg=", True, null_partition_key=True) is None
    assert keyvalue.decode_partition_key(None, True) is None
    # not Base64: the UTF-8 bytes of the key string (what the C++ client writes for SEPARATED)
    assert keyvalue.decode_partition_key("k\u00e9y", False) == "k\u00e9y".encode()
    with pytest.raises(TypeError, match="encode_separated"):
        keyvalue.encode_partition_key(None)


@SETTINGS
@given(key=parts, value=parts)
def test_separated_round_trip(key, value):
    fields = keyvalue.encode_separated(key, value)
    assert fields["null_partition_key"] is (key is None)
    assert fields["null_value"] is (value is None)
    if key is not None:
        assert fields["partition_key"] == base64.b64encode(key).decode()
    assert keyvalue.decode_separated(**fields) == (key, value)


@SETTINGS
@given(keys=st.lists(st.one_of(st.none(), st.binary(max_size=20)), max_size=20))
def test_decode_partition_keys_bulk(keys):
    texts = [None if k is None else base64.b64encode(k).decode() for k in keys]
    assert keyvalue.decode_partition_keys(texts).to_pylist() == keys
    unpadded = [None if t is None else t.rstrip("=") for t in texts]
    assert keyvalue.decode_partition_keys(unpadded).to_pylist() == keys
    flags = [i % 2 == 0 for i in range(len(keys))]
    mixed = [t if f or t is None else f"raw{i}" for i, (t, f) in enumerate(zip(texts, flags))]
    expected = [k if f or k is None else b"raw%d" % i for i, (k, f) in enumerate(zip(keys, flags))]
    assert keyvalue.decode_partition_keys(mixed, flags).to_pylist() == expected
    nulls = [i % 3 == 0 for i in range(len(keys))]
    got = keyvalue.decode_partition_keys(pa.array(texts, pa.string()), True, nulls).to_pylist()
    assert got == [None if n else k for k, n in zip(keys, nulls)]


def test_decode_partition_keys_errors_and_shapes():
    arr = pa.array(["AAQDBAg=", None, "QUJD", "QQ=="], pa.string())
    expected = [H("00 04 03 04 08"), None, b"ABC", b"A"]
    assert keyvalue.decode_partition_keys(arr).to_pylist() == expected
    assert keyvalue.decode_partition_keys(arr.slice(2)).to_pylist() == expected[2:]
    assert keyvalue.decode_partition_keys(pa.chunked_array([arr.slice(0, 1), arr.slice(1)])).to_pylist() == expected
    with pytest.raises(KeyValueFormatError) as info:
        keyvalue.decode_partition_keys(["QUJD", None, "QU=D"])
    assert (info.value.code, info.value.index, info.value.offset) == (ErrorCode.KV_INVALID_BASE64, 2, 3)
    with pytest.raises(ValueError, match="flags"):
        keyvalue.decode_partition_keys(["QUJD"], [True, False])


def test_decode_separated_defaults():
    assert keyvalue.decode_separated() == (None, None)
    assert keyvalue.decode_separated(partition_key="k", payload=b"") == (b"k", b"")
    assert keyvalue.decode_separated(
        partition_key="AA==", partition_key_b64_encoded=True, null_value=True, payload=b"ignored"
    ) == (b"\x00", None)


# -- speed (loose bound; the measured figure is in the report) ------------------------------------


@pytest.mark.compiled
def test_compiled_split_is_fast():
    if not _backend.compiled_available():
        pytest.skip("compiled kernels unavailable")
    import time

    n = 200_000
    keys = pa.array([b"key-%06d" % i for i in range(n)], pa.binary())
    values = pa.array([b"value-%010d" % i for i in range(n)], pa.binary())
    with _backend.use("cython"):
        payloads = keyvalue.join_inline(keys, values)
        best = min(_timed(time, lambda: keyvalue.split_inline(payloads)) for _ in range(3))
        k, v = keyvalue.split_inline(payloads)
    assert k.equals(keys) and v.equals(values)
    assert best < 0.1  # about 3 ms on the reference machine; generous for shared CI boxes


def _timed(time, fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def test_encoding_type_reexported():
    assert keyvalue.KeyValueEncodingType is pt.KeyValueEncodingType
