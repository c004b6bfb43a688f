"""PySpark integration (public entry point of :mod:`pulsar_codec.integrations.spark`)."""

from .integrations.spark import *  # noqa: F403
from .integrations.spark import __all__ as __all__
