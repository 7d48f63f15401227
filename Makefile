# Two entry points: `make demo` runs the main job, `make test` runs the checks.
# Each builds .venv itself and installs everything it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m ruff check src tests benchmarks examples
	$(PY) -m mypy
	$(PY) -m pytest

demo: $(STAMP)
	$(VENV)/bin/agent-eval demo

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
