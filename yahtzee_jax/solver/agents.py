"""On-device agents built on the turn widget: the exact optimum and the greedy baselines.

Both compute, for the one state they are given, the widget of that state's card in JAX
(vmapped over games by the evaluator). The optimal agent values final rolls by points plus the
solved future value (`params` is the float32 value table); the greedy level-L agent of Kang &
Schroeder (seed 001) values them by this turn's reward only and re-rolls at most L-1 times.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.agents.base import Agent, Policy
from yahtzee_jax.errors import UserError
from yahtzee_jax.game.engine import LAST_ROLL, State
from yahtzee_jax.game.rules import (
    KEEP_ALL,
    NUM_KEEP_ACTIONS,
    Category,
    Rules,
    get_rules,
)
from yahtzee_jax.solver.exact import solve
from yahtzee_jax.solver.position import turn_values
from yahtzee_jax.solver.tables import ROLL_OF_CODE, dice_code, score_all_rolls
from yahtzee_jax.solver.widget import keep_action_values

MAX_REROLLS = LAST_ROLL  # two re-rolls per turn
GREEDY_LEVELS = (1, 2, 3)


def state_turn_values(
    value_table: jax.Array | None, state: State, rules: Rules
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The turn widget of one state's card: (category values [252, 13], keep values with one
    and with two re-rolls left [462] each, index of the state's roll among the 252).

    The future counts only when the episode goes on after this turn (`turns_left > 1`); with
    `value_table` None the final rolls are valued by this turn's reward only.
    """
    future_weight = (state.turns_left > 1).astype(jnp.float32)
    values, last_keep, first_keep = turn_values(
        score_all_rolls(state.filled, state.scores[Category.YAHTZEE], rules),
        state.filled,
        state.scores,
        value_table,
        future_weight,
        jnp,
    )
    roll = jnp.asarray(ROLL_OF_CODE)[dice_code(state.dice, jnp)]
    return values, last_keep, first_keep, roll


def widget_action(
    value_table: jax.Array | None, state: State, rules: Rules, max_rerolls: int
) -> jax.Array:
    """Best action of one state by the turn widget, re-rolling at most `max_rerolls` per turn.

    With `value_table` None the final rolls are valued by this turn's reward only. The future
    is ignored on an episode's last turn (`turns_left == 1`), e.g. in the single-turn task.
    """
    values, last_keep, first_keep, roll = state_turn_values(value_table, state, rules)
    score_action = NUM_KEEP_ACTIONS + jnp.argmax(values[roll])
    rerolls_left = jnp.clip(max_rerolls - state.roll_index, 0, MAX_REROLLS)
    keep_value = jnp.where(rerolls_left == MAX_REROLLS, first_keep, last_keep)
    best_keep = jnp.argmax(keep_action_values(keep_value, roll, jnp))
    keep_action = jnp.where(rerolls_left == 0, KEEP_ALL, best_keep)
    return jnp.where(state.roll_index == LAST_ROLL, score_action, keep_action).astype(jnp.int32)


# One act function object per (rules, re-roll budget, future or not): keeps the jit cache warm.
_ACTS: dict[tuple[Rules, int, bool], Policy] = {}


def _widget_act(rules: Rules, max_rerolls: int, with_future: bool) -> Policy:
    key = (rules, max_rerolls, with_future)
    if key not in _ACTS:

        def act(params: Any, state: State, key: jax.Array) -> jax.Array:
            return widget_action(params if with_future else None, state, rules, max_rerolls)

        _ACTS[key] = act
    return _ACTS[key]


def make_optimal_agent(
    rules: str | Rules = "official", cache_dir: str | os.PathLike | None = None
) -> Agent:
    """The exact optimum: plays by the solved value table (solved or loaded from the cache)."""
    rules = get_rules(rules)
    table = solve(rules, cache_dir=cache_dir).value_table
    # float32 is plenty to rank actions; unreachable states (NaN) are never looked up in play.
    params = jnp.asarray(np.nan_to_num(table, nan=0.0), dtype=jnp.float32)
    return Agent(
        name="optimal", act=_widget_act(rules, MAX_REROLLS, True), params=params, rules=rules
    )


def make_greedy_agent(level: int, rules: str | Rules = "official") -> Agent:
    """Kang & Schroeder's greedy level-`level` baseline: best this-turn score, <= level-1 re-rolls.

    Level 1 never re-rolls and scores the box worth most now; levels 2 and 3 re-roll at most once
    or twice, choosing the keeps that maximise this turn's expected reward (box points plus any
    upper or Yahtzee bonus it earns), ignoring later turns.
    """
    if level not in GREEDY_LEVELS:
        raise UserError(f"greedy level must be one of {GREEDY_LEVELS}, got {level!r}")
    rules = get_rules(rules)
    return Agent(name=f"greedy{level}", act=_widget_act(rules, level - 1, False), rules=rules)
