# Quick start: `make demo` and `make test` on a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
BASE   := $(VENV)/.installed-base
# pytest-xdist workers of `make test`: one per core, at most 4 (0: one process)
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n > 4 ? 4 : n )))
XDIST  := -n $(TEST_WORKERS) --dist loadgroup

.PHONY: demo test test-extended gpu-standin-test fuzz fuzz-eq fuzz-eq-update bench-eq bench-eq-expand fuzz-hd fuzz-input fuzz-programs fuzz-inputs fuzz-aggregates fuzz-conformance-updates fuzz-fdu fuzz-fdu-interleave fuzz-fdu-modules faults faults-gpu bench bench-incremental \
	bench-modules bench-chain bench-small \
	bench-process report lint gpu-test device-bundle clean owl2rl-lubm bench-owl2rl bench-rdfox-eq bench-eq-overhead

# the demo needs only the engine's own dependencies; tests, benchmarks and Spark need the
# dev extra (installed on top, into the same virtual environment)
$(BASE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $(BASE)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

## demo: materialise LUBM(1) with the LUBM_L rules (GPU if present, else CPU)
demo: $(BASE)
	$(PY) -m gpu_engine.host.demo

## test: the whole test suite (GPU-marked tests run when CuPy finds a GPU)
test: $(STAMP)
	$(PY) -m gpu_engine.kernels.precompile --jobs $(TEST_WORKERS) --quiet
	$(PY) -m pytest -q $(XDIST) -m "not extended"
	$(MAKE) --no-print-directory gpu-standin-test

## test-extended: the tests that take minutes each (left out of `make test`)
test-extended: $(STAMP)
	$(PY) -m pytest -q $(XDIST) -m extended

## gpu-standin-test: the device tests (-k gpu) on tests/cupy_standin, a strict stand-in for
##   CuPy (NumPy underneath, CuPy's refusals): the GPU path checked on a machine without one
gpu-standin-test: $(STAMP)
	PYTHONPATH=$(CURDIR)/tests/cupy_standin GPU_ENGINE_TEST_DEVICE=gpu $(PY) -m pytest -q \
	  -p no:cacheprovider -k gpu $(XDIST)

## fuzz: many more generated programs than CI runs (FUZZ_EXAMPLES, default 2000)
fuzz: $(STAMP)
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-2000} $(PY) -m pytest -q tests/test_fuzz.py

## fuzz-eq: N generated equality programs (default 2000): expanded Mat≈ against the
##   reference evaluation of the program with equality spelled out as rules (JSON line)
fuzz-eq: $(STAMP)
	$(PY) -m benchmarks.fuzz_equality --n $(or $(N),2000) --seed $(or $(SEED),0) \
	  --out benchmarks/results/fuzz_eq.jsonl

## bench-eq: synthetic equality classes (300 / 1,000 / 4,000 members), Mat≈ against the
##   spelled-out program (time, derivations, peak memory), JSON lines
bench-eq: $(STAMP)
	$(PY) -m benchmarks.equality --out benchmarks/results/equality.jsonl

## fuzz-hd: hypertree decompositions (paper 003): HD_EXAMPLES (default 1000) generated
##   programs with cyclic bodies against decompose=off, and as many update sequences
##   against the reference and rematerialisation, and as many checking the kept bags
##   (a fifth of them through a saved and reopened store); new draws each run
fuzz-hd: $(STAMP)
	FUZZ_EXAMPLES=$${HD_EXAMPLES:-1000} HD_EXAMPLES=$${HD_EXAMPLES:-1000} $(PY) -m pytest -q \
	  tests/test_hd.py tests/test_hd_bags.py tests/test_hd_store.py \
	  -k "equals_standard or update_sequences or kept_bags" -p no:cacheprovider

## bench-eq-expand: expansion throughput (1/2/3 merged columns, a large class), the columnar
##   expansion against the former one in one run (benchmarks/results/equality_expand.jsonl)
bench-eq-expand: $(STAMP)
	$(PY) -m benchmarks.equality_expand --out benchmarks/results/equality_expand.jsonl

## fuzz-eq-update: N random update sequences (default 1000) on generated equality programs;
##   B/F≈, DRed≈, auto and Remat≈ judged after every step (benchmarks/results/fuzz_eq_update.jsonl)
fuzz-eq-update: $(STAMP)
	PYTHONPATH=. $(PY) tests/eq_update_fuzz.py --sequences $(or $(N),1000) \
	  --out benchmarks/results/fuzz_eq_update.jsonl

## fuzz-programs: N generated programs (default 10000) against the reference evaluator;
##   one JSON line (counts, seeds, failures with reproducers) in benchmarks/results/
fuzz-programs: $(STAMP)
	$(PY) -m benchmarks.campaigns.programs --n $(or $(N),10000) --seed $(or $(SEED),0) \
	  --out benchmarks/results/fuzz_programs.jsonl

## fuzz-conformance-updates: the programs of ../shared/conformance (N cases, default all)
##   with explicit facts deleted and inserted again by every algorithm, against Remat
fuzz-conformance-updates: $(STAMP)
	$(PY) -m benchmarks.campaigns.conformance_updates $(if $(N),--n $(N)) --seed $(or $(SEED),0) \
	  --out benchmarks/results/fuzz_conformance_updates.jsonl

## fuzz-aggregates: N random update sequences (default 1000) on generated aggregate programs,
##   every maintenance algorithm against rematerialisation (relations, E, counters)
fuzz-aggregates: $(STAMP)
	$(PY) -m benchmarks.campaigns.aggregates --n $(or $(N),1000) --seed $(or $(SEED),0) \
	  --out benchmarks/results/fuzz_aggregates.jsonl

## fuzz-inputs: N malformed programs, fact files (CSV/TSV/Parquet/N-Triples, IO parameters),
##   stores and argument lists (default 10000): clear errors only, no traceback, no partial
##   write, every output written on success
fuzz-inputs: $(STAMP)
	$(PY) -m benchmarks.campaigns.inputs --n $(or $(N),10000) --seed $(or $(SEED),0) \
	  --out benchmarks/results/fuzz_inputs.jsonl

## fuzz-fdu: N injection schedules (default 1000) of queued, composed, injected and
##   restarted updates against strictly sequential application (issue 17); one JSON line
fuzz-fdu: $(STAMP)
	$(PY) -m benchmarks.campaigns.fdu --n $(or $(N),1000) --seed $(or $(SEED),0) \
	  --out benchmarks/results/fuzz_fdu.jsonl

## fuzz-fdu-interleave: N schedules (default 1000) of the interleaved mode (paper 004
##   Algorithm 1; deletions join a running update) against sequential application
fuzz-fdu-interleave: $(STAMP)
	FDU_POLICIES=interleave $(PY) -m benchmarks.campaigns.fdu --n $(or $(N),1000) \
	  --seed $(or $(SEED),0) --out benchmarks/results/fuzz_fdu.jsonl

## fuzz-fdu-modules: N schedules (default 500) of TC/STC-shaped programs under DRed^c-MOD
##   (modules on), every policy, against sequential application
fuzz-fdu-modules: $(STAMP)
	FDU_FAMILY=modules $(PY) -m benchmarks.campaigns.fdu --n $(or $(N),500) \
	  --seed $(or $(SEED),0) --out benchmarks/results/fuzz_fdu.jsonl

## faults: N injected faults (default 210: SIGKILL, ENOSPC on a tmpfs, EIO, read-only
##   folders, concurrent writers) during run --store / update / export; as root for tmpfs
faults: $(STAMP)
	$(PY) -m benchmarks.campaigns.faults --n $(or $(N),210) --seed $(or $(SEED),0) \
	  --out benchmarks/results/faults.jsonl

## faults-gpu: N out-of-device-memory trials (default 240) during run / update / the API:
##   with a GPU a random CuPy pool limit, without one injected faults (GPU_ENGINE_FAKE_OOM);
##   results equal the unconstrained run's, stores intact
faults-gpu: $(STAMP)
	$(PY) -m benchmarks.campaigns.gpu_oom --n $(or $(N),240) --seed $(or $(SEED),0) \
	  --out benchmarks/results/faults_gpu.jsonl

## fuzz-input: the former malformed fact-file/CLI fuzzer, now part of fuzz-inputs (an alias)
fuzz-input: fuzz-inputs

## bench: benchmarks, one JSON line per measurement, then the report
bench: $(STAMP)
	$(PY) -m benchmarks.run --out benchmarks/results/results.jsonl
	$(PY) -m benchmarks.report benchmarks/results/results.jsonl --out benchmarks/results

## bench-incremental: incremental-maintenance benchmarks (SUITE=quick|full), then the report
bench-incremental: $(STAMP)
	$(PY) -m benchmarks.incremental --suite $(or $(SUITE),quick) --out benchmarks/results/incremental.jsonl
	$(PY) -m benchmarks.report_incremental benchmarks/results/incremental.jsonl --out benchmarks/results

## bench-modules: paper 002 §7 (TC/STC modules): Mat vs Mat-Mod and DRed^c vs DRed^c-Mod
##   (suite modules, hours: plain Mat/DRed^c on DAG-R 10k/100k run to the 1800 s timeout),
##   then Mat/Mat-Mod against the peers on tc-nonlinear; ONLY=Clique etc. selects cases
bench-modules: $(STAMP)
	$(PY) -m benchmarks.incremental --suite modules $(if $(ONLY),--only '$(ONLY)') --out benchmarks/results/modules.jsonl
	if [ -s benchmarks/results/modules.jsonl ]; then \
	  $(PY) -m benchmarks.report_incremental benchmarks/results/modules.jsonl --out benchmarks/results/modules; fi
	$(PY) -m benchmarks.run --suite modules $(if $(ONLY),--only '$(ONLY)') --out benchmarks/results/modules_peers.jsonl
	if [ -s benchmarks/results/modules_peers.jsonl ]; then \
	  $(PY) -m benchmarks.report benchmarks/results/modules_peers.jsonl --out benchmarks/results/modules; fi

## bench-chain: issue 11 item 7: rounds per second with one-fact deltas (N = 10^3..10^6 and the
##   conformance case independent_body3), whole gpu-engine runs beside DuckDB/Soufflé; SIZES=1000,10000
bench-chain: $(STAMP)
	$(PY) -m benchmarks.chain $(if $(SIZES),--sizes $(SIZES)) --out benchmarks/results/chain.jsonl
	$(PY) -m benchmarks.report benchmarks/results/chain.jsonl --out benchmarks/results/chain

## bench-small: issue 11 item 7: 1,000-fact deletions/insertions and the no-op update for every
##   algorithm on LUBM(10/50) L/LE/U, DAG-R, SSPE (hours in all: ONLY='LUBM_L@LUBM(10)' selects,
##   ALGORITHMS=remat,dredc restricts), then the report
bench-small: $(STAMP)
	$(PY) -m benchmarks.incremental --suite small $(if $(ONLY),--only '$(ONLY)') \
	  $(if $(ALGORITHMS),--algorithms $(ALGORITHMS)) --out benchmarks/results/small.jsonl
	$(PY) -m benchmarks.report_incremental benchmarks/results/small.jsonl --out benchmarks/results/small

## bench-process: issue 11 item 7: whole-process materialisation (start-up and loading included,
##   count only) of tc-linear DAG-R and LUBM_L LUBM(10/50) against DuckDB and Soufflé
bench-process: $(STAMP)
	$(PY) -m benchmarks.run --suite process --device cpu $(if $(ONLY),--only '$(ONLY)') \
	  --out benchmarks/results/process.jsonl
	$(PY) -m benchmarks.report benchmarks/results/process.jsonl --out benchmarks/results/process

gpu-test: $(STAMP)
	GPU_ENGINE_TEST_DEVICE=gpu $(PY) -m pytest -q

## device-bundle: .device/ for benchmarks/device_check.sh, the prepared run on a bare GPU
##   machine without network: wheels of the packages such a machine lacks (CPython 3.12,
##   x86-64), the LUBM data the GPU benchmarks read, and (compressed) the conformance cases
##   and the datalog-conformance package the tests read (about 47 MB)
WHEELS := lark==1.3.1 pyoxigraph==0.5.13
device-bundle: $(STAMP)
	rm -rf .device && mkdir -p .device/whl .device/shared/bench-data/lubm
	$(PY) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
	  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
	  --platform manylinux2014_x86_64 -d .device/whl $(WHEELS)
	cp -r ../shared/bench-data/lubm/rules ../shared/bench-data/lubm/expected \
	  ../shared/bench-data/lubm/lubm10.nt.gz ../shared/bench-data/lubm/lubm50.nt.gz \
	  ../shared/bench-data/lubm/univ-bench.nt .device/shared/bench-data/lubm/
	tar -C ../shared -cJf .device/conformance.tar.xz conformance
	tar -C "$$($(PY) -c 'import datalog_conformance as d, pathlib; print(pathlib.Path(d.__file__).parents[1])')" \
	  -cJf .device/datalog_conformance.tar.xz datalog_conformance datalog_conformance-0.1.0.dist-info
	du -sh .device

lint: $(STAMP)
	$(VENV)/bin/ruff check gpu_engine kernels host tests benchmarks

clean:
	rm -rf $(VENV) build *.egg-info

## owl2rl-lubm: LUBM(1) under the shipped OWL 2 RL rules against owlrl (a few minutes)
owl2rl-lubm: $(STAMP)
	GPU_ENGINE_OWL2RL_LUBM=1 $(PY) -m pytest -q tests/test_owl2rl_lubm.py

## bench-owl2rl: LUBM(1/10/50) under OWL 2 RL against owlrl and reasonable, and RDF load times
bench-owl2rl: $(STAMP)
	$(PY) -m pip install -q -e '.[rdf]'
	$(PY) -m benchmarks.owl2rl --sizes 1 --variant owl2rl,owl2rl-generic --timeout 900 --out benchmarks/results/owl2rl.jsonl
	$(PY) -m benchmarks.owl2rl --sizes 10 --variant owl2rl,owl2rl-generic --engines gpu-engine,reasonable --timeout 900 --out benchmarks/results/owl2rl.jsonl
	$(PY) -m benchmarks.owl2rl --sizes 50 --variant owl2rl,owl2rl-generic --engines gpu-engine,reasonable-file --timeout 900 --out benchmarks/results/owl2rl.jsonl
	$(PY) -m benchmarks.owl2rl --load --sizes 50 --out benchmarks/results/owl2rl.jsonl

## bench-rdfox-eq: Claros_L / DBpedia_L (owl:sameAs spelled out) on generated data, Mat≈ against the rules
bench-rdfox-eq: $(STAMP)
	$(PY) -m benchmarks.rdfox_eq --rules Claros_L --triples 20000 --individuals 50000 --classes 306,40,12x20 --out benchmarks/results/rdfox_eq.jsonl
	$(PY) -m benchmarks.rdfox_eq --rules DBpedia_L --triples 20000 --individuals 50000 --classes 306,40,12x20 --out benchmarks/results/rdfox_eq.jsonl

## bench-eq-overhead: LUBM(10) LUBM_L with and without an unused equality declaration
bench-eq-overhead: $(STAMP)
	$(PY) -m benchmarks.eq_overhead --size 10 --repeat 5 --out benchmarks/results/eq_overhead.jsonl
