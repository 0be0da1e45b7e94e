# Quick start: `make demo` and `make test` on a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test fuzz bench bench-incremental report lint gpu-test clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

## demo: materialise LUBM(1) with the LUBM_L rules (GPU if present, else CPU)
demo: $(STAMP)
	$(PY) -m host.demo

## test: the whole test suite (GPU-marked tests run when CuPy finds a GPU)
test: $(STAMP)
	$(PY) -m pytest -q

## fuzz: many more generated programs than CI runs (FUZZ_EXAMPLES, default 2000)
fuzz: $(STAMP)
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-2000} $(PY) -m pytest -q tests/test_fuzz.py

## bench: benchmarks, one JSON line per measurement, then the report
bench: $(STAMP)
	$(PY) -m benchmarks.run --out benchmarks/results/results.jsonl
	$(PY) -m benchmarks.report benchmarks/results/results.jsonl --out benchmarks/results

## bench-incremental: incremental-maintenance benchmarks (SUITE=quick|full), then the report
bench-incremental: $(STAMP)
	$(PY) -m benchmarks.incremental --suite $(or $(SUITE),quick) --out benchmarks/results/incremental.jsonl
	$(PY) -m benchmarks.report_incremental benchmarks/results/incremental.jsonl --out benchmarks/results

gpu-test: $(STAMP)
	GPU_ENGINE_TEST_DEVICE=gpu $(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check gpu_engine kernels host tests benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
