"""What the cache checksum costs when a target table is loaded (issue 67), on a table of the size
of official's (1.56 GiB) or on a cached table itself.

    python experiments/cache_checksum_cost.py --cache-dir D [--rules official] [--repeats 3]
        [--json results/cache-checksum/official-size.json]

Where D holds no target table of the rules, one of the right size is written there first (random
chances in [0, 1): the checksum and the range checks read every byte whatever they hold), through
`files.written_checked` as `target_tables` writes one; a table there without its checksum (an
earlier version's) gets one, as `files.cached` gives it. Then, `--repeats` times: the checksum
(`files.check_state`) and `load_targets` (the map and its range checks), each timed alone; the
file is in the page cache after the first pass. Give D a copy of a real cache, never the cache
itself (a checksum file would be written beside its table).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

from yahtzee_jax import files
from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver.target_layout import target_layout
from yahtzee_jax.solver.target_table import load_targets, target_cache_file


def main(argv: list[str] | None = None) -> int:
    """Measure and print (and write as JSON) the checksum's and the load's seconds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", required=True)
    parser.add_argument("--rules", default="official")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    rules = get_rules(args.rules)
    layout = target_layout(rules)
    path = target_cache_file(rules, "target", args.cache_dir)
    written, source = None, "found there"
    if not path.exists():
        source = "random chances, written here"
        chances = np.random.default_rng(0).random(layout.size)
        start = time.perf_counter()
        with files.written_checked(path, ".tmp.npy") as partial:
            np.save(partial, chances)
        written = time.perf_counter() - start
        del chances
    elif files.check_state(path) == "unchecked":
        start = time.perf_counter()
        files.write_whole(files.checksum_path(path), files.named_checksum(path, path.name) + "\n")
        written = time.perf_counter() - start
    runs = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        state = files.check_state(path)
        checksum = time.perf_counter() - start
        start = time.perf_counter()
        loaded = load_targets(path, rules)
        runs.append({"checksum_s": checksum, "load_s": time.perf_counter() - start})
        if state != "whole" or loaded is None:
            print(f"{path}: {state}, loaded: {loaded is not None}", file=sys.stderr)
            return 1
    result = {
        "rules": rules.name,
        "bytes": path.stat().st_size,
        "table": source,
        "written_s": written,  # the table and its checksum, or the checksum alone
        "runs": runs,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "load_average": list(os.getloadavg()),
    }
    for run in runs:
        print(f"checksum {run['checksum_s']:.2f} s, map and range checks {run['load_s']:.2f} s")
    if args.json:
        files.write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
