"""The exact match solve against the optimal-solitaire agent (`solver.match_exact`).

A 7-box game (the upper six and a 50-point five of a kind, no bonuses) keeps every solve small.
Checks: a hand-made end game against plain-Python enumeration of dice and keeps; the rows where
one card is full against the target tables; the bounds of the optimal agent and the oracle; the
optimal agent's own play against the product of its exact score distributions; the kernel and
NumPy passes against each other.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from positions import seven_box_rules
from seven_box_enumeration import open_only, played_turn
from seven_box_enumeration import points as _points
from seven_box_enumeration import shifted as _at

from yahtzee_jax.errors import UserError
from yahtzee_jax.game.rules import Joker, Rules
from yahtzee_jax.solver.ceiling import exact_ceiling, score_distribution
from yahtzee_jax.solver.match_cards import card_id, win_columns
from yahtzee_jax.solver.match_exact import ME, OPPONENT, solve_match
from yahtzee_jax.solver.target_table import target_tables

RULES = seven_box_rules("match-exact-test")
# The same card with an upper bonus of 35 at 20 points: a card is then its mask and upper total.
BONUS_RULES = dataclasses.replace(
    RULES, name="match-exact-bonus-test", upper_bonus_threshold=20, upper_bonus_points=35
)
FULL = (1 << RULES.num_boxes) - 1
FIVES, SIXES, YAHTZEE = 4, 5, 6


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("match-exact-cache")


def _turn_start(final) -> np.ndarray:
    """A turn's value from its start, `final(roll)` the value of each final roll, keeps best."""
    return played_turn(lambda roll: (final(roll),) * 2)[1]


MARGINS = np.arange(-200, 201)  # wide enough that the ends are sure losses and sure wins


@pytest.mark.parametrize("bonus", [False, True])
def test_an_end_game_equals_enumeration_over_dice_keeps_and_boxes(cache, bonus):
    """Me to move with fives and the five of a kind open, the opponent with sixes open, then my
    last box: my best chance to win at each margin is the enumeration's. The opponent keeps
    sixes (its only best play), so its points are 6 x Binomial(5, 1 - (5/6)^3); my last turn
    maximises P(points > -margin), my first picks the box and keeps of the best chance. With
    the upper bonus (35 at 20), my upper total 10 and its 14: two fives earn me the 35, one six
    earns it the 35."""
    rules, (mine_upper, its_upper) = (BONUS_RULES, (10, 14)) if bonus else (RULES, (0, 0))
    p = 1 - (5 / 6) ** 3
    sixes = {
        6 * k + 35 * (bonus and k >= 1): math.comb(5, k) * p**k * (1 - p) ** (5 - k)
        for k in range(6)
    }

    def scored(roll: tuple[int, ...], box: int) -> int:
        points = _points(roll, box)
        return points + 35 * (bonus and box == FIVES and mine_upper + points >= 20)

    last = {
        box: _turn_start(lambda roll, box=box: (MARGINS + scored(roll, box) > 0).astype(float))
        for box in (FIVES, YAHTZEE)
    }
    before_its_turn = {
        box: sum(chance * _at(last[other], -points) for points, chance in sixes.items())
        for box, other in ((FIVES, YAHTZEE), (YAHTZEE, FIVES))
    }
    expected = _turn_start(
        lambda roll: np.maximum(
            *(_at(before_its_turn[box], scored(roll, box)) for box in (FIVES, YAHTZEE))
        )
    )
    start = (
        card_id(rules, open_only(FIVES, YAHTZEE), mine_upper),
        card_id(rules, open_only(SIXES), its_upper),
    )
    solution = solve_match(rules, first=ME, start=start, cache_dir=cache)
    margins = range(-120, 71)  # at most 110 to come against 65: -120 is lost, 66 won
    got = np.array([solution.win_chance(margin) for margin in margins])
    np.testing.assert_allclose(got, expected[np.searchsorted(MARGINS, margins)], atol=1e-12)
    assert np.all(np.diff(got) >= 0) and got[0] == 0.0 and got[-1] == 1.0


@pytest.mark.parametrize(("kernel", "bonus"), [("load", False), (None, False), ("load", True)])
def test_with_the_opponent_done_my_rows_are_the_target_tables(cache, kernel, bonus):
    """The opponent's card full, I play my three boxes alone for the needed margin: my rows
    are T_s(need), the target table's row of my card, to the bit (kernel and NumPy passes);
    with the upper bonus, from upper total 12, for every upper total the fives can leave."""
    rules, upper = (BONUS_RULES, 12) if bonus else (RULES, 0)
    mine, full = open_only(0, FIVES, YAHTZEE), card_id(rules, FULL)
    start = (card_id(rules, mine, upper), full)
    solution = solve_match(rules, ME, start, keep_turns=True, cache_dir=cache, kernel=kernel)
    table = target_tables(rules, cache_dir=cache, policy="target")
    after = {min(20, upper + 5 * count) for count in range(6)} if bonus else {0}
    cards = [(0, mine, upper)] + [(1, mine | 1 << FIVES, total) for total in sorted(after)]
    for turn, card, total in cards:
        rows = solution.turns[turn]
        k, i = rows.pair(card_id(rules, card, total), full)
        np.testing.assert_array_equal(rows.win.row(k, i), table.chances((card, total, 0)))
    assert [t.mover for t in solution.turns] == [ME, ME, ME]


def test_with_me_done_the_opponents_rows_are_its_expected_tables(cache):
    """My card full, the opponent plays its three boxes: its rows are its chances of at least
    each score to come under expected-score play, the "expected" table's row, to the bit."""
    its = open_only(1, SIXES, YAHTZEE)
    solution = solve_match(RULES, OPPONENT, (FULL, its), cache_dir=cache)
    rows = solution.turns[0]
    expected = target_tables(RULES, cache_dir=cache, policy="expected").chances((its, 0, 0))
    np.testing.assert_array_equal(rows.win.row(*rows.pair(its, FULL)), expected)


def _rows(cache, card: int) -> tuple[np.ndarray, np.ndarray]:
    """T and E of a card."""
    return tuple(
        target_tables(RULES, cache_dir=cache, policy=policy).chances((card, 0, 0))
        for policy in ("target", "expected")
    )


MIDGAME = (open_only(0, 3, YAHTZEE), open_only(2, SIXES, YAHTZEE))


@pytest.mark.parametrize("first", [ME, OPPONENT])
def test_the_optimal_agents_own_play_is_the_product_of_its_distributions(cache, first):
    """Both playing expected-score play from a midgame (three boxes open each): my chance to
    win is sum_s P(its future = s) E_mine(s + 1 - margin), its draw sum_s P(s) P(mine = s -
    margin), whoever moves first; and the bounds: that <= my best <= the oracle's
    sum_s P(s) T_mine(s + 1 - margin)."""
    mine_best, mine_follow = _rows(cache, MIDGAME[0])
    its_follow = _rows(cache, MIDGAME[1])[1]
    its = score_distribution(its_follow)
    mine = score_distribution(mine_follow)
    follow = solve_match(RULES, first, MIDGAME, policy="expected", cache_dir=cache)
    best = solve_match(RULES, first, MIDGAME, cache_dir=cache)
    for margin in (-30, -8, 0, 3, 17):
        need = np.arange(len(its)) + 1 - margin  # my points to come must reach s + 1 - margin

        def at(row: np.ndarray, need: np.ndarray = need) -> np.ndarray:
            inside = np.clip(need, 0, len(row) - 1)
            return np.where(need <= 0, 1.0, np.where(need < len(row), row[inside], 0.0))

        tie = need - 1  # my points to come equal s - margin
        inside = (tie >= 0) & (tie < len(mine))
        win, draw = (
            its @ at(mine_follow),
            its @ np.where(inside, mine[np.clip(tie, 0, len(mine) - 1)], 0.0),
        )
        assert follow.win_chance(margin) == pytest.approx(win, abs=1e-13)
        assert follow.draw_chance(margin) == pytest.approx(draw, abs=1e-13)
        oracle = its @ at(mine_best)
        assert win - 1e-13 <= best.win_chance(margin) <= oracle + 1e-13
        assert 0.0 <= best.draw_chance(margin) <= 1.0 - best.win_chance(margin) + 1e-13


def test_kernel_and_numpy_passes_agree_on_wins_and_draws(cache):
    """The C kernel and the NumPy passes give the same chances to win and draws from a
    midgame, whoever moves first (the draws' NumPy choice of box is written apart)."""
    for first in (ME, OPPONENT):
        kernel = solve_match(RULES, first, MIDGAME, cache_dir=cache)
        numpy = solve_match(RULES, first, MIDGAME, cache_dir=cache, kernel=None)
        for margin in (-12, 0, 5):
            assert kernel.win_chance(margin) == pytest.approx(numpy.win_chance(margin), abs=1e-14)
            assert kernel.draw_chance(margin) == pytest.approx(numpy.draw_chance(margin), abs=1e-14)


def test_the_columns_counted_are_the_rows_solved(cache):
    """Me with fives open (25 points at most) and the opponent with sixes (30), me first: my
    turn's one pair has a row of 1 + 25 + 30, its turn's (my card full) 1 + 30 + 0: 87 columns,
    counted without solving, and the solve's own count of its win rows."""
    start = (open_only(FIVES), open_only(SIXES))
    assert win_columns(RULES, ME, start) == 87
    solution = solve_match(RULES, ME, start, cache_dir=cache, draws=False)
    assert solution.columns == 87


def test_rules_with_a_yahtzee_bonus_or_a_joker_are_refused(cache):
    """A card that needs the Yahtzee flag is not carried, nor is a Joker game checked: one
    line, no solve; nor is a position with both cards full."""
    with pytest.raises(UserError, match="no Yahtzee bonus"):
        solve_match(Rules("b", yahtzee_bonus=True, joker=Joker.NONE), cache_dir=cache)
    forced = Rules("j", False, Joker.FORCED, RULES.boxes, upper_bonus_points=0)
    with pytest.raises(UserError, match="no Joker"):
        solve_match(forced, cache_dir=cache)
    with pytest.raises(UserError, match="no turn"):
        solve_match(RULES, start=(FULL, FULL), cache_dir=cache)
    with pytest.raises(UserError, match="upper total 21"):  # the bonus game's totals: 0 .. 20
        card_id(BONUS_RULES, 0, 21)


@pytest.mark.slow
def test_whole_game_figures_sit_between_the_optimal_agent_and_the_oracle(cache):
    """From the empty cards, in both seats: the optimal agent's own play gives the ceiling
    module's exact win and draw rates, and my best lies between them and the oracle."""
    best_row, follow_row = _rows(cache, 0)
    ceiling = exact_ceiling(best_row, follow_row, 1)
    for first in (ME, OPPONENT):
        follow = solve_match(RULES, first, policy="expected", cache_dir=cache)
        assert follow.win_chance() == pytest.approx(ceiling["optimal_win_rate"], abs=1e-13)
        assert follow.draw_chance() == pytest.approx(ceiling["optimal_draw_rate"], abs=1e-13)
        best = solve_match(RULES, first, cache_dir=cache)
        assert ceiling["optimal_win_rate"] < best.win_chance() < ceiling["win_rate"]


def test_a_card_with_no_lower_box_but_the_five_of_a_kind_has_next_states():
    """The match players' next states (`moments.distinct_next_states`) of this game's card,
    whose only lower box is the five of a kind: six counts per upper box, then 0 or 50 in
    the five of a kind (the list of other lower boxes is empty, and once made a float array)."""
    from yahtzee_jax.solver.moments import distinct_next_states

    masks, uppers, flags = distinct_next_states(np.int64(0), np.int64(0), np.int64(0), np, RULES)
    assert list(masks) == [1 << box for box in range(6) for _ in range(6)] + [1 << YAHTZEE] * 2
    assert list(flags[-2:]) == [0, 1] and not uppers.any()


def test_without_the_draws_the_chances_to_win_are_the_same(cache):
    """Leaving the draw rows out changes no chance to win, and the draws are then refused."""
    for first in (ME, OPPONENT):
        both = solve_match(RULES, first, MIDGAME, cache_dir=cache)
        wins = solve_match(RULES, first, MIDGAME, cache_dir=cache, draws=False)
        for margin in (-20, 0, 9):
            assert wins.win_chance(margin) == both.win_chance(margin)
        with pytest.raises(UserError, match="without its draws"):
            wins.draw_chance()


@pytest.mark.parametrize("block", [1, 5, 1 << 22])
def test_the_other_players_view_is_each_row_reversed_and_complemented(monkeypatch, block):
    """`_revcomp` turns every row S of length L into Q[0] = 1, Q[j] = 1 - S[L - j] (the other
    player's chance at j), as a plain loop over the rows says, whether the rows are taken a few
    at a time or all at once, into a new table or over the old one."""
    from yahtzee_jax.solver import match_exact

    monkeypatch.setattr(match_exact, "REVCOMP_BLOCK", block)
    generator = np.random.default_rng(block)
    rows = match_exact.Rows.empty(generator.integers(1, 9, size=(3, 4)))
    rows.flat[:] = generator.uniform(size=len(rows.flat))
    expected = np.empty_like(rows.flat)
    for start, length in zip(rows.offsets.ravel(), rows.lengths.ravel(), strict=True):
        row = rows.flat[start : start + length]
        expected[start : start + length] = [1.0] + [1.0 - row[length - j] for j in range(1, length)]
    np.testing.assert_array_equal(match_exact._revcomp(rows, in_place=False), expected)
    assert not np.array_equal(rows.flat, expected)  # the rows themselves untouched
    assert match_exact._revcomp(rows, in_place=True) is rows.flat
    np.testing.assert_array_equal(rows.flat, expected)


def test_a_solve_is_the_same_whatever_the_other_players_view_is_made_over(cache, monkeypatch):
    """A solve that keeps its turns makes the other player's view in new tables, one that does
    not over the later turn's own rows, a few rows at a time: the same chances to the bit."""
    from yahtzee_jax.solver import match_exact

    kept = solve_match(RULES, OPPONENT, MIDGAME, cache_dir=cache, keep_turns=True)
    monkeypatch.setattr(match_exact, "REVCOMP_BLOCK", 7)
    consumed = solve_match(RULES, OPPONENT, MIDGAME, cache_dir=cache)
    for margin in (-12, 0, 5):
        assert consumed.win_chance(margin) == kept.win_chance(margin)
        assert consumed.draw_chance(margin) == kept.draw_chance(margin)


def test_threads_give_the_same_bits_and_zero_threads_are_refused(cache):
    """Two host threads solve a turn's other cards at once: the same chances to the bit as one,
    for the best play with its draws and for a valuation's player; 0 threads: one line."""
    from yahtzee_jax.solver.match_valuation import seeker_valuation

    for valuation in (None, seeker_valuation(RULES, 0.5, cache)):
        draws = valuation is None
        one = solve_match(RULES, ME, MIDGAME, cache_dir=cache, valuation=valuation, draws=draws)
        two = solve_match(
            RULES, ME, MIDGAME, cache_dir=cache, valuation=valuation, draws=draws, threads=2
        )
        np.testing.assert_array_equal(two.turns[0].win.flat, one.turns[0].win.flat)
        if draws:
            np.testing.assert_array_equal(two.turns[0].draw.flat, one.turns[0].draw.flat)
    with pytest.raises(UserError, match="threads: 1 or more"):
        solve_match(RULES, ME, MIDGAME, cache_dir=cache, threads=0)
