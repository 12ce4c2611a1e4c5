"""The turn "widget": exact values inside one turn, given the value of each final roll.

One implementation serves the advisor (NumPy float64), the on-device agents (jax.numpy, one
position or a batch) and the greedy baselines (final value = this turn's score instead of score
plus future). Every function takes the array module `xp` (`numpy` or `jax.numpy`) and works along
axis 0; any further axes are a batch. `turn_start_value`, the solver's hot loop, is the same
computation in NumPy only, in place.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from yahtzee_jax.game.rules import NUM_DICE, NUM_FACES
from yahtzee_jax.solver.widget_tables import (
    ADD_DIE,
    DISTINCT_FACES,
    KEEP_OF_ACTION,
    KEEP_OFFSETS,
    REMOVE_DIE,
    ROLL_PROBABILITIES,
    WIDGET_ORDER,
    WIDGET_POSITION,
)

Array = Any  # numpy.ndarray or jax.Array


def keep_values(roll_values: Array, xp: ModuleType = np) -> Array:
    """Expected value of each of the 462 keeps when the other dice are re-rolled.

    `roll_values[r, ...]` is the value of holding roll r after the re-roll. Re-rolling the dice
    one at a time gives the same distribution as re-rolling them together, so a keep of size s is
    worth the mean over the six faces of the keeps of size s+1 that extend it.
    """
    layers = [roll_values]
    for size in range(NUM_DICE - 1, -1, -1):
        larger = layers[0]
        total = sum(larger[ADD_DIE[size][:, face]] for face in range(NUM_FACES))
        layers.insert(0, total / NUM_FACES)
    return xp.concatenate(layers, axis=0)


def best_keep_values(keep_value: Array, xp: ModuleType = np) -> Array:
    """Value of each of the 252 rolls with a re-roll to come: the best keep among its sub-multisets.

    Dynamic programming over keep sizes: the best sub-multiset of a keep is the keep itself or the
    best sub-multiset of the keep with one die removed. The smaller keeps of a size are gathered
    at once and reduced (maxima are exact in any order): with a gather per removed die, XLA
    fused the keep values' computation into each gather, computing them up to five times.
    """
    best = keep_value[KEEP_OFFSETS[0] : KEEP_OFFSETS[1]]
    for size in range(1, NUM_DICE + 1):
        here = keep_value[KEEP_OFFSETS[size] : KEEP_OFFSETS[size + 1]]
        best = xp.maximum(here, best[REMOVE_DIE[size]].max(axis=1))
    return best


def best_keep_choice(
    keep_value: Array, keep_other: Array, xp: ModuleType = np
) -> tuple[Array, Array]:
    """`best_keep_values`, and `keep_other` of the keep that attains each best value.

    The same dynamic programming, carrying a second quantity of each keep (a second moment, a
    distribution on further trailing axes) along with its value: what the value-maximising
    player's choice of keep implies for it.
    """
    best = keep_value[KEEP_OFFSETS[0] : KEEP_OFFSETS[1]]
    best_other = keep_other[KEEP_OFFSETS[0] : KEEP_OFFSETS[1]]
    for size in range(1, NUM_DICE + 1):
        here = keep_value[KEEP_OFFSETS[size] : KEEP_OFFSETS[size + 1]]
        here_other = keep_other[KEEP_OFFSETS[size] : KEEP_OFFSETS[size + 1]]
        for column in range(size):
            smaller = REMOVE_DIE[size][:, column]
            better = best[smaller] > here
            here = xp.where(better, best[smaller], here)
            extra = (1,) * (here_other.ndim - better.ndim)  # `keep_other` may carry more axes
            here_other = xp.where(
                better.reshape(better.shape + extra), best_other[smaller], here_other
            )
        best, best_other = here, here_other
    return best, best_other


def expected_over_rolls(roll_values: Array, xp: ModuleType = np) -> Array:
    """Expectation over a fresh roll of five dice (the start of a turn)."""
    probabilities = xp.asarray(ROLL_PROBABILITIES, dtype=roll_values.dtype)
    return xp.tensordot(probabilities, roll_values, axes=(0, 0))


def turn_keep_values(final_values: Array, xp: ModuleType = np) -> tuple[Array, Array]:
    """Keep values with one and with two re-rolls left, from the values of the final rolls.

    Returns (last_keep, first_keep), each [462, ...]: `last_keep` values the keep at the second
    keep decision (roll_index 1), `first_keep` at the first one (roll_index 0).
    """
    last_keep = keep_values(final_values, xp)
    first_keep = keep_values(best_keep_values(last_keep, xp), xp)
    return last_keep, first_keep


# Index tables in `WIDGET_ORDER`, transposed for row gathers: one face (or removed die) per row.
# The maximum over the c-th one-die-smaller sub-keep runs over the prefix of the keeps with more
# than c distinct faces: 1,260 row maxima a pass where `REMOVE_DIE`'s padded columns take 1,980.
_ADD_BY_FACE = tuple(
    np.ascontiguousarray(WIDGET_POSITION[size + 1][ADD_DIE[size][WIDGET_ORDER[size]]].T)
    for size in range(NUM_DICE)
)
_REMOVE_BY_COLUMN = tuple(
    tuple(
        np.ascontiguousarray(
            WIDGET_POSITION[size - 1][REMOVE_DIE[size][WIDGET_ORDER[size]]][
                DISTINCT_FACES[size] > column, column
            ]
        )
        for column in range(size)
    )
    for size in range(NUM_DICE + 1)
)


def _keep_layers_inplace(roll_values: np.ndarray, scratch: np.ndarray) -> list[np.ndarray]:
    """`keep_values` split by keep size (NumPy), gathering into `scratch` and adding in place."""
    layers = [roll_values]
    for size in range(NUM_DICE - 1, -1, -1):
        larger, by_face = layers[0], _ADD_BY_FACE[size]
        total = np.take(larger, by_face[0], axis=0)
        gathered = scratch[: len(total)]
        for face in range(1, NUM_FACES):
            np.take(larger, by_face[face], axis=0, out=gathered)
            total += gathered
        total /= NUM_FACES
        layers.insert(0, total)
    return layers


def _best_keep_inplace(layers: list[np.ndarray], scratch: np.ndarray) -> np.ndarray:
    """`best_keep_values` from keep layers (NumPy), overwriting the layers."""
    best = layers[0]
    for size in range(1, NUM_DICE + 1):
        here = layers[size]
        for smaller in _REMOVE_BY_COLUMN[size]:
            rows, gathered = here[: len(smaller)], scratch[: len(smaller)]
            np.take(best, smaller, axis=0, out=gathered)
            np.maximum(rows, gathered, out=rows)
        best = here
    return best


def turn_start_value(final_values: np.ndarray) -> np.ndarray:
    """Expected value of a turn before its first roll, playing the keeps optimally (NumPy).

    The solver's hot loop: the same sums and maxima as `turn_keep_values`, `best_keep_values`
    and `expected_over_rolls`, bit for bit, with the keeps of each size in `WIDGET_ORDER`, the
    gathers written into one scratch buffer and the sums and maxima done in place.
    `final_values` is [252, n] with the rolls in `WIDGET_ORDER[5]` (it is overwritten, as
    `final_rolls.solver_final_roll_values` returns them); returns [n].
    """
    return ROLL_PROBABILITIES @ first_roll_values(final_values)


def first_roll_values(final_values: np.ndarray) -> np.ndarray:
    """`turn_start_value` before its expectation: each first roll's value [252, n], in `ROLLS`
    order (the same in-place passes; `final_values` is overwritten)."""
    scratch = np.empty_like(final_values)
    best_last = _best_keep_inplace(_keep_layers_inplace(final_values, scratch), scratch)
    best_first = _best_keep_inplace(_keep_layers_inplace(best_last, scratch), scratch)
    # Back to `ROLLS` order, so that the expectation sums in the same order as the generic one.
    return np.take(best_first, WIDGET_POSITION[NUM_DICE], axis=0, out=scratch)


def keep_action_values(keep_value: Array, roll: Array, xp: ModuleType = np) -> Array:
    """Values of the 32 engine keep actions (bit i keeps sorted die i) for roll index `roll`."""
    return keep_value[xp.asarray(KEEP_OF_ACTION)[roll]]


def _best_keep_choice_inplace(
    layers: list[np.ndarray], others: list[np.ndarray], scratch: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """`best_keep_choice` from keep layers of values and of a second quantity (NumPy), the
    `_best_keep_inplace` passes carrying the second one; overwrites both sets of layers.

    `scratch` is [2, rows, n]: a gathered value and a gathered second quantity.
    """
    best, best_other = layers[0], others[0]
    better = np.empty(scratch.shape[1:], bool)
    for size in range(1, NUM_DICE + 1):
        here, here_other = layers[size], others[size]
        for smaller in _REMOVE_BY_COLUMN[size]:
            count = len(smaller)
            rows, rows_other = here[:count], here_other[:count]
            gathered, gathered_other = scratch[0, :count], scratch[1, :count]
            chosen = better[:count]
            np.take(best, smaller, axis=0, out=gathered)
            np.greater(gathered, rows, out=chosen)  # strictly: a tie keeps the larger keep
            np.maximum(rows, gathered, out=rows)  # what `chosen` picks; a masked copy branches
            np.take(best_other, smaller, axis=0, out=gathered_other)
            np.copyto(rows_other, gathered_other, where=chosen)
        best, best_other = here, here_other
    return best, best_other


def turn_start_moments(
    final_values: np.ndarray, final_others: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """`turn_start_value`, and the mean of a second quantity of the final rolls (a second moment)
    under the same value-maximising keeps, [n] each (NumPy, in place).

    The numbers of `keep_values` and `best_keep_choice` twice over and `expected_over_rolls`, bit
    for bit; both inputs are [252, n] in `WIDGET_ORDER[5]` and are overwritten.
    """
    scratch = np.empty((2, *final_values.shape))
    last = _keep_layers_inplace(final_values, scratch[0])
    last_other = _keep_layers_inplace(final_others, scratch[0])
    middle, middle_other = _best_keep_choice_inplace(last, last_other, scratch)
    first = _keep_layers_inplace(middle, scratch[0])
    first_other = _keep_layers_inplace(middle_other, scratch[0])
    start, start_other = _best_keep_choice_inplace(first, first_other, scratch)
    # Back to `ROLLS` order, summed as `expected_over_rolls` sums.
    order = WIDGET_POSITION[NUM_DICE]
    return expected_over_rolls(start[order]), expected_over_rolls(start_other[order])
