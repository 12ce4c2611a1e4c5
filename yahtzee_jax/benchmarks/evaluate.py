"""`yahtzee-jax bench evaluate`: games per second of the evaluation harness, compile time apart."""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from yahtzee_jax.errors import UserError

DEFAULT_AGENTS = ("random", "greedy3", "optimal")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the evaluation benchmark."""
    parser.add_argument(
        "--agents",
        nargs="+",
        default=list(DEFAULT_AGENTS),
        help=f"agent specs to time (default: {' '.join(DEFAULT_AGENTS)})",
    )
    parser.add_argument("--games", type=int, default=4096, help="games per timed run")
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="games per device batch (default: the harness's for this device)",
    )
    parser.add_argument("--rules", default="official", help="rule variant (default official)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the results to this JSON file")


def run(args: argparse.Namespace) -> int:
    """Time `play_games` for each agent: setup, first batch (compile + run), steady games/s."""
    import jax

    from yahtzee_jax.agents import resolve_agent
    from yahtzee_jax.game.rules import DECISIONS_PER_GAME, get_rules
    from yahtzee_jax.records import check_num_games, default_batch_size, play_games
    from yahtzee_jax.reports import format_terminal

    check_num_games(args.games)
    rules = get_rules(args.rules)
    batch_size = min(args.batch_size or default_batch_size(), args.games)
    num_batches = math.ceil(args.games / batch_size)
    results = []
    for spec in args.agents:
        started = time.perf_counter()
        try:
            agent = resolve_agent(spec, rules)
        except UserError as error:
            print(f"skipping {spec}: {error}")
            continue
        setup = time.perf_counter() - started
        started = time.perf_counter()
        play_games(agent, batch_size, args.seed, batch_size=batch_size)
        first_batch = time.perf_counter() - started
        started = time.perf_counter()
        play_games(agent, args.games, args.seed + 1, batch_size=batch_size)
        steady = time.perf_counter() - started
        per_batch = steady / num_batches
        results.append(
            {
                "agent": spec,
                "setup_seconds": setup,
                "compile_seconds": max(first_batch - per_batch, 0.0),
                "seconds_per_batch": per_batch,
                "games_per_second": args.games / steady,
                "decisions_per_second": args.games * DECISIONS_PER_GAME / steady,
            }
        )
    rows = [
        [
            row["agent"],
            f"{row['setup_seconds']:.2f}",
            f"{row['compile_seconds']:.2f}",
            f"{row['seconds_per_batch']:.3f}",
            f"{row['games_per_second']:,.0f}",
            f"{row['decisions_per_second']:,.0f}",
        ]
        for row in results
    ]
    header = ["agent", "setup s", "compile s", "s/batch", "games/s", "decisions/s"]
    title = (
        f"play_games throughput: {rules.name} rules, {args.games:,} games in batches of "
        f"{batch_size:,} on {jax.devices()[0].platform} ({jax.device_count()} device)"
    )
    print(format_terminal([(title, header, rows)]))
    print("setup: building the agent (solve or load a value table); compile: first batch minus a "
          "steady batch")  # fmt: skip
    if args.json:
        info = {"rules": rules.name, "games": args.games, "batch_size": batch_size}
        Path(args.json).write_text(json.dumps({**info, "agents": results}, indent=2) + "\n")
    return 0
