"""The target agent measured: its share of games reaching X, and the ceiling's oracle in matches.

`evaluate_target` plays the target agent for one X and sets the share of its games with a final
score >= X beside the table's exact T_start(X). `ceiling_matches` measures the ceiling of
`solver.ceiling` by simulation: the opponents' final scores S are the optimal agent's games
0 .. k N - 1 of the seed (its cached evaluation games, `evaluate optimal --seed S` for one
opponent), and the oracle plays games k N .. (k + 1) N - 1 of the same seed, on its own dice,
each for X = S + 1 (the best opponent's). Against opponents that do not react, that is a match:
the win, draw and loss are counted as `evaluation.matches.tally` counts them.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import jax.numpy as jnp
import numpy as np

from yahtzee_jax.agents.target import load_target_tables, target_agent
from yahtzee_jax.evaluation.matches import tally
from yahtzee_jax.evaluation.records import play_games
from yahtzee_jax.evaluation.reports import optimal_reference
from yahtzee_jax.evaluation.statistics import mean_stderr, wilson_interval
from yahtzee_jax.game.rules import Rules


def reached(totals: np.ndarray, goals: np.ndarray | int, exact: float) -> dict[str, Any]:
    """The share of `totals` >= their `goals`, its Wilson 95 % interval, and the `exact`
    chance with the share's distance from it in standard errors."""
    hits = int(np.sum(totals >= goals))
    games = len(totals)
    stderr = math.sqrt(max(exact * (1 - exact), 1e-300) / games)
    return {
        "reached": hits,
        "reach_rate": hits / games,
        "reach_interval_95": list(wilson_interval(hits, games)),
        "exact": exact,
        "z": (hits / games - exact) / stderr,
    }


def evaluate_target(
    rules: Rules,
    goal: int,
    num_games: int,
    seed: int,
    cache_dir: str | os.PathLike | None = None,
    **play: Any,
) -> dict[str, Any]:
    """The target agent playing for a final score >= `goal`: how often it gets there over
    `num_games` games of the seed (`play`: `play_games`' batch_size, progress), beside the
    exact T_start(goal) (tables from the cache)."""
    tables, start = load_target_tables(rules, cache_dir)
    agent = target_agent(rules, tables, goal)
    started = time.perf_counter()
    records = play_games(agent, num_games, seed, **play)
    seconds = time.perf_counter() - started
    exact = float(start[goal]) if goal < len(start) else 0.0
    result = {"agent": agent.name, "goal": goal, **_games(rules, seed, records.total)}
    return result | reached(records.total, goal, exact) | {"seconds": seconds}


def _games(rules: Rules, seed: int, totals: np.ndarray) -> dict[str, Any]:
    """What every summary here says of its games: rules, seed, count, mean score."""
    return {
        "rules": rules.name,
        "seed": seed,
        "games": len(totals),
        "mean_score": float(totals.mean()),
        "score_stderr": mean_stderr(totals),
    }


def ceiling_matches(
    rules: Rules,
    num_games: int,
    seed: int,
    players: int,
    exact: float | None,
    *,
    cache_dir: str | os.PathLike | None = None,
    batch_size: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """The oracle (the target agent told the best opponent's final score S, playing for S + 1)
    in `num_games` matches against `players - 1` optimal agents: wins, draws and losses as the
    project counts them, beside the exact chance given the opponents' scores (the mean of
    T_start(S + 1) over the matches) and the `exact` ceiling (`solver.ceiling`) when given."""
    opponents = players - 1
    # The optimal agent's games at its own best batch size: the same games at any (by seed).
    reference = optimal_reference(rules, opponents * num_games, seed, cache_dir)
    others = reference.total.reshape(opponents, num_games).T  # [N, P - 1]
    goals = others.max(axis=1) + 1
    tables, start = load_target_tables(rules, cache_dir)
    oracle = target_agent(rules, tables, 0)
    # Each match's exact chance given its opponents' scores: T_start(S + 1) (0 past the row).
    given = np.append(start, 0.0)[np.minimum(goals, len(start))]

    def batch_params(first: int, count: int) -> Any:
        """The oracle's params for games first .. first + count - 1 (past N: padding)."""
        part = np.zeros(count, np.int32)
        chunk = goals[first : first + count]
        part[: len(chunk)] = chunk
        return oracle.params._replace(goal=jnp.asarray(part))

    started = time.perf_counter()
    records = play_games(
        oracle,
        num_games,
        seed,
        batch_size=batch_size,
        progress=progress,
        batch_params=batch_params,
        first_game=opponents * num_games,
    )
    own = records.total
    _, counts = tally(own, others)
    win_rate = counts["win_rate"]
    summary: dict[str, Any] = {
        "player": "ceiling",
        "opponent": "optimal",
        "players": players,
        **_games(rules, seed, own),
        **counts,
        "opponent_mean_score": float(others.max(axis=1).mean()),
        "mean_margin": float((own - others.max(axis=1)).mean()),
        # Exact over the oracle's dice, sampled over the opponents' (their s.e. alone): the
        # simulation's wins must match it within sqrt(mean T (1 - T) / N).
        "given_scores_win_rate": float(given.mean()),
        "given_scores_stderr": mean_stderr(given),
        "given_scores_z": (win_rate - given.mean())
        / math.sqrt(np.mean(given * (1 - given)) / num_games),
        "exact_win_rate": exact,
        "wall_s": time.perf_counter() - started,
    }
    if exact is not None:  # the simulation's distance from the exact figure, in standard errors
        summary["z"] = (win_rate - exact) / math.sqrt(exact * (1 - exact) / num_games)
    return summary
