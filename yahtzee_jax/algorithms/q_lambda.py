"""Perceptron Q(lambda) with a local (round) and a global (game) eligibility trace (seed 001, V).

Kang & Schroeder's first learner: Q(s, a) = theta_a . beta(s), one weight vector per action over
the features (their 96 binary atomic features: `features.kind=kang`), no hidden layer. The
weights change *during* a game, after every decision t, in the order the seed describes:

    delta_t = r_t + gamma max_{a' legal} Q(s_{t+1}, a') - Q(s_t, a_t)   (0 bootstrap at the end)

- a keep decision has no reward: the one-step update of its pair alone (section V's equation),
  theta_{a_t} += alpha delta_t beta(s_t);
- a scoring decision ends the round: r_t = round_reward x the round's points, and delta_t goes
  to every pair of the round (the *local* trace): theta_{a_k} += alpha e_k delta_t beta(s_k);
- the game's last decision: r_t adds game_reward x the game's score, and delta_t goes to every
  pair of the game (the *global* trace).

e_k = (gamma lambda)^(t - k) is a pair's eligibility; with the defaults (gamma = lambda = 1)
every pair on the trace gets the full delta, the seed's "Q(s, a) <- Q(s, a) + alpha delta for
all (s, a) in the relevant trace" (on the atomic features these weights grow without bound;
the `kang-q-lambda` preset uses gamma 0.95, lambda 0.8). With `normalize` a pair's step is
beta(s) / |beta(s)|^2, so that the pair's own Q moves by exactly alpha delta, as the seed
writes the update. The traces live in weight space (z[F, A] += beta(s) x
onehot(a)), so one trace update is one multiply-add. Rewards are read from the learner's own
card (its score changes), so the learner trains on any environment; the seed's win/loss
rewards were disabled, and in a match the opponents do not change its rewards.

A batch of B games is played in lockstep: at decision t every game computes its delta with the
same weights (those before decision t) and the B updates are *summed* into the weights. With
B = 1 this is the seed's sequential rule exactly (`tests/test_q_lambda.py` checks a
hand-computed round). Exploration: epsilon-greedy (the seed does not say); the learning rate
alpha falls by `alpha_decay` after every game (the seed's step decay), alpha0 x decay^games.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from yahtzee_jax import envs
from yahtzee_jax.agents.agent import uniform_legal_action
from yahtzee_jax.algorithms import acting
from yahtzee_jax.algorithms.algorithm import Algorithm, Context, Metrics, TrainState, no_optimizer
from yahtzee_jax.algorithms.dqn import masked_argmax
from yahtzee_jax.config import AlgoConfig, Config, dynamic, require
from yahtzee_jax.envs.rollout import episode_keys, learning_rollout
from yahtzee_jax.game.engine import LAST_ROLL, total_score
from yahtzee_jax.game.rules import DECISIONS_PER_TURN
from yahtzee_jax.networks.linear_q import LinearQ

KEEP, ROUND_END, GAME_END = 0, 1, 2  # which trace a decision's delta goes to


@dataclasses.dataclass(frozen=True)
class QLambdaConfig(AlgoConfig):
    """Perceptron Q(lambda): learning rate and its decay, traces, rewards, exploration."""

    name: str = "q-lambda"
    alpha: float = dynamic(0.01)  # initial learning rate
    alpha_decay: float = dynamic(1.0)  # alpha's factor after every game (step decay)
    gamma: float = dynamic(1.0)
    trace_lambda: float = dynamic(1.0)  # 1: every pair on a trace gets the full delta (seed)
    round_reward: float = 0.01  # reward per point of a round's score (local trace)
    game_reward: float = 0.01  # reward per point of the game's score (global trace)
    epsilon: float = dynamic(0.1)  # share of decisions played uniformly at random
    # theta_a += alpha delta beta(s) / |beta(s)|^2: the pair's own Q moves by exactly alpha delta
    # (the seed's "Q(s, a) <- Q(s, a) + alpha delta"); false: the plain gradient step
    normalize: bool = True

    def __post_init__(self) -> None:
        require(self.alpha > 0, f"algo.alpha={self.alpha} must be > 0")
        require(0 < self.alpha_decay <= 1, f"algo.alpha_decay={self.alpha_decay} not in (0, 1]")
        for field in ("gamma", "trace_lambda", "epsilon"):
            value = getattr(self, field)
            require(0.0 <= value <= 1.0, f"algo.{field}={value} must be in [0, 1]")
        for field in ("round_reward", "game_reward"):
            value = getattr(self, field)
            require(value >= 0, f"algo.{field}={value} must be >= 0")


def make_network(config: Config) -> LinearQ:
    """The perceptron of a config (45 actions for Yahtzee)."""
    return LinearQ(envs.rules_of(config).num_actions)


class Traces(NamedTuple):
    """The eligibility traces of every lane in weight space, float32[B, F, A] each."""

    local: jax.Array  # the current round's pairs
    globl: jax.Array  # the whole game's pairs


def decision_update(
    theta: jax.Array,
    traces: Traces,
    x: jax.Array,
    action: jax.Array,
    reward: jax.Array,
    x_next: jax.Array,
    legal_next: jax.Array,
    done: jax.Array,
    kind: jax.Array,
    round_start: jax.Array,
    alpha: jax.Array,
    gamma: float,
    trace_lambda: float,
    normalize: bool = False,
) -> tuple[jax.Array, Traces, jax.Array]:
    """One decision of B lockstep lanes: (new theta[F, A], new traces, delta[B]).

    x [B, F] and `action` [B] are the pairs taken, `reward` [B] r_t, x_next / legal_next / done
    the next state, `kind` [B] which trace the delta goes to (KEEP, ROUND_END, GAME_END) and
    `round_start` [B] whether this decision opens a round (the local trace restarts). With
    `normalize` a pair enters the traces as beta(s) / |beta(s)|^2.
    """
    q = jnp.einsum("bf,fb->b", x, theta[:, action])
    q_next = jnp.max(jnp.where(legal_next, x_next @ theta, -jnp.inf), axis=-1)
    delta = reward + gamma * jnp.where(done, 0.0, q_next) - q
    step = x / jnp.maximum(jnp.sum(x * x, axis=-1, keepdims=True), 1e-6) if normalize else x
    pair = step[:, :, None] * jax.nn.one_hot(action, theta.shape[1])[:, None, :]  # [B, F, A]
    decay = gamma * trace_lambda
    local = jnp.where(round_start[:, None, None], 0.0, decay * traces.local) + pair
    globl = decay * traces.globl + pair
    direction = jnp.where(
        (kind == KEEP)[:, None, None],
        pair,
        jnp.where((kind == ROUND_END)[:, None, None], local, globl),
    )
    theta = theta + alpha * jnp.einsum("b,bfa->fa", delta, direction)
    return theta, Traces(local, globl), delta


def alpha_at(context: Context, step: jax.Array) -> jax.Array:
    """Learning rate of update `step`: alpha0 x decay^(games played before it)."""
    algo = context.config.algo
    games = step * envs.episodes_per_update(context.config)
    return jnp.asarray(algo.alpha * algo.alpha_decay ** games.astype(jnp.float32), jnp.float32)


def _explore(theta: jax.Array, x: jax.Array, legal: jax.Array, keys: jax.Array, epsilon) -> Any:
    """Epsilon-greedy actions [B] and the greedy Q-values [B] of the lanes."""
    q = x @ theta
    greedy = masked_argmax(q, legal)
    pairs = jax.vmap(jax.random.split)(keys)
    explore = jax.vmap(jax.random.uniform)(pairs[:, 0]) < epsilon
    bits = jax.vmap(lambda key: jax.random.bits(key, (), jnp.uint32))(pairs[:, 1])
    action = jnp.where(explore, jax.vmap(uniform_legal_action)(legal, bits), greedy)
    return action.astype(jnp.int32), jnp.max(jnp.where(legal, q, -jnp.inf), axis=-1)


def play_and_learn(
    context: Context, theta: jax.Array, key: jax.Array, task: Any, alpha: jax.Array
) -> tuple[jax.Array, Any, jax.Array, Metrics]:
    """Play B games in lockstep, updating theta after every decision: (theta, final states,
    the environment's rewards [T, B], scalars)."""
    config, env, rules = context.config, context.env, context.rules
    algo = config.algo
    lanes = envs.episodes_per_update(config)
    length = env.episode_length

    def policy(observation: Any, keys: jax.Array, carry: tuple) -> tuple[jax.Array, tuple]:
        x, legal = env.features(observation), env.legal_action_mask(observation)
        action, q_max = _explore(carry[0], x, legal, keys, algo.epsilon)
        return action, (x, q_max)

    def learn(carry: tuple, observation: Any, action: jax.Array, following: Any, *rest: Any) -> Any:
        (x, q_max), decision = rest
        theta, traces = carry
        roll = decision % DECISIONS_PER_TURN
        before = total_score(env.card(observation), rules)
        after_card = env.card(following)
        after = total_score(after_card, rules)
        last = decision == length - 1
        scoring = roll == LAST_ROLL
        reward = jnp.where(scoring, algo.round_reward * (after - before), 0.0)
        reward += jnp.where(last, algo.game_reward * after, 0.0)
        kind = jnp.where(last, GAME_END, jnp.where(scoring, ROUND_END, KEEP))
        theta, traces, delta = decision_update(
            theta,
            traces,
            x,
            action,
            reward.astype(jnp.float32),
            env.features(following),
            env.legal_action_mask(following),
            after_card.terminated | last,
            jnp.full(lanes, kind, jnp.int32),
            jnp.full(lanes, roll == 0),
            alpha,
            algo.gamma,
            algo.trace_lambda,
            algo.normalize,
        )
        return (theta, traces), (jnp.abs(delta), q_max)

    zeros = jnp.zeros((lanes, *theta.shape), jnp.float32)
    keys = episode_keys(key, 0, lanes)
    (theta, _), state, (abs_delta, q_max), rewards = learning_rollout(
        env, policy, learn, (theta, Traces(zeros, zeros)), keys, task
    )
    # the mean over [turns, 3, B] as before the shared rollout: XLA would fold a bare reshape
    # into the reduction, which then sums the same numbers in another order
    by_turn = jax.lax.optimization_barrier(abs_delta.reshape(-1, DECISIONS_PER_TURN, lanes))
    metrics = {"td/abs_delta": jnp.mean(by_turn), "q/start_value": jnp.mean(q_max[0])}
    return theta, state, rewards, metrics


def update(context: Context, state: TrainState) -> tuple[TrainState, Metrics]:
    """One update: B games in lockstep with the weights learning after every decision."""
    key, play_key = jax.random.split(state.key)
    alpha = alpha_at(context, state.step)
    theta = state.params["Dense_0"]["kernel"]
    theta, final, rewards, metrics = play_and_learn(context, theta, play_key, state.task, alpha)
    metrics |= {
        **context.env.episode_metrics(final, rewards),
        "schedule/learning_rate": alpha,
        "schedule/epsilon": jnp.float32(context.config.algo.epsilon),
    }
    return state.replace(
        params={"Dense_0": {"kernel": theta}},
        key=key,
        step=state.step + 1,
        task=context.env.end_task_batch(state.task, final),
    ), metrics


def greedy(
    network: nn.Module, params: Any, x: jax.Array, legal: jax.Array, roll_index: jax.Array
) -> jax.Array:
    """The acting policy: the legal action of highest Q."""
    return masked_argmax(network.apply({"params": params}, x), legal)


ALGORITHM = Algorithm(
    name="q-lambda",
    config_class=QLambdaConfig,
    update=update,
    make_agent=acting.GreedyAgents(greedy),
    make_network=make_network,
    make_optimizer=no_optimizer,
)
