"""Exact solution of solitaire Yahtzee by backward induction over turn-start states.

A turn-start state is (filled-box mask, upper total capped at 63, Yahtzee box holds 50). Its value
is the expected score still to come under optimal play. States are solved a layer (number of
filled boxes) at a time, from the full card back to the empty one, in chunks of 256
states as NumPy float64 array programs with the states along the last axis: the value of each
final roll, then the widget of `yahtzee_jax.solver.widget`. The on-device agents value the
final rolls with `final_roll_values`; the solver's hot loop (`solver_final_roll_values`,
`widget.turn_start_value`) gives the same numbers to the last bit with the rolls grouped so
that most of its work runs over prefixes and runs of rows. Only the 359,616 states whose value
is not a copy of another's are solved (`solved_states`); the cache stores just those, deflated
(2.3 MB).
"""

from __future__ import annotations

import dataclasses
import mmap
import multiprocessing
import os
import pathlib
import sys
import threading
import time
import warnings
import zipfile
import zlib
from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import (
    NUM_CATEGORIES,
    NUM_DICE,
    NUM_FACES,
    NUM_UPPER,
    UPPER_BONUS,
    UPPER_BONUS_THRESHOLD,
    YAHTZEE_BONUS,
    YAHTZEE_SCORE,
    Category,
    Rules,
    get_rules,
)
from yahtzee_jax.solver.tables import (
    NUM_FLAGS,
    NUM_MASKS,
    ROLL_COUNTS,
    WIDGET_ORDER,
    WIDGET_POSITION,
    YAHTZEE_ROLLS,
    solver_score_tables,
)
from yahtzee_jax.solver.widget import turn_start_value

Array = Any  # numpy.ndarray or jax.Array
NUM_UPPER_TOTALS = UPPER_BONUS_THRESHOLD + 1  # 0..63, where 63 means "63 or more"
FULL_MASK = NUM_MASKS - 1
CACHE_FORMAT = 2  # bump when the stored table changes meaning or layout


def score_transition(
    category: Array, points: Array, upper_total: Array, flag: Array, xp: ModuleType = np
) -> tuple[Array, Array, Array]:
    """What writing `points` in `category` does to a turn-start state (arguments broadcast).

    Returns (reward without the +100 Yahtzee bonus, next capped upper total, next flag): the
    reward adds the 35-point upper bonus when the upper total reaches 63; the flag records
    whether the Yahtzee box holds 50.
    """
    is_upper = category < NUM_UPPER
    next_upper = xp.where(
        is_upper, xp.minimum(upper_total + points, UPPER_BONUS_THRESHOLD), upper_total
    )
    reaches_bonus = (upper_total < UPPER_BONUS_THRESHOLD) & (next_upper >= UPPER_BONUS_THRESHOLD)
    reward = points + UPPER_BONUS * reaches_bonus
    next_flag = xp.where(category == Category.YAHTZEE, points == YAHTZEE_SCORE, flag)
    return reward, next_upper, next_flag.astype(xp.int32)


def category_values(
    points: Array,
    legal: Array,
    bonus: Array,
    mask: Array,
    upper_total: Array,
    flag: Array,
    value_table: Array | None,
    future_weight: Array = 1.0,
    xp: ModuleType = np,
) -> Array:
    """Value of writing each roll in each box for one card: reward + weighted future value.

    `points`/`legal` are [252, 13] and `bonus` [252] from `score_options`; `value_table` is the
    solved [8192, 64, 2] table (None: no future, the greedy "this turn only" value). Illegal boxes
    are -inf. Returns [252, 13].
    """
    categories = xp.arange(NUM_CATEGORIES)
    reward, next_upper, next_flag = score_transition(categories, points, upper_total, flag, xp)
    value = reward + YAHTZEE_BONUS * bonus[:, None]
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
    xp: ModuleType = np,
) -> Array:
    """Value of each final roll at the score decision (its best box) for n cards: [252, n].

    The numbers of `category_values(...).max(axis=1)`, computed batch-minor (a column per card)
    without looking the future up 252 x 13 times: a roll that is not a five of a kind scores its
    base points in any open box, so within an upper box the next state depends on the roll only
    through the count of the box's face (6 next states) and within a lower box not at all (one;
    two for the Yahtzee box). The six five-of-a-kinds, whose points, legal boxes and +100 depend
    on the card (Joker rules), are valued apart from `yahtzee_options`.

    Args:
      mask, upper_total, flag: the turn-start state of each card (int[n]).
      points: every roll's points in every box without a Joker, `tables.base_points()`.
      yahtzee_options: (points [6, 13, n], legal [6, 13, n], bonus [6, n]): the options of the
        five-of-a-kinds against each card (`tables.score_yahtzee_rolls`).
      future: (next mask, next capped upper total, next flag) -> value of that turn-start state
        (broadcasting; zeros for "this turn only").
    """
    futures = _box_futures(mask, upper_total, flag, future, xp)
    by_count = futures.upper_reward + futures.upper_future  # [box, count of its face, n]
    best = None
    for box in range(NUM_CATEGORIES):
        if box < NUM_UPPER:
            value = xp.take(by_count[box], xp.asarray(ROLL_COUNTS[:, box]), axis=0)
        elif box == Category.YAHTZEE:
            is_fifty = (points[:, box] == YAHTZEE_SCORE)[:, None]
            scratch = futures.lower_future[box - NUM_UPPER]
            value = xp.where(
                is_fifty, YAHTZEE_SCORE + futures.fifty_future[None], 0 + scratch[None]
            )
        else:
            value = points[:, box, None] + futures.lower_future[box - NUM_UPPER][None]
        best = value if best is None else _maximum(best, value, xp)
    yahtzee_best = _five_of_a_kind_values(futures, yahtzee_options, xp)
    if xp is np:
        best[YAHTZEE_ROLLS] = yahtzee_best
        return best
    return best.at[YAHTZEE_ROLLS].set(yahtzee_best)


class BoxFutures(NamedTuple):
    """What scoring each box of n cards leads to (`_box_futures`); a future is -inf once the
    box is filled."""

    upper_reward: Array  # int[6 boxes, 6 counts of the box's face, n], the bonus included
    upper_future: Array  # [6 boxes, 6 counts, n]: the next state's value
    lower_future: Array  # [7 lower boxes, n]; the Yahtzee box's row: scratched (a 0)
    fifty_future: Array  # [n]: 50 in the Yahtzee box


def _box_futures(
    mask: Array,
    upper_total: Array,
    flag: Array,
    future: Callable[[Array, Array, Array], Array],
    xp: ModuleType,
) -> BoxFutures:
    """Reward and future value of scoring each box of n cards, every box at once (the next
    states of `final_roll_values`).

    Reward + future is summed integer + float as in `category_values`, so the values are the
    same to the last bit; masking these small arrays spares a [252, n] pass a box.
    """
    boxes = np.arange(NUM_CATEGORIES)[:, None]
    is_open = ((mask >> boxes) & 1) == 0  # [13, n]
    next_mask = mask | 1 << boxes
    upper = boxes[:NUM_UPPER, :, None]  # [6 boxes, 1, 1]
    counts = np.arange(NUM_DICE + 1)[:, None]  # dice showing an upper box's face, 0..5
    reward, next_upper, next_flag = score_transition(
        upper, (upper + 1) * counts, upper_total, flag, xp
    )
    upper_future = future(next_mask[:NUM_UPPER, None], next_upper, next_flag)
    # The flag records a 50 in the Yahtzee box: a 0 there (a scratch) clears it, a 50 sets it.
    is_yahtzee = boxes[NUM_UPPER:] == Category.YAHTZEE
    lower_future = future(next_mask[NUM_UPPER:], upper_total, xp.where(is_yahtzee, 0, flag))
    fifty_future = future(next_mask[Category.YAHTZEE], upper_total, 0 * flag + 1)
    return BoxFutures(
        upper_reward=reward,
        upper_future=xp.where(is_open[:NUM_UPPER, None], upper_future, -xp.inf),
        lower_future=xp.where(is_open[NUM_UPPER:], lower_future, -xp.inf),
        fifty_future=xp.where(is_open[Category.YAHTZEE], fifty_future, -xp.inf),
    )


def _five_of_a_kind_values(
    futures: BoxFutures, yahtzee_options: tuple[Array, Array, Array], xp: ModuleType
) -> Array:
    """The six five-of-a-kinds' best values [6, n], by the points `score_options` gives them."""
    yahtzee_points, yahtzee_legal, yahtzee_bonus = yahtzee_options
    yahtzee_best = None
    for box in range(NUM_CATEGORIES):
        box_points = yahtzee_points[:, box]  # [6, n]
        if box < NUM_UPPER:  # five of the box's face, or none of it
            count = np.where(np.arange(NUM_FACES) == box, NUM_DICE, 0)
            reward = xp.take(futures.upper_reward[box], count, axis=0)
            later = xp.take(futures.upper_future[box], count, axis=0)
        elif box == Category.YAHTZEE:
            reward = box_points
            scratch = futures.lower_future[box - NUM_UPPER]
            later = xp.where(box_points == YAHTZEE_SCORE, futures.fifty_future[None], scratch[None])
        else:
            reward, later = box_points, futures.lower_future[box - NUM_UPPER][None]
        value = reward + YAHTZEE_BONUS * yahtzee_bonus + later
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

    points: np.ndarray  # int64[252, 13], the base points in `WIDGET_ORDER[5]`
    face_columns: tuple[np.ndarray, ...]  # c-th distinct face's row of [face x count], a prefix
    absent_of_group: np.ndarray  # bit set of absent faces of each group
    pattern_of_group: np.ndarray  # which lower boxes score 0 in each group
    zero_boxes: np.ndarray  # bool[patterns, 7 lower boxes]: the boxes scoring 0
    group_of_roll: np.ndarray  # [252]
    scoring_runs: tuple[tuple[int, int, int], ...]  # (box, start, stop) covering its scoring rolls
    yahtzee_positions: np.ndarray  # where the five-of-a-kinds are


_LOWER_BOXES = list(range(NUM_UPPER, NUM_CATEGORIES))


def final_roll_plan(points: np.ndarray) -> FinalRollPlan:
    """The `FinalRollPlan` of base points int[252, 13] (`tables.base_points()`)."""
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
    zero = points[:, _LOWER_BOXES] == 0
    # As in `final_roll_values`: a roll short of 50 in the Yahtzee box scratches it (only the
    # five-of-a-kinds, valued apart, score 50 there).
    zero[:, _LOWER_BOXES.index(Category.YAHTZEE)] = points[:, Category.YAHTZEE] != YAHTZEE_SCORE
    zero_boxes, pattern = np.unique(zero, axis=0, return_inverse=True)
    groups, group_of_roll = np.unique(
        np.stack([absent, pattern.ravel()], axis=1), axis=0, return_inverse=True
    )
    runs = []
    for box, scores in zip(_LOWER_BOXES, ~zero.T, strict=True):
        scoring = np.flatnonzero(scores)
        if box != Category.YAHTZEE and len(scoring):  # the five-of-a-kinds are valued apart
            runs.append((box, int(scoring[0]), int(scoring[-1]) + 1))
    return FinalRollPlan(
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
    futures = _box_futures(mask, upper_total, flag, future, np)
    n = len(mask)
    by_count = futures.upper_reward + futures.upper_future  # [face, count of it, card]
    # The best 0 among each set of absent faces, a face at a time (the empty set: none).
    absent_best = np.empty((1 << NUM_UPPER, n))
    absent_best[0] = -np.inf
    for box in range(NUM_UPPER):
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
        later = futures.lower_future[box - NUM_UPPER]
        np.add(plan.points[start:stop, box, None], later[None], out=value)
        np.maximum(here, value, out=here)
    best[plan.yahtzee_positions] = _five_of_a_kind_values(futures, yahtzee_options, np)
    return best


def _maximum(best: Array, value: Array, xp: ModuleType) -> Array:
    """Elementwise maximum, into `best` in NumPy (the solver's hot loop owns it), new in JAX."""
    return np.maximum(best, value, out=best) if xp is np else xp.maximum(best, value)


def reachable_upper_totals(upper_mask: int) -> np.ndarray:
    """Capped upper totals that the filled upper boxes of `upper_mask` can sum to (sorted)."""
    totals = {0}
    for box in range(NUM_UPPER):
        if upper_mask >> box & 1:
            face = box + 1
            totals = {
                min(total + face * count, UPPER_BONUS_THRESHOLD)
                for total in totals
                for count in range(NUM_FACES)
            }
    return np.array(sorted(totals), dtype=np.int64)


def _representative_totals() -> np.ndarray:
    """int[64 upper masks, 64 totals]: the capped upper total whose value a total shares; -1 if
    the filled upper boxes cannot sum to it.

    The upper total only matters for the 35-point bonus: once five dice of each open upper box's
    face could not bring it to 63, no play can, and every such total has the value of the
    smallest of them. A third of the reachable states are such copies.
    """
    representative = np.full((1 << NUM_UPPER, NUM_UPPER_TOTALS), -1, np.int8)
    for upper_mask in range(1 << NUM_UPPER):
        totals = reachable_upper_totals(upper_mask)
        open_faces = [box + 1 for box in range(NUM_UPPER) if not upper_mask >> box & 1]
        hopeless = totals + NUM_DICE * sum(open_faces) < UPPER_BONUS_THRESHOLD
        representative[upper_mask, totals] = np.where(hopeless, totals[0], totals)
    return representative


REPRESENTATIVE_TOTAL = _representative_totals()
_MASKS = np.arange(NUM_MASKS)
_REPRESENTATIVE_OF_STATE = REPRESENTATIVE_TOTAL[_MASKS & (1 << NUM_UPPER) - 1]  # [8192, 64]
FILLED_COUNT = np.array([bin(mask).count("1") for mask in range(NUM_MASKS)])
_YAHTZEE_FILLED = (_MASKS >> Category.YAHTZEE) & 1 == 1


def solved_states(rules: Rules, masks: np.ndarray = _MASKS) -> np.ndarray:
    """bool[masks, 64, 2]: the turn-start states of `masks` the solver values and caches.

    Reachable upper totals that are their own representative (see `_representative_totals`);
    flag 1 (a 50 in the Yahtzee box) is a state of its own only when the box is filled and the
    variant pays the +100 bonus. `fill_copies` gives every other reachable state its value.
    """
    states = np.zeros((len(masks), NUM_UPPER_TOTALS, NUM_FLAGS), bool)
    states[:, :, 0] = np.arange(NUM_UPPER_TOTALS) == _REPRESENTATIVE_OF_STATE[masks]
    if rules.yahtzee_bonus:
        states[:, :, 1] = states[:, :, 0] & _YAHTZEE_FILLED[masks, None]
    return states


def layer_chunks(
    rules: Rules, filled_count: int
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """The masks with `filled_count` boxes filled, and their solved states (mask, upper, flag)
    in chunks of `SOLVE_CHUNK` (`chunk_indices` makes a chunk the int64 indices it is used as).

    The states are kept as int16, int8, int8, found a block of masks at a time: the largest
    layer has 88,049 of them, whose int64 indices would hold 2 MB through the layer's solve.
    """
    layer_masks = np.flatnonzero(np.equal(FILLED_COUNT, filled_count))
    blocks = []
    for start in range(0, len(layer_masks), _FILL_BLOCK):
        block = layer_masks[start : start + _FILL_BLOCK]
        row, upper, flag = np.nonzero(solved_states(rules, block))
        blocks.append((block[row].astype(np.int16), upper.astype(np.int8), flag.astype(np.int8)))
    states = [np.concatenate(column) for column in zip(*blocks, strict=True)]
    splits = range(SOLVE_CHUNK, len(states[0]), SOLVE_CHUNK)
    return layer_masks, list(zip(*(np.split(column, splits) for column in states), strict=True))


def chunk_indices(chunk: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """A chunk of `layer_chunks` as int64 (mask, upper, flag), what the solvers index with."""
    return tuple(column.astype(np.int64) for column in chunk)


def fill_copies(value_table: np.ndarray, masks: np.ndarray = _MASKS) -> None:
    """Give the reachable states of `masks` that are not solved the value of the state they equal.

    Flag 1 takes flag 0's value where it is no state of its own, then a total whose bonus is out
    of reach takes its representative's values; a block of masks at a time, to keep it small.
    """
    for start in range(0, len(masks), _FILL_BLOCK):
        block = masks[start : start + _FILL_BLOCK]
        table = value_table[block]  # [block, 64, 2], a copy
        unsolved = np.isnan(table[:, :, 1]) & ~np.isnan(table[:, :, 0])
        table[:, :, 1][unsolved] = table[:, :, 0][unsolved]
        representative = _REPRESENTATIVE_OF_STATE[block]
        copies = (representative >= 0) & (representative != np.arange(NUM_UPPER_TOTALS))
        rows = np.nonzero(copies)[0]
        table[copies] = table[rows, representative[copies]]
        value_table[block] = table


_FILL_BLOCK = 256  # masks per block when copying or saving values: temporaries under 1 MB
# States per solver task: a chunk's [462, n] float64 widget arrays stay in the cache. A one-process
# solve with 128 / 256 / 512 / 1,024 took 3.2 / 2.9 / 3.3 / 4.3 s and 10.6 / 10.9 / 12.9 / 17.1 MiB
# (2026-11-25, a 2-core Intel Xeon); every size gives the same values to the last bit.
SOLVE_CHUNK = 256

# What the worker processes read, set before they are forked: (value table, final-roll plan,
# five-of-a-kind options). The table lives in shared memory, so every worker sees the layers
# already solved and writes its own states' values where the parent reads them. One solve at a
# time per process: `_SOLVE_LOCK` makes concurrent callers wait.
_SOLVE_CONTEXT: tuple[np.ndarray, FinalRollPlan, list[np.ndarray]] | None = None
_SOLVE_LOCK = threading.Lock()


def _solve_chunk(chunk: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    """Value the turn-start states (mask, upper total, flag) of one chunk into the table."""
    assert _SOLVE_CONTEXT is not None
    value_table, plan, options = _SOLVE_CONTEXT
    mask, upper, flag = chunk_indices(chunk)
    points, legal, bonus = (part[mask, flag] for part in options)  # [n, 6, ...]
    yahtzee_options = (points.transpose(1, 2, 0), legal.transpose(1, 2, 0), bonus.T)

    def future(next_mask: np.ndarray, next_upper: np.ndarray, next_flag: np.ndarray) -> np.ndarray:
        return value_table[next_mask, next_upper, next_flag]

    final = solver_final_roll_values(mask, upper, flag, plan, yahtzee_options, future)
    value_table[mask, upper, flag] = turn_start_value(final)


def solver_workers() -> int:
    """Processes the solve uses: the CPUs this process may run on, 1 where it cannot fork."""
    if not sys.platform.startswith("linux") or multiprocessing.current_process().daemon:
        return 1  # fork is Linux's safe default only; a daemonic worker may not have children
    return len(os.sched_getaffinity(0))


def _worker_pool(workers: int) -> Any:
    """A pool of forked workers, or None for one process.

    Forked, not spawned: a spawned worker would import JAX again (a second or more each). The
    workers run only NumPy, never JAX, so JAX's warning about forking its threads does not apply.
    """
    if workers <= 1:
        return None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
        try:
            return multiprocessing.get_context("fork").Pool(workers)
        except OSError:  # no processes to be had (a limit on them): solve in this one
            return None


def solve_value_table(
    rules: str | Rules, progress: bool = False, down_to_filled: int = 0, workers: int | None = None
) -> np.ndarray:
    """Backward induction: float64[8192, 64, 2] expected future score of every turn-start state.

    Indexed by [filled mask, capped upper total, flag]; unreachable upper totals are NaN, and so
    are the states with fewer than `down_to_filled` boxes filled (a partial solve, for tests).
    A layer (number of filled boxes) only reads the layers after it, so its states are solved in
    independent chunks of `SOLVE_CHUNK` by `workers` processes (default `solver_workers()`)
    sharing the table. Processes, not threads: on two cores, two threads took 1.5x the time of one
    (the chunks' many small NumPy calls contend for the GIL), two processes half of it.
    """
    with _SOLVE_LOCK:
        return _solve_layers(get_rules(rules), progress, down_to_filled, workers)


def _solve_layers(
    rules: Rules, progress: bool, down_to_filled: int, workers: int | None
) -> np.ndarray:
    global _SOLVE_CONTEXT
    workers = solver_workers() if workers is None else workers
    base, *options = solver_score_tables(rules)
    shape = (NUM_MASKS, NUM_UPPER_TOTALS, NUM_FLAGS)
    shared = mmap.mmap(-1, int(np.prod(shape)) * np.dtype(np.float64).itemsize)
    value_table = np.frombuffer(shared, np.float64).reshape(shape)
    value_table[...] = np.nan
    value_table[FULL_MASK] = 0.0
    _SOLVE_CONTEXT = (value_table, final_roll_plan(base), options)
    layers = range(NUM_CATEGORIES - 1, down_to_filled - 1, -1)
    if progress:
        from tqdm import tqdm

        layers = tqdm(layers, desc=f"solving {rules.name}", unit="layer")
    pool = _worker_pool(workers)
    try:
        for filled_count in layers:
            layer_masks, chunks = layer_chunks(rules, filled_count)
            if pool is None:
                for chunk in chunks:
                    _solve_chunk(chunk)
            else:
                pool.map(_solve_chunk, chunks, chunksize=max(1, len(chunks) // (4 * workers)))
            fill_copies(value_table, layer_masks)
    finally:
        _SOLVE_CONTEXT = None
        if pool is not None:
            pool.terminate()  # the workers are idle here, or the solve failed: no work is lost
            pool.join()
    # The table stays in the shared mapping, unmapped when the last array on it is freed (no
    # second copy); the workers are gone, so no other process can write to it.
    return value_table


@dataclasses.dataclass(frozen=True)
class SolveResult:
    """A solved rule variant: the value table and the optimal expected score of a game."""

    rules: Rules
    value_table: np.ndarray  # float64[8192, 64, 2]; see `solve_value_table`
    expected_score: float  # optimal expected final score of a whole game, bonuses included
    seconds: float  # time spent solving or loading
    from_cache: bool
    cache_path: pathlib.Path | None


def default_cache_dir() -> pathlib.Path:
    """`$YAHTZEE_JAX_CACHE`, else `~/.cache/yahtzee_jax`."""
    return pathlib.Path(os.environ.get("YAHTZEE_JAX_CACHE") or "~/.cache/yahtzee_jax").expanduser()


def cache_file(
    rules: Rules, cache_dir: str | os.PathLike | None = None, table: str = "values"
) -> pathlib.Path:
    """Where a table of `rules` (`values`, or `moments` of `solver.moments`) is cached; the name
    encodes every field of the rules."""
    directory = pathlib.Path(cache_dir) if cache_dir is not None else default_cache_dir()
    key = f"{rules.name}-bonus{int(rules.yahtzee_bonus)}-joker_{rules.joker.value}"
    return directory / f"{table}-v{CACHE_FORMAT}-{key}.npz"


def load_table(path: pathlib.Path, rules: Rules) -> np.ndarray | None:
    """The dense table from the cached values of the solved states, or None if unusable."""
    states = solved_states(rules)
    try:
        with np.load(path, allow_pickle=False) as data:
            values = data["values"]
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error):
        return None  # missing or damaged: solve again
    if values.shape != (int(states.sum()),) or values.dtype != np.float64:
        return None
    table = np.full(states.shape, np.nan)
    table[states] = values
    fill_copies(table)
    return table


def save_table(table: np.ndarray, rules: Rules, path: pathlib.Path) -> None:
    """Store the solved states only (359,616 with the +100), float64, deflated: about 2.3 MB.

    An `.npz` archive (what `np.load` reads) written a block of masks at a time, so that saving
    holds no copy of the values.
    """
    count = int(solved_states(rules).sum())
    header = {"descr": np.dtype(np.float64).str, "fortran_order": False, "shape": (count,)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        with (
            zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive,
            archive.open("values.npy", "w", force_zip64=True) as member,
        ):
            np.lib.format.write_array_header_1_0(member, header)
            for start in range(0, NUM_MASKS, _FILL_BLOCK):
                block = _MASKS[start : start + _FILL_BLOCK]
                member.write(table[block][solved_states(rules, block)].tobytes())
        os.replace(partial, path)  # atomic: a concurrent reader never sees half a file
    except OSError as error:
        raise UserError(f"cannot write the value-table cache {path}: {error}") from error


def solve(
    rules: str | Rules = "official",
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
    use_cache: bool = True,
    force: bool = False,
    workers: int | None = None,
) -> SolveResult:
    """Solve a rule variant exactly, or load its value table from the disk cache.

    `force` solves again and overwrites the cache; `use_cache=False` neither reads nor writes it;
    `workers` is the processes of a solve (`solve_value_table`; default: one per CPU).
    """
    rules = get_rules(rules)
    path = cache_file(rules, cache_dir)
    start = time.perf_counter()
    table = load_table(path, rules) if use_cache and not force else None
    from_cache = table is not None
    if table is None:
        table = solve_value_table(rules, progress=progress, workers=workers)
        if use_cache:
            save_table(table, rules, path)
    return SolveResult(
        rules=rules,
        value_table=table,
        expected_score=float(table[0, 0, 0]),
        seconds=time.perf_counter() - start,
        from_cache=from_cache,
        cache_path=path if use_cache else None,
    )


def optimal_expected_score(rules: str | Rules = "official", cache_dir=None) -> float:
    """Optimal expected final score of a game under `rules` (cached solve)."""
    return solve(rules, cache_dir=cache_dir).expected_score
