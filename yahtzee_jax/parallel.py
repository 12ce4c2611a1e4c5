"""Data parallelism over local devices: the game batch of an update is sharded over a 1-D
device mesh, parameters and optimizer state are replicated, and the compiler inserts the
gradient all-reduce.

Across hosts, `initialize_distributed` starts JAX's multi-controller runtime: every process
runs the same program on its own devices, the mesh spans all of them, and only process 0
writes logs, evaluations and the summary (checkpoints are written by Orbax's multi-host
protocol, every process taking part).

Only the play loop names the batch axis (`shard_batch` on its episode keys); everything the
update computes from those games inherits the sharding through XLA's propagation. Outside a
mesh (one device, or evaluation) `shard_batch` does nothing, so the single-device program is
exactly today's.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

from yahtzee_jax.errors import ConfigError

BATCH_AXIS = "batch"
Item, Result = TypeVar("Item"), TypeVar("Result")
_one_thread_per_program = False  # set by `one_thread_per_program` before the backend started


def data_mesh(requested: int, episodes_per_update: int) -> Mesh | None:
    """A 1-D mesh over `requested` local devices (0: all of them); None for one device.

    Raises a one-line `ConfigError` when there are too few devices or the update's episodes
    do not divide evenly over them.
    """
    available = jax.devices()  # every process's devices under the multi-controller runtime
    count = len(available) if requested == 0 else requested
    if count > len(available):
        raise ConfigError(
            f"train.devices={requested} but only {len(available)} "
            f"{available[0].platform.upper()} device(s) are present"
        )
    if count == 1:
        return None
    if episodes_per_update % count:
        raise ConfigError(
            f"the {episodes_per_update} episodes of an update do not divide over {count} "
            "devices; choose train.games_per_update so that they do, or set train.devices"
        )
    return jax.make_mesh(
        (count,), (BATCH_AXIS,), axis_types=(AxisType.Auto,), devices=available[:count]
    )


def in_mesh(mesh: Mesh | None) -> contextlib.AbstractContextManager:
    """`mesh` as the current mesh while inside (nothing without a mesh): a run's chunk is
    compiled and called under it."""
    return jax.set_mesh(mesh) if mesh is not None else contextlib.nullcontext()


def shard_batch(array: jax.Array) -> jax.Array:
    """Constrain the leading (batch) axis to the mesh's batch axis when one is set."""
    if BATCH_AXIS not in jax.sharding.get_abstract_mesh().axis_names:
        return array
    return jax.lax.with_sharding_constraint(array, PartitionSpec(BATCH_AXIS))


def replicate(tree: Any, mesh: Mesh | None) -> Any:
    """Place every array of `tree` on all devices of `mesh` (unchanged without a mesh)."""
    if mesh is None:
        return tree
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec()))


def is_primary() -> bool:
    """Is this process the one that writes logs (process 0; always true on one host)?"""
    return jax.process_index() == 0


def host_local(tree: Any) -> Any:
    """Replicated global arrays as this process's own copy (numpy), for saving and playing."""

    def local(leaf: Any) -> Any:
        if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
            return np.asarray(leaf.addressable_data(0))
        return leaf

    return jax.tree.map(local, tree)


def initialize_distributed(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
) -> None:
    """Start JAX's multi-controller runtime; with no arguments JAX reads them from the
    environment of SLURM, Open MPI or a Cloud TPU pod slice."""
    # CPU processes exchange gradients through Gloo (accelerators use their own interconnect).
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(
            coordinator_address=coordinator, num_processes=num_processes, process_id=process_id
        )
    except (ValueError, RuntimeError) as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise ConfigError(f"cannot start the distributed runtime: {message}") from None


def host_threads() -> int:
    """Host threads that run independent compiled programs at once: one per CPU this process
    may run on when JAX computes on the CPU, one on an accelerator (which queues its own work).

    On a CPU, XLA splits one program's passes between the cores only in part and spins its idle
    threads: two threads each running whole batches played optimal Yatzy 1.47x as fast as one
    (median of five alternated pairs, idle 2-core AMD EPYC, results/solver-speed/threads-ab).
    """
    if jax.default_backend() != "cpu":
        return 1
    return usable_cpus()


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the OS tells it, else all)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def one_thread_per_program() -> bool:
    """Before JAX starts its CPU backend: have it run each compiled program on the thread that
    calls it, on that thread alone, so that host threads (`ordered_map`) run one program per
    core. Returns whether it is so: once the backend has started, nothing changes.

    XLA's CPU client otherwise runs a device's programs on its own thread pool, one after
    another, each pass split into tasks for that pool's threads; with one thread in the pool
    (PJRT's `PJRT_NPROC`) no pass is split, and synchronous dispatch runs the program on its
    caller. That suits the solver's thousands of independent short runs (a warm Yatzy solve
    1.51-1.75 -> 1.21-1.31 s, alternated, idle 2-core AMD EPYC, 2026-11-28) and not the play
    loop, whose batches lose about 40 % of their games/s, so only `yahtzee-jax solve` asks.
    """
    global _one_thread_per_program
    from jax._src import xla_bridge  # no public way to ask whether the backends have started

    started = getattr(xla_bridge, "backends_are_initialized", lambda: True)()
    if not started and not _one_thread_per_program:
        os.environ["PJRT_NPROC"] = "1"
        jax.config.update("jax_cpu_enable_async_dispatch", False)
        _one_thread_per_program = True
    return _one_thread_per_program


def is_one_thread_per_program() -> bool:
    """Did `one_thread_per_program` take effect in this process (on its CPU backend)?"""
    return _one_thread_per_program and jax.default_backend() == "cpu"


def ordered_map(
    function: Callable[[Item], Result], items: Sequence[Item], threads: int
) -> Iterator[Result]:
    """`map(function, items)` on `threads` host threads, the results in the items' order.

    The first item runs alone, on the calling thread: a jitted function compiles there once, not
    on every thread at once. The others run on other threads: JAX's thread-local contexts
    (`jax.enable_x64`, a mesh) must be entered inside `function`. A caller that stops early (an
    error, an interrupt) leaves no item queued.
    """
    if threads <= 1 or len(items) <= 1:
        yield from map(function, items)
        return
    yield function(items[0])
    pool = ThreadPoolExecutor(threads, thread_name_prefix="yahtzee-jax")
    try:
        yield from pool.map(function, items[1:])
    finally:
        pool.shutdown(cancel_futures=True)
