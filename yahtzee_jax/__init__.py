"""yahtzee_jax: on-accelerator reinforcement learning for Yahtzee in JAX."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for the annotation only: importing it would load JAX
    from yahtzee_jax.suite.registry import Env

__version__ = "0.1.0"


def make(env_id: str, **params: Any) -> Env:
    """The environment `env_id` (e.g. "Yahtzee-v0"; see `yahtzee_jax.suite.make`)."""
    # Imported here: `import yahtzee_jax` (the command line's) must not load JAX.
    from yahtzee_jax.suite import make as make_env

    return make_env(env_id, **params)
