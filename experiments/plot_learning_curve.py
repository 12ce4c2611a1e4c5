"""Plot learning curves (periodic evaluation mean vs training games) of one or more runs.

Usage: python experiments/plot_learning_curve.py RUN_DIR [RUN_DIR ...] [--out OUT.png]
           [--reference LABEL=VALUE ...] [--title TITLE] [--x games|wall] [--label NAME ...]

One run: RUN_DIR/learning_curve.png (or --out) with a +-1 std band. Several runs: one line
each in --out (default learning_curves.png), e.g. to compare the settings of an ablation;
``--reference "paper A2C 250K=230.38"`` draws a dashed horizontal line; ``--x wall`` puts
wall time on the x axis (minutes since each run started, from evals.jsonl; a resumed run's
sessions follow each other, the time a kill lost not counted); ``--label``,
once per run in order, names the lines (default: each run directory's name).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from yahtzee_jax.errors import UserError, exit_status
from yahtzee_jax.evaluation.plots import plot_learning_curves
from yahtzee_jax.runner.runlog import read_evals, training_wall
from yahtzee_jax.runner.single_run import EVALS_FILE, plot_learning_curve


def reference_line(text: str) -> tuple[str, float]:
    """A `--reference LABEL=NUMBER` argument as (label, value)."""
    label, _, value = text.rpartition("=")
    try:
        return label, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LABEL=NUMBER, got {text!r}") from None


def main(argv: list[str]) -> int:
    """Write the plot; print its path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    parser.add_argument("--out", type=Path, default=None, help="output PNG")
    parser.add_argument("--reference", type=reference_line, action="append", default=[])
    parser.add_argument("--title", default="Learning curves", help="plot title (several runs)")
    parser.add_argument("--x", choices=("games", "wall"), default="games", help="x axis")
    parser.add_argument("--label", action="append", default=[], help="a line's name, per run")
    args = parser.parse_args(argv)
    return exit_status(lambda: print(_plot(args)))


def _plot(args: argparse.Namespace) -> Path:
    if len(args.run_dirs) == 1 and not args.reference and args.x == "games":
        return plot_learning_curve(args.run_dirs[0], args.out)
    labels = args.label or [run_dir.name for run_dir in args.run_dirs]
    if len(labels) != len(args.run_dirs) or len(set(labels)) != len(labels):
        raise UserError(f"--label: {len(labels)} distinct names for {len(args.run_dirs)} runs")
    curves = {}
    for label, run_dir in zip(labels, args.run_dirs, strict=True):
        curves[label] = read_evals(run_dir / EVALS_FILE)
        if not curves[label]:
            raise UserError(f"no evaluations in {run_dir / EVALS_FILE}")
        if args.x == "wall":  # each row's clock starts with its session; the run's does not
            walls = training_wall(curves[label])
            if walls is None:
                raise UserError(f"{run_dir / EVALS_FILE}: a row without wall_s; use --x games")
            rows = zip(curves[label], walls, strict=True)
            curves[label] = [{**row, "wall_s": wall} for row, wall in rows]
    out = args.out or Path("learning_curves.png")
    return plot_learning_curves(curves, out, args.title, dict(args.reference), args.x)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
