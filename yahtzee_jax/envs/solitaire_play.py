"""An agent's solitaire games through the one rollout (`envs.rollout`): a policy on cards,
records out (a learner's training games are `algorithms.training_rollout`'s).

A convenience for the callers that play plain solitaire games or single turns on cards (the
evaluation harness, the engine benchmark, the tests): `play` builds the solitaire environment
of a task and returns what the rollout returns but the rewards.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax

from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs.rollout import Recorder, RolloutPolicy, agent_policy, episode_keys, rollout
from yahtzee_jax.envs.tasks import SOLITAIRE
from yahtzee_jax.game.engine import State
from yahtzee_jax.game.rules import Rules

# A policy here is the one rollout's (`envs.rollout.RolloutPolicy`) on cards: policy(states
# [B], keys [B]) -> (actions int32[B], extras with leading axis B); an agent's policy plays
# through `agent_policy(policy, params)`.
__all__ = [
    "SOLITAIRE",
    "RolloutPolicy",
    "Transition",
    "agent_policy",
    "episode_keys",
    "play",
    "record_transition",
]


class Transition(NamedTuple):
    """The default per-decision record."""

    state: State
    action: jax.Array
    reward: jax.Array
    extras: Any


def record_transition(state: State, action: jax.Array, next_state: State, extras: Any) -> Any:
    """Keep the state before the decision, the action, its reward and the policy's extras."""
    return Transition(state, action, next_state.reward, extras)


def play(
    policy: RolloutPolicy,
    keys: jax.Array,
    rules: Rules,
    task: str = "game",
    record: Recorder = record_transition,
    by_turn: bool = False,
) -> tuple[State, Any]:
    """Play one solitaire episode of `task` per key in lockstep: (final states [B], records
    [T, B, ...]); see `envs.rollout.rollout`."""
    env = SOLITAIRE[task](rules, FeatureConfig())
    final, records, _ = rollout(env, policy, keys, None, record, by_turn)
    return final, records
