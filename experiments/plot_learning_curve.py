"""Plot the learning curve (periodic evaluation mean vs training games) of one run directory.

Usage: python experiments/plot_learning_curve.py RUN_DIR [OUT.png]
"""

from __future__ import annotations

import sys

from yahtzee_jax.train import plot_learning_curve


def main(argv: list[str]) -> int:
    """Write RUN_DIR/learning_curve.png (or OUT.png) from RUN_DIR/evals.jsonl."""
    if not 1 <= len(argv) <= 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    print(plot_learning_curve(*argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
