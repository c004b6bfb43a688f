"""Shared fixtures for tests/ and bench/: one suite, run against both kernel backends.

``backend`` is parametrised over the compiled ("cython") and the pure ("python") twin and activates
the chosen one for the duration of the test, so public functions such as ``wire.unframe`` run on it.
The compiled parameter carries the ``compiled`` marker; ``--no-compiled`` deselects it. When the
compiled kernels are missing the parameter is skipped with the import error as the reason, unless
PULSAR_CODEC_REQUIRE_EXTENSIONS=1, in which case importing pulsar_codec already fails.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

from pulsar_codec._kernels import _backend

# The backend fixture only selects a twin; it holds no state that examples could share wrongly.
# No per-example deadline: these machines are shared and noisy, and speed is measured in bench/.
settings.register_profile(
    "default",
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

BACKEND_NAMES = ("cython", "python")


def pytest_addoption(parser):
    parser.addoption("--no-compiled", action="store_true", help="skip the compiled (Cython) backend")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--no-compiled"):
        skip = pytest.mark.skip(reason="--no-compiled given")
        for item in items:
            if "compiled" in item.keywords:
                item.add_marker(skip)


def _backend_params():
    params = []
    for name in BACKEND_NAMES:
        marks = []
        if name == "cython":
            marks.append(pytest.mark.compiled)
            if not _backend.compiled_available():
                marks.append(
                    pytest.mark.skip(reason=f"compiled kernels unavailable: {_backend.compiled_import_error()}")
                )
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.fixture(params=_backend_params())
def backend(request):
    """The kernel backend under test, active for the whole test."""
    with _backend.use(request.param) as chosen:
        yield chosen


@pytest.fixture
def both_backends():
    """Both kernel backends (for parity tests that compare them inside one test)."""
    if not _backend.compiled_available():
        if os.environ.get("PULSAR_CODEC_REQUIRE_EXTENSIONS") == "1":
            pytest.fail("compiled kernels required but unavailable")
        pytest.skip(f"compiled kernels unavailable: {_backend.compiled_import_error()}")
    return _backend.get("cython"), _backend.get("python")
