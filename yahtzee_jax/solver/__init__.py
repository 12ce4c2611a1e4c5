"""Exact solution of solitaire Yahtzee and the optimal advisor.

- `solve(rules)`: backward induction over turn-start states; the value table is cached on disk.
- `advise(state, rules)`: optimal expected final score and the value of every action, any state.
"""

from typing import TYPE_CHECKING

from yahtzee_jax.lazy import lazy_exports
from yahtzee_jax.solver.value_table import (
    SolveResult,
    cache_file,
    default_cache_dir,
    optimal_expected_score,
    solve,
    solve_value_table,
)

if TYPE_CHECKING:
    from yahtzee_jax.solver.advisor import ActionValues, advise, make_position

# The advisor reads engine states: it imports JAX, which a solve alone never needs.
__getattr__ = lazy_exports(
    __name__,
    dict.fromkeys(("ActionValues", "advise", "make_position"), "yahtzee_jax.solver.advisor"),
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
