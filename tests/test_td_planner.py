"""The turn planner and the td-planner learner.

The planner is the solver's within-turn expectimax with any leaf value: with the exact values
of the turn-start positions at its leaves it must play the hand-derivable best keep or box, and
with no future (a last turn) the best keep of the turn. The learner must reach neither the
solver's value table nor its moment or end-game tables while it trains and plays: every loader
of theirs is made to raise, and one update and a batch of games still run.
"""

from __future__ import annotations

import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from positions import card

from yahtzee_jax.agents.planner import LookaheadLeaf, plan_actions
from yahtzee_jax.algorithms.algorithm import init_train_state, make_context
from yahtzee_jax.algorithms.td_planner import (
    TDPlannerConfig,
    expected_lambda_returns,
    position_features,
    value_targets,
)
from yahtzee_jax.envs.environment import no_others
from yahtzee_jax.errors import ConfigError
from yahtzee_jax.game.engine import State, legal_action_mask
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, OFFICIAL, Category
from yahtzee_jax.runner.configs import resolve
from yahtzee_jax.solver import endgame, moments, target_table, value_table
from yahtzee_jax.solver.states import filled_count
from yahtzee_jax.solver.value_table import solve_value_table

TINY = [
    "network.hidden_size=16",
    "network.trunk_layers=1",
    "train.games_per_update=4",
    "train.total_games=400",
    "algo.name=td-planner",
]
UPPER_BOXES = {Category.ONES: 3, Category.TWOS: 6, Category.THREES: 9, Category.FOURS: 12}
ALL_BUT = {box: 0 for box in Category}


def keep_action(*positions: int) -> int:
    """The keep action that keeps the sorted dice at `positions`."""
    return sum(1 << position for position in positions)


def table_leaf(params: jax.Array, mask: jax.Array, upper: jax.Array, flag: jax.Array) -> jax.Array:
    """A leaf value read from a table over turn-start positions (the test's exact values)."""
    return params[mask, upper, flag]


def last_turn_card(open_box: int, dice: tuple[int, ...], roll_index: int) -> State:
    """The last turn of a game, every box but `open_box` written with 0."""
    scores = {box: 0 for box in Category if box != open_box}
    return card(dice, scores, roll_index)


def stack(states: list[State]) -> State:
    """A batch of hand-made states."""
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *states)


def test_planner_with_exact_leaves_plays_the_known_best_moves():
    """With the solved values of the last two turns at its leaves the planner plays:

    - two boxes open (Yahtzee, chance), 2-2-2-2-3 at the score decision: 0 in the Yahtzee box
      (0 + a last turn of chance, 23.33 expected) beats 11 in chance (11 + a last turn at the
      Yahtzee box, 50 x 4.6 % = 2.30), where the greedy one-turn choice is the 11 in chance;
    - a last turn at chance with 1-2-4-5-6: keep 5 and 6 with two re-rolls to come (a die
      re-rolled once more is worth 4.25), 4, 5 and 6 with one (a fresh die is worth 3.5);
    - a last turn at the Yahtzee box with 1-6-6-6-6: keep the four sixes.
    """
    table = solve_value_table(OFFICIAL, down_to_filled=OFFICIAL.num_boxes - 2, workers=1)
    leaves = jnp.asarray(np.nan_to_num(table), jnp.float32)
    two_open = {box: 0 for box in Category if box not in (Category.YAHTZEE, Category.CHANCE)}
    states = stack(
        [
            card((2, 2, 2, 2, 3), two_open, roll_index=2),
            last_turn_card(Category.CHANCE, (1, 2, 4, 5, 6), 0),
            last_turn_card(Category.CHANCE, (1, 2, 4, 5, 6), 1),
            last_turn_card(Category.YAHTZEE, (1, 6, 6, 6, 6), 0),
        ]
    )
    actions = jax.jit(plan_actions, static_argnums=(0, 3))(table_leaf, leaves, states, OFFICIAL)
    expected = [
        NUM_KEEP_ACTIONS + Category.YAHTZEE,
        keep_action(3, 4),
        keep_action(2, 3, 4),
        keep_action(1, 2, 3, 4),
    ]
    np.testing.assert_array_equal(np.asarray(actions), expected)
    # The same first position without a future: the greedy choice, 11 in chance.
    greedy = jax.jit(plan_actions, static_argnums=(0, 3))(
        table_leaf, jnp.zeros_like(leaves), states, OFFICIAL
    )
    assert int(greedy[0]) == NUM_KEEP_ACTIONS + Category.CHANCE


def test_lookahead_leaf_with_the_solved_table_returns_the_table():
    """Bellman's equation: a position's solved value is the turn played exactly from it with
    the solved values at its end, so the two-turn leaf over the solved table returns the
    table at every reachable position with one or two boxes open (500 sampled; the table is
    solved down to those), and 0 at a full card. The leaf is what `algo.lookahead=2` plays."""
    table = solve_value_table(OFFICIAL, down_to_filled=OFFICIAL.num_boxes - 2, workers=1)
    filled = filled_count(OFFICIAL)
    reachable = np.argwhere(~np.isnan(table) & (filled >= OFFICIAL.num_boxes - 2)[:, None, None])
    rng = np.random.default_rng(0)
    mask, upper, flag = reachable[rng.choice(len(reachable), 500, replace=False)].T
    lookahead = LookaheadLeaf(table_leaf, OFFICIAL)
    leaves = jnp.asarray(np.nan_to_num(table))
    # the full card last in the same batch: one compiled program (called op by op on its own,
    # the full card compiled each of the leaf's operations alone: 5 s)
    full = ([2**OFFICIAL.num_boxes - 1], [63], [1])
    inputs = (np.concatenate(pair) for pair in zip((mask, upper, flag), full, strict=True))
    values = jax.jit(lookahead)(leaves, *(jnp.asarray(a, jnp.int32) for a in inputs))
    np.testing.assert_allclose(np.asarray(values[:-1]), table[mask, upper, flag], rtol=1e-5)
    assert float(values[-1]) == 0.0


def test_position_features_of_hand_made_positions():
    """The empty card: every box open, no upper points, par 0, bonus reachable; a card with
    ones to fours written 3, 6, 9, 12 (par, 30) and a 50 in the Yahtzee box: 4 + 1 boxes
    filled, 33 needed of 63, fives and sixes (55 at most) can still reach it."""
    filled = sum(1 << box for box in UPPER_BOXES) | 1 << Category.YAHTZEE
    features = position_features(
        jnp.array([0, filled]), jnp.array([0, 30]), jnp.array([0, 1]), OFFICIAL
    )
    boxes = OFFICIAL.num_boxes
    np.testing.assert_allclose(features[0], [1.0] * boxes + [0, 0, 1, 1, 0, 0, 0])
    open_boxes = [0.0] * 4 + [1.0] * 7 + [0.0, 1.0]
    scalars = [30 / 63, 0, 33 / 63, 1, 0, 1, 5 / boxes]
    np.testing.assert_allclose(features[1], open_boxes + scalars, rtol=1e-6)


def test_expected_lambda_returns_mix_the_backup_and_the_return():
    """lambda = 0 gives the planner's expectations, 1 the Monte-Carlo return, 0.5 the mix
    G_t = 0.5 E_t + 0.5 (r_t + G_{t+1}) computed by hand over three turns."""
    rewards = jnp.array([[10.0], [20.0], [30.0]])
    expected = jnp.array([[55.0], [45.0], [28.0]])
    np.testing.assert_allclose(expected_lambda_returns(rewards, expected, 0.0), expected)
    np.testing.assert_allclose(expected_lambda_returns(rewards, expected, 1.0), [[60], [50], [30]])
    # G_2 = 0.5*28 + 0.5*30 = 29; G_1 = 0.5*45 + 0.5*(20+29) = 47; G_0 = 0.5*55 + 0.5*57 = 56
    np.testing.assert_allclose(expected_lambda_returns(rewards, expected, 0.5), [[56], [47], [29]])


@pytest.mark.parametrize(
    ("target", "td_lambda", "targets"),
    [
        ("mc", 0.5, [60, 50, 30]),  # the rest of the game's points
        ("td", 0.0, [50, 45, 30]),  # r_t + V(s_{t+1}), V = 0 after the last turn
        ("td", 1.0, [60, 50, 30]),
        ("expected", 0.0, [55, 45, 28]),  # the planner's expectations
    ],
)
def test_value_targets_of_each_kind(target, td_lambda, targets):
    """Three turns scoring 10, 20, 30 with V = 50, 40, 25 at their starts and the planner's
    expectations 55, 45, 28: each target by hand."""
    algo = TDPlannerConfig(target=target, td_lambda=td_lambda)
    rewards = jnp.array([[10.0], [20.0], [30.0]])
    value = jnp.array([[50.0], [40.0], [25.0]])
    turn_value = jnp.array([[55.0], [45.0], [28.0]])
    got = value_targets(algo, rewards, value, turn_value)
    np.testing.assert_allclose(got[:, 0], targets)


LOADERS = (
    (value_table, "solve"),
    (value_table, "solve_value_table"),
    (value_table, "load_table"),
    (moments, "solve_moment_table"),
    (moments, "score_moments"),
    (endgame, "endgame_distributions"),
    (endgame, "solve_endgame"),
    (target_table, "target_tables"),
    (target_table, "load_targets"),
)


def forbid_solver_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every solver table loader raise, under every name a loaded module holds it by,
    and `numpy.load` (how a cached table is read) too."""
    originals = {getattr(module, name): name for module, name in LOADERS}

    def forbidden(name: str):
        def loader(*args, **kwargs):
            raise AssertionError(f"a solver table was asked for: {name}")

        return loader

    for module in [m for key, m in sys.modules.items() if key.startswith("yahtzee_jax")]:
        for attribute, value in list(vars(module).items()):
            if callable(value) and value in originals:
                monkeypatch.setattr(module, attribute, forbidden(originals[value]))
    monkeypatch.setattr(np, "load", forbidden("numpy.load"))


def test_training_and_play_read_no_solver_table(monkeypatch):
    """With every solver table loader raising, one td-planner update runs (its planner plays the
    update's games) and its acting agent plays a legal move at each kind of decision; the
    optimal agent, built the same way, fails (the guard is live). The whole games of the acting
    agent are in test_algorithms' agent test."""
    from yahtzee_jax.agents.widget_agents import make_optimal_agent

    config = resolve("quick", overrides=TINY)
    forbid_solver_tables(monkeypatch)
    context = make_context(config)
    state = init_train_state(context)
    new_state, metrics = jax.jit(lambda s: context.algorithm.update(context, s))(state)
    assert int(new_state.step) == 1 and np.isfinite(float(metrics["loss/value"]))
    agent = context.algorithm.make_agent(config, new_state.params, "td-planner")
    states = stack([card(roll_index=0), card(roll_index=1), card(roll_index=2)])
    keys = jax.random.split(state.key, 3)
    actions = jax.jit(agent.policy)(agent.params, states, no_others(states), keys)
    legal = jax.vmap(legal_action_mask, in_axes=(0, None))(states, agent.rules)
    assert bool(jnp.all(legal[jnp.arange(3), actions]))
    with pytest.raises(AssertionError, match="a solver table was asked for"):
        make_optimal_agent("official")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["env.id=YahtzeeMatch-v0"], "td-planner plans solitaire games"),
        (["network.dropout=0.1"], "network.dropout must be 0 for td-planner"),
        (["algo.target=sarsa"], "algo.target='sarsa' is not one of: mc, td, expected"),
        (["algo.td_lambda=2"], "algo.td_lambda=2.0 not in [0, 1]"),
        (["algo.lookahead=3"], "algo.lookahead=3; choose 1 or 2"),
    ],
)
def test_bad_td_planner_values_are_rejected_in_one_line(overrides, message):
    """Each bad value fails config resolution with one line."""
    with pytest.raises(ConfigError) as error:
        resolve("quick", overrides=[*TINY, *overrides])
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.mark.slow  # the whole table's solve and two-turn planning: about a minute
def test_regret_judge_accounts_for_the_score_missing_from_the_optimum(tmp_path):
    """experiments/planner_regret.py: an untrained planner's score plus its judged loss is
    the optimum 254.59 in expectation (the performance-difference identity: each decision
    loses max Q* - Q*(chosen) in expectation, and nothing else does), here within four
    standard errors over 64 games; the losses are never negative."""
    from scripts import load_experiment_script

    from yahtzee_jax.runner.checkpointing import RunCheckpoints

    config = resolve("quick", overrides=TINY)
    RunCheckpoints(tmp_path, 1).save(1, init_train_state(make_context(config)), config, None)
    script = load_experiment_script("planner_regret")
    result = script.main([str(tmp_path), "--games", "64", "--seed", "1"])
    loss = result["one_turn_loss_per_game"][0]
    assert loss > 50  # an untrained value plays far from the optimum
    assert abs(result["one_turn_mean_score"] + loss - 254.59) < 4 * 60 / 8
    assert result["two_turn_loss_per_game_on_its_positions"][0] >= 0


def test_bench_script_times_each_preset_at_each_batch(tmp_path, capsys, monkeypatch):
    """experiments/bench_td_planner.py --batches: one row per (preset, games per update), each
    chunk built at that batch, not the preset's own (quick's is 64; the timing itself is
    `bench train`'s, tested there, and faked here); a bad list is one line, exit 2."""
    from scripts import load_experiment_script

    script = load_experiment_script("bench_td_planner")
    timed = []

    def fake_time_chunk(config, repeats):
        timed.append((config.algo.name, config.network.hidden_size, repeats))
        batch = config.train.games_per_update
        return {
            "games_per_update": batch,
            "ms_per_update": 1.0,
            "games_per_second": batch * 1e3,
            "compile_seconds": 0.0,
        }

    monkeypatch.setattr(script, "time_chunk", fake_time_chunk)
    out = tmp_path / "bench.json"
    argv = [
        "--presets",
        "quick,td-planner",
        "--batches",
        "2,3",
        "--repeats",
        "1",
        "--json",
        str(out),
    ]
    assert script.main(argv) == 0
    rows = json.loads(out.read_text())
    assert [(row["preset"], row["games_per_update"]) for row in rows] == [
        ("quick", 2),
        ("quick", 3),
        ("td-planner", 2),
        ("td-planner", 3),
    ]
    assert timed == [("a2c", 128, 1)] * 2 + [("td-planner", 128, 1)] * 2
    assert script.main(["--batches", "2,x"]) == 2
    assert "--batches '2,x' must be comma-separated positive integers" in capsys.readouterr().err
