# Two commands from a fresh clone:  `make demo` (the main job) and `make test` (the whole suite).
# Both create .venv with everything they need on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench wheels sdist clean

$(STAMP): pyproject.toml setup.py $(wildcard src/pulsar_codec/_kernels/*.pyx src/pulsar_codec/_kernels/*.pxd) $(wildcard csrc/*.h)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q ".[all,test]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/pulsar-codec demo

# The suite runs every kernel test against both twins (compiled and pure) in one process.
test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) -m pytest bench --benchmark-only --benchmark-group-by=group --benchmark-disable-gc $(PYTEST_ARGS)

sdist: $(STAMP)
	$(PY) -m pip install -q build
	$(PY) -m build --sdist

wheels:
	./scripts/build_wheels.sh $(PYTEST_ARGS)

clean:
	rm -rf build dist wheelhouse *.egg-info src/*.egg-info src/pulsar_codec/_kernels/*.so src/pulsar_codec/_kernels/*_c.c $(VENV)
