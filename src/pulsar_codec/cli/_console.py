"""What every ``pulsar-codec`` command shares: exit codes, verbosity, printing, progress and timing.

Results go to stdout (:func:`say`, :func:`summary`), diagnostics and progress bars to stderr
(:func:`err`, :func:`progress`), so a command's output can be piped while its progress is watched.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REGISTRY",
    "EXIT_SCHEMA_MISSING",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "Progress",
    "UsageError",
    "best_of",
    "err",
    "library_log_level",
    "progress",
    "rate",
    "say",
    "set_verbosity",
    "summary",
    "verbosity",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_REGISTRY = 3
EXIT_SCHEMA_MISSING = 4
EXIT_UNREACHABLE = 5
EXIT_INTERRUPTED = 130
#: an unexpected exception (a bug): the same code as bad data, the message says which it was
EXIT_INTERNAL = 1

QUIET = -1
NORMAL = 0
VERBOSE = 1

_verbosity = NORMAL


class UsageError(Exception):
    """Arguments that parse but do not go together; the command exits with :data:`EXIT_USAGE`."""


def set_verbosity(level: int) -> None:
    """Set how much the commands print: ``-1`` quiet, ``0`` normal, ``1`` verbose (``--quiet``/``--verbose``)."""
    global _verbosity
    _verbosity = max(QUIET, min(VERBOSE, int(level)))


def verbosity() -> int:
    """The level :func:`set_verbosity` set: ``-1`` quiet, ``0`` normal, ``1`` verbose."""
    return _verbosity


def library_log_level() -> int:
    """The :mod:`logging` level for third-party libraries (pulsar-client, Spark): INFO when verbose, else WARNING."""
    return logging.INFO if _verbosity >= VERBOSE else logging.WARNING


def say(text: str = "") -> None:
    """Print one line of a command's result on stdout, at once (progress may interleave on stderr)."""
    print(text, flush=True)


def err(text: str) -> None:
    """Print a diagnostic on stderr, prefixed with the command's name."""
    print(f"pulsar-codec: {text}", file=sys.stderr, flush=True)


class Progress:
    """A handle on one progress bar; every method is a no-op when no bar is shown.

    The counts are kept either way (``completed``, ``total``), so a caller can read them back.
    """

    def __init__(self, bar: Any = None, task: Any = None, total: int | None = None) -> None:
        self._bar = bar
        self._task = task
        self.completed = 0
        self.total = total

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more units of work done."""
        self.completed += n
        if self._bar is not None:
            self._bar.update(self._task, advance=n)

    def update(self, *, completed: int | None = None, total: int | None = None, label: str | None = None) -> None:
        """Set the units done so far, the expected total or the bar's label (only those given)."""
        if completed is not None:
            self.completed = completed
        if total is not None:
            self.total = total
        if self._bar is not None:
            fields: dict[str, Any] = {}
            if completed is not None:
                fields["completed"] = completed
            if total is not None:
                fields["total"] = total
            if label is not None:
                fields["description"] = label
            self._bar.update(self._task, **fields)


def _stderr_is_terminal() -> bool:
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (OSError, ValueError):  # a closed or detached stream
        return False


@contextmanager
def progress(label: str, total: int | None = None) -> Iterator[Progress]:
    """A transient progress bar on stderr for the duration of the ``with`` block.

    Shows nothing when quiet or when stderr is not a terminal (pipes, log files, tests); the
    yielded :class:`Progress` then only counts. ``total=None`` shows a spinner with a count.
    """
    if _verbosity <= QUIET or not _stderr_is_terminal():
        yield Progress(total=total)
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichProgress

    bar = RichProgress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    )
    with bar:
        task = bar.add_task(label, total=total)
        yield Progress(bar, task, total)


def summary(title: str, rows: Sequence[tuple[str, str]]) -> None:
    """Print a two-column table (name, value) titled ``title`` on stdout; nothing when quiet."""
    if _verbosity <= QUIET:
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("item", style="bold")
    table.add_column("value", justify="right")
    for name, value in rows:
        table.add_row(name, value)
    # resolved per call, so a redirected sys.stdout (tests, pipes) receives the table
    Console(file=sys.stdout, highlight=False).print(table)
    sys.stdout.flush()


def rate(rows: int, seconds: float) -> str:
    """``rows`` per ``seconds`` for the timing tables: millions of rows per second, or thousands
    (or rows) where millions would print as 0.00M."""
    if seconds <= 0:
        return "n/a"
    per_s = rows / seconds
    if per_s >= 5_000:
        return f"{per_s / 1e6:,.2f}M rows/s"
    if per_s >= 1_000:
        return f"{per_s / 1e3:,.1f}k rows/s"
    return f"{per_s:,.0f} rows/s"


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """The shortest wall time of ``repeat`` calls of ``fn`` (the least disturbed run on a busy machine)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
