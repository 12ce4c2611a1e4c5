"""The test session's shared setup: one JAX compilation cache for every worker of the session,
and XLA's fast-compiling backend.

Many test files compile the same programs (a tiny preset's training chunk, an agent's batch
of games); with the persistent cache in a directory the whole session shares, the second
worker to need one loads it instead of compiling it. The directory is made fresh for each
session (a run never reads a cache it did not write) and removed at its end. The settings also go
into JAX's own environment variables, so the `yahtzee-jax` subprocesses that tests start (killed
and resumed runs, several processes of one distributed run) share the cache too: the five runs of
the kill test compile their programs once, not once a run.

The solver's cache (`$YAHTZEE_JAX_CACHE`) is the session's own too, fresh and removed at its
end: a test neither reads the tables a user's cache holds (written by other code, perhaps
older) nor writes there, and every run starts as CI's fresh machine does. Behind a warm user
cache one test solved the official moment and endgame tables unseen: 181 s on a fresh machine.
`YAHTZEE_JAX_TEST_SOLVER_CACHE=DIR` names a folder of the tests' own to keep instead.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import jax

CACHE_VARIABLE = "YAHTZEE_JAX_TEST_COMPILATION_CACHE"
SOLVER_CACHE_VARIABLE = "YAHTZEE_JAX_CACHE"  # `files.default_cache_dir` reads it
# A folder of the tests' own to keep their tables in between sessions (`make test-slow` solves
# official's target, moment and endgame tables, minutes, that a fresh folder solves each time).
SOLVER_KEEP_VARIABLE = "YAHTZEE_JAX_TEST_SOLVER_CACHE"
# Tests run tiny budgets, so compiling is most of their time. LLVM's optimisation level 0 cut
# `test_algorithms.py` from 211 to 135 CPU seconds, and XLA's older loop emitters for fusions
# (instead of the fusion emitters) compile a tiny PPO chunk in 5.2 CPU s against 8.7 at level 0
# alone and 12.6 as production compiles it (2-core AMD EPYC, 2026-11-27). XLA's own graph
# passes still run and the numbers agree to float round-off, but not bit for bit, so the
# bitwise regression (`test_golden.py`) has digests of its own for these flags.
FAST_COMPILE_FLAGS = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
# JAX reads each of its options from the upper-cased name in the environment when it starts.
CACHE_SETTINGS = {
    "jax_persistent_cache_min_compile_time_secs": 0.5,
    "jax_persistent_cache_min_entry_size_bytes": 0,
}

# `make test` hands whole files to its two workers (`--dist loadfile`) in pytest-xdist's order:
# the files with the most tests first. Handing out the longest files first instead (by their
# summed durations, `--no-loadscope-reorder`) was slower in the one run tried: 597 s for the
# suite (`results/make-test/d25c973.txt`), against 526 to 567 s in six runs in xdist's order
# (`f726f3d.txt`, `e343ac4.txt`, `94898e7.txt` and three uncommitted), all idle on the 2-core
# Intel AVX-512 on 2026-11-29. The long files then start together and cold; in xdist's order
# many of them come after files that compiled programs they can load from the session's cache
# (test_target_agent.py's setup took 36 s, against 15 and 18 s).


def pytest_configure(config) -> None:
    """The controller (or a lone process) makes the directories; xdist workers inherit them."""
    if not hasattr(config, "workerinput"):  # not an xdist worker: even beside a kept XLA cache
        kept = os.environ.get(SOLVER_KEEP_VARIABLE)
        if kept:  # asked for by name: its tables serve the next session too
            os.environ[SOLVER_CACHE_VARIABLE] = kept
        else:
            os.environ[SOLVER_CACHE_VARIABLE] = tempfile.mkdtemp(prefix="yahtzee-jax-solver-")
            config._yahtzee_jax_solver_cache = os.environ[SOLVER_CACHE_VARIABLE]
    if CACHE_VARIABLE not in os.environ:
        os.environ[CACHE_VARIABLE] = tempfile.mkdtemp(prefix="yahtzee-jax-xla-")
        config._yahtzee_jax_cache_owner = True
    flags = os.environ.get("XLA_FLAGS", "")
    if FAST_COMPILE_FLAGS not in flags:  # before the first computation starts JAX's backend
        os.environ["XLA_FLAGS"] = f"{flags} {FAST_COMPILE_FLAGS}".strip()
    settings = {"jax_compilation_cache_dir": os.environ[CACHE_VARIABLE], **CACHE_SETTINGS}
    for name, value in settings.items():
        os.environ[name.upper()] = str(value)  # for the subprocesses the tests start
        jax.config.update(name, value)


def pytest_unconfigure(config) -> None:
    """The process that made the directories removes them."""
    if getattr(config, "_yahtzee_jax_cache_owner", False):
        shutil.rmtree(os.environ.pop(CACHE_VARIABLE), ignore_errors=True)
    if hasattr(config, "_yahtzee_jax_solver_cache"):
        shutil.rmtree(config._yahtzee_jax_solver_cache, ignore_errors=True)
