"""PySpark integration (public entry point of :mod:`pulsar_codec.integrations.spark`)."""

from typing import Any

from .integrations import spark as _spark
from .integrations.spark import *  # noqa: F403
from .integrations.spark import __all__ as __all__


def __getattr__(name: str) -> Any:
    # deprecated names (RegistrySpec, registry_spec) warn where the package defines them
    return getattr(_spark, name)
