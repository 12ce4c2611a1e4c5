"""The target agent: plays to maximise P(final score >= X) by the exact target tables.

Inside a turn it is the solver's widget over probabilities: writing a roll in a box worth r
points (bonuses included) that leads to the turn-start state s' is worth T_{s'}(X - total - r),
the best chance of the points still needed from s' (`solver.target_table`; 1 once X is reached, 0
past the most s' can still score), and a keep is worth the mean over its re-rolls of the best
of what follows. Its chance of reaching X from the empty card is then exactly T_start(X). Equal
chances (a goal reached or out of reach) are broken by expected points, as the win-seeker does.

`params` carries the goal: one X for every game, or one per game of a batch (the ceiling's
oracle, told each opponent's final score S, plays for X = S + 1).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.agents.resolve import TARGET
from yahtzee_jax.errors import UserError
from yahtzee_jax.game.engine import (
    LAST_ROLL,
    State,
    current_score_options,
    total_score,
)
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, Rules, get_rules
from yahtzee_jax.solver import beat
from yahtzee_jax.solver.beat import TargetTables
from yahtzee_jax.solver.position import card_context
from yahtzee_jax.solver.target_layout import TargetLayout
from yahtzee_jax.solver.target_table import target_tables
from yahtzee_jax.solver.value_table import solve
from yahtzee_jax.solver.widget_tables import score_all_rolls
from yahtzee_jax.solver.win_policy import best_by_chance_then_points, best_keep


class TargetParams(NamedTuple):
    """The agent's params: its tables and the final score to reach (>=), [] or one per game."""

    tables: TargetTables
    goal: jax.Array


def device_tables(flat: np.ndarray, layout: TargetLayout, value_table: np.ndarray) -> TargetTables:
    """`TargetTables` on the device from a flat table, its layout and the value table."""
    # float32 chances are plenty to rank actions and halve the table (0.78 GiB official);
    # offsets fit int32 (official: 2.1e8 chances).
    return TargetTables(
        chances=jnp.asarray(np.asarray(flat, np.float32)),
        rows=jnp.asarray(layout.rows, jnp.int32),
        lengths=jnp.asarray(layout.lengths, jnp.int32),
        value=jnp.asarray(np.nan_to_num(value_table), jnp.float32),
    )


def turn_end_chances(
    tables: TargetTables,
    card: State,
    goal: jax.Array,
    options: tuple[jax.Array, jax.Array, jax.Array],
    rules: Rules,
) -> tuple[jax.Array, jax.Array]:
    """`beat.turn_end_chances` of one card for a final score >= `goal`."""
    context = card_context(card.filled, card.scores, jnp, rules)
    need = goal - total_score(card, rules)
    return beat.turn_end_chances(tables, context, need, options, jnp, rules)


def target_action(
    tables: TargetTables, card: State, goal: jax.Array, rules: Rules, scoring: bool
) -> jax.Array:
    """The action of one card with the highest chance of a final score >= `goal`.

    `scoring` (static): the card is at its score decision (only the roll in hand is valued);
    else a keep, by the widget over the chances of every final roll.
    """
    if scoring:
        points, legal, bonus = current_score_options(card, rules)
        options = (points[None], legal[None], bonus[None])
        chances, worth = turn_end_chances(tables, card, goal, options, rules)
        box = best_by_chance_then_points(chances[0], worth[0])
        return (NUM_KEEP_ACTIONS + box).astype(jnp.int32)
    options = score_all_rolls(card.filled, card.scores[rules.yahtzee_box], rules)
    chances, worth = turn_end_chances(tables, card, goal, options, rules)
    return best_keep(chances, worth, card)


def target_batch_actions(params: TargetParams, cards: State, rules: Rules) -> jax.Array:
    """`target_action` of a batch of cards [B], each with its goal (a shared one broadcast)."""
    goals = jnp.broadcast_to(params.goal, cards.roll_index.shape)

    def actions(scoring: bool) -> jax.Array:
        act = jax.vmap(target_action, in_axes=(None, 0, 0, None, None))
        return act(params.tables, cards, goals, rules, scoring)

    # The lockstep play loop has one kind of decision at a time: one branch runs.
    scoring = cards.roll_index == LAST_ROLL
    return jax.lax.cond(
        jnp.all(scoring),
        lambda: actions(True),
        lambda: jax.lax.cond(
            jnp.any(scoring),
            lambda: jnp.where(scoring, actions(True), actions(False)),
            lambda: actions(False),
        ),
    )


@dataclasses.dataclass(frozen=True)
class TargetPolicy:
    """The target agent's policy; equal per rules, so new goals reuse the compiled program."""

    rules: Rules

    def __call__(self, params: Any, own: State, others: State, keys: jax.Array) -> jax.Array:
        """The target agent's actions for a batch of cards (the other cards are not read)."""
        return target_batch_actions(params, own, self.rules)


def target_agent(rules: Rules, tables: TargetTables, goal: int | np.ndarray) -> Agent:
    """The target agent of `rules` on device `tables`, playing for a final score >= `goal`
    (one number, or one per game of each batch it is given)."""
    goal = jnp.asarray(goal, jnp.int32)
    params = TargetParams(tables, goal)
    return Agent(name=TARGET, policy=TargetPolicy(rules), params=params, rules=rules)


@functools.lru_cache(maxsize=2)
def load_target_tables(
    rules: str | Rules, cache_dir: str | os.PathLike | None = None
) -> tuple[TargetTables, np.ndarray]:
    """The device `TargetTables` of `rules` from the caches (solved when missing: slow), and
    the empty card's float64 row T_start(d), d = 0 .. the most points of a game."""
    rules = get_rules(rules)
    result = target_tables(rules, cache_dir=cache_dir)
    start = result.chances((0, 0, 0)).copy()
    flat, layout = result.flat.astype(np.float32), result.layout
    del result  # the float64 table (1.6 GiB official) goes before the device's copy is made
    value_table = solve(rules, cache_dir=cache_dir).value_table
    return device_tables(flat, layout, value_table), start


def make_target_agent(
    rules: str | Rules, goal: int, cache_dir: str | os.PathLike | None = None
) -> Agent:
    """The target agent of `rules` playing for a final score >= `goal`, its tables from the
    cache (`solve --rules R --targets` solves them once)."""
    if goal < 0:
        raise UserError(f"the target score must be >= 0, got {goal}")
    rules = get_rules(rules)
    return target_agent(rules, load_target_tables(rules, cache_dir)[0], goal)
