"""A throwaway local Pulsar broker for the demo and the benchmarks: ``pulsar-lite`` on 127.0.0.1.

``pulsar-lite`` (the ``test`` extra, which ``make demo`` installs) is one executable that speaks
the Pulsar binary protocol, so pulsar-client and the ``format("pulsar")`` source talk to it
unchanged. It is started with an explicit config: bound to 127.0.0.1 on a free port, data under
the given folder, metrics off (without a config it listens on every interface and serves metrics
on port 8080).
"""

from __future__ import annotations

import importlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["BrokerUnavailable", "LiteBroker", "accepts", "free_port", "produce", "start_lite", "write_config"]

HOST = "127.0.0.1"


class BrokerUnavailable(RuntimeError):
    """No local broker can run here (pulsar-lite or pulsar-client missing, or the broker did not start)."""


@dataclass
class LiteBroker:
    """A running pulsar-lite process; :meth:`stop` ends it and removes its data."""

    process: subprocess.Popen[bytes]
    port: int
    workdir: Path

    @property
    def url(self) -> str:
        """The service URL, ``pulsar://127.0.0.1:<port>``."""
        return f"pulsar://{HOST}:{self.port}"

    def log_text(self) -> str:
        """What the broker wrote to its log so far."""
        try:
            return (self.workdir / "broker.log").read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM, SIGKILL after 10 s; then its data folder is removed."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        shutil.rmtree(self.workdir / "data", ignore_errors=True)

    def __enter__(self) -> LiteBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago (another process may take it before use)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def accepts(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection((HOST, port), timeout=0.25):
            return True
    except OSError:
        return False


def write_config(workdir: Path, port: int, default_partitions: int = 0) -> Path:
    """Write ``<workdir>/pulsar-lite.toml``: listen on 127.0.0.1:``port``, keep data in
    ``<workdir>/data`` (created here), metrics off; ``default_partitions`` > 0 makes every
    auto-created topic partitioned. Returns the file's path."""
    config = workdir / "pulsar-lite.toml"
    data = workdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    # db_path is a stem: pulsar-lite keeps <stem>.rocksdb and <stem>.metadata.json beside it
    config.write_text(
        f'addr = "{HOST}:{port}"\n'
        f'db_path = "{data / "store"}"\n'
        f"default_partitions = {int(default_partitions)}\n"
        "\n[metrics]\nenabled = false\n"
    )
    return config


def start_lite(workdir: str | os.PathLike[str], timeout: float = 30.0) -> LiteBroker:
    """Start pulsar-lite in ``workdir`` and wait until it accepts connections.

    Raises
    ------
    BrokerUnavailable
        pulsar-lite or pulsar-client is not installed, or the broker exited or did not accept
        connections within ``timeout`` seconds (the message carries its log).
    """
    try:
        import pulsar  # noqa: F401 - the client the readers and producers need

        finder = importlib.import_module("pulsar_lite.binary_finder")
    except ImportError as exc:
        raise BrokerUnavailable(f"no local Pulsar broker: {exc} (pip install 'pulsar-codec[all,test]')") from exc
    try:
        binary = finder.find_pulsar_lite_binary()
    except Exception as exc:  # the package has no binary for this platform
        raise BrokerUnavailable(f"no pulsar-lite binary for this platform: {exc}") from exc
    workdir = Path(workdir).resolve()  # the broker runs in workdir: relative paths would point inside it again
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(workdir / "data", ignore_errors=True)
    port = free_port()
    config = write_config(workdir, port)
    env = {k: v for k, v in os.environ.items() if k != "RUST_LOG"}
    with open(workdir / "broker.log", "wb") as log:
        process = subprocess.Popen(
            [binary, "--config", str(config), "--log-level", "warn"],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    broker = LiteBroker(process, port, workdir)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None and not accepts(port):
        time.sleep(0.05)
    if process.poll() is None and accepts(port):
        return broker
    broker.stop()
    raise BrokerUnavailable(f"pulsar-lite did not start on {HOST}:{port}:\n{broker.log_text()[-2000:]}")


def client(url: str) -> Any:
    """A pulsar-client ``Client`` that logs errors only (its INFO lines would drown the demo's output)."""
    import _pulsar
    import pulsar

    return pulsar.Client(url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(_pulsar.LoggerLevel.Error))


def produce(
    url: str,
    topic: str,
    payloads: Sequence[bytes | None],
    keys: Sequence[str | None] | None = None,
    on_sent: Callable[[int], None] | None = None,
    index_property: str | None = None,
) -> int:
    """Send ``payloads`` (a null one as a null-value message: a tombstone) to ``topic`` with batching on,
    asynchronously, and wait for every acknowledgement.

    ``keys`` are partition keys; ``index_property`` names a message property that carries each
    message's position in ``payloads``; ``on_sent`` is called with the count of each chunk of
    messages handed to the producer.

    Returns
    -------
    int
        The messages the broker acknowledged.

    Raises
    ------
    RuntimeError
        A send failed, or acknowledgements did not all arrive within a minute after the flush.
    """
    import pulsar

    c = client(url)
    failures: list[Any] = []
    acked = 0
    lock = threading.Lock()

    def done(result: Any, _message_id: Any) -> None:
        nonlocal acked
        with lock:
            acked += 1
            if result != pulsar.Result.Ok:
                failures.append(result)

    try:
        producer = c.create_producer(
            topic,
            batching_enabled=True,
            batching_max_messages=1000,
            batching_max_publish_delay_ms=5,
            block_if_queue_full=True,
            max_pending_messages=20_000,
        )
        step = 10_000
        for lo in range(0, len(payloads), step):
            for i in range(lo, min(lo + step, len(payloads))):
                kwargs: dict[str, Any] = {}
                if keys is not None and keys[i] is not None:
                    kwargs["partition_key"] = keys[i]
                if index_property is not None:
                    kwargs["properties"] = {index_property: str(i)}
                producer.send_async(payloads[i], done, **kwargs)
            if on_sent is not None:
                on_sent(min(lo + step, len(payloads)) - lo)
        producer.flush()
        deadline = time.monotonic() + 60
        while acked < len(payloads) and time.monotonic() < deadline and not failures:
            time.sleep(0.005)
        producer.close()
    finally:
        c.close()
    if failures or acked < len(payloads):
        raise RuntimeError(f"producing to {topic}: {acked} of {len(payloads)} acknowledged, failures {failures[:3]}")
    return acked
