"""Random legal play through the one play loop, against the game's invariants and the reference."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yahtzee_jax.envs.solitaire_play import RolloutPolicy, Transition, play, record_transition
from yahtzee_jax.game import (
    NUM_KEEP_ACTIONS,
    RULE_VARIANTS,
    Category,
    State,
    init,
    init_single_turn,
    legal_action_mask,
    reference,
    total_score,
    upper_bonus,
)
from yahtzee_jax.game.rules import DECISIONS_PER_TURN, YAHTZEE_VARIANTS, Rules

OFFICIAL = RULE_VARIANTS["official"]

# choose(state, legal_mask, key) -> int32 action, for one unbatched state
Choose = Callable[[State, jax.Array, jax.Array], jax.Array]


def masked_policy(choose: Choose, rules: Rules) -> RolloutPolicy:
    """A batch policy from a one-state `choose`; its extras are the legal masks it chose from."""

    def policy(states: State, keys: jax.Array) -> tuple[jax.Array, jax.Array]:
        masks = jax.vmap(lambda state: legal_action_mask(state, rules))(states)
        return jax.vmap(choose)(states, masks, keys), masks

    return policy


def random_legal(state: State, mask: jax.Array, key: jax.Array) -> jax.Array:
    """A uniformly random legal action."""
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)


def chase_yahtzee(state: State, mask: jax.Array, key: jax.Array) -> jax.Array:
    """Keep the most frequent face (a random keep 1 time in 5); score a random legal box."""
    explore_key, keep_key, box_key = jax.random.split(key, 3)
    counts = (state.dice[:, None] == jnp.arange(1, 7)).sum(axis=0)
    most = jnp.argmax(counts) + 1
    keep_most = jnp.where(state.dice == most, 1 << jnp.arange(5), 0).sum()
    random_keep = jax.random.randint(keep_key, (), 0, NUM_KEEP_ACTIONS)
    keep = jnp.where(jax.random.uniform(explore_key) < 0.8, keep_most, random_keep)
    return jnp.where(mask[0], keep, random_legal(state, mask, box_key)).astype(jnp.int32)


def play_random(
    keys: jax.Array, rules: Rules = OFFICIAL, task: str = "game"
) -> tuple[State, Transition]:
    """Uniformly random legal play of one episode per key: (final states, records [T, B, ...]).

    Each record holds the state before the decision, the action, its reward and, as extras, the
    legal mask the action was drawn from.
    """
    return play(masked_policy(random_legal, rules), keys, rules, task, record_transition)


def batch_major(tree):
    """Records [T, B, ...] -> [B, T, ...]: one row per game."""
    return jax.tree.map(lambda leaf: jnp.swapaxes(leaf, 0, 1), tree)


@pytest.fixture(scope="module", params=list(YAHTZEE_VARIANTS))
def played(request):
    """2,048 random games played in one batch under each rule variant in turn, one row per game.

    Returns (final states, states before each decision, actions, legal masks, rewards), the
    per-decision arrays [game, decision, ...].
    """
    rules = RULE_VARIANTS[request.param]
    keys = jax.random.split(jax.random.key(7), 2048)
    final, records = jax.jit(lambda keys: play_random(keys, rules))(keys)
    records = batch_major(records)
    return jax.device_get((final, records.state, records.action, records.extras, records.reward))


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
    totals = np.asarray(total_score(final, OFFICIAL))
    assert (rewards.sum(axis=1) == totals).all()
    recomputed = (
        final.scores.sum(1)
        + np.asarray(upper_bonus(final, OFFICIAL))
        + 100 * final.yahtzee_bonus_count
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
    assert masks.dtype == np.bool_ and masks.shape[-1] == OFFICIAL.num_actions
    assert rewards.dtype == np.int32
    dice = states.dice
    assert (np.diff(dice, axis=-1) >= 0).all() and dice.min() >= 1 and dice.max() <= 6


def test_random_mean_is_plausible(played) -> None:
    """Random legal play scores about 46 on average (seed 001 reports 45.6 over 1,000 games)."""
    assert 40 < float(np.asarray(total_score(played[0], OFFICIAL)).mean()) < 52


def tree_equal(a, b) -> bool:
    """Same tree structure and equal arrays at every leaf."""
    same_leaves = map(np.array_equal, jax.tree.leaves(a), jax.tree.leaves(b))
    return jax.tree.structure(a) == jax.tree.structure(b) and all(same_leaves)


def test_an_episode_is_the_same_game_alone_or_anywhere_in_a_batch() -> None:
    """Per-episode determinism of the play loop: each of 8 episode keys, played alone in a batch
    of 1, gives the same final score and state and the same whole record tree (states, actions,
    rewards, masks) as at its position i in a batch of 8."""
    keys = jax.random.split(jax.random.key(3), 8)
    run = jax.jit(play_random)
    batch_final, batch_records = jax.device_get(run(keys))
    alone = [jax.device_get(run(keys[i : i + 1])) for i in range(len(keys))]
    alone_final = jax.tree.map(lambda *leaves: np.concatenate(leaves), *[f for f, _ in alone])
    alone_records = jax.tree.map(
        lambda *leaves: np.concatenate(leaves, axis=1), *[r for _, r in alone]
    )
    assert np.array_equal(total_score(alone_final, OFFICIAL), total_score(batch_final, OFFICIAL))
    assert tree_equal(alone_final, batch_final)
    assert tree_equal(alone_records, batch_records)
    assert len({tuple(d) for d in batch_records.state.dice[0]}) > 1  # the 8 games differ


def test_same_key_same_game_and_different_keys_differ() -> None:
    """Determinism per key; different keys give different dice."""
    run = jax.jit(play_random)
    first, records_a = run(jax.random.key(11)[None])
    second, records_b = run(jax.random.key(11)[None])
    _, records_c = run(jax.random.key(12)[None])
    assert np.array_equal(records_a.state.dice, records_b.state.dice) and np.array_equal(
        first.scores, second.scores
    )
    assert not np.array_equal(records_a.state.dice, records_c.state.dice)
    dice = np.asarray(
        jax.vmap(lambda k: init(k, OFFICIAL).dice)(jax.random.split(jax.random.key(0), 64))
    )
    assert len({tuple(d) for d in dice}) > 30


_CHASING_GAMES: dict[str, Callable] = {}


def play_chasing_game(variant: str) -> Callable:
    """The jitted play loop of one game per key with the Yahtzee-chasing policy, per variant."""
    if variant not in _CHASING_GAMES:
        rules = RULE_VARIANTS[variant]
        policy = masked_policy(chase_yahtzee, rules)
        _CHASING_GAMES[variant] = jax.jit(lambda keys: play(policy, keys, rules))
    return _CHASING_GAMES[variant]


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), variant=st.sampled_from(list(YAHTZEE_VARIANTS)))
def test_trajectory_parity_with_reference_game(seed: int, variant: str) -> None:
    """Replay a game of the play loop in the plain-Python game, decision by decision: same legal
    actions, same rewards, same final score.

    The reference game takes the engine's dice before each decision. The policy chases Yahtzees
    (keeps the most frequent face) so Joker and bonus cases occur.
    """
    final, records = jax.device_get(play_chasing_game(variant)(jax.random.key(seed)[None]))
    game = reference.ReferenceGame(variant)
    for t in range(OFFICIAL.decisions_per_game):
        game.dice = records.state.dice[t, 0].tolist()
        legal = np.flatnonzero(records.extras[t, 0]).tolist()
        assert legal == game.legal_actions()
        assert int(records.reward[t, 0]) == game.step(int(records.action[t, 0]))
    assert bool(final.terminated[0]) and game.over
    assert int(total_score(final, OFFICIAL)[0]) == reference.final_score(
        game.card, game.yahtzee_bonuses
    )


@pytest.mark.parametrize("random_context", [False, True])
def test_single_turn_starts_with_one_turn_left(random_context: bool) -> None:
    """A single turn starts with one turn left, on an empty card or a random context whose
    number of used boxes spreads over 0..12 and whose open boxes hold nothing."""
    keys = jax.random.split(jax.random.key(5), 256)
    states = jax.vmap(lambda k: init_single_turn(k, random_context, OFFICIAL))(keys)
    assert (states.turns_left == 1).all()
    filled_counts = np.asarray(states.filled.sum(1))
    if random_context:
        assert filled_counts.min() == 0 and filled_counts.max() == 12 and filled_counts.std() > 2
        used_scores = np.asarray(states.scores)[~np.asarray(states.filled)]
        assert (used_scores == 0).all()  # open boxes hold nothing
    else:
        assert (filled_counts == 0).all()


def test_single_turn_task_is_three_decisions() -> None:
    """The single-turn task runs on the same engine through the play loop: keep, keep, score,
    then terminal with one more box used (empty cards among the random contexts included)."""
    keys = jax.random.split(jax.random.key(5), 256)
    final, records = jax.device_get(
        jax.jit(lambda keys: play_random(keys, task="single-turn"))(keys)
    )
    assert records.action.shape == (DECISIONS_PER_TURN, 256)
    assert (records.state.turns_left == 1).all()
    assert not records.state.terminated.any()  # no decision was taken on a finished turn
    assert (records.action[:2] < NUM_KEEP_ACTIONS).all()
    assert (records.action[2] >= NUM_KEEP_ACTIONS).all()
    assert final.terminated.all()
    filled_counts = records.state.filled[0].sum(1)
    assert (filled_counts == 0).any()
    assert (final.filled.sum(1) == filled_counts + 1).all()
