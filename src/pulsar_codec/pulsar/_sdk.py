"""The Pulsar Python client, imported in one place, and what its adapter and topic reader share.

``pulsar-client`` comes with the ``pulsar`` extra. Importing :mod:`pulsar_codec.pulsar.client` or
:mod:`pulsar_codec.pulsar.reader` without it raises an ImportError that says how to install it.
"""

from __future__ import annotations

import logging

try:
    import _pulsar as native
    import pulsar
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "pulsar_codec.pulsar needs the Pulsar Python client: pip install 'pulsar-codec[pulsar]' "
        f"(import failed: {_exc})"
    ) from _exc

__all__ = ["native", "pulsar", "CLIENT_LOGGER", "KEY_ENCODINGS", "check_key_encoding", "client_logger"]

#: Name of the :mod:`logging` logger the command line hands to ``pulsar.Client`` (its C++ log lines).
CLIENT_LOGGER = "pulsar_codec.pulsar.client"

#: How a partition key holds a KeyValue key: its UTF-8 text (C++ producers) or Base64 (Java's SEPARATED).
KEY_ENCODINGS = ("raw", "base64")


def check_key_encoding(key_encoding: str) -> str:
    """``key_encoding`` itself when it is one of :data:`KEY_ENCODINGS`; ValueError otherwise."""
    if key_encoding not in KEY_ENCODINGS:
        raise ValueError(f"key_encoding must be one of {KEY_ENCODINGS}, got {key_encoding!r}")
    return key_encoding


def client_logger() -> logging.Logger:
    """The :mod:`logging` logger for pulsar-client's own log lines (``logger=`` of ``pulsar.Client``).

    The client forwards every line, debug included, to a Python logger, which filters by its level:
    set the level (and handlers) to choose what is shown.
    """
    return logging.getLogger(CLIENT_LOGGER)
