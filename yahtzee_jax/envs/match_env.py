"""The N-player match: the learner in one seat, fixed opponents in the others (issue 14, 27).

The task is the protocol's (`envs.core`): a batch of matches is a batch of its `EnvState`s, the
learner's decisions are its `move`, an opponent's turn is its `seat_turn` and the end reward
its `terminal_rewards`. What this module adds is the learners' batched driver: a learner
episode is still the learner's 39 decisions on its own card; the opponents' turns are taken
between the learner's turns (`start_turn`, `end_turn`). A batch of B matches is cut into P lane
groups: in group g the learner sits in seat g, so the opponents seated before it move in
`start_turn`, those after it in `end_turn`, each only on its group's lanes. An opponent's
program therefore runs on B decisions' worth per turn, not P x B. With two players the groups
are the halves [0, ceil(B/2)) (learner first) and the rest (learner second): game i of an
evaluation sits first when i is even (`evaluation.matches`).

Dice (`core.deal`) are seat-independent: a match key splits into (init key, play key); the
learner's card uses ``fold_in(., 0)`` of each, opponent k's (the k-th player after the learner)
``fold_in(., 1 + k)``; decision d of a card uses ``split(fold_in(its play key, d))`` = (policy
key, dice key), as in solitaire. With `common_dice` every card uses the match's own init and
play keys: each seat rolls the dice its solitaire game from the same key would, so a match of
agents that see only their own card is exactly their solitaire games (tested).

Opponents are `Seat`s: a policy (the one signature, `envs.environment.Policy`) with its parameters,
or the learner's own frozen copy (`self`), whose parameters the environment keeps in its task
state and refreshes every `opponent_refresh` updates. A seat is shown the learner's card as its
other cards [b, 1], or the whole table [b, P-1] (`Seat.sees_table`). The learner's reward is one
of `envs.rewards.REWARDS`: the per-decision part (Yuan's intermediate, the score) here, the end
of the match the protocol's; the moving goal and the frozen opponent are kept across updates
here (`MatchTask`).
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from yahtzee_jax.config import FeatureConfig, MatchConfig
from yahtzee_jax.envs import core
from yahtzee_jax.envs import rewards as match_rewards
from yahtzee_jax.envs.environment import Environment, Metrics, Policy
from yahtzee_jax.envs.opponent_features import match_feature_size, match_features
from yahtzee_jax.game import engine
from yahtzee_jax.game.engine import State
from yahtzee_jax.game.multiplayer import opening
from yahtzee_jax.game.rules import Rules


@dataclasses.dataclass(frozen=True)
class Seat:
    """An opponent: its policy and parameters, or the frozen learner (`self`)."""

    name: str
    policy: Policy
    params: Any = None
    frozen_learner: bool = False  # parameters from the task state, not `params`
    # The policy is shown every other card [b, P-1], in seat order after its own, instead of
    # the learner's card alone [b, 1] (a win planner's `self` seat: its value reads the table)
    sees_table: bool = False


@struct.dataclass
class MatchTask:
    """What the match keeps across updates: the moving goal and the frozen `self` opponent."""

    goal: match_rewards.GoalState
    opponent_params: Any


@struct.dataclass
class MatchEpisode:
    """A batch of matches: the protocol's states [B] (`envs.core.EnvState`: every seat's card
    in seat order, who is on turn, each seat's play key and decision count), the learner in
    seat g on lane group g (`lane_groups`), and this batch's goal and frozen opponent.

    card_rewards: int32[B, P], each seat's reward from its own last decision, which its card's
    `reward` shows the learner (the protocol's cards show the last step's, zero off turn).
    """

    env: core.EnvState
    card_rewards: jax.Array
    goal: jax.Array
    opponent_params: Any

    @property
    def card(self) -> State:
        """The learner's cards [B]."""
        return _seat_cards(self._cards(), 0)

    @property
    def others(self) -> State:
        """The other cards [B, P-1], the k-th player after the learner at index k."""
        players, cards = self.env.match.num_players, self._cards()
        return _stack([_seat_cards(cards, 1 + k) for k in range(players - 1)])

    def _cards(self) -> State:
        return self.env.match.cards.replace(reward=self.card_rewards)

    def moved(self, env: core.EnvState, mover: jax.Array) -> MatchEpisode:
        """This batch with its protocol states `env` after seat `mover` [B] moved."""
        seats = jnp.arange(self.card_rewards.shape[1])
        last = jnp.where(seats == mover[:, None], env.match.rewards, self.card_rewards)
        return self.replace(env=env, card_rewards=last)


@struct.dataclass
class MatchView:
    """What the learner sees: its card [B] and the other cards [B, P-1] (never their dice:
    a card off turn already holds its next opening roll)."""

    card: State
    others: State


def lane_groups(batch: int, players: int) -> list[tuple[int, int]]:
    """Lanes [start, stop) of each seat group: group g has the learner in seat g."""
    bounds = [-(-g * batch // players) for g in range(players + 1)]
    return list(itertools.pairwise(bounds))


def _stack(trees: list[Any]) -> Any:
    return jax.tree.map(lambda *leaves: jnp.stack(leaves, axis=1), *trees)


def _seat_cards(tree: Any, place: int) -> Any:
    """Each lane's leaf [B, ...] of the seat `place` places after the learner, from leaves
    [B, P, ...] in seat order: static slices by lane group, no gather."""
    batch, players = jax.tree.leaves(tree)[0].shape[:2]
    parts = []
    for group, (start, stop) in enumerate(lane_groups(batch, players)):
        if start < stop:
            index = (slice(start, stop), (group + place) % players)
            parts.append(jax.tree.map(lambda leaf, index=index: leaf[index], tree))
    return jax.tree.map(lambda *leaves: jnp.concatenate(leaves), *parts)


def _take_seat(tree: Any, seat: int) -> Any:
    return jax.tree.map(lambda leaf: leaf[:, seat], tree)


def _take(tree: Any, start: int, stop: int, index: int | None = None) -> Any:
    if index is None:
        return jax.tree.map(lambda leaf: leaf[start:stop], tree)
    return jax.tree.map(lambda leaf: leaf[start:stop, index], tree)


def _put(tree: Any, part: Any, start: int, stop: int) -> Any:
    return jax.tree.map(lambda leaf, new: leaf.at[start:stop].set(new), tree, part)


class Match(Environment):
    """The learner against `seats` (one per other player), rewarded by `reward`."""

    name = "match"
    id_suffix = "Match"
    config_class = MatchConfig
    has_opponents = True

    def __init__(
        self,
        rules: Rules,
        features: FeatureConfig,
        seats: tuple[Seat, ...] | None,
        *,
        players: int,
        reward: str,
        opponent_features: bool = True,
        opponent_refresh: int = 100,
        common_dice: bool = False,
    ) -> None:
        super().__init__(rules, features)
        self.seats = seats  # None: an environment to observe with, not to play
        self.num_players = players
        self.reward = reward
        self.opponent_features = opponent_features
        self.opponent_refresh = opponent_refresh
        self.common_dice = common_dice
        # The protocol's params: its seats are played here, by lane group, not by `core.step`
        names = "+".join(seat.name for seat in seats) if seats else "seats"
        self.env_params = core.EnvParams(
            rules=rules,
            players=players,
            reward=reward,
            opponent=names,
            features=features,
            common_dice=common_dice,
        )

    # -- the episode -------------------------------------------------------------------------

    def init(self, keys: jax.Array, task: MatchTask) -> tuple[MatchEpisode, jax.Array]:
        """The protocol's deal of every lane, the learner in its group's seat; the learner's
        play key is its seat's (``fold_in(play key, 0)``)."""
        if self.seats is None or len(self.seats) != self.num_players - 1:
            raise ValueError(f"a match of {self.num_players} players needs its opponents' seats")
        groups = lane_groups(keys.shape[0], self.num_players)
        learner_seats = np.concatenate(
            [np.full(stop - start, g) for g, (start, stop) in enumerate(groups)]
        )
        params = self.env_params
        env = jax.vmap(lambda key, seat: core.deal(key, params, seat))(
            keys, jnp.asarray(learner_seats, jnp.int32)
        )
        episode = MatchEpisode(
            env=env,
            card_rewards=env.match.cards.reward,
            goal=match_rewards.reward_goal(self.reward, task.goal),
            opponent_params=task.opponent_params,
        )
        return episode, _seat_cards(env.play_keys, 0)

    def _seated_before(self, group: int, opponent: int) -> bool:
        # opponent k of group g sits in seat (g + 1 + k) % P: before the learner when it wraps
        return group + 1 + opponent >= self.num_players

    def _opponents_move(self, state: MatchEpisode, before: bool) -> MatchEpisode:
        """A turn of each opponent seated before (or after) the learner, group by group, in
        seat order: the protocol's `seat_turn` on the group's lanes only."""
        env, last, players = state.env, state.card_rewards, self.num_players
        batch = env.current_player.shape[0]
        for group, (start, stop) in enumerate(lane_groups(batch, players)):
            for k, seat in enumerate(self.seats):
                if start == stop or self._seated_before(group, k) != before:
                    continue
                params = state.opponent_params if seat.frozen_learner else seat.params
                lanes = _take(env, start, stop)
                cards = lanes.match.cards.replace(reward=last[start:stop])
                # Shown: the learner's card [b, 1], or every other card in seat order after
                # its own
                own = (group + 1 + k) % players
                learner = _take_seat(cards, group)
                if seat.sees_table:
                    ring = [
                        _take_seat(cards, (group + 1 + i) % players) for i in range(players - 1)
                    ]
                    shown = self._table(_stack(ring), learner, 0, stop - start, k)
                else:
                    shown = jax.tree.map(lambda leaf: leaf[:, None], learner)
                moved = core.seat_turn(lanes, seat.policy, params, self.env_params, shown, own)
                env = _put(env, moved, start, stop)
                last = last.at[start:stop, own].set(moved.match.rewards[:, own])
        return state.replace(env=env, card_rewards=last)

    def _table(self, others: State, learner: State, start: int, stop: int, k: int) -> State:
        """The other cards [b, P-1] as opponent k sees them: the players after it in seat
        order (the learner is the player before opponent 0), from the learner's cards [b] and
        the others' [B, P-1] (k-th player after the learner at index k) on lanes [start, stop)."""
        ring = [learner] + [_take(others, start, stop, i) for i in range(self.num_players - 1)]
        after = [ring[(k + 1 + j) % self.num_players] for j in range(1, self.num_players)]
        return _stack(after)

    def start_turn(self, state: MatchEpisode, turn: jax.Array) -> MatchEpisode:
        """The turn of every opponent seated before the learner (each seat's counter says
        which decisions it is at, so `turn` is not needed)."""
        return self._opponents_move(state, before=True)

    def end_turn(self, state: MatchEpisode, turn: jax.Array) -> MatchEpisode:
        """The turn of every opponent seated after the learner."""
        return self._opponents_move(state, before=False)

    def step(
        self, state: MatchEpisode, action: jax.Array, dice_keys: jax.Array, decision: jax.Array
    ) -> tuple[MatchEpisode, jax.Array]:
        """The learner's decision (the protocol's `move`); its reward before the match is
        decided."""
        params = self.env_params
        env = jax.vmap(core.move, in_axes=(0, 0, 0, None))(state.env, action, dice_keys, params)
        moved = state.moved(env, state.env.current_player)
        reward = match_rewards.step_reward(self.reward, state.card, action, moved.card)
        return moved, reward

    def totals(self, state: MatchEpisode) -> tuple[jax.Array, jax.Array]:
        """(the learner's totals [B], the best opponent's totals [B])."""
        rules = self.rules
        others = jax.vmap(jax.vmap(lambda card: engine.total_score(card, rules)))(state.others)
        return engine.total_score(state.card, rules), jnp.max(others, axis=1)

    def finish(self, state: MatchEpisode, rewards: jax.Array) -> jax.Array:
        """The protocol's end-of-match reward of the learner's seat, added at the last decision
        (not for `score`)."""
        if self.reward == "score":
            return rewards
        params = self.env_params
        final = jax.vmap(lambda match: core.terminal_rewards(match, params, state.goal))(
            state.env.match
        )
        return rewards.at[-1].add(_seat_cards(final, 0))

    def observation(self, state: MatchEpisode) -> MatchView:
        """The learner's card and the others'."""
        return MatchView(state.card, state.others)

    def blank_observation(self) -> MatchView:
        """Fresh cards for the learner and its opponents."""
        others = engine.empty_cards((self.num_players - 1,), self.rules)
        return MatchView(State.empty(self.rules), others)

    @staticmethod
    def card(observation: MatchView) -> State:
        """The learner's own card."""
        return observation.card

    def features(self, observation: MatchView) -> jax.Array:
        """The solitaire features of the learner's card, then Yuan's groups per opponent."""
        config, rules, opponents = self.feature_config, self.rules, self.opponent_features

        def one(card: State, others: State) -> jax.Array:
            cards = jax.tree.map(lambda own, rest: jnp.concatenate([own[None], rest]), card, others)
            return match_features(opening(cards), 0, config, rules, opponents)

        return jax.vmap(one)(observation.card, observation.others)

    def feature_size(self) -> int:
        """The solitaire width plus 15 per opponent when the opponent groups are on."""
        return match_feature_size(
            self.feature_config, self.num_players, self.opponent_features, self.rules
        )

    # -- across episodes ---------------------------------------------------------------------

    def init_task(self, params: Any) -> MatchTask:
        """No games yet (goal 110); the `self` opponent starts as the initial learner."""
        return MatchTask(match_rewards.goal_init(), jax.tree.map(jnp.copy, params))

    def end_task_batch(self, task: MatchTask, state: MatchEpisode) -> MatchTask:
        """Remember this batch's totals for the moving goal."""
        own_total = engine.total_score(state.card, self.rules)
        return task.replace(goal=match_rewards.goal_update(task.goal, own_total))

    def after_update(self, task: MatchTask, params: Any, step: jax.Array) -> MatchTask:
        """Every `opponent_refresh` updates the frozen opponent becomes the learner."""
        refresh = step % self.opponent_refresh == 0
        frozen = jax.tree.map(
            lambda new, old: jnp.where(refresh, new, old), params, task.opponent_params
        )
        return task.replace(opponent_params=frozen)

    def episode_metrics(self, state: MatchEpisode, rewards: jax.Array) -> Metrics:
        """Scores, win and draw rates, return and goal of the batch."""
        own, other = self.totals(state)
        return match_rewards.match_metrics(own, other, rewards, state.goal)
