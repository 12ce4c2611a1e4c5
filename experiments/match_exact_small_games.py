"""The exact two-player optimum against the optimal-solitaire agent on small games (issue 63).

Usage: python experiments/match_exact_small_games.py [--games g7 g8 g9 g10 (g7-bonus42 ...)]
           [--players target-seeker target-seeker-w0 win-seeker optimal] [--matches 20000]
           [--seed 31] [--no-exact] [--no-draws] [--threads 2]
           [--out results/match-exact/results.json] [--table] [--plan [--plan-out FILE]]

`--plan` prints the size of each game's exact solve (its win columns a seat) and its CPU time
at g11's pace, solving nothing but, for a game with an upper bonus, its solitaire value table:
how often the optimal agent makes the bonus (100,000 games of seed 0). `gN-bonusT` is the
small game with an upper bonus of 35 at T.

For each small game (the six upper boxes, a few lower ones and the 50-point five of a kind; no
upper bonus, no Yahtzee bonus, no Joker) it writes: the exact best chance to win of any player
in each seat and on average (`solver.match_exact`, seats alternated), with the draws of that
play; the oracle ceiling and the optimal agent's exact win rate (`solver.ceiling`); the
fraction of the oracle's gap (ceiling - optimal agent) the exact optimum reaches; and the
simulated win rates of the project's match players on `--matches` matches of `--seed` (game i
in seat i % 2), with Wilson intervals and the fraction of the gap each reaches. Each part (a
game's exact figures, a player's matches) is merged into the output file when done, so that
runs of the exact solves and of the simulations may go side by side.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from yahtzee_jax.agents import builtin_agent
from yahtzee_jax.commands.bench.machine import script_record
from yahtzee_jax.evaluation.matches import evaluate_agent_matches
from yahtzee_jax.files import write_json
from yahtzee_jax.game.rules import RULE_VARIANTS, UPPER_BOXES, Box, Joker, Kind, Rules
from yahtzee_jax.solver.ceiling import exact_ceiling
from yahtzee_jax.solver.match_cards import win_columns
from yahtzee_jax.solver.match_exact import match_figures
from yahtzee_jax.solver.native_play import play_optimal
from yahtzee_jax.solver.target_table import target_tables

_FIVE = Box("yahtzee", Kind.OF_A_KIND, 5, 50)
_LOWER = (
    Box("chance", Kind.CHANCE),
    Box("three_of_a_kind", Kind.OF_A_KIND, 3),
    Box("small_straight", Kind.STRAIGHT, 4, 30),
    Box("four_of_a_kind", Kind.OF_A_KIND, 4),
    Box("full_house", Kind.FULL_HOUSE, score=25),
)


def small_game(boxes: int) -> Rules:
    """The game of `boxes` boxes: the upper six, the first `boxes - 7` of `_LOWER`, the 50."""
    lower = _LOWER[: boxes - 7]
    return Rules(
        f"small{boxes}",
        yahtzee_bonus=False,
        joker=Joker.NONE,
        boxes=(*UPPER_BOXES, *lower, _FIVE),
        upper_bonus_points=0,
    )


GAMES = {f"g{boxes}": boxes for boxes in (7, 8, 9, 10, 11, 12)}
# Whole 13-box games, too large for the exact solve (`--no-exact`): where the small games' share
# of the gap stops carrying over, official rules with their bonuses taken away one by one.
WHOLE_GAMES = {
    "g13": Rules("g13", yahtzee_bonus=False, joker=Joker.NONE, upper_bonus_points=0),
    "plain": RULE_VARIANTS["plain"],
    "official": RULE_VARIANTS["official"],
}


def game_rules(game: str) -> Rules:
    """The rules of a game named on the command line: a whole game, or a small one (`g7` to
    `g12`) with `-bonusT` for an upper bonus of 35 at T points (`g7-bonus42`)."""
    if game in WHOLE_GAMES:
        return WHOLE_GAMES[game]
    found = re.fullmatch(r"(g\d+)(?:-bonus(\d+))?", game)
    if found is None or found[1] not in GAMES:
        names = ", ".join([*GAMES, *WHOLE_GAMES])
        raise argparse.ArgumentTypeError(f"unknown game {game!r}: one of {names}, or gN-bonusT")
    rules = small_game(GAMES[found[1]])
    if found[2] is None:
        return rules
    threshold = int(found[2])
    return dataclasses.replace(
        rules, name=game, upper_bonus_threshold=threshold, upper_bonus_points=35
    )


def game_name(game: str) -> str:
    """`game` if it names one (argparse's type: a bad name is refused in one line)."""
    game_rules(game)
    return game


# The target-seeker as the committed results played it: its joint endgame by hindsight (the
# thirty-first session's exact joint endgame came after them).
_AS_PLAYED = {"joint_endgame": "hindsight"}
PLAYERS = {  # name in the results: (match player, its options: `agents.resolve.BUILTINS`)
    "target-seeker": ("target-seeker", {"hindsight_weight": 1.0, **_AS_PLAYED}),
    "target-seeker-w0": ("target-seeker", {"hindsight_weight": 0.0, **_AS_PLAYED}),
    "target-seeker-w0.5": ("target-seeker", {"hindsight_weight": 0.5, **_AS_PLAYED}),
    "win-seeker": ("win-seeker", {}),
    "optimal": ("optimal", {}),
}


def ceiling_of(rules: Rules) -> dict[str, Any]:
    """The oracle ceiling and the optimal agent's exact figures (both target tables' first
    rows, solved into the cache when missing)."""
    rows = [
        target_tables(rules, policy=policy).chances((0, 0, 0)).copy()
        for policy in ("target", "expected")
    ]
    return exact_ceiling(rows[0], rows[1], 1)


def gap_fraction(win: float, ceiling: dict[str, Any]) -> float:
    """The fraction of the oracle's gap over the optimal agent that a win rate reaches."""
    return (win - ceiling["optimal_win_rate"]) / (ceiling["win_rate"] - ceiling["optimal_win_rate"])


def simulate(rules: Rules, player: str, matches: int, seed: int) -> dict[str, Any]:
    """A match player against the optimal agent on `matches` matches of `seed`."""
    name, options = PLAYERS[player]
    agent = builtin_agent(name, rules, **options)
    result = evaluate_agent_matches(agent, "optimal", matches, seed)
    keep = ("games", "wins", "draws", "win_rate", "win_interval_95", "mean_score", "wall_s")
    return {key: result[key] for key in keep} | {
        "draw_rate": result["draws"] / result["games"],
        "seed": seed,
        "player": name,
        "hindsight_weight": options.get("hindsight_weight"),
    }


def exact_entry(rules: Rules, draws: bool = True, threads: int = 1) -> dict[str, Any]:
    """The exact figures of one game: the best play (its draws if `draws`; on `threads` host
    threads), the ceiling, the optimal agent."""
    started = time.perf_counter()
    ceiling = ceiling_of(rules)
    tables_s = time.perf_counter() - started
    exact = match_figures(rules, draws=draws, threads=threads)
    print(
        f"{rules.name}: exact {100 * exact['win']:.3f} %, ceiling "
        f"{100 * ceiling['win_rate']:.3f} %, optimal {100 * ceiling['optimal_win_rate']:.3f} %",
        flush=True,
    )
    return {
        "rules": rules.name,
        "boxes": list(rules.box_names),
        "most": ceiling["most"],
        "exact": exact,
        "ceiling": ceiling,
        "exact_gap_fraction": gap_fraction(exact["win"], ceiling),
        "target_tables_seconds": tables_s,
    }


def simulated_entry(rules: Rules, player: str, matches: int, seed: int) -> dict[str, Any]:
    """A player's simulated matches and the fraction of the oracle's gap it reaches."""
    ceiling = ceiling_of(rules)
    result = simulate(rules, player, matches, seed)
    low, high = result["win_interval_95"]
    result["gap_fraction"] = gap_fraction(result["win_rate"], ceiling)
    result["gap_fraction_interval"] = [gap_fraction(low, ceiling), gap_fraction(high, ceiling)]
    print(
        f"{rules.name} {player}: {100 * result['win_rate']:.2f} % [{100 * low:.2f}, "
        f"{100 * high:.2f}], {result['wall_s']:.0f} s",
        flush=True,
    )
    return result


def merge(out: Path, game: str, key: str, value: Any) -> None:
    """Write one game's part into the results file, the rest as the file now has it (another
    run may be writing other parts)."""
    results = json.loads(out.read_text()) if out.exists() else {"games": {}}
    entry = results["games"].setdefault(game, {"simulated": {}})
    if key == "exact":
        entry.update(value)
    elif key == "ceiling":
        entry["ceiling"] = value
    else:
        entry.setdefault("simulated", {})[key] = value
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, results)


def table(results: dict[str, Any]) -> str:
    """The results file as the markdown table of docs/two_player/match_exact.md."""
    ran = {name for entry in results["games"].values() for name in entry.get("simulated", {})}
    players = [name for name in PLAYERS if name in ran]
    lines = [
        "| game | boxes | optimal agent (exact) | **exact optimum** first / second / avg | draws "
        "| oracle ceiling | exact's share of the gap | "
        + " | ".join(f"{name} [95 %] (share)" for name in players)
        + " | exact solve, CPU s (both seats) |",
        "|---" * (7 + len(players) + 1) + "|",
    ]
    for game, entry in results["games"].items():
        if "exact" not in entry:
            continue
        exact, ceiling, seats = entry["exact"], entry["ceiling"], entry["exact"]["seats"]
        cells = [
            game,
            str(len(entry["boxes"])),
            f"{100 * ceiling['optimal_win_rate']:.2f} %",
            f"{100 * seats['first']['win']:.2f} / {100 * seats['second']['win']:.2f} / "
            f"**{100 * exact['win']:.2f} %**",
            "not solved" if exact["draw"] is None else f"{100 * exact['draw']:.2f} %",
            f"{100 * ceiling['win_rate']:.2f} %",
            f"{100 * entry['exact_gap_fraction']:.0f} %",
        ]
        for name in players:
            run = entry.get("simulated", {}).get(name)
            if run is None:
                cells.append("not run")
                continue
            low, high = run["win_interval_95"]
            cells.append(
                f"{100 * run['win_rate']:.2f} % [{100 * low:.2f}, {100 * high:.2f}] "
                f"({100 * run['gap_fraction']:.0f} %)"
            )
        cpu = sum(seat["cpu_seconds"] for seat in seats.values())
        cells.append(f"{cpu:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plan_entry(game: str, bonus_games: int = 100_000) -> dict[str, Any]:
    """The size of a game's exact solve (its win columns a seat, and CPU minutes at g11's pace)
    and, with an upper bonus, how often the optimal agent makes it (`bonus_games` games of seed
    0, the native engine): whether the bonus is a chase or a formality."""
    rules = game_rules(game)
    columns = win_columns(rules)
    # 1.3 us a column: g11's 373 million in 481 CPU-s a seat (match_exact.md)
    entry: dict[str, Any] = {
        "win_columns": columns,
        "cpu_minutes_at_g11_pace": 1.3e-6 * columns / 60,
    }
    if rules.upper_bonus_points:
        played = play_optimal(rules, bonus_games, seed=0, threads=1)
        entry |= {
            "bonus_games": bonus_games,
            "bonus_rate": float(played.upper_bonus.mean()),
            "upper_mean": float(played.box_scores[:, :6].sum(1).mean()),
            "mean": float(played.total.mean()),
        }
    return entry


def plan_line(game: str, entry: dict[str, Any]) -> str:
    """`plan_entry`'s figures in one line."""
    line = (
        f"{game}: {entry['win_columns']:,} win columns a seat, "
        f"about {entry['cpu_minutes_at_g11_pace']:.0f} CPU min"
    )
    if "bonus_rate" in entry:
        line += (
            f"; the optimal agent makes the bonus in {100 * entry['bonus_rate']:.1f} % of "
            f"{entry['bonus_games']:,} games (upper boxes {entry['upper_mean']:.1f} points, "
            f"in all {entry['mean']:.1f})"
        )
    return line


def main() -> None:
    """Compute the named games' parts and merge them into the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", type=game_name, default=["g7", "g8", "g9", "g10"])
    parser.add_argument("--plan", action="store_true", help="each exact solve's size; no solve")
    parser.add_argument("--plan-out", help="--plan's figures also as JSON into this file")
    parser.add_argument("--players", nargs="*", choices=PLAYERS, default=list(PLAYERS))
    parser.add_argument("--no-exact", action="store_true", help="only the simulated players")
    parser.add_argument("--no-draws", action="store_true", help="the exact wins alone (half)")
    parser.add_argument("--threads", type=int, default=1, help="host threads of each solve")
    parser.add_argument("--matches", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--out", default="results/match-exact/results.json")
    parser.add_argument("--table", action="store_true", help="print the results as markdown")
    args = parser.parse_args()
    if args.threads < 1:
        parser.error(f"--threads: 1 or more; got {args.threads}")
    out = Path(args.out)
    if args.table:
        print(table(json.loads(out.read_text())))
        return
    record = script_record()
    if args.plan:
        plans = {}
        for game in args.games:
            plans[game] = plan_entry(game)
            print(plan_line(game, plans[game]), flush=True)
        if args.plan_out:
            write_json(Path(args.plan_out), {"machine": record, "games": plans})
        return
    record["cache_dir"] = os.environ.get("YAHTZEE_JAX_CACHE")
    for game in args.games:
        rules = game_rules(game)
        if not args.no_exact:
            merge(
                out,
                game,
                "exact",
                exact_entry(rules, not args.no_draws, args.threads) | {"machine": record},
            )
        elif game in WHOLE_GAMES:  # no exact solve: the ceiling beside the players
            merge(out, game, "ceiling", ceiling_of(rules))
        for player in args.players:
            result = simulated_entry(rules, player, args.matches, args.seed)
            merge(out, game, player, result | {"machine": record})


if __name__ == "__main__":
    main()
