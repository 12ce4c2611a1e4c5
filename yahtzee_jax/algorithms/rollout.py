"""Training rollouts: the network's sampling policy played through the one play loop.

Every decision gets its own dropout seed (drawn from its episode's key), so any later forward pass
over any subset of the decisions (the loss, a PPO minibatch, the KL diagnostic) reproduces the
exact dropout masks the policy acted with.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from yahtzee_jax.config import Config
from yahtzee_jax.game.engine import State, upper_total
from yahtzee_jax.game.rules import Rules
from yahtzee_jax.networks import NetworkOutput, YahtzeeNet, network_log_probs
from yahtzee_jax.play import episode_keys, play


class Trajectory(NamedTuple):
    """One batch of whole episodes, time-major: every array is [T, B, ...] (T = 39 or 3)."""

    features: jax.Array  # float32[T, B, F]
    legal_mask: jax.Array  # bool[T, B, 45]
    roll_index: jax.Array  # int32[T, B]
    action: jax.Array  # int32[T, B]
    reward: jax.Array  # float32[T, B], the game's own reward (change in total score)
    value: jax.Array  # float32[T, B], V(s_t) seen while acting
    upper: jax.Array  # float32[T, B], the upper head's prediction while acting (0 without it)
    log_prob: jax.Array  # float32[T, B], log pi(a_t | s_t) of the acting policy
    dropout_seed: jax.Array  # uint32[T, B], the seed of each decision's dropout masks
    upper_total: jax.Array  # int32[T, B], the upper boxes' total after the decision


def apply_network(
    network: YahtzeeNet, params: Any, x: jax.Array, dropout_seed: jax.Array | None = None
) -> NetworkOutput:
    """Forward pass over features[..., F]; with per-example seeds (uint32[...]) dropout is on."""
    return network.apply({"params": params}, x, dropout_seed)


def sampling_policy(network: YahtzeeNet, params: Any, config: Config, rules: Rules):
    """The batch policy that samples from the network with dropout on (the behaviour policy)."""

    def policy(states: State, keys: jax.Array) -> tuple[jax.Array, dict[str, jax.Array]]:
        key_pairs = jax.vmap(jax.random.split)(keys)
        action_keys = key_pairs[:, 0]
        dropout_seeds = jax.vmap(lambda key: jax.random.bits(key, (), jnp.uint32))(key_pairs[:, 1])
        log_probs, output, x, legal = network_log_probs(
            lambda features: apply_network(network, params, features, dropout_seeds),
            states,
            config.features,
            rules,
        )
        action = jax.vmap(jax.random.categorical)(action_keys, log_probs).astype(jnp.int32)
        extras = {
            "features": x,
            "legal_mask": legal,
            "value": output.value,
            "upper": output.upper,
            "log_prob": jnp.take_along_axis(log_probs, action[:, None], axis=-1)[:, 0],
            "dropout_seed": dropout_seeds,
        }
        return action, extras

    return policy


def _record(state: State, action: jax.Array, next_state: State, extras: dict) -> Trajectory:
    return Trajectory(
        features=extras["features"],
        legal_mask=extras["legal_mask"],
        roll_index=state.roll_index,
        action=action,
        reward=next_state.reward.astype(jnp.float32),
        value=extras["value"],
        upper=extras["upper"],
        log_prob=extras["log_prob"],
        dropout_seed=extras["dropout_seed"],
        upper_total=upper_total(next_state),
    )


def rollout(
    network: YahtzeeNet, params: Any, key: jax.Array, config: Config, rules: Rules
) -> Trajectory:
    """Play one update's episodes (`train.episodes_per_update` of `train.task`) with the policy."""
    keys = episode_keys(key, 0, config.train.episodes_per_update)
    policy = sampling_policy(network, params, config, rules)
    _, trajectory = play(policy, keys, rules, config.train.task, record=_record)
    return trajectory


def evaluate_trajectory(network: YahtzeeNet, params: Any, trajectory: Trajectory) -> tuple:
    """(log-probs over 45 actions [T, B, 45], outputs) of `params` on the trajectory's decisions,
    with each decision's own dropout masks: with the acting parameters this is the rollout."""
    from yahtzee_jax.networks import policy_log_probs

    output = apply_network(network, params, trajectory.features, trajectory.dropout_seed)
    return policy_log_probs(output, trajectory.legal_mask, trajectory.roll_index), output
