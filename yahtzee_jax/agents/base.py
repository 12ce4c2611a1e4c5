"""The one interface every player implements: trained networks, the optimum and the baselines."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax.game import State, legal_action_mask
from yahtzee_jax.game.rules import OFFICIAL, Rules, get_rules

# act(params, state, key) -> int32 action, for ONE unbatched state; pure and jittable.
Policy = Callable[[Any, State, jax.Array], jax.Array]


@dataclasses.dataclass(frozen=True)
class Agent:
    """A named policy with its parameters.

    `act(params, state, key)` returns the action for one unbatched state; evaluators `vmap` it
    over games and `jit` it with `act` static, so the same `act` function object with new
    `params` (a pytree: network weights, a value table, or None) reuses the compiled program.
    `rules` is the rule variant the agent plays (an agent solved or trained for one variant).
    """

    name: str
    act: Policy
    params: Any = None
    rules: Rules = OFFICIAL


def _random_act(params: Any, state: State, key: jax.Array) -> jax.Array:
    rules = params  # static rules are folded in by `make_random_agent` below
    logits = jnp.where(legal_action_mask(state, rules), 0.0, -jnp.inf)
    return jax.random.categorical(key, logits).astype(jnp.int32)


_RANDOM_ACTS: dict[Rules, Policy] = {}


def make_random_agent(rules: str | Rules = OFFICIAL) -> Agent:
    """Uniformly random legal actions."""
    rules = get_rules(rules)
    if rules not in _RANDOM_ACTS:  # one function object per variant keeps the jit cache warm

        def act(params: Any, state: State, key: jax.Array) -> jax.Array:
            return _random_act(rules, state, key)

        _RANDOM_ACTS[rules] = act
    return Agent(name="random", act=_RANDOM_ACTS[rules], params=None, rules=rules)
