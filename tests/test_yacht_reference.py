"""The solver on the two Yacht games against a brute-force expectimax written from the rules.

The reference below shares nothing with the package but the box names: it scores dice from the
rule text (Chang's table; Clubhouse Games' Yacht), plays a turn as three rolls (each of the 6^k
ordered outcomes of k re-rolled dice, each of the 32 subsets of positions kept) and tracks the
upper total uncapped. It values reduced games, the last 2-4 turns of a card with the other boxes
filled, and each must equal the solver's value of that turn-start state.
Two- and three-box games run in `make test`, four-box games are slow.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

from yahtzee_jax.game import get_rules
from yahtzee_jax.solver.value_table import solve_value_table

UPPER = {
    "yacht": ("ones", "twos", "threes", "fours", "fives", "sixes"),
    "yacht-clubhouse": ("aces", "deuces", "threes", "fours", "fives", "sixes"),
}
BONUS_AT, BONUS = 63, 35


def yacht_points(game: str, box: str, dice: tuple[int, ...]) -> int:
    """Points of five dice in a box, straight from the game's rule text."""
    counts, total, faces = Counter(dice), sum(dice), set(dice)
    if box in UPPER[game]:
        face = UPPER[game].index(box) + 1
        return face * counts[face]
    clubhouse = game == "yacht-clubhouse"
    if box == "choice":
        return total
    if box == "yacht":
        return 50 if len(counts) == 1 else 0
    if box == "four_of_a_kind":  # Chang: "sum of those four dice"; Clubhouse: of all five
        four = [face for face, count in counts.items() if count >= 4]
        return (total if clubhouse else 4 * four[0]) if four else 0
    if box == "full_house":  # three and two; Clubhouse also takes five alike
        shape = sorted(counts.values())
        return total if shape == [2, 3] or (clubhouse and shape == [5]) else 0
    if box == "little_straight":
        return 30 if faces == {1, 2, 3, 4, 5} else 0
    if box == "big_straight":
        return 30 if faces == {2, 3, 4, 5, 6} else 0
    if box == "small_straight":  # any four in a row
        return 15 if any(set(range(low, low + 4)) <= faces for low in (1, 2, 3)) else 0
    if box == "large_straight":  # five in a row
        return 30 if faces in ({1, 2, 3, 4, 5}, {2, 3, 4, 5, 6}) else 0
    raise AssertionError(box)


@functools.cache
def rerolls(k: int) -> tuple[tuple[tuple[int, ...], int], ...]:
    """The 6^k equally likely ordered outcomes of k dice, counted by the faces they show."""
    return tuple(
        Counter(tuple(sorted(o)) for o in itertools.product(range(1, 7), repeat=k)).items()
    )


def mean_over_rerolls(kept: tuple[int, ...], value: Callable[[tuple[int, ...]], float]) -> float:
    """Mean of `value` over the 6^k equally likely outcomes of re-rolling the other dice."""
    k = 5 - len(kept)
    return sum(ways * value(tuple(sorted(kept + faces))) for faces, ways in rerolls(k)) / 6**k


def best_keep(dice: tuple[int, ...], kept_value: Callable[[tuple[int, ...]], float]) -> float:
    """The best of keeping each of the 32 subsets of the dice's positions (all five: stop)."""
    subsets = itertools.product((False, True), repeat=5)
    return max(
        kept_value(tuple(d for d, keep in zip(dice, subset, strict=True) if keep))
        for subset in subsets
    )


@functools.cache
def game_value(game: str, open_boxes: frozenset[str], upper: int) -> float:
    """Expected points still to come, bonus included, with `open_boxes` left to fill."""
    if not open_boxes:
        return 0.0

    @functools.cache
    def score_now(dice: tuple[int, ...]) -> float:
        def after(box: str) -> float:
            points = yacht_points(game, box, dice)
            new_upper = upper + points if box in UPPER[game] else upper
            bonus = BONUS if upper < BONUS_AT <= new_upper else 0
            return points + bonus + game_value(game, open_boxes - {box}, new_upper)

        return max(after(box) for box in open_boxes)

    @functools.cache
    def keep_last(kept: tuple[int, ...]) -> float:
        return mean_over_rerolls(kept, score_now)

    @functools.cache
    def second_roll(dice: tuple[int, ...]) -> float:
        return best_keep(dice, keep_last)

    @functools.cache
    def keep_first(kept: tuple[int, ...]) -> float:
        return mean_over_rerolls(kept, second_roll)

    @functools.cache
    def first_roll(dice: tuple[int, ...]) -> float:
        return best_keep(dice, keep_first)

    return mean_over_rerolls((), first_roll)


@functools.cache
def late_table(game: str, open_count: int) -> np.ndarray:
    """Our solver's values of every state with at most `open_count` boxes open."""
    rules = get_rules(game)
    return solve_value_table(rules, down_to_filled=rules.num_boxes - open_count, workers=1)


def check(game: str, open_boxes: tuple[str, ...], upper: int) -> None:
    """The reduced game's brute-force value equals the solver's at its turn-start state."""
    rules = get_rules(game)
    mask = sum(1 << i for i, name in enumerate(rules.box_names) if name not in open_boxes)
    ours = late_table(game, len(open_boxes))[mask, min(upper, BONUS_AT), 0]
    reference = game_value(game, frozenset(open_boxes), upper)
    assert ours == pytest.approx(reference, rel=0, abs=1e-9), (game, open_boxes, upper)


FAST = [
    # Chang's table: one straight and the yacht; the bonus 9 points away with fours open.
    ("yacht", ("big_straight", "yacht"), 0),
    ("yacht", ("fours", "four_of_a_kind"), 54),
    ("yacht", ("sixes", "full_house", "little_straight"), 45),
    # Clubhouse: five alike fills the full house; a four-run or five-run for the straights.
    ("yacht-clubhouse", ("full_house", "yacht"), 0),
    ("yacht-clubhouse", ("aces", "small_straight"), 61),
    ("yacht-clubhouse", ("fives", "large_straight", "four_of_a_kind"), 50),
]
SLOW = [
    ("yacht", ("fives", "sixes", "choice", "yacht"), 30),
    ("yacht", ("threes", "four_of_a_kind", "little_straight", "big_straight"), 60),
    ("yacht-clubhouse", ("sixes", "full_house", "small_straight", "large_straight"), 40),
    ("yacht-clubhouse", ("deuces", "choice", "four_of_a_kind", "yacht"), 59),
]


@pytest.mark.parametrize(("game", "open_boxes", "upper"), FAST)
def test_two_and_three_box_games_equal_the_brute_force(game, open_boxes, upper) -> None:
    """Hand-picked last turns of each Yacht game, bonus in and out of reach."""
    check(game, open_boxes, upper)


@pytest.mark.slow
@pytest.mark.parametrize(("game", "open_boxes", "upper"), SLOW)
def test_four_box_games_equal_the_brute_force(game, open_boxes, upper) -> None:
    """The last four turns: straights, the yacht, the upper bonus and the sums together."""
    check(game, open_boxes, upper)
