"""Shared helpers for the Avro tests (fastavro encoding, value normalisation, hypothesis schemas)."""

from __future__ import annotations

import datetime
import decimal
import io
import math
import struct
import uuid
from typing import Any

import fastavro
import pyarrow as pa
from hypothesis import strategies as st


def encode(schema: Any, records: list) -> list[bytes]:
    parsed = (
        fastavro.parse_schema(schema, _write_hint=False) if isinstance(schema, dict) else fastavro.parse_schema(schema)
    )
    out = []
    for r in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, r)
        out.append(buf.getvalue())
    return out


def fastavro_read(body: bytes, writer: Any, reader: Any = None) -> Any:
    w = fastavro.parse_schema(writer)
    r = fastavro.parse_schema(reader) if reader is not None else None
    return fastavro.schemaless_reader(io.BytesIO(body), w, r)


def norm(v: Any) -> Any:
    """Canonical form for comparing fastavro values with Arrow ``to_pylist`` values."""
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return {k: norm(x) for k, x in v}
        return [norm(x) for x in v]
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str):  # fastavro (name, record)
        return norm(v[1])
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def same_batch(a: pa.RecordBatch, b: pa.RecordBatch) -> bool:
    if a.equals(b):
        return True
    # NaN != NaN in Array.equals: fall back to the IPC bytes
    return a.schema == b.schema and a.serialize().to_pybytes() == b.serialize().to_pybytes()


# -- hypothesis: random schemas with matching data --------------------------------------------------


class _Names:
    def __init__(self) -> None:
        self.n = 0

    def next(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"


_PRIMS = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
_LOGICAL = [
    {"type": "int", "logicalType": "date"},
    {"type": "int", "logicalType": "time-millis"},
    {"type": "long", "logicalType": "time-micros"},
    {"type": "long", "logicalType": "timestamp-millis"},
    {"type": "long", "logicalType": "timestamp-micros"},
    {"type": "long", "logicalType": "local-timestamp-millis"},
    {"type": "long", "logicalType": "local-timestamp-micros"},
    {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3},
    {"type": "string", "logicalType": "uuid"},
    {"type": "long", "logicalType": "some-unknown-type"},
]


@st.composite
def schemas(draw, depth: int = 0, names: _Names | None = None, allow_union: bool = True) -> Any:
    names = names or _Names()
    leaf = depth >= 3
    choices = ["prim", "logical", "enum", "fixed", "decfixed"]
    if not leaf:
        choices += ["record", "array", "map", "record"]
        if allow_union:
            choices += ["union", "nullable"]
    kind = draw(st.sampled_from(choices))
    if kind == "prim":
        return draw(st.sampled_from(_PRIMS))
    if kind == "logical":
        return dict(draw(st.sampled_from(_LOGICAL)))
    if kind == "enum":
        k = draw(st.integers(1, 5))
        return {"type": "enum", "name": names.next("E"), "symbols": [f"S{i}" for i in range(k)]}
    if kind == "fixed":
        return {"type": "fixed", "name": names.next("F"), "size": draw(st.integers(0, 6))}
    if kind == "decfixed":
        return {
            "type": "fixed",
            "name": names.next("D"),
            "size": 8,
            "logicalType": "decimal",
            "precision": 15,
            "scale": 2,
        }
    if kind == "record":
        k = draw(st.integers(0, 4))
        fields = [{"name": f"f{i}", "type": draw(schemas(depth + 1, names))} for i in range(k)]
        return {"type": "record", "name": names.next("R"), "fields": fields}
    if kind == "array":
        return {"type": "array", "items": draw(schemas(depth + 1, names))}
    if kind == "map":
        return {"type": "map", "values": draw(schemas(depth + 1, names))}
    if kind == "nullable":
        inner = draw(schemas(depth + 1, names, allow_union=False))
        if inner == "null":
            inner = "long"
        return draw(st.sampled_from([["null", inner], [inner, "null"]]))
    # general union: distinct unnamed kinds plus at most one record
    branches = draw(
        st.lists(
            st.sampled_from(["null", "boolean", "long", "double", "string", "bytes"]),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    if draw(st.booleans()):
        branches.append({"type": "record", "name": names.next("U"), "fields": [{"name": "x", "type": "int"}]})
    if branches in (["null"],):
        branches.append("long")
    if len(branches) == 2 and "null" in branches:
        branches.append("long" if "long" not in branches else "string")
    return branches


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def values(schema: Any) -> st.SearchStrategy:
    """Values fastavro can write for ``schema`` (as produced by :func:`schemas`)."""
    if isinstance(schema, list):
        return st.one_of([values(b) for b in schema])
    if isinstance(schema, str):
        return {
            "null": st.none(),
            "boolean": st.booleans(),
            "int": st.integers(-(2**31), 2**31 - 1),
            "long": st.integers(-(2**63), 2**63 - 1),
            "float": st.floats(width=32, allow_nan=False),
            "double": st.floats(allow_nan=False),
            "bytes": st.binary(max_size=20),
            "string": st.text(max_size=12),
        }[schema]
    t = schema["type"]
    lt = schema.get("logicalType")
    if lt == "date":
        return st.dates(datetime.date(1900, 1, 1), datetime.date(2200, 1, 1))
    if lt == "time-millis":
        return st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))
    if lt == "time-micros":
        return st.times()
    if lt in ("timestamp-millis", "timestamp-micros"):
        base = st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2200, 1, 1))
        if lt == "timestamp-millis":
            base = base.map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
        return base.map(lambda d: d.replace(tzinfo=datetime.UTC))
    if lt in ("local-timestamp-millis", "local-timestamp-micros"):
        base = st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2200, 1, 1))
        if lt == "local-timestamp-millis":
            base = base.map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
        return base
    if lt == "decimal":
        p, s = schema["precision"], schema["scale"]
        return st.integers(-(10**p) + 1, 10**p - 1).map(lambda i: decimal.Decimal(i).scaleb(-s))
    if lt == "uuid":
        return st.uuids().map(str)
    if t in ("int", "long", "string", "bytes") and lt:
        return values(t)
    if t == "enum":
        return st.sampled_from(schema["symbols"])
    if t == "fixed":
        return st.binary(min_size=schema["size"], max_size=schema["size"])
    if t == "array":
        return st.lists(values(schema["items"]), max_size=4)
    if t == "map":
        return st.dictionaries(st.text(max_size=5), values(schema["values"]), max_size=3)
    if t == "record":
        return st.fixed_dictionaries({f["name"]: values(f["type"]) for f in schema["fields"]})
    raise AssertionError(schema)


def norm_s(schema: Any, v: Any) -> Any:
    """Schema-aware :func:`norm` (an empty map is ``[]`` in Arrow's ``to_pylist`` and ``{}`` in fastavro)."""
    if v is None:
        return None
    if schema == "float" and isinstance(v, (int, float)):  # fastavro keeps promoted floats as doubles
        return norm(struct.unpack("<f", struct.pack("<f", v))[0])
    if isinstance(schema, list):
        others = [b for b in schema if b != "null"]
        if len(schema) == 2 and len(others) == 1:
            return norm_s(others[0], v)
        return norm(v)
    if isinstance(schema, dict):
        t = schema["type"]
        if t == "map":
            items = v.items() if isinstance(v, dict) else v
            return {k: norm_s(schema["values"], x) for k, x in items}
        if t == "array":
            return [norm_s(schema["items"], x) for x in v]
        if t == "record":
            return {f["name"]: norm_s(f["type"], v[f["name"]]) for f in schema["fields"]}
    return norm(v)
