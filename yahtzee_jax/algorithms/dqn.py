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

Two-player task (`algo.opponent` other than `none`, `yahtzee_jax.two_player`): the B games are
matches against the opponent, each record also keeps the opponent's card at the decision (the
input of the opponent features, `algo.opponent_features`), and the reward is the learner's under
`algo.reward` (Yuan's naive, gradient, fixed and moving-average variants, the win, or the score),
set once the match is over. The extra state then also holds the moving-average goal and, for
`self`, the frozen opponent's parameters.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import flashbax as fbx
import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct

from yahtzee_jax import two_player
from yahtzee_jax.agents.base import Agent, uniform_legal_action
from yahtzee_jax.algorithms.base import Algorithm, Context, Metrics, TrainState
from yahtzee_jax.algorithms.common import keep_action_stats, learning_rate_at, optimizer_step
from yahtzee_jax.config import AlgoConfig, Config, FeatureConfig, NetworkConfig, require
from yahtzee_jax.features import batch_features
from yahtzee_jax.game.engine import State, batch_of_one, legal_action_mask, total_score
from yahtzee_jax.game.rules import NUM_ACTIONS, Rules, get_rules
from yahtzee_jax.networks import Block
from yahtzee_jax.play import episode_keys, episode_length, play
from yahtzee_jax.schedules import hold_anneal_schedule


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
    # The two-player task (yahtzee_jax/two_player.py); "none" is the solitaire game.
    opponent: str = "none"
    reward: str = "score"  # score | win | naive | gradient | fixed | moving-average
    opponent_features: bool = True  # Yuan's opponent groups in the input (two-player task)
    opponent_refresh: int = 100  # updates between copies of the learner into a `self` opponent

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
        two_player.check_settings(self.opponent, self.reward, self.opponent_refresh)

    def check(self, config: Config) -> None:
        """The buffer must hold one update's games; the network options must mean something."""
        per_update = config.train.episodes_per_update * episode_length(config.train.task)
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
        require(
            self.opponent == "none" or config.train.task == "game",
            f"algo.opponent={self.opponent!r} needs train.task=game",
        )


# --------------------------------------------------------------------------------------------
# Network, target, schedule
# --------------------------------------------------------------------------------------------


class QNetwork(nn.Module):
    """The actor-critic network's trunk blocks, one hidden block and a linear Q head (45)."""

    config: NetworkConfig

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        """Map features[..., F] to Q-values[..., 45] (scaled reward units, no legality mask)."""
        config = self.config
        for layer in range(config.trunk_layers + 1):
            x = Block(config.hidden_size, config.activation, config.layer_norm, 0.0, layer)(x, None)
        return nn.Dense(NUM_ACTIONS)(x)


def make_network(config: Config) -> QNetwork:
    """The online (and target) Q network of a config."""
    return QNetwork(config.network)


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

    state: State  # the position the decision was taken in
    action: jax.Array  # int32
    reward: jax.Array  # float32, the game's reward (change in total score), unscaled
    done: jax.Array  # bool, the decision ended the episode


class MatchRecord(NamedTuple):
    """A two-player decision: a `Record` plus the opponent's card as it stood then."""

    state: State
    action: jax.Array
    reward: jax.Array  # float32, the learner's reward under `algo.reward`, unscaled
    done: jax.Array
    opponent: State


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


@struct.dataclass
class MatchExtra:
    """Two-player DQN's extras: DQN's, the moving-average goal, the frozen `self` opponent."""

    target_params: Any
    buffer: ReplayState
    goal: two_player.GoalState
    opponent_params: Any


def make_buffer(config: Config) -> Any:
    """flashbax flat buffer: B add lanes (one game each per update), pairs (s, s') sampled."""
    lanes = config.train.episodes_per_update
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


def empty_record(config: Config | None = None) -> Record | MatchRecord:
    """One decision's record with default fields: fixes the buffer's shapes and dtypes."""
    if config is not None and two_player.is_two_player(config):
        return MatchRecord(State(), jnp.int32(0), jnp.float32(0.0), jnp.bool_(False), State())
    return Record(State(), jnp.int32(0), jnp.float32(0.0), jnp.bool_(False))


def buffer_init(config: Config) -> ReplayState:
    """An empty buffer for a config."""
    return _from_flashbax(make_buffer(config).init(empty_record(config)))


def buffer_add(config: Config, buffer: ReplayState, records: Record) -> ReplayState:
    """Add one update's records, time-major [T, B, ...] as the play loop returns them."""
    batch_major = jax.tree.map(lambda leaf: jnp.swapaxes(leaf, 0, 1), records)
    return _from_flashbax(make_buffer(config).add(_to_flashbax(buffer), batch_major))


def buffer_sample(config: Config, buffer: ReplayState, key: jax.Array) -> tuple[Record, Record]:
    """`batch_size` uniform pairs (record of s, record of s') among the written entries."""
    pair = make_buffer(config).sample(_to_flashbax(buffer), key).experience
    return pair.first, pair.second


def init_extra(context: Context, params: Any) -> DQNExtra | MatchExtra:
    """Target network = the fresh online network; an empty buffer (and a goal, an opponent)."""
    target, buffer = jax.tree.map(jnp.copy, params), buffer_init(context.config)
    if not two_player.is_two_player(context.config):
        return DQNExtra(target_params=target, buffer=buffer)
    return MatchExtra(target, buffer, two_player.goal_init(), jax.tree.map(jnp.copy, params))


def init_params(context: Context, key: jax.Array) -> Any:
    """Fresh Q network parameters on the input width of the task (opponent groups or not)."""
    dummy = jnp.zeros((1, two_player.input_size(context.config)), jnp.float32)
    return context.network.init(key, dummy)["params"]


# --------------------------------------------------------------------------------------------
# Acting, loss, update
# --------------------------------------------------------------------------------------------


def q_values(
    network: nn.Module,
    params: Any,
    states: State,
    features: FeatureConfig,
    rules: Rules,
    opponents: State | None = None,
) -> tuple[jax.Array, jax.Array]:
    """(Q-values [B, 45], legal mask [B, 45]) of a batch of states (with the opponents' cards
    when the input has the opponent groups)."""
    if opponents is None:
        x = batch_features(states, features, rules)
    else:
        x = two_player.pair_features(states, opponents, features, rules)
    legal = jax.vmap(lambda state: legal_action_mask(state, rules))(states)
    return network.apply({"params": params}, x), legal


def _opponent_cards(config: Config, record: Record | MatchRecord) -> State | None:
    """The opponent cards a record's Q input needs (None: solitaire features)."""
    return record.opponent if two_player.uses_opponent_features(config) else None


def epsilon_greedy_policy(
    context: Context, params: Any, epsilon: jax.Array, match: bool = False
) -> Any:
    """Batch policy: with probability epsilon a uniformly random legal action, else argmax Q.

    With `match` it is a two-player learner policy `(own, other, keys)`."""
    config = context.config
    opponents = two_player.uses_opponent_features(config)

    def policy(
        states: State, keys: jax.Array, others: State | None = None
    ) -> tuple[jax.Array, dict[str, jax.Array]]:
        q, legal = q_values(
            context.network,
            params,
            states,
            config.features,
            context.rules,
            others if opponents else None,
        )
        greedy = masked_argmax(q, legal)
        key_pairs = jax.vmap(jax.random.split)(keys)
        explore = jax.vmap(jax.random.uniform)(key_pairs[:, 0]) < epsilon
        bits = jax.vmap(lambda key: jax.random.bits(key, (), jnp.uint32))(key_pairs[:, 1])
        action = jnp.where(explore, jax.vmap(uniform_legal_action)(legal, bits), greedy)
        max_q = jnp.take_along_axis(q, greedy[:, None], axis=-1)[:, 0]
        return action, {"explore": explore, "max_q": max_q}

    if match:
        return lambda own, other, keys: policy(own, keys, other)
    return policy


def _record(state: State, action: jax.Array, next_state: State, extras: dict) -> tuple:
    record = Record(state, action, next_state.reward.astype(jnp.float32), next_state.terminated)
    return record, extras


def td_loss(
    params: Any,
    context: Context,
    target_params: Any,
    first: Record,
    second: Record,
) -> tuple[jax.Array, Metrics]:
    """Huber loss of Q(s, a) against the double-DQN target on one minibatch of pairs."""
    config, algo = context.config, context.config.algo
    first_other, second_other = _opponent_cards(config, first), _opponent_cards(config, second)
    q, _ = q_values(
        context.network, params, first.state, config.features, context.rules, first_other
    )
    q_taken = jnp.take_along_axis(q, first.action[:, None], axis=-1)[:, 0]
    next_online, next_legal = q_values(
        context.network, params, second.state, config.features, context.rules, second_other
    )
    next_target, _ = q_values(
        context.network, target_params, second.state, config.features, context.rules, second_other
    )
    target = double_q_target(
        first.reward * algo.reward_scale,
        first.done,
        next_online,
        next_target,
        next_legal,
        algo.gamma,
    )
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


def update(context: Context, state: TrainState) -> tuple[TrainState, Metrics]:
    """One DQN update: play B epsilon-greedy games, store them, `gradient_steps` TD steps."""
    if two_player.is_two_player(context.config):
        return match_update(context, state)
    config = context.config
    key, play_key, learn_key = jax.random.split(state.key, 3)
    epsilon = epsilon_at(context, state.step)
    policy = epsilon_greedy_policy(context, state.params, epsilon)
    keys = episode_keys(play_key, 0, config.train.episodes_per_update)
    _, (records, extras) = play(policy, keys, context.rules, config.train.task, record=_record)
    buffer = buffer_add(config, state.extra.buffer, records)
    (params, opt_state, target_params), metrics = learn(context, state, buffer, learn_key)
    metrics |= {
        "train/mean_score": jnp.mean(jnp.sum(records.reward, axis=0)),
        **_play_metrics(context, state, epsilon, extras, buffer, records),
    }
    extra = DQNExtra(target_params=target_params, buffer=buffer)
    new_state = state.replace(
        params=params, opt_state=opt_state, key=key, step=state.step + 1, extra=extra
    )
    return new_state, metrics


def _play_metrics(
    context: Context,
    state: TrainState,
    epsilon: jax.Array,
    extras: dict,
    buffer: ReplayState,
    records: Record | MatchRecord,
) -> Metrics:
    return {
        "q/start_value": jnp.mean(extras["max_q"][0]) / context.config.algo.reward_scale,
        "schedule/epsilon": epsilon,
        "schedule/learning_rate": learning_rate_at(context, state.step),
        "policy/explore_rate": jnp.mean(extras["explore"]),
        "buffer/fill": jnp.where(
            buffer.is_full, 1.0, buffer.current_index / buffer.experience.done.shape[1]
        ),
        **keep_action_stats(records.action, records.state.roll_index),
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


def match_update(context: Context, state: TrainState) -> tuple[TrainState, Metrics]:
    """One two-player DQN update: B epsilon-greedy matches, rewards by `algo.reward`, TD steps."""
    config, algo = context.config, context.config.algo
    key, play_key, learn_key = jax.random.split(state.key, 3)
    epsilon = epsilon_at(context, state.step)
    greedy_q = epsilon_greedy_policy(context, state.params, epsilon, match=True)

    def record(own: State, other: State, action: jax.Array, moved: State, extras: dict):
        return MatchRecord(
            own, action, jnp.zeros_like(action, jnp.float32), moved.terminated, other
        ), (
            extras,
            moved,
        )

    keys = episode_keys(play_key, 0, config.train.episodes_per_update)
    opponent = two_player.match_opponent(context.config, context.rules, state.extra.opponent_params)
    result = two_player.play_matches(greedy_q, opponent, keys, context.rules, record)
    records, (extras, moved) = result.records
    own_total = total_score(result.learner)
    other_total = total_score(result.opponent)
    goal = two_player.reward_goal(algo.reward, state.extra.goal)
    rewards = two_player.learner_rewards(
        algo.reward, records.state, records.action, moved, own_total, other_total, goal
    )
    records = records._replace(reward=rewards)
    buffer = buffer_add(config, state.extra.buffer, records)
    (params, opt_state, target_params), metrics = learn(context, state, buffer, learn_key)
    step = state.step + 1
    refresh = step % algo.opponent_refresh == 0
    opponent_params = jax.tree.map(
        lambda new, old: jnp.where(refresh, new, old), params, state.extra.opponent_params
    )
    extra = MatchExtra(
        target_params,
        buffer,
        two_player.goal_update(state.extra.goal, own_total),
        opponent_params,
    )
    metrics |= {
        **two_player.match_metrics(own_total, other_total, rewards, goal),
        **_play_metrics(context, state, epsilon, extras, buffer, records),
    }
    new_state = state.replace(params=params, opt_state=opt_state, key=key, step=step, extra=extra)
    return new_state, metrics


# --------------------------------------------------------------------------------------------
# The greedy acting agent
# --------------------------------------------------------------------------------------------


@functools.cache  # one function object per configuration, so jitted callers compile once
def make_act(network_config: NetworkConfig, features: FeatureConfig, rules: Rules):
    """argmax over the legal actions' Q for one unbatched state."""
    network = QNetwork(network_config)

    def act(params: Any, state: State, key: jax.Array) -> jax.Array:
        q, legal = q_values(network, params, batch_of_one(state), features, rules)
        return masked_argmax(q, legal)[0]

    return act


def make_agent(config: Config, params: Any, name: str) -> Agent:
    """The greedy agent of a trained Q network: argmax over the legal actions (a two-player
    learner with opponent features reads the opponent's card in a match, an empty one alone)."""
    rules = get_rules(config.train.rules)
    if two_player.uses_opponent_features(config):
        act = two_player.solitaire_act(config, rules)
        return Agent(name, act, params, rules, match_act=two_player.match_act(config, rules))
    return Agent(name, make_act(config.network, config.features, rules), params, rules)


def optimizer_steps_per_update(config: Config) -> int:
    """`gradient_steps`: the learning-rate schedule counts optimizer steps."""
    return config.algo.gradient_steps


ALGORITHM = Algorithm(
    name="dqn",
    config_class=DQNConfig,
    update=update,
    make_agent=make_agent,
    optimizer_steps_per_update=optimizer_steps_per_update,
    make_network=make_network,
    init_extra=init_extra,
    init_params=init_params,
)
