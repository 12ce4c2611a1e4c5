"""Chances of reaching a final score at the end of a turn: the target agent's and `advise --beat`.

Writing a roll in a box pays r points (bonuses included) and leads to the turn-start state s';
with `goal` the final score wanted and `total` the card's score so far, the chance of getting
there is T_{s'}(goal - total - r) from the target table (`solver.target_table`): 1 once reached, 0
past the most s' can still score. The keeps are then the solver's widget over these chances.
One implementation for NumPy (the advisor, float64) and JAX (the agent, float32 on device).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from yahtzee_jax.game.rules import Rules
from yahtzee_jax.solver.final_rolls import score_transition
from yahtzee_jax.solver.moments import roll_futures
from yahtzee_jax.solver.target_layout import TargetLayout
from yahtzee_jax.solver.widget_tables import NUM_ROLLS

Array = Any  # numpy.ndarray or jax.Array


class TargetTables(NamedTuple):
    """What a player for a score reads (unreachable states: row -1, length 0)."""

    chances: Array  # the flat target table (`solver.target_table`)
    rows: Array  # int[masks, totals, 2]: where each state's row starts
    lengths: Array  # int[masks, totals, 2]: its length, the most points to come + 1
    value: Array  # [masks, totals, 2]: expected score to come (ties between equal chances)


def host_tables(flat: np.ndarray, layout: TargetLayout, value_table: np.ndarray) -> TargetTables:
    """`TargetTables` in NumPy float64 (the value table's NaN, unsolved states, read as 0; a
    target table has none: `solve_target_table` leaves a partial solve's other rows 0)."""
    values = np.nan_to_num(value_table)
    return TargetTables(flat, layout.rows, layout.lengths, values)


def reach_chance(chances: Array, row: Array, length: Array, need: Array, xp: ModuleType) -> Array:
    """T_s(need) read from rows (`row`, `length`) of the flat table: 1 for need <= 0 (reached
    already), 0 from `length` on (more than the state can still score)."""
    index = xp.maximum(row, 0) + xp.clip(need, 0, xp.maximum(length - 1, 0))
    return xp.where(need <= 0, 1.0, xp.where(need < length, chances[index], 0.0))


def turn_end_chances(
    tables: TargetTables,
    context: tuple[Array, Array, Array],
    need: Array,
    options: tuple[Array, Array, Array],
    xp: ModuleType,
    rules: Rules,
) -> tuple[Array, Array]:
    """P(the points still `need`ed are scored) after writing each roll of `options` (points,
    legal [n, boxes], bonus [n]: all 252 rolls, or the one in hand) in each box of a card at
    turn-start state `context` (mask, capped upper total, flag): -inf where illegal. Also the
    expected points of each (reward + V of the next state), what breaks ties between chances."""
    points, legal, bonus = options
    mask, upper, flag = context
    categories = xp.arange(rules.num_boxes)
    reward, next_upper, next_flag = score_transition(categories, points, upper, flag, xp, rules)
    reward = reward + rules.yahtzee_bonus_points * bonus[:, None]
    state_tables = (tables.rows, tables.lengths, tables.value)
    if points.shape[0] == NUM_ROLLS:  # every roll: read once per distinct next state
        row, length, future = (roll_futures(t, mask, upper, flag, xp, rules) for t in state_tables)
    else:
        after = (mask | (1 << categories), next_upper, next_flag)
        row, length, future = (table[after] for table in state_tables)
    chances = reach_chance(tables.chances, row, length, need - reward, xp)
    return xp.where(legal, chances, -xp.inf), reward + xp.where(legal, future, 0.0)
