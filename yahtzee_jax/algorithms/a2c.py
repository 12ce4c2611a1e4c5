"""Advantage actor-critic with one-step TD(0) targets, the paper's equations 16-17.

    delta_t = r_t + gamma V(s_{t+1}) - V(s_t),   V = 0 after the 39th decision
    L = -log pi(a_t | s_t) A_t + lambda_V delta_t^2 - beta_roll H_roll - beta_score H_score

As in the paper's code the bootstrap V(s_{t+1}) is the value seen during the rollout (no
gradient), A_t is delta_t without gradient, optionally normalised over the batch, and the entropy
bonuses are the mean entropy of each head over its own decisions.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from yahtzee_jax.algorithms.common import (
    Context,
    TrainState,
    explained_variance,
    gradient_step,
    head_entropies,
    trajectory_log_probs,
)
from yahtzee_jax.algorithms.rollout import Trajectory, rollout


class LossCoefficients(NamedTuple):
    """Weights of the loss terms at the current update."""

    value: float | jax.Array
    entropy_roll: float | jax.Array
    entropy_score: float | jax.Array


def td0_targets(reward: jax.Array, rollout_value: jax.Array, gamma: float) -> jax.Array:
    """r_t + gamma V(s_{t+1}) along the time axis 0, with V = 0 after the last decision."""
    next_value = jnp.concatenate([rollout_value[1:], jnp.zeros_like(rollout_value[:1])], axis=0)
    return reward + gamma * jax.lax.stop_gradient(next_value)


def loss_terms(
    log_prob_taken: jax.Array,
    value: jax.Array,
    target: jax.Array,
    roll_entropy: jax.Array,
    score_entropy: jax.Array,
    coefficients: LossCoefficients,
    normalize_advantage: bool,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The A2C loss from per-decision quantities (any shape); returns (loss, metrics)."""
    delta = target - value
    advantage = jax.lax.stop_gradient(delta)
    advantage_mean, advantage_std = jnp.mean(advantage), jnp.std(advantage)
    if normalize_advantage:
        advantage = (advantage - advantage_mean) / (advantage_std + 1e-8)
    policy_loss = -jnp.mean(log_prob_taken * advantage)
    value_loss = coefficients.value * jnp.mean(jnp.square(delta))
    entropy_loss = -(
        coefficients.entropy_roll * roll_entropy + coefficients.entropy_score * score_entropy
    )
    total = policy_loss + value_loss + entropy_loss
    metrics = {
        "loss/total": total,
        "loss/policy": policy_loss,
        "loss/value": value_loss,
        "loss/entropy": entropy_loss,
        "policy/roll_entropy": roll_entropy,
        "policy/score_entropy": score_entropy,
        "advantage/mean": advantage_mean,
        "advantage/std": advantage_std,
        "value/mean": jnp.mean(value),
        "value/explained_variance": explained_variance(value, target),
    }
    return total, metrics


def coefficients_at(context: Context, step: jax.Array) -> LossCoefficients:
    """Loss weights at update `step` (entropy bonuses follow their hold-anneal schedules)."""
    return LossCoefficients(
        value=context.config.algo.value_coef,
        entropy_roll=context.entropy_roll(step),
        entropy_score=context.entropy_score(step),
    )


def loss(
    params: dict, context: Context, trajectory: Trajectory, step: jax.Array
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """A2C loss of `params` on a trajectory collected with the same parameters."""
    log_probs, value = trajectory_log_probs(context, params, trajectory)
    taken = jnp.take_along_axis(log_probs, trajectory.action[..., None], axis=-1)[..., 0]
    entropies = head_entropies(log_probs, trajectory.roll_index)
    target = td0_targets(trajectory.reward, trajectory.value, context.config.algo.gamma)
    coefficients = coefficients_at(context, step)
    total, metrics = loss_terms(
        taken,
        value,
        target,
        entropies.roll,
        entropies.score,
        coefficients,
        context.config.algo.normalize_advantage,
    )
    metrics |= {
        "schedule/entropy_roll": jnp.asarray(coefficients.entropy_roll),
        "schedule/entropy_score": jnp.asarray(coefficients.entropy_score),
        "_log_probs": jax.lax.stop_gradient(log_probs),
    }
    return total, metrics


def update(context: Context, state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
    """One A2C update: play B games with the current policy, then one gradient step."""
    key, rollout_key = jax.random.split(state.key)
    config = context.config
    trajectory = rollout(
        context.network,
        state.params,
        rollout_key,
        config.train.games_per_update,
        config.features,
        context.rules,
    )
    state, metrics = gradient_step(context, state.replace(key=key), trajectory, loss)
    metrics["train/mean_score"] = jnp.mean(trajectory.final_score.astype(jnp.float32))
    return state, metrics
