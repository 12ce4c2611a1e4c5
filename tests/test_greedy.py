"""Greedy baselines of Kang & Schroeder (seed 001) on hand-made positions.

Level 1 never re-rolls and scores the box worth most now; levels 2 and 3 re-roll at most once or
twice, maximising this turn's expected score. Sorted dice; keep masks have bit i for die i.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from yahtzee_jax.agents.widget_agents import make_greedy_agent
from yahtzee_jax.errors import UserError
from yahtzee_jax.game.engine import current_score_options
from yahtzee_jax.game.rules import KEEP_ALL, NUM_KEEP_ACTIONS, OFFICIAL, Category
from yahtzee_jax.solver import make_position


@pytest.fixture(scope="module")
def greedy_acts():
    """Jitted act of each level (compiled once per module)."""
    return {level: jax.jit(make_greedy_agent(level, OFFICIAL).act) for level in (1, 2, 3)}


def act(greedy_acts, level: int, dice, roll_index: int, open_boxes=None) -> int:
    """Action of a greedy agent; `open_boxes` None means an empty card, else the rest score 0."""
    card = {} if open_boxes is None else {b: 0 for b in OFFICIAL.box_names if b not in open_boxes}
    state = make_position(dice, roll_index, card, rules=OFFICIAL)
    return int(greedy_acts[level](None, state, jax.random.key(0)))


def keep_mask(*positions: int) -> int:
    """Keep action keeping the sorted dice at `positions`."""
    return sum(1 << position for position in positions)


def test_level1_never_rerolls_and_takes_the_large_straight(greedy_acts):
    """Level 1 with 2 3 4 5 6: keeps everything at both keep decisions, then scores 40."""
    assert act(greedy_acts, 1, [2, 3, 4, 5, 6], 0) == KEEP_ALL
    assert act(greedy_acts, 1, [1, 1, 2, 5, 6], 1) == KEEP_ALL
    expected = NUM_KEEP_ACTIONS + Category.LARGE_STRAIGHT
    assert act(greedy_acts, 1, [2, 3, 4, 5, 6], 2) == expected


def test_level1_scores_the_most_points_now(greedy_acts):
    """6 6 6 6 6 with the Yahtzee box open: 50 in Yahtzee beats 30 anywhere else."""
    assert act(greedy_acts, 1, [6, 6, 6, 6, 6], 2) == NUM_KEEP_ACTIONS + Category.YAHTZEE


def test_level2_rerolls_once_for_chance(greedy_acts):
    """Only Chance open, dice 1 4 5 6 6: with one re-roll keep what beats 3.5 (4 5 6 6).

    At the second keep decision its single re-roll is spent, so it keeps all.
    """
    assert act(greedy_acts, 2, [1, 4, 5, 6, 6], 0, ["chance"]) == keep_mask(1, 2, 3, 4)
    assert act(greedy_acts, 2, [1, 4, 5, 6, 6], 1, ["chance"]) == KEEP_ALL


def test_level3_rerolls_twice_for_chance(greedy_acts):
    """Only Chance open, dice 1 4 5 6 6: with two re-rolls keep what beats 4.25 (5 6 6) first,
    then what beats 3.5 (4 5 6 6)."""
    assert act(greedy_acts, 3, [1, 4, 5, 6, 6], 0, ["chance"]) == keep_mask(2, 3, 4)
    assert act(greedy_acts, 3, [1, 4, 5, 6, 6], 1, ["chance"]) == keep_mask(1, 2, 3, 4)


def test_level3_keeps_the_obvious_dice(greedy_acts):
    """Only Yahtzee open, dice 2 5 5 5 6: keep the three fives."""
    assert act(greedy_acts, 3, [2, 5, 5, 5, 6], 0, ["yahtzee"]) == keep_mask(1, 2, 3)


def test_greedy_ignores_the_future(greedy_acts):
    """Empty card, 6 6 6 6 5 at the score decision: greedy takes a 29-point box, not sixes (24)."""
    action = act(greedy_acts, 1, [5, 6, 6, 6, 6], 2)
    points, _, _ = current_score_options(
        make_position([5, 6, 6, 6, 6], 2, rules=OFFICIAL), OFFICIAL
    )
    assert points[action - NUM_KEEP_ACTIONS] == np.max(points) == 29


@pytest.mark.parametrize("level", [0, 4])
def test_bad_level(level):
    """Only levels 1, 2 and 3 exist."""
    with pytest.raises(UserError, match="greedy level"):
        make_greedy_agent(level, OFFICIAL)
