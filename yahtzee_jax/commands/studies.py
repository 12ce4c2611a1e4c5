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

import dataclasses
import importlib.resources
import itertools
import re
from pathlib import Path
from typing import Any

import yaml

from yahtzee_jax.config import Config
from yahtzee_jax.errors import ConfigError, UserError
from yahtzee_jax.runner.checkpointing import LATEST_DIR
from yahtzee_jax.runner.configs import available_presets, resolve
from yahtzee_jax.runner.finished_run import read_json_object
from yahtzee_jax.runner.single_run import SUMMARY_FILE

STUDIES = importlib.resources.files("yahtzee_jax") / "studies"
STUDY_SUFFIX = ".yaml"
SCALES = ("paper", "cpu")
PLOT_KINDS = ("curves", "bars", "pareto")
DEFAULT_OUT = Path("runs") / "experiments"
MAX_SEEDS = 1024  # seeds per run of a study
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
    # per scale, the overrides a run must carry to be run at it (a CPU scale that keeps the
    # narrow networks of a grid); a scale absent here runs every run
    only: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    # scores whose first crossing (games and wall time) the report tabulates per run
    thresholds: tuple[float, ...] = ()

    def runs_at(self, scale: str) -> tuple[StudyRun, ...]:
        """The runs trained and reported at `scale`."""
        required = self.only.get(scale, ())
        return tuple(run for run in self.runs if all(text in run.overrides for text in required))

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
    require_spec(not missing, f"{where} lacks {', '.join(sorted(missing))}")
    require_spec(
        spec["plot"] in PLOT_KINDS, f"{where}: plot must be one of {', '.join(PLOT_KINDS)}"
    )
    require_spec(set(spec["scales"]) == set(SCALES), f"{where}: scales must be {', '.join(SCALES)}")
    scales, only = {}, {}
    for scale in SCALES:  # a list of overrides, or {set: [overrides], only: [overrides]}
        value = spec["scales"][scale]
        if isinstance(value, dict):
            require_spec(
                set(value) <= {"set", "only"}, f"{where}: scale {scale} takes only set and only"
            )
            scales[scale] = tuple(value.get("set") or ())
            only[scale] = tuple(value.get("only") or ())
        else:
            scales[scale] = tuple(value or ())
    runs = _runs(spec, where)
    require_spec(bool(runs), f"{where} has no runs")
    labels = [run.label for run in runs]
    require_spec(len(set(labels)) == len(labels), f"{where}: run labels repeat")
    for run in runs:
        require_spec(run.preset in available_presets(), f"{where}: unknown preset {run.preset!r}")
    study = Study(
        name=name,
        title=spec["title"],
        paper=spec.get("paper", ""),
        runs=runs,
        scales=scales,
        seeds=int(spec.get("seeds", 1)),
        plot=spec["plot"],
        population=int(spec.get("population", 0)),
        scalars=tuple(str(tag) for tag in spec.get("scalars") or ()),
        only=only,
        thresholds=tuple(float(value) for value in spec.get("thresholds") or ()),
    )
    for scale in SCALES:
        require_spec(bool(study.runs_at(scale)), f"{where}: no run is kept at scale {scale}")
    return study


def require_spec(condition: bool, message: str) -> None:
    """Raise `UserError(message)` unless `condition` holds (a study spec or option)."""
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
            require_spec(
                isinstance(value, list), f"{where}: run {label!r} must be a list of overrides"
            )
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
    summary = read_json_object(summary_path, "a run's summary")  # damaged: one line
    final_done = config.train.final_eval_games == 0 or "final_eval" in summary
    return summary.get("updates") == config.train.total_updates and final_done


def check_study(study: Study, scale: str, seeds: int, overrides: tuple[str, ...]) -> list:
    """Every (run, seed, config) of the study at `scale`, all configs checked before training."""
    require_spec(scale in SCALES, f"unknown scale {scale!r}; choose one of: {', '.join(SCALES)}")
    require_spec(seeds >= 1, f"the number of seeds must be at least 1 (got {seeds})")
    # every seed is a run directory planned up front: 2^31 of them would never finish planning
    require_spec(
        seeds <= MAX_SEEDS, f"the number of seeds must be at most {MAX_SEEDS} (got {seeds})"
    )
    planned = []
    for run in study.runs_at(scale):
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
