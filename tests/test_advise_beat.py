"""`advise --beat X` (`solver.advisor.advise_beat`): actions valued by the chance of a final
score above X, worked by hand on the Yahtzee box alone and tied to the target table."""

from __future__ import annotations

import importlib
import re

import numpy as np
import pytest
from positions import card_state, card_without
from test_targets import partial_best

from yahtzee_jax.commands.cli import main
from yahtzee_jax.errors import UserError
from yahtzee_jax.game.reference import final_score
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, get_rules
from yahtzee_jax.solver.advisor import advise_beat, make_position
from yahtzee_jax.solver.beat import host_tables
from yahtzee_jax.solver.target_layout import state_chances, target_layout
from yahtzee_jax.solver.widget_tables import ROLL_PROBABILITIES, ROLLS

CARD = card_without("yahtzee")  # only the Yahtzee box open, plain rules: 50 or nothing
START = final_score(CARD, 0)
KEEP_SIXES = 0b11100  # sorted dice 1 2 6 6 6: keep the three sixes
KEEP_ALL = 0b11111


def tables():
    """The plain rules' last layer as host tables."""
    values, best = partial_best("plain", 12)
    return host_tables(best, target_layout(get_rules("plain")), values)


def test_chances_are_worked_by_hand():
    """1 2 6 6 6 with two re-rolls: keeping the sixes makes five sixes with chance (11/36)^2
    (each missing die has two tries; switching faces never pays), keeping all leaves one
    re-roll of two dice, 1/36. Above START + 49 needs the 50; above START + 50 cannot be had (a
    tie is no win); above START - 1 is sure: those two say their ties are ranked by points."""
    position = make_position([1, 2, 6, 6, 6], 0, CARD, rules="plain")
    result = advise_beat(position, "plain", START + 49, tables())
    assert result.action_values[KEEP_SIXES] == pytest.approx((11 / 36) ** 2, abs=1e-12)
    assert result.action_values[KEEP_ALL] == pytest.approx(1 / 36, abs=1e-12)
    assert result.best_action == KEEP_SIXES and result.value == result.action_values[KEEP_SIXES]
    assert "best chance of a final score above" in result.describe(top=3)
    assert "equal chances" not in result.describe(top=3)
    beyond = advise_beat(position, "plain", START + 50, tables())
    assert beyond.value == 0.0
    assert f"no play can end above {START + 50}: equal chances, most points" in beyond.describe()
    assert np.all(np.diff(beyond.tie_values[beyond.legal_actions()]) <= 0)
    sure = advise_beat(position, "plain", START - 1, tables())
    assert sure.value == 1.0
    assert f"the best plays are sure to end above {START - 1}: equal" in sure.describe()
    scoring = make_position([1, 2, 6, 6, 6], 2, CARD, rules="plain")
    chances = advise_beat(scoring, "plain", START + 49, tables()).action_values
    assert chances[NUM_KEEP_ACTIONS + get_rules("plain").yahtzee_box] == 0.0


def test_first_rolls_average_to_the_table():
    """Over the 252 first rolls, the best chances at roll 0 average (by the rolls'
    probabilities) to the table's T_s(d) of the turn start, for a target the straights need."""
    card = card_without("small_straight", "large_straight")
    values, best = partial_best("plain", 11)
    rules = get_rules("plain")
    host = host_tables(best, target_layout(rules), values)
    beat = final_score(card, 0) + 34  # above 34 more: a large straight, or both
    chances = [
        advise_beat(make_position(list(roll), 0, card, rules="plain"), "plain", beat, host).value
        for roll in ROLLS
    ]
    row = state_chances(best, target_layout(rules), card_state(card))
    assert np.dot(ROLL_PROBABILITIES, chances) == pytest.approx(row[35], abs=1e-12)


def test_beat_refuses_a_single_turn():
    """A position of one turn only (turns_left 1 with more boxes open) has no final score."""
    position = make_position([1, 2, 3, 4, 5], 0, card_without("chance", "yahtzee"), rules="plain")
    with pytest.raises(UserError, match="whole game"):
        advise_beat(position.replace(turns_left=np.int32(1)), "plain", 200, tables())


def test_cli_prints_the_chances(monkeypatch, capsys):
    """`advise --beat X` lists the chances, the sixes first; a negative X is one line."""
    advisor = importlib.import_module("yahtzee_jax.solver.advisor")
    monkeypatch.setattr(advisor, "beat_tables", lambda rules, cache_dir: tables())
    card = ",".join(f"{box}={points}" for box, points in CARD.items())
    base = ["advise", "--rules", "plain", "--dice", "1,2,6,6,6", "--card", card, "--beat"]
    assert main([*base, str(START + 49)]) == 0
    out = capsys.readouterr().out
    assert f"above {START + 49}: 0.093364" in out and "keep 6 6 6" in out.splitlines()[3]
    assert main([*base, "-1"]) == 2


def test_play_hint_beat_shows_chances_and_costs(monkeypatch):
    """`play --hint --beat X`: a scripted plain game shows the advisor's chances above X (in %)
    at every decision and each choice's cost in percentage points of that chance; the last
    turn (Yahtzee box alone, from the test card's layer) is valued by the exact table."""
    from test_terminal import ScriptedConsole, args, box_order_player

    from yahtzee_jax.commands import terminal

    advisor = importlib.import_module("yahtzee_jax.solver.advisor")
    monkeypatch.setattr(advisor, "beat_tables", lambda rules, cache_dir: tables())
    console = ScriptedConsole(box_order_player(errors_on_turn=0))
    assert terminal.run(args(hint=True, beat=150, rules="plain"), console) == 0
    text = console.text
    assert text.count("advisor (% chance above 150):") == 39
    assert len(re.findall(r"  cost \d+\.\d\d % of P\(final > 150\)", text)) == 39
    assert re.search(r"Choices cost \d+\.\d\d % of P\(final > 150\) in all", text)
    with pytest.raises(UserError, match="goes with --hint or --watch"):
        terminal.run(args(beat=150), console)
