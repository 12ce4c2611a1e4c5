"""The solver's hot loop compiled by XLA: a chunk's futures, final rolls and widget as one program.

`final_rolls.box_futures`, `final_rolls.solver_final_roll_values` and `widget.turn_start_value`
run as ~400 NumPy calls a chunk, each a pass over [rows, n] float64 through memory. The same
lookups, sums and maxima written in jax.numpy and compiled once per rule set fuse the gathers
into the adds and maxima that read them. Every sum is the NumPy loop's, in the same order, and
a maximum is exact in any order, so the values are the same to the last bit: XLA does not
reassociate float sums (no fast-math on CPU), and the expectation over the first roll stays
NumPy's dot.

Forked workers cannot run XLA (its thread pools live in the parent), so only a one-process
solve uses this; the workers keep the NumPy loop.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.game.rules import NUM_DICE, NUM_FACES, Rules
from yahtzee_jax.host import is_one_thread_per_program, settle_one_thread_per_program
from yahtzee_jax.parallel import host_threads, ordered_map
from yahtzee_jax.solver.final_rolls import (
    REMOVE_PADDED,
    BoxFutures,
    FinalRollPlan,
    PlanRows,
    box_futures,
    final_roll_plan,
    five_of_a_kind_values,
    plan_rows,
)
from yahtzee_jax.solver.programs import load_or_compile
from yahtzee_jax.solver.states import SOLVE_CHUNK, chunk_expectations, filled_count, table_shape
from yahtzee_jax.solver.widget import _ADD_BY_FACE
from yahtzee_jax.solver.widget_tables import (
    KEEP_OFFSETS,
    ROLL_PROBABILITIES,
    WIDGET_POSITION,
    solver_score_tables,
)


def _final_values(
    futures: BoxFutures,
    yahtzee_options: tuple[jax.Array, ...],
    plan: FinalRollPlan,
    terms: PlanRows,
) -> jax.Array:
    """`solver_final_roll_values` after its `box_futures`: [252, n] in `WIDGET_ORDER[5]`.

    The maxima of the NumPy loop over the same values (a maximum is exact in any order), each
    over gathered rows: a group's best zero, then a roll's group, present faces and the lower
    boxes it scores in, each list padded to the longest so that a term is one pass over all the
    rolls. The NumPy loop's runs of rows written as masks over all of them, and the
    five-of-a-kinds scattered in, took 1.3x the time (1.58 against 1.21 us a state, one core).
    """
    rules = plan.rules
    n = futures.fifty_future.shape[-1]
    by_count = futures.upper_reward + futures.upper_future  # [face, count of it, card]
    # A 0 in an absent face's upper box or a lower box is worth that box's future.
    zeros = jnp.concatenate([by_count[:, 0], futures.lower_future, jnp.full((1, n), -jnp.inf)])
    group_best = zeros[terms.zero_rows[0]]
    for rows in terms.zero_rows[1:]:
        group_best = jnp.maximum(group_best, zeros[rows])
    best = group_best[plan.group_of_roll]
    face_values = by_count.reshape(-1, n)
    for rows in terms.face_rows:
        best = jnp.maximum(best, face_values[rows])
    for rows, points in zip(terms.lower_rows, terms.lower_points, strict=True):
        best = jnp.maximum(best, points[:, None] + futures.lower_future[rows])
    five = five_of_a_kind_values(futures, yahtzee_options, jnp, rules)
    return jnp.where(terms.is_five[:, None], five[terms.five_of_roll], best)


def _keep_layers(roll_values: jax.Array, six: jax.Array) -> list[jax.Array]:
    """`widget._keep_layers_inplace`: each keep the mean of its six one-die-larger keeps."""
    layers = [roll_values]
    for size in range(NUM_DICE - 1, -1, -1):
        larger, by_face = layers[0], _ADD_BY_FACE[size]
        total = larger[by_face[0]]
        for face in range(1, NUM_FACES):
            total = total + larger[by_face[face]]
        layers.insert(0, total / six)
    return layers


def _best_keep(layers: list[jax.Array]) -> jax.Array:
    """`widget._best_keep_inplace`: each keep the best of itself and its sub-keeps."""
    # Each smaller size is written into one buffer and read back from it: XLA fuses an array
    # into every pass that reads it (recomputing each row once per sub-keep that reads it, five
    # times over at the rolls) but not an update of a buffer in place. The rolls' best, read by
    # no other size, is the pass's output.
    best = jnp.zeros((int(KEEP_OFFSETS[NUM_DICE]), layers[0].shape[-1]), layers[0].dtype)
    best = jax.lax.dynamic_update_slice(best, layers[0], (0, 0))
    for size in range(1, NUM_DICE + 1):
        here = layers[size]
        smaller = best[KEEP_OFFSETS[size - 1] : KEEP_OFFSETS[size]]
        for rows in REMOVE_PADDED[size - 1]:
            here = jnp.maximum(here, smaller[rows])
        if size < NUM_DICE:
            best = jax.lax.dynamic_update_slice(best, here, (int(KEEP_OFFSETS[size]), 0))
    return here


# XLA's older loop emitters compile the program in 0.6 CPU-s where the fusion emitters take 0.9,
# and run it as fast. 512-bit vectors and maxima without NaN checks (the program's values hold
# none: a filled box's -inf is masked in by `box_futures`, and a maximum of numbers is exact)
# take a chunk from 2.27 to 2.02 and 1.70 us a state, both to 1.52 (one core of a 2-core AMD
# EPYC with AVX-512, 2026-11-27). LLVM's full optimisation (XLA's default level, 3) is asked for
# whatever XLA_FLAGS says: the tests' fast-compile level 0 (`tests/conftest.py`) ran an official
# solve in 6.8 s where it takes 1.4 (2-core Intel Xeon, 2026-11-28), and the program is compiled
# once a rule set and then loaded from the cache; the tables are the same to the last bit. An XLA
# without an option refuses it: the program is compiled with its defaults then
# (`_compiled(rules, options=False)`).
_COMPILE_OPTIONS = {
    "xla_cpu_use_fusion_emitters": False,
    "xla_cpu_prefer_vector_width": 512,
    "xla_cpu_enable_fast_min_max": True,
    "xla_backend_optimization_level": 3,
}
_OPTIONS_REFUSED: set[Rules] = set()


@functools.cache
def _compiled(rules: Rules, options: bool = True, expectation: bool = False) -> Callable:
    """The chunk program of a rule set, jitted (traced once per chunk shape): [chunk, roll,
    state] first-roll values, or with `expectation` their mean over the first roll, [chunk,
    state] (the accelerators' program: see `ACCELERATOR_RUN_CHUNKS`)."""
    plan = final_roll_plan(solver_score_tables(rules)[0], rules)
    terms = plan_rows(plan)

    def rolls_after_keeps(
        chunk: tuple[jax.Array, ...],
        next_values: jax.Array,
        rows: jax.Array,
        score_tables: tuple[jax.Array, ...],
        six: jax.Array,
    ) -> jax.Array:
        mask, upper, flag = chunk

        def future(next_mask: jax.Array, next_upper: jax.Array, next_flag: jax.Array):
            return next_values[rows[next_mask], next_upper, next_flag]

        futures = box_futures(mask, upper, flag, future, jnp, rules)
        points, legal, bonus = (part[mask, flag] for part in score_tables)  # [n, 6, ...]
        # int64 points: int8 would wrap at 50 + the 100 bonus inside the sums.
        yahtzee_options = (
            points.transpose(1, 2, 0).astype(jnp.int64),
            legal.transpose(1, 2, 0),
            bonus.T,
        )
        final = _final_values(futures, yahtzee_options, plan, terms)
        # The two re-rolls are one loop of two passes: XLA compiles the pass once.
        best_first = jax.lax.fori_loop(
            0, 2, lambda _, rolls: _best_keep(_keep_layers(rolls, six)), final
        )
        rolls = best_first[WIDGET_POSITION[NUM_DICE]]  # back to `ROLLS` order for the dot
        if expectation:
            probabilities = jnp.asarray(ROLL_PROBABILITIES)
            values = jnp.einsum("r,rs->s", probabilities, rolls, precision="highest")
            return values.reshape(-1, SOLVE_CHUNK)
        # [chunk, roll, state]: each chunk's rolls contiguous, as the dot reads them.
        return rolls.reshape(len(rolls), -1, SOLVE_CHUNK).transpose(1, 0, 2)

    return jax.jit(rolls_after_keeps, compiler_options=_COMPILE_OPTIONS if options else None)


# Chunks of `SOLVE_CHUNK` states a run of the program takes: a run has a fixed cost (its ~25
# passes started, the Python around it: ~30 us), and a larger one leaves the cache. A one-process
# Yatzy solve with 1 / 2 / 4 / 8 took 3.16 / 3.03 / 2.95 / 3.35 CPU-s (medians of 4 alternated,
# a 2-core AMD EPYC shared with 8 runnable processes); every size gives the same values.
RUN_CHUNKS = 4
# Where each program runs on its caller's thread alone (`host.one_thread_per_program`, what
# `yahtzee-jax solve` asks for), two host threads each run their own: there a run of 512
# states was the fastest (a warm Yatzy solve 1.21-1.31 s against 1.59-1.78 with 1,024; medians
# of 5, alternated, idle 2-core AMD EPYC, 2026-11-28).
ONE_THREAD_RUN_CHUNKS = 2
# On an accelerator a run's fixed cost is a launch of each pass and two transfers, which 1,024
# states do not repay: a Yatzy solve took 4.38 s in 3,755 runs on an H200 (results/gpu-h200).
# There a run takes 32,768 states (a Yatzy solve in about 50 runs, a padded layer's run at most
# 32,768 states of work) and the expectation over the first roll is taken in the program, so
# that only the values come back. Those values are the CPU's to round-off, not bit for bit (its
# dot is NumPy's BLAS, a chunk at a time): within 1e-11 in tests/test_solver_compiled.py.
ACCELERATOR_RUN_CHUNKS = 128


def _rows_in_layer(rules: Rules) -> np.ndarray:
    """int32[masks]: each mask's place among the masks with as many boxes filled, in order."""
    counts = filled_count(rules)
    rows = np.empty(len(counts), np.int32)
    for filled in range(rules.num_boxes + 1):
        in_layer = counts == filled
        rows[in_layer] = np.arange(np.count_nonzero(in_layer))
    return rows


class CompiledSolve:
    """The chunk program of one solve, with device copies of what it reads: the score tables,
    and the values of the layer after the one being solved (every next state is in it).

    Create and use it under `jax.enable_x64(True)`: the program is float64 and int64.
    `cache_dir` keeps the compiled program between solves (`_load_or_compile`). `accelerator`
    (default: JAX's backend is not the CPU) takes the accelerators' large runs that end in the
    expectation (`ACCELERATOR_RUN_CHUNKS`). `threads` runs of a layer go at once (default:
    `parallel.host_threads`, one per CPU on a CPU).
    """

    def __init__(
        self,
        rules: Rules,
        score_tables: tuple[np.ndarray, ...],
        cache_dir: str | os.PathLike | None = None,
        accelerator: bool | None = None,
        threads: int | None = None,
    ) -> None:
        self.rules = rules
        settle_one_thread_per_program()  # a solve's wish, before XLA's CPU client starts
        if accelerator is None:
            accelerator = jax.default_backend() != "cpu"
        self._expectation = accelerator
        one_thread = is_one_thread_per_program()
        if accelerator:
            self._run_chunks = ACCELERATOR_RUN_CHUNKS
        else:
            self._run_chunks = ONE_THREAD_RUN_CHUNKS if one_thread else RUN_CHUNKS
        self.threads = threads or (1 if accelerator else host_threads())
        self._rows = jax.device_put(_rows_in_layer(rules))
        self._score_tables = tuple(jax.device_put(part) for part in score_tables)
        # Every layer's values in one shape, so that one program serves them all.
        next_shape = (int(np.bincount(filled_count(rules)).max()), *table_shape(rules)[1:])
        self._next_shape = next_shape
        self._next_values: jax.Array | None = None
        chunk = (jax.ShapeDtypeStruct((self._run_chunks * SOLVE_CHUNK,), np.int32),) * 3
        shapes = self._arguments(chunk, jax.ShapeDtypeStruct(next_shape, np.float64))
        # A program compiled for one thread has no pass split into tasks: it is cached apart.
        compile_with = functools.partial(
            _load_or_compile,
            rules,
            shapes=shapes,
            cache_dir=cache_dir,
            expectation=accelerator,
            one_thread=one_thread,
        )
        try:
            self._program = compile_with(options=rules not in _OPTIONS_REFUSED)
        except jax.errors.JaxRuntimeError:
            if rules in _OPTIONS_REFUSED:
                raise
            _OPTIONS_REFUSED.add(rules)
            self._program = compile_with(options=False)

    def _arguments(self, chunk: tuple, next_values: Any) -> tuple:
        # Six passed in, not a constant: a division by a constant may be compiled as a product
        # by its reciprocal, which rounds differently.
        return (chunk, next_values, self._rows, self._score_tables, np.float64(NUM_FACES))

    def solve_layer(self, value_table: np.ndarray, filled: int, states: list[np.ndarray]) -> None:
        """Value the solved states of layer `filled` (`states.layer_states`' columns) into the
        table, whose later layers are solved: `RUN_CHUNKS` chunks a run of the program
        (`ONE_THREAD_RUN_CHUNKS` where each program runs on its caller alone, on an accelerator
        `ACCELERATOR_RUN_CHUNKS`), `threads` runs at once.

        A layer's runs read only the next layer, so they may go in any order and at once; each
        run's values are the same bits on any thread, and the table is written here, in order.
        Two threads took a warm Yatzy solve from 1.96 to 1.50 s (medians of 5 alternated, an idle
        2-core AMD EPYC, 2026-11-28): XLA splits a run's passes between the cores only in part,
        and the Python around a run (its indices, the dot) overlaps another run's program. With
        one thread per program (`host.one_thread_per_program`) nothing is split and each
        host thread keeps its core: 1.21-1.31 s.
        """
        with jax.enable_x64(True):  # the layer's next values go to the device as float64
            self.start_layer(value_table, filled)
        size = self._run_chunks * SOLVE_CHUNK
        # The layer's states padded to whole runs with its last one (valued, then left out): a
        # run's arguments are slices, so the Python around a run (which holds the GIL while the
        # other thread's run goes on) is a few calls. A run's chunks are the layer's own.
        padded = [
            np.pad(column.astype(np.int32), (0, -len(column) % size), mode="edge")
            for column in states
        ]
        values = np.empty(len(states[0]))
        chunk_starts = SOLVE_CHUNK * np.arange(self._run_chunks)

        def run_values(start: int) -> np.ndarray:
            run = tuple(column[start : start + size] for column in padded)
            lengths = np.clip(len(values) - start - chunk_starts, 0, SOLVE_CHUNK)
            with jax.enable_x64(True):  # a context of the calling thread only
                return self._run(run, lengths)

        starts = range(0, len(values), size)
        for start, run in zip(starts, ordered_map(run_values, starts, self.threads), strict=True):
            values[start : start + len(run)] = run
        value_table[tuple(states)] = values

    def start_layer(self, value_table: np.ndarray, filled: int) -> None:
        """Copy the values of the layer after `filled` (already solved) to the device."""
        masks = np.flatnonzero(filled_count(self.rules) == filled + 1)
        values = np.zeros(self._next_shape)  # the padding is never read
        values[: len(masks)] = value_table[masks]
        self._next_values = jax.device_put(values)

    def turn_start_values(self, chunks: list[tuple[np.ndarray, ...]]) -> np.ndarray:
        """`widget.turn_start_value(solver_final_roll_values(...))` of up to `RUN_CHUNKS` chunks
        of states (mask, upper total, flag) in the layer started: [states], bit for bit (on an
        accelerator, up to `ACCELERATOR_RUN_CHUNKS` chunks, to round-off).

        The chunks are padded to a run of `SOLVE_CHUNK`-state chunks (repeating their own), so
        that one program, compiled once per rule set, serves every run.
        """
        # Each chunk padded to `SOLVE_CHUNK` states and the run to its chunks, so that each
        # chunk is one block of the program's output.
        padded = [tuple(np.resize(part, SOLVE_CHUNK) for part in chunk) for chunk in chunks]
        padded += padded[-1:] * (self._run_chunks - len(chunks))
        states = tuple(
            np.concatenate(parts).astype(np.int32) for parts in zip(*padded, strict=True)
        )
        lengths = [len(chunk[0]) for chunk in chunks] + [0] * (self._run_chunks - len(chunks))
        return self._run(states, lengths)

    def _run(self, states: tuple[np.ndarray, ...], lengths: np.ndarray | list[int]) -> np.ndarray:
        """The values of a run's states, int32 (mask, upper, flag) of a whole run: of each
        `SOLVE_CHUNK` block, its first `lengths[block]` (the rest is padding)."""
        output = np.asarray(self._program(*self._arguments(states, self._next_values)))
        if self._expectation:  # [chunk, state]: each chunk's values, the padding left out
            return np.concatenate([block[:n] for block, n in zip(output, lengths, strict=True)])
        return chunk_expectations(output, lengths)  # [chunk, roll, state]


def _load_or_compile(
    rules: Rules,
    options: bool,
    shapes: tuple,
    cache_dir: str | os.PathLike | None,
    expectation: bool = False,
    one_thread: bool = False,
) -> Callable:
    """The chunk program compiled for arguments of `shapes`, or loaded from `cache_dir`."""
    return load_or_compile(
        lambda: _compiled(rules, options, expectation).lower(*shapes),
        "solver-chunk",
        (rules, expectation, one_thread),
        shapes,
        _COMPILE_OPTIONS if options else None,
        cache_dir,
    )
