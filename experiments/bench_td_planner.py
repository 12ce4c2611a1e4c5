"""Training speed of td-planner against A2C (`fast-cpu`) in one process on the same machine.

Usage: python experiments/bench_td_planner.py [--repeats N] [--json OUT.json]
           [--presets fast-cpu,td-planner] [--batches 64,256,1024]

Each preset's fused training chunk is compiled and timed as `yahtzee-jax bench train` times it
(`commands.bench.train_speed.time_chunk`: the best of N calls of K updates, compilation apart); the
td-planner has no bare forward+backward twin, so only the pipeline is timed. `--batches` times
each preset at each of those games per update instead of its own (`train.games_per_update`).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

from yahtzee_jax.commands.bench.scaling import positive_integers
from yahtzee_jax.commands.bench.train_speed import time_chunk
from yahtzee_jax.errors import exit_status
from yahtzee_jax.files import write_json
from yahtzee_jax.runner.configs import resolve


def main(argv: list[str]) -> int:
    """Print one row per preset (and write them to --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--presets", default="fast-cpu,td-planner")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--batches", default=None, help="games per update (default: the preset's)")
    args = parser.parse_args(argv)

    def run() -> None:
        batches = [None] if args.batches is None else positive_integers(args.batches, "--batches")
        rows = []
        for preset, batch in itertools.product(args.presets.split(","), batches):
            overrides = [] if batch is None else [f"train.games_per_update={batch}"]
            config = resolve(preset, overrides=overrides)
            row = {"preset": preset} | time_chunk(config, args.repeats)
            rows.append(row)
            print(
                f"{preset}: {row['games_per_second']:,.0f} games/s "
                f"({row['ms_per_update']:.1f} ms per update of {row['games_per_update']} games, "
                f"compile {row['compile_seconds']:.1f} s)",
                flush=True,
            )
        if args.json is not None:
            write_json(args.json, rows)

    return exit_status(run)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
