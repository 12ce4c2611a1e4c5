"""Many running-average updates of one table applied at once, cells hit twice combined."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def combine_set(
    table: jax.Array,
    rows: jax.Array,
    columns: jax.Array,
    targets: jax.Array,
    rates: jax.Array,
    ok: jax.Array,
) -> jax.Array:
    """The table after x <- (1 - l_j) x + l_j y_j for every update j with ok[j] ([N] each).

    The k updates of one cell become x prod_j (1 - l_j) + (1 - prod_j (1 - l_j)) mean_j y_j:
    the sequential rule applied k times when the targets agree, and free of the order
    otherwise. Every update reads the table as it was before the call.
    """
    count = rows.shape[0]
    # Out-of-range rows sort last and are dropped by the scatter (not-ok updates write nothing).
    rows = jnp.where(ok, rows, table.shape[0])
    order = jnp.lexsort((columns, rows))
    sorted_rows, sorted_columns = rows[order], columns[order]
    starts = jnp.concatenate(
        [
            jnp.ones(1, bool),
            (sorted_rows[1:] != sorted_rows[:-1]) | (sorted_columns[1:] != sorted_columns[:-1]),
        ]
    )
    group = jnp.zeros(count, jnp.int32).at[order].set(jnp.cumsum(starts) - 1)
    hits = jax.ops.segment_sum(jnp.ones(count, jnp.float32), group, count)
    mean = jax.ops.segment_sum(targets, group, count)[group] / hits[group]
    # prod (1 - l) as exp(sum log(1 - l)); l = 1 gives exp(-inf) = 0: the mean target alone
    keep = jnp.exp(jax.ops.segment_sum(jnp.log1p(-rates), group, count))[group]
    current = table.at[rows, columns].get(mode="fill", fill_value=0.0)
    return table.at[rows, columns].set(current * keep + (1 - keep) * mean, mode="drop")
