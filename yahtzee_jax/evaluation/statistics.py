"""The paper's statistics of a set of games (Tables 3-5, Figures 20-22), as JSON-ready dicts.

Pure numpy over `GameRecords`: a notebook can summarise games without the command line.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from yahtzee_jax.evaluation.game_records import GameRecords

# The paper's Table 4 thresholds, and its "share of games >= 250" column.
SCORE_THRESHOLDS = (50, 100, 150, 200, 250, 300, 400, 500, 750, 1000)
HIGH_SCORE = 250
TOP_CATEGORIES_PER_TURN = 3


def category_mean_scores(records: GameRecords) -> dict[str, float]:
    """Mean points per box, then the mean points of each bonus (the paper's Figures 20-21)."""
    rules = records.rule_set
    means = dict(zip(rules.box_names, records.box_scores.mean(axis=0).tolist(), strict=True))
    means["upper_bonus"] = float(rules.upper_bonus_points * records.upper_bonus.mean())
    bonuses = records.yahtzee_bonus_count.mean()
    means["yahtzee_bonus"] = float(rules.yahtzee_bonus_points * bonuses)
    return means


def score_statistics(records: GameRecords) -> dict[str, Any]:
    """Score distribution, bonus rates and P(score >= n) of a set of games."""
    total = records.total
    std = float(total.std(ddof=1)) if total.size > 1 else 0.0
    return {
        "score": {
            "mean": float(total.mean()),
            "stderr": std / math.sqrt(total.size),
            "std": std,
            "median": float(np.median(total)),
            "min": int(total.min()),
            "max": int(total.max()),
        },
        "upper_bonus_rate": float(records.upper_bonus.mean()),
        "yahtzee_rate": float(records.yahtzee_scored.mean()),
        "mean_yahtzee_bonuses": float(records.yahtzee_bonus_count.mean()),
        "share_at_least_250": float(np.mean(total >= HIGH_SCORE)),
        "p_score_at_least": {str(n): float(np.mean(total >= n)) for n in SCORE_THRESHOLDS},
        "category_means": category_mean_scores(records),
    }


def turn_usage(records: GameRecords) -> list[dict[str, Any]]:
    """Top categories scored at each turn with usage share and median points (Table 5)."""
    names = records.rule_set.box_names
    rows = []
    for turn in range(records.turn_categories.shape[1]):
        categories = records.turn_categories[:, turn]
        counts = np.bincount(categories, minlength=len(names))
        order = np.argsort(-counts, kind="stable")  # ties: the earlier box first
        top = [
            {
                "category": names[category],
                "usage": float(counts[category] / records.num_games),
                "median_score": float(np.median(records.turn_points[categories == category, turn])),
            }
            for category in order[:TOP_CATEGORIES_PER_TURN]
            if counts[category] > 0
        ]
        rows.append({"turn": turn + 1, "top_categories": top})
    return rows


def first_category_distribution(records: GameRecords) -> dict[str, float]:
    """Share of games whose first scored box is each category (the paper's Figure 22)."""
    names = records.rule_set.box_names
    counts = np.bincount(records.turn_categories[:, 0], minlength=len(names))
    return dict(zip(names, (counts / records.num_games).tolist(), strict=True))


def summarize(records: GameRecords, optimal_records: GameRecords | None = None) -> dict:
    """JSON-ready summary of `records`, side by side with the optimal agent's when given."""
    summary: dict[str, Any] = {
        "agent": records.agent,
        "rules": records.rules,
        "games": records.num_games,
        "seed": records.seed,
        **score_statistics(records),
        "turns": turn_usage(records),
        "first_category": first_category_distribution(records),
        "optimal": None,
    }
    if optimal_records is not None:
        if optimal_records.rules != records.rules:
            raise ValueError(
                f"optimal games under {optimal_records.rules!r} cannot be compared with games "
                f"under {records.rules!r}"
            )
        optimal = score_statistics(optimal_records)
        optimal["games"] = optimal_records.num_games
        optimal["seed"] = optimal_records.seed
        optimal["first_category"] = first_category_distribution(optimal_records)
        optimal["percent_of_optimal"] = {
            name: (100.0 * value / optimal["category_means"][name])
            if optimal["category_means"][name] > 0
            else None
            for name, value in summary["category_means"].items()
        }
        summary["optimal"] = optimal
    return summary


Z_95 = 1.959963984540054  # the normal quantile of a two-sided 95 % interval


def mean_stderr(values: np.ndarray) -> float:
    """The standard error of the values' mean; 0.0 for a single value (no spread to measure:
    NaN was written into JSON files that strict readers refuse)."""
    values = np.asarray(values, np.float64)
    return float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else 0.0


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (95 % by default)."""
    if trials < 1:
        raise ValueError(f"need at least one trial, got {trials}")
    share = successes / trials
    z2n = z * z / trials
    center = (share + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(share * (1 - share) / trials + z2n / (4 * trials))
    # At 0 or all successes the bound is exactly 0 or 1 (center -+ half cancel), which floating
    # point misses by an ulp (0.9999999999999999); elsewhere clamp the rounding error.
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == trials else min(1.0, center + half)
    return low, high
