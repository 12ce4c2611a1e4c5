"""Kang & Schroeder's 96 binary atomic single-player features (seed 001, Table II).

The feature set `features.kind=kang`: the input of the perceptron Q(lambda) learner
(`algorithms.q_lambda`), the state the MAXQ tables are indexed by (`algorithms.maxq`), and an
ablation input for the deep learners. Every entry is 0 or 1. Layout, in this order (sizes for
Yahtzee's 13 boxes; the box group follows the rule set's box table):

=======================  =====  ==========================================================
group                    size   1 when
=======================  =====  ==========================================================
box free                 13     box k is still open
die value                30     die i (sorted ascending) shows face v, die-major
face count               36     exactly c dice show face v (c = 0..5), face-major
distinct values          5      the dice show exactly n distinct faces (n = 1..5)
dice sum (groups of 5)   6      the sum s (5..30) is in group s // 5 - 1: 5-9, ..., 25-29, 30
rerolls left             3      2 - roll index rerolls are left (0, 1, 2)
rounds left (groups 5)   3      the rounds after this one (0..12) are in group n // 5
=======================  =====  ==========================================================

The seed does not say whether "remaining rounds" counts the current round; we count the rounds
after it (12 at the first decision), so the three groups are 0-4, 5-9 and 10-12.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from yahtzee_jax.game.engine import State
from yahtzee_jax.game.rules import DECISIONS_PER_TURN, NUM_DICE, NUM_FACES, Rules, face_counts

SUM_GROUPS = 6  # sums 5..30 in groups of five: 5-9, 10-14, 15-19, 20-24, 25-29, 30
ROUND_GROUPS = 3  # rounds after this one 0..12 in groups of five: 0-4, 5-9, 10-12


def atomic_groups(rules: Rules) -> list[tuple[str, int]]:
    """The (name, size) of each group of the atomic vector, in order."""
    return [
        ("box_free", rules.num_boxes),
        ("die_value", NUM_DICE * NUM_FACES),
        ("face_count", NUM_FACES * (NUM_DICE + 1)),
        ("distinct_values", NUM_DICE),
        ("dice_sum", SUM_GROUPS),
        ("rerolls_left", DECISIONS_PER_TURN),
        ("rounds_left", ROUND_GROUPS),
    ]


def atomic_size(rules: Rules) -> int:
    """Length of the atomic vector (96 for Yahtzee)."""
    return sum(size for _, size in atomic_groups(rules))


def atomic_features(state: State, rules: Rules) -> jax.Array:
    """The 0/1 atomic vector (float32[atomic_size]) of one unbatched state."""
    counts = face_counts(state.dice)  # int32[6]
    distinct = jnp.sum(counts > 0)
    total = jnp.sum(state.dice)
    rerolls = DECISIONS_PER_TURN - 1 - state.roll_index
    # A terminated card has turns_left 0: clip so its (never used) vector stays 0/1.
    rounds_after = jnp.clip(state.turns_left - 1, 0, 12)
    parts = [
        ~state.filled,
        jax.nn.one_hot(state.dice - 1, NUM_FACES).reshape(-1),
        jax.nn.one_hot(counts, NUM_DICE + 1).reshape(-1),
        jax.nn.one_hot(distinct - 1, NUM_DICE),
        jax.nn.one_hot(jnp.clip(total // 5 - 1, 0, SUM_GROUPS - 1), SUM_GROUPS),
        jax.nn.one_hot(rerolls, DECISIONS_PER_TURN),
        jax.nn.one_hot(jnp.minimum(rounds_after // 5, ROUND_GROUPS - 1), ROUND_GROUPS),
    ]
    return jnp.concatenate([part.astype(jnp.float32) for part in parts])
