"""yahtzee_jax: on-accelerator reinforcement learning for Yahtzee in JAX."""

__version__ = "0.1.0"
