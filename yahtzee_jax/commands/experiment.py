"""`yahtzee-jax experiment NAME`: the paper's studies as one command (`commands.studies` plans
and trains a study's runs, `commands.study_report` writes its figures and table)."""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

from yahtzee_jax.commands.arguments import add_override_argument
from yahtzee_jax.commands.studies import (
    CPU_ALGORITHM_COST,
    CPU_COMPILE_SECONDS,
    CPU_EVAL_GAMES_PER_SECOND,
    CPU_SECONDS_PER_GAME_FIXED,
    CPU_SECONDS_PER_GAME_NETWORK,
    DEFAULT_OUT,
    SCALES,
    TIMINGS_FILE,
    Study,
    available_studies,
    check_study,
    load_study,
    plan_groups,
    require_spec,
    run_dir,
)
from yahtzee_jax.commands.study_report import (
    write_study_report,
)
from yahtzee_jax.files import write_json
from yahtzee_jax.runner.checkpointing import LATEST_DIR
from yahtzee_jax.runner.population import train_population
from yahtzee_jax.runner.single_run import train


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
        write_json(timings_path, timings)  # after each group: a kill
    return write_study_report(study, scale, seeds, out_dir, overrides)


def estimated_cpu_seconds(study: Study, scale: str, seeds: int) -> float:
    """Rough training and evaluation time of the study on this project's 2-core CPU."""
    total = 0.0
    for run in study.runs_at(scale):
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
        cpu_runs, paper_runs = len(study.runs_at("cpu")), len(study.runs_at("paper"))
        runs = f"{cpu_runs}{'' if cpu_runs == paper_runs else f'/{paper_runs}'} x {study.seeds}"
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
        require_spec(args.name is None, f"--list lists every study; drop {args.name!r}")
        print(list_studies())
        return 0
    require_spec(args.name is not None, "name a study, or pass --list to see them")
    study = load_study(args.name)
    seeds = study.seeds if args.seeds is None else args.seeds
    out_dir = args.out or DEFAULT_OUT / f"{study.name}-{args.scale}"
    population = study.population if args.population is None else args.population
    require_spec(population >= 0, f"--population must be >= 0 (got {population})")
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
