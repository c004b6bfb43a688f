"""PIP-420 external schemas (pulsar_codec.external) without a broker: framing, registration and
subject strategies, per-message and bulk decoding on both backends, errors, and interop with
confluent-kafka's Avro serializer and deserializer through the REST facade."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import struct
import warnings

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_codec import errors, keyvalue, wire
from pulsar_codec import pulsar_types as pt
from pulsar_codec.errors import ErrorCode
from pulsar_codec.external import (
    AvroExternalSchema,
    KeyValue,
    KeyValueExternalSchema,
    SchemaInfoProviderFactory,
)
from pulsar_codec.pulsar import external
from pulsar_codec.pulsar.external.ids import FRAMING_MAGIC
from pulsar_codec.registry import LocalRegistry

USER_V1 = {
    "type": "record",
    "name": "User",
    "namespace": "com.example",
    "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}],
}
USER_V2 = {
    "type": "record",
    "name": "User",
    "namespace": "com.example",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": "string"},
        {"name": "email", "type": "string", "default": "unknown"},
    ],
}
USER_BAD = {  # name becomes an int: cannot read version 1 (BACKWARD)
    "type": "record",
    "name": "User",
    "namespace": "com.example",
    "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "int"}],
}
RICH = {
    "type": "record",
    "name": "Rich",
    "namespace": "com.example",
    "fields": [
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "b", "type": "boolean"},
        {"name": "raw", "type": "bytes"},
        {"name": "opt", "type": ["null", "string"], "default": None},
        {
            "name": "kind",
            "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]},
        },
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {
            "name": "amount",
            "type": {
                "type": "bytes",
                "logicalType": "decimal",
                "precision": 10,
                "scale": 2,
            },
        },
        {"name": "choice", "type": ["int", "string"]},
    ],
}
RICH_VALUE = {
    "l": -(2**40),
    "f": 1.5,
    "d": -0.25,
    "b": True,
    "raw": b"\x00\xff",
    "opt": None,
    "kind": "B",
    "tags": ["x", "y"],
    "fx": b"abcd",
    "day": datetime.date(2024, 2, 29),
    "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC),
    "amount": decimal.Decimal("12.34"),
    "choice": "s",
}
WITH_MAP = {
    "type": "record",
    "name": "WithMap",
    "fields": [
        {"name": "m", "type": {"type": "map", "values": "long"}},
        {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
    ],
}


@pytest.fixture
def reg():
    with LocalRegistry(":memory:") as registry:
        yield registry


@pytest.fixture
def factory(reg):
    with SchemaInfoProviderFactory(reg) as f:
        yield f


# -- encode: framing, ids, SchemaInfo ------------------------------------------------------------------


def test_encode_confluent_framing_and_schema_info(factory, reg):
    schema = factory.avro_schema("orders", USER_V1)
    encoded = schema.encode(None, {"id": 7, "name": "ada"})
    schema_id = reg.get_latest("orders-value").id
    assert encoded.schema_id == struct.pack(">I", schema_id)
    assert encoded.data == b"\x00" + struct.pack(">I", schema_id) + b"\x0e\x06ada"
    assert isinstance(encoded, pt.EncodeData) and encoded.has_schema_id()
    info = schema.schema_info
    assert (info.type, info.schema, info.properties) == (
        pt.SchemaType.EXTERNAL,
        b"",
        {},
    )
    assert info.type.wire == 22
    assert schema.supports_schema_versioning is True
    assert schema.decode("orders", encoded.data) == {"id": 7, "name": "ada"}


def test_same_schema_registers_once_and_topic_argument_picks_the_subject(factory, reg):
    schema = factory.avro_schema("a", USER_V1)
    first = schema.encode(None, {"id": 1, "name": "x"})
    again = schema.encode("a", {"id": 2, "name": "y"})
    other = schema.encode("b", {"id": 3, "name": "z"})
    assert first.schema_id == again.schema_id == other.schema_id  # ids are global, deduplicated
    assert reg.list_subjects() == ["a-value", "b-value"]
    assert reg.list_versions("a-value") == [1]


def test_raw_body_when_not_framed_and_metadata_ids(factory):
    schema = factory.avro_schema("t", USER_V1, framed=False)
    encoded = schema.encode(None, {"id": 1, "name": "a"})
    assert encoded.data == b"\x02\x02a"
    assert schema.decode("t", encoded.data, encoded.schema_id) == {"id": 1, "name": "a"}
    # as a Java consumer would pass it, or with the PIP-420 magic byte still on
    assert schema.decode("t", encoded.data, wire.pulsar_schema_id(encoded.schema_id)) == {"id": 1, "name": "a"}
    with pytest.raises(errors.SchemaNotFoundError, match="no schema id"):
        schema.decode("t", encoded.data, None)
    batch = schema.decode_batch([encoded.data, None], [encoded.schema_id, None])
    assert batch.to_pylist() == [{"id": 1, "name": "a"}, {"id": None, "name": None}]
    with pytest.raises(errors.SchemaNotFoundError):
        schema.decode_batch([encoded.data])


def test_framed_message_with_metadata_id_uses_the_argument(factory, reg):
    v1 = factory.avro_schema("t", USER_V1)
    encoded = v1.encode(None, {"id": 1, "name": "a"})
    assert v1.decode("t", encoded.data, encoded.schema_id) == {"id": 1, "name": "a"}
    with pytest.raises(errors.SchemaNotFoundError):
        v1.decode("t", encoded.data, struct.pack(">I", 999))


def test_batches_with_metadata_ids(backend, factory):
    v1 = factory.avro_schema("t", USER_V1)
    v2 = factory.avro_schema("t", USER_V2)
    first = v1.encode(None, {"id": 1, "name": "a"})
    second = v2.encode(None, {"id": 2, "name": "b", "email": "e"})
    # framed messages whose ids come from the metadata too: prefixes are dropped, the ids win
    batch = v2.decode_batch([first.data, None, second.data], [first.schema_id, None, b"\xff" + second.schema_id])
    assert batch.to_pylist() == [
        {"id": 1, "name": "a", "email": "unknown"},
        {"id": None, "name": None, "email": None},
        {"id": 2, "name": "b", "email": "e"},
    ]
    raw = factory.avro_schema("t", USER_V2, framed=False)
    bodies = [first.data[5:], second.data[5:], b"\x04"]
    decoded = raw.decode_batch(bodies, [first.schema_id, second.schema_id, second.schema_id], on_error="null")
    assert decoded.batch.column("id").to_pylist() == [1, 2, None]
    assert decoded.errors.column("index").to_pylist() == [2]
    with pytest.raises(ValueError, match="2 schema ids for 3 messages"):
        raw.decode_batch(bodies, [first.schema_id, second.schema_id])


def test_clear_caches_picks_up_a_newer_latest_version(factory, reg):
    reg.register("t-value", json.dumps(USER_V1))
    latest = factory.avro_schema("t", use_latest=True)
    data = latest.encode(None, {"id": 1, "name": "a"}).data
    assert latest.decode_batch([data]).schema.names == ["id", "name"]
    reg.register("t-value", json.dumps(USER_V2))
    assert latest.decode_batch([data]).schema.names == ["id", "name"]  # the cached writer
    latest.clear_caches()
    assert latest.decode_batch([data]).to_pylist() == [{"id": 1, "name": "a", "email": "unknown"}]
    # one message reads as the batch does: into the latest version
    assert latest.decode(None, data) == {"id": 1, "name": "a", "email": "unknown"}


def test_public_names_and_no_import_cycles():
    import ast
    import importlib
    import pathlib

    import pulsar_codec
    import pulsar_codec.external as facade
    import pulsar_codec.pulsar.external as package

    assert facade.__all__ == package.__all__
    for name in facade.__all__:
        assert getattr(facade, name) is getattr(package, name)
        assert getattr(package, name).__doc__, name
    # every import, also inside functions, between the package's modules and the rest of pulsar_codec
    root = pathlib.Path(pulsar_codec.__file__).parent
    imports: dict[str, list[tuple[str, list[str]]]] = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        here = module if is_package else module.rsplit(".", 1)[0]
        found = imports.setdefault(module, [])
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                    base = f"{anchor}.{base}" if base else anchor
                found.append((base, [a.name for a in node.names]))
            elif isinstance(node, ast.Import):
                found.extend((a.name, []) for a in node.names)
    graph: dict[str, set[str]] = {}
    for module, found in imports.items():
        targets = graph.setdefault(module, set())
        for base, names in found:
            subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in imports]
            targets.update(subs or ([base] if base in imports else []))
        # a module's parent packages are imported before it: not an edge of its own
        targets.difference_update(module.rsplit(".", k)[0] for k in range(1, module.count(".") + 1))

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    mine = sorted(m for m in graph if m.startswith("pulsar_codec.pulsar.external."))
    assert len(mine) >= 7
    for module in mine:
        for target in graph[module]:
            assert not reaches(target, module), f"import cycle through {module} and {target}"
        importlib.import_module(module)


@pytest.mark.parametrize(
    ("protocol", "prefix"),
    [
        ("CONFLUENT", lambda i: b"\x00" + struct.pack(">I", i)),
        ("HORTONWORKS", lambda i: b"\x03" + struct.pack(">i", i)),
        ("APICURIO", lambda i: b"\x00" + struct.pack(">q", i)),
        ("APICURIO_V3", lambda i: b"\x00" + struct.pack(">i", i)),
    ],
)
def test_framings(backend, factory, reg, protocol, prefix):
    schema = factory.avro_schema("t", USER_V1, protocol=protocol)
    encoded = schema.encode(None, {"id": 5, "name": "n"})
    schema_id = reg.get_latest("t-value").id
    assert encoded.data == prefix(schema_id) + b"\x0a\x02n"
    assert encoded.data.startswith(FRAMING_MAGIC[protocol] + encoded.schema_id)
    assert schema.decode(None, encoded.data) == {"id": 5, "name": "n"}
    assert schema.decode_batch([encoded.data, encoded.data]).to_pylist() == [{"id": 5, "name": "n"}] * 2
    assert external.schema_id_from_bytes(encoded.schema_id, protocol) == schema_id


def test_schema_id_bytes():
    assert external.schema_id_bytes(7) == b"\x00\x00\x00\x07"
    assert external.schema_id_bytes(7, wire.HORTONWORKS) == b"\x03\x00\x00\x00\x07"
    assert external.schema_id_bytes(2**31, wire.HORTONWORKS) == b"\x02" + struct.pack(">q", 2**31)
    assert external.schema_id_bytes(7, "apicurio") == struct.pack(">q", 7)
    assert external.schema_id_from_bytes(b"\x02" + struct.pack(">q", 2**31), "HORTONWORKS") == 2**31
    assert external.schema_id_from_bytes(b"\xff\x00\x00\x00\x07") == 7
    with pytest.raises(errors.WireFormatError):
        external.schema_id_from_bytes(b"\x00\x07")
    with pytest.raises(errors.WireFormatError, match="longer"):
        external.schema_id_from_bytes(b"\x00\x00\x00\x00\x07\x01\x02")
    with pytest.raises(errors.WireFormatError):
        external.schema_id_from_bytes(b"")
    with pytest.raises(errors.SchemaNotFoundError, match="protocol-1"):
        external.schema_id_from_bytes(b"\x01" + struct.pack(">qi", 5, 2), "HORTONWORKS")
    with pytest.raises(ValueError, match="support"):
        external.schema_id_bytes(1, wire.CONFLUENT_PROTOBUF)


def test_hortonworks_and_confluent_raw_primitives(factory, reg):
    hw = factory.avro_schema("s", "string", protocol="HORTONWORKS")
    encoded = hw.encode(None, "hi")
    assert encoded.data == encoded.schema_id + b"hi"  # protocol 3: raw UTF-8, as Hortonworks serdes write
    assert hw.decode(None, encoded.data) == "hi"
    assert hw.decode_batch([encoded.data, None]).column("value").to_pylist() == [
        "hi",
        None,
    ]
    # protocol 0 keeps the Avro length
    zero = b"\x00" + encoded.schema_id[1:] + b"\x04hi"
    assert hw.decode(None, zero) == "hi"
    with pytest.raises(errors.AvroDecodeError):
        hw.decode(None, encoded.schema_id + b"\xff")

    cf = factory.avro_schema("b", "bytes")
    encoded = cf.encode(None, b"\x02\x03\x04")
    assert encoded.data == b"\x00" + encoded.schema_id + b"\x02\x03\x04"  # Confluent: bytes written raw
    assert cf.decode(None, encoded.data) == b"\x02\x03\x04"
    with pytest.raises(errors.EncodeError):
        cf.encode(None, "text")


# -- subject name strategies, pinned ids, lookups ------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "is_key", "subject"),
    [
        ("topic", False, "persistent://public/default/orders-value"),
        ("TopicNameStrategy", True, "persistent://public/default/orders-key"),
        ("record", False, "com.example.User"),
        (
            "io.confluent.kafka.serializers.subject.RecordNameStrategy",
            True,
            "com.example.User",
        ),
        ("topic_record", False, "persistent://public/default/orders-com.example.User"),
        (
            "TopicRecordNameStrategy",
            False,
            "persistent://public/default/orders-com.example.User",
        ),
        (
            lambda topic, record, is_key: f"custom.{record}.{is_key}",
            True,
            "custom.com.example.User.True",
        ),
    ],
)
def test_subject_name_strategies(reg, strategy, is_key, subject):
    factory = SchemaInfoProviderFactory(reg, subject_name_strategy=strategy)
    schema = factory.avro_schema("persistent://public/default/orders", USER_V1, is_key=is_key)
    assert schema.subject() == subject
    schema.encode(None, {"id": 1, "name": "x"})
    assert reg.list_subjects() == [subject]


def test_local_topic_names_and_fixed_subject(reg):
    factory = SchemaInfoProviderFactory(reg, topic_in_subject="local")
    assert factory.avro_schema("persistent://tenant/ns/orders", USER_V1).subject() == "orders-value"
    assert factory.avro_schema("orders", USER_V1, subject="fixed").subject() == "fixed"
    assert external.local_topic_name("non-persistent://a/b/c") == "c"
    with pytest.raises(ValueError):
        SchemaInfoProviderFactory(reg, topic_in_subject="short")


def test_record_strategy_needs_a_named_schema(reg):
    factory = SchemaInfoProviderFactory(reg, subject_name_strategy="record")
    with pytest.raises(errors.SchemaError, match="named"):
        factory.avro_schema("t", "long").encode(None, 1)
    with pytest.raises(ValueError, match="unknown subject name strategy"):
        SchemaInfoProviderFactory(reg, subject_name_strategy="nope")


def test_pinned_id_use_latest_and_lookup(factory, reg):
    v1_id = reg.register("t-value", json.dumps(USER_V1))
    v2_id = reg.register("t-value", json.dumps(USER_V2))
    pinned = factory.avro_schema("t", schema_id=v1_id)
    encoded = pinned.encode(None, {"id": 1, "name": "p"})
    assert encoded.schema_id == struct.pack(">I", v1_id)
    assert pinned.decode(None, encoded.data) == {"id": 1, "name": "p"}

    latest = factory.avro_schema("t", use_latest=True)
    encoded = latest.encode(None, {"id": 2, "name": "q", "email": "e"})
    assert encoded.schema_id == struct.pack(">I", v2_id)
    assert latest.decode_batch([encoded.data]).to_pylist() == [{"id": 2, "name": "q", "email": "e"}]

    looked_up = factory.avro_schema("t", USER_V1, auto_register=False)
    assert looked_up.encode(None, {"id": 3, "name": "r"}).schema_id == struct.pack(">I", v1_id)
    missing = factory.avro_schema(
        "t",
        {**USER_V1, "doc": "other"} | {"fields": USER_V1["fields"][:1]},
        auto_register=False,
    )
    with pytest.raises(errors.SchemaNotFoundError):
        missing.encode(None, {"id": 4})
    assert reg.list_versions("t-value") == [1, 2]  # nothing registered by the lookups
    with pytest.raises(errors.SchemaNotFoundError):
        factory.avro_schema("nosuch", use_latest=True).encode(None, {"id": 1})
    with pytest.raises(errors.SchemaNotFoundError):
        factory.avro_schema("t", schema_id=12345).encode(None, {"id": 1, "name": "x"})
    with pytest.raises(ValueError, match="schema_id"):
        factory.avro_schema("t")


def test_incompatible_schema_is_refused_at_registration(factory, reg):
    factory.avro_schema("t", USER_V1).register()
    bad = factory.avro_schema("t", USER_BAD)
    with pytest.raises(errors.IncompatibleSchemaError) as info:
        bad.register()
    assert info.value.reasons
    with pytest.raises(errors.IncompatibleSchemaError):
        bad.encode(None, {"id": 1, "name": 2})
    assert reg.list_versions("t-value") == [1]


def test_pinned_id_of_another_type_is_refused(factory, reg):
    json_id = reg.register("j-value", json.dumps({"type": "object"}), "JSON")
    with pytest.raises(errors.SchemaError, match="JSON"):
        factory.avro_schema("j", schema_id=json_id).encode(None, {})


# -- decode: evolution, per message == bulk, both backends ----------------------------------------------


def test_evolution_reader_v2_reads_v1_and_v2(backend, factory):
    v1 = factory.avro_schema("t", USER_V1)
    v2 = factory.avro_schema("t", USER_V2)
    messages = [
        v1.encode(None, {"id": 1, "name": "a"}).data,
        v2.encode(None, {"id": 2, "name": "b", "email": "b@x"}).data,
        None,
        v1.encode(None, {"id": 3, "name": "c"}).data,
    ]
    expected = [
        {"id": 1, "name": "a", "email": "unknown"},
        {"id": 2, "name": "b", "email": "b@x"},
        {"id": None, "name": None, "email": None},
        {"id": 3, "name": "c", "email": "unknown"},
    ]
    assert [v2.decode(None, m) if m else None for m in messages] == [
        expected[0],
        expected[1],
        None,
        expected[3],
    ]
    batch = v2.decode_batch(pa.array(messages, pa.binary()))
    assert batch.to_pylist() == expected
    assert batch.schema.names == ["id", "name", "email"]
    # the old reader drops the new field
    assert v1.decode(None, messages[1]) == {"id": 2, "name": "b"}
    # a reader_schema overrides; no schema but use_latest: the latest version reads, one message
    # as a batch (confluent-kafka's use.latest.version)
    as_v1 = factory.avro_schema("t", USER_V2, reader_schema=USER_V1)
    assert as_v1.decode(None, messages[1]) == {"id": 2, "name": "b"}
    latest = factory.avro_schema("t", use_latest=True)
    assert latest.decode(None, messages[0]) == expected[0]
    assert latest.decode_batch(pa.array(messages[:1], pa.binary())).to_pylist() == expected[:1]


def test_per_message_equals_bulk_rich(backend, factory):
    schema = factory.avro_schema("rich", RICH)
    values = [
        RICH_VALUE,
        {**RICH_VALUE, "opt": "set", "choice": 42, "tags": [], "kind": "C"},
    ]
    encoded = [schema.encode(None, v).data for v in values]
    per_message = [schema.decode(None, m) for m in encoded]
    bulk = schema.decode_batch(encoded).to_pylist()
    assert per_message == bulk == values
    # one message and a batch run the same compiled plan, through one MessageDecoder
    assert len(schema._decoders) == 1


def test_fast_is_deprecated_and_ignored(factory, reg):
    with pytest.warns(DeprecationWarning, match="fast="):
        schema = factory.avro_schema("t", USER_V1, fast=True)
    data = schema.encode(None, {"id": 1, "name": "a"}).data
    assert schema.decode(None, data) == {"id": 1, "name": "a"}
    with pytest.warns(DeprecationWarning, match="fast="):
        SchemaInfoProviderFactory(reg, fast=False)


def test_maps_and_uuids_use_the_arrow_decoder(backend, factory):
    schema = factory.avro_schema("m", WITH_MAP)
    value = {"m": {"a": 1, "b": -2}, "u": "0f8fad5b-d9cb-469f-a165-70867728950e"}
    encoded = schema.encode(None, value).data
    row = schema.decode(None, encoded)
    assert row == {
        "m": [("a", 1), ("b", -2)],
        "u": value["u"],
    }  # maps as the Arrow rows give them
    assert schema.decode_batch([encoded]).to_pylist() == [row]
    assert schema.encode(None, row).data == encoded  # and they encode back


def test_non_record_values(backend, factory):
    schema = factory.avro_schema("n", {"type": "array", "items": "long"})
    encoded = schema.encode(None, [1, 2, 3]).data
    assert schema.decode(None, encoded) == [1, 2, 3]
    batch = schema.decode_batch([encoded, None])
    assert batch.schema.names == ["value"] and batch.column("value").to_pylist() == [
        [1, 2, 3],
        None,
    ]


_SAFE = {
    "type": "record",
    "name": "Safe",
    "fields": [
        {"name": "i", "type": "int"},
        {"name": "s", "type": "string"},
        {"name": "o", "type": ["null", "double"]},
        {"name": "a", "type": {"type": "array", "items": "long"}},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}},
    ],
}


@settings(max_examples=100, deadline=None)
@given(
    i=st.integers(-(2**31), 2**31 - 1),
    s=st.text(max_size=20),
    o=st.one_of(st.none(), st.floats(allow_nan=False)),
    a=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=5),
    e=st.sampled_from(["X", "Y"]),
)
def test_per_message_matches_fastavro(i, s, o, a, e):
    # fastavro is the oracle: our bytes are what it writes, our values what it reads
    fastavro = pytest.importorskip("fastavro")
    parsed = fastavro.parse_schema(_SAFE)
    with LocalRegistry() as reg:
        schema = AvroExternalSchema(reg, _SAFE, topic="h")
        value = {"i": i, "s": s, "o": o, "a": a, "e": e}
        data = schema.encode(None, value).data
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, value)
        assert data[5:] == out.getvalue()
        assert fastavro.schemaless_reader(io.BytesIO(data[5:]), parsed, None) == value
        assert schema.decode(None, data) == value
        assert schema.decode_batch([data]).to_pylist() == [value]


# -- errors --------------------------------------------------------------------------------------------


def test_unknown_id(backend, factory):
    schema = factory.avro_schema("t", USER_V1)
    stranger = b"\x00" + struct.pack(">I", 4242) + b"\x02\x02a"
    with pytest.raises(errors.SchemaNotFoundError):
        schema.decode(None, stranger)
    with pytest.raises(errors.SchemaNotFoundError):
        schema.decode_batch([stranger])


def test_corrupt_payload(backend, factory):
    schema = factory.avro_schema("t", USER_V1)
    good = schema.encode(None, {"id": 1, "name": "abc"}).data
    truncated = good[:-2]
    with pytest.raises(errors.AvroDecodeError) as info:
        schema.decode(None, truncated)
    # the string length (3) at byte 1 of the body (after the 5-byte prefix) runs past the end
    assert info.value.code == ErrorCode.AVRO_LENGTH_PAST_END and info.value.offset == 1
    trailing = good + b"\x00"
    with pytest.raises(errors.AvroDecodeError) as info:
        schema.decode(None, trailing)
    assert info.value.code == ErrorCode.AVRO_TRAILING_BYTES
    with pytest.raises(errors.AvroDecodeError) as info:
        schema.decode_batch([good, truncated])
    assert (info.value.index, info.value.offset) == (1, 1)
    with pytest.raises(errors.WireFormatError, match="magic"):
        schema.decode(None, b"\x07" + good[1:])
    with pytest.raises(errors.WireFormatError):
        schema.decode(None, b"\x00\x00")
    decoded = schema.decode_batch([good, truncated, b"\x07"], on_error="null")
    assert decoded.batch.column("id").to_pylist() == [1, None, None]
    assert decoded.errors.column("index").to_pylist() == [1, 2]


def test_primitive_batches_report_unreadable_writers_as_rows(backend, factory, reg):
    # a top-level string / bytes schema decodes a batch message by message (raw Confluent bytes);
    # a writer it cannot read is an error row, as for a record schema, not an exception
    json_id = reg.register("j-value", json.dumps({"type": "object"}), "JSON")
    record = factory.avro_schema("r", USER_V1).encode(None, {"id": 1, "name": "a"}).data
    other = b"\x00" + struct.pack(">I", json_id) + b"{}"
    for avro_type, value in (("string", "hi"), ("bytes", b"\x01")):
        schema = factory.avro_schema(avro_type, avro_type)
        good = schema.encode(None, value).data
        decoded = schema.decode_batch([good, other, record], on_error="null")
        assert decoded.batch.column("value").to_pylist() == [value, None, None]
        assert decoded.errors.column("index").to_pylist() == [1, 2]
        assert decoded.errors.column("code").to_pylist() == [ErrorCode.SCHEMA_UNRESOLVABLE] * 2
        with pytest.raises(errors.SchemaError, match=r"message 1"):
            schema.decode_batch([good, other])


def test_every_message_is_checked_strictly(backend, factory):
    record = {"type": "record", "name": "B", "fields": [{"name": "b", "type": "boolean"}]}
    schema = factory.avro_schema("b", record)
    data = schema.encode(None, {"b": True}).data[:-1] + b"\x02"
    with pytest.raises(errors.AvroDecodeError) as info:
        schema.decode(None, data)
    assert info.value.code == ErrorCode.AVRO_BAD_BOOLEAN
    fastavro = pytest.importorskip("fastavro")  # the peer lets this byte through
    assert fastavro.schemaless_reader(io.BytesIO(data[5:]), fastavro.parse_schema(record), None) == {"b": True}


def test_encode_errors(factory):
    schema = factory.avro_schema("t", USER_V1)
    with pytest.raises(errors.EncodeError, match="name"):
        schema.encode(None, {"id": 1, "name": 5})
    with pytest.raises(errors.EncodeError):
        schema.encode(None, None)
    with pytest.raises(TypeError):
        schema.decode(None, None)


def test_close(factory):
    schema = factory.avro_schema("t", USER_V1)
    with schema:
        schema.encode(None, {"id": 1, "name": "a"})
    with pytest.raises(RuntimeError, match="closed"):
        schema.encode(None, {"id": 1, "name": "a"})
    factory.close()
    with pytest.raises(RuntimeError, match="closed"):
        factory.of("x")


# -- JSON ----------------------------------------------------------------------------------------------

PERSON = {
    "title": "Person",
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
}


def test_json_round_trip(factory, reg):
    schema = factory.json_schema("people", PERSON)
    encoded = schema.encode(None, {"name": "Jöhn", "age": 30})
    registered = reg.get_latest("people-value")
    assert registered.schema_type == "JSON"
    assert encoded.data == b"\x00" + struct.pack(">I", registered.id) + '{"name":"Jöhn","age":30}'.encode()
    assert schema.decode(None, encoded.data) == {"name": "Jöhn", "age": 30}
    batch = schema.decode_batch([encoded.data, None, encoded.data])
    assert batch.column("age").to_pylist() == [30, None, 30]
    arrow = pa.schema([("name", pa.string()), ("age", pa.int32())])
    assert schema.decode_batch([encoded.data], arrow_schema=arrow).schema == arrow
    scalars = factory.json_schema("n", {"type": "number"})
    assert scalars.decode_batch([scalars.encode(None, 1.5).data]).column("value").to_pylist() == [1.5]


def test_json_decode_batch_columns_are_the_given_schemas_whatever_version_wrote(factory):
    """As AvroExternalSchema's: the schema given fixes the columns of every batch."""
    closed = {"type": "object", "additionalProperties": False}  # a property added: BACKWARD compatible
    older = factory.json_schema("people", {**closed, "properties": {"name": {"type": "string"}}})
    newer = factory.json_schema("people", {**closed, "properties": PERSON["properties"]})
    old_batch = [older.encode(None, {"name": "a"}).data]
    new_batch = [newer.encode(None, {"name": "b", "age": 3}).data]
    assert newer.decode_batch(old_batch).to_pylist() == [{"name": "a", "age": None}]
    assert older.decode_batch(new_batch).to_pylist() == [{"name": "b"}]
    assert newer.decode_batch(new_batch).to_pylist() == [{"name": "b", "age": 3}]


def test_json_record_strategy_uses_the_title(reg):
    factory = SchemaInfoProviderFactory(reg, subject_name_strategy="record")
    factory.json_schema("t", PERSON).encode(None, {})
    assert reg.list_subjects() == ["Person"]


def test_json_hortonworks_protocol_4(factory):
    schema = factory.json_schema("t", PERSON, protocol="HORTONWORKS")
    encoded = schema.encode(None, {"age": 1})
    assert encoded.data[:1] == b"\x04" and encoded.data[5:] == b'{"age":1}'
    assert schema.decode(None, encoded.data) == {"age": 1}


def test_json_errors(factory, reg):
    schema = factory.json_schema("t", PERSON)
    prefix = schema.encode(None, {}).data[:5]
    with pytest.raises(errors.JsonDecodeError, match="invalid JSON payload") as info:
        schema.decode(None, prefix + b'{"a": tru}')
    assert info.value.code == ErrorCode.JSON_INVALID and info.value.offset == 6
    with pytest.raises(errors.JsonDecodeError, match="UTF-8") as info:
        schema.decode(None, prefix + b'"\xff"')
    assert info.value.offset == 1
    with pytest.raises(errors.DecodeError) as info:
        schema.decode_batch([prefix + b"{}", prefix + b"{"])
    assert info.value.index == 1
    with pytest.raises(errors.EncodeError):
        schema.encode(None, {"x": float("nan")})
    with pytest.raises(errors.EncodeError):
        schema.encode(None, {"x": object()})
    avro_id = reg.register("a-value", json.dumps(USER_V1))
    with pytest.raises(errors.SchemaError, match="AVRO"):
        schema.decode(None, b"\x00" + struct.pack(">I", avro_id) + b"{}")
    with pytest.raises(errors.SchemaError):
        factory.json_schema("t", "not json")


# -- KeyValue ------------------------------------------------------------------------------------------


def test_keyvalue_ids_and_inline_payload(backend, factory, reg):
    kv = factory.keyvalue_schema("t", {"type": "string"}, USER_V1)
    encoded = kv.encode(None, KeyValue("k1", {"id": 1, "name": "a"}))
    key_id, value_id = reg.get_latest("t-key").id, reg.get_latest("t-value").id
    assert encoded.schema_id == keyvalue.pack_schema_id(struct.pack(">I", key_id), struct.pack(">I", value_id))
    key_data, value_data = keyvalue.decode_inline(encoded.data)
    assert key_data == b"\x00" + struct.pack(">I", key_id) + b"\x04k1"
    assert wire.CONFLUENT.unpack(value_data)[0] == value_id
    assert kv.decode(None, encoded.data) == ("k1", {"id": 1, "name": "a"})
    assert kv.decode(None, encoded.data, b"\xfe" + encoded.schema_id) == KeyValue("k1", {"id": 1, "name": "a"})
    null_key = kv.encode(None, (None, {"id": 2, "name": "b"}))
    assert null_key.schema_id == keyvalue.pack_schema_id(None, struct.pack(">I", value_id))
    assert kv.decode(None, null_key.data) == (None, {"id": 2, "name": "b"})
    batch = kv.decode_batch([encoded.data, null_key.data])
    assert batch.column("key").to_pylist() == [{"value": "k1"}, None]
    assert batch.column("value").to_pylist() == [
        {"id": 1, "name": "a"},
        {"id": 2, "name": "b"},
    ]


def test_keyvalue_schema_info_is_java_key_value(factory):
    # Java's KeyValue schema registers KEY_VALUE (INLINE) with each side's own SchemaInfo
    kv = factory.keyvalue_schema("t", pt.SchemaType.STRING, USER_V1)
    info = kv.schema_info
    assert info.type is pt.SchemaType.KEY_VALUE and info.name == "KeyValue"
    assert info.properties["kv.encoding.type"] == "INLINE"
    key_info, value_info = pt.decode_keyvalue_schema_info(info)
    assert (key_info.type, key_info.name, key_info.schema) == (pt.SchemaType.STRING, "String", b"")
    assert (value_info.type, value_info.schema) == (pt.SchemaType.EXTERNAL, b"")
    both = factory.keyvalue_schema("t", {"type": "string"}, USER_V1)
    sides = pt.decode_keyvalue_schema_info(both.schema_info)
    assert [side.type for side in sides] == [pt.SchemaType.EXTERNAL] * 2


def test_keyvalue_raw_sides_use_the_kv_schema_id(factory):
    key = factory.avro_schema("t", "long", is_key=True, framed=False)
    value = factory.avro_schema("t", USER_V1, framed=False)
    kv = KeyValueExternalSchema(key, value, topic="t")
    encoded = kv.encode(None, (5, {"id": 1, "name": "a"}))
    assert keyvalue.decode_inline(encoded.data) == (b"\x0a", b"\x02\x02a")
    assert kv.decode(None, encoded.data, encoded.schema_id) == (
        5,
        {"id": 1, "name": "a"},
    )


def test_keyvalue_raw_sides_decode_in_bulk_with_their_ids(backend, factory):
    """framed=False sides read their ids from the messages' KeyValue ids in decode_batch too (it
    refused schema_ids before); a malformed id is its message's error row, an FF (single schema)
    id a WireFormatError saying so."""
    key = factory.avro_schema("t", "long", is_key=True, framed=False)
    value = factory.avro_schema("t", USER_V1, framed=False)
    kv = KeyValueExternalSchema(key, value, topic="t")
    pairs = [(5, {"id": 1, "name": "a"}), (7, {"id": 2, "name": "b"})]
    encoded = [kv.encode(None, p) for p in pairs]
    data, ids = [e.data for e in encoded], [e.schema_id for e in encoded]
    batch = kv.decode_batch(data, ids)
    assert batch.column("key").to_pylist() == [{"value": 5}, {"value": 7}]
    assert batch.column("value").to_pylist() == [p[1] for p in pairs]
    assert kv.decode_batch(data, [b"\xfe" + i for i in ids]).equals(batch)  # as MessageMetadata holds them
    with pytest.raises(errors.SchemaNotFoundError):
        kv.decode_batch(data)  # raw sides: no id, nothing to read them with
    bad = [ids[0], b"\x00\x00"]  # a truncated length in the second message's id
    out, errs = kv.decode_batch(data, bad, on_error="null")
    assert out.column("value").to_pylist() == [pairs[0][1], None]
    assert errs.column("index").to_pylist() == [1]
    assert errs.column("code").to_pylist() == [errors.ErrorCode.KV_TRUNCATED_LENGTH]
    with pytest.raises(errors.KeyValueFormatError) as raised:
        kv.decode_batch(data, bad)
    assert raised.value.index == 1
    with pytest.raises(ValueError, match="1 schema ids for 2 messages"):
        kv.decode_batch(data, ids[:1])
    # a raw body without its id costs its own row, not the batch (the side raised for the batch)
    bodies = [value.encode(None, p[1]) for p in pairs]
    out, errs = value.decode_batch([b.data for b in bodies], [bodies[0].schema_id, None], on_error="null")
    assert out.column("id").to_pylist() == [1, None]
    assert errs.column("code").to_pylist() == [errors.ErrorCode.SCHEMA_NOT_FOUND]
    with pytest.raises(errors.SchemaNotFoundError) as raised:
        value.decode_batch([b.data for b in bodies], [bodies[0].schema_id, None])
    assert raised.value.index == 1
    single = b"\xff" + ids[0]
    with pytest.raises(errors.WireFormatError, match="0xff marks a single schema") as raised:
        kv.decode(None, data[0], single)
    assert raised.value.code == errors.ErrorCode.WIRE_BAD_MAGIC


def test_keyvalue_primitive_key(backend, factory):
    kv = factory.keyvalue_schema("t", pt.SchemaType.STRING, USER_V1)
    encoded = kv.encode(None, ("user-1", {"id": 1, "name": "a"}))
    assert keyvalue.decode_inline(encoded.data)[0] == b"user-1"
    key_id, value_id = keyvalue.unpack_schema_id(encoded.schema_id)
    assert key_id is None and value_id is not None  # PIP-420: no id for a primitive key
    assert kv.decode(None, encoded.data) == ("user-1", {"id": 1, "name": "a"})
    batch = kv.decode_batch([encoded.data])
    assert batch.column("key").to_pylist() == ["user-1"]
    with pytest.raises(errors.EncodeError, match="pair"):
        kv.encode(None, 5)
    with pytest.raises(errors.KeyValueFormatError):
        kv.decode(None, b"\x00\x00")
    with pytest.raises(TypeError):
        KeyValueExternalSchema(pt.SchemaType.STRING, "not a schema")
    json_kv = factory.keyvalue_schema("j", PERSON, PERSON, format="json")
    assert json_kv.decode(None, json_kv.encode(None, ({"name": "k"}, {"age": 3})).data) == ({"name": "k"}, {"age": 3})
    kv.close()
    with pytest.raises(RuntimeError):
        kv.value_schema.encode(None, {"id": 1, "name": "a"})


# -- the factory, the REST facade and confluent-kafka ------------------------------------------------------

httpx = pytest.importorskip("httpx")


def _confluent_modules():
    with warnings.catch_warnings():
        # confluent-kafka's schema-registry module imports authlib's deprecated httpx integration;
        # authlib installs an "always" filter when imported, so ours must come after it
        try:
            import authlib.deprecate  # noqa: F401
        except ImportError:
            pass
        warnings.simplefilter("ignore", DeprecationWarning)
        sr = pytest.importorskip("confluent_kafka.schema_registry")
        avro = pytest.importorskip("confluent_kafka.schema_registry.avro")
        from confluent_kafka.serialization import MessageField, SerializationContext
    return sr, avro, MessageField, SerializationContext


@pytest.fixture
def server(reg):
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    from pulsar_codec.registry.server import serve

    with serve(reg, auth=("alice", "s3cret")) as srv:
        yield srv


def test_factory_with_url_credentials_and_configs(server, reg):
    with SchemaInfoProviderFactory(url=server.url, auth=("alice", "s3cret"), retries=0) as factory:
        provider = factory.of("orders")
        assert factory.of("orders") is provider  # one provider per topic
        configs = provider.get_configs()
        assert configs["schema.registry.url"] == server.url
        assert configs["basic.auth.credentials.source"] == "USER_INFO"
        assert "s3cret" not in repr(configs) + repr(factory) + repr(provider)
        assert provider.is_external
        schema = factory.avro_schema("orders", USER_V1)
        encoded = schema.encode(None, {"id": 1, "name": "a"})
        assert reg.get_latest("orders-value").id == struct.unpack(">I", encoded.schema_id)[0]
        assert schema.decode_batch([encoded.data]).to_pylist() == [{"id": 1, "name": "a"}]
    with pytest.raises(ValueError, match="either"):
        SchemaInfoProviderFactory()
    with pytest.raises(ValueError):
        SchemaInfoProviderFactory(reg, auth=("a", "b"))
    with (
        SchemaInfoProviderFactory(url=server.url, retries=0) as anonymous,
        pytest.raises(errors.RegistryError),
    ):
        anonymous.avro_schema("orders", USER_V1).encode(None, {"id": 1, "name": "a"})


def test_confluent_kafka_reads_our_bytes_and_we_read_theirs(server, reg):
    sr, ck_avro, MessageField, SerializationContext = _confluent_modules()
    client = sr.SchemaRegistryClient({"url": server.url, "basic.auth.user.info": "alice:s3cret", "max.retries": 0})
    try:
        with SchemaInfoProviderFactory(url=server.url, auth=("alice", "s3cret"), retries=0) as factory:
            ours = factory.avro_schema("events", USER_V2)
            ctx = SerializationContext("events", MessageField.VALUE)
            # ours -> confluent-kafka
            data = ours.encode(None, {"id": 1, "name": "a", "email": "a@x"}).data
            deserializer = ck_avro.AvroDeserializer(client)
            assert deserializer(data, ctx) == {"id": 1, "name": "a", "email": "a@x"}
            # confluent-kafka (v1, registered by its serializer under the same subject) -> ours
            serializer = ck_avro.AvroSerializer(client, json.dumps(USER_V1), conf={"auto.register.schemas": True})
            theirs = serializer({"id": 2, "name": "b"}, ctx)
            assert theirs[:1] == b"\x00"
            assert ours.decode("events", theirs) == {
                "id": 2,
                "name": "b",
                "email": "unknown",
            }
            assert ours.decode_batch([data, theirs]).to_pylist() == [
                {"id": 1, "name": "a", "email": "a@x"},
                {"id": 2, "name": "b", "email": "unknown"},
            ]
            rich = factory.avro_schema("rich", RICH)
            rich_ctx = SerializationContext("rich", MessageField.VALUE)
            assert deserializer(rich.encode(None, RICH_VALUE).data, rich_ctx) == RICH_VALUE
    finally:
        client.close()


def test_keyvalue_decode_batch_with_on_error_null_steps_around_bad_messages(backend, factory):
    """A message whose framing, key or value is bad is a null row with one error; the others decode."""
    kv = factory.keyvalue_schema("t", {"type": "string"}, USER_V1)
    good = kv.encode(None, ("k1", {"id": 1, "name": "a"})).data
    key_data, value_data = keyvalue.decode_inline(good)
    bad_value = keyvalue.encode_inline(key_data, value_data[:-1])  # the value's string cut short
    bad_key = keyvalue.encode_inline(key_data[:5] + b"\x09", value_data)  # the key's length past its end
    messages = [good, b"\x00\x00", bad_value, None, bad_key, good]
    decoded, report = kv.decode_batch(messages, on_error="null")
    assert decoded.column("key").to_pylist() == [{"value": "k1"}, None, None, None, None, {"value": "k1"}]
    assert decoded.column("value").to_pylist() == [
        {"id": 1, "name": "a"},
        None,
        None,
        None,
        None,
        {"id": 1, "name": "a"},
    ]
    assert report.column("index").to_pylist() == [1, 2, 4]
    framing, value_error, key_error = report.to_pylist()
    assert framing["code"] == int(ErrorCode.KV_TRUNCATED_LENGTH)
    assert "(message 1, byte" in framing["message"]
    assert value_error["code"] in (ErrorCode.AVRO_LENGTH_PAST_END, ErrorCode.AVRO_TRUNCATED)
    assert "(message 4, byte" in key_error["message"]
    with pytest.raises(errors.KeyValueFormatError):
        kv.decode_batch(messages)


def test_keyvalue_decode_batch_on_error_null_with_a_primitive_key(backend, factory):
    kv = factory.keyvalue_schema("t", pt.SchemaType.INT32, USER_V1)
    good = kv.encode(None, (7, {"id": 1, "name": "a"})).data
    _, value_data = keyvalue.decode_inline(good)
    short_key = keyvalue.encode_inline(b"\x00\x01", value_data)  # an INT32 needs 4 bytes
    decoded, report = kv.decode_batch([short_key, good], on_error="null")
    assert decoded.column("key").to_pylist() == [None, 7]
    assert decoded.column("value").to_pylist() == [None, {"id": 1, "name": "a"}]
    assert report.column("index").to_pylist() == [0]
    assert report.column("code").to_pylist() == [int(ErrorCode.PRIM_BAD_LENGTH)]
    with pytest.raises(errors.PrimitiveDecodeError):
        kv.decode_batch([short_key, good])
