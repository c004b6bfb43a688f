"""The two benchmark schemas of the project (flat-5 and complex-12) and seeded record generators.

Shared by ``bench/`` and ``pulsar-codec bench`` so both measure the same workloads.
"""

from __future__ import annotations

import random
from typing import Any

__all__ = ["EVENT", "FLAT", "SCHEMAS", "SCHEMA_ID", "event_record", "flat_record"]

FLAT: dict[str, Any] = {
    "type": "record",
    "name": "Flat",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "count", "type": "int"},
        {"name": "score", "type": "double"},
        {"name": "name", "type": "string"},
        {"name": "flag", "type": "boolean"},
    ],
}
EVENT: dict[str, Any] = {
    "type": "record",
    "name": "Event",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "count", "type": "int"},
        {"name": "score", "type": "double"},
        {"name": "active", "type": "boolean"},
        {"name": "comment", "type": ["null", "string"]},
        {
            "name": "status",
            "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "ACTIVE", "SUSPENDED", "DELETED"]},
        },
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tags", "type": {"type": "array", "items": "int"}},
        {"name": "attrs", "type": {"type": "map", "values": "string"}},
        {
            "name": "location",
            "type": {
                "type": "record",
                "name": "Location",
                "fields": [{"name": "lat", "type": "double"}, {"name": "lon", "type": "double"}],
            },
        },
        {"name": "payload", "type": "bytes"},
    ],
}
SCHEMAS = {"flat-5": FLAT, "complex-12": EVENT}
SCHEMA_ID = 1  # the id the benchmarks frame their messages with
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return "".join(rng.choice(_LETTERS) for _ in range(rng.randint(lo, hi)))


def flat_record(rng: random.Random) -> dict[str, Any]:
    """One flat-5 record (spec/peers-and-targets.md)."""
    return {
        "id": rng.getrandbits(40),
        "count": rng.randint(-(10**6), 10**6),
        "score": rng.random() * 1000,
        "name": _text(rng, 5, 20),
        "flag": rng.random() < 0.5,
    }


def event_record(rng: random.Random) -> dict[str, Any]:
    """One complex-12 record (spec/peers-and-targets.md)."""
    return {
        "id": rng.getrandbits(40),
        "name": _text(rng, 5, 20),
        "count": rng.randint(0, 10**5),
        "score": rng.random() * 100,
        "active": rng.random() < 0.5,
        "comment": None if rng.random() < 0.3 else _text(rng, 10, 60),
        "status": rng.choice(["NEW", "ACTIVE", "SUSPENDED", "DELETED"]),
        "ts": 1_700_000_000_000 + rng.randint(0, 10**10),
        "tags": [rng.randint(0, 10**4) for _ in range(rng.randint(0, 8))],
        "attrs": {_text(rng, 3, 8): _text(rng, 5, 15) for _ in range(rng.randint(0, 4))},
        "location": {"lat": rng.uniform(-90, 90), "lon": rng.uniform(-180, 180)},
        "payload": rng.randbytes(rng.randint(8, 32)),
    }
