"""The target-seeker's valuations played in the exact match solve (`solver.match_valuation`).

A 7-box game (the upper six and a 50-point five of a kind, no bonuses). Checks: the valuation's
rows against the plain sum over the opponent's scores; a hand-made end game whose exact chances,
my first turn played by hindsight and the rest at best, equal plain-Python enumeration over
dice, keeps and boxes; hindsight equal to the best play where the opponent finishes before my
next decision; every valuation at or under the best play; refusals.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import numpy as np
import pytest
from positions import seven_box_rules
from seven_box_enumeration import open_only, played_turn
from seven_box_enumeration import points as _points
from seven_box_enumeration import shifted as _at

from yahtzee_jax.errors import UserError
from yahtzee_jax.solver.match_cards import card_id
from yahtzee_jax.solver.match_exact import ME, OPPONENT, solve_match
from yahtzee_jax.solver.match_valuation import seeker_valuation
from yahtzee_jax.solver.target_table import target_tables

RULES = seven_box_rules("match-valuation-test")
BONUS_RULES = dataclasses.replace(
    RULES, name="match-valuation-bonus-test", upper_bonus_threshold=20, upper_bonus_points=35
)

ONES, TWOS, FIVES, SIXES, YAHTZEE = 0, 1, 4, 5, 6
MARGINS = np.arange(-250, 251)  # wide enough that the ends are sure losses and sure wins


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("match-valuation-cache")


def _best_of(boxes, after) -> callable:
    """A final roll's best box for me: `after[box]` my chances over MARGINS after it."""

    def final(roll):
        options = [_at(after[box], _points(roll, box)) for box in boxes]
        best = np.max(options, axis=0)
        return best, best

    return final


@functools.cache  # the enumeration below asks for a few pairs of cards 756 times (20 s)
def _hindsight(cache, its_card: int, my_card: int) -> np.ndarray:
    """sum_y P(its points to come = y) T_mine(y + 1 - margin) over MARGINS, summed plainly
    (read-only: the cached array is shared)."""
    survival = target_tables(RULES, cache_dir=cache, policy="expected").chances((its_card, 0, 0))
    chances = np.append(survival, 0.0)[:-1] - np.append(survival, 0.0)[1:]
    target = target_tables(RULES, cache_dir=cache, policy="target").chances((my_card, 0, 0))
    total = np.zeros(len(MARGINS))
    for y, p in enumerate(chances):
        for m, margin in enumerate(MARGINS):
            need = y + 1 - margin
            total[m] += p * (1.0 if need <= 0 else target[need] if need < len(target) else 0.0)
    total.flags.writeable = False
    return total


def test_the_rows_are_the_plain_sum_over_the_opponents_scores(cache):
    """One pair's row, read at each margin as the solve reads it (j' = 1 - x' + most(its card)),
    equals sum_y P(y) T_mine(y + 1 - x'), summed over y plainly."""
    its, mine = open_only(TWOS, SIXES, YAHTZEE), open_only(ONES, FIVES)
    most = np.array(
        [
            sum((5 * (b + 1) if b < 6 else 50) for b in range(7) if not m >> b & 1)
            for m in range(1 << 7)
        ]
    )
    rows = seeker_valuation(RULES, 1.0, cache)(np.array([its]), np.array([mine]), most)(0)
    row = rows.row(0, 0)
    assert len(row) == 1 + most[its] + most[mine]
    plain = _hindsight(cache, its, mine)
    for m, margin in enumerate(MARGINS):
        j = 1 - margin + most[its]
        got = 1.0 if j < 0 else row[j] if j < len(row) else 0.0
        assert got == pytest.approx(plain[m], abs=1e-12), margin


def test_an_end_game_played_by_hindsight_equals_enumeration(cache):
    """Me to move with ones, fives and the five of a kind open, the opponent with twos and
    sixes: my first turn chooses by hindsight (the opponent has two turns left, so it is not
    exact), every later turn of mine at best, the opponent by expected score. The solve's
    chances at each margin equal the enumeration's, and lie under the best play's at some."""
    p = 1 - (5 / 6) ** 3  # a face kept all turn: Binomial(5, p) of them
    last = {
        face: {face * k: math.comb(5, k) * p**k * (1 - p) ** (5 - k) for k in range(6)}
        for face in (2, 6)
    }  # the opponent's last box alone
    # My last box, then my middle turn (its last box to come), all at best.
    mine_last = {
        box: played_turn(lambda roll, box=box: ((MARGINS + _points(roll, box) > 0) * 1.0,) * 2)[1]
        for box in (ONES, FIVES, YAHTZEE)
    }
    its_last_box = {TWOS: 2, SIXES: 6}
    after_middle = {  # (my box left, its box left): my chance before its last turn
        (mine, its): sum(c * _at(mine_last[mine], -q) for q, c in last[its_last_box[its]].items())
        for mine in (ONES, FIVES, YAHTZEE)
        for its in (TWOS, SIXES)
    }
    middle = {  # (my two boxes left, its box left): my best middle turn
        (pair, its): played_turn(
            _best_of(pair, {box: after_middle[(({*pair} - {box}).pop(), its)] for box in pair})
        )[1]
        for pair in itertools.combinations((ONES, FIVES, YAHTZEE), 2)
        for its in (TWOS, SIXES)
    }
    ev = {TWOS: 2 * 5 * p, SIXES: 6 * 5 * p}  # its last box's expected points

    def its_first(pair):
        def final(roll):
            options = [(_points(roll, b) + ev[o], b, o) for b, o in ((TWOS, SIXES), (SIXES, TWOS))]
            score, box, other = max(options, key=lambda option: option[0])  # first on a tie
            return score, _at(middle[(pair, other)], -_points(roll, box))

        return played_turn(final)[1]

    before_its = {
        pair: its_first(pair) for pair in itertools.combinations((ONES, FIVES, YAHTZEE), 2)
    }
    its_card = open_only(TWOS, SIXES)

    def my_first(roll):
        best = carried = None
        for box in (ONES, FIVES, YAHTZEE):  # the first of the best box
            pair = tuple(b for b in (ONES, FIVES, YAHTZEE) if b != box)
            value = _at(_hindsight(cache, its_card, open_only(*pair)), _points(roll, box))
            carry = _at(before_its[pair], _points(roll, box))
            if best is None:
                best, carried = value, carry
            else:
                better = value > best
                best, carried = np.where(better, value, best), np.where(better, carry, carried)
        return best, carried

    expected = played_turn(my_first)[1]
    start = (open_only(ONES, FIVES, YAHTZEE), its_card)
    valuation = seeker_valuation(RULES, 1.0, cache)
    solution = solve_match(RULES, ME, start, cache_dir=cache, valuation=valuation)
    margins = np.arange(-140, 61)
    got = np.array([solution.win_chance(margin) for margin in margins])
    np.testing.assert_allclose(got, expected[np.searchsorted(MARGINS, margins)], atol=1e-12)
    best = solve_match(RULES, ME, start, cache_dir=cache)
    best_chances = np.array([best.win_chance(margin) for margin in margins])
    assert np.all(got <= best_chances + 1e-13)
    assert np.max(best_chances - got) > 1e-4  # hindsight is not exact here


@pytest.mark.parametrize(
    ("first", "kernel", "bonus"),
    [(ME, "load", False), (OPPONENT, "load", False), (ME, None, False), (OPPONENT, "load", True)],
)
def test_hindsight_is_the_best_play_where_the_opponent_finishes_first(cache, first, kernel, bonus):
    """The opponent with one box open finishes before my next decision, so hindsight's values
    are my exact chances and its play is the best play, at every margin, whoever moves first
    (the C kernel's passes, and the NumPy passes); and with an upper bonus (35 at 20), my
    upper total 9 and its 17, where a card is its boxes and upper total."""
    rules = BONUS_RULES if bonus else RULES
    uppers = (9, 17) if bonus else (0, 0)
    start = tuple(
        card_id(rules, card, upper)
        for card, upper in zip(
            (open_only(ONES, FIVES, YAHTZEE), open_only(SIXES)), uppers, strict=True
        )
    )
    valuation = seeker_valuation(rules, 1.0, cache)
    seeker = solve_match(rules, first, start, cache_dir=cache, valuation=valuation, kernel=kernel)
    best = solve_match(rules, first, start, cache_dir=cache, kernel=kernel)
    for margin in range(-120, 41, 7):
        assert seeker.win_chance(margin) == pytest.approx(best.win_chance(margin), abs=1e-13)


@pytest.mark.parametrize("weight", [0.0, 0.5, 1.0])
def test_a_valuation_plays_at_or_under_the_best_play(cache, weight):
    """From a midgame (three boxes open each), any weight's exact chances and draws lie at or
    under the best play's chances, and playing by the valuation only before my last turn (the
    best play from there) does at least as well as the valuation throughout."""
    start = (open_only(ONES, 3, YAHTZEE), open_only(TWOS, SIXES, YAHTZEE))
    best = solve_match(RULES, ME, start, cache_dir=cache)
    whole = solve_match(
        RULES, ME, start, cache_dir=cache, valuation=seeker_valuation(RULES, weight, cache)
    )
    early = seeker_valuation(RULES, weight, cache, exact_from_turn=RULES.num_boxes - 2)
    hybrid = solve_match(RULES, ME, start, cache_dir=cache, valuation=early)
    for margin in (-40, -12, 0, 9, 25):
        chance, draw = whole.outcome(0, *start, margin)
        assert 0.0 <= chance <= best.win_chance(margin) + 1e-13
        assert 0.0 <= draw <= 1.0 - chance + 1e-13
        assert chance <= hybrid.win_chance(margin) + 1e-13


def test_kernel_and_numpy_passes_agree_on_a_valuations_play(cache):
    """Weight 0.5 from a midgame: the C kernel and the NumPy passes choose the same play and
    carry the same chances."""
    start = (open_only(ONES, 3, YAHTZEE), open_only(TWOS, SIXES, YAHTZEE))
    valuation = seeker_valuation(RULES, 0.5, cache)
    kernel = solve_match(RULES, OPPONENT, start, cache_dir=cache, valuation=valuation)
    numpy = solve_match(RULES, OPPONENT, start, cache_dir=cache, valuation=valuation, kernel=None)
    for margin in (-20, 0, 7):
        assert kernel.win_chance(margin) == pytest.approx(numpy.win_chance(margin), abs=1e-14)
        assert kernel.draw_chance(margin) == pytest.approx(numpy.draw_chance(margin), abs=1e-14)


def test_bad_weights_and_policies_are_refused(cache):
    """A weight outside [0, 1], a schedule of the wrong shape, a valuation with the optimal
    agent's policy: one line each, before any solve."""
    with pytest.raises(UserError, match=r"\[0, 1\]"):
        seeker_valuation(RULES, 1.5, cache)
    with pytest.raises(UserError, match="one per turn and seat"):
        seeker_valuation(RULES, np.ones((3, 2)), cache)
    with pytest.raises(UserError, match="policy 'win'"):
        solve_match(
            RULES,
            ME,
            (0, 0),
            policy="expected",
            cache_dir=cache,
            valuation=seeker_valuation(RULES, 1.0, cache),
        )
