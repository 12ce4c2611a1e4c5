"""Evaluation harness: play many games on device, summarise them, compare with the optimum.

`play_games` runs whole games as one compiled program (the agent's `act` vmapped over games,
`lax.scan` over the 39 decisions) and returns per-game records; `summarize` turns records into
the paper's statistics (Tables 3-5, Figures 20-22); `evaluate` does both and writes the
artifacts; `yahtzee-jax evaluate AGENT` is the command line.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import os
import re
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from yahtzee_jax.agents import Agent, Policy, make_random_agent
from yahtzee_jax.errors import UserError
from yahtzee_jax.game import engine
from yahtzee_jax.game.engine import LAST_ROLL
from yahtzee_jax.game.rules import (
    CATEGORY_NAMES,
    DECISIONS_PER_GAME,
    DECISIONS_PER_TURN,
    NUM_CATEGORIES,
    NUM_TURNS,
    OFFICIAL,
    UPPER_BONUS,
    YAHTZEE_BONUS,
    YAHTZEE_SCORE,
    Category,
    Rules,
    get_rules,
)
from yahtzee_jax.play import TASKS, episode_keys, per_state_policy, play

# The paper's Table 4 thresholds, and its "share of games >= 250" column.
SCORE_THRESHOLDS = (50, 100, 150, 200, 250, 300, 400, 500, 750, 1000)
HIGH_SCORE = 250
TOP_CATEGORIES_PER_TURN = 3
BUILTIN_AGENTS = ("optimal", "greedy1", "greedy2", "greedy3", "random")
ACCELERATOR_BATCH_SIZE = 4096
# On a 2-core CPU the widget agents (optimal, greedy) play ~3x faster in batches of 32-256 than
# of 1,024+ (their per-game working set then stays in cache); the random agent barely cares.
CPU_BATCH_SIZE = 128


class IncompleteGameError(RuntimeError):
    """Some games were not over after 39 decisions: the agent played an illegal action."""


@dataclasses.dataclass(frozen=True)
class GameRecords:
    """Per-game results of an evaluation (numpy arrays over N games; never per-step data).

    box_scores: int32[N, 13], final points in each box.
    total: int32[N], final score, bonuses included.
    upper_bonus: bool[N], whether the 35-point upper bonus was earned.
    yahtzee_bonus_count: int32[N], number of +100 Yahtzee bonuses.
    turn_categories: int32[N, 13], the box scored at each turn.
    turn_points: int32[N, 13], the points written in that box at each turn.
    """

    agent: str
    rules: str
    seed: int
    box_scores: np.ndarray
    total: np.ndarray
    upper_bonus: np.ndarray
    yahtzee_bonus_count: np.ndarray
    turn_categories: np.ndarray
    turn_points: np.ndarray

    @property
    def num_games(self) -> int:
        """Number of games recorded."""
        return int(self.total.shape[0])

    @property
    def yahtzee_scored(self) -> np.ndarray:
        """bool[N]: the Yahtzee box holds 50."""
        return self.box_scores[:, Category.YAHTZEE] == YAHTZEE_SCORE

    def save(self, path: str | os.PathLike) -> None:
        """Write the records to an `.npz` file."""
        arrays = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        np.savez_compressed(path, **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> GameRecords:
        """Read records written by `save`."""
        with np.load(path) as data:
            values = {name: data[name] for name in data.files}
        for name in ("agent", "rules"):
            values[name] = str(values[name])
        values["seed"] = int(values["seed"])
        return cls(**values)


# --------------------------------------------------------------------------------------------
# Playing games on device
# --------------------------------------------------------------------------------------------


def _record_scoring(state: engine.State, action: jax.Array, next_state: engine.State, extras):
    """Per decision: the box it filled (-1 for a keep) and the points written there."""
    newly_filled = next_state.filled & ~state.filled
    category = jnp.argmax(newly_filled, axis=-1)
    points = jnp.take_along_axis(next_state.scores, category[:, None], axis=-1)[:, 0]
    return jnp.where(jnp.any(newly_filled, axis=-1), category, -1), points


@functools.partial(jax.jit, static_argnames=("act", "rules", "batch_size"))
def _play_batch(
    act: Policy,
    rules: Rules,
    params: Any,
    base_key: jax.Array,
    first_game: jax.Array,
    batch_size: int,
) -> dict[str, jax.Array]:
    """Games first_game .. first_game+batch_size-1; game i's dice depend only on (seed, i)."""
    keys = episode_keys(base_key, first_game, batch_size)
    final, (categories, points) = play(
        per_state_policy(act, params), keys, rules, "game", _record_scoring
    )
    # Each turn is keep, keep, score: the scoring decisions are every third one.
    return {
        "box_scores": final.scores,
        "total": engine.total_score(final),
        "upper_bonus": engine.upper_bonus(final) > 0,
        "yahtzee_bonus_count": final.yahtzee_bonus_count,
        "turn_categories": categories[LAST_ROLL::DECISIONS_PER_TURN].T,
        "turn_points": points[LAST_ROLL::DECISIONS_PER_TURN].T,
        "terminated": final.terminated,
    }


def check_num_games(num_games: int) -> None:
    """Reject a non-positive number of games with a clear message."""
    if num_games < 1:
        raise UserError(f"the number of games must be at least 1 (got {num_games})")


def default_batch_size() -> int:
    """Games per device batch: large on an accelerator, small on the CPU (see CPU_BATCH_SIZE)."""
    return CPU_BATCH_SIZE if jax.default_backend() == "cpu" else ACCELERATOR_BATCH_SIZE


def play_games(
    agent: Agent,
    num_games: int,
    seed: int,
    batch_size: int | None = None,
    progress: bool = False,
) -> GameRecords:
    """Play `num_games` games of `agent` under `agent.rules`, batched on device.

    Deterministic per seed and independent of `batch_size` (default: `default_batch_size()`):
    game i uses a key derived from (seed, i) only. The compiled program is cached per
    `agent.act` object (and batch size), so a new set of `agent.params` does not recompile.
    """
    check_num_games(num_games)
    batch_size = default_batch_size() if batch_size is None else batch_size
    if batch_size < 1:
        raise UserError(f"the batch size must be at least 1 (got {batch_size})")
    from tqdm.auto import tqdm

    batch_size = min(batch_size, num_games)
    base_key = jax.random.key(seed)
    batches: list[dict[str, np.ndarray]] = []
    with tqdm(total=num_games, unit="game", disable=not progress, desc=agent.name) as bar:

        def collect(out: dict[str, jax.Array], kept: int) -> None:
            batches.append({name: np.asarray(value)[:kept] for name, value in out.items()})
            bar.update(kept)

        pending = None
        for first_game in range(0, num_games, batch_size):
            out = _play_batch(
                agent.act, agent.rules, agent.params, base_key, jnp.int32(first_game), batch_size
            )
            if pending is not None:  # copy the previous batch while this one runs
                collect(*pending)
            pending = (out, min(batch_size, num_games - first_game))  # the last one is padded
        collect(*pending)
    arrays = {name: np.concatenate([batch[name] for batch in batches]) for name in batches[0]}
    unfinished = int(np.sum(~arrays.pop("terminated")))
    if unfinished:
        raise IncompleteGameError(
            f"agent {agent.name!r} left {unfinished} of {num_games} games unfinished after "
            f"{DECISIONS_PER_GAME} decisions: it played illegal actions (a no-op in the engine)"
        )
    return GameRecords(agent=agent.name, rules=agent.rules.name, seed=seed, **arrays)


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------


def category_mean_scores(records: GameRecords) -> dict[str, float]:
    """Mean points per box, then the mean points of each bonus (the paper's Figures 20-21)."""
    means = dict(zip(CATEGORY_NAMES, records.box_scores.mean(axis=0).tolist(), strict=True))
    means["upper_bonus"] = float(UPPER_BONUS * records.upper_bonus.mean())
    means["yahtzee_bonus"] = float(YAHTZEE_BONUS * records.yahtzee_bonus_count.mean())
    return means


def score_statistics(records: GameRecords) -> dict[str, Any]:
    """Score distribution, bonus rates and P(score >= n) of a set of games."""
    total = records.total
    std = float(total.std(ddof=1)) if total.size > 1 else 0.0
    return {
        "score": {
            "mean": float(total.mean()),
            "stderr": std / math.sqrt(total.size),
            "std": std,
            "median": float(np.median(total)),
            "min": int(total.min()),
            "max": int(total.max()),
        },
        "upper_bonus_rate": float(records.upper_bonus.mean()),
        "yahtzee_rate": float(records.yahtzee_scored.mean()),
        "mean_yahtzee_bonuses": float(records.yahtzee_bonus_count.mean()),
        "share_at_least_250": float(np.mean(total >= HIGH_SCORE)),
        "p_score_at_least": {str(n): float(np.mean(total >= n)) for n in SCORE_THRESHOLDS},
        "category_means": category_mean_scores(records),
    }


def turn_usage(records: GameRecords) -> list[dict[str, Any]]:
    """Top categories scored at each turn with usage share and median points (Table 5)."""
    rows = []
    for turn in range(NUM_TURNS):
        categories = records.turn_categories[:, turn]
        counts = np.bincount(categories, minlength=NUM_CATEGORIES)
        order = np.argsort(-counts, kind="stable")  # ties: the earlier box first
        top = [
            {
                "category": CATEGORY_NAMES[category],
                "usage": float(counts[category] / records.num_games),
                "median_score": float(np.median(records.turn_points[categories == category, turn])),
            }
            for category in order[:TOP_CATEGORIES_PER_TURN]
            if counts[category] > 0
        ]
        rows.append({"turn": turn + 1, "top_categories": top})
    return rows


def first_category_distribution(records: GameRecords) -> dict[str, float]:
    """Share of games whose first scored box is each category (the paper's Figure 22)."""
    counts = np.bincount(records.turn_categories[:, 0], minlength=NUM_CATEGORIES)
    return dict(zip(CATEGORY_NAMES, (counts / records.num_games).tolist(), strict=True))


def summarize(records: GameRecords, optimal_records: GameRecords | None = None) -> dict:
    """JSON-ready summary of `records`, side by side with the optimal agent's when given."""
    summary: dict[str, Any] = {
        "agent": records.agent,
        "rules": records.rules,
        "games": records.num_games,
        "seed": records.seed,
        **score_statistics(records),
        "turns": turn_usage(records),
        "first_category": first_category_distribution(records),
        "optimal": None,
    }
    if optimal_records is not None:
        if optimal_records.rules != records.rules:
            raise ValueError(
                f"optimal games under {optimal_records.rules!r} cannot be compared with games "
                f"under {records.rules!r}"
            )
        optimal = score_statistics(optimal_records)
        optimal["games"] = optimal_records.num_games
        optimal["seed"] = optimal_records.seed
        optimal["first_category"] = first_category_distribution(optimal_records)
        optimal["percent_of_optimal"] = {
            name: (100.0 * value / optimal["category_means"][name])
            if optimal["category_means"][name] > 0
            else None
            for name, value in summary["category_means"].items()
        }
        summary["optimal"] = optimal
    return summary


# --------------------------------------------------------------------------------------------
# Agents by name and the optimal reference games
# --------------------------------------------------------------------------------------------


def _solver():
    """The solver package, or a clear error if this build has none."""
    try:
        from yahtzee_jax import solver
    except ImportError as error:
        raise UserError(f"the optimal solver is not available ({error})") from None
    return solver


def resolve_agent(
    spec: str, rules: str | Rules | None = None, cache_dir: str | os.PathLike | None = None
) -> Agent:
    """The agent named by `spec`: optimal, greedy1-3, random, or a checkpoint path.

    Built-in agents play `rules` (official when None); a checkpoint plays the rules it was
    trained for, and an explicit different `rules` is an error. `cache_dir` is the solver's.
    """
    chosen = get_rules(rules) if rules is not None else None
    if spec == "random":
        return make_random_agent(chosen or OFFICIAL)
    if spec == "optimal":
        return _solver().make_optimal_agent(chosen or OFFICIAL, cache_dir=cache_dir)
    if re.fullmatch(r"greedy[123]", spec):
        return _solver().make_greedy_agent(int(spec[-1]), chosen or OFFICIAL)
    if os.sep in spec or "/" in spec or os.path.exists(spec):
        try:
            from yahtzee_jax.checkpointing import load_agent
        except ImportError as error:
            raise UserError(f"loading checkpoints is not available ({error})") from None
        agent = load_agent(spec)
        if chosen is not None and chosen != agent.rules:
            raise UserError(
                f"checkpoint {spec!r} plays {agent.rules.name!r} rules, not {chosen.name!r}; "
                "omit --rules to evaluate it under its own rules"
            )
        return agent
    raise UserError(
        f"unknown agent {spec!r}; choose one of: {', '.join(BUILTIN_AGENTS)}, or a checkpoint path"
    )


def reference_path(
    rules: Rules, num_games: int, seed: int, cache_dir: str | os.PathLike | None = None
) -> Path | None:
    """Cache file of the optimal agent's games for (rules, games, seed); None without a solver."""
    try:
        from yahtzee_jax.solver import default_cache_dir
    except ImportError:
        return None
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return cache / "reference_games" / f"optimal_{rules.name}_{num_games}g_seed{seed}.npz"


def optimal_reference(
    rules: Rules,
    num_games: int,
    seed: int,
    cache_dir: str | os.PathLike | None = None,
    batch_size: int | None = None,
    progress: bool = False,
) -> GameRecords | None:
    """Games of the optimal agent for comparison, cached on disk by rules/games/seed.

    Solves the rules first if their value table is not cached. None without a solver.
    """
    path = reference_path(rules, num_games, seed, cache_dir)
    if path is None:
        return None
    if path.exists():
        return GameRecords.load(path)
    from yahtzee_jax.solver import make_optimal_agent

    agent = make_optimal_agent(rules, cache_dir=cache_dir)
    records = play_games(agent, num_games, seed, batch_size=batch_size, progress=progress)
    _save_reference(records, path)
    return records


def _save_reference(records: GameRecords, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    records.save(path)


# --------------------------------------------------------------------------------------------
# Reports: the same tables as terminal text and as markdown
# --------------------------------------------------------------------------------------------

Table = tuple[str, list[str], list[list[str]]]  # title, header, rows


def _percent(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{100 * value:.{digits}f}%"


def _number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def report_tables(summary: dict) -> list[Table]:
    """The report's tables (title, header, rows of strings), shared by terminal and markdown."""
    optimal = summary["optimal"]
    sides = [summary] + ([optimal] if optimal else [])
    side_names = [summary["agent"]] + ([f"optimal ({optimal['games']} games)"] if optimal else [])
    score_rows = [
        [label] + [_number(side["score"][key], digits) for side in sides]
        for label, key, digits in (
            ("mean", "mean", 2),
            ("standard error", "stderr", 3),
            ("std", "std", 2),
            ("median", "median", 1),
            ("min", "min", 0),
            ("max", "max", 0),
        )
    ]
    score_rows += [
        [label] + [format_value(side[key]) for side in sides]
        for label, key, format_value in (
            ("upper bonus rate", "upper_bonus_rate", _percent),
            ("Yahtzee rate (box = 50)", "yahtzee_rate", _percent),
            ("mean +100 bonuses", "mean_yahtzee_bonuses", lambda v: _number(v, 4)),
            (f"share >= {HIGH_SCORE}", "share_at_least_250", _percent),
        )
    ]
    threshold_rows = [
        [n] + [_number(side["p_score_at_least"][n], 6) for side in sides]
        for n in summary["p_score_at_least"]
    ]
    category_header = ["category", summary["agent"]]
    if optimal:
        category_header += ["optimal", "% of optimal"]
    category_rows = []
    for name, value in summary["category_means"].items():
        row = [name, _number(value)]
        if optimal:
            share = optimal["percent_of_optimal"][name]
            row += [_number(optimal["category_means"][name]), _number(share, 1)]
        category_rows.append(row)
    turn_rows = [
        [
            str(turn["turn"]) if rank == 0 else "",
            top["category"],
            _percent(top["usage"], 1),
            _number(top["median_score"], 1),
        ]
        for turn in summary["turns"]
        for rank, top in enumerate(turn["top_categories"])
    ]
    first_rows = [
        [name] + [_percent(side["first_category"][name], 1) for side in sides]
        for name, _ in sorted(summary["first_category"].items(), key=lambda item: -item[1])
    ]
    title = (
        f"{summary['agent']}, {summary['rules']} rules, {summary['games']} games, "
        f"seed {summary['seed']}"
    )
    return [
        (f"Score ({title})", ["statistic", *side_names], score_rows),
        ("P(score >= n)", ["n", *side_names], threshold_rows),
        ("Mean points per category and bonus", category_header, category_rows),
        ("Top categories by turn", ["turn", "category", "usage", "median score"], turn_rows),
        ("First category chosen", ["category", *side_names], first_rows),
    ]


def _is_number(cell: str) -> bool:
    try:
        float(cell.rstrip("%"))
    except ValueError:
        return cell in ("", "-")
    return True


def format_terminal(tables: list[Table]) -> str:
    """Tables as aligned plain text: text columns to the left, numbers to the right."""
    blocks = []
    for title, header, rows in tables:
        columns = list(zip(header, *rows, strict=True))
        widths = [max(map(len, column)) for column in columns]
        numeric = [all(map(_is_number, column[1:])) for column in columns]

        def line(
            cells: list[str], widths: list[int] = widths, numeric: list[bool] = numeric
        ) -> str:
            aligned = (
                cell.rjust(width) if is_number else cell.ljust(width)
                for cell, width, is_number in zip(cells, widths, numeric, strict=True)
            )
            return "  ".join(aligned).rstrip()

        rule = "-" * len(line(header))
        blocks.append("\n".join([title, rule, line(header), rule, *map(line, rows)]))
    return "\n\n".join(blocks)


def format_markdown(tables: list[Table], images: list[str] = ()) -> str:
    """Tables as a markdown document, with the plots linked at the end."""
    parts = ["# Evaluation report"]
    for title, header, rows in tables:
        lines = [
            f"## {title}",
            "",
            "| " + " | ".join(header) + " |",
            "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
        ]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        parts.append("\n".join(lines))
    if images:
        parts.append("## Plots")
        parts += [f"![{Path(image).stem}]({image})" for image in images]
    return "\n\n".join(parts) + "\n"


# --------------------------------------------------------------------------------------------
# The whole evaluation
# --------------------------------------------------------------------------------------------


def evaluate(
    agent: Agent,
    num_games: int,
    seed: int,
    out_dir: str | os.PathLike | None = None,
    json_path: str | os.PathLike | None = None,
    compare_optimal: bool = True,
    progress: bool = True,
    *,
    batch_size: int | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> dict:
    """Play, summarise and write the artifacts; returns the JSON-ready summary.

    `out_dir` receives summary.json, report.md and the PNG plots; `json_path` the summary only.
    With `compare_optimal` the optimal agent's games (same rules, games and seed; cached on disk)
    are played alongside when the solver is available; the optimal agent's own games are stored
    as that reference.
    """
    started = time.perf_counter()
    records = play_games(agent, num_games, seed, batch_size=batch_size, progress=progress)
    elapsed = time.perf_counter() - started
    optimal_records = None
    if agent.name == "optimal":  # no column beside itself, but its games are the reference
        path = reference_path(agent.rules, num_games, seed, cache_dir)
        if path is not None and not path.exists():
            _save_reference(records, path)
    elif compare_optimal:
        optimal_records = optimal_reference(
            agent.rules, num_games, seed, cache_dir, batch_size=batch_size, progress=progress
        )
    summary = summarize(records, optimal_records)
    summary["seconds"] = elapsed
    summary["games_per_second"] = num_games / elapsed
    if json_path is not None:
        _write_json(summary, Path(json_path))
    if out_dir is not None:
        write_report(summary, records, optimal_records, Path(out_dir))
    return summary


def _write_json(summary: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=2) + "\n")


def write_report(
    summary: dict, records: GameRecords, optimal_records: GameRecords | None, out_dir: Path
) -> None:
    """Write summary.json, report.md and the PNG plots into `out_dir`."""
    from yahtzee_jax import plots

    out_dir.mkdir(parents=True, exist_ok=True)
    _write_json(summary, out_dir / "summary.json")
    images = plots.write_plots(summary, records, optimal_records, out_dir)
    markdown = format_markdown(report_tables(summary), [image.name for image in images])
    (out_dir / "report.md").write_text(markdown)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register `yahtzee-jax evaluate`."""
    parser = subparsers.add_parser(
        "evaluate",
        help="play many games of an agent and report its statistics",
        description="Play N games of AGENT on device and report the paper's statistics.",
    )
    parser.add_argument(
        "agent", metavar="AGENT", help=f"one of {', '.join(BUILTIN_AGENTS)}, or a checkpoint path"
    )
    parser.add_argument("--games", type=int, default=10_000, help="games to play (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="evaluation seed (default 0)")
    parser.add_argument(
        "--rules",
        default=None,
        help="rule variant for built-in agents (default official; a checkpoint "
        "plays its own rules)",
    )
    parser.add_argument("--json", dest="json_path", default=None, help="write the summary here")
    parser.add_argument(
        "--out", default=None, help="report directory (default runs/evaluate/AGENT_RULES_NG_seedS)"
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help=f"games per device batch (default {ACCELERATOR_BATCH_SIZE}, {CPU_BATCH_SIZE} on CPU)",
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
        "--task",
        choices=TASKS,
        default="game",
        help="game (default), or single-turn: N single turns on random cards against their "
        "exact optimum",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run `yahtzee-jax evaluate`."""
    check_num_games(args.games)
    rules = get_rules(args.rules) if args.rules is not None else None
    agent = resolve_agent(args.agent, rules, cache_dir=args.cache_dir)
    if args.task == "single-turn":
        from yahtzee_jax.single_turn import evaluate_single_turn

        result = evaluate_single_turn(agent, args.games, args.seed)
        if args.json_path is not None:
            _write_json(result, Path(args.json_path))
        print(
            f"{agent.name}, {agent.rules.name} rules, {args.games} single turns, seed {args.seed}: "
            f"mean {result['mean']:.3f} +- {result['stderr']:.3f}, optimum of the same turns "
            f"{result['optimum_mean']:.3f} ({result['percent_of_optimum']:.1f} %)"
        )
        return 0
    out_dir = args.out
    if out_dir is None:
        label = re.sub(r"[^A-Za-z0-9_.-]+", "-", agent.name)
        out_dir = (
            Path("runs") / "evaluate" / f"{label}_{agent.rules.name}_{args.games}g_seed{args.seed}"
        )
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
    )
    print(format_terminal(report_tables(summary)))
    print(
        f"\n{summary['games']} games in {summary['seconds']:.2f} s "
        f"({summary['games_per_second']:.0f} games/s); report in {out_dir}"
    )
    return 0
