"""Environments for outside code: `make(env_id, **params)` and the pure protocol (`envs.core`).

The adapters (`suite.gymnax`, `suite.gymnasium`, `suite.pettingzoo`) need the optional `gym`
extra (``pip install -e .[gym]``); importing this package does not load them.
"""

from yahtzee_jax.envs.core import EnvParams, EnvState, init, observe, step, step_all
from yahtzee_jax.suite.registry import ENV_IDS, GAMES, OPPONENTS, Env, make, make_params

__all__ = [
    "ENV_IDS",
    "GAMES",
    "OPPONENTS",
    "Env",
    "EnvParams",
    "EnvState",
    "init",
    "make",
    "make_params",
    "observe",
    "step",
    "step_all",
]
