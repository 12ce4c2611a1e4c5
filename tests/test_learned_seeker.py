"""The learned target-seeker (`algorithms.target_rows_fit`): its network's rows, the teacher's
rows it is fit to, the fit, the rows laid out as the solver's tables are, and its match play
with every solver table loader raising. The seven-box game (the upper six and a 50-point five
of a kind: 128 cards, rows of at most 156 points) keeps the fits to seconds."""

from __future__ import annotations

import dataclasses
import functools
import json
import sys

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from positions import card, seven_box_rules
from scripts import load_experiment_script
from test_td_planner import forbid_solver_tables

from yahtzee_jax.agents import builtin_agent
from yahtzee_jax.agents.target_seeker import target_seeker_agent
from yahtzee_jax.algorithms.target_rows_fit import (
    RowsFit,
    fit_rows,
    inputs_of,
    learned_seeker_agent,
    learned_tables,
    load_fit,
    predicted_rows,
    row_owners,
    save_fit,
    teacher_rows,
)
from yahtzee_jax.errors import UserError
from yahtzee_jax.evaluation.matches import match_totals
from yahtzee_jax.game.engine import legal_action_mask
from yahtzee_jax.networks.target_rows import ROW_BINS, survival
from yahtzee_jax.solver.states import filled_count
from yahtzee_jax.solver.target_layout import state_chances, target_layout
from yahtzee_jax.solver.target_table import target_tables

RULES = seven_box_rules("learned-seeker-test")
FIT = RowsFit(hidden_size=128, layers=2, lr=3e-3, batch_size=16, epochs=150, holdout=0.1)
# A three-epoch fit to interrupt and resume; its settings are all the script's flags can say
RESUMABLE = RowsFit(hidden_size=64, layers=2, lr=3e-3, batch_size=16, epochs=3)
RESUMABLE_FLAGS = ["--hidden-size", "64", "--layers", "2", "--lr", "0.003", "--batch-size", "16"]


@functools.cache
def teacher(cache: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(states, their T and E rows, the flat target table) of the seven-box game."""
    best = target_tables(RULES, cache_dir=cache, policy="target")
    follow = target_tables(RULES, cache_dir=cache, policy="expected")
    states = row_owners(target_layout(RULES))
    return states, teacher_rows(best.flat, follow.flat, target_layout(RULES), states), best.flat


@functools.cache
def fitted(cache: str) -> tuple:
    """The network fit to the seven-box game's rows: (params, curve)."""
    states, rows, _ = teacher(cache)
    turns = filled_count(RULES)[states[:, 0]]
    return fit_rows(FIT, inputs_of(states, RULES), rows, turns)


@functools.cache
def fitted_whole(cache: str) -> tuple:
    """(inputs, rows, turns, and RESUMABLE's fit run whole: params, curve)."""
    states, rows, _ = teacher(cache)
    inputs, turns = inputs_of(states, RULES), filled_count(RULES)[states[:, 0]]
    return inputs, rows, turns, fit_rows(RESUMABLE, inputs, rows, turns)


def stopped_after_one_epoch(cache: str, progress) -> None:
    """Run RESUMABLE's fit with `progress` and stop it after its first epoch, as Ctrl-C would."""

    def stop(entry: dict) -> None:
        if entry["epoch"] == 1:
            raise KeyboardInterrupt

    inputs, rows, turns, _ = fitted_whole(cache)
    with pytest.raises(KeyboardInterrupt):
        fit_rows(RESUMABLE, inputs, rows, turns, stop, progress)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    """One solver cache for the module (the seven-box game's tables: seconds)."""
    return str(tmp_path_factory.mktemp("learned-seeker-cache"))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.floats(0.1, 30.0))
def test_a_rows_survival_starts_at_one_and_never_rises(seed, scale):
    """Any logits give a row that starts at 1, never rises and stays in [0, 1] (to a few of
    float32's steps at 1: XLA's running sum may associate each entry's terms its own way)."""
    logits = scale * jax.random.normal(jax.random.key(seed), (3, ROW_BINS))
    row = np.asarray(survival(logits))
    np.testing.assert_allclose(row[:, 0], 1.0, atol=1e-6)
    assert np.all(np.diff(row, axis=-1) <= 1e-6) and row.min() >= 0.0 and row.max() <= 1 + 1e-6


def test_teacher_rows_are_each_states_row_of_both_tables(cache):
    """The fit's targets are the tables' own rows (`state_chances`), 0 past their ends: every
    distinct row once (128 cards, the full card's row [1])."""
    states, rows, _ = teacher(cache)
    best = target_tables(RULES, cache_dir=cache, policy="target")
    follow = target_tables(RULES, cache_dir=cache, policy="expected")
    assert len(states) == 128
    for state, (t_row, e_row) in zip(map(tuple, states), rows, strict=True):
        for got, table in ((t_row, best), (e_row, follow)):
            want = table.chances(state)
            np.testing.assert_allclose(got[: len(want)], want, atol=1e-7)
            assert not got[len(want) :].any()


def test_the_fit_brings_its_rows_within_a_hundredth(cache):
    """Fit on 90 % of the seven-box rows: the rows it was fit to come within 0.01 a row entry
    (root mean square, both heads), and the held-out rows' error ends under 0.02, a third of
    its first epoch's or less (late cards are each one of a kind here: what is held out is
    partly unseen)."""
    params, curve = fitted(cache)
    states, rows, _ = teacher(cache)
    held = np.random.default_rng(FIT.seed).permutation(len(states))[: int(FIT.holdout * 128)]
    trained = np.setdiff1d(np.arange(len(states)), held)
    got = predicted_rows(params, FIT.network(), inputs_of(states[trained], RULES))
    for head, name in enumerate(("target", "expected")):
        assert np.sqrt(np.mean((got[:, head] - rows[trained, head]) ** 2)) < 0.01
        assert curve[-1][f"{name}_rms"] < min(0.02, curve[0][f"{name}_rms"] / 3)


def test_learned_tables_hold_the_networks_rows_where_the_solvers_would(cache):
    """Each row in the learned flat tables (read by the solver's own accessor) is the network's
    survival row for its owner's features, and its value the row's mean points to come; a copy
    (here a flag with no bonus to pay) reads its original's row, as in the solver's tables."""
    params, _ = fitted(cache)
    target, expected, value = learned_tables(params, FIT, RULES)
    layout = target_layout(RULES)
    net = FIT.network()
    owners = {tuple(int(v) for v in state) for state in row_owners(layout)}
    assert (63, 0, 0) in owners and (63, 0, 1) not in owners
    np.testing.assert_array_equal(
        state_chances(target, layout, (63, 0, 1)), state_chances(target, layout, (63, 0, 0))
    )
    for state in [(0, 0, 0), (5, 0, 0), (63, 0, 0), (126, 0, 0)]:
        x, lengths = inputs_of(np.array([state]), RULES)
        direct = np.asarray(survival(net.apply({"params": params}, x, lengths)))[0]
        for head, flat in enumerate((target, expected)):
            row = state_chances(flat, layout, state)
            np.testing.assert_allclose(row, direct[head, : len(row)], atol=1e-6)
        assert value[state] == pytest.approx(direct[1, 1:].sum(), abs=1e-3)


def built_under_the_guard(cache, monkeypatch):
    """(the learned seeker built with every solver table loader raising, the target-seeker)."""
    params, _ = fitted(cache)
    target_layout(RULES)
    forbid_solver_tables(monkeypatch)
    agent = learned_seeker_agent(params, FIT, RULES)
    monkeypatch.undo()
    return agent, target_seeker_agent(RULES, cache, 1.0, False)


def test_the_learned_seeker_plays_without_solver_tables_as_the_seeker_does(cache, monkeypatch):
    """Built with every solver table loader raising, the learned seeker plays legal moves at
    mid-game cards at each roll, and takes the target-seeker's own action at most of them."""
    agent, seeker = built_under_the_guard(cache, monkeypatch)
    cards = [card((d, d, 3, 4, 5), {0: 1, 1: 2}, r, rules=RULES) for d in (1, 6) for r in (0, 2)]
    own = jax.tree.map(lambda *x: jnp.stack(x), *cards)
    rivals = jax.tree.map(lambda x: x[:, None], own)
    keys = jax.random.split(jax.random.key(0), len(cards))
    mine = jax.jit(agent.policy)(agent.params, own, rivals, keys)
    legal = jax.vmap(legal_action_mask, in_axes=(0, None))(own, RULES)
    assert bool(jnp.all(legal[jnp.arange(len(cards)), mine]))
    theirs = jax.jit(seeker.policy)(seeker.params, own, rivals, keys)
    assert np.mean(np.asarray(mine) == np.asarray(theirs)) >= 0.75


@pytest.mark.slow  # 200 matches of each player: 15 s of make test; the moves are checked above
def test_the_learned_seeker_wins_about_as_often_as_the_seeker(cache, monkeypatch):
    """Over 200 whole seven-box matches against the optimal agent (played after the guard: the
    opponent reads its table) the learned seeker wins within 12 points of the target-seeker on
    the same dice."""
    agent, seeker = built_under_the_guard(cache, monkeypatch)
    rival = (builtin_agent("optimal", RULES, cache_dir=cache),)
    wins = []
    for player in (agent, seeker):
        own, others = match_totals(player, rival, RULES, 200, 5, 100, False)
        wins.append(np.mean(own > others[:, 0]))
    assert abs(wins[0] - wins[1]) < 0.12


def test_a_saved_fit_loads_to_the_same_rows_and_a_bad_folder_is_one_line(cache, tmp_path):
    """`save_fit` then `load_fit` gives the same hyperparameters and rows to the bit; a folder
    without a fit, or with a damaged summary, is a one-line error."""
    params, _ = fitted(cache)
    states, _, _ = teacher(cache)
    inputs = inputs_of(states, RULES)
    save_fit(tmp_path / "fit", FIT, params, {"rules": RULES.name, "features": inputs[0].shape[1]})
    fit, loaded, summary = load_fit(tmp_path / "fit")
    assert fit == FIT and summary["rules"] == RULES.name
    np.testing.assert_array_equal(
        predicted_rows(loaded, fit.network(), inputs), predicted_rows(params, FIT.network(), inputs)
    )
    with pytest.raises(UserError, match="holds no learned seeker's fit"):
        load_fit(tmp_path / "nothing")
    (tmp_path / "fit" / "summary.json").write_text("{")
    with pytest.raises(UserError, match="holds no learned seeker's fit"):
        load_fit(tmp_path / "fit")


def test_match_command_plays_a_fit_folder(cache, tmp_path, monkeypatch):
    """`yahtzee-jax match FOLDER` plays a folder `save_fit` wrote as the learned seeker (its
    rules found by name: here the test's seven-box game, handed to the lookup) and records it;
    `--set` on it is refused in one line. Against the random agent: the default, the optimal
    agent, compiled its table into the play for 4 s more (its matches against the learned
    seeker are test_the_learned_seeker_wins_about_as_often_as_the_seeker's, slow)."""

    from yahtzee_jax.algorithms import target_rows_fit
    from yahtzee_jax.commands.cli import main

    params, _ = fitted(cache)
    states, _, _ = teacher(cache)
    folder = tmp_path / "fit"
    features = inputs_of(states, RULES)[0].shape[1]
    save_fit(folder, FIT, params, {"rules": RULES.name, "features": features})
    monkeypatch.setattr(target_rows_fit, "get_rules", lambda name: RULES)
    monkeypatch.setenv("YAHTZEE_JAX_CACHE", cache)
    out = tmp_path / "match.json"
    argv = ["match", str(folder), "--opponent", "random", "--games", "8", "--seed", "3"]
    argv.append("--no-progress")
    assert main([*argv, "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["wins"] + result["draws"] + result["losses"] == 8
    assert result["run"] == str(folder) and result["update"] == FIT.epochs
    assert main([*argv, "--set", "algo.match_open=2"]) == 2


def test_the_rows_cover_every_target_the_seeker_sums():
    """The seeker sums my rows over d < WINDOW: the network's rows are that long, so no target
    it reads is left at 0 by their end."""
    from yahtzee_jax.solver.seeker_policy import WINDOW

    assert ROW_BINS >= WINDOW


def test_an_interrupted_fit_resumed_ends_as_the_fit_run_whole(cache, tmp_path):
    """A fit stopped after its first epoch and run again with its progress file goes on at the
    second epoch and ends with the parameters and losses of the fit run whole, to the bit; a
    progress file begun with other settings, or damaged, is refused in one line."""
    inputs, rows, turns, (whole, whole_curve) = fitted_whole(cache)
    progress = tmp_path / "progress.msgpack"
    stopped_after_one_epoch(cache, progress)
    seen = []
    resumed, curve = fit_rows(RESUMABLE, inputs, rows, turns, seen.append, progress)
    assert [entry["epoch"] for entry in seen] == [2, 3]
    jax.tree.map(np.testing.assert_array_equal, resumed, whole)
    assert [e["train_loss"] for e in curve] == [e["train_loss"] for e in whole_curve]
    other = dataclasses.replace(RESUMABLE, lr=1e-3)
    with pytest.raises(UserError, match=r"begun with other settings \(lr\)"):
        fit_rows(other, inputs, rows, turns, progress=progress)
    # a file written before a field was added: the missing field takes its default
    payload = flax.serialization.msgpack_restore(progress.read_bytes())
    record = json.loads(payload["record"])
    del record["fit"]["logit_scale"]
    payload["record"] = json.dumps(record)
    progress.write_bytes(flax.serialization.msgpack_serialize(payload))
    with pytest.raises(UserError, match=r"begun with other settings \(lr\)"):
        fit_rows(other, inputs, rows, turns, progress=progress)
    progress.write_bytes(b"\x93")
    with pytest.raises(UserError, match="is not an unfinished fit's progress"):
        fit_rows(RESUMABLE, inputs, rows, turns, progress=progress)


def test_the_fit_script_resumes_an_unfinished_fit_and_refuses_in_one_line(
    cache, tmp_path, monkeypatch
):
    """`learned_seeker.py fit --resume` with nothing to resume, or a fit without `--resume` over
    an unfinished one, stops in one line before any table is read; with `--resume` it finishes
    the stopped fit, writes the fit the whole run would have and removes its progress file."""
    script = load_experiment_script("learned_seeker")
    out = tmp_path / "fit"
    argv = ["learned_seeker.py", "fit", "--out", str(out), *RESUMABLE_FLAGS, "--epochs", "3"]
    monkeypatch.setattr(script, "target_tables", None)  # no table may be read before the checks
    monkeypatch.setattr(sys, "argv", [*argv, "--resume"])
    with pytest.raises(SystemExit, match="holds no unfinished fit to resume"):
        script.main()
    out.mkdir()
    stopped_after_one_epoch(cache, out / script.PROGRESS)
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit, match="holds an unfinished fit: pass --resume"):
        script.main()
    monkeypatch.setattr(script, "target_tables", target_tables)
    monkeypatch.setattr(script, "get_rules", lambda name: RULES)
    monkeypatch.setenv("YAHTZEE_JAX_CACHE", cache)
    monkeypatch.setattr(sys, "argv", [*argv, "--resume"])
    script.main()
    assert not (out / script.PROGRESS).exists()
    fit, params, summary = load_fit(out)
    assert fit == RESUMABLE and [entry["epoch"] for entry in summary["curve"]] == [1, 2, 3]
    jax.tree.map(np.testing.assert_array_equal, params, fitted_whole(cache)[3][0])


def test_a_fit_without_held_out_states_measures_a_training_sample_and_every_state(
    cache, tmp_path, monkeypatch
):
    """`fit --holdout 0` trains on every state (play reads them all): its curve is measured on
    the first twentieth of its seed's permutation, and its summary's `every_state` errors are
    those of the saved network over every state's rows, computed here again with numpy alone;
    a held-out share outside [0, 1) is refused in one line before any table is read."""
    script = load_experiment_script("learned_seeker")
    out = tmp_path / "fit"
    argv = ["learned_seeker.py", "fit", "--out", str(out), *RESUMABLE_FLAGS, "--epochs", "1"]
    monkeypatch.setattr(script, "target_tables", None)
    monkeypatch.setattr(sys, "argv", [*argv, "--holdout", "1"])
    with pytest.raises(SystemExit, match=r"--holdout must lie in \[0, 1\), not 1.0"):
        script.main()
    monkeypatch.setattr(script, "target_tables", target_tables)
    monkeypatch.setattr(script, "get_rules", lambda name: RULES)
    monkeypatch.setenv("YAHTZEE_JAX_CACHE", cache)
    monkeypatch.setattr(sys, "argv", [*argv, "--holdout", "0"])
    script.main()
    fit, params, summary = load_fit(out)
    assert fit.holdout == 0 and summary["curve_measured_on"] == "a training sample"
    states, rows, _ = teacher(cache)
    error = predicted_rows(params, fit.network(), inputs_of(states, RULES)) - rows
    every = summary["every_state"]
    assert every["target_rms"] == pytest.approx(np.sqrt(np.mean(error[:, 0] ** 2)), rel=1e-5)
    assert every["expected_max"] == pytest.approx(np.abs(error[:, 1]).max(), rel=1e-5)
    sample = np.random.default_rng(fit.seed).permutation(len(states))[: len(states) // 20]
    assert summary["curve"][0]["target_rms"] == pytest.approx(
        np.sqrt(np.mean(error[sample, 0] ** 2)), rel=1e-5
    )


def test_the_errors_script_measures_each_fit_and_their_mean_over_every_state(
    cache, tmp_path, monkeypatch
):
    """`learned_seeker.py errors A B --out F` writes each fit's errors over every state's rows
    and those of the two fits' rows averaged, as numpy computes them here from the saved
    networks; fits of different rules are refused in one line."""
    script = load_experiment_script("learned_seeker")
    states, rows, _ = teacher(cache)
    inputs = inputs_of(states, RULES)
    folders = [tmp_path / "a", tmp_path / "b"]
    predicted = []
    for folder, (params, _) in zip(folders, [fitted(cache), fitted_whole(cache)[3]], strict=True):
        fit = FIT if folder.name == "a" else RESUMABLE
        save_fit(folder, fit, params, {"rules": RULES.name, "features": inputs[0].shape[1]})
        predicted.append(predicted_rows(params, fit.network(), inputs))
    monkeypatch.setattr(script, "get_rules", lambda name: RULES)
    monkeypatch.setenv("YAHTZEE_JAX_CACHE", cache)
    out = tmp_path / "errors.json"
    argv = ["learned_seeker.py", "errors", *map(str, folders), "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    script.main()
    report = json.loads(out.read_text())
    mean = (predicted[0] + predicted[1]) / 2
    for errors, guess in [
        (report["fits"][str(folders[1])], predicted[1]),
        (report["mean_of_rows"], mean),
    ]:
        assert errors["expected_rms"] == pytest.approx(
            np.sqrt(np.mean((guess - rows)[:, 1] ** 2)), rel=1e-5
        )
    summary = json.loads((folders[1] / "summary.json").read_text())
    (folders[1] / "summary.json").write_text(json.dumps(summary | {"rules": "yatzy"}))
    with pytest.raises(SystemExit, match="the fits were fit to different rules"):
        script.main()
