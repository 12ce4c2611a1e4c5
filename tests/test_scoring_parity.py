"""Exhaustive parity of the JAX scorer with the independent plain-Python reference.

Every ordered outcome of five dice (6**5 = 7,776) is scored in all 13 boxes in 27 score-card
contexts (Yahtzee box open / 50 / 0; upper boxes open / all used / odd faces used, so the box
matching a five of a kind is both open and used; lower boxes open / all used / some used) under
each rule variant: points, legality and the +100 bonus must all agree.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.game import RULE_VARIANTS, Category, face_counts, reference, score_options
from yahtzee_jax.game.rules import YAHTZEE_VARIANTS

ALL_DICE = np.array(list(itertools.product(range(1, 7), repeat=5)), dtype=np.int32)
YAHTZEE_BOX_STATES = ("open", 50, 0)
UPPER_PATTERNS = {"none": (), "all": tuple(range(6)), "odd faces": (0, 2, 4)}
LOWER_PATTERNS = {
    "none": (),
    "all": (6, 7, 8, 9, 10, 12),
    "some": (Category.FULL_HOUSE, Category.LARGE_STRAIGHT, Category.CHANCE),
}


def contexts() -> list[tuple[np.ndarray, int, dict[str, int]]]:
    """(filled mask, Yahtzee box points, reference card) for every context of the module doc."""
    result = []
    for yahtzee_state, upper, lower in itertools.product(
        YAHTZEE_BOX_STATES, UPPER_PATTERNS.values(), LOWER_PATTERNS.values()
    ):
        filled = np.zeros(13, bool)
        filled[list(upper) + list(lower)] = True
        card = {reference.BOXES[i]: 0 for i in np.flatnonzero(filled)}
        yahtzee_points = 0
        if yahtzee_state != "open":
            filled[Category.YAHTZEE] = True
            yahtzee_points = int(yahtzee_state)
            card["yahtzee"] = yahtzee_points
        result.append((filled, yahtzee_points, card))
    return result


CONTEXTS = contexts()


def reference_scores(variant: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reference's (points [roll, context, box], legality [roll, context, box], +100 bonus
    [roll, context]) for every ordered roll. A box's score depends on the faces alone, not on
    their order, so the reference scores each roll's sorted faces once (252 of them, not 7,776)."""
    shape = (len(ALL_DICE), len(CONTEXTS), len(reference.BOXES))
    points, legal, bonus = (
        np.zeros(shape, np.int64),
        np.zeros(shape, bool),
        np.zeros(shape[:2], bool),
    )
    scored: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for roll_index, dice in enumerate(ALL_DICE.tolist()):
        faces = tuple(sorted(dice))
        if faces not in scored:
            rows = (
                np.zeros(shape[1:], np.int64),
                np.zeros(shape[1:], bool),
                np.zeros(shape[1], bool),
            )
            for context_index, (_, _, card) in enumerate(CONTEXTS):
                for box, (box_points, box_bonus) in reference.choices(
                    list(faces), card, variant
                ).items():
                    box_index = reference.BOXES.index(box)
                    rows[0][context_index, box_index] = box_points
                    rows[1][context_index, box_index] = True
                    rows[2][context_index] = box_bonus == 100
            scored[faces] = rows
        points[roll_index], legal[roll_index], bonus[roll_index] = scored[faces]
    return points, legal, bonus


def jax_scores(rules) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The engine's way: one roll and one card at a time, vmapped and jitted."""
    filled = jnp.asarray(np.stack([c[0] for c in CONTEXTS]))
    yahtzee_box = jnp.asarray([c[1] for c in CONTEXTS], jnp.int32)

    def per_roll(dice: jax.Array):
        counts = face_counts(dice)
        return jax.vmap(lambda f, y: score_options(counts, f, y, rules))(filled, yahtzee_box)

    return jax.device_get(jax.jit(jax.vmap(per_roll))(jnp.asarray(ALL_DICE)))


def numpy_scores(rules) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The solver's way: NumPy arrays, every roll against every card by broadcasting (the
    process never imports JAX for it)."""
    filled = np.stack([c[0] for c in CONTEXTS])[None]  # [1, context, box]
    yahtzee_box = np.array([c[1] for c in CONTEXTS], np.int32)[None]  # [1, context]
    counts = face_counts(ALL_DICE)[:, None]  # [roll, 1, face]
    points, legal, bonus = score_options(counts, filled, yahtzee_box, rules)
    assert isinstance(points, np.ndarray) and isinstance(bonus, np.ndarray)
    assert points.shape == legal.shape == (len(ALL_DICE), len(CONTEXTS), 13)
    return points, legal, bonus


@pytest.mark.parametrize("scores", [jax_scores, numpy_scores], ids=["jax", "numpy"])
@pytest.mark.parametrize("variant", list(YAHTZEE_VARIANTS))
def test_scorer_matches_reference_on_every_roll_and_context(variant: str, scores) -> None:
    """All 7,776 ordered rolls x 13 boxes x 27 contexts agree with the reference scorer, scored
    with JAX and with NumPy arrays: legality everywhere, points in every legal box, the +100
    bonus wherever a box is legal (a full card has none to write it with)."""
    points, legal, bonus = scores(RULE_VARIANTS[variant])
    assert points.dtype == np.int32 and legal.dtype == np.bool_ and bonus.dtype == np.bool_
    expected_points, expected_legal, expected_bonus = reference_scores(variant)
    wrong = {
        "legality": np.argwhere(legal != expected_legal),
        "points": np.argwhere(expected_legal & (points != expected_points)),
        "bonus": np.argwhere(expected_legal.any(axis=-1) & (bonus != expected_bonus)),
    }
    mismatches = [
        (
            ALL_DICE[roll].tolist(),
            CONTEXTS[context][2],
            reference.BOXES[box[0]] if box else "",
            what,
        )
        for what, indices in wrong.items()
        for roll, context, *box in indices
    ]
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:3]}"


def test_contexts_cover_joker_cases() -> None:
    """The contexts include a used Yahtzee box with the matching upper box open and used."""
    sixes_open_yahtzee_used = [
        c for c in CONTEXTS if c[0][Category.YAHTZEE] and not c[0][Category.SIXES]
    ]
    ones_used_yahtzee_used = [c for c in CONTEXTS if c[0][Category.YAHTZEE] and c[0][Category.ONES]]
    assert sixes_open_yahtzee_used and ones_used_yahtzee_used
    assert len(CONTEXTS) == 27
