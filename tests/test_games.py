"""The seed papers' own games as rule data: Yacht (Chang's table), Clubhouse Yacht and Yatzy.

Each box of each game scores hand-made rolls as its rule text says (Chang's Figure 2; the
Clubhouse Games rules; yatzy-solver's docs/rules.md), the upper bonus is the game's own, and a
reading of Chang's game is tested against the mean he reports: a game whose exact optimum is
below the 185 his DQN averaged cannot be the game it played.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from positions import card

from yahtzee_jax.game import base_scores, face_counts, get_rules, total_score
from yahtzee_jax.solver import solve

# Hand-made rows: the dice, then the lower boxes in card order (the six upper boxes are each
# face's dice and are checked from the dice themselves).
YACHT_ROWS = [  # choice, four_of_a_kind, full_house, little_straight, big_straight, yacht
    ((2, 2, 3, 3, 3), (13, 0, 13, 0, 0, 0)),
    ((5, 5, 5, 5, 2), (22, 20, 0, 0, 0, 0)),  # Four-Of-A-Kind: "sum of those four dice"
    ((1, 2, 3, 4, 5), (15, 0, 0, 30, 0, 0)),
    ((2, 3, 4, 5, 6), (20, 0, 0, 0, 30, 0)),
    ((6, 6, 6, 6, 6), (30, 24, 0, 0, 0, 50)),  # five alike is no "three and two"
    ((1, 3, 4, 5, 6), (19, 0, 0, 0, 0, 0)),  # a run of four is no straight in his table
    ((1, 1, 2, 2, 4), (10, 0, 0, 0, 0, 0)),
]
CLUBHOUSE_ROWS = [  # choice, four_of_a_kind, full_house, small_straight, large_straight, yacht
    ((2, 2, 3, 3, 3), (13, 0, 13, 0, 0, 0)),
    ((5, 5, 5, 5, 2), (22, 22, 0, 0, 0, 0)),  # Four of a Kind: the sum of all five dice
    ((1, 2, 3, 4, 5), (15, 0, 0, 15, 30, 0)),  # a five-run holds a four-run
    ((2, 3, 4, 5, 6), (20, 0, 0, 15, 30, 0)),
    ((6, 6, 6, 6, 6), (30, 30, 30, 0, 0, 50)),  # five alike is a full house here
    ((1, 3, 4, 5, 6), (19, 0, 0, 15, 0, 0)),  # Chang's section 6.4: [6, 5, 4, 3, X]
    ((1, 2, 3, 4, 4), (14, 0, 0, 15, 0, 0)),
    ((1, 2, 4, 5, 6), (18, 0, 0, 0, 0, 0)),  # 4-5-6 and 1-2: no run of four
]
YATZY_ROWS = [  # one_pair, two_pairs, three_of_a_kind, four_of_a_kind, small_straight,
    # large_straight, full_house, chance, yatzy
    ((2, 2, 3, 3, 3), (6, 10, 9, 0, 0, 0, 13, 13, 0)),  # the higher pair: 3 + 3
    ((5, 5, 5, 5, 2), (10, 0, 15, 20, 0, 0, 0, 22, 0)),  # four alike is not two pairs
    ((1, 2, 3, 4, 5), (0, 0, 0, 0, 15, 0, 0, 15, 0)),
    ((2, 3, 4, 5, 6), (0, 0, 0, 0, 0, 20, 0, 20, 0)),
    ((6, 6, 6, 6, 6), (12, 0, 18, 24, 0, 0, 0, 30, 50)),  # pair, 3 and 4 alike; no house
    ((1, 1, 4, 6, 6), (12, 14, 0, 0, 0, 0, 0, 18, 0)),
    ((1, 2, 3, 4, 6), (0, 0, 0, 0, 0, 0, 0, 16, 0)),  # no four-run box in Yatzy
]
CASES = [
    (name, dice, lower)
    for name, rows in (
        ("yacht", YACHT_ROWS),
        ("yacht-clubhouse", CLUBHOUSE_ROWS),
        ("yatzy", YATZY_ROWS),
    )
    for dice, lower in rows
]


@pytest.mark.parametrize(("name", "dice", "lower"), CASES)
def test_each_box_scores_hand_made_rolls(name: str, dice: tuple, lower: tuple) -> None:
    """Every box of the game's card, upper and lower, scores the roll as its rule text says."""
    rules = get_rules(name)
    upper = [face * dice.count(face) for face in range(1, 7)]
    scores = np.asarray(base_scores(face_counts(jnp.int32(dice)), rules)).tolist()
    assert scores == upper + list(lower)
    assert [box.points(tuple(dice.count(f) for f in range(1, 7))) for box in rules.boxes] == scores


def test_the_cards_and_their_bonuses() -> None:
    """12, 12 and 15 boxes with the games' own names; +35 at 63 in Yacht, +50 in Yatzy; the
    yatzy-solver docs' maximum of 374 for Yatzy; no Yahtzee bonus or Joker in any."""
    yacht, clubhouse, yatzy = (get_rules(n) for n in ("yacht", "yacht-clubhouse", "yatzy"))
    assert (yacht.num_boxes, clubhouse.num_boxes, yatzy.num_boxes) == (12, 12, 15)
    assert yacht.box_names[6:] == (
        "choice",
        "four_of_a_kind",
        "full_house",
        "little_straight",
        "big_straight",
        "yacht",
    )
    assert clubhouse.box_names[:2] == ("aces", "deuces") and yatzy.box_names[-1] == "yatzy"
    assert yatzy.max_total_without_bonuses == 374
    for rules in (yacht, clubhouse, yatzy):
        assert not rules.yahtzee_bonus and rules.joker.value == "none"
    # Threes 9, fours 12, fives 15, sixes 24 and ones 3 = 63: the bonus, and no further points.
    upper = {0: 3, 2: 9, 3: 12, 4: 15, 5: 24}
    for rules, bonus in ((yacht, 35), (clubhouse, 35), (yatzy, 50)):
        assert int(total_score(card(scores=upper, rules=rules), rules)) == 63 + bonus
        short = {**upper, 5: 18}
        assert int(total_score(card(scores=short, rules=rules), rules)) == 57


def test_which_reading_of_changs_game_is_consistent_with_his_185(tmp_path) -> None:
    """His table's Yacht (four-of-a-kind as four dice, fixed 1-5 and 2-6 straights) cannot give
    a mean of 185: its optimum is lower. The Clubhouse reading (his section 6.4) can."""
    table_reading = solve("yacht", cache_dir=tmp_path).expected_score
    clubhouse_reading = solve("yacht-clubhouse", cache_dir=tmp_path).expected_score
    assert table_reading < 185 < clubhouse_reading
