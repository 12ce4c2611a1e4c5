"""Imitating the optimal agent (issue 64, the imitation ceiling): distill's teacher can be a
built-in agent by name, the exact optimum, and the student learns its decisions."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from positions import card
from test_distill import learns_from_uniform

from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.algorithms import distill
from yahtzee_jax.algorithms.algorithm import make_context
from yahtzee_jax.envs.environment import no_others
from yahtzee_jax.game.engine import LAST_ROLL
from yahtzee_jax.game.rules import (
    KEEP_ALL,
    NUM_KEEP_ACTIONS,
    OFFICIAL,
    Category,
)
from yahtzee_jax.runner.checkpointing import load_run
from yahtzee_jax.runner.configs import from_dict, resolve

RESULTS = Path(__file__).resolve().parent.parent / "results" / "imitation-ceiling"
TINY = [
    "network.hidden_size=32",
    "network.trunk_layers=1",
    "network.dropout=0",
    "train.games_per_update=8",
    "train.total_games=8000",
    "algo.name=distill",
]


def optimal_context(*more: str):
    """A tiny distill context whose teacher is the built-in optimal agent (official rules)."""
    config = resolve("quick", overrides=[*TINY, "algo.teacher=optimal", *more])
    return make_context(config, load_run)


def stack(*cards):
    """A batch of hand-made cards."""
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *cards)


def test_the_teacher_plays_the_obvious_optimal_moves():
    """algo.teacher=optimal builds the exact optimum (not a run), and on hand-made cards it
    makes the moves that need no solver to see: five sixes with the Yahtzee box open keep all
    five at either re-roll and score 50 in the Yahtzee box; with only Chance open, its one
    legal box is Chance."""
    teacher = optimal_context().frozen
    assert isinstance(teacher, Agent) and teacher.optimal and teacher.name == "optimal"
    others = {box: 0 for box in Category if box not in (Category.CHANCE,)}
    cards = stack(
        card(dice=(6, 6, 6, 6, 6), roll_index=0),
        card(dice=(6, 6, 6, 6, 6), roll_index=1, scores={Category.ONES: 3}),
        card(dice=(6, 6, 6, 6, 6), roll_index=LAST_ROLL, scores={Category.SIXES: 24}),
        card(dice=(1, 2, 2, 4, 5), roll_index=LAST_ROLL, scores=others),
    )
    keys = jax.random.split(jax.random.key(0), 4)
    actions = jax.jit(teacher.policy)(teacher.params, cards, no_others(cards), keys)
    expected = [KEEP_ALL, KEEP_ALL, NUM_KEEP_ACTIONS + OFFICIAL.yahtzee_box]
    expected.append(NUM_KEEP_ACTIONS + int(Category.CHANCE))
    np.testing.assert_array_equal(np.asarray(actions), expected)


def test_a_teacher_name_builds_that_builtin_agent_for_the_runs_rules(monkeypatch):
    """`optimal-table` (the preset's teacher) reaches the built-in agents' builder with the
    run's rules, and a name that is no built-in agent is read as a run directory."""
    asked = []

    def builder(spec, rules):
        asked.append((spec, rules))
        return "agent"

    monkeypatch.setattr(distill, "builtin_agent", builder)
    config = resolve("quick", overrides=[*TINY, "algo.teacher=optimal-table"])
    assert make_context(config, load_run).frozen == "agent"
    assert asked == [("optimal-table", OFFICIAL)]
    assert "optimal-table" in distill.TEACHER_AGENTS and "win-seeker" not in distill.TEACHER_AGENTS


# Slow (14 s idle): make test keeps the optimal teacher's moves (above) and distill's learning
# from a teacher (tests/test_distill.py); this one trains 30 updates against the optimum.
@pytest.mark.slow
def test_student_learns_the_optimal_agents_decisions():
    """30 updates of 8 games played by the optimal teacher (lr 1e-2 from the first update): the
    first cross-entropy is the uniform policy's (ln 32 at a keep; at turn t's score decision
    ln(13 - t): mean ln(13!)/13), it falls by more than half a nat, and the agreement with the
    teacher's decisions rises by more than 0.15 (from about 0.1, a uniform guess's)."""
    context = optimal_context("optim.lr=1e-2", "optim.warmup=0", "algo.teacher_share=1.0")
    metrics = learns_from_uniform(context, 30)
    agreement = np.asarray(metrics["policy/agreement"])
    assert agreement[-5:].mean() > agreement[:3].mean() + 0.15
    np.testing.assert_array_equal(metrics["policy/teacher_played"], 1.0)


def test_the_preset_trains_the_ppo_presets_network():
    """imitate-optimal's student is the network cpu-ppo trains (width 128, its depth, norm,
    heads and input features), and at width 256 the one ppo-252 trains: the ceiling is measured
    on the shapes reinforcement is scored on. It keeps the paper's dropout 0.1, which its
    committed runs trained with (the reinforcement presets dropped it in the twenty-ninth
    session). Its teacher is the optimal agent."""
    imitation, ppo = resolve("imitate-optimal"), resolve("cpu-ppo")
    assert imitation.network.dropout == 0.1 and ppo.network.dropout == 0.0
    shape = dataclasses.replace(imitation.network, dropout=0.0)
    assert (shape, imitation.features) == (ppo.network, ppo.features)
    wide = resolve("imitate-optimal", None, ["network.hidden_size=256"])
    assert dataclasses.replace(wide.network, dropout=0.0) == resolve("ppo-252").network
    assert (imitation.algo.name, imitation.algo.teacher) == ("distill", "optimal-table")
    assert imitation.env == ppo.env


@pytest.mark.parametrize(
    ("run", "overrides"),
    [("w128", []), ("w256", ["network.hidden_size=256"]), ("w512", ["network.hidden_size=512"])],
)
def test_the_preset_is_the_config_of_the_committed_runs(run, overrides):
    """imitate-optimal at seed 1 and each width is, field for field, the config the runs behind
    docs/learners/imitation_ceiling.md wrote (committed under results/imitation-ceiling/)."""
    written = yaml.safe_load((RESULTS / run / "config.yaml").read_text())
    assert resolve("imitate-optimal", None, ["train.seed=1", *overrides]) == from_dict(written)
