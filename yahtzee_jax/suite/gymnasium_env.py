"""The Gymnasium adapter: registered ids, one env and a vector env on the vmapped engine.

Importing this module registers ``yahtzee_jax/<id>`` for every id of `suite.ENV_IDS`:
``gymnasium.make("yahtzee_jax/Yahtzee-v0")`` (or, without the import,
``gymnasium.make("yahtzee_jax.suite.gymnasium_env:yahtzee_jax/Yahtzee-v0")``) and
``gymnasium.make_vec("yahtzee_jax/Yahtzee-v0", num_envs=64)``, whose steps are one jitted, vmapped
call for the whole batch. The legal actions are ``info["action_mask"]`` (int8) and
``env.action_masks()`` (bool; what sb3-contrib's MaskablePPO asks); observations and masks are
writable copies.

An action outside the action space (out of range such as 45, 100 or -1, a float that is not a
whole number such as 44.9, not a number) raises `IllegalAction`, a ValueError and
`gymnasium.error.InvalidAction` naming the action and the legal ones, before anything moves.
An action in the space that the mask refuses does what ``illegal_action`` says:
``"terminate"`` (the default) forfeits the game, which ends at once worth 0 points (the step's
reward is minus the points so far; -1 under the "win" reward; `envs.core`), so a policy that
ignores the mask (SB3's plain PPO) finishes every game; ``"raise"`` raises `IllegalAction` for it
too; ``"noop"`` refuses it (reward 0), with ``truncated`` after ``max_steps`` steps (default
twice the legal episode's decisions). Gymnasium's `check_env`, which steps random actions of the
space, passes under "terminate" and "noop". A step or mask before `reset()`, or a step after the
episode ended, raises `ResetNeeded`. Needs the `gym` extra.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from yahtzee_jax.config import MAX_SEED, is_integer
from yahtzee_jax.envs import core
from yahtzee_jax.envs.core import EnvParams, EnvState
from yahtzee_jax.game.engine import IllegalActionError
from yahtzee_jax.suite import actions
from yahtzee_jax.suite.gymnax_env import _single_seat
from yahtzee_jax.suite.registry import ENV_IDS, make

NAMESPACE = "yahtzee_jax"


class IllegalAction(IllegalActionError, gymnasium.error.InvalidAction):
    """An action the mask refuses (a ValueError and Gymnasium's `InvalidAction`)."""


class ResetNeeded(actions.ResetNeeded, gymnasium.error.ResetNeeded):
    """A step or a mask before `reset()`, or a step after the episode ended."""


def _reward(state: EnvState, params: EnvParams) -> jax.Array:
    return state.rewards[params.seat] if params.opponent else state.rewards[0]


@functools.partial(jax.jit, static_argnames="batch")
def _reset(key: jax.Array, params: EnvParams, batch: int) -> tuple[EnvState, jax.Array]:
    return _reset_each(jax.random.split(key, batch), params)


@jax.jit
def _reset_each(keys: jax.Array, params: EnvParams) -> tuple[EnvState, jax.Array]:
    state = jax.vmap(core.init, in_axes=(0, None))(keys, params)
    return state, jax.vmap(core.observe, in_axes=(0, None))(state, params)


def _slot_seeds(seeds: Any, num_envs: int) -> list[int]:
    """A list of seeds, one per slot as Gymnasium's vector envs take it, checked in one line."""
    values = list(seeds)
    if len(values) != num_envs or not all(
        is_integer(seed) and 0 <= seed <= MAX_SEED for seed in values
    ):
        raise ValueError(f"seed: one integer in 0..2**32-1 per slot ({num_envs}), got {seeds!r}")
    return [int(seed) for seed in values]


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
    done = moved.terminated | moved.truncated

    def pick(new: jax.Array, old: jax.Array) -> jax.Array:
        return jax.numpy.where(done.reshape(done.shape + (1,) * (new.ndim - 1)), new, old)

    state = jax.tree.map(pick, fresh, moved)
    host = {
        "obs": jax.vmap(core.observe, in_axes=(0, None))(state, params),
        "final_obs": final_obs,
        "reward": jax.vmap(_reward, in_axes=(0, None))(moved, params),
        "terminated": moved.terminated,
        "truncated": moved.truncated,
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
        "truncated": moved.truncated,
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

    def __init__(
        self, env_id: str = "Yahtzee-v0", illegal_action: str = "terminate", **params: Any
    ) -> None:
        self.env = make(env_id, **actions.adapter_params(illegal_action, params))
        self.params = self.env.default_params
        self._strict = illegal_action == "raise"
        _single_seat(self.params, env_id)
        self.observation_space, self.action_space = _spaces(self.params)
        self._state: EnvState | None = None
        self._key: jax.Array | None = None
        self._mask: np.ndarray | None = None
        self._over = False

    def _info(self) -> dict[str, Any]:
        return {"action_mask": self.action_masks().astype(np.int8)}

    def action_masks(self) -> np.ndarray:
        """bool[num_actions]: the legal actions now (a writable copy)."""
        if self._mask is None:
            raise ResetNeeded("call reset() before action_masks()")
        return self._mask.copy()

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
        self._mask = np.array(self._state.legal_action_mask)
        self._over = False
        return np.array(obs[0]), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """One decision (then the opponents' turns); an illegal one as `illegal_action` says."""
        if self._state is None or self._key is None or self._mask is None or self._over:
            raise ResetNeeded("call reset() first: no episode is running")
        action = actions.check_action(
            action, self._mask, self.params.rules, self.env.env_id, IllegalAction, self._strict
        )
        self._state, self._key, views = _step_one(
            self._state, np.int32(action), self._key, self.params
        )
        host = jax.device_get(views)
        self._mask = np.array(host["mask"])
        terminated, truncated = bool(host["terminated"]), bool(host["truncated"])
        self._over = terminated or truncated
        obs = np.array(host["obs"])
        return obs, float(host["reward"]), terminated, truncated, self._info()


class YahtzeeVectorEnv(VectorEnv):
    """`num_envs` episodes stepped by one jitted, vmapped call; auto-reset in the same step.

    A finished episode's last observation is ``info["final_obs"][i]`` where
    ``info["_final_obs"][i]`` (Gymnasium's same-step auto-reset). An illegal action in any slot
    raises before any episode moves (or, with ``illegal_action="terminate"`` / ``"noop"``, acts
    as in `YahtzeeEnv`).
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP}  # noqa: RUF012

    def __init__(
        self,
        num_envs: int = 1,
        env_id: str = "Yahtzee-v0",
        illegal_action: str = "terminate",
        **params: Any,
    ) -> None:
        if not is_integer(num_envs) or num_envs < 1:
            raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        self.env = make(env_id, **actions.adapter_params(illegal_action, params))
        self.params = self.env.default_params
        self._strict = illegal_action == "raise"
        _single_seat(self.params, env_id)
        self.num_envs = num_envs = int(num_envs)
        self.single_observation_space, self.single_action_space = _spaces(self.params)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._state: EnvState | None = None
        self._key: jax.Array | None = None
        self._masks: np.ndarray | None = None

    def action_masks(self) -> np.ndarray:
        """bool[num_envs, num_actions]: each episode's legal actions now (a writable copy)."""
        if self._masks is None:
            raise ResetNeeded("call reset() before action_masks()")
        return self._masks.copy()

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """New episodes in every slot; `seed` (one int) fixes all of their dice, a list of one
        seed per slot each slot's first episode (equal seeds, equal episodes) and, together,
        the episodes after them."""
        seeds = None if seed is None or isinstance(seed, int | np.integer) else seed
        if seeds is not None:  # a list was cut to its first seed once, without a word
            seeds = _slot_seeds(seeds, self.num_envs)
            seed = int(np.random.SeedSequence(seeds).generate_state(1)[0])
        super().reset(seed=seed)
        self._key = jax.random.key(int(self.np_random.integers(2**32, dtype=np.uint64)))
        self._key, key = jax.random.split(self._key)
        if seeds is None:
            self._state, obs = _reset(key, self.params, self.num_envs)
        else:
            keys = jax.vmap(jax.random.key)(jnp.asarray(seeds, jnp.uint32))
            self._state, obs = _reset_each(keys, self.params)
        self._masks = np.array(self._state.legal_action_mask)
        return np.array(obs), {"action_mask": self.action_masks().astype(np.int8)}

    def step(
        self, actions_: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One decision in every episode; finished ones start again in the same call."""
        if self._state is None or self._key is None or self._masks is None:
            raise ResetNeeded("call reset() before step()")
        rules, strict = self.params.rules, self._strict
        batch = np.asarray(actions_, dtype=object)
        if batch.size != self.num_envs:
            raise ValueError(f"step takes one action per slot ({self.num_envs}), got {batch.size}")
        batch = batch.reshape(self.num_envs)
        moves = np.array(
            [
                actions.check_action(a, mask, rules, f"episode {i}", IllegalAction, strict)
                for i, (a, mask) in enumerate(zip(batch, self._masks, strict=True))
            ],
            np.int32,
        )
        self._state, self._key, views = _step(self._state, moves, self._key, self.params)
        host = jax.device_get(views)
        self._masks = np.array(host["mask"])
        terminated, truncated = np.array(host["terminated"]), np.array(host["truncated"])
        info = {
            "action_mask": self._masks.astype(np.int8),
            "final_obs": np.array(host["final_obs"]),
            "_final_obs": terminated | truncated,
        }
        reward = host["reward"].astype(np.float32)
        return np.array(host["obs"]), reward, terminated, truncated, info


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
