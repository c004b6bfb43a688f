"""The build: a compiler failure falls back to the pure twin (and says so), unless extensions are required;
the sdist carries what a wheel is built from, the wheel only what runs (and its type information)."""

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from pulsar_codec._kernels import _backend

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("Cython")
pytest.importorskip("setuptools")


@pytest.fixture
def source_copy(tmp_path):
    if not (ROOT / "setup.py").exists():
        pytest.skip("needs the source tree (setup.py), not an installed wheel")
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "csrc", tmp_path / "csrc")
    shutil.copytree(
        ROOT / "src",
        tmp_path / "src",
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "__pycache__", "*.egg-info"),
    )
    return tmp_path


def _environment(env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PULSAR_CODEC_")}
    environment.update(env)
    return environment


def build(folder, **env):
    return subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=folder,
        env=_environment(env),
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_compiler_failure_falls_back_to_the_pure_twin(source_copy):
    out = build(source_copy, CC="false", LDSHARED="false")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "the pure-Python twin will be used" in out.stderr
    assert not list((source_copy / "src" / "pulsar_codec").rglob("*.so"))


@pytest.mark.slow
def test_compiler_failure_is_fatal_when_extensions_are_required(source_copy):
    out = build(source_copy, CC="false", LDSHARED="false", PULSAR_CODEC_REQUIRE_EXTENSIONS="1")
    assert out.returncode != 0


@pytest.mark.slow
def test_no_extensions_switch_builds_nothing(source_copy):
    out = build(source_copy, PULSAR_CODEC_NO_EXTENSIONS="1")
    assert out.returncode == 0, out.stderr[-2000:]
    assert not list((source_copy / "src" / "pulsar_codec").rglob("*.so"))


# one PEP 517 hook, run in this interpreter (no isolated environment, so no network)
BUILD_HOOK = """
import sys
from setuptools import build_meta
print("BUILT", getattr(build_meta, sys.argv[1])(sys.argv[2]))
"""


def _distribution(folder, hook):
    out = subprocess.run(
        [sys.executable, "-c", BUILD_HOOK, hook, str(folder / "dist")],
        cwd=folder,
        env=_environment({"PULSAR_CODEC_NO_EXTENSIONS": "1"}),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    built = [line.split()[1] for line in out.stdout.splitlines() if line.startswith("BUILT ")]
    return folder / "dist" / built[-1]


@pytest.mark.slow
def test_sdist_has_the_kernel_sources_and_the_wheel_only_what_runs(source_copy):
    with tarfile.open(_distribution(source_copy, "build_sdist")) as sdist:
        in_sdist = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    for needed in ("csrc/pc_defs.h", "csrc/pc_status.h", "csrc/pc_avro.h", "src/pulsar_codec/_kernels/defs.pxd"):
        assert needed in in_sdist
    kernels = "src/pulsar_codec/_kernels/"
    for domain in _backend.DOMAINS:
        assert {f"{kernels}{domain}_c.pyx", f"{kernels}{domain}_c.pyi", f"{kernels}{domain}_py.py"} <= in_sdist
    assert not [name for name in in_sdist if name.endswith(".c")]
    with zipfile.ZipFile(_distribution(source_copy, "build_wheel")) as wheel:
        in_wheel = set(wheel.namelist())
    assert "pulsar_codec/py.typed" in in_wheel
    assert "pulsar_codec/_kernels/wire_c.pyi" in in_wheel and "pulsar_codec/_kernels/defs.py" in in_wheel
    assert not [name for name in in_wheel if name.endswith((".c", ".pyx", ".pxd"))]
