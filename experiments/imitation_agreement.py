"""How often a trained student's greedy decisions are the optimal agent's, on the student's own
games (issue 64's imitation ceiling): the student plays every decision, the optimal agent
(`optimal-table`) is asked at each for its choice.

Usage: python experiments/imitation_agreement.py RUN_DIR [--games 10000] [--seed 5]

Prints one JSON line: the share of all 39 decisions a game where both agree, of the keeps and
of the box choices. Two keeps agree when they keep the same dice (with a pair on the table,
keeping the first or the second die of it is one move).
"""

from __future__ import annotations

import argparse
import json
import sys

import jax
import jax.numpy as jnp

from yahtzee_jax.agents import builtin_agent
from yahtzee_jax.envs.environment import no_others
from yahtzee_jax.game import engine
from yahtzee_jax.game.rules import DECISIONS_PER_TURN, NUM_KEEP_ACTIONS
from yahtzee_jax.runner.checkpointing import load_agent
from yahtzee_jax.solver.widget_tables import KEEP_OF_ACTION, ROLL_OF_CODE, dice_code


def agreement(run: str, games: int, seed: int) -> dict[str, float]:
    """Shares of the student's decisions (all, keeps, boxes) that are the optimal agent's."""
    student = load_agent(run)
    rules = student.rules
    teacher = builtin_agent("optimal-table", rules)
    decisions = rules.num_turns * DECISIONS_PER_TURN

    @jax.jit
    def play(key: jax.Array) -> tuple[jax.Array, jax.Array]:
        first, key = jax.random.split(key)
        cards = jax.vmap(engine.init, (0, None))(jax.random.split(first, games), rules)

        def decide(carry, _):
            cards, key = carry
            key, act_key, dice_key = jax.random.split(key, 3)
            keys = jax.random.split(act_key, games)
            mine = student.policy(student.params, cards, no_others(cards), keys)
            best = teacher.policy(teacher.params, cards, no_others(cards), keys)
            keeping = cards.roll_index < engine.LAST_ROLL
            roll = jnp.asarray(ROLL_OF_CODE)[dice_code(cards.dice, jnp)]
            both = jnp.stack([mine, best], 1) % NUM_KEEP_ACTIONS  # a box's index is unused
            kept = jnp.asarray(KEEP_OF_ACTION)[roll[:, None], both]
            agree = jnp.where(keeping, kept[:, 0] == kept[:, 1], mine == best)
            step = jax.vmap(engine.step, (0, 0, 0, None))
            cards = step(cards, mine, jax.random.split(dice_key, games), rules)
            return (cards, key), (agree, keeping)

        _, (same, keeping) = jax.lax.scan(decide, (cards, key), None, length=decisions)
        return same, keeping

    same, keeping = play(jax.random.key(seed))
    same, keeping = same.astype(jnp.float32), keeping.astype(jnp.float32)
    return {
        "games": games,
        "agreement": float(jnp.mean(same)),
        "agreement_keep": float(jnp.sum(same * keeping) / jnp.sum(keeping)),
        "agreement_score": float(jnp.sum(same * (1 - keeping)) / jnp.sum(1 - keeping)),
    }


def main(argv: list[str]) -> int:
    """Print the run's agreement as one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args(argv)
    print(json.dumps(agreement(args.run, args.games, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
