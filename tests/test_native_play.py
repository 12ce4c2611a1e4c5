"""Optimal play on the solver's C kernel (`solver.native_play`, `evaluate optimal --engine
native`): every decision it makes is one the NumPy advisor (`solver.advisor`, float64 from the
value table, written apart from the kernel) values best; its cards add up by the rules; its
mean is the exact optimum; a seed gives the same games on any number of threads; the command
plays it without importing JAX."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from yahtzee_jax.commands.cli import main
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, get_rules
from yahtzee_jax.solver import advise, make_position
from yahtzee_jax.solver.native_play import play_optimal
from yahtzee_jax.solver.value_table import solve


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    """A solver cache with the official, Yatzy and Yacht tables."""
    folder = tmp_path_factory.mktemp("native-play")
    for name in ("official", "yatzy", "yacht"):
        solve(name, cache_dir=folder)
    return str(folder)


@pytest.mark.parametrize("name", ["official", "yatzy"])
def test_every_decision_is_one_the_advisor_values_best(cache, name):
    """Four traced games (official: Joker rules and the +100 bonus; Yatzy: its own card): at
    every roll the dice kept are the dice the keep action keeps, and each keep and box the
    kernel chose has the advisor's best value (to 1e-9: float64 sums in another order)."""
    rules = get_rules(name)
    solution = solve(rules, cache_dir=cache)
    played = play_optimal(rules, 4, seed=7, cache_dir=cache, trace=True)
    names = rules.box_names
    for game in range(4):
        card: dict[str, int] = {}
        bonuses = 0
        for turn in range(rules.num_boxes):
            dice = played.dice[game, turn].astype(int)
            for roll in range(3):
                position = make_position(tuple(dice[roll]), roll, card, bonuses, rules=rules)
                values = advise(position, rules, solution=solution).action_values
                if roll < 2:
                    action = int(played.keeps[game, turn, roll])
                    kept = [int(dice[roll][i]) for i in range(5) if action >> i & 1]
                    after = list(dice[roll + 1])
                    assert all(kept.count(face) <= after.count(face) for face in kept)
                else:
                    action = NUM_KEEP_ACTIONS + int(played.turn_categories[game, turn])
                assert values[action] >= np.nanmax(values) - 1e-9, (game, turn, roll)
            box = names[played.turn_categories[game, turn]]
            points = int(played.turn_points[game, turn])
            before = position.scores[rules.yahtzee_box] == rules.yahtzee_score
            if rules.yahtzee_bonus and before and len(set(dice[2])) == 1:
                bonuses += 1
            card[box] = points
        assert played.yahtzee_bonus_count[game] == bonuses


@pytest.mark.parametrize("name", ["official", "yatzy", "yacht"])
def test_the_cards_add_up_and_the_mean_is_the_optimum(cache, name):
    """20,000 games: each box filled once, at the turn the record says, with the points it
    says; the total is the boxes plus the bonuses (the upper bonus exactly where the upper
    boxes reach the threshold; +100 only with 50 in the Yahtzee box); the mean is within four
    standard errors of the solved optimum."""
    rules = get_rules(name)
    played = play_optimal(rules, 20_000, seed=3, cache_dir=cache)
    assert (np.sort(played.turn_categories, axis=1) == np.arange(rules.num_boxes)).all()
    rows = np.arange(20_000)[:, None]
    assert (played.box_scores[rows, played.turn_categories] == played.turn_points).all()
    upper = played.box_scores[:, : rules.num_upper].sum(axis=1)
    threshold = rules.upper_bonus_threshold
    np.testing.assert_array_equal(played.upper_bonus, upper >= threshold)
    bonus = rules.upper_bonus_points * played.upper_bonus
    bonus = bonus + rules.yahtzee_bonus_points * played.yahtzee_bonus_count
    np.testing.assert_array_equal(played.total, played.box_scores.sum(axis=1) + bonus)
    fifty = played.box_scores[:, rules.yahtzee_box] == rules.yahtzee_score
    assert not played.yahtzee_bonus_count[~fifty].any()
    optimum = solve(rules, cache_dir=cache).expected_score
    stderr = played.total.std() / np.sqrt(len(played.total))
    assert abs(played.total.mean() - optimum) < 4 * stderr


def test_a_seed_gives_the_same_games_on_any_threads(cache):
    """The same seed on one thread and on three: the same games to the last box; another seed
    other games."""
    rules = get_rules("yacht")
    one = play_optimal(rules, 3_000, seed=11, cache_dir=cache, threads=1)
    three = play_optimal(rules, 3_000, seed=11, cache_dir=cache, threads=3)
    for mine, theirs in zip(one, three, strict=True):
        if mine is not None:
            np.testing.assert_array_equal(mine, theirs)
    other = play_optimal(rules, 3_000, seed=12, cache_dir=cache, threads=1)
    assert not np.array_equal(one.turn_points, other.turn_points)


def test_the_command_plays_natively_and_refuses_what_it_cannot(cache, tmp_path, capsys):
    """`evaluate optimal --engine native` writes the report (no plots with --no-plots) and a
    summary that names the engine; another agent, single turns or a batch size are refused in
    one line."""
    out = tmp_path / "report"
    argv = ["evaluate", "optimal", "--engine", "native", "--games", "2000", "--rules", "yacht"]
    assert main([*argv, "--cache-dir", cache, "--no-plots", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["engine"] == "native" and summary["games"] == 2000
    assert sorted(path.name for path in out.iterdir()) == ["report.md", "summary.json"]
    assert "2000 games in" in capsys.readouterr().out
    for agent_and_options, message in [
        (["greedy1"], "plays the optimal agent only, not 'greedy1'"),
        (["optimal", "--task", "single-turn"], "plays whole games"),
        (["optimal", "--batch-size", "64"], "plays whole games"),
    ]:
        args = ["evaluate", *agent_and_options, "--engine", "native", "--cache-dir", cache]
        assert main([*args, "--out", str(tmp_path / "x")]) == 2
        error = capsys.readouterr().err
        assert message in error and error.count("\n") == 1


def test_without_a_c_compiler_the_native_engine_says_so_in_one_line(cache, tmp_path, capsys):
    """Where the kernel cannot be built (no compiler), `--engine native` stops with one line
    naming the reason, and no traceback."""
    from yahtzee_jax.solver import native, native_play

    def no_compiler(*_):
        raise native.NativeError("no C compiler 'cc' on the PATH")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native_play, "load_kernel", no_compiler)
        argv = ["evaluate", "optimal", "--engine", "native", "--games", "10", "--rules", "yacht"]
        assert main([*argv, "--cache-dir", cache, "--out", str(tmp_path / "r")]) == 2
    error = capsys.readouterr().err
    assert error == (
        "yahtzee-jax evaluate: error: --engine native needs the solver's C kernel: no C "
        "compiler 'cc' on the PATH\n"
    )


def test_the_native_command_never_imports_jax(cache, tmp_path):
    """A whole `evaluate optimal --engine native` in a fresh process: JAX is never imported
    (its import is most of what a process would wait for)."""
    script = (
        "import sys\n"
        "from yahtzee_jax.commands.cli import main\n"
        f"main(['evaluate', 'optimal', '--engine', 'native', '--games', '500', '--cache-dir', "
        f"{cache!r}, '--no-plots', '--out', {str(tmp_path / 'r')!r}])\n"
        "print('JAX' if 'jax' in sys.modules else 'NO JAX')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.stdout.strip().endswith("NO JAX"), done.stderr[-2000:]
