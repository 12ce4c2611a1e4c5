"""One piece of the target tables: its states' turn, from the final rolls to the turn's start.

Writing a final roll in a box worth r points and leading to s' gives T_{s'}(d - r); each roll
takes its best box for each target d on its own (`final_roll_chances`), the solver's widget takes
the keeps (`widget.first_roll_values`) and the mean over the first roll is summed a roll at a
time (`mean_over_rolls`). The C kernel (`kernel_chances`, `native.target_turn_start`) does the
whole turn of a piece's wanted columns to the same bits.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools

import numpy as np

from yahtzee_jax.game.rules import NUM_DICE, Rules
from yahtzee_jax.solver import native
from yahtzee_jax.solver.final_rolls import score_transition
from yahtzee_jax.solver.target_layout import TargetLayout
from yahtzee_jax.solver.widget import (
    best_keep_choice,
    first_roll_values,
    keep_values,
)
from yahtzee_jax.solver.widget_tables import (
    ROLL_PROBABILITIES,
    WIDGET_ORDER,
    WIDGET_POSITION,
    YAHTZEE_ROLLS,
    base_points,
    solver_score_tables,
)


def _shifted(
    flat: np.ndarray, layout: TargetLayout, state: tuple, shift: np.ndarray, targets: np.ndarray
) -> np.ndarray:
    """Rows of the `state` (index arrays) read at d - shift for the d of `targets`: [..., d].

    1 where d <= shift (reached already; every row starts with T(0) = 1), 0 past the row's end.
    """
    rows, lengths = layout.rows[state], layout.lengths[state]
    wanted = targets - shift[..., None]
    index = np.clip(wanted, 0, np.maximum(lengths - 1, 0)[..., None])
    values = flat[np.maximum(rows, 0)[..., None] + index]
    return np.where(wanted < lengths[..., None], values, 0.0)


@functools.lru_cache(maxsize=8)
def _sources(rules: Rules) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (box, points) pairs that rolls other than five of a kind score, and which pair each
    such roll scores in each box, int[252, boxes] with the rolls in `WIDGET_ORDER[5]` (-1 for
    the five-of-a-kinds, valued apart: their points follow the card). 109 pairs in Yahtzee."""
    points = base_points(rules)[WIDGET_ORDER[NUM_DICE]]
    fives = WIDGET_POSITION[NUM_DICE][YAHTZEE_ROLLS]
    boxes = np.broadcast_to(np.arange(rules.num_boxes), points.shape)
    other = np.ones(len(points), bool)
    other[fives] = False
    pairs, inverse = np.unique(
        np.stack([boxes[other].ravel(), points[other].ravel()], axis=1), axis=0, return_inverse=True
    )
    source_of = np.full(points.shape, -1, np.int64)
    source_of[other] = inverse.reshape(-1, rules.num_boxes)
    return pairs[:, 0], pairs[:, 1], source_of


def _outcomes(
    box: np.ndarray, points: np.ndarray, bonus: np.ndarray, states: tuple, rules: Rules
) -> tuple[np.ndarray, tuple]:
    """(reward, next state) of writing `points` in `box` from the states (arguments broadcast)."""
    mask, upper, flag = states
    reward, next_upper, next_flag = score_transition(box, points, upper, flag, np, rules)
    reward = reward + rules.yahtzee_bonus_points * bonus
    next_mask = mask | (1 << box)
    return reward, (np.broadcast_to(next_mask, reward.shape), next_upper, next_flag)


@dataclasses.dataclass(frozen=True)
class _Moves:
    """What writing a final roll can do from n states: the (box, points) pairs of rolls other
    than five of a kind, [pairs, n], and the five-of-a-kinds' boxes, [boxes, 6, n]."""

    reward: np.ndarray  # points now, the bonuses included
    after: tuple  # the next state
    allowed: np.ndarray  # the box is open (and, for a five of a kind, the move legal)
    five_reward: np.ndarray
    five_after: tuple
    five_allowed: np.ndarray


def _moves(states: tuple[np.ndarray, np.ndarray, np.ndarray], rules: Rules) -> _Moves:
    """The `_Moves` of the states (mask, capped upper total, flag)."""
    mask, _, flag = states
    box, points, _ = _sources(rules)
    no_bonus = np.zeros(1, bool)
    reward, after = _outcomes(box[:, None], points[:, None], no_bonus, states, rules)
    _, five_points, five_legal, five_bonus = solver_score_tables(rules)
    five_reward, five_after = _outcomes(
        np.arange(rules.num_boxes)[:, None, None],
        five_points[mask, flag].transpose(2, 1, 0).astype(np.int64),  # [boxes, 6, n]
        five_bonus[mask, flag].T[None],
        states,
        rules,
    )
    return _Moves(
        reward=reward,
        after=after,
        allowed=(mask[None] >> box[:, None]) & 1 == 0,
        five_reward=five_reward,
        five_after=five_after,
        five_allowed=five_legal[mask, flag].transpose(2, 1, 0),
    )


def final_roll_chances(
    states: tuple[np.ndarray, np.ndarray, np.ndarray],
    targets: np.ndarray,
    flat: np.ndarray,
    layout: TargetLayout,
    rules: Rules,
    value_table: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """float64[252, n, d]: each final roll's chances of the `targets` d (rolls in
    `WIDGET_ORDER[5]`) and None: the best box for each d on its own. With `value_table`, the
    chances of the box of highest expected score (the first on a tie) and that score, [252, n].
    """
    box, _, source_of = _sources(rules)
    moves = _moves(states, rules)
    is_open = moves.allowed
    # A filled box's "next state" is its own layer's, unsolved (NaN): zeroed, never multiplied.
    shifted = _shifted(flat, layout, moves.after, moves.reward, targets)
    chances = np.where(is_open[..., None], shifted, 0.0)
    five = _shifted(flat, layout, moves.five_after, moves.five_reward, targets)
    five = np.where(moves.five_allowed[..., None], five, 0.0)
    fives = WIDGET_POSITION[NUM_DICE][YAHTZEE_ROLLS]
    if value_table is not None:
        values = _move_values(is_open, moves.reward, moves.after, value_table)
        five_values = _move_values(
            moves.five_allowed, moves.five_reward, moves.five_after, value_table
        )
        return _chosen_chances(chances, values, five, five_values, source_of, fives)
    best = np.zeros((len(source_of), len(states[0]), len(targets)))
    gathered = np.empty_like(best)
    for column in range(rules.num_boxes):
        if not is_open[box == column].any():
            continue  # filled in every state of the piece: nothing to take
        np.take(chances, source_of[:, column], axis=0, out=gathered)  # -1: a five, set below
        np.maximum(best, gathered, out=best)
    best[fives] = five.max(axis=0)
    return best, None


def _move_values(
    allowed: np.ndarray, reward: np.ndarray, after: tuple[np.ndarray, ...], value_table: np.ndarray
) -> np.ndarray:
    """A move's expected score: its points and its next state's value (-inf where it cannot be
    taken), how the value-maximiser ranks the moves, in NumPy's passes and the kernel's alike."""
    return np.where(allowed, reward + value_table[after], -np.inf)


# The shift of a move that cannot be taken (a filled box, an illegal five of a kind): the row is
# then read past its end at every target, a chance of 0.
_NO_MOVE_SHIFT = -(1 << 40)


def stacked_moves(
    states: tuple[np.ndarray, np.ndarray, np.ndarray], rules: Rules
) -> tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray, np.ndarray]:
    """The moves a final roll can take from n states as the kernel reads them, [candidates, n]
    each: (next state, allowed, reward, shift); the (box, points) pairs' rows, then face f's
    five of a kind in box b (`roll_sources` says which each roll takes in each box). The shift
    of a move that cannot be taken is past every target."""
    moves = _moves(states, rules)
    pairs = moves.reward.shape

    def stacked(pair: np.ndarray, five: np.ndarray) -> np.ndarray:
        """[pairs + 6 x boxes, n]: the pairs' rows, then face f's five of a kind in box b."""
        five = np.broadcast_to(five, moves.five_reward.shape).swapaxes(0, 1)
        return np.concatenate([np.broadcast_to(pair, pairs), five.reshape(-1, pairs[1])])

    after = tuple(map(stacked, moves.after, moves.five_after))
    allowed = stacked(moves.allowed, moves.five_allowed)
    reward = stacked(moves.reward, moves.five_reward)
    return after, allowed, reward, np.where(allowed, reward, _NO_MOVE_SHIFT)


def kernel_chances(
    states: tuple[np.ndarray, np.ndarray, np.ndarray],
    columns: tuple[np.ndarray, np.ndarray],
    flat: np.ndarray,
    layout: TargetLayout,
    rules: Rules,
    kernel: ctypes.CDLL,
    value_table: np.ndarray | None = None,
    choose: tuple[np.ndarray, TargetLayout] | None = None,
) -> np.ndarray:
    """The chances at the turn's start of `columns` (index into the n states, target d), by the
    C kernel (`native.target_turn_start`): `final_roll_chances` then `turn_start_chances`, the
    same bits (with `value_table`, the value-maximiser's chances; with `choose`, a table of
    rows and where they lie, the chances of the play that maximises that table's chance of
    each column's target)."""
    after, allowed, reward, shifts = stacked_moves(states, rules)
    candidates = (layout.rows[after], layout.lengths[after], shifts)
    values, chooser = None, None
    if value_table is not None:
        values = _move_values(allowed, reward, after, value_table)
    if choose is not None:
        choose_flat, choose_layout = choose
        values = np.where(allowed, 0.0, -np.inf)  # the kernel adds each row's chance to it
        chooser = (choose_layout.rows[after], choose_layout.lengths[after], choose_flat)
    sources = roll_sources(rules)
    return native.target_turn_start(candidates, sources, flat, columns, kernel, values, chooser)


def piece_chances(
    states: tuple[np.ndarray, np.ndarray, np.ndarray],
    targets: np.ndarray,
    wanted: np.ndarray,
    flat: np.ndarray,
    layout: TargetLayout,
    rules: Rules,
    kernel: ctypes.CDLL | None,
    value_table: np.ndarray | None = None,
) -> np.ndarray:
    """The chances at the turn's start of the n states' `wanted` [n, targets] targets, in C
    order: by the C kernel where given (it solves only those), else by the NumPy passes (the
    same bits). `layout` says where the rows of the states a move leads to lie in `flat`."""
    if kernel is not None:
        state, offset = np.nonzero(wanted)
        columns = (state, targets[offset])
        return kernel_chances(states, columns, flat, layout, rules, kernel, value_table)
    final, final_values = final_roll_chances(states, targets, flat, layout, rules, value_table)
    return turn_start_chances(final, final_values)[wanted]


@functools.lru_cache(maxsize=8)
def roll_sources(rules: Rules) -> np.ndarray:
    """int32[252, boxes]: each roll's candidate in each box for `kernel_chances` (rolls in
    `WIDGET_ORDER[5]`): its (box, points) pair, or for the five of a kind of face f the row
    after the pairs, f x boxes + box."""
    box, _, source_of = _sources(rules)
    sources = source_of.copy()
    fives = WIDGET_POSITION[NUM_DICE][YAHTZEE_ROLLS]
    faces = np.arange(len(fives))[:, None]
    sources[fives] = len(box) + faces * rules.num_boxes + np.arange(rules.num_boxes)
    return sources.astype(np.int32)


def _chosen_chances(
    chances: np.ndarray,
    values: np.ndarray,
    five: np.ndarray,
    five_values: np.ndarray,
    source_of: np.ndarray,
    fives: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The chances of each roll's box of highest expected score, and that score."""
    best = np.zeros((len(source_of), *chances.shape[1:]))
    best_value = np.full(best.shape[:2], -np.inf)
    for column in range(source_of.shape[1]):
        value = values[source_of[:, column]]
        better = value > best_value
        best_value = np.where(better, value, best_value)
        best = np.where(better[..., None], chances[source_of[:, column]], best)
    choice = np.argmax(five_values, axis=0)  # the first best box, as the loop above takes it
    best[fives] = np.take_along_axis(five, choice[None, ..., None], axis=0)[0]
    best_value[fives] = five_values.max(axis=0)
    return best, best_value


def turn_start_chances(final: np.ndarray, final_values: np.ndarray | None = None) -> np.ndarray:
    """[n, width] chances at the turn's start from the final rolls' [252, n, width] (in
    `WIDGET_ORDER[5]`): the solver's widget on [252, n x width], or with `final_values` [252, n]
    the chances of the keeps of highest expected score."""
    rolls, n, width = final.shape
    if final_values is None:
        first = first_roll_values(final.reshape(rolls, n * width))
        return mean_over_rolls(first).reshape(n, width)
    in_rolls = WIDGET_POSITION[NUM_DICE]  # back to `ROLLS` order, the generic widget's
    value, chance = final_values[in_rolls], final[in_rolls]
    middle, middle_chance = best_keep_choice(keep_values(value), keep_values(chance))
    _, start_chance = best_keep_choice(keep_values(middle), keep_values(middle_chance))
    return mean_over_rolls(start_chance.reshape(rolls, n * width)).reshape(n, width)


def mean_over_rolls(first: np.ndarray) -> np.ndarray:
    """[n]: the mean over the first rolls of [252, n] in `ROLLS` order, summed a roll at a time,
    so that a column's bits do not depend on the others (BLAS's dot rounds a column by where it
    falls among them), as the C kernel sums it."""
    total = np.zeros(first.shape[1])
    for probability, roll in zip(ROLL_PROBABILITIES, first, strict=True):
        total += probability * roll
    return total
