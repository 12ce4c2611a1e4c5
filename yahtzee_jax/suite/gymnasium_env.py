"""The Gymnasium adapter: registered ids, one env and a vector env on the vmapped engine.

Importing this module registers ``yahtzee_jax/<id>`` for every id of `suite.ENV_IDS`:
``gymnasium.make("yahtzee_jax/Yahtzee-v0")`` (or, without the import,
``gymnasium.make("yahtzee_jax.suite.gymnasium_env:yahtzee_jax/Yahtzee-v0")``) and
``gymnasium.make_vec("yahtzee_jax/Yahtzee-v0", num_envs=64)``, whose steps are one jitted, vmapped
call for the whole batch. The legal actions are ``info["action_mask"]`` (int8) and
``env.action_masks()`` (what sb3-contrib's MaskablePPO asks). An illegal action changes nothing
and earns 0; an episode ends only by termination (a game has no time limit). Needs the `gym`
extra.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium
import jax
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from yahtzee_jax.envs import core
from yahtzee_jax.envs.core import EnvParams, EnvState
from yahtzee_jax.suite.gymnax_env import _single_seat
from yahtzee_jax.suite.registry import ENV_IDS, make

NAMESPACE = "yahtzee_jax"


def _reward(state: EnvState, params: EnvParams) -> jax.Array:
    return state.rewards[params.seat] if params.opponent else state.rewards[0]


@functools.partial(jax.jit, static_argnames="batch")
def _reset(key: jax.Array, params: EnvParams, batch: int) -> tuple[EnvState, jax.Array]:
    keys = jax.random.split(key, batch)
    state = jax.vmap(core.init, in_axes=(0, None))(keys, params)
    return state, jax.vmap(core.observe, in_axes=(0, None))(state, params)


@jax.jit
def _step(
    state: EnvState, action: jax.Array, key: jax.Array, params: EnvParams
) -> tuple[EnvState, jax.Array, dict[str, jax.Array]]:
    """A batch's step, each finished episode started again: (state, next key, what the host
    reads, in one transfer)."""
    key, step_key, reset_key = jax.random.split(key, 3)
    batch = action.shape[0]
    moved = jax.vmap(core.step, in_axes=(0, 0, 0, None))(
        state, action, jax.random.split(step_key, batch), params
    )
    final_obs = jax.vmap(core.observe, in_axes=(0, None))(moved, params)
    fresh = jax.vmap(core.init, in_axes=(0, None))(jax.random.split(reset_key, batch), params)
    done = moved.terminated

    def pick(new: jax.Array, old: jax.Array) -> jax.Array:
        return jax.numpy.where(done.reshape(done.shape + (1,) * (new.ndim - 1)), new, old)

    state = jax.tree.map(pick, fresh, moved)
    host = {
        "obs": jax.vmap(core.observe, in_axes=(0, None))(state, params),
        "final_obs": final_obs,
        "reward": jax.vmap(_reward, in_axes=(0, None))(moved, params),
        "terminated": done,
        "mask": state.legal_action_mask,
    }
    return state, key, host


@jax.jit
def _step_one(
    state: EnvState, action: jax.Array, key: jax.Array, params: EnvParams
) -> tuple[EnvState, jax.Array, dict[str, jax.Array]]:
    key, step_key = jax.random.split(key)
    moved = core.step(state, action, step_key, params)
    host = {
        "obs": core.observe(moved, params),
        "reward": _reward(moved, params),
        "terminated": moved.terminated,
        "mask": moved.legal_action_mask,
    }
    return moved, key, host


def _spaces(params: EnvParams) -> tuple[spaces.Box, spaces.Discrete]:
    size = core.observation_size(params)
    low, high = core.OBSERVATION_LOW, core.OBSERVATION_HIGH
    return spaces.Box(low, high, (size,), np.float32), spaces.Discrete(core.num_actions(params))


class YahtzeeEnv(gymnasium.Env):
    """One episode at a time: `reset(seed=...)`, `step(action)`; the mask in `info`."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (Gymnasium's class attribute)

    def __init__(self, env_id: str = "Yahtzee-v0", **params: Any) -> None:
        self.env = make(env_id, **params)
        self.params = self.env.default_params
        _single_seat(self.params, env_id)
        self.observation_space, self.action_space = _spaces(self.params)
        self._state: EnvState | None = None
        self._key: jax.Array | None = None
        self._mask: np.ndarray | None = None

    def _info(self) -> dict[str, Any]:
        return {"action_mask": self.action_masks().astype(np.int8)}

    def action_masks(self) -> np.ndarray:
        """bool[num_actions]: the legal actions now."""
        assert self._mask is not None, "call reset() first"
        return self._mask

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """A new episode; its dice follow from `seed` (else from the env's generator)."""
        super().reset(seed=seed)
        # The JAX key comes from Gymnasium's generator: one seed fixes every later episode.
        self._key = jax.random.key(int(self.np_random.integers(2**32, dtype=np.uint64)))
        self._key, key = jax.random.split(self._key)
        state, obs = _reset(key, self.params, 1)
        self._state = jax.tree.map(lambda leaf: leaf[0], state)
        self._mask = np.asarray(self._state.legal_action_mask)
        return np.asarray(obs[0]), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """One decision (then the opponents' turns); an illegal action changes nothing."""
        assert self._state is not None and self._key is not None, "call reset() first"
        self._state, self._key, views = _step_one(
            self._state, np.int32(action), self._key, self.params
        )
        host = jax.device_get(views)
        self._mask = host["mask"]
        return host["obs"], float(host["reward"]), bool(host["terminated"]), False, self._info()


class YahtzeeVectorEnv(VectorEnv):
    """`num_envs` episodes stepped by one jitted, vmapped call; auto-reset in the same step.

    A finished episode's last observation is ``info["final_obs"][i]`` where
    ``info["_final_obs"][i]`` (Gymnasium's same-step auto-reset).
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP}  # noqa: RUF012

    def __init__(self, num_envs: int = 1, env_id: str = "Yahtzee-v0", **params: Any) -> None:
        self.env = make(env_id, **params)
        self.params = self.env.default_params
        _single_seat(self.params, env_id)
        self.num_envs = num_envs
        self.single_observation_space, self.single_action_space = _spaces(self.params)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._state: EnvState | None = None
        self._key: jax.Array | None = None

    def action_masks(self) -> np.ndarray:
        """bool[num_envs, num_actions]: each episode's legal actions now."""
        assert self._state is not None, "call reset() first"
        return np.asarray(self._state.legal_action_mask)

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """New episodes in every slot; `seed` (one int) fixes all of their dice."""
        if isinstance(seed, list):
            seed = seed[0]
        super().reset(seed=seed)
        self._key = jax.random.key(int(self.np_random.integers(2**32, dtype=np.uint64)))
        self._key, key = jax.random.split(self._key)
        self._state, obs = _reset(key, self.params, self.num_envs)
        return np.asarray(obs), {"action_mask": self.action_masks().astype(np.int8)}

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One decision in every episode; finished ones start again in the same call."""
        assert self._state is not None and self._key is not None, "call reset() first"
        actions = np.asarray(actions, np.int32).reshape(self.num_envs)
        self._state, self._key, views = _step(self._state, actions, self._key, self.params)
        host = jax.device_get(views)
        terminated = host["terminated"]
        info = {
            "action_mask": host["mask"].astype(np.int8),
            "final_obs": host["final_obs"],
            "_final_obs": terminated,
        }
        truncated = np.zeros(self.num_envs, bool)
        return host["obs"], host["reward"].astype(np.float32), terminated, truncated, info


def register() -> None:
    """Register ``yahtzee_jax/<id>`` for every id (done once when this module is imported)."""
    for env_id in ENV_IDS:
        name = f"{NAMESPACE}/{env_id}"
        if name in gymnasium.registry:
            continue
        gymnasium.register(
            id=name,
            entry_point=f"{__name__}:YahtzeeEnv",
            vector_entry_point=f"{__name__}:YahtzeeVectorEnv",
            kwargs={"env_id": env_id},
        )


register()
