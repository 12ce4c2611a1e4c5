"""The Gymnasium adapter: registered ids, `check_env`, the mask in `info`, and the vector env
on the vmapped engine (`make_vec`) with same-step auto-reset and seeding."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from yahtzee_jax.envs import core
from yahtzee_jax.suite import ENV_IDS
from yahtzee_jax.suite.gymnasium_env import YahtzeeEnv, YahtzeeVectorEnv


def masked_random(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """A uniformly random legal action per row of int8 `masks`."""
    return np.array([rng.choice(np.flatnonzero(row)) for row in masks])


def test_every_id_is_registered():
    """``yahtzee_jax/<id>`` names each of the 21 ids, with a vector entry point."""
    for env_id in ENV_IDS:
        spec = gymnasium.spec(f"yahtzee_jax/{env_id}")
        assert spec.vector_entry_point.endswith(":YahtzeeVectorEnv")


@pytest.mark.parametrize("env_id", ["Yahtzee-v0", "YatzySingleTurn-v0", "YahtzeeMatch-v0"])
def test_gymnasium_check_env_passes(env_id):
    """Gymnasium's own acceptance test, on a game, a single turn and a match against greedy1."""
    env = gymnasium.make(f"yahtzee_jax/{env_id}")
    check_env(env.unwrapped, skip_render_check=True)
    assert isinstance(env.unwrapped, YahtzeeEnv)


def test_a_game_played_by_its_mask_ends_with_its_score():
    """Random play by `info["action_mask"]` ends after 39 decisions, terminated and never
    truncated; `action_masks()` agrees with the info; the returns add up to the card's total."""
    env = gymnasium.make("yahtzee_jax/Yahtzee-v0")
    obs, info = env.reset(seed=3)
    rng = np.random.default_rng(0)
    total, steps, terminated = 0.0, 0, False
    while not terminated:
        assert np.array_equal(info["action_mask"], env.unwrapped.action_masks())
        obs, reward, terminated, truncated, info = env.step(
            masked_random(rng, [info["action_mask"]])[0]
        )
        assert not truncated and env.observation_space.contains(obs)
        total, steps = total + reward, steps + 1
    assert steps == 39
    assert total == float(core.total_scores(env.unwrapped._state, env.unwrapped.params)[0])


def test_make_vec_is_one_batch_on_the_vmapped_engine():
    """`make_vec` builds the JAX vector env; with one seed two copies play the same episodes;
    each episode ends after its 36 decisions (Yacht's 12 boxes), its final observation in
    `info`, and starts again in the same step (its next observation a fresh card's)."""
    envs = [gymnasium.make_vec("yahtzee_jax/Yacht-v0", num_envs=4) for _ in range(2)]
    assert all(isinstance(env, YahtzeeVectorEnv) for env in envs)
    rng = np.random.default_rng(0)
    (obs_a, info_a), (obs_b, _) = (env.reset(seed=11) for env in envs)
    assert np.array_equal(obs_a, obs_b)
    for step in range(36):
        actions = masked_random(rng, info_a["action_mask"])
        obs_a, reward_a, term_a, trunc_a, info_a = envs[0].step(actions)
        obs_b, reward_b, *_ = envs[1].step(actions)
        assert np.array_equal(obs_a, obs_b) and np.array_equal(reward_a, reward_b)
        assert term_a.all() == (step == 35) and not trunc_a.any()
    assert info_a["_final_obs"].all()
    # The final card is full (no box open), the new one empty: the "category open" groups differ.
    boxes = slice(36, 36 + 12)  # dice one-hot 30 and counts 6, then Yacht's 12 open flags
    assert (info_a["final_obs"][:, boxes] == 0).all() and (obs_a[:, boxes] == 1).all()
