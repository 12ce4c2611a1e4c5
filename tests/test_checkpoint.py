"""Checkpoint round trip, trained checkpoints as agents, damaged checkpoints, and exact resume
with intact logs after SIGINT, SIGTERM or SIGKILL at any moment."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
import yaml

from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.errors import CheckpointError, UserError
from yahtzee_jax.evaluation.records import play_games
from yahtzee_jax.runner.checkpointing import (
    BEST_DIR,
    DAMAGED_DIR,
    LATEST_DIR,
    RunCheckpoints,
    load_agent,
    load_checkpoint,
    resolve_agent,
)
from yahtzee_jax.runner.configs import from_dict
from yahtzee_jax.runner.runlog import EVALS_FILE, read_evals, read_scalars
from yahtzee_jax.runner.session import finished_summary
from yahtzee_jax.runner.single_run import train

FAULTS = Path(__file__).with_name("faults.py")  # runs `yahtzee-jax` with a fault hook

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


class OldForm:
    """A config that writes itself as every run before issue 66 did: `train.task` and
    `train.rules`, and the match settings a solitaire game kept and ignored."""

    def to_dict(self) -> dict:
        """`CONFIG` in the old form."""
        old = CONFIG.to_dict()
        old["train"].update(task="game", rules="official")
        old["env"] = {"players": 2, "opponent": "optimal", "reward": "win",
                      "opponent_features": True, "opponent_refresh": 100}  # fmt: skip
        return old


def test_a_checkpoint_of_the_old_form_loads_as_today_s_config(finished_run, tmp_path):
    """A checkpoint whose stored config names its environment the old way loads as today's
    config (the same environment, `env.id=Yahtzee-v0`) and plays as an agent of its rules."""
    template = init_train_state(make_context(CONFIG))
    state = RunCheckpoints(finished_run, keep=2).restore(template)
    checkpoints = RunCheckpoints(tmp_path, keep=2)
    checkpoints.save(200, state, OldForm(), eval_score=None)
    checkpoints.close()
    stored = json.loads(next((tmp_path / LATEST_DIR).glob("*/config/metadata")).read_text())
    assert stored["train"]["task"] == "game" and "id" not in stored["env"]
    _, config, step = load_checkpoint(tmp_path)
    assert (config, step) == (CONFIG, 200) and config.env.id == "Yahtzee-v0"
    assert load_agent(str(tmp_path)).rules.name == "official"


def test_trained_run_is_an_agent(finished_run):
    """The run directory and one of its step directories load as argmax agents that finish
    their games (illegal moves would leave games unfinished and raise)."""
    agent = load_agent(str(finished_run))
    step_dir = sorted((finished_run / LATEST_DIR).iterdir())[-1]
    same = load_agent(str(step_dir))
    assert agent.act == same.act  # equal acts: one compiled program serves every checkpoint
    records = play_games(agent, 16, seed=0)
    assert records.total.shape == (16,)


def test_a_checkpoint_plays_its_own_rules_unless_others_were_asked_for(finished_run):
    """`resolve_agent` on a run trained on official rules: a command's default rule set
    (`--rules` left out: `rules_asked=False`) leaves it its own; plain rules asked for are
    refused in one line naming both."""
    agent = resolve_agent(str(finished_run), "plain", rules_asked=False)
    assert agent.rules.name == "official"
    with pytest.raises(UserError, match="plays 'official' rules, not 'plain'") as error:
        resolve_agent(str(finished_run), "plain")
    assert "\n" not in str(error.value)


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


def _damage(step_dir: Path) -> None:
    """Overwrite 64 bytes in the middle of every data file of a checkpoint with zeros."""
    for path in step_dir.rglob("*"):
        if path.is_file() and path.parent.name == "d":
            with open(path, "r+b") as handle:
                handle.seek(path.stat().st_size // 2)
                handle.write(bytes(64))


def test_a_file_given_as_a_run_is_named_as_a_file(tmp_path):
    """`evaluate FILE`, `match FILE`, `play --against FILE` on an ordinary file: the error says
    it is a file, where it said "checkpoint not found" of a path that exists."""
    afile = tmp_path / "notes.txt"
    afile.write_text("not a run")
    with pytest.raises(CheckpointError, match=r"notes\.txt is a file, not a run or checkpoint"):
        load_checkpoint(afile)


def test_resume_falls_back_past_a_damaged_checkpoint(finished_run, tmp_path, capsys):
    """With the newest checkpoint (and its copy in best/) damaged, --resume says in one line
    what it skipped, moves it into damaged/ (never deletes it), continues from the older one
    and ends where the uninterrupted run ended."""
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    for step_dir in (run_dir / LATEST_DIR / "200", run_dir / BEST_DIR / "200"):
        if step_dir.exists():
            _damage(step_dir)
    train(None, run_dir, resume=True, progress=False, final_eval=False)
    skipped = [line for line in capsys.readouterr().err.splitlines() if "skipped" in line]
    assert skipped and all("/200: " in line and "moved it to" in line for line in skipped)
    assert (run_dir / DAMAGED_DIR / "checkpoints-200").is_dir()
    resumed, _, step = load_checkpoint(run_dir)
    reference, _, _ = load_checkpoint(finished_run)
    assert step == 200
    assert_trees_equal(resumed["params"], reference["params"])


def test_resuming_a_finished_run_keeps_its_summary_and_trains_nothing(
    finished_run, tmp_path, capsys
):
    """`--resume` of a finished run (`make train` run again after its end): one line says it is
    finished, and its summary.json stays as the run wrote it, where the resume replayed the
    end and wrote an empty session's timing over the run's (found by a review session). (A
    larger `train.total_games` is a changed config: the run trains on, as the resume tests
    with changed settings show.)"""
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    written = (run_dir / "summary.json").read_bytes()
    summary = train(None, run_dir, resume=True, progress=False, final_eval=False)
    assert (run_dir / "summary.json").read_bytes() == written
    assert summary == json.loads(written)
    said = capsys.readouterr().out
    assert f"{run_dir} was finished (800 games): its summary.json is kept" in said
    assert finished_summary(run_dir, CONFIG, final_eval=False) == json.loads(written)
    # A changed config is not the run that finished (the saved config is its newest
    # checkpoint's, whatever the resume writes into config.yaml): it writes a summary of its own
    changed = from_dict({**TINY, "optim": {"lr": 2e-3}})
    train(changed, run_dir, resume=True, progress=False, final_eval=False)
    assert (run_dir / "summary.json").read_bytes() != written


def test_a_resume_below_the_games_played_is_refused_and_a_longer_one_says_so(
    finished_run, tmp_path, capsys
):
    """`--set train.total_games=400` on a run that has played 800 games is refused in one line
    before anything is written (it was taken without a word, and config.yaml then disagreed
    with summary.json); 802 games, not whole updates of 4, are noted as 804, and the bar says
    it is compiling before the first chunk's silence (both found by a review session)."""
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    saved = (run_dir / "config.yaml").read_bytes()
    shorter = from_dict({**TINY, "train": {**TINY["train"], "total_games": 400}})
    with pytest.raises(UserError, match=r"has played 800 games \(update 200\); give at least 800"):
        train(shorter, run_dir, resume=True, progress=False, final_eval=False)
    assert (run_dir / "config.yaml").read_bytes() == saved
    # The newest checkpoint's config item damaged (its state would still be resumed): 760
    # games (190 updates) lie between it and the one before (found reviewing the check)
    for manager in (LATEST_DIR, BEST_DIR):
        if (run_dir / manager / "200").exists():
            (run_dir / manager / "200" / "config" / "metadata").write_text("{damaged")
    between = from_dict({**TINY, "train": {**TINY["train"], "total_games": 760}})
    with pytest.raises(UserError, match=r"has played 800 games"):
        train(between, run_dir, resume=True, progress=False, final_eval=False)
    run_dir = tmp_path / "run2"
    shutil.copytree(finished_run, run_dir)
    longer = from_dict({**TINY, "train": {**TINY["train"], "total_games": 802}})
    summary = train(longer, run_dir, resume=True, progress=True, final_eval=False)
    said = capsys.readouterr()
    assert "train.total_games=802 is not a whole number of updates" in said.err
    assert "plays 804 games (201 updates)" in said.err
    assert "compiling the training step..." in said.err
    assert f"resuming {run_dir} at update 200 (800 of 804 games)" in said.out  # the bar: 99 %
    assert summary["updates"] == 201


def test_stopped_at_once_before_any_checkpoint_says_so(tmp_path, capsys):
    """A second Ctrl-C (the run stops at once) before the first checkpoint: the line says no
    checkpoint was written and that the resume starts from update 0, where it said "the
    newest checkpoint is update None" (found by a review session)."""

    def second_interrupt(point: str, update: int) -> None:
        if point == "after_chunk":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(CONFIG, tmp_path / "run", progress=False, final_eval=False, hook=second_interrupt)
    out = capsys.readouterr().out
    assert "stopped at once; no checkpoint was written yet:" in out and "None" not in out
    assert "starts from update 0" in out


def test_changed_numbers_fail_the_checksum_and_evaluate_falls_back(finished_run, tmp_path):
    """Bytes Orbax would restore without complaint are caught by the stored digest: a step
    directory alone is an error; the run directory falls back to an older checkpoint (and
    leaves the damaged one where it is); with every checkpoint damaged it is one line."""
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    newest = run_dir / LATEST_DIR / "200"
    integrity = next((newest / "integrity").glob("*metadata*"))
    integrity.write_text(json.dumps({"sha256": "0" * 64}))
    with pytest.raises(CheckpointError, match="do not match their checksum"):
        load_checkpoint(newest)
    messages: list[str] = []
    shutil.rmtree(run_dir / BEST_DIR)
    _, _, step = load_checkpoint(run_dir, report=messages.append)
    assert step == 180 and newest.is_dir()
    assert len(messages) == 1 and "checksum" in messages[0]
    _damage(run_dir / LATEST_DIR / "180")
    with pytest.raises(CheckpointError, match="no readable checkpoint") as error:
        load_checkpoint(run_dir, report=messages.append)
    assert "\n" not in str(error.value) and len(str(error.value)) < 600


def _start(config_file: Path, run_dir: Path, resume: bool, fault: str) -> subprocess.Popen:
    """`yahtzee-jax train` in a subprocess whose training loop sends itself `fault`'s signal
    (`tests/faults.py`: POINT:COUNT:SIGNAL:DELAY)."""
    command = [sys.executable, str(FAULTS), fault, "train", "--config", str(config_file)]
    command += ["--out", str(run_dir), "--no-progress"] + (["--resume"] if resume else [])
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)


# (where, which visit, signal, delay in seconds): each kills one process of the chain below.
# SIGINT and SIGTERM finish the chunk, log it, checkpoint and exit 130; SIGKILL stops dead,
# including half-way through an evaluation or an Orbax checkpoint write.
KILL_POINTS = [
    ("after_chunk", 2, "SIGINT", 0.0),  # Ctrl-C while a chunk runs
    ("before_eval", 1, "SIGKILL", 0.0),  # killed as the evaluation starts
    ("before_checkpoint", 1, "SIGKILL", 0.02),  # killed inside the checkpoint write
    ("after_scalars", 2, "SIGTERM", 0.0),  # a scheduler's SIGTERM after the scalars
    ("after_chunk", 1, "SIGKILL", 0.0),  # killed during a chunk
    ("before_checkpoint", 1, "SIGINT", 0.01),  # Ctrl-C inside the checkpoint write
    ("before_eval", 1, "SIGTERM", 0.02),  # SIGTERM during the evaluation
    ("before_checkpoint", 2, "SIGKILL", 0.0),  # after the evaluation, before the checkpoint
    ("after_scalars", 1, "SIGKILL", 0.0),  # killed after the scalars, before the evaluation
]


@pytest.mark.parametrize(
    "kill_points",
    [
        # fast: Ctrl-C inside a chunk and SIGKILL inside the checkpoint write; every signal in
        # every phase (chunk, evaluation, checkpoint write, scalars) in make test-slow
        pytest.param([KILL_POINTS[0], KILL_POINTS[2]], id="two"),
        pytest.param(KILL_POINTS, id="all-nine", marks=pytest.mark.slow),
    ],
)
def test_runs_killed_at_any_moment_resume_with_every_point_logged_once(
    finished_run, tmp_path, kill_points
):
    """A run interrupted 4 (or, in the slow suite, 9) times (SIGINT, SIGTERM, SIGKILL; during a
    chunk, an evaluation, a checkpoint write), resumed after each, ends with the uninterrupted
    run's parameters bit for bit, and its evals.jsonl and TensorBoard scalars hold each expected
    point exactly once."""
    config_file = tmp_path / "tiny.yaml"
    # Every field written out: the CLI lays a --config file over the default preset.
    config_file.write_text(yaml.safe_dump(CONFIG.to_dict()))
    run_dir = tmp_path / "run"
    for index, (point, visit, name, delay) in enumerate(kill_points):
        process = _start(
            config_file, run_dir, resume=index > 0, fault=f"{point}:{visit}:{name}:{delay}"
        )
        output = process.communicate(timeout=300)[0].decode()
        if name == "SIGKILL":
            assert process.returncode == -signal.SIGKILL, output
        else:
            assert process.returncode == 130, output
            assert "continue with --resume" in output
        assert "Traceback" not in output, output
    train(None, run_dir, resume=True, progress=False, final_eval=False)

    resumed, _, resumed_step = load_checkpoint(run_dir)
    reference, _, reference_step = load_checkpoint(finished_run)
    assert resumed_step == reference_step == 200
    assert_trees_equal(resumed["params"], reference["params"])
    assert_trees_equal(resumed["opt_state"], reference["opt_state"])

    points = [(row["update"], row["mean"]) for row in read_evals(run_dir / EVALS_FILE)]
    assert points == [(row["update"], row["mean"]) for row in read_evals(finished_run / EVALS_FILE)]
    sessions = [row["session"] for row in read_evals(run_dir / EVALS_FILE)]
    assert sessions == sorted(sessions) and sessions[-1] > 1  # each row names its sitting
    assert {row["session"] for row in read_evals(finished_run / EVALS_FILE)} == {1}
    scalars, expected = read_scalars(run_dir), read_scalars(finished_run)
    assert scalars.keys() == expected.keys()
    for tag, values in expected.items():
        steps = [step for step, _ in scalars[tag]]
        assert steps == sorted(set(steps)), f"{tag}: a point is missing or repeated"
        assert steps == [step for step, _ in values], tag
        np.testing.assert_allclose([v for _, v in scalars[tag]], [v for _, v in values], rtol=1e-6)
