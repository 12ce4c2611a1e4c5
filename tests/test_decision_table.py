"""The optimal agent with its keeps in a table (`optimal-table`, issue 46) plays the optimal
agent's games to the last die, and each card finds the row its decisions are the same as.

The table keeps one row per solved state; a card whose upper total only copies another's value
(no play can still reach the bonus) reads that total's row, and a Yahtzee flag without a state
of its own (no Yahtzee bonus in the rules) reads flag 0's. The rows are checked on hand-made
cards against what the rules say by themselves, and the games against the optimal agent's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from positions import card

from yahtzee_jax.agents import builtin_agent, decision_table
from yahtzee_jax.agents.decision_table import (
    DecisionTable,
    DecisionTablePolicy,
    _card_rows,
    _rows,
)
from yahtzee_jax.agents.widget_agents import make_optimal_agent
from yahtzee_jax.errors import UserError
from yahtzee_jax.evaluation.records import play_games
from yahtzee_jax.evaluation.single_turn import evaluate_single_turn
from yahtzee_jax.game.engine import batch_of_one
from yahtzee_jax.game.rules import (
    OFFICIAL,
    UPPER_BOXES,
    Box,
    Category,
    Joker,
    Kind,
    Rules,
    get_rules,
)

YATZY = get_rules("yatzy")
# Eight boxes: the upper six, a chance and a Yahtzee, with both bonuses (a few thousand solved
# states: built in seconds with the tests' unoptimised compile) and without a Yahtzee bonus.
MINI_BOXES = (*UPPER_BOXES, Box("chance", Kind.CHANCE), Box("yahtzee", Kind.OF_A_KIND, 5, 50))
MINI = Rules("mini-decision-table", yahtzee_bonus=True, joker=Joker.FORCED, boxes=MINI_BOXES)
MINI_NO_BONUS = Rules(
    "mini-no-yahtzee-bonus", yahtzee_bonus=False, joker=Joker.NONE, boxes=MINI_BOXES
)
UPPER = [Category.ONES, Category.TWOS, Category.THREES, Category.FOURS, Category.FIVES]


def test_the_single_turn_task_is_refused_in_one_line() -> None:
    """A turn of the single-turn task ends its episode with boxes still open: its card has no
    row of whole games, so the single-turn evaluation refuses the table agent in one line (it
    plays whole games only: its one call selects the table's keep with no fallback) and says
    which agent plays single turns."""
    table_agent = builtin_agent("optimal-table", MINI)
    with pytest.raises(UserError) as error:
        evaluate_single_turn(table_agent, 8, 0)
    message = str(error.value)
    assert "whole games only" in message and "optimal" in message and "\n" not in message


def _row(rules, written: dict[int, int]) -> int:
    """The table row of a hand-made card with the given boxes written ({box: points})."""
    _, row_of_state = _rows(rules)
    table = DecisionTable(None, jnp.asarray(row_of_state), None)
    return int(_card_rows(table, batch_of_one(card(scores=written, rules=rules)), rules)[0])


def test_a_card_reads_the_row_of_the_state_its_decisions_are_the_same_as() -> None:
    """Official rules. Every upper box written: no die can add to the upper total, so below 63
    every total plays alike (the row of 0) and 63 or more is its own. Ones to fours written,
    fives and sixes open (at most 25 + 30 more): a total of 3 cannot reach 63 (0's row), a
    total of 40 can (its own). A 50 in the Yahtzee box is a state of its own (the bonus)."""
    every_upper = {category: 0 for category in (*UPPER, Category.SIXES)}
    zero = _row(OFFICIAL, every_upper)
    assert _row(OFFICIAL, {**every_upper, Category.ONES: 3, Category.SIXES: 24}) == zero
    assert _row(OFFICIAL, {**every_upper, Category.FIVES: 25, Category.SIXES: 30}) == zero
    reached = _row(OFFICIAL, {**every_upper, Category.FOURS: 16, Category.FIVES: 20,
                                Category.SIXES: 30})  # fmt: skip
    assert reached not in (zero, -1)
    four = {category: 0 for category in UPPER[:4]}
    assert _row(OFFICIAL, {**four, Category.ONES: 3}) == _row(OFFICIAL, four)
    forty = {**four, Category.THREES: 12, Category.FOURS: 16, Category.TWOS: 8, Category.ONES: 4}
    assert _row(OFFICIAL, forty) not in (_row(OFFICIAL, four), -1)
    yahtzee_fifty = _row(OFFICIAL, {Category.YAHTZEE: 50})
    assert yahtzee_fifty not in (_row(OFFICIAL, {Category.YAHTZEE: 0}), -1)


def test_without_a_yahtzee_bonus_a_fifty_reads_the_row_of_a_zero() -> None:
    """Yatzy pays no bonus for a second Yatzy: its box holding 50 or 0 plays alike, one row."""
    yatzy = YATZY.yahtzee_box
    assert _row(YATZY, {yatzy: 50}) == _row(YATZY, {yatzy: 0}) >= 0


def _same_games(rules, games: int, seed: int) -> tuple:
    """The table agent and the optimal agent after checking they play the same games."""
    table_agent = builtin_agent("optimal-table", rules)
    optimal = make_optimal_agent(rules)
    assert isinstance(table_agent.policy, DecisionTablePolicy)
    ours, theirs = play_games(table_agent, games, seed), play_games(optimal, games, seed)
    for field in ("total", "box_scores", "turn_categories", "turn_points", "yahtzee_bonus_count"):
        np.testing.assert_array_equal(getattr(ours, field), getattr(theirs, field))
    return table_agent, optimal


# make test-slow for the game without a Yahtzee bonus (issue 45: make test within 10 minutes; the
# hand-made cards check its flag's row, and Yatzy's games in make test-slow too)
NO_BONUS_SLOW = pytest.param(MINI_NO_BONUS, id="no-bonus", marks=pytest.mark.slow)


@pytest.mark.parametrize("rules", [pytest.param(MINI, id="yahtzee-bonus"), NO_BONUS_SLOW])
def test_games_of_a_small_game_are_the_optimal_agents(rules) -> None:
    """2,500 games of an eight-box game (a batch of 2,048 and a padded one), with the Yahtzee
    bonus (a 50 in its box a state of its own) and without (a 50 reads flag 0's rows), the
    same to the last die as the optimal agent's; a decision at a time (the one signature) the
    table agent is the optimal agent."""
    table_agent, optimal = _same_games(rules, 2500, 11)
    position = batch_of_one(card(dice=(2, 2, 5, 6, 6), scores={5: 18}, rules=rules))
    keys = jax.random.split(jax.random.key(0), 1)
    ours = jax.jit(table_agent.policy)(table_agent.params, position, position, keys)
    theirs = jax.jit(optimal.policy)(optimal.params, position, position, keys)
    assert int(ours[0]) == int(theirs[0])


def test_the_keeps_are_cached_and_a_damaged_file_built_again(tmp_path, monkeypatch) -> None:
    """The keeps go to the cache folder once built and come back from it without building
    (the builder made to fail); a truncated file is built again and replaced whole, its
    checksum beside it; a folder that cannot be written (a file in its place) only costs the
    build; other code writes another file and removes the old one, its checksum and its lock."""
    value_table = make_optimal_agent(MINI).params
    built = decision_table.cached_decision_table(value_table, MINI, tmp_path)
    path = decision_table.cache_path(MINI, tmp_path)
    assert path.is_file() and path.parent == tmp_path
    build = decision_table._keeps

    def no_build(*args):
        raise AssertionError("built again")

    monkeypatch.setattr(decision_table, "_keeps", no_build)
    loaded = decision_table.cached_decision_table(value_table, MINI, tmp_path)
    np.testing.assert_array_equal(np.asarray(loaded.keeps), np.asarray(built.keeps))
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(AssertionError, match="built again"):
        decision_table.cached_decision_table(value_table, MINI, tmp_path)
    monkeypatch.setattr(decision_table, "_keeps", build)
    again = decision_table.cached_decision_table(value_table, MINI, tmp_path)
    np.testing.assert_array_equal(np.asarray(again.keeps), np.asarray(built.keeps))
    assert decision_table._load_keeps(path, built.keeps.shape) is not None
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    unwritten = decision_table.cached_decision_table(value_table, MINI, blocked)
    np.testing.assert_array_equal(np.asarray(unwritten.keeps), np.asarray(built.keeps))
    assert _visible(tmp_path) == sorted([path.name, f"{path.name}.crc32", "a-file"])
    monkeypatch.setattr(decision_table, "_agent_digest", lambda: "other code")
    other = decision_table.cache_path(MINI, tmp_path)
    assert other != path
    assert (tmp_path / f".{path.name}.lock").exists()
    decision_table.cached_decision_table(value_table, MINI, tmp_path)  # the old file goes
    assert _visible(tmp_path) == sorted([other.name, f"{other.name}.crc32", "a-file"])
    assert not (tmp_path / f".{path.name}.lock").exists()  # and its lock file with it


def _visible(folder) -> list[str]:
    """The files of `folder` a listing shows (not the hidden lock files beside the tables)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


@pytest.mark.slow  # make test-slow: 359,616 rows, about 100 s with the tests' unoptimised compile
def test_official_games_are_the_optimal_agents() -> None:
    """2,500 official games, the same to the last die."""
    _same_games(OFFICIAL, 2500, 11)


@pytest.mark.slow  # make test-slow: Yatzy's 958,976 rows
def test_yatzy_games_are_the_optimal_agents() -> None:
    """1,000 Yatzy games, the same to the last die (a Yatzy in its box reads flag 0's rows)."""
    _same_games(YATZY, 1000, 12)
