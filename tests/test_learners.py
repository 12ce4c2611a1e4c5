"""The learners' mathematics by hand: lambda-returns (GAE), the actor-critic loss, REINFORCE's
discounted returns and gamma schedule, PPO's clipped surrogate and minibatches, and
learned-potential reward shaping; plus the schedules at their phase boundaries."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.algorithms import a2c, actor_critic, ppo, reinforce
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.algorithms.common import lambda_returns
from yahtzee_jax.algorithms.schedules import hold_anneal_schedule, learning_rate_schedule
from yahtzee_jax.algorithms.training_rollout import evaluate_trajectory, sample_batch
from yahtzee_jax.config import OptimConfig
from yahtzee_jax.game import OFFICIAL
from yahtzee_jax.runner.configs import resolve

# One episode of three decisions: rewards 0, 0, 10; the critic said 1, 2, 3.
REWARD = jnp.array([[0.0], [0.0], [10.0]])
VALUE = jnp.array([[1.0], [2.0], [3.0]])
LOG_PROB = jnp.array([[-1.0], [-2.0], [-0.5]])


def test_gae_by_hand_on_three_steps():
    """gamma 0.5, lambda 0.5: deltas are r + .5 V' - V = [0, -0.5, 7]; the GAE advantages run
    backwards with factor gamma*lambda = 0.25: A2 = 7, A1 = -0.5 + 1.75 = 1.25,
    A0 = 0 + 0.3125 = 0.3125; the lambda-returns are A + V = [1.3125, 3.25, 10]."""
    returns = lambda_returns(REWARD, VALUE, 0.5, 0.5)[:, 0]
    np.testing.assert_allclose(returns, [1.3125, 3.25, 10.0], rtol=1e-6)
    np.testing.assert_allclose(returns - VALUE[:, 0], [0.3125, 1.25, 7.0], rtol=1e-6)


def test_lambda_zero_is_td0_and_lambda_one_is_monte_carlo():
    """lambda 0 gives r + gamma V(s') (0 after the end) bit for bit, and lambda 1 the
    discounted return (to float32 round-off: XLA may fuse the multiply-add), on random data."""
    key_r, key_v = jax.random.split(jax.random.PRNGKey(0))
    reward = jax.random.uniform(key_r, (39, 8)) * 30
    value = jax.random.normal(key_v, (39, 8)) * 50
    gamma = 0.97
    next_value = jnp.concatenate([value[1:], jnp.zeros((1, 8))])
    np.testing.assert_array_equal(
        lambda_returns(reward, value, gamma, 0.0), reward + gamma * next_value
    )
    expected = np.zeros((39, 8), np.float32)
    running = np.zeros(8, np.float32)
    for t in range(38, -1, -1):
        running = np.asarray(reward[t]) + np.float32(gamma) * running
        expected[t] = running
    np.testing.assert_allclose(lambda_returns(reward, value, gamma, 1.0), expected, rtol=1e-6)


def test_reinforce_returns_by_hand_with_gamma_below_one():
    """gamma 0.5, rewards 0, 0, 10: G = [2.5, 5, 10] whatever the critic says."""
    np.testing.assert_allclose(lambda_returns(REWARD, VALUE, 0.5, 1.0)[:, 0], [2.5, 5.0, 10.0])


def test_reinforce_gamma_schedule_moves_from_min_to_max():
    """gamma 0.95 -> 1.0 linearly over the run (period 1.0), then held."""
    config = resolve("paper-reinforce", overrides=["train.total_games=2000"])  # 100 updates
    context = make_context(config)
    values = [float(reinforce.gamma_at(context, jnp.int32(step))) for step in (0, 50, 100, 150)]
    np.testing.assert_allclose(values, [0.95, 0.975, 1.0, 1.0], rtol=1e-6)


def test_loss_matches_hand_computation_without_normalisation():
    """Targets are TD(0) with gamma 0.5: delta = [0, -0.5, 7]; policy -mean(logp * delta) =
    -(0 + 1 - 3.5)/3 = 5/6; value 0.1 * mean(delta^2) = 0.1 * 49.25/3."""
    target = lambda_returns(REWARD, VALUE, 0.5, 0.0)
    total, metrics = a2c.policy_value_terms(LOG_PROB, VALUE, target, 0.1, False)
    assert float(metrics["loss/policy"]) == pytest.approx(5 / 6, rel=1e-6)
    assert float(metrics["loss/value"]) == pytest.approx(0.1 * 49.25 / 3, rel=1e-6)
    assert float(total) == pytest.approx(5 / 6 + 0.1 * 49.25 / 3, rel=1e-6)
    assert float(metrics["advantage/mean"]) == pytest.approx(6.5 / 3, rel=1e-6)


def test_loss_with_normalised_advantages_and_its_gradients():
    """Normalised delta: (delta - 13/6) / std; the policy gradient wrt log pi is -A/3 and the
    value gradient is -2 * 0.1 * delta / 3 (the advantage carries no gradient)."""
    target = lambda_returns(REWARD, VALUE, 0.5, 0.0)
    delta = np.array([0.0, -0.5, 7.0])
    normalised = (delta - delta.mean()) / delta.std()

    def total(log_prob, value):
        return a2c.policy_value_terms(log_prob, value, target, 0.1, True)[0]

    grad_log_prob, grad_value = jax.grad(total, argnums=(0, 1))(LOG_PROB, VALUE)
    np.testing.assert_allclose(grad_log_prob[:, 0], -normalised / 3, rtol=1e-5)
    np.testing.assert_allclose(grad_value[:, 0], -2 * 0.1 * delta / 3, rtol=1e-5, atol=1e-7)


def test_ppo_surrogate_equals_the_a2c_policy_loss_at_ratio_one():
    """At ratio 1 (new = old log-probs) the clipped surrogate has the A2C policy loss's
    gradient with respect to the log-probs: -A / n."""
    advantage = jnp.array([1.5, -0.5, 2.0, -3.0])
    old = jnp.array([-1.0, -2.0, -0.5, -1.5])

    def surrogate(log_prob):
        return ppo.clipped_surrogate(jnp.exp(log_prob - old), advantage, 0.2)

    def a2c_policy(log_prob):
        return -jnp.mean(log_prob * advantage)

    np.testing.assert_allclose(jax.grad(surrogate)(old), jax.grad(a2c_policy)(old), rtol=1e-6)
    assert float(surrogate(old)) == pytest.approx(-float(jnp.mean(advantage)))


def test_ppo_surrogate_clips_by_hand():
    """eps 0.2. A > 0, ratio 1.5: min(1.5 A, 1.2 A) = 1.2 A, no gradient; A < 0, ratio 0.5:
    min(0.5 A, 0.8 A) = 0.8 A, no gradient; A > 0, ratio 0.5: 0.5 A (unclipped side wins)."""
    ratio = jnp.array([1.5, 0.5, 0.5])
    advantage = jnp.array([2.0, -1.0, 4.0])
    loss = ppo.clipped_surrogate(ratio, advantage, 0.2)
    assert float(loss) == pytest.approx(-(1.2 * 2.0 + 0.8 * -1.0 + 0.5 * 4.0) / 3, rel=1e-6)
    grad = jax.grad(lambda r: ppo.clipped_surrogate(r, advantage, 0.2))(ratio)
    np.testing.assert_allclose(grad, [0.0, 0.0, -4.0 / 3], rtol=1e-6)


def test_every_game_in_exactly_one_minibatch_per_epoch():
    """20 games in minibatches of 4: 5 minibatches that together hold each game once, in an
    order that depends on the key."""
    first = np.asarray(ppo.minibatch_indices(jax.random.PRNGKey(0), 20, 4))
    second = np.asarray(ppo.minibatch_indices(jax.random.PRNGKey(1), 20, 4))
    assert first.shape == (5, 4)
    assert sorted(first.ravel().tolist()) == list(range(20))
    assert sorted(second.ravel().tolist()) == list(range(20))
    assert not np.array_equal(first, second)


def test_shaping_rewards_of_a_game_sum_to_minus_the_first_potential():
    """gamma 1 and a fixed potential: the shaping terms telescope to Phi(s_T) - Phi(s_0) with
    Phi = 0 after the last decision, i.e. -Phi(s_0), for every game of a batch."""
    prediction = jax.random.uniform(jax.random.PRNGKey(3), (39, 5), minval=-1.5, maxval=0.5)
    potentials = actor_critic.potential(prediction, OFFICIAL)
    shaping = actor_critic.shaping_rewards(potentials, 1.0, 1.0, discount=True)
    np.testing.assert_allclose(shaping.sum(0), -potentials[0], rtol=1e-5, atol=1e-4)
    undiscounted = actor_critic.shaping_rewards(potentials, 2.0, 0.9, discount=False)
    np.testing.assert_allclose(undiscounted.sum(0), -2.0 * potentials[0], rtol=1e-5, atol=1e-4)


def test_potential_is_the_bonus_share_of_the_predicted_upper_total():
    """U = 0 (final upper total 63) -> 35; U = -1 (total 0) -> 0; U = -0.5 -> 17.5; clamped."""
    values = actor_critic.potential(jnp.array([0.0, -1.0, -0.5, 1.0, -3.0]), OFFICIAL)
    np.testing.assert_allclose(values, [35.0, 0.0, 17.5, 35.0, 0.0], rtol=1e-6)


def test_rollout_is_reproduced_by_the_loss_forward_pass():
    """With dropout on, re-running the network with each decision's own dropout seed gives the
    rollout's values and log-probs (the update is exactly on-policy), also on any subset of the
    games (a PPO minibatch). Games last 39 decisions."""
    config = resolve("quick", overrides=["network.hidden_size=16", "network.dropout=0.5"])
    context = make_context(config)
    state = init_train_state(context)
    trajectory = jax.jit(lambda params, key: sample_batch(context, params, key)[0])(
        state.params, state.key
    )
    decisions = context.rules.decisions_per_game
    assert trajectory.action.shape == (decisions, config.train.games_per_update)
    # compiled whole: op by op, the forward pass compiled each of its operations at each shape
    evaluate = jax.jit(lambda params, games: evaluate_trajectory(context.network, params, games))
    log_probs, output = evaluate(state.params, trajectory)
    taken = jnp.take_along_axis(log_probs, trajectory.action[..., None], axis=-1)[..., 0]
    np.testing.assert_allclose(output.value, trajectory.value, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(taken, trajectory.log_prob, rtol=1e-5, atol=1e-5)
    games = jnp.array([5, 1, 30])
    subset = jax.tree.map(lambda a: a[:, games], trajectory)
    sub_log_probs, _ = evaluate(state.params, subset)
    np.testing.assert_allclose(sub_log_probs, log_probs[:, games], rtol=1e-5, atol=1e-5)


def test_learning_rate_schedule_phase_boundaries():
    """100 steps, lr 1e-3, min ratio 0.01: warmup from 1e-5 to 1e-3 over steps 0-5, plateau to
    step 75, linear decay to 1e-5 at step 100."""
    schedule = learning_rate_schedule(OptimConfig(lr=1e-3, min_lr_ratio=0.01), 100)
    values = {step: float(schedule(step)) for step in (0, 5, 40, 75, 100)}
    assert values[0] == pytest.approx(1e-5, rel=1e-5)
    assert values[5] == pytest.approx(1e-3, rel=1e-5)
    assert values[40] == pytest.approx(1e-3, rel=1e-5)
    assert values[75] == pytest.approx(1e-3, rel=1e-5)
    assert values[100] == pytest.approx(1e-5, rel=1e-5)
    assert float(schedule(87.5)) == pytest.approx((1e-3 + 1e-5) / 2, rel=1e-3)


def test_ppo_learning_rate_schedule_counts_optimizer_steps():
    """PPO takes epochs x minibatches = 3 x 5 optimizer steps per update, so its schedule spans
    15 x the updates: the decay ends at the last optimizer step, not 15 x too early."""
    config = resolve(
        "paper-ppo-50k",
        overrides=["algo.epochs=3", "optim.warmup=0.05", "optim.plateau=0.7", "optim.lr=1e-3"],
    )
    context = make_context(config)
    steps = context.algorithm.optimizer_steps_per_update(config)
    assert steps == 15
    total = config.train.total_updates * steps
    assert float(context.learning_rate(total // 2)) == pytest.approx(1e-3, rel=1e-5)
    assert float(context.learning_rate(total)) == pytest.approx(1e-3 * 0.01, rel=1e-4)


def test_entropy_schedule_holds_anneals_and_holds():
    """Hold 0.3, anneal 0.6 of 100 updates: 0.06 until 30, 0.04 at 60, 0.02 from 90 on."""
    schedule = hold_anneal_schedule(0.06, 0.02, 0.3, 0.6, 100)
    for step, expected in [(0, 0.06), (30, 0.06), (60, 0.04), (90, 0.02), (100, 0.02)]:
        assert float(schedule(step)) == pytest.approx(expected, abs=1e-7), step
