"""Plot runs' final scores against their training games: where more games stop paying.

Usage: python experiments/plot_final_vs_games.py --series LABEL=RUN_DIR[,RUN_DIR...] [...]
           --out OUT.png [--json OUT.json] [--reference LABEL=VALUE ...] [--title TITLE]

Each RUN_DIR holds a finished run's summary.json (a results/ folder or a run directory): its
games and its final evaluation's mean and standard error make one point; the runs of a series
are joined in order of their games (runs of the same budget on other seeds stand side by side).
``--json`` writes the points drawn, with each run's folder and seed.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from plot_learning_curve import reference_line

from yahtzee_jax.errors import exit_status
from yahtzee_jax.evaluation.plots import final_vs_games_figure, save_figure
from yahtzee_jax.files import write_json
from yahtzee_jax.runner.finished_run import read_finished_run


def _series(text: str) -> tuple[str, list[Path]]:
    label, sep, runs = text.partition("=")
    if not sep or not label or not runs:
        raise argparse.ArgumentTypeError(f"expected LABEL=RUN_DIR[,RUN_DIR...], got {text!r}")
    return label, [Path(run) for run in runs.split(",")]


def read_point(run_dir: Path) -> dict:
    """One finished run's training games, final mean and standard error, and seed."""
    run = read_finished_run(run_dir)
    final = run.final_eval
    point = {"games": run.games, "mean": float(final["mean"]), "stderr": float(final["stderr"])}
    return {"run": str(run_dir), **point, "final_eval_seed": run.final_eval_seed}


def main(argv: list[str]) -> int:
    """Write the plot (and the points as JSON); print the plot's path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=_series, action="append", required=True)
    parser.add_argument("--out", type=Path, required=True, help="output PNG")
    parser.add_argument("--json", type=Path, default=None, help="the points drawn, as JSON")
    parser.add_argument("--reference", type=reference_line, action="append", default=[])
    parser.add_argument("--title", default="Final score against training games")
    args = parser.parse_args(argv)

    def plot() -> None:
        points = {label: [read_point(run) for run in runs] for label, runs in args.series}
        series = {
            label: [(p["games"], p["mean"], p["stderr"]) for p in rows]
            for label, rows in points.items()
        }
        figure = final_vs_games_figure(series, args.title, dict(args.reference))
        if args.json:
            command = shlex.join(["python", "experiments/plot_final_vs_games.py", *argv])
            write_json(args.json, {"command": command, "series": points})
        print(save_figure(figure, args.out))

    return exit_status(plot)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
