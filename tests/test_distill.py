"""Distillation (issue 30, stretch): the paper's network learns a teacher's choices and then
plays alone. A fixed-rule teacher stands in for the planner where learning is measured (its
planner compiles for tens of seconds); the planner teacher is read from a td-planner run."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from yahtzee_jax.agents import planner
from yahtzee_jax.agents.agent import Agent
from yahtzee_jax.algorithms import distill, td_planner
from yahtzee_jax.algorithms.acting import GreedyPolicy
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.commands.cli import main
from yahtzee_jax.envs.environment import no_others
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.evaluation.records import play_games
from yahtzee_jax.game import engine
from yahtzee_jax.game.rules import DECISIONS_PER_TURN, KEEP_ALL, NUM_KEEP_ACTIONS
from yahtzee_jax.runner.checkpointing import RunCheckpoints, load_agent, load_run
from yahtzee_jax.runner.configs import resolve
from yahtzee_jax.runner.single_run import make_chunk

TINY = [
    "network.hidden_size=16",
    "network.trunk_layers=1",
    "network.dropout=0",
    "train.games_per_update=4",
    "train.total_games=4000",
]


def tiny_config(*more: str):
    """A seconds-long distill configuration."""
    return resolve("quick", overrides=[*TINY, "algo.name=distill", *more])


def fixed_rule_context(*more: str):
    """A distill context whose teacher (an agent) keeps every die and scores the first legal
    box."""
    context = make_context(tiny_config(*more))
    env = context.env

    def rule(params, own: engine.State, others: engine.State, keys: jax.Array) -> jax.Array:
        boxes = env.legal_action_mask(own)[:, NUM_KEEP_ACTIONS:]
        box = (NUM_KEEP_ACTIONS + jnp.argmax(boxes, axis=-1)).astype(jnp.int32)
        return jnp.where(own.roll_index < engine.LAST_ROLL, KEEP_ALL, box)

    return context._replace(frozen=Agent("fixed-rule", rule, None, context.rules))


def save_run(directory, config, params=None) -> None:
    """A run directory holding one checkpoint of `config` (fresh parameters unless given)."""
    state = init_train_state(make_context(config))
    if params is not None:
        state = state.replace(params=params)
    checkpoints = RunCheckpoints(directory, keep=1)
    checkpoints.save(1, state, config, None)
    checkpoints.close()


def learns_from_uniform(context, updates: int) -> dict:
    """`updates` updates of `context` from fresh parameters, checked: no failure, a first
    cross-entropy that is the uniform policy's (ln 32 at a keep; at the score decision of turn
    t, ln of the 13 - t open boxes: mean ln(13!)/13) and a fall of more than half a nat by the
    last five; returns the metrics."""
    _, metrics, failure = make_chunk(context, updates)(init_train_state(context))
    assert np.all(failure == -1)
    uniform = (2 * math.log(32) + math.lgamma(14) / 13) / DECISIONS_PER_TURN
    cross_entropy = np.asarray(metrics["loss/cross_entropy"])
    assert cross_entropy[0] == pytest.approx(uniform, abs=0.1)
    assert cross_entropy[-5:].mean() < cross_entropy[0] - 0.5
    return metrics


def test_student_learns_a_fixed_rule_teacher():
    """40 updates on the teacher's games: the first cross-entropy is the uniform policy's
    (ln 32 at a keep; at the score decision of turn t, ln of the 13 - t open boxes: mean
    ln(13!)/13), it falls by more than half a nat, and the student ends agreeing with the
    teacher on every keep and on >= 90 % of all decisions; every keep played is keep-all."""
    context = fixed_rule_context("optim.lr=3e-3", "algo.teacher_share=1.0")
    metrics = learns_from_uniform(context, 40)
    assert np.asarray(metrics["policy/agreement"])[-5:].min() >= 0.9
    assert np.asarray(metrics["policy/agreement_keep"])[-1] == 1.0
    np.testing.assert_array_equal(metrics["policy/teacher_played"], 1.0)
    np.testing.assert_array_equal(metrics["policy/top1_keep_frequency"], 1.0)


def test_teacher_share_mixes_the_teachers_and_the_students_actions():
    """With algo.teacher_share=0.5 about half of 5 x 156 decisions play the teacher's action
    (binomial: 0.5 +- 0.018), and the untrained student's samples use more keep patterns than
    the teacher's one."""
    context = fixed_rule_context("algo.teacher_share=0.5")
    _, metrics, _ = make_chunk(context, 5)(init_train_state(context))
    assert abs(float(np.mean(metrics["policy/teacher_played"])) - 0.5) < 0.08
    assert np.all(np.asarray(metrics["policy/keep_diversity"]) > 1 / 32)


def test_acting_agent_is_the_student_alone(tmp_path, monkeypatch):
    """A saved distill run loads as `evaluate RUN` loads it and plays 16 legal games with the
    planner's decisions made to raise: the teacher is never consulted to act."""
    config = tiny_config("algo.teacher=runs/td-planner")
    save_run(tmp_path / "run", config)

    def refuse(*args, **kwargs):
        raise AssertionError("the acting agent consulted the teacher")

    monkeypatch.setattr(planner, "plan_decision", refuse)
    agent = load_agent(str(tmp_path / "run"))
    records = play_games(agent, 16, seed=0)
    assert records.num_games == 16 and records.total.min() >= 0


def test_teacher_is_the_td_planner_run_frozen(tmp_path):
    """The teacher read from a saved td-planner run is that run's agent (its policy) with its
    parameters and, on a batch of first rolls and of the same dice at the scoring decision,
    picks the keeps and boxes the td-planner's own agent picks."""
    teacher_config = resolve("quick", overrides=[*TINY, "algo.name=td-planner"])
    params = init_train_state(make_context(teacher_config)).params
    params = jax.tree.map(lambda leaf: leaf + 0.25, params)  # not a fresh network's
    save_run(tmp_path / "teacher", teacher_config, params)
    context = make_context(tiny_config(f"algo.teacher={tmp_path / 'teacher'}"), load_run)
    teacher = context.frozen
    for ours, theirs in zip(jax.tree.leaves(teacher.params), jax.tree.leaves(params), strict=True):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    keys = jax.random.split(jax.random.key(3), 8)
    first = jax.vmap(lambda key: engine.init(key, context.rules))(keys)
    last = first.replace(roll_index=jnp.full(8, engine.LAST_ROLL, first.roll_index.dtype))
    agent = td_planner.make_agent(teacher_config, params, "teacher")
    assert teacher.policy == agent.policy
    for cards in (first, last):
        expected = jax.jit(agent.policy)(agent.params, cards, no_others(cards), keys)
        ours = jax.jit(teacher.policy)(teacher.params, cards, no_others(cards), keys)
        np.testing.assert_array_equal(ours, expected)


def test_a_learner_of_whole_games_teaches_as_its_agent(tmp_path):
    """The teacher is found by what it plays, not by its learner's name: an A2C run of whole
    games is read as its greedy agent with the run's parameters."""
    config = resolve("quick", overrides=TINY)
    params = jax.tree.map(lambda leaf: leaf + 0.25, init_train_state(make_context(config)).params)
    save_run(tmp_path / "a2c", config, params)
    teacher = make_context(tiny_config(f"algo.teacher={tmp_path / 'a2c'}"), load_run).frozen
    assert isinstance(teacher.policy, GreedyPolicy)
    for ours, theirs in zip(jax.tree.leaves(teacher.params), jax.tree.leaves(params), strict=True):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


@pytest.mark.parametrize(
    ("teacher", "message"),
    [
        (None, "algo.teacher is required: a td-planner run"),
        ("{tmp}/nowhere", "nowhere (a td-planner run: yahtzee-jax train --preset td-planner"),
        ("{tmp}/turn", "learned YahtzeeSingleTurn-v0, not whole solitaire games"),
        ("{tmp}/yatzy", "plays yatzy rules, not official"),
    ],
)
def test_a_bad_teacher_is_rejected_in_one_line(teacher, message, tmp_path):
    """Building a training context refuses a missing teacher, a path without a run, a run
    that learned single turns and a td-planner of other rules, each in one line, before any
    compile."""
    turns = [*TINY, "env.id=YahtzeeSingleTurn-v0"]
    save_run(tmp_path / "turn", resolve("quick", overrides=turns))
    yatzy = [*TINY, "algo.name=td-planner", "env.id=Yatzy-v0"]
    save_run(tmp_path / "yatzy", resolve("quick", overrides=yatzy))
    chosen = [] if teacher is None else [f"algo.teacher={teacher.format(tmp=tmp_path)}"]
    config = tiny_config(*chosen)
    with pytest.raises(ConfigError) as error:
        make_context(config, load_run)
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["algo.teacher_share=1.5"], "algo.teacher_share=1.5 must be in [0, 1]"),
        (["algo.value_coef=-1"], "algo.value_coef=-1.0 must be >= 0"),
        (["algo.gamma=2"], "algo.gamma=2.0 must be in [0, 1]"),
        (["env.id=YahtzeeSingleTurn-v0"], "distill imitates an agent of whole solitaire games"),
    ],
)
def test_bad_distill_values_are_rejected_in_one_line(overrides, message):
    """Each bad value fails config resolution with one line."""
    with pytest.raises(ConfigError) as error:
        tiny_config(*overrides)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_train_without_a_teacher_stops_in_one_line(tmp_path, capsys):
    """`yahtzee-jax train --preset distill-td-planner` without algo.teacher exits 2 with one
    error line, and a context built without the trainer's loader refuses to update."""
    argv = ["train", "--preset", "distill-td-planner", "--out", str(tmp_path / "run")]
    assert main([*argv, "--no-progress"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "algo.teacher is required" in lines[0]
    context = make_context(tiny_config())
    with pytest.raises(ConfigError, match="distill has no teacher in this context"):
        distill.update(context, init_train_state(context))
