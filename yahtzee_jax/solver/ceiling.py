"""The ceiling of match play against the optimal-solitaire agent, exactly (issue 46).

An oracle told the final score S of its opponent (the best of them, with several) plays to
maximise P(own > S): its best chance is T_start(S + 1) from the target table. Against opponents
whose play does not react to it, no real strategy wins more often, so

    ceiling = sum_S p(S) * T_start(S + 1),

with p the distribution of the best opponent's score. Each opponent's S is the optimal agent's
(expected-score play): P(S >= d) = E(d), its chances at the start in the "expected" table, so
P(S = s) = E(s) - E(s + 1) and the best of k has P(max <= s) = (1 - E(s + 1))^k. A win is
beating every opponent (`evaluation.matches.tally`: a tie is not a win).

Beside it, what the optimal agent itself wins against the same opponents, exactly:
sum_S p(S) * E(S + 1), and its ties, the solitaire player's match figures.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import Rules, get_rules
from yahtzee_jax.solver.target_table import POLICIES, target_cache_file, target_tables


def score_distribution(at_least: np.ndarray) -> np.ndarray:
    """P(S = s), s = 0 .. len - 1, from P(S >= d), d = 0 .. len - 1 (0 from len on)."""
    return at_least - np.append(at_least[1:], 0.0)


def best_of(at_least: np.ndarray, opponents: int) -> np.ndarray:
    """P(max = s) of `opponents` independent scores, each with P(S >= d) = `at_least`[d]."""
    at_most = (1.0 - np.append(at_least[1:], 0.0)) ** opponents  # P(max <= s)
    return at_most - np.append(0.0, at_most[:-1])


def exact_ceiling(best: np.ndarray, follow: np.ndarray, opponents: int) -> dict[str, Any]:
    """The oracle's exact win rate against `opponents` optimal agents, and the optimal agent's.

    `best` is T(d), the best chance of at least d points from the common starting position,
    `follow` the optimal agent's chance E(d) from it (both d = 0 .. the most; equal lengths).
    """
    if opponents < 1:
        raise UserError(f"the ceiling needs at least one opponent, got {opponents}")
    if best.shape != follow.shape:
        raise UserError(f"target rows of {best.shape} and {follow.shape} do not match")
    rival = best_of(follow, opponents)
    beat = np.append(best[1:], 0.0)  # T(s + 1): more than s
    follow_beat = np.append(follow[1:], 0.0)
    solitaire = score_distribution(follow)
    return {
        "opponents": opponents,
        "win_rate": float(rival @ beat),
        "optimal_win_rate": float(rival @ follow_beat),
        "optimal_draw_rate": float(rival @ solitaire),
        "opponent_mean": float(rival @ np.arange(len(rival))),
        "optimal_mean": float(solitaire @ np.arange(len(solitaire))),
        "most": len(best) - 1,
    }


def start_rows(
    rules: str | Rules, cache_dir: str | os.PathLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The empty card's rows T(d) and E(d) of both target tables (cached, or solved: slow)."""
    rows = []
    for policy in ("target", "expected"):  # one 1.6 GiB table at a time: only its first row
        tables = target_tables(rules, cache_dir=cache_dir, policy=policy)
        rows.append(tables.chances((0, 0, 0)).copy())
        del tables
    return rows[0], rows[1]


def rules_ceiling(
    rules: str | Rules, players: int, cache_dir: str | os.PathLike | None = None
) -> dict[str, Any]:
    """`exact_ceiling` of a whole game of `rules` with `players` seats (the oracle's too)."""
    rules = get_rules(rules)
    best, follow = start_rows(rules, cache_dir)
    return {"rules": rules.name, "players": players} | exact_ceiling(best, follow, players - 1)


def cached_ceiling(
    rules: str | Rules, players: int, cache_dir: str | os.PathLike | None = None
) -> dict[str, Any] | None:
    """`rules_ceiling` when both target tables are cached, else None (it never solves them)."""
    rules = get_rules(rules)
    if not all(target_cache_file(rules, policy, cache_dir).exists() for policy in POLICIES):
        return None
    return rules_ceiling(rules, players, cache_dir)
