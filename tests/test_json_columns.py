"""The JSON kernel's ``decode``: payloads parsed straight into the Avro column builders.

The compiled twin appends each value to the builders as it parses it (bridging the nodes it has no
shortcut for through the Avro interpreter); the pure twin transcodes every payload and runs the Avro
kernel on the bytes. Both must give the same columns and the same errors, which these tests check
on hand-picked objects (key order, repeated keys inside lists, defaults, extra keys, errors in the
middle of a row) and, with hypothesis, on random programs with valid, mutated and repeated-key
payloads, null rows and several segments.
"""

import base64
import datetime
import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pulsar_codec._kernels.defs import (
    J_ARRAY,
    J_BOOL,
    J_BYTES_B64,
    J_DATE,
    J_DOUBLE,
    J_ENUM,
    J_FIXED_B64,
    J_FLOAT,
    J_INT,
    J_LONG,
    J_MAP,
    J_NULL,
    J_NULLABLE,
    J_OBJECT,
    J_STRING,
    J_TEXT,
    J_TIME,
    J_TIMESTAMP,
    JSON_MISSING_REQUIRED,
    JSON_UNEXPECTED_BYTE,
    JSON_WRONG_TYPE,
)
from pulsar_codec.errors import SchemaError
from pulsar_codec.formats.avro import schema as avro_schema
from pulsar_codec.formats.avro._assemble import assemble
from pulsar_codec.formats.avro.format import kernel_layout
from pulsar_codec.formats.avro.plan import build_layout, build_plan
from test_json_kernel import _field, dump, json_values, names, obj
from test_json_kernel import shadow as base_shadow
from test_json_kernel import values_for as base_values_for


def shadow(tree, counter):
    """``test_json_kernel.shadow`` with the format nodes too."""
    op = tree[0]
    if op == J_TIMESTAMP:
        return {"type": "long", "logicalType": "timestamp-micros"}
    if op == J_TIME:
        return {"type": "long", "logicalType": "time-micros"}
    if op == J_DATE:
        return {"type": "int", "logicalType": "date"}
    if op == J_FIXED_B64:
        counter[0] += 1
        return {"type": "fixed", "name": f"X{counter[0]}", "size": tree[1]}
    if op in (J_NULLABLE, J_ARRAY, J_MAP):
        child = shadow(tree[1], counter)
        if op == J_ARRAY:
            return {"type": "array", "items": child}
        if op == J_MAP:
            return {"type": "map", "values": child}
        return ["null", *child] if isinstance(child, list) else ["null", child]
    if op == J_OBJECT:
        counter[0] += 1
        number = counter[0]
        fields = [{"name": f"f{i}", "type": shadow(child, counter)} for i, (_, child, _) in enumerate(tree[1])]
        if tree[2]:
            fields.append({"name": "extra", "type": ["null", "string"]})
        return {"type": "record", "name": f"R{number}", "fields": fields}
    return base_shadow(tree, counter)


def plan_of(tree):
    """(Avro program, layout) of ``tree``'s shadow schema read as itself."""
    schema = avro_schema.parse(json.dumps(shadow(tree, [0])))
    layout = build_layout(schema)
    return build_plan(schema, schema, layout), layout


def columns(kernels, tree, payloads, keep_going=True, validity=None, cuts=()):
    """Run ``decode`` on ``payloads`` (split into segments at ``cuts``); (errors, batch, bug)."""
    program, layout = plan_of(tree)
    segments, bounds = [], [0, *cuts, len(payloads)]
    for a, b in zip(bounds, bounds[1:]):
        data, starts, ends = bytearray(b"#"), [], []
        for p in payloads[a:b]:
            starts.append(len(data))
            data += p
            ends.append(len(data))
            data += b"#"  # bytes outside a row must never be read
        valid = None if validity is None else np.array(validity[a:b], dtype=bool)
        segments.append((bytes(data), np.array(starts, np.int64), np.array(ends, np.int64), valid))
    errors, outputs, bug = kernels.json.decode(
        kernels.json.Program(tree, program),
        kernel_layout(layout, kernels.avro),
        kernels.avro.Program(*program),
        segments,
        keep_going,
        None,
    )
    return errors, assemble(layout, outputs), bug


def agree(both_backends, tree, payloads, **kw):
    """Both twins' results, checked equal; the pure twin's."""
    compiled, pure = (columns(b, tree, payloads, **kw) for b in both_backends)
    assert compiled[0] == pure[0]
    assert compiled[1].equals(pure[1]), (compiled[1].to_pylist(), pure[1].to_pylist())
    assert compiled[2] is None and pure[2] is None
    return pure


# -- hand-picked ----------------------------------------------------------------------------------------

ITEM = obj(("a", (J_STRING,), None), ("b", (J_LONG,), b"\x0e"), ("c", (J_NULLABLE, (J_STRING,)), b"\x00"))
ROWS = (
    J_OBJECT,
    (
        ("id", (J_LONG,), None),
        ("items", (J_ARRAY, ITEM), None),
        ("tags", (J_MAP, (J_DOUBLE,)), b"\x00"),
        ("at", (J_NULLABLE, (J_TIMESTAMP,)), b"\x00"),
        ("raw", (J_BYTES_B64,), b"\x00"),
    ),
    False,
)


def test_columns_match_the_values(both_backends):
    payloads = [
        b'{"id":1,"items":[{"a":"x","b":2,"c":"y"},{"c":null,"a":"z"}],"tags":{"k":1.5},"at":"2026-01-02T03:04:05Z"}',
        b'{"raw":"AAE=","items":[],"id":2}',
        b' { "items" : [ { "b" : 3 , "a" : "\\u00e9" } ] , "id" : 3 , "at" : null } ',
    ]
    errors, batch, _ = agree(both_backends, ROWS, payloads)
    assert errors == []
    rows = batch.to_pylist()
    assert [r["f0"] for r in rows] == [1, 2, 3]
    assert rows[0]["f1"] == [{"f0": "x", "f1": 2, "f2": "y"}, {"f0": "z", "f1": 7, "f2": None}]
    assert rows[0]["f2"] == [("k", 1.5)] and rows[1]["f2"] == []
    assert rows[0]["f3"] == datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    assert rows[1]["f4"] == b"\x00\x01" and rows[2]["f4"] == b""
    assert rows[2]["f1"] == [{"f0": "é", "f1": 3, "f2": None}]


def test_repeated_keys_inside_lists_keep_the_last_value(both_backends):
    payloads = [
        b'{"id":1,"items":[{"a":"first","c":"gone","a":"second","c":null},{"a":"x","a":"y","b":1,"b":2}]}',
        b'{"id":2,"id":3,"items":[{"a":"q"}],"items":[{"a":"r","c":"s"}]}',
    ]
    errors, batch, _ = agree(both_backends, ROWS, payloads)
    assert errors == []
    rows = batch.to_pylist()
    assert rows[0]["f1"] == [{"f0": "second", "f1": 7, "f2": None}, {"f0": "y", "f1": 2, "f2": None}]
    assert rows[1]["f0"] == 3 and rows[1]["f1"] == [{"f0": "r", "f1": 7, "f2": "s"}]


def test_a_bad_row_leaves_nothing_behind(both_backends):
    payloads = [
        b'{"id":1,"items":[{"a":"kept"}]}',
        b'{"id":2,"items":[{"a":"half","c":"written"},{"a":3}]}',  # fails inside the second item
        b'{"items":[{"a":"x"}],"tags":{"k":2}}',  # no id: fails at the end
        b'{"id":4,"items":[{"a":"last"}],"tags":{"k":1}} x',  # trailing bytes
        b'{"id":5,"items":[{"a":"after"}]}',
    ]
    errors, batch, _ = agree(both_backends, ROWS, payloads)
    assert [(e[0], e[1]) for e in errors] == [
        (JSON_WRONG_TYPE, 1),
        (JSON_MISSING_REQUIRED, 2),
        (JSON_UNEXPECTED_BYTE, 3),
    ]
    rows = batch.to_pylist()
    assert all(v is None for i in (1, 2, 3) for v in rows[i].values())  # null rows
    assert rows[4]["f1"] == [{"f0": "after", "f1": 7, "f2": None}]
    errors, batch, _ = agree(both_backends, ROWS, payloads, keep_going=False)
    assert [e[1] for e in errors] == [1] and batch.num_rows == 1


def test_null_rows_segments_and_extra_keys(both_backends):
    tree = obj(("a", (J_INT,), None), ("b", (J_NULLABLE, (J_STRING,)), b"\x00"), keep_extra=True)
    payloads = [b'{"a":1,"z":[1, 2],"b":"x","y":{}}', b"not read", b'{"a":2}', b'{"q":"\\"","a":3}']
    errors, batch, _ = agree(both_backends, tree, payloads, validity=[True, False, True, True], cuts=(1, 3))
    assert errors == []
    rows = batch.to_pylist()
    assert all(v is None for v in rows[1].values())  # a null row
    assert json.loads(rows[0]["extra"]) == {"z": [1, 2], "y": {}} and rows[2]["extra"] is None
    assert json.loads(rows[3]["extra"]) == {"q": '"'}


def test_objects_of_more_than_64_fields(both_backends):
    # past 64 fields the kernel keeps one flag per field on its stack instead of a bit mask
    fields = [(f"p{i}", (J_LONG,), None if i % 3 else b"\x02") for i in range(70)]
    nest = ("nest", (J_NULLABLE, obj(("a", (J_LONG,), b"\x00"), keep_extra=True)), b"\x00")
    tree = (J_OBJECT, (*fields, nest), True)
    ordered = {f"p{i}": i for i in range(70) if i % 3}
    shuffled = dict(reversed(list(ordered.items())))
    members = ",".join(f'"{k}":{v}' for k, v in shuffled.items())
    payloads = [
        json.dumps(ordered).encode(),
        # reversed, an extra key, repeats, and an inner object whose extra keys grow the kernel's stack
        (
            "{" + members + ',"x":[1],"p67":-5,"nest":' + json.dumps({f"e{i}": i for i in range(50)}) + ',"p3":3}'
        ).encode(),
        ("{" + members.replace('"p68":68,', "") + "}").encode(),  # a required property is missing
    ]
    errors, batch, _ = agree(both_backends, tree, payloads)
    assert [(e[0], e[1], e[3]) for e in errors] == [(JSON_MISSING_REQUIRED, 2, 68)]
    rows = batch.to_pylist()
    assert rows[0]["f0"] == 1 and rows[0]["f1"] == 1 and rows[0]["f68"] == 68 and rows[0]["extra"] is None
    assert (
        rows[1]["f67"] == -5
        and rows[1]["f3"] == 3
        and rows[1]["f0"] == 1
        and json.loads(rows[1]["extra"]) == {"x": [1]}
        and json.loads(rows[1]["f70"]["extra"]) == {f"e{i}": i for i in range(50)}
    )


def test_top_level_values_that_are_not_objects(both_backends):
    for tree, payloads in (
        ((J_ARRAY, (J_LONG,)), [b"[1,2]", b"[]", b"[3"]),
        ((J_NULLABLE, (J_STRING,)), [b'"a"', b"null", b"1"]),
        ((J_MAP, (J_NULLABLE, (J_BOOL,))), [b'{"a":true,"b":null}', b"{}"]),
    ):
        agree(both_backends, tree, payloads)


def test_decode_needs_the_avro_program(both_backends):
    tree = obj(("a", (J_LONG,), None))
    program, layout = plan_of(tree)
    for kernels in both_backends:
        with pytest.raises(ValueError, match="Avro program"):
            kernels.json.decode(
                kernels.json.Program(tree),
                kernel_layout(layout, kernels.avro),
                kernels.avro.Program(*program),
                [],
                True,
            )
        with pytest.raises(ValueError, match="Avro program"):
            kernels.json.Program(tree, [])
        with pytest.raises(ValueError, match="no ops"):
            kernels.json.Program(tree, ((), ()))


# -- hypothesis -----------------------------------------------------------------------------------------

leaf_trees = st.one_of(
    st.sampled_from(
        [
            (J_NULL,),
            (J_BOOL,),
            (J_INT,),
            (J_LONG,),
            (J_FLOAT,),
            (J_DOUBLE,),
            (J_STRING,),
            (J_BYTES_B64,),
            (J_TEXT,),
            (J_TIMESTAMP,),
            (J_DATE,),
            (J_TIME,),
        ]
    ),
    st.integers(0, 4).map(lambda n: (J_FIXED_B64, n)),
    st.lists(names, min_size=1, max_size=4, unique=True).map(lambda s: (J_ENUM, tuple(s))),
)
trees = st.recursive(
    leaf_trees,
    lambda children: st.one_of(
        children.filter(lambda c: c[0] not in (J_NULL, J_NULLABLE)).map(lambda c: (J_NULLABLE, c)),
        children.map(lambda c: (J_ARRAY, c)),
        children.map(lambda c: (J_MAP, c)),
        st.tuples(
            st.lists(st.tuples(names, children, st.booleans()), max_size=5, unique_by=lambda f: f[0]), st.booleans()
        ).map(lambda t: (J_OBJECT, tuple(_field(*f) for f in t[0]), t[1])),
    ),
    max_leaves=12,
)
_INSTANTS = st.datetimes(datetime.datetime(1, 1, 1), datetime.datetime(9999, 12, 31))


def values_for(tree):
    """``test_json_kernel.values_for`` with the format nodes too."""
    op = tree[0]
    if op == J_TIMESTAMP:
        return _INSTANTS.map(lambda t: t.isoformat() + "Z")
    if op == J_DATE:
        return st.dates().map(lambda d: d.isoformat())
    if op == J_TIME:
        return st.times().map(lambda t: t.isoformat())
    if op == J_FIXED_B64:
        return st.binary(min_size=tree[1], max_size=tree[1]).map(lambda b: base64.b64encode(b).decode())
    if op in (J_NULLABLE, J_ARRAY, J_MAP):
        inner = values_for(tree[1])
        if op == J_NULLABLE:
            return st.none() | inner
        if op == J_ARRAY:
            return st.lists(inner, max_size=3)
        return st.dictionaries(st.text(max_size=4), inner, max_size=3)
    if op == J_OBJECT:
        known = {name for name, _, _ in tree[1]}

        @st.composite
        def record(draw):
            items = [
                (name, draw(values_for(child)))
                for name, child, missing in tree[1]
                if missing is None or draw(st.booleans())
            ]
            extras = draw(
                st.dictionaries(st.text(max_size=4).filter(lambda k: k not in known), json_values, max_size=2)
            )
            return dict(draw(st.permutations(items + list(extras.items()))))

        return record()
    return base_values_for(tree)


def render(draw, tree, value):
    """JSON text of ``value``, where objects of ``tree`` may repeat a key (earlier with another value)."""
    op = tree[0]
    if op == J_NULLABLE and value is not None:
        return render(draw, tree[1], value)
    if op == J_ARRAY and isinstance(value, list):
        return "[" + ",".join(render(draw, tree[1], v) for v in value) + "]"
    if op == J_MAP and isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{render(draw, tree[1], v)}" for k, v in value.items()) + "}"
    if op == J_OBJECT and isinstance(value, dict):
        children = {name: child for name, child, _ in tree[1]}
        members = [(k, render(draw, children[k], v) if k in children else json.dumps(v)) for k, v in value.items()]
        for k in draw(st.lists(st.sampled_from(sorted(children)), max_size=2)) if children else []:
            earlier = render(draw, children[k], draw(values_for(children[k]) | json_values))
            members.insert(draw(st.integers(0, len(members))), (k, earlier))
        return "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in members) + "}"
    return json.dumps(value, ensure_ascii=False)


def runnable(tree):
    """Whether the tree's shadow schema has a layout (Avro records need not be empty, Arrow structs do)."""
    try:
        plan_of(tree)
    except (SchemaError, ValueError, pa.ArrowException):
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(data=st.data(), tree=trees)
def test_twins_build_the_same_columns_from_valid_payloads(both_backends, data, tree):
    assume(runnable(tree))
    values = data.draw(st.lists(values_for(tree), min_size=1, max_size=5))
    payloads = [dump(v, data.draw(st.integers(0, 2))) for v in values]
    errors, batch, _ = agree(both_backends, tree, payloads)
    assert errors == [] and batch.num_rows == len(payloads)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), tree=trees)
def test_twins_agree_on_repeated_keys_mutations_null_rows_and_segments(both_backends, data, tree):
    assume(runnable(tree))
    payloads = []
    for _ in range(data.draw(st.integers(1, 5))):
        text = bytearray(render(data.draw, tree, data.draw(values_for(tree) | json_values)).encode())
        for _ in range(data.draw(st.integers(0, 2))):
            action = data.draw(st.integers(0, 3))
            at = data.draw(st.integers(0, len(text)))
            if action == 0:
                del text[at:]
            elif action == 1 and at < len(text):
                text[at] = data.draw(st.sampled_from(list(b'{}[]",:\\ 0-.eE9tfnu\x00\x1f\x80\xc3\xe2\xed\xf0\xff')))
            elif action == 2:
                text[at:at] = data.draw(st.binary(min_size=1, max_size=3))
            elif at < len(text):
                del text[at]
        payloads.append(bytes(text))
    validity = data.draw(st.none() | st.lists(st.booleans(), min_size=len(payloads), max_size=len(payloads)))
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(payloads)), max_size=2))))
    agree(both_backends, tree, payloads, keep_going=data.draw(st.booleans()), validity=validity, cuts=tuple(cuts))
