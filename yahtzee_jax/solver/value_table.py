"""Exact solution of a solitaire game of the Yahtzee family by backward induction.

A turn-start state is (filled-box mask, upper total capped at the bonus threshold, Yahtzee box
holds 50; `yahtzee_jax.solver.states`). Its value is the expected score still to come under
optimal play. States are solved a layer (number of filled boxes) at a time, from the full card
back to the empty one, in chunks of 256 states as NumPy float64 array programs with the states
along the last axis: the value of each final roll (`yahtzee_jax.solver.final_rolls`), then the
widget of `yahtzee_jax.solver.widget` (in one process, both in one C kernel built for the CPU,
`yahtzee_jax.solver.native`, or one XLA program, `yahtzee_jax.solver.compiled`). The on-device
agents value the final rolls with `final_roll_values`; the solver's hot loop
(`solver_final_roll_values`, `widget.turn_start_value`) gives the same numbers to the last bit
with the rolls grouped so that most of its work runs over prefixes and runs of rows. Only the
states whose value is not a copy of another's are solved (`solved_states`: 359,616 for official
Yahtzee); the cache stores just those, stored uncompressed (2.9 MB). Every table is sized by
the rule set's box table.
"""

from __future__ import annotations

import dataclasses
import hashlib
import mmap
import multiprocessing
import os
import pathlib
import signal
import sys
import threading
import time
import warnings
import zipfile
from typing import TYPE_CHECKING, Any

import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.files import (
    cached,
    default_cache_dir,
    kept_or_said,
    read_arrays,
    written_checked,
)
from yahtzee_jax.game.rules import OFFICIAL, Rules, get_rules
from yahtzee_jax.host import jax_computes_on_cpu, usable_cpus
from yahtzee_jax.solver.final_rolls import (  # noqa: F401 (re-exported: the solver's API)
    FinalRollPlan,
    category_values,
    final_roll_plan,
    final_roll_values,
    score_transition,
    solver_final_roll_values,
)
from yahtzee_jax.solver.native import NativeError, NativeSolve, load_kernel
from yahtzee_jax.solver.states import (  # noqa: F401 (re-exported: the solver's API)
    FILL_BLOCK,
    SOLVE_CHUNK,
    all_masks,
    chunk_indices,
    fill_copies,
    filled_count,
    full_mask,
    layer_chunks,
    layer_states,
    num_upper_totals,
    reachable_upper_totals,
    solved_states,
    table_shape,
)
from yahtzee_jax.solver.widget import turn_start_value
from yahtzee_jax.solver.widget_tables import num_masks, solver_score_tables

if TYPE_CHECKING:
    from yahtzee_jax.solver.compiled import CompiledSolve

CACHE_FORMAT = 2  # bump when the stored table changes meaning or layout


# What the worker processes read, set before they are forked: (value table, final-roll plan,
# five-of-a-kind options). The table lives in shared memory, so every worker sees the layers
# already solved and writes its own states' values where the parent reads them. One solve at a
# time per process: `_SOLVE_LOCK` makes concurrent callers wait.
_SOLVE_CONTEXT: tuple[np.ndarray, FinalRollPlan, list[np.ndarray]] | None = None
_SOLVE_LOCK = threading.Lock()


def _solve_chunk(chunk: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    """Value the turn-start states (mask, upper total, flag) of one chunk into the table."""
    assert _SOLVE_CONTEXT is not None
    value_chunk(*_SOLVE_CONTEXT, chunk)


def value_chunk(
    value_table: np.ndarray,
    plan: FinalRollPlan,
    options: list[np.ndarray],
    chunk: tuple[np.ndarray, np.ndarray, np.ndarray],
    discount: float = 1.0,
) -> None:
    """Value one chunk's turn-start states into `value_table` by the NumPy loop, the later
    layers already in it; `discount` < 1 at each of a turn's three decisions (a box's future
    once, the turn's two keeps before it: `solver.discounted`), 1 the game's own score."""
    mask, upper, flag = chunk_indices(chunk)
    yahtzee_options = yahtzee_options_of(options, mask, flag)
    future = _future_of(value_table, discount)
    final = solver_final_roll_values(mask, upper, flag, plan, yahtzee_options, future)
    values = turn_start_value(final)
    value_table[mask, upper, flag] = values if discount == 1.0 else discount**2 * values


def yahtzee_options_of(
    options: list[np.ndarray], mask: np.ndarray, flag: np.ndarray
) -> tuple[np.ndarray, ...]:
    """The five-of-a-kinds' (points, legal, bonus) against each card, batch-last."""
    points, legal, bonus = (part[mask, flag] for part in options)  # [n, 6, ...]
    return points.transpose(1, 2, 0), legal.transpose(1, 2, 0), bonus.T


def _future_of(value_table: np.ndarray, discount: float = 1.0) -> Any:
    """The `future` of `solver_final_roll_values`: a state's value from the table (times
    `discount` where it is not 1)."""

    def future(next_mask: np.ndarray, next_upper: np.ndarray, next_flag: np.ndarray) -> np.ndarray:
        values = value_table[next_mask, next_upper, next_flag]
        return values if discount == 1.0 else discount * values

    return future


def solver_workers() -> int:
    """Processes a forked solve would use: the CPUs this process may run on, 1 where it cannot
    fork (`solve_value_table` forks only when asked; `bench solve` times both)."""
    if not sys.platform.startswith("linux") or multiprocessing.current_process().daemon:
        return 1  # fork is Linux's safe default only; a daemonic worker may not have children
    return len(os.sched_getaffinity(0))


def _ignore_interrupts() -> None:
    """A worker's start: Ctrl-C is the parent's to handle (it ends the pool); a worker that took
    it too printed its traceback under the command's one line. SIGTERM, which the pool's end
    sends, ends a worker at once (the command's own handler, inherited, would raise in it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _worker_pool(workers: int) -> Any:
    """A pool of forked workers, or None for one process.

    Forked, not spawned: a spawned worker would import JAX again (a second or more each). The
    workers run only NumPy, never JAX, so JAX's warning about forking its threads does not apply.
    """
    if workers <= 1:
        return None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
        try:
            return multiprocessing.get_context("fork").Pool(workers, _ignore_interrupts)
        except OSError:  # no processes to be had (a limit on them): solve in this one
            return None


ENGINES = ("auto", "native", "xla")  # what values a one-process solve's states


def solve_value_table(
    rules: str | Rules,
    progress: bool = False,
    down_to_filled: int = 0,
    workers: int = 1,
    cache_dir: str | os.PathLike | None = None,
    engine: str = "auto",
) -> np.ndarray:
    """Backward induction: float64[masks, upper totals, 2] expected future score of every
    turn-start state ([8192, 64, 2] for Yahtzee).

    Indexed by [filled mask, capped upper total, flag]; unreachable upper totals are NaN, and so
    are the states with fewer than `down_to_filled` boxes filled (a partial solve, for tests).
    A layer (number of filled boxes) only reads the layers after it, so its states are solved in
    independent chunks of `SOLVE_CHUNK`. One process (the default) runs them with `engine`:
    "native", the C kernel of `solver.native`, one host thread a core; "xla", the XLA program of
    `solver.compiled`; "auto", the kernel where JAX computes on the CPU and a C compiler builds
    it, the XLA program otherwise (on an accelerator, or with a warning). Both are kept in
    `cache_dir` (`solver.programs`, `solver.native`; None: built in every solve), the kernel
    also in the environment where `make setup` built it; the score tables are NumPy's.
    More `workers` are forked processes sharing the table, each running the NumPy loop (forked
    workers cannot run XLA); processes, not threads, for its many small calls contend for the
    GIL. Every engine gives the same values to the last bit. The one process is the faster: on
    an idle 2-core Intel Xeon, a Yatzy solve took 0.84 s with the kernel, 1.62 s with the XLA
    program (its programs cached, `yahtzee-jax solve`'s one thread per program) and 5.89 s with
    two workers (`results/solver-speed/intel/native/`; docs/speed/solver.md).
    """
    if engine not in ENGINES:
        raise UserError(f"unknown solver engine {engine!r}; choose one of {', '.join(ENGINES)}")
    with _SOLVE_LOCK:
        return _solve_layers(get_rules(rules), progress, down_to_filled, workers, cache_dir, engine)


def _one_process_engine(
    rules: Rules, options: tuple, engine: str, cache_dir: str | os.PathLike | None
) -> NativeSolve | CompiledSolve:
    """What values a one-process solve's states: `solve_value_table`'s `engine`."""
    # The kernel's solve never imports JAX (`host.jax_computes_on_cpu` asks it only where an
    # accelerator may be present): the import alone is half a second of a whole Yatzy solve.
    if engine == "native" or (engine == "auto" and jax_computes_on_cpu()):
        try:
            kernel = load_kernel(None if cache_dir is None else str(cache_dir))
            return NativeSolve(rules, options, kernel, usable_cpus())
        except NativeError as error:
            if engine == "native":
                raise UserError(f"the native solver engine: {error}") from None
            warnings.warn(f"{error}; solving with the XLA program", RuntimeWarning, stacklevel=4)
    import jax

    from yahtzee_jax.solver.compiled import CompiledSolve

    with jax.enable_x64(True):  # the program is float64
        return CompiledSolve(rules, options, cache_dir)


def _solve_layers(
    rules: Rules,
    progress: bool,
    down_to_filled: int,
    workers: int,
    cache_dir: str | os.PathLike | None,
    engine: str,
) -> np.ndarray:
    global _SOLVE_CONTEXT
    base, *options = solver_score_tables(rules)
    shape = table_shape(rules)
    shared = mmap.mmap(-1, int(np.prod(shape)) * np.dtype(np.float64).itemsize)
    value_table = np.frombuffer(shared, np.float64).reshape(shape)
    value_table[...] = np.nan
    value_table[full_mask(rules)] = 0.0
    _SOLVE_CONTEXT = (value_table, final_roll_plan(base, rules), options)
    layers = range(rules.num_boxes - 1, down_to_filled - 1, -1)
    if progress:
        from tqdm import tqdm

        layers = tqdm(layers, desc=f"solving {rules.name}", unit="layer")
    pool = _worker_pool(workers)
    # A daemonic process was forked (a pool's worker): XLA's threads may not have come with it.
    program = None
    if pool is None and not multiprocessing.current_process().daemon:
        program = _one_process_engine(rules, tuple(options), engine, cache_dir)
    try:
        for filled in layers:
            if program is not None:
                layer_masks, states = layer_states(rules, filled)
                program.solve_layer(value_table, filled, states)
            else:
                layer_masks, chunks = layer_chunks(rules, filled)
                if pool is None:
                    for chunk in chunks:
                        _solve_chunk(chunk)
                else:
                    chunksize = max(1, len(chunks) // (4 * workers))
                    pool.map(_solve_chunk, chunks, chunksize=chunksize)
            fill_copies(value_table, rules, layer_masks)
    finally:
        _SOLVE_CONTEXT = None
        if pool is not None:
            pool.terminate()  # the workers are idle here, or the solve failed: no work is lost
            pool.join()
    # The table stays in the shared mapping, unmapped when the last array on it is freed (no
    # second copy); the workers are gone, so no other process can write to it.
    return value_table


@dataclasses.dataclass(frozen=True)
class SolveResult:
    """A solved rule variant: the value table and the optimal expected score of a game."""

    rules: Rules
    value_table: np.ndarray  # float64[masks, upper totals, 2]; see `solve_value_table`
    expected_score: float  # optimal expected final score of a whole game, bonuses included
    seconds: float  # time spent solving or loading
    from_cache: bool
    cache_path: pathlib.Path | None


def cache_file(
    rules: Rules, cache_dir: str | os.PathLike | None = None, table: str = "values"
) -> pathlib.Path:
    """Where a table of `rules` (`values`, or `moments` of `solver.moments`) is cached; the name
    encodes every field of the rules (a box table other than Yahtzee's by a digest of it)."""
    directory = pathlib.Path(cache_dir) if cache_dir is not None else default_cache_dir()
    key = f"{rules.name}-bonus{int(rules.yahtzee_bonus)}-joker_{rules.joker.value}"
    if _card(rules) != _card(OFFICIAL):  # Yahtzee's tables keep the names they always had
        key += f"-card_{hashlib.sha256(repr(_card(rules)).encode()).hexdigest()[:12]}"
    return directory / f"{table}-v{CACHE_FORMAT}-{key}.npz"


def _card(rules: Rules) -> tuple:
    """Every field of `rules` that is not its name, Yahtzee bonus or Joker (in `cache_file`)."""
    fields = dataclasses.asdict(rules)
    return tuple(value for name, value in fields.items() if name not in _NAMED_FIELDS)


_NAMED_FIELDS = ("name", "yahtzee_bonus", "joker")


def most_points(rules: Rules) -> float:
    """An upper bound on any score to come: every box at its maximum, the upper bonus, and a
    Yahtzee bonus in every turn where the game has them."""
    bonus = rules.yahtzee_bonus_points * rules.num_boxes if rules.yahtzee_bonus else 0
    return float(rules.max_total_without_bonuses + bonus)


def load_table(path: pathlib.Path, rules: Rules, most: float) -> np.ndarray | None:
    """The dense table from the cached values of the solved states, or None if unusable: not
    an archive of float64 values of the right count, or a value that is not finite or lies
    outside [0, most] (a well-formed file with NaN or 1e300 in it would be played from)."""
    states = solved_states(rules)
    found = read_arrays(path, ("values",))
    if found is None:
        return None  # missing or damaged: solve again
    (values,) = found
    if values.shape != (int(states.sum()),) or values.dtype != np.float64:
        return None
    if not (np.all(np.isfinite(values)) and values.min() >= 0.0 and values.max() <= most):
        return None  # out of range: not this solver's output, solve again
    table = np.full(states.shape, np.nan)
    table[states] = values
    fill_copies(table, rules)
    return table


def keep_archive(path: pathlib.Path, what: str, **arrays: np.ndarray) -> None:
    """Write `arrays` to the cache file `path` as a compressed `.npz`, whole, its checksum beside
    it (`written_checked`); a folder that takes no file is said in one line and the arrays go on
    unkept (`kept_or_said`), another failure (a full disk) is one UserError naming the file."""

    def write() -> None:
        try:
            with written_checked(path, ".tmp.npz") as partial:  # npz: numpy's own name for it
                np.savez_compressed(partial, **arrays)
        except OSError as error:
            raise UserError(f"cannot write the {what} cache {path}: {error}") from error

    kept_or_said(write, what, path)


def save_table(table: np.ndarray, rules: Rules, path: pathlib.Path) -> None:
    """Store the solved states only (359,616 with the +100), float64: about 2.9 MB.

    An `.npz` archive (what `np.load` reads) written a block of masks at a time, so that saving
    holds no copy of the values. Stored, not deflated: the values are dense float64 and deflate
    saves only a fifth of the bytes (Yatzy's 7.7 MB to 6.2), at 0.7-1.4 s of a 2-3 s solve
    (2-core AMD EPYC, 2026-11-27); a table deflated by an earlier version still loads.
    """
    count = int(solved_states(rules).sum())
    header = {"descr": np.dtype(np.float64).str, "fortran_order": False, "shape": (count,)}
    try:
        with (
            written_checked(path) as partial,
            zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED) as archive,
            archive.open("values.npy", "w", force_zip64=True) as member,
        ):
            np.lib.format.write_array_header_1_0(member, header)
            for start in range(0, num_masks(rules), FILL_BLOCK):
                block = all_masks(rules)[start : start + FILL_BLOCK]
                member.write(table[block][solved_states(rules, block)].tobytes())
    except OSError as error:
        raise UserError(f"cannot write the value-table cache {path}: {error}") from error


def solve(
    rules: str | Rules,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
    use_cache: bool = True,
    force: bool = False,
    workers: int = 1,
    engine: str = "auto",
) -> SolveResult:
    """Solve a rule variant exactly, or load its value table from the disk cache.

    `force` solves again and overwrites the cache; `use_cache=False` neither reads nor writes it
    (`files.cached`: a damaged table is solved again, two processes solve it once);
    `workers` is the processes of a solve and `engine` what values its states in one process
    (`solve_value_table`; default: one process, the C kernel on a CPU).
    """
    rules = get_rules(rules)
    path = cache_file(rules, cache_dir)
    start = time.perf_counter()
    solved = []

    def make() -> np.ndarray:
        program_cache = path.parent if use_cache else None
        table = solve_value_table(
            rules, progress, workers=workers, cache_dir=program_cache, engine=engine
        )
        solved.append(True)
        if use_cache:
            kept_or_said(lambda: save_table(table, rules, path), "value table", path)
        return table

    if use_cache:  # under the cache's lock: a second process waits and loads
        most = most_points(rules)
        table = cached(path, lambda file: load_table(file, rules, most), make, "value table", force)
    else:
        table = make()
    from_cache = not solved
    return SolveResult(
        rules=rules,
        value_table=table,
        expected_score=float(table[0, 0, 0]),
        seconds=time.perf_counter() - start,
        from_cache=from_cache,
        cache_path=path if use_cache else None,
    )


def optimal_expected_score(rules: str | Rules, cache_dir=None) -> float:
    """Optimal expected final score of a game under `rules` (cached solve)."""
    return solve(rules, cache_dir=cache_dir).expected_score
