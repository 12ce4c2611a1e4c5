"""The environments by id: the one table of ids that a run config's `env.id` and outside code's
`yahtzee_jax.make` both name, and `make(config)`, which builds a config's environment.

An id is ``{game}{task}-v0``: the game names its rule set (`GAMES`), the task the environment
class (its `id_suffix`). Everything above this floor asks an environment class what it can do
(`has_opponents`, `whole_games`) instead of comparing ids or task names; the ids are read only
here, where a config's `env` section becomes its environment.
"""

from __future__ import annotations

from yahtzee_jax.config import Config, EnvConfig, check_choice
from yahtzee_jax.envs.environment import Environment
from yahtzee_jax.envs.match_env import Match, Seat
from yahtzee_jax.envs.rewards import YUAN_BOX_MEANS, YUAN_REWARDS
from yahtzee_jax.envs.solitaire import Game, SingleTurn
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.game.rules import Rules, get_rules

# The environment classes by their task's name (`evaluate --task`, the solitaire players).
ENVIRONMENTS: dict[str, type[Environment]] = {cls.name: cls for cls in (Game, SingleTurn, Match)}
# The tasks without opponents: the agents' own games (evaluation, benchmarks, tests).
SOLITAIRE: dict[str, type[Environment]] = {
    name: cls for name, cls in ENVIRONMENTS.items() if not cls.has_opponents
}
# The id's game name -> its rule set (`game.rules.RULE_VARIANTS`).
GAMES = {
    "Yahtzee": "official",
    "YahtzeeFreeJoker": "free-joker",
    "YahtzeeNoJoker": "no-joker",
    "YahtzeePlain": "plain",
    "Yacht": "yacht",
    "YachtClubhouse": "yacht-clubhouse",
    "Yatzy": "yatzy",
}
# Every id -> (its rule set, its task's name).
ENV_IDS: dict[str, tuple[str, str]] = {
    f"{game}{env.id_suffix}-v0": (rules, task)
    for task, env in ENVIRONMENTS.items()
    for game, rules in GAMES.items()
}


def check_env_id(env_id: str) -> None:
    """Raise a one-line `ConfigError` unless `env_id` is an environment's id."""
    check_choice("env.id", env_id, tuple(ENV_IDS))


def env_id(rules: str, task: str) -> str:
    """The id of the environment `task` (a task's name) over the rule set `rules`: how a
    config of the old form (`train.rules`, `train.task`) names its environment."""
    check_choice("train.rules", rules, tuple(GAMES.values()))
    check_choice("train.task", task, tuple(ENVIRONMENTS))
    return next(id_ for id_, named in ENV_IDS.items() if named == (rules, task))


def id_class(env_id: str) -> type[Environment]:
    """The environment class an id names (a one-line `ConfigError` for an unknown id)."""
    check_env_id(env_id)
    return ENVIRONMENTS[ENV_IDS[env_id][1]]


def config_class(env_id: str) -> type[EnvConfig]:
    """The class of the `env` config section of `env_id`: its params."""
    return id_class(env_id).config_class


def environment_class(config: Config) -> type[Environment]:
    """The class of a config's environment: what it can do, before any opponent is built."""
    cls = id_class(config.env.id)
    if type(config.env) is not cls.config_class:  # a section built by hand, not by its id
        raise ConfigError(
            f"env.id={config.env.id!r} takes a {cls.config_class.__name__} section, "
            f"not a {type(config.env).__name__}"
        )
    return cls


def rules_of(config: Config) -> Rules:
    """The rule set of a config's environment (its id's game)."""
    check_env_id(config.env.id)
    return get_rules(ENV_IDS[config.env.id][0])


def plays_solitaire_games(config: Config) -> bool:
    """Are a config's episodes whole games with no one else at the table?"""
    cls = environment_class(config)
    return cls.whole_games and not cls.has_opponents


def make(config: Config, seats: tuple[Seat, ...] | None = None) -> Environment:
    """The environment of a run's config (`seats`: a match's opponents, in seat order after
    the learner's; None: an environment to observe with, which cannot play)."""
    rules, cls = rules_of(config), environment_class(config)
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
        players=env.players,
        reward=env.reward,
        opponent_features=env.opponent_features,
        opponent_refresh=env.opponent_refresh,
    )


def episode_length(config: Config) -> int:
    """The learner's decisions per episode of a config's environment."""
    return make(config).episode_length


def episodes_per_update(config: Config) -> int:
    """Episodes one update plays in lockstep: its games, or their turns in single turns."""
    return config.train.games_per_update * make(config).episodes_per_game
