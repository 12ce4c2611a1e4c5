"""Hand-made positions shared by the tests."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from yahtzee_jax.game import State
from yahtzee_jax.game.rules import NUM_CATEGORIES, NUM_TURNS


def card(dice=(1, 1, 1, 1, 1), scores=None, roll_index=0, **fields) -> State:
    """A card with the given dice, written boxes {category: points} and roll index."""
    points = np.zeros(NUM_CATEGORIES, np.int32)
    used = np.zeros(NUM_CATEGORIES, bool)
    for category, value in (scores or {}).items():
        used[category], points[category] = True, value
    return State(
        dice=jnp.int32(sorted(dice)),
        roll_index=jnp.int32(roll_index),
        scores=jnp.asarray(points),
        filled=jnp.asarray(used),
        turns_left=jnp.int32(NUM_TURNS - used.sum()),
        **fields,
    )
