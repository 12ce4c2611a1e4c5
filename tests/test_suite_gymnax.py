"""The gymnax adapter under gymnax's own wrappers (`LogWrapper`, `FlattenObservationWrapper`):
jitted and vmapped, auto-reset with the new episode's mask, spaces, and what an illegal action
or a policy blind to the mask meets."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from gymnax.wrappers.purerl import FlattenObservationWrapper, LogWrapper

from yahtzee_jax.envs import core
from yahtzee_jax.errors import UserError
from yahtzee_jax.suite.gymnax_env import YahtzeeGymnax

BATCH = 8


def masked_random(key: jax.Array, mask: jax.Array) -> jax.Array:
    """A uniformly random legal action of each row of `mask`."""
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf), axis=-1)


def run(env_id: str, steps: int, **params: object) -> dict[str, jax.Array]:
    """`steps` vmapped, jitted steps of random legal play through gymnax's wrappers."""
    base = YahtzeeGymnax(env_id, **params)
    env = LogWrapper(FlattenObservationWrapper(base))
    env_params = base.default_params
    keys = jax.random.split(jax.random.key(0), BATCH)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, env_params)
    mask = jax.vmap(base.action_mask)(state.env_state)

    def one(carry: tuple, key: jax.Array) -> tuple:
        state, mask = carry
        act_key, step_key = jax.random.split(key)
        action = masked_random(act_key, mask)
        step_keys = jax.random.split(step_key, BATCH)
        obs, state, reward, terminated, truncated, info = jax.vmap(
            env.step, in_axes=(0, 0, 0, None)
        )(step_keys, state, action, env_params)
        mask = info["action_mask"]
        fresh = jax.vmap(base.action_mask)(state.env_state)
        out = {
            "obs": obs,
            "reward": reward,
            "terminated": terminated,
            "truncated": truncated,
            "returned": info["returned_episode_returns"],
            "mask_is_fresh": jnp.all(mask == fresh),
            "legal_taken": jnp.take_along_axis(carry[1], action[:, None], 1)[:, 0],
            "totals": jax.vmap(core.total_scores, in_axes=(0, None))(
                state.env_state.env, env_params
            ),
        }
        return (state, mask), out

    _, out = jax.jit(lambda c, k: jax.lax.scan(one, c, jax.random.split(k, steps)))(
        (state, mask), jax.random.key(1)
    )
    out["space"] = base.observation_space(env_params)
    out["first_obs"] = obs
    return out


def test_a_whole_game_runs_jitted_and_vmapped_and_resets_itself():
    """Two games' worth of steps of Yahtzee-v0: every episode terminates after exactly 39
    decisions, its logged return is its final total, the next episode starts on its own
    (obs and mask those of the fresh card) and nothing is ever truncated."""
    out = run("Yahtzee-v0", 2 * 39)
    terminated = out["terminated"]
    assert terminated[38].all() and terminated[77].all()
    assert int(terminated.sum()) == 2 * BATCH
    assert not out["truncated"].any()
    assert out["mask_is_fresh"].all() and out["legal_taken"].all()
    returns = jnp.sum(out["reward"][:39], axis=0)
    assert jnp.array_equal(out["returned"][38], returns)
    assert jnp.array_equal(returns, out["totals"][37][:, 0] + out["reward"][38])
    assert bool(jnp.all(returns > 0))
    space = out["space"]
    assert all(space.contains(o) for o in out["obs"].reshape(-1, out["obs"].shape[-1])[:200])


def test_a_match_rewards_the_result_of_the_totals_once():
    """YahtzeeMatch-v0 (random opponent, so that the outside seat wins some and loses some):
    rewards are 0 until the 39th decision, which ends the match; then each match's reward is
    the sign of the outside seat's final total minus the other seat's, both read from the
    ended match's cards (`step_env`: no reset), and the rewards' sum is wins minus losses."""
    base = YahtzeeGymnax("YahtzeeMatch-v0", opponent="random")
    params = base.default_params
    games = 64
    # compiled whole: op by op, the vmapped reset compiled each of its operations alone
    _, state = jax.jit(jax.vmap(base.reset_env, in_axes=(0, None)))(
        jax.random.split(jax.random.key(0), games), params
    )

    def one(state, key):
        act_key, step_key = jax.random.split(key)
        mask = jax.vmap(base.action_mask)(state)
        action = masked_random(act_key, mask)
        _, state, reward, terminated, _ = jax.vmap(base.step_env, in_axes=(0, 0, 0, None))(
            jax.random.split(step_key, games), state, action, params
        )
        return state, (reward, terminated)

    final, (rewards, terminated) = jax.jit(
        lambda s, k: jax.lax.scan(one, s, jax.random.split(k, 39))
    )(state, jax.random.key(1))
    assert not rewards[:38].any() and not terminated[:38].any() and terminated[38].all()
    totals = jax.vmap(core.total_scores, in_axes=(0, None))(final.env, params)
    ours, theirs = totals[:, params.seat], totals[:, 1 - params.seat]
    assert jnp.array_equal(rewards[38], jnp.sign(ours - theirs).astype(rewards.dtype))
    wins, losses = int(jnp.sum(ours > theirs)), int(jnp.sum(ours < theirs))
    assert wins > 0 and losses > 0  # both results are checked
    assert float(rewards.sum()) == wins - losses


def test_spaces_and_names():
    """Discrete(45) actions and a 75-wide Box for Yahtzee; Yatzy's 15 boxes give 47 actions."""
    env = YahtzeeGymnax("Yahtzee-v0")
    assert env.action_space().n == env.num_actions == 45 and env.name == "Yahtzee-v0"
    assert env.observation_space(env.default_params).shape == (75,)
    assert YahtzeeGymnax("Yatzy-v0").num_actions == 47


def test_a_single_agent_adapter_refuses_a_table_without_opponent():
    """With every seat outside, a single-agent env would not know whose reward to return."""
    with pytest.raises(UserError, match="PettingZoo"):
        YahtzeeGymnax("YahtzeeMatch-v0", opponent=None)


# What an outside client meets, written against gymnax's API alone (`reset`, `step`,
# `LogWrapper`) under jit: an action cannot raise there, so it has a defined outcome.
CHANCE = 44  # Yahtzee's last score action: chance


def scripted(env_id: str, actions: list, **params: object) -> dict[str, jax.Array]:
    """The steps of `actions` (any dtype: ints, floats; each one action for every episode, or
    one per episode) on a batch of BATCH episodes under gymnax's `LogWrapper`, jitted:
    rewards, terminated, truncated and logged returns per step."""
    base = YahtzeeGymnax(env_id, **params)
    env = LogWrapper(base)
    env_params = base.default_params
    keys = jax.random.split(jax.random.key(5), BATCH)
    _, state = jax.vmap(env.reset, in_axes=(0, None))(keys, env_params)

    def one(state: object, inputs: tuple) -> tuple:
        key, action = inputs
        step_keys = jax.random.split(key, BATCH)
        actions_ = jnp.broadcast_to(action, (BATCH,))
        _, state, reward, terminated, truncated, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            step_keys, state, actions_, env_params
        )
        out = {"reward": reward, "terminated": terminated, "truncated": truncated}
        return state, {**out, "returned": info["returned_episode_returns"]}

    inputs = (jax.random.split(jax.random.key(6), len(actions)), jnp.asarray(actions))
    return jax.jit(lambda s, x: jax.lax.scan(one, s, x)[1])(state, inputs)


@pytest.mark.parametrize(
    "illegal",
    [
        jnp.int32([45, 100, -1, CHANCE, 45, 100, -1, CHANCE]),
        jnp.float32([44.9, 30.5, 45, -1, 44.9, 30.5, 100, CHANCE]),
    ],
    ids=["ints", "floats"],
)
def test_an_illegal_action_forfeits_the_game_with_its_points(illegal):
    """Keep all, keep all, score chance (r >= 5 points), then an illegal action at the next
    first roll, one per episode (out of range: 45, 100, -1; a float that is not whole: 44.9, and
    30.5, which int32 would make the legal keep 30; chance again, now used): the game
    terminates on that step with reward -r, so gymnax's logged return is 0, a forfeited game's
    worth (an argmax that ignores the mask is taught that an illegal move costs the game)."""
    dtype = illegal.dtype
    script = [jnp.full(BATCH, a, dtype) for a in (31, 31, CHANCE)] + [illegal]
    out = scripted("Yahtzee-v0", jnp.stack(script))
    scored = out["reward"][2]
    assert bool(jnp.all(scored >= 5)) and not out["terminated"][:3].any()
    assert out["terminated"][3].all() and not out["truncated"].any()
    assert jnp.array_equal(out["reward"][3], -scored)
    assert not out["returned"][3].any()  # the logged return of each finished game: 0


def test_a_mask_blind_policy_finishes_or_is_truncated_within_its_limit():
    """A constant policy: always 0 (reroll all) is illegal at the first score decision, so every
    game ends on step 3 (terminated) and the next one on step 6; under ``illegal_action="noop"``
    always-chance is refused at every first roll and every episode is truncated, not
    terminated, on step 78 (twice a game's 39 decisions), then starts again."""
    out = scripted("Yahtzee-v0", [0] * 6)
    assert out["terminated"][2].all() and out["terminated"][5].all()
    assert int(out["terminated"].sum()) == 2 * BATCH and not out["truncated"].any()
    out = scripted("Yahtzee-v0", [CHANCE] * 80, illegal_action="noop")
    assert out["truncated"][77].all() and int(out["truncated"].sum()) == BATCH
    assert not out["terminated"].any() and not out["reward"].any()


# 12-17 s on 2 cores (greedy1's compile): make test-slow; the fast suite covers the "win"
# forfeit in test_suite_env.py (test_a_forfeit_costs_the_seat_that_acted_a_loss_...).
@pytest.mark.slow
def test_a_match_forfeit_is_a_loss():
    """Against greedy1 with the "win" reward, chance at the first roll ends the match at once
    with -1 for the outside seat."""
    out = scripted("YahtzeeMatch-v0", [CHANCE])
    assert out["terminated"][0].all() and out["reward"][0].tolist() == [-1.0] * BATCH
