"""The paper's studies as one command: `yahtzee-jax experiment NAME`.

A study is a YAML spec in `yahtzee_jax/studies/` (package data, so an installed copy has them):
a base preset, its runs as `--set` overrides over it (or over another preset; a `grid:` of
values gives every combination), the budget of each scale, the default number of seeds and the
kind of figure. `run_study` trains every run and seed that is not finished (a run directory with
checkpoints resumes, so a killed study loses at most one evaluation interval per run), then
`write_study_report` reads the runs' final evaluations and writes the study's figure and a
markdown table into the study's directory.

Layout of a study directory: `RUN/seedS/` (an ordinary run directory each, so `evaluate` and the
plot script read them as they read any run), `timings.json` (seconds spent training each run and
seed, summed over invocations; a population's time is shared equally by its members),
`results.json`, `NAME.md`, `NAME.png`, `NAME-wall.png` (the evaluation score against wall
time, where the runs logged it) and, for each training scalar a spec names under `scalars:`
(e.g. `policy/roll_entropy`, the paper's Fig. 19), `NAME-TAG.png` read from the runs'
TensorBoard events.

Runs of a study that differ only in the seed and dynamic scalars (the entropy and GAE-lambda
studies; the seeds of any run) train together as one vmapped population (`population.py`),
each member still in its own `RUN/seedS/`; runs that change the network or the algorithm stay
separate programs.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.resources
import itertools
import json
import math
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from yahtzee_jax.config import Config
from yahtzee_jax.errors import ConfigError, UserError
from yahtzee_jax.runner.checkpointing import LATEST_DIR
from yahtzee_jax.runner.configs import add_override_argument, available_presets, resolve
from yahtzee_jax.runner.runlog import read_evals, read_scalars
from yahtzee_jax.runner.train import EVALS_FILE, FINAL_EVAL_DIR, SUMMARY_FILE, train

STUDIES = importlib.resources.files("yahtzee_jax") / "studies"
STUDY_SUFFIX = ".yaml"
SCALES = ("paper", "cpu")
PLOT_KINDS = ("curves", "bars", "pareto")
DEFAULT_OUT = Path("runs") / "experiments"
TIMINGS_FILE = "timings.json"
RESULTS_FILE = "results.json"

# A rough model of training time on this project's 2-core CPU, from the README's measurements:
# A2C at width 600 with 2 trunk blocks trains 326 games/s (3.07 ms a game) and the quick preset
# (width 128) 1,350 games/s; seconds per game = FIXED + NETWORK x (relative size of the hidden
# layers) fits both. PPO's epochs x minibatches cost about 3.5 times A2C's single step per game.
CPU_SECONDS_PER_GAME_FIXED = 0.63e-3
CPU_SECONDS_PER_GAME_NETWORK = 2.44e-3
CPU_ALGORITHM_COST = {"ppo": 3.5}
CPU_EVAL_GAMES_PER_SECOND = 1_500  # argmax games of the periodic and final evaluations
CPU_COMPILE_SECONDS = 30  # per run: the training chunk and the evaluation programs


@dataclasses.dataclass(frozen=True)
class StudyRun:
    """One setting of a study: a preset and the overrides laid over it."""

    label: str
    preset: str
    overrides: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Study:
    """A study spec: runs, budgets per scale, seeds and the figure to draw."""

    name: str
    title: str
    paper: str
    runs: tuple[StudyRun, ...]
    scales: dict[str, tuple[str, ...]]
    seeds: int
    plot: str
    population: int = 0  # the default of `--population` (1: every run alone, its own clock)
    scalars: tuple[str, ...] = ()  # logged training scalars to draw against games

    def config(
        self, run: StudyRun, scale: str, seed: int, overrides: tuple[str, ...] = ()
    ) -> Config:
        """The run's config at `scale` for `seed`: budget, the run's overrides, then `overrides`."""
        budget = self.scales[scale]
        return resolve(
            run.preset, overrides=[*budget, *run.overrides, *overrides, f"train.seed={seed}"]
        )


def available_studies() -> list[str]:
    """Names of the study specs shipped in the package (yahtzee_jax/studies)."""
    return sorted(
        entry.name.removesuffix(STUDY_SUFFIX)
        for entry in STUDIES.iterdir()
        if entry.name.endswith(STUDY_SUFFIX)
    )


def load_study(name: str) -> Study:
    """Read and check the spec `yahtzee_jax/studies/NAME.yaml`."""
    path = STUDIES / f"{name}{STUDY_SUFFIX}"
    if not path.is_file():
        raise UserError(f"unknown study {name!r}; choose one of: {', '.join(available_studies())}")
    spec = yaml.safe_load(path.read_text())
    where = f"study {name!r}"
    missing = {"title", "base", "scales", "plot"} - set(spec)
    _require(not missing, f"{where} lacks {', '.join(sorted(missing))}")
    _require(spec["plot"] in PLOT_KINDS, f"{where}: plot must be one of {', '.join(PLOT_KINDS)}")
    _require(set(spec["scales"]) == set(SCALES), f"{where}: scales must be {', '.join(SCALES)}")
    runs = _runs(spec, where)
    _require(bool(runs), f"{where} has no runs")
    labels = [run.label for run in runs]
    _require(len(set(labels)) == len(labels), f"{where}: run labels repeat")
    for run in runs:
        _require(run.preset in available_presets(), f"{where}: unknown preset {run.preset!r}")
    return Study(
        name=name,
        title=spec["title"],
        paper=spec.get("paper", ""),
        runs=runs,
        scales={scale: tuple(spec["scales"][scale]) for scale in SCALES},
        seeds=int(spec.get("seeds", 1)),
        plot=spec["plot"],
        population=int(spec.get("population", 0)),
        scalars=tuple(str(tag) for tag in spec.get("scalars") or ()),
    )


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise UserError(message)


def _runs(spec: dict[str, Any], where: str) -> tuple[StudyRun, ...]:
    """`runs:` (label: overrides, or label: {preset, set}) then every combination of `grid:`."""
    base = spec["base"]
    runs = []
    for label, value in (spec.get("runs") or {}).items():
        if isinstance(value, dict):
            runs.append(
                StudyRun(str(label), value.get("preset", base), tuple(value.get("set", ())))
            )
        else:
            _require(isinstance(value, list), f"{where}: run {label!r} must be a list of overrides")
            runs.append(StudyRun(str(label), base, tuple(value)))
    grid = spec.get("grid") or {}
    for values in itertools.product(*grid.values()) if grid else ():
        pairs = list(zip(grid, values, strict=True))
        label = ", ".join(f"{key.rpartition('.')[2]}={value}" for key, value in pairs)
        runs.append(StudyRun(label, base, tuple(f"{key}={value}" for key, value in pairs)))
    return tuple(runs)


def run_dir(out_dir: Path, run: StudyRun, seed: int) -> Path:
    """Directory of one run and seed inside a study directory."""
    return out_dir / re.sub(r"[^A-Za-z0-9_.=-]+", "_", run.label) / f"seed{seed}"


def is_finished(directory: Path, config: Config) -> bool:
    """Did training reach the last update (and write its final evaluation, if it has one)?"""
    summary_path = directory / SUMMARY_FILE
    if not summary_path.is_file():
        return False
    summary = json.loads(summary_path.read_text())
    final_done = config.train.final_eval_games == 0 or "final_eval" in summary
    return summary.get("updates") == config.train.total_updates and final_done


def check_study(study: Study, scale: str, seeds: int, overrides: tuple[str, ...]) -> list:
    """Every (run, seed, config) of the study at `scale`, all configs checked before training."""
    _require(scale in SCALES, f"unknown scale {scale!r}; choose one of: {', '.join(SCALES)}")
    _require(seeds >= 1, f"the number of seeds must be at least 1 (got {seeds})")
    planned = []
    for run in study.runs:
        for seed in range(seeds):
            try:
                planned.append((run, seed, study.config(run, scale, seed, overrides)))
            except ConfigError as error:
                raise UserError(f"study {study.name!r}, run {run.label!r}: {error}") from None
    return planned


def _checkpoint_step(directory: Path) -> int:
    """The newest checkpointed update of a run directory (0: none)."""
    latest = directory / LATEST_DIR
    if not latest.is_dir():
        return 0
    return max((int(path.name) for path in latest.iterdir() if path.name.isdigit()), default=0)


def plan_groups(planned: list, out_dir: Path, population: int = 0) -> list[list[int]]:
    """Indices into `planned` of the unfinished runs, grouped into populations: runs whose
    configs differ only in the seed and dynamic scalars and that stand at the same checkpoint,
    at most `population` per group (0: no limit, 1: every run alone), in the plan's order."""
    from yahtzee_jax.runner.population import population_key

    groups: dict[tuple, list[list[int]]] = {}
    order: list[list[int]] = []
    for index, (run, seed, config) in enumerate(planned):
        directory = run_dir(out_dir, run, seed)
        if is_finished(directory, config):
            continue
        key = (population_key(config), _checkpoint_step(directory))
        open_groups = groups.setdefault(key, [])
        if not open_groups or (population and len(open_groups[-1]) >= population):
            open_groups.append([])
            order.append(open_groups[-1])
        open_groups[-1].append(index)
    return order


def run_study(
    study: Study,
    scale: str,
    seeds: int,
    out_dir: Path,
    overrides: tuple[str, ...] = (),
    progress: bool = True,
    population: int = 0,
) -> dict[str, Any]:
    """Train every unfinished run and seed (resuming those with checkpoints), then report.

    Runs that differ only in the seed and dynamic scalars train together as one population
    (`population.py`; at most `population` members, 0: no limit, 1: each run alone); each
    member keeps its own run directory, so finished and resumable runs are found as before."""
    from yahtzee_jax.runner.population import train_population

    planned = check_study(study, scale, seeds, overrides)
    out_dir.mkdir(parents=True, exist_ok=True)
    timings_path = out_dir / TIMINGS_FILE
    timings = json.loads(timings_path.read_text()) if timings_path.is_file() else {}
    for group in plan_groups(planned, out_dir, population):
        members = [planned[index] for index in group]
        directories = [run_dir(out_dir, run, seed) for run, seed, _ in members]
        configs = [config for _, _, config in members]
        resumes = [(directory / LATEST_DIR).is_dir() for directory in directories]
        names = ", ".join(f"{run.label}, seed {seed}" for run, seed, _ in members)
        numbers = f"{group[0] + 1}" + (f"-{group[-1] + 1}" if len(group) > 1 else "")
        where = directories[0] if len(group) == 1 else f"{len(group)} run directories"
        print(f"[{numbers}/{len(planned)}] {study.name}: {names} -> {where}")
        started = time.perf_counter()
        if len(group) == 1:
            train(configs[0], directories[0], resume=resumes[0], progress=progress)
        else:
            train_population(configs, directories, resume=resumes, progress=progress)
        elapsed = (time.perf_counter() - started) / len(group)  # a population's time, shared
        for directory in directories:
            key = str(directory.relative_to(out_dir))
            timings[key] = timings.get(key, 0.0) + elapsed
        timings_path.write_text(json.dumps(timings, indent=2) + "\n")  # after each group: a kill
    return write_study_report(study, scale, seeds, out_dir, overrides)


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
    for run in study.runs:
        seeds_done = []
        for seed in range(seeds):
            directory = run_dir(out_dir, run, seed)
            summary = _read_json(directory / SUMMARY_FILE)
            if "final_eval" not in summary:
                continue
            report = _read_json(directory / FINAL_EVAL_DIR / SUMMARY_FILE)
            seeds_done.append(
                {
                    "seed": seed,
                    "dir": str(directory.relative_to(out_dir)),
                    "mean": summary["final_eval"]["mean"],
                    "stderr": summary["final_eval"]["stderr"],
                    "eval_games": summary["final_eval"]["games"],
                    "upper_bonus_rate": report.get("upper_bonus_rate"),
                    "yahtzee_rate": report.get("yahtzee_rate"),
                    "games": summary["games"],
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


def _mean_of(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [row[key] for row in rows if row[key] is not None]
    return float(np.mean(values)) if values else None


def scale_note(study: Study, scale: str, overrides: tuple[str, ...] = ()) -> str:
    """What the budget is, said in every title: the cpu scale is a reduced one."""
    games = study.config(study.runs[0], scale, 0, overrides).train.total_games
    if scale == "paper":
        return f"Paper scale, {games:,} games per run"
    paper_games = study.config(study.runs[0], "paper", 0).train.total_games
    return f"CPU scale: {games:,} games per run, reduced from the paper's {paper_games:,}"


def write_study_report(
    study: Study, scale: str, seeds: int, out_dir: Path, overrides: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Write NAME.md (the table), NAME.png (the figure) and results.json; return the results."""
    from yahtzee_jax.evaluation import plots

    results = collect_results(study, scale, seeds, out_dir, overrides)
    _require(bool(results), f"study {study.name!r} has no finished run in {out_dir}")
    note = scale_note(study, scale, overrides)
    title = f"{study.title}\n{note}"
    figure_path = plots.save_figure(
        study_figure(study, results, title), out_dir / f"{study.name}.png"
    )
    wall_path = None
    curves = {result["label"]: _seed_mean_curve(result["per_seed"]) for result in results}
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
    (out_dir / f"{study.name}.md").write_text(markdown)
    everything = {"study": study.name, "scale": scale, "note": note, "runs": results}
    (out_dir / RESULTS_FILE).write_text(json.dumps(everything, indent=2) + "\n")
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
    walls = [_training_wall(seed["evals"]) for seed in per_seed]
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


def _training_wall(evals: list[dict[str, Any]]) -> list[float] | None:
    """Each evaluation's seconds since the run began (None if any row lacks them). A row's
    `wall_s` counts from the start of its session: where the clock goes back (a resume) the
    earlier sessions' last readings are added, so the work a kill lost is not counted."""
    if not all("wall_s" in row for row in evals):
        return None
    walls, offset, previous = [], 0.0, 0.0
    for row in evals:
        if row["wall_s"] < previous:  # a new session
            offset += previous
        previous = row["wall_s"]
        walls.append(offset + previous)
    return walls


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


def estimated_cpu_seconds(study: Study, scale: str, seeds: int) -> float:
    """Rough training and evaluation time of the study on this project's 2-core CPU."""
    total = 0.0
    for run in study.runs:
        config = study.config(run, scale, 0)
        network = config.network
        size = network.hidden_size**2 * (network.trunk_layers + 2) / (600**2 * 4)
        per_game = CPU_SECONDS_PER_GAME_FIXED + CPU_SECONDS_PER_GAME_NETWORK * size
        per_game *= CPU_ALGORITHM_COST.get(config.algo.name, 1.0)
        train_config = config.train
        evals = math.ceil(train_config.total_updates / train_config.eval_interval)
        eval_games = evals * train_config.eval_games + train_config.final_eval_games
        total += seeds * (
            train_config.total_games * per_game
            + eval_games / CPU_EVAL_GAMES_PER_SECOND
            + CPU_COMPILE_SECONDS
        )
    return total


def _duration(seconds: float) -> str:
    hours = seconds / 3600
    return f"{hours:.1f} h" if hours >= 1 else f"{seconds / 60:.0f} min"


def list_studies() -> str:
    """One line per study: name, runs x seeds, the rough CPU time at each scale, the title."""
    lines = [
        "study                runs x seeds  cpu scale  paper scale (rough, on this 2-core CPU)"
    ]
    for name in available_studies():
        study = load_study(name)
        cpu = estimated_cpu_seconds(study, "cpu", study.seeds)
        paper = estimated_cpu_seconds(study, "paper", study.seeds)
        runs = f"{len(study.runs)} x {study.seeds}"
        lines.append(
            f"{name:<20} {runs:>12}  {_duration(cpu):>9}  {_duration(paper):>11}  "
            f"{study.title} ({study.paper})"
        )
    return "\n".join(lines)


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register `yahtzee-jax experiment`."""
    parser = subparsers.add_parser(
        "experiment",
        help="run one of the paper's studies and write its figure and table",
        description="Train every unfinished run of a study (resuming interrupted ones), then "
        "write its figure and markdown table. --list shows the studies.",
    )
    parser.add_argument("name", nargs="?", metavar="NAME", help="the study (see --list)")
    parser.add_argument("--list", action="store_true", help="list the studies and exit")
    parser.add_argument(
        "--scale",
        choices=SCALES,
        default="cpu",
        help="cpu (default): a reduced budget, about an hour for the smaller studies on a "
        "2-core CPU; paper: the paper's budgets (meant for a GPU)",
    )
    parser.add_argument(
        "--seeds", type=int, default=None, help="seeds per run (default: the study's)"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help=f"study directory (default {DEFAULT_OUT}/NAME-SCALE)"
    )
    add_override_argument(parser)
    parser.add_argument(
        "--population",
        type=int,
        default=None,
        metavar="N",
        help="train runs that differ only in the seed and dynamic scalars (learning rate, "
        "entropy, gamma, GAE lambda, loss weights) together, as one vmapped program of at most "
        "N members (0: no limit; 1: every run alone; default: the study's, else 0)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run `yahtzee-jax experiment`."""
    if args.list:
        print(list_studies())
        return 0
    _require(args.name is not None, "name a study, or pass --list to see them")
    study = load_study(args.name)
    seeds = study.seeds if args.seeds is None else args.seeds
    out_dir = args.out or DEFAULT_OUT / f"{study.name}-{args.scale}"
    population = study.population if args.population is None else args.population
    _require(population >= 0, f"--population must be >= 0 (got {population})")
    results = run_study(
        study,
        args.scale,
        seeds,
        out_dir,
        tuple(args.overrides),
        progress=not args.no_progress,
        population=population,
    )
    for result in results["runs"]:
        print(
            f"{result['label']:<28} {result['mean']:8.2f} ± {result['stderr']:.2f} "
            f"({result['seeds']} seeds)"
        )
    print(f"{results['note']}; table and figure in {out_dir}/{study.name}.md, .png")
    return 0
