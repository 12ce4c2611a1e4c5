"""`yahtzee-jax bench env`: the vmapped engine against the plain-Python reference game.

Both play whole games with a uniformly random legal policy in the same process, so the ratio
between them is meaningful on a noisy machine. Compile time is reported apart. The engine side
plays through the one rollout (`envs.solitaire_play.play`) with the random agent, per-decision key
derivation included, and records nothing: it measures the loop that training and evaluation
use.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

import jax

from yahtzee_jax.agents.agent import make_random_agent
from yahtzee_jax.commands.arguments import positive_integers
from yahtzee_jax.commands.bench.machine import run_record
from yahtzee_jax.envs.solitaire_play import agent_policy, play
from yahtzee_jax.files import check_writable, write_json
from yahtzee_jax.game import State, get_rules, total_score
from yahtzee_jax.game.rules import Rules

DEFAULT_BATCH_SIZES = (1, 256, 4096, 65536)


def _keep_nothing(state: State, action: jax.Array, next_state: State, extras: Any) -> None:
    return None


def make_random_games(rules: Rules) -> Callable[[jax.Array], jax.Array]:
    """A jitted function: keys[B] -> final scores[B] of B uniformly random legal games."""
    agent = make_random_agent(rules)
    policy = agent_policy(agent.policy, agent.params)

    def games(keys: jax.Array) -> jax.Array:
        final, _ = play(policy, keys, rules, "game", record=_keep_nothing)
        return total_score(final, rules)

    return jax.jit(games)


def measure_engine(batch_size: int, rules: Rules, min_seconds: float, seed: int = 0) -> dict:
    """Compile once, then time whole batches of games for at least `min_seconds`."""
    games_fn = make_random_games(rules)
    keys = jax.random.split(jax.random.key(seed), batch_size)
    start = time.perf_counter()
    compiled = games_fn.lower(keys).compile()
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
        "steps_per_second": games * rules.decisions_per_game / elapsed,
        "compile_seconds": compile_seconds,
        "games": games,
        "mean_score_last_batch": scores_sum,
    }


def measure_reference(rules_name: str, min_seconds: float, seed: int = 0) -> dict:
    """Games per second of the plain-Python reference game, one game at a time."""
    from yahtzee_jax.game.reference import play_random_game

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
        default=",".join(map(str, DEFAULT_BATCH_SIZES)),
        help="comma-separated batch sizes (default 1,256,4096,65536)",
    )
    parser.add_argument("--rules", default="official", help="rule variant (default official)")
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per measurement")
    parser.add_argument("--json", dest="json_path", help="also write the results to this file")


def run(args: argparse.Namespace) -> int:
    """Run the benchmark and print a table."""
    rules = get_rules(args.rules)
    check_writable(args.json_path or None)
    from yahtzee_jax.errors import UserError

    batch_sizes = positive_integers(args.batch_sizes, "--batch-sizes")
    if not 0 < args.seconds < math.inf:  # NaN too: an infinite or empty measurement
        raise UserError(f"--seconds must be a positive number, got {args.seconds}")
    device = jax.devices()[0]
    print(f"device: {device.platform} ({device.device_kind}), rules: {rules.name}")
    reference = measure_reference(rules.name, args.seconds)
    rows = [measure_engine(size, rules, args.seconds) for size in batch_sizes]
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
            "machine": run_record(args.argv),
        }
        write_json(args.json_path, result)
    return 0
