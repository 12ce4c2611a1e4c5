"""The win rate by the opponent's final score: the match JSON's bins and the picture's curves."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scripts import EXPERIMENTS, load_experiment_script

from yahtzee_jax.evaluation.matches import by_opponent_score


def test_bins_count_each_match_by_the_best_opponents_score():
    """Four hand-made matches: scores 5 (won), 12 (drawn), 19 (lost), 250 (won) fall in bins
    0, 1, 1 and 25 of 10 points."""
    bins = by_opponent_score(np.array([1, 0, -1, 1]), np.array([5, 12, 19, 250]))
    assert bins["bin_points"] == 10
    assert bins["games"][:2] == [1, 2] and bins["games"][25] == 1 and sum(bins["games"]) == 4
    assert bins["wins"][0] == 1 and bins["wins"][1] == 0 and bins["wins"][25] == 1
    assert bins["draws"][1] == 1 and sum(bins["draws"]) == 1


def test_the_picture_reads_each_players_bins_and_the_exact_rows(tmp_path, monkeypatch, capsys):
    """A player with 400 matches at 200-209 (300 won) and 100 at 300-309 (all lost): with the
    300-match floor only the first bin is drawn, at 204.5 with 0.75 inside its Wilson interval;
    the exact curves are the rows moved by one (T(y + 1)); a file without bins is refused."""
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    script = load_experiment_script("plot_win_by_opponent_score")
    games, wins = [0] * 31, [0] * 31
    games[20], wins[20], games[30] = 400, 300, 100
    match = tmp_path / "p.json"
    match.write_text(
        json.dumps(
            {
                "win_rate": 0.6,
                "by_opponent_score": {"bin_points": 10, "games": games, "wins": wins},
            }
        )
    )
    best, follow = np.linspace(1, 0, 400), np.linspace(1, 0, 400) ** 2
    monkeypatch.setattr(
        "yahtzee_jax.solver.ceiling.start_rows", lambda rules, cache: (best, follow)
    )
    out, curves = tmp_path / "w.png", tmp_path / "w.json"
    assert script.main([f"me={match}", "--out", str(out), "--json", str(curves)]) == 0
    (player,) = json.loads(curves.read_text())["players"]
    assert player["score"] == [204.5] and player["win_rate"] == [0.75]
    low, high = player["interval"][0]
    assert low < 0.75 < high and player["games"] == 500
    assert out.stat().st_size > 0
    exact = script.exact_curves("official", None)
    assert exact["oracle"][10] == pytest.approx(best[11])
    assert sum(exact["opponent"]) == pytest.approx(1.0 - follow[-1])
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert script.main([f"x={bad}", "--out", str(out)]) == 2
    assert "no wins by opponent score" in capsys.readouterr().err
