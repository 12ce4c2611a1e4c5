"""experiments/plot_win_vs_loss.py: the learned match players' win rate against their
shortfall from the optimum, and where its line meets perfect play."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scripts import EXPERIMENTS, load_experiment_script


def test_win_against_loss_line_meets_perfect_play_where_its_derivation_says(
    tmp_path, capsys, monkeypatch
):
    """experiments/plot_win_vs_loss.py: through two players the weighted line passes both
    points, so at a loss of 0 it is (x2 y1 - x1 y2) / (x2 - x1), with variance
    (x2^2 s1^2 + x1^2 s2^2) / (x2 - x1)^2 for binomial variances s^2 = y (1 - y) / n; a third
    point on the same line leaves it where it is; bad specs are refused in one line."""
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    script = load_experiment_script("plot_win_vs_loss")

    def player(name: str, loss: float, rate: float, games: int) -> str:
        match, regret = tmp_path / f"{name}_match.json", tmp_path / f"{name}_regret.json"
        match.write_text(json.dumps({"win_rate": rate, "win_interval_95": [0, 1], "games": games}))
        regret.write_text(json.dumps({"one_turn_loss_per_game": [loss, 0.01]}))
        return f"{name}={match},{regret}"

    out, record = tmp_path / "line.png", tmp_path / "line.json"
    points = [player("a", 1.0, 0.50, 40_000), player("b", 2.0, 0.49, 90_000)]
    assert script.main([*points, "--out", str(out), "--json", str(record)]) == 0
    fit = json.loads(record.read_text())["fit"]
    variance = [0.50 * 0.50 / 40_000, 0.49 * 0.51 / 90_000]
    assert fit["intercept"] == pytest.approx(2.0 * 0.50 - 1.0 * 0.49)
    assert fit["slope"] == pytest.approx(-0.01)
    assert fit["intercept_stderr"] == pytest.approx(np.sqrt(4 * variance[0] + variance[1]))
    assert "at a loss of 0: 51.00 %" in capsys.readouterr().out
    points.append(player("c", 0.5, 0.505, 10_000))
    assert (
        script.main([*points, "--target", "0.5129", "--out", str(out), "--json", str(record)]) == 0
    )
    assert json.loads(record.read_text())["fit"]["intercept"] == pytest.approx(0.51)
    assert out.stat().st_size > 0
    for bad, message in (
        ([points[0].replace(",", ";")], "expected MATCH.json,REGRET.json"),
        ([points[0] + ":three", points[1]], "unknown search depth 'three'"),
        ([points[0]], "a line needs at least two players"),
    ):
        capsys.readouterr()
        assert script.main([*bad, "--out", str(out)]) == 2
        assert message in capsys.readouterr().err
