"""Target-score tables: the best chance of scoring at least d more points from each turn start.

For a turn-start state s (`solver.states`) and d = 0 .. the most points still reachable from s,
T_s(d) is the largest probability, over every way of playing the rest of the game, that the points
still to come (boxes, upper bonus, Yahtzee bonuses) reach d: what a player who must beat a known
score maximises. It is the value solve's backward induction with a vector per state: writing a
roll in a box worth r points and leading to s' gives T_{s'}(d - r) (1 where d <= r, 0 past the
most s' can still score), a choice takes the maximum for each d on its own (the best play for a
target of 40 need not be the best for 60) and a roll the mean. A turn is `solver.target_turn`'s
(the solver's widget on [252, states x targets] arrays, or the C kernel's, the same bits); this
module solves the layers' pieces into one flat float64 table, laid out by `solver.target_layout`,
and caches it.

`policy="expected"` gives instead the chances of the value-maximising player (the box and keeps of
highest expected score, as `solver.moments` follows it): its chances sum over d >= 1 to the value
table's expected score to come, which is how the tests tie these tables to the value table.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import pathlib
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.files import cached, kept_or_said, remove_checked, written_checked
from yahtzee_jax.game.rules import Rules, get_rules
from yahtzee_jax.solver import native, target_keep
from yahtzee_jax.solver.states import chunk_indices, full_mask, layer_chunks
from yahtzee_jax.solver.target_layout import TargetLayout, state_chances, target_layout
from yahtzee_jax.solver.target_turn import piece_chances
from yahtzee_jax.solver.value_table import _worker_pool, cache_file, solver_workers

POLICIES = ("target", "expected")
# Chances per solver task (states x targets), so that a piece's [462, n x targets] widget arrays
# stay in the cache: 1,024 / 4,096 / 16,384 took 7.2 / 21.5 / 21.5 us a chance (official, 6 boxes
# filled, one process, 2026-11-27, a shared 2-core AMD EPYC). The targets d are split in blocks too.
PIECE_ELEMENTS = 1 << 10
# The C kernel's pieces, larger (its tiles stay in the cache whatever the piece): official's four
# last layers took 28.3 / 23.2 / 21.2 / 21.4 / 22.8 s with 1,024 / 4,096 / 16,384 / 32,768 / 65,536
# (one process, idle 2-core Intel Xeon, 2026-11-28).
KERNEL_PIECE_ELEMENTS = 1 << 14
PIECE_TARGETS = 256  # the most targets in one piece
# A solve keeps its finished layers (`keep_file`) at a layer's end once this long has passed since
# it last kept them, and when it is interrupted: a killed solve loses at most about this much.
# A keep of official's table (1.6 GB written and checksummed) took about 6 s, so a minute
# between them kept twice in a solve of about 140-160 s (experiments/target_keep_cost.py,
# 2-core AMD EPYC, 2026-12-02): 90 s keeps once.
KEEP_EVERY_S = 90.0
_PROBABILITY_SLACK = 1e-9  # a mean of ones may round a hair above 1
NPY_HEADER = 128  # bytes np.save writes before the array's (checked free space counts them)


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
    wanted = targets < layout.lengths[states][:, None]
    chances = piece_chances(states, targets, wanted, flat, layout, rules, kernel, value_table)
    flat[(layout.rows[states][:, None] + targets)[wanted]] = chances


def _pieces(rules: Rules, layout: TargetLayout, filled: int, elements: int) -> Iterator[tuple]:
    """The solved states of a layer and their targets in pieces of about `elements` chances."""
    for chunk in layer_chunks(rules, filled)[1]:
        states = chunk_indices(chunk)
        most = int(layout.lengths[states].max())
        block = min(most, PIECE_TARGETS)
        count = max(1, elements // block)
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
    keep_file: pathlib.Path | None = None,
) -> np.ndarray:
    """The flat float64 table of chances (`target_layout(rules)` says where each state's row is).

    `policy` "target" maximises each chance; "expected" follows the value-maximising player and
    needs the `value_table` (solved at least down to `down_to_filled`). States with fewer than
    `down_to_filled` boxes filled stay 0 (a partial solve, for tests). `workers` processes
    share the table as in `value_table.solve_value_table` (default: one per CPU). Each piece's turn
    (the final rolls' best boxes, the widget, the mean) is the solver's C kernel's
    (`native.target_turn_start`, built into or loaded from `cache_dir`), the same bits as the
    NumPy passes it falls back to, with a warning, where the kernel cannot be built.
    `progress` shows a bar of the pieces solved, with the time left (minutes for Yahtzee).
    `keep_file` keeps the finished layers while the solve runs (`target_keep`): a solve of the
    same table that finds it goes on from its last kept layer.
    """
    global _CONTEXT
    rules = get_rules(rules)
    _check_policy(policy)
    if (policy == "expected") != (value_table is not None):
        raise UserError('policy "expected" takes the value table, and only it does')
    workers = solver_workers() if workers is None else workers
    layout = target_layout(rules)
    kernel = None
    try:
        kernel = native.load_kernel(None if cache_dir is None else str(cache_dir))
    except native.NativeError as error:
        warnings.warn(f"{error}; the target tables are solved by NumPy", RuntimeWarning, 2)
    with _LOCK:
        shared = mmap.mmap(-1, layout.size * np.dtype(np.float64).itemsize)
        flat = np.frombuffer(shared, np.float64)
        if down_to_filled == 0:  # every row is written: NaN would show one that is not
            flat[...] = np.nan
        # A partial solve (tests) leaves the rows it does not reach 0, as the memory comes:
        # filling official's 1.6 GiB cost a test worker 1.3 to 6 s of system time a solve.
        full = layout.rows[full_mask(rules)]
        flat[full[full >= 0]] = 1.0  # the full card: nothing more to come, surely reached
        _CONTEXT = (flat, layout, rules, value_table, kernel)
        first = rules.num_boxes - 1
        if keep_file is not None:
            first = min(first, target_keep.resume(keep_file, flat, rules.num_boxes) - 1)
        pool = _worker_pool(workers)
        layers = range(first, down_to_filled - 1, -1)
        elements = PIECE_ELEMENTS if kernel is None else KERNEL_PIECE_ELEMENTS
        by_layer = [list(_pieces(rules, layout, filled, elements)) for filled in layers]
        bar = _progress_bar(sum(map(len, by_layer)), rules, progress)
        keeper = target_keep.Keeper(keep_file, flat, first + 1, KEEP_EVERY_S)
        try:
            for filled, pieces in zip(layers, by_layer, strict=True):
                if pool is None:
                    done = map(_solve_piece, pieces)
                else:
                    chunksize = max(1, len(pieces) // (8 * workers))
                    done = pool.imap_unordered(_solve_piece, pieces, chunksize=chunksize)
                for _ in done:  # a layer's pieces all solved before the next layer starts
                    bar.update()
                keeper.layer_done(filled, last=filled == down_to_filled)
        except KeyboardInterrupt:
            bar.close()
            if pool is not None:  # its workers stop before the finished layers are written
                pool.terminate()
            keeper.interrupted()
            raise
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
    """The cached flat table, mapped read-only from its file (the pages read as they are used),
    or None if missing, damaged or not chances of this layout."""
    try:
        flat = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, EOFError, ValueError):
        return None
    if flat.shape != (target_layout(rules).size,) or flat.dtype != np.float64:
        return None
    if not (np.all(np.isfinite(flat)) and flat.min() >= 0 and flat.max() <= 1 + _PROBABILITY_SLACK):
        return None
    return flat


def target_cache_file(
    rules: Rules, policy: str, cache_dir: str | os.PathLike | None = None
) -> pathlib.Path:
    """Where `target_tables` caches the table of `rules` and `policy` (beside the value table)."""
    _check_policy(policy)
    table = "targets" if policy == "target" else f"targets_{policy}"
    # An uncompressed array, mapped when loaded: official's 1.6 GiB in 0.45 s, where its
    # compressed archive (0.9 GiB) took 13.9 s to read (idle 2-core Intel Xeon, 2026-11-28).
    return cache_file(rules, cache_dir, table=table).with_suffix(".npy")


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
    `progress` shows the solve's progress and time left. A loaded table is read-only. The file
    carries a checksum, checked when loaded (`files.cached`: a damaged table is solved again,
    two processes solve a missing one once).
    """
    rules = get_rules(rules)
    path = target_cache_file(rules, policy, cache_dir)
    start = time.perf_counter()
    solved = []

    def make() -> np.ndarray:
        values = None
        if policy == "expected":
            from yahtzee_jax.solver.value_table import solve

            values = solve(rules, cache_dir=cache_dir).value_table
        if not progress:  # a command that needs the table waited minutes without a word
            print(
                f"solving the {'' if policy == 'target' else policy + ' '}target table of "
                f"{rules.name} (the first time only: "
                f"minutes for a 13-box game); kept in {path.parent}",
                file=sys.stderr,
            )
        keep = target_keep.keep_path(path)
        flat = solve_target_table(
            rules,
            policy,
            values,
            workers=workers,
            cache_dir=path.parent,
            progress=progress,
            keep_file=keep,
        )
        solved.append(True)

        def write() -> None:
            try:
                with written_checked(path, ".tmp.npy") as partial:  # npy: numpy adds none
                    np.save(partial, flat)
            except OSError as error:
                raise UserError(f"cannot write the target-table cache {path}: {error}") from error

        kept_or_said(write, "target table", path)
        remove_checked(keep)  # after the table is written: a failed write keeps the layers
        return flat

    size = target_layout(rules).size * np.dtype(np.float64).itemsize + NPY_HEADER
    flat = cached(path, lambda file: load_targets(file, rules), make, "target table", force, size)
    from_cache = not solved
    return TargetResult(
        rules=rules,
        flat=flat,
        layout=target_layout(rules),
        seconds=time.perf_counter() - start,
        from_cache=from_cache,
        cache_path=path,
    )
