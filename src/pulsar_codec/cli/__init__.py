"""The ``pulsar-codec`` command (also ``python -m pulsar_codec``).

:mod:`.app` parses the command line, runs ``decode`` and ``dump`` and maps errors to exit codes;
``demo`` (with :mod:`.demo_data`, :mod:`.demo_pulsar` and :mod:`.framing`), ``registry``
(:mod:`.registry_cmd`) and ``bench`` (:mod:`.bench_cmd`) have modules of their own, and
:mod:`.parquet_io` is the Parquet side of ``decode``.
"""

from .app import main

__all__ = ["main"]
