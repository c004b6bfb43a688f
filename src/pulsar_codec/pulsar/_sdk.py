"""The Pulsar Python client, imported in one place, and what its adapter and topic reader share.

``pulsar-client`` comes with the ``pulsar`` extra. Importing :mod:`pulsar_codec.pulsar.client` or
:mod:`pulsar_codec.pulsar.reader` without it raises an ImportError that says how to install it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..errors import BrokerUnreachableError

try:
    import _pulsar as native
    import pulsar
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "pulsar_codec.pulsar needs the Pulsar Python client: pip install 'pulsar-codec[pulsar]' "
        f"(import failed: {_exc})"
    ) from _exc

__all__ = ["native", "pulsar", "KEY_ENCODINGS", "broker_calls", "check_key_encoding"]

#: How a partition key holds a KeyValue key: its UTF-8 text (C++ producers) or Base64 (Java's SEPARATED).
KEY_ENCODINGS = ("raw", "base64")


def check_key_encoding(key_encoding: str) -> str:
    """``key_encoding`` itself when it is one of :data:`KEY_ENCODINGS`; ValueError otherwise."""
    if key_encoding not in KEY_ENCODINGS:
        raise ValueError(f"key_encoding must be one of {KEY_ENCODINGS}, got {key_encoding!r}")
    return key_encoding


@contextlib.contextmanager
def broker_calls(
    service_url: str, timeout_ms: int, hint: str = "the option timeout_ms sets the wait"
) -> Iterator[None]:
    """Turn pulsar-client's "no connection" and "no answer in time" errors into one
    :class:`~pulsar_codec.errors.BrokerUnreachableError` naming the broker and the timeout."""
    try:
        yield
    except (pulsar.ConnectError, pulsar.Timeout) as exc:
        raise BrokerUnreachableError(
            f"the Pulsar broker {service_url} did not answer within {timeout_ms} ms ({exc}); check the service URL"
            f" ({hint})",
            service_url=service_url,
        ) from None
