"""The upper-bonus curriculum of the actor-critic learners (issue 28): the bonus counts
`algo.bonus_scale_start` times in the training reward, then anneals back to the game's own."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.algorithms import actor_critic
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.algorithms.training_rollout import sample_batch
from yahtzee_jax.envs.tasks import env_id
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.runner.configs import resolve


def curriculum_context(rules: str, *overrides: str):
    """A small A2C context on `rules` with 100 updates of 4 games."""
    config = resolve(
        "quick",
        overrides=[
            "network.hidden_size=16",
            "train.games_per_update=4",
            "train.total_games=400",
            f"env.id={env_id(rules, 'game')}",
            *overrides,
        ],
    )
    return make_context(config)


def test_crossings_mark_only_the_write_that_reaches_the_threshold():
    """Upper totals after each decision of two games: the first reaches 63 at its fourth
    decision (60 -> 63), the second at its first (0 -> 63 is not possible in play but shows
    the start counts from 0); staying above 63 afterwards is not a second crossing."""
    totals = jnp.array([[0, 63], [10, 63], [60, 70], [63, 70], [70, 70]], jnp.int32)
    expected = np.zeros((5, 2), np.float32)
    expected[3, 0] = expected[0, 1] = 1.0
    np.testing.assert_array_equal(actor_critic.bonus_crossings(totals, 63), expected)


def test_schedule_holds_anneals_and_ends_at_the_games_own_bonus():
    """Start 3, hold 20 % and anneal 50 % of 100 updates: 3 until update 20, 2 halfway
    through the anneal (update 45), then 1 from update 70 on."""
    context = curriculum_context(
        "yacht-clubhouse",
        "algo.bonus_scale_start=3.0",
        "algo.bonus_scale_hold=0.2",
        "algo.bonus_scale_anneal=0.5",
    )
    assert context.config.train.total_updates == 100
    for step, expected in ((0, 3.0), (20, 3.0), (45, 2.0), (70, 1.0), (99, 1.0)):
        scale = actor_critic.bonus_scale(context, jnp.int32(step))
        np.testing.assert_allclose(scale, expected, rtol=1e-6, err_msg=f"update {step}")


@pytest.mark.parametrize(
    ("rules", "bonus"),
    [pytest.param("yacht-clubhouse", 35, marks=pytest.mark.slow), ("yatzy", 50)],
)
def test_training_rewards_add_the_scaled_bonus_at_the_crossing(rules: str, bonus: int):
    """In real rollouts with scale 2.5 the training reward exceeds the game's by 1.5 x the
    rules' own bonus (35 in Yacht, 50 in Yatzy) exactly where the upper total first reaches
    63 and nowhere else; after the anneal it is the game's reward."""
    curriculum = (
        "algo.bonus_scale_start=2.5",
        "algo.bonus_scale_hold=0",
        "algo.bonus_scale_anneal=0.5",
    )
    context = curriculum_context(rules, *curriculum)
    state = init_train_state(context)
    # the rollout compiled whole (op by op, each of its operations was compiled alone)
    rollout = jax.jit(lambda params, key: sample_batch(context, params, key, True)[0])
    trajectory = rollout(state.params, jax.random.PRNGKey(3))
    # give every game the bonus at its 10th decision, whatever its dice did
    totals = jnp.where(jnp.arange(trajectory.reward.shape[0])[:, None] >= 9, 63, 5)
    trajectory = trajectory._replace(upper_total=jnp.broadcast_to(totals, trajectory.reward.shape))
    gamma = context.config.algo.gamma
    early = actor_critic.training_rewards(context, trajectory, gamma, jnp.int32(0))
    expected = np.array(trajectory.reward)
    expected[9] += 1.5 * bonus
    np.testing.assert_allclose(early, expected, rtol=1e-6)
    late = actor_critic.training_rewards(context, trajectory, gamma, jnp.int32(50))
    np.testing.assert_array_equal(late, trajectory.reward)


# slow: in `make test` A2C's update with the curriculum runs in tests/test_population.py, whose
# members' logged schedules must equal those of the runs alone
@pytest.mark.slow
@pytest.mark.parametrize("algo", ["a2c", "ppo"])
def test_learners_train_with_the_curriculum(algo: str):
    """Two updates with the curriculum on run and report finite losses."""
    extra = ["algo.games_per_minibatch=2"] if algo == "ppo" else []
    curriculum = (
        "algo.bonus_scale_start=2.0",
        "algo.bonus_scale_hold=1",
        "algo.bonus_scale_anneal=0",
    )
    context = curriculum_context("yacht", f"algo.name={algo}", *curriculum, *extra)
    state = init_train_state(context)
    for _ in range(2):
        state, metrics = context.algorithm.update(context, state)
    assert np.isfinite(float(metrics["loss/total"]))
    np.testing.assert_allclose(metrics["schedule/bonus_scale"], 2.0)  # held all along


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["algo.bonus_scale_start=-1"], "bonus_scale_start=-1.0 must be >= 0"),
        (
            ["algo.bonus_scale_hold=0.7", "algo.bonus_scale_anneal=0.6"],
            "bonus_scale_hold + algo.bonus_scale_anneal must be <= 1",
        ),
        (
            ["algo.bonus_scale_start=2", "env.id=YahtzeeMatch-v0", "env.reward=score"],
            "needs solitaire games, as env.id=Yahtzee-v0",
        ),
    ],
)
def test_bad_curricula_are_refused_in_one_line(overrides: list[str], message: str):
    """A negative scale, phases longer than the run and a match task are refused by name."""
    with pytest.raises(ConfigError, match=re.escape(message)) as error:
        curriculum_context("official", *overrides)
    assert "\n" not in str(error.value)
