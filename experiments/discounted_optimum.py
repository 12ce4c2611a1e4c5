"""What the learners' discount costs at best (issue 64): the best policy of the discounted game.

Usage: python experiments/discounted_optimum.py [--gammas 1 0.999 0.995 0.99 0.98]
           [--rules official] [--games 1000000] [--seed 0]
           [--out results/discounted-optimum/results.json]

PPO and A2C discount by `algo.gamma` (0.99 in every preset) at each decision, three a turn, so
they maximise the discounted sum of the points, not the score. For each gamma this solves that
objective exactly (`solver.discounted`) and plays its best policy for `--games` games of the
native player on the same dice (seed), recording the game's own score (and, once gamma 1 is in
the file, how far under the optimal agent's on those dice): an upper bound of what any learner
of that objective reaches, however well it learns. Each gamma's entry is written
when done (the file is kept whole on interruption).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from yahtzee_jax.commands.bench.machine import script_record
from yahtzee_jax.files import write_json
from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver.discounted import policy_table
from yahtzee_jax.solver.native_play import play_optimal


def entry(rules_name: str, gamma: float, games: int, seed: int) -> dict[str, Any]:
    """One gamma: its best discounted value of a game and its policy's scores on the dice."""
    rules = get_rules(rules_name)
    start = time.perf_counter()
    table = policy_table(rules, gamma)
    solved = time.perf_counter() - start
    played = play_optimal(rules, games, seed, value_table=table)
    total = played.total.astype(np.float64)
    return {
        "gamma": gamma,
        "discounted_value": float(table[0, 0, 0] / gamma),
        "mean": float(total.mean()),
        "stderr": float(total.std(ddof=1) / math.sqrt(games)),
        "upper_bonus_rate": float(played.upper_bonus.mean()),
        "yahtzee_bonus_rate": float((played.yahtzee_bonus_count > 0).mean()),
        "games": games,
        "seed": seed,
        "solve_s": round(solved, 2),
        "wall_s": round(time.perf_counter() - start, 2),
    }


def main() -> None:
    """Solve and play each gamma; merge its entry into `--out`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gammas", type=float, nargs="+", default=[1.0, 0.999, 0.995, 0.99, 0.98])
    parser.add_argument("--rules", default="official")
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/discounted-optimum/results.json")
    args = parser.parse_args()
    if args.games < 2:
        parser.error(f"--games: 2 or more; got {args.games}")
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.exists() else {}
    results["machine"] = script_record()
    rows = {row["gamma"]: row for row in results.get("rows", [])}
    for gamma in args.gammas:
        row = entry(args.rules, gamma, args.games, args.seed) | {"rules": args.rules}
        rows[gamma] = row
        if 1.0 in rows:  # the same dice: the difference is far tighter than either's error
            for other in rows.values():
                other["under_optimum"] = rows[1.0]["mean"] - other["mean"]
        results["rows"] = [rows[g] for g in sorted(rows, reverse=True)]
        write_json(out, results)
        print(
            f"gamma {gamma}: {row['mean']:.2f} +- {row['stderr']:.2f}, upper bonus "
            f"{100 * row['upper_bonus_rate']:.2f} %, discounted value {row['discounted_value']:.2f}"
            f" ({row['wall_s']:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
