"""`yahtzee-jax tournament AGENT AGENT ...`: every pair of agents plays N two-player games; the
win-rate matrix with 95 % Wilson intervals, draws, margins, mean scores and a heat map
(`evaluation.round_robin` plays and reports)."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from yahtzee_jax.agents import Agent
from yahtzee_jax.agents.resolve import AGENT_NAMES
from yahtzee_jax.commands.arguments import BUILTIN_RULES, seed_argument
from yahtzee_jax.errors import UserError
from yahtzee_jax.evaluation.records import check_batch_size, check_num_games
from yahtzee_jax.evaluation.reports import format_terminal
from yahtzee_jax.evaluation.round_robin import DICE_MODES, round_robin, tables, write_results
from yahtzee_jax.evaluation.tournament_games import KEEP_FOLDER, TournamentKeeps, tournament_games
from yahtzee_jax.files import check_writable
from yahtzee_jax.runner.checkpointing import resolve_agent, state_digest


def _games_override(text: str) -> tuple[str, int]:
    agent, separator, count = text.rpartition("=")
    if not separator or not agent:
        raise argparse.ArgumentTypeError(f"expected AGENT=N, got {text!r}")
    try:
        return agent, int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected AGENT=N with an integer N, got {text!r}"
        ) from None


def _identity(spec: str, agent: Agent) -> dict[str, str]:
    """What an agent is, for the keeps: a built-in agent's name, or a checkpoint's resolved path
    and its parameters' digest (a run trained further plays other games)."""
    if spec in AGENT_NAMES or not os.path.exists(spec):  # as `resolve_agent` tells them apart
        return {"agent": spec}
    return {"checkpoint": str(Path(spec).resolve()), "params": state_digest(agent.params)}


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register `yahtzee-jax tournament`."""
    parser = subparsers.add_parser(
        "tournament",
        help="play every pair of agents and report a win-rate matrix",
        description="Every pair of agents plays N two-player games (seats alternate; each "
        "seat's dice stream is the same in every pair); prints and writes the win-rate matrix "
        "with 95 % Wilson intervals, draws, margins, mean scores and a heat map.",
    )
    parser.add_argument(
        "agents",
        metavar="AGENT",
        nargs="+",
        help=f"two or more of {', '.join(AGENT_NAMES)}, or checkpoint paths",
    )
    parser.add_argument("--games", type=int, default=10_000, help="games per pair (default 10000)")
    parser.add_argument("--seed", type=seed_argument, default=0, help="dice seed (default 0)")
    parser.add_argument(
        "--dice",
        choices=DICE_MODES,
        default="independent",
        help="independent (default): each seat its own dice, the same per seat in every pair; "
        "common: both seats of a game play the same dice stream (duplicate Yahtzee)",
    )
    parser.add_argument(
        "--rules", default=None, help="rule variant (default official; checkpoints play their own)"
    )
    parser.add_argument(
        "--games-for",
        type=_games_override,
        action="append",
        default=[],
        metavar="AGENT=N",
        help="fewer games for a slow agent: its pairs play its first N games (repeatable)",
    )
    parser.add_argument("--out", default=None, help="directory (default runs/tournament/...)")
    parser.add_argument("--batch-size", type=int, default=None, help="games per device batch")
    parser.add_argument("--cache-dir", default=None, help="solver and reference-game cache")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run `yahtzee-jax tournament`."""
    check_num_games(args.games)
    check_batch_size(args.batch_size)  # before the agents' tables are solved (minutes)
    if len(args.agents) < 2:
        raise UserError("a tournament needs at least two agents")
    if len(set(args.agents)) != len(args.agents):
        raise UserError(f"each agent may appear once, got {' '.join(args.agents)}")
    named = [spec for spec, _ in args.games_for]
    twice = sorted({spec for spec in named if named.count(spec) > 1})
    if twice:  # the last was taken without a word
        raise UserError(f"--games-for names {', '.join(twice)} more than once")
    games_for = dict(args.games_for)
    unknown = sorted(set(games_for) - set(args.agents))
    if unknown:
        raise UserError(f"--games-for names agents not in the tournament: {', '.join(unknown)}")
    for spec, count in games_for.items():
        check_num_games(count)
        if count > args.games:  # "fewer games": more would be cut to --games without a word
            raise UserError(f"--games-for {spec}={count}: more than --games {args.games}")
    rules, asked = args.rules or BUILTIN_RULES, args.rules is not None
    agents = {
        spec: resolve_agent(spec, rules, args.cache_dir, rules_asked=asked) for spec in args.agents
    }
    variants = {agent.rules.name for agent in agents.values()}
    if len(variants) > 1:
        raise UserError(
            f"the agents play different rules ({', '.join(sorted(variants))}); pass --rules "
            "matching the checkpoints'"
        )
    (rules_name,) = variants
    label = f"{rules_name}_{args.dice}_{args.games}g_seed{args.seed}"
    out_dir = Path(args.out or f"runs/tournament/{label}")
    check_writable(out_dir / "tournament.json")
    names = [agent.name for agent in agents.values()]
    if len(set(names)) != len(names):
        raise UserError(f"two agents have the same name: {', '.join(names)}")
    readers = [spec for spec, agent in agents.items() if agent.reads_others]
    if readers and args.dice == "common":
        raise UserError(
            f"{', '.join(readers)} read the opponent's card and play real matches, whose dice "
            "are independent per seat; use --dice independent"
        )
    started = time.perf_counter()
    # What is finished is kept in the results' folder: the same command goes on from it.
    keeps = TournamentKeeps(out_dir / KEEP_FOLDER, rules_name, args.seed)
    identities = {spec: _identity(spec, agent) for spec, agent in agents.items()}
    totals, matches = tournament_games(
        agents,
        identities,
        args.games,
        games_for,
        args.seed,
        args.dice,
        keeps,
        batch_size=args.batch_size,
        cache_dir=args.cache_dir,
        progress=not args.no_progress,
    )
    tournament = round_robin(totals, rules_name, args.seed, args.dice, matches)
    write_results(tournament, out_dir)
    keeps.remove()
    print(format_terminal(tables(tournament)))
    seconds = time.perf_counter() - started
    print(f"\n{len(agents)} agents in {seconds:.1f} s; results in {out_dir}")
    return 0
