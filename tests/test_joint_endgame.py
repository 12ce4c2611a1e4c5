"""The exact joint endgame (`solver.joint_endgame`) against enumeration on hand-made end games.

Plain rules, the tables of the last two layers (`test_targets.partial`). Every expectation is
enumerated in plain Python (`game.reference`): the opponent's turn under expected-score play,
its last turn's points (`test_ceiling.optimal_distribution`) and my best last turn against them,
sharing nothing with the module's classes, widget columns and margins.
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from positions import card_state, card_without
from test_ceiling import optimal_distribution
from test_target_seeker import held_options, jitted_seeker, stacked, state_of
from test_targets import partial

from yahtzee_jax.errors import UserError
from yahtzee_jax.game import reference
from yahtzee_jax.game.rules import NUM_KEEP_ACTIONS, get_rules
from yahtzee_jax.solver import joint_endgame
from yahtzee_jax.solver.joint_endgame import (
    JointEndgame,
    joint_chances,
    joint_endgame_tables,
    last_turn_chances,
    solve_joint_endgame,
)
from yahtzee_jax.solver.seeker_policy import (
    best_rival_distribution,
    seeker_tables,
    win_chances,
)
from yahtzee_jax.solver.widget import turn_start_value
from yahtzee_jax.solver.widget_tables import KEEP_OF_ACTION, ROLL_OF_CODE, ROLLS, dice_code

RULES = get_rules("plain")
MOST = 100  # points to come of one box, plain rules: at most 30 + 35
# The opponent's turn jitted, once per card shape (op by op each call compiled every operation:
# seconds a call)
opponent_turn = jax.jit(joint_endgame.opponent_turn, static_argnums=3)
opponent_choices = jax.jit(joint_endgame.opponent_choices, static_argnums=2)


@functools.cache
def joint() -> JointEndgame:
    """The joint endgame's tables of plain rules, from the last two layers' expected table."""
    _, _, follow = partial("plain", 11)
    classes, chances = solve_joint_endgame(RULES, follow)
    return JointEndgame(jnp.asarray(classes), jnp.asarray(chances))


@functools.cache
def tables(weight: float, with_joint: bool):
    """The target-seeker's tables of plain rules' last two layers, with or without the joint."""
    values, best, follow = partial("plain", 11)
    return seeker_tables(RULES, best, follow, values, weight, joint() if with_joint else None)


def value_table() -> jax.Array:
    """The value table of the last two layers as the seeker reads it (float32, NaN as 0)."""
    return tables(1.0, True).value


@functools.cache
def _points_to_come(card_items: frozenset) -> np.ndarray:
    return optimal_distribution(dict(card_items), "plain", MOST)


def points_to_come(card: dict[str, int]) -> np.ndarray:
    """P(the expected-score player scores d more points from a card), d = 0 .. MOST."""
    return _points_to_come(frozenset(card.items()))


def future_mean(card: dict[str, int]) -> float:
    """The expected-score player's mean points to come from a card, enumerated."""
    return float(points_to_come(card) @ np.arange(MOST + 1))


@functools.cache
def rolled(count: int) -> tuple[tuple[tuple[int, ...], float], ...]:
    """Each sorted roll of `count` dice and its chance (the 6**count orders counted)."""
    chances: dict[tuple[int, ...], float] = {}
    for dice in itertools.product(range(1, 7), repeat=count):
        key = tuple(sorted(dice))
        chances[key] = chances.get(key, 0.0) + 6.0**-count
    return tuple(chances.items())


@functools.cache
def turn_outcomes(card_items: frozenset) -> dict[tuple[str, int], float]:
    """{(box, points): chance} of one turn of the expected-score player (each choice the
    highest mean final score), enumerated; choices equal in mean must agree in outcome."""
    card = dict(card_items)

    def best(options: list[tuple[float, dict]]) -> tuple[float, dict]:
        top = max(mean for mean, _ in options)
        chosen = [outcome for mean, outcome in options if mean > top - 1e-9]
        assert all(outcome == chosen[0] for outcome in chosen)
        return top, chosen[0]

    @functools.cache
    def roll(dice: tuple[int, ...], rerolls: int) -> tuple[float, dict]:
        if rerolls == 0:
            options = []
            for box, (points, _) in reference.choices(list(dice), card, "plain").items():
                after = {**card, box: points}
                mean = reference.final_score(after, 0) + future_mean(after)
                options.append((mean, {(box, points): 1.0}))
            return best(options)
        return best([keep(held, rerolls) for held in held_options(dice)])

    @functools.cache
    def keep(held: tuple[int, ...], rerolls: int) -> tuple[float, dict]:
        mean, outcome = 0.0, {}
        for more, weight in rolled(5 - len(held)):
            value, parts = roll(tuple(sorted(held + more)), rerolls - 1)
            mean += value * weight
            for key, chance in parts.items():
                outcome[key] = outcome.get(key, 0.0) + chance * weight
        return mean, outcome

    return keep((), 3)[1]


def last_turn_win(mine: dict[str, int], its: dict[str, int], shift: int = 0) -> float:
    """My best chance, my last turn then its last, that my final score (plus `shift`) beats
    its, enumerated."""
    (box,) = [b for b in reference.BOXES if b not in mine]
    its_start = reference.final_score(its, 0)
    below = np.cumsum(points_to_come(its))  # P(its points to come <= q)

    @functools.cache
    def roll(dice: tuple[int, ...], rerolls: int) -> float:
        if rerolls == 0:
            points = reference.choices(list(dice), mine, "plain")[box][0]
            lead = reference.final_score({**mine, box: points}, 0) + shift - its_start
            return float(below[min(lead, MOST + 1) - 1]) if lead >= 1 else 0.0
        return max(keep(held, rerolls) for held in held_options(dice))

    @functools.cache
    def keep(held: tuple[int, ...], rerolls: int) -> float:
        return sum(
            w * roll(tuple(sorted(held + more)), rerolls - 1) for more, w in rolled(5 - len(held))
        )

    return keep((), 3)


# Me: fours and chance open, 4 points from the upper bonus; the opponent: the large straight
# and sixes open, sixes' bonus at 19 points.
MINE = card_without("fours", "chance")
ITS = card_without("large_straight", "sixes", three_of_a_kind=24)


@pytest.mark.parametrize(("written", "points"), [("fours", 16), ("fours", 8), ("chance", 22)])
def test_a_turn_end_is_the_enumerated_best_chance_after_the_opponents_turn(written, points):
    """The first seat's second-to-last turn: after writing `points` in a box, W is the sum over
    the opponent's enumerated turn of my enumerated best last turn against its last, at every
    total I might hold there (the margins shift), to float32's precision."""
    after = {**MINE, written: points}
    outcomes = turn_outcomes(frozenset(ITS.items()))
    assert len(outcomes) > 3  # the opponent's turn can end in several cards
    turn = opponent_turn(value_table(), joint(), state_of(ITS), RULES)
    start = reference.final_score(after, 0)
    for shift in (-30, 0, 17):
        expected = sum(
            chance * last_turn_win(after, {**ITS, box: p}, shift)
            for (box, p), chance in outcomes.items()
        )
        klass = joint().classes[card_state(after)]
        got = joint_chances(joint(), klass[None], jnp.asarray([start + shift]), turn)
        np.testing.assert_allclose(got, [expected], atol=3e-6)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), most=st.integers(0, 60))
def test_last_turn_chances_skip_only_columns_the_widget_would_make_alike(seed, most):
    """Random rewards of three classes and random last-turn points (up to `most`, and one
    class that scores nothing): L equals, to the bit, the widget run on every (my class,
    margin) column, as it was before the columns where no roll matters were left out."""
    from yahtzee_jax.solver.joint_endgame import MARGINS, REWARD_BINS
    from yahtzee_jax.solver.widget_tables import WIDGET_ORDER

    rng = np.random.default_rng(seed)
    rewards = rng.integers(0, 50, (3, 252))
    points = np.zeros((3, REWARD_BINS))
    points[:2, : most + 1] = rng.random((2, most + 1))
    points[:2] /= points[:2].sum(axis=1, keepdims=True)
    points[2, 0] = 1.0
    below = np.cumsum(points, axis=1)
    needed = rewards.T[WIDGET_ORDER[5]][:, :, None] + np.arange(-MARGINS, MARGINS + 1) - 1
    chances = last_turn_chances(rewards, points)
    for its in range(3):
        final = np.where(needed < 0, 0.0, below[its][np.clip(needed, 0, REWARD_BINS - 1)])
        every = turn_start_value(final.reshape(252, -1)).reshape(3, -1).astype(np.float32)
        np.testing.assert_array_equal(chances[:, its], every)


def test_the_opponents_turn_is_the_optimal_agents_play_roll_by_roll():
    """The opponent's keeps and boxes (`opponent_choices`) are the optimal agent's actions on
    the same value table at every one of the 252 rolls, at both keeps and the score decision."""
    from yahtzee_jax.agents.widget_agents import MAX_REROLLS, WidgetPolicy

    agent = WidgetPolicy(RULES, MAX_REROLLS, True)
    first, last, box, _ = opponent_choices(value_table(), state_of(ITS), RULES)
    expected_keeps = {0: first, 1: last}
    for roll_index in (0, 1, 2):
        cards = stacked(*(state_of(ITS, tuple(dice), roll_index) for dice in ROLLS))
        actions = agent(value_table(), cards, None, jnp.zeros((len(ROLLS), 2)))
        rolls = np.asarray(ROLL_OF_CODE)[np.asarray(dice_code(np.asarray(cards.dice)))]
        if roll_index == 2:
            np.testing.assert_array_equal(np.asarray(actions) - NUM_KEEP_ACTIONS, box[rolls])
        else:
            keeps = KEEP_OF_ACTION[rolls, np.asarray(actions)]
            np.testing.assert_array_equal(keeps, np.asarray(expected_keeps[roll_index])[rolls])


@settings(max_examples=8, deadline=None)
@given(
    mine=st.lists(st.sampled_from(reference.BOXES), min_size=2, max_size=2, unique=True),
    its=st.lists(st.sampled_from(reference.BOXES), min_size=2, max_size=2, unique=True),
    written=st.integers(0, 1),
    lead=st.integers(-60, 60),
)
def test_exact_lies_between_the_lower_bound_and_hindsight(mine, its, written, lead):
    """Any two-box cards: the exact W of a turn end is at most hindsight's (an oracle told the
    opponent's final score) and at least expected-score play's from there (a lower bound),
    and a chance."""
    after = {**card_without(*mine), mine[written]: 0}
    rival = card_without(*its)
    others = stacked(state_of(rival))
    total = reference.final_score(rival, 0) + lead
    states = tuple(jnp.asarray([part]) for part in card_state(after))
    turn = opponent_turn(value_table(), joint(), state_of(rival), RULES)
    exact = float(joint_chances(joint(), joint().classes[states], jnp.asarray([total]), turn)[0])
    bounds = []
    for weight in (1.0, 0.0):
        rival_mass = best_rival_distribution(tables(weight, False), others, RULES)
        got = win_chances(
            tables(weight, False), states, jnp.asarray([total]), rival_mass, weight, True
        )
        bounds.append(float(got[0]))
    assert bounds[1] - 3e-6 <= exact <= bounds[0] + 3e-6
    assert 0.0 <= exact <= 1.0


def enumerated_turn_end(after: dict[str, int], its: dict[str, int]) -> float:
    """The exact W of my turn end `after` against `its` card (two boxes open), enumerated."""
    outcomes = turn_outcomes(frozenset(its.items()))
    return sum(
        chance * last_turn_win(after, {**its, box: p}) for (box, p), chance in outcomes.items()
    )


# Three of a kind and chance open, 2-3-4-5-6 at the last keep, against threes and fours open.
MINE_KEEPING = card_without("three_of_a_kind", "chance")
ITS_KEEPING = card_without("threes", "fours", three_of_a_kind=35)


def policy_keeps(with_joint: bool) -> tuple[int, ...]:
    """The dice the target-seeker keeps at the position above, with or without the joint."""
    dice = (2, 3, 4, 5, 6)
    own = stacked(state_of(MINE_KEEPING, dice, 1))
    others = jax.tree.map(lambda leaf: leaf[:, None], stacked(state_of(ITS_KEEPING)))
    action = int(jitted_seeker(False)(tables(1.0, with_joint), own, others, jnp.zeros((1, 2)))[0])
    return tuple(d for i, d in enumerate(dice) if action >> i & 1)


def test_the_joint_endgame_changes_the_keep_at_a_hand_made_position():
    """At the position above the joint endgame keeps 5-6, hindsight 4-5-6 (which of them wins
    more often is enumerated by the slow test below); at the same dice with the opponent a
    turn further (one box open) both read hindsight's exact rows and keep alike."""
    assert policy_keeps(True) == (5, 6)
    assert policy_keeps(False) == (4, 5, 6)
    own = stacked(state_of(MINE_KEEPING, (2, 3, 4, 5, 6), 1))
    later = card_without("threes", three_of_a_kind=35)
    others = jax.tree.map(lambda leaf: leaf[:, None], stacked(state_of(later)))
    policy = jitted_seeker(False)  # jitted: op by op its four calls here took 17 s
    actions = [policy(tables(1.0, joint), own, others, jnp.zeros((1, 2))) for joint in (1, 0)]
    assert int(actions[0][0]) == int(actions[1][0])


def test_the_keeps_read_the_exact_chance_of_each_roll_in_each_open_box():
    """`joint_roll_chances` replaces the turn-end chances of my two open boxes (fours and
    chance) by `joint_chances` of each roll written there, and leaves the other boxes'."""
    from yahtzee_jax.solver.joint_endgame import joint_roll_chances

    mine = card_without("fours", "chance")
    own = state_of(mine)
    turn = opponent_turn(value_table(), joint(), state_of(ITS), RULES)
    total = reference.final_score(mine, 0)
    reward = np.zeros((len(ROLLS), RULES.num_boxes), np.int32)  # the boxes' points and bonus
    for box, name in ((3, "fours"), (12, "chance")):
        for roll, dice in enumerate(ROLLS):
            points = reference.choices(list(dice), mine, "plain")[name][0]
            reward[roll, box] = reference.final_score({**mine, name: points}, 0) - total
    assert reward[:, 3].max() == 20 + 35  # five fours reach the upper bonus
    before = jnp.full(reward.shape, -7.0)
    got = np.asarray(joint_roll_chances(joint(), before, own, jnp.asarray(reward), turn, RULES))
    for box, name in ((3, "fours"), (12, "chance")):
        after = [card_state({**mine, name: int(r)}) for r in reward[:, box]]
        klass = jnp.asarray([int(joint().classes[state]) for state in after])
        exact = joint_chances(joint(), klass, jnp.asarray(total + reward[:, box]), turn)
        np.testing.assert_allclose(got[:, box], exact, atol=1e-6)
    assert np.all(np.delete(got, [3, 12], axis=1) == -7.0)


def test_the_tables_are_cached_whole_and_made_again_when_damaged(tmp_path, capsys, monkeypatch):
    """The joint endgame's tables are solved once, written (checksummed) and read back equal;
    a damaged file is made again with one line saying so; an unwritable cache is one line."""
    _, _, follow = partial("plain", 11)
    solved = []

    def solve(*arguments):  # the solve is tested above; here only how it is kept
        solved.append(arguments)
        return np.asarray(joint().classes), np.asarray(joint().last_turn)

    monkeypatch.setattr(joint_endgame, "solve_joint_endgame", solve)
    made = joint_endgame_tables(RULES, tmp_path, follow)
    (path,) = tmp_path.glob("joint-endgame-*.npz")
    again = joint_endgame_tables(RULES, tmp_path, follow)
    np.testing.assert_array_equal(made.last_turn, again.last_turn)
    np.testing.assert_array_equal(made.classes, joint().classes)
    assert len(solved) == 1
    path.write_bytes(path.read_bytes()[:100])
    remade = joint_endgame_tables(RULES, tmp_path, follow)
    np.testing.assert_array_equal(remade.last_turn, made.last_turn)
    assert "joint endgame" in capsys.readouterr().err and len(solved) == 2
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(UserError, match="joint endgame cache"):
        joint_endgame_tables(RULES, blocked, follow)


@pytest.mark.slow
def test_the_policy_keeps_for_the_exact_chance_where_hindsight_keeps_otherwise():
    """First seat, three of a kind and chance open, 2-3-4-5-6 at the last keep; the opponent
    has threes and fours open, 35 in its three of a kind. Each keep's chance to win, enumerated
    (the final roll in the box of higher enumerated W), is highest for the joint endgame's keep
    (5-6), and hindsight keeps 4-5-6, which wins less often."""
    mine, its, dice = MINE_KEEPING, ITS_KEEPING, (2, 3, 4, 5, 6)
    held = {with_joint: policy_keeps(with_joint) for with_joint in (True, False)}

    @functools.cache
    def final(roll: tuple[int, ...]) -> float:
        options = reference.choices(list(roll), mine, "plain")
        return max(enumerated_turn_end({**mine, box: p}, its) for box, (p, _) in options.items())

    def keep(kept: tuple[int, ...]) -> float:
        return sum(w * final(tuple(sorted(kept + more))) for more, w in rolled(5 - len(kept)))

    by_keep = {kept: keep(kept) for kept in held_options(dice)}
    assert held == {True: (5, 6), False: (4, 5, 6)}
    assert by_keep[held[True]] == pytest.approx(max(by_keep.values()), abs=3e-6)
    assert by_keep[held[True]] > by_keep[held[False]] + 1e-4
