"""The solitaire tasks: a whole game (39 decisions) and the paper's single turn (section 3.3).

Both are the engine itself, batched: an episode key splits into (init key, play key), the
learner's reward is the change in its total score.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax.envs.base import Environment
from yahtzee_jax.game import engine
from yahtzee_jax.game.engine import State
from yahtzee_jax.game.rules import DECISIONS_PER_TURN


class Game(Environment):
    """Solitaire Yahtzee: a game of 13 turns of keep, keep, score."""

    name = "game"

    def first_card(self, key: jax.Array) -> State:
        """The opening position of one episode."""
        return engine.init(key, self.rules)

    def init(self, keys: jax.Array, task: Any) -> tuple[State, jax.Array]:
        """One fresh card per key; the play key is the key's second half."""
        split = jax.vmap(jax.random.split)(keys)
        return jax.vmap(self.first_card)(split[:, 0]), split[:, 1]

    def step(
        self, state: State, action: jax.Array, dice_keys: jax.Array, decision: jax.Array
    ) -> tuple[State, jax.Array]:
        """The engine's step on every card; the reward is the change in total score."""
        rules = self.rules
        moved = jax.vmap(lambda s, a, k: engine.step(s, a, k, rules))(state, action, dice_keys)
        return moved, moved.reward.astype(jnp.float32)

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

    def first_card(self, key: jax.Array) -> State:
        """A random card with the turn's first roll dealt."""
        return engine.init_single_turn(key, True, self.rules)
