"""The one interface every player implements: trained networks, the optimum and the baselines
(one policy signature, `envs.environment.Policy`)."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

from yahtzee_jax.envs.environment import Policy, no_others
from yahtzee_jax.game import NUM_KEEP_ACTIONS, State, legal_action_mask
from yahtzee_jax.game.engine import batch_of_one
from yahtzee_jax.game.rules import Rules, get_rules

__all__ = [
    "Agent",
    "OneCard",
    "Policy",
    "Remembering",
    "alone",
    "initial_memory",
    "make_random_agent",
    "policy_step",
    "uniform_legal_action",
]


@runtime_checkable
class Remembering(Protocol):
    """A policy that can carry a memory from a batch's decision to the same cards' next, in
    the form of recurrent policies: `step(params, own, others, keys, memory) -> (actions,
    memory)`, from `initial_memory(B)`. Its actions are its one call's (`__call__` is `step`
    keeping nothing); the memory only saves work (the widget agents' turn keep values, kept
    from a turn's first keep for its last). A caller that plays the same cards decision after
    decision may carry it (`play_games`: `initial_memory`, `policy_step`); any other calls the
    policy."""

    def initial_memory(self, batch_size: int) -> Any:
        """The memory given with a batch's first decision (it holds nothing)."""

    def step(
        self, params: Any, own: State, others: State, keys: jax.Array, memory: Any
    ) -> tuple[jax.Array, Any]:
        """The one call's actions, and the memory for the same cards' next decision."""


def initial_memory(policy: Policy, batch_size: int) -> Any:
    """A policy's memory before a batch's first decision; None for a policy that keeps none."""
    return policy.initial_memory(batch_size) if isinstance(policy, Remembering) else None


def policy_step(
    policy: Policy, params: Any, own: State, others: State, keys: jax.Array, memory: Any
) -> tuple[jax.Array, Any]:
    """(actions, next memory) of any policy from `initial_memory`'s (None: the one call)."""
    if memory is None:
        return policy(params, own, others, keys), None
    return policy.step(params, own, others, keys, memory)


def at_roll(cards: State, roll_index: int) -> State:
    """Cards of a lockstep batch at the turn's `roll_index`-th decision, their roll index shown as
    that constant: a loop that plays a turn at a time knows it, and a policy that selects on the
    roll (`DecisionTablePolicy`) then compiles only that roll's work."""
    return cards.replace(roll_index=jnp.full_like(cards.roll_index, roll_index))


@dataclasses.dataclass(frozen=True)
class OneCard:
    """An agent's `act(params, state, key)`: its policy on one unbatched card alone, as a batch
    of one with no other cards (equal when the policies are, so one compiled program)."""

    policy: Policy

    def __call__(self, params: Any, state: State, key: jax.Array) -> jax.Array:
        """The policy's action for one card played alone."""
        own = batch_of_one(state)
        return self.policy(params, own, no_others(own), batch_of_one(key))[0]


@dataclasses.dataclass(frozen=True)
class Agent:
    """A named policy with its parameters.

    `policy(params, own [B], others [B, K], keys [B])` is the one signature
    (`envs.environment.Policy`): a solitaire game shows it no other cards (K = 0), a match table the
    others in seat order after its own. Every caller plays through it: evaluations, match
    opponents (`Seat(agent.name, agent.policy, agent.params)`), the learner's seat of a match.
    `act(params, state, key)` is the same policy on one unbatched card alone (`OneCard`), for
    the callers that hold one card (the terminal game). The policy is
    `jit`-static, so the same function object with new `params` (a pytree: network weights, a
    value table, or None) reuses the compiled program. `rules` is the rule variant the agent
    plays (solved or trained for one variant). `reads_others` says that the policy reads the
    other cards (two-player learners with opponent features, the planners for the win, the
    win-seeker): a tournament plays it in real matches; alone it plays against empty cards.
    `optimal` says that it plays the exact optimum's games (the optimal agent): its games are
    the reference evaluations compare others with (`evaluation.reports`).

    An agent is a pytree whose only leaves are its `params`; everything else is static, so a
    whole agent can be an argument of a jitted function (one compile per kind of agent, new
    weights reuse it) and agents and opponents travel as one kind of object.
    """

    name: str
    policy: Policy
    params: Any
    rules: Rules
    reads_others: bool = False
    optimal: bool = False

    @property
    def act(self) -> OneCard:
        """`act(params, state, key)`: the policy on one card alone."""
        return OneCard(self.policy)


jax.tree_util.register_dataclass(
    Agent,
    data_fields=["params"],
    meta_fields=["name", "policy", "rules", "reads_others", "optimal"],
)


@dataclasses.dataclass(frozen=True)
class Alone:
    """A policy shown no other card, whatever the table holds (`alone`)."""

    policy: Policy

    def __call__(self, params: Any, own: State, others: State, keys: jax.Array) -> jax.Array:
        """The policy's actions on its own cards, as alone."""
        return self.policy(params, own, no_others(own), keys)


def alone(agent: Agent) -> Agent:
    """The agent playing its own card only, at any table (`match --solitaire`)."""
    return dataclasses.replace(agent, policy=Alone(agent.policy), reads_others=False)


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
class RandomPolicy:
    """The random agent's policy: equal (and so one jit cache entry) per rule variant."""

    rules: Rules

    def __call__(self, params: Any, own: State, others: State, keys: jax.Array) -> jax.Array:
        """A uniformly random legal action of each card."""

        def one(state: State, key: jax.Array) -> jax.Array:
            legal = legal_action_mask(state, self.rules)
            return uniform_legal_action(legal, jax.random.bits(key, (), jnp.uint32))

        return jax.vmap(one)(own, keys)


def make_random_agent(rules: str | Rules) -> Agent:
    """Uniformly random legal actions."""
    rules = get_rules(rules)
    return Agent(name="random", policy=RandomPolicy(rules), params=None, rules=rules)
