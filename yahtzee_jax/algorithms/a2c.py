"""Advantage actor-critic with TD(0) targets, the paper's equations 16-17 (its best learner),
top to bottom: its settings, its loss, the KL diagnostic and critic warm-up, and the update.

    delta_t = G_t - V(s_t),   A_t = normalise(stop_gradient(delta_t))
    L = -mean(log pi(a_t | s_t) A_t) + lambda_V mean(delta_t^2) + entropy and upper terms

with the TD(0) target G_t = r_t + gamma V(s_{t+1}), V = 0 after the last decision. As in the
paper's code the bootstrap V(s_{t+1}) is the value seen during the rollout (no gradient) and one
gradient step is taken per batch of games. `gae_lambda` > 0 replaces the TD(0) target by the
lambda-return (the paper's GAE sweep, Fig. 17); 0 is the TD(0) target exactly. REINFORCE
(`reinforce.py`, eq. 15) is this loss and step on Monte-Carlo returns (lambda = 1).

The batch comes from the shared rollout (`training_rollout.collect_batch`); the entropy bonus,
upper-head regression and shaped rewards are the actor-critics' shared terms (`actor_critic`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax import envs
from yahtzee_jax.algorithms import acting, actor_critic
from yahtzee_jax.algorithms.algorithm import Algorithm, Context, Metrics, TrainState
from yahtzee_jax.algorithms.common import (
    explained_variance,
    kl_per_decision,
    lambda_returns,
    learning_rate_at,
    masked_mean,
    normalize,
    optimizer_step,
)
from yahtzee_jax.algorithms.training_rollout import (
    HeadOutputs,
    Trajectory,
    collect_batch,
    evaluate_heads,
    evaluate_trajectory,
    taken_log_probs,
)
from yahtzee_jax.config import Config, takes_default
from yahtzee_jax.game.engine import LAST_ROLL
from yahtzee_jax.networks import entropy, value_head_modules

# --------------------------------------------------------------------------------------------
# Settings: Table 7's A2C column is the actor-critic defaults
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class A2CConfig(actor_critic.ActorCriticConfig):
    """A2C: Table 7's A2C column (the actor-critic defaults)."""

    name: str = "a2c"


# --------------------------------------------------------------------------------------------
# The loss (eqs. 15/17)
# --------------------------------------------------------------------------------------------


def policy_value_terms(
    log_prob_taken: jax.Array,
    value: jax.Array,
    target: jax.Array,
    value_coef: float,
    normalize_advantage: bool,
) -> tuple[jax.Array, Metrics]:
    """Policy-gradient and value terms of eqs. 15/17 from per-decision quantities (any shape)."""
    delta = target - value
    advantage = jax.lax.stop_gradient(delta)
    advantage_mean, advantage_std = jnp.mean(advantage), jnp.std(advantage)
    if normalize_advantage:
        advantage = normalize(advantage)
    policy_loss = -jnp.mean(log_prob_taken * advantage)
    value_loss = value_coef * jnp.mean(jnp.square(delta))
    metrics = {
        "loss/policy": policy_loss,
        "loss/value": value_loss,
        "advantage/mean": advantage_mean,
        "advantage/std": advantage_std,
        "value/mean": jnp.mean(value),
        "value/explained_variance": explained_variance(value, target),
    }
    return policy_loss + value_loss, metrics


def loss(
    params: Any,
    context: Context,
    trajectory: Trajectory,
    step: jax.Array,
    gamma: float | jax.Array,
    gae_lambda: float,
) -> tuple[jax.Array, tuple[Metrics, HeadOutputs]]:
    """The whole actor-critic loss of `params` on a trajectory; aux = (metrics, head outputs).

    Each head runs only on the decisions that need it (`evaluate_heads`). The lambda-return
    targets bootstrap from the rollout's values, or, when the rollout skipped the value head,
    from this forward pass's (no gradient): the same parameters and dropout masks give the
    same values, so the rollout need not compute them.
    """
    outputs = evaluate_heads(context.network, params, trajectory)
    acting_value = outputs.value if trajectory.value is None else trajectory.value
    acting_upper = outputs.upper if trajectory.upper is None else trajectory.upper
    rewards = actor_critic.training_rewards(context, trajectory, gamma, step, acting_upper)
    target = lambda_returns(rewards, acting_value, gamma, gae_lambda)
    taken = taken_log_probs(outputs, trajectory.action)
    algo = context.config.algo
    main, metrics = policy_value_terms(
        taken, outputs.value, target, algo.value_coef, algo.normalize_advantage
    )
    auxiliary, aux_metrics = actor_critic.auxiliary_terms(
        context, step, actor_critic.head_entropies(outputs), outputs.upper, trajectory
    )
    total = main + auxiliary
    metrics = {"loss/total": total, **metrics, **aux_metrics}
    if not takes_default(algo, "shaping_weight"):
        shaping = jax.lax.stop_gradient(rewards - trajectory.reward)
        metrics["train/mean_shaping"] = jnp.mean(jnp.sum(shaping, axis=0))
    return total, (metrics, outputs)


def reference_loss(
    params: Any, context: Context, trajectory: Trajectory, target: jax.Array, step: jax.Array
) -> tuple[jax.Array, tuple[Metrics, jax.Array]]:
    """The loss as every head on every decision computes it (aux = (metrics, log-probs)): the
    reference `loss` is tested against, and the bare forward+backward `bench train` times."""
    log_probs, output = evaluate_trajectory(context.network, params, trajectory)
    taken = jnp.take_along_axis(log_probs, trajectory.action[..., None], axis=-1)[..., 0]
    algo = context.config.algo
    main, metrics = policy_value_terms(
        taken, output.value, target, algo.value_coef, algo.normalize_advantage
    )
    per_decision = entropy(log_probs)
    keeping = trajectory.roll_index < LAST_ROLL
    entropies = masked_mean(per_decision, keeping), masked_mean(per_decision, ~keeping)
    auxiliary, aux_metrics = actor_critic.auxiliary_terms(
        context, step, entropies, output.upper, trajectory
    )
    total = main + auxiliary
    return total, ({"loss/total": total, **metrics, **aux_metrics}, log_probs)


# --------------------------------------------------------------------------------------------
# What the update reports and guards: how far it moved the policy, the critic's warm-up
# --------------------------------------------------------------------------------------------


def heads_kl(before: HeadOutputs, after: HeadOutputs) -> jax.Array:
    """Mean KL(before || after) over all decisions, each in its own head's distribution."""
    keep = kl_per_decision(before.roll_log_probs, after.roll_log_probs)
    score = kl_per_decision(before.score_log_probs, after.score_log_probs)
    return (jnp.sum(keep) + jnp.sum(score)) / (keep.size + score.size)


def is_evaluation_update(context: Context, step: jax.Array) -> jax.Array:
    """Does update `step` (counted from 1) end at an evaluation point (as `train.is_eval_step`)?"""
    train = context.config.train
    return (step % train.eval_interval == 0) | (step == train.total_updates)


def kl_after_update(
    context: Context,
    trajectory: Trajectory,
    before: HeadOutputs,
    params: Any,
    step: jax.Array,
) -> jax.Array:
    """policy/kl: KL(pi_before || pi_after) on the same decisions and dropout masks, over the
    whole batch when update `step` (counted from 1) ends at an evaluation point, else over
    the first `algo.kl_sample_games` games (see `ActorCriticConfig.kl_sample_games`)."""
    network = context.network

    def measured(episodes: int) -> jax.Array:
        sample = jax.tree.map(lambda leaf: leaf[:, :episodes], trajectory)
        old = HeadOutputs(
            before.roll_log_probs[:, :, :episodes], before.score_log_probs[:, :episodes], None, None
        )
        return heads_kl(old, evaluate_heads(network, params, sample, with_value=False))

    episodes = envs.episodes_per_update(context.config)
    sample = min(context.config.algo.kl_sample_games * context.env.episodes_per_game, episodes)
    if sample == episodes:
        return measured(episodes)
    exact = is_evaluation_update(context, step)
    return jax.lax.cond(exact, lambda: measured(episodes), lambda: measured(sample))


def value_head_only(config: Config, active: jax.Array, grads: Any) -> tuple[Any, Metrics]:
    """Where `active`, zero every gradient outside the value head (Adam then leaves those
    parameters as they are: zero moments give a zero step)."""
    value_head = value_head_modules(config.network)
    masked = {
        module: leaves
        if module in value_head
        else jax.tree.map(lambda g: jnp.where(active, jnp.zeros_like(g), g), leaves)
        for module, leaves in grads.items()
    }
    return masked, {"schedule/critic_warmup": active.astype(jnp.float32)}


# --------------------------------------------------------------------------------------------
# The update: one batch of games, one gradient step
# --------------------------------------------------------------------------------------------


def single_step_update(
    context: Context, state: TrainState, gamma: float | jax.Array, gae_lambda: float
) -> tuple[TrainState, Metrics]:
    """Roll out, then one gradient step on the loss with lambda-return targets (A2C, REINFORCE),
    with gradient-norm, clip-rate and KL diagnostics.

    The rollout skips the value and upper heads: the loss recomputes them (same parameters,
    same dropout masks) for the targets and the shaping potentials. In the critic's warm-up
    (`algo.critic_warmup`) only the value head's gradient is applied.
    """
    algo, train = context.config.algo, context.config.train
    state, trajectory, rollout_metrics = collect_batch(context, state, with_value=False)
    (_, (metrics, before)), grads = jax.value_and_grad(loss, has_aux=True)(
        state.params, context, trajectory, state.step, gamma, gae_lambda
    )
    if algo.critic_warmup > 0:
        warming = state.step < int(algo.critic_warmup * train.total_updates)
        grads, warmup_metrics = value_head_only(context.config, warming, grads)
        metrics = {**metrics, **warmup_metrics}
    params, opt_state, grad_metrics = optimizer_step(context, state.params, state.opt_state, grads)
    # the same decisions and dropout masks re-evaluated: how far this step moved the policy
    kl = kl_after_update(context, trajectory, jax.lax.stop_gradient(before), params, state.step + 1)
    metrics = {
        **metrics,
        **grad_metrics,
        "policy/kl": kl,
        "schedule/learning_rate": learning_rate_at(context, state.step),
        **rollout_metrics,
        "schedule/gamma": jnp.asarray(gamma, jnp.float32),
    }
    return state.replace(params=params, opt_state=opt_state, step=state.step + 1), metrics


def update(context: Context, state: TrainState) -> tuple[TrainState, Metrics]:
    """One A2C update: play B games with the current policy, then one gradient step."""
    algo = context.config.algo
    return single_step_update(context, state, algo.gamma, algo.gae_lambda)


ALGORITHM = Algorithm(
    name="a2c",
    config_class=A2CConfig,
    update=update,
    make_agent=acting.GreedyAgents(actor_critic.greedy),
)
