"""A run's first train state: fresh, or warm-started from a trained run's parameters.

`algo.init_from` starts from a trained run (or checkpoint) with the same network and features
sections; the learner says how its parameters become the first ones (`Algorithm.warm_params`):
an actor-critic widens them to a match's inputs and zeroes the value output unless the source
learned the same task, rules and reward, td-planner continues its networks as they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np

from yahtzee_jax.algorithms.algorithm import Context, TrainState, init_train_state
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.runner.checkpointing import load_checkpoint
from yahtzee_jax.runner.configs import available_presets


def start_state(context: Context) -> TrainState:
    """The train state a run starts from: `init_train_state`, with the `algo.init_from` run's
    parameters where the learner has that field set."""
    return init_train_state(context, warm_params(context))


def warm_params(context: Context) -> Any:
    """The `init_from` run's parameters as the learner starts from them, or None."""
    config = context.config
    if not getattr(config.algo, "init_from", ""):
        return None
    source_path = Path(config.algo.init_from)
    if not source_path.exists():
        # The presets' warm starts are runs named after their presets, not files in the
        # repository: say how to make one.
        make = (
            f"yahtzee-jax train --preset {source_path.name} --out {source_path}"
            if source_path.name in available_presets()
            else "a run with the same network and features"
        )
        raise ConfigError(
            f"algo.init_from={config.algo.init_from!r} does not exist: train it first ({make}), "
            "or start from scratch with --set algo.init_from=''"
        )
    state, source, _ = load_checkpoint(config.algo.init_from)
    if source.network != config.network or source.features != config.features:
        raise ConfigError(
            f"algo.init_from={config.algo.init_from!r} has another network or features section"
        )
    # The same environment and reward (a match's; solitaire games are scored): the value
    # head's targets mean the same.
    same_task = (source.env.id, getattr(source.env, "reward", None)) == (
        config.env.id,
        getattr(config.env, "reward", None),
    )
    params = context.algorithm.warm_params(
        context, jax.tree.map(np.asarray, state["params"]), same_task
    )
    fresh = jax.eval_shape(
        lambda key: context.algorithm.init_params(context, key), jax.random.PRNGKey(0)
    )
    if jax.tree.structure(params) != jax.tree.structure(fresh):
        raise ConfigError(f"algo.init_from={config.algo.init_from!r}: parameters do not match")
    return params
