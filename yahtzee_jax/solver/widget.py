"""The turn "widget": exact values inside one turn, given the value of each final roll.

One implementation serves the exact solver (NumPy float64, batched over thousands of positions),
the on-device agents (jax.numpy, one position) and the greedy baselines (final value = this
turn's score instead of score plus future). Every function takes the array module `xp` (`numpy`
or `jax.numpy`) and works along axis 0; any further axes are a batch.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from yahtzee_jax.game.rules import NUM_DICE, NUM_FACES
from yahtzee_jax.solver.tables import (
    ADD_DIE,
    KEEP_OF_ACTION,
    KEEP_OFFSETS,
    REMOVE_DIE,
    ROLL_PROBABILITIES,
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
    best sub-multiset of the keep with one die removed.
    """
    best = keep_value[KEEP_OFFSETS[0] : KEEP_OFFSETS[1]]
    for size in range(1, NUM_DICE + 1):
        best_here = keep_value[KEEP_OFFSETS[size] : KEEP_OFFSETS[size + 1]]
        for column in range(size):
            best_here = xp.maximum(best_here, best[REMOVE_DIE[size][:, column]])
        best = best_here
    return best


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


def turn_start_value(final_values: Array, xp: ModuleType = np) -> Array:
    """Expected value of a turn before its first roll, playing the keeps optimally."""
    _, first_keep = turn_keep_values(final_values, xp)
    return expected_over_rolls(best_keep_values(first_keep, xp), xp)


def keep_action_values(keep_value: Array, roll: Array, xp: ModuleType = np) -> Array:
    """Values of the 32 engine keep actions (bit i keeps sorted die i) for roll index `roll`."""
    return keep_value[xp.asarray(KEEP_OF_ACTION)[roll]]
