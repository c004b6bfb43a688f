"""The Protobuf encode kernel (``protobuf_encode``): the byte loops of the column-by-column encoder.
Both twins give the same bytes: each varint that of ``_varint_bytes`` (the Protobuf kernel's writer
of one varint), each length-prefixed body its prefix, length and body, each joined row its values
in column order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_codec._kernels import _backend
from pulsar_codec._kernels.protobuf_py import _varint_bytes

_SETTINGS = settings(max_examples=150, deadline=None)
prefixes = st.binary(max_size=3)
presence = st.none() | st.just("random")


def _present(rng_seed: int, n: int, kind: str | None) -> np.ndarray | None:
    return None if kind is None else np.random.default_rng(rng_seed).random(n) < 0.6


def _values(offsets: np.ndarray, data: np.ndarray) -> list[bytes]:
    return [bytes(data[offsets[i] : offsets[i + 1]]) for i in range(len(offsets) - 1)]


def _twins() -> list:
    return [
        _backend.get(name).protobuf_encode
        for name in ("cython", "python")
        if name == "python" or _backend.compiled_available()
    ]


@_SETTINGS
@given(prefixes, st.lists(st.integers(0, 2**64 - 1), max_size=60), presence, st.integers(0, 9))
def test_varint_fragments(prefix, values, kind, seed):
    present = _present(seed, len(values), kind)
    expected = [prefix + _varint_bytes(v) if present is None or present[i] else b"" for i, v in enumerate(values)]
    for kernel in _twins():
        offsets, data = kernel.varint_fragments(prefix, np.array(values, dtype=np.uint64), present)
        assert offsets[0] == 0 and _values(offsets, data) == expected


@_SETTINGS
@given(prefixes, st.lists(st.binary(max_size=300), max_size=40), presence, st.integers(0, 9), st.integers(0, 5))
def test_length_fragments(prefix, bodies, kind, seed, lead):
    present = _present(seed, len(bodies), kind)
    # offsets into a buffer that starts with other bytes: a sliced Arrow array's
    data = np.frombuffer(b"x" * lead + b"".join(bodies), dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in bodies])]).astype(np.int64) + lead
    expected = [
        prefix + _varint_bytes(len(b)) + b if present is None or present[i] else b"" for i, b in enumerate(bodies)
    ]
    for kernel in _twins():
        out_offsets, out = kernel.length_fragments(prefix, offsets, data, present)
        assert out_offsets[0] == 0 and _values(out_offsets, out) == expected


@_SETTINGS
@given(
    st.integers(0, 30).flatmap(
        lambda n: st.lists(st.lists(st.binary(max_size=12), min_size=n, max_size=n), max_size=6).map(
            lambda cols: (n, cols)
        )
    )
)
def test_join_fragments(case):
    n, columns = case
    parts = []
    for col in columns:
        offsets = np.concatenate([[3], 3 + np.cumsum([len(v) for v in col])]).astype(np.int64)
        parts.append((offsets, np.frombuffer(b"pad" + b"".join(col), dtype=np.uint8)))
    expected = [b"".join(col[i] for col in columns) for i in range(n)]
    for kernel in _twins():
        offsets, data = kernel.join_fragments(parts, n)
        assert len(offsets) == n + 1 and offsets[0] == 0 and _values(offsets, data) == expected


def test_inputs_that_do_not_fit_are_refused_by_both_twins():
    """The compiled twin copies with bounds checks off: offsets it cannot trust, and masks or columns
    of another length, are an error there before any copy, and the same error in the pure twin
    (they come from Arrow arrays, so this guards against a bug, never data)."""
    data = np.frombuffer(b"abc", dtype=np.uint8)
    for kernel in _twins():
        with pytest.raises(ValueError, match="outside"):
            kernel.length_fragments(b"", np.array([0, 4], dtype=np.int64), data, None)
        with pytest.raises(ValueError, match="decrease"):
            kernel.join_fragments([(np.array([0, 2, 1], dtype=np.int64), data)], 2)
        with pytest.raises(ValueError, match="length"):
            kernel.join_fragments([(np.array([0, 1], dtype=np.int64), data)], 2)
        with pytest.raises(ValueError, match="length"):
            kernel.varint_fragments(b"", np.array([1, 2], dtype=np.uint64), np.array([True]))
