"""Exact solution of solitaire Yahtzee and the optimal advisor.

- `solve(rules)`: backward induction over turn-start states; the value table is cached on disk.
- `advise(state, rules)`: optimal expected final score and the value of every action, any state.
"""

from yahtzee_jax.solver.advise import ActionValues, advise, make_position
from yahtzee_jax.solver.value_table import (
    SolveResult,
    cache_file,
    default_cache_dir,
    optimal_expected_score,
    solve,
    solve_value_table,
)

__all__ = [
    "ActionValues",
    "SolveResult",
    "advise",
    "cache_file",
    "default_cache_dir",
    "make_position",
    "optimal_expected_score",
    "solve",
    "solve_value_table",
]
