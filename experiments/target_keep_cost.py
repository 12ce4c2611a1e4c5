"""What keeping a target solve's finished layers costs (`solver.target_keep`): the same solve
with its layers kept and keeping nothing, alternated, each in a fresh folder.

    python experiments/target_keep_cost.py [--rules official] [--repeats 1]
        [--json results/target-keep/official.json]

Each pass solves the rule set's target table (`solve_target_table`, every CPU) twice: keeping
its layers as `target_tables` does (at a layer's end once `--keep-every-s` has passed since the
last keep) and keeping nothing, in that order, then the other order in the next pass. It records
each solve's seconds and each keep's layer and seconds. `--down-to-filled N` solves only the
layers with at least N boxes filled (a quick run: the tests).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from yahtzee_jax import files
from yahtzee_jax.commands.bench.machine import script_record
from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver import target_keep, target_table


def timed_solve(rules: str, keep: bool, every_s: float, down_to_filled: int) -> dict[str, Any]:
    """One solve in a fresh folder: its seconds and its keeps' (layer, seconds)."""
    keeps: list[dict[str, float]] = []
    write = target_keep.Keeper._keep

    def timed_keep(keeper: target_keep.Keeper, done: int) -> None:
        start = time.perf_counter()
        write(keeper, done)
        keeps.append({"layer": done, "seconds": time.perf_counter() - start})

    target_keep.Keeper._keep = timed_keep
    try:
        with tempfile.TemporaryDirectory(prefix="target-keep-") as folder:
            keep_file = Path(folder) / "targets.partial.npy" if keep else None
            target_table.KEEP_EVERY_S = every_s
            start = time.perf_counter()
            target_table.solve_target_table(
                rules, down_to_filled=down_to_filled, keep_file=keep_file
            )
            seconds = time.perf_counter() - start
    finally:
        target_keep.Keeper._keep = write
    return {"keep": keep, "seconds": seconds, "keeps": keeps}


def main(argv: list[str] | None = None) -> int:
    """Time the solves, print a line each and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="official")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--keep-every-s", type=float, default=target_table.KEEP_EVERY_S)
    parser.add_argument("--down-to-filled", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    get_rules(args.rules)  # an unknown name is a one-line error before any solve
    words = sys.argv[1:] if argv is None else argv
    record = script_record(["experiments/target_keep_cost.py", *words])
    solves = []
    for repeat in range(args.repeats):
        for keep in (True, False) if repeat % 2 == 0 else (False, True):
            solve = timed_solve(args.rules, keep, args.keep_every_s, args.down_to_filled)
            kept = ", ".join(f"layer {k['layer']} {k['seconds']:.1f} s" for k in solve["keeps"])
            print(f"{'kept' if keep else 'nothing kept'}: {solve['seconds']:.1f} s ({kept})")
            solves.append(solve)
    result = {
        "rules": args.rules,
        "down_to_filled": args.down_to_filled,
        "keep_every_s": args.keep_every_s,
        "solves": solves,
        "machine": record,
    }
    if args.json:
        files.write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
