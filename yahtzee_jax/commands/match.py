"""`yahtzee-jax match PLAYER`: a trained run's greedy agent, or a built-in match player, in
real matches against a built-in opponent: win rate with its Wilson interval, scores, margin."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

from yahtzee_jax.agents.agent import alone
from yahtzee_jax.agents.resolve import (
    BUILTINS,
    JOINT_ENDGAME,
    MATCH_PLAYERS,
    OPPONENTS,
    PLAYER_OPTIONS,
    builtin_agent,
    option_flag,
)
from yahtzee_jax.commands.arguments import BUILTIN_RULES, add_override_argument, seed_argument
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.evaluation.match_keep import MatchKeep, keep_path
from yahtzee_jax.evaluation.matches import MATCH_BATCH
from yahtzee_jax.evaluation.records import check_num_games
from yahtzee_jax.files import check_writable, write_json
from yahtzee_jax.solver.win_policy import BEFORE_ENDGAME

# The oracle told the opponents' final scores (`evaluation.target_measures.ceiling_matches`): it
# plays against the optimal agent's games, for measurement only.
CEILING = "ceiling"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The match command's options."""
    parser.add_argument(
        "run",
        help=f"run or checkpoint directory, a built-in player: {', '.join(MATCH_PLAYERS)}, or "
        f"{CEILING} (the oracle told the opponents' final score, against optimal only)",
    )
    parser.add_argument(
        "--opponent", default="optimal", help=f"one of {', '.join(OPPONENTS)} (optimal)"
    )
    parser.add_argument("--games", type=int, default=100_000, help="matches (100000)")
    parser.add_argument("--seed", type=seed_argument, default=2, help="the matches' dice (2)")
    parser.add_argument("--players", type=int, default=2, help="seats, the evaluated one's too (2)")
    parser.add_argument("--batch-size", type=int, default=MATCH_BATCH)
    parser.add_argument(
        "--rules",
        default=None,
        help="rules of a built-in player's games (official); a run plays its own",
    )
    parser.add_argument(
        "--cache-dir", default=None, help="solver cache (default $YAHTZEE_JAX_CACHE or ~/.cache)"
    )
    parser.add_argument(
        "--endgame-open",
        type=int,
        help="win-seeker: exact score distributions for the turns leaving at most this many "
        "boxes open (default 3; each more costs about 3x the table's time)",
    )
    parser.add_argument(
        "--before-endgame",
        choices=BEFORE_ENDGAME,
        help="win-seeker: the turns before its endgame for the win by a normal approximation "
        "(default) or for points, as the optimal agent (the learned match planner's rule)",
    )
    add_override_argument(
        parser,
        metavar="algo.KEY=VALUE",
        help="a planner run played otherwise than trained: its match play (algo.match_open, "
        "algo.match_early, e.g. --set algo.match_early=normal) or its search depth "
        "(td-planner: --set algo.lookahead=2); repeatable",
    )
    parser.add_argument(
        "--hindsight-weight",
        type=float,
        help="target-seeker: its rows' mix of the target table (1, hindsight, the default) and "
        "the expected-score table (0, exact for optimal play after the turn)",
    )
    parser.add_argument(
        "--hindsight-schedule",
        metavar="FILE",
        help="target-seeker: a hindsight weight for each turn and seat, a JSON file's "
        '"weights" [13][2] (experiments/seeker_calibration.py fits one)',
    )
    parser.add_argument(
        "--joint-endgame",
        choices=JOINT_ENDGAME,
        help="target-seeker: the first seat's second-to-last turn of a two-player match solved "
        "exactly against the opponent's turn between (exact, the default) or by hindsight",
    )
    parser.add_argument("--out", help="write the result as JSON here")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument(
        "--solitaire",
        action="store_true",
        help="a run that reads its opponents' cards plays its own card only, as alone (the "
        "effect of reading them, on the same dice)",
    )


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register `match`."""
    parser = subparsers.add_parser(
        "match",
        help="real matches against a built-in opponent",
        description="Play matches of a run or a built-in match player against built-in "
        "opponents, seats alternated: wins with their Wilson interval, draws, scores, margins.",
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Play the matches, print one line, write the JSON."""
    check_writable(args.out or None)
    from yahtzee_jax.commands.bench.machine import run_record
    from yahtzee_jax.evaluation.matches import evaluate_agent_matches, format_result
    from yahtzee_jax.game.rules import get_rules
    from yahtzee_jax.runner.checkpointing import MATCH_PLAY, load_agent_and_step, state_digest

    if args.opponent not in OPPONENTS:
        choices = ", ".join(OPPONENTS)
        raise ConfigError(f"--opponent={args.opponent!r}; choose one of: {choices}")
    for flag, value in (("--games", args.games), ("--batch-size", args.batch_size)):
        if value < 1:
            raise ConfigError(f"{flag} must be >= 1, got {value}")
    if not 2 <= args.players <= 6:
        raise ConfigError(f"--players must be 2..6, got {args.players}")
    # At most 2^31 - 1, whose totals fit in memory: each player's, its result and margin.
    check_num_games(args.games, bytes_per_game=8 * args.players + 24)
    matches = dict(
        cache_dir=args.cache_dir,
        num_games=args.games,
        seed=args.seed,
        batch_size=args.batch_size,
        progress=not args.no_progress,
    )
    if args.run == CEILING:
        return _run_ceiling(args, matches)
    # Only the options given reach the player: it refuses those it does not take.
    options = {name: getattr(args, name) for name in PLAYER_OPTIONS}
    options = {name: value for name, value in options.items() if value is not None}
    builtin = args.run in MATCH_PLAYERS
    if not builtin and not Path(args.run).exists():
        kind = "built in, but not a match player" if args.run in BUILTINS else "no run folder"
        players = ", ".join((*MATCH_PLAYERS, CEILING))
        raise ConfigError(f"{args.run!r}: {kind}; give a run or checkpoint folder or {players}")
    seats = BUILTINS[args.run].players if builtin else None
    if seats is not None and args.players != seats:  # before its tables load (minutes at first)
        raise ConfigError(
            f"{args.run} plays {seats}-player matches only, not --players {args.players}"
        )
    if builtin and args.overrides:
        raise ConfigError(f"--set plays a trained run otherwise; {args.run!r} is built in")
    if builtin and args.solitaire:  # it was taken without a word
        raise ConfigError(f"--solitaire plays a trained run alone; {args.run!r} is built in")
    if options and not builtin:
        flag = option_flag(next(iter(options)))
        raise ConfigError(f"{flag} is a built-in player's; a run takes --set algo.match_...")
    # Read before the matches (the load they start under), and only for a file to hold it.
    record = run_record(getattr(args, "argv", [])) if args.out else None
    # What is played, for the matches kept beside --out (`match_keep`) to be those of this
    # command: the same player, options and matches.
    played = {k: getattr(args, k) for k in ("opponent", "players", "seed", "games")}
    if builtin:
        rules = get_rules(args.rules or BUILTIN_RULES)
        learner = builtin_agent(args.run, rules, args.cache_dir, **options)
        options = {**BUILTINS[args.run].options, **options}  # what it plays with
        options = {k: v for k, v in options.items() if v is not None}
        if "hindsight_schedule" in options:  # the schedule's weights, not the default weight
            options.pop("hindsight_weight", None)
        played |= {"rules": rules.name, "player": args.run, "options": options}
        keep = _keep(args.out, played | _schedule_digest(options))
        result = evaluate_agent_matches(
            learner, args.opponent, players=args.players, keep=keep, **matches
        )
        result |= {"run": args.run, **options}
        print(format_result(args.run, result))
    else:
        agent, step = load_agent_and_step(args.run, tuple(args.overrides))
        if args.rules is not None and get_rules(args.rules) != agent.rules:
            raise ConfigError(
                f"{args.run} plays {agent.rules.name!r} rules, not {args.rules!r}; omit --rules "
                "to play it under its own"
            )
        played |= {"rules": agent.rules.name}
        match_sets = any(text.strip().startswith(MATCH_PLAY) for text in args.overrides)
        if match_sets and not agent.reads_others:
            raise ConfigError(f"--set: {args.run} plays its own card only; nothing to change")
        if args.solitaire:
            if not agent.reads_others:  # it played the same matches without a word
                raise ConfigError(f"--solitaire: {args.run} plays its own card only already")
            agent = alone(agent)
        player = {"player": str(Path(args.run).resolve()), "update": step}
        # The parameters' digest: a run folder trained again plays other matches.
        player |= {"params": state_digest(agent.params), "overrides": args.overrides}
        keep = _keep(args.out, played | player | {"solitaire": args.solitaire})
        result = evaluate_agent_matches(
            agent, args.opponent, players=args.players, keep=keep, **matches
        )
        result |= {"run": args.run, "update": step}
        if args.overrides:
            result |= {"overrides": args.overrides}
        print(format_result(agent.name, result))
    if args.out:
        write_json(args.out, result | {"machine": record})
        if keep is not None:
            keep.remove()
    return 0


def _schedule_digest(options: dict) -> dict[str, str]:
    """The hindsight schedule's file by its bytes, for a keep (an edited schedule, or the same
    name in another folder, plays other matches)."""
    if "hindsight_schedule" not in options:
        return {}
    schedule = Path(options["hindsight_schedule"])
    return {"schedule_sha256": hashlib.sha256(schedule.read_bytes()).hexdigest()}


def _keep(out: str | None, identity: dict) -> MatchKeep | None:
    """Where the matches of `--out` are kept while they play (none without `--out`)."""
    return MatchKeep(keep_path(out), identity) if out else None


def _run_ceiling(args: argparse.Namespace, matches: dict) -> int:
    """The ceiling's oracle against the optimal agent's games, beside the exact figure when
    both target tables are cached."""
    from yahtzee_jax.evaluation.matches import format_result
    from yahtzee_jax.evaluation.target_measures import ceiling_matches
    from yahtzee_jax.game.rules import get_rules
    from yahtzee_jax.solver.ceiling import cached_ceiling

    if args.opponent != "optimal" or args.overrides or args.solitaire:
        raise ConfigError("ceiling plays against optimal only, without --set or --solitaire")
    if any(getattr(args, name) is not None for name in PLAYER_OPTIONS):
        raise ConfigError("ceiling is the oracle: it takes no player's option")
    rules = get_rules(args.rules or BUILTIN_RULES)
    exact = cached_ceiling(rules, args.players, args.cache_dir)  # None until both are cached
    rate = None if exact is None else exact["win_rate"]
    result = ceiling_matches(rules, players=args.players, exact=rate, **matches)
    result |= {"exact": exact}
    where = "not cached" if exact is None else f"{100 * rate:.2f} %"
    given = f"{100 * result['given_scores_win_rate']:.2f} %"
    print(f"{format_result(CEILING, result)}; exact given the scores {given}, exact {where}")
    if args.out:
        write_json(args.out, result)
    return 0


def main(argv: list[str] | None = None) -> int:
    """`yahtzee-jax match ...` as a function (tests, notebooks)."""
    parser = argparse.ArgumentParser(prog="yahtzee-jax match")
    add_arguments(parser)
    return run(parser.parse_args(argv))
