"""The value of each final roll at the score decision: a box's reward and the state it leads to.

`category_values` values writing each roll in each box of one card (points, bonuses and the
solved future); `final_roll_values` gives each roll's best value for n cards at once without
looking the future up per roll and box, and `solver_final_roll_values` is the same numbers in
the solver's hot loop with the rolls grouped by what they score (`FinalRollPlan`). The six upper
boxes (faces 1..6, first on the card) and the one five-of-a-kind box (the Yahtzee box, whose 50
drives the Yahtzee bonus and the Joker) are the only boxes treated apart; every other box is a
"lower" box of the rule set's table, whatever its scoring kind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from yahtzee_jax.game.rules import NUM_DICE, NUM_FACES, Rules
from yahtzee_jax.solver.states import upper_cap
from yahtzee_jax.solver.widget_tables import (
    REMOVE_DIE,
    ROLL_COUNTS,
    WIDGET_ORDER,
    WIDGET_POSITION,
    YAHTZEE_ROLLS,
)

Array = Any  # numpy.ndarray or jax.Array


def score_transition(
    category: Array,
    points: Array,
    upper_total: Array,
    flag: Array,
    xp: ModuleType,
    rules: Rules,
) -> tuple[Array, Array, Array]:
    """What writing `points` in `category` does to a turn-start state (arguments broadcast).

    Returns (reward without the Yahtzee bonus, next capped upper total, next flag): the reward
    adds the upper bonus (35) when the upper total reaches its threshold (63); the flag records
    whether the Yahtzee box holds 50.
    """
    cap = upper_cap(rules)
    is_upper = category < rules.num_upper
    next_upper = xp.where(is_upper, xp.minimum(upper_total + points, cap), upper_total)
    reaches_bonus = (upper_total < cap) & (next_upper >= cap)
    reward = points + rules.upper_bonus_points * reaches_bonus
    next_flag = xp.where(category == rules.yahtzee_box, points == rules.yahtzee_score, flag)
    return reward, next_upper, next_flag.astype(xp.int32)


def category_values(
    points: Array,
    legal: Array,
    bonus: Array,
    mask: Array,
    upper_total: Array,
    flag: Array,
    value_table: Array | None,
    future_weight: Array,
    xp: ModuleType,
    rules: Rules,
) -> Array:
    """Value of writing each roll in each box for one card: reward + weighted future value.

    `points`/`legal` are [rolls, boxes] and `bonus` [rolls] from `score_options`; `value_table`
    is the solved table (None: no future, the greedy "this turn only" value). Illegal boxes are
    -inf. Returns [rolls, boxes].
    """
    categories = xp.arange(rules.num_boxes)
    reward, next_upper, next_flag = score_transition(
        categories, points, upper_total, flag, xp, rules
    )
    value = reward + rules.yahtzee_bonus_points * bonus[:, None]
    if value_table is not None:
        next_mask = mask | (1 << categories)
        value = value + future_weight * value_table[next_mask, next_upper, next_flag]
    return xp.where(legal, value, -xp.inf)


def final_roll_values(
    mask: Array,
    upper_total: Array,
    flag: Array,
    points: np.ndarray,
    yahtzee_options: tuple[Array, Array, Array],
    future: Callable[[Array, Array, Array], Array],
    xp: ModuleType,
    rules: Rules,
) -> Array:
    """Value of each final roll at the score decision (its best box) for n cards: [252, n].

    The numbers of `category_values(...).max(axis=1)`, computed batch-minor (a column per card)
    without looking the future up 252 x boxes times: a roll that is not a five of a kind scores its
    base points in any open box, so within an upper box the next state depends on the roll only
    through the count of the box's face (6 next states) and within a lower box not at all (one;
    two for the Yahtzee box). The six five-of-a-kinds, whose points, legal boxes and +100 depend
    on the card (Joker rules), are valued apart from `yahtzee_options`.

    Args:
      mask, upper_total, flag: the turn-start state of each card (int[n]).
      points: every roll's points in every box without a Joker, `widget_tables.base_points(rules)`.
      yahtzee_options: (points [6, boxes, n], legal [6, boxes, n], bonus [6, n]): the options of the
        five-of-a-kinds against each card (`widget_tables.score_yahtzee_rolls`).
      future: (next mask, next capped upper total, next flag) -> value of that turn-start state
        (broadcasting; zeros for "this turn only").
    """
    futures = box_futures(mask, upper_total, flag, future, xp, rules)
    by_count = futures.upper_reward + futures.upper_future  # [box, count of its face, n]
    upper, fifty = rules.num_upper, rules.yahtzee_score
    best = None
    for box in range(rules.num_boxes):
        if box < upper:
            value = xp.take(by_count[box], xp.asarray(ROLL_COUNTS[:, box]), axis=0)
        elif box == rules.yahtzee_box:
            is_fifty = (points[:, box] == fifty)[:, None]
            scratch = futures.lower_future[box - upper]
            value = xp.where(is_fifty, fifty + futures.fifty_future[None], 0 + scratch[None])
        else:
            value = points[:, box, None] + futures.lower_future[box - upper][None]
        best = value if best is None else _maximum(best, value, xp)
    yahtzee_best = five_of_a_kind_values(futures, yahtzee_options, xp, rules)
    if xp is np:
        best[YAHTZEE_ROLLS] = yahtzee_best
        return best
    return best.at[YAHTZEE_ROLLS].set(yahtzee_best)


class BoxFutures(NamedTuple):
    """What scoring each box of n cards leads to (`box_futures`); a future is -inf once the
    box is filled."""

    upper_reward: Array  # int[6 boxes, 6 counts of the box's face, n], the bonus included
    upper_future: Array  # [6 boxes, 6 counts, n]: the next state's value
    lower_future: Array  # [lower boxes (7 in Yahtzee), n]; the Yahtzee box's row: scratched (0)
    fifty_future: Array  # [n]: 50 in the Yahtzee box


def box_futures(
    mask: Array,
    upper_total: Array,
    flag: Array,
    future: Callable[[Array, Array, Array], Array],
    xp: ModuleType,
    rules: Rules,
) -> BoxFutures:
    """Reward and future value of scoring each box of n cards, every box at once (the next
    states of `final_roll_values`).

    Reward + future is summed integer + float as in `category_values`, so the values are the
    same to the last bit; masking these small arrays spares a [252, n] pass a box.
    """
    boxes = np.arange(rules.num_boxes)[:, None]
    is_open = ((mask >> boxes) & 1) == 0  # [boxes, n]
    next_mask = mask | 1 << boxes
    num_upper, yahtzee = rules.num_upper, rules.yahtzee_box
    upper = boxes[:num_upper, :, None]  # [6 boxes, 1, 1]
    counts = np.arange(NUM_DICE + 1)[:, None]  # dice showing an upper box's face, 0..5
    reward, next_upper, next_flag = score_transition(
        upper, (upper + 1) * counts, upper_total, flag, xp, rules
    )
    upper_future = future(next_mask[:num_upper, None], next_upper, next_flag)
    # The flag records a 50 in the Yahtzee box: a 0 there (a scratch) clears it, a 50 sets it.
    is_yahtzee = boxes[num_upper:] == yahtzee
    lower_future = future(next_mask[num_upper:], upper_total, xp.where(is_yahtzee, 0, flag))
    fifty_future = future(next_mask[yahtzee], upper_total, 0 * flag + 1)
    return BoxFutures(
        upper_reward=reward,
        upper_future=xp.where(is_open[:num_upper, None], upper_future, -xp.inf),
        lower_future=xp.where(is_open[num_upper:], lower_future, -xp.inf),
        fifty_future=xp.where(is_open[yahtzee], fifty_future, -xp.inf),
    )


def five_of_a_kind_values(
    futures: BoxFutures, yahtzee_options: tuple[Array, Array, Array], xp: ModuleType, rules: Rules
) -> Array:
    """The six five-of-a-kinds' best values [6, n], by the points `score_options` gives them."""
    yahtzee_points, yahtzee_legal, yahtzee_bonus = yahtzee_options
    num_upper = rules.num_upper
    yahtzee_best = None
    for box in range(rules.num_boxes):
        box_points = yahtzee_points[:, box]  # [6, n]
        if box < num_upper:  # five of the box's face, or none of it
            count = np.where(np.arange(NUM_FACES) == box, NUM_DICE, 0)
            reward = xp.take(futures.upper_reward[box], count, axis=0)
            later = xp.take(futures.upper_future[box], count, axis=0)
        elif box == rules.yahtzee_box:
            reward = box_points
            scratch = futures.lower_future[box - num_upper]
            is_fifty = box_points == rules.yahtzee_score
            later = xp.where(is_fifty, futures.fifty_future[None], scratch[None])
        else:
            reward, later = box_points, futures.lower_future[box - num_upper][None]
        value = reward + rules.yahtzee_bonus_points * yahtzee_bonus + later
        value = xp.where(yahtzee_legal[:, box], value, -xp.inf)
        yahtzee_best = value if yahtzee_best is None else xp.maximum(yahtzee_best, value)
    return yahtzee_best


@dataclasses.dataclass(frozen=True)
class FinalRollPlan:
    """How `solver_final_roll_values` groups the rolls (in `WIDGET_ORDER[5]`), from the points.

    A roll scores 0 in most boxes, and a 0 in a box is worth that box's future whatever the
    roll: so each roll starts from the best 0 among its absent faces' upper boxes and its
    non-scoring lower boxes (one value per such pair of sets, 97 of them), then takes the
    maximum with its present faces' upper boxes (a prefix per distinct face) and with each lower
    box over the run of rolls holding the rolls that score in it.
    """

    rules: Rules
    points: np.ndarray  # int64[252, boxes], the base points in `WIDGET_ORDER[5]`
    face_columns: tuple[np.ndarray, ...]  # c-th distinct face's row of [face x count], a prefix
    absent_of_group: np.ndarray  # bit set of absent faces of each group
    pattern_of_group: np.ndarray  # which lower boxes score 0 in each group
    zero_boxes: np.ndarray  # bool[patterns, lower boxes]: the boxes scoring 0
    group_of_roll: np.ndarray  # [252]
    scoring_runs: tuple[tuple[int, int, int], ...]  # (box, start, stop) covering its scoring rolls
    yahtzee_positions: np.ndarray  # where the five-of-a-kinds are


def final_roll_plan(points: np.ndarray, rules: Rules) -> FinalRollPlan:
    """The `FinalRollPlan` of base points int[252, boxes] (`widget_tables.base_points(rules)`)."""
    lower_boxes = list(range(rules.num_upper, rules.num_boxes))
    yahtzee = rules.yahtzee_box
    order = WIDGET_ORDER[NUM_DICE]
    points = np.asarray(points, np.int64)[order]
    counts = ROLL_COUNTS[order]
    # Each roll's c-th distinct face (rolls with more than c of them: a prefix), as its row of
    # the [face x count] values.
    present = [np.flatnonzero(row) for row in counts]
    face_columns = tuple(
        np.array(
            [
                faces[column] * (NUM_DICE + 1) + row[faces[column]]
                for row, faces in zip(counts, present, strict=True)
                if len(faces) > column
            ]
        )
        for column in range(NUM_DICE)
    )
    absent = ((counts == 0) << np.arange(NUM_FACES)).sum(axis=1)
    zero = points[:, lower_boxes] == 0
    # As in `final_roll_values`: a roll short of 50 in the Yahtzee box scratches it (only the
    # five-of-a-kinds, valued apart, score 50 there).
    zero[:, lower_boxes.index(yahtzee)] = points[:, yahtzee] != rules.yahtzee_score
    zero_boxes, pattern = np.unique(zero, axis=0, return_inverse=True)
    groups, group_of_roll = np.unique(
        np.stack([absent, pattern.ravel()], axis=1), axis=0, return_inverse=True
    )
    runs = []
    for box, scores in zip(lower_boxes, ~zero.T, strict=True):
        scoring = np.flatnonzero(scores)
        if box != yahtzee and len(scoring):  # the five-of-a-kinds are valued apart
            runs.append((box, int(scoring[0]), int(scoring[-1]) + 1))
    return FinalRollPlan(
        rules=rules,
        points=points,
        face_columns=face_columns,
        absent_of_group=groups[:, 0],
        pattern_of_group=groups[:, 1],
        zero_boxes=zero_boxes,
        group_of_roll=group_of_roll.ravel(),
        scoring_runs=tuple(runs),
        yahtzee_positions=WIDGET_POSITION[NUM_DICE][YAHTZEE_ROLLS],
    )


def solver_final_roll_values(
    mask: np.ndarray,
    upper_total: np.ndarray,
    flag: np.ndarray,
    plan: FinalRollPlan,
    yahtzee_options: tuple[np.ndarray, np.ndarray, np.ndarray],
    future: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """`final_roll_values` in NumPy with the rolls in `WIDGET_ORDER[5]`: bit for bit the same
    numbers, the solver's hot loop (see `FinalRollPlan`; 0.80 ms against 1.03 ms for 256 cards
    on a 2-core Intel Xeon, 2026-11-25)."""
    rules = plan.rules
    futures = box_futures(mask, upper_total, flag, future, np, rules)
    n = len(mask)
    by_count = futures.upper_reward + futures.upper_future  # [face, count of it, card]
    # The best 0 among each set of absent faces, a face at a time (the empty set: none).
    absent_best = np.empty((1 << rules.num_upper, n))
    absent_best[0] = -np.inf
    for box in range(rules.num_upper):
        np.maximum(absent_best[: 1 << box], by_count[box, 0], out=absent_best[1 << box : 2 << box])
    zeros = futures.lower_future  # a 0 in a lower box is worth its future
    pattern_best = np.where(plan.zero_boxes[:, :, None], zeros[None], -np.inf).max(axis=1)
    group_best = np.take(absent_best, plan.absent_of_group, axis=0)
    np.maximum(group_best, pattern_best[plan.pattern_of_group], out=group_best)
    best = np.take(group_best, plan.group_of_roll, axis=0)
    scratch = np.empty_like(best)
    face_values = by_count.reshape(-1, n)
    for rows in plan.face_columns:
        here, gathered = best[: len(rows)], scratch[: len(rows)]
        np.take(face_values, rows, axis=0, out=gathered)
        np.maximum(here, gathered, out=here)
    for box, start, stop in plan.scoring_runs:
        here, value = best[start:stop], scratch[start:stop]
        later = futures.lower_future[box - rules.num_upper]
        np.add(plan.points[start:stop, box, None], later[None], out=value)
        np.maximum(here, value, out=here)
    best[plan.yahtzee_positions] = five_of_a_kind_values(futures, yahtzee_options, np, rules)
    return best


def _maximum(best: Array, value: Array, xp: ModuleType) -> Array:
    """Elementwise maximum, into `best` in NumPy (the solver's hot loop owns it), new in JAX."""
    return np.maximum(best, value, out=best) if xp is np else xp.maximum(best, value)


# The compiled solvers' index tables (the XLA program, `solver.compiled`, and the C kernel,
# `solver.native`), NumPy, so that the kernel's process never imports JAX. Of full length, so
# that each keep size is one fused pass: a keep with fewer distinct faces than a column repeats
# its last sub-keep there (harmless under a maximum), where the NumPy loop takes the maximum over
# a prefix of the rows.
REMOVE_PADDED = tuple(
    WIDGET_POSITION[size - 1][REMOVE_DIE[size][WIDGET_ORDER[size]]].T
    for size in range(1, NUM_DICE + 1)
)


def padded_rows(lists: list[list[int]]) -> np.ndarray:
    """Lists of row indices as [longest, lists]: a shorter list repeats its last entry (harmless
    under a maximum)."""
    longest = max(len(entries) for entries in lists)
    return np.array([[row[min(k, len(row) - 1)] for row in lists] for k in range(longest)])


class PlanRows(NamedTuple):
    """`FinalRollPlan` as the row lists the compiled solvers take maxima over (see
    `compiled._final_values`)."""

    zero_rows: np.ndarray  # [k, groups]: each group's zero options, rows of the zeros' table
    face_rows: np.ndarray  # [5, 252]: each roll's present faces, rows of [face x count]
    lower_rows: np.ndarray  # [k, 252]: the lower boxes each roll scores in (the Yahtzee box aside)
    lower_points: np.ndarray  # [k, 252]: its points there
    five_of_roll: np.ndarray  # [252]: which five-of-a-kind a roll is (0 for the others)
    is_five: np.ndarray  # bool[252]


def plan_rows(plan: FinalRollPlan) -> PlanRows:
    """The row lists of `plan`; a roll scoring in no lower box takes the Yahtzee box's scratch,
    a zero option it has anyway."""
    rules = plan.rules
    num_upper, num_lower = rules.num_upper, rules.num_boxes - rules.num_upper
    scratch = rules.yahtzee_box - num_upper
    zero_rows = [
        [face for face in range(num_upper) if absent >> face & 1]
        + [num_upper + box for box in np.flatnonzero(plan.zero_boxes[pattern])]
        or [num_upper + num_lower]  # none: the -inf row
        for absent, pattern in zip(plan.absent_of_group, plan.pattern_of_group, strict=True)
    ]
    lower = [
        [box - num_upper for box in range(num_upper, rules.num_boxes) if points[box]]
        for points in np.where(np.arange(rules.num_boxes) == rules.yahtzee_box, 0, plan.points)
    ]
    lower = [boxes or [scratch] for boxes in lower]
    lower_rows = padded_rows(lower)
    face_rows = [plan.face_columns[0]]
    for rows in plan.face_columns[1:]:  # a roll with fewer distinct faces repeats its last
        face_rows.append(np.concatenate([rows, face_rows[-1][len(rows) :]]))
    five_of_roll = np.zeros(len(plan.points), np.int64)
    five_of_roll[plan.yahtzee_positions] = np.arange(len(plan.yahtzee_positions))
    return PlanRows(
        zero_rows=padded_rows(zero_rows),
        face_rows=np.stack(face_rows),
        lower_rows=lower_rows,
        lower_points=np.take_along_axis(plan.points[:, num_upper:].T, lower_rows, axis=0),
        five_of_roll=five_of_roll,
        is_five=np.isin(np.arange(len(plan.points)), plan.yahtzee_positions),
    )
