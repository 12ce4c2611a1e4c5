"""Values inside the current turn of one position, for the advisor (NumPy) and agents (JAX).

Given the card's `score_options` for every roll and a value table for the turn-start states that
follow, `turn_values` returns the value of scoring each roll in each box and of every keep with
one or two re-rolls to come. With no value table the future counts as zero: the greedy
baselines' "this turn only" values, through the same widget.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from yahtzee_jax.game.rules import (
    NUM_CATEGORIES,
    NUM_UPPER,
    UPPER_BONUS_THRESHOLD,
    YAHTZEE_SCORE,
    Category,
)
from yahtzee_jax.solver.exact import category_values
from yahtzee_jax.solver.widget import turn_keep_values

Array = Any  # numpy.ndarray or jax.Array


def card_context(filled: Array, scores: Array, xp: ModuleType = np) -> tuple[Array, Array, Array]:
    """Turn-start state of a card: (filled mask, upper total capped at 63, Yahtzee box holds 50)."""
    mask = xp.sum(filled.astype(xp.int32) << xp.arange(NUM_CATEGORIES, dtype=xp.int32))
    upper_total = xp.minimum(xp.sum(scores[:NUM_UPPER]), UPPER_BONUS_THRESHOLD)
    flag = filled[Category.YAHTZEE] & (scores[Category.YAHTZEE] == YAHTZEE_SCORE)
    return mask, upper_total, flag.astype(xp.int32)


def turn_values(
    score_options_of_rolls: tuple[Array, Array, Array],
    filled: Array,
    scores: Array,
    value_table: Array | None,
    future_weight: Array = 1.0,
    xp: ModuleType = np,
) -> tuple[Array, Array, Array]:
    """Values of the decisions of this turn, as expected score from the turn's start onwards.

    Args:
      score_options_of_rolls: (points [252, 13], legal [252, 13], bonus [252]) of the card.
      filled, scores: the card (bool[13], int[13]).
      value_table: solved [8192, 64, 2] future values, or None for "this turn only".
      future_weight: 1 to count the future, 0 when the episode ends with this turn.

    Returns:
      (category values [252, 13] with -inf where illegal, keep values [462] with one re-roll
      left, keep values [462] with two re-rolls left).
    """
    points, legal, bonus = score_options_of_rolls
    mask, upper_total, flag = card_context(filled, scores, xp)
    values = category_values(
        points, legal, bonus, mask, upper_total, flag, value_table, future_weight, xp
    )
    last_keep, first_keep = turn_keep_values(values.max(axis=1), xp)
    return values, last_keep, first_keep
