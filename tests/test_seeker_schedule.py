"""The target-seeker's hindsight schedule and its calibration (`solver.seeker_policy`,
`experiments/seeker_calibration.py`).

Plain rules with the target tables of the last two layers (`test_target_seeker.tables`); the
chances are enumerated in plain Python (`game.reference`), sharing nothing with the module.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from positions import card_without
from scripts import load_experiment_script
from test_ceiling import optimal_distribution
from test_target_seeker import RULES, rival_mass, stacked, state_of, tables
from test_targets import brute_force_chances, partial

from yahtzee_jax.errors import UserError
from yahtzee_jax.game import reference
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS
from yahtzee_jax.solver.seeker_policy import (
    chosen_turn_end,
    hindsight_share,
    schedule_from_file,
    seeker_tables,
)


def test_the_chosen_turn_end_is_valued_by_both_enumerated_chances():
    """Chance and fours open, my roll 4-4-4-4-6 at its score decision, the opponent (24 in
    sixes) with its last turn to come: for each box written, W_T = sum_y P(Y = y) T(y + 1 -
    total) with T the enumerated best chance of the box left, and W_E the same sum with the
    enumerated chance of expected-score play; a keep is NaN. After fours the two differ (the
    chance box played for a target or for its mean), so each reads its own table."""
    mine = card_without("chance", "fours")
    rival = card_without("chance", sixes=24)
    mass = rival_mass([rival])
    own = state_of(mine, (4, 4, 4, 4, 6), 2)
    others = stacked(state_of(rival))
    for box, points in (("fours", 16), ("chance", 22)):
        after = {**mine, box: points}
        total = reference.final_score(after, 0)
        need = np.clip(np.arange(1000) + 1 - total, 0, 101)
        best = np.append(brute_force_chances(after, "plain", 100), 0.0)
        spread = optimal_distribution(after, "plain", 100)
        expected = np.append(np.cumsum(spread[::-1])[::-1], 0.0)  # P(F >= d)
        action = NUM_KEEP_ACTIONS + RULES.box_names.index(box)
        by_target, by_expected = chosen_turn_end(tables(1.0), own, others, action, RULES)
        assert float(by_target) == pytest.approx(mass @ best[need], abs=2e-6)
        assert float(by_expected) == pytest.approx(mass @ expected[need], abs=2e-6)
        gap = float(by_target) - float(by_expected)
        assert gap > 0.01 if box == "fours" else gap == pytest.approx(0.0, abs=1e-6)
    keep = chosen_turn_end(tables(1.0), state_of(mine, roll_index=1), others, 3, RULES)
    assert np.isnan(keep).all()


def test_the_share_is_the_schedules_weight_of_my_turn_and_seat_until_the_rivals_are_done():
    """A schedule of 26 distinct weights: 3 boxes filled with the opponent at 3 reads row 3,
    seat 0; the opponent at 4 (it played this round first) row 3, seat 1; the opponent with one
    turn left reads 1 (hindsight exact), whatever the schedule."""
    schedule = np.arange(2 * RULES.num_boxes).reshape(-1, 2) / 100
    seeker = schedule_tables(schedule)
    names = RULES.box_names
    own = state_of({box: 0 for box in names[:3]})
    for filled, want in ((3, 0.06), (4, 0.07), (RULES.num_boxes - 1, 1.0)):
        rival = stacked(state_of({box: 0 for box in names[:filled]}))
        share = hindsight_share(seeker, own, rival, RULES)
        assert float(share) == pytest.approx(want)


def schedule_tables(weight):
    """The seeker's tables of plain rules' last two layers with a weight or schedule."""
    values, best, follow = partial("plain", 11)
    return seeker_tables(RULES, best, follow, values, weight)


def test_a_schedule_file_is_read_and_a_bad_one_refused_in_one_line(tmp_path):
    """A JSON file's "weights" [13][2] is the schedule; a missing file, text that is not JSON,
    no "weights", a ragged table, a wrong shape or a weight above 1 are one-line errors."""
    good = np.linspace(0, 1, 26).reshape(13, 2)
    path = tmp_path / "good.json"
    path.write_text(json.dumps({"weights": good.tolist(), "other": 1}))
    np.testing.assert_allclose(schedule_from_file(path, RULES), good, atol=1e-7)
    cases = {
        "missing.json": (None, "not a schedule's JSON"),
        "text.json": ("not json", "not a schedule's JSON"),
        "nokey.json": (json.dumps({"weight": 1}), "no 'weights'"),
        "ragged.json": (json.dumps({"weights": [[1, 1], [1]]}), "not a table"),
        "shape.json": (json.dumps({"weights": [[1, 1]] * 12}), r"shape \[13, 2\]"),
        "high.json": (json.dumps({"weights": [[1, 1.5]] * 13}), r"in \[0, 1\]"),
    }
    for name, (text, message) in cases.items():
        if text is not None:
            (tmp_path / name).write_text(text)
        with pytest.raises(UserError, match=message) as error:
            schedule_from_file(tmp_path / name, RULES)
        assert "\n" not in str(error.value)


def test_a_schedule_reaches_the_tables_and_is_refused_beside_a_weight(
    tmp_path, monkeypatch, capsys
):
    """The target-seeker built with `hindsight_schedule=FILE` (as `match --hindsight-schedule`
    builds it) plays by the file's weights; `match` refuses it beside a weight other than 1,
    and given to another player, in one line before any table is read."""
    from yahtzee_jax.agents import builtin_agent
    from yahtzee_jax.commands.cli import main
    from yahtzee_jax.solver import seeker_policy

    monkeypatch.setattr(
        seeker_policy, "target_seeker_tables", lambda *built: schedule_tables(built[2])
    )
    schedule = np.linspace(0.2, 0.9, 26).reshape(13, 2)
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps({"weights": schedule.tolist()}))
    agent = builtin_agent("target-seeker", "plain", hindsight_schedule=str(path))
    np.testing.assert_allclose(agent.params.weights, schedule, atol=1e-7)
    argv = ["match", "target-seeker", "--rules", "plain", "--games", "4", "--no-progress"]
    assert main([*argv, "--hindsight-schedule", str(path), "--hindsight-weight", "0.5"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["match", "win-seeker", "--hindsight-schedule", str(path)]) == 2
    assert "target-seeker's" in capsys.readouterr().err


def test_calibration_recovers_the_weight_that_made_the_results():
    """Results drawn as wins with chance a W_T + (1 - a) W_E, from one turn end a match: a =
    0.3 at turn 0 and 0.8 at turn 1 of seat 0, 1 at seat 1: the least-squares weights come back
    within three standard errors, clipped into the schedule, and the standard error is about
    what the binomial noise says."""
    calibration = load_experiment_script("seeker_calibration")
    rng = np.random.default_rng(0)
    games = 40_000
    turn = (np.arange(games) >= games // 2)[:, None].astype(int)  # [games, 1]
    seat = (np.arange(games) % 2)[:, None]
    low = rng.uniform(0.2, 0.7, (games, 1))
    high = np.minimum(low + rng.uniform(0.0, 0.3, (games, 1)), 1.0)
    truth = np.where(seat == 1, 1.0, np.where(turn == 0, 0.3, 0.8))
    won = rng.uniform(size=games) < (low + truth * (high - low))[:, 0]
    ends = {"turn": turn, "seat": seat, "by_target": high, "by_expected": low, "won": 1.0 * won}
    result = calibration.calibrate(ends, turns=2)
    rows = {(row["turn"], row["seat"]): row for row in result["turns"]}
    for (t, s), want in {(0, 0): 0.3, (1, 0): 0.8, (0, 1): 1.0, (1, 1): 1.0}.items():
        row = rows[(t, s)]
        assert row["matches"] == games // 4
        assert abs(row["a"] - want) < 3 * row["a_stderr"], (t, s, row)
        assert result["weights"][t][s] == pytest.approx(min(max(row["a"], 0), 1))
        # binomial noise: var(y) / sum spread^2, a spread of about 0.15 on 10,000 rows
        assert 0.02 < row["a_stderr"] < 0.2


@pytest.mark.slow  # an experiment script; the schedule's rows and fit stay fast above
def test_calibration_script_plays_a_schedule_values_and_writes_its_picture(tmp_path, monkeypatch):
    """The script on plain rules (its tables those of the last two layers, so its play is no
    guide) plays 4 matches by a schedule (the mixed rows' path), values 13 score decisions a
    match, writes a weight for each turn and seat, its command and the picture."""
    from yahtzee_jax.solver import seeker_policy

    monkeypatch.setattr(
        seeker_policy, "target_seeker_tables", lambda *built: schedule_tables(built[2])
    )
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps({"weights": np.full((13, 2), 0.5).tolist()}))
    calibration = load_experiment_script("seeker_calibration")
    argv = ["--rules", "plain", "--games", "4", "--batch-size", "4", "--out", str(tmp_path)]
    assert calibration.main([*argv, "--hindsight-schedule", str(path)]) == 0
    result = json.loads((tmp_path / "calibration.json").read_text())
    assert result["games"] == 4 and np.asarray(result["weights"]).shape == (13, 2)
    assert sum(row["matches"] for row in result["turns"]) == 4 * 13
    assert result["hindsight_schedule"] == str(path)
    assert result["machine"]["command"].startswith("python experiments/seeker_calibration.py")
    assert (tmp_path / "calibration.png").read_bytes().startswith(b"\x89PNG")
