"""The fused training pipeline: `yahtzee-jax train`.

One compiled chunk is a `lax.scan` over K updates; each update plays B games in lockstep with
the vmapped engine, computes the loss and applies the gradient, and reduces its diagnostics to
scalars. The host loop only logs those scalars (tensorboardX, at exact global steps = games
played), evaluates the argmax policy every 1 % of the updates, checkpoints, and finally runs the
evaluation harness. Chunk boundaries, evaluations and checkpoints are pure functions of the
update counter, so a resumed run replays exactly what an uninterrupted one would have done.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import numpy as np

from yahtzee_jax.algorithms import get_algorithm
from yahtzee_jax.algorithms.base import Context, TrainState, init_train_state, make_context
from yahtzee_jax.config import (
    DEFAULT_PRESET,
    Config,
    add_override_argument,
    available_presets,
    read_yaml,
    resolve,
)
from yahtzee_jax.errors import ConfigError

CONFIG_FILE = "config.yaml"
EVALS_FILE = "evals.jsonl"
SUMMARY_FILE = "summary.json"
FINAL_EVAL_DIR = "final_eval"
CURVE_FILE = "learning_curve.png"
EVAL_SEED_OFFSET = 1  # periodic evaluations use seed + 1 (fixed games, comparable points)
FINAL_EVAL_SEED_OFFSET = 2


def make_chunk(context: Context, num_updates: int):
    """Jitted `state -> (state, metrics)` running `num_updates` updates; metrics are [K] arrays."""
    update = context.algorithm.update

    def chunk(state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        return jax.lax.scan(lambda carry, _: update(context, carry), state, length=num_updates)

    return jax.jit(chunk)


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
    from yahtzee_jax.records import play_games

    return play_games(network_agent(config, params), num_games, seed).total


def read_evals(path: Path) -> list[dict[str, Any]]:
    """The periodic evaluation rows of a run (`evals.jsonl`), oldest first."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write_evals(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def plot_learning_curve(run_dir: str | Path, out_path: str | Path | None = None) -> Path:
    """PNG of the periodic evaluation mean (with +-1 std band) against games played."""
    from yahtzee_jax.plots import plot_learning_curves

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
    from yahtzee_jax.config import from_dict

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


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises KeyboardInterrupt (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def train(
    config: Config | None,
    run_dir: str | Path,
    resume: bool = False,
    progress: bool = True,
    final_eval: bool = True,
) -> dict[str, Any]:
    """Run (or resume) training into `run_dir`; returns the run summary.

    With `resume`, `config` may be None (the run's saved config is used) or must equal it.
    """
    from tensorboardX import SummaryWriter
    from tqdm.auto import tqdm

    from yahtzee_jax.checkpointing import LATEST_DIR, RunCheckpoints
    from yahtzee_jax.config import save_yaml

    run_dir = Path(run_dir)
    if resume:
        config = _check_resume_config(run_dir, config)
    else:
        if config is None:
            raise ConfigError("a config is needed to start a run")
        if (run_dir / LATEST_DIR).exists():
            raise ConfigError(f"{run_dir} already holds a run; pass --resume or another --out")
        run_dir.mkdir(parents=True, exist_ok=True)
        save_yaml(config, run_dir / CONFIG_FILE)
        (run_dir / EVALS_FILE).unlink(missing_ok=True)

    train_config = config.train
    context = make_context(config)
    state = init_train_state(context)
    checkpoints = RunCheckpoints(run_dir, train_config.keep_checkpoints)
    evals_path = run_dir / EVALS_FILE
    evals = read_evals(evals_path)
    if resume and checkpoints.latest_step() is not None:
        state = checkpoints.restore(state)
    step = int(state.step)
    evals = [row for row in evals if row["update"] <= step]  # drop points after the checkpoint
    _write_evals(evals_path, evals)
    best = max((row["mean"] for row in evals), default=None)

    total = train_config.total_updates
    games_per_update = train_config.games_per_update
    compiled: dict[int, Any] = {}
    compile_seconds = 0.0
    writer = SummaryWriter(str(run_dir))
    bar = tqdm(
        total=total * games_per_update,
        initial=step * games_per_update,
        unit="game",
        disable=not progress,
        dynamic_ncols=True,
    )
    started = time.perf_counter()
    start_step = step
    with _sigterm_as_interrupt():  # a scheduler's or `kill`'s SIGTERM saves like Ctrl-C
        try:
            while step < total:
                length = chunk_length(config, step)
                if length not in compiled:
                    compile_start = time.perf_counter()
                    compiled[length] = make_chunk(context, length).lower(state).compile()
                    compile_seconds += time.perf_counter() - compile_start
                state, metrics = compiled[length](state)
                metrics = jax.device_get(metrics)
                for index in range(length):
                    games = (step + index + 1) * games_per_update
                    for name, values in metrics.items():
                        writer.add_scalar(name, float(values[index]), games)
                step += length
                bar.update(length * games_per_update)
                if is_eval_step(config, step):
                    eval_start = time.perf_counter()
                    scores = evaluation_scores(
                        config,
                        state.params,
                        train_config.eval_games,
                        train_config.seed + EVAL_SEED_OFFSET,
                    )
                    row = {
                        "update": step,
                        "games": step * games_per_update,
                        "num_games": len(scores),
                        "mean": float(np.mean(scores)),
                        "std": float(np.std(scores)),
                        "wall_s": time.perf_counter() - started,
                        "eval_s": time.perf_counter() - eval_start,
                    }
                    evals.append(row)
                    _write_evals(evals_path, evals)
                    writer.add_scalar("eval/mean_score", row["mean"], row["games"])
                    writer.add_scalar("eval/std_score", row["std"], row["games"])
                    improved = best is None or row["mean"] > best
                    best = row["mean"] if improved else best
                    checkpoints.save(step, state, config, row["mean"] if improved else None)
                    bar.set_postfix(eval=f"{row['mean']:.1f}", best=f"{best:.1f}")
        except KeyboardInterrupt:
            bar.close()
            step = int(state.step)  # the interrupt may land after `state` moved to the next chunk
            checkpoints.save(step, state, config, None)
            checkpoints.close()
            writer.close()
            print(f"saved a checkpoint at update {step}; continue with --resume --out {run_dir}")
            raise
    bar.close()
    writer.close()
    checkpoints.close()
    train_seconds = time.perf_counter() - started - compile_seconds
    trained_games = (step - start_step) * games_per_update
    summary: dict[str, Any] = {
        "run_dir": str(run_dir),
        "updates": step,
        "games": step * games_per_update,
        "compile_seconds": compile_seconds,
        "train_seconds_this_session": train_seconds,
        "games_per_second_this_session": trained_games / train_seconds if trained_games else None,
        "best_eval_mean": best,
        "last_eval": evals[-1] if evals else None,
    }
    if evals:
        summary["learning_curve"] = str(plot_learning_curve(run_dir))
    if final_eval and train_config.final_eval_games > 0:
        from yahtzee_jax.reports import evaluate

        agent = network_agent(config, state.params, name=f"{config.algo.name}:{run_dir.name}")
        report = evaluate(
            agent,
            train_config.final_eval_games,
            train_config.seed + FINAL_EVAL_SEED_OFFSET,
            out_dir=run_dir / FINAL_EVAL_DIR,
            compare_optimal=train_config.final_compare_optimal,
            progress=progress,
        )
        summary["final_eval"] = {
            "games": report["games"],
            "mean": report["score"]["mean"],
            "std": report["score"]["std"],
            "stderr": report["score"]["stderr"],
            "report": str(run_dir / FINAL_EVAL_DIR),
        }
        if config.train.task == "single-turn":  # the task it trained on, against its optimum
            from yahtzee_jax.single_turn import evaluate_single_turn

            summary["single_turn_eval"] = evaluate_single_turn(
                agent, train_config.final_eval_games, train_config.seed + FINAL_EVAL_SEED_OFFSET
            )
    (run_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, default=float) + "\n")
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
        help=f"preset in experiments/configs ({', '.join(available_presets())}); "
        f"default {DEFAULT_PRESET}",
    )
    parser.add_argument("--config", default=None, help="YAML file applied over the preset")
    add_override_argument(parser)
    parser.add_argument("--out", default=None, help="run directory (default runs/PRESET)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """CLI entry: resolve the config (validated before anything compiles) and train."""
    explicit = args.preset is not None or args.config is not None or args.overrides
    preset = args.preset or DEFAULT_PRESET
    config = resolve(preset, args.config, args.overrides) if (explicit or not args.resume) else None
    run_dir = Path(args.out or f"runs/{preset}")
    summary = train(config, run_dir, resume=args.resume, progress=not args.no_progress)
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
