"""A short CPU training run learns (it beats the random agent by a wide margin); the
learning-curve script plots one or several runs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scripts import load_experiment_script

from yahtzee_jax.agents import make_random_agent
from yahtzee_jax.evaluation.records import play_games
from yahtzee_jax.runner.checkpointing import load_checkpoint
from yahtzee_jax.runner.configs import resolve
from yahtzee_jax.runner.loop import EVAL_SEED_OFFSET, network_agent
from yahtzee_jax.runner.single_run import EVALS_FILE, SUMMARY_FILE, train


# make test-slow (issue 45: make test within 10 minutes); 25-50 s on the idle 2-core EPYC
@pytest.mark.slow
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
    random_mean = float(np.mean(play_games(make_random_agent("official"), 500, seed=1).total))
    trained_mean = summary["last_eval"]["mean"]
    assert trained_mean > 2 * random_mean, (trained_mean, random_mean)
    rows = [json.loads(line) for line in (tmp_path / EVALS_FILE).read_text().splitlines()]
    assert [row["update"] for row in rows] == [75, 150]
    # the last row's games replayed from the final checkpoint: its mean and upper-bonus rate
    params, _, step = load_checkpoint(tmp_path)
    replay = play_games(
        network_agent(config, params["params"]),
        rows[-1]["num_games"],
        config.train.seed + EVAL_SEED_OFFSET,
    )
    assert step == 150
    assert rows[-1]["mean"] == pytest.approx(float(np.mean(replay.total)))
    assert rows[-1]["upper_bonus_rate"] == pytest.approx(float(np.mean(replay.upper_bonus)))
    assert json.loads((tmp_path / SUMMARY_FILE).read_text())["updates"] == 150
    assert (tmp_path / "config.yaml").exists() and (tmp_path / "learning_curve.png").exists()
    assert list(tmp_path.glob("events.out.tfevents.*"))


@pytest.mark.parametrize(
    ("name", "games"),
    [
        pytest.param("reinforce", 25600, id="reinforce", marks=pytest.mark.slow),
        pytest.param("ppo", 9600, id="ppo", marks=pytest.mark.slow),
    ],
)
def test_short_run_of_each_learner_beats_random(name, games, tmp_path):
    """REINFORCE (25,600 games: Monte-Carlo returns learn slower) and PPO (9,600 games) with the
    quick preset's network (slow: their updates are checked fast by the golden and chunk tests):
    the argmax policy's mean over 500 games is more than twice the random agent's (about 46)."""
    overrides = [f"algo.name={name}", f"train.total_games={games}", "train.eval_fraction=1.0"]
    config = resolve("quick", overrides=[*overrides, "train.final_eval_games=0"])
    summary = train(config, tmp_path, progress=False)
    random_mean = float(np.mean(play_games(make_random_agent("official"), 500, seed=1).total))
    assert summary["last_eval"]["mean"] > 2 * random_mean, (summary["last_eval"], random_mean)


# make test-slow (issue 45: make test within 10 minutes); 25-50 s on the idle 2-core EPYC
@pytest.mark.slow
def test_short_single_turn_run_learns_the_turn(tmp_path):
    """Single-turn REINFORCE, 6,400 games' worth of turns (100 updates of 832 turns): the final
    report scores 2,000 single turns at more than 3x the random agent's share of the optimum
    (random plays about 16 % of it) and plays full games far above random."""
    overrides = [
        "env.id=YahtzeeSingleTurn-v0",
        "algo.name=reinforce",
        "train.total_games=6400",
        "train.eval_fraction=1.0",
        "train.final_eval_games=2000",
    ]
    summary = train(resolve("quick", overrides=overrides), tmp_path, progress=False)
    single_turn = summary["single_turn_eval"]
    assert single_turn["turns"] == 2000
    assert single_turn["percent_of_optimum"] > 3 * 16, single_turn
    assert summary["final_eval"]["mean"] > 2 * 46, summary["final_eval"]


def test_learning_curves_against_wall_time():
    """With x_axis="wall" each line is drawn at its evaluations' wall times in minutes, and an
    unknown axis is refused."""
    from yahtzee_jax.evaluation.plots import learning_curves_figure

    rows = [
        {"games": 1000 * k, "wall_s": 60.0 * k, "num_games": 10, "mean": 100.0 + k, "std": 1.0}
        for k in (1, 2, 4)
    ]
    figure = learning_curves_figure({"a": rows, "b": rows}, "t", x_axis="wall")
    axis = figure.axes[0]
    assert axis.get_xlabel() == "wall time (minutes)"
    assert list(axis.lines[0].get_xdata()) == [1.0, 2.0, 4.0]
    by_games = learning_curves_figure({"a": rows}, "t").axes[0]
    assert list(by_games.lines[0].get_xdata()) == [1000, 2000, 4000]
    with pytest.raises(ValueError, match="x_axis"):
        learning_curves_figure({"a": rows}, "t", x_axis="updates")


def test_learning_curve_script_compares_runs(tmp_path, capsys, monkeypatch):
    """experiments/plot_learning_curve.py overlays several runs with a reference line, names
    the lines by --label, and answers a run without evaluations, a malformed reference or a
    wrong number of labels with exit status 2."""
    script = load_experiment_script("plot_learning_curve")
    for name, offset in (("run_a", 0.0), ("run_b", 5.0)):
        rows = [
            {
                "update": k,
                "games": 20 * k,
                "wall_s": 6.0 * k,
                "num_games": 100,
                "mean": 50 + k + offset,
                "std": 9.0,
            }
            for k in (10, 20, 30)
        ]
        (tmp_path / name).mkdir()
        (tmp_path / name / EVALS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "both.png"
    argv = [str(tmp_path / "run_a"), str(tmp_path / "run_b"), "--out", str(out)]
    assert script.main([*argv, "--reference", "paper=230.38"]) == 0
    assert out.stat().st_size > 0
    wall = tmp_path / "wall.png"
    assert script.main([*argv[:2], "--out", str(wall), "--x", "wall"]) == 0
    assert wall.stat().st_size > 0
    assert script.main([str(tmp_path / "run_a")]) == 0
    assert (tmp_path / "run_a" / "learning_curve.png").exists()
    (tmp_path / "empty").mkdir()
    assert script.main([str(tmp_path / "run_a"), str(tmp_path / "empty")]) == 2
    drawn = {}
    monkeypatch.setattr(script, "plot_learning_curves", lambda curves, *_: drawn.update(curves))
    assert script.main([*argv, "--label", "with dropout", "--label", "without"]) == 0
    assert list(drawn) == ["with dropout", "without"] and drawn["without"][0]["mean"] == 65.0
    assert script.main([*argv, "--label", "only one"]) == 2  # one name for two runs
    assert script.main([*argv, "--label", "same", "--label", "same"]) == 2
    assert "no evaluations" in capsys.readouterr().err
    with pytest.raises(SystemExit) as error:
        script.main([*argv, "--reference", "paper"])
    assert error.value.code == 2


def test_wall_time_follows_the_session_each_row_names():
    """A resumed session whose first evaluation comes later on its own clock than the earlier
    session's last (a short first session) cannot be told by the clock: the rows' `session`
    numbers tell it, and rows written before rows carried one still go by the clock."""
    from yahtzee_jax.runner.runlog import training_wall

    short_first = [{"wall_s": 100.0, "session": 1}]
    later = [{"wall_s": 150.0, "session": 2}, {"wall_s": 250.0, "session": 2}]
    assert training_wall(short_first + later) == [100.0, 250.0, 350.0]
    unnumbered = [{"wall_s": 100.0}, {"wall_s": 50.0}]  # an old run: the clock went back
    assert training_wall([*unnumbered, {"wall_s": 120.0, "session": 3}]) == [100.0, 150.0, 270.0]
    assert training_wall([{"wall_s": 1.0}, {"games": 2}]) is None


def test_wall_time_of_a_resumed_run_runs_on_across_its_sessions(tmp_path, capsys, monkeypatch):
    """Each session's evaluations log `wall_s` from that session's start: `--x wall` draws a
    run resumed after 300 s (its last evaluation at 300 s, a kill losing what came after) at
    300 s plus the new session's clock, never back in time; a row without `wall_s` is refused
    in one line."""
    script = load_experiment_script("plot_learning_curve")
    first = [
        {"games": 100 * k, "wall_s": 100.0 * k, "num_games": 10, "mean": 50.0, "update": k}
        for k in (1, 2, 3)
    ]
    second = [
        {"games": 100 * k, "wall_s": 100.0 * (k - 3), "num_games": 10, "mean": 60.0, "update": k}
        for k in (4, 5)
    ]
    (tmp_path / "run").mkdir()
    evals = tmp_path / "run" / EVALS_FILE
    evals.write_text("".join(json.dumps(row) + "\n" for row in first + second))
    drawn = {}
    monkeypatch.setattr(script, "plot_learning_curves", lambda curves, *_: drawn.update(curves))
    assert script.main([str(tmp_path / "run"), "--x", "wall"]) == 0
    assert [row["wall_s"] for row in drawn["run"]] == [100.0, 200.0, 300.0, 400.0, 500.0]
    evals.write_text(json.dumps({"update": 1, "games": 1, "num_games": 1, "mean": 1.0}) + "\n")
    capsys.readouterr()
    assert script.main([str(tmp_path / "run"), "--x", "wall"]) == 2
    assert "a row without wall_s; use --x games" in capsys.readouterr().err
