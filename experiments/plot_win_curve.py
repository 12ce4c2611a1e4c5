"""Plot a match learner's win rate against training games: its periodic evaluations (matches
against the training opponent, with their Wilson 95 % intervals, from evals.jsonl) and the
training matches' win rate (train/win_rate, averaged over windows of updates).

Usage: python experiments/plot_win_curve.py RUN_DIR --out OUT.png [--window 50]
           [--reference LABEL=RATE ...] [--title TITLE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from yahtzee_jax.evaluation.plots import save_figure
from yahtzee_jax.runner.runlog import EVALS_FILE, read_evals, read_scalars


def main(argv: list[str]) -> int:
    """Write the plot; print its path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="output PNG")
    parser.add_argument("--window", type=int, default=50, help="updates per training point")
    parser.add_argument("--reference", action="append", default=[], help="LABEL=RATE (0-1)")
    parser.add_argument("--title", default="Win rate against training games")
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in read_evals(args.run_dir / EVALS_FILE) if "win_rate" in row]
    scalars = read_scalars(args.run_dir)["train/win_rate"]
    games = np.array([step for step, _ in scalars], np.float64)
    rates = np.array([value for _, value in scalars], np.float64)
    cut = len(rates) // args.window * args.window
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(
        games[:cut].reshape(-1, args.window).mean(axis=1),
        rates[:cut].reshape(-1, args.window).mean(axis=1),
        color="0.6",
        label=f"training matches ({args.window} updates each)",
    )
    x = np.array([row["games"] for row in rows], np.float64)
    y = np.array([row["win_rate"] for row in rows])
    low, high = np.array([row["win_interval_95"] for row in rows]).T
    ax.errorbar(x, y, yerr=[y - low, high - y], fmt="o-", capsize=3, label="evaluations")
    for index, text in enumerate(args.reference):
        label, _, value = text.rpartition("=")
        ax.axhline(float(value), linestyle="--", linewidth=1, label=label, color=f"C{3 + index}")
    ax.set_xlabel("training matches")
    ax.set_ylabel("win rate")
    ax.set_title(args.title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, args.out, dpi=110)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
