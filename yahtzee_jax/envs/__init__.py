"""Environments: the tasks a learner trains on, over a rule variant (see `envs.base`).

`make(config, seats)` builds the environment `train.task` names: the solitaire `game`, the
paper's `single-turn`, or a `match` against `seats` (opponents built by the caller: the
environment floor sits below the agents, so it takes them as policies).
"""

from __future__ import annotations

from yahtzee_jax.config import Config
from yahtzee_jax.envs.base import Environment
from yahtzee_jax.envs.match import Match, MatchView, Seat
from yahtzee_jax.envs.rewards import YUAN_BOX_MEANS, YUAN_REWARDS
from yahtzee_jax.envs.rollout import episode_keys, rollout
from yahtzee_jax.envs.solitaire import Game, SingleTurn
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.game.rules import get_rules

ENVIRONMENTS: dict[str, type[Environment]] = {
    "game": Game,
    "single-turn": SingleTurn,
    "match": Match,
}


def episode_length(config: Config) -> int:
    """The learner's decisions per episode of a config's environment."""
    return make(config).episode_length


def make(config: Config, seats: tuple[Seat, ...] | None = None) -> Environment:
    """The environment of a run's config (`seats`: a match's opponents, in seat order after
    the learner's; None: an environment to observe with, which cannot play)."""
    rules = get_rules(config.train.rules)
    task = config.train.task
    if task not in ENVIRONMENTS:
        raise ConfigError(f"train.task={task!r}; choose one of: {', '.join(ENVIRONMENTS)}")
    if task != "match":
        return ENVIRONMENTS[task](rules, config.features)
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


__all__ = [
    "ENVIRONMENTS",
    "Environment",
    "Game",
    "Match",
    "MatchView",
    "Seat",
    "SingleTurn",
    "episode_keys",
    "episode_length",
    "make",
    "rollout",
]
