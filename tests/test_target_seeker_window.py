"""The target-seeker's row windows in a game whose rows are shorter than its window.

`solver.seeker_policy` reads `WINDOW - 1` chances after each row's first entry. In official
Yahtzee the longest row (1,576) is longer than the window, so padding the flat table by the
longest row let every window fit; in a game of few boxes (here 7: the upper six and a 50-point
five of a kind, longest row 156) the windows of the last rows ran past the padding, and XLA moved
them back into other rows' chances (0.9 off at the last state).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from positions import seven_box_rules

from yahtzee_jax.solver.seeker_policy import WINDOW, my_rows, score_bins, seeker_tables
from yahtzee_jax.solver.target_table import target_tables
from yahtzee_jax.solver.value_table import solve

RULES = seven_box_rules("seeker-window-test")


def test_every_row_window_reads_its_own_row_in_a_small_game(tmp_path):
    """my_rows gives T_s(1 ..) of every card (0 past the row), the last ones of the flat table
    included, in a game whose longest row is shorter than the window."""
    best = target_tables(RULES, cache_dir=tmp_path, policy="target")
    follow = target_tables(RULES, cache_dir=tmp_path, policy="expected")
    value = solve(RULES, cache_dir=tmp_path).value_table
    assert score_bins(RULES)[0] < WINDOW  # the case the padding once missed
    tables = seeker_tables(RULES, best.flat, follow.flat, value, 1.0)
    masks = np.arange((1 << RULES.num_boxes) - 1)  # every card but the full one
    states = (jnp.asarray(masks), jnp.zeros(len(masks), int), jnp.zeros(len(masks), int))
    got = np.asarray(my_rows(tables, states, 1.0, False))
    for mask, row in zip(masks, got, strict=True):
        want = best.chances((int(mask), 0, 0))[1:]
        np.testing.assert_allclose(row[: len(want)], want, atol=1e-6)  # float32 tables
        assert not row[len(want) :].any()
