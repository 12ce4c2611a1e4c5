"""The actor-critic learners' shared rollout: the network's sampling policy played through the
one rollout loop (`envs.rollout.rollout`), on any environment, into time-major trajectories
(`collect_batch`, what an update of A2C, REINFORCE or PPO plays first); and the policy heads
re-evaluated over them for a loss (`evaluate_heads`, `taken_log_probs`). An agent's solitaire
games are `envs.solitaire_play`'s.

Every decision gets its own dropout seed (drawn from its episode's key), so any later forward pass
over any subset of the decisions (the loss, a PPO minibatch, the KL diagnostic) reproduces the
exact dropout masks the policy acted with.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from yahtzee_jax import envs
from yahtzee_jax.algorithms.algorithm import Context, Metrics, TrainState
from yahtzee_jax.algorithms.common import keep_action_stats
from yahtzee_jax.envs.environment import Environment
from yahtzee_jax.envs.rollout import episode_keys, rollout
from yahtzee_jax.game.engine import LAST_ROLL, upper_total
from yahtzee_jax.game.rules import DECISIONS_PER_TURN, NUM_KEEP_ACTIONS
from yahtzee_jax.networks import (
    HEADS,
    HeadRows,
    NetworkOutput,
    YahtzeeNet,
    policy_log_probs,
)


class Trajectory(NamedTuple):
    """One batch of whole episodes, time-major: every array is [T, B, ...] (T = 39 or 3)."""

    features: jax.Array  # float32[T, B, F]
    legal_mask: jax.Array  # bool[T, B, 45]
    roll_index: jax.Array  # int32[T, B]
    action: jax.Array  # int32[T, B]
    reward: jax.Array  # float32[T, B], the environment's reward to the learner
    # float32[T, B], V(s_t) seen while acting; None when the rollout skipped the value head
    # (A2C and REINFORCE: their loss recomputes it, same parameters and dropout masks)
    value: jax.Array | None
    upper: jax.Array | None  # float32[T, B], the upper head while acting (0 without it; None)
    log_prob: jax.Array  # float32[T, B], log pi(a_t | s_t) of the acting policy
    dropout_seed: jax.Array  # uint32[T, B], the seed of each decision's dropout masks
    upper_total: jax.Array  # int32[T, B], the upper boxes' total after the decision
    # float32[T, B], with the action-value head (else None) V(s_t) + D(s_t, a_t) less the
    # acting policy's mean of D(s_t, .): an estimate of Q(s_t, a_t) whose advantage over
    # `value` has the policy's mean 0
    action_value: jax.Array | None = None


class HeadOutputs(NamedTuple):
    """The policy heads each decision needs, in the turn layout of a lockstep batch: roll
    log-probs at the two keep decisions of every turn, score log-probs (illegal boxes -inf) at
    the scoring one; value and upper [T, B] (None when not asked for)."""

    roll_log_probs: jax.Array  # float32[turns, 2, B, 32]
    score_log_probs: jax.Array  # float32[turns, B, 13]
    value: jax.Array | None
    upper: jax.Array | None


def apply_network(
    network: YahtzeeNet,
    params: Any,
    x: jax.Array,
    dropout_seed: jax.Array | None = None,
    heads: tuple[str, ...] = HEADS,
    rows: HeadRows | None = None,
) -> NetworkOutput:
    """Forward pass over features[..., F]; with per-example seeds (uint32[...]) dropout is on;
    only `heads` are computed, each on `rows[head]` (see `YahtzeeNet`)."""
    return network.apply({"params": params}, x, dropout_seed, heads, rows)


def score_log_probs(score_logits: jax.Array, legal_mask: jax.Array) -> jax.Array:
    """Log-probabilities over the 13 boxes, -inf where the box is illegal (legal_mask[..., 45])."""
    legal_boxes = legal_mask[..., NUM_KEEP_ACTIONS:]
    return jax.nn.log_softmax(jnp.where(legal_boxes, score_logits, -jnp.inf))


def sampling_policy(
    network: YahtzeeNet, params: Any, env: Environment, with_value: bool = True
) -> Any:
    """The batch policy that samples from the network with dropout on (the behaviour policy).

    Told the decision of the turn, it runs only the head that decision needs (plus the value
    and upper heads `with_value`) and samples with the very Gumbel noise
    `jax.random.categorical` would add to the 45 merged log-probs, so actions are unchanged.
    """
    value_heads = ("value", "upper") if with_value else ()

    def policy(
        observation: Any, keys: jax.Array, roll_index: int
    ) -> tuple[jax.Array, dict[str, jax.Array]]:
        action_keys, dropout_seeds = decision_keys(keys)
        x = env.features(observation)
        legal = env.legal_action_mask(observation)
        keeping = roll_index < LAST_ROLL
        heads = ("roll" if keeping else "score", *value_heads)
        output = apply_network(network, params, x, dropout_seeds, heads)
        if keeping:
            log_probs, offset = output.roll_log_probs, 0
        else:
            log_probs, offset = score_log_probs(output.score_logits, legal), NUM_KEEP_ACTIONS
        actions = legal.shape[-1]  # 32 keeps + the rules' boxes
        noise = jax.vmap(lambda key: jax.random.gumbel(key, (actions,)))(action_keys)
        noise = noise[:, offset : offset + log_probs.shape[-1]]
        choice = jnp.argmax(log_probs + noise, axis=-1)
        action_value = None
        if output.value is not None and output.value.ndim == 2:  # V and one D per action
            state_value = output.value[:, 0]
            offsets = output.value[:, 1 + offset : 1 + offset + log_probs.shape[-1]]
            taken = jnp.take_along_axis(offsets, choice[:, None], axis=-1)[:, 0]
            # Q(s, a_t) - V(s) = D(s, a_t) less the acting policy's mean of D (illegal boxes
            # have probability 0), so the advantage has the policy's mean 0
            mean_offset = jnp.sum(jnp.exp(log_probs) * offsets, axis=-1)
            action_value = state_value + taken - mean_offset
            output = output._replace(value=state_value)
        extras = policy_extras(x, legal, output, log_probs, choice, dropout_seeds)
        if action_value is not None:
            extras["action_value"] = action_value
        return (choice + offset).astype(jnp.int32), extras

    return policy


def decision_keys(keys: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Each decision's key split into its action key and its dropout seed (uint32)."""
    key_pairs = jax.vmap(jax.random.split)(keys)
    dropout_seeds = jax.vmap(lambda key: jax.random.bits(key, (), jnp.uint32))(key_pairs[:, 1])
    return key_pairs[:, 0], dropout_seeds


def policy_extras(
    features: jax.Array,
    legal_mask: jax.Array,
    output: Any,
    log_probs: jax.Array,
    choice: jax.Array,
    dropout_seeds: jax.Array,
) -> dict[str, jax.Array]:
    """What a sampling policy hands to `decision_record`: the network's inputs and outputs
    at the decision and the log-probability of the `choice` (an index into `log_probs`)."""
    return {
        "features": features,
        "legal_mask": legal_mask,
        "value": output.value,
        "upper": output.upper,
        "log_prob": jnp.take_along_axis(log_probs, choice[:, None], axis=-1)[:, 0],
        "dropout_seed": dropout_seeds,
    }


def trajectory_recorder(env: Environment) -> Any:
    """The rollout's recorder of one decision's `Trajectory` row (the reward is set after the
    rollout: a match's is only known at its end) from the sampling policy's `policy_extras`."""

    def record(observation: Any, action: jax.Array, next_observation: Any, extras: dict):
        return Trajectory(
            features=extras["features"],
            legal_mask=extras["legal_mask"],
            roll_index=env.card(observation).roll_index,
            action=action,
            reward=jnp.zeros(action.shape, jnp.float32),
            value=extras["value"],
            upper=extras["upper"],
            log_prob=extras["log_prob"],
            dropout_seed=extras["dropout_seed"],
            upper_total=upper_total(env.card(next_observation), env.rules),
            action_value=extras.get("action_value"),
        )

    return record


def sample_episodes(
    network: YahtzeeNet,
    params: Any,
    key: jax.Array,
    env: Environment,
    episodes: int,
    task: Any = None,
    with_value: bool = True,
) -> tuple[Trajectory, Any]:
    """Play `episodes` episodes of `env` with the sampling policy through the one rollout loop:
    (trajectory, final states); without `with_value` the trajectory's value and upper are None
    (not computed)."""
    keys = episode_keys(key, 0, episodes)
    policy = sampling_policy(network, params, env, with_value)
    final, trajectory, rewards = rollout(env, policy, keys, task, trajectory_recorder(env), True)
    return trajectory._replace(reward=rewards), final


def collect_batch(
    context: Context, state: TrainState, with_value: bool = True
) -> tuple[TrainState, Trajectory, Metrics]:
    """What an actor-critic update plays first: one update's episodes of the run's environment
    with the current policy, and their metrics; the state's key and the environment's task
    state move on."""
    key, rollout_key = jax.random.split(state.key)
    env = context.env
    episodes = envs.episodes_per_update(context.config)
    trajectory, final = sample_episodes(
        context.network, state.params, rollout_key, env, episodes, state.task, with_value
    )
    metrics = {
        **env.episode_metrics(final, trajectory.reward),
        **keep_action_stats(trajectory.action, trajectory.roll_index),
    }
    task = env.end_task_batch(state.task, final)
    return state.replace(key=key, task=task), trajectory, metrics


def sample_batch(
    context: Context, params: Any, key: jax.Array, with_value: bool = True
) -> tuple[Trajectory, Any]:
    """One update's episodes (`envs.episodes_per_update`) of the run's environment from a fresh
    task state: (trajectory, final states); for tests and benchmarks of the learners."""
    episodes = envs.episodes_per_update(context.config)
    return sample_episodes(context.network, params, key, context.env, episodes, None, with_value)


def evaluate_trajectory(network: YahtzeeNet, params: Any, trajectory: Trajectory) -> tuple:
    """(log-probs over 45 actions [T, B, 45], outputs) of `params` on the trajectory's decisions,
    with each decision's own dropout masks, every head on every decision (the reference that
    `evaluate_heads` specialises): with the acting parameters this is the rollout."""
    output = apply_network(network, params, trajectory.features, trajectory.dropout_seed)
    return policy_log_probs(output, trajectory.legal_mask, trajectory.roll_index), output


def turn_layout(array: jax.Array) -> jax.Array:
    """[T, B, ...] -> [turns, 3, B, ...]: decision r of every turn at index r of axis 1."""
    return array.reshape(-1, DECISIONS_PER_TURN, *array.shape[1:])


def time_layout(array: jax.Array) -> jax.Array:
    """[turns, 3, B, ...] -> [T, B, ...], the inverse of `turn_layout`."""
    return array.reshape(-1, *array.shape[2:])


# The rows of a turn-layout batch each head runs on: keep rows, score rows, all rows.
KEEP_ROWS = (slice(None), slice(0, LAST_ROLL))
SCORE_ROWS = (slice(None), LAST_ROLL)
HEAD_ROWS: HeadRows = {"roll": KEEP_ROWS, "score": SCORE_ROWS}


def evaluate_heads(
    network: YahtzeeNet, params: Any, trajectory: Trajectory, with_value: bool = True
) -> HeadOutputs:
    """`evaluate_trajectory` specialised to what each decision needs: one trunk pass over all
    decisions, the roll head on the keep decisions only, the score head on the scoring ones
    (the batch is in lockstep, so they are fixed rows of the turn layout), value and upper on
    all `with_value`. The same numbers as the reference, about a quarter fewer operations."""
    heads = ("roll", "score", "value", "upper") if with_value else ("roll", "score")
    output = apply_network(
        network,
        params,
        turn_layout(trajectory.features),
        turn_layout(trajectory.dropout_seed),
        heads,
        HEAD_ROWS,
    )
    legal = turn_layout(trajectory.legal_mask)[SCORE_ROWS]
    return HeadOutputs(
        roll_log_probs=output.roll_log_probs,
        score_log_probs=score_log_probs(output.score_logits, legal),
        value=None if output.value is None else time_layout(output.value),
        upper=None if output.upper is None else time_layout(output.upper),
    )


def taken_log_probs(outputs: HeadOutputs, action: jax.Array) -> jax.Array:
    """log pi(a_t | s_t) [T, B] of the actions taken (action int32[T, B], 45-action indices)."""
    action = turn_layout(action)
    keep = jnp.take_along_axis(outputs.roll_log_probs, action[KEEP_ROWS][..., None], axis=-1)
    box = action[SCORE_ROWS] - NUM_KEEP_ACTIONS
    score = jnp.take_along_axis(outputs.score_log_probs, box[..., None], axis=-1)
    return time_layout(jnp.concatenate([keep[..., 0], score[..., 0][:, None]], axis=1))


def taken_values(value: jax.Array, action: jax.Array) -> tuple[jax.Array, jax.Array | None]:
    """The value head's predictions for each decision [T, B]: (V(s_t), None), or with the
    action-value head (value [T, B, 1 + 45]) (V(s_t), V(s_t) + D(s_t, a_t)) with no gradient
    to V through the second, so V learns the state's value and D the action's offset."""
    if value.ndim == action.ndim:
        return value, None
    state_value, offsets = value[..., 0], value[..., 1:]
    # a one-hot product rather than a gather, whose gradient would be a scatter
    offset = jnp.sum(offsets * jax.nn.one_hot(action, offsets.shape[-1]), axis=-1)
    return state_value, jax.lax.stop_gradient(state_value) + offset
