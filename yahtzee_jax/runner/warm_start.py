"""A run's first train state: fresh, or warm-started from a trained run's parameters.

`algo.init_from` starts from a trained run (or checkpoint) with the same network and features
sections; the learner says how its parameters become the first ones (`Algorithm.warm_params`):
an actor-critic widens them to a match's inputs and zeroes the value output, td-planner
continues its networks as they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np

from yahtzee_jax.algorithms.base import Context, TrainState, init_train_state
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.runner.checkpointing import load_checkpoint


def start_state(context: Context) -> TrainState:
    """The train state a run starts from: `init_train_state`, with the `algo.init_from` run's
    parameters where the learner has that field set."""
    return init_train_state(context, warm_params(context))


def warm_params(context: Context) -> Any:
    """The `init_from` run's parameters as the learner starts from them, or None."""
    config = context.config
    if not getattr(config.algo, "init_from", ""):
        return None
    if not Path(config.algo.init_from).exists():
        # The presets' warm start is a run, not a file in the repository: say how to make it.
        raise ConfigError(
            f"algo.init_from={config.algo.init_from!r} does not exist: train a run with the "
            "same network and features there first (a2c-win's: yahtzee-jax train --preset "
            "paper-a2c-shaping --out runs/paper-a2c-shaping), or start from scratch with "
            "--set algo.init_from=''"
        )
    state, source, _ = load_checkpoint(config.algo.init_from)
    if source.network != config.network or source.features != config.features:
        raise ConfigError(
            f"algo.init_from={config.algo.init_from!r} has another network or features section"
        )
    params = context.algorithm.warm_params(context, jax.tree.map(np.asarray, state["params"]))
    fresh = jax.eval_shape(
        lambda key: context.algorithm.init_params(context, key), jax.random.PRNGKey(0)
    )
    if jax.tree.structure(params) != jax.tree.structure(fresh):
        raise ConfigError(f"algo.init_from={config.algo.init_from!r}: parameters do not match")
    return params
