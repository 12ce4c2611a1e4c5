"""The PettingZoo adapter: an N-player match as an AEC env and as a parallel env (`gym` extra).

Agents are ``player_0`` .. ``player_{P-1}`` in seat order. An observation is a dict (PettingZoo's
classic games' layout): ``"observation"``, the seat's view (`envs.core.observe`: its card, then
each other card's open boxes, upper total and score difference; never their dice), and
``"action_mask"`` (int8; all zeros for a seat that is not on turn in the AEC env). The AEC env
plays the match in turns (keep, keep, score, then the next seat); the parallel env plays each
round at once (every seat decides on its own card at every step: Yahtzee's cards do not
interact, so only what a seat sees of the others differs). Rewards: ``reward="win"`` (+1, 0 or
-1 at the end) or ``"score"`` (each decision's points).

An illegal action (refused by the agent's mask, out of range, or a float that is not a whole
number; in the parallel env, a live agent's missing action too) raises `IllegalActionError`, a
ValueError naming the agent, the action and the legal ones, before anything moves. With
``illegal_action="terminate"`` an action in the space that the mask refuses forfeits the match
instead (PettingZoo's `TerminateIllegalWrapper`'s outcome: every agent terminated, the one that
acted rewarded minus its points so far under "score", -1 under "win", the others 0;
`envs.core`); with ``"noop"`` it is refused, and every agent is truncated after ``max_steps``
steps. One outside the space raises in every mode. A step before `reset()` raises
`ResetNeeded`.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv, ParallelEnv

from yahtzee_jax.envs import core
from yahtzee_jax.envs.core import EnvParams, EnvState
from yahtzee_jax.suite import actions
from yahtzee_jax.suite.actions import ResetNeeded
from yahtzee_jax.suite.registry import make


def _views(state: EnvState, params: EnvParams) -> dict[str, jax.Array]:
    """What the host reads after a step, fetched in one transfer: every seat's observation
    [P, F] and own legal actions [P, A], the rewards, who is on turn, the end."""
    seats = jax.numpy.arange(params.players)
    return {
        "obs": jax.vmap(lambda seat: core.observe(state, params, seat))(seats),
        "masks": jax.vmap(lambda seat: core.seat_legal_action_mask(state, params, seat))(seats),
        "rewards": state.rewards,
        "current_player": state.current_player,
        "terminated": state.terminated,
        "truncated": state.truncated,
    }


@jax.jit
def _start(key: jax.Array, params: EnvParams) -> tuple[EnvState, jax.Array, dict[str, jax.Array]]:
    key, init_key = jax.random.split(key)
    state = core.init(init_key, params)
    return state, key, _views(state, params)


@functools.partial(jax.jit, static_argnames="every_seat")
def _advance(
    state: EnvState, action: jax.Array, key: jax.Array, params: EnvParams, every_seat: bool
) -> tuple[EnvState, jax.Array, dict[str, jax.Array]]:
    """One step (the seat on turn's, or `every_seat`'s at once), the key carried on device."""
    key, step_key = jax.random.split(key)
    step = core.step_all if every_seat else core.step
    state = step(state, action, step_key, params)
    return state, key, _views(state, params)


class _Match:
    """What both envs share: the params, the agents, their spaces and the JAX key."""

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "is_parallelizable": True}  # noqa: RUF012

    def _setup(
        self, env_id: str, players: int, reward: str, illegal_action: str, params: dict[str, Any]
    ) -> None:
        self.render_mode = params.pop("render_mode", None)
        if self.render_mode not in (None, *self.metadata["render_modes"]):
            modes = ", ".join(self.metadata["render_modes"])
            raise ValueError(f"render_mode={self.render_mode!r}: this env renders {modes} only")
        if "opponent" in params:  # every seat is an agent here: none is played by the env
            raise ValueError("opponent: every seat of a PettingZoo match is an agent of yours")
        params = actions.adapter_params(illegal_action, params)
        self.illegal_action = illegal_action
        self.env = make(env_id, players=players, opponent=None, reward=reward, **params)
        self.params = self.env.default_params
        self.possible_agents = [f"player_{seat}" for seat in range(players)]
        size, num_actions = self.env.observation_size, self.env.num_actions
        low, high = core.OBSERVATION_LOW, core.OBSERVATION_HIGH
        self._observation_space = spaces.Dict(
            {
                "observation": spaces.Box(low, high, (size,), np.float32),
                "action_mask": spaces.Box(0, 1, (num_actions,), np.int8),
            }
        )
        self._action_space = spaces.Discrete(num_actions)
        self.np_random, _ = seeding.np_random(None)
        self.state: EnvState | None = None

    def render(self) -> str | None:
        """Each seat's total and boxes used, one line: returned with ``render_mode="ansi"``,
        printed with ``"human"`` (the text is the picture)."""
        mode = getattr(self, "render_mode", None)
        if mode is None or self.state is None:
            return None
        totals = jax.device_get(core.total_scores(self.state, self.params))
        used = jax.device_get(self.state.match.cards.filled.sum(axis=-1))
        seats = zip(self.possible_agents, totals, used, strict=True)
        line = "  ".join(f"{agent}: {total} ({boxes} boxes)" for agent, total, boxes in seats)
        if mode == "human":
            print(line)
            return None
        return line

    def close(self) -> None:
        """Nothing to release (no window)."""

    def observation_space(self, agent: str) -> spaces.Dict:
        """The dict space of every agent's observation (one object: PettingZoo checks it)."""
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Discrete:
        """Discrete(num_actions) for every agent."""
        return self._action_space

    def _new_state(self, seed: int | None) -> None:
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
        # The JAX key comes from the generator: one seed fixes every later match.
        key = jax.random.key(int(self.np_random.integers(2**32, dtype=np.uint64)))
        self.state, self._key, views = _start(key, self.params)
        self.agents = self.possible_agents[:]
        self._read(views)

    def _checked(self, agent: str, action: Any) -> np.int32:
        """`agent`'s action for the jitted step: in the action space (and legal, under
        "raise"), else an `IllegalActionError`."""
        mask = self._masks[self.possible_agents.index(agent)]
        strict = self.illegal_action == "raise"
        return np.int32(
            actions.check_action(action, mask, self.params.rules, agent, mask_checked=strict)
        )

    def _advance(self, action: np.ndarray, every_seat: bool) -> None:
        if self.state is None:
            raise ResetNeeded("call reset() before step()")
        self.state, self._key, views = _advance(
            self.state, action, self._key, self.params, every_seat
        )
        self._read(views)

    def _read(self, views: dict[str, jax.Array]) -> None:
        host = jax.device_get(views)
        self._obs, self._masks = host["obs"], host["masks"].astype(np.int8)
        self._on_turn, self._over = int(host["current_player"]), bool(host["terminated"])
        self._cut = bool(host["truncated"])
        self._rewards = {
            agent: float(host["rewards"][seat]) for seat, agent in enumerate(self.possible_agents)
        }


class YahtzeeAEC(_Match, AECEnv):
    """The match in turns: `agent_selection` is the seat on turn, `last()` its view."""

    metadata: dict[str, Any] = {  # noqa: RUF012
        "name": "yahtzee_jax_match_v0",
        "render_modes": ["ansi", "human"],
        "is_parallelizable": False,
    }

    def __init__(
        self,
        env_id: str = "YahtzeeMatch-v0",
        players: int = 2,
        reward: str = "win",
        illegal_action: str = "raise",
        **params: Any,
    ) -> None:
        """A match of `players` agents of `env_id`, rewarded by `reward`; an illegal action
        raises (or "terminate", "noop"); `render_mode` "ansi" or "human" among `params`."""
        super().__init__()
        self._setup(env_id, players, reward, illegal_action, params)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """A new match; `seed` fixes its dice."""
        self._new_state(seed)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {agent: {} for agent in self.agents}
        self.agent_selection = self.possible_agents[self._on_turn]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """`agent`'s view; its mask is all zeros when it is not on turn."""
        if self.state is None:
            raise ResetNeeded("call reset() before observe()")
        if agent not in self.possible_agents:
            raise ValueError(f"{agent!r} is not an agent of this match: {self.possible_agents}")
        seat = self.possible_agents.index(agent)
        on_turn = agent == self.agent_selection and not self.terminations[agent]
        mask = self._masks[seat] if on_turn else np.zeros_like(self._masks[seat])
        return {"observation": self._obs[seat].copy(), "action_mask": mask.copy()}

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """The agent on turn's view, reward, ends and info (PettingZoo's), after a reset."""
        if self.state is None:
            raise ResetNeeded("call reset() before last()")
        return super().last(observe)

    def step(self, action: Any) -> None:
        """The seat on turn decides; at the match's end every agent is terminated (truncated
        at the step limit); an illegal action as `illegal_action` says."""
        if self.state is None:
            raise ResetNeeded("call reset() before step()")
        if not self.agents:  # each took its dead step: nothing is left to step
            raise ResetNeeded("the match is over and every agent has left: call reset()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        move = self._checked(agent, action)
        self._cumulative_rewards[agent] = 0.0
        self._advance(move, every_seat=False)
        self.rewards = dict(self._rewards)
        if self._over:
            self.terminations = dict.fromkeys(self.agents, True)
        elif self._cut:
            self.truncations = dict.fromkeys(self.agents, True)
        self.agent_selection = self.possible_agents[self._on_turn]
        self._accumulate_rewards()


class YahtzeeParallel(_Match, ParallelEnv):
    """The match a round at a time: every seat takes one decision on its own card per step."""

    metadata: dict[str, Any] = {  # noqa: RUF012
        "name": "yahtzee_jax_match_parallel_v0",
        "render_modes": ["ansi", "human"],
    }

    def __init__(
        self,
        env_id: str = "YahtzeeMatch-v0",
        players: int = 2,
        reward: str = "win",
        illegal_action: str = "raise",
        **params: Any,
    ) -> None:
        """As `YahtzeeAEC`'s, every seat deciding at each step."""
        self._setup(env_id, players, reward, illegal_action, params)

    def _observations(self) -> dict[str, dict[str, np.ndarray]]:
        return {
            agent: {"observation": self._obs[seat].copy(), "action_mask": self._masks[seat].copy()}
            for seat, agent in enumerate(self.possible_agents)
            if agent in self.agents
        }

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A new match: every seat's view and an empty info."""
        self._new_state(seed)
        return self._observations(), {agent: {} for agent in self.agents}

    def step(
        self, moves_: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, Any]]:
        """Every live agent's decision at once; an illegal or missing one as `illegal_action`
        says (every action is checked before anything moves)."""
        if self.state is None or not self.agents:
            raise ResetNeeded("call reset() first: no match is running")
        moves = [self._checked(agent, moves_.get(agent)) for agent in self.possible_agents]
        self._advance(np.stack(moves), every_seat=True)
        live = self.agents
        rewards = {agent: reward for agent, reward in self._rewards.items() if agent in live}
        over, cut = self._over, self._cut
        terminations = dict.fromkeys(live, over)
        truncations = dict.fromkeys(live, cut)
        observations = self._observations()
        infos = {agent: {} for agent in live}
        if over or cut:
            self.agents = []
        return observations, rewards, terminations, truncations, infos


def env(**params: Any) -> YahtzeeAEC:
    """The AEC match (PettingZoo's module-level constructor name)."""
    return YahtzeeAEC(**params)


def parallel_env(**params: Any) -> YahtzeeParallel:
    """The parallel match."""
    return YahtzeeParallel(**params)
