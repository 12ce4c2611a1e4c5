"""The solitaire tasks: a whole game (39 decisions) and the paper's single turn (section 3.3).

Both are the one protocol (`envs.core`) driven over a batch: its pure `init` and `step`
vmapped, with the task's `EnvParams` (one seat, no opponent, the score reward; the single turn
with `whole_games` off). An episode key splits into (init key, play key); the init key deals
the card (exactly `engine.init` or `engine.init_single_turn`), the rollout's dice keys roll
its dice, and the learner's reward is the change in its total score.

The batch carries each episode's card alone: with one seat and no opponent it is the whole
protocol state (`core.from_card` rebuilds the rest), and it is what the learner observes (its
features, legal mask and replay buffer read the card). Carrying the card, not the protocol's
state, keeps the compiled program the engine's own: the learners' results are bit for bit
those of the engine-only environment this replaced (the golden regression), and as fast.
"""

from __future__ import annotations

from typing import Any

import jax

from yahtzee_jax.config import FeatureConfig
from yahtzee_jax.envs import core
from yahtzee_jax.envs.environment import Environment
from yahtzee_jax.game.engine import State
from yahtzee_jax.game.rules import DECISIONS_PER_TURN, Rules


class Game(Environment):
    """Solitaire Yahtzee: a game of 13 turns of keep, keep, score."""

    name = "game"

    def __init__(self, rules: Rules, features: FeatureConfig) -> None:
        super().__init__(rules, features)
        self.env_params = core.EnvParams(
            rules=rules, whole_games=self.whole_games, features=features
        )

    def init(self, keys: jax.Array, task: Any) -> tuple[State, jax.Array]:
        """One fresh episode per key (the protocol's `init` on the key's first half); the play
        key is its second half."""
        split = jax.vmap(jax.random.split)(keys)
        params = self.env_params
        cards = jax.vmap(lambda key: core.seat_card(core.init(key, params), 0))(split[:, 0])
        return cards, split[:, 1]

    def step(
        self, state: State, action: jax.Array, dice_keys: jax.Array, decision: jax.Array
    ) -> tuple[State, jax.Array]:
        """The protocol's `step` on every episode; the reward is the change in total score."""
        params = self.env_params

        def one(card: State, action: jax.Array, key: jax.Array) -> tuple[State, jax.Array]:
            moved = core.step(core.from_card(card, params), action, key, params)
            return core.seat_card(moved, 0), moved.rewards[0]

        return jax.vmap(one)(state, action, dice_keys)

    def observation(self, state: State) -> State:
        """The card is all there is to see."""
        return state


class SingleTurn(Game):
    """One turn on a random card: a uniformly random number of boxes already used, each holding
    the score of an independent random roll (the paper's single-turn task)."""

    name = "single-turn"
    id_suffix = "SingleTurn"
    whole_games = False

    @property
    def episode_length(self) -> int:
        """One turn: keep, keep, score."""
        return DECISIONS_PER_TURN

    @property
    def episodes_per_game(self) -> int:
        """A game's worth of turns."""
        return self.rules.num_turns
