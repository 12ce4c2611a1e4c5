"""Train one run into its run directory (`commands.train` is its command line).

A single run is a session of one member (`session.train_session`) whose program is `SingleRun`:
the compiled chunk (`chunk.make_chunk`) with the game batch sharded over the run's
data-parallel mesh, if it has one. The host loop around it (evaluations, checkpoints, logs,
interruptions, the divergence guard) is `loop.py`, shared with populations (`population.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from yahtzee_jax import envs
from yahtzee_jax.algorithms.algorithm import make_context
from yahtzee_jax.config import Config
from yahtzee_jax.parallel import (
    data_mesh,
    host_local,
    in_mesh,
    is_primary,
    replicate,
)
from yahtzee_jax.runner.chunk import make_chunk
from yahtzee_jax.runner.loop import Hook
from yahtzee_jax.runner.runlog import EVALS_FILE
from yahtzee_jax.runner.session import (
    FINAL_EVAL_DIR,
    SUMMARY_FILE,
    plot_learning_curve,
    train_session,
)

# What the commands, notebooks and tests import from here (the run directory's files).
__all__ = [
    "EVALS_FILE",
    "FINAL_EVAL_DIR",
    "SUMMARY_FILE",
    "SingleRun",
    "make_chunk",
    "plot_learning_curve",
    "train",
]


class SingleRun:
    """One run's device program (`loop.Program`): its chunk, compiled and called under the
    run's data-parallel mesh (none on one device)."""

    def __init__(self, config: Config) -> None:
        from yahtzee_jax.runner.checkpointing import load_run  # orbax: only when training

        self.contexts = [make_context(config, load_run)]
        self.mesh = data_mesh(config.train.devices, envs.episodes_per_update(config))

    def device_state(self, states: list[Any]) -> Any:
        """The run's state, replicated over the mesh."""
        return replicate(states[0], self.mesh)

    def compile(self, length: int, state: Any) -> Callable[[Any], Any]:
        """`make_chunk` of `length` updates, compiled (and later called) under the mesh."""
        with in_mesh(self.mesh):
            compiled = make_chunk(self.contexts[0], length).lower(state).compile()

        def chunk(state: Any) -> Any:
            with in_mesh(self.mesh):
                return compiled(state)

        return chunk

    def member(self, tree: Any, index: int) -> Any:
        """The run's own copy of a (replicated) state or its metrics."""
        return host_local(tree)


def train(
    config: Config | None,
    run_dir: str | Path,
    resume: bool = False,
    progress: bool = True,
    final_eval: bool = True,
    hook: Hook | None = None,
) -> dict[str, Any]:
    """Run (or resume) training into `run_dir`; returns the run summary.

    With `resume`, `config` may be None (the run's saved config is used) or differ from the
    saved one only outside `session.FIXED_ON_RESUME`.
    One process at a time may write a run directory (`runlog.RunLock`); under the
    multi-controller runtime only process 0 writes. `hook` is called at each of the loop's
    `loop.HOOK_POINTS` (the interruption tests send their signals from it).
    """
    run_dir = Path(run_dir)
    [summary] = train_session(
        [config],
        [run_dir],
        [resume],
        lambda configs: SingleRun(configs[0]),
        progress=progress,
        final_eval=final_eval,
        resume_hint=f"--resume --out {run_dir}",
        primary=is_primary(),
        hook=hook,
    )
    return summary
