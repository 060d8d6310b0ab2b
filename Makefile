# Two entry points: `make demo` and `make test`. Both build .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The demo needs only waygraph itself; the test tools (and a browser driver)
# are installed by `make test`.
BASE_STAMP := $(VENV)/.installed-base

.PHONY: setup demo test lint bench clean browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(BASE_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $(BASE_STAMP)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
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

test: setup lint browser
	$(BIN)/python -m pytest -q

# Every benchmark runs even when one misses a target (each exits 1 then);
# make bench fails at the end if any did. docs/benchmarks.md has the method.
BENCHES := bench/engine.py bench/match.py "bench/dag.py --quick" bench/events.py bench/dashboard.py bench/durable.py bench/tracing.py

bench: setup
	$(BIN)/python -m pip install -q -e '.[bench]'
	@failed=""; for b in $(BENCHES); do \
		echo "== $$b"; $(BIN)/python $$b || failed="$$failed $$b"; \
	done; \
	if [ -n "$$failed" ]; then echo "targets missed in:$$failed"; exit 1; fi

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache
