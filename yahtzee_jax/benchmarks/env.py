"""`yahtzee-jax bench env`: the vmapped engine against the plain-Python reference game.

Both play whole games with a uniformly random legal policy in the same process, so the ratio
between them is meaningful on a noisy machine. Compile time is reported apart.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp

from yahtzee_jax.agents.base import uniform_legal_action
from yahtzee_jax.game import (
    DECISIONS_PER_GAME,
    State,
    get_rules,
    init,
    legal_action_mask,
    step,
    total_score,
)
from yahtzee_jax.game.rules import Rules

DEFAULT_BATCH_SIZES = (1, 256, 4096, 65536)


def make_random_games(rules: Rules) -> Callable[[jax.Array], jax.Array]:
    """A jitted function: keys[B] -> final scores[B] of B uniformly random legal games."""

    def one_game(key: jax.Array) -> jax.Array:
        init_key, dice_key, policy_key = jax.random.split(key, 3)
        # All randomness drawn up front: one threefry call per stream instead of a split per step.
        dice_keys = jax.random.split(dice_key, DECISIONS_PER_GAME)
        policy_bits = jax.random.bits(policy_key, (DECISIONS_PER_GAME,), jnp.uint32)

        def decide(state: State, step_input: tuple[jax.Array, jax.Array]):
            step_key, bits = step_input
            action = uniform_legal_action(legal_action_mask(state, rules), bits)
            return step(state, action, step_key, rules), None

        final, _ = jax.lax.scan(decide, init(init_key), (dice_keys, policy_bits))
        return total_score(final)

    return jax.jit(jax.vmap(one_game))


def measure_engine(batch_size: int, rules: Rules, min_seconds: float, seed: int = 0) -> dict:
    """Compile once, then time whole batches of games for at least `min_seconds`."""
    play = make_random_games(rules)
    keys = jax.random.split(jax.random.key(seed), batch_size)
    start = time.perf_counter()
    compiled = play.lower(keys).compile()
    compile_seconds = time.perf_counter() - start
    jax.block_until_ready(compiled(keys))  # warm-up run
    batches, scores_sum = 0, 0.0
    start = time.perf_counter()
    while True:
        keys = jax.random.split(jax.random.fold_in(jax.random.key(seed), batches), batch_size)
        scores = jax.block_until_ready(compiled(keys))
        batches += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            break
    scores_sum = float(scores.mean())
    games = batches * batch_size
    return {
        "batch_size": batch_size,
        "games_per_second": games / elapsed,
        "steps_per_second": games * DECISIONS_PER_GAME / elapsed,
        "compile_seconds": compile_seconds,
        "games": games,
        "mean_score_last_batch": scores_sum,
    }


def measure_reference(rules_name: str, min_seconds: float, seed: int = 0) -> dict:
    """Games per second of the plain-Python reference game, one game at a time."""
    from yahtzee_jax.reference import play_random_game

    games, steps = 0, 0
    start = time.perf_counter()
    while time.perf_counter() - start < min_seconds:
        _, decisions = play_random_game(rules_name, seed + games)
        games += 1
        steps += decisions
    elapsed = time.perf_counter() - start
    return {"games_per_second": games / elapsed, "steps_per_second": steps / elapsed}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `bench env`."""
    parser.add_argument(
        "--batch-sizes",
        type=lambda text: tuple(int(x) for x in text.split(",")),
        default=DEFAULT_BATCH_SIZES,
        help="comma-separated batch sizes (default 1,256,4096,65536)",
    )
    parser.add_argument("--rules", default="official", help="rule variant (default official)")
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per measurement")
    parser.add_argument("--json", dest="json_path", help="also write the results to this file")


def run(args: argparse.Namespace) -> int:
    """Run the benchmark and print a table."""
    rules = get_rules(args.rules)
    if any(size < 1 for size in args.batch_sizes):
        from yahtzee_jax.errors import UserError

        raise UserError("--batch-sizes must all be >= 1")
    device = jax.devices()[0]
    print(f"device: {device.platform} ({device.device_kind}), rules: {rules.name}")
    reference = measure_reference(rules.name, args.seconds)
    rows = [measure_engine(size, rules, args.seconds) for size in args.batch_sizes]
    header = f"{'batch':>8} {'games/s':>12} {'steps/s':>14} {'compile s':>10} {'x reference':>12}"
    print(header)
    print("-" * len(header))
    for row in rows:
        row["speedup_vs_reference"] = row["games_per_second"] / reference["games_per_second"]
        print(
            f"{row['batch_size']:>8} {row['games_per_second']:>12,.0f} "
            f"{row['steps_per_second']:>14,.0f} {row['compile_seconds']:>10.2f} "
            f"{row['speedup_vs_reference']:>11.1f}x"
        )
    print(
        f"{'python':>8} {reference['games_per_second']:>12,.0f} "
        f"{reference['steps_per_second']:>14,.0f} {'-':>10} {1.0:>11.1f}x  (plain-Python reference)"
    )
    best = max(rows, key=lambda row: row["games_per_second"])
    print(
        f"best: {best['speedup_vs_reference']:.1f}x the plain-Python game "
        f"at batch {best['batch_size']}"
    )
    if args.json_path:
        result = {
            "device": str(device),
            "rules": rules.name,
            "reference": reference,
            "engine": rows,
        }
        with open(args.json_path, "w") as handle:
            json.dump(result, handle, indent=2)
    return 0
