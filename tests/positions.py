"""Hand-made positions shared by the tests."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from yahtzee_jax.game import OFFICIAL, Rules, State


def card(
    dice=(1, 1, 1, 1, 1), scores=None, roll_index=0, rules: Rules = OFFICIAL, **fields
) -> State:
    """A card of `rules` with the given dice, written boxes {category: points} and roll index."""
    points = np.zeros(rules.num_boxes, np.int32)
    used = np.zeros(rules.num_boxes, bool)
    for category, value in (scores or {}).items():
        used[category], points[category] = True, value
    return State(
        dice=jnp.int32(sorted(dice)),
        roll_index=jnp.int32(roll_index),
        scores=jnp.asarray(points),
        filled=jnp.asarray(used),
        turns_left=jnp.int32(rules.num_turns - used.sum()),
        **fields,
    )
