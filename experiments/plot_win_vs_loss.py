"""Win rate against solitaire skill: where a learned match player's line meets perfect play.

Usage: python experiments/plot_win_vs_loss.py LABEL=MATCH.json,REGRET.json[:two] [...]
           [--exact LABEL=MATCH.json ...] [--target 0.5129] --out OUT.png [--json FIT.json]

Each learned player is a point: x its expected shortfall from the optimum in points a game (what
`experiments/planner_regret.py` writes; `:two` reads its two-turn search's loss), y its win rate
against the optimal-solitaire agent (the JSON of `yahtzee-jax match RUN --out FILE`, or
FILE#NAME: a variant of what `experiments/match_open_ablation.py` writes). The line is a
least-squares fit weighted by each win rate's binomial variance (the losses' own errors,
about 0.04 points, are left out); its value at a loss of 0 is what the same match rule would win
if its solitaire play were perfect, with a 95 % interval. `--exact` draws players at a loss of 0
(the solver-based win-seeker), `--target` a horizontal line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from plot_two_player_curves import labelled, read_json, read_result

from yahtzee_jax.errors import UserError, exit_status
from yahtzee_jax.evaluation.statistics import Z_95
from yahtzee_jax.files import write_whole

REGRET_KEYS = {
    "": "one_turn_loss_per_game",
    "two": "two_turn_loss_per_game_on_its_positions",
}


def point(label: str, spec: Path) -> dict:
    """A learned player's loss (and its error) and win rate (and interval) from its two files."""
    match_file, comma, regret_spec = str(spec).partition(",")
    if not comma:
        raise UserError(f"{label}: expected MATCH.json,REGRET.json[:two], got {str(spec)!r}")
    regret_file, _, depth = regret_spec.partition(":")
    if depth not in REGRET_KEYS:
        raise UserError(f"{label}: unknown search depth {depth!r} (expected :two or nothing)")
    match, regret = read_result(Path(match_file)), read_json(Path(regret_file))
    loss, loss_error = regret[REGRET_KEYS[depth]]
    return {
        "label": label,
        "loss": loss,
        "loss_stderr": loss_error,
        "win_rate": match["win_rate"],
        "win_interval_95": match["win_interval_95"],
        "games": match["games"],
        "match": match_file,
        "regret": regret_spec,
    }


def weighted_line(loss: np.ndarray, rate: np.ndarray, games: np.ndarray) -> dict:
    """Least squares of rate on loss weighted by 1/binomial variance: slope, intercept and the
    intercept's standard error."""
    if len(loss) < 2 or np.ptp(loss) == 0:
        raise UserError("a line needs at least two players of different losses")
    weight = games / (rate * (1 - rate))
    design = np.stack([np.ones_like(loss), loss], axis=1)
    covariance = np.linalg.inv(design.T @ (weight[:, None] * design))
    intercept, slope = covariance @ design.T @ (weight * rate)
    return {
        "intercept": float(intercept),
        "intercept_stderr": float(np.sqrt(covariance[0, 0])),
        "slope": float(slope),
        "covariance": covariance.tolist(),
    }


def fit(points: list[dict]) -> dict:
    """The weighted line through the points, its value at loss 0 with a 95 % interval."""
    loss, rate, games = (
        np.array([p[key] for p in points], float) for key in ("loss", "win_rate", "games")
    )
    line = weighted_line(loss, rate, games)
    half = Z_95 * line["intercept_stderr"]
    return {**line, "at_zero_loss_95": [line["intercept"] - half, line["intercept"] + half]}


def interval_error(result: dict) -> list[list[float]]:
    """A win rate's 95 % interval as matplotlib's asymmetric error bar, in percent."""
    low, high = result["win_interval_95"]
    return [[100 * (result["win_rate"] - low)], [100 * (high - result["win_rate"])]]


def draw(points: list[dict], exact: dict[str, dict], line: dict, target: float | None, out: Path):
    """The points, the line and its 95 % band down to a loss of 0, exact players and target."""
    from matplotlib.figure import Figure

    from yahtzee_jax.evaluation.plots import save_figure

    figure = Figure(figsize=(7.5, 4.6))
    axes = figure.subplots()
    xs = np.linspace(0.0, max(p["loss"] for p in points) * 1.05, 50)
    design = np.stack([np.ones_like(xs), xs], axis=1)
    spread = Z_95 * np.sqrt(np.einsum("ij,jk,ik->i", design, np.array(line["covariance"]), design))
    centre = line["intercept"] + line["slope"] * xs
    axes.fill_between(xs, 100 * (centre - spread), 100 * (centre + spread), alpha=0.2, lw=0)
    axes.plot(xs, 100 * centre, lw=1, label="weighted fit, 95 % band")
    for p in points:
        axes.errorbar(
            p["loss"],
            100 * p["win_rate"],
            xerr=Z_95 * p["loss_stderr"],
            yerr=interval_error(p),
            fmt="o",
            capsize=3,
            label=p["label"],
        )
    for label, result in exact.items():
        axes.errorbar(
            0,
            100 * result["win_rate"],
            yerr=interval_error(result),
            fmt="*",
            ms=11,
            capsize=3,
            label=label,
        )
    if target is not None:
        axes.axhline(
            100 * target, color="tab:red", ls="--", lw=1, label=f"target {100 * target:g} %"
        )
    axes.axhline(50, color="grey", ls=":", lw=0.8)
    axes.set(
        xlabel="expected shortfall from the optimum, points a game (judged by the exact table)",
        ylabel="wins against optimal-solitaire (%)",
    )
    axes.legend(fontsize="x-small", loc="lower left")
    figure.tight_layout()
    return save_figure(figure, out)


def main(argv: list[str]) -> int:
    """Write the plot (and --json); print the fit's line at loss 0 and the plot's path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("points", nargs="+", type=labelled, metavar="LABEL=MATCH.json,REGRET.json")
    parser.add_argument("--exact", type=labelled, action="append", default=[])
    parser.add_argument("--target", type=float, help="a win rate to draw, e.g. 0.5129")
    parser.add_argument("--out", type=Path, required=True, help="output PNG")
    parser.add_argument("--json", type=Path, help="write the points and the fit here")
    args = parser.parse_args(argv)

    def run() -> None:
        points = [point(label, spec) for label, spec in args.points]
        exact = {label: read_result(path) for label, path in args.exact}
        line = fit(points)
        low, high = line["at_zero_loss_95"]
        print(
            f"at a loss of 0: {100 * line['intercept']:.2f} % [{100 * low:.2f}, {100 * high:.2f}]"
        )
        print(f"slope: {100 * line['slope']:.2f} points of win rate per point of loss")
        if args.json:
            exact_rates = {label: result["win_rate"] for label, result in exact.items()}
            record = {"points": points, "fit": line, "exact": exact_rates, "target": args.target}
            write_whole(args.json, json.dumps(record, indent=1) + "\n")
        print(draw(points, exact, line, args.target, args.out))

    return exit_status(run)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
