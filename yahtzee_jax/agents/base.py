"""The one interface every player implements: trained networks, the optimum and the baselines."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax.envs.match import SeatPolicy
from yahtzee_jax.game import NUM_KEEP_ACTIONS, State, legal_action_mask
from yahtzee_jax.game.engine import batch_of_one
from yahtzee_jax.game.rules import Rules, get_rules

# act(params, state, key) -> int32 action, for ONE unbatched state; pure and jittable.
Policy = Callable[[Any, State, jax.Array], jax.Array]
# batch_act(params, states, keys) -> int32 actions [B]: the actions `act` gives each state.
BatchAct = Callable[[Any, State, jax.Array], jax.Array]
# match_act is a match table's seat policy (`envs.match.SeatPolicy`): (params, own cards [B],
# the other cards, keys) -> int32 actions [B]; one signature for an agent and a seat.


@dataclasses.dataclass(frozen=True)
class VmappedAct:
    """`batch_act` of an agent that gives only `act`: `act` vmapped over the batch (equal when
    the `act`s are, so one compiled program per kind of agent)."""

    act: Policy

    def __call__(self, params: Any, states: State, keys: jax.Array) -> jax.Array:
        """The actions `act` gives each state of the batch."""
        return jax.vmap(self.act, in_axes=(None, 0, 0))(params, states, keys)


@dataclasses.dataclass(frozen=True)
class OneOfBatch:
    """`act` of an agent that gives only `batch_act`: one card as a batch of one (equal when the
    `batch_act`s are)."""

    batch_act: BatchAct

    def __call__(self, params: Any, state: State, key: jax.Array) -> jax.Array:
        """The action `batch_act` gives one card."""
        return self.batch_act(params, batch_of_one(state), batch_of_one(key))[0]


@dataclasses.dataclass(frozen=True)
class Agent:
    """A named policy with its parameters.

    `batch_act(params, states, keys)` plays a batch of cards, `act(params, state, key)` one
    unbatched card with the same actions; an agent gives either or both, and the other is made
    from it (`act` vmapped, `VmappedAct`; `batch_act` on a batch of one, `OneOfBatch`). Both are
    `jit`-static, so the same function object with new `params` (a pytree: network weights, a
    value table, or None) reuses the compiled program. Every caller plays batches through
    `batch_act`; an agent's own is faster where it shares work across the batch (the widget
    agents). `rules` is the rule variant the agent plays (solved or trained for one variant).
    `match_act(params, own, other, keys)`, given by agents that read the opponent's card
    (two-player learners with opponent features, the win-seeker), is what a match asks them,
    batched over pairs of cards; `act` is then their play against an empty opponent card.

    An agent is a pytree whose only leaves are its `params`; everything else is static, so a
    whole agent can be an argument of a jitted function (one compile per kind of agent, new
    weights reuse it) and agents and opponents travel as one kind of object.
    """

    name: str
    act: Policy | None  # None: `batch_act` on a batch of one (filled in on creation)
    params: Any
    rules: Rules
    batch_act: BatchAct | None = None  # None: `act` vmapped (filled in on creation)
    match_act: SeatPolicy | None = None

    def __post_init__(self) -> None:
        # Either signature from the other (frozen: set once, here).
        if self.act is None:
            if self.batch_act is None:
                raise TypeError(f"agent {self.name!r} needs act or batch_act")
            object.__setattr__(self, "act", OneOfBatch(self.batch_act))
        if self.batch_act is None:
            object.__setattr__(self, "batch_act", VmappedAct(self.act))


jax.tree_util.register_dataclass(
    Agent,
    data_fields=["params"],
    meta_fields=["name", "act", "rules", "batch_act", "match_act"],
)


def uniform_legal_action(legal_mask: jax.Array, random_bits: jax.Array) -> jax.Array:
    """A uniformly random legal action from 32 random uint32 bits (one draw, not one per action).

    Uses the engine's mask structure: at a keep decision all 32 keep actions are legal (so the
    action is `bits % 32`); at a score decision only boxes are, and the `bits % count`-th legal
    box is taken (bias below 1e-8). A cumsum over 13 boxes instead of 45 actions is much cheaper
    on the CPU.
    """
    box_mask = legal_mask[NUM_KEEP_ACTIONS:]
    cumulative = jnp.cumsum(box_mask, dtype=jnp.uint32)
    index = random_bits % jnp.maximum(cumulative[-1], 1)
    box_action = NUM_KEEP_ACTIONS + jnp.argmax(cumulative > index)
    keep_action = random_bits % NUM_KEEP_ACTIONS
    return jnp.where(legal_mask[0], keep_action, box_action).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class RandomAct:
    """`act` of the random agent: equal (and so one jit cache entry) per rule variant."""

    rules: Rules

    def __call__(self, params: Any, state: State, key: jax.Array) -> jax.Array:
        """A uniformly random legal action of one state."""
        legal = legal_action_mask(state, self.rules)
        return uniform_legal_action(legal, jax.random.bits(key, (), jnp.uint32))


def make_random_agent(rules: str | Rules) -> Agent:
    """Uniformly random legal actions."""
    rules = get_rules(rules)
    return Agent(name="random", act=RandomAct(rules), params=None, rules=rules)
