"""What every ``pulsar-codec`` command shares: exit codes, printing and timing."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_REGISTRY",
    "EXIT_SCHEMA_MISSING",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "UsageError",
    "best_of",
    "err",
    "rate",
    "say",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_REGISTRY = 3
EXIT_SCHEMA_MISSING = 4
EXIT_UNREACHABLE = 5


class UsageError(Exception):
    """Arguments that parse but do not go together; the command exits with :data:`EXIT_USAGE`."""


def say(text: str = "") -> None:
    """Print one line of a command's result on stdout, at once (progress may interleave on stderr)."""
    print(text, flush=True)


def err(text: str) -> None:
    """Print a diagnostic on stderr, prefixed with the command's name."""
    print(f"pulsar-codec: {text}", file=sys.stderr, flush=True)


def rate(rows: int, seconds: float) -> str:
    """``rows`` per ``seconds`` as millions of rows per second, for the timing tables."""
    return f"{rows / seconds / 1e6:,.2f}M rows/s" if seconds > 0 else "n/a"


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """The shortest wall time of ``repeat`` calls of ``fn`` (the least disturbed run on a busy machine)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
