"""Play a batch of full games in lockstep with the sampling policy and record the trajectory.

Every game lasts exactly 39 decisions, so a batch of games started together ends together: no
resets or done-masks are needed inside the scan.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.features import batch_features
from yahtzee_jax.game.engine import State, init, legal_action_mask, step, total_score
from yahtzee_jax.game.rules import DECISIONS_PER_GAME, Rules
from yahtzee_jax.networks import NetworkOutput, YahtzeeNet, policy_log_probs


class Trajectory(NamedTuple):
    """One batch of games, time-major: arrays are [T=39, B, ...] unless noted."""

    features: jax.Array  # float32[T, B, F]
    legal_mask: jax.Array  # bool[T, B, 45]
    roll_index: jax.Array  # int32[T, B]
    action: jax.Array  # int32[T, B]
    reward: jax.Array  # float32[T, B]
    value: jax.Array  # float32[T, B], V(s_t) seen while acting
    log_prob: jax.Array  # float32[T, B], log pi(a_t | s_t) of the acting policy
    dropout_key: jax.Array  # uint32[T, 2], the dropout rng of each step (same for the whole batch)
    final_score: jax.Array  # int32[B], the games' total scores


def apply_network(
    network: YahtzeeNet, params: dict, x: jax.Array, dropout_key: jax.Array, train: bool
) -> NetworkOutput:
    """Network forward pass; with `train`, dropout masks come from `dropout_key`."""
    return network.apply({"params": params}, x, train=train, rngs={"dropout": dropout_key})


def apply_over_time(
    network: YahtzeeNet, params: dict, trajectory: Trajectory, train: bool
) -> NetworkOutput:
    """Re-run the network on a whole trajectory with each step's own dropout key.

    Reusing the acting step's key reproduces its dropout masks, so with the acting parameters the
    outputs equal those seen during the rollout and the gradient is exactly on-policy.
    """

    def one_step(x: jax.Array, key: jax.Array) -> NetworkOutput:
        return apply_network(network, params, x, key, train)

    return jax.vmap(one_step)(trajectory.features, trajectory.dropout_key)


def rollout(
    network: YahtzeeNet,
    params: dict,
    key: jax.Array,
    num_games: int,
    features_config: FeatureConfig,
    rules: Rules,
    train: bool = True,
) -> Trajectory:
    """Play `num_games` full games, sampling actions from the policy (dropout on if `train`)."""
    init_key, steps_key = jax.random.split(key)
    state = jax.vmap(init)(jax.random.split(init_key, num_games))

    def one_step(state: State, step_key: jax.Array) -> tuple[State, Trajectory]:
        action_key, env_key, dropout_key = jax.random.split(step_key, 3)
        x = batch_features(state, features_config, rules)
        legal = jax.vmap(lambda one: legal_action_mask(one, rules))(state)
        output = apply_network(network, params, x, dropout_key, train)
        log_probs = policy_log_probs(output, legal, state.roll_index)
        action = jax.random.categorical(action_key, log_probs).astype(jnp.int32)
        env_keys = jax.random.split(env_key, num_games)
        next_state = jax.vmap(lambda s, a, k: step(s, a, k, rules))(state, action, env_keys)
        record = Trajectory(
            features=x,
            legal_mask=legal,
            roll_index=state.roll_index,
            action=action,
            reward=next_state.reward.astype(jnp.float32),
            value=output.value,
            log_prob=jnp.take_along_axis(log_probs, action[:, None], axis=-1)[:, 0],
            dropout_key=dropout_key,
            final_score=jnp.zeros((), jnp.int32),  # filled in below
        )
        return next_state, record

    final_state, trajectory = jax.lax.scan(
        one_step, state, jax.random.split(steps_key, DECISIONS_PER_GAME)
    )
    return trajectory._replace(final_score=total_score(final_state))
