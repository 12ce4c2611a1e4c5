"""The learners' side of an environment: a task as a lockstep batch of episodes, the driver the
one rollout (`envs.rollout`) runs.

The task's semantics are the one protocol's (`envs.core`: pure `init`, `step`, `observe` over
a params pytree): the solitaire tasks (`envs.solitaire`) are its functions vmapped over the
batch. Every task of this family has episodes of a fixed number of learner decisions (39 for a
game, 3 for a single turn, 39 for a match: the opponents' turns are taken by the environment
between the learner's, in `start_turn` and `end_turn`), so an environment works on a whole
batch at once and the rollout is a plain `lax.scan` with no resets or done masks. Batched, not
only vmapped per episode, so that a match can seat the learner by lane group: the opponents'
programs then run only on the lanes whose turn it is (see `envs.match_env`, which drives the
protocol's states and its opponent turns over the lane groups).

The learner only ever sees an *observation*: the pytree its decision depends on (its own card,
and in a match the other cards). `features` turns it into the network's input and
`legal_action_mask` into its legal actions; a replay buffer stores observations. An
environment may keep state across updates (`task`: a match's moving goal, its frozen `self`
opponent); it lives in the train state and is checkpointed with it.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax.config import EnvConfig, FeatureConfig
from yahtzee_jax.envs.features import batch_features, feature_size
from yahtzee_jax.game import engine
from yahtzee_jax.game.engine import State
from yahtzee_jax.game.rules import Rules

Metrics = dict[str, jax.Array]
# The one policy of every agent, opponent and evaluator: policy(params, own cards [B], the
# other cards it is shown [B, K], keys [B]) -> int32 actions [B]. K = 0 alone (a solitaire
# game: `no_others`); at a match table the other cards in seat order after its own. A policy
# that does not read other cards ignores them.
Policy = Callable[[Any, State, State, jax.Array], jax.Array]


def no_others(own: State) -> State:
    """The other cards of a player alone: cards [B, 0] (K = 0), shaped as `own`'s [B]."""
    return jax.tree.map(
        lambda leaf: jnp.zeros((leaf.shape[0], 0, *leaf.shape[1:]), leaf.dtype), own
    )


class Environment(abc.ABC):
    """A task over a rule variant (static data): init, step, observe, legal actions, metrics."""

    name: str = ""  # the task's name inside the package (`envs.tasks.ENVIRONMENTS`)
    id_suffix: str = ""  # after the game's name in its ids (`envs.tasks.ENV_IDS`)
    num_players: int = 1
    # Its params in a run config's `env` section, beside the id (none for solitaire)
    config_class: type[EnvConfig] = EnvConfig
    # What a task can do, read by learners, the runner and the suite instead of its name:
    has_opponents = False  # other seats play between the learner's turns (`start_turn`, ...)
    whole_games = True  # an episode is a whole game from an empty card, not one turn

    def __init__(self, rules: Rules, features: FeatureConfig) -> None:
        self.rules = rules
        self.feature_config = features

    @property
    def episode_length(self) -> int:
        """The learner's decisions per episode (a game's by default)."""
        return self.rules.decisions_per_game

    @property
    def episodes_per_game(self) -> int:
        """Episodes that make up one game's worth of decisions."""
        return 1

    # -- the episode -------------------------------------------------------------------------

    @abc.abstractmethod
    def init(self, keys: jax.Array, task: Any) -> tuple[Any, jax.Array]:
        """A batch of episodes, one per key: (state, each episode's learner play key)."""

    @abc.abstractmethod
    def step(
        self, state: Any, action: jax.Array, dice_keys: jax.Array, decision: jax.Array
    ) -> tuple[Any, jax.Array]:
        """The learner's actions [B] at decision `decision` (its index in the episode):
        (next state, the learner's reward float32[B])."""

    def start_turn(self, state: Any, turn: jax.Array) -> Any:
        """Before the learner's turn `turn`: the moves of the seats before it (none alone).
        The rollout calls it and `end_turn` only when `has_opponents`."""
        return state

    def end_turn(self, state: Any, turn: jax.Array) -> Any:
        """After the learner's three decisions of turn `turn`: the seats after it move."""
        return state

    def finish(self, state: Any, rewards: jax.Array) -> jax.Array:
        """The learner's rewards [T, B] once the batch ended in `state` (end-of-match rewards
        are only known then); unchanged alone."""
        return rewards

    @abc.abstractmethod
    def observation(self, state: Any) -> Any:
        """What the learner's decision depends on (batched)."""

    def blank_observation(self) -> Any:
        """One unbatched observation with default fields (fixes a replay buffer's layout)."""
        return State.empty(self.rules)

    @staticmethod
    def card(observation: Any) -> State:
        """The learner's own card in an observation."""
        return observation

    # -- what a learner asks of an observation ------------------------------------------------

    def features(self, observation: Any) -> jax.Array:
        """float32[B, F]: the network's input."""
        return batch_features(observation, self.feature_config, self.rules)

    def feature_size(self) -> int:
        """F, the width of `features`."""
        return feature_size(self.feature_config, self.rules)

    def legal_action_mask(self, observation: Any) -> jax.Array:
        """bool[B, 45]: the learner's legal actions."""
        rules = self.rules
        return jax.vmap(lambda card: engine.legal_action_mask(card, rules))(self.card(observation))

    # -- across episodes ---------------------------------------------------------------------

    def init_task(self, params: Any) -> Any:
        """The state the environment keeps across updates (none by default)."""
        return {}

    def end_task_batch(self, task: Any, state: Any) -> Any:
        """The task state after a batch of episodes ended in `state` (unchanged by default)."""
        return task

    def after_update(self, task: Any, params: Any, step: jax.Array) -> Any:
        """The task state once the learner's update `step` (counted from 1) gave `params`."""
        return task

    def episode_metrics(self, state: Any, rewards: jax.Array) -> Metrics:
        """Training scalars of a finished batch (rewards [T, B], the learner's)."""
        return {"train/mean_score": jnp.mean(jnp.sum(rewards, axis=0))}
