"""The compiled chunk: K guarded training updates in one `lax.scan`.

Each update (`algorithms.algorithm.train_step`: the learner's update, then the environment's own
bookkeeping) plays a batch of games in lockstep, computes the loss and applies the gradient, and
reduces its diagnostics to scalars. A guard inside the chunk checks every update's metrics and
parameters: the first non-finite one freezes the state at the last good update and names the
culprit. A single run compiles `make_chunk`; a population vmaps `chunk_function` over its
members (`population.py`). The host loop around either is `loop.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax.algorithms.algorithm import Context, TrainState, train_step

PARAMETERS = "parameters"  # the guard's name for non-finite parameters

# state -> (state, metrics [K] each, failure codes [K])
Chunk = Callable[[TrainState], tuple[TrainState, dict[str, jax.Array], jax.Array]]


def _all_finite(tree: Any) -> jax.Array:
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(leaf)) for leaf in jax.tree.leaves(tree)]))


def guard_quantities(metric_names: list[str]) -> list[str]:
    """The quantities the guard checks, in the order its failure codes index them: the loss
    and the gradient before the parameters they produce, diagnostics last."""
    causes = [name for name in sorted(metric_names) if name.startswith(("loss/", "grad/"))]
    diagnostics = [name for name in sorted(metric_names) if name not in causes]
    return [*causes, PARAMETERS, *diagnostics]


def make_chunk(context: Context, num_updates: int) -> Chunk:
    """Jitted `state -> (state, metrics, failure)` running `num_updates` guarded updates.

    `metrics` are [K] arrays. `failure` is [K] int32: -1 where the update was finite, else the
    index (into `guard_quantities`) of its first non-finite quantity. From the first failure on,
    the state stays at the last good update.
    """
    return jax.jit(chunk_function(context, num_updates))


def chunk_function(context: Context, num_updates: int, freeze_counter: bool = True) -> Chunk:
    """`make_chunk`'s function before `jit` (a population vmaps it over its members).

    From a failed update on, the state stays as it was after the last good one; with
    `freeze_counter=False` the update counter alone still advances, which keeps it unbatched
    under a population's vmap (the host discards a failed chunk's state either way).
    """

    guard_params = context.config.algo.guard_params  # False: MAXQ-Q's tables (`AlgoConfig`)

    def guarded(carry: tuple[TrainState, jax.Array], _: None):
        state, failed = carry
        new_state, metrics = train_step(context, state)
        finite = jnp.stack(
            [
                (_all_finite(new_state.params) if guard_params else jnp.bool_(True))
                if name == PARAMETERS
                else _all_finite(metrics[name])
                for name in guard_quantities(list(metrics))
            ]
        )
        failure = jnp.where(jnp.all(finite), -1, jnp.argmin(finite)).astype(jnp.int32)
        failed = failed | (failure >= 0)
        kept = jax.tree.map(lambda old, new: jnp.where(failed, old, new), state, new_state)
        if not guard_params:  # no copy of the parameters kept for a rollback
            kept = kept.replace(params=new_state.params)
        if not freeze_counter:
            kept = kept.replace(step=new_state.step)
        return (kept, failed), (metrics, failure)

    def chunk(state: TrainState):
        (state, _), (metrics, failure) = jax.lax.scan(
            guarded, (state, jnp.bool_(False)), length=num_updates
        )
        return state, metrics, failure

    return chunk
