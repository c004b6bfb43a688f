"""A real Pulsar broker for tests: the ``pulsar-lite`` binary, spawned on 127.0.0.1.

``pulsar-lite`` (PyPI) ships a single broker executable (``pulsar_lite/bin/pulsar-lite``) that speaks
the Pulsar binary protocol, so the official ``pulsar-client`` talks to it unchanged. It keeps
messages in RocksDB under ``db_path`` and has no broker-side schema registry (the PIP-420
situation: schemas live elsewhere).

The broker is started with an explicit TOML config::

    addr = "127.0.0.1:<free port>"
    db_path = "<tmp>/data/store"
    [metrics]
    enabled = false

i.e. ``pulsar-lite --config <tmp>/pulsar-lite.toml --log-level info``. Without a config it would
listen on ``0.0.0.0:6650`` and serve metrics on ``0.0.0.0:8080``; both are avoided here, and
:func:`start_broker` checks the log to make sure no metrics endpoint came up.

Load this module as a pytest plugin (``pytest_plugins = ["pulsar_fixtures"]`` in a test module, or
the same line in the root ``conftest.py``). It provides:

``pulsar_broker``   session scope: a running :class:`Broker` (url, port, data dir, log)
``pulsar_client``   function scope: a ``pulsar.Client`` connected to it, closed afterwards
``pulsar_topic``    function scope: a fresh persistent topic name for the test

Tests that need the broker are skipped only when ``pulsar-client`` or ``pulsar-lite`` is not
installed (the ``pulsar`` extra); a broker that is installed but fails to start is an error.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pulsar_codec.cli._broker import HOST, accepts, free_port, write_config

__all__ = ["Broker", "find_binary", "pulsar_broker", "pulsar_client", "pulsar_topic", "start_broker"]

READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


@dataclass
class Broker:
    """A running pulsar-lite broker process."""

    process: subprocess.Popen
    port: int
    workdir: Path
    log_path: Path
    command: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"pulsar://{HOST}:{self.port}"

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """Terminate the broker (SIGTERM, then SIGKILL after a grace period) and wait for it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_TIMEOUT_S)


def find_binary() -> str:
    """Path of the broker executable bundled with the installed ``pulsar_lite`` package."""
    import pulsar_lite.binary_finder

    return pulsar_lite.binary_finder.find_pulsar_lite_binary()


def start_broker(
    workdir: Path, *, binary: str | None = None, timeout: float = READY_TIMEOUT_S, default_partitions: int = 0
) -> Broker:
    """Spawn pulsar-lite bound to 127.0.0.1 on a free port and wait until it accepts connections.

    ``default_partitions`` > 0 makes every auto-created topic a partitioned topic with that many
    partitions.

    The port is chosen by binding port 0 and releasing it, so another process can take it in
    between; a broker that exits at once is retried on a new port (three attempts).

    Raises
    ------
    RuntimeError
        If the broker exits or does not accept connections within ``timeout`` seconds; the message
        carries the command line and the broker's log.
    """
    binary = binary or find_binary()
    workdir = Path(workdir).resolve()  # the broker runs in workdir: relative paths would point inside it again
    workdir.mkdir(parents=True, exist_ok=True)
    failures = []
    for attempt in range(3):
        port = free_port()
        config = write_config(workdir, port, default_partitions)
        log_path = workdir / f"broker-{attempt}.log"
        command = [binary, "--config", str(config), "--log-level", "info"]
        env = {k: v for k, v in os.environ.items() if k != "RUST_LOG"}
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        broker = Broker(process=process, port=port, workdir=workdir, log_path=log_path, command=command)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None and not accepts(port):
            time.sleep(0.05)
        if process.poll() is None and accepts(port):
            log = broker.log_text()
            if "Metrics endpoint" in log:
                broker.stop()
                raise RuntimeError(f"pulsar-lite opened a metrics endpoint despite [metrics] enabled = false:\n{log}")
            return broker
        exited_early = process.poll() is not None
        broker.stop()
        failures.append(
            f"attempt {attempt + 1}: {' '.join(command)} (exit code {process.returncode})\n{broker.log_text()}"
        )
        if not exited_early or "in use" not in broker.log_text().lower():
            break  # not a port race: retrying will not help
    raise RuntimeError("pulsar-lite broker did not start on " + HOST + ":\n" + "\n".join(failures))


@pytest.fixture(scope="session")
def pulsar_broker(tmp_path_factory):
    """A pulsar-lite broker on 127.0.0.1 for the whole session; stopped at the end."""
    pytest.importorskip("pulsar", reason="pulsar-client is not installed (extra 'pulsar')")
    pytest.importorskip("pulsar_lite", reason="pulsar-lite is not installed (extra 'test')")
    workdir = tmp_path_factory.mktemp("pulsar-lite")
    broker = start_broker(workdir)
    try:
        yield broker
    finally:
        broker.stop()
        shutil.rmtree(workdir / "data", ignore_errors=True)


@pytest.fixture
def pulsar_client(pulsar_broker):
    """A ``pulsar.Client`` connected to the session broker; closed after the test."""
    import _pulsar
    import pulsar

    client = pulsar.Client(
        pulsar_broker.url, operation_timeout_seconds=15, logger=pulsar.ConsoleLogger(_pulsar.LoggerLevel.Error)
    )
    try:
        yield client
    finally:
        client.close()


_topic_counter = itertools.count()


@pytest.fixture
def pulsar_topic(request):
    """A topic name no other test uses."""
    stem = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60]
    return f"persistent://public/default/{stem}-{next(_topic_counter)}-{uuid.uuid4().hex[:8]}"
