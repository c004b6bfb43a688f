"""The ``pulsar-codec`` command (also ``python -m pulsar_codec``)."""

from .main import main

__all__ = ["main"]
