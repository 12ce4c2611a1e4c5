"""The host loop: every training session, one run or a population of runs, goes through it.

The loop calls a compiled chunk (K updates, `chunk.py`) over and over, logs each update's
scalars to TensorBoard at exact global steps (games played), evaluates the argmax policy every
`train.eval_fraction` of the updates and checkpoints after each evaluation. It trains N members
in lockstep: a single run is a population of one. What differs between one run and a
population is only how the members' states train on the device, the `Program`: one run's chunk
under its data-parallel mesh (`train.SingleRun`), or the chunk vmapped over the members
(`population.Population`). Chunk boundaries, evaluations and checkpoints are pure functions of
the update counter, so a resumed session replays exactly what an uninterrupted one would have
done.

Interruptions: the first Ctrl-C or SIGTERM lets the current chunk finish, logs it, saves and
exits; a second one stops at once. Each chunk's scalars and evaluation are on disk before its
checkpoint, and a resume cuts the logs back to the checkpoint it continues from (`runlog`), so
even a SIGKILL at any moment leaves every logged point exactly once after the resume. Tests
reach into those moments through a `Hook`, called at each of `HOOK_POINTS`.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import jax
import numpy as np

from yahtzee_jax import envs
from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.algorithms import get_algorithm
from yahtzee_jax.algorithms.algorithm import Context, TrainState, init_train_state
from yahtzee_jax.config import Config
from yahtzee_jax.errors import ConfigError, DiskFullError, UserError, is_disk_full
from yahtzee_jax.host import signals_handled
from yahtzee_jax.parallel import host_local
from yahtzee_jax.runner.chunk import guard_quantities
from yahtzee_jax.runner.collapse import CollapseError, CollapseWatch, collapse_warning
from yahtzee_jax.runner.runlog import EVALS_FILE, ScalarLog, read_evals, reconcile, write_evals
from yahtzee_jax.runner.warm_start import start_state

EVAL_SEED_OFFSET = 1  # periodic evaluations use seed + 1 (fixed games, comparable points)

# Where the loop calls its hook, in the order one evaluated chunk passes them: the chunk's
# compiled call has returned; its scalars are on disk; the evaluation starts; the checkpoint
# write starts.
HOOK_POINTS = ("after_chunk", "after_scalars", "before_eval", "before_checkpoint")
# hook(point, update) with `point` one of HOOK_POINTS and `update` the update counter there
Hook = Callable[[str, int], None]


class DivergenceError(UserError):
    """Training produced a non-finite loss, gradient or parameter."""

    exit_status = 3


class Program(Protocol):
    """How the members of a session train on the device; the loop around it is the same."""

    # Each member's static pieces: its checkpoints' template and its first state come from them.
    contexts: list[Context]

    def device_state(self, states: list[TrainState]) -> Any:
        """The members' states as the one state the compiled chunk takes."""
        ...

    def compile(self, length: int, state: Any) -> Callable[[Any], tuple[Any, Any, Any]]:
        """The chunk of `length` updates compiled for `state`: state -> (state, metrics,
        failure codes)."""
        ...

    def member(self, tree: Any, index: int) -> Any:
        """Member `index`'s part of a device state, its metrics or failure codes, on this host."""
        ...


def chunk_length(config: Config, step: int) -> int:
    """Updates in the chunk starting at update `step` (a pure function of the counter)."""
    return min(config.train.chunk_updates, config.train.total_updates - step)


def is_eval_step(config: Config, step: int) -> bool:
    """Evaluate and checkpoint after update `step`?"""
    return step % config.train.eval_interval == 0 or step == config.train.total_updates


def network_agent(config: Config, params: Any, name: str | None = None) -> Agent:
    """The acting (argmax) agent of `params` under the run's config and algorithm."""
    algorithm = get_algorithm(config.algo.name)
    return algorithm.make_agent(config, params, name or algorithm.name)


def solitaire_evaluation(
    config: Config, params: Any, num_games: int, seed: int
) -> tuple[np.ndarray, dict[str, Any]]:
    """Final scores of `num_games` argmax games played by the evaluation harness, and the share
    of them that earned the upper bonus."""
    from yahtzee_jax.evaluation.records import play_games

    records = play_games(network_agent(config, params), num_games, seed)
    return records.total, {"upper_bonus_rate": float(np.mean(records.upper_bonus))}


def match_evaluation(
    config: Config, params: Any, num_games: int, seed: int
) -> tuple[np.ndarray, dict[str, Any]]:
    """The learner's totals in `num_games` matches against its training opponents (the optimal
    agent for `self`), and their win and draw rates with the wins' Wilson 95 % interval."""
    from yahtzee_jax.agents import builtin_agent
    from yahtzee_jax.evaluation.matches import match_totals, tally

    agent = network_agent(config, params)
    names = tuple("optimal" if name == "self" else name for name in config.env.opponents)
    rivals = tuple(builtin_agent(name, agent.rules) for name in names)
    own, others = match_totals(agent, rivals, agent.rules, num_games, seed)
    _, counts = tally(own, others)
    rates = {key: counts[key] for key in ("win_rate", "draw_rate", "win_interval_95")}
    return own, {"opponents": list(names), **rates}


def evaluation_row(config: Config, params: Any, step: int, started: float) -> dict[str, Any]:
    """Play the periodic evaluation games and describe them as one `evals.jsonl` row, with the
    upper-bonus rate (matches against the training opponents and their win rate instead, for a
    learner that asks for them)."""
    eval_start = time.perf_counter()
    num_games, seed = config.train.eval_games, config.train.seed + EVAL_SEED_OFFSET
    has_opponents = envs.environment_class(config).has_opponents
    if has_opponents and config.algo.evaluates_matches:
        scores, extra = match_evaluation(config, params, num_games, seed)
    else:
        scores, extra = solitaire_evaluation(config, params, num_games, seed)
    return {
        "update": step,
        "games": step * config.train.games_per_update,
        "num_games": len(scores),
        "mean": float(np.mean(scores)),
        "std": float(np.std(scores)),
        "wall_s": time.perf_counter() - started,
        "eval_s": time.perf_counter() - eval_start,
        **extra,
    }


class StopRequests:
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
    def installed(self) -> Iterator[StopRequests]:
        """Handle SIGINT and SIGTERM while inside (main thread only; elsewhere a no-op)."""
        with signals_handled(self, signal.SIGINT, signal.SIGTERM):
            yield self


def restore_members(
    checkpoints: Sequence[Any],
    templates: list[TrainState],
    start: Callable[[], list[TrainState]],
) -> list[TrainState]:
    """Every member's state at the newest update all of them have a checkpoint for (restored
    into `templates`), or `start()`'s first states when none has one. Members are saved one
    after the other, so a kill may leave them one evaluation apart; the older common
    checkpoint makes the replay exact."""
    newest = [
        ckpt.restore_newest(template) for ckpt, template in zip(checkpoints, templates, strict=True)
    ]
    steps = [0 if state is None else int(state.step) for state in newest]
    common = min(steps)
    if common == 0 and max(steps) > 0:  # a fresh member beside one that has trained
        ahead = checkpoints[steps.index(max(steps))].run_dir
        raise ConfigError(
            f"population member {ahead} is at update {max(steps)} and another has not started; "
            "train them in separate populations"
        )
    if common == 0:
        return start()
    states = []
    for member, (state, step) in enumerate(zip(newest, steps, strict=True)):
        if step == common:
            states.append(state)
            continue
        try:
            states.append(checkpoints[member].restore(templates[member], common))
        except Exception:  # pruned (train.keep_checkpoints=1) or damaged
            raise ConfigError(
                f"population member {checkpoints[member].run_dir} is at update {step}, the others "
                f"at {common}, and has no checkpoint at {common}; resume it alone first"
            ) from None
    return states


def _divergence(
    diverged: list[tuple[int, int, str]], run_dirs: Sequence[Path], newest: int | None
) -> str:
    """The one-line message for members that diverged: (member, update, quantity) each."""
    if len(run_dirs) == 1:
        [(_, update, quantity)] = diverged
        what = f"training diverged at update {update}: non-finite {quantity}"
    else:
        what = "; ".join(
            f"member {run_dirs[member]} diverged at update {update}: non-finite {quantity}"
            for member, update, quantity in diverged
        )
        what += "; the population stopped"
    if newest is None:
        return f"{what}; no checkpoint had been written yet"
    return f"{what}; the newest checkpoint (update {newest}) is from before it"


def _collapsed(watches: Sequence[CollapseWatch], run_dirs: Sequence[Path], step: int) -> str:
    """The one-line message of a session whose members have all collapsed."""
    if len(watches) == 1:
        return watches[0].message(step)
    return "every member collapsed; " + "; ".join(
        f"{run_dir}: {watch.message(step)}"
        for watch, run_dir in zip(watches, run_dirs, strict=True)
    )


def _describe_write(error: Exception) -> str:
    """What was being written when the disk filled up, in a few words."""
    if isinstance(error, DiskFullError):  # the checkpoint writer's own message
        return "writing a checkpoint"
    filename = getattr(error, "filename", None)
    return f"writing {filename}" if filename else "writing the logs"


def _close_all(closables: Sequence[Any], failing: bool) -> None:
    """Close every log and checkpoint manager; while an error is on its way out (a full disk
    fails the closing flush too), their own errors must not replace it."""
    for closable in closables:
        try:
            closable.close()
        except Exception:
            if not failing:
                raise


def _no_hook(point: str, update: int) -> None:
    """The hook of a session nobody watches."""


def train_members(
    configs: Sequence[Config],
    run_dirs: Sequence[Path],
    program: Program,
    *,
    progress: bool,
    resume_hint: str,
    primary: bool = True,
    hook: Hook | None = None,
) -> tuple[Any, list[dict[str, Any]]]:
    """Resume every member from its newest clean checkpoint (if any) and train all to the end;
    their run directories are open (and locked). Returns the final device state and each
    member's part of the summary. A process other than the primary one (several hosts) trains,
    evaluates and checkpoints with it but writes no logs. `resume_hint` completes "continue
    with ..." when the session is interrupted; `hook` is called at each of `HOOK_POINTS`."""
    from tqdm.auto import tqdm

    from yahtzee_jax.runner.checkpointing import RunCheckpoints

    template, size = configs[0], len(configs)
    train_config = template.train
    games_per_update, total = train_config.games_per_update, train_config.total_updates
    reached = hook or _no_hook
    checkpoints = [
        RunCheckpoints(run_dir, train_config.keep_checkpoints, primary=primary)
        for run_dir in run_dirs
    ]
    # A warm start (`algo.init_from`) is read only when no member has a checkpoint yet.
    templates = [init_train_state(context) for context in program.contexts]
    states = restore_members(
        checkpoints, templates, lambda: [start_state(context) for context in program.contexts]
    )
    step = start_step = int(states[0].step)
    state = program.device_state(states)
    evals_paths = [run_dir / EVALS_FILE for run_dir in run_dirs]
    if primary:
        evals = [
            reconcile(run_dir, path, step, games_per_update)
            for run_dir, path in zip(run_dirs, evals_paths, strict=True)
        ]
    else:
        evals = [[row for row in read_evals(path) if row["update"] <= step] for path in evals_paths]
    best = [max((row["mean"] for row in rows), default=None) for rows in evals]
    watches = [CollapseWatch(value) for value in best]
    scalars = [ScalarLog(run_dir, enabled=primary) for run_dir in run_dirs]
    bar = tqdm(
        total=total * games_per_update * size,
        initial=step * games_per_update * size,
        unit="game",
        disable=not progress,
        dynamic_ncols=True,
    )
    compiled: dict[int, Callable[[Any], tuple[Any, Any, Any]]] = {}
    compile_seconds = 0.0
    warnings: list[list[str]] = [[] for _ in configs]
    notes = {
        note
        for config in configs
        for note in (config.train.rounding_note(), config.train.chunk_note())
    } - {None}
    for note in sorted(notes) if primary else ():
        bar.write(note, file=sys.stderr)
    if 0 < start_step < total and primary:  # the bar alone began part-way without a word
        where = run_dirs[0] if size == 1 else f"{size} members"
        bar.write(  # stdout, as the resume's other lines (stderr is for what went wrong)
            f"resuming {where} at update {start_step:,} ({start_step * games_per_update:,} of "
            f"{total * games_per_update:,} games)",
            file=sys.stdout,
        )
    started = time.perf_counter()
    stop = StopRequests()
    saved_on_request = False

    def save_all(eval_scores: Sequence[float | None]) -> None:
        for member, ckpt in enumerate(checkpoints):
            ckpt.save(step, program.member(state, member), configs[member], eval_scores[member])

    with stop.installed():
        try:
            while step < total:
                length = chunk_length(template, step)
                if length not in compiled:
                    if progress and primary and not compiled:  # silent for up to a minute
                        bar.write("compiling the training step...", file=sys.stderr)
                    compile_start = time.perf_counter()
                    compiled[length] = program.compile(length, state)
                    compile_seconds += time.perf_counter() - compile_start
                    bar.unpause()  # the ETA counts training, not the compile
                next_state, metrics, failure = compiled[length](state)
                reached("after_chunk", step + length)
                metrics, failure = jax.device_get(host_local((metrics, failure)))
                member_metrics = [program.member(metrics, member) for member in range(size)]
                first_logged = (step + 1) * games_per_update  # update i at first + i * B
                diverged = []
                for member in range(size):
                    codes = program.member(failure, member)
                    failed = np.flatnonzero(codes >= 0)
                    good = int(failed[0]) if failed.size else length
                    scalars[member].add_chunk(
                        member_metrics[member], first_logged, games_per_update, good
                    )
                    scalars[member].flush()
                    if failed.size:
                        quantity = guard_quantities(list(metrics))[int(codes[good])]
                        diverged.append((member, step + good + 1, quantity))
                if diverged:
                    newest = checkpoints[0].latest_step()
                    raise DivergenceError(_divergence(diverged, run_dirs, newest))
                state, step = next_state, step + length
                bar.update(length * games_per_update * size)
                for member in range(size):
                    watches[member].chunk(member_metrics[member], step)
                    warning = collapse_warning(member_metrics[member], step)
                    if warning and not warnings[member]:
                        warnings[member].append(warning)
                        where = "" if size == 1 else f"{run_dirs[member]}: "
                        bar.write(where + warning, file=sys.stderr)
                reached("after_scalars", step)
                if is_eval_step(template, step):
                    reached("before_eval", step)
                    scores: list[float | None] = []
                    for member, config in enumerate(configs):
                        params = program.member(state.params, member)
                        row = evaluation_row(config, params, step, started)
                        row["session"] = scalars[member].session  # the events file's number
                        scalars[member].add("eval/mean_score", row["mean"], row["games"])
                        scalars[member].add("eval/std_score", row["std"], row["games"])
                        for rate in ("win_rate", "upper_bonus_rate"):
                            if rate in row:
                                scalars[member].add(f"eval/{rate}", row[rate], row["games"])
                        scalars[member].flush()  # logs first, then the checkpoint
                        evals[member].append(row)
                        if primary:
                            write_evals(evals_paths[member], evals[member])
                        improved = best[member] is None or row["mean"] > best[member]
                        best[member] = row["mean"] if improved else best[member]
                        scores.append(row["mean"] if improved else None)
                    reached("before_checkpoint", step)
                    save_all(scores)
                    stops = [
                        watch.evaluation(rows[-1]["mean"]) and not config.train.allow_collapse
                        for watch, rows, config in zip(watches, evals, configs, strict=True)
                    ]
                    if all(stops):  # a population stops when every member has collapsed
                        raise CollapseError(_collapsed(watches, run_dirs, step))
                    top = max(value for value in best if value is not None)
                    if size == 1:
                        bar.set_postfix(eval=f"{evals[0][-1]['mean']:.1f}", best=f"{top:.1f}")
                    else:
                        bar.set_postfix(best=f"{top:.1f}")
                if stop.requested:
                    save_all([None] * size)
                    saved_on_request = True
                    bar.close()
                    every = "" if size == 1 else " of every member"
                    print(
                        f"saved a checkpoint{every} at update {step}; continue with {resume_hint}"
                    )
                    raise KeyboardInterrupt
        except KeyboardInterrupt:
            if not saved_on_request:  # a second interrupt: nothing more is written
                newest = checkpoints[0].latest_step()
                where = (
                    f"the newest checkpoint is update {newest}; continue with {resume_hint}"
                    if newest is not None
                    else f"no checkpoint was written yet: {resume_hint} starts from update 0"
                )
                print(f"stopped at once; {where}")
            raise
        except Exception as error:
            if not is_disk_full(error):
                raise
            # What is on disk is consistent: the torn scalars and evaluation rows after the
            # newest checkpoint are cut away by the resume (`runlog.reconcile`).
            raise DiskFullError(
                f"no space left on the device at update {step} ({_describe_write(error)}); the "
                f"newest checkpoint is update {checkpoints[0].latest_step()}; free some space "
                f"and continue with {resume_hint}"
            ) from None
        finally:
            bar.close()
            _close_all([*scalars, *checkpoints], failing=sys.exc_info()[1] is not None)
    train_seconds = time.perf_counter() - started - compile_seconds
    trained_games = (step - start_step) * games_per_update
    summaries = [
        {
            "run_dir": str(run_dirs[member]),
            "updates": step,
            "games": step * games_per_update,
            "compile_seconds": compile_seconds,
            "train_seconds_this_session": train_seconds,
            # the member's own games per second of the session's wall time
            "games_per_second_this_session": trained_games / train_seconds
            if trained_games
            else None,
            "best_eval_mean": best[member],
            "last_eval": evals[member][-1] if evals[member] else None,
            "warnings": warnings[member],
        }
        for member in range(size)
    ]
    return state, summaries
