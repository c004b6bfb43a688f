"""Backend selection: the compiled twin is really used when required, both twins expose the same API,
and a fallback to the pure twin is announced (or refused)."""

import ast
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pulsar_codec
from pulsar_codec._kernels import _backend

KERNELS = Path(_backend.__file__).resolve().parent

# Runs in a child interpreter: make every compiled twin fail to import, then import the package.
BLOCKED_IMPORT = """
import sys

class BlockCompiledKernels:
    def find_spec(self, name, path=None, target=None):
        if name.startswith("pulsar_codec._kernels.") and name.endswith("_c"):
            raise ImportError(f"blocked by the test: {name}")
        return None

if sys.argv[1] == "block":
    sys.meta_path.insert(0, BlockCompiledKernels())
import pulsar_codec
import pulsar_codec.wire  # more imports of the package must not repeat the warning
print(pulsar_codec.BACKEND)
"""
FALLBACK_WARNING = "pulsar_codec: the compiled kernels are not available"


def test_required_extensions_are_compiled():
    if os.environ.get("PULSAR_CODEC_REQUIRE_EXTENSIONS") == "1" and not os.environ.get("PULSAR_CODEC_NO_EXTENSIONS"):
        assert pulsar_codec.BACKEND == "cython"
        assert _backend.compiled_available()


def test_backend_name_is_reported():
    assert pulsar_codec.BACKEND in ("cython", "python")


def _parameters(function):
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("domain", _backend.DOMAINS)
def test_twins_share_names_and_signatures(domain, both_backends):
    compiled, pure = (getattr(b, domain) for b in both_backends)
    assert sorted(compiled.__all__) == sorted(pure.__all__)
    for name in pure.__all__:
        c, p = getattr(compiled, name), getattr(pure, name)
        if callable(p) and not isinstance(p, type):
            assert _parameters(c) == _parameters(p), name
        elif not callable(p):
            assert c == p, name


@pytest.mark.parametrize("domain", _backend.DOMAINS)
def test_every_compiled_twin_has_a_stub_with_its_names(domain):
    stub = ast.parse((KERNELS / f"{domain}_c.pyi").read_text())
    imported = {alias.asname for node in stub.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    listed = next(
        ast.literal_eval(node.value)
        for node in stub.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets)
    )
    pure = _backend.get("python")
    assert sorted(listed) == sorted(getattr(pure, domain).__all__)
    assert imported == set(listed)


def test_use_switches_and_restores():
    before = _backend.active()
    with _backend.use("python") as b:
        assert _backend.active() is b and b.name == "python"
    assert _backend.active() is before


def _child(mode, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PULSAR_CODEC_")}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-c", BLOCKED_IMPORT, mode],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_a_failed_compiled_import_is_logged_once_with_the_reason():
    out = _child("block")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "python"
    assert out.stderr.count(FALLBACK_WARNING) == 1, out.stderr
    assert "blocked by the test: pulsar_codec._kernels." in out.stderr


@pytest.mark.slow
def test_a_failed_compiled_import_is_an_error_when_extensions_are_required():
    out = _child("block", PULSAR_CODEC_REQUIRE_EXTENSIONS="1")
    assert out.returncode != 0
    assert "ImportError: PULSAR_CODEC_REQUIRE_EXTENSIONS is set" in out.stderr
    assert "blocked by the test" in out.stderr


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["block", "free"])
def test_asking_for_the_pure_twin_is_not_announced(mode):
    out = _child(mode, PULSAR_CODEC_NO_EXTENSIONS="1")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "python"
    assert FALLBACK_WARNING not in out.stderr
