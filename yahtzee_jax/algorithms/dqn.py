"""Double DQN over the 45 actions with an on-device replay buffer, fused in the compiled chunk.

One update, as purejaxrl's DQN but with B whole games per update instead of one env step:

1. play B games in lockstep through the one play loop, epsilon-greedy over the legal actions of
   the online Q network (epsilon on its own hold-anneal schedule, a function of the update);
2. add their B x 39 transitions to the replay buffer: flashbax's flat buffer, with the B games
   as its B add lanes, so a sampled pair of consecutive entries of one lane is (s, s');
3. take `gradient_steps` optimizer steps, each on `batch_size` transitions drawn uniformly from
   the written entries, on the Huber loss against the double-DQN target

       y = r + gamma (1 - done) Q_target(s', argmax_{a' legal in s'} Q_online(s', a'))

   (online network picks, target network evaluates; r is the game's reward x `reward_scale`);
4. after every `target_update_interval` optimizer steps move the target network towards the
   online one: theta' <- tau theta + (1 - tau) theta' (tau = 1: a hard copy).

The Q network is its own module (`QNetwork`): the actor-critic network's roll head ends in a
log-softmax (outputs normalised per state, all <= 0), so its outputs cannot carry the absolute
level a Q-value needs; a linear 45-way head on the same trunk blocks can. The buffer stores the
engine's compact `State` (about 115 bytes a transition) rather than features (about 650 bytes
with s' and its legal mask): the features are recomputed for each sampled minibatch, a small
cost next to the network, and buffers and checkpoints stay about 6x smaller.

Any environment: the buffer keeps the environment's observations (in a match the other cards
too, the input of the opponent groups) and the learner's rewards as the environment gives them
(a match's end reward is set once the match is over).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import flashbax as fbx
import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct

from yahtzee_jax import envs
from yahtzee_jax.agents.agent import uniform_legal_action
from yahtzee_jax.algorithms import acting
from yahtzee_jax.algorithms.algorithm import Algorithm, Context, Metrics, TrainState
from yahtzee_jax.algorithms.common import (
    gradient_steps_per_update,
    keep_action_stats,
    learning_rate_at,
    optimizer_step,
)
from yahtzee_jax.algorithms.schedules import hold_anneal_schedule
from yahtzee_jax.config import AlgoConfig, Config, require
from yahtzee_jax.envs.environment import Environment
from yahtzee_jax.envs.rollout import episode_keys, rollout
from yahtzee_jax.networks.q_network import QNetwork


@dataclasses.dataclass(frozen=True)
class DQNConfig(AlgoConfig):
    """Double DQN: replay buffer, target network, epsilon schedule and TD loss settings."""

    name: str = "dqn"
    gamma: float = 1.0  # a game is 39 decisions long and always ends: no discount needed
    reward_scale: float = 0.01  # Q in hundreds of points: Adam's steps are ~lr in any unit
    buffer_size: int = 200_000  # transitions kept (rounded down to a multiple of B)
    batch_size: int = 256  # transitions per optimizer step
    gradient_steps: int = 64  # optimizer steps per update (per B games played)
    target_update_interval: int = 1  # optimizer steps between target updates
    target_tau: float = 0.005  # 1: hard copy; < 1: Polyak averaging
    epsilon_start: float = 1.0
    epsilon_end: float = 0.05
    epsilon_hold: float = 0.0  # fraction of the updates at epsilon_start
    epsilon_anneal: float = 0.3  # fraction of the updates over which epsilon falls linearly
    huber_delta: float = 1.0  # in scaled reward units
    # weight of the Monte-Carlo return-to-go in the target: (1 - m) y_double_dqn + m G_t
    # (0: one-step double DQN; the bonus at the game's end reaches early decisions only through
    # 39 bootstraps, where G_t carries it at once, as td-planner's target ablation found)
    mc_mix: float = 0.0

    def __post_init__(self) -> None:
        require(0.0 <= self.gamma <= 1.0, f"algo.gamma={self.gamma} must be in [0, 1]")
        require(self.reward_scale > 0, f"algo.reward_scale={self.reward_scale} must be > 0")
        for field in ("buffer_size", "batch_size", "gradient_steps", "target_update_interval"):
            value = getattr(self, field)
            require(value >= 1, f"algo.{field}={value} must be >= 1")
        require(
            0.0 < self.target_tau <= 1.0, f"algo.target_tau={self.target_tau} must be in (0, 1]"
        )
        for field in ("epsilon_start", "epsilon_end", "epsilon_hold", "epsilon_anneal"):
            value = getattr(self, field)
            require(0.0 <= value <= 1.0, f"algo.{field}={value} must be in [0, 1]")
        require(
            self.epsilon_hold + self.epsilon_anneal <= 1.0,
            "algo.epsilon_hold + algo.epsilon_anneal must be <= 1",
        )
        require(self.huber_delta > 0, f"algo.huber_delta={self.huber_delta} must be > 0")
        require(0.0 <= self.mc_mix <= 1.0, f"algo.mc_mix={self.mc_mix} must be in [0, 1]")

    def check(self, config: Config) -> None:
        """The buffer must hold one update's games; the network options must mean something."""
        per_update = envs.episodes_per_update(config) * envs.episode_length(config)
        require(
            self.buffer_size >= per_update,
            f"algo.buffer_size={self.buffer_size} must hold one update's transitions "
            f"({per_update} = train.games_per_update x decisions per game)",
        )
        require(
            self.batch_size <= self.buffer_size,
            f"algo.batch_size={self.batch_size} must be <= algo.buffer_size={self.buffer_size}",
        )
        network = config.network
        # The Q network never draws dropout masks and has one 45-way head: refuse what it ignores.
        require(network.dropout == 0, f"network.dropout={network.dropout} must be 0 for dqn")
        require(
            network.roll_head == "categorical",
            f"network.roll_head={network.roll_head!r} has no meaning for dqn (one Q head)",
        )
        require(not network.upper_head, "network.upper_head=true has no meaning for dqn")


# --------------------------------------------------------------------------------------------
# Network, target, schedule
# --------------------------------------------------------------------------------------------


def make_network(config: Config) -> QNetwork:
    """The online (and target) Q network of a config."""
    return QNetwork(config.network, envs.rules_of(config).num_actions)


def masked_argmax(q: jax.Array, legal: jax.Array) -> jax.Array:
    """The legal action of highest Q along the last axis (int32)."""
    return jnp.argmax(jnp.where(legal, q, -jnp.inf), axis=-1).astype(jnp.int32)


def double_q_target(
    reward: jax.Array,
    done: jax.Array,
    next_q_online: jax.Array,
    next_q_target: jax.Array,
    next_legal: jax.Array,
    gamma: float,
) -> jax.Array:
    """r + gamma (1 - done) Q_target(s', argmax_legal Q_online(s', .)), batched over axis 0."""
    best = masked_argmax(next_q_online, next_legal)
    bootstrap = jnp.take_along_axis(next_q_target, best[:, None], axis=-1)[:, 0]
    # At a terminal s' no action is legal and `best` is 0: the (finite) value is multiplied by 0.
    return reward + gamma * jnp.where(done, 0.0, bootstrap)


def epsilon_at(context: Context, step: jax.Array) -> jax.Array:
    """Exploration rate of update `step`: hold, linear anneal, hold."""
    algo = context.config.algo
    schedule = hold_anneal_schedule(
        algo.epsilon_start,
        algo.epsilon_end,
        algo.epsilon_hold,
        algo.epsilon_anneal,
        context.config.train.total_updates,
    )
    return jnp.asarray(schedule(step), jnp.float32)


def soft_update(target: Any, online: Any, tau: float) -> Any:
    """theta' <- tau theta + (1 - tau) theta'; tau = 1 copies `online` exactly."""
    if tau == 1.0:
        return jax.tree.map(jnp.copy, online)
    return optax.incremental_update(online, target, tau)


# --------------------------------------------------------------------------------------------
# Replay buffer
# --------------------------------------------------------------------------------------------


class Record(NamedTuple):
    """One decision as the buffer keeps it; the next entry of its lane holds s'."""

    state: Any  # the environment's observation the decision was taken on
    action: jax.Array  # int32
    reward: jax.Array  # float32, the environment's reward to the learner, unscaled
    done: jax.Array  # bool, the decision ended the episode
    return_to_go: jax.Array  # float32, sum_k gamma^k r_{t+k} to the episode's end, unscaled


@struct.dataclass
class ReplayState:
    """flashbax's buffer state as a flax dataclass (Orbax and flax serialisation restore it)."""

    experience: Record  # every leaf [B lanes, buffer_size // B, ...]
    current_index: jax.Array
    is_full: jax.Array


@struct.dataclass
class DQNExtra:
    """What DQN keeps beside the online network: the target network and the replay buffer."""

    target_params: Any
    buffer: ReplayState


def make_buffer(config: Config) -> Any:
    """flashbax flat buffer: B add lanes (one game each per update), pairs (s, s') sampled."""
    lanes = envs.episodes_per_update(config)
    return fbx.make_flat_buffer(
        max_length=config.algo.buffer_size,
        # min_length // lanes + 1 = 2 entries per lane: one update's add is always enough
        min_length=lanes,
        sample_batch_size=config.algo.batch_size,
        add_sequences=True,
        add_batch_size=lanes,
    )


def _to_flashbax(buffer: ReplayState) -> Any:
    return fbx.buffers.trajectory_buffer.TrajectoryBufferState(
        experience=buffer.experience,
        current_index=buffer.current_index,
        is_full=buffer.is_full,
    )


def _from_flashbax(buffer: Any) -> ReplayState:
    return ReplayState(buffer.experience, buffer.current_index, buffer.is_full)


def empty_record(env: Environment) -> Record:
    """One decision's record with default fields: fixes the buffer's shapes and dtypes."""
    blank = env.blank_observation()
    return Record(blank, jnp.int32(0), jnp.float32(0.0), jnp.bool_(False), jnp.float32(0.0))


def buffer_init(config: Config, env: Environment) -> ReplayState:
    """An empty buffer for a config's environment."""
    return _from_flashbax(make_buffer(config).init(empty_record(env)))


def buffer_add(config: Config, buffer: ReplayState, records: Record) -> ReplayState:
    """Add one update's records, time-major [T, B, ...] as the play loop returns them."""
    batch_major = jax.tree.map(lambda leaf: jnp.swapaxes(leaf, 0, 1), records)
    return _from_flashbax(make_buffer(config).add(_to_flashbax(buffer), batch_major))


def buffer_sample(config: Config, buffer: ReplayState, key: jax.Array) -> tuple[Record, Record]:
    """`batch_size` uniform pairs (record of s, record of s') among the written entries."""
    pair = make_buffer(config).sample(_to_flashbax(buffer), key).experience
    return pair.first, pair.second


def init_extra(context: Context, params: Any) -> DQNExtra:
    """Target network = the fresh online network; an empty buffer."""
    target = jax.tree.map(jnp.copy, params)
    return DQNExtra(target_params=target, buffer=buffer_init(context.config, context.env))


# --------------------------------------------------------------------------------------------
# Acting, loss, update
# --------------------------------------------------------------------------------------------


def q_values(
    network: nn.Module, params: Any, env: Environment, observations: Any
) -> tuple[jax.Array, jax.Array]:
    """(Q-values [B, 45], legal mask [B, 45]) of a batch of the environment's observations."""
    x = env.features(observations)
    return network.apply({"params": params}, x), env.legal_action_mask(observations)


def epsilon_greedy_policy(context: Context, params: Any, epsilon: jax.Array) -> Any:
    """Batch policy: with probability epsilon a uniformly random legal action, else argmax Q."""

    def policy(observations: Any, keys: jax.Array) -> tuple[jax.Array, dict[str, jax.Array]]:
        q, legal = q_values(context.network, params, context.env, observations)
        greedy = masked_argmax(q, legal)
        key_pairs = jax.vmap(jax.random.split)(keys)
        explore = jax.vmap(jax.random.uniform)(key_pairs[:, 0]) < epsilon
        bits = jax.vmap(lambda key: jax.random.bits(key, (), jnp.uint32))(key_pairs[:, 1])
        action = jnp.where(explore, jax.vmap(uniform_legal_action)(legal, bits), greedy)
        max_q = jnp.take_along_axis(q, greedy[:, None], axis=-1)[:, 0]
        return action, {"explore": explore, "max_q": max_q}

    return policy


def _record(env: Environment) -> Any:
    def record(observation: Any, action: jax.Array, next_observation: Any, extras: dict):
        done = env.card(next_observation).terminated
        zero = jnp.zeros(action.shape, jnp.float32)
        return Record(observation, action, zero, done, zero), extras

    return record


def td_loss(
    params: Any,
    context: Context,
    target_params: Any,
    first: Record,
    second: Record,
) -> tuple[jax.Array, Metrics]:
    """Huber loss of Q(s, a) against the double-DQN target on one minibatch of pairs."""
    algo, network, env = context.config.algo, context.network, context.env
    q, _ = q_values(network, params, env, first.state)
    q_taken = jnp.take_along_axis(q, first.action[:, None], axis=-1)[:, 0]
    next_online, next_legal = q_values(network, params, env, second.state)
    next_target, _ = q_values(network, target_params, env, second.state)
    target = double_q_target(
        first.reward * algo.reward_scale,
        first.done,
        next_online,
        next_target,
        next_legal,
        algo.gamma,
    )
    if algo.mc_mix > 0:
        monte_carlo = first.return_to_go * algo.reward_scale
        target = (1 - algo.mc_mix) * target + algo.mc_mix * monte_carlo
    target = jax.lax.stop_gradient(target)
    error = q_taken - target
    loss = jnp.mean(optax.huber_loss(q_taken, target, delta=algo.huber_delta))
    metrics = {
        "loss/td": loss,
        "td/abs_error": jnp.mean(jnp.abs(error)) / algo.reward_scale,
        "q/mean_taken": jnp.mean(q_taken) / algo.reward_scale,
        "q/mean_target": jnp.mean(target) / algo.reward_scale,
    }
    return loss, metrics


def returns_to_go(rewards: jax.Array, gamma: float) -> jax.Array:
    """G_t = r_t + gamma G_{t+1} of whole episodes, time-major [T, B] (each lane one episode)."""

    def back(following: jax.Array, reward: jax.Array) -> tuple[jax.Array, jax.Array]:
        value = reward + gamma * following
        return value, value

    _, values = jax.lax.scan(back, jnp.zeros_like(rewards[0]), rewards, reverse=True)
    return values


def update(context: Context, state: TrainState) -> tuple[TrainState, Metrics]:
    """One DQN update: play B epsilon-greedy episodes, store them, `gradient_steps` TD steps."""
    config, env = context.config, context.env
    key, play_key, learn_key = jax.random.split(state.key, 3)
    epsilon = epsilon_at(context, state.step)
    policy = epsilon_greedy_policy(context, state.params, epsilon)
    keys = episode_keys(play_key, 0, envs.episodes_per_update(config))
    final, (records, extras), rewards = rollout(env, policy, keys, state.task, _record(env))
    records = records._replace(
        reward=rewards, return_to_go=returns_to_go(rewards, config.algo.gamma)
    )
    buffer = buffer_add(config, state.extra.buffer, records)
    (params, opt_state, target_params), metrics = learn(context, state, buffer, learn_key)
    metrics |= {
        **env.episode_metrics(final, rewards),
        **_play_metrics(context, state, epsilon, extras, buffer, records),
    }
    extra = DQNExtra(target_params=target_params, buffer=buffer)
    new_state = state.replace(
        params=params,
        opt_state=opt_state,
        key=key,
        step=state.step + 1,
        extra=extra,
        task=env.end_task_batch(state.task, final),
    )
    return new_state, metrics


def _play_metrics(
    context: Context,
    state: TrainState,
    epsilon: jax.Array,
    extras: dict,
    buffer: ReplayState,
    records: Record,
) -> Metrics:
    return {
        "q/start_value": jnp.mean(extras["max_q"][0]) / context.config.algo.reward_scale,
        "schedule/epsilon": epsilon,
        "schedule/learning_rate": learning_rate_at(context, state.step),
        "policy/explore_rate": jnp.mean(extras["explore"]),
        "buffer/fill": jnp.where(
            buffer.is_full, 1.0, buffer.current_index / buffer.experience.done.shape[1]
        ),
        **keep_action_stats(records.action, context.env.card(records.state).roll_index),
    }


def learn(
    context: Context, state: TrainState, buffer: ReplayState, learn_key: jax.Array
) -> tuple[tuple[Any, Any, Any], Metrics]:
    """`gradient_steps` TD steps on replayed pairs; ((params, opt state, target), metrics)."""
    config, algo = context.config, context.config.algo
    steps_per_update = algo.gradient_steps

    def learn_step(carry: tuple, inputs: tuple[jax.Array, jax.Array]) -> tuple[tuple, Metrics]:
        params, opt_state, target_params = carry
        step_key, optimizer_step_index = inputs
        first, second = buffer_sample(config, buffer, step_key)
        grads, metrics = jax.grad(td_loss, has_aux=True)(
            params, context, target_params, first, second
        )
        params, opt_state, grad_metrics = optimizer_step(context, params, opt_state, grads)
        due = (optimizer_step_index + 1) % algo.target_update_interval == 0
        target_params = jax.lax.cond(
            due,
            lambda: soft_update(target_params, params, algo.target_tau),
            lambda: target_params,
        )
        return (params, opt_state, target_params), metrics | grad_metrics

    first_step = state.step * steps_per_update
    step_indices = first_step + jnp.arange(steps_per_update, dtype=jnp.int32)
    step_keys = jax.random.split(learn_key, steps_per_update)
    (params, opt_state, target_params), per_step = jax.lax.scan(
        learn_step,
        (state.params, state.opt_state, state.extra.target_params),
        (step_keys, step_indices),
    )
    return (params, opt_state, target_params), jax.tree.map(jnp.mean, per_step)


def greedy(
    network: nn.Module, params: Any, x: jax.Array, legal: jax.Array, roll_index: jax.Array
) -> jax.Array:
    """The acting policy: the legal action of highest Q."""
    return masked_argmax(network.apply({"params": params}, x), legal)


ALGORITHM = Algorithm(
    name="dqn",
    config_class=DQNConfig,
    update=update,
    make_agent=acting.GreedyAgents(greedy),
    optimizer_steps_per_update=gradient_steps_per_update,
    make_network=make_network,
    init_extra=init_extra,
)
