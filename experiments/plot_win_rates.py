"""Plot match results against the optimal agent: a bar per player with its 95 % interval.

Usage: python experiments/plot_win_rates.py LABEL=RESULT.json [...] --out OUT.png

Each RESULT.json is what ``yahtzee-jax match RUN_OR_PLAYER --out FILE`` writes; RESULT.json#NAME
reads the variant NAME of what `experiments/match_open_ablation.py` writes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from plot_two_player_curves import labelled, read_result

from yahtzee_jax.errors import exit_status
from yahtzee_jax.evaluation.matches import plot_win_rates


def main(argv: list[str]) -> int:
    """Write the plot; print its path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=labelled, metavar="LABEL=RESULT.json")
    parser.add_argument("--out", type=Path, required=True, help="output PNG")
    args = parser.parse_args(argv)

    def plot() -> None:
        results = {label: read_result(path) for label, path in args.results}
        print(plot_win_rates(results, args.out))

    return exit_status(plot)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
