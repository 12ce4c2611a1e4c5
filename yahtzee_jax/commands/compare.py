"""`yahtzee-jax compare A.json ... --against B.json ...`: two players' match results on the
same matches (`match --out` files of the same seeds), their win rates and the paired interval
of the difference."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from yahtzee_jax.errors import UserError
from yahtzee_jax.files import check_writable, write_json
from yahtzee_jax.runner.finished_run import read_json_object


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register `compare`."""
    parser = subparsers.add_parser(
        "compare",
        help="two players' match results on the same matches, paired",
        description="Two players' `match --out` files of the same seeds (one per seed each): "
        "both win rates with their Wilson intervals, and the difference with the paired 95 % "
        "interval of the per-match differences.",
    )
    parser.add_argument("first", nargs="+", help="the first player's match JSONs, a seed each")
    parser.add_argument(
        "--against", nargs="+", required=True, help="the second player's, the same seeds"
    )
    parser.add_argument("--out", help="write the comparison as JSON here")
    parser.set_defaults(func=run)


def format_comparison(first: str, second: str, result: dict[str, Any]) -> str:
    """One line: both win rates with their Wilson intervals, the difference with its paired
    interval, the discordant matches."""

    def rate(who: str) -> str:
        low, high = result[f"{who}_win_interval_95"]
        return f"{100 * result[f'{who}_win_rate']:.2f} % [{100 * low:.2f}, {100 * high:.2f}]"

    low, high = result["interval_95"]
    seeds = ("seed " if len(result["seeds"]) == 1 else "seeds ") + ", ".join(
        str(seed) for seed in result["seeds"]
    )
    return (
        f"{first} {rate('first')}, {second} {rate('second')} of the same {result['games']:,} "
        f"matches ({seeds}); difference {100 * result['difference']:+.2f} points "
        f"[{100 * low:+.2f}, {100 * high:+.2f}] (paired 95 %; only {first} won "
        f"{result['only_first_won']:,}, only {second} {result['only_second_won']:,})"
    )


def run(args: argparse.Namespace) -> int:
    """Read both players' files, pair them by seed, print one line, write the JSON."""
    from yahtzee_jax.evaluation.paired import compare_match_files

    check_writable(args.out or None)
    both = sorted(
        {str(Path(p).resolve()) for p in args.first}
        & {str(Path(p).resolve()) for p in args.against}
    )
    if both:  # a player against itself differs by nothing, which was printed as a result
        raise UserError(f"{both[0]} is on both sides: give each player's own files")
    first = [read_json_object(path, "a `match --out` file") for path in args.first]
    second = [read_json_object(path, "a `match --out` file") for path in args.against]
    result = compare_match_files(first, second, [*args.first, *args.against])
    # A run folder's name, not its whole path; a built-in player's name as it is.
    names = [Path(str(records[0].get("run", "?"))).name for records in (first, second)]
    if names[0] == names[1]:
        names = ["first", "second"]
    print(format_comparison(*names, result))
    if args.out:
        from yahtzee_jax.commands.bench.machine import run_record

        files = {"first_files": args.first, "second_files": args.against}
        record = {"machine": run_record(getattr(args, "argv", []))}  # its command and commit
        write_json(args.out, {"first": names[0], "second": names[1], **result, **files, **record})
    return 0
