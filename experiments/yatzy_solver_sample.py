"""Write yatzy-solver's values of a sample of late Yatzy turn-start states for the fast test.

The values come from yatzy-solver (the Rust exact solver, `pip install yatzy-solver`), not from
this package: tests/test_yatzy_cross_check.py compares our partial solve (the states with at
least `--min-filled` of the 15 boxes filled, about a second) with them in `make test`, and the
slow test there compares every turn-start state with a live yatzy-solver build.

    .venv/bin/python experiments/yatzy_solver_sample.py \
        --out tests/golden/yatzy_solver_sample.json
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

BOXES = 15  # Scandinavian Yatzy's card; the six upper boxes are bits 0..5
THRESHOLD = 63  # the upper bonus threshold: upper totals are capped there


def upper_totals(mask: int) -> list[int]:
    """Upper totals (capped at 63) the filled upper boxes of `mask` can hold: 0..5 dice each."""
    totals = {0}
    for face in range(1, 7):
        if mask >> (face - 1) & 1:
            totals = {min(t + face * n, THRESHOLD) for t in totals for n in range(6)}
    return sorted(totals)


def main(argv: list[str] | None = None) -> int:
    """Sample the states, value them with yatzy-solver and write the JSON file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--states", type=int, default=1500)
    parser.add_argument("--min-filled", type=int, default=10)
    parser.add_argument("--seed", type=int, default=28)
    args = parser.parse_args(argv)
    import yatzy_solver

    rng = random.Random(args.seed)
    late = [m for m in range(1 << BOXES) if args.min_filled <= bin(m).count("1") < BOXES]
    states = sorted({(m, rng.choice(upper_totals(m))) for m in rng.sample(late, args.states)})
    start = time.perf_counter()
    solver = yatzy_solver.Solver.build(yatzy_solver.Variant("yatzy-scandinavian"))
    masks, uppers = (np.array(column) for column in zip(*states, strict=True))
    values = solver.state_values(
        masks.astype(np.uint32), uppers.astype(np.uint16), np.zeros(len(states), bool)
    )
    record = {
        "source": f"yatzy-solver {yatzy_solver.SOLVER_VERSION}, variant yatzy-scandinavian, "
        f"Solver.build ({solver.precision}), {time.perf_counter() - start:.1f} s",
        "command": "python experiments/yatzy_solver_sample.py --out "
        f"tests/golden/yatzy_solver_sample.json --states {args.states} "
        f"--min-filled {args.min_filled} --seed {args.seed}",
        "min_filled": args.min_filled,
        "empty_card": solver.state_value("upper 0 | filled -"),
        "states": [
            [int(m), int(u), float(v)] for m, u, v in zip(masks, uppers, values, strict=True)
        ],
    }
    # One state a line: [filled mask, capped upper total, value].
    header = json.dumps({k: v for k, v in record.items() if k != "states"}, indent=1)[:-2]
    rows = ",\n".join(json.dumps(row) for row in record["states"])
    args.out.write_text(f'{header},\n "states": [\n{rows}\n]\n}}\n')
    print(f"{len(states)} states -> {args.out}; empty card {record['empty_card']:.10f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
