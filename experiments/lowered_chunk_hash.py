"""The sha256 of the lowered program (StableHLO text, no source locations) of `bench train`'s
compiled chunk for one preset and batch size, from the `yahtzee_jax` of the working directory.

Two trees whose hashes agree compile the very same program: the same numbers and the same speed,
whatever a timing on a shared machine says. Run it from each tree's root (issue 66's refactors):

    cd TREE && python ../wt/experiments/lowered_chunk_hash.py cpu-ppo 256 --minibatches 2 \
        [--set algo.table_bits=12 ...] [--text FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))  # the tree run from, before any installed copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("preset")
    parser.add_argument("games_per_update", type=int)
    parser.add_argument("--minibatches", type=int, default=0, help="as `bench train`'s")
    parser.add_argument("--set", action="append", default=[], help="section.key=value")
    parser.add_argument("--text", default=None, help="also write the lowered text here")
    args = parser.parse_args()

    import yahtzee_jax
    from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
    from yahtzee_jax.commands.bench.train_speed import updates_per_call
    from yahtzee_jax.runner.checkpointing import load_run
    from yahtzee_jax.runner.chunk import make_chunk
    from yahtzee_jax.runner.configs import resolve

    overrides = [f"train.games_per_update={args.games_per_update}", *args.set]
    if args.minibatches:
        per_minibatch = args.games_per_update // args.minibatches
        overrides.append(f"algo.games_per_minibatch={per_minibatch}")
    config = resolve(args.preset, overrides=overrides)
    context = make_context(config, load_run)
    updates = updates_per_call(config)
    text = make_chunk(context, updates).lower(init_train_state(context)).as_text()
    if args.text:
        Path(args.text).write_text(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    package = Path(yahtzee_jax.__file__).parent.parent
    print(f"{args.preset} B={args.games_per_update} K={updates} sha256={digest} ({package})")


if __name__ == "__main__":
    main()
