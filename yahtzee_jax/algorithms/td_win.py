"""TD-win: a learned afterstate win value on the match environment, played by exact planning.

The match counterpart of `td-planner` (issue 30): the network learns W(afterstate) = P(win) +
1/2 P(draw) of the learner right after it writes a box, from its own card and every other card
(`win_features`), and every keep and box is chosen by the exact expectimax over the turn's dice
with W at the leaves (`agents.win_value_planner`; the exact outcome where the write ends the match).
It trains on a match (`env.id=YahtzeeMatch-v0`) with `env.reward=win` against `env.opponent`
(the optimal-solitaire agent, or `self`: its frozen copy, itself a win planner reading the whole
table, refreshed every `env.opponent_refresh` updates), 2 to 6 players. One update, fused in the
compiled chunk:

1. the planner plays B matches in lockstep (`epsilon`: a uniformly random legal action instead);
2. each match's 13 afterstates of the learner get a target (`target`):
   - "mc": the match's outcome o (1, 1/2, 0) at every afterstate;
   - "td": the TD(lambda) return over afterstates, y_12 = o, y_t = (1 - lambda) W(a_{t+1}) +
     lambda y_{t+1}, W(a_{t+1}) the exact outcome where that afterstate ends the match;
3. `gradient_steps` Adam steps on the binary cross-entropy of W's logit against those targets,
   over the afterstates that do not end the match (those are exact and never asked of W).

No number of the exact solver is used by the learner: its leaves are the network, its targets
come from its own matches (a test makes the solver's table loaders raise through self-play
training and acting). The `optimal` opponent's seat reads the solver: that is the environment.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import optax

from yahtzee_jax import envs
from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.agents.win_value_planner import (
    Standing,
    box_actions,
    keep_actions,
    last_keep_values,
    make_win_planner_agent,
    match_over,
    outcome,
    standings,
)
from yahtzee_jax.algorithms import common
from yahtzee_jax.algorithms.algorithm import Algorithm, Context, Metrics, TrainState
from yahtzee_jax.algorithms.td_planner import position_features
from yahtzee_jax.config import AlgoConfig, Config, NetworkConfig, check_choice, dynamic, require
from yahtzee_jax.envs.match_env import MatchView
from yahtzee_jax.envs.rollout import episode_keys, rollout
from yahtzee_jax.game.engine import LAST_ROLL
from yahtzee_jax.game.rules import DECISIONS_PER_TURN, Rules
from yahtzee_jax.networks.value import ValueNet

TARGETS = ("mc", "td")
LEAD_SCALE = 100.0  # score differences enter the network in hundreds of points


@dataclasses.dataclass(frozen=True)
class TDWinConfig(AlgoConfig):
    """TD-win: the value target, its lambda, exploration and the steps per update."""

    name: str = "td-win"
    target: str = "mc"  # mc | td (see the module docstring)
    td_lambda: float = dynamic(0.7)  # lambda of "td" (0: one step, 1: the outcome, = mc)
    epsilon: float = dynamic(0.0)  # share of decisions played uniformly at random
    gradient_steps: int = 1  # Adam steps per update on the update's B x 13 afterstates
    evaluates_matches: ClassVar[bool] = True  # its evaluations: matches, with the win rate

    def __post_init__(self) -> None:
        check_choice("algo.target", self.target, TARGETS)
        require(0.0 <= self.td_lambda <= 1.0, f"algo.td_lambda={self.td_lambda} not in [0, 1]")
        require(0.0 <= self.epsilon <= 1.0, f"algo.epsilon={self.epsilon} not in [0, 1]")
        require(self.gradient_steps >= 1, f"algo.gradient_steps={self.gradient_steps} must be >= 1")

    def check(self, config: Config) -> None:
        """Matches for the win only; no dropout, no upper head (the env's opponent features are
        not read: the win value always reads every card)."""
        require(
            envs.environment_class(config).has_opponents,
            f"env.id={config.env.id!r}: td-win learns matches (env.id=YahtzeeMatch-v0 or "
            "another game's)",
        )
        require(
            config.env.reward == "win",
            f"env.reward={config.env.reward!r}: td-win learns the win (env.reward=win)",
        )
        require(config.network.dropout == 0, "network.dropout must be 0 for td-win")
        require(not config.network.upper_head, "network.upper_head has no meaning for td-win")


# --------------------------------------------------------------------------------------------
# The win value over afterstates
# --------------------------------------------------------------------------------------------


def win_features(own: Standing, others: Standing, rules: Rules) -> jax.Array:
    """float32[..., F]: an afterstate as the win network's input, F = (boxes + 7) P + P.

    The own card's and each other card's `position_features` (the solitaire planner's: open
    boxes, upper total and bonus, Yahtzee flag, boxes filled: the filled counts also say who has
    played this turn), the lead over each other card and over the best of them, in hundreds.
    """
    shape = jnp.broadcast_shapes(own.mask.shape, others.mask.shape[:-1])
    own = Standing(*(jnp.broadcast_to(part, shape) for part in own))
    others = Standing(*(jnp.broadcast_to(part, (*shape, part.shape[-1])) for part in others))
    mine = position_features(own.mask, own.upper, own.flag, rules)
    theirs = position_features(others.mask, others.upper, others.flag, rules)
    leads = (own.total[..., None] - others.total).astype(jnp.float32) / LEAD_SCALE
    best = jnp.min(leads, axis=-1, keepdims=True)
    return jnp.concatenate([mine, theirs.reshape(*shape, -1), leads, best], axis=-1)


def feature_size(rules: Rules, players: int) -> int:
    """Width of `win_features` for a card of `rules` and `players` seats."""
    return (rules.num_boxes + 7) * players + players


@dataclasses.dataclass(frozen=True)
class WinLeaf:
    """The planner's leaf: W = sigmoid(the network's output) of afterstates (`WinValue`)."""

    network: NetworkConfig
    rules: Rules

    def __call__(self, params: Any, own: Standing, others: Standing) -> jax.Array:
        """W of afterstates (own [...], others [..., P-1], broadcasting), float32[...]."""
        x = win_features(own, others, self.rules)
        return jax.nn.sigmoid(ValueNet(self.network).apply({"params": params}, x)[..., 0])


def win_leaf(config: Config) -> WinLeaf:
    """The leaf of a config's network."""
    return WinLeaf(config.network, envs.rules_of(config))


def make_network(config: Config) -> ValueNet:
    """The win network of a config: the solitaire value network's blocks, one logit out."""
    return ValueNet(config.network)


def init_params(context: Context, key: jax.Array) -> Any:
    """Fresh win-network parameters on one blank table."""
    players = context.config.env.players
    x = jnp.zeros((1, feature_size(context.rules, players)), jnp.float32)
    return context.network.init(key, x)["params"]


# --------------------------------------------------------------------------------------------
# Matches and the update
# --------------------------------------------------------------------------------------------


def win_targets(
    target: str, td_lambda: float | jax.Array, value: jax.Array, result: jax.Array
) -> jax.Array:
    """Targets [turns, B] of the afterstates from W there [turns, B] (the exact outcome where
    the afterstate ends the match) and the matches' outcomes [B]."""
    if target == "mc":
        return jnp.broadcast_to(result, value.shape)
    rewards = jnp.zeros_like(value).at[-1].set(result)
    return common.lambda_returns(rewards, value, 1.0, td_lambda)


def planning_policy(context: Context, params: Any, epsilon: jax.Array) -> Any:
    """The by-turn batch policy of the learner's matches: the win planner's action, or with
    probability `epsilon` a uniformly random legal one; extras: whether it explored."""
    leaf, rules, env = win_leaf(context.config), context.rules, context.env
    # The turn's keep values are traced at its first keep and reused at the second, in the
    # same trace of the rollout's turn body: the leaves (the own card's boxes, the others'
    # cards) do not change within a turn, and they are most of the update's cost.
    turn: dict[str, jax.Array] = {}

    def policy(view: MatchView, keys: jax.Array, roll_index: int) -> tuple[jax.Array, dict]:
        card, others = view.card, view.others
        if roll_index == LAST_ROLL:
            action = box_actions(leaf, params, card, others, rules)
        else:
            if roll_index == 0:
                turn["last_keep"] = last_keep_values(leaf, params, card, others, rules)
            action = keep_actions(turn["last_keep"], card, roll_index)
        action, explored = common.explore(action, keys, env.legal_action_mask(view), epsilon)
        return action, {"explore": explored}

    return policy


def update(context: Context, state: TrainState) -> tuple[TrainState, Metrics]:
    """One update: the planner plays B matches, then `gradient_steps` steps on the win loss."""
    config, env, algo, rules = context.config, context.env, context.config.algo, context.rules
    key, play_key = jax.random.split(state.key)
    policy = planning_policy(context, state.params, jnp.float32(algo.epsilon))

    def record(observation: Any, action: jax.Array, after: MatchView, extras: dict) -> dict:
        own, others = standings(after.card, rules), standings(after.others, rules)
        return {"own": own, "others": others, **extras}

    keys = episode_keys(play_key, 0, envs.episodes_per_update(config))
    final, records, rewards = rollout(env, policy, keys, state.task, record, True)
    # the learner's afterstates: the records of its score decisions, [turns, B]
    after = jax.tree.map(lambda leaf: leaf[LAST_ROLL::DECISIONS_PER_TURN], records)
    own, others = after["own"], after["others"]
    features = win_features(own, others, rules)
    result = outcome(standings(final.card, rules).total, standings(final.others, rules).total)
    over = match_over(own, others, rules)  # the learner sat last: exact, never asked of W
    network = context.network

    def logits(params: Any) -> jax.Array:
        return network.apply({"params": params}, features)[..., 0]

    value = jnp.where(over, result, jax.nn.sigmoid(logits(state.params)))
    targets = jax.lax.stop_gradient(win_targets(algo.target, algo.td_lambda, value, result))
    weight = (~over).astype(jnp.float32) / jnp.maximum(jnp.sum(~over), 1)

    def loss_fn(params: Any) -> tuple[jax.Array, jax.Array]:
        out = logits(params)
        return jnp.sum(weight * optax.sigmoid_binary_cross_entropy(out, targets)), out

    def step(carry: tuple, _: None) -> tuple[tuple, Metrics]:
        params, opt_state = carry
        (loss, out), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        params, opt_state, grad_metrics = common.optimizer_step(context, params, opt_state, grads)
        error = jnp.sum(weight * jnp.abs(jax.nn.sigmoid(out) - targets))
        return (params, opt_state), {"loss/win": loss, "value/abs_error": error, **grad_metrics}

    (params, opt_state), per_step = jax.lax.scan(
        step, (state.params, state.opt_state), None, length=algo.gradient_steps
    )
    metrics = {
        **env.episode_metrics(final, rewards),
        **jax.tree.map(lambda leaf: leaf[0], per_step),  # before this update's first step
        "value/first_afterstate": jnp.mean(value[0]),
        "value/last_afterstate": jnp.mean(value[-1]),
        "policy/explore_rate": jnp.mean(records["explore"]),
        "schedule/learning_rate": common.learning_rate_at(context, state.step),
    }
    new_state = state.replace(params=params, opt_state=opt_state, key=key, step=state.step + 1)
    return new_state, metrics


def make_agent(config: Config, params: Any, name: str) -> Agent:
    """The win planner with the trained network at its leaves (no exploration): it plays
    matches of `env.players` seats, and alone against empty cards."""
    rules = envs.rules_of(config)
    return make_win_planner_agent(name, win_leaf(config), params, rules, config.env.players)


# name, config section, update, acting agent (the planner on the cards; its `self` seat too)
ALGORITHM = Algorithm(
    "td-win",
    TDWinConfig,
    update,
    make_agent,
    common.gradient_steps_per_update,
    make_network,
    init_params=init_params,
)
