"""Static index tables of the turn "widget" and the score tables obtained from `score_options`.

Dice are handled as multisets: the 252 sorted rolls of five dice and the 462 "keeps" (multisets of
0..5 dice). Keeps are numbered by size (all size-0 keeps first, then size 1, ...) and, within a
size, in lexicographic order; the size-5 keeps are the 252 rolls in the same order as `ROLLS`.
The dice tables are the same in every game of the family; the score tables and the filled-box
masks (``1 << rules.num_boxes`` of them) follow the rule set's box table.
"""

from __future__ import annotations

import functools
import itertools
import math
from types import ModuleType
from typing import Any

import numpy as np

from yahtzee_jax.game.rules import (
    NUM_DICE,
    NUM_FACES,
    NUM_KEEP_ACTIONS,
    Box,
    Joker,
    Rules,
    array_module,
    base_scores,
    score_options,
)

Array = Any  # numpy.ndarray or jax.Array

NUM_FLAGS = 2  # Yahtzee box holds 50 (1) or not (0)


def num_masks(rules: Rules) -> int:
    """Filled-box masks of the rule set's card: bit c is box c."""
    return 1 << rules.num_boxes


def _multisets(size: int) -> list[tuple[int, ...]]:
    return list(itertools.combinations_with_replacement(range(1, NUM_FACES + 1), size))


KEEPS_BY_SIZE: tuple[list[tuple[int, ...]], ...] = tuple(
    _multisets(size) for size in range(NUM_DICE + 1)
)
KEEP_OFFSETS = np.cumsum(
    [0] + [len(keeps) for keeps in KEEPS_BY_SIZE]
)  # [0, 1, 7, 28, 84, 210, 462]
NUM_KEEPS = int(KEEP_OFFSETS[-1])
ROLLS = np.array(KEEPS_BY_SIZE[NUM_DICE], dtype=np.int32)  # int32[252, 5], sorted dice
NUM_ROLLS = len(ROLLS)
FIRST_ROLL_KEEP = int(KEEP_OFFSETS[NUM_DICE])  # keep index of ROLLS[0]

_INDEX_IN_SIZE = [{keep: i for i, keep in enumerate(keeps)} for keeps in KEEPS_BY_SIZE]


def keep_index(keep: tuple[int, ...]) -> int:
    """Global index (0..461) of a sorted keep multiset."""
    return int(KEEP_OFFSETS[len(keep)]) + _INDEX_IN_SIZE[len(keep)][tuple(sorted(keep))]


def roll_index_of(dice: tuple[int, ...]) -> int:
    """Index (0..251) of a roll of five dice in `ROLLS`."""
    return _INDEX_IN_SIZE[NUM_DICE][tuple(sorted(dice))]


def _roll_probabilities() -> np.ndarray:
    """Probability of each sorted roll: multinomial coefficient / 6^5."""
    counts = np.stack([np.bincount(roll, minlength=NUM_FACES + 1)[1:] for roll in ROLLS])
    ways = [math.factorial(NUM_DICE) / np.prod([math.factorial(c) for c in row]) for row in counts]
    return np.array(ways, dtype=np.float64) / NUM_FACES**NUM_DICE


ROLL_PROBABILITIES = _roll_probabilities()  # float64[252], sums to 1

# ADD_DIE[size][i, f]: index within size+1 of keep i of `size` plus one die showing f+1.
ADD_DIE: tuple[np.ndarray, ...] = tuple(
    np.array(
        [
            [_INDEX_IN_SIZE[size + 1][tuple(sorted((*keep, face)))] for face in range(1, 7)]
            for keep in KEEPS_BY_SIZE[size]
        ],
        dtype=np.int32,
    )
    for size in range(NUM_DICE)
)


def _remove_one_die(size: int) -> np.ndarray:
    """REMOVE_DIE[size][i, j]: index within size-1 of keep i minus its j-th distinct face.

    Rows have `size` columns (the most distinct faces a keep of that size can have); shorter rows
    repeat their last entry, which is harmless under a max.
    """
    rows = []
    for keep in KEEPS_BY_SIZE[size]:
        smaller = []
        for face in sorted(set(keep)):
            rest = list(keep)
            rest.remove(face)
            smaller.append(_INDEX_IN_SIZE[size - 1][tuple(rest)])
        rows.append(smaller + [smaller[-1]] * (size - len(smaller)))
    return np.array(rows, dtype=np.int32)


REMOVE_DIE: tuple[np.ndarray, ...] = (
    np.zeros((1, 0), np.int32),  # the empty keep has nothing to remove
    *(_remove_one_die(size) for size in range(1, NUM_DICE + 1)),
)

# KEEP_OF_ACTION[r, a]: global keep index of the dice of roll r that keep action a keeps.
KEEP_OF_ACTION = np.array(
    [
        [
            keep_index(tuple(int(roll[i]) for i in range(NUM_DICE) if action >> i & 1))
            for action in range(NUM_KEEP_ACTIONS)
        ]
        for roll in ROLLS
    ],
    dtype=np.int32,
)

# Face counts of every roll, int32[252, 6].
ROLL_COUNTS = np.stack([np.bincount(roll, minlength=NUM_FACES + 1)[1:] for roll in ROLLS]).astype(
    np.int32
)


def _widget_order(size: int) -> np.ndarray:
    """Position -> keep of `size` in the solver's widget: most distinct faces first, then fewest
    dice of the commonest face (which makes most lower boxes' scoring rolls one run)."""
    counts = np.array(
        [
            np.bincount(np.array(keep, int), minlength=NUM_FACES + 1)[1:]
            for keep in KEEPS_BY_SIZE[size]
        ]
    )
    return np.lexsort((counts.max(axis=1), -(counts > 0).sum(axis=1)))


# The solver's hot loop (`widget.turn_start_value`, `final_rolls.solver_final_roll_values`) holds
# each keep size's values in this order. A keep with d distinct faces has d one-die-smaller
# sub-keeps, so an operation on the c-th distinct face of each keep runs over a prefix of the layer
# (a view).
WIDGET_ORDER = tuple(_widget_order(size) for size in range(NUM_DICE + 1))
WIDGET_POSITION = tuple(np.argsort(order) for order in WIDGET_ORDER)  # keep -> position
# Distinct faces of each keep, in `WIDGET_ORDER` (non-increasing).
DISTINCT_FACES = tuple(
    np.array([len(set(KEEPS_BY_SIZE[size][keep])) for keep in order])
    for size, order in enumerate(WIDGET_ORDER)
)


def mask_to_filled(masks: np.ndarray, rules: Rules) -> np.ndarray:
    """Filled-box masks (int[...]) -> bool[..., boxes]; bit c is box c."""
    return (np.asarray(masks)[..., None] >> np.arange(rules.num_boxes)) & 1 == 1


def filled_to_mask(filled: np.ndarray) -> np.ndarray:
    """bool[..., boxes] -> int mask; the inverse of `mask_to_filled`."""
    filled = np.asarray(filled, dtype=np.int64)
    return np.sum(filled << np.arange(filled.shape[-1]), axis=-1)


def score_all_rolls(filled: Array, yahtzee_box: Array, rules: Rules) -> tuple[Array, Array, Array]:
    """`score_options` of all 252 rolls against cards (NumPy or JAX; leading axes are cards):
    ([..., 252, boxes], [..., 252, boxes], [..., 252])."""
    return _score_rolls(ROLL_COUNTS, filled, yahtzee_box, rules)


def _score_rolls(
    counts: np.ndarray, filled: Array, yahtzee_box: Array, rules: Rules
) -> tuple[Array, Array, Array]:
    """`score_options` of the rolls `counts` [rolls, 6] against cards [..., boxes]:
    ([..., rolls, boxes] x 2, [..., rolls])."""
    yahtzee_box = array_module(filled, yahtzee_box).asarray(yahtzee_box)[..., None]
    return score_options(counts, filled[..., None, :], yahtzee_box, rules)


# The six five-of-a-kinds (faces 1..6 in order): the only rolls whose options depend on the card
# beyond its open boxes (the Joker rules and the +100 bonus).
YAHTZEE_ROLLS = np.flatnonzero(ROLL_COUNTS.max(axis=1) == NUM_DICE)


def base_points(rules: Rules) -> np.ndarray:
    """Points of every roll in every box without any Joker, int64[252, boxes] (`base_scores`)."""
    return _base_points_of_boxes(rules.boxes)  # the bonus and Joker rules do not change them


@functools.cache
def _base_points_of_boxes(boxes: tuple[Box, ...]) -> np.ndarray:
    rules = Rules("base points", yahtzee_bonus=False, joker=Joker.NONE, boxes=boxes)
    return base_scores(ROLL_COUNTS, rules).astype(np.int64)


def score_yahtzee_rolls(
    filled: Array, yahtzee_box: Array, rules: Rules
) -> tuple[Array, Array, Array]:
    """`score_options` of the six five-of-a-kinds against cards: ([..., 6, boxes] x 2, [..., 6])."""
    return _score_rolls(ROLL_COUNTS[YAHTZEE_ROLLS], filled, yahtzee_box, rules)


def solver_score_tables(rules: Rules) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What the solver scores with, in NumPy: `base_points()` and the options of the
    five-of-a-kinds against every card (2.6 MB for Yahtzee; all 252 rolls' would be 110 MB).

    Returns (base points int64[252, boxes], points int8[masks, 2, 6, boxes], legal bool[masks,
    2, 6, boxes], bonus bool[masks, 2, 6]), the last three indexed by [filled mask, flag,
    five-of-a-kind]; flag 1 means the Yahtzee box holds 50. Kept for the last 4 rule sets asked
    for.
    """
    if rules in _SCORE_TABLES:
        return _SCORE_TABLES[rules]
    masks = num_masks(rules)
    filled = mask_to_filled(np.arange(masks), rules)[:, None, :]  # [masks, 1 (flag), boxes]
    yahtzee_box = np.array([0, rules.yahtzee_score], np.int32)  # [2]: the flag's points
    points, legal, bonus = score_yahtzee_rolls(filled, yahtzee_box, rules)
    tables = (
        base_points(rules),
        points.astype(np.int8),
        np.ascontiguousarray(legal),
        np.ascontiguousarray(bonus),
    )
    if len(_SCORE_TABLES) == 4:
        del _SCORE_TABLES[next(iter(_SCORE_TABLES))]  # the oldest
    _SCORE_TABLES[rules] = tables
    return tables


# `solver_score_tables` of the last rule sets asked for.
_SCORE_TABLES: dict[Rules, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}


def dice_code(dice: Any, xp: ModuleType = np) -> Any:
    """Base-6 code (0..7775) of five sorted dice; `ROLL_OF_CODE` maps it to the roll index."""
    return xp.sum((dice - 1) * NUM_FACES ** xp.arange(NUM_DICE), axis=-1)


ROLL_OF_CODE = np.full(NUM_FACES**NUM_DICE, -1, dtype=np.int32)  # -1: unsorted dice
ROLL_OF_CODE[dice_code(ROLLS)] = np.arange(NUM_ROLLS)
