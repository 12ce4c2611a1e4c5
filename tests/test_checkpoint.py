"""Checkpoint round trip, trained checkpoints as agents, and exact resume after SIGINT/SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest
import yaml

from yahtzee_jax.checkpointing import LATEST_DIR, RunCheckpoints, load_agent, load_checkpoint
from yahtzee_jax.config import from_dict
from yahtzee_jax.errors import CheckpointError
from yahtzee_jax.records import play_games
from yahtzee_jax.train import init_train_state, make_context, train

# 200 updates of 4 games on a 16-wide network with dropout; a checkpoint every 20 updates.
TINY = {
    "train": {
        "total_games": 800,
        "games_per_update": 4,
        "updates_per_chunk": 20,
        "eval_fraction": 0.1,
        "eval_games": 20,
        "final_eval_games": 0,
        "keep_checkpoints": 2,
        "seed": 3,
    },
    "network": {"hidden_size": 16, "trunk_layers": 1},
    "optim": {"lr": 1e-3},
}
CONFIG = from_dict(TINY)


def assert_trees_equal(left, right) -> None:
    """Bitwise equality of two pytrees of arrays."""
    left_leaves, left_def = jax.tree.flatten(left)
    right_leaves, right_def = jax.tree.flatten(right)
    assert left_def == right_def
    for a, b in zip(left_leaves, right_leaves, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """An uninterrupted run of the tiny config."""
    run_dir = tmp_path_factory.mktemp("uninterrupted")
    train(CONFIG, run_dir, progress=False, final_eval=False)
    return run_dir


def test_round_trip_restores_every_field(finished_run, tmp_path):
    """A trained state saved and restored into a fresh template comes back bitwise: params,
    Adam moments and schedule count, rng key data and the update counter."""
    template = init_train_state(make_context(CONFIG))
    state = RunCheckpoints(finished_run, keep=2).restore(template)
    assert int(state.step) == 200
    checkpoints = RunCheckpoints(tmp_path, keep=2)
    checkpoints.save(200, state, CONFIG, eval_score=12.5)
    restored = checkpoints.restore(template)
    checkpoints.close()
    assert_trees_equal(restored, state)
    assert not np.array_equal(
        restored.params["Dense_0"]["kernel"], template.params["Dense_0"]["kernel"]
    )
    _, config, step = load_checkpoint(tmp_path / "best")
    assert (config, step) == (CONFIG, 200)


def test_trained_run_is_an_agent(finished_run):
    """The run directory and one of its step directories load as argmax agents that finish
    their games (illegal moves would leave games unfinished and raise)."""
    agent = load_agent(str(finished_run))
    step_dir = sorted((finished_run / LATEST_DIR).iterdir())[-1]
    same = load_agent(str(step_dir))
    assert agent.act is same.act  # one compiled program serves every checkpoint of a config
    records = play_games(agent, 16, seed=0)
    assert records.total.shape == (16,)


def test_missing_or_corrupt_checkpoint_is_a_checkpoint_error(tmp_path):
    """A missing path, an empty directory and a damaged step directory each raise one line."""
    with pytest.raises(CheckpointError, match="not found"):
        load_agent(str(tmp_path / "missing"))
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_agent(str(tmp_path))
    damaged = tmp_path / "run" / LATEST_DIR / "7"
    (damaged / "state").mkdir(parents=True)
    (damaged / "state" / "garbage").write_text("not a checkpoint")
    with pytest.raises(CheckpointError) as error:
        load_agent(str(tmp_path / "run"))
    assert "\n" not in str(error.value)


def _start(config_file: Path, run_dir: Path, resume: bool) -> subprocess.Popen:
    command = [sys.executable, "-m", "yahtzee_jax.cli", "train", "--config", str(config_file)]
    command += ["--out", str(run_dir), "--no-progress"] + (["--resume"] if resume else [])
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)


def _wait_for_checkpoint_after(run_dir: Path, step: int, process: subprocess.Popen) -> int:
    """Poll until a checkpoint newer than `step` exists; returns its step."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read().decode()
        steps = [int(p.name) for p in (run_dir / LATEST_DIR).glob("*") if p.name.isdigit()]
        if steps and max(steps) > step:
            return max(steps)
        time.sleep(0.01)
    raise AssertionError("no checkpoint appeared")


def _interrupt(run_dir: Path, process: subprocess.Popen, after: int, sig: signal.Signals) -> int:
    """Send `sig` once a checkpoint newer than `after` exists; the run must save and exit 130."""
    _wait_for_checkpoint_after(run_dir, after, process)
    process.send_signal(sig)
    output = process.communicate(timeout=60)[0].decode()
    assert process.returncode == 130, output
    assert "continue with --resume" in output
    saved_at = load_checkpoint(run_dir)[2]
    assert after < saved_at < 200 and saved_at % 20 == 0
    return saved_at


def test_interrupted_and_killed_run_resumes_to_the_same_parameters(finished_run, tmp_path):
    """Ctrl-C (SIGINT) and SIGTERM mid-run each save and exit 130; a resumed run killed with
    SIGKILL mid-run and resumed again ends with parameters bitwise equal to the uninterrupted
    run's."""
    config_file = tmp_path / "tiny.yaml"
    # Every field written out: the CLI lays a --config file over the default preset.
    config_file.write_text(yaml.safe_dump(CONFIG.to_dict()))
    run_dir = tmp_path / "run"

    first = _start(config_file, run_dir, resume=False)
    interrupted_at = _interrupt(run_dir, first, 0, signal.SIGINT)
    second = _start(config_file, run_dir, resume=True)
    terminated_at = _interrupt(run_dir, second, interrupted_at, signal.SIGTERM)

    third = _start(config_file, run_dir, resume=True)
    _wait_for_checkpoint_after(run_dir, terminated_at, third)
    third.send_signal(signal.SIGKILL)
    third.wait(timeout=60)
    killed_at = load_checkpoint(run_dir)[2]
    assert killed_at < 200, "the run finished before it could be killed"

    train(None, run_dir, resume=True, progress=False, final_eval=False)
    resumed, _, resumed_step = load_checkpoint(run_dir)
    reference, _, reference_step = load_checkpoint(finished_run)
    assert resumed_step == reference_step == 200
    assert_trees_equal(resumed["params"], reference["params"])
    assert_trees_equal(resumed["opt_state"], reference["opt_state"])
