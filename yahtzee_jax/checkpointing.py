"""Orbax checkpoints of the whole train state, with the run config stored beside it as JSON.

A run directory holds ``checkpoints/<step>/`` (the last N) and ``best/<step>/`` (the best by
evaluation score). Each checkpoint has two items: ``state`` (params, optimizer state with its
schedule count, raw rng key data, update counter) and ``config`` (the resolved config).
`load_agent` turns any of these (a run directory, a manager directory or one step directory)
into an `Agent` playing the argmax policy.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import orbax.checkpoint as ocp
from flax import serialization

from yahtzee_jax.agents.base import Agent
from yahtzee_jax.config import Config, from_dict
from yahtzee_jax.errors import CheckpointError, UserError

LATEST_DIR = "checkpoints"
BEST_DIR = "best"
BEST_METRIC = "eval_score"

# Orbax logs every save at INFO and read-only loads at WARNING; our own errors say what matters.
logging.getLogger("absl").setLevel(logging.ERROR)


def _manager(directory: Path, max_to_keep: int, best: bool = False, read_only: bool = False):
    options = ocp.CheckpointManagerOptions(
        max_to_keep=max_to_keep,
        create=not read_only,
        read_only=read_only,
        enable_async_checkpointing=False,  # a save is complete when it returns (Ctrl-C, SIGKILL)
        best_fn=(lambda metrics: metrics[BEST_METRIC]) if best else None,
        best_mode="max",
        keep_checkpoints_without_metrics=not best,
    )
    return ocp.CheckpointManager(directory.resolve(), options=options)


class RunCheckpoints:
    """The latest-N and best-1 checkpoint managers of a run directory."""

    def __init__(self, run_dir: str | Path, keep: int) -> None:
        run_dir = Path(run_dir)
        self.latest = _manager(run_dir / LATEST_DIR, keep)
        self.best = _manager(run_dir / BEST_DIR, 1, best=True)

    def latest_step(self) -> int | None:
        """Step of the newest checkpoint, or None."""
        return self.latest.latest_step()

    def save(self, step: int, state: Any, config: Config, eval_score: float | None) -> None:
        """Save to `checkpoints/`, and to `best/` when an `eval_score` is given (a new best)."""
        args = _save_args(state, config)
        if self.latest.latest_step() != step:
            self.latest.save(step, args=args, force=True)
        if eval_score is not None and self.best.latest_step() != step:
            self.best.save(step, args=args, metrics={BEST_METRIC: float(eval_score)}, force=True)
        self.latest.wait_until_finished()
        self.best.wait_until_finished()

    def restore(self, template: Any, step: int | None = None) -> Any:
        """Restore the train state (structured like `template`) from the latest checkpoint."""
        step = self.latest.latest_step() if step is None else step
        if step is None:
            raise CheckpointError("no checkpoint to resume from")
        restored = self.latest.restore(
            step, args=ocp.args.Composite(state=ocp.args.StandardRestore())
        )
        return serialization.from_state_dict(template, restored["state"])

    def close(self) -> None:
        """Release the managers."""
        self.latest.close()
        self.best.close()


def _save_args(state: Any, config: Config) -> ocp.args.Composite:
    return ocp.args.Composite(
        state=ocp.args.StandardSave(serialization.to_state_dict(state)),
        config=ocp.args.JsonSave(config.to_dict()),
    )


def _locate(path: Path) -> tuple[Path, int | None]:
    """(manager directory, step or None for its latest) for a run, manager or step directory."""
    if (path / LATEST_DIR).is_dir():
        return path / LATEST_DIR, None
    if path.name.isdigit() and (path / "state").is_dir():
        return path.parent, int(path.name)
    if any(child.name.isdigit() for child in path.iterdir()):
        return path, None
    raise CheckpointError(f"no checkpoint found in {path}")


def load_checkpoint(path: str | Path) -> tuple[dict, Config, int]:
    """Read (state dict, config, step) from a run, manager or step directory."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"checkpoint not found: {path}")
    directory, step = _locate(path)
    try:
        manager = _manager(directory, 1, read_only=True)
        step = manager.latest_step() if step is None else step
        if step is None:
            raise CheckpointError(f"no checkpoint found in {path}")
        restored = manager.restore(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardRestore(), config=ocp.args.JsonRestore()
            ),
        )
    except CheckpointError:
        raise
    except Exception as error:  # orbax raises many kinds for a damaged directory
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise CheckpointError(f"cannot read checkpoint {path}: {message}") from None
    try:
        config = from_dict(restored["config"])
    except UserError as error:
        raise CheckpointError(f"checkpoint {path} has an invalid config: {error}") from None
    return restored["state"], config, step


def load_agent(path: str) -> Agent:
    """A trained checkpoint (run directory or checkpoint directory) as an argmax `Agent`."""
    from yahtzee_jax.algorithms import get_algorithm

    state, config, step = load_checkpoint(path)
    name = f"{config.algo.name}:{Path(path).name}@{step}"
    return get_algorithm(config.algo.name).make_agent(config, state["params"], name)
