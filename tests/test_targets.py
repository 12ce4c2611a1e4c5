"""Target-score tables (`solver.target_table`) against plain enumeration and the value table.

The brute force here plays the last turns of hand-made cards in plain Python (every re-roll's
outcomes enumerated, keeps as bit masks, scoring by `yahtzee_jax.game.reference`), keeping for
each target d on its own the best chance of scoring at least d more; it shares no code with the
solver. The tables are solved on the last two or three layers only (partial solves, seconds).
"""

from __future__ import annotations

import functools
import itertools
import pathlib

import numpy as np
import pytest
from positions import card_state, card_without

from yahtzee_jax.commands.cli import main
from yahtzee_jax.errors import UserError
from yahtzee_jax.game import reference
from yahtzee_jax.game.rules import get_rules
from yahtzee_jax.solver import target_table
from yahtzee_jax.solver.states import filled_count, solved_states
from yahtzee_jax.solver.target_layout import most_to_come, state_chances, target_layout
from yahtzee_jax.solver.target_table import solve_target_table, target_tables
from yahtzee_jax.solver.value_table import solve, solve_value_table

P_YAHTZEE = 2_783_176 / 6**10  # a five of a kind within three rolls, chasing the commonest face
P_FIVE_SIXES = (1 - (5 / 6) ** 3) ** 5  # five sixes: each die has three tries


def brute_force_chances(card: dict[str, int], variant: str, most: int) -> np.ndarray:
    """P(at least d more points), d = 0 .. most, each d played for on its own: enumeration."""
    start = reference.final_score(card, 0)
    targets_d = np.arange(most + 1)

    @functools.cache
    def game(card_items: frozenset, bonuses: int) -> np.ndarray:
        card = dict(card_items)
        if len(card) == len(reference.BOXES):
            return (targets_d <= reference.final_score(card, bonuses) - start).astype(float)
        return turn(card_items, bonuses)

    @functools.cache
    def turn(card_items: frozenset, bonuses: int) -> np.ndarray:
        card = dict(card_items)

        @functools.cache
        def score_now(dice: tuple[int, ...]) -> np.ndarray:
            options = reference.choices(list(dice), card, variant)
            outcomes = [
                game(card_items | {(box, points)}, bonuses + (bonus > 0))
                for box, (points, bonus) in options.items()
            ]
            return np.max(outcomes, axis=0)

        @functools.cache
        def roll(dice: tuple[int, ...], rerolls_left: int) -> np.ndarray:
            if rerolls_left == 0:
                return score_now(dice)
            keeps = {tuple(dice[i] for i in range(5) if mask >> i & 1) for mask in range(32)}
            return np.max([keep(kept, rerolls_left) for kept in keeps], axis=0)

        @functools.cache
        def keep(kept: tuple[int, ...], rerolls_left: int) -> np.ndarray:
            outcomes = list(itertools.product(range(1, 7), repeat=5 - len(kept)))
            total = sum(roll(tuple(sorted(kept + rolled)), rerolls_left - 1) for rolled in outcomes)
            return total / len(outcomes)

        return keep((), 3)  # the first roll re-rolls all five dice

    return game(frozenset(card.items()), 0)


@functools.cache
def partial_best(variant: str, down_to_filled: int) -> tuple[np.ndarray, np.ndarray]:
    """(value table, target chances) of the last layers."""
    values = solve_value_table(variant, down_to_filled=down_to_filled, workers=1)
    return values, solve_target_table(variant, down_to_filled=down_to_filled, workers=1)


@functools.cache
def partial(variant: str, down_to_filled: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(value table, target chances, the value-maximiser's chances) of the last layers. Only
    the tests that read the last solve it: a partial table is filled whole first (1.6 GiB for
    official Yahtzee), so `partial_best` leaves it out."""
    values, best = partial_best(variant, down_to_filled)
    return values, best, solve_target_table(variant, "expected", values, down_to_filled, workers=1)


@pytest.fixture(scope="module", autouse=True)
def _free_the_tables():
    """A partial solve still allocates the whole flat table (1.6 GiB for official Yahtzee):
    drop the cached ones when the module ends, or the test worker holds them to its end."""
    yield
    partial.cache_clear()
    partial_best.cache_clear()


def chances(variant: str, card: dict[str, int], down_to_filled: int = 11) -> np.ndarray:
    """The solver's chances from the start of the next turn of `card`."""
    best = partial_best(variant, down_to_filled)[1]
    return state_chances(best, target_layout(get_rules(variant)), card_state(card))


# ------------------------------------------------------------------------------------------
# Hand-made last turns with closed forms
# ------------------------------------------------------------------------------------------


def test_chance_alone_is_worked_by_hand():
    """Chance alone: at least 5 is sure, at least 6 fails only on five ones three times over,
    and 30 needs five sixes, each die with three tries; nothing is above 30."""
    row = chances("plain", card_without("chance"), 12)
    assert len(row) == 31
    np.testing.assert_allclose(row[:6], 1.0, atol=1e-12)
    assert row[6] == pytest.approx(1 - (1 / 216) ** 5, abs=1e-12)
    assert row[30] == pytest.approx(P_FIVE_SIXES, abs=1e-12)


def test_yahtzee_box_alone_is_the_chance_of_a_yahtzee():
    """The Yahtzee box alone (its 0 already impossible to better otherwise): every target from 1
    to 50 is the chance of a five of a kind in three rolls, the textbook 4.6 %."""
    row = chances("plain", card_without("yahtzee"), 12)
    assert len(row) == 51
    np.testing.assert_allclose(row[1:], P_YAHTZEE, atol=1e-12)


def test_joker_bonus_enters_through_the_flag():
    """50 in the Yahtzee box and sixes open (upper total 45), official rules: without a five of a
    kind the most is four sixes, 24 + the 35 bonus; any Yahtzee pays the +100 (in sixes, forced
    Joker), so 60..100 need any five of a kind and 101..165 five sixes (30 + 35 + 100). Plain
    rules pay no +100: their most is 65, again five sixes."""
    card = card_without("sixes", yahtzee=50, ones=3)
    row = chances("official", card, 12)
    assert len(row) == 166
    np.testing.assert_allclose(row[60:101], P_YAHTZEE, atol=1e-12)
    np.testing.assert_allclose(row[101:], P_FIVE_SIXES, atol=1e-12)
    assert row[59] > row[60]  # four sixes and the bonus: 59
    plain = chances("plain", card, 12)
    assert len(plain) == 66 and plain[60] == pytest.approx(P_FIVE_SIXES, abs=1e-12)
    assert plain[59] < row[59]  # official: a five of a kind of any face reaches 59 too (+100)


# ------------------------------------------------------------------------------------------
# Two open boxes against brute force
# ------------------------------------------------------------------------------------------

END_GAMES = {
    # Upper total 57 with fours open: two or more fours win the 35 bonus (a jump in the chances).
    "fours+full-house": (card_without("fours", "full_house", ones=3, sixes=24), "plain"),
    # Straights: pure dice chasing, the two targets wanting different keeps.
    "straights": (card_without("small_straight", "large_straight"), "plain"),
    # 50 in the Yahtzee box, sixes and full house open: Joker placement, +100 per Yahtzee, and
    # three sixes (upper total 45 + 18) win the upper bonus. Slow (about a minute): rows of 291.
    "joker": (card_without("sixes", "full_house", yahtzee=50, ones=3), "official"),
}


@pytest.mark.parametrize(
    "name",
    [pytest.param(name, marks=[pytest.mark.slow] if name == "joker" else []) for name in END_GAMES],
)
def test_two_open_boxes_match_brute_force(name):
    """Every target's chance equals plain enumeration to 1e-9; past the row all chances are 0."""
    card, variant = END_GAMES[name]
    row = chances(variant, card)
    expected = brute_force_chances(card, variant, len(row) + 20)
    np.testing.assert_allclose(row, expected[: len(row)], rtol=0, atol=1e-9)
    assert not expected[len(row) :].any()


# ------------------------------------------------------------------------------------------
# Every solved state against the value table
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("variant", "down_to_filled"), [("plain", 11), ("official", 12)])
def test_tables_agree_with_the_value_table(variant, down_to_filled):
    """On every solved state of the layers: d = 0 is sure; the chances never rise with d; the
    value-maximiser's chances, summed over d >= 1, are the value table's expected score to come
    (1e-9); and the target player's chance is at least theirs at every d."""
    rules = get_rules(variant)
    values, best, follow = partial(variant, down_to_filled)
    layout = target_layout(rules)
    layers = filled_count(rules) >= down_to_filled
    states = np.argwhere(solved_states(rules) & layers[:, None, None])
    assert len(states) > 100
    for state in map(tuple, states):
        row, theirs = state_chances(best, layout, state), state_chances(follow, layout, state)
        assert row[0] == pytest.approx(1.0, abs=1e-12)
        # The roll expectation is a BLAS dot product: its rounding may differ by column (1e-19).
        assert (np.diff(row) <= 1e-15).all() and (np.diff(theirs) <= 1e-15).all()
        assert theirs[1:].sum() == pytest.approx(values[state], abs=1e-9)
        assert (row >= theirs - 1e-12).all()
        assert row[1:].sum() >= values[state] - 1e-9


def test_official_bound_is_reached():
    """In official Yahtzee the most points to come of a state is a score some play reaches."""
    rules = get_rules("official")
    best = partial_best("official", 12)[1]
    layout = target_layout(rules)
    states = np.argwhere(solved_states(rules) & (filled_count(rules) >= 12)[:, None, None])
    lasts = [state_chances(best, layout, tuple(state))[-1] for state in states]
    assert min(lasts) > 0


def test_copies_share_their_originals_rows():
    """A state whose value copies another's (bonus out of reach, flag without a bonus) reads
    the same row: same offset, same length, as in the value table's `fill_copies`."""
    layout = target_layout(get_rules("official"))
    mask = 0b1111111111110  # ones open: totals 0..57 cannot reach 63 with five ones
    assert layout.rows[mask, 10, 0] == layout.rows[mask, 0, 0] >= 0
    assert layout.lengths[mask, 10, 0] == most_to_come(get_rules("official"))[mask, 0, 0] + 1


def test_bad_policy_is_a_user_error():
    """An unknown policy, or the expected policy without its value table, is refused."""
    with pytest.raises(UserError, match="unknown target policy"):
        solve_target_table("plain", "luck")
    with pytest.raises(UserError, match="value table"):
        solve_target_table("plain", "expected")


def last_layer_only(rules, policy="target", value_table=None, workers=None, cache_dir=None, **_):
    """`solve_target_table` as the cache tests stand it in: the last layer solved (Yacht's 11
    boxes filled), the rest 0, the smallest table a cache can hold."""
    return solve_target_table(
        rules, policy, value_table, down_to_filled=11, workers=1, cache_dir=cache_dir
    )


def test_cli_solves_caches_and_loads_the_targets(tmp_path, monkeypatch, capsys):
    """`solve --targets` solves (here Yacht's last layer, the rest 0: the smallest table) and
    caches; the second call loads the same chances, read-only; a cache file cut short, damaged
    or holding a chance above 1 is solved again."""

    monkeypatch.setattr(target_table, "solve_target_table", last_layer_only)
    args = ["solve", "--rules", "yacht", "--targets", "--cache-dir", str(tmp_path)]
    assert main(args) == 0
    assert "solved" in capsys.readouterr().out
    assert main(args) == 0
    assert "loaded from cache" in capsys.readouterr().out
    result = target_tables("yacht", cache_dir=tmp_path)
    assert result.from_cache
    state = ((1 << 12) - 1 - (1 << 11), 0, 0)  # the last box open
    expected = state_chances(last_layer_only("yacht"), target_layout(result.rules), state)
    np.testing.assert_array_equal(result.chances(state), expected)
    assert result.chances(state)[1] > 0
    with pytest.raises(ValueError, match="read-only"):
        result.flat[0] = 0.5
    whole = result.cache_path.read_bytes()
    header = len(whole) - result.flat.nbytes
    above_one = whole[:header] + np.full(len(result.flat), 1.5).tobytes()
    for damaged in (whole[: len(whole) // 2], b"not an array", above_one):
        result.cache_path.write_bytes(damaged)
        if damaged is above_one:  # a well-formed array: refused for its chances alone
            assert np.load(result.cache_path).max() == 1.5
        assert not target_tables("yacht", cache_dir=tmp_path).from_cache


def test_cli_expected_policy_has_its_own_cache(tmp_path, monkeypatch, capsys):
    """`solve --targets --policy expected` caches the value-maximiser's chances beside (not over)
    the target table; its chances at the last box sum to the value table's (the test above's tie);
    `--policy` without `--targets` is a one-line error."""

    monkeypatch.setattr(target_table, "solve_target_table", last_layer_only)
    base = ["solve", "--rules", "yacht", "--targets", "--cache-dir", str(tmp_path)]
    assert main([*base, "--policy", "expected"]) == 0
    assert "the optimal agent's chance" in capsys.readouterr().out
    expected = target_tables("yacht", cache_dir=tmp_path, policy="expected")
    assert expected.from_cache and "targets_expected" in expected.cache_path.name
    assert not target_tables("yacht", cache_dir=tmp_path).from_cache  # its own file
    values = solve("yacht", cache_dir=tmp_path).value_table
    for upper in (0, 5):
        state = ((1 << 12) - 1 - 1, upper, 0)  # only Ones open (the upper bonus out of reach)
        chances = expected.chances(state)
        assert chances[1:].sum() == pytest.approx(values[state], abs=1e-9)
    assert main(["solve", "--rules", "yacht", "--policy", "expected"]) == 2


def test_a_target_solve_shows_its_progress_and_time_left(capsys):
    """With `progress`, a target solve draws a bar of its pieces (on stderr) that ends full, and
    two forked workers fill the same table as one process."""
    rules = get_rules("yacht")
    last = rules.num_boxes - 2
    one = solve_target_table(rules, down_to_filled=last, workers=1, progress=True)
    bar = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    assert bar.startswith("target tables (yacht): 100%") and "piece" in bar
    two = solve_target_table(rules, down_to_filled=last, workers=2)
    np.testing.assert_array_equal(one, two)


def test_a_full_disk_leaves_no_table_behind_and_says_so_in_one_line(tmp_path, monkeypatch):
    """Writing the target-table cache on a full disk: a one-line error naming the file, and no
    file left in the cache folder (neither the table nor its partial copy) to be read later."""

    def full_disk(file, array):
        pathlib.Path(file).write_bytes(b"\x93NUMPY half of it")  # what got written first
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(target_table, "solve_target_table", last_layer_only)
    monkeypatch.setattr(target_table.np, "save", full_disk)
    with pytest.raises(UserError, match=r"cannot write the target-table cache .*No space left"):
        target_tables("yacht", cache_dir=tmp_path)
    assert not list(tmp_path.glob("targets*"))
