"""Plot two-player training runs: the training matches' win rate and mean score against games.

Usage: python experiments/plot_two_player_curves.py [LABEL=RUN_DIR ...] --out OUT.png
           [--saved CURVES.json] [--final LABEL=RESULT.json ...] [--json CURVES.json]
           [--window UPDATES]

Each LABEL=RUN_DIR is a two-player run (`a2c-2p`, or DQN with an opponent): its logged
`train/win_rate` and `train/mean_score`, moving means over --window updates. ``--saved`` adds the
curves of an earlier call (runs whose directories are gone); ``--json`` writes every plotted curve
for such a later call. ``--final LABEL=FILE`` draws that run's greedy result against the optimal
agent (the JSON of ``yahtzee-jax match RUN --out FILE``) as a point at its end.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from yahtzee_jax.errors import UserError, exit_status
from yahtzee_jax.evaluation.matches import plot_curves
from yahtzee_jax.files import write_whole
from yahtzee_jax.runner.runlog import training_curve


def labelled(text: str) -> tuple[str, Path]:
    # At the first "=": population members' directories are named like lr=1e-4.
    label, _, path = text.partition("=")
    if not label or not path:
        raise argparse.ArgumentTypeError(f"expected LABEL=PATH, got {text!r}")
    return label, Path(path)


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise UserError(f"cannot read {path}: {error}") from None


def read_result(path: Path) -> dict:
    """A match result: RESULT.json, or RESULT.json#NAME for the variant NAME of what
    `experiments/match_open_ablation.py` writes."""
    file, _, variant = str(path).partition("#")
    data = read_json(Path(file))
    if not variant:
        return data
    if variant not in data.get("results", {}):
        raise UserError(f"{file} has no variant {variant!r}")
    return data["results"][variant]


def main(argv: list[str]) -> int:
    """Write the plot (and --json); print the plot's path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=labelled, metavar="LABEL=RUN_DIR")
    parser.add_argument("--out", type=Path, required=True, help="output PNG")
    parser.add_argument("--saved", type=Path, help="curves written by an earlier --json")
    parser.add_argument("--final", type=labelled, action="append", default=[])
    parser.add_argument("--json", type=Path, help="write every plotted curve here")
    parser.add_argument("--window", type=int, default=20, help="moving mean, in updates")
    args = parser.parse_args(argv)
    return exit_status(lambda: print(_plot(args)))


def _plot(args: argparse.Namespace) -> Path:
    curves = read_json(args.saved) if args.saved else {}
    for label, run_dir in args.runs:
        try:
            curves[label] = training_curve(run_dir, args.window)
        except KeyError:
            raise UserError(f"{run_dir} logged no train/win_rate: not a two-player run") from None
    if not curves:
        raise UserError("nothing to plot: give LABEL=RUN_DIR or --saved CURVES.json")
    finals = {label: read_json(path) for label, path in args.final}
    unknown = sorted(set(finals) - set(curves))
    if unknown:
        raise UserError(f"--final for a label with no curve: {unknown}")
    if args.json:
        write_whole(args.json, json.dumps(curves) + "\n")
    return plot_curves(curves, finals, args.out, args.window)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
