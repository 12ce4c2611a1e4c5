"""TD-planner: a learned value of the turn-start positions, played by exact planning in the turn.

TD-Gammon's recipe with Yahtzee's known rules: the network learns only V(position), the
expected score still to come from a turn's start (own card: open boxes, upper total capped at
63, whether the Yahtzee box holds 50), and every keep and box is chosen by the exact expectimax
over the turn's dice with points + V(next position) at the leaves (`agents.planner`, the
solver's widget with learned leaves). One update, fused in the compiled chunk:

1. the planner plays B games in lockstep (`epsilon`: a uniformly random legal action instead);
2. the 13 turn starts of each game get a target (`target`):
   - "expected": the lambda-return over turn starts whose one-step part is the planner's own
     expectation of the turn, E_t = E_roll[best play of the turn with V at the leaves], computed
     at the turn's first keep: G_t = (1 - lambda) E_t + lambda (r_t + G_{t+1}) (lambda = 0: a
     Bellman backup with the turn's dice averaged out, only the visited position sampled);
   - "td": the TD(lambda) return over turn starts, G_t = r_t + (1 - lambda) V(s_{t+1}) +
     lambda G_{t+1} (r_t the turn's points, bonuses included; V = 0 after the last turn);
   - "mc": the Monte-Carlo return (the rest of the game's points);
3. `gradient_steps` Adam steps on the squared error of V on those B x 13 positions.

No number of the exact solver is used: the planner's leaves are the network, its targets come
from its own games (a test makes the solver's table loaders raise through training and play).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from yahtzee_jax import envs
from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.agents.distribution_planner import EARLY_PLAY, MatchPlannerAct
from yahtzee_jax.agents.planner import (
    LookaheadLeaf,
    card_positions,
    make_planner_agent,
    plan_decision,
)
from yahtzee_jax.algorithms.algorithm import (
    Algorithm,
    Context,
    Metrics,
    TrainState,
    same_warm_params,
)
from yahtzee_jax.algorithms.common import (
    explained_variance,
    explore,
    gradient_steps_per_update,
    lambda_returns,
    learning_rate_at,
    optimizer_step,
)
from yahtzee_jax.config import AlgoConfig, Config, NetworkConfig, check_choice, dynamic, require
from yahtzee_jax.envs.rollout import episode_keys, rollout
from yahtzee_jax.game.rules import DECISIONS_PER_TURN, NUM_DICE, Rules
from yahtzee_jax.networks.value import ValueNet
from yahtzee_jax.solver.states import upper_cap

TARGETS = ("mc", "td", "expected")


@dataclasses.dataclass(frozen=True)
class TDPlannerConfig(AlgoConfig):
    """TD-planner: value targets, exploration and the value's scale."""

    name: str = "td-planner"
    target: str = "mc"  # mc | td | expected (see the module docstring; mc learned fastest)
    td_lambda: float = dynamic(0.5)  # lambda of "expected" and "td" (0: one step, 1: Monte Carlo)
    epsilon: float = dynamic(0.0)  # share of decisions played uniformly at random
    value_scale: float = 0.01  # the network predicts V x value_scale (hundreds of points)
    gradient_steps: int = 1  # Adam steps per update on the update's B x 13 positions
    # > 0: a second network beside the value's (same width and depth, its own trunk), the
    # distribution of the score to come over 0..score_bins - 1 (the last bin holds the mass
    # above), fit by cross-entropy to the Monte-Carlo return; the agent then plays matches for
    # the win with it (`agents.distribution_planner`). Solitaire play reads the value network only.
    score_bins: int = 0
    # Matches: the turns that leave at most this many boxes open are played for the win, the
    # earlier ones as alone (the learned distributions of early positions misled it). Over the
    # first 20,000 two-player matches of seed 2 against optimal play: for the win in the last
    # 6 turns 49.70 %, 4: 49.83 %, 3: 49.94 %, every turn 48.23 %, none 48.63 %
    # (experiments/match_open_ablation.py). 3, as the win-seeker's exact endgame.
    match_open: int = 3
    # Matches: the turns before those, played as alone ("solitaire") or for the win by a normal
    # approximation of both futures ("normal": V's means, the distribution's variances; 50.29 %
    # against 50.26 % over the same 100,000 matches with td-planner-match-large).
    match_early: str = "solitaire"
    # Play (not training): 1, the planner searches the turn with V at its end; 2, two turns,
    # each turn-end position valued by the next turn played exactly with V at its end (about
    # 40 times the cost). Judged by the exact table on 1,000 games of td-planner-match-large-ft,
    # two turns lose 0.32 points a game to optimal play where one loses 0.70
    # (experiments/planner_regret.py). Set it on a trained run: match RUN --set algo.lookahead=2
    lookahead: int = 1
    # A td-planner run (or checkpoint) of the same network and score_bins to start from: its
    # networks continue as they are; the optimizer, the step count and the learning-rate
    # schedule start afresh (a fine-tune, e.g. at a lower optim.lr)
    init_from: str = ""

    def __post_init__(self) -> None:
        check_choice("algo.target", self.target, TARGETS)
        check_choice("algo.match_early", self.match_early, EARLY_PLAY)
        require(0.0 <= self.td_lambda <= 1.0, f"algo.td_lambda={self.td_lambda} not in [0, 1]")
        require(0.0 <= self.epsilon <= 1.0, f"algo.epsilon={self.epsilon} not in [0, 1]")
        require(self.value_scale > 0, f"algo.value_scale={self.value_scale} must be > 0")
        require(self.gradient_steps >= 1, f"algo.gradient_steps={self.gradient_steps} must be >= 1")
        require(self.score_bins >= 0, f"algo.score_bins={self.score_bins} must be >= 0")
        require(self.match_open >= 0, f"algo.match_open={self.match_open} must be >= 0")
        require(self.lookahead in (1, 2), f"algo.lookahead={self.lookahead}; choose 1 or 2")
        require(
            self.score_bins == 0 or self.target == "mc",
            f"algo.score_bins={self.score_bins} needs algo.target=mc (the distribution is fit to "
            "the Monte-Carlo return)",
        )

    def check(self, config: Config) -> None:
        """Solitaire only (the planner's value is a score to come); no dropout, no upper head."""
        require(
            envs.plays_solitaire_games(config),
            f"env.id={config.env.id!r}: td-planner plans solitaire games (env.id=Yahtzee-v0 "
            "or another game's)",
        )
        require(config.network.dropout == 0, "network.dropout must be 0 for td-planner")
        require(not config.network.upper_head, "network.upper_head has no meaning for td-planner")


# --------------------------------------------------------------------------------------------
# The value network over turn-start positions
# --------------------------------------------------------------------------------------------


def position_features(
    mask: jax.Array, upper: jax.Array, flag: jax.Array, rules: Rules
) -> jax.Array:
    """float32[..., boxes + 7]: a turn-start position as the value network's input.

    Open boxes; capped upper total / cap; bonus earned; points still needed / cap; whether
    five of each open upper box's face could still reach the cap; upper total against "par"
    (three of each filled upper box's face), / cap; Yahtzee box holds 50; boxes filled / boxes.
    """
    boxes = jnp.arange(rules.num_boxes)
    filled = ((mask[..., None] >> boxes) & 1).astype(jnp.float32)
    cap = max(upper_cap(rules), 1)
    faces = jnp.arange(1, rules.num_upper + 1, dtype=jnp.float32)
    upper_filled = filled[..., : rules.num_upper]
    upper = upper.astype(jnp.float32)
    reachable = upper + NUM_DICE * jnp.sum((1 - upper_filled) * faces, axis=-1) >= cap
    par = 3 * jnp.sum(upper_filled * faces, axis=-1)
    scalars = [
        upper / cap,
        (upper >= cap).astype(jnp.float32),
        jnp.maximum(cap - upper, 0) / cap,
        reachable.astype(jnp.float32),
        (upper - par) / cap,
        flag.astype(jnp.float32),
        jnp.mean(filled, axis=-1),
    ]
    return jnp.concatenate([1 - filled, jnp.stack(scalars, axis=-1)], axis=-1)


@dataclasses.dataclass(frozen=True)
class ValueLeaf:
    """The planner's leaf value: the network's V of turn-start positions, in points; with
    `distribution`, the probabilities of the score to come instead (float32[..., bins])."""

    network: NetworkConfig
    rules: Rules
    value_scale: float
    score_bins: int = 0
    distribution: bool = False

    def __call__(
        self, params: Any, mask: jax.Array, upper: jax.Array, flag: jax.Array
    ) -> jax.Array:
        """V(mask, upper, flag) (or its distribution) over broadcasting arrays, float32."""
        mask, upper, flag = jnp.broadcast_arrays(mask, upper, flag)
        x = position_features(mask.reshape(-1), upper.reshape(-1), flag.reshape(-1), self.rules)
        out = ValueNet(self.network, self.score_bins).apply({"params": params}, x)
        if self.distribution:
            return jax.nn.softmax(out[:, 1:], axis=-1).reshape(*mask.shape, self.score_bins)
        return (out[:, 0] / self.value_scale).reshape(mask.shape)


def value_leaf(config: Config, distribution: bool = False) -> ValueLeaf:
    """The leaf value of a config's network (or, `distribution`, its score-to-come head)."""
    algo = config.algo
    rules = envs.rules_of(config)
    return ValueLeaf(config.network, rules, algo.value_scale, algo.score_bins, distribution)


def make_network(config: Config) -> ValueNet:
    """The value network of a config."""
    return ValueNet(config.network, config.algo.score_bins)


def init_params(context: Context, key: jax.Array) -> Any:
    """Fresh value-network parameters on one blank position."""
    zero = jnp.zeros((1,), jnp.int32)
    x = position_features(zero, zero, zero, context.rules)
    return context.network.init(key, x)["params"]


# --------------------------------------------------------------------------------------------
# Self-play and the update
# --------------------------------------------------------------------------------------------


def exploring_planner(context: Context, params: Any, epsilon: jax.Array) -> Any:
    """The by-turn batch policy: the planner's action, or with probability `epsilon` a uniformly
    random legal one; extras: the planner's turn-start value (first keep) and the exploration."""
    leaf, rules, env = value_leaf(context.config), context.rules, context.env

    def policy(states: Any, keys: jax.Array, roll_index: int) -> tuple[jax.Array, dict]:
        action, turn_value = plan_decision(leaf, params, states, rules, roll_index)
        action, explored = explore(action, keys, env.legal_action_mask(states), epsilon)
        return action, {"turn_value": turn_value, "explore": explored}

    return policy


def _record(rules: Rules) -> Any:
    def record(observation: Any, action: jax.Array, next_observation: Any, extras: dict) -> dict:
        return {"position": card_positions(observation, rules), **extras}

    return record


def value_targets(
    algo: TDPlannerConfig, turn_rewards: jax.Array, value: jax.Array, turn_value: jax.Array
) -> jax.Array:
    """Targets [turns, B] of the turn starts' values (rewards, V and the planner's turn
    expectations [turns, B], in points)."""
    if algo.target == "mc":
        return jnp.flip(jnp.cumsum(jnp.flip(turn_rewards, 0), axis=0), 0)
    if algo.target == "td":
        return lambda_returns(turn_rewards, value, 1.0, algo.td_lambda)
    return expected_lambda_returns(turn_rewards, turn_value, algo.td_lambda)


def expected_lambda_returns(
    turn_rewards: jax.Array, turn_value: jax.Array, td_lambda: float | jax.Array
) -> jax.Array:
    """G_t = (1 - lambda) E_t + lambda (r_t + G_{t+1}), G = 0 after the last turn ([turns, B]).

    E_t is the planner's expectation of turn t (its points plus V of the position it leads to,
    the dice averaged out): lambda = 0 is that expected one-step backup, 1 the Monte-Carlo return.
    """

    def backward(later: jax.Array, step: tuple[jax.Array, jax.Array]) -> tuple:
        reward, expected = step
        here = (1.0 - td_lambda) * expected + td_lambda * (reward + later)
        return here, here

    _, returns = jax.lax.scan(
        backward, jnp.zeros_like(turn_rewards[0]), (turn_rewards, turn_value), reverse=True
    )
    return returns


def update(context: Context, state: TrainState) -> tuple[TrainState, Metrics]:
    """One update: the planner plays B games, then `gradient_steps` steps on the value loss."""
    config, env, algo = context.config, context.env, context.config.algo
    key, play_key = jax.random.split(state.key)
    policy = exploring_planner(context, state.params, jnp.float32(algo.epsilon))
    keys = episode_keys(play_key, 0, envs.episodes_per_update(config))
    final, records, rewards = rollout(env, policy, keys, state.task, _record(context.rules), True)
    turn_rewards = rewards.reshape(-1, DECISIONS_PER_TURN, rewards.shape[-1]).sum(axis=1)
    starts = jax.tree.map(lambda leaf: leaf[::DECISIONS_PER_TURN], records)  # [turns, B]
    features = position_features(*starts["position"], context.rules)
    network = context.network

    def outputs(params: Any) -> tuple[jax.Array, jax.Array]:
        out = network.apply({"params": params}, features)
        return out[..., 0] / algo.value_scale, out[..., 1:]

    targets = jax.lax.stop_gradient(
        value_targets(algo, turn_rewards, outputs(state.params)[0], starts["turn_value"])
    )

    def loss_fn(params: Any) -> tuple[jax.Array, tuple]:
        predicted, logits = outputs(params)
        value_loss = jnp.mean(jnp.square((predicted - targets) * algo.value_scale))
        if algo.score_bins == 0:
            return value_loss, (value_loss, jnp.float32(0.0), predicted)
        target_bins = jnp.clip(jnp.round(targets), 0, algo.score_bins - 1).astype(jnp.int32)
        log_p = jax.nn.log_softmax(logits, axis=-1)
        cross_entropy = -jnp.mean(jnp.take_along_axis(log_p, target_bins[..., None], -1))
        total = value_loss + cross_entropy  # separate parameters: no weight between them
        return total, (value_loss, cross_entropy, predicted)

    def step(carry: tuple, _: None) -> tuple[tuple, Metrics]:
        params, opt_state = carry
        (_, (loss, cross_entropy, predicted)), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            params
        )
        params, opt_state, grad_metrics = optimizer_step(context, params, opt_state, grads)
        metrics = {
            "loss/value": loss,
            "loss/distribution": cross_entropy,
            "value/abs_error": jnp.mean(jnp.abs(predicted - targets)),
            "value/explained_variance": explained_variance(predicted, targets),
            **grad_metrics,
        }
        return (params, opt_state), metrics

    (params, opt_state), per_step = jax.lax.scan(
        step, (state.params, state.opt_state), None, length=algo.gradient_steps
    )
    metrics = {
        **env.episode_metrics(final, rewards),
        **jax.tree.map(lambda leaf: leaf[0], per_step),  # before this update's first step
        "value/start": jnp.mean(starts["turn_value"][0]),
        "policy/explore_rate": jnp.mean(records["explore"]),
        "schedule/learning_rate": learning_rate_at(context, state.step),
    }
    new_state = state.replace(params=params, opt_state=opt_state, key=key, step=state.step + 1)
    return new_state, metrics


def make_agent(config: Config, params: Any, name: str) -> Agent:
    """The planner with the trained value network at its leaves (no exploration; one turn
    deeper with `algo.lookahead=2`); with a distribution head it plays matches for the win
    (`agents.distribution_planner`): its early turns as alone by that planner or by the normal rule
    with that leaf's means."""
    rules = envs.rules_of(config)
    leaf = value_leaf(config)
    if config.algo.lookahead == 2:
        leaf = LookaheadLeaf(leaf, rules)
    agent = make_planner_agent(name, leaf, params, rules)
    if config.algo.score_bins == 0:
        return agent
    dist = value_leaf(config, distribution=True)
    algo = config.algo
    policy = MatchPlannerAct(
        dist,
        rules,
        agent.policy,
        algo.match_open,
        algo.match_early,
        leaf,  # the normal rule's means, as deep as the planner's search
    )
    return dataclasses.replace(agent, policy=policy, reads_others=True)


ALGORITHM = Algorithm(
    name="td-planner",
    config_class=TDPlannerConfig,
    update=update,
    make_agent=make_agent,
    optimizer_steps_per_update=gradient_steps_per_update,
    make_network=make_network,
    init_params=init_params,
    warm_params=same_warm_params,
)
