"""Data parallelism over local devices: the game batch of an update is sharded over a 1-D
device mesh, parameters and optimizer state are replicated, and the compiler inserts the
gradient all-reduce.

Only the play loop names the batch axis (`shard_batch` on its episode keys); everything the
update computes from those games inherits the sharding through XLA's propagation. Outside a
mesh (one device, or evaluation) `shard_batch` does nothing, so the single-device program is
exactly today's.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

from yahtzee_jax.errors import ConfigError

BATCH_AXIS = "batch"


def data_mesh(requested: int, episodes_per_update: int) -> Mesh | None:
    """A 1-D mesh over `requested` local devices (0: all of them); None for one device.

    Raises a one-line `ConfigError` when there are too few devices or the update's episodes
    do not divide evenly over them.
    """
    available = jax.local_devices()
    count = len(available) if requested == 0 else requested
    if count > len(available):
        raise ConfigError(
            f"train.devices={requested} but only {len(available)} local "
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
