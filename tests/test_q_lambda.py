"""Perceptron Q(lambda) (seed 001): the trace updates by hand, the batch rule, a tiny run."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.algorithms.q_lambda import (
    GAME_END,
    KEEP,
    ROUND_END,
    Traces,
    decision_update,
    play_and_learn,
)
from yahtzee_jax.runner.configs import resolve

ALPHA = 0.5
ALL_LEGAL = jnp.ones((1, 3), bool)


def step(theta, traces, x, action, reward, x_next, kind, round_start, gamma=1.0, lam=1.0):
    """`decision_update` on one lane of hand-made 3-feature vectors and 3 actions."""
    return decision_update(
        theta,
        traces,
        jnp.float32([x]),
        jnp.int32([action]),
        jnp.float32([reward]),
        jnp.float32([x_next]),
        ALL_LEGAL,
        jnp.bool_([False]),
        jnp.int32([kind]),
        jnp.bool_([round_start]),
        jnp.float32(ALPHA),
        gamma,
        lam,
    )


# theta[f, a]: Q(s, a) = sum_f x_f theta[f, a]
THETA0 = jnp.float32([[0.2, 0.0, 0.0], [0.0, 0.0, 0.6], [0.0, 0.4, 0.0]])
EMPTY = Traces(jnp.zeros((1, 3, 3)), jnp.zeros((1, 3, 3)))


def test_three_decision_round_by_hand():
    """Batch 1 follows the seed's sequential rule: keep, keep, score (alpha 0.5, gamma 1).

    d1: x1=(1,0,1), a0. Q(x1,a0)=0.2; x2=(0,1,1) has Q=(0, 0.4, 0.6): delta=0.6-0.2=0.4;
        keep -> one-step: theta[:,0] += 0.5*0.4*x1 = (0.2, 0, 0.2) -> (0.4, 0, 0.2).
    d2: x2, a1. Q=0.4; x3=(1,1,0) has Q=(0.4, 0, 0.6): delta=0.2; theta[:,1] += 0.1*x2
        -> (0, 0.1, 0.5).
    d3: x3, a2 scores 25 points: r=0.25. Q(x3,a2)=0.6; x4=(1,0,0) has Q=(0.4, 0, 0) ->
        delta=0.25+0.4-0.6=0.05, given to the whole round (local trace): every pair k gets
        theta[:,a_k] += 0.5*0.05*x_k = 0.025 x_k.
    """
    theta, traces, d1 = step(THETA0, EMPTY, (1, 0, 1), 0, 0.0, (0, 1, 1), KEEP, True)
    np.testing.assert_allclose(d1, [0.4], atol=1e-6)
    np.testing.assert_allclose(theta[:, 0], [0.4, 0.0, 0.2], atol=1e-6)
    theta, traces, d2 = step(theta, traces, (0, 1, 1), 1, 0.0, (1, 1, 0), KEEP, False)
    np.testing.assert_allclose(d2, [0.2], atol=1e-6)
    np.testing.assert_allclose(theta[:, 1], [0.0, 0.1, 0.5], atol=1e-6)
    theta, traces, d3 = step(theta, traces, (1, 1, 0), 2, 0.25, (1, 0, 0), ROUND_END, False)
    np.testing.assert_allclose(d3, [0.05], atol=1e-6)
    want = [[0.425, 0.0, 0.025], [0.0, 0.125, 0.625], [0.225, 0.525, 0.0]]
    np.testing.assert_allclose(theta, want, atol=1e-6)
    # both traces hold the round's three pairs (x_k in column a_k)
    pairs = [[1, 0, 1], [0, 1, 1], [1, 1, 0]]
    np.testing.assert_allclose(traces.local[0], np.array(pairs, np.float32).T, atol=0)
    np.testing.assert_allclose(traces.globl[0], traces.local[0], atol=0)


def test_game_end_reaches_earlier_rounds_and_lambda_decays():
    """The game's delta goes along the global trace (an earlier round's pair too), a round's
    along the local one only (restarted at the round's first decision); gamma*lambda = 0.5
    halves a pair's share per decision since it was taken.

    Round 1: pair (x=(1,0,0), a0) scores (ROUND_END, r=0, x_next=0: delta = 0 - 0.2 = -0.2).
    Round 2 opens with (x=(0,1,0), a1): Q=0, x_next=0 -> delta 0; then the game ends on
    (x=(0,0,1), a2), r=1: delta = 1 - Q(x,a2) = 1 - 0 = 1 on the global trace, whose pairs
    weigh 0.25 (round 1), 0.5, 1.
    """
    zero = (0, 0, 0)
    theta, traces, d1 = step(THETA0, EMPTY, (1, 0, 0), 0, 0.0, zero, ROUND_END, True, lam=0.5)
    np.testing.assert_allclose(d1, [-0.2], atol=1e-6)
    np.testing.assert_allclose(theta[0], [0.2 - 0.1, 0.0, 0.0], atol=1e-6)
    theta, traces, _ = step(theta, traces, (0, 1, 0), 1, 0.0, zero, KEEP, True, lam=0.5)
    assert traces.local[0, 0, 0] == 0.0  # the new round dropped round 1's pair locally
    theta, traces, d3 = step(theta, traces, (0, 0, 1), 2, 1.0, zero, GAME_END, False, lam=0.5)
    np.testing.assert_allclose(d3, [1.0], atol=1e-6)
    np.testing.assert_allclose(theta[0, 0], 0.1 + 0.5 * 0.25, atol=1e-6)  # round 1's pair
    np.testing.assert_allclose(theta[1, 1], 0.0 + 0.5 * 0.5, atol=1e-6)
    np.testing.assert_allclose(theta[2, 2], 0.0 + 0.5 * 1.0, atol=1e-6)


def test_batch_updates_are_summed_from_the_same_weights():
    """Two lanes at one decision: each delta uses the weights before the decision and the two
    updates add (lane 1: delta 0.6-0.2=0.4 on a0; lane 2: Q(x,a1)=0.4, delta 0.6-0.4=0.2)."""
    x = jnp.float32([[1, 0, 1], [0, 0, 1]])
    x_next = jnp.float32([[0, 1, 1], [0, 1, 0]])
    zeros = jnp.zeros((2, 3, 3))
    theta, _, delta = decision_update(
        THETA0,
        Traces(zeros, zeros),
        x,
        jnp.int32([0, 1]),
        jnp.zeros(2),
        x_next,
        jnp.ones((2, 3), bool),
        jnp.bool_([False, False]),
        jnp.int32([KEEP, KEEP]),
        jnp.bool_([True, True]),
        jnp.float32(ALPHA),
        1.0,
        1.0,
    )
    np.testing.assert_allclose(delta, [0.4, 0.2], atol=1e-6)
    np.testing.assert_allclose(theta[:, 0], [0.4, 0.0, 0.2], atol=1e-6)
    np.testing.assert_allclose(theta[:, 1], [0.0, 0.0, 0.4 + 0.1], atol=1e-6)


@pytest.mark.slow
def test_one_lane_game_learns_on_the_atomic_features():
    """A batch-1 game on Kang's features (plain rules) changes the weights of every action
    type it took, and the environment's rewards sum to the game's score."""
    config = resolve("kang-q-lambda", overrides=["train.total_games=4", "train.games_per_update=1"])
    context = make_context(config)
    state = init_train_state(context)
    theta0 = state.params["Dense_0"]["kernel"]
    assert theta0.shape == (96, 45)
    theta, final, rewards, metrics = jax.jit(
        lambda theta: play_and_learn(context, theta, jax.random.PRNGKey(1), {}, 0.01)
    )(theta0)
    assert bool(final.terminated[0])
    assert float(rewards.sum()) == float(final.scores.sum())
    assert np.any(theta[:, 32:] != 0) and np.isfinite(float(metrics["td/abs_delta"]))


def test_normalized_step_moves_the_pairs_own_q_by_alpha_delta():
    """With `normalize` the pair (x=(1,0,1), a0) enters as x / |x|^2 = (0.5, 0, 0.5): its own
    Q moves by exactly alpha delta (0.5 x 0.4 = 0.2: from 0.2 to 0.4), as the seed writes
    Q(s, a) <- Q(s, a) + alpha delta."""
    theta, _, delta = decision_update(
        THETA0,
        EMPTY,
        jnp.float32([[1, 0, 1]]),
        jnp.int32([0]),
        jnp.float32([0.0]),
        jnp.float32([[0, 1, 1]]),
        ALL_LEGAL,
        jnp.bool_([False]),
        jnp.int32([KEEP]),
        jnp.bool_([True]),
        jnp.float32(ALPHA),
        1.0,
        1.0,
        True,
    )
    np.testing.assert_allclose(delta, [0.4], atol=1e-6)
    np.testing.assert_allclose(theta[:, 0], [0.3, 0.0, 0.1], atol=1e-6)
    assert float(jnp.float32([1, 0, 1]) @ theta[:, 0]) == pytest.approx(0.2 + 0.2)
