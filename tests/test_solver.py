"""Exact solver, widget and optimal advisor.

The exact checks compare the batched solver with a brute force written here in plain Python
(dice outcomes enumerated one by one, keeps as bit masks, scoring by `yahtzee_jax.game.reference`),
which shares no code with the solver. One full official solve runs per session (disk cache in a
temporary folder); the other three published optima are solved once each (about 4 s apiece).
The `slow` test plays 100,000 optimal games against the paper's DP row.
"""

from __future__ import annotations

import functools
import itertools
import multiprocessing
import signal

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from positions import card_state, card_without, enumerated_turn

from yahtzee_jax.agents.widget_agents import make_optimal_agent
from yahtzee_jax.commands.cli import main
from yahtzee_jax.errors import UserError
from yahtzee_jax.evaluation.records import play_games
from yahtzee_jax.evaluation.statistics import score_statistics
from yahtzee_jax.game import reference
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, OFFICIAL, Category
from yahtzee_jax.solver import advise, make_position, optimal_expected_score, solve, value_table
from yahtzee_jax.solver.value_table import (
    load_table,
    most_points,
    reachable_upper_totals,
    solve_value_table,
    solved_states,
)
from yahtzee_jax.solver.widget import (
    best_keep_values,
    expected_over_rolls,
    keep_values,
    turn_keep_values,
    turn_start_value,
)
from yahtzee_jax.solver.widget_tables import (
    DISTINCT_FACES,
    KEEP_OF_ACTION,
    ROLL_PROBABILITIES,
    ROLLS,
    WIDGET_ORDER,
    keep_index,
    roll_index_of,
)

PUBLISHED_OPTIMA = {
    "official": 254.5877287345,
    "free-joker": 254.5896094820,
    "no-joker": 253.9702411898,
    "plain": 245.8707745141,
}


@pytest.fixture(scope="session")
def solver_cache(tmp_path_factory) -> str:
    """A private value-table cache holding the official solve (solved once per session)."""
    cache_dir = tmp_path_factory.mktemp("solver_cache")
    solve("official", cache_dir=cache_dir)
    return str(cache_dir)


@pytest.fixture(scope="session")
def official(solver_cache):
    """The official solve, loaded from the session cache."""
    return solve("official", cache_dir=solver_cache)


# ------------------------------------------------------------------------------------------
# The widget against plain enumeration
# ------------------------------------------------------------------------------------------


def test_roll_tables():
    """252 sorted rolls whose probabilities sum to 1; keep-all is the roll, keep-none is empty."""
    assert ROLLS.shape == (252, 5) and (np.diff(ROLLS, axis=1) >= 0).all()
    assert ROLL_PROBABILITIES.sum() == pytest.approx(1.0, abs=1e-15)
    assert ROLL_PROBABILITIES[roll_index_of((1, 2, 3, 4, 5))] == pytest.approx(120 / 7776)
    for roll, dice in enumerate(ROLLS):
        assert KEEP_OF_ACTION[roll, NUM_KEEP_ACTIONS - 1] == keep_index(tuple(dice))
        assert KEEP_OF_ACTION[roll, 0] == keep_index(())


def test_keep_values_equal_enumerated_rerolls():
    """The one-die-at-a-time expectation equals the mean over all 6^n re-roll outcomes."""
    final = np.random.default_rng(0).normal(size=252)
    widget = keep_values(final)
    for size in range(6):
        for kept in itertools.combinations_with_replacement(range(1, 7), size):
            outcomes = itertools.product(range(1, 7), repeat=5 - size)
            brute = np.mean([final[roll_index_of((*kept, *rolled))] for rolled in outcomes])
            assert widget[keep_index(kept)] == pytest.approx(brute, abs=1e-12)


def test_best_keep_values_equal_max_over_keep_masks():
    """The best keep of each roll equals the max over its 32 keep masks."""
    values = np.random.default_rng(1).normal(size=462)
    best = best_keep_values(values)
    for roll, dice in enumerate(ROLLS):
        masks = [tuple(dice[i] for i in range(5) if mask >> i & 1) for mask in range(32)]
        assert best[roll] == max(values[keep_index(kept)] for kept in masks)


def test_solver_widget_equals_the_generic_one_bit_for_bit():
    """`turn_start_value` (the solver's in-place loop, rolls and keeps sorted by distinct faces)
    gives the generic widget's turn-start values to the last bit, on random final values."""
    final = np.random.default_rng(2).normal(size=(252, 37)) * 100
    generic = expected_over_rolls(best_keep_values(turn_keep_values(final)[1]))
    in_place = turn_start_value(final[WIDGET_ORDER[5]])
    np.testing.assert_array_equal(in_place, generic)
    for size, order in enumerate(WIDGET_ORDER):  # a permutation, most distinct faces first
        assert sorted(order) == list(range(len(order)))
        assert (np.diff(DISTINCT_FACES[size]) <= 0).all()


# ------------------------------------------------------------------------------------------
# End games against brute force
# ------------------------------------------------------------------------------------------


def brute_force_value(card: dict[str, int], variant: str) -> float:
    """Optimal expected final score from the start of a turn: full enumeration, plain Python."""

    @functools.cache
    def game_value(card_items: frozenset, bonuses: int) -> float:
        card = dict(card_items)
        if len(card) == len(reference.BOXES):
            return reference.final_score(card, bonuses)
        return turn_value(card_items, bonuses)

    @functools.cache
    def turn_value(card_items: frozenset, bonuses: int) -> float:
        card = dict(card_items)

        @functools.cache
        def score_now(dice: tuple[int, ...]) -> float:
            options = reference.choices(list(dice), card, variant)
            return max(
                game_value(card_items | {(box, points)}, bonuses + (bonus > 0))
                for box, (points, bonus) in options.items()
            )

        return enumerated_turn(score_now)

    return game_value(frozenset(card.items()), 0)


def solver_value(table: np.ndarray, card: dict[str, int]) -> float:
    """Expected final score of a card at a turn start from the solver's value table."""
    return reference.final_score(card, 0) + table[card_state(card)]


END_GAMES = {
    # Yahtzee and large straight open: pure dice chasing, no bonus at stake.
    "yahtzee+straight": (card_without("yahtzee", "large_straight"), ("official",)),
    # Upper total 57 with fours open: two or more fours win the 35 bonus.
    "fours+full-house": (card_without("fours", "full_house", ones=3, sixes=24), ("official",)),
    # 50 in the Yahtzee box, sixes and full house open: Joker placement, +100, and three sixes
    # (upper total 45 + 18) win the upper bonus.
    "joker": (
        card_without("sixes", "full_house", yahtzee=50, ones=3),
        ("official", "free-joker", "no-joker", "plain"),
    ),
}


@pytest.fixture(scope="module")
def endgame_tables() -> dict[str, np.ndarray]:
    """Partial solves (cards with at most two open boxes) of every variant."""
    variants = {variant for _, names in END_GAMES.values() for variant in names}
    return {variant: solve_value_table(variant, down_to_filled=11) for variant in variants}


@pytest.mark.parametrize(
    ("name", "variant"),
    [(name, variant) for name, (_, variants) in END_GAMES.items() for variant in variants],
)
def test_endgame_matches_brute_force(endgame_tables, name, variant):
    """Solver and plain enumeration agree to 1e-9 on positions with two open boxes."""
    card = END_GAMES[name][0]
    expected = brute_force_value(card, variant)
    assert solver_value(endgame_tables[variant], card) == pytest.approx(expected, abs=1e-9)


def test_worker_processes_solve_bit_for_bit_like_one_process(endgame_tables):
    """The forked workers, writing into the shared table, give exactly the one-process values
    (three open boxes at most, so both solves are quick), and leave no process behind."""
    one = solve_value_table("official", down_to_filled=10, workers=1)
    two = solve_value_table("official", down_to_filled=10, workers=2)
    np.testing.assert_array_equal(one, two)  # NaN where unsolved, in both
    filled = np.array([bin(mask).count("1") for mask in range(1 << 13)])
    assert np.isfinite(two[filled == 10]).any() and np.isnan(two[filled == 9]).all()
    np.testing.assert_array_equal(two[filled >= 11], endgame_tables["official"][filled >= 11])
    assert multiprocessing.active_children() == []


def test_the_workers_leave_ctrl_c_to_the_command():
    """A forked worker ignores SIGINT: Ctrl-C reaches the whole process group, and workers that
    took it printed their tracebacks under the command's one line (3 of 11 interrupted solves,
    found by a review session); the parent's KeyboardInterrupt ends the pool. SIGTERM, which
    the pool's end sends, ends a worker at once, whatever handler the command set."""

    def command_handler(signum, frame):
        raise KeyboardInterrupt

    # A command's own handlers (pytest's workers may ignore SIGINT: a fork would inherit that)
    before = {
        sig: signal.signal(sig, handler)
        for sig, handler in ((signal.SIGINT, signal.default_int_handler),
                             (signal.SIGTERM, command_handler))
    }  # fmt: skip
    try:
        pool = value_table._worker_pool(2)
        try:
            handlers = pool.map(signal.getsignal, [signal.SIGINT] * 2)
            ends = pool.map(signal.getsignal, [signal.SIGTERM] * 2)
        finally:
            pool.terminate()
            pool.join()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # left as it was
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    assert handlers == [signal.SIG_IGN, signal.SIG_IGN]
    assert ends == [signal.SIG_DFL, signal.SIG_DFL]


def test_last_turn_matches_brute_force(endgame_tables):
    """One open box (three of a kind, Yahtzee box 0): the last turn, enumerated."""
    card = card_without("three_of_a_kind")
    expected = brute_force_value(card, "official")
    assert solver_value(endgame_tables["official"], card) == pytest.approx(expected, abs=1e-9)


# ------------------------------------------------------------------------------------------
# Full solves and the cache
# ------------------------------------------------------------------------------------------


def test_official_optimum_and_cache(official, solver_cache):
    """The official optimum is the published 254.5877287345, every reachable state is solved,
    and the second call loads the table from the cache."""
    assert official.expected_score == pytest.approx(PUBLISHED_OPTIMA["official"], abs=1e-6)
    assert official.from_cache
    assert optimal_expected_score("official", cache_dir=solver_cache) == official.expected_score
    masks = np.arange(1 << 13)
    for upper_mask in range(64):
        table = official.value_table[masks[masks % 64 == upper_mask]]
        assert np.isfinite(table[:, reachable_upper_totals(upper_mask, OFFICIAL)]).all()


def test_cache_holds_the_solved_states_only(official, tmp_path):
    """The cache file stores the 359,616 solved states, 8 bytes each plus the archive's few
    hundred bytes of headers (2.9 MB, against 8.4 MB for the dense table); loading rebuilds the
    dense table exactly; a damaged file is ignored."""
    states = solved_states(official.rules)
    assert states.sum() == 359_616
    assert 359_616 * 8 < official.cache_path.stat().st_size < 359_616 * 8 + 4096
    loaded = load_table(official.cache_path, official.rules, most_points(official.rules))
    np.testing.assert_array_equal(loaded, official.value_table)
    damaged = tmp_path / "damaged.npz"
    for content in (official.cache_path.read_bytes()[:1000], b"not a table"):
        damaged.write_bytes(content)
        assert load_table(damaged, official.rules, most_points(official.rules)) is None


# The two joker variants solve a whole table each (12 s apiece under the tests' compile flags):
# they run with the slow tests; the compiled program's joker paths are checked fast against the
# NumPy loop (`test_solver_compiled.py`), and official and plain solve to their optima here.
@pytest.mark.parametrize(
    "variant",
    [
        pytest.param("free-joker", marks=pytest.mark.slow),
        pytest.param("no-joker", marks=pytest.mark.slow),
        "plain",
    ],
)
def test_published_optimum(variant, tmp_path):
    """Every rule variant reproduces its published optimum to 1e-6."""
    result = solve(variant, cache_dir=tmp_path)
    assert result.expected_score == pytest.approx(PUBLISHED_OPTIMA[variant], abs=1e-6)


# ------------------------------------------------------------------------------------------
# The advisor
# ------------------------------------------------------------------------------------------


def test_advisor_first_rolls_average_to_the_optimum(official):
    """Averaging the advisor's value over the first roll of a game gives the solved optimum."""
    values = [
        advise(make_position(dice, rules=OFFICIAL), OFFICIAL, solution=official).value
        for dice in ROLLS
    ]
    assert np.dot(ROLL_PROBABILITIES, values) == pytest.approx(official.expected_score, abs=1e-9)


def test_advisor_score_decision(official):
    """Dice 2 3 4 5 6 at the score decision with ones=3, chance=22 written.

    Scoring the large straight is worth 25 (so far) + 40 + the value of the card that follows;
    it is the best action.
    """
    state = make_position(
        [2, 3, 4, 5, 6], roll_index=2, card={"ones": 3, "chance": 22}, rules=OFFICIAL
    )
    result = advise(state, OFFICIAL, solution=official)
    after = {"ones": 3, "chance": 22, "large_straight": 40}
    expected = solver_value(official.value_table, after)
    action = NUM_KEEP_ACTIONS + Category.LARGE_STRAIGHT
    assert result.action_values[action] == pytest.approx(expected, abs=1e-9)
    assert result.best_action == action and result.value == result.action_values[action]
    assert np.isnan(result.action_values[:NUM_KEEP_ACTIONS]).all()
    assert np.isnan(result.action_values[NUM_KEEP_ACTIONS + Category.CHANCE])


def test_advisor_keep_decision_is_mean_over_rerolls(official):
    """At the last keep, keeping 6 6 6 6 is worth the mean of the six score decisions."""
    state = make_position([1, 6, 6, 6, 6], roll_index=1, rules=OFFICIAL)
    result = advise(state, OFFICIAL, solution=official)
    keep_sixes = 0b11110  # sorted dice: the 1 is at position 0
    finals = [
        advise(
            make_position([face, 6, 6, 6, 6], roll_index=2, rules=OFFICIAL),
            OFFICIAL,
            solution=official,
        ).value
        for face in range(1, 7)
    ]
    assert result.action_values[keep_sixes] == pytest.approx(np.mean(finals), abs=1e-9)
    assert np.isnan(result.action_values[NUM_KEEP_ACTIONS:]).all()


@pytest.mark.parametrize(
    ("card", "bonuses", "message"),
    [
        ({"twos": 3}, 0, "cannot hold 3"),
        ({"yahtzee": 0}, 1, "Yahtzee bonuses"),
        ({"sevens": 7}, 0, "unknown box"),
        (dict.fromkeys(OFFICIAL.box_names, 0), 0, "game is over"),
    ],
)
def test_advisor_rejects_impossible_positions(official, card, bonuses, message):
    """Impossible cards get a clear UserError instead of a number."""
    with pytest.raises(UserError, match=message):
        advise(
            make_position([1, 1, 2, 3, 4], card=card, yahtzee_bonus_count=bonuses, rules=OFFICIAL),
            OFFICIAL,
            solution=official,
        )


# ------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------


def test_cli_solve_and_advise(solver_cache, capsys):
    """`solve` prints the optimum (10 decimals) from the cache; `advise` lists the best keep."""
    assert main(["solve", "--rules", "official", "--cache-dir", solver_cache]) == 0
    assert "254.5877287345" in capsys.readouterr().out
    args = ["advise", "--cache-dir", solver_cache, "--dice", "1,2,3,3,5", "--roll", "0"]
    assert main([*args, "--card", "ones=3,chance=22", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "optimal expected final score" in out and "keep 3 3" in out and "<- best" in out


@pytest.mark.parametrize(
    "bad",
    [
        ["--dice", "1,2,3"],
        ["--dice", "1,2,3,4,7"],
        ["--dice", "1,2,3,4,5", "--roll", "3"],
        ["--dice", "1,2,3,4,5", "--card", "ones"],
        ["--dice", "1,2,3,4,5", "--card", "ones=x"],
        ["--dice", "1,2,3,4,5", "--rules", "nope"],
    ],
)
def test_cli_advise_bad_input(solver_cache, capsys, bad):
    """Bad input: exit status 2 and a single error line."""
    assert main(["advise", "--cache-dir", solver_cache, *bad]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("yahtzee-jax advise: error:") and "\n" not in err


# ------------------------------------------------------------------------------------------
# The optimal agent
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def optimal_agent(solver_cache):
    """The on-device optimal agent for the official rules."""
    return make_optimal_agent("official", cache_dir=solver_cache)


AGENT_POSITIONS = {
    "first keep": make_position([1, 2, 3, 3, 5], 0, rules=OFFICIAL),
    "second keep": make_position([1, 6, 6, 6, 6], 1, {"yahtzee": 0}, rules=OFFICIAL),
    "score": make_position([2, 3, 4, 5, 6], 2, {"ones": 3, "chance": 22}, rules=OFFICIAL),
    "score, upper bonus": make_position([5, 6, 6, 6, 6], 2, rules=OFFICIAL),
    # The same dice on the last turn of a single-turn episode: only this turn's points count.
    "score, last turn": make_position([5, 6, 6, 6, 6], 2, rules=OFFICIAL).replace(
        turns_left=jnp.int32(1)
    ),
}


def test_optimal_agent_follows_the_advisor(optimal_agent, official):
    """On hand-made positions the float32 on-device agent picks the advisor's best action."""
    act = jax.jit(optimal_agent.act)
    for name, state in AGENT_POSITIONS.items():
        action = int(act(optimal_agent.params, state, jax.random.key(0)))
        assert action == advise(state, OFFICIAL, solution=official).best_action, name
    # Sanity of the last two: sixes for the bonus in a game, a 29-point box on the last turn.
    assert (
        advise(AGENT_POSITIONS["score, upper bonus"], OFFICIAL, solution=official).best_action == 37
    )
    assert (
        advise(AGENT_POSITIONS["score, last turn"], OFFICIAL, solution=official).best_action == 38
    )


def test_optimal_agent_scores_the_solved_expectation(optimal_agent, official):
    """2,000 games played by the agent average within 4 standard errors of the optimum."""
    records = play_games(optimal_agent, num_games=2000, seed=0, batch_size=1000)
    standard_error = records.total.std() / np.sqrt(len(records.total))
    assert abs(records.total.mean() - official.expected_score) < 4 * standard_error


@pytest.mark.slow
def test_optimal_agent_reproduces_the_papers_dp_row(tmp_path):
    """100,000 free-joker games by the optimal agent against the paper's DP row (Table 3-4:
    mean 254.59, bonus 68.12 %, Yahtzee 33.74 %, >= 250: 48.37 %), each within 4 standard
    errors, and the played mean within 4 standard errors of the solved value."""
    agent = make_optimal_agent("free-joker", cache_dir=tmp_path)
    records = play_games(agent, num_games=100_000, seed=0)
    statistics = score_statistics(records)
    score = statistics["score"]
    assert abs(score["mean"] - PUBLISHED_OPTIMA["free-joker"]) < 4 * score["stderr"]
    paper = {"upper_bonus_rate": 0.6812, "yahtzee_rate": 0.3374, "share_at_least_250": 0.4837}
    for name, rate in paper.items():
        standard_error = np.sqrt(rate * (1 - rate) / records.num_games)
        assert abs(statistics[name] - rate) < 4 * standard_error, name
