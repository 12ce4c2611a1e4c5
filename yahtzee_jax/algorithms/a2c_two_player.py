"""A2C in the two-player task (issue 14): the win-seeking learner, composed from the A2C pieces.

The update is A2C's (lambda-return targets, the actor-critic loss of eqs. 15/17 with the entropy
bonuses and upper-head regression, one gradient step; see `loss`) on a rollout of B matches
from `two_player.play_matches` instead of B solitaire games. The learner samples from its
network with per-decision dropout seeds as the solitaire rollout does; its input is the
solitaire features plus Yuan's opponent groups; its reward is `algo.reward` (default `win`:
+1 / 0 / -1 at the last decision). `algo.init_from` starts from a trained solitaire
actor-critic run: its weights, with zero weights on the new opponent inputs (the same policy
at the start) and a zeroed value output (a win-scale critic).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from yahtzee_jax import two_player
from yahtzee_jax.agents.base import Agent
from yahtzee_jax.algorithms import actor_critic
from yahtzee_jax.algorithms.a2c import A2CConfig
from yahtzee_jax.algorithms.base import Algorithm, Context, Metrics, TrainState
from yahtzee_jax.algorithms.common import (
    keep_action_stats,
    lambda_returns,
    masked_mean,
    optimizer_step,
)
from yahtzee_jax.algorithms.rollout import (
    Trajectory,
    apply_network,
    decision_keys,
    decision_record,
    policy_extras,
)
from yahtzee_jax.config import Config, require
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.game.engine import LAST_ROLL, State, legal_action_mask, total_score
from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.networks import VALUE_OUTPUT, entropy, policy_log_probs, value_head_modules


@dataclasses.dataclass(frozen=True)
class A2CMatchConfig(A2CConfig):
    """A2C against an opponent: the actor-critic fields plus the two-player task's."""

    name: str = "a2c-2p"
    opponent: str = "random"  # optimal | greedy1-3 | random | self (presets name theirs)
    reward: str = "win"  # win | naive | gradient | fixed | moving-average | score
    opponent_features: bool = True
    opponent_refresh: int = 100  # updates between copies of the learner into a `self` opponent
    init_from: str = ""  # a solitaire actor-critic run (or checkpoint) to start from
    # Fraction of the updates, at the start, in which only the value head learns: the policy
    # stays the warm start's while the critic learns the new reward's scale.
    critic_warmup: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        two_player.check_settings(self.opponent, self.reward, self.opponent_refresh)
        require(self.opponent != "none", "algo.opponent='none' is the solitaire task: use a2c")
        require(
            0.0 <= self.critic_warmup < 1.0,
            f"algo.critic_warmup={self.critic_warmup} must be in [0, 1)",
        )
        require(
            self.shaping_weight == 0,
            "algo.shaping_weight must be 0 for a2c-2p (its rewards are algo.reward's)",
        )

    def check(self, config: Config) -> None:
        """Matches are whole games."""
        super().check(config)
        require(config.train.task == "game", "algo.name=a2c-2p needs train.task=game")


@struct.dataclass
class MatchExtra:
    """Beside the network: the moving-average goal and the frozen `self` opponent."""

    goal: two_player.GoalState
    opponent_params: Any


def init_params(context: Context, key: jax.Array) -> Any:
    """Fresh parameters on the two-player input width, or the `init_from` run's, widened."""
    config = context.config
    width = two_player.input_size(config)
    fresh = context.network.init(key, jnp.zeros((1, width), jnp.float32))["params"]
    if not config.algo.init_from:
        return fresh
    from yahtzee_jax.checkpointing import load_checkpoint

    if not Path(config.algo.init_from).exists():
        # The presets' warm start is a run, not a file in the repository: say how to make it.
        raise ConfigError(
            f"algo.init_from={config.algo.init_from!r} does not exist: train a solitaire run "
            "with the same network and features there first (a2c-win's: yahtzee-jax train "
            "--preset paper-a2c-shaping --out runs/paper-a2c-shaping), or start from scratch "
            "with --set algo.init_from="
        )
    state, source, _ = load_checkpoint(config.algo.init_from)
    if source.network != config.network or source.features != config.features:
        raise ConfigError(
            f"algo.init_from={config.algo.init_from!r} has another network or features section"
        )
    params = jax.tree.map(np.asarray, state["params"])
    first = params["Block_0"]["Dense_0"]["kernel"]
    extra_rows = width - first.shape[0]
    # Zero weights on the opponent inputs: the warm-started policy is the solitaire policy.
    params["Block_0"]["Dense_0"]["kernel"] = np.concatenate(
        [first, np.zeros((extra_rows, first.shape[1]), first.dtype)]
    )
    # The value output restarts at 0: a win-scale critic, not the score-to-go it predicted.
    value = params[VALUE_OUTPUT]
    params[VALUE_OUTPUT] = {name: np.zeros_like(leaf) for name, leaf in value.items()}
    params = jax.tree.map(jnp.asarray, params)
    if jax.tree.structure(params) != jax.tree.structure(fresh):
        raise ConfigError(f"algo.init_from={config.algo.init_from!r}: parameters do not match")
    return params


def init_extra(context: Context, params: Any) -> MatchExtra:
    """No games yet (goal 110); the `self` opponent starts as the initial learner."""
    return MatchExtra(two_player.goal_init(), jax.tree.map(jnp.copy, params))


def sampling_policy(context: Context, params: Any) -> two_player.LearnerPolicy:
    """The behaviour policy in a match: sample from the network, dropout seed per decision."""
    config, rules = context.config, context.rules
    opponents = two_player.uses_opponent_features(config)

    def policy(own: State, other: State, keys: jax.Array) -> tuple[jax.Array, dict]:
        action_keys, seeds = decision_keys(keys)
        x = two_player.pair_features(own, other, config.features, rules, opponents)
        legal = jax.vmap(lambda state: legal_action_mask(state, rules))(own)
        output = apply_network(context.network, params, x, seeds)
        log_probs = policy_log_probs(output, legal, own.roll_index)
        action = jax.vmap(jax.random.categorical)(action_keys, log_probs).astype(jnp.int32)
        return action, policy_extras(x, legal, output, log_probs, action, seeds)

    return policy


def _record(own: State, other: State, action: jax.Array, moved: State, extras: dict) -> tuple:
    reward = jnp.zeros(action.shape, jnp.float32)  # set once the match is over
    return decision_record(own, action, reward, moved, extras), (own, moved)


def loss(
    params: Any, context: Context, trajectory: Trajectory, target: jax.Array, step: jax.Array
) -> tuple[jax.Array, Metrics]:
    """A2C's loss (eqs. 15/17 with the entropy bonuses and the upper-head regression) on the
    match trajectory, one full forward pass with each decision's own dropout masks.

    The actor-critic pieces are `actor_critic`'s (`policy_value_terms`, the entropy schedules,
    the upper targets); the forward pass is this module's own so that the two-player learner
    does not depend on the solitaire rollout's batch layout.
    """
    algo = context.config.algo
    output = apply_network(context.network, params, trajectory.features, trajectory.dropout_seed)
    log_probs = policy_log_probs(output, trajectory.legal_mask, trajectory.roll_index)
    taken = jnp.take_along_axis(log_probs, trajectory.action[..., None], axis=-1)[..., 0]
    main, metrics = actor_critic.policy_value_terms(
        taken, output.value, target, algo.value_coef, algo.normalize_advantage
    )
    per_decision = entropy(log_probs)
    keeping = trajectory.roll_index < LAST_ROLL
    entropies = (masked_mean(per_decision, keeping), masked_mean(per_decision, ~keeping))
    auxiliary, aux_metrics = actor_critic.auxiliary_terms(
        context, step, entropies, output.upper, trajectory
    )
    total = main + auxiliary
    metrics |= {"loss/total": total, **aux_metrics}
    return total, metrics


def value_head_only(config: Config, grads: Any, active: jax.Array) -> Any:
    """Where `active`, zero every gradient outside the value head (Adam then leaves those
    parameters as they are: zero moments give a zero step)."""
    value_head = value_head_modules(config.network)
    return {
        module: jax.tree.map(lambda g: jnp.where(active, jnp.zeros_like(g), g), leaves)
        if module not in value_head
        else leaves
        for module, leaves in grads.items()
    }


def update(context: Context, state: TrainState) -> tuple[TrainState, Metrics]:
    """B matches with the sampling policy, rewards by `algo.reward`, then A2C's gradient step."""
    config, algo = context.config, context.config.algo
    key, rollout_key = jax.random.split(state.key)
    keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(
        rollout_key, jnp.arange(config.train.games_per_update)
    )
    result = two_player.play_matches(
        sampling_policy(context, state.params),
        two_player.match_opponent(context.config, context.rules, state.extra.opponent_params),
        keys,
        context.rules,
        _record,
    )
    trajectory, (before, moved) = result.records
    own_total, other_total = total_score(result.learner), total_score(result.opponent)
    goal = two_player.reward_goal(algo.reward, state.extra.goal)
    rewards = two_player.learner_rewards(
        algo.reward, before, trajectory.action, moved, own_total, other_total, goal
    )
    trajectory = trajectory._replace(reward=rewards)
    state = state.replace(key=key)
    target = lambda_returns(rewards, trajectory.value, algo.gamma, algo.gae_lambda)
    grads, metrics = jax.grad(loss, has_aux=True)(
        state.params, context, trajectory, target, state.step
    )
    if algo.critic_warmup > 0:
        warming = state.step < int(algo.critic_warmup * config.train.total_updates)
        grads = value_head_only(config, grads, warming)
        metrics |= {"schedule/critic_warmup": warming.astype(jnp.float32)}
    params, opt_state, grad_metrics = optimizer_step(context, state.params, state.opt_state, grads)
    state = state.replace(params=params, opt_state=opt_state, step=state.step + 1)
    metrics |= grad_metrics
    refresh = state.step % algo.opponent_refresh == 0
    opponent_params = jax.tree.map(
        lambda new, old: jnp.where(refresh, new, old), state.params, state.extra.opponent_params
    )
    extra = MatchExtra(two_player.goal_update(state.extra.goal, own_total), opponent_params)
    metrics |= {
        **two_player.match_metrics(own_total, other_total, rewards, goal),
        **keep_action_stats(trajectory.action, trajectory.roll_index),
        "schedule/gamma": jnp.asarray(algo.gamma, jnp.float32),
    }
    return state.replace(extra=extra), metrics


def make_agent(config: Config, params: Any, name: str) -> Agent:
    """The greedy agent; in a match it reads the opponent's card, alone (solitaire `evaluate`)
    it sees an empty one."""
    rules = get_rules(config.train.rules)
    return Agent(
        name=name,
        act=two_player.solitaire_act(config, rules),
        params=params,
        rules=rules,
        match_act=two_player.match_act(config, rules),
    )


ALGORITHM = Algorithm(
    name="a2c-2p",
    config_class=A2CMatchConfig,
    update=update,
    make_agent=make_agent,
    init_extra=init_extra,
    init_params=init_params,
)
