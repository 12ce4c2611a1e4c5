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


@pytest.mark.parametrize(
    ("env_id", "params"),
    [("Yahtzee-v0", {}), ("YatzySingleTurn-v0", {}), ("YahtzeeMatch-v0", {"opponent": "random"})],
    ids=["Yahtzee-v0", "YatzySingleTurn-v0", "YahtzeeMatch-v0"],
)
def test_gymnasium_check_env_passes(env_id, params):
    """Gymnasium's own acceptance test, on a game, a single turn and a match against the random
    opponent (its moves drawn from the keys the seeded reset fixes; the default greedy1 compiled
    5 s longer, and its turn inside the step is tests/test_suite_env.py's)."""
    env = gymnasium.make(f"yahtzee_jax/{env_id}", **params)
    check_env(env.unwrapped, skip_render_check=True)
    assert isinstance(env.unwrapped, YahtzeeEnv)


def test_a_game_played_by_its_mask_ends_with_its_score():
    """Random play by `info["action_mask"]` ends after 39 decisions, terminated and never
    truncated; `action_masks()` agrees with the info, reached as docs/adapters/usage.md says
    (`env.unwrapped`, `get_wrapper_attr`); the returns add up to the card's total."""
    env = gymnasium.make("yahtzee_jax/Yahtzee-v0")
    obs, info = env.reset(seed=3)
    rng = np.random.default_rng(0)
    total, steps, terminated = 0.0, 0, False
    while not terminated:
        assert np.array_equal(info["action_mask"], env.unwrapped.action_masks())
        # what sb3-contrib's vectorised env calls through `gymnasium.make`'s wrappers
        assert np.array_equal(info["action_mask"], env.get_wrapper_attr("action_masks")())
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


# What an outside client meets, written against Gymnasium's API alone (`gymnasium.make`,
# `make_vec`, `gymnasium.error`, and `action_masks()`, which sb3-contrib's MaskablePPO calls).
CHANCE = 44  # Yahtzee's last score action: chance


def test_an_action_outside_the_space_raises_naming_it_and_the_legal_ones():
    """45, 100, -1, 44.9 and "6" are not actions of Discrete(45): each raises Gymnasium's
    `InvalidAction` (a ValueError too) whose one line names the action and the legal ones at a
    first roll (0-31, the keeps), and nothing moves: a whole game of 39 legal steps follows. A
    whole float (31.0) is the integer 31."""
    env = gymnasium.make("yahtzee_jax/Yahtzee-v0")
    env.reset(seed=0)
    for action in (45, 100, -1, 44.9, "6"):
        with pytest.raises(gymnasium.error.InvalidAction) as error:
            env.step(action)
        message = str(error.value)
        assert isinstance(error.value, ValueError) and "\n" not in message
        assert f"illegal action {action!r}" in message and "legal actions now: 0-31" in message
    steps, done = 0, False
    while not done:
        action = 31.0 if steps == 0 else np.flatnonzero(env.unwrapped.action_masks())[-1]
        _, _, terminated, truncated, _ = env.step(action)
        steps, done = steps + 1, terminated or truncated
    assert steps == 39 and terminated and not truncated


def test_a_masked_action_forfeits_the_game_by_default_and_raises_on_request():
    """Keep all, keep all, score chance (r points), then chance again at the next first roll,
    where only keeps are legal: by default the game ends on that step with reward -r, a return
    of 0, and a further step raises `ResetNeeded`. With ``illegal_action="raise"`` the same step
    raises `InvalidAction` naming "score chance"."""
    env = gymnasium.make("yahtzee_jax/Yahtzee-v0")
    env.reset(seed=1)
    rewards = [env.step(a)[1] for a in (31, 31, CHANCE)]
    assert rewards[:2] == [0.0, 0.0] and rewards[2] >= 5  # five dice in chance: at least 5
    _, reward, terminated, truncated, _ = env.step(CHANCE)
    assert reward == -rewards[2] and terminated and not truncated
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.unwrapped.step(0)
    strict = gymnasium.make("yahtzee_jax/Yahtzee-v0", illegal_action="raise")
    strict.reset(seed=1)
    for action in (31, 31, CHANCE):
        strict.step(action)
    with pytest.raises(gymnasium.error.InvalidAction, match="score chance, not legal now"):
        strict.step(CHANCE)


def test_a_mask_blind_policy_ends_within_the_step_limit():
    """An argmax over constant logits (always action 0, reroll every die) is illegal at the
    first score decision: by default the episode terminates on step 3. Under
    ``illegal_action="noop"`` always-chance is refused at every first roll and the episode is
    truncated, not terminated, after 78 steps (twice the game's 39 decisions)."""
    for params, action, limit, ended_by in (
        ({}, 0, 3, "terminated"),
        ({"illegal_action": "noop"}, CHANCE, 78, "truncated"),
    ):
        env = gymnasium.make("yahtzee_jax/Yahtzee-v0", **params)
        env.reset(seed=2)
        steps, terminated, truncated = 0, False, False
        while not (terminated or truncated):
            _, _, terminated, truncated, _ = env.step(action)
            steps += 1
            assert steps <= 1000, "the episode never ended"
        assert steps == limit and {"terminated": terminated, "truncated": truncated}[ended_by]
        assert terminated != truncated


def test_masks_and_observations_are_writable_copies_and_need_a_reset():
    """`action_masks()` before `reset()` raises `ResetNeeded` (not an assert); after it, the
    observation and both masks are writable arrays, and writing to them changes nothing in the
    env (`action_masks()` is bool and agrees with the int8 ``info["action_mask"]``)."""
    env = gymnasium.make("yahtzee_jax/Yahtzee-v0").unwrapped
    with pytest.raises(gymnasium.error.ResetNeeded, match="reset"):
        env.action_masks()
    obs, info = env.reset(seed=3)
    mask = env.action_masks()
    assert mask.dtype == np.bool_ and np.array_equal(mask, info["action_mask"].astype(bool))
    obs -= 0.5
    mask[:] = False
    info["action_mask"][:] = 0
    assert env.action_masks()[:32].all() and not env.action_masks()[32:].any()
    obs, *_ = env.step(31)
    obs *= 2.0
    vec = gymnasium.make_vec("yahtzee_jax/Yahtzee-v0", num_envs=2)
    with pytest.raises(gymnasium.error.ResetNeeded):
        vec.action_masks()
    obs, _ = vec.reset(seed=0)
    obs += 1.0
    vec.action_masks()[:] = False
    assert vec.action_masks()[:, :32].all()


def test_a_list_of_seeds_seeds_each_slot_and_bad_ones_are_refused():
    """`reset(seed=[...])`, one seed per slot as Gymnasium's vector envs take it: a slot's first
    episode follows from its own seed (equal seeds, equal dice; the list was cut to its first
    seed once, so [1, 9, 9] and [1, 2, 3] dealt the same); a list of another length or with a
    seed that is not one, a step with too few actions and `num_envs=0` are one-line errors."""
    vec = gymnasium.make_vec("yahtzee_jax/Yatzy-v0", num_envs=3)
    first, _ = vec.reset(seed=[1, 2, 3])
    second, _ = vec.reset(seed=[1, 9, 9])
    assert np.array_equal(first[0], second[0]) and np.array_equal(second[1], second[2])
    assert not np.array_equal(first[1], second[1])
    assert np.array_equal(vec.reset(seed=[1, 2, 3])[0], first)
    for seeds in ([1, 2], [1, 2, None], [1, 2, -3], [1, 2, True]):
        with pytest.raises(ValueError, match=r"one integer in 0\.\.2\*\*32-1 per slot \(3\)"):
            vec.reset(seed=seeds)
    with pytest.raises(ValueError, match=r"one action per slot \(3\), got 2"):
        vec.step(np.array([31, 31]))
    with pytest.raises(ValueError, match="num_envs must be an integer >= 1, got 0"):
        gymnasium.make_vec("yahtzee_jax/Yatzy-v0", num_envs=0)


def test_the_vector_env_checks_every_slot_before_any_moves():
    """`make_vec`: an out-of-range action in slot 2 raises naming "episode 2" and moves no
    slot (the next step gives what a twin env, seeded alike, gives without the error); chance
    at a second roll in slot 1 forfeits that game alone (terminated, reward 0 as no points were
    scored yet) and it starts again in the same step, its mask a first roll's (keeps only)."""
    vec, twin = (gymnasium.make_vec("yahtzee_jax/Yahtzee-v0", num_envs=3) for _ in range(2))
    vec.reset(seed=4)
    twin.reset(seed=4)
    with pytest.raises(gymnasium.error.InvalidAction, match="for episode 2 "):
        vec.step([0, 0, 45])
    assert np.array_equal(vec.step([31, 31, 31])[0], twin.step([31, 31, 31])[0])
    _, reward, terminated, truncated, info = vec.step([31, CHANCE, 31])
    assert terminated.tolist() == [False, True, False] and not truncated.any()
    assert reward.tolist() == [0.0, 0.0, 0.0]
    assert info["_final_obs"].tolist() == [False, True, False]
    assert info["action_mask"][1, :32].all() and not info["action_mask"][1, 32:].any()
