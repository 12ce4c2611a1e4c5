"""Learning algorithms, one module per learner behind one registry.

Each module defines an `ALGORITHM` (`algorithms.algorithm.Algorithm`): its name, config section,
update and acting agent (a module with two variants names the second's as `module:ATTRIBUTE`).
Config validation, `train.py`, checkpointing and evaluation look algorithms up here by name;
adding a learner means writing its module, its config class and its tests, and naming the
module below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from yahtzee_jax.errors import ConfigError

if TYPE_CHECKING:
    from yahtzee_jax.algorithms.algorithm import Algorithm

# name -> module[:attribute] (default ALGORITHM); modules are imported on first use (config.py
# reads the registry).
_MODULES = {
    "a2c": "yahtzee_jax.algorithms.a2c",
    "reinforce": "yahtzee_jax.algorithms.reinforce",
    "ppo": "yahtzee_jax.algorithms.ppo",
    "dqn": "yahtzee_jax.algorithms.dqn",
    "q-lambda": "yahtzee_jax.algorithms.q_lambda",
    "maxq": "yahtzee_jax.algorithms.maxq",
    "maxq-g1": "yahtzee_jax.algorithms.maxq:G1_ALGORITHM",
    "td-planner": "yahtzee_jax.algorithms.td_planner",
    "td-win": "yahtzee_jax.algorithms.td_win",
    "distill": "yahtzee_jax.algorithms.distill",
}


def algorithm_names() -> tuple[str, ...]:
    """Names of the registered algorithms."""
    return tuple(_MODULES)


def get_algorithm(name: str) -> Algorithm:
    """The registered algorithm called `name`."""
    if name not in _MODULES:
        raise ConfigError(f"unknown algorithm {name!r}; choose one of: {', '.join(_MODULES)}")
    module, _, attribute = _MODULES[name].partition(":")
    return getattr(importlib.import_module(module), attribute or "ALGORITHM")
