"""A trained learner's acting policy on any environment: evaluation agents and `self` seats.

Every learner acts greedily (argmax, dropout off) through its `Algorithm.greedy` on the input
its environment gives (`Environment.features`). The acting functions are frozen dataclasses,
equal when their configs are: `jit` keys its cache on them, so a new agent of the same config
reuses the compiled program without a module-level cache.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax import envs
from yahtzee_jax.agents.base import Agent
from yahtzee_jax.config import Config
from yahtzee_jax.envs import MatchView, Seat
from yahtzee_jax.game.engine import State, empty_cards


@dataclasses.dataclass(frozen=True)
class GreedyPolicy:
    """The greedy actions of a config's network on a batch of its environment's observations."""

    config: Config

    def __call__(self, params: Any, observation: Any) -> jax.Array:
        """Actions int32[B] for observations [B]."""
        from yahtzee_jax.algorithms import get_algorithm

        algorithm = get_algorithm(self.config.algo.name)
        env = envs.make(self.config)
        network = algorithm.make_network(self.config)
        card = env.card(observation)
        x, legal = env.features(observation), env.legal_action_mask(observation)
        return algorithm.greedy(network, params, x, legal, card.roll_index).astype(jnp.int32)

    @property
    def reads_others(self) -> bool:
        """Does the input hold other cards (a match with Yuan's opponent groups)?"""
        config = self.config
        return envs.environment_class(config).has_opponents and config.env.opponent_features


@dataclasses.dataclass(frozen=True)
class GreedyAct:
    """The policy of a greedy learner: its own cards [B] (and, in a match, the other cards
    [B, P-1]) as its environment's observation. A learner that reads the others plays against
    empty cards when shown none (solitaire `evaluate`)."""

    policy: GreedyPolicy

    def __call__(self, params: Any, own: State, others: State, keys: jax.Array) -> jax.Array:
        """The actions of each own card (against the other cards where the input holds them)."""
        config = self.policy.config
        if not envs.environment_class(config).has_opponents:
            return self.policy(params, own)
        if others.dice.shape[1] == 0:  # alone: empty cards in the other seats
            batch = (own.dice.shape[0], config.env.players - 1)
            others = empty_cards(batch, envs.rules_of(config))
        return self.policy(params, MatchView(own, others))


def make_agent(config: Config, params: Any, name: str) -> Agent:
    """The greedy agent of a trained learner; one trained with opponent features reads the
    opponents' cards in a match and plays against empty ones alone (solitaire `evaluate`)."""
    policy = GreedyPolicy(config)
    rules = envs.rules_of(config)
    return Agent(name, GreedyAct(policy), params, rules, reads_others=policy.reads_others)


def match_seats(config: Config) -> tuple[Seat, ...]:
    """A match config's opponents, built-in agents or the frozen learner (none alone). The
    frozen learner plays its greedy policy on its own card, reading the learner's card as its
    opponent's when the input has the opponent groups, or the learner's own `match_seat`."""
    if not envs.environment_class(config).has_opponents:
        return ()
    from yahtzee_jax.agents import builtin_agent
    from yahtzee_jax.algorithms import get_algorithm  # the registry imports this module

    own_seat = get_algorithm(config.algo.name).match_seat
    seats = []
    for name in config.env.opponents:
        if name == "self":
            if own_seat is not None:
                seats.append(Seat("self", own_seat(config), frozen_learner=True, sees_table=True))
            else:
                seats.append(Seat("self", GreedyAct(GreedyPolicy(config)), frozen_learner=True))
        else:
            # Built outside any trace: the agent's tables are concrete arrays, not tracers.
            agent = builtin_agent(name, envs.rules_of(config))
            seats.append(Seat(agent.name, agent.policy, agent.params))
    return tuple(seats)
