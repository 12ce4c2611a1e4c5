"""The best play of the discounted game (`solver.discounted`): what a learner that discounts
by gamma at every decision maximises, checked against plain-Python enumeration of the same
discounted sum, and played by the native player."""

from __future__ import annotations

import functools
import json
import sys

import numpy as np
import pytest
from positions import card_state, card_without, enumerated_turn, seven_box_rules
from scripts import EXPERIMENTS, load_experiment_script

from yahtzee_jax.errors import UserError
from yahtzee_jax.game import reference
from yahtzee_jax.game.rules import OFFICIAL
from yahtzee_jax.solver.discounted import policy_table, solve_discounted
from yahtzee_jax.solver.native_play import play_optimal
from yahtzee_jax.solver.value_table import solve_value_table

GAMMA = 0.9  # far from 1, so that a wrong power of it shows


def discounted_brute_force(card: dict[str, int], gamma: float) -> float:
    """The best discounted sum to come from a turn start, plain Python: each decision's reward
    (a box's points, the 35 when the box lifts the upper total to 63, a +100 Yahtzee bonus)
    discounted by gamma per decision, two keeps and a box a turn."""

    def upper(card: dict[str, int]) -> int:
        return sum(points for box, points in card.items() if box in reference.BOXES[:6])

    @functools.cache
    def turn_value(card_items: frozenset) -> float:
        card = dict(card_items)
        if len(card) == len(reference.BOXES):
            return 0.0

        @functools.cache
        def score_now(dice: tuple[int, ...]) -> float:
            best = -np.inf
            for box, (points, bonus) in reference.choices(list(dice), card, "official").items():
                after = card | {box: points}
                crossed = 35 if upper(card) < 63 <= upper(after) else 0
                best = max(
                    best, points + crossed + bonus + gamma * turn_value(frozenset(after.items()))
                )
            return best

        return enumerated_turn(score_now, gamma)

    return turn_value(frozenset(card.items()))


@pytest.fixture(scope="module")
def endgame_table() -> np.ndarray:
    """The discounted solve of official cards with at most two open boxes."""
    return solve_discounted(OFFICIAL, GAMMA, down_to_filled=11)


@pytest.mark.parametrize(
    "card",
    [
        # upper total 57, fours open: the 35 is paid (and discounted) at the box that makes 63
        card_without("fours", "full_house", ones=3, sixes=24),
        # 50 in the Yahtzee box: a Joker's +100 and its forced box, discounted with it
        card_without("sixes", "full_house", yahtzee=50, ones=3),
        card_without("yahtzee", "large_straight"),
    ],
    ids=["bonus-crossing", "joker", "chase"],
)
def test_end_games_match_discounted_enumeration(endgame_table, card):
    """Two open boxes: the solve equals the enumerated best discounted sum to 1e-9."""
    expected = discounted_brute_force(card, GAMMA)
    assert endgame_table[card_state(card)] == pytest.approx(expected, abs=1e-9)


def test_last_box_is_the_turn_discounted_twice(endgame_table):
    """Chance alone open: the best three-roll Chance is 70/3 points (each die kept from 5 up on
    the first re-roll and from 4.25 up on the second: 14/3 a die), earned at the turn's third
    decision, so worth gamma^2 x 70/3 from the turn start."""
    card = card_without("chance")
    assert endgame_table[card_state(card)] == pytest.approx(GAMMA**2 * 70 / 3, abs=1e-12)


def test_gamma_one_is_the_solver_table_bit_for_bit():
    """Without a discount the solve is the optimum's table to the last bit."""
    np.testing.assert_array_equal(
        solve_discounted(OFFICIAL, 1.0, down_to_filled=10),
        solve_value_table(OFFICIAL, down_to_filled=10),
    )


def test_policy_table_plays_the_optimum_at_gamma_one_and_less_below(tmp_path):
    """On the seven-box game: the policy table of gamma = 1 plays the optimal agent's games
    exactly (same dice, same choices); a strong discount plays other choices and scores less
    on the same dice."""
    rules = seven_box_rules("seven")
    optimal = play_optimal(rules, 4000, 5, cache_dir=tmp_path, threads=1)
    same = play_optimal(
        rules, 4000, 5, cache_dir=tmp_path, threads=1, value_table=policy_table(rules, 1.0)
    )
    np.testing.assert_array_equal(same.total, optimal.total)
    np.testing.assert_array_equal(same.turn_categories, optimal.turn_categories)
    hasty = play_optimal(
        rules, 4000, 5, cache_dir=tmp_path, threads=1, value_table=policy_table(rules, 0.5)
    )
    assert (hasty.turn_categories != optimal.turn_categories).any()
    assert hasty.total.mean() < optimal.total.mean()


def test_refusals(tmp_path):
    """A discount outside (0, 1] and a table of the wrong shape are refused in one line."""
    with pytest.raises(UserError, match=r"gamma=0.0 must be in \(0, 1\]"):
        solve_discounted(OFFICIAL, 0.0)
    with pytest.raises(UserError, match=r"gamma=1.5 must be in \(0, 1\]"):
        solve_discounted(OFFICIAL, 1.5)
    rules = seven_box_rules("seven")
    with pytest.raises(UserError, match="value_table has shape"):
        play_optimal(rules, 10, 0, cache_dir=tmp_path, value_table=np.zeros((2, 2, 2)))


@pytest.mark.slow  # an experiment script; the discounted solve stays fast above (by enumeration)
def test_script_writes_each_gamma(tmp_path, monkeypatch):
    """`experiments/discounted_optimum.py` writes one row a gamma with its machine; gamma 1's
    discounted value is the published optimum 254.5877287345."""
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    script = load_experiment_script("discounted_optimum")
    out = tmp_path / "results.json"
    argv = ["discounted_optimum.py", "--gammas", "1", "--games", "200", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    script.main()
    results = json.loads(out.read_text())
    (row,) = results["rows"]
    assert row["gamma"] == 1.0 and row["games"] == 200
    assert row["discounted_value"] == pytest.approx(254.5877287345, abs=1e-9)
    assert row["under_optimum"] == 0.0
    assert "cpu" in results["machine"] and "discounted_optimum.py" in results["machine"]["command"]
