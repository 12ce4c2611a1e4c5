"""Tournaments: seats, the Wilson interval by hand, a consistent matrix, and the command."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from yahtzee_jax.cli import main
from yahtzee_jax.tournament import (
    first_agent_seats,
    play_pair,
    round_robin,
    seat_totals,
    wilson_interval,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_wilson_interval_by_hand() -> None:
    """7 wins in 10 games, z = 1.96: p = 0.7, z^2 = 3.8416, 1 + z^2/n = 1.38416,
    centre (0.7 + 0.19208) / 1.38416 = 0.644492,
    half-width 1.96 / 1.38416 * sqrt(0.021 + 0.009604) = 0.247719 -> [0.396773, 0.892211]."""
    low, high = wilson_interval(7, 10, z=1.96)
    assert low == pytest.approx(0.396773, abs=1e-6)
    assert high == pytest.approx(0.892211, abs=1e-6)


def test_wilson_interval_at_the_ends_and_mirrored() -> None:
    """0 of 20: [0, z^2 / (n + z^2)]; 20 of 20 mirrors it; k of n mirrors n - k of n."""
    z = 1.959963984540054
    low, high = wilson_interval(0, 20)
    assert low == 0.0 and high == pytest.approx(z * z / (20 + z * z))
    assert wilson_interval(20, 20) == pytest.approx((1 - high, 1.0))
    low3, high3 = wilson_interval(3, 11)
    assert wilson_interval(8, 11) == pytest.approx((1 - high3, 1 - low3))
    with pytest.raises(ValueError):
        wilson_interval(0, 0)


def test_seats_alternate_and_results_map_back_to_agents() -> None:
    """Four games, A first in games 0 and 2, second in 1 and 3:

    game  A   B   seat 0  seat 1  winner
    0     10  20  A 10    B 20    B (B sat second)
    1     30  20  B 20    A 30    A (A sat second)
    2     25  25  A 25    B 25    draw
    3     40  50  B 50    A 40    B (B sat first)
    """
    a = np.array([10, 30, 25, 40])
    b = np.array([20, 20, 25, 50])
    assert first_agent_seats(4).tolist() == [0, 1, 0, 1]
    assert seat_totals(a, b).tolist() == [[10, 20], [20, 30], [25, 25], [50, 40]]
    pair = play_pair("A", a, "B", b)
    assert (pair.a_wins, pair.b_wins, pair.draws) == (1, 2, 1)
    assert pair.a_wins_by_seat == (0, 1)
    assert pair.b_wins_by_seat == (1, 1)
    assert pair.mean_margin == pytest.approx((-10 + 10 + 0 - 10) / 4)
    assert pair.win_rate("A") == 0.25 and pair.win_rate("B") == 0.5 and pair.draw_rate == 0.25


def test_swapping_the_pair_order_swaps_the_counts() -> None:
    """B vs A over the same games: B now sits first in even games; the counts trade places."""
    a = np.array([10, 30, 25, 40, 7])
    b = np.array([20, 20, 25, 50, 3])
    forward, backward = play_pair("A", a, "B", b), play_pair("B", b, "A", a)
    assert (backward.a_wins, backward.b_wins, backward.draws) == (
        forward.b_wins,
        forward.a_wins,
        forward.draws,
    )
    # A's seat in each game flips, so its wins by seat trade places too.
    assert backward.b_wins_by_seat == forward.a_wins_by_seat[::-1]
    assert backward.mean_margin == -forward.mean_margin


def test_matrix_is_consistent_and_transposes_with_agent_order() -> None:
    """Three agents over 9 games with ties: off the diagonal p(r beats c) + p(c beats r) +
    draws(r, c) = 1, draws are symmetric, the diagonal is empty, and listing the agents in
    another order permutes the matrix the same way."""
    rng = np.random.default_rng(0)
    totals = {name: rng.integers(0, 4, size=9) for name in ("x", "y", "z")}
    tournament = round_robin(totals, "official", 0)
    wins, draws = tournament.win_matrix(), tournament.draw_matrix()
    off = ~np.eye(3, dtype=bool)
    assert np.allclose((wins + wins.T + draws)[off], 1.0)
    assert np.array_equal(draws[off], draws.T[off])
    assert np.isnan(wins[~off]).all() and np.isnan(draws[~off]).all()
    assert draws[off].max() > 0  # the test exercises ties
    reordered = round_robin({name: totals[name] for name in ("z", "x", "y")}, "official", 0)
    order = [2, 0, 1]
    assert np.allclose(reordered.win_matrix()[off], wins[np.ix_(order, order)][off])


def test_pair_of_different_lengths_uses_the_common_games() -> None:
    """A slow agent played fewer games: the pair uses the first min(n_a, n_b) games."""
    pair = play_pair("A", np.array([5, 5, 5, 5]), "B", np.array([1, 9]))
    assert pair.games == 2 and (pair.a_wins, pair.b_wins) == (1, 1)


def test_tournament_command_writes_matrix_markdown_and_heatmap(tmp_path, capsys) -> None:
    """random vs greedy1, 60 games: the printed tables, the JSON matrix, markdown, PNG.

    greedy1 beats random in nearly every game (Kang & Schroeder: 98 %), and every game index is
    the same dice stream for both, so the JSON's counts add up to the games."""
    out = tmp_path / "t"
    argv = ["tournament", "random", "greedy1", "--games", "60", "--seed", "3",
            "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Win rate of the row agent" in printed and "Mean score" in printed
    result = json.loads((out / "tournament.json").read_text())
    assert result["agents"] == ["random", "greedy1"]
    (pair,) = result["pairs"]
    assert pair["a_wins"] + pair["b_wins"] + pair["draws"] == pair["games"] == 60
    assert result["win_matrix"][1][0] == pair["b_win_rate"] > 0.8
    low, high = pair["b_win_interval"]
    assert low < pair["b_win_rate"] < high or math.isclose(high, 1.0)
    assert result["mean_scores"]["greedy1"]["mean"] > result["mean_scores"]["random"]["mean"]
    assert "| greedy1 |" in (out / "tournament.md").read_text()
    assert (out / "win_rates.png").read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["random"], "at least two agents"),
        (["random", "random"], "each agent may appear once"),
        (["random", "nonsense"], "unknown agent"),
        (["random", "greedy1", "--games-for", "optimal=10"], "not in the tournament"),
        (["random", "greedy1", "--games", "0"], "at least 1"),
    ],
)
def test_tournament_bad_input_is_one_line_exit_2(argv, message, tmp_path, capsys) -> None:
    """Bad agent lists and counts: exit status 2 and one line naming the problem."""
    assert main(["tournament", *argv, "--out", str(tmp_path / "t"), "--no-progress"]) == 2
    error = capsys.readouterr().err.strip()
    assert message in error and "\n" not in error
