"""The build: a compiler failure falls back to the pure twin (and says so), unless extensions are required."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "__pycache__"))
    return tmp_path


def build(folder, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PULSAR_CODEC_")}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=folder, env=environment, capture_output=True, text=True, timeout=600,
    )


@pytest.mark.slow
def test_compiler_failure_falls_back_to_the_pure_twin(source_copy):
    out = build(source_copy, CC="false", LDSHARED="false")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "the pure-Python twin will be used" in out.stderr
    assert not list((source_copy / "src" / "pulsar_codec").glob("*.so"))


@pytest.mark.slow
def test_compiler_failure_is_fatal_when_extensions_are_required(source_copy):
    out = build(source_copy, CC="false", LDSHARED="false", PULSAR_CODEC_REQUIRE_EXTENSIONS="1")
    assert out.returncode != 0


@pytest.mark.slow
def test_no_extensions_switch_builds_nothing(source_copy):
    out = build(source_copy, PULSAR_CODEC_NO_EXTENSIONS="1")
    assert out.returncode == 0, out.stderr[-2000:]
    assert not list((source_copy / "src" / "pulsar_codec").glob("*.so"))
