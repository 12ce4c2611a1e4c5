"""The distinct turn ends of writing a roll in a box (`moments.distinct_turn_ends`): what the
target-seeker's keeps value once each and spread to the 252 rolls x boxes. Each roll and box
must lead, on every card, to its turn end's reward and next state: checked entry by entry
against the scoring of the roll in the box, under the rule sets with and without the Joker
and the Yahtzee bonus."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from yahtzee_jax.game import reference
from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver.final_rolls import score_transition
from yahtzee_jax.solver.moments import distinct_next_states, distinct_turn_ends
from yahtzee_jax.solver.position import card_context
from yahtzee_jax.solver.widget_tables import YAHTZEE_ROLLS, score_all_rolls


def random_cards(rules, rng: np.random.Generator, count: int):
    """Cards (filled, scores) with some boxes open, the five of a kind's box empty, 0 or its
    score (the Joker and the bonus apply on some), upper boxes filled toward the bonus."""
    for _ in range(count):
        filled = rng.random(rules.num_boxes) < rng.random()
        filled[rng.integers(rules.num_boxes)] = False  # a box open
        scores = np.where(
            np.arange(rules.num_boxes) < rules.num_upper,
            rng.integers(0, 6, rules.num_boxes) * (np.arange(rules.num_boxes) + 1),
            rng.integers(0, 31, rules.num_boxes),
        )
        scores[rules.yahtzee_box] = rng.choice([0, rules.yahtzee_score])
        yield filled, np.where(filled, scores, 0)


@pytest.mark.parametrize("variant", ["official", "free-joker", "no-joker", "yatzy", "yacht"])
def test_each_roll_and_box_leads_to_its_turn_ends_reward_and_state(variant):
    """On 60 random cards, writing each roll in each legal box gives the reward (bonuses
    included) and the next state (mask, upper total, flag) of the roll and box that stand for
    its turn end; a five of a kind's entries are turn ends of their own."""
    rules = get_rules(variant)
    ends = distinct_turn_ends(rules)
    boxes = np.arange(rules.num_boxes)
    assert np.all(ends.of_roll[ends.roll, ends.box] == np.arange(len(ends.roll)))
    fives = ends.of_roll[YAHTZEE_ROLLS].ravel()
    others = np.delete(ends.of_roll, YAHTZEE_ROLLS, axis=0)
    assert len(set(fives)) == fives.size and not np.isin(fives, others).any()
    for filled, scores in random_cards(rules, np.random.default_rng(7), 60):
        mask, upper, flag = card_context(filled, scores, np, rules)
        points, legal, bonus = score_all_rolls(filled, scores[rules.yahtzee_box], rules)
        reward, uppers, flags = score_transition(boxes[None], points, upper, flag, np, rules)
        reward = reward + rules.yahtzee_bonus_points * bonus[:, None]
        masks, next_uppers, next_flags = distinct_next_states(mask, upper, flag, np, rules)
        stands = ends.of_roll
        rolls, columns = ends.roll[stands], ends.box[stands]
        for entry, of_end in (
            (reward, reward[rolls, columns]),
            (np.broadcast_to(mask | (1 << boxes), reward.shape), masks[ends.state[stands]]),
            (uppers, next_uppers[ends.state[stands]]),
            (flags, next_flags[ends.state[stands]]),
        ):
            np.testing.assert_array_equal(np.where(legal, entry, 0), np.where(legal, of_end, 0))


def test_yahtzee_has_187_turn_ends():
    """Official Yahtzee: the distinct (box, points) of the 246 rolls that are no five of a kind,
    scored by the plain-Python reference game (109), and each of the six fives in each of
    the 13 boxes (78)."""
    rules = get_rules("official")
    rolls = sorted({tuple(sorted(r)) for r in itertools.product(range(1, 7), repeat=5)})
    kinds = {
        (box, reference.raw_score(list(roll), box))
        for roll in rolls
        if len(set(roll)) > 1
        for box in rules.box_names
    }
    assert len(kinds) == 109
    assert len(distinct_turn_ends(rules).roll) == len(kinds) + 6 * rules.num_boxes == 187
