"""The one environment protocol: pure `init`, `step`, `observe` over a params pytree.

In pgx's and gymnax's spirit: `init(key, params)`, `step(state, action, key, params)`,
`observe(state, params, player)`, a legal-action mask and per-player rewards in the state,
`current_player` and `terminated`. Every task is a match (`game.multiplayer`): solitaire is a
match of one seat, the single turn a one-seat match on a random card (`EnvParams.whole_games`
off), and an N-player match either has every seat played from outside (PettingZoo) or one seat
from outside and the others by a built-in agent (`opponent`), whose turns `step` plays before
it returns. The package's solitaire tasks (`envs.solitaire`, which every learner, evaluation and
play of a solitaire game runs) are these functions vmapped; so are the outside adapters
(`suite`). The learners' match (`envs.match`) seats its opponents by lane group instead (see
docs/architecture.md).

The keys are arguments, never state (a planner cannot see future dice). Without an opponent a
key is used as it is: `init`'s deals the card (one seat: exactly `engine.init(key)`), `step`'s
rolls the dice (exactly `engine.step`'s), so a game here is the learners' game dice for dice.
With an opponent each key splits into the outside seat's and the opponent's. An illegal action
leaves the state unchanged with zero rewards, as in the engine; a terminated state steps to
itself with zero rewards, and its mask is all true (pgx's convention: a policy never divides by
zero). A game ends after its last scoring decision: there is no truncation.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs.opponent_features import match_feature_size, match_features
from yahtzee_jax.game import engine, multiplayer
from yahtzee_jax.game.engine import State
from yahtzee_jax.game.multiplayer import MatchState
from yahtzee_jax.game.rules import Rules

REWARDS = ("score", "win")
# Every feature lies in [-1, 1] except the game progress, which reaches 13/12 once the card is
# full (`envs.features`): the observation space's bounds.
OBSERVATION_LOW, OBSERVATION_HIGH = -1.0, 2.0


@struct.dataclass
class EnvParams:
    """What an environment is: its rules, episodes, seats, opponent and reward (static but
    `seat` and the opponent's parameters).

    rules: the rule set (`game.rules.RULE_VARIANTS`).
    whole_games: an episode is a whole game from empty cards; off, one turn on a random card
      (the single turn).
    players: seats at the table (1 for the solitaire tasks).
    reward: "score" (each step's change in the player's total) or "win" (+1, 0 or -1 when the
      match ends, for the sole top score, a share of it, or less).
    opponent: a built-in agent's name playing every seat but `seat`, or None: every seat is
      played from outside.
    opponent_act, opponent_params: that agent's one-state policy and its parameters.
    features: the observation's layout (`envs.features`).
    seat: the seat played from outside when `opponent` is set.
    """

    rules: Rules = struct.field(pytree_node=False)
    whole_games: bool = struct.field(pytree_node=False, default=True)
    players: int = struct.field(pytree_node=False, default=1)
    reward: str = struct.field(pytree_node=False, default="score")
    opponent: str | None = struct.field(pytree_node=False, default=None)
    opponent_act: Any = struct.field(pytree_node=False, default=None)
    opponent_params: Any = None
    features: FeatureConfig = struct.field(pytree_node=False, default=FeatureConfig())
    seat: jax.Array = struct.field(default_factory=lambda: jnp.int32(0))


@struct.dataclass
class EnvState:
    """A position: the match (every seat's card), who moves, the last step's rewards.

    current_player: int32, the seat whose decision it is (the outside seat when `opponent`).
    rewards: float32[P], each seat's reward from the step that produced this state.
    terminated: bool, the episode is over.
    legal_action_mask: bool[num_actions] of `current_player` (all true once terminated).
    """

    match: MatchState
    current_player: jax.Array
    rewards: jax.Array
    terminated: jax.Array
    legal_action_mask: jax.Array


def num_actions(params: EnvParams) -> int:
    """Actions: 32 keeps, then one per box (45 in Yahtzee)."""
    return params.rules.num_actions


def observation_size(params: EnvParams) -> int:
    """Length of `observe`'s vector: the own card's features, then 15 per other seat."""
    return match_feature_size(params.features, params.players, params.players > 1, params.rules)


def from_match(match: MatchState, params: EnvParams, rewards: jax.Array | None = None) -> EnvState:
    """The state of a match position (a test builds one by hand), `rewards` zero by default."""
    if rewards is None:
        rewards = jnp.zeros(params.players)
    return EnvState(
        match=match,
        current_player=match.current_player,
        rewards=rewards.astype(jnp.float32),
        terminated=match.terminated,
        legal_action_mask=multiplayer.legal_action_mask(match, params.rules),
    )


def from_card(card: State, params: EnvParams) -> EnvState:
    """The state of a lone seat without an opponent: its card is all of it (who moves, the
    last reward and the end are the card's), so a batched driver may carry the card alone."""
    match = MatchState(
        cards=multiplayer.stack_cards([card]),
        current_player=jnp.int32(0),
        rewards=card.reward[None],
        terminated=card.terminated,
    )
    return from_match(match, params, match.rewards)


def _first_match(key: jax.Array, params: EnvParams) -> MatchState:
    """The dealt cards: a lone seat's from the key itself (the engine's deal), else seat p's
    from ``fold_in(key, p)``."""
    if params.whole_games:
        return multiplayer.init(key, params.players, params.players == 1, params.rules)
    card = engine.init_single_turn(key, True, params.rules)
    return MatchState(
        cards=multiplayer.stack_cards([card]),
        current_player=jnp.int32(0),
        rewards=jnp.zeros(1, jnp.int32),
        terminated=jnp.bool_(False),
    )


def _opponents_move(
    match: MatchState, rewards: jax.Array, key: jax.Array, params: EnvParams
) -> tuple[MatchState, jax.Array]:
    """The built-in opponent plays every seat's decisions until the outside seat is on turn.

    A while loop, not a fixed scan: vmapped episodes of equal length move in lockstep, so the
    opponent's program runs only on the steps where a turn passes (its score decisions).
    """
    rules, act = params.rules, params.opponent_act

    def waiting(carry: tuple[MatchState, jax.Array, jax.Array]) -> jax.Array:
        match = carry[0]
        return (match.current_player != params.seat) & ~match.terminated

    def decide(
        carry: tuple[MatchState, jax.Array, jax.Array],
    ) -> tuple[MatchState, jax.Array, jax.Array]:
        match, total, count = carry
        policy_key, dice_key = jax.random.split(jax.random.fold_in(key, count))
        action = act(params.opponent_params, multiplayer.current_card(match), policy_key)
        match = multiplayer.step(match, action, dice_key, rules)
        return match, total + match.rewards, count + 1

    match, rewards, _ = jax.lax.while_loop(waiting, decide, (match, rewards, jnp.int32(0)))
    return match, rewards


def _final_rewards(
    before: jax.Array, match: MatchState, rewards: jax.Array, params: EnvParams
) -> jax.Array:
    """`rewards` plus, under the "win" reward, the result on the step that ends the match."""
    if params.reward != "win":
        return rewards
    ended = match.terminated & ~before
    results = multiplayer.outcome(match, params.rules).results
    return jnp.where(ended, results, 0)


def init(key: jax.Array, params: EnvParams) -> EnvState:
    """A fresh episode; seats before the outside one have already played their first turn."""
    if params.opponent is None:
        return from_match(_first_match(key, params), params)
    deal_key, opponent_key = jax.random.split(key)
    opening = jnp.zeros(params.players, jnp.int32)
    match, _ = _opponents_move(_first_match(deal_key, params), opening, opponent_key, params)
    # The opening turns' points are not a reward: no action of the outside seat earned them.
    return from_match(match, params)


def step(state: EnvState, action: jax.Array, key: jax.Array, params: EnvParams) -> EnvState:
    """The player on turn takes `action`; then any built-in opponents take theirs."""
    if params.opponent is None:  # the key rolls the dice, as the engine's step takes it
        match = multiplayer.step(state.match, action, key, params.rules)
        rewards = match.rewards
    else:
        move_key, opponent_key = jax.random.split(key)
        match = multiplayer.step(state.match, action, move_key, params.rules)
        match, rewards = _opponents_move(match, match.rewards, opponent_key, params)
    rewards = _final_rewards(state.terminated, match, rewards, params)
    return from_match(match, params, rewards)


def step_all(state: EnvState, actions: jax.Array, key: jax.Array, params: EnvParams) -> EnvState:
    """Every seat takes one decision on its own card at once (simultaneous turns, `actions[P]`).

    Yahtzee's cards do not interact, so this is the match with each round played at once: a
    seat sees the others' cards as they stood after the last round. Each seat's dice come from
    ``fold_in(key, seat)``.
    """
    rules, cards = params.rules, state.match.cards
    keys = jax.vmap(lambda seat: jax.random.fold_in(key, seat))(jnp.arange(params.players))
    moved = jax.vmap(lambda card, a, k: engine.step(card, a, k, rules))(cards, actions, keys)
    match = state.match.replace(
        cards=moved, rewards=moved.reward, terminated=jnp.all(moved.terminated)
    )
    rewards = _final_rewards(state.terminated, match, moved.reward, params)
    return from_match(match, params, rewards)


def observe(state: EnvState, params: EnvParams, player: jax.Array | int | None = None) -> jax.Array:
    """float32[observation_size]: `player`'s view (default: the player on turn).

    Its own card's features, then for each other seat (in seat order after it) its open boxes,
    upper total and the score difference; never another seat's dice.
    """
    seat = state.current_player if player is None else player
    opponents = params.players > 1
    return match_features(state.match, seat, params.features, params.rules, opponents)


def seat_card(state: EnvState, player: jax.Array | int) -> State:
    """`player`'s own card (the engine's state: what the learners observe alone)."""
    return multiplayer.card(state.match, player)


def seat_legal_action_mask(
    state: EnvState, params: EnvParams, player: jax.Array | int
) -> jax.Array:
    """bool[num_actions]: `player`'s legal actions on its own card (all true once it is full)."""
    return engine.legal_action_mask(seat_card(state, player), params.rules)


def total_scores(state: EnvState, params: EnvParams) -> jax.Array:
    """Each seat's total score so far, bonuses included (int32[P])."""
    return multiplayer.total_scores(state.match, params.rules)
