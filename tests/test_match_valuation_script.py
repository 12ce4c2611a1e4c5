"""experiments/match_valuation_small_games.py: each solve merged into the results file with its
game's summary (shares, points under the best play, what each turn loses), and the tables."""

from __future__ import annotations

import argparse
import json

import pytest
from scripts import EXPERIMENTS, load_experiment_script

from yahtzee_jax.errors import UserError

CEILING = {"win_rate": 0.54, "optimal_win_rate": 0.49}


@pytest.fixture
def script(monkeypatch):
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    return load_experiment_script("match_valuation_small_games")


def test_each_turns_loss_is_the_drop_from_one_turn_to_the_next(script):
    """Best play 52 %, the valuation before turn 1 / 2 then best 51.9 / 51.7 %, throughout
    51.6 %: its turns lose 0.1, 0.2 and 0.1 points; its share of the 5-point gap is 52 %."""
    seats = {"first": {"win": 0.0}, "second": {"win": 0.0}}
    entry = {
        "reference": {"best": {"win": 0.52, "seats": seats}, "ceiling": CEILING},
        "from-turn-1": {"win": 0.519},
        "from-turn-2": {"win": 0.517},
        "weight-1": {"win": 0.516, "seats": seats},
    }
    figures = script.summary(entry)
    assert figures["turn_losses_points"] == pytest.approx([0.1, 0.2, 0.1])
    assert figures["weights"]["1"]["gap_fraction"] == pytest.approx(0.52)
    assert figures["weights"]["1"]["points_under_best"] == pytest.approx(0.4)
    assert figures["best_gap_fraction"] == pytest.approx(0.6)


def test_main_merges_each_solve_and_prints_the_tables(script, tmp_path, monkeypatch, capsys):
    """With the solves replaced by fixed chances (the solve itself: test_match_valuation.py),
    g7's reference, two weights and its six from-turn players land in the file with its
    summary, and --table prints one row per valuation and the losses by turn."""
    chances = {None: 0.52, 1.0: 0.515, 0.5: 0.517}

    def solved(rules, weight, exact_from_turn, seats, threads):
        assert threads == 2  # --threads reaches every solve
        win = chances[weight] if exact_from_turn is None else 0.52 - 0.001 * exact_from_turn
        seat = {"win": win, "seconds": 1.0, "cpu_seconds": 1.0, "peak_rss_bytes": 1}
        return {"seats": dict.fromkeys(seats, seat), "win": win}

    monkeypatch.setattr(script, "seats_win", solved)
    monkeypatch.setattr(script, "ceiling_of", lambda rules: CEILING)
    exact = tmp_path / "results.json"  # no exact figures yet: the best play is solved too
    exact.write_text('{"games": {}}')
    monkeypatch.setattr(script, "EXACT_RESULTS", exact)
    out = tmp_path / "valuations.json"
    command = ["--games", "g7", "--weights", "1", "0.5", "--from-turns", "--threads", "2"]
    script.main([*command, "--out", str(out)])
    entry = json.loads(out.read_text())["games"]["g7"]
    assert {"reference", "weight-1", "weight-0.5", "summary"} <= set(entry)
    assert [f"from-turn-{t}" in entry for t in range(1, 7)] == [True] * 6
    losses = entry["summary"]["turn_losses_points"]
    assert losses[:6] == pytest.approx([0.1] * 6) and losses[6] == pytest.approx(-0.1)
    capsys.readouterr()
    script.main(["--table", "--out", str(out)])
    printed = capsys.readouterr().out
    assert "| g7 | hindsight weight 0.5 |" in printed and "| g7 | 0.100 |" in printed


def test_small_games_with_an_upper_bonus_are_named_on_the_command_line(monkeypatch):
    """`g7-bonus42` is the seven-box game with 35 at 42 upper points; an unknown game is refused
    in one line, naming the games there are."""
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    games = load_experiment_script("match_exact_small_games")
    rules = games.game_rules("g7-bonus42")
    assert (rules.num_boxes, rules.upper_bonus_threshold, rules.upper_bonus_points) == (7, 42, 35)
    assert games.game_rules("g7").upper_bonus_points == 0
    with pytest.raises(argparse.ArgumentTypeError, match=r"unknown game 'g14'.*gN-bonusT"):
        games.game_rules("g14")


def test_the_plan_says_how_often_the_optimal_agent_makes_a_bonus(monkeypatch, tmp_path):
    """`match_exact_small_games.py --plan`: a bonus at 1 point is made in every game (six upper
    boxes all at 0 would be needed to miss it), one at 106 in none (the six hold 105 at most);
    a game without a bonus says nothing of one, and a bonus at 0 is refused in one line."""
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    monkeypatch.setenv("YAHTZEE_JAX_CACHE", str(tmp_path))
    small_games = load_experiment_script("match_exact_small_games")
    plain = small_games.plan_entry("g7", bonus_games=500)
    assert "bonus" not in small_games.plan_line("g7", plain) and "bonus_rate" not in plain
    always = small_games.plan_entry("g7-bonus1", 500)
    assert always["bonus_rate"] == 1.0
    assert "makes the bonus in 100.0 % of 500 games" in small_games.plan_line("g7-bonus1", always)
    assert small_games.plan_entry("g7-bonus106", 500)["bonus_rate"] == 0.0
    with pytest.raises(UserError, match="threshold of 1 or more"):
        small_games.game_rules("g7-bonus0")


def test_a_game_solved_in_one_seat_has_no_share_of_the_gap(script):
    """The ceiling and the optimal agent's rate are both seats' averages: a game solved in its
    first seat alone gets its points under the best play in that seat (52 - 51.8 = 0.2) and no
    share of the gap, and the table says one seat instead of an average."""
    first = {"first": {"win": 0.52, "cpu_seconds": 1.0}}
    entry = {
        "reference": {"best": {"win": 0.52, "seats": first}, "ceiling": CEILING},
        "weight-1": {"win": 0.518, "seats": {"first": {"win": 0.518, "cpu_seconds": 1.0}}},
    }
    entry["summary"] = script.summary(entry)
    assert entry["summary"]["best_gap_fraction"] is None
    assert entry["summary"]["weights"]["1"]["gap_fraction"] is None
    assert entry["summary"]["weights"]["1"]["points_under_best"] == pytest.approx(0.2)
    printed = script.table({"games": {"g7-bonus58": entry}})
    assert (
        "| g7-bonus58 | hindsight weight 1 | 51.80 / not solved / one seat | one seat | 0.200 |"
        in printed
    )


def test_the_plan_is_kept_as_json_with_its_machine(monkeypatch, tmp_path, capsys):
    """`--plan --plan-out FILE` prints each game's line and writes the same figures, with the
    command and machine, to FILE."""
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    small_games = load_experiment_script("match_exact_small_games")
    out = tmp_path / "plan.json"
    monkeypatch.setattr("sys.argv", ["x", "--plan", "--games", "g7", "--plan-out", str(out)])
    small_games.main()
    written = json.loads(out.read_text())
    columns = written["games"]["g7"]["win_columns"]
    assert f"g7: {columns:,} win columns a seat" in capsys.readouterr().out
    assert "--plan-out" in written["machine"]["command"]


def test_merge_joins_one_seat_solves_run_apart(script, tmp_path, capsys):
    """`--merge A B`: g11's first seat (51.60 %, from A, solved without the best play) and its
    second (52.28 %, from B) become one part of both seats winning their average 51.94 %, with
    B's machine as `machine_second_seat` and the best play's reference kept; the summary then
    has both seats' share of the gap. A seat merged again replaces its figures."""

    def one_seat(seat: str, win: float, commit: str) -> dict:
        part = {"win": win, "weight": 1.0, "machine": {"commit": commit}}
        part["seats"] = {seat: {"win": win, "cpu_seconds": 1.0}}
        return {"games": {"g11": {"reference": {"ceiling": CEILING}, "weight-1": part}}}

    first, second, again = (tmp_path / name for name in ("a.json", "b.json", "c.json"))
    first.write_text(json.dumps(one_seat("first", 0.516, "aaa")))
    second.write_text(json.dumps(one_seat("second", 0.5228, "bbb")))
    again.write_text(json.dumps(one_seat("second", 0.5230, "ccc")))
    out = tmp_path / "valuations.json"
    seats = {"first": {"win": 0.517}, "second": {"win": 0.5233}}
    best = {"reference": {"best": {"win": 0.5201, "seats": seats}, "ceiling": CEILING}}
    out.write_text(json.dumps({"games": {"g11": best}}))
    script.main(["--merge", str(first), str(second), "--out", str(out)])
    entry = json.loads(out.read_text())["games"]["g11"]
    part = entry["weight-1"]
    assert part["win"] == pytest.approx(0.5194)
    assert set(part["seats"]) == {"first", "second"}
    assert part["machine"]["commit"] == "aaa" and part["machine_second_seat"]["commit"] == "bbb"
    assert entry["reference"]["best"]["win"] == 0.5201
    # (51.94 - 49) / (54 - 49): the seats' average against the ceiling
    assert entry["summary"]["weights"]["1"]["gap_fraction"] == pytest.approx(0.588)
    assert "| g11 | hindsight weight 1 |" in capsys.readouterr().out
    script.main(["--merge", str(again), "--out", str(out)])
    part = json.loads(out.read_text())["games"]["g11"]["weight-1"]
    assert part["win"] == pytest.approx((0.516 + 0.523) / 2)
    assert part["machine_second_seat"]["commit"] == "ccc"
