"""PPO's discount schedule (`algo.gamma_end`, `gamma_hold`, `gamma_anneal`): gamma, then
linearly to gamma_end, in the targets and advantages the update learns from."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.algorithms import ppo
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.algorithms.training_rollout import sample_batch
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.runner.configs import resolve

SCHEDULE = ("algo.gamma=0.9", "algo.gamma_hold=0.2", "algo.gamma_anneal=0.5")


def ppo_context(*overrides: str):
    """A small PPO context with 100 updates of 4 games."""
    config = resolve(
        "quick",
        overrides=[
            "algo.name=ppo",
            "algo.games_per_minibatch=4",
            "network.hidden_size=16",
            "train.games_per_update=4",
            "train.total_games=400",
            *overrides,
        ],
    )
    return make_context(config)


def test_schedule_holds_then_anneals_to_the_end_value():
    """gamma 0.9 held for 20 % of 100 updates, then to 1 over 50 %: 0.9 until update 20, 0.95
    at 45, 1 from 70 on; without a schedule, algo.gamma itself."""
    context = ppo_context(*SCHEDULE)
    for step, expected in ((0, 0.9), (20, 0.9), (45, 0.95), (70, 1.0), (99, 1.0)):
        gamma = ppo.discount(context, jnp.int32(step))
        np.testing.assert_allclose(gamma, expected, rtol=1e-6, err_msg=f"update {step}")
    plain = ppo_context("algo.gamma=0.97")
    assert ppo.discount(plain, jnp.int32(50)) == 0.97


def test_advantages_use_the_scheduled_gamma():
    """On one batch of real games, the scheduled learner's targets and advantages at update 0
    are those of a learner at gamma 0.9 throughout, and at update 99 those at gamma 1, bit for
    bit; the two differ (the schedule reaches the targets)."""
    scheduled = ppo_context(*SCHEDULE)
    state = init_train_state(scheduled)
    trajectory = jax.jit(lambda params, key: sample_batch(scheduled, params, key, True)[0])(
        state.params, jax.random.PRNGKey(4)
    )
    early, late = (ppo.gae(scheduled, trajectory, jnp.int32(step))[:2] for step in (0, 99))
    for fixed, (target, advantage) in ((0.9, early), (1.0, late)):
        reference = ppo_context(f"algo.gamma={fixed}")
        want_target, want_advantage, _ = ppo.gae(reference, trajectory, jnp.int32(0))
        np.testing.assert_array_equal(target, want_target)
        np.testing.assert_array_equal(advantage, want_advantage)
    assert not np.allclose(early[0], late[0])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["algo.gamma_end=1.5"], "algo.gamma_end=1.5 must be in [0, 1]"),
        (["algo.gamma_hold=-0.1"], "algo.gamma_hold=-0.1 must be in [0, 1]"),
        (
            ["algo.gamma_hold=0.7", "algo.gamma_anneal=0.5"],
            "algo.gamma_hold + algo.gamma_anneal must be <= 1",
        ),
    ],
)
def test_bad_schedules_are_refused_in_one_line(overrides, message):
    """An end outside [0, 1] or phases that overrun the run: one line naming the setting."""
    with pytest.raises(ConfigError) as error:
        ppo_context(*overrides)
    assert str(error.value) == message
