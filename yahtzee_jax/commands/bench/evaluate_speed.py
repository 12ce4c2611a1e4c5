"""`yahtzee-jax bench evaluate`: games per second of the evaluation harness, compile time apart.

With `optimal` among the agents and the `yatzy-solver` package installed, its Rust simulation of
optimal play (table loaded, same rules and number of games) is timed in the same run, and the
ratio printed: a loaded machine slows both alike. Where another engine's optimal play has a
published speed for the rules (`PUBLISHED`), ours is printed beside it too; with `--dlangk DIR`
(Yatzy), dlangk/yatzy's lockstep engine is run beside ours (`bench.dlangk`).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import TYPE_CHECKING, Any

from yahtzee_jax.commands.arguments import seed_argument
from yahtzee_jax.commands.bench import dlangk, yatzy_solver
from yahtzee_jax.commands.bench.machine import run_record
from yahtzee_jax.commands.bench.published import over_theirs, ratio_words
from yahtzee_jax.errors import UserError
from yahtzee_jax.files import check_writable, write_json

if TYPE_CHECKING:
    from yahtzee_jax.game.rules import Rules

DEFAULT_AGENTS = ("random", "greedy3", "optimal")

# Published speeds of other engines' optimal play, not run here (issue 46's yardstick): rules ->
# our agent -> [(engine, games per second by threads, how they were measured)]. The table agent
# also stands beside dlangk/yatzy's table engine ("oracle"), whose thread count the issue that
# quotes it does not give.
LOCKSTEP = (
    "dlangk/yatzy's lockstep engine (Rust, f32)",
    {"1": 48_144.0, "2": 91_233.0},
    "idle 2-core AMD EPYC with AVX-512",
)
ORACLE = (
    "dlangk/yatzy's oracle engine (Rust, a precomputed 2.95 GB decision table)",
    {"threads not stated": 568_700.0},
    "the same machine",
)
PUBLISHED = {"yatzy": {"optimal": [LOCKSTEP], "optimal-table": [LOCKSTEP, ORACLE]}}


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
    parser.add_argument(
        "--dlangk",
        default=None,
        metavar="DIR",
        help="folder of dlangk/yatzy's built binaries (Yatzy only): its lockstep optimal play "
        "run beside ours, on 1 thread and one per CPU (experiments/build_dlangk_yatzy.sh)",
    )
    parser.add_argument("--json", default=None, help="write the results to this JSON file")


def run(args: argparse.Namespace) -> int:
    """Time `play_games` for each agent: setup, first batch (compile + run), steady games/s."""
    check_writable(args.json or None)
    import jax

    from yahtzee_jax.evaluation.records import check_num_games, default_batch_size, play_games
    from yahtzee_jax.evaluation.reports import format_terminal
    from yahtzee_jax.game.rules import get_rules
    from yahtzee_jax.runner.checkpointing import resolve_agent

    check_num_games(args.games)
    if args.repeats < 1:
        raise UserError(f"--repeats must be at least 1 (got {args.repeats})")
    if args.batch_size is not None and args.batch_size < 1:  # 0 was the default silently
        raise UserError(f"--batch-size must be at least 1 (got {args.batch_size})")
    rules = get_rules(args.rules)
    if args.dlangk is not None:
        if rules.name != "yatzy":
            raise UserError(f"--dlangk: dlangk/yatzy plays Yatzy only (got --rules {rules.name})")
        dlangk.binary(args.dlangk, dlangk.SOLVE)
        dlangk.binary(args.dlangk, dlangk.SIMULATE)
    results = []
    for spec in args.agents:
        started = time.perf_counter()
        try:
            agent = resolve_agent(spec, rules)
        except UserError as error:
            # stderr: a diagnostic, and a name that is not UTF-8 shows there escaped, where
            # a strict UTF-8 stdout failed on it (the fuzzer's `--agents $'\xff\xfe'`)
            print(f"skipping {spec}: {error}", file=sys.stderr)
            continue
        setup = time.perf_counter() - started
        # Each agent's own default: the widget agents ask for larger batches on a CPU.
        batch_size = min(args.batch_size or default_batch_size(agent.policy), args.games)
        num_batches = math.ceil(args.games / batch_size)
        started = time.perf_counter()
        play_games(agent, batch_size, args.seed, batch_size=batch_size)
        first_batch = time.perf_counter() - started
        steady, cpu = math.inf, math.inf
        for _ in range(args.repeats):
            started, cpu_started = time.perf_counter(), time.process_time()
            play_games(agent, args.games, args.seed + 1, batch_size=batch_size)
            elapsed = time.perf_counter() - started
            cpu_used = time.process_time() - cpu_started
            if elapsed < steady:
                steady, cpu = elapsed, cpu_used
        per_batch = steady / num_batches
        results.append(
            {
                "agent": spec,
                "batch_size": batch_size,
                "setup_seconds": setup,
                "compile_seconds": max(first_batch - per_batch, 0.0),
                "seconds_per_batch": per_batch,
                "games_per_second": args.games / steady,
                "cpu_seconds": cpu,
                "decisions_per_second": args.games * rules.decisions_per_game / steady,
            }
        )
    if not results:  # every name skipped: no timing to print or write
        raise UserError(f"no agent to time: {', '.join(args.agents)} skipped (above)")
    reference = _yatzy_solver_row(args, rules, results)
    rows = [
        [
            row["agent"],
            f"{row['setup_seconds']:.2f}",
            f"{row['compile_seconds']:.2f}",
            f"{row['seconds_per_batch']:.3f}",
            f"{row['cpu_seconds']:.2f}",
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
                "-",
                f"{reference['games_per_second']:,.0f}",
                f"{reference['games_per_second'] * rules.decisions_per_game:,.0f}",
            ]
        )
    header = ["agent", "setup s", "compile s", "s/batch", "CPU s", "games/s", "decisions/s"]
    sizes = sorted({row["batch_size"] for row in results})
    batch_size = sizes[0] if len(sizes) == 1 else sizes
    title = (
        f"play_games throughput: {rules.name} rules, {args.games:,} games in batches of "
        f"{' / '.join(f'{size:,}' for size in sizes)} on {jax.devices()[0].platform} "
        f"({jax.device_count()} device)"
    )
    print(format_terminal([(title, header, rows)]))
    print("setup: building the agent (solve or load a value table); compile: first batch minus a "
          "steady batch; CPU s: the process's CPU time in the fastest run")  # fmt: skip
    if reference is not None:
        print(
            f"yatzy-solver {reference['version']} (Rust, its optimal policy on all cores, table "
            f"loaded): mean {reference['mean']:.2f}; optimal here / yatzy-solver: "
            f"{reference['optimal_over_yatzy_solver']:.2f}x the games per second"
        )
    published = beside_published(rules, results)
    rust = None
    if args.dlangk is not None:
        runs = dlangk.fastest_plays(args.dlangk, args.games, args.seed + 1, args.repeats)
        rust = beside_dlangk(runs, results)
    if args.json:
        info = {"rules": rules.name, "games": args.games, "batch_size": batch_size}
        output = {**info, "agents": results, "yatzy_solver": reference, "published": published}
        output["dlangk"] = rust
        output["machine"] = run_record(args.argv)
        write_json(args.json, output)
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
    from yahtzee_jax.solver.value_table import default_cache_dir

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


def beside_dlangk(runs: dict[str, dict], results: list[dict]) -> dict[str, Any]:
    """Print dlangk/yatzy's lockstep games/s run in this bench (its best on each thread count)
    and our optimal agents' over them; return both."""
    by_threads = {threads: run["games_per_second"] for threads, run in runs.items()}
    figures = ", ".join(f"{speed:,.0f} on {threads}" for threads, speed in by_threads.items())
    mean = next(iter(runs.values()))["mean"]
    print(f"{LOCKSTEP[0]}, run here: games/s by threads {figures} (its mean {mean:.2f})")
    ours = {}
    for row in results:
        if row["agent"] in PUBLISHED["yatzy"]:
            ours[row["agent"]] = over_theirs(row["games_per_second"], by_threads)
            print(f"{row['agent']} here: {ratio_words(ours[row['agent']])}")
    return {"engine": LOCKSTEP[0], "runs": runs, "ours_over_theirs": ours}


def beside_published(rules: Rules, results: list[dict]) -> dict[str, Any] | None:
    """Print each of our agents' games/s that has a yardstick (`PUBLISHED`) beside the other
    engines' published ones and return them, per agent, with the ratios (None if none has)."""
    yardsticks = PUBLISHED.get(rules.name, {})
    published = {}
    for row in results:
        for engine, by_threads, how in yardsticks.get(row["agent"], []):
            ours = row["games_per_second"]
            ratios = over_theirs(ours, by_threads)
            figures = ", ".join(
                f"{theirs:,.0f} on {threads}" if threads.isdigit() else f"{theirs:,.0f} ({threads})"
                for threads, theirs in by_threads.items()
            )
            print(
                f"{engine}, published (not run here): games/s by threads {figures} ({how}); "
                f"{row['agent']} here: {ratio_words(ratios)}"
            )
            published.setdefault(row["agent"], []).append(
                {
                    "engine": engine,
                    "measured": how,
                    "games_per_second": by_threads,
                    "ours_over_published": ratios,
                }
            )
    return published or None
