"""Win rate against the opponent's final score: the ceiling's oracle beside the real players.

Usage: python experiments/plot_win_by_opponent_score.py LABEL=MATCH.json [...] [--rules official]
           [--cache-dir DIR] [--min-games 300] --out OUT.png [--json CURVES.json]

Against an optimal-solitaire opponent whose final score is y, the oracle told y wins with
T_start(y + 1), the best chance of scoring more than y (the target table's first row), and the
optimal agent with E_start(y + 1) (the expected-score table's): both exact, drawn as lines. Each
player (the JSON of `yahtzee-jax match PLAYER --out FILE`, which holds its wins by the opponent's
score in bins of 10 points) is drawn as points with Wilson 95 % intervals, bins with fewer than
`--min-games` matches left out; the shaded area is how often the opponent scores there. The
players' overall win rate is the sum over y of these curves weighted by that area.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from yahtzee_jax.errors import UserError, exit_status
from yahtzee_jax.evaluation.statistics import wilson_interval
from yahtzee_jax.files import write_json


def player_curve(label: str, path: Path, min_games: int) -> dict:
    """A player's win rate by the opponent's score bin, with its interval and overall rate."""
    try:
        result = json.loads(path.read_text())
        bins = result["by_opponent_score"]
    except (OSError, ValueError, KeyError) as error:
        raise UserError(f"{label}: {path} holds no wins by opponent score ({error})") from error
    width = bins["bin_points"]
    games, wins = np.asarray(bins["games"]), np.asarray(bins["wins"])
    kept = np.flatnonzero(games >= min_games)
    intervals = [wilson_interval(int(wins[k]), int(games[k])) for k in kept]
    return {
        "label": label,
        "score": (kept * width + (width - 1) / 2).tolist(),
        "win_rate": (wins[kept] / games[kept]).tolist(),
        "interval": [list(pair) for pair in intervals],
        "overall": result["win_rate"],
        "games": int(games.sum()),
    }


def exact_curves(rules: str, cache_dir: str | None) -> dict:
    """The oracle's T(y + 1) and the optimal agent's E(y + 1), and P(opponent = y)."""
    from yahtzee_jax.solver.ceiling import score_distribution, start_rows

    best, follow = start_rows(rules, cache_dir)
    return {
        "score": np.arange(len(best) - 1).tolist(),
        "oracle": best[1:].tolist(),
        "optimal": follow[1:].tolist(),
        "opponent": score_distribution(follow)[:-1].tolist(),
    }


def draw(exact: dict, players: list[dict], out: Path, rules: str) -> Path:
    """The PNG: exact lines, the players' points, the opponent's distribution shaded."""
    from matplotlib.figure import Figure

    from yahtzee_jax.evaluation.plots import save_figure

    figure = Figure(figsize=(9, 5))
    axes = figure.subplots()
    score = np.asarray(exact["score"])
    shown = score <= 500
    shade = axes.twinx()
    shade.fill_between(score[shown], np.asarray(exact["opponent"])[shown], color="0.85", lw=0)
    shade.set_ylabel("P(opponent scores y)", color="0.5")
    shade.set_ylim(bottom=0)
    axes.set_zorder(shade.get_zorder() + 1)
    axes.patch.set_visible(False)
    axes.plot(score[shown], np.asarray(exact["oracle"])[shown], "k-", label="oracle told y (exact)")
    axes.plot(
        score[shown], np.asarray(exact["optimal"])[shown], "k--", label="optimal agent (exact)"
    )
    for player in players:
        rate, interval = np.asarray(player["win_rate"]), np.asarray(player["interval"])
        errors = np.stack([rate - interval[:, 0], interval[:, 1] - rate]) if len(rate) else None
        axes.errorbar(
            player["score"],
            rate,
            yerr=errors,
            fmt="o",
            ms=3,
            capsize=2,
            label=f"{player['label']}: {100 * player['overall']:.2f} % of "
            f"{player['games']:,} matches",
        )
    axes.set(xlabel="opponent's final score y", ylabel="P(win | opponent scores y)", ylim=(0, 1))
    axes.set_title(f"{rules}: win rate against the optimal agent's score", fontsize=10)
    axes.legend(fontsize=8, loc="upper right")
    figure.tight_layout()
    return save_figure(figure, out)


def main(argv: list[str]) -> int:
    """Read the match files, draw the picture, write the curves as JSON if asked."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("players", nargs="+", help="LABEL=MATCH.json")
    parser.add_argument("--rules", default="official")
    parser.add_argument("--cache-dir")
    parser.add_argument("--min-games", type=int, default=300)
    parser.add_argument("--out", type=Path, required=True, help="output PNG")
    parser.add_argument("--json", type=Path, help="write the curves here")
    args = parser.parse_args(argv)

    def run() -> None:
        players = []
        for spec in args.players:
            label, equals, path = spec.partition("=")
            if not equals:
                raise UserError(f"expected LABEL=MATCH.json, got {spec!r}")
            players.append(player_curve(label, Path(path), args.min_games))
        exact = exact_curves(args.rules, args.cache_dir)
        if args.json:
            write_json(args.json, {"rules": args.rules, "players": players})
        print(draw(exact, players, args.out, args.rules))

    return exit_status(run)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
