"""Pieces shared by the policy-gradient algorithms: train state, static context, gradient step
and the diagnostics every update reports (reduced to scalars inside the compiled chunk)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from yahtzee_jax.algorithms.rollout import Trajectory, apply_over_time
from yahtzee_jax.config import Config
from yahtzee_jax.game.engine import LAST_ROLL
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, Rules
from yahtzee_jax.networks import YahtzeeNet, entropy, policy_log_probs

TOP_K = 3


@struct.dataclass
class TrainState:
    """Everything a run needs to continue exactly: weights, optimizer, rng and counter."""

    params: dict
    opt_state: optax.OptState
    key: jax.Array  # raw uint32[2] key data (checkpoint friendly)
    step: jax.Array  # updates done, int32


class Context(NamedTuple):
    """Static pieces of a run (hashable config, modules and schedules), closed over by `jit`."""

    config: Config
    rules: Rules
    network: YahtzeeNet
    optimizer: optax.GradientTransformation
    learning_rate: optax.Schedule
    entropy_roll: optax.Schedule
    entropy_score: optax.Schedule


class EntropyTerms(NamedTuple):
    """Per-head mean entropies of a batch of decisions."""

    roll: jax.Array
    score: jax.Array


def masked_mean(values: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean of `values` where `mask` is true (0 if none)."""
    mask = mask.astype(values.dtype)
    return jnp.sum(values * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def head_entropies(log_probs: jax.Array, roll_index: jax.Array) -> EntropyTerms:
    """Mean entropy of the roll head over keep decisions and of the score head over score ones."""
    per_step = entropy(log_probs)
    keeping = roll_index < LAST_ROLL
    return EntropyTerms(masked_mean(per_step, keeping), masked_mean(per_step, ~keeping))


def trajectory_log_probs(
    context: Context, params: dict, trajectory: Trajectory
) -> tuple[jax.Array, jax.Array]:
    """(log-probs over 45 actions [T, B, 45], values [T, B]) of `params` on a trajectory."""
    output = apply_over_time(context.network, params, trajectory, train=True)
    log_probs = policy_log_probs(output, trajectory.legal_mask, trajectory.roll_index)
    return log_probs, output.value


def explained_variance(prediction: jax.Array, target: jax.Array) -> jax.Array:
    """1 - Var(target - prediction) / Var(target)."""
    return 1.0 - jnp.var(target - prediction) / jnp.maximum(jnp.var(target), 1e-8)


def kl_divergence(log_p: jax.Array, log_q: jax.Array) -> jax.Array:
    """Mean KL(p || q) over a batch of categorical distributions (-inf entries allowed)."""
    finite = jnp.isfinite(log_p)
    diff = jnp.where(finite, log_p - jnp.where(finite, log_q, 0.0), 0.0)
    return jnp.mean(jnp.sum(jnp.exp(jnp.where(finite, log_p, -jnp.inf)) * diff, axis=-1))


def keep_action_stats(trajectory: Trajectory) -> dict[str, jax.Array]:
    """Keep-pattern diversity (share of the 32 used) and top-1 / top-k pattern frequency."""
    keeping = (trajectory.roll_index < LAST_ROLL).reshape(-1)
    actions = jnp.where(keeping, trajectory.action.reshape(-1), NUM_KEEP_ACTIONS)
    counts = jnp.bincount(actions, length=NUM_KEEP_ACTIONS + 1)[:NUM_KEEP_ACTIONS]
    total = jnp.maximum(jnp.sum(counts), 1)
    ranked = jnp.sort(counts)[::-1]
    return {
        "policy/keep_diversity": jnp.mean(counts > 0),
        "policy/top1_keep_frequency": ranked[0] / total,
        f"policy/top{TOP_K}_keep_frequency": jnp.sum(ranked[:TOP_K]) / total,
    }


LossFn = Callable[[dict, Context, Trajectory, jax.Array], tuple[jax.Array, dict]]


def gradient_step(
    context: Context, state: TrainState, trajectory: Trajectory, loss_fn: LossFn
) -> tuple[TrainState, dict[str, jax.Array]]:
    """One optimizer step on `loss_fn`, with gradient-norm, clip-rate and KL diagnostics.

    `loss_fn(params, context, trajectory, step)` returns (loss, metrics) where metrics holds
    "_log_probs" (the pre-update log-probs over 45 actions, used for the KL and then dropped).
    """
    (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(
        state.params, context, trajectory, state.step
    )
    old_log_probs = metrics.pop("_log_probs")
    updates, opt_state = context.optimizer.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    grad_norm = optax.tree.norm(grads)
    max_norm = context.config.optim.max_grad_norm

    # KL(pi_before || pi_after) on the same decisions with the same dropout masks.
    new_log_probs, _ = trajectory_log_probs(context, params, trajectory)
    metrics |= {
        "grad/norm": grad_norm,
        "grad/clip_rate": ((max_norm > 0) & (grad_norm > max_norm)).astype(jnp.float32),
        "policy/kl": kl_divergence(old_log_probs, new_log_probs),
        "schedule/learning_rate": context.learning_rate(state.step),
        **keep_action_stats(trajectory),
    }
    new_state = state.replace(params=params, opt_state=opt_state, step=state.step + 1)
    return new_state, metrics
