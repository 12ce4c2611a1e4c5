"""The tasks by name: the one list of environments `train.task` picks, and `make(config)`.

Everything above this floor asks an environment class what it can do (`has_opponents`,
`whole_games`) instead of comparing task names; the names themselves are read only here, where
a config's `train.task` becomes its environment.
"""

from __future__ import annotations

from yahtzee_jax.config import Config, check_choice
from yahtzee_jax.envs.base import Environment
from yahtzee_jax.envs.match import Match, Seat
from yahtzee_jax.envs.rewards import YUAN_BOX_MEANS, YUAN_REWARDS
from yahtzee_jax.envs.solitaire import Game, SingleTurn
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.game.rules import get_rules

# The one list of tasks: each environment under its own name.
ENVIRONMENTS: dict[str, type[Environment]] = {cls.name: cls for cls in (Game, SingleTurn, Match)}
# The tasks without opponents: the agents' own games (evaluation, benchmarks, tests).
SOLITAIRE: dict[str, type[Environment]] = {
    name: cls for name, cls in ENVIRONMENTS.items() if not cls.has_opponents
}


def check_task(task: str) -> None:
    """Raise a one-line `ConfigError` unless `task` names an environment."""
    check_choice("train.task", task, tuple(ENVIRONMENTS))


def environment_class(config: Config) -> type[Environment]:
    """The class of a config's environment: what it can do, before any opponent is built."""
    check_task(config.train.task)
    return ENVIRONMENTS[config.train.task]


def plays_solitaire_games(config: Config) -> bool:
    """Are a config's episodes whole games with no one else at the table?"""
    cls = environment_class(config)
    return cls.whole_games and not cls.has_opponents


def make(config: Config, seats: tuple[Seat, ...] | None = None) -> Environment:
    """The environment of a run's config (`seats`: a match's opponents, in seat order after
    the learner's; None: an environment to observe with, which cannot play)."""
    rules = get_rules(config.train.rules)
    cls = environment_class(config)
    if not cls.has_opponents:
        return cls(rules, config.features)
    env = config.env
    if env.reward in YUAN_REWARDS and rules.num_boxes != len(YUAN_BOX_MEANS):
        raise ConfigError(f"env.reward={env.reward!r} is Yuan's, for Yahtzee's 13-box card")
    if seats is not None and len(seats) != env.players - 1:
        raise ConfigError(f"a match of env.players={env.players} needs {env.players - 1} seats")
    return Match(
        rules,
        config.features,
        seats,
        env.players,
        env.reward,
        env.opponent_features,
        env.opponent_refresh,
    )


def episode_length(config: Config) -> int:
    """The learner's decisions per episode of a config's environment."""
    return make(config).episode_length


def episodes_per_update(config: Config) -> int:
    """Episodes one update plays in lockstep: its games, or their turns in single turns."""
    return config.train.games_per_update * make(config).episodes_per_game
