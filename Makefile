# The two commands a fresh machine needs: `make train` and `make test`.
# Both create (or refresh) the virtual environment in .venv first.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Empty: the machine's default, the fast model-free preset (cpu-ppo, or gpu-ppo on a GPU).
PRESET ?=
OUT ?= runs/$(PRESET)
ARGS ?=
STAMP := $(VENV)/.installed

.PHONY: setup train test test-slow test-all lint format bench solve gpu-figures wheel clean help

help:
	@echo "make train [PRESET=...] [ARGS='--set optim.lr=3e-4']  train into runs/PRESET (resumes from its checkpoints)"
	@echo "                             default: cpu-ppo on a CPU ($(EXPECT.cpu-ppo)),"
	@echo "                             gpu-ppo where the venv's JAX sees a GPU ($(EXPECT.gpu-ppo))"
	@echo "make train PRESET=paper-a2c  reproduces the paper's A2C, 241.78 ($(EXPECT.paper-a2c))"
	@echo "make test                    fast test suite (about 10 minutes on 2 CPU cores)"
	@echo "make test-slow / test-all    the slow tests only / everything"
	@echo "make lint | format           ruff check + format check | apply ruff format"
	@echo "make bench                   engine benchmark (bench env); see README for the others"
	@echo "make solve RULES=official    exact optimum for a rule variant"
	@echo "make gpu-figures OUT=DIR     the GPU figures (scaling study first) in 8 minutes, JSON in DIR"
	@echo "make wheel                   dist/yahtzee_jax-*.whl, what a Colab notebook installs (upload it)"

# The packages' bytecode is compiled on every core (compileall -j 0), where pip compiles it on
# one: make setup took 32.4 / 36.8 s against 38.2 / 43.3 s (alternated, 2-core Intel AVX-512).
# Bytecode matters where PYTHONDONTWRITEBYTECODE is set (as on this project's machines): without
# it every process compiles what it imports (the tests' imports 7.9 s against 3.0). The packages'
# own test folders, which nothing imports, are left out: 13.5 / 13.6 s against 16.4 / 17.4 s
# (alternated, 2-core AMD EPYC AVX-512, 2026-11-29). The solver's C kernel is built for this CPU
# into the venv (`solver.native.install_kernel`): a first solve then compiles nothing.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-compile -e '.[dev]'
	$(BIN)/python -m compileall -q -j 0 -x '/tests/' $(VENV)/lib > /dev/null
	touch $(STAMP)

# The kernel is named by its sources: built again whenever they change (a pull, an edit).
KERNEL_STAMP := $(VENV)/.kernel
$(KERNEL_STAMP): $(STAMP) $(wildcard yahtzee_jax/solver/native_*.c)
	$(BIN)/python -c 'from yahtzee_jax.solver.native import install_kernel; install_kernel()'
	touch $(KERNEL_STAMP)

setup: $(STAMP) $(KERNEL_STAMP)

# What each default preset costs, said before training starts (the figures' artifacts: cpu-ppo
# results/cpu-ppo-seed55 (6.6 min, AMD, 249.58; without dropout since the twenty-ninth session;
# with it: results/cpu-ppo-b256-seed2, 7.0 min, and -seed{2,3}-intel, 8.1-8.4 min, 246-247);
# gpu-ppo results/gpu-h200 (48.7 / 50.2 s at its former 819,200 games, a warm compilation cache)
# and results/gpu-ppo-983k-seed{0,1,2} (its 983,040 games, trained on a CPU), all with dropout;
# paper-a2c docs/fast-cpu/paper-a2c-intel and docs/learners/gpu_h100/paper-a2c-1m).
EXPECT.cpu-ppo = model-free PPO: about 7 min on 2 CPU cores (6.6 on an AMD EPYC), for about 249.6 (one seed so far)
EXPECT.gpu-ppo = model-free PPO: about a minute on one H100/H200; 245-247 when it trained with dropout (not yet run without it)
EXPECT.paper-a2c = about 40 min on 2 CPU cores, 6.5 min on an H100, for about 241.5-241.8
# Whether the venv's JAX trains on a GPU, asked when `make train` starts (after setup, so a fresh
# clone asks its new venv) and only when no PRESET is given; GPU=1 or GPU=0 on the command line
# decides instead (how the tests choose).
GPU_QUERY = $(shell $(BIN)/python -c "import jax; print(int(jax.default_backend() == 'gpu'))" 2>/dev/null)
ON_GPU = $(if $(filter command line,$(origin GPU)),$(GPU),$(GPU_QUERY))

# An interrupted run (Ctrl-C, a killed process) picks up from its last checkpoint, with its
# saved config (ARGS' --set values laid over it).
train: setup
	$(if $(PRESET),,$(eval PRESET := $(if $(filter 1,$(ON_GPU)),gpu-ppo,cpu-ppo)))
	@echo "make train: preset $(PRESET)$(if $(EXPECT.$(PRESET)), ($(EXPECT.$(PRESET))),) into $(OUT)$(if $(wildcard $(OUT)/checkpoints), (resuming its checkpoints),); Ctrl-C stops it, make train again resumes"
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

# On a machine with a GPU (after `.venv/bin/pip install -e '.[cuda]'`): the scaling study
# (issue 64), the model-free presets' time to quality and the fused step's throughput, as JSON in
# OUT (default runs/gpu-figures).
gpu-figures: setup
	$(BIN)/python experiments/gpu_figures.py $(if $(filter command line,$(origin OUT)),$(OUT),runs/gpu-figures)

# The package as a wheel (presets and studies inside), for a machine without this checkout: the
# notebooks' install cell on Colab asks for it. Built from a copy, with the dev extra's setuptools
# (no download), so the checkout gets no build/ or egg-info.
wheel: setup
	rm -rf dist/.wheel-src && mkdir -p dist/.wheel-src
	cp -r pyproject.toml README.md yahtzee_jax dist/.wheel-src/
	$(BIN)/pip wheel --quiet --no-deps --no-build-isolation --wheel-dir dist dist/.wheel-src
	rm -rf dist/.wheel-src
	@ls dist/yahtzee_jax-*.whl

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
