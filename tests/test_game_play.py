"""Random legal play, single and vmapped, against the game's invariants and the reference game."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yahtzee_jax import reference
from yahtzee_jax.game import (
    DECISIONS_PER_GAME,
    NUM_ACTIONS,
    NUM_KEEP_ACTIONS,
    RULE_VARIANTS,
    Category,
    State,
    init,
    init_single_turn,
    legal_action_mask,
    step,
    total_score,
    upper_bonus,
)

OFFICIAL = RULE_VARIANTS["official"]


def play_random(key: jax.Array, rules=OFFICIAL):
    """One game of uniformly random legal play; per-step (state, action, mask) are scanned out."""

    def body(state: State, step_key: jax.Array):
        policy_key, dice_key = jax.random.split(step_key)
        mask = legal_action_mask(state, rules)
        action = jax.random.categorical(policy_key, jnp.where(mask, 0.0, -jnp.inf))
        next_state = step(state, action, dice_key, rules)
        return next_state, (state, action, mask, next_state.reward)

    init_key, play_key = jax.random.split(key)
    return jax.lax.scan(body, init(init_key), jax.random.split(play_key, DECISIONS_PER_GAME))


@pytest.fixture(scope="module", params=list(RULE_VARIANTS))
def played(request):
    """2,048 random games played vmapped under each rule variant in turn."""
    rules = RULE_VARIANTS[request.param]
    keys = jax.random.split(jax.random.key(7), 2048)
    play = jax.jit(jax.vmap(lambda key: play_random(key, rules)))
    final, (states, actions, masks, rewards) = play(keys)
    return jax.device_get((final, states, actions, masks, rewards))


def test_games_last_exactly_39_decisions(played) -> None:
    """13 turns of keep, keep, score: terminal after the 39th decision and not before."""
    final, states, actions, _, _ = played
    assert final.terminated.all()
    assert not states.terminated.any()  # no decision was taken on a finished game
    is_score = actions >= NUM_KEEP_ACTIONS
    assert (is_score.sum(axis=1) == 13).all()
    assert (is_score == (np.arange(39) % 3 == 2)).all()


def test_every_box_filled_once_and_mask_never_empty(played) -> None:
    """Each box is used exactly once; every decision had at least one legal action."""
    final, _, actions, masks, _ = played
    assert masks.any(axis=-1).all()
    scored = np.sort(actions[:, 2::3] - NUM_KEEP_ACTIONS, axis=1)
    assert (scored == np.arange(13)).all()
    assert final.filled.all()


def test_rewards_sum_to_final_total(played) -> None:
    """Sum of rewards = final total = box sum + upper bonus + 100 x Yahtzee bonuses."""
    final, _, _, _, rewards = played
    totals = np.asarray(total_score(final))
    assert (rewards.sum(axis=1) == totals).all()
    recomputed = (
        final.scores.sum(1) + np.asarray(upper_bonus(final)) + 100 * final.yahtzee_bonus_count
    )
    assert (recomputed == totals).all()
    assert (rewards >= 0).all()


def test_no_yahtzee_bonus_without_fifty(played) -> None:
    """A +100 bonus only ever appears on a card whose Yahtzee box holds 50."""
    final = played[0]
    has_bonus = final.yahtzee_bonus_count > 0
    assert (final.scores[has_bonus, Category.YAHTZEE] == 50).all()


def test_dtypes_and_sorted_dice(played) -> None:
    """Engine state is int32/bool throughout; dice stay sorted faces 1..6."""
    final, states, _, masks, rewards = played
    for field in ("dice", "roll_index", "scores", "yahtzee_bonus_count", "turns_left", "reward"):
        assert getattr(final, field).dtype == np.int32, field
    assert final.filled.dtype == np.bool_ and final.terminated.dtype == np.bool_
    assert masks.dtype == np.bool_ and masks.shape[-1] == NUM_ACTIONS
    assert rewards.dtype == np.int32
    dice = states.dice
    assert (np.diff(dice, axis=-1) >= 0).all() and dice.min() >= 1 and dice.max() <= 6


def test_random_mean_is_plausible(played) -> None:
    """Random legal play scores about 46 on average (seed 001 reports 45.6 over 1,000 games)."""
    assert 40 < float(np.asarray(total_score(played[0])).mean()) < 52


def test_single_unbatched_game_matches_batched_one() -> None:
    """The unbatched game with a key equals game 0 of the vmapped batch with the same keys."""
    keys = jax.random.split(jax.random.key(3), 4)
    single_final, _ = jax.jit(play_random)(keys[0])
    batched_final, _ = jax.jit(jax.vmap(play_random))(keys)
    assert int(total_score(single_final)) == int(total_score(batched_final)[0])
    assert np.array_equal(single_final.scores, batched_final.scores[0])


def test_same_key_same_game_and_different_keys_differ() -> None:
    """Determinism per key; different keys give different dice."""
    run = jax.jit(play_random)
    first, (states_a, *_) = run(jax.random.key(11))
    second, (states_b, *_) = run(jax.random.key(11))
    _, (states_c, *_) = run(jax.random.key(12))
    assert np.array_equal(states_a.dice, states_b.dice) and np.array_equal(
        first.scores, second.scores
    )
    assert not np.array_equal(states_a.dice, states_c.dice)
    dice = np.asarray(jax.vmap(lambda k: init(k).dice)(jax.random.split(jax.random.key(0), 64)))
    assert len({tuple(d) for d in dice}) > 30


_jitted_step = jax.jit(step, static_argnums=3)
_jitted_mask = jax.jit(legal_action_mask, static_argnums=1)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), variant=st.sampled_from(list(RULE_VARIANTS)))
def test_trajectory_parity_with_reference_game(seed: int, variant: str) -> None:
    """Replay a JAX game in the plain-Python game, step by step: same legal actions, same rewards.

    The policy chases Yahtzees (keeps the most frequent face) so Joker and bonus cases occur.
    """
    rules = RULE_VARIANTS[variant]
    rng = np.random.default_rng(seed)
    key = jax.random.key(seed)
    key, init_key = jax.random.split(key)
    state = init(init_key)
    game = reference.ReferenceGame(variant)
    game.dice = np.asarray(state.dice).tolist()
    for _ in range(DECISIONS_PER_GAME):
        legal = np.flatnonzero(np.asarray(_jitted_mask(state, rules))).tolist()
        assert legal == game.legal_actions()
        if legal[0] < NUM_KEEP_ACTIONS:
            dice = game.dice
            most = max(set(dice), key=dice.count)
            action = sum(1 << i for i, die in enumerate(dice) if die == most)
            action = action if rng.random() < 0.8 else int(rng.integers(32))
        else:
            action = int(rng.choice(legal))
        key, step_key = jax.random.split(key)
        state = _jitted_step(state, jnp.int32(action), step_key, rules)
        expected_reward = game.step(action)
        game.dice = np.asarray(state.dice).tolist()  # the reference game takes the engine's dice
        assert int(state.reward) == expected_reward
    assert bool(state.terminated) and game.over
    assert int(total_score(state)) == reference.final_score(game.card, game.yahtzee_bonuses)


@pytest.mark.parametrize("random_context", [False, True])
def test_single_turn_task_is_three_decisions(random_context: bool) -> None:
    """The single-turn task runs on the same engine: keep, keep, score, then terminal."""
    keys = jax.random.split(jax.random.key(5), 256)
    states = jax.vmap(lambda k: init_single_turn(k, random_context))(keys)
    assert (states.turns_left == 1).all()
    filled_counts = np.asarray(states.filled.sum(1))
    if random_context:
        assert filled_counts.min() == 0 and filled_counts.max() == 12 and filled_counts.std() > 2
        used_scores = np.asarray(states.scores)[~np.asarray(states.filled)]
        assert (used_scores == 0).all()  # open boxes hold nothing
    else:
        assert (filled_counts == 0).all()

    def play(state: State, key: jax.Array) -> State:
        for step_key in jax.random.split(key, 3):
            policy_key, dice_key = jax.random.split(step_key)
            mask = legal_action_mask(state)
            action = jax.random.categorical(policy_key, jnp.where(mask, 0.0, -jnp.inf))
            assert_not_done = state.terminated
            state = step(state, action, dice_key)
        return state, assert_not_done

    final, done_before_last = jax.jit(jax.vmap(play))(states, keys)
    assert bool(final.terminated.all()) and not bool(done_before_last.any())
    assert (np.asarray(final.filled.sum(1)) == filled_counts + 1).all()
