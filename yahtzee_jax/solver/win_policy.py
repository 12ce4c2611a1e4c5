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
that favours the turns with the wider spread; ahead, the safer ones.

In the endgame (a turn that leaves at most `endgame_open` boxes open, 3 by default) the normal
is replaced by exact score distributions (`solver.endgame`): P(win) sums over my future score
from the next state against the opponent's, exact too once its card is in the endgame. A last
turn is then valued exactly, whoever plays first. What is left approximate: the normal before
the endgame, and optimal expected-score play after this turn (each turn improves on it once).
The opponent is read at its turn start only (its card and total): the dice it will play next
are not looked at. `before_endgame="solitaire"` plays the turns before the endgame as the
optimal agent does (expected points), the rule of the learned match planner
(`agents.distribution_planner`): with exact tables, what that rule would win if it learned
perfectly.
"""

from __future__ import annotations

import functools
import os
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.game.engine import LAST_ROLL, State, current_score_options, total_score
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, Rules, get_rules
from yahtzee_jax.solver.endgame import ENDGAME_OPEN, SCORE_BINS, endgame_distributions
from yahtzee_jax.solver.moments import (
    box_outcomes,
    distinct_next_states,
    next_state_of_roll,
    score_moments,
)
from yahtzee_jax.solver.position import card_context
from yahtzee_jax.solver.widget import keep_action_values, turn_keep_values
from yahtzee_jax.solver.widget_tables import ROLL_OF_CODE, dice_code, score_all_rolls

# Below this variance of the margin nothing is left to chance: only a full card has no spread
# (V = M = 0 exactly), and every other state's is far above it.
MIN_VARIANCE = 1e-3
BEFORE_ENDGAME = ("normal", "solitaire")  # the turns before the endgame: for the win, or points
# A box's reward with every bonus it pays is at most 165 in Yahtzee (sixes as a Joker: 30 + 35
# + 100), 80 in Yatzy (sixes and its +50 upper bonus) and 85 in Yacht (its 50 + 35).
REWARD_BINS = 192


class WinSeekerTables(NamedTuple):
    """What the win-seeker plays by, as device arrays (unreachable states 0, or -1 for rows)."""

    value: jax.Array  # float32[masks, totals, 2] ([8192, 64, 2]), V: expected score to come
    moment: jax.Array  # float32[masks, totals, 2], M: its second moment
    rows: jax.Array  # int32[masks, totals, 2], the endgame distribution of a state, -1 outside
    distributions: jax.Array  # float32[rows, SCORE_BINS], `endgame.endgame_distributions`


def win_seeker_tables(
    rules: str | Rules,
    cache_dir: str | os.PathLike | None = None,
    endgame_open: int = ENDGAME_OPEN,
) -> WinSeekerTables:
    """The solver's tables for `rules` on the device (solved or loaded from the cache)."""
    value_table, moment_table = score_moments(rules, cache_dir)
    rows, distributions = endgame_distributions(rules, endgame_open, cache_dir)
    return WinSeekerTables(
        *(jnp.asarray(np.nan_to_num(table), jnp.float32) for table in (value_table, moment_table)),
        jnp.asarray(rows),
        jnp.asarray(distributions),
    )


def final_score_moments(
    tables: WinSeekerTables, card: State, rules: Rules
) -> tuple[jax.Array, jax.Array]:
    """Mean and variance of a card's final score under optimal play from its turn start."""
    context = card_context(card.filled, card.scores, jnp, rules)
    future, future_moment = tables.value[context], tables.moment[context]
    return total_score(card, rules) + future, jnp.maximum(future_moment - future * future, 0.0)


def win_probability(margin: jax.Array, variance: jax.Array) -> jax.Array:
    """P(win) + P(draw) / 2 for a final-score margin of this mean and variance (normal), exact
    when nothing is left to chance (1, 1/2 or 0 by the margin's sign)."""
    decided = variance < MIN_VARIANCE
    normal = jax.scipy.stats.norm.cdf(margin / jnp.sqrt(jnp.where(decided, 1.0, variance)))
    return jnp.where(decided, 0.5 * (1.0 + jnp.sign(margin)), normal)


def below_or_half(mass: jax.Array, lead: jax.Array) -> jax.Array:
    """P(future < lead) + P(future = lead) / 2 for a distribution `mass` [bins] over 0..bins-1,
    at integer leads of any shape (0 below 0, 1 from `bins` up)."""
    bins = mass.shape[-1]
    below = jnp.cumsum(mass) - mass
    inside = jnp.clip(lead, 0, bins - 1).astype(jnp.int32)
    exact = jnp.where(lead < 0, 0.0, below[inside] + 0.5 * mass[inside])
    return jnp.where(lead >= bins, 1.0, exact)


def opponent_below(
    tables: WinSeekerTables, other: State, lead: jax.Array, rules: Rules
) -> jax.Array:
    """P(the other card's score still to come < lead) + P(= lead) / 2, for leads (any shape):
    exact from its endgame distribution when it has one, else normal."""
    context = card_context(other.filled, other.scores, jnp, rules)
    row = tables.rows[context]
    exact = below_or_half(tables.distributions[jnp.maximum(row, 0)], lead)
    mean, second = tables.value[context], tables.moment[context]
    spread = jnp.sqrt(jnp.maximum(second - mean * mean, MIN_VARIANCE))
    return jnp.where(row >= 0, exact, jax.scipy.stats.norm.cdf((lead - mean) / spread))


# Win chances closer than this are equal, and the choice worth more points (the turn's points
# plus the expected score to come) is taken: in a decided match every box has chance 1 (or 0)
# in float32, and which of equal maxima `argmax` takes would depend on the device's rounding.
TIE = 1e-6


def best_by_chance_then_points(chances: jax.Array, points: jax.Array) -> jax.Array:
    """Index of the highest `chances` along the last axis; among those within `TIE` of it,
    the one with the most `points`."""
    near = chances >= jnp.max(chances, axis=-1, keepdims=True) - TIE
    return jnp.argmax(jnp.where(near, points, -jnp.inf), axis=-1)


def chance_and_points(chances: jax.Array, points: jax.Array) -> jax.Array:
    """Each roll's best chance over the boxes (last axis) and the points of the box it is
    written in (near ties by points), stacked on a new last axis: the two channels a keep's
    expectation carries."""
    written = best_by_chance_then_points(chances, points)
    best_points = jnp.take_along_axis(points, written[..., None], axis=-1)[..., 0]
    return jnp.stack([chances.max(axis=-1), best_points.astype(chances.dtype)], axis=-1)


def best_keep(chances: jax.Array, points: jax.Array, own: State) -> jax.Array:
    """The keep action of `own` with the highest expected turn-end chance (`chances` [252,
    boxes], -inf where illegal), near ties broken by the expected `points` [252, boxes] of the
    box each roll would be written in."""
    roll = jnp.asarray(ROLL_OF_CODE)[dice_code(own.dice, jnp)]
    final = chance_and_points(chances, points)
    last_keep, first_keep = turn_keep_values(final, jnp)  # [462, 2]: chance, points
    keep_value = jnp.where(own.roll_index == 0, first_keep, last_keep)
    by_action = keep_action_values(keep_value, roll, jnp)  # [32, 2]
    return best_by_chance_then_points(by_action[:, 0], by_action[:, 1]).astype(jnp.int32)


# The margin window of the endgame: my next state's future t plus this turn's reward x.
_LEADS = np.arange(SCORE_BINS)[:, None] + np.arange(REWARD_BINS)[None, :]  # [t, x]


def turn_end_win_probabilities(
    tables: WinSeekerTables,
    own: State,
    other: State,
    rolls: jax.Array,
    points: jax.Array,
    legal: jax.Array,
    bonus: jax.Array,
    endgame: bool,
    rules: Rules,
    before_endgame: str = "normal",
) -> tuple[jax.Array, jax.Array]:
    """Estimated P(win) after writing each of the rolls `rolls` in each box ([n, boxes];
    `points`, `legal`, `bonus` from their `score_options`), -inf where illegal, and the points
    each is worth (reward + V of the state it leads to), the tie-break of equal chances.

    `endgame` (static): my next states have exact distributions, so the chance is a sum over my
    future score against the opponent's (`opponent_below`); else normal in both futures, or
    with `before_endgame="solitaire"` the expected points (reward + V), the optimal agent's.
    """
    mask, upper_total, flag = card_context(own.filled, own.scores, jnp, rules)
    tables_vm = (tables.value, tables.moment)
    reward, future, future_moment = box_outcomes(
        points, legal, bonus, mask, upper_total, flag, tables_vm, jnp, rules
    )
    worth = reward + future
    if not endgame and before_endgame == "solitaire":
        return jnp.where(legal, worth, -jnp.inf), worth
    if not endgame:
        other_mean, other_variance = final_score_moments(tables, other, rules)
        margin = total_score(own, rules) + reward + future - other_mean
        variance = jnp.maximum(future_moment - future * future, 0.0) + other_variance
        return jnp.where(legal, win_probability(margin, variance), -jnp.inf), worth
    # W[state, x] = sum_t P(my future = t | state) * P(their future < lead + t + x) over my 44
    # next states (in Yahtzee), then each roll and box reads its state's row at its reward.
    lead = total_score(own, rules) - total_score(other, rules)
    chances_by_lead = opponent_below(tables, other, lead + jnp.asarray(_LEADS), rules)  # [t, x]
    states = distinct_next_states(mask, upper_total, flag, jnp, rules)
    mass = tables.distributions[jnp.maximum(tables.rows[states], 0)]  # [44, t]
    by_state = mass @ chances_by_lead  # [44, x]
    next_state = jnp.asarray(next_state_of_roll(rules))[rolls]  # [n, boxes]
    chances = by_state[next_state, jnp.clip(reward, 0, REWARD_BINS - 1)]
    return jnp.where(legal, chances, -jnp.inf), worth


def win_seeking_action(
    tables: WinSeekerTables,
    own: State,
    other: State,
    rules: Rules,
    scoring: bool,
    endgame: bool,
    before_endgame: str = "normal",
) -> jax.Array:
    """The action of one card (`own`) with the highest expected P(win) at its turn's end.

    `scoring` (static): the card is at its score decision (roll index 2), not at a keep;
    `endgame` (static): its next states are in the endgame tables; `before_endgame`: see
    `turn_end_win_probabilities`.
    """
    args = (endgame, rules, before_endgame)
    roll = jnp.asarray(ROLL_OF_CODE)[dice_code(own.dice, jnp)]
    if scoring:  # only the roll in hand
        points, legal, bonus = current_score_options(own, rules)
        chances, worth = turn_end_win_probabilities(
            tables, own, other, roll[None], points[None], legal[None], bonus[None], *args
        )
        return (NUM_KEEP_ACTIONS + best_by_chance_then_points(chances[0], worth[0])).astype(
            jnp.int32
        )
    # A keep: the turn's widget over P(win) at its end instead of points.
    points, legal, bonus = score_all_rolls(own.filled, own.scores[rules.yahtzee_box], rules)
    every_roll = jnp.arange(points.shape[0])
    chances, worth = turn_end_win_probabilities(
        tables, own, other, every_roll, points, legal, bonus, *args
    )
    return best_keep(chances, worth, own)


def make_win_seeker(
    rules: str | Rules,
    cache_dir: str | os.PathLike | None = None,
    endgame_open: int = ENDGAME_OPEN,
    before_endgame: str = "normal",
) -> Any:
    """A two-player learner policy (own cards, other cards, keys) -> (actions, None) [B].

    `endgame_open`: the turns that leave at most this many boxes open are valued with exact
    score distributions (`solver.endgame`); 0 keeps only the last turn's exactness.
    `before_endgame`: the earlier turns for the win by the normal ("normal") or for points
    ("solitaire", the learned match planner's rule).
    """
    rules = get_rules(rules)
    if before_endgame not in BEFORE_ENDGAME:
        raise ValueError(f"before_endgame={before_endgame!r}; choose one of {BEFORE_ENDGAME}")
    with jax.ensure_compile_time_eval():  # concrete tables even when first built in a trace
        tables = win_seeker_tables(rules, cache_dir, endgame_open)

    def actions(own: State, other: State, scoring: bool, endgame: bool) -> jax.Array:
        act = jax.vmap(win_seeking_action, in_axes=(None, 0, 0, None, None, None, None))
        return act(tables, own, other, rules, scoring, endgame, before_endgame)

    def policy(own: State, other: State, keys: jax.Array) -> tuple[jax.Array, None]:
        # The match loop moves every card in lockstep: one kind of decision (keep or score) and
        # one stage (endgame or not) at a time, so one branch runs; mixed batches run all four.
        scoring = own.roll_index == LAST_ROLL
        open_boxes = rules.num_boxes - jnp.sum(own.filled, axis=-1)
        endgame = open_boxes - 1 <= endgame_open
        kind = scoring.astype(jnp.int32) + 2 * endgame.astype(jnp.int32)
        branches = [
            functools.partial(actions, own, other, bool(case & 1), bool(case & 2))
            for case in range(4)
        ]

        def mixed() -> jax.Array:
            return jnp.select([kind == case for case in range(4)], [run() for run in branches])

        uniform = jnp.all(kind == kind[0])
        chosen = jax.lax.cond(uniform, lambda: jax.lax.switch(kind[0], branches), mixed)
        return chosen, None

    return policy
