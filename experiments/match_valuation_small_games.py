"""Exact win rates of the target-seeker's valuations on small games, and where they lose (issue 63).

Usage: python experiments/match_valuation_small_games.py [--games g7 g8 g9 g10 g7-bonus42]
           [--weights 1 0 0.5] [--from-turns] [--seats first second] [--no-best] [--threads 2]
           [--out results/match-exact/valuations.json] [--table] [--merge FILE ...]

For each small game (`match_exact_small_games.game_rules`: `gN` without bonuses, a card its
filled boxes; `gN-bonusT` with an upper bonus of 35 at T, a card its boxes and capped upper
total) and each hindsight weight w it solves the match with my turns played by the
target-seeker's valuation (`solver.match_valuation`) and the opponent by expected score: the
valuation's exact chance to win in each seat and on average (seats alternated), beside the
exact best play and the oracle's ceiling (from `--exact` results of `match_exact_small_games.py`,
or solved here when missing) and its share of the oracle's gap. `--from-turns` also solves, for
each turn t, the player who plays the valuation (w = 1) before its turn t and at best from it:
the best play's chance less the valuation's is what it loses in all its turns, and the rise
from one t to the next is what its turn t loses. Each part is merged into `--out` when done;
`--merge A B` merges files of one-seat solves run side by side (`--seats first --out A`,
`--seats second --out B`) into `--out`, a part's win the seats' average.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time
from pathlib import Path
from typing import Any

from match_exact_small_games import ceiling_of, game_name, game_rules, gap_fraction

from yahtzee_jax.commands.bench.machine import script_record
from yahtzee_jax.files import write_json
from yahtzee_jax.game.rules import Rules
from yahtzee_jax.solver.match_exact import match_figures
from yahtzee_jax.solver.match_valuation import seeker_valuation

ROOT = Path(__file__).resolve().parent.parent
EXACT_RESULTS = Path("results/match-exact/results.json")  # under ROOT


SEATS = ("first", "second")


def seats_win(
    rules: Rules,
    weight: float | None,
    exact_from_turn: int | None,
    seats: tuple[str, ...],
    threads: int = 1,
) -> dict[str, Any]:
    """My exact chance to win in `seats` and on average (seats alternated, when both): by the
    valuation of `weight` before my turn `exact_from_turn` (None: all turns), at best from it;
    `weight` None: the best play (`match_exact.match_figures`, without the draws)."""
    valuation = None
    if weight is not None:
        valuation = seeker_valuation(rules, weight, exact_from_turn=exact_from_turn)
    return match_figures(rules, draws=False, valuation=valuation, seats=seats, threads=threads)


def best_and_ceiling(
    game: str, rules: Rules, seats: tuple[str, ...], best: bool, threads: int = 1
) -> dict[str, Any]:
    """The exact best play's chances (from the exact results file, else solved; not at all
    unless `best`) and the ceiling."""
    known = json.loads((ROOT / EXACT_RESULTS).read_text())["games"].get(game, {})
    if not best:
        return {"ceiling": ceiling_of(rules)}
    if "exact" in known and len(seats) == 2:
        exact = known["exact"]
        best = {"seats": {k: {"win": v["win"]} for k, v in exact["seats"].items()}}
        best |= {"win": exact["win"], "source": str(EXACT_RESULTS)}
    else:
        best = seats_win(rules, None, None, seats, threads)
    return {"best": best, "ceiling": ceiling_of(rules)}


def merge(out: Path, game: str, key: str, value: Any) -> None:
    """Write one part into the results file, the rest as the file now has it."""
    results = json.loads(out.read_text()) if out.exists() else {"games": {}}
    entry = results["games"].setdefault(game, {})
    entry[key] = value
    entry["summary"] = summary(entry)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, results)


def merge_seats(out: Path, sources: list[Path]) -> None:
    """Merge the result files of solves run apart (`--seats first` in one, `second` in another)
    into `out`: a part's seats join those already there (a seat solved again replaces its
    figures), its win is both seats' average once both are in, and each seat merged in keeps
    its run's machine record as `machine_<seat>_seat` beside the part's first `machine`."""
    results = json.loads(out.read_text()) if out.exists() else {"games": {}}
    for source in sources:
        for game, incoming in json.loads(source.read_text())["games"].items():
            entry = results["games"].setdefault(game, {})
            for key, part in incoming.items():
                if key == "summary":
                    continue
                if key == "reference":  # the one with the best play's chances wins
                    if "best" in part or "reference" not in entry:
                        entry[key] = part
                    continue
                if key not in entry:
                    entry[key] = part
                    continue
                joined = entry[key]
                joined["seats"] = {**joined["seats"], **part["seats"]}
                for seat in part["seats"]:
                    joined[f"machine_{seat}_seat"] = part["machine"]
                wins = [seat["win"] for seat in joined["seats"].values()]
                joined["win"] = sum(wins) / len(wins)
            entry["summary"] = summary(entry)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, results)


def summary(entry: dict[str, Any]) -> dict[str, Any]:
    """A game's derived figures, kept in the file beside the solves: each valuation's share of
    the oracle's gap and points under the best play, and what its turns lose one by one (the
    best play's chance played from turn t less from turn t + 1, in points)."""
    if "best" not in entry["reference"]:  # solved apart (--no-best): merged in later
        return {}
    reference = entry["reference"]
    best, ceiling = reference["best"]["win"], reference["ceiling"]
    best_seats = set(reference["best"]["seats"])

    def share(part: dict[str, Any]) -> float | None:
        # the ceiling is the seats' average: a share only of both seats' average
        return gap_fraction(part["win"], ceiling) if set(part["seats"]) == set(SEATS) else None

    weights = {
        key.split("-", 1)[1]: {
            "win": part["win"],
            "gap_fraction": share(part),
            # against the best play in the same seats only
            "points_under_best": 100 * (best - part["win"])
            if set(part["seats"]) == best_seats
            else None,
        }
        for key, part in entry.items()
        if key.startswith("weight-")
    }
    out: dict[str, Any] = {"best_gap_fraction": share(reference["best"]), "weights": weights}
    turns = sorted(int(key.rsplit("-", 1)[1]) for key in entry if key.startswith("from-turn-"))
    if turns and "weight-1" in entry:
        played = (
            [best] + [entry[f"from-turn-{t}"]["win"] for t in turns] + [entry["weight-1"]["win"]]
        )
        out["turn_losses_points"] = [100 * (a - b) for a, b in itertools.pairwise(played)]
    return out


def table(results: dict[str, Any]) -> str:
    """The valuations' exact win rates beside the best play, and what each turn loses, as
    markdown (from each game's `summary`)."""
    lines = [
        "| game | valuation | first / second / **avg** | share of the oracle's gap | "
        "under the best play (points) | CPU s |",
        "|---|---|---|---|---|---|",
    ]
    for game, entry in results["games"].items():
        if not entry["summary"]:
            continue
        best, figures = entry["reference"]["best"], entry["summary"]
        rows = [("best play (exact)", best, figures["best_gap_fraction"], 0.0)]
        rows += [
            (
                f"hindsight weight {w}",
                entry[f"weight-{w}"],
                f["gap_fraction"],
                f["points_under_best"],
            )
            for w, f in figures["weights"].items()
        ]
        for name, part, share, under in rows:
            seats = part["seats"]
            cpu = sum(seat.get("cpu_seconds", 0.0) for seat in seats.values())
            by_seat = " / ".join(
                f"{100 * seats[seat]['win']:.2f}" if seat in seats else "not solved"
                for seat in SEATS
            )
            mean = f"**{100 * part['win']:.3f} %**" if len(seats) == len(SEATS) else "one seat"
            share_cell = "one seat" if share is None else f"{100 * share:.1f} %"
            under_cell = "other seats" if under is None else f"{under:.3f}"
            cells = [game, name, f"{by_seat} / {mean}", share_cell, under_cell, f"{cpu:.0f}"]
            lines.append("| " + " | ".join(cells) + " |")
    most = max(len(e["summary"].get("turn_losses_points", [])) for e in results["games"].values())
    lines += [
        "",
        "| game | " + " | ".join(f"turn {t}" for t in range(most)) + " |",
        "|---" * (most + 1) + "|",
    ]
    for game, entry in results["games"].items():
        losses = entry["summary"].get("turn_losses_points")
        if losses:
            cells = [f"{loss:.3f}" for loss in losses] + [""] * (most - len(losses))
            lines.append(f"| {game} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Solve the named games' valuations and merge them into the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", type=game_name, default=["g7", "g8", "g9"])
    parser.add_argument("--seats", nargs="+", choices=list(SEATS), default=list(SEATS))
    parser.add_argument("--no-best", action="store_true", help="leave the best play's solve out")
    parser.add_argument("--weights", nargs="*", type=float, default=[1.0, 0.0, 0.5])
    parser.add_argument("--from-turns", action="store_true", help="the valuation before turn t")
    parser.add_argument("--threads", type=int, default=1, help="host threads of each solve")
    parser.add_argument("--out", default="results/match-exact/valuations.json")
    parser.add_argument("--table", action="store_true", help="print the results as markdown")
    parser.add_argument(
        "--merge", nargs="+", type=Path, help="merge these files' one-seat solves into --out"
    )
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error(f"--threads: 1 or more; got {args.threads}")
    out = Path(args.out)
    if args.merge:
        merge_seats(out, args.merge)
        print(table(json.loads(out.read_text())))
        return
    if args.table:  # the summaries again (written by each merge), then the tables
        results = json.loads(out.read_text())
        for entry in results["games"].values():
            entry["summary"] = summary(entry)
        write_json(out, results)
        print(table(results))
        return
    record = script_record(None if argv is None else [__file__, *argv])
    record["cache_dir"] = os.environ.get("YAHTZEE_JAX_CACHE")
    for game in args.games:
        rules, seats = game_rules(game), tuple(args.seats)
        started = time.perf_counter()
        best = best_and_ceiling(game, rules, seats, not args.no_best, args.threads)
        merge(out, game, "reference", best)
        for weight in args.weights:
            part = seats_win(rules, weight, None, seats, args.threads)
            part |= {"weight": weight, "machine": record}
            merge(out, game, f"weight-{weight:g}", part)
            print(
                f"{game} weight {weight:g}: {100 * part['win']:.3f} % "
                f"({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
        if args.from_turns:
            for turn in range(1, rules.num_boxes):
                part = seats_win(rules, 1.0, turn, seats, args.threads)
                part |= {"from_turn": turn, "machine": record}
                merge(out, game, f"from-turn-{turn}", part)
                print(
                    f"{game} hindsight before turn {turn}, best from it: "
                    f"{100 * part['win']:.3f} % ({time.perf_counter() - started:.0f} s)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
