"""Where the target tables keep their chances: each state's row in one flat table.

A state s owns T_s(0 .. m), m an upper bound on the points still to come from s (`most_to_come`);
a state whose value is a copy of another's (`states.fill_copies`) shares that state's row.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import NUM_DICE, Rules
from yahtzee_jax.solver.states import (
    all_masks,
    fill_copies,
    num_upper_totals,
    solved_states,
    table_shape,
    upper_cap,
)
from yahtzee_jax.solver.widget_tables import (
    base_points,
    solver_score_tables,
)


def most_to_come(rules: Rules) -> np.ndarray:
    """int64[masks, totals, 2]: an upper bound on the points still to come from each state.

    Every open box at its most, the upper bonus when the open upper boxes can still reach it, and
    a Yahtzee bonus in every turn that can pay one (after a 50 in the Yahtzee box). Official
    Yahtzee reaches it (a Yahtzee of the right face every turn); elsewhere the top chances are 0.
    """
    _, five_points, _, _ = solver_score_tables(rules)
    box_most = np.maximum(base_points(rules).max(axis=0), five_points.max(axis=(0, 1, 2)))
    masks = all_masks(rules)
    open_boxes = (masks[:, None] >> np.arange(rules.num_boxes)) & 1 == 0  # [masks, boxes]
    boxes_most = open_boxes @ box_most.astype(np.int64)
    upper_most = open_boxes[:, : rules.num_upper] @ (NUM_DICE * np.arange(1, rules.num_upper + 1))
    totals = np.arange(num_upper_totals(rules))
    cap = upper_cap(rules)
    reachable = (totals[None] < cap) & (totals[None] + upper_most[:, None] >= cap)
    most = boxes_most[:, None, None] + rules.upper_bonus_points * reachable[:, :, None]
    if rules.yahtzee_bonus:
        count = open_boxes.sum(axis=1)
        box_open = open_boxes[:, rules.yahtzee_box]
        turns = np.stack([np.where(box_open, count - 1, 0), count], axis=1)  # flag 0, flag 1
        most = most + rules.yahtzee_bonus_points * turns[:, None, :]
    return np.broadcast_to(most, table_shape(rules)).astype(np.int64)


@dataclasses.dataclass(frozen=True)
class TargetLayout:
    """Where each state's chances lie in the flat table."""

    rows: np.ndarray  # int64[masks, totals, 2]: offset of the state's row; -1 if unreachable
    lengths: np.ndarray  # int64[masks, totals, 2]: most points to come + 1; 0 if unreachable
    size: int  # chances in the flat table: the solved states' rows, in C order of the states


@functools.lru_cache(maxsize=8)
def target_layout(rules: Rules) -> TargetLayout:
    """The `TargetLayout` of `rules`: solved states own rows, copies point at their original's."""
    states = solved_states(rules)
    counts = most_to_come(rules)[states] + 1
    tables = []
    for column in (np.cumsum(counts) - counts, counts):
        table = np.full(states.shape, np.nan)
        table[states] = column
        fill_copies(table, rules)  # the same copies the value table makes, on offsets and sizes
        tables.append(table)
    rows, lengths = tables
    return TargetLayout(
        rows=np.where(np.isnan(rows), -1, rows).astype(np.int64),
        lengths=np.where(np.isnan(lengths), 0, lengths).astype(np.int64),
        size=int(counts.sum()),
    )


def state_chances(
    flat: np.ndarray, layout: TargetLayout, state: tuple[int, int, int]
) -> np.ndarray:
    """T_s(d) for d = 0 .. most_to_come(s) of one state (mask, capped upper total, flag)."""
    row, length = int(layout.rows[state]), int(layout.lengths[state])
    if row < 0:
        raise UserError(f"state {state} cannot be reached")
    return flat[row : row + length]
