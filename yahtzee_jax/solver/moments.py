"""The spread of the optimal player's score: the second moment of the future score of every state.

`solve` gives V(s), the expected score still to come from a turn-start state s under optimal
(expected-score) play. This module adds M(s), the expected *square* of that future score under
the same play, so the variance M - V^2 of the final score is known from every state: what a
player needs who wants to beat a score rather than maximise it (`solver.win_policy`). It is the
solver's backward induction again, carrying a second quantity through each choice: at a box the
square of (points + future), expanded as points^2 + 2 points V + M of the next state, at a keep
the mean of the rolls' second moments, and at every choice the second moment of the option that
the value-maximising player takes (`widget.best_keep_choice`). The generic functions
(`box_outcomes`, `turn_moments`) serve the win-seeking player; the solve's own loop gives the
same numbers bit for bit from the ~120 distinct outcomes of a final roll (`_Outcomes`) and the
solver's in-place widget (`widget.turn_start_moments`).
"""

from __future__ import annotations

import functools
import os
from typing import Any, NamedTuple

import numpy as np

from yahtzee_jax.files import cached, kept_or_said
from yahtzee_jax.game.rules import NUM_DICE, Rules, get_rules
from yahtzee_jax.solver.final_rolls import score_transition
from yahtzee_jax.solver.states import (
    chunk_indices,
    fill_copies,
    full_mask,
    layer_chunks,
    table_shape,
    upper_cap,
)
from yahtzee_jax.solver.value_table import cache_file, load_table, most_points, save_table, solve
from yahtzee_jax.solver.widget import best_keep_choice, keep_values, turn_start_moments
from yahtzee_jax.solver.widget_tables import (
    NUM_ROLLS,
    ROLL_COUNTS,
    WIDGET_ORDER,
    WIDGET_POSITION,
    YAHTZEE_ROLLS,
    base_points,
    solver_score_tables,
)

Array = Any  # numpy.ndarray or jax.Array


def _lower_boxes(rules: Rules) -> list[int]:
    """The boxes after the upper section, but the Yahtzee box."""
    return [box for box in range(rules.num_upper, rules.num_boxes) if box != rules.yahtzee_box]


def distinct_next_states(
    mask: Array, upper_total: Array, flag: Array, xp: Any, rules: Rules
) -> tuple[Array, Array, Array]:
    """The turn-start states that writing a roll in a box can lead to (44 in Yahtzee): (mask,
    upper, flag), each [44, ...] for a card with trailing batch axes.

    The next state depends on the roll only through the count of an upper box's face (6 states
    for each of the 6 upper boxes) and, in the Yahtzee box, through whether the roll is a five of
    a kind (its 50 sets the flag); a lower box leads to one state. `next_state_of_roll` says
    which of them each roll and box leads to. A filled box's entries name whatever state their
    index gives: mask them by legality.
    """
    trailing = (None,) * xp.ndim(mask)  # the card's batch axes
    num_upper, lower = rules.num_upper, _lower_boxes(rules)
    faces = np.repeat(np.arange(1, num_upper + 1), NUM_DICE + 1)  # [36]: 6 counts per box
    counts = np.tile(np.arange(NUM_DICE + 1), num_upper)
    # An int array even when the card has no lower box but the Yahtzee (a [] would be float).
    lower_boxes = np.array(lower, int)
    boxes = np.concatenate(
        [np.repeat(np.arange(num_upper), NUM_DICE + 1), lower_boxes, [rules.yahtzee_box] * 2]
    )
    masks = mask | (1 << boxes)[(slice(None), *trailing)]
    added = (faces * counts)[(slice(None), *trailing)]
    upper_after = xp.minimum(upper_total + added, upper_cap(rules))
    same_upper = xp.broadcast_to(upper_total, (len(lower) + 2, *xp.shape(upper_total)))
    uppers = xp.concatenate([upper_after, same_upper])
    same_flag = xp.broadcast_to(flag, (len(boxes) - 2, *xp.shape(flag)))
    fifty = xp.broadcast_to(np.array([0, 1])[(slice(None), *trailing)], (2, *xp.shape(flag)))
    flags = xp.concatenate([same_flag, fifty.astype(same_flag.dtype)])
    return masks, uppers, flags


@functools.cache
def next_state_of_roll(rules: Rules) -> np.ndarray:
    """int32[252, boxes]: the index among `distinct_next_states` each roll and box leads to."""
    five_of_a_kind = ROLL_COUNTS.max(axis=1) == NUM_DICE
    num_upper, lower = rules.num_upper, _lower_boxes(rules)
    index = np.empty((NUM_ROLLS, rules.num_boxes), np.int32)
    for box in range(num_upper):
        index[:, box] = box * (NUM_DICE + 1) + ROLL_COUNTS[:, box]
    for position, box in enumerate(lower):
        index[:, box] = num_upper * (NUM_DICE + 1) + position
    index[:, rules.yahtzee_box] = num_upper * (NUM_DICE + 1) + len(lower) + five_of_a_kind
    return index


class TurnEnds(NamedTuple):
    """The distinct turn ends of writing a roll in a box (NumPy, static): K of them."""

    roll: np.ndarray  # int32[K]: a roll that stands for the turn end
    box: np.ndarray  # int32[K]: the box it is written in
    state: np.ndarray  # int32[K]: its next state among `distinct_next_states`
    of_roll: np.ndarray  # int32[252, boxes]: the turn end each roll and box leads to


@functools.lru_cache(maxsize=16)
def distinct_turn_ends(rules: Rules) -> TurnEnds:
    """Writing the 252 rolls in the boxes leads to few distinct turn ends (187 of 3,276 in
    Yahtzee). A roll that is no five of a kind scores the same points in a box on every card
    (`base_points`), so its reward and next state depend on the card only as the box's and
    those points' do; a five of a kind's points and bonus (the Joker, the +100) depend on the
    card itself, so each of its (roll, box) is a turn end of its own."""
    points = base_points(rules)
    state = next_state_of_roll(rules)
    five = np.zeros(NUM_ROLLS, bool)
    five[YAHTZEE_ROLLS] = True
    ends: dict[tuple[int, ...], int] = {}
    of_roll = np.empty((NUM_ROLLS, rules.num_boxes), np.int32)
    for roll in range(NUM_ROLLS):
        for box in range(rules.num_boxes):
            key = (-1 - roll, box) if five[roll] else (box, points[roll, box], state[roll, box])
            of_roll[roll, box] = ends.setdefault(key, len(ends))
    _, first = np.unique(of_roll, return_index=True)  # each turn end's first (roll, box)
    roll, box = np.divmod(first, rules.num_boxes)
    return TurnEnds(roll.astype(np.int32), box.astype(np.int32), state[roll, box], of_roll)


def roll_futures(
    table: Array,
    mask: Array,
    upper_total: Array,
    flag: Array,
    xp: Any,
    rules: Rules,
) -> Array:
    """`table` at the state after writing each of the 252 rolls in each box, [252, boxes, ...].

    Read once per distinct next state (44 per Yahtzee card, `distinct_next_states`) instead of
    252 x 13 times, and spread by the static `next_state_of_roll`. Mask filled boxes by legality.
    """
    states = distinct_next_states(mask, upper_total, flag, xp, rules)
    return table[states][next_state_of_roll(rules)]


def box_rewards(points: Array, upper_total: Array, xp: Any, rules: Rules) -> Array:
    """`score_transition`'s reward of writing `points` [rolls, boxes, ...] in each box, without
    its next states (the futures read them per distinct state): the upper bonus is worked out on
    the upper boxes' columns alone, a third of the card."""
    upper = points[:, : rules.num_upper]
    cap = upper_cap(rules)
    reaches_bonus = (upper_total < cap) & (upper_total + upper >= cap)
    upper_reward = upper + rules.upper_bonus_points * reaches_bonus
    return xp.concatenate([upper_reward, points[:, rules.num_upper :]], axis=1)


def box_outcomes(
    points: Array,
    legal: Array,
    bonus: Array,
    mask: Array,
    upper_total: Array,
    flag: Array,
    tables: tuple[Array, Array],
    xp: Any,
    rules: Rules,
) -> tuple[Array, Array, Array]:
    """Reward and the next state's V and M of writing each roll in each box (arguments broadcast).

    `points`/`legal` are [252, boxes, ...] and `bonus` [252, ...] (`score_options` of the rolls);
    the card's (mask, upper_total, flag) broadcast against the trailing axes. Returns (reward
    with every bonus it pays, future value, future second moment), each [252, boxes, ...]; the
    futures are 0 where the box is illegal (its "next state" may not exist). `tables` are the
    (value, second-moment) tables, or any two tables over the states to read at the next one.
    """
    if points.shape[0] == NUM_ROLLS:  # every roll: the tables read per next state
        reward = box_rewards(points, upper_total, xp, rules)
        futures = [roll_futures(table, mask, upper_total, flag, xp, rules) for table in tables]
    else:
        shape = (1,) * (points.ndim - 2)
        categories = xp.arange(rules.num_boxes).reshape(1, rules.num_boxes, *shape)
        reward, next_upper, next_flag = score_transition(
            categories, points, upper_total, flag, xp, rules
        )
        next_mask = mask | (1 << categories)
        futures = [table[next_mask, next_upper, next_flag] for table in tables]
    reward = reward + rules.yahtzee_bonus_points * bonus[:, None]
    future, future_moment = (xp.where(legal, part, 0.0) for part in futures)
    return reward, future, future_moment


def turn_moments(
    reward: Array, future: Array, future_moment: Array, legal: Array, xp: Any = np
) -> tuple[Array, Array, Array, Array]:
    """Value and second moment of the optimal player's keeps, from each roll's box outcomes.

    Returns (last keep values, their second moments, first keep values, their second moments),
    each [462, ...]: what the turn is worth from each keep with one and with two re-rolls left,
    the player scoring each final roll in the box of highest value and keeping for value.
    """
    final_value, final_moment = _chosen_box(reward, future, future_moment, legal, xp)
    last_keep, last_keep_moment = keep_values(final_value, xp), keep_values(final_moment, xp)
    middle, middle_moment = best_keep_choice(last_keep, last_keep_moment, xp)
    return last_keep, last_keep_moment, keep_values(middle, xp), keep_values(middle_moment, xp)


def roll_options(
    mask: np.ndarray, flag: np.ndarray, score_tables: tuple[np.ndarray, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`score_options` of every roll against n cards, batch-last: ([252, boxes, n] points and
    legality, [252, n] Yahtzee bonus), from `widget_tables.solver_score_tables`."""
    base, five_points, five_legal, five_bonus = score_tables
    count = len(mask)
    filled = (mask[None, :] >> np.arange(base.shape[1])[:, None]) & 1 == 1  # [boxes, n]
    points = np.repeat(base[:, :, None], count, axis=2)
    legal = np.repeat(~filled[None], NUM_ROLLS, axis=0)
    bonus = np.zeros((NUM_ROLLS, count), bool)
    # The five-of-a-kinds score by the card (Joker rules, +100): their options per card.
    points[YAHTZEE_ROLLS] = five_points[mask, flag].transpose(1, 2, 0)
    legal[YAHTZEE_ROLLS] = five_legal[mask, flag].transpose(1, 2, 0)
    bonus[YAHTZEE_ROLLS] = five_bonus[mask, flag].T
    return points, legal, bonus


class _Outcomes(NamedTuple):
    """The distinct outcomes (box, points, next state) of writing a final roll, per rule set.

    A roll that is not a five of a kind scores its base points in any open box, so writing it
    leads to one of about 120 outcomes (an upper box's 6 counts of its face, a lower box's
    distinct scores) whatever the card: a chunk values those once, [outcomes, n], and gathers
    them by rows. The five-of-a-kinds, scored by the card (Joker rules, +100), are done apart.
    """

    box: np.ndarray  # int[outcomes]
    points: np.ndarray  # int64[outcomes]
    next_state: np.ndarray  # int[outcomes]: among `distinct_next_states`
    upper: np.ndarray  # bool[outcomes]: an upper box's, which may reach the upper bonus
    rows: tuple[np.ndarray, ...]  # per box: each roll's outcome, the rolls in `WIDGET_ORDER[5]`
    five_positions: np.ndarray  # where the five-of-a-kinds are in `WIDGET_ORDER[5]`
    five_next_states: np.ndarray  # int[6, boxes]: `next_state_of_roll` of the five-of-a-kinds


@functools.cache
def _outcomes(rules: Rules) -> _Outcomes:
    """The `_Outcomes` of a rule set, from its base points."""
    order = WIDGET_ORDER[NUM_DICE]
    points = solver_score_tables(rules)[0][order]
    next_state = next_state_of_roll(rules)[order]
    boxes, scores, states, rows = [], [], [], []
    for box in range(rules.num_boxes):
        pairs = np.stack([points[:, box], next_state[:, box]], axis=1)
        distinct, inverse = np.unique(pairs, axis=0, return_inverse=True)
        rows.append(len(boxes) + inverse.ravel())
        boxes += [box] * len(distinct)
        scores += list(distinct[:, 0])
        states += list(distinct[:, 1])
    boxes = np.array(boxes)
    return _Outcomes(
        box=boxes,
        points=np.array(scores, np.int64),
        next_state=np.array(states),
        upper=boxes < rules.num_upper,
        rows=tuple(rows),
        five_positions=WIDGET_POSITION[NUM_DICE][YAHTZEE_ROLLS],
        five_next_states=next_state_of_roll(rules)[YAHTZEE_ROLLS],
    )


def _final_roll_moments(
    mask: np.ndarray,
    upper_total: np.ndarray,
    flag: np.ndarray,
    tables: tuple[np.ndarray, np.ndarray],
    five_options: tuple[np.ndarray, ...],
    rules: Rules,
) -> tuple[np.ndarray, np.ndarray]:
    """Value and second moment of each final roll [252, n] (in `WIDGET_ORDER[5]`) for n cards,
    the roll written in the first box of highest value: `turn_moments`' choice of box."""
    plan = _outcomes(rules)
    states = distinct_next_states(mask, upper_total, flag, np, rules)
    future, future_moment = (table[states] for table in tables)  # [44, n] each
    is_open = (mask >> np.arange(rules.num_boxes)[:, None]) & 1 == 0  # [boxes, n]
    # Each outcome's reward (integer, as `box_rewards` has it), value and second moment [K, n].
    reward = np.repeat(plan.points[:, None], len(mask), axis=1)
    cap = upper_cap(rules)
    reaches_bonus = (upper_total < cap) & (upper_total + reward >= cap) & plan.upper[:, None]
    reward += rules.upper_bonus_points * reaches_bonus
    later, later_moment = future[plan.next_state], future_moment[plan.next_state]
    value = np.where(is_open[plan.box], reward + later, -np.inf)
    moment = reward * reward + 2 * reward * later + later_moment
    # Box by box, a box takes a roll only with a strictly higher value: the first best box, as
    # `argmax` picks it. Boxes filled in every card of the chunk cannot win: skipped. The rows
    # are gathered into buffers of the chunk, not new [252, boxes, n] arrays (page faults).
    first, *others = (plan.rows[box] for box in np.flatnonzero(is_open.any(axis=1)))
    best, best_moment = np.take(value, first, axis=0), np.take(moment, first, axis=0)
    gathered, gathered_moment = np.empty_like(best), np.empty_like(best)
    better = np.empty(best.shape, bool)
    for rows in others:
        np.take(value, rows, axis=0, out=gathered)
        np.greater(gathered, best, out=better)
        # The values `better` picks: a maximum is one fast pass, a masked copy branches.
        np.maximum(best, gathered, out=best)
        np.take(moment, rows, axis=0, out=gathered_moment)
        np.copyto(best_moment, gathered_moment, where=better)
    five_value, five_moment = _five_of_a_kind_moments(
        mask, upper_total, flag, future, future_moment, five_options, rules
    )
    best[plan.five_positions] = five_value
    best_moment[plan.five_positions] = five_moment
    return best, best_moment


def _five_of_a_kind_moments(
    mask: np.ndarray,
    upper_total: np.ndarray,
    flag: np.ndarray,
    future: np.ndarray,
    future_moment: np.ndarray,
    five_options: tuple[np.ndarray, ...],
    rules: Rules,
) -> tuple[np.ndarray, np.ndarray]:
    """Value and second moment of the six five-of-a-kinds [6, n], scored by the card: the
    arithmetic of `box_outcomes` and `turn_moments` on these rolls alone."""
    points, legal, bonus = (part[mask, flag] for part in five_options)  # [n, 6, ...]
    points = points.transpose(1, 2, 0).astype(np.int64)
    legal, bonus = legal.transpose(1, 2, 0), bonus.T
    reward = box_rewards(points, upper_total, np, rules)
    reward += rules.yahtzee_bonus_points * bonus[:, None]
    next_state = _outcomes(rules).five_next_states
    later = np.where(legal, future[next_state], 0.0)
    later_moment = np.where(legal, future_moment[next_state], 0.0)
    return _chosen_box(reward, later, later_moment, legal, np)


def _chosen_box(
    reward: Array, future: Array, future_moment: Array, legal: Array, xp: Any
) -> tuple[Array, Array]:
    """Value and second moment [rolls, ...] of writing each roll in its value-maximising box
    (the first of the best), from [rolls, boxes, ...] outcomes (`box_outcomes`)."""
    value = xp.where(legal, reward + future, -xp.inf)
    best = xp.argmax(value, axis=1)[:, None]

    def chosen(array: Array) -> Array:
        return xp.take_along_axis(array, best, axis=1)[:, 0]

    points, later, later_moment = chosen(reward), chosen(future), chosen(future_moment)
    return points + later, points * points + 2 * points * later + later_moment


def _chunk_moments(
    mask: np.ndarray,
    upper: np.ndarray,
    flag: np.ndarray,
    value_table: np.ndarray,
    moment_table: np.ndarray,
    score_tables: tuple[np.ndarray, ...],
    rules: Rules,
) -> tuple[np.ndarray, np.ndarray]:
    """(V, M) of the turn-start states (mask, upper total, flag) of one chunk, batch-last."""
    tables = (value_table, moment_table)
    final = _final_roll_moments(mask, upper, flag, tables, score_tables[1:], rules)
    return turn_start_moments(*final)


def solve_moment_table(
    rules: str | Rules, value_table: np.ndarray | None = None, down_to_filled: int = 0
) -> np.ndarray:
    """float64[masks, totals, 2]: E[(score still to come)^2] from every turn-start state, optimal
    play.

    Indexed like the value table (`value_table.solve_value_table`), NaN where it is and for the
    states with fewer than `down_to_filled` boxes filled (a partial solve, for tests); one process,
    a layer of filled boxes at a time from the full card back (Yahtzee: 7.5 CPU-s on a 2-core AMD
    EPYC, 2026-11-27, where the [252, boxes, n] outcomes of `box_outcomes` took 42).
    """
    rules = get_rules(rules)
    if value_table is None:
        value_table = solve(rules).value_table
    score_tables = solver_score_tables(rules)
    moment_table = np.full(table_shape(rules), np.nan)
    moment_table[full_mask(rules)] = 0.0
    for filled in range(rules.num_boxes - 1, down_to_filled - 1, -1):
        layer_masks, chunks = layer_chunks(rules, filled)
        for chunk in chunks:
            states = chunk_indices(chunk)
            _, moment = _chunk_moments(*states, value_table, moment_table, score_tables, rules)
            moment_table[states] = moment
        fill_copies(moment_table, rules, layer_masks)
    return moment_table


def score_moments(
    rules: str | Rules, cache_dir: str | os.PathLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(value table, second-moment table) of a rule variant, both cached on disk after a solve."""
    rules = get_rules(rules)
    value_table = solve(rules, cache_dir=cache_dir).value_table
    path = cache_file(rules, cache_dir, table="moments")
    most = most_points(rules) ** 2  # E[X^2] <= most^2

    def make() -> np.ndarray:
        moment_table = solve_moment_table(rules, value_table)
        kept_or_said(lambda: save_table(moment_table, rules, path), "moment table", path)
        return moment_table

    moment_table = cached(path, lambda file: load_table(file, rules, most), make, "moment table")
    return value_table, moment_table
