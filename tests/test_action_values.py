"""The action-value head (`network.value_head=action`): one value per engine action, V(s) the
acting policy's mean of them, and PPO's advantage Q(s, a) - V(s), in which no die rolled after
the decision appears. By hand on three decisions, and against the reference forward pass."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.algorithms import ppo
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.algorithms.common import lambda_returns
from yahtzee_jax.algorithms.training_rollout import (
    Trajectory,
    evaluate_trajectory,
    sample_batch,
    taken_values,
)
from yahtzee_jax.runner.configs import resolve

ACTION_HEAD = ["algo.name=ppo", "network.value_head=action", "network.hidden_size=16"]


def action_head_context(*overrides: str):
    """A small PPO context with the action-value head (dropout on)."""
    config = resolve(
        "quick",
        overrides=[*ACTION_HEAD, "network.dropout=0.5", "algo.games_per_minibatch=2", *overrides],
    )
    return make_context(config)


def test_the_rollout_records_the_state_value_and_the_centred_action_value():
    """The network gives V(s) and 45 offsets D(s, a) a decision (32 keeps, 13 boxes); the
    rollout records V(s) and V(s) + D(s, a_t) - sum_a pi(a | s) D(s, a) over the legal
    actions, equal to the reference pass over every head on every decision (each decision's
    dropout); so the advantages Q - V have the acting policy's mean 0 at every decision."""
    context = action_head_context()
    state = init_train_state(context)
    trajectory = jax.jit(lambda params, key: sample_batch(context, params, key)[0])(
        state.params, state.key
    )
    log_probs, output = evaluate_trajectory(context.network, state.params, trajectory)
    assert output.value.shape == (*trajectory.action.shape, 1 + 45)
    probs = jnp.where(trajectory.legal_mask, jnp.exp(log_probs), 0.0)
    state_value, offsets = output.value[..., 0], output.value[..., 1:]
    taken = jnp.take_along_axis(offsets, trajectory.action[..., None], -1)[..., 0]
    expected_q = state_value + taken - jnp.sum(probs * offsets, axis=-1)
    np.testing.assert_allclose(trajectory.value, state_value, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(trajectory.action_value, expected_q, rtol=1e-5, atol=1e-5)
    # distinct numbers but where one box is left: there the only action is the policy's mean
    assert (np.asarray(trajectory.action_value) != np.asarray(trajectory.value))[:-1].all()
    np.testing.assert_allclose(trajectory.action_value[-1], trajectory.value[-1], atol=1e-5)


def test_ppo_advantage_is_the_action_value_less_the_state_value_by_hand():
    """Three decisions, rewards 0, 0, 10, V = 1, 2, 3 and Q(s, a_t) = 1.5, 1, 9 (gamma 0.5,
    lambda 0.5, no normalisation): all from Q, the advantages are Q - V = 0.5, -1, 6, where
    the returns would give 0.3125, 1.25, 7, and a share of 0.25 from Q (G - V) - (G - Q) / 4;
    the targets stay the lambda-returns of V, 1.3125, 3.25, 10."""
    context = action_head_context(
        "algo.gamma=0.5",
        "algo.gae_lambda=0.5",
        "algo.normalize_advantage=false",
        "algo.action_value_share=1.0",
    )
    column = lambda values: jnp.array(values, jnp.float32)[:, None]  # noqa: E731
    zeros = jnp.zeros((3, 1), jnp.int32)
    trajectory = Trajectory(
        features=jnp.zeros((3, 1, 1)),
        legal_mask=jnp.ones((3, 1, 45), bool),
        roll_index=zeros,
        action=zeros,
        reward=column([0.0, 0.0, 10.0]),
        value=column([1.0, 2.0, 3.0]),
        upper=None,
        log_prob=column([0.0, 0.0, 0.0]),
        dropout_seed=zeros.astype(jnp.uint32),
        upper_total=zeros,
        action_value=column([1.5, 1.0, 9.0]),
    )
    target, advantage, _ = ppo.gae(context, trajectory, jnp.int32(0))
    np.testing.assert_allclose(advantage[:, 0], [0.5, -1.0, 6.0], rtol=1e-6)
    np.testing.assert_allclose(target[:, 0], [1.3125, 3.25, 10.0], rtol=1e-6)
    returns = lambda_returns(trajectory.reward, trajectory.value, 0.5, 0.5)
    np.testing.assert_allclose(target, returns)
    without = trajectory._replace(action_value=None)
    advantage_of_returns = ppo.gae(context, without, jnp.int32(0))[1][:, 0]
    np.testing.assert_allclose(advantage_of_returns, [0.3125, 1.25, 7.0])
    # a quarter from Q: (G - V) - (G - Q) / 4 = 0.3125 + 0.046875, 1.25 - 0.5625, 7 - 0.25
    quarter = action_head_context(
        "algo.gamma=0.5",
        "algo.gae_lambda=0.5",
        "algo.normalize_advantage=false",
        "algo.action_value_share=0.25",
    )
    mixed = ppo.gae(quarter, trajectory, jnp.int32(0))[1][:, 0]
    np.testing.assert_allclose(mixed, [0.359375, 0.6875, 6.75], rtol=1e-6)


def test_the_value_loss_reads_the_state_value_and_the_taken_actions_offset():
    """`taken_values` gives (V(s_t), V(s_t) + D(s_t, a_t)) from [V, D...] and (V, None) from one
    value per state; a PPO update moves the columns of D of the actions its games took and no
    other (Adam moves no weight whose gradient is 0). Two games a batch, so that some keeps go
    untaken and "no other" can fail (every game writes all 13 boxes)."""
    values = jnp.arange(2 * 3 * 46, dtype=jnp.float32).reshape(2, 3, 46)
    action = jnp.array([[0, 44, 7], [31, 32, 1]])
    state_value, action_value = taken_values(values, action)
    np.testing.assert_array_equal(state_value, [[0, 46, 92], [138, 184, 230]])
    # V + D(a) = 2 V + 1 + a here, D(a) being entry 1 + a
    np.testing.assert_array_equal(action_value, 2 * state_value + 1 + action)
    assert taken_values(state_value, action) == (state_value, None)

    two_games = ("train.games_per_update=2", "optim.lr=1e-2", "algo.value_coef=1.0")
    context = action_head_context(*two_games)
    state = init_train_state(context)
    rollout_key = jax.random.split(state.key)[1]  # the key the update plays its games with
    batch = jax.jit(lambda params, key: sample_batch(context, params, key)[0])
    taken = np.unique(np.asarray(batch(state.params, rollout_key).action))
    assert 13 < len(taken) < 45  # every box, and not every keep
    new_state, metrics = jax.jit(lambda s: ppo.update(context, s))(state)
    assert np.isfinite(float(metrics["loss/value"]))
    old, new = (s.params["ActionValues"]["kernel"] for s in (state, new_state))
    moved = np.flatnonzero(np.any(np.asarray(old) != np.asarray(new), axis=0))
    np.testing.assert_array_equal(moved, taken)
