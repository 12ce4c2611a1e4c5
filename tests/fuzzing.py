"""What the fuzz tests share: the command line called in-process like a terminal would, long
work replaced by a stop, and a tiny finished run directory built without training.

`invoke(argv)` runs `yahtzee-jax ARGV` through `cli.main` with stdout and stderr encoded as a
terminal's (UTF-8; stdout strict, stderr with backslashes for what it cannot encode, as
Python's own streams), the libraries' log records written to that stderr, and returns (exit
status, stderr text). An exception that escapes
`main` (a traceback) is not caught: the fuzz test fails on it.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import logging
import shutil
import tempfile
from pathlib import Path

import jax.numpy as jnp
import pytest

from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.commands.cli import main
from yahtzee_jax.runner.checkpointing import RunCheckpoints
from yahtzee_jax.runner.configs import resolve, save_yaml
from yahtzee_jax.runner.runlog import ScalarLog, write_evals


class WorkReached(Exception):
    """Raised where a command would start its long work: every input was accepted."""


def _stop(*args: object, **kwargs: object) -> None:
    raise WorkReached


# (module, attribute) of each function that starts a command's long work: a training
# session's first parameters (a study's are paper-sized), a compile of the training chunk, a
# batch of games, matches, a solve's backward induction, a benchmark's timing, the interactive
# game's loop. Replaced by `_stop` in the command-line fuzz test.
GAMES = [("yahtzee_jax.evaluation.records", "_play_batch")]
LONG_WORK = [
    *GAMES,
    ("yahtzee_jax.runner.loop", "init_train_state"),
    ("yahtzee_jax.runner.single_run", "SingleRun.compile"),
    ("yahtzee_jax.runner.population", "Population.compile"),
    ("yahtzee_jax.evaluation.single_turn", "_play_turns"),
    ("yahtzee_jax.evaluation.matches", "match_totals"),
    ("yahtzee_jax.solver.value_table", "solve_value_table"),
    ("yahtzee_jax.solver.target_table", "solve_target_table"),
    ("yahtzee_jax.commands.terminal", "TerminalGame.run"),
    ("yahtzee_jax.commands.bench.env", "measure_reference"),
    ("yahtzee_jax.commands.bench.env", "measure_engine"),
    ("yahtzee_jax.commands.bench.train_speed", "measure"),
    ("yahtzee_jax.commands.bench.train_speed", "measure_population"),
    ("yahtzee_jax.commands.bench.scaling", "time_chunk"),
    ("yahtzee_jax.commands.bench.solve_cost", "_measure"),
]


def stop_long_work(
    monkeypatch: pytest.MonkeyPatch, work: list[tuple[str, str]] = LONG_WORK
) -> None:
    """Replace every function of `work` by one that raises `WorkReached`."""
    import importlib

    # `train --distributed` starts JAX's runtime first (it would wait for the other processes):
    # a runtime of one, so that the command goes on to read its config as it does after it.
    monkeypatch.setattr("yahtzee_jax.commands.train.initialize_distributed", lambda *_: None)
    for module_name, attribute in work:
        target = importlib.import_module(module_name)
        *owners, name = attribute.split(".")
        for owner in owners:
            target = getattr(target, owner)
        monkeypatch.setattr(target, name, _stop)


def invoke(argv: list[str]) -> tuple[int, str]:
    """(exit status, stderr) of `yahtzee-jax ARGV` run in-process; `WorkReached` counts as 0."""
    status, stderr, _ = invoke_to_work(argv)
    return status, stderr


def invoke_to_work(argv: list[str]) -> tuple[int, str, bool]:
    """`invoke`, and whether the command reached its long work (`WorkReached`: status 0)."""
    reached = False
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", errors="strict")
    stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace")
    # What the libraries log reaches a terminal's stderr too (pytest would capture it aside).
    handler = logging.StreamHandler(stderr)
    handler.setFormatter(logging.Formatter(logging.BASIC_FORMAT))
    logging.getLogger().addHandler(handler)
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            status = main(argv)
        except SystemExit as exit:  # argparse's usage errors and --help
            status = exit.code
        except WorkReached:
            status, reached = 0, True
        finally:
            logging.getLogger().removeHandler(handler)
            stdout.flush()
            stderr.flush()
    return status, err.getvalue().decode(), reached


def check_one_line(status: int, stderr: str, allowed: tuple[int, ...] = (0, 2)) -> None:
    """The fuzz property: an allowed exit status, at most one line on stderr, no traceback."""
    lines = stderr.strip().splitlines()
    assert status in allowed, (status, stderr)
    assert len(lines) <= 1, stderr
    assert "Traceback" not in stderr, stderr


# A tiny run: the quick preset's learner with a 16-wide network, 20 updates of 4 games.
TINY_OVERRIDES = [
    "train.total_games=80",
    "train.games_per_update=4",
    "train.updates_per_chunk=10",
    "train.eval_fraction=0.5",
    "train.eval_games=8",
    "train.final_eval_games=0",
    "network.hidden_size=16",
    "network.trunk_layers=1",
]


_FINISHED_RUNS: list[Path] = []  # the one this process built (copied for every caller)


def make_finished_run(run_dir: Path) -> Path:
    """A finished tiny run at `run_dir`, built without training (no chunk to compile): its
    initial state saved as the checkpoints of updates 10 and 20 (and best/20), the config, two
    evaluation rows, an events file, the summary and the lock file, as `train` leaves them.
    Built once per process and copied."""
    if not _FINISHED_RUNS:
        template = Path(tempfile.mkdtemp(prefix="yahtzee-jax-finished-run-")) / "run"
        atexit.register(shutil.rmtree, template.parent, True)
        _build_finished_run(template)
        _FINISHED_RUNS.append(template)
    shutil.copytree(_FINISHED_RUNS[0], run_dir)
    summary = json.loads((run_dir / "summary.json").read_text()) | {"run_dir": str(run_dir)}
    (run_dir / "summary.json").write_text(json.dumps(summary) + "\n")
    return run_dir


def _build_finished_run(run_dir: Path) -> None:
    config = resolve("quick", overrides=TINY_OVERRIDES)
    run_dir.mkdir(parents=True)
    save_yaml(config, run_dir / "config.yaml")
    state = init_train_state(make_context(config))
    checkpoints = RunCheckpoints(run_dir, config.train.keep_checkpoints)
    rows = []
    log = ScalarLog(run_dir)
    for step, mean in ((10, 40.0), (20, 45.0)):
        checkpoints.save(step, state.replace(step=jnp.int32(step)), config, mean)
        games = step * config.train.games_per_update
        rows.append({"update": step, "games": games, "num_games": 8, "mean": mean, "std": 9.0})
        for update in range(step - 9, step + 1):
            log.add("loss/total", 1.0 / update, update * config.train.games_per_update)
        log.add("eval/mean_score", mean, games)
    log.close()
    checkpoints.close()
    write_evals(run_dir / "evals.jsonl", rows)
    summary = {"run_dir": str(run_dir), "updates": 20, "games": 80, "last_eval": rows[-1]}
    (run_dir / "summary.json").write_text(json.dumps(summary) + "\n")
    (run_dir / ".lock").write_text("12345\n")
