"""Our `yatzy` rules against yatzy-solver, the Rust exact solver of Scandinavian Yatzy.

yatzy-solver is in the dev extra, and these tests fail (not skip) without it. In `make test`:
its scorer against ours on every roll in every box, its upper bonus, and its values of 1,500
late turn-start states (tests/golden/yatzy_solver_sample.json, written by
experiments/yatzy_solver_sample.py from its own solve) against our partial solve. Slow: its
live solve against ours on every reachable turn-start state, and the optimum it documents.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.game import base_scores, face_counts, get_rules
from yahtzee_jax.solver import solve
from yahtzee_jax.solver.value_table import solve_value_table

try:
    import yatzy_solver
except ImportError:  # the dev extra has it: a missing package is a broken install, not a skip
    yatzy_solver = None

YATZY = get_rules("yatzy")
SAMPLE = Path(__file__).parent / "golden" / "yatzy_solver_sample.json"
ROLLS = list(itertools.combinations_with_replacement(range(1, 7), 5))


def package() -> object:
    """The yatzy_solver module; a loud failure when the install lacks it."""
    if yatzy_solver is None:
        pytest.fail("yatzy-solver is not installed: pip install -e '.[dev]' (it is in the extra)")
    return yatzy_solver


def test_its_card_is_ours_and_scores_every_roll_as_ours() -> None:
    """Same 15 boxes in the same order; all 252 rolls x 15 boxes score the same."""
    variant = package().Variant("yatzy-scandinavian")
    assert tuple(variant.categories) == YATZY.box_names
    ours = jax.jit(jax.vmap(lambda dice: base_scores(face_counts(dice), YATZY)))(
        jnp.asarray(ROLLS, jnp.int32)
    )
    theirs = [[variant.score(box, list(roll)) for box in variant.categories] for roll in ROLLS]
    np.testing.assert_array_equal(np.asarray(ours), np.array(theirs))


def test_its_upper_bonus_is_ours() -> None:
    """Sixes 24 onto an upper total of 39 reach 63: its 24 + 50 points, as our +50 at 63."""
    variant = package().Variant("yatzy-scandinavian")
    state, points = variant.apply_score(
        "upper 39 | filled ones,twos,threes,fours,fives", [6, 6, 6, 6, 1], "sixes"
    )
    assert points == 24 + YATZY.upper_bonus_points == 74
    assert "upper 63" in str(state)


def test_late_states_equal_its_values() -> None:
    """Our solve of the last five turns equals its values on the 1,500 sampled states."""
    package()
    sample = json.loads(SAMPLE.read_text())
    table = solve_value_table(YATZY, down_to_filled=sample["min_filled"])
    mask, upper, theirs = (np.array(column) for column in zip(*sample["states"], strict=True))
    ours = table[mask.astype(np.int64), upper.astype(np.int64), 0]
    assert len(ours) == 1500 and not np.isnan(ours).any()
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)


@pytest.mark.slow
def test_every_turn_start_state_equals_its_solve(tmp_path) -> None:
    """Its live f64 solve (about 20 s) and ours agree on all 1,430,464 reachable turn-start
    states before the last box is filled, and on the optimum its rules page gives."""
    module = package()
    solver = module.Solver.build(module.Variant("yatzy-scandinavian"))
    table = solve(YATZY, cache_dir=tmp_path).value_table[:, :, 0]
    mask, upper = np.nonzero(~np.isnan(table[:-1]))  # the full card's values are 0 in both
    theirs = solver.state_values(
        mask.astype(np.uint32), upper.astype(np.uint16), np.zeros(len(mask), bool)
    )
    assert len(mask) == 1_430_464
    np.testing.assert_allclose(table[mask, upper], theirs, rtol=0, atol=1e-9)
    assert table[0, 0] == pytest.approx(248.4399894, abs=5e-8)
