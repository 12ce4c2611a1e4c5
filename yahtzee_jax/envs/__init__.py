"""Environments: the tasks a learner trains on, over a rule variant.

`envs.core` is the one environment protocol (pure `init`, `step`, `observe` over a params
pytree), which the outside adapters (`suite`) use as it is; `envs.environment.Environment` is the
learners' batched driver of a task (the solitaire tasks: the protocol's functions vmapped).

`make(config, seats)` (`envs.tasks`) builds the environment a config's `env.id` names (the ids
`yahtzee_jax.make` takes, `envs.tasks.ENV_IDS`): the solitaire games, the paper's single turns,
or a match against `seats` (opponents built by the caller: the environment floor sits below the
agents, so it takes them as policies). Callers above ask the environment what it can do
(`has_opponents`, `whole_games`), not its id.
"""

from __future__ import annotations

from yahtzee_jax.envs.environment import Environment
from yahtzee_jax.envs.match_env import Match, MatchView, Seat
from yahtzee_jax.envs.rollout import episode_keys, rollout
from yahtzee_jax.envs.solitaire import Game, SingleTurn
from yahtzee_jax.envs.tasks import (
    ENV_IDS,
    ENVIRONMENTS,
    SOLITAIRE,
    environment_class,
    episode_length,
    episodes_per_update,
    make,
    plays_solitaire_games,
    rules_of,
)

__all__ = [
    "ENVIRONMENTS",
    "ENV_IDS",
    "SOLITAIRE",
    "Environment",
    "Game",
    "Match",
    "MatchView",
    "Seat",
    "SingleTurn",
    "environment_class",
    "episode_keys",
    "episode_length",
    "episodes_per_update",
    "make",
    "plays_solitaire_games",
    "rollout",
    "rules_of",
]
