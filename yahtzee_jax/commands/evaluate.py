"""`yahtzee-jax evaluate AGENT`: the command line of the evaluation harness.

The harness itself is importable without it: `evaluation.records` plays games,
`evaluation.statistics` summarises them, `evaluation.reports` writes the report and
`evaluation.plots` draws its figures.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from yahtzee_jax.agents import AGENT_NAMES
from yahtzee_jax.agents.batching import WIDGET_CPU_BATCH_SIZE
from yahtzee_jax.agents.resolve import TARGET
from yahtzee_jax.commands.arguments import BUILTIN_RULES, seed_argument
from yahtzee_jax.errors import UserError
from yahtzee_jax.evaluation.game_records import (
    ACCELERATOR_BATCH_SIZE,
    CPU_BATCH_SIZE,
    check_batch_size,
    check_num_games,
)
from yahtzee_jax.evaluation.reports import evaluate_native, format_terminal, report_tables
from yahtzee_jax.files import check_writable, write_json
from yahtzee_jax.game.rules import Rules, get_rules

# What `--engine` takes: "native" plays the optimal agent on the solver's C kernel, no JAX.
ENGINES = ("jax", "native")


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register `yahtzee-jax evaluate`."""
    parser = subparsers.add_parser(
        "evaluate",
        help="play many games of an agent and report its statistics",
        description="Play N games of AGENT on device and report the paper's statistics.",
    )
    parser.add_argument(
        "agent",
        metavar="AGENT",
        help=f"one of {', '.join(AGENT_NAMES)}, target (with --target X), or a checkpoint path",
    )
    parser.add_argument(
        "--target",
        type=int,
        default=None,
        help="the target agent's final score X: it plays for P(final >= X) by the exact target "
        "tables (solve --targets) and reports how often it got there beside the exact chance",
    )
    parser.add_argument("--games", type=int, default=10_000, help="games to play (default 10000)")
    parser.add_argument("--seed", type=seed_argument, default=0, help="evaluation seed (default 0)")
    parser.add_argument(
        "--rules",
        default=None,
        help="rule variant for built-in agents (default official; a checkpoint "
        "plays its own rules)",
    )
    parser.add_argument("--json", dest="json_path", default=None, help="write the summary here")
    parser.add_argument(
        "--out", default=None, help="report directory (default runs/evaluate/AGENT_RULES_Ng_seedS)"
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help=(
            f"games per device batch (default {ACCELERATOR_BATCH_SIZE}, on CPU {CPU_BATCH_SIZE} "
            f"or the agent's own: {WIDGET_CPU_BATCH_SIZE} for the optimal and greedy agents)"
        ),
    )
    parser.add_argument(
        "--no-optimal", action="store_true", help="skip the comparison with the optimal agent"
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="solver and reference-game cache (default $YAHTZEE_JAX_CACHE or ~/.cache/yahtzee_jax)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument(
        "--no-plots", action="store_true", help="write summary.json and report.md, no PNG plots"
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="jax",
        help="jax (default): the agent's policy on the device; native: the optimal agent's "
        "policy on the solver's C kernel, without JAX (its own dice: other games than jax's of "
        "the same seed, the same distribution)",
    )
    parser.add_argument(
        "--task",
        default="game",
        help="game (default), or single-turn: N single turns on random cards against their "
        "exact optimum",
    )
    parser.set_defaults(func=run)


def _run_target(args: argparse.Namespace) -> int:
    """`evaluate target --target X`: the share of games reaching X beside the exact chance."""
    from yahtzee_jax.evaluation.target_measures import evaluate_target

    if args.target < 0:
        raise UserError(f"--target must be >= 0, got {args.target}")
    rules = get_rules(args.rules or BUILTIN_RULES)
    result = evaluate_target(
        rules,
        args.target,
        args.games,
        args.seed,
        cache_dir=args.cache_dir,
        batch_size=args.batch_size,
        progress=not args.no_progress,
    )
    if args.json_path is not None:
        write_json(args.json_path, result)
    low, high = result["reach_interval_95"]
    print(
        f"target agent, {rules.name} rules, X = {args.target}, {args.games} games, seed "
        f"{args.seed}: P(final >= X) {result['reach_rate']:.4f} [{low:.4f}, {high:.4f}], exact "
        f"{result['exact']:.6f} ({result['z']:+.2f} s.e.); mean score {result['mean_score']:.2f}"
    )
    return 0


def run(args: argparse.Namespace) -> int:
    """Run `yahtzee-jax evaluate`."""
    check_num_games(args.games)
    check_batch_size(args.batch_size)  # before a solve of the optimal agent's table (minutes)
    check_writable(args.json_path)
    if (args.agent == TARGET) != (args.target is not None):
        raise UserError("--target X goes with the target agent, and the target agent needs it")
    if args.engine == "native":
        return _run_native(args)
    if args.agent == TARGET:
        return _run_target(args)
    from yahtzee_jax.envs.solitaire_play import SOLITAIRE
    from yahtzee_jax.runner.checkpointing import resolve_agent

    if args.task not in SOLITAIRE:
        raise UserError(f"unknown task {args.task!r}; choose one of: {', '.join(SOLITAIRE)}")
    asked = args.rules is not None
    agent = resolve_agent(
        args.agent, args.rules or BUILTIN_RULES, args.cache_dir, rules_asked=asked
    )
    if not SOLITAIRE[args.task].whole_games:  # single turns, against their optimum
        from yahtzee_jax.evaluation.single_turn import evaluate_single_turn

        result = evaluate_single_turn(agent, args.games, args.seed)
        if args.json_path is not None:
            write_json(args.json_path, result)
        print(
            f"{agent.name}, {agent.rules.name} rules, {args.games} single turns, seed {args.seed}: "
            f"mean {result['mean']:.3f} +- {result['stderr']:.3f}, optimum of the same turns "
            f"{result['optimum_mean']:.3f} ({result['percent_of_optimum']:.1f} %)"
        )
        return 0
    from yahtzee_jax.evaluation import stored_traces
    from yahtzee_jax.evaluation.reports import evaluate

    out_dir = _report_folder(args, agent.name, agent.rules.name)
    summary = evaluate(
        agent,
        args.games,
        args.seed,
        out_dir=out_dir,
        json_path=args.json_path,
        compare_optimal=not args.no_optimal,
        progress=not args.no_progress,
        batch_size=args.batch_size,
        cache_dir=args.cache_dir,
        program_dir=stored_traces.folder_of(args.cache_dir),
        plots=not args.no_plots,
    )
    _print_summary(summary, agent.rules, out_dir)
    return 0


def _report_folder(args: argparse.Namespace, name: str, rules: str) -> Path:
    """`--out`, or runs/evaluate/NAME_RULES_NG_seedS; checked writable."""
    out_dir = args.out
    if out_dir is None:
        label = re.sub(r"[^A-Za-z0-9_.-]+", "-", name)
        out_dir = Path("runs") / "evaluate" / f"{label}_{rules}_{args.games}g_seed{args.seed}"
    check_writable(Path(out_dir) / "summary.json")
    return Path(out_dir)


def _print_summary(summary: dict, rules: Rules, out_dir: Path) -> None:
    print(format_terminal(report_tables(summary, rules)))
    print(
        f"\n{summary['games']} games in {summary['seconds']:.2f} s "
        f"({summary['games_per_second']:.0f} games/s); report in {out_dir}"
    )


def _run_native(args: argparse.Namespace) -> int:
    """`evaluate optimal --engine native`: the optimal agent's games on the C kernel, no JAX."""
    if args.agent != "optimal":
        raise UserError(f"--engine native plays the optimal agent only, not {args.agent!r}")
    if args.task != "game" or args.batch_size is not None:
        raise UserError("--engine native plays whole games; --task and --batch-size are jax's")
    rules = get_rules(args.rules or BUILTIN_RULES)
    out_dir = _report_folder(args, "optimal-native", rules.name)
    summary = evaluate_native(
        rules,
        args.games,
        args.seed,
        out_dir=out_dir,
        json_path=args.json_path,
        cache_dir=args.cache_dir,
        plots=not args.no_plots,
        progress=not args.no_progress,
    )
    _print_summary(summary, rules, out_dir)
    return 0
