"""Tournaments: seats, the Wilson interval by hand, a consistent matrix, and the command."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from yahtzee_jax.commands.cli import main
from yahtzee_jax.evaluation.round_robin import (
    first_agent_seats,
    games_needed,
    match_pair,
    play_pair,
    round_robin,
    seat_game_indices,
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
    # Exactly 1 and 0, as the formula gives (10 of 10 reached 0.9999999999999999 and 0 of 7 a
    # low end above 0 by round-off: found in review).
    assert wilson_interval(10, 10)[1] == 1.0 and wilson_interval(0, 7)[0] == 0.0
    low3, high3 = wilson_interval(3, 11)
    assert wilson_interval(8, 11) == pytest.approx((1 - high3, 1 - low3))
    with pytest.raises(ValueError):
        wilson_interval(0, 0)


def test_dice_streams_of_the_seats() -> None:
    """Independent dice: seat s of pair game i plays solitaire game 2i + s (never the other
    seat's); common dice: both seats play game i. Either way a prefix of N games is the same
    for any larger N, so a slow agent's shorter run (`--games-for`) meets the same dice."""
    assert seat_game_indices(3, "independent").tolist() == [[0, 1], [2, 3], [4, 5]]
    assert seat_game_indices(3, "common").tolist() == [[0, 0], [1, 1], [2, 2]]
    assert np.array_equal(
        seat_game_indices(5, "independent")[:3], seat_game_indices(3, "independent")
    )
    assert games_needed(3, "independent") == 6 and games_needed(3, "common") == 3


def test_seats_alternate_and_results_map_back_to_agents() -> None:
    """Four games; a_by_seat[i, s] is A's total with the dice of seat s in game i.

        game  A seat  seat 0 total  seat 1 total  winner
        0     0       A 10          B 20          B (B sat second)
        1     1       B 20          A 30          A (A sat second)
        2     0       A 25          B 25          draw
        3     1       B 50          A 40          B (B sat first)

    The totals A or B would have made in the other seat (99 and 0) must not count."""
    a_by_seat = np.array([[10, 99], [99, 30], [25, 99], [99, 40]])
    b_by_seat = np.array([[0, 20], [20, 0], [0, 25], [50, 0]])
    assert first_agent_seats(4).tolist() == [0, 1, 0, 1]
    assert seat_totals(a_by_seat, b_by_seat).tolist() == [[10, 20], [20, 30], [25, 25], [50, 40]]
    pair = play_pair("A", a_by_seat, "B", b_by_seat)
    assert (pair.a_wins, pair.b_wins, pair.draws) == (1, 2, 1)
    assert pair.a_wins_by_seat == (0, 1)
    assert pair.b_wins_by_seat == (1, 1)
    assert pair.mean_margin == pytest.approx((-10 + 10 + 0 - 10) / 4)
    assert pair.win_rate("A") == 0.25 and pair.win_rate("B") == 0.5 and pair.draw_rate == 0.25


def test_swapping_the_pair_order_swaps_seats_and_counts() -> None:
    """B vs A over the same dice: B now sits first in even games, so each agent plays the other
    seat's dice; with common dice (both seats alike) the counts simply trade places."""
    a = np.array([10, 30, 25, 40, 7])
    b = np.array([20, 20, 25, 50, 3])
    common_a, common_b = np.stack([a, a], axis=1), np.stack([b, b], axis=1)
    forward = play_pair("A", common_a, "B", common_b)
    backward = play_pair("B", common_b, "A", common_a)
    assert (backward.a_wins, backward.b_wins, backward.draws) == (
        forward.b_wins,
        forward.a_wins,
        forward.draws,
    )
    assert backward.b_wins_by_seat == forward.a_wins_by_seat[::-1]
    assert backward.mean_margin == -forward.mean_margin
    # Independent dice: A strong with seat 0's dice only. First in even games, A wins those;
    # listed second, A sits first in the odd games instead and wins those.
    a_by_seat = np.array([[100, 0]] * 4)
    b_by_seat = np.full((4, 2), 50)
    assert play_pair("A", a_by_seat, "B", b_by_seat).a_wins_by_seat == (2, 0)
    assert play_pair("B", b_by_seat, "A", a_by_seat).b_wins_by_seat == (2, 0)


@pytest.mark.parametrize("dice", ["independent", "common"])
def test_matrix_is_consistent_and_transposes_with_agent_order(dice: str) -> None:
    """Three agents' solitaire totals with ties: off the diagonal p(r beats c) + p(c beats r) +
    draws(r, c) = 1, draws are symmetric, the diagonal is empty; with common dice listing the
    agents in another order permutes the matrix the same way."""
    rng = np.random.default_rng(0)
    totals = {name: rng.integers(0, 4, size=18) for name in ("x", "y", "z")}
    tournament = round_robin(totals, "official", 0, dice)
    assert {pair.games for pair in tournament.pairs.values()} == {18 // games_needed(1, dice)}
    wins, draws = tournament.win_matrix(), tournament.draw_matrix()
    off = ~np.eye(3, dtype=bool)
    assert np.allclose((wins + wins.T + draws)[off], 1.0)
    assert np.array_equal(draws[off], draws.T[off])
    assert np.isnan(wins[~off]).all() and np.isnan(draws[~off]).all()
    assert draws[off].max() > 0  # the test exercises ties
    reordered = round_robin({name: totals[name] for name in ("z", "x", "y")}, "official", 0, dice)
    permuted = wins[np.ix_([2, 0, 1], [2, 0, 1])]
    # Seats matter only through their dice: equal under common dice; with independent dice the
    # agent listed first gets seat 0's dice in even games, so the order may change the games.
    if dice == "common":
        assert np.allclose(reordered.win_matrix()[off], permuted[off])


def test_pair_of_different_lengths_uses_the_common_games() -> None:
    """A slow agent played fewer games: the pair uses the first min(n_a, n_b) games."""
    a_by_seat = np.array([[5, 5]] * 4)
    b_by_seat = np.array([[1, 1], [9, 9]])
    pair = play_pair("A", a_by_seat, "B", b_by_seat)
    assert pair.games == 2 and (pair.a_wins, pair.b_wins) == (1, 1)


def test_tournament_command_writes_matrix_markdown_and_heatmap(tmp_path, capsys) -> None:
    """random vs greedy1, 60 games: the printed tables, the JSON matrix, markdown, PNG.

    greedy1 beats random in nearly every game (Kang & Schroeder: 98 %); the JSON's counts add
    up to the games, and each agent played 120 solitaire games (one per seat and game)."""
    out = tmp_path / "t"
    argv = ["tournament", "random", "greedy1", "--games", "60", "--seed", "3",
            "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Win rate of the row agent" in printed and "Mean score" in printed
    assert "one stream per seat, 2N games" in printed  # why 2N, which went unsaid
    result = json.loads((out / "tournament.json").read_text())
    assert result["agents"] == ["random", "greedy1"] and result["dice"] == "independent"
    assert result["mean_scores"]["random"]["games"] == 120  # seat 0's and seat 1's dice
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


def test_a_pair_with_an_agent_that_reads_its_opponent_is_played_as_real_matches() -> None:
    """`match_pair` of the random agent marked as reading the other cards (it ignores them)
    against the random agent: wins, draws, seats and margin equal `evaluate_agent_matches` on
    the same seed, and `round_robin` takes that pair as played while scoring another from
    solitaire games (the tournament command with the win-seeker: `test_win_seeker.py`, slow).
    Random against random wins some and loses some (greedy1 against greedy2 lost all 12, in
    four times the compile time), so the seats and results compared are not all alike."""
    from yahtzee_jax.agents import builtin_agent
    from yahtzee_jax.evaluation.matches import evaluate_agent_matches
    from yahtzee_jax.game.rules import OFFICIAL

    random = builtin_agent("random", OFFICIAL)
    reader = dataclasses.replace(random, name="reader", reads_others=True)
    pair, reader_totals, random_totals = match_pair(reader, random, 12, seed=4, batch_size=12)
    assert 0 < pair.a_wins < 12 and pair.b_wins > 0
    alone = evaluate_agent_matches(reader, "random", 12, seed=4, batch_size=12)
    assert (pair.a_wins, pair.draws, pair.b_wins) == (
        alone["wins"],
        alone["draws"],
        alone["losses"],
    )
    assert list(pair.a_wins_by_seat) == alone["wins_by_seat"]
    assert pair.mean_margin == pytest.approx(alone["mean_margin"])
    totals = {"reader": reader_totals, "random": random_totals, "solitaire": np.arange(24)}
    matched = {("reader", "random"): pair}
    tournament = round_robin(totals, "official", 4, "independent", matched)
    assert tournament.matched == (("reader", "random"),)
    assert tournament.pairs[("reader", "random")] is pair
    assert tournament.pairs[("reader", "solitaire")].games == 6  # 12 games deal 6 in two seats
