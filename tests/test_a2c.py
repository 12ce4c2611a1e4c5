"""The A2C loss against a hand-computed example, schedules at their phase boundaries, and the
on-policy re-evaluation of a rollout."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.algorithms.a2c import LossCoefficients, loss_terms, td0_targets
from yahtzee_jax.algorithms.common import trajectory_log_probs
from yahtzee_jax.algorithms.rollout import rollout
from yahtzee_jax.config import OptimConfig, resolve
from yahtzee_jax.game import DECISIONS_PER_GAME, OFFICIAL
from yahtzee_jax.schedules import hold_anneal_schedule, learning_rate_schedule
from yahtzee_jax.train import init_train_state, make_context

# One game of three decisions: rewards 0, 0, 10; the critic said 1, 2, 3; gamma 0.5.
REWARD = jnp.array([[0.0], [0.0], [10.0]])
VALUE = jnp.array([[1.0], [2.0], [3.0]])
LOG_PROB = jnp.array([[-1.0], [-2.0], [-0.5]])
COEFFICIENTS = LossCoefficients(value=0.1, entropy_roll=0.1, entropy_score=0.01)


def test_td0_targets_bootstrap_from_next_value_and_stop_at_the_end():
    """targets = r + gamma V(s'): 0 + .5*2 = 1, 0 + .5*3 = 1.5, and 10 + 0 after the last step."""
    np.testing.assert_allclose(td0_targets(REWARD, VALUE, 0.5)[:, 0], [1.0, 1.5, 10.0])


def test_loss_matches_hand_computation_without_normalisation():
    """delta = [0, -0.5, 7]; policy -mean(logp * delta) = -(0 + 1 - 3.5)/3 = 5/6;
    value 0.1 * mean(delta^2) = 0.1 * 49.25/3; entropy -(0.1 * 1.0 + 0.01 * 2.0) = -0.12."""
    target = td0_targets(REWARD, VALUE, 0.5)
    total, metrics = loss_terms(
        LOG_PROB, VALUE, target, jnp.float32(1.0), jnp.float32(2.0), COEFFICIENTS, False
    )
    assert float(metrics["loss/policy"]) == pytest.approx(5 / 6, rel=1e-6)
    assert float(metrics["loss/value"]) == pytest.approx(0.1 * 49.25 / 3, rel=1e-6)
    assert float(metrics["loss/entropy"]) == pytest.approx(-0.12, rel=1e-6)
    assert float(total) == pytest.approx(5 / 6 + 0.1 * 49.25 / 3 - 0.12, rel=1e-6)
    assert float(metrics["advantage/mean"]) == pytest.approx(6.5 / 3, rel=1e-6)


def test_loss_with_normalised_advantages_and_its_gradients():
    """Normalised delta: (delta - 13/6) / std; the policy gradient wrt log pi is -A/3 and the
    value gradient is -2 * 0.1 * delta / 3 (the advantage carries no gradient)."""
    target = td0_targets(REWARD, VALUE, 0.5)
    delta = np.array([0.0, -0.5, 7.0])
    normalised = (delta - delta.mean()) / delta.std()

    def total(log_prob, value):
        return loss_terms(log_prob, value, target, 1.0, 2.0, COEFFICIENTS, True)[0]

    _, metrics = loss_terms(LOG_PROB, VALUE, target, 1.0, 2.0, COEFFICIENTS, True)
    expected = -np.mean(np.array([-1.0, -2.0, -0.5]) * normalised)
    assert float(metrics["loss/policy"]) == pytest.approx(expected, rel=1e-5)
    grad_log_prob, grad_value = jax.grad(total, argnums=(0, 1))(LOG_PROB, VALUE)
    np.testing.assert_allclose(grad_log_prob[:, 0], -normalised / 3, rtol=1e-5)
    np.testing.assert_allclose(grad_value[:, 0], -2 * 0.1 * delta / 3, rtol=1e-5, atol=1e-7)


def test_learning_rate_schedule_phase_boundaries():
    """100 updates, lr 1e-3, min ratio 0.01: warmup from 1e-5 to 1e-3 over updates 0-5,
    plateau to update 75, linear decay to 1e-5 at update 100."""
    schedule = learning_rate_schedule(OptimConfig(lr=1e-3, min_lr_ratio=0.01), 100)
    values = {step: float(schedule(step)) for step in (0, 5, 40, 75, 100)}  # float32
    assert values[0] == pytest.approx(1e-5, rel=1e-5)
    assert values[5] == pytest.approx(1e-3, rel=1e-5)
    assert values[40] == pytest.approx(1e-3, rel=1e-5)
    assert values[75] == pytest.approx(1e-3, rel=1e-5)
    assert values[100] == pytest.approx(1e-5, rel=1e-5)
    assert float(schedule(87.5)) == pytest.approx((1e-3 + 1e-5) / 2, rel=1e-3)


def test_entropy_schedule_holds_anneals_and_holds():
    """Hold 0.3, anneal 0.6 of 100 updates: 0.06 until 30, 0.04 at 60, 0.02 from 90 on."""
    schedule = hold_anneal_schedule(0.06, 0.02, 0.3, 0.6, 100)
    for step, expected in [(0, 0.06), (30, 0.06), (60, 0.04), (90, 0.02), (100, 0.02)]:
        assert float(schedule(step)) == pytest.approx(expected, abs=1e-7), step


def test_rollout_is_reproduced_by_the_loss_forward_pass():
    """With dropout on, re-running the network with each step's dropout key gives the rollout's
    own values and log-probs: the update is exactly on-policy. Games last 39 decisions and the
    rewards add up to the final score."""
    config = resolve("quick", overrides=["network.hidden_size=16", "network.dropout=0.5"])
    context = make_context(config)
    state = init_train_state(context)
    trajectory = jax.jit(
        lambda params, key: rollout(context.network, params, key, 3, config.features, OFFICIAL)
    )(state.params, state.key)
    assert trajectory.action.shape == (DECISIONS_PER_GAME, 3)
    np.testing.assert_array_equal(trajectory.reward.sum(0), trajectory.final_score)
    log_probs, value = trajectory_log_probs(context, state.params, trajectory)
    taken = jnp.take_along_axis(log_probs, trajectory.action[..., None], axis=-1)[..., 0]
    np.testing.assert_allclose(value, trajectory.value, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(taken, trajectory.log_prob, rtol=1e-5, atol=1e-6)
