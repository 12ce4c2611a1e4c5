"""Exact score distributions of the endgame under optimal play (for `solver.win_policy`).

For every reachable turn-start state with at most `open_boxes` boxes open, the distribution of
the score still to come, P(future = t) for t = 0 .. SCORE_BINS - 1, when the rest of the game is
played by the optimal (expected-score) policy: the solver's induction once more, carrying a
distribution through each choice the value-maximising player makes (a box's points shift the
next state's distribution; a keep averages the rolls' distributions). The normal approximation
of `win_seeker` is worst exactly here, where a box is often worth 0 or 40-50.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

from yahtzee_jax.files import cached, read_arrays
from yahtzee_jax.game.rules import Rules, get_rules
from yahtzee_jax.solver.moments import box_outcomes, roll_options
from yahtzee_jax.solver.states import filled_count, full_mask, table_shape
from yahtzee_jax.solver.value_table import cache_file, keep_archive, solve
from yahtzee_jax.solver.widget import best_keep_choice, expected_over_rolls, keep_values
from yahtzee_jax.solver.widget_tables import solver_score_tables

ENDGAME_OPEN = 3  # open boxes of the states with an exact distribution (47,198 official states)
SCORE_BINS = 256  # futures 0..255; the mass above (a run of +100 bonuses) goes to the last bin
CHUNK = 64  # states per chunk: [462, 64, 256] float32 arrays


@functools.lru_cache(maxsize=4)
def endgame_distributions(
    rules: str | Rules,
    open_boxes: int = ENDGAME_OPEN,
    cache_dir: str | os.PathLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(row of each state int32[masks, totals, 2], -1 outside the endgame; float32[rows,
    SCORE_BINS]).

    Row 0 is the full card (a certain 0). Cached on disk beside the value table (`files.cached`).
    """
    rules = get_rules(rules)
    path = cache_file(rules, cache_dir, table=f"endgame{open_boxes}")

    def make() -> tuple[np.ndarray, np.ndarray]:
        value_table = solve(rules, cache_dir).value_table
        rows, distributions = solve_endgame(rules, open_boxes, value_table)
        keep_archive(path, "endgame table", rows=rows, distributions=distributions)
        return rows, distributions

    return cached(path, lambda file: load_endgame(file, rules), make, "endgame table")


def load_endgame(path: os.PathLike, rules: Rules) -> tuple[np.ndarray, np.ndarray] | None:
    """The cached (rows, distributions), or None if missing or not this solver's output: rows
    int32 of the table's shape in [-1, len(distributions)), distributions float32 [n, SCORE_BINS]
    of finite chances in [0, 1] up to float32's rounding (a negative row would index from the
    end, silently)."""
    found = read_arrays(path, ("rows", "distributions"))
    if found is None:
        return None  # missing or damaged: solve again
    rows, distributions = found
    if rows.dtype != np.int32 or rows.shape != table_shape(rules) or distributions.ndim != 2:
        return None
    if distributions.dtype != np.float32 or distributions.shape[1] != SCORE_BINS:
        return None
    if rows.size == 0 or rows.min() < -1 or rows.max() >= len(distributions):
        return None
    # float32 sums round a chance a hair below 0 (official's table holds -1.0e-7) or above 1.
    finite = np.all(np.isfinite(distributions))
    if not (finite and distributions.min() >= -1e-5 and distributions.max() <= 1.0 + 1e-5):
        return None
    return rows, distributions


def solve_endgame(
    rules: Rules, open_boxes: int, value_table: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """`endgame_distributions` computed: a layer of filled boxes at a time from the full card
    back, in chunks of `CHUNK` states (under a minute for 2 open boxes on one CPU core)."""
    score_tables = solver_score_tables(rules)
    rows = np.full(value_table.shape, -1, np.int32)
    rows[full_mask(rules)] = 0
    layers = [np.zeros((1, SCORE_BINS), np.float32)]
    layers[0][0, 0] = 1.0
    count = 1
    boxes = rules.num_boxes
    for filled in range(boxes - 1, boxes - open_boxes - 1, -1):
        layer_masks = np.flatnonzero(filled == filled_count(rules))
        row, upper, flag = np.nonzero(~np.isnan(value_table[layer_masks]))
        mask = layer_masks[row]
        rows[mask, upper, flag] = count + np.arange(len(mask))
        distributions = np.concatenate(layers)
        layer = np.empty((len(mask), SCORE_BINS), np.float32)
        for start in range(0, len(mask), CHUNK):
            part = slice(start, start + CHUNK)
            layer[part] = _chunk_distributions(
                mask[part],
                upper[part],
                flag[part],
                value_table,
                rows,
                distributions,
                score_tables,
                rules,
            )
        layers.append(layer)
        count += len(mask)
    return rows, np.concatenate(layers)


def _chunk_distributions(
    mask: np.ndarray,
    upper: np.ndarray,
    flag: np.ndarray,
    value_table: np.ndarray,
    rows: np.ndarray,
    distributions: np.ndarray,
    score_tables: tuple[np.ndarray, ...],
    rules: Rules,
) -> np.ndarray:
    """Future-score distributions [n, SCORE_BINS] of the turn-start states of one chunk."""
    points, legal, bonus = roll_options(mask, flag, score_tables)  # [252, boxes, n], [252, n]
    # Each roll and box: the reward, and the next state's value and distribution row.
    tables = (value_table, rows)
    reward, future, next_rows = box_outcomes(
        points, legal, bonus, mask, upper, flag, tables, np, rules
    )
    value = np.where(legal, reward + future, -np.inf)
    best = np.argmax(value, axis=1)[:, None]  # the optimal player's box for each roll

    def chosen(array: np.ndarray) -> np.ndarray:
        return np.take_along_axis(array, best, axis=1)[:, 0]  # [252, n]

    points_won = chosen(reward)
    next_row = chosen(next_rows).astype(np.int64)  # a legal box's row: exact in float64
    # The final roll's distribution: the next state's, shifted by the points won.
    bins = np.arange(SCORE_BINS)
    source = bins[None, None, :] - points_won[:, :, None]  # [252, n, bins]
    final = np.where(
        source >= 0, distributions[next_row[:, :, None], np.maximum(source, 0)], 0.0
    ).astype(np.float32)
    final[:, :, -1] += 1.0 - final.sum(axis=2)  # the mass shifted past the last bin
    final_value = value.max(axis=1)
    last_keep, last_keep_distribution = keep_values(final_value), keep_values(final)
    middle, middle_distribution = best_keep_choice(last_keep, last_keep_distribution)
    first_keep = keep_values(middle)
    _, start_distribution = best_keep_choice(first_keep, keep_values(middle_distribution))
    return expected_over_rolls(start_distribution.astype(np.float64)).astype(np.float32)


def distribution_mean(distribution: Any) -> Any:
    """Mean score of distributions over the bins (the last axis)."""
    return distribution @ np.arange(SCORE_BINS, dtype=np.float32)
