"""Kang & Schroeder's 96 atomic features (seed 001, Table II) on hand-made positions."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from positions import card

from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs.atomic_features import atomic_groups, atomic_size
from yahtzee_jax.envs.features import batch_features, feature_size, features
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.game import Category, get_rules

PLAIN = get_rules("plain")
KANG = FeatureConfig(kind="kang")


def hand_vector(free, dice, rerolls, rounds_after):
    """The atomic vector written out by hand, group by group (Table II's definitions)."""
    box_free = [1.0 if k in free else 0.0 for k in range(13)]
    die_value = []
    for value in sorted(dice):
        die_value += [1.0 if face == value else 0.0 for face in range(1, 7)]
    face_count = []
    for face in range(1, 7):
        count = list(dice).count(face)
        face_count += [1.0 if c == count else 0.0 for c in range(6)]
    distinct = [1.0 if n == len(set(dice)) else 0.0 for n in range(1, 6)]
    total = sum(dice)
    group = min(total // 5 - 1, 5)
    dice_sum = [1.0 if g == group else 0.0 for g in range(6)]
    rerolls_left = [1.0 if r == rerolls else 0.0 for r in range(3)]
    rounds = [1.0 if g == min(rounds_after // 5, 2) else 0.0 for g in range(3)]
    return np.array(
        box_free + die_value + face_count + distinct + dice_sum + rerolls_left + rounds, np.float32
    )


def test_table_ii_sizes():
    """13 + 30 + 36 + 5 + 6 + 3 + 3 = 96 for Yahtzee, and the feature set reports it."""
    assert [size for _, size in atomic_groups(PLAIN)] == [13, 30, 36, 5, 6, 3, 3]
    assert atomic_size(PLAIN) == 96 == feature_size(KANG, PLAIN)


def test_opening_position():
    """Empty card, dice 1 2 3 4 6, first roll: all 13 boxes free, five distinct faces, sum 16
    (group 15-19), 2 rerolls left, 12 rounds after this one (group 10-12)."""
    state = card(dice=(6, 2, 4, 1, 3), rules=PLAIN)
    got = np.asarray(features(state, KANG, PLAIN))
    want = hand_vector(set(range(13)), (1, 2, 3, 4, 6), rerolls=2, rounds_after=12)
    np.testing.assert_array_equal(got, want)
    assert got.sum() == 13 + 5 + 6 + 1 + 1 + 1 + 1  # each die, each face's count, one per group


def test_late_position_five_of_a_kind():
    """Only Sixes and Chance free (11 boxes used: 2 turns left, 1 after this), dice 6 6 6 6 6 at
    the scoring decision: sum 30 is the last group, one distinct value, 0 rerolls left."""
    used = {c: 0 for c in Category if c not in (Category.SIXES, Category.CHANCE)}
    state = card(dice=(6, 6, 6, 6, 6), scores=used, roll_index=2, rules=PLAIN)
    got = np.asarray(features(state, KANG, PLAIN))
    want = hand_vector({Category.SIXES, Category.CHANCE}, (6,) * 5, rerolls=0, rounds_after=1)
    np.testing.assert_array_equal(got, want)
    # spot checks written against the layout: face-count group starts at 13 + 30 = 43
    assert got[43 + 5 * 6 + 5] == 1.0  # five sixes
    assert got[43 + 0 * 6 + 0] == 1.0  # no ones
    assert got[79 + 0] == 1.0  # one distinct value
    assert got[84 + 5] == 1.0  # sum 30
    assert got[90 + 0] == 1.0 and got[93 + 0] == 1.0  # no rerolls, rounds group 0-4


def test_mid_game_batch():
    """Batched: dice 2 2 3 3 3 (full house, sum 13: group 10-14, two distinct) at the second
    keep decision with Ones..Fours used (9 turns left, 8 after this: group 5-9)."""
    used = {Category.ONES: 3, Category.TWOS: 4, Category.THREES: 9, Category.FOURS: 8}
    state = card(dice=(3, 2, 3, 2, 3), scores=used, roll_index=1, rules=PLAIN)
    batch = jax_stack([state, card(dice=(6, 2, 4, 1, 3), rules=PLAIN)])
    got = np.asarray(batch_features(batch, KANG, PLAIN))
    free = set(range(13)) - {0, 1, 2, 3}
    np.testing.assert_array_equal(got[0], hand_vector(free, (2, 2, 3, 3, 3), 1, 8))
    np.testing.assert_array_equal(got[1], hand_vector(set(range(13)), (1, 2, 3, 4, 6), 2, 12))


def test_unknown_kind_is_refused():
    """A misspelt feature set is a one-line config error."""
    with pytest.raises(ConfigError, match=r"features\.kind"):
        FeatureConfig(kind="atomic")


def jax_stack(states):
    """A batch of hand-made states."""
    import jax

    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *states)
