"""MessageDecoder / MessageEncoder: per-instance caches, pickling, unframed payloads, Arrow
PyCapsule inputs, and the format interface they decode through."""

from __future__ import annotations

import gc
import pickle
import threading
import uuid

import numpy as np
import pyarrow as pa
import pytest

import pulsar_codec as pc
from pulsar_codec import avro, wire
from pulsar_codec.errors import AvroDecodeError, ErrorCode, SchemaError, SchemaNotFoundError
from pulsar_codec.formats import PayloadFormat, get_format, register_format
from pulsar_codec.formats.base import Segment
from pulsar_codec.pipeline import Decoded, MessageDecoder, MessageEncoder
from pulsar_codec.registry import ConfluentRegistry, LocalRegistry, RegistryConfig
from test_avro_support import encode

INTS = {"type": "record", "name": "R", "fields": [{"name": "x", "type": "int"}]}
STRS = {"type": "record", "name": "R", "fields": [{"name": "x", "type": "string"}]}
V1 = {"type": "record", "name": "User", "fields": [{"name": "id", "type": "int"}]}
V2 = {
    "type": "record",
    "name": "User",
    "fields": [{"name": "id", "type": "long"}, {"name": "tag", "type": ["null", "string"], "default": None}],
}


def framed(schema_id, schema, records, protocol=wire.CONFLUENT):
    return [protocol.pack(schema_id, body) for body in encode(schema, records)]


class Arrays:
    """Only the Arrow PyCapsule protocol: what arro3 / nanoarrow objects offer."""

    def __init__(self, data):
        self._data = data

    def __arrow_c_array__(self, requested_schema=None):
        return self._data.__arrow_c_array__(requested_schema)


class Stream:
    def __init__(self, data):
        self._data = data

    def __arrow_c_stream__(self, requested_schema=None):
        return self._data.__arrow_c_stream__(requested_schema)


class CountingRegistry:
    def __init__(self, schemas):
        self.schemas = schemas
        self.calls = []

    def get_schema(self, schema_id):
        self.calls.append(schema_id)
        return self.schemas[schema_id]


# -- caches belong to one decoder -------------------------------------------------------------------


def test_two_decoders_with_different_registries_keep_apart(backend):
    ints = MessageDecoder({7: INTS})
    strs = MessageDecoder({7: STRS})
    as_int = ints.decode(framed(7, INTS, [{"x": 3}]))
    as_str = strs.decode(framed(7, STRS, [{"x": "three"}]))
    assert as_int.to_pylist() == [{"x": 3}] and as_int.schema.field("x").type == pa.int32()
    assert as_str.to_pylist() == [{"x": "three"}] and as_str.schema.field("x").type == pa.string()
    # and again, now that both caches are warm
    assert ints.decode(framed(7, INTS, [{"x": 4}])).to_pylist() == [{"x": 4}]
    assert strs.decode(framed(7, STRS, [{"x": "four"}])).to_pylist() == [{"x": "four"}]


def test_a_new_registry_never_inherits_a_dead_ones_schemas(backend):
    for i, schema in enumerate([INTS, STRS, INTS, STRS]):
        registry = CountingRegistry({7: schema})
        record = {"x": 5} if schema is INTS else {"x": "five"}
        # pc.decode with a registry that may land on a freed address: it must be asked itself
        assert pc.decode(framed(7, schema, [record]), registry).to_pylist() == [record]
        assert registry.calls == [7], i
        del registry
        gc.collect()


def test_lookups_and_plans_are_cached_per_instance(backend):
    registry = CountingRegistry({1: V1, 2: V2})
    decoder = MessageDecoder(registry)
    messages = framed(1, V1, [{"id": 1}]) + framed(2, V2, [{"id": 2, "tag": "t"}])
    for _ in range(3):
        assert decoder.decode(messages).to_pylist() == [{"id": 1, "tag": None}, {"id": 2, "tag": "t"}]
    assert sorted(registry.calls) == [1, 2]
    MessageDecoder(registry).decode(messages)
    assert sorted(registry.calls) == [1, 1, 2, 2]  # another decoder, its own cache


def test_cache_is_bounded(backend):
    schemas = {i: {"type": "record", "name": f"R{i}", "fields": [{"name": "x", "type": "int"}]} for i in range(1, 6)}
    registry = CountingRegistry(schemas)
    decoder = MessageDecoder(registry, cache_size=2)
    for i in range(1, 6):
        decoder.decode(framed(i, schemas[i], [{"x": i}]))
    decoder.decode(framed(1, schemas[1], [{"x": 1}]))
    assert registry.calls == [1, 2, 3, 4, 5, 1]  # id 1 was evicted and looked up again
    assert len(decoder._resolver.writers) == 2


def test_decoder_is_thread_safe(backend):
    decoder = MessageDecoder({1: V1, 2: V2})
    messages = pa.array(framed(1, V1, [{"id": i} for i in range(200)]) + framed(2, V2, [{"id": 1}]), pa.binary())
    expected = decoder.decode(messages)
    results = []

    def work():
        with pc._kernels._backend.use(backend.name):
            for _ in range(20):
                results.append(decoder.decode(messages).equals(expected))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 80


# -- pickling -------------------------------------------------------------------------------------


def test_pickle_round_trip_with_a_mapping(backend):
    decoder = MessageDecoder({1: V1, 2: V2}, reader_schema=V2, on_error="null", cache_size=9)
    messages = framed(1, V1, [{"id": 3}]) + [b"\x09bad"]
    first = decoder.decode(messages)
    clone = pickle.loads(pickle.dumps(decoder))
    assert clone.registry == {1: V1, 2: V2} and clone.cache_size == 9 and clone.on_error == "null"
    assert len(clone._resolver.writers) == 0  # caches never travel
    second = clone.decode(messages)
    assert isinstance(second, Decoded)
    assert second.batch.equals(first.batch) and second.errors.equals(first.errors)


def test_pickle_round_trip_with_a_local_registry(backend, tmp_path):
    path = tmp_path / "registry.db"
    registry = LocalRegistry(path)
    schema_id = registry.register("users-value", V1)
    decoder = MessageDecoder(registry, protocol="CONFLUENT")
    messages = framed(schema_id, V1, [{"id": 11}])
    clone = pickle.loads(pickle.dumps(decoder))
    assert clone.registry == RegistryConfig(path=str(path), timeout=30.0) == registry.config
    assert clone.decode(messages).to_pylist() == decoder.decode(messages).to_pylist() == [{"id": 11}]
    encoder = MessageEncoder(registry, "users-value")
    assert pickle.loads(pickle.dumps(encoder)).registry == registry.config


def test_pickle_refuses_what_cannot_travel():
    with pytest.raises(TypeError, match="in-memory"):
        pickle.dumps(MessageDecoder(LocalRegistry(":memory:")))
    with pytest.raises(TypeError, match="no RegistryConfig"):
        pickle.dumps(MessageDecoder(CountingRegistry({})))


def test_a_parsed_reader_schema_pickles_as_text(backend):
    decoder = MessageDecoder({1: V1}, reader_schema=avro.parse(V2))
    clone = pickle.loads(pickle.dumps(decoder))
    assert isinstance(clone.reader_schema, str)
    assert clone.arrow_schema == decoder.arrow_schema


def test_a_registry_given_as_config_or_path_is_built_on_first_use(backend, tmp_path):
    path = tmp_path / "r.db"
    schema_id = LocalRegistry(path).register("s", V1)
    for given in (str(path), RegistryConfig(path=str(path))):
        decoder = MessageDecoder(given)
        assert decoder.decode(framed(schema_id, V1, [{"id": 2}])).to_pylist() == [{"id": 2}]


# -- unframed payloads ------------------------------------------------------------------------------


def test_decode_payloads_with_one_id(backend):
    decoder = MessageDecoder({1: V1, 2: V2})
    bodies = encode(V1, [{"id": 1}, {"id": 2}]) + [None]
    assert decoder.decode_payloads(bodies, 1).to_pylist() == [{"id": 1}, {"id": 2}, {"id": None}]
    assert decoder.decode_payloads(pa.array([], pa.binary()), 1).num_rows == 0


def test_decode_payloads_with_per_row_ids(backend):
    decoder = MessageDecoder({1: V1, 2: V2})
    bodies = encode(V1, [{"id": 1}]) + encode(V2, [{"id": 2, "tag": "b"}]) + [None] + encode(V1, [{"id": 3}])
    expected = [{"id": 1, "tag": None}, {"id": 2, "tag": "b"}, {"id": None, "tag": None}, {"id": 3, "tag": None}]
    assert decoder.decode_payloads(bodies, [1, 2, None, 1]).to_pylist() == expected
    assert decoder.decode_payloads(bodies, pa.array([1, 2, 2, 1], pa.int32())).to_pylist() == expected
    with pytest.raises(ValueError, match="entries"):
        decoder.decode_payloads(bodies, [1, 2])
    # a payload without an id is bad data, as an unknown id: the registry's error, naming the row
    with pytest.raises(SchemaNotFoundError, match=r"^payload 1 has no schema id \(message 1\)$") as raised:
        decoder.decode_payloads(bodies, [1, None, None, 1])
    assert raised.value.index == 1
    # on_error="null": a payload without an id is an error row, never a failed batch
    lenient = MessageDecoder({1: V1, 2: V2}, on_error="null").decode_payloads(bodies, [1, None, None, 1])
    assert lenient.batch.to_pylist() == [{"id": 1}, {"id": None}, {"id": None}, {"id": 3}]  # the V1 rows' reader
    assert lenient.errors.to_pylist() == [
        {
            "index": 1,
            "code": ErrorCode.SCHEMA_NOT_FOUND,
            "offset": 0,
            "message": "payload 1 has no schema id (message 1, byte 0)",
        }
    ]


def test_decode_payloads_missing_id_raises_only_when_no_earlier_row_is_bad(backend):
    """on_error="raise": a payload without an id raises the SchemaNotFoundError on_error="null"
    reports as its error row, unless an earlier row is bad (the first bad row's error wins)."""
    strict = MessageDecoder({1: V1, 2: V2})
    lenient = MessageDecoder({1: V1, 2: V2}, on_error="null")
    good, truncated = encode(V1, [{"id": 1}])[0], b"\x80"  # a varint cut short
    cases = [
        # (bodies, ids, error class raised, index)
        ([good, truncated, good], [1, 1, None], AvroDecodeError, 1),  # an earlier bad body wins
        ([good, good, truncated], [1, None, 1], SchemaNotFoundError, 1),  # a later bad body does not
        ([good, good, good], [1, 9, None], SchemaNotFoundError, 1),  # an earlier unknown id wins
        ([good, good, good], [1, None, 9], SchemaNotFoundError, 1),  # a later unknown id does not
        ([None, good], [None, None], SchemaNotFoundError, 1),  # a null payload needs no id
    ]
    for bodies, ids, cls, index in cases:
        with pytest.raises(cls) as raised:
            strict.decode_payloads(bodies, ids)
        assert type(raised.value) is cls and raised.value.index == index, (ids, raised.value)
        first = lenient.decode_payloads(bodies, ids).errors.to_pylist()[0]
        assert first["index"] == index
        assert str(raised.value) in (first["message"], first["message"].replace(", byte 0)", ")"))
    # the same with a pyarrow id array holding nulls
    with pytest.raises(SchemaNotFoundError, match=r"payload 2 has no schema id \(message 2\)"):
        strict.decode_payloads([good, good, good], pa.array([1, 1, None], pa.int32()))
    # a caller bug, not bad data: still a ValueError
    with pytest.raises(ValueError, match="schema_ids has 2 entries for 3 payloads"):
        strict.decode_payloads([good, good, good], [1, None])


def test_decode_payloads_with_pip420_metadata_ids(backend):
    """PIP-420 ``MessageMetadata.schema_id`` bytes as the client gives them: ``FF`` then the id."""
    decoder = MessageDecoder({1: V1, 2: V2})
    bodies = encode(V1, [{"id": 1}]) + encode(V2, [{"id": 2, "tag": "b"}]) + [None]
    expected = [{"id": 1, "tag": None}, {"id": 2, "tag": "b"}, {"id": None, "tag": None}]
    metadata = [b"\xff\x00\x00\x00\x01", b"\xff\x00\x00\x00\x02", None]
    assert decoder.decode_payloads(bodies, metadata).to_pylist() == expected
    assert decoder.decode_payloads(bodies, pa.array(metadata, pa.binary())).to_pylist() == expected
    assert decoder.decode_payloads(bodies, [b"\x01", b"\x00\x02", None]).to_pylist() == expected  # no magic byte
    one = MessageDecoder({1: V1}).decode_payloads(bodies[:1], b"\xff\x00\x00\x00\x01")
    assert one.to_pylist() == [{"id": 1}]
    with pytest.raises(ValueError, match="no PIP-420 schema id"):
        decoder.decode_payloads(bodies[:1], b"\xff")
    with pytest.raises(SchemaNotFoundError, match="payload 0 has no schema id") as raised:  # nine bytes: no id
        decoder.decode_payloads(bodies, [bytes(9), b"\x02", None])
    assert raised.value.index == 0


def test_decode_payloads_by_guid_and_errors(backend):
    guid = uuid.UUID("12345678-1234-5678-1234-567812345678")
    decoder = MessageDecoder({str(guid): V1}, on_error="null")
    bodies = encode(V1, [{"id": 4}]) + [b"\x80"]
    result = decoder.decode_payloads(bodies, [guid, guid])
    assert result.batch.to_pylist() == [{"id": 4}, {"id": None}]
    assert result.errors.to_pylist()[0]["index"] == 1
    assert result.errors.to_pylist()[0]["code"] == ErrorCode.AVRO_TRUNCATED
    with pytest.raises(AvroDecodeError):
        MessageDecoder({1: V1}).decode_payloads(bodies, 1)


def test_schema_not_found_and_writer_schema(backend):
    decoder = MessageDecoder({1: V1})
    assert decoder.writer_schema(1).fullname == "User"
    with pytest.raises(SchemaNotFoundError):
        decoder.decode(framed(3, V1, [{"id": 1}]))


def test_raised_schema_errors_name_the_first_message_that_needed_the_schema(backend):
    good, unknown = framed(1, V1, [{"id": 1}])[0], framed(3, V1, [{"id": 2}])[0]
    cases = {
        "one id (the fast path)": ([None, None, unknown, unknown], 2),
        "several ids": ([good, None, good, unknown, unknown], 3),
        "a later chunk": (pa.chunked_array([[good, good], [None, unknown]], pa.binary()), 3),
    }
    for name, (messages, index) in cases.items():
        with pytest.raises(SchemaNotFoundError, match=rf"schema id 3 .*\(message {index}\)$") as raised:
            pc.decode(messages, {1: V1})
        assert raised.value.index == index, name
        assert pickle.loads(pickle.dumps(raised.value)).index == index  # Spark ships exceptions pickled
    decoder = MessageDecoder({1: V1})
    body = encode(V1, [{"id": 5}])[0]
    per_row_list, per_row_array, one_id = [1, None, 7], np.array([1, 1, 7, 7]), 9
    for payloads, ids, index in (
        ([body, None, body], per_row_list, 2),
        ([body, None, body, body], per_row_array, 2),
        ([None, body], one_id, 1),
    ):
        with pytest.raises(SchemaNotFoundError) as raised:
            decoder.decode_payloads(payloads, ids)
        assert raised.value.index == index
    with pytest.raises(SchemaNotFoundError) as raised:
        decoder.decode_value(unknown)
    assert raised.value.index == 0
    # a writer the reader cannot read: the planner's SchemaError, at the first row of that writer
    strings = framed(2, STRS, [{"x": "a"}])[0]
    with pytest.raises(SchemaError, match=r"\(message 1\)$") as refused:
        pc.decode([framed(1, INTS, [{"x": 1}])[0], strings], {1: INTS, 2: STRS}, reader_schema=INTS)
    assert refused.value.index == 1
    # on_error="null" keeps the same row as an error row of the same index
    out = pc.decode([good, None, good, unknown], {1: V1}, on_error="null")
    assert out.errors.column("index").to_pylist() == [3]


def test_arrow_schema_is_the_readers():
    assert MessageDecoder({}).arrow_schema is None
    assert MessageDecoder({}, reader_schema=V2).arrow_schema.names == ["id", "tag"]


# -- encoding -------------------------------------------------------------------------------------


def test_encode_decode_round_trip(backend):
    registry = {}
    batch = pa.record_batch({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", None, "c"]})
    encoder = MessageEncoder(registry, "people")
    messages = encoder.encode(batch)
    assert list(registry) == [1]
    assert encoder.encode(batch).equals(messages)  # the same schema keeps its id
    assert MessageDecoder(registry).decode(messages).to_pylist() == batch.to_pylist()
    schema_id, bodies = encoder.encode_payloads(batch)
    assert schema_id == 1
    assert MessageDecoder(registry).decode_payloads(bodies, schema_id).equals(MessageDecoder(registry).decode(messages))


def test_encoder_with_a_fixed_schema_and_id(backend):
    encoder = MessageEncoder(None, schema=V1, schema_id=42, protocol=wire.APICURIO)
    messages = encoder.encode(pa.record_batch({"id": pa.array([5], pa.int32())}))
    assert wire.APICURIO.unpack(messages[0].as_py())[0] == 42
    assert MessageDecoder({42: V1}, protocol=wire.APICURIO).decode(messages).to_pylist() == [{"id": 5}]
    # the writer schema of a pinned id comes from the registry
    fetched = MessageEncoder({42: V2}, schema_id=42).encode(pa.record_batch({"id": [1], "tag": ["t"]}))
    assert MessageDecoder({42: V2}).decode(fetched).to_pylist() == [{"id": 1, "tag": "t"}]


def test_encoder_registers_through_a_client(backend):
    registry = LocalRegistry(":memory:")
    messages = MessageEncoder(registry, "s").encode(pa.table({"id": pa.array([1, 2], pa.int32())}))
    assert MessageDecoder(registry).decode(messages).column("id").to_pylist() == [1, 2]
    with pytest.raises(ValueError, match="subject"):
        MessageEncoder(registry).encode(pa.table({"id": [1]}))


# -- Arrow PyCapsule producers ------------------------------------------------------------------------


def test_pycapsule_inputs(backend):
    registry = {1: V1}
    messages = pa.array(framed(1, V1, [{"id": 1}, {"id": 2}]) + [None], pa.binary())
    expected = pc.decode(messages, registry)
    assert pc.decode(Arrays(messages), registry).equals(expected)
    assert pc.decode(Stream(pa.chunked_array([messages.slice(0, 1), messages.slice(1)])), registry).equals(expected)
    assert MessageDecoder(registry).decode(Arrays(messages)).equals(expected)
    table = pa.table({"id": pa.array([1, 2], pa.int32())})
    framed_rows = pc.encode(Stream(table), dict(registry), "s")
    assert framed_rows.equals(pc.encode(table, dict(registry), "s"))
    assert MessageEncoder(dict(registry), "s").encode(Stream(table)).equals(framed_rows)
    assert avro.Encoder(V1).encode(Stream(table)).equals(avro.Encoder(V1).encode(table))
    assert avro.Encoder(V1).encode(Arrays(table.to_batches()[0])).equals(avro.Encoder(V1).encode(table))


def test_polars_inputs(backend):
    pl = pytest.importorskip("polars")
    registry = {1: V2}
    messages = framed(1, V2, [{"id": 1, "tag": "a"}, {"id": 2, "tag": None}])
    expected = pc.decode(messages, registry)
    assert pc.decode(pl.Series("m", messages, dtype=pl.Binary), registry).equals(expected)
    assert MessageDecoder(registry).decode(pl.Series(messages + [None], dtype=pl.Binary)).num_rows == 3
    frame = pl.DataFrame({"id": [1, 2], "tag": ["a", None]})
    written = {}
    encoded = MessageEncoder(written, "s").encode(frame)
    assert pc.decode(encoded, written).to_pylist() == frame.to_dicts()
    assert pc.encode(frame, {}, "s").equals(encoded)
    assert avro.Encoder(written[1]).encode(frame).equals(MessageEncoder(written, "s").encode_payloads(frame)[1])


# -- the format interface ---------------------------------------------------------------------------


def test_the_avro_format_satisfies_the_interface():
    fmt = get_format()
    assert isinstance(fmt, PayloadFormat) and fmt.name == "AVRO" and get_format("avro") is fmt
    with pytest.raises(SchemaError, match="XML"):
        get_format("XML")
    model = fmt.parse(V2)
    assert fmt.schema_key(model) == fmt.schema_key(fmt.parse(fmt.schema_text(model)))
    base = fmt.plan(model, model)
    older = fmt.plan(fmt.parse(V1), model, base)
    assert base.arrow_schema.names == older.arrow_schema.names == ["id", "tag"]
    data = pa.py_buffer(b"".join(encode(V1, [{"id": 1}]) + encode(V2, [{"id": 2, "tag": "x"}])))
    segment = Segment(data, np.array([0, 1]), np.array([1, 5]), None, np.array([1, 0], dtype=np.int32))
    batch, errors = fmt.decode([base, older], [segment], False)
    assert errors == [] and batch.to_pylist() == [{"id": 1, "tag": None}, {"id": 2, "tag": "x"}]
    assert [b.tolist() for b in segment.bounds()] == [[0, 1], [1, 5]]
    assert [b.tolist() for b in Segment(data, 1, np.array([0, 2, 5]), None, None).bounds()] == [[1, 3], [2, 5]]
    with pytest.raises(ValueError, match="share"):
        fmt.decode([base, fmt.plan(model, model)], [segment], False)
    derived = fmt.model_from_arrow(pa.schema([("a", pa.int32())]), "Thing")
    assert fmt.schema_key(derived) == fmt.schema_key(
        avro.parse(
            {"type": "record", "name": "Thing", "fields": [{"name": "a", "type": ["null", "int"], "default": None}]}
        )
    )


class _Upper:
    """A toy format: the payload is UTF-8 text, the schema text names the column."""

    name = "TOYTEXT"

    def parse(self, schema, references=None):
        return schema if isinstance(schema, str) else schema["column"]

    def schema_key(self, model):
        return model

    def schema_text(self, model):
        return model

    def plan(self, writer, reader, base=None):
        class Plan:
            arrow_schema = pa.schema([(reader, pa.string())])

        return Plan()

    def decode(self, plans, segments, keep_going):
        values = []
        for seg in segments:
            starts, ends = seg.bounds()
            for i, (s, e) in enumerate(zip(starts, ends)):
                ok = seg.validity is None or seg.validity[i]
                values.append(seg.data.to_pybytes()[s:e].decode().upper() if ok else None)
        return pa.RecordBatch.from_arrays([pa.array(values, pa.string())], schema=plans[0].arrow_schema), []

    def encoder(self, model):
        class Enc:
            def encode(self, batch):
                return pa.array([v.lower().encode() for v in batch.column(0).to_pylist()], pa.binary())

        return Enc()

    def model_from_arrow(self, schema, name="Record", nulls=None):
        return schema.names[0]


class _Typed:
    """A registry that says which format each id is."""

    def __init__(self, schema_type):
        self.schema_type = schema_type

    def get_schema(self, schema_id):
        from pulsar_codec.registry import RegisteredSchema

        return RegisteredSchema(schema_id, "word", self.schema_type)


def test_the_pipeline_picks_the_format_the_registry_names(backend):
    register_format(_Upper())
    messages = [wire.CONFLUENT.pack(3, b"abc"), None, wire.CONFLUENT.pack(3, b"xy")]
    assert MessageDecoder(_Typed("TOYTEXT")).decode(messages).to_pylist() == [
        {"word": "ABC"},
        {"word": None},
        {"word": "XY"},
    ]
    assert MessageDecoder({3: "word"}, format="toytext").decode(messages).column(0).to_pylist() == ["ABC", None, "XY"]
    with pytest.raises(SchemaError, match="TOYTEXT schema"):
        MessageDecoder(_Typed("TOYTEXT"), format="AVRO").decode(messages)
    encoded = MessageEncoder(None, schema="word", schema_id=3, format="TOYTEXT").encode(pa.table({"word": ["Hi"]}))
    assert encoded.to_pylist() == [wire.CONFLUENT.pack(3, b"hi")]


def test_a_format_that_does_not_check_prefixes_gets_them_checked(backend):
    # the toy format has no checks_prefixes: the pipeline compares every prefix with the first
    # message's before decoding a one-id batch, so the middle message's id is asked for
    register_format(_Upper())

    class Recording(_Typed):
        def __init__(self):
            super().__init__("TOYTEXT")
            self.asked = []

        def get_schema(self, schema_id):
            self.asked.append(schema_id)
            return super().get_schema(schema_id)

    registry = Recording()
    messages = [wire.CONFLUENT.pack(3, b"a"), wire.CONFLUENT.pack(4, b"b"), wire.CONFLUENT.pack(3, b"c")]
    assert MessageDecoder(registry).decode(messages).column(0).to_pylist() == ["A", "B", "C"]
    assert sorted(set(registry.asked)) == [3, 4]


USER = {
    "type": "record",
    "name": "U",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "email", "type": ["null", "string"], "default": None},
    ],
}


def test_encode_value_equals_the_batch_encoder_and_frames_once(backend):
    registry: dict[int, str] = {}
    rows = [
        {"id": 1, "name": "a", "tags": ["x", "y"], "email": None},
        {"id": -(2**63), "name": "é", "tags": [], "email": "a@b"},
    ]
    enc = MessageEncoder(registry, "users-value", schema=USER)
    one = [enc.encode_value(r) for r in rows]
    batch = pa.RecordBatch.from_pylist(rows, schema=avro.Decoder(USER).arrow_schema)
    assert one == MessageEncoder(registry, "users-value", schema=USER).encode(batch).to_pylist()
    assert one[0][:5] == wire.CONFLUENT.pack(1, b"")  # registered once, id 1
    assert pc.decode(one, registry).to_pylist() == rows


def test_encode_value_needs_a_fixed_schema_and_names_a_bad_field(backend):
    with pytest.raises(ValueError, match="schema= or schema_id="):
        MessageEncoder({}, "s").encode_value({"x": 1})
    enc = MessageEncoder({}, "s", schema=USER)
    with pytest.raises(pc.errors.EncodeError, match="tags"):
        enc.encode_value({"id": 1, "name": "a", "tags": None, "email": None})


def test_encode_derives_a_schema_for_an_all_null_column(backend):
    # from_pylist types a column of only None as Arrow's null type: it becomes Avro "null"
    registry: dict[int, str] = {}
    batch = pa.RecordBatch.from_pylist([{"id": 1, "email": None}, {"id": 2, "email": None}])
    assert batch.schema.field("email").type == pa.null()
    messages = pc.encode(batch, registry, "users-value")
    assert pc.decode(messages, registry).to_pylist() == batch.to_pylist()


def test_raise_mode_raises_the_first_bad_messages_error(backend):
    """with on_error="raise" the error raised is the first bad message's, whether its prefix or its
    body is bad: prefixes are read before bodies, so a later bad prefix must not win (probe22)."""
    import json
    import zlib

    from pulsar_codec.errors import WireFormatError

    schema = json.dumps({"type": "record", "name": "R", "fields": [{"name": "b", "type": "boolean"}]})
    good, bad_body, bad_prefix = (
        wire.CONFLUENT.pack(1, b"\x01"),
        wire.CONFLUENT.pack(1, b"\x05"),
        b"\x07\x00\x00\x00\x01\x01",
    )
    cases = [
        ([bad_body, bad_prefix], AvroDecodeError, 0),
        ([good, None, bad_body, good, bad_prefix, bad_body], AvroDecodeError, 2),
        ([good, bad_prefix, bad_body], WireFormatError, 1),
        ([good, good, bad_prefix], WireFormatError, 2),
    ]
    for messages, error, index in cases:
        for given in (
            messages,
            pa.chunked_array([pa.array(messages[:1], pa.binary()), pa.array(messages[1:], pa.binary())]),
        ):
            with pytest.raises(error) as caught:
                MessageDecoder({1: schema}).decode(given)
            assert caught.value.index == index
        out = MessageDecoder({1: schema}, on_error="null").decode(messages)
        assert out.errors.column("index").to_pylist()[0] == index  # the same first error as on_error="null"
    # AWS Glue: a body that does not inflate, after a bad body
    glue = wire.AWS_GLUE
    guid = uuid.UUID(int=1)

    def frame(body: bytes, zipped: bool) -> bytes:
        return glue.pack(guid, zlib.compress(body) if zipped else body, compression="zlib" if zipped else None)

    messages = [frame(b"\x05", False), frame(b"\x01", True), b"\x03\x05" + guid.bytes + b"not zlib"]
    with pytest.raises(AvroDecodeError) as caught:
        MessageDecoder({guid: schema}, protocol=glue).decode(messages)
    assert caught.value.index == 0


def test_unknown_ids_stay_error_rows_when_the_registry_will_not_list_subjects(backend):
    """A batch whose every id is unknown, read from a registry that answers the ids (404) but
    refuses to list its subjects (403, as an ACL or a gateway does): on_error="null" gives error
    rows, "raise" the SchemaNotFoundError of message 0, not the refusal of GET /subjects (probe30b)."""
    import json

    from test_registry_http import Stub

    schema = json.dumps(INTS)

    def answer(method, path, headers):
        kind = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
        if path.startswith("/schemas/ids/1"):
            return 200, json.dumps({"schema": schema}).encode(), kind
        if path.startswith("/schemas/ids/"):
            return 404, b'{"error_code": 40403, "message": "Schema not found"}', kind
        return 403, b'{"error_code": 40301, "message": "denied: Describe on Subject"}', kind

    unknown = [wire.CONFLUENT.pack(7, b"\x02"), None, wire.CONFLUENT.pack(8, b"\x02")]
    with Stub(answer) as stub:
        client = ConfluentRegistry(stub.url)
        try:
            out = MessageDecoder(client, on_error="null").decode(unknown)
            assert out.batch.num_rows == 3
            assert out.errors.column("index").to_pylist() == [0, 2]
            assert out.errors.column("code").to_pylist() == [ErrorCode.SCHEMA_NOT_FOUND] * 2
            with pytest.raises(SchemaNotFoundError) as caught:
                MessageDecoder(client).decode(unknown)
            assert caught.value.index == 0
            known = MessageDecoder(client, on_error="null").decode([framed(1, INTS, [{"x": 5}])[0], *unknown])
            assert known.batch.column("x").to_pylist() == [5, None, None, None]
        finally:
            client.close()


def test_raise_mode_first_bad_message_wins_over_schema_errors(backend, monkeypatch):
    """on_error="raise": an unknown id or an unreadable writer schema does not win over an earlier
    bad body, nor over each other when its message comes later (probe30b): the error raised is
    the one on_error="null" reports first, with one thread or several."""
    import json

    from pulsar_codec.errors import JsonDecodeError
    from pulsar_codec.pipeline import _rows

    monkeypatch.setattr(_rows, "MIN_ROWS_PER_THREAD", 1)  # let threads=2 split these small batches
    reader = json.dumps(V2)
    registry = {1: json.dumps(V1), 2: reader, 3: json.dumps(STRS)}
    good1, good2 = framed(1, V1, [{"id": 1}])[0], framed(2, V2, [{"id": 2, "tag": "t"}])[0]
    cut = good2[:-2]  # the union branch says string, then the string's bytes are missing
    unreadable = framed(3, STRS, [{"x": "s"}])[0]  # R.x string: no field id, and R is not User
    unknown99, unknown50 = wire.CONFLUENT.pack(99, b"\x02"), wire.CONFLUENT.pack(50, b"\x02")
    cases = [
        ([cut, unreadable], AvroDecodeError, 0),
        ([cut, unknown99], AvroDecodeError, 0),
        ([good1, cut, good2, unknown99], AvroDecodeError, 1),
        ([unreadable, unknown99], SchemaError, 0),
        ([good1, unknown99, unknown50], SchemaNotFoundError, 1),
        ([good2, unknown99, None, cut], SchemaNotFoundError, 1),
    ]
    for messages, error, index in cases:
        for threads in (1, 2):
            with pytest.raises(error) as caught:
                MessageDecoder(registry, reader_schema=reader, threads=threads).decode(messages)
            assert caught.value.index == index, (messages, threads)
            out = MessageDecoder(registry, reader_schema=reader, on_error="null", threads=threads).decode(messages)
            assert out.errors.column("index").to_pylist()[0] == index
    with pytest.raises(SchemaNotFoundError, match="schema id 99"):  # the unknown id of the first message
        MessageDecoder(registry, reader_schema=reader).decode([unknown99, unknown50])
    # no reader given: the batch's newest id (3) reads it, also when a later prefix is bad (the
    # messages before the bad prefix alone would be read as id 2, and message 0 be readable)
    messages = [good2, unknown99, b"\x07bad", unreadable]
    out = MessageDecoder(registry, on_error="null").decode(messages)
    assert out.errors.column("code").to_pylist()[:2] == [ErrorCode.SCHEMA_UNRESOLVABLE, ErrorCode.SCHEMA_NOT_FOUND]
    with pytest.raises(SchemaError) as caught:
        MessageDecoder(registry).decode(messages)
    assert caught.value.index == 0
    # ids given beside the payloads (PIP-420 metadata) and JSON payloads follow the same rule
    bodies = [good1[5:], cut[5:], unknown99[5:]]
    with pytest.raises(AvroDecodeError) as caught:
        MessageDecoder(registry, reader_schema=reader).decode_payloads(bodies, [1, 2, 99])
    assert caught.value.index == 1
    with pytest.raises(AvroDecodeError) as caught:
        MessageDecoder(registry, reader_schema=reader).decode_payloads(bodies[1:], [2, 99])
    assert caught.value.index == 0
    doc = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    texts = [wire.CONFLUENT.pack(1, b'{"a": 1'), wire.CONFLUENT.pack(99, b'{"a": 2}')]
    with pytest.raises(JsonDecodeError) as caught:
        MessageDecoder({1: doc}, format="JSON").decode(texts)
    assert caught.value.index == 0
