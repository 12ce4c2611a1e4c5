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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

from yahtzee_jax.errors import ConfigError
from yahtzee_jax.host import usable_cpus

BATCH_AXIS = "batch"
Item, Result = TypeVar("Item"), TypeVar("Result")


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


def ordered_map(
    function: Callable[[Item], Result],
    items: Sequence[Item],
    threads: int,
    salvage: Callable[[Result], None] | None = None,
) -> Iterator[Result]:
    """`map(function, items)` on `threads` host threads, the results in the items' order.

    The first item runs alone, on the calling thread: a jitted function compiles there once, not
    on every thread at once. The others run on other threads: JAX's thread-local contexts
    (`jax.enable_x64`, a mesh) must be entered inside `function`. A caller that stops early (an
    error, an interrupt) leaves no item queued, and waits for those running; `salvage` is
    handed their results (a Ctrl-C's keep takes them instead of dropping finished work).
    """
    if threads <= 1 or len(items) <= 1:
        yield from map(function, items)
        return
    yield function(items[0])
    pool = ThreadPoolExecutor(threads, thread_name_prefix="yahtzee-jax")
    futures = [pool.submit(function, item) for item in items[1:]]
    handed = 0
    try:
        for future in futures:
            yield future.result()
            handed += 1
    finally:
        pool.shutdown(cancel_futures=True)  # waits for the items running
        if salvage is not None:
            for future in futures[handed:]:  # the one being handed may come again: no matter
                if future.done() and not future.cancelled() and future.exception() is None:
                    salvage(future.result())
