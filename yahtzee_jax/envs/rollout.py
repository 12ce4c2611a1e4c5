"""The one rollout: a batch of episodes of any environment in lockstep, a policy in, records out.

Training rollouts, the evaluation harness, match evaluation, the engine benchmark and the tests
all play through `rollout`; learners that change while they play (Q(lambda), MAXQ-Q) through
`learning_rollout`, the same loop carrying their state beside the environment's (the way
purejaxrl carries its `runner_state`). Every episode of a batch lasts the same number of
learner decisions, so the loop is a plain `lax.scan` with no resets or done masks; where other
seats move between the learner's turns (a match) it scans over turns and lets the environment
move them.

Randomness is per episode: the environment splits episode i's key into its start and the
learner's play key, and decision t uses ``split(fold_in(play_key, t))`` = (policy key, dice key).
An episode's dice and choices therefore depend only on its own key, never on the batch size or
on its position in the batch (a match's seat is by lane group, see `envs.match_env`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax.envs.environment import Environment, Policy, no_others
from yahtzee_jax.envs.match_env import MatchView
from yahtzee_jax.game.rules import DECISIONS_PER_TURN
from yahtzee_jax.parallel import shard_batch

# The rollout's policy, a learner's internal one: policy(observations[B], keys[B]) -> (actions
# int32[B], extras: a pytree with leading axis B, such as the sampling policy's log-probabilities
# and values); with `by_turn` it is also told the (static) decision of the turn as `roll_index`,
# and in a `learning_rollout` the learner's state as `carry`. An agent (the one signature,
# `envs.environment.Policy`) plays here through `agent_policy`.
RolloutPolicy = Callable[..., tuple[jax.Array, Any]]
# record(observation, action, next_observation, extras) -> the pytree kept for one decision
Recorder = Callable[[Any, jax.Array, Any, Any], Any]
# learn(carry, observation, action, next_observation, extras, decision[, roll_index]) ->
# (carry, kept): a recorder that also updates the learner's state after every decision
Learner = Callable[..., tuple[Any, Any]]


def episode_keys(key: jax.Array, first: jax.Array | int, count: int) -> jax.Array:
    """Keys of episodes first .. first + count - 1: episode i's key is fold_in(key, i)."""
    indices = jnp.asarray(first, jnp.int32) + jnp.arange(count, dtype=jnp.int32)
    return jax.vmap(jax.random.fold_in, in_axes=(None, 0))(key, indices)


def keep_nothing(*args: Any) -> None:
    """A recorder that keeps nothing (only the final states are wanted)."""
    return None


def agent_policy(policy: Policy, params: Any) -> RolloutPolicy:
    """An agent's policy in the learner's seat of the rollout: each observation's own card and
    the other cards (a match's [B, P-1], none [B, 0] alone) -> (actions, no extras)."""

    def play(observations: Any, keys: jax.Array, **unused: Any) -> tuple[jax.Array, None]:
        if isinstance(observations, MatchView):
            return policy(params, observations.card, observations.others, keys), None
        return policy(params, observations, no_others(observations), keys), None

    return play


def rollout(
    env: Environment,
    policy: RolloutPolicy,
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

    def act(observations: Any, keys: jax.Array, carry: None, **turn: int) -> Any:
        return policy(observations, keys, **turn)

    def learn(carry: None, observation: Any, action: jax.Array, *rest: Any, **turn: int) -> Any:
        following, extras, _decision = rest
        return None, record(observation, action, following, extras)

    _, state, records, rewards = learning_rollout(env, act, learn, None, keys, task, by_turn)
    return state, records, rewards


def learning_rollout(
    env: Environment,
    policy: RolloutPolicy,
    learn: Learner,
    carry: Any,
    keys: jax.Array,
    task: Any = None,
    by_turn: bool = False,
) -> tuple[Any, Any, Any, jax.Array]:
    """`rollout` for a learner whose state `carry` changes as it plays: the policy sees it
    (`carry=`) and `learn`, in the recorder's place, returns it updated after every decision.
    Returns (final carry, final states [B], records [T, B, ...], rewards float32[T, B])."""
    keys = shard_batch(keys)  # over the devices of a data-parallel mesh, if one is set
    state, play_keys = env.init(keys, env.init_task(None) if task is None else task)

    def decide(runner: tuple, decision: jax.Array, **turn: int) -> tuple[tuple, Any]:
        state, carry = runner
        step_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(play_keys, decision)
        step_split = jax.vmap(jax.random.split)(step_keys)
        policy_keys, dice_keys = step_split[:, 0], step_split[:, 1]
        observation = env.observation(state)
        action, extras = policy(observation, policy_keys, carry=carry, **turn)
        state, reward = env.step(state, action, dice_keys, decision)
        following = env.observation(state)
        carry, kept = learn(carry, observation, action, following, extras, decision, **turn)
        return (state, carry), (kept, reward)

    length = env.episode_length
    runner = (state, carry)
    if not by_turn and not env.has_opponents:
        (state, carry), (records, rewards) = jax.lax.scan(decide, runner, jnp.arange(length))
        return carry, state, records, env.finish(state, rewards)

    def turn(runner: tuple, turn_index: jax.Array) -> tuple[tuple, Any]:
        state, carry = runner
        runner = (env.start_turn(state, turn_index), carry)
        first = turn_index * DECISIONS_PER_TURN
        if by_turn:
            kept = []
            for roll in range(DECISIONS_PER_TURN):
                runner, out = decide(runner, first + roll, roll_index=roll)
                kept.append(out)
            outs = jax.tree.map(lambda *leaves: jnp.stack(leaves), *kept)
        else:
            runner, outs = jax.lax.scan(
                lambda runner, roll: decide(runner, first + roll),
                runner,
                jnp.arange(DECISIONS_PER_TURN),
            )
        state, carry = runner
        return (env.end_turn(state, turn_index), carry), outs

    turns = length // DECISIONS_PER_TURN  # every episode starts at the first roll of a turn
    (state, carry), (records, rewards) = jax.lax.scan(turn, runner, jnp.arange(turns))
    records, rewards = jax.tree.map(
        lambda leaf: leaf.reshape(length, *leaf.shape[2:]), (records, rewards)
    )
    return carry, state, records, env.finish(state, rewards)
