"""Evaluation reports: the optimal reference games, the tables, and the whole evaluation.

`evaluate` plays an agent's games (`evaluation.records`), summarises them beside the optimal
agent's (`evaluation.statistics`) and writes summary.json, report.md and the plots
(`evaluation.plots`); `report_tables` feeds both the terminal table and the markdown report.
"""

from __future__ import annotations

import glob
import hashlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from yahtzee_jax.errors import UserError
from yahtzee_jax.evaluation.game_records import GameRecords
from yahtzee_jax.evaluation.statistics import HIGH_SCORE, summarize
from yahtzee_jax.files import (
    ARCHIVE_ERRORS,
    cached,
    check_state,
    checksum_path,
    kept_or_said,
    remove_stale,
    sources_digest,
    write_json,
    write_whole,
    written_checked,
)
from yahtzee_jax.game.rules import Rules

if TYPE_CHECKING:
    from yahtzee_jax.agents.agent import Agent

# --------------------------------------------------------------------------------------------
# The optimal agent's reference games, cached on disk
# --------------------------------------------------------------------------------------------


# The code the optimal agent's games are played by: a change to it plays them again. Its digest
# is taken when this module is imported (a run imports it at its start, `session.finish_modules`):
# games played by the code loaded then are not stored under a key of sources edited since.
PLAYING_SOURCES = ("game/*.py", "envs/*.py", "agents/*.py", "solver/*.py", "evaluation/records.py")
PLAYING_DIGEST = sources_digest(*PLAYING_SOURCES)
KEY_LENGTH = 12  # hex digits of the key in a reference file's name


def reference_path(
    rules: Rules, num_games: int, seed: int, cache_dir: str | os.PathLike | None = None
) -> Path:
    """Cache file of the optimal agent's games for (rules, games, seed), keyed by the value
    table they were played from (its checksum) and the code that played them: games kept
    under a name alone outlived a repaired table and changed code. Before the table is solved
    the key is one no games are stored under."""
    from yahtzee_jax.solver import default_cache_dir
    from yahtzee_jax.solver.value_table import cache_file

    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    table_file = cache_file(rules, cache)
    try:
        table = checksum_path(table_file).read_text()
    except (OSError, UnicodeError):
        table = "unsolved"
    key = hashlib.sha256(f"{table}\0{PLAYING_DIGEST}".encode()).hexdigest()[:KEY_LENGTH]
    # Named by the table's file, not the rules' name: rules of one name and another card or
    # bonus have tables (and games) of their own.
    stem = f"optimal_{table_file.stem}_{num_games}g_seed{seed}"
    return cache / "reference_games" / f"{stem}-{key}.npz"


def _legacy_name(rules: Rules, num_games: int, seed: int) -> str:
    """The name reference games were kept under before their key."""
    return f"optimal_{rules.name}_{num_games}g_seed{seed}.npz"


def optimal_reference(
    rules: Rules,
    num_games: int,
    seed: int,
    cache_dir: str | os.PathLike | None = None,
    batch_size: int | None = None,
    progress: bool = False,
    program_dir: str | os.PathLike | None = None,
) -> GameRecords:
    """Games of the optimal agent for comparison, cached on disk by rules/games/seed.

    Solves the rules first if their value table is not cached. The file is a checked cache file
    (`files.cached`: written whole, a damaged one played again, one process plays it). Its play
    program is kept in `program_dir` where given (`records.play_games`).
    """
    from yahtzee_jax.agents.widget_agents import make_optimal_agent
    from yahtzee_jax.solver.value_table import solve

    solve(rules, cache_dir=cache_dir)  # the table the games' key names (loaded: a checksum)
    path = reference_path(rules, num_games, seed, cache_dir)

    def make() -> GameRecords:
        from yahtzee_jax.evaluation.records import play_games

        agent = make_optimal_agent(rules, cache_dir=cache_dir)
        records = play_games(
            agent,
            num_games,
            seed,
            batch_size=batch_size,
            progress=progress,
            program_dir=program_dir,
        )
        _save_reference(records, path, _legacy_name(rules, num_games, seed))
        return records

    return cached(path, _load_reference, make, "optimal reference games")


def _save_reference(records: GameRecords, path: Path, legacy: str) -> None:
    """Write the reference games whole, their checksum beside them (`files.written_checked`),
    and remove those of the same games under an older key (another table or code) or under
    their `legacy` name; in a folder that takes no files they are used unkept."""

    def write() -> None:
        with written_checked(path, ".tmp.npz") as partial:  # npz: numpy adds none
            records.save(partial)

    kept_or_said(write, "optimal reference games", path)
    stem = glob.escape(path.name[: -len(f"-{'0' * KEY_LENGTH}.npz")])
    for pattern in (f"{stem}-{'?' * KEY_LENGTH}.npz", glob.escape(legacy)):
        remove_stale(path, pattern)


def _load_reference(path: Path) -> GameRecords | None:
    """The cached games, or None where the file is missing or not `GameRecords.save`'s."""
    try:
        return GameRecords.load(path)
    except (*ARCHIVE_ERRORS, TypeError):  # TypeError: entries of other fields
        return None


# --------------------------------------------------------------------------------------------
# Tables, as terminal text and as markdown
# --------------------------------------------------------------------------------------------

Table = tuple[str, list[str], list[list[str]]]  # title, header, rows


def _percent(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{100 * value:.{digits}f}%"


def _number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def report_tables(summary: dict, rules: Rules) -> list[Table]:
    """The report's tables (title, header, rows of strings), shared by terminal and markdown;
    `rules`: the rule set the summary's games were played under."""
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
    # The five-alike box by the game's own name (Yahtzee, Yacht, Yatzy); no +100 row in a game
    # without the bonus.
    rates = [
        ("upper bonus rate", "upper_bonus_rate", _percent),
        (f"{rules.box_names[rules.yahtzee_box]} rate", "yahtzee_rate", _percent),
        ("mean +100 bonuses", "mean_yahtzee_bonuses", lambda v: _number(v, 4)),
        (f"share >= {HIGH_SCORE}", "share_at_least_250", _percent),
    ]
    score_rows += [
        [label] + [format_value(side[key]) for side in sides]
        for label, key, format_value in rates
        if rules.yahtzee_bonus or key != "mean_yahtzee_bonuses"
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
    program_dir: str | os.PathLike | None = None,
    plots: bool = True,
) -> dict:
    """Play, summarise and write the artifacts; returns the JSON-ready summary.

    `out_dir` receives summary.json, report.md and the PNG plots; `json_path` the summary only.
    With `compare_optimal` the optimal agent's games (same rules, games and seed; cached on disk)
    are played alongside; the optimal agent's own games are stored as that reference. With a
    `program_dir`, the games' traced programs are kept there between processes
    (`records.play_games`).
    """
    from yahtzee_jax.evaluation.records import play_games  # JAX: only where an agent plays

    started = time.perf_counter()
    play = {"batch_size": batch_size, "progress": progress, "program_dir": program_dir}
    records = play_games(agent, num_games, seed, **play)
    elapsed = time.perf_counter() - started
    optimal_records = None
    if agent.optimal:  # no column beside itself, but its games are the reference
        path = reference_path(agent.rules, num_games, seed, cache_dir)
        if check_state(path) != "whole":  # missing, damaged or without its checksum
            _save_reference(records, path, _legacy_name(agent.rules, num_games, seed))
    elif compare_optimal:
        optimal_records = optimal_reference(agent.rules, num_games, seed, cache_dir, **play)
    return report(records, optimal_records, elapsed, out_dir, json_path, plots)


def evaluate_native(
    rules: Rules,
    num_games: int,
    seed: int,
    out_dir: str | os.PathLike | None = None,
    json_path: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    plots: bool = True,
    progress: bool = False,
) -> dict:
    """`evaluate` of the optimal agent's policy played on the solver's C kernel, without JAX
    (`solver.native_play`: its own dice, so other games than the JAX agent's of the same seed;
    its `seconds` include loading the value table). The summary says `"engine": "native"`."""
    from yahtzee_jax.solver.native import NativeError
    from yahtzee_jax.solver.native_play import play_optimal

    started = time.perf_counter()
    try:
        played = play_optimal(rules, num_games, seed, cache_dir, progress=progress)
    except NativeError as error:  # no C compiler here, or a failed build
        raise UserError(f"--engine native needs the solver's C kernel: {error}") from None
    elapsed = time.perf_counter() - started
    per_game = {name: array for name, array in played._asdict().items()
                if name in GameRecords.__dataclass_fields__}  # fmt: skip
    records = GameRecords("optimal", rules.name, seed, **per_game)
    return report(records, None, elapsed, out_dir, json_path, plots, {"engine": "native"})


def report(
    records: GameRecords,
    optimal_records: GameRecords | None,
    seconds: float,
    out_dir: str | os.PathLike | None = None,
    json_path: str | os.PathLike | None = None,
    plots: bool = True,
    extra: dict | None = None,
) -> dict:
    """Summarise games played in `seconds` (beside the optimal agent's, where given; `extra`
    entries added), write the summary to `json_path` and the report to `out_dir`
    (`write_report`); returns the summary."""
    summary = summarize(records, optimal_records)
    summary["seconds"] = seconds
    summary["games_per_second"] = records.num_games / seconds
    summary.update(extra or {})
    if json_path is not None:
        write_json(json_path, summary)
    if out_dir is not None:
        write_report(summary, records, optimal_records, Path(out_dir), plots)
    return summary


def write_report(
    summary: dict,
    records: GameRecords,
    optimal_records: GameRecords | None,
    out_dir: Path,
    plots: bool = True,
) -> None:
    """Write summary.json, report.md and (with `plots`) the PNG plots into `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "summary.json", summary)
    figures = {}
    if plots:  # matplotlib's import and the drawing: about 1.5 s of a whole evaluate
        from yahtzee_jax.evaluation import plots as drawing

        figures = drawing.report_figures(summary, records, optimal_records)
        for name, figure in figures.items():
            drawing.save_figure(figure, out_dir / name)
    markdown = format_markdown(report_tables(summary, records.rule_set), list(figures))
    write_whole(out_dir / "report.md", markdown)
