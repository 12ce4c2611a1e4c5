# The two commands a fresh machine needs: `make train` and `make test`.
# Both create (or refresh) the virtual environment in .venv first.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PRESET ?= paper-a2c
OUT ?= runs/$(PRESET)
ARGS ?=
STAMP := $(VENV)/.installed

.PHONY: setup train test test-slow test-all lint format bench solve gpu-figures clean help

help:
	@echo "make train [PRESET=paper-a2c|quick] [ARGS='--set optim.lr=3e-4']  train (resumes if $(OUT) has checkpoints)"
	@echo "make test                    fast test suite (a few minutes on 2 CPU cores)"
	@echo "make test-slow / test-all    the slow tests only / everything"
	@echo "make lint | format           ruff check + format check | apply ruff format"
	@echo "make bench                   engine benchmark (bench env); see README for the others"
	@echo "make solve RULES=official    exact optimum for a rule variant"
	@echo "make gpu-figures OUT=DIR     every GPU figure of issue 43 in at most 8 minutes, JSON in DIR"

# The packages' bytecode is compiled on every core (compileall -j 0), where pip compiles it on
# one: make setup took 32.4 / 36.8 s against 38.2 / 43.3 s (alternated, 2-core Intel AVX-512).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-compile -e '.[dev]'
	$(BIN)/python -m compileall -q -j 0 $(VENV)/lib > /dev/null
	touch $(STAMP)

setup: $(STAMP)

# An interrupted run (Ctrl-C, a killed process) picks up from its last checkpoint, with its
# saved config (ARGS' --set values laid over it).
train: setup
	$(BIN)/yahtzee-jax train --out $(OUT) \
		$(if $(wildcard $(OUT)/checkpoints),--resume,--preset $(PRESET)) $(ARGS)

test: setup
	$(BIN)/pytest -n 2 --dist loadfile --durations=25

test-slow: setup
	$(BIN)/pytest -m slow

test-all: setup
	$(BIN)/pytest -m "slow or not slow" -n 2 --dist loadfile

lint: setup
	$(BIN)/ruff check yahtzee_jax tests experiments
	$(BIN)/ruff format --check yahtzee_jax tests experiments
	$(BIN)/lint-imports
	$(BIN)/python experiments/check_readme_figures.py

format: setup
	$(BIN)/ruff format yahtzee_jax tests experiments

bench: setup
	$(BIN)/yahtzee-jax bench env

RULES ?= official
solve: setup
	$(BIN)/yahtzee-jax solve --rules $(RULES)

# On a machine with a GPU (after `.venv/bin/pip install -e '.[cuda]'`): the model-free preset's
# time to quality and the fused step's throughput, as JSON in OUT (default runs/gpu-figures).
gpu-figures: setup
	$(BIN)/python experiments/gpu_figures.py $(if $(filter command line,$(origin OUT)),$(OUT),runs/gpu-figures)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
