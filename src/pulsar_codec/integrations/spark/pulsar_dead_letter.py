"""The Pulsar sink's dead-letter topic: the rows its writer schema cannot take, kept as JSON text.

With the option ``dead_letter_topic``, a row of ``df.write(Stream).format("pulsar")`` whose value
(or KeyValue key) cannot be encoded neither fails the task nor disappears: it is produced to that
topic instead. The message is the row's JSON text (every column of the DataFrame, by name; binary
as standard Base64, dates and timestamps in ISO 8601, decimals and non-finite floats as text, maps
as objects), with three properties: :data:`ERROR_PROPERTY` (the EncodeError's text),
:data:`TOPIC_PROPERTY` (the topic the row was meant for) and :data:`PART_PROPERTY` (``value`` or
``key``). Its partition key is the row's ``key_column``, when there is one. A dead-letter topic
holds no registered schema: a reader takes its messages as raw bytes (``decode=false``).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
import threading
from typing import Any

import pyarrow as pa

from .batches import local_encode_text
from .pulsar_offsets import broker_calls

__all__ = ["ERROR_PROPERTY", "PART_PROPERTY", "TOPIC_PROPERTY", "DeadLetters", "row_json"]

ERROR_PROPERTY = "pulsar_codec.error"
"""The property holding why the row could not be encoded (the EncodeError's text)."""
TOPIC_PROPERTY = "pulsar_codec.topic"
"""The property naming the topic the row was meant for."""
PART_PROPERTY = "pulsar_codec.part"
"""The property naming what could not be encoded: ``value``, or a KeyValue topic's ``key``."""


def row_json(batch: pa.RecordBatch, row: int) -> bytes:
    """Row ``row`` of ``batch`` as compact JSON text (UTF-8), every column by name."""
    (values,) = batch.slice(row, 1).to_pylist(maps_as_pydicts="lossy")
    return json.dumps(_jsonable(values), ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _jsonable(value: Any) -> Any:
    """``value`` (a Python value pyarrow gives) made of what JSON holds."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)  # "nan", "inf", "-inf": JSON has no such number
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    return str(value)  # durations, month-day-nano intervals: their text


class DeadLetters:
    """One task's producer to the dead-letter topic (created at its first row) and its counts.

    Parameters
    ----------
    client : pulsar.Client
    topic : str
        The dead-letter topic.
    target : str
        The topic the rows were meant for (:data:`TOPIC_PROPERTY`).
    service_url : str
    timeout_ms : int
    """

    def __init__(self, client: Any, topic: str, target: str, service_url: str, timeout_ms: int) -> None:
        self.client = client
        self.topic = topic
        self.target = target
        self.service_url = service_url
        self.timeout_ms = timeout_ms
        self.producer: Any = None
        self.sent = 0
        self.acked = 0
        self.failures: list[str] = []
        self._lock = threading.Lock()

    def send(self, batch: pa.RecordBatch, row: int, part: str, error: str, key: str | None) -> None:
        """Produce row ``row`` of ``batch``, which could not be encoded (``part``, ``error``)."""
        if self.producer is None:
            with broker_calls(self.service_url, self.timeout_ms):
                self.producer = self.client.create_producer(
                    self.topic, batching_enabled=True, block_if_queue_full=True, send_timeout_millis=self.timeout_ms
                )
        properties = {ERROR_PROPERTY: local_encode_text(error), TOPIC_PROPERTY: self.target, PART_PROPERTY: part}
        options: dict[str, Any] = {"properties": properties}
        if key:
            options["partition_key"] = key
        self.producer.send_async(row_json(batch, row), self._done, **options)
        self.sent += 1

    def _done(self, result: Any, _message_id: Any) -> None:
        from ...pulsar._sdk import pulsar

        with self._lock:
            if result == pulsar.Result.Ok:
                self.acked += 1
            else:
                self.failures.append(str(result))

    def finish(self) -> None:
        """Flush and close the producer (if a row needed it)."""
        if self.producer is not None:
            try:
                self.producer.flush()
            finally:
                self.producer.close()
