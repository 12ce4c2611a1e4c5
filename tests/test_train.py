"""A short CPU training run learns: it beats the random agent by a wide margin."""

from __future__ import annotations

import json

import numpy as np

from yahtzee_jax.agents import make_random_agent
from yahtzee_jax.config import resolve
from yahtzee_jax.evaluate import play_games
from yahtzee_jax.train import EVALS_FILE, SUMMARY_FILE, train


def test_short_run_beats_random_by_a_wide_margin(tmp_path):
    """9,600 games (150 updates of 64) with the quick preset's 128-wide network: the argmax
    policy's mean over 500 games is more than twice the random agent's (about 46), and the run
    directory holds the config, events, evaluations, learning curve and summary."""
    config = resolve(
        "quick",
        overrides=[
            "train.total_games=9600",
            "train.eval_fraction=0.5",
            "train.final_eval_games=0",
        ],
    )
    summary = train(config, tmp_path, progress=False)
    random_mean = float(np.mean(play_games(make_random_agent(), 500, seed=1).total))
    trained_mean = summary["last_eval"]["mean"]
    assert trained_mean > 2 * random_mean, (trained_mean, random_mean)
    rows = [json.loads(line) for line in (tmp_path / EVALS_FILE).read_text().splitlines()]
    assert [row["update"] for row in rows] == [75, 150]
    assert json.loads((tmp_path / SUMMARY_FILE).read_text())["updates"] == 150
    assert (tmp_path / "config.yaml").exists() and (tmp_path / "learning_curve.png").exists()
    assert list(tmp_path.glob("events.out.tfevents.*"))
