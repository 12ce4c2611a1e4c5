"""Collapse detection: a collapsed policy that stops improving stops the run (exit 4), a
healthy confident one never does."""

from __future__ import annotations

import numpy as np
import pytest
from fuzzing import TINY_OVERRIDES, check_one_line, invoke

from yahtzee_jax.runner.collapse import (
    COLLAPSE_PATIENCE,
    CollapseError,
    CollapseWatch,
    collapse_signs,
)
from yahtzee_jax.runner.configs import read_yaml
from yahtzee_jax.runner.runlog import read_evals


def _chunk(roll: float, score: float, gradient: float) -> dict[str, np.ndarray]:
    """The metrics of a chunk's last update (the watch reads only that one)."""
    return {
        "policy/roll_entropy": np.array([roll]),
        "policy/score_entropy": np.array([score]),
        "grad/norm": np.array([gradient]),
    }


def _watch_run(chunks: list[dict], evals: list[float]) -> int | None:
    """Feed one chunk then one evaluation at a time; the evaluation (1-based) that stops the
    run, or None."""
    watch = CollapseWatch(best=None)
    for number, (metrics, mean) in enumerate(zip(chunks, evals, strict=True), 1):
        watch.chunk(metrics, number * 4)
        if watch.evaluation(mean):
            return number
    return None


def test_the_lr_1e6_collapse_stops_at_its_third_stale_evaluation():
    """The readings of a real `optim.lr=1e6` tiny run (quick preset, 4 games per update,
    chunks of 4 updates, an evaluation after each): gradient norms 0.33, 1.5e10, 4.2e14, then
    0 with both entropies at -0.0 from update 2 on; evaluations 48.75, 46.875, 48.625. The
    signs are there at the first chunk's end and no evaluation beats the first: the third
    stops the run. An exploding gradient alone (update 3's) is a sign too."""
    collapsed = _chunk(-0.0, -0.0, 0.0)
    assert _watch_run([collapsed] * 4, [48.75, 46.875, 48.625, 48.0]) == COLLAPSE_PATIENCE == 3
    assert "gradient norm 4.2e+14" in collapse_signs(_chunk(3.4, 1.7, 4.2e14))
    assert collapse_signs(_chunk(3.4, 1.7, 0.33)) is None


def test_a_healthy_confident_late_run_is_never_stopped():
    """Late in a healthy run the policy is confident and the evaluation plateaus: entropies
    of 0.02 and 0.005 nats and a gradient norm of 0.3 show no sign, so 30 evaluations without
    a new best do not stop it. A run whose entropies do fall under the threshold (1e-3) but
    whose evaluation still sets a new best every other time is not stopped either, and signs
    that go away start the count again."""
    confident = _chunk(0.02, 0.005, 0.3)
    plateau = [240.0] + [239.0] * 29
    assert _watch_run([confident] * 30, plateau) is None
    deterministic = _chunk(5e-4, 2e-4, 0.1)
    improving = [200.0 + (number // 2) for number in range(30)]  # a new best every other one
    assert _watch_run([deterministic] * 30, improving) is None
    flickering = [deterministic, deterministic, confident] * 10
    assert _watch_run(flickering, [100.0] * 30) is None


def test_collapse_error_has_its_own_exit_status():
    """Exit status 4: not 2 (bad input) nor 3 (divergence)."""
    assert CollapseError.exit_status == 4


def _tiny_argv(run_dir, *overrides: str) -> list[str]:
    argv = ["train", "--preset", "quick", "--out", str(run_dir), "--no-progress"]
    every = [*TINY_OVERRIDES, "train.total_games=160", "train.eval_fraction=0.1", *overrides]
    return argv + [item for override in every for item in ("--set", override)]


@pytest.mark.slow
def test_lr_1e6_stops_with_exit_4_and_allow_collapse_trains_on(tmp_path):
    """The tiny run with optim.lr=1e6 (40 updates, an evaluation every 4): it collapses at
    update 2 and stops at update 12 with exit 4 and one error line (after the collapse
    warning), its checkpoint of update 12 saved; resumed with --set
    train.allow_collapse=true it trains to update 40."""
    run_dir = tmp_path / "run"
    status, stderr = invoke(_tiny_argv(run_dir, "optim.lr=1e6"))
    assert status == 4, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("yahtzee-jax train: error")]
    assert len(errors) == 1 and "stopped at update 12" in errors[0], stderr
    assert [row["update"] for row in read_evals(run_dir / "evals.jsonl")] == [4, 8, 12]
    assert (run_dir / "checkpoints" / "12").is_dir()
    argv = ["train", "--resume", "--out", str(run_dir), "--no-progress"]
    status, stderr = invoke([*argv, "--set", "train.allow_collapse=true"])
    check_one_line(status, stderr, allowed=(0,))
    assert read_yaml(run_dir / "config.yaml")["train"]["allow_collapse"] is True
    assert read_evals(run_dir / "evals.jsonl")[-1]["update"] == 40
