"""Two trained runs on the same deals: the paired difference of their final scores (issue 64).

Usage: python experiments/paired_evaluation.py BASE OTHER [--games 100000] [--seed S]
           [--json PATH]

Each run's newest checkpoint plays the same games (the same seed: by default BASE's final
evaluation's, `train.seed` + 2, so BASE's half repeats its run's final report to the bit), and
the per-game differences give the difference of the means with its own standard error. On the
same deals two near-optimal players' scores move together, so that error is well under the
sqrt(2) x 0.19 of two separate 100,000-game means: an ablation's effect is read from it.
Prints one JSON line (and writes it to PATH); the record names the machine and commit.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from yahtzee_jax.commands.bench.machine import commit, cpu_name
from yahtzee_jax.errors import UserError
from yahtzee_jax.files import write_json
from yahtzee_jax.runner.checkpointing import load_checkpoint
from yahtzee_jax.runner.loop import solitaire_evaluation
from yahtzee_jax.runner.session import FINAL_EVAL_SEED_OFFSET


def run_scores(run: str, games: int, seed: int | None) -> tuple[np.ndarray, dict[str, Any]]:
    """The run's per-game final scores on `games` games of `seed` (its own final evaluation's
    when None), and what was played: the run, its step and seed, the seed of the games."""
    state, config, step = load_checkpoint(run)
    games_seed = config.train.seed + FINAL_EVAL_SEED_OFFSET if seed is None else seed
    scores, _ = solitaire_evaluation(config, state["params"], games, games_seed)
    played = {"run": run, "step": step, "train_seed": config.train.seed, "env": config.env.id}
    return np.asarray(scores, np.float64), {**played, "games_seed": games_seed}


def paired(base: str, other: str, games: int, seed: int | None) -> dict[str, Any]:
    """Both runs' means on the same games, and their difference (OTHER - BASE) with its
    standard error over the games."""
    base_scores, base_played = run_scores(base, games, seed)
    other_scores, other_played = run_scores(other, games, base_played["games_seed"])
    if base_played["env"] != other_played["env"]:  # other rules or tasks: other games
        raise UserError(f"{base} plays {base_played['env']} and {other} {other_played['env']}")
    difference = other_scores - base_scores
    return {
        "base": base_played,
        "other": other_played,
        "games": games,
        "base_mean": float(base_scores.mean()),
        "other_mean": float(other_scores.mean()),
        "difference": float(difference.mean()),
        "difference_stderr": float(difference.std(ddof=1) / np.sqrt(games)),
        "same_score_share": float(np.mean(difference == 0)),
    }


def main(argv: list[str]) -> int:
    """Print (and write) the paired comparison as one JSON line; 2 with one line on bad input."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("other")
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.games < 2:
        parser.error(f"--games {args.games}: a standard error needs at least 2 games")
    try:
        result = paired(args.base, args.other, args.games, args.seed)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    result["machine"] = {"cpu": cpu_name(), "commit": commit()}
    result["command"] = "python experiments/paired_evaluation.py " + " ".join(argv)
    if args.json:
        write_json(Path(args.json), result)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
