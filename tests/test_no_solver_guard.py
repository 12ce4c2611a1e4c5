"""Every learned player under the no-solver guard (`test_td_planner.forbid_solver_tables`: every
solver table loader and `numpy.load` raise): the match player with its early turns by the
normal rule, the two-turn search (alone; in a match under make test-slow), the distilled
student (trained from a td-planner teacher read from disk, then acting) and td-win's acting.
The quick td-planner, the distribution network's update and the default match player are in
test_td_planner and test_match_planner, td-win's self-play training in test_td_win. Tiny
networks, seconds each."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from positions import card
from test_td_planner import forbid_solver_tables

from yahtzee_jax.agents.agent import Agent

# Imported before any guard: a module first imported under it would keep the raising loaders
# after the test (monkeypatch restores only the names it replaced).
from yahtzee_jax.agents.widget_agents import make_optimal_agent
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.envs.environment import no_others
from yahtzee_jax.game.engine import legal_action_mask
from yahtzee_jax.game.rules import Category
from yahtzee_jax.runner.checkpointing import RunCheckpoints, load_run
from yahtzee_jax.runner.configs import resolve

TINY = ["network.hidden_size=16", "network.trunk_layers=1", "train.games_per_update=4"]
PLANNER = [*TINY, "train.total_games=400", "algo.name=td-planner"]
MATCH = [*PLANNER, "algo.score_bins=16"]
# Both kinds of match position: every box open (an early turn) and two left (a late one).
LATE = {box: 0 for box in Category if box not in (Category.FOURS, Category.YAHTZEE)}


def positions():
    """Six cards: three early (every box open), three late, one of each roll index."""
    cards = [card(roll_index=r) for r in (0, 1, 2)]
    cards += [card((4, 4, 4, 1, 2), LATE, roll_index=r) for r in (0, 1, 2)]
    return jax.tree.map(lambda *x: jnp.stack(x), *cards)


def assert_guard_is_live() -> None:
    """The optimal agent, which needs the solver's table, fails under the guard."""
    with pytest.raises(AssertionError, match="a solver table was asked for"):
        make_optimal_agent("official")


def assert_legal_match_play(agent: Agent, opponents: int = 1) -> None:
    """The agent's match play at the six positions (against 1 or 2 copies of them): legal."""
    own = positions()
    others = jax.tree.map(lambda x: jnp.stack([x] * opponents, 1), own)
    keys = jax.random.split(jax.random.key(1), 6)
    actions = jax.jit(agent.policy)(agent.params, own, others, keys)
    legal = jax.vmap(legal_action_mask, in_axes=(0, None))(own, agent.rules)
    assert bool(jnp.all(legal[jnp.arange(6), actions]))


def assert_legal_solitaire_play(agent: Agent) -> None:
    """The agent's solitaire play (no other cards) at the six positions: legal."""
    own = positions()
    keys = jax.random.split(jax.random.key(2), 6)
    actions = jax.jit(agent.policy)(agent.params, own, no_others(own), keys)
    legal = jax.vmap(legal_action_mask, in_axes=(0, None))(own, agent.rules)
    assert bool(jnp.all(legal[jnp.arange(6), actions]))


def trained_once(overrides: list[str], run_loader=None):
    """(config, context, state after one update) of the quick preset with `overrides`."""
    config = resolve("quick", overrides=overrides)
    context = make_context(config) if run_loader is None else make_context(config, run_loader)
    state, metrics = jax.jit(lambda s: context.algorithm.update(context, s))(
        init_train_state(context)
    )
    assert int(state.step) == 1 and all(np.isfinite(float(v)) for v in metrics.values())
    return config, context, state


def untrained(overrides: list[str]) -> tuple:
    """(config, context, fresh parameters): acting is what is tested here (the update with a
    distribution head is in test_match_planner, under the guard too)."""
    config = resolve("quick", overrides=overrides)
    context = make_context(config)
    return config, context, init_train_state(context).params


@pytest.mark.slow  # the guard stays fast in test_td_planner.py; this act in test_match_planner.py
def test_the_match_player_with_early_turns_by_the_normal(monkeypatch):
    """`algo.match_early=normal`: the match player's acting (early turns by the normal, late
    ones by the exact sum), against two opponents ([B, 2] cards), with the tables forbidden."""
    forbid_solver_tables(monkeypatch)
    config, context, params = untrained([*MATCH, "algo.match_early=normal"])
    agent = context.algorithm.make_agent(config, params, "td-planner")
    assert agent.policy.early == "normal"
    assert_legal_match_play(agent, 2)
    assert_guard_is_live()


@pytest.mark.slow  # the guard stays fast in test_td_planner.py, as does its two-turn leaf
def test_the_two_turn_search(monkeypatch):
    """`algo.lookahead=2`: the two-turn planner (the solitaire planner on two-turn leaves) acts
    at every position with the tables forbidden."""
    forbid_solver_tables(monkeypatch)
    config, context, params = untrained([*PLANNER, "algo.lookahead=2"])
    agent = context.algorithm.make_agent(config, params, "td-planner")
    assert_legal_solitaire_play(agent)
    assert_guard_is_live()


@pytest.mark.slow  # the two-turn leaves under the match act: about a minute on 2 loaded cores
def test_the_two_turn_match_player(monkeypatch):
    """`algo.lookahead=2` as the two-turn match row plays it: the match player with the early
    turns by the normal on the two-turn leaves' means, with the tables forbidden."""
    forbid_solver_tables(monkeypatch)
    config, context, params = untrained([*MATCH, "algo.match_early=normal", "algo.lookahead=2"])
    agent = context.algorithm.make_agent(config, params, "td-planner")
    assert type(agent.policy.value).__name__ == "LookaheadLeaf"
    assert_legal_match_play(agent, 1)
    assert_guard_is_live()


@pytest.mark.slow  # the guard stays fast in test_td_planner.py; the student in test_distill.py
def test_the_distilled_student(monkeypatch, tmp_path):
    """A td-planner teacher saved to disk, then with the tables forbidden: the distill context
    reads the teacher, one update plays the teacher's planning, and the student acts."""
    teacher = resolve("quick", overrides=PLANNER)
    checkpoints = RunCheckpoints(tmp_path / "teacher", keep=1)
    checkpoints.save(1, init_train_state(make_context(teacher)), teacher, None)
    checkpoints.close()
    forbid_solver_tables(monkeypatch)
    student = [*TINY, "network.dropout=0", "train.total_games=400", "algo.name=distill"]
    teacher_run = f"algo.teacher={tmp_path / 'teacher'}"
    config, context, state = trained_once([*student, teacher_run], load_run)
    assert_legal_solitaire_play(context.algorithm.make_agent(config, state.params, "student"))
    assert_guard_is_live()


@pytest.mark.slow  # td-win acting under the guard stays fast in test_td_win.py (self-play)
def test_td_win_acting(monkeypatch):
    """td-win as its preset trains it (two players against the optimal agent). Only its acting
    is guarded: its training opponent, the optimal agent, reads the solver's table, so the
    context (and the opponent in it) is built before the guard; then the agent is made and
    plays a legal move at every position with the tables forbidden."""
    overrides = ["network.hidden_size=16", "train.games_per_update=6", "train.total_games=600"]
    config = resolve("td-planner-win", overrides=overrides)
    assert config.env.opponent == "optimal" and config.env.players == 2
    context = make_context(config)
    params = init_train_state(context).params
    forbid_solver_tables(monkeypatch)
    agent = context.algorithm.make_agent(config, params, "td-win")
    assert_legal_match_play(agent, 1)
    assert_guard_is_live()
