"""The solver's per-state work as a C kernel (`native_kernel.c`), built for this machine.

The XLA chunk program (`solver.compiled`) streams each chunk's [462, n] widget arrays through
the second-level cache, pass after pass; the kernel takes eight states at a time through the
whole turn with their widget in the first-level cache, as dlangk/yatzy's solver does. It
computes the program's numbers bit for bit (the same sums in the same order, no fused
multiply-adds, maxima exact in any order), and the expectation over the first roll stays
NumPy's dot of each chunk, as in the NumPy loop: every engine fills the same table.

The system's C compiler builds it with `-march=native`, named by a digest of its sources, the
compiler, the flags and this CPU: `make setup` into the environment (`install_kernel`), else the
first solve into the folder of the solver's caches. Where that fails (no compiler),
`load_kernel` raises `NativeError` in one line and `value_table.solve_value_table` runs the XLA
program instead. The same library plays whole games (`native_play.c`, `solver.native_play`).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import itertools
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from yahtzee_jax.files import cached, remove_stale, written_checked
from yahtzee_jax.game.rules import NUM_DICE, NUM_FACES, Rules
from yahtzee_jax.host import host_description
from yahtzee_jax.solver.final_rolls import REMOVE_PADDED, final_roll_plan, plan_rows
from yahtzee_jax.solver.states import (
    SOLVE_CHUNK,
    chunk_expectations,
    num_upper_totals,
    table_shape,
    upper_cap,
)
from yahtzee_jax.solver.widget import _ADD_BY_FACE
from yahtzee_jax.solver.widget_tables import (
    KEEP_OFFSETS,
    NUM_FLAGS,
    NUM_ROLLS,
    ROLL_PROBABILITIES,
    WIDGET_POSITION,
    num_masks,
    solver_score_tables,
)

# The play (`native_play.c`) includes the solver's kernel (`native_kernel.c`): one library.
SOURCE = pathlib.Path(__file__).with_name("native_play.c")
SOURCES = (pathlib.Path(__file__).with_name("native_kernel.c"), SOURCE)
# No fused multiply-adds (`-ffp-contract=off`): they would round a product and a sum once
# where NumPy and XLA round twice. No fast-math: it would reorder the sums.
FLAGS = ("-O3", "-march=native", "-ffp-contract=off", "-std=gnu11", "-fPIC", "-shared")
TILE = 8  # the kernel's TILE: it values whole tiles
# States a kernel call values, their first rolls' values written to a buffer [chunks, 252,
# OUTPUT_STRIDE] that the dots read: 256 or 512 states (a 0.5 or 1 MB buffer) took 1.13-1.17 us
# a state in layers 6-8 of Yatzy, 1,024 1.32 (one thread, idle 2-core Intel Xeon, 2026-11-28).
RUN_STATES = 2 * SOLVE_CHUNK
# A buffer row 264 values (33 cache lines) long, where 256 took 1.49 s to 1.39 for the solve: a
# tile's 252 rows then fall in every set of the first-level cache, not two of them.
OUTPUT_STRIDE = SOLVE_CHUNK + TILE

_I32 = ctypes.c_int32
_POINTER = ctypes.c_void_p
_PLAN_NUMBERS = [
    "num_upper",
    "num_boxes",
    "yahtzee_box",
    "num_totals",
    "cap",
    "upper_bonus_points",
    "yahtzee_score",
    "yahtzee_bonus_points",
    "groups",
]
_PLAN_LISTS = [
    "group_starts",
    "group_rows",
    "face_starts",
    "face_rows",
    "lower_starts",
    "lower_rows",
    "lower_points",
    "group_of_roll",
    "five_of_roll",
    "add_by_face",
    "remove_starts",
    "remove_rows",
    "keep_offsets",
    "roll_order",
]


class _Plan(ctypes.Structure):
    """The kernel's `plan_t`: a rule set's constants, then its index lists."""

    _fields_ = [(name, _I32) for name in _PLAN_NUMBERS] + [(name, _POINTER) for name in _PLAN_LISTS]


# Where `make setup` builds the kernel (`install_kernel`), in the environment the package is
# installed in: a solve with a new, empty cache folder then compiles nothing (a whole Yatzy solve
# about 1 s, where building the kernel first adds about as much again).
INSTALLED_KERNELS = pathlib.Path(sys.prefix, "share", "yahtzee_jax")


class NativeError(RuntimeError):
    """The kernel could not be built or loaded here (no compiler, a failed build)."""


@functools.cache
def load_kernel(cache_dir: str | None, compiler: str = "cc") -> ctypes.CDLL:
    """The kernel built by `compiler` for this CPU: loaded from `cache_dir` (or from
    `INSTALLED_KERNELS`, where `make setup` built it), or built into `cache_dir` first (None:
    built for this process alone). Raises `NativeError`, its reason in one line."""
    path, name = kernel_name(compiler)
    in_cache = cache_dir is not None and (pathlib.Path(cache_dir) / name).exists()
    if cache_dir is not None and not in_cache and (INSTALLED_KERNELS / name).exists():
        cache_dir = str(INSTALLED_KERNELS)  # built for this CPU: no compiler run today
    if cache_dir is None:  # the file can go once it is loaded
        with tempfile.TemporaryDirectory() as folder:
            return _loaded(path, compiler, pathlib.Path(folder) / name)
    return _loaded(path, compiler, pathlib.Path(cache_dir) / name)


def kernel_name(compiler: str) -> tuple[str, str]:
    """The compiler's path and the kernel's file name: a digest of its source, the compiler's
    path and version, the flags and this CPU."""
    path = shutil.which(compiler)
    if path is None:
        raise NativeError(f"no C compiler {compiler!r} on the PATH")
    try:
        version = subprocess.run(
            [path, "--version"], capture_output=True, text=True, check=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError) as error:
        raise NativeError(f"{compiler} --version failed: {error}") from None
    what = (*(source.read_bytes() for source in SOURCES), path, version, FLAGS, host_description())
    return path, f"native-kernel-{hashlib.sha256(repr(what).encode()).hexdigest()[:32]}.so"


def _loaded(path: str, compiler: str, library: pathlib.Path) -> ctypes.CDLL:
    """The kernel at `library`; built there first by the compiler at `path` where it is missing,
    damaged (its checksum differs) or does not load, by one process while others wait
    (`files.cached`)."""

    def build() -> ctypes.CDLL:
        _build(path, compiler, library)
        try:
            return ctypes.CDLL(str(library))
        except OSError as error:
            raise NativeError(f"cannot load the solver kernel: {error}") from None

    try:
        kernel = cached(library, _opened, build, "solver kernel")
    except IsADirectoryError as error:  # `files.check_room`: fall back as a failed build does
        raise NativeError(str(error)) from None
    kernel.solve_run.restype = kernel.target_run.restype = kernel.play_run.restype = ctypes.c_int
    kernel.solve_run.argtypes = [ctypes.POINTER(_Plan)] + [ctypes.c_int64] * 3 + [_POINTER] * 8
    kernel.target_run.argtypes = (
        [ctypes.POINTER(_Plan), ctypes.c_int64, ctypes.c_int64, _POINTER, _POINTER, _I32, _I32]
        + [_POINTER] * 10
        + [ctypes.c_int64, _POINTER]
    )
    return kernel


def _opened(library: pathlib.Path) -> ctypes.CDLL | None:
    """The library at `library` loaded, or None where it does not load."""
    try:
        return ctypes.CDLL(str(library))
    except OSError:
        return None


def _build(path: str, compiler: str, library: pathlib.Path) -> None:
    """Compile the kernel into `library`, whole or not at all."""
    try:
        with written_checked(library, suffix=".so.tmp") as partial:
            command = [path, *FLAGS, "-o", str(partial), str(SOURCE)]
            subprocess.run(command, capture_output=True, text=True, check=True, timeout=300)
    except subprocess.CalledProcessError as error:
        first = (error.stderr.strip().splitlines() or ["no message"])[0]
        raise NativeError(f"{compiler} failed to build the solver kernel: {first}") from None
    except (OSError, subprocess.SubprocessError) as error:
        raise NativeError(f"{compiler} could not build the solver kernel: {error}") from None


class NativeSolve:
    """The kernel's solve of one rule set, a layer at a time (`solve_layer`), `threads` runs
    at once (the kernel holds no lock: ctypes lets go of the GIL while it runs)."""

    def __init__(
        self, rules: Rules, score_tables: tuple[np.ndarray, ...], kernel: ctypes.CDLL, threads: int
    ) -> None:
        self.rules, self.threads, self._kernel = rules, threads, kernel
        plan = final_roll_plan(solver_score_tables(rules)[0], rules)
        terms = plan_rows(plan)
        self._arrays: list[np.ndarray] = []  # what the plan's pointers point into
        self.plan = _Plan(
            rules.num_upper,
            rules.num_boxes,
            rules.yahtzee_box,
            num_upper_totals(rules),
            upper_cap(rules),
            rules.upper_bonus_points,
            rules.yahtzee_score,
            rules.yahtzee_bonus_points,
            terms.zero_rows.shape[1],
            *map(self._pointer, _compressed(terms.zero_rows)),
            *map(self._pointer, _compressed(terms.face_rows)),
            *map(self._pointer, _compressed(terms.lower_rows, terms.lower_points)),
            self._pointer(plan.group_of_roll),
            self._pointer(np.where(terms.is_five, terms.five_of_roll, -1)),
            *(array.ctypes.data for array in _widget_lists()),
        )
        shape = (num_masks(rules), NUM_FLAGS, NUM_FACES)
        kinds = (np.int8, np.bool_, np.bool_)
        expected = ((*shape, rules.num_boxes), (*shape, rules.num_boxes), shape)
        if [(part.shape, part.dtype) for part in score_tables] != list(
            zip(expected, kinds, strict=True)
        ):
            raise ValueError("score_tables: not the five-of-a-kinds' (points, legal, bonus)")
        self.options = [np.ascontiguousarray(part) for part in score_tables]
        self._buffers = threading.local()  # a run's output, one per thread, reused

    def _pointer(self, values: np.ndarray | list[int]) -> int:
        """The address of `values` as int32, kept alive as long as the plan."""
        array = np.ascontiguousarray(values, np.int32)
        self._arrays.append(array)
        return array.ctypes.data

    def solve_layer(self, value_table: np.ndarray, filled: int, states: list[np.ndarray]) -> None:
        """Value the solved states of layer `filled` (`states.layer_states`' columns) into the
        table, whose later layers are solved: runs of `RUN_STATES`, `threads` at once."""
        del filled  # the kernel reads the next states from the whole table
        # The kernel indexes the tables with the states unchecked: check them here.
        shape = table_shape(self.rules)
        if value_table.shape != shape or value_table.dtype != np.float64:
            raise ValueError(f"value_table: not a float64 {shape} table")
        for column, bound in zip(states, shape, strict=True):
            if len(column) and (np.min(column) < 0 or np.max(column) >= bound):
                raise ValueError(f"a state outside the table's {shape}")
        count = len(states[0])
        padded = [
            np.pad(column.astype(np.int32), (0, -count % TILE), mode="edge") for column in states
        ]
        values = np.empty(count)
        table = np.ascontiguousarray(value_table)

        def run(start: int) -> np.ndarray:
            size = min(RUN_STATES, len(padded[0]) - start)
            output = getattr(self._buffers, "output", None)
            if output is None:
                shape = (RUN_STATES // SOLVE_CHUNK, NUM_ROLLS, OUTPUT_STRIDE)
                output = self._buffers.output = np.empty(shape)
            pointers = [column[start:].ctypes.data for column in padded]
            status = self._kernel.solve_run(
                ctypes.byref(self.plan),
                size,
                SOLVE_CHUNK,
                OUTPUT_STRIDE,
                *pointers,
                table.ctypes.data,
                *(part.ctypes.data for part in self.options),
                output.ctypes.data,
            )
            if status:
                raise NativeError(f"the solver kernel refused the run (status {status})")
            # Each chunk's states alone in the dot, the padding left out.
            chunks = range(start, min(start + size, count), SOLVE_CHUNK)
            lengths = [min(SOLVE_CHUNK, count - first) for first in chunks]
            return chunk_expectations(output[: len(lengths)], lengths)

        def run_part(starts: range) -> None:
            for start in starts:
                part = run(start)
                values[start : start + len(part)] = part

        # Each thread a contiguous part of the runs: few hand-overs between threads.
        runs = range(0, count, RUN_STATES)
        bounds = [len(runs) * part // self.threads for part in range(self.threads + 1)]
        parts = [runs[low:high] for low, high in itertools.pairwise(bounds)]
        with ThreadPoolExecutor(max(1, self.threads - 1)) as pool:
            others = [pool.submit(run_part, part) for part in parts[1:]]
            run_part(parts[0])
            for other in others:
                other.result()
        value_table[tuple(states)] = values


def _compressed(*padded: np.ndarray) -> list[np.ndarray]:
    """Padded lists [longest, lists] (`final_rolls.plan_rows`: a short list repeats an entry) as
    compressed rows without the repeats: (starts [lists + 1], then each array's entries)."""
    lists = [
        list(dict.fromkeys(zip(*(part[:, i] for part in padded), strict=True)))
        for i in range(padded[0].shape[1])
    ]
    starts = np.cumsum([0] + [len(entries) for entries in lists])
    return [
        starts,
        *(
            np.array([entry[k] for entries in lists for entry in entries])
            for k in range(len(padded))
        ),
    ]


def _remove_lists() -> np.ndarray:
    """`final_rolls.REMOVE_PADDED` of every size side by side, [5, keeps of sizes 1..5]: each
    keep's one-die-smaller keeps (a short list repeats its last)."""
    return np.concatenate(
        [np.pad(rows, ((0, NUM_DICE - len(rows)), (0, 0)), mode="edge") for rows in REMOVE_PADDED],
        axis=1,
    )


@functools.cache
def _widget_lists() -> tuple[np.ndarray, ...]:
    """The plan's widget lists, the same for every rule set (kept alive here): each keep's six
    one-die-larger keeps (sizes four down to none, as the kernel reads them), each keep's
    one-die-smaller keeps (compressed), the keep sizes' offsets and the rolls' output order."""
    larger = np.concatenate([_ADD_BY_FACE[size].ravel() for size in range(4, -1, -1)])
    lists = (larger, *_compressed(_remove_lists()), KEEP_OFFSETS, WIDGET_POSITION[NUM_DICE])
    return tuple(np.ascontiguousarray(values, np.int32) for values in lists)


@functools.cache
def _widget_plan() -> _Plan:
    """A plan with only the widget's lists: what `target_run` reads."""
    widget = [array.ctypes.data for array in _widget_lists()]  # the plan's last lists
    rule_lists = [None] * (len(_PLAN_LISTS) - len(widget))
    return _Plan(*[0] * len(_PLAN_NUMBERS), *rule_lists, *widget)


def target_turn_start(
    candidates: tuple[np.ndarray, np.ndarray, np.ndarray],
    sources: np.ndarray,
    flat: np.ndarray,
    columns: tuple[np.ndarray, np.ndarray],
    kernel: ctypes.CDLL,
    values: np.ndarray | None = None,
    choose: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """The chances at the turn's start of `columns` (state of the n, target d), bit for bit
    `target_turn`'s `final_roll_chances` then `turn_start_chances`: each final roll's best
    candidate (`sources` [252, boxes] into the candidates, rolls in `WIDGET_ORDER[5]`), the
    widget, and the mean summed a roll at a time.

    `candidates` are int64 (first entry in `flat`, length, shift) [candidates, n] of the moves a
    roll can take: its chance of d is the row's entry d - shift (its first below 0, 0 past its
    end; a shift past every target for a filled box or an illegal move). Given the candidates'
    expected `values` [candidates, n] (-inf where not allowed), the rolls and keeps are those of
    highest value, the first on a tie, and carry their chances: the value-maximiser's. Given
    also `choose` (first entry in its flat, length [candidates, n]; its flat), a candidate's
    value is `values` (0 where allowed) plus its `choose` row's entry at d - shift, read as the
    chances are: the play that maximises one table's chances, carrying another's."""
    rows, lengths, shifts = (np.ascontiguousarray(part, np.int64) for part in candidates)
    count, n = rows.shape
    sources = np.ascontiguousarray(sources, np.int32)
    if sources.shape[0] != NUM_ROLLS or sources.min() < 0 or sources.max() >= count:
        raise ValueError(f"sources: [{NUM_ROLLS}, boxes] of candidates 0..{count - 1} expected")
    shapes = {part.shape for part in (lengths, shifts) + (() if values is None else (values,))}
    if shapes != {rows.shape}:
        raise ValueError("candidates: [candidates, n] arrays expected")
    holds_rows = (rows + lengths).max() <= len(flat)
    if flat.dtype != np.float64 or not flat.flags.c_contiguous or not holds_rows:
        raise ValueError("flat: a contiguous float64 table holding every candidate's row")
    if values is not None:
        values = np.ascontiguousarray(values, np.float64)
    choose_rows = choose_lengths = choose_flat = None
    if choose is not None:
        if values is None:
            raise ValueError("choose: given only with the candidates' values")
        choose_rows, choose_lengths = (np.ascontiguousarray(p, np.int64) for p in choose[:2])
        choose_flat = choose[2]
        if {choose_rows.shape, choose_lengths.shape} != {rows.shape}:
            raise ValueError("choose: [candidates, n] arrays expected")
        holds = (choose_rows + choose_lengths).max() <= len(choose_flat)
        if choose_flat.dtype != np.float64 or not choose_flat.flags.c_contiguous or not holds:
            raise ValueError("choose: a contiguous float64 table holding every candidate's row")
    state, target = (np.ascontiguousarray(part, np.int64) for part in columns)
    out = np.empty(len(state) + (-len(state) % TILE))
    status = kernel.target_run(
        ctypes.byref(_widget_plan()),
        n,
        len(state),
        state.ctypes.data,
        target.ctypes.data,
        sources.shape[1],
        count,
        sources.ctypes.data,
        rows.ctypes.data,
        lengths.ctypes.data,
        shifts.ctypes.data,
        None if values is None else values.ctypes.data,
        flat.ctypes.data,
        *(None if part is None else part.ctypes.data for part in (choose_rows, choose_lengths)),
        None if choose_flat is None else choose_flat.ctypes.data,
        ROLL_PROBABILITIES.ctypes.data,
        len(out),
        out.ctypes.data,
    )
    if status:
        raise ValueError(f"the solver kernel refused the target run (status {status})")
    return out[: len(state)]


def install_kernel() -> None:
    """Build the kernel for this CPU into `INSTALLED_KERNELS` (what `make setup` runs), or say
    in one line why not (the first solve then builds it, or runs the XLA program)."""
    try:
        INSTALLED_KERNELS.mkdir(parents=True, exist_ok=True)
        load_kernel(str(INSTALLED_KERNELS))
        library = INSTALLED_KERNELS / kernel_name("cc")[1]
        remove_stale(library, "native-kernel-*.so")  # earlier sources' kernels
        print(f"solver kernel built: {library}")
    except (NativeError, OSError) as error:
        print(f"solver kernel not built here ({error}); a solve builds it or runs XLA")
