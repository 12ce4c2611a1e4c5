"""The learned target-seeker's network: from a turn-start state (open boxes, capped upper total,
a 50 in the Yahtzee box), two rows of chances of scoring at least d more points, d = 0 ..
bins - 1: the best chance of each target (hindsight's T) and the expected-score player's (E).

Each row is the survival function of a distribution over the points to come (a softmax over
`bins` values, the last holding the mass above), so a row starts at 1 and never rises, as the
solver's rows do (T_s(d) is a best chance of at least d: non-increasing in d)."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

# Points to come 0 .. ROW_BINS - 1 (the target-seeker sums targets below 640: its window).
ROW_BINS = 640


def state_features(
    mask: jax.Array, upper: jax.Array, flag: jax.Array, num_boxes: int, upper_cap: int
) -> jax.Array:
    """float32[..., F] of turn-start states: each box open or not, the upper total (one-hot and
    scaled), the Yahtzee flag and the share of boxes still open."""
    filled = ((mask[..., None] >> jnp.arange(num_boxes)) & 1).astype(jnp.float32)
    upper_hot = jax.nn.one_hot(upper, upper_cap + 1, dtype=jnp.float32)
    scalars = jnp.stack(
        [
            upper.astype(jnp.float32) / max(upper_cap, 1),
            flag.astype(jnp.float32),
            1.0 - jnp.mean(filled, axis=-1),
        ],
        axis=-1,
    )
    return jnp.concatenate([filled, upper_hot, scalars], axis=-1)


class TargetRowsNet(nn.Module):
    """A shared trunk (Dense -> swish -> LayerNorm) and two heads of logits over the points to
    come: [..., 2, bins], the target row's first, then the expected row's.

    Points above a state's most to come (`lengths`, known from the rules) get no mass: a softmax
    leaves some on every bin, and the tail of a late card's row (a few dozen possible points of
    640) would otherwise carry hundredths of it."""

    hidden_size: int = 512
    layers: int = 3
    bins: int = ROW_BINS
    logit_scale: float = 1.0

    @nn.compact
    def __call__(self, x: jax.Array, lengths: jax.Array) -> jax.Array:
        """Logits [..., 2, bins] of state features [..., F] and rows' lengths [...]."""
        h = x
        for _ in range(self.layers):
            h = nn.LayerNorm()(nn.swish(nn.Dense(self.hidden_size)(h)))
        logits = self.logit_scale * nn.Dense(2 * self.bins)(h)
        logits = logits.reshape(*x.shape[:-1], 2, self.bins)
        possible = jnp.arange(self.bins) < lengths[..., None, None]
        return jnp.where(possible, logits, -1e9)


def survival(logits: jax.Array) -> jax.Array:
    """P(points to come >= d), d = 0 .. bins - 1, of logits over the points [..., bins]."""
    p = jax.nn.softmax(logits.astype(jnp.float32), axis=-1)
    # A sum from the top: the last entries are the smallest chances, kept to float32's ulp.
    return jnp.flip(jnp.cumsum(jnp.flip(p, -1), axis=-1), -1)
