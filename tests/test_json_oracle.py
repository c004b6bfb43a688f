"""Oracle for the JSON decoder: generated JSON Schemas, instances from hypothesis-jsonschema, and
``json.loads`` mapped by the README's "JSON Schema -> Arrow" table, on both kernel backends.

Each example draws a schema from :func:`schemas` (only what the mapping types exactly: objects
with ``properties`` / ``required``, nullable types, integer, number, ``[integer, number]``,
boolean, null, strings with formats date, date-time, time and uuid, ``contentEncoding: base64``,
string enums with and without null, arrays, ``additionalProperties`` maps, nesting), a few
instances, and writes them with ``json.dumps`` in several styles (compact, indented, ASCII-only)
or with random whitespace between tokens and the object keys in random order, with properties the
schema does not name mixed in. The decoded batch must have the Arrow types the table names and the
values :func:`expected` computes from ``json.loads`` of the same text; ``pc.decode`` runs on the
compiled and the pure twin. A second property cuts payloads short: ``json.loads`` refuses them,
and the decoder must report an error row at that index (never a crash, never a value).

Limitation: hypothesis-jsonschema 0.23.1 cannot draw instances of *object* schemas with the
installed hypothesis (6.170): its ``from_object_schema`` drives hypothesis' private
``conjecture.utils.many`` through a ``more()`` method that hypothesis has replaced by a
context-manager/iterator API, so every object draw fails with ``AttributeError: 'many' object has
no attribute 'more'``. Objects (with properties, and ``additionalProperties`` maps) and arrays
holding them are therefore drawn by :func:`instances` here, property by property, and
``from_schema`` draws every other schema (numbers within bounds, formatted strings, enums,
nullable type lists). Each whole instance is checked against its schema with ``jsonschema``
(format checks on), so the hand-drawn parts cannot drift from the schema either.
"""

from __future__ import annotations

import base64
import datetime
import json
import re

import jsonschema
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

import pulsar_codec as pc
from pulsar_codec import wire
from pulsar_codec.errors import ErrorCode

# -- schemas -----------------------------------------------------------------------------------------------

INT64 = {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1}
BASE64 = {"type": "string", "contentEncoding": "base64", "format": "base64-text"}
LEAVES = [
    INT64,
    {"type": "number"},
    {"type": ["integer", "number"], "minimum": -1e300, "maximum": 1e300},  # large integers read as float64
    {"type": "boolean"},
    {"type": "null"},
    {"type": "string"},
    {"type": "string", "format": "date-time"},
    {"type": "string", "format": "date"},
    {"type": "string", "format": "time"},
    {"type": "string", "format": "uuid"},
    BASE64,
]
# strategies for the formats hypothesis-jsonschema does not know; "base64-text" is a name only this
# test uses, so from_schema draws Base64 text where the schema says contentEncoding: base64
CUSTOM_FORMATS = {
    "uuid": st.uuids().map(str),
    "base64-text": st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode("ascii")),
}
# property names and texts with quotes, backslashes, controls, non-ASCII and astral characters
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)
NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=6)


def admits_null(schema):
    declared = schema.get("type")
    if declared == "null" or (isinstance(declared, list) and "null" in declared):
        return True
    if "enum" in schema and None in schema["enum"]:
        return True
    return any(admits_null(branch) for branch in schema.get("oneOf", schema.get("anyOf", [])))


def _enums():
    return st.lists(TEXT, min_size=1, max_size=4, unique=True).map(lambda symbols: {"type": "string", "enum": symbols})


def _nullable(draw, schema):
    """``schema`` made nullable in one of the spellings the mapping reads as nullable T."""
    if admits_null(schema):
        return schema
    declared = schema.get("type")
    spellings = ["oneOf", "anyOf"]
    if isinstance(declared, str) and declared not in ("object", "array"):
        spellings.append("type-list")
    way = draw(st.sampled_from(spellings))
    if way == "type-list":
        out = {**schema, "type": [declared, "null"]}
        if "enum" in schema:
            out["enum"] = [*schema["enum"], None]
        return out
    branches = [{"type": "null"}, schema]
    return {way: branches if draw(st.booleans()) else branches[::-1]}


@st.composite
def _maybe_nullable(draw, base):
    schema = draw(base)
    return _nullable(draw, schema) if draw(st.booleans()) else schema


@st.composite
def _object(draw, children):
    names = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
    properties = {name: draw(children) for name in names}
    required = [name for name in names if draw(st.booleans())]
    out = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


def _containers(children):
    return st.one_of(
        children.map(lambda items: {"type": "array", "items": items}),
        children.map(lambda values: {"type": "object", "additionalProperties": values}),
        _object(children),
    )


def schemas():
    """Root object schemas whose every part the JSON Schema -> Arrow table types exactly."""
    leaves = st.one_of(st.sampled_from(LEAVES), _enums())
    nodes = st.recursive(_maybe_nullable(leaves), lambda children: _maybe_nullable(_containers(children)), max_leaves=8)
    return _object(nodes)


# -- instances -----------------------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
# hypothesis-jsonschema writes times as Python's str(time) (0 or 6 fraction digits, upper-case T/Z);
# RFC 3339 also allows longer fractions (past microseconds they are dropped) and lower-case t / z
_CLOCKS = st.builds("{:02d}:{:02d}:{:02d}".format, st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
_FRACTIONS = st.just("") | st.from_regex(r"\.[0-9]{1,9}", fullmatch=True)
_OFFSETS = st.sampled_from(["Z", "z"]) | st.builds(
    "{}{:02d}:{:02d}".format, st.sampled_from("+-"), st.integers(0, 23), st.integers(0, 59)
)
_TIMES = st.builds("".join, st.tuples(_CLOCKS, _FRACTIONS, _OFFSETS))
MORE_TEXTS = {
    "time": _TIMES,
    "date-time": st.builds("".join, st.tuples(st.dates().map(str), st.sampled_from("Tt"), _TIMES)),
}
_LEAF_STRATEGIES: dict[str, st.SearchStrategy] = {}


def _leaf(schema):
    key = json.dumps(schema, sort_keys=True)
    found = _LEAF_STRATEGIES.get(key)
    if found is None:
        found = from_schema(schema, custom_formats=CUSTOM_FORMATS)
        if schema.get("format") in MORE_TEXTS:
            found = found | MORE_TEXTS[schema["format"]]
        _LEAF_STRATEGIES[key] = found
    return found


def _branch(schema):
    """The non-null branch of a oneOf / anyOf of null and one schema."""
    branches = schema.get("oneOf", schema.get("anyOf"))
    return next(b for b in branches if b != {"type": "null"})


@st.composite
def _object_instance(draw, schema):
    properties = schema["properties"]
    required = set(schema.get("required", ()))
    items = [
        (name, draw(instances(sub))) for name, sub in properties.items() if name in required or draw(st.booleans())
    ]
    extra = draw(st.dictionaries(NAMES.filter(lambda n: n not in properties), JSON_VALUES, max_size=2))
    items += list(extra.items())
    return dict(draw(st.permutations(items)))


def instances(schema):
    """Instances of a :func:`schemas` schema (see the module notes on why objects are drawn here)."""
    if "oneOf" in schema or "anyOf" in schema:
        return st.none() | instances(_branch(schema))
    if schema.get("type") == "object" and "properties" in schema:
        return _object_instance(schema)
    if schema.get("type") == "object":
        return st.dictionaries(TEXT, instances(schema["additionalProperties"]), max_size=3)
    if schema.get("type") == "array":
        return st.lists(instances(schema["items"]), max_size=3)
    return _leaf(schema)


# -- writing payloads ------------------------------------------------------------------------------------------

WHITESPACE = st.lists(st.sampled_from([" ", "\t", "\n", "\r", "", "", ""]), min_size=1, max_size=3).map("".join)


def loose_dumps(value, space, ensure_ascii):
    """JSON text of ``value`` with ``space()`` whitespace between all tokens."""
    if isinstance(value, dict):
        parts = [
            f"{space()}{json.dumps(k, ensure_ascii=ensure_ascii)}{space()}:{loose_dumps(v, space, ensure_ascii)}"
            for k, v in value.items()
        ]
        return f"{space()}{{{','.join(parts) or space()}}}{space()}"
    if isinstance(value, list):
        parts = [loose_dumps(v, space, ensure_ascii) for v in value]
        return f"{space()}[{','.join(parts) or space()}]{space()}"
    return f"{space()}{json.dumps(value, ensure_ascii=ensure_ascii)}{space()}"


@st.composite
def payload_texts(draw, value):
    style = draw(st.sampled_from(["compact", "default", "indent", "ascii", "loose"]))
    if style == "compact":
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if style == "default":
        return json.dumps(value, ensure_ascii=False)
    if style == "indent":
        return json.dumps(value, indent=draw(st.integers(0, 3)), ensure_ascii=False)
    if style == "ascii":  # non-ASCII as \\u escapes, astral characters as surrogate pairs
        return json.dumps(value)
    return loose_dumps(value, lambda: draw(WHITESPACE), draw(st.booleans()))


# -- what the README's table makes of a json.loads value -----------------------------------------------------

_DATE_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:\d\d)$")
_TIME = re.compile(r"(\d\d):(\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:\d\d)?$")
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()


def _micros(fraction):
    return int((fraction or "0")[:6].ljust(6, "0"))  # digits past microseconds are dropped


def epoch_micros(text):
    """An RFC 3339 date-time as microseconds since the epoch (any year, so no datetime objects)."""
    year, month, day, hour, minute, second, fraction, offset = _DATE_TIME.match(text).groups()
    days = datetime.date(int(year), int(month), int(day)).toordinal() - _EPOCH_ORDINAL
    seconds = days * 86400 + int(hour) * 3600 + int(minute) * 60 + int(second)
    if offset not in ("Z", "z"):
        sign = 1 if offset[0] == "+" else -1
        seconds -= sign * (int(offset[1:3]) * 3600 + int(offset[4:6]) * 60)
    return seconds * 1_000_000 + _micros(fraction)


def clock_time(text):
    """An RFC 3339 time as the clock time written (its offset is ignored)."""
    hour, minute, second, fraction, _ = _TIME.match(text).groups()
    return datetime.time(int(hour), int(minute), int(second), _micros(fraction))


def expected(schema, value):
    """The Arrow value (as ``to_pylist`` gives it, timestamps as epoch microseconds) of ``value``."""
    if value is None:
        return None
    if "oneOf" in schema or "anyOf" in schema:
        return expected(_branch(schema), value)
    declared = schema.get("type")
    kind = [t for t in declared if t != "null"] if isinstance(declared, list) else [declared]
    if kind == ["object"] and "properties" in schema:
        return {name: expected(sub, value.get(name)) for name, sub in schema["properties"].items()}
    if kind == ["object"]:
        return [(k, expected(schema["additionalProperties"], v)) for k, v in value.items()]
    if kind == ["array"]:
        return [expected(schema["items"], v) for v in value]
    if kind == ["number"] or kind == ["integer", "number"]:
        return float(value)
    if schema.get("contentEncoding") == "base64":
        return base64.b64decode(value)
    fmt = schema.get("format")
    if fmt == "date-time":
        return epoch_micros(value)
    if fmt == "date":
        return datetime.date.fromisoformat(value)
    if fmt == "time":
        return clock_time(value)
    return value  # integer, boolean, string, uuid, enum symbol


_SCALAR_TYPES = {
    "integer": pa.int64(),
    "number": pa.float64(),
    "boolean": pa.bool_(),
    "null": pa.null(),
    "string": pa.string(),
}
_FORMAT_TYPES = {
    "date-time": pa.timestamp("us", "UTC"),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "uuid": pa.string(),
}


def arrow_type(schema):
    """The Arrow type the README's table names for ``schema``, in :func:`shape_of`'s form: a struct
    as ``("struct", [(name, type, nullable), ...])``, lists and maps as ``("list" | "map", type)``."""
    if "oneOf" in schema or "anyOf" in schema:
        return arrow_type(_branch(schema))
    declared = schema.get("type")
    kind = [t for t in declared if t != "null"] if isinstance(declared, list) else [declared]
    if kind == ["object"] and "properties" in schema:
        required = set(schema.get("required", ()))
        return (
            "struct",
            [
                (name, arrow_type(sub), not (name in required and not admits_null(sub)))
                for name, sub in schema["properties"].items()
            ],
        )
    if kind == ["object"]:
        return ("map", arrow_type(schema["additionalProperties"]))
    if kind == ["array"]:
        return ("list", arrow_type(schema["items"]))
    if kind == ["integer", "number"]:
        return pa.float64()
    if "enum" in schema:
        return pa.dictionary(pa.int32(), pa.string())
    if schema.get("contentEncoding") == "base64":
        return pa.binary()
    if "format" in schema:
        return _FORMAT_TYPES[schema["format"]]
    return _SCALAR_TYPES[kind[0]] if kind else pa.null()


def shape_of(arrow):
    """An Arrow type in :func:`arrow_type`'s form (list and map children compared by type alone)."""
    if pa.types.is_struct(arrow):
        return ("struct", [(f.name, shape_of(f.type), f.nullable) for f in arrow])
    if pa.types.is_map(arrow):
        return ("map", shape_of(arrow.item_type))
    if pa.types.is_list(arrow):
        return ("list", shape_of(arrow.value_type))
    return arrow


def _has_timestamp(arrow):
    if pa.types.is_timestamp(arrow):
        return True
    return any(_has_timestamp(arrow.field(i).type) for i in range(arrow.num_fields))


def plain(array):
    """``array.to_pylist()``, with timestamps as epoch microseconds (years outside 1..9999 have no
    Python datetime). Written out here since pyarrow's cast and view of a ``map<string, null>``
    with several entries build an invalid array (pyarrow 26)."""
    arrow = array.type
    if pa.types.is_timestamp(arrow):
        return array.cast(pa.int64()).to_pylist()
    if not _has_timestamp(arrow):
        return array.to_pylist()
    valid = array.is_valid().to_pylist()
    if pa.types.is_struct(arrow):
        children = [(f.name, plain(array.field(i))) for i, f in enumerate(arrow)]
        return [{name: values[i] for name, values in children} if ok else None for i, ok in enumerate(valid)]
    offsets = array.offsets.to_pylist()
    spans = [(offsets[i], offsets[i + 1]) for i in range(len(array))]
    if pa.types.is_map(arrow):
        keys, items = array.keys.to_pylist(), plain(array.items)
        return [list(zip(keys[a:b], items[a:b])) if ok else None for (a, b), ok in zip(spans, valid)]
    values = plain(array.values)
    return [values[a:b] if ok else None for (a, b), ok in zip(spans, valid)]


def rows_of(batch):
    columns = [(name, plain(column)) for name, column in zip(batch.schema.names, batch.columns)]
    return [{name: values[i] for name, values in columns} for i in range(batch.num_rows)]


# -- the properties ------------------------------------------------------------------------------------------------

VALIDATOR = jsonschema.Draft7Validator
# jsonschema checks date and uuid itself; date-time and time need a package not installed here,
# so they are checked with this module's RFC 3339 patterns
FORMATS = jsonschema.FormatChecker(["date", "uuid"])


@FORMATS.checks("date-time", raises=(AttributeError, ValueError))
def _is_date_time(value):
    return not isinstance(value, str) or epoch_micros(value) is not None


@FORMATS.checks("time", raises=(AttributeError, ValueError))
def _is_time(value):
    return not isinstance(value, str) or clock_time(value) is not None


def _decode(schema, texts, on_error="raise"):
    messages = [wire.CONFLUENT.pack(7, text.encode("utf-8")) for text in texts]
    return pc.decode(messages, {7: json.dumps(schema)}, format="JSON", on_error=on_error)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_decoded_rows_equal_json_loads_mapped_by_the_table(backend, data):
    schema = data.draw(schemas(), label="schema")
    values = data.draw(st.lists(instances(schema), min_size=1, max_size=4), label="instances")
    for value in values:
        VALIDATOR(schema, format_checker=FORMATS).validate(value)
    texts = [data.draw(payload_texts(v), label="payload") for v in values]
    batch = _decode(schema, texts)

    _, columns = arrow_type(schema)  # top-level columns are all nullable (a bad row is a null row)
    assert shape_of(pa.struct(list(batch.schema))) == ("struct", [(n, t, True) for n, t, _ in columns])
    assert rows_of(batch) == [expected(schema, json.loads(text)) for text in texts]


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_cut_payloads_are_error_rows(backend, data):
    schema = data.draw(schemas(), label="schema")
    values = data.draw(st.lists(instances(schema), min_size=2, max_size=4), label="instances")
    texts = [json.dumps(v, ensure_ascii=data.draw(st.booleans())) for v in values]
    bad = data.draw(st.integers(0, len(texts) - 1), label="bad row")
    cut = data.draw(st.integers(1, len(texts[bad].encode("utf-8")) - 1), label="cut")
    text = texts[bad].encode("utf-8")[:cut].decode("utf-8", errors="ignore")
    with pytest.raises(ValueError):
        json.loads(text)  # the oracle: a cut object is never JSON
    texts[bad] = text
    result = _decode(schema, texts, on_error="null")
    errors = result.errors.to_pylist()
    assert [e["index"] for e in errors] == [bad]
    assert errors[0]["code"] in {ErrorCode.JSON_TRUNCATED, ErrorCode.JSON_UNEXPECTED_BYTE, ErrorCode.JSON_INVALID_UTF8}
    assert 0 <= errors[0]["offset"] <= len(text.encode("utf-8"))
    rows = rows_of(result.batch)
    assert rows[bad] == dict.fromkeys(result.batch.schema.names)
    good = [i for i in range(len(texts)) if i != bad]
    assert [rows[i] for i in good] == [expected(schema, json.loads(texts[i])) for i in good]
