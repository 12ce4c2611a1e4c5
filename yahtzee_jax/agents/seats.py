"""Agents at a match table: an agent as an opponent's seat or in the learner's seat.

An agent that reads its opponent's card (a learner trained with opponent features, the
win-seeker) plays through its `match_act`; any other plays its own card (`batch_act`),
whatever the others hold.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

from yahtzee_jax.agents.base import Agent
from yahtzee_jax.envs.match import MatchView, Seat
from yahtzee_jax.game.engine import State


def _actions(agent: Agent, own: State, other: Any, keys: jax.Array) -> jax.Array:
    """The agent's actions on its cards `own` [B] (`other`: what `match_act` reads)."""
    if agent.match_act is not None:
        return agent.match_act(agent.params, own, other, keys)
    return agent.batch_act(agent.params, own, keys)


def agent_seat(agent: Agent) -> Seat:
    """An agent as a match opponent; a reading agent reads the learner's card."""

    def policy(params: Any, own: State, learner: State, keys: jax.Array) -> jax.Array:
        return _actions(dataclasses.replace(agent, params=params), own, learner, keys)

    return Seat(agent.name, policy, agent.params)


def learner_policy(agent: Agent) -> Any:
    """An agent in the learner's seat of a match rollout: observations -> (actions, None); a
    reading agent reads its opponents' cards ([B] with one opponent, else [B, P-1])."""

    def policy(observation: MatchView, keys: jax.Array) -> tuple[jax.Array, None]:
        others = observation.others
        if others.dice.shape[1] == 1:  # one opponent: the card itself, as `match_act` takes it
            others = jax.tree.map(lambda leaf: leaf[:, 0], others)
        return _actions(agent, observation.card, others, keys), None

    return policy
