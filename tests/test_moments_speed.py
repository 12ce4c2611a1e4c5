"""The moment pass's hot loop (`solver.moments._chunk_moments`) against the generic functions
it replaces: the same second moments, bit for bit, under cards that differ."""

from __future__ import annotations

import numpy as np
import pytest

from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver.moments import (
    box_outcomes,
    roll_options,
    solve_moment_table,
    turn_moments,
)
from yahtzee_jax.solver.states import chunk_indices, layer_chunks
from yahtzee_jax.solver.value_table import solve_value_table
from yahtzee_jax.solver.widget import best_keep_choice, expected_over_rolls
from yahtzee_jax.solver.widget_tables import solver_score_tables


def generic_moments(states, value_table, moment_table, rules):
    """(V, M) of turn-start states by the [252, boxes, n] outcomes of every roll and box."""
    mask, upper, flag = states
    points, legal, bonus = roll_options(mask, flag, solver_score_tables(rules))
    tables = (value_table, moment_table)
    outcomes = box_outcomes(points, legal, bonus, mask, upper, flag, tables, np, rules)
    _, _, first_keep, first_keep_moment = turn_moments(*outcomes, legal)
    start, start_moment = best_keep_choice(first_keep, first_keep_moment)
    return expected_over_rolls(start), expected_over_rolls(start_moment)


# Yahtzee (Joker, +100, flag-1 states), Yatzy (15 boxes, +50 at 63, no Joker), Yacht (no bonus).
@pytest.mark.parametrize(("variant", "filled"), [("official", 11), ("yatzy", 13), ("yacht", 10)])
def test_the_moment_pass_is_the_generic_induction(variant, filled):
    """Every solved state of a layer: V and M as the generic box outcomes and keeps give them."""
    rules = get_rules(variant)
    value_table = solve_value_table(rules, down_to_filled=filled, workers=1)
    moment_table = solve_moment_table(rules, value_table, down_to_filled=filled)
    _, chunks = layer_chunks(rules, filled)
    for chunk in chunks:
        states = chunk_indices(chunk)
        values, moments = generic_moments(states, value_table, moment_table, rules)
        np.testing.assert_array_equal(moment_table[states], moments)
        np.testing.assert_array_equal(value_table[states], values)
