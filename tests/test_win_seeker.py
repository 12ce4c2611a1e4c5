"""The spread of optimal play (`solver.moments`) and the win-seeking player built on it."""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from positions import card
from test_terminal import ScriptedConsole, box_order_player
from test_terminal import args as play_args

from yahtzee_jax.agents import builtin_agent
from yahtzee_jax.agents.widget_agents import make_optimal_agent
from yahtzee_jax.agents.win_seeker import win_seeker_agent
from yahtzee_jax.commands import terminal
from yahtzee_jax.commands.cli import main as tournament_main
from yahtzee_jax.commands.match import main
from yahtzee_jax.envs.environment import no_others
from yahtzee_jax.evaluation.matches import evaluate_agent_matches
from yahtzee_jax.evaluation.records import play_games
from yahtzee_jax.game.engine import State
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, OFFICIAL, Category, get_rules
from yahtzee_jax.solver import solve
from yahtzee_jax.solver.endgame import SCORE_BINS, endgame_distributions
from yahtzee_jax.solver.moments import (
    _chunk_moments,
    roll_futures,
    score_moments,
    solve_moment_table,
)
from yahtzee_jax.solver.value_table import full_mask, score_transition
from yahtzee_jax.solver.widget_tables import base_points, solver_score_tables
from yahtzee_jax.solver.win_policy import (
    TIE,
    best_by_chance_then_points,
    make_win_seeker,
    win_probability,
)

RULES = get_rules("official")
FULL_MASK = full_mask(RULES)
CHANCE_ONLY = FULL_MASK & ~(1 << Category.CHANCE)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    """A private cache holding the official value and second-moment tables."""
    cache_dir = str(tmp_path_factory.mktemp("moments_cache"))
    score_moments(RULES, cache_dir)
    return cache_dir


# ------------------------------------------------------------------------------------------
# Plain-Python references: a Chance-only last turn, enumerated
# ------------------------------------------------------------------------------------------


def _outcomes(count: int) -> list[tuple[tuple[int, ...], float]]:
    """The multisets of `count` fresh dice with their probabilities."""
    result = []
    for dice in itertools.combinations_with_replacement(range(1, 7), count):
        ways = math.factorial(count)
        for repeats in Counter(dice).values():
            ways //= math.factorial(repeats)
        result.append((dice, ways / 6**count))
    return result


def _sub_keeps(dice: tuple[int, ...]) -> set[tuple[int, ...]]:
    return {tuple(sorted(keep)) for size in range(6) for keep in itertools.combinations(dice, size)}


def chance_turn(final_value):
    """(value of a roll, value of a keep) in a turn whose only box is Chance, by enumeration."""

    @functools.cache
    def roll_value(dice: tuple[int, ...], rerolls: int) -> float:
        if rerolls == 0:
            return final_value(sum(dice))
        return max(keep_value(keep, rerolls) for keep in _sub_keeps(dice))

    @functools.cache
    def keep_value(keep: tuple[int, ...], rerolls: int) -> float:
        return sum(
            probability * roll_value(tuple(sorted(keep + dice)), rerolls - 1)
            for dice, probability in _outcomes(5 - len(keep))
        )

    return roll_value, keep_value


# ------------------------------------------------------------------------------------------
# Second moments
# ------------------------------------------------------------------------------------------


def test_chance_alone_has_the_mean_and_spread_worked_by_hand():
    """Only Chance open: the optimum keeps a die of 5 or more first and of 4 or more second, one
    die at a time, so a die ends at 14/3 on average with variance 2 and the box at 70/3 with
    variance 10: the second moment is 10 + (70/3)^2. Enumeration of the turn agrees."""
    value_table = solve(RULES).value_table
    moments = solve_moment_table(RULES, value_table, down_to_filled=12)
    state = (CHANCE_ONLY, 63, 0)  # the upper bonus is in hand, the Yahtzee box holds 0
    assert value_table[state] == pytest.approx(70 / 3, abs=1e-9)
    assert moments[state] == pytest.approx(10 + (70 / 3) ** 2, abs=1e-9)
    _, keep_mean = chance_turn(lambda total: total)
    assert keep_mean((), 3) == pytest.approx(70 / 3)  # the first roll is a keep of nothing


def test_the_moment_pass_recomputes_the_value_table():
    """The induction carrying second moments values the states as the solver did."""
    value_table = solve(RULES).value_table
    moments = solve_moment_table(RULES, value_table, down_to_filled=11)
    mask = np.array([FULL_MASK & ~(1 << Category.YAHTZEE) & ~(1 << Category.ONES)] * 3)
    upper, flag = np.array([0, 10, 63]), np.zeros(3, np.int64)
    values, _ = _chunk_moments(
        mask, upper, flag, value_table, moments, solver_score_tables(RULES), RULES
    )
    np.testing.assert_allclose(values, value_table[mask, upper, flag], rtol=1e-12)
    assert np.isnan(moments[0, 0, 0])  # the partial solve stops where it was told


def test_spread_of_optimal_play_is_the_published_one(cache):
    """The whole table's start state: the standard deviation of optimal play's final score is
    59.61 for the official rules, and no state's second moment is below its mean squared."""
    value_table, moments = score_moments(RULES, cache)
    spread = math.sqrt(moments[0, 0, 0] - value_table[0, 0, 0] ** 2)
    assert spread == pytest.approx(59.61, abs=0.01)
    reachable = ~np.isnan(value_table)
    assert np.all(moments[reachable] >= value_table[reachable] ** 2 * (1 - 1e-12))


@pytest.mark.slow  # 10,000 optimal games; the table's spread is checked fast above
def test_spread_of_optimal_play_matches_its_games(cache):
    """The whole table's start state against the optimal agent's own games: the mean 254.59 and
    the standard deviation (59.61 for the official rules) within three standard errors."""
    value_table, moments = score_moments(RULES, cache)
    spread = math.sqrt(moments[0, 0, 0] - value_table[0, 0, 0] ** 2)
    totals = play_games(make_optimal_agent(RULES, cache_dir=cache), 10_000, seed=6).total
    totals = totals.astype(np.float64)
    # The standard error of a sample deviation from the sample's fourth moment: the scores'
    # tails (the +100 bonuses) make it about twice the normal distribution's.
    variance, fourth = np.var(totals, ddof=1), np.mean((totals - totals.mean()) ** 4)
    standard_error = math.sqrt((fourth - variance**2) / len(totals)) / (2 * math.sqrt(variance))
    assert abs(math.sqrt(variance) - spread) < 3 * standard_error
    assert abs(totals.mean() - value_table[0, 0, 0]) < 3 * spread / math.sqrt(len(totals))


# ------------------------------------------------------------------------------------------
# The win-seeking player
# ------------------------------------------------------------------------------------------


def test_win_probability_is_exact_when_nothing_is_left_to_chance():
    """No spread: a win, a draw or a loss by the margin's sign; with spread, the normal CDF."""
    margins = jnp.array([3.0, 0.0, -2.0, 0.0])
    variances = jnp.array([0.0, 0.0, 0.0, 100.0])
    np.testing.assert_allclose(win_probability(margins, variances), [1.0, 0.5, 0.0, 0.5])
    assert float(win_probability(jnp.float32(10.0), jnp.float32(100.0))) == pytest.approx(
        0.8413, abs=1e-4
    )


UPPER_63 = {box: 3 * (box + 1) for box in range(6)}  # three of each face: the bonus in hand
LOWER_ZEROS = {box: 0 for box in range(6, Category.CHANCE)}


@pytest.fixture(scope="module")
def players(cache):
    """(the win-seeker exact over its last box, the optimal agent's actions) for this module's
    batches of one card, each compiled once: called op by op, every test traced both again and
    loaded their programs from the cache (2-5 s a test)."""
    optimal = builtin_agent("optimal", RULES)
    optimal_actions = jax.jit(lambda own: optimal.policy(optimal.params, own, None, None))
    return jax.jit(make_win_seeker(RULES, cache, endgame_open=1)), optimal_actions


def _last_turn(dice, roll_index: int, behind: int):
    """My last turn with only Chance open, and an opponent who finished `behind` points ahead
    (the same card with `behind` in Chance), each batched as one game."""
    mine = card(dice, scores=UPPER_63 | LOWER_ZEROS, roll_index=roll_index)
    theirs = card(scores=UPPER_63 | LOWER_ZEROS | {Category.CHANCE: behind})
    stack = functools.partial(jax.tree.map, lambda leaf: leaf[None])
    return stack(mine), stack(theirs)


@pytest.mark.parametrize(
    ("dice", "roll_index", "behind"),
    [((4, 5, 5, 5, 6), 1, 26), ((2, 3, 4, 5, 6), 0, 21), ((4, 4, 4, 5, 5), 1, 24)],
)
def test_last_turn_keep_is_the_enumerated_best_chance_to_win(players, dice, roll_index, behind):
    """Against a finished opponent, my last turn's P(win) is exact, so the keep chosen must win
    as often as the best keep of a plain enumeration; the expected-score optimum's keep does
    worse in each of these positions (e.g. 4,5,5,5,6 needing 27: it keeps all and loses for sure,
    re-rolling the 4 wins 1/6 and draws 1/6)."""
    mine, theirs = _last_turn(dice, roll_index, behind)
    rerolls = 2 - roll_index
    _, win_keep = chance_turn(lambda total: 1.0 if total > behind else 0.5 * (total == behind))
    best = max(win_keep(keep, rerolls) for keep in _sub_keeps(dice))

    def keep_chance(action: int) -> float:
        kept = tuple(sorted(die for i, die in enumerate(dice) if action >> i & 1))
        return win_keep(kept, rerolls)

    seeker, optimal = players
    action = int(seeker(mine, theirs, None)[0][0])
    assert action < NUM_KEEP_ACTIONS
    assert keep_chance(action) == pytest.approx(best)
    assert keep_chance(int(optimal(mine)[0])) < best - 0.01


@pytest.mark.parametrize("behind", [0, 31])
def test_a_decided_last_turn_is_played_for_points(players, behind):
    """Only Chance open and 1,2,3,4,6 at the first keep: an opponent who finished level (0)
    loses whatever I roll, one 31 ahead wins whatever I roll (Chance scores at most 30), so
    every keep has the same chance and the win-seeker keeps what the optimal agent keeps (the
    points, as the tie-break), not the first of 32 equal keeps."""
    mine, theirs = _last_turn((1, 2, 3, 4, 6), 0, behind)
    seeker, optimal = players
    expected = int(optimal(mine)[0])
    assert expected != 0  # not the keep an argmax over equal values takes
    assert int(seeker(mine, theirs, None)[0][0]) == expected


def test_near_ties_go_to_the_points_and_real_differences_to_the_chance():
    """`best_by_chance_then_points`: chances within `TIE` of the best are equal (the most points
    among them wins); a chance 10x `TIE` higher wins over any points; -inf never wins."""
    chances = jnp.array([0.5, 0.5 - TIE / 2, 0.5 - 10 * TIE, -jnp.inf])
    assert int(best_by_chance_then_points(chances, jnp.array([1.0, 2.0, 99.0, 999.0]))) == 1
    assert int(best_by_chance_then_points(chances, jnp.array([3.0, 2.0, 99.0, 999.0]))) == 0


# make test-slow (issue 45: make test within 10 minutes); 25-50 s on the idle 2-core EPYC
@pytest.mark.slow
def test_win_seeker_plays_whole_matches_and_the_cli_reports_them(cache, capsys, monkeypatch):
    """Whole matches against the optimal agent: a result the same for the same seed, a sane
    score, and the CLI's one-line summary."""
    monkeypatch.setenv("YAHTZEE_JAX_CACHE", cache)
    seeker = win_seeker_agent(RULES, cache, endgame_open=1)
    first = evaluate_agent_matches(seeker, "optimal", num_games=8, seed=3, batch_size=8)
    again = evaluate_agent_matches(seeker, "optimal", num_games=8, seed=3, batch_size=8)
    assert first["wins"] + first["draws"] + first["losses"] == 8
    assert {k: v for k, v in first.items() if k != "wall_s"} == {
        k: v for k, v in again.items() if k != "wall_s"
    }
    assert first["mean_score"] > 150
    assert (
        main(
            [
                "win-seeker",
                "--games",
                "4",
                "--seed",
                "3",
                "--batch-size",
                "4",
                "--endgame-open",
                "1",
            ]
        )
        == 0
    )
    assert "win-seeker vs optimal: wins" in capsys.readouterr().out


def test_a_person_plays_the_win_seeker_in_the_terminal(cache, monkeypatch):
    """`play --against win-seeker` from scripted input: a line while its tables load, its 39
    decisions shown with the person's card in view, both cards, and the result line."""
    monkeypatch.setattr("yahtzee_jax.solver.endgame.ENDGAME_OPEN", 1)  # the small table
    console = ScriptedConsole(box_order_player(errors_on_turn=0))
    assert terminal.run(play_args(against="win-seeker", cache_dir=cache), console) == 0
    text = console.text
    assert text.startswith("Loading the win-seeker's tables")
    assert len(re.findall(r"  win-seeker, turn \d+, roll \d: [1-6 ]+ -> ", text)) == 39
    assert len(re.findall(r"win-seeker scores \d+ in ", text)) == 13
    you, seeker = map(int, re.findall(r"   total\s+(\d+)\s+(\d+)", text)[-1])
    assert re.search(rf"Game over: you {you}; win-seeker {seeker}\. ", text)


@pytest.mark.slow  # 46 s; the real-match pairs' fast test: test_tournament.py (greedy reader)
def test_tournament_plays_the_win_seekers_pairs_as_real_matches(cache, tmp_path, monkeypatch):
    """`tournament win-seeker optimal greedy1`: the win-seeker reads its opponents, so its
    pairs are real matches, the same games as `evaluate_agent_matches` on the seed (it sits
    first in the even games); the pair without it is still scored from solitaire games, as in a
    tournament of those two alone; common dice are refused for it in one line."""
    monkeypatch.setattr("yahtzee_jax.solver.endgame.ENDGAME_OPEN", 1)
    monkeypatch.setenv("YAHTZEE_JAX_CACHE", cache)
    common = ["--games", "6", "--seed", "4", "--no-progress", "--cache-dir", cache]
    argv = ["tournament", "win-seeker", "optimal", "greedy1", "--out", str(tmp_path / "t")]
    assert tournament_main([*argv, *common]) == 0
    result = json.loads((tmp_path / "t" / "tournament.json").read_text())
    pairs = {(pair["a"], pair["b"]): pair for pair in result["pairs"]}
    assert sorted(map(tuple, result["real_matches"])) == [
        ("win-seeker", "greedy1"),
        ("win-seeker", "optimal"),
    ]
    seeker = win_seeker_agent(RULES, cache, endgame_open=1)
    for opponent in ("optimal", "greedy1"):
        alone = evaluate_agent_matches(seeker, opponent, 6, seed=4, batch_size=6)
        pair = pairs[("win-seeker", opponent)]
        assert (pair["a_wins"], pair["draws"], pair["b_wins"]) == (
            alone["wins"],
            alone["draws"],
            alone["losses"],
        )
        assert pair["a_wins_by_seat"] == alone["wins_by_seat"]
        assert math.isclose(pair["mean_margin"], alone["mean_margin"])
    assert result["mean_scores"]["win-seeker"]["games"] == 12  # its matches in both pairs
    argv = ["tournament", "optimal", "greedy1", "--out", str(tmp_path / "u")]
    assert tournament_main([*argv, *common]) == 0
    (solitaire,) = json.loads((tmp_path / "u" / "tournament.json").read_text())["pairs"]
    assert pairs[("optimal", "greedy1")] == solitaire
    argv = ["tournament", "win-seeker", "optimal", "--dice", "common", "--out", str(tmp_path)]
    assert tournament_main([*argv, *common]) == 2


@pytest.mark.slow  # its policy stays fast in this file; this is the solitaire evaluate's view
def test_win_seeker_agent_alone_plays_against_an_empty_card(cache):
    """The win-seeker as an `Agent` (`resolve_agent("win-seeker")`): alone, as `evaluate` plays
    it, its policy shown no other card and its `act` give, card by card, its policy against a
    fresh card."""
    agent = win_seeker_agent(RULES, cache, endgame_open=1)
    positions = (((1, 2, 3, 4, 6), 0), ((6, 6, 6, 2, 1), 1), ((5, 5, 5, 5, 3), 2))
    cards = [_last_turn(dice, roll_index, 0)[0] for dice, roll_index in positions]
    owns = jax.tree.map(lambda *leaves: jnp.concatenate(leaves), *cards)
    keys = jax.random.split(jax.random.key(0), len(positions))
    fresh = jax.tree.map(
        lambda leaf: jnp.broadcast_to(leaf, (3, 1, *leaf.shape)), State.empty(OFFICIAL)
    )
    expected = agent.policy(None, owns, fresh, keys)
    np.testing.assert_array_equal(agent.policy(None, owns, no_others(owns), keys), expected)
    for lane in range(len(positions)):
        one = jax.tree.map(lambda leaf, lane=lane: leaf[lane], owns)
        assert int(agent.act(None, one, keys[lane])) == int(expected[lane])


def test_win_seeker_refuses_two_opponents_in_one_line(cache):
    """Shown two other cards (a three-player match), the win-seeker refuses in one line naming
    the target-seeker, where it failed deep in JAX on the shapes of its one-opponent tables."""
    from yahtzee_jax.errors import UserError

    agent = win_seeker_agent(RULES, cache, endgame_open=1)
    own, _ = _last_turn((1, 2, 3, 4, 6), 0, 0)
    two = jax.tree.map(
        lambda leaf: jnp.broadcast_to(leaf, (1, 2, *leaf.shape)), State.empty(OFFICIAL)
    )
    with pytest.raises(UserError, match=r"one opponent, not 2.*target-seeker"):
        agent.policy(None, own, two, jax.random.split(jax.random.key(0), 1))


def test_opponents_next_dice_are_not_looked_at(players):
    """The opponent is read at its turn start: its dice do not change my action."""
    mine, theirs = _last_turn((2, 3, 4, 5, 6), 0, 21)
    theirs = theirs.replace(filled=theirs.filled.at[0, Category.CHANCE].set(False))
    seeker, _ = players
    actions = {
        int(seeker(mine, theirs.replace(dice=jnp.int32([dice])), None)[0][0])
        for dice in ((1, 1, 1, 1, 1), (6, 6, 6, 6, 6), (1, 2, 3, 4, 5))
    }
    assert len(actions) == 1


def test_roll_futures_read_the_table_as_a_gather_per_roll_and_box():
    """The per-next-state reading of the table (`roll_futures`) equals looking up the state after
    each roll in each open box, for NumPy cards in a batch and for one JAX card."""
    value_table = np.nan_to_num(solve(RULES).value_table)
    rng = np.random.default_rng(0)
    mask = rng.integers(0, FULL_MASK, 16)
    upper, flag = rng.integers(0, 64, 16), rng.integers(0, 2, 16)
    points = base_points(RULES)[:, :, None]
    categories = np.arange(13)[None, :, None]
    _, next_upper, next_flag = score_transition(categories, points, upper, flag, np, RULES)
    next_flag = np.where(categories == Category.YAHTZEE, points == 50, flag)
    direct = value_table[mask | (1 << categories), next_upper, next_flag.astype(int)]
    np.testing.assert_array_equal(roll_futures(value_table, mask, upper, flag, np, RULES), direct)
    one = roll_futures(jnp.asarray(value_table), jnp.int32(mask[0]), upper[0], flag[0], jnp, RULES)
    np.testing.assert_allclose(one, direct[:, :, 0], rtol=1e-6)


# ------------------------------------------------------------------------------------------
# Endgame distributions
# ------------------------------------------------------------------------------------------

# A die of the optimal Chance turn (keep 5-6 first, 4-6 second): 1, 2, 3 with 1/18 each,
# 4 with 3/18, 5 and 6 with 6/18 each (mean 14/3).
CHANCE_DIE = np.array([0, 1, 1, 1, 3, 6, 6]) / 18


def chance_distribution() -> np.ndarray:
    """The optimal Chance box's points: five such dice, convolved."""
    total = np.array([1.0])
    for _ in range(5):
        total = np.convolve(total, CHANCE_DIE)
    return total  # index = points, 0..30


def test_endgame_distribution_of_chance_is_five_dice_convolved(cache):
    """Only Chance open: the state's exact future distribution is the five-die convolution, and
    every endgame row's mean and second moment are the solver's V and M."""
    rows, distributions = endgame_distributions(RULES, 1, cache)
    row = rows[CHANCE_ONLY, 63, 0]
    expected = np.zeros(SCORE_BINS)
    expected[:31] = chance_distribution()
    np.testing.assert_allclose(distributions[row], expected, atol=1e-6)
    value_table, moments = score_moments(RULES, cache)
    inside = rows >= 0
    bins = np.arange(SCORE_BINS)
    np.testing.assert_allclose(distributions[rows[inside]] @ bins, value_table[inside], atol=1e-3)
    second = distributions[rows[inside]] @ bins**2
    np.testing.assert_allclose(second, moments[inside], rtol=1e-5)
    assert rows[FULL_MASK, 0, 0] == 0 and distributions[0, 0] == 1.0
    assert rows[0, 0, 0] == -1  # the empty card is no endgame


@pytest.mark.parametrize(
    ("dice", "roll_index", "lead"), [((4, 5, 5, 5, 6), 1, 0), ((1, 1, 5, 6, 6), 0, -6)]
)
def test_first_players_last_turn_is_exact_against_the_open_chance(players, dice, roll_index, lead):
    """I play my last turn first; the opponent still has its Chance to play, `lead` points behind
    me before it. My chance to win is exact (its Chance distribution is in the endgame table),
    so the keep chosen wins as often as the best keep of a plain enumeration."""
    mine, theirs = _last_turn(dice, roll_index, 0)
    theirs = theirs.replace(
        filled=theirs.filled.at[0, Category.CHANCE].set(False),
        scores=theirs.scores.at[0, Category.CHANCE].set(0),
    )
    theirs = theirs.replace(scores=theirs.scores.at[0, Category.ONES].add(-lead))
    opponent = chance_distribution()
    below = np.concatenate([[0.0], np.cumsum(opponent)])  # below[m] = P(their points < m)

    def chance_to_win(points: int) -> float:  # my Chance points against theirs, `lead` ahead
        margin = points + lead  # I win when their points < margin
        if margin <= 0:
            return 0.0
        if margin > 30:
            return 1.0
        return below[margin] + 0.5 * opponent[margin]

    _, win_keep = chance_turn(chance_to_win)
    rerolls = 2 - roll_index
    best = max(win_keep(keep, rerolls) for keep in _sub_keeps(dice))
    seeker, _ = players
    action = int(seeker(mine, theirs, None)[0][0])
    kept = tuple(sorted(die for i, die in enumerate(dice) if action >> i & 1))
    assert win_keep(kept, rerolls) == pytest.approx(best, abs=1e-6)


@pytest.mark.slow  # its learned twin stays fast: test_match_planner.py, early turns
def test_before_its_endgame_the_solitaire_rule_plays_the_optimal_agents_moves(cache):
    """`before_endgame="solitaire"` (the learned match planner's rule, with exact tables): on
    cards before the endgame, at each kind of decision, against an opponent with 40 in Chance,
    every action is the optimal agent's; the normal rule keeps otherwise on 3-4-5-6-6 with
    Fours, Large straight, Yahtzee and Chance open and nothing else scored but 3, 6 and 9 in the
    first three boxes. An unknown rule is refused."""
    four_open = (Category.FOURS, Category.LARGE_STRAIGHT, Category.YAHTZEE, Category.CHANCE)
    late = {box: 0 for box in Category if box not in four_open}
    late |= {Category.ONES: 3, Category.TWOS: 6, Category.THREES: 9}
    early = [
        ((1, 2, 3, 4, 6), 0, {Category.CHANCE: 20}),
        ((6, 6, 6, 2, 1), 1, {Category.ONES: 2, Category.FULL_HOUSE: 25}),
        ((5, 5, 5, 5, 3), 2, {Category.SMALL_STRAIGHT: 30}),
        ((2, 2, 3, 3, 6), 2, {Category.FOURS: 8}),
        ((1, 1, 4, 5, 6), 1, {}),
        ((3, 4, 5, 6, 6), 0, late),
    ]
    own = jax.tree.map(
        lambda *leaves: jnp.stack(leaves),
        *(card(dice, scores, roll_index=roll) for dice, roll, scores in early),
    )
    other = card(scores={Category.CHANCE: 40})
    other = jax.tree.map(lambda leaf: jnp.stack([leaf] * len(early)), other)
    optimal = make_optimal_agent(RULES, cache_dir=cache)
    expected = np.asarray(optimal.policy(optimal.params, own, None, None))
    solitaire = make_win_seeker(RULES, cache, endgame_open=1, before_endgame="solitaire")
    np.testing.assert_array_equal(np.asarray(solitaire(own, other, None)[0]), expected)
    normal = np.asarray(make_win_seeker(RULES, cache, endgame_open=1)(own, other, None)[0])
    assert normal[-1] != expected[-1]
    with pytest.raises(ValueError, match="before_endgame='bold'"):
        make_win_seeker(RULES, cache, endgame_open=1, before_endgame="bold")
