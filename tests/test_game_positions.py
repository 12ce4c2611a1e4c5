"""Hand-made positions: each test draws a position and states the rule it pins down."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.game import (
    KEEP_ALL,
    NUM_KEEP_ACTIONS,
    RULE_VARIANTS,
    Category,
    IllegalActionError,
    State,
    legal_action_mask,
    step,
    step_checked,
    total_score,
)

KEY = jax.random.key(0)
OFFICIAL = RULE_VARIANTS["official"]
FREE_JOKER = RULE_VARIANTS["free-joker"]
NO_JOKER = RULE_VARIANTS["no-joker"]
PLAIN = RULE_VARIANTS["plain"]


def position(dice, filled=(), scores=None, roll_index=2, **fields) -> State:
    """A State with the given dice, used boxes {category: points} and roll index."""
    card = np.zeros(13, np.int32)
    used = np.zeros(13, bool)
    for category in filled:
        used[category] = True
    for category, points in (scores or {}).items():
        used[category] = True
        card[category] = points
    return State.empty(
        OFFICIAL,
        dice=jnp.int32(sorted(dice)),
        scores=jnp.asarray(card),
        filled=jnp.asarray(used),
        roll_index=jnp.int32(roll_index),
        **fields,
    )


def score(state: State, category: Category, rules=OFFICIAL) -> State:
    """Score `category` from `state`, checked."""
    return step_checked(state, NUM_KEEP_ACTIONS + int(category), KEY, rules)


def legal_boxes(state: State, rules=OFFICIAL) -> set[Category]:
    """The boxes that may be chosen in `state`."""
    mask = np.asarray(legal_action_mask(state, rules))[NUM_KEEP_ACTIONS:]
    return {Category(i) for i in np.flatnonzero(mask)}


def test_joker_large_straight_with_bonus() -> None:
    """Official rules: sixes used, Yahtzee box holds 50, roll 6-6-6-6-6.

    The Joker puts it in Large Straight at full value (40) and pays the +100 bonus: reward 140.
    """
    state = position([6] * 5, scores={Category.YAHTZEE: 50, Category.SIXES: 24})
    assert Category.LARGE_STRAIGHT in legal_boxes(state)
    after = score(state, Category.LARGE_STRAIGHT)
    assert int(after.reward) == 140
    assert int(after.scores[Category.LARGE_STRAIGHT]) == 40
    assert int(after.yahtzee_bonus_count) == 1


def test_forced_joker_must_use_matching_upper_box() -> None:
    """Official rules: Yahtzee box used, threes open, roll 3-3-3-3-3: only Threes is legal (15)."""
    state = position([3] * 5, scores={Category.YAHTZEE: 50})
    assert legal_boxes(state) == {Category.THREES}
    with pytest.raises(IllegalActionError, match="illegal action 42"):
        score(state, Category.LARGE_STRAIGHT)
    after = score(state, Category.THREES)
    assert int(after.reward) == 15 + 100


def test_forced_joker_upper_zero_when_lower_full() -> None:
    """Official rules: matching upper and every lower box used: a zero in an open upper box."""
    lower = {c: 0 for c in range(6, 13)}
    lower[Category.YAHTZEE] = 0
    state = position([2] * 5, scores={**lower, Category.TWOS: 6})
    assert legal_boxes(state) == {Category.ONES, Category.THREES, Category.FOURS} | {
        Category.FIVES,
        Category.SIXES,
    }
    after = score(state, Category.SIXES)
    assert int(after.reward) == 0  # Yahtzee box holds 0: no bonus either


def test_scratched_yahtzee_still_forces_joker_without_bonus() -> None:
    """Official rules: a 0 in the Yahtzee box still triggers the Joker, but never the +100."""
    state = position([5] * 5, scores={Category.YAHTZEE: 0, Category.FIVES: 15})
    after = score(state, Category.FULL_HOUSE)
    assert int(after.reward) == 25
    assert int(after.yahtzee_bonus_count) == 0


def test_free_joker_full_value_needs_matching_upper_used() -> None:
    """Free-joker rules: any box is legal; 4-4-4-4-4 is a 25 Full House only once fours is used."""
    open_fours = position([4] * 5, scores={Category.YAHTZEE: 50})
    assert len(legal_boxes(open_fours, FREE_JOKER)) == 12
    assert int(score(open_fours, Category.FULL_HOUSE, FREE_JOKER).reward) == 0 + 100
    used_fours = position([4] * 5, scores={Category.YAHTZEE: 50, Category.FOURS: 12})
    assert int(score(used_fours, Category.FULL_HOUSE, FREE_JOKER).reward) == 25 + 100


def test_five_of_a_kind_is_not_a_full_house_without_joker() -> None:
    """Yahtzee box open: 2-2-2-2-2 in Full House scores 0 (no Full House by the printed rule)."""
    state = position([2] * 5)
    assert int(score(state, Category.FULL_HOUSE).reward) == 0


def test_no_joker_pays_bonus_but_no_joker_values() -> None:
    """No-joker rules: a second Yahtzee pays +100, but a straight box still scores 0 for it."""
    state = position([1] * 5, scores={Category.YAHTZEE: 50})
    after = score(state, Category.SMALL_STRAIGHT, NO_JOKER)
    assert int(after.reward) == 100
    assert int(after.scores[Category.SMALL_STRAIGHT]) == 0


def test_plain_rules_never_pay_yahtzee_bonus() -> None:
    """Plain rules (seeds 001/003): a second Yahtzee in Chance scores only the dice total."""
    state = position([6] * 5, scores={Category.YAHTZEE: 50})
    after = score(state, Category.CHANCE, PLAIN)
    assert int(after.reward) == 30
    assert int(after.yahtzee_bonus_count) == 0


def test_upper_bonus_at_exactly_63() -> None:
    """Upper boxes hold 54 (ones 3, twos 6, fours 12, fives 15, sixes 18); three 3s in Threes -> 63.

    The step that reaches exactly 63 pays 9 + 35; a card reaching only 62 pays no bonus.
    """
    card = {Category.ONES: 3, Category.TWOS: 6, Category.FOURS: 12, Category.FIVES: 15}
    card[Category.SIXES] = 18  # 54 so far
    reaching = position([1, 2, 3, 3, 3], scores=card)
    after = score(reaching, Category.THREES)
    assert int(after.reward) == 9 + 35
    short = position([1, 2, 2, 3, 3], scores=card)
    assert int(score(short, Category.THREES).reward) == 6


def test_bonus_not_counted_twice_above_63() -> None:
    """Upper total already 70 (bonus earned): another upper box pays only its points."""
    card = {Category.SIXES: 30, Category.FIVES: 25, Category.FOURS: 15}
    after = score(position([1, 1, 2, 3, 4], scores=card), Category.ONES)
    assert int(after.reward) == 2
    assert int(total_score(after, OFFICIAL)) == 30 + 25 + 15 + 2 + 35


def test_yahtzee_bonus_not_toward_upper_63() -> None:
    """The +100 goes to the total, never to the upper sum: Threes gets 15, upper total 15."""
    state = position([3] * 5, scores={Category.YAHTZEE: 50})
    after = score(state, Category.THREES)
    assert int(jnp.sum(after.scores[:6])) == 15


def test_keep_all_keeps_dice_and_advances_roll() -> None:
    """Keeping all five dice (action 31) is legal and leaves the dice as they are."""
    state = position([1, 2, 3, 4, 6], roll_index=0)
    after = step_checked(state, KEEP_ALL, KEY, OFFICIAL)
    assert after.dice.tolist() == [1, 2, 3, 4, 6]
    assert int(after.roll_index) == 1 and int(after.reward) == 0


def test_keep_mask_bits_follow_sorted_positions() -> None:
    """Bit i keeps sorted die i: keeping bits 0 and 4 of 1-2-3-4-6 keeps the 1 and the 6."""
    state = position([6, 1, 4, 3, 2], roll_index=1)
    for seed in range(20):
        after = step(state, jnp.int32(0b10001), jax.random.key(seed), OFFICIAL)
        dice = after.dice.tolist()
        assert dice == sorted(dice)
        assert 1 in dice and 6 in dice


def test_scoring_box_then_next_turn_starts() -> None:
    """After a score the next turn starts at roll 0 with fresh sorted dice and one turn fewer."""
    after = score(position([2, 2, 3, 3, 3]), Category.FULL_HOUSE)
    assert int(after.roll_index) == 0 and int(after.turns_left) == 12
    assert after.dice.tolist() == sorted(after.dice.tolist())
    assert not bool(after.terminated)


def test_illegal_actions_leave_state_unchanged() -> None:
    """Unchecked `step`: scoring during a keep decision, keeping during a score decision, a used
    box, or an out-of-range action returns the same state with reward 0."""
    keep_phase = position([1, 1, 2, 5, 6], roll_index=0, reward=jnp.int32(7))
    score_phase = position([1, 1, 2, 5, 6], scores={Category.CHANCE: 20})
    cases = [
        (keep_phase, NUM_KEEP_ACTIONS + 0),
        (score_phase, 3),
        (score_phase, NUM_KEEP_ACTIONS + int(Category.CHANCE)),
        (score_phase, 45),
        (score_phase, -1),
    ]
    for state, action in cases:
        after = step(state, jnp.int32(action), KEY, OFFICIAL)
        assert int(after.reward) == 0
        for field in ("dice", "roll_index", "scores", "filled", "turns_left", "terminated"):
            assert np.array_equal(getattr(after, field), getattr(state, field)), (action, field)


def test_checked_step_names_the_problem() -> None:
    """`step_checked` raises with the action, the phase and the legal choices."""
    state = position([1, 1, 2, 5, 6], scores={Category.CHANCE: 20})
    with pytest.raises(IllegalActionError, match=r"score chance.*score decision"):
        step_checked(state, NUM_KEEP_ACTIONS + int(Category.CHANCE), KEY, OFFICIAL)
    with pytest.raises(IllegalActionError, match="out-of-range"):
        step_checked(state, 99, KEY, OFFICIAL)
    over = state.replace(terminated=jnp.bool_(True))
    with pytest.raises(IllegalActionError, match="game is over"):
        step_checked(over, 0, KEY, OFFICIAL)


def test_terminated_state_steps_to_itself() -> None:
    """Last box scored: terminated, all actions 'legal' (pgx convention), stepping is a no-op."""
    card = {c: 0 for c in range(12)}
    state = position([6, 6, 6, 5, 5], scores=card, turns_left=jnp.int32(1))
    final = score(state, Category.CHANCE)
    assert bool(final.terminated) and int(final.reward) == 28
    assert bool(legal_action_mask(final, OFFICIAL).all())
    again = step(final, jnp.int32(0), KEY, OFFICIAL)
    assert int(again.reward) == 0 and np.array_equal(again.dice, final.dice)
