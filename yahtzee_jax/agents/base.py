"""The one interface every player implements: trained networks, the optimum and the baselines."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp

from yahtzee_jax.game import State, legal_action_mask
from yahtzee_jax.game.rules import Rules, get_rules

Policy = Callable[[State, jax.Array], jax.Array]


@dataclasses.dataclass(frozen=True)
class Agent:
    """A named policy: `act(state, key) -> int32 action` for ONE unbatched state.

    `act` must be pure and jittable; evaluators `vmap` it over games. `rules` is the rule
    variant the agent was built for (an agent solved or trained for one variant plays it).
    """

    name: str
    act: Policy
    rules: Rules


def make_random_agent(rules: str | Rules = "official") -> Agent:
    """Uniformly random legal actions."""
    rules = get_rules(rules)

    def act(state: State, key: jax.Array) -> jax.Array:
        logits = jnp.where(legal_action_mask(state, rules), 0.0, -jnp.inf)
        return jax.random.categorical(key, logits).astype(jnp.int32)

    return Agent(name="random", act=act, rules=rules)
