"""Values inside the current turn of one position, for the advisor (NumPy) and agents (JAX).

Given the card's `score_options` for every roll and a value table for the turn-start states that
follow, `turn_values` returns the value of scoring each roll in each box and of every keep with
one or two re-rolls to come. With no value table the future counts as zero: the greedy
baselines' "this turn only" values, through the same widget.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from yahtzee_jax.game.rules import Rules
from yahtzee_jax.solver.final_rolls import category_values
from yahtzee_jax.solver.states import upper_cap
from yahtzee_jax.solver.widget import turn_keep_values

Array = Any  # numpy.ndarray or jax.Array


def card_context(
    filled: Array, scores: Array, xp: ModuleType, rules: Rules
) -> tuple[Array, Array, Array]:
    """Turn-start state of a card: (filled mask, upper total capped at the bonus threshold,
    Yahtzee box holds 50)."""
    mask = xp.sum(filled.astype(xp.int32) << xp.arange(rules.num_boxes, dtype=xp.int32))
    upper_total = xp.minimum(xp.sum(scores[: rules.num_upper]), upper_cap(rules))
    yahtzee = rules.yahtzee_box
    flag = filled[yahtzee] & (scores[yahtzee] == rules.yahtzee_score)
    return mask, upper_total, flag.astype(xp.int32)


def turn_values(
    score_options_of_rolls: tuple[Array, Array, Array],
    filled: Array,
    scores: Array,
    value_table: Array | None,
    future_weight: Array,
    xp: ModuleType,
    rules: Rules,
) -> tuple[Array, Array, Array]:
    """Values of the decisions of this turn, as expected score from the turn's start onwards.

    Args:
      score_options_of_rolls: (points [252, boxes], legal [252, boxes], bonus [252]) of the card.
      filled, scores: the card (bool[boxes], int[boxes]).
      value_table: solved future values (`value_table.solve_value_table`), or None for "this
        turn only".
      future_weight: 1 to count the future, 0 when the episode ends with this turn.

    Returns:
      (category values [252, boxes] with -inf where illegal, keep values [462] with one re-roll
      left, keep values [462] with two re-rolls left).
    """
    points, legal, bonus = score_options_of_rolls
    mask, upper_total, flag = card_context(filled, scores, xp, rules)
    values = category_values(
        points, legal, bonus, mask, upper_total, flag, value_table, future_weight, xp, rules
    )
    last_keep, first_keep = turn_keep_values(values.max(axis=1), xp)
    return values, last_keep, first_keep
