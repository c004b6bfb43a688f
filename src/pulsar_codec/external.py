"""PIP-420 external schemas (public entry point; the code lives in :mod:`pulsar_codec.pulsar.external`)."""

from .pulsar.external import *  # noqa: F403
from .pulsar.external import __all__ as __all__
