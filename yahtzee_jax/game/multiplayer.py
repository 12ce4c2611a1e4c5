"""N-player Yahtzee: every player's solitaire card in one pure state, turns in seat order.

A match stacks one engine `State` per player (``cards``, leading axis = seat) and says whose
turn it is. A turn is the engine's keep, keep, score on the current player's card, through
`engine.step` and `engine.legal_action_mask` themselves: the rules live only in `rules.py`, and
nothing here scores dice. After a player scores a box the turn passes to the next seat; the
match ends when every card is full (a turn per box each: 39 x P decisions in Yahtzee). Like the
solitaire engine, `step` is pure, jittable and vmappable, the key is always an argument, an
illegal action leaves the match unchanged with zero rewards, and a terminated match steps to
itself. The cards follow the rule set given to `init`.

A card that is not on turn already holds the dice its next turn opens with: the engine rolls a
turn's opening dice when the previous box is scored. Observations of the match for one player
(`yahtzee_jax.envs.opponent_features`) therefore never show another player's dice.

Common dice: `init(..., common_dice=True)` and `decision_keys` give every seat the same dice
key for its own k-th decision (the key that a solitaire game gives its decision k), so all seats
open every turn with the same roll and draw the same fresh faces at each re-roll. The match
environment (`envs.match_env`, `common_dice`) plays matches; this module is the state a person's
terminal match steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from yahtzee_jax.game import engine
from yahtzee_jax.game.engine import State
from yahtzee_jax.game.rules import Rules

WIN, DRAW, LOSS = 1, 0, -1


@struct.dataclass
class MatchState:
    """A match position: its cards (`stack_cards`, any rule set's) and the rest defaulted.

    cards: engine `State` with a leading player axis [P] on every field (their `reward` field
      is the same as `rewards`).
    current_player: int32, the seat whose decision it is.
    rewards: int32[P], each player's change in total score from the step that produced this
      state (only the player who moved can be non-zero).
    terminated: bool, every card is full.
    """

    cards: State
    current_player: jax.Array = struct.field(default_factory=lambda: jnp.int32(0))
    rewards: jax.Array = struct.field(default_factory=lambda: jnp.zeros(2, jnp.int32))
    terminated: jax.Array = struct.field(default_factory=lambda: jnp.bool_(False))

    @property
    def num_players(self) -> int:
        """Number of seats (static: the length of the player axis)."""
        return self.cards.scores.shape[-2]


class Outcome(NamedTuple):
    """The result of a finished match for every player.

    results: int32[P], WIN (1) for the sole top score, DRAW (0) when tied for the top score,
      LOSS (-1) otherwise.
    margins: int32[P], own total minus the best total among the other players.
    """

    results: jax.Array
    margins: jax.Array


def stack_cards(cards: Sequence[State]) -> State:
    """One `State` with a leading player axis from one card per seat."""
    return jax.tree.map(lambda *fields: jnp.stack(fields), *cards)


def opening(cards: State) -> MatchState:
    """The match of `cards` (stacked, one per seat) before anyone has moved: seat 0 on turn."""
    seats = cards.scores.shape[-2]
    return MatchState(
        cards=cards,
        current_player=jnp.int32(0),
        rewards=jnp.zeros(seats, jnp.int32),
        terminated=jnp.bool_(False),
    )


def card(state: MatchState, player: jax.Array | int) -> State:
    """The card (engine `State`) of `player` in one unbatched match."""
    return jax.tree.map(lambda field: field[player], state.cards)


def current_card(state: MatchState) -> State:
    """The card of the player on turn."""
    return card(state, state.current_player)


def init(key: jax.Array, num_players: int, common_dice: bool, rules: Rules) -> MatchState:
    """Start a match: empty cards, seat 0 on turn; every card shows its first roll.

    With `common_dice` every card opens with the same roll (from `key`); otherwise seat p's
    roll comes from ``fold_in(key, p)``. One seat is allowed: a solitaire game in match form.
    """
    if num_players < 1:
        raise ValueError(f"a match needs at least one player, got {num_players}")
    seat_keys = [key if common_dice else jax.random.fold_in(key, p) for p in range(num_players)]
    return opening(stack_cards([engine.init(seat_key, rules) for seat_key in seat_keys]))


def legal_action_mask(state: MatchState, rules: Rules) -> jax.Array:
    """Legal actions of the player on turn, bool[num_actions] (all true once terminated)."""
    return engine.legal_action_mask(current_card(state), rules) | state.terminated


def step(state: MatchState, action: jax.Array, key: jax.Array, rules: Rules) -> MatchState:
    """The player on turn takes one decision on their own card; the key supplies the dice."""
    if state.num_players == 1:
        return _step_alone(state, action, key, rules)
    player = state.current_player
    before = current_card(state)
    after = engine.step(before, action, key, rules)
    on_turn = jnp.arange(state.num_players) == player

    def put(cards_field: jax.Array, new_field: jax.Array) -> jax.Array:
        # Write the moved card back into its seat only; every other card is left bit-identical.
        seat_mask = on_turn.reshape((-1,) + (1,) * new_field.ndim)
        return jnp.where(seat_mask, new_field[None], cards_field)

    rewards = jnp.where(on_turn, after.reward, 0).astype(jnp.int32)
    # Each card's `reward` mirrors `rewards`: a card off turn did not gain anything this step.
    cards = jax.tree.map(put, state.cards, after).replace(reward=rewards)
    # The engine decrements turns_left exactly when a box is scored: then the next seat moves.
    turn_over = after.turns_left < before.turns_left
    return MatchState(
        cards=cards,
        current_player=jnp.where(turn_over, (player + 1) % state.num_players, player).astype(
            jnp.int32
        ),
        rewards=rewards,
        terminated=jnp.all(cards.terminated),
    )


def _step_alone(state: MatchState, action: jax.Array, key: jax.Array, rules: Rules) -> MatchState:
    """`step` with one seat, always on turn: the engine's step on its card and nothing else, so
    that a solitaire game compiles to the engine's own program (the learners' games run it)."""
    after = engine.step(card(state, 0), action, key, rules)
    return MatchState(
        cards=stack_cards([after]),
        current_player=state.current_player,
        rewards=after.reward[None],
        terminated=after.terminated,
    )


def total_scores(state: MatchState, rules: Rules) -> jax.Array:
    """Each player's total score so far, bonuses included (int32[P])."""
    return engine.total_score(state.cards, rules)


def outcome(state: MatchState, rules: Rules) -> Outcome:
    """Win/draw/loss and margin of every player, from the totals as they stand (P >= 2)."""
    if state.num_players < 2:
        raise ValueError("a match outcome needs at least two players")
    totals = total_scores(state, rules)
    others = jnp.where(jnp.eye(state.num_players, dtype=bool), jnp.iinfo(jnp.int32).min, totals)
    best_other = jnp.max(others, axis=-1)
    margins = totals - best_other
    results = jnp.sign(margins).astype(jnp.int32)
    return Outcome(results=results, margins=margins.astype(jnp.int32))


def decision_keys(
    play_key: jax.Array, seat: int, decision: jax.Array | int, common_dice: bool = True
) -> tuple[jax.Array, jax.Array]:
    """(policy key, dice key) of `seat`'s `decision`-th decision (0..38 in Yahtzee) in a match.

    As in `yahtzee_jax.envs.solitaire_play.play`, decision k uses ``split(fold_in(base, k))``;
    the base is the match's play key for every seat with `common_dice` (same dice stream per
    seat), else ``fold_in(play_key, seat)``. The policy key is folded with the seat so that two
    seats never share their choices' randomness.
    """
    base = play_key if common_dice else jax.random.fold_in(play_key, seat)
    policy_key, dice_key = jax.random.split(jax.random.fold_in(base, decision))
    return jax.random.fold_in(policy_key, seat), dice_key
