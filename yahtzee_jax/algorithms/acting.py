"""A trained learner's acting policy: evaluation agents and the frozen `self` seat.

A learner that acts on its environment's features (`Environment.features`) acts greedily
(argmax, dropout off) through one `GreedyPolicy` per config, the one policy signature: its
network and environment are built once (`greedy_policy`, cached per config and argmax) and held
as static fields, so `jit` keys its cache on the same object and a new agent of the same config
reuses the compiled program. A learner that plans on the cards (td-planner, td-win) makes its
own agent. The `self` seat of a match is the learner's own agent, frozen (`match_seats`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from yahtzee_jax import envs
from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.config import Config
from yahtzee_jax.envs import MatchView, Seat
from yahtzee_jax.envs.environment import Environment
from yahtzee_jax.game.engine import State, empty_cards

# choose(network, params, features [B, F], legal [B, 45], roll index [B]) -> the learner's
# greedy actions [B] (argmax, dropout off): each learner's own
Choose = Callable[[nn.Module, Any, jax.Array, jax.Array, jax.Array], jax.Array]


@dataclasses.dataclass(frozen=True)
class GreedyPolicy:
    """A learner's greedy actions on its own cards [B] (and, when its input holds the other
    cards of a match, those [B, `others`]; empty cards when shown none: solitaire `evaluate`)."""

    choose: Choose
    network: nn.Module
    env: Environment
    others: int  # other cards its input holds: P - 1 with a match's opponent features, else 0

    def __call__(self, params: Any, own: State, others: State, keys: jax.Array) -> jax.Array:
        """The actions of each own card (against the other cards where the input holds them)."""
        observation = own
        if self.others:
            if others.dice.shape[1] == 0:  # alone: empty cards in the other seats
                others = empty_cards((own.dice.shape[0], self.others), self.env.rules)
            observation = MatchView(own, others)
        x, legal = self.env.features(observation), self.env.legal_action_mask(observation)
        return self.choose(self.network, params, x, legal, own.roll_index).astype(jnp.int32)


def _build_greedy_policy(config: Config, choose: Choose) -> GreedyPolicy:
    from yahtzee_jax.algorithms import get_algorithm  # the registry imports this module

    env = envs.make(config)
    reads = env.has_opponents and config.env.opponent_features
    network = get_algorithm(config.algo.name).make_network(config)
    return GreedyPolicy(choose, network, env, config.env.players - 1 if reads else 0)


_cached_greedy_policy = functools.cache(_build_greedy_policy)


def greedy_policy(config: Config, choose: Choose) -> GreedyPolicy:
    """The greedy policy of a config's network with the learner's argmax `choose`, built once
    per (config, choose): the same object, and so the same compiled programs, each time. A
    population member's config, which holds its traced hyperparameters (no hash), gets one
    built for its trace."""
    try:
        hash(config)
    except TypeError:
        return _build_greedy_policy(config, choose)
    return _cached_greedy_policy(config, choose)


@dataclasses.dataclass(frozen=True)
class GreedyAgents:
    """`Algorithm.make_agent` of a learner that acts on its environment's features: its greedy
    agent (`GreedyPolicy` with the learner's argmax), reading the opponents' cards in a match
    when trained with opponent features."""

    choose: Choose

    def __call__(self, config: Config, params: Any, name: str) -> Agent:
        """The greedy agent of `params`."""
        policy = greedy_policy(config, self.choose)
        rules = envs.rules_of(config)
        return Agent(name, policy, params, rules, reads_others=policy.others > 0)


def match_seats(config: Config) -> tuple[Seat, ...]:
    """A match config's opponents, built-in agents or the frozen learner (none alone). The
    frozen learner is the learner's own agent, its parameters the task state's; one that reads
    other cards is shown every other card (in a two-player match, the learner's)."""
    if not envs.environment_class(config).has_opponents:
        return ()
    from yahtzee_jax.agents import builtin_agent
    from yahtzee_jax.algorithms import get_algorithm  # the registry imports this module

    seats = []
    for name in config.env.opponents:
        if name == "self":  # a config word: the learner itself
            agent = get_algorithm(config.algo.name).make_agent(config, None, name)
            seat = Seat(name, agent.policy, frozen_learner=True, sees_table=agent.reads_others)
        else:
            # Built outside any trace: the agent's tables are concrete arrays, not tracers.
            agent = builtin_agent(name, envs.rules_of(config))
            seat = Seat(agent.name, agent.policy, agent.params)
        seats.append(seat)
    return tuple(seats)
