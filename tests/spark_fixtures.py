"""A session-scoped local Spark session for the Spark tests (starting one takes several seconds).

Load it with ``pytest_plugins = ["spark_fixtures"]`` in a test module. The session runs
``local[2]`` bound to 127.0.0.1 with the UI off and the Python workers on this interpreter; tests
are skipped when PySpark or Java is missing.
"""

from __future__ import annotations

import os
import shutil
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java (17+) on PATH or JAVA_HOME")
    from pulsar_codec import spark as pcs

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = pcs.session(
        "local[2]",
        "pulsar-codec-tests",
        **{
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.execution.arrow.maxRecordsPerBatch": "1000",
            "spark.driver.memory": "1g",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
