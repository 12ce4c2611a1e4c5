"""The solver's turn-start states of a rule set, and which of them it values.

A turn-start state is (filled-box mask, upper total capped at the bonus threshold, Yahtzee box
holds 50): a table over them is [1 << boxes, threshold + 1, 2] (8192 x 64 x 2 for Yahtzee).
States whose value is a copy of another's (an upper total from which the bonus is out of reach,
flag 1 where no Yahtzee bonus is paid) are not solved (`solved_states`) but filled in
(`fill_copies`). Everything here is NumPy and per rule set (cached on the hashable `Rules`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import numpy as np

from yahtzee_jax.game.rules import NUM_DICE, NUM_FACES, Rules
from yahtzee_jax.solver.widget_tables import NUM_FLAGS, ROLL_PROBABILITIES, num_masks

# States per solver task: a chunk's [462, n] float64 widget arrays stay in the cache. A one-process
# solve with 128 / 256 / 512 / 1,024 took 3.2 / 2.9 / 3.3 / 4.3 s and 10.6 / 10.9 / 12.9 / 17.1 MiB
# (2026-11-25, a 2-core Intel Xeon); every size gives the same values to the last bit.
SOLVE_CHUNK = 256
FILL_BLOCK = 256  # masks per block when copying or saving values: temporaries under 1 MB


def upper_cap(rules: Rules) -> int:
    """The cap on the tracked upper total: the bonus threshold (0 for a game without a bonus,
    where the upper total never matters)."""
    return rules.upper_bonus_threshold if rules.upper_bonus_points else 0


def num_upper_totals(rules: Rules) -> int:
    """Capped upper totals of a state: 0..cap, the cap meaning "the cap or more" (64 in Yahtzee)."""
    return upper_cap(rules) + 1


def full_mask(rules: Rules) -> int:
    """The mask of the full card."""
    return num_masks(rules) - 1


def _upper_type(rules: Rules) -> type:
    """The smallest integer type of a capped upper total (int8 for Yahtzee's 0..63)."""
    return np.int8 if num_upper_totals(rules) <= 1 << 7 else np.int16


def table_shape(rules: Rules) -> tuple[int, int, int]:
    """Shape of a table over the turn-start states: (masks, upper totals, flags)."""
    return num_masks(rules), num_upper_totals(rules), NUM_FLAGS


def reachable_upper_totals(upper_mask: int, rules: Rules) -> np.ndarray:
    """Capped upper totals that the filled upper boxes of `upper_mask` can sum to (sorted)."""
    totals = {0}
    for box in range(rules.num_upper):
        if upper_mask >> box & 1:
            face = box + 1
            totals = {
                min(total + face * count, upper_cap(rules))
                for total in totals
                for count in range(NUM_FACES)
            }
    return np.array(sorted(totals), dtype=np.int64)


@functools.cache
def representative_totals(rules: Rules) -> np.ndarray:
    """int[upper masks, upper totals]: the capped upper total whose value a total shares; -1 if
    the filled upper boxes cannot sum to it.

    The upper total only matters for the upper bonus: once five dice of each open upper box's
    face could not bring it to the threshold, no play can, and every such total has the value of
    the smallest of them. A third of Yahtzee's reachable states are such copies.
    """
    upper_masks = 1 << rules.num_upper
    representative = np.full((upper_masks, num_upper_totals(rules)), -1, _upper_type(rules))
    for upper_mask in range(upper_masks):
        totals = reachable_upper_totals(upper_mask, rules)
        open_faces = [box + 1 for box in range(rules.num_upper) if not upper_mask >> box & 1]
        hopeless = totals + NUM_DICE * sum(open_faces) < upper_cap(rules)
        representative[upper_mask, totals] = np.where(hopeless, totals[0], totals)
    return representative


@functools.cache
def _mask_tables(rules: Rules) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(every mask, representative totals of each mask [masks, totals], boxes filled per mask,
    Yahtzee box filled per mask)."""
    masks = np.arange(num_masks(rules))
    representative = representative_totals(rules)[masks & (1 << rules.num_upper) - 1]
    filled_count = np.array([bin(mask).count("1") for mask in masks])
    yahtzee_filled = (masks >> rules.yahtzee_box) & 1 == 1
    return masks, representative, filled_count, yahtzee_filled


def all_masks(rules: Rules) -> np.ndarray:
    """Every filled-box mask, 0 .. full_mask(rules)."""
    return _mask_tables(rules)[0]


def filled_count(rules: Rules) -> np.ndarray:
    """Boxes filled in each mask, int[masks]."""
    return _mask_tables(rules)[2]


def solved_states(rules: Rules, masks: np.ndarray | None = None) -> np.ndarray:
    """bool[masks, upper totals, 2]: the turn-start states of `masks` (default all) the solver
    values and caches.

    Reachable upper totals that are their own representative (see `representative_totals`);
    flag 1 (a 50 in the Yahtzee box) is a state of its own only when the box is filled and the
    variant pays the Yahtzee bonus. `fill_copies` gives every other reachable state its value.
    """
    every, representative, _, yahtzee_filled = _mask_tables(rules)
    masks = every if masks is None else masks
    states = np.zeros((len(masks), num_upper_totals(rules), NUM_FLAGS), bool)
    states[:, :, 0] = np.arange(num_upper_totals(rules)) == representative[masks]
    if rules.yahtzee_bonus:
        states[:, :, 1] = states[:, :, 0] & yahtzee_filled[masks, None]
    return states


def layer_states(rules: Rules, filled: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The masks with `filled` boxes filled, and their solved states as columns (mask, upper,
    flag), in order.

    The states are kept as int16, int8, int8 (wider for larger games), found a block of masks at a
    time: Yahtzee's largest layer has 88,049 of them, whose int64 indices would hold 2 MB through
    the layer's solve.
    """
    layer_masks = np.flatnonzero(np.equal(filled_count(rules), filled))
    mask_type = np.int16 if num_masks(rules) <= 1 << 15 else np.int32
    blocks = []
    for start in range(0, len(layer_masks), FILL_BLOCK):
        block = layer_masks[start : start + FILL_BLOCK]
        row, upper, flag = np.nonzero(solved_states(rules, block))
        upper = upper.astype(_upper_type(rules))
        blocks.append((block[row].astype(mask_type), upper, flag.astype(np.int8)))
    return layer_masks, [np.concatenate(column) for column in zip(*blocks, strict=True)]


def layer_chunks(
    rules: Rules, filled: int
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """`layer_states` in chunks of `SOLVE_CHUNK` states (`chunk_indices` makes a chunk the int64
    indices it is used as)."""
    layer_masks, states = layer_states(rules, filled)
    splits = range(SOLVE_CHUNK, len(states[0]), SOLVE_CHUNK)
    return layer_masks, list(zip(*(np.split(column, splits) for column in states), strict=True))


def chunk_indices(chunk: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """A chunk of `layer_chunks` as int64 (mask, upper, flag), what the solvers index with."""
    return tuple(column.astype(np.int64) for column in chunk)


def fill_copies(value_table: np.ndarray, rules: Rules, masks: np.ndarray | None = None) -> None:
    """Give the reachable states of `masks` (default all) that are not solved the value of the
    state they equal.

    Flag 1 takes flag 0's value where it is no state of its own, then a total whose bonus is out
    of reach takes its representative's values; a block of masks at a time, to keep it small.
    """
    every, representative_of_state, _, _ = _mask_tables(rules)
    masks = every if masks is None else masks
    for start in range(0, len(masks), FILL_BLOCK):
        block = masks[start : start + FILL_BLOCK]
        table = value_table[block]  # [block, totals, 2], a copy
        unsolved = np.isnan(table[:, :, 1]) & ~np.isnan(table[:, :, 0])
        table[:, :, 1][unsolved] = table[:, :, 0][unsolved]
        representative = representative_of_state[block]
        copies = (representative >= 0) & (representative != np.arange(num_upper_totals(rules)))
        rows = np.nonzero(copies)[0]
        table[copies] = table[rows, representative[copies]]
        value_table[block] = table


def chunk_expectations(blocks: np.ndarray, lengths: Iterable[int]) -> np.ndarray:
    """The expectation over the first roll of each chunk's first `lengths[block]` states (of
    blocks [chunk, 252, >= SOLVE_CHUNK]), a chunk's dot alone, as the NumPy loop takes it: BLAS
    rounds a column by how many columns there are (2,048 of them, for one, give other values).
    A whole chunk is dotted in place (the same dot, strided or not); a short one is copied, as
    NumPy dots a lone strided column in another order."""
    return np.concatenate(
        [
            ROLL_PROBABILITIES
            @ (block[:, :n] if n == SOLVE_CHUNK else np.ascontiguousarray(block[:, :n]))
            for block, n in zip(blocks, lengths, strict=True)
            if n
        ]
    )
