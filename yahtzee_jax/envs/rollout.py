"""The one rollout: a batch of episodes of any environment in lockstep, a policy in, records out.

Training rollouts, the evaluation harness, match evaluation, the engine benchmark and the tests
all play through `rollout`. Every episode of a batch lasts the same number of learner decisions,
so the loop is a plain `lax.scan` with no resets or done masks; where other seats move between
the learner's turns (a match) it scans over turns and lets the environment move them.

Randomness is per episode: the environment splits episode i's key into its start and the
learner's play key, and decision t uses ``split(fold_in(play_key, t))`` = (policy key, dice key).
An episode's dice and choices therefore depend only on its own key, never on the batch size or
on its position in the batch (a match's seat is by lane group, see `envs.match`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax.envs.base import Environment
from yahtzee_jax.game.rules import DECISIONS_PER_TURN
from yahtzee_jax.parallel import shard_batch

# policy(observations[B], keys[B]) -> (actions int32[B], extras: a pytree with leading axis B);
# with `by_turn` it is also told the (static) decision of the turn as `roll_index`.
Policy = Callable[..., tuple[jax.Array, Any]]
# record(observation, action, next_observation, extras) -> the pytree kept for one decision
Recorder = Callable[[Any, jax.Array, Any, Any], Any]


def episode_keys(key: jax.Array, first: jax.Array | int, count: int) -> jax.Array:
    """Keys of episodes first .. first + count - 1: episode i's key is fold_in(key, i)."""
    indices = jnp.asarray(first, jnp.int32) + jnp.arange(count, dtype=jnp.int32)
    return jax.vmap(jax.random.fold_in, in_axes=(None, 0))(key, indices)


def keep_nothing(*args: Any) -> None:
    """A recorder that keeps nothing (only the final states are wanted)."""
    return None


def rollout(
    env: Environment,
    policy: Policy,
    keys: jax.Array,
    task: Any = None,
    record: Recorder = keep_nothing,
    by_turn: bool = False,
) -> tuple[Any, Any, jax.Array]:
    """Play one episode per key; returns (final states [B], records [T, B, ...], the learner's
    rewards float32[T, B]).

    With `by_turn` the loop scans over turns with their three decisions unrolled, so the policy
    knows statically which decision of the turn every episode is at (a keep step can skip the
    score head and vice versa). Keys, dice and records are those of the plain loop.
    """
    keys = shard_batch(keys)  # over the devices of a data-parallel mesh, if one is set
    state, play_keys = env.init(keys, env.init_task(None) if task is None else task)

    def decide(state: Any, decision: jax.Array, policy: Policy) -> tuple[Any, Any]:
        step_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(play_keys, decision)
        step_split = jax.vmap(jax.random.split)(step_keys)
        policy_keys, dice_keys = step_split[:, 0], step_split[:, 1]
        observation = env.observation(state)
        action, extras = policy(observation, policy_keys)
        state, reward = env.step(state, action, dice_keys, decision)
        return state, (record(observation, action, env.observation(state), extras), reward)

    length = env.episode_length
    if not by_turn and not env.others_move:
        state, (records, rewards) = jax.lax.scan(
            lambda state, decision: decide(state, decision, policy), state, jnp.arange(length)
        )
        return state, records, env.finish(state, rewards)

    def turn(state: Any, turn_index: jax.Array) -> tuple[Any, Any]:
        state = env.start_turn(state, turn_index)
        first = turn_index * DECISIONS_PER_TURN
        if by_turn:
            kept = []
            for roll in range(DECISIONS_PER_TURN):
                rolled = functools.partial(policy, roll_index=roll)
                state, out = decide(state, first + roll, rolled)
                kept.append(out)
            outs = jax.tree.map(lambda *leaves: jnp.stack(leaves), *kept)
        else:
            state, outs = jax.lax.scan(
                lambda state, roll: decide(state, first + roll, policy),
                state,
                jnp.arange(DECISIONS_PER_TURN),
            )
        return env.end_turn(state, turn_index), outs

    turns = length // DECISIONS_PER_TURN  # every episode starts at the first roll of a turn
    state, (records, rewards) = jax.lax.scan(turn, state, jnp.arange(turns))
    records, rewards = jax.tree.map(
        lambda leaf: leaf.reshape(length, *leaf.shape[2:]), (records, rewards)
    )
    return state, records, env.finish(state, rewards)
