"""MAXQ-Q's tables: the row of a state (free boxes, dice multiset, rerolls left), exact or hashed.

The tables themselves are the train state's params (`algorithms.maxq`); the module holds no
weights, only the layout: the box count and the number of rows.
"""

from __future__ import annotations

import itertools
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.game.rules import DECISIONS_PER_TURN, NUM_DICE, NUM_FACES

NUM_MULTISETS = 252  # C(10, 5) unordered rolls of five dice
SLOT_HASH = np.uint32(2654435761)  # Knuth's multiplicative (Fibonacci) hashing constant


def multisets() -> np.ndarray:
    """The 252 sorted rolls, int[252, 5], in lexicographic order."""
    return np.array(list(itertools.combinations_with_replacement(range(1, 7), NUM_DICE)))


def dice_code(dice: np.ndarray | jax.Array) -> Any:
    """Base-6 code of sorted dice (faces 1..6), 0..7775."""
    return sum((dice[..., i] - 1) * NUM_FACES**i for i in range(NUM_DICE))


def dice_index_table() -> np.ndarray:
    """int32[7776]: the multiset index (0..251) of each sorted roll's base-6 code."""
    table = np.full(NUM_FACES**NUM_DICE, -1, np.int32)
    table[dice_code(multisets())] = np.arange(NUM_MULTISETS)
    return table


DICE_INDEX = dice_index_table()


class Tables(nn.Module):
    """Static description of the tables (no weights): the box count and the table layout."""

    num_boxes: int
    table_bits: int

    @property
    def exact_states(self) -> int:
        """2^boxes x 252 x 3."""
        return 2**self.num_boxes * NUM_MULTISETS * DECISIONS_PER_TURN

    @property
    def num_slots(self) -> int:
        """Rows of V and C."""
        return self.exact_states if self.table_bits == 0 else 2**self.table_bits

    def slot(self, free: jax.Array, dice: jax.Array, rerolls: jax.Array) -> jax.Array:
        """Row of a state: free bool[..., boxes], sorted dice [..., 5], rerolls left [...]."""
        bits = jnp.sum(free.astype(jnp.int32) << jnp.arange(self.num_boxes), axis=-1)
        multiset = jnp.asarray(DICE_INDEX)[dice_code(dice)]
        exact = (bits * NUM_MULTISETS + multiset) * DECISIONS_PER_TURN + rerolls
        if self.table_bits == 0:
            return exact
        hashed = exact.astype(jnp.uint32) * SLOT_HASH  # wraps modulo 2^32
        return (hashed >> (32 - self.table_bits)).astype(jnp.int32)

    def __call__(self, x: jax.Array) -> jax.Array:
        """Unused (the tables are read by `greedy`); present so the module can be built."""
        return x
