"""The gymnax adapter: an `Environment` subclass over `envs.core` (needs the `gym` extra).

``env = YahtzeeGymnax("Yahtzee-v0")``; ``obs, state = env.reset(key, env.default_params)``;
``obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)``,
auto-reset by gymnax's base class, so purejaxrl-style code and gymnax's own wrappers
(`LogWrapper`, `FlattenObservationWrapper`, `GymnaxToGymWrapper`) take it unchanged. The legal
actions of the returned observation are ``info["action_mask"]`` (after an auto-reset, those of
the new episode) and ``env.action_mask(state, params)``.

Under jit an action cannot raise, so an illegal one (refused by the mask, out of range, or a
float that is not a whole number) has the outcome ``illegal_action`` chooses (`envs.core`):
"terminate" (the default) forfeits the game, which ends at once worth 0 points (the step's
reward is minus the points so far) or a loss (-1) under the "win" reward, so a policy that
ignores the mask finishes every game within its 39 decisions and is taught what an illegal move
costs; "noop" refuses it (state unchanged, reward 0) and truncates an episode after
``max_steps`` steps (default twice its legal decisions: 78 for a Yahtzee game).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

from yahtzee_jax.envs import core
from yahtzee_jax.envs.core import EnvParams
from yahtzee_jax.errors import UserError
from yahtzee_jax.suite.registry import make


@struct.dataclass
class GymnaxState(environment.EnvState):
    """gymnax's state (its `time`: decisions so far) around the protocol's `EnvState`."""

    env: core.EnvState


def _single_seat(params: EnvParams, env_id: str) -> None:
    if params.players > 1 and params.opponent is None:
        raise UserError(
            f"{env_id} with opponent=None has {params.players} outside seats: a single-agent "
            "adapter needs a built-in opponent (or use the PettingZoo adapter)"
        )


class YahtzeeGymnax(environment.Environment):
    """`make(env_id, **params)` as a gymnax environment: one outside seat, its reward;
    ``illegal_action="terminate"`` (default) or ``"noop"``, ``max_steps``."""

    def __init__(self, env_id: str = "Yahtzee-v0", **params: Any) -> None:
        """`make(env_id, **params)` behind gymnax's API; a match id needs one outside seat."""
        super().__init__()
        self.env = make(env_id, **params)
        _single_seat(self.env.default_params, env_id)

    @property
    def default_params(self) -> EnvParams:
        """The params `make` built (rules, episodes, seats, opponent, reward)."""
        return self.env.default_params

    def reset_env(self, key: jax.Array, params: EnvParams) -> tuple[jax.Array, GymnaxState]:
        """A fresh episode and its observation."""
        state = GymnaxState(time=jnp.int32(0), env=core.init(key, params))
        return core.observe(state.env, params), state

    def step_env(
        self, key: jax.Array, state: GymnaxState, action: jax.Array, params: EnvParams
    ) -> tuple[jax.Array, GymnaxState, jax.Array, jax.Array, dict[str, Any]]:
        """One decision of the outside seat (and the opponents' turns): its reward."""
        moved = core.step(state.env, action, key, params)
        state = GymnaxState(time=state.time + 1, env=moved)
        reward = moved.rewards[params.seat] if params.opponent else moved.rewards[0]
        return core.observe(moved, params), state, reward, moved.terminated, {}

    def step(
        self,
        key: jax.Array,
        state: GymnaxState,
        action: int | float | jax.Array,
        params: EnvParams | None = None,
    ) -> tuple[jax.Array, GymnaxState, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        """gymnax's auto-resetting step, with the returned state's legal actions in `info`."""
        obs, state, reward, terminated, truncated, info = super().step(key, state, action, params)
        return (
            obs,
            state,
            reward,
            terminated,
            truncated,
            {**info, "action_mask": self.action_mask(state)},
        )

    def action_mask(self, state: GymnaxState, params: EnvParams | None = None) -> jax.Array:
        """bool[num_actions]: the legal actions in `state`."""
        return state.env.legal_action_mask

    def get_obs(
        self, state: GymnaxState, params: EnvParams | None = None, key: Any = None
    ) -> jax.Array:
        """The outside seat's observation."""
        return core.observe(state.env, params or self.default_params)

    def is_terminated(self, state: GymnaxState, params: EnvParams) -> jax.Array:
        """The episode is over."""
        return state.env.terminated

    def is_truncated(self, state: GymnaxState, params: EnvParams) -> jax.Array:
        """The episode reached `params.max_steps` unfinished (only ever under "noop": a legal
        game, or one ended by a forfeit, is shorter)."""
        return state.env.truncated

    @property
    def name(self) -> str:
        """The environment's id."""
        return self.env.env_id

    @property
    def num_actions(self) -> int:
        """Actions: 32 keeps, then one per box."""
        return self.env.num_actions

    def action_space(self, params: EnvParams | None = None) -> spaces.Discrete:
        """Discrete(num_actions); use the mask to keep to the legal ones."""
        return spaces.Discrete(self.env.num_actions)

    def observation_space(self, params: EnvParams | None = None) -> spaces.Box:
        """Box of the flat float32 observation."""
        size = core.observation_size(params or self.default_params)
        return spaces.Box(core.OBSERVATION_LOW, core.OBSERVATION_HIGH, (size,), jnp.float32)
