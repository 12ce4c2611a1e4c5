"""The solver's compiled chunk program (`solver.compiled`) against its NumPy loop, bit for bit."""

import jax
import numpy as np
import pytest

from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver import exact
from yahtzee_jax.solver.compiled import compiled_turn_start_value
from yahtzee_jax.solver.final_rolls import box_futures, final_roll_plan, solver_final_roll_values
from yahtzee_jax.solver.states import SOLVE_CHUNK, chunk_indices, layer_chunks, table_shape
from yahtzee_jax.solver.tables import solver_score_tables
from yahtzee_jax.solver.widget import turn_start_value


@pytest.mark.parametrize("variant", ["official", "yatzy", "yacht"])
def test_compiled_chunk_equals_the_numpy_loop_bit_for_bit(variant):
    """On a random table of futures, a full chunk and a short one (padded) of two layers give
    the NumPy loop's turn-start values to the last bit."""
    rules = get_rules(variant)
    table = np.random.default_rng(3).uniform(0, 200, size=table_shape(rules))
    base, *options = solver_score_tables(rules)
    plan = final_roll_plan(base, rules)
    future = exact._future_of(table)
    for filled in (3, rules.num_boxes - 2):
        _, chunks = layer_chunks(rules, filled)
        for chunk in (chunks[0], chunks[-1][:37]):
            mask, upper, flag = chunk_indices(chunk)
            count = len(mask)
            numpy_options = exact._yahtzee_options(options, mask, flag)
            final = solver_final_roll_values(mask, upper, flag, plan, numpy_options, future)
            expected = turn_start_value(final)
            mask, upper, flag = (np.resize(part, SOLVE_CHUNK) for part in (mask, upper, flag))
            futures = box_futures(mask, upper, flag, future, np, rules)
            with jax.enable_x64(True):
                got = compiled_turn_start_value(
                    futures, exact._yahtzee_options(options, mask, flag), rules, count
                )
            np.testing.assert_array_equal(got, expected)


def test_an_xla_that_refuses_the_compile_options_compiles_with_its_defaults(monkeypatch):
    """An option this XLA does not know: the program is compiled without the options, once."""
    from yahtzee_jax.solver import compiled

    rules = get_rules("yacht")
    monkeypatch.setattr(compiled, "_COMPILE_OPTIONS", {"xla_no_such_option": True})
    monkeypatch.setattr(compiled, "_OPTIONS_REFUSED", set())
    compiled._compiled.cache_clear()
    table = np.random.default_rng(4).uniform(0, 100, size=table_shape(rules))
    options = solver_score_tables(rules)[1:]
    _, chunks = layer_chunks(rules, rules.num_boxes - 1)
    mask, upper, flag = (np.resize(part, SOLVE_CHUNK) for part in chunk_indices(chunks[0]))
    futures = box_futures(mask, upper, flag, exact._future_of(table), np, rules)
    with jax.enable_x64(True):
        values = compiled_turn_start_value(
            futures, exact._yahtzee_options(list(options), mask, flag), rules, 5
        )
    assert values.shape == (5,) and np.isfinite(values).all()
    assert {rules} == compiled._OPTIONS_REFUSED
    compiled._compiled.cache_clear()  # the next test compiles with the real options
