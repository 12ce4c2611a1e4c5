"""The N-player match: the learner in one seat, fixed opponents in the others (issue 14, 27).

A learner episode is still the learner's 39 decisions on its own card; the opponents' turns
are taken by the environment between the learner's turns (`start_turn`, `end_turn`). A batch
of B matches is cut into P lane groups: in group g the learner sits in seat g, so the
opponents seated before it move in `start_turn`, those after it in `end_turn`, each only on
its group's lanes. An opponent's program therefore runs on B decisions' worth per turn, not
P x B, and only ever steps its own card. With two players the groups are the halves
[0, ceil(B/2)) (learner first) and the rest (learner second): game i of an evaluation sits
first when i is even (`evaluation.matches`).

Dice are seat-independent: a match key splits into (init key, play key); the learner's card
uses ``fold_in(., 0)`` of each, opponent k's (the k-th player after the learner)
``fold_in(., 1 + k)``; decision d of a card uses ``split(fold_in(its play key, d))`` =
(policy key, dice key), as in solitaire. With `common_dice` every card uses the match's own
init and play keys: each seat rolls the dice its solitaire game from the same key would, so a
match of agents that see only their own card is exactly their solitaire games (tested).

Opponents are `Seat`s: a policy (the one signature, `envs.base.Policy`) with its parameters,
or the learner's own frozen copy (`self`), whose parameters the environment keeps in its task
state and refreshes every `opponent_refresh` updates. A seat is shown the learner's card as its
other cards [b, 1], or the whole table [b, P-1] (`Seat.sees_table`). The learner's reward is one
of `envs.rewards.REWARDS`.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs import rewards as match_rewards
from yahtzee_jax.envs.base import Environment, Metrics, Policy
from yahtzee_jax.envs.opponent_features import match_feature_size, match_features
from yahtzee_jax.game import engine
from yahtzee_jax.game.engine import State
from yahtzee_jax.game.multiplayer import MatchState
from yahtzee_jax.game.rules import DECISIONS_PER_TURN, Rules


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
    """A batch of matches: the learner's cards [B], the opponents' [B, P-1] (k-th player after
    the learner at index k), their play keys, this batch's goal and frozen opponent."""

    card: State
    others: State
    opponent_keys: jax.Array
    goal: jax.Array
    opponent_params: Any


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


def _fold(keys: jax.Array, data: int) -> jax.Array:
    return jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, data)


def _take(tree: Any, start: int, stop: int, index: int | None = None) -> Any:
    if index is None:
        return jax.tree.map(lambda leaf: leaf[start:stop], tree)
    return jax.tree.map(lambda leaf: leaf[start:stop, index], tree)


def _put(tree: Any, part: Any, start: int, stop: int, index: int) -> Any:
    return jax.tree.map(lambda leaf, new: leaf.at[start:stop, index].set(new), tree, part)


class Match(Environment):
    """The learner against `seats` (one per other player), rewarded by `reward`."""

    name = "match"
    id_suffix = "Match"
    has_opponents = True

    def __init__(
        self,
        rules: Rules,
        features: FeatureConfig,
        seats: tuple[Seat, ...] | None,
        players: int = 2,
        reward: str = "win",
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

    # -- the episode -------------------------------------------------------------------------

    def init(self, keys: jax.Array, task: MatchTask) -> tuple[MatchEpisode, jax.Array]:
        """Fresh cards for every seat; the learner's play key is ``fold_in(play key, 0)``."""
        if self.seats is None or len(self.seats) != self.num_players - 1:
            raise ValueError(f"a match of {self.num_players} players needs its opponents' seats")
        split = jax.vmap(jax.random.split)(keys)
        init_keys, play_keys = split[:, 0], split[:, 1]
        rules = self.rules
        deal = jax.vmap(lambda key: engine.init(key, rules))

        def seat_keys(keys: jax.Array, seat: int) -> jax.Array:
            return keys if self.common_dice else _fold(keys, seat)

        card = deal(seat_keys(init_keys, 0))
        opponents = range(self.num_players - 1)
        others = [deal(seat_keys(init_keys, 1 + k)) for k in opponents]
        episode = MatchEpisode(
            card=card,
            others=jax.tree.map(lambda *leaves: jnp.stack(leaves, axis=1), *others),
            opponent_keys=jnp.stack([seat_keys(play_keys, 1 + k) for k in opponents], axis=1),
            goal=match_rewards.reward_goal(self.reward, task.goal),
            opponent_params=task.opponent_params,
        )
        return episode, seat_keys(play_keys, 0)

    def _seated_before(self, group: int, opponent: int) -> bool:
        # opponent k of group g sits in seat (g + 1 + k) % P: before the learner when it wraps
        return group + 1 + opponent >= self.num_players

    def _opponents_move(self, state: MatchEpisode, turn: jax.Array, before: bool) -> MatchEpisode:
        """Turn `turn` of the opponents seated before (or after) the learner, group by group."""
        others = state.others
        batch = state.card.dice.shape[0]
        for group, (start, stop) in enumerate(lane_groups(batch, self.num_players)):
            for k, seat in enumerate(self.seats):
                if start == stop or self._seated_before(group, k) != before:
                    continue
                params = state.opponent_params if seat.frozen_learner else seat.params
                learner = _take(state.card, start, stop)
                shown = jax.tree.map(lambda leaf: leaf[:, None], learner)  # [b, 1]
                own = self._opponent_turn(
                    seat,
                    params,
                    _take(others, start, stop, k),
                    self._table(others, learner, start, stop, k) if seat.sees_table else shown,
                    state.opponent_keys[start:stop, k],
                    turn,
                )
                others = _put(others, own, start, stop, k)
        return state.replace(others=others)

    def _table(self, others: State, learner: State, start: int, stop: int, k: int) -> State:
        """The other cards [b, P-1] as opponent k sees them: the players after it in seat
        order (the learner is the player before opponent 0)."""
        ring = [learner] + [_take(others, start, stop, i) for i in range(self.num_players - 1)]
        after = [ring[(k + 1 + j) % self.num_players] for j in range(1, self.num_players)]
        return jax.tree.map(lambda *leaves: jnp.stack(leaves, axis=1), *after)

    def _opponent_turn(
        self,
        seat: Seat,
        params: Any,
        own: State,
        shown: State,
        play_keys: jax.Array,
        turn: jax.Array,
    ) -> State:
        """An opponent's three decisions on its own cards (a lane subset), `shown` the other
        cards [b, K] its policy is shown."""
        rules = self.rules

        # A scan over the rolls, not an unrolled loop: the opponent's (large) program is
        # compiled once per group instead of three times.
        def decide(own: State, roll: jax.Array) -> tuple[State, None]:
            decision = turn * DECISIONS_PER_TURN + roll
            split = jax.vmap(lambda key: jax.random.split(jax.random.fold_in(key, decision)))(
                play_keys
            )
            actions = seat.policy(params, own, shown, split[:, 0])
            moved = jax.vmap(lambda s, a, k: engine.step(s, a, k, rules))(own, actions, split[:, 1])
            return moved, None

        return jax.lax.scan(decide, own, jnp.arange(DECISIONS_PER_TURN))[0]

    def start_turn(self, state: MatchEpisode, turn: jax.Array) -> MatchEpisode:
        """The turn of every opponent seated before the learner."""
        return self._opponents_move(state, turn, before=True)

    def end_turn(self, state: MatchEpisode, turn: jax.Array) -> MatchEpisode:
        """The turn of every opponent seated after the learner."""
        return self._opponents_move(state, turn, before=False)

    def step(
        self, state: MatchEpisode, action: jax.Array, dice_keys: jax.Array, decision: jax.Array
    ) -> tuple[MatchEpisode, jax.Array]:
        """The learner's decision on its own card; its reward before the match is decided."""
        rules = self.rules
        card = state.card
        moved = jax.vmap(lambda s, a, k: engine.step(s, a, k, rules))(card, action, dice_keys)
        reward = match_rewards.step_reward(self.reward, card, action, moved)
        return state.replace(card=moved), reward

    def totals(self, state: MatchEpisode) -> tuple[jax.Array, jax.Array]:
        """(the learner's totals [B], the best opponent's totals [B])."""
        rules = self.rules
        others = jax.vmap(jax.vmap(lambda card: engine.total_score(card, rules)))(state.others)
        return engine.total_score(state.card, rules), jnp.max(others, axis=1)

    def finish(self, state: MatchEpisode, rewards: jax.Array) -> jax.Array:
        """The end-of-match reward added at the last decision (not for `score`)."""
        if self.reward == "score":
            return rewards
        own, other = self.totals(state)
        final = match_rewards.terminal_reward(self.reward, own, other, state.goal)
        return rewards.at[-1].add(final)

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
            match = MatchState(
                cards=cards,
                current_player=jnp.int32(0),
                rewards=jnp.zeros(self.num_players, jnp.int32),
                terminated=jnp.bool_(False),
            )
            return match_features(match, 0, config, rules, opponents)

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
