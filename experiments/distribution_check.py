"""A td-planner's learned value and score distribution against the exact ones, outside training.

Usage: python experiments/distribution_check.py runs/td-planner-match2 --positions 40 --seed 0
           --out results/td-planner-match/distribution_check.json

Random reachable turn-start positions (open boxes, upper total, Yahtzee flag; 4 to 13 boxes
open): the value network's V, the distribution network's mean and standard deviation of the
score to come, and the solver's exact mean and standard deviation under optimal play
(`solver.moments`). The solver is read here only, to judge the learned numbers.
"""

from __future__ import annotations

import argparse

import jax.numpy as jnp
import numpy as np

from yahtzee_jax.algorithms.td_planner import value_leaf
from yahtzee_jax.envs import rules_of
from yahtzee_jax.files import write_json
from yahtzee_jax.runner.checkpointing import load_run
from yahtzee_jax.solver.moments import score_moments


def main() -> None:
    """Print and write the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--positions", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    params, config = load_run(args.run)
    value, dist = value_leaf(config), value_leaf(config, distribution=True)
    exact_value, exact_moment = score_moments(rules_of(config), None)
    rng = np.random.default_rng(args.seed)
    boxes = exact_value.shape[0].bit_length() - 1
    rows = []
    while len(rows) < args.positions:
        open_boxes = rng.choice(boxes, int(rng.integers(4, boxes + 1)), replace=False)
        mask = sum(1 << box for box in range(boxes) if box not in open_boxes)
        upper = int(rng.integers(0, exact_value.shape[1])) if mask else 0
        flag = int(rng.integers(0, 2)) if mask else 0
        exact = float(exact_value[mask, upper, flag])
        if not np.isfinite(exact):  # unreachable
            continue
        spread = np.sqrt(max(float(exact_moment[mask, upper, flag]) - exact**2, 0.0))
        at = tuple(jnp.int32(x) for x in (mask, upper, flag))
        mass = np.asarray(dist(params, *at), np.float64)
        futures = np.arange(mass.size)
        mean = float(mass @ futures)
        std = float(np.sqrt(mass @ (futures - mean) ** 2))
        rows.append(
            {
                "open": len(open_boxes),
                "mask": mask,
                "upper": upper,
                "flag": flag,
                "value": float(value(params, *at)),
                "distribution_mean": mean,
                "distribution_std": std,
                "exact_mean": exact,
                "exact_std": spread,
            }
        )
    for row in rows:
        print(
            f"{row['open']:2d} open, upper {row['upper']:2d}, flag {row['flag']}: V "
            f"{row['value']:7.2f}, distribution {row['distribution_mean']:7.2f} ± "
            f"{row['distribution_std']:5.2f}, exact {row['exact_mean']:7.2f} ± "
            f"{row['exact_std']:5.2f}"
        )
    errors = {
        key: float(np.median([abs(row[key] - row["exact_mean"]) for row in rows]))
        for key in ("value", "distribution_mean")
    }
    print(f"median |error| against the exact mean: {errors}")
    summary = {"run": args.run, "median_abs_error": errors, "positions": rows}
    write_json(args.out, summary)


if __name__ == "__main__":
    main()
