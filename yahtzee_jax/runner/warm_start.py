"""A run's first train state: fresh, or warm-started from a trained run's parameters, widened.

`algo.init_from` starts from a trained actor-critic run (or checkpoint) with the same network
and features sections: its weights, with zero weights on the inputs it lacks (a match's
opponent groups: the same policy at the start) and a zeroed value output (a critic on the new
reward's scale).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.algorithms.base import Context, TrainState, fresh_params, init_train_state
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.networks import VALUE_OUTPUT
from yahtzee_jax.runner.checkpointing import load_checkpoint


def start_state(context: Context) -> TrainState:
    """The train state a run starts from: `init_train_state`, with the `algo.init_from` run's
    parameters (widened) where the learner has that field set."""
    return init_train_state(context, warm_params(context))


def warm_params(context: Context) -> Any:
    """The `init_from` run's parameters widened to the environment's input, or None."""
    config = context.config
    if not getattr(config.algo, "init_from", ""):
        return None
    fresh = jax.eval_shape(lambda key: fresh_params(context, key), jax.random.PRNGKey(0))

    if not Path(config.algo.init_from).exists():
        # The presets' warm start is a run, not a file in the repository: say how to make it.
        raise ConfigError(
            f"algo.init_from={config.algo.init_from!r} does not exist: train a solitaire run "
            "with the same network and features there first (a2c-win's: yahtzee-jax train "
            "--preset paper-a2c-shaping --out runs/paper-a2c-shaping), or start from scratch "
            "with --set algo.init_from=''"
        )
    state, source, _ = load_checkpoint(config.algo.init_from)
    if source.network != config.network or source.features != config.features:
        raise ConfigError(
            f"algo.init_from={config.algo.init_from!r} has another network or features section"
        )
    params = jax.tree.map(np.asarray, state["params"])
    first = params["Block_0"]["Dense_0"]["kernel"]
    extra_rows = context.env.feature_size() - first.shape[0]
    # Zero weights on the new inputs: the warm-started policy is the source's policy.
    params["Block_0"]["Dense_0"]["kernel"] = np.concatenate(
        [first, np.zeros((extra_rows, first.shape[1]), first.dtype)]
    )
    # The value output restarts at 0: a critic on the new reward's scale.
    value = params[VALUE_OUTPUT]
    params[VALUE_OUTPUT] = {name: np.zeros_like(leaf) for name, leaf in value.items()}
    params = jax.tree.map(jnp.asarray, params)
    if jax.tree.structure(params) != jax.tree.structure(fresh):
        raise ConfigError(f"algo.init_from={config.algo.init_from!r}: parameters do not match")
    return params
