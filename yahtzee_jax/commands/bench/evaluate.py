"""`yahtzee-jax bench evaluate`: games per second of the evaluation harness, compile time apart.

With `optimal` among the agents and the `yatzy-solver` package installed, its Rust simulation of
optimal play (table loaded, same rules and number of games) is timed in the same run, and the
ratio printed: a loaded machine slows both alike.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yahtzee_jax.commands.arguments import seed_argument
from yahtzee_jax.commands.bench import yatzy_solver
from yahtzee_jax.errors import UserError

if TYPE_CHECKING:
    from yahtzee_jax.game.rules import Rules

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
    parser.add_argument("--seed", type=seed_argument, default=0)
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="timed runs per agent (and of yatzy-solver), the fastest kept (default 1)",
    )
    parser.add_argument("--json", default=None, help="write the results to this JSON file")


def run(args: argparse.Namespace) -> int:
    """Time `play_games` for each agent: setup, first batch (compile + run), steady games/s."""
    import jax

    from yahtzee_jax.evaluation.records import check_num_games, default_batch_size, play_games
    from yahtzee_jax.evaluation.reports import format_terminal
    from yahtzee_jax.game.rules import get_rules
    from yahtzee_jax.runner.checkpointing import resolve_agent

    check_num_games(args.games)
    if args.repeats < 1:
        raise UserError(f"--repeats must be at least 1 (got {args.repeats})")
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
        steady = math.inf
        for _ in range(args.repeats):
            started = time.perf_counter()
            play_games(agent, args.games, args.seed + 1, batch_size=batch_size)
            steady = min(steady, time.perf_counter() - started)
        per_batch = steady / num_batches
        results.append(
            {
                "agent": spec,
                "setup_seconds": setup,
                "compile_seconds": max(first_batch - per_batch, 0.0),
                "seconds_per_batch": per_batch,
                "games_per_second": args.games / steady,
                "decisions_per_second": args.games * rules.decisions_per_game / steady,
            }
        )
    reference = _yatzy_solver_row(args, rules, results)
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
    if reference is not None:
        rows.append(
            [
                "yatzy-solver",
                f"{reference['setup_seconds']:.2f}",
                "-",
                "-",
                f"{reference['games_per_second']:,.0f}",
                f"{reference['games_per_second'] * rules.decisions_per_game:,.0f}",
            ]
        )
    header = ["agent", "setup s", "compile s", "s/batch", "games/s", "decisions/s"]
    title = (
        f"play_games throughput: {rules.name} rules, {args.games:,} games in batches of "
        f"{batch_size:,} on {jax.devices()[0].platform} ({jax.device_count()} device)"
    )
    print(format_terminal([(title, header, rows)]))
    print("setup: building the agent (solve or load a value table); compile: first batch minus a "
          "steady batch")  # fmt: skip
    if reference is not None:
        print(
            f"yatzy-solver {reference['version']} (Rust, its optimal policy on all cores, table "
            f"loaded): mean {reference['mean']:.2f}; optimal here / yatzy-solver: "
            f"{reference['optimal_over_yatzy_solver']:.2f}x the games per second"
        )
    if args.json:
        info = {"rules": rules.name, "games": args.games, "batch_size": batch_size}
        output = {**info, "agents": results, "yatzy_solver": reference}
        Path(args.json).write_text(json.dumps(output, indent=2) + "\n")
    return 0


def _yatzy_solver_row(
    args: argparse.Namespace, rules: Rules, results: list[dict]
) -> dict[str, Any] | None:
    """Time yatzy-solver's optimal play beside our optimal agent (None when there is no pair)."""
    optimal = [row for row in results if row["agent"] == "optimal"]
    if not optimal:
        return None
    if note := yatzy_solver.no_variant(rules):
        print(note)
        return None
    from yahtzee_jax.solver.exact import default_cache_dir

    module = yatzy_solver.load_module()
    if module is None:
        print(yatzy_solver.MISSING)
        return None
    solver, setup, solved = yatzy_solver.load_solver(module, rules, default_cache_dir())
    if solved:
        print(f"yatzy-solver solved {rules.name} once and cached its table ({setup:.1f} s)")
    best = min(
        (yatzy_solver.simulate(solver, args.games, args.seed + 1) for _ in range(args.repeats)),
        key=lambda run: run["seconds"],
    )
    return {
        "version": module.SOLVER_VERSION,
        "variant": yatzy_solver.VARIANTS[rules.name],
        "setup_seconds": setup,
        **best,
        "optimal_over_yatzy_solver": optimal[0]["games_per_second"] / best["games_per_second"],
    }
