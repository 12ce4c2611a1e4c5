"""The single-turn task's evaluation: the exact turn optimum on hand-made positions, greedy
level 3 (which maximises the turn exactly) playing at the optimum, and the CLI."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import pytest

from yahtzee_jax.agents import make_random_agent
from yahtzee_jax.agents.widget_agents import make_greedy_agent
from yahtzee_jax.commands.cli import main
from yahtzee_jax.evaluation.single_turn import evaluate_single_turn, turn_optimum
from yahtzee_jax.game import OFFICIAL, Category, State

# compiled once for the module's positions (called op by op, each call dispatched every
# operation of the turn's expectimax alone)
optimum = jax.jit(turn_optimum, static_argnums=1)


def only_open(category: Category, dice: list[int]) -> State:
    """A one-turn position at its first decision where only `category` is still open."""
    filled = jnp.ones(13, bool).at[category].set(False)
    return State.empty(OFFICIAL, dice=jnp.int32(dice), filled=filled, turns_left=jnp.int32(1))


def test_yahtzee_on_an_empty_card_is_worth_fifty():
    """Five sixes dealt on an empty card: keep them and score the Yahtzee box, 50 points."""
    state = State.empty(OFFICIAL, dice=jnp.int32([6] * 5), turns_left=jnp.int32(1))
    assert float(optimum(state, OFFICIAL)) == pytest.approx(50.0)


def test_chance_alone_with_two_rerolls_by_hand():
    """Only Chance open and five ones dealt: every die is re-rolled; after the first re-roll a
    4, 5 or 6 is kept (worth 5 on average) and anything else re-rolled once more (worth 3.5),
    so each die is worth 0.5 * 5 + 0.5 * 3.5 = 4.25 and the turn 21.25. Five sixes: keep, 30."""
    ones = optimum(only_open(Category.CHANCE, [1] * 5), OFFICIAL)
    assert float(ones) == pytest.approx(5 * (0.5 * 5 + 0.5 * 3.5), rel=1e-6)
    sixes = optimum(only_open(Category.CHANCE, [6] * 5), OFFICIAL)
    assert float(sixes) == pytest.approx(30.0)


def test_greedy3_plays_the_single_turn_optimum_and_random_does_not():
    """Greedy level 3 maximises a turn's expected score exactly, so over the same 3,000 turns
    its mean is the optimum's within 4 standard errors; random play is far below."""
    greedy = evaluate_single_turn(make_greedy_agent(3, OFFICIAL), 3000, seed=4)
    assert abs(greedy["mean"] - greedy["optimum_mean"]) < 4 * greedy["stderr"]
    assert greedy["percent_of_optimum"] == pytest.approx(100.0, abs=3.0)
    random = evaluate_single_turn(make_random_agent(OFFICIAL), 3000, seed=4)
    assert random["optimum_mean"] == greedy["optimum_mean"]  # the same turns
    assert random["percent_of_optimum"] < 30.0


def test_evaluate_cli_single_turn(tmp_path, capsys):
    """`evaluate random --task single-turn` prints the mean against the optimum and writes the
    same figures as JSON: those of the library's evaluation of the same turns."""
    json_path = tmp_path / "turns.json"
    argv = ["evaluate", "random", "--task", "single-turn", "--games", "500"]
    assert main([*argv, "--json", str(json_path)]) == 0
    out = capsys.readouterr().out
    data = json.loads(json_path.read_text())
    # the library's figures of the same 500 turns (seed 0, the default), printed as written
    assert data == evaluate_single_turn(make_random_agent(OFFICIAL), 500, seed=0)
    assert "500 single turns" in out and f"mean {data['mean']:.3f} +- {data['stderr']:.3f}" in out
    assert f"optimum of the same turns {data['optimum_mean']:.3f}" in out
    assert data["percent_of_optimum"] == pytest.approx(100 * data["mean"] / data["optimum_mean"])
    assert data["percent_of_optimum"] < 30.0  # random play, far below (as above)
