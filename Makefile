# One command to set up and test: `make test`. The main job: `make run MODEL=...` (see README).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup test lint format bench dataset run

# torch first: `pip install torch==2.13.0` takes the CPU build from local disk in
# seconds; left to lighteval, pip pulls a multi-GB CUDA build.
$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[dev]"
	$(BIN)/python -m scripts.lighteval_offline
	touch $(STAMP)

setup: $(STAMP)

test: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: setup
	$(BIN)/python -m scripts.bench_build
