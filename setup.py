"""Build the Cython kernels. Everything else about the package lives in pyproject.toml.

Environment switches (read at build time):
  PULSAR_CODEC_NO_EXTENSIONS=1       build no extension: a pure-Python (py3-none-any) install
  PULSAR_CODEC_REQUIRE_EXTENSIONS=1  a failing compile fails the build instead of falling back
  PULSAR_CODEC_DEBUG=1               -O0 -g, asserts on, Cython bounds checks forced on
  PULSAR_CODEC_SANITIZE=1            AddressSanitizer + UndefinedBehaviorSanitizer
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent
KERNELS = HERE / "src" / "pulsar_codec" / "_kernels"


def flag(name: str) -> bool:
    """Whether an environment switch is set (anything but empty, 0, false, no)."""
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


NO_EXTENSIONS = flag("PULSAR_CODEC_NO_EXTENSIONS")
REQUIRE = flag("PULSAR_CODEC_REQUIRE_EXTENSIONS")
DEBUG = flag("PULSAR_CODEC_DEBUG")
SANITIZE = flag("PULSAR_CODEC_SANITIZE")


def extensions() -> list[Extension]:
    """The kernels to compile: every ``*_c.pyx`` under src/pulsar_codec/_kernels (none when disabled)."""
    if NO_EXTENSIONS:
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        if REQUIRE:
            raise
        print("pulsar_codec: Cython is not available, installing the pure-Python twin", file=sys.stderr)
        return []
    ldflags: list[str] = []
    if sys.platform == "win32":
        cflags = ["/O2", "/std:c11"]
    elif DEBUG:
        cflags = ["-O0", "-g", "-UNDEBUG", "-std=c11"]
    else:
        warnings = ["-Wall", "-Wextra", "-Wno-unused-function", "-Wno-unused-parameter", "-Wno-unreachable-code"]
        cflags = ["-O3", "-std=c11", *warnings]
    if SANITIZE and sys.platform != "win32":
        san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
        cflags += san
        ldflags += san
    exts = [
        Extension(
            f"pulsar_codec._kernels.{pyx.stem}",
            [str(pyx.relative_to(HERE))],
            include_dirs=["csrc", "src/pulsar_codec/_kernels"],
            extra_compile_args=cflags,
            extra_link_args=ldflags,
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        )
        for pyx in sorted(KERNELS.glob("*_c.pyx"))
    ]
    # embedsignature + binding: inspect.signature works on the compiled functions (tests compare twins)
    directives: dict[str, Any] = {"language_level": 3, "embedsignature": True, "binding": True}
    if DEBUG:
        directives.update(boundscheck=True, wraparound=True)
    compiled: list[Extension] = cythonize(exts, compiler_directives=directives, quiet=True)
    return compiled


class OptionalBuildExt(build_ext):
    """Compile the kernels, but let the install succeed with the pure twin if the compiler fails."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # any compiler failure falls back
            self._fallback(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._fallback(exc)

    def _fallback(self, exc: Exception) -> None:
        if REQUIRE:
            raise exc
        print(
            f"pulsar_codec: compiling the kernels failed ({exc}); "
            "the pure-Python twin will be used (pulsar_codec.BACKEND == 'python')",
            file=sys.stderr,
        )


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
