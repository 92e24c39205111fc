# Each target sets itself up on a fresh machine: a .venv with an editable install.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: demo test lint golden tables bench bench-quick clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,dask,notebook,frames,onnx]'
	touch $(STAMP)

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

demo: $(STAMP)
	$(VENV)/bin/hilbert demo

lint: $(STAMP)
	$(PY) -m ruff check grammar compiler executor hilbert tests benchmarks
	$(PY) -m mypy grammar compiler

test: $(STAMP) lint
	$(PY) -m pytest -q -n auto --dist loadfile

golden: $(STAMP)
	$(PY) tests/golden/record.py --update

tables: $(STAMP)
	$(PY) -m hilbert.grammar.tables

bench: $(BENCH_STAMP)
	$(VENV)/bin/hilbert bench --suite

bench-quick: $(BENCH_STAMP)
	$(VENV)/bin/hilbert bench --suite --quick

clean:
	rm -rf $(VENV) build *.egg-info
