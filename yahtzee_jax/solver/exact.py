"""Exact solution of solitaire Yahtzee by backward induction over turn-start states.

A turn-start state is (filled-box mask, upper total capped at 63, Yahtzee box holds 50). Its value
is the expected score still to come under optimal play. States are solved a layer (number of
filled boxes) at a time, from the full card back to the empty one; inside a layer, positions that
share their filled upper boxes (hence their reachable upper totals) are batched into one NumPy
float64 array program: score decision, then the widget of `yahtzee_jax.solver.widget`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import itertools
import os
import pathlib
import time
from types import ModuleType
from typing import Any

import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import (
    NUM_CATEGORIES,
    NUM_FACES,
    NUM_UPPER,
    UPPER_BONUS,
    UPPER_BONUS_THRESHOLD,
    YAHTZEE_BONUS,
    YAHTZEE_SCORE,
    Category,
    Rules,
    get_rules,
)
from yahtzee_jax.solver.tables import NUM_FLAGS, NUM_MASKS, NUM_ROLLS, score_tables
from yahtzee_jax.solver.widget import turn_start_value

Array = Any  # numpy.ndarray or jax.Array
NUM_UPPER_TOTALS = UPPER_BONUS_THRESHOLD + 1  # 0..63, where 63 means "63 or more"
FULL_MASK = NUM_MASKS - 1
CACHE_FORMAT = 1  # bump when the stored table changes meaning
_LOWER_BITS = tuple(range(NUM_UPPER, NUM_CATEGORIES))


def score_transition(
    category: Array, points: Array, upper_total: Array, flag: Array, xp: ModuleType = np
) -> tuple[Array, Array, Array]:
    """What writing `points` in `category` does to a turn-start state (arguments broadcast).

    Returns (reward without the +100 Yahtzee bonus, next capped upper total, next flag): the
    reward adds the 35-point upper bonus when the upper total reaches 63; the flag records
    whether the Yahtzee box holds 50.
    """
    is_upper = category < NUM_UPPER
    next_upper = xp.where(
        is_upper, xp.minimum(upper_total + points, UPPER_BONUS_THRESHOLD), upper_total
    )
    reaches_bonus = (upper_total < UPPER_BONUS_THRESHOLD) & (next_upper >= UPPER_BONUS_THRESHOLD)
    reward = points + UPPER_BONUS * reaches_bonus
    next_flag = xp.where(category == Category.YAHTZEE, points == YAHTZEE_SCORE, flag)
    return reward, next_upper, next_flag.astype(xp.int32)


def category_values(
    points: Array,
    legal: Array,
    bonus: Array,
    mask: Array,
    upper_total: Array,
    flag: Array,
    value_table: Array | None,
    future_weight: Array = 1.0,
    xp: ModuleType = np,
) -> Array:
    """Value of writing each roll in each box for one card: reward + weighted future value.

    `points`/`legal` are [252, 13] and `bonus` [252] from `score_options`; `value_table` is the
    solved [8192, 64, 2] table (None: no future, the greedy "this turn only" value). Illegal boxes
    are -inf. Returns [252, 13].
    """
    categories = xp.arange(NUM_CATEGORIES)
    reward, next_upper, next_flag = score_transition(categories, points, upper_total, flag, xp)
    value = reward + YAHTZEE_BONUS * bonus[:, None]
    if value_table is not None:
        next_mask = mask | (1 << categories)
        value = value + future_weight * value_table[next_mask, next_upper, next_flag]
    return xp.where(legal, value, -xp.inf)


def reachable_upper_totals(upper_mask: int) -> np.ndarray:
    """Capped upper totals that the filled upper boxes of `upper_mask` can sum to (sorted)."""
    totals = {0}
    for box in range(NUM_UPPER):
        if upper_mask >> box & 1:
            face = box + 1
            totals = {
                min(total + face * count, UPPER_BONUS_THRESHOLD)
                for total in totals
                for count in range(NUM_FACES)
            }
    return np.array(sorted(totals), dtype=np.int64)


def _group_final_values(
    value_table: np.ndarray,
    masks: np.ndarray,
    flags: np.ndarray,
    upper_totals: np.ndarray,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> np.ndarray:
    """Value of each final roll at the score decision for a batch of cards x upper totals.

    Batched form of `category_values`: within a box, the next state depends on the roll only
    through the points, so the future is looked up once per distinct point value and then
    gathered per roll. Returns float64[252, cards, upper totals].
    """
    all_points, all_legal, all_bonus = tables
    card_points = all_points[masks, flags].astype(np.int64)  # [cards, 252, 13]
    card_legal = all_legal[masks, flags]
    num_cards, num_totals = len(masks), len(upper_totals)
    best = np.full((NUM_ROLLS, num_cards, num_totals), -np.inf)
    for category in range(NUM_CATEGORIES):
        legal = card_legal[:, :, category]
        if not legal.any():
            continue
        points = card_points[:, :, category]
        distinct = np.unique(points[legal])
        slot = np.where(legal, np.searchsorted(distinct, points), len(distinct))  # [cards, 252]
        reward, next_upper, next_flag = score_transition(
            category, distinct[None, None, :], upper_totals[None, :, None], flags[:, None, None]
        )
        next_masks = (masks | (1 << category))[:, None, None]
        value = reward + value_table[next_masks, next_upper, next_flag]  # [cards, totals, points]
        illegal = np.full((num_cards, num_totals, 1), -np.inf)
        rows = np.concatenate([value, illegal], axis=2).transpose(0, 2, 1)
        rows = rows.reshape(num_cards * (len(distinct) + 1), num_totals)
        row_of_roll = np.arange(num_cards)[None, :] * (len(distinct) + 1) + slot.T
        np.maximum(best, rows[row_of_roll], out=best)
    best += YAHTZEE_BONUS * all_bonus[masks, flags].T[:, :, None]
    return best


def _layer_groups(filled_count: int, rules: Rules):
    """Batches of one layer: (masks, flags, upper totals) sharing their filled upper boxes."""
    for upper_mask in range(1 << NUM_UPPER):
        lower_count = filled_count - upper_mask.bit_count()
        if not 0 <= lower_count <= len(_LOWER_BITS):
            continue
        masks = np.array(
            [
                upper_mask | sum(1 << bit for bit in lower)
                for lower in itertools.combinations(_LOWER_BITS, lower_count)
            ],
            dtype=np.int64,
        )
        flags = np.zeros_like(masks)
        if rules.yahtzee_bonus:  # the 50 in the Yahtzee box only matters for the +100 bonus
            with_yahtzee = masks[(masks >> Category.YAHTZEE) & 1 == 1]
            masks = np.concatenate([masks, with_yahtzee])
            flags = np.concatenate([flags, np.ones_like(with_yahtzee)])
        yield masks, flags, reachable_upper_totals(upper_mask)


def solve_value_table(
    rules: str | Rules, progress: bool = False, down_to_filled: int = 0
) -> np.ndarray:
    """Backward induction: float64[8192, 64, 2] expected future score of every turn-start state.

    Indexed by [filled mask, capped upper total, flag]; unreachable upper totals are NaN, and so
    are the states with fewer than `down_to_filled` boxes filled (a partial solve, for tests).
    """
    rules = get_rules(rules)
    tables = score_tables(rules)
    value_table = np.full((NUM_MASKS, NUM_UPPER_TOTALS, NUM_FLAGS), np.nan)
    value_table[FULL_MASK] = 0.0
    layers = range(NUM_CATEGORIES - 1, down_to_filled - 1, -1)
    if progress:
        from tqdm import tqdm

        layers = tqdm(layers, desc=f"solving {rules.name}", unit="layer")

    def solve_group(masks: np.ndarray, flags: np.ndarray, upper_totals: np.ndarray) -> None:
        final = _group_final_values(value_table, masks, flags, upper_totals, tables)
        start = turn_start_value(final.reshape(NUM_ROLLS, -1))
        value_table[masks[:, None], upper_totals[None, :], flags[:, None]] = start.reshape(
            len(masks), len(upper_totals)
        )

    # Groups of a layer only read the layer after it: NumPy releases the GIL, so threads help.
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for filled_count in layers:
            list(pool.map(lambda group: solve_group(*group), _layer_groups(filled_count, rules)))
            # Where the flag cannot matter it was solved once (flag 0): copy it to flag 1.
            unsolved = np.isnan(value_table[:, :, 1]) & ~np.isnan(value_table[:, :, 0])
            value_table[:, :, 1][unsolved] = value_table[:, :, 0][unsolved]
    return value_table


@dataclasses.dataclass(frozen=True)
class SolveResult:
    """A solved rule variant: the value table and the optimal expected score of a game."""

    rules: Rules
    value_table: np.ndarray  # float64[8192, 64, 2]; see `solve_value_table`
    expected_score: float  # optimal expected final score of a whole game, bonuses included
    seconds: float  # time spent solving or loading
    from_cache: bool
    cache_path: pathlib.Path | None


def default_cache_dir() -> pathlib.Path:
    """`$YAHTZEE_JAX_CACHE`, else `~/.cache/yahtzee_jax`."""
    return pathlib.Path(os.environ.get("YAHTZEE_JAX_CACHE") or "~/.cache/yahtzee_jax").expanduser()


def cache_file(rules: Rules, cache_dir: str | os.PathLike | None = None) -> pathlib.Path:
    """Where the value table of `rules` is cached; the name encodes every field of the rules."""
    directory = pathlib.Path(cache_dir) if cache_dir is not None else default_cache_dir()
    key = f"{rules.name}-bonus{int(rules.yahtzee_bonus)}-joker_{rules.joker.value}"
    return directory / f"values-v{CACHE_FORMAT}-{key}.npy"


def _load(path: pathlib.Path) -> np.ndarray | None:
    try:
        table = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None  # missing or damaged: solve again
    expected_shape = (NUM_MASKS, NUM_UPPER_TOTALS, NUM_FLAGS)
    return table if table.shape == expected_shape and table.dtype == np.float64 else None


def _save(table: np.ndarray, path: pathlib.Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        with open(partial, "wb") as file:
            np.save(file, table, allow_pickle=False)
        os.replace(partial, path)  # atomic: a concurrent reader never sees half a file
    except OSError as error:
        raise UserError(f"cannot write the value-table cache {path}: {error}") from error


def solve(
    rules: str | Rules = "official",
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
    use_cache: bool = True,
    force: bool = False,
) -> SolveResult:
    """Solve a rule variant exactly, or load its value table from the disk cache.

    `force` solves again and overwrites the cache; `use_cache=False` neither reads nor writes it.
    """
    rules = get_rules(rules)
    path = cache_file(rules, cache_dir)
    start = time.perf_counter()
    table = _load(path) if use_cache and not force else None
    from_cache = table is not None
    if table is None:
        table = solve_value_table(rules, progress=progress)
        if use_cache:
            _save(table, path)
    return SolveResult(
        rules=rules,
        value_table=table,
        expected_score=float(table[0, 0, 0]),
        seconds=time.perf_counter() - start,
        from_cache=from_cache,
        cache_path=path if use_cache else None,
    )


def optimal_expected_score(rules: str | Rules = "official", cache_dir=None) -> float:
    """Optimal expected final score of a game under `rules` (cached solve)."""
    return solve(rules, cache_dir=cache_dir).expected_score
