"""`make(env_id, **params)`: an environment per game and task, with its params pytree.

Ids: ``{game}-v0`` (a whole solitaire game), ``{game}SingleTurn-v0`` (one turn on a random card)
and ``{game}Match-v0`` (an N-player match), for each game of `GAMES`: Yahtzee under its four rule
sets, Yacht (Chang's card), Clubhouse Yacht and Scandinavian Yatzy. A match seats two players by
default, the outside one first, against greedy1, rewarded by the result; ``opponent=None``
leaves every seat to the caller (the PettingZoo adapter).

An illegal action forfeits the game by default (``illegal_action="terminate"``: the episode ends
and is worth 0 points, or a loss under the "win" reward; `envs.core`); ``"noop"`` refuses it
instead (the state unchanged, reward 0), and then ``max_steps`` (default: twice the episode's
legal decisions, 78 steps for a Yahtzee game) truncates an episode that a policy blind to the
mask would never finish.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax.agents.resolve import OPPONENTS, builtin_agent
from yahtzee_jax.config import FeatureConfig, is_integer
from yahtzee_jax.envs import core
from yahtzee_jax.envs.core import EnvParams, EnvState
from yahtzee_jax.envs.tasks import ENV_IDS, ENVIRONMENTS, GAMES
from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import get_rules

# The ids and their games are the environments' (`envs.tasks`): a run config's `env.id` takes
# the same names. Re-exported here for outside code.
__all__ = ["ENV_IDS", "GAMES", "OPPONENTS", "PARAMS", "Env", "make", "make_params"]

PARAMS = (
    "players",
    "opponent",
    "reward",
    "seat",
    "features",
    "cache_dir",
    "illegal_action",
    "max_steps",
)
# The default step limit, in legal episodes: room for as many refused actions as legal ones.
STEP_LIMIT_EPISODES = 2
_UNSET: Any = object()


def _choose(name: str, value: Any, choices: tuple[Any, ...]) -> None:
    if value not in choices:
        raise UserError(f"{name}={value!r} is not one of: {', '.join(map(str, choices))}")


def _whole(name: str, value: object) -> int:
    """`value` as an int when it is one (NumPy's integers too; not a bool, which Python counts
    as 1 or 0), else a one-line UserError."""
    if not is_integer(value):
        raise UserError(f"{name}={value!r} must be an integer")
    return int(value)


def make_params(
    env_id: str,
    players: int | None = None,
    opponent: str | None = _UNSET,
    reward: str | None = None,
    seat: int = 0,
    features: FeatureConfig | None = None,
    cache_dir: str | os.PathLike | None = None,
    illegal_action: str = "terminate",
    max_steps: int | None = None,
) -> EnvParams:
    """The params of `env_id`, any of them replaced; a one-line `UserError` for a bad one."""
    if env_id not in ENV_IDS:
        raise UserError(f"unknown env id {env_id!r}; choose one of: {', '.join(ENV_IDS)}")
    rules_name, task = ENV_IDS[env_id]
    rules = get_rules(rules_name)
    environment = ENVIRONMENTS[task]
    solitaire = not environment.has_opponents
    if players is None:
        players = 1 if solitaire else 2
    players = _whole("players", players)
    if players < 1 or (solitaire and players != 1):
        allowed = "1" if solitaire else "an integer >= 1"
        raise UserError(f"players={players!r} for {env_id}: must be {allowed}")
    if opponent is _UNSET:
        opponent = "greedy1" if players > 1 else None
    if opponent is not None:
        _choose("opponent", opponent, OPPONENTS)
        if players == 1:
            raise UserError("opponent is for a match of 2 or more players (solitaire has none)")
    reward = ("win" if players > 1 else "score") if reward is None else reward
    _choose("reward", reward, core.REWARDS)
    if reward == "win" and players == 1:
        raise UserError("reward='win' needs a match of 2 or more players; use reward='score'")
    seat = _whole("seat", seat)
    if not 0 <= seat < players:
        raise UserError(f"seat={seat!r} must be an integer in 0..{players - 1}")
    _choose("illegal_action", illegal_action, core.ILLEGAL_ACTIONS)
    if max_steps is not None:
        max_steps = _whole("max_steps", max_steps)  # a static field: an int, not np.int64(50)
        if max_steps < 1:
            raise UserError(f"max_steps={max_steps!r} must be a positive integer (or None)")
    if features is not None and not isinstance(features, FeatureConfig):
        raise UserError(f"features={features!r} must be a FeatureConfig (yahtzee_jax.config)")
    if cache_dir is not None and not isinstance(cache_dir, str | os.PathLike):
        raise UserError(f"cache_dir={cache_dir!r} must be a path (a str or os.PathLike)")
    agent = builtin_agent(opponent, rules, cache_dir) if opponent else None
    params = EnvParams(
        rules=rules,
        whole_games=environment.whole_games,
        players=players,
        reward=reward,
        opponent=opponent,
        opponent_policy=agent.policy if agent else None,
        opponent_params=agent.params if agent else None,
        features=features or FeatureConfig(),
        seat=jnp.int32(seat),
        illegal_action=illegal_action,
    )
    if max_steps is None:
        max_steps = STEP_LIMIT_EPISODES * core.decisions_per_episode(params)
    return params.replace(max_steps=max_steps)


@dataclasses.dataclass(frozen=True)
class Env:
    """An environment: its id and default params; every method takes the params explicitly."""

    env_id: str
    default_params: EnvParams

    @property
    def num_players(self) -> int:
        """Seats at the table."""
        return self.default_params.players

    @property
    def num_actions(self) -> int:
        """Actions: 32 keeps, then one per box."""
        return core.num_actions(self.default_params)

    @property
    def observation_size(self) -> int:
        """Length of an observation."""
        return core.observation_size(self.default_params)

    @property
    def decisions_per_episode(self) -> int:
        """Decisions of the outside seat(s) in one episode (every seat's when all are outside)."""
        return core.decisions_per_episode(self.default_params)

    def init(self, key: jax.Array, params: EnvParams) -> EnvState:
        """A fresh episode."""
        return core.init(key, params)

    def step(
        self, state: EnvState, action: jax.Array, key: jax.Array, params: EnvParams
    ) -> EnvState:
        """One decision of the player on turn (then the built-in opponents' turns)."""
        return core.step(state, action, key, params)

    def observe(
        self, state: EnvState, params: EnvParams, player: jax.Array | int | None = None
    ) -> jax.Array:
        """`player`'s observation (default: the player on turn)."""
        return core.observe(state, params, player)

    def legal_action_mask(self, state: EnvState, params: EnvParams) -> jax.Array:
        """Legal actions of the player on turn."""
        del params  # kept in the state, as in pgx
        return state.legal_action_mask


def make(env_id: str, **params: Any) -> Env:
    """The environment `env_id` (one of `ENV_IDS`) with `params` (see `make_params`) replaced."""
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        raise UserError(f"unknown env params {', '.join(unknown)}; known: {', '.join(PARAMS)}")
    return Env(env_id, make_params(env_id, **params))
