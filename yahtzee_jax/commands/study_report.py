"""A study's results: its runs' final evaluations read back, its figures and its markdown table
(the report half of `yahtzee-jax experiment`; `commands.studies` plans and trains the runs)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from yahtzee_jax.commands.studies import (
    RESULTS_FILE,
    TIMINGS_FILE,
    Study,
    require_spec,
    run_dir,
)
from yahtzee_jax.files import write_json, write_whole
from yahtzee_jax.runner.finished_run import read_finished_run
from yahtzee_jax.runner.runlog import EVALS_FILE, read_evals, read_scalars, training_wall


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


def _mean_and_stderr(values: list[float]) -> tuple[float, float]:
    """Mean across seeds and its standard error (0 for a single seed)."""
    if len(values) < 2:
        return float(values[0]), 0.0
    return float(np.mean(values)), float(np.std(values, ddof=1) / math.sqrt(len(values)))


def collect_results(
    study: Study, scale: str, seeds: int, out_dir: Path, overrides: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """Per run: final evaluation mean +- s.e. across seeds, rates, games, wall time, curve."""
    timings = _read_json(out_dir / TIMINGS_FILE)
    results = []
    for run in study.runs_at(scale):
        seeds_done = []
        for seed in range(seeds):
            directory = run_dir(out_dir, run, seed)
            finished = read_finished_run(directory, required=False)
            if finished is None:  # not trained to its end yet
                continue
            summary, report = finished.summary, finished.report
            seeds_done.append(
                {
                    "seed": seed,
                    "dir": str(directory.relative_to(out_dir)),
                    "mean": finished.final_eval["mean"],
                    "stderr": finished.final_eval["stderr"],
                    "eval_games": finished.final_eval["games"],
                    "upper_bonus_rate": report.get("upper_bonus_rate"),
                    "yahtzee_rate": report.get("yahtzee_rate"),
                    "games": finished.games,
                    "wall_s": timings.get(str(directory.relative_to(out_dir))),
                    "single_turn_percent": summary.get("single_turn_eval", {}).get(
                        "percent_of_optimum"
                    ),
                    "evals": read_evals(directory / EVALS_FILE),
                }
            )
        if not seeds_done:
            continue
        means = [done["mean"] for done in seeds_done]
        mean, stderr = _mean_and_stderr(means)
        if len(seeds_done) == 1:  # one seed: the standard error over its evaluation games
            stderr = seeds_done[0]["stderr"]
        results.append(
            {
                "label": run.label,
                "overrides": list(run.overrides),
                "preset": run.preset,
                "seeds": len(seeds_done),
                "mean": mean,
                "stderr": stderr,
                "upper_bonus_rate": _mean_of(seeds_done, "upper_bonus_rate"),
                "yahtzee_rate": _mean_of(seeds_done, "yahtzee_rate"),
                "single_turn_percent": _mean_of(seeds_done, "single_turn_percent"),
                "games": seeds_done[0]["games"],
                "wall_s": _mean_of(seeds_done, "wall_s"),
                "per_seed": seeds_done,
            }
        )
    return results


def first_crossings(
    curve: list[dict[str, Any]], thresholds: tuple[float, ...]
) -> dict[str, dict[str, float] | None]:
    """For each threshold, the games (and wall seconds, where logged) of the first evaluation
    whose mean is at or above it; None where no evaluation reached it. Keys are the thresholds
    as text ("241.78")."""
    crossings: dict[str, dict[str, float] | None] = {}
    for threshold in thresholds:
        row = next((row for row in curve if row["mean"] >= threshold), None)
        crossings[f"{threshold:g}"] = (
            None
            if row is None
            else {"games": row["games"], **({"wall_s": row["wall_s"]} if "wall_s" in row else {})}
        )
    return crossings


def _mean_of(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [row[key] for row in rows if row[key] is not None]
    return float(np.mean(values)) if values else None


def scale_note(study: Study, scale: str, overrides: tuple[str, ...] = ()) -> str:
    """What the budget is, said in every title: the cpu scale is a reduced one."""
    games = study.config(study.runs_at(scale)[0], scale, 0, overrides).train.total_games
    if scale == "paper":
        return f"Paper scale, {games:,} games per run"
    paper_games = study.config(study.runs_at("paper")[0], "paper", 0).train.total_games
    if games >= paper_games:  # the budget kept, the runs cut (a scale's `only:`)
        runs, paper_runs = len(study.runs_at(scale)), len(study.runs_at("paper"))
        kept = f"{runs} of its {paper_runs} runs"
        return f"CPU scale: {games:,} games per run as at paper scale, {kept}"
    return f"CPU scale: {games:,} games per run, reduced from the paper's {paper_games:,}"


def write_study_report(
    study: Study, scale: str, seeds: int, out_dir: Path, overrides: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Write NAME.md (the table), NAME.png (the figure) and results.json; return the results."""
    from yahtzee_jax.evaluation import plots

    results = collect_results(study, scale, seeds, out_dir, overrides)
    require_spec(bool(results), f"study {study.name!r} has no finished run in {out_dir}")
    curves = {result["label"]: _seed_mean_curve(result["per_seed"]) for result in results}
    for result in results:  # on the seeds' mean curve: one seed's noise crosses early
        result["first_reached"] = first_crossings(curves[result["label"]], study.thresholds)
    note = scale_note(study, scale, overrides)
    title = f"{study.title}\n{note}"
    figure_path = plots.save_figure(
        study_figure(study, results, title), out_dir / f"{study.name}.png"
    )
    wall_path = None
    if all(rows and "wall_s" in rows[0] for rows in curves.values()):
        wall_path = plots.save_figure(
            plots.learning_curves_figure(curves, title, x_axis="wall"),
            out_dir / f"{study.name}-wall.png",
        )
    scalar_paths = []
    for tag in study.scalars:
        curves = scalar_curves(out_dir, results, tag)
        if curves:
            figure = plots.training_scalar_figure(curves, title, f"{tag} (mean over seeds)")
            path = out_dir / f"{study.name}-{tag.replace('/', '-')}.png"
            scalar_paths.append((tag, plots.save_figure(figure, path).name))
    markdown = study_markdown(
        study,
        results,
        title,
        figure_path.name,
        overrides,
        wall_path and wall_path.name,
        tuple(scalar_paths),
    )
    write_whole(out_dir / f"{study.name}.md", markdown)
    everything = {"study": study.name, "scale": scale, "note": note, "runs": results}
    write_json(out_dir / RESULTS_FILE, everything)
    return everything


def scalar_curves(
    out_dir: Path, results: list[dict[str, Any]], tag: str
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each run's logged scalar `tag` against training games: the mean over its seeds at the
    games every seed logged, smoothed by a moving mean over 1 % of the points. Runs whose
    directories lack the events (copied without them) are left out."""
    curves = {}
    for result in results:
        per_seed = [
            dict(read_scalars(out_dir / seed["dir"]).get(tag, [])) for seed in result["per_seed"]
        ]
        common = sorted(set.intersection(*(set(values) for values in per_seed)))
        if not common:
            continue
        values = np.mean([[values[games] for games in common] for values in per_seed], axis=0)
        window = max(1, len(common) // 100)
        smoothed = np.convolve(values, np.ones(window) / window, mode="valid")
        curves[result["label"]] = (np.array(common[window - 1 :]), smoothed)
    return curves


def study_figure(study: Study, results: list[dict[str, Any]], title: str):
    """The study's figure: learning curves, final scores as bars, or the single-turn frontier."""
    from yahtzee_jax.evaluation import plots

    if study.plot == "bars":
        return plots.final_scores_figure(
            {result["label"]: (result["mean"], result["stderr"]) for result in results}, title
        )
    if study.plot == "pareto":
        points = {
            result["label"]: (result["single_turn_percent"], result["mean"])
            for result in results
            if result["single_turn_percent"] is not None
        }
        return plots.frontier_figure(
            points, title, "single turn: % of the exact turn optimum", "full game: mean score"
        )
    return plots.learning_curves_figure(
        {result["label"]: _seed_mean_curve(result["per_seed"]) for result in results}, title
    )


def _seed_mean_curve(per_seed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Evaluation rows averaged over seeds at the points every seed has; their wall time too
    (summed over a resumed run's sessions) where every seed logged it."""
    length = min(len(seed["evals"]) for seed in per_seed)
    walls = [training_wall(seed["evals"]) for seed in per_seed]
    rows = []
    for point in range(length):
        at_point = [seed["evals"][point] for seed in per_seed]
        rows.append(
            {
                "games": at_point[0]["games"],
                "mean": float(np.mean([row["mean"] for row in at_point])),
                "std": float(np.mean([row["std"] for row in at_point])),
                "num_games": sum(row["num_games"] for row in at_point),
            }
        )
        if all(wall is not None for wall in walls):
            rows[-1]["wall_s"] = float(np.mean([wall[point] for wall in walls]))
    return rows


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f} %"


def study_markdown(
    study: Study,
    results: list[dict[str, Any]],
    title: str,
    figure_name: str,
    overrides: tuple[str, ...] = (),
    wall_figure_name: str | None = None,
    scalar_figures: tuple[tuple[str, str], ...] = (),
) -> str:
    """The study's report: what was run, the results table, the figures and the runs' reports."""
    heading, _, note = title.partition("\n")
    extra = ", ".join(f"`{text}`" for text in overrides)
    reports = [
        f"[{result['label']}]({result['per_seed'][0]['dir']}/final_eval/report.md)"
        for result in results
    ]
    return "\n".join(
        [
            f"# {heading}",
            "",
            f"{note}. The paper's {study.paper}. Final evaluation: each seed's argmax games "
            f"({results[0]['per_seed'][0]['eval_games']:,}); ± is the standard error across "
            "seeds (across games for a single seed)."
            + (f" Every run also has {extra}." if extra else ""),
            "",
            results_table(results),
            "",
            *(
                [
                    "Games (and wall time) to the first evaluation whose mean over the seeds "
                    "reached each score (each evaluation: "
                    f"{results[0]['per_seed'][0]['evals'][0]['num_games']:,} argmax games a "
                    "seed; -: never reached):",
                    "",
                    crossings_table(results, study.thresholds),
                    "",
                ]
                if study.thresholds
                else []
            ),
            f"![{study.name}]({figure_name})",
            "",
            *(
                [
                    "Evaluation score against wall time (mean over seeds; from the start of "
                    "training, compilation and evaluations included; runs trained together as a "
                    "population share its clock):",
                    "",
                    f"![{study.name} against wall time]({wall_figure_name})",
                    "",
                ]
                if wall_figure_name
                else []
            ),
            *(
                line
                for tag, name in scalar_figures
                for line in (
                    f"Training scalar `{tag}` (TensorBoard, mean over seeds, moving mean over "
                    "1 % of the run):",
                    "",
                    f"![{tag}]({name})",
                    "",
                )
            ),
            "Final evaluation reports (first seed): " + ", ".join(reports) + ".",
            "",
        ]
    )


def results_table(results: list[dict[str, Any]]) -> str:
    """Markdown table: final mean ± s.e. across seeds, bonus and Yahtzee rates, games, time."""
    single_turn = any(result["single_turn_percent"] is not None for result in results)
    header = ["run", "settings", "seeds", "final mean ± s.e.", "upper bonus", "Yahtzee"]
    header += ["single turn, % of optimum"] if single_turn else []
    header += ["games", "wall time per seed"]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---", "---"] + ["---:"] * (len(header) - 2)) + "|",
    ]
    for result in results:
        settings = ", ".join(f"`{text}`" for text in result["overrides"])
        if result["preset"] != results[0]["preset"] or not result["overrides"]:
            settings = f"preset `{result['preset']}`" + (f", {settings}" if settings else "")
        wall = "-" if result["wall_s"] is None else f"{result['wall_s'] / 60:.1f} min"
        row = [
            result["label"],
            settings,
            str(result["seeds"]),
            f"{result['mean']:.2f} ± {result['stderr']:.2f}",
            _percent(result["upper_bonus_rate"]),
            _percent(result["yahtzee_rate"]),
        ]
        if single_turn:
            percent = result["single_turn_percent"]
            row.append("-" if percent is None else f"{percent:.1f} %")
        row += [f"{result['games']:,}", wall]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def crossings_table(results: list[dict[str, Any]], thresholds: tuple[float, ...]) -> str:
    """Markdown table: per run, the games and wall time to each threshold (`first_crossings`)."""
    header = ["run", *(f"games to {value:g}" for value in thresholds)]
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * len(thresholds) + "|"]
    for result in results:
        cells = [result["label"]]
        for value in thresholds:
            reached = result["first_reached"][f"{value:g}"]
            if reached is None:
                cells.append("-")
                continue
            wall = f" ({reached['wall_s'] / 60:.1f} min)" if "wall_s" in reached else ""
            cells.append(f"{reached['games']:,}{wall}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
