"""`yahtzee-jax solve` and `yahtzee-jax advise`."""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

from yahtzee_jax.errors import UserError
from yahtzee_jax.files import check_writable, write_json
from yahtzee_jax.game.rules import RULE_VARIANTS, get_rules
from yahtzee_jax.solver.target_table import POLICIES
from yahtzee_jax.solver.value_table import ENGINES


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rules", default="official", help=f"rule variant: {', '.join(RULE_VARIANTS)}"
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="value-table cache (default: $YAHTZEE_JAX_CACHE or ~/.cache/yahtzee_jax)",
    )


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register `solve` and `advise`."""
    solve_parser = subparsers.add_parser(
        "solve", help="solve a rule variant exactly; print the optimal expected score"
    )
    _add_common(solve_parser)
    solve_parser.add_argument(
        "--force", action="store_true", help="solve again even if the value table is cached"
    )
    solve_parser.add_argument(
        "--targets",
        action="store_true",
        help="solve (or load) the target-score tables instead: the best chance of at least d "
        "more points from every turn start (about 500x the value table's time)",
    )
    solve_parser.add_argument(
        "--policy",
        choices=POLICIES,
        default="target",
        help="with --targets: 'target' (default) the best chance of each d; 'expected' the "
        "chances of the expected-score maximiser (the optimal agent's score distribution)",
    )
    solve_parser.add_argument(
        "--ceiling",
        action="store_true",
        help="the exact ceiling of match play against the optimal agent: an oracle told the "
        "opponents' best final score S plays for S + 1 (both target tables, cached or solved)",
    )
    solve_parser.add_argument(
        "--players", type=int, default=2, help="with --ceiling: seats, the oracle's too (2)"
    )
    solve_parser.add_argument("--out", default=None, help="with --ceiling: write the JSON here")
    solve_parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="what values the states: 'native' the C kernel built for this CPU, 'xla' the XLA "
        "program; 'auto' (default) the kernel on a CPU that has a C compiler, else XLA",
    )
    solve_parser.set_defaults(func=run_solve)

    advise_parser = subparsers.add_parser(
        "advise",
        help="optimal expected final score of a position and the value of each action",
        description="Example: yahtzee-jax advise --dice 1,2,3,3,5 --roll 0 --card ones=3,chance=22",
    )
    _add_common(advise_parser)
    advise_parser.add_argument("--dice", required=True, help="five dice, e.g. 1,2,3,3,5")
    advise_parser.add_argument(
        "--roll",
        type=int,
        default=0,
        help="roll index as in the engine: 0 after the first roll (two re-rolls left), "
        "1 after the second, 2 after the third (score now)",
    )
    advise_parser.add_argument(
        "--card",
        default="",
        help="filled boxes with their points, e.g. ones=3,chance=22,yahtzee=50 (default: empty)",
    )
    advise_parser.add_argument(
        "--yahtzee-bonuses", type=int, default=0, help="number of +100 Yahtzee bonuses earned"
    )
    advise_parser.add_argument(
        "--top", type=int, default=10, help="how many actions to list (0: all)"
    )
    advise_parser.add_argument(
        "--beat",
        type=int,
        default=None,
        help="value the actions by the best chance of a final score above X (a tie is no win), "
        "from the exact target tables (solve --targets), instead of by expected points",
    )
    advise_parser.set_defaults(func=run_advise)


def run_solve(args: argparse.Namespace) -> int:
    """Solve (or load) the value table and print the optimal expected score and the time."""
    if args.policy != "target" and not args.targets:
        raise UserError("--policy goes with --targets")
    if args.ceiling:
        return _run_ceiling(args)
    if args.out is not None or args.players != 2:
        raise UserError("--players and --out go with --ceiling")
    if args.targets:
        return _run_targets(args)
    if args.engine != "auto" and not args.force:
        raise UserError("--engine chooses how to solve: it goes with --force")
    from yahtzee_jax.host import one_thread_per_program

    one_thread_per_program()  # this process only solves: its runs go one per core
    from yahtzee_jax.solver.value_table import cache_file, solve

    _check_cache(cache_file(get_rules(args.rules), args.cache_dir), args.force)
    result = solve(
        args.rules, cache_dir=args.cache_dir, progress=True, force=args.force, engine=args.engine
    )
    how = "loaded from cache" if result.from_cache else "solved"
    print(f"optimal expected score ({result.rules.name}): {result.expected_score:.10f}")
    print(f"{how} in {result.seconds:.2f} s; value table: {result.cache_path}")
    return 0


TARGET_SCORES = (150, 200, 250, 300, 400, 500)  # final scores whose best chances `--targets` prints


def _run_targets(args: argparse.Namespace) -> int:
    """Solve (or load) the target tables; print the best chance of each `TARGET_SCORES`."""
    from yahtzee_jax.solver.target_table import target_cache_file, target_tables

    path = target_cache_file(get_rules(args.rules), args.policy, args.cache_dir)
    _check_cache(path, args.force)
    result = target_tables(
        args.rules, cache_dir=args.cache_dir, force=args.force, policy=args.policy, progress=True
    )
    start = result.chances((0, 0, 0))  # the empty card: every point is still to come
    whose = "best chance" if args.policy == "target" else "the optimal agent's chance"
    for score in TARGET_SCORES:
        chance = start[score] if score < len(start) else 0.0
        print(f"{whose} of a final score >= {score} ({result.rules.name}): {chance:.10f}")
    how = "loaded from cache" if result.from_cache else "solved"
    print(f"{how} in {result.seconds:.2f} s; target tables: {result.cache_path}")
    return 0


def _run_ceiling(args: argparse.Namespace) -> int:
    """The exact ceiling from the empty card's rows of both target tables; print, write JSON."""
    from yahtzee_jax.solver.ceiling import rules_ceiling
    from yahtzee_jax.solver.target_table import target_cache_file

    if args.targets or args.force:  # it solves missing tables itself: "first" misled
        raise UserError(
            "--ceiling reads the target tables (solving those missing): solve them again with "
            "--targets --force, not with --ceiling"
        )
    check_writable(args.out)
    if not 2 <= args.players <= 6:
        raise UserError(f"--players must be 2..6, got {args.players}")
    tables = [
        target_cache_file(get_rules(args.rules), policy, args.cache_dir) for policy in POLICIES
    ]
    for path in tables:
        _check_cache(path, False)
    held = sum(path.stat().st_size for path in tables if path.exists())
    if held:  # each read whole and checked: official's took about a minute from disk, unsaid
        print(f"reading and checking the target tables ({held / 2**20:,.0f} MiB)", file=sys.stderr)
    start = time.perf_counter()
    result = rules_ceiling(args.rules, args.players, args.cache_dir)
    print(f"the tables read (or solved) in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    print(
        f"ceiling ({args.rules}, {args.players} players): the oracle wins "
        f"{100 * result['win_rate']:.4f} % against the optimal agent, which wins "
        f"{100 * result['optimal_win_rate']:.4f} % itself (draws "
        f"{100 * result['optimal_draw_rate']:.4f} %); the opponents' best score averages "
        f"{result['opponent_mean']:.4f}"
    )
    if args.out is not None:
        write_json(args.out, result)
    return 0


def _check_cache(path: pathlib.Path, force: bool) -> None:
    """Raise now the OSError that writing the cache file at `path` would raise after the solve
    (a cache folder that cannot be made or written), unless the file is there to be loaded."""
    if force or not path.exists():
        check_writable(path)


def parse_dice(text: str) -> list[int]:
    """'1,2,3,3,5' or '12335' -> [1, 2, 3, 3, 5]; one-line error otherwise."""
    parts = [part for part in text.replace(" ", ",").split(",") if part]
    if len(parts) == 1 and len(parts[0]) == 5:
        parts = list(parts[0])
    try:
        dice = [int(part) for part in parts]
    except ValueError:
        raise UserError(f"--dice must be five numbers 1..6 like 1,2,3,3,5, got {text!r}") from None
    if len(dice) != 5 or not all(1 <= die <= 6 for die in dice):
        raise UserError(f"--dice must be five numbers 1..6 like 1,2,3,3,5, got {text!r}")
    return dice


def parse_card(text: str) -> dict[str, int]:
    """'ones=3,chance=22' -> {'ones': 3, 'chance': 22}; one-line error otherwise."""
    card: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, points = item.partition("=")
        if not sep:
            raise UserError(f"--card entries look like box=points (e.g. ones=3), got {item!r}")
        if name.strip() in card:
            raise UserError(f"box {name.strip()!r} is named twice in --card")
        try:
            card[name.strip()] = int(points)
        except ValueError:
            raise UserError(f"points of box {name.strip()!r} must be an integer") from None
    return card


def run_advise(args: argparse.Namespace) -> int:
    """Print the optimal expected final score of the position and its best actions."""
    if args.roll not in (0, 1, 2):
        raise UserError(f"--roll must be 0, 1 or 2 (the engine's roll index), got {args.roll}")
    if args.top < 0:
        raise UserError(f"--top must be >= 0 (0 lists every action), got {args.top}")
    if args.beat is not None and args.beat < 0:
        raise UserError(f"--beat must be >= 0, got {args.beat}")
    if args.yahtzee_bonuses < 0:
        raise UserError(f"--yahtzee-bonuses must be >= 0, got {args.yahtzee_bonuses}")
    from yahtzee_jax.solver.advisor import advise, advise_beat, beat_tables, make_position

    state = make_position(
        parse_dice(args.dice),
        args.roll,
        parse_card(args.card),
        args.yahtzee_bonuses,
        rules=args.rules,
    )
    if args.beat is None:
        result = advise(state, args.rules, cache_dir=args.cache_dir)
    else:
        result = advise_beat(state, args.rules, args.beat, beat_tables(args.rules, args.cache_dir))
    print(result.describe(top=args.top or None))
    return 0
