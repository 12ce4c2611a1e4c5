"""The best play of a discounted game: what a learner that discounts by gamma < 1 maximises.

The policy-gradient learners (PPO, A2C; `algo.gamma`, 0.99 in every preset) discount by gamma
at each of a turn's three decisions (two keeps, then the box), so what they maximise is the
discounted sum of the boxes' points, not the game's score. The best policy for that objective
values a turn-start state s by

    V(s) = gamma^2 E_roll[widget(f)],   f(r) = max over boxes [points(r, box) + gamma V(s')]

(the keeps earn nothing and come one and two decisions before the box; the next decision after
the box is the next turn's first keep). A positive factor leaves the widget's maxima where they
are, so its keeps are the undiscounted widget's on f, and the optimal agent's own rule (a
box's points plus the table's value after it) playing the table gamma V makes exactly its
choices (`policy_table`; `native_play.play_optimal(..., value_table=)` plays it). Its score is
then the game's own: how far the discounted objective's best play falls short of the optimum,
an upper bound of what any learner of that objective can reach.

The solver's NumPy loop (`value_table.value_chunk`) with the discount, one process (official
Yahtzee in 6-11 s); at gamma = 1 the table is the solver's to the last bit
(`tests/test_discounted.py`).
"""

from __future__ import annotations

import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import Rules
from yahtzee_jax.solver.final_rolls import final_roll_plan
from yahtzee_jax.solver.states import fill_copies, full_mask, layer_chunks, table_shape
from yahtzee_jax.solver.value_table import value_chunk
from yahtzee_jax.solver.widget_tables import solver_score_tables


def solve_discounted(rules: Rules, gamma: float, down_to_filled: int = 0) -> np.ndarray:
    """float64[masks, upper totals, 2]: each turn-start state's best discounted value to come,
    discounting by `gamma` at every decision (NaN where unreachable, and in the layers under
    `down_to_filled` filled boxes: a partial solve, as `solve_value_table`'s)."""
    if not 0.0 < gamma <= 1.0:
        raise UserError(f"gamma={gamma} must be in (0, 1]")
    base, *options = solver_score_tables(rules)
    plan = final_roll_plan(base, rules)
    table = np.full(table_shape(rules), np.nan)
    table[full_mask(rules)] = 0.0
    for filled in range(rules.num_boxes - 1, down_to_filled - 1, -1):
        layer_masks, chunks = layer_chunks(rules, filled)
        for chunk in chunks:
            value_chunk(table, plan, options, chunk, gamma)
        fill_copies(table, rules, layer_masks)
    return table


def policy_table(rules: Rules, gamma: float) -> np.ndarray:
    """gamma V: the table whose optimal-agent rule (points plus the value after the box) plays
    the discounted objective's best policy."""
    return gamma * solve_discounted(rules, gamma)
