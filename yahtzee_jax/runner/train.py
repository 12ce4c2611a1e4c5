"""The fused training pipeline: `yahtzee-jax train`.

The compiled chunk (`chunk.py`) runs K guarded updates in one `lax.scan`. The host loop
only logs its scalars (TensorBoard, at exact global steps = games played), evaluates the
argmax policy every 1 % of the updates, checkpoints, and finally runs the evaluation harness.
Chunk boundaries, evaluations and checkpoints are pure functions of the update counter, so a
resumed run replays exactly what an uninterrupted one would have done.

Interruptions: the first Ctrl-C or SIGTERM lets the current chunk finish, logs it, saves and
exits; a second one stops at once. Each chunk's scalars and evaluation are on disk before its
checkpoint, and a resume cuts the logs back to the checkpoint it continues from (`runlog`), so
even a SIGKILL at any moment leaves every logged point exactly once after the resume.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import numpy as np

from yahtzee_jax.algorithms import get_algorithm
from yahtzee_jax.algorithms.base import TrainState, init_train_state, make_context
from yahtzee_jax.config import Config
from yahtzee_jax.errors import ConfigError, UserError
from yahtzee_jax.parallel import (
    data_mesh,
    host_local,
    in_mesh,
    initialize_distributed,
    is_primary,
    replicate,
)
from yahtzee_jax.runner.chunk import guard_quantities, make_chunk
from yahtzee_jax.runner.configs import (
    DEFAULT_PRESET,
    add_override_argument,
    available_presets,
    read_yaml,
    resolve,
)
from yahtzee_jax.runner.runlog import (
    RunLock,
    ScalarLog,
    read_evals,
    reconcile,
    write_atomic,
    write_evals,
)
from yahtzee_jax.runner.warm_start import start_state

CONFIG_FILE = "config.yaml"
EVALS_FILE = "evals.jsonl"
SUMMARY_FILE = "summary.json"
FINAL_EVAL_DIR = "final_eval"
CURVE_FILE = "learning_curve.png"
EVAL_SEED_OFFSET = 1  # periodic evaluations use seed + 1 (fixed games, comparable points)
FINAL_EVAL_SEED_OFFSET = 2
COLLAPSED_ENTROPY = 1e-3  # nats: both heads below this = a deterministic (collapsed) policy


FAULT_VARIABLE = "YAHTZEE_JAX_FAULT"


class _FaultInjector:
    """Test hook for the interruption tests: ``YAHTZEE_JAX_FAULT=point:count:SIGNAL[:delay]``
    sends SIGNAL to this process the count-th time the loop reaches `point` (chunk, scalars,
    eval or checkpoint), after `delay` seconds from a timer thread, so that it lands inside
    the work that follows. Unset (always, outside tests), it does nothing."""

    def __init__(self, spec: str | None) -> None:
        self.point = None
        if spec:
            point, count, name, *delay = spec.split(":")
            self.point, self.count = point, int(count)
            self.signal = signal.Signals[name]
            self.delay = float(delay[0]) if delay else 0.0

    def reached(self, point: str) -> None:
        """Count a visit to `point`; fire on the chosen one."""
        if point != self.point:
            return
        self.count -= 1
        if self.count == 0:
            pid = os.getpid()
            threading.Timer(self.delay, os.kill, (pid, self.signal)).start()


class DivergenceError(UserError):
    """Training produced a non-finite loss, gradient or parameter."""

    exit_status = 3


def chunk_length(config: Config, step: int) -> int:
    """Updates in the chunk starting at update `step` (a pure function of the counter)."""
    return min(config.train.chunk_updates, config.train.total_updates - step)


def is_eval_step(config: Config, step: int) -> bool:
    """Evaluate and checkpoint after update `step`?"""
    return step % config.train.eval_interval == 0 or step == config.train.total_updates


def network_agent(config: Config, params: Any, name: str | None = None):
    """The acting (argmax) agent of `params` under the run's config and algorithm."""
    algorithm = get_algorithm(config.algo.name)
    return algorithm.make_agent(config, params, name or algorithm.name)


def evaluation_scores(config: Config, params: Any, num_games: int, seed: int) -> np.ndarray:
    """Final scores of `num_games` argmax games played by the evaluation harness."""
    from yahtzee_jax.evaluation.records import play_games

    return play_games(network_agent(config, params), num_games, seed).total


def plot_learning_curve(run_dir: str | Path, out_path: str | Path | None = None) -> Path:
    """PNG of the periodic evaluation mean (with +-1 std band) against games played."""
    from yahtzee_jax.evaluation.plots import plot_learning_curves

    run_dir = Path(run_dir)
    rows = read_evals(run_dir / EVALS_FILE)
    if not rows:
        raise ConfigError(f"no evaluations in {run_dir / EVALS_FILE}")
    out_path = Path(out_path) if out_path is not None else run_dir / CURVE_FILE
    return plot_learning_curves(
        {"argmax policy": rows}, out_path, title=f"Learning curve: {run_dir.name}"
    )


def _check_resume_config(run_dir: Path, config: Config | None) -> Config:
    saved_path = run_dir / CONFIG_FILE
    if not saved_path.is_file():
        raise ConfigError(f"cannot resume: {saved_path} not found")
    from yahtzee_jax.runner.configs import from_dict

    saved = from_dict(read_yaml(saved_path))
    if config is not None and config != saved:
        changed = [
            f"{section}.{key}"
            for section, values in config.to_dict().items()
            for key, value in values.items()
            if saved.to_dict()[section].get(key) != value
        ]
        raise ConfigError(f"cannot resume with a different config (changed: {', '.join(changed)})")
    return saved


def _open_run_dir(run_dir: Path, config: Config | None, resume: bool) -> Config:
    """Check the run directory (the lock is held) and write the config of a fresh run."""
    from yahtzee_jax.runner.checkpointing import BEST_DIR, LATEST_DIR
    from yahtzee_jax.runner.configs import save_yaml

    if resume:
        return _check_resume_config(run_dir, config)
    if config is None:
        raise ConfigError("a config is needed to start a run")
    if (run_dir / LATEST_DIR).exists() or (run_dir / BEST_DIR).exists():
        raise ConfigError(f"{run_dir} already holds a run; pass --resume or another --out")
    save_yaml(config, run_dir / CONFIG_FILE)
    return config


class _StopRequests:
    """SIGINT/SIGTERM handler: the first asks the loop to stop after its chunk, the second
    stops at once (KeyboardInterrupt)."""

    def __init__(self) -> None:
        self.requested = False

    def __call__(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print(
            "\nstopping after this chunk (its logs and a checkpoint are written first); "
            "interrupt again to stop at once",
            file=sys.stderr,
            flush=True,
        )

    @contextlib.contextmanager
    def installed(self) -> Iterator[_StopRequests]:
        """Handle SIGINT and SIGTERM while inside (main thread only; elsewhere a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {sig: signal.signal(sig, self) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def collapse_warning(metrics: dict[str, np.ndarray], step: int) -> str | None:
    """A one-line warning when the last update of a chunk shows a collapsed policy (both
    heads' entropy near 0, or a zero gradient); None otherwise."""
    entropies = {
        name.split("/")[-1]: float(values[-1])
        for name, values in metrics.items()
        if name.startswith("policy/") and name.endswith("_entropy")
    }
    gradient = float(metrics["grad/norm"][-1]) if "grad/norm" in metrics else None
    collapsed = bool(entropies) and max(entropies.values()) < COLLAPSED_ENTROPY
    if not collapsed and gradient != 0.0:
        return None
    readings = [f"{name.replace('_', ' ')} {value:.4f}" for name, value in entropies.items()]
    if gradient is not None:
        readings.append(f"gradient norm {gradient:.3g}")
    return (
        f"warning: the policy has collapsed by update {step} ({', '.join(readings)}) and has "
        "stopped learning; a smaller optim.lr or optim.max_grad_norm > 0 usually prevents it"
    )


def _evaluation_row(config: Config, params: Any, step: int, started: float) -> dict[str, Any]:
    """Play the periodic evaluation games and describe them as one `evals.jsonl` row."""
    eval_start = time.perf_counter()
    scores = evaluation_scores(
        config, params, config.train.eval_games, config.train.seed + EVAL_SEED_OFFSET
    )
    return {
        "update": step,
        "games": step * config.train.games_per_update,
        "num_games": len(scores),
        "mean": float(np.mean(scores)),
        "std": float(np.std(scores)),
        "wall_s": time.perf_counter() - started,
        "eval_s": time.perf_counter() - eval_start,
    }


def _training_loop(
    config: Config, run_dir: Path, progress: bool, primary: bool = True
) -> tuple[TrainState, dict]:
    """Resume from the newest clean checkpoint (if any) and train to the end; the lock is
    held. Returns the final state and the session's part of the summary. A process other
    than the primary trains, evaluates and checkpoints with it but writes no logs."""
    from tqdm.auto import tqdm

    from yahtzee_jax.runner.checkpointing import RunCheckpoints

    train_config = config.train
    games_per_update = train_config.games_per_update
    total = train_config.total_updates
    context = make_context(config)
    mesh = data_mesh(train_config.devices, train_config.episodes_per_update)
    checkpoints = RunCheckpoints(run_dir, train_config.keep_checkpoints, primary=primary)
    state = checkpoints.restore_newest(init_train_state(context)) or start_state(context)
    step = start_step = int(state.step)
    state = replicate(state, mesh)
    evals_path = run_dir / EVALS_FILE
    if primary:
        evals = reconcile(run_dir, evals_path, step, games_per_update)
    else:
        evals = [row for row in read_evals(evals_path) if row["update"] <= step]
    best = max((row["mean"] for row in evals), default=None)
    scalars = ScalarLog(run_dir, enabled=primary)
    bar = tqdm(
        total=total * games_per_update,
        initial=step * games_per_update,
        unit="game",
        disable=not progress,
        dynamic_ncols=True,
    )
    compiled: dict[int, Any] = {}
    compile_seconds = 0.0
    warnings: list[str] = []
    started = time.perf_counter()
    stop = _StopRequests()
    fault = _FaultInjector(os.environ.get(FAULT_VARIABLE))
    saved_on_request = False
    with stop.installed():
        try:
            while step < total:
                length = chunk_length(config, step)
                if length not in compiled:
                    compile_start = time.perf_counter()
                    with in_mesh(mesh):
                        compiled[length] = make_chunk(context, length).lower(state).compile()
                    compile_seconds += time.perf_counter() - compile_start
                with in_mesh(mesh):
                    next_state, metrics, failure = compiled[length](state)
                fault.reached("chunk")
                metrics, failure = jax.device_get(host_local((metrics, failure)))
                failed = np.flatnonzero(failure >= 0)
                good = int(failed[0]) if failed.size else length
                scalars.add_chunk(metrics, (step + 1) * games_per_update, games_per_update, good)
                if failed.size:
                    scalars.flush()
                    quantity = guard_quantities(list(metrics))[int(failure[good])]
                    newest = checkpoints.latest_step()
                    raise DivergenceError(
                        f"training diverged at update {step + good + 1}: non-finite {quantity}; "
                        + (
                            f"the newest checkpoint (update {newest}) is from before it"
                            if newest is not None
                            else "no checkpoint had been written yet"
                        )
                    )
                state, step = next_state, step + length
                bar.update(length * games_per_update)
                warning = collapse_warning(metrics, step)
                if warning and not warnings:
                    warnings.append(warning)
                    bar.write(warning, file=sys.stderr)
                scalars.flush()
                fault.reached("scalars")
                if is_eval_step(config, step):
                    fault.reached("eval")
                    row = _evaluation_row(config, host_local(state.params), step, started)
                    scalars.add("eval/mean_score", row["mean"], row["games"])
                    scalars.add("eval/std_score", row["std"], row["games"])
                    scalars.flush()  # logs first, then the checkpoint
                    evals.append(row)
                    if primary:
                        write_evals(evals_path, evals)
                    improved = best is None or row["mean"] > best
                    best = row["mean"] if improved else best
                    fault.reached("checkpoint")
                    checkpoints.save(step, state, config, row["mean"] if improved else None)
                    bar.set_postfix(eval=f"{row['mean']:.1f}", best=f"{best:.1f}")
                if stop.requested:
                    checkpoints.save(step, state, config, None)
                    saved_on_request = True
                    bar.close()
                    print(
                        f"saved a checkpoint at update {step}; "
                        f"continue with --resume --out {run_dir}"
                    )
                    raise KeyboardInterrupt
        except KeyboardInterrupt:
            if not saved_on_request:  # a second interrupt: nothing more is written
                print(
                    f"stopped at once; the newest checkpoint is update {checkpoints.latest_step()}"
                    f"; continue with --resume --out {run_dir}"
                )
            raise
        finally:
            bar.close()
            scalars.close()
            checkpoints.close()
    train_seconds = time.perf_counter() - started - compile_seconds
    trained_games = (step - start_step) * games_per_update
    return state, {
        "run_dir": str(run_dir),
        "updates": step,
        "games": step * games_per_update,
        "compile_seconds": compile_seconds,
        "train_seconds_this_session": train_seconds,
        "games_per_second_this_session": trained_games / train_seconds if trained_games else None,
        "best_eval_mean": best,
        "last_eval": evals[-1] if evals else None,
        "warnings": warnings,
    }


def _final_report(config: Config, run_dir: Path, params: Any, progress: bool) -> dict[str, Any]:
    """The final evaluation (and, for a single-turn run, the turn against its optimum)."""
    from yahtzee_jax.evaluation.reports import evaluate

    train_config = config.train
    agent = network_agent(config, params, name=f"{config.algo.name}:{run_dir.name}")
    report = evaluate(
        agent,
        train_config.final_eval_games,
        train_config.seed + FINAL_EVAL_SEED_OFFSET,
        out_dir=run_dir / FINAL_EVAL_DIR,
        compare_optimal=train_config.final_compare_optimal,
        progress=progress,
    )
    final = {
        "final_eval": {
            "games": report["games"],
            "mean": report["score"]["mean"],
            "std": report["score"]["std"],
            "stderr": report["score"]["stderr"],
            "report": str(run_dir / FINAL_EVAL_DIR),
        }
    }
    if config.train.task == "single-turn":  # the task it trained on, against its optimum
        from yahtzee_jax.evaluation.single_turn import evaluate_single_turn

        final["single_turn_eval"] = evaluate_single_turn(
            agent, train_config.final_eval_games, train_config.seed + FINAL_EVAL_SEED_OFFSET
        )
    return final


def train(
    config: Config | None,
    run_dir: str | Path,
    resume: bool = False,
    progress: bool = True,
    final_eval: bool = True,
) -> dict[str, Any]:
    """Run (or resume) training into `run_dir`; returns the run summary.

    With `resume`, `config` may be None (the run's saved config is used) or must equal it.
    One process at a time may write a run directory (`runlog.RunLock`).
    """
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"--out {run_dir} is a file, not a run directory")
    if resume and not run_dir.is_dir():
        raise ConfigError(f"cannot resume: {run_dir} does not exist")
    primary = is_primary()  # under the multi-controller runtime only process 0 writes
    if not primary:
        config = _check_resume_config(run_dir, config) if resume else config
        return _training_loop(config, run_dir, progress=False, primary=False)[1]
    run_dir.mkdir(parents=True, exist_ok=True)
    with RunLock(run_dir):
        config = _open_run_dir(run_dir, config, resume)
        state, summary = _training_loop(config, run_dir, progress)
        if summary["last_eval"]:
            summary["learning_curve"] = str(plot_learning_curve(run_dir))
        if final_eval and config.train.final_eval_games > 0:
            summary.update(_final_report(config, run_dir, host_local(state.params), progress))
        write_atomic(run_dir / SUMMARY_FILE, json.dumps(summary, indent=2, default=float) + "\n")
    return summary


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register `yahtzee-jax train`."""
    parser = subparsers.add_parser(
        "train",
        help="train an agent (fused on-device REINFORCE, A2C or PPO)",
        description="Train with a preset, optional YAML file and section.key=value overrides.",
    )
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
        "seed and in dynamic scalars (optim.lr, warmup, plateau, min_lr_ratio; algo.gamma, "
        "gamma_start, gae_lambda, value_coef, entropy_*, upper_regression_weight, "
        "shaping_weight, clip_epsilon). Each member is an ordinary run directory, "
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
    if args.distributed:  # before anything touches a device
        initialize_distributed(args.coordinator, args.num_processes, args.process_id)
    elif args.coordinator or args.num_processes or args.process_id is not None:
        raise ConfigError("--coordinator, --num-processes and --process-id need --distributed")
    explicit = args.preset is not None or args.config is not None or args.overrides
    preset = args.preset or DEFAULT_PRESET
    config = resolve(preset, args.config, args.overrides) if (explicit or not args.resume) else None
    run_dir = Path(args.out or f"runs/{preset}")
    if population:
        return _run_population(args, preset, explicit, run_dir)
    summary = train(config, run_dir, resume=args.resume, progress=not args.no_progress)
    if not is_primary():
        return 0
    final = summary.get("final_eval")
    last = summary.get("last_eval")
    if last:
        print(f"last periodic evaluation: {last['mean']:.2f} over {last['num_games']} games")
    if final:
        print(f"final evaluation: {final['mean']:.2f} over {final['games']} games")
    single_turn = summary.get("single_turn_eval")
    if single_turn:
        print(
            f"single-turn evaluation: {single_turn['mean']:.3f} over {single_turn['turns']} turns, "
            f"{single_turn['percent_of_optimum']:.1f} % of the optimum "
            f"{single_turn['optimum_mean']:.3f}"
        )
    print(f"run directory: {run_dir}")
    return 0


def _run_population(args: argparse.Namespace, preset: str, explicit: bool, out_dir: Path) -> int:
    """`train --population-seeds/--sweep`: every member's config, then one population."""
    from yahtzee_jax.runner.population import (
        describe,
        parse_seeds,
        parse_sweeps,
        plan_members,
        train_population,
    )

    sweeps = parse_sweeps(args.sweep)
    if args.population_seeds is not None:
        seeds = parse_seeds(args.population_seeds)
    else:
        seeds = [resolve(preset, args.config, args.overrides).train.seed]
    planned = plan_members(out_dir, seeds, sweeps)
    # On a plain --resume each member's saved config is used, as for a single run.
    configs = [
        resolve(preset, args.config, [*args.overrides, *overrides])
        if (explicit or not args.resume)
        else None
        for _, overrides in planned
    ]
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
