# Two commands from a fresh clone:  `make demo` (the main job) and `make test` (the whole suite).
# Both create .venv with everything they need on first use. `make lint`, `make typecheck` and
# `make bench` do too; `.ci/run` is lint, typecheck and test with a coverage floor.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# what ruff checks and formats
LINT_PATHS := src tests bench conftest.py setup.py
# line coverage of the package (pure twin included) is reported after the suite; COV_MIN > 0 makes
# a lower total fail the run (.ci/run sets it)
COV_MIN ?= 0
COV_ARGS ?= --cov --cov-report=term --cov-fail-under=$(COV_MIN)

.PHONY: demo test bench lint typecheck wheels sdist clean

$(STAMP): pyproject.toml setup.py $(wildcard src/pulsar_codec/_kernels/*.pyx src/pulsar_codec/_kernels/*.pxd) $(wildcard csrc/*.h)
	@echo "installing pulsar-codec with its [all,test] extras (PySpark, pulsar-client, the registry server, test tools) into $(VENV), compiling its kernels (first run only, a minute or two)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q ".[all,test]"
	@echo "installed into $(VENV)"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/pulsar-codec demo

# The suite runs every kernel test against both twins (compiled and pure) in one process.
test: $(STAMP)
	$(PY) -m pytest $(COV_ARGS) $(PYTEST_ARGS)

# the pytest-benchmark suites in bench/ (compiled twin, pure twin and the peers, grouped by workload)
bench: $(STAMP)
	$(PY) -m pytest bench --benchmark-only --benchmark-group-by=group --benchmark-disable-gc $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)

# mypy --strict over src/pulsar_codec (configured in pyproject.toml)
typecheck: $(STAMP)
	$(VENV)/bin/mypy

sdist: $(STAMP)
	$(PY) -m pip install -q build
	$(PY) -m build --sdist

wheels:
	./scripts/build_wheels.sh $(PYTEST_ARGS)

clean:
	rm -rf build dist wheelhouse *.egg-info src/*.egg-info src/pulsar_codec/_kernels/*.so src/pulsar_codec/_kernels/*_c.c $(VENV)
