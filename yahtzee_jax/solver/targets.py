"""Target-score tables: the best chance of scoring at least d more points from each turn start.

For a turn-start state s (`solver.states`) and d = 0 .. the most points still reachable from s,
T_s(d) is the largest probability, over every way of playing the rest of the game, that the points
still to come (boxes, upper bonus, Yahtzee bonuses) reach d: what a player who must beat a known
score maximises. It is the value solve's backward induction with a vector per state: writing a
roll in a box worth r points and leading to s' gives T_{s'}(d - r) (1 where d <= r, 0 past the
most s' can still score), a choice takes the maximum for each d on its own (the best play for a
target of 40 need not be the best for 60) and a roll the mean. The within-turn part is the
solver's widget itself (`widget.turn_start_value`, or the C kernel's, `native.turn_start_value`,
the same bits) on [252, states x targets] arrays.

Each solved state owns a row of `most_to_come + 1` chances in one flat float64 table; a state whose
value is a copy of another's (`states.fill_copies`) shares that state's row (`TargetLayout`).
`policy="expected"` gives instead the chances of the value-maximising player (the box and keeps of
highest expected score, as `solver.moments` follows it): its chances sum over d >= 1 to the value
table's expected score to come, which is how the tests tie these tables to the value table.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import mmap
import os
import pathlib
import threading
import time
import warnings
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.files import replaced_whole
from yahtzee_jax.game.rules import NUM_DICE, Rules, get_rules
from yahtzee_jax.solver import native
from yahtzee_jax.solver.exact import _worker_pool, cache_file, solver_workers
from yahtzee_jax.solver.final_rolls import score_transition
from yahtzee_jax.solver.states import (
    all_masks,
    chunk_indices,
    fill_copies,
    full_mask,
    layer_chunks,
    num_upper_totals,
    solved_states,
    table_shape,
    upper_cap,
)
from yahtzee_jax.solver.tables import (
    WIDGET_ORDER,
    WIDGET_POSITION,
    YAHTZEE_ROLLS,
    base_points,
    solver_score_tables,
)
from yahtzee_jax.solver.widget import (
    best_keep_choice,
    expected_over_rolls,
    keep_values,
    turn_start_value,
)

POLICIES = ("target", "expected")
# Chances per solver task (states x targets), so that a piece's [462, n x targets] widget arrays
# stay in the cache: 1,024 / 4,096 / 16,384 took 7.2 / 21.5 / 21.5 us a chance (official, 6 boxes
# filled, one process, 2026-11-27, a shared 2-core AMD EPYC). The targets d are split in blocks too.
PIECE_ELEMENTS = 1 << 10
PIECE_TARGETS = 256  # the most targets in one piece
_PROBABILITY_SLACK = 1e-9  # a mean of ones may round a hair above 1


def most_to_come(rules: Rules) -> np.ndarray:
    """int64[masks, totals, 2]: an upper bound on the points still to come from each state.

    Every open box at its most, the upper bonus when the open upper boxes can still reach it, and
    a Yahtzee bonus in every turn that can pay one (after a 50 in the Yahtzee box). Official
    Yahtzee reaches it (a Yahtzee of the right face every turn); elsewhere the top chances are 0.
    """
    _, five_points, _, _ = solver_score_tables(rules)
    box_most = np.maximum(base_points(rules).max(axis=0), five_points.max(axis=(0, 1, 2)))
    masks = all_masks(rules)
    open_boxes = (masks[:, None] >> np.arange(rules.num_boxes)) & 1 == 0  # [masks, boxes]
    boxes_most = open_boxes @ box_most.astype(np.int64)
    upper_most = open_boxes[:, : rules.num_upper] @ (NUM_DICE * np.arange(1, rules.num_upper + 1))
    totals = np.arange(num_upper_totals(rules))
    cap = upper_cap(rules)
    reachable = (totals[None] < cap) & (totals[None] + upper_most[:, None] >= cap)
    most = boxes_most[:, None, None] + rules.upper_bonus_points * reachable[:, :, None]
    if rules.yahtzee_bonus:
        count = open_boxes.sum(axis=1)
        box_open = open_boxes[:, rules.yahtzee_box]
        turns = np.stack([np.where(box_open, count - 1, 0), count], axis=1)  # flag 0, flag 1
        most = most + rules.yahtzee_bonus_points * turns[:, None, :]
    return np.broadcast_to(most, table_shape(rules)).astype(np.int64)


@dataclasses.dataclass(frozen=True)
class TargetLayout:
    """Where each state's chances lie in the flat table."""

    rows: np.ndarray  # int64[masks, totals, 2]: offset of the state's row; -1 if unreachable
    lengths: np.ndarray  # int64[masks, totals, 2]: most points to come + 1; 0 if unreachable
    size: int  # chances in the flat table: the solved states' rows, in C order of the states


@functools.lru_cache(maxsize=8)
def target_layout(rules: Rules) -> TargetLayout:
    """The `TargetLayout` of `rules`: solved states own rows, copies point at their original's."""
    states = solved_states(rules)
    counts = most_to_come(rules)[states] + 1
    tables = []
    for column in (np.cumsum(counts) - counts, counts):
        table = np.full(states.shape, np.nan)
        table[states] = column
        fill_copies(table, rules)  # the same copies the value table makes, on offsets and sizes
        tables.append(table)
    rows, lengths = tables
    return TargetLayout(
        rows=np.where(np.isnan(rows), -1, rows).astype(np.int64),
        lengths=np.where(np.isnan(lengths), 0, lengths).astype(np.int64),
        size=int(counts.sum()),
    )


def state_chances(
    flat: np.ndarray, layout: TargetLayout, state: tuple[int, int, int]
) -> np.ndarray:
    """T_s(d) for d = 0 .. most_to_come(s) of one state (mask, capped upper total, flag)."""
    row, length = int(layout.rows[state]), int(layout.lengths[state])
    if row < 0:
        raise UserError(f"state {state} cannot be reached")
    return flat[row : row + length]


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
    mask = states[0]
    box, points, source_of = _sources(rules)
    is_open = (mask[None] >> box[:, None]) & 1 == 0  # [pairs, n]
    no_bonus = np.zeros(1, bool)
    reward, after = _outcomes(box[:, None], points[:, None], no_bonus, states, rules)
    # A filled box's "next state" is its own layer's, unsolved (NaN): zeroed, never multiplied.
    chances = np.where(is_open[..., None], _shifted(flat, layout, after, reward, targets), 0.0)
    _, five_points, five_legal, five_bonus = solver_score_tables(rules)
    flag = states[2]
    five_rewards, five_after = _outcomes(
        np.arange(rules.num_boxes)[:, None, None],
        five_points[mask, flag].transpose(2, 1, 0).astype(np.int64),  # [boxes, 6, n]
        five_bonus[mask, flag].T[None],
        states,
        rules,
    )
    five_legal = five_legal[mask, flag].transpose(2, 1, 0)
    five = _shifted(flat, layout, five_after, five_rewards, targets)
    five = np.where(five_legal[..., None], five, 0.0)
    fives = WIDGET_POSITION[NUM_DICE][YAHTZEE_ROLLS]
    if value_table is not None:
        values = np.where(is_open, reward + value_table[after], -np.inf)
        five_values = np.where(five_legal, five_rewards + value_table[five_after], -np.inf)
        return _chosen_chances(chances, values, five, five_values, source_of, fives)
    best = np.zeros((len(source_of), len(mask), len(targets)))
    gathered = np.empty_like(best)
    for column in range(rules.num_boxes):
        if not is_open[box == column].any():
            continue  # filled in every state of the piece: nothing to take
        np.take(chances, source_of[:, column], axis=0, out=gathered)  # -1: a five, set below
        np.maximum(best, gathered, out=best)
    best[fives] = five.max(axis=0)
    return best, None


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


def turn_start_chances(
    final: np.ndarray, final_values: np.ndarray | None = None, kernel: ctypes.CDLL | None = None
) -> np.ndarray:
    """[n, width] chances at the turn's start from the final rolls' [252, n, width] (in
    `WIDGET_ORDER[5]`): the solver's widget on [252, n x width] (the C kernel's, the same bits,
    given `kernel`), or with `final_values` [252, n] the chances of the keeps of highest
    expected score."""
    rolls, n, width = final.shape
    if final_values is None:
        columns = final.reshape(rolls, n * width)
        if kernel is not None:
            return native.turn_start_value(columns, kernel).reshape(n, width)
        return turn_start_value(columns).reshape(n, width)
    in_rolls = WIDGET_POSITION[NUM_DICE]  # back to `ROLLS` order, the generic widget's
    value, chance = final_values[in_rolls], final[in_rolls]
    middle, middle_chance = best_keep_choice(keep_values(value), keep_values(chance))
    _, start_chance = best_keep_choice(keep_values(middle), keep_values(middle_chance))
    return expected_over_rolls(start_chance)


# What the forked workers read (set before they fork): (flat table, layout, rules, value table,
# the C kernel or None); a library loaded before the fork is mapped in the workers too.
_CONTEXT: tuple[np.ndarray, TargetLayout, Rules, np.ndarray | None, Any] | None = None
_LOCK = threading.Lock()


def _solve_piece(piece: tuple[np.ndarray, np.ndarray, np.ndarray, int, int]) -> None:
    """Solve the chances of a piece (states of one layer, targets start .. stop - 1) into the
    flat table: a layer's targets are independent, as its states are."""
    assert _CONTEXT is not None
    flat, layout, rules, value_table, kernel = _CONTEXT
    *states, start, stop = piece
    states = tuple(states)
    targets = np.arange(start, stop)
    final, final_values = final_roll_chances(states, targets, flat, layout, rules, value_table)
    chances = turn_start_chances(final, final_values, kernel)
    wanted = targets < layout.lengths[states][:, None]
    flat[(layout.rows[states][:, None] + targets)[wanted]] = chances[wanted]


def _pieces(rules: Rules, layout: TargetLayout, filled: int) -> Iterator[tuple]:
    """The solved states of a layer and their targets in pieces of about `PIECE_ELEMENTS`."""
    for chunk in layer_chunks(rules, filled)[1]:
        states = chunk_indices(chunk)
        most = int(layout.lengths[states].max())
        block = min(most, PIECE_TARGETS)
        count = max(1, PIECE_ELEMENTS // block)
        for first in range(0, len(states[0]), count):
            part = tuple(column[first : first + count] for column in states)
            width = int(layout.lengths[part].max())
            for start in range(0, width, block):
                yield (*part, start, min(start + block, width))


def _check_policy(policy: str) -> None:
    """One line for a policy that is not one of `POLICIES`."""
    if policy not in POLICIES:
        raise UserError(f"unknown target policy {policy!r}; choose one of: {', '.join(POLICIES)}")


def solve_target_table(
    rules: str | Rules,
    policy: str = "target",
    value_table: np.ndarray | None = None,
    down_to_filled: int = 0,
    workers: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
) -> np.ndarray:
    """The flat float64 table of chances (`target_layout(rules)` says where each state's row is).

    `policy` "target" maximises each chance; "expected" follows the value-maximising player and
    needs the `value_table` (solved at least down to `down_to_filled`). States with fewer than
    `down_to_filled` boxes filled stay NaN (a partial solve, for tests). `workers` processes
    share the table as in `exact.solve_value_table` (default: one per CPU). The widget is the
    solver's C kernel (`solver.native`, built into or loaded from `cache_dir`), the same bits
    as the NumPy widget it falls back to, with a warning, where the kernel cannot be built.
    `progress` shows a bar of the pieces solved, with the time left (minutes for Yahtzee).
    """
    global _CONTEXT
    rules = get_rules(rules)
    _check_policy(policy)
    if (policy == "expected") != (value_table is not None):
        raise UserError('policy "expected" takes the value table, and only it does')
    workers = solver_workers() if workers is None else workers
    layout = target_layout(rules)
    kernel = None
    if policy == "target":  # the "expected" policy's keeps carry their chances: NumPy's
        try:
            kernel = native.load_kernel(None if cache_dir is None else str(cache_dir))
        except native.NativeError as error:
            warnings.warn(f"{error}; the target tables use NumPy's widget", RuntimeWarning, 2)
    with _LOCK:
        shared = mmap.mmap(-1, layout.size * np.dtype(np.float64).itemsize)
        flat = np.frombuffer(shared, np.float64)
        flat[...] = np.nan
        full = layout.rows[full_mask(rules)]
        flat[full[full >= 0]] = 1.0  # the full card: nothing more to come, surely reached
        _CONTEXT = (flat, layout, rules, value_table, kernel)
        pool = _worker_pool(workers)
        layers = range(rules.num_boxes - 1, down_to_filled - 1, -1)
        by_layer = [list(_pieces(rules, layout, filled)) for filled in layers]
        bar = _progress_bar(sum(map(len, by_layer)), rules, progress)
        try:
            for pieces in by_layer:
                if pool is None:
                    done = map(_solve_piece, pieces)
                else:
                    chunksize = max(1, len(pieces) // (8 * workers))
                    done = pool.imap_unordered(_solve_piece, pieces, chunksize=chunksize)
                for _ in done:  # a layer's pieces all solved before the next layer starts
                    bar.update()
        finally:
            bar.close()
            _CONTEXT = None
            if pool is not None:
                pool.terminate()
                pool.join()
    return flat


def _progress_bar(total: int, rules: Rules, shown: bool) -> Any:
    """A tqdm bar over the pieces of a target solve (one that shows nothing unless `shown`)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=f"target tables ({rules.name})", unit="piece", disable=not shown)


@dataclasses.dataclass(frozen=True)
class TargetResult:
    """A rule set's target tables: `chances(state)` is T_s(0 .. most to come)."""

    rules: Rules
    flat: np.ndarray
    layout: TargetLayout
    seconds: float
    from_cache: bool
    cache_path: pathlib.Path | None

    def chances(self, state: tuple[int, int, int]) -> np.ndarray:
        """T_s(d), d = 0 .. the most points still reachable from the state (mask, upper, flag)."""
        return state_chances(self.flat, self.layout, state)


def load_targets(path: pathlib.Path, rules: Rules) -> np.ndarray | None:
    """The cached flat table, or None if missing, damaged or not chances of this layout."""
    try:
        with np.load(path, allow_pickle=False) as data:
            flat = data["chances"]
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error):
        return None
    if flat.shape != (target_layout(rules).size,) or flat.dtype != np.float64:
        return None
    if not (np.all(np.isfinite(flat)) and flat.min() >= 0 and flat.max() <= 1 + _PROBABILITY_SLACK):
        return None
    return flat


def target_tables(
    rules: str | Rules,
    cache_dir: str | os.PathLike | None = None,
    force: bool = False,
    workers: int | None = None,
    policy: str = "target",
    progress: bool = False,
) -> TargetResult:
    """The target tables of `rules`, from the disk cache or solved (and cached) when missing.

    `policy` "expected" gives the value-maximising player's chances (its value table solved or
    loaded from the same cache): the optimal-solitaire agent's exact score distribution.
    `progress` shows the solve's progress and time left.
    """
    rules = get_rules(rules)
    _check_policy(policy)
    table = "targets" if policy == "target" else f"targets_{policy}"
    path = cache_file(rules, cache_dir, table=table)
    start = time.perf_counter()
    flat = None if force else load_targets(path, rules)
    from_cache = flat is not None
    if flat is None:
        values = None
        if policy == "expected":
            from yahtzee_jax.solver.exact import solve

            values = solve(rules, cache_dir=cache_dir).value_table
        flat = solve_target_table(
            rules, policy, values, workers=workers, cache_dir=path.parent, progress=progress
        )
        try:
            with replaced_whole(path, ".tmp.npz") as partial:  # npz: numpy's own name for it
                np.savez_compressed(partial, chances=flat)
        except OSError as error:
            raise UserError(f"cannot write the target-table cache {path}: {error}") from error
    return TargetResult(
        rules=rules,
        flat=flat,
        layout=target_layout(rules),
        seconds=time.perf_counter() - start,
        from_cache=from_cache,
        cache_path=path,
    )
