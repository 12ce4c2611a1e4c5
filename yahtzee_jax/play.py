"""The one play loop: a batch of episodes in lockstep, a policy function in, records out.

Training rollouts, the evaluation harness, the engine benchmark and the tests all play games
through `play`. Every episode of a batch lasts the same number of decisions (39 for a game, 3 for
the single-turn task), so the loop is a plain `lax.scan` with no resets or done-masks.

Randomness is per episode: episode i of a batch gets its own key, split once into an init key
and a play key, and decision t uses ``split(fold_in(play_key, t))`` = (policy key, dice key).
An episode's dice and choices therefore depend only on its own key, never on the batch size or
on its position in the batch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from yahtzee_jax.game.engine import State, init, init_single_turn, step
from yahtzee_jax.game.rules import DECISIONS_PER_GAME, DECISIONS_PER_TURN, Rules
from yahtzee_jax.parallel import shard_batch

# policy(states[B], keys[B]) -> (actions int32[B], extras: a pytree with leading axis B)
BatchPolicy = Callable[[State, jax.Array], tuple[jax.Array, Any]]
# policy(states[B], keys[B], roll_index) -> as above, told the (static) decision of the turn
TurnPolicy = Callable[[State, jax.Array, int], tuple[jax.Array, Any]]
# record(state, action, next_state, extras) -> the pytree kept for one decision of the batch
Recorder = Callable[[State, jax.Array, State, Any], Any]

TASKS = ("game", "single-turn")


class Transition(NamedTuple):
    """The default per-decision record."""

    state: State
    action: jax.Array
    reward: jax.Array
    extras: Any


def record_transition(state: State, action: jax.Array, next_state: State, extras: Any) -> Any:
    """Keep the state before the decision, the action, its reward and the policy's extras."""
    return Transition(state, action, next_state.reward, extras)


def _init_single_turn(key: jax.Array) -> State:
    return init_single_turn(key, random_context=True)


def episode_init(task: str) -> Callable[[jax.Array], State]:
    """The start-of-episode function of a task: a full game, or one turn with a random card."""
    return {"game": init, "single-turn": _init_single_turn}[task]


def episode_length(task: str) -> int:
    """Decisions per episode of a task: 39 for a game, 3 for the single-turn task."""
    return {"game": DECISIONS_PER_GAME, "single-turn": DECISIONS_PER_TURN}[task]


def episode_keys(key: jax.Array, first: jax.Array | int, count: int) -> jax.Array:
    """Keys of episodes first .. first + count - 1: episode i's key is fold_in(key, i)."""
    indices = jnp.asarray(first, jnp.int32) + jnp.arange(count, dtype=jnp.int32)
    return jax.vmap(jax.random.fold_in, in_axes=(None, 0))(key, indices)


def play(
    policy: BatchPolicy | TurnPolicy,
    keys: jax.Array,
    rules: Rules,
    task: str = "game",
    record: Recorder = record_transition,
    by_turn: bool = False,
) -> tuple[State, Any]:
    """Play one episode per key in lockstep; returns (final states [B], records [T, B, ...]).

    With `by_turn` the policy is a `TurnPolicy`: the loop scans over turns with their three
    decisions unrolled, so the policy knows statically which decision of the turn every episode
    is at (a keep step can skip the score head and vice versa). Keys, dice and records are
    those of the plain loop.
    """
    keys = shard_batch(keys)  # over the devices of a data-parallel mesh, if one is set
    episode_split = jax.vmap(jax.random.split)(keys)
    init_keys, play_keys = episode_split[:, 0], episode_split[:, 1]
    state = jax.vmap(episode_init(task))(init_keys)

    def decide(state: State, decision: jax.Array, policy: BatchPolicy) -> tuple[State, Any]:
        step_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(play_keys, decision)
        step_split = jax.vmap(jax.random.split)(step_keys)
        policy_keys, dice_keys = step_split[:, 0], step_split[:, 1]
        action, extras = policy(state, policy_keys)
        next_state = jax.vmap(lambda s, a, k: step(s, a, k, rules))(state, action, dice_keys)
        return next_state, record(state, action, next_state, extras)

    length = episode_length(task)
    if not by_turn:
        return jax.lax.scan(
            lambda state, decision: decide(state, decision, policy), state, jnp.arange(length)
        )

    def turn(state: State, turn_index: jax.Array) -> tuple[State, Any]:
        records = []
        for roll in range(DECISIONS_PER_TURN):
            decision = turn_index * DECISIONS_PER_TURN + roll
            state, kept = decide(state, decision, functools.partial(policy, roll_index=roll))
            records.append(kept)
        return state, jax.tree.map(lambda *leaves: jnp.stack(leaves), *records)

    turns = length // DECISIONS_PER_TURN  # every episode starts at the first roll of a turn
    state, records = jax.lax.scan(turn, state, jnp.arange(turns))
    return state, jax.tree.map(lambda leaf: leaf.reshape(length, *leaf.shape[2:]), records)


def per_state_policy(act: Callable[[Any, State, jax.Array], jax.Array], params: Any) -> BatchPolicy:
    """A batch policy from an agent's one-state `act(params, state, key)` (no extras)."""

    def policy(states: State, keys: jax.Array) -> tuple[jax.Array, None]:
        return jax.vmap(act, in_axes=(None, 0, 0))(params, states, keys), None

    return policy
