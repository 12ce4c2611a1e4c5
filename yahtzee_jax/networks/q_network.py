"""DQN's Q network: the actor-critic network's trunk blocks and one linear Q head."""

from __future__ import annotations

import flax.linen as nn
import jax

from yahtzee_jax.config import NetworkConfig
from yahtzee_jax.networks.actor_critic_net import Block


class QNetwork(nn.Module):
    """The actor-critic network's trunk blocks, one hidden block and a linear Q head (one
    output per action: 32 keeps + the rules' boxes, 45 for Yahtzee)."""

    config: NetworkConfig
    num_actions: int  # 32 keeps + the rules' boxes

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        """Map features[..., F] to Q-values[..., 45] (scaled reward units, no legality mask)."""
        config = self.config
        for layer in range(config.trunk_layers + 1):
            x = Block(config.hidden_size, config.activation, config.layer_norm, 0.0, layer)(x, None)
        return nn.Dense(self.num_actions)(x)
