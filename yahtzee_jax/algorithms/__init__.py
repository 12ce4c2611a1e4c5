"""Learning algorithms: pure rollout, loss and update functions, one module per algorithm.

Each algorithm module exposes ``update(context, state) -> (state, metrics)``: one learning update
from the current train state (roll out, compute the loss, apply the gradient). `train.py` scans it
inside a compiled chunk; adding REINFORCE, PPO or DQN means adding a module and an entry here.
"""

from __future__ import annotations

from types import ModuleType

from yahtzee_jax.errors import ConfigError


def get_algorithm(name: str) -> ModuleType:
    """The module implementing algorithm `name`."""
    if name == "a2c":
        from yahtzee_jax.algorithms import a2c

        return a2c
    raise ConfigError(f"unknown algorithm {name!r}")
