"""Pieces every learner shares: the return/advantage function, the optimizer step, and the
diagnostics each update reports (reduced to scalars inside the compiled chunk)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax

from yahtzee_jax.agents.agent import uniform_legal_action
from yahtzee_jax.algorithms.algorithm import Context, Metrics
from yahtzee_jax.game.engine import LAST_ROLL
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS

TOP_K = 3


def lambda_returns(
    reward: jax.Array, value: jax.Array, gamma: float | jax.Array, gae_lambda: float | jax.Array
) -> jax.Array:
    """Lambda-returns along the time axis 0 of one batch of whole episodes.

    G_t = r_t + gamma ((1 - lambda) V(s_{t+1}) + lambda G_{t+1}), with V = G = 0 after the last
    decision. The GAE(lambda) advantage is G_t - V(s_t). lambda = 1 gives the Monte-Carlo
    return (the other term is multiplied by an exact 0); a static lambda = 0 is computed as the
    TD(0) target r_t + gamma V(s_{t+1}) directly, bit for bit the A2C target of eq. 16.
    """
    value = jax.lax.stop_gradient(value)
    next_value = jnp.concatenate([value[1:], jnp.zeros_like(value[:1])], axis=0)
    if isinstance(gae_lambda, (int, float)) and gae_lambda == 0:
        return reward + gamma * next_value

    def backward(next_return: jax.Array, step: tuple[jax.Array, jax.Array]):
        reward_t, next_value_t = step
        mixed = (1.0 - gae_lambda) * next_value_t + gae_lambda * next_return
        return_t = reward_t + gamma * mixed
        return return_t, return_t

    _, returns = jax.lax.scan(
        backward, jnp.zeros_like(reward[0]), (reward, next_value), reverse=True
    )
    return returns


def explore(
    action: jax.Array, keys: jax.Array, legal: jax.Array, epsilon: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """(action int32[B], explored bool[B]): with probability `epsilon` each decision plays a
    uniformly random legal action instead (the planners' exploration; one key per decision)."""
    key_pairs = jax.vmap(jax.random.split)(keys)
    explored = jax.vmap(jax.random.uniform)(key_pairs[:, 0]) < epsilon
    bits = jax.vmap(lambda key: jax.random.bits(key, (), jnp.uint32))(key_pairs[:, 1])
    random = jax.vmap(uniform_legal_action)(legal, bits)
    return jnp.where(explored, random, action).astype(jnp.int32), explored


def masked_mean(values: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean of `values` where `mask` is true (0 if none)."""
    mask = mask.astype(values.dtype)
    return jnp.sum(values * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def normalize(values: jax.Array) -> jax.Array:
    """Zero mean, unit standard deviation over all entries."""
    return (values - jnp.mean(values)) / (jnp.std(values) + 1e-8)


def explained_variance(prediction: jax.Array, target: jax.Array) -> jax.Array:
    """1 - Var(target - prediction) / Var(target)."""
    return 1.0 - jnp.var(target - prediction) / jnp.maximum(jnp.var(target), 1e-8)


def kl_per_decision(log_p: jax.Array, log_q: jax.Array) -> jax.Array:
    """KL(p || q) of each categorical distribution of a batch (-inf entries allowed)."""
    finite = jnp.isfinite(log_p)
    diff = jnp.where(finite, log_p - jnp.where(finite, log_q, 0.0), 0.0)
    return jnp.sum(jnp.exp(jnp.where(finite, log_p, -jnp.inf)) * diff, axis=-1)


def kl_divergence(log_p: jax.Array, log_q: jax.Array) -> jax.Array:
    """Mean KL(p || q) over a batch of categorical distributions (-inf entries allowed)."""
    return jnp.mean(kl_per_decision(log_p, log_q))


def keep_action_stats(action: jax.Array, roll_index: jax.Array) -> Metrics:
    """Keep-pattern diversity (share of the 32 used) and top-1 / top-k pattern frequency."""
    keeping = (roll_index < LAST_ROLL).reshape(-1)
    actions = jnp.where(keeping, action.reshape(-1), NUM_KEEP_ACTIONS)
    counts = jnp.bincount(actions, length=NUM_KEEP_ACTIONS + 1)[:NUM_KEEP_ACTIONS]
    total = jnp.maximum(jnp.sum(counts), 1)
    ranked = jnp.sort(counts)[::-1]
    return {
        "policy/keep_diversity": jnp.mean(counts > 0),
        "policy/top1_keep_frequency": ranked[0] / total,
        f"policy/top{TOP_K}_keep_frequency": jnp.sum(ranked[:TOP_K]) / total,
    }


def optimizer_step(
    context: Context, params: Any, opt_state: optax.OptState, grads: Any
) -> tuple[Any, optax.OptState, Metrics]:
    """Apply one optimizer step; returns new params, optimizer state and gradient diagnostics."""
    updates, opt_state = context.optimizer.update(grads, opt_state, params)
    grad_norm = optax.tree.norm(grads)
    max_norm = context.config.optim.max_grad_norm
    metrics = {
        "grad/norm": grad_norm,
        "grad/clip_rate": ((max_norm > 0) & (grad_norm > max_norm)).astype(jnp.float32),
    }
    return optax.apply_updates(params, updates), opt_state, metrics


def gradient_steps_per_update(config: Any) -> int:
    """`algo.gradient_steps`: the learners that take several optimizer steps per update (DQN,
    td-planner) count them so for the learning-rate schedule."""
    return config.algo.gradient_steps


def learning_rate_at(context: Context, update: jax.Array) -> jax.Array:
    """The learning rate at the first optimizer step of update `update` (schedules count steps)."""
    steps_per_update = context.algorithm.optimizer_steps_per_update(context.config)
    return context.learning_rate(update * steps_per_update)
