"""Exact solution of solitaire Yahtzee, the optimal advisor and the widget-based agents.

- `solve(rules)`: backward induction over turn-start states; the value table is cached on disk.
- `advise(state, rules)`: optimal expected final score and the value of every action, any state.
- `make_optimal_agent(rules)`, `make_greedy_agent(level, rules)`: JAX agents for the evaluator.
"""

from yahtzee_jax.solver.advise import ActionValues, advise, make_position
from yahtzee_jax.solver.agents import make_greedy_agent, make_optimal_agent, widget_action
from yahtzee_jax.solver.exact import (
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
    "make_greedy_agent",
    "make_optimal_agent",
    "make_position",
    "optimal_expected_score",
    "solve",
    "solve_value_table",
    "widget_action",
]
