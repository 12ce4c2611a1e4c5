"""How much of a trained MAXQ table its greedy play reads, and what a hashed table would collide.

Usage: python experiments/kang_table_coverage.py RUN [RUN ...] [--games 2000] [--bits 20,22,24]
           [--json OUT.json]

For each run (a `maxq` or `maxq-g1` run with the exact table): the rows holding a nonzero value
(states training credited with some points; a row written only with zeros, or never written,
stays 0), the share of its greedy evaluation decisions, per round, that fall on an all-zero row
(the choice is then the tie-break: Re-roll, the first reroll pattern, the first open box), and,
for hashed tables of 2^k rows, the share of the nonzero rows' states that would share their row
with another of them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jax
import numpy as np

from yahtzee_jax.algorithms import get_algorithm
from yahtzee_jax.algorithms.maxq import card_slot
from yahtzee_jax.envs import rules_of
from yahtzee_jax.envs.environment import no_others
from yahtzee_jax.envs.rollout import episode_keys, rollout
from yahtzee_jax.envs.solitaire import Game
from yahtzee_jax.files import write_whole
from yahtzee_jax.networks.maxq_tables import SLOT_HASH, Tables
from yahtzee_jax.runner.checkpointing import load_checkpoint


def collision_share(states: np.ndarray, bits: int) -> float:
    """Share of `states` (exact indices) whose hashed row holds another of them."""
    rows = ((states.astype(np.uint64) * np.uint64(SLOT_HASH)) % np.uint64(2**32)) >> np.uint64(
        32 - bits
    )
    _, inverse, counts = np.unique(rows, return_inverse=True, return_counts=True)
    return float(np.mean(counts[inverse] > 1))


def coverage(run: str, games: int, bits: list[int]) -> dict:
    """The figures of one run."""
    state, config, _ = load_checkpoint(Path(run))
    table = np.asarray(state["params"]["table"])
    written = np.flatnonzero(np.any(table != 0, axis=1))
    rules = rules_of(config)
    network = Tables(rules.num_boxes, 0)
    agent = get_algorithm(config.algo.name).make_agent(config, state["params"], "maxq")
    env = Game(rules, config.features)

    def policy(cards, keys):
        return agent.policy(agent.params, cards, no_others(cards), keys), None

    def record(card, action, after, extras):
        return card_slot(network, card)

    keys = episode_keys(jax.random.PRNGKey(7), 0, games)
    _, rows, _ = jax.jit(lambda k: rollout(env, policy, k, record=record))(keys)
    rows = np.asarray(rows)  # [39, games]
    unseen = ~np.any(table[rows] != 0, axis=-1)
    by_round = unseen.reshape(13, 3, games).mean(axis=(1, 2))
    return {
        "run": run,
        "rows_nonzero": int(written.size),
        "rows_nonzero_share": written.size / table.shape[0],
        "greedy_decisions_on_zero_rows": float(unseen.mean()),
        "by_round": [round(float(x), 4) for x in by_round],
        "hashed_collision_share": {str(k): collision_share(written, k) for k in bits},
        "games": games,
    }


def main(argv: list[str]) -> int:
    """Print and optionally write the figures of each run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--bits", default="20,22,24")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    bits = [int(b) for b in args.bits.split(",")]
    results = [coverage(run, args.games, bits) for run in args.runs]
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        write_whole(args.json, text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
