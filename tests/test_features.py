"""Feature vector layout and values on hand-made positions."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs.features import feature_groups, feature_size, features
from yahtzee_jax.game import OFFICIAL, Category, State, get_rules

ALL = FeatureConfig()


def split(vector: np.ndarray, config: FeatureConfig = ALL) -> dict[str, np.ndarray]:
    """Cut a feature vector into its named groups."""
    parts, start = {}, 0
    for name, size in feature_groups(config, OFFICIAL):
        parts[name] = np.asarray(vector[start : start + size])
        start += size
    assert start == len(vector)
    return parts


def card(filled: dict[Category, int]) -> dict:
    """scores/filled arrays for a card with the given boxes written."""
    scores = np.zeros(13, np.int32)
    used = np.zeros(13, bool)
    for category, points in filled.items():
        scores[category] = points
        used[category] = True
    return {"scores": jnp.asarray(scores), "filled": jnp.asarray(used)}


def test_default_layout_has_75_inputs():
    """All groups on with combined dice: 30 + 6 + 13 + 1 + 3 + 1 + 1 + 1 + 6 + 13."""
    assert feature_size(ALL, OFFICIAL) == 75
    assert [name for name, _ in feature_groups(ALL, OFFICIAL)][:2] == ["dice_onehot", "dice_counts"]


def test_groups_switch_off():
    """Each switch removes exactly its group."""
    assert feature_size(FeatureConfig(dice="onehot"), OFFICIAL) == 75 - 6
    assert feature_size(FeatureConfig(dice="counts"), OFFICIAL) == 75 - 30
    assert (
        feature_size(dataclasses.replace(ALL, lock_in=False, potential_scores=False), OFFICIAL)
        == 75 - 19
    )


def test_values_of_a_mid_game_position():
    """Dice 2 2 2 5 6 at the second keep decision; ones, twos, threes, fours used (upper 36).

    Threes would not reach 63; sixes would score 6 -> 42; the card has 4 boxes used (t=4).
    """
    state = State.empty(
        OFFICIAL,
        dice=jnp.int32([2, 2, 2, 5, 6]),
        roll_index=jnp.int32(1),
        **card({Category.ONES: 3, Category.TWOS: 8, Category.THREES: 12, Category.FOURS: 13}),
    )
    parts = split(features(state, ALL, OFFICIAL))
    assert parts["dice_onehot"].reshape(5, 6).argmax(axis=1).tolist() == [1, 1, 1, 4, 5]
    np.testing.assert_allclose(parts["dice_counts"], [0, 3 / 5, 0, 0, 1 / 5, 1 / 5])
    assert parts["category_open"].tolist() == [0, 0, 0, 0] + [1] * 9
    np.testing.assert_allclose(parts["upper_progress"], [36 / 63])
    assert parts["roll_index"].tolist() == [0, 1, 0]
    np.testing.assert_allclose(parts["game_progress"], [4 / 12])
    assert parts["joker"].tolist() == [0]
    assert parts["yahtzee_bonus_live"].tolist() == [0]
    assert parts["lock_in"].tolist() == [0] * 6
    expected = np.zeros(13)
    expected[Category.FIVES] = 5 / 25
    expected[Category.SIXES] = 6 / 30
    expected[Category.THREE_OF_A_KIND] = 17 / 30
    expected[Category.CHANCE] = 17 / 30
    np.testing.assert_allclose(parts["potential_scores"], expected, rtol=1e-6)


def test_lock_in_and_progress_clip():
    """Upper 45 (twos, threes, fours, sixes used), dice 1 5 5 5 5: fives would give 20 -> 65,
    a lock-in; ones would give 1 -> 46, not one. Upper progress is clipped at 1 past 63."""
    state = State.empty(
        OFFICIAL,
        dice=jnp.int32([1, 5, 5, 5, 5]),
        **card({Category.TWOS: 6, Category.THREES: 9, Category.FOURS: 12, Category.SIXES: 18}),
    )
    parts = split(features(state, ALL, OFFICIAL))
    assert parts["lock_in"].tolist() == [0, 0, 0, 0, 1, 0]
    done = State.empty(
        OFFICIAL,
        dice=jnp.int32([1, 5, 5, 5, 5]),
        **card({Category.SIXES: 30, Category.FIVES: 25, Category.FOURS: 16}),
    )
    np.testing.assert_allclose(split(features(done, ALL, OFFICIAL))["upper_progress"], [1.0])


def test_joker_flag_and_forced_joker_potential_scores():
    """Five sixes with the Yahtzee box holding 50 and sixes open: official rules force sixes.

    The Joker flag is on; only the sixes box is legal, so it is the only nonzero potential score.
    Without Joker rules the flag is off and every open box gets its ordinary score.
    """
    state = State.empty(
        OFFICIAL, dice=jnp.int32([6] * 5), roll_index=jnp.int32(2), **card({Category.YAHTZEE: 50})
    )
    parts = split(features(state, ALL, OFFICIAL))
    assert parts["joker"].tolist() == [1]
    assert np.flatnonzero(parts["potential_scores"]).tolist() == [Category.SIXES]
    np.testing.assert_allclose(parts["potential_scores"][Category.SIXES], 1.0)
    plain = split(features(state, ALL, get_rules("plain")))
    assert plain["joker"].tolist() == [0]
    assert plain["potential_scores"][Category.FULL_HOUSE] == 0  # no Joker value
    assert plain["potential_scores"][Category.CHANCE] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("yahtzee_box", "rules_name", "live"),
    [(50, "official", 1), (0, "official", 0), (None, "official", 0), (50, "plain", 0)],
)
def test_yahtzee_bonus_live_flag(yahtzee_box, rules_name, live):
    """The flag tells a 50 in the Yahtzee box (a further Yahtzee pays +100) from a scratched 0
    or an open box, which the category-open mask alone cannot; off under rules without bonus."""
    filled = {} if yahtzee_box is None else {Category.YAHTZEE: yahtzee_box}
    state = State.empty(OFFICIAL, dice=jnp.int32([1, 2, 3, 4, 6]), **card(filled))
    parts = split(features(state, ALL, get_rules(rules_name)))
    assert parts["yahtzee_bonus_live"].tolist() == [live]
