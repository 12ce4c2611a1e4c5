"""The planners' value network (td-planner, td-win): V of a position and, optionally, the
logits of the score to come from a second trunk."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from yahtzee_jax.config import NetworkConfig
from yahtzee_jax.networks.actor_critic_net import Block


class ValueNet(nn.Module):
    """Blocks (Dense -> activation -> LayerNorm) and a linear output: V x value_scale; with
    `score_bins`, a second such network (its own trunk: the two targets do not share features,
    and the value's accuracy is what solitaire play needs) gives the logits of the score to come."""

    config: NetworkConfig
    score_bins: int = 0

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        """Map position features [..., F] to [..., 1 + score_bins]: scaled value, logits."""
        config = self.config
        outputs = []
        for size in [1] + ([self.score_bins] if self.score_bins else []):
            h = x
            for _ in range(config.trunk_layers + 1):
                h = Block(config.hidden_size, config.activation, config.layer_norm, 0.0)(h, None)
            outputs.append(nn.Dense(size)(h))
        return jnp.concatenate(outputs, axis=-1)
