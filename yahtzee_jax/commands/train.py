"""`yahtzee-jax train`: the command line of a run or a population (`runner.single_run` trains them).

The run itself is `runner.single_run.train`, called through its module: a test's fault hook wraps it
there (`tests/faults.py`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from yahtzee_jax.commands.arguments import add_override_argument
from yahtzee_jax.commands.cli import COMMANDS
from yahtzee_jax.config import Config
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.parallel import initialize_distributed, is_primary
from yahtzee_jax.runner import single_run as training
from yahtzee_jax.runner.configs import DEFAULT_PRESET, available_presets, resolve
from yahtzee_jax.runner.population import (
    describe,
    parse_seeds,
    parse_sweeps,
    plan_members,
    train_population,
)
from yahtzee_jax.runner.session import resume_config


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register `yahtzee-jax train`."""
    _, summary = COMMANDS["train"]  # the one-line help, once, in the command table
    description = "Train with a preset, optional YAML file and section.key=value overrides."
    parser = subparsers.add_parser("train", help=summary, description=description)
    parser.add_argument(
        "--preset",
        default=None,
        help=f"preset ({', '.join(available_presets())}); default {DEFAULT_PRESET}",
    )
    parser.add_argument("--config", default=None, help="YAML file applied over the preset")
    add_override_argument(parser)
    parser.add_argument("--out", default=None, help="run directory (default runs/PRESET)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    population = parser.add_argument_group(
        "population",
        "several runs trained together as one vmapped program; they may differ only in the "
        "seed and in the config fields marked dynamic (the learning-rate schedule; the "
        "actor-critic learners' gamma, GAE lambda, loss weights, entropy schedule and PPO's "
        "clip epsilon). Each member is an ordinary run directory, "
        "OUT/seedS or OUT/LABEL/seedS with a sweep (LABEL e.g. gae_lambda=0.2); resume with the "
        "same command and --resume",
    )
    population.add_argument(
        "--population-seeds",
        default=None,
        metavar="SEEDS",
        help="train one member per seed, e.g. 0,1,2 or 0-3",
    )
    population.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="SECTION.KEY=V1,V2",
        help="one member per value (repeatable: every combination), e.g. "
        "--sweep algo.gae_lambda=0.2,0.4; with --population-seeds, for every seed",
    )
    distributed = parser.add_argument_group(
        "several hosts", "JAX's multi-controller runtime: run the same command on every host"
    )
    distributed.add_argument(
        "--distributed",
        action="store_true",
        help="call jax.distributed.initialize (without the flags below, from the environment "
        "of SLURM, Open MPI or a Cloud TPU pod slice)",
    )
    distributed.add_argument("--coordinator", default=None, help="HOST:PORT of process 0")
    distributed.add_argument("--num-processes", type=int, default=None, help="processes in all")
    distributed.add_argument("--process-id", type=int, default=None, help="this process's rank")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """CLI entry: resolve the config (validated before anything compiles) and train."""
    population = args.population_seeds is not None or bool(args.sweep)
    if population and args.distributed:
        raise ConfigError("a population trains in one process; drop --distributed")
    if args.num_processes is not None and args.num_processes < 1:  # 0 was passed over
        raise ConfigError(f"--num-processes must be at least 1 (got {args.num_processes})")
    if args.distributed:  # before anything touches a device
        initialize_distributed(args.coordinator, args.num_processes, args.process_id)
    elif args.coordinator or args.num_processes is not None or args.process_id is not None:
        raise ConfigError("--coordinator, --num-processes and --process-id need --distributed")
    if args.resume and args.preset is not None:
        raise ConfigError(
            "--resume continues the run's saved config; drop --preset "
            "(--set SECTION.KEY=VALUE or --config FILE change values on top of it)"
        )
    preset = args.preset or DEFAULT_PRESET
    run_dir = Path(args.out or f"runs/{preset}")
    if population:
        return _run_population(args, preset, run_dir)
    if args.resume:  # the saved config, then --config and --set on top of it
        changes = args.config is not None or args.overrides
        config = resume_config(run_dir, args.config, args.overrides) if changes else None
    else:
        config = resolve(preset, args.config, args.overrides)
    summary = training.train(config, run_dir, resume=args.resume, progress=not args.no_progress)
    if not is_primary():
        return 0
    final = summary.get("final_eval")
    last = summary.get("last_eval")
    if last:
        print(f"last periodic evaluation: {last['mean']:.2f} over {last['num_games']} games")
    if final:  # with its error and where to look, which a newcomer had to find
        print(
            f"final evaluation: {final['mean']:.2f} +- {final.get('stderr', float('nan')):.2f} "
            f"(standard error) over {final['games']:,} games; report: "
            f"{Path(final.get('report', run_dir / 'final_eval')) / 'report.md'}"
        )
    if summary.get("learning_curve"):
        print(f"learning curve: {summary['learning_curve']}")
    single_turn = summary.get("single_turn_eval")
    if single_turn:
        print(
            f"single-turn evaluation: {single_turn['mean']:.3f} over {single_turn['turns']} turns, "
            f"{single_turn['percent_of_optimum']:.1f} % of the optimum "
            f"{single_turn['optimum_mean']:.3f}"
        )
    print(
        f"run directory: {run_dir} (summary.json; next: yahtzee-jax evaluate {run_dir}, "
        f"yahtzee-jax play --watch {run_dir})"
    )
    return 0


def _run_population(args: argparse.Namespace, preset: str, out_dir: Path) -> int:
    """`train --population-seeds/--sweep`: every member's config, then one population."""
    sweeps = parse_sweeps(args.sweep)
    if args.population_seeds is not None:
        seeds = parse_seeds(args.population_seeds)
        seed_set = [
            text for text in args.overrides if text.replace(" ", "").startswith("train.seed=")
        ]
        if seed_set:  # each member's seed is its own: a --set of one would be dropped
            raise ConfigError(f"--set {seed_set[0]} and --population-seeds: give the seeds once")
    else:
        seeds = [resolve(preset, args.config, args.overrides).train.seed]
    planned = plan_members(out_dir, seeds, sweeps)
    # A resumed member continues its saved config (--config and --set on top of it, as for a
    # single run); a plain --resume uses it as it is.
    changes = args.config is not None or bool(args.overrides)
    configs: list[Config | None] = []
    for run_dir, overrides in planned:
        if not args.resume:
            configs.append(resolve(preset, args.config, [*args.overrides, *overrides]))
        else:
            extra = [*args.overrides, *overrides]
            configs.append(resume_config(run_dir, args.config, extra) if changes else None)
    run_dirs = [run_dir for run_dir, _ in planned]
    if all(config is not None for config in configs):
        print(describe(configs))
    summaries = train_population(
        configs, run_dirs, resume=args.resume, progress=not args.no_progress
    )
    for summary in summaries:
        final = summary.get("final_eval") or summary.get("last_eval") or {}
        score = f"{final['mean']:.2f}" if final else "-"
        print(f"{summary['run_dir']}: final evaluation {score}")
    return 0
