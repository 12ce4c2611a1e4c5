"""Each game's optimum and the score distribution of its optimal play, as one small JSON a game.

For every rule set asked (default: all seven) it solves the game (or loads the cached table),
computes the exact standard deviation of the optimal player's score from the solver's second
moments, plays `--games` games of the optimal agent (cached by rules, games and seed in the
solver cache: a rerun or an interrupted batch of games loads what was played) and writes
OUT/RULES.json: the optimum, the exact std, the played mean, std, quantiles and a histogram of
the totals in 10-point bins, the bonus and five-alike rates, and the mean points per box. A game
whose JSON exists is skipped (delete it to redo), so the script resumes where it stopped.

    .venv/bin/python experiments/games_table.py --games 100000 --out results/games
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

import numpy as np

from yahtzee_jax.commands.bench.machine import cpu_model
from yahtzee_jax.files import write_whole

QUANTILES = (1, 5, 10, 25, 50, 75, 90, 95, 99)
BIN = 10  # points per histogram bin


def machine() -> str:
    """The CPU this ran on, in a few words."""
    return f"{cpu_model()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the start"


def game_record(rules_name: str, games: int, seed: int) -> dict:
    """Solve, second moments and `games` optimal games of one rule set, as a JSON-ready dict."""
    from yahtzee_jax.evaluation.reports import optimal_reference
    from yahtzee_jax.evaluation.statistics import score_statistics
    from yahtzee_jax.game import get_rules
    from yahtzee_jax.solver.moments import score_moments
    from yahtzee_jax.solver.value_table import solve

    rules = get_rules(rules_name)
    start = time.perf_counter()
    solution = solve(rules)
    values, moments = score_moments(rules)
    optimum = float(values[0, 0, 0])
    exact_std = math.sqrt(float(moments[0, 0, 0]) - optimum**2)
    solved = time.perf_counter() - start
    start = time.perf_counter()
    records = optimal_reference(rules, games, seed, progress=True)
    played = time.perf_counter() - start
    total = records.total
    statistics = score_statistics(records)
    edges = np.arange(0, int(total.max()) + BIN + 1, BIN)
    counts, _ = np.histogram(total, bins=edges)
    return {
        "rules": rules.name,
        "boxes": list(rules.box_names),
        "upper_bonus": [rules.upper_bonus_threshold, rules.upper_bonus_points],
        "optimum": optimum,
        "exact_std": exact_std,
        "solve_from_cache": solution.from_cache,
        "games": games,
        "seed": seed,
        "played": {
            **statistics["score"],
            "quantiles": {str(q): float(np.percentile(total, q)) for q in QUANTILES},
            "histogram": {"bin": BIN, "counts": counts.tolist()},
            "upper_bonus_rate": statistics["upper_bonus_rate"],
            "five_alike_rate": statistics["yahtzee_rate"],
            "mean_yahtzee_bonuses": statistics["mean_yahtzee_bonuses"],
            "category_means": statistics["category_means"],
        },
        "seconds": {"solve_and_moments": solved, "games": played},
    }


def main(argv: list[str] | None = None) -> int:
    """Write OUT/RULES.json for each rule set that has none yet, and print a table."""
    from yahtzee_jax.game import RULE_VARIANTS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rules", nargs="*", default=list(RULE_VARIANTS))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    command = f"python experiments/games_table.py --games {args.games} --seed {args.seed}"
    for name in args.rules:
        path = args.out / f"{name}.json"
        if path.exists():
            continue
        record = game_record(name, args.games, args.seed)
        record |= {"command": f"{command} --rules {name} --out {args.out}", "machine": machine()}
        write_whole(path, json.dumps(record, indent=1) + "\n")
    print(f"{'rules':<16} {'optimum':>10} {'exact std':>9} {'played':>16} {'std':>6} {'median':>6}")
    for name in args.rules:
        record = json.loads((args.out / f"{name}.json").read_text())
        played = record["played"]
        print(
            f"{name:<16} {record['optimum']:>10.4f} {record['exact_std']:>9.2f} "
            f"{played['mean']:>9.2f} ± {played['stderr']:.2f} {played['std']:>6.2f} "
            f"{played['median']:>6.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
