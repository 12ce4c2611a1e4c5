"""Q(lambda)'s perceptron: one weight vector per action over the features, no hidden layer."""

from __future__ import annotations

import flax.linen as nn
import jax


class LinearQ(nn.Module):
    """Q(s, .) = beta(s) theta: one weight vector per action, no bias, zero at the start."""

    num_actions: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        """Map features[..., F] to Q-values[..., A] (reward units)."""
        dense = nn.Dense(self.num_actions, use_bias=False, kernel_init=nn.initializers.zeros)
        return dense(x)
