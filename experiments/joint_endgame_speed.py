"""The joint endgame's solve (`solver/joint_endgame.py`) timed at this tree and at an earlier
commit, side by side in one process on the same "expected" target table, and whether the two
tables are the same to the bit:

    python experiments/joint_endgame_speed.py --rules official --before 1b2c3d4 --out FILE.json

The earlier module is read with `git show REV:yahtzee_jax/solver/joint_endgame.py` and
imported beside today's (it imports the rest of the package as it is today). The target
table is that of the last layer only (one box open: all the solve reads), so the figure is
the solve's own, without the table's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from yahtzee_jax.commands.bench.machine import script_record
from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver import joint_endgame
from yahtzee_jax.solver.target_table import solve_target_table
from yahtzee_jax.solver.value_table import solve_value_table

MODULE = "yahtzee_jax/solver/joint_endgame.py"


def module_at(revision: str, folder: Path):
    """The joint endgame module as it was at `revision`, imported under another name."""
    source = subprocess.run(
        ["git", "show", f"{revision}:{MODULE}"], capture_output=True, text=True, check=True
    ).stdout
    path = folder / "joint_endgame_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("joint_endgame_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(module, rules, follow) -> tuple[float, np.ndarray]:
    """(seconds, L) of one solve."""
    start = time.perf_counter()
    _, chances = module.solve_joint_endgame(rules, follow)
    return time.perf_counter() - start, chances


def main(argv: list[str] | None = None) -> int:
    """Time both solves and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="official")
    parser.add_argument("--before", required=True, help="the earlier commit")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    record = script_record()
    rules = get_rules(args.rules)
    last = rules.num_boxes - 1
    values = solve_value_table(args.rules, down_to_filled=last, workers=1)
    follow = solve_target_table(args.rules, "expected", values, last, workers=1)
    with tempfile.TemporaryDirectory() as folder:
        before_module = module_at(args.before, Path(folder))
        before_s, before = timed(before_module, rules, follow)
    after_s, after = timed(joint_endgame, rules, follow)
    result = {
        "rules": args.rules,
        "classes": len(after),
        "before": {"revision": args.before, "seconds": round(before_s, 2)},
        "after": {"seconds": round(after_s, 2)},
        "identical": bool(np.array_equal(before, after)),
        "machine": record,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
