"""The two-player training task: the learner in one seat, a fixed opponent in the other (issue 14).

A learner episode is still the learner's 39 decisions on its own card. Each batch of B matches
is split in two halves: in lanes [0, B/2) the learner sits first, in [B/2, B) second (game i of
an evaluation sits first when i is even, as in `yahtzee_jax.tournament`). One turn of the
lockstep scan is: the opponent's turn on the lanes where it sits first, the learner's three
decisions on every lane, then the opponent's turn on the lanes where it sits second. So the
opponent is evaluated only on its own turns (B decisions' worth per turn, not 2B), it only ever
steps its own card, and the learner's records hold exactly its 39 decisions, each with the
opponent's card as it stood then (the input of `opponent_features`). Both cards roll their own
dice (independent dice, the real game).

Opponents (`algo.opponent`): `optimal` (the solver's optimal-solitaire agent, a batched policy
over its value table), `greedy1-3`, `random`, or `self` (a frozen copy of the learner, refreshed
every `algo.opponent_refresh` updates, seen from its own seat). `none` is the solitaire task.

Rewards (`algo.reward`), the learner's per-decision reward:

* `score`: the change in the learner's own total (the solitaire reward; the opponent is ignored).
* `win`: 0 at every decision, then +1 / 0 / -1 for a win / draw / loss at the last decision.
* Yuan's four variants (seed 003, section 2.5.2), each the intermediate reward plus a terminal
  reward. Intermediate: 0 at a keep decision; at a scoring decision (the points written in the
  box - the optimal solitaire player's mean points in that box, Yuan's table) / 10 (Yuan's -10
  for a filled box cannot occur: such actions are masked). Terminal, at the last decision:

  - `naive`: +1 win, 0 draw, -1 loss;
  - `gradient`: +1 win, 0 draw, (own total - opponent's total) / 100 on a loss;
  - `fixed`: +1 if own total > 110, 0 if equal, -1 if below (the opponent is ignored);
  - `moving-average`: as `fixed` with the goal max(110, mean own total of the last 100
    training games + 20), the goal fixed for the B games of one update.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.agents.base import Agent, MatchAct, Policy
from yahtzee_jax.config import Config, FeatureConfig, require
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.game import engine
from yahtzee_jax.game.engine import State, batch_of_one
from yahtzee_jax.game.multiplayer import MatchState, stack_cards
from yahtzee_jax.game.rules import (
    DECISIONS_PER_GAME,
    DECISIONS_PER_TURN,
    NUM_CATEGORIES,
    NUM_KEEP_ACTIONS,
    NUM_TURNS,
    Rules,
    get_rules,
)
from yahtzee_jax.opponent_features import match_features

OPPONENTS = ("none", "optimal", "greedy3", "greedy2", "greedy1", "random", "self")
REWARDS = ("score", "win", "naive", "gradient", "fixed", "moving-average")
YUAN_REWARDS = ("naive", "gradient", "fixed", "moving-average")
# Yuan's table (section 2.5.2): the optimal solitaire player's mean points per box, 1,000 games.
YUAN_BOX_MEANS = (
    1.861, 5.366, 8.676, 12.116, 15.65, 19.488,  # ones .. sixes
    22.344, 12.897, 23.125, 29.43, 33.12, 17.0, 22.286,  # 3k, 4k, FH, SS, LS, Yahtzee, chance
)  # fmt: skip
INTERMEDIATE_SCALE = 10.0
GRADIENT_SCALE = 100.0
FIXED_GOAL = 110.0
GOAL_MARGIN = 20.0  # the moving goal sits this far above the recent mean
GOAL_WINDOW = 100  # games in the moving mean


def check_settings(opponent: str, reward: str, opponent_refresh: int) -> None:
    """One-line config errors for the two-player fields of an algo section."""
    require(opponent in OPPONENTS, f"algo.opponent={opponent!r}; choose one of: {OPPONENTS}")
    require(reward in REWARDS, f"algo.reward={reward!r}; choose one of: {REWARDS}")
    require(
        opponent != "none" or reward == "score",
        f"algo.reward={reward!r} needs an opponent (algo.opponent is 'none': solitaire)",
    )
    require(opponent_refresh >= 1, f"algo.opponent_refresh={opponent_refresh} must be >= 1")


def is_two_player(config: Config) -> bool:
    """Does this config train in the two-player task?"""
    return getattr(config.algo, "opponent", "none") != "none"


def input_size(config: Config) -> int:
    """Network input width: the solitaire features, plus the opponent groups when they are on."""
    from yahtzee_jax.opponent_features import match_feature_size

    return match_feature_size(config.features, 2, uses_opponent_features(config))


def uses_opponent_features(config: Config) -> bool:
    """Opponent groups in the input: in the two-player task with `algo.opponent_features`."""
    return is_two_player(config) and bool(getattr(config.algo, "opponent_features", False))


# --------------------------------------------------------------------------------------------
# Features
# --------------------------------------------------------------------------------------------


def pair_features(
    own: State, other: State, config: FeatureConfig, rules: Rules, opponents: bool = True
) -> jax.Array:
    """float32[B, F (+ 15)]: `match_features` of the player with card `own` (batched)."""

    def one(own_card: State, other_card: State) -> jax.Array:
        match = MatchState(
            cards=stack_cards([own_card, other_card]),
            current_player=jnp.int32(0),
            rewards=jnp.zeros(2, jnp.int32),
            terminated=jnp.bool_(False),
        )
        return match_features(match, 0, config, rules, opponents)

    return jax.vmap(one)(own, other)


# --------------------------------------------------------------------------------------------
# Rewards
# --------------------------------------------------------------------------------------------


class GoalState(NamedTuple):
    """The moving-average goal's memory: the learner's last `GOAL_WINDOW` training totals."""

    totals: jax.Array  # float32[GOAL_WINDOW]
    count: jax.Array  # int32, totals written so far (saturates the window)
    index: jax.Array  # int32, next slot


def goal_init() -> GoalState:
    """No games yet: the goal is the fixed 110."""
    return GoalState(jnp.zeros(GOAL_WINDOW, jnp.float32), jnp.int32(0), jnp.int32(0))


def goal_value(goal: GoalState) -> jax.Array:
    """max(110, mean of the remembered totals + 20); 110 before any game."""
    filled = jnp.arange(GOAL_WINDOW) < goal.count
    mean = jnp.sum(jnp.where(filled, goal.totals, 0.0)) / jnp.maximum(goal.count, 1)
    return jnp.where(goal.count > 0, jnp.maximum(FIXED_GOAL, mean + GOAL_MARGIN), FIXED_GOAL)


def reward_goal(reward: str, goal: GoalState) -> jax.Array:
    """The total the end reward compares against: the moving goal for `moving-average`, else 110."""
    if reward == "moving-average":
        return goal_value(goal)
    return jnp.float32(FIXED_GOAL)


def goal_update(goal: GoalState, totals: jax.Array) -> GoalState:
    """Remember a batch of totals (only the last `GOAL_WINDOW` of them can matter)."""
    totals = totals.astype(jnp.float32)[-GOAL_WINDOW:]
    slots = (goal.index + jnp.arange(totals.shape[0])) % GOAL_WINDOW
    return GoalState(
        totals=goal.totals.at[slots].set(totals),
        count=jnp.minimum(goal.count + totals.shape[0], GOAL_WINDOW),
        index=(goal.index + totals.shape[0]) % GOAL_WINDOW,
    )


def intermediate_rewards(states: State, actions: jax.Array, next_states: State) -> jax.Array:
    """Yuan's per-decision reward [T, B]: (box points - optimal mean for the box) / 10 at scores."""
    scoring = actions >= NUM_KEEP_ACTIONS
    box = jnp.clip(actions - NUM_KEEP_ACTIONS, 0, NUM_CATEGORIES - 1)
    points = jnp.take_along_axis(next_states.scores, box[..., None], axis=-1)[..., 0]
    means = jnp.asarray(YUAN_BOX_MEANS, jnp.float32)[box]
    return jnp.where(scoring, (points - means) / INTERMEDIATE_SCALE, 0.0)


def terminal_reward(
    reward: str, own_total: jax.Array, other_total: jax.Array, goal: jax.Array | float
) -> jax.Array:
    """The end-of-game reward of a variant (see the module docstring), float32[B]."""
    own = own_total.astype(jnp.float32)
    other = other_total.astype(jnp.float32)
    if reward in ("naive", "win"):
        return jnp.sign(own - other)
    if reward == "gradient":
        return jnp.where(own > other, 1.0, jnp.where(own == other, 0.0, (own - other) / 100.0))
    if reward == "fixed":  # whatever goal is passed: fixed means 110
        return jnp.sign(own - FIXED_GOAL)
    if reward == "moving-average":
        return jnp.sign(own - jnp.asarray(goal, jnp.float32))
    raise ValueError(f"no terminal reward for {reward!r}")


def learner_rewards(
    reward: str,
    states: State,
    actions: jax.Array,
    next_states: State,
    own_total: jax.Array,
    other_total: jax.Array,
    goal: jax.Array | float = FIXED_GOAL,
) -> jax.Array:
    """float32[T, B]: the learner's reward at each of its decisions under variant `reward`."""
    if reward == "score":
        return next_states.reward.astype(jnp.float32)
    per_decision = (
        intermediate_rewards(states, actions, next_states)
        if reward in YUAN_REWARDS
        else jnp.zeros(actions.shape, jnp.float32)
    )
    final = terminal_reward(reward, own_total, other_total, goal)
    return per_decision.at[-1].add(final)


def match_metrics(
    own_total: jax.Array, other_total: jax.Array, rewards: jax.Array, goal: jax.Array
) -> dict[str, jax.Array]:
    """Training scalars of one update's matches: scores, win and draw rates, return, goal."""
    result = jnp.sign(own_total - other_total)
    return {
        "train/mean_score": jnp.mean(own_total.astype(jnp.float32)),
        "train/opponent_mean_score": jnp.mean(other_total.astype(jnp.float32)),
        "train/win_rate": jnp.mean((result > 0).astype(jnp.float32)),
        "train/draw_rate": jnp.mean((result == 0).astype(jnp.float32)),
        "train/mean_return": jnp.mean(jnp.sum(rewards, axis=0)),
        "train/goal": jnp.asarray(goal, jnp.float32),
    }


# --------------------------------------------------------------------------------------------
# The match rollout
# --------------------------------------------------------------------------------------------

MATCH_BATCH = 2_000  # matches per compiled batch when evaluating
# learner(own [B], other [B], keys [B]) -> (actions int32[B], extras with leading axis B)
LearnerPolicy = Callable[[State, State, jax.Array], tuple[jax.Array, Any]]
# opponent(own [b], other [b], keys [b]) -> actions int32[b]; own = the opponent's card
OpponentPolicy = Callable[[State, State, jax.Array], jax.Array]
# record(own, other, action, next_own, extras) -> what the rollout keeps of one decision
MatchRecorder = Callable[[State, State, jax.Array, State, Any], Any]


class MatchResult(NamedTuple):
    """The final cards of a batch of matches and the learner's records [39, B, ...]."""

    learner: State
    opponent: State
    records: Any


def first_half(batch: int) -> int:
    """Lanes [0, this) have the learner in the first seat."""
    return (batch + 1) // 2


def learner_seats(batch: int) -> np.ndarray:
    """int[B]: the learner's seat in each lane of a match rollout (0 first, 1 second)."""
    return (np.arange(batch) >= first_half(batch)).astype(np.int32)


def _take(tree: Any, start: int, stop: int) -> Any:
    return jax.tree.map(lambda leaf: leaf[start:stop], tree)


def _join(first: Any, second: Any) -> Any:
    return jax.tree.map(lambda a, b: jnp.concatenate([a, b]), first, second)


def _decision_keys(play_keys: jax.Array, decision: jax.Array) -> tuple[jax.Array, jax.Array]:
    split = jax.vmap(lambda key: jax.random.split(jax.random.fold_in(key, decision)))(play_keys)
    return split[:, 0], split[:, 1]


def play_matches(
    learner: LearnerPolicy,
    opponent: OpponentPolicy,
    keys: jax.Array,
    rules: Rules,
    record: MatchRecorder,
) -> MatchResult:
    """Play one match per key (see the module docstring); the learner's seat by lane half.

    A match key splits into (init key, play key); seat-independent dice: the learner's card
    uses ``fold_in(., 0)`` of each, the opponent's ``fold_in(., 1)``; decision k of a card uses
    ``split(fold_in(play key, k))`` = (policy key, dice key), as the solitaire play loop does.
    """
    batch = keys.shape[0]
    half = first_half(batch)
    split = jax.vmap(jax.random.split)(keys)
    init_keys, play_keys = split[:, 0], split[:, 1]
    fold = jax.vmap(jax.random.fold_in, in_axes=(0, None))
    learner_cards = jax.vmap(engine.init)(fold(init_keys, 0))
    opponent_cards = jax.vmap(engine.init)(fold(init_keys, 1))
    learner_play, opponent_play = fold(play_keys, 0), fold(play_keys, 1)

    def step_cards(cards: State, actions: jax.Array, dice_keys: jax.Array) -> State:
        return jax.vmap(lambda s, a, k: engine.step(s, a, k, rules))(cards, actions, dice_keys)

    def opponent_turn(
        own: State, other: State, play: jax.Array, turn: jax.Array
    ) -> State:  # the opponent's three decisions on its own cards (a lane subset)
        # A scan over the rolls, not an unrolled loop: the opponent's (large) program is
        # compiled once per seat half instead of three times.
        def decide(own: State, roll: jax.Array) -> tuple[State, None]:
            policy_keys, dice_keys = _decision_keys(play, turn * DECISIONS_PER_TURN + roll)
            return step_cards(own, opponent(own, other, policy_keys), dice_keys), None

        return jax.lax.scan(decide, own, jnp.arange(DECISIONS_PER_TURN))[0]

    def play_turn(carry: tuple[State, State], turn: jax.Array) -> tuple[tuple, Any]:
        mine, theirs = carry
        if half < batch:  # the opponent moves first where the learner sits second
            late = opponent_turn(
                _take(theirs, half, batch),
                _take(mine, half, batch),
                opponent_play[half:],
                turn,
            )
            theirs = _join(_take(theirs, 0, half), late)

        def decide(mine: State, roll: jax.Array) -> tuple[State, Any]:
            policy_keys, dice_keys = _decision_keys(learner_play, turn * DECISIONS_PER_TURN + roll)
            actions, extras = learner(mine, theirs, policy_keys)
            moved = step_cards(mine, actions, dice_keys)
            return moved, record(mine, theirs, actions, moved, extras)

        mine, records = jax.lax.scan(decide, mine, jnp.arange(DECISIONS_PER_TURN))
        early = opponent_turn(
            _take(theirs, 0, half), _take(mine, 0, half), opponent_play[:half], turn
        )
        theirs = _join(early, _take(theirs, half, batch))
        return (mine, theirs), records

    (mine, theirs), records = jax.lax.scan(
        play_turn, (learner_cards, opponent_cards), jnp.arange(NUM_TURNS)
    )
    # [turns, 3, B, ...] -> [39, B, ...]: the learner's decisions in order
    records = jax.tree.map(
        lambda leaf: leaf.reshape((DECISIONS_PER_GAME, *leaf.shape[2:])), records
    )
    return MatchResult(mine, theirs, records)


# --------------------------------------------------------------------------------------------
# Opponents
# --------------------------------------------------------------------------------------------

_BUILTIN_CACHE: dict[tuple[str, str], Any] = {}


def builtin_opponent(name: str, rules: Rules) -> OpponentPolicy:
    """A built-in agent (optimal, greedy1-3, random) as a batched opponent on its own card."""
    cache_key = (name, rules.name)
    if cache_key not in _BUILTIN_CACHE:
        from yahtzee_jax.agents import resolve_agent

        # The first call often comes inside a jit trace: build the agent's tables eagerly, so the
        # cache holds concrete arrays and not a tracer that a later compile would find leaked.
        with jax.ensure_compile_time_eval():
            _BUILTIN_CACHE[cache_key] = resolve_agent(name, rules)
    return agent_policy(_BUILTIN_CACHE[cache_key])


def agent_policy(agent: Agent) -> OpponentPolicy:
    """Any agent as a batched match policy: its `match_act` where it reads the opponent's
    card, else its play on its own card (`batch_act`, or `act` vmapped)."""

    def policy(own: State, other: State, keys: jax.Array) -> jax.Array:
        if agent.match_act is not None:
            return agent.match_act(agent.params, own, other, keys)
        if agent.batch_act is not None:
            return agent.batch_act(agent.params, own, keys)
        return jax.vmap(agent.act, in_axes=(None, 0, 0))(agent.params, own, keys)

    return policy


def match_opponent(config: Config, rules: Rules, opponent_params: Any) -> OpponentPolicy:
    """The training task's opponent: a built-in agent, or the frozen learner (`self`)."""
    if config.algo.opponent != "self":
        return builtin_opponent(config.algo.opponent, rules)
    greedy = greedy_policy(config, opponent_params, rules)
    return lambda own, other, keys: greedy(own, other, keys)[0]


def game_keys(seed: int, first: int, count: int) -> jax.Array:
    """Match keys of games first .. first + count - 1 of a seed, even games in the first half."""
    games = np.arange(first, first + count)
    order = np.concatenate([games[games % 2 == 0], games[games % 2 == 1]])
    return jax.vmap(jax.random.fold_in, in_axes=(None, 0))(jax.random.key(seed), jnp.asarray(order))


# --------------------------------------------------------------------------------------------
# Greedy acting of a trained learner, solitaire evaluation and match evaluation
# --------------------------------------------------------------------------------------------


def greedy_policy(config: Config, params: Any, rules: Rules) -> LearnerPolicy:
    """The argmax policy of a trained network (DQN's Q or an actor-critic's policy) in a match."""
    from yahtzee_jax.algorithms import get_algorithm

    network = get_algorithm(config.algo.name).make_network(config)
    opponents = uses_opponent_features(config)

    def policy(own: State, other: State, keys: jax.Array) -> tuple[jax.Array, None]:
        x = pair_features(own, other, config.features, rules, opponents)
        legal = jax.vmap(lambda state: engine.legal_action_mask(state, rules))(own)
        out = network.apply({"params": params}, x)
        if config.algo.name.startswith("dqn"):
            scores = jnp.where(legal, out, -jnp.inf)
        else:
            from yahtzee_jax.networks import policy_log_probs

            scores = policy_log_probs(out, legal, own.roll_index)
        return jnp.argmax(scores, axis=-1).astype(jnp.int32), None

    return policy


MATCH_PLAYERS = ("win-seeker", "optimal")  # built-in players `main` evaluates in the learner seat


def match_player(
    name: str,
    rules: Rules,
    endgame_open: int | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> LearnerPolicy:
    """A built-in match player: the solver's `win-seeker` (exact score distributions in the
    turns that leave at most `endgame_open` boxes open; default `endgame.ENDGAME_OPEN`), or a
    built-in agent (`optimal`). `cache_dir` is the solver's."""
    if name == "win-seeker":
        from yahtzee_jax.solver.endgame import ENDGAME_OPEN
        from yahtzee_jax.solver.win_seeker import make_win_seeker

        endgame = ENDGAME_OPEN if endgame_open is None else endgame_open
        return make_win_seeker(rules, cache_dir, endgame_open=endgame)
    return as_learner(builtin_opponent(name, rules))


def as_learner(policy: OpponentPolicy) -> LearnerPolicy:
    """A policy that returns actions only, in the learner's seat (no extras to record)."""
    return lambda own, other, keys: (policy(own, other, keys), None)


def fresh_cards(batch_shape: tuple[int, ...]) -> State:
    """Empty cards of a batch: the opponent an agent that reads one meets when it plays alone."""
    return jax.tree.map(lambda leaf: jnp.broadcast_to(leaf, batch_shape + leaf.shape), State())


def play_alone(act: MatchAct) -> Policy:
    """The one-card `act` of an agent that reads its opponent: against an empty card."""

    def alone(params: Any, state: State, key: jax.Array) -> jax.Array:
        return act(params, *map(batch_of_one, (state, State(), key)))[0]

    return alone


def match_act(config: Config, rules: Rules) -> MatchAct:
    """A two-player learner's greedy `match_act`: it reads the opponent's card."""

    def act(params: Any, own: State, other: State, keys: jax.Array) -> jax.Array:
        return greedy_policy(config, params, rules)(own, other, keys)[0]

    return act


def solitaire_act(config: Config, rules: Rules) -> Policy:
    """One-card `act` of a two-player learner (for `evaluate`): the opponent card is empty."""
    return play_alone(match_act(config, rules))


def win_seeker_agent(
    rules: Rules, cache_dir: str | os.PathLike | None = None, endgame_open: int | None = None
) -> Agent:
    """The win-seeker as an agent: `match_act` plays against the opponent's card, `act` alone
    against an empty one (its tables are computed on first use, then cached)."""
    policy = match_player("win-seeker", rules, endgame_open, cache_dir)

    def act(params: Any, own: State, other: State, keys: jax.Array) -> jax.Array:
        return policy(own, other, keys)[0]

    def batch_alone(params: Any, states: State, keys: jax.Array) -> jax.Array:
        return act(params, states, fresh_cards(keys.shape), keys)

    return Agent("win-seeker", play_alone(act), rules=rules, batch_act=batch_alone, match_act=act)


def evaluate_matches(
    config: Config,
    params: Any,
    opponent: str = "optimal",
    num_games: int = 100_000,
    seed: int = 2,
    batch_size: int = MATCH_BATCH,
) -> dict[str, Any]:
    """Greedy learner against a built-in opponent: win/draw/loss, Wilson 95 % CI, mean scores."""
    rules = get_rules(config.train.rules)
    learner = greedy_policy(config, params, rules)
    return evaluate_policy_matches(learner, rules, opponent, num_games, seed, batch_size)


def evaluate_policy_matches(
    learner: LearnerPolicy,
    rules: Rules,
    opponent: str = "optimal",
    num_games: int = 100_000,
    seed: int = 2,
    batch_size: int = MATCH_BATCH,
) -> dict[str, Any]:
    """Any match policy against a built-in opponent (`evaluate_matches`' figures)."""
    from yahtzee_jax.tournament import wilson_interval

    rival = builtin_opponent(opponent, rules)
    started = time.perf_counter()
    own_total, other_total = match_totals(learner, rival, rules, num_games, seed, batch_size)
    seat = np.arange(num_games) % 2
    result = np.sign(own_total - other_total)
    wins, draws, losses = (int(np.sum(result == value)) for value in (1, 0, -1))
    low, high = wilson_interval(wins, num_games)
    margin = (own_total - other_total).astype(np.float64)
    return {
        "opponent": opponent,
        "rules": rules.name,
        "seed": seed,
        "games": num_games,
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "win_rate": wins / num_games,
        "win_interval_95": [low, high],
        "wins_by_seat": [int(np.sum((result == 1) & (seat == s))) for s in (0, 1)],
        "games_by_seat": [int(np.sum(seat == s)) for s in (0, 1)],
        "mean_score": float(own_total.mean()),
        "score_stderr": float(own_total.std(ddof=1) / math.sqrt(num_games)),
        "opponent_mean_score": float(other_total.mean()),
        "mean_margin": float(margin.mean()),
        "margin_stderr": float(margin.std(ddof=1) / math.sqrt(num_games)),
        "wall_s": time.perf_counter() - started,
    }


def match_totals(
    learner: LearnerPolicy,
    opponent: OpponentPolicy,
    rules: Rules,
    num_games: int,
    seed: int,
    batch_size: int = MATCH_BATCH,
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Both players' final totals in matches 0..N-1 of a seed, in game order: the learner sits
    first in the even games, second in the odd ones (`game_keys`)."""

    def totals_of(keys: jax.Array) -> tuple[jax.Array, jax.Array]:
        result = play_matches(learner, opponent, keys, rules, lambda *args: None)
        return engine.total_score(result.learner), engine.total_score(result.opponent)

    run = jax.jit(totals_of)
    own, other = np.zeros(num_games, np.int64), np.zeros(num_games, np.int64)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=num_games, unit="match", desc="matches")
    for first in range(0, num_games, batch_size):
        count = min(batch_size, num_games - first)
        if count % 2:  # halves need even lanes for game parity: play one extra, drop it below
            count += 1
        mine, theirs = jax.device_get(run(game_keys(seed, first, count)))
        games = np.arange(first, first + count)
        order = np.concatenate([games[games % 2 == 0], games[games % 2 == 1]])
        keep = order < num_games
        own[order[keep]], other[order[keep]] = mine[keep], theirs[keep]
        if bar is not None:
            bar.update(int(keep.sum()))
    if bar is not None:
        bar.close()
    return own, other


def format_result(name: str, result: dict[str, Any]) -> str:
    """One line: wins [95 % CI], draws, mean score, mean margin, games."""
    low, high = result["win_interval_95"]
    return (
        f"{name} vs {result['opponent']}: wins {100 * result['win_rate']:.2f} % "
        f"[{100 * low:.2f}, {100 * high:.2f}], "
        f"draws {100 * result['draws'] / result['games']:.2f} %, "
        f"mean {result['mean_score']:.2f} +- {result['score_stderr']:.2f} "
        f"(opponent {result['opponent_mean_score']:.2f}), margin {result['mean_margin']:.2f}, "
        f"{result['games']:,} games"
    )


def training_curve(run_dir: str | Path, window: int = 20) -> dict[str, list[float]]:
    """A run's training matches as curves: games, win rate and mean score, moving means over
    `window` updates, or over all of them when fewer were logged (the sampling / epsilon-greedy
    policy against the training opponent). A run that logged no `train/win_rate` raises KeyError."""
    from yahtzee_jax.runlog import read_scalars

    scalars = read_scalars(run_dir)
    games = np.array([step for step, _ in scalars["train/win_rate"]], np.float64)
    window = max(1, min(window, len(games)))
    curves = {"games": games[window - 1 :].tolist()}
    for tag, name in (("train/win_rate", "win_rate"), ("train/mean_score", "mean_score")):
        values = np.array([value for _, value in scalars[tag]], np.float64)
        curves[name] = np.convolve(values, np.ones(window) / window, mode="valid").tolist()
    return curves


def plot_curves(
    curves: dict[str, dict[str, list[float]]],
    finals: dict[str, dict[str, Any]],
    out: str | Path,
    window: int = 20,
) -> Path:
    """PNG: each run's training win rate and mean score (`training_curve`) against games, with
    its final greedy win rate (95 % interval) and mean score against the optimal agent as a point
    at the end."""
    from matplotlib.figure import Figure

    from yahtzee_jax.plots import save_figure

    figure = Figure(figsize=(11, 4.2))
    win_axes, score_axes = figure.subplots(1, 2)
    for label, curve in curves.items():
        (line,) = win_axes.plot(curve["games"], 100 * np.asarray(curve["win_rate"]), label=label)
        score_axes.plot(curve["games"], curve["mean_score"], color=line.get_color(), label=label)
        final = finals.get(label)
        if final is not None:
            low, high = final["win_interval_95"]
            rate = 100 * final["win_rate"]
            error = [[rate - 100 * low], [100 * high - rate]]
            x = curve["games"][-1]
            win_axes.errorbar([x], [rate], yerr=error, fmt="o", color=line.get_color())
            score_axes.plot([x], [final["mean_score"]], "o", color=line.get_color())
    win_axes.axhline(50, color="grey", lw=0.8, ls="--")
    win_axes.set(xlabel="training games", ylabel="wins vs optimal-solitaire (%)")
    score_axes.set(xlabel="training games", ylabel="learner's mean score")
    win_axes.set_title(
        f"training matches (moving mean of {window} updates); dot: greedy, final evaluation",
        fontsize=9,
    )
    win_axes.legend(fontsize=8)
    figure.tight_layout()
    return save_figure(figure, out)


def plot_win_rates(results: dict[str, dict[str, Any]], out: str | Path) -> Path:
    """PNG: each player's win rate against the optimal agent with its 95 % interval (the JSON of
    `python -m yahtzee_jax.two_player ... --out`), a bar per player, and the 50 % line."""
    from matplotlib.figure import Figure

    from yahtzee_jax.plots import save_figure

    labels = list(results)
    rates = np.array([100 * results[label]["win_rate"] for label in labels])
    intervals = np.array([results[label]["win_interval_95"] for label in labels]) * 100
    figure = Figure(figsize=(8, 0.55 * len(labels) + 1.4))
    axes = figure.subplots()
    positions = np.arange(len(labels))[::-1]
    errors = [rates - intervals[:, 0], intervals[:, 1] - rates]
    axes.barh(positions, rates, xerr=errors, color="tab:blue", alpha=0.7, capsize=3)
    for position, label, rate in zip(positions, labels, rates, strict=True):
        games = results[label]["games"]
        axes.text(
            rate + 0.6, position, f"{rate:.2f} %  ({games:,} matches)", va="center", fontsize=8
        )
    axes.axvline(50, color="grey", lw=0.8, ls="--")
    axes.set_yticks(positions, labels, fontsize=8)
    low = max(0.0, float(intervals.min()) - 5)
    axes.set_xlim(low, max(55.0, float(intervals.max()) + 8))
    axes.set(xlabel="wins against the optimal-solitaire agent (%, 95 % Wilson interval)")
    figure.tight_layout()
    return save_figure(figure, out)


def main(argv: list[str] | None = None) -> int:
    """`python -m yahtzee_jax.two_player RUN ...`: a run's greedy agent against an opponent."""
    from yahtzee_jax.checkpointing import load_checkpoint

    parser = argparse.ArgumentParser(prog="python -m yahtzee_jax.two_player")
    parser.add_argument(
        "run", help=f"run or checkpoint directory, or a built-in player: {MATCH_PLAYERS}"
    )
    parser.add_argument("--opponent", default="optimal")
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=MATCH_BATCH)
    parser.add_argument("--rules", default="official", help="rules of a built-in player's games")
    parser.add_argument(
        "--endgame-open",
        type=int,
        help="win-seeker: exact score distributions for the turns leaving at most this many "
        "boxes open (default 3; each more costs about 3x the table's time)",
    )
    parser.add_argument("--out", help="write the result as JSON here")
    args = parser.parse_args(argv)
    if args.opponent not in OPPONENTS[1:-1]:
        raise ConfigError(f"--opponent={args.opponent!r}; choose one of: {OPPONENTS[1:-1]}")
    if args.run in MATCH_PLAYERS:
        rules = get_rules(args.rules)
        if args.endgame_open is not None and not 0 <= args.endgame_open <= 12:
            raise ConfigError(f"--endgame-open={args.endgame_open}; choose 0 to 12")
        learner = match_player(args.run, rules, args.endgame_open)
        result = evaluate_policy_matches(
            learner, rules, args.opponent, args.games, args.seed, args.batch_size
        )
        result |= {"run": args.run}
        print(format_result(args.run, result))
    else:
        state, config, step = load_checkpoint(args.run)
        result = evaluate_matches(
            config, state["params"], args.opponent, args.games, args.seed, args.batch_size
        )
        result |= {"run": args.run, "update": step}
        print(format_result(f"{config.algo.name}:{Path(args.run).name}@{step}", result))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
