"""A player that tries to beat its opponent's score, not to maximise its own (issue 14).

Against an opponent whose play does not depend on ours (the optimal-solitaire agent), a match
is won when our final score X beats theirs, Y. The solver's value and second-moment tables
(`solver.moments`) give the mean and variance of both players' scores still to come from any
turn-start state, under optimal expected-score play. This player plans each of its turns
exactly, like the optimal agent, but values the end of the turn by the chance to win instead of
by points: writing roll r in box b is worth

    P(win) ~ Phi((my total + reward + E[my future] - E[Y]) / sqrt(Var[my future] + Var[Y])),

my future counted from the turn start that follows, Y from the opponent's turn start. The keeps
maximise its expectation over the rolls to come (the same widget, over probabilities). Behind,
that favours the turns with the wider spread; ahead, the safer ones. On a last turn against a
finished opponent nothing is approximated: the chance is 1, 1/2 or 0 by the final margin. The
approximations elsewhere: the futures as normal, and optimal expected-score play after this
turn (each turn improves on it once). The opponent is read at its turn start only (its card and
total): the dice it will play next are not looked at.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.game.engine import LAST_ROLL, State, current_score_options, total_score
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, Category, Rules, get_rules
from yahtzee_jax.solver.moments import box_outcomes, score_moments
from yahtzee_jax.solver.position import card_context
from yahtzee_jax.solver.tables import ROLL_OF_CODE, dice_code, score_all_rolls
from yahtzee_jax.solver.widget import keep_action_values, turn_keep_values

# Below this variance of the margin nothing is left to chance: only a full card has no spread
# (V = M = 0 exactly), and every other state's is far above it.
MIN_VARIANCE = 1e-3


def win_seeker_tables(
    rules: str | Rules = "official", cache_dir: str | os.PathLike | None = None
) -> tuple[jax.Array, jax.Array]:
    """(value table, second-moment table) as float32 device arrays, unreachable states 0."""
    value_table, moment_table = score_moments(rules, cache_dir)
    return tuple(
        jnp.asarray(np.nan_to_num(table, nan=0.0), dtype=jnp.float32)
        for table in (value_table, moment_table)
    )


def final_score_moments(tables: tuple[jax.Array, jax.Array], card: State) -> tuple:
    """Mean and variance of a card's final score under optimal play from its turn start."""
    value_table, moment_table = tables
    context = card_context(card.filled, card.scores, jnp)
    future, future_moment = value_table[context], moment_table[context]
    return total_score(card) + future, jnp.maximum(future_moment - future * future, 0.0)


def win_probability(margin: jax.Array, variance: jax.Array) -> jax.Array:
    """P(win) + P(draw) / 2 for a final-score margin of this mean and variance (normal), exact
    when nothing is left to chance (1, 1/2 or 0 by the margin's sign)."""
    decided = variance < MIN_VARIANCE
    normal = jax.scipy.stats.norm.cdf(margin / jnp.sqrt(jnp.where(decided, 1.0, variance)))
    return jnp.where(decided, 0.5 * (1.0 + jnp.sign(margin)), normal)


def turn_end_win_probabilities(
    tables: tuple[jax.Array, jax.Array],
    own: State,
    other_mean: jax.Array,
    other_variance: jax.Array,
    points: jax.Array,
    legal: jax.Array,
    bonus: jax.Array,
) -> jax.Array:
    """Estimated P(win) after writing each roll in each box ([n, 13] from `score_options` of n
    rolls): the margin's mean and variance from the next turn start on, -inf where illegal."""
    mask, upper_total, flag = card_context(own.filled, own.scores, jnp)
    reward, future, future_moment = box_outcomes(
        points, legal, bonus, mask, upper_total, flag, tables, jnp
    )
    margin = total_score(own) + reward + future - other_mean
    variance = jnp.maximum(future_moment - future * future, 0.0) + other_variance
    return jnp.where(legal, win_probability(margin, variance), -jnp.inf)


def win_seeking_action(
    tables: tuple[jax.Array, jax.Array], own: State, other: State, rules: Rules, scoring: bool
) -> jax.Array:
    """The action of one card (`own`) with the highest expected P(win) at its turn's end.

    `scoring` (static) says whether the card is at its score decision (roll index 2) or at a keep.
    """
    other_mean, other_variance = final_score_moments(tables, other)
    if scoring:  # only the roll in hand
        points, legal, bonus = current_score_options(own, rules)
        chances = turn_end_win_probabilities(
            tables, own, other_mean, other_variance, points[None], legal[None], bonus[None]
        )
        return (NUM_KEEP_ACTIONS + jnp.argmax(chances[0])).astype(jnp.int32)
    # A keep: the turn's widget over P(win) at its end instead of points.
    points, legal, bonus = score_all_rolls(own.filled, own.scores[Category.YAHTZEE], rules)
    chances = turn_end_win_probabilities(
        tables, own, other_mean, other_variance, points, legal, bonus
    )
    last_keep, first_keep = turn_keep_values(chances.max(axis=1), jnp)
    keep_value = jnp.where(own.roll_index == 0, first_keep, last_keep)
    roll = jnp.asarray(ROLL_OF_CODE)[dice_code(own.dice, jnp)]
    return jnp.argmax(keep_action_values(keep_value, roll, jnp)).astype(jnp.int32)


def make_win_seeker(
    rules: str | Rules = "official", cache_dir: str | os.PathLike | None = None
) -> Any:
    """A two-player learner policy (own cards, other cards, keys) -> (actions, None) [B]."""
    rules = get_rules(rules)
    with jax.ensure_compile_time_eval():  # concrete tables even when first built in a trace
        tables = win_seeker_tables(rules, cache_dir)

    def actions(own: State, other: State, scoring: bool) -> jax.Array:
        act = jax.vmap(win_seeking_action, in_axes=(None, 0, 0, None, None))
        return act(tables, own, other, rules, scoring)

    def policy(own: State, other: State, keys: jax.Array) -> tuple[jax.Array, None]:
        scoring = own.roll_index == LAST_ROLL

        def mixed() -> jax.Array:
            return jnp.where(scoring, actions(own, other, True), actions(own, other, False))

        # The match loop moves every card in lockstep, so one kind of decision at a time: the
        # score decision needs only the roll in hand, a keep the whole turn.
        chosen = jax.lax.cond(
            jnp.all(scoring),
            lambda: actions(own, other, True),
            lambda: jax.lax.cond(jnp.any(scoring), mixed, lambda: actions(own, other, False)),
        )
        return chosen, None

    return policy
