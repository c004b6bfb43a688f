"""Backend selection: the compiled twin is really used when required, and both twins expose the same API."""

import inspect
import os

import pytest

import pulsar_codec
from pulsar_codec._kernels import _backend


def test_required_extensions_are_compiled():
    if os.environ.get("PULSAR_CODEC_REQUIRE_EXTENSIONS") == "1" and not os.environ.get("PULSAR_CODEC_NO_EXTENSIONS"):
        assert pulsar_codec.BACKEND == "cython"
        assert _backend.compiled_available()


def test_backend_name_is_reported():
    assert pulsar_codec.BACKEND in ("cython", "python")


@pytest.mark.parametrize("domain", _backend.DOMAINS)
def test_twins_share_names_and_signatures(domain, both_backends):
    compiled, pure = (getattr(b, domain) for b in both_backends)
    assert sorted(compiled.__all__) == sorted(pure.__all__)
    for name in pure.__all__:
        c, p = getattr(compiled, name), getattr(pure, name)
        if callable(p) and not isinstance(p, type):
            assert list(inspect.signature(c).parameters) == list(inspect.signature(p).parameters), name
        elif not callable(p):
            assert c == p, name


def test_use_switches_and_restores():
    before = _backend.active()
    with _backend.use("python") as b:
        assert _backend.active() is b and b.name == "python"
    assert _backend.active() is before
