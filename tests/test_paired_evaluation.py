"""experiments/paired_evaluation.py: two runs on the same deals, their paired difference."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
from scripts import load_experiment_script

from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.runner.checkpointing import RunCheckpoints
from yahtzee_jax.runner.configs import resolve
from yahtzee_jax.runner.loop import solitaire_evaluation

TINY = ["network.hidden_size=16", "train.seed=4"]


def saved_run(path, overrides: list[str], shift: float):
    """A run folder holding one checkpoint: a fresh network's weights moved by `shift`."""
    config = resolve("cpu-ppo", None, overrides)
    state = init_train_state(make_context(config))
    state = state.replace(params=jax.tree.map(lambda leaf: leaf + shift, state.params))
    RunCheckpoints(path, 1).save(7, state, config, None)
    return config, state.params


def test_paired_difference_is_the_difference_of_both_runs_on_the_base_runs_deals(tmp_path, capsys):
    """Two different networks: each mean equals the run's own evaluation on the base run's
    final-evaluation seed (train.seed + 2), the difference is theirs; a run against itself
    differs by exactly 0 in every game."""
    script = load_experiment_script("paired_evaluation")
    base_config, base_params = saved_run(tmp_path / "a", TINY, 0.0)
    other_config, other_params = saved_run(tmp_path / "b", [*TINY[:1], "train.seed=9"], 0.3)
    out = tmp_path / "paired.json"
    argv = [str(tmp_path / "a"), str(tmp_path / "b"), "--games", "64", "--json", str(out)]
    assert script.main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result == json.loads(out.read_text())
    base, _ = solitaire_evaluation(base_config, base_params, 64, 6)
    other, _ = solitaire_evaluation(other_config, other_params, 64, 6)
    assert result["base"]["games_seed"] == result["other"]["games_seed"] == 6
    assert result["base_mean"] == pytest.approx(float(np.mean(base)))
    assert result["other_mean"] == pytest.approx(float(np.mean(other)))
    assert result["difference"] == pytest.approx(float(np.mean(other) - np.mean(base)))
    assert result["difference"] != 0 and result["machine"]["cpu"]

    assert script.main([str(tmp_path / "a"), str(tmp_path / "a"), "--games", "64"]) == 0
    itself = json.loads(capsys.readouterr().out)
    assert itself["difference"] == itself["difference_stderr"] == 0.0
    assert itself["same_score_share"] == 1.0


def test_paired_evaluation_refuses_a_missing_run_in_one_line(tmp_path, capsys):
    """A folder without a checkpoint: exit 2 and one line naming it."""
    script = load_experiment_script("paired_evaluation")
    (tmp_path / "empty").mkdir()
    assert script.main([str(tmp_path / "empty"), str(tmp_path / "empty")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: no checkpoint found in") and "\n" not in error
