"""The N-player match: turn order, end of game, cards apart, outcome, keys, vmap/jit, dtypes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from positions import card

from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs.features import feature_size, features
from yahtzee_jax.envs.match_env import Match, Seat
from yahtzee_jax.envs.opponent_features import (
    features_per_opponent,
    match_feature_size,
    match_features,
    opponent_features,
)
from yahtzee_jax.envs.rollout import rollout
from yahtzee_jax.envs.solitaire_play import agent_policy, episode_keys, play
from yahtzee_jax.game import (
    KEEP_ALL,
    NUM_KEEP_ACTIONS,
    OFFICIAL,
    Category,
    State,
    current_score_options,
    init,
    legal_action_mask,
    total_score,
)
from yahtzee_jax.game import multiplayer as mp

KEY = jax.random.key(0)


def match(*cards: State, current_player: int = 0) -> mp.MatchState:
    """A match of the given cards with `current_player` on turn."""
    return mp.MatchState(
        cards=mp.stack_cards(cards),
        current_player=jnp.int32(current_player),
        rewards=jnp.zeros(len(cards), jnp.int32),
    )


def score_first_legal_box(state: mp.MatchState, key: jax.Array) -> mp.MatchState:
    """Keep everything at keep decisions; score the first legal box at the scoring decision."""
    mask = mp.legal_action_mask(state, OFFICIAL)
    first_box = NUM_KEEP_ACTIONS + jnp.argmax(mask[NUM_KEEP_ACTIONS:])
    return mp.step(state, jnp.where(mask[0], KEEP_ALL, first_box), key, OFFICIAL)


def same_tree(a, b) -> bool:
    """Every leaf of two pytrees equal."""
    return all(jax.tree.leaves(jax.tree.map(lambda x, y: bool(jnp.array_equal(x, y)), a, b)))


@pytest.mark.parametrize("num_players", [2, 3])
def test_turn_order_and_end_after_13_turns_each(num_players: int) -> None:
    """Decision d belongs to seat (d // 3) mod P: keep, keep, score, then the next seat.

    The match lasts exactly 39 x P decisions: not terminated before the last one, terminated
    after it with every card full, and then a further step changes nothing but the rewards (0).
    """
    step = jax.jit(score_first_legal_box)
    state = mp.init(KEY, num_players, False, OFFICIAL)
    total_decisions = OFFICIAL.decisions_per_game * num_players
    for decision in range(total_decisions):
        assert not bool(state.terminated)
        assert int(state.current_player) == (decision // 3) % num_players
        state = step(state, jax.random.fold_in(KEY, decision))
    assert bool(state.terminated)
    assert np.asarray(state.cards.filled).all()
    assert np.asarray(state.cards.terminated).all()
    after = step(state, KEY)
    assert same_tree(after.cards.replace(reward=state.cards.reward), state.cards)
    assert np.asarray(after.rewards).tolist() == [0] * num_players
    assert np.asarray(after.cards.reward).tolist() == [0] * num_players


def test_joker_on_opponents_turn_does_not_touch_my_card() -> None:
    """Seat 1 on turn rolls 6-6-6-6-6 with sixes used and 50 in Yahtzee (official Joker).

        seat 0 (me):  dice 2 3 4 5 6, chance 20, nothing else
        seat 1:       dice 6 6 6 6 6, Yahtzee 50, sixes 24 -> Large Straight 40 + bonus 100

    Seat 1 gets reward 140 and one Yahtzee bonus; my card is bit-identical, my reward 0, and the
    turn passes to me.
    """
    mine = card((2, 3, 4, 5, 6), scores={Category.CHANCE: 20})
    theirs = card((6,) * 5, scores={Category.YAHTZEE: 50, Category.SIXES: 24}, roll_index=2)
    state = match(mine, theirs, current_player=1)
    large_straight = NUM_KEEP_ACTIONS + Category.LARGE_STRAIGHT
    assert bool(mp.legal_action_mask(state, OFFICIAL)[large_straight])
    after = mp.step(state, jnp.int32(large_straight), KEY, OFFICIAL)
    assert np.asarray(after.rewards).tolist() == [0, 140]
    assert int(after.cards.yahtzee_bonus_count[1]) == 1
    assert same_tree(mp.card(after, 0), mine)
    assert int(after.current_player) == 0


def test_legal_mask_is_the_current_players() -> None:
    """Seat 0 at a scoring decision, seat 1 (on turn) at a keep decision: keeps are legal."""
    state = match(card(roll_index=2), card(roll_index=0), current_player=1)
    mask = np.asarray(mp.legal_action_mask(state, OFFICIAL))
    assert mask[:NUM_KEEP_ACTIONS].all() and not mask[NUM_KEEP_ACTIONS:].any()
    assert np.array_equal(mask, np.asarray(legal_action_mask(mp.card(state, 1), OFFICIAL)))


def test_illegal_action_leaves_the_match_unchanged() -> None:
    """A score action at seat 0's keep decision is a no-op: same cards, same seat, zero rewards."""
    state = mp.init(KEY, 2, False, OFFICIAL)
    after = mp.step(state, jnp.int32(NUM_KEEP_ACTIONS), KEY, OFFICIAL)
    assert same_tree(after.cards, state.cards)
    assert int(after.current_player) == 0
    assert np.asarray(after.rewards).tolist() == [0, 0]


def full_card(chance: int, **fields) -> State:
    """A full card: every box 0 except Chance, so the total is `chance` (plus bonuses)."""
    points = np.zeros(13, np.int32)
    points[Category.CHANCE] = chance
    return State(
        scores=jnp.asarray(points),
        filled=jnp.ones(13, bool),
        turns_left=jnp.int32(0),
        terminated=jnp.bool_(True),
        **fields,
    )


def test_outcome_win_loss_draw_and_margins() -> None:
    """Totals 25 / 20: win +5 and loss -5; totals 25 / 25 / 20: two draws and a loss by 5.

    A Yahtzee bonus counts: 20 + one bonus (120) beats 25 by 95.
    """
    result = mp.outcome(match(full_card(25), full_card(20)), OFFICIAL)
    assert np.asarray(result.results).tolist() == [mp.WIN, mp.LOSS]
    assert np.asarray(result.margins).tolist() == [5, -5]
    three = mp.outcome(match(full_card(25), full_card(25), full_card(20)), OFFICIAL)
    assert np.asarray(three.results).tolist() == [mp.DRAW, mp.DRAW, mp.LOSS]
    assert np.asarray(three.margins).tolist() == [0, 0, -5]
    bonus = mp.outcome(
        match(full_card(25), full_card(20, yahtzee_bonus_count=jnp.int32(1))), OFFICIAL
    )
    assert np.asarray(bonus.results).tolist() == [mp.LOSS, mp.WIN]
    assert np.asarray(bonus.margins).tolist() == [-95, 95]


def random_match(key: jax.Array) -> mp.MatchState:
    """A whole two-player match of uniformly random legal actions, as one pure function."""
    init_key, play_key = jax.random.split(key)

    def decide(state: mp.MatchState, decision: jax.Array) -> tuple[mp.MatchState, None]:
        policy_key, dice_key = jax.random.split(jax.random.fold_in(play_key, decision))
        mask = mp.legal_action_mask(state, OFFICIAL)
        action = jax.random.categorical(policy_key, jnp.where(mask, 0.0, -jnp.inf))
        return mp.step(state, action, dice_key, OFFICIAL), None

    final, _ = jax.lax.scan(
        decide, mp.init(init_key, 2, False, OFFICIAL), jnp.arange(2 * OFFICIAL.decisions_per_game)
    )
    return final


def test_deterministic_per_key_and_vmap_jit_agree_with_single_games() -> None:
    """The same key gives the same match; a jitted vmap over keys gives each key's own match."""
    keys = jax.random.split(KEY, 4)
    batched = jax.jit(jax.vmap(random_match))(keys)
    assert np.asarray(batched.terminated).all()
    one_match = jax.jit(random_match)
    for index in range(len(keys)):
        single = one_match(keys[index])
        assert same_tree(single, jax.tree.map(lambda field, i=index: field[i], batched))
    again = jax.jit(jax.vmap(random_match))(keys)
    assert same_tree(again, batched)
    assert not np.array_equal(
        np.asarray(batched.cards.scores[0]), np.asarray(batched.cards.scores[1])
    )


def test_dtypes_and_shapes() -> None:
    """int32 counters and scores, bool flags, a player axis of P on every card field."""
    state = mp.step(mp.init(KEY, 3, False, OFFICIAL), jnp.int32(KEEP_ALL), KEY, OFFICIAL)
    assert state.current_player.dtype == jnp.int32 and state.current_player.shape == ()
    assert state.rewards.dtype == jnp.int32 and state.rewards.shape == (3,)
    assert state.terminated.dtype == jnp.bool_
    assert state.cards.dice.shape == (3, 5) and state.cards.dice.dtype == jnp.int32
    assert state.cards.filled.dtype == jnp.bool_ and state.cards.scores.shape == (3, 13)
    result = mp.outcome(state, OFFICIAL)
    assert result.results.dtype == jnp.int32 and result.margins.dtype == jnp.int32


def test_init_common_dice_and_separate_dice() -> None:
    """Common dice: every card opens with the same roll; otherwise seat p's from fold_in(key, p)."""
    common = mp.init(KEY, 3, True, OFFICIAL)
    assert (np.asarray(common.cards.dice) == np.asarray(common.cards.dice[0])).all()
    separate = mp.init(KEY, 2, False, OFFICIAL)
    for seat in range(2):
        expected = init(jax.random.fold_in(KEY, seat), OFFICIAL).dice
        assert np.array_equal(np.asarray(separate.cards.dice[seat]), np.asarray(expected))


def test_opening_puts_seat_0_on_turn_with_nothing_gained() -> None:
    """A match's opening from three hand-made cards: seat 0 on turn, no seat has gained a
    point, the match is on, and each seat's card is the one it was given."""
    cards = [card(dice=(1, 1, 1, 1, 1)), card(dice=(2, 3, 4, 5, 6)), card(dice=(6, 6, 6, 6, 6))]
    opened = mp.opening(mp.stack_cards(cards))
    assert int(opened.current_player) == 0 and not bool(opened.terminated)
    assert opened.rewards.dtype == jnp.int32 and opened.rewards.tolist() == [0, 0, 0]
    assert opened.num_players == 3
    for seat, given in enumerate(cards):
        assert same_tree(mp.card(opened, seat), given)


def keep_all_first_box(params: None, state: State, key: jax.Array) -> jax.Array:
    """A deterministic one-card agent: never re-roll, score the first legal box."""
    mask = legal_action_mask(state, OFFICIAL)
    return jnp.where(mask[0], KEEP_ALL, NUM_KEEP_ACTIONS + jnp.argmax(mask[NUM_KEEP_ACTIONS:]))


def chase_sixes_best_box(params: None, state: State, key: jax.Array) -> jax.Array:
    """Another: keep the sixes, score the legal box worth most now (first of the ties)."""
    points, legal, _ = current_score_options(state, OFFICIAL)
    keep_sixes = jnp.sum(jnp.where(state.dice == 6, 1 << jnp.arange(5), 0))
    best_box = NUM_KEEP_ACTIONS + jnp.argmax(jnp.where(legal, points, -1))
    return jnp.where(state.roll_index < 2, keep_sixes, best_box).astype(jnp.int32)


def batched(act):
    """A one-card act as a policy (the one signature): vmapped, the other cards not read."""
    return lambda params, own, others, keys: jax.vmap(act, in_axes=(None, 0, 0))(None, own, keys)


def test_match_of_solitaire_agents_is_solitaire_games_from_the_same_key() -> None:
    """The match environment with common dice, three players: 'first' in the learner's seat,
    'sixes' and 'first' after it, each lane group seating the learner differently.

    Each seat's final total equals its agent's solitaire game from the same key (the play loop
    of `evaluate`), whatever the seat: the tournament's shortcut of comparing solitaire games is
    exact, and the two 'first' seats play identical games.
    """
    keys = episode_keys(KEY, 0, 16)
    agents = {"first": keep_all_first_box, "sixes": chase_sixes_best_box}

    @jax.jit
    def solitaire_totals(keys: jax.Array) -> dict[str, jax.Array]:
        return {
            name: total_score(play(agent_policy(batched(act), None), keys, OFFICIAL)[0], OFFICIAL)
            for name, act in agents.items()
        }

    solo = {name: np.asarray(totals) for name, totals in solitaire_totals(keys).items()}
    assert not np.array_equal(solo["first"], solo["sixes"])
    seats = ("first", "sixes", "first")  # the learner's, then the next two players'
    opponents = tuple(Seat(name, batched(agents[name])) for name in seats[1:])
    env = Match(OFFICIAL, FeatureConfig(), opponents, players=3, reward="score", common_dice=True)
    learner = agent_policy(batched(agents[seats[0]]), None)
    final, _, _ = jax.jit(lambda keys: rollout(env, learner, keys))(keys)
    assert np.asarray(final.card.terminated).all() and np.asarray(final.others.terminated).all()
    assert np.array_equal(total_score(final.card, OFFICIAL), solo[seats[0]])
    for k, name in enumerate(seats[1:]):
        others = total_score(final.others, OFFICIAL)  # sums each card's own boxes
        assert np.array_equal(others[:, k], solo[name])


def test_opponent_features_by_hand() -> None:
    """Me (seat 0): Chance 20. Opponent: Sixes 30, Fives 25 (upper 55), Chance 10 -> total 65.

    Seen from seat 0: opponent open = all but Fives, Sixes, Chance; upper 55/63;
    difference (20 - 65) / 375. Seen from seat 1: my 12 open boxes, upper 0, +45 / 375.
    """
    mine = card(scores={Category.CHANCE: 20})
    theirs = card(scores={Category.SIXES: 30, Category.FIVES: 25, Category.CHANCE: 10})
    state = match(mine, theirs)
    from_me = np.asarray(opponent_features(state, 0, OFFICIAL))
    assert from_me.shape == (features_per_opponent(OFFICIAL),) and from_me.dtype == np.float32
    expected_open = np.ones(13)
    expected_open[[Category.FIVES, Category.SIXES, Category.CHANCE]] = 0
    assert np.array_equal(from_me[:13], expected_open)
    assert from_me[13] == pytest.approx(55 / 63)
    assert from_me[14] == pytest.approx(-45 / 375)
    from_them = np.asarray(opponent_features(state, 1, OFFICIAL))
    assert from_them[:13].sum() == 12 and from_them[13] == 0.0
    assert from_them[14] == pytest.approx(45 / 375)


def test_opponent_features_clip_and_order_with_three_players() -> None:
    """Three seats; seat 2's opponents come in the order 0 then 1. A 500-point lead clips to 1."""
    rich = card(scores={Category.CHANCE: 30}, yahtzee_bonus_count=jnp.int32(5))  # 530
    state = match(card(scores={Category.ONES: 3}), card(), rich)
    seen = np.asarray(opponent_features(state, 2, OFFICIAL)).reshape(
        2, features_per_opponent(OFFICIAL)
    )
    assert seen[0, Category.ONES] == 0.0 and seen[1, :13].all()  # seat 0 first, then seat 1
    assert seen[0, 14] == 1.0 and seen[1, 14] == 1.0


def test_match_features_are_solitaire_features_then_opponents() -> None:
    """The switch: own card's solitaire vector unchanged, opponent groups appended only when on."""
    config = FeatureConfig()
    state = mp.init(KEY, 2, False, OFFICIAL)
    own = np.asarray(features(mp.card(state, 1), config, OFFICIAL))
    with_opponents = np.asarray(match_features(state, 1, config, OFFICIAL))
    assert with_opponents.shape == (match_feature_size(config, 2, True, OFFICIAL),)
    assert np.array_equal(with_opponents[: feature_size(config, OFFICIAL)], own)
    without = np.asarray(match_features(state, 1, config, OFFICIAL, opponents=False))
    assert np.array_equal(without, own)
    assert match_feature_size(config, 2, False, OFFICIAL) == feature_size(config, OFFICIAL)


def test_a_match_line_names_the_best_opponent_when_there_are_several() -> None:
    """The one line `match` prints: with two or more opponents the score beside the player's is
    the best of theirs, and says so (it said "opponent", found by a review session)."""
    from yahtzee_jax.evaluation.matches import format_result

    result = {
        "opponent": "optimal", "win_rate": 0.35, "win_interval_95": [0.34, 0.36], "draws": 5,
        "games": 1000, "mean_score": 247.7, "score_stderr": 0.4, "opponent_mean_score": 284.3,
        "mean_margin": -37.4,
    }  # fmt: skip
    assert "(opponent 284.30)" in format_result("p", {**result, "players": 2})
    assert "(best opponent 284.30)" in format_result("p", {**result, "players": 3})
