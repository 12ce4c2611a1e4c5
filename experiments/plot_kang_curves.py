"""Mean score against rounds trained: Kang & Schroeder's three learners beside A2C's early curve.

Usage: python experiments/plot_kang_curves.py --run q-lambda=runs/kang-q-lambda
           --run hrl=runs/kang-hrl --run hrl-g1=runs/kang-hrl-g1 --run a2c=runs/a2c-early
           [--saved a2c=docs/kang/learning_curves.json] [--out docs/kang/learning_curves.png]

Each run's periodic evaluations (`evals.jsonl`: greedy play, the run's own evaluation games) are
plotted against the rounds trained (games x 13), on a log axis; the seed's final figures
(Table IV) are marked at their budgets. The plotted points are written beside the figure as
JSON; `--saved LABEL=JSON` plots a curve from such a file (a run whose directory is gone).
A learner's curves share a colour, the first solid, later ones ("hrl 100x", then "hrl") dashed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from yahtzee_jax.evaluation.plots import save_figure
from yahtzee_jax.files import write_whole

ROUNDS_PER_GAME = 13
# seed 001, Table IV (1,000 games) at its training budgets in rounds
SEED_POINTS = {
    "q-lambda": (130_000, 77.772),
    "hrl": (2_000_000, 120.299),
    "hrl-g1": (1_000_000, 129.580),
}


def read_curve(run: Path) -> list[tuple[int, float]]:
    """(rounds trained, mean score) of each periodic evaluation of a run."""
    points = []
    for line in (run / "evals.jsonl").read_text().splitlines():
        record = json.loads(line)
        points.append((record["games"] * ROUNDS_PER_GAME, record["mean"]))
    return points


def main(argv: list[str]) -> int:
    """Draw the figure and write its points."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", default=[], help="LABEL=RUN_DIR")
    parser.add_argument("--saved", action="append", default=[], help="LABEL=POINTS_JSON")
    parser.add_argument("--out", type=Path, default=Path("docs/kang/learning_curves.png"))
    args = parser.parse_args(argv)
    curves = {}
    for item in args.run:
        label, _, path = item.partition("=")
        curves[label] = read_curve(Path(path))
    for item in args.saved:
        label, _, path = item.partition("=")
        saved = json.loads(Path(path).read_text())
        if label not in saved:
            raise SystemExit(f"{path} has no curve {label!r} (it has {', '.join(saved)})")
        curves[label] = [tuple(point) for point in saved[label]]
    figure, axes = plt.subplots(figsize=(7, 4.2))
    colors: dict[str, str] = {}  # one colour per learner ("hrl 100x" and "hrl" share it)
    for label, points in curves.items():
        rounds, means = zip(*points, strict=True)
        learner = label.split(" ")[0]
        again = learner in colors  # a learner's second curve is dashed
        style = {"color": colors[learner], "linestyle": "--"} if again else {}
        line = axes.plot(rounds, means, label=label, linewidth=1.2, **style)[0]
        colors.setdefault(learner, line.get_color())
        if learner in SEED_POINTS and not again:
            x, y = SEED_POINTS[learner]
            axes.plot([x], [y], marker="*", markersize=11, color=line.get_color(), linestyle="")
    axes.set_xscale("log")
    axes.set_xlabel("rounds trained (games x 13)")
    axes.set_ylabel("mean score (greedy evaluation)")
    axes.set_title("plain rules; stars: Kang & Schroeder's Table IV at their budgets")
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left", fontsize=8)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    save_figure(figure, args.out, dpi=110)
    write_whole(args.out.with_suffix(".json"), json.dumps(curves, indent=1) + "\n")
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
